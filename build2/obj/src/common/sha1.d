build2/obj/src/common/sha1.o: src/common/sha1.c src/common/sha1.h
src/common/sha1.h:

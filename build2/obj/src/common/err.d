build2/obj/src/common/err.o: src/common/err.c src/common/err.h
src/common/err.h:

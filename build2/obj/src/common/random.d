build2/obj/src/common/random.o: src/common/random.c src/common/random.h \
 src/common/cleanup.h
src/common/random.h:
src/common/cleanup.h:

build2/obj/src/common/xalloc.o: src/common/xalloc.c src/common/xalloc.h
src/common/xalloc.h:

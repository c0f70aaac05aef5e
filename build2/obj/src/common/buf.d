build2/obj/src/common/buf.o: src/common/buf.c src/common/buf.h \
 src/common/err.h src/common/xalloc.h
src/common/buf.h:
src/common/err.h:
src/common/xalloc.h:

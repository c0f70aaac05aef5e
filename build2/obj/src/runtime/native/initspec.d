build2/obj/src/runtime/native/initspec.o: src/runtime/native/initspec.c \
 src/common/buf.h src/common/err.h src/common/xalloc.h \
 src/runtime/init/spec.h
src/common/buf.h:
src/common/err.h:
src/common/xalloc.h:
src/runtime/init/spec.h:

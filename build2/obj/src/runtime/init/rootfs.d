build2/obj/src/runtime/init/rootfs.o: src/runtime/init/rootfs.c \
 src/common/cleanup.h src/common/fsutil.h src/common/err.h \
 src/common/xalloc.h src/runtime/init/init.h src/runtime/init/spec.h
src/common/cleanup.h:
src/common/fsutil.h:
src/common/err.h:
src/common/xalloc.h:
src/runtime/init/init.h:
src/runtime/init/spec.h:

build2/obj/src/runtime/init/volumes.o: src/runtime/init/volumes.c \
 src/common/cleanup.h src/common/fsutil.h src/common/err.h \
 src/runtime/init/init.h src/runtime/init/spec.h
src/common/cleanup.h:
src/common/fsutil.h:
src/common/err.h:
src/runtime/init/init.h:
src/runtime/init/spec.h:

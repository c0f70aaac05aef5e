build2/obj/src/runtime/init/cgroup.o: src/runtime/init/cgroup.c \
 src/common/cleanup.h src/common/fsutil.h src/common/err.h \
 src/runtime/init/init.h src/runtime/init/spec.h
src/common/cleanup.h:
src/common/fsutil.h:
src/common/err.h:
src/runtime/init/init.h:
src/runtime/init/spec.h:

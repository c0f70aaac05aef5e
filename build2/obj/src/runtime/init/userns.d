build2/obj/src/runtime/init/userns.o: src/runtime/init/userns.c \
 src/common/cleanup.h src/common/xalloc.h src/runtime/init/init.h \
 src/common/err.h src/runtime/init/spec.h
src/common/cleanup.h:
src/common/xalloc.h:
src/runtime/init/init.h:
src/common/err.h:
src/runtime/init/spec.h:

build2/obj/src/runtime/init/util.o: src/runtime/init/util.c \
 src/common/cleanup.h src/runtime/init/init.h src/common/err.h \
 src/runtime/init/spec.h
src/common/cleanup.h:
src/runtime/init/init.h:
src/common/err.h:
src/runtime/init/spec.h:

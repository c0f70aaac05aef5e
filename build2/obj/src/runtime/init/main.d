build2/obj/src/runtime/init/main.o: src/runtime/init/main.c \
 src/common/buf.h src/common/err.h src/common/cleanup.h \
 src/common/version.h src/runtime/init/init.h src/runtime/init/spec.h
src/common/buf.h:
src/common/err.h:
src/common/cleanup.h:
src/common/version.h:
src/runtime/init/init.h:
src/runtime/init/spec.h:

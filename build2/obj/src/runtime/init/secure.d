build2/obj/src/runtime/init/secure.o: src/runtime/init/secure.c \
 src/common/cleanup.h src/runtime/init/init.h src/common/err.h \
 src/runtime/init/spec.h
src/common/cleanup.h:
src/runtime/init/init.h:
src/common/err.h:
src/runtime/init/spec.h:

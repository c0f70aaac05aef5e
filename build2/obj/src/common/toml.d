build2/obj/src/common/toml.o: src/common/toml.c src/common/toml.h \
 src/common/err.h src/common/buf.h src/common/cleanup.h \
 src/common/xalloc.h
src/common/toml.h:
src/common/err.h:
src/common/buf.h:
src/common/cleanup.h:
src/common/xalloc.h:

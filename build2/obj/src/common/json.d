build2/obj/src/common/json.o: src/common/json.c src/common/json.h \
 src/common/err.h src/common/ctl.h src/common/limits.h \
 src/common/xalloc.h
src/common/json.h:
src/common/err.h:
src/common/ctl.h:
src/common/limits.h:
src/common/xalloc.h:

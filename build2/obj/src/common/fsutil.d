build2/obj/src/common/fsutil.o: src/common/fsutil.c src/common/fsutil.h \
 src/common/err.h src/common/cleanup.h
src/common/fsutil.h:
src/common/err.h:
src/common/cleanup.h:

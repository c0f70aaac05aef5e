build2/obj/src/common/fstree.o: src/common/fstree.c src/common/fstree.h \
 src/common/err.h src/common/cleanup.h src/common/log.h
src/common/fstree.h:
src/common/err.h:
src/common/cleanup.h:
src/common/log.h:

build2/obj/src/common/ctl.o: src/common/ctl.c src/common/ctl.h \
 src/common/err.h
src/common/ctl.h:
src/common/err.h:

build2/obj/src/common/timeutil.o: src/common/timeutil.c \
 src/common/timeutil.h
src/common/timeutil.h:

build2/obj/src/common/version.o: src/common/version.c \
 src/common/version.h
src/common/version.h:

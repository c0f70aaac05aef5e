build2/obj/src/common/quantity.o: src/common/quantity.c \
 src/common/quantity.h src/common/err.h
src/common/quantity.h:
src/common/err.h:

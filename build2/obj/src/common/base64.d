build2/obj/src/common/base64.o: src/common/base64.c src/common/base64.h \
 src/common/err.h
src/common/base64.h:
src/common/err.h:

build2/obj/src/common/endreport.o: src/common/endreport.c \
 src/common/endreport.h src/common/err.h
src/common/endreport.h:
src/common/err.h:

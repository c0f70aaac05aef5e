/* Driver programs run inside the code-context interpreters (code_drivers.c). */
#ifndef OSB_EXECD_CODE_DRIVERS_H
#define OSB_EXECD_CODE_DRIVERS_H

extern const char osb_code_driver_python[];
extern const char osb_code_driver_javascript[];
extern const char osb_code_driver_bash[];
extern const char osb_code_driver_java[];
#endif

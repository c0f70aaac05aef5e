/* Driver programs run inside the code-context interpreters (code_drivers.c). */
#ifndef OSB_EXECD_CODE_DRIVERS_H
#define OSB_EXECD_CODE_DRIVERS_H

extern const char osb_code_driver_python[];
extern const char osb_code_driver_javascript[];
extern const char osb_code_driver_bash[];
extern const char osb_code_driver_java[];

/* go (code_driver_go.c): the driver's Go source, the sh script that builds
 * it once and execs it, and the cache key of the source (hex, NUL ended). */
#define OSB_CODE_DRIVER_GO_KEY 17
extern const char osb_code_driver_go[];
extern const char osb_code_driver_go_sh[];
void osb_code_driver_go_key(char out[OSB_CODE_DRIVER_GO_KEY]);
#endif

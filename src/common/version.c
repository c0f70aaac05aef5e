#include "common/version.h"

/* The Makefile passes -DOSB_VERSION for this file alone (so a new commit
 * rebuilds one object); builds outside it (fuzz targets) get "unknown". */
#ifndef OSB_VERSION
#define OSB_VERSION "unknown"
#endif

const char *osb_version(void)
{
    return OSB_VERSION;
}

/* The version every binary prints for --version: the VERSION file of the
 * repository plus the git commit it was built from, when known. */
#ifndef OSB_COMMON_VERSION_H
#define OSB_COMMON_VERSION_H

/* "0.1.0 (git 1a2b3c4d5e6f)" or "0.1.0". */
const char *osb_version(void);
#endif

/* Secret keys kept in files of their own (the vault's, the signing key of
 * endpoint URLs): made once from the kernel's randomness, whole before they
 * appear, and refused rather than repaired when anything about the file is
 * off. Also the two read/write loops the key code needs. */
#ifndef OSB_KEYFILE_H
#define OSB_KEYFILE_H
#include <stddef.h>

#include "common/err.h"

/* Reads exactly len bytes of key from path, creating it (mode 0600, written
 * to a temporary file then linked, so a crash never leaves a short key and
 * two servers racing keep one) when it does not exist. The file must be a
 * regular file owned by us, closed to others, of exactly len bytes. */
OSB_MUST_CHECK int osb_keyfile_load(const char *path, unsigned char *key, size_t len,
                                    struct osb_err *err);
/* write(2) until done; -1 with errno. */
OSB_MUST_CHECK int osb_write_all(int fd, const void *p, size_t n);
/* read(2) until cap bytes or end of file; *n gets the count; -1 with errno. */
OSB_MUST_CHECK int osb_read_all(int fd, void *buf, size_t cap, size_t *n);
#endif

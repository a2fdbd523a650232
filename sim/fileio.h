/* fileio.h — reading whole files, with errors that name the file, and
 * writing whole buffers to descriptors.
 *
 * Inputs are read whole, so each reader states how large an input it takes
 * and the read stops there, before the memory is spent: SIM_READ_MAX for
 * the small text inputs (cluster, model, platform XML, caches), more where
 * a reader needs it (schedules).  A text input holding a NUL byte is
 * refused (every later byte would be silently ignored). */
#ifndef SIM_FILEIO_H
#define SIM_FILEIO_H

#include <stddef.h>

#include "error.h"

#define SIM_READ_MAX ((size_t)1 << 30) /* 1 GiB */

/* Returns the malloc'd, NUL-terminated contents of path (at most
 * SIM_READ_MAX bytes, no NUL inside), or NULL with "path: cannot read:
 * <reason>". */
char *sim_read_file(const char *path, sim_err *err);

/* The same with a limit of max bytes; *len (may be NULL) gets the length.
 * With allow_nul the contents may hold NUL bytes (binary-safe callers). */
char *sim_read_file_max(const char *path, size_t max, size_t *len, int allow_nul, sim_err *err);

/* Writes all n bytes to fd, retrying short writes and EINTR; 0 or -1 (errno set). */
int sim_write_all(int fd, const void *buf, size_t n);
/* Reads exactly n bytes from fd, retrying short reads and EINTR; 0, or -1 at
 * end of file or on error. */
int sim_read_all(int fd, void *buf, size_t n);

#endif

/* fileio.h — reading whole files, with errors that name the file, and
 * writing whole buffers to descriptors. */
#ifndef SIM_FILEIO_H
#define SIM_FILEIO_H

#include <stddef.h>

#include "error.h"

/* Returns the malloc'd, NUL-terminated contents of path, or NULL with
 * "path: cannot read: <reason>". */
char *sim_read_file(const char *path, sim_err *err);

/* Writes all n bytes to fd, retrying short writes and EINTR; 0 or -1 (errno set). */
int sim_write_all(int fd, const void *buf, size_t n);
/* Reads exactly n bytes from fd, retrying short reads and EINTR; 0, or -1 at
 * end of file or on error. */
int sim_read_all(int fd, void *buf, size_t n);

#endif

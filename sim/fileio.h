/* fileio.h — reading whole files, with errors that name the file. */
#ifndef SIM_FILEIO_H
#define SIM_FILEIO_H

#include "error.h"

/* Returns the malloc'd, NUL-terminated contents of path, or NULL with
 * "path: cannot read: <reason>". */
char *sim_read_file(const char *path, sim_err *err);

#endif

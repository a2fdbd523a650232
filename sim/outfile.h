/* outfile.h — output files that appear whole or not at all, and temporary
 * files that never outlive the process.
 *
 * An output (a trace, a memory timeline, a schedule, a platform, a plan's
 * CSV or SVG) is written to a temporary file beside its target
 * (".NAME.tmp-XXXXXX" in the same directory, so the final rename stays on
 * one filesystem), checked on close (every write error, a full disk
 * included, is an error naming the file), and renamed into place: a reader
 * sees the old file or the complete new one, never a partial one, and a
 * failed or killed run leaves its target untouched.  A target that exists
 * and is not a regular file (/dev/null, /dev/full, a pipe) is written
 * directly; a symbolic link is followed and its target replaced.
 *
 * Every temporary file is registered until it is renamed or removed; the
 * registry is removed by sim_tmp_cleanup(), which is async-signal-safe and
 * runs from the handlers sim_tmp_install_handlers() installs (SIGINT,
 * SIGTERM, SIGHUP, SIGPIPE, SIGABRT: SimGrid's failed assertions abort) and
 * at exit.  A forked child shares the registry but removes only the files
 * it registered itself. */
#ifndef SIM_OUTFILE_H
#define SIM_OUTFILE_H

#include <stdio.h>

#include "error.h"

typedef struct sim_outfile {
    FILE *f;
    char path[4096]; /* the target */
    char tmp[4096];  /* the temporary file, "" when writing the target directly */
    int slot;        /* registry slot of tmp, -1 = none */
    int anon;        /* f is an unnamed O_TMPFILE file, named only at commit */
} sim_outfile;

/* Opens a temporary file beside path for writing; NULL with "path: cannot
 * write: reason". */
FILE *sim_out_open(sim_outfile *o, const char *path, sim_err *err);
/* Flushes, checks and closes the file and renames it onto its target; on
 * any failure removes the temporary file and returns -1 with "path: write
 * failed: reason".  The target is untouched on failure. */
int sim_out_commit(sim_outfile *o, sim_err *err);
/* Closes and removes the temporary file (an error path); o may be unopened. */
void sim_out_discard(sim_outfile *o);
/* Writes n bytes of text to path whole, or not at all. */
int sim_out_write(const char *path, const void *text, size_t n, sim_err *err);

/* Flushes stdout and reports whether everything written to it arrived (a
 * full disk, a closed descriptor): 0, or -1 with a message. */
int sim_out_check_stdout(sim_err *err);

/* The temporary-file registry.  sim_tmp_register returns a slot, or -1 when
 * all are taken (the file then is not cleaned up on a signal). */
int sim_tmp_register(const char *path);
void sim_tmp_unregister(int slot);
/* Removes every file this process registered (async-signal-safe). */
void sim_tmp_cleanup(void);
/* Installs the signal handlers and the exit hook (once; the command line
 * calls it first thing). */
void sim_tmp_install_handlers(void);

#endif

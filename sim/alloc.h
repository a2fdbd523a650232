/* alloc.h — the checked allocator.
 *
 * Every allocation whose failure the caller cannot usefully report goes
 * through these: on failure they never return NULL but end the process with
 * one clear message naming what could not be allocated and how much
 * ("trainsim: out of memory: cannot allocate 6442450944 bytes for the
 * schedule's operations"), after removing this process's temporary files
 * (outfile.h).  That is the one place library code ends the process: a
 * NULL dereference later would be worse, and a simulation half-built in a
 * SimGrid actor has nowhere to return an error to.  Counts are multiplied
 * with an overflow check, so a size that does not fit in size_t is the same
 * clear failure, never a short buffer.
 *
 * The message goes to a handler (sim_alloc_set_handler); the default prints
 * it to stderr.  The command line installs one that also honours --json. */
#ifndef SIM_ALLOC_H
#define SIM_ALLOC_H

#include <stddef.h>

void *sim_xmalloc(size_t size, const char *what);
/* count x size bytes, zeroed; count 0 gives a valid 1-byte block */
void *sim_xcalloc(size_t count, size_t size, const char *what);
/* p resized to count x size bytes (p may be NULL) */
void *sim_xrealloc(void *p, size_t count, size_t size, const char *what);
char *sim_xstrdup(const char *s, const char *what);

/* The message printer used before the process exits with status 1. */
typedef void (*sim_oom_handler)(const char *msg);
void sim_alloc_set_handler(sim_oom_handler h);

#endif

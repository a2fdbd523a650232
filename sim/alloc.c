/* alloc.c — see alloc.h. */
#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"

static void default_handler(const char *msg) { fprintf(stderr, "trainsim: %s\n", msg); }

static sim_oom_handler handler = default_handler;

void sim_alloc_set_handler(sim_oom_handler h) { handler = h ? h : default_handler; }

static _Noreturn void fail(size_t count, size_t size, const char *what)
{
    char msg[256];
    if (size && count > SIZE_MAX / size)
        snprintf(msg, sizeof msg, "out of memory: %zu x %zu bytes for %s do not fit in the address space", count,
                 size, what ? what : "data");
    else
        snprintf(msg, sizeof msg, "out of memory: cannot allocate %zu bytes for %s", count * size,
                 what ? what : "data");
    handler(msg);
    sim_tmp_cleanup();
    fflush(stderr);
    _exit(1);
}

void *sim_xmalloc(size_t size, const char *what)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        fail(1, size, what);
    return p;
}

void *sim_xcalloc(size_t count, size_t size, const char *what)
{
    if (size && count > SIZE_MAX / size)
        fail(count, size, what);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        fail(count, size, what);
    return p;
}

void *sim_xrealloc(void *p, size_t count, size_t size, const char *what)
{
    if (size && count > SIZE_MAX / size)
        fail(count, size, what);
    size_t n = count * size;
    void *q = realloc(p, n ? n : 1);
    if (!q)
        fail(count, size, what);
    return q;
}

char *sim_xstrdup(const char *s, const char *what)
{
    size_t n = strlen(s) + 1;
    char *p = sim_xmalloc(n, what);
    memcpy(p, s, n);
    return p;
}

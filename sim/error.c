/* error.c — see error.h. */
#include "error.h"

#include <stdio.h>
#include <string.h>

int sim_errf(sim_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int sim_err_prefix(sim_err *err, const char *fmt, ...)
{
    if (err) {
        char prefix[512], old[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof old);
        size_t n = strlen(prefix);
        if (n >= sizeof err->msg)
            n = sizeof err->msg - 1;
        memcpy(err->msg, prefix, n);
        size_t rest = sizeof err->msg - 1 - n;
        size_t m = strnlen(old, rest);
        memcpy(err->msg + n, old, m);
        err->msg[n + m] = 0;
    }
    return -1;
}

/* fileio.c — see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void size_text(size_t n, char *buf, size_t len)
{
    if (n >= (size_t)1 << 30)
        snprintf(buf, len, "%.1f GiB", (double)n / (1 << 30));
    else if (n >= (size_t)1 << 20)
        snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
    else
        snprintf(buf, len, "%zu bytes", n);
}

static char *too_large(const char *path, size_t max, FILE *f, char *buf, sim_err *err)
{
    char lim[32];
    size_text(max, lim, sizeof lim);
    sim_errf(err, "%s: larger than the %s trainsim reads from such a file", path, lim);
    free(buf);
    fclose(f);
    return NULL;
}

char *sim_read_file_max(const char *path, size_t max, size_t *len, int allow_nul, sim_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        sim_errf(err, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fstat(fileno(f), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            fclose(f);
            sim_errf(err, "%s: cannot read: it is a directory", path);
            return NULL;
        }
        if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max)
            return too_large(path, max, f, NULL, err);
    }
    size_t cap = 1 << 16, n = 0;
    if (S_ISREG(st.st_mode) && (size_t)st.st_size + 2 > cap)
        cap = (size_t)st.st_size + 2; /* the text, its NUL, and room to see the end of the file */
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            char sz[32];
            size_text(cap, sz, sizeof sz);
            sim_errf(err, "%s: out of memory reading it (%s)", path, sz);
            return NULL;
        }
        if (n + 1 >= cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb)
                free(buf);
            buf = nb;
            continue;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max)
            return too_large(path, max, f, buf, err);
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        sim_errf(err, "%s: read error", path);
        return NULL;
    }
    buf[n] = 0;
    const char *nul = allow_nul ? NULL : memchr(buf, 0, n);
    if (nul) {
        sim_errf(err, "%s: a NUL byte at offset %zu: not a text file", path, (size_t)(nul - buf));
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

char *sim_read_file(const char *path, sim_err *err)
{
    return sim_read_file_max(path, SIM_READ_MAX, NULL, 0, err);
}

int sim_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int sim_read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

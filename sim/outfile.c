/* outfile.c — see outfile.h. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

/* ---- the registry (read by signal handlers: fixed storage, no locks) ---- */

#define SLOTS 32

static struct {
    volatile sig_atomic_t used;
    pid_t pid;
    char path[4096];
} reg[SLOTS];

int sim_tmp_register(const char *path)
{
    if (strlen(path) >= sizeof reg[0].path)
        return -1;
    for (int i = 0; i < SLOTS; i++)
        if (!reg[i].used) {
            strcpy(reg[i].path, path);
            reg[i].pid = getpid();
            reg[i].used = 1;
            return i;
        }
    return -1;
}

void sim_tmp_unregister(int slot)
{
    if (slot >= 0 && slot < SLOTS)
        reg[slot].used = 0;
}

void sim_tmp_cleanup(void)
{
    pid_t me = getpid();
    for (int i = 0; i < SLOTS; i++)
        if (reg[i].used && reg[i].pid == me) {
            unlink(reg[i].path);
            reg[i].used = 0;
        }
}

static void on_signal(int sig)
{
    sim_tmp_cleanup();
    raise(sig); /* SA_RESETHAND: the default action now ends the process */
}

/* A standard descriptor the caller closed must not be reused by the next
 * open(): the results would land in a trace file.  /dev/null opened
 * read-only takes its place, so writing to it still fails (and is
 * reported) instead of vanishing. */
static void guard_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = open("/dev/null", O_RDONLY);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
}

void sim_tmp_install_handlers(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    guard_std_fds();
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* nohup and friends: keep ignoring */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    atexit(sim_tmp_cleanup);
}

/* ---- output files ---- */

static mode_t file_mode(const struct stat *existing)
{
    if (existing)
        return existing->st_mode & 07777;
    mode_t u = umask(0);
    umask(u);
    return 0666 & ~u;
}

FILE *sim_out_open(sim_outfile *o, const char *path, sim_err *err)
{
    memset(o, 0, sizeof *o);
    o->slot = -1;
    if (!path || !*path) {
        sim_errf(err, "an output file needs a name");
        return NULL;
    }
    if (strlen(path) + 32 >= sizeof o->tmp) {
        sim_errf(err, "%.200s...: output path too long", path);
        return NULL;
    }
    /* a symbolic link: replace what it points to, not the link */
    char real[PATH_MAX];
    struct stat st;
    const char *target = path;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, real) && strlen(real) + 32 < sizeof o->tmp)
        target = real;
    snprintf(o->path, sizeof o->path, "%s", target);
    int exists = stat(target, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            sim_errf(err, "%s: cannot write: it is a directory", path);
            return NULL;
        }
        o->f = fopen(target, "w"); /* a device or a pipe: nothing to rename */
        if (!o->f)
            sim_errf(err, "%s: cannot write: %s", path, strerror(errno));
        return o->f;
    }
    const char *slash = strrchr(target, '/');
    int dirlen = slash ? (int)(slash - target) + 1 : 0;
#ifdef O_TMPFILE
    /* an unnamed file in the target's directory (Linux): a run killed by
     * SIGKILL, which no handler sees, leaves nothing behind; it gets a name
     * only at commit, through /proc/self/fd (so only where /proc is there:
     * else the commit would fail after the whole output was written) */
    char dir[sizeof o->tmp];
    snprintf(dir, sizeof dir, "%.*s", dirlen ? dirlen : 1, dirlen ? target : ".");
    int afd = access("/proc/self/fd", X_OK) == 0 ? open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;
    if (afd >= 0) {
        if (fchmod(afd, file_mode(exists ? &st : NULL)) == 0 && (o->f = fdopen(afd, "w"))) {
            o->anon = 1;
            return o->f;
        }
        close(afd);
    }
#endif
    snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp-XXXXXX", dirlen, target, target + dirlen);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        sim_errf(err, "%s: cannot write: %s", path, strerror(errno));
        o->tmp[0] = 0;
        return NULL;
    }
    o->slot = sim_tmp_register(o->tmp);
    if (fchmod(fd, file_mode(exists ? &st : NULL)) < 0 || !(o->f = fdopen(fd, "w"))) {
        sim_errf(err, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        sim_out_discard(o);
        return NULL;
    }
    return o->f;
}

void sim_out_discard(sim_outfile *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = 0;
    sim_tmp_unregister(o->slot);
    o->slot = -1;
}

/* Names the unnamed file of o beside its target (a fresh ".NAME.tmp-PID-N",
 * registered like mkstemp's) so that the rename below puts it in place. */
static int link_anon(sim_outfile *o)
{
    static unsigned counter;
    const char *path = o->path; /* fits o->tmp with 32 bytes to spare (sim_out_open) */
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(o->f));
    for (int tries = 0; tries < 100; tries++) {
        int n = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp-%ld-%u", dirlen, path, path + dirlen, (long)getpid(),
                         counter++);
        if (n < 0 || n >= (int)sizeof o->tmp) {
            o->tmp[0] = 0;
            errno = ENAMETOOLONG;
            return -1;
        }
        o->slot = sim_tmp_register(o->tmp);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        int e = errno;
        sim_tmp_unregister(o->slot);
        o->slot = -1;
        o->tmp[0] = 0;
        if (e != EEXIST) {
            errno = e;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

int sim_out_commit(sim_outfile *o, sim_err *err)
{
    if (!o->f)
        return sim_errf(err, "%s: write failed: the file was not open", o->path);
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (!bad && o->anon && link_anon(o) != 0) {
        bad = 1;
        e = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && o->tmp[0] && rename(o->tmp, o->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        sim_out_discard(o);
        return sim_errf(err, "%s: write failed: %s", o->path, e ? strerror(e) : "I/O error");
    }
    o->tmp[0] = 0;
    sim_tmp_unregister(o->slot);
    o->slot = -1;
    return 0;
}

int sim_out_write(const char *path, const void *text, size_t n, sim_err *err)
{
    sim_outfile o;
    FILE *f = sim_out_open(&o, path, err);
    if (!f)
        return -1;
    if (n && fwrite(text, 1, n, f) != n) {
        int e = errno;
        sim_out_discard(&o);
        return sim_errf(err, "%s: write failed: %s", path, e ? strerror(e) : "I/O error");
    }
    return sim_out_commit(&o, err);
}

int sim_out_check_stdout(sim_err *err)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout))
        return sim_errf(err, "standard output: write failed: %s", errno ? strerror(errno) : "I/O error");
    return 0;
}

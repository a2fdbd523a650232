/* pool.c — evaluations in forked processes, and the progress bar.
 *
 * SimGrid runs once per process (sim/engine.h), so every evaluation gets a
 * fresh child; this process never simulates.  Up to nproc children run at
 * once; each writes its fixed-size plan_result to a pipe and exits, and the
 * parent polls the pipes and hands each result to done() as it arrives
 * (that is where the cache appends it, so an interrupted sweep keeps
 * everything that finished). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planner/plan.h"
#include "sim/fileio.h"

int plan_ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

typedef struct slot {
    pid_t pid;
    int fd;
    int job;
    size_t got;
    plan_result r;
} slot;

/* Forks a child that runs fn(arg, out), writes the n bytes at out to a pipe
 * and exits; the parent gets the child and the pipe's read end. */
static int spawn(void (*fn)(void *arg, void *out), void *arg, void *out, size_t n, pid_t *pid, int *fd, sim_err *err)
{
    int fds[2];
    if (pipe(fds) < 0)
        return sim_errf(err, "cannot create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t p = fork();
    if (p < 0) {
        close(fds[0]);
        close(fds[1]);
        return sim_errf(err, "cannot fork: %s", strerror(errno));
    }
    if (p == 0) {
        close(fds[0]);
        fn(arg, out);
        fflush(NULL);
        _exit(sim_write_all(fds[1], out, n) == 0 ? 0 : 1);
    }
    close(fds[1]);
    *pid = p;
    *fd = fds[0];
    return 0;
}

typedef struct job_call {
    plan_job_fn fn;
    void *arg;
    int job;
} job_call;

static void run_job(void *arg, void *out)
{
    job_call *c = arg;
    c->fn(c->arg, c->job, out);
}

static int start(slot *s, int job, plan_job_fn fn, void *arg, sim_err *err)
{
    job_call c = {fn, arg, job};
    if (spawn(run_job, &c, &s->r, sizeof s->r, &s->pid, &s->fd, err) < 0)
        return -1;
    s->job = job;
    s->got = 0;
    return 0;
}

/* Reads what is available; 1 when the slot finished (result or death). */
static int drain(slot *s)
{
    for (;;) {
        ssize_t r = read(s->fd, (char *)&s->r + s->got, sizeof s->r - s->got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r > 0) {
            s->got += (size_t)r;
            if (s->got < sizeof s->r)
                continue;
        }
        /* complete, or EOF / error */
        close(s->fd);
        int status = 0;
        while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (s->got < sizeof s->r) {
            memset(&s->r, 0, sizeof s->r);
            s->r.status = -1;
            if (WIFSIGNALED(status))
                snprintf(s->r.error, sizeof s->r.error, "the evaluation process died with signal %d",
                         WTERMSIG(status));
            else
                snprintf(s->r.error, sizeof s->r.error, "the evaluation process exited with status %d",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        return 1;
    }
}

int plan_pool_run(const int *jobs, int n, int nproc, plan_job_fn fn, void *arg, plan_done_fn done, void *done_arg,
                  sim_err *err)
{
    if (nproc < 1)
        nproc = 1;
    if (nproc > n)
        nproc = n;
    if (n == 0)
        return 0;
    slot *sl = calloc((size_t)nproc, sizeof *sl);
    struct pollfd *pf = calloc((size_t)nproc, sizeof *pf);
    if (!sl || !pf) {
        free(sl);
        free(pf);
        return sim_errf(err, "out of memory");
    }
    int next = 0, running = 0, rc = 0;
    for (int i = 0; i < nproc; i++)
        sl[i].pid = 0;
    while (next < n || running > 0) {
        for (int i = 0; i < nproc && next < n && rc == 0; i++)
            if (sl[i].pid == 0) {
                if (start(&sl[i], jobs[next], fn, arg, err) < 0) {
                    rc = -1;
                    break;
                }
                next++;
                running++;
            }
        if (rc < 0 && running == 0)
            break;
        int k = 0;
        for (int i = 0; i < nproc; i++)
            if (sl[i].pid) {
                pf[k].fd = sl[i].fd;
                pf[k].events = POLLIN;
                pf[k].revents = 0;
                k++;
            }
        if (k == 0)
            break;
        if (poll(pf, (nfds_t)k, -1) < 0 && errno != EINTR) {
            rc = sim_errf(err, "poll: %s", strerror(errno));
            break;
        }
        k = 0;
        for (int i = 0; i < nproc; i++) {
            if (!sl[i].pid)
                continue;
            short ev = pf[k++].revents;
            if (!ev)
                continue;
            if (drain(&sl[i])) {
                sl[i].pid = 0;
                running--;
                done(done_arg, sl[i].job, &sl[i].r);
            }
        }
        if (rc < 0)
            next = n; /* start no more; finish the running ones */
    }
    free(sl);
    free(pf);
    return rc;
}

int plan_fork_call(void (*fn)(void *arg, void *out), void *arg, void *out, size_t n, sim_err *err)
{
    pid_t pid;
    int fd;
    if (spawn(fn, arg, out, n, &pid, &fd, err) < 0)
        return -1;
    int got = sim_read_all(fd, out, n) == 0;
    close(fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got)
        return 0;
    if (WIFSIGNALED(status))
        return sim_errf(err, "the evaluation process died with signal %d", WTERMSIG(status));
    return sim_errf(err, "the evaluation process exited with status %d without a result",
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ---- progress bar (stderr, only on a terminal) ---- */

void plan_progress_start(plan_progress *p, int total, int enabled)
{
    memset(p, 0, sizeof *p);
    p->enabled = enabled && total > 0;
    p->total = total;
    p->t0 = now();
}

void plan_progress_step(plan_progress *p, int done)
{
    p->done = done;
    if (!p->enabled)
        return;
    double t = now();
    if (done < p->total && t - p->last < 0.1)
        return;
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? done / el : 0;
    double left = rate > 0 ? (p->total - done) / rate : 0;
    int width = 30, fill = p->total ? done * width / p->total : width;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r[%s] %d/%d  %.1f eval/s  %d:%02d left ", bar, done, p->total, rate, (int)left / 60,
            (int)left % 60);
    fflush(stderr);
}

void plan_progress_end(plan_progress *p)
{
    if (p->enabled) {
        plan_progress_step(p, p->done);
        fputc('\n', stderr);
    }
}

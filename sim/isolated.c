/* isolated.c — sim_run() in a forked child, result sent back over a pipe.
 * SimGrid keeps one engine per process; forking gives every evaluation a
 * fresh one while the parent keeps its schedule and platform in memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "engine.h"
#include "fileio.h"

int sim_run_isolated(const sim_schedule *s, const sim_machine *m, const sim_options *opt, sim_result *out,
                     sim_err *err)
{
    memset(out, 0, sizeof *out);
    /* TRAINSIM_NOFORK=1 runs in this process, for debuggers (one run only) */
    const char *nofork = getenv("TRAINSIM_NOFORK");
    if (nofork && *nofork == '1')
        return sim_run(s, m, opt, out, err);
    int fds[2];
    if (pipe(fds) < 0)
        return sim_errf(err, "cannot create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return sim_errf(err, "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        sim_result r;
        sim_err e = {{0}};
        int rc = sim_run(s, m, opt, &r, &e);
        int ok = sim_write_all(fds[1], &rc, sizeof rc) == 0 && sim_write_all(fds[1], &e, sizeof e) == 0;
        if (ok && rc == 0)
            ok = sim_write_all(fds[1], &r, sizeof r) == 0 &&
                 sim_write_all(fds[1], r.rank, (size_t)r.nranks * sizeof *r.rank) == 0 &&
                 (!r.micro_end ||
                  sim_write_all(fds[1], r.micro_end, (size_t)r.nmicro * sizeof *r.micro_end) == 0);
        close(fds[1]);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    int rc = -1;
    sim_err e;
    int got = sim_read_all(fds[0], &rc, sizeof rc) == 0 && sim_read_all(fds[0], &e, sizeof e) == 0;
    if (got && rc == 0) {
        got = sim_read_all(fds[0], out, sizeof *out) == 0;
        if (got) {
            int paced = out->micro_end != NULL; /* the child's pointer: only whether it had one */
            out->micro_end = NULL;
            out->rank = sim_xcalloc((size_t)out->nranks, sizeof *out->rank, "the per-GPU results");
            got = sim_read_all(fds[0], out->rank, (size_t)out->nranks * sizeof *out->rank) == 0;
            if (got && paced) {
                out->micro_end = sim_xcalloc(out->nmicro > 0 ? (size_t)out->nmicro : 1, sizeof *out->micro_end,
                                             "the micro-batches' ends");
                got = sim_read_all(fds[0], out->micro_end, (size_t)out->nmicro * sizeof *out->micro_end) == 0;
            }
        }
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!got) {
        sim_result_free(out);
        if (WIFSIGNALED(status))
            return sim_errf(err, "the simulation process died with signal %d", WTERMSIG(status));
        return sim_errf(err, "the simulation process exited with status %d without a result",
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    if (rc != 0) {
        if (err)
            *err = e;
        return -1;
    }
    return 0;
}

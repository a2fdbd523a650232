/* error.h — one error type for every trainsim module.
 *
 * Library code never prints and never exits: a function that fails fills a
 * sim_err with one message that carries its context (file, JSON path, value,
 * what was expected) and returns -1 or NULL.  Only the command-line front end
 * prints it.  The message is a fixed buffer so that setting an error can never
 * fail itself. */
#ifndef SIM_ERROR_H
#define SIM_ERROR_H

#include <stdarg.h>

typedef struct sim_err {
    char msg[2048];
} sim_err;

/* Sets the message (printf-style) and returns -1, so that
 * `return sim_errf(err, "...")` reads naturally.  err may be NULL. */
int sim_errf(sim_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message with more context ("file.json: " + msg). */
int sim_err_prefix(sim_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For the front ends (the cli.c files) only: prints an error for the user,
 * "PROG: message" on stderr, or after sim_err_json(1) (--json) one JSON
 * object {"error": message, "exit_code": code}, and returns code (1 a
 * failure, 2 a usage error). */
int sim_err_print(const char *prog, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sim_err_json(int on);
int sim_err_json_enabled(void);

#endif

/* error.c — see error.h. */
#include "error.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
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

static int json_errors;

void sim_err_json(int on) { json_errors = on; }
int sim_err_json_enabled(void) { return json_errors; }

int sim_err_print(const char *prog, int code, const char *fmt, ...)
{
    char msg[sizeof(sim_err)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!json_errors) {
        fprintf(stderr, "%s: %s\n", prog, msg);
        return code;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "exit_code", code);
    char *t = cJSON_PrintUnformatted(o);
    fprintf(stderr, "%s\n", t ? t : "{\"error\": \"out of memory\", \"exit_code\": 1}");
    free(t);
    cJSON_Delete(o);
    return code;
}

/* val_csv.c — the CSV reader of the validation data sets (see val_csv.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fileio.h"
#include "val_csv.h"

struct val_csv {
    char *path;
    int ncols, nrows, cap;
    char **head;   /* [ncols] */
    char ***row;   /* [nrows][ncols] */
    int *line;     /* [nrows] source line of each row */
};

/* Splits one line into fields (in place), honouring double quotes. */
static int split(char *s, char **f, int max)
{
    int n = 0;
    for (;;) {
        char *out = s, *start = s;
        if (*s == '"') {
            s++;
            for (; *s; s++) {
                if (*s == '"' && s[1] == '"')
                    *out++ = *s++;
                else if (*s == '"') {
                    s++;
                    break;
                } else
                    *out++ = *s;
            }
            while (*s && *s != ',')
                s++;
        } else {
            while (*s && *s != ',')
                *out++ = *s++;
        }
        char c = *s;
        *out = 0;
        if (n < max)
            f[n++] = start;
        if (c != ',')
            break;
        s++;
    }
    return n;
}

void val_csv_free(val_csv *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nrows; i++) {
        for (int j = 0; j < c->ncols; j++)
            free(c->row[i][j]);
        free(c->row[i]);
    }
    for (int j = 0; j < c->ncols; j++)
        free(c->head[j]);
    free(c->head);
    free(c->row);
    free(c->line);
    free(c->path);
    free(c);
}

val_csv *val_csv_load(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    val_csv *c = calloc(1, sizeof *c);
    c->path = strdup(path);
    int lineno = 0;
    char *save = NULL;
    enum { MAXF = 256 };
    char *f[MAXF];
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t len = strlen(ln);
        if (len && ln[len - 1] == '\r')
            ln[--len] = 0;
        if (!len)
            continue;
        int n = split(ln, f, MAXF);
        if (!c->head) {
            c->ncols = n;
            c->head = calloc((size_t)n, sizeof *c->head);
            for (int j = 0; j < n; j++)
                c->head[j] = strdup(f[j]);
            continue;
        }
        if (c->nrows == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 256;
            c->row = realloc(c->row, (size_t)c->cap * sizeof *c->row);
            c->line = realloc(c->line, (size_t)c->cap * sizeof *c->line);
        }
        char **r = calloc((size_t)c->ncols, sizeof *r);
        for (int j = 0; j < c->ncols; j++)
            r[j] = strdup(j < n ? f[j] : "");
        c->line[c->nrows] = lineno;
        c->row[c->nrows++] = r;
    }
    free(text);
    if (!c->head) {
        sim_errf(err, "%s: empty file, expected a CSV header line", path);
        val_csv_free(c);
        return NULL;
    }
    return c;
}

int val_csv_rows(const val_csv *c) { return c->nrows; }
const char *val_csv_path(const val_csv *c) { return c->path; }
int val_csv_line(const val_csv *c, int row) { return row >= 0 && row < c->nrows ? c->line[row] : 0; }

int val_csv_col(const val_csv *c, const char *name, sim_err *err)
{
    for (int j = 0; j < c->ncols; j++)
        if (!strcmp(c->head[j], name))
            return j;
    return sim_errf(err, "%s: no column \"%s\" in the header line", c->path, name);
}

const char *val_csv_str(const val_csv *c, int row, int col)
{
    if (row < 0 || row >= c->nrows || col < 0 || col >= c->ncols)
        return "";
    return c->row[row][col];
}

int val_csv_num(const val_csv *c, int row, int col, double *out, sim_err *err)
{
    const char *s = val_csv_str(c, row, col);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (!*s || *end || errno || !isfinite(v))
        return sim_errf(err, "%s: line %d, column \"%s\": expected a number, got \"%s\"", c->path,
                        row >= 0 && row < c->nrows ? c->line[row] : 0, col >= 0 && col < c->ncols ? c->head[col] : "?",
                        s);
    *out = v;
    return 0;
}

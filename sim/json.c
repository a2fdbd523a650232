/* json.c — see json.h. */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* cJSON allocates through these.  While a document is parsed, a failed
 * allocation makes the parse fail and is reported as what it is instead of
 * "malformed JSON"; anywhere else (documents built for output, by the front
 * end or the libraries) it goes to the checked allocator, which stops with a
 * clear message, so that no builder can silently drop a field whose
 * allocation failed. */
static int alloc_failed, parsing;

static void *json_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        if (!parsing)
            return sim_xmalloc(n, "a JSON document");
        alloc_failed = 1;
    }
    return p;
}

void sim_json_init(void)
{
    static int done;
    if (!done) {
        cJSON_Hooks h = {json_malloc, free};
        cJSON_InitHooks(&h);
        done = 1;
    }
}

void sim_json_print(FILE *out, cJSON *doc)
{
    char *text = cJSON_Print(doc);
    fputs(text, out);
    fputc('\n', out);
    free(text);
    cJSON_Delete(doc);
}

void sim_json_line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p && at && p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Nesting depth reached before position at (strings skipped): to explain
 * cJSON's refusal of documents nested deeper than CJSON_NESTING_LIMIT. */
static int max_depth(const char *p, const char *end)
{
    int d = 0, m = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
        } else if (*p == '{' || *p == '[') {
            if (++d > m)
                m = d;
        } else if (*p == '}' || *p == ']') {
            d--;
        }
    }
    return m;
}

/* Whether s is well-formed UTF-8 (no overlong forms, no surrogates). */
static int utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s;
        if (c < 0x80) { /* ASCII: the common case, one test per byte */
            s++;
            continue;
        }
        int n = (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (n < 0)
            return 0;
        unsigned cp = n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;
        for (int i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3f);
        }
        static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += n + 1;
    }
    return 1;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* A key of object v that appears twice, or NULL.  Small objects (the
 * common case: a schedule has millions of ~10-key operations) are checked
 * pairwise, large ones sorted. */
static const cJSON *duplicate_key(const cJSON *v, int *nomem)
{
    int n = cJSON_GetArraySize(v);
    if (n <= 16) {
        for (const cJSON *a = v->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (a->string[0] == b->string[0] && !strcmp(a->string, b->string))
                    return b;
        return NULL;
    }
    const cJSON **k = malloc((size_t)n * sizeof *k), *dup = NULL;
    if (!k) {
        *nomem = 1;
        return NULL;
    }
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        k[i++] = c;
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    for (i = 1; i < n && !dup; i++)
        if (!strcmp(k[i]->string, k[i - 1]->string))
            dup = k[i];
    free(k);
    return dup;
}

enum { BAD_NONE, BAD_NUMBER, BAD_UTF8, BAD_DUPLICATE, BAD_NOMEM };

/* The first node with a number out of range, a string that is not UTF-8 or
 * a key given twice (what in *why), or NULL.  Paths are built only for the
 * message (path_to), so the common case allocates and formats nothing. */
static const cJSON *find_bad(const cJSON *v, int *why)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return *why = BAD_NUMBER, v;
    if ((cJSON_IsString(v) && !utf8_ok((const unsigned char *)v->valuestring)) ||
        (v->string && !utf8_ok((const unsigned char *)v->string)))
        return *why = BAD_UTF8, v;
    if (cJSON_IsObject(v)) {
        int nomem = 0;
        const cJSON *d = duplicate_key(v, &nomem);
        if (d || nomem)
            return *why = nomem ? BAD_NOMEM : BAD_DUPLICATE, d ? d : v;
    }
    if (cJSON_IsObject(v) || cJSON_IsArray(v))
        for (const cJSON *c = v->child; c; c = c->next) {
            const cJSON *b = find_bad(c, why);
            if (b)
                return b;
        }
    return NULL;
}

/* Appends the JSON path from v down to target to path; 1 when found. */
static int path_to(const cJSON *v, const cJSON *target, char *path, size_t cap)
{
    if (v == target)
        return 1;
    size_t len = strlen(path);
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (cJSON_IsObject(v))
            snprintf(path + len, cap - len, "%s%s", len ? "." : "", c->string);
        else
            snprintf(path + len, cap - len, "[%d]", i);
        if (path_to(c, target, path, cap))
            return 1;
        path[len] = 0;
    }
    return 0;
}

static int check_tree(const cJSON *root, const char *base, const char *src, sim_err *err)
{
    int why = BAD_NONE;
    const cJSON *bad = find_bad(root, &why);
    if (!bad)
        return 0;
    char path[1024];
    snprintf(path, sizeof path, "%s", base ? base : "");
    path_to(root, bad, path, sizeof path);
    const char *p = *path ? path : "(top)";
    switch (why) {
    case BAD_NUMBER:
        return sim_errf(err, "%s: %s: number out of range (a double holds up to 1.8e308)", src, p);
    case BAD_UTF8:
        return sim_errf(err, "%s: %s: a string that is not valid UTF-8", src, p);
    case BAD_DUPLICATE:
        return sim_errf(err, "%s: %s: the key is given twice (each key may appear once per object)", src, p);
    default:
        return sim_errf(err, "%s: out of memory checking the JSON", src);
    }
}

cJSON *sim_json_parse_slice(const char *whole, size_t off, size_t len, const char *source, const char *path,
                            sim_err *err)
{
    const char *text = whole + off, *nul = memchr(text, 0, len);
    const char *src = source ? source : "(JSON)";
    int line, col;
    if (nul) {
        sim_json_line_col(whole, nul, &line, &col);
        sim_errf(err, "%s:%d:%d: a NUL byte inside the text (not a JSON file?)", src, line, col);
        return NULL;
    }
    sim_json_init();
    alloc_failed = 0;
    parsing = 1;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    parsing = 0;
    if (!root) {
        if (alloc_failed) {
            sim_errf(err, "%s: out of memory parsing %zu bytes of JSON", src, len);
        } else if (max_depth(text, end ? end : text + len) > CJSON_NESTING_LIMIT) {
            sim_errf(err, "%s: JSON nested deeper than %d levels", src, CJSON_NESTING_LIMIT);
        } else {
            const char *at = end && end >= text && end <= text + len ? end : text;
            sim_json_line_col(whole, at, &line, &col);
            if (at >= text + len)
                sim_errf(err, "%s:%d:%d: malformed JSON: the text ends inside a value", src, line, col);
            else
                sim_errf(err, "%s:%d:%d: malformed JSON near \"%.20s\"", src, line, col, at);
        }
        return NULL;
    }
    const char *p = end ? end : text + len;
    while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    if (p < text + len) {
        sim_json_line_col(whole, p, &line, &col);
        sim_errf(err, "%s:%d:%d: unexpected text after the JSON value: \"%.20s\"", src, line, col, p);
        cJSON_Delete(root);
        return NULL;
    }
    if (check_tree(root, path, src, err) < 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *sim_json_parse(const char *text, const char *source, sim_err *err)
{
    if (!text) {
        sim_errf(err, "%s: no text", source ? source : "(JSON)");
        return NULL;
    }
    return sim_json_parse_slice(text, 0, strlen(text), source, "", err);
}

void sim_json_fputs(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f), fputc(*p, f);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

char *sim_json_quote(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return sim_xstrdup("\"\"", "a quoted name");
    sim_json_fputs(f, s);
    if (fclose(f) != 0 || !buf)
        return free(buf), sim_xstrdup("\"\"", "a quoted name");
    return buf;
}

void sim_csv_fputs(FILE *f, const char *s)
{
    s = s ? s : "";
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

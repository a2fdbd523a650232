/* xmlplat.c — hand-written SimGrid XML platforms (plat_from_xml).
 *
 * SimGrid parses the XML itself when the engine loads it, but it aborts,
 * often without a message, on much that a hand-written file can get wrong:
 * a syntax error, a host id given twice, a route through a link that does
 * not exist, a zero bandwidth, two GPUs without a route.  So the file is
 * checked first, and every problem is an error naming the file, the line
 * and the element:
 *   - here, with a small XML tokenizer (no XML library): well-formed
 *     (elements nested and closed, attributes quoted and unique, entities
 *     known, one root, no text or CDATA where SimGrid has none), host and
 *     router ids unique, link and zone ids unique, every <link_ctn> naming a
 *     link defined before it, and every bandwidth, latency and speed a finite
 *     number (> 0, >= 0 for latencies) before its unit;
 *   - then by SimGrid itself, in a forked child (sim_platform_probe): units,
 *     ranges in real units, routes between every pair of GPU hosts, and
 *     anything else it refuses, with its own message.
 * GPU hosts are the <host> elements with a <prop id="trainsim:gpu"
 * value="MODEL"/> child; hosts without it (CPUs, storage) are ignored.
 * Ranks follow trainsim:rank when every GPU host has one, else document
 * order; without trainsim:node every GPU host is its own node.  Optional:
 * trainsim:nic on GPU hosts (default 0: the node's NIC the GPU's inter-node
 * routes leave by, which the collectives need to spread their channels),
 * trainsim:nvswitch (default none: the NVSwitch fabric it is on, for NVLink
 * SHARP), trainsim:ring_pos (all or none; the host's place in its node's
 * ring order), trainsim:nvlinks (on the GPUs of NVLink meshes: "i j:c ...",
 * the host's index in its node and its NVLinks to the node's other
 * indices), trainsim:ring_bidir = 1 (rings inside a node run both ways), and trainsim:cache_bytes on a <link> (a host-memory link of staged
 * transfers and its cache) — the generated platforms carry them
 * (sim/machine.h).  The tokenizer only ever sees what SimGrid sees: a host
 * inside a comment or a CDATA section is not a host. */
#include "platform.h"
#include "catalog.h"
#include "sim/alloc.h"
#include "sim/engine.h"
#include "sim/fileio.h"
#include "sim/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct xhost {
    char id[128];
    char gpu[48];
    int rank, node, ring_pos, bidir, nic, nvswitch; /* -1 = not given (bidir: 0) */
    int nvl_self;                                   /* trainsim:nvlinks: index in its node (-1: not given) */
    unsigned char nvl_n, nvl_peer[16], nvl_cnt[16]; /* and its NVLinks to other indices of the node */
} xhost;

/* ---- a set of names with the offset of their definition ---- */

typedef struct nameset {
    char **name;
    size_t *at;
    uint32_t n, cap; /* cap a power of two, open addressing */
} nameset;

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot of name, or of the empty slot where it would go. */
static uint32_t set_slot(const nameset *S, const char *name)
{
    uint32_t j = hash_name(name) & (S->cap - 1);
    while (S->name[j] && strcmp(S->name[j], name))
        j = (j + 1) & (S->cap - 1);
    return j;
}

/* -1 if name is new (now added), else the offset of its first definition. */
static long long set_add(nameset *S, const char *name, size_t at)
{
    if (2 * (S->n + 1) > S->cap) {
        nameset T = {NULL, NULL, 0, S->cap ? 2 * S->cap : 64};
        T.name = sim_xcalloc(T.cap, sizeof *T.name, "the platform's names");
        T.at = sim_xcalloc(T.cap, sizeof *T.at, "the platform's names");
        for (uint32_t i = 0; i < S->cap; i++)
            if (S->name[i]) {
                uint32_t j = set_slot(&T, S->name[i]);
                T.name[j] = S->name[i], T.at[j] = S->at[i];
            }
        free(S->name), free(S->at);
        T.n = S->n;
        *S = T;
    }
    uint32_t j = set_slot(S, name);
    if (S->name[j])
        return (long long)S->at[j];
    S->name[j] = sim_xstrdup(name, "the platform's names");
    S->at[j] = at;
    S->n++;
    return -1;
}

static int set_has(const nameset *S, const char *name) { return S->cap && S->name[set_slot(S, name)]; }

static void set_free(nameset *S)
{
    for (uint32_t i = 0; i < S->cap; i++)
        free(S->name[i]);
    free(S->name), free(S->at);
}

/* ---- the tokenizer ---- */

#define MAX_ATTRS 32
#define MAX_DEPTH 256

typedef struct xml {
    const char *src, *text, *p;
    sim_err *err;
    /* the current start tag */
    char tag[64];
    int nattr;
    char attr_name[MAX_ATTRS][64];
    char *attr_value[MAX_ATTRS]; /* decoded, malloc'd */
    size_t tag_at;
    /* open elements */
    char stack[MAX_DEPTH][64];
    int depth, roots;
    /* what the platform defines */
    nameset netpoints, links, zones;
    xhost *hosts, cur;
    int nhosts, hosts_cap, in_host;
    /* host-memory links with a cache (trainsim:cache_bytes) */
    char link_id[sizeof ((sim_stage *)0)->link]; /* of the last <link> opened; "" if too long to keep */
    sim_stage *stage;
    int nstage, stage_cap;
} xml;

static int xerr(xml *X, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xerr(xml *X, const char *at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    sim_json_line_col(X->text, at, &line, &col);
    return sim_errf(X->err, "%s:%d:%d: %s", X->src, line, col, msg);
}

static int line_of(const xml *X, size_t at)
{
    int line, col;
    sim_json_line_col(X->text, X->text + at, &line, &col);
    return line;
}

static int is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':'; }
static int is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* An XML name at X->p into out (at most cap - 1 characters). */
static int read_name(xml *X, char *out, size_t cap, const char *what)
{
    const char *s = X->p;
    if (!is_name_start(*s))
        return xerr(X, s, "expected %s", what);
    while (is_name_char(*X->p))
        X->p++;
    if ((size_t)(X->p - s) >= cap)
        return xerr(X, s, "%s longer than %zu characters", what, cap - 1);
    snprintf(out, cap, "%.*s", (int)(X->p - s), s);
    return 0;
}

/* Appends code point cp to out as UTF-8. */
static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80)
        return out[0] = (char)cp, 1;
    if (cp < 0x800)
        return out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
               out[2] = (char)(0x80 | (cp & 0x3f)), 3;
    return out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
           out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

/* Decodes the entity at s ('&'); returns its length in the text, 0 if unknown. */
static size_t entity(const char *s, char *out, size_t *outlen)
{
    static const struct {
        const char *name;
        char c;
    } E[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++)
        if (!strncmp(s, E[i].name, strlen(E[i].name))) {
            *out = E[i].c, *outlen = 1;
            return strlen(E[i].name);
        }
    if (s[1] != '#')
        return 0;
    int hex = s[2] == 'x';
    char *end;
    unsigned long cp = strtoul(s + 2 + hex, &end, hex ? 16 : 10);
    if (end == s + 2 + hex || *end != ';' || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *outlen = put_utf8(out, (unsigned)cp);
    return (size_t)(end + 1 - s);
}

/* The quoted attribute value at X->p, decoded. */
static int read_value(xml *X, char **out)
{
    char q = *X->p;
    if (q != '"' && q != '\'')
        return xerr(X, X->p, "expected a quoted attribute value");
    const char *s = ++X->p, *e = strchr(s, q);
    if (!e)
        return xerr(X, s - 1, "unterminated attribute value");
    char *v = sim_xmalloc((size_t)(e - s) + 1, "an attribute value"), *w = v;
    for (const char *c = s; c < e; c++) {
        if (*c == '<') {
            free(v);
            return xerr(X, c, "'<' inside an attribute value (write &lt;)");
        }
        if (*c != '&') {
            *w++ = *c;
            continue;
        }
        char buf[4];
        size_t blen, n = entity(c, buf, &blen);
        if (!n || c + n > e) {
            free(v);
            return xerr(X, c, "unknown entity \"%.10s\" (known: &amp; &lt; &gt; &quot; &apos; &#N;)", c);
        }
        memcpy(w, buf, blen), w += blen, c += n - 1;
    }
    *w = 0;
    X->p = e + 1;
    *out = v;
    return 0;
}

static void free_attrs(xml *X)
{
    for (int i = 0; i < X->nattr; i++)
        free(X->attr_value[i]);
    X->nattr = 0;
}

static const char *attr(const xml *X, const char *name)
{
    for (int i = 0; i < X->nattr; i++)
        if (!strcmp(X->attr_name[i], name))
            return X->attr_value[i];
    return NULL;
}

/* A start tag's attributes up to '>' or '/>'; *empty = 1 for '/>'. */
static int read_attrs(xml *X, int *empty)
{
    for (;;) {
        const char *before = X->p;
        while (is_space(*X->p))
            X->p++;
        if (*X->p == '>' || (X->p[0] == '/' && X->p[1] == '>')) {
            *empty = *X->p == '/';
            X->p += *empty ? 2 : 1;
            return 0;
        }
        if (X->p == before)
            return xerr(X, X->p, *X->p ? "expected a space, '>' or '/>' in <%s>" : "the file ends inside <%s>", X->tag);
        if (X->nattr == MAX_ATTRS)
            return xerr(X, X->p, "more than %d attributes in <%s>", MAX_ATTRS, X->tag);
        char *name = X->attr_name[X->nattr];
        if (read_name(X, name, sizeof X->attr_name[0], "an attribute name") < 0)
            return -1;
        for (int i = 0; i < X->nattr; i++)
            if (!strcmp(X->attr_name[i], name))
                return xerr(X, X->p, "attribute \"%s\" given twice in <%s>", name, X->tag);
        while (is_space(*X->p))
            X->p++;
        if (*X->p != '=')
            return xerr(X, X->p, "expected '=' after attribute \"%s\"", name);
        X->p++;
        while (is_space(*X->p))
            X->p++;
        if (read_value(X, &X->attr_value[X->nattr]) < 0)
            return -1;
        X->nattr++;
    }
}

/* ---- what the elements mean ---- */

/* A number before its unit ("25GBps", "1us", "1Gf"): finite, and > 0 (or
 * >= 0 with zero_ok).  Units are SimGrid's to check. */
static int check_number(xml *X, const char *name, const char *v, int zero_ok)
{
    char *end;
    double x = strtod(v, &end);
    const char *u = end;
    while (*u && ((*u >= 'A' && *u <= 'Z') || (*u >= 'a' && *u <= 'z')))
        u++;
    if (end == v || !isfinite(x) || *u || (zero_ok ? x < 0 : !(x > 0)))
        return xerr(X, X->text + X->tag_at, "<%s id=\"%.100s\">: %s=\"%.40s\": expected %s followed by a unit",
                    X->tag, attr(X, "id") ? attr(X, "id") : "", name, v,
                    zero_ok ? "a finite number >= 0" : "a finite number > 0");
    return 0;
}

/* Every bandwidth, latency and speed attribute of the tag. */
static int check_numbers(xml *X)
{
    static const char *const positive[] = {"bandwidth", "bw", "bb_bw", "loopback_bw", "speed", "power", NULL};
    static const char *const nonneg[] = {"latency", "lat", "bb_lat", "loopback_lat", NULL};
    for (int i = 0; i < X->nattr; i++) {
        const char *n = X->attr_name[i];
        int pos = 0, nn = 0;
        for (int k = 0; positive[k]; k++)
            pos |= !strcmp(n, positive[k]);
        for (int k = 0; nonneg[k]; k++)
            nn |= !strcmp(n, nonneg[k]);
        if (!pos && !nn)
            continue;
        char *copy = sim_xstrdup(X->attr_value[i], "an attribute value"), *save = NULL;
        int rc = 0;
        for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save))
            rc = check_number(X, n, t, nn); /* a speed may list power states */
        free(copy);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Defines the tag's id in a namespace; refuses a second definition. */
static int define(xml *X, nameset *S, const char *what)
{
    const char *id = attr(X, "id");
    if (!id || !*id)
        return xerr(X, X->text + X->tag_at, "<%s> without an id", X->tag);
    long long first = set_add(S, id, X->tag_at);
    if (first >= 0)
        return xerr(X, X->text + X->tag_at, "%s id \"%.200s\" is already defined at line %d", what, id,
                    line_of(X, (size_t)first));
    return 0;
}

static int parse_index(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v >= SIM_MAX_GPUS)
        return -1;
    *out = (int)v;
    return 0;
}

/* <prop> inside a <host>: the trainsim properties. */
static int host_prop(xml *X)
{
    const char *id = attr(X, "id"), *v = attr(X, "value");
    if (!id || !v || strncmp(id, "trainsim:", 9))
        return 0;
    if (!strcmp(id, "trainsim:gpu")) {
        if (strlen(v) >= sizeof X->cur.gpu)
            return xerr(X, X->text + X->tag_at, "trainsim:gpu \"%.60s...\": no GPU model has so long a name", v);
        snprintf(X->cur.gpu, sizeof X->cur.gpu, "%s", v);
        return 0;
    }
    if (!strcmp(id, "trainsim:nvlinks")) {
        char buf[256], *tok, *save = NULL;
        int ok = strlen(v) < sizeof buf;
        snprintf(buf, sizeof buf, "%s", v);
        X->cur.nvl_n = 0;
        X->cur.nvl_self = -1;
        for (tok = strtok_r(buf, " ", &save); ok && tok; tok = strtok_r(NULL, " ", &save)) {
            int a, b, used = 0;
            if (X->cur.nvl_self < 0)
                ok = sscanf(tok, "%d%n", &a, &used) == 1 && !tok[used] && a >= 0 && a < SIM_NVL_MAX &&
                     (X->cur.nvl_self = a, 1);
            else
                ok = X->cur.nvl_n < 16 && sscanf(tok, "%d:%d%n", &a, &b, &used) == 2 && !tok[used] && a >= 0 &&
                     a < SIM_NVL_MAX && b >= 1 && b <= 18 &&
                     (X->cur.nvl_peer[X->cur.nvl_n] = (unsigned char)a, X->cur.nvl_cnt[X->cur.nvl_n++] = (unsigned char)b, 1);
        }
        if (!ok || X->cur.nvl_self < 0)
            return xerr(X, X->text + X->tag_at,
                        "host \"%s\": property trainsim:nvlinks: expected its index in its node (0..%d), then up to "
                        "16 index:links pairs (links 1..18), space-separated, got \"%.60s\"",
                        X->cur.id, SIM_NVL_MAX - 1, v);
        return 0;
    }
    static const char *const ints[] = {"trainsim:rank",       "trainsim:node", "trainsim:ring_pos",
                                       "trainsim:ring_bidir", "trainsim:nic",  "trainsim:nvswitch"};
    int *dst[] = {&X->cur.rank, &X->cur.node, &X->cur.ring_pos, &X->cur.bidir, &X->cur.nic, &X->cur.nvswitch};
    for (int i = 0; i < 6; i++)
        if (!strcmp(id, ints[i]) && parse_index(v, dst[i]))
            return xerr(X, X->text + X->tag_at, "host \"%s\": property %s: expected an integer in 0..%d, got \"%.40s\"",
                        X->cur.id, id, SIM_MAX_GPUS - 1, v);
    return 0;
}

/* <prop> inside a <link>: trainsim:cache_bytes makes it a host-memory link
 * of staged transfers with that cache (sim/staging.c). */
static int link_prop(xml *X)
{
    const char *id = attr(X, "id"), *v = attr(X, "value");
    if (!id || !v || strcmp(id, "trainsim:cache_bytes"))
        return 0;
    const char *at = X->text + X->tag_at;
    if (!X->link_id[0])
        return xerr(X, at, "trainsim:cache_bytes on a link whose id is longer than %zu characters",
                    sizeof X->link_id - 1);
    char *end;
    double c = strtod(v, &end);
    if (!*v || *end || !isfinite(c) || c < 0)
        return xerr(X, at, "link \"%s\": property trainsim:cache_bytes: expected a finite number >= 0, got \"%.40s\"",
                    X->link_id, v);
    if (X->nstage && !strcmp(X->stage[X->nstage - 1].link, X->link_id))
        return xerr(X, at, "link \"%s\": trainsim:cache_bytes given twice", X->link_id);
    if (X->nstage == X->stage_cap) {
        X->stage_cap = X->stage_cap ? 2 * X->stage_cap : 16;
        X->stage = sim_xrealloc(X->stage, (size_t)X->stage_cap, sizeof *X->stage, "the platform's host-memory links");
    }
    sim_stage *st = &X->stage[X->nstage++];
    snprintf(st->link, sizeof st->link, "%s", X->link_id);
    st->cache_bytes = c;
    return 0;
}

static int start_element(xml *X)
{
    const char *t = X->tag;
    if (check_numbers(X) < 0)
        return -1;
    if (!strcmp(t, "host")) {
        if (define(X, &X->netpoints, "host or router") < 0)
            return -1;
        if (strlen(attr(X, "id")) >= sizeof X->cur.id)
            return xerr(X, X->text + X->tag_at, "host id longer than %zu characters", sizeof X->cur.id - 1);
        X->cur = (xhost){"", "", -1, -1, -1, 0, -1, -1, -1, 0, {0}, {0}};
        snprintf(X->cur.id, sizeof X->cur.id, "%s", attr(X, "id"));
        X->in_host = X->depth;
    } else if (!strcmp(t, "router") || !strcmp(t, "peer")) {
        return define(X, &X->netpoints, "host or router");
    } else if (!strcmp(t, "link") || !strcmp(t, "backbone")) {
        if (define(X, &X->links, "link") < 0)
            return -1;
        const char *id = attr(X, "id");
        snprintf(X->link_id, sizeof X->link_id, "%s", strlen(id) < sizeof X->link_id ? id : "");
    } else if (!strcmp(t, "zone") || !strcmp(t, "AS") || !strcmp(t, "cluster") || !strcmp(t, "cabinet")) {
        return define(X, &X->zones, "zone");
    } else if (!strcmp(t, "link_ctn")) {
        const char *id = attr(X, "id");
        char base[1100];
        snprintf(base, sizeof base, "%s", id ? id : "");
        size_t n = strlen(base);
        if (!set_has(&X->links, base) && n > 3 && !strcmp(base + n - 3, "_UP"))
            base[n - 3] = 0;
        else if (!set_has(&X->links, base) && n > 5 && !strcmp(base + n - 5, "_DOWN"))
            base[n - 5] = 0;
        if (!id || !set_has(&X->links, base))
            return xerr(X, X->text + X->tag_at, "<link_ctn id=\"%.200s\">: no link of that id is defined before it",
                        id ? id : "");
    } else if (!strcmp(t, "prop") && X->in_host > 0 && X->depth == X->in_host + 1) {
        return host_prop(X);
    } else if (!strcmp(t, "prop") && X->depth >= 2 && !strcmp(X->stack[X->depth - 2], "link")) {
        return link_prop(X);
    }
    return 0;
}

static int end_host(xml *X)
{
    X->in_host = 0;
    if (!X->cur.gpu[0])
        return 0;
    if (X->nhosts == SIM_MAX_GPUS)
        return xerr(X, X->p, "more than %d GPU hosts; trainsim simulates at most that many", SIM_MAX_GPUS);
    if (X->nhosts == X->hosts_cap) {
        X->hosts_cap = X->hosts_cap ? 2 * X->hosts_cap : 64;
        X->hosts = sim_xrealloc(X->hosts, (size_t)X->hosts_cap, sizeof *X->hosts, "the platform's GPU hosts");
    }
    X->hosts[X->nhosts++] = X->cur;
    return 0;
}

/* ---- the document ---- */

static int markup(xml *X); /* one '<' construct */

static int document(xml *X)
{
    while (*X->p) {
        const char *s = X->p;
        if (*s != '<') {
            while (*X->p && *X->p != '<')
                X->p++;
            for (const char *c = s; c < X->p; c++)
                if (!is_space(*c))
                    return xerr(X, c, X->depth ? "text inside <%s>: a SimGrid platform has none"
                                               : "text outside the root element",
                                X->depth ? X->stack[X->depth - 1] : "");
            continue;
        }
        if (markup(X) < 0)
            return -1;
    }
    if (X->depth)
        return xerr(X, X->p, "the file ends inside <%s> (opened, never closed)", X->stack[X->depth - 1]);
    if (X->roots != 1)
        return xerr(X, X->p, "expected one root element <platform>, found %d", X->roots);
    return 0;
}

static int skip_to(xml *X, const char *end, const char *what)
{
    const char *e = strstr(X->p, end);
    if (!e)
        return xerr(X, X->p, "unterminated %s", what);
    X->p = e + strlen(end);
    return 0;
}

static int end_tag(xml *X)
{
    const char *at = X->p;
    char name[64];
    X->p += 2;
    if (read_name(X, name, sizeof name, "an element name after '</'") < 0)
        return -1;
    while (is_space(*X->p))
        X->p++;
    if (*X->p != '>')
        return xerr(X, X->p, "expected '>' to close </%s>", name);
    X->p++;
    if (!X->depth || strcmp(X->stack[X->depth - 1], name))
        return xerr(X, at, X->depth ? "</%s> closes <%s>" : "</%s> closes nothing", name,
                    X->depth ? X->stack[X->depth - 1] : "");
    X->depth--;
    if (!strcmp(name, "host") && X->in_host == X->depth + 1)
        return end_host(X);
    return 0;
}

static int start_tag(xml *X)
{
    X->tag_at = (size_t)(X->p - X->text);
    X->p++;
    int empty = 0;
    free_attrs(X);
    if (read_name(X, X->tag, sizeof X->tag, "an element name after '<'") < 0 || read_attrs(X, &empty) < 0)
        return -1;
    if (!X->depth && X->roots++)
        return xerr(X, X->text + X->tag_at, "a second root element <%s>", X->tag);
    if (X->depth == MAX_DEPTH)
        return xerr(X, X->text + X->tag_at, "elements nested deeper than %d", MAX_DEPTH);
    snprintf(X->stack[X->depth++], sizeof X->stack[0], "%s", X->tag);
    int rc = start_element(X);
    if (rc == 0 && empty) {
        X->depth--;
        if (!strcmp(X->tag, "host"))
            rc = end_host(X);
    }
    return rc;
}

static int markup(xml *X)
{
    const char *p = X->p;
    if (!strncmp(p, "<!--", 4))
        return skip_to(X, "-->", "comment");
    if (!strncmp(p, "<![CDATA[", 9))
        return xerr(X, p, "a CDATA section: a SimGrid platform has no text content");
    if (!strncmp(p, "<?", 2))
        return skip_to(X, "?>", "processing instruction");
    if (!strncmp(p, "<!DOCTYPE", 9)) {
        if (X->roots)
            return xerr(X, p, "<!DOCTYPE> after the root element");
        const char *e = strpbrk(p, "[>");
        if (e && *e == '[')
            return xerr(X, e, "a DOCTYPE with an internal subset (entity definitions) is not supported");
        return skip_to(X, ">", "<!DOCTYPE>");
    }
    if (p[1] == '/')
        return end_tag(X);
    return start_tag(X);
}

/* ---- the machine ---- */

static int cmp_rank(const void *a, const void *b)
{
    const xhost *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks, nodes and ring positions: each given on all GPU hosts or on none. */
static int order_hosts(const char *src, xhost *hosts, int n, sim_err *err)
{
    int ranks = 0, nodes = 0, rings = 0;
    for (int i = 0; i < n; i++)
        ranks += hosts[i].rank >= 0, nodes += hosts[i].node >= 0, rings += hosts[i].ring_pos >= 0;
    static const char *const prop[] = {"trainsim:rank", "trainsim:node", "trainsim:ring_pos"};
    const int given[] = {ranks, nodes, rings};
    for (int k = 0; k < 3; k++)
        if (given[k] && given[k] != n)
            return sim_errf(err, "%s: %s is on %d of %d GPU hosts; give it on all or none", src, prop[k], given[k], n);
    if (ranks) {
        qsort(hosts, (size_t)n, sizeof *hosts, cmp_rank);
        for (int i = 0; i < n; i++)
            if (hosts[i].rank != i)
                return sim_errf(err, "%s: trainsim:rank values must be 0..%d, each once (host \"%s\" has %d)", src,
                                n - 1, hosts[i].id, hosts[i].rank);
    }
    return 0;
}

/* An NVLink mesh as its hosts give it (trainsim:nvlinks): each GPU's index
 * unique in its node, each peer once, not itself, a GPU of the same node that
 * lists it back with the same count — the links are physical, so a
 * one-sided or doubled entry is a mistake in the file, which the rings
 * packed from it would silently carry. */
static int check_nvlinks(const char *src, const xhost *hosts, int n, sim_err *err)
{
    int maxnode = -1, rc = 0;
    for (int i = 0; i < n; i++)
        if (hosts[i].nvl_self >= 0 && (hosts[i].node >= 0 ? hosts[i].node : i) > maxnode)
            maxnode = hosts[i].node >= 0 ? hosts[i].node : i;
    if (maxnode < 0)
        return 0;
    /* at[node · SIM_NVL_MAX + index]: the host with that index, or -1 */
    int *at = sim_xcalloc((size_t)(maxnode + 1) * SIM_NVL_MAX, sizeof *at, "the platform's NVLinks");
    for (size_t k = 0; k < (size_t)(maxnode + 1) * SIM_NVL_MAX; k++)
        at[k] = -1;
    for (int i = 0; i < n && rc == 0; i++) {
        int *slot =
            hosts[i].nvl_self < 0
                ? NULL
                : &at[(size_t)(hosts[i].node >= 0 ? hosts[i].node : i) * SIM_NVL_MAX + (size_t)hosts[i].nvl_self];
        if (slot && *slot >= 0)
            rc = sim_errf(err, "%s: hosts \"%s\" and \"%s\": trainsim:nvlinks gives both index %d in node %d", src,
                          hosts[*slot].id, hosts[i].id, hosts[i].nvl_self, hosts[i].node >= 0 ? hosts[i].node : i);
        else if (slot)
            *slot = i;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        const xhost *h = &hosts[i];
        int node = h->node >= 0 ? h->node : i;
        for (int j = 0; j < h->nvl_n && h->nvl_self >= 0 && rc == 0; j++) {
            int peer = h->nvl_peer[j], back = at[(size_t)node * SIM_NVL_MAX + (size_t)peer], cnt = 0;
            for (int q = 0; q < j; q++)
                if (h->nvl_peer[q] == peer)
                    back = -2;
            if (back >= 0)
                for (int q = 0; q < hosts[back].nvl_n; q++)
                    if (hosts[back].nvl_peer[q] == h->nvl_self)
                        cnt = hosts[back].nvl_cnt[q];
            if (peer == h->nvl_self)
                rc = sim_errf(err, "%s: host \"%s\": trainsim:nvlinks lists its own index %d as a peer", src, h->id,
                              peer);
            else if (back == -2)
                rc = sim_errf(err, "%s: host \"%s\": trainsim:nvlinks lists peer %d twice", src, h->id, peer);
            else if (back < 0)
                rc = sim_errf(err,
                              "%s: host \"%s\": trainsim:nvlinks names peer %d, but no GPU of node %d has that index",
                              src, h->id, peer, node);
            else if (cnt != h->nvl_cnt[j])
                rc = sim_errf(err,
                              "%s: hosts \"%s\" and \"%s\": trainsim:nvlinks gives %d link%s from %d to %d but %d "
                              "back; the links are shared by both GPUs",
                              src, h->id, hosts[back].id, h->nvl_cnt[j], h->nvl_cnt[j] == 1 ? "" : "s", h->nvl_self,
                              peer, cnt);
        }
    }
    free(at);
    return rc;
}

static sim_machine *machine(xml *X, sim_err *err)
{
    const char *src = X->src, *text = X->text;
    const xhost *hosts = X->hosts;
    int n = X->nhosts;
    sim_gpu *models = sim_xcalloc((size_t)n, sizeof *models, "the platform's GPU models");
    int *which = sim_xcalloc((size_t)n, sizeof *which, "the platform's GPU models");
    int nm = 0;
    sim_machine *m = NULL;
    for (int i = 0; i < n; i++) {
        sim_gpu g;
        if (plat_gpu_lookup(hosts[i].gpu, &g, err)) {
            sim_err_prefix(err, "%s: host \"%s\": trainsim:gpu: ", src, hosts[i].id);
            goto out;
        }
        int k = 0;
        while (k < nm && strcmp(models[k].model, g.model) != 0)
            k++;
        if (k == nm)
            models[nm++] = g;
        which[i] = k;
    }
    if (check_nvlinks(src, hosts, n, err) < 0)
        goto out;
    if (!(m = sim_machine_new(n, nm))) {
        sim_errf(err, "%s: out of memory", src);
        goto out;
    }
    memcpy(m->gpus, models, (size_t)nm * sizeof *models);
    const char *base = strrchr(src, '/');
    snprintf(m->name, sizeof m->name, "%s", base ? base + 1 : src);
    int maxnode = -1;
    for (int i = 0; i < n; i++) {
        m->host[i] = sim_xstrdup(hosts[i].id, "the platform's host names");
        m->node[i] = hosts[i].node >= 0 ? hosts[i].node : i;
        m->gpu_model[i] = which[i];
        m->nic[i] = hosts[i].nic >= 0 ? hosts[i].nic : 0;
        m->nvswitch[i] = hosts[i].nvswitch;
        if (m->node[i] > maxnode)
            maxnode = m->node[i];
    }
    m->nnodes = maxnode + 1;
    if (hosts[0].ring_pos >= 0) {
        m->ring_pos = sim_xcalloc((size_t)n, sizeof *m->ring_pos, "the platform's ring order");
        for (int i = 0; i < n; i++)
            m->ring_pos[i] = hosts[i].ring_pos;
    }
    int meshes = 0;
    for (int i = 0; i < n; i++)
        meshes |= hosts[i].nvl_self >= 0;
    if (meshes) {
        for (int i = 0; i < n; i++) {
            m->nvl_width = hosts[i].nvl_self + 1 > m->nvl_width ? hosts[i].nvl_self + 1 : m->nvl_width;
            for (int j = 0; j < hosts[i].nvl_n; j++)
                m->nvl_width = hosts[i].nvl_peer[j] + 1 > m->nvl_width ? hosts[i].nvl_peer[j] + 1 : m->nvl_width;
        }
        m->nvl_local = sim_xcalloc((size_t)n, sizeof *m->nvl_local, "the platform's NVLinks");
        m->nvl_links = sim_xcalloc((size_t)n * (size_t)m->nvl_width, 1, "the platform's NVLinks");
        for (int i = 0; i < n; i++) {
            m->nvl_local[i] = hosts[i].nvl_self; /* -1: not on a mesh */
            for (int j = 0; j < hosts[i].nvl_n; j++)
                m->nvl_links[(size_t)i * (size_t)m->nvl_width + hosts[i].nvl_peer[j]] = hosts[i].nvl_cnt[j];
        }
    }
    for (int i = 0; i < n; i++)
        m->ring_bidir |= hosts[i].bidir > 0;
    m->stage = X->stage, m->nstage = X->nstage; /* the machine owns them now */
    X->stage = NULL;
    m->platform_xml = sim_xstrdup(text, "the platform");
out:
    free(models);
    free(which);
    return m;
}

/* The fabric of a platform as platforms/platform.c writes it: one switch
 * router "fabric-sw", or leaf routers under a "spine" zone; a hand-written
 * platform's fabric is unknown. */
static sim_fabric fabric_of(const xml *X)
{
    if (set_has(&X->zones, "spine"))
        return SIM_FABRIC_FAT_TREE;
    return set_has(&X->netpoints, "fabric-sw") ? SIM_FABRIC_SWITCH : SIM_FABRIC_UNKNOWN;
}

sim_machine *plat_from_xml_text(const char *text, const char *source, sim_err *err)
{
    xml X = {.src = source ? source : "(platform)", .text = text, .p = text, .err = err};
    sim_machine *m = NULL;
    if (document(&X) < 0)
        goto out;
    if (X.nhosts == 0) {
        sim_errf(err,
                 "%s: no GPU host found; mark each GPU host with <prop id=\"trainsim:gpu\" value=\"MODEL\"/> "
                 "(e.g. RTX3090), optionally trainsim:rank and trainsim:node",
                 X.src);
        goto out;
    }
    if (order_hosts(X.src, X.hosts, X.nhosts, err) == 0 && (m = machine(&X, err)))
        m->fabric = fabric_of(&X);
out:
    free_attrs(&X);
    free(X.hosts);
    free(X.stage);
    set_free(&X.netpoints), set_free(&X.links), set_free(&X.zones);
    return m;
}

sim_machine *plat_from_xml(const char *path, sim_err *err)
{
    char *text = sim_read_file(path, err);
    if (!text)
        return NULL;
    sim_machine *m = plat_from_xml_text(text, path, err);
    free(text);
    if (m && sim_platform_probe(m, 1, err) < 0) {
        sim_machine_free(m);
        return NULL;
    }
    return m;
}

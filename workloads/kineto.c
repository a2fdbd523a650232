/* kineto.c — PyTorch-profiler (Kineto) Chrome-trace reader (see kineto.h).
 *
 * Trace layout relied on (Kineto's Chrome trace export, PyTorch 1.12–2.11):
 * {"deviceProperties": [{"name": …}], "distributedInfo": {"rank", "world_size"},
 *  "traceEvents": [{"ph": "X", "cat": "kernel" | "cuda_runtime" | "cuda_driver" |
 *  "cpu_op" | "user_annotation", "name", "pid", "tid", "ts" (µs), "dur" (µs), "args"}]}.
 * A kernel and the runtime (or driver) call that launched it share args.correlation; the
 * runtime call runs on the CPU thread inside the cpu_op that issued it, so
 * a GEMM kernel's shape is found by time containment on that thread (the
 * kernels' "External id" means different things in different versions). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "kineto.h"
#include "sim/alloc.h"
#include "sim/json.h"
#include "sim/schedule.h"

/* A CPU event's thread and interval: the first member of the ops found by
 * time containment (find_span). */
typedef struct cpu_span {
    int64_t pid, tid;
    double ts, end;
} cpu_span;

/* An aten op whose Input Dims give the work of the kernels it launches: a
 * GEMM (m, n, k, batch, dtype) or a pointwise op (bytes, elements). */
typedef struct gemm_op {
    cpu_span sp;
    int64_t m, n, k, batch;
    int dtype;        /* sim_dtype from the input type; FP32 may become TF32 by kernel */
    const char *name; /* static string */
    int64_t ebytes, enumel; /* pointwise op: bytes read + written, output elements; 0 for a GEMM */
    int pw_class;           /* pointwise op: sim_mem_class of its unvectorised kernel (strided arguments,
                               a widening cast); SIM_MEMC_STREAM otherwise */
    int row;                /* a classed op of CLASSED (its index), -1 for a GEMM or pointwise op */
    int64_t unit;           /* a classed op: the elements of its first tensor (a TensorList's sum) x their size */
} gemm_op;

/* A c10d collective op whose Input Dims give its size. */
typedef struct comm_op {
    cpu_span sp;
    int coll;
    int64_t bytes;
    int group; /* 0 = not implied by the shapes */
} comm_op;

typedef struct launch {
    int64_t corr, pid, tid;
    double ts, end;
} launch;

/* A host op's span and its index among the trace's host ops. */
typedef struct hspan {
    cpu_span sp;
    int op;
} hspan;

struct wl_kineto {
    char *path;
    char device[128];
    int rank, world;
    int n, cap;
    wl_kernel *k;
    char **names;     /* distinct kernel names, owned */
    int nnames, names_cap;
    int *name_hash;   /* open addressing over names, -1 empty; capacity 2 x names_cap */
    int nsteps;
    double *step_us, *step_ts;
    char **step_name;
    int ncopies, copies_cap;
    wl_kernel *copies;
    int nhost, host_cap;
    wl_host_call *host;
    int nwaits, waits_cap;
    wl_stream_wait *waits;
    int nhops, hops_cap;
    wl_host_op *hops;     /* sorted as hs */
    hspan *hs;            /* by (pid, tid, ts, enclosing first) */
    int64_t pid;
};

/* ---- reading ---------------------------------------------------------- */

char *wl_kineto_read_text(const char *path, sim_err *err)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        sim_errf(err, "%s: cannot open the trace file: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len > WL_KINETO_MAX_BYTES) { /* a gzip bomb stops here, not when memory runs out */
            free(buf);
            gzclose(f);
            sim_errf(err, "%s: more than %zu MiB of trace text; trainsim reads traces up to that size", path,
                     WL_KINETO_MAX_BYTES >> 20);
            return NULL;
        }
        if (!buf) {
            gzclose(f);
            sim_errf(err, "%s: out of memory reading the trace", path);
            return NULL;
        }
        if (cap - len < (1 << 16)) {
            cap = cap * 2 < WL_KINETO_MAX_BYTES + (2 << 16) ? cap * 2 : WL_KINETO_MAX_BYTES + (2 << 16);
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                gzclose(f);
                sim_errf(err, "%s: out of memory reading the trace", path);
                return NULL;
            }
            buf = b;
        }
        int r = gzread(f, buf + len, (unsigned)(cap - len - 1));
        if (r < 0) {
            int code;
            const char *msg = gzerror(f, &code);
            size_t pl = strlen(path); /* zlib prefixes its message with the path */
            if (msg && !strncmp(msg, path, pl) && msg[pl] == ':')
                msg += pl + (msg[pl + 1] == ' ' ? 2 : 1);
            sim_errf(err, "%s: corrupt or truncated gzip data (%s)", path, msg ? msg : "zlib error");
            free(buf);
            gzclose(f);
            return NULL;
        }
        if (r == 0) {
            int code;
            gzerror(f, &code);
            if (code != Z_OK && code != Z_BUF_ERROR) {
                sim_errf(err, "%s: corrupt or truncated gzip data", path);
                free(buf);
                gzclose(f);
                return NULL;
            }
            break;
        }
        len += (size_t)r;
    }
    /* a gzip stream cut short reads as a clean end in some zlib versions */
    int code;
    gzerror(f, &code);
    gzclose(f);
    if (code == Z_BUF_ERROR) {
        free(buf);
        sim_errf(err, "%s: truncated gzip data", path);
        return NULL;
    }
    buf[len] = 0;
    if (len == 0) {
        free(buf);
        sim_errf(err, "%s: empty trace file", path);
        return NULL;
    }
    return buf;
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* Where the reader is, for messages about a value out of range. */
typedef struct rd {
    const char *src;
    sim_err *err;
    int ev;  /* index in traceEvents */
    int bad; /* an error is set */
    char at[48];
} rd;

/* "traceEvents[i]: " for a trace's event, "" for wl_kineto_op_work (its
 * source names the op). */
static const char *event_at(rd *R, const char *then)
{
    if (R->ev < 0)
        return "";
    snprintf(R->at, sizeof R->at, "traceEvents[%d]%s", R->ev, then);
    return R->at;
}

/* An integer field in [lo, hi]: absent or not a number gives dflt; a
 * fraction or a value out of range is an error (never a wrapped cast). */
static int64_t ival(rd *R, const cJSON *o, const char *where, const char *key, int64_t dflt, int64_t lo, int64_t hi)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        return dflt;
    double x = v->valuedouble;
    if (x == floor(x) && x >= (double)lo && x <= (double)hi)
        return (int64_t)x;
    if (!R->bad)
        sim_errf(R->err, "%s: traceEvents[%d].%s%s: %.17g is not an integer in %lld..%lld", R->src, R->ev, where, key,
                 x, (long long)lo, (long long)hi);
    R->bad = 1;
    return dflt;
}

/* A byte count from elements x bytes each, at most SIM_MAX_BYTES. */
static int64_t bytes_of(rd *R, double elems, int each, const char *what)
{
    double b = elems * each;
    if (b >= 0 && b <= (double)SIM_MAX_BYTES)
        return (int64_t)b;
    if (!R->bad)
        sim_errf(R->err, "%s: %s%s of %.17g bytes (at most %lld)", R->src, event_at(R, ": "), what, b,
                 (long long)SIM_MAX_BYTES);
    R->bad = 1;
    return 0;
}

#define ID_MAX ((int64_t)1 << 53) /* integers a double holds exactly */

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* "gemm" in a name, but not as FBGEMM's namespace (fbgemm_gpu:: in the
 * arguments of its embedding-table kernels, which are not matrix products). */
static int says_gemm(const char *name)
{
    for (const char *p = name; (p = strstr(p, "gemm")); p++)
        if (p - name < 2 || strncmp(p - 2, "fb", 2))
            return 1;
    return contains(name, "GEMM");
}

static int is_gemm_kernel(const char *name)
{
    /* cuBLAS(Lt)'s Hopper kernels are named nvjet_sm90_tst_<tile>_..., without "gemm" */
    if (!strncmp(name, "nvjet_", 6))
        return 1;
    if (!says_gemm(name))
        return 0;
    /* cuDNN convolutions run as implicit GEMMs: not matrix products */
    static const char *conv[] = {"implicit", "conv", "fprop", "dgrad", "wgrad", "cudnn", "winograd"};
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++)
        if (contains(name, conv[i]))
            return 0;
    return 1;
}

/* Bytes per element of a dtype as traces spell it: NCCL args ("Float",
 * "BFloat16") and cpu_op "Input type" ("float", "long", "c10::Half"). */
static int dtype_bytes(const char *t)
{
    if (t && !strncmp(t, "Tensor(", 7)) { /* an execution trace's "Tensor(float)" */
        char b[32];
        size_t n = strcspn(t + 7, ")");
        snprintf(b, sizeof b, "%.*s", (int)(n < sizeof b ? n : sizeof b - 1), t + 7);
        return dtype_bytes(b);
    }
    if (!t)
        return 0;
    if (!strncmp(t, "c10::", 5))
        t += 5;
    static const struct {
        const char *name;
        int bytes;
    } T[] = {{"float", 4},  {"double", 8},       {"half", 2},        {"bfloat16", 2},    {"long", 8},
             {"long int", 8}, {"int", 4},        {"short", 2},       {"bool", 1},        {"byte", 1},
             {"char", 1},   {"unsigned char", 1}, {"signed char", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcasecmp(t, T[i].name))
            return T[i].bytes;
    return 0;
}

static int coll_of(const char *cname)
{
    if (!cname)
        return -1;
    char c[64];
    size_t j = 0;
    for (const char *p = cname; *p && j + 1 < sizeof c; p++)
        if (*p != '_')
            c[j++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    c[j] = 0;
    if (strstr(c, "allreduce"))
        return SIM_COLL_ALLREDUCE;
    if (strstr(c, "allgather"))
        return SIM_COLL_ALLGATHER;
    if (strstr(c, "reducescatter"))
        return SIM_COLL_REDUCESCATTER;
    if (strstr(c, "alltoall"))
        return SIM_COLL_ALLTOALL;
    if (strstr(c, "broadcast"))
        return SIM_COLL_BROADCAST;
    if (strstr(c, "reduce"))
        return SIM_COLL_REDUCE;
    return -1;
}

static void nccl_from_name(wl_kernel *k)
{
    const char *n = k->name;
    const char *p = strstr(n, "Kernel_");
    char op[48] = "";
    if (p) {
        p += 7;
        size_t j = 0;
        while (p[j] && p[j] != '_' && j + 1 < sizeof op) {
            op[j] = p[j];
            j++;
        }
        op[j] = 0;
    }
    k->coll = coll_of(op);
    k->algo = contains(n, "_RING_") ? SIM_ALGO_RING : contains(n, "_TREE_") ? SIM_ALGO_TREE : SIM_ALGO_AUTO;
    snprintf(k->proto, sizeof k->proto, "%s",
             contains(n, "_LL128_") ? "LL128" : contains(n, "_LL_") ? "LL" : contains(n, "_SIMPLE_") ? "SIMPLE" : "");
}

/* Shape of a GEMM op from its Input Dims; 0 if not a recognised shape (a
 * dimension of 0 or less), an error for a dimension that is not an integer
 * up to SIM_MAX_DIM. */
static int gemm_shape(rd *R, const char *op, const cJSON *args, gemm_op *g)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    if (!cJSON_IsArray(dims))
        return 0;
    int a = 0, batched = 0;
    if (!strcmp(op, "aten::mm"))
        a = 0;
    else if (!strcmp(op, "aten::addmm"))
        a = 1;
    else if (!strcmp(op, "aten::bmm"))
        a = 0, batched = 1;
    else if (!strcmp(op, "aten::baddbmm"))
        a = 1, batched = 1;
    else
        return 0;
    const cJSON *A = cJSON_GetArrayItem(dims, a), *B = cJSON_GetArrayItem(dims, a + 1);
    int r = batched ? 3 : 2;
    if (cJSON_GetArraySize(A) != r || cJSON_GetArraySize(B) != r)
        return 0;
    double v[2][3];
    for (int i = 0; i < r; i++) {
        const cJSON *x = cJSON_GetArrayItem(A, i), *y = cJSON_GetArrayItem(B, i);
        if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y) || x->valuedouble <= 0 || y->valuedouble <= 0)
            return 0;
        v[0][i] = x->valuedouble;
        v[1][i] = y->valuedouble;
        for (int k = 0; k < 2; k++)
            if (v[k][i] != floor(v[k][i]) || v[k][i] > (double)SIM_MAX_DIM) {
                if (!R->bad)
                    sim_errf(R->err, "%s: %sInput Dims: %s: dimension %.17g is not an integer in 1..%lld", R->src,
                             event_at(R, ".args."), op, v[k][i], (long long)SIM_MAX_DIM);
                R->bad = 1;
                return 0;
            }
    }
    int o = batched ? 1 : 0;
    if (v[0][o + 1] != v[1][o]) /* inner dimensions must agree */
        return 0;
    g->batch = batched ? (int64_t)v[0][0] : 1;
    g->m = (int64_t)v[0][o];
    g->k = (int64_t)v[0][o + 1];
    g->n = (int64_t)v[1][o + 1];
    const char *t = cJSON_IsArray(types) ? (cJSON_IsString(cJSON_GetArrayItem(types, a))
                                                ? cJSON_GetArrayItem(types, a)->valuestring
                                                : NULL)
                                          : NULL;
    g->dtype = t && contains(t, "BFloat16") ? SIM_DTYPE_BF16 : t && contains(t, "Half") ? SIM_DTYPE_FP16 : SIM_DTYPE_FP32;
    g->name = batched ? (a ? "aten::baddbmm" : "aten::bmm") : (a ? "aten::addmm" : "aten::mm");
    return 1;
}

static double dims_elems(const cJSON *d)
{
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) == 0)
        return 0;
    double n = 1;
    for (const cJSON *x = d->child; x; x = x->next) {
        if (!cJSON_IsNumber(x) || x->valuedouble < 0)
            return 0;
        n *= x->valuedouble;
    }
    return n;
}

/* Pointwise aten ops whose traffic follows from their arguments: `arity`
 * leading arguments are read (a 0-dim tensor or Scalar among them is a
 * register operand, not traffic), one output of the same shape is written
 * (self for in-place ops, the `out` argument or a new tensor otherwise).
 * fill_/zero_ only write; copy_(self, src) reads src and writes self. */
static const struct {
    const char *name;
    int arity; /* -1: copy_ */
} POINTWISE[] = {
    {"aten::fill_", 0}, {"aten::zero_", 0}, {"aten::copy_", -1},
    {"aten::abs", 1}, {"aten::neg", 1}, {"aten::exp", 1}, {"aten::exp_", 1}, {"aten::log", 1}, {"aten::log_", 1},
    {"aten::sqrt", 1}, {"aten::rsqrt", 1}, {"aten::reciprocal", 1}, {"aten::erf", 1}, {"aten::tanh", 1},
    {"aten::tanh_", 1}, {"aten::sigmoid", 1}, {"aten::sigmoid_", 1}, {"aten::relu", 1}, {"aten::relu_", 1},
    {"aten::gelu", 1}, {"aten::silu", 1}, {"aten::silu_", 1}, {"aten::clamp", 1}, {"aten::clamp_", 1},
    {"aten::clamp_min", 1}, {"aten::clamp_min_", 1}, {"aten::clamp_max", 1}, {"aten::clamp_max_", 1},
    {"aten::nan_to_num", 1}, {"aten::nan_to_num_", 1},
    {"aten::add", 2}, {"aten::add_", 2}, {"aten::sub", 2}, {"aten::sub_", 2}, {"aten::mul", 2}, {"aten::mul_", 2},
    {"aten::div", 2}, {"aten::div_", 2}, {"aten::maximum", 2}, {"aten::minimum", 2}, {"aten::tanh_backward", 2},
    {"aten::sigmoid_backward", 2}, {"aten::threshold_backward", 2}, {"aten::gelu_backward", 2},
    {"aten::silu_backward", 2}, {"aten::where", 3},
};

/* Whether a tensor of dims d with strides st (its "Input Strides" entry; NULL
 * when the trace records none) is laid out contiguously: the last stride 1
 * and each stride the product of the later dims (size-1 dims are free). */
static int contiguous(const cJSON *d, const cJSON *st)
{
    if (!cJSON_IsArray(st) || cJSON_GetArraySize(st) != cJSON_GetArraySize(d))
        return 1;
    double want = 1;
    for (int i = cJSON_GetArraySize(d) - 1; i >= 0; i--) {
        const cJSON *n = cJSON_GetArrayItem(d, i), *x = cJSON_GetArrayItem(st, i);
        if (!cJSON_IsNumber(n) || !cJSON_IsNumber(x))
            return 1;
        if (n->valuedouble > 1 && x->valuedouble != want)
            return 0;
        want *= n->valuedouble;
    }
    return 1;
}

/* Aten ops whose kernels run an element-wise class (sim_mem_class) other
 * than the pointwise ones, and the bytes each kernel moves in units of the
 * op's first tensor (its elements x size; a TensorList's summed): the
 * kernel whose name holds `kernel` (NULL: any other of the op's kernels).
 *   native_layer_norm: x read, y written (the per-row statistics are
 *     negligible);
 *   native_layer_norm_backward: the input gradient reads dy and x and
 *     writes dx; the weight and bias gradients (GammaBeta...) read dy and x
 *     and reduce them over the rows;
 *   sum: the input read (a bias gradient: over the tokens);
 *   cat: the inputs read and the output written (the element size from the
 *     kernel's OpaqueType<N>: the trace records no types for a TensorList). */
static const struct {
    const char *op, *kernel;
    int mclass, passes;
} CLASSED[] = {
    {"aten::native_layer_norm", NULL, SIM_MEMC_NORM, 2},
    {"aten::native_layer_norm_backward", "GammaBeta", SIM_MEMC_REDUCE, 2},
    {"aten::native_layer_norm_backward", NULL, SIM_MEMC_NORM, 3},
    {"aten::sum", NULL, SIM_MEMC_REDUCE, 1},
    {"aten::cat", NULL, SIM_MEMC_STRIDED, 2},
};
#define NCLASSED (int)(sizeof CLASSED / sizeof CLASSED[0])

/* A classed op's first tensor: *unit = its elements x their size (the size
 * 1 for a TensorList, whose kernel names it). */
static int classed_shape(rd *R, const char *op, const cJSON *args, gemm_op *g)
{
    int row = -1;
    for (int i = 0; i < NCLASSED && row < 0; i++)
        if (!strcmp(op, CLASSED[i].op))
            row = i;
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    if (row < 0 || !cJSON_IsArray(dims) || !cJSON_IsArray(types))
        return 0;
    const cJSON *d = cJSON_GetArrayItem(dims, 0), *t = cJSON_GetArrayItem(types, 0);
    double n = 0;
    int eb = 0;
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "TensorList")) {
        for (const cJSON *x = cJSON_IsArray(d) ? d->child : NULL; x; x = x->next)
            n += dims_elems(x);
        eb = 1;
    } else {
        n = dims_elems(d);
        eb = cJSON_IsString(t) ? dtype_bytes(t->valuestring) : 0;
    }
    if (n <= 0 || !eb)
        return 0;
    g->name = CLASSED[row].op;
    g->row = row;
    g->unit = bytes_of(R, n, eb, op);
    return g->unit > 0;
}

/* Bytes a pointwise op moves, from its Input Dims and types; 0 if it is not
 * in the table, records no shapes, or broadcasts (a tensor argument whose
 * shape differs from the output's is not a stream). */
static int pointwise_shape(rd *R, const char *op, const cJSON *args, gemm_op *g)
{
    int arity = -2;
    for (size_t i = 0; i < sizeof POINTWISE / sizeof POINTWISE[0]; i++)
        if (!strcmp(op, POINTWISE[i].name)) {
            arity = POINTWISE[i].arity;
            g->name = POINTWISE[i].name;
        }
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    if (arity == -2 || !cJSON_IsArray(dims) || !cJSON_IsArray(types))
        return 0;
    const cJSON *full = cJSON_GetArrayItem(dims, 0);
    double numel = dims_elems(full);
    if (numel <= 0)
        return 0;
    double read = 0;
    int out_size = 0, i = 0, narrow = 0, strided = 0;
    const cJSON *strides = cJSON_GetObjectItemCaseSensitive(args, "Input Strides");
    const cJSON *st = cJSON_IsArray(strides) ? strides->child : NULL;
    for (const cJSON *d = dims->child, *t = types->child; d && t;
         d = d->next, t = t->next, i++, st = st ? st->next : NULL) {
        int eb = cJSON_IsString(t) ? dtype_bytes(t->valuestring) : 0;
        if (!eb || !cJSON_IsArray(d) || cJSON_GetArraySize(d) == 0)
            continue; /* Scalar, None or a 0-dim tensor */
        if (!cJSON_Compare(d, full, 1))
            return 0;
        strided |= !contiguous(d, st);
        if (i == 0)
            out_size = eb;
        if (i < arity || (arity == -1 && i == 1)) {
            read += numel * eb;
            narrow |= eb == 2;
            if (arity > 0 && eb > out_size)
                out_size = eb; /* the widest input's type (an fp32 + bf16 add writes fp32; where(cond, x, y) x's) */
        }
    }
    if (!out_size || (arity == -1 && read <= 0))
        return 0;
    /* the kernel PyTorch runs off its vectorised path (CUDALoops.cuh
     * gpu_kernel_impl): arguments laid out otherwise than contiguous take the
     * offset-calculator loop, a 16-bit input into a 32-bit result the
     * dynamic-casting one */
    g->pw_class = strided ? SIM_MEMC_STRIDED : narrow && out_size == 4 ? SIM_MEMC_CAST_UP : SIM_MEMC_STREAM;
    g->ebytes = bytes_of(R, read + numel * out_size, 1, op); /* numel <= ebytes: it fits too */
    g->enumel = g->ebytes ? (int64_t)numel : 0;
    return g->ebytes > 0;
}

/* Size of a c10d collective from its Input Dims; 0 if it does not say
 * (TensorList arguments record no shapes). */
static int comm_shape(rd *R, const char *op, const cJSON *args, comm_op *c)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    if (!cJSON_IsArray(dims) || !cJSON_IsArray(types))
        return 0;
    const cJSON *t0 = cJSON_GetArrayItem(types, 0), *t1 = cJSON_GetArrayItem(types, 1);
    int b0 = cJSON_IsString(t0) ? dtype_bytes(t0->valuestring) : 0;
    int b1 = cJSON_IsString(t1) ? dtype_bytes(t1->valuestring) : 0;
    double e0 = dims_elems(cJSON_GetArrayItem(dims, 0)), e1 = dims_elems(cJSON_GetArrayItem(dims, 1));
    c->group = 0;
    if (!strcmp(op, "c10d::allreduce_") && b0 && e0 > 0) {
        c->coll = SIM_COLL_ALLREDUCE;
        c->bytes = bytes_of(R, e0, b0, op);
    } else if (!strcmp(op, "c10d::alltoall_base_") && b1 && e1 > 0) { /* (output, input, ...) */
        c->coll = SIM_COLL_ALLTOALL;
        c->bytes = bytes_of(R, e1, b1, op);
    } else if (!strcmp(op, "c10d::_allgather_base_") && b0 && e0 > 0 && e1 > 0) { /* (output, input) */
        c->coll = SIM_COLL_ALLGATHER;
        c->bytes = bytes_of(R, e0, b0, op);
        c->group = e0 / e1 < SIM_MAX_GPUS ? (int)(e0 / e1 + 0.5) : 0; /* 0: not implied */
    } else if (!strcmp(op, "c10d::_reduce_scatter_base_") && b1 && e0 > 0 && e1 > 0) { /* (output, input) */
        c->coll = SIM_COLL_REDUCESCATTER;
        c->bytes = bytes_of(R, e1, b1, op);
        c->group = e1 / e0 < SIM_MAX_GPUS ? (int)(e1 / e0 + 0.5) : 0;
    } else {
        return 0;
    }
    return 1;
}

/* Ops sorted by (pid, tid, ts); x and y point at structs whose first member
 * is a cpu_span. */
static int cmp_span(const void *x, const void *y)
{
    const cpu_span *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* The op on (pid, tid) whose interval holds time ts, or -1: ops are n
 * structs of `size` bytes sorted by cmp_span, each starting with its span. */
static int find_span(const void *ops, int n, size_t size, int64_t pid, int64_t tid, double ts)
{
#define AT(i) ((const cpu_span *)((const char *)ops + (size_t)(i) * size))
    int lo = 0, hi = n; /* first op with key > (pid, tid, ts) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const cpu_span *o = AT(mid);
        int before = o->pid < pid || (o->pid == pid && (o->tid < tid || (o->tid == tid && o->ts <= ts)));
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo - 1, steps = 0; i >= 0 && steps < 8; i--, steps++) {
        const cpu_span *o = AT(i);
        if (o->pid != pid || o->tid != tid)
            break;
        if (o->ts <= ts && ts <= o->end)
            return i;
    }
    return -1;
#undef AT
}

static int cmp_launch(const void *x, const void *y)
{
    const launch *a = x, *b = y;
    return a->corr < b->corr ? -1 : a->corr > b->corr;
}

static int cmp_kernel_ts(const void *x, const void *y)
{
    const wl_kernel *a = x, *b = y;
    if (a->ts_us != b->ts_us)
        return a->ts_us < b->ts_us ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream); /* a difference could overflow */
}

static int cmp_host(const void *x, const void *y)
{
    const wl_host_call *a = x, *b = y;
    if (a->ts_us != b->ts_us)
        return a->ts_us < b->ts_us ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

static int cmp_wait(const void *x, const void *y)
{
    const wl_stream_wait *a = x, *b = y;
    if (a->ts_us != b->ts_us)
        return a->ts_us < b->ts_us ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Kernel names repeat thousands of times: one copy each, found by hash (a
 * trace with 100 k distinct names took 20.7 s by linear scan). */
static const char *intern(wl_kineto *t, const char *s)
{
    uint32_t mask = (uint32_t)(2 * t->names_cap - 1), j = hash_str(s) & mask;
    for (; t->names_cap && t->name_hash[j] >= 0; j = (j + 1) & mask)
        if (!strcmp(t->names[t->name_hash[j]], s))
            return t->names[t->name_hash[j]];
    if (t->nnames == t->names_cap) {
        t->names_cap = t->names_cap ? 2 * t->names_cap : 64;
        t->names = sim_xrealloc(t->names, (size_t)t->names_cap, sizeof *t->names, "the trace's kernel names");
        free(t->name_hash);
        t->name_hash = sim_xcalloc(2 * (size_t)t->names_cap, sizeof *t->name_hash, "the trace's kernel names");
        mask = (uint32_t)(2 * t->names_cap - 1);
        memset(t->name_hash, 0xff, 2 * (size_t)t->names_cap * sizeof *t->name_hash);
        for (int i = 0; i < t->nnames; i++) {
            uint32_t k = hash_str(t->names[i]) & mask;
            while (t->name_hash[k] >= 0)
                k = (k + 1) & mask;
            t->name_hash[k] = i;
        }
        for (j = hash_str(s) & mask; t->name_hash[j] >= 0; j = (j + 1) & mask)
            ;
    }
    t->name_hash[j] = t->nnames;
    return t->names[t->nnames++] = sim_xstrdup(s, "the trace's kernel names");
}

/* The ops, launches and steps of pass 1. */
typedef struct pass1 {
    gemm_op *ops;
    comm_op *comms;
    launch *ls;
    int nops, ops_cap, ncomm, comm_cap, nl, l_cap, steps_cap, hs_cap;
} pass1;

/* p with room for element n (capacity doubled as needed). */
static void *grow(void *p, int *cap, int n, size_t elem, const char *what)
{
    if (n < *cap)
        return p;
    *cap = *cap ? 2 * *cap : 256;
    return sim_xrealloc(p, (size_t)*cap, elem, what);
}

/* The thread and the time interval of a CPU event. */
static void span_of(rd *R, const cJSON *e, int64_t *pid, int64_t *tid, double *ts, double *end)
{
    *pid = ival(R, e, "", "pid", 0, -ID_MAX, ID_MAX);
    *tid = ival(R, e, "", "tid", 0, -ID_MAX, ID_MAX);
    *ts = num(e, "ts", 0);
    *end = *ts + num(e, "dur", 0);
}

static void cpu_op(rd *R, pass1 *P, const cJSON *e, const char *name, const cJSON *args)
{
    gemm_op g;
    comm_op c;
    memset(&g, 0, sizeof g);
    g.row = -1;
    if (!strncmp(name, "aten::", 6) &&
        (gemm_shape(R, name, args, &g) || pointwise_shape(R, name, args, &g) || classed_shape(R, name, args, &g))) {
        P->ops = grow(P->ops, &P->ops_cap, P->nops, sizeof *P->ops, "the trace's GEMM ops");
        span_of(R, e, &g.sp.pid, &g.sp.tid, &g.sp.ts, &g.sp.end);
        P->ops[P->nops++] = g;
    }
    if (!strncmp(name, "c10d::", 6) && comm_shape(R, name, args, &c)) {
        P->comms = grow(P->comms, &P->comm_cap, P->ncomm, sizeof *P->comms, "the trace's c10d ops");
        span_of(R, e, &c.sp.pid, &c.sp.tid, &c.sp.ts, &c.sp.end);
        P->comms[P->ncomm++] = c;
    }
}

/* Every host op, for the execution-trace join (et.h). */
static void host_op(rd *R, wl_kineto *t, pass1 *P, const cJSON *e, const char *name, const cJSON *args)
{
    if (!strncmp(name, "ProfilerStep#", 13))
        return;
    t->hops = grow(t->hops, &t->hops_cap, t->nhops, sizeof *t->hops, "the trace's host ops");
    t->hs = grow(t->hs, &P->hs_cap, t->nhops, sizeof *t->hs, "the trace's host ops");
    wl_host_op *o = &t->hops[t->nhops];
    hspan *h = &t->hs[t->nhops];
    h->op = t->nhops++;
    span_of(R, e, &h->sp.pid, &h->sp.tid, &h->sp.ts, &h->sp.end);
    o->name = intern(t, name);
    o->tid = h->sp.tid;
    o->ts_us = h->sp.ts;
    o->end_us = h->sp.end;
    o->ext_id = ival(R, args, "args.", "External id", -1, -1, ID_MAX);
    o->rf_id = ival(R, args, "args.", "Record function id", -1, -1, ID_MAX);
    o->dims = NULL;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    char *txt = cJSON_IsArray(d) ? cJSON_PrintUnformatted(d) : NULL;
    if (txt)
        o->dims = intern(t, txt);
    free(txt);
    if (t->pid < 0)
        t->pid = h->sp.pid;
}

/* Host ops by (pid, tid, start), an enclosing op (later end) before the ops
 * it holds, so that the innermost op around a time is the last one started. */
static int cmp_hspan(const void *x, const void *y)
{
    const hspan *a = x, *b = y;
    int c = cmp_span(x, y);
    if (c)
        return c;
    if (a->sp.end != b->sp.end)
        return a->sp.end > b->sp.end ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

static void sort_host_ops(wl_kineto *t)
{
    if (t->nhops > 1)
        qsort(t->hs, (size_t)t->nhops, sizeof *t->hs, cmp_hspan);
    wl_host_op *o = sim_xcalloc((size_t)t->nhops + 1, sizeof *o, "the trace's host ops");
    for (int i = 0; i < t->nhops; i++) {
        o[i] = t->hops[t->hs[i].op];
        t->hs[i].op = i;
    }
    free(t->hops);
    t->hops = o;
}

/* The innermost host op of thread (pid, tid) around time ts (the last
 * started that holds it), -1 when none. */
static int innermost_op(const wl_kineto *t, int64_t pid, int64_t tid, double ts)
{
    int lo = 0, hi = t->nhops;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const cpu_span *o = &t->hs[mid].sp;
        if (o->pid < pid || (o->pid == pid && (o->tid < tid || (o->tid == tid && o->ts <= ts))))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo - 1, steps = 0; i >= 0 && steps < 4096; i--, steps++) {
        const cpu_span *o = &t->hs[i].sp;
        if (o->pid != pid || o->tid != tid)
            break;
        if (ts <= o->end)
            return i;
    }
    return -1;
}

/* A runtime call that orders GPU work (wl_host_call). */
static void host_call(rd *R, wl_kineto *t, const cJSON *e, const char *name)
{
    static const struct {
        const char *name;
        wl_host_kind kind;
    } H[] = {{"cudaStreamWaitEvent", WL_HOST_WAIT_EVENT}, {"cudaStreamSynchronize", WL_HOST_SYNC},
             {"cudaDeviceSynchronize", WL_HOST_SYNC},     {"cudaEventSynchronize", WL_HOST_SYNC},
             {"cudaMemcpy", WL_HOST_SYNC}};
    for (size_t i = 0; i < sizeof H / sizeof H[0]; i++)
        if (!strcmp(name, H[i].name)) {
            int64_t pid;
            t->host = grow(t->host, &t->host_cap, t->nhost, sizeof *t->host, "the trace's host calls");
            wl_host_call *h = &t->host[t->nhost++];
            h->kind = H[i].kind;
            span_of(R, e, &pid, &h->tid, &h->ts_us, &h->end_us);
        }
}

/* A cuda_sync record of a stream waiting for another (wl_stream_wait). */
static void stream_wait(rd *R, wl_kineto *t, const cJSON *e, const cJSON *args)
{
    int ws = (int)ival(R, args, "args.", "wait_on_stream", -1, -1, INT32_MAX);
    int64_t corr = ival(R, args, "args.", "wait_on_cuda_event_record_corr_id", -1, -1, ID_MAX);
    if (ws < 0 || corr < 0)
        return; /* a context or stream synchronisation, or the record not seen */
    t->waits = grow(t->waits, &t->waits_cap, t->nwaits, sizeof *t->waits, "the trace's stream waits");
    t->waits[t->nwaits++] = (wl_stream_wait){(int)ival(R, args, "args.", "stream", 0, INT32_MIN, INT32_MAX), ws, corr,
                                             num(e, "ts", 0)};
}

/* PyTorch's "nccl:<collective>" annotation inside a c10d op records the
 * message tensor where the op itself records a TensorList without shapes
 * (c10d::allreduce_): the size of all-reduce, all-to-all, broadcast and
 * reduce, whose message is their input. */
static void nccl_annotation(rd *R, pass1 *P, const cJSON *e, const char *name, const cJSON *args)
{
    comm_op c = {0};
    c.coll = coll_of(name + 5);
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
    const cJSON *t0 = cJSON_IsArray(types) ? cJSON_GetArrayItem(types, 0) : NULL;
    int b = cJSON_IsString(t0) ? dtype_bytes(t0->valuestring) : 0;
    double n = cJSON_IsArray(dims) ? dims_elems(cJSON_GetArrayItem(dims, 0)) : 0;
    if (c.coll == SIM_COLL_ALLGATHER || c.coll == SIM_COLL_REDUCESCATTER || c.coll < 0 || !b || n <= 0)
        return;
    c.bytes = bytes_of(R, n, b, name);
    P->comms = grow(P->comms, &P->comm_cap, P->ncomm, sizeof *P->comms, "the trace's c10d ops");
    span_of(R, e, &c.sp.pid, &c.sp.tid, &c.sp.ts, &c.sp.end);
    P->comms[P->ncomm++] = c;
}

/* Pass 1: GEMM and c10d ops with shapes, kernel launches, steps. */
static void first_pass(rd *R, wl_kineto *t, const cJSON *events, pass1 *P)
{
    R->ev = 0;
    for (const cJSON *e = events->child; e && !R->bad; e = e->next, R->ev++) {
        const char *cat = str(e, "cat"), *name = str(e, "name");
        if (!cat || !name)
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (!strcmp(cat, "cpu_op") || !strcmp(cat, "operator") || !strcmp(cat, "user_annotation"))
            host_op(R, t, P, e, name, args);
        if (!strcmp(cat, "cpu_op") || !strcmp(cat, "operator")) {
            cpu_op(R, P, e, name, args);
        } else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "Runtime") || !strcmp(cat, "cuda_driver")) {
            /* cuda_driver: launches through the driver API (cuLaunchKernelEx:
             * cuBLASLt's nvjet GEMMs and cuDNN's kernels in the PyTorch 2.11
             * traces of h100-micro/) share the kernel's correlation id too */
            int64_t corr = ival(R, args, "args.", "correlation", -1, -1, ID_MAX);
            if (corr >= 0) {
                P->ls = grow(P->ls, &P->l_cap, P->nl, sizeof *P->ls, "the trace's launches");
                launch *l = &P->ls[P->nl++];
                l->corr = corr;
                span_of(R, e, &l->pid, &l->tid, &l->ts, &l->end);
            }
            host_call(R, t, e, name);
        } else if (!strcmp(cat, "user_annotation") && !strncmp(name, "nccl:", 5)) {
            nccl_annotation(R, P, e, name, args);
        } else if (!strcmp(cat, "cuda_sync")) {
            stream_wait(R, t, e, args);
        }
        if (!strncmp(name, "ProfilerStep#", 13) && num(e, "dur", -1) >= 0 && strcmp(cat, "gpu_user_annotation")) {
            if (t->nsteps == P->steps_cap) {
                P->steps_cap = P->steps_cap ? 2 * P->steps_cap : 16;
                t->step_us = sim_xrealloc(t->step_us, (size_t)P->steps_cap, sizeof *t->step_us, "the trace's steps");
                t->step_name = sim_xrealloc(t->step_name, (size_t)P->steps_cap, sizeof *t->step_name,
                                            "the trace's steps");
                t->step_ts = sim_xrealloc(t->step_ts, (size_t)P->steps_cap, sizeof *t->step_ts, "the trace's steps");
            }
            t->step_us[t->nsteps] = num(e, "dur", 0);
            t->step_ts[t->nsteps] = num(e, "ts", 0);
            t->step_name[t->nsteps++] = sim_xstrdup(name, "the trace's steps");
        }
    }
    if (P->nops > 1)
        qsort(P->ops, (size_t)P->nops, sizeof *P->ops, cmp_span);
    if (P->nl > 1)
        qsort(P->ls, (size_t)P->nl, sizeof *P->ls, cmp_launch);
    if (P->ncomm > 1)
        qsort(P->comms, (size_t)P->ncomm, sizeof *P->comms, cmp_span);
    sort_host_ops(t);
}

static const launch *find_launch(rd *R, const pass1 *P, const cJSON *args)
{
    launch key = {ival(R, args, "args.", "correlation", -1, -1, ID_MAX), 0, 0, 0, 0};
    return key.corr >= 0 && P->nl ? bsearch(&key, P->ls, (size_t)P->nl, sizeof *P->ls, cmp_launch) : NULL;
}

static void nccl_kernel(rd *R, wl_kineto *t, const pass1 *P, const launch *l, wl_kernel *k, const cJSON *args)
{
    k->cls = WL_K_NCCL;
    nccl_from_name(k);
    const char *cname = str(args, "Collective name");
    if (cname) {
        k->coll = coll_of(cname);
        int eb = dtype_bytes(str(args, "dtype"));
        int64_t in = ival(R, args, "args.", "In msg nelems", 0, 0, ID_MAX);
        int64_t out = ival(R, args, "args.", "Out msg nelems", 0, 0, ID_MAX);
        /* sim/schedule.h: all-gather counts the gathered output, the others the input */
        k->bytes = bytes_of(R, (double)(k->coll == SIM_COLL_ALLGATHER ? out : in), eb, "a collective");
        k->group_size = (int)ival(R, args, "args.", "Group size", 0, 0, SIM_MAX_GPUS);
        k->elem_size = eb;
        const char *pg = str(args, "Process Group Ranks"), *sp = str(args, "In split size");
        k->pg_ranks = pg && pg[0] ? intern(t, pg) : NULL;
        k->in_splits = sp && sp[0] && strcmp(sp, "[]") ? intern(t, sp) : NULL;
        k->p2p = !strcmp(cname, "send") ? WL_P2P_SEND : !strcmp(cname, "recv") ? WL_P2P_RECV : WL_P2P_NONE;
        const char *pk = k->p2p == WL_P2P_SEND ? "Dst Rank" : "Src Rank";
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(args, pk);
        if (k->p2p && cJSON_IsString(pv)) { /* written as a string by some versions */
            char *end;
            long v = strtol(pv->valuestring, &end, 10);
            k->peer = end != pv->valuestring && !*end && v >= 0 && v < SIM_MAX_GPUS ? (int)v : -1;
        } else if (k->p2p) {
            k->peer = (int)ival(R, args, "args.", pk, -1, -1, SIM_MAX_GPUS - 1);
        }
    } else if (P->ncomm) {
        int ci = l ? find_span(P->comms, P->ncomm, sizeof *P->comms, l->pid, l->tid, l->ts) : -1;
        if (ci >= 0) {
            k->coll = P->comms[ci].coll;
            k->bytes = P->comms[ci].bytes;
            k->nccl_from_op = 1;
            k->group_size = P->comms[ci].group > 0 ? P->comms[ci].group : t->world;
            k->group_is_world = P->comms[ci].group <= 0;
        }
    }
}

static void gemm_kernel(const pass1 *P, const launch *l, wl_kernel *k, const char *name)
{
    k->cls = WL_K_GEMM;
    int oi = l ? find_span(P->ops, P->nops, sizeof *P->ops, l->pid, l->tid, l->ts) : -1;
    if (oi < 0 || P->ops[oi].ebytes || P->ops[oi].row >= 0)
        return;
    const gemm_op *g = &P->ops[oi];
    k->has_shape = 1;
    k->m = g->m;
    k->n = g->n;
    k->k = g->k;
    k->batch = g->batch;
    k->op = g->name;
    k->op_index = oi;
    k->dtype = (sim_dtype)g->dtype;
    /* fp32 inputs on tensor cores are TF32 (PyTorch's allow_tf32, Ampere+) */
    if (k->dtype == SIM_DTYPE_FP32 && (contains(name, "tensorop_s") || contains(name, "s1688") ||
                                       contains(name, "s16816") || contains(name, "tf32")))
        k->dtype = SIM_DTYPE_TF32;
}

/* An element-wise kernel launched by a pointwise op of the table. */
static void elementwise_kernel(const pass1 *P, const launch *l, wl_kernel *k, const char *name)
{
    int oi = l ? find_span(P->ops, P->nops, sizeof *P->ops, l->pid, l->tid, l->ts) : -1;
    if (oi < 0 || !P->ops[oi].ebytes)
        return;
    k->op = P->ops[oi].name;
    k->op_index = oi;
    k->elem_bytes = P->ops[oi].ebytes;
    k->elem_numel = P->ops[oi].enumel;
    k->elem_vectorized = contains(name, "vectorized_elementwise_kernel");
    if (!k->elem_vectorized && P->ops[oi].pw_class != SIM_MEMC_STREAM) {
        k->mclass = P->ops[oi].pw_class;
        k->mclass_bytes = k->elem_bytes;
    }
}

/* A kernel launched by a classed op (CLASSED): its class and bytes. */
static void classed_kernel(rd *R, const pass1 *P, const launch *l, wl_kernel *k, const char *name)
{
    int oi = l ? find_span(P->ops, P->nops, sizeof *P->ops, l->pid, l->tid, l->ts) : -1;
    if (oi < 0 || P->ops[oi].row < 0)
        return;
    const char *op = CLASSED[P->ops[oi].row].op;
    int row = -1;
    for (int i = 0; i < NCLASSED && row < 0; i++)
        if (!strcmp(CLASSED[i].op, op) && (!CLASSED[i].kernel || contains(name, CLASSED[i].kernel)))
            row = i;
    int each = 1;
    const char *o = strstr(name, "OpaqueType<");
    if (P->ops[oi].unit > 0 && !strcmp(op, "aten::cat"))
        each = o ? atoi(o + 11) : 0; /* a cat's element size: OpaqueType<2u> */
    if (row < 0 || each <= 0 || each > 16)
        return;
    k->op = op;
    k->op_index = oi;
    k->mclass = CLASSED[row].mclass;
    k->mclass_bytes = bytes_of(R, (double)P->ops[oi].unit * CLASSED[row].passes, each, op);
}

/* Pass 2: the kernels. */
static void second_pass(rd *R, wl_kineto *t, const cJSON *events, const pass1 *P)
{
    R->ev = 0;
    for (const cJSON *e = events->child; e && !R->bad; e = e->next, R->ev++) {
        const char *cat = str(e, "cat"), *name = str(e, "name");
        if (!cat || !name ||
            (strcmp(cat, "kernel") && strcmp(cat, "Kernel") && strcmp(cat, "gpu_memcpy") && strcmp(cat, "gpu_memset") &&
             strcmp(cat, "Memcpy") && strcmp(cat, "Memset")))
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        t->k = grow(t->k, &t->cap, t->n, sizeof *t->k, "the trace's kernels");
        wl_kernel *k = &t->k[t->n++];
        memset(k, 0, sizeof *k);
        k->name = intern(t, name);
        k->ts_us = num(e, "ts", 0);
        k->dur_us = num(e, "dur", 0);
        k->stream = (int)ival(R, args, "args.", "stream", ival(R, e, "", "tid", 0, INT32_MIN, INT32_MAX), INT32_MIN,
                              INT32_MAX);
        k->coll = -1;
        k->op_index = -1;
        k->host_op = -1;
        k->peer = -1;
        const launch *l = find_launch(R, P, args);
        k->launch_end_us = l ? l->end : -1;
        k->launch_ts_us = l ? l->ts : -1;
        k->launch_tid = l ? l->tid : 0;
        k->corr = ival(R, args, "args.", "correlation", -1, -1, ID_MAX);
        k->host_op = l ? innermost_op(t, l->pid, l->tid, l->ts) : -1;
        if (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset") || !strcmp(cat, "Memcpy") ||
            !strcmp(cat, "Memset")) {
            t->copies = grow(t->copies, &t->copies_cap, t->ncopies, sizeof *t->copies, "the trace's copies");
            t->copies[t->ncopies++] = *k;
            t->n--;
            continue;
        }
        if (!strncmp(name, "ncclKernel", 10) || !strncmp(name, "ncclDevKernel", 13))
            nccl_kernel(R, t, P, l, k, args);
        else if (is_gemm_kernel(name))
            gemm_kernel(P, l, k, name);
        else if (contains(name, "elementwise_kernel"))
            elementwise_kernel(P, l, k, name);
        else
            classed_kernel(R, P, l, k, name);
    }
}

wl_kineto *wl_kineto_parse(const char *text, const char *source, sim_err *err)
{
    cJSON *root = sim_json_parse(text, source, err);
    if (!root)
        return NULL;
    const cJSON *events = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    if (!cJSON_IsArray(events)) {
        cJSON_Delete(root);
        sim_errf(err, "%s: no \"traceEvents\" array: expected a PyTorch-profiler (Kineto) Chrome trace", source);
        return NULL;
    }
    wl_kineto *t = sim_xcalloc(1, sizeof *t, "a trace");
    t->path = sim_xstrdup(source, "a trace");
    t->rank = -1;
    t->pid = -1;
    rd R = {source, err, 0, 0, ""};
    const cJSON *dp = cJSON_GetObjectItemCaseSensitive(root, "deviceProperties");
    if (cJSON_IsArray(dp) && str(cJSON_GetArrayItem(dp, 0), "name"))
        snprintf(t->device, sizeof t->device, "%s", str(cJSON_GetArrayItem(dp, 0), "name"));
    const cJSON *di = cJSON_GetObjectItemCaseSensitive(root, "distributedInfo");
    if (cJSON_IsObject(di)) {
        R.ev = -1;
        t->rank = (int)ival(&R, di, "distributedInfo.", "rank", -1, -1, SIM_MAX_GPUS - 1);
        t->world = (int)ival(&R, di, "distributedInfo.", "world_size", 0, 0, SIM_MAX_GPUS);
    }
    pass1 P = {0};
    if (!R.bad)
        first_pass(&R, t, events, &P);
    if (!R.bad)
        second_pass(&R, t, events, &P);
    free(P.ops);
    free(P.comms);
    free(P.ls);
    cJSON_Delete(root);
    /* give the parse tree's heap back: callers fork one simulation per case,
     * and a fork copies the page tables of whatever is still mapped */
    malloc_trim(0);
    if (R.bad) {
        wl_kineto_free(t);
        return NULL;
    }
    if (t->n > 1)
        qsort(t->k, (size_t)t->n, sizeof *t->k, cmp_kernel_ts);
    if (t->ncopies > 1)
        qsort(t->copies, (size_t)t->ncopies, sizeof *t->copies, cmp_kernel_ts);
    if (t->nhost > 1)
        qsort(t->host, (size_t)t->nhost, sizeof *t->host, cmp_host);
    if (t->nwaits > 1)
        qsort(t->waits, (size_t)t->nwaits, sizeof *t->waits, cmp_wait);
    return t;
}

wl_kineto *wl_kineto_load(const char *path, sim_err *err)
{
    char *text = wl_kineto_read_text(path, err);
    if (!text)
        return NULL;
    wl_kineto *t = wl_kineto_parse(text, path, err);
    free(text);
    return t;
}

void wl_kineto_free(wl_kineto *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nnames; i++)
        free(t->names[i]);
    for (int i = 0; i < t->nsteps; i++)
        free(t->step_name[i]);
    free(t->names);
    free(t->name_hash);
    free(t->step_name);
    free(t->step_us);
    free(t->step_ts);
    free(t->copies);
    free(t->host);
    free(t->waits);
    free(t->hops);
    free(t->hs);
    free(t->k);
    free(t->path);
    free(t);
}

const char *wl_kineto_device(const wl_kineto *t) { return t->device; }
int wl_kineto_rank(const wl_kineto *t) { return t->rank; }
int wl_kineto_world(const wl_kineto *t) { return t->world; }
int wl_kineto_nkernels(const wl_kineto *t) { return t->n; }
int wl_kineto_nops(const wl_kineto *t) { return t->nhops; }
const wl_host_op *wl_kineto_op(const wl_kineto *t, int i) { return i >= 0 && i < t->nhops ? &t->hops[i] : NULL; }
int64_t wl_kineto_pid(const wl_kineto *t) { return t->pid; }
int wl_kineto_dtype_bytes(const char *type) { return dtype_bytes(type); }

int wl_kineto_pointwise_arity(const char *op)
{
    for (size_t i = 0; op && i < sizeof POINTWISE / sizeof POINTWISE[0]; i++)
        if (!strcmp(op, POINTWISE[i].name))
            return POINTWISE[i].arity;
    return -2;
}

int wl_kineto_op_work(const char *op, const char *dims, const char *types, const char *source, wl_op_work *w,
                      sim_err *err)
{
    memset(w, 0, sizeof *w);
    cJSON *args = cJSON_CreateObject(), *d = dims ? cJSON_Parse(dims) : NULL, *ty = types ? cJSON_Parse(types) : NULL;
    if (d)
        cJSON_AddItemToObject(args, "Input Dims", d);
    if (ty)
        cJSON_AddItemToObject(args, "Input type", ty);
    rd R = {source, err, -1, 0, ""};
    gemm_op g;
    memset(&g, 0, sizeof g);
    int r = gemm_shape(&R, op, args, &g) ? 1 : pointwise_shape(&R, op, args, &g) ? 2 : 0;
    cJSON_Delete(args);
    if (R.bad)
        return -1;
    if (r == 1) {
        w->gemm = 1;
        w->m = g.m, w->n = g.n, w->k = g.k, w->batch = g.batch;
        w->dtype = (sim_dtype)g.dtype;
    } else if (r == 2) {
        w->bytes = g.ebytes;
        w->numel = g.enumel;
    }
    w->op = r ? g.name : NULL;
    return r ? 1 : 0;
}
const wl_kernel *wl_kineto_kernel(const wl_kineto *t, int i) { return i >= 0 && i < t->n ? &t->k[i] : NULL; }
static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int wl_kineto_main_stream(const wl_kineto *t)
{
    /* the stream ids sorted, counted by runs: a trace may name any number of streams */
    int *s = sim_xcalloc((size_t)t->n, sizeof *s, "the trace's streams");
    for (int i = 0; i < t->n; i++)
        s[i] = t->k[i].stream;
    qsort(s, (size_t)t->n, sizeof *s, cmp_int);
    int best = -1, best_n = 0;
    for (int i = 0, j; i < t->n; i = j) {
        for (j = i; j < t->n && s[j] == s[i]; j++)
            ;
        if (j - i > best_n) /* ascending ids: the smallest wins a tie */
            best = s[i], best_n = j - i;
    }
    free(s);
    return best;
}

/* The NCCL kernels in start order, with the latest end among the first i
 * (end_max[i]), so that an overlap is found by one binary search. */
typedef struct nccl_spans {
    double *ts, *end_max;
    int n;
} nccl_spans;

static nccl_spans nccl_spans_of(const wl_kineto *t)
{
    nccl_spans S = {sim_xcalloc((size_t)t->n, sizeof *S.ts, "the trace's NCCL kernels"),
                    sim_xcalloc((size_t)t->n, sizeof *S.end_max, "the trace's NCCL kernels"), 0};
    for (int i = 0; i < t->n; i++) /* kernels are sorted by start time */
        if (t->k[i].cls == WL_K_NCCL) {
            double e = t->k[i].ts_us + t->k[i].dur_us;
            S.ts[S.n] = t->k[i].ts_us;
            S.end_max[S.n] = S.n && S.end_max[S.n - 1] > e ? S.end_max[S.n - 1] : e;
            S.n++;
        }
    return S;
}

/* 1 when [ts, end] overlaps an NCCL kernel: one that starts before end
 * and ends after ts. */
static int beside_nccl(const nccl_spans *S, double ts, double end)
{
    int lo = 0, hi = S->n; /* the first NCCL kernel starting at or after end */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (S->ts[mid] < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && S->end_max[lo - 1] > ts;
}

static void nccl_spans_free(nccl_spans *S) { free(S->ts), free(S->end_max); }

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double wl_kineto_busy_gap_us(const wl_kineto *t, int stream)
{
    double *g = sim_xcalloc((size_t)t->n + 1, sizeof *g, "the trace's kernel gaps");
    nccl_spans S = nccl_spans_of(t);
    int n = 0, prev = -1;
    for (int i = 0; i < t->n; i++) { /* kernels are sorted by start time */
        const wl_kernel *k = &t->k[i];
        if (k->stream != stream)
            continue;
        if (prev >= 0) {
            const wl_kernel *p = &t->k[prev];
            double end = p->ts_us + p->dur_us;
            /* queued before the previous ended, and no NCCL kernel holding SMs meanwhile */
            if (k->launch_end_us >= 0 && k->launch_end_us < end && k->ts_us >= end &&
                !beside_nccl(&S, p->ts_us, k->ts_us + k->dur_us))
                g[n++] = k->ts_us - end;
        }
        prev = i;
    }
    nccl_spans_free(&S);
    double med = -1;
    if (n) {
        qsort(g, (size_t)n, sizeof *g, cmp_dbl);
        med = n % 2 ? g[n / 2] : 0.5 * (g[n / 2 - 1] + g[n / 2]);
    }
    free(g);
    return med;
}

typedef struct pw_call {
    const char *op;
    int mclass;
    int64_t numel, bytes;
    double us;
} pw_call;

static int cmp_pw(const void *a, const void *b)
{
    const pw_call *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    int c = strcmp(x->op, y->op);
    if (c)
        return c;
    if (x->mclass != y->mclass)
        return x->mclass - y->mclass;
    if (x->numel != y->numel)
        return x->numel < y->numel ? -1 : 1;
    return (x->us > y->us) - (x->us < y->us);
}

/* The kernels one of the two lists below takes: the vectorised pointwise
 * kernels (classed = 0) or the classed ones (1), with their bytes. */
static int64_t call_bytes(const wl_kernel *k, int classed)
{
    if (k->op_index < 0)
        return 0;
    return classed ? (k->mclass > SIM_MEMC_STREAM ? k->mclass_bytes : 0) : k->elem_bytes;
}

/* The groups of wl_kineto_pointwise (classed = 0) or wl_kineto_classed (1):
 * one entry per kernel, but per op call (op_index, its kernels summed) for
 * an op over more than 2^31 bytes: PyTorch splits an op whose byte offsets
 * exceed 32 bits into several launches, each over a part of the tensors the
 * op's shapes describe.  Such a call counts only when every kernel of it
 * qualifies (main stream, no NCCL kernel beside it; the pointwise list also
 * wants the vectorised template).  Smaller calls stay per kernel: a kernel
 * of an op nested inside a pointwise op (aten::where's aten::fill_ of its
 * 0-dim scalars) is attributed to the outer op, and summing it in would
 * make that call longer rather than whole; a LayerNorm backward's two
 * kernels are two classes. */
static int group_calls(const wl_kineto *t, int classed, pw_call **groups, int **counts)
{
    int ms = wl_kineto_main_stream(t), nc = 0, ng = 0;
    nccl_spans S = nccl_spans_of(t);
    pw_call *c = sim_xcalloc((size_t)t->n + 1, sizeof *c, "the trace's element-wise kernels");
    *groups = sim_xcalloc((size_t)t->n + 1, sizeof **groups, "the trace's element-wise kernels");
    *counts = sim_xcalloc((size_t)t->n + 1, sizeof **counts, "the trace's element-wise kernels");
    int max_op = -1;
    for (int i = 0; i < t->n; i++)
        if (call_bytes(&t->k[i], classed) > 0 && t->k[i].op_index > max_op)
            max_op = t->k[i].op_index;
    int *slot = sim_xcalloc((size_t)max_op + 2, sizeof *slot, "the trace's element-wise calls");
    char *bad = sim_xcalloc((size_t)t->n + 1, 1, "the trace's element-wise calls");
    for (int i = 0; i <= max_op; i++)
        slot[i] = -1;
    for (int i = 0; i < t->n; i++) {
        const wl_kernel *k = &t->k[i];
        int64_t b = call_bytes(k, classed);
        if (b <= 0)
            continue;
        int split = b > WL_KINETO_SPLIT_BYTES, sl = split ? slot[k->op_index] : -1;
        if (sl < 0) {
            sl = nc++;
            c[sl] = (pw_call){k->op, classed ? k->mclass : SIM_MEMC_STREAM, classed ? 0 : k->elem_numel, b, 0};
            if (split)
                slot[k->op_index] = sl;
        }
        c[sl].us += k->dur_us;
        bad[sl] |=
            k->stream != ms || (!classed && !k->elem_vectorized) || beside_nccl(&S, k->ts_us, k->ts_us + k->dur_us);
    }
    int kept = 0;
    for (int i = 0; i < nc; i++)
        if (!bad[i])
            c[kept++] = c[i];
    nc = kept;
    free(slot);
    free(bad);
    if (nc)
        qsort(c, (size_t)nc, sizeof *c, cmp_pw);
    for (int i = 0; i < nc;) {
        int j = i;
        while (j < nc && c[j].bytes == c[i].bytes && c[j].numel == c[i].numel && c[j].mclass == c[i].mclass &&
               !strcmp(c[j].op, c[i].op))
            j++;
        int n = j - i;
        (*groups)[ng] = c[i];
        (*groups)[ng].us = n % 2 ? c[i + n / 2].us : 0.5 * (c[i + n / 2 - 1].us + c[i + n / 2].us);
        (*counts)[ng++] = n;
        i = j;
    }
    nccl_spans_free(&S);
    free(c);
    return ng;
}

int wl_kineto_pointwise(const wl_kineto *t, wl_pointwise **out)
{
    pw_call *g;
    int *cnt, n = group_calls(t, 0, &g, &cnt);
    *out = sim_xcalloc((size_t)n + 1, sizeof **out, "the trace's pointwise kernels");
    for (int i = 0; i < n; i++)
        (*out)[i] = (wl_pointwise){g[i].op, g[i].numel, g[i].bytes, g[i].us, cnt[i]};
    free(g);
    free(cnt);
    return n;
}

int wl_kineto_classed(const wl_kineto *t, wl_classed **out)
{
    pw_call *g;
    int *cnt, n = group_calls(t, 1, &g, &cnt);
    *out = sim_xcalloc((size_t)n + 1, sizeof **out, "the trace's classed kernels");
    for (int i = 0; i < n; i++)
        (*out)[i] = (wl_classed){g[i].op, g[i].mclass, g[i].bytes, g[i].us, cnt[i]};
    free(g);
    free(cnt);
    return n;
}

static int cmp_gemm_call(const void *a, const void *b)
{
    const wl_gemm_shape *x = a, *y = b;
#define C(f)                                                                                                           \
    if (x->f != y->f)                                                                                                  \
        return x->f < y->f ? -1 : 1;
    C(dtype) C(batch) C(m) C(n) C(k)
#undef C
    return (x->median_us > y->median_us) - (x->median_us < y->median_us);
}

int wl_kineto_gemms(const wl_kineto *t, wl_gemm_shape **out)
{
    /* one entry per op call (op_index): the sum of the GEMM kernels it launched */
    int max_op = -1, nc = 0, ng = 0;
    for (int i = 0; i < t->n; i++)
        if (t->k[i].op_index > max_op)
            max_op = t->k[i].op_index;
    int *slot = sim_xcalloc((size_t)max_op + 2, sizeof *slot, "the trace's GEMM calls");
    wl_gemm_shape *c = sim_xcalloc((size_t)t->n + 1, sizeof *c, "the trace's GEMM calls");
    *out = sim_xcalloc((size_t)t->n + 1, sizeof **out, "the trace's GEMM calls");
    for (int i = 0; i <= max_op; i++)
        slot[i] = -1;
    for (int i = 0; i < t->n; i++) {
        const wl_kernel *x = &t->k[i];
        if (x->cls != WL_K_GEMM || !x->has_shape)
            continue;
        int *sl = &slot[x->op_index];
        if (*sl < 0) {
            *sl = nc++;
            c[*sl] = (wl_gemm_shape){x->op, x->m, x->n, x->k, x->batch, x->dtype, 0, 1};
        }
        c[*sl].median_us += x->dur_us;
    }
    free(slot);
    qsort(c, (size_t)nc, sizeof *c, cmp_gemm_call);
    for (int i = 0; i < nc;) {
        int j = i;
        while (j < nc && c[j].m == c[i].m && c[j].n == c[i].n && c[j].k == c[i].k && c[j].batch == c[i].batch &&
               c[j].dtype == c[i].dtype)
            j++;
        int n = j - i;
        (*out)[ng] = c[i];
        (*out)[ng].median_us = n % 2 ? c[i + n / 2].median_us : 0.5 * (c[i + n / 2 - 1].median_us + c[i + n / 2].median_us);
        (*out)[ng++].calls = n;
        i = j;
    }
    free(c);
    return ng;
}

int wl_kineto_nsteps(const wl_kineto *t) { return t->nsteps; }
double wl_kineto_step_ts_us(const wl_kineto *t, int i) { return i >= 0 && i < t->nsteps ? t->step_ts[i] : 0; }
int wl_kineto_ncopies(const wl_kineto *t) { return t->ncopies; }
const wl_kernel *wl_kineto_copy(const wl_kineto *t, int i) { return i >= 0 && i < t->ncopies ? &t->copies[i] : NULL; }
int wl_kineto_nwaits(const wl_kineto *t) { return t->nwaits; }
const wl_stream_wait *wl_kineto_wait(const wl_kineto *t, int i) { return i >= 0 && i < t->nwaits ? &t->waits[i] : NULL; }
int wl_kineto_nhost(const wl_kineto *t) { return t->nhost; }
const wl_host_call *wl_kineto_host(const wl_kineto *t, int i) { return i >= 0 && i < t->nhost ? &t->host[i] : NULL; }
double wl_kineto_step_us(const wl_kineto *t, int i) { return i >= 0 && i < t->nsteps ? t->step_us[i] : 0; }
const char *wl_kineto_step_name(const wl_kineto *t, int i) { return i >= 0 && i < t->nsteps ? t->step_name[i] : ""; }

int wl_kineto_count(const wl_kineto *t, wl_kclass cls, int *with_shape)
{
    int n = 0, s = 0;
    for (int i = 0; i < t->n; i++)
        if (t->k[i].cls == cls) {
            n++;
            s += t->k[i].has_shape;
        }
    if (with_shape)
        *with_shape = s;
    return n;
}

const char *wl_kineto_catalog_gpu(const char *device)
{
    static const struct {
        const char *pattern, *model;
    } M[] = {
        {"A100-SXM4-80GB", "A100-SXM-80GB"}, {"A100-SXM-80GB", "A100-SXM-80GB"},
        {"A100-SXM4-40GB", "A100-SXM-40GB"}, {"A100-PG509-200", "A100-SXM-40GB"},
        {"A100-PCIE-40GB", "A100-PCIe-40GB"}, {"A100 80GB PCIe", "A100-PCIe-80GB"},
        {"V100-SXM2-32GB", "V100-SXM2-32GB"}, {"V100-SXM2-16GB", "V100-SXM2-16GB"},
        {"H100 80GB HBM3", "H100-SXM"},       {"H100 PCIe", "H100-PCIe"},
        {"H200", "H200"},                     {"GB200", "GB200"},
        {"B200", "B200"},                     {"L40S", "L40S"},
        {"RTX A6000", "RTX-A6000"},           {"A40", "A40"},
        {"RTX 3090 Ti", "RTX3090Ti"},         {"RTX 3090", "RTX3090"},
        {"RTX 4090", "RTX4090"},
    };
    if (!device)
        return NULL;
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        if (strstr(device, M[i].pattern))
            return M[i].model;
    return NULL;
}

/* wl_kineto_groups: kernels of one key together, in the order each
 * key was first seen (sorting, not a scan per key: a trace may hold a
 * million kernels of distinct sizes). */
typedef struct kref {
    const wl_kernel *k;
    int i; /* index in the trace: the tie-break, so each group starts at its first kernel */
} kref;

#define KEY(f)                                                                                                         \
    if (p->f != q->f)                                                                                                  \
        return p->f < q->f ? -1 : 1;

static int cmp_nccl_key(const void *x, const void *y)
{
    const kref *a = x, *b = y;
    const wl_kernel *p = a->k, *q = b->k;
    KEY(coll) KEY(bytes) KEY(group_size)
    int c = strcmp(p->name, q->name);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

static int cmp_gemm_key(const void *x, const void *y)
{
    const kref *a = x, *b = y;
    const wl_kernel *p = a->k, *q = b->k;
    KEY(m) KEY(n) KEY(k) KEY(batch) KEY(dtype)
    return (a->i > b->i) - (a->i < b->i);
}
#undef KEY

typedef struct kgroup {
    int first, start, n; /* first kernel's index; the group is r[start .. start + n) */
} kgroup;

static int cmp_group_first(const void *x, const void *y)
{
    const kgroup *a = x, *b = y;
    return (a->first > b->first) - (a->first < b->first);
}

/* The kernels of class cls (with a shape for GEMMs) grouped by cmp's key,
 * groups in first-seen order; returns the number of groups.  *r and *g are
 * malloc'd. */
static int group_kernels(const wl_kineto *t, wl_kclass cls, int (*cmp)(const void *, const void *), kref **r,
                         kgroup **g)
{
    int n = 0, ng = 0;
    *r = sim_xcalloc((size_t)t->n, sizeof **r, "the trace summary");
    *g = sim_xcalloc((size_t)t->n, sizeof **g, "the trace summary");
    for (int i = 0; i < t->n; i++)
        if (t->k[i].cls == cls && (cls != WL_K_GEMM || t->k[i].has_shape))
            (*r)[n++] = (kref){&t->k[i], i};
    qsort(*r, (size_t)n, sizeof **r, cmp);
    for (int i = 0; i < n; i++) {
        kref key = {(*r)[i].k, -1}; /* the same key sorts before every member of its group */
        if (i == 0 || cmp(&(kref){(*r)[i - 1].k, -1}, &key) != 0)
            (*g)[ng++] = (kgroup){(*r)[i].i, i, 0};
        (*g)[ng - 1].n++;
    }
    qsort(*g, (size_t)ng, sizeof **g, cmp_group_first);
    return ng;
}

/* The durations of a group, sorted, into d. */
static void group_durations(const kref *r, const kgroup *g, double *d)
{
    for (int j = 0; j < g->n; j++)
        d[j] = r[g->start + j].k->dur_us;
    qsort(d, (size_t)g->n, sizeof *d, cmp_dbl);
}

int wl_kineto_groups(const wl_kineto *t, wl_kclass cls, wl_kgroup **out)
{
    kref *r;
    kgroup *g;
    int ng = group_kernels(t, cls, cls == WL_K_NCCL ? cmp_nccl_key : cmp_gemm_key, &r, &g);
    double *d = sim_xcalloc((size_t)t->n + 1, sizeof *d, "the trace summary");
    *out = sim_xcalloc((size_t)ng + 1, sizeof **out, "the trace summary");
    for (int i = 0; i < ng; i++) {
        int c = g[i].n;
        group_durations(r, &g[i], d);
        (*out)[i] = (wl_kgroup){&t->k[g[i].first], c, d[0], d[c / 2], d[c - 1]};
    }
    free(r), free(g), free(d);
    return ng;
}

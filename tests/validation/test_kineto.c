/* Kineto reader: kernel counts, GEMM shapes, NCCL sizes and group sizes,
 * step times on known traces (expected numbers counted independently from
 * the JSON), and clear errors naming the file for a missing, corrupt,
 * truncated, non-JSON or non-trace file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sim/schedule.h"
#include "workloads/kineto.h"

static int fails;

static void expect_int(long long got, long long want, const char *what)
{
    printf("%-60s got %lld want %lld\n", what, got, want);
    if (got != want) {
        printf("FAIL: %s\n", what);
        fails++;
    }
}

static char *path_of(const char *rel)
{
    const char *src = getenv("SRC");
    static char buf[8][1024];
    static int i;
    char *b = buf[i++ % 8];
    snprintf(b, 1024, "%s/validation/data/kineto-traces/%s", src ? src : ".", rel);
    return b;
}

static void expect_error(const char *path, const char *what, const char *must_contain)
{
    sim_err err = {{0}};
    wl_kineto *k = wl_kineto_load(path, &err);
    printf("%-60s -> %s\n", what, k ? "(loaded)" : err.msg);
    if (k || !strstr(err.msg, path) || (must_contain && !strstr(err.msg, must_contain))) {
        printf("FAIL: %s: expected an error naming %s%s%s\n", what, path, must_contain ? " and saying " : "",
               must_contain ? must_contain : "");
        fails++;
    }
    wl_kineto_free(k);
}

int main(void)
{
    sim_err err = {{0}};
    /* nccl_data: rank 0 of 2, ResNet-50 DDP, NCCL args in the kernels */
    wl_kineto *k = wl_kineto_load(path_of("nccl_parser_config/nccl_data.json.gz"), &err);
    if (!k) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    int shaped;
    expect_int(wl_kineto_nkernels(k), 2700, "nccl_data: kernels");
    expect_int(wl_kineto_count(k, WL_K_NCCL, NULL), 21, "nccl_data: NCCL kernels");
    expect_int(wl_kineto_count(k, WL_K_GEMM, &shaped), 243, "nccl_data: GEMM kernels");
    expect_int(shaped, 0, "nccl_data: GEMM kernels with shapes (no shapes recorded)");
    expect_int(wl_kineto_nsteps(k), 3, "nccl_data: ProfilerStep# steps");
    /* ns timestamps: the A100's back-to-back gap, 1.15 us (median of the compute stream) */
    expect_int((long long)(wl_kineto_busy_gap_us(k, wl_kineto_main_stream(k)) * 1000 + 0.5), 1152,
               "nccl_data: back-to-back gap (ns)");
    expect_int((long long)(wl_kineto_step_us(k, 0) + 0.5), 222442, "nccl_data: ProfilerStep#4 (us)");
    expect_int(wl_kineto_rank(k), 0, "nccl_data: rank");
    expect_int(wl_kineto_world(k), 2, "nccl_data: world size");
    expect_int(strcmp(wl_kineto_catalog_gpu(wl_kineto_device(k)), "A100-SXM-40GB"), 0,
               "nccl_data: A100-PG509-200 maps to A100-SXM-40GB");
    int ar = 0, bc = 0, g2 = 0, ring_ll = 0, big = 0, small = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++) {
        const wl_kernel *x = wl_kineto_kernel(k, i);
        if (x->cls != WL_K_NCCL)
            continue;
        ar += x->coll == SIM_COLL_ALLREDUCE;
        bc += x->coll == SIM_COLL_BROADCAST;
        g2 += x->group_size == 2;
        ring_ll += x->algo == SIM_ALGO_RING && !strcmp(x->proto, "LL");
        big += x->coll == SIM_COLL_ALLREDUCE && x->bytes == 2049000LL * 4; /* fp32 elements */
        small += x->coll == SIM_COLL_BROADCAST && x->bytes == 53LL * 8;    /* 53 int64 */
    }
    expect_int(ar, 15, "nccl_data: all-reduce kernels");
    expect_int(bc, 6, "nccl_data: broadcast kernels");
    expect_int(g2, 21, "nccl_data: group size 2 on every NCCL kernel");
    expect_int(ring_ll, 21, "nccl_data: ring/LL from the kernel names");
    expect_int(big, 3, "nccl_data: all-reduces of 2,049,000 floats = 8,196,000 B");
    expect_int(small, 3, "nccl_data: broadcasts of 53 longs = 424 B");
    wl_kineto_free(k);

    /* AlexNet on one A100: 79 kernels, 8 GEMMs, no NCCL, no steps */
    k = wl_kineto_load(path_of("critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"), &err);
    if (!k) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    expect_int(wl_kineto_nkernels(k), 79, "alexnet: kernels");
    expect_int(wl_kineto_count(k, WL_K_GEMM, NULL), 8, "alexnet: GEMM kernels (convolutions excluded)");
    expect_int(wl_kineto_count(k, WL_K_NCCL, NULL), 0, "alexnet: NCCL kernels");
    wl_kineto_free(k);

    /* control: shapes recorded; GEMM kernels linked to aten::mm/addmm/bmm */
    k = wl_kineto_load(path_of("trace_diff/control/control.json.gz"), &err);
    if (!k) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    expect_int(wl_kineto_nkernels(k), 8568, "control: kernels");
    /* 1,752, not 1,794: 42 fbgemm_gpu:: kernels (permute_2D_lengths,
     * permute_indices_weights, _offsets_range: no matrix product) only
     * said "gemm" in their namespace */
    expect_int(wl_kineto_count(k, WL_K_GEMM, &shaped), 1752, "control: GEMM kernels");
    expect_int(shaped, 1752, "control: GEMM kernels with shapes");
    expect_int(wl_kineto_count(k, WL_K_NCCL, NULL), 60, "control: NCCL kernels");
    expect_int(wl_kineto_nsteps(k), 6, "control: steps");
    int found = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++) {
        const wl_kernel *x = wl_kineto_kernel(k, i);
        /* aten::addmm(bias[512], [1024,1705], [1705,512]) on TF32 tensor cores */
        found += x->has_shape && x->m == 1024 && x->k == 1705 && x->n == 512 && x->batch == 1 &&
                 x->dtype == SIM_DTYPE_TF32 && !strcmp(x->op, "aten::addmm");
    }
    if (!found) {
        printf("FAIL: control: no TF32 addmm 1024x512x1705\n");
        fails++;
    }
    /* element-wise bytes from the aten op: add(self, other, alpha) reads two
     * [98304, 647] floats and writes one; mul.out(self, 0-dim scalar, out)
     * reads one [1024, 1705] float and writes the out tensor */
    int add3 = 0, mul2 = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++) {
        const wl_kernel *x = wl_kineto_kernel(k, i);
        add3 += x->elem_bytes == 3LL * 98304 * 647 * 4 && x->op && !strcmp(x->op, "aten::add");
        mul2 += x->elem_bytes == 2LL * 1024 * 1705 * 4 && x->op && !strcmp(x->op, "aten::mul") &&
                x->elem_numel == 1024 * 1705;
    }
    expect_int(add3 > 0, 1, "control: aten::add [98304,647] x2 -> 763,232,256 B");
    expect_int(mul2 > 0, 1, "control: aten::mul(out=) [1024,1705] -> read 1 + write 1");
    expect_int(wl_kineto_main_stream(k), 7, "control: compute stream");
    expect_int((long long)(wl_kineto_busy_gap_us(k, 7) * 100 + 0.5), 200, "control: back-to-back gap 2.00 us");
    wl_pointwise *pw;
    int npw = wl_kineto_pointwise(k, &pw);
    expect_int(npw > 100, 1, "control: over 100 pointwise (op, size) groups on the compute stream");
    int sorted = 1;
    for (int i = 1; i < npw; i++)
        sorted &= pw[i].bytes >= pw[i - 1].bytes && pw[i].median_us > 0;
    expect_int(sorted, 1, "control: pointwise groups sorted by bytes, positive medians");
    free(pw);
    wl_gemm_shape *gs;
    int ngs = wl_kineto_gemms(k, &gs), calls = 0;
    for (int i = 0; i < ngs; i++)
        calls += gs[i].calls;
    expect_int(ngs > 100 && calls > ngs, 1, "control: GEMM shapes with several calls each");
    free(gs);
    wl_kineto_free(k);

    /* rank0 of 16: NCCL kernels carry no args; sizes come from the c10d ops'
     * Input Dims: _reduce_scatter_base_(out [8192, 384], in [65536, 384]) fp32 */
    k = wl_kineto_load(path_of("negative_queue_length_values_check/rank0.json.gz"), &err);
    if (!k) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    expect_int(wl_kineto_count(k, WL_K_NCCL, NULL), 80, "rank0: NCCL kernels");
    int rs = 0, rs_group = 0, a2a_world = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++) {
        const wl_kernel *x = wl_kineto_kernel(k, i);
        if (x->cls != WL_K_NCCL || !x->nccl_from_op)
            continue;
        if (x->coll == SIM_COLL_REDUCESCATTER && x->bytes == 65536LL * 384 * 4) {
            rs++;
            rs_group += x->group_size == 8 && !x->group_is_world;
        }
        a2a_world += x->coll == SIM_COLL_ALLTOALL && x->group_is_world && x->group_size == 16;
    }
    expect_int(rs, 5, "rank0: reduce-scatters of 65536x384 floats from the c10d op");
    expect_int(rs_group, 5, "rank0: their group size 8 from input/output");
    expect_int(a2a_world, 45, "rank0: all-to-alls with a size (float, int, long), group = world 16 (flagged)");
    wl_kineto_free(k);

    /* gpt-125m on one H100 (PyTorch 2.11, h100-micro/): 195 of the 770
     * kernels (cuBLASLt's nvjet GEMMs, cuDNN attention) were launched through
     * the driver API (cuda_driver cuLaunchKernelEx), the rest through the
     * runtime; every one is linked to its launch and host op */
    k = wl_kineto_load(path_of("../h100-micro/trace_gpt-125m.json.gz"), &err);
    if (!k) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    expect_int(strcmp(wl_kineto_catalog_gpu(wl_kineto_device(k)), "H100-SXM"), 0,
               "gpt-125m: NVIDIA H100 80GB HBM3 maps to H100-SXM");
    expect_int(wl_kineto_nkernels(k), 770, "gpt-125m: kernels");
    int linked = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++)
        linked += wl_kineto_kernel(k, i)->launch_ts_us >= 0;
    expect_int(linked, 770, "gpt-125m: kernels linked to their launch (runtime or driver)");
    expect_int(wl_kineto_count(k, WL_K_GEMM, &shaped), 147, "gpt-125m: GEMM kernels (nvjet_sm90_*)");
    expect_int(shaped, 147, "gpt-125m: GEMM kernels with shapes");
    int qkv = 0;
    for (int i = 0; i < wl_kineto_nkernels(k); i++) {
        const wl_kernel *x = wl_kineto_kernel(k, i);
        /* aten::addmm(bias[2304], [32768,768], [768,2304]) in bf16: the QKV projection */
        qkv += x->has_shape && x->m == 32768 && x->n == 2304 && x->k == 768 && x->dtype == SIM_DTYPE_BF16 &&
               !strcmp(x->op, "aten::addmm");
    }
    expect_int(qkv, 12, "gpt-125m: bf16 addmm 32768x2304x768, one per layer");
    /* fill_ of the [32768, 50368] fp32 logits' gradient (6.6 GB) ran as 4
     * launches of ~500 us: one call of the summed 1,998.6 us, not four of
     * the whole op's bytes */
    npw = wl_kineto_pointwise(k, &pw);
    int fill = 0;
    for (int i = 0; i < npw; i++)
        if (pw[i].bytes == 32768LL * 50368 * 4 && !strcmp(pw[i].op, "aten::fill_")) {
            fill++;
            expect_int(pw[i].calls, 1, "gpt-125m: the logits' fill_ is one call");
            expect_int((long long)(pw[i].median_us * 10 + 0.5), 19986, "gpt-125m: its 4 launches summed (0.1 us)");
        }
    expect_int(fill, 1, "gpt-125m: one fill_ group of 6,601,834,496 B");
    free(pw);
    wl_kineto_free(k);

    /* bad inputs */
    char tmpl[] = "/tmp/trainsim-kineto-XXXXXX";
    char *dir = mkdtemp(tmpl);
    char p[4][512];
    snprintf(p[0], sizeof p[0], "%s/garbage.json.gz", dir);
    snprintf(p[1], sizeof p[1], "%s/truncated.json.gz", dir);
    snprintf(p[2], sizeof p[2], "%s/text.json", dir);
    snprintf(p[3], sizeof p[3], "%s/notrace.json", dir);
    FILE *f = fopen(p[0], "wb");
    static const char garbage[] = "\x1f\x8b\x08\x00garbage-not-deflate-data";
    fwrite(garbage, 1, sizeof garbage - 1, f);
    fclose(f);
    /* the first 4 KB of a real gzip trace */
    gzFile z = gzopen(p[1], "wb");
    char chunk[200000];
    memset(chunk, ' ', sizeof chunk);
    memcpy(chunk, "{\"traceEvents\": [", 17);
    gzwrite(z, chunk, sizeof chunk);
    gzclose(z);
    f = fopen(p[1], "rb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    f = fopen(p[1], "wb");
    fwrite(buf, 1, n > 64 ? n / 2 : n, f);
    fclose(f);
    f = fopen(p[2], "w");
    fputs("this is not json\n", f);
    fclose(f);
    f = fopen(p[3], "w");
    fputs("{\"schemaVersion\": 1}\n", f);
    fclose(f);
    expect_error("/nonexistent/trace.json.gz", "missing file", NULL);
    expect_error(p[0], "corrupt gzip", "gzip");
    expect_error(p[1], "truncated gzip", NULL);
    expect_error(p[2], "not JSON", "JSON");
    expect_error(p[3], "JSON without traceEvents", "traceEvents");
    for (int i = 0; i < 4; i++)
        remove(p[i]);
    remove(dir);
    printf("%s\n", fails ? "FAILED" : "kineto reader ok");
    return fails != 0;
}

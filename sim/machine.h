/* machine.h — what the engine needs to know about the hardware.
 *
 * The platform module (platforms/) turns a cluster description or a
 * hand-written SimGrid XML file into a sim_machine: the SimGrid platform
 * text, the SimGrid host that plays each GPU rank, the node each rank sits in
 * (for hierarchical collectives) and the specification of each GPU model (for
 * the kernel cost model).  The engine reads nothing else about hardware, so
 * the simulator does not depend on how platforms are described. */
#ifndef SIM_MACHINE_H
#define SIM_MACHINE_H

#include <stddef.h>

#include "error.h"

/* The most GPUs a platform or a schedule may have (a stated limit, checked
 * by every reader before memory is spent). */
#define SIM_MAX_GPUS 65536
#define SIM_NVL_MAX 64 /* GPUs of one node an NVLink mesh's rings are packed over */

/* Element types.  TF32 means fp32 storage with TF32 tensor-core matmuls (the
 * PyTorch default on Ampere that the Oases benchmarks ran with). */
typedef enum sim_dtype {
    SIM_DTYPE_FP32,
    SIM_DTYPE_TF32,
    SIM_DTYPE_FP16,
    SIM_DTYPE_BF16,
    SIM_DTYPE_FP8,
    SIM_DTYPE_COUNT
} sim_dtype;

const char *sim_dtype_name(sim_dtype d);
int sim_dtype_parse(const char *s, sim_dtype *out); /* 0 ok, -1 unknown */
int sim_dtype_bytes(sim_dtype d);                   /* storage bytes per element */

/* What sets an element-wise kernel's rate besides its bytes: streaming
 * kernels (contiguous, vectorised) run at the memory curve; the other
 * classes, measured below it, at a fraction of it (sim_gpu.mem_class,
 * catalogue key "memory_class"; costmodel.c).  Each is named for its
 * mechanism (docs/validation.md, "Issue 13, element-wise classes"):
 *   cast_up  a kernel that widens a 16-bit operand as it loads it (a bf16 ->
 *            fp32 copy, an fp32 + bf16 add): PyTorch's dynamic-casting path,
 *            an unrolled, unvectorised loop (aten/src/ATen/native/cuda/
 *            CUDALoops.cuh gpu_kernel_impl: launch_unrolled_kernel with
 *            LoadWithCast / StoreWithCast);
 *   norm     a row normalisation, one CTA per row (LayerNorm / RMSNorm
 *            forward, LayerNorm's input gradient);
 *   reduce   a reduction across the tokens into one value per column (bias
 *            gradients, a norm's weight and bias gradients);
 *   strided  a copy through index arithmetic into a non-contiguous layout
 *            (torch.cat / stack into interleaved slices, permuted copies). */
typedef enum sim_mem_class {
    SIM_MEMC_STREAM,
    SIM_MEMC_CAST_UP,
    SIM_MEMC_NORM,
    SIM_MEMC_REDUCE,
    SIM_MEMC_STRIDED,
    SIM_MEMC_COUNT
} sim_mem_class;
/* "stream", "cast_up", "norm", "reduce", "strided"; "?" out of range. */
const char *sim_mem_class_name(int c);
/* The class of a name, or -1. */
int sim_mem_class_parse(const char *name);

/* Efficiency as a function of log10(work): work is FLOPs for GEMM and
 * attention, bytes for memory-bound kernels.  Linear interpolation, clamped
 * at both ends. */
#define SIM_CURVE_MAX 16
typedef struct sim_curve {
    int n;
    double log10_work[SIM_CURVE_MAX];
    double efficiency[SIM_CURVE_MAX];
} sim_curve;

/* One fused-attention kernel family (FlashAttention; sim/costmodel.c).  A
 * kernel runs its FLOPs at eff(s) of the fp16/bf16 peak, s the K/V length a
 * query row runs through (s/2 when causal, then x causal[dir]).  Its head
 * dimension d runs as the next of head_dims (the kernel's instantiations:
 * the padded work is computed), and below 128 each FLOP takes
 * (1 - score_share) + score_share x 128/d of its time at 128: the share of
 * a hd-128 kernel's time spent per score (exponentials, row statistics),
 * whose count per FLOP grows as 1/d.  On a card whose tensor cores do more
 * per SM and clock than the measured one's while its per-score units do not
 * (Blackwell against Hopper: 2x the MMA rate, the same 16 exponentials per
 * SM and clock and shared-memory bandwidth), that work costs score_scale
 * times as much against the FLOPs: the card runs head dimension d as the
 * measured one ran d / score_scale. */
#define SIM_FLASH_MAX_HD 8
typedef struct sim_flash {
    sim_curve eff[2];        /* [0] forward, [1] backward: fraction of peak vs log10 s */
    double causal[2];        /* a causal kernel's factor on the curve at s/2 (0 = 1) */
    double score_share[2];   /* 0: head-dim blind */
    double score_scale[2];   /* the per-score work's cost against the measured card's (1, or 0 = 1) */
    int n_head_dims;         /* 0: every head dim runs as itself */
    int head_dims[SIM_FLASH_MAX_HD];
} sim_flash;

/* NCCL protocols.  NCCL prices every (algorithm, protocol) pair as a base
 * latency + a latency per step + bytes / (bus bandwidth x protocol
 * efficiency) and runs the cheapest (NCCL src/graph/tuning.cc: baseLat,
 * hwLat, the LL/LL128 bandwidth caps).  trainsim keeps that structure with
 * per-GPU-model numbers fitted from measured curves (validation/fit_nccl.c);
 * the bandwidth itself comes from the platform's links, under contention. */
typedef enum sim_proto { SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE, SIM_PROTO_COUNT } sim_proto;
const char *sim_proto_name(sim_proto p);

typedef struct sim_collparams {
    double base_s[SIM_PROTO_COUNT]; /* once per collective call (launch, set-up, final sync) */
    double step_s[SIM_PROTO_COUNT]; /* per ring/tree step, on top of the route latency */
    double eff[SIM_PROTO_COUNT];    /* payload rate as a fraction of the path bandwidth (LL sends a
                                       flag with every 4 bytes, LL128 one per 120 of 128 bytes) */
    double net_eff[SIM_PROTO_COUNT]; /* the same on a hop through NICs: NCCL's priors (the catalogue's
                                        defaults), as eff is fitted on one node's own links */
    double nvls_base_s;             /* NVLink SHARP all-reduce (the NVSwitch reduces): once per call */
    double nvls_eff;                /* its payload rate as a fraction of the NVLink port; 0 = no NVLS */
} sim_collparams;

typedef struct sim_gpu {
    char model[48];
    double peak_flops[SIM_DTYPE_COUNT]; /* dense tensor/vector peak, FLOP/s */
    double mem_bw;                      /* device memory bandwidth, B/s */
    double mem_capacity;                /* bytes */
    double launch_s;                    /* fixed cost per kernel: the gap a busy stream leaves between kernels
                                           (or, fitted on framework profiles, the whole dispatch cost) */
    double kernel_min_s;                /* shortest kernel on the device (0 = none): a kernel takes at least
                                           this, its work overlapping it (sim/costmodel.c) */
    sim_curve gemm_eff;                 /* GEMM: fraction of peak vs log10 FLOPs (fp16/bf16 GEMMs; */
    double gemm_scale[SIM_DTYPE_COUNT]; /* a dtype's GEMMs reach gemm_eff x this (0 or 1: as the curve) */
    int power_n;                        /* the power limit: tensor-core kernels run at power_rate[i] of
                                           the curves' (cool-state) rate when the GPU's tensor load is */
    double power_load[8], power_rate[8]; /* power_load[i] (sim/engine.c; 0 points: no limit modelled) */
    double gemm_unaligned;              /* a 16-bit GEMM with an edge not a multiple of 8 runs at this
                                           fraction of an aligned one (1: no separate path) */
    sim_curve attn_eff;                 /* attention core: fraction of peak vs log10 FLOPs */
    sim_curve mem_eff;                  /* memory-bound kernels: fraction of mem_bw vs log10 bytes */
    double mem_class[SIM_MEMC_COUNT];   /* an element-wise class's rate as a fraction of mem_eff's (0 or 1:
                                           as streaming; [SIM_MEMC_STREAM] unused) */
    double opt_rate;                    /* the optimizer step's kernels' rate as a fraction of mem_eff's (0 or
                                           1: as streaming): multi-tensor kernels over the parameters,
                                           gradients and moments (sim/costmodel.c) */
    sim_flash flash;                    /* fused attention: the GPU's best kernel (Hopper: cuDNN / FA3) */
    sim_flash flash2;                   /* FlashAttention-2 itself (elsewhere the same as flash) */
    int flash_attn;                     /* FlashAttention-2 runs on it (sm80+: Ampere, Ada, Hopper) */
    sim_collparams coll;                /* NCCL protocol latencies and efficiencies */
    double overlap_compute;             /* compute slowdown (>= 1) while a collective or p2p of the
                                           same GPU is in flight (shared SMs and memory bandwidth) */
    double overlap_comm;                /* communication slowdown (>= 1) while a kernel runs beside it */
    double power_w;                     /* board power, for energy what-ifs */
    double price_usd;                   /* street price, for cost what-ifs; 0 = unknown */
} sim_gpu;

/* A host-memory link through which transfers are staged (NCCL's SHM
 * transport, and the network without GPUDirect RDMA), and the cache that
 * absorbs them: while the staged bytes in flight through this memory fit in
 * cache_bytes (the last-level cache's I/O share, Intel DDIO), they never
 * reach DRAM; beyond, the fraction that spills loads the link, whose
 * platform bandwidth is the DRAM's capacity for staged bytes (the engine
 * raises the link's capacity by 1 / spilled fraction: sim/staging.c). */
typedef struct sim_stage {
    char link[48];        /* SimGrid link name */
    double cache_bytes;
} sim_stage;

/* Links of the platform whose bandwidth is divided by factor: every link
 * whose SimGrid name matches the shell pattern (fnmatch: "n3-nic0",
 * "n*-nic0", "n2-gpu*-pcie"). */
typedef struct sim_degrade {
    char pattern[64];
    double factor;
} sim_degrade;

/* The network between the servers, as the platform was built: tools that
 * reason about contention (the planner's fold and replica reductions) ask
 * this, never the platform's text. */
typedef enum sim_fabric {
    SIM_FABRIC_UNKNOWN, /* a hand-written platform: anything may share links */
    SIM_FABRIC_SWITCH,  /* one non-blocking switch between all servers */
    SIM_FABRIC_FAT_TREE /* leaves and a spine, possibly oversubscribed */
} sim_fabric;

typedef struct sim_machine {
    char name[128];
    int ngpus;
    char *platform_xml;   /* SimGrid DTD 4.1 platform text */
    char **host;          /* [ngpus] SimGrid host name of each rank */
    int *node;            /* [ngpus] node (server) index of each rank */
    int *nic;             /* [ngpus] the node's NIC (0, 1, ...) that carries the rank's inter-node
                             traffic; GPUs of a node on k NICs give its collectives k channels */
    int *nvswitch;        /* [ngpus] the NVSwitch fabric the rank is on (GPUs with the same value
                             reach each other through one NVSwitch: NVLS), -1 = none */
    unsigned char *nic_direct; /* [ngpus] 1: the rank reaches its NIC through its own PCIe link and the
                             NIC's alone (GPUDirect RDMA under one PCIe switch), so no other GPU's
                             traffic to its NIC meets its own there unless they share the NIC;
                             0: through host memory or links not known (a hand-written platform) */
    int *gpu_model;       /* [ngpus] index into gpus[] */
    int nmodels;
    sim_gpu *gpus;        /* [nmodels] */
    int nnodes;
    sim_fabric fabric;    /* set by platforms/ where the platform is built or loaded */
    int nodes_per_leaf;   /* fat tree built by platforms/: server k hangs off leaf k / nodes_per_leaf
                             (0: not known) */
    int fabric_blocking;  /* 1: oversubscribed, traffic of different servers may meet in the fabric */
    /* How NCCL's topology search lays rings out inside a node (NULL / 0 /
     * none when the platform does not say: rank order, one direction, no
     * cache).  Filled by platforms/ from the node's links. */
    int *ring_pos;        /* [ngpus] or NULL: position of the rank in its node's ring order
                             (NVLink-bridged pairs next to each other) */
    int ring_bidir;       /* 1: a ring inside one node runs as two channels in opposite
                             directions, half the bytes each (bridged pairs: each GPU then
                             receives half through its bridge, half through PCIe) */
    /* NVLink meshes (a node whose NVLinks alone close a cycle through its
     * GPUs: DGX-1): each GPU's links in its node, from which a collective
     * inside a node packs its rings as NCCL's search does (sim_nvl_rings:
     * on a whole DGX-1 three rings, both ways, over all six links a GPU) */
    int nvl_width;        /* GPUs per node of the widest node */
    int *nvl_local;       /* [ngpus] or NULL: the rank's index in its node, -1 off a mesh */
    unsigned char *nvl_links; /* [ngpus * nvl_width] or NULL: NVLinks from the rank to each index of its node */
    int nstage;
    sim_stage *stage;     /* [nstage] host-memory links of host-staged transfers with a cache */
    /* What-if perturbations of one machine (`trainsim run --slow / --degrade`):
     * they belong to this machine, not to its GPU model or cluster file. */
    double *compute_slow; /* [ngpus] or NULL: rank r's kernels take compute_slow[r] times as long
                             (a straggler: thermal throttling, a weaker card, a noisy neighbour) */
    int ndegrade;
    sim_degrade *degrade; /* [ndegrade] links whose bandwidth is divided by a factor */
} sim_machine;

/* The rings NCCL's search packs into an NVLink mesh of n GPUs, links[a * n
 * + b] NVLinks between a and b (symmetric; consumed): the widest cycle
 * through all n first (the next GPU by the most links left, then by index:
 * search.cc's ncclTopoSearchNextGpuSort), repeated while each of its pairs
 * has a link left, then the widest over what is left, at most max_rings;
 * each ring takes one link of each pair it crosses, as it runs both ways.
 * Writes ring k at orders[k * n] (starting at GPU 0); returns the rings
 * found (0: no NVLink cycle through all n within the search budget). */
int sim_nvl_rings(int n, int *links, int max_rings, int *orders);

/* Neutral collective parameters: no protocol latency, full efficiency (what
 * analytical oracles expect); no overlap interference. */
void sim_gpu_neutral_comm(sim_gpu *g);

/* Allocates an empty machine for ngpus ranks and nmodels GPU models (each
 * GPU model neutral as above until filled in). */
sim_machine *sim_machine_new(int ngpus, int nmodels);
void sim_machine_free(sim_machine *m);
const sim_gpu *sim_machine_gpu(const sim_machine *m, int rank);
/* A machine of n ranks on the same platform: its rank i is m's rank
 * ranks[i] (same host, node and GPU model).  NULL when out of memory. */
sim_machine *sim_machine_subset(const sim_machine *m, const int *ranks, int n);

/* Keeps the first n GPUs of m (run, plan and compare --gpus N: the one rule
 * for running on part of a cluster); the platform keeps its other hosts,
 * unused.  n <= 0 or n == ngpus: all.  -1 with err when n > ngpus. */
int sim_machine_first(sim_machine *m, int n, sim_err *err);

/* Perturbations, from the command line's specifications:
 *   slow:    "RANKS:FACTOR", RANKS a comma list of ranks and ranges
 *            ("3", "0-3,8"), FACTOR >= 1 how many times longer their
 *            kernels take; given twice for a rank, the factors multiply;
 *   degrade: "LINK:FACTOR", LINK a link name or shell pattern of the
 *            platform's SimGrid links, FACTOR >= 1 how many times less
 *            bandwidth they have (the engine checks that the pattern names
 *            a link when it loads the platform).
 * 0, or -1 with err naming the specification and what was expected. */
int sim_machine_slow(sim_machine *m, const char *spec, sim_err *err);
/* Marks mask[r] for the ranks of the list in spec[0..len) ("3", "0-3,8"),
 * each in [0, n); -1 with err naming opt and spec otherwise. */
int sim_ranks_parse(const char *opt, const char *spec, size_t len, int n, unsigned char *mask, sim_err *err);
int sim_machine_degrade(sim_machine *m, const char *spec, sim_err *err);

#endif

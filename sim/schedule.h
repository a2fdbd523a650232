/* schedule.h — the schedule: the one contract between workloads, the
 * simulator, the planner and trace replay (design.md).
 *
 * A schedule is, per GPU rank, a set of named streams; each stream is an
 * ordered list of operations; an operation may also wait on operations of
 * other streams (like CUDA events).  Operations are compute kernels,
 * collectives on communicators, point-to-point sends and receives, and memory
 * effects.  Each carries tags (layer, micro-batch, sub-batch, phase).
 *
 * Shape of the data, chosen for size: a 1,024-GPU GPT-3 iteration has tens
 * of millions of operations but only a few hundred distinct kernel shapes.
 * So an operation is a small fixed record (sim_op) that points at a
 * deduplicated payload (sim_payload: what is computed or moved and how big),
 * and the rank and stream of an operation are implied by the stream it is
 * appended to.  Operation ids are dense, in insertion order.
 *
 * JSON form (trainsim-schedule v1): see sim_sched_write_json(); reading and
 * writing round-trip exactly, with ids renumbered in (rank, stream, position)
 * order on output. */
#ifndef SIM_SCHEDULE_H
#define SIM_SCHEDULE_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "machine.h"

/* Limits of a schedule, stated here and checked by the JSON reader before
 * memory is spent (each refusal names the number and the limit). */
#define SIM_MAX_OPS 2147483647u               /* operations, and dependencies, in one schedule */
#define SIM_MAX_DEPS 65535                    /* dependencies of one operation (sim_op.ndeps) */
#define SIM_NAME_MAX 1024                     /* bytes of an operation, stream or communicator name */
#define SIM_MAX_DIM ((int64_t)1 << 31)        /* a GEMM or attention dimension */
#define SIM_MAX_BYTES ((int64_t)1 << 50)      /* bytes moved, touched or allocated by one operation (1 PiB) */
#define SIM_MAX_SECONDS 1e6                   /* a fixed kernel's duration: SimGrid's clock is a double */
#define SIM_SCHED_READ_MAX ((size_t)8 << 30)  /* bytes of schedule JSON read (8 GiB) */

typedef enum sim_op_kind {
    SIM_OP_COMPUTE,
    SIM_OP_COLLECTIVE,
    SIM_OP_SEND,
    SIM_OP_RECV,
    SIM_OP_MEMORY,
    SIM_OP_KIND_COUNT
} sim_op_kind;

typedef enum sim_kernel {
    SIM_KERNEL_GEMM,        /* batch x (m x k) * (k x n) */
    SIM_KERNEL_ATTENTION,   /* unfused attention core, forward: batch=b, m=heads, n=seq, k=head_dim */
    SIM_KERNEL_ELEMENTWISE, /* memory bound: bytes read + written */
    SIM_KERNEL_OPTIMIZER,   /* optimizer step over m parameters, bytes = state bytes touched */
    SIM_KERNEL_FIXED,       /* a measured duration (trace replay) */
    /* fused attention (FlashAttention-2/3): batch=b, m=query heads, n=seq,
     * k=head_dim, tag=1 causal (masked blocks skipped: half the work),
     * algo = the implementation (sim_attn_impl); bytes = the kernel's HBM
     * traffic (Q, K and V at the K/V heads, O, the softmax statistics).
     * The backward recomputes the scores inside the kernel: 2.5x the
     * forward's FLOPs (costmodel.c). */
    SIM_KERNEL_FLASH_FWD,
    SIM_KERNEL_FLASH_BWD,
    /* the stream waits `seconds` without using the GPU (trace replay: the
     * host had not launched the next kernel yet); idle time, not compute */
    SIM_KERNEL_DELAY,
    /* the unfused attention core's backward, the same fields as
     * SIM_KERNEL_ATTENTION's forward: twice its GEMMs, its own passes over
     * the scores (costmodel.c) */
    SIM_KERNEL_ATTENTION_BWD,
    SIM_KERNEL_COUNT
} sim_kernel;

/* Which fused-attention kernel a stack runs (costmodel.c prices each):
 * the GPU's best (FA2 on Ampere/Ada, FA3 or cuDNN on Hopper),
 * FlashAttention-2 itself, FlashAttention-1, or the 2022 Triton kernel
 * (flash_attn_triton, MPT's attn_impl=triton). */
typedef enum sim_attn_impl {
    SIM_ATTN_BEST,
    SIM_ATTN_FA2,
    SIM_ATTN_FA1,
    SIM_ATTN_TRITON,
    SIM_ATTN_IMPL_COUNT
} sim_attn_impl;
/* "flash", "flash2", "flash1", "flash-triton"; "?" when out of range. */
const char *sim_attn_impl_name(int impl);

typedef enum sim_coll {
    SIM_COLL_ALLREDUCE,
    SIM_COLL_ALLGATHER,     /* bytes = size of the gathered output */
    SIM_COLL_REDUCESCATTER, /* bytes = size of the full input */
    SIM_COLL_ALLTOALL,      /* bytes = what each member sends in all */
    SIM_COLL_BROADCAST,
    SIM_COLL_REDUCE,
    SIM_COLL_ALLTOALLV,     /* uneven: member i sends sizes[j] bytes to member j
                               (payload m = offset into the schedule's size pool,
                               n = count = communicator size, bytes = their sum);
                               members may send different amounts (MoE dispatch) */
    SIM_COLL_COUNT
} sim_coll;

typedef enum sim_algo {
    SIM_ALGO_AUTO,
    SIM_ALGO_RING,
    SIM_ALGO_TREE,
    SIM_ALGO_HIERARCHICAL,
    SIM_ALGO_NVLS,          /* NVLink SHARP: the NVSwitch reduces (all-reduce within an NVSwitch node) */
    SIM_ALGO_COUNT
} sim_algo;

typedef enum sim_mem_kind {
    SIM_MEM_WEIGHTS,
    SIM_MEM_GRADIENTS,
    SIM_MEM_OPTIMIZER,
    SIM_MEM_ACTIVATIONS,
    SIM_MEM_BUFFERS,
    SIM_MEM_CONTEXT,
    SIM_MEM_KIND_COUNT
} sim_mem_kind;

typedef enum sim_phase {
    SIM_PHASE_NONE,
    SIM_PHASE_FORWARD,
    SIM_PHASE_BACKWARD,
    SIM_PHASE_RECOMPUTE,
    SIM_PHASE_OPTIMIZER,
    SIM_PHASE_COUNT
} sim_phase;

/* What an operation does, deduplicated.  Fields unused by a kind are zero. */
typedef struct sim_payload {
    uint8_t kind;   /* sim_op_kind */
    uint8_t sub;    /* sim_kernel, sim_coll or sim_mem_kind */
    uint8_t dtype;  /* sim_dtype (compute) */
    uint8_t algo;   /* sim_algo (collective), sim_attn_impl (fused attention) */
    int32_t name;   /* string id (sim_sched_str), -1 = none */
    int32_t root;   /* broadcast/reduce root, as an index into the communicator */
    int32_t tag;    /* send/recv matching tag */
    int64_t m, n, k, batch;
    int64_t bytes;  /* elementwise/optimizer bytes, message bytes, memory delta (signed) */
    double seconds; /* SIM_KERNEL_FIXED, SIM_KERNEL_DELAY */
    /* elementwise: the part of bytes that runs at class c's rate
     * (sim_mem_class; class_bytes[c - 1] for c >= 1), the rest streams.  A
     * payload is often several kernels (a layer's backward passes), so it
     * may hold several classes; their sum is at most bytes. */
    int64_t class_bytes[SIM_MEMC_COUNT - 1];
} sim_payload;

typedef struct sim_op {
    uint32_t payload;   /* index into payloads */
    uint32_t stream;    /* index into streams (gives the rank) */
    int32_t arg;        /* collective: communicator; send/recv: peer rank; else -1 */
    int32_t layer;      /* -1 = none */
    int32_t micro;      /* micro-batch, -1 = none */
    uint32_t seq;       /* position in its stream: op is done iff the stream got past it */
    uint32_t dep_first; /* first index into deps */
    uint16_t ndeps;
    uint8_t phase;      /* sim_phase */
    int8_t subbatch;    /* -1 = none */
} sim_op;

/* What a stream carries, set by the generator that makes it: tools that
 * must tell the synchronisation from the pipeline (the planner's fast
 * fidelity) read the role, never the stream's name.  JSON "role" (absent =
 * none). */
typedef enum sim_role {
    SIM_ROLE_NONE,    /* unknown (imported traces, hand-written schedules) */
    SIM_ROLE_COMPUTE, /* kernels and memory effects */
    SIM_ROLE_TP,      /* tensor-parallel collectives and ring exchanges */
    SIM_ROLE_CP,      /* context-parallel ring exchanges */
    SIM_ROLE_DP,      /* data-parallel gradient synchronisation (and ZeRO / FSDP gathers) */
    SIM_ROLE_PP,      /* pipeline sends and receives */
    SIM_ROLE_EP,      /* expert-parallel all-to-alls */
    SIM_ROLE_COUNT
} sim_role;

typedef struct sim_stream {
    int rank;
    int32_t name;  /* string id */
    uint8_t role;  /* sim_role */
    uint32_t nops, cap;
    uint32_t *ops; /* op ids in program order */
} sim_stream;

typedef struct sim_comm {
    int32_t name;  /* string id, -1 = none */
    int nranks;
    int *ranks;    /* member ranks; member index = position */
    /* A communicator cut from a larger ring (sim/fold.c) stands for
     * whole_ranks GPUs over whole_nodes servers: its collectives are sized
     * and priced for that ring (collectives.c).  0 = it is the whole ring.
     * JSON "whole": {"ranks", "nodes"} (absent = 0). */
    int whole_ranks, whole_nodes;
} sim_comm;

/* Which coordinate of the parallel layout each rank holds, for tools that
 * need the replicas and stages (0 = not given: imported schedules).  The
 * generators lay ranks out in Megatron order, tensor-parallel fastest:
 * rank = ((pp_index·dp + dp_index)·cp + cp_index)·tp + tp_index, and an
 * expert-parallel group is ep consecutive dp indices; so the degrees say it
 * all.  JSON "layout": {"tp", "cp", "dp", "pp", "ep"}. */
typedef struct sim_layout {
    int tp, cp, dp, pp, ep;
} sim_layout;

typedef struct sim_meta {
    char name[256];
    double samples_per_iteration;
    double tokens_per_iteration;
    double model_flops_per_iteration; /* FLOPs of the model (no recompute), all GPUs */
    int dtype;                        /* sim_dtype whose peak MFU is measured against */
} sim_meta;

typedef struct sim_schedule sim_schedule;
struct sim_schedule {
    int nranks;
    sim_meta meta;
    sim_layout layout;
    uint32_t nops, ops_cap;
    sim_op *ops;
    uint32_t ndeps, deps_cap;
    uint32_t *deps;        /* op ids */
    uint32_t npayloads, payloads_cap;
    sim_payload *payloads;
    uint32_t nstreams, streams_cap;
    sim_stream *streams;
    int ncomms, comms_cap;
    sim_comm *comms;
    uint32_t nsizes, sizes_cap;
    int64_t *sizes;        /* pool of per-destination byte counts (all-to-allv) */
    /* private: string table and payload hash */
    struct sim_strtab *strings;
    uint32_t *payload_hash;
    uint32_t payload_hash_cap;
};

sim_schedule *sim_sched_new(int nranks);
void sim_sched_free(sim_schedule *s);

/* Interns a string; returns its id.  sim_sched_strname() returns it back. */
int32_t sim_sched_str(sim_schedule *s, const char *str);
const char *sim_sched_strname(const sim_schedule *s, int32_t id);
uint32_t sim_sched_nstrings(const sim_schedule *s); /* ids are 0 .. this - 1 */

/* Returns the stream of that rank and name, creating it on first use. */
int sim_sched_stream(sim_schedule *s, int rank, const char *name);
/* The same, and its role (set when it is created or had none). */
int sim_sched_stream_role(sim_schedule *s, int rank, const char *name, sim_role role);
/* "compute", "tp", "cp", "dp", "pp", "ep"; "" for none, "?" out of range. */
const char *sim_role_name(int role);
/* Adds a communicator over ranks[0..n) and returns its id. */
int sim_sched_comm(sim_schedule *s, const char *name, const int *ranks, int n);

/* Interns a payload (deduplicated by value) and returns its index. */
uint32_t sim_sched_payload(sim_schedule *s, const sim_payload *p);

/* Tags for a new operation. */
typedef struct sim_tags {
    int32_t layer, micro;
    int8_t subbatch;
    uint8_t phase;
} sim_tags;
#define SIM_NO_TAGS ((sim_tags){-1, -1, -1, SIM_PHASE_NONE})

/* Appends an operation to a stream and returns its id.  deps (may be NULL)
 * are ids of earlier operations this one waits for, besides its
 * predecessor on the same stream. */
uint32_t sim_sched_add(sim_schedule *s, int stream, uint32_t payload, int32_t arg, sim_tags tags,
                       const uint32_t *deps, int ndeps);
/* Adds a dependency to an existing, last-added operation (op must be the most
 * recently added one, so dependencies stay contiguous). */
void sim_sched_add_dep(sim_schedule *s, uint32_t op, uint32_t dep);
/* How the host orders a rank's operations across its streams, in the order
 * they were added (sim_sched_chain_host). */
typedef enum sim_host_sync {
    /* CUDA_LAUNCH_BLOCKING=1: each operation waits for the rank's previous
     * one, whatever its stream, so nothing of a rank runs beside anything
     * else of it.  Receives stay unchained (a consumer waits for its receive
     * already; a chained receive could wait on a peer that waits on this
     * rank). */
    SIM_HOST_LAUNCH_BLOCKING,
    /* A device synchronisation after every point-to-point exchange (Megatron-
     * LM's p2p_communication.py before Megatron-Core: batch_isend_irecv, the
     * requests waited, then torch.cuda.synchronize()): the sends and
     * receives of one exchange start after the rank's earlier work on every
     * stream, and everything after them waits for all of them. */
    SIM_HOST_P2P_SYNC
} sim_host_sync;
/* Adds those dependencies (memory effects stay as they are).  0, or -1 out
 * of memory. */
int sim_sched_chain_host(sim_schedule *s, sim_host_sync how);

/* Convenience builders.  name may be NULL. */
uint32_t sim_sched_gemm(sim_schedule *s, int stream, const char *name, int64_t m, int64_t n, int64_t k,
                        int64_t batch, sim_dtype dt, sim_tags t, const uint32_t *deps, int ndeps);
uint32_t sim_sched_kernel(sim_schedule *s, int stream, const char *name, sim_kernel kind, int64_t m,
                          int64_t n, int64_t k, int64_t batch, int64_t bytes, sim_dtype dt, sim_tags t,
                          const uint32_t *deps, int ndeps);
uint32_t sim_sched_collective(sim_schedule *s, int stream, const char *name, sim_coll c, int comm,
                              int64_t bytes, int root, sim_tags t, const uint32_t *deps, int ndeps);
/* Uneven all-to-all: this member sends send_bytes[j] to member j of the
 * communicator (send_bytes has one entry per member; its own entry is
 * ignored: data that stays local does not move). */
uint32_t sim_sched_alltoallv(sim_schedule *s, int stream, const char *name, int comm, const int64_t *send_bytes,
                             sim_tags t, const uint32_t *deps, int ndeps);
/* Its payload alone, for n members (added with sim_sched_add on a
 * communicator of n members). */
uint32_t sim_sched_alltoallv_payload(sim_schedule *s, const char *name, const int64_t *send_bytes, int n);
/* Payload `payload` of src, interned in dst (its name and all-to-allv sizes
 * carried over): for schedules cut from another. */
uint32_t sim_sched_copy_payload(sim_schedule *dst, const sim_schedule *src, uint32_t payload);
/* Appends all of src to dst, src's rank r played by dst's rank map[r] (map
 * distinct, in [0, dst->nranks)): its streams and communicators named
 * prefix + their names, its operations in order with their tags,
 * dependencies and payloads, peers and communicator members mapped.  Src's
 * op i becomes dst's op (dst->nops before the call) + i.  For several jobs
 * on one cluster (workloads/jobs.c).  0, or -1 with err. */
int sim_sched_place(sim_schedule *dst, const sim_schedule *src, const int *map, const char *prefix, sim_err *err);
/* Appends n counts to the size pool and returns their offset. */
uint32_t sim_sched_sizes(sim_schedule *s, const int64_t *v, int n);
/* The per-destination sizes of an all-to-allv payload. */
static inline const int64_t *sim_sched_sizes_of(const sim_schedule *s, const sim_payload *p)
{
    return &s->sizes[p->m];
}
uint32_t sim_sched_send(sim_schedule *s, int stream, const char *name, int peer, int64_t bytes, int tag,
                        sim_tags t, const uint32_t *deps, int ndeps);
uint32_t sim_sched_recv(sim_schedule *s, int stream, const char *name, int peer, int64_t bytes, int tag,
                        sim_tags t, const uint32_t *deps, int ndeps);

static inline int sim_sched_rank_of(const sim_schedule *s, uint32_t op)
{
    return s->streams[s->ops[op].stream].rank;
}
static inline const sim_payload *sim_sched_payload_of(const sim_schedule *s, uint32_t op)
{
    return &s->payloads[s->ops[op].payload];
}

/* Names of enum values as used in JSON and traces. */
const char *sim_op_kind_name(int k);
const char *sim_kernel_name(int k);
const char *sim_coll_name(int c);
const char *sim_algo_name(int a);
const char *sim_mem_kind_name(int k);
const char *sim_phase_name(int p);
/* A short human label for an operation ("qkv", "allreduce", "send"…). */
const char *sim_sched_op_label(const sim_schedule *s, uint32_t op);
/* Describes an operation for error messages: "rank 3 stream \"tp\" op #12 (allreduce, layer 2, micro 0)". */
void sim_sched_describe(const sim_schedule *s, uint32_t op, char *buf, size_t len);

/* Checks the schedule before simulation: ranks and peers in range, every
 * communicator member issues the same collectives in the same order (type,
 * bytes, root), every send has its receive, and no cycle among stream order,
 * dependencies and the synchronisation that collectives and messages imply.
 * Returns 0, or -1 with a message naming the operations at fault. */
int sim_sched_check(const sim_schedule *s, sim_err *err);

/* JSON (cJSON).  source names the input in error messages. */
sim_schedule *sim_sched_read_json(const char *text, const char *source, sim_err *err);
sim_schedule *sim_sched_load(const char *path, sim_err *err);
/* Returns a malloc'd JSON text (compact when pretty=0). */
char *sim_sched_to_json(const sim_schedule *s, int pretty);
int sim_sched_save(const sim_schedule *s, const char *path, sim_err *err);

#endif

/* catalog.h — the hardware catalogue shared by the platform builders
 * (internal to platforms/; the public entry points are in platform.h).
 *
 * The catalogue is data, not code: platforms/catalog/{gpus,nics,
 * interconnects}.json, compiled into the binary.  These functions parse it
 * on each call (a few kilobytes; platforms are built once per run), so the
 * module keeps no global state. */
#ifndef PLAT_CATALOG_H
#define PLAT_CATALOG_H

#include <stdio.h>

#include "sim/error.h"
#include "sim/machine.h"

/* What the platform builder needs beyond sim_gpu: how the card attaches. */
typedef enum plat_nvlink_kind {
    PLAT_NVLINK_NONE,
    PLAT_NVLINK_BRIDGE,   /* 2-way bridge per pair (RTX 3090, PCIe A100/H100) */
    PLAT_NVLINK_MESH,     /* direct GPU-GPU links (V100 SXM2 cube mesh) */
    PLAT_NVLINK_NVSWITCH  /* every GPU to an NVSwitch (A100/H100 SXM) */
} plat_nvlink_kind;

typedef struct plat_gpu_info {
    int pcie_gen;
    int p2p;                  /* PCIe peer-to-peer (and GPUDirect RDMA) works */
    plat_nvlink_kind nvlink;
    double nvlink_GBps;       /* per direction: per pair (bridge, mesh) or per GPU (nvswitch) */
} plat_gpu_info;

typedef struct plat_nic {
    char model[32];
    double bw;                /* bytes/s per direction */
    double latency_s;
} plat_nic;

/* GPU lookup with attachment details; info may be NULL. */
int plat_gpu_lookup_info(const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err);
/* A copy (free with cJSON_Delete) of the entry of array ("gpus", "nics")
 * in the embedded catalogue file (GPUS_JSON, NICS_JSON) whose model or an
 * alias is name; NULL with err listing the known models. */
struct cJSON;
struct cJSON *plat_catalog_entry(const char *file, const char *array, const char *name, sim_err *err);
#define PLAT_GPUS_JSON "platforms/catalog/gpus.json"
#define PLAT_NICS_JSON "platforms/catalog/nics.json"
/* The same in the text of a gpus.json (tests, fuzzing). */
int plat_gpu_from_text(const char *text, const char *model, sim_gpu *out, plat_gpu_info *info, sim_err *err);
/* A GPU given as a JSON object with the catalogue's fields (a cluster's
 * inline "gpu"): the same checks and defaults as a built-in entry; errors
 * start with `where` ("mycluster.json: node.gpu"). */
int plat_gpu_from_json(const struct cJSON *entry, const char *where, sim_gpu *out, plat_gpu_info *info, sim_err *err);
/* NIC lookup by model or alias (case-insensitive, '-' and '_' ignored). */
int plat_nic_lookup(const char *model, plat_nic *out, sim_err *err);
/* Effective per-direction PCIe bandwidth in bytes/s of a gen/width slot,
 * or -1 with a message when the generation is not in the catalogue. */
double plat_pcie_bw(int gen, int width, sim_err *err);
/* Catalogue defaults (interconnects.json), in SI units. */
typedef struct plat_defaults {
    double pcie_lat, nvlink_lat, socket_lat, fabric_lat; /* seconds */
    double socket_bw, staging_bw;                        /* bytes/s */
    double staging_read_eff;  /* host-staged reads: fraction of the GPU's PCIe slot bandwidth */
} plat_defaults;
void plat_catalog_defaults(plat_defaults *d);

/* Case-insensitive comparison that also ignores '-', '_' and spaces, so
 * "rtx-3090", "RTX3090" and "rtx3090" are one name. */
int plat_name_eq(const char *a, const char *b);

#endif

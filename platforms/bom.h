/* bom.h — what a cluster is made of, what it costs and what it draws: the
 * bill of materials of a cluster JSON (GPUs, one server per node, NICs,
 * switch ports, NVLink bridges) priced and powered from the catalogue
 * (gpus.json, purchase.json), each figure with its source and date, and a
 * user's costs file laid over it.  The purchasing comparison
 * (planner/purchase.c) turns it into money and energy with planner/tco.c. */
#ifndef PLAT_BOM_H
#define PLAT_BOM_H

#include "sim/error.h"
#include "sim/machine.h"

typedef enum plat_item_kind {
    PLAT_ITEM_GPU,
    PLAT_ITEM_SERVER,        /* one per node, without GPUs and NICs */
    PLAT_ITEM_NIC,
    PLAT_ITEM_SWITCH_PORT,   /* a fabric switch port, its share of the switch and a cable */
    PLAT_ITEM_NVLINK_BRIDGE, /* one per bridged GPU pair */
    PLAT_ITEM_KINDS
} plat_item_kind;
/* "gpu", "server", "nic", "switch_port", "nvlink_bridge": the names a costs file uses */
const char *plat_item_kind_name(plat_item_kind k);

#define PLAT_SOURCE_MAX 400
typedef struct plat_item {
    plat_item_kind kind;
    char model[48];      /* GPU or NIC model, server class; "" for bridges */
    double count;        /* in the whole cluster */
    double price_usd;    /* per unit; < 0 when nothing gives one */
    double power_w;      /* per unit, drawn all the time; GPUs: board power (plat_gpu_power) */
    char price_source[PLAT_SOURCE_MAX], power_source[PLAT_SOURCE_MAX], date[32];
} plat_item;

/* A GPU's draw in each state the simulation tells apart (sim_rank_result:
 * compute, communication only, idle). */
typedef struct plat_gpu_power {
    double busy_w, comm_w, idle_w;
    char busy_source[PLAT_SOURCE_MAX], comm_source[PLAT_SOURCE_MAX], idle_source[PLAT_SOURCE_MAX];
} plat_gpu_power;

#define PLAT_BOM_MAX 24
typedef struct plat_bom {
    int nodes, gpus_per_node, ngpus;
    char gpu_model[48];
    char server_class[32];
    int nitems;
    plat_item item[PLAT_BOM_MAX];
    plat_gpu_power gpu_power;
    double electricity_usd_kwh;
    char electricity_source[PLAT_SOURCE_MAX];
    double amortization_years;
    char amortization_source[PLAT_SOURCE_MAX];
    char note[256];      /* what is not counted, "" when everything is */
} plat_bom;

/* The bill of a cluster JSON that plat_from_json accepts (source names it
 * in errors). */
int plat_bom_from_json(const char *cluster_json, const char *source, plat_bom *out, sim_err *err);
/* A machine without a cluster JSON (a hand-written SimGrid platform): its
 * GPUs only, with a note saying so. */
int plat_bom_from_machine(const sim_machine *m, plat_bom *out, sim_err *err);
/* Lays a costs file over the bill:
 *   {"source": "...", "date": "...",
 *    "prices_USD": {"gpu:RTX4090": 1799, "server:pcie-2socket": 14000, "nic:100GbE": 700,
 *                   "switch_port:100GbE": 450, "nvlink_bridge": 90},
 *    "power_W": {"gpu_busy:RTX4090": 420, "gpu_comm:RTX4090": 180, "gpu_idle:RTX4090": 60,
 *                "server:pcie-2socket": 650, "nic:100GbE": 15, "switch_port:100GbE": 8},
 *    "electricity_USD_per_kWh": 0.12, "amortization_years": 4}
 * Entries for parts the cluster does not use are allowed (one file serves
 * several clusters) but must name known models and classes; a negative or
 * non-numeric figure is an error naming the file and key.  b may be NULL to
 * only check the file. */
int plat_bom_apply_costs(plat_bom *b, const char *text, const char *source, sim_err *err);

#endif

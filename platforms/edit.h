/* edit.h — a cluster with one field changed, for what-if comparisons
 * (`trainsim compare --vary nic=25GbE,100GbE` and cluster specs such as
 * "rtx4090-4x8+nodes=8"): the edit is made on the cluster JSON, which then
 * goes through the platform builder like any other, so an edit that makes
 * the cluster impossible (NVLink pairs on a GPU without NVLink) is refused
 * there with the field named. */
#ifndef PLAT_EDIT_H
#define PLAT_EDIT_H

#include "sim/error.h"

/* "nodes, gpu, nic, nvlink": the fields plat_cluster_edit knows. */
const char *plat_cluster_edit_fields(void);
/* A copy of the cluster JSON text with field set to value (malloc'd), its
 * name suffixed "+field=value":
 *   nodes=N          the node count;
 *   gpu=MODEL        every GPU (a catalogue model or alias);
 *   nic=MODEL        every NIC of a node (one is added to a cluster without);
 *   nvlink=none|bridge|nvswitch   no NVLink, bridges on pairs (0,1), (2,3) ...,
 *                    or every GPU on an NVSwitch.
 * NULL with err naming source, field and value when the field is unknown or
 * the value is not one it takes. */
char *plat_cluster_edit(const char *json, const char *source, const char *field, const char *value, sim_err *err);

#endif

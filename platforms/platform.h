/* platform.h — cluster descriptions turned into SimGrid platforms.
 *
 * A platform is named by a built-in cluster name ("oases-3090", see
 * platforms/clusters/), a path to a cluster JSON file, or a path to a
 * hand-written SimGrid XML file (*.xml).  The result is a sim_machine: the
 * SimGrid XML text plus, per GPU rank, its host, node and GPU model (from the
 * hardware catalogue, platforms/catalog/). */
#ifndef PLAT_PLATFORM_H
#define PLAT_PLATFORM_H

#include <stdio.h>

#include "sim/error.h"
#include <cjson/cJSON.h>

#include "sim/machine.h"

/* Loads a platform by built-in name, cluster JSON path or SimGrid XML path. */
sim_machine *plat_load(const char *spec, sim_err *err);
/* The cluster JSON text (malloc'd) of a built-in name or a .json path, and
 * the name errors should give it in source[n] (the embedded path or the
 * file); NULL with err for an unknown name, an unreadable file or an .xml
 * platform. */
char *plat_cluster_text(const char *spec, char *source, size_t n, sim_err *err);
/* Builds a machine from cluster JSON text; source names it in errors. */
sim_machine *plat_from_json(const char *text, const char *source, sim_err *err);
/* Reads a hand-written SimGrid XML platform.  GPU hosts are the hosts with a
 * property trainsim:gpu (a catalogue model name); optional trainsim:rank and
 * trainsim:node properties give their rank and node. */
sim_machine *plat_from_xml(const char *path, sim_err *err);
/* The same from the text of one (source names it in errors): the file is
 * checked (xmlplat.c) but not loaded into SimGrid, which plat_from_xml does
 * in a forked child (sim_platform_probe). */
sim_machine *plat_from_xml_text(const char *text, const char *source, sim_err *err);

/* Looks up a GPU model in the catalogue (case-insensitive, also accepts
 * aliases such as "3090" for "RTX3090").  Returns 0, or -1 with a message
 * listing the known models. */
int plat_gpu_lookup(const char *model, sim_gpu *out, sim_err *err);

/* The built-in clusters and the catalogue's GPUs and NICs as a document
 * ({"clusters": [...], "gpus": [...], "nics": [...]}, for `trainsim list`;
 * the caller prints and frees it). */
cJSON *plat_catalogue_doc(void);

#endif

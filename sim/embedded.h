/* embedded.h — data files compiled into the binary (sim/embed.cmake).
 * Keys are paths relative to the source tree, e.g.
 * "platforms/clusters/oases-3090.json". */
#ifndef SIM_EMBEDDED_H
#define SIM_EMBEDDED_H

/* The text of an embedded file, or NULL. */
const char *sim_embedded(const char *path);
/* The i-th embedded path, NULL past the end (for listings). */
const char *sim_embedded_path(int i);

#endif

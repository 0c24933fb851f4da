/* SPDX-License-Identifier: BSD-2-Clause */
/* Where each tensor lives (placement.c): MXNet KVStore's rules, and the layer -> connection
 * map of mercury mode. */
#ifndef MERCURY_PS_PLACEMENT_H
#define MERCURY_PS_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

struct ps_slice {
	int layer;
	int part; /* the tensor (a whole layer, or one partition of it) the slice belongs to */
	int server;
	uint64_t off; /* first parameter of the slice within the (shrunk) tensor */
	uint64_t len; /* parameters */
};

struct ps_placement {
	int nlayers;
	int nslices;
	int nparts;		 /* tensors placed: layers, or their partitions */
	struct ps_slice *slices; /* ordered by layer, then offset */
	int *first;		 /* per layer: index of its first slice */
	int *count;		 /* per layer: number of slices */
	uint64_t *len;		 /* per layer: shrunk parameter count */
};

/*
 * Places every layer: a layer whose original parameter count exceeds `bound` (or every layer
 * when split_all) is sliced evenly over all servers, the first (len % n) slices one larger;
 * a smaller one lives whole on server (layer * 9973) % n, MXNet's default key hash, or with
 * `balanced` on the server that holds the fewest parameters so far (forward order; the
 * hash can leave one server most of a model whose small layers alternate in size).
 * orig decides, len (the shrunk counts, each >= 1) is what gets sliced.
 * part != 0 (partition mode, shrunk parameters): a layer longer than part is first cut into
 * partitions of part, each a tensor of its own with key layer + i, placed by the same rule,
 * so consecutive partitions land on different servers (ByteScheduler's keys `name_i`).
 */
int ps_place(const uint64_t *orig, const uint64_t *len, int nlayers, int nservers, uint64_t bound,
	     bool split_all, bool balanced, uint64_t part, struct ps_placement *pl);
void ps_placement_free(struct ps_placement *pl);

/*
 * Layer -> connection of a worker-server pair (mercury mode). The daemon's policy puts the
 * layers of the current iteration into `groups` priority groups, group(l) = l * groups / L
 * (daemon/policy.c: bands - 2 groups for 4..16 bands). A socket whose bytes change band
 * reorders its own packets (spurious retransmits), so no connection ever spans two groups:
 * each group gets its share of the `conns` sockets and splits its layers evenly over them.
 * Fills conn_of[0..nlayers) and returns the number of connections used.
 */
int ps_map_connections(int nlayers, int conns, int groups, int *conn_of);

#endif

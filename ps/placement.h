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

/* The layer a pull of `layer` is tagged as under --pulls-below: the first layer of the next
 * group (include/mercury_groups.h), so that every layer of one group moves to one band below
 * its pushes and a socket's bytes stay in one band; a layer of the last group stays. */
int ps_layer_one_group_below(int layer, int nlayers, unsigned groups);

/*
 * The switch queue of each of nbands bands when the fabric's ports have `queues`
 * strict-priority queues and the bands are spread evenly over them, band b in queue
 * b * queues / nbands (the emulated cluster's DSCP map, cluster/lib.sh cl_queue_of). Fills
 * queue_of_band[0..nbands).
 */
void ps_band_queues_even(int nbands, int queues, int *queue_of_band);

/*
 * Layer -> connection of a worker-server pair (mercury mode) when the fabric's switch ports
 * serve the DSCP of each band from a strict-priority queue (queue_of_band[b], nbands bands):
 * every socket's bytes land in one switch queue. A socket whose bytes sit in two queues of a
 * strict-priority port has its later packets overtake its earlier ones there (reordering,
 * spurious retransmissions, a socket starved in a lower queue), even where each of its bytes
 * keeps one band at the host. The layers of one queue (a class) share that queue's
 * connections, in order; every class gets at least one, so max(conns, classes) connections
 * are spread over the classes, the most urgent first (the first conns % classes one more),
 * and inside a class as ps_map_connections does over its groups (no connection spans two
 * groups where the class has a connection per group or more). A layer's band is its group
 * in the current iteration (include/mercury_groups.h, no weight shift): the host's band of
 * every byte is unchanged, only which socket carries which layer. Fills conn_of[0..nlayers),
 * and queue_of_conn[k] (when not NULL, PS_MAX_CONNS entries) with each connection's queue;
 * returns the number of connections used, or -EINVAL (nlayers < 1, nbands 2..16, a queue
 * below 0) or -E2BIG (more classes than PS_MAX_CONNS).
 */
int ps_map_connections_queues(int nlayers, int conns, int nbands, const int *queue_of_band,
			      int *conn_of, int *queue_of_conn);

#endif

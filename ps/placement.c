/* Tensor placement on servers, as MXNet's KVStore does it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ps.h"
#include "mercury_groups.h"

int ps_place(const uint64_t *orig, const uint64_t *len, int nlayers, int nservers, uint64_t bound,
	     bool split_all, struct ps_placement *pl)
{
	int n = 0;

	memset(pl, 0, sizeof(*pl));
	if (nlayers <= 0 || nservers <= 0)
		return -EINVAL;
	pl->nlayers = nlayers;
	pl->first = calloc(nlayers, sizeof(int));
	pl->count = calloc(nlayers, sizeof(int));
	pl->len = calloc(nlayers, sizeof(uint64_t));
	pl->slices = calloc((size_t)nlayers * nservers, sizeof(struct ps_slice));
	if (!pl->first || !pl->count || !pl->len || !pl->slices) {
		ps_placement_free(pl);
		return -ENOMEM;
	}
	for (int l = 0; l < nlayers; l++) {
		bool split = split_all || orig[l] > bound;
		int parts = split ? nservers : 1;
		uint64_t off = 0;

		if (split && len[l] < (uint64_t)nservers)
			parts = (int)len[l]; /* a tiny shrunk tensor: one parameter per slice */
		pl->first[l] = n;
		pl->count[l] = parts;
		pl->len[l] = len[l];
		for (int s = 0; s < parts; s++) {
			struct ps_slice *sl = &pl->slices[n++];
			uint64_t each = len[l] / parts + ((uint64_t)s < len[l] % parts ? 1 : 0);

			sl->layer = l;
			sl->server = split ? s : (int)(((uint64_t)l * 9973u) % (uint64_t)nservers);
			sl->off = off;
			sl->len = each;
			off += each;
		}
	}
	pl->nslices = n;
	return 0;
}

void ps_placement_free(struct ps_placement *pl)
{
	free(pl->slices);
	free(pl->first);
	free(pl->count);
	free(pl->len);
	memset(pl, 0, sizeof(*pl));
}

int ps_map_connections(int nlayers, int conns, int groups, int *conn_of)
{
	int used = 0;

	if (groups > nlayers)
		groups = nlayers;
	if (groups < 1)
		groups = 1;
	if (conns <= groups) {
		/* Fewer sockets than groups: whole groups share one, never split one. */
		for (int l = 0; l < nlayers; l++) {
			int g = (int)mercury_layer_group((uint32_t)l, (uint32_t)nlayers,
							 (unsigned)groups);
			conn_of[l] = (int)((int64_t)g * conns / groups);
		}
		return conns;
	}
	for (int g = 0, first = 0; g < groups; g++) {
		int lo = -1, count = 0;
		int share = conns / groups + (g < conns % groups ? 1 : 0);

		for (int l = 0; l < nlayers; l++)
			if ((int)mercury_layer_group((uint32_t)l, (uint32_t)nlayers,
						     (unsigned)groups) == g) {
				if (lo < 0)
					lo = l;
				count++;
			}
		if (share > count)
			share = count;
		for (int i = 0; i < count; i++)
			conn_of[lo + i] = first + (int)((int64_t)i * share / count);
		first += share;
		used = first;
	}
	return used;
}

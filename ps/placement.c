// SPDX-License-Identifier: BSD-2-Clause
/* Tensor placement on servers: MXNet KVStore's rules, or whole tensors balanced by bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "ps.h"
#include "mercury_abi.h"
#include "mercury_groups.h"

/* The server holding the fewest (original) parameters so far; the lowest index on a tie. */
static int least_loaded(const uint64_t *load, int nservers)
{
	int best = 0;

	for (int s = 1; s < nservers; s++)
		if (load[s] < load[best])
			best = s;
	return best;
}

/* Places one tensor as slices from pl->nslices on. An unsliced one goes to the server its key
 * hashes to, or (load != NULL, balanced) to the least loaded one; load counts what each
 * server holds. */
static void place_tensor(struct ps_placement *pl, int layer, int part, uint64_t key, uint64_t orig,
			 uint64_t off, uint64_t len, int nservers, uint64_t bound, bool split_all,
			 uint64_t *load)
{
	bool split = split_all || orig > bound;
	int pieces = split ? nservers : 1;
	int whole_on = 0;

	if (!split)
		whole_on =
		    load ? least_loaded(load, nservers) : (int)((key * 9973u) % (uint64_t)nservers);

	if (split && len < (uint64_t)nservers)
		pieces = (int)len; /* a tiny shrunk tensor: one parameter per slice */
	for (int s = 0; s < pieces; s++) {
		struct ps_slice *sl = &pl->slices[pl->nslices++];
		uint64_t each = len / pieces + ((uint64_t)s < len % pieces ? 1 : 0);

		sl->layer = layer;
		sl->part = part;
		sl->server = split ? s : whole_on;
		sl->off = off;
		sl->len = each;
		off += each;
		if (load)
			load[sl->server] += split ? orig / (uint64_t)pieces : orig;
	}
}

static uint64_t parts_of(uint64_t len, uint64_t part)
{
	return part && len > part ? (len + part - 1) / part : 1;
}

int ps_place(const uint64_t *orig, const uint64_t *len, int nlayers, int nservers, uint64_t bound,
	     bool split_all, bool balanced, uint64_t part, struct ps_placement *pl)
{
	size_t cap = 0;
	uint64_t *load = NULL;

	memset(pl, 0, sizeof(*pl));
	if (nlayers <= 0 || nservers <= 0)
		return -EINVAL;
	for (int l = 0; l < nlayers; l++)
		cap += parts_of(len[l], part) * (size_t)nservers;
	pl->nlayers = nlayers;
	pl->first = calloc(nlayers, sizeof(int));
	pl->count = calloc(nlayers, sizeof(int));
	pl->len = calloc(nlayers, sizeof(uint64_t));
	pl->slices = calloc(cap, sizeof(struct ps_slice));
	if (balanced)
		load = calloc(nservers, sizeof(uint64_t));
	if (!pl->first || !pl->count || !pl->len || !pl->slices || (balanced && !load)) {
		free(load);
		ps_placement_free(pl);
		return -ENOMEM;
	}
	for (int l = 0; l < nlayers; l++) {
		uint64_t nparts = parts_of(len[l], part);

		pl->first[l] = pl->nslices;
		pl->len[l] = len[l];
		if (nparts == 1) {
			place_tensor(pl, l, pl->nparts++, (uint64_t)l, orig[l], 0, len[l], nservers,
				     bound, split_all, load);
		} else {
			/* ByteScheduler: each partition is a tensor of its own, with its own key
			 * (counted on from the layer's), placed by the same rule; its original
			 * size (shrunk size x orig/len) decides whether it is sliced. */
			for (uint64_t i = 0; i < nparts; i++) {
				uint64_t off = i * part,
					 plen = len[l] - off < part ? len[l] - off : part;
				uint64_t porig =
				    (uint64_t)((double)plen * (double)orig[l] / (double)len[l] +
					       0.5);

				place_tensor(pl, l, pl->nparts++, (uint64_t)l + i, porig, off, plen,
					     nservers, bound, split_all, load);
			}
		}
		pl->count[l] = pl->nslices - pl->first[l];
	}
	free(load);
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

void ps_band_queues_even(int nbands, int queues, int *queue_of_band)
{
	for (int b = 0; b < nbands; b++)
		queue_of_band[b] = queues > 1 ? (int)((int64_t)b * queues / nbands) : 0;
}

int ps_map_connections_queues(int nlayers, int conns, int nbands, const int *queue_of_band,
			      int *conn_of, int *queue_of_conn)
{
	/* per current-iteration group: first layer, layers, class (index into cq) */
	int lo[MERCURY_MAX_LEVELS], cnt[MERCURY_MAX_LEVELS], cls[MERCURY_MAX_LEVELS];
	int cq[PS_MAX_CONNS], ncl = 0, total, first = 0;
	int groups;

	if (nlayers < 1 || conns < 1 || nbands < 2 || nbands > MERCURY_MAX_LEVELS)
		return -EINVAL;
	groups = (int)mercury_current_groups((unsigned)nbands);
	for (int g = 0; g < groups; g++) {
		lo[g] = -1;
		cnt[g] = 0;
		cls[g] = -1;
	}
	for (int l = 0; l < nlayers; l++) {
		int g = (int)mercury_layer_group((uint32_t)l, (uint32_t)nlayers, (unsigned)groups);

		if (lo[g] < 0)
			lo[g] = l;
		cnt[g]++;
	}
	for (int g = 0; g < groups; g++) {
		int q = queue_of_band[g], c = 0; /* group g is band g (no weight shift) */

		if (q < 0)
			return -EINVAL;
		if (!cnt[g])
			continue;
		while (c < ncl && cq[c] != q)
			c++;
		if (c == ncl) {
			if (ncl == PS_MAX_CONNS)
				return -E2BIG;
			cq[ncl++] = q;
		}
		cls[g] = c;
	}
	total = conns > ncl ? conns : ncl;
	if (total > PS_MAX_CONNS)
		total = PS_MAX_CONNS;
	for (int c = 0; c < ncl; c++) {
		int share = total / ncl + (c < total % ncl ? 1 : 0);
		int ngc = 0, layers = 0, gi = 0, used = 0;

		for (int g = 0; g < groups; g++)
			if (cls[g] == c) {
				ngc++;
				layers += cnt[g];
			}
		if (share > layers)
			share = layers;
		for (int g = 0; g < groups; g++) {
			if (cls[g] != c)
				continue;
			if (share <= ngc) {
				/* fewer sockets than groups: whole groups share one, in order */
				for (int i = 0; i < cnt[g]; i++)
					conn_of[lo[g] + i] =
					    first + (int)((int64_t)gi * share / ngc);
				used = share;
			} else {
				/* a group's share of the class's sockets, its layers split evenly
				 */
				int gshare = share / ngc + (gi < share % ngc ? 1 : 0);

				if (gshare > cnt[g])
					gshare = cnt[g];
				for (int i = 0; i < cnt[g]; i++)
					conn_of[lo[g] + i] =
					    first + used + (int)((int64_t)i * gshare / cnt[g]);
				used += gshare;
			}
			gi++;
		}
		for (int k = first; k < first + used && queue_of_conn; k++)
			queue_of_conn[k] = cq[c];
		first += used;
	}
	return first;
}

int ps_layer_one_group_below(int layer, int nlayers, unsigned groups)
{
	unsigned g = mercury_layer_group((uint32_t)layer, (uint32_t)nlayers, groups);

	if (groups <= 1 || g + 1 >= groups)
		return layer;
	/* the smallest l with l * groups / nlayers == g + 1 */
	int first = (int)(((uint64_t)(g + 1) * (uint64_t)nlayers + groups - 1) / groups);
	return first < nlayers ? first : layer;
}

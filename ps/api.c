// SPDX-License-Identifier: BSD-2-Clause
/* libmercury-ps: the public worker API (include/mercury_ps.h) over one PS node. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tag.h"
#include "mercury_ps.h"
#include "mercury_groups.h"
#include "mercury_wire.h"

#define API __attribute__((visibility("default")))

struct mercury_ps {
	struct ps_node *node;
	char *timeline; /* the caller's string may not outlive open */
};

/* The first layout with sz ends at colocated_tcp: nothing shorter was ever published. */
#define OPTIONS_SZ_MIN                                                                             \
	(offsetof(struct mercury_ps_options, colocated_tcp) +                                      \
	 sizeof(((struct mercury_ps_options *)0)->colocated_tcp))

/* The caller's options in this library's layout: unknown (older caller) fields defaulted, and
 * a newer caller's fields beyond ours accepted only while they are zero (not asked for). */
static int options_read(const struct mercury_ps_options *in, struct mercury_ps_options *o,
			char *err, size_t errlen)
{
	const struct mercury_ps_options defaults = MERCURY_PS_OPTIONS_INIT;

	if (!in || in->sz < OPTIONS_SZ_MIN) {
		snprintf(
		    err, errlen,
		    "bad options: sz is %zu; start from MERCURY_PS_OPTIONS_INIT, which sets it",
		    in ? in->sz : 0);
		return -EINVAL;
	}
	for (size_t i = sizeof(*o); i < in->sz; i++) {
		if (((const unsigned char *)in)[i]) {
			snprintf(err, errlen,
				 "options of a newer libmercury-ps (%zu bytes; this one knows %zu) "
				 "set a field it does not have",
				 in->sz, sizeof(*o));
			return -E2BIG;
		}
	}
	*o = defaults;
	memcpy(o, in, in->sz < sizeof(*o) ? in->sz : sizeof(*o));
	o->sz = sizeof(*o);
	return 0;
}

static int options_to_config(const struct mercury_ps_options *o, struct ps_config *c, char *err,
			     size_t errlen)
{
	ps_config_defaults(c);
	if (!o->hosts || !o->layer_params || o->nlayers < 1 || o->nodes < 1 ||
	    o->nodes > PS_MAX_NODES || o->mode < MERCURY_PS_FIFO || o->mode > MERCURY_PS_MERCURY ||
	    o->placement < MERCURY_PS_PLACE_HASH || o->placement > MERCURY_PS_PLACE_BALANCED) {
		snprintf(err, errlen,
			 "bad options: need hosts, layer_params, nlayers >= 1, nodes 1..%d, "
			 "mode fifo, partition or mercury and placement hash or balanced",
			 PS_MAX_NODES);
		return -EINVAL;
	}
	for (int i = 0; i < o->nodes; i++) {
		if (!o->hosts[i] || snprintf(c->hosts[i], sizeof(c->hosts[i]), "%s", o->hosts[i]) >=
					(int)sizeof(c->hosts[i])) {
			snprintf(err, errlen, "bad options: host %d missing or too long", i);
			return -EINVAL;
		}
	}
	c->mode = (enum ps_mode)o->mode;
	c->rank = o->rank;
	c->nodes = o->nodes;
	c->conns = o->conns;
	c->tag_levels = o->bands;
	c->part = o->part;
	c->credit = o->credit;
	c->bound = o->bound;
	c->balanced = o->placement == MERCURY_PS_PLACE_BALANCED;
	c->timeout_s = o->timeout_s;
	c->user_data = true;
	c->role = o->external_servers ? PS_ROLE_WORKER : PS_ROLE_NODE;
	c->local_direct = !o->colocated_tcp;
	if (o->job < 1 || o->weight < 1 || o->weight > MW_MAX_WEIGHT) {
		snprintf(err, errlen, "bad options: job %u (give >= 1), weight %u (give 1..%d)",
			 o->job, o->weight, MW_MAX_WEIGHT);
		return -EINVAL;
	}
	unsigned groups = mercury_current_groups(o->bands >= 2 ? (unsigned)o->bands : 2);
	if (o->job_band < -1 || (o->job_band >= 0 && (unsigned)o->job_band >= groups) ||
	    (o->job_band >= 0 && o->mode == MERCURY_PS_MERCURY)) {
		snprintf(err, errlen,
			 "bad options: job_band %d: -1 (none), or 0..%u in fifo or partition mode "
			 "(mercury mode tags by layer)",
			 o->job_band, groups - 1);
		return -EINVAL;
	}
	c->job = o->job;
	c->weight = o->weight;
	c->job_band = o->job_band;
	if (o->rcvbuf < MERCURY_PS_RCVBUF_AUTO || o->rcvbuf > (64 << 20)) {
		snprintf(err, errlen,
			 "bad options: rcvbuf %d: give -1 (by the node count), 0 (autotuning) "
			 "or up to 67108864 bytes",
			 o->rcvbuf);
		return -EINVAL;
	}
	c->rcvbuf = o->rcvbuf;
	if (o->dscp_queues < 0 || o->dscp_queues > MERCURY_MAX_LEVELS) {
		snprintf(err, errlen, "bad options: dscp_queues %d: give 0 (off) to %d",
			 o->dscp_queues, MERCURY_MAX_LEVELS);
		return -EINVAL;
	}
	c->dscp_queues = o->dscp_queues;
	if (o->pulls_alike != 0 && o->pulls_alike != 1) {
		snprintf(err, errlen, "bad options: pulls_alike %d: give 0 or 1", o->pulls_alike);
		return -EINVAL;
	}
	c->pulls_below = !o->pulls_alike;
	return 0;
}

API int mercury_ps_open(const struct mercury_ps_options *o, struct mercury_ps **out, char *err,
			size_t errlen)
{
	struct mercury_ps_options opts;
	struct ps_config c;
	struct mercury_ps *ps;
	int r;

	*out = NULL;
	r = options_read(o, &opts, err, errlen);
	if (r)
		return r;
	o = &opts;
	r = options_to_config(o, &c, err, errlen);
	if (r)
		return r;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	if (o->timeline) {
		ps->timeline = strdup(o->timeline);
		if (!ps->timeline) {
			free(ps);
			return -ENOMEM;
		}
		c.timeline = ps->timeline;
	}
	r = ps_node_start(&c, o->layer_params, o->nlayers, &ps->node, err, errlen);
	if (r) {
		free(ps->timeline);
		free(ps);
		return r;
	}
	*out = ps;
	return 0;
}

API int mercury_ps_push(struct mercury_ps *ps, int layer, uint64_t iter, const float *grad)
{
	return grad ? ps_node_push(ps->node, layer, iter, grad) : -EINVAL;
}

API int mercury_ps_push_inplace(struct mercury_ps *ps, int layer, uint64_t iter, const float *grad,
				float *out)
{
	return ps_node_push_inplace(ps->node, layer, iter, grad, out);
}

API int mercury_ps_wait_pull(struct mercury_ps *ps, int layer, uint64_t iter, float *out)
{
	return out ? ps_node_wait_pull(ps->node, layer, iter, out) : -EINVAL;
}

API int mercury_ps_pull_ready(struct mercury_ps *ps, int layer, uint64_t iter)
{
	return ps_node_pull_ready(ps->node, layer, iter);
}

API const char *mercury_ps_error(struct mercury_ps *ps)
{
	return ps_node_error(ps->node);
}

API int mercury_ps_tagged(struct mercury_ps *ps)
{
	return ps_node_tagged(ps->node);
}

API void mercury_ps_tag_counts(struct mercury_ps *ps, uint64_t *fastpath, uint64_t *service)
{
	ps_tag_counts(ps->node, fastpath, service);
}

API int mercury_ps_close(struct mercury_ps *ps, char *err, size_t errlen)
{
	int r = 0, rs;

	if (!ps)
		return 0;
	if (!ps_node_error(ps->node))
		r = ps_node_finish(ps->node, NULL, NULL);
	rs = ps_node_stop(ps->node, NULL, err, errlen);
	free(ps->timeline);
	free(ps);
	return rs ? rs : r;
}

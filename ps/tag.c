/*
 * The one place where the PS tells Mercury which bytes carry which layer, through libmercury:
 * one client per node (job 1, the profile's layer count), every connection registered, and
 * each message tagged (layer, direction, iteration) right before its bytes are written.
 * Iteration boundaries go to the daemon too, so the oldest iteration's traffic goes first.
 *
 * If no mercuryd answers, mercury mode says so once and runs without packet priority (the
 * JSON result's "tagged" is false) rather than failing: the benchmark checks that flag.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "node.h"
#include "mercury.h"

#define PS_JOB 1

static const char *why(int err)
{
	return mercury_strerror(err);
}

int ps_tag_open(struct ps_node *n)
{
	struct mercury_client *cl = NULL;
	int r;

	r = mercury_connect(getenv("MERCURY_SOCKET"), &cl);
	if (!r)
		r = mercury_job_declare(cl, PS_JOB, (uint32_t)n->L, 1);
	if (r) {
		fprintf(stderr,
			"mercury-ps: node %d: cannot use mercuryd (%s): mercury mode runs "
			"without packet priority (start `mercuryd serve`, set MERCURY_SOCKET)\n",
			n->cfg.rank, why(r));
		if (cl)
			mercury_disconnect(cl);
		return r;
	}
	n->tagger = cl;
	return 0;
}

void ps_tag_close(struct ps_node *n)
{
	if (n->tagger)
		mercury_disconnect(n->tagger);
	n->tagger = NULL;
}

int ps_tag_register(struct ps_conn *c)
{
	if (!c->node->tagger)
		return -ENOTCONN;
	int r = mercury_register_socket(c->node->tagger, c->fd);
	if (r)
		fprintf(stderr, "mercury-ps: node %d: registering a socket with mercuryd: %s\n",
			c->node->cfg.rank, why(r));
	c->tag = r ? NULL : c->node->tagger;
	return r;
}

int ps_tag_next(struct ps_conn *c, uint64_t nbytes, int layer, enum ps_dir dir, uint64_t iter)
{
	if (!c->tag)
		return -ENOTCONN;
	int r = mercury_tag_next(c->tag, c->fd, PS_JOB, (uint32_t)layer + 1,
				 dir == PS_DIR_PUSH ? MERCURY_PUSH : MERCURY_PULL, iter, nbytes);
	if (r)
		atomic_fetch_add(&c->node->tag_errors, 1);
	return r;
}

void ps_tag_iteration(struct ps_node *n, uint64_t iter, bool begin)
{
	if (!n->tagger)
		return;
	int r = begin ? mercury_iteration_begin(n->tagger, PS_JOB, iter)
		      : mercury_iteration_end(n->tagger, PS_JOB, iter);
	if (r)
		atomic_fetch_add(&n->tag_errors, 1);
}

void ps_tag_unregister(struct ps_conn *c)
{
	c->tag = NULL; /* the daemon forgets a socket when it closes */
}

// SPDX-License-Identifier: BSD-2-Clause
/* `mercury-ps serve`: the server role of one node, job after job, until a signal. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "json_out.h"
#include "serve_cmd.h"
#include "profile.h"

/* One line per job a server saw to its end (or to its failure). */
static void print_job(const struct ps_config *c, int job, int rc, const struct ps_result *r,
		      const char *err)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "job", json_object_new_int(job));
	json_object_object_add(o, "role", json_object_new_string("server"));
	json_object_object_add(o, "mode", json_object_new_string(ps_mode_name(c->mode)));
	json_object_object_add(o, "rank", json_object_new_int(c->rank));
	json_object_object_add(o, "nodes", json_object_new_int(c->nodes));
	add_bool(o, "ok", rc == 0);
	if (rc)
		json_object_object_add(o, "error", json_object_new_string(err));
	add_u64(o, "bytes_sent", r->bytes_sent);
	add_bool(o, "tagged", r->tagged);
	add_u64(o, "tag_errors", r->tag_errors);
	print_json(o);
}

/*
 * `serve`: this node's share of the tensors, for one job after another (a job ends when
 * every worker has said goodbye, or fails: a worker gone, a protocol breach, another model),
 * until SIGTERM / SIGINT or `jobs` jobs. The signals are blocked in every thread and polled
 * here, so a signal never lands in the middle of a send.
 */
int ps_serve_command(struct ps_config *c, const struct ps_profile *p, int jobs,
		     bool exit_with_parent)
{
	uint64_t *params = ps_profile_params(p);
	sigset_t stop_set;
	const struct timespec no_wait = {0, 0};
	bool stop = false;
	int failed = 0;

	if (!params)
		return 1;
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGTERM);
	sigaddset(&stop_set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
	/* a trainer's own server (mercury.torch servers="process") must not outlive it */
	if (exit_with_parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() == 1)) {
		fprintf(stderr, "mercury-ps: serve: the parent is gone already\n");
		free(params);
		return 1;
	}
	c->role = PS_ROLE_SERVER;
	for (int job = 1; !stop && (jobs == 0 || job <= jobs); job++) {
		struct ps_result res = {0};
		struct ps_node *n;
		char err[256] = "";
		int r = ps_node_start(c, params, p->nlayers, &n, err, sizeof(err));

		if (r) { /* cannot listen, bad layout: no job will do better */
			fprintf(stderr, "mercury-ps: serve: %s\n", err);
			free(params);
			return 1;
		}
		if (job == 1)
			fprintf(
			    stderr,
			    "mercury-ps: serve: node %d of %d, %s mode, %d layers, listening on "
			    "%s\n",
			    c->rank, c->nodes, ps_mode_name(c->mode), p->nlayers,
			    c->hosts[c->rank]);
		while ((r = ps_node_serve_wait(n, 0.2)) == -ETIMEDOUT)
			if (sigtimedwait(&stop_set, NULL, &no_wait) > 0) {
				stop = true;
				break;
			}
		bool cut = stop && r == -ETIMEDOUT;
		r = ps_node_stop(n, &res, err, sizeof(err));
		if (cut && !res.bytes_sent)
			break; /* nobody came: no job to report */
		if (cut && !r) {
			snprintf(err, sizeof(err),
				 "stopped by a signal before every worker was done");
			r = -EINTR;
		}
		if (r) {
			fprintf(stderr, "mercury-ps: serve: job %d: %s\n", job, err);
			failed++;
		}
		print_job(c, job, r, &res, err);
	}
	free(params);
	return jobs && failed ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Handling of one event frame: decode, check the socket, apply the policy, write the map. */
#ifndef MERCURY_EVENT_SERVICE_H
#define MERCURY_EVENT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mercury.h" /* MERCURY_DEFAULT_SOCKET: the socket path clients use */
#include "mercury_wire.h"
#include "policy.h"

struct event_state {
	struct policy policy;
	int tags_fd, stats_fd;	 /* shared sock_tags / sock_stats maps */
	int jobs_fd, job_ids_fd; /* shared job state (-1: none, in unit tests) */
	int maps_error;		 /* not 0: the maps are not the pinned ones; tags and stats fail */
	/*
	 * Jobs by slot. A job is named by its id within the declaring user's namespace: (uid,
	 * job), so one user cannot change another user's job (its layers, weight, iteration);
	 * the policy knows a job by its slot index. A client's jobs_mask bit i means it
	 * declared slot i's job; the job is forgotten when its last declaring client goes.
	 * Each slot's state is published in the "jobs" map, where the classifier and the tag
	 * fast path read it; gen tells a slot's successive jobs apart (tags carry it).
	 * An orphan is a job read back from the map at start (a restarted daemon): it keeps
	 * its slot, state and tags until a client declares it again or its slot is needed.
	 */
	struct {
		uint32_t job;
		uint32_t uid;
		uint32_t gen;
		unsigned refs;
		bool orphan;
	} slots[POLICY_MAX_JOBS];
	uint64_t frames, rejected;
};

/*
 * Handles one frame of client `client_id` (peer credentials cred). truncated: the frame or
 * its ancillary data did not fit. fds: sockets that came with it (the caller closes them).
 * Always fills reply (status 0 or a negative errno), never fails the service.
 */
void event_handle(struct event_state *ev, uint64_t client_id, const struct ucred *cred,
		  uint64_t *jobs_mask, const void *frame, size_t n, bool truncated, const int *fds,
		  int nfds, struct mw_reply *reply);

/* A client went away: forget the jobs only it declared. */
void event_client_gone(struct event_state *ev, uint64_t jobs_mask);

/* Reads the published job state back (a restarted daemon): active jobs become orphans that
 * keep their slots. Returns how many. */
int event_adopt_jobs(struct event_state *ev);

/* The weights of the jobs in the share slots (0 .. MERCURY_SHARE_SLOTS - 1; 0: no job), what
 * the htb classes of interfaces under the job policy share follow. */
void event_share_weights(const struct event_state *ev, uint32_t weight[MERCURY_SHARE_SLOTS]);

/* Writes every slot's state to the jobs maps (after they were switched or re-created). */
void event_publish_all(struct event_state *ev);

#endif

/* Handling of one event frame: decode, check the socket, apply the policy, write the map. */
#ifndef MERCURY_EVENT_SERVICE_H
#define MERCURY_EVENT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mercury_wire.h"
#include "policy.h"

#define MERCURY_DEFAULT_SOCKET_PATH "/run/mercury/mercuryd.sock"

struct event_state {
	struct policy policy;
	int tags_fd, stats_fd; /* shared sock_tags / sock_stats maps */
	int maps_error;	       /* not 0: the maps are not the pinned ones; tags and stats fail */
	unsigned min_bands_seen;
	/*
	 * Jobs by slot. A job is named by its id within the declaring user's namespace: (uid,
	 * job), so one user cannot change another user's job (its layers, weight, iteration);
	 * the policy knows a job by its slot index. A client's jobs_mask bit i means it
	 * declared slot i's job; the job is forgotten when its last declaring client goes.
	 */
	struct {
		uint32_t job;
		uint32_t uid;
		unsigned refs;
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

#endif

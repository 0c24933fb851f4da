/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The window of a job's iterations: the oldest one begun and not ended, and which of the 63
 * after it have ended already. One implementation for mercuryd's policy, the client library
 * (which replays it to a restarted daemon) and the parameter server.
 */
#ifndef MERCURY_ITER_WINDOW_H
#define MERCURY_ITER_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

struct iter_window {
	uint64_t oldest_open; /* oldest iteration begun and not ended */
	uint64_t ended_mask;  /* bit i: iteration oldest_open + i has ended */
	bool has_open;
};

/* An iteration begins: only an older one than the window's moves it (ended bits move up). */
static inline void iter_window_begin(struct iter_window *w, uint64_t iteration)
{
	if (!w->has_open || iteration < w->oldest_open) {
		uint64_t shift = w->has_open ? w->oldest_open - iteration : 0;

		w->ended_mask = shift < 64 ? w->ended_mask << shift : 0;
		w->oldest_open = iteration;
		w->has_open = true;
	}
}

/* An iteration ends; the window advances past every ended one. Ends before the window, or
 * more than 63 ahead of it, change nothing. */
static inline void iter_window_end(struct iter_window *w, uint64_t iteration)
{
	uint64_t d;

	if (!w->has_open || iteration < w->oldest_open)
		return;
	d = iteration - w->oldest_open;
	if (d < 64)
		w->ended_mask |= 1ull << d;
	while (w->ended_mask & 1) {
		w->ended_mask >>= 1;
		w->oldest_open++;
	}
}

#endif

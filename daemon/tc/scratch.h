/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A scratch device to try things on: a veth pair in a network namespace of its own, made in
 * a forked child, so that nothing on the caller's devices changes (and the namespace dies
 * with the child). Used to prove a saved qdisc tree restorable (tc_tree_verify) and to probe
 * which qdisc backends the kernel has (qdisc_pick_auto).
 */
#ifndef MERCURY_SCRATCH_H
#define MERCURY_SCRATCH_H

#include <stddef.h>

/*
 * Runs fn(ifindex of the scratch device, arg, msg, msglen) in a child in a new network
 * namespace, the device having num_tx_queues TX queues and being up. The child's writes to
 * *arg are not seen here: fn answers in msg (text, up to msglen), which is copied back.
 * Returns fn's return value (0 or a negative errno below 256), or a negative errno with msg
 * set when the scratch device could not be made.
 */
int scratch_run(unsigned num_tx_queues, int (*fn)(int ifindex, void *arg, char *msg, size_t msglen),
		void *arg, char *msg, size_t msglen);

#endif

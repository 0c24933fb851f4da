/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Value of the test variant's "test_view" map (bpf/classifier_test.bpf.c): the socket as
 * BPF_PROG_TEST_RUN cannot give it. Shared by that program, the kernel tests and the
 * benchmark that fill it.
 */
#ifndef MERCURY_CLASSIFIER_TEST_VIEW_H
#define MERCURY_CLASSIFIER_TEST_VIEW_H

struct mercury_test_view {
	__u32 has_sock; /* a full TCP socket: snd_una and bytes_acked are valid */
	__u32 snd_una;
	__u64 bytes_acked;
	__u32 has_tags;	     /* use the "test_tags" entry as the socket's tags */
	__u32 queued;	     /* earlier packets of the socket are still queued below TCP */
	__u32 no_sock_stats; /* no per-socket state (as when socket storage cannot be had) */
};

#endif

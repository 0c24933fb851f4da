/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The maps shared by every interface and by the tag fast path: mercuryd pins them once under
 * its pin root and hands them to each object it loads (bpf_map__reuse_fd), so the names and
 * layouts here are what it expects.
 */
#ifndef MERCURY_SHARED_MAPS_H
#define MERCURY_SHARED_MAPS_H

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mercury_sock_tags);
} sock_tags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mercury_sock_stats);
} sock_stats SEC(".maps");

/* Job state: the level of a job tag is decided per packet from it (common/job_level.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MERCURY_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct mercury_job_state);
} jobs SEC(".maps");

/* Unused by the classifier: (uid, job) -> slot, for the tag fast path; here so that every
 * object that shares the maps has it (mercuryd pins it with the others). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MERCURY_MAX_JOBS);
	__type(key, struct mercury_job_key);
	__type(value, __u32);
} job_ids SEC(".maps");

#endif

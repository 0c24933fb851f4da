/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The classifier's per-interface maps: mercuryd pins them under <pin root>/<iface>/ (the
 * names and layouts are what it expects); the maps every interface shares are
 * shared_maps.h.
 */
#ifndef MERCURY_IFACE_MAPS_H
#define MERCURY_IFACE_MAPS_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_iface_cfg);
} cfg SEC(".maps");

/* Unused by the code; here so that libbpf creates it BTF-typed for mercuryd to pin. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_attach_state);
} attach_state SEC(".maps");

/* Unused by the code, like attach_state: the qdisc tree detach puts back. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_saved_tree);
} saved_tree SEC(".maps");

#endif

/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Which priority group a layer falls in: the one rule the daemon's policy and a framework's
 * tensor -> socket mapping must share. A socket that carries layers of two groups has its
 * packets in two bands and reorders its own stream, which TCP takes for loss; so a
 * framework that opens several connections per peer should give each socket layers of one
 * group only (the reference PS does, ps/placement.c).
 *
 * Layers are grouped evenly by index: layer l (0-based) of n is in group l * G / n. (Tapered
 * groups, smaller at both ends, were measured on the emulated cluster: ResNet-50 gained 1.5 %
 * and BERT-base lost 1.5 %, so the simple rule stays.)
 */
#ifndef MERCURY_GROUPS_H
#define MERCURY_GROUPS_H

#ifndef __VMLINUX_H__ /* the BPF side (vmlinux.h) has the fixed-width types */
#include <stdint.h>
#endif

static inline unsigned mercury_layer_group(uint32_t layer0, uint32_t n_layers, unsigned groups)
{
	if (groups <= 1 || n_layers == 0)
		return 0;
	return (unsigned)((uint64_t)layer0 * groups / n_layers);
}

/* Groups the current iteration's layers get with nbands bands (daemon/policy.c): one band
 * with 2 (the other is the next iteration's), front and back half with 3, and N - 2 with
 * N >= 4 (the last two are the next iteration's and those further ahead). */
static inline unsigned mercury_current_groups(unsigned nbands)
{
	return nbands <= 2 ? 1 : nbands == 3 ? 2 : nbands - 2;
}

#endif

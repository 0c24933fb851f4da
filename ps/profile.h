/* SPDX-License-Identifier: BSD-2-Clause */
/* A model profile (profile.c): layers, parameter counts, emulated compute times
 * (models/NAME.prof). */
#ifndef MERCURY_PS_PROFILE_H
#define MERCURY_PS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct ps_layer {
	char name[48];
	uint64_t params; /* as in the model definition */
	double fwd_s;	 /* emulated forward time at the profile's GPU speed */
	double bwd_s;
};

struct ps_profile {
	char model[48];
	int nlayers;
	struct ps_layer *layers; /* layer 0 = input side */
};

/* Loads a profile; 0, or negative errno with a message in err. */
int ps_profile_load(const char *path, struct ps_profile *p, char *err, size_t errlen);
/* A model given as "N,N,..." (parameters per layer, forward order; no compute times). */
int ps_profile_from_list(const char *list, struct ps_profile *p, char *err, size_t errlen);
void ps_profile_free(struct ps_profile *p);
/* The layers' parameter counts as an array (caller frees), or NULL without memory. */
uint64_t *ps_profile_params(const struct ps_profile *p);

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* Model profiles: one "layer <name> <params> <fwd_s> <bwd_s>" line per layer, input side first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "ps.h"

static const char *const mode_names[PS_MODE_MAX] = {"fifo", "partition", "mercury"};

const char *ps_mode_name(enum ps_mode m)
{
	return m < PS_MODE_MAX ? mode_names[m] : "?";
}

int ps_mode_from_name(const char *s, enum ps_mode *out)
{
	for (int i = 0; i < PS_MODE_MAX; i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum ps_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* A zeroed new last layer, or NULL (the profile freed) when memory runs out. */
static struct ps_layer *append_layer(struct ps_profile *p, int *cap)
{
	if (p->nlayers == *cap) {
		int c = *cap ? *cap * 2 : 64;
		struct ps_layer *n = realloc(p->layers, (size_t)c * sizeof(*n));

		if (!n) {
			ps_profile_free(p);
			return NULL;
		}
		p->layers = n;
		*cap = c;
	}
	memset(&p->layers[p->nlayers], 0, sizeof(p->layers[0]));
	return &p->layers[p->nlayers++];
}

uint64_t *ps_profile_params(const struct ps_profile *p)
{
	uint64_t *params = calloc(p->nlayers > 0 ? (size_t)p->nlayers : 1, sizeof(uint64_t));

	for (int l = 0; params && l < p->nlayers; l++)
		params[l] = p->layers[l].params;
	return params;
}

int ps_profile_load(const char *path, struct ps_profile *p, char *err, size_t errlen)
{
	char line[512];
	int cap = 0, lineno = 0;
	FILE *f = fopen(path, "r");

	memset(p, 0, sizeof(*p));
	if (!f) {
		snprintf(err, errlen, "cannot open profile %s: %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char kw[16], name[48];
		unsigned long long params;
		double fwd, bwd;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%15s", kw) != 1)
			continue;
		if (strcmp(kw, "model") == 0) {
			sscanf(line, "%*s %47s", p->model);
			continue;
		}
		if (strcmp(kw, "layer") != 0 ||
		    sscanf(line, "%*s %47s %llu %lf %lf", name, &params, &fwd, &bwd) != 4 ||
		    params == 0 || fwd < 0 || bwd < 0) {
			snprintf(err, errlen,
				 "%s:%d: expected 'layer <name> <params> <fwd_s> <bwd_s>'", path,
				 lineno);
			fclose(f);
			ps_profile_free(p);
			return -EINVAL;
		}
		struct ps_layer *l = append_layer(p, &cap);
		if (!l) {
			fclose(f);
			snprintf(err, errlen, "out of memory reading %s", path);
			return -ENOMEM;
		}
		snprintf(l->name, sizeof(l->name), "%s", name);
		l->params = params;
		l->fwd_s = fwd;
		l->bwd_s = bwd;
	}
	fclose(f);
	if (p->nlayers == 0) {
		snprintf(err, errlen, "profile %s has no layer lines", path);
		return -EINVAL;
	}
	return 0;
}

int ps_profile_from_list(const char *list, struct ps_profile *p, char *err, size_t errlen)
{
	const char *at = list;

	memset(p, 0, sizeof(*p));
	snprintf(p->model, sizeof(p->model), "layers");
	for (int cap = 0; *at;) {
		char *end;
		unsigned long long v = strtoull(at, &end, 10);

		if (end == at || v == 0 || (*end && *end != ',') || *at == '-') {
			snprintf(err, errlen,
				 "--layers '%s': want parameter counts >= 1 separated by commas",
				 list);
			ps_profile_free(p);
			return -EINVAL;
		}
		struct ps_layer *l = append_layer(p, &cap);
		if (!l) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		l->params = v;
		at = *end ? end + 1 : end;
	}
	if (p->nlayers == 0) {
		snprintf(err, errlen, "--layers is empty");
		return -EINVAL;
	}
	return 0;
}

void ps_profile_free(struct ps_profile *p)
{
	free(p->layers);
	p->layers = NULL;
	p->nlayers = 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job policy share: the assured rates of the per-job htb classes follow the weights of the
 * jobs in the share slots. attach sets them from the published job state, serve again
 * whenever a job in a share slot comes, goes or changes weight.
 */
#ifndef MERCURY_SHARE_SYNC_H
#define MERCURY_SHARE_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"

/* The weights of the active jobs in the share slots of the pinned job state under root (0: no
 * job; all 0 when nothing is pinned yet). */
void share_weights_read(const char *root, uint32_t weight[MERCURY_SHARE_SLOTS]);

/* Sets the share classes of every interface attached under root with the job policy share,
 * in the caller's network namespace, for these weights. Returns how many interfaces it
 * updated, or -errno of the first failure (err names it; the others are still tried). */
int share_sync_all(const char *root, const uint32_t weight[MERCURY_SHARE_SLOTS], char *err,
		   size_t errlen);

#endif

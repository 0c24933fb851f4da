// SPDX-License-Identifier: BSD-2-Clause
/* libFuzzer target over the daemon's event decoder: every frame a client could send. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service/wire_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_msg m;

	if (size == 0)
		return 0;
	/* The first byte's low bit says whether an fd came with the frame. */
	mw_decode(data + 1, size - 1, data[0] & 1, &m);
	return 0;
}

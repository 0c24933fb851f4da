// SPDX-License-Identifier: BSD-2-Clause
/* Levelled messages on stderr (common/log.h). */
#include <stdio.h>

#include "log.h"

const char *mlog_prog = "mercuryd";
static int threshold = MLOG_INFO;

void mlog_set_level(int level)
{
	threshold = level;
}

int mlog_level(void)
{
	return threshold;
}

void mlog_v(int level, const char *fmt, va_list ap)
{
	char msg[1024];

	if (!mlog_enabled(level))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s: %s%s\n", mlog_prog,
		level == MLOG_WARN    ? "warning: "
		: level == MLOG_DEBUG ? "debug: "
				      : "",
		msg);
}

void mlog(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mlog_v(level, fmt, ap);
	va_end(ap);
}

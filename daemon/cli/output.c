// SPDX-License-Identifier: BSD-2-Clause
/* Error and warning lines shared by every subcommand (common/log.h, or JSON under -j). */
#include <stdarg.h>
#include <stdio.h>
#include <json-c/json.h>

#include "attach_args.h"
#include "cli.h"
#include "log.h"

static void emit(const struct cli_ctx *ctx, int level, const char *fmt, va_list ap)
{
	char msg[1024];

	if (ctx && ctx->json && level == MLOG_ERROR) {
		struct json_object *o = json_object_new_object();

		vsnprintf(msg, sizeof(msg), fmt, ap);
		json_object_object_add(o, "error", json_object_new_string(msg));
		cli_json_print(ctx, o);
		return;
	}
	mlog_v(level, fmt, ap);
}

void cli_json_print(const struct cli_ctx *ctx, struct json_object *o)
{
	int flags = ctx && ctx->pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
				       : JSON_C_TO_STRING_PLAIN;

	printf("%s\n", json_object_to_json_string_ext(o, flags));
	fflush(stdout);
	json_object_put(o);
}

void cli_error(const struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, MLOG_ERROR, fmt, ap);
	va_end(ap);
}

void cli_warn(const struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, MLOG_WARN, fmt, ap);
	va_end(ap);
}

struct json_object *dscp_json(unsigned dscp_on, const unsigned char *dscp, unsigned nbands)
{
	struct json_object *list;

	if (!dscp_on)
		return NULL;
	list = json_object_new_array();
	for (unsigned b = 0; b < nbands && b < MERCURY_MAX_BANDS; b++) {
		struct json_object *o = json_object_new_object();
		const char *name = dscp_name(dscp[b]);

		json_object_object_add(o, "band", json_object_new_int((int)b));
		json_object_object_add(o, "dscp", json_object_new_int(dscp[b]));
		json_object_object_add(o, "name", name ? json_object_new_string(name) : NULL);
		json_object_array_add(list, o);
	}
	return list;
}

void dscp_text(unsigned dscp_on, const unsigned char *dscp, unsigned nbands, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (!dscp_on) {
		snprintf(buf, len, "off");
		return;
	}
	for (unsigned b = 0; b < nbands && b < MERCURY_MAX_BANDS && used < len; b++) {
		const char *name = dscp_name(dscp[b]);
		int n = snprintf(buf + used, len - used, "%sb%u=%u%s%s%s", b ? " " : "", b, dscp[b],
				 name ? "(" : "", name ? name : "", name ? ")" : "");

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* Error and warning lines shared by every subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <json-c/json.h>

#include "cli.h"

static void emit(const struct cli_ctx *ctx, const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "mercuryd: %s%s\n", kind[0] == 'w' ? "warning: " : "", msg);
	if (ctx && ctx->json && kind[0] == 'e') {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "error", json_object_new_string(msg));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	}
}

void cli_error(const struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, "error", fmt, ap);
	va_end(ap);
}

void cli_warn(const struct cli_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, "warning", fmt, ap);
	va_end(ap);
}

// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd attach --from FILE: every interface listed in FILE, as the service starts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attach_from.h"

#define MAX_WORDS 32

/* Splits line in place into words (spaces, tabs; '#' starts a comment). */
static int split(char *line, char **words)
{
	int n = 0;
	char *hash = strchr(line, '#'), *save = NULL, *w;

	if (hash)
		*hash = '\0';
	for (w = strtok_r(line, " \t\r\n", &save); w && n < MAX_WORDS;
	     w = strtok_r(NULL, " \t\r\n", &save))
		words[n++] = w;
	return w ? -E2BIG : n;
}

int attach_from_file(const struct cli_ctx *ctx, const char *path,
		     int (*attach)(const struct cli_ctx *ctx, int argc, char **argv))
{
	char line[1024], *words[MAX_WORDS + 1];
	int lineno = 0, failed = 0, done = 0;
	FILE *f = fopen(path, "r");

	if (!f && errno == ENOENT) {
		cli_warn(ctx, "attach: no %s: no interface to attach", path);
		return 0;
	}
	if (!f) {
		cli_error(ctx, "attach: cannot read %s: %s", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		int n;

		lineno++;
		words[0] = "attach";
		n = split(line, words + 1);
		if (n == 0)
			continue;
		if (n < 0 || words[1][0] == '-') {
			cli_error(ctx, "attach: %s:%d: want '<iface> [attach options]'%s", path,
				  lineno, n < 0 ? " (too many words)" : "");
			failed++;
			continue;
		}
		const char *iface = words[1]; /* getopt reorders words */

		words[n + 1] = NULL;
		if (attach(ctx, n + 1, words)) {
			cli_error(ctx, "attach: %s:%d: %s was not attached", path, lineno, iface);
			failed++;
		} else {
			done++;
		}
	}
	fclose(f);
	if (failed)
		cli_error(ctx, "attach: %d of %d interface(s) in %s failed", failed, failed + done,
			  path);
	return failed ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Levelled messages on stderr: error, warn, info, debug. Each line is "<prog>: <message>",
 * warnings "<prog>: warning: <message>", debug lines "<prog>: debug: <message>". A message is
 * printed when its level is at or below the threshold: MLOG_INFO by default, each -v one
 * level more. libbpf's messages go through mlog_libbpf() a level below what their name says
 * to mercuryd (daemon/cli/main.c): its warnings and info at debug, its debug past it.
 */
#ifndef MERCURY_LOG_H
#define MERCURY_LOG_H

#include <stdarg.h>

enum mlog_level {
	MLOG_ERROR,
	MLOG_WARN,
	MLOG_INFO,
	MLOG_DEBUG,
};

/* The program the lines name ("mercuryd" unless the program sets it). */
extern const char *mlog_prog;

/* The threshold; levels past MLOG_DEBUG print what is finer still (libbpf's debug). */
void mlog_set_level(int level);
int mlog_level(void);
/* Whether a message of this level would be printed. */
static inline int mlog_enabled(int level)
{
	return level <= mlog_level();
}

void mlog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mlog_v(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#define log_error(...) mlog(MLOG_ERROR, __VA_ARGS__)
#define log_warn(...)  mlog(MLOG_WARN, __VA_ARGS__)
#define log_info(...)  mlog(MLOG_INFO, __VA_ARGS__)
#define log_debug(...) mlog(MLOG_DEBUG, __VA_ARGS__)

#endif

// SPDX-License-Identifier: BSD-2-Clause
/* pins_lock: a lock won on a pin root that its holder removed meanwhile is refused, so that a
 * repin or attach never writes into a directory no longer at that path. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "loader/pins.h"

/* A child that locks DIR, signals through a pipe, waits 100 ms, then (if remove) removes
 * it, (if recreate) makes a new one at the path, and unlocks by exiting. */
static pid_t hold_then(const char *dir, int remove, int recreate)
{
	int p[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY);

		if (fd < 0 || flock(fd, LOCK_EX) || write(p[1], "x", 1) != 1)
			_exit(1);
		usleep(100000);
		if (remove && rmdir(dir))
			_exit(2);
		if (recreate && mkdir(dir, 0700))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1); /* the child holds the lock now */
	close(p[0]);
	return pid;
}

static void reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void lock_after(int remove, int recreate, int want)
{
	char dir[] = "/tmp/test_pins_lock.XXXXXX";
	char err[256] = "";
	pid_t pid;
	int fd;

	assert_non_null(mkdtemp(dir));
	pid = hold_then(dir, remove, recreate);
	fd = pins_lock(dir, err, sizeof(err)); /* waits for the child */
	reap(pid);
	if (want == 0) {
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(fd, want);
		assert_non_null(strstr(err, "removed while waiting"));
	}
	rmdir(dir);
}

static void test_lock_kept_root(void **state)
{
	(void)state;
	lock_after(0, 0, 0);
}

static void test_lock_removed_root(void **state)
{
	(void)state;
	lock_after(1, 0, -ENOENT);
}

static void test_lock_replaced_root(void **state)
{
	(void)state;
	lock_after(1, 1, -ENOENT); /* same path, another directory: the lock guards nothing */
}

static void test_lock_missing_root(void **state)
{
	char err[256] = "";

	(void)state;
	assert_int_equal(pins_lock("/tmp/test_pins_lock.does-not-exist", err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot open"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lock_kept_root),
	    cmocka_unit_test(test_lock_removed_root),
	    cmocka_unit_test(test_lock_replaced_root),
	    cmocka_unit_test(test_lock_missing_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

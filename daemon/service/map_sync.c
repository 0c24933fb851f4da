// SPDX-License-Identifier: BSD-2-Clause
/* Keeping a service's map fds the pinned maps (map_sync.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "map_sync.h"
#include "loader/pins.h"

int pinned_map_track(const char *root, struct pinned_map *m, int fd)
{
	char path[PATH_MAX];
	char err[256];
	struct stat st;
	int r = pins_check_layout(fd, m->name, m->type, m->value_size, &m->id, err, sizeof(err));

	if (r && r != -EPROTO)
		return r; /* a map of another layout is tracked: sync says so on use */
	m->fd = fd;
	pins_path(path, sizeof(path), root, NULL, m->name);
	m->ino = stat(path, &st) == 0 ? st.st_ino : 0;
	return 0;
}

/* The pin is gone: put ours back, serialised with attach/detach by the pin lock. */
static int repin(const char *root, struct pinned_map *m, const char *path, char *note,
		 size_t notelen)
{
	char err[256];
	struct stat st;
	int lock, r = 0;

	if ((lock = pins_prepare_lock(root, err, sizeof(err))) < 0) {
		snprintf(note, notelen, "cannot pin %s again: %s", m->name, err);
		return -EIO;
	}
	if (stat(path, &st) == 0) {
		close(lock); /* someone pinned one meanwhile: the next sync looks at it */
		return 0;
	}
	if (bpf_obj_pin(m->fd, path)) {
		r = -errno;
		snprintf(note, notelen, "cannot pin %s at %s again: %s", m->name, path,
			 strerror(-r));
	} else if (stat(path, &st) == 0) {
		m->ino = st.st_ino;
		snprintf(note, notelen,
			 "%s was unpinned (last interface detached); pinned map %u there again so "
			 "that the next attach reads its tags",
			 path, m->id);
	}
	close(lock);
	return r;
}

int pinned_map_sync(const char *root, struct pinned_map *m, char *note, size_t notelen)
{
	char path[PATH_MAX];
	uint32_t id = 0;
	struct stat st;
	int fd, r;

	note[0] = '\0';
	pins_path(path, sizeof(path), root, NULL, m->name);
	if (stat(path, &st)) {
		if (errno != ENOENT) {
			snprintf(note, notelen, "cannot stat %s: %s", path, strerror(errno));
			return -errno;
		}
		return repin(root, m, path, note, notelen);
	}
	if (st.st_ino == m->ino)
		return 0;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		snprintf(note, notelen, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	r = pins_check_layout(fd, path, m->type, m->value_size, &id, note, notelen);
	if (r == -EPROTO) {
		size_t n = strlen(note);

		snprintf(note + n, notelen - n,
			 " now: stop whoever pinned it, or run the matching mercuryd");
	}
	if (r) {
		close(fd);
		return r;
	}
	m->ino = st.st_ino;
	if (id == m->id) { /* ours, pinned again */
		close(fd);
		return 0;
	}
	snprintf(note, notelen, "%s is another map now (id %u, was %u): using it", path, id, m->id);
	close(m->fd);
	m->fd = fd;
	m->id = id;
	return 0;
}

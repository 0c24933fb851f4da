/* libmercury: framing, fd passing and one request at a time per client. */
#include <endian.h>
#include <limits.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mercury.h"
#include "mercury_wire.h"

#define API __attribute__((visibility("default")))

struct mercury_client {
	int fd;
	uint32_t seq;
	pthread_mutex_t lock;
};

_Static_assert(MERCURY_MAX_BATCH == MW_MAX_BATCH, "batch limits differ");

API int mercury_connect(const char *path, struct mercury_client **out)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct mercury_client *c;

	if (!out)
		return -EINVAL;
	if (!path)
		path = getenv("MERCURY_SOCKET");
	if (!path)
		path = MERCURY_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		int r = -errno;

		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return r;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

API void mercury_disconnect(struct mercury_client *c)
{
	if (!c)
		return;
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void hdr_init(struct mw_hdr *h, uint16_t type, size_t len)
{
	h->len = htole32((uint32_t)len);
	h->version = htole16(MW_VERSION);
	h->type = htole16(type);
	h->reserved = 0;
}

/* Sends one frame (with sock_fd as SCM_RIGHTS if >= 0) and waits for its reply. */
static int request(struct mercury_client *c, void *frame, size_t len, int sock_fd,
		   struct mw_reply *reply)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = frame, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct mw_hdr *h = frame;
	ssize_t n;
	int r = 0;

	if (!c)
		return -EINVAL;
	if (sock_fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sock_fd, sizeof(int));
	}
	pthread_mutex_lock(&c->lock);
	h->seq = htole32(++c->seq);
	do
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = -errno;
		goto out;
	}
	do
		n = recv(c->fd, reply, sizeof(*reply), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r = -errno;
	else if (n == 0)
		r = -ECONNRESET; /* the daemon went away */
	else if ((size_t)n != sizeof(*reply) || le32toh(reply->h.seq) != c->seq)
		r = -EPROTO;
	else
		r = (int32_t)le32toh((uint32_t)reply->status);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

API int mercury_job_declare(struct mercury_client *c, uint32_t job, uint32_t n_layers,
			    uint32_t weight)
{
	struct mw_job_declare f = {
	    .job = htole32(job), .n_layers = htole32(n_layers), .weight = htole32(weight)};
	struct mw_reply reply;

	hdr_init(&f.h, MW_JOB_DECLARE, sizeof(f));
	return request(c, &f, sizeof(f), -1, &reply);
}

static int iteration_event(struct mercury_client *c, uint16_t type, uint32_t job,
			   uint64_t iteration)
{
	struct mw_iter f = {.job = htole32(job), .iteration = htole64(iteration)};
	struct mw_reply reply;

	hdr_init(&f.h, type, sizeof(f));
	return request(c, &f, sizeof(f), -1, &reply);
}

API int mercury_iteration_begin(struct mercury_client *c, uint32_t job, uint64_t iteration)
{
	return iteration_event(c, MW_ITER_BEGIN, job, iteration);
}

API int mercury_iteration_end(struct mercury_client *c, uint32_t job, uint64_t iteration)
{
	return iteration_event(c, MW_ITER_END, job, iteration);
}

API int mercury_register_socket(struct mercury_client *c, int fd)
{
	struct mw_register f;
	struct mw_reply reply;

	if (fd < 0)
		return -EBADF;
	hdr_init(&f.h, MW_REGISTER, sizeof(f));
	return request(c, &f, sizeof(f), fd, &reply);
}

static int tag(struct mercury_client *c, int fd, uint32_t job, uint64_t offset,
	       const struct mercury_tensor *t, unsigned n)
{
	struct {
		struct mw_tag tag;
		struct mw_tensor t[MW_MAX_BATCH];
	} f;
	struct mw_reply reply;
	size_t len = sizeof(struct mw_tag) + n * sizeof(struct mw_tensor);

	if (fd < 0)
		return -EBADF;
	if (!t || n == 0 || n > MW_MAX_BATCH)
		return -EINVAL;
	memset(&f.tag, 0, sizeof(f.tag));
	f.tag.job = htole32(job);
	f.tag.count = htole32(n);
	f.tag.offset = htole64(offset);
	for (unsigned i = 0; i < n; i++)
		f.t[i] = (struct mw_tensor){.len = htole64(t[i].len),
					    .layer = htole32(t[i].layer),
					    .dir = htole32(t[i].dir),
					    .iteration = htole64(t[i].iteration)};
	hdr_init(&f.tag.h, MW_TAG, len);
	return request(c, &f, len, fd, &reply);
}

API int mercury_tag_batch(struct mercury_client *c, int fd, uint32_t job,
			  const struct mercury_tensor *t, unsigned n)
{
	return tag(c, fd, job, MW_OFFSET_NEXT, t, n);
}

API int mercury_tag_next(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
			 enum mercury_dir dir, uint64_t iteration, uint64_t len)
{
	struct mercury_tensor t = {.len = len, .layer = layer, .dir = dir, .iteration = iteration};

	return tag(c, fd, job, MW_OFFSET_NEXT, &t, 1);
}

API int mercury_tag_range(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
			  enum mercury_dir dir, uint64_t iteration, uint64_t offset, uint64_t len)
{
	struct mercury_tensor t = {.len = len, .layer = layer, .dir = dir, .iteration = iteration};

	if (offset == MW_OFFSET_NEXT)
		return -EINVAL;
	return tag(c, fd, job, offset, &t, 1);
}

API ssize_t mercury_send_tensor(struct mercury_client *c, int fd, const void *buf, size_t len,
				uint32_t job, uint32_t layer, enum mercury_dir dir,
				uint64_t iteration)
{
	const char *p = buf;
	size_t done = 0;
	int r;

	if (len == 0)
		return 0; /* nothing to tag or write */
	if (!buf || len > SSIZE_MAX)
		return -EINVAL;
	r = mercury_tag_next(c, fd, job, layer, dir, iteration, len);
	if (r)
		return r;
	while (done < len) {
		ssize_t n = send(fd, p + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* A non-blocking socket: the bytes are tagged already, so wait and
			 * finish rather than return with part of the tensor unwritten. */
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return (ssize_t)len;
}

API int mercury_socket_stats(struct mercury_client *c, int fd, struct mercury_socket_stats *out)
{
	struct mw_stats_req f;
	struct mw_reply reply;
	int r;

	if (!out)
		return -EINVAL;
	hdr_init(&f.h, MW_STATS, sizeof(f));
	r = request(c, &f, sizeof(f), fd, &reply);
	if (r)
		return r;
	for (int i = 0; i < 16; i++) {
		out->bytes[i] = le64toh(reply.bytes[i]);
		out->packets[i] = le64toh(reply.packets[i]);
	}
	return 0;
}

API const char *mercury_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENOENT:
		return "no mercuryd socket at that path (is `mercuryd serve` running? is "
		       "MERCURY_SOCKET right?)";
	case -ECONNREFUSED:
		return "mercuryd is not accepting connections (not running, or too many clients)";
	case -EACCES:
		return "permission denied on the mercuryd socket (the user must be in group "
		       "mercury)";
	case -ESRCH:
		return "job not declared by this user (call mercury_job_declare first)";
	case -ERANGE:
		return "layer outside 1..n_layers of the job";
	case -EEXIST:
		return "the range overlaps or precedes the socket's last tag (tags on a socket "
		       "go forward)";
	case -EINVAL:
		return "invalid argument (a length of 0, a direction other than push/pull, a "
		       "count or weight out of range)";
	case -ENOSPC:
		return "the socket has 32 unacknowledged tagged ranges (or 64 jobs are declared)";
	case -EPROTOTYPE:
		return "not a TCP socket";
	case -ENOTSOCK:
		return "not a socket";
	case -ENOTCONN:
		return "the socket is not connected";
	case -EPERM:
		return "the socket belongs to another user";
	case -EBADF:
		return "bad or missing socket fd";
	case -E2BIG:
		return "more than one socket fd with one request";
	case -EPROTO:
		return "protocol version or framing mismatch with mercuryd";
	case -EBADMSG:
		return "malformed frame";
	case -ESTALE:
		return "mercuryd cannot reach the pinned tag map the classifier reads (its log "
		       "says why); nothing was tagged";
	case -EMSGSIZE:
		return "frame too large";
	case -EOPNOTSUPP:
		return "request type unknown to this mercuryd";
	case -ECONNRESET:
		return "mercuryd closed the connection";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}

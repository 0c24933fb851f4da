// SPDX-License-Identifier: BSD-2-Clause
/* Event frame decoder: every field checked before the daemon acts on it. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "wire_decode.h"

bool mw_type_takes_fd(uint16_t type)
{
	return type == MW_REGISTER || type == MW_TAG || type == MW_STATS;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static int decode_tag(const uint8_t *p, size_t n, struct mw_msg *m)
{
	uint64_t end;

	if (n < sizeof(struct mw_tag))
		return -EBADMSG;
	m->tag.job = rd32(p + offsetof(struct mw_tag, job));
	m->tag.count = rd32(p + offsetof(struct mw_tag, count));
	m->tag.offset = rd64(p + offsetof(struct mw_tag, offset));
	if (m->tag.count == 0 || m->tag.count > MW_MAX_BATCH)
		return -EINVAL;
	if (n != sizeof(struct mw_tag) + m->tag.count * sizeof(struct mw_tensor))
		return -EBADMSG;
	end = m->tag.offset == MW_OFFSET_NEXT ? 0 : m->tag.offset;
	for (uint32_t i = 0; i < m->tag.count; i++) {
		const uint8_t *t = p + sizeof(struct mw_tag) + i * sizeof(struct mw_tensor);
		struct mw_tensor *o = &m->tag.t[i];

		o->len = rd64(t + offsetof(struct mw_tensor, len));
		o->layer = rd32(t + offsetof(struct mw_tensor, layer));
		o->dir = rd32(t + offsetof(struct mw_tensor, dir));
		o->iteration = rd64(t + offsetof(struct mw_tensor, iteration));
		if (o->len == 0 || o->dir > 1 || o->layer == 0 || o->layer > MW_MAX_LAYERS)
			return -EINVAL;
		if (end + o->len < end) /* the batch would run past 2^64 */
			return -EINVAL;
		end += o->len;
	}
	return 0;
}

int mw_decode(const void *buf, size_t n, bool has_fd, struct mw_msg *m)
{
	const uint8_t *p = buf;
	uint32_t len;
	uint16_t version;

	memset(m, 0, offsetof(struct mw_msg, tag));
	if (n < sizeof(struct mw_hdr))
		return -EBADMSG;
	len = rd32(p);
	memcpy(&version, p + offsetof(struct mw_hdr, version), sizeof(version));
	memcpy(&m->type, p + offsetof(struct mw_hdr, type), sizeof(m->type));
	version = le16toh(version);
	m->type = le16toh(m->type);
	m->seq = rd32(p + offsetof(struct mw_hdr, seq));
	if (n > MW_MAX_FRAME || len > MW_MAX_FRAME)
		return -EMSGSIZE;
	if (len != n)
		return -EBADMSG;
	if (version != MW_VERSION)
		return -EPROTO;
	if (rd32(p + offsetof(struct mw_hdr, reserved)) != 0)
		return -EINVAL;
	switch (m->type) {
	case MW_JOB_DECLARE:
	case MW_ITER_BEGIN:
	case MW_ITER_END:
	case MW_REGISTER:
	case MW_TAG:
	case MW_STATS:
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (mw_type_takes_fd(m->type) && !has_fd)
		return -EBADF;
	if (!mw_type_takes_fd(m->type) && has_fd)
		return -EINVAL;

	switch (m->type) {
	case MW_JOB_DECLARE:
		if (n != sizeof(struct mw_job_declare))
			return -EBADMSG;
		m->job.job = rd32(p + offsetof(struct mw_job_declare, job));
		m->job.n_layers = rd32(p + offsetof(struct mw_job_declare, n_layers));
		m->job.weight = rd32(p + offsetof(struct mw_job_declare, weight));
		if (m->job.n_layers == 0 || m->job.n_layers > MW_MAX_LAYERS || m->job.weight == 0 ||
		    m->job.weight > MW_MAX_WEIGHT ||
		    rd32(p + offsetof(struct mw_job_declare, reserved)))
			return -EINVAL;
		return 0;
	case MW_ITER_BEGIN:
	case MW_ITER_END:
		if (n != sizeof(struct mw_iter))
			return -EBADMSG;
		m->iter.job = rd32(p + offsetof(struct mw_iter, job));
		m->iter.iteration = rd64(p + offsetof(struct mw_iter, iteration));
		return rd32(p + offsetof(struct mw_iter, reserved)) ? -EINVAL : 0;
	case MW_REGISTER:
	case MW_STATS:
		return n == sizeof(struct mw_hdr) ? 0 : -EBADMSG;
	default: /* MW_TAG */
		return decode_tag(p, n, m);
	}
}

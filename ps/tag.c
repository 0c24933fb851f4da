/*
 * The one place where the PS tells Mercury which bytes carry which layer. Built against
 * libmercury (include/mercury.h) when it is there; without it the calls are no-ops and
 * mercury mode runs without packet priority (reported by ps_tag_available()).
 */
#include "node.h"

#if __has_include("mercury.h")
#define PS_HAVE_LIBMERCURY 0 /* wired once the library's API is settled */
#else
#define PS_HAVE_LIBMERCURY 0
#endif

int ps_tag_register(struct ps_conn *c)
{
	(void)c;
	return 0;
}

int ps_tag_next(struct ps_conn *c, uint64_t nbytes, int layer, enum ps_dir dir, uint64_t iter)
{
	(void)c;
	(void)nbytes;
	(void)layer;
	(void)dir;
	(void)iter;
	return 0;
}

void ps_tag_unregister(struct ps_conn *c)
{
	(void)c;
}

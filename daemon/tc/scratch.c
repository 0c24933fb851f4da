// SPDX-License-Identifier: BSD-2-Clause
/* A scratch veth in a scratch network namespace, in a forked child (scratch.h). */
#include "scratch.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/wait.h>

#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>

static int scratch_veth(unsigned num_tx_queues, char *err, size_t errlen)
{
	struct rtnl_link *link = rtnl_link_veth_alloc(), *peer, *now = NULL, *up;
	struct nl_sock *sk = nl_socket_alloc();
	int rc = -ENOMEM;

	if (!link || !sk)
		goto out;
	rc = nl_connect(sk, NETLINK_ROUTE);
	if (rc < 0)
		goto nlerr;
	peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, "mqscratch0");
	rtnl_link_set_num_tx_queues(link, num_tx_queues ? num_tx_queues : 1);
	rtnl_link_set_name(peer, "mqscratch1");
	rtnl_link_put(peer);
	rc = rtnl_link_add(sk, link, NLM_F_CREATE | NLM_F_EXCL);
	if (rc == 0)
		rc = rtnl_link_get_kernel(sk, 0, "mqscratch0", &now);
	if (rc < 0)
		goto nlerr;
	up = rtnl_link_alloc();
	rc = -ENOMEM;
	if (up) {
		rtnl_link_set_flags(up, IFF_UP);
		rc = rtnl_link_change(sk, now, up, 0);
		rtnl_link_put(up);
	}
	if (rc == 0)
		rc = rtnl_link_get_ifindex(now);
	if (rc >= 0)
		goto out;
nlerr:
	snprintf(err, errlen, "cannot make a scratch veth: %s", nl_geterror(rc));
	rc = -EIO;
out:
	if (now)
		rtnl_link_put(now);
	if (link)
		rtnl_link_veth_release(link);
	if (sk)
		nl_socket_free(sk);
	return rc;
}

int scratch_run(unsigned num_tx_queues, int (*fn)(int ifindex, void *arg, char *msg, size_t msglen),
		void *arg, char *msg, size_t msglen)
{
	int fds[2], status = 0;
	ssize_t got = 0;
	pid_t pid;

	if (msglen)
		msg[0] = '\0';
	if (pipe(fds)) {
		snprintf(msg, msglen, "cannot make a scratch device: pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(msg, msglen, "cannot make a scratch device: fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -EAGAIN;
	}
	if (pid == 0) {
		char out[1024] = "";
		int rc, ifindex;

		close(fds[0]);
		if (unshare(CLONE_NEWNET)) {
			snprintf(out, sizeof(out), "cannot make a scratch network namespace: %s",
				 strerror(errno));
			rc = -errno;
		} else if ((ifindex = scratch_veth(num_tx_queues, out, sizeof(out))) < 0) {
			rc = ifindex;
		} else {
			rc = fn(ifindex, arg, out, sizeof(out));
		}
		if (write(fds[1], out, strlen(out)) < 0)
			rc = rc ? rc : -EIO;
		_exit(rc < 0 ? (-rc & 0xff) : 0);
	}
	close(fds[1]);
	if (msglen) {
		got = read(fds[0], msg, msglen - 1);
		msg[got > 0 ? got : 0] = '\0';
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		return -WEXITSTATUS(status);
	return -EIO;
}

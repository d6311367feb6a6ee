/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A vRNIC's address on the underlay.  With --underlay DEV, a vRNIC's GID
 * (::ffff:a.b.c.d) is a RoCE GID like any other: its address a.b.c.d is put
 * on DEV as a /32, so the kernel answers ARP for it and delivers UDP 4791
 * to the daemon's socket, and the engine sends from it.  One rtnetlink
 * request each way; an address already there (the operator's) is used and
 * left in place. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

static int addr_request(const char *dev, uint32_t ip, bool add)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		char attrs[64];
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char ack[256];
	struct rtattr *rta;
	unsigned int ifindex = if_nametoindex(dev);
	int fd, ret = 0;
	ssize_t n;

	if (!ifindex)
		return -ENODEV;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	req.nh.nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0);
	req.nh.nlmsg_seq = 1;
	req.ifa.ifa_family = AF_INET;
	req.ifa.ifa_prefixlen = 32;
	req.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	req.ifa.ifa_index = ifindex;
	for (int t = 0; t < 2; t++) {
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = t ? IFA_ADDRESS : IFA_LOCAL;
		rta->rta_len = RTA_LENGTH(4);
		memcpy(RTA_DATA(rta), &ip, 4);
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
	} else {
		n = recv(fd, ack, sizeof(ack), 0);
		if (n < 0) {
			ret = -errno;
		} else if ((size_t)n >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
			struct nlmsghdr *h = (struct nlmsghdr *)ack;

			if (h->nlmsg_type == NLMSG_ERROR)
				ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
	close(fd);
	return ret;
}

int underlay_addr_add(struct urd_vrnic *vr)
{
	const char *dev = engine_wire_dev(vr->d);
	int ret;

	if (!dev)
		return 0;
	ret = addr_request(dev, vr->vip, true);
	if (ret == -EEXIST)
		return 0;               /* the operator's: stays */
	if (ret) {
		log_warn("vrnic %s: cannot add %s/32 to %s: %s", vr->name, inet_ntoa((struct in_addr){ vr->vip }),
			 dev, strerror(-ret));
		return ret;
	}
	vr->underlay_addr = true;
	return 0;
}

void underlay_addr_del(struct urd_vrnic *vr)
{
	const char *dev = engine_wire_dev(vr->d);
	int ret;

	if (!dev || !vr->underlay_addr)
		return;
	ret = addr_request(dev, vr->vip, false);
	if (ret)
		log_warn("vrnic %s: cannot remove its address from %s: %s", vr->name, dev, strerror(-ret));
	vr->underlay_addr = false;
}

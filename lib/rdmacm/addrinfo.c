/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* addrinfo.c: rdma_getaddrinfo / rdma_freeaddrinfo over getaddrinfo(3).
 * vRNICs speak RoCE v2 over IPv4, so without a family in the hints an
 * IPv4 answer is preferred (a passive wildcard is 0.0.0.0, not ::). */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"

static struct sockaddr *dup_sa(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *d = malloc(len);

	if (d)
		memcpy(d, sa, len);
	return d;
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct addrinfo ah, *ai = NULL;
	struct rdma_addrinfo *r;
	int ret, flags = hints ? hints->ai_flags : 0;

	if (!res || (!node && !service && !(hints && (hints->ai_src_addr || hints->ai_dst_addr)))) {
		errno = EINVAL;
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return EAI_MEMORY;
	}
	r->ai_flags = flags;
	r->ai_port_space = hints ? hints->ai_port_space : 0;
	r->ai_qp_type = hints ? hints->ai_qp_type : 0;
	if (!r->ai_port_space)
		r->ai_port_space = r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	if (!r->ai_qp_type)
		r->ai_qp_type = r->ai_port_space == RDMA_PS_UDP || r->ai_port_space == RDMA_PS_IPOIB ?
				IBV_QPT_UD : IBV_QPT_RC;
	if (node || service) {
		memset(&ah, 0, sizeof(ah));
		ah.ai_socktype = SOCK_STREAM;
		ah.ai_family = hints ? hints->ai_family : AF_UNSPEC;
		if (ah.ai_family == AF_UNSPEC && !(node && strchr(node, ':')))
			ah.ai_family = AF_INET;
		if (flags & RAI_PASSIVE)
			ah.ai_flags |= AI_PASSIVE;
		if (flags & RAI_NUMERICHOST)
			ah.ai_flags |= AI_NUMERICHOST;
		ret = getaddrinfo(node, service, &ah, &ai);
		if (ret) {
			free(r);
			return ret;
		}
		r->ai_family = ai->ai_family;
		if (flags & RAI_PASSIVE) {
			r->ai_src_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
			r->ai_src_len = ai->ai_addrlen;
		} else {
			r->ai_dst_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
			r->ai_dst_len = ai->ai_addrlen;
		}
		freeaddrinfo(ai);
		if (!r->ai_src_addr && !r->ai_dst_addr)
			goto nomem;
	}
	if (hints && hints->ai_src_addr && !r->ai_src_addr) {
		r->ai_src_len = sa_len(hints->ai_src_addr);
		r->ai_src_addr = dup_sa(hints->ai_src_addr, r->ai_src_len);
		if (!r->ai_src_addr)
			goto nomem;
		if (!r->ai_family)
			r->ai_family = hints->ai_src_addr->sa_family;
	}
	if (hints && hints->ai_dst_addr && !r->ai_dst_addr) {
		r->ai_dst_len = sa_len(hints->ai_dst_addr);
		r->ai_dst_addr = dup_sa(hints->ai_dst_addr, r->ai_dst_len);
		if (!r->ai_dst_addr)
			goto nomem;
		if (!r->ai_family)
			r->ai_family = hints->ai_dst_addr->sa_family;
	}
	*res = r;
	return 0;
nomem:
	rdma_freeaddrinfo(r);
	errno = ENOMEM;
	return EAI_MEMORY;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *n;

	for (; res; res = n) {
		n = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}

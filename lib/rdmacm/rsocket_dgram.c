/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rsocket_dgram.c: datagram rsockets (SOCK_DGRAM) over UD QPs, as rdma-core
 * runs them (the wire format is in rsocket.h).
 *
 * Each rsocket has a real UDP socket (its descriptor) and one UD QP per
 * local address it sends from.  A datagram to a peer whose QP number is not
 * known yet goes over UDP with a struct ds_udp_header naming our QP; the
 * receiver answers with its own QP number (RS_OP_CTRL over UDP), and both
 * make an address handle: from then on datagrams are UD SENDs that begin
 * with a struct ds_header.  rdma-core runs that exchange in a service
 * thread; here the UDP socket is read whenever the rsocket progresses
 * (every call and rpoll), and it is in the epoll set a blocking call sleeps
 * on, so nothing waits for it.  A datagram that came over UDP is queued for
 * the program directly (rdma-core loops it back through its own QP). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <rdma/rsocket.h>

#include "rsocket.h"

#define GRH_LEN 40

static socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
	}
	return false;
}

int ds_socket(struct rsock *rs, int domain, int type)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	rs->udp_sock = socket(domain, SOCK_DGRAM | (type & SOCK_CLOEXEC), 0);
	if (rs->udp_sock < 0)
		return errno;
	rs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (rs->epfd < 0)
		return errno;
	if (epoll_ctl(rs->epfd, EPOLL_CTL_ADD, rs->udp_sock, &ev))
		return errno;
	return 0;
}

static int dmsg_cap(struct rsock *rs) { return 2 * rs->rq_size + 2; }
static bool dmsg_full(struct rsock *rs) { return (rs->rmsg_tail + 1) % dmsg_cap(rs) == rs->rmsg_head; }
static bool have_dmsg(struct rsock *rs) { return rs->rmsg_head != rs->rmsg_tail; }

/* The send slots and receive ring, on first use (rdma-core's sizes:
 * RS_SNDLOWAT bytes a datagram, the buffers bound the queue depths). */
static int ds_init_ep(struct rsock *rs)
{
	int i;

	if (rs->dsbuf)
		return 0;
	if (rs->sq_size > RS_QP_MAX_SIZE)
		rs->sq_size = RS_QP_MAX_SIZE;
	if (rs->rq_size > RS_QP_MAX_SIZE)
		rs->rq_size = RS_QP_MAX_SIZE;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / RS_SNDLOWAT);
	else
		rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / RS_SNDLOWAT);
	else
		rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	if (!rs->sq_size || !rs->rq_size)
		return rs_err(EINVAL);
	rs->dsbuf = calloc(rs->sq_size, RS_SNDLOWAT);
	rs->dsfree = calloc(rs->sq_size, sizeof(*rs->dsfree));
	rs->dmsg = calloc((size_t)dmsg_cap(rs), sizeof(*rs->dmsg));
	if (!rs->dsbuf || !rs->dsfree || !rs->dmsg)
		return rs_err(ENOMEM);
	for (i = 0; i < rs->sq_size; i++)
		rs->dsfree[i] = (uint32_t)i;
	rs->dsfree_n = rs->sq_size;
	rs->sqe_avail = rs->sq_size;
	rs->rqe_avail = rs->rq_size;
	rs->state = RS_READABLE | RS_WRITABLE;
	return 0;
}

static int ds_post_recv(struct ds_qp *qp, uint32_t off)
{
	struct rsock *rs = qp->rs;
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)qp->rbuf + rs->rbuf_size, .length = GRH_LEN, .lkey = qp->rmr->lkey },
		{ .addr = (uintptr_t)qp->rbuf + off, .length = RS_SNDLOWAT, .lkey = qp->rmr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV | off, .sg_list = sge, .num_sge = 2 }, *bad;

	return ibv_post_recv(qp->id->qp, &wr, &bad);
}

static void ds_format_hdr(struct ds_header *h, const struct sockaddr *sa)
{
	memset(h, 0, sizeof(*h));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		h->version = 4;
		h->length = DS_IPV4_HDR_LEN;
		h->port = s->sin_port;
		h->addr.ipv4 = s->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *s = (const void *)sa;

		h->version = 6;
		h->length = DS_IPV6_HDR_LEN;
		h->port = s->sin6_port;
		h->addr.ipv6.flowinfo = s->sin6_flowinfo;
		memcpy(h->addr.ipv6.addr, &s->sin6_addr, 16);
	}
}

static void ds_free_qp(struct rsock *rs, struct ds_qp *qp)
{
	if (qp->cch && rs->epfd >= 0)
		epoll_ctl(rs->epfd, EPOLL_CTL_DEL, qp->cch->fd, NULL);
	if (qp->id && qp->id->qp)
		rdma_destroy_qp(qp->id);
	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rmr)
		ibv_dereg_mr(qp->rmr);
	free(qp->rbuf);
	if (qp->cq)
		ibv_destroy_cq(qp->cq);
	if (qp->cch)
		ibv_destroy_comp_channel(qp->cch);
	if (qp->id)
		rdma_destroy_id(qp->id);
	free(qp);
}

/* The UD QP of local address src: made on first use.  0 or -1 with errno. */
static int ds_get_qp(struct rsock *rs, const struct sockaddr *src, struct ds_qp **out)
{
	struct ibv_qp_init_attr qa;
	struct epoll_event ev = { .events = EPOLLIN };
	struct ds_qp *qp;
	uint32_t i;
	int e;

	for (qp = rs->qps; qp; qp = qp->next)
		if (same_addr((struct sockaddr *)&qp->src, src)) {
			*out = qp;
			return 0;
		}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return rs_err(ENOMEM);
	qp->rs = rs;
	memcpy(&qp->src, src, addr_len(src));
	ds_format_hdr(&qp->hdr, src);
	if (rdma_create_id(NULL, &qp->id, qp, RDMA_PS_UDP) ||
	    rdma_bind_addr(qp->id, (struct sockaddr *)src))
		goto fail;
	qp->cch = ibv_create_comp_channel(qp->id->verbs);
	if (!qp->cch || fcntl(qp->cch->fd, F_SETFL, O_NONBLOCK))
		goto fail;
	qp->cq = ibv_create_cq(qp->id->verbs, rs->sq_size + rs->rq_size, qp, qp->cch, 0);
	if (!qp->cq)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = qp;
	qa.send_cq = qp->cq;
	qa.recv_cq = qp->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(qp->id, NULL, &qa))
		goto fail;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	qp->rbuf = calloc(1, rs->rbuf_size + GRH_LEN);
	if (!qp->rbuf) {
		errno = ENOMEM;
		goto fail;
	}
	qp->rmr = ibv_reg_mr(qp->id->pd, qp->rbuf, rs->rbuf_size + GRH_LEN, IBV_ACCESS_LOCAL_WRITE);
	qp->smr = ibv_reg_mr(qp->id->pd, rs->dsbuf, rs->sbuf_size, IBV_ACCESS_LOCAL_WRITE);
	if (!qp->rmr || !qp->smr)
		goto fail;
	for (i = 0; i < rs->rq_size; i++) {
		e = ds_post_recv(qp, i * RS_SNDLOWAT);
		if (e) {
			errno = e;
			goto fail;
		}
	}
	ev.data.ptr = qp;
	if (epoll_ctl(rs->epfd, EPOLL_CTL_ADD, qp->cch->fd, &ev))
		goto fail;
	qp->next = rs->qps;
	rs->qps = qp;
	*out = qp;
	return 0;
fail:
	e = errno ? errno : ENOMEM;
	ds_free_qp(rs, qp);
	return rs_err(e);
}

/* Our address toward dst: the UDP socket's, or the routed one if it is
 * bound to a wildcard (the port stays the socket's). */
static int ds_src_addr(struct rsock *rs, const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	struct sockaddr_storage any;
	in_port_t port;
	int s, ret;

	if (getsockname(rs->udp_sock, (struct sockaddr *)src, &len))
		return -1;
	port = src->ss_family == AF_INET ? ((struct sockaddr_in *)src)->sin_port :
					   ((struct sockaddr_in6 *)src)->sin6_port;
	if (!port) {
		memset(&any, 0, sizeof(any));
		any.ss_family = src->ss_family;
		if (bind(rs->udp_sock, (struct sockaddr *)&any, addr_len((struct sockaddr *)&any)))
			return -1;
		len = sizeof(*src);
		if (getsockname(rs->udp_sock, (struct sockaddr *)src, &len))
			return -1;
	}
	if (src->ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)src;

		if (sin->sin_addr.s_addr != htonl(INADDR_ANY) && sin->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
			return 0;
		port = sin->sin_port;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)src;

		if (memcmp(&sin6->sin6_addr, &in6addr_any, 16) && memcmp(&sin6->sin6_addr, &in6addr_loopback, 16))
			return 0;
		port = sin6->sin6_port;
	}
	s = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	ret = connect(s, dst, addr_len(dst));
	len = sizeof(*src);
	if (!ret)
		ret = getsockname(s, (struct sockaddr *)src, &len);
	close(s);
	if (src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = port;
	else
		((struct sockaddr_in6 *)src)->sin6_port = port;
	return ret;
}

static int ds_get_dest(struct rsock *rs, const struct sockaddr *addr, struct ds_dest **out)
{
	struct sockaddr_storage src;
	struct ds_dest *d;
	struct ds_qp *qp = NULL;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return rs_err(EAFNOSUPPORT);
	for (d = rs->dests; d; d = d->next)
		if (same_addr((struct sockaddr *)&d->addr, addr)) {
			*out = d;
			return 0;
		}
	if (ds_src_addr(rs, addr, &src) || ds_get_qp(rs, (struct sockaddr *)&src, &qp))
		return -1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return rs_err(ENOMEM);
	memcpy(&d->addr, addr, addr_len(addr));
	d->qp = qp;
	d->next = rs->dests;
	rs->dests = d;
	*out = d;
	return 0;
}

/* RoCE: the GID of an IPv4 address is ::ffff:a.b.c.d. */
static void gid_of(union ibv_gid *g, const struct sockaddr *sa)
{
	memset(g, 0, sizeof(*g));
	if (sa->sa_family == AF_INET) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(g->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

static void ds_make_ah(struct ds_dest *d, uint32_t qpn)
{
	struct ds_qp *qp = d->qp;
	struct ibv_ah_attr a;
	union ibv_gid sgid, g;
	uint8_t port = qp->id->port_num ? qp->id->port_num : 1;
	int i;

	if (d->ah) {
		ibv_destroy_ah(d->ah);
		d->ah = NULL;
	}
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	gid_of(&a.grh.dgid, (struct sockaddr *)&d->addr);
	gid_of(&sgid, (struct sockaddr *)&qp->src);
	for (i = 0; i < 16; i++)
		if (!ibv_query_gid(qp->id->verbs, port, i, &g) && !memcmp(&g, &sgid, sizeof(g))) {
			a.grh.sgid_index = (uint8_t)i;
			break;
		}
	a.grh.hop_limit = 64;
	a.port_num = port;
	d->qpn = qpn;
	d->ah = ibv_create_ah(qp->id->pd, &a);
}

static ssize_t ds_send_udp(struct rsock *rs, struct ds_dest *d, const void *buf, size_t len,
			   int flags, uint8_t op)
{
	struct ds_udp_header h;
	struct iovec iov[2];
	struct msghdr m;
	ssize_t ret;

	memset(&h, 0, sizeof(h));
	h.tag = htobe32(DS_UDP_TAG);
	h.version = d->qp->hdr.version;
	h.op = op;
	h.qpn = htobe32(d->qp->id->qp->qp_num & 0xffffff);
	if (h.version == 4) {
		h.length = DS_UDP_IPV4_HDR_LEN;
		h.addr.ipv4 = d->qp->hdr.addr.ipv4;
	} else {
		h.length = DS_UDP_IPV6_HDR_LEN;
		memcpy(h.addr.ipv6, d->qp->hdr.addr.ipv6.addr, 16);
	}
	iov[0].iov_base = &h;
	iov[0].iov_len = h.length;
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	memset(&m, 0, sizeof(m));
	m.msg_name = &d->addr;
	m.msg_namelen = addr_len((struct sockaddr *)&d->addr);
	m.msg_iov = iov;
	m.msg_iovlen = buf && len ? 2 : 1;
	ret = sendmsg(rs->udp_sock, &m, flags & ~MSG_DONTWAIT);
	return ret > 0 ? ret - h.length : ret;
}

/* Reads what came over UDP: QP numbers to make address handles with, and
 * datagrams sent before the sender knew ours (answered with our number). */
static void ds_udp_drain(struct rsock *rs)
{
	uint8_t buf[RS_SNDLOWAT + DS_UDP_IPV6_HDR_LEN];
	struct sockaddr_storage from;

	for (;;) {
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(rs->udp_sock, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
		struct ds_udp_header *h = (struct ds_udp_header *)buf;
		struct ds_dest *d;
		uint32_t qpn;

		if (n < 0)
			return;
		if (n < DS_UDP_IPV4_HDR_LEN || h->tag != htobe32(DS_UDP_TAG) ||
		    !((h->version == 4 && from.ss_family == AF_INET && h->length == DS_UDP_IPV4_HDR_LEN) ||
		      (h->version == 6 && from.ss_family == AF_INET6 && h->length == DS_UDP_IPV6_HDR_LEN)) ||
		    n < h->length)
			continue;
		qpn = be32toh(h->qpn) & 0xffffff;
		if (!rs->dsbuf || ds_get_dest(rs, (struct sockaddr *)&from, &d))
			continue;
		if (h->op == RS_OP_DATA)
			ds_send_udp(rs, d, NULL, 0, 0, RS_OP_CTRL);
		if (!d->ah || d->qpn != qpn)
			ds_make_ah(d, qpn);
		if (h->op == RS_OP_DATA && !dmsg_full(rs)) {
			struct ds_rmsg *m = &rs->dmsg[rs->rmsg_tail];
			size_t len = (size_t)n - h->length;

			m->qp = NULL;
			m->udp_data = malloc(len ? len : 1);
			if (!m->udp_data)
				continue;
			memcpy(m->udp_data, buf + h->length, len);
			m->length = (uint32_t)len;
			m->offset = 0;
			memcpy(&m->udp_src, &from, sizeof(from));
			rs->rmsg_tail = (rs->rmsg_tail + 1) % dmsg_cap(rs);
		}
	}
}

static bool ds_valid_recv(struct ds_qp *qp, const struct ibv_wc *wc)
{
	const struct ds_header *h = (const void *)(qp->rbuf + (uint32_t)wc->wr_id);

	return wc->byte_len >= GRH_LEN + DS_IPV4_HDR_LEN &&
	       ((h->version == 4 && h->length == DS_IPV4_HDR_LEN) ||
		(h->version == 6 && h->length == DS_IPV6_HDR_LEN)) &&
	       wc->byte_len - GRH_LEN >= h->length;
}

static void ds_poll_cqs(struct rsock *rs)
{
	struct ds_qp *qp;
	struct ibv_wc wc;

	for (qp = rs->qps; qp; qp = qp->next) {
		while (ibv_poll_cq(qp->cq, 1, &wc) > 0) {
			uint32_t off = (uint32_t)wc.wr_id;

			if (!(wc.wr_id & RS_WR_RECV)) {
				rs->dsfree[rs->dsfree_n++] = off / RS_SNDLOWAT;
				rs->sqe_avail++;
				continue;
			}
			if (wc.status == IBV_WC_SUCCESS && rs->rqe_avail && !dmsg_full(rs) &&
			    ds_valid_recv(qp, &wc)) {
				struct ds_rmsg *m = &rs->dmsg[rs->rmsg_tail];

				rs->rqe_avail--;
				m->qp = qp;
				m->offset = off;
				m->length = wc.byte_len - GRH_LEN;
				m->udp_data = NULL;
				rs->rmsg_tail = (rs->rmsg_tail + 1) % dmsg_cap(rs);
			} else if (wc.status != IBV_WC_WR_FLUSH_ERR) {
				ds_post_recv(qp, off);
			}
		}
	}
}

static void ds_progress(struct rsock *rs)
{
	ds_udp_drain(rs);
	if (rs->dsbuf)
		ds_poll_cqs(rs);
}

bool ds_arm(struct rsock *rs)
{
	struct ds_qp *qp;
	bool was = true;

	for (qp = rs->qps; qp; qp = qp->next)
		if (!qp->cq_armed) {
			ibv_req_notify_cq(qp->cq, 0);
			qp->cq_armed = true;
			was = false;
		}
	return was;
}

int ds_wait_fd(struct rsock *rs)
{
	return rs->epfd;
}

void ds_wait_done(struct rsock *rs)
{
	struct epoll_event ev[16];
	int n, i;

	n = epoll_wait(rs->epfd, ev, 16, 0);
	for (i = 0; i < n; i++) {
		struct ds_qp *qp = ev[i].data.ptr;
		struct ibv_cq *cq;
		void *ctx;

		if (!qp)
			continue;       /* the UDP socket: read in ds_progress */
		while (!ibv_get_cq_event(qp->cch, &cq, &ctx)) {
			ibv_ack_cq_events(cq, 1);
			qp->cq_armed = false;
		}
	}
}

/* Progress until test, sleeping on the epoll set unless nonblock. */
static int ds_get_comp(struct rsock *rs, bool nonblock, bool (*test)(struct rsock *))
{
	for (;;) {
		struct pollfd p = { .fd = rs->epfd, .events = POLLIN };

		ds_progress(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return rs_err(EWOULDBLOCK);
		if (!ds_arm(rs))
			continue;
		pthread_mutex_unlock(&rs->lock);
		poll(&p, 1, -1);
		pthread_mutex_lock(&rs->lock);
		ds_wait_done(rs);
	}
}

static bool ds_can_send(struct rsock *rs) { return rs->sqe_avail > 0; }
static bool ds_all_sent(struct rsock *rs) { return rs->sqe_avail == rs->sq_size; }

int ds_poll_events(struct rsock *rs, int events)
{
	int rev = 0;

	ds_progress(rs);
	if ((events & POLLIN) && have_dmsg(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && (!rs->dsbuf || ds_can_send(rs)))
		rev |= POLLOUT;
	return rev;
}

int ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	if (ds_init_ep(rs))
		return -1;
	return bind(rs->udp_sock, addr, len);
}

int ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	if (ds_init_ep(rs))
		return -1;
	if (connect(rs->udp_sock, addr, len))
		return -1;
	return ds_get_dest(rs, addr, &rs->conn_dest);
}

ssize_t ds_sendto(struct rsock *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *to, socklen_t tolen)
{
	struct ds_dest *d;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint8_t *slot;
	uint32_t idx;
	int e;

	if (ds_init_ep(rs))
		return -1;
	if (to) {
		if (tolen < sizeof(struct sockaddr_in))
			return rs_err(EINVAL);
		if (!rs->conn_dest || !same_addr((struct sockaddr *)&rs->conn_dest->addr, to)) {
			if (ds_get_dest(rs, to, &rs->conn_dest))
				return -1;
		}
	}
	d = rs->conn_dest;
	if (!d)
		return rs_err(EDESTADDRREQ);
	ds_udp_drain(rs);               /* the peer's QP number may be in */
	if (len + d->qp->hdr.length > RS_SNDLOWAT)
		return rs_err(EMSGSIZE);
	if (!d->ah)
		return ds_send_udp(rs, d, buf, len, flags, RS_OP_DATA);
	if (!ds_can_send(rs) && ds_get_comp(rs, (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT),
					    ds_can_send))
		return -1;
	idx = rs->dsfree[--rs->dsfree_n];
	rs->sqe_avail--;
	slot = rs->dsbuf + (size_t)idx * RS_SNDLOWAT;
	memcpy(slot, &d->qp->hdr, d->qp->hdr.length);
	memcpy(slot + d->qp->hdr.length, buf, len);
	sge.addr = (uintptr_t)slot;
	sge.length = (uint32_t)(d->qp->hdr.length + len);
	sge.lkey = d->qp->smr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)idx * RS_SNDLOWAT;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	e = ibv_post_send(d->qp->id->qp, &wr, &bad);
	if (e) {
		rs->dsfree[rs->dsfree_n++] = idx;
		rs->sqe_avail++;
		return rs_err(e);
	}
	return (ssize_t)len;
}

static void set_src(struct sockaddr *addr, socklen_t *addrlen, const struct sockaddr_storage *ss)
{
	socklen_t n = addr_len((const struct sockaddr *)ss);

	memcpy(addr, ss, *addrlen < n ? *addrlen : n);
	*addrlen = n;
}

ssize_t ds_recvfrom(struct rsock *rs, void *buf, size_t len, int flags,
		    struct sockaddr *from, socklen_t *fromlen)
{
	struct ds_rmsg *m;
	struct sockaddr_storage src;

	if (!(rs->state & RS_READABLE))
		return rs_err(EINVAL);
	if (!have_dmsg(rs) && ds_get_comp(rs, (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT),
					  have_dmsg))
		return -1;
	m = &rs->dmsg[rs->rmsg_head];
	memset(&src, 0, sizeof(src));
	if (m->qp) {
		const struct ds_header *h = (const void *)(m->qp->rbuf + m->offset);

		if (len > m->length - h->length)
			len = m->length - h->length;
		memcpy(buf, (const uint8_t *)h + h->length, len);
		if (h->version == 4) {
			struct sockaddr_in *s = (struct sockaddr_in *)&src;

			s->sin_family = AF_INET;
			s->sin_port = h->port;
			s->sin_addr.s_addr = h->addr.ipv4;
		} else {
			struct sockaddr_in6 *s = (struct sockaddr_in6 *)&src;

			s->sin6_family = AF_INET6;
			s->sin6_port = h->port;
			s->sin6_flowinfo = h->addr.ipv6.flowinfo;
			memcpy(&s->sin6_addr, h->addr.ipv6.addr, 16);
		}
	} else {
		if (len > m->length)
			len = m->length;
		memcpy(buf, m->udp_data, len);
		src = m->udp_src;
	}
	if (from && fromlen)
		set_src(from, fromlen, &src);
	if (!(flags & MSG_PEEK)) {
		if (m->qp) {
			ds_post_recv(m->qp, m->offset);
			rs->rqe_avail++;
		} else {
			free(m->udp_data);
			m->udp_data = NULL;
		}
		rs->rmsg_head = (rs->rmsg_head + 1) % dmsg_cap(rs);
	}
	return (ssize_t)len;
}

void ds_free(struct rsock *rs)
{
	struct ds_qp *qp;
	struct ds_dest *d;
	uint64_t until = rs_now_us() + 200000;

	/* the sends in flight first, for a while */
	while (rs->dsbuf && !ds_all_sent(rs) && rs_now_us() < until)
		ds_poll_cqs(rs);
	while ((d = rs->dests)) {
		rs->dests = d->next;
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	while ((qp = rs->qps)) {
		rs->qps = qp->next;
		ds_free_qp(rs, qp);
	}
	if (rs->dmsg) {
		while (have_dmsg(rs)) {
			free(rs->dmsg[rs->rmsg_head].udp_data);
			rs->rmsg_head = (rs->rmsg_head + 1) % dmsg_cap(rs);
		}
	}
	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	if (rs->epfd >= 0)
		close(rs->epfd);
	free(rs->dsbuf);
	free(rs->dsfree);
	free(rs->dmsg);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

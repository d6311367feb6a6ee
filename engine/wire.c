/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fabric: RoCEv2 over UDP 4791 on the underlay (ROCE.md, DESIGN.md 8).
 *
 * One UDP socket per daemon, bound to 0.0.0.0:4791 in its network namespace,
 * unconnected and with IP_PMTUDISC_DO: the kernel then writes IP ID 0 with DF,
 * the ID our ICRC assumes.  Every packet leaves from the address of the
 * source vRNIC (IP_PKTINFO), which the control plane added to the underlay
 * device: a vRNIC's GID is its address, as for any RoCE device.  Payloads are
 * gathered straight from registered memory (iovecs into the MR), so the only
 * copy on the way out is the kernel's into its socket buffer.
 *
 * Receiving (the wire thread): recvmmsg in batches, then for each packet,
 * in this order, anything failing is dropped and counted by reason:
 *   well-formed (roce_parse), ICRC right (ID 0, or solved for rxe's IDs),
 *   source GID not one of ours, known to the directory or admitted,
 *   destination QP exists on the vRNIC the packet is addressed to,
 *   the source's tenant is the QP's,
 *   then RC (wire_rc.c) or UD (here).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "futex.h"
#include "log.h"
#include "unirdma/barrier.h"
#include "wire.h"

#define WIRE_SPIN_NS   (100ull * 1000)          /* poll the socket this long after traffic */
#define WIRE_IDLE_MS   100
#define WIRE_TIMER_LAG_NS (1000ull * 1000)      /* timers wait at most this for a drained socket */

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static void gid_of_ip(uint8_t gid[16], uint32_t ip)
{
	memcpy(gid, v4mapped, 12);
	memcpy(gid + 12, &ip, 4);
}

bool engine_gid_ip(const uint8_t gid[16], uint32_t *ip)
{
	if (memcmp(gid, v4mapped, 12))
		return false;
	memcpy(ip, gid + 12, 4);
	return true;
}

int wire_sport(const struct engine_wire *w, uint32_t qpn, uint16_t *port)
{
	uint32_t i = (qpn * 0x9e3779b1u) >> 28;         /* 16 slots: WIRE_SPORTS */

	static_assert(WIRE_SPORTS == 16, "the hash takes 4 bits");
	if (w->sfd[i] < 0) {
		*port = ROCE_UDP_PORT;
		return w->fd;
	}
	*port = w->sport[i];
	return w->sfd[i];
}

/* ---- sending ------------------------------------------------------------ */

/* A group of m > 1 packets from k as one UDP GSO message (wire.h). */
static void gso_msg(struct wire_tx *t, uint32_t k, uint32_t m, uint32_t g, uint32_t *niov)
{
	struct msghdr *h = &t->gmsg[g].msg_hdr;
	struct iovec *iov = t->giov + *niov;
	uint32_t n = 0;
	struct cmsghdr *cm;

	for (uint32_t i = k; i < k + m; i++) {
		memcpy(iov + n, t->iov[i], t->msg[i].msg_hdr.msg_iovlen * sizeof(*iov));
		n += (uint32_t)t->msg[i].msg_hdr.msg_iovlen;
	}
	*niov += n;
	memset(&t->gmsg[g], 0, sizeof(t->gmsg[g]));
	h->msg_name = &t->dst[k];
	h->msg_namelen = sizeof(t->dst[k]);
	h->msg_iov = iov;
	h->msg_iovlen = n;
	h->msg_control = t->gctl[g].buf;
	h->msg_controllen = sizeof(t->gctl[g].buf);
	cm = CMSG_FIRSTHDR(h);
	memcpy(cm, t->ctl[k].buf, CMSG_SPACE(sizeof(struct in_pktinfo)));  /* its IP_PKTINFO */
	cm = CMSG_NXTHDR(h, cm);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(cm), &t->pay[k], sizeof(uint16_t));
}

void wire_flush(struct engine_wire *w)
{
	struct wire_tx *t = &w->tx;
	uint32_t ng = 0, done = 0, niov = 0;

	/* one message per group (a lone packet is its own message) */
	for (uint32_t k = 0; k < t->n;) {
		uint32_t m = 1;

		while (k + m < t->n && t->gpos[k + m] == m)
			m++;
		if (m == 1)
			t->gmsg[ng] = t->msg[k];
		else
			gso_msg(t, k, m, ng, &niov);
		t->gfirst[ng] = k;
		t->gfd[ng] = t->fd[k];
		t->gn[ng++] = m;
		k += m;
	}
	while (done < ng) {
		uint32_t run = 1;       /* the groups from done on that share a socket */
		int r;

		while (done + run < ng && t->gfd[done + run] == t->gfd[done])
			run++;
		r = sendmmsg(t->gfd[done], t->gmsg + done, run, MSG_DONTWAIT);
		w->tx_calls++;
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && (errno == EINVAL || errno == EIO) && t->gn[done] > 1) {
				/* the route cannot do UDP GSO (udp_send_skb wants
				 * checksum offload): off for good; this group is
				 * lost (its ICRCs count on GSO's IP IDs), and
				 * retransmission recovers it */
				log_warn("wire: UDP GSO refused on %s (%s): sending packet by packet", w->dev,
					 strerror(errno));
				w->gso = false;
				w->tx_dropped += t->gn[done++];
				continue;
			}
			/* a full socket buffer: the rest of this socket's run
			 * is lost like a NIC's overflowing queue;
			 * retransmission recovers it */
			for (uint32_t g = done; g < done + run; g++)
				w->tx_dropped += t->gn[g];
			if (r < 0 && errno != EAGAIN && errno != ENOBUFS)
				log_debug("wire: sendmmsg: %s", strerror(errno));
			done += run;
			continue;
		}
		for (uint32_t g = done; g < done + (uint32_t)r; g++) {
			w->tx_pkts += t->gn[g];
			w->tx_gso_sends += t->gn[g] > 1;
		}
		done += (uint32_t)r;
	}
	t->n = 0;
	t->gopen = false;
}

/* Adds payload bytes [off, off + len) of the gather list to the iovec list;
 * false if it needs more pieces than iov has room for. */
static bool iov_gather(struct iovec *iov, uint32_t *niov, uint32_t max, const struct vsge *g, uint32_t ng,
		       uint64_t off, uint32_t len, uint32_t *crc)
{
	uint32_t i = 0;

	while (i < ng && off >= g[i].len) {
		off -= g[i].len;
		i++;
	}
	while (len && i < ng) {
		uint64_t contig;
		uint8_t *p = vsge_ptr(&g[i], off, &contig);
		uint32_t take = len;

		if (take > g[i].len - off)
			take = (uint32_t)(g[i].len - off);
		if (take > contig)
			take = (uint32_t)contig;
		if (*niov == max)
			return false;
		iov[*niov].iov_base = p;
		iov[*niov].iov_len = take;
		(*niov)++;
		*crc = roce_icrc_add(*crc, p, take);
		len -= take;
		off += take;
		if (off == g[i].len) {
			off = 0;
			i++;
		}
	}
	return len == 0;
}

void wire_emit(struct engine_wire *w, const struct wire_pkt_out *p)
{
	struct wire_tx *t = &w->tx;
	uint32_t k, hlen, niov = 0, crc;
	uint16_t udp_len;
	struct roce_hdr h = p->h;
	struct in_pktinfo *pi;
	struct cmsghdr *cm;
	struct wire_counters *c;

	bool mcast = IN_MULTICAST(ntohl(p->dip)), join;
	uint16_t pay, sport;
	int fd;

	if (t->n == WIRE_BATCH)
		wire_flush(w);
	k = t->n;
	h.pad = (uint8_t)((4 - (p->pay_len & 3)) & 3);
	h.pkey = 0xffff;
	hlen = roce_build(t->hdr[k], &h);
	udp_len = (uint16_t)(8 + hlen + p->pay_len + h.pad + ROCE_ICRC_LEN);
	pay = (uint16_t)(udp_len - 8);
	/* the next of a GSO train: same addresses and QP (a receiver that
	 * places a train's payloads in place predicts them from its first
	 * packet: wire.c, rx_in_place), not longer than the train's packets
	 * (a shorter one ends it), room left (wire.h) */
	if (mcast) {
		fd = w->fd;
		sport = ROCE_UDP_PORT;
	} else {
		fd = wire_sport(w, p->lqpn, &sport);
	}
	join = t->gopen && k && t->dst[k - 1].sin_addr.s_addr == p->dip && t->sip[k - 1] == p->sip &&
	       t->qpn[k - 1] == p->lqpn && t->fd[k - 1] == fd && pay <= t->pay[k - 1] && t->gpos[k - 1] + 1u < WIRE_GSO_SEGS && t->gbytes + pay <= WIRE_GSO_BYTES;
	if (join) {
		t->gpos[k] = (uint8_t)(t->gpos[k - 1] + 1);
		t->gbytes += pay;
		t->gopen = pay == t->pay[k - 1];
	} else {
		t->gpos[k] = 0;
		t->gbytes = pay;
		t->gopen = w->gso && !mcast;
	}
	t->pay[k] = pay;
	t->sip[k] = p->sip;
	t->qpn[k] = p->lqpn;
	t->fd[k] = fd;
	crc = roce_icrc_start(p->sip, p->dip, sport, t->gpos[k], udp_len, t->hdr[k]);
	crc = roce_icrc_add(crc, t->hdr[k] + ROCE_BTH_LEN, hlen - ROCE_BTH_LEN);
	t->iov[k][niov].iov_base = t->hdr[k];
	t->iov[k][niov++].iov_len = hlen;
	if (p->pay_len) {
		if (p->flat) {
			t->iov[k][niov].iov_base = (void *)p->flat;
			t->iov[k][niov++].iov_len = p->pay_len;
			crc = roce_icrc_add(crc, p->flat, p->pay_len);
		} else {
			uint32_t save = niov, crc0 = crc;

			if (!iov_gather(t->iov[k], &niov, WIRE_MAX_IOV - 1, p->pay, p->npay, p->pay_off,
					p->pay_len, &crc)) {
				/* too many pieces: copy them into the bounce buffer */
				vsge_read(p->eng, t->bounce[k], p->pay, p->npay, p->pay_off, p->pay_len);
				niov = save;
				crc = crc0;
				t->iov[k][niov].iov_base = t->bounce[k];
				t->iov[k][niov++].iov_len = p->pay_len;
				crc = roce_icrc_add(crc, t->bounce[k], p->pay_len);
			}
		}
	}
	memset(t->trailer[k], 0, 4);
	crc = roce_icrc_add(crc, t->trailer[k], h.pad);
	roce_icrc_put(crc, t->trailer[k] + h.pad);
	t->iov[k][niov].iov_base = t->trailer[k];
	t->iov[k][niov++].iov_len = h.pad + ROCE_ICRC_LEN;

	t->dst[k].sin_family = AF_INET;
	t->dst[k].sin_port = htons(ROCE_UDP_PORT);
	t->dst[k].sin_addr.s_addr = p->dip;
	memset(&t->msg[k], 0, sizeof(t->msg[k]));
	t->msg[k].msg_hdr.msg_name = &t->dst[k];
	t->msg[k].msg_hdr.msg_namelen = sizeof(t->dst[k]);
	t->msg[k].msg_hdr.msg_iov = t->iov[k];
	t->msg[k].msg_hdr.msg_iovlen = niov;
	t->msg[k].msg_hdr.msg_control = t->ctl[k].buf;
	t->msg[k].msg_hdr.msg_controllen = sizeof(t->ctl[k].buf);
	cm = CMSG_FIRSTHDR(&t->msg[k].msg_hdr);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
	pi = (struct in_pktinfo *)CMSG_DATA(cm);
	memset(pi, 0, sizeof(*pi));
	pi->ipi_spec_dst.s_addr = p->sip;
	if (mcast)
		pi->ipi_ifindex = w->ifindex;
	t->host[k] = p->host;
	t->n++;

	c = p->host ? &p->host->cnt : NULL;
	if (c) {
		c->tx_pkts++;
		c->tx_bytes += udp_len - 8u;
	}
}

/* ---- the directory, from the data path's side --------------------------- */

static struct urd_vrnic *local_vrnic_by_ip(struct urd_daemon *d, uint32_t ip)
{
	for (uint32_t i = 0; i < d->vrnic_hi; i++) {
		struct urd_vrnic *vr = d->vrnics[i];

		if (vr && vr->vip == ip)
			return vr;
	}
	return NULL;
}

bool wire_may_send(struct vr_qp *qp, uint32_t dip, struct engine_host **host)
{
	uint8_t gid[16];
	struct wire_gid *g;

	gid_of_ip(gid, dip);
	g = wire_gid_find(qp->vr->d, gid);
	*host = g ? g->host : NULL;
	if (!g || strcmp(g->tenant, qp->vr->tenant)) {
		CNT_BOTH(qp, drops_other_tenant, 1);
		return false;
	}
	return true;
}

/* Is this QP's RC peer (its AV) on another host?  Then it gets wire state. */
void engine_qp_connect(struct vr_qp *qp)
{
	struct urd_daemon *d = qp->vr->d;
	const struct urd_ah *ah = &qp->attr.ah;
	uint32_t dip;
	bool by_qpn = false;

	if (!d->eng.wire || (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC))
		return;
	if (ah->is_global) {
		if (!engine_gid_ip(ah->dgid, &dip) || local_vrnic_by_ip(d, dip))
			return;         /* a vRNIC of this host: shared memory */
	} else {
		/* no GRH: a QPN of another host's range reaches that host
		 * (QPNs are unique in the cluster); one of ours stays here */
		struct engine_host *h = wire_host_by_qpn(d, qp->attr.dest_qp_num & 0xffffff);

		if (!h || qpn_lookup(d, qp->attr.dest_qp_num & 0xffffff))
			return;
		dip = h->ip;
		by_qpn = true;
	}
	if (!qp->eng.wire) {
		qp->eng.wire = wire_rc_new(qp, qp->vr->vip, dip);
		if (!qp->eng.wire) {
			log_warn("qp %u: no memory for its connection state", qp->qpn);
			return;
		}
	}
	qp->eng.wire->dip = dip;
	qp->eng.wire->by_qpn = by_qpn;
	wire_rc_sync(qp);
}

/* q's held-packet buffer leaves the daemon's pool (the caller frees it). */
static void ooo_unlink(struct engine_wire *w, struct wire_qp *q)
{
	for (struct wire_qp **pp = &w->ooo_list; *pp; pp = &(*pp)->ooo_next)
		if (*pp == q) {
			*pp = q->ooo_next;
			break;
		}
	w->ooo_alloc -= (uint64_t)WIRE_OOO_SLOTS * q->ooo_bytes;
}

/* Buffers of held packets go back to the pool once unused for
 * WIRE_OOO_IDLE_NS (a QP that saw loss once keeps none for ever); a look
 * every tenth of that. */
static void ooo_sweep(struct engine_wire *w, uint64_t now)
{
	struct wire_qp *q, *next;

	if (now < w->ooo_sweep_at)
		return;
	w->ooo_sweep_at = now + WIRE_OOO_IDLE_NS / 10;
	for (q = w->ooo_list; q; q = next) {
		next = q->ooo_next;
		if (!q->ooo_n && now - q->ooo_used_at >= WIRE_OOO_IDLE_NS) {
			ooo_unlink(w, q);
			free(q->ooo);
			q->ooo = NULL;
		}
	}
}

void wire_qp_forget(struct vr_qp *qp)
{
	struct wire_qp *q = qp->eng.wire;
	struct engine_wire *w = qp->vr->d->eng.wire;

	if (!q)
		return;
	if (q->on_timer && w)
		for (struct wire_qp **pp = &w->timers; *pp; pp = &(*pp)->timer_next)
			if (*pp == q) {
				*pp = q->timer_next;
				break;
			}
	if (q->ooo && w)
		ooo_unlink(w, q);
	free(q->ooo);
	free(q->ring);
	free(q);
	qp->eng.wire = NULL;
}

void wire_timer_arm(struct engine_wire *w, struct wire_qp *q, uint64_t at)
{
	if (!q->on_timer) {
		q->on_timer = true;
		q->timer_next = w->timers;
		w->timers = q;
	}
	if (!w->next_timer || at < w->next_timer)
		w->next_timer = at;
	if (w->sleep_until && at < w->sleep_until) {
		uint64_t one = 1;

		w->sleep_until = 0;     /* one wake-up is enough */
		if (write(w->efd, &one, sizeof(one)) < 0)
			log_debug("wire: eventfd: %s", strerror(errno));
	}
}

/* ---- UD ------------------------------------------------------------------ */

/* A UD datagram to a GID that is not on this host (req.c's deliver step).
 * RESP_ACK: sent (or dropped, as UD may be); the sender completes either way. */
enum resp_result wire_ud_send(struct vr_qp *qp, const struct urd_send_wqe *wqe, const struct urd_opcode_info *op,
			      const struct vsge *local, uint32_t n, uint32_t len)
{
	struct urd_daemon *d = qp->vr->d;
	struct engine_wire *w = d->eng.wire;
	struct wire_pkt_out p;
	uint32_t dip;

	if (!w)
		return RESP_SILENT;
	memset(&p, 0, sizeof(p));
	if (wqe->is_global && urd_gid_is_mcast(wqe->dgid)) {
		/* to the group's IPv4 address: every host with a QP in it */
		if (!engine_gid_ip(wqe->dgid, &dip))
			return RESP_ACK;        /* an IPv6 group: no IPv6 underlay */
	} else if (wqe->is_global) {
		if (!engine_gid_ip(wqe->dgid, &dip) || local_vrnic_by_ip(d, dip))
			return RESP_SILENT;
		if (!wire_may_send(qp, dip, &p.host))
			return RESP_ACK;
	} else {
		/* no GRH: the QPN's host, by its range (the receiver checks the tenant) */
		p.host = wire_host_by_qpn(d, wqe->remote_qpn & 0xffffff);
		if (!p.host)
			return RESP_SILENT;
		dip = p.host->ip;
	}
	if (len > (128u << engine_port_mtu(d)))
		return RESP_ACK;        /* larger than the port MTU: rxe sends nothing (C10-93.1.1) */
	p.h.opcode = (op->flags & URD_OPF_IMM) ? ROCE_UD_SEND_ONLY_IMM : ROCE_UD_SEND_ONLY;
	p.h.se = (wqe->flags & URD_WQE_SOLICITED) != 0;
	p.h.dqpn = wqe->remote_qpn & 0xffffff;
	p.h.psn = 0;
	p.h.qkey = (wqe->remote_qkey & 0x80000000u) ? qp->attr.qkey : wqe->remote_qkey;
	p.h.sqpn = qp_src_qpn(qp);
	p.h.imm_be = wqe->imm_data;
	p.sip = qp->vr->vip;
	p.dip = dip;
	p.pay = local;
	p.npay = n;
	p.pay_len = len;
	p.lqpn = qp->qpn;
	wire_emit(w, &p);
	wire_flush(w);
	return RESP_ACK;
}


static void wire_ud_rx(struct vr_qp *qp, struct wire_rx *rx, uint32_t udp_len)
{
	uint8_t grh[GRH_BYTES];
	struct recv_info ri;

	if (rx->h.qkey != qp->attr.qkey) {
		rx->cnt->drops[WDROP_QKEY]++;
		return;
	}
	grh_fill(grh, rx->sip, rx->dip, udp_len);
	memset(&ri, 0, sizeof(ri));
	ri.src_qpn = rx->h.sqpn;
	ri.imm_be = rx->h.imm_be;
	ri.has_imm = rx->h.opcode == ROCE_UD_SEND_ONLY_IMM;
	ri.solicited = rx->h.se;
	ri.grh = grh;
	if (!recv_deliver_ud(qp, &ri, rx->h.payload, rx->h.payload_len))
		rx->cnt->drops[WDROP_NO_RECV]++;
}

/* A UD SEND to multicast group dip: every QP of the sender's tenant in the
 * group on this host gets it (none: counted as no_qp). */
static void wire_mcast_rx(struct urd_daemon *d, struct wire_rx *rx, const char *tenant, uint32_t udp_len)
{
	uint8_t mgid[16];
	uint32_t n = 0;

	gid_of_ip(mgid, rx->dip);
	if (!urd_gid_is_mcast(mgid) ||
	    (rx->h.opcode != ROCE_UD_SEND_ONLY && rx->h.opcode != ROCE_UD_SEND_ONLY_IMM)) {
		rx->cnt->drops[WDROP_TRANSPORT]++;
		return;
	}
	for (struct vr_mcast *m = mcast_next(d, NULL, mgid); m; m = mcast_next(d, m, mgid)) {
		struct vr_qp *qp = m->qp;

		if (strcmp(qp->vr->tenant, tenant) || qp->vr->failed)
			continue;
		n++;
		if (!qp_can_receive(qp))
			rx->cnt->drops[WDROP_QP_STATE]++;
		else
			wire_ud_rx(qp, rx, udp_len);
	}
	if (!n)
		rx->cnt->drops[WDROP_NO_QP]++;
}

/* A CM message from another host that nobody on vr answers: the answer a
 * kernel's CM would give (cm_steer.c cm_orphan_answer), from QP1 to the
 * sending QP, with the GSI Q_Key.  The sender is a GID the directory puts
 * in the vRNIC's tenant (wire_rx_one checked both). */
static void wire_cm_answer_orphan(struct urd_daemon *d, struct urd_vrnic *vr, const struct wire_rx *rx)
{
	uint8_t rep[CM_MAD_BYTES];
	struct wire_pkt_out p;

	if ((rx->h.opcode != ROCE_UD_SEND_ONLY && rx->h.opcode != ROCE_UD_SEND_ONLY_IMM) ||
	    rx->h.qkey != ROCE_GSI_QKEY || !cm_orphan_answer(vr, rx->h.payload, rx->h.payload_len, rep))
		return;
	memset(&p, 0, sizeof(p));
	p.h.opcode = ROCE_UD_SEND_ONLY;
	p.h.dqpn = rx->h.sqpn;
	p.h.qkey = ROCE_GSI_QKEY;
	p.h.sqpn = URD_GSI_QPN;
	p.sip = vr->vip;
	p.dip = rx->sip;
	p.flat = rep;
	p.pay_len = CM_MAD_BYTES;
	p.lqpn = URD_GSI_QPN;
	p.host = rx->host;
	p.eng = &d->eng;
	wire_emit(d->eng.wire, &p);
	wire_flush(d->eng.wire);        /* now: the batch points into rep */
}

/* Multicast groups are memberships of the one wire socket, and the kernel
 * allows a socket net.ipv4.igmp_max_memberships of them (20 by default, per
 * network namespace): raised to URD_MAX_MCAST_ATTACH when lower, and said. */
static void mcast_room(void)
{
	static const char path[] = "/proc/sys/net/ipv4/igmp_max_memberships";
	char buf[32];
	long cur = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = 0;
		cur = strtol(buf, NULL, 10);
	}
	if (n > 0 && cur < (long)URD_MAX_MCAST_ATTACH) {
		int len = snprintf(buf, sizeof(buf), "%u\n", URD_MAX_MCAST_ATTACH);

		if (pwrite(fd, buf, (size_t)len, 0) == len)
			log_info("fabric: net.ipv4.igmp_max_memberships raised from %ld to %u (multicast groups)",
				 cur, URD_MAX_MCAST_ATTACH);
		else
			log_warn("fabric: net.ipv4.igmp_max_memberships is %ld: at most that many multicast groups "
				 "reach other hosts", cur);
	}
	close(fd);
}

void engine_mcast_join(struct urd_daemon *d, const uint8_t gid[16], bool join)
{
	struct engine_wire *w = d->eng.wire;
	struct ip_mreqn mr;
	uint32_t ip;

	if (!w || !engine_gid_ip(gid, &ip))
		return;
	memset(&mr, 0, sizeof(mr));
	mr.imr_multiaddr.s_addr = ip;
	mr.imr_ifindex = w->ifindex;
	if (setsockopt(w->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &mr, sizeof(mr)))
		log_warn("multicast group %s: cannot %s it on %s: %s", inet_ntoa(mr.imr_multiaddr),
			 join ? "join" : "leave", w->dev, strerror(errno));
}

/* ---- receiving ----------------------------------------------------------- */

static void wire_rx_checked(struct urd_daemon *d, struct wire_rx *rx, size_t len, uint64_t now);

static void wire_rx_one(struct urd_daemon *d, const uint8_t *buf, size_t len, uint32_t sip, uint32_t dip,
			uint16_t sport, uint64_t now)
{
	struct wire_counters *gc = &d->eng.dir.cnt;
	struct wire_rx rx = { .sip = sip, .dip = dip };
	uint16_t id;

	if (roce_parse(buf, len, &rx.h)) {
		gc->drops[WDROP_MALFORMED]++;
		return;
	}
	if (!roce_icrc_check(sip, dip, sport, buf, len, &id)) {
		gc->drops[WDROP_ICRC]++;
		return;
	}
	wire_rx_checked(d, &rx, len, now);
}

/* The source: a GID the directory knows, not one of ours; NULL if not
 * (counted in gc, unless NULL). */
static struct wire_gid *rx_source(struct urd_daemon *d, uint32_t sip, struct wire_counters *gc)
{
	uint8_t gid[16];
	struct wire_gid *g;

	if (local_vrnic_by_ip(d, sip)) {
		if (gc)
			gc->drops[WDROP_SPOOFED_LOCAL]++;
		return NULL;
	}
	gid_of_ip(gid, sip);
	g = wire_gid_find(d, gid);
	if (!g && gc)
		gc->drops[WDROP_UNKNOWN_SOURCE]++;
	return g;
}

/* A QP may take a packet from g when it is alive on the vRNIC the packet was
 * sent to (or at the underlay's address) and in g's tenant; false if not
 * (counted in cnt, unless NULL). */
static bool rx_qp_ok(struct urd_daemon *d, const struct wire_gid *g, struct wire_counters *cnt,
		     struct vr_qp *qp, uint32_t dip)
{
	if (!qp || (qp->vr->vip != dip && dip != d->eng.wire->ip) || qp->vr->failed) {
		if (cnt)
			cnt->drops[WDROP_NO_QP]++;
		return false;
	}
	if (strcmp(g->tenant, qp->vr->tenant)) {
		if (cnt) {
			cnt->drops[WDROP_OTHER_TENANT]++;
			CNT_BOTH(qp, drops_other_tenant, 1);
		}
		return false;
	}
	return true;
}

static void wire_rx_checked(struct urd_daemon *d, struct wire_rx *rx, size_t len, uint64_t now)
{
	struct wire_gid *g;
	struct vr_qp *qp;
	uint32_t sip = rx->sip, dip = rx->dip, fl;

	g = rx_source(d, sip, &d->eng.dir.cnt);
	if (!g)
		return;
	rx->host = g->host;
	rx->cnt = &g->host->cnt;
	rx->cnt->rx_pkts++;
	rx->cnt->rx_bytes += len;
	if (rx->h.dqpn == URD_MCAST_QPN) {
		wire_mcast_rx(d, rx, g->tenant, (uint32_t)len + 8);
		return;
	}
	if (rx->h.dqpn == URD_GSI_QPN) {
		struct urd_vrnic *vr = local_vrnic_by_ip(d, dip);

		qp = cm_steer(vr, rx->h.payload, rx->h.payload_len);
		if (!qp && vr && !vr->failed && !strcmp(g->tenant, vr->tenant))
			wire_cm_answer_orphan(d, vr, rx);
	} else {
		qp = rx->h.dqpn > 1 ? qpn_lookup(d, rx->h.dqpn) : NULL;
	}
	if (!rx_qp_ok(d, g, rx->cnt, qp, dip))
		return;
	fl = roce_op_flags(rx->h.opcode);
	if (qp->type == IBV_QPT_UD) {
		if (rx->h.opcode != ROCE_UD_SEND_ONLY && rx->h.opcode != ROCE_UD_SEND_ONLY_IMM) {
			rx->cnt->drops[WDROP_TRANSPORT]++;
			return;
		}
		if (!qp_can_receive(qp)) {
			rx->cnt->drops[WDROP_QP_STATE]++;
			return;
		}
		wire_ud_rx(qp, rx, (uint32_t)len + 8);
		return;
	}
	/* RC takes the RC opcodes (0x00..0x17), UC the UC ones */
	if (!(fl & ROCE_F_VALID) || (qp->type == IBV_QPT_RC ? rx->h.opcode >= 0x20 :
				     qp->type != IBV_QPT_UC || !(fl & ROCE_F_UC))) {
		rx->cnt->drops[WDROP_TRANSPORT]++;
		return;
	}
	if (!qp->eng.wire || (qp->eng.wire->by_qpn ? g->host->ip != qp->eng.wire->dip : qp->eng.wire->dip != sip)) {
		rx->cnt->drops[WDROP_NOT_PEER]++;
		return;
	}
	wire_rc_rx(d, qp, rx, now);
}

/* ---- receiving in place ---------------------------------------------------- */

/* The payload of RDMA WRITEs and READ responses is copied once on the way
 * in: the kernel copies it from its socket buffer straight to where the
 * message puts it (a WRITE's target, a READ's local buffers).
 *
 * Once trains of such packets come (UDP GRO), or a big WRITE starts or a big
 * READ is asked for (wire_in_place_hint), the wire thread looks at each
 * datagram before it reads it (MSG_PEEK: its BTH), until IN_PLACE_MISSES in
 * a row were not for this (and the hint's WIRE_IN_PLACE_HOLD_NS passed).  When that is the next
 * packet of a message under way on an RC QP of ours (wire_rc_dst), from the
 * QP's peer host and a GID of the QP's tenant, the read scatters: each
 * packet's payload to the message's next bytes, as far as the message goes,
 * and everything else (headers, pad, ICRC) to the receive buffer, at its
 * place in the datagram.  Then every packet goes through all the checks, as
 * any other: it must be the predicted one (its header; where wire_rc_dst now
 * puts its payload is where the kernel put it), its ICRC is computed over
 * the pieces, and wire_rx_checked does the rest; the responder or requester
 * then finds the payload in place (wire_rc.c, in_place).  A packet that is
 * not the predicted one is put back together in the buffer and taken as any
 * other.
 *
 * What the kernel wrote for a packet that was not taken lies in the part of
 * the message that has not arrived yet (a WRITE's and a READ response's
 * length is known: nothing is placed past it), which the message's own
 * packets overwrite, and a WRITE's target or a READ's buffer is undefined
 * until the message completes.  Those bytes came from the QP's peer: one
 * datagram has one pair of addresses, the source GID the checks found in the
 * QP's tenant and the destination the QP's vRNIC, and a unirdma peer puts
 * one QP's packets in a train (wire_emit).  A train that mixes QPs (a kernel
 * GRO that merged two QPs whose source ports hash alike, or one crafted by
 * a host that spoofs the peer's address and knows the expected PSN, which
 * could inject anyway) can at worst put another QP's bytes of the same two
 * vRNICs there for a while: never another tenant's.
 * SENDs are copied as before: a SEND's length shows only in its LAST packet,
 * and the next SEND's FIRST, as long as a MIDDLE, can follow it in a train,
 * so a prediction could put bytes past the message in its receive buffer,
 * which nothing would overwrite.
 *
 * Datagrams that come one at a time are read in batches and copied (a peek
 * per datagram would cost more than the copy it saves).
 * UNIRDMA_WIRE_RX_COPY=1 turns it off. */
#define IN_PLACE_PKTS   128             /* packets of a train placed at most */
#define IN_PLACE_MISSES 16              /* heads in a row not for it: stop looking */

struct in_place_pkt {
	uint8_t *dst;                   /* where its payload went */
	uint32_t len;                   /* bytes placed there */
	uint32_t hl;                    /* its header's length, as predicted */
};

static bool in_place_kind(uint8_t op)
{
	return op == ROCE_RC_WRITE_MIDDLE || op == ROCE_RC_WRITE_LAST || op == ROCE_RC_READ_RESP_MIDDLE ||
	       op == ROCE_RC_READ_RESP_LAST;
}

/* Packet k of a datagram read by rx_in_place: taken in place when it is the
 * one predicted, else put back together and taken as any other. */
static void in_place_take(struct urd_daemon *d, struct vr_qp *qp, uint32_t qpn, uint8_t *p, uint32_t len,
			  const struct in_place_pkt *pk, uint32_t sip, uint32_t dip, uint16_t sport, uint64_t now)
{
	struct wire_rx rx = { .sip = sip, .dip = dip, .placed = true };
	struct wire_dst m;
	uint64_t contig;
	uint32_t c;

	if (!in_place_kind(p[0]) || roce_hdr_len(p[0]) != pk->hl || roce_parse(p, len, &rx.h) ||
	    rx.h.dqpn != qpn || rx.h.payload_len != pk->len || qpn_lookup(d, qpn) != qp ||
	    !wire_rc_dst(qp, p[0], rx.h.psn, &m) || vsge_list_ptr(m.sg, m.nsg, m.at, &contig) != pk->dst ||
	    contig < pk->len) {
		memcpy(p + pk->hl, pk->dst, pk->len);
		d->eng.wire->rx_place_misses++;
		wire_rx_one(d, p, len, sip, dip, sport, now);
		return;
	}
	c = roce_icrc_start(sip, dip, sport, 0, (uint16_t)(8 + len), p);
	c = roce_icrc_add(c, p + ROCE_BTH_LEN, pk->hl - ROCE_BTH_LEN);
	c = roce_icrc_add(c, pk->dst, pk->len);
	c = roce_icrc_add(c, p + pk->hl + pk->len, len - pk->hl - pk->len - ROCE_ICRC_LEN);
	if (!roce_icrc_match(c, p + len - ROCE_ICRC_LEN, len, NULL)) {
		d->eng.dir.cnt.drops[WDROP_ICRC]++;
		return;
	}
	rx.h.payload = pk->dst;
	wire_rx_checked(d, &rx, len, now);
}

/* A datagram whose head may go in place: 1 one was read (and its packets
 * taken or dropped); 0 none is there; -1 the head is not one for this
 * (nothing was read). */
static int rx_in_place(struct urd_daemon *d, uint64_t now)
{
	struct engine_wire *w = d->eng.wire;
	uint8_t head[ROCE_BTH_LEN], *sh = w->rx;
	struct sockaddr_in src, src2;
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec hv = { head, sizeof(head) }, iov[2 * IN_PLACE_PKTS + 1];
	struct msghdr mh = {
		.msg_name = &src, .msg_namelen = sizeof(src), .msg_iov = &hv, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct in_place_pkt pk[IN_PLACE_PKTS];
	uint32_t total, seg = 0, dip = 0, sip, qpn, psn, npk = 0, niov = 0, from = 0, off, k;
	struct wire_dst m;
	struct wire_gid *g;
	struct wire_qp *q;
	struct vr_qp *qp;
	uint16_t sport;
	ssize_t r;

	r = recvmsg(w->fd, &mh, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	w->rx_calls++;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			dip = ((struct in_pktinfo *)CMSG_DATA(cm))->ipi_addr.s_addr;
		} else if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(cm), sizeof(v));
			seg = v > 0 ? (uint32_t)v : 0;
		}
	}
	total = (uint32_t)r;
	if (total < sizeof(head) + ROCE_ICRC_LEN || total > w->rx_size || !in_place_kind(head[0]) ||
	    (head[1] & 0x0f))
		return -1;
	if (!seg || seg >= total) {
		/* no train: where packets come one by one, looking first costs
		 * a syscall a packet; after IN_PLACE_MISSES of them in a row,
		 * stop and let no hint start again for a while */
		if (++w->in_place_lone >= IN_PLACE_MISSES) {
			w->in_place_lone = 0;
			w->in_place_until = 0;
			w->in_place_quiet_until = now + WIRE_IN_PLACE_QUIET_NS;
			__atomic_store_n(&w->in_place, false, __ATOMIC_RELAXED);
		}
		return -1;
	}
	w->in_place_lone = 0;
	qpn = (uint32_t)head[5] << 16 | (uint32_t)head[6] << 8 | head[7];
	psn = (uint32_t)head[9] << 16 | (uint32_t)head[10] << 8 | head[11];
	sip = src.sin_addr.s_addr;
	sport = ntohs(src.sin_port);
	/* wire_rx_checked's checks (uncounted: it counts them when it takes
	 * the packet), before anything is placed */
	g = rx_source(d, sip, NULL);
	qp = g && qpn > 1 ? qpn_lookup(d, qpn) : NULL;
	if (!qp || !rx_qp_ok(d, g, NULL, qp, dip))
		return -1;
	q = qp->eng.wire;
	if (!q || (q->by_qpn ? g->host->ip != q->dip : q->dip != sip) || !wire_rc_dst(qp, head[0], psn, &m))
		return -1;
	/* a train's packets but its last are the MTU's MIDDLEs */
	if (seg != ROCE_BTH_LEN + q->mtu + ROCE_ICRC_LEN)
		return -1;
	/* UNIRDMA_FAULT_IN_PLACE_SKEW=N (tests): every Nth datagram is placed
	 * one packet further on, so that no packet of it is where it was
	 * predicted: each is put back together and taken the usual way */
	if (w->fault_skew && ++w->fault_skew_n % w->fault_skew == 0 && m.resid > q->mtu) {
		m.at += q->mtu;
		m.resid -= q->mtu;
	}
	for (off = 0; off < total && npk < IN_PLACE_PKTS; off += seg) {
		uint32_t len = total - off < seg ? total - off : seg, n;
		/* the packet that ends the message is its LAST */
		uint32_t hl = m.resid <= q->mtu ? m.last_hl : ROCE_BTH_LEN;
		uint64_t contig;
		uint8_t *dst;

		if (len < hl + ROCE_ICRC_LEN)
			break;
		n = len - hl - ROCE_ICRC_LEN;
		if (n > m.resid)
			n = (uint32_t)m.resid;  /* the rest is pad */
		dst = n ? vsge_list_ptr(m.sg, m.nsg, m.at, &contig) : NULL;
		if (!dst || contig < n)
			break;
		iov[niov].iov_base = sh + from;         /* up to its header's end */
		iov[niov++].iov_len = off + hl - from;
		iov[niov].iov_base = dst;
		iov[niov++].iov_len = n;
		from = off + hl + n;
		pk[npk].dst = dst;
		pk[npk].len = n;
		pk[npk++].hl = hl;
		m.at += n;
		m.resid -= n;
	}
	if (!npk)
		return -1;
	iov[niov].iov_base = sh + from;
	iov[niov++].iov_len = total - from;
	memset(&mh, 0, sizeof(mh));
	mh.msg_name = &src2;
	mh.msg_namelen = sizeof(src2);
	mh.msg_iov = iov;
	mh.msg_iovlen = niov;
	r = recvmsg(w->fd, &mh, MSG_DONTWAIT);
	if (r < 0) {
		/* EFAULT: a page under the destination is gone (its tenant cut
		 * its region file short) and the kernel dropped the datagram.
		 * Reading the pages lets the daemon's SIGBUS guard fail that
		 * vRNIC, as the copy would have. */
		if (errno == EFAULT)
			for (k = 0; k < npk; k++)
				for (uint32_t o = 0; o < pk[k].len; o += 4096)
					(void)*(volatile const uint8_t *)(pk[k].dst + o);
		return -1;
	}
	w->rx_calls++;
	if ((uint32_t)r != total || (mh.msg_flags & MSG_TRUNC) || src2.sin_addr.s_addr != sip ||
	    src2.sin_port != src.sin_port) {
		/* not the one looked at: this thread is the socket's only reader */
		d->eng.dir.cnt.drops[WDROP_MALFORMED]++;
		return 1;
	}
	w->rx_pkts += (total + seg - 1) / seg;
	w->rx_gro_trains++;
	for (off = 0, k = 0; off < total; off += seg, k++) {
		uint32_t len = total - off < seg ? total - off : seg;

		if (k < npk)
			in_place_take(d, qp, qpn, sh + off, len, &pk[k], sip, dip, sport, now);
		else
			wire_rx_one(d, sh + off, len, sip, dip, sport, now);
	}
	return 1;
}

/* The retransmission and RNR timers of every QP with something in flight. */
static void wire_timers(struct urd_daemon *d, uint64_t now)
{
	struct engine_wire *w = d->eng.wire;
	uint64_t next = 0;

	if (w->next_timer && now < w->next_timer)
		return;
	for (struct wire_qp **pp = &w->timers; *pp;) {
		struct wire_qp *q = *pp;

		wire_rc_timer(d, q, now);
		if (!q->rto_at && !q->rnr_at && !q->tlp_at) {
			*pp = q->timer_next;
			q->on_timer = false;
			continue;
		}
		if (q->rto_at && (!next || q->rto_at < next))
			next = q->rto_at;
		if (q->rnr_at && (!next || q->rnr_at < next))
			next = q->rnr_at;
		if (q->tlp_at && (!next || q->tlp_at < next))
			next = q->tlp_at;
		pp = &q->timer_next;
	}
	w->next_timer = next;
}

static void *wire_main(void *arg)
{
	struct urd_daemon *d = arg;
	struct engine_wire *w = d->eng.wire;
	struct mmsghdr msg[WIRE_BATCH];
	struct iovec iov[WIRE_BATCH];
	struct sockaddr_in src[WIRE_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl[WIRE_BATCH];
	uint64_t last_rx = 0, last_timers = 0;

	engine_thread_init("urd-wire");
	while (!d->stopping) {
		uint64_t now;
		int n = 0, vlen = WIRE_BATCH, placed = 0, last = -1;

		if (__atomic_load_n(&w->in_place, __ATOMIC_RELAXED)) {   /* each datagram looked at first */
			pthread_mutex_lock(&d->lock);
			now = urd_now_ns();
			while (placed < WIRE_BATCH && (last = rx_in_place(d, now)) > 0) {
				placed++;
				wire_flush(w);  /* its ACKs go now, not after the batch */
			}
			if (placed)
				w->in_place_miss = 0;
			else if (last < 0 && ++w->in_place_miss >= IN_PLACE_MISSES && now >= w->in_place_until) {
				__atomic_store_n(&w->in_place, false, __ATOMIC_RELAXED);
				w->in_place_miss = 0;
			}
			pthread_mutex_unlock(&d->lock);
			/* the head that was not for it goes the usual way */
			vlen = last < 0 ? 1 : 0;
		}
		for (int i = 0; i < vlen; i++) {
			iov[i].iov_base = w->rx + (size_t)i * w->rx_size;
			iov[i].iov_len = w->rx_size;
			memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
			msg[i].msg_hdr.msg_name = &src[i];
			msg[i].msg_hdr.msg_namelen = sizeof(src[i]);
			msg[i].msg_hdr.msg_iov = &iov[i];
			msg[i].msg_hdr.msg_iovlen = 1;
			msg[i].msg_hdr.msg_control = ctl[i].buf;
			msg[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
		}
		if (vlen)
			n = recvmmsg(w->fd, msg, (unsigned int)vlen, MSG_DONTWAIT, NULL);
		now = urd_now_ns();
		if (n > 0) {
			w->rx_calls++;
			w->rx_pkts += (uint64_t)n;
		}
		if (n > 0 || placed)
			last_rx = now;
		pthread_mutex_lock(&d->lock);
		w->sleep_until = 0;
		for (int i = 0; i < n; i++) {
			const uint8_t *buf = w->rx + (size_t)i * w->rx_size;
			uint32_t dip = 0, len = msg[i].msg_len, seg = 0;

			if (msg[i].msg_hdr.msg_flags & MSG_TRUNC) {
				d->eng.dir.cnt.drops[WDROP_MALFORMED]++;
				continue;
			}
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg[i].msg_hdr); cm;
			     cm = CMSG_NXTHDR(&msg[i].msg_hdr, cm)) {
				if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO)
					dip = ((struct in_pktinfo *)CMSG_DATA(cm))->ipi_addr.s_addr;
				else if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
					int g;

					memcpy(&g, CMSG_DATA(cm), sizeof(g));
					seg = g > 0 ? (uint32_t)g : 0;
				}
			}
			/* UDP_GRO: a train of datagrams of seg bytes (the last
			 * may be shorter), each a RoCE packet of its own */
			if (seg && len > seg) {
				w->rx_gro_trains++;
				if (in_place_kind(buf[0])) {    /* bulk comes in trains */
					w->in_place_quiet_until = 0;
					wire_in_place_hint(w);
				}
				w->rx_pkts += (len - 1) / seg;
			} else {
				seg = len;
			}
			for (uint32_t off = 0; off < len; off += seg)
				wire_rx_one(d, buf + off, len - off < seg ? len - off : seg, src[i].sin_addr.s_addr,
					    dip, ntohs(src[i].sin_port), now);
		}
		/* Timers once the socket is drained: ACKs still queued in it
		 * would make a resend timer that expired while this thread was
		 * off its CPU a spurious one. A flood cannot hold timers off
		 * for more than WIRE_TIMER_LAG_NS. */
		if (n < WIRE_BATCH || now - last_timers >= WIRE_TIMER_LAG_NS) {
			wire_timers(d, now);
			ooo_sweep(w, now);
			last_timers = now;
		}
		wire_flush(w);
		/* ACKs opened windows, timers expired: the engine may sleep */
		engine_kick_if_work(d);
		if (n > 0 || placed || now - last_rx < WIRE_SPIN_NS) {
			pthread_mutex_unlock(&d->lock);
			if (n <= 0 && !placed)
				sched_yield();
			continue;
		}
		/* Sleep until a packet, the earliest timer, or an earlier timer
		 * the engine thread arms meanwhile (wire_timer_arm writes the
		 * eventfd when it is earlier than sleep_until). */
		{
			struct pollfd pfd[2] = { { .fd = w->fd, .events = POLLIN }, { .fd = w->efd, .events = POLLIN } };
			uint64_t until = now + WIRE_IDLE_MS * 1000000ull;
			struct timespec ts;

			if (w->next_timer && w->next_timer < until)
				until = w->next_timer;
			w->sleep_until = until > now ? until : now + 1;
			pthread_mutex_unlock(&d->lock);
			ts = urd_ns_timespec(until > now ? until - now : 0);
			if (ppoll(pfd, 2, &ts, NULL) > 0 && (pfd[1].revents & POLLIN)) {
				uint64_t v;

				if (read(w->efd, &v, sizeof(v)) < 0)
					continue;
			}
		}
	}
	return NULL;
}

/* ---- start and stop ------------------------------------------------------ */

static int dev_ipv4(const char *dev, uint32_t *ip)
{
	struct ifaddrs *ifa, *i;
	int ret = -EADDRNOTAVAIL;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, dev)) {
			*ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			ret = 0;
			break;
		}
	freeifaddrs(ifa);
	return ret;
}

static uint32_t mtu_enum(uint32_t dev_mtu)
{
	/* rxe_set_mtu: the netdev MTU less its largest headers, rounded down */
	uint32_t room = dev_mtu > 80 ? dev_mtu - 80 : 0;
	uint32_t e = IBV_MTU_256;

	while (e < IBV_MTU_4096 && (128u << (e + 1)) <= room)
		e++;
	return e;
}

/* The sending sockets of the source ports (wire.h): slot i's port is the
 * first free one from 0xC000 + 1024 i (RoCEv2 takes entropy ports from
 * 0xC000-0xFFFF, as rxe does; another program may hold one), else one the
 * kernel picks.  Nobody sends to them (RoCE answers go to 4791): their
 * receive buffers are the smallest.  A slot without one sends from 4791. */
static void open_sports(struct engine_wire *w, int buf, int pmtu)
{
	int n = 0, tiny = 0;

	for (int i = 0; i < WIRE_SPORTS; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t len = sizeof(sa);
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), bound = -1;

		w->sfd[i] = -1;
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
		for (int j = 0; j < 64 && bound; j++) {
			sa.sin_port = htons((uint16_t)(0xc000 + 1024 * i + j));
			bound = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		}
		if (bound) {
			sa.sin_port = 0;
			bound = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		}
		if (bound || getsockname(fd, (struct sockaddr *)&sa, &len)) {
			close(fd);
			continue;
		}
		w->sfd[i] = fd;
		w->sport[i] = ntohs(sa.sin_port);
		n++;
	}
	if (n < WIRE_SPORTS)
		log_warn("fabric: %d of %d source-port sockets (the others' QPs send from %u)", n, WIRE_SPORTS,
			 ROCE_UDP_PORT);
}

static void close_sports(struct engine_wire *w)
{
	for (int i = 0; i < WIRE_SPORTS; i++)
		if (w->sfd[i] >= 0)
			close(w->sfd[i]);
}

int engine_wire_start(struct urd_daemon *d, const char *dev, bool gso, char *err, size_t errlen)
{
	struct engine_wire *w;
	struct sockaddr_in sa;
	struct ifreq ifr;
	int one = 1, pmtu = IP_PMTUDISC_DO, buf = 8 << 20, ret;

	if (strlen(dev) >= IF_NAMESIZE) {
		snprintf(err, errlen, "underlay %s: name too long", dev);
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	strcpy(w->dev, dev);
	for (int i = 0; i < WIRE_SPORTS; i++)
		w->sfd[i] = -1;
	ret = dev_ipv4(dev, &w->ip);
	if (ret) {
		snprintf(err, errlen, "underlay %s: no IPv4 address (%s)", dev, strerror(-ret));
		free(w);
		return ret;
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (w->fd < 0 || w->efd < 0) {
		ret = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		if (w->fd >= 0)
			close(w->fd);
		if (w->efd >= 0)
			close(w->efd);
		free(w);
		return ret;
	}
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, dev);
	if (ioctl(w->fd, SIOCGIFMTU, &ifr)) {
		ret = -errno;
		snprintf(err, errlen, "underlay %s: %s", dev, strerror(errno));
		goto fail;
	}
	w->dev_mtu = (uint32_t)ifr.ifr_mtu;
	w->port_mtu = mtu_enum(w->dev_mtu);
	if (ioctl(w->fd, SIOCGIFINDEX, &ifr) == 0)
		w->ifindex = ifr.ifr_ifindex;
	{
		/* multicast: out on the underlay, never back to ourselves (the
		 * engine delivers to this host's QPs itself) */
		struct ip_mreqn mif = { .imr_ifindex = w->ifindex };
		int zero = 0;

		setsockopt(w->fd, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof(mif));
		setsockopt(w->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero));
	}
	setsockopt(w->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(w->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	setsockopt(w->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	setsockopt(w->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	setsockopt(w->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	/* trains of packets (wire.h): sent with UDP_SEGMENT, received with
	 * UDP_GRO (then a buffer holds up to 64 KiB of them) */
	w->gso = gso;
	w->gro = gso && setsockopt(w->fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
	w->rx_in_place_ok = !getenv("UNIRDMA_WIRE_RX_COPY") || strcmp(getenv("UNIRDMA_WIRE_RX_COPY"), "1");
	if (getenv("UNIRDMA_FAULT_IN_PLACE_SKEW")) {
		w->fault_skew = (uint32_t)strtoul(getenv("UNIRDMA_FAULT_IN_PLACE_SKEW"), NULL, 10);
		if (w->fault_skew)
			log_warn("fault injection: every %u-th datagram received in place is placed one packet off",
				 w->fault_skew);
	}
	w->rx_size = w->gro ? WIRE_RX_GRO_BUF : WIRE_RX_BUF;
	w->rx = malloc((size_t)WIRE_BATCH * w->rx_size);
	if (!w->rx) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(ROCE_UDP_PORT);
	if (bind(w->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		snprintf(err, errlen, "bind UDP %u: %s (is kernel rdma_rxe loaded in this namespace?)",
			 ROCE_UDP_PORT, strerror(errno));
		goto fail;
	}
	mcast_room();
	open_sports(w, buf, pmtu);
	d->eng.wire = w;
	ret = -pthread_create(&w->thread, NULL, wire_main, d);
	if (ret) {
		d->eng.wire = NULL;
		snprintf(err, errlen, "thread: %s", strerror(-ret));
		goto fail;
	}
	w->started = true;
	{
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &w->ip, a, sizeof(a));
		log_info("fabric: RoCEv2 on %s (%s, MTU %u, port MTU %u, UDP GSO/GRO %s)", dev, a, w->dev_mtu,
			 128u << w->port_mtu, w->gso ? (w->gro ? "on" : "GSO only") : "off");
	}
	return 0;
fail:
	close_sports(w);
	close(w->fd);
	close(w->efd);
	free(w->rx);
	free(w);
	return ret;
}

static void log_counters(const char *who, const struct wire_counters *c)
{
	char drops[256] = "";
	size_t n = 0;

	for (int i = 0; i < WDROP_NUM; i++)
		if (c->drops[i] && n < sizeof(drops))
			n += (size_t)snprintf(drops + n, sizeof(drops) - n, " %d:%llu", i, (unsigned long long)c->drops[i]);
	log_info("fabric %s: tx %llu rx %llu retransmits %llu timeouts %llu probes %llu held %llu acks %llu/%llu naks seq %llu/%llu rnr %llu/%llu drops%s",
		 who, (unsigned long long)c->tx_pkts, (unsigned long long)c->rx_pkts,
		 (unsigned long long)c->retransmits, (unsigned long long)c->timeouts,
		 (unsigned long long)c->tail_probes, (unsigned long long)c->held,
		 (unsigned long long)c->acks_tx, (unsigned long long)c->acks_rx,
		 (unsigned long long)c->naks_tx[WNAK_SEQ], (unsigned long long)c->naks_rx[WNAK_SEQ],
		 (unsigned long long)c->naks_tx[WNAK_RNR], (unsigned long long)c->naks_rx[WNAK_RNR], drops);
}

/* The engine thread has stopped (d->stopping set). */
void engine_wire_stop(struct urd_daemon *d)
{
	struct engine_wire *w = d->eng.wire;

	if (w) {
		if (w->started)
			pthread_join(w->thread, NULL);
		log_info("fabric stopped: sent %llu packets in %llu calls (%llu GSO trains, %llu dropped at the "
			 "socket), received %llu in %llu calls (%llu GRO trains)",
			 (unsigned long long)w->tx_pkts, (unsigned long long)w->tx_calls,
			 (unsigned long long)w->tx_gso_sends, (unsigned long long)w->tx_dropped,
			 (unsigned long long)w->rx_pkts, (unsigned long long)w->rx_calls,
			 (unsigned long long)w->rx_gro_trains);
		for (const struct engine_host *h = d->eng.dir.hosts; h; h = h->next)
			log_counters(h->name, &h->cnt);
		log_counters("(no host)", &d->eng.dir.cnt);
		close_sports(w);
		close(w->fd);
		close(w->efd);
		pthread_mutex_lock(&d->lock);
		d->eng.wire = NULL;
		pthread_mutex_unlock(&d->lock);
		free(w->rx);
		free(w);
	}
	pthread_mutex_lock(&d->lock);
	wire_dir_free(d);
	pthread_mutex_unlock(&d->lock);
}

bool engine_wire_on(const struct urd_daemon *d)
{
	return d->eng.wire != NULL;
}

uint32_t engine_wire_ip(const struct urd_daemon *d)
{
	return d->eng.wire ? d->eng.wire->ip : 0;
}

uint32_t engine_wire_dev_mtu(const struct urd_daemon *d)
{
	return d->eng.wire ? d->eng.wire->dev_mtu : 0;
}

uint32_t engine_port_mtu(const struct urd_daemon *d)
{
	return d->eng.wire ? d->eng.wire->port_mtu : IBV_MTU_4096;
}

const char *engine_wire_dev(const struct urd_daemon *d)
{
	return d->eng.wire ? d->eng.wire->dev : NULL;
}

void engine_wire_stats(const struct urd_daemon *d, struct engine_wire_stats *s)
{
	const struct engine_wire *w = d->eng.wire;

	memset(s, 0, sizeof(*s));
	if (!w)
		return;
	s->tx_calls = w->tx_calls;
	s->tx_pkts = w->tx_pkts;
	s->rx_calls = w->rx_calls;
	s->rx_pkts = w->rx_pkts;
	s->tx_dropped = w->tx_dropped;
	s->tx_gso_sends = w->tx_gso_sends;
	s->rx_gro_trains = w->rx_gro_trains;
	s->rx_placed_pkts = w->rx_placed_pkts;
	s->rx_placed_bytes = w->rx_placed_bytes;
	s->rx_place_misses = w->rx_place_misses;
	s->held_bytes = w->ooo_alloc;
	for (const struct wire_qp *q = w->ooo_list; q; q = q->ooo_next)
		s->held_qps++;
}

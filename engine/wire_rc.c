/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reliable connection on the wire, as rxe does it (ROCE.md section 2):
 *
 * Requester (engine thread, wire_rc_process): WQEs are copied out of the
 * send queue when they start and sent as packets of the path MTU, one PSN
 * each (a READ reserves one PSN per response packet); AckReq on a message's
 * last packet and every half window; at most cwnd (<= WIRE_WINDOW) PSNs
 * unacknowledged and max_rd_atomic READs/atomics in flight.
 *
 * Completer (wire thread, on ACKs, NAKs, read responses and atomic ACKs):
 * completes WQEs in order, go-back-N from the first unacknowledged PSN on a
 * PSN-sequence NAK or when the retransmission timer (4.096 us << timeout)
 * expires (retry_cnt times), waits the RNR timer on an RNR NAK (rnr_retry
 * times, 7 = forever), and maps the other NAKs to the statuses a program
 * expects (IBV_WC_REM_INV_REQ_ERR, _REM_ACCESS_ERR, _REM_OP_ERR).
 *
 * Responder (wire thread): executes requests in PSN order; a PSN ahead of
 * the expected one gets one PSN-sequence NAK per gap, a PSN behind it is a
 * duplicate: SEND/WRITE are acknowledged again without moving data, READs
 * are replayed and atomics answered with their saved original value from a
 * ring of responder resources.  No receive WQE: RNR NAK with min_rnr_timer.
 * Class C errors (access, invalid request) NAK and move the QP to error.
 *
 * Between unirdma daemons (not with external peers), a responder holds the
 * SEND and WRITE packets that come after a gap and says so in its NAK; the
 * requester then sends only the lost packet again (selective resend), and
 * the held ones go in once it arrives (ooo_hold, below).
 *
 * UC (IB spec 9.8.2, as rxe) runs through the same code with the UC opcodes
 * (RC's + 0x20): the requester sends without AckReq, window or timer and
 * completes a WQE once its last packet is out; the responder sends nothing
 * back.  A packet out of sequence, or any packet after one it dropped, is
 * dropped until a FIRST or ONLY starts a new message (rxe's drop_msg): the
 * message in progress is lost, and a receive WQE it had taken takes the next
 * SEND.  What RC NAKs (no receive WQE, a bad R_Key, a bad length) drops the
 * message; a malformed receive WQE still fails the QP (class A).
 */
#include <arpa/inet.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "futex.h"
#include "log.h"
#include "wire.h"

#define AETH_ACK      0x1f      /* ACK, credits "unlimited" as rxe sends it */
#define AETH_RNR      0x20
#define AETH_NAK      0x60
/* Bit 7 of the syndrome, reserved in the spec (0 from rxe and RNICs), on a
 * PSN-sequence NAK between unirdma daemons: the responder holds packets
 * after the gap (ooo_hold), so only the lost one need go again.  An older
 * unirdma requester masks it off and goes back, as for any NAK. */
#define AETH_HELD     0x80
#define NAK_SEQ       0
#define NAK_INV       1
#define NAK_ACCESS    2
#define NAK_OP        3

static const uint32_t rnr_10ns[32] = {
	65536000, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static void ooo_clear(struct wire_qp *q);

/* The packet came from another unirdmad (not an admitted external peer):
 * it holds out-of-order packets and resends selectively (AETH_HELD). */
static bool from_unirdma(const struct wire_rx *rx)
{
	return rx->host && !rx->host->external;
}

static uint64_t rto_ns(const struct vr_qp *qp)
{
	uint32_t t = qp->attr.timeout;

	if (!t)
		t = 14;
	if (t > 20)
		t = 20;
	if (t < 8)
		t = 8;          /* at least 1 ms: a user-space peer is no ASIC */
	return 4096ull << t;
}

static const struct urd_send_wqe *wqe_of(const struct wire_wqe *e)
{
	return (const struct urd_send_wqe *)e->wqe;
}

static uint32_t pkts_for(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

struct wire_qp *wire_rc_new(struct vr_qp *qp, uint32_t sip, uint32_t dip)
{
	struct wire_qp *q = calloc(1, sizeof(*q));
	uint32_t slot = 1u << qp->sq.q.shift, n = qp->sq.q.n ? qp->sq.q.n : 1;

	if (!q)
		return NULL;
	if (n > WIRE_MAX_INFLIGHT)
		n = WIRE_MAX_INFLIGHT;
	q->ring_n = n;
	q->wqe_bytes = (uint32_t)((sizeof(struct wire_wqe) + slot + 7) & ~7ul);
	q->ring = calloc(n, q->wqe_bytes);
	if (!q->ring) {
		free(q);
		return NULL;
	}
	q->qp = qp;
	q->sip = sip;
	q->dip = dip;
	q->psn = q->una = q->psn_max = q->cwnd_psn = qp->attr.sq_psn & 0xffffff;
	q->epsn = qp->attr.rq_psn & 0xffffff;
	q->next_idx = q->hi_idx = qp->sq.q.own;
	q->retry_left = qp->attr.retry_cnt;
	q->rnr_left = qp->attr.rnr_retry;
	q->cwnd = WIRE_WINDOW;
	return q;
}

/* RTR sets the responder's PSN, RTS the requester's (nothing is in flight
 * before RTS). */
void wire_rc_sync(struct vr_qp *qp)
{
	struct wire_qp *q = qp->eng.wire;
	uint32_t mtu = qp->attr.path_mtu ? qp->attr.path_mtu : IBV_MTU_1024;
	uint32_t port = engine_port_mtu(qp->vr->d);

	if (mtu > port)
		mtu = port;
	q->mtu = 128u << mtu;
	if (qp->state == IBV_QPS_RTR) {
		q->epsn = qp->attr.rq_psn & 0xffffff;
		ooo_clear(q);
	}
	if (q->next_idx == qp->sq.q.own && !q->cur_open) {
		q->psn = q->una = q->psn_max = q->cwnd_psn = qp->attr.sq_psn & 0xffffff;
		q->next_idx = q->hi_idx = qp->sq.q.own;
	}
	q->retry_left = qp->attr.retry_cnt;
	q->rnr_left = qp->attr.rnr_retry;
}

/* ns from now to deadline at (0: off; 1: due) */
static uint64_t ns_until(uint64_t at, uint64_t now)
{
	return at > now ? at - now : at ? 1 : 0;
}

bool engine_qp_wire(const struct vr_qp *qp, struct engine_qp_wire *s)
{
	const struct wire_qp *q = qp->eng.wire;
	uint64_t now = urd_now_ns();

	memset(s, 0, sizeof(*s));
	if (!q)
		return false;
	s->psn = q->psn;
	s->una = q->una;
	s->psn_max = q->psn_max;
	s->epsn = q->epsn;
	s->cwnd = q->cwnd;
	s->retry_left = q->retry_left;
	s->rnr_left = q->rnr_left;
	s->backoff = q->backoff;
	s->sq_own = qp->sq.q.own;
	s->sq_next = q->next_idx;
	s->sq_seen = qp->sq.q.seen;
	s->sq_prod = urd_queue_load_prod(&qp->sq.q);
	s->active = qp->eng.active;
	s->watching = qp->sq.polling;
	s->cur_idx = q->cur_idx;
	s->cur_pkt = q->cur_pkt;
	s->cur_open = q->cur_open;
	s->nak_sent = q->nak_sent;
	s->tlp_sent = q->tlp_sent;
	s->srtt_ns = q->srtt;
	s->rto_in_ns = ns_until(q->rto_at, now);
	s->tlp_in_ns = ns_until(q->tlp_at, now);
	s->rnr_in_ns = ns_until(q->rnr_at, now);
	return true;
}

/* ---- requester ----------------------------------------------------------- */

/* May the QP send to its peer now?  With a GRH: the peer GID is in the
 * directory, in the QP's tenant.  Without: the peer QPN's host is still
 * there (its receiver checks the tenant of our GID). */
static bool wire_rc_may_send(struct vr_qp *qp, struct wire_qp *q, struct engine_host **host)
{
	if (q->by_qpn) {
		*host = wire_host_by_qpn(qp->vr->d, qp->attr.dest_qp_num & 0xffffff);
		if (*host && (*host)->ip == q->dip)
			return true;
		CNT_BOTH(qp, drops_other_tenant, 1);
		return false;
	}
	return wire_may_send(qp, q->dip, host);
}

/* The WQE's local memory, checked again each time packets are built from it
 * (the big lock was free in between: an MR may be gone).  0 or a status. */
static int wqe_gather(struct vr_qp *qp, const struct wire_wqe *e, const struct urd_opcode_info *op,
		      struct vsge *local, uint32_t *n, uint32_t slot_bytes)
{
	const struct urd_send_wqe *w = wqe_of(e);
	uint64_t len = 0;

	*n = 0;
	if ((w->flags & URD_WQE_INLINE) && (op->flags & URD_OPF_INLINE)) {
		if (w->inline_len > qp->cap.max_inline_data || w->inline_len > slot_bytes - URD_SEND_WQE_HDR)
			return IBV_WC_LOC_LEN_ERR;
		local[0] = (struct vsge){ .mr = NULL, .off = 0, .len = w->inline_len, .flat = (uint8_t *)(w + 1) };
		*n = 1;
		len = w->inline_len;
	} else {
		const struct urd_sge *sg = (const struct urd_sge *)(w + 1);

		if (w->num_sge > qp->cap.max_send_sge || w->num_sge * sizeof(struct urd_sge) > slot_bytes - URD_SEND_WQE_HDR)
			return IBV_WC_LOC_LEN_ERR;
		for (uint32_t i = 0; i < w->num_sge; i++) {
			if (!sg[i].length)
				continue;
			if (mr_check_local(qp->vr, qp->pd, &sg[i],
					   (op->flags & URD_OPF_LOCAL_WRITE) ? IBV_ACCESS_LOCAL_WRITE : 0, &local[*n]))
				return IBV_WC_LOC_PROT_ERR;
			len += sg[i].length;
			(*n)++;
		}
	}
	if (len > URD_MAX_MSG || ((op->flags & URD_OPF_ATOMIC) && len != 8))
		return IBV_WC_LOC_LEN_ERR;
	return 0;
}

static uint32_t wqe_len(const struct urd_send_wqe *w, const struct urd_opcode_info *op)
{
	if ((w->flags & URD_WQE_INLINE) && (op->flags & URD_OPF_INLINE))
		return w->inline_len;
	{
		const struct urd_sge *sg = (const struct urd_sge *)(w + 1);
		uint64_t len = 0;

		for (uint32_t i = 0; i < w->num_sge && i < URD_MAX_SGE; i++)
			len += sg[i].length;
		return (uint32_t)(len > URD_MAX_MSG ? URD_MAX_MSG : len);
	}
}

/* Completes the WQE at the head of the send queue. */
static void complete_head(struct vr_qp *qp, struct wire_qp *q, enum ibv_wc_status st)
{
	struct wire_wqe *e = wire_slot(q, qp->sq.q.own);
	const struct urd_send_wqe *w = wqe_of(e);
	const struct urd_opcode_info *op = urd_opcode(w->opcode, qp->type);

	if (op && (op->flags & (URD_OPF_READ | URD_OPF_ATOMIC)) && q->rd_out)
		q->rd_out--;
	if (q->cur_open && q->cur_idx == qp->sq.q.own)
		q->cur_open = false;
	/* a go-back may have aimed at it; it is done, whatever comes next
	 * takes the PSNs after it */
	if (psn_diff(q->psn, (e->last_psn + 1) & 0xffffff) < 0)
		q->psn = (e->last_psn + 1) & 0xffffff;
	if (psn_diff(q->una, (e->last_psn + 1) & 0xffffff) < 0 && st == IBV_WC_SUCCESS)
		q->una = (e->last_psn + 1) & 0xffffff;
	if (st == IBV_WC_SUCCESS)
		count_tx(qp, w->opcode, e->len);
	urd_queue_advance_cons(&qp->sq.q);
	complete_send(qp, w, st);
}

/* A WQE failed: it completes with st, the QP goes to the error state and the
 * flush step completes the rest. */
static void fail_head(struct vr_qp *qp, struct wire_qp *q, enum ibv_wc_status st)
{
	complete_head(qp, q, st);
	q->rto_at = q->rnr_at = q->tlp_at = 0;
	q->cur_open = false;
	q->next_idx = q->hi_idx = qp->sq.q.own;
	qp_fail(qp, QP_FAIL_WQE);
}

static uint8_t req_opcode(const struct urd_opcode_info *op, uint32_t wr_opcode, uint32_t k, uint32_t npkts, bool uc)
{
	bool first = k == 0, last = k + 1 == npkts;
	/* SEND and WRITE number their positions alike from their FIRST:
	 * +0 FIRST, +1 MIDDLE, +2 LAST, +3 LAST_IMM, +4 ONLY, +5 ONLY_IMM */
	uint8_t base = (op->flags & URD_OPF_WRITE) ? ROCE_RC_WRITE_FIRST : ROCE_RC_SEND_FIRST;

	if (uc)
		base = (uint8_t)(base + ROCE_UC_SEND_FIRST - ROCE_RC_SEND_FIRST);
	uint8_t imm = (op->flags & URD_OPF_IMM) ? 1 : 0;

	if (op->flags & URD_OPF_READ)
		return ROCE_RC_READ_REQUEST;
	if (op->flags & URD_OPF_ATOMIC)
		return wr_opcode == URD_WR_ATOMIC_CMP_AND_SWP ? ROCE_RC_CMP_SWAP : ROCE_RC_FETCH_ADD;
	if ((op->flags & URD_OPF_INV) && last)          /* RC only (opcode.c) */
		return first ? ROCE_RC_SEND_ONLY_INV : ROCE_RC_SEND_LAST_INV;
	if (first && last)
		return (uint8_t)(base + 4 + imm);
	if (first)
		return base;
	if (last)
		return (uint8_t)(base + 2 + imm);
	return (uint8_t)(base + 1);
}

static_assert(ROCE_RC_SEND_ONLY_IMM - ROCE_RC_SEND_FIRST == 5 && ROCE_RC_WRITE_ONLY_IMM - ROCE_RC_WRITE_FIRST == 5 &&
	      ROCE_RC_SEND_LAST - ROCE_RC_SEND_FIRST == ROCE_RC_WRITE_LAST - ROCE_RC_WRITE_FIRST &&
	      ROCE_UC_WRITE_FIRST - ROCE_UC_SEND_FIRST == ROCE_RC_WRITE_FIRST - ROCE_RC_SEND_FIRST &&
	      ROCE_UC_WRITE_ONLY_IMM - ROCE_UC_WRITE_FIRST == 5,
	      "SEND and WRITE opcodes share their position layout, UC's as RC's");

/* Congestion window, in PSNs: additive increase (one PSN per window of
 * PSNs acknowledged for the first time, progress()), halved on a loss (a
 * PSN-sequence NAK, a timeout), never below WIRE_CWND_MIN nor above
 * WIRE_WINDOW (wire.h).
 * Go-back-N resends everything in flight after a loss: a window near the
 * path's bandwidth-delay product keeps that cost small. */
#define WIRE_CWND_MIN 16u

static uint32_t ack_every(const struct wire_qp *q)
{
	uint32_t n = q->cwnd / 2;

	return n < 1 ? 1 : n > WIRE_ACK_EVERY ? WIRE_ACK_EVERY : n;
}

static void cwnd_loss(struct wire_qp *q)
{
	q->cwnd /= 2;
	if (q->cwnd < WIRE_CWND_MIN)
		q->cwnd = WIRE_CWND_MIN;
	q->cwnd_acc = 0;
}

static void cwnd_acked(struct wire_qp *q, uint32_t n)
{
	q->cwnd_acc += n;
	while (q->cwnd < WIRE_WINDOW && q->cwnd_acc >= q->cwnd) {
		q->cwnd_acc -= q->cwnd;
		q->cwnd++;
	}
	if (q->cwnd >= WIRE_WINDOW)
		q->cwnd_acc = 0;
}

/* Packet k of WQE e (for a READ: the request for responses k..). */
static void send_packet(struct vr_qp *qp, struct wire_qp *q, struct wire_wqe *e, const struct urd_opcode_info *op,
			const struct vsge *local, uint32_t n, uint32_t k, struct engine_host *host, bool ackreq)
{
	struct engine_wire *w = qp->vr->d->eng.wire;
	const struct urd_send_wqe *wq = wqe_of(e);
	struct wire_pkt_out p;
	uint64_t off = (uint64_t)k * q->mtu;
	bool last;

	memset(&p, 0, sizeof(p));
	p.h.opcode = req_opcode(op, wq->opcode, k, e->npkts, qp->type == IBV_QPT_UC);
	p.h.dqpn = qp->attr.dest_qp_num & 0xffffff;
	p.h.psn = (e->first_psn + k) & 0xffffff;
	p.sip = q->sip;
	p.dip = q->dip;
	p.host = host;
	p.eng = &qp->vr->d->eng;
	p.lqpn = qp->qpn;
	if (op->flags & URD_OPF_READ) {
		p.h.va = wq->remote_addr + off;
		p.h.rkey = wq->rkey;
		p.h.dmalen = (uint32_t)(e->len - off);
		last = true;
		if (p.h.dmalen >= WIRE_IN_PLACE_MIN)
			wire_in_place_hint(qp->vr->d->eng.wire);
	} else if (op->flags & URD_OPF_ATOMIC) {
		p.h.va = wq->remote_addr;
		p.h.rkey = wq->rkey;
		p.h.swap_add = wq->opcode == URD_WR_ATOMIC_CMP_AND_SWP ? wq->swap : wq->compare_add;
		p.h.cmp = wq->compare_add;
		last = true;
	} else {
		last = k + 1 == e->npkts;
		p.pay = local;
		p.npay = n;
		p.pay_off = off;
		p.pay_len = (uint32_t)(last ? e->len - off : q->mtu);
		if (op->flags & URD_OPF_WRITE) {
			p.h.va = wq->remote_addr;
			p.h.rkey = wq->rkey;
			p.h.dmalen = e->len;
		}
		if (last) {
			p.h.imm_be = wq->imm_data;
			p.h.ieth_rkey = wq->invalidate_rkey;
			p.h.se = (wq->flags & URD_WQE_SOLICITED) != 0;
		}
	}
	if (qp->type == IBV_QPT_RC && (ackreq || last || ++q->noack >= ack_every(q))) {
		p.h.ackreq = true;
		q->noack = 0;
	}
	wire_emit(w, &p);
}

/* Go back to the first unacknowledged PSN: the WQE that holds it is sent
 * again from that packet on, and every WQE after it. */
static void go_back(struct vr_qp *qp, struct wire_qp *q)
{
	uint32_t idx = qp->sq.q.own;

	log_debug("qp %u: go back to psn %#x (sent up to %#x, srtt %lu us, cwnd %u)", qp->qpn, q->una, q->psn,
		  (unsigned long)(q->srtt / 1000), q->cwnd);

	q->cur_open = false;
	q->rd_out = 0;
	q->noack = 0;
	q->probe_at = 0;
	if (idx == q->next_idx) {
		/* every WQE started is complete.  una may lie further on,
		 * in WQEs an earlier go-back took back (the responder has
		 * them from before it): those start again at the PSNs they
		 * had, from psn on, and the responder takes them as the
		 * duplicates they are.  Starting the next WQE at una would
		 * give its first packet a PSN the responder knows as a
		 * middle one (a class C error, seen under 1 % loss) */
		if (psn_diff(q->una, q->psn) < 0)
			q->psn = q->una;
		/* those WQEs wait in the send queue: the engine takes them */
		engine_activate(qp);
		return;
	}
	{
		struct wire_wqe *e = wire_slot(q, idx);
		int32_t k = psn_diff(q->una, e->first_psn);

		if (k < 0 || (uint32_t)k >= e->npkts)
			k = 0;
		q->cur_idx = idx;
		q->cur_open = true;
		q->cur_pkt = (uint32_t)k;
		q->next_idx = idx + 1;
		q->psn = (e->first_psn + (uint32_t)k) & 0xffffff;
		if (e->failed)
			q->cur_open = false, q->next_idx = idx;
	}
	engine_activate(qp);
}

/* The timer that sends again: srtt + 4 rttvar as TCP's (RFC 6298), at
 * least RESEND_MIN_NS and 2 ms before a first sample, doubled at each
 * expiry until an ACK brings progress, never more than the
 * QP's local ACK timeout.  A lost last packet of a burst is found only by
 * this timer, so its floor is what loss costs most; round trips that a busy
 * CPU stretches raise rttvar and with it the timer.  Going back early costs
 * a few duplicate packets, which the responder acknowledges without
 * executing; retry_cnt counts only whole timeouts without progress
 * (wire_rc_timer), so a dead peer still fails after retry_cnt x timeout, as
 * the spec says. */
#define RESEND_MIN_NS (1000ull * 1000)
#define TLP_MIN_NS    (100ull * 1000)   /* a tail-loss probe waits 2 srtt, at least this */
#define RENAK_NS      (200ull * 1000)  /* a responder NAKs a gap again after this (responder()) */
#define RENAK_HELD_NS (50ull * 1000)   /* ... to a unirdma peer: it resends only the one packet */

static uint64_t resend_ns(const struct vr_qp *qp, const struct wire_qp *q)
{
	uint64_t t = q->srtt ? q->srtt + 4 * q->rttvar : 2000000, spec = rto_ns(qp);

	if (t < RESEND_MIN_NS)
		t = RESEND_MIN_NS;
	t <<= q->backoff;               /* doubled at each expiry without progress */
	return t < spec ? t : spec;
}

static void arm_rto(struct vr_qp *qp, struct wire_qp *q, uint64_t now)
{
	uint64_t whole;

	if (!q->progress_at)
		q->progress_at = now;
	q->rto_at = now + resend_ns(qp, q);
	/* fire when a whole local ACK timeout without progress ends, so that
	 * retry_cnt x timeout holds however the doublings fall */
	whole = q->progress_at + rto_ns(qp);
	if (whole > now && whole < q->rto_at)
		q->rto_at = whole;
	q->tlp_at = 0;
	if (q->srtt && !q->tlp_sent && qp->type == IBV_QPT_RC) {
		uint64_t t = 2 * q->srtt;

		t = now + (t < TLP_MIN_NS ? TLP_MIN_NS : t);
		if (t < q->rto_at)
			q->tlp_at = t;
	}
	wire_timer_arm(qp->vr->d->eng.wire, q, q->tlp_at ? q->tlp_at : q->rto_at);
}

/* Sends packet psn again, with AckReq, from the started SEND or WRITE that
 * holds it (only those: a READ request asks for every response again, an
 * atomic is replayed by the responder anyway).  false when none does, or it
 * cannot go now (the resend timer finds what is wrong). */
static bool resend_psn(struct vr_qp *qp, struct wire_qp *q, uint32_t psn, struct engine_host **host)
{
	struct vsge local[ENGINE_MAX_SGE];
	const struct urd_opcode_info *op;
	uint32_t n;

	if (qp->state != IBV_QPS_RTS || psn_diff(psn, q->una) < 0 || psn_diff(psn, q->psn_max) >= 0)
		return false;
	for (uint32_t idx = qp->sq.q.own; idx != q->next_idx; idx++) {
		struct wire_wqe *e = wire_slot(q, idx);
		int32_t k = psn_diff(psn, e->first_psn);

		if (k < 0 || (uint32_t)k >= e->npkts)
			continue;
		op = urd_opcode(wqe_of(e)->opcode, qp->type);
		if (e->failed || !op || (op->flags & (URD_OPF_READ | URD_OPF_ATOMIC | URD_OPF_LOCAL)))
			return false;
		if (!wire_rc_may_send(qp, q, host) || wqe_gather(qp, e, op, local, &n, 1u << qp->sq.q.shift))
			return false;
		send_packet(qp, q, e, op, local, n, (uint32_t)k, *host, true);
		wire_flush(qp->vr->d->eng.wire);
		q->probe_at = 0;        /* no RTT sample across a resend */
		return true;
	}
	return false;
}

/* A tail-loss probe (the idea of RFC 8985, on go-back-N): no ACK for two
 * round trips, so the last packet sent goes again, with AckReq.  If it was
 * that packet that was lost (the last before the window filled or the
 * program stopped posting, which nothing follows to draw a NAK), the
 * responder takes it and acknowledges everything; if an earlier one was
 * lost, the probe arrives out of sequence and draws the NAK; if only the
 * ACK was lost, the duplicate is acknowledged again.  One probe until the
 * next progress, no cut of the window: a probe costs one packet where the
 * resend timer costs at least RESEND_MIN_NS, the whole window again and
 * half of cwnd.  Only SEND and WRITE packets: a READ request asks for
 * every response again, an atomic is replayed by the responder anyway. */
static void tail_probe(struct vr_qp *qp, struct wire_qp *q)
{
	struct engine_host *host = NULL;

	q->tlp_sent = true;
	/* after a selective resend the packet most likely lost is that one
	 * (or its ACK): the probe asks for it, not for the last */
	if (psn_diff(q->psn, q->una) <= 0 ||
	    !resend_psn(qp, q, q->sel_wait && q->back_psn == q->una ? q->una : (q->psn - 1) & 0xffffff, &host))
		return;
	if (host)
		host->cnt.tail_probes++;
	else
		qp->vr->d->eng.dir.cnt.tail_probes++;
}

static bool complete_before(struct vr_qp *qp, struct wire_qp *q, uint32_t psn);
static bool in_place(struct vr_qp *qp, const struct wire_rx *rx, const struct vsge *g, uint32_t ng, uint64_t off);

/* the WQE at next_idx has its PSNs: the next one starts */
static void started(struct wire_qp *q)
{
	q->next_idx++;
	if ((int32_t)(q->next_idx - q->hi_idx) > 0)
		q->hi_idx = q->next_idx;
}

bool wire_rc_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes)
{
	struct engine_wire *w = qp->vr->d->eng.wire;
	struct wire_qp *q = qp->eng.wire;
	struct vr_ring *sq = &qp->sq;
	uint32_t slot_bytes = 1u << sq->q.shift;
	struct engine_host *host = NULL;
	bool more = false, sent = false, may;

	if (!w || q->rnr_at || slot_bytes > WQE_MAX_BYTES || slot_bytes < URD_SEND_WQE_HDR) {
		sq_unwatch(sq);
		return false;
	}
	may = wire_rc_may_send(qp, q, &host);
	while (budget) {
		struct vsge local[ENGINE_MAX_SGE];
		const struct urd_opcode_info *op;
		struct wire_wqe *e;
		uint32_t n = 0;
		int st;

		if (*bytes <= 0) {
			more = true;
			break;
		}
		if (!q->cur_open) {
			if (q->next_idx == sq->q.seen && !sq_fetch(qp))
				break;
			if (q->next_idx == sq->q.seen)
				break;
			if (qp->state != IBV_QPS_RTS) {
				sq_unwatch(sq);
				break;
			}
			if (q->next_idx - sq->q.own >= q->ring_n || psn_diff(q->psn, q->una) >= (int32_t)q->cwnd)
				break;  /* the window is full: an ACK re-activates us */
			e = wire_slot(q, q->next_idx);
			wqe_copy(e->wqe, urd_queue_slot(&sq->q, q->next_idx), slot_bytes);
			op = urd_opcode(wqe_of(e)->opcode, qp->type);
			e->failed = false;
			if (op && (op->flags & URD_OPF_LOCAL)) {
				/* a memory window operation (mw.c): once everything
				 * before it completed, so that its CQE comes in
				 * order and LOCAL_INV's fence holds; no PSN */
				if (q->next_idx != sq->q.own)
					break;
				e->len = 0;
				e->npkts = 0;
				e->first_psn = q->psn;
				e->last_psn = (q->psn - 1) & 0xffffff;
				started(q);
				budget--;
				st = local_op_execute(qp, wqe_of(e));
				if (st) {
					fail_head(qp, q, (enum ibv_wc_status)st);
					return false;
				}
				complete_head(qp, q, IBV_WC_SUCCESS);
				continue;
			}
			if (!op) {
				st = IBV_WC_LOC_QP_OP_ERR;
			} else {
				st = wqe_gather(qp, e, op, local, &n, slot_bytes);
				e->len = wqe_len(wqe_of(e), op);
			}
			if (st) {
				/* it fails in order: once everything before it completed */
				if (q->next_idx != sq->q.own)
					break;
				started(q);
				fail_head(qp, q, (enum ibv_wc_status)st);
				return false;
			}
			if ((op->flags & (URD_OPF_READ | URD_OPF_ATOMIC)) &&
			    q->rd_out >= (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1u))
				break;
			e->npkts = (op->flags & URD_OPF_ATOMIC) ? 1 : pkts_for(e->len, q->mtu);
			e->first_psn = q->psn;
			e->last_psn = (q->psn + e->npkts - 1) & 0xffffff;
			q->cur_idx = q->next_idx;
			started(q);
			q->cur_open = true;
			q->cur_pkt = 0;
			*bytes -= 512;
			budget--;
		} else {
			e = wire_slot(q, q->cur_idx);
			op = urd_opcode(wqe_of(e)->opcode, qp->type);
			st = op ? wqe_gather(qp, e, op, local, &n, slot_bytes) : IBV_WC_LOC_QP_OP_ERR;
			if (st) {
				if (q->cur_idx != sq->q.own)
					break;
				fail_head(qp, q, (enum ibv_wc_status)st);
				return false;
			}
		}
		/* after a go-back, ACKs may have come for packets sent before
		 * it: the responder has those, they are not sent again.  A WQE
		 * it has whole completes here (an ACK for it came while the
		 * go-back had taken it back: sending it again would leave its
		 * completion to the duplicate's ACK, and nothing would send it
		 * again if that were lost: una is past its PSNs) */
		if (!(op->flags & (URD_OPF_READ | URD_OPF_ATOMIC)) && psn_diff(q->una, q->psn) > 0) {
			uint32_t k = (uint32_t)psn_diff(q->una, e->first_psn);

			if (k < e->npkts) {
				q->cur_pkt = k;
				q->psn = q->una;
			} else {
				q->cur_pkt = e->npkts;
				q->psn = (e->last_psn + 1) & 0xffffff;
				q->cur_open = false;
				complete_before(qp, q, q->una);
				if (qp->state == IBV_QPS_ERR)
					return false;
				continue;
			}
		}
		if (!q->probe_at) {
			/* an RTT sample: this packet's PSN, acknowledged when una
			 * passes it (none across a resend: Karn) */
			q->probe_at = now;
			q->probe_psn = q->psn;
		}
		if (op->flags & (URD_OPF_READ | URD_OPF_ATOMIC)) {
			if (may)
				send_packet(qp, q, e, op, local, n, q->cur_pkt, host, false);
			q->rd_out++;
			q->psn = (e->last_psn + 1) & 0xffffff;
			if (psn_diff(q->psn, q->psn_max) > 0)
				q->psn_max = q->psn;
			q->cur_open = false;
			sent = true;
			continue;
		}
		while (q->cur_pkt < e->npkts && psn_diff(q->psn, q->una) < (int32_t)q->cwnd && *bytes > 0) {
			if (may)
				send_packet(qp, q, e, op, local, n, q->cur_pkt, host, false);
			q->cur_pkt++;
			q->psn = (q->psn + 1) & 0xffffff;
			if (psn_diff(q->psn, q->psn_max) > 0)
				q->psn_max = q->psn;
			if (qp->type == IBV_QPT_UC)
				q->una = q->psn;        /* nothing is acknowledged */
			*bytes -= q->mtu;
			sent = true;
		}
		if (q->cur_pkt < e->npkts) {
			more = *bytes <= 0;
			break;
		}
		q->cur_open = false;
		if (qp->type == IBV_QPT_UC)
			complete_head(qp, q, IBV_WC_SUCCESS);   /* sent: done */
	}
	/* the budget ran out with WQEs still to start: the QP stays active.
	 * (Dropping it was a hang: after a go-back, WQEs the responder has
	 * whole complete here without a packet, so no ACK would come to
	 * re-activate it; ib_write_bw -s 64 across hosts hung 1 run in 6.) */
	if (!budget && (q->cur_open || q->next_idx != sq->q.seen))
		more = true;
	if (sent && !q->rto_at && qp->type == IBV_QPT_RC)
		arm_rto(qp, q, now);
	wire_flush(w);
	if (!more)
		sq_unwatch(sq);
	return more;
}

/* ---- completer ----------------------------------------------------------- */

/* Every WQE whose PSNs all lie before psn completes, up to the first READ or
 * atomic (those complete by their responses).  Returns true if one did. */
static bool complete_before(struct vr_qp *qp, struct wire_qp *q, uint32_t psn)
{
	bool did = false;

	while (qp->sq.q.own != q->next_idx && qp->state != IBV_QPS_ERR) {
		struct wire_wqe *e = wire_slot(q, qp->sq.q.own);
		const struct urd_opcode_info *op = urd_opcode(wqe_of(e)->opcode, qp->type);

		if (!op || (op->flags & (URD_OPF_READ | URD_OPF_ATOMIC)))
			break;
		if (psn_diff(e->last_psn, psn) >= 0)
			break;
		if (psn_diff(e->last_psn, q->psn_max) >= 0)
			break;  /* not all of it was sent yet (after a go-back
				 * it was: an ACK for what went before counts) */
		complete_head(qp, q, IBV_WC_SUCCESS);
		did = true;
	}
	return did;
}

/* The first READ or atomic, among the WQEs started, that an acknowledgement
 * up to una would pass (one whose first PSN lies before una), or NULL; *idx
 * is its SQ index.  Those complete by their responses only, and una stays at
 * the first of those not got: moving past them would make the responses look
 * stale.  The WQEs a go-back took back count too (next_idx to hi_idx): they
 * start again with the PSNs they had, and an ACK for what came after one of
 * them (sent before the go-back, the responder answering every request of
 * it in order) means its responses were lost.  (Looking at the head only,
 * an ACK that arrived while a READ was taken back moved una past it: its
 * responses were then all dropped as stale and the QP resent it until
 * retry exceeded; UCX's io_demo across hosts hung so, ~1 run in 10 with a
 * busy CPU.) */
static struct wire_wqe *rd_before(struct vr_qp *qp, struct wire_qp *q, uint32_t una, uint32_t *idx)
{
	for (uint32_t i = qp->sq.q.own; (int32_t)(q->hi_idx - i) > 0; i++) {
		struct wire_wqe *e = wire_slot(q, i);
		const struct urd_opcode_info *op;

		if (psn_diff(una, e->first_psn) <= 0)
			return NULL;
		op = urd_opcode(wqe_of(e)->opcode, qp->type);
		if (op && (op->flags & (URD_OPF_READ | URD_OPF_ATOMIC))) {
			*idx = i;
			return e;
		}
	}
	return NULL;
}

/* A NAK says the responder expects psn: everything before it arrived, up to
 * the first READ or atomic that still waits for its responses
 * (rd_before). */
static void nak_una(struct vr_qp *qp, struct wire_qp *q, uint32_t psn)
{
	uint32_t idx;
	struct wire_wqe *e = rd_before(qp, q, psn, &idx);

	if (e)
		psn = e->first_psn;
	if (psn_diff(psn, q->una) > 0)
		q->una = psn;
}

static void progress(struct vr_qp *qp, struct wire_qp *q, uint32_t una, uint64_t now)
{
	/* The window grows by the PSNs acknowledged for the first time:
	 * those between cwnd_psn and una.  (Counted from q->una, it did not
	 * grow at all where WQEs end on the ACK's PSN: complete_head moves
	 * q->una first.  After a loss, a stream of one-packet WRITEs kept
	 * WIRE_CWND_MIN for ever.) */
	if (psn_diff(una, q->cwnd_psn) > 0) {
		cwnd_acked(q, (uint32_t)psn_diff(una, q->cwnd_psn));
		q->cwnd_psn = una;
	}
	if (psn_diff(una, q->una) > 0)
		q->una = una;
	q->in_retry = false;
	q->progress_at = now;
	q->backoff = 0;
	q->tlp_sent = false;
	q->sel_wait = false;
	if (q->probe_at && psn_diff(una, q->probe_psn) > 0) {
		/* a round trip: smoothed as TCP does (RFC 6298) */
		uint64_t rtt = now - q->probe_at;

		if (!q->srtt) {
			q->srtt = rtt;
			q->rttvar = rtt / 2;
		} else {
			uint64_t dev = rtt > q->srtt ? rtt - q->srtt : q->srtt - rtt;

			q->rttvar = (3 * q->rttvar + dev) / 4;
			q->srtt = (7 * q->srtt + rtt) / 8;
		}
		q->probe_at = 0;
	}
	q->retry_left = qp->attr.retry_cnt;
	q->rnr_left = qp->attr.rnr_retry;
	if (psn_diff(q->una, q->psn) >= 0) {
		/* nothing on the wire (the rest of a WQE may wait for the
		 * engine: it arms the timer again when it sends) */
		q->rto_at = q->tlp_at = 0;
		q->progress_at = 0;
	} else {
		arm_rto(qp, q, now);
	}
	engine_activate(qp);
}

static enum ibv_wc_status nak_status(uint8_t code)
{
	switch (code) {
	case NAK_INV: return IBV_WC_REM_INV_REQ_ERR;
	case NAK_ACCESS: return IBV_WC_REM_ACCESS_ERR;
	default: return IBV_WC_REM_OP_ERR;
	}
}

static void read_response(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint64_t now)
{
	uint32_t psn = rx->h.psn;
	struct wire_wqe *e;
	const struct urd_opcode_info *op;
	struct vsge local[ENGINE_MAX_SGE];
	uint32_t n, k, fl = roce_op_flags(rx->h.opcode);

	complete_before(qp, q, psn);
	if (qp->sq.q.own == q->next_idx || qp->state == IBV_QPS_ERR)
		return;
	e = wire_slot(q, qp->sq.q.own);
	op = urd_opcode(wqe_of(e)->opcode, qp->type);
	if (!op || !(op->flags & URD_OPF_READ))
		return;
	if (psn_diff(psn, q->una) != 0) {
		if (psn_diff(psn, q->una) > 0 && !q->rnr_at && !q->in_retry) {
			/* a response was lost: ask again from the first missing one,
			 * once until the responses resume (rxe's started_retry) */
			rx->cnt->retransmits++;
			q->in_retry = true;
			cwnd_loss(q);
			go_back(qp, q);
		}
		return;
	}
	k = (uint32_t)psn_diff(psn, e->first_psn);
	if (k >= e->npkts)
		return;
	if (wqe_gather(qp, e, op, local, &n, 1u << qp->sq.q.shift)) {
		fail_head(qp, q, IBV_WC_LOC_PROT_ERR);
		return;
	}
	{
		uint64_t off = (uint64_t)k * q->mtu;
		bool last = (fl & ROCE_F_LAST) != 0;
		uint32_t want = last ? (uint32_t)(e->len - off) : q->mtu;

		if (rx->h.payload_len != want || (last != (k + 1 == e->npkts))) {
			log_debug("qp %u: bad read response psn %#x (packet %u of %u, opcode %#x, %u bytes, want %u)",
				  qp->qpn, psn, k, e->npkts, rx->h.opcode, rx->h.payload_len, want);
			fail_head(qp, q, IBV_WC_BAD_RESP_ERR);
			return;
		}
		if (!in_place(qp, rx, local, n, off))
			vsge_write(&qp->vr->d->eng, local, n, off, rx->h.payload, rx->h.payload_len);
		progress(qp, q, (psn + 1) & 0xffffff, now);
		if (last)
			complete_head(qp, q, IBV_WC_SUCCESS);
	}
}

static void atomic_ack(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint64_t now)
{
	struct wire_wqe *e;
	const struct urd_opcode_info *op;
	struct vsge local[ENGINE_MAX_SGE];
	uint32_t n;
	uint64_t orig = rx->h.orig;

	complete_before(qp, q, rx->h.psn);
	if (qp->sq.q.own == q->next_idx || qp->state == IBV_QPS_ERR)
		return;
	e = wire_slot(q, qp->sq.q.own);
	op = urd_opcode(wqe_of(e)->opcode, qp->type);
	if (!op || !(op->flags & URD_OPF_ATOMIC) || e->first_psn != rx->h.psn)
		return;
	if (wqe_gather(qp, e, op, local, &n, 1u << qp->sq.q.shift)) {
		fail_head(qp, q, IBV_WC_LOC_PROT_ERR);
		return;
	}
	vsge_write(&qp->vr->d->eng, local, n, 0, (const uint8_t *)&orig, 8);
	progress(qp, q, (rx->h.psn + 1) & 0xffffff, now);
	complete_head(qp, q, IBV_WC_SUCCESS);
}

static void ack(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint64_t now)
{
	uint32_t psn = rx->h.psn, una0 = q->una;
	uint8_t syn = rx->h.syndrome;
	bool moved;

	/* psn_max, not psn: after a go-back, ACKs for what was sent before it
	 * are still good news */
	if (psn_diff(psn, q->una) < -1 || psn_diff(psn, q->psn_max) >= 0)
		return;         /* stale, or for a PSN we never sent */
	switch (syn & 0x60) {
	case 0x00:      /* ACK */
		rx->cnt->acks_rx++;
		moved = complete_before(qp, q, (psn + 1) & 0xffffff);
		if (qp->state == IBV_QPS_ERR)
			return;
		{
			uint32_t una = (psn + 1) & 0xffffff, idx;
			struct wire_wqe *e = rd_before(qp, q, una, &idx);

			/* a READ or atomic keeps una at its first PSN; an ACK
			 * past it means its responses were lost.  Started and at
			 * the head: it goes again now; taken back by a go-back:
			 * it goes again when the engine reaches it */
			if (e && idx == qp->sq.q.own && idx != q->next_idx) {
				/* (unless a go-back to it waits for the engine
				 * already: a burst of ACKs asks once) */
				if (q->cur_open && q->cur_idx == idx && q->psn == e->first_psn)
					return;
				q->una = e->first_psn;
				rx->cnt->retransmits++;
				go_back(qp, q);
				return;
			}
			if (e)
				una = e->first_psn;
			/* an ACK for what was acknowledged already (the
			 * answer to a duplicate) is no progress: it leaves the
			 * retry count, the backoff and the timer as they are,
			 * or a peer that keeps acknowledging nothing new would
			 * hold a WR off IBV_WC_RETRY_EXC_ERR for ever */
			if (moved || psn_diff(una, una0) > 0)
				progress(qp, q, una, now);
		}
		break;
	case 0x20:      /* RNR NAK */
		rx->cnt->naks_rx[WNAK_RNR]++;
		complete_before(qp, q, psn);
		if (qp->state == IBV_QPS_ERR)
			return;
		nak_una(qp, q, psn);
		if (q->rnr_left != 7) {
			if (!q->rnr_left) {
				fail_head(qp, q, IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			q->rnr_left--;
		}
		q->rnr_at = now + (uint64_t)rnr_10ns[syn & 0x1f] * 10000ull;
		q->rto_at = 0;
		wire_timer_arm(qp->vr->d->eng.wire, q, q->rnr_at);
		break;
	case 0x60:      /* NAK */
		switch (syn & 0x1f) {
		case NAK_SEQ:
			rx->cnt->naks_rx[WNAK_SEQ]++;
			complete_before(qp, q, psn);
			if (qp->state == IBV_QPS_ERR)
				return;
			/* the same NAK again within a round trip of going back
			 * for it: drawn by packets sent before that (a responder
			 * NAKs again after RENAK_NS), not by the resent ones */
			if (psn == q->back_psn && q->back_at && now - q->back_at < (q->srtt ? q->srtt : RENAK_NS))
				break;
			q->back_psn = psn;
			q->back_at = now;
			nak_una(qp, q, psn);
			rx->cnt->retransmits++;
			/* a unirdma responder that holds what came after the gap:
			 * only the lost packet goes again (a selective resend, as
			 * RNICs with out-of-order placement do among themselves),
			 * and the window stays (one lost packet costs one packet);
			 * else, or for a READ or atomic, go-back-N, and a window
			 * half as wide keeps what the next loss resends small */
			{
				struct engine_host *h = NULL;

				q->sel_wait = (syn & AETH_HELD) && from_unirdma(rx) && resend_psn(qp, q, psn, &h);
				if (!q->sel_wait) {
					cwnd_loss(q);
					go_back(qp, q);
				}
			}
			arm_rto(qp, q, now);
			/* what it completed and the una it moved may open the
			 * window or the in-flight ring for WQEs that wait */
			engine_activate(qp);
			break;
		default:
			rx->cnt->naks_rx[(syn & 0x1f) == NAK_INV ? WNAK_INV_REQ :
					 (syn & 0x1f) == NAK_ACCESS ? WNAK_ACCESS : WNAK_OP]++;
			complete_before(qp, q, psn);
			if (qp->state == IBV_QPS_ERR || qp->sq.q.own == q->next_idx)
				return;
			fail_head(qp, q, nak_status(syn & 0x1f));
			break;
		}
		break;
	default:
		break;
	}
}

void wire_rc_timer(struct urd_daemon *d, struct wire_qp *q, uint64_t now)
{
	struct vr_qp *qp = q->qp;

	(void)d;
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_RESET) {
		q->rto_at = q->rnr_at = q->tlp_at = 0;
		return;
	}
	if (q->rnr_at && now >= q->rnr_at) {
		q->rnr_at = 0;
		go_back(qp, q);
		arm_rto(qp, q, now);
	}
	if (q->tlp_at && now >= q->tlp_at) {
		q->tlp_at = 0;
		if (!q->rnr_at && q->rto_at && now < q->rto_at)
			tail_probe(qp, q);
	}
	if (q->rto_at && now >= q->rto_at) {
		struct engine_host *h = NULL;

		if (psn_diff(q->una, q->psn) >= 0) {
			/* nothing unacknowledged on the wire: everything sent
			 * was acknowledged and the engine has not sent the rest
			 * of a WQE yet (its CPU is busy).  Nothing to resend,
			 * no loss to answer with a smaller window, no retry to
			 * count against the peer: the timer starts again with
			 * the next packet (wire_rc_process).  A WQE the
			 * responder has whole completes; one started and sent
			 * whole but not acknowledged (PSNs before una can only
			 * be that after a go-back) is sent again below, so that
			 * the ACK of its duplicate completes it */
			complete_before(qp, q, q->una);
			if (qp->state == IBV_QPS_ERR)
				return;
			if (qp->sq.q.own == q->next_idx || (q->cur_open && q->cur_idx == qp->sq.q.own)) {
				q->rto_at = q->tlp_at = 0;
				q->progress_at = 0;
				/* what it completed may have opened the window
				 * for WQEs that wait: the engine takes them */
				engine_activate(qp);
				return;
			}
		}
		wire_rc_may_send(qp, q, &h);
		if (h)
			h->cnt.timeouts++;
		else
			d->eng.dir.cnt.timeouts++;
		if (now - q->progress_at >= rto_ns(qp)) {
			/* a whole local ACK timeout without progress */
			CNT_BOTH(qp, retries, 1);
			if (!q->retry_left) {
				if (qp->sq.q.own != q->next_idx)
					fail_head(qp, q, IBV_WC_RETRY_EXC_ERR);
				q->rto_at = 0;
				return;
			}
			log_debug("qp %u: no progress for %lu ms: %u retries left", qp->qpn,
				  (unsigned long)((now - q->progress_at) / 1000000), q->retry_left - 1);
			q->retry_left--;
			q->progress_at = now;
		}
		q->probe_at = 0;        /* no RTT sample across a resend */
		if (q->backoff < 8)
			q->backoff++;
		cwnd_loss(q);
		q->in_retry = false;
		if (h)
			h->cnt.retransmits++;
		go_back(qp, q);
		arm_rto(qp, q, now);
	}
}

/* ---- responder ----------------------------------------------------------- */

static void send_ack(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint8_t opcode, uint8_t syn,
		     uint32_t psn, uint64_t orig)
{
	struct wire_pkt_out p;

	memset(&p, 0, sizeof(p));
	p.h.opcode = opcode;
	p.h.dqpn = qp->attr.dest_qp_num & 0xffffff;
	p.h.psn = psn & 0xffffff;
	p.h.syndrome = syn;
	p.h.msn = q->msn & 0xffffff;
	p.h.orig = orig;
	p.sip = q->sip;
	p.dip = q->dip;
	p.host = rx->host;
	p.eng = &qp->vr->d->eng;
	p.lqpn = qp->qpn;
	wire_emit(qp->vr->d->eng.wire, &p);
	if ((syn & 0x60) == 0)
		rx->cnt->acks_tx++;
	else if ((syn & 0x60) == AETH_RNR)
		rx->cnt->naks_tx[WNAK_RNR]++;
	else
		rx->cnt->naks_tx[(syn & 0x1f) == NAK_SEQ ? WNAK_SEQ : (syn & 0x1f) == NAK_INV ? WNAK_INV_REQ :
				 (syn & 0x1f) == NAK_ACCESS ? WNAK_ACCESS : WNAK_OP]++;
}

/* UC: the message in progress is lost; packets are dropped until a FIRST or
 * ONLY comes. */
static void uc_drop(struct wire_qp *q, struct wire_rx *rx)
{
	q->uc_drop = true;
	q->in_msg = 0;
	rx->cnt->drops[WDROP_UC]++;
}

/* A class C error: NAK, and the responder's QP goes to the error state.  UC
 * drops the message instead; NAK_OP there is a malformed receive WQE (class
 * A): the QP still goes to the error state. */
static void class_c(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint8_t code)
{
	if (qp->type == IBV_QPT_UC) {
		uc_drop(q, rx);
		if (code == NAK_OP && qp->state != IBV_QPS_ERR)
			qp_fail(qp, QP_FAIL_REQUEST);
		return;
	}
	send_ack(qp, q, rx, ROCE_RC_ACK, AETH_NAK | code, rx->h.psn, 0);
	if (qp->state != IBV_QPS_ERR)
		qp_fail(qp, code == NAK_ACCESS ? QP_FAIL_ACCESS : QP_FAIL_REQUEST);
}

/* READ responses for PSNs [from, res->last_psn] of resource res. */
static void read_reply(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, const struct wire_res *res,
		       uint32_t from)
{
	uint32_t npkts = (uint32_t)psn_diff(res->last_psn, res->first_psn) + 1;
	uint32_t k0 = (uint32_t)psn_diff(from, res->first_psn);
	struct vsge t;

	log_debug("qp %u: read responses %#x..%#x from %#x (%u bytes)", qp->qpn, res->first_psn, res->last_psn,
		  from, res->len);

	if (res->len && mr_check_remote(qp->vr, qp, res->rkey, res->va, res->len, IBV_ACCESS_REMOTE_READ, &t)) {
		class_c(qp, q, rx, NAK_ACCESS);
		return;
	}
	for (uint32_t k = k0; k < npkts; k++) {
		struct wire_pkt_out p;
		uint64_t off = (uint64_t)k * q->mtu;

		memset(&p, 0, sizeof(p));
		if (npkts == 1)
			p.h.opcode = ROCE_RC_READ_RESP_ONLY;
		else if (k == 0)
			p.h.opcode = ROCE_RC_READ_RESP_FIRST;
		else if (k + 1 == npkts)
			p.h.opcode = ROCE_RC_READ_RESP_LAST;
		else
			p.h.opcode = ROCE_RC_READ_RESP_MIDDLE;
		p.h.dqpn = qp->attr.dest_qp_num & 0xffffff;
		p.h.psn = (res->first_psn + k) & 0xffffff;
		p.h.syndrome = AETH_ACK;
		p.h.msn = q->msn & 0xffffff;
		p.sip = q->sip;
		p.dip = q->dip;
		p.host = rx->host;
		p.eng = &qp->vr->d->eng;
		p.lqpn = qp->qpn;
		p.pay = &t;
		p.npay = res->len ? 1 : 0;
		p.pay_off = off;
		p.pay_len = k + 1 == npkts ? (uint32_t)(res->len - off) : q->mtu;
		if (!res->len)
			p.pay_len = 0;
		wire_emit(qp->vr->d->eng.wire, &p);
	}
}

static struct wire_res *res_find(struct wire_qp *q, uint32_t psn)
{
	for (uint32_t i = 0; i < WIRE_MAX_RES; i++) {
		struct wire_res *r = &q->res[i];

		if (r->valid && psn_diff(psn, r->first_psn) >= 0 && psn_diff(r->last_psn, psn) >= 0)
			return r;
	}
	return NULL;
}

static struct wire_res *res_new(struct vr_qp *qp, struct wire_qp *q)
{
	uint32_t depth = qp->attr.max_dest_rd_atomic ? qp->attr.max_dest_rd_atomic : 1;
	struct wire_res *r;

	if (depth > WIRE_MAX_RES)
		depth = WIRE_MAX_RES;
	r = &q->res[q->res_next++ % depth];
	memset(r, 0, sizeof(*r));
	r->valid = true;
	return r;
}

static void duplicate(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl)
{
	struct wire_res *r;

	if (fl & ROCE_F_READ_REQ) {
		r = res_find(q, rx->h.psn);
		if (r && !r->atomic)
			read_reply(qp, q, rx, r, rx->h.psn);
		else
			rx->cnt->drops[WDROP_PSN]++;
		return;
	}
	if (fl & ROCE_F_ATOMIC) {
		r = res_find(q, rx->h.psn);
		if (r && r->atomic && r->first_psn == rx->h.psn)
			send_ack(qp, q, rx, ROCE_RC_ATOMIC_ACK, AETH_ACK, rx->h.psn, r->orig);
		else
			rx->cnt->drops[WDROP_PSN]++;
		return;
	}
	/* C9-105: SEND/WRITE again: acknowledged, not executed */
	send_ack(qp, q, rx, ROCE_RC_ACK, AETH_ACK, (q->epsn - 1) & 0xffffff, 0);
}

/* No receive WQE: RNR NAK with the QP's timer (UC: the message is lost). */
static void rnr(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx)
{
	CNT_BOTH(qp, rnr_naks, 1);
	if (qp->type == IBV_QPT_UC)
		uc_drop(q, rx);
	else
		send_ack(qp, q, rx, ROCE_RC_ACK, AETH_RNR | (qp->attr.min_rnr_timer & 0x1f), rx->h.psn, 0);
}

/* A payload the kernel put in place (wire.c, rx_in_place) needs no copy:
 * true (counted) when rx's payload is already at byte off of g. */
static bool in_place(struct vr_qp *qp, const struct wire_rx *rx, const struct vsge *g, uint32_t ng, uint64_t off)
{
	struct engine_wire *w = qp->vr->d->eng.wire;
	uint64_t contig;

	if (!rx->placed || vsge_list_ptr(g, ng, off, &contig) != rx->h.payload || contig < rx->h.payload_len)
		return false;
	w->rx_placed_pkts++;
	w->rx_placed_bytes += rx->h.payload_len;
	return true;
}

bool wire_rc_dst(struct vr_qp *qp, uint8_t opcode, uint32_t psn, struct wire_dst *m)
{
	struct wire_qp *q = qp->eng.wire;
	uint32_t fl = roce_op_flags(opcode);

	if (qp->type != IBV_QPT_RC || !q || !(fl & (ROCE_F_MIDDLE | ROCE_F_LAST)) || (fl & ROCE_F_IMM) ||
	    (fl & ROCE_F_IETH))
		return false;
	memset(m, 0, sizeof(*m));
	m->last_hl = roce_hdr_len(opcode);
	if (fl & ROCE_F_READ_RESP) {    /* requester: the READ at the head */
		const struct urd_opcode_info *op;
		struct wire_wqe *e;
		uint32_t k;

		if ((qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) || qp->sq.q.own == q->next_idx ||
		    psn != q->una)
			return false;
		e = wire_slot(q, qp->sq.q.own);
		op = urd_opcode(wqe_of(e)->opcode, qp->type);
		k = (uint32_t)psn_diff(psn, e->first_psn);
		if (!op || !(op->flags & URD_OPF_READ) || k >= e->npkts ||
		    wqe_gather(qp, e, op, m->sg, &m->nsg, 1u << qp->sq.q.shift))
			return false;
		m->at = (uint64_t)k * q->mtu;
		m->resid = e->len - m->at;
		m->last_hl = roce_hdr_len(ROCE_RC_READ_RESP_LAST);
		return true;
	}
	/* responder: the packet the WRITE under way waits for */
	if (!(fl & ROCE_F_REQ) || !qp_can_receive(qp) || q->ooo_n || psn != q->epsn)
		return false;
	if ((fl & ROCE_F_WRITE) && q->in_msg == 2 && (qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
		if (!q->wr_resid || mr_check_remote(qp->vr, qp, q->wr_rkey, q->wr_va, q->wr_resid,
						    IBV_ACCESS_REMOTE_WRITE, &m->sg[0]))
			return false;
		m->nsg = 1;
		m->resid = q->wr_resid;
		return true;
	}
	/* Not a SEND: how long it is shows only in its LAST packet, and a
	 * full LAST can be followed in the same train by the next SEND's
	 * FIRST, which has the same size: placed as this SEND's, its bytes
	 * would land past this message in this receive buffer for good. */
	return false;
}

/* SEND packets: the first takes a receive WQE (none: RNR NAK); each lands at
 * its offset of the WQE's scatter list; the last completes it.  A UC message
 * lost mid-way leaves its WQE taken: the next SEND starts over in it. */
static bool do_send(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl)
{
	struct vsge sg[ENGINE_MAX_SGE];
	uint64_t room;
	int n;

	if ((fl & ROCE_F_FIRST) && q->rx_wqe) {
		q->rx_off = 0;
	} else if (fl & ROCE_F_FIRST) {
		int r = recv_take(qp, &q->rx_wr_id, q->rx_sge, &q->rx_nsge);

		if (r == 0) {
			rnr(qp, q, rx);
			return false;
		}
		if (r < 0) {
			class_c(qp, q, rx, NAK_OP);
			return false;
		}
		q->rx_wqe = true;
		q->rx_off = 0;
	}
	n = recv_sg_check(qp, q->rx_sge, q->rx_nsge, sg, &room);
	if (n < 0 || q->rx_off + rx->h.payload_len > room) {
		struct recv_info ri = { .src_qpn = qp->attr.dest_qp_num };
		bool uc = qp->type == IBV_QPT_UC;

		if (uc && n >= 0 && !qp->srq) {
			uc_drop(q, rx);         /* class D: the WQE waits for the next message */
			return false;
		}
		q->rx_wqe = false;
		complete_recv_info(qp, q->rx_wr_id, n < 0 ? IBV_WC_LOC_PROT_ERR :
				   uc ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, &ri);
		class_c(qp, q, rx, n < 0 ? NAK_OP : NAK_INV);
		return false;
	}
	if (!in_place(qp, rx, sg, (uint32_t)n, q->rx_off))
		vsge_write(&qp->vr->d->eng, sg, (uint32_t)n, q->rx_off, rx->h.payload, rx->h.payload_len);
	q->rx_off += rx->h.payload_len;
	if (fl & ROCE_F_LAST) {
		struct recv_info ri = {
			.src_qpn = qp->attr.dest_qp_num, .imm_be = rx->h.imm_be,
			.has_imm = (fl & ROCE_F_IMM) != 0, .solicited = rx->h.se,
			.has_inv = (fl & ROCE_F_IETH) != 0, .inv_rkey = rx->h.ieth_rkey,
		};

		q->rx_wqe = false;
		if ((fl & ROCE_F_IETH) && mw_invalidate(qp, rx->h.ieth_rkey)) {
			/* as resp.c's recv_done: the WQE in error, class C */
			complete_recv_info(qp, q->rx_wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, &ri);
			class_c(qp, q, rx, NAK_INV);
			return false;
		}
		complete_recv_info(qp, q->rx_wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)q->rx_off, &ri);
		count_rx(qp, (fl & ROCE_F_IMM) ? URD_WR_SEND_WITH_IMM : (fl & ROCE_F_IETH) ? URD_WR_SEND_WITH_INV : URD_WR_SEND,
			 q->rx_off);
	}
	return true;
}

static bool do_write(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl)
{
	struct vsge t;
	uint64_t wr_id = 0;
	uint32_t len = rx->h.payload_len;

	if (fl & ROCE_F_FIRST) {
		if (rx->h.dmalen && mr_check_remote(qp->vr, qp, rx->h.rkey, rx->h.va, rx->h.dmalen,
						    IBV_ACCESS_REMOTE_WRITE, &t)) {
			class_c(qp, q, rx, NAK_ACCESS);
			return false;
		}
		if (!rx->h.dmalen && !(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
			class_c(qp, q, rx, NAK_INV);
			return false;
		}
		q->wr_va = rx->h.va;
		q->wr_rkey = rx->h.rkey;
		q->wr_resid = rx->h.dmalen;
		q->rx_off = 0;
		if (rx->h.dmalen >= WIRE_IN_PLACE_MIN)
			wire_in_place_hint(qp->vr->d->eng.wire);
	}
	if (len > q->wr_resid || ((fl & ROCE_F_LAST) && len != q->wr_resid)) {
		class_c(qp, q, rx, NAK_INV);
		return false;
	}
	if ((fl & ROCE_F_IMM)) {
		struct urd_sge sge[URD_MAX_SGE];
		uint32_t nsge;
		int r = recv_take(qp, &wr_id, sge, &nsge);

		if (r == 0) {
			rnr(qp, q, rx);
			return false;
		}
		if (r < 0) {
			class_c(qp, q, rx, NAK_OP);
			return false;
		}
	}
	if (len) {
		if (mr_check_remote(qp->vr, qp, q->wr_rkey, q->wr_va, len, IBV_ACCESS_REMOTE_WRITE, &t)) {
			class_c(qp, q, rx, NAK_ACCESS);
			return false;
		}
		if (!in_place(qp, rx, &t, 1, 0))
			vsge_write(&qp->vr->d->eng, &t, 1, 0, rx->h.payload, len);
	}
	q->wr_va += len;
	q->wr_resid -= len;
	q->rx_off += len;
	if (fl & ROCE_F_LAST) {
		if (fl & ROCE_F_IMM) {
			struct recv_info ri = {
				.src_qpn = qp->attr.dest_qp_num, .imm_be = rx->h.imm_be, .has_imm = true,
				.solicited = rx->h.se,
			};

			complete_recv_info(qp, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)q->rx_off, &ri);
		}
		count_rx(qp, (fl & ROCE_F_IMM) ? URD_WR_RDMA_WRITE_WITH_IMM : URD_WR_RDMA_WRITE, q->rx_off);
	}
	return true;
}

static void do_read(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx)
{
	struct vsge t;
	struct wire_res *r;
	uint32_t npkts = pkts_for(rx->h.dmalen, q->mtu);

	if (rx->h.dmalen && mr_check_remote(qp->vr, qp, rx->h.rkey, rx->h.va, rx->h.dmalen,
					    IBV_ACCESS_REMOTE_READ, &t)) {
		class_c(qp, q, rx, NAK_ACCESS);
		return;
	}
	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	r = res_new(qp, q);
	r->first_psn = rx->h.psn;
	r->last_psn = (rx->h.psn + npkts - 1) & 0xffffff;
	r->va = rx->h.va;
	r->rkey = rx->h.rkey;
	r->len = rx->h.dmalen;
	q->msn++;
	q->epsn = (r->last_psn + 1) & 0xffffff;
	read_reply(qp, q, rx, r, r->first_psn);
	count_rx(qp, URD_WR_RDMA_READ, rx->h.dmalen);
}

static void do_atomic(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx)
{
	struct vsge t;
	struct wire_res *r;
	uint64_t contig, *p, orig;

	if (rx->h.va & 7) {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	if (mr_check_remote(qp->vr, qp, rx->h.rkey, rx->h.va, 8, IBV_ACCESS_REMOTE_ATOMIC, &t)) {
		class_c(qp, q, rx, NAK_ACCESS);
		return;
	}
	p = (uint64_t *)vsge_ptr(&t, 0, &contig);
	if (contig < 8 || ((uintptr_t)p & 7)) {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	if (rx->h.opcode == ROCE_RC_CMP_SWAP) {
		orig = rx->h.cmp;
		__atomic_compare_exchange_n(p, &orig, rx->h.swap_add, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, rx->h.swap_add, __ATOMIC_SEQ_CST);
	}
	r = res_new(qp, q);
	r->atomic = true;
	r->first_psn = r->last_psn = rx->h.psn;
	r->orig = orig;
	q->msn++;
	q->epsn = (rx->h.psn + 1) & 0xffffff;
	send_ack(qp, q, rx, ROCE_RC_ATOMIC_ACK, AETH_ACK, rx->h.psn, orig);
	count_rx(qp, rx->h.opcode == ROCE_RC_CMP_SWAP ? URD_WR_ATOMIC_CMP_AND_SWP : URD_WR_ATOMIC_FETCH_AND_ADD, 8);
}

/* ---- out-of-order packets of a unirdma peer ---------------------------------
 *
 * Go-back-N makes a requester send the whole window again for one lost
 * packet, and the responder drop everything after the gap until it comes:
 * at 1 % loss that is a fifth of the link.  Between unirdma daemons the
 * responder holds the SEND and WRITE packets that arrive after a gap (a copy
 * each, by PSN, at most WIRE_OOO_SLOTS: the requester never has more in
 * flight), says so in its NAK (AETH_HELD), and once the gap is filled takes
 * them in order, as if they had just arrived; the requester sends only the
 * lost packet again.  A packet it could not hold (no memory, a READ or an
 * atomic) makes its NAKs plain until nothing is held, and the requester goes
 * back as with any RoCE peer.  External peers (kernel rxe, RNICs) get plain
 * go-back-N. */
struct wire_ooo {
	bool used;
	uint32_t fl;
	struct roce_hdr h;              /* h.payload: repointed to data when taken */
	uint8_t data[];
};

static struct wire_ooo *ooo_entry(struct wire_qp *q, uint32_t i)
{
	return (struct wire_ooo *)(q->ooo + (size_t)i * q->ooo_bytes);
}

static struct wire_ooo *ooo_slot(struct wire_qp *q, uint32_t psn)
{
	return ooo_entry(q, psn % WIRE_OOO_SLOTS);
}

/* Holds rx (dp packets after the expected PSN); false if it cannot. */
static bool ooo_hold(struct vr_qp *qp, struct wire_qp *q, const struct wire_rx *rx, uint32_t fl, int32_t dp,
		     uint64_t now)
{
	struct engine_wire *w = qp->vr->d->eng.wire;
	struct wire_ooo *o;

	if (!from_unirdma(rx) || dp >= (int32_t)WIRE_OOO_SLOTS ||
	    !(fl & (ROCE_F_SEND | ROCE_F_WRITE)) || rx->h.payload_len > q->mtu)
		return false;
	if (!q->ooo) {
		uint64_t bytes = (uint64_t)WIRE_OOO_SLOTS * (sizeof(struct wire_ooo) + q->mtu), mine = bytes;

		if (!w || w->ooo_alloc + bytes > WIRE_OOO_MAX_BYTES)
			return false;
		/* a vRNIC's QPs take at most a quarter of the daemon's pool,
		 * so one tenant's lossy QPs leave the others theirs */
		for (struct wire_qp *o2 = w->ooo_list; o2; o2 = o2->ooo_next)
			if (o2->qp->vr == qp->vr)
				mine += (uint64_t)WIRE_OOO_SLOTS * o2->ooo_bytes;
		if (mine > WIRE_OOO_VRNIC_BYTES)
			return false;
		q->ooo = calloc(WIRE_OOO_SLOTS, sizeof(struct wire_ooo) + q->mtu);
		if (!q->ooo)
			return false;
		q->ooo_bytes = (uint32_t)(sizeof(struct wire_ooo) + q->mtu);
		w->ooo_alloc += bytes;
		q->ooo_next = w->ooo_list;
		w->ooo_list = q;
	}
	q->ooo_used_at = now;
	if (rx->h.payload_len + sizeof(struct wire_ooo) > q->ooo_bytes)
		return false;   /* (the MTU grew since: RTR again) */
	o = ooo_slot(q, rx->h.psn);
	if (o->used) {
		if (o->h.psn == rx->h.psn)
			return true;    /* held already: a duplicate */
		if (psn_diff(o->h.psn, q->epsn) >= 0)
			return false;
		o->used = false;        /* stale: before the expected PSN */
		q->ooo_n--;
	}
	o->used = true;
	o->fl = fl;
	o->h = rx->h;
	memcpy(o->data, rx->h.payload, rx->h.payload_len);
	q->ooo_n++;
	rx->cnt->held++;
	return true;
}

/* Forgets what is held (the QP's PSNs start again, it failed). */
static void ooo_clear(struct wire_qp *q)
{
	if (q->ooo)
		for (uint32_t i = 0; i < WIRE_OOO_SLOTS; i++)
			ooo_entry(q, i)->used = false;
	q->ooo_n = 0;
	q->ooo_lost = false;
}

static void responder_one(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl, uint64_t now);

/* The packet at epsn went in: the held ones that follow it go in too, in
 * order; an ACK for all of them, and a NAK for the next gap if more is held. */
static void responder(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl, uint64_t now)
{
	uint32_t taken = 0, epsn = q->epsn;
	struct wire_rx held;

	responder_one(qp, q, rx, fl, now);
	if (rx->h.psn != epsn)
		return;         /* out of sequence (held or not), a duplicate */
	if (!q->ooo_n) {
		q->ooo_lost = false;
		return;
	}
	held = *rx;             /* the same peer, host and counters */
	while (q->ooo_n && qp_can_receive(qp)) {
		struct wire_ooo *o = ooo_slot(q, q->epsn);
		uint32_t before = q->epsn;

		if (!o->used || o->h.psn != q->epsn)
			break;
		o->used = false;
		q->ooo_n--;
		held.h = o->h;
		held.h.payload = o->data;
		responder_one(qp, q, &held, o->fl, now);
		if (q->epsn == before)
			break;  /* not taken (no receive WQE: RNR; an error) */
		taken++;
	}
	if (q->ooo_n)                   /* anything before epsn is stale */
		for (uint32_t i = 0; i < WIRE_OOO_SLOTS; i++) {
			struct wire_ooo *o = ooo_entry(q, i);

			if (o->used && psn_diff(o->h.psn, q->epsn) < 0) {
				o->used = false;
				q->ooo_n--;
			}
		}
	if (!q->ooo_n)
		q->ooo_lost = false;
	q->ooo_used_at = now;
	if (!taken)
		return;
	send_ack(qp, q, rx, ROCE_RC_ACK, AETH_ACK, (q->epsn - 1) & 0xffffff, 0);
	if (q->ooo_n && !q->nak_sent) {
		q->nak_sent = true;
		q->nak_at = now;
		send_ack(qp, q, rx, ROCE_RC_ACK, AETH_NAK | NAK_SEQ | (q->ooo_lost ? 0 : AETH_HELD), q->epsn, 0);
	}
}

static void responder_one(struct vr_qp *qp, struct wire_qp *q, struct wire_rx *rx, uint32_t fl, uint64_t now)
{
	int32_t dp = psn_diff(rx->h.psn, q->epsn);
	bool ok;

	if (!qp_can_receive(qp)) {
		rx->cnt->drops[WDROP_QP_STATE]++;
		return;
	}
	if (qp->type == IBV_QPT_UC) {
		/* no NAK, no duplicates: out of sequence, or after a drop, only a
		 * FIRST or ONLY is taken, and it ends the message in progress */
		if (dp || q->uc_drop) {
			if (!(fl & ROCE_F_FIRST)) {
				uc_drop(q, rx);
				return;
			}
			q->uc_drop = false;
		}
		if (fl & ROCE_F_FIRST)
			q->in_msg = 0;
		dp = 0;
	}
	if (dp > 0) {
		bool held = qp->type == IBV_QPT_RC && ooo_hold(qp, q, rx, fl, dp, now);

		if (!held)
			q->ooo_lost = true;
		/* one NAK per gap (as rxe), but again for a packet that
		 * asks for an ACK once RENAK_NS passed: the NAK or the first
		 * packet sent again after it was lost too, and the requester
		 * would otherwise wait for its timer (its tail-loss probe asks) */
		if (!q->nak_sent ||
		    (rx->h.ackreq && now - q->nak_at >= (from_unirdma(rx) ? RENAK_HELD_NS : RENAK_NS))) {
			q->nak_sent = true;
			q->nak_at = now;
			send_ack(qp, q, rx, ROCE_RC_ACK,
				 AETH_NAK | NAK_SEQ | (q->ooo_n && !q->ooo_lost ? AETH_HELD : 0), q->epsn, 0);
		} else if (!held) {
			rx->cnt->drops[WDROP_PSN]++;
		}
		return;
	}
	if (dp < 0) {
		duplicate(qp, q, rx, fl);
		return;
	}
	q->nak_sent = false;
	/* the op sequence (C9-106 .. C9-108) and the segment sizes */
	if (q->in_msg) {
		uint32_t want = q->in_msg == 1 ? ROCE_F_SEND : ROCE_F_WRITE;

		if (!(fl & want) || (fl & ROCE_F_FIRST) || !(fl & (ROCE_F_MIDDLE | ROCE_F_LAST))) {
			class_c(qp, q, rx, NAK_INV);
			return;
		}
	} else if ((fl & (ROCE_F_SEND | ROCE_F_WRITE)) && !(fl & ROCE_F_FIRST)) {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	if ((fl & (ROCE_F_SEND | ROCE_F_WRITE)) &&
	    (rx->h.payload_len > q->mtu || (!(fl & ROCE_F_LAST) && rx->h.payload_len != q->mtu))) {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	if (fl & ROCE_F_READ_REQ) {
		do_read(qp, q, rx);
		return;
	}
	if (fl & ROCE_F_ATOMIC) {
		do_atomic(qp, q, rx);
		return;
	}
	if (fl & ROCE_F_SEND) {
		ok = do_send(qp, q, rx, fl);
	} else if (fl & ROCE_F_WRITE) {
		if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
			class_c(qp, q, rx, NAK_INV);
			return;
		}
		ok = do_write(qp, q, rx, fl);
	} else {
		class_c(qp, q, rx, NAK_INV);
		return;
	}
	if (!ok)
		return;
	q->in_msg = (fl & ROCE_F_LAST) ? 0 : (uint8_t)((fl & ROCE_F_SEND) ? 1 : 2);
	if (fl & ROCE_F_LAST)
		q->msn++;
	q->epsn = (rx->h.psn + 1) & 0xffffff;
	if (rx->h.ackreq && qp->type == IBV_QPT_RC)
		send_ack(qp, q, rx, ROCE_RC_ACK, AETH_ACK, rx->h.psn, 0);
}

void wire_rc_rx(struct urd_daemon *d, struct vr_qp *qp, struct wire_rx *rx, uint64_t now)
{
	struct wire_qp *q = qp->eng.wire;
	uint32_t fl = roce_op_flags(rx->h.opcode);

	(void)d;
	if (fl & ROCE_F_REQ) {
		responder(qp, q, rx, fl, now);
		return;
	}
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) {
		rx->cnt->drops[WDROP_QP_STATE]++;
		return;
	}
	if (fl & ROCE_F_READ_RESP)
		read_response(qp, q, rx, now);
	else if (rx->h.opcode == ROCE_RC_ATOMIC_ACK)
		atomic_ack(qp, q, rx, now);
	else if (rx->h.opcode == ROCE_RC_ACK)
		ack(qp, q, rx, now);
}

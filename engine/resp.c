/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Responder: the destination side of one request.
 *
 * Checks, in the order a real RNIC applies them: the QP can receive (RTR, RTS
 * or SQD, IB spec 10.3.1), the transport matches, the Q_Key for UD (C10-15),
 * R_Key / bounds / access for RDMA and atomics (C9-88 .. C9-92), a receive WQE
 * for SENDs and WRITE_WITH_IMM (none: RNR NAK, C9-135), then moves the data
 * and completes the receive.  Access and length errors are class C errors: the
 * responder's QP goes to the error state (C9-96) and the requester gets a NAK.
 *
 * UC (IB spec 9.8.2, as rxe): nobody answers, so the responder drops what it
 * cannot take and its QP stays as it is: a message with no receive WQE, a bad
 * R_Key or a length error is lost (class D; with an SRQ a length error
 * completes the taken WQE with IBV_WC_REM_INV_REQ_ERR, class E), and the
 * pieces that follow a dropped one are dropped with it.  A malformed receive
 * WQE (bad lkey) is class A: the QP goes to the error state.
 */
#include <arpa/inet.h>
#include <string.h>

#include "internal.h"
#include "unirdma/barrier.h"

#define GRH_BYTES 40u
#define UD_MTU    4096u

/* The next receive WQE of the QP (its SRQ or its RQ), copied out of the
 * region, or NULL if there is none.  Not consumed until recv_commit(). */
static const struct urd_recv_wqe *recv_peek(struct vr_qp *qp, uint8_t *buf, uint32_t *max_sge)
{
	struct vr_ring *r = qp->srq ? &qp->srq->ring : &qp->rq;
	uint32_t prod = urd_queue_load_prod(&r->q);
	size_t bytes = (size_t)1 << r->q.shift;

	if (!r->bytes || prod == r->q.own || !urd_queue_prod_ok(&r->q, prod))
		return NULL;
	{
		const uint8_t *slot = urd_queue_slot(&r->q, r->q.own);
		struct urd_recv_wqe *rw = (struct urd_recv_wqe *)buf;
		size_t sges;

		/* the header, then only the SGEs it announces (recv_sges rejects
		 * more than fit in the slot) */
		memcpy(rw, slot, sizeof(*rw));
		*max_sge = (uint32_t)((bytes - sizeof(struct urd_recv_wqe)) / sizeof(struct urd_sge));
		if (*max_sge > URD_MAX_SGE)
			*max_sge = URD_MAX_SGE; /* a slot rounds up to a power of two */
		sges = rw->num_sge < *max_sge ? rw->num_sge : *max_sge;
		memcpy(buf + sizeof(*rw), slot + sizeof(*rw), sges * sizeof(struct urd_sge));
	}
	return (const struct urd_recv_wqe *)buf;
}

static void recv_commit(struct vr_qp *qp)
{
	struct vr_srq *srq = qp->srq;
	struct vr_ring *r = srq ? &srq->ring : &qp->rq;

	urd_queue_advance_cons(&r->q);
	if (srq && srq->limit) {
		/* at most n: a lying prod never fires it (limit <= max_wr = n) */
		uint32_t left = urd_queue_filled(&r->q);

		if (left < srq->limit) {        /* IB spec 10.2.9.4: fires once, then disarms */
			srq->limit = 0;
			ctx_post_async(srq->obj.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, URD_OBJ_SRQ, srq->obj.handle);
		}
	}
}

/* RoCEv2 over IPv4: the 40-byte GRH slot holds 20 unused bytes, then the
 * IPv4 header of the packet (rxe's union rdma_network_hdr); udp_len is the
 * UDP datagram's length.  Used for the wire's UD receives too. */
void grh_fill(uint8_t grh[GRH_BYTES], uint32_t sip, uint32_t dip, uint32_t udp_len)
{
	uint8_t *ip = grh + 20;
	uint32_t sum = 0;
	uint16_t tot = htons((uint16_t)(20 + udp_len));

	memset(grh, 0, GRH_BYTES);
	ip[0] = 0x45;
	memcpy(ip + 2, &tot, 2);
	ip[6] = 0x40;                   /* don't fragment */
	ip[8] = 64;                     /* ttl */
	ip[9] = 17;                     /* UDP */
	memcpy(ip + 12, &sip, 4);
	memcpy(ip + 16, &dip, 4);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* Validate a receive scatter list of num elements; returns the number of
 * vsges or -1. */
int recv_sg_check(struct vr_qp *qp, const struct urd_sge *sg, uint32_t num, struct vsge *out,
		  uint64_t *room)
{
	int n = 0;

	*room = 0;
	for (uint32_t i = 0; i < num; i++) {
		if (!sg[i].length)
			continue;
		if (mr_check_local(qp->vr, qp->srq ? qp->srq->pd : qp->pd, &sg[i], IBV_ACCESS_LOCAL_WRITE, &out[n]))
			return -1;
		*room += sg[i].length;
		n++;
	}
	return n;
}

/* Validate the receive WQE's scatter list; returns the number of vsges or -1. */
static int recv_sges(struct vr_qp *qp, const struct urd_recv_wqe *rw, uint32_t max_sge,
		     struct vsge *out, uint64_t *room)
{
	uint32_t limit = qp->srq ? qp->srq->max_sge : qp->cap.max_recv_sge;

	*room = 0;
	if (rw->num_sge > limit || rw->num_sge > max_sge || rw->num_sge > ENGINE_MAX_SGE)
		return -1;
	return recv_sg_check(qp, (const struct urd_sge *)(rw + 1), rw->num_sge, out, room);
}

/* A class C error (C9-96): an RC responder's QP goes to the error state; the
 * requester gets the NAK r. */
static enum resp_result class_c_error(struct vr_qp *qp, enum resp_result r)
{
	if (qp->type == IBV_QPT_RC && qp->state != IBV_QPS_ERR)
		qp_fail(qp, r == RESP_NAK_ACCESS ? QP_FAIL_ACCESS : QP_FAIL_REQUEST);
	return r;
}

/* A SEND longer than its receive WQE: RC NAKs it and fails (class C, the WQE
 * completes with IBV_WC_LOC_LEN_ERR); UC drops the message and keeps the WQE
 * for the next one, unless it came from an SRQ (class E: completed with
 * IBV_WC_REM_INV_REQ_ERR).  An undersized UD WQE completes in error. */
static enum resp_result recv_too_long(struct vr_qp *qp, uint64_t wr_id, struct packet *pkt)
{
	if (qp->type == IBV_QPT_UC && !qp->srq)
		return RESP_SILENT;
	recv_commit(qp);
	complete_recv(qp, wr_id, qp->type == IBV_QPT_UC ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_LOC_LEN_ERR,
		      IBV_WC_RECV, 0, pkt);
	if (qp->type == IBV_QPT_UD)
		return RESP_ACK;
	return class_c_error(qp, RESP_NAK_INV_REQ);
}

/* A receive WQE whose scatter list fails its checks (class A for RC and UC:
 * the QP goes to the error state; UD completes it in error). */
static enum resp_result recv_malformed(struct vr_qp *qp, uint64_t wr_id, struct packet *pkt)
{
	complete_recv(qp, wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, pkt);
	if (qp->type == IBV_QPT_UD)
		return RESP_ACK;
	if (qp->type == IBV_QPT_UC && qp->state != IBV_QPS_ERR)
		qp_fail(qp, QP_FAIL_REQUEST);
	return class_c_error(qp, RESP_NAK_OP);
}

/* A SEND's receive WQE completes: a SEND_WITH_INV first invalidates the
 * R_Key its IETH names (a type 2 window bound to this QP, mw.c); when it
 * cannot, the WQE completes in error and the requester gets an invalid
 * request NAK (class C; rxe only moves its QP to the error state). */
static enum resp_result recv_done(struct vr_qp *qp, uint64_t wr_id, uint32_t byte_len, struct packet *pkt)
{
	if (__builtin_expect((pkt->op->flags & URD_OPF_INV) != 0, 0) &&
	    mw_invalidate(qp, pkt->wqe->invalidate_rkey)) {
		complete_recv(qp, wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, pkt);
		return class_c_error(qp, RESP_NAK_INV_REQ);
	}
	complete_recv(qp, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, byte_len, pkt);
	return RESP_ACK;
}

/* One piece of an RC or UC SEND moving in pieces.  The first piece consumes a
 * receive WQE (or reuses the one a restarted message already consumed) and
 * keeps its scatter list in the QP's xfer; the last writes the CQE.  MRs are
 * checked again for every piece: the lock was free in between. */
static enum resp_result recv_piece(struct vr_qp *qp, struct packet *pkt)
{
	uint8_t wbuf[sizeof(struct urd_recv_wqe) + URD_MAX_SGE * sizeof(struct urd_sge)];
	struct vsge sg[ENGINE_MAX_SGE];
	struct engine_xfer *x = qp->eng.xfer;
	uint64_t room;
	uint32_t i;
	int n;

	if (pkt->off == 0) {
		x = engine_xfer_get(qp);
		if (!x) {
			CNT_BOTH(qp, rnr_naks, 1);
			return RESP_RNR;        /* no memory for the state: not ready */
		}
		if (!x->rx) {
			const struct urd_recv_wqe *rw;
			uint32_t max_sge;

			rw = recv_peek(qp, wbuf, &max_sge);
			if (!rw) {
				CNT_BOTH(qp, rnr_naks, 1);
				return RESP_RNR;
			}
			n = recv_sges(qp, rw, max_sge, sg, &room);
			if (n < 0) {
				recv_commit(qp);
				return recv_malformed(qp, rw->wr_id, pkt);
			}
			if (room < pkt->total)
				return recv_too_long(qp, rw->wr_id, pkt);
			recv_commit(qp);
			x->rx = true;
			x->rx_wr_id = rw->wr_id;
			x->rx_nsge = rw->num_sge;
			memcpy(x->rx_sge, rw + 1, rw->num_sge * sizeof(struct urd_sge));
		}
		x->rx_token = pkt->token;
	} else if (!x || !x->rx || x->rx_token != pkt->token) {
		return RESP_RESTART;            /* reset or flushed since the first piece */
	}
	n = recv_sg_check(qp, x->rx_sge, x->rx_nsge, sg, &room);
	if (n < 0 || room < pkt->total) {
		/* an MR of the receive WQE went away mid-message, or a restarted
		 * message is longer than the receive WQE it reuses */
		x->rx = false;
		complete_recv(qp, x->rx_wr_id, n < 0 ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, pkt);
		return class_c_error(qp, n < 0 ? RESP_NAK_OP : RESP_NAK_INV_REQ);
	}
	i = vsge_advance(sg, (uint32_t)n, pkt->off);
	sg_copy(&qp->vr->d->eng, sg + i, (uint32_t)n - i, pkt->local, pkt->nlocal, pkt->len);
	if (pkt->off + pkt->len == pkt->total) {
		x->rx = false;
		return recv_done(qp, x->rx_wr_id, pkt->total, pkt);
	}
	return RESP_ACK;
}

/* SEND, SEND_WITH_IMM and the receive half of WRITE_WITH_IMM. */
static enum resp_result do_recv(struct vr_qp *qp, struct packet *pkt, const struct vsge *target)
{
	uint8_t wbuf[sizeof(struct urd_recv_wqe) + URD_MAX_SGE * sizeof(struct urd_sge)];
	uint8_t grh[GRH_BYTES];
	struct vsge sg[ENGINE_MAX_SGE + 1];
	const struct urd_recv_wqe *rw;
	uint32_t max_sge, byte_len = pkt->total;
	uint64_t room;
	int n;
	bool ud = qp->type == IBV_QPT_UD;

	if (qp->eng.xfer && qp->eng.xfer->rx && (pkt->op->flags & URD_OPF_WRITE)) {
		/* a SEND stopped midway consumed a receive WQE: it is next */
		qp->eng.xfer->rx = false;
		sg_copy(&qp->vr->d->eng, target, 1, pkt->local, pkt->nlocal, pkt->len);
		complete_recv(qp, qp->eng.xfer->rx_wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, byte_len, pkt);
		return RESP_ACK;
	}
	/* recv_peek copies the header and at most URD_MAX_SGE SGEs, whatever
	 * the slot size (16 SGEs round up to a 512-byte slot) */
	rw = recv_peek(qp, wbuf, &max_sge);
	if (!rw) {
		CNT_BOTH(qp, rnr_naks, 1);
		return ud ? RESP_ACK : RESP_RNR;        /* UD, UC: the message is dropped */
	}
	n = recv_sges(qp, rw, max_sge, sg, &room);
	if (n < 0) {
		recv_commit(qp);
		return recv_malformed(qp, rw->wr_id, pkt);
	}
	if (pkt->op->flags & URD_OPF_WRITE) {
		/* the data went to the RDMA target; the receive WQE only completes */
		sg_copy(&qp->vr->d->eng, target, 1, pkt->local, pkt->nlocal, pkt->len);
		recv_commit(qp);
		complete_recv(qp, rw->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, byte_len, pkt);
		return RESP_ACK;
	}
	if (room < (uint64_t)pkt->total + (ud ? GRH_BYTES : 0))
		return recv_too_long(qp, rw->wr_id, pkt);
	if (ud) {
		/* the GRH occupies the first 40 bytes of the scatter list */
		struct vsge g = { .mr = NULL, .off = 0, .len = GRH_BYTES, .flat = grh };
		uint64_t skip = GRH_BYTES;
		int i = 0;

		grh_fill(grh, pkt->src->vr->vip, pkt->dip ? pkt->dip : qp->vr->vip, 8 + 12 + pkt->len + 4);
		sg_copy(&qp->vr->d->eng, sg, (uint32_t)n, &g, 1, GRH_BYTES);
		while (skip && i < n) {         /* advance the scatter list past the GRH */
			uint64_t take = sg[i].len < skip ? sg[i].len : skip;

			sg[i].off += take;
			sg[i].len -= (uint32_t)take;
			skip -= take;
			if (!sg[i].len)
				i++;
		}
		sg_copy(&qp->vr->d->eng, sg + i, (uint32_t)(n - i), pkt->local, pkt->nlocal, pkt->len);
		byte_len += GRH_BYTES;
	} else {
		sg_copy(&qp->vr->d->eng, sg, (uint32_t)n, pkt->local, pkt->nlocal, pkt->len);
	}
	recv_commit(qp);
	return recv_done(qp, rw->wr_id, byte_len, pkt);
}

/* The target of one piece of an RDMA WRITE or READ.  The first piece checks
 * the whole range, as the RETH's DMA length is checked on a wire; every
 * piece checks its own again (the MR may be gone since the last one). */
static __attribute__((noinline)) int remote_piece(struct vr_qp *qp, const struct packet *pkt,
						   uint32_t access, struct vsge *t)
{
	const struct urd_send_wqe *w = pkt->wqe;
	uint64_t addr = w->remote_addr + pkt->off;

	if (addr < w->remote_addr)
		return -1;
	/* UC: every piece, since nothing stops the pieces after a dropped first */
	if ((pkt->off == 0 || qp->type == IBV_QPT_UC) &&
	    mr_check_remote(qp->vr, qp, w->rkey, w->remote_addr, pkt->total, access, t))
		return -1;
	return mr_check_remote(qp->vr, qp, w->rkey, addr, pkt->len, access, t);
}

/* The target of an RDMA WRITE or READ, or of its piece. */
static inline __attribute__((always_inline)) int remote_target(struct vr_qp *qp, const struct packet *pkt,
							       uint32_t access, struct vsge *t)
{
	if (__builtin_expect(pkt->len == pkt->total, 1))
		return mr_check_remote(qp->vr, qp, pkt->wqe->rkey, pkt->wqe->remote_addr, pkt->len, access, t);
	return remote_piece(qp, pkt, access, t);
}

enum resp_result resp_handle(struct vr_qp *qp, struct packet *pkt)
{
	const struct urd_send_wqe *w = pkt->wqe;
	const struct urd_opcode_info *op = pkt->op;
	enum resp_result res = RESP_ACK;
	bool last = pkt->off + pkt->len == pkt->total;
	struct vsge t;

	if (!qp_can_receive(qp))
		return RESP_SILENT;
	if (qp->type != pkt->src->type)
		return RESP_SILENT;
	/* An RC responder answers its connected peer only: on a wire, packets
	 * from any other QP fail the PSN check and are dropped (IB spec 9.7.5.1).
	 * Without this, any QP of the tenant could inject into a connection. */
	if (qp->type != IBV_QPT_UD && qp->attr.dest_qp_num != pkt->src->qpn)
		return RESP_SILENT;
	pkt->rnr_timer = qp->attr.min_rnr_timer;

	if (qp->type == IBV_QPT_UD) {
		/* C10-15: a Q_Key with the high bit set means "use the sender QP's" */
		uint32_t qkey = (w->remote_qkey & 0x80000000u) ? pkt->src->attr.qkey : w->remote_qkey;

		if (qkey != qp->attr.qkey || !(op->flags & URD_OPF_SEND))
			return RESP_SILENT;
		res = do_recv(qp, pkt, NULL);
	} else if (op->flags & URD_OPF_WRITE) {
		/* C9-88: a zero-length RDMA WRITE checks no R_Key */
		t = (struct vsge){ .mr = NULL, .off = 0, .len = 0, .flat = NULL };
		if (pkt->len && remote_target(qp, pkt, op->remote_access, &t))
			return class_c_error(qp, RESP_NAK_ACCESS);
		if (!(op->flags & URD_OPF_SEND))
			sg_copy(&qp->vr->d->eng, &t, 1, pkt->local, pkt->nlocal, pkt->len);
		else if (last)
			res = do_recv(qp, pkt, &t);     /* the receive WQE is taken with the last piece */
		else
			sg_copy(&qp->vr->d->eng, &t, 1, pkt->local, pkt->nlocal, pkt->len);
	} else if (op->flags & URD_OPF_READ) {
		if (pkt->len && remote_target(qp, pkt, op->remote_access, &t))
			return class_c_error(qp, RESP_NAK_ACCESS);
		if (pkt->len)
			sg_copy(&qp->vr->d->eng, pkt->local, pkt->nlocal, &t, 1, pkt->len);
	} else if (op->flags & URD_OPF_ATOMIC) {
		uint64_t contig, *p;

		if (w->remote_addr & 7)         /* C9-92: misaligned atomic */
			return class_c_error(qp, RESP_NAK_INV_REQ);
		if (mr_check_remote(qp->vr, qp, w->rkey, w->remote_addr, 8, op->remote_access, &t))
			return class_c_error(qp, RESP_NAK_ACCESS);
		p = (uint64_t *)vsge_ptr(&t, 0, &contig);
		/* the 8 bytes must lie in one segment of the MR, aligned in the
		 * daemon's view too: segments are the tenant's choice (a VM gives
		 * guest-physical pages), so an atomic straddling one would reach
		 * past the mapping */
		if (contig < 8 || ((uintptr_t)p & 7))
			return class_c_error(qp, RESP_NAK_INV_REQ);
		if (w->opcode == URD_WR_ATOMIC_CMP_AND_SWP) {
			uint64_t expected = w->compare_add;

			__atomic_compare_exchange_n(p, &expected, w->swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			pkt->atomic_orig = expected;
		} else {
			pkt->atomic_orig = __atomic_fetch_add(p, w->compare_add, __ATOMIC_SEQ_CST);
		}
	} else if (pkt->len != pkt->total || (qp->eng.xfer && qp->eng.xfer->rx)) {
		/* in pieces, or the next message after one that stopped midway:
		 * it goes into the receive WQE that one consumed, in order */
		res = recv_piece(qp, pkt);
	} else {
		res = do_recv(qp, pkt, NULL);
	}
	if (res == RESP_ACK && last)
		count_rx(qp, w->opcode, pkt->total);
	return res;
}

int recv_take(struct vr_qp *qp, uint64_t *wr_id, struct urd_sge *sge, uint32_t *nsge)
{
	uint8_t wbuf[sizeof(struct urd_recv_wqe) + URD_MAX_SGE * sizeof(struct urd_sge)];
	const struct urd_recv_wqe *rw;
	uint32_t max_sge, limit = qp->srq ? qp->srq->max_sge : qp->cap.max_recv_sge;

	rw = recv_peek(qp, wbuf, &max_sge);
	if (!rw)
		return 0;
	recv_commit(qp);
	if (rw->num_sge > limit || rw->num_sge > max_sge || rw->num_sge > ENGINE_MAX_SGE) {
		struct recv_info ri = { 0 };

		complete_recv_info(qp, rw->wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, &ri);
		return -1;
	}
	*wr_id = rw->wr_id;
	*nsge = rw->num_sge;
	memcpy(sge, rw + 1, rw->num_sge * sizeof(struct urd_sge));
	return 1;
}

bool recv_deliver_ud(struct vr_qp *qp, const struct recv_info *ri, const uint8_t *data, uint32_t len)
{
	uint8_t wbuf[sizeof(struct urd_recv_wqe) + URD_MAX_SGE * sizeof(struct urd_sge)];
	struct vsge sg[ENGINE_MAX_SGE];
	const struct urd_recv_wqe *rw;
	uint32_t max_sge;
	uint64_t room;
	int n;

	rw = recv_peek(qp, wbuf, &max_sge);
	if (!rw) {
		CNT_BOTH(qp, rnr_naks, 1);
		return false;
	}
	n = recv_sges(qp, rw, max_sge, sg, &room);
	recv_commit(qp);
	if (n < 0 || room < (uint64_t)len + GRH_BYTES) {
		complete_recv_info(qp, rw->wr_id, n < 0 ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, ri);
		return true;
	}
	vsge_write(&qp->vr->d->eng, sg, (uint32_t)n, 0, ri->grh, GRH_BYTES);
	vsge_write(&qp->vr->d->eng, sg, (uint32_t)n, GRH_BYTES, data, len);
	complete_recv_info(qp, rw->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, len + GRH_BYTES, ri);
	count_rx(qp, ri->has_imm ? URD_WR_SEND_WITH_IMM : URD_WR_SEND, len);
	return true;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Completer: the one place that writes CQEs and moves a QP to the error state,
 * for the requester and the responder alike (as rxe's do_complete() and
 * rxe_cq_post() are).  It raises completion events for armed CQs and turns a
 * CQ overrun into IBV_EVENT_CQ_ERR (the QP that overran it gets
 * IBV_EVENT_QP_FATAL and goes to the error state, as on real RNICs).
 *
 *   complete_send     the WQE at the head of a send queue
 *   complete_recv     a receive WQE (of an RQ or an SRQ)
 *   flush_recv_queue  a QP in the error state: its receive WQEs, flushed
 *   qp_fail           the QP goes to the error state, counted, with its event
 * All of them post through post_cqe().
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "unirdma/barrier.h"

static int cq_push(struct vr_cq *cq, const struct urd_cqe *cqe, bool solicited)
{
	struct urd_queue *q = &cq->ring.q;
	uint32_t arm;

	if (cq->overflowed)
		return -ENOSPC;
	/* The consumer index is the tenant's: a value that makes the ring look
	 * fuller than it can be is treated as an overrun, never trusted; it is
	 * read only when the last value read says full (ring.h). */
	if (!urd_queue_room(q, q->n)) {
		cq->overflowed = true;
		q->hdr->flags |= URD_RING_F_ERROR;
		ctx_post_async(cq->obj.ctx, IBV_EVENT_CQ_ERR, URD_OBJ_CQ, cq->obj.handle);
		return -ENOSPC;
	}
	memcpy(urd_queue_slot(q, q->own), cqe, sizeof(*cqe));
	q->own++;
	/* the CQE is visible before poll_cq sees prod move */
	urd_queue_publish_prod(q, q->own);
	/* Dekker with req_notify_cq: the library stores arm, fences, then polls
	 * prod; we store prod, fence, then read arm.  One of us sees the other. */
	urd_smp_mb();
	arm = urd_load_relaxed(&q->hdr->arm);
	if (arm == URD_CQ_ARM_ANY || (arm == URD_CQ_ARM_SOLICITED &&
				      (solicited || cqe->status != IBV_WC_SUCCESS))) {
		if (urd_exchange(&q->hdr->arm, URD_CQ_ARM_NONE) != URD_CQ_ARM_NONE) {
			cq->events++;
			urd_store_release(&q->hdr->events, cq->events);
			ctx_notify(cq->obj.ctx);
		}
	}
	return 0;
}

/* Moves qp to the error state (IB spec 10.3.1).  A failed WQE reports itself
 * in its CQE; the responder's class C errors (C9-96) are counted like it, and
 * a remote access error raises IBV_EVENT_QP_ACCESS_ERR too; a QP that cannot
 * go on (its CQ overran, its ring is broken) raises IBV_EVENT_QP_FATAL.  The
 * requester and the responder flush what is posted on the next steps. */
void qp_fail(struct vr_qp *qp, enum qp_fail_reason why)
{
	bool was = qp->state == IBV_QPS_ERR;

	if (why != QP_FAIL_FATAL)
		CNT_BOTH(qp, errors, 1);
	engine_qp_error(qp, why == QP_FAIL_FATAL);
	if (why == QP_FAIL_ACCESS && !was)
		ctx_post_async(qp->obj.ctx, IBV_EVENT_QP_ACCESS_ERR, URD_OBJ_QP, qp->obj.handle);
}

/* Posts cqe, a completion of one of qp's WQEs, to cq: the only call of
 * cq_push.  A CQ overrun fails the QP (it cannot report its work any more);
 * a QP in the error state is only flushing, and stays as it is. */
static inline int post_cqe(struct vr_qp *qp, struct vr_cq *cq, const struct urd_cqe *cqe, bool solicited)
{
	int ret = cq_push(cq, cqe, solicited);

	if (ret && qp->state != IBV_QPS_ERR)
		qp_fail(qp, QP_FAIL_FATAL);
	return ret;
}

/* Completion of the WQE at the head of the send queue.  Successful unsignaled
 * WQEs produce nothing; errors and flushes always complete (IB spec 10.8.3). */
void complete_send(struct vr_qp *qp, const struct urd_send_wqe *wqe, enum ibv_wc_status st)
{
	struct urd_cqe c;
	bool signaled = qp->sq_sig_all || (wqe->flags & URD_WQE_SIGNALED);

	if (st == IBV_WC_SUCCESS && !signaled)
		return;
	memset(&c, 0, sizeof(c));
	c.wr_id = wqe->wr_id;
	c.status = st;
	c.opcode = wqe->opcode < URD_WR_NUM_OPCODES ? urd_opcodes[wqe->opcode].wc_opcode : IBV_WC_SEND;
	c.qp_num = qp->qpn;
	if (st == IBV_WC_SUCCESS) {
		const struct urd_opcode_info *op = &urd_opcodes[wqe->opcode];

		if (op->flags & URD_OPF_ATOMIC)
			c.byte_len = 8;
		else if (op->flags & URD_OPF_READ) {
			const struct urd_sge *sg = (const void *)(wqe + 1);

			for (uint32_t i = 0; i < wqe->num_sge; i++)
				c.byte_len += sg[i].length;
		}
	} else {
		c.vendor_err = st;
	}
	post_cqe(qp, qp->scq, &c, false);
}

/* Completion of a receive WQE (wr_id) for the message pkt brought.  A SEND
 * marked solicited wakes a CQ armed for solicited events (IB spec 11.4.2.2). */
void complete_recv_info(struct vr_qp *qp, uint64_t wr_id, enum ibv_wc_status st, uint32_t opcode,
			uint32_t byte_len, const struct recv_info *ri)
{
	struct urd_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = wr_id;
	c.status = st;
	c.opcode = opcode;
	c.qp_num = qp->qpn;
	if (st == IBV_WC_SUCCESS) {
		c.byte_len = byte_len;
		c.src_qp = ri->src_qpn;
		c.sl = ri->sl;
		if (ri->has_imm) {
			c.imm_data = ri->imm_be;
			c.wc_flags |= IBV_WC_WITH_IMM;
		} else if (ri->has_inv) {
			c.imm_data = ri->inv_rkey;      /* ibv_wc.invalidated_rkey, host order */
			c.wc_flags |= IBV_WC_WITH_INV;
		}
		if (qp->type == IBV_QPT_UD) {
			c.wc_flags |= IBV_WC_GRH;
			/* On a RoCE port a UD receive's sl says what the 40-byte
			 * GRH area holds, as ConnectX reports it to user space
			 * (the CQE's L3 header type: 0 GRH, 1 IPv6, 2 IPv4).
			 * Ours is always RoCE v2 over IPv4 (grh_fill): UCX's UD
			 * reads the destination from the right place by it. */
			c.sl = URD_WC_SL_ROCE_IPV4;
		}
	} else {
		c.vendor_err = st;
	}
	post_cqe(qp, qp->rcq, &c, ri->solicited);
}

void complete_recv(struct vr_qp *qp, uint64_t wr_id, enum ibv_wc_status st, uint32_t opcode,
		   uint32_t byte_len, const struct packet *pkt)
{
	const struct urd_send_wqe *w = pkt->wqe;
	struct recv_info ri = {
		.src_qpn = qp_src_qpn(pkt->src), .sl = w->sl, .imm_be = w->imm_data,
		.has_imm = (pkt->op->flags & URD_OPF_IMM) != 0,
		.solicited = (w->flags & URD_WQE_SOLICITED) != 0,
		.has_inv = (pkt->op->flags & URD_OPF_INV) != 0, .inv_rkey = w->invalidate_rkey,
	};

	complete_recv_info(qp, wr_id, st, opcode, byte_len, &ri);
}

/* A receive WQE (wr_id) completed with IBV_WC_WR_FLUSH_ERR. */
static int flush_recv(struct vr_qp *qp, uint64_t wr_id)
{
	struct urd_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = wr_id;
	c.status = IBV_WC_WR_FLUSH_ERR;
	c.vendor_err = IBV_WC_WR_FLUSH_ERR;
	c.opcode = IBV_WC_RECV;
	c.qp_num = qp->qpn;
	return post_cqe(qp, qp->rcq, &c, false);
}

/* Flush the receive queue of a QP in the error state (not its SRQ), and the
 * receive WQE a SEND in pieces consumed.  At most *budget WQEs (lowered by
 * what it flushed): the tenant writes prod, and may keep moving it.  Returns
 * true if WQEs are left for the next call. */
bool flush_recv_queue(struct vr_qp *qp, uint32_t *budget)
{
	struct vr_ring *r = &qp->rq;
	uint32_t prod;

	if (qp->eng.xfer && qp->eng.xfer->rx) {
		qp->eng.xfer->rx = false;
		flush_recv(qp, qp->eng.xfer->rx_wr_id);
	}
	if (!r->bytes)
		return false;
	/* a lying producer index: flush at most a ring */
	prod = r->q.own + urd_queue_filled(&r->q);
	while (r->q.own != prod) {
		const struct urd_recv_wqe *w = urd_queue_slot(&r->q, r->q.own);
		uint64_t wr_id;

		if (!*budget)
			return true;
		--*budget;
		wr_id = w->wr_id;
		urd_queue_advance_cons(&r->q);  /* slot free before its CQE */
		if (flush_recv(qp, wr_id))
			break;
	}
	return false;
}

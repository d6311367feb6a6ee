/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Completer: writes CQEs, raises completion events for armed CQs, and turns a
 * CQ overrun into IBV_EVENT_CQ_ERR (the QP that overran it gets
 * IBV_EVENT_QP_FATAL and goes to the error state, as on real RNICs). */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "unirdma/barrier.h"

int cq_push(struct vr_cq *cq, const struct urd_cqe *cqe, bool solicited)
{
	struct vr_ring *r = &cq->ring;
	uint32_t cons, arm;

	if (cq->overflowed)
		return -ENOSPC;
	/* The consumer index is the tenant's: a value that makes the ring look
	 * fuller than it can be is treated as an overrun, never trusted. */
	if (r->head - r->seen < r->n) {
		cons = r->seen;         /* room known from the last read: no shared load */
	} else {
		cons = urd_load_acquire(&r->hdr->cons);
		r->seen = cons;
	}
	if (r->head - cons >= r->n) {
		cq->overflowed = true;
		r->hdr->flags |= URD_RING_F_ERROR;
		ctx_post_async(cq->obj.ctx, IBV_EVENT_CQ_ERR, URD_OBJ_CQ, cq->obj.handle);
		return -ENOSPC;
	}
	memcpy(r->slots + ((size_t)(r->head & (r->n - 1)) << r->shift), cqe, sizeof(*cqe));
	r->head++;
	/* pairs with poll_cq's load_acquire of prod: the CQE is visible first */
	urd_store_release(&r->hdr->prod, r->head);
	/* Dekker with req_notify_cq: the library stores arm, fences, then polls
	 * prod; we store prod, fence, then read arm.  One of us sees the other. */
	urd_smp_mb();
	arm = urd_load_relaxed(&r->hdr->arm);
	if (arm == URD_CQ_ARM_ANY || (arm == URD_CQ_ARM_SOLICITED &&
				      (solicited || cqe->status != IBV_WC_SUCCESS))) {
		if (urd_exchange(&r->hdr->arm, URD_CQ_ARM_NONE) != URD_CQ_ARM_NONE) {
			cq->events++;
			urd_store_release(&r->hdr->events, cq->events);
			ctx_notify(cq->obj.ctx);
		}
	}
	return 0;
}

static void push_or_fatal(struct vr_qp *qp, struct vr_cq *cq, const struct urd_cqe *cqe, bool solicited)
{
	if (cq_push(cq, cqe, solicited) && qp->state != IBV_QPS_ERR)
		engine_qp_error(qp, true);
}

/* Completion of the WQE at the head of the send queue.  Successful unsignaled
 * WQEs produce nothing; errors and flushes always complete (IB spec 10.8.3). */
void comp_send(struct vr_qp *qp, const struct urd_send_wqe *wqe, enum ibv_wc_status st)
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
		const struct opcode_info *op = &urd_opcodes[wqe->opcode];

		if (op->flags & OPF_ATOMIC)
			c.byte_len = 8;
		else if (op->flags & OPF_READ) {
			const struct urd_sge *sg = (const void *)(wqe + 1);

			for (uint32_t i = 0; i < wqe->num_sge; i++)
				c.byte_len += sg[i].length;
		}
	} else {
		c.vendor_err = st;
	}
	push_or_fatal(qp, qp->scq, &c, false);
}

/* Flush the receive queue of a QP in the error state (not its SRQ), and the
 * receive WQE a SEND in pieces consumed.  At most *budget WQEs (lowered by
 * what it flushed): the tenant writes prod, and may keep moving it.  Returns
 * true if WQEs are left for the next call. */
bool comp_recv_flush(struct vr_qp *qp, uint32_t *budget)
{
	struct vr_ring *r = &qp->rq;
	uint32_t prod;

	if (qp->eng.xfer && qp->eng.xfer->rx) {
		struct urd_cqe c;

		memset(&c, 0, sizeof(c));
		c.wr_id = qp->eng.xfer->rx_wr_id;
		c.status = IBV_WC_WR_FLUSH_ERR;
		c.vendor_err = IBV_WC_WR_FLUSH_ERR;
		c.opcode = IBV_WC_RECV;
		c.qp_num = qp->qpn;
		qp->eng.xfer->rx = false;
		cq_push(qp->rcq, &c, false);
	}
	if (!r->bytes)
		return false;
	prod = urd_load_acquire(&r->hdr->prod);
	if (prod - r->head > r->n)
		prod = r->head + r->n;  /* a lying producer index: flush at most a ring */
	while (r->head != prod) {
		const struct urd_recv_wqe *w = (const void *)(r->slots + ((size_t)(r->head & (r->n - 1)) << r->shift));
		struct urd_cqe c;

		if (!*budget)
			return true;
		--*budget;
		memset(&c, 0, sizeof(c));
		c.wr_id = w->wr_id;
		c.status = IBV_WC_WR_FLUSH_ERR;
		c.vendor_err = IBV_WC_WR_FLUSH_ERR;
		c.opcode = IBV_WC_RECV;
		c.qp_num = qp->qpn;
		r->head++;
		urd_store_release(&r->hdr->cons, r->head);     /* slot free before its CQE */
		if (cq_push(qp->rcq, &c, false))
			break;
	}
	return false;
}

/* The head WQE failed: complete it with st and move the QP to error; the rest
 * of the queue is flushed by the requester on its next pass. */
void comp_fatal(struct vr_qp *qp, enum ibv_wc_status st)
{
	CNT_BOTH(qp, errors, 1);
	engine_qp_error(qp, false);
	(void)st;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Requester: executes the WQEs of one send queue in order (RC ordering, IB
 * spec 9.5), with the retry rules of a real RC requester:
 *   no answer   -> retry after the transport timer, retry_cnt times, then
 *                  IBV_WC_RETRY_EXC_ERR (C9-140);
 *   RNR NAK     -> retry after the responder's RNR timer, rnr_retry times
 *                  (7 = forever), then IBV_WC_RNR_RETRY_EXC_ERR (C9-141);
 *   other NAKs  -> the matching remote error, QP to the error state.
 * A WQE waiting for a timer stalls the queue behind it, as on the wire.
 */
#include <string.h>

#include "internal.h"
#include "unirdma/barrier.h"

#define UD_MTU 4096u
#define FLUSH_BUDGET 256u       /* receive WQEs flushed per step */
#define FLUSH_COST 512          /* budget bytes one flushed receive WQE costs */
#define WQE_COST 2048           /* budget bytes one WQE costs besides its payload */

/* IB spec table 45: encoded RNR NAK timer -> microseconds * 100 */
static const uint32_t rnr_timer_10ns[32] = {
	65536000, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static uint64_t rnr_delay_ns(uint32_t code)
{
	return (uint64_t)rnr_timer_10ns[code & 31] * 10000ull;
}

/* Local ACK timeout: 4.096 us * 2^timeout (IB spec 11.2.4.2).  0 means
 * "infinite" in the spec; we use 2^14 (67 ms) so nothing waits forever. */
static uint64_t transport_delay_ns(uint32_t timeout)
{
	if (!timeout)
		timeout = 14;
	if (timeout > 17)
		timeout = 17;           /* at most about half a second per try */
	return 4096ull << timeout;
}

enum exec_result { EXEC_DONE, EXEC_WAIT, EXEC_MORE /* a piece done, the WQE goes on */ };

/* The WQE at the head no longer moves in pieces. */
static void xfer_end(struct vr_qp *qp)
{
	if (qp->eng.xfer)
		qp->eng.xfer->tx = false;
}

/* Free the head slot.  This must happen before the WQE's completion is
 * written: an application that polls the CQE may post into the slot at once
 * (rxe orders it the same way). */
static void sq_advance(struct vr_ring *sq)
{
	sq->head++;
	/* pairs with the library's load_acquire of cons: the slot is free */
	urd_store_release(&sq->hdr->cons, sq->head);
}

static enum exec_result fail(struct vr_qp *qp, const struct urd_send_wqe *w, enum ibv_wc_status st)
{
	xfer_end(qp);
	sq_advance(&qp->sq);
	comp_send(qp, w, st);
	comp_fatal(qp, st);
	return EXEC_DONE;
}

/* Runs the WQE w (the head of the SQ), or its next piece when it is longer
 * than ENGINE_PIECE: the first piece saves the WQE in qp->eng.xfer, and the
 * following ones run from that copy.  *bytes is lowered by what moved. */
static enum exec_result execute(struct vr_qp *qp, const struct urd_send_wqe *w, uint32_t slot_bytes,
				uint64_t now, int64_t *bytes)
{
	struct vsge local[ENGINE_MAX_SGE];
	struct packet pkt;
	const struct opcode_info *op;
	struct vr_qp *dst;
	struct engine_xfer *x = NULL;
	enum resp_result res;
	uint64_t len = 0, off = 0;
	uint32_t n = 0, piece, first;
	bool resume = qp->eng.xfer && qp->eng.xfer->tx;

	if (w->opcode >= URD_WR_NUM_OPCODES)
		return fail(qp, w, IBV_WC_LOC_QP_OP_ERR);
	op = &urd_opcodes[w->opcode];
	if ((op->flags & OPF_RC_ONLY) && qp->type != IBV_QPT_RC)
		return fail(qp, w, IBV_WC_LOC_QP_OP_ERR);

	if ((w->flags & URD_WQE_INLINE) && !(op->flags & OPF_LOCAL_WR)) {
		if (w->inline_len > qp->cap.max_inline_data || w->inline_len > slot_bytes - URD_SEND_WQE_HDR)
			return fail(qp, w, IBV_WC_LOC_LEN_ERR);
		local[0] = (struct vsge){ .mr = NULL, .off = 0, .len = w->inline_len,
					  .flat = (uint8_t *)(w + 1) };
		n = 1;
		len = w->inline_len;
	} else {
		const struct urd_sge *sg = (const struct urd_sge *)(w + 1);

		if (w->num_sge > qp->cap.max_send_sge ||
		    w->num_sge * sizeof(struct urd_sge) > slot_bytes - URD_SEND_WQE_HDR)
			return fail(qp, w, IBV_WC_LOC_LEN_ERR);
		for (uint32_t i = 0; i < w->num_sge; i++) {
			if (!sg[i].length)
				continue;
			if (mr_check_local(qp->vr, qp->pd, &sg[i],
					   (op->flags & OPF_LOCAL_WR) ? IBV_ACCESS_LOCAL_WRITE : 0, &local[n]))
				return fail(qp, w, IBV_WC_LOC_PROT_ERR);
			len += sg[i].length;
			n++;
		}
	}
	if (len > URD_MAX_MSG || ((op->flags & OPF_ATOMIC) && len != 8) ||
	    (qp->type == IBV_QPT_UD && len > UD_MTU))
		return fail(qp, w, IBV_WC_LOC_LEN_ERR);

	if (__builtin_expect(resume, 0) && len <= ENGINE_PIECE) {
		xfer_end(qp);           /* cannot happen (the saved copy is long), but never trust it */
		resume = false;
	}
	/* The rate limiter decides when work runs: a tenant cannot bypass it. */
	if ((qp->vr->qos.rate_bytes || qp->vr->qos.rate_ops) && !resume &&
	    !(qp->eng.retry_armed && qp->eng.retry_head == qp->sq.head)) {   /* retries were admitted */
		uint64_t until;

		if (!qos_admit(qp->vr, len, now, &until)) {
			CNT_BOTH(qp, qos_delays, 1);
			CNT_BOTH(qp, qos_delay_ns, until - now);
			engine_wait(qp, QP_WAIT_QOS, until);
			return EXEC_WAIT;
		}
	}
	piece = (uint32_t)len;
	if (__builtin_expect(len > ENGINE_PIECE, 0)) {  /* RC only: UD and atomics are short */
		if (resume) {
			x = qp->eng.xfer;
			off = x->tx_done;
		} else {
			x = engine_xfer_get(qp);
			if (!x)
				return fail(qp, w, IBV_WC_LOC_QP_OP_ERR);
			memcpy(x->wqe, w, slot_bytes);
			w = (const struct urd_send_wqe *)x->wqe;
			x->tx = true;
			x->tx_head = qp->sq.head;
			x->tx_token = ++qp->vr->d->eng.xfer_token;
			x->tx_done = 0;
		}
		if (len - off < piece)
			piece = (uint32_t)(len - off);
		if (piece > ENGINE_PIECE)
			piece = ENGINE_PIECE;
	}
	first = off ? vsge_advance(local, n, off) : 0;
	dst = qp->type == IBV_QPT_RC ? route_rc(qp) : route_ud(qp, w);
	memset(&pkt, 0, sizeof(pkt));
	pkt.src = qp;
	pkt.wqe = w;
	pkt.op = op;
	pkt.local = local + first;
	pkt.nlocal = n - first;
	pkt.len = piece;
	pkt.total = (uint32_t)len;
	pkt.off = off;
	pkt.token = x ? x->tx_token : 0;
	res = dst ? resp_handle(dst, &pkt) : RESP_SILENT;
	*bytes -= piece;

	if (qp->type == IBV_QPT_UD)
		res = RESP_ACK;         /* unreliable: the sender completes either way */
	if (!qp->eng.retry_armed || qp->eng.retry_head != qp->sq.head) {
		qp->eng.retry_armed = true;
		qp->eng.retry_head = qp->sq.head;
		qp->eng.rnr_left = qp->attr.rnr_retry;
		qp->eng.retry_left = qp->attr.retry_cnt;
	}
	switch (res) {
	case RESP_RESTART:
		x->tx_done = 0;          /* the responder lost the message: send it again */
		return EXEC_MORE;
	case RESP_ACK:
		if (x) {
			if (off + piece < len) {
				x->tx_done = off + piece;
				qp->eng.retry_armed = false;        /* progress: fresh retry counts */
				return EXEC_MORE;
			}
			x->tx = false;
		}
		if (op->flags & OPF_ATOMIC) {
			struct vsge r = { .mr = NULL, .off = 0, .len = 8, .flat = (uint8_t *)&pkt.atomic_orig };

			sg_copy(&qp->vr->d->eng, local, n, &r, 1, 8);
		}
		qp->eng.retry_armed = false;
		count_tx(qp, w->opcode, len);
		sq_advance(&qp->sq);
		comp_send(qp, w, IBV_WC_SUCCESS);
		return EXEC_DONE;
	case RESP_RNR:
		if (qp->eng.rnr_left == 7 || qp->eng.rnr_left-- > 0) {
			engine_wait(qp, QP_WAIT_RNR, now + rnr_delay_ns(pkt.rnr_timer));
			return EXEC_WAIT;
		}
		return fail(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
	case RESP_SILENT:
		if (qp->eng.retry_left-- > 0) {
			CNT_BOTH(qp, retries, 1);
			engine_wait(qp, QP_WAIT_RETRY, now + transport_delay_ns(qp->attr.timeout));
			return EXEC_WAIT;
		}
		return fail(qp, w, IBV_WC_RETRY_EXC_ERR);
	case RESP_NAK_INV_REQ:
		return fail(qp, w, IBV_WC_REM_INV_REQ_ERR);
	case RESP_NAK_ACCESS:
		return fail(qp, w, IBV_WC_REM_ACCESS_ERR);
	case RESP_NAK_OP:
	default:
		return fail(qp, w, IBV_WC_REM_OP_ERR);
	}
}

/* The engine no longer watches this send queue: from now on the library
 * rings the doorbell for what it posts. */
static void sq_unwatch(struct vr_ring *sq)
{
	if (sq->polling) {
		sq->polling = false;
		urd_store_relaxed(&sq->hdr->polling, 0);
	}
}

/* Reads the tenant's producer index into sq->seen; true if WQEs wait.
 * Called once per batch, when the WQEs read last time are done, not per WQE:
 * prod's line is the one the poster keeps writing. */
static bool sq_fetch(struct vr_qp *qp)
{
	struct vr_ring *sq = &qp->sq;
	uint32_t prod = urd_load_acquire(&sq->hdr->prod);

	if (prod == sq->head && sq->polling) {
		/* About to drop the queue: Dekker with the library's doorbell skip
		 * (abi.h, urd_ring_hdr.polling).  Either we see its new prod here
		 * or it sees polling == 0 and rings the doorbell. */
		sq_unwatch(sq);
		urd_smp_mb();
		prod = urd_load_acquire(&sq->hdr->prod);
	}
	if (prod - sq->head > sq->n) {
		/* a producer index no honest library writes: this QP is broken */
		sq_unwatch(sq);
		sq->head = sq->seen = prod;
		urd_store_release(&sq->hdr->cons, sq->head);
		engine_qp_error(qp, true);
		return false;
	}
	sq->seen = prod;
	if (prod == sq->head)
		return false;
	if (!sq->polling) {
		/* the library may skip its doorbell while we run this queue */
		sq->polling = true;
		urd_store_relaxed(&sq->hdr->polling, 1);
	}
	return true;
}

/* Copies the WQE at the SQ head out of the region: its header, then only the
 * SGEs or inline bytes the header announces (never past the slot).  The
 * copy is what execute() validates and uses: the tenant may rewrite the
 * slot meanwhile. */
static void wqe_copy(uint8_t *buf, const uint8_t *slot, uint32_t slot_bytes)
{
	const struct urd_send_wqe *w = (const struct urd_send_wqe *)buf;
	uint32_t body, sges;

	memcpy(buf, slot, URD_SEND_WQE_HDR);
	body = (w->flags & URD_WQE_INLINE) ? w->inline_len : 0;
	sges = (uint32_t)w->num_sge * (uint32_t)sizeof(struct urd_sge);
	if (sges > body)
		body = sges;
	if (body > slot_bytes - URD_SEND_WQE_HDR)
		body = slot_bytes - URD_SEND_WQE_HDR;  /* execute() rejects it */
	memcpy(buf + URD_SEND_WQE_HDR, slot + URD_SEND_WQE_HDR, body);
}

static bool req_run(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes, uint32_t *flush)
{
	struct vr_ring *sq = &qp->sq;
	uint8_t buf[WQE_MAX_BYTES] __attribute__((aligned(64)));
	uint32_t slot_bytes = 1u << sq->shift;

	if (qp->state == IBV_QPS_ERR && comp_recv_flush(qp, flush))
		return true;
	if (slot_bytes > sizeof(buf) || slot_bytes < URD_SEND_WQE_HDR)
		return false;
	while (budget--) {
		const struct urd_send_wqe *w = (const struct urd_send_wqe *)buf;
		enum exec_result r;

		if (*bytes <= 0)
			return true;
		if (sq->seen == sq->head && !sq_fetch(qp))
			return false;
		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
			sq_unwatch(sq);
			return false;   /* RTR/SQD: wait; modify to RTS re-activates us */
		}
		if (__builtin_expect(qp->eng.xfer && qp->eng.xfer->tx, 0)) {
			if (qp->eng.xfer->tx_head == sq->head)
				w = (const struct urd_send_wqe *)qp->eng.xfer->wqe; /* in pieces: its saved copy */
			else
				xfer_end(qp);   /* not the head any more: cannot happen, but never trust it */
		}
		if (w == (const struct urd_send_wqe *)buf)
			wqe_copy(buf, sq->slots + ((size_t)(sq->head & (sq->n - 1)) << sq->shift), slot_bytes);
		*bytes -= WQE_COST;
		if (qp->state == IBV_QPS_ERR) {
			xfer_end(qp);
			sq_advance(sq);
			comp_send(qp, w, IBV_WC_WR_FLUSH_ERR);
		} else {
			r = execute(qp, w, slot_bytes, now, bytes);
			if (r == EXEC_WAIT) {
				sq_unwatch(sq);         /* its timer re-activates it */
				return false;
			}
			if (r == EXEC_MORE && qp->state != IBV_QPS_ERR)
				return true;            /* the next piece in the next step */
		}
		if (qp->state == IBV_QPS_ERR && comp_recv_flush(qp, flush))
			return true;
	}
	return true;
}

/* Runs up to budget WQEs of the QP's send queue, and about *bytes bytes of
 * payload (a piece may overshoot it once); flushes of an errored QP's
 * receive queue count against *bytes too.  Returns true if work is left (the
 * engine keeps the QP on its active list). */
bool req_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes)
{
	uint32_t flush = FLUSH_BUDGET;
	bool more = req_run(qp, now, budget, bytes, &flush);

	*bytes -= (int64_t)(FLUSH_BUDGET - flush) * FLUSH_COST;
	return more;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Requester: executes the WQEs of one send queue in order (RC ordering, IB
 * spec 9.5), with the retry rules of a real RC requester:
 *   no answer   -> retry after the transport timer, retry_cnt times, then
 *                  IBV_WC_RETRY_EXC_ERR (C9-140);
 *   RNR NAK     -> retry after the responder's RNR timer, rnr_retry times
 *                  (7 = forever), then IBV_WC_RNR_RETRY_EXC_ERR (C9-141);
 *   other NAKs  -> the matching remote error, QP to the error state.
 * A WQE waiting for a timer stalls the queue behind it, as on the wire.
 *
 * The engine runs one of two steps for a QP on its active list:
 * req_process (the request step) executes the send queue, each WQE through
 * the named steps of enum req_state below; flush_process (the flush step)
 * completes what a QP in the error state holds with IBV_WC_WR_FLUSH_ERR.
 * CQEs and QP errors are the completer's (comp.c).
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "internal.h"
#include "log.h"
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

/* The steps of one WQE, as rxe_comp.c names its states: each handler does
 * one thing and returns the next step, which always comes later in this
 * list (execute() relies on it).  The last three end the WQE's turn.  IB
 * spec sections are cited in the handlers. */
enum req_state {
	REQST_CHECK_OPCODE,     /* a known opcode, allowed on this QP type */
	REQST_LOCAL,            /* a local operation (BIND_MW, LOCAL_INV): done here */
	REQST_GATHER,           /* the local SGEs or inline data: keys, bounds, access */
	REQST_CHECK_LENGTH,     /* the message's length rules */
	REQST_ADMIT,            /* the vRNIC's rate limiter lets it go now */
	REQST_PIECE,            /* a long message: the piece to move now */
	REQST_PACKET,           /* the packet that carries this piece */
	REQST_ROUTE,            /* the destination QP, if any */
	REQST_DELIVER,          /* hand the packet to the responder */
	REQST_CHECK_UD,         /* UD and UC are unreliable: whatever the answer, it was sent */
	REQST_ARM_RETRY,        /* fresh retry counts for a new head WQE */
	REQST_CHECK_ANSWER,     /* the responder's ACK or NAK decides */
	REQST_RESTART,          /* the responder lost the message: send it again */
	REQST_NEXT_PIECE,       /* a piece was acknowledged: the next one later */
	REQST_COMPLETE,         /* acknowledged: free the slot, write the CQE */
	REQST_RNR_RETRY,        /* RNR NAK: wait for the responder's RNR timer */
	REQST_RETRY,            /* no answer: wait for the transport timer */
	REQST_ERROR,            /* the WQE failed: complete it, QP to error */
	/* the WQE's turn ends: */
	REQST_DONE,             /* it completed (or failed): on to the next */
	REQST_WAIT,             /* a timer or the rate limiter holds the queue */
	REQST_MORE,             /* a piece moved: the next one in the next step */
};

static const char *const req_state_name[] = {
	[REQST_CHECK_OPCODE] = "check opcode",
	[REQST_LOCAL] = "local operation",
	[REQST_GATHER] = "gather",
	[REQST_CHECK_LENGTH] = "check length",
	[REQST_ADMIT] = "admit",
	[REQST_PIECE] = "piece",
	[REQST_PACKET] = "packet",
	[REQST_ROUTE] = "route",
	[REQST_DELIVER] = "deliver",
	[REQST_CHECK_UD] = "check ud",
	[REQST_ARM_RETRY] = "arm retry",
	[REQST_CHECK_ANSWER] = "check answer",
	[REQST_RESTART] = "restart",
	[REQST_NEXT_PIECE] = "next piece",
	[REQST_COMPLETE] = "complete",
	[REQST_RNR_RETRY] = "rnr retry",
	[REQST_RETRY] = "retry",
	[REQST_ERROR] = "error",
	[REQST_DONE] = "done",
	[REQST_WAIT] = "wait",
	[REQST_MORE] = "more",
};

static_assert(sizeof(req_state_name) / sizeof(req_state_name[0]) == REQST_MORE + 1, "a name for every step");

/* What the steps of one WQE share.  It lives on execute()'s stack and every
 * handler is inlined, so the compiler keeps most of it in registers. */
struct req_wqe {
	struct vr_qp *qp;
	const struct urd_send_wqe *w;   /* the WQE copied out of the region, or its saved copy */
	const struct urd_opcode_info *op;
	struct engine_xfer *x;          /* the message in pieces, or NULL */
	struct vr_qp *dst;
	struct vsge *local;             /* the gather (or scatter) list */
	struct packet *pkt;
	int64_t *bytes;                 /* the QP's step budget */
	uint64_t now;
	uint64_t len;                   /* the message */
	uint64_t off;                   /* this piece's offset in it */
	uint32_t slot_bytes;
	uint32_t n;                     /* entries of local */
	uint32_t first;                 /* this piece's first entry of local */
	uint32_t piece;                 /* this piece's length (len, unless in pieces) */
	bool resume;                    /* the message is in pieces, and not at its start */
	enum resp_result res;
	enum ibv_wc_status st;          /* REQST_ERROR: the WQE's status */
	bool mcast;                     /* a UD SEND to a multicast group */
};

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
	urd_queue_advance_cons(&sq->q);
}

static inline enum req_state req_fail(struct req_wqe *c, enum ibv_wc_status st)
{
	c->st = st;
	return REQST_ERROR;
}

static inline enum req_state req_check_opcode(struct req_wqe *c)
{
	c->op = urd_opcode(c->w->opcode, c->qp->type);
	if (!c->op)
		return req_fail(c, IBV_WC_LOC_QP_OP_ERR);
	if (__builtin_expect((c->op->flags & URD_OPF_LOCAL) != 0, 0))
		return REQST_LOCAL;
	return REQST_GATHER;
}

/* A memory window operation (mw.c) needs no packet.  Every WQE before it
 * has completed already (this requester runs one at a time), so LOCAL_INV's
 * fence (IB spec 10.8.3.3) holds by construction. */
static __attribute__((noinline)) enum req_state req_local(struct req_wqe *c)
{
	int st = local_op_execute(c->qp, c->w);

	if (st)
		return req_fail(c, (enum ibv_wc_status)st);
	c->qp->eng.retry_armed = false;
	count_tx(c->qp, c->w->opcode, 0);
	sq_advance(&c->qp->sq);
	complete_send(c->qp, c->w, IBV_WC_SUCCESS);
	return REQST_DONE;
}

/* The local side (IB spec 10.7.2): inline data from the WQE itself, or each
 * non-empty SGE checked against its MR (lkey, bounds, local write access
 * where the engine writes into it). */
static inline enum req_state req_gather(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;
	const struct urd_send_wqe *w = c->w;
	const struct urd_opcode_info *op = c->op;
	struct vsge *local = c->local;
	uint32_t slot_bytes = c->slot_bytes;
	uint64_t len = 0;
	uint32_t n = 0;

	if ((w->flags & URD_WQE_INLINE) && (op->flags & URD_OPF_INLINE)) {
		if (w->inline_len > qp->cap.max_inline_data || w->inline_len > slot_bytes - URD_SEND_WQE_HDR)
			return req_fail(c, IBV_WC_LOC_LEN_ERR);
		local[0] = (struct vsge){ .mr = NULL, .off = 0, .len = w->inline_len,
					  .flat = (uint8_t *)(w + 1) };
		n = 1;
		len = w->inline_len;
	} else {
		const struct urd_sge *sg = (const struct urd_sge *)(w + 1);

		if (w->num_sge > qp->cap.max_send_sge ||
		    w->num_sge * sizeof(struct urd_sge) > slot_bytes - URD_SEND_WQE_HDR)
			return req_fail(c, IBV_WC_LOC_LEN_ERR);
		for (uint32_t i = 0; i < w->num_sge; i++) {
			if (!sg[i].length)
				continue;
			if (mr_check_local(qp->vr, qp->pd, &sg[i],
					   (op->flags & URD_OPF_LOCAL_WRITE) ? IBV_ACCESS_LOCAL_WRITE : 0, &local[n]))
				return req_fail(c, IBV_WC_LOC_PROT_ERR);
			len += sg[i].length;
			n++;
		}
	}
	c->n = n;
	c->len = len;
	return REQST_CHECK_LENGTH;
}

/* At most 2^31 bytes (IB spec 9.4.3 / URD_MAX_MSG), 8 for an atomic, one MTU
 * for a UD datagram. */
static inline enum req_state req_check_length(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;
	uint64_t len = c->len;

	if (len > URD_MAX_MSG || ((c->op->flags & URD_OPF_ATOMIC) && len != 8) ||
	    (qp->type == IBV_QPT_UD && len > UD_MTU))
		return req_fail(c, IBV_WC_LOC_LEN_ERR);
	if (__builtin_expect(c->resume, 0) && len <= ENGINE_PIECE) {
		xfer_end(qp);           /* cannot happen (the saved copy is long), but never trust it */
		c->resume = false;
	}
	c->piece = (uint32_t)len;       /* the whole message, unless it moves in pieces */
	return REQST_ADMIT;
}

/* The rate limiter decides when work runs: a tenant cannot bypass it.  A
 * message is admitted once, at its first piece; its retries were admitted
 * with it. */
static inline enum req_state req_admit(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if ((qp->vr->qos.rate_bytes || qp->vr->qos.rate_ops) && !c->resume &&
	    !(qp->eng.retry_armed && qp->eng.retry_head == qp->sq.q.own)) {
		uint64_t until, now = c->now;

		if (!qos_admit(qp->vr, c->len, now, &until)) {
			CNT_BOTH(qp, qos_delays, 1);
			CNT_BOTH(qp, qos_delay_ns, until - now);
			engine_wait(qp, QP_WAIT_QOS, until);
			return REQST_WAIT;
		}
	}
	if (__builtin_expect(c->len > ENGINE_PIECE, 0))
		return REQST_PIECE;     /* RC only: UD and atomics are short */
	return REQST_PACKET;
}

/* A message longer than ENGINE_PIECE moves one piece per step: the first
 * piece saves the WQE in qp->eng.xfer, and the following ones run from that copy
 * (the tenant may rewrite the slot meanwhile). */
static inline enum req_state req_piece(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;
	struct engine_xfer *x;
	uint64_t len = c->len, off = 0;
	uint32_t piece = c->piece;

	if (c->resume) {
		x = qp->eng.xfer;
		off = x->tx_done;
	} else {
		x = engine_xfer_get(qp);
		if (!x)
			return req_fail(c, IBV_WC_LOC_QP_OP_ERR);
		memcpy(x->wqe, c->w, c->slot_bytes);
		c->w = (const struct urd_send_wqe *)x->wqe;
		x->tx = true;
		x->tx_head = qp->sq.q.own;
		x->tx_token = ++qp->vr->d->eng.xfer_token;
		x->tx_done = 0;
	}
	if (len - off < piece)
		piece = (uint32_t)(len - off);
	if (piece > ENGINE_PIECE)
		piece = ENGINE_PIECE;
	c->x = x;
	c->off = off;
	c->piece = piece;
	c->first = off ? vsge_advance(c->local, c->n, off) : 0;
	return REQST_PACKET;
}

/* The packet of this piece (the whole message unless it moves in pieces),
 * as a wire would carry it: the gather list from the piece's first entry.
 * Built before the route is looked up: what it holds then needs no
 * registers across that call (cheaper by about 9 instructions a WQE). */
static inline enum req_state req_packet(struct req_wqe *c)
{
	struct packet *pkt = c->pkt;

	memset(pkt, 0, sizeof(*pkt));
	pkt->src = c->qp;
	pkt->wqe = c->w;
	pkt->op = c->op;
	pkt->local = c->local + c->first;
	pkt->nlocal = c->n - c->first;
	pkt->len = c->piece;
	pkt->total = (uint32_t)c->len;
	pkt->off = c->off;
	pkt->token = c->x ? c->x->tx_token : 0;
	return REQST_ROUTE;
}

static inline enum req_state req_route(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if (__builtin_expect(qp->type == IBV_QPT_UD && c->w->is_global &&
			     (c->w->remote_qpn & 0xffffff) == URD_MCAST_QPN && urd_gid_is_mcast(c->w->dgid), 0)) {
		c->mcast = true;
		c->dst = NULL;
		return REQST_DELIVER;
	}

	c->dst = qp->type == IBV_QPT_UD ? route_ud(qp, c->w, c->pkt) : route_rc(qp);
	return REQST_DELIVER;
}

/* The packet goes to the responder, if there is one: a QP that nobody
 * answers (unreachable, other tenant) sees silence, as on a wire.  The piece
 * counts against the step's budget either way. */
/* A multicast UD SEND: a copy to every QP of the sender's tenant in the
 * group on this host (the sender's own too, if it joined: no loopback
 * blocking), and one packet to the group's address on the wire. */
static __attribute__((noinline)) void mcast_deliver(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;
	struct urd_daemon *d = qp->vr->d;
	uint32_t dip = 0;

	engine_gid_ip(c->w->dgid, &dip);
	c->pkt->dip = dip;
	for (struct vr_mcast *m = mcast_next(d, NULL, c->w->dgid); m; m = mcast_next(d, m, c->w->dgid))
		if (!strcmp(m->qp->vr->tenant, qp->vr->tenant) && !m->qp->vr->failed)
			resp_handle(m->qp, c->pkt);
	if (d->eng.wire)
		wire_ud_send(qp, c->w, c->op, c->local, c->n, (uint32_t)c->len);
}

static inline enum req_state req_deliver(struct req_wqe *c)
{
	if (__builtin_expect(c->mcast, 0)) {
		mcast_deliver(c);
		c->res = RESP_ACK;
	} else if (c->dst)
		c->res = resp_handle(c->dst, c->pkt);
	else if (c->qp->type == IBV_QPT_UD && c->qp->vr->d->eng.wire)
		c->res = wire_ud_send(c->qp, c->w, c->op, c->local, c->n, (uint32_t)c->len);
	else
		c->res = RESP_SILENT;
	*c->bytes -= c->piece;
	return REQST_CHECK_UD;
}

/* UD and UC are unreliable (IB spec 9.8.2, 9.8.3): the sender completes
 * whatever became of the packet; a UC message the responder dropped (no
 * receive WQE, a bad R_Key, a piece after a lost one) is simply lost. */
static inline enum req_state req_check_ud(struct req_wqe *c)
{
	if (c->qp->type != IBV_QPT_RC)
		c->res = RESP_ACK;
	return REQST_ARM_RETRY;
}

/* The retry counts belong to the WQE at the head: a new head gets fresh
 * ones, a retried WQE keeps what it has left. */
static inline enum req_state req_arm_retry(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if (!qp->eng.retry_armed || qp->eng.retry_head != qp->sq.q.own) {
		qp->eng.retry_armed = true;
		qp->eng.retry_head = qp->sq.q.own;
		qp->eng.rnr_left = qp->attr.rnr_retry;
		qp->eng.retry_left = qp->attr.retry_cnt;
	}
	return REQST_CHECK_ANSWER;
}

/* IB spec 9.7.5.2: ACK, RNR NAK, NAK codes; silence means retry. */
static inline enum req_state req_check_answer(struct req_wqe *c)
{
	switch (c->res) {
	case RESP_RESTART:
		return REQST_RESTART;
	case RESP_ACK:
		if (c->x && c->off + c->piece < c->len)
			return REQST_NEXT_PIECE;
		return REQST_COMPLETE;
	case RESP_RNR:
		return REQST_RNR_RETRY;
	case RESP_SILENT:
		return REQST_RETRY;
	case RESP_NAK_INV_REQ:
		return req_fail(c, IBV_WC_REM_INV_REQ_ERR);
	case RESP_NAK_ACCESS:
		return req_fail(c, IBV_WC_REM_ACCESS_ERR);
	case RESP_NAK_OP:
	default:
		return req_fail(c, IBV_WC_REM_OP_ERR);
	}
}

static inline enum req_state req_restart(struct req_wqe *c)
{
	c->x->tx_done = 0;      /* from its first piece, in the next step */
	return REQST_MORE;
}

static inline enum req_state req_next_piece(struct req_wqe *c)
{
	c->x->tx_done = c->off + c->piece;
	c->qp->eng.retry_armed = false;     /* progress: fresh retry counts */
	return REQST_MORE;
}

/* The last (or only) piece was acknowledged: an atomic's original value
 * lands in the local buffer, the slot is freed, then the CQE is written. */
static inline enum req_state req_complete(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if (c->x)
		c->x->tx = false;
	if (c->op->flags & URD_OPF_ATOMIC) {
		struct vsge r = { .mr = NULL, .off = 0, .len = 8, .flat = (uint8_t *)&c->pkt->atomic_orig };

		sg_copy(&qp->vr->d->eng, c->local, c->n, &r, 1, 8);
	}
	qp->eng.retry_armed = false;
	count_tx(qp, c->w->opcode, c->len);
	sq_advance(&qp->sq);
	complete_send(qp, c->w, IBV_WC_SUCCESS);
	return REQST_DONE;
}

/* C9-141: rnr_retry times, 7 meaning forever. */
static inline enum req_state req_rnr_retry(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if (qp->eng.rnr_left == 7 || qp->eng.rnr_left-- > 0) {
		engine_wait(qp, QP_WAIT_RNR, c->now + rnr_delay_ns(c->pkt->rnr_timer));
		return REQST_WAIT;
	}
	return req_fail(c, IBV_WC_RNR_RETRY_EXC_ERR);
}

/* C9-140: retry_cnt times after the local ACK timeout. */
static inline enum req_state req_retry(struct req_wqe *c)
{
	struct vr_qp *qp = c->qp;

	if (qp->eng.retry_left-- > 0) {
		CNT_BOTH(qp, retries, 1);
		engine_wait(qp, QP_WAIT_RETRY, c->now + transport_delay_ns(qp->attr.timeout));
		return REQST_WAIT;
	}
	return req_fail(c, IBV_WC_RETRY_EXC_ERR);
}

/* The WQE failed in step from: it completes with status st, and the QP goes
 * to the error state; the flush step completes the rest of its queues.
 * Then the WQE is done (REQST_DONE). */
static __attribute__((noinline, cold)) void req_error(struct vr_qp *qp, const struct urd_send_wqe *w,
						      enum ibv_wc_status st, enum req_state from)
{
	log_debug("qp %u: WQE %#" PRIx64 " failed in step \"%s\" with status %d", qp->qpn, w->wr_id,
		  req_state_name[from], (int)st);
	xfer_end(qp);
	sq_advance(&qp->sq);
	complete_send(qp, w, st);
	qp_fail(qp, QP_FAIL_WQE);
}

/* Runs the WQE w (the head of the SQ), or its next piece when it is longer
 * than ENGINE_PIECE, step by step.  *bytes is lowered by what moved.
 * Returns REQST_DONE, REQST_WAIT or REQST_MORE.
 *
 * A step's next step always comes later in enum req_state, so the steps run
 * as one pass down that list, each taken only when the one before chose it:
 * no loop, no jump table, and GCC turns every transition into a direct jump. */
static enum req_state execute(struct vr_qp *qp, const struct urd_send_wqe *w, uint32_t slot_bytes,
			      uint64_t now, int64_t *bytes)
{
	struct vsge local[ENGINE_MAX_SGE];
	struct packet pkt;
	struct req_wqe c;
	enum req_state s = REQST_CHECK_OPCODE, from = s;

	/* field by field: the steps set the others before they read them (an
	 * initializer would zero every field for every WQE) */
	c.qp = qp;
	c.w = w;
	c.x = NULL;
	c.local = local;
	c.pkt = &pkt;
	c.bytes = bytes;
	c.now = now;
	c.off = 0;
	c.slot_bytes = slot_bytes;
	c.first = 0;
	c.mcast = false;
	c.resume = qp->eng.xfer && qp->eng.xfer->tx;

#define STEP(state, handler) do { if (s == (state)) { from = s; s = handler(&c); } } while (0)
	STEP(REQST_CHECK_OPCODE, req_check_opcode);
	STEP(REQST_LOCAL, req_local);
	STEP(REQST_GATHER, req_gather);
	STEP(REQST_CHECK_LENGTH, req_check_length);
	STEP(REQST_ADMIT, req_admit);
	STEP(REQST_PIECE, req_piece);
	STEP(REQST_PACKET, req_packet);
	STEP(REQST_ROUTE, req_route);
	STEP(REQST_DELIVER, req_deliver);
	STEP(REQST_CHECK_UD, req_check_ud);
	STEP(REQST_ARM_RETRY, req_arm_retry);
	STEP(REQST_CHECK_ANSWER, req_check_answer);
	STEP(REQST_RESTART, req_restart);
	STEP(REQST_NEXT_PIECE, req_next_piece);
	STEP(REQST_COMPLETE, req_complete);
	STEP(REQST_RNR_RETRY, req_rnr_retry);
	STEP(REQST_RETRY, req_retry);
#undef STEP
	if (s == REQST_ERROR) {
		req_error(qp, c.w, c.st, from);
		s = REQST_DONE;
	}
	return s;
}

/* The engine no longer watches this send queue: from now on the library
 * rings the doorbell for what it posts. */
void sq_unwatch(struct vr_ring *sq)
{
	if (sq->polling) {
		sq->polling = false;
		urd_store_relaxed(&sq->q.hdr->polling, 0);
	}
}

/* Reads the tenant's producer index into sq->q.seen; true if WQEs wait.
 * Called once per batch, when the WQEs read last time are done, not per WQE:
 * prod's line is the one the poster keeps writing. */
bool sq_fetch(struct vr_qp *qp)
{
	struct vr_ring *sq = &qp->sq;
	uint32_t prod = urd_queue_load_prod(&sq->q);

	if (prod == sq->q.own && sq->polling) {
		/* About to drop the queue: Dekker with the library's doorbell skip
		 * (abi.h, urd_ring_hdr.polling; urd_queue_needs_doorbell()).
		 * Either we see its new prod here or it sees polling == 0 and
		 * rings the doorbell. */
		sq_unwatch(sq);
		urd_smp_mb();
		prod = urd_queue_load_prod(&sq->q);
	}
	if (!urd_queue_prod_ok(&sq->q, prod)) {
		/* a producer index no honest library writes: this QP is broken */
		sq_unwatch(sq);
		sq->q.own = sq->q.seen = prod;
		urd_queue_release_cons(&sq->q, sq->q.own);
		qp_fail(qp, QP_FAIL_FATAL);
		return false;
	}
	sq->q.seen = prod;
	if (prod == sq->q.own)
		return false;
	if (!sq->polling) {
		/* the library may skip its doorbell while we run this queue */
		sq->polling = true;
		urd_store_relaxed(&sq->q.hdr->polling, 1);
	}
	return true;
}

/* Copies the WQE at the SQ head out of the region: its header, then only the
 * SGEs or inline bytes the header announces (never past the slot).  The
 * copy is what execute() validates and uses: the tenant may rewrite the
 * slot meanwhile. */
void wqe_copy(uint8_t *buf, const uint8_t *slot, uint32_t slot_bytes)
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

/* The WQE at the SQ head: the saved copy of a message in pieces, or else a
 * copy out of the region into buf. */
static inline const struct urd_send_wqe *sq_head_wqe(struct vr_qp *qp, uint8_t *buf, uint32_t slot_bytes)
{
	struct vr_ring *sq = &qp->sq;

	if (__builtin_expect(qp->eng.xfer && qp->eng.xfer->tx, 0)) {
		if (qp->eng.xfer->tx_head == sq->q.own)
			return (const struct urd_send_wqe *)qp->eng.xfer->wqe; /* in pieces: its saved copy */
		xfer_end(qp);   /* not the head any more: cannot happen, but never trust it */
	}
	wqe_copy(buf, urd_queue_slot(&sq->q, sq->q.own), slot_bytes);
	return (const struct urd_send_wqe *)buf;
}

/* The flush step of a QP in the error state (IB spec 10.3.1: outstanding and
 * newly posted WQEs complete with IBV_WC_WR_FLUSH_ERR): its receive queue
 * first (not its SRQ), then its send queue, with what the tenant posted to
 * the receive queue meanwhile after each send WQE.  At most budget send WQEs
 * and *flush receive WQEs. */
static __attribute__((noinline)) bool flush_run(struct vr_qp *qp, uint32_t budget, int64_t *bytes,
						uint32_t *flush)
{
	struct vr_ring *sq = &qp->sq;
	uint8_t buf[WQE_MAX_BYTES] __attribute__((aligned(64)));
	uint32_t slot_bytes = 1u << sq->q.shift;

	if (flush_recv_queue(qp, flush))
		return true;
	if (slot_bytes > sizeof(buf) || slot_bytes < URD_SEND_WQE_HDR)
		return false;
	while (budget--) {
		const struct urd_send_wqe *w;

		if (*bytes <= 0)
			return true;
		if (sq->q.seen == sq->q.own && !sq_fetch(qp))
			return false;
		w = sq_head_wqe(qp, buf, slot_bytes);
		*bytes -= WQE_COST;
		xfer_end(qp);
		sq_advance(sq);
		complete_send(qp, w, IBV_WC_WR_FLUSH_ERR);
		if (flush_recv_queue(qp, flush))
			return true;
	}
	return true;
}

/* The request step: executes the send queue of a QP that is not in the
 * error state, in order.  A WQE that moves the QP to the error state hands
 * what is left of the step's budgets to the flush step. */
static bool req_run(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes, uint32_t *flush)
{
	struct vr_ring *sq = &qp->sq;
	uint8_t buf[WQE_MAX_BYTES] __attribute__((aligned(64)));
	uint32_t slot_bytes = 1u << sq->q.shift;

	if (slot_bytes > sizeof(buf) || slot_bytes < URD_SEND_WQE_HDR)
		return false;
	while (budget--) {
		const struct urd_send_wqe *w;
		enum req_state r;

		if (*bytes <= 0)
			return true;
		if (sq->q.seen == sq->q.own && !sq_fetch(qp))
			return false;
		if (qp->state != IBV_QPS_RTS) {
			sq_unwatch(sq);
			return false;   /* RTR/SQD: wait; modify to RTS re-activates us */
		}
		w = sq_head_wqe(qp, buf, slot_bytes);
		*bytes -= WQE_COST;
		r = execute(qp, w, slot_bytes, now, bytes);
		if (r == REQST_WAIT) {
			sq_unwatch(sq);         /* its timer re-activates it */
			return false;
		}
		if (qp->state == IBV_QPS_ERR)
			return flush_run(qp, budget, bytes, flush);
		if (r == REQST_MORE)
			return true;            /* the next piece in the next step */
	}
	return true;
}

/* The two steps the engine runs for a QP on its active list: up to budget
 * send WQEs, and about *bytes bytes of payload (a piece may overshoot it
 * once); flushed receive WQEs count against *bytes too.  They return true if
 * work is left (the engine keeps the QP on its active list). */
bool req_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes)
{
	uint32_t flush = FLUSH_BUDGET;
	bool more;

	if (qp->eng.wire)
		return wire_rc_process(qp, now, budget, bytes);
	more = req_run(qp, now, budget, bytes, &flush);

	*bytes -= (int64_t)(FLUSH_BUDGET - flush) * FLUSH_COST;
	return more;
}

bool flush_process(struct vr_qp *qp, uint32_t budget, int64_t *bytes)
{
	uint32_t flush = FLUSH_BUDGET;
	bool more = flush_run(qp, budget, bytes, &flush);

	*bytes -= (int64_t)(FLUSH_BUDGET - flush) * FLUSH_COST;
	return more;
}

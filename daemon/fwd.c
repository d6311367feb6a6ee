/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The forwarding data path: a benchmark baseline (FreeFlow's design), where
 * every data verb is a control request that the daemon executes for the
 * application.  Layouts and the trust notes are in unirdma/fwd.h; how bench/
 * uses it is in bench/README.md.
 *
 * Runs in the vRNIC's control thread under the big lock, like every control
 * request, so the engine never runs at the same time: the rings change hands
 * between the two under the lock.  The daemon takes the tenant's role on the
 * rings it forwards for: it is the producer of the SQ/RQ/SRQ (their prod
 * lives in the region; the consumer side is the engine's private head) and
 * the consumer of the CQ (cons in the region; the producer is the engine's
 * private head).  Every index read from the region is bounded by the private
 * one, every slot index masked (unirdma/ring.h: the engine's struct, whose
 * q.own is the engine's index).
 */
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "daemon.h"
#include "futex.h"
#include "unirdma/barrier.h"
#include "unirdma/fwd.h"

/* What the library's urd_ring_doorbell() does, on the tenant's behalf:
 * doorbell bit, summary bit, full fence, then wake the engine if it said it
 * sleeps (the engine sets engine_sleeping before re-checking the doorbells). */
static void fwd_doorbell(struct urd_vrnic *vr, uint32_t db_index)
{
	uint32_t w = (db_index / 64) & (URD_MAX_QP_SLOTS / 64 - 1);

	urd_fetch_or(&vr->db->bits[w], 1ull << (db_index % 64));
	urd_fetch_or(&vr->db->summary, 1ull << w);
	urd_smp_mb();
	if (urd_load_relaxed(&vr->hdr->engine_sleeping)) {
		urd_fetch_add(&vr->hdr->engine_wake, 1);
		urd_futex_wake(&vr->hdr->engine_wake, 1);
	}
}

static uint32_t pad(uint32_t n)
{
	return (n + URD_FWD_ALIGN - 1) & ~(URD_FWD_ALIGN - 1);
}

/* Outstanding WQEs the ring may hold: prod is the region's (tenant-writable)
 * producer index, q.own the engine's private consumer index.  A prod more
 * than a ring ahead is broken; the engine moves such a QP to error. */
static int ring_room(const struct vr_ring *r, uint32_t limit, uint32_t prod, uint32_t *room)
{
	uint32_t used = prod - r->q.own;

	if (!urd_queue_prod_ok(&r->q, prod))
		return -EINVAL;
	if (limit > r->q.n)
		limit = r->q.n;
	*room = used >= limit ? 0 : limit - used;
	return 0;
}

/* Copies the next WQE of the request, bytes long from *off (header and body,
 * already validated), into the ring's slot at *prod and steps past it (the
 * request pads each WQE to URD_FWD_ALIGN). */
static int ring_put(struct vr_ring *r, uint32_t *prod, uint32_t *room, const uint8_t *req,
		    uint32_t len, uint32_t *off, uint32_t bytes)
{
	if (len - *off < bytes)
		return -EINVAL;
	if (!*room)
		return -ENOMEM;
	memcpy(urd_queue_slot(&r->q, *prod), req + *off, bytes);
	(*prod)++;
	(*room)--;
	*off += pad(bytes);
	if (*off > len)
		*off = len;
	return 0;
}

static int fwd_post_send(struct vr_ctx *ctx, const uint8_t *req, uint32_t len,
			 struct urd_fwd_post_resp *o)
{
	const struct urd_fwd_post_req *r = (const void *)req;
	struct vr_qp *qp = obj_get(ctx, r->handle, OBJ_QP);
	uint32_t off = sizeof(*r), prod, room, slot_bytes, i;
	int ret = 0;

	if (!qp)
		return -EINVAL;
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
		return -EINVAL;         /* as the library refuses before RTR */
	slot_bytes = 1u << qp->sq.q.shift;
	prod = urd_queue_load_prod(&qp->sq.q);
	ret = ring_room(&qp->sq, qp->cap.max_send_wr, prod, &room);
	if (ret)
		return ret;
	for (i = 0; i < r->nwr; i++) {
		struct urd_send_wqe w;
		uint32_t body;

		if (len - off < sizeof(w)) {
			ret = -EINVAL;
			break;
		}
		memcpy(&w, req + off, sizeof(w));
		if (w.flags & URD_WQE_INLINE) {
			body = w.inline_len;
			if (body > qp->cap.max_inline_data || body > slot_bytes - URD_SEND_WQE_HDR) {
				ret = -EINVAL;
				break;
			}
		} else {
			if (w.num_sge > qp->cap.max_send_sge ||
			    w.num_sge * sizeof(struct urd_sge) > slot_bytes - URD_SEND_WQE_HDR) {
				ret = -EINVAL;
				break;
			}
			body = w.num_sge * (uint32_t)sizeof(struct urd_sge);
		}
		ret = ring_put(&qp->sq, &prod, &room, req, len, &off, (uint32_t)sizeof(w) + body);
		if (ret)
			break;
	}
	o->posted = i;
	if (i) {
		/* the WQEs are visible to the engine first */
		urd_queue_publish_prod(&qp->sq.q, prod);
		fwd_doorbell(qp->vr, qp->db_index);
	}
	return ret;
}

/* Receive WQEs into r (a QP's RQ or an SRQ's ring), max_sge and limit being
 * the queue's granted capabilities. */
static int fwd_post_recv_ring(struct vr_ring *ring, uint32_t max_sge, uint32_t limit,
			      const uint8_t *req, uint32_t len, struct urd_fwd_post_resp *o)
{
	const struct urd_fwd_post_req *r = (const void *)req;
	uint32_t off = sizeof(*r), prod, room, slot_bytes = 1u << ring->q.shift, i;
	int ret;

	prod = urd_queue_load_prod(&ring->q);
	ret = ring_room(ring, limit, prod, &room);
	if (ret)
		return ret;
	for (i = 0; i < r->nwr; i++) {
		struct urd_recv_wqe w;
		uint32_t body;

		if (len - off < sizeof(w)) {
			ret = -EINVAL;
			break;
		}
		memcpy(&w, req + off, sizeof(w));
		if (w.num_sge > max_sge ||
		    w.num_sge * sizeof(struct urd_sge) > slot_bytes - sizeof(w)) {
			ret = -EINVAL;
			break;
		}
		body = w.num_sge * (uint32_t)sizeof(struct urd_sge);
		ret = ring_put(ring, &prod, &room, req, len, &off, (uint32_t)sizeof(w) + body);
		if (ret)
			break;
	}
	o->posted = i;
	if (i)
		urd_queue_publish_prod(&ring->q, prod);
	return ret;
}

static int fwd_post_recv(struct vr_ctx *ctx, const uint8_t *req, uint32_t len,
			 struct urd_fwd_post_resp *o)
{
	const struct urd_fwd_post_req *r = (const void *)req;
	struct vr_qp *qp = obj_get(ctx, r->handle, OBJ_QP);
	int ret;

	if (!qp || qp->srq || !qp->rq.bytes)
		return -EINVAL;
	if (qp->state == IBV_QPS_RESET)
		return -EINVAL;         /* IB spec 10.8.2 */
	ret = fwd_post_recv_ring(&qp->rq, qp->cap.max_recv_sge, qp->cap.max_recv_wr, req, len, o);
	if (o->posted)
		/* the engine may be waiting for a receive (RNR): same doorbell */
		fwd_doorbell(qp->vr, qp->db_index);
	return ret;
}

static int fwd_post_srq_recv(struct vr_ctx *ctx, const uint8_t *req, uint32_t len,
			     struct urd_fwd_post_resp *o)
{
	const struct urd_fwd_post_req *r = (const void *)req;
	struct vr_srq *srq = obj_get(ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	/* No doorbell, as in the library: the engine reads an SRQ when a
	 * message arrives for one of its QPs. */
	return fwd_post_recv_ring(&srq->ring, srq->max_sge, srq->max_wr, req, len, o);
}

static int fwd_poll_cq(struct vr_ctx *ctx, const uint8_t *req, uint8_t *resp, uint32_t *resp_len)
{
	const struct urd_fwd_poll_req *r = (const void *)req;
	struct urd_fwd_poll_resp *o = (void *)resp;
	struct vr_cq *cq = obj_get(ctx, r->handle, OBJ_CQ);
	struct vr_ring *ring;
	uint32_t cons, avail, n;

	if (!cq)
		return -EINVAL;
	ring = &cq->ring;
	/* a consumer index nobody honest wrote: take the newest ring's worth */
	cons = urd_queue_cons_clamped(&ring->q);
	avail = ring->q.own - cons;
	n = r->max < URD_FWD_POLL_MAX ? r->max : URD_FWD_POLL_MAX;
	if (n > avail)
		n = avail;
	for (uint32_t i = 0; i < n; i++)
		memcpy(&o->cqe[i], urd_queue_slot(&ring->q, cons + i), sizeof(struct urd_cqe));
	o->n = n;
	*resp_len = (uint32_t)(sizeof(*o) + n * sizeof(struct urd_cqe));
	if (n)
		/* the engine may reuse the slots */
		urd_queue_release_cons(&ring->q, cons + n);
	return 0;
}

/* IB spec 11.4.2.2, as the library's urd_req_notify_cq: an ANY arm is not
 * weakened to SOLICITED.  The engine cannot push a CQE while we hold the big
 * lock, so the arm and the application's next (forwarded) poll are ordered. */
static int fwd_req_notify(struct vr_ctx *ctx, const uint8_t *req)
{
	const struct urd_fwd_notify_req *r = (const void *)req;
	struct vr_cq *cq = obj_get(ctx, r->handle, OBJ_CQ);
	uint32_t want = r->solicited_only ? URD_CQ_ARM_SOLICITED : URD_CQ_ARM_ANY;

	if (!cq)
		return -EINVAL;
	if (want == URD_CQ_ARM_SOLICITED &&
	    urd_load_relaxed(&cq->ring.q.hdr->arm) == URD_CQ_ARM_ANY) {
		urd_smp_mb();
		return 0;
	}
	urd_store_release(&cq->ring.q.hdr->arm, want);
	urd_smp_mb();
	return 0;
}

int fwd_dispatch(struct urd_vrnic *vr URD_UNUSED, struct vr_ctx *ctx, const void *req, uint32_t req_len,
		 void *resp, uint32_t *resp_len)
{
	const struct urd_msg_hdr *h = req;
	struct urd_fwd_post_resp *po = resp;
	uint32_t min_len = sizeof(struct urd_fwd_post_req);

	static_assert(sizeof(struct urd_fwd_poll_req) == sizeof(struct urd_fwd_post_req) &&
		      sizeof(struct urd_fwd_notify_req) == sizeof(struct urd_fwd_post_req),
		      "one minimum request length");
	*resp_len = sizeof(struct urd_msg_hdr);
	if (req_len < min_len)
		return -EINVAL;
	switch (h->op) {
	case URD_OP_FWD_POST_SEND:
		*resp_len = sizeof(*po);
		po->posted = 0;
		return fwd_post_send(ctx, req, req_len, po);
	case URD_OP_FWD_POST_RECV:
		*resp_len = sizeof(*po);
		po->posted = 0;
		return fwd_post_recv(ctx, req, req_len, po);
	case URD_OP_FWD_POST_SRQ_RECV:
		*resp_len = sizeof(*po);
		po->posted = 0;
		return fwd_post_srq_recv(ctx, req, req_len, po);
	case URD_OP_FWD_POLL_CQ:
		return fwd_poll_cq(ctx, req, resp, resp_len);
	case URD_OP_FWD_REQ_NOTIFY_CQ:
		return fwd_req_notify(ctx, req);
	default:
		return -EOPNOTSUPP;
	}
}

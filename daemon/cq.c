/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Completion queues. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "unirdma/barrier.h"
#include "verbs.h"

int op_create_cq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_create_cq_req *r = req;
	struct urd_create_cq_resp *o = resp;
	*resp_len = sizeof(*o);
	struct vr_cq *cq;
	int ret;

	if (!r->cqe || r->cqe > a->vr->lim.max_cqe)
		return -EINVAL;
	if (a->vr->ncq >= a->vr->lim.max_cq)
		return -ENOMEM;         /* quota */
	if (r->comp_vector >= 1)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	ret = ring_alloc(a->vr, &cq->ring, roundup_pow2(r->cqe), sizeof(struct urd_cqe));
	if (ret)
		goto err_free;
	ret = handle_new(a->ctx, &cq->obj, OBJ_CQ);
	if (ret)
		goto err_ring;
	a->vr->ncq++;
	o->handle = cq->obj.handle;
	o->nentries = cq->ring.q.n;
	o->ring_off = cq->ring.off;
	return 0;

err_ring:
	ring_free(a->vr, &cq->ring);
err_free:
	free(cq);
	return ret;
}

/* Under the big lock, which the engine holds while it writes CQEs: the swap
 * is atomic for it.  The tenant's cons is read once and clamped (ring.h);
 * a lie only reorders or loses this tenant's own CQEs. */
int op_resize_cq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_resize_cq_req *r = req;
	struct urd_create_cq_resp *o = resp;
	struct vr_cq *cq = obj_get(a->ctx, r->handle, OBJ_CQ);
	struct vr_ring nr, old;
	uint32_t cons, used;
	int ret;

	*resp_len = sizeof(*o);
	if (!cq)
		return -EINVAL;
	if (!r->cqe || r->cqe > a->vr->lim.max_cqe)
		return -EINVAL;
	cons = urd_queue_cons_clamped(&cq->ring.q);
	used = cq->ring.q.own - cons;
	if (r->cqe < used)
		return -EINVAL;         /* rxe: below the outstanding completions */
	ret = ring_alloc(a->vr, &nr, roundup_pow2(r->cqe), sizeof(struct urd_cqe));
	if (ret)
		return ret;
	for (uint32_t i = 0; i < used; i++)
		memcpy(urd_queue_slot(&nr.q, i), urd_queue_slot(&cq->ring.q, cons + i), sizeof(struct urd_cqe));
	nr.q.own = used;
	nr.q.seen = 0;
	/* what the library and its event thread follow across the swap */
	urd_store_relaxed(&nr.q.hdr->arm, urd_load_relaxed(&cq->ring.q.hdr->arm));
	urd_store_relaxed(&nr.q.hdr->events, cq->events);
	nr.q.hdr->flags = cq->ring.q.hdr->flags & URD_RING_F_ERROR;
	urd_queue_publish_prod(&nr.q, used);
	old = cq->ring;
	cq->ring = nr;
	ring_free(a->vr, &old);
	o->handle = cq->obj.handle;
	o->nentries = cq->ring.q.n;
	o->ring_off = cq->ring.off;
	return 0;
}

void cq_free(struct vr_cq *cq)
{
	struct urd_vrnic *vr = cq->obj.ctx->vr;

	ring_free(vr, &cq->ring);
	vr->ncq--;
	handle_free(&cq->obj);
	free(cq);
}

int op_destroy_cq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_cq *cq = obj_get(a->ctx, r->handle, OBJ_CQ);

	if (!cq)
		return -EINVAL;
	if (cq->obj.refs)
		return -EBUSY;
	cq_free(cq);
	return 0;
}

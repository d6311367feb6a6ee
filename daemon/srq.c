/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared receive queues. */
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

uint32_t recv_wqe_bytes(uint32_t max_sge)
{
	return roundup_pow2((uint32_t)sizeof(struct urd_recv_wqe) +
			    (max_sge ? max_sge : 1) * (uint32_t)sizeof(struct urd_sge));
}

static void srq_fill(const struct vr_srq *srq, struct urd_srq_resp *o)
{
	o->handle = srq->obj.handle;
	o->srq_num = srq->srq_num;
	o->max_wr = srq->max_wr;
	o->max_sge = srq->max_sge;
	o->srq_limit = srq->limit;
	o->nentries = srq->ring.q.n;
	o->wqe_shift = srq->ring.q.shift;
	o->ring_off = srq->ring.off;
}

int op_create_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_create_srq_req *r = req;
	struct urd_srq_resp *o = resp;
	*resp_len = sizeof(*o);
	const struct urd_dev_attr *dev = &a->vr->hdr->dev;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_srq *srq;
	uint32_t n;
	int ret;

	if (!pd || !r->max_wr || r->max_wr > a->vr->lim.max_srq_wr || r->max_sge > URD_MAX_SGE ||
	    r->srq_limit > r->max_wr)
		return -EINVAL;
	if (a->vr->nsrq >= a->vr->lim.max_srq)
		return -ENOMEM;         /* quota */
	(void)dev;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	n = roundup_pow2(r->max_wr);
	ret = ring_alloc(a->vr, &srq->ring, n, recv_wqe_bytes(r->max_sge));
	if (ret)
		goto err_free;
	ret = handle_new(a->ctx, &srq->obj, OBJ_SRQ);
	if (ret)
		goto err_ring;
	srq->pd = pd;
	pd->obj.refs++;
	srq->max_wr = n;
	srq->max_sge = r->max_sge ? r->max_sge : 1;
	srq->limit = r->srq_limit;
	srq->srq_num = a->vr->d->next_srqn++ & 0xffffff;
	a->vr->nsrq++;
	srq_fill(srq, o);
	return 0;

err_ring:
	ring_free(a->vr, &srq->ring);
err_free:
	free(srq);
	return ret;
}

int op_modify_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_modify_srq_req *r = req;
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (r->attr_mask & ~(uint32_t)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	if (r->attr_mask & IBV_SRQ_MAX_WR)
		return -EINVAL;         /* resizing is not supported (no IBV_DEVICE_SRQ_RESIZE) */
	if (r->attr_mask & IBV_SRQ_LIMIT) {
		if (r->srq_limit > srq->max_wr)
			return -EINVAL;
		srq->limit = r->srq_limit;      /* arms the limit event; 0 disarms */
	}
	return 0;
}

int op_query_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_handle_req *r = req;
	struct urd_srq_resp *o = resp;
	*resp_len = sizeof(*o);
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	srq_fill(srq, o);
	return 0;
}

void srq_free(struct vr_srq *srq)
{
	struct urd_vrnic *vr = srq->obj.ctx->vr;

	ring_free(vr, &srq->ring);
	srq->pd->obj.refs--;
	vr->nsrq--;
	handle_free(&srq->obj);
	free(srq);
}

int op_destroy_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (srq->obj.refs)
		return -EBUSY;
	srq_free(srq);
	return 0;
}

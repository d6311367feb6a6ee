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

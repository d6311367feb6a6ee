/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* srq.c - shared receive queues.
 *
 * The SRQ ring works like a QP's receive ring (qp.c): we write receive WQEs,
 * publish prod with a release store, the engine advances cons (unirdma/ring.h).
 * No doorbell: the engine looks at an SRQ only when a message arrives for a
 * QP attached to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

static uint32_t recv_slot_min(uint32_t max_sge)
{
	return (uint32_t)sizeof(struct urd_recv_wqe) + max_sge * (uint32_t)sizeof(struct urd_sge);
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct urd_context *ctx = to_uctx(pd->context);
	struct urd_create_srq_req req = { 0 };
	struct urd_srq_resp resp;
	struct urd_srq *srq;
	int ret;

	if (urd_ctx_dead(ctx)) {
		errno = EIO;
		return NULL;
	}
	srq = urd_calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	req.pd = pd->handle;
	req.max_wr = attr->attr.max_wr;
	req.max_sge = attr->attr.max_sge;
	req.srq_limit = attr->attr.srq_limit;
	ret = urd_ctrl(ctx, URD_OP_CREATE_SRQ, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret)
		goto err_free;
	if (resp.max_sge > URD_MAX_SGE ||
	    urd_wq_map(ctx, &srq->rq, resp.ring_off, resp.nentries,
		       resp.wqe_shift, recv_slot_min(resp.max_sge))) {
		urd_dbg("CREATE_SRQ: bad ring (off %llu, %u entries, shift %u)",
			(unsigned long long)resp.ring_off, resp.nentries,
			resp.wqe_shift);
		urd_ctrl_handle(ctx, URD_OP_DESTROY_SRQ, resp.handle);
		ret = -EPROTO;
		goto err_free;
	}
	srq->rq.max_wr = resp.max_wr;
	srq->rq.max_sge = resp.max_sge;
	srq->srq_num = resp.srq_num;
	srq->srq_limit = resp.srq_limit;

	/* man ibv_create_srq: the actual values go back to the caller. */
	attr->attr.max_wr = resp.max_wr;
	attr->attr.max_sge = resp.max_sge;

	srq->ibv.context = pd->context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = pd;
	srq->ibv.handle = resp.handle;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	srq->ibv.events_completed = 0;
	urd_obj_add(ctx, &srq->node, URD_OBJ_SRQ, resp.handle);
	return &srq->ibv;

err_free:
	urd_free(srq);
	errno = -ret;
	return NULL;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct urd_srq *srq = to_usrq(ibsrq);
	struct urd_modify_srq_req req = { 0 };
	struct urd_srq_resp resp;
	int ret;

	if ((unsigned int)attr_mask & ~(unsigned int)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	req.handle = ibsrq->handle;
	req.attr_mask = (uint32_t)attr_mask;
	req.max_wr = attr->max_wr;
	req.srq_limit = attr->srq_limit;
	ret = urd_ctrl(to_uctx(ibsrq->context), URD_OP_MODIFY_SRQ, &req,
		       sizeof(req), &resp, sizeof(struct urd_msg_hdr), sizeof(resp));
	if (ret)
		return -ret;
	if (attr_mask & IBV_SRQ_LIMIT)
		srq->srq_limit = attr->srq_limit;
	/* A grown SRQ keeps its ring: only the outstanding limit moves. */
	if (resp.hdr.len >= sizeof(resp) && resp.max_wr) {
		pthread_spin_lock(&srq->rq.lock);
		srq->rq.max_wr = resp.max_wr < srq->rq.q.n ? resp.max_wr : srq->rq.q.n;
		pthread_spin_unlock(&srq->rq.lock);
	}
	return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct urd_handle_req req = { .handle = ibsrq->handle };
	struct urd_srq_resp resp;
	int ret;

	ret = urd_ctrl(to_uctx(ibsrq->context), URD_OP_QUERY_SRQ, &req,
		       sizeof(req), &resp, sizeof(resp), sizeof(resp));
	if (ret)
		return -ret;
	attr->max_wr = resp.max_wr;
	attr->max_sge = resp.max_sge;
	attr->srq_limit = resp.srq_limit;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct urd_context *ctx = to_uctx(ibsrq->context);
	struct urd_srq *srq = to_usrq(ibsrq);
	int ret;

	ret = urd_ctrl_handle(ctx, URD_OP_DESTROY_SRQ, ibsrq->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;
	urd_srq_events_drain(ctx, srq);
	pthread_spin_destroy(&srq->rq.lock);
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	urd_free(srq);
	return 0;
}

int urd_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct urd_srq *srq = to_usrq(ibsrq);
	uint32_t start;
	int ret;

	pthread_spin_lock(&srq->rq.lock);
	start = srq->rq.q.own;
	ret = urd_post_recv_wq(&srq->rq, wr, bad_wr);
	if (srq->rq.q.own != start)
		urd_queue_publish_prod(&srq->rq.q, srq->rq.q.own);
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}

int urd_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_usrq(ibsrq)->srq_num;
	return 0;
}

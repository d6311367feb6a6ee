/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Queue pairs: creation, the state machine of modify, query, destroy. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "log.h"
#include "unirdma/barrier.h"
#include "verbs.h"

int op_create_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_create_qp_req *r = req;
	struct urd_create_qp_resp *o = resp;
	*resp_len = sizeof(*o);
	struct urd_vrnic *vr = a->vr;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_cq *scq = obj_get(a->ctx, r->send_cq, OBJ_CQ);
	struct vr_cq *rcq = obj_get(a->ctx, r->recv_cq, OBJ_CQ);
	struct vr_srq *srq = NULL;
	struct urd_qp_cap cap = r->cap;
	uint32_t sq_bytes, room, db = UINT32_MAX;
	struct vr_qp *qp;
	int ret;

	if (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UC && r->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if (!pd || !scq || !rcq)
		return -EINVAL;
	if (r->srq && !(srq = obj_get(a->ctx, r->srq, OBJ_SRQ)))
		return -EINVAL;
	if (cap.max_send_wr > vr->lim.max_qp_wr || cap.max_send_sge > URD_MAX_SGE ||
	    cap.max_inline_data > URD_MAX_INLINE ||
	    (!srq && (cap.max_recv_wr > vr->lim.max_qp_wr || cap.max_recv_sge > URD_MAX_SGE)))
		return -EINVAL;
	if (vr->nqp >= vr->lim.max_qp)
		return -ENOMEM;         /* quota */
	for (uint32_t i = 0; i < URD_MAX_QP_SLOTS; i++)
		if (!vr->qp_slots[i]) {
			db = i;
			break;
		}
	if (db == UINT32_MAX)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	room = cap.max_send_sge * (uint32_t)sizeof(struct urd_sge);
	if (cap.max_inline_data > room)
		room = cap.max_inline_data;
	if (room < sizeof(struct urd_sge))
		room = sizeof(struct urd_sge);
	sq_bytes = roundup_pow2(URD_SEND_WQE_HDR + room);
	ret = ring_alloc(vr, &qp->sq, roundup_pow2(cap.max_send_wr ? cap.max_send_wr : 1), sq_bytes);
	if (ret)
		goto err_free;
	room = sq_bytes - URD_SEND_WQE_HDR;
	cap.max_inline_data = room < URD_MAX_INLINE ? room : URD_MAX_INLINE;
	cap.max_send_sge = room / sizeof(struct urd_sge) < URD_MAX_SGE ?
			   room / (uint32_t)sizeof(struct urd_sge) : URD_MAX_SGE;
	cap.max_send_wr = qp->sq.q.n;
	if (!srq) {
		uint32_t rb = recv_wqe_bytes(cap.max_recv_sge);

		ret = ring_alloc(vr, &qp->rq, roundup_pow2(cap.max_recv_wr ? cap.max_recv_wr : 1), rb);
		if (ret)
			goto err_sq;
		cap.max_recv_wr = qp->rq.q.n;
		cap.max_recv_sge = (rb - (uint32_t)sizeof(struct urd_recv_wqe)) / (uint32_t)sizeof(struct urd_sge);
		if (cap.max_recv_sge > URD_MAX_SGE)
			cap.max_recv_sge = URD_MAX_SGE;
	} else {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	ret = handle_new(a->ctx, &qp->obj, OBJ_QP);
	if (ret)
		goto err_rq;
	qp->vr = vr;
	qp->type = r->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->sq_sig_all = r->sq_sig_all != 0;
	qp->pd = pd;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->srq = srq;
	pd->obj.refs++;
	scq->obj.refs++;
	rcq->obj.refs++;
	if (srq)
		srq->obj.refs++;
	qp->cap = cap;
	qp->db_index = db;
	qp->qpn = qpn_alloc(vr->d);
	qpn_link(vr->d, qp);
	vr->qp_slots[db] = qp;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.port_num = 1;
	qp->attr.cap = cap;
	vr->nqp++;

	o->handle = qp->obj.handle;
	o->qpn = qp->qpn;
	o->db_index = db;
	o->cap = cap;
	o->sq_off = qp->sq.off;
	o->sq_n = qp->sq.q.n;
	o->sq_wqe_shift = qp->sq.q.shift;
	o->rq_off = srq ? 0 : qp->rq.off;
	o->rq_n = srq ? 0 : qp->rq.q.n;
	o->rq_wqe_shift = srq ? 0 : qp->rq.q.shift;
	return 0;

err_rq:
	ring_free(vr, &qp->rq);
err_sq:
	ring_free(vr, &qp->sq);
err_free:
	free(qp);
	return ret;
}

/* IB spec 11.2.4.2 / the kernel's QP state table (ib_modify_qp_is_ok):
 * attributes each transition requires and may take.  UC connects like RC
 * but has no responder resources, RNR timer, timeout or retry counts. */
static bool qp_transition(uint32_t type, uint32_t cur, uint32_t next, uint32_t *req, uint32_t *opt)
{
	const bool ud = type == IBV_QPT_UD, uc = type == IBV_QPT_UC;

	*req = IBV_QP_STATE;
	*opt = 0;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return cur <= IBV_QPS_ERR;
	switch (cur) {
	case IBV_QPS_RESET:
		if (next != IBV_QPS_INIT)
			return false;
		*req |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
		return true;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			*opt = IBV_QP_PKEY_INDEX | IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
			return true;
		}
		if (next != IBV_QPS_RTR)
			return false;
		if (ud) {
			*opt = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		} else {
			*req |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
			if (!uc)
				*req |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			*opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
		}
		return true;
	case IBV_QPS_RTR:
		if (next != IBV_QPS_RTS)
			return false;
		*req |= IBV_QP_SQ_PSN;
		if (ud) {
			*opt = IBV_QP_CUR_STATE | IBV_QP_QKEY;
		} else if (uc) {
			*opt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			       IBV_QP_PATH_MIG_STATE;
		} else {
			*req |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			*opt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
		}
		return true;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
		if (next == IBV_QPS_SQD && cur != IBV_QPS_SQE) {
			*opt = IBV_QP_EN_SQD_ASYNC_NOTIFY;
			return true;
		}
		if (next != IBV_QPS_RTS)
			return false;
		*opt = IBV_QP_CUR_STATE | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					   IBV_QP_PATH_MIG_STATE | (uc ? 0 : IBV_QP_MIN_RNR_TIMER));
		if (cur == IBV_QPS_SQD && !ud && !uc)
			*opt |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_AV;
		else if (cur == IBV_QPS_SQD && uc)
			*opt |= IBV_QP_AV;
		return true;
	default:
		return false;
	}
}

int op_modify_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_modify_qp_req *r = req;
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);
	const struct urd_qp_attr *at = &r->attr;
	uint32_t mask = r->attr_mask, need, opt, next;

	if (!qp)
		return -EINVAL;
	next = (mask & IBV_QP_STATE) ? at->qp_state : qp->state;
	if (next > IBV_QPS_ERR)
		return -EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && at->cur_qp_state != qp->state)
		return -EINVAL;
	if (!(mask & IBV_QP_STATE)) {
		/* attribute-only change: allowed where the same-state transition is */
		if (!qp_transition(qp->type, qp->state, qp->state, &need, &opt))
			return -EINVAL;
		need &= ~(uint32_t)IBV_QP_STATE;
	} else if (!qp_transition(qp->type, qp->state, next, &need, &opt)) {
		return -EINVAL;
	}
	if ((mask & need) != need || (mask & ~(need | opt | IBV_QP_STATE)))
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && at->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && at->pkey_index != 0)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (at->path_mtu < IBV_MTU_256 || at->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && at->dest_qp_num > 0xffffff)
		return -EINVAL;
	if ((mask & IBV_QP_AV) && ((at->ah.is_global && !urd_gid_index_ok(at->ah.sgid_index)) ||
				   (at->ah.port_num && at->ah.port_num != 1)))
		return -EINVAL;
	/* a RoCE port's AV needs a GRH (the kernel's rdma_check_ah_attr),
	 * unless the operator allowed InfiniBand-style ones (grhless_av) */
	if ((mask & IBV_QP_AV) && !at->ah.is_global && !qp->vr->grhless_av)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && at->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && at->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && at->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && at->rnr_retry > 7)
		return -EINVAL;
	/* limits from private state: the header is tenant-writable */
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && at->max_rd_atomic > URD_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && at->max_dest_rd_atomic > URD_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (at->qp_access_flags & ~(uint32_t)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;

#define TAKE(bit, field) do { if (mask & (bit)) qp->attr.field = at->field; } while (0)
	TAKE(IBV_QP_PKEY_INDEX, pkey_index);
	TAKE(IBV_QP_PORT, port_num);
	TAKE(IBV_QP_QKEY, qkey);
	TAKE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	TAKE(IBV_QP_PATH_MTU, path_mtu);
	TAKE(IBV_QP_DEST_QPN, dest_qp_num);
	TAKE(IBV_QP_RQ_PSN, rq_psn);
	TAKE(IBV_QP_SQ_PSN, sq_psn);
	TAKE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	TAKE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	TAKE(IBV_QP_TIMEOUT, timeout);
	TAKE(IBV_QP_RETRY_CNT, retry_cnt);
	TAKE(IBV_QP_RNR_RETRY, rnr_retry);
	TAKE(IBV_QP_PATH_MIG_STATE, path_mig_state);
	TAKE(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
	TAKE(IBV_QP_AV, ah);
#undef TAKE
	if (!(mask & IBV_QP_STATE))
		return 0;
	if (next == IBV_QPS_RESET) {
		engine_forget(qp);
		ring_reset(&qp->sq);
		ring_reset(&qp->rq);
		qp->eng.wait = QP_WAIT_NONE;
	}
	qp->state = next;
	qp->attr.qp_state = next;
	if (next == IBV_QPS_ERR)
		engine_qp_error(qp, false);
	else if (next == IBV_QPS_RTS || next == IBV_QPS_RTR) {
		engine_qp_connect(qp);  /* a peer on another host: the wire's state */
		engine_activate(qp);    /* WQEs posted before the transition may be waiting */
	}
	return 0;
}

int op_query_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_handle_req *r = req;
	struct urd_query_qp_resp *o = resp;
	*resp_len = sizeof(*o);
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);

	if (!qp)
		return -EINVAL;
	o->attr = qp->attr;
	o->attr.qp_state = qp->state;
	o->attr.cur_qp_state = qp->state;
	o->attr.cap = qp->cap;
	o->qp_type = qp->type;
	o->sq_sig_all = qp->sq_sig_all;
	o->srq = qp->srq ? qp->srq->obj.handle : 0;
	return 0;
}

/* The host's last QP left a group: the wire leaves it too. */
static void mcast_gone(struct urd_daemon *d, const uint8_t gid[16])
{
	engine_mcast_join(d, gid, false);
}

/* ibv_attach_mcast / ibv_detach_mcast: a UD QP and a multicast GID (the
 * kernel's ib_attach_mcast checks; a RoCE port ignores the LID). */
static struct vr_qp *mcast_qp(struct handler_args *a, const struct urd_mcast_req *r)
{
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);

	if (!qp || qp->type != IBV_QPT_UD || !urd_gid_is_mcast(r->gid))
		return NULL;
	return qp;
}

int op_attach_mcast(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_mcast_req *r = req;
	struct vr_qp *qp = mcast_qp(a, r);
	bool first;
	int ret;

	if (!qp)
		return -EINVAL;
	ret = mcast_attach(a->vr->d, qp, r->gid, &first);
	if (ret)
		return ret;
	if (first)
		engine_mcast_join(a->vr->d, r->gid, true);
	memcpy(resp, r, sizeof(*r));    /* for the undo of an abandoned attach */
	*resp_len = sizeof(*r);
	return 0;
}

int op_detach_mcast(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED,
		    uint32_t *resp_len URD_UNUSED)
{
	const struct urd_mcast_req *r = req;
	struct vr_qp *qp = mcast_qp(a, r);
	bool last;
	int ret;

	if (!qp)
		return -EINVAL;
	ret = mcast_detach(a->vr->d, qp, r->gid, &last);
	if (!ret && last)
		engine_mcast_join(a->vr->d, r->gid, false);
	return ret;
}

void qp_free(struct vr_qp *qp)
{
	struct urd_vrnic *vr = qp->vr;

	mcast_detach_all(vr->d, qp, mcast_gone);
	cm_forget(qp);
	mw_unbind_qp(vr, qp);           /* its type 2 windows are free again */
	engine_forget(qp);
	qpn_unlink(vr->d, qp);
	vr->qp_slots[qp->db_index] = NULL;
	ring_free(vr, &qp->sq);
	ring_free(vr, &qp->rq);
	qp->pd->obj.refs--;
	qp->scq->obj.refs--;
	qp->rcq->obj.refs--;
	if (qp->srq)
		qp->srq->obj.refs--;
	vr->nqp--;
	handle_free(&qp->obj);
	free(qp);
}

int op_destroy_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);

	if (!qp)
		return -EINVAL;
	qp_free(qp);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* qp.c - queue pairs: create/modify/query/destroy, post_send, post_recv and
 * the ibv_wr_* (ibv_qp_ex) interface.
 *
 * Notes on the send and receive rings (abi.h):
 *  - we are the producer (unirdma/ring.h): we write WQEs into the slots,
 *    then publish prod with ONE release store per batch, then ring the QP's
 *    doorbell bit once; the engine advances cons when it has taken a WQE;
 *  - cons is engine-written: urd_wq_room() treats any value that claims more
 *    than a ring of outstanding work as "full", and every slot index is
 *    masked, so a scribbled cons cannot make us write outside the ring;
 *  - no syscall, except the futex wake inside urd_ring_doorbell() when the
 *    engine has announced that it sleeps.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "unirdma/cm.h"
#include "unirdma/opcode.h"

static_assert(sizeof(struct ibv_sge) == sizeof(struct urd_sge) &&
	      offsetof(struct ibv_sge, addr) == offsetof(struct urd_sge, addr) &&
	      offsetof(struct ibv_sge, length) == offsetof(struct urd_sge, length) &&
	      offsetof(struct ibv_sge, lkey) == offsetof(struct urd_sge, lkey),
	      "ibv_sge and urd_sge share a layout: SGE lists are copied as is");
static_assert((int)IBV_WR_RDMA_WRITE == URD_WR_RDMA_WRITE &&
	      (int)IBV_WR_RDMA_WRITE_WITH_IMM == URD_WR_RDMA_WRITE_WITH_IMM &&
	      (int)IBV_WR_SEND == URD_WR_SEND &&
	      (int)IBV_WR_SEND_WITH_IMM == URD_WR_SEND_WITH_IMM &&
	      (int)IBV_WR_RDMA_READ == URD_WR_RDMA_READ &&
	      (int)IBV_WR_ATOMIC_CMP_AND_SWP == URD_WR_ATOMIC_CMP_AND_SWP &&
	      (int)IBV_WR_ATOMIC_FETCH_AND_ADD == URD_WR_ATOMIC_FETCH_AND_ADD &&
	      (int)IBV_WR_LOCAL_INV == URD_WR_LOCAL_INV && (int)IBV_WR_BIND_MW == URD_WR_BIND_MW &&
	      (int)IBV_WR_SEND_WITH_INV == URD_WR_SEND_WITH_INV,
	      "WR opcodes are passed through");
/* IBV_QP_EX_WITH_<op> == 1 << <op> for the ten opcodes we implement. */
static_assert(IBV_QP_EX_WITH_RDMA_WRITE == 1 << IBV_WR_RDMA_WRITE &&
	      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM == 1 << IBV_WR_RDMA_WRITE_WITH_IMM &&
	      IBV_QP_EX_WITH_SEND == 1 << IBV_WR_SEND &&
	      IBV_QP_EX_WITH_SEND_WITH_IMM == 1 << IBV_WR_SEND_WITH_IMM &&
	      IBV_QP_EX_WITH_RDMA_READ == 1 << IBV_WR_RDMA_READ &&
	      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP == 1 << IBV_WR_ATOMIC_CMP_AND_SWP &&
	      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD == 1 << IBV_WR_ATOMIC_FETCH_AND_ADD &&
	      IBV_QP_EX_WITH_LOCAL_INV == 1 << IBV_WR_LOCAL_INV && IBV_QP_EX_WITH_BIND_MW == 1 << IBV_WR_BIND_MW &&
	      IBV_QP_EX_WITH_SEND_WITH_INV == 1 << IBV_WR_SEND_WITH_INV,
	      "send_ops_flags bit per opcode");

int urd_wq_map(struct urd_context *ctx, struct urd_wq *wq, uint64_t off,
	       uint32_t n, uint32_t shift, uint32_t min_slot)
{
	if (!n || (n & (n - 1)) || n > (1u << 20) || shift > 20 ||
	    (1u << shift) < min_slot || (1u << shift) < 16)
		return -EPROTO;
	if (!urd_range_ok(ctx, off, URD_RING_HDR_SIZE + ((uint64_t)n << shift),
			  URD_CACHELINE))
		return -EPROTO;
	urd_queue_init(&wq->q, ctx->region + off, n, shift);
	urd_queue_attach_prod(&wq->q);
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static uint32_t send_slot_min(const struct urd_qp_cap *cap)
{
	uint32_t sges = cap->max_send_sge * (uint32_t)sizeof(struct urd_sge);

	return URD_SEND_WQE_HDR + (sges > cap->max_inline_data ? sges : cap->max_inline_data);
}

static uint32_t recv_slot_min(uint32_t max_sge)
{
	return (uint32_t)sizeof(struct urd_recv_wqe) + max_sge * (uint32_t)sizeof(struct urd_sge);
}

static void fill_ud(struct urd_send_wqe *w, const struct urd_ahobj *ah,
		    uint32_t remote_qpn, uint32_t remote_qkey)
{
	w->remote_qpn = remote_qpn & 0xffffff;
	w->remote_qkey = remote_qkey;
	memcpy(w->dgid, ah->av.dgid, sizeof(w->dgid));
	w->flow_label = ah->av.flow_label;
	w->dlid = ah->av.dlid;
	w->is_global = ah->av.is_global;
	w->sl = ah->av.sl;
	w->hop_limit = ah->av.hop_limit;
	w->traffic_class = ah->av.traffic_class;
	w->sgid_index = ah->av.sgid_index;
	w->port_num = ah->av.port_num;
}

static uint8_t wqe_flags(const struct urd_qp *qp, unsigned int send_flags)
{
	uint8_t f = 0;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sig_all)
		f |= URD_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		f |= URD_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		f |= URD_WQE_FENCE;
	return f;
}

/* ------------------------------------------------------------ post_send */

/* Error returns of the data path say why with UNIRDMA_DEBUG set. */
static int post_err(const struct urd_qp *qp, int err, const char *why)
{
	if (urd_debug_enabled)
		urd_dbg("QP %#x: post refused: %s", qp->qpx.qp_base.qp_num, why);
	return err;
}

void urd_gather_inline(uint8_t *dst, const struct ibv_send_wr *wr)
{
	for (int i = 0; i < wr->num_sge; i++) {
		if (!wr->sg_list[i].length)
			continue;
		memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		dst += wr->sg_list[i].length;
	}
}

/* A BIND_MW's window and MR belong to the QP's context (both post paths). */
static bool bind_ok(const struct ibv_qp *ibqp, const struct ibv_mw *mw, const struct ibv_mw_bind_info *b)
{
	return mw && mw->context == ibqp->context && (!b->mr || b->mr->context == ibqp->context);
}

/* A BIND_MW's fields of the WQE (abi.h): the window by its current R_Key,
 * its new R_Key, the MR, the range and the window's access. */
static void bind_fill(struct urd_send_wqe *w, const struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *b)
{
	w->rkey = rkey;
	w->bind_mw_rkey = mw->rkey;
	w->bind_mr_lkey = b->mr ? b->mr->lkey : 0;
	w->remote_addr = b->addr;
	w->compare_add = b->length;
	w->bind_access = b->mw_access_flags;
}

/* Check wr's opcode and SGE count for this QP and build its WQE header in
 * *w; *inl says whether the payload travels inline.  0, or EINVAL with *why.
 * The one place that turns an ibv_send_wr into a WQE header: the mapped data
 * path (build_send) and the forwarding baseline (lib/fwd.c) both use it. */
int urd_send_wqe_header(const struct urd_qp *qp, const struct ibv_send_wr *wr,
			struct urd_send_wqe *w, bool *inl, const char **why)
{
	const struct ibv_qp *ibqp = &qp->qpx.qp_base;
	uint32_t op = (uint32_t)wr->opcode;
	const struct urd_opcode_info *info = urd_opcode(op, ibqp->qp_type);

	if (!info) {
		*why = "opcode not allowed";
		return EINVAL;
	}
	*inl = (wr->send_flags & IBV_SEND_INLINE) && (info->flags & URD_OPF_INLINE);
	if (urd_wr_nsge(wr) < 0 || (!*inl && (uint32_t)urd_wr_nsge(wr) > qp->sq.max_sge)) {
		*why = "too many SGEs";
		return EINVAL;
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)op;
	w->flags = wqe_flags(qp, wr->send_flags);
	if (info->flags & URD_OPF_IMM)
		w->imm_data = wr->imm_data;
	if (op == URD_WR_LOCAL_INV || (info->flags & URD_OPF_INV))
		w->invalidate_rkey = wr->invalidate_rkey;
	if (op == URD_WR_BIND_MW) {
		if (!bind_ok(ibqp, wr->bind_mw.mw, &wr->bind_mw.bind_info)) {
			*why = "bad memory window or MR";
			return EINVAL;
		}
		bind_fill(w, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
	}
	if (info->flags & (URD_OPF_WRITE | URD_OPF_READ)) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (info->flags & URD_OPF_ATOMIC) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	}
	if (ibqp->qp_type == IBV_QPT_UD) {
		struct ibv_ah *ah = wr->wr.ud.ah;

		if (!ah || ah->context != ibqp->context) {
			*why = "bad address handle";
			return EINVAL;
		}
		fill_ud(w, to_uah(ah), wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
	}
	return 0;
}

/* Build one WQE at sq.q.own (our prod) and advance our producer index (not yet
 * published).  0 or a positive errno (man ibv_post_send). */
static int build_send(struct urd_qp *qp, const struct ibv_send_wr *wr)
{
	struct urd_send_wqe w;
	const char *why = NULL;
	uint8_t *slot;
	bool inl;
	int ret;

	if (!urd_wq_room(&qp->sq))
		return post_err(qp, ENOMEM, "send queue full");
	ret = urd_send_wqe_header(qp, wr, &w, &inl, &why);
	if (ret)
		return post_err(qp, ret, why);
	slot = urd_queue_slot(&qp->sq.q, qp->sq.q.own);

	if (inl) {
		uint8_t *dst = slot + URD_SEND_WQE_HDR;
		uint64_t total = 0;

		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->max_inline)
			return post_err(qp, EINVAL, "inline data too long");
		urd_gather_inline(dst, wr);
		w.flags |= URD_WQE_INLINE;
		w.inline_len = (uint32_t)total;
	} else if (urd_wr_nsge(wr)) {
		memcpy(slot + URD_SEND_WQE_HDR, wr->sg_list,
		       (size_t)wr->num_sge * sizeof(struct urd_sge));
		w.num_sge = (uint16_t)wr->num_sge;
	}
	memcpy(slot, &w, sizeof(w));
	qp->sq.q.own++;
	return 0;
}

/* Publish what was built since start: one release store, one doorbell.
 * While the engine runs this send queue (ring polling flag, abi.h) it reads
 * prod again by itself: the doorbell's two atomics on lines the engine
 * clears would only slow both sides (urd_queue_needs_doorbell()). */
static void publish(struct urd_qp *qp, struct urd_wq *wq, uint32_t start)
{
	if (wq->q.own == start)
		return;
	/* the WQEs are visible to the engine first */
	urd_queue_publish_prod(&wq->q, wq->q.own);
	if (wq == &qp->sq && !urd_queue_needs_doorbell(&wq->q))
		return;
	urd_ring_doorbell(to_uctx(qp->qpx.qp_base.context), qp->db_index);
}

/* man ibv_post_send: the WRs before *bad_wr were posted. */
int urd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct urd_qp *qp = to_uqp(ibqp);
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&qp->sq.lock);
	/* Sends are refused before RTS-ish states; in ERR they are accepted
	 * and the engine flushes them (IBV_WC_WR_FLUSH_ERR). */
	if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT) {
		*bad_wr = wr;
		ret = post_err(qp, EINVAL, "QP not ready to send");
		goto out;
	}
	start = qp->sq.q.own;
	for (; wr; wr = wr->next) {
		ret = build_send(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	publish(qp, &qp->sq, start);
out:
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

/* ------------------------------------------------------------ post_recv */

/* Shared by QP receive queues and SRQs; the caller holds wq->lock and
 * publishes. */
int urd_post_recv_wq(struct urd_wq *wq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct urd_recv_wqe h = { .wr_id = wr->wr_id };
		uint8_t *slot;

		if (!urd_wq_room(wq)) {
			*bad_wr = wr;
			urd_dbg("post receive refused: receive queue full");
			return ENOMEM;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			*bad_wr = wr;
			urd_dbg("post receive refused: too many SGEs");
			return EINVAL;
		}
		slot = urd_queue_slot(&wq->q, wq->q.own);
		h.num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(slot + sizeof(h), wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct urd_sge));
		memcpy(slot, &h, sizeof(h));
		wq->q.own++;
	}
	return 0;
}

int urd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct urd_qp *qp = to_uqp(ibqp);
	uint32_t start;
	int ret;

	/* A QP attached to an SRQ has no receive queue of its own. */
	if (ibqp->srq || !qp->rq.q.n) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq.lock);
	if (ibqp->state == IBV_QPS_RESET) {     /* IB spec 10.8.2 */
		*bad_wr = wr;
		ret = EINVAL;
		goto out;
	}
	start = qp->rq.q.own;
	ret = urd_post_recv_wq(&qp->rq, wr, bad_wr);
	/* The engine may be waiting for a receive (RNR): same doorbell. */
	publish(qp, &qp->rq, start);
out:
	pthread_spin_unlock(&qp->rq.lock);
	return ret;
}

/* ---------------------------------------------------------- ibv_wr_* API */

static inline struct urd_qp *qpx_to_uqp(struct ibv_qp_ex *qpx)
{
	return (struct urd_qp *)qpx;
}

static void wr_fail(struct urd_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	enum ibv_qp_state st = qpx->qp_base.state;

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start_prod = qp->sq.q.own;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
	if (st == IBV_QPS_RESET || st == IBV_QPS_INIT)
		qp->wr_err = EINVAL;
}

/* Open a new WQE for opcode op with qpx->wr_id and qpx->wr_flags. */
static struct urd_send_wqe *wr_new(struct ibv_qp_ex *qpx, uint32_t op)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	struct urd_send_wqe *w;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (!(qp->send_ops & (1ull << op))) {
		wr_fail(qp, EOPNOTSUPP);
		return NULL;
	}
	if (!urd_wq_room(&qp->sq)) {
		wr_fail(qp, ENOMEM);
		return NULL;
	}
	w = urd_queue_slot(&qp->sq.q, qp->sq.q.own);
	memset(w, 0, sizeof(*w));
	w->wr_id = qpx->wr_id;
	w->opcode = (uint8_t)op;
	w->flags = wqe_flags(qp, qpx->wr_flags);
	qp->sq.q.own++;
	qp->wr_cur = w;
	return w;
}

static struct urd_send_wqe *wr_cur(struct ibv_qp_ex *qpx)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);

	if (!qp->wr_cur)
		wr_fail(qp, EINVAL);    /* a setter without an opcode first */
	return qp->wr_cur;
}

static void wr_rdma(struct ibv_qp_ex *qpx, uint32_t op, uint32_t rkey,
		    uint64_t addr, __be32 imm)
{
	struct urd_send_wqe *w = wr_new(qpx, op);

	if (!w)
		return;
	w->rkey = rkey;
	w->remote_addr = addr;
	w->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qpx, URD_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, __be32 imm)
{
	wr_rdma(qpx, URD_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qpx, URD_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_new(qpx, URD_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct urd_send_wqe *w = wr_new(qpx, URD_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, uint64_t compare, uint64_t swap)
{
	struct urd_send_wqe *w = wr_new(qpx, URD_WR_ATOMIC_CMP_AND_SWP);

	if (!w)
		return;
	w->rkey = rkey;
	w->remote_addr = addr;
	w->compare_add = compare;
	w->swap = swap;
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t addr, uint64_t add)
{
	struct urd_send_wqe *w = wr_new(qpx, URD_WR_ATOMIC_FETCH_AND_ADD);

	if (!w)
		return;
	w->rkey = rkey;
	w->remote_addr = addr;
	w->compare_add = add;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	struct urd_send_wqe *w = wr_cur(qpx);

	if (!w)
		return;
	if (num_sge > qp->sq.max_sge) {
		wr_fail(qp, EINVAL);
		return;
	}
	if (num_sge)
		memcpy((uint8_t *)w + URD_SEND_WQE_HDR, sg_list,
		       num_sge * sizeof(struct urd_sge));
	w->num_sge = (uint16_t)num_sge;
	w->inline_len = 0;
	w->flags &= (uint8_t)~URD_WQE_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	struct urd_send_wqe *w = wr_cur(qpx);
	const struct urd_opcode_info *info;
	uint64_t total = 0;
	uint8_t *dst;

	if (!w)
		return;
	info = urd_opcode(w->opcode, qpx->qp_base.qp_type);
	if (!info || !(info->flags & URD_OPF_INLINE)) {
		wr_fail(qp, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_buf; i++)
		total += buf_list[i].length;
	if (total > qp->max_inline) {
		wr_fail(qp, EINVAL);
		return;
	}
	dst = (uint8_t *)w + URD_SEND_WQE_HDR;
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length)         /* addr may be NULL then */
			memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	w->num_sge = 0;
	w->inline_len = (uint32_t)total;
	w->flags |= URD_WQE_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &b);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	struct urd_send_wqe *w = wr_cur(qpx);

	if (!w)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_UD || !ah ||
	    ah->context != qpx->qp_base.context) {
		wr_fail(qp, EINVAL);
		return;
	}
	fill_ud(w, to_uah(ah), remote_qpn, remote_qkey);
}

/* The memory window operations (engine/mw.c executes them in order). */
static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct urd_send_wqe *w;

	if (!info || !bind_ok(&qpx->qp_base, mw, info)) {
		wr_fail(qpx_to_uqp(qpx), EINVAL);
		return;
	}
	w = wr_new(qpx, URD_WR_BIND_MW);
	if (w)
		bind_fill(w, mw, rkey, info);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct urd_send_wqe *w = wr_new(qpx, URD_WR_LOCAL_INV);

	if (w)
		w->invalidate_rkey = rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct urd_send_wqe *w = wr_new(qpx, URD_WR_SEND_WITH_INV);

	if (w)
		w->invalidate_rkey = rkey;
}

/* Work requests a vRNIC does not offer: the batch fails at wr_complete. */
static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr URD_UNUSED, uint16_t hdr_sz URD_UNUSED,
			uint16_t mss URD_UNUSED)
{
	wr_fail(qpx_to_uqp(qpx), EOPNOTSUPP);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn URD_UNUSED)
{
	wr_fail(qpx_to_uqp(qpx), EOPNOTSUPP);
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey URD_UNUSED,
			    uint64_t addr URD_UNUSED, const void *data URD_UNUSED)
{
	wr_fail(qpx_to_uqp(qpx), EOPNOTSUPP);
}

/* man ibv_wr_post: 0, or an errno and nothing of the batch is posted. */
static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);
	int ret = qp->wr_err;

	if (ret)
		qp->sq.q.own = qp->wr_start_prod;
	else
		publish(qp, &qp->sq, qp->wr_start_prod);
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct urd_qp *qp = qpx_to_uqp(qpx);

	qp->sq.q.own = qp->wr_start_prod;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

static void init_qpx(struct ibv_qp_ex *x)
{
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
}

/* Every QP answers ibv_qp_to_qp_ex, with all wr_* valid. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &to_uqp(qp)->qpx;
}

/* ------------------------------------------------------- create/destroy */

static int create_qp(struct urd_context *ctx, struct ibv_qp_init_attr_ex *a,
		     struct urd_qp **out)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			       IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_context *c = &ctx->vctx.context;
	struct urd_create_qp_req req = { 0 };
	struct urd_create_qp_resp resp;
	uint64_t type_ops, ops;
	struct urd_qp *qp;
	struct ibv_qp *q;
	int ret;

	if (urd_ctx_dead(ctx))
		return -EIO;
	if (a->comp_mask & ~known)
		return -EINVAL;
	if (a->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
		return -EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return -EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != c)
		return -EINVAL;
	if (!a->send_cq || !a->recv_cq || a->send_cq->context != c ||
	    a->recv_cq->context != c || (a->srq && a->srq->context != c))
		return -EINVAL;
	type_ops = urd_opcodes_valid(a->qp_type);
	ops = type_ops;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		if (a->send_ops_flags & ~type_ops)
			return -EOPNOTSUPP;
		ops = a->send_ops_flags;
	}

	qp = urd_calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;

	req.pd = a->pd->handle;
	req.send_cq = a->send_cq->handle;
	req.recv_cq = a->recv_cq->handle;
	req.srq = a->srq ? a->srq->handle : 0;
	req.qp_type = a->qp_type;
	req.sq_sig_all = a->sq_sig_all ? 1 : 0;
	req.cap.max_send_wr = a->cap.max_send_wr;
	req.cap.max_recv_wr = a->srq ? 0 : a->cap.max_recv_wr;
	req.cap.max_send_sge = a->cap.max_send_sge;
	req.cap.max_recv_sge = a->srq ? 0 : a->cap.max_recv_sge;
	req.cap.max_inline_data = a->cap.max_inline_data;
	ret = urd_ctrl(ctx, URD_OP_CREATE_QP, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret)
		goto err_free;

	ret = -EPROTO;
	if (resp.db_index >= URD_MAX_QP_SLOTS ||
	    resp.cap.max_send_sge > URD_MAX_SGE ||
	    resp.cap.max_recv_sge > URD_MAX_SGE ||
	    resp.cap.max_inline_data > URD_MAX_INLINE ||
	    urd_wq_map(ctx, &qp->sq, resp.sq_off, resp.sq_n, resp.sq_wqe_shift,
		       send_slot_min(&resp.cap)))
		goto err_destroy;
	if (!a->srq && urd_wq_map(ctx, &qp->rq, resp.rq_off, resp.rq_n,
				  resp.rq_wqe_shift,
				  recv_slot_min(resp.cap.max_recv_sge)))
		goto err_destroy;
	qp->sq.max_wr = resp.cap.max_send_wr;
	qp->sq.max_sge = resp.cap.max_send_sge;
	qp->rq.max_wr = resp.cap.max_recv_wr;
	qp->rq.max_sge = resp.cap.max_recv_sge;
	qp->max_inline = resp.cap.max_inline_data;
	qp->db_index = resp.db_index;
	qp->send_ops = ops;
	qp->sig_all = a->sq_sig_all != 0;

	/* man ibv_create_qp: the granted capabilities go back to the caller. */
	a->cap.max_send_wr = resp.cap.max_send_wr;
	a->cap.max_send_sge = resp.cap.max_send_sge;
	a->cap.max_inline_data = resp.cap.max_inline_data;
	if (!a->srq) {
		a->cap.max_recv_wr = resp.cap.max_recv_wr;
		a->cap.max_recv_sge = resp.cap.max_recv_sge;
	}

	q = &qp->qpx.qp_base;
	q->context = c;
	q->qp_context = a->qp_context;
	q->pd = a->pd;
	q->send_cq = a->send_cq;
	q->recv_cq = a->recv_cq;
	q->srq = a->srq;
	q->handle = resp.handle;
	q->qp_num = resp.qpn;
	q->state = IBV_QPS_RESET;
	q->qp_type = a->qp_type;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->events_completed = 0;
	init_qpx(&qp->qpx);

	urd_obj_add(ctx, &qp->node, URD_OBJ_QP, resp.handle);
	*out = qp;
	return 0;

err_destroy:
	urd_dbg("CREATE_QP: unusable answer (sq %llu/%u/%u rq %llu/%u/%u)",
		(unsigned long long)resp.sq_off, resp.sq_n, resp.sq_wqe_shift,
		(unsigned long long)resp.rq_off, resp.rq_n, resp.rq_wqe_shift);
	urd_ctrl_handle(ctx, URD_OP_DESTROY_QP, resp.handle);
err_free:
	urd_free(qp);
	return ret;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ax;
	struct urd_qp *qp;
	int ret;

	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));       /* ibv_qp_init_attr is a prefix */
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	ret = create_qp(to_uctx(pd->context), &ax, &qp);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	attr->cap = ax.cap;
	return &qp->qpx.qp_base;
}

struct ibv_qp *urd_create_qp_ex(struct ibv_context *c,
				struct ibv_qp_init_attr_ex *attr)
{
	struct urd_qp *qp;
	int ret;

	ret = create_qp(to_uctx(c), attr, &qp);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &qp->qpx.qp_base;
}

/* Work posted before a destroy leaves first, as on an RNIC, where a send is
 * on the wire microseconds after its doorbell: programs post unsignaled UD
 * sends and destroy the QP at once (mckey's sender sends 4 datagrams and
 * exits; our engine had taken 1 of them when the destroy came).  Wait,
 * yielding, until the engine has taken every posted WQE of a QP that can
 * send; bounded (20 ms), since a QP waiting on an RNR or a silent peer may
 * not take them. */
#define SQ_SETTLE_NS (20ull * 1000 * 1000)

static void sq_settle(struct urd_qp *qp)
{
	enum ibv_qp_state st = qp->qpx.qp_base.state;
	uint64_t start;

	if (!qp->sq.q.n || !qp->sq.q.hdr || (st != IBV_QPS_RTS && st != IBV_QPS_SQD))
		return;
	start = urd_now_ns();
	while (urd_load_acquire(&qp->sq.q.hdr->cons) != qp->sq.q.own && urd_now_ns() - start < SQ_SETTLE_NS)
		sched_yield();
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct urd_context *ctx = to_uctx(ibqp->context);
	struct urd_qp *qp = to_uqp(ibqp);
	int ret;

	if (!urd_ctx_dead(ctx))
		sq_settle(qp);
	ret = urd_ctrl_handle(ctx, URD_OP_DESTROY_QP, ibqp->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;
	urd_qp_events_drain(ctx, qp);
	pthread_spin_destroy(&qp->sq.lock);
	if (qp->rq.q.n)
		pthread_spin_destroy(&qp->rq.lock);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	urd_free(qp);
	return 0;
}

/* --------------------------------------------------------- modify/query */

static void attr_to_urd(const struct ibv_qp_attr *in, struct urd_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_state = in->qp_state;
	o->cur_qp_state = in->cur_qp_state;
	o->path_mtu = in->path_mtu;
	o->path_mig_state = in->path_mig_state;
	o->qkey = in->qkey;
	o->rq_psn = in->rq_psn;
	o->sq_psn = in->sq_psn;
	o->dest_qp_num = in->dest_qp_num;
	o->qp_access_flags = in->qp_access_flags;
	o->pkey_index = in->pkey_index;
	o->en_sqd_async_notify = in->en_sqd_async_notify;
	o->sq_draining = in->sq_draining;
	o->max_rd_atomic = in->max_rd_atomic;
	o->max_dest_rd_atomic = in->max_dest_rd_atomic;
	o->min_rnr_timer = in->min_rnr_timer;
	o->port_num = in->port_num;
	o->timeout = in->timeout;
	o->retry_cnt = in->retry_cnt;
	o->rnr_retry = in->rnr_retry;
	o->cap.max_send_wr = in->cap.max_send_wr;
	o->cap.max_recv_wr = in->cap.max_recv_wr;
	o->cap.max_send_sge = in->cap.max_send_sge;
	o->cap.max_recv_sge = in->cap.max_recv_sge;
	o->cap.max_inline_data = in->cap.max_inline_data;
	urd_ah_to_urd(&in->ah_attr, &o->ah);
}

static void attr_from_urd(const struct urd_qp_attr *in, struct ibv_qp_attr *o)
{
	o->qp_state = (enum ibv_qp_state)in->qp_state;
	o->cur_qp_state = (enum ibv_qp_state)in->cur_qp_state;
	o->path_mtu = (enum ibv_mtu)in->path_mtu;
	o->path_mig_state = (enum ibv_mig_state)in->path_mig_state;
	o->qkey = in->qkey;
	o->rq_psn = in->rq_psn;
	o->sq_psn = in->sq_psn;
	o->dest_qp_num = in->dest_qp_num;
	o->qp_access_flags = in->qp_access_flags;
	o->pkey_index = in->pkey_index;
	o->en_sqd_async_notify = in->en_sqd_async_notify;
	o->sq_draining = in->sq_draining;
	o->max_rd_atomic = in->max_rd_atomic;
	o->max_dest_rd_atomic = in->max_dest_rd_atomic;
	o->min_rnr_timer = in->min_rnr_timer;
	o->port_num = in->port_num;
	o->timeout = in->timeout;
	o->retry_cnt = in->retry_cnt;
	o->rnr_retry = in->rnr_retry;
	urd_ah_from_urd(&in->ah, &o->ah_attr);
}

/* After a move to RESET the daemon may have rewound the rings; follow it. */
static void resync_rings(struct urd_qp *qp)
{
	pthread_spin_lock(&qp->sq.lock);
	urd_queue_attach_prod(&qp->sq.q);
	pthread_spin_unlock(&qp->sq.lock);
	if (qp->rq.q.n) {
		pthread_spin_lock(&qp->rq.lock);
		urd_queue_attach_prod(&qp->rq.q);
		pthread_spin_unlock(&qp->rq.lock);
	}
}

/* man ibv_modify_qp: 0 or an errno; the daemon checks the state machine
 * (IB spec 10.3.1 and table 91 of required/optional attributes). */
int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct urd_context *ctx = to_uctx(ibqp->context);
	struct urd_modify_qp_req req;
	unsigned int mask = (unsigned int)attr_mask;
	int ret;

	if (mask & IBV_QP_RATE_LIMIT)
		return EOPNOTSUPP;
	/* No alternate path (no APM in device_cap_flags), and nothing above
	 * IBV_QP_DEST_QPN exists for applications. */
	if (mask & ~((IBV_QP_DEST_QPN << 1) - 1u) || (mask & IBV_QP_ALT_PATH))
		return EINVAL;
	memset(&req, 0, sizeof(req));
	req.handle = ibqp->handle;
	req.attr_mask = mask;
	attr_to_urd(attr, &req.attr);
	ret = urd_ctrl(ctx, URD_OP_MODIFY_QP, &req, sizeof(req), NULL, 0, 0);
	if (ret)
		return -ret;
	if (mask & IBV_QP_STATE) {
		ibqp->state = attr->qp_state;
		if (attr->qp_state == IBV_QPS_RESET)
			resync_rings(to_uqp(ibqp));
	}
	return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct urd_context *ctx = to_uctx(ibqp->context);
	struct urd_qp *qp = to_uqp(ibqp);
	struct urd_query_qp_resp resp;
	struct urd_handle_req req = { .handle = ibqp->handle };
	int ret;

	ret = urd_ctrl(ctx, URD_OP_QUERY_QP, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret)
		return -ret;
	memset(attr, 0, sizeof(*attr));
	attr_from_urd(&resp.attr, attr);
	/* The capabilities are what create_qp granted us. */
	attr->cap.max_send_wr = qp->sq.max_wr;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_wr = qp->rq.max_wr;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = qp->sig_all;
	}
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}

/* ---------------------------------------------------------- multicast */

/* man ibv_attach_mcast: 0 or an errno.  As the kernel's ib_attach_mcast: a
 * UD QP and a multicast GID, else EINVAL; a RoCE port ignores the LID.  The
 * daemon delivers a UD SEND to (gid, QPN 0xffffff) to every QP of the tenant
 * in the group, on every host. */
static int mcast_op(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t op)
{
	struct urd_context *ctx;
	struct urd_mcast_req req;

	if (!qp || !gid || qp->qp_type != IBV_QPT_UD || !urd_gid_is_mcast(gid->raw))
		return EINVAL;
	ctx = to_uctx(qp->context);
	memset(&req, 0, sizeof(req));
	req.handle = qp->handle;
	memcpy(req.gid, gid->raw, 16);
	return -urd_ctrl(ctx, op, &req, sizeof(req), NULL, 0, 0);
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid URD_UNUSED)
{
	return mcast_op(qp, gid, URD_OP_ATTACH_MCAST);
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid URD_UNUSED)
{
	return mcast_op(qp, gid, URD_OP_DETACH_MCAST);
}

/* ---- QP1: our librdmacm's CM agents (include/unirdma/cm.h) ---------------- */

int urd_cm_agent(struct ibv_qp *qp)
{
	struct urd_cm_req req = { .qp = qp->handle };
	struct urd_handle_resp resp;
	int ret;

	ret = urd_ctrl(to_uctx(qp->context), URD_OP_CM_AGENT, &req, sizeof(req), &resp, sizeof(resp), sizeof(resp));
	return ret ? ret : (int)resp.handle;
}

int urd_cm_listen(struct ibv_qp *qp, uint64_t service_id, int on)
{
	struct urd_cm_req req = { .qp = qp->handle, .on = on ? 1 : 0, .service_id = service_id };
	struct urd_msg_hdr resp;

	return urd_ctrl(to_uctx(qp->context), URD_OP_CM_LISTEN, &req, sizeof(req), &resp, sizeof(resp), sizeof(resp));
}

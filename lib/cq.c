/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cq.c - completion queues: create/destroy, poll_cq, req_notify_cq and the
 * extended (ibv_cq_ex) polling interface.
 *
 * Notes on the CQ ring (abi.h, unirdma/ring.h): we are its consumer.
 *  - the engine writes CQEs and publishes prod with a release store;
 *    poll_cq load-acquires prod, copies the CQEs out, and publishes cons
 *    with a release store so the engine may reuse the slots;
 *  - the header's arm word is ours: req_notify_cq stores the arm request,
 *    the engine takes it (exchange with 0) when a matching CQE arrives and
 *    bumps the header's events, which the event thread turns into a channel
 *    event;
 *  - prod is engine-written: every slot index is masked, and a prod more
 *    than a ring ahead of us is clamped (urd_queue_filled()), so a scribbled
 *    value never makes us read outside the ring.
 * No syscall here, except sched_yield() on every 64th empty poll: a busy
 * poller must leave the CPU to the engine when cores are scarce.  The ring
 * is looked at again after the yield, so an empty answer is never older
 * than the yield: the yield may last milliseconds, and an application reads
 * its CQ, then its other event sources, trusting that what it found empty
 * was empty a moment ago.  (libfabric's ofi_rxm polls the CQ, then the
 * rdma_cm channel; a peer's last message and its DISCONNECTED that both
 * arrived during a stale "empty" made it close the connection with the
 * receive unread, and its flush crashed reposting the buffer.)
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

enum { YIELD_EVERY = 64, CQE_SHIFT = 6 };
static_assert(sizeof(struct urd_cqe) == 1u << CQE_SHIFT, "a CQ slot is one CQE");

static inline void cqe_to_wc(const struct urd_cqe *src, struct ibv_wc *wc)
{
	struct urd_cqe e;

	memcpy(&e, src, sizeof(e));
	wc->wr_id = e.wr_id;
	wc->status = (enum ibv_wc_status)e.status;
	wc->opcode = (enum ibv_wc_opcode)e.opcode;
	wc->vendor_err = e.vendor_err;
	wc->byte_len = e.byte_len;
	wc->imm_data = e.imm_data;
	wc->qp_num = e.qp_num;
	wc->src_qp = e.src_qp;
	wc->wc_flags = e.wc_flags;
	wc->pkey_index = e.pkey_index;
	wc->slid = e.slid;
	wc->sl = e.sl;
	wc->dlid_path_bits = e.dlid_path_bits;
}

/* An empty poll: true if it yielded, and the caller looks at the ring again. */
static inline bool empty_poll(struct urd_cq *cq)
{
	if ((++cq->empty_polls % YIELD_EVERY) == 0) {
		sched_yield();
		return true;
	}
	return false;
}

static uint32_t poll_ring(struct urd_cq *cq, uint32_t ne, struct ibv_wc *wc)
{
	uint32_t avail, n;

	pthread_spin_lock(&cq->lock);
	avail = urd_queue_filled(&cq->q);
	n = avail < ne ? avail : ne;
	for (uint32_t i = 0; i < n; i++)
		cqe_to_wc(urd_queue_slot_fixed(&cq->q, cq->q.own + i, CQE_SHIFT), &wc[i]);
	if (n) {
		cq->q.own += n;
		cq->empty_polls = 0;
		/* The engine may reuse the slots we copied. */
		urd_queue_release_cons(&cq->q, cq->q.own);
	}
	pthread_spin_unlock(&cq->lock);
	return n;
}

int urd_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct urd_cq *cq = to_ucq(ibcq);
	uint32_t n;

	if (ne <= 0)
		return 0;
	n = poll_ring(cq, (uint32_t)ne, wc);
	if (!n && empty_poll(cq))
		n = poll_ring(cq, (uint32_t)ne, wc);
	return (int)n;
}

/* IB spec 11.4.2.2: a CQ armed for any completion stays so when asked for
 * solicited ones only.
 *
 * Applications arm, then poll once more to catch a CQE that raced with the
 * arm.  That is a Dekker handshake with the engine, which stores prod and
 * then reads arm: the full fence after our store keeps the application's
 * next load of prod from passing it, so either the engine sees the arm or
 * the application sees the CQE (the engine needs the same fence between its
 * store of prod and its load of arm). */
int urd_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct urd_cq *cq = to_ucq(ibcq);
	uint32_t want = solicited_only ? URD_CQ_ARM_SOLICITED : URD_CQ_ARM_ANY;

	if (want == URD_CQ_ARM_SOLICITED &&
	    urd_load_relaxed(&cq->q.hdr->arm) == URD_CQ_ARM_ANY) {
		urd_smp_mb();
		return 0;
	}
	urd_store_release(&cq->q.hdr->arm, want);
	urd_smp_mb();
	return 0;
}

/* ---------------------------------------------------- extended polling */

static inline struct urd_cq *ex_to_ucq(struct ibv_cq_ex *ex)
{
	return (struct urd_cq *)ex;
}

/* Take the CQE at cons; the caller checked that there is one. */
static inline void ex_take(struct urd_cq *cq)
{
	memcpy(&cq->cur_copy, urd_queue_slot_fixed(&cq->q, cq->q.own, CQE_SHIFT), sizeof(cq->cur_copy));
	cq->q.own++;
	cq->ex.wr_id = cq->cur_copy.wr_id;
	cq->ex.status = (enum ibv_wc_status)cq->cur_copy.status;
}

/* man ibv_create_cq_ex: ENOENT when empty, and then end_poll is not called,
 * so the lock is dropped here. */
static int ex_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct urd_cq *cq = ex_to_ucq(ex);

	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (!urd_queue_filled(&cq->q)) {
		pthread_spin_unlock(&cq->lock);
		if (!empty_poll(cq))
			return ENOENT;
		pthread_spin_lock(&cq->lock);
		if (!urd_queue_filled(&cq->q)) {
			pthread_spin_unlock(&cq->lock);
			return ENOENT;
		}
	}
	cq->empty_polls = 0;
	ex_take(cq);
	return 0;
}

/* ENOENT when empty; end_poll is still called after it. */
static int ex_next_poll(struct ibv_cq_ex *ex)
{
	struct urd_cq *cq = ex_to_ucq(ex);

	if (!urd_queue_filled(&cq->q))
		return ENOENT;
	ex_take(cq);
	return 0;
}

static void ex_end_poll(struct ibv_cq_ex *ex)
{
	struct urd_cq *cq = ex_to_ucq(ex);

	urd_queue_release_cons(&cq->q, cq->q.own);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *ex)
{
	return (enum ibv_wc_opcode)ex_to_ucq(ex)->cur_copy.opcode;
}

static uint32_t ex_read_vendor_err(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.vendor_err;
}

static uint32_t ex_read_byte_len(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.byte_len;
}

static __be32 ex_read_imm_data(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.imm_data;
}

static uint32_t ex_read_qp_num(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.qp_num;
}

static uint32_t ex_read_src_qp(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.src_qp;
}

static unsigned int ex_read_wc_flags(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.wc_flags;
}

static uint32_t ex_read_slid(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.slid;
}

static uint8_t ex_read_sl(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.sl;
}

static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return ex_to_ucq(ex)->cur_copy.dlid_path_bits;
}

/* The readers of fields we never offer (create_cq_ex refuses those flags)
 * still point somewhere harmless. */
static uint64_t ex_read_zero64(struct ibv_cq_ex *ex URD_UNUSED)
{
	return 0;
}

static uint16_t ex_read_cvlan(struct ibv_cq_ex *ex URD_UNUSED)
{
	return 0;
}

static uint32_t ex_read_flow_tag(struct ibv_cq_ex *ex URD_UNUSED)
{
	return 0;
}

static void ex_read_tm_info(struct ibv_cq_ex *ex URD_UNUSED, struct ibv_wc_tm_info *tm)
{
	memset(tm, 0, sizeof(*tm));
}

/* ------------------------------------------------------ create/destroy */

enum { MAX_CQ_RING = 1u << 22 };

/* The daemon's ring for a CQ of at least cqe entries (CREATE_CQ, RESIZE_CQ):
 * a power of two, not absurdly large, inside the region. */
static bool cq_ring_ok(const struct urd_context *ctx, const struct urd_create_cq_resp *resp,
		       uint32_t cqe, const char *op)
{
	if (resp->nentries && !(resp->nentries & (resp->nentries - 1)) && resp->nentries <= MAX_CQ_RING &&
	    resp->nentries >= cqe &&
	    urd_range_ok(ctx, resp->ring_off,
			 URD_RING_HDR_SIZE + (uint64_t)resp->nentries * sizeof(struct urd_cqe), URD_CACHELINE))
		return true;
	urd_dbg("%s: bad ring (off %llu, %u entries)", op, (unsigned long long)resp->ring_off, resp->nentries);
	return false;
}

static int create_cq(struct urd_context *ctx, int cqe, void *cq_context,
		     struct ibv_comp_channel *channel, uint32_t comp_vector,
		     uint64_t wc_flags, struct urd_cq **out)
{
	struct urd_create_cq_req req = { 0 };
	struct urd_create_cq_resp resp;
	struct urd_cq *cq;
	struct ibv_cq_ex *ex;
	int ret;

	if (urd_ctx_dead(ctx))
		return -EIO;
	if (cqe < 1 || comp_vector >= (uint32_t)ctx->vctx.context.num_comp_vectors)
		return -EINVAL;
	if (channel && channel->context != &ctx->vctx.context)
		return -EINVAL;

	cq = urd_calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	req.cqe = (uint32_t)cqe;
	req.comp_vector = comp_vector;
	ret = urd_ctrl(ctx, URD_OP_CREATE_CQ, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret)
		goto err_free;
	if (!cq_ring_ok(ctx, &resp, (uint32_t)cqe, "CREATE_CQ")) {
		urd_ctrl_handle(ctx, URD_OP_DESTROY_CQ, resp.handle);
		ret = -EPROTO;
		goto err_free;
	}

	urd_queue_init(&cq->q, ctx->region + resp.ring_off, resp.nentries, CQE_SHIFT);
	urd_queue_attach_cons(&cq->q);
	cq->wc_flags = wc_flags;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);

	ex = &cq->ex;
	ex->context = &ctx->vctx.context;
	ex->channel = channel;
	ex->cq_context = cq_context;
	ex->handle = resp.handle;
	ex->cqe = (int)resp.nentries;
	pthread_mutex_init(&ex->mutex, NULL);
	pthread_cond_init(&ex->cond, NULL);
	ex->comp_events_completed = 0;
	ex->async_events_completed = 0;
	ex->start_poll = ex_start_poll;
	ex->next_poll = ex_next_poll;
	ex->end_poll = ex_end_poll;
	ex->read_opcode = ex_read_opcode;
	ex->read_vendor_err = ex_read_vendor_err;
	ex->read_byte_len = ex_read_byte_len;
	ex->read_imm_data = ex_read_imm_data;
	ex->read_qp_num = ex_read_qp_num;
	ex->read_src_qp = ex_read_src_qp;
	ex->read_wc_flags = ex_read_wc_flags;
	ex->read_slid = ex_read_slid;
	ex->read_sl = ex_read_sl;
	ex->read_dlid_path_bits = ex_read_dlid_path_bits;
	ex->read_completion_ts = ex_read_zero64;
	ex->read_completion_wallclock_ns = ex_read_zero64;
	ex->read_cvlan = ex_read_cvlan;
	ex->read_flow_tag = ex_read_flow_tag;
	ex->read_tm_info = ex_read_tm_info;

	urd_obj_add(ctx, &cq->node, URD_OBJ_CQ, resp.handle);
	if (channel) {
		pthread_mutex_lock(&ctx->vctx.context.mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&ctx->vctx.context.mutex);
		urd_cq_events_attach(ctx, cq);
	}
	*out = cq;
	return 0;

err_free:
	urd_free(cq);
	return ret;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct urd_cq *cq;
	int ret;

	if (comp_vector < 0) {
		errno = EINVAL;
		return NULL;
	}
	ret = create_cq(to_uctx(context), cqe, cq_context, channel,
			(uint32_t)comp_vector, 0, &cq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return ibv_cq_ex_to_cq(&cq->ex);
}

struct ibv_cq_ex *urd_create_cq_ex(struct ibv_context *c,
				   struct ibv_cq_init_attr_ex *attr)
{
	const uint32_t known_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS |
				    IBV_CQ_INIT_ATTR_MASK_PD;
	const uint32_t known_flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				     IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	struct urd_cq *cq;
	int ret;

	if (attr->comp_mask & ~known_mask) {
		errno = EINVAL;
		return NULL;
	}
	/* Timestamps, cvlan, flow tags and tag matching are not offered;
	 * neither are parent domains. */
	if ((attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~known_flags)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	ret = create_cq(to_uctx(c), (int)attr->cqe, attr->cq_context,
			attr->channel, attr->comp_vector, attr->wc_flags, &cq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &cq->ex;
}

/* ibv_resize_cq(3): the daemon moves the CQEs not yet polled, in order, into
 * a new ring of at least cqe entries; EINVAL below their number (as rxe).
 * Polling (cq->lock) and the event thread (ctx->ev_lock, lock order as in
 * event.c) wait while the ring changes under them. */
int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct urd_context *ctx = to_uctx(ibcq->context);
	struct urd_cq *cq = to_ucq(ibcq);
	struct urd_resize_cq_req req = { 0 };
	struct urd_create_cq_resp resp;
	int ret;

	if (cqe < 1 || (uint32_t)cqe > urd_load_relaxed(&ctx->hdr->dev.max_cqe))
		return EINVAL;
	if (urd_ctx_dead(ctx))
		return EIO;
	req.handle = ibcq->handle;
	req.cqe = (uint32_t)cqe;
	pthread_mutex_lock(&ctx->ev_lock);
	pthread_spin_lock(&cq->lock);
	ret = urd_ctrl(ctx, URD_OP_RESIZE_CQ, &req, sizeof(req), &resp, sizeof(resp), sizeof(resp));
	if (!ret && !cq_ring_ok(ctx, &resp, (uint32_t)cqe, "RESIZE_CQ"))
		ret = -EPROTO;
	if (!ret) {
		urd_queue_init(&cq->q, ctx->region + resp.ring_off, resp.nentries, CQE_SHIFT);
		urd_queue_attach_cons(&cq->q);
		cq->ex.cqe = (int)resp.nentries;
		cq->wd_prod = cq->wd_cons = 0;
		/* the daemon carried the events count over: last_events holds */
	}
	pthread_spin_unlock(&cq->lock);
	pthread_mutex_unlock(&ctx->ev_lock);
	return -ret;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct urd_context *ctx = to_uctx(ibcq->context);
	struct urd_cq *cq = to_ucq(ibcq);
	struct ibv_comp_channel *channel = ibcq->channel;
	int ret;

	/* A dead context (daemon gone, or we are a forked child) cleans up
	 * locally so that applications can tear down. */
	ret = urd_ctrl_handle(ctx, URD_OP_DESTROY_CQ, ibcq->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;

	urd_cq_events_drain(ctx, cq);
	if (channel) {
		pthread_mutex_lock(&ctx->vctx.context.mutex);
		channel->refcnt--;
		pthread_mutex_unlock(&ctx->vctx.context.mutex);
	}
	pthread_spin_destroy(&cq->lock);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	urd_free(cq);
	return 0;
}

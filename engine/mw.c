/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Memory windows, as the RNIC executes them (IB spec 10.6.7, rxe_mw.c):
 *
 *   mw_bind        a BIND_MW WQE at the head of a send queue;
 *   mw_invalidate  a LOCAL_INV WQE, or the IETH of a SEND_WITH_INV at its
 *                  responder;
 *   mw_check_remote  an R_Key with URD_MW_KEY_BIT at a responder (mem.c's
 *                  mr_check_remote hands those over).
 *
 * The rules are rxe's, with two additions from the specification that rxe
 * does not check: the MR of a bind must be in the window's PD (C10-72 for
 * type 2; libibverbs checks it for type 1 before posting, a tenant writing
 * WQEs itself does not), and a type 2 window is invalidated only through
 * the QP it is bound to (o10-37.2.43: locally by a LOCAL_INV posted on that
 * QP, remotely by a SEND_WITH_INV that arrives on it).  A window's range is
 * checked at every remote access (rxe checks the MR's range only).
 * Everything runs under the big lock; the control plane unbinds windows
 * when they, their QP or their context go away (core/pool.c mw_unbind).
 */
#include <errno.h>

#include "internal.h"

#define MW_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* C10-73 .. C10-75 and o10-36.2.2, o10-37.2.30, o10-37.2.40 as rxe numbers
 * them.  0 or -EINVAL. */
static int bind_check(const struct vr_qp *qp, const struct vr_mw *mw, const struct vr_mr *mr,
		      const struct urd_send_wqe *w)
{
	uint64_t addr = w->remote_addr, len = w->compare_add;

	if (w->bind_access & ~(uint32_t)MW_ACCESS)
		return -EINVAL;         /* ZERO_BASED and the rest: not supported (rxe) */
	if (mw->type == IBV_MW_TYPE_2) {
		if (mw->mr || qp->pd != mw->pd || !mr || !len)
			return -EINVAL;
	}
	if (!mr)
		return 0;               /* type 1, length 0: unbind */
	if (mr->pd != mw->pd || !(mr->access & IBV_ACCESS_MW_BIND))
		return -EINVAL;
	if ((w->bind_access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
		return -EINVAL;
	return 0;
}

int mw_bind(struct vr_qp *qp, const struct urd_send_wqe *w)
{
	struct urd_vrnic *vr = qp->vr;
	struct vr_mw *mw = mw_by_rkey(vr, w->bind_mw_rkey);
	struct vr_mr *mr = NULL;

	/* the window is named by its current R_Key: a stale one binds nothing */
	if (!mw || mw->obj.ctx != qp->obj.ctx)
		return -EINVAL;
	if (w->compare_add || mw->type == IBV_MW_TYPE_2) {
		mr = mr_by_lkey(vr, w->bind_mr_lkey);
		if (!mr || mr->obj.ctx != qp->obj.ctx)
			return -EINVAL;
	}
	if (bind_check(qp, mw, mr, w))
		return -EINVAL;
	mw_unbind(mw);
	/* the consumer's key byte, as rxe_do_bind_mw takes it */
	mw->rkey = (mw->rkey & ~0xffu) | (w->rkey & 0xffu);
	if (mr && w->compare_add) {
		mw->mr = mr;
		mr->nmw++;
		mw->addr = w->remote_addr;
		mw->length = w->compare_add;
		mw->access = w->bind_access;
	}
	if (mw->type == IBV_MW_TYPE_2)
		mw->qp = qp;
	return 0;
}

/* o10-37.2.26: type 1 windows are not invalidated; an MR's key names a
 * memory region, and ours are all user MRs, which cannot be (rxe). */
int mw_invalidate(struct vr_qp *qp, uint32_t rkey)
{
	struct vr_mw *mw;

	if (!(rkey & URD_MW_KEY_BIT))
		return -EINVAL;
	mw = mw_by_rkey(qp->vr, rkey);
	if (!mw || mw->type != IBV_MW_TYPE_2 || mw->pd != qp->pd)
		return -EINVAL;
	if (mw->mr && mw->qp != qp)
		return -EINVAL;
	mw_unbind(mw);
	return 0;
}

/* rxe_lookup_mw: the window's key, PD, QP (type 2), access and state, then
 * the range inside the window. */
int mw_check_remote(struct urd_vrnic *vr, struct vr_qp *qp, uint32_t rkey, uint64_t addr, uint64_t len,
		    uint32_t need_access, struct vsge *out)
{
	const struct vr_mw *mw = mw_by_rkey(vr, rkey);
	const struct vr_mr *mr;

	if (!mw || !mw->mr || !mw->length || mw->pd != qp->pd ||
	    (mw->type == IBV_MW_TYPE_2 && mw->qp != qp) || (mw->access & need_access) != need_access ||
	    (qp->attr.qp_access_flags & need_access) != need_access)
		return -EACCES;
	if (addr < mw->addr || len > mw->length || addr - mw->addr > mw->length - len)
		return -EACCES;
	mr = mw->mr;
	out->mr = (struct vr_mr *)mr;
	out->off = addr - mr->iova;
	out->len = (uint32_t)len;
	out->flat = NULL;
	return 0;
}

/* A local operation at the head of qp's send queue: 0 or the WQE's status
 * (rxe_do_local_ops: IBV_WC_MW_BIND_ERR for a bind, IBV_WC_LOC_QP_OP_ERR
 * for an invalidation). */
int local_op_execute(struct vr_qp *qp, const struct urd_send_wqe *w)
{
	switch (w->opcode) {
	case URD_WR_BIND_MW:
		return mw_bind(qp, w) ? IBV_WC_MW_BIND_ERR : 0;
	case URD_WR_LOCAL_INV:
		return mw_invalidate(qp, w->invalidate_rkey) ? IBV_WC_LOC_QP_OP_ERR : 0;
	default:
		return IBV_WC_LOC_QP_OP_ERR;
	}
}

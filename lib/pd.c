/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pd.c - protection domains, and the import verbs a vRNIC does not offer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct urd_context *ctx = to_uctx(context);
	struct urd_handle_req req = { 0 };
	struct urd_handle_resp resp;
	struct urd_pd *pd;
	int ret;

	pd = urd_calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urd_ctrl(ctx, URD_OP_ALLOC_PD, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret) {
		urd_free(pd);
		errno = -ret;
		return NULL;
	}
	pd->ibv.context = context;
	pd->ibv.handle = resp.handle;
	return &pd->ibv;
}

/* The daemon refuses (EBUSY) while MRs, QPs, SRQs use the PD. */
int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct urd_context *ctx = to_uctx(pd->context);
	int ret;

	ret = urd_ctrl_handle(ctx, URD_OP_DEALLOC_PD, pd->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;
	urd_free(to_upd(pd));
	return 0;
}

/* Objects cannot be shared between processes through a vRNIC. */
struct ibv_pd *ibv_import_pd(struct ibv_context *context URD_UNUSED, uint32_t pd_handle URD_UNUSED)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd URD_UNUSED)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd URD_UNUSED, uint32_t mr_handle URD_UNUSED)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr URD_UNUSED)
{
}

/* ---------------------------------------------------- memory windows */

/* ibv_alloc_mw(3): type 1 or 2 (EINVAL otherwise, from the daemon). */
struct ibv_mw *urd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct urd_context *ctx = to_uctx(pd->context);
	struct urd_alloc_mw_req req = { .pd = pd->handle, .type = (uint32_t)type };
	struct urd_handle_resp resp;
	struct ibv_mw *mw;
	int ret;

	mw = urd_calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urd_ctrl(ctx, URD_OP_ALLOC_MW, &req, sizeof(req), &resp, sizeof(resp), sizeof(resp));
	if (ret) {
		urd_free(mw);
		errno = -ret;
		return NULL;
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->type = type;
	mw->handle = resp.handle;
	mw->rkey = resp.reserved;
	return mw;
}

int urd_dealloc_mw(struct ibv_mw *mw)
{
	struct urd_context *ctx = to_uctx(mw->context);
	int ret;

	ret = urd_ctrl_handle(ctx, URD_OP_DEALLOC_MW, mw->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;
	urd_free(mw);
	return 0;
}

/* ibv_bind_mw(3), type 1 (libibverbs' inline wrapper checked the type, the
 * MR's PD and a length without an MR): a BIND_MW work request with the next
 * key byte.  As rxe's provider, mw->rkey takes the new R_Key when the WR is
 * posted; a bind that completes in error leaves the window as it was and
 * the caller undoes the update. */
int urd_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr, *bad;
	int ret;

	if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	ret = qp->context->ops.post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pd.c - protection domains, and the import verbs a vRNIC does not offer. */
#include <errno.h>
#include <stdlib.h>

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

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Control requests: the verbs objects behind each context, their validation,
 * and their release when a context closes or dies.
 *
 * Every handler gets the daemon's private copy of the request, already checked
 * for its minimum size, and runs under the big lock.  It returns 0 or -errno;
 * the errno is what the verbs call returns to the application.  A handler's
 * work must not grow with what a tenant accumulated: allocations are found in
 * a tree, a VM MR's segment list is prepared before the lock is taken, and a
 * dead context's allocations go back in batches (mem_reap).
 */
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

static const struct {
	handler_fn *fn;
	uint32_t min_len;
	bool needs_ctx;
} handlers[URD_OP_MAX] = {
	[URD_OP_OPEN_CTX]    = { op_open_ctx,    sizeof(struct urd_open_ctx_req),    false },
	[URD_OP_CLOSE_CTX]   = { op_close_ctx,   sizeof(struct urd_msg_hdr),         true },
	[URD_OP_ALLOC_PD]    = { op_alloc_pd,    sizeof(struct urd_msg_hdr),         true },
	[URD_OP_DEALLOC_PD]  = { op_dealloc_pd,  sizeof(struct urd_handle_req),      true },
	[URD_OP_MEM_ALLOC]   = { op_mem_alloc,   sizeof(struct urd_mem_req),         true },
	[URD_OP_MEM_FREE]    = { op_mem_free,    sizeof(struct urd_mem_req),         true },
	[URD_OP_REG_MR]      = { op_reg_mr,      sizeof(struct urd_reg_mr_req),      true },
	[URD_OP_DEREG_MR]    = { op_dereg_mr,    sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_CQ]   = { op_create_cq,   sizeof(struct urd_create_cq_req),   true },
	[URD_OP_DESTROY_CQ]  = { op_destroy_cq,  sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_SRQ]  = { op_create_srq,  sizeof(struct urd_create_srq_req),  true },
	[URD_OP_MODIFY_SRQ]  = { op_modify_srq,  sizeof(struct urd_modify_srq_req),  true },
	[URD_OP_QUERY_SRQ]   = { op_query_srq,   sizeof(struct urd_handle_req),      true },
	[URD_OP_DESTROY_SRQ] = { op_destroy_srq, sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_QP]   = { op_create_qp,   sizeof(struct urd_create_qp_req),   true },
	[URD_OP_MODIFY_QP]   = { op_modify_qp,   sizeof(struct urd_modify_qp_req),   true },
	[URD_OP_QUERY_QP]    = { op_query_qp,    sizeof(struct urd_handle_req),      true },
	[URD_OP_DESTROY_QP]  = { op_destroy_qp,  sizeof(struct urd_handle_req),      true },
	[URD_OP_RESIZE_CQ]   = { op_resize_cq,   sizeof(struct urd_resize_cq_req),   true },
	[URD_OP_REREG_MR]    = { op_rereg_mr,    sizeof(struct urd_rereg_mr_req),    true },
	[URD_OP_ATTACH_MCAST] = { op_attach_mcast, sizeof(struct urd_mcast_req),     true },
	[URD_OP_DETACH_MCAST] = { op_detach_mcast, sizeof(struct urd_mcast_req),     true },
	[URD_OP_ALLOC_MW]    = { op_alloc_mw,    sizeof(struct urd_alloc_mw_req),    true },
	[URD_OP_DEALLOC_MW]  = { op_dealloc_mw,  sizeof(struct urd_handle_req),      true },
	[URD_OP_CM_AGENT]    = { op_cm_agent,    sizeof(struct urd_cm_req),          true },
	[URD_OP_CM_LISTEN]   = { op_cm_listen,   sizeof(struct urd_cm_req),          true },
};

int ctrl_dispatch(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		  void *resp, uint32_t *resp_len)
{
	return ctrl_dispatch_prep(vr, slot, req, req_len, resp, resp_len, NULL);
}

int ctrl_dispatch_prep(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		       void *resp, uint32_t *resp_len, struct vr_mr_prep *prep)
{
	const struct urd_msg_hdr *h = req;
	struct handler_args a = { vr, vr->ctx[slot], slot, prep };
	*resp_len = sizeof(struct urd_msg_hdr);
	if (req_len < sizeof(*h) || req_len > URD_MSG_MAX)
		return -EINVAL;
	if (h->version != URD_ABI_VERSION)
		return -EPROTO;
	if (h->op >= URD_OP_FWD_FIRST && h->op <= URD_OP_FWD_LAST) {
		if (!a.ctx)
			return -EBADF;
		return fwd_dispatch(vr, a.ctx, req, req_len, resp, resp_len);
	}
	if (h->op >= URD_OP_MAX || !handlers[h->op].fn)
		return -EOPNOTSUPP;
	if (req_len < handlers[h->op].min_len)
		return -EINVAL;
	if (handlers[h->op].needs_ctx && !a.ctx)
		return -EBADF;
	return handlers[h->op].fn(&a, req, req_len, resp, resp_len);
}

/* Undo a request whose answer nobody waits for any more, with the same
 * checks as the destroy verb (an object something else uses stays). */
void ctrl_undo(struct urd_vrnic *vr, uint32_t slot, uint16_t op, const void *resp)
{
	static const uint16_t destroy[URD_OP_MAX] = {
		[URD_OP_ALLOC_PD] = URD_OP_DEALLOC_PD, [URD_OP_REG_MR] = URD_OP_DEREG_MR,
		[URD_OP_CREATE_CQ] = URD_OP_DESTROY_CQ, [URD_OP_CREATE_SRQ] = URD_OP_DESTROY_SRQ,
		[URD_OP_CREATE_QP] = URD_OP_DESTROY_QP, [URD_OP_ALLOC_MW] = URD_OP_DEALLOC_MW,
	};
	struct handler_args a = { vr, vr->ctx[slot], slot, NULL };
	uint32_t rl = 0;
	uint8_t dummy[sizeof(struct urd_msg_hdr)];

	if (!a.ctx || op >= URD_OP_MAX)
		return;
	if (op == URD_OP_OPEN_CTX) {
		ctx_destroy(a.ctx);
	} else if (op == URD_OP_MEM_ALLOC) {
		const struct urd_mem_resp *m = resp;
		struct urd_mem_req q = { .off = m->off, .len = m->len };

		op_mem_free(&a, &q, sizeof(q), dummy, &rl);
	} else if (op == URD_OP_ATTACH_MCAST) {
		/* the answer repeats the request */
		op_detach_mcast(&a, resp, sizeof(struct urd_mcast_req), dummy, &rl);
	} else if (destroy[op]) {
		/* every creating op answers a handle first (urd_handle_resp layout) */
		struct urd_handle_req q = { .handle = ((const struct urd_handle_resp *)resp)->handle };

		handlers[destroy[op]].fn(&a, &q, sizeof(q), dummy, &rl);
	}
}

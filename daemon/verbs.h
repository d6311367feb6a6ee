/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The mailbox handlers: one file per kind of object, as Linux rxe keeps
 * rxe_qp.c, rxe_cq.c, rxe_mr.c, rxe_srq.c:
 *   pd.c  mr.c (memory window and MRs)  cq.c  srq.c  qp.c  ctx.c
 *   ring.c      the ring arena the queues live in
 *   dispatch.c  the table from opcode to handler, and undo
 *
 * Every handler gets the daemon's private copy of the request, already checked
 * for its minimum size (dispatch.c), and runs under the big lock.  It returns
 * 0 or -errno; the errno is what the verbs call returns to the application.
 * A handler that answers sets *resp_len to the size of its response.
 */
#ifndef UNIRDMA_DAEMON_VERBS_H
#define UNIRDMA_DAEMON_VERBS_H

#include "daemon.h"

struct handler_args {
	struct urd_vrnic *vr;
	struct vr_ctx *ctx;             /* NULL before OPEN_CTX */
	uint32_t slot;
	struct vr_mr_prep *prep;        /* REG_MR of a VM: done without the big lock */
};

typedef int handler_fn(struct handler_args *a, const void *req, uint32_t len,
		       void *resp, uint32_t *resp_len);

/* ctx.c */
handler_fn op_open_ctx, op_close_ctx;
/* pd.c */
handler_fn op_alloc_pd, op_dealloc_pd;
void pd_free(struct vr_pd *pd);
/* mr.c */
handler_fn op_mem_alloc, op_mem_free, op_reg_mr, op_dereg_mr, op_rereg_mr, op_alloc_mw, op_dealloc_mw;
void mr_free(struct vr_mr *mr, bool defer);
void mw_free(struct vr_mw *mw);
/* Reaping waits for the control thread while there is one and the vRNIC
 * stays; otherwise (teardown, in-process harnesses) it is done at once. */
bool mem_reap_later(const struct urd_vrnic *vr);
void mem_ctx_release(struct urd_vrnic *vr, struct vr_ctx *ctx);
/* cq.c */
handler_fn op_create_cq, op_destroy_cq, op_resize_cq;
void cq_free(struct vr_cq *cq);
/* srq.c */
handler_fn op_create_srq, op_modify_srq, op_query_srq, op_destroy_srq;
void srq_free(struct vr_srq *srq);
uint32_t recv_wqe_bytes(uint32_t max_sge);     /* receive WQE slot for max_sge SGEs */
/* qp.c */
handler_fn op_create_qp, op_modify_qp, op_query_qp, op_destroy_qp, op_attach_mcast, op_detach_mcast;
handler_fn op_cm_agent, op_cm_listen;
void cm_forget(struct vr_qp *qp);
void qp_free(struct vr_qp *qp);

/* ring.c: n slots of slot_bytes (both powers of two) in the ring arena,
 * backed and zeroed; -ENOMEM when the arena or the tenant's file system is
 * full. */
int ring_alloc(struct urd_vrnic *vr, struct vr_ring *r, uint32_t n, uint32_t slot_bytes);
void ring_free(struct urd_vrnic *vr, struct vr_ring *r);
void ring_reset(struct vr_ring *r);
uint32_t roundup_pow2(uint32_t v);
uint32_t ilog2(uint32_t v);

#endif

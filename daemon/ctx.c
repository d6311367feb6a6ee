/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Contexts: a slot of the region opened by a process, and everything it
 * created, released when it closes or dies. */
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

int op_open_ctx(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	struct urd_open_ctx_resp *o = resp;
	*resp_len = sizeof(*o);
	struct urd_vrnic *vr = a->vr;
	struct vr_ctx *ctx;

	if (vr->deleting)
		return -ENODEV;
	if (!vr->ctx[a->slot] && vr->nctx >= vr->lim.max_ctx)
		return -EDQUOT;         /* contexts quota */
	if (vr->ctx[a->slot]) {
		/* Anyone who can write the region can write any slot's mailbox:
		 * a live context is never replaced.  A library whose slot still
		 * holds its dead predecessor's context (the liveness check runs
		 * every 100 ms) lets go of the slot and tries again (lib/device.c). */
		if (!ctrl_occupant_dead(vr, a->slot))
			return -EBUSY;
		ctx_destroy(vr->ctx[a->slot]);
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->vr = vr;
	ctx->slot = a->slot;
	ctx->id = ++vr->d->next_ctx_id;
	ctx->shm = (struct urd_slot_hdr *)(vr->map + urd_slot_off(a->slot));
	/* the async ring restarts where the tenant's consumer is */
	ctx->async_prod = urd_load_acquire(&ctx->shm->async_cons);
	urd_store_release(&ctx->shm->async_prod, ctx->async_prod);
	vr->ctx[a->slot] = ctx;
	__atomic_fetch_or(&vr->ctx_mask, 1ull << a->slot, __ATOMIC_RELEASE);
	vr->nctx++;
	o->ctx_id = ctx->id;
	log_debug("vrnic %s: context %u opened in slot %u", vr->name, ctx->id, a->slot);
	return 0;
}

/* Release everything the context owned.  Peers connected to its RC QPs go to
 * the error state: their next work would otherwise wait for a dead peer. */
void ctx_destroy(struct vr_ctx *ctx)
{
	struct urd_vrnic *vr = ctx->vr;
	struct urd_daemon *d = vr->d;

	for (uint32_t pass = OBJ_MW; pass >= OBJ_PD; pass--) {
		for (uint32_t i = 1; i < ctx->nhandles; i++) {
			struct vr_obj *o = ctx->handles[i];

			if (!o || o->type != pass)
				continue;
			switch (o->type) {
			case OBJ_QP: {
				struct vr_qp *qp = (struct vr_qp *)o;

				if (qp->type == IBV_QPT_RC) {
					struct vr_qp *peer = qpn_lookup(d, qp->attr.dest_qp_num);

					/* only a peer of the same tenant: a QP elsewhere that
					 * names this QPN is no peer (and must not hear of it) */
					if (peer && peer->obj.ctx != ctx && peer->type == IBV_QPT_RC &&
					    !strcmp(peer->vr->tenant, vr->tenant) &&
					    peer->attr.dest_qp_num == qp->qpn &&
					    (peer->state == IBV_QPS_RTR || peer->state == IBV_QPS_RTS ||
					     peer->state == IBV_QPS_SQD))
						engine_qp_error(peer, true);
				}
				qp_free(qp);
				break;
			}
			case OBJ_SRQ: srq_free((struct vr_srq *)o); break;
			case OBJ_CQ:  cq_free((struct vr_cq *)o); break;
			case OBJ_MR:  mr_free((struct vr_mr *)o, mem_reap_later(vr)); break;
			case OBJ_PD:  pd_free((struct vr_pd *)o); break;
			case OBJ_MW:  mw_free((struct vr_mw *)o); break;
			default: break;
			}
		}
	}
	mem_ctx_release(vr, ctx);
	__atomic_store_n(&vr->last_seq[ctx->slot], ctx->last_req_seq, __ATOMIC_RELAXED);
	vr->ctx[ctx->slot] = NULL;
	__atomic_fetch_and(&vr->ctx_mask, ~(1ull << ctx->slot), __ATOMIC_RELEASE);
	vr->nctx--;
	free(ctx->handles);
	free(ctx->gens);
	free(ctx->backlog);
	free(ctx);
}

int op_close_ctx(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	ctx_destroy(a->ctx);
	a->ctx = NULL;
	return 0;
}

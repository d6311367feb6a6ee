/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a context learns besides the answers in its mailbox: async events
 * (QP fatal, CQ error, SRQ limit, ...) in its slot's async ring, and the
 * event word its event thread waits on (CQ events and async events).  The
 * engine and the control plane both post them; big lock held.
 */
#include <stdlib.h>
#include <string.h>

#include "futex.h"
#include "log.h"
#include "objects.h"
#include "unirdma/barrier.h"

void ctx_notify(struct vr_ctx *ctx)
{
	urd_fetch_add(&ctx->shm->event_seq, 1);
	if (!ctx->vr->vm)     /* private state: the header flag is tenant-writable */
		urd_futex_wake_all(&ctx->shm->event_seq);
}

/* Queue an async event for the context.  The ring's consumer index is the
 * tenant's: a full (or lying) ring drops the event, never blocks us. */
/* Room in the slot's async ring; a consumer index that claims more than the
 * ring holds (tenant-written) counts as no room. */
static uint32_t async_room(struct vr_ctx *ctx)
{
	uint32_t used = ctx->async_prod - urd_load_acquire(&ctx->shm->async_cons);

	return used >= URD_ASYNC_RING_N ? 0 : URD_ASYNC_RING_N - used;
}

static void async_put(struct vr_ctx *ctx, const struct urd_async_event *ev)
{
	struct urd_async_event *e = &ctx->shm->async[ctx->async_prod & (URD_ASYNC_RING_N - 1)];

	e->event_type = ev->event_type;
	e->obj_kind = ev->obj_kind;
	e->handle = ev->handle;
	e->reserved = 0;
	ctx->async_prod++;
	/* pairs with the library's load_acquire of async_prod */
	urd_store_release(&ctx->shm->async_prod, ctx->async_prod);
}

void ctx_async_flush(struct vr_ctx *ctx)
{
	uint32_t room, moved = 0;

	if (!ctx->backlog_n)
		return;
	for (room = async_room(ctx); room && ctx->backlog_n; room--, moved++) {
		async_put(ctx, &ctx->backlog[ctx->backlog_head++]);
		ctx->backlog_n--;
	}
	if (!ctx->backlog_n)
		ctx->backlog_head = 0;
	if (moved)
		ctx_notify(ctx);
}

/* Events keep their order: while any wait in the backlog, new ones queue
 * behind them.  A context whose QPs go to error by the hundred (a peer died)
 * gets every event, the ring passing them on as the library consumes. */
void ctx_post_async(struct vr_ctx *ctx, uint32_t event, uint32_t kind, uint32_t handle)
{
	struct urd_async_event ev = { .event_type = event, .obj_kind = kind, .handle = handle };

	ctx_async_flush(ctx);
	if (!ctx->backlog_n && async_room(ctx)) {
		async_put(ctx, &ev);
		ctx_notify(ctx);
		return;
	}
	if (ctx->backlog_head + ctx->backlog_n == ctx->backlog_cap) {
		if (ctx->backlog_head) {        /* slide the live part to the front */
			memmove(ctx->backlog, ctx->backlog + ctx->backlog_head,
				ctx->backlog_n * sizeof(*ctx->backlog));
			ctx->backlog_head = 0;
		} else {
			uint32_t cap = ctx->backlog_cap ? 2 * ctx->backlog_cap : URD_ASYNC_RING_N;
			struct urd_async_event *nb = NULL;

			if (cap <= URD_ASYNC_BACKLOG_MAX)
				nb = realloc(ctx->backlog, cap * sizeof(*nb));
			if (!nb) {
				log_warn("vrnic %s ctx %u: %u async events wait for the tenant, event %u dropped",
					 ctx->vr->name, ctx->id, ctx->backlog_n, event);
				return;
			}
			ctx->backlog = nb;
			ctx->backlog_cap = cap;
		}
	}
	ctx->backlog[ctx->backlog_head + ctx->backlog_n++] = ev;
}

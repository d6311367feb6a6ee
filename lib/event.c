/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* event.c - completion channels, async events and the per-context event
 * thread.
 *
 * The engine never writes to a file descriptor of ours.  It bumps counters in
 * the region and then slot->event_seq (futex-woken):
 *  - ring->events of a CQ each time an armed CQ fires;
 *  - the slot's async ring (async_prod) for QP/CQ/SRQ/port/device events.
 * One thread per context sleeps on event_seq (100 ms steps; VM guests poll),
 * turns those counters into events on pipes, and watches daemon_state.  The
 * pipes are what applications see: a completion channel's fd and the
 * context's async_fd are their read ends, pollable and blocking by default,
 * as with rdma-core.
 *
 * Destroy rule (man ibv_get_cq_event, ibv_get_async_event): destroying a CQ,
 * QP or SRQ waits until every event handed to the application for it has
 * been acknowledged.  Events still queued when the object is destroyed are
 * marked dead and skipped by the readers.
 *
 * Lock order: ctx->ev_lock -> evq.lock -> object mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

/* ------------------------------------------------------------ queues */

int urd_evq_init(struct urd_evq *q)
{
	int fds[2];

	memset(q, 0, sizeof(*q));
	q->rfd = q->wfd = -1;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/* Only our write end is non-blocking: the event thread must never
	 * block; the application decides about the read end. */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	q->rfd = fds[0];
	q->wfd = fds[1];
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void urd_evq_fini(struct urd_evq *q)
{
	if (q->rfd < 0)
		return;
	close(q->rfd);
	close(q->wfd);
	q->rfd = q->wfd = -1;
	urd_free(q->buf);
	q->buf = NULL;
	pthread_mutex_destroy(&q->lock);
}

enum { EVQ_MAX = 1u << 16 };            /* a pipe holds 64 KiB by default */

int urd_evq_push_locked(struct urd_evq *q, void *obj, uint32_t type, int port)
{
	const char b = 0;

	if (q->count == q->cap) {
		uint32_t ncap = q->cap ? q->cap * 2 : 16;
		struct urd_ev *nb;

		if (ncap > EVQ_MAX)
			return -ENOSPC;
		nb = urd_calloc(ncap, sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		for (uint32_t i = 0; i < q->count; i++)
			nb[i] = q->buf[(q->head + i) % q->cap];
		urd_free(q->buf);
		q->buf = nb;
		q->head = 0;
		q->cap = ncap;
	}
	/* Byte and entry are added under q->lock, which a reader takes only
	 * after it got its byte: the byte always finds its entry.  A full
	 * pipe drops the event (the application stopped reading long ago). */
	if (write(q->wfd, &b, 1) != 1)
		return -errno;
	q->buf[(q->head + q->count) % q->cap] = (struct urd_ev){
		.obj = obj, .type = type, .port = port,
	};
	q->count++;
	return 0;
}

int urd_evq_pop_lock(struct urd_evq *q, struct urd_ev *ev)
{
	for (;;) {
		char b;
		ssize_t r = read(q->rfd, &b, 1);

		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		pthread_mutex_lock(&q->lock);
		if (q->count == 0) {    /* cannot happen: byte without entry */
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		*ev = q->buf[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
		if (ev->obj || ev->port >= 0)
			return 0;       /* with q->lock held */
		pthread_mutex_unlock(&q->lock);
	}
}

void urd_evq_kill_obj(struct urd_evq *q, void *obj)
{
	pthread_mutex_lock(&q->lock);
	for (uint32_t i = 0; i < q->count; i++) {
		struct urd_ev *e = &q->buf[(q->head + i) % q->cap];

		if (e->obj == obj)
			e->obj = NULL;
	}
	pthread_mutex_unlock(&q->lock);
}

/* ------------------------------------------------------- object map */

static uint32_t bucket_of(uint32_t kind, uint32_t handle)
{
	return (handle * 2654435761u + kind) % URD_OBJMAP_BUCKETS;
}

void urd_obj_add(struct urd_context *ctx, struct urd_objnode *n, uint32_t kind,
		 uint32_t handle)
{
	struct urd_objnode **b = &ctx->objs.bucket[bucket_of(kind, handle)];

	n->kind = kind;
	n->handle = handle;
	pthread_mutex_lock(&ctx->ev_lock);
	n->next = *b;
	*b = n;
	pthread_mutex_unlock(&ctx->ev_lock);
}

void urd_obj_del(struct urd_context *ctx, struct urd_objnode *n)
{
	pthread_mutex_lock(&ctx->ev_lock);
	for (struct urd_objnode **p = &ctx->objs.bucket[bucket_of(n->kind, n->handle)];
	     *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->ev_lock);
}

/* Under ev_lock. */
static struct urd_objnode *obj_find(struct urd_context *ctx, uint32_t kind,
				    uint32_t handle)
{
	for (struct urd_objnode *n = ctx->objs.bucket[bucket_of(kind, handle)]; n;
	     n = n->next)
		if (n->kind == kind && n->handle == handle)
			return n;
	return NULL;
}

/* ---------------------------------------------------- the event thread */

/* Which object kind an async event type is about (IB spec 11.6.3). */
static uint32_t kind_of_event(uint32_t type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return URD_OBJ_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return URD_OBJ_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return URD_OBJ_SRQ;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		return URD_OBJ_PORT;
	case IBV_EVENT_DEVICE_FATAL:
		return URD_OBJ_DEVICE;
	default:
		return URD_OBJ_NONE;
	}
}

/* Under ev_lock. */
static void deliver_async(struct urd_context *ctx, const struct urd_async_event *ae)
{
	uint32_t kind = kind_of_event(ae->event_type);
	struct urd_objnode *n;
	void *obj = NULL;
	int port = -1;

	if (kind == URD_OBJ_NONE || kind != ae->obj_kind)
		return;
	switch (kind) {
	case URD_OBJ_QP:
		n = obj_find(ctx, kind, ae->handle);
		if (n)
			obj = &urd_container_of(n, struct urd_qp, node)->qpx.qp_base;
		break;
	case URD_OBJ_CQ:
		n = obj_find(ctx, kind, ae->handle);
		if (n)
			obj = urd_container_of(n, struct urd_cq, node);
		break;
	case URD_OBJ_SRQ:
		n = obj_find(ctx, kind, ae->handle);
		if (n)
			obj = &urd_container_of(n, struct urd_srq, node)->ibv;
		break;
	case URD_OBJ_PORT:
		if (ae->handle != 1)
			return;
		port = 1;
		break;
	case URD_OBJ_DEVICE:
		if (ctx->fatal_sent)
			return;
		ctx->fatal_sent = true;
		port = 0;
		break;
	}
	if (!obj && port < 0)
		return;                 /* unknown handle: ignored */
	pthread_mutex_lock(&ctx->async_q.lock);
	urd_evq_push_locked(&ctx->async_q, obj, ae->event_type, port);
	pthread_mutex_unlock(&ctx->async_q.lock);
}

static void drain_async(struct urd_context *ctx)
{
	struct urd_slot_hdr *s = ctx->slot;
	/* Pairs with the daemon's release of async_prod after it filled the
	 * entries. */
	uint32_t prod = urd_load_acquire(&s->async_prod);
	uint32_t cons = ctx->async_cons;

	if (prod - cons > URD_ASYNC_RING_N) {
		urd_dbg("async ring overrun: %u events lost",
			prod - cons - URD_ASYNC_RING_N);
		cons = prod - URD_ASYNC_RING_N;
	}
	while (cons != prod) {
		struct urd_async_event ae;

		memcpy(&ae, &s->async[cons & (URD_ASYNC_RING_N - 1)], sizeof(ae));
		cons++;
		deliver_async(ctx, &ae);
	}
	ctx->async_cons = cons;
	/* Tells the daemon the entries may be reused. */
	urd_store_release(&s->async_cons, cons);
}

enum { MAX_EVENTS_PER_SCAN = 64 };
static const uint64_t WATCHDOG_NS = 50ull * 1000 * 1000;

/* Safety net for a lost completion event: the CQ is armed, holds CQEs the
 * application has not polled, and nothing moved for WATCHDOG_NS.  An
 * application in that state waits for an event that will not come (the arm
 * and the CQE crossed each other).  Take the arm back and fire the event
 * ourselves; a spurious event is harmless, the application just polls. */
static bool lost_event(struct urd_cq *cq, uint64_t now)
{
	uint32_t prod = urd_load_acquire(&cq->q.hdr->prod);
	uint32_t cons = urd_load_acquire(&cq->q.hdr->cons);

	if (prod == cons || urd_load_relaxed(&cq->q.hdr->arm) == URD_CQ_ARM_NONE ||
	    prod != cq->wd_prod || cons != cq->wd_cons) {
		cq->wd_prod = prod;
		cq->wd_cons = cons;
		cq->wd_since = now;
		return false;
	}
	if (now - cq->wd_since < WATCHDOG_NS)
		return false;
	cq->wd_since = now;
	if (urd_exchange(&cq->q.hdr->arm, URD_CQ_ARM_NONE) == URD_CQ_ARM_NONE)
		return false;           /* the engine took it meanwhile */
	urd_dbg("CQ %#x: armed with %u unpolled CQEs and no event; raising it",
		cq->ex.handle, prod - cons);
	return true;
}

static void scan_cqs(struct urd_context *ctx)
{
	uint64_t now = urd_now_ns();

	for (struct urd_cq *cq = ctx->chan_cqs; cq; cq = cq->chan_next) {
		/* Pairs with the engine's increment after it wrote the CQE. */
		uint32_t ev = urd_load_acquire(&cq->q.hdr->events);
		uint32_t d = ev - cq->last_events;
		struct urd_channel *ch = to_uchan(cq->ex.channel);

		cq->last_events = ev;
		if (d > MAX_EVENTS_PER_SCAN)
			d = MAX_EVENTS_PER_SCAN;        /* scribbled counter */
		if (lost_event(cq, now))
			d++;
		if (!d)
			continue;
		pthread_mutex_lock(&ch->q.lock);
		while (d--)
			urd_evq_push_locked(&ch->q, cq, 0, -1);
		pthread_mutex_unlock(&ch->q.lock);
	}
}

/* True the first time the daemon is seen gone. */
static bool check_daemon(struct urd_context *ctx)
{
	uint32_t st = urd_load_acquire(&ctx->hdr->daemon_state);
	struct urd_async_event ae = {
		.event_type = IBV_EVENT_DEVICE_FATAL,
		.obj_kind = URD_OBJ_DEVICE,
	};

	if (ctx->fatal_sent || !urd_daemon_gone(ctx))
		return false;
	urd_dbg("%s: %s; the device is gone", ctx->dev->vdev.device.name,
		st == URD_STATE_DELETED ? "vRNIC deleted" : "unirdmad stopped or died");
	urd_store_release(&ctx->dead, 1);
	deliver_async(ctx, &ae);        /* sets fatal_sent */
	return true;
}

/* ------------------------------------------- flushing for a lost device */

/* One completion written by us: the device is gone, we are the only
 * producer left on this CQ (ring.h: a proxy on the engine's side, with the
 * consumer's struct).  Under the CQ's lock, like poll_cq. */
static bool push_flush(struct urd_cq *cq, uint64_t wr_id, uint32_t opcode, uint32_t qpn)
{
	struct urd_ring_hdr *r = cq->q.hdr;
	uint32_t prod, arm;
	struct urd_cqe *c;
	bool ok = false;

	pthread_spin_lock(&cq->lock);
	prod = urd_load_relaxed(&r->prod);
	if (prod - cq->q.own < cq->q.n) {       /* a free slot, whatever prod says */
		c = urd_queue_slot(&cq->q, prod);
		memset(c, 0, sizeof(*c));
		c->wr_id = wr_id;
		c->status = IBV_WC_WR_FLUSH_ERR;
		c->vendor_err = IBV_WC_WR_FLUSH_ERR;
		c->opcode = opcode;
		c->qp_num = qpn;
		/* pairs with poll_cq's load_acquire of prod */
		urd_queue_publish_prod(&cq->q, prod + 1);
		arm = urd_exchange(&r->arm, URD_CQ_ARM_NONE);
		if (arm != URD_CQ_ARM_NONE)     /* scan_cqs turns this into an event */
			urd_store_release(&r->events, urd_load_relaxed(&r->events) + 1);
		ok = true;
	}
	pthread_spin_unlock(&cq->lock);
	return ok;
}

static void flush_wq(struct urd_qp *qp, struct urd_wq *wq, struct urd_cq *cq, bool send)
{
	uint32_t cons, prod;

	/* the engine's part, played for it: its cons, at most a ring behind
	 * our prod */
	pthread_spin_lock(&wq->lock);
	cons = urd_queue_cons_clamped(&wq->q);
	prod = wq->q.own;
	for (; cons != prod; cons++) {
		const void *w = urd_queue_slot(&wq->q, cons);
		uint64_t wr_id = send ? ((const struct urd_send_wqe *)w)->wr_id
				      : ((const struct urd_recv_wqe *)w)->wr_id;

		if (!push_flush(cq, wr_id, send ? IBV_WC_SEND : IBV_WC_RECV, qp->qpx.qp_base.qp_num))
			break;          /* CQ full: the rest on the next sweep */
	}
	urd_queue_release_cons(&wq->q, cons);
	pthread_spin_unlock(&wq->lock);
}

/* The device is gone (daemon stopped or killed, vRNIC deleted): nothing will
 * complete the work already posted.  Do what an RNIC does when a QP enters the
 * error state (IB spec 10.3.1): complete every outstanding work request with
 * IBV_WC_WR_FLUSH_ERR, so that programs polling their CQs see errors and end
 * instead of waiting forever.  Safe because the daemon no longer touches the
 * region: it publishes DEAD/DELETED after releasing the contexts, and a killed
 * daemon touches nothing.  Runs on every pass while dead: work posted later is
 * flushed too.  Under ev_lock. */
static void flush_all(struct urd_context *ctx)
{
	for (unsigned b = 0; b < URD_OBJMAP_BUCKETS; b++) {
		for (struct urd_objnode *n = ctx->objs.bucket[b]; n; n = n->next) {
			struct urd_qp *qp;

			if (n->kind != URD_OBJ_QP)
				continue;
			qp = urd_container_of(n, struct urd_qp, node);
			if (qp->qpx.qp_base.send_cq)
				flush_wq(qp, &qp->sq, to_ucq(qp->qpx.qp_base.send_cq), true);
			if (qp->rq.q.n && qp->qpx.qp_base.recv_cq)
				flush_wq(qp, &qp->rq, to_ucq(qp->qpx.qp_base.recv_cq), false);
		}
	}
}

static void *event_thread(void *arg)
{
	struct urd_context *ctx = arg;
	uint32_t *seqp = &ctx->slot->event_seq;

	while (!urd_load_acquire(&ctx->ev_stop)) {
		/* Read the sequence before looking at the counters: an event
		 * raised after the look changes it, and the wait returns. */
		uint32_t seq = urd_load_acquire(seqp);
		bool gone;

		pthread_mutex_lock(&ctx->ev_lock);
		drain_async(ctx);
		gone = check_daemon(ctx);
		if (urd_ctx_dead(ctx))
			flush_all(ctx);
		scan_cqs(ctx);
		pthread_mutex_unlock(&ctx->ev_lock);
		if (gone)
			urd_mem_daemon_gone(ctx);       /* takes mem_lock */

		if (ctx->vm) {
			struct timespec ts = { 0, 1000 * 1000 };

			/* A VM guest proves it is alive with this word. */
			urd_fetch_add(&ctx->slot->heartbeat, 1);
			nanosleep(&ts, NULL);
		} else {
			urd_futex_wait(seqp, seq, 100 * 1000 * 1000);
		}
	}
	return NULL;
}

int urd_events_start(struct urd_context *ctx)
{
	int ret = pthread_create(&ctx->ev_thread, NULL, event_thread, ctx);

	if (ret)
		return -ret;
	ctx->ev_started = true;
	return 0;
}

void urd_events_stop(struct urd_context *ctx)
{
	if (!ctx->ev_started)
		return;
	urd_store_release(&ctx->ev_stop, 1);
	if (!ctx->vm)
		urd_futex_wake(&ctx->slot->event_seq, 1);
	pthread_join(ctx->ev_thread, NULL);
	ctx->ev_started = false;
}

/* ----------------------------------------------------- CQ bookkeeping */

void urd_cq_events_attach(struct urd_context *ctx, struct urd_cq *cq)
{
	pthread_mutex_lock(&ctx->ev_lock);
	cq->last_events = urd_load_acquire(&cq->q.hdr->events);
	cq->chan_next = ctx->chan_cqs;
	ctx->chan_cqs = cq;
	pthread_mutex_unlock(&ctx->ev_lock);
}

void urd_cq_events_detach(struct urd_context *ctx, struct urd_cq *cq)
{
	pthread_mutex_lock(&ctx->ev_lock);
	for (struct urd_cq **p = &ctx->chan_cqs; *p; p = &(*p)->chan_next) {
		if (*p == cq) {
			*p = cq->chan_next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->ev_lock);
}

void urd_cq_events_drain(struct urd_context *ctx, struct urd_cq *cq)
{
	struct ibv_cq *ibcq = ibv_cq_ex_to_cq(&cq->ex);

	urd_obj_del(ctx, &cq->node);
	if (ibcq->channel) {
		urd_cq_events_detach(ctx, cq);
		urd_evq_kill_obj(&to_uchan(ibcq->channel)->q, cq);
	}
	urd_evq_kill_obj(&ctx->async_q, cq);
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_reported ||
	       ibcq->async_events_completed != cq->async_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
}

void urd_qp_events_drain(struct urd_context *ctx, struct urd_qp *qp)
{
	struct ibv_qp *q = &qp->qpx.qp_base;

	urd_obj_del(ctx, &qp->node);
	urd_evq_kill_obj(&ctx->async_q, q);
	pthread_mutex_lock(&q->mutex);
	while (q->events_completed != qp->async_reported)
		pthread_cond_wait(&q->cond, &q->mutex);
	pthread_mutex_unlock(&q->mutex);
}

void urd_srq_events_drain(struct urd_context *ctx, struct urd_srq *srq)
{
	struct ibv_srq *s = &srq->ibv;

	urd_obj_del(ctx, &srq->node);
	urd_evq_kill_obj(&ctx->async_q, s);
	pthread_mutex_lock(&s->mutex);
	while (s->events_completed != srq->async_reported)
		pthread_cond_wait(&s->cond, &s->mutex);
	pthread_mutex_unlock(&s->mutex);
}

/* ------------------------------------------------ completion channels */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct urd_channel *ch;
	int ret;

	if (urd_ctx_dead(to_uctx(context))) {
		errno = EIO;
		return NULL;
	}
	ch = urd_calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ret = urd_evq_init(&ch->q);
	if (ret) {
		urd_free(ch);
		errno = -ret;
		return NULL;
	}
	ch->ibv.context = context;
	ch->ibv.fd = ch->q.rfd;
	ch->ibv.refcnt = 0;
	return &ch->ibv;
}

/* man ibv_create_comp_channel: fails (EBUSY) while CQs still use it. */
int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct ibv_context *c = channel->context;
	int ret = 0;

	pthread_mutex_lock(&c->mutex);
	if (channel->refcnt) {
		ret = EBUSY;
	} else {
		urd_evq_fini(&to_uchan(channel)->q);
		urd_free(to_uchan(channel));
	}
	pthread_mutex_unlock(&c->mutex);
	return ret;
}

/* man ibv_get_cq_event: 0 on success, -1 on error (errno set; EAGAIN when
 * the application made the channel fd non-blocking and nothing is there). */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct urd_channel *ch = to_uchan(channel);
	struct urd_ev ev;
	struct urd_cq *ucq;
	int ret;

	ret = urd_evq_pop_lock(&ch->q, &ev);
	if (ret) {
		errno = -ret;
		return -1;
	}
	ucq = ev.obj;
	/* Counted while the queue lock still keeps destroy_cq out. */
	pthread_mutex_lock(&ucq->ex.mutex);
	ucq->comp_reported++;
	pthread_mutex_unlock(&ucq->ex.mutex);
	pthread_mutex_unlock(&ch->q.lock);

	*cq = ibv_cq_ex_to_cq(&ucq->ex);
	*cq_context = (*cq)->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ------------------------------------------------------- async events */

/* man ibv_get_async_event: 0 on success, -1 on error. */
int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	struct urd_context *ctx = to_uctx(context);
	struct urd_ev ev;
	int ret;

	ret = urd_evq_pop_lock(&ctx->async_q, &ev);
	if (ret) {
		errno = -ret;
		return -1;
	}
	memset(event, 0, sizeof(*event));
	event->event_type = (enum ibv_event_type)ev.type;
	switch (kind_of_event(ev.type)) {
	case URD_OBJ_QP: {
		struct ibv_qp *qp = ev.obj;

		pthread_mutex_lock(&qp->mutex);
		to_uqp(qp)->async_reported++;
		pthread_mutex_unlock(&qp->mutex);
		event->element.qp = qp;
		break;
	}
	case URD_OBJ_CQ: {
		struct urd_cq *cq = ev.obj;

		pthread_mutex_lock(&cq->ex.mutex);
		cq->async_reported++;
		pthread_mutex_unlock(&cq->ex.mutex);
		event->element.cq = ibv_cq_ex_to_cq(&cq->ex);
		break;
	}
	case URD_OBJ_SRQ: {
		struct ibv_srq *srq = ev.obj;

		pthread_mutex_lock(&srq->mutex);
		to_usrq(srq)->async_reported++;
		pthread_mutex_unlock(&srq->mutex);
		event->element.srq = srq;
		break;
	}
	case URD_OBJ_PORT:
		event->element.port_num = ev.port;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&ctx->async_q.lock);
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *m;
	pthread_cond_t *c;
	uint32_t *done;

	switch (kind_of_event(event->event_type)) {
	case URD_OBJ_QP:
		m = &event->element.qp->mutex;
		c = &event->element.qp->cond;
		done = &event->element.qp->events_completed;
		break;
	case URD_OBJ_CQ:
		m = &event->element.cq->mutex;
		c = &event->element.cq->cond;
		done = &event->element.cq->async_events_completed;
		break;
	case URD_OBJ_SRQ:
		m = &event->element.srq->mutex;
		c = &event->element.srq->cond;
		done = &event->element.srq->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(m);
	(*done)++;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Control plane: one thread per vRNIC serves the context mailboxes of its
 * region, and watches the liveness of the contexts.
 *
 * A tenant publishes a request by writing it into its slot's request area and
 * storing req_seq (release).  This thread notices a req_seq it has not
 * answered, copies the request out of the region before looking at it, runs
 * the handler under the big lock, writes the response and publishes resp_seq
 * -- unless the library gave up waiting and marked resp_seq ~seq: then what
 * the request created is undone (ctrl_undo).  The big lock is taken once per
 * request, never across slots, and within a budget per vRNIC; the
 * heartbeat and the liveness tests do not need it.
 * The tenant can rewrite its request while we copy it: we only ever use our
 * copy.  A context is alive while its process holds the OFD lock on byte
 * <slot> of the region file; the kernel drops it when the process dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "daemon.h"
#include "futex.h"
#include "log.h"
#include "unirdma/barrier.h"

#define LIVENESS_NS   (100ull * 1000 * 1000)

static struct urd_slot_hdr *slot_shm(struct urd_vrnic *vr, uint32_t slot)
{
	return (struct urd_slot_hdr *)(vr->map + urd_slot_off(slot));
}

/* True while some process holds the liveness lock of this slot. */
static bool slot_locked(struct urd_vrnic *vr, uint32_t slot)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = slot;
	fl.l_len = 1;
	if (fcntl(vr->fd, F_OFD_GETLK, &fl))
		return true;    /* cannot tell: keep it */
	return fl.l_type != F_UNLCK;
}

/* Container occupant: dead once its OFD lock is free.  VM occupant: its owner
 * word and heartbeat stalled for the timeout. */
bool ctrl_occupant_dead(struct urd_vrnic *vr, uint32_t slot)
{
	if (vr->vm)
		return vm_slot_stalled(vr, slot);
	return !slot_locked(vr, slot);
}

/* The daemon's heartbeat (read by VM guests, who declare the daemon dead when
 * it stops) ticks whatever holds the big lock. */
static void heartbeat_tick(struct urd_vrnic *vr, uint64_t *next_hb)
{
	uint64_t now = urd_now_ns();

	if (now < *next_hb)
		return;
	urd_fetch_add(&vr->hdr->daemon_heartbeat, 1);
	*next_hb = now + LIVENESS_NS;
}

/* Fairness between tenants: a vRNIC's control thread holds the big lock for
 * at most 1/CTRL_SHARE_DIV of the time, in bursts of CTRL_BURST_NS; past that
 * it sleeps.  A pthread mutex is not fair (a thread that unlocks and locks
 * again at once keeps it while the woken waiter is still being scheduled),
 * so without this a tenant that queues slow requests in all its slots keeps
 * other vRNICs, the engine and the operator waiting. */
#define CTRL_BURST_NS   (5ull * 1000 * 1000)
#define CTRL_SHARE_DIV  4
#define CTRL_YIELD_NS   (50ull * 1000)

struct lock_budget {
	int64_t credit;                 /* ns of lock time we may still take */
	uint64_t last, locked_at;
	uint64_t unlocked_at;           /* the hold is unlocked_at - locked_at */
};

/* Unlock and note when: time spent after the unlock (futex wakes, being
 * preempted by the tenant just woken) is not lock time. */
static void budget_unlock(struct urd_daemon *d, struct lock_budget *b)
{
	b->unlocked_at = urd_now_ns();
	pthread_mutex_unlock(&d->lock);
}

static void budget_spend(struct lock_budget *b)
{
	uint64_t now = urd_now_ns();

	b->credit += (int64_t)((now - b->last) / CTRL_SHARE_DIV);
	if (b->credit > (int64_t)CTRL_BURST_NS)
		b->credit = (int64_t)CTRL_BURST_NS;
	b->credit -= (int64_t)(b->unlocked_at - b->locked_at);
	b->last = now;
	/* A hold still counts the time the holder was preempted while holding
	 * (2 cores under load: 100 ms and more); repaying all of it fourfold
	 * stalled this vRNIC's own tenant for half a second.  The debt is
	 * capped at one burst: a sleep lasts at most CTRL_BURST_NS *
	 * CTRL_SHARE_DIV. */
	if (b->credit < -(int64_t)CTRL_BURST_NS)
		b->credit = -(int64_t)CTRL_BURST_NS;
	if (b->credit < 0) {
		uint64_t ns = (uint64_t)-b->credit * CTRL_SHARE_DIV;
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

		nanosleep(&ts, NULL);
		b->credit = 0;
		b->last = urd_now_ns();
	} else if (b->unlocked_at - b->locked_at > CTRL_YIELD_NS) {
		sched_yield();          /* after a long hold: let a woken waiter in */
	}
}

/* The vRNIC is going away (big lock held): give back what waits for reaping
 * now, or it would leak with the vRNIC. */
static void stop_flush(struct urd_vrnic *vr)
{
	while (mem_reap(vr, 1024))
		;
}

/* Take the big lock, ticking the heartbeat while it is held elsewhere. */
static void big_lock(struct urd_vrnic *vr, uint64_t *next_hb)
{
	for (;;) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!pthread_mutex_timedlock(&vr->d->lock, &ts))
			return;
		heartbeat_tick(vr, next_hb);
	}
}

/* The liveness tests need no lock (an fcntl per context, or the VM words);
 * only releasing a dead context does. */
static void liveness_check(struct urd_vrnic *vr, uint64_t *next_hb)
{
	uint64_t live = __atomic_load_n(&vr->ctx_mask, __ATOMIC_ACQUIRE), dead = 0;

	if (vr->vm) {
		dead = vm_liveness_scan(vr);    /* VM hook: owner words and heartbeats (vm.c) */
	} else {
		for (uint32_t i = 0; i < URD_MAX_CTX; i++)
			if ((live >> i & 1) && !slot_locked(vr, i))
				dead |= 1ull << i;
	}
	for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
		struct vr_ctx *ctx;

		if (!(dead >> i & 1))
			continue;
		big_lock(vr, next_hb);          /* one hold per context released */
		ctx = vr->ctx[i];
		if (vr->stop) {
			stop_flush(vr);
			pthread_mutex_unlock(&vr->d->lock);
			return;
		}
		if (vr->vm) {
			vm_liveness_reap(vr, i);
		} else if (ctx) {
			/* only this thread opens contexts: the one we saw dead
			 * is still the one here */
			log_info("vrnic %s: context %u (slot %u) died; releasing its resources",
				 vr->name, ctx->id, i);
			ctx_destroy(ctx);
		}
		engine_kick_if_work(vr->d);
		pthread_mutex_unlock(&vr->d->lock);
	}
}

/* Fault injection for tests: UNIRDMA_FAULT_CTRL_DELAY=OP:MS delays every
 * request with that op by MS milliseconds before it runs (not under the big
 * lock), e.g. past the library's timeout; UNIRDMA_FAULT_LOCK_HOLD=OP:MS
 * sleeps MS milliseconds holding the big lock, as a long data transfer
 * would. */
static uint32_t fault_op = UINT32_MAX, fault_ms, hold_op = UINT32_MAX, hold_ms;

static void fault_parse(const char *name, uint32_t *op_out, uint32_t *ms_out)
{
	const char *e = getenv(name);
	unsigned int op, ms;

	if (e && sscanf(e, "%u:%u", &op, &ms) == 2 && ms <= 600000) {
		*op_out = op;
		*ms_out = ms;
	}
}

static void fault_init(void)
{
	fault_parse("UNIRDMA_FAULT_CTRL_DELAY", &fault_op, &fault_ms);
	fault_parse("UNIRDMA_FAULT_LOCK_HOLD", &hold_op, &hold_ms);
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Publish the response unless the library abandoned the request: on timeout
 * it swaps resp_seq to ~seq (lib/ctrl.c).  The word is tenant-writable; a
 * tenant that keeps rewriting it only loses its own answers. */
static bool publish(struct urd_slot_hdr *s, uint32_t seq)
{
	for (int i = 0; i < 16; i++) {
		uint32_t cur = urd_load_acquire(&s->resp_seq);

		if (cur == ~seq)
			return false;
		/* release pairs with the library's load_acquire of resp_seq:
		 * it sees the response area */
		if (__atomic_compare_exchange_n(&s->resp_seq, &cur, seq, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/* A control step that took longer than SLOW_NS is logged with where its
 * time went (waiting for the big lock, holding it), so that a stall a test
 * or an operator sees can be traced to the daemon or ruled out. */
#define SLOW_NS (500ull * 1000 * 1000)

#define NO_OP UINT32_MAX  /* note_slow: not a request, the thread's own pass */

static void note_slow(const struct urd_vrnic *vr, uint32_t op, uint64_t t0, uint64_t locked, uint64_t unlocked)
{
	char what[48];

	if (unlocked - t0 < SLOW_NS)
		return;
	if (op == NO_OP)
		snprintf(what, sizeof(what), "a pass over async events and reaping");
	else
		snprintf(what, sizeof(what), "a control request (op %u)", op);
	log_warn("vrnic %s: %s took %llu ms: %llu ms waiting for the big lock, %llu ms holding it",
		 vr->name, what, (unsigned long long)((unlocked - t0) / 1000000),
		 (unsigned long long)((locked - t0) / 1000000), (unsigned long long)((unlocked - locked) / 1000000));
}

/* One request: copied and (REG_MR of a VM) prepared without the big lock,
 * run and answered under it.  -1 when the vRNIC is stopping. */
static int serve_slot(struct urd_vrnic *vr, uint32_t slot, uint32_t seq, uint64_t *next_hb,
		      struct lock_budget *budget)
{
	static __thread uint8_t req[URD_MSG_MAX], resp[URD_MSG_MAX];
	struct urd_slot_hdr *s = slot_shm(vr, slot);
	struct urd_msg_hdr *rh = (struct urd_msg_hdr *)resp;
	struct vr_mr_prep *prep = NULL;
	uint32_t resp_len = sizeof(*rh);
	uint64_t t0 = urd_now_ns();
	uint32_t req_len;
	uint16_t op;

	/* Copy first, validate the copy. */
	memcpy(req, (uint8_t *)s + URD_SLOT_REQ_OFF, URD_MSG_MAX);
	req_len = ((struct urd_msg_hdr *)req)->len;
	op = ((struct urd_msg_hdr *)req)->op;
	if (op == fault_op)
		sleep_ms(fault_ms);
	mr_prepare(vr, req, req_len, &prep);
	memset(resp, 0, sizeof(struct urd_msg_hdr) + 256);
	rh->version = URD_ABI_VERSION;
	rh->op = op;

	big_lock(vr, next_hb);
	budget->locked_at = urd_now_ns();
	if (op == hold_op)
		sleep_ms(hold_ms);
	if (vr->stop) {
		stop_flush(vr);
		pthread_mutex_unlock(&vr->d->lock);
		mr_prep_free(prep);
		return -1;
	}
	rh->status = ctrl_dispatch_prep(vr, slot, req, req_len, resp, &resp_len, prep);
	if (resp_len < sizeof(*rh) || resp_len > URD_MSG_MAX)
		resp_len = sizeof(*rh);
	rh->len = resp_len;
	memcpy((uint8_t *)s + URD_SLOT_RESP_OFF, resp, resp_len);
	if (vr->ctx[slot])
		vr->ctx[slot]->last_req_seq = seq;
	__atomic_store_n(&vr->last_seq[slot], seq, __ATOMIC_RELAXED);
	if (!publish(s, seq)) {
		log_debug("vrnic %s slot %u: request %u (op %u) abandoned by the tenant; undoing it",
			  vr->name, slot, seq, op);
		if (rh->status == 0)
			ctrl_undo(vr, slot, op, resp);
	}
	engine_kick_if_work(vr->d);     /* a modify or a death gave the engine work */
	budget_unlock(vr->d, budget);
	note_slow(vr, op, t0, budget->locked_at, budget->unlocked_at);
	mr_prep_free(prep);
	if (!vr->vm)
		urd_futex_wake_all(&s->resp_seq);
	budget_spend(budget);
	return 0;
}

/* The control thread takes the big lock once per request (and per liveness
 * round), never across several: a tenant's burst of slow requests delays
 * other vRNICs by one request at a time, and the heartbeat ticks regardless. */
void *ctrl_thread_main(void *arg)
{
	struct urd_vrnic *vr = arg;
	struct urd_daemon *d = vr->d;
	uint64_t next_live = urd_now_ns() + LIVENESS_NS, next_hb = 0, t0;
	struct lock_budget budget = { (int64_t)CTRL_BURST_NS, urd_now_ns(), 0, 0 };
	uint32_t idle = 0;
	char tname[16];

	snprintf(tname, sizeof(tname), "urd-ctl:%.7s", vr->name);   /* names are 15 bytes at most */
	pthread_setname_np(pthread_self(), tname);
	fault_init();

	for (;;) {
		uint32_t bell = urd_load_acquire(&vr->hdr->ctrl_bell);
		uint64_t live;
		bool served = false, stop, reaping;

		for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
			uint32_t seq = urd_load_acquire(&slot_shm(vr, i)->req_seq);

			if (seq == __atomic_load_n(&vr->last_seq[i], __ATOMIC_RELAXED))
				continue;
			if (serve_slot(vr, i, seq, &next_hb, &budget))
				return NULL;
			served = true;
		}
		heartbeat_tick(vr, &next_hb);
		if (urd_now_ns() >= next_live) {
			liveness_check(vr, &next_hb);
			next_live = urd_now_ns() + LIVENESS_NS;
		}
		t0 = urd_now_ns();
		big_lock(vr, &next_hb);
		budget.locked_at = urd_now_ns();
		stop = vr->stop;
		live = __atomic_load_n(&vr->ctx_mask, __ATOMIC_RELAXED);
		for (uint32_t i = 0; !stop && i < URD_MAX_CTX; i++)
			if ((live >> i & 1) && vr->ctx[i])
				ctx_async_flush(vr->ctx[i]);
		/* a dead context's MRs and allocations, a batch per pass */
		reaping = !stop && mem_reap(vr, 256);
		if (stop)
			stop_flush(vr);
		engine_kick_if_work(d);
		budget_unlock(d, &budget);
		note_slow(vr, NO_OP, t0, budget.locked_at, budget.unlocked_at);
		if (stop)
			break;
		budget_spend(&budget);
		if (served || reaping) {
			idle = 0;
			continue;
		}
		if (vr->vm) {
			/* no futex reaches a guest's writes: poll, backing off to 1 ms */
			struct timespec ts = { 0, idle < 100 ? 20000 : 1000000 };

			idle++;
			nanosleep(&ts, NULL);
		} else {
			urd_futex_wait(&vr->hdr->ctrl_bell, bell, LIVENESS_NS);
		}
	}
	return NULL;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The engine thread: finds QPs with work through the doorbell bitmaps, runs
 * their send queues, keeps the timers of QPs waiting for an RNR or transport
 * retry, and sleeps when there is nothing to do.
 *
 * Cost does not grow with idle QPs: a pass looks at one summary word per
 * vRNIC, then only at the doorbell words and QPs whose bits are set.
 *
 * Sleep handshake (pairs with the library's doorbell):
 *   engine: read engine_wake values; set engine_sleeping; full fence;
 *           re-check every summary word; futex_waitv(engine_wake values).
 *   poster: publish the WQE; fetch_or its doorbell bits; full fence; if
 *           engine_sleeping, increment engine_wake and futex-wake it.
 * Either the engine sees the doorbell in its re-check, or the poster sees
 * engine_sleeping and changes engine_wake so the wait returns at once.
 */
#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "futex.h"
#include "log.h"
#include "unirdma/barrier.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
struct futex_waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t __reserved;
};
#endif

#define QP_BUDGET     32        /* WQEs per QP per step: fairness between QPs */
#define QP_BYTES      (256 << 10)       /* payload bytes per QP per step (one lock hold) */
#define VR_BYTES      (1 << 20)         /* payload bytes per vRNIC per pass */
#define SPIN_NS       (200ull * 1000)   /* keep polling this long after the last work */
#define HANDOFF_NS    (2ull * 1000 * 1000)      /* longest wait for a waiter to take the lock */
#define WAITV_MAX     128               /* futex_waitv's limit on words */

void engine_activate(struct vr_qp *qp)
{
	struct engine_vrnic *v = &qp->vr->eng;

	if (qp->eng.active)
		return;
	qp->eng.active = true;
	qp->eng.active_next = NULL;
	if (v->active_tail)
		v->active_tail->eng.active_next = qp;
	else
		v->active_head = qp;
	v->active_tail = qp;
	v->nactive++;
	qp->vr->d->eng.nactive++;
}

/* The QP at the head of its vRNIC's work list, taken off it. */
static struct vr_qp *active_pop(struct urd_vrnic *vr)
{
	struct vr_qp *qp = vr->eng.active_head;

	if (!qp)
		return NULL;
	vr->eng.active_head = qp->eng.active_next;
	if (!vr->eng.active_head)
		vr->eng.active_tail = NULL;
	vr->eng.nactive--;
	vr->d->eng.nactive--;
	qp->eng.active = false;
	return qp;
}

static void wait_unlink(struct urd_daemon *d, struct vr_qp *qp)
{
	for (struct vr_qp **pp = &d->eng.wait_head; *pp; pp = &(*pp)->eng.wait_next)
		if (*pp == qp) {
			*pp = qp->eng.wait_next;
			return;
		}
}

void engine_wait(struct vr_qp *qp, enum engine_wait why, uint64_t until_ns)
{
	struct urd_daemon *d = qp->vr->d;

	if (qp->eng.wait == QP_WAIT_NONE) {
		qp->eng.wait_next = d->eng.wait_head;
		d->eng.wait_head = qp;
	}
	qp->eng.wait = why;
	qp->eng.wait_until_ns = until_ns;
}

/* Take the QP off the timer list (a QP going to error or away must not stay
 * there: the list would keep a pointer to it). */
void engine_unwait(struct vr_qp *qp)
{
	if (qp->eng.wait != QP_WAIT_NONE) {
		wait_unlink(qp->vr->d, qp);
		qp->eng.wait = QP_WAIT_NONE;
	}
}

/* Unlink qp from the list at *head / *tail; false if it is not there. */
static bool list_unlink(struct vr_qp **head, struct vr_qp **tail, struct vr_qp *qp)
{
	struct vr_qp *prev = NULL;

	for (struct vr_qp *q = *head; q; prev = q, q = q->eng.active_next) {
		if (q != qp)
			continue;
		if (prev)
			prev->eng.active_next = q->eng.active_next;
		else
			*head = q->eng.active_next;
		if (*tail == q)
			*tail = prev;
		return true;
	}
	return false;
}

void engine_forget(struct vr_qp *qp)
{
	struct urd_daemon *d = qp->vr->d;

	if (qp->eng.active) {
		if (list_unlink(&qp->vr->eng.active_head, &qp->vr->eng.active_tail, qp)) {
			qp->vr->eng.nactive--;
			d->eng.nactive--;
		}
		qp->eng.active = false;
	}
	engine_unwait(qp);
	wire_qp_forget(qp);
	/* going away or to RESET: a message in pieces is dropped on both sides */
	free(qp->eng.xfer);
	qp->eng.xfer = NULL;
}

struct engine_xfer *engine_xfer_get(struct vr_qp *qp)
{
	if (!qp->eng.xfer)
		qp->eng.xfer = calloc(1, sizeof(*qp->eng.xfer));
	return qp->eng.xfer;
}

void engine_kick_if_work(struct urd_daemon *d)
{
	if (d->eng.nactive)
		engine_kick(d);
}

void engine_qp_error(struct vr_qp *qp, bool async)
{
	bool was = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	engine_unwait(qp);
	if (async && !was)
		ctx_post_async(qp->obj.ctx, IBV_EVENT_QP_FATAL, URD_OBJ_QP, qp->obj.handle);
	engine_activate(qp);            /* the engine flushes what is posted */
}

void engine_kick(struct urd_daemon *d)
{
	urd_fetch_add(&d->eng.kick, 1);
	urd_futex_wake_all(&d->eng.kick);
}

/* Move QPs whose doorbell bits are set onto the active list. */
static bool take_doorbells(struct urd_vrnic *vr)
{
	struct urd_doorbells *db = vr->db;
	uint64_t sum;
	bool found = false;

	if (!urd_load_relaxed(&db->summary))
		return false;
	sum = urd_exchange(&db->summary, 0);
	while (sum) {
		uint32_t w = (uint32_t)__builtin_ctzll(sum);
		uint64_t bits;

		sum &= sum - 1;
		bits = urd_exchange(&db->bits[w], 0);
		while (bits) {
			uint32_t b = (uint32_t)__builtin_ctzll(bits);
			struct vr_qp *qp = vr->qp_slots[w * 64 + b];

			bits &= bits - 1;
			if (qp) {               /* a bit for an empty slot finds nothing */
				engine_activate(qp);
				found = true;
			}
		}
	}
	return found;
}

/* True if a thread is blocked on the big lock.  glibc's mutex word is 0
 * (free), 1 (held) or 2 (held, waiters sleep on it): the engine reads it so
 * that every pthread_mutex_lock(&d->lock) in the daemon is served without a
 * wrapper around it. */
static bool lock_contended(pthread_mutex_t *m)
{
#ifdef __GLIBC__
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) > 1;
#else
	(void)m;
	return true;
#endif
}

static bool lock_taken(pthread_mutex_t *m)
{
#ifdef __GLIBC__
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 0;
#else
	(void)m;
	return false;
#endif
}

/* Take the big lock without marking it contended.  glibc's slow path
 * leaves the word at 2 while we hold it, as if somebody waited, so first try
 * (trylock never writes 2) while the holder finishes; block only when it
 * takes long, and remember that the word may then be ours. */
static void engine_lock(struct urd_daemon *d)
{
	for (int i = 0; i < 64; i++) {
		if (!pthread_mutex_trylock(&d->lock))
			return;
		sched_yield();
	}
	pthread_mutex_lock(&d->lock);
	d->eng.lock_slow = true;
}

/* Release the big lock.  A glibc mutex is not fair: unlock wakes a waiter,
 * but an engine that locks again at once wins the race nearly always, and
 * control, admin, metrics and heartbeats would wait behind every pass.  So
 * when someone waits, let it take the lock before we may try again. */
static void engine_unlock(struct urd_daemon *d)
{
	bool contended = lock_contended(&d->lock);
	uint64_t t0, wait = HANDOFF_NS;

	if (!contended) {
		pthread_mutex_unlock(&d->lock);
		return;
	}
	if (d->eng.lock_slow) {
		d->eng.lock_slow = false;
		wait = HANDOFF_NS / 40; /* the 2 may be ours: a short grace only */
	}
	pthread_mutex_unlock(&d->lock);
	d->eng.yields++;     /* only the engine writes it; read racily */
	t0 = urd_now_ns();
	while (!lock_taken(&d->lock) && urd_now_ns() - t0 < wait)
		sched_yield();
}

/* Between two steps: hand the lock over if someone waits for it.  True if
 * it did (time passed: the caller's idea of now is stale). */
static bool engine_yield(struct urd_daemon *d)
{
	if (!lock_contended(&d->lock))
		return false;
	engine_unlock(d);
	engine_lock(d);
	return true;
}

/* One pass; returns true if it did anything.  Big lock held, but released
 * and taken again between QPs when somebody waits for it: each QP's step is
 * bounded (QP_BUDGET WQEs, about QP_BYTES bytes) and each vRNIC's share of a
 * pass too (VR_BYTES), so a tenant with huge messages or many QPs delays the
 * others by a bounded amount.  Everything stays on the daemon's lists while
 * the lock is free, where engine_forget finds it. */
bool engine_pass(struct urd_daemon *d, uint64_t now, uint64_t *next_timer)
{
	uint32_t start = d->eng.next_vr;
	struct vr_qp *qp;
	bool did = false;

	for (uint32_t i = 0; i < d->vrnic_hi; i++)
		if (d->vrnics[i])
			did |= take_doorbells(d->vrnics[i]);

	*next_timer = UINT64_MAX;
	for (struct vr_qp **pp = &d->eng.wait_head; (qp = *pp);) {
		if (qp->eng.wait_until_ns <= now) {
			*pp = qp->eng.wait_next;
			qp->eng.wait = QP_WAIT_NONE;
			engine_activate(qp);
			did = true;
		} else {
			if (qp->eng.wait_until_ns < *next_timer)
				*next_timer = qp->eng.wait_until_ns;
			pp = &qp->eng.wait_next;
		}
	}

	/* each vRNIC in turn, starting one further each pass */
	d->eng.next_vr = (start + 1) % URD_MAX_VRNICS;
	for (uint32_t k = 0; k < URD_MAX_VRNICS && d->eng.nactive; k++) {
		uint32_t idx = (start + k) % URD_MAX_VRNICS;
		struct urd_vrnic *vr = d->vrnics[idx];
		int64_t budget = VR_BYTES;
		uint32_t n;

		if (!vr || !vr->eng.active_head)
			continue;
		did = true;
		/* at most the QPs there now: the ones with work left go back
		 * to the tail; the ones the budget did not reach stay first */
		for (n = vr->eng.nactive; n && budget > 0 && (qp = active_pop(vr)); n--) {
			int64_t bytes = QP_BYTES;

			if (qp->eng.wait != QP_WAIT_NONE) {
				if (qp->eng.wait_until_ns < *next_timer)
					*next_timer = qp->eng.wait_until_ns;
				continue;       /* its timer re-activates it */
			}
			if (qp->state == IBV_QPS_ERR ? flush_process(qp, QP_BUDGET, &bytes) :
			    req_process(qp, now, QP_BUDGET, &bytes))
				engine_activate(qp);
			else if (qp->eng.wait != QP_WAIT_NONE && qp->eng.wait_until_ns < *next_timer)
				*next_timer = qp->eng.wait_until_ns;
			budget -= QP_BYTES - bytes;
			/* RNR and retry timers are armed from now: after a
			 * hand-over, which may take milliseconds, they would
			 * fire early */
			if (engine_yield(d)) {
				now = urd_now_ns();
				/* the vRNIC may have gone meanwhile */
				if (d->vrnics[idx] != vr)
					break;
			}
		}
	}
	return did;
}

static void waitv_set(struct futex_waitv *w, uint32_t *word, uint32_t val)
{
	w->val = val;
	w->uaddr = (uintptr_t)word;
	w->flags = FUTEX_32;
	w->__reserved = 0;
}

/* futex_waitv takes at most 128 words: the engine's kick word and 127
 * vRNICs.  The words of the vRNICs beyond that go to a second thread, the
 * waiter, which sleeps on them (and its own kick word) and kicks the engine
 * when one changes.  It waits with the values the engine read before its
 * re-check of the doorbells, so no wake-up is lost: a poster that bumped a
 * word after that read either makes the waiter's futex_waitv return at once
 * or wakes it.  The list (d->eng.waiter_list, WAITV_MAX - 1 entries, made
 * with the thread) is the big lock's. */

static_assert(URD_MAX_VRNICS <= 2 * (WAITV_MAX - 1), "two futex_waitv lists hold every vRNIC");

static void *waiter_main(void *arg)
{
	struct urd_daemon *d = arg;
	struct futex_waitv w[WAITV_MAX];
	uint32_t seen = 0, n;
	bool first = true;

	pthread_setname_np(pthread_self(), "urd-engine-wait");
	for (;;) {
		uint32_t gen;
		long r;

		pthread_mutex_lock(&d->lock);
		if (d->stopping) {
			pthread_mutex_unlock(&d->lock);
			break;
		}
		gen = urd_load_acquire(&d->eng.waiter_kick);
		n = 0;
		if (first || gen != seen) {     /* a list from a new engine sleep */
			n = d->eng.waiter_n;
			memcpy(w + 1, d->eng.waiter_list, n * sizeof(w[0]));
			seen = gen;
			first = false;
		}
		pthread_mutex_unlock(&d->lock);
		waitv_set(&w[0], &d->eng.waiter_kick, gen);
		r = syscall(SYS_futex_waitv, w, 1 + n, 0, NULL, CLOCK_MONOTONIC);
		if (r > 0) {
			engine_kick(d);         /* a vRNIC's word */
		} else if (r < 0 && errno == EAGAIN && urd_load_acquire(&d->eng.waiter_kick) == gen) {
			/* a vRNIC's word changed before we slept: if our own word had
			 * changed, the engine slept again and re-checked the doorbells */
			engine_kick(d);
		} else if (r < 0 && errno == EFAULT) {
			engine_kick(d);         /* a region went away: the engine rebuilds the list */
		}
	}
	return NULL;
}

static void engine_sleep(struct urd_daemon *d, uint64_t next_timer)
{
	struct futex_waitv w[WAITV_MAX], over[WAITV_MAX - 1];
	struct urd_vrnic *vrs[URD_MAX_VRNICS];
	uint32_t n = 0, nv = 0, nover = 0;
	bool poll_only = false, abort_sleep = false;
	struct timespec ts;
	uint64_t now = urd_now_ns(), until;

	engine_lock(d);
	waitv_set(&w[n++], &d->eng.kick, urd_load_acquire(&d->eng.kick));
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		struct urd_vrnic *vr = d->vrnics[i];
		uint32_t *word;

		if (!vr)
			continue;
		if (vr->vm)      /* not the header flag: tenant-writable */
			poll_only = true;
		word = &vr->hdr->engine_wake;
		if (n < WAITV_MAX)
			waitv_set(&w[n++], word, urd_load_acquire(word));
		else
			waitv_set(&over[nover++], word, urd_load_acquire(word));
		vrs[nv++] = vr;
		urd_store_relaxed(&vr->hdr->engine_sleeping, 1);
	}
	urd_smp_mb();
	for (uint32_t i = 0; i < nv; i++)
		if (urd_load_relaxed(&vrs[i]->db->summary))
			abort_sleep = true;
	if (d->eng.nactive)
		abort_sleep = true;
	/* a timer that expired since the pass: until - now below would wrap
	 * into an endless sleep while a QP waits on its RNR/retry timer */
	if (next_timer <= now)
		abort_sleep = true;
	if (!abort_sleep && nover) {
		if (!d->eng.waiter_list)
			d->eng.waiter_list = calloc(WAITV_MAX - 1, sizeof(*d->eng.waiter_list));
		if (!d->eng.waiter_started && d->eng.waiter_list &&
		    !pthread_create(&d->eng.waiter, NULL, waiter_main, d))
			d->eng.waiter_started = true;
		if (!d->eng.waiter_started) {
			poll_only = true;       /* no thread: poll the vRNICs it would watch */
		} else {
			memcpy(d->eng.waiter_list, over, nover * sizeof(over[0]));
			d->eng.waiter_n = nover;
			urd_fetch_add(&d->eng.waiter_kick, 1);
			urd_futex_wake_all(&d->eng.waiter_kick);
		}
	}
	engine_unlock(d);

	if (!abort_sleep) {
		until = next_timer;
		if (poll_only && until > now + 50000)
			until = now + 50000;    /* VM tenants cannot wake us: poll every 50 us */
		if (until == UINT64_MAX)
			until = now + 1000000000ull;
		/* an absolute deadline: the time spent since now counts too */
		ts = urd_ns_timespec(urd_now_ns() + (until - now));
		syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC);
	}

	engine_lock(d);
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			urd_store_relaxed(&d->vrnics[i]->hdr->engine_sleeping, 0);
	engine_unlock(d);
}

/* glibc 2.36 has no sched_setattr(); the kernel's struct, first version */
struct urd_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

#define THREAD_SLICE_NS (100ull * 1000)      /* the shortest slice the kernel allows */

void engine_thread_init(const char *name)
{
	struct urd_sched_attr a = { .size = sizeof(a), .sched_policy = SCHED_OTHER };

	pthread_setname_np(pthread_self(), name);       /* for top, perf, bench placement */
	/* keep the niceness the daemon was started with */
	errno = 0;
	a.sched_nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	if (errno)
		a.sched_nice = 0;
	a.sched_runtime = THREAD_SLICE_NS;
	if (syscall(SYS_sched_setattr, 0, &a, 0))
		log_debug("%s: no short scheduler slice: %s", name, strerror(errno));
}

static void *engine_main(void *arg)
{
	struct urd_daemon *d = arg;
	uint64_t last_work = urd_now_ns();
	uint32_t spins = 0;

	engine_thread_init("urd-engine");

	while (!d->stopping) {
		uint64_t now = urd_now_ns(), next_timer;
		bool did;

		engine_lock(d);
		did = engine_pass(d, now, &next_timer);
		d->eng.passes += did;
		engine_unlock(d);
		if (did) {
			last_work = now;
			spins = 0;
			continue;
		}
		if (now - last_work < SPIN_NS && next_timer > now) {
			/* work tends to come in bursts: poll a little before sleeping,
			 * yielding now and then so 2 cores serve 3 spinning parties */
			if (++spins % 16 == 0)
				sched_yield();
			else
				urd_cpu_relax();
			continue;
		}
		if (next_timer <= now)
			continue;
		d->eng.sleeps++;
		engine_sleep(d, next_timer);
		last_work = urd_now_ns();
	}
	return NULL;
}

int engine_start(struct urd_daemon *d)
{
	int ret = pthread_create(&d->eng.thread, NULL, engine_main, d);

	return -ret;
}

void engine_stop(struct urd_daemon *d)
{
	d->stopping = 1;
	engine_kick(d);
	pthread_join(d->eng.thread, NULL);
	if (d->eng.waiter_started) {
		urd_fetch_add(&d->eng.waiter_kick, 1);
		urd_futex_wake_all(&d->eng.waiter_kick);
		pthread_join(d->eng.waiter, NULL);
		d->eng.waiter_started = false;
	}
	free(d->eng.waiter_list);
	d->eng.waiter_list = NULL;
}

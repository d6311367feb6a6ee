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
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
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

#define QP_BUDGET     32        /* WQEs per QP per pass: fairness between QPs */
#define SPIN_NS       (200ull * 1000)   /* keep polling this long after the last work */

void engine_activate(struct urd_qp *qp)
{
	struct urd_daemon *d = qp->vr->d;

	if (qp->active)
		return;
	qp->active = true;
	qp->active_next = NULL;
	if (d->active_tail)
		d->active_tail->active_next = qp;
	else
		d->active_head = qp;
	d->active_tail = qp;
}

static void wait_unlink(struct urd_daemon *d, struct urd_qp *qp)
{
	for (struct urd_qp **pp = &d->wait_head; *pp; pp = &(*pp)->wait_next)
		if (*pp == qp) {
			*pp = qp->wait_next;
			return;
		}
}

void engine_wait(struct urd_qp *qp, enum urd_qp_wait why, uint64_t until_ns)
{
	struct urd_daemon *d = qp->vr->d;

	if (qp->wait == QP_WAIT_NONE) {
		qp->wait_next = d->wait_head;
		d->wait_head = qp;
	}
	qp->wait = why;
	qp->wait_until_ns = until_ns;
}

/* Take the QP off the timer list (a QP going to error or away must not stay
 * there: the list would keep a pointer to it). */
void engine_unwait(struct urd_qp *qp)
{
	if (qp->wait != QP_WAIT_NONE) {
		wait_unlink(qp->vr->d, qp);
		qp->wait = QP_WAIT_NONE;
	}
}

void engine_forget(struct urd_qp *qp)
{
	struct urd_daemon *d = qp->vr->d;

	if (qp->active) {
		struct urd_qp *prev = NULL;

		for (struct urd_qp *q = d->active_head; q; prev = q, q = q->active_next) {
			if (q != qp)
				continue;
			if (prev)
				prev->active_next = q->active_next;
			else
				d->active_head = q->active_next;
			if (d->active_tail == q)
				d->active_tail = prev;
			break;
		}
		qp->active = false;
	}
	engine_unwait(qp);
}

void engine_kick(struct urd_daemon *d)
{
	urd_fetch_add(&d->engine_kick, 1);
	urd_futex_wake_all(&d->engine_kick);
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
			struct urd_qp *qp = vr->qp_slots[w * 64 + b];

			bits &= bits - 1;
			if (qp) {               /* a bit for an empty slot finds nothing */
				engine_activate(qp);
				found = true;
			}
		}
	}
	return found;
}

/* One pass; returns true if it did anything.  Big lock held. */
static bool engine_pass(struct urd_daemon *d, uint64_t now, uint64_t *next_timer)
{
	struct urd_qp *list, *qp;
	bool did = false;

	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			did |= take_doorbells(d->vrnics[i]);

	*next_timer = UINT64_MAX;
	for (struct urd_qp **pp = &d->wait_head; (qp = *pp);) {
		if (qp->wait_until_ns <= now) {
			*pp = qp->wait_next;
			qp->wait = QP_WAIT_NONE;
			engine_activate(qp);
			did = true;
		} else {
			if (qp->wait_until_ns < *next_timer)
				*next_timer = qp->wait_until_ns;
			pp = &qp->wait_next;
		}
	}

	list = d->active_head;
	d->active_head = d->active_tail = NULL;
	while ((qp = list)) {
		list = qp->active_next;
		qp->active = false;
		if (qp->wait != QP_WAIT_NONE) {
			if (qp->wait_until_ns < *next_timer)
				*next_timer = qp->wait_until_ns;
			continue;       /* its timer re-activates it */
		}
		did = true;
		if (req_process(qp, now, QP_BUDGET))
			engine_activate(qp);
		else if (qp->wait != QP_WAIT_NONE && qp->wait_until_ns < *next_timer)
			*next_timer = qp->wait_until_ns;
	}
	return did;
}

static void engine_sleep(struct urd_daemon *d, uint64_t next_timer)
{
	struct futex_waitv w[URD_MAX_VRNICS + 1];
	struct urd_vrnic *vrs[URD_MAX_VRNICS];
	uint32_t n = 0, nv = 0;
	bool poll_only = false, abort_sleep = false;
	struct timespec ts;
	uint64_t now = urd_now_ns(), until;

	pthread_mutex_lock(&d->lock);
	w[n].val = urd_load_acquire(&d->engine_kick);
	w[n].uaddr = (uintptr_t)&d->engine_kick;
	w[n].flags = FUTEX_32;
	w[n].__reserved = 0;
	n++;
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		struct urd_vrnic *vr = d->vrnics[i];

		if (!vr)
			continue;
		if (vr->vm)      /* not the header flag: tenant-writable */
			poll_only = true;
		w[n].val = urd_load_acquire(&vr->hdr->engine_wake);
		w[n].uaddr = (uintptr_t)&vr->hdr->engine_wake;
		w[n].flags = FUTEX_32;
		w[n].__reserved = 0;
		n++;
		vrs[nv++] = vr;
		urd_store_relaxed(&vr->hdr->engine_sleeping, 1);
	}
	urd_smp_mb();
	for (uint32_t i = 0; i < nv; i++)
		if (urd_load_relaxed(&vrs[i]->db->summary))
			abort_sleep = true;
	if (d->active_head)
		abort_sleep = true;
	/* a timer that expired since the pass: until - now below would wrap
	 * into an endless sleep while a QP waits on its RNR/retry timer */
	if (next_timer <= now)
		abort_sleep = true;
	pthread_mutex_unlock(&d->lock);

	if (!abort_sleep) {
		until = next_timer;
		if (poll_only && until > now + 50000)
			until = now + 50000;    /* VM tenants cannot wake us: poll every 50 us */
		if (until == UINT64_MAX)
			until = now + 1000000000ull;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)((until - now) / 1000000000ull);
		ts.tv_nsec += (long)((until - now) % 1000000000ull);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC);
	}

	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			urd_store_relaxed(&d->vrnics[i]->hdr->engine_sleeping, 0);
	pthread_mutex_unlock(&d->lock);
}

static void *engine_main(void *arg)
{
	struct urd_daemon *d = arg;
	uint64_t last_work = urd_now_ns();
	uint32_t spins = 0;

	pthread_setname_np(pthread_self(), "urd-engine");       /* for top, perf, bench placement */

	while (!d->stopping) {
		uint64_t now = urd_now_ns(), next_timer;
		bool did;

		pthread_mutex_lock(&d->lock);
		did = engine_pass(d, now, &next_timer);
		d->engine_passes += did;
		pthread_mutex_unlock(&d->lock);
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
		d->engine_sleeps++;
		engine_sleep(d, next_timer);
		last_work = urd_now_ns();
	}
	return NULL;
}

int engine_start(struct urd_daemon *d)
{
	int ret = pthread_create(&d->engine_thread, NULL, engine_main, d);

	return -ret;
}

void engine_stop(struct urd_daemon *d)
{
	d->stopping = 1;
	engine_kick(d);
	pthread_join(d->engine_thread, NULL);
}

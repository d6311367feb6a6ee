/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The engine's interface to the control plane: the only engine header that
 * daemon/ may include.
 *
 * The engine plays the RNIC.  The control plane (daemon/: mailbox handlers,
 * admin, metrics) creates and destroys objects and calls the engine through
 * the functions below; the engine never calls back into it.  It calls down
 * only into the object model's services in core/ (tables and lookups,
 * async events and CQ notification) and into common/.  tests/check-layering.sh
 * checks both walls.
 *
 * The engine's own state lives in three structs embedded in the model's
 * objects (core/objects.h): struct engine in the daemon, struct engine_vrnic
 * in each vRNIC, struct engine_qp in each QP.  Only engine/ writes them; the
 * control plane reads the counters (metrics) under the big lock.
 */
#ifndef UNIRDMA_ENGINE_H
#define UNIRDMA_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct urd_daemon;
struct urd_vrnic;
struct vr_qp;
struct engine_xfer;
struct futex_waitv;

/* Why a QP's send queue is parked on the timer list. */
enum engine_wait { QP_WAIT_NONE = 0, QP_WAIT_RNR, QP_WAIT_RETRY, QP_WAIT_QOS };

/* Per QP. */
struct engine_qp {
	bool active;                    /* on the work list */
	struct vr_qp *active_next;
	enum engine_wait wait;
	uint64_t wait_until_ns;
	uint32_t rnr_left, retry_left;  /* retries left for the WQE at the SQ head */
	uint32_t retry_head;            /* SQ index the retry counters belong to */
	bool retry_armed;
	struct vr_qp *wait_next;        /* on the timer list while wait != NONE */
	struct engine_xfer *xfer;       /* a message in pieces (internal.h), or NULL */
};

/* Per vRNIC: its QPs with work, in the order they get their turns.  A pass
 * gives each vRNIC a budget of bytes; QPs it did not reach keep their place,
 * untouched, so that the cost of a pass follows the work done, not the
 * number of QPs waiting. */
struct engine_vrnic {
	struct vr_qp *active_head, *active_tail;
	uint32_t nactive;
};

/* Per daemon: the engine thread, its lists and counters. */
struct engine {
	pthread_t thread;
	uint32_t nactive;               /* QPs on the vRNICs' work lists */
	uint32_t next_vr;               /* the vRNIC the next pass starts with */
	struct vr_qp *wait_head;        /* QPs waiting for an RNR, retry or QoS timer */
	uint32_t kick;                  /* private futex word: the control plane wakes the engine */
	uint64_t copied_bytes;          /* every byte moved (payload, GRH, atomic results) */
	uint64_t passes, sleeps;
	uint64_t xfer_token;            /* names messages in pieces */
	uint64_t yields;                /* times it handed the big lock to a waiter */
	bool lock_slow;                 /* took the lock by blocking (engine.c) */
	/* with more vRNICs than one futex_waitv takes, a second thread waits on
	 * the rest and kicks the engine */
	pthread_t waiter;
	bool waiter_started;
	uint32_t waiter_kick;           /* the waiter's private futex word */
	uint32_t waiter_n;              /* words the engine handed it, under the big lock */
	struct futex_waitv *waiter_list;        /* those words (engine.c) */
};

/* The engine thread (engine.c). */
int engine_start(struct urd_daemon *d);
void engine_stop(struct urd_daemon *d);
void engine_kick(struct urd_daemon *d);        /* wake it: new work or a changed vRNIC */
void engine_kick_if_work(struct urd_daemon *d); /* wake it if a QP has work (big lock held) */

/* QPs; the big lock is held for each of these. */
void engine_activate(struct vr_qp *qp);       /* the SQ has work (or must be flushed) */
void engine_forget(struct vr_qp *qp);         /* qp is going away: off every list */
void engine_unwait(struct vr_qp *qp);         /* off the timer list */
/* The QP enters the error state: its timers stop, its queues are flushed by
 * the engine; async: post IBV_EVENT_QP_FATAL (the first time). */
void engine_qp_error(struct vr_qp *qp, bool async);

/* For fuzz harnesses and unit tests that run the engine without its thread:
 * one pass over the work list (big lock held); true if it did work, and
 * *next_timer the earliest timer (UINT64_MAX: none). */
bool engine_pass(struct urd_daemon *d, uint64_t now, uint64_t *next_timer);

#endif

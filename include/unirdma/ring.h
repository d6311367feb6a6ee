/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ring.h - one queue API for every ring in the vRNIC region (SQ, RQ, SRQ,
 * CQ), used by the library (lib/), the engine (engine/) and the daemon's
 * forwarding path (daemon/fwd.c).  Modelled on Linux rxe_queue.h.
 *
 * Notes (read before touching a ring)
 * - Layout (abi.h): a struct urd_ring_hdr, then n slots of 1 << shift bytes;
 *   n is a power of two.  Indices are free-running 32-bit counters; an index
 *   names slot (index & (n - 1)); the ring is empty when prod == cons and
 *   full when prod - cons == n.  prod and cons sit on separate cache lines.
 * - Who owns which index:
 *     ring          producer (writes prod)     consumer (writes cons)
 *     SQ, RQ, SRQ   tenant (library)           engine
 *     CQ            engine                     tenant (library)
 *   Each side keeps its own index privately in struct urd_queue.own and
 *   only ever STORES it into the header (urd_queue_publish_prod(),
 *   urd_queue_release_cons()); it reads its own index back from the region
 *   only when it attaches (urd_queue_attach_*()).  The other side's index
 *   is read from the header with an acquire that pairs with the other
 *   side's release, and cached in .seen where a side reads it once per
 *   batch (the engine's SQ prod, the CQ's cons, the library's SQ/RQ cons).
 * - The API, by role:
 *     both      urd_queue_init, urd_queue_slot(_fixed), urd_queue_attach_prod/_cons
 *     producer  urd_queue_room (cached cons), urd_queue_publish_prod,
 *               urd_queue_needs_doorbell (SQ only: hides the fence)
 *     consumer  urd_queue_load_prod + urd_queue_prod_ok, urd_queue_filled
 *               (clamped), urd_queue_release_cons, urd_queue_advance_cons
 *     proxy     urd_queue_cons_clamped (see Proxies)
 * - Trust: the tenant can write every byte of the header.  The daemon reads
 *   the tenant's index only through the functions below, which bound it by
 *   the daemon's own index: an honest producer is at most n ahead of the
 *   consumer, and an honest consumer at most n behind the producer.  What a
 *   caller does with an impossible value (clamp, treat as empty or full,
 *   fail the QP) is its policy, but the bound is computed here.  The library
 *   applies the same bounds to the engine's indices: a scribbled word makes
 *   the tenant misbehave, never read or write outside its ring.
 * - Every slot address is masked (urd_queue_slot()), so no index, however
 *   wrong, addresses memory outside the ring.
 * - Proxies: daemon/fwd.c plays the tenant on the engine's rings (producer
 *   of SQ/RQ/SRQ, consumer of the CQ) with the engine's struct, whose .own is
 *   then the OTHER side's index; lib/event.c plays the dead engine on the
 *   library's rings.  Both use the same bounds.
 * - Nothing here takes a lock or adds a fence beyond the ones named; the
 *   functions are static inline for the data path.
 */
#ifndef UNIRDMA_RING_H
#define UNIRDMA_RING_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "unirdma/abi.h"
#include "unirdma/barrier.h"

struct urd_queue {
	struct urd_ring_hdr *hdr;       /* in the region: shared, tenant-writable */
	uint8_t *slots;                 /* hdr + URD_RING_HDR_SIZE */
	uint32_t n;                     /* slots, a power of two */
	uint32_t shift;                 /* log2 of the slot size */
	uint32_t own;                   /* this side's index (see Notes), private */
	uint32_t seen;                  /* the other side's index as last read */
};

/* A ring at base (its header) of n slots of 1 << shift bytes; both indices
 * at 0 (a fresh ring; the library then syncs from the region). */
static inline void urd_queue_init(struct urd_queue *q, void *base, uint32_t n, uint32_t shift)
{
	q->hdr = (struct urd_ring_hdr *)base;
	q->slots = (uint8_t *)base + URD_RING_HDR_SIZE;
	q->n = n;
	q->shift = shift;
	q->own = 0;
	q->seen = 0;
}

/* The library at attach, and after a RESET (the daemon may have rewound the
 * ring): adopt the indices in the region, the one place a side reads its
 * own index back.  Producer: .own = prod, .seen = cons. */
static inline void urd_queue_attach_prod(struct urd_queue *q)
{
	q->own = urd_load_acquire(&q->hdr->prod);
	q->seen = urd_load_acquire(&q->hdr->cons);
}

/* The same for a consumer: .own = cons. */
static inline void urd_queue_attach_cons(struct urd_queue *q)
{
	q->own = urd_load_acquire(&q->hdr->cons);
}

/* The slot of index idx: masked, so any idx stays inside the ring. */
static inline void *urd_queue_slot(const struct urd_queue *q, uint32_t idx)
{
	return q->slots + ((size_t)(idx & (q->n - 1)) << q->shift);
}

/* The same where the caller knows the slot size at compile time (shift ==
 * q->shift, a constant: the library's CQ, one CQE a slot), so that the
 * shift is an immediate in the data path's address computation. */
static inline void *urd_queue_slot_fixed(const struct urd_queue *q, uint32_t idx, uint32_t shift)
{
	return q->slots + ((size_t)(idx & (q->n - 1)) << shift);
}

/* ------------------------------------------------------------ producer */

/* Producer: free slots, never more than lim (<= n) outstanding.  cons is
 * the consumer's: an impossible value (more than lim outstanding, or ahead
 * of our prod, which wraps to a huge count) reads as full.  The consumer's
 * cons only moves forward, so the last value read (.seen) is a safe lower
 * bound: its line, which the consumer keeps writing, is read again (acquire,
 * pairing with urd_queue_release_cons()) only when the ring looks full by
 * that bound. */
static inline uint32_t urd_queue_room(struct urd_queue *q, uint32_t lim)
{
	uint32_t used = q->own - q->seen;

	if (used >= lim) {
		q->seen = urd_load_acquire(&q->hdr->cons);
		used = q->own - q->seen;
	}
	return used >= lim ? 0 : lim - used;
}

/* Producer: every slot before prod is written; the consumer may take them.
 * Pairs with the consumer's urd_queue_load_prod() / urd_queue_filled(). */
static inline void urd_queue_publish_prod(struct urd_queue *q, uint32_t prod)
{
	urd_store_release(&q->hdr->prod, prod);
}

/* Producer of a send queue, right after urd_queue_publish_prod(): true if the
 * doorbell must ring, false while the engine runs this queue (abi.h,
 * urd_ring_hdr.polling) and will read prod again by itself.  The full fence
 * orders our store of prod before the read of the flag; the engine clears
 * the flag, fences, then reads prod (Dekker: one side always sees the other).
 * Like liburing's sq_ring_needs_enter(). */
static inline bool urd_queue_needs_doorbell(const struct urd_queue *q)
{
	urd_smp_mb();
	return !urd_load_relaxed(&q->hdr->polling);
}

/* Producer's view of the consumer's index, for a side that reads the slots
 * between cons and its own prod (fwd.c taking CQEs for a tenant, the library
 * flushing its own queues for a dead engine): at most n behind .own, so a
 * lying cons yields at most a ring of the newest slots.  Acquire: pairs with
 * urd_queue_release_cons(). */
static inline uint32_t urd_queue_cons_clamped(const struct urd_queue *q)
{
	uint32_t cons = urd_load_acquire(&q->hdr->cons);

	if (q->own - cons > q->n)
		cons = q->own - q->n;
	return cons;
}

/* ------------------------------------------------------------ consumer */

/* Consumer: the producer's index, raw (acquire: pairs with
 * urd_queue_publish_prod(); the slots before it are visible).  Check it
 * with urd_queue_prod_ok() before using it as a bound. */
static inline uint32_t urd_queue_load_prod(const struct urd_queue *q)
{
	return urd_load_acquire(&q->hdr->prod);
}

/* Consumer: true if prod is a value an honest producer can have written, at
 * most n ahead of our cons (.own). */
static inline bool urd_queue_prod_ok(const struct urd_queue *q, uint32_t prod)
{
	return prod - q->own <= q->n;
}

/* Consumer: entries ready to take, read from the producer's index now, at
 * most n (a producer index further ahead is a lie: n is the most that can
 * be true, and every slot is masked anyway). */
static inline uint32_t urd_queue_filled(const struct urd_queue *q)
{
	uint32_t avail = urd_queue_load_prod(q) - q->own;

	return avail > q->n ? q->n : avail;
}

/* Consumer: the slots before cons are free for the producer again (we read
 * all we need from them).  Pairs with the producer's acquire of cons in
 * urd_queue_room(). */
static inline void urd_queue_release_cons(struct urd_queue *q, uint32_t cons)
{
	urd_store_release(&q->hdr->cons, cons);
}

/* Consumer: take the entry at .own and free its slot. */
static inline void urd_queue_advance_cons(struct urd_queue *q)
{
	q->own++;
	urd_queue_release_cons(q, q->own);
}

#endif

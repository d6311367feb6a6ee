/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* All atomics that cross the vRNIC region go through this header.
 *
 * The region is shared between processes that do not trust each other (a tenant
 * and the daemon), so every shared index is read with an acquire that pairs
 * with the writer's release: the writer fills a slot, then publishes the index
 * with urd_store_release(); the reader loads the index with urd_load_acquire()
 * and only then reads the slot.  Anything read from the region by the daemon is
 * still untrusted after the acquire: it must be copied and validated.
 */
#ifndef UNIRDMA_BARRIER_H
#define UNIRDMA_BARRIER_H

#include <stdint.h>

#define urd_load_relaxed(p)      __atomic_load_n((p), __ATOMIC_RELAXED)
#define urd_store_relaxed(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Pairs with urd_store_release() by the writer of *p. */
#define urd_load_acquire(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
/* Publishes every store before it to a reader that uses urd_load_acquire(). */
#define urd_store_release(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define urd_fetch_or(p, v)       __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define urd_fetch_add(p, v)      __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define urd_exchange(p, v)       __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
/* Full fence for the Dekker-style "set flag, then re-check the other side's
 * flag" handshakes (engine sleep vs poster doorbell). */
#define urd_smp_mb()             __atomic_thread_fence(__ATOMIC_SEQ_CST)

static inline void urd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif

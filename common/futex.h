/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Waiting and time, for the library and the daemon alike: shared futex calls
 * on words inside a vRNIC region, and the monotonic clock that every timeout
 * and deadline is counted in.
 *
 * The region is a MAP_SHARED file that several processes map, so these
 * futexes are shared ones: FUTEX_PRIVATE_FLAG must never be used.  A VM guest
 * has no futex shared with the host (URD_REGION_VM): its callers poll. */
#ifndef UNIRDMA_FUTEX_H
#define UNIRDMA_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t urd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds (a length, or an absolute CLOCK_MONOTONIC deadline) as a
 * timespec. */
static inline struct timespec urd_ns_timespec(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

/* Waits while *word == expected, at most timeout_ns (0: forever).  0 when
 * woken, else -errno: EAGAIN (the word had changed), EINTR, ETIMEDOUT; every
 * caller re-checks its condition either way. */
static inline int urd_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = urd_ns_timespec(timeout_ns);

	if (syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns ? &ts : NULL, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* Wakes at most n waiters on word: how many it woke, or -errno. */
static inline int urd_futex_wake(uint32_t *word, int n)
{
	long r = syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);

	return r < 0 ? -errno : (int)r;
}

static inline int urd_futex_wake_all(uint32_t *word)
{
	return urd_futex_wake(word, INT_MAX);
}

#endif

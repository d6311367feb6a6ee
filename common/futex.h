/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared (non-private) futex calls on words inside a vRNIC region.  The region
 * is mapped by several processes, so FUTEX_PRIVATE_FLAG must never be used. */
#ifndef UNIRDMA_FUTEX_H
#define UNIRDMA_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Waits while *word == expected, at most timeout_ns (0: forever). */
static inline int urd_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull) };

	if (syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout_ns ? &ts : NULL, NULL, 0) < 0)
		return -errno;
	return 0;
}

static inline int urd_futex_wake(uint32_t *word, int n)
{
	long r = syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);

	return r < 0 ? -errno : (int)r;
}

static inline int urd_futex_wake_all(uint32_t *word)
{
	return urd_futex_wake(word, INT_MAX);
}

static inline uint64_t urd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* SIGBUS guard for the daemon's mappings of tenant-writable files.
 *
 * A tenant holds its region file open read-write, so it can ftruncate() it
 * or punch holes in it and then fill its file system.  The daemon's next
 * access to such a page would raise SIGBUS and kill every tenant's daemon.
 * Instead, the handler maps a private page over the faulting page of a
 * guarded mapping (as Wayland compositors do for client shared memory), the
 * access is retried, and the fault is counted on the range.  The handler can
 * do nothing else safely: it wakes the monitor thread (guard_wait) through an
 * eventfd, and that thread fails the vRNIC that owns the range (vrnic.c), so
 * a tenant that pulls its memory away loses its vRNIC loudly instead of the
 * daemon silently writing into private pages.  Faults outside guarded ranges
 * keep the default action.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"

#define GUARD_MAX (URD_MAX_VRNICS * 2)

static struct {
	uintptr_t start, end;
	uint32_t faults;                /* SIGBUS taken in this range since guard_add */
} ranges[GUARD_MAX];

static int guard_efd = -1;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	(void)uc;
	for (unsigned i = 0; i < GUARD_MAX; i++) {
		uintptr_t s = __atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE);
		uintptr_t e = __atomic_load_n(&ranges[i].end, __ATOMIC_ACQUIRE);

		if (s && a >= s && a < e) {
			void *page = (void *)(a & ~(uintptr_t)(URD_PAGE_SIZE - 1));

			if (mmap(page, URD_PAGE_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
				break;
			__atomic_fetch_add(&ranges[i].faults, 1, __ATOMIC_RELEASE);
			if (guard_efd >= 0) {
				uint64_t one = 1;

				/* write() is async-signal-safe; a full counter only
				 * means the monitor is already due to look */
				if (write(guard_efd, &one, sizeof(one)) < 0)
					(void)0;
			}
			errno = saved;
			return;
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void guard_install(void)
{
	struct sigaction sa;

	guard_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

void guard_add(void *addr, uint64_t len)
{
	for (unsigned i = 0; i < GUARD_MAX; i++) {
		if (!__atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&ranges[i].faults, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&ranges[i].end, (uintptr_t)addr + len, __ATOMIC_RELEASE);
			__atomic_store_n(&ranges[i].start, (uintptr_t)addr, __ATOMIC_RELEASE);
			return;
		}
	}
}

void guard_remove(void *addr)
{
	for (unsigned i = 0; i < GUARD_MAX; i++)
		if (__atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE) == (uintptr_t)addr)
			__atomic_store_n(&ranges[i].start, 0, __ATOMIC_RELEASE);
}

uint32_t guard_faults(const void *addr)
{
	for (unsigned i = 0; i < GUARD_MAX; i++)
		if (__atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE) == (uintptr_t)addr)
			return __atomic_load_n(&ranges[i].faults, __ATOMIC_ACQUIRE);
	return 0;
}

/* Wakes guard_wait (the monitor, to stop it). */
void guard_kick(void)
{
	uint64_t one = 1;

	if (guard_efd >= 0 && write(guard_efd, &one, sizeof(one)) < 0)
		(void)0;
}

/* Blocks until the handler reported a fault, guard_kick was called or
 * timeout_ms passed (-1: no limit); true if a fault may have happened. */
bool guard_wait(int timeout_ms)
{
	struct pollfd p = { .fd = guard_efd, .events = POLLIN };
	uint64_t n;

	if (guard_efd < 0) {    /* no eventfd: look every second */
		poll(NULL, 0, timeout_ms < 0 || timeout_ms > 1000 ? 1000 : timeout_ms);
		return true;
	}
	if (poll(&p, 1, timeout_ms) <= 0)
		return false;
	return read(guard_efd, &n, sizeof(n)) == sizeof(n);
}

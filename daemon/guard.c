/* SIGBUS guard for the daemon's mappings of tenant-writable files.
 *
 * A tenant holds its region file open read-write, so it can ftruncate() it.
 * The daemon's next access beyond the new end of file would raise SIGBUS and
 * kill every tenant's daemon.  Instead, the handler maps a zero page over the
 * faulting page of a guarded mapping (as Wayland compositors do for client
 * shared memory) and the access is retried: the tenant only corrupts its own
 * view.  Faults outside guarded ranges keep the default action.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"

#define GUARD_MAX (URD_MAX_VRNICS * 2)

static struct { uintptr_t start, end; } ranges[GUARD_MAX];

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	(void)uc;
	for (unsigned i = 0; i < GUARD_MAX; i++) {
		uintptr_t s = __atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE);
		uintptr_t e = __atomic_load_n(&ranges[i].end, __ATOMIC_ACQUIRE);

		if (s && a >= s && a < e) {
			void *page = (void *)(a & ~(uintptr_t)(URD_PAGE_SIZE - 1));

			if (mmap(page, URD_PAGE_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
				return;
			break;
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void guard_install(void)
{
	struct sigaction sa;

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

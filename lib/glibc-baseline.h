/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* glibc-baseline.h: what the library asks of glibc stays within glibc 2.28
 * (Debian 10, Ubuntu 20.04 has 2.31, RHEL 8), so that the copy a container
 * runtime injects into an older image loads there.  Built on a newer glibc,
 * a few calls would bind to symbol versions the old one lacks:
 *   - pthread_create, _join, _once, _spin_*: GLIBC_2.34 (when libpthread
 *     moved into libc); before, libpthread.so.0 defined them at GLIBC_2.2.5,
 *     and newer libcs still export those as compat symbols.  The library
 *     also names libpthread.so.0 as NEEDED (Makefile) for old systems.
 *   - fstat: GLIBC_2.33; before, an inline wrapper of __fxstat@GLIBC_2.2.5
 *     (kept as a compat symbol since).
 * Included first in every object of the library (Makefile: -include).
 * tests/check-exports.sh checks the highest version the library needs.
 * Sanitizer builds keep the defaults: their runtime intercepts these calls
 * by their default versions. */
#ifndef URD_GLIBC_BASELINE_H
#define URD_GLIBC_BASELINE_H

#include <features.h>   /* __GLIBC__ */

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
	!defined(__SANITIZE_THREAD__) && !defined(URD_NO_GLIBC_BASELINE)
#include <sys/stat.h>

__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver pthread_spin_init,pthread_spin_init@GLIBC_2.2.5");
__asm__(".symver pthread_spin_destroy,pthread_spin_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_spin_lock,pthread_spin_lock@GLIBC_2.2.5");
__asm__(".symver pthread_spin_unlock,pthread_spin_unlock@GLIBC_2.2.5");

extern int __fxstat(int ver, int fd, struct stat *st);
__asm__(".symver __fxstat,__fxstat@GLIBC_2.2.5");
/* _STAT_VER_LINUX: x86_64's struct stat is the kernel's */
static inline int urd_fstat_2_2_5(int fd, struct stat *st)
{
	return __fxstat(1, fd, st);
}
#define fstat urd_fstat_2_2_5
#endif

#endif

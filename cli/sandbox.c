/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* sandbox.c: what a tenant program of `unirdma exec` may do to the kernel.
 *
 * Called by the container's init after the file-system view and eth0 are
 * set up, before PROGRAM is forked; init and PROGRAM both run under it:
 *   - no capabilities at all (bounding, permitted, effective, inheritable,
 *     ambient), and securebits that keep uid 0 from regaining any on exec;
 *   - PR_SET_NO_NEW_PRIVS (setuid/file-capability binaries grant nothing);
 *   - a seccomp filter that refuses the system calls a process without
 *     capabilities could still use to grow its reach: new namespaces
 *     (unshare, setns, clone with CLONE_NEW*, clone3), the mount API, BPF,
 *     keyrings, perf, io_uring, userfaultfd (except user-mode-only ones,
 *     below), module and kexec loading,
 *     file handles, TIOCSTI/TIOCLINUX (typing into the operator's terminal,
 *     which stdin may be), ... Most of these already fail without capabilities;
 *     the filter is the second wall and removes kernel attack surface;
 *   - setuid/setgid mode bits (chmod, open/creat/mknod with such a mode):
 *     PROGRAM is host uid 0, a setuid file left in a --rw directory would
 *     be a setuid-root program on the host;
 *   - system calls newer than the filter (number above the highest it
 *     knows): ENOSYS, so that a new kernel's calls are refused by default.
 *
 * The filter is written by hand (no libseccomp): one architecture, a plain
 * deny list and a few argument checks, about 180 instructions, and no new
 * build dependency. ptrace stays allowed: LeakSanitizer stops the world
 * with it, and inside a PID namespace of its own, with no capabilities, a
 * tenant can only trace its own processes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <linux/securebits.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef SANDBOX_ARCH
/* The numbers of the newer calls: the same on x86_64 and aarch64 (the
 * kernel's shared table since 424), hard-coded where the build machine's
 * headers are older than the kernel the filter may run on. */
#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_fspick
#define __NR_fspick 433
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_statmount
#define __NR_statmount 457
#endif
#ifndef __NR_listmount
#define __NR_listmount 458
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
/* The highest number the filter knows (file_setattr, Linux 6.17). Anything
 * above is a call it cannot judge: ENOSYS, as from an older kernel, and
 * glibc falls back. */
#define SANDBOX_NR_MAX 469

/* Refused with EPERM. #ifdef each: the lists differ between architectures. */
static const int denied[] = {
#ifdef __NR_mount
	__NR_mount,
#endif
#ifdef __NR_umount2
	__NR_umount2,
#endif
#ifdef __NR_umount
	__NR_umount,
#endif
	__NR_pivot_root,
	__NR_chroot,
	__NR_unshare,
	__NR_setns,
	__NR_fsopen,
	__NR_fsconfig,
	__NR_fsmount,
	__NR_fspick,
	__NR_move_mount,
	__NR_open_tree,
	__NR_open_tree_attr,
	__NR_mount_setattr,
	__NR_statmount,
	__NR_listmount,
	__NR_name_to_handle_at,
	__NR_open_by_handle_at,
	__NR_bpf,
	__NR_perf_event_open,
	__NR_keyctl,
	__NR_add_key,
	__NR_request_key,
	__NR_io_uring_setup,
	__NR_io_uring_enter,
	__NR_io_uring_register,
	__NR_kexec_load,
#ifdef __NR_kexec_file_load
	__NR_kexec_file_load,
#endif
	__NR_init_module,
	__NR_finit_module,
	__NR_delete_module,
	__NR_reboot,
	__NR_swapon,
	__NR_swapoff,
	__NR_syslog,
	__NR_acct,
	__NR_quotactl,
	__NR_quotactl_fd,
	__NR_settimeofday,
	__NR_clock_settime,
	__NR_clock_adjtime,
	__NR_adjtimex,
	__NR_vhangup,
#ifdef __NR_iopl
	__NR_iopl,
#endif
#ifdef __NR_ioperm
	__NR_ioperm,
#endif
#ifdef __NR_uselib
	__NR_uselib,
#endif
#ifdef __NR_ustat
	__NR_ustat,
#endif
#ifdef __NR_sysfs
	__NR_sysfs,
#endif
#ifdef __NR__sysctl
	__NR__sysctl,
#endif
#ifdef __NR_lookup_dcookie
	__NR_lookup_dcookie,
#endif
#ifdef __NR_nfsservctl
	__NR_nfsservctl,
#endif
};

/* Refused with EPERM when argument arg has a bit of mask set: the tenant is
 * host uid 0, so a setuid/setgid file it leaves in a --rw directory would be
 * a setuid-root program on the host. (MS_NOSUID on the bind protects only
 * the container.) */
static const struct {
	int nr, arg;
	uint32_t mask;
} argchecks[] = {
	{ __NR_fchmod, 1, S_ISUID | S_ISGID },
	{ __NR_fchmodat, 2, S_ISUID | S_ISGID },
	{ __NR_fchmodat2, 2, S_ISUID | S_ISGID },
	{ __NR_openat, 3, S_ISUID | S_ISGID },
	{ __NR_mknodat, 2, S_ISUID | S_ISGID },
#ifdef __NR_chmod
	{ __NR_chmod, 1, S_ISUID | S_ISGID },
#endif
#ifdef __NR_open
	{ __NR_open, 2, S_ISUID | S_ISGID },
#endif
#ifdef __NR_creat
	{ __NR_creat, 1, S_ISUID | S_ISGID },
#endif
#ifdef __NR_mknod
	{ __NR_mknod, 1, S_ISUID | S_ISGID },
#endif
	/* clone's flags are argument 0 on both architectures; the namespace
	 * bits are all in its low 32 bits */
	{ __NR_clone, 0, CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
				 CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET },
};

#define NDENIED (sizeof(denied) / sizeof(denied[0]))
#define NARGCHECKS (sizeof(argchecks) / sizeof(argchecks[0]))
/* arch check and number 4, x32 check 2, unknown 2, deny list 2 each, clone3
 * and openat2 2 each, userfaultfd 5, ioctl 6, argument checks 5 each, allow 1 */
#define FILTER_MAX (4 + 2 + 2 + 2 * NDENIED + 4 + 5 + 6 + 5 * NARGCHECKS + 1)

static int install_filter(void)
{
	struct sock_filter f[FILTER_MAX];
	struct sock_fprog prog;
	size_t n = 0;

#define EMIT(insn) (f[n++] = (struct sock_filter)insn)
#define RET_ERRNO(e) EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e)))
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0));
	/* another ABI (i386 int 0x80): its numbers mean other calls */
	EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
	/* x32 calls share the arch value and add this bit */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
	RET_ERRNO(EPERM);
#endif
	EMIT(BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SANDBOX_NR_MAX, 0, 1));
	RET_ERRNO(ENOSYS);
	for (size_t i = 0; i < NDENIED; i++) {
		EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)denied[i], 0, 1));
		RET_ERRNO(EPERM);
	}
	/* clone3 hides its flags in memory a filter cannot read: ENOSYS makes
	 * glibc fall back to clone, whose flags are an argument. openat2's
	 * mode is behind a pointer too; glibc's open() does not use it. */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
	RET_ERRNO(ENOSYS);
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1));
	RET_ERRNO(ENOSYS);
	/* userfaultfd only with UFFD_USER_MODE_ONLY, what any unprivileged
	 * process gets under Linux's default vm.unprivileged_userfaultfd = 0:
	 * such a uffd cannot hold the kernel in the middle of a copy from user
	 * memory, the use that made userfaultfd an exploit aid.  libibverbs
	 * holds the program's writers with one while it moves registered
	 * pages (lib/mem.c). */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_userfaultfd, 0, 4));
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, UFFD_USER_MODE_ONLY, 0, 1));
	EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	RET_ERRNO(EPERM);
	/* Typing into the operator's terminal (stdin may be it): TIOCSTI
	 * pushes input, TIOCLINUX can paste the console selection. Any other
	 * ioctl is allowed at once: the accumulator now holds the command,
	 * not the call number. */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5));
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0));
	EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	RET_ERRNO(EPERM);
	/* One argument's bits (its low word: little endian); a match ends the
	 * filter either way, so the accumulator is never reused. */
	for (size_t i = 0; i < NARGCHECKS; i++) {
		EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)argchecks[i].nr, 0, 4));
		EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			      offsetof(struct seccomp_data, args[0]) + 8 * argchecks[i].arg));
		EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, argchecks[i].mask, 0, 1));
		RET_ERRNO(EPERM);
		EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	}
	EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef RET_ERRNO
#undef EMIT
	prog.len = (unsigned short)n;
	prog.filter = f;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
}
#else
static int install_filter(void)
{
	return -ENOSYS; /* fail closed on an architecture the filter does not know */
}
#endif

static int drop_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	/* uid 0 stays uid 0 (the region file is root's, mode 0660): these bits
	 * keep exec from handing it capabilities again, and lock themselves. */
	if (prctl(PR_SET_SECUREBITS,
		  SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
			  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
			  SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	/* Up to the kernel's last capability: it answers EINVAL past it. */
	for (int cap = 0;; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL && cap > CAP_SETPCAP)
			break;
		return -errno;
	}
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

int sandbox_lockdown(void)
{
	int rc = drop_caps();

	if (rc)
		return rc;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return install_filter();
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* escprobe: tries, from inside `unirdma exec`, every way out of the container
 * that a tenant with the old runtime (root with all capabilities, the host's
 * tree) had, and says for each whether the kernel refused it.
 *
 *   escprobe [--absent PATH]... [--ro DIR]...
 *
 * --absent PATH: PATH must not exist in the container.
 * --ro DIR: creating a file in DIR must fail (host directory shown read-only).
 * Prints one line per attempt ("refused: ..." or "ESCAPE: ..."), exits 0 when
 * everything was refused, 1 otherwise. Attempts are chosen to be harmless
 * when they succeed (they show the hole without using it). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/userfaultfd.h>

static int escapes;

/* ret < 0 with errno in the refused set: refused. Anything else: an escape. */
static void verdict(const char *what, long ret, int err, int ok1, int ok2)
{
	if (ret < 0 && (err == ok1 || err == ok2)) {
		printf("refused: %s (%s)\n", what, strerror(err));
	} else {
		printf("ESCAPE: %s (%s)\n", what, ret < 0 ? strerror(err) : "succeeded");
		escapes++;
	}
}

#define TRY(what, expr, ok1, ok2)                          \
	do {                                               \
		errno = 0;                                 \
		long r_ = (long)(expr);                    \
		verdict(what, r_, errno, ok1, ok2);        \
	} while (0)

static long try_clone(unsigned long flags)
{
	long pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid;
}

/* In a child, so that a chroot that works does not move the probe. */
static long try_chroot(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(chroot("/tmp") == 0 ? 0 : errno);
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	errno = WEXITSTATUS(st);
	return errno ? -1 : 0;
}

static long try_open_close(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd >= 0) {
		close(fd);
		if (flags & O_CREAT)
			unlink(path);
	}
	return fd;
}

static long try_ifreq(unsigned long req)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	long r;

	if (s < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
	/* read the current value and write it back: harmless if allowed */
	r = ioctl(s, req == SIOCSIFADDR ? SIOCGIFADDR : SIOCGIFHWADDR, &ifr);
	if (r == 0)
		r = ioctl(s, req, &ifr);
	int err = errno;

	close(s);
	errno = err;
	return r;
}

static void privileges(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	bool none = syscall(SYS_capget, &h, d) == 0;

	for (int i = 0; i < 2 && none; i++)
		none = !d[i].effective && !d[i].permitted && !d[i].inheritable;
	for (int cap = 0; none && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		none = prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0;
	printf("%s: no capabilities (effective, permitted, inheritable, bounding)\n",
	       none ? "refused" : "ESCAPE");
	escapes += !none;
	int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);

	printf("%s: no_new_privs is %d\n", nnp == 1 ? "refused" : "ESCAPE", nnp);
	escapes += nnp != 1;
	int sec = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);

	printf("%s: seccomp mode is %d\n", sec == 2 ? "refused" : "ESCAPE", sec);
	escapes += sec != 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	privileges();
	/* mounts and namespaces */
	TRY("mount a tmpfs on /tmp", mount("none", "/tmp", "tmpfs", 0, NULL), EPERM, EPERM);
	TRY("umount /tmp", umount2("/tmp", MNT_DETACH), EPERM, EPERM);
	TRY("remount / read-write", mount("none", "/", NULL, MS_REMOUNT | MS_BIND, NULL), EPERM,
	    EPERM);
	TRY("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"), EPERM, EPERM);
	TRY("chroot (in a child)", try_chroot(), EPERM, EPERM);
	TRY("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER), EPERM, EPERM);
	TRY("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS), EPERM, EPERM);
	TRY("clone(CLONE_NEWUSER)", try_clone(CLONE_NEWUSER), EPERM, EPERM);
	TRY("clone(CLONE_NEWNET)", try_clone(CLONE_NEWNET), EPERM, EPERM);
	TRY("clone3", syscall(SYS_clone3, NULL, 0), ENOSYS, EPERM);
	{
		int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

		TRY("setns", setns(fd, 0), EPERM, EPERM);
		close(fd);
	}
	/* kernel interfaces a container has no business with */
	TRY("bpf", syscall(SYS_bpf, 0, NULL, 0), EPERM, EPERM);
	TRY("keyctl", syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0), EPERM, EPERM);
	TRY("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM, EPERM);
	TRY("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), EPERM, EPERM);
	TRY("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL), EPERM, EPERM);
	TRY("userfaultfd", syscall(SYS_userfaultfd, 0), EPERM, EPERM);
	{
		/* a user-mode-only one is allowed (libibverbs moves registered
		 * pages under one): not an escape, but it must work */
		long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

		printf("%s: userfaultfd(UFFD_USER_MODE_ONLY) works (%s)\n", fd >= 0 ? "allowed" : "BROKEN",
		       fd >= 0 ? "succeeded" : strerror(errno));
		escapes += fd < 0;
		if (fd >= 0)
			close((int)fd);
	}
	TRY("init_module", syscall(SYS_init_module, NULL, 0, ""), EPERM, EPERM);
	TRY("sethostname", sethostname("escaped", 7), EPERM, EPERM);
	{
		/* on /dev/null: a kernel that lets it through says ENOTTY */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		char c = '#';

		TRY("ioctl TIOCSTI (type into a terminal)", ioctl(fd, TIOCSTI, &c), EPERM, EPERM);
		close(fd);
	}
	{
		/* An ordinary ioctl must reach the driver (ENOTTY from /dev/null):
		 * a filter that still holds the command where it compares call
		 * numbers turned 435 (clone3's number) into ENOSYS. */
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		errno = 0;
		long r = ioctl(fd, 435, 0);
		int err = errno;

		close(fd);
		bool ok = r < 0 && err == ENOTTY;

		printf("%s: ioctl(/dev/null, 435) reaches the driver (%s)\n", ok ? "refused" : "ESCAPE",
		       r < 0 ? strerror(err) : "succeeded");
		escapes += !ok;
	}
	/* a call newer than the filter: refused as if the kernel had none */
	TRY("system call 470 (newer than the filter)", syscall(470, 0, 0, 0, 0), ENOSYS, ENOSYS);
	{
		int st;
		pid_t pid = fork();

		if (pid == 0)
			_exit(ptrace(PTRACE_ATTACH, 1, NULL, NULL) == 0 ? 0 : errno);
		waitpid(pid, &st, 0);
		int err = WEXITSTATUS(st);

		TRY("ptrace the container's init", err ? (errno = err, -1) : 0, EPERM, EPERM);
	}
	/* devices and the network */
	TRY("mknod a character device", mknod("/tmp/escprobe-null", S_IFCHR | 0600, makedev(1, 3)),
	    EPERM, EPERM);
	unlink("/tmp/escprobe-null");
	TRY("raw IP socket", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), EPERM, EPERM);
	TRY("packet socket", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), EPERM, EPERM);
	TRY("set eth0's address", try_ifreq(SIOCSIFADDR), EPERM, EPERM);
	TRY("set eth0's MAC", try_ifreq(SIOCSIFHWADDR), EPERM, EPERM);
	/* whole-host knobs and host files */
	TRY("open /proc/sys/kernel/core_pattern for writing",
	    try_open_close("/proc/sys/kernel/core_pattern", O_WRONLY), EROFS, EACCES);
	/* (ENOENT: a kernel without magic SysRq has no such file) */
	TRY("open /proc/sysrq-trigger for writing", try_open_close("/proc/sysrq-trigger", O_WRONLY),
	    EROFS, ENOENT);
	TRY("chmod /dev/null (a host inode)", chmod("/dev/null", 0666), EROFS, EPERM);
	TRY("create /escprobe", try_open_close("/escprobe", O_WRONLY | O_CREAT | O_EXCL), EROFS,
	    EACCES);
	TRY("create /etc/escprobe", try_open_close("/etc/escprobe", O_WRONLY | O_CREAT | O_EXCL),
	    EROFS, EACCES);
	TRY("create /usr/escprobe", try_open_close("/usr/escprobe", O_WRONLY | O_CREAT | O_EXCL),
	    EROFS, EACCES);
	{
		char buf[64];
		int fd = open("/etc/shadow", O_RDONLY | O_CLOEXEC);
		long n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (fd >= 0)
			close(fd);
		/* masked (empty) or absent: both keep the hashes away */
		printf("%s: read /etc/shadow (%ld bytes)\n", n > 0 ? "ESCAPE" : "refused", n);
		escapes += n > 0;
	}
	for (int i = 1; i + 1 < argc; i += 2) {
		char path[4096];
		struct stat st;

		if (!strcmp(argv[i], "--absent")) {
			snprintf(path, sizeof(path), "see %s", argv[i + 1]);
			TRY(path, lstat(argv[i + 1], &st), ENOENT, ENOENT);
		} else if (!strcmp(argv[i], "--ro")) {
			snprintf(path, sizeof(path), "%s/escprobe.%d", argv[i + 1], (int)getpid());
			char what[4200];

			snprintf(what, sizeof(what), "create %s", path);
			TRY(what, try_open_close(path, O_WRONLY | O_CREAT | O_EXCL), EROFS, EACCES);
		} else {
			fprintf(stderr, "usage: escprobe [--absent PATH]... [--ro DIR]...\n");
			return 2;
		}
	}
	/* last: where it works, the old root stays reachable through our cwd/root */
	TRY("umount /", umount2("/", MNT_DETACH), EPERM, EPERM);
	printf("%d escape(s)\n", escapes);
	return escapes ? 1 : 0;
}

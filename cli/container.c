/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* container.c: the container of `unirdma exec`.
 *
 * A child is cloned into new mount, network, PID, IPC and UTS namespaces. It
 * becomes PID 1 of the container ("unirdma-init"): it builds a root file
 * system of its own and pivots into it, waits until the parent has plugged
 * its veth into the bridge, sets up eth0, gives up every privilege
 * (sandbox.c: no capabilities, no_new_privs, seccomp), then forks PROGRAM,
 * reaps every child and forwards signals to PROGRAM. When PROGRAM exits,
 * init exits with its code and the kernel kills whatever is left in the PID
 * namespace; the network namespace, and with it the veth pair, goes away.
 *
 * The tenant runs as uid 0 without capabilities: the vRNIC's region file is
 * root's (mode 0660) and must open read-write. So nothing of the host may be
 * writable unless the operator asked (--rw), and files only root may read
 * are masked in /etc. File-system view inside (a tmpfs root, read-only once
 * built; the old root is detached):
 *   /usr /bin /sbin /lib* /etc  the host's, read-only (symlinks copied);
 *                               /etc files not readable by others masked
 *   --ro PATHs, the program's   the host's, read-only, at the same path
 *   directory, the library dir
 *   --rw PATHs                  the host's, writable, at the same path
 *   /proc                       fresh, of the new PID namespace; /proc/sys,
 *                               sysrq-trigger, irq, bus, fs read-only,
 *                               kcore, keys, ... masked
 *   /sys                        fresh, read-only
 *   /dev                        private tmpfs: null zero full random urandom
 *                               tty (binds of the host's), pts (new
 *                               instance), shm (private tmpfs)
 *   /tmp                        private tmpfs (1 GiB, as /dev/shm)
 *   /run/unirdma/dev/NAME/region  bind mount of the vRNIC's region file, the
 *                               only thing of the daemon's directory (and,
 *                               for a VM vRNIC, guest-ram beside it)
 *   STATE_DIR, /run/netns       covered by an empty read-only tmpfs where an
 *                               exposed path would show them
 * Binds are not recursive: mounts below an exposed path stay out. Each
 * exposed path is opened without following symlinks and the opened object
 * checked (open_exposed); nothing is shown inside a --rw path
 * (check_nesting). PROGRAM inherits only fds 0-2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "unirdma/abi.h"

struct init_args {
	const struct container_spec *spec;
	int sync_r, sync_w; /* the parent writes one byte once eth0 exists */
};

/* The host's programs and libraries, always shown read-only. */
static const char *const system_paths[] = { "/usr",   "/bin",   "/sbin",   "/lib",
					    "/lib32", "/lib64", "/libx32", "/etc" };
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
#define NDEV (sizeof(dev_nodes) / sizeof(dev_nodes[0]))
/* The vRNIC's files a tenant gets: the region; a VM vRNIC's guest RAM too
 * (QEMU runs in a container of the vRNIC). */
static const char *const vrnic_files[] = { "region", "guest-ram" };
#define NVRFILES (sizeof(vrnic_files) / sizeof(vrnic_files[0]))
/* Where the new root is assembled: any existing directory will do, since
 * every host path is opened before it is covered. */
static const char *const scratch_dirs[] = { "/run", "/tmp", "/mnt", "/var/tmp" };
/* The private /tmp and /dev/shm each: tmpfs pages are host memory. */
#define CONTAINER_TMP_SIZE "1g"

/* What messages of the mount helpers start with: "exec", or the CDI hook's
 * name while container_sys_class runs for it. */
static const char *who = "exec";

struct expose {
	const char *path; /* absolute host path = the path inside */
	int fd;           /* O_PATH, opened before anything is covered; -1 for a link */
	bool rw, dir;
	char link[PATH_MAX]; /* a symlink at the top (merged /usr): copied */
};

static int mkdir_p_one(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* mkdir -p of every component of path after the first skip bytes. */
static int mkdir_p(char *path, size_t skip, mode_t mode)
{
	for (char *p = path + skip + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir_p_one(path, mode);

		*p = '/';
		if (rc)
			return rc;
	}
	return mkdir_p_one(path, mode);
}

static int must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		      const char *data)
{
	if (mount(src, dst, type, flags, data) < 0) {
		int err = errno;

		cli_err("%s: mount %s on %s: %s", who, flags & MS_BIND ? src : type, dst, strerror(err));
		return -err;
	}
	return 0;
}

/* An empty file or directory to mount on, then a bind of fd there with flags
 * (a bind ignores them; the remount applies them). */
static int bind_fd(int fd, bool dir, const char *dst, unsigned long flags)
{
	char src[64];
	struct stat st;
	int rc;

	/* already there when a parent's bind shows it (read-only: no O_CREAT) */
	if (lstat(dst, &st) == 0 && !!S_ISDIR(st.st_mode) == dir)
		rc = 0;
	else if (dir)
		rc = mkdir_p_one(dst, 0755);
	else {
		int f = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

		rc = f < 0 && errno != EISDIR ? -errno : 0;
		if (f >= 0)
			close(f);
	}
	if (rc) {
		cli_err("%s: creating the mount point %s: %s", who, dst, strerror(-rc));
		return rc;
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	rc = must_mount(src, dst, "none", MS_BIND, NULL);
	if (!rc)
		rc = must_mount("none", dst, "none", MS_BIND | MS_REMOUNT | flags, NULL);
	return rc;
}

/* An empty read-only directory over path. */
static int cover_dir(const char *path)
{
	return must_mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "mode=0555,size=4k,nr_inodes=2");
}

/* /dev/null over a file, read-only. */
static int cover_file(const char *path)
{
	int rc = must_mount("/dev/null", path, "none", MS_BIND, NULL);

	if (!rc)
		rc = must_mount("none", path, "none",
				MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL);
	return rc;
}

/* Uid 0 without capabilities still reads what root owns: mask in /etc what
 * an unprivileged user could not read (shadow, private keys, sudoers). */
static int mask_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D && (st->st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))
		return cover_dir(path) ? FTW_STOP : FTW_SKIP_SUBTREE;
	if (type == FTW_F && !(st->st_mode & S_IROTH))
		return cover_file(path) ? FTW_STOP : FTW_CONTINUE;
	return FTW_CONTINUE;
}

static int mask_private(const char *dir)
{
	int rc = nftw(dir, mask_cb, 16, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);

	return rc == FTW_STOP ? -EPERM : rc < 0 ? -errno : 0;
}

static int setup_proc(const char *root)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };
	static const char *const masked[] = { "kcore",	      "keys",	     "timer_list",
					      "sched_debug", "latency_stats", "timer_stats",
					      "acpi",	     "scsi",	      "asound" };
	char p[PATH_MAX];
	struct stat st;
	int rc;

	snprintf(p, sizeof(p), "%s/proc", root);
	rc = mkdir_p_one(p, 0555);
	if (!rc)
		rc = must_mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	/* Whole-host knobs a uid 0 could write even without capabilities. */
	for (size_t i = 0; !rc && i < sizeof(ro) / sizeof(ro[0]); i++) {
		snprintf(p, sizeof(p), "%s/proc/%s", root, ro[i]);
		if (lstat(p, &st) < 0)
			continue;
		rc = must_mount(p, p, "none", MS_BIND | MS_REC, NULL);
		if (!rc)
			rc = must_mount("none", p, "none",
					MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
						MS_NOEXEC,
					NULL);
	}
	for (size_t i = 0; !rc && i < sizeof(masked) / sizeof(masked[0]); i++) {
		snprintf(p, sizeof(p), "%s/proc/%s", root, masked[i]);
		if (lstat(p, &st) < 0)
			continue;
		rc = S_ISDIR(st.st_mode) ? cover_dir(p) : cover_file(p);
	}
	return rc;
}

static int setup_dev(const char *root, const int *devfd)
{
	static const char *const links[][2] = { { "fd", "/proc/self/fd" },
						{ "stdin", "/proc/self/fd/0" },
						{ "stdout", "/proc/self/fd/1" },
						{ "stderr", "/proc/self/fd/2" },
						{ "ptmx", "pts/ptmx" } };
	char p[PATH_MAX];
	int rc;

	snprintf(p, sizeof(p), "%s/dev", root);
	rc = mkdir_p_one(p, 0755);
	if (!rc)
		rc = must_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k");
	/* Read-only binds: the nodes work, but their host inodes cannot be
	 * chmod'ed. No MS_NODEV, or they would not open. */
	for (size_t i = 0; !rc && i < NDEV; i++) {
		if (devfd[i] < 0)
			continue;
		snprintf(p, sizeof(p), "%s/dev/%s", root, dev_nodes[i]);
		rc = bind_fd(devfd[i], false, p, MS_RDONLY | MS_NOSUID | MS_NOEXEC);
	}
	/* /dev/infiniband/uverbs0 (our device's dev_name, lib/device.c): UCX
	 * lists a device only if that node exists; it never opens it. */
	if (!rc && devfd[0] >= 0) {
		snprintf(p, sizeof(p), "%s/dev/infiniband", root);
		rc = mkdir_p_one(p, 0755);
		snprintf(p, sizeof(p), "%s/dev/infiniband/uverbs0", root);
		if (!rc)
			rc = bind_fd(devfd[0], false, p, MS_RDONLY | MS_NOSUID | MS_NOEXEC);   /* null */
	}
	for (size_t i = 0; !rc && i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/dev/%s", root, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			rc = -errno;
	}
	if (!rc) {
		snprintf(p, sizeof(p), "%s/dev/shm", root);
		rc = mkdir_p_one(p, 01777);
		if (!rc)
			rc = must_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV,
					 "mode=1777,size=" CONTAINER_TMP_SIZE);
	}
	if (!rc) {
		/* A pty for programs that want one; not worth failing for. */
		snprintf(p, sizeof(p), "%s/dev/pts", root);
		if (mkdir_p_one(p, 0755) == 0)
			mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
			      "newinstance,ptmxmode=0666,mode=0620");
	}
	/* Nothing new in /dev itself (shm and pts are mounts of their own). */
	if (!rc) {
		snprintf(p, sizeof(p), "%s/dev", root);
		rc = must_mount("none", p, "none", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
				NULL);
	}
	return rc;
}

static int by_depth(const void *a, const void *b)
{
	const struct expose *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);

	/* parents before children; for one path, the writable bind on top */
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return (int)x->rw - (int)y->rw;
}

/* Whether path is dir or lies below it (both canonical). */
static bool path_under(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	if (l == 1)
		return true; /* "/" */
	return !strncmp(path, dir, l) && (path[l] == '/' || path[l] == '\0');
}

/* Opens one exposed host path and checks what was opened, not the string:
 * the path is canonical (realpath when the options were read), so a symlink
 * met now means the path was changed since (planted, or a rename race in
 * storage a tenant writes): refused. The object must not be "/", the
 * daemon's state directory or /run/netns, nor lie inside the last two. */
static int open_exposed(struct expose *e, const char *state_dir)
{
	const char *const forbidden[] = { "/", state_dir, "/run/netns" };
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char link[64], real[PATH_MAX];
	struct stat st, fst;
	ssize_t l;
	int err;

	e->fd = (int)syscall(SYS_openat2, AT_FDCWD, e->path, &how, sizeof(how));
	if (e->fd < 0 && errno == ENOSYS) /* before Linux 5.6: the readlink below checks */
		e->fd = open(e->path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (e->fd < 0) {
		err = errno;
		if (err == ELOOP || err == EXDEV)
			cli_err("exec: %s: a symlink in it now (changed since it was checked): refused",
				e->path);
		else
			cli_err("exec: %s: %s", e->path, strerror(err));
		return -err;
	}
	if (fstat(e->fd, &st) < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", e->fd);
	l = readlink(link, real, sizeof(real) - 1);
	if (l < 0)
		return -errno;
	real[l] = '\0';
	if (strcmp(real, e->path)) {
		cli_err("exec: %s now leads to %s (changed since it was checked): refused", e->path,
			real);
		return -EXDEV;
	}
	for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
		bool same = stat(forbidden[i], &fst) == 0 && fst.st_dev == st.st_dev &&
			    fst.st_ino == st.st_ino;

		if (same || (i > 0 && path_under(real, forbidden[i]))) {
			cli_err("exec: %s is %s: may not be shown in a container", e->path,
				i ? "the daemon's state or /run/netns" : "the host's root");
			return -EPERM;
		}
	}
	e->dir = S_ISDIR(st.st_mode);
	return 0;
}

/* Mount points are made in the new root's tmpfs or in a read-only bind,
 * never through a bind of storage the tenant can write: there it could
 * swap a directory for a symlink and move the mount. So nothing the
 * container shows may lie below a --rw path (the same path is fine: the
 * writable bind goes on top), and no --rw path may hold the vRNIC's
 * directory of the container. */
static int check_nesting(const struct container_spec *spec, const struct expose *ex, size_t n)
{
	char devdir[PATH_MAX];

	snprintf(devdir, sizeof(devdir), CLI_CONTAINER_DEVDIR "/%s", spec->vrnic->name);
	for (size_t i = 0; i < n; i++) {
		if (!ex[i].rw)
			continue;
		if (path_under(devdir, ex[i].path)) {
			cli_err("exec: --rw %s would hold " CLI_CONTAINER_DEVDIR ": refused",
				ex[i].path);
			return -EPERM;
		}
		/* they are hidden by a mount placed by path: inside writable
		 * storage the tenant could swap them for a decoy first */
		if (path_under(spec->state_dir, ex[i].path) || path_under("/run/netns", ex[i].path)) {
			cli_err("exec: --rw %s holds %s: refused (a tenant could move it out from "
				"under the cover that hides it)",
				ex[i].path, path_under(spec->state_dir, ex[i].path) ?
				"the daemon's state directory" : "/run/netns");
			return -EPERM;
		}
		for (size_t j = 0; j < n; j++) {
			if (strcmp(ex[j].path, ex[i].path) && path_under(ex[j].path, ex[i].path)) {
				cli_err("exec: %s lies inside the writable %s: its mount point would "
					"be made in storage the tenant writes: refused",
					ex[j].path, ex[i].path);
				return -EPERM;
			}
		}
	}
	return 0;
}

/* Opens every host path the container shows. */
static int collect(const struct container_spec *spec, struct expose *ex, size_t *n)
{
	size_t k = 0;
	struct stat st;
	int rc;

	for (size_t i = 0; i < sizeof(system_paths) / sizeof(system_paths[0]); i++) {
		struct expose *e = &ex[k];
		ssize_t l;

		if (lstat(system_paths[i], &st) < 0)
			continue;
		*e = (struct expose){ .path = system_paths[i], .fd = -1, .dir = true };
		if (S_ISLNK(st.st_mode)) {
			l = readlink(e->path, e->link, sizeof(e->link) - 1);
			if (l < 0)
				continue;
			e->link[l] = '\0';
		} else if (!S_ISDIR(st.st_mode)) {
			continue;
		}
		k++;
	}
	for (size_t i = 0; i < spec->n_ro + spec->n_rw; i++) {
		struct expose *e = &ex[k];
		bool rw = i >= spec->n_ro;

		*e = (struct expose){ .path = rw ? spec->rw[i - spec->n_ro] : spec->ro[i], .fd = -1,
				      .rw = rw };
		k++;
	}
	*n = k; /* what setup_mounts closes */
	rc = check_nesting(spec, ex, k);
	for (size_t i = 0; i < k && !rc; i++)
		if (!ex[i].link[0])
			rc = open_exposed(&ex[i], spec->state_dir);
	if (rc)
		return rc;
	qsort(ex, k, sizeof(*ex), by_depth);
	return 0;
}

/* ---- /sys/class/infiniband: what RDMA software reads besides verbs ----
 *
 * There is no kernel RDMA device, so sysfs has no /sys/class/infiniband.
 * UCX (and so Open MPI) reads a RoCE GID's type and netdev there
 * (ports/1/gid_attrs/types/N, ndevs/N): without them it takes the GID for
 * RoCE v1 and drops every UD packet, whose GRH area holds an IPv4 header as
 * on RoCE v2. So /sys/class becomes a read-only tmpfs holding a bind of each
 * class sysfs has, plus infiniband/<vRNIC> and infiniband_verbs/uverbs0 as
 * the kernel would show this one port (GIDs ::ffff:<ip>, RoCE v2, the netdev
 * that has the address (eth0, or the CDI hook's rdmaN in a pod), at the
 * indices of abi.h's URD_GID_TBL_LEN layout).  The CDI hook
 * (cmd-cdi.c) builds the same in podman's containers. */

static int put_file(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int put_file(const char *dir, const char *name, const char *fmt, ...)
{
	char p[PATH_MAX], text[128];
	va_list ap;
	int fd, n, rc = 0;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(text) || snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)n) != n)
		rc = -EIO;
	close(fd);
	return rc;
}

/* port (a buffer of PATH_MAX, its string l long) + sub: the directory, with
 * a file per GID index that ok_only allows (all of 0..URD_GID_TBL_LEN - 1
 * otherwise), each holding text; port is left as it was. */
static int put_entries(char *port, size_t l, const char *sub, const char *text, bool ok_only)
{
	int rc;

	strncat(port, sub, PATH_MAX - l - 1);
	rc = mkdir_p(port, l, 0555);
	for (uint32_t i = 0; !rc && i < URD_GID_TBL_LEN; i++) {
		char name[16];

		if (ok_only && !urd_gid_index_ok(i))
			continue;
		snprintf(name, sizeof(name), "%u", i);
		rc = put_file(port, name, "%s", urd_gid_index_ok(i) ? text :
			      "0000:0000:0000:0000:0000:0000:0000:0000\n");
	}
	port[l] = '\0';
	return rc;
}

/* port + sub with the one file "0" holding text. */
static int put_entry0(char *port, size_t l, const char *sub, const char *text)
{
	int rc;

	strncat(port, sub, PATH_MAX - l - 1);
	rc = mkdir_p(port, l, 0555);
	if (!rc)
		rc = put_file(port, "0", "%s", text);
	port[l] = '\0';
	return rc;
}

/* infiniband/<vRNIC> and infiniband_verbs/uverbs<index> (our library's
 * dev_name of the index-th device of its directory, lib/device.c). */
static int sys_ib_tree(const char *class, const struct vrnic_info *vi, size_t index)
{
	unsigned char a[4];
	char d[PATH_MAX], ndev[sizeof(vi->ifname) + 1];
	int rc;

	if (inet_pton(AF_INET, vi->ip, a) != 1)
		return -EINVAL;
	snprintf(ndev, sizeof(ndev), "%s\n", vi->ifname[0] ? vi->ifname : "eth0");
	if (snprintf(d, sizeof(d), "%s/infiniband_verbs/uverbs%zu", class, index) >= (int)sizeof(d) - 64)
		return -ENAMETOOLONG;
	rc = mkdir_p(d, strlen(class), 0555);
	if (!rc)
		rc = put_file(d, "ibdev", "%s\n", vi->name);
	if (!rc)
		rc = put_file(d, "abi_version", "1\n");
	if (snprintf(d, sizeof(d), "%s/infiniband/%s", class, vi->name) >= (int)sizeof(d) - 64)
		return -ENAMETOOLONG;
	if (!rc)
		rc = mkdir_p(d, strlen(class), 0555);
	if (!rc)
		rc = put_file(d, "node_type", "1: CA\n");
	strncat(d, "/ports/1", sizeof(d) - strlen(d) - 1);
	if (!rc)
		rc = mkdir_p(d, strlen(class), 0555);
	if (!rc)
		rc = put_file(d, "link_layer", "Ethernet\n");
	if (!rc)
		rc = put_file(d, "state", "4: ACTIVE\n");
	if (!rc)
		rc = put_file(d, "phys_state", "5: LinkUp\n");
	if (!rc)
		rc = put_file(d, "lid", "0x0\n");
	/* the port's tables: the GID table as verbs shows it (abi.h: index 2
	 * empty, all zeros, with no type or netdev, as the kernel shows an
	 * empty entry), one P_Key */
	char gid[48];
	size_t l = strlen(d);

	snprintf(gid, sizeof(gid), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", a[0], a[1], a[2], a[3]);
	if (!rc)
		rc = put_entries(d, l, "/gids", gid, false);
	if (!rc)
		rc = put_entry0(d, l, "/pkeys", "0xffff\n");
	if (!rc)
		rc = put_entries(d, l, "/gid_attrs/types", "RoCE v2\n", true);
	if (!rc)
		rc = put_entries(d, l, "/gid_attrs/ndevs", ndev, true);
	return rc;
}

/* The classes the container sees as sysfs has them: all but the RDMA ones,
 * which would be the host's devices (a host with an RDMA driver has them):
 * those the container sees are its vRNICs'. */
static bool class_hidden(const char *name)
{
	return !strcmp(name, "infiniband") || !strcmp(name, "infiniband_verbs") ||
	       !strcmp(name, "infiniband_mad") || !strcmp(name, "infiniband_cm");
}

int container_sys_class(int sysfd, const struct vrnic_info *vis, size_t nvis, const char *caller)
{
	char class[64], top[64], p[PATH_MAX];
	struct { char name[NAME_MAX + 1]; int fd; } *keep = NULL;
	int classfd, topfd = -1, rc = 0;
	size_t n = 0, cap = 0;
	struct statfs sf;
	struct dirent *e;
	DIR *dh;

	who = caller;
	/* sysfs: nothing in it is the image's, a plain openat is safe */
	classfd = openat(sysfd, "class", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (classfd < 0) {
		rc = -errno;
		cli_err("%s: /sys/class in the container: %s", who, strerror(-rc));
		goto out;
	}
	snprintf(class, sizeof(class), "/proc/self/fd/%d", classfd);
	dh = opendir(class);
	if (!dh) {
		rc = -errno;
		cli_err("%s: listing /sys/class in the container: %s", who, strerror(-rc));
		goto close_class;
	}
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.' || class_hidden(e->d_name))
			continue;
		if (n == cap) {
			void *nk = realloc(keep, (cap = cap ? 2 * cap : 64) * sizeof(*keep));

			if (!nk) {
				rc = -ENOMEM;
				break;
			}
			keep = nk;
		}
		snprintf(keep[n].name, sizeof(keep[n].name), "%s", e->d_name);
		keep[n].fd = openat(dirfd(dh), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (keep[n].fd >= 0)
			n++;
	}
	closedir(dh);
	if (!rc)
		rc = must_mount("tmpfs", class, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=256k"); /* a page a file */
	/* The fd still leads to the covered sysfs directory; a lookup from
	 * /sys crosses into the tmpfs just mounted, ours (nothing else runs in
	 * this mount namespace yet). */
	if (!rc) {
		topfd = openat(sysfd, "class", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (topfd < 0 || fstatfs(topfd, &sf) || sf.f_type != TMPFS_MAGIC) {
			rc = topfd < 0 ? -errno : -EXDEV;
			cli_err("%s: the tmpfs just mounted on /sys/class is not there: %s", who, strerror(-rc));
		}
		snprintf(top, sizeof(top), "/proc/self/fd/%d", topfd);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		if (snprintf(p, sizeof(p), "%s/%s", top, keep[i].name) >= (int)sizeof(p)) {
			rc = -ENAMETOOLONG;
			break;
		}
		rc = bind_fd(keep[i].fd, true, p, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
	}
	for (size_t i = 0; !rc && i < nvis; i++) {
		rc = sys_ib_tree(top, &vis[i], i);
		if (rc)
			cli_err("%s: writing /sys/class/infiniband/%s: %s", who, vis[i].name, strerror(-rc));
	}
	if (!rc)
		rc = must_mount("none", top, "none", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
				MS_NOEXEC, NULL);
	if (topfd >= 0)
		close(topfd);
	for (size_t i = 0; i < n; i++)
		close(keep[i].fd);
	free(keep);
close_class:
	close(classfd);
out:
	who = "exec";
	return rc;
}

/* Builds the new root in a tmpfs on a scratch directory. */
static int build_root(const struct container_spec *spec, const char *root, struct expose *ex,
		      size_t nex, const int *regfd, const int *devfd)
{
	const struct vrnic_info *vi = spec->vrnic;
	const char *hide[] = { spec->state_dir, "/run/netns", vi->dir };
	char p[PATH_MAX];
	struct stat st;
	int rc;

	/* The private parts first: an exposed path below /tmp shows on top. */
	rc = setup_proc(root);
	if (rc)
		return rc;
	/* A convenience (ip, ls /sys/class/net); failing it does not stop the program. */
	snprintf(p, sizeof(p), "%s/sys", root);
	if (!mkdir_p_one(p, 0555) &&
	    !mount("sysfs", p, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL)) {
		snprintf(p, sizeof(p), "%s/sys/firmware", root);
		if (lstat(p, &st) == 0)
			cover_dir(p);
		/* but what RDMA software reads there, it must find */
		int sysfd;

		snprintf(p, sizeof(p), "%s/sys", root);
		sysfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		rc = sysfd < 0 ? -errno : container_sys_class(sysfd, vi, 1, "exec");
		if (sysfd >= 0)
			close(sysfd);
		if (rc)
			return rc;
	}
	rc = setup_dev(root, devfd);
	if (rc)
		return rc;
	snprintf(p, sizeof(p), "%s/tmp", root);
	rc = mkdir_p_one(p, 01777);
	if (!rc)
		rc = must_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV,
				"mode=1777,size=" CONTAINER_TMP_SIZE);
	if (rc)
		return rc;
	for (size_t i = 0; i < nex; i++) {
		struct expose *e = &ex[i];
		size_t rl = strlen(root);

		if (snprintf(p, sizeof(p), "%s%s", root, e->path) >= (int)sizeof(p))
			return -ENAMETOOLONG;
		/* the parents: in our tmpfs, or already there in a parent's bind */
		char *slash = strrchr(p, '/');

		if (slash > p + rl) {
			*slash = '\0';
			rc = mkdir_p(p, rl, 0755);
			*slash = '/';
			if (rc) {
				cli_err("exec: creating %s: %s", p, strerror(-rc));
				return rc;
			}
		}
		if (e->link[0]) {
			if (symlink(e->link, p) < 0 && errno != EEXIST)
				return -errno;
			continue;
		}
		rc = bind_fd(e->fd, e->dir, p,
			     MS_NOSUID | MS_NODEV | (e->rw ? 0 : MS_RDONLY));
		if (rc)
			return rc;
		if (!e->rw && !strcmp(e->path, "/etc")) {
			rc = mask_private(p);
			if (rc)
				return rc;
		}
	}
	/* What an exposed path would show of the daemon: nothing. */
	for (size_t i = 0; i < sizeof(hide) / sizeof(hide[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", root, hide[i]);
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (rc = cover_dir(p)))
			return rc;
	}
	/* The region file alone, in directories of our root (read-only once
	 * pivoted): nothing can be planted beside it. */
	if (snprintf(p, sizeof(p), "%s" CLI_CONTAINER_DEVDIR "/%s", root, vi->name) >=
	    (int)sizeof(p) - 16)
		return -ENAMETOOLONG;
	rc = mkdir_p(p, strlen(root), 0755);
	if (rc) {
		cli_err("exec: mkdir %s: %s (is " CLI_CONTAINER_RUN_DIR " exposed?)", p, strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < NVRFILES && !rc; i++) {
		size_t l = strlen(p);

		if (regfd[i] < 0)
			continue;
		snprintf(p + l, sizeof(p) - l, "/%s", vrnic_files[i]);
		rc = bind_fd(regfd[i], false, p, MS_NOSUID | MS_NODEV | MS_NOEXEC);
		p[l] = '\0';
	}
	return rc;
}

static int setup_mounts(const struct container_spec *spec)
{
	const struct vrnic_info *vi = spec->vrnic;
	size_t nmax = sizeof(system_paths) / sizeof(system_paths[0]) + spec->n_ro + spec->n_rw;
	struct expose *ex = calloc(nmax, sizeof(*ex));
	char cwd[PATH_MAX], path[PATH_MAX];
	const char *root = NULL;
	int devfd[NDEV], regfd[NVRFILES], rc;
	size_t nex = 0;

	for (size_t i = 0; i < NDEV; i++)
		devfd[i] = -1;
	for (size_t i = 0; i < NVRFILES; i++)
		regfd[i] = -1;
	if (!ex)
		return -ENOMEM;
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	/* Nothing we mount may leak back to the host. */
	/* The kernel ignores source and type here; "none" keeps valgrind quiet. */
	rc = must_mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL);
	if (rc)
		goto out;
	rc = collect(spec, ex, &nex);
	if (rc)
		goto out;
	for (size_t i = 0; i < NVRFILES; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", vi->dir, vrnic_files[i]) >=
		    (int)sizeof(path)) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		regfd[i] = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (regfd[i] < 0 && (i == 0 || errno != ENOENT)) {
			rc = -errno;
			cli_err("exec: the vRNIC's %s: %s", path, strerror(-rc));
			goto out;
		}
	}
	for (size_t i = 0; i < NDEV; i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		devfd[i] = open(path, O_PATH | O_CLOEXEC);
	}
	for (size_t i = 0; i < sizeof(scratch_dirs) / sizeof(scratch_dirs[0]) && !root; i++) {
		struct stat st;

		if (stat(scratch_dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			root = scratch_dirs[i];
	}
	if (!root) {
		rc = -ENOENT;
		cli_err("exec: no directory to build the container's root in");
		goto out;
	}
	rc = must_mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m");
	if (rc)
		goto out;
	rc = build_root(spec, root, ex, nex, regfd, devfd);
	if (rc)
		goto out;
	/* pivot_root(".", ".") stacks the old root under the new one; the
	 * detach then drops it with every host mount. */
	if (chdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		rc = -errno;
		cli_err("exec: pivot_root into the container's root: %s", strerror(-rc));
		goto out;
	}
	rc = must_mount("none", "/", "none", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
			NULL);
	if (rc)
		goto out;
	/* The working directory carries over where an exposed path shows it
	 * (not where it is only an empty directory leading to one). */
	{
		bool shown = false;

		for (size_t i = 0; i < nex && !shown; i++) {
			size_t l = strlen(ex[i].path);

			shown = !ex[i].link[0] && !strncmp(cwd, ex[i].path, l) &&
				(cwd[l] == '/' || cwd[l] == '\0');
		}
		if (!shown || chdir(cwd) < 0)
			rc = chdir("/") < 0 ? -errno : 0;
	}
out:
	for (size_t i = 0; i < nex; i++)
		if (ex[i].fd >= 0)
			close(ex[i].fd);
	for (size_t i = 0; i < NDEV; i++)
		if (devfd[i] >= 0)
			close(devfd[i]);
	for (size_t i = 0; i < NVRFILES; i++)
		if (regfd[i] >= 0)
			close(regfd[i]);
	free(ex);
	return rc;
}

/* PID 1: reap everything, pass signals sent by processes on to PROGRAM,
 * exit with PROGRAM's code. */
static int init_loop(pid_t prog, const sigset_t *set)
{
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si), st;
		pid_t w;

		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			if (si.si_code != SI_KERNEL)
				kill(prog, sig);
			continue;
		}
		while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
			if (w != prog)
				continue;
			if (WIFEXITED(st))
				return WEXITSTATUS(st);
			return 128 + WTERMSIG(st);
		}
	}
}

/* Closes every fd >= first. */
static int close_from(unsigned int first);

/* Closes every fd above stderr but keep[0..n) (ascending). */
static int close_except(const int *keep, size_t n)
{
	unsigned int lo = 3;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned int)keep[i] > lo && syscall(SYS_close_range, lo, keep[i] - 1, 0) < 0) {
			if (errno != ENOSYS)
				return -errno;
			for (unsigned int fd = lo; fd < (unsigned int)keep[i]; fd++)
				close((int)fd);
		}
		lo = (unsigned int)keep[i] + 1;
	}
	return close_from(lo);
}

static int close_from(unsigned int first)
{
	DIR *d;
	struct dirent *de;
	int dfd;

	if (syscall(SYS_close_range, first, ~0U, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	/* before Linux 5.9: each fd listed in /proc/self/fd but the listing's */
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd >= (int)first && fd != dfd)
			close(fd);
	}
	closedir(d);
	return 0;
}

static int init_main(struct init_args *a)
{
	const struct container_spec *spec = a->spec;
	static const int sigs[] = { SIGCHLD, SIGHUP,  SIGINT,  SIGQUIT,
				    SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };
	sigset_t set, old;
	pid_t prog;
	char go;
	int rc;

	/* Blocked from the start: PID 1 of a namespace drops signals it neither
	 * handles nor blocks, and one the CLI forwards during setup must still
	 * reach PROGRAM. */
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* If the CLI dies, so does the container. A CLI that died before this
	 * line closed the pipe, and the read below sees EOF. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(a->sync_w);
	if (sethostname(spec->vrnic->name, strlen(spec->vrnic->name)) < 0) {
		cli_err("exec: sethostname: %s", strerror(errno));
		return CLI_EXIT_SETUP;
	}
	if (setup_mounts(spec))
		return CLI_EXIT_SETUP;
	if (read(a->sync_r, &go, 1) != 1)
		return CLI_EXIT_SETUP; /* the parent reported why */
	close(a->sync_r);
	if (net_setup_inside(spec->vrnic->ip, spec->vrnic->prefix, "eth0"))
		return CLI_EXIT_SETUP;
	/* Last: everything above needed privileges; init and PROGRAM keep none. */
	if ((rc = sandbox_lockdown())) {
		cli_err("exec: dropping privileges: %s", strerror(-rc));
		return CLI_EXIT_SETUP;
	}

	prctl(PR_SET_NAME, "unirdma-init");
	/* PROGRAM (same uid, no capabilities either) may not ptrace init: set
	 * before the fork, so that there is no window. PROGRAM's exec makes
	 * PROGRAM itself dumpable again. */
	prctl(PR_SET_DUMPABLE, 0);
	/* Nothing of the caller's beyond stdio and what it chose to pass: an
	 * inherited fd of a host directory (the state dir, say) is a way around
	 * the new root. */
	if ((rc = close_except(spec->keep_fds, spec->n_keep_fds))) {
		cli_err("exec: closing inherited file descriptors: %s", strerror(-rc));
		return CLI_EXIT_SETUP;
	}
	fflush(NULL);
	prog = fork();
	if (prog < 0) {
		cli_err("exec: fork: %s", strerror(errno));
		return CLI_EXIT_SETUP;
	}
	if (prog == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		proc_exec_or_die(spec->argv);
	}
	return init_loop(prog, &set);
}

static int write_pidfile(const char *path, pid_t pid)
{
	char tmp[PATH_MAX], buf[32];
	int fd, len, err = 0;

	/* Written whole and renamed, so a reader never sees half a number. The
	 * temporary name is mkstemp's (O_EXCL, unpredictable): a name anyone
	 * can guess, in a directory others write, would let them plant a
	 * symlink that we then write through. */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	errno = 0;
	if (fchmod(fd, 0644) < 0 || write(fd, buf, (size_t)len) != len)
		err = errno ? -errno : -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int container_run(const struct container_spec *spec)
{
	char nsname[64];
	struct init_args a = { .spec = spec };
	int p[2], rc = 0;
	pid_t pid;

	if (net_tenant_bridge(spec->state_dir, spec->vrnic->tenant, nsname, sizeof(nsname)))
		return CLI_EXIT_SETUP;
	if (pipe2(p, O_CLOEXEC) < 0) {
		cli_err("exec: pipe: %s", strerror(errno));
		return CLI_EXIT_SETUP;
	}
	a.sync_r = p[0];
	a.sync_w = p[1];
	fflush(NULL);
	/* The raw system call forks with the namespaces already in place, so the
	 * veth can be made at once. Unlike glibc's clone() it needs no second
	 * stack, which sanitizers cannot follow. glibc's idea of the thread id
	 * stays the parent's in init: init must not use raise() or pthreads. */
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC |
				       CLONE_NEWUTS | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		rc = init_main(&a);
		fflush(NULL);
		_exit(rc);
	}
	if (pid < 0) {
		int err = errno;

		cli_err("exec: creating the container's namespaces: %s%s", strerror(err),
			err == EPERM ? " (containers need root; --no-container runs on the host)" : "");
		rc = CLI_EXIT_SETUP;
		goto close_pipe;
	}
	close(p[0]);
	p[0] = -1;
	if (net_attach(nsname, pid, "eth0", NULL) < 0 ||
	    (spec->pidfile && (rc = write_pidfile(spec->pidfile, pid)) < 0)) {
		if (spec->pidfile && rc < 0)
			cli_err("exec: writing %s: %s", spec->pidfile, strerror(-rc));
		close(p[1]);
		p[1] = -1;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		rc = CLI_EXIT_SETUP;
		goto close_pipe;
	}
	if (write(p[1], "g", 1) != 1) {
		cli_err("exec: starting the container: %s", strerror(errno));
		kill(pid, SIGKILL);
	}
	close(p[1]);
	p[1] = -1;
	rc = proc_wait_forward(pid);
	if (spec->pidfile)
		unlink(spec->pidfile);
close_pipe:
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return rc;
}

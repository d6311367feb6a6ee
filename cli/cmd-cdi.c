/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-cdi.c: `unirdma cdi-hook NAME` and `unirdma cdi-hook --cni`, the
 * createRuntime hooks of the CDI specs the daemon keeps (daemon/cdi.c).  A
 * container runtime runs them after it made the container's namespaces and
 * mounts and before pivot_root and the program, with the OCI state
 * ({"ociVersion", "id", "pid", "bundle", ...}) on stdin.
 *
 *   NAME   gives the container's network namespace what `unirdma exec`
 *          gives its containers: an interface on the tenant's bridge with
 *          the vRNIC's address, eth0 in a namespace without one (podman
 *          --network none), else rdma0..rdma7 (a pod's namespace has the
 *          cluster network's eth0); nothing when an earlier hook of the
 *          pod gave the namespace that address already (join_netns).
 *          Refuses the host's network namespace (a hostNetwork pod).
 *   --cni  (device unirdma.io/vrnic=cni) CNI made the network and
 *          unirdma-cni the vRNIC (cni.c), which the spec could not name:
 *          finds the vRNIC whose recorded CNI_NETNS is the container's
 *          network namespace and mounts its region file at
 *          /run/unirdma/dev/NAME/region in the container (the device's
 *          tmpfs): open_tree() of the region in our mount namespace,
 *          setns() into the container's, move_mount() under its rootfs.
 * Both then give the container the /sys/class/infiniband tree of its
 * vRNIC(s) that `unirdma exec` gives (container_sys_class, container.c):
 * UCX needs it, and sysfs has none (no kernel RDMA device).  The runtime
 * mounted the container's /sys already; the hook covers its class
 * directory, in the container's mount namespace.  Paths under the rootfs
 * are resolved with openat2(RESOLVE_IN_ROOT): the image's symlinks lead
 * where they will lead in the container, never out of its rootfs.  A step
 * that fails makes the hook fail, and the runtime does not start the
 * container. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cli.h"
#include "cni.h"

#ifndef __NR_open_tree  /* the same number on x86_64 and aarch64 (sandbox.c) */
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif

#define STATE_MAX (1 << 20)     /* the OCI state is small: annotations at most */
#define CONFIG_MAX (16 << 20)   /* the bundle's config.json */
#define CNI_VRNICS_MAX 8        /* vRNICs of one container (one per unirdma-cni network) */
#define CNI_DEVDIR "run/unirdma/dev" /* the cni device's tmpfs, under the rootfs */
#define HOOK_LOCK_MS 10000      /* a pod's other hook holds its netns that long at most */

/* The container's PID and bundle from the OCI state on stdin. 0, or -EINVAL
 * when there is no PID (bundle may stay empty: rootfs_of refuses it). */
static int read_state(pid_t *pid, char *bundle, size_t len)
{
	char *buf = cni_read_all(STDIN_FILENO, STATE_MAX);
	json_object *st = buf ? json_tokener_parse(buf) : NULL, *v;

	*pid = 0;
	bundle[0] = '\0';
	if (st && json_object_object_get_ex(st, "pid", &v) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) < (1 << 22))
		*pid = (pid_t)json_object_get_int64(v);
	if (st && json_object_object_get_ex(st, "bundle", &v) && json_object_is_type(v, json_type_string))
		snprintf(bundle, len, "%s", json_object_get_string(v));
	json_object_put(st);
	free(buf);
	return *pid ? 0 : -EINVAL;
}

/* Whether pid's network namespace is ours or PID 1's: the host's, for a
 * hook that a runtime runs (a hostNetwork pod, podman --network host).
 * 1 if so, 0 if not, -errno (printed). */
static int host_netns(pid_t pid)
{
	static const char *const hosts[] = { "/proc/self/ns/net", "/proc/1/ns/net" };
	char path[64];
	struct stat c, h;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &c)) {
		err = -errno;
		cli_err("cdi-hook: %s: %s", path, strerror(-err));
		return err;
	}
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (!stat(hosts[i], &h) && h.st_dev == c.st_dev && h.st_ino == c.st_ino)
			return 1;
	return 0;
}

/* Takes fd's lock within HOOK_LOCK_MS. 0 or -errno (printed). */
static int lock_netns(int fd)
{
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB); waited += 20) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int err = -errno;

			cli_err("cdi-hook: locking the container's network namespace: %s", strerror(-err));
			return err;
		}
		if (waited >= HOOK_LOCK_MS) {
			cli_err("cdi-hook: the container's network namespace is still locked after %d s "
				"(another hook of the pod, or a process that holds a flock on it)", HOOK_LOCK_MS / 1000);
			return -ETIMEDOUT;
		}
		usleep(20 * 1000);
	}
	return 0;
}

/* Gives pid's network namespace the vRNIC's address on an interface of
 * the tenant's bridge (nsname), and says which in vi->ifname:
 *  - the namespace has the address on an interface with the vRNIC's MAC
 *    (net_vrnic_mac): an earlier run of this hook made it, for another
 *    container of the same pod or for this container before it restarted.
 *    Nothing to add: the containers of a pod share the interface, as they
 *    share the pod's eth0.
 *  - the address is on another interface (the pod's network has it):
 *    refused, a second interface with it would take the first one's
 *    traffic or lose its own.
 *  - else a veth with the vRNIC's MAC named eth0 when the namespace has
 *    none (podman --network none), else rdma0..rdma7, the first free.
 * Under a flock of the namespace (the nsfs inode every opener shares), so
 * that two hooks of one pod do not both pick rdma0. Leaves us in pid's
 * network namespace. 0 or -errno (printed). */
static int join_netns(pid_t pid, struct vrnic_info *vi, const char *nsname)
{
	unsigned char mac[6], have[6];
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		cli_err("cdi-hook: %s: %s", path, strerror(-rc));
		return rc;
	}
	rc = lock_netns(fd);
	if (rc)
		goto close_fd;
	if (setns(fd, CLONE_NEWNET)) {
		rc = -errno;
		cli_err("cdi-hook: entering %s: %s", path, strerror(-rc));
		goto close_fd;
	}
	net_vrnic_mac(vi, mac);
	rc = net_find_addr(vi->ip, vi->ifname, have);
	if (rc < 0) {
		cli_err("cdi-hook: the container's addresses: %s", strerror(-rc));
		goto close_fd;
	}
	if (rc == 1) {
		rc = 0;
		if (memcmp(mac, have, sizeof(mac))) {
			cli_err("cdi-hook: vRNIC %s's address %s is on %s in the container's network namespace, "
				"an interface unirdma did not make: the pod's network and tenant %s's overlap",
				vi->name, vi->ip, vi->ifname, vi->tenant);
			rc = -EADDRINUSE;
		}
		goto close_fd;
	}
	rc = net_free_ifname(vi->ifname);
	if (rc) {
		cli_err("cdi-hook: the container's network namespace has eth0 and rdma0..rdma7: "
			"no interface name is left for vRNIC %s", vi->name);
		goto close_fd;
	}
	rc = net_attach(nsname, pid, vi->ifname, mac);
	if (!rc)
		rc = net_setup_inside(vi->ip, vi->prefix, vi->ifname);
close_fd:
	close(fd);      /* drops the lock */
	return rc;
}

/* root.path of BUNDLE/config.json, made absolute (relative to the bundle). */
static int rootfs_of(const char *bundle, char *root, size_t len)
{
	char path[PATH_MAX + 16], *text;
	json_object *cfg = NULL, *r, *p;
	int fd, ret = -EINVAL;

	if (bundle[0] != '/') {
		cli_err("cdi-hook: the OCI state names no absolute bundle ('%s')", bundle);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		cli_err("cdi-hook: %s: %s", path, strerror(-ret));
		return ret;
	}
	text = cni_read_all(fd, CONFIG_MAX);
	close(fd);
	if (text)
		cfg = json_tokener_parse(text);
	free(text);
	if (cfg && json_object_object_get_ex(cfg, "root", &r) && json_object_object_get_ex(r, "path", &p) &&
	    json_object_is_type(p, json_type_string) && *json_object_get_string(p)) {
		const char *rp = json_object_get_string(p);

		if ((rp[0] == '/' ? snprintf(root, len, "%s", rp) : snprintf(root, len, "%s/%s", bundle, rp)) <
		    (int)len)
			ret = 0;
	}
	json_object_put(cfg);
	if (ret)
		cli_err("cdi-hook: %s has no usable root.path", path);
	return ret;
}

/* Enters the mount namespace of pid (the container's, before pivot_root:
 * the rootfs is where config.json says). 0 or -errno (printed). */
static int enter_mnt(pid_t pid, const char *who)
{
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNS)) {
		err = -errno;
		cli_err("%s: entering %s: %s", who, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	close(fd);
	return 0;
}

/* In the container's mount namespace: the directory rel under root,
 * resolved as the container will see it (symlinks of the image stay inside
 * the rootfs), which must be a file system of type magic (what (name) says
 * it should be). An O_PATH fd or -errno (printed). */
static int open_in_root(const char *root, const char *rel, long magic, const char *name, const char *who)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int rootfd, fd, err;
	struct statfs sf;

	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		err = -errno;
		cli_err("%s: the container's rootfs %s: %s", who, root, strerror(errno));
		return err;
	}
	fd = (int)syscall(__NR_openat2, rootfd, rel, &how, sizeof(how));
	err = fd < 0 ? -errno : 0;
	close(rootfd);
	if (fd < 0) {
		cli_err("%s: /%s in the container: %s", who, rel, strerror(-err));
		return err;
	}
	if (fstatfs(fd, &sf) || (long)sf.f_type != magic) {
		cli_err("%s: /%s in the container is not %s", who, rel, name);
		close(fd);
		return -ENOTDIR;
	}
	return fd;
}

/* In the container's mount namespace: its /sys/class with the tree of the
 * vRNICs vis[0..n) (sorted by name: the order of our library's devices). */
static int setup_sys(const char *root, const struct vrnic_info *vis, size_t n, const char *who)
{
	int sysfd = open_in_root(root, "sys", SYSFS_MAGIC,
				 "a sysfs (the runtime mounts one; UCX reads /sys/class/infiniband)", who);
	int rc;

	if (sysfd < 0)
		return sysfd;
	rc = container_sys_class(sysfd, vis, n, who);
	close(sysfd);
	if (rc)
		cli_err("%s: the container's /sys/class/infiniband could not be made: not started", who);
	return rc;
}

/* In the container's mount namespace: mounts tree at DEVDIR/NAME/region. */
static int place_region(int devfd, const char *name, int tree)
{
	int dfd, fd;

	if (mkdirat(devfd, name, 0755) && errno != EEXIST)
		goto fail;
	dfd = openat(devfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	fd = openat(dfd, "region", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd) ||
	    syscall(__NR_move_mount, tree, "", dfd, "region", MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		close(dfd);
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	cli_err("cdi-hook --cni: mounting the region of %s at /%s/%s/region: %s", name, CNI_DEVDIR, name,
		strerror(errno));
	return -1;
}

/* names[0..n) sorted (the order of our library's devices), each
 * ifnames[i] staying with its name; n is at most CNI_VRNICS_MAX. */
static void sort_by_name(char (*names)[64], char (*ifnames)[16], int n)
{
	for (int i = 1; i < n; i++) {
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[64], u[16];

			memcpy(t, names[j], sizeof(t));
			memcpy(names[j], names[j - 1], sizeof(t));
			memcpy(names[j - 1], t, sizeof(t));
			memcpy(u, ifnames[j], sizeof(u));
			memcpy(ifnames[j], ifnames[j - 1], sizeof(u));
			memcpy(ifnames[j - 1], u, sizeof(u));
		}
	}
}

static int cni_hook(pid_t pid, const char *bundle)
{
	char root[PATH_MAX], path[64], names[CNI_VRNICS_MAX][64], ifnames[CNI_VRNICS_MAX][16];
	int trees[CNI_VRNICS_MAX], n, i, opened, devfd, rc = CLI_EXIT_SETUP;
	struct vrnic_info vis[CNI_VRNICS_MAX];
	struct stat st;

	if (rootfs_of(bundle, root, sizeof(root)))
		return CLI_EXIT_SETUP;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &st)) {
		cli_err("cdi-hook --cni: %s: %s", path, strerror(errno));
		return CLI_EXIT_SETUP;
	}
	n = cni_vrnics_of_netns(cli.state_dir, st.st_dev, st.st_ino, names, ifnames, CNI_VRNICS_MAX);
	if (n < 0) {
		cli_err("cdi-hook --cni: reading %s/%s: %s", cli.state_dir, CNI_RECORD_DIR, strerror(-n));
		return CLI_EXIT_SETUP;
	}
	if (n == 0) {
		cli_err("cdi-hook --cni: unirdma-cni made no vRNIC for this container's network namespace "
			"(no record in %s/%s): the container needs a network whose conflist chains unirdma-cni "
			"with this \"stateDir\"", cli.state_dir, CNI_RECORD_DIR);
		return CLI_EXIT_SETUP;
	}
	sort_by_name(names, ifnames, n);
	/* everything of the host first: the daemon, the regions */
	for (opened = 0; opened < n; opened++) {
		char region[sizeof(vis[0].dir) + 8];

		if (vrnic_lookup(names[opened], &vis[opened]))
			goto close_trees;
		snprintf(vis[opened].ifname, sizeof(vis[opened].ifname), "%s", ifnames[opened]);
		snprintf(region, sizeof(region), "%s/region", vis[opened].dir);
		trees[opened] = (int)syscall(__NR_open_tree, AT_FDCWD, region, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (trees[opened] < 0) {
			cli_err("cdi-hook --cni: open_tree %s: %s", region, strerror(errno));
			goto close_trees;
		}
	}
	if (enter_mnt(pid, "cdi-hook --cni"))
		goto close_trees;
	devfd = open_in_root(root, CNI_DEVDIR, TMPFS_MAGIC, "the tmpfs of the device unirdma.io/vrnic=cni",
			     "cdi-hook --cni");
	if (devfd < 0)
		goto close_trees;
	for (i = 0; i < n; i++)
		if (place_region(devfd, names[i], trees[i]))
			break;
	close(devfd);
	if (i == n && !setup_sys(root, vis, (size_t)n, "cdi-hook --cni"))
		rc = CLI_EXIT_OK;
close_trees:
	while (opened-- > 0)
		close(trees[opened]);
	return rc;
}

static int hook_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	if (opt != 'c')
		return CLI_EXIT_USAGE;
	*(bool *)ctx = true;
	return 0;
}

static int run_cdi_hook(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cni", no_argument, NULL, 'c' },
		CLI_COMMON_LONGOPTS,
	};
	char nsname[64], bundle[PATH_MAX], root[PATH_MAX];
	struct vrnic_info vi;
	bool cni = false;
	int rc, first;
	pid_t pid;

	rc = cli_parse(cmd, argc, argv, "", longopts, false, hook_opt, &cni, &first);
	if (rc >= 0)
		return rc;
	if (cni && argc != first)
		return cli_usage_error(cmd, "cdi-hook --cni: takes no NAME");
	if (!cni && argc - first != 1)
		return cli_usage_error(cmd, argc == first ? "cdi-hook: NAME is missing" : "cdi-hook: takes one NAME");
	if (read_state(&pid, bundle, sizeof(bundle))) {
		cli_err("cdi-hook: no container PID in the OCI state on stdin (a container runtime runs this hook)");
		return CLI_EXIT_USAGE;
	}
	if (cni)
		return cni_hook(pid, bundle);
	/* before anything is asked or made */
	rc = host_netns(pid);
	if (rc) {
		if (rc > 0)
			cli_err("cdi-hook: the container has the host's network namespace (a hostNetwork pod, "
				"--network host): vRNIC %s's address would go on the host; the container needs a "
				"network namespace of its own", argv[first]);
		return CLI_EXIT_SETUP;
	}
	rc = vrnic_lookup(argv[first], &vi);
	if (rc)
		return rc;
	if (rootfs_of(bundle, root, sizeof(root)))
		return CLI_EXIT_SETUP;
	if (net_tenant_bridge(cli_state_dir_resolved(), vi.tenant, nsname, sizeof(nsname)))
		return CLI_EXIT_SETUP;
	if (join_netns(pid, &vi, nsname))
		return CLI_EXIT_SETUP;
	/* last: the host's mount namespace is left behind */
	if (enter_mnt(pid, "cdi-hook") || setup_sys(root, &vi, 1, "cdi-hook"))
		return CLI_EXIT_SETUP;
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_cdi_hook = {
	"cdi-hook", NULL, "attach a CDI container to its vRNIC (run by runtimes)",
	"usage: unirdma cdi-hook NAME < OCI-STATE\n"
	"       unirdma cdi-hook --cni < OCI-STATE\n"
	"\n"
	"The createRuntime hooks of the CDI specs unirdmad keeps (kind unirdma.io/vrnic,\n"
	"see unirdmad(8) --cdi-dir): a container runtime runs them with the OCI state\n"
	"of a new container on stdin. Not meant to be run by hand.\n"
	"\n"
	"With NAME (device unirdma.io/vrnic=NAME), it adds an interface with the\n"
	"address of the vRNIC NAME to the container's network namespace, on the\n"
	"tenant's bridge, as `unirdma exec` does: eth0 when the namespace has no eth0\n"
	"(podman --network none), else the first free of rdma0..rdma7 (a Kubernetes\n"
	"pod's namespace has the cluster network's eth0). When the namespace has the\n"
	"vRNIC's address already on an interface this hook made (another container of\n"
	"the same pod with the same vRNIC, or this one before a restart), it adds\n"
	"nothing and uses that interface; on any other interface it fails (the pod's\n"
	"network and the tenant's overlap). It fails when the container has the host's\n"
	"network namespace (a hostNetwork pod, --network host): the vRNIC's address\n"
	"must not go on the host.\n"
	"\n"
	"Both forms also cover the container's /sys/class with a read-only tmpfs that\n"
	"holds the classes sysfs has and the /sys/class/infiniband tree of its vRNIC,\n"
	"as `unirdma exec` does (UCX needs it; the GID's netdev is the interface with\n"
	"the vRNIC's address). The container must have a sysfs at /sys (runtimes\n"
	"mount one).\n"
	"\n"
	"With --cni (device unirdma.io/vrnic=cni), the container's network comes from\n"
	"CNI, and the CNI plugin unirdma-cni made its vRNIC: the hook finds the vRNIC\n"
	"that unirdma-cni recorded for the container's network namespace and mounts\n"
	"its region file at /run/unirdma/dev/NAME/region in the container. It fails\n"
	"(and the container does not start) when there is none.\n"
	"\n"
	"A failure exits non-zero (125: a setup step) with a message, and the runtime\n"
	"does not start the container.\n",
	run_cdi_hook,
};

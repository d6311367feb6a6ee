/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* net.c: the containers' bridge network, like a container runtime's default
 * bridge, but with the bridge in a network namespace of its own rather than
 * in the host's: the host namespace gets no interfaces and no addresses.
 *
 *   netns unirdma-<FNV-1a 32 of state dir>-<FNV-1a 64 of tenant>:
 *                           br0 (up), one port per container interface of that
 *                           tenant: ux<netns inode, 8 hex digits><ifname>
 *   each container's netns: lo (up), eth0 = the vRNIC's ip/prefix (exec, and
 *                           the CDI hook in a namespace without eth0); the CDI
 *                           hook in a pod's namespace, which has the cluster
 *                           network's eth0: rdma0..rdma7 (cmd-cdi.c)
 *
 * One bridge namespace per tenant: a tenant is a virtual network, and two
 * tenants may use the same addresses. The tenant program has no
 * CAP_NET_ADMIN or CAP_NET_RAW (sandbox.c), so it cannot change eth0's
 * address or MAC, nor send raw frames.
 *
 * The veth pair is made with iproute2 in one call (it is what creating a
 * device in one namespace with its peer in another costs least code for);
 * the container side is set up with plain ioctls from inside. A container's
 * veth pair vanishes with its network namespace, but the kernel frees a
 * namespace only when nothing holds it: a TCP socket its program closed
 * keeps it (and the address on the bridge) for as long as the socket
 * retransmits its FIN to a peer that is gone, a minute or more.  Until then
 * it answers ARP for the vRNIC's address and resets every connection to it,
 * so a container started again with the same vRNIC is unreachable
 * (podman:ucx saw it).  net_attach therefore first removes the ports whose
 * namespace no process is in (reap_stale_ports). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define NETNS_RUN_DIR "/run/netns"
#define BRIDGE_NAME "br0"

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

/* 64 bits for tenants: two tenants whose names collide would share a bridge. */
static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

/* A tenant is a virtual network: each gets a bridge namespace of its own, so
 * containers of different tenants share no L2 segment and may hold the same
 * address. */
void net_ns_name(const char *state_dir, const char *tenant, char *buf, size_t len)
{
	if (tenant)
		snprintf(buf, len, "unirdma-%08x-%016llx", fnv1a(state_dir),
			 (unsigned long long)fnv1a64(tenant));
	else
		snprintf(buf, len, "unirdma-%08x", fnv1a(state_dir));
}

static const char *ip_path(void)
{
	static const char *const cands[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return "ip";
}

/* Serializes creating and removing bridge namespaces among CLIs. The lock
 * file is in the daemon's state directory (root's): in /run/lock or /tmp any
 * user could plant a symlink there for root to create a file through, or
 * hold the lock forever. A holder that does not let go within
 * UNIRDMA_NET_LOCK_TIMEOUT_MS (default 10 s, 1 ms to 10 min) is reported,
 * not waited for. */
#define NET_LOCK_TIMEOUT_MS 10000
static int net_lock_timeout_ms(void)
{
	const char *env = getenv("UNIRDMA_NET_LOCK_TIMEOUT_MS");
	char *end;
	long v;

	if (!env || !*env)
		return NET_LOCK_TIMEOUT_MS;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 1 || v > 600000) {
		cli_err("UNIRDMA_NET_LOCK_TIMEOUT_MS=%s is not 1..600000: waiting %d ms",
			env, NET_LOCK_TIMEOUT_MS);
		return NET_LOCK_TIMEOUT_MS;
	}
	return (int)v;
}

static int net_lock(void)
{
	char path[PATH_MAX];
	int fd, timeout_ms = net_lock_timeout_ms();

	if (snprintf(path, sizeof(path), "%s/net.lock", cli_state_dir_resolved()) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0 && errno == ENOENT) {
		/* no state dir (net-down after the daemon's is gone): /run is root's too */
		snprintf(path, sizeof(path), "/run/unirdma-net.lock");
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	}
	if (fd < 0) {
		int err = -errno;

		cli_err("network lock %s: %s", path, strerror(-err));
		return err;
	}
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 20) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int err = -errno;

			close(fd);
			return err;
		}
		if (waited >= timeout_ms) {
			cli_err("network lock %s: still held by another process after %d ms, giving up",
				path, waited);
			close(fd);
			return -ETIMEDOUT;
		}
		usleep(20 * 1000);
	}
	return fd;
}

static void net_unlock(int fd)
{
	close(fd); /* drops the flock */
}

static bool ns_exists(const char *nsname)
{
	char path[128];

	snprintf(path, sizeof(path), NETNS_RUN_DIR "/%s", nsname);
	return access(path, F_OK) == 0;
}

/* Runs `ip ARGS...` (NULL-terminated), its stdout discarded. */
static int ip_run(int quiet, const char *const *args)
{
	char *argv[24];
	size_t n = 0;

	argv[n++] = (char *)ip_path();
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	return proc_run(argv, quiet | PROC_QUIET_STDOUT);
}
#define IP(quiet, ...) ip_run(quiet, (const char *const[]){ __VA_ARGS__, NULL })

/* Under the lock: br0 up and lo up in an existing namespace. Harmless when
 * they are already there. */
static int make_bridge(char *ns)
{
	if (IP(PROC_QUIET_STDERR, "-n", ns, "link", "show", BRIDGE_NAME) != 0 &&
	    IP(0, "-n", ns, "link", "add", BRIDGE_NAME, "up", "type", "bridge") != 0)
		return -EIO;
	if (IP(0, "-n", ns, "link", "set", "lo", "up") != 0)
		return -EIO;
	return 0;
}

static int ensure_locked(const char *nsname, bool check_bridge)
{
	char ns[64];
	int rc;

	snprintf(ns, sizeof(ns), "%s", nsname);
	if (ns_exists(ns))
		return check_bridge ? make_bridge(ns) : 0;
	if (IP(0, "netns", "add", ns) != 0) {
		cli_err("exec: could not create network namespace %s", ns);
		return -EIO;
	}
	rc = make_bridge(ns);
	if (rc) {
		cli_err("exec: could not create bridge %s in network namespace %s", BRIDGE_NAME, ns);
		IP(0, "netns", "del", ns);
	}
	return rc;
}

static int ensure_bridge(const char *nsname)
{
	int lock, rc;

	if (ns_exists(nsname))
		return 0; /* the creator finished under the lock; attach repairs the rest */
	lock = net_lock();
	if (lock < 0)
		return lock;
	rc = ensure_locked(nsname, false);
	net_unlock(lock);
	return rc;
}

int net_tenant_bridge(const char *state_dir, const char *tenant, char *nsname, size_t len)
{
	int rc;

	net_ns_name(state_dir, tenant, nsname, len);
	rc = ensure_bridge(nsname);
	if (rc)
		cli_err("bridge network %s: %s", nsname, strerror(-rc));
	return rc;
}

/* The inode of the initial PID namespace (PROC_PID_INIT_INO in the kernel). */
#define INIT_PIDNS_INO 0xEFFFFFFCu

/* The nsfs inodes of every process's network namespace, read once from
 * /proc into *out (malloc'd; *out NULL and 0 when /proc cannot be read). */
static size_t live_netns(unsigned long long **out)
{
	char path[NAME_MAX + 16];
	unsigned long long *inos = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir("/proc");

	*out = NULL;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", de->d_name);
		if (stat(path, &st))
			continue;
		if (n == cap) {
			unsigned long long *more = realloc(inos, (cap ? cap * 2 : 256) * sizeof(*inos));

			if (!more) {
				free(inos);
				closedir(d);
				return 0;
			}
			inos = more;
			cap = cap ? cap * 2 : 256;
		}
		inos[n++] = (unsigned long long)st.st_ino;
	}
	closedir(d);
	*out = inos;
	return n;
}

/* In a child in the bridge namespace ns: removes each port ux<inode><ifname>
 * whose network namespace no process is in.  The ports are listed before
 * /proc is read, so a port that a concurrent hook is making belongs to a
 * container whose process exists by then and is kept.  Only from the
 * initial PID namespace, whose /proc shows every process; elsewhere (a CLI
 * in a container of its own) nothing is removed.  Best effort: a failure
 * leaves the ports as they were, and attaching goes on. */
static void reap_stale_ports(const char *ns)
{
	char path[sizeof(NETNS_RUN_DIR) + NAME_MAX + 2];
	struct stat st;
	pid_t child;
	int status;

	if (stat("/proc/self/ns/pid", &st) || st.st_ino != INIT_PIDNS_INO)
		return;
	child = fork();
	if (child < 0)
		return;
	if (child == 0) {
		struct if_nameindex *ifs, *i;
		unsigned long long *live;
		size_t nlive;
		int fd;

		snprintf(path, sizeof(path), NETNS_RUN_DIR "/%s", ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(1);
		ifs = if_nameindex();
		if (!ifs)
			_exit(1);
		nlive = live_netns(&live);
		if (!live)
			_exit(1);       /* cannot tell: keep every port */
		for (i = ifs; i->if_index; i++) {
			unsigned long long ino;
			char *end;
			size_t k;

			if (strncmp(i->if_name, "ux", 2) || strlen(i->if_name) < 10)
				continue;
			memcpy(path, i->if_name + 2, 8);
			path[8] = '\0';
			ino = strtoull(path, &end, 16);
			for (k = 0; k < nlive && live[k] != ino; k++)
				;
			if (*end || k < nlive)
				continue;
			IP(PROC_QUIET_STDERR, "link", "del", i->if_name);
		}
		free(live);
		if_freenameindex(ifs);
		_exit(0);
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
}

int net_attach(const char *nsname, pid_t pid, const char *ifname, const unsigned char *mac)
{
	char ns[64], port[IFNAMSIZ], pidstr[16], path[64], macstr[18];
	struct stat st;
	int rc, lock;

	snprintf(ns, sizeof(ns), "%s", nsname);
	/* Named after the container's network namespace, not its PID: the port
	 * lives as long as that namespace, which a pod keeps after the
	 * container's init is gone and its PID maybe reused. nsfs inode
	 * numbers are 32 bits, unique among the namespaces that exist; the
	 * "ux" is what tests and people look for (cli.sh counts ": ux"). */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &st)) {
		rc = -errno;
		cli_err("exec: %s: %s", path, strerror(-rc));
		return rc;
	}
	if (snprintf(port, sizeof(port), "ux%08llx%s", (unsigned long long)st.st_ino, ifname) >= (int)sizeof(port))
		return -ENAMETOOLONG;
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	reap_stale_ports(ns);
	if (mac)
		snprintf(macstr, sizeof(macstr), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
			 mac[4], mac[5]);
	for (int attempt = 0;; attempt++) {
		/* IFLA_NET_NS_PID is resolved in our PID namespace: pid is the
		 * container init's PID as clone() returned it. */
		if (mac)
			rc = IP(attempt ? 0 : PROC_QUIET_STDERR, "-n", ns, "link", "add", port, "master", BRIDGE_NAME,
				"up", "type", "veth", "peer", "name", ifname, "address", macstr, "netns", pidstr);
		else
			rc = IP(attempt ? 0 : PROC_QUIET_STDERR, "-n", ns, "link", "add", port, "master", BRIDGE_NAME,
				"up", "type", "veth", "peer", "name", ifname, "netns", pidstr);
		if (rc == 0)
			return 0;
		if (attempt) {
			cli_err("exec: could not create the veth pair %s/%s on %s in network namespace %s",
				port, ifname, BRIDGE_NAME, ns);
			return -EIO;
		}
		/* Someone removed the namespace or its bridge (net-down): repair once. */
		lock = net_lock();
		if (lock < 0)
			return lock;
		rc = ensure_locked(ns, true);
		net_unlock(lock);
		if (rc)
			return rc;
	}
}

/* Whether name is prefix itself (the one namespace of versions before
 * tenant networks) or prefix-<16 hex digits>. */
static bool ns_of(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);

	if (strncmp(name, prefix, pl))
		return false;
	if (!name[pl])
		return true;
	if (name[pl] != '-' || strlen(name + pl + 1) != 16)
		return false;
	return strspn(name + pl + 1, "0123456789abcdef") == 16;
}

int net_remove_bridges(const char *state_dir)
{
	char prefix[64], (*names)[NAME_MAX + 1] = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int lock, rc = 0, removed = 0;

	net_ns_name(state_dir, NULL, prefix, sizeof(prefix));
	lock = net_lock();
	if (lock < 0)
		return lock;
	d = opendir(NETNS_RUN_DIR);
	if (!d) {
		rc = errno == ENOENT ? 0 : -errno;
		goto unlock;
	}
	/* Names first, removal after: no deleting under a running readdir. */
	while ((de = readdir(d))) {
		void *more;

		if (!ns_of(de->d_name, prefix))
			continue;
		more = realloc(names, (n + 1) * sizeof(*names));
		if (!more) {
			rc = -ENOMEM;
			break;
		}
		names = more;
		snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++) {
		if (IP(0, "netns", "del", names[i]) != 0) {
			rc = -EIO;
			continue;
		}
		printf("removed network namespace %s\n", names[i]);
		removed++;
	}
	free(names);
unlock:
	net_unlock(lock);
	return rc ? rc : removed;
}

static int if_up(int sock, const char *ifname)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}

static int if_set_addr(int sock, const char *ifname, unsigned long req, struct in_addr a)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	memcpy(&ifr.ifr_addr, &sin, sizeof(sin));
	if (ioctl(sock, req, &ifr) < 0)
		return -errno;
	return 0;
}

int net_setup_inside(const char *ip, int prefix, const char *ifname)
{
	struct in_addr addr, mask;
	const char *step = "up";
	int sock, rc;

	if (inet_pton(AF_INET, ip, &addr) != 1 || prefix < 0 || prefix > 32) {
		cli_err("exec: the vRNIC's address %s/%d is not usable", ip, prefix);
		return -EINVAL;
	}
	mask.s_addr = htonl(prefix ? 0xffffffffu << (32 - prefix) : 0);
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	rc = if_up(sock, "lo");
	if (rc) {
		ifname = "lo";
	} else {
		step = "address";
		rc = if_set_addr(sock, ifname, SIOCSIFADDR, addr);
	}
	if (!rc) {
		step = "netmask";
		rc = if_set_addr(sock, ifname, SIOCSIFNETMASK, mask);
	}
	if (!rc) {
		step = "up";
		rc = if_up(sock, ifname);
	}
	if (rc)
		cli_err("exec: network setup in the container (%s %s): %s", ifname, step, strerror(-rc));
	close(sock);
	return rc;
}

void net_vrnic_mac(const struct vrnic_info *vi, unsigned char mac[6])
{
	uint32_t h = fnv1a(vi->tenant);
	struct in_addr a = { 0 };

	inet_pton(AF_INET, vi->ip, &a);
	mac[0] = (unsigned char)((h & 0xfc) | 0x02); /* locally administered, unicast */
	mac[1] = (unsigned char)(h >> 8);
	memcpy(mac + 2, &a.s_addr, 4);                /* network order: the address as written */
}

int net_find_addr(const char *ip, char *ifname, unsigned char mac[6])
{
	struct ifaddrs *ifa, *i;
	struct in_addr want;
	int rc = 0;

	if (inet_pton(AF_INET, ip, &want) != 1)
		return -EINVAL;
	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || sin->sin_addr.s_addr != want.s_addr)
			continue;
		snprintf(ifname, IFNAMSIZ, "%s", i->ifa_name);
		rc = 1;
		break;
	}
	freeifaddrs(ifa);
	if (rc == 1) {
		struct ifreq ifr = { 0 };
		int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		if (sock < 0 || ioctl(sock, SIOCGIFHWADDR, &ifr) < 0)
			rc = -errno;
		else
			memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
		if (sock >= 0)
			close(sock);
	}
	return rc;
}

int net_free_ifname(char *ifname)
{
	if (!if_nametoindex("eth0") && errno == ENODEV) {
		snprintf(ifname, IFNAMSIZ, "eth0");
		return 0;
	}
	for (int i = 0; i < 8; i++) {
		snprintf(ifname, IFNAMSIZ, "rdma%d", i);
		if (!if_nametoindex(ifname) && errno == ENODEV)
			return 0;
	}
	return -EEXIST;
}

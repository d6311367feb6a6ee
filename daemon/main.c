/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* unirdmad: the host daemon.  One per host (per state directory): it owns the
 * vRNICs, serves their control mailboxes and runs the software RNIC engine. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <grp.h>

#include "daemon.h"
#include "directory.h"
#include "log.h"

struct urd_daemon *urd_d;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: unirdmad [--state-dir DIR] [--foreground] [--metrics ADDR:PORT|off]\n"
		"                [--metrics-token-file FILE] [--admin-group GROUP] [--debug]\n"
		"                [--underlay DEV] [--underlay-gso on|off] [--cluster URL[,URL...]]\n"
		"                [--host-name NAME]\n"
		"                [--cdi-dir DIR|off]\n"
		"\n"
		"The unirdma host daemon: virtual RDMA NICs for containers and VMs.\n"
		"  --state-dir DIR  where the admin socket and the vRNIC region files live\n"
		"                   (default /run/unirdma; use a tmpfs)\n"
		"  --foreground     do not detach; log to stderr\n"
		"  --metrics A:P    Prometheus metrics at http://A:P/metrics\n"
		"                   (default 127.0.0.1:9464; port 0 picks a free one; off)\n"
		"  --metrics-token-file F  the bearer token scrapers must send (default: a\n"
		"                   fresh one in DIR/metrics.token, mode 0640)\n"
		"  --admin-group G  members of group G may manage too (default: root only)\n"
		"  --underlay DEV   carry traffic to other hosts as RoCEv2 (UDP 4791) on DEV;\n"
		"                   each vRNIC's address is added to DEV as a /32\n"
		"  --underlay-gso on|off  send runs of packets in one syscall (UDP GSO) and\n"
		"                   receive them so (UDP GRO); default on.  Captures taken\n"
		"                   before the NIC (veth, bridge) then show 64 KiB trains\n"
		"  --debug          verbose logging\n"
		"  --cluster URLS   join the cluster whose directory is the etcd at URLS\n"
		"                   (http://IP:2379, comma separated); default: alone\n"
		"  --host-name N    this host's name in the cluster (default: hostname)\n"
		"  --cdi-dir DIR    keep a CDI spec of the vRNICs (kind unirdma.io/vrnic) in\n"
		"                   DIR for podman, CRI-O, containerd, Docker (default\n"
		"                   " URD_DEFAULT_CDI_DIR " with the default state directory, else off)\n"
		"Manage it with unirdma(8).  SIGTERM or SIGINT stop it cleanly.\n");
}

/* True if dir is a mount point of a tmpfs we mounted ("unirdma") in an
 * earlier life that was killed before it could unmount it. */
static bool our_stale_mount(const char *dir)
{
	char real[PATH_MAX], src[256], target[PATH_MAX + 1], type[64];
	bool found = false;
	FILE *f;

	if (!realpath(dir, real) || !(f = fopen("/proc/self/mounts", "r")))
		return false;
	/* paths with spaces are escaped in /proc/mounts: those never match,
	 * and we then mount over them (harmless, only less tidy) */
	while (fscanf(f, "%255s %4096s %63s %*[^\n]", src, target, type) == 3)
		if (!strcmp(src, "unirdma") && !strcmp(type, "tmpfs") && !strcmp(target, real))
			found = true;
	fclose(f);
	return found;
}

/* STATE/vrnics holds one directory per vRNIC, each a tmpfs of its own sized
 * to that vRNIC's quota (vrnic.c); this one holds those mount points.
 * Returns true if we mounted it (and must unmount it at exit). */
static bool ensure_tmpfs(const char *dir)
{
	struct statfs st;

	/* a killed predecessor's mount: take it over so that we own (and
	 * remove) our own; its tenants keep their mappings */
	if (our_stale_mount(dir))
		umount2(dir, MNT_DETACH);
	else if (!statfs(dir, &st) && st.f_type == TMPFS_MAGIC)
		return false;
	/* Only root writes here (tenants reach their own vRNIC's tmpfs only);
	 * huge=within_size as on those, for bench/run.sh's floor, which puts
	 * its shared buffers here.  Kernels without THP for tmpfs refuse the
	 * option: mount without. */
	if (mount("unirdma", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,huge=within_size") &&
	    mount("unirdma", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755")) {
		log_warn("%s is not on tmpfs and mounting one failed (%s)", dir, strerror(errno));
		return false;
	}
	return true;
}

/* Leftovers of a daemon that was killed: vRNIC file systems nobody serves
 * (their tenants keep what they mapped). */
static void clean_stale(const char *dir)
{
	char path[1024];
	DIR *dh = opendir(dir);
	struct dirent *e;

	if (!dh)
		return;
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		umount2(path, MNT_DETACH);
		snprintf(path, sizeof(path), "%s/%s/region", dir, e->d_name);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s/guest-ram", dir, e->d_name);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (rmdir(path))
			log_warn("stale entry %s left in place: %s", path, strerror(errno));
	}
	closedir(dh);
}

/* The tmpfs main mounted on STATE/vrnics, while a return from main must
 * take it away (exit handlers run then; daemon()'s parent leaves with
 * _exit, and children the daemon forks exec or _exit). */
static char startup_mount[PATH_MAX];

static void undo_startup_mount(void)
{
	if (startup_mount[0])
		umount2(startup_mount, MNT_DETACH);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "admin-group", required_argument, NULL, 'g' },
		{ "metrics-token-file", required_argument, NULL, 'T' },
		{ "underlay", required_argument, NULL, 'U' },
		{ "underlay-gso", required_argument, NULL, 'G' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "host-name", required_argument, NULL, 'H' },
		{ "cdi-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = URD_DEFAULT_STATE_DIR;
	const char *cdi_dir = NULL;             /* NULL: the default (see usage) */
	const char *metrics = "127.0.0.1:9464", *admin_group = NULL;
	const char *metrics_token = NULL;       /* NULL: a fresh one in STATE/metrics.token */
	const char *underlay = NULL;            /* --underlay DEV: other hosts over RoCEv2 */
	bool gso = true;                        /* --underlay-gso on|off */
	const char *cluster = NULL, *host_name = NULL;
	char derr[256];
	bool foreground = false, mounted_tmpfs;
	struct urd_daemon *d;
	char path[512];
	sigset_t sigs;
	int c, lock_fd, sig, ret;

	while ((c = getopt_long(argc, argv, "s:fdh", opts, NULL)) != -1) {
		switch (c) {
		case 's': state = optarg; break;
		case 'f': foreground = true; break;
		case 'd': urd_log_level = URD_LOG_DEBUG; break;
		case 'm': metrics = optarg; break;
		case 'g': admin_group = optarg; break;
		case 'T': metrics_token = optarg; break;
		case 'U': underlay = optarg; break;
		case 'G':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "unirdmad: --underlay-gso %s: on or off\n", optarg);
				return 2;
			}
			gso = !strcmp(optarg, "on");
			break;
		case 'C': cluster = optarg; break;
		case 'H': host_name = optarg; break;
		case 'D': cdi_dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (cdi_dir && strcmp(cdi_dir, "off") && cdi_dir[0] != '/') {
		fprintf(stderr, "unirdmad: --cdi-dir %s: an absolute path is needed (or off)\n", cdi_dir);
		return 2;
	}
	if (strlen(state) > 300) {
		fprintf(stderr, "unirdmad: state directory path too long\n");
		return 2;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	urd_d = d;
	snprintf(d->state_dir, sizeof(d->state_dir), "%s", state);
	pthread_mutex_init(&d->lock, NULL);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	d->epoch = (uint32_t)rand();
	d->next_qpn = 0x100 + ((uint32_t)rand() & 0x7fff) * 16;
	d->next_srqn = 1;

	if (mkdir(state, 0755) && errno != EEXIST) {
		fprintf(stderr, "unirdmad: cannot create %s: %s\n", state, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/unirdmad.lock", state);
	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB)) {
		fprintf(stderr, "unirdmad: another unirdmad serves %s\n", state);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/vrnics", state);
	clean_stale(path);
	if (mkdir(path, 0755) && errno != EEXIST) {
		fprintf(stderr, "unirdmad: cannot create %s: %s\n", path, strerror(errno));
		return 1;
	}
	mounted_tmpfs = ensure_tmpfs(path);
	if (mounted_tmpfs) {    /* a start that fails from here on leaves no mount behind */
		snprintf(startup_mount, sizeof(startup_mount), "%s", path);
		atexit(undo_startup_mount);
	}
	if (!foreground && daemon(1, 0)) {
		fprintf(stderr, "unirdmad: cannot detach: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/unirdmad.pid", state);
	{
		FILE *f = fopen(path, "w");

		if (f) {
			fprintf(f, "%d\n", getpid());
			fclose(f);
		}
	}

	/* every thread inherits this mask; main takes the signals with sigwait */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	guard_install();
	ret = vrnic_monitor_start(d);
	if (ret) {
		log_err("cannot start the fault monitor: %s", strerror(-ret));
		return 1;
	}

	if (underlay) {
		char err[256];

		ret = engine_wire_start(d, underlay, gso, err, sizeof(err));
		if (ret) {
			log_err("cannot start the fabric: %s", err);
			return 1;
		}
	}
	ret = engine_start(d);
	if (ret) {
		log_err("cannot start the engine: %s", strerror(-ret));
		return 1;
	}
	if (admin_group) {
		struct group *g = getgrnam(admin_group);

		if (!g) {
			log_err("no group named %s", admin_group);
			engine_stop(d);
			return 1;
		}
		d->admin_gid = g->gr_gid;
		d->admin_gid_set = true;
	}
	ret = directory_init(d, cluster, host_name, derr, sizeof(derr));
	if (!ret)
		ret = directory_start(d);
	if (ret) {
		log_err("cluster directory: %s", ret == -EINVAL ? derr : strerror(-ret));
		engine_stop(d);
		return 1;
	}
	if (!cdi_dir && !strcmp(state, URD_DEFAULT_STATE_DIR))
		cdi_dir = URD_DEFAULT_CDI_DIR;
	ret = cdi_init(d, cdi_dir && strcmp(cdi_dir, "off") ? cdi_dir : NULL);
	if (ret) {
		log_err("cannot keep a CDI spec: %s", strerror(-ret));
		directory_stop(d);
		engine_stop(d);
		return 1;
	}
	pthread_mutex_lock(&d->lock);
	cdi_update(d);          /* no vRNICs yet: removes what a killed predecessor left */
	pthread_mutex_unlock(&d->lock);
	ret = admin_start(d);
	if (ret) {
		log_err("cannot open the admin socket in %s: %s", state, strerror(-ret));
		directory_stop(d);
		engine_stop(d);
		return 1;
	}
	if (strcmp(metrics, "off")) {
		ret = metrics_start(d, metrics, metrics_token);
		if (ret)
			log_warn("metrics endpoint %s not started: %s", metrics,
				 ret == -EADDRINUSE ? "address in use or not available" : "bad address or token");
		else
			log_info("metrics at http://%.*s:%d/metrics", (int)(strrchr(metrics, ':') - metrics), metrics,
				 metrics_port());
	}
	log_info("unirdmad %s serving %s (pid %d)", UNIRDMA_VERSION, state, getpid());

	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig != SIGHUP)
			break;
	}
	log_info("stopping on signal %d", sig);
	admin_stop();
	metrics_stop();
	vrnic_monitor_stop();
	directory_stop(d);
	pthread_mutex_lock(&d->lock);
	vrnic_destroy_all(d);
	pthread_mutex_unlock(&d->lock);
	cdi_fini();
	engine_stop(d);
	engine_wire_stop(d);
	snprintf(path, sizeof(path), "%s/unirdmad.pid", state);
	unlink(path);
	if (mounted_tmpfs) {
		snprintf(path, sizeof(path), "%s/vrnics", state);
		umount2(path, MNT_DETACH);
		startup_mount[0] = '\0';
	}
	log_info("stopped");
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cdi.c: the Container Device Interface spec of this daemon's vRNICs.
 *
 * A vRNIC is not a kernel device but a region file, our libibverbs.so.1 and
 * a network address.  A CDI spec (cdiVersion 0.5.0, the newest podman 4.3
 * reads) describes exactly that to any CDI-aware runtime (podman, CRI-O,
 * containerd >= 1.7, Docker >= 25), so that
 *
 *     podman run --network none --device unirdma.io/vrnic=NAME IMAGE PROGRAM
 *
 * gives PROGRAM, in an image of its own:
 *   - /run/unirdma/dev/NAME/region: the vRNIC's region file (bind, rw), where
 *     the library looks by default (UNIRDMA_DEVDIR unset);
 *   - /opt/unirdma/lib: the directory of our libibverbs.so.1 (bind, ro), with
 *     LD_LIBRARY_PATH pointing there;
 *   - /dev/infiniband/uverbs0: a node for tools that look for one (UCX
 *     lists an IB device only if /dev/infiniband/<dev_name> exists);
 *   - a createRuntime hook, `unirdma --state-dir STATE cdi-hook NAME`, that
 *     puts an eth0 with the vRNIC's address on the tenant's bridge into the
 *     container's network namespace, as `unirdma exec` does, and the
 *     /sys/class/infiniband tree of the vRNIC that UCX reads into its /sys
 *     (cli/cmd-cdi.c; sysfs has none: there is no kernel RDMA device).
 *
 * A second spec file (unirdma-cni.json, or unirdma-<hash>-cni.json) holds
 * one more device of the kind, `cni`, for containers whose network and vRNIC
 * the CNI plugin unirdma-cni makes (cli/cni.c).  The runtime resolves CDI
 * devices when it creates the container, before CNI ADD made the vRNIC, so
 * this device cannot name it: it gives an empty tmpfs at /run/unirdma/dev,
 * the library, the environment, the uverbs0 node, and the createRuntime hook
 * `unirdma --state-dir STATE cdi-hook --cni`, which finds the vRNIC that
 * unirdma-cni made for the container's network namespace and mounts its
 * region file into that tmpfs.  It lives in a file of its own because it is
 * always there while the daemon runs, while the vRNICs' file exists only
 * while there are container vRNICs.  A vRNIC named "cni" is left out of the
 * vRNICs' file (the name is the CNI device's), and so is one whose name is
 * no CDI device name (cdi_name_ok).
 *
 * The spec is one file, rewritten atomically (a temporary file renamed over
 * it) whenever a vRNIC is created, deleted or changed, and removed when the
 * daemon exits or has no container vRNIC (a spec without devices is invalid
 * CDI).  VM vRNICs are not in it.  Big lock held for cdi_update: the file is
 * small and lives on a tmpfs (/var/run). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

#define CDI_KIND "unirdma.io/vrnic"
#define CDI_LIBDIR "/opt/unirdma/lib"
#define CDI_CNI_DEVICE "cni"    /* the device of containers that unirdma-cni serves */

static struct {
	bool on;
	char path[PATH_MAX];            /* the spec file */
	char cni_path[PATH_MAX];        /* the spec file of the CNI device */
	char dir[PATH_MAX];             /* --cdi-dir */
	bool own_dir;                   /* made by us (or a killed predecessor): removed if empty */
	char cli[PATH_MAX];             /* the unirdma CLI next to us: the hook */
	char libdir[PATH_MAX];          /* our libibverbs.so.1's directory */
	bool failed;                    /* the last write failed (logged once) */
} cdi;

/* The default state directory gets unirdma.json; any other gets a name of
 * its own, so that daemons of several state directories never write one file. */
static void spec_name(const char *state_dir, const char *suffix, char *buf, size_t len)
{
	uint32_t h = 2166136261u;

	if (!strcmp(state_dir, URD_DEFAULT_STATE_DIR)) {
		snprintf(buf, len, "unirdma%s.json", suffix);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)state_dir; *p; p++)
		h = (h ^ *p) * 16777619u;
	snprintf(buf, len, "unirdma-%08x%s.json", h, suffix);
}

static void cni_spec_write(const struct urd_daemon *d);

/* Whether dir holds files and all of them are ours (a predecessor on our
 * state dir was killed after it made the directory): the directory is then
 * ours to remove when we leave it empty, so that the host is left as found. */
static bool only_ours(const char *dir, const char *name, const char *cni_name)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	int ours = 0, others = 0;

	if (!dh)
		return false;
	while ((e = readdir(dh))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strncmp(e->d_name, name, strlen(name)) || !strncmp(e->d_name, cni_name, strlen(cni_name)))
			ours++;         /* the spec, the cni spec, their .tmp */
		else
			others++;
	}
	closedir(dh);
	return ours && !others;
}

int cdi_init(struct urd_daemon *d, const char *dir)
{
	const char *libdir = getenv("UNIRDMA_LIBDIR");
	char exe[PATH_MAX], name[64], cni_name[64], guess[PATH_MAX + 16], *bindir;
	ssize_t n;

	if (!dir)
		return 0;
	spec_name(d->state_dir, "", name, sizeof(name));
	spec_name(d->state_dir, "-cni", cni_name, sizeof(cni_name));
	if (!mkdir(dir, 0755)) {
		cdi.own_dir = true;
	} else if (errno == EEXIST) {
		cdi.own_dir = only_ours(dir, name, cni_name);
	} else {
		log_err("--cdi-dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	snprintf(cdi.dir, sizeof(cdi.dir), "%s", dir);
	if (snprintf(cdi.path, sizeof(cdi.path), "%s/%s", dir, name) >= (int)sizeof(cdi.path) ||
	    snprintf(cdi.cni_path, sizeof(cdi.cni_path), "%s/%s", dir, cni_name) >= (int)sizeof(cdi.cni_path))
		return -ENAMETOOLONG;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	bindir = dirname(exe);
	snprintf(cdi.cli, sizeof(cdi.cli), "%s/unirdma", bindir);
	if (access(cdi.cli, X_OK))
		log_warn("cdi: %s is missing: containers given a vRNIC get no network", cdi.cli);
	/* where the CLI's exec finds it: $UNIRDMA_LIBDIR, else <bindir>/../lib */
	if (libdir && *libdir)
		snprintf(guess, sizeof(guess), "%s", libdir);
	else
		snprintf(guess, sizeof(guess), "%s/../lib", bindir);
	if (!realpath(guess, cdi.libdir)) {
		log_err("cdi: the library directory %s: %s (set UNIRDMA_LIBDIR)", guess, strerror(errno));
		return -ENOENT;
	}
	snprintf(guess, sizeof(guess), "%s/libibverbs.so.1", cdi.libdir);
	if (access(guess, R_OK))
		log_warn("cdi: %s is missing: containers would load their own libibverbs", guess);
	cdi.on = true;
	log_info("cdi: spec %s (kind %s, library %s)", cdi.path, CDI_KIND, cdi.libdir);
	cni_spec_write(d);
	/* a start that fails after this (the admin socket) leaves no spec behind */
	atexit(cdi_fini);
	return 0;
}

static json_object *mount_json(const char *host, const char *cont, const char *mode)
{
	json_object *m = json_object_new_object(), *opts = json_object_new_array();

	json_object_object_add(m, "hostPath", json_object_new_string(host));
	json_object_object_add(m, "containerPath", json_object_new_string(cont));
	json_object_array_add(opts, json_object_new_string("bind"));
	json_object_array_add(opts, json_object_new_string(mode));
	json_object_object_add(m, "options", opts);
	return m;
}

/* The createRuntime hook `unirdma --state-dir STATE cdi-hook ARG`. */
static json_object *hook_json(const struct urd_daemon *d, const char *arg)
{
	json_object *hook = json_object_new_object(), *args = json_object_new_array();

	json_object_object_add(hook, "hookName", json_object_new_string("createRuntime"));
	json_object_object_add(hook, "path", json_object_new_string(cdi.cli));
	json_object_array_add(args, json_object_new_string("unirdma"));
	json_object_array_add(args, json_object_new_string("--state-dir"));
	json_object_array_add(args, json_object_new_string(d->state_dir));
	json_object_array_add(args, json_object_new_string("cdi-hook"));
	json_object_array_add(args, json_object_new_string(arg));
	json_object_object_add(hook, "args", args);
	return hook;
}

static json_object *uverbs_nodes_json(void)
{
	json_object *nodes = json_object_new_array(), *node = json_object_new_object();

	json_object_object_add(node, "path", json_object_new_string("/dev/infiniband/uverbs0"));
	json_object_object_add(node, "hostPath", json_object_new_string("/dev/null"));
	json_object_array_add(nodes, node);
	return nodes;
}

static json_object *device_json(const struct urd_daemon *d, const struct urd_vrnic *vr)
{
	json_object *dev = json_object_new_object(), *ed = json_object_new_object();
	json_object *mounts = json_object_new_array(), *nodes = uverbs_nodes_json();
	json_object *hooks = json_object_new_array(), *hook = hook_json(d, vr->name);
	json_object *env = json_object_new_array();
	char host[700], cont[128], var[128];

	snprintf(host, sizeof(host), "%s/region", vr->dir);
	snprintf(cont, sizeof(cont), "/run/unirdma/dev/%s/region", vr->name);
	json_object_array_add(mounts, mount_json(host, cont, "rw"));
	snprintf(var, sizeof(var), "UNIRDMA_VRNIC=%s", vr->name);
	json_object_array_add(env, json_object_new_string(var));
	json_object_array_add(hooks, hook);
	json_object_object_add(ed, "env", env);
	json_object_object_add(ed, "mounts", mounts);
	json_object_object_add(ed, "deviceNodes", nodes);
	json_object_object_add(ed, "hooks", hooks);
	json_object_object_add(dev, "name", json_object_new_string(vr->name));
	json_object_object_add(dev, "containerEdits", ed);
	return dev;
}

static int write_atomically(const char *path, const char *text)
{
	char tmp[PATH_MAX + 8];
	size_t len = strlen(text), off = 0;
	int fd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/* What every device of a spec gets: the kind, the library and its path. */
static void add_spec_head(json_object *spec, json_object *devs)
{
	json_object *ed = json_object_new_object(), *env = json_object_new_array();
	json_object *mounts = json_object_new_array();

	json_object_object_add(spec, "cdiVersion", json_object_new_string("0.5.0"));
	json_object_object_add(spec, "kind", json_object_new_string(CDI_KIND));
	json_object_object_add(spec, "devices", devs);
	json_object_array_add(env, json_object_new_string("LD_LIBRARY_PATH=" CDI_LIBDIR));
	json_object_object_add(ed, "env", env);
	json_object_array_add(mounts, mount_json(cdi.libdir, CDI_LIBDIR, "ro"));
	json_object_object_add(ed, "mounts", mounts);
	json_object_object_add(spec, "containerEdits", ed);
}

/* The file of the `cni` device: written once at start (it names no vRNIC),
 * removed at exit. */
static void cni_spec_write(const struct urd_daemon *d)
{
	json_object *spec = json_object_new_object(), *devs = json_object_new_array();
	json_object *dev = json_object_new_object(), *ed = json_object_new_object();
	json_object *mounts = json_object_new_array(), *tmpfs = json_object_new_object();
	json_object *opts = json_object_new_array(), *hooks = json_object_new_array();
	static const char *const tmpfs_opts[] = { "nosuid", "nodev", "noexec", "mode=755", "size=1m" };
	int ret;

	/* the empty directory the hook mounts the vRNIC's region file into */
	json_object_object_add(tmpfs, "hostPath", json_object_new_string("tmpfs"));
	json_object_object_add(tmpfs, "containerPath", json_object_new_string("/run/unirdma/dev"));
	json_object_object_add(tmpfs, "type", json_object_new_string("tmpfs"));
	for (size_t i = 0; i < sizeof(tmpfs_opts) / sizeof(tmpfs_opts[0]); i++)
		json_object_array_add(opts, json_object_new_string(tmpfs_opts[i]));
	json_object_object_add(tmpfs, "options", opts);
	json_object_array_add(mounts, tmpfs);
	json_object_array_add(hooks, hook_json(d, "--cni"));
	json_object_object_add(ed, "mounts", mounts);
	json_object_object_add(ed, "deviceNodes", uverbs_nodes_json());
	json_object_object_add(ed, "hooks", hooks);
	json_object_object_add(dev, "name", json_object_new_string(CDI_CNI_DEVICE));
	json_object_object_add(dev, "containerEdits", ed);
	json_object_array_add(devs, dev);
	add_spec_head(spec, devs);
	ret = write_atomically(cdi.cni_path, json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY |
									    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(spec);
	if (ret)
		log_err("cdi: writing %s: %s (containers of unirdma-cni networks get no vRNIC)",
			cdi.cni_path, strerror(-ret));
}

/* A CDI device name (the CDI spec's parser): letters, digits, '-', '_',
 * '.' and ':', beginning and ending with a letter or a digit.  vRNIC names
 * may begin with '_' or end with '-' or '_'; one such name in the spec
 * would make runtimes refuse the whole file, every vRNIC's device. */
static bool cdi_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

void cdi_update(struct urd_daemon *d)
{
	json_object *spec, *devs;
	int ndev = 0, ret;

	if (!cdi.on)
		return;
	spec = json_object_new_object();
	devs = json_object_new_array();
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];

		if (!vr || vr->vm || vr->failed || !strcmp(vr->name, CDI_CNI_DEVICE))
			continue;
		if (!cdi_name_ok(vr->name)) {
			log_warn("cdi: vRNIC %s is left out of %s: a CDI device name begins and ends with a letter "
				 "or a digit", vr->name, cdi.path);
			continue;
		}
		json_object_array_add(devs, device_json(d, vr));
		ndev++;
	}
	if (!ndev) {
		json_object_put(spec);
		json_object_put(devs);
		if (unlink(cdi.path) && errno != ENOENT)
			log_warn("cdi: removing %s: %s", cdi.path, strerror(errno));
		return;
	}
	add_spec_head(spec, devs);
	ret = write_atomically(cdi.path, json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PRETTY |
									JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(spec);
	if (ret && !cdi.failed)
		log_err("cdi: writing %s: %s (containers see the previous spec)", cdi.path, strerror(-ret));
	else if (!ret && cdi.failed)
		log_info("cdi: %s written again", cdi.path);
	cdi.failed = ret != 0;
}

void cdi_fini(void)
{
	if (cdi.on && unlink(cdi.path) && errno != ENOENT)
		log_warn("cdi: removing %s: %s", cdi.path, strerror(errno));
	if (cdi.on && unlink(cdi.cni_path) && errno != ENOENT)
		log_warn("cdi: removing %s: %s", cdi.cni_path, strerror(errno));
	if (cdi.on && cdi.own_dir)
		rmdir(cdi.dir);         /* fails, as it should, if another spec is there */
	cdi.on = false;
}

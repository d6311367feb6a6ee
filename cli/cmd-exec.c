/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-exec.c: `unirdma exec`: run a program as a tenant of a vRNIC, in a
 * fresh container (container.c) or, with --no-container, on the host. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* Where our libibverbs.so.1 is: $UNIRDMA_LIBDIR, else <bindir>/../lib. */
static int find_libdir(char *buf, size_t len)
{
	const char *env = getenv("UNIRDMA_LIBDIR");
	char exe[PATH_MAX], guess[PATH_MAX + 8], *dir;
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	dir = dirname(exe);
	snprintf(guess, sizeof(guess), "%s/../lib", dir);
	if (realpath(guess, buf) && strlen(buf) < len)
		return 0;
	if (strlen(guess) >= len)
		return -ENAMETOOLONG;
	memcpy(buf, guess, strlen(guess) + 1);
	return 0;
}

int exec_prepare_env(const char *devdir, const char *vrnic_name)
{
	char libdir[PATH_MAX], lib[PATH_MAX + 32], *ldpath;
	const char *old = getenv("LD_LIBRARY_PATH");
	int rc = find_libdir(libdir, sizeof(libdir));

	if (rc) {
		cli_err("exec: cannot locate the unirdma library directory: %s (set UNIRDMA_LIBDIR)",
			strerror(-rc));
		return rc;
	}
	snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", libdir);
	if (access(lib, R_OK) < 0)
		cli_err("exec: warning: %s is missing; programs will load the system's libibverbs",
			lib);
	if (asprintf(&ldpath, "%s%s%s", libdir, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return -ENOMEM;
	rc = setenv("LD_LIBRARY_PATH", ldpath, 1);
	free(ldpath);
	if (rc || setenv("UNIRDMA_DEVDIR", devdir, 1) || setenv("UNIRDMA_VRNIC", vrnic_name, 1))
		return -errno;
	/* Sanitizer runs: an unmodified program that loads an ASan build of our
	 * library needs the ASan runtime first in its library list.  Only the
	 * tenant program gets it, not every tool of the test scripts. */
	{
		const char *pre = getenv("UNIRDMA_EXEC_PRELOAD");

		if (pre && *pre && setenv("LD_PRELOAD", pre, 1))
			return -errno;
	}
	return 0;
}

/* --net: the child, in a network namespace of its own, waits for its eth0
 * (the parent attaches it to the tenant's bridge), sets it up and runs argv. */
static void net_child(const struct vrnic_info *vi, int ready_w, int go_r, char **argv)
{
	char c = 0;

	if (unshare(CLONE_NEWNET)) {
		cli_err("exec: a network namespace for PROGRAM: %s", strerror(errno));
		_exit(CLI_EXIT_SETUP);
	}
	if (write(ready_w, &c, 1) != 1 || read(go_r, &c, 1) != 1 || c != 'g')
		_exit(CLI_EXIT_SETUP);          /* the parent said why */
	close(ready_w);
	close(go_r);
	if (net_setup_inside(vi->ip, vi->prefix, "eth0"))
		_exit(CLI_EXIT_SETUP);
	proc_exec_or_die(argv);
}

/* --no-container: the program runs on the host and sees the vRNIC through
 * a private device directory holding one symlink; with net, in a network
 * namespace of its own on the tenant's network with the vRNIC's address. */
static int run_on_host(const struct vrnic_info *vi, char **argv, bool net)
{
	char tmpl[] = "/tmp/unirdma-exec.XXXXXX", link[PATH_MAX], nsname[64], c;
	int ready[2] = { -1, -1 }, go[2] = { -1, -1 };
	pid_t pid;
	int rc;

	if (net) {
		if (net_tenant_bridge(cli_state_dir_resolved(), vi->tenant, nsname, sizeof(nsname)))
			return CLI_EXIT_SETUP;
		if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC)) {
			cli_err("exec: pipe: %s", strerror(errno));
			rc = CLI_EXIT_SETUP;
			goto close_pipes;
		}
	}

	if (!mkdtemp(tmpl)) {
		cli_err("exec: mkdtemp: %s", strerror(errno));
		rc = CLI_EXIT_SETUP;
		goto close_pipes;
	}
	snprintf(link, sizeof(link), "%s/%s", tmpl, vi->name);
	if (symlink(vi->dir, link) < 0) {
		cli_err("exec: symlink %s: %s", link, strerror(errno));
		rc = CLI_EXIT_SETUP;
		goto remove_dir;
	}
	if (exec_prepare_env(tmpl, vi->name)) {
		rc = CLI_EXIT_SETUP;
		goto remove_link;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		cli_err("exec: fork: %s", strerror(errno));
		rc = CLI_EXIT_SETUP;
		goto remove_link;
	}
	if (pid == 0) {
		if (net)
			net_child(vi, ready[1], go[0], argv);
		proc_exec_or_die(argv);
	}
	if (net) {
		close(ready[1]);
		close(go[0]);
		ready[1] = go[0] = -1;
		/* only once the child is in its own namespace: the veth's
		 * peer goes wherever pid's network namespace is */
		c = read(ready[0], &c, 1) == 1 && net_attach(nsname, pid, "eth0", NULL) == 0 ? 'g' : 'n';
		if (write(go[1], &c, 1) != 1 || c != 'g')
			cli_err("exec: PROGRAM's network could not be set up");
	}
	rc = proc_wait_forward(pid);
remove_link:
	unlink(link);
remove_dir:
	rmdir(tmpl);
close_pipes:
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (go[i] >= 0)
			close(go[i]);
	}
	return rc;
}

/* Host paths a container shows (container_spec.ro / .rw). */
struct pathlist {
	char **v;
	size_t n;
};

static void pathlist_free(struct pathlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* How pathlist_add treats a path that leads through a symlink. */
enum via_symlink {
	SYMLINK_REFUSE, /* --ro, --rw: a tenant may have planted it */
	SYMLINK_SYSTEM, /* shown anyway when it ends in the host's system tree */
	SYMLINK_TRUST,  /* our own library directory */
};

/* Whether path (absolute, or relative to the working directory) leads
 * through a symlink. Component by component: once every component so far
 * is a real directory, ".." is simply the parent. */
static bool via_symlink(const char *path)
{
	char p[PATH_MAX], *save = NULL, *copy = strdup(path);
	size_t l = 0;
	bool link = false;
	struct stat st;

	if (!copy)
		return true;
	p[0] = '\0';
	if (path[0] != '/' && !getcwd(p, sizeof(p)))
		link = true;
	l = link ? 0 : strlen(p);
	for (char *c = strtok_r(copy, "/", &save); c && !link; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			char *s = strrchr(p, '/');

			l = s ? (size_t)(s - p) : 0;
			p[l] = '\0';
			continue;
		}
		if (l + 1 + strlen(c) >= sizeof(p)) {
			link = true;
			break;
		}
		l += (size_t)sprintf(p + l, "/%s", c);
		link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
	}
	free(copy);
	return link;
}

/* Adds the real path of path. Refuses /, and the daemon's state directory or
 * anything in it (the container would see other vRNICs, the admin socket).
 * A path through a symlink is refused (or, for SYMLINK_SYSTEM, left out
 * when it ends in the host's system tree, which every container shows):
 * a tenant that writes a directory can plant one there that points at a
 * host secret, for the operator to expose later. */
static int pathlist_add(struct pathlist *l, const char *path, const char *what,
			enum via_symlink sym)
{
	static const char *const system[] = { "/usr", "/bin", "/sbin", "/lib", "/lib32",
					      "/lib64", "/libx32", "/etc" };
	const char *state = cli_state_dir_resolved();
	size_t sl = strlen(state);
	char *real = realpath(path, NULL), **v;

	if (!real) {
		cli_err("exec: %s %s: %s", what, path, strerror(errno));
		return CLI_EXIT_SETUP;
	}
	if (sym != SYMLINK_TRUST && via_symlink(path)) {
		for (size_t i = 0; sym == SYMLINK_SYSTEM && i < sizeof(system) / sizeof(system[0]);
		     i++) {
			size_t n = strlen(system[i]);

			if (!strncmp(real, system[i], n) && (real[n] == '/' || real[n] == '\0')) {
				free(real);
				return 0;
			}
		}
		cli_err("exec: %s %s leads through a symlink (to %s): refused; give the real path "
			"if that is what you mean",
			what, path, real);
		free(real);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(real, "/") ||
	    (!strncmp(real, state, sl) && (real[sl] == '/' || real[sl] == '\0'))) {
		cli_err("exec: %s %s: may not be shown in a container (%s)", what, path,
			real[1] ? "the daemon's state directory" : "the whole host");
		free(real);
		return CLI_EXIT_USAGE;
	}
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v) {
		free(real);
		return CLI_EXIT_SETUP;
	}
	l->v = v;
	l->v[l->n++] = real;
	return 0;
}

/* Adds each entry of a colon-separated list (empty entries skipped). */
static int pathlist_add_env(struct pathlist *l, const char *var)
{
	const char *val = getenv(var);
	char *copy, *save = NULL;
	int rc = 0;

	if (!val || !*val)
		return 0;
	copy = strdup(val);
	if (!copy)
		return CLI_EXIT_SETUP;
	for (char *t = strtok_r(copy, ":", &save); t && !rc; t = strtok_r(NULL, ":", &save))
		rc = pathlist_add(l, t, var, SYMLINK_REFUSE);
	free(copy);
	return rc;
}

/* What a container shows without being asked: the library directory, the
 * program's directory (when PROGRAM is a path) and an ASan preload. */
static int default_paths(struct pathlist *ro, char **argv)
{
	char libdir[PATH_MAX], dir[PATH_MAX];
	const char *pre = getenv("UNIRDMA_EXEC_PRELOAD");
	int rc;

	if (find_libdir(libdir, sizeof(libdir)) == 0 && access(libdir, F_OK) == 0 &&
	    (rc = pathlist_add(ro, libdir, "library directory", SYMLINK_TRUST)))
		return rc;
	if (strchr(argv[0], '/') && snprintf(dir, sizeof(dir), "%s", argv[0]) < (int)sizeof(dir) &&
	    access(argv[0], F_OK) == 0 &&
	    (rc = pathlist_add(ro, dirname(dir), "program directory", SYMLINK_SYSTEM)))
		return rc;
	if (pre && *pre && !strchr(pre, ' ') && !strchr(pre, ':') && access(pre, F_OK) == 0 &&
	    (rc = pathlist_add(ro, pre, "UNIRDMA_EXEC_PRELOAD", SYMLINK_SYSTEM)))
		return rc;
	return 0;
}

/* Whether a is inside b (both canonical), not b itself. */
static bool strictly_under(const char *a, const char *b)
{
	size_t l = strlen(b);

	return strcmp(a, b) && !strncmp(a, b, l) && (a[l] == '/' || b[l - 1] == '/');
}

/* Nothing may be shown inside a --rw path: its mount point would be made in
 * storage the tenant writes (container.c checks again, this reports early). */
static int check_nesting(const struct pathlist *ro, const struct pathlist *rw)
{
	const struct pathlist *all[] = { ro, rw };

	for (size_t i = 0; i < rw->n; i++)
		for (size_t k = 0; k < 2; k++)
			for (size_t j = 0; j < all[k]->n; j++) {
				if (!strictly_under(all[k]->v[j], rw->v[i]))
					continue;
				cli_err("exec: %s lies inside the writable %s: refused (its mount "
					"point would be made in storage the tenant writes)",
					all[k]->v[j], rw->v[i]);
				return CLI_EXIT_USAGE;
			}
	return 0;
}

struct exec_opts {
	bool no_container, net;
	const char *pidfile;
	struct pathlist ro, rw;
	int keep_fds[CLI_KEEP_FDS_MAX];
	size_t n_keep_fds;
	int err;
};

/* --keep-fd N: an open fd that is no directory (a directory fd would be a way
 * around the container's root), at most CLI_KEEP_FDS_MAX, kept ascending. */
static int keep_fd_add(struct exec_opts *o, const char *arg)
{
	struct stat st;
	char *end;
	long fd;
	size_t i;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno || end == arg || *end || fd < 3 || fd > INT_MAX) {
		cli_err("exec: --keep-fd %s: not a file descriptor above 2", arg);
		return CLI_EXIT_USAGE;
	}
	if (fstat((int)fd, &st) < 0) {
		cli_err("exec: --keep-fd %ld: %s", fd, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if (S_ISDIR(st.st_mode)) {
		cli_err("exec: --keep-fd %ld: a directory; only files, pipes and sockets may pass", fd);
		return CLI_EXIT_USAGE;
	}
	if (o->n_keep_fds == CLI_KEEP_FDS_MAX) {
		cli_err("exec: at most %d --keep-fd", CLI_KEEP_FDS_MAX);
		return CLI_EXIT_USAGE;
	}
	for (i = o->n_keep_fds; i > 0 && o->keep_fds[i - 1] > fd; i--)
		o->keep_fds[i] = o->keep_fds[i - 1];
	if (i > 0 && o->keep_fds[i - 1] == fd) {        /* given twice: once is enough */
		memmove(&o->keep_fds[i], &o->keep_fds[i + 1], (o->n_keep_fds - i) * sizeof(int));
		return 0;
	}
	o->keep_fds[i] = (int)fd;
	o->n_keep_fds++;
	return 0;
}

static int exec_opt(int opt, const char *arg, void *ctx)
{
	struct exec_opts *o = ctx;

	if (opt == 'H')
		o->no_container = true;
	else if (opt == 'N')
		o->net = true;
	else if (opt == 'p')
		o->pidfile = arg;
	else if (opt == 'r')
		return pathlist_add(&o->ro, arg, "--ro", SYMLINK_REFUSE);
	else if (opt == 'w')
		return pathlist_add(&o->rw, arg, "--rw", SYMLINK_REFUSE);
	else if (opt == 'k')
		return keep_fd_add(o, arg);
	else
		return CLI_EXIT_USAGE;
	return 0;
}

static int run_exec(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no-container", no_argument, NULL, 'H' },
		{ "net", no_argument, NULL, 'N' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "ro", required_argument, NULL, 'r' },
		{ "rw", required_argument, NULL, 'w' },
		{ "keep-fd", required_argument, NULL, 'k' },
		CLI_COMMON_LONGOPTS,
	};
	struct exec_opts o = { 0 };
	struct container_spec spec = { 0 };
	struct vrnic_info vi;
	struct stat st = { 0 };
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", longopts, true, exec_opt, &o, &first);
	if (rc >= 0)
		goto out;
	rc = CLI_EXIT_USAGE;
	if (first >= argc) {
		rc = cli_usage_error(cmd, "exec: VRNIC is missing");
		goto out;
	}
	spec.argv = argv + first + 1;
	if (spec.argv[0] && !strcmp(spec.argv[0], "--"))
		spec.argv++;
	if (!spec.argv[0]) {
		rc = cli_usage_error(cmd, "exec: PROGRAM is missing");
		goto out;
	}

	rc = vrnic_lookup(argv[first], &vi);
	if (rc)
		goto out;
	if (stat(vi.dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int err = S_ISDIR(st.st_mode) ? errno : ENOTDIR;

		cli_err("exec: vRNIC %s: its directory %s is not usable: %s", vi.name, vi.dir,
			strerror(err));
		rc = CLI_EXIT_SETUP;
		goto out;
	}
	if (o.no_container) {
		if (o.pidfile || o.ro.n || o.rw.n || o.n_keep_fds) {
			rc = cli_usage_error(cmd, "exec: --pidfile, --ro, --rw and --keep-fd need a container");
			goto out;
		}
		rc = run_on_host(&vi, spec.argv, o.net);
		goto out;
	}
	if (o.net) {
		rc = cli_usage_error(cmd, "exec: --net goes with --no-container (a container has its network anyway)");
		goto out;
	}
	/* The test suite names its build and scratch trees here. */
	rc = pathlist_add_env(&o.ro, "UNIRDMA_EXEC_RO");
	if (!rc)
		rc = pathlist_add_env(&o.rw, "UNIRDMA_EXEC_RW");
	if (!rc)
		rc = default_paths(&o.ro, spec.argv);
	if (!rc)
		rc = check_nesting(&o.ro, &o.rw);
	if (rc)
		goto out;
	spec.vrnic = &vi;
	spec.state_dir = cli_state_dir_resolved();
	spec.pidfile = o.pidfile;
	spec.ro = o.ro.v;
	spec.n_ro = o.ro.n;
	spec.rw = o.rw.v;
	spec.n_rw = o.rw.n;
	memcpy(spec.keep_fds, o.keep_fds, sizeof(spec.keep_fds));
	spec.n_keep_fds = o.n_keep_fds;
	unsetenv("UNIRDMA_STATE_DIR");
	unsetenv("UNIRDMA_EXEC_RO");
	unsetenv("UNIRDMA_EXEC_RW");
	if (exec_prepare_env(CLI_CONTAINER_DEVDIR, vi.name)) {
		rc = CLI_EXIT_SETUP;
		goto out;
	}
	rc = container_run(&spec);
out:
	pathlist_free(&o.ro);
	pathlist_free(&o.rw);
	return rc;
}

const struct cli_cmd cmd_exec = {
	"exec", NULL, "run a program as a tenant of a vRNIC (in a container)",
	"usage: unirdma exec [--no-container [--net]] [--pidfile FILE] [--ro PATH]... [--rw PATH]...\n"
	"                    [--keep-fd N]... VRNIC [--] PROGRAM [ARGS...]\n"
	"\n"
	"Run PROGRAM as a tenant of the vRNIC VRNIC, like `ip netns exec`: unmodified\n"
	"verbs programs (perftest, ibv_rc_pingpong, qperf, ...) load unirdma's\n"
	"libibverbs.so.1 and see exactly one RDMA device, that vRNIC.\n"
	"\n"
	"By default PROGRAM runs in a fresh container: new mount, network, PID, IPC\n"
	"and UTS namespaces; hostname VRNIC; a root file system of its own (a tmpfs,\n"
	"read-only) with the host's /usr, /bin, /sbin, /lib*, /etc read-only (files\n"
	"in /etc that only root may read are masked), unirdma's library directory\n"
	"and PROGRAM's directory read-only, private /tmp, /dev/shm and a minimal\n"
	"/dev, its own /proc and a read-only /sys. Of the daemon it sees only the\n"
	"vRNIC's region file, at /run/unirdma/dev/VRNIC/region. PROGRAM runs as\n"
	"uid 0 with no capabilities, no_new_privs and a seccomp filter (no mount,\n"
	"no new namespaces, no BPF, keyrings, perf, io_uring, modules, ...).\n"
	"Its eth0 has the vRNIC's address and is a port of the bridge of the vRNIC's\n"
	"tenant, in a network namespace of its own (unirdma-<hash of the state\n"
	"dir>-<hash of the tenant>, made on first use, removed by `unirdma\n"
	"net-down`): containers of one tenant reach each other over TCP, other\n"
	"tenants' containers not at all. PID 1 of the container reaps children and\n"
	"passes signals on. Containers need root.\n"
	"\n"
	"PROGRAM's environment gets UNIRDMA_DEVDIR (the directory of its one vRNIC),\n"
	"UNIRDMA_VRNIC=VRNIC and LD_LIBRARY_PATH starting with unirdma's library\n"
	"directory: $UNIRDMA_LIBDIR, or <directory of unirdma>/../lib.\n"
	"stdin, stdout and stderr pass through; the exit code is PROGRAM's.\n"
	"\n"
	"Options:\n"
	"  --no-container   run PROGRAM on the host, with UNIRDMA_DEVDIR a temporary\n"
	"                   directory holding only a link to the vRNIC's directory\n"
	"  --net            with --no-container: PROGRAM runs in a network namespace of\n"
	"                   its own whose eth0 has the vRNIC's address on its tenant's\n"
	"                   bridge, as a container's: for launchers that must reach\n"
	"                   containers, such as mpirun with `unirdma rsh` (give such a\n"
	"                   launcher a vRNIC of its own: one address, one interface)\n"
	"  --pidfile FILE   write the host PID of the container's init to FILE while it\n"
	"                   runs (/proc/PID/ns/net and /proc/PID/net/tcp then belong to\n"
	"                   the container); the file is written under a mkstemp name\n"
	"                   and renamed into place\n"
	"  --ro PATH        also show host PATH, read-only, at the same place (repeat\n"
	"                   for more; also from $UNIRDMA_EXEC_RO, colon-separated)\n"
	"  --rw PATH        also show host PATH writable (shared with the host and\n"
	"                   every container that shows it; treat what tenants write\n"
	"                   there as hostile; also $UNIRDMA_EXEC_RW). The daemon's\n"
	"                   state directory is never shown; the working directory\n"
	"                   carries over only where an exposed path shows it\n"
	"  --keep-fd N      PROGRAM inherits the caller's fd N (not a directory);\n"
	"                   every other fd above 2 is closed. What the fd reaches,\n"
	"                   PROGRAM reaches: pass only what a tenant may use (bench/\n"
	"                   passes /proc files of the daemon's threads this way)\n"
	"\n"
	"Exit codes: PROGRAM's (128+N if signal N killed it); 1, 2, 3 as for every\n"
	"command; 125 container setup failed; 126 PROGRAM not executable; 127 PROGRAM\n"
	"not found.\n",
	run_exec,
};

extern const struct cli_cmd cmd_exec;

/* `unirdma rsh HOST COMMAND...`: an rsh for launchers (mpirun's
 * plm_rsh_agent): COMMAND, as one shell command line, in a fresh container
 * of the vRNIC named HOST.  The container also shows this program's own file
 * (read-only), because Open MPI's orted checks that its launcher's agent
 * exists where it runs. */
static int run_rsh(const struct cli_cmd *cmd, int argc, char **argv)
{
	char self[PATH_MAX], *line = NULL, *xargv[12];
	size_t len = 0;
	FILE *f;
	ssize_t n;
	int rc, first, k = 0;

	rc = cli_parse(cmd, argc, argv, "", (const struct option[]){ CLI_COMMON_LONGOPTS }, true,
		       NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first < 2)
		return cli_usage_error(cmd, argc == first ? "rsh: HOST is missing" : "rsh: COMMAND is missing");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		cli_err("rsh: /proc/self/exe: %s", strerror(errno));
		return CLI_EXIT_SETUP;
	}
	self[n] = '\0';
	/* the words joined by spaces, as rsh and ssh pass them to the remote shell */
	f = open_memstream(&line, &len);
	if (!f)
		return CLI_EXIT_SETUP;
	for (int i = first + 1; i < argc; i++)
		fprintf(f, "%s%s", i > first + 1 ? " " : "", argv[i]);
	if (fclose(f))
		return CLI_EXIT_SETUP;
	xargv[k++] = "exec";
	xargv[k++] = "--ro";
	xargv[k++] = self;
	xargv[k++] = argv[first];
	xargv[k++] = "--";
	xargv[k++] = "/bin/sh";
	xargv[k++] = "-c";
	xargv[k++] = line;
	xargv[k] = NULL;
	rc = run_exec(&cmd_exec, k, xargv);
	free(line);
	return rc;
}

const struct cli_cmd cmd_rsh = {
	"rsh", NULL, "run a shell command in a container of a vRNIC (an agent for mpirun)",
	"usage: unirdma rsh HOST COMMAND [ARGS...]\n"
	"\n"
	"Run COMMAND and ARGS, joined by spaces into one /bin/sh command line as rsh\n"
	"and ssh do, in a fresh container of the vRNIC named HOST (see exec). For\n"
	"launchers that start their daemons through an rsh, such as Open MPI:\n"
	"\n"
	"  unirdma exec --no-container --net LAUNCHER -- mpirun --host vr0,vr1 \\\n"
	"      --mca plm_rsh_agent \"$(command -v unirdma) rsh\" ...\n"
	"\n"
	"runs mpirun on the host in the tenant's network (LAUNCHER: a vRNIC of its\n"
	"own) and each rank in a container of vr0 and vr1. The container also shows\n"
	"unirdma itself, read-only: orted checks that its agent exists.\n",
	run_rsh,
};

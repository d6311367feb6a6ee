/* cmd-exec.c: `unirdma exec`: run a program as a tenant of a vRNIC, in a
 * fresh container (container.c) or, with --no-container, on the host. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
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

/* --no-container: the program runs on the host and sees the vRNIC through
 * a private device directory holding one symlink. */
static int run_on_host(const struct vrnic_info *vi, char **argv)
{
	char tmpl[] = "/tmp/unirdma-exec.XXXXXX", link[PATH_MAX];
	pid_t pid;
	int rc;

	if (!mkdtemp(tmpl)) {
		cli_err("exec: mkdtemp: %s", strerror(errno));
		return CLI_EXIT_SETUP;
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
	if (pid == 0)
		proc_exec_or_die(argv);
	rc = proc_wait_forward(pid);
remove_link:
	unlink(link);
remove_dir:
	rmdir(tmpl);
	return rc;
}

struct exec_opts {
	bool no_container;
	const char *pidfile;
};

static int exec_opt(int opt, const char *arg, void *ctx)
{
	struct exec_opts *o = ctx;

	if (opt == 'H')
		o->no_container = true;
	else if (opt == 'p')
		o->pidfile = arg;
	else
		return CLI_EXIT_USAGE;
	return 0;
}

static int run_exec(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no-container", no_argument, NULL, 'H' },
		{ "pidfile", required_argument, NULL, 'p' },
		CLI_COMMON_LONGOPTS,
	};
	struct exec_opts o = { 0 };
	struct container_spec spec = { 0 };
	struct vrnic_info vi;
	struct stat st = { 0 };
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", longopts, true, exec_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (first >= argc)
		return cli_usage_error(cmd, "exec: VRNIC is missing");
	spec.argv = argv + first + 1;
	if (spec.argv[0] && !strcmp(spec.argv[0], "--"))
		spec.argv++;
	if (!spec.argv[0])
		return cli_usage_error(cmd, "exec: PROGRAM is missing");

	rc = vrnic_lookup(argv[first], &vi);
	if (rc)
		return rc;
	if (stat(vi.dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int err = S_ISDIR(st.st_mode) ? errno : ENOTDIR;

		cli_err("exec: vRNIC %s: its directory %s is not usable: %s", vi.name, vi.dir,
			strerror(err));
		return CLI_EXIT_SETUP;
	}
	if (o.no_container) {
		if (o.pidfile)
			return cli_usage_error(cmd, "exec: --pidfile needs a container");
		return run_on_host(&vi, spec.argv);
	}
	spec.vrnic = &vi;
	spec.state_dir = cli_state_dir_resolved();
	spec.pidfile = o.pidfile;
	unsetenv("UNIRDMA_STATE_DIR");
	if (exec_prepare_env(CLI_CONTAINER_DEVDIR, vi.name))
		return CLI_EXIT_SETUP;
	return container_run(&spec);
}

const struct cli_cmd cmd_exec = {
	"exec", NULL, "run a program as a tenant of a vRNIC (in a container)",
	"usage: unirdma exec [--no-container] [--pidfile FILE] VRNIC [--] PROGRAM [ARGS...]\n"
	"\n"
	"Run PROGRAM as a tenant of the vRNIC VRNIC, like `ip netns exec`: unmodified\n"
	"verbs programs (perftest, ibv_rc_pingpong, qperf, ...) load unirdma's\n"
	"libibverbs.so.1 and see exactly one RDMA device, that vRNIC.\n"
	"\n"
	"By default PROGRAM runs in a fresh container: new mount, network, PID, IPC\n"
	"and UTS namespaces; hostname VRNIC; its own /proc; the daemon's state\n"
	"directory and /run/unirdma hidden; the vRNIC's directory at\n"
	"/run/unirdma/dev/VRNIC. Its eth0 has the vRNIC's address and is a port of a\n"
	"bridge that lives in a network namespace of its own (unirdma-<hash of the\n"
	"state dir>, made on first use, removed by `unirdma net-down`), so the\n"
	"containers of one daemon reach each other over TCP. PID 1 of the container\n"
	"reaps children and passes signals on. Containers need root.\n"
	"\n"
	"PROGRAM's environment gets UNIRDMA_DEVDIR (the directory of its one vRNIC),\n"
	"UNIRDMA_VRNIC=VRNIC and LD_LIBRARY_PATH starting with unirdma's library\n"
	"directory: $UNIRDMA_LIBDIR, or <directory of unirdma>/../lib.\n"
	"stdin, stdout and stderr pass through; the exit code is PROGRAM's.\n"
	"\n"
	"Options:\n"
	"  --no-container   run PROGRAM on the host, with UNIRDMA_DEVDIR a temporary\n"
	"                   directory holding only a link to the vRNIC's directory\n"
	"  --pidfile FILE   write the host PID of the container's init to FILE while it\n"
	"                   runs (/proc/PID/ns/net and /proc/PID/net/tcp then belong to\n"
	"                   the container)\n"
	"\n"
	"Exit codes: PROGRAM's (128+N if signal N killed it); 1, 2, 3 as for every\n"
	"command; 125 container setup failed; 126 PROGRAM not executable; 127 PROGRAM\n"
	"not found.\n",
	run_exec,
};

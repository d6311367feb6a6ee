/* container.c: the container of `unirdma exec`.
 *
 * A child is cloned into new mount, network, PID, IPC and UTS namespaces. It
 * becomes PID 1 of the container ("unirdma-init"): it builds the file-system
 * view, waits until the parent has plugged its veth into the bridge, sets up
 * eth0, then forks PROGRAM, reaps every child and forwards signals to
 * PROGRAM. When PROGRAM exits, init exits with its code and the kernel kills
 * whatever is left in the PID namespace; the network namespace, and with it
 * the veth pair, goes away.
 *
 * File-system view inside (the rest of the host's tree is shared, like a
 * container without its own image):
 *   /proc                    fresh, of the new PID namespace
 *   /sys                     fresh, read-only (shows the container's netdevs)
 *   /dev/shm                 private tmpfs
 *   STATE_DIR, /run/unirdma  empty tmpfs: no admin socket, no other vRNIC
 *   /run/unirdma/dev/NAME    bind mount of the vRNIC's directory
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

struct init_args {
	const struct container_spec *spec;
	int sync_r, sync_w; /* the parent writes one byte once eth0 exists */
};

static int mkdir_p_one(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		      const char *data)
{
	if (mount(src, dst, type, flags, data) < 0) {
		int err = errno;

		cli_err("exec: mount %s on %s: %s", flags & MS_BIND ? src : type, dst, strerror(err));
		return -err;
	}
	return 0;
}

static int setup_mounts(const struct container_spec *spec)
{
	const struct vrnic_info *vi = spec->vrnic;
	char devpath[256], fdpath[64];
	int vfd, rc;

	/* Nothing we mount may leak back to the host. */
	/* The kernel ignores source and type here; "none" keeps valgrind quiet. */
	rc = must_mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL);
	if (rc)
		return rc;
	/* Hold on to the vRNIC's directory before the state dir is hidden. */
	vfd = open(vi->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (vfd < 0) {
		rc = -errno;
		cli_err("exec: the vRNIC's directory %s: %s", vi->dir, strerror(-rc));
		return rc;
	}
	rc = must_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (rc)
		goto close_vfd;
	/* Conveniences: failing them does not stop the program. */
	mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL);
	mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");

	rc = must_mount("tmpfs", spec->state_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			"mode=0755,size=64k");
	if (rc)
		goto close_vfd;
	rc = mkdir_p_one(CLI_CONTAINER_RUN_DIR, 0755);
	if (!rc)
		rc = must_mount("tmpfs", CLI_CONTAINER_RUN_DIR, "tmpfs", MS_NOSUID | MS_NODEV,
				"mode=0755,size=64k");
	if (!rc)
		rc = mkdir_p_one(CLI_CONTAINER_DEVDIR, 0755);
	if (rc) {
		if (rc != -EPERM)
			cli_err("exec: preparing " CLI_CONTAINER_DEVDIR ": %s", strerror(-rc));
		goto close_vfd;
	}
	snprintf(devpath, sizeof(devpath), CLI_CONTAINER_DEVDIR "/%s", vi->name);
	rc = mkdir_p_one(devpath, 0755);
	if (rc) {
		cli_err("exec: mkdir %s: %s", devpath, strerror(-rc));
		goto close_vfd;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", vfd);
	rc = must_mount(fdpath, devpath, "none", MS_BIND, NULL);
close_vfd:
	close(vfd);
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

static int init_main(struct init_args *a)
{
	const struct container_spec *spec = a->spec;
	static const int sigs[] = { SIGCHLD, SIGHUP,  SIGINT,  SIGQUIT,
				    SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };
	sigset_t set, old;
	pid_t prog;
	char go;

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
	if (net_setup_inside(spec->vrnic->ip, spec->vrnic->prefix))
		return CLI_EXIT_SETUP;

	prctl(PR_SET_NAME, "unirdma-init");
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
	char tmp[4096];
	FILE *f;

	/* Written whole and renamed, so a reader never sees half a number. */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)pid);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

int container_run(const struct container_spec *spec)
{
	char nsname[64];
	struct init_args a = { .spec = spec };
	int p[2], rc;
	pid_t pid;

	net_ns_name(spec->state_dir, nsname, sizeof(nsname));
	rc = net_ensure_bridge(nsname);
	if (rc) {
		cli_err("exec: bridge network %s: %s", nsname, strerror(-rc));
		return CLI_EXIT_SETUP;
	}
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
	if (net_attach(nsname, pid) < 0 ||
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

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* proc.c: running child programs: exec with exit codes like a shell's,
 * waiting while forwarding signals, quiet helper runs (ip). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile pid_t forward_to;

/* A signal from the terminal (SI_KERNEL) already went to the whole foreground
 * process group, the child included; only one sent by a process, such as
 * kill(1) or timeout(1), needs passing on. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_code != SI_KERNEL && forward_to > 0)
		kill(forward_to, sig);
}

int proc_wait_forward(pid_t pid)
{
	struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART },
			 old[NFORWARDED];
	int st, rc;

	forward_to = pid;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &sa, &old[i]);
	while ((rc = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &old[i], NULL);
	forward_to = 0;
	if (rc < 0)
		return CLI_EXIT_SETUP;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

void proc_exec_or_die(char **argv)
{
	int err;

	execvp(argv[0], argv);
	err = errno;
	fprintf(stderr, "unirdma exec: %s: %s\n", argv[0], strerror(err));
	_exit(err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC);
}

int proc_run(char *const argv[], int quiet)
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = quiet ? open("/dev/null", O_WRONLY) : -1;

		if (fd >= 0 && (quiet & PROC_QUIET_STDOUT))
			dup2(fd, STDOUT_FILENO);
		if (fd >= 0 && (quiet & PROC_QUIET_STDERR))
			dup2(fd, STDERR_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "unirdma: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* stallwatch: sees a CPU stop running anything, as a virtual machine's vCPU
 * does when its host runs something else, for tests that bound a latency
 * (tests/integration/starve.sh).
 *
 *   stallwatch [--min-ms MS]
 *       One thread per online CPU, pinned to it, at SCHED_FIFO priority 1
 *       (so that nothing of the guest's own delays its wake-ups), sleeps
 *       1 ms at a time on CLOCK_MONOTONIC.  A wake-up later than MS (100)
 *       is a stall of that CPU.  Runs until SIGTERM or SIGINT, then prints
 *       one line per stall, "stall cpu=C start_ns=S end_ns=E ms=M" (CLOCK_MONOTONIC,
 *       as the victim's "ctrl_max_at_ns"), and a last line "stalls=N
 *       fifo=0|1" (fifo 0: the priority could not be had, the figures
 *       also hold the guest's own scheduling delays).
 * Exit code 0, or 1 when it cannot start. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_STALLS 256

struct stall {
	int cpu;
	uint64_t start, end;
};

static struct stall stalls[MAX_STALLS];
static unsigned nstalls;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t min_ns = 100ull * 1000 * 1000;
static int fifo_ok = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *watch(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec one_ms = { 0, 1000000 };
	cpu_set_t set;
	uint64_t before, after;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		return NULL;    /* the CPU went offline: nothing to watch */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		__atomic_store_n(&fifo_ok, 0, __ATOMIC_RELAXED);
	for (;;) {
		before = now_ns();
		clock_nanosleep(CLOCK_MONOTONIC, 0, &one_ms, NULL);
		after = now_ns();
		if (after - before < min_ns + 1000000)
			continue;
		pthread_mutex_lock(&lock);
		if (nstalls < MAX_STALLS)
			stalls[nstalls++] = (struct stall){ cpu, before + 1000000, after };
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "min-ms", required_argument, NULL, 'm' }, { NULL, 0, NULL, 0 } };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	sigset_t sigs;
	int c, sig;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		long v;

		if (c != 'm') {
			fprintf(stderr, "usage: stallwatch [--min-ms MS]\n");
			return 1;
		}
		v = strtol(optarg, &end, 10);
		if (*end || v < 1 || v > 60000) {
			fprintf(stderr, "stallwatch: --min-ms takes 1..60000, not '%s'\n", optarg);
			return 1;
		}
		min_ns = (uint64_t)v * 1000000;
	}
	if (ncpu < 1 || ncpu > 4096) {
		fprintf(stderr, "stallwatch: cannot count the CPUs\n");
		return 1;
	}
	/* the watchers inherit the mask: only this thread takes the signals */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	for (long i = 0; i < ncpu; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, watch, (void *)(intptr_t)i)) {
			fprintf(stderr, "stallwatch: pthread_create: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("watching %ld CPUs\n", ncpu);
	fflush(stdout);
	sigwait(&sigs, &sig);
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nstalls; i++)
		printf("stall cpu=%d start_ns=%llu end_ns=%llu ms=%llu\n", stalls[i].cpu,
		       (unsigned long long)stalls[i].start, (unsigned long long)stalls[i].end,
		       (unsigned long long)((stalls[i].end - stalls[i].start) / 1000000));
	printf("stalls=%u fifo=%d\n", nstalls, __atomic_load_n(&fifo_ok, __ATOMIC_RELAXED));
	fflush(stdout);
	_exit(0);
}

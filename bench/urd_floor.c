/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* urd_floor: what this machine can do without any RDMA layer, at the sizes of
 * the verbs sweeps (bench/README.md).  The floors the report compares with:
 *
 *   memcpy    one process, one core: memcpy(dst, src, size) in a loop;
 *   shmcopy   two processes: the copier memcpy's each message from its
 *             private buffer into a buffer it shares with the other process
 *             and hands it over through a ring of message indices (up to 64
 *             in flight); the other process takes each one (advances the
 *             consumer index) without touching the bytes, as an RDMA WRITE
 *             lands in a buffer its target does not read.  Like the verbs
 *             benchmarks (urd_bench, perftest), every message goes to the
 *             same destination buffer, so both have the same cache
 *             footprint; bytes move once;
 *   pingpong  two processes bounce one cache line: the latency floor of any
 *             cross-core handoff (one-way = round trip / 2).
 *
 *   urd_floor memcpy|shmcopy [-s SIZE,...] [--ms N] [--warmup-ms N] [--cpus A[,B]]
 *             [--shm-dir DIR]
 *   urd_floor pingpong [--ms N] [--warmup-ms N] [--cpus A,B]
 *
 * Memory: the floor is what the machine allows, so buffers get 2 MiB pages
 * where the machine has them.  Private buffers are anonymous memory with
 * MADV_HUGEPAGE (transparent huge pages in "madvise" or "always" mode);
 * shared buffers are a file in --shm-dir (give it a tmpfs mounted with
 * huge=within_size, as unirdmad mounts its region directory) or, without it,
 * shared anonymous memory (huge only if shmem_enabled allows).  The "mem"
 * field of each result says which pages the buffers got (AnonHugePages /
 * ShmemPmdMapped of the process, from /proc/self/smaps_rollup).
 *
 * --cpus pins the (first) process to CPU A and the second to CPU B; shmcopy's
 * copier is the first.  One JSON object per size on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define MAX_SIZES 64
#define LINE 64

static void pin(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		die("cannot pin to CPU %d: %s", cpu, strerror(errno));
}

/* The compiler must not drop or merge the copies. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

struct opts {
	uint32_t sizes[MAX_SIZES], nsizes;
	uint64_t warmup_ns, window_ns;
	int cpu_a, cpu_b;
};

#define HUGE_PAGE (2u << 20)

static const char *shm_dir;             /* --shm-dir */

/* A file on a huge=within_size tmpfs gets 2 MiB pages only where its size
 * covers them: file-backed shared buffers are sized in whole huge pages. */
static size_t shared_len(size_t len)
{
	return shm_dir ? (len + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1) : len;
}

static void shared_unmap(void *p, size_t len)
{
	munmap(p, shared_len(len));
}

static void *shared_map(size_t len)
{
	void *p;

	len = shared_len(len);
	if (shm_dir) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/urd_floor.XXXXXX", shm_dir);
		fd = mkstemp(path);
		if (fd < 0)
			die("cannot create a file in %s: %s", shm_dir, strerror(errno));
		unlink(path);
		if (ftruncate(fd, (off_t)len))
			die("ftruncate %zu bytes: %s", len, strerror(errno));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	memset(p, 0, len);
	return p;
}

/* Page aligned, on 2 MiB pages if the kernel gives them (THP). */
static void *private_buf(size_t len)
{
	size_t span = (len + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	uint8_t *raw = mmap(NULL, span + HUGE_PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *p;

	if (raw == MAP_FAILED)
		die("out of memory for %zu bytes", len);
	p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (p > raw)                            /* keep only the aligned span */
		munmap(raw, (size_t)(p - raw));
	munmap(p + span, (size_t)(raw + span + HUGE_PAGE - (p + span)));
	madvise(p, span, MADV_HUGEPAGE);        /* a hint: without THP, 4 KiB pages */
	memset(p, 0x5a, len);
	return p;
}

static void private_free(void *p, size_t len)
{
	munmap(p, (len + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1));
}

/* Which pages this process's memory got, private and shared: "huge" if a
 * 2 MiB page of that kind is mapped, else "4k". */
static const char *mem_kind(void)
{
	static char out[64];
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	unsigned long kb, anon = 0, shared = 0;

	if (!f)
		return "unknown";
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			anon += kb;
		if (sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1 ||
		    sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1)
			shared += kb;
	}
	fclose(f);
	snprintf(out, sizeof(out), "private %s, shared %s", anon ? "huge" : "4k", shared ? "huge" : "4k");
	return out;
}

static void print_bw(const char *test, uint32_t size, const struct opts *o, uint64_t ops,
		     uint64_t ns, uint64_t cpu_ns)
{
	double secs = (double)ns / 1e9;
	char cpus[32];

	if (o->cpu_b >= 0 && strcmp(test, "memcpy"))
		snprintf(cpus, sizeof(cpus), "%d,%d", o->cpu_a, o->cpu_b);
	else
		snprintf(cpus, sizeof(cpus), "%d", o->cpu_a);
	printf("{\"bench\":\"urd_floor\",\"test\":\"%s\",\"kind\":\"bw\",\"size\":%u,"
	       "\"secs\":%.6f,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"MBps\":%.3f,\"Mops\":%.6f,"
	       "\"cpus\":\"%s\",\"mem\":\"%s\",\"cpu_cores\":{\"copier\":%.4f}}\n",
	       test, size, secs, ops, ops * size, (double)ops * size / secs / 1e6,
	       (double)ops / secs / 1e6, cpus, mem_kind(), (double)cpu_ns / (double)ns);
	fflush(stdout);
}

/* ------------------------------------------------------------- memcpy */

static void run_memcpy(const struct opts *o)
{
	uint32_t max = 0;
	uint8_t *src, *dst;

	pin(o->cpu_a);
	for (uint32_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > max)
			max = o->sizes[i];
	src = private_buf(max);
	dst = private_buf(max);
	for (uint32_t i = 0; i < o->nsizes; i++) {
		uint32_t size = o->sizes[i];
		uint64_t t0 = now_ns(), start = t0 + o->warmup_ns, end = 0, ops = 0, cpu0 = 0, t;
		uint32_t chunk = size >= 65536 ? 1 : 65536 / size;

		for (;;) {
			for (uint32_t k = 0; k < chunk; k++)
				copy_fn(dst, src, size);
			t = now_ns();
			if (!end) {
				if (t >= start) {
					start = t;
					end = t + o->window_ns;
					cpu0 = cpu_self_ns();
				}
				continue;
			}
			ops += chunk;
			if (t >= end)
				break;
		}
		print_bw("memcpy", size, o, ops, t - start, cpu_self_ns() - cpu0);
	}
}

/* ------------------------------------------------------------ shmcopy */

struct ring_ctl {
	volatile uint64_t prod;
	uint8_t pad0[LINE - 8];
	volatile uint64_t cons;
	uint8_t pad1[LINE - 8];
	volatile uint64_t stop;         /* producer: the consumer may exit at prod == cons */
	uint8_t pad2[LINE - 8];
};

static void relax(uint32_t *spins)
{
	if (++*spins % 256 == 0)
		sched_yield();          /* in case both ends share a core */
	else
		__builtin_ia32_pause();
}

static void run_shmcopy(const struct opts *o)
{
	for (uint32_t i = 0; i < o->nsizes; i++) {
		uint32_t size = o->sizes[i], nslots = 64;
		uint64_t ring_bytes = size, t0, start, end = 0, ops = 0, first = 0, cpu0 = 0, t = 0;
		struct ring_ctl *ctl;
		uint8_t *slots, *src;
		uint32_t spins = 0;
		pid_t pid;
		int st;

		ctl = shared_map(sizeof(*ctl) + ring_bytes + 4096);
		slots = (uint8_t *)ctl + 4096;
		src = private_buf(size);

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			uint64_t c = 0;

			pin(o->cpu_b);
			for (;;) {
				uint64_t p = __atomic_load_n(&ctl->prod, __ATOMIC_ACQUIRE);

				if (p != c) {
					c = p;  /* takes every published slot at once */
					__atomic_store_n(&ctl->cons, c, __ATOMIC_RELEASE);
					continue;
				}
				if (__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE))
					_exit(0);
				relax(&spins);
			}
		}
		pin(o->cpu_a);
		t0 = now_ns();
		start = t0 + o->warmup_ns;
		for (uint64_t p = 0;; p++) {
			while (p - __atomic_load_n(&ctl->cons, __ATOMIC_ACQUIRE) >= nslots)
				relax(&spins);
			copy_fn(slots, src, size);      /* message p, in the shared buffer */
			__atomic_store_n(&ctl->prod, p + 1, __ATOMIC_RELEASE);
			if ((p & 15) && size < 65536)
				continue;       /* read the clock every 16 small messages */
			t = now_ns();
			if (!end) {
				if (t >= start) {
					start = t;
					end = t + o->window_ns;
					first = p + 1;
					cpu0 = cpu_self_ns();
				}
				continue;
			}
			if (t >= end) {
				ops = p + 1 - first;
				break;
			}
		}
		__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
		waitpid(pid, &st, 0);
		print_bw("shmcopy", size, o, ops, t - start, cpu_self_ns() - cpu0);
		shared_unmap(ctl, sizeof(*ctl) + ring_bytes + 4096);
		private_free(src, size);
	}
}

/* ----------------------------------------------------------- pingpong */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void run_pingpong(const struct opts *o)
{
	enum { BATCH = 1000 };
	volatile uint64_t *line = shared_map(4096);
	size_t cap = 1u << 20, n = 0;
	double *samples = malloc(cap * sizeof(double)), sum = 0;
	uint64_t t0, start, end = 0, v = 0, cpu0 = 0, t = 0;
	uint32_t spins = 0;
	pid_t pid;
	int st;

	if (!samples)
		die("out of memory");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		pin(o->cpu_b);
		for (uint64_t want = 1;; want += 2) {
			uint64_t got;

			while ((got = __atomic_load_n(line, __ATOMIC_ACQUIRE)) != want && got != UINT64_MAX)
				relax(&spins);
			if (got == UINT64_MAX)
				_exit(0);
			__atomic_store_n(line, want + 1, __ATOMIC_RELEASE);
		}
	}
	pin(o->cpu_a);
	t0 = now_ns();
	start = t0 + o->warmup_ns;
	for (;;) {
		uint64_t b0 = now_ns();

		for (int i = 0; i < BATCH; i++) {
			__atomic_store_n(line, ++v, __ATOMIC_RELEASE);
			++v;
			while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != v)
				relax(&spins);
		}
		t = now_ns();
		if (!end) {
			if (t >= start) {
				start = t;
				end = t + o->window_ns;
				cpu0 = cpu_self_ns();
			}
			continue;
		}
		if (n < cap) {
			samples[n] = (double)(t - b0) / BATCH / 2 / 1000.0;
			sum += samples[n++];
		}
		if (t >= end)
			break;
	}
	__atomic_store_n(line, UINT64_MAX, __ATOMIC_RELEASE);
	waitpid(pid, &st, 0);
	qsort(samples, n, sizeof(double), cmp_double);
	printf("{\"bench\":\"urd_floor\",\"test\":\"pingpong\",\"kind\":\"lat\",\"size\":%d,"
	       "\"secs\":%.6f,\"ops\":%zu,\"lat_def\":\"round trip / 2, mean of batches of %d\","
	       "\"lat_us\":{\"n\":%zu,\"min\":%.4f,\"p50\":%.4f,\"p99\":%.4f,\"max\":%.4f,\"avg\":%.4f},"
	       "\"cpus\":\"%d,%d\",\"cpu_cores\":{\"pinger\":%.4f}}\n",
	       LINE, (double)(t - start) / 1e9, n * BATCH, BATCH, n, n ? samples[0] : 0,
	       n ? samples[n / 2] : 0, n ? samples[(size_t)((double)(n - 1) * 0.99)] : 0,
	       n ? samples[n - 1] : 0, n ? sum / (double)n : 0, o->cpu_a, o->cpu_b,
	       (double)(cpu_self_ns() - cpu0) / (double)(t - start));
	free(samples);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "ms", required_argument, NULL, 'T' },
		{ "warmup-ms", required_argument, NULL, 'w' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "shm-dir", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .warmup_ns = 100000000ull, .window_ns = 500000000ull,
			  .cpu_a = -1, .cpu_b = -1 };
	const char *test;
	int c;

	if (argc < 2) {
usage:
		fprintf(stderr, "usage: urd_floor memcpy|shmcopy [-s SIZE,...] [--ms N] [--warmup-ms N] "
			"[--cpus A[,B]] [--shm-dir DIR]\n       urd_floor pingpong [--ms N] [--warmup-ms N] [--cpus A,B]\n");
		return 2;
	}
	test = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "s:", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.nsizes = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (o.nsizes == MAX_SIZES)
					die("too many sizes");
				o.sizes[o.nsizes] = (uint32_t)num(tok, "size");
				if (!o.sizes[o.nsizes] || o.sizes[o.nsizes] > (256u << 20))
					die("size out of range: %s", tok);
				o.nsizes++;
			}
			break;
		case 'T': o.window_ns = num(optarg, "duration") * 1000000ull; break;
		case 'w': o.warmup_ns = num(optarg, "warm-up") * 1000000ull; break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o.cpu_a, &o.cpu_b) < 1)
				die("bad --cpus %s", optarg);
			break;
		case 'D': shm_dir = optarg; break;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	if (!o.nsizes) {
		o.sizes[0] = 65536;
		o.nsizes = 1;
	}
	if (!strcmp(test, "memcpy"))
		run_memcpy(&o);
	else if (!strcmp(test, "shmcopy"))
		run_shmcopy(&o);
	else if (!strcmp(test, "pingpong"))
		run_pingpong(&o);
	else
		goto usage;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* u_alloc: the byte-extent allocator of the ring arena and memory window
 * (core/alloc.c), linked on its own.
 *
 * 1. Random gets and puts against a page bitmap model: no two allocations
 *    overlap, first fit hands out the lowest free run, `used` is exact, and
 *    once everything is back the free space is one extent again.
 * 2. The hostile pattern of issue 9's review: a tenant leaves 65k free holes
 *    below 65k single-page allocations, then dies: giving those back must
 *    not cost holes x pages (the old sorted list took 8.3 s in one hold of
 *    the big lock). 2 s is a ~1000x margin over what a tree needs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objects.h"
#include "unit.h"

#define PG 4096ull
#define NPAGES 4096u


static unsigned char used_pg[NPAGES];

/* The lowest run of n free pages in the model, or -1. */
static long model_first_fit(unsigned n)
{
	for (unsigned i = 0, run = 0; i < NPAGES; i++) {
		run = used_pg[i] ? 0 : run + 1;
		if (run == n)
			return (long)(i + 1 - n);
	}
	return -1;
}

static void random_model(void)
{
	struct urd_alloc a;
	struct { uint64_t off, len; } live[2048];
	unsigned nlive = 0;
	uint64_t used = 0;

	CHECK(alloc_init(&a, 0, NPAGES * PG) == 0, "alloc_init");
	srand(12345);
	for (int step = 0; step < 200000; step++) {
		if (nlive < 2048 && (rand() % 3 || !nlive)) {
			unsigned n = 1 + (rand() % 8 ? rand() % 4 : rand() % 64);
			long want = model_first_fit(n);
			uint64_t off = ~0ull;
			int r = alloc_get(&a, n * PG, PG, &off);

			if (want < 0) {
				CHECK(r == -ENOMEM, "step %d: %u pages: got %d, the model has no room", step, n, r);
				continue;
			}
			CHECK(r == 0 && off == (uint64_t)want * PG,
			      "step %d: %u pages: got %d at %llu, first fit is page %ld", step, n, r,
			      (unsigned long long)off / PG, want);
			if (r)
				return;
			memset(used_pg + off / PG, 1, n);
			live[nlive].off = off;
			live[nlive++].len = n * PG;
			used += n * PG;
		} else {
			unsigned i = (unsigned)rand() % nlive;

			alloc_put(&a, live[i].off, live[i].len);
			memset(used_pg + live[i].off / PG, 0, live[i].len / PG);
			used -= live[i].len;
			live[i] = live[--nlive];
		}
		CHECK(a.used == used, "step %d: used %llu, model %llu", step,
		      (unsigned long long)a.used, (unsigned long long)used);
		if (fails)
			return;
	}
	while (nlive) {
		nlive--;
		alloc_put(&a, live[nlive].off, live[nlive].len);
	}
	CHECK(a.used == 0 && a.nfree == 1, "all back: used %llu, %llu free extents (want 0, 1)",
	      (unsigned long long)a.used, (unsigned long long)a.nfree);
	{
		uint64_t off;

		CHECK(alloc_get(&a, NPAGES * PG, PG, &off) == 0 && off == 0, "the whole space in one piece");
	}
	alloc_fini(&a);
	printf("random: 200000 gets and puts match the first-fit model\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fragmented_teardown(void)
{
	enum { N = 65536 };
	struct urd_alloc a;
	uint64_t *high = malloc(N * sizeof(*high)), *low = malloc(2 * N * sizeof(*low)), filler, off;
	double t0, dt;

	CHECK(high && low, "malloc");
	CHECK(alloc_init(&a, 0, 16ull << 30) == 0, "alloc_init");
	CHECK(alloc_get(&a, 2ull * N * PG, PG, &filler) == 0, "filler");
	for (int i = 0; i < N; i++)
		CHECK(alloc_get(&a, PG, PG, &high[i]) == 0, "high page %d", i);
	alloc_put(&a, filler, 2ull * N * PG);
	for (int i = 0; i < 2 * N; i++)
		CHECK(alloc_get(&a, PG, PG, &low[i]) == 0, "low page %d", i);
	for (int i = 0; i < 2 * N; i += 2)
		alloc_put(&a, low[i], PG);
	CHECK(a.nfree >= N, "%llu free extents below the high pages (want >= %d)",
	      (unsigned long long)a.nfree, N);
	t0 = now_s();
	for (int i = 0; i < N; i++)         /* oldest first, as a dead context's reap */
		alloc_put(&a, high[i], PG);
	dt = now_s() - t0;
	printf("fragmented: %d puts above %d holes took %.1f ms\n", N, N, dt * 1e3);
	CHECK(dt < 2.0, "giving back %d pages above %d holes took %.2f s", N, N, dt);
	for (int i = 1; i < 2 * N; i += 2)
		alloc_put(&a, low[i], PG);
	CHECK(a.used == 0 && a.nfree == 1, "all back: used %llu, %llu free extents",
	      (unsigned long long)a.used, (unsigned long long)a.nfree);
	CHECK(alloc_get(&a, 16ull << 30, PG, &off) == 0 && off == 0, "the whole window in one piece");
	alloc_fini(&a);
	free(high);
	free(low);
}

int main(void)
{
	random_model();
	fragmented_teardown();
	printf("%s\n", fails ? "FAILED" : "ok");
	return fails ? 1 : 0;
}

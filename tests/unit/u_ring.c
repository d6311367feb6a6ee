/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* u_ring: the queue API of include/unirdma/ring.h, on its own.
 *
 * Every bound the daemon applies to an index a tenant writes lives in
 * ring.h, so this is where the lies are tried: for each reader, every
 * distance between the two indices (honest ones, one past a ring, far ahead,
 * behind), at several points of the 32-bit wrap.
 * 1. urd_queue_slot() (and _fixed) stays inside the ring for any index.
 * 2. Producer: urd_queue_room() gives lim - used for an honest cons, 0 for
 *    any impossible one, and does not read cons while the cached value
 *    already shows room (the shared line is read once per batch).
 * 3. Consumer: urd_queue_prod_ok() accepts exactly 0..n ahead;
 *    urd_queue_filled() returns the distance clamped to n.
 * 4. Proxy: urd_queue_cons_clamped() keeps cons at most n behind.
 * 5. publish/release/advance store what they should;
 *    urd_queue_needs_doorbell() follows the polling flag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unirdma/ring.h"
#include "unit.h"


enum { N = 16, SHIFT = 6 };

static _Alignas(64) uint8_t mem[URD_RING_HDR_SIZE + (N << SHIFT)];

/* Distances to try: honest 0..N, then lies. */
static const int64_t dists[] = { 0, 1, N / 2, N - 1, N, N + 1, 2 * N, 1 << 20,
				 -1, -(int64_t)N, -(1 << 20), 0x7fffffff, -0x7fffffffll };
static const uint32_t bases[] = { 0, 5, 0x7ffffff8u, 0xfffffff0u, 0xffffffffu };

static void fresh(struct urd_queue *q, uint32_t own)
{
	memset(mem, 0, sizeof(mem));
	urd_queue_init(q, mem, N, SHIFT);
	q->own = own;
	q->seen = own;
}

static void test_slot(void)
{
	struct urd_queue q;

	fresh(&q, 0);
	CHECK(q.hdr == (struct urd_ring_hdr *)mem && q.slots == mem + URD_RING_HDR_SIZE,
	      "init: header and slots");
	for (uint64_t i = 0; i < 100000; i++) {
		uint32_t idx = (uint32_t)(i * 2654435761u);
		uint8_t *s = urd_queue_slot(&q, idx);

		CHECK(s == q.slots + ((size_t)(idx % N) << SHIFT), "slot of %#x", idx);
		CHECK(urd_queue_slot_fixed(&q, idx, SHIFT) == s, "slot_fixed of %#x", idx);
		if (s < q.slots || s + (1u << SHIFT) > mem + sizeof(mem)) {
			CHECK(0, "slot of %#x outside the ring", idx);
			break;
		}
	}
}

static void test_room(void)
{
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			for (uint32_t lim = N / 2; lim <= N; lim += N / 2) {
				struct urd_queue q;
				uint32_t prod = bases[b], cons = prod - (uint32_t)dists[d];
				uint32_t used = prod - cons, want;

				want = (dists[d] >= 0 && used < lim) ? lim - used : 0;
				fresh(&q, prod);
				q.seen = prod - lim;    /* the cache says full: cons is read */
				q.hdr->cons = cons;
				CHECK(urd_queue_room(&q, lim) == want,
				      "room: prod %#x cons %#x lim %u: %u, want %u", prod, cons, lim,
				      urd_queue_room(&q, lim), want);
				CHECK(q.seen == cons, "room: the cons read is cached");
			}
		}
	}
	{       /* while the cache shows room, the shared cons is not read */
		struct urd_queue q;

		fresh(&q, 100);
		q.seen = 98;
		q.hdr->cons = 100 + N;          /* a lie it must not see */
		CHECK(urd_queue_room(&q, N) == N - 2 && q.seen == 98, "room: cached cons used");
	}
}

static void test_consumer(void)
{
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			struct urd_queue q;
			uint32_t cons = bases[b], prod = cons + (uint32_t)dists[d];
			bool honest = dists[d] >= 0 && dists[d] <= N;

			fresh(&q, cons);
			q.hdr->prod = prod;
			CHECK(urd_queue_load_prod(&q) == prod, "load_prod");
			CHECK(urd_queue_prod_ok(&q, prod) == honest, "prod_ok: cons %#x prod %#x", cons, prod);
			CHECK(urd_queue_filled(&q) == (honest ? prod - cons : N),
			      "filled: cons %#x prod %#x: %u", cons, prod, urd_queue_filled(&q));
		}
	}
}

static void test_proxy(void)
{
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
			struct urd_queue q;
			uint32_t prod = bases[b], cons = prod - (uint32_t)dists[d];
			bool honest = dists[d] >= 0 && dists[d] <= N;

			fresh(&q, prod);
			q.hdr->cons = cons;
			CHECK(urd_queue_cons_clamped(&q) == (honest ? cons : prod - N),
			      "cons_clamped: prod %#x cons %#x: %#x", prod, cons, urd_queue_cons_clamped(&q));
		}
	}
}

static void test_stores(void)
{
	struct urd_queue q;

	fresh(&q, 0xfffffffeu);
	q.hdr->prod = 0x12345;
	q.hdr->cons = 0x777;
	urd_queue_attach_prod(&q);
	CHECK(q.own == 0x12345 && q.seen == 0x777, "attach_prod");
	urd_queue_attach_cons(&q);
	CHECK(q.own == 0x777, "attach_cons");
	urd_queue_publish_prod(&q, 42);
	CHECK(q.hdr->prod == 42, "publish_prod");
	urd_queue_release_cons(&q, 7);
	CHECK(q.hdr->cons == 7, "release_cons");
	q.own = 0xffffffffu;
	urd_queue_advance_cons(&q);
	CHECK(q.own == 0 && q.hdr->cons == 0, "advance_cons wraps");
	q.hdr->polling = 1;
	CHECK(!urd_queue_needs_doorbell(&q), "polling: no doorbell");
	q.hdr->polling = 0;
	CHECK(urd_queue_needs_doorbell(&q), "not polling: doorbell");
}

int main(void)
{
	test_slot();
	test_room();
	test_consumer();
	test_proxy();
	test_stores();
	if (fails) {
		fprintf(stderr, "u_ring: %d checks failed\n", fails);
		return 1;
	}
	printf("u_ring: ok\n");
	return 0;
}

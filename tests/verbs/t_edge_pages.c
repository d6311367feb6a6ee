/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_edge_pages: registering heap buffers never touches the library's objects.
 *
 * Registration moves the pages under a buffer, its edge pages whole, onto the
 * vRNIC file (copy, then map over).  A write another thread makes to such a
 * page in between is lost.  When the library kept its objects on malloc's
 * heap, ibv_ud_pingpong's buffer (size + 40 bytes, malloc'd right after the
 * context) ended in the page that held the context: a move that overlapped
 * the event thread taking ev_lock brought the lock back held by nobody, and
 * the program hung in its next ibv_create_cq (seen in CI, then in 1 run of
 * about 20 under load).
 *
 * Here the heap is arranged the way programs arrange it: each object is
 * followed by a small malloc'd buffer that is registered and deregistered
 * over and over while other threads work on the objects: one thread polls
 * and arms the CQ (the CQ's lock), the event thread takes ev_lock at every
 * CQ event, and the main thread posts sends (the QP's lock).  Checked:
 * - no object of the library shares a page with any of the buffers;
 * - every WRITE lands and completes while the buffers move (data checked);
 * - afterwards the context still makes CQs and QPs (no lock left held).
 *
 * And the moves themselves lose nothing: a thread counts in a word on the
 * page of a buffer that is registered and deregistered 300 times meanwhile
 * (each move once copied the page and then switched mappings, and a count
 * made in between was lost: librdmacm's acknowledged-event count in rping,
 * CI 2026-11-29); the word ends at the thread's own count.
 */
#include "helpers.h"

#include <pthread.h>
#include <unistd.h>

#define NBUF 8
#define ROUNDS 400
#define BUFLEN 1000             /* not a page multiple: edge pages move whole */

static volatile int stop;
static struct ibv_cq *poll_cq_obj;
static unsigned long polls;

static void *poller(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	while (!stop) {
		ibv_req_notify_cq(poll_cq_obj, 0);
		ibv_poll_cq(poll_cq_obj, 1, &wc);
		polls++;
	}
	return NULL;
}

static volatile uint64_t *counter;
static uint64_t counted;
static volatile int stop_counting;

static void *count_thread(void *arg)
{
	(void)arg;
	while (!stop_counting) {
		(*counter)++;
		counted++;
	}
	return NULL;
}

/* The count in the page of a buffer that moves onto the file and back. */
static void neighbour_counts(struct t_dev *d)
{
	size_t P = t_page();
	uint8_t *page = t_map(P);
	pthread_t th;

	memset(page, 0x5a, 1000);
	counter = (volatile uint64_t *)(page + P / 2);
	CHECK(pthread_create(&th, NULL, count_thread, NULL) == 0);
	for (int r = 0; r < 300; r++)
		CHECK_OK(ibv_dereg_mr(t_reg(d->pd, page, 1000, IBV_ACCESS_LOCAL_WRITE)));
	stop_counting = 1;
	CHECK(pthread_join(th, NULL) == 0);
	if (*counter != counted)
		t_fail("the neighbour counted %llu, its word says %llu: %lld writes lost in the moves",
		       (unsigned long long)counted, (unsigned long long)*counter,
		       (long long)(counted - *counter));
	CHECK(counted > 0);
	CHECK_BYTES(page, 0x5a, 1000);
	t_unmap(page, P);
}

static uintptr_t page_of(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(t_page() - 1);
}

/* The pages [p, p + n) covers. */
static int shares_page(const void *obj, size_t objlen, const void *buf, size_t n)
{
	uintptr_t o0 = page_of(obj), o1 = page_of((const char *)obj + objlen - 1);
	uintptr_t b0 = page_of(buf), b1 = page_of((const char *)buf + n - 1);

	return o0 <= b1 && b0 <= o1;
}

int main(void)
{
	struct t_dev a, b;
	struct ibv_cq *scq, *rcq, *extra_cq;
	struct ibv_qp *qa, *qb, *extra_qp;
	struct ibv_comp_channel *ch;
	struct ibv_mr *mra, *mrb;
	uint8_t *src, *dst;
	void *bufs[NBUF];
	const void *objs[6];
	pthread_t th;
	struct ibv_wc wc;
	size_t P;

	t_start("t_edge_pages");
	P = t_page();
	t_open(&a, 0);
	t_open(&b, 1);
	/* each object followed by a heap buffer, as programs allocate them */
	bufs[0] = malloc(BUFLEN);
	ch = t_channel(&a);
	bufs[1] = malloc(BUFLEN);
	scq = t_cq(&a, 256, ch);
	bufs[2] = malloc(BUFLEN);
	rcq = t_cq(&b, 256, NULL);
	bufs[3] = malloc(BUFLEN);
	qa = t_qp(&a, IBV_QPT_RC, scq, scq, NULL, 1, NULL);
	bufs[4] = malloc(BUFLEN);
	qb = t_qp(&b, IBV_QPT_RC, rcq, rcq, NULL, 1, NULL);
	bufs[5] = malloc(BUFLEN);
	poll_cq_obj = rcq;
	bufs[6] = malloc(BUFLEN);
	bufs[7] = malloc(BUFLEN);
	for (int i = 0; i < NBUF; i++) {
		CHECK(bufs[i]);
		memset(bufs[i], i, BUFLEN);
	}
	objs[0] = a.ctx;
	objs[1] = a.pd;
	objs[2] = scq;
	objs[3] = rcq;
	objs[4] = qa;
	objs[5] = qb;
	for (int o = 0; o < 6; o++)
		for (int i = 0; i < NBUF; i++)
			if (shares_page(objs[o], 64, bufs[i], BUFLEN))
				t_fail("object %d (%p) shares a page with heap buffer %d (%p)",
				       o, objs[o], i, bufs[i]);

	src = t_map(P);
	dst = t_map(P);
	t_fill(src, P, 7, 0);
	mra = t_reg(a.pd, src, P, T_ALL_ACCESS);
	mrb = t_reg(b.pd, dst, P, T_ALL_ACCESS);
	t_rc_connect(&a, qa, &b, qb, NULL);
	CHECK_OK(ibv_req_notify_cq(scq, 0));
	CHECK(pthread_create(&th, NULL, poller, NULL) == 0);

	for (int r = 0; r < ROUNDS; r++) {
		struct ibv_mr *m[NBUF];
		struct ibv_sge sg = t_sge(src + (size_t)(r % 8) * 256, 256, mra->lkey);
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		for (int i = 0; i < NBUF; i++)
			m[i] = t_reg(a.pd, bufs[i], BUFLEN, IBV_ACCESS_LOCAL_WRITE);
		CHECK_OK(t_post(qa, (uint64_t)r, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)dst + (size_t)(r % 8) * 256, mrb->rkey, 0));
		for (int i = 0; i < NBUF; i++)
			CHECK_OK(ibv_dereg_mr(m[i]));
		t_expect_wc(scq, &wc, (uint64_t)r, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		/* the completion event went through the event thread (ev_lock) */
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0) {
			ibv_ack_cq_events(ev_cq, 1);
			CHECK_OK(ibv_req_notify_cq(scq, 0));
		}
	}
	stop = 1;
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(polls > 0);
	CHECK_DATA(dst, 8 * 256, 7, 0);
	for (int i = 0; i < NBUF; i++)
		CHECK_BYTES(bufs[i], i, BUFLEN);

	/* nothing was left locked: the context still makes objects */
	extra_cq = t_cq(&a, 16, NULL);
	extra_qp = t_qp(&a, IBV_QPT_RC, extra_cq, extra_cq, NULL, 1, NULL);
	CHECK_OK(ibv_destroy_qp(extra_qp));
	CHECK_OK(ibv_destroy_cq(extra_cq));

	/* the last completion's event may come after the last look */
	for (int i = 0; i < 20; i++) {
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0)
			ibv_ack_cq_events(ev_cq, 1);
		else
			usleep(5000);
	}
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	CHECK_OK(ibv_destroy_comp_channel(ch));
	for (int i = 0; i < NBUF; i++)
		free(bufs[i]);
	t_unmap(src, P);
	t_unmap(dst, P);
	neighbour_counts(&a);
	t_close(&a);
	t_close(&b);
	t_pass();
	return 0;
}

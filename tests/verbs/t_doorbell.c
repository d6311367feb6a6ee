/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_doorbell: no post is ever lost between the library and the engine.
 *
 * The library skips the doorbell while the engine is running a send queue
 * (ring header polling flag, Dekker with the engine dropping the queue) and
 * re-reads the engine's consumer index only when the queue looks full by the
 * last value it read; the engine reads the producer index once per batch.
 * Each of these is a place where a WQE could be published and never seen.
 *
 * This test drives one RC QP with a small send queue through every timing
 * the handshake has: bursts of 1..3x the queue depth (posts that find the
 * queue full and must poll to make room), pauses of none, a few hundred
 * nanoseconds, tens of microseconds (the engine still spinning) and half a
 * millisecond (the engine asleep), for about 1.5 s of wall time.  Every WQE
 * is an RDMA WRITE of its own sequence number into a slot of the peer's
 * array; only every 8th and the last of a burst are signaled.  Each signaled
 * completion must come back in order within the usual timeout (a lost
 * doorbell shows up as a timeout), and at the end every slot must hold the
 * last sequence number written to it.
 */
#include "helpers.h"

#include <sched.h>
#include <stdbool.h>
#include <time.h>

#define SLOTS 512
#define SIG_EVERY 8

static struct t_dev A, B;

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

static void pause_a_little(void)
{
	struct timespec ts = { 0, 500 * 1000 };
	uint32_t kind = rnd(8);

	if (kind < 3)
		return;                         /* back to back: engine still running */
	if (kind < 6) {                         /* engine spinning, queue dropped */
		uint64_t end = t_now_ms();
		uint32_t spins = 100 + rnd(20000);

		for (uint32_t i = 0; i < spins && t_now_ms() <= end + 1; i++)
			__asm__ volatile("" ::: "memory");
		return;
	}
	if (kind < 7) {
		sched_yield();
		return;
	}
	nanosleep(&ts, NULL);                   /* engine goes to sleep */
}

/* Signaled completions seen so far, and the wr_id (= sequence number) of the
 * last: completions of one send queue come back in post order. */
static uint64_t signaled_seen, last_done;

static void take_completion(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	t_wait_wc(cq, &wc);
	CHECK_WC(&wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	if (signaled_seen)
		CHECK(wc.wr_id > last_done);
	last_done = wc.wr_id;
	signaled_seen++;
}

int main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 4,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp_cap bcap = cap;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *a, *b;
	uint64_t *src, *arr, seq = 0, end;
	uint64_t expect[SLOTS] = { 0 };
	uint64_t signaled_posted = 0, bursts = 0, full = 0;
	struct ibv_mr *mr_src, *mr_arr;

	t_start("t_doorbell");
	t_open(&A, 0);
	t_open(&B, 1);
	scq = t_cq(&A, 256, NULL);
	rcq = t_cq(&B, 16, NULL);
	a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	b = t_qp(&B, IBV_QPT_RC, rcq, rcq, NULL, 0, &bcap);
	src = t_map(SLOTS * 16 * sizeof(uint64_t));
	arr = t_map(SLOTS * sizeof(uint64_t));
	mr_src = t_reg(A.pd, src, SLOTS * 16 * sizeof(uint64_t), IBV_ACCESS_LOCAL_WRITE);
	mr_arr = t_reg(B.pd, arr, SLOTS * sizeof(uint64_t), T_ALL_ACCESS);
	t_rc_connect(&A, a, &B, b, NULL);

	end = t_now_ms() + 1500;
	while (t_now_ms() < end) {
		uint32_t burst = 1 + rnd(3 * cap.max_send_wr);

		bursts++;
		for (uint32_t k = 0; k < burst; k++) {
			/* a source word per WR that stays untouched until the WR
			 * is retired: SLOTS * 16 words, reused round robin */
			uint64_t *s = &src[seq % (SLOTS * 16)];
			uint32_t slot = (uint32_t)(seq * 7 % SLOTS);
			bool sig = (seq % SIG_EVERY) == SIG_EVERY - 1 || k == burst - 1;
			struct ibv_sge sg = t_sge(s, 8, mr_src->lkey);
			int rc;

			*s = 0xdb00000000000000ull | seq;
			while ((rc = t_post(a, seq, IBV_WR_RDMA_WRITE, &sg, 1,
					    sig ? IBV_SEND_SIGNALED : 0,
					    (uintptr_t)&arr[slot], mr_arr->rkey, 0)) == ENOMEM) {
				/* queue full: only a completion can make room */
				full++;
				take_completion(scq);
			}
			CHECK_OK(rc);
			expect[slot] = *s;
			signaled_posted += sig;
			seq++;
			if (rnd(16) == 0)
				pause_a_little();
		}
		/* sometimes leave the burst in flight, sometimes drain it */
		if (rnd(2)) {
			while (signaled_seen < signaled_posted)
				take_completion(scq);
			CHECK_EQ(last_done, seq - 1);
		}
		pause_a_little();
	}
	while (signaled_seen < signaled_posted)
		take_completion(scq);
	CHECK_EQ(last_done, seq - 1);
	CHECK_CQ_EMPTY(scq);
	for (uint32_t i = 0; i < SLOTS; i++)
		CHECK_EQ(arr[i], expect[i]);
	printf("t_doorbell: %llu writes in %llu bursts, %llu posts found the queue full\n",
	       (unsigned long long)seq, (unsigned long long)bursts, (unsigned long long)full);
	CHECK(full > 0);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(mr_src);
	ibv_dereg_mr(mr_arr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

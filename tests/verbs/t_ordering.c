/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_ordering: RC ordering and unsignaled completions.
 *
 * Part 1: 1000 messages on one RC QP, cycling SEND (payload = sequence number), RDMA_WRITE (writes
 * the sequence number into slot seq of a remote array) and
 * RDMA_WRITE_WITH_IMM (same, imm = seq), posted in chains of up to 8 WRs per
 * ibv_post_send, all signaled, PSNs starting just below the 24-bit wrap.
 * Receives complete in order (IBA 9.5: RC messages are delivered in order),
 * and when the receive for message k completes, every write before k is
 * already visible. Send completions come back in post order (IBA 10.8.3:
 * completions of one send queue are returned in order).
 *
 * Part 2: a QP with sq_sig_all = 0 posts 1000 RDMA writes, only every 16th
 * (and the last) with IBV_SEND_SIGNALED. Only those produce completions, in
 * order; a signaled completion retires every earlier unsignaled WR, so
 * posting never fails while (posted - retired) <= max_send_wr
 * (ibv_post_send(3), IBV_SEND_SIGNALED). All 1000 writes land.
 *
 * Part 3: a READ between WRITEs.  Rounds, each on a new QP pair: B's QP
 * posts a 192 KiB RDMA WRITE, an 8 KiB RDMA READ and a 64 B RDMA WRITE into
 * A's memory, each round's data its own; the completions come in order, all
 * successful, the READ brings back A's bytes of that round and both writes
 * land.  The QPs' responder is device 0 (A).  Across hosts,
 * tests/integration/wire_verbs.sh (read_between) stalls what A's host sends
 * at the start of each round for longer than B's resend timer: B goes back
 * to the first WRITE, whose rest then fills the halved window (the READ was
 * sent, now it is taken back and waits), and the READ responses and the
 * last ACK arrive together.  (The ACK for the last WRITE used to move B past
 * the READ: its responses were all dropped as stale, and it ended in retry
 * exceeded.)  Rounds start 30 ms apart, the quiet the relay starts a stall
 * after.
 * UNIRDMA_T_ORDERING_PARTS=3 runs this part alone.
 *
 * Part 4: a stream of small WRITEs.  B's QP (send queue 128 deep) posts
 * 40000 RDMA WRITEs of 64 B into A's memory, each to a slot of its own,
 * every 100th signaled (ib_write_bw's defaults); completions come in order
 * and every slot holds its WRITE's bytes.  Across hosts, wire_verbs.sh
 * (goback_budget) stalls A's ACKs every 20 ms, often for longer than B's
 * resend timer: B goes back over
 * WRITEs A already has whole, more of them than one engine step starts
 * (32), and the ACK for all of them comes while B resends.  (The engine
 * used to drop such a QP from its work list when the step's budget ran out
 * with WQEs still to start; the WQEs A had whole then completed without a
 * packet, no ACK came to put the QP back, and the stream stopped.)
 * UNIRDMA_T_ORDERING_N4 sets the count, UNIRDMA_T_ORDERING_SECS a time after
 * which no more are posted than the next signaled one.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <sched.h>

#define N 1000
#define SIG_EVERY 16
#define CHAIN 8

static struct t_dev A, B;

static void part1(void)
{
	struct ibv_cq *scq = t_cq(&A, 256, NULL), *rcq = t_cq(&B, 256, NULL);
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 64,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp_cap bcap = cap;
	struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, rcq, rcq, NULL, 0, &bcap);
	size_t arr_len = N * sizeof(uint64_t);
	uint64_t *src = t_map(arr_len), *arr = t_map(arr_len);
	uint64_t *rbuf = t_map(bcap.max_recv_wr * sizeof(uint64_t));
	struct ibv_mr *mr_src = t_reg(A.pd, src, arr_len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mr_arr = t_reg(B.pd, arr, arr_len, T_ALL_ACCESS);
	struct ibv_mr *mr_rbuf = t_reg(B.pd, rbuf, bcap.max_recv_wr * sizeof(uint64_t),
				       IBV_ACCESS_LOCAL_WRITE);
	uint32_t rq = bcap.max_recv_wr < 64 ? bcap.max_recv_wr : 64;
	uint32_t sq = cap.max_send_wr < 64 ? cap.max_send_wr : 64;
	uint32_t posted = 0, send_done = 0, recv_seen = 0, recv_posted = 0;
	uint32_t sends_posted = 0;	/* messages that consume a receive */
	uint32_t next_recv_seq = 0;
	struct t_conn c;
	struct ibv_wc wc;
	uint64_t end = t_now_ms() + T_TIMEOUT_MS;

	t_conn_default(&c);
	c.psn = 0xffffff - 100;	/* wraps after 100 packets */
	t_rc_connect(&A, a, &B, b, &c);
	for (uint32_t i = 0; i < N; i++)
		src[i] = 0x5e9000000000ull + i;
	for (uint32_t i = 0; i < rq; i++) {
		struct ibv_sge sg = t_sge(&rbuf[i], 8, mr_rbuf->lkey);

		CHECK_OK(t_post_recv(b, i, &sg, 1));
		recv_posted++;
	}

	while (send_done < N || recv_seen < sends_posted || posted < N) {
		/* Post a chain, keeping the SQ and the peer's RQ from overflowing. */
		struct ibv_send_wr wr[CHAIN], *bad = NULL;
		struct ibv_sge sg[CHAIN];
		int k = 0;

		while (k < CHAIN && posted < N && posted - send_done < sq) {
			uint32_t seq = posted;
			int kind = seq % 3;	/* 0 SEND, 1 WRITE, 2 WRITE_IMM */

			if (kind != 1 && sends_posted - recv_seen >= rq)
				break;
			memset(&wr[k], 0, sizeof(wr[k]));
			sg[k] = t_sge(&src[seq], 8, mr_src->lkey);
			wr[k].wr_id = seq;
			wr[k].sg_list = &sg[k];
			wr[k].num_sge = 1;
			wr[k].send_flags = IBV_SEND_SIGNALED;
			wr[k].opcode = kind == 0 ? IBV_WR_SEND :
				kind == 1 ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
			wr[k].imm_data = htonl(seq);
			wr[k].wr.rdma.remote_addr = (uintptr_t)&arr[seq];
			wr[k].wr.rdma.rkey = mr_arr->rkey;
			if (k)
				wr[k - 1].next = &wr[k];
			if (kind != 1)
				sends_posted++;
			posted++;
			k++;
		}
		if (k)
			CHECK_OK(ibv_post_send(a, wr, &bad));
		else
			sched_yield();	/* waiting: leave the CPU to the engine */

		while (ibv_poll_cq(scq, 1, &wc) == 1) {
			CHECK_WC(&wc, IBV_WC_SUCCESS, T_ANY_OPCODE);
			if (wc.wr_id != send_done)
				t_fail("send completion %llu came when %u was next",
				       (unsigned long long)wc.wr_id, send_done);
			CHECK_EQ(wc.opcode, send_done % 3 == 0 ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
			send_done++;
		}
		while (ibv_poll_cq(rcq, 1, &wc) == 1) {
			uint32_t seq, slot = (uint32_t)wc.wr_id;
			struct ibv_sge rsg;

			CHECK_WC(&wc, IBV_WC_SUCCESS, T_ANY_OPCODE);
			CHECK(slot < rq);
			if (wc.opcode == IBV_WC_RECV) {
				CHECK_EQ(wc.byte_len, 8);
				CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
				seq = (uint32_t)(rbuf[slot] - 0x5e9000000000ull);
				CHECK(seq < N);
				CHECK_EQ(seq % 3, 0);
			} else {
				CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
				CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
				seq = ntohl(wc.imm_data);
				CHECK(seq < N);
				CHECK_EQ(seq % 3, 2);
				CHECK_EQ(arr[seq], src[seq]);
			}
			/* Receive-consuming messages are 0, 2, 3, 5, 6, ...: none
			 * skipped, none out of order. */
			if (seq != next_recv_seq)
				t_fail("receive for message %u, expected message %u",
				       seq, next_recv_seq);
			next_recv_seq = seq % 3 == 0 ? seq + 2 : seq + 1;
			/* Every write posted before this message has landed. */
			for (uint32_t j = (seq >= 3 ? seq - 3 : 0); j < seq; j++)
				if (j % 3 == 1)
					CHECK_EQ(arr[j], src[j]);
			recv_seen++;
			if (recv_posted < N) {
				rsg = t_sge(&rbuf[slot], 8, mr_rbuf->lkey);
				CHECK_OK(t_post_recv(b, slot, &rsg, 1));
				recv_posted++;
			}
		}
		if (t_now_ms() > end)
			t_fail("stuck: posted %u, send completions %u, receives %u",
			       posted, send_done, recv_seen);
	}
	CHECK_EQ(recv_seen, sends_posted);
	for (uint32_t i = 0; i < N; i++)
		if (i % 3 != 0)
			CHECK_EQ(arr[i], src[i]);
		else
			CHECK_EQ(arr[i], 0);
	CHECK_CQ_EMPTY(scq);
	CHECK_CQ_EMPTY(rcq);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(mr_src));
	CHECK_OK(ibv_dereg_mr(mr_arr));
	CHECK_OK(ibv_dereg_mr(mr_rbuf));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(src, arr_len);
	t_unmap(arr, arr_len);
	t_unmap(rbuf, bcap.max_recv_wr * sizeof(uint64_t));
}

/* A stream of RDMA WRITEs on qp (its send CQ cq, depth sq): WR i carries
 * slot bytes from src + i * slot to dst + i * slot (rkey), every sig-th and
 * the last signaled.  The queue stays as full as it may be: a signaled
 * completion retires every WR before it, so posting never fails while
 * (posted - retired) <= sq (ibv_post_send(3), IBV_SEND_SIGNALED).
 * Completions come in order, one per signaled WR, successful.  Fails if
 * nothing completes for T_TIMEOUT_MS, or the stream is not done by end
 * (ms, 0: no limit).  At stop_at (0: never) the stream ends early, at the
 * next signaled WR.  Returns how many WRs went; *ncqe the completions. */
static uint32_t write_stream(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t sq, uint32_t n, uint32_t sig,
			     const uint8_t *src, uint32_t lkey, uint64_t dst, uint32_t rkey, uint32_t slot,
			     uint64_t end, uint64_t stop_at, uint32_t *ncqe)
{
	uint32_t posted = 0, retired = 0, last = n - 1;
	uint64_t idle_since = t_now_ms();
	struct ibv_wc wc;

	CHECK(n >= 1 && sq >= sig);
	*ncqe = 0;
	while (retired < n) {
		if (stop_at && t_now_ms() >= stop_at) {
			uint32_t cut = (posted + sig - 1) / sig * sig;

			if (cut && cut < n)
				n = cut, last = n - 1;
			stop_at = 0;
		}
		while (posted < n && posted - retired < sq) {
			struct ibv_sge sg = t_sge((void *)(src + (size_t)posted * slot), slot, lkey);

			/* The SQ has room: posting must succeed. */
			CHECK_OK(t_post(qp, posted, IBV_WR_RDMA_WRITE, &sg, 1,
					posted % sig == sig - 1 || posted == last ? IBV_SEND_SIGNALED : 0,
					dst + (uint64_t)posted * slot, rkey, 0));
			posted++;
		}
		if (ibv_poll_cq(cq, 1, &wc) == 1) {
			uint32_t expect = retired;

			while (expect % sig != sig - 1 && expect != last)
				expect++;
			CHECK_WC(&wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
			if (wc.wr_id != expect)
				t_fail("completion for WR %llu, expected the signaled WR %u",
				       (unsigned long long)wc.wr_id, expect);
			CHECK_EQ(wc.qp_num, qp->qp_num);
			retired = expect + 1;
			(*ncqe)++;
			idle_since = t_now_ms();
		} else {
			sched_yield();
		}
		if ((end && t_now_ms() > end) || t_now_ms() - idle_since > (uint64_t)T_TIMEOUT_MS)
			t_fail("stuck: posted %u, retired %u of %u", posted, retired, n);
	}
	return n;
}

static void part2(void)
{
	struct ibv_cq *scq = t_cq(&A, 128, NULL), *rcq = t_cq(&B, 16, NULL);
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 4,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp_cap bcap = cap;
	struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, rcq, rcq, NULL, 0, &bcap);
	size_t arr_len = N * sizeof(uint64_t);
	uint64_t *src = t_map(arr_len), *arr = t_map(arr_len);
	struct ibv_mr *mr_src = t_reg(A.pd, src, arr_len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mr_arr = t_reg(B.pd, arr, arr_len, T_ALL_ACCESS);
	uint32_t ncqe;

	t_rc_connect(&A, a, &B, b, NULL);
	for (uint32_t i = 0; i < N; i++)
		src[i] = 0xa11ce00000000ull + i;
	/* the granted depth, but never so little that 16 don't fit */
	write_stream(a, scq, cap.max_send_wr, N, SIG_EVERY, (const uint8_t *)src, mr_src->lkey,
		     (uintptr_t)arr, mr_arr->rkey, sizeof(*src), t_now_ms() + T_TIMEOUT_MS, 0, &ncqe);
	CHECK_EQ(ncqe, N / SIG_EVERY + 1);
	CHECK_CQ_EMPTY(scq);
	CHECK_CQ_EMPTY(rcq);
	for (uint32_t i = 0; i < N; i++)
		CHECK_EQ(arr[i], src[i]);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(mr_src));
	CHECK_OK(ibv_dereg_mr(mr_arr));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(src, arr_len);
	t_unmap(arr, arr_len);
}

#define ROUNDS   5
#define BIG      (192u << 10)
#define RD       (8u << 10)
#define SMALL    64u
#define ROUND_AT(r) ((size_t)(r) * (BIG + RD + SMALL))

static void part3(void)
{
	struct ibv_cq *scq = t_cq(&B, 16, NULL), *rcq = t_cq(&A, 16, NULL);
	size_t len = ROUND_AT(ROUNDS);
	uint8_t *src = t_map(len), *mem = t_map(len);
	struct ibv_mr *mr_src = t_reg(B.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mr_mem = t_reg(A.pd, mem, len, T_ALL_ACCESS);
	struct ibv_wc wc;

	/* B's writes carry seed 3's pattern; what B reads is A's, seed 4 */
	t_fill(src, len, 3, 0);
	for (uint32_t r = 0; r < ROUNDS; r++)
		t_fill(mem + ROUND_AT(r) + BIG, RD, 4, ROUND_AT(r) + BIG);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		struct ibv_qp_cap cap = { .max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 };
		struct ibv_qp_cap acap = cap;
		struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, scq, scq, NULL, 1, &cap);
		struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, rcq, rcq, NULL, 0, &acap);
		size_t at = ROUND_AT(r);
		struct ibv_sge big = t_sge(src + at, BIG, mr_src->lkey);
		struct ibv_sge rd = t_sge(src + at + BIG, RD, mr_src->lkey);
		struct ibv_sge small = t_sge(src + at + BIG + RD, SMALL, mr_src->lkey);
		static const enum ibv_wc_opcode op[3] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE };

		t_rc_connect(&B, b, &A, a, NULL);
		t_sleep_ms(30);
		CHECK_OK(t_post(b, 3 * r, IBV_WR_RDMA_WRITE, &big, 1, IBV_SEND_SIGNALED, (uintptr_t)(mem + at),
				mr_mem->rkey, 0));
		CHECK_OK(t_post(b, 3 * r + 1, IBV_WR_RDMA_READ, &rd, 1, IBV_SEND_SIGNALED,
				(uintptr_t)(mem + at + BIG), mr_mem->rkey, 0));
		CHECK_OK(t_post(b, 3 * r + 2, IBV_WR_RDMA_WRITE, &small, 1, IBV_SEND_SIGNALED,
				(uintptr_t)(mem + at + BIG + RD), mr_mem->rkey, 0));
		for (int k = 0; k < 3; k++)
			t_expect_wc(scq, &wc, 3 * r + k, IBV_WC_SUCCESS, op[k]);
		CHECK_DATA(src + at + BIG, RD, 4, at + BIG);
		CHECK_DATA(mem + at, BIG, 3, at);
		CHECK_DATA(mem + at + BIG + RD, SMALL, 3, at + BIG + RD);
		CHECK_CQ_EMPTY(scq);
		CHECK_CQ_EMPTY(rcq);
		CHECK_OK(ibv_destroy_qp(a));
		CHECK_OK(ibv_destroy_qp(b));
	}
	CHECK_OK(ibv_dereg_mr(mr_src));
	CHECK_OK(ibv_dereg_mr(mr_mem));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(src, len);
	t_unmap(mem, len);
}

#define N4_SLOT  64u
#define N4_SQ    128u   /* as ib_write_bw's default --tx-depth */
#define N4_SIG   100u   /* and its --cqe-poll: 1 WR in 100 signaled */

static void part4(void)
{
	const char *ns = getenv("UNIRDMA_T_ORDERING_N4"), *secs = getenv("UNIRDMA_T_ORDERING_SECS");
	uint32_t n = ns ? (uint32_t)strtoul(ns, NULL, 0) : 40000;
	uint64_t stop_at = secs ? t_now_ms() + 1000 * strtoull(secs, NULL, 0) : 0;
	size_t len = (size_t)n * N4_SLOT;
	struct ibv_cq *scq = t_cq(&B, N4_SQ, NULL), *rcq = t_cq(&A, 16, NULL);
	struct ibv_qp_cap cap = { .max_send_wr = N4_SQ, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_qp_cap acap = cap;
	struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, rcq, rcq, NULL, 0, &acap);
	uint8_t *src = t_map(len), *mem = t_map(len);
	struct ibv_mr *mr_src = t_reg(B.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mr_mem = t_reg(A.pd, mem, len, T_ALL_ACCESS);
	uint32_t ncqe;

	t_fill(src, len, 5, 0);
	t_rc_connect(&B, b, &A, a, NULL);
	n = write_stream(b, scq, cap.max_send_wr, n, N4_SIG, src, mr_src->lkey, (uintptr_t)mem, mr_mem->rkey,
			 N4_SLOT, 0, stop_at, &ncqe);
	CHECK_EQ(ncqe, (n + N4_SIG - 1) / N4_SIG);
	CHECK_CQ_EMPTY(scq);
	CHECK_CQ_EMPTY(rcq);
	CHECK_DATA(mem, (size_t)n * N4_SLOT, 5, 0);
	printf("part 4: %u WRITEs of %u B, %u completions\n", n, N4_SLOT, ncqe);
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(mr_src));
	CHECK_OK(ibv_dereg_mr(mr_mem));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(src, len);
	t_unmap(mem, len);
}

int main(void)
{
	const char *parts = getenv("UNIRDMA_T_ORDERING_PARTS");

	t_start("t_ordering");
	t_open(&A, 0);
	t_open(&B, 1);
	if (!parts || strchr(parts, '1'))
		part1();
	if (!parts || strchr(parts, '2'))
		part2();
	if (!parts || strchr(parts, '3'))
		part3();
	if (!parts || strchr(parts, '4'))
		part4();
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_big: messages longer than the engine's piece (256 KiB) move in pieces
 * and arrive whole (issue 9, finding 3).
 *
 * - RDMA WRITE, READ, SEND and WRITE_WITH_IMM of 3 MiB + 5 bytes, gathered
 *   from 3 SGEs of uneven sizes and (SEND) scattered over 4: every byte lands
 *   in its place and nothing beyond; one CQE per message, with the whole
 *   length (ibv_poll_cq(3)).
 * - RC order: a small WRITE posted right after a big one completes after it,
 *   and the data of both is there when the second CQE is seen.
 * - A big SEND that finds no receive WQE waits (RNR, rnr_retry 7) and
 *   completes once a receive is posted.
 * - The QP goes to the error state in the middle of a big message
 *   (ibv_modify_qp to ERR): the WQE completes with IBV_WC_WR_FLUSH_ERR, and
 *   a receive WQE that a big SEND started filling is flushed too.
 * - The target MR is deregistered while big WRITEs into it run: each
 *   completes, successfully or with IBV_WC_REM_ACCESS_ERR (then the rest
 *   are flushed); the engine checks the MR again for every piece, since the
 *   lock is free between pieces (a sanitizer build would see a stale MR).
 */
#include <arpa/inet.h>

#include "helpers.h"

#define BIG ((3u << 20) + 5)
#define BUF (8u << 20)

static struct t_dev A, B;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *a, *b;

/* Gather BIG bytes from abuf + 1 in three uneven SGEs. */
static int gather(struct ibv_sge *sg)
{
	sg[0] = t_sge(abuf + 1, 100003, amr->lkey);
	sg[1] = t_sge(abuf + 200000, 1500000, amr->lkey);
	sg[2] = t_sge(abuf + 2000000, BIG - 100003 - 1500000, amr->lkey);
	return 3;
}

static void fill_gather(uint32_t seed)
{
	struct ibv_sge sg[3];
	size_t pos = 0;

	gather(sg);
	for (int i = 0; i < 3; i++) {
		t_fill((void *)(uintptr_t)sg[i].addr, sg[i].length, seed, pos);
		pos += sg[i].length;
	}
}

static void check_gathered(uint32_t seed)
{
	struct ibv_sge sg[3];
	size_t pos = 0;

	gather(sg);
	for (int i = 0; i < 3; i++) {
		CHECK_DATA((void *)(uintptr_t)sg[i].addr, sg[i].length, seed, pos);
		pos += sg[i].length;
	}
}

static void write_read(void)
{
	struct ibv_sge sg[3], s;
	struct ibv_wc wc;

	/* WRITE abuf (gathered) -> bbuf + 3 */
	fill_gather(0x1111);
	memset(bbuf, 0, BUF);
	CHECK_OK(t_post(a, 1, IBV_WR_RDMA_WRITE, sg, gather(sg), IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + 3, bmr->rkey, 0));
	t_expect_wc(scq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_BYTES(bbuf, 0, 3);
	CHECK_DATA(bbuf + 3, BIG, 0x1111, 0);
	CHECK_BYTES(bbuf + 3 + BIG, 0, 4096);

	/* READ bbuf + 3 -> abuf (scattered) */
	t_fill(bbuf + 3, BIG, 0x2222, 0);
	memset(abuf, 0, BUF);
	CHECK_OK(t_post(a, 2, IBV_WR_RDMA_READ, sg, gather(sg), IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + 3, bmr->rkey, 0));
	t_expect_wc(scq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, BIG);
	check_gathered(0x2222);
	CHECK_BYTES(abuf + 100004, 0, 200000 - 100004);

	/* a big WRITE then a small one: in order */
	fill_gather(0x3333);
	t_fill(abuf + BUF - 64, 64, 0x4444, 0);
	memset(bbuf, 0, BUF);
	CHECK_OK(t_post(a, 3, IBV_WR_RDMA_WRITE, sg, gather(sg), 0, (uintptr_t)bbuf, bmr->rkey, 0));
	s = t_sge(abuf + BUF - 64, 64, amr->lkey);
	CHECK_OK(t_post(a, 4, IBV_WR_RDMA_WRITE, &s, 1, IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + BUF - 64, bmr->rkey, 0));
	t_expect_wc(scq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(bbuf, BIG, 0x3333, 0);
	CHECK_DATA(bbuf + BUF - 64, 64, 0x4444, 0);
}

/* Scatter over four receive SGEs; returns the count. */
static int scatter(struct ibv_sge *sg)
{
	sg[0] = t_sge(bbuf + 10, 70000, bmr->lkey);
	sg[1] = t_sge(bbuf + 100000, 1000000, bmr->lkey);
	sg[2] = t_sge(bbuf + 1200000, 7, bmr->lkey);
	sg[3] = t_sge(bbuf + 1300000, 4000000, bmr->lkey);
	return 4;
}

static void check_scattered(uint32_t seed)
{
	struct ibv_sge sg[4];
	size_t pos = 0;

	scatter(sg);
	for (int i = 0; i < 4 && pos < BIG; i++) {
		size_t n = sg[i].length < BIG - pos ? sg[i].length : BIG - pos;

		CHECK_DATA((void *)(uintptr_t)sg[i].addr, n, seed, pos);
		pos += n;
	}
	CHECK_BYTES(bbuf + 1300000 + (BIG - 1070007), 0, 4096);
}

static void sends(void)
{
	struct ibv_sge sg[4], rs[4];
	struct ibv_wc wc;

	/* SEND with a receive posted */
	fill_gather(0x5555);
	memset(bbuf, 0, BUF);
	CHECK_OK(t_post_recv(b, 10, rs, scatter(rs)));
	CHECK_OK(t_post(a, 11, IBV_WR_SEND, sg, gather(sg), IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 11, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 10, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, BIG);
	check_scattered(0x5555);

	/* SEND before the receive: RNR, then it goes through */
	fill_gather(0x6666);
	memset(bbuf, 0, BUF);
	CHECK_OK(t_post(a, 12, IBV_WR_SEND, sg, gather(sg), IBV_SEND_SIGNALED, 0, 0, 0));
	CHECK_CQ_EMPTY(scq);
	CHECK_OK(t_post_recv(b, 13, rs, scatter(rs)));
	t_expect_wc(scq, &wc, 12, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 13, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, BIG);
	check_scattered(0x6666);

	/* WRITE_WITH_IMM: data at the target, the receive WQE only completes */
	fill_gather(0x7777);
	memset(bbuf, 0, BUF);
	CHECK_OK(t_post_recv(b, 14, NULL, 0));
	CHECK_OK(t_post(a, 15, IBV_WR_RDMA_WRITE_WITH_IMM, sg, gather(sg), IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + 1, bmr->rkey, 0xabcd));
	t_expect_wc(scq, &wc, 15, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	t_expect_wc(rcq, &wc, 14, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc.byte_len, BIG);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0xabcd);
	CHECK_DATA(bbuf + 1, BIG, 0x7777, 0);
}

/* Many big WRITEs, then the QP to ERR while they run: every WQE completes,
 * in order, the ones not done with IBV_WC_WR_FLUSH_ERR. */
static void error_midway(void)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_sge sg[3], rs[4];
	struct ibv_wc wc;
	int flushed = 0, ok = 0;

	CHECK_OK(t_post_recv(b, 50, rs, scatter(rs)));
	for (uint64_t i = 0; i < 8; i++)
		CHECK_OK(t_post(a, 100 + i, IBV_WR_RDMA_WRITE, sg, gather(sg), IBV_SEND_SIGNALED,
				(uintptr_t)bbuf, bmr->rkey, 0));
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE));
	CHECK_OK(ibv_modify_qp(b, &at, IBV_QP_STATE));
	for (uint64_t i = 0; i < 8; i++) {
		t_wait_wc(scq, &wc);
		CHECK_EQ(wc.wr_id, 100 + i);
		if (wc.status == IBV_WC_SUCCESS) {
			CHECK(!flushed);        /* successes, then flushes */
			ok++;
		} else {
			CHECK_WC(&wc, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
			flushed++;
		}
	}
	t_expect_wc(rcq, &wc, 50, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	CHECK_CQ_EMPTY(scq);
	CHECK_CQ_EMPTY(rcq);
	printf("error midway: %d done, %d flushed\n", ok, flushed);
}

static void dereg_midway(struct t_dev *da, struct t_dev *db)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 4,
				  .max_recv_sge = 1 };
	struct ibv_sge sg[3];
	struct ibv_qp *a2, *b2;
	struct ibv_wc wc;
	int ok = 0, bad = 0;

	a2 = t_qp(da, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	cap = (struct ibv_qp_cap){ .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
				   .max_recv_sge = 1 };
	b2 = t_qp(db, IBV_QPT_RC, rcq, rcq, NULL, 0, &cap);
	t_rc_connect(da, a2, db, b2, NULL);
	for (uint64_t i = 0; i < 16; i++)
		CHECK_OK(t_post(a2, 200 + i, IBV_WR_RDMA_WRITE, sg, gather(sg), IBV_SEND_SIGNALED,
				(uintptr_t)bbuf, bmr->rkey, 0));
	t_expect_wc(scq, &wc, 200, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	ok++;
	CHECK_OK(ibv_dereg_mr(bmr));    /* while the others run */
	bmr = NULL;
	for (uint64_t i = 1; i < 16; i++) {
		t_wait_wc(scq, &wc);
		CHECK_EQ(wc.wr_id, 200 + i);
		if (wc.status == IBV_WC_SUCCESS) {
			CHECK(!bad);
			ok++;
		} else {
			if (!bad)
				CHECK_WC(&wc, IBV_WC_REM_ACCESS_ERR, T_ANY_OPCODE);
			else
				CHECK_WC(&wc, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
			bad++;
		}
	}
	printf("dereg midway: %d done, %d failed\n", ok, bad);
	CHECK_OK(ibv_destroy_qp(a2));
	CHECK_OK(ibv_destroy_qp(b2));
}

int main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
				  .max_recv_sge = 4 };
	struct t_conn c;

	t_start("t_big");
	t_open(&A, 0);
	t_open(&B, 1);
	abuf = t_map(BUF);
	bbuf = t_map(BUF);
	amr = t_reg(A.pd, abuf, BUF, T_ALL_ACCESS);
	bmr = t_reg(B.pd, bbuf, BUF, T_ALL_ACCESS);
	scq = t_cq(&A, 32, NULL);
	rcq = t_cq(&B, 32, NULL);
	a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	cap = (struct ibv_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
				   .max_recv_sge = 4 };
	b = t_qp(&B, IBV_QPT_RC, rcq, rcq, NULL, 0, &cap);
	t_conn_default(&c);
	c.rnr_retry = 7;
	c.min_rnr_timer = 1;
	t_rc_connect(&A, a, &B, b, &c);

	write_read();
	sends();
	error_midway();
	dereg_midway(&A, &B);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_recv_sge: receives with the advertised maximum of scatter elements.
 *
 * - An RC QP with max_recv_sge = max_sge (16) is created; a receive WQE with
 *   16 SGEs (scattered, uneven sizes) takes a SEND whose bytes cover all 16,
 *   and every byte lands in its place (ibv_post_recv(3): the scatter list is
 *   filled in order).
 * - The same through an SRQ with max_sge = 16 (ibv_create_srq(3)).
 * - Each receive slot of 16 SGEs (16 + 16 * 16 bytes) is rounded up to 512
 *   bytes: the responder must read such a slot (issue 9, finding 10).
 */
#include "helpers.h"

#define NSGE 16

static struct t_dev A, B;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static uint32_t sizes[NSGE], total;

/* Element i: sizes[i] bytes at bbuf + i * 4096 + 7 (gaps stay untouched). */
static void scatter(struct ibv_sge *sg)
{
	memset(bbuf, 0xee, NSGE * 4096);
	for (int i = 0; i < NSGE; i++)
		sg[i] = t_sge(bbuf + (size_t)i * 4096 + 7, sizes[i], bmr->lkey);
}

static void check_scatter(uint32_t seed)
{
	size_t pos = 0;

	for (int i = 0; i < NSGE; i++) {
		uint8_t *p = bbuf + (size_t)i * 4096;

		CHECK_BYTES(p, 0xee, 7);
		CHECK_DATA(p + 7, sizes[i], seed, pos);
		CHECK_BYTES(p + 7 + sizes[i], 0xee, 4096 - 7 - sizes[i]);
		pos += sizes[i];
	}
}

static void send_all(struct ibv_qp *s, struct ibv_cq *scq, uint64_t id, uint32_t seed)
{
	struct ibv_sge sg = t_sge(abuf, total, amr->lkey);
	struct ibv_wc wc;

	t_fill(abuf, total, seed, 0);
	CHECK_OK(t_post(s, id, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, id, IBV_WC_SUCCESS, IBV_WC_SEND);
}

static void expect_recv(struct ibv_cq *rcq, uint64_t id, uint32_t qpn)
{
	struct ibv_wc wc;

	t_expect_wc(rcq, &wc, id, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, total);
	CHECK_EQ(wc.qp_num, qpn);
}

int main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				  .max_recv_sge = NSGE };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = NSGE } };
	struct ibv_srq_attr q;
	struct ibv_sge sg[NSGE];
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *a, *b, *a2, *b2;
	struct ibv_srq *srq;

	t_start("t_recv_sge");
	t_open(&A, 0);
	t_open(&B, 1);
	if (A.attr.max_sge < NSGE || A.attr.max_srq_sge < NSGE)
		t_skip("device has fewer than 16 SGEs");
	for (int i = 0; i < NSGE; i++) {
		sizes[i] = 100 + 37u * (uint32_t)i;
		total += sizes[i];
	}
	abuf = t_map(65536);
	bbuf = t_map(NSGE * 4096);
	amr = t_reg(A.pd, abuf, 65536, T_ALL_ACCESS);
	bmr = t_reg(B.pd, bbuf, NSGE * 4096, T_ALL_ACCESS);
	scq = t_cq(&A, 16, NULL);
	rcq = t_cq(&B, 16, NULL);

	/* RC QP, its own RQ */
	a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	cap = (struct ibv_qp_cap){ .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				   .max_recv_sge = NSGE };
	b = t_qp(&B, IBV_QPT_RC, rcq, rcq, NULL, 0, &cap);
	CHECK(cap.max_recv_sge >= NSGE);
	t_rc_connect(&A, a, &B, b, NULL);
	for (uint32_t round = 0; round < 3; round++) {
		scatter(sg);
		CHECK_OK(t_post_recv(b, 100 + round, sg, NSGE));
		send_all(a, scq, 200 + round, 0x5000 + round);
		expect_recv(rcq, 100 + round, b->qp_num);
		check_scatter(0x5000 + round);
	}

	/* SRQ with max_sge 16 */
	srq = ibv_create_srq(B.pd, &sa);
	CHECK(srq != NULL);
	CHECK_OK(ibv_query_srq(srq, &q));
	CHECK(q.max_sge >= NSGE);
	cap = (struct ibv_qp_cap){ .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				   .max_recv_sge = 1 };
	a2 = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &cap);
	b2 = t_qp(&B, IBV_QPT_RC, rcq, rcq, srq, 0, NULL);
	t_rc_connect(&A, a2, &B, b2, NULL);
	for (uint32_t round = 0; round < 3; round++) {
		scatter(sg);
		CHECK_OK(t_post_srq_recv(srq, 300 + round, sg, NSGE));
		send_all(a2, scq, 400 + round, 0x7000 + round);
		expect_recv(rcq, 300 + round, b2->qp_num);
		check_scatter(0x7000 + round);
	}

	CHECK_OK(ibv_destroy_qp(a2));
	CHECK_OK(ibv_destroy_qp(b2));
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

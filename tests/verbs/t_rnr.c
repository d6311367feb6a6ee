/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_rnr: Receiver Not Ready handling on RC (IBA 9.7.5.2.8, 10.8.3).
 *
 * 1. rnr_retry = 0 and no receive posted at the responder: the SEND completes
 *    with IBV_WC_RNR_RETRY_EXC_ERR and the requester QP goes to the error state.
 * 2. rnr_retry = 7 (retry forever), min_rnr_timer = 0.64 ms: the SEND waits
 *    (no completion while no receive is posted), a receive posted 50 ms later
 *    takes it, and both sides complete successfully with the data intact.
 * Fresh QPs for each case.
 */
#include "helpers.h"

#define MSG 3000

static struct t_dev A, B;

struct pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
};

static void pair_up(struct pair *p, uint8_t rnr_retry)
{
	struct t_conn c;

	t_conn_default(&c);
	c.rnr_retry = rnr_retry;
	c.min_rnr_timer = 12;	/* 0.64 ms */
	p->acq = t_cq(&A, 16, NULL);
	p->bcq = t_cq(&B, 16, NULL);
	p->a = t_qp(&A, IBV_QPT_RC, p->acq, p->acq, NULL, 0, NULL);
	p->b = t_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, NULL, 0, NULL);
	t_rc_connect(&A, p->a, &B, p->b, &c);
}

static void pair_down(struct pair *p)
{
	CHECK_OK(ibv_destroy_qp(p->a));
	CHECK_OK(ibv_destroy_qp(p->b));
	CHECK_OK(ibv_destroy_cq(p->acq));
	CHECK_OK(ibv_destroy_cq(p->bcq));
}

int main(void)
{
	size_t P;
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
	struct ibv_sge ssg, rsg;
	struct ibv_wc wc;
	struct pair p;
	uint64_t t0;

	t_start("t_rnr");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	sbuf = t_map(2 * P);
	rbuf = t_map(2 * P);
	smr = t_reg(A.pd, sbuf, 2 * P, IBV_ACCESS_LOCAL_WRITE);
	rmr = t_reg(B.pd, rbuf, 2 * P, IBV_ACCESS_LOCAL_WRITE);
	ssg = t_sge(sbuf + 100, MSG, smr->lkey);
	rsg = t_sge(rbuf + 200, MSG, rmr->lkey);

	/* 1. No retries: RNR NAK -> IBV_WC_RNR_RETRY_EXC_ERR. */
	pair_up(&p, 0);
	t_fill(sbuf + 100, MSG, 1, 0);
	CHECK_OK(t_post(p.a, 1, IBV_WR_SEND, &ssg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(p.acq, &wc, 1, IBV_WC_RNR_RETRY_EXC_ERR, T_ANY_OPCODE);
	CHECK_EQ(wc.qp_num, p.a->qp_num);
	CHECK_EQ(t_qp_state(p.a), IBV_QPS_ERR);
	CHECK_CQ_EMPTY(p.bcq);
	CHECK_BYTES(rbuf, 0, 2 * P);
	pair_down(&p);

	/* 2. Infinite retries: the SEND waits for a receive posted later. */
	pair_up(&p, 7);
	t_fill(sbuf + 100, MSG, 2, 0);
	t0 = t_now_ms();
	CHECK_OK(t_post(p.a, 2, IBV_WR_SEND, &ssg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	while (t_now_ms() - t0 < 50) {
		CHECK_EQ(ibv_poll_cq(p.acq, 1, &wc), 0);
		t_sleep_ms(1);
	}
	CHECK_EQ(t_qp_state(p.a), IBV_QPS_RTS);
	CHECK_OK(t_post_recv(p.b, 3, &rsg, 1));
	t_expect_wc(p.acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(p.bcq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, MSG);
	CHECK_DATA(rbuf + 200, MSG, 2, 0);
	CHECK_BYTES(rbuf, 0, 200);
	CHECK_BYTES(rbuf + 200 + MSG, 0, 2 * P - 200 - MSG);
	CHECK_CQ_EMPTY(p.acq);
	CHECK_CQ_EMPTY(p.bcq);
	pair_down(&p);

	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(rmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

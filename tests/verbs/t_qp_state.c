/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_qp_state: the RC QP state machine (IBA 10.3.1, ibv_modify_qp(3) tables).
 *
 * - A new QP is in RESET; ibv_query_qp reports state, caps (in attr.cap and
 *   init_attr.cap, >= requested), qp_type, sq_sig_all and CQs.
 * - Rejected with a nonzero return, leaving the state (and qp->state) as it
 *   was: RESET->RTS, RESET->RTR, RESET->INIT without IBV_QP_PORT or with an
 *   attribute that transition does not take (IBV_QP_SQ_PSN), INIT->RTS,
 *   INIT->RTR without any one of its required attributes, RTR->RTS without
 *   any one of its required attributes.
 * - Accepted: RESET->INIT->RTR->RTS with the required attributes; the values
 *   set are read back by ibv_query_qp; traffic then flows.
 * - A send posted in RESET or INIT is refused (nonzero return) or at least
 *   never executes (IBA 10.3.1: no send processing before RTS); receives may
 *   be posted in INIT.
 * - Any state -> RESET: outstanding receives vanish without completions; the
 *   QP is reused (INIT/RTR/RTS again) and works.
 * - Any state -> ERR by ibv_modify_qp: outstanding receives are flushed.
 */
#include "helpers.h"

static struct t_dev A, B;

#define RTR_REQUIRED (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_REQUIRED (IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | \
		      IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT)

static void expect_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	CHECK_EQ(t_qp_state(qp), st);
	CHECK_EQ(qp->state, st);
}

static void init_attr(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = T_PORT;
	a->qp_access_flags = T_ALL_REMOTE;
}

static void rtr_attr(struct ibv_qp_attr *a, const struct t_peer *p, uint32_t psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = p->qpn;
	a->rq_psn = psn;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	t_ah_attr(&a->ah_attr, p, 1);
}

static void rts_attr(struct ibv_qp_attr *a, uint32_t psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = psn;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 1;
}

/* A send posted to a QP that is not in RTS must not run. */
static void send_refused(struct ibv_qp *z, struct ibv_cq *zcq, void *buf,
			 uint32_t lkey, const char *state)
{
	struct ibv_sge sg = t_sge(buf, 8, lkey);
	struct ibv_wc wc;
	int rc = t_post(z, 77, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0);

	if (rc == 0) {
		printf("note: post_send in %s accepted; checking it never runs\n", state);
		if (t_poll(zcq, &wc, T_QUIET_MS))
			CHECK(wc.status != IBV_WC_SUCCESS);
	}
}

int main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 10, .max_recv_wr = 12,
				  .max_send_sge = 2, .max_recv_sge = 3 };
	struct ibv_qp_cap want = cap, bcap = cap;
	struct ibv_cq *acq, *bcq, *zcq;
	struct ibv_qp *a, *b, *z;
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;
	struct t_peer pa, pb;
	struct t_conn c;
	struct ibv_mr *amr, *bmr;
	uint8_t *abuf, *bbuf;
	struct ibv_sge sg;
	struct ibv_wc wc;
	size_t P;
	int mask;

	t_start("t_qp_state");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	abuf = t_map(P);
	bbuf = t_map(P);
	amr = t_reg(A.pd, abuf, P, IBV_ACCESS_LOCAL_WRITE);
	bmr = t_reg(B.pd, bbuf, P, IBV_ACCESS_LOCAL_WRITE);
	acq = t_cq(&A, 16, NULL);
	zcq = t_cq(&A, 16, NULL);
	bcq = t_cq(&B, 16, NULL);
	a = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 1, &cap);
	b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, &bcap);
	z = t_qp(&A, IBV_QPT_RC, zcq, zcq, NULL, 0, NULL);
	t_peer_of(&pa, &A, a);
	t_peer_of(&pb, &B, b);
	t_conn_default(&c);

	/* Fresh QP: RESET, and the caps it was granted. */
	CHECK_EQ(a->state, IBV_QPS_RESET);
	memset(&at, 0, sizeof(at));
	memset(&ia, 0, sizeof(ia));
	CHECK_OK(ibv_query_qp(a, &at, IBV_QP_STATE | IBV_QP_CAP, &ia));
	CHECK_EQ(at.qp_state, IBV_QPS_RESET);
	CHECK(at.cap.max_send_wr >= want.max_send_wr);
	CHECK(at.cap.max_recv_wr >= want.max_recv_wr);
	CHECK(at.cap.max_send_sge >= want.max_send_sge);
	CHECK(at.cap.max_recv_sge >= want.max_recv_sge);
	CHECK_EQ(at.cap.max_send_wr, cap.max_send_wr);
	CHECK_EQ(at.cap.max_recv_wr, cap.max_recv_wr);
	CHECK_EQ(ia.cap.max_send_wr, cap.max_send_wr);
	CHECK_EQ(ia.cap.max_recv_sge, cap.max_recv_sge);
	CHECK_EQ(ia.qp_type, IBV_QPT_RC);
	CHECK_EQ(ia.sq_sig_all, 1);
	CHECK(ia.send_cq == acq && ia.recv_cq == acq && ia.srq == NULL);

	/* Sends before RTS never run; receives are fine in INIT. */
	send_refused(z, zcq, abuf, amr->lkey, "RESET");
	init_attr(&at);
	CHECK_OK(ibv_modify_qp(z, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	expect_state(z, IBV_QPS_INIT);
	send_refused(z, zcq, abuf, amr->lkey, "INIT");
	sg = t_sge(abuf + 64, 64, amr->lkey);
	CHECK_OK(t_post_recv(z, 5, &sg, 1));
	CHECK_OK(ibv_destroy_qp(z));

	/* Illegal from RESET. */
	rts_attr(&at, 1);
	CHECK(ibv_modify_qp(a, &at, IBV_QP_STATE | RTS_REQUIRED) != 0);
	expect_state(a, IBV_QPS_RESET);
	rtr_attr(&at, &pb, 1);
	CHECK(ibv_modify_qp(a, &at, IBV_QP_STATE | RTR_REQUIRED) != 0);
	expect_state(a, IBV_QPS_RESET);
	init_attr(&at);
	CHECK(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_ACCESS_FLAGS) != 0);		/* no port */
	expect_state(a, IBV_QPS_RESET);
	CHECK(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN) != 0);
	expect_state(a, IBV_QPS_RESET);

	/* RESET -> INIT. */
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	expect_state(a, IBV_QPS_INIT);

	/* Illegal from INIT. */
	rts_attr(&at, 1);
	CHECK(ibv_modify_qp(a, &at, IBV_QP_STATE | RTS_REQUIRED) != 0);
	expect_state(a, IBV_QPS_INIT);
	for (mask = 1; mask <= IBV_QP_RATE_LIMIT; mask <<= 1) {
		if (!(RTR_REQUIRED & mask))
			continue;
		rtr_attr(&at, &pb, 0x100);
		if (ibv_modify_qp(a, &at, (IBV_QP_STATE | RTR_REQUIRED) & ~mask) == 0)
			t_fail("INIT->RTR without attribute mask 0x%x accepted", mask);
		expect_state(a, IBV_QPS_INIT);
	}

	/* INIT -> RTR, read back. */
	rtr_attr(&at, &pb, 0x100);
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE | RTR_REQUIRED));
	expect_state(a, IBV_QPS_RTR);
	memset(&at, 0, sizeof(at));
	CHECK_OK(ibv_query_qp(a, &at, IBV_QP_STATE | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_PATH_MTU |
			      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &ia));
	CHECK_EQ(at.qp_state, IBV_QPS_RTR);
	CHECK_EQ(at.dest_qp_num, b->qp_num);
	CHECK_EQ(at.rq_psn, 0x100);
	CHECK_EQ(at.path_mtu, IBV_MTU_1024);
	CHECK_EQ(at.max_dest_rd_atomic, 1);
	CHECK_EQ(at.min_rnr_timer, 12);

	/* Illegal from RTR: each required RTS attribute left out. */
	for (mask = 1; mask <= IBV_QP_RATE_LIMIT; mask <<= 1) {
		if (!(RTS_REQUIRED & mask))
			continue;
		rts_attr(&at, 0x200);
		if (ibv_modify_qp(a, &at, (IBV_QP_STATE | RTS_REQUIRED) & ~mask) == 0)
			t_fail("RTR->RTS without attribute mask 0x%x accepted", mask);
		expect_state(a, IBV_QPS_RTR);
	}

	/* RTR -> RTS, read back. */
	rts_attr(&at, 0x200);
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE | RTS_REQUIRED));
	expect_state(a, IBV_QPS_RTS);
	memset(&at, 0, sizeof(at));
	CHECK_OK(ibv_query_qp(a, &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_CAP, &ia));
	CHECK_EQ(at.qp_state, IBV_QPS_RTS);
	CHECK_EQ(at.sq_psn, 0x200);
	CHECK_EQ(at.timeout, 14);
	CHECK_EQ(at.retry_cnt, 7);
	CHECK_EQ(at.rnr_retry, 7);
	CHECK_EQ(at.max_rd_atomic, 1);
	CHECK_EQ(at.cap.max_send_wr, cap.max_send_wr);

	/* The peer, with matching PSNs; then traffic. */
	c.psn = 0x200;
	t_rc_init(b, &c);
	{
		struct ibv_qp_attr r;

		rtr_attr(&r, &pa, 0x200);
		CHECK_OK(ibv_modify_qp(b, &r, IBV_QP_STATE | RTR_REQUIRED));
		rts_attr(&r, 0x100);
		CHECK_OK(ibv_modify_qp(b, &r, IBV_QP_STATE | RTS_REQUIRED));
	}
	t_fill(abuf, 100, 1, 0);
	sg = t_sge(bbuf, 100, bmr->lkey);
	CHECK_OK(t_post_recv(b, 1, &sg, 1));
	sg = t_sge(abuf, 100, amr->lkey);
	CHECK_OK(t_post(a, 2, IBV_WR_SEND, &sg, 1, 0, 0, 0, 0)); /* sq_sig_all */
	t_expect_wc(acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(bcq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_DATA(bbuf, 100, 1, 0);

	/* To RESET: the receive posted at b disappears without a completion. */
	sg = t_sge(bbuf, 100, bmr->lkey);
	CHECK_OK(t_post_recv(b, 111, &sg, 1));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RESET;
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE));
	CHECK_OK(ibv_modify_qp(b, &at, IBV_QP_STATE));
	expect_state(a, IBV_QPS_RESET);
	expect_state(b, IBV_QPS_RESET);
	CHECK_CQ_EMPTY(bcq);

	/* Reuse after RESET. */
	c.psn = 0x300;
	t_rc_connect(&A, a, &B, b, &c);
	memset(bbuf, 0, P);
	t_fill(abuf, 200, 2, 0);
	sg = t_sge(bbuf + 8, 200, bmr->lkey);
	CHECK_OK(t_post_recv(b, 222, &sg, 1));
	sg = t_sge(abuf, 200, amr->lkey);
	CHECK_OK(t_post(a, 3, IBV_WR_SEND, &sg, 1, 0, 0, 0, 0));
	t_expect_wc(acq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(bcq, &wc, 222, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 200);
	CHECK_DATA(bbuf + 8, 200, 2, 0);
	CHECK_BYTES(bbuf, 0, 8);

	/* To ERR by modify: outstanding receives are flushed. */
	sg = t_sge(abuf + 512, 64, amr->lkey);
	CHECK_OK(t_post_recv(a, 333, &sg, 1));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE));
	expect_state(a, IBV_QPS_ERR);
	t_expect_wc(acq, &wc, 333, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	CHECK_EQ(wc.qp_num, a->qp_num);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_destroy_cq(zcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

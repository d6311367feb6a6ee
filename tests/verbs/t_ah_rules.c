/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_ah_rules: address vectors on a RoCE port (issue 13).
 *
 * The kernel's verbs layer refuses an address vector without a GRH on a
 * RoCE port (rdma_check_ah_attr: EINVAL), in ibv_create_ah and in the AV of
 * ibv_modify_qp; so does a vRNIC, unless its operator allowed
 * InfiniBand-style AVs (`unirdma vrnic set NAME --grhless-av on`).
 *
 *   t_ah_rules            the devices keep the default:
 *                         - ibv_create_ah with is_global = 0: NULL, EINVAL;
 *                         - RTR with is_global = 0: EINVAL, the QP stays in
 *                           INIT; the same QP then goes to RTR and RTS with a
 *                           GRH, and a SEND with data checked goes through;
 *                         - with a GRH: ibv_create_ah works, and a GID index
 *                           the table leaves empty (2) is EINVAL;
 *                         - ibv_create_ah_from_wc of a UD receive gives an
 *                           AH with a GRH (is_global = 1), as on RoCE.
 *   t_ah_rules grhless    the devices allow GRH-less AVs: ibv_create_ah and
 *                         RTR with is_global = 0 work, and a SEND found by
 *                         QPN alone arrives, data checked.
 */
#include "helpers.h"

static struct t_dev A, B;

static void send_one(struct ibv_qp *a, struct ibv_cq *acq, struct ibv_qp *b, struct ibv_cq *bcq,
		     struct ibv_pd *apd, struct ibv_pd *bpd)
{
	size_t P = t_page();
	uint8_t *src = t_map(P), *dst = t_map(P);
	struct ibv_mr *smr = t_reg(apd, src, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = t_reg(bpd, dst, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge ss = t_sge(src, 1000, smr->lkey), ds = t_sge(dst, P, dmr->lkey);
	struct ibv_wc wc;

	t_fill(src, 1000, 13, 0);
	memset(dst, 0, P);
	CHECK_OK(t_post_recv(b, 7, &ds, 1));
	CHECK_OK(t_post(a, 8, IBV_WR_SEND, &ss, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(acq, &wc, 8, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(bcq, &wc, 7, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_DATA(dst, 1000, 13, 0);
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	t_unmap(src, P);
	t_unmap(dst, P);
}

/* RC: the AV at RTR. */
static void rc_case(int grhless)
{
	struct ibv_cq *acq = t_cq(&A, 16, NULL), *bcq = t_cq(&B, 16, NULL);
	struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 0, NULL);
	struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, NULL);
	struct t_peer pa, pb;
	struct t_conn c;
	struct ibv_qp_attr at;

	t_conn_default(&c);
	t_peer_of(&pa, &A, a);
	t_peer_of(&pb, &B, b);
	t_rc_init(a, &c);
	t_rc_init(b, &c);
	/* the RTR attributes t_rc_rtr uses, without a GRH */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = pb.qpn;
	at.rq_psn = c.psn;
	at.max_dest_rd_atomic = c.max_rd_atomic;
	at.min_rnr_timer = c.min_rnr_timer;
	t_ah_attr(&at.ah_attr, &pb, 0);
	errno = 0;
	if (grhless) {
		CHECK_OK(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
		c.is_global = 0;
		t_rc_rtr(b, &B, &pa, &c);
		t_rc_rts(a, &c);
		t_rc_rts(b, &c);
		printf("ok RC connected without a GRH (grhless-av on)\n");
	} else {
		CHECK_EQ(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), EINVAL);
		CHECK_EQ(t_qp_state(a), IBV_QPS_INIT);
		printf("ok RTR without a GRH: EINVAL, the QP stays in INIT\n");
		t_rc_rtr(a, &A, &pb, &c);
		t_rc_rtr(b, &B, &pa, &c);
		t_rc_rts(a, &c);
		t_rc_rts(b, &c);
	}
	send_one(a, acq, b, bcq, A.pd, B.pd);
	printf("ok a SEND on that connection, data checked\n");
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
}

/* UD: the address handle. */
static void ud_case(int grhless)
{
	struct ibv_cq *acq = t_cq(&A, 16, NULL), *bcq = t_cq(&B, 16, NULL);
	struct ibv_qp *a = t_qp(&A, IBV_QPT_UD, acq, acq, NULL, 0, NULL);
	struct ibv_qp *b = t_qp(&B, IBV_QPT_UD, bcq, bcq, NULL, 0, NULL);
	size_t P = t_page();
	uint8_t *src = t_map(P), *dst = t_map(P);
	struct ibv_mr *smr = t_reg(A.pd, src, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = t_reg(B.pd, dst, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge ss = t_sge(src, 500, smr->lkey), ds = t_sge(dst, P, dmr->lkey);
	struct ibv_ah_attr aa;
	struct ibv_send_wr wr, *bad;
	struct ibv_ah *ah;
	struct t_peer pb;
	struct ibv_wc wc;

	t_ud_ready(a, 0x1234);
	t_ud_ready(b, 0x1234);
	t_peer_of(&pb, &B, b);
	t_ah_attr(&aa, &pb, 0);
	errno = 0;
	ah = ibv_create_ah(A.pd, &aa);
	if (!grhless) {
		CHECK(!ah);
		CHECK_EQ(errno, EINVAL);
		printf("ok ibv_create_ah without a GRH: EINVAL\n");
		t_ah_attr(&aa, &pb, 1);
		aa.grh.sgid_index = 2;          /* the entry the table leaves empty */
		errno = 0;
		CHECK(!ibv_create_ah(A.pd, &aa));
		CHECK_EQ(errno, EINVAL);
		aa.grh.sgid_index = T_GID_INDEX;
		ah = ibv_create_ah(A.pd, &aa);
		CHECK(ah);
		printf("ok with a GRH it works; GID index 2 (empty): EINVAL\n");
	} else {
		CHECK(ah);
		printf("ok ibv_create_ah without a GRH (grhless-av on)\n");
	}
	t_fill(src, 500, 21, 0);
	memset(dst, 0, P);
	CHECK_OK(t_post_recv(b, 3, &ds, 1));
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &ss;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = pb.qpn;
	wr.wr.ud.remote_qkey = 0x1234;
	CHECK_OK(ibv_post_send(a, &wr, &bad));
	t_expect_wc(acq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(bcq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 500 + 40);
	CHECK_DATA(dst + 40, 500, 21, 0);
	printf("ok a UD SEND through it, data checked\n");
	{
		/* an answer's AH, from the receive: with a GRH, as on RoCE */
		struct ibv_ah_attr back;
		struct ibv_ah *r;

		memset(&back, 0, sizeof(back));
		CHECK_OK(ibv_init_ah_from_wc(B.ctx, T_PORT, &wc, (struct ibv_grh *)dst, &back));
		CHECK_EQ(back.is_global, 1);
		r = ibv_create_ah_from_wc(B.pd, &wc, (struct ibv_grh *)dst, T_PORT);
		CHECK(r);
		CHECK_OK(ibv_destroy_ah(r));
		printf("ok ibv_init_ah_from_wc / ibv_create_ah_from_wc give a GRH\n");
	}
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	t_unmap(src, P);
	t_unmap(dst, P);
}

int main(int argc, char **argv)
{
	int grhless = argc > 1 && !strcmp(argv[1], "grhless");

	t_start(grhless ? "t_ah_rules grhless" : "t_ah_rules");
	t_open(&A, 0);
	t_open(&B, 1);
	rc_case(grhless);
	ud_case(grhless);
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

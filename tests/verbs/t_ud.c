/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_ud: UD sends through an address handle.
 *
 * - ibv_create_ah with a GRH (dgid = the peer's GID index 0, RoCE needs the
 *   GRH); SEND and SEND_WITH_IMM to (ah, remote_qpn, remote_qkey).
 * - The receiver's buffer starts with the 40-byte GRH, then the payload
 *   (IBA 11.4.1.2 / ibv_post_recv usage: UD receives always reserve 40 bytes);
 *   byte_len = 40 + payload; wc_flags has IBV_WC_GRH; src_qp = the sender's
 *   QPN; qp_num = the receiver's (ibv_poll_cq(3): src_qp is valid for UD).
 *   The GRH carries the addresses: either as an IPv6 GRH (sgid at bytes 8..23,
 *   dgid at 24..39) or, for RoCEv2 over IPv4, an IPv4 header in bytes 20..39
 *   (source address at 32, destination at 36). wc.sl says which, as ConnectX
 *   reports it on a RoCE port (0 GRH, 1 IPv6, 2 IPv4): UCX's UD reads it.
 * - ibv_create_ah_from_wc on the received completion gives an AH that
 *   reaches the sender back.
 * - A wrong Q_Key: the sender completes (UD is unreliable), the packet is
 *   silently dropped (IBA 10.2.5: Q_Key mismatch), the receive stays posted
 *   and takes the next good packet.
 */
#include "helpers.h"

#include <arpa/inet.h>

#define QKEY 0x11111111u
#define GRH 40
#define PAY 1000

static struct t_dev A, B;
static struct ibv_cq *acq, *bcq;
static struct ibv_qp *a, *b;

static void check_grh(const uint8_t *g, const union ibv_gid *src,
		      const union ibv_gid *dst)
{
	if (memcmp(g + 8, src->raw, 16) == 0 && memcmp(g + 24, dst->raw, 16) == 0)
		return;		/* IPv6-style GRH */
	if (memcmp(g + 32, src->raw + 12, 4) == 0 &&
	    memcmp(g + 36, dst->raw + 12, 4) == 0 && (g[20] >> 4) == 4)
		return;		/* RoCEv2 IPv4 header in the last 20 bytes */
	t_fail("GRH carries neither the IPv6 GIDs nor the IPv4 addresses of the peers");
}

int main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16,
				  .max_send_sge = 2, .max_recv_sge = 2 };
	struct ibv_qp_cap bcap = cap;
	struct ibv_ah *ah, *back;
	struct ibv_mr *amr, *bmr;
	uint8_t *abuf, *bbuf;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sg, rs[2];
	struct ibv_wc wc;
	size_t P;

	t_start("t_ud");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	abuf = t_map(2 * P);
	bbuf = t_map(2 * P);
	amr = t_reg(A.pd, abuf, 2 * P, IBV_ACCESS_LOCAL_WRITE);
	bmr = t_reg(B.pd, bbuf, 2 * P, IBV_ACCESS_LOCAL_WRITE);
	acq = t_cq(&A, 16, NULL);
	bcq = t_cq(&B, 16, NULL);
	a = t_qp(&A, IBV_QPT_UD, acq, acq, NULL, 0, &cap);
	b = t_qp(&B, IBV_QPT_UD, bcq, bcq, NULL, 0, &bcap);
	t_ud_ready(a, QKEY);
	t_ud_ready(b, QKEY);
	ah = t_ud_ah(&A, &B.gid);

	/* Receive: GRH into one SGE, payload across a page boundary. */
	rs[0] = t_sge(bbuf + 16, GRH, bmr->lkey);
	rs[1] = t_sge(bbuf + P - 300, PAY + 24, bmr->lkey);
	CHECK_OK(t_post_recv(b, 1, rs, 2));

	/* A packet with the wrong Q_Key is dropped. */
	t_fill(abuf + P - 100, PAY, 7, 0);
	sg = t_sge(abuf + P - 100, PAY, amr->lkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = QKEY + 1;
	CHECK_OK(ibv_post_send(a, &wr, &bad));
	t_expect_wc(acq, &wc, 10, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK_CQ_EMPTY(bcq);
	CHECK_BYTES(bbuf, 0, 2 * P);

	/* The right Q_Key, with immediate data: delivered to the receive
	 * posted before the dropped packet. */
	t_fill(abuf + P - 100, PAY, 8, 0);
	wr.wr_id = 11;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0xabcdef01);
	wr.wr.ud.remote_qkey = QKEY;
	CHECK_OK(ibv_post_send(a, &wr, &bad));
	t_expect_wc(acq, &wc, 11, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK_EQ(wc.qp_num, a->qp_num);
	t_expect_wc(bcq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + PAY);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.sl, 2);     /* what the GRH area holds: RoCE v2 over IPv4, as ConnectX says */
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(wc.imm_data, htonl(0xabcdef01));
	CHECK_EQ(wc.src_qp, a->qp_num);
	CHECK_EQ(wc.qp_num, b->qp_num);
	check_grh(bbuf + 16, &A.gid, &B.gid);
	CHECK_DATA(bbuf + P - 300, PAY, 8, 0);
	CHECK_BYTES(bbuf + P - 300 + PAY, 0, 24);
	CHECK_BYTES(bbuf, 0, 16);
	CHECK_BYTES(bbuf + 16 + GRH, 0, P - 300 - 16 - GRH);

	/* Answer through an AH built from the completion and its GRH. */
	back = ibv_create_ah_from_wc(B.pd, &wc, (struct ibv_grh *)(bbuf + 16), T_PORT);
	CHECK(back);
	memset(abuf, 0, P);
	rs[0] = t_sge(abuf, GRH + 64, amr->lkey);
	CHECK_OK(t_post_recv(a, 2, rs, 1));
	t_fill(bbuf + P + 500, 64, 9, 0);
	sg = t_sge(bbuf + P + 500, 64, bmr->lkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 12;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = back;
	wr.wr.ud.remote_qpn = wc.src_qp;
	wr.wr.ud.remote_qkey = QKEY;
	CHECK_OK(ibv_post_send(b, &wr, &bad));
	t_expect_wc(bcq, &wc, 12, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, GRH + 64);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.sl, 2);     /* what the GRH area holds: RoCE v2 over IPv4, as ConnectX says */
	CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK_EQ(wc.src_qp, b->qp_num);
	check_grh(abuf, &B.gid, &A.gid);
	CHECK_DATA(abuf + GRH, 64, 9, 0);

	CHECK_CQ_EMPTY(acq);
	CHECK_CQ_EMPTY(bcq);
	CHECK_OK(ibv_destroy_ah(back));
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

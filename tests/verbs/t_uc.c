/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_uc: unreliable connected QPs, as rxe and the IB spec (9.8.2) give them.
 *
 * - The state machine takes UC's attributes: INIT->RTR without responder
 *   resources or RNR timer, RTR->RTS with the SQ PSN alone; RC's extra
 *   attributes (MAX_DEST_RD_ATOMIC at RTR, TIMEOUT at RTS) are EINVAL, as
 *   the kernel's ib_modify_qp_is_ok refuses them.  ibv_query_qp says UC.
 * - SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM move their data
 *   (checked), with the completions a program expects on both sides; a
 *   1 MiB SEND and WRITE too (in pieces inside the engine).
 * - RDMA READ and the atomics are not UC operations: ibv_post_send refuses
 *   them (EINVAL, bad_wr set), nothing is sent.
 * - Unreliable, not broken: a SEND with no receive WQE, a WRITE with a bad
 *   R_Key and a SEND longer than the receive WQE all complete successfully
 *   at the sender and are dropped at the responder, whose QP stays in RTS;
 *   nothing of them lands; the receive WQE the long SEND did not fit takes
 *   the next message.
 * - A message lost mid-way: a 32 MiB SEND whose sender QP goes to the error
 *   state right after posting.  Either it made it whole before (then the
 *   receiver has it whole) or it never completes at the receiver; the next
 *   message, after the sender reconnects, lands whole in the receive WQE the
 *   lost one had begun to fill.  Never a partial completion.
 * Both vRNICs may be on different hosts (wire_verbs runs it that way, and
 * `t_uc loss` under 10 % packet loss: see loss_main).
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <unistd.h>

#define SMALL 4096
#define BIG (1u << 20)
#define HUGE_MSG (32u << 20)

static struct t_dev A, B;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qa, *qb;

static void uc_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = T_PORT;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS));
}

static void uc_rtr(struct ibv_qp *qp, const struct t_dev *d, const struct t_peer *p)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->port_attr.active_mtu ? d->port_attr.active_mtu : IBV_MTU_1024;
	a.dest_qp_num = p->qpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 1;
	t_ah_attr(&a.ah_attr, p, 1);
	/* an RC attribute UC does not have */
	CHECK_EQ(ibv_modify_qp(qp, &a, mask | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	CHECK_EQ(qp->state, IBV_QPS_INIT);
	CHECK_OK(ibv_modify_qp(qp, &a, mask));
	CHECK_EQ(qp->state, IBV_QPS_RTR);
}

static void uc_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), EINVAL);
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	CHECK_EQ(qp->state, IBV_QPS_RTS);
}

static void connect_sender(void)
{
	struct t_peer pb;

	t_peer_of(&pb, &B, qb);
	uc_init(qa);
	uc_rtr(qa, &A, &pb);
	uc_rts(qa);
}

/* A WRITE's data: the sender's completion says it left, not that it landed
 * (UC has no ACK), so wait for it, then check it. */
static void wait_data(const uint8_t *p, size_t n, uint32_t seed, size_t pos)
{
	for (int i = 0; i < T_TIMEOUT_MS; i++) {
		size_t k = 0;

		while (k < n && p[k] == t_pat(seed, pos + k))
			k++;
		if (k == n)
			return;
		usleep(1000);
	}
	CHECK_DATA(p, n, seed, pos);
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	CHECK_EQ(ia.qp_type, IBV_QPT_UC);
	return a.qp_state;
}

/* Both contexts, a CQ each (the receiver's rcqe big), a UC QP each. */
static void pair_open(const char *name, struct ibv_qp_cap *cap, int rcqe)
{
	t_start(name);
	t_open(&A, 0);
	t_open(&B, 1);
	scq = t_cq(&A, 256, NULL);
	rcq = t_cq(&B, rcqe, NULL);
	qa = t_qp(&A, IBV_QPT_UC, scq, scq, NULL, 1, cap);
	qb = t_qp(&B, IBV_QPT_UC, rcq, rcq, NULL, 1, cap);
}

/* Each QP the other's peer, through UC's own state machine. */
static void pair_connect(void)
{
	struct t_peer pa;

	connect_sender();
	t_peer_of(&pa, &A, qa);
	uc_init(qb);
	uc_rtr(qb, &B, &pa);
	uc_rts(qb);
}

static void pair_close(struct ibv_mr *mra, struct ibv_mr *mrb, uint8_t *src, uint8_t *dst, size_t len)
{
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(src, len);
	t_unmap(dst, len);
	t_close(&A);
	t_close(&B);
	t_pass();
}

/* `t_uc loss` (wire_verbs under 10 % packet loss): NLOSS SENDs of three
 * packets each, numbered.  Every message that arrives is whole and in order
 * (byte_len, number, pattern); some are lost, mid-way or whole; the sender
 * completes them all successfully.  A message whose last packets were lost
 * leaves its receive WQE to the next one, which must land in it whole. */
#define NLOSS 300
#define LOSS_LEN 3000

static int loss_main(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 512, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_mr *mra, *mrb;
	struct ibv_wc wc;
	struct ibv_sge sg;
	uint8_t *src, *dst;
	size_t slot = 4096;
	uint32_t got = 0, last = 0, sent = 0, done = 0;

	pair_open("t_uc loss", &cap, 1024);
	src = t_map(NLOSS * slot);
	dst = t_map(NLOSS * slot);
	for (uint32_t i = 0; i < NLOSS; i++) {
		t_fill(src + i * slot, LOSS_LEN, i + 1, 0);
		memcpy(src + i * slot, &i, sizeof(i));
	}
	mra = t_reg(A.pd, src, NLOSS * slot, IBV_ACCESS_LOCAL_WRITE);
	mrb = t_reg(B.pd, dst, NLOSS * slot, IBV_ACCESS_LOCAL_WRITE);
	pair_connect();
	for (uint32_t i = 0; i < NLOSS; i++) {
		sg = t_sge(dst + i * slot, (uint32_t)slot, mrb->lkey);
		CHECK_OK(t_post_recv(qb, i, &sg, 1));
	}
	while (done < NLOSS) {
		while (sent < NLOSS && sent - done < 32) {
			sg = t_sge(src + sent * slot, LOSS_LEN, mra->lkey);
			CHECK_OK(t_post(qa, sent, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
			sent++;
		}
		t_expect_wc(scq, &wc, done, IBV_WC_SUCCESS, IBV_WC_SEND);
		done++;
		usleep(200);    /* UC has no flow control: do not outrun the receiver */
	}
	usleep(300 * 1000);
	while (ibv_poll_cq(rcq, 1, &wc) == 1) {
		uint32_t num;
		uint8_t *p = dst + wc.wr_id * slot;

		if (wc.status != IBV_WC_SUCCESS)
			t_fail("receive %llu: status %s", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		CHECK_EQ(wc.wr_id, got);        /* receive WQEs complete in order */
		CHECK_EQ(wc.byte_len, LOSS_LEN);
		memcpy(&num, p, sizeof(num));
		if (num >= NLOSS || (got && num <= last))
			t_fail("receive %u holds message %u after message %u", got, num, last);
		CHECK_DATA(p + 4, LOSS_LEN - 4, num + 1, 4);
		last = num;
		got++;
	}
	printf("%u of %u UC messages of %u bytes arrived whole, in order; %u were lost\n", got, NLOSS,
	       LOSS_LEN, NLOSS - got);
	CHECK(got > 0 && got < NLOSS);
	CHECK_EQ(state_of(qb), IBV_QPS_RTS);
	pair_close(mra, mrb, src, dst, NLOSS * slot);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
				  .max_recv_sge = 4 };
	struct ibv_mr *mra, *mrb;
	struct ibv_wc wc;
	struct ibv_sge sg;
	uint8_t *src, *dst;
	size_t len = HUGE_MSG + BIG;
	int lost;

	if (argc > 1 && !strcmp(argv[1], "loss"))
		return loss_main();
	pair_open("t_uc", &cap, 256);
	CHECK_EQ(qa->qp_type, IBV_QPT_UC);
	src = t_map(len);
	dst = t_map(len);
	t_fill(src, len, 1, 0);
	memset(dst, 0, len);
	mra = t_reg(A.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	mrb = t_reg(B.pd, dst, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	pair_connect();
	CHECK_EQ(state_of(qa), IBV_QPS_RTS);

	/* SEND and SEND_WITH_IMM */
	sg = t_sge(dst, SMALL, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 10, &sg, 1));
	sg = t_sge(src, 1000, mra->lkey);
	CHECK_OK(t_post(qa, 1, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 10, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_EQ(wc.src_qp, qa->qp_num);
	CHECK_DATA(dst, 1000, 1, 0);
	sg = t_sge(dst + SMALL, SMALL, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 11, &sg, 1));
	sg = t_sge(src + 5, 77, mra->lkey);
	CHECK_OK(t_post(qa, 2, IBV_WR_SEND_WITH_IMM, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0xabcd));
	t_expect_wc(scq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 11, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0xabcd);
	CHECK_EQ(wc.byte_len, 77);
	CHECK_DATA(dst + SMALL, 77, 1, 5);

	/* RDMA WRITE and WRITE_WITH_IMM */
	sg = t_sge(src + 3 * SMALL, SMALL, mra->lkey);
	CHECK_OK(t_post(qa, 3, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)dst + 3 * SMALL, mrb->rkey, 0));
	t_expect_wc(scq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	wait_data(dst + 3 * SMALL, SMALL, 1, 3 * SMALL);
	sg = t_sge(dst, 0, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 12, &sg, 0));
	sg = t_sge(src + 4 * SMALL, 333, mra->lkey);
	CHECK_OK(t_post(qa, 4, IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)dst + 4 * SMALL, mrb->rkey, 7));
	t_expect_wc(scq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	t_expect_wc(rcq, &wc, 12, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 7);
	CHECK_EQ(wc.byte_len, 333);
	CHECK_DATA(dst + 4 * SMALL, 333, 1, 4 * SMALL);

	/* 1 MiB SEND and WRITE */
	sg = t_sge(dst + BIG, BIG, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 13, &sg, 1));
	sg = t_sge(src + BIG, BIG, mra->lkey);
	CHECK_OK(t_post(qa, 5, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 5, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 13, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, BIG);
	CHECK_DATA(dst + BIG, BIG, 1, BIG);
	sg = t_sge(src + 2 * BIG, BIG, mra->lkey);
	CHECK_OK(t_post(qa, 6, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)dst + 2 * BIG, mrb->rkey, 0));
	t_expect_wc(scq, &wc, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	wait_data(dst + 2 * BIG, BIG, 1, 2 * BIG);

	/* READ and atomics are no UC operations */
	{
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		sg = t_sge(dst, 8, mrb->lkey);
		wr.wr_id = 99;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = mrb->rkey;
		CHECK_EQ(ibv_post_send(qa, &wr, &bad), EINVAL);
		CHECK(bad == &wr);
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		bad = NULL;
		CHECK_EQ(ibv_post_send(qa, &wr, &bad), EINVAL);
		CHECK(bad == &wr);
		CHECK_CQ_EMPTY(scq);
	}

	/* no receive WQE: dropped, the sender completes, the QP stays */
	memset(dst, 0, 4 * SMALL);
	sg = t_sge(src + 100, 500, mra->lkey);
	CHECK_OK(t_post(qa, 7, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 7, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK_CQ_EMPTY(rcq);
	CHECK_EQ(state_of(qb), IBV_QPS_RTS);

	/* a bad R_Key: dropped, nothing written, the QP stays */
	sg = t_sge(src, SMALL, mra->lkey);
	CHECK_OK(t_post(qa, 8, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)dst, mrb->rkey ^ 0x5a5a00, 0));
	t_expect_wc(scq, &wc, 8, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	/* and a range past the MR's end */
	CHECK_OK(t_post(qa, 9, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)dst + len - 100, mrb->rkey, 0));
	t_expect_wc(scq, &wc, 9, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	/* a SEND behind them: once it is in, they have been judged */
	sg = t_sge(dst + 8 * SMALL, SMALL, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 40, &sg, 1));
	sg = t_sge(src, 16, mra->lkey);
	CHECK_OK(t_post(qa, 41, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 41, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 40, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_BYTES(dst, 0, SMALL);
	CHECK_BYTES(dst + len - 100, 0, 100);
	CHECK_EQ(state_of(qb), IBV_QPS_RTS);

	/* a SEND longer than the receive WQE: dropped; the WQE takes the next */
	sg = t_sge(dst, 256, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 14, &sg, 1));
	sg = t_sge(src, 1000, mra->lkey);
	CHECK_OK(t_post(qa, 20, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 20, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK_CQ_EMPTY(rcq);
	CHECK_EQ(state_of(qb), IBV_QPS_RTS);
	sg = t_sge(src + 2000, 200, mra->lkey);
	CHECK_OK(t_post(qa, 21, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 21, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, 14, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 200);
	CHECK_DATA(dst, 200, 1, 2000);

	/* a message lost mid-way */
	memset(dst, 0, len);
	sg = t_sge(dst, HUGE_MSG, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 15, &sg, 1));
	sg = t_sge(dst + HUGE_MSG, BIG, mrb->lkey);
	CHECK_OK(t_post_recv(qb, 16, &sg, 1));
	sg = t_sge(src, HUGE_MSG, mra->lkey);
	CHECK_OK(t_post(qa, 30, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		CHECK_OK(ibv_modify_qp(qa, &a, IBV_QP_STATE));
	}
	t_wait_wc(scq, &wc);
	CHECK_EQ(wc.wr_id, 30);
	CHECK(wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_WR_FLUSH_ERR);
	lost = wc.status != IBV_WC_SUCCESS;
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		CHECK_OK(ibv_modify_qp(qa, &a, IBV_QP_STATE));
	}
	connect_sender();
	if (!lost) {
		/* it went whole before the error */
		t_expect_wc(rcq, &wc, 15, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, HUGE_MSG);
		CHECK_DATA(dst, HUGE_MSG, 1, 0);
	} else {
		/* nothing of it completes at the receiver, whatever had landed */
		size_t landed = 0;

		CHECK_CQ_EMPTY(rcq);
		while (landed < HUGE_MSG && dst[landed] == t_pat(1, landed))
			landed++;
		printf("%zu bytes of the lost message had landed\n", landed);
	}
	sg = t_sge(src + 12345, 3000, mra->lkey);
	CHECK_OK(t_post(qa, 31, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, 31, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(rcq, &wc, lost ? 15 : 16, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 3000);
	CHECK_DATA(lost ? dst : dst + HUGE_MSG, 3000, 1, 12345);
	printf("the 32 MiB message %s\n", lost ? "was lost mid-way or before it started"
					     : "went whole before the error");
	CHECK_CQ_EMPTY(rcq);
	pair_close(mra, mrb, src, dst, len);
	return 0;
}

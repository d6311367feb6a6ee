/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_resize_cq: ibv_resize_cq(3) with rxe's rules.
 *
 * 1. Bad sizes: 0, above max_cqe -> EINVAL.
 * 2. Six completions outstanding in an 8-entry CQ: resizing to 4 (below them)
 *    fails with EINVAL and changes nothing; resizing to 64 keeps all six, in
 *    order, and the CQ then takes 40 more than the old ring could hold.
 * 3. Shrinking an empty CQ to 16, then 12 completions in it.
 * 4. An armed CQ keeps its arm across a resize: the next completion raises
 *    one event on the channel.
 * 5. Resizing while the engine writes: 3000 signaled RDMA WRITEs posted in
 *    bursts while the CQ is resized between 16 and 512 entries after each
 *    burst; every completion arrives once, in order, and the data is right.
 */
#include "helpers.h"

#include <poll.h>
#include <unistd.h>

static struct t_dev A, B;

static void expect_ids(struct ibv_cq *cq, uint64_t first, int n)
{
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		t_wait_wc(cq, &wc);
		t_check_wc_at(__FILE__, __LINE__, &wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		CHECK_EQ(wc.wr_id, first + (uint64_t)i);
	}
	CHECK_EQ(t_cq_quiet(cq, 20), 0);
}

int main(void)
{
	struct ibv_device_attr da;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *bcq, *ev_cq;
	struct ibv_qp *a, *b;
	struct ibv_qp_cap cap = { .max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_mr *smr, *dmr;
	struct ibv_sge sg;
	struct ibv_wc wc;
	uint8_t *src, *dst;
	size_t P;
	uint64_t id = 0;

	t_start("t_resize_cq");
	t_open(&A, 0);
	t_open(&B, 1);
	CHECK_OK(ibv_query_device(A.ctx, &da));
	P = t_page();
	src = t_map(P);
	dst = t_map(P);
	smr = t_reg(A.pd, src, P, IBV_ACCESS_LOCAL_WRITE);
	dmr = t_reg(B.pd, dst, P, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ch = t_channel(&A);
	cq = t_cq(&A, 8, ch);
	CHECK(cq->cqe >= 8);
	bcq = t_cq(&B, 16, NULL);
	a = t_qp(&A, IBV_QPT_RC, cq, cq, NULL, 0, &cap);
	b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, NULL);
	t_rc_connect(&A, a, &B, b, NULL);

	/* 1 */
	CHECK_EQ(ibv_resize_cq(cq, 0), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, da.max_cqe + 1), EINVAL);

	/* 2: six writes, each a byte of its own; the last byte landing means
	 * the six CQEs are (about to be) in the ring */
	for (int i = 0; i < 6; i++) {
		src[i] = (uint8_t)(i + 1);
		sg = t_sge(src + i, 1, smr->lkey);
		CHECK_OK(t_post(a, id + (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)(dst + i), dmr->rkey, 0));
	}
	for (int tries = 0; tries < 2000 && *(volatile uint8_t *)(dst + 5) != 6; tries++)
		usleep(1000);
	CHECK_EQ(dst[5], 6);
	usleep(20000);
	CHECK_EQ(ibv_resize_cq(cq, 4), EINVAL);
	CHECK_OK(ibv_resize_cq(cq, 64));
	CHECK(cq->cqe >= 64);
	expect_ids(cq, id, 6);
	id += 6;
	sg = t_sge(src, 64, smr->lkey);
	for (int i = 0; i < 40; i++)
		CHECK_OK(t_post(a, id + (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey, 0));
	usleep(20000);          /* all 40 in the ring at once: more than the old 8 */
	expect_ids(cq, id, 40);
	id += 40;

	/* 3 */
	CHECK_OK(ibv_resize_cq(cq, 16));
	CHECK(cq->cqe >= 16 && cq->cqe < 64);
	for (int i = 0; i < 12; i++)
		CHECK_OK(t_post(a, id + (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)dst, dmr->rkey, 0));
	expect_ids(cq, id, 12);
	id += 12;

	/* 4 */
	CHECK_OK(ibv_req_notify_cq(cq, 0));
	CHECK_OK(ibv_resize_cq(cq, 32));
	CHECK_OK(t_post(a, id, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED, (uintptr_t)dst,
			dmr->rkey, 0));
	ev_cq = t_wait_cq_event(ch, 2000);
	CHECK(ev_cq == cq);
	ibv_ack_cq_events(cq, 1);
	expect_ids(cq, id, 1);
	id += 1;

	/* 5 */
	{
		uint64_t next = id, want = id;
		int sizes[] = { 16, 512, 64, 256, 32 }, k = 0;

		while (want < id + 3000) {
			int burst = 0;

			for (; burst < 12 && next < id + 3000 && next - want < 12; burst++, next++) {
				uint8_t *s = src + 64 + (next % 8) * 64;

				t_fill(s, 64, (uint32_t)next, 0);
				sg = t_sge(s, 64, smr->lkey);
				CHECK_OK(t_post(a, next, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
						(uintptr_t)(dst + 64 + (next % 8) * 64), dmr->rkey, 0));
			}
			/* completions may be landing while the ring changes */
			CHECK_OK(ibv_resize_cq(cq, sizes[k++ % 5]));
			while (ibv_poll_cq(cq, 1, &wc) == 1) {
				t_check_wc_at(__FILE__, __LINE__, &wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
				CHECK_EQ(wc.wr_id, want);
				want++;
			}
		}
		CHECK_EQ(t_cq_quiet(cq, 20), 0);
		/* the last eight writes' data, each in its own slot */
		for (uint64_t w = id + 3000 - 8; w < id + 3000; w++)
			CHECK_DATA(dst + 64 + (w % 8) * 64, 64, (uint32_t)w, 0);
	}

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

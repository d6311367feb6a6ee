/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_cq_overflow: a CQ overrun raises IBV_EVENT_CQ_ERR.
 *
 * ibv_poll_cq(3) NOTES: "In case of a CQ overrun, the async event
 * IBV_EVENT_CQ_ERR will be triggered" (IBA 11.4.2.1, CQ overrun is an
 * affiliated asynchronous error). A CQ asked for 4 entries gets cq->cqe
 * entries; more signaled completions than that are generated without polling.
 * The event must be reported on the context's async_fd, which must be
 * pollable with poll() (ibv_get_async_event(3) example), carry
 * element.cq == the CQ, and be acknowledged. Other events (QP_FATAL for the
 * QP using the CQ) may come too and are acknowledged. The objects can still
 * be destroyed afterwards.
 */
#include "helpers.h"

int main(void)
{
	struct t_dev A, B;
	struct ibv_cq *scq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_qp_cap cap = { .max_send_wr = 0, .max_recv_wr = 4,
				  .max_send_sge = 1, .max_recv_sge = 1 };
	struct ibv_async_event ev;
	struct ibv_mr *amr, *bmr;
	uint8_t *abuf, *bbuf;
	size_t P;
	int n, got_cq_err = 0;
	uint64_t end;

	t_start("t_cq_overflow");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	scq = t_cq(&A, 4, NULL);
	bcq = t_cq(&B, 4, NULL);
	n = scq->cqe;		/* the granted size */
	printf("CQ of 4 got %d entries; posting %d completions\n", n, n + 8);
	CHECK(n + 8 <= A.attr.max_qp_wr);
	cap.max_send_wr = (uint32_t)n + 8;
	a = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 1, &cap);
	b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, NULL);
	t_rc_connect(&A, a, &B, b, NULL);
	abuf = t_map(P);
	bbuf = t_map(P);
	amr = t_reg(A.pd, abuf, P, IBV_ACCESS_LOCAL_WRITE);
	bmr = t_reg(B.pd, bbuf, P, T_ALL_ACCESS);

	/* No CQ error before the overrun. Other events (e.g. PORT_ACTIVE) are
	 * acknowledged and ignored. */
	while (t_wait_async(A.ctx, &ev, 0)) {
		CHECK(ev.event_type != IBV_EVENT_CQ_ERR);
		ibv_ack_async_event(&ev);
	}

	for (int i = 0; i < n + 8; i++) {
		struct ibv_sge sg = t_sge(abuf + 8 * i % P, 8, amr->lkey);

		CHECK_OK(t_post(a, (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1,
				IBV_SEND_SIGNALED, (uintptr_t)bbuf + 8 * i % P,
				bmr->rkey, 0));
	}

	end = t_now_ms() + T_TIMEOUT_MS;
	while (!got_cq_err) {
		uint64_t now = t_now_ms();

		if (now >= end || !t_wait_async(A.ctx, &ev, (int)(end - now)))
			t_fail("no IBV_EVENT_CQ_ERR within %d ms", T_TIMEOUT_MS);
		printf("async event: %s\n", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			CHECK(ev.element.cq == scq);
			got_cq_err = 1;
		} else if (ev.event_type == IBV_EVENT_QP_FATAL) {
			CHECK(ev.element.qp == a);
		}
		ibv_ack_async_event(&ev);
	}
	/* Late QP events still get acknowledged before the destroys. */
	while (t_wait_async(A.ctx, &ev, 100))
		ibv_ack_async_event(&ev);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

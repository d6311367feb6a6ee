/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_async_many: every asynchronous event reaches the application, even when
 * far more arrive at once than the context's event ring holds (64).
 *
 * 300 RC QPs of context A are connected to 300 QPs of context B; closing B
 * with its QPs still alive destroys them, and each of A's QPs goes to the
 * error state with IBV_EVENT_QP_FATAL (ibv_get_async_event(3)), all in one
 * daemon request.  A must then read exactly 300 QP_FATAL events, one for each
 * of its QPs, each QP in IBV_QPS_ERR, and nothing more.
 */
#include "helpers.h"

#define NQP 300

static struct t_dev A, B;

int main(void)
{
	static struct ibv_qp *qa[NQP], *qb[NQP];
	static int seen[NQP];
	struct ibv_cq *ca, *cb;
	struct ibv_async_event ev;
	int got = 0;

	t_start("t_async_many");
	t_open(&A, 0);
	t_open(&B, 1);
	ca = t_cq(&A, 64, NULL);
	cb = t_cq(&B, 64, NULL);
	for (int i = 0; i < NQP; i++) {
		struct ibv_qp_cap cap = { .max_send_wr = 1, .max_recv_wr = 1,
					  .max_send_sge = 1, .max_recv_sge = 1 };
		struct ibv_qp_cap bcap = cap;

		qa[i] = t_qp(&A, IBV_QPT_RC, ca, ca, NULL, 0, &cap);
		qb[i] = t_qp(&B, IBV_QPT_RC, cb, cb, NULL, 0, &bcap);
		t_rc_connect(&A, qa[i], &B, qb[i], NULL);
	}
	/* B goes away with its QPs: the daemon destroys them and tells A */
	CHECK_EQ(ibv_close_device(B.ctx), 0);

	while (got < NQP) {
		int i;

		if (!t_wait_async(A.ctx, &ev, T_TIMEOUT_MS))
			t_fail("only %d of %d QP_FATAL events arrived", got, NQP);
		CHECK_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
		for (i = 0; i < NQP && qa[i] != ev.element.qp; i++)
			;
		CHECK(i < NQP);
		CHECK_EQ(seen[i], 0);
		seen[i] = 1;
		got++;
		ibv_ack_async_event(&ev);
	}
	if (t_wait_async(A.ctx, &ev, T_QUIET_MS))
		t_fail("an event beyond the %d expected: type %d", NQP, (int)ev.event_type);
	for (int i = 0; i < NQP; i++) {
		CHECK_EQ(t_qp_state(qa[i]), IBV_QPS_ERR);
		CHECK_OK(ibv_destroy_qp(qa[i]));
	}
	CHECK_OK(ibv_destroy_cq(ca));
	t_close(&A);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_srq: a shared receive queue.
 *
 * - ibv_create_srq / ibv_query_srq: max_wr and max_sge at least as requested,
 *   srq_limit 0 (not armed) (ibv_create_srq(3), ibv_query_srq(3)).
 * - Two RC QPs on one SRQ: SENDs from two peers land in the SRQ's buffers, in
 *   order per QP; wc.qp_num tells which QP received; wr_id names the buffer
 *   the data is in (IBA 10.2.9.5: a WQE is taken from the SRQ for each message).
 * - ibv_modify_srq(IBV_SRQ_LIMIT) arms the limit (read back by query); no
 *   event while the posted WRs stay >= the limit; IBV_EVENT_SRQ_LIMIT_REACHED
 *   with element.srq once they drop below it (ibv_modify_srq(3)); the limit
 *   then reads 0 and no second event comes (IBA 10.2.9.4 and
 *   ibv_query_srq(3): the event disarms it).
 * - ibv_destroy_srq fails while QPs are attached (ibv_create_srq(3) NOTES).
 */
#include "helpers.h"

#define SLOT 256
#define MSG 200
#define NSLOT 16

static struct t_dev A, B;
static struct ibv_qp *a[2], *b[2];
static struct ibv_cq *scq, *rcq;
static struct ibv_srq *srq;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static uint32_t next_seq[2], want_seq[2];

static uint8_t *slot_buf(uint64_t slot)
{
	return bbuf + 8 + slot * SLOT;
}

static void post_slot(uint64_t slot)
{
	struct ibv_sge sg = t_sge(slot_buf(slot), SLOT, bmr->lkey);

	memset(slot_buf(slot), 0, SLOT);
	CHECK_OK(t_post_srq_recv(srq, slot, &sg, 1));
}

/* Message seq from sender i: an 8-byte header then a pattern. */
static void send_msg(int i)
{
	uint32_t seq = next_seq[i]++;
	uint8_t *m = abuf + 3 + (size_t)(i * 64 + seq % 64) * SLOT;
	uint64_t hdr = (uint64_t)i << 32 | seq;
	struct ibv_sge sg = t_sge(m, MSG, amr->lkey);
	struct ibv_wc wc;

	memcpy(m, &hdr, 8);
	t_fill(m + 8, MSG - 8, (uint32_t)hdr, 0);
	CHECK_OK(t_post(a[i], hdr, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(scq, &wc, hdr, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* The next receive completion: which QP, which buffer, in order per QP. */
static void recv_msg(void)
{
	struct ibv_wc wc;
	uint64_t hdr;
	int i;

	t_wait_wc(rcq, &wc);
	CHECK_WC(&wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wr_id < NSLOT);
	CHECK_EQ(wc.byte_len, MSG);
	CHECK(wc.qp_num == b[0]->qp_num || wc.qp_num == b[1]->qp_num);
	i = wc.qp_num == b[1]->qp_num;
	memcpy(&hdr, slot_buf(wc.wr_id), 8);
	if (hdr >> 32 != (uint64_t)i)
		t_fail("QP %u received a message sent to the other QP", wc.qp_num);
	CHECK_EQ((uint32_t)hdr, want_seq[i]);
	want_seq[i]++;
	CHECK_DATA(slot_buf(wc.wr_id) + 8, MSG - 8, (uint32_t)hdr, 0);
	CHECK_BYTES(slot_buf(wc.wr_id) + MSG, 0, SLOT - MSG);
}

/* No SRQ limit event for ms; unrelated events are acknowledged. */
static void no_limit_event(int ms)
{
	struct ibv_async_event ev;
	uint64_t end = t_now_ms() + (uint64_t)ms;

	for (;;) {
		uint64_t now = t_now_ms();

		if (now >= end || !t_wait_async(B.ctx, &ev, (int)(end - now)))
			return;
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			t_fail("unexpected SRQ limit event");
		ibv_ack_async_event(&ev);
	}
}

static void expect_limit_event(void)
{
	struct ibv_async_event ev;
	uint64_t end = t_now_ms() + T_TIMEOUT_MS;

	for (;;) {
		uint64_t now = t_now_ms();

		if (now >= end || !t_wait_async(B.ctx, &ev, (int)(end - now)))
			t_fail("no IBV_EVENT_SRQ_LIMIT_REACHED");
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
			CHECK(ev.element.srq == srq);
			ibv_ack_async_event(&ev);
			return;
		}
		ibv_ack_async_event(&ev);
	}
}

int main(void)
{
	struct ibv_srq_init_attr sia;
	struct ibv_srq_attr sa;
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_send_sge = 1 };
	size_t P;
	int posted;

	t_start("t_srq");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	abuf = t_map(128 * SLOT + P);
	bbuf = t_map(NSLOT * SLOT + P);
	amr = t_reg(A.pd, abuf, 128 * SLOT + P, IBV_ACCESS_LOCAL_WRITE);
	bmr = t_reg(B.pd, bbuf, NSLOT * SLOT + P, IBV_ACCESS_LOCAL_WRITE);
	scq = t_cq(&A, 32, NULL);
	rcq = t_cq(&B, 32, NULL);

	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = NSLOT;
	sia.attr.max_sge = 1;
	srq = ibv_create_srq(B.pd, &sia);
	CHECK(srq);
	CHECK(sia.attr.max_wr >= NSLOT);
	CHECK(sia.attr.max_sge >= 1);
	memset(&sa, 0, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= NSLOT);
	CHECK(sa.max_sge >= 1);
	CHECK_EQ(sa.srq_limit, 0);

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_cap c = cap;

		a[i] = t_qp(&A, IBV_QPT_RC, scq, scq, NULL, 0, &c);
		c = cap;
		b[i] = t_qp(&B, IBV_QPT_RC, rcq, rcq, srq, 0, &c);
		t_rc_connect(&A, a[i], &B, b[i], NULL);
	}

	/* Two QPs, one pool of buffers. */
	for (int s = 0; s < 10; s++)
		post_slot((uint64_t)s);
	posted = 10;
	for (int k = 0; k < 3; k++) {
		send_msg(0);
		send_msg(1);
	}
	for (int k = 0; k < 6; k++) {
		recv_msg();
		posted--;
	}
	CHECK_CQ_EMPTY(rcq);
	/* Refill: the free slots are the 6 just used, known from their
	 * headers; simpler to use the 6 never-posted slots 10..15. */
	for (int s = 10; s < 16; s++)
		post_slot((uint64_t)s);
	posted += 6;
	CHECK_EQ(posted, 10);

	/* Arm the limit at 8 with 10 posted. */
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 8;
	CHECK_OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));
	memset(&sa, 0, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK_EQ(sa.srq_limit, 8);

	/* 10 -> 8: not below the limit, no event. */
	send_msg(0);
	send_msg(1);
	recv_msg();
	recv_msg();
	no_limit_event(T_QUIET_MS);
	/* 8 -> 7: below, one event; the limit is disarmed. */
	send_msg(0);
	recv_msg();
	expect_limit_event();
	memset(&sa, 0, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK_EQ(sa.srq_limit, 0);
	/* 7 -> 6: no second event. */
	send_msg(1);
	recv_msg();
	no_limit_event(T_QUIET_MS);

	CHECK_CQ_EMPTY(scq);
	CHECK_CQ_EMPTY(rcq);
	CHECK(ibv_destroy_srq(srq) != 0);	/* QPs still attached */
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_destroy_qp(a[i]));
		CHECK_OK(ibv_destroy_qp(b[i]));
	}
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_cm_agent: a vRNIC's QP1 shared by CM agents (include/unirdma/cm.h).
 *
 * Our librdmacm makes one UD QP per process a "CM agent" of its vRNIC; the
 * daemon steers every datagram for QPN 1 to one agent by the CM message it
 * carries.  This test plays both ends with raw MADs (no librdmacm):
 *   - B has agents g1 (slot s1) and g2 (slot s2); g1 listens on service X,
 *     g2 on Y; g2 listening on X too is EADDRINUSE;
 *   - from A (an agent too): REQ for X reaches g1, REQ for Y and SIDR_REQ
 *     for Y reach g2, a REQ nobody listens for reaches the lowest agent
 *     (g1), REP/RTU/DREQ go by the slot in RemoteCommID, SIDR_REP by the
 *     slot in RequestID; the bytes arrive whole after the 40-byte GRH area;
 *   - the receive completions say src_qp 1 (A's agent sends as QP1), and a
 *     plain UD QP's MAD says its own QPN;
 *   - nothing reaches anyone for: an unknown slot, a non-CM MAD class, a
 *     datagram shorter than the steering fields, a wrong Q_Key;
 *   - errors: an RC QP or a second call cannot be an agent (EINVAL), a
 *     non-agent cannot listen (EINVAL), stopping an unknown listen ENOENT;
 *   - a destroyed agent stops listening: X is free again and unlistened REQs
 *     go to the next lowest agent;
 *   - a vRNIC with no agent at all answers as a kernel CM would: a REQ gets
 *     a REJ "invalid service ID" (8) with the REQ's TID and comm ID, a
 *     SIDR_REQ a SIDR_REP "unsupported" (1), a DREQ to a departed agent a
 *     DREP; anything else no answer.
 */
#include "helpers.h"

#include <errno.h>

#include "unirdma/cm.h"

#define GSI_QKEY 0x80010000u
#define MAD 256u
#define SLOT 512u
#define SID_X 0x0000000001060000ull + 7471
#define SID_Y 0x0000000001110000ull + 7472

static struct t_dev A, B;
static uint8_t *abuf;
static struct ibv_mr *amr;

struct rx {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static void rx_init(struct rx *r, struct t_dev *d)
{
	r->cq = t_cq(d, 64, NULL);
	r->qp = t_qp(d, IBV_QPT_UD, r->cq, r->cq, NULL, 1, NULL);
	t_ud_ready(r->qp, GSI_QKEY);
	r->buf = t_map(32 * SLOT);
	r->mr = t_reg(d->pd, r->buf, 32 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 32; i++) {
		struct ibv_sge sg = t_sge(r->buf + (size_t)i * SLOT, SLOT, r->mr->lkey);

		CHECK_OK(t_post_recv(r->qp, (uint64_t)i, &sg, 1));
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* A CM MAD: header, attribute, the two first data words, the ServiceID, and
 * a recognisable tail. */
static void mad(uint8_t *m, uint8_t cls, uint16_t attr, uint32_t w0, uint32_t w1, uint64_t sid, uint8_t tag)
{
	memset(m, 0, MAD);
	m[0] = 1;
	m[1] = cls;
	m[2] = 2;
	m[3] = 3;
	m[16] = (uint8_t)(attr >> 8);
	m[17] = (uint8_t)attr;
	put32(m + 24, w0);
	put32(m + 28, w1);
	put32(m + 32, (uint32_t)(sid >> 32));
	put32(m + 36, (uint32_t)sid);
	for (uint32_t i = 40; i < MAD; i++)
		m[i] = (uint8_t)(tag + i);
}

static void send_mad(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah, uint32_t len, uint32_t qkey)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sg = t_sge(abuf, len, amr->lkey);
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 99;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = qkey;
	CHECK_OK(ibv_post_send(qp, &wr, &bad));
	t_expect_wc(cq, &wc, 99, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* Send from a and take the answer that comes back to a: in one host it may
 * complete before the SEND itself. */
static const uint8_t *send_for_answer(struct rx *a, struct ibv_ah *ah, struct ibv_wc *ans)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sg = t_sge(abuf, MAD, amr->lkey);
	bool sent = false, got = false;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 99;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = GSI_QKEY;
	CHECK_OK(ibv_post_send(a->qp, &wr, &bad));
	while (!sent || !got) {
		CHECK(t_poll(a->cq, &wc, 2000) == 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND) {
			sent = true;
		} else {
			CHECK_EQ(wc.opcode, IBV_WC_RECV);
			*ans = wc;
			got = true;
		}
	}
	return a->buf + ans->wr_id * SLOT + 40;
}

/* The MAD arrives at `to` (and nowhere else among all[]), whole, from src_qp. */
static void expect_at(struct rx *to, struct rx *all, int n, uint32_t src_qp)
{
	struct ibv_wc wc;

	CHECK(t_poll(to->cq, &wc, 2000) == 1);
	CHECK_WC(&wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 40 + MAD);
	CHECK_EQ(wc.src_qp, src_qp);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK(!memcmp(to->buf + wc.wr_id * SLOT + 40, abuf, MAD));
	{
		struct ibv_sge sg = t_sge(to->buf + wc.wr_id * SLOT, SLOT, to->mr->lkey);

		CHECK_OK(t_post_recv(to->qp, wc.wr_id, &sg, 1));
	}
	for (int i = 0; i < n; i++)
		if (&all[i] != to)
			CHECK_EQ(t_cq_quiet(all[i].cq, 0), 0);
}

static void expect_nowhere(struct rx *all, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(t_cq_quiet(all[i].cq, i ? 0 : 300), 0);
}

int main(void)
{
	struct rx a, plain, g[3];
	struct ibv_ah *ah;
	struct ibv_cq *rccq;
	struct ibv_qp *rc;
	int s[3];

	t_start("t_cm_agent");
	t_open(&A, 0);
	t_open(&B, 1);
	abuf = t_map(t_page());
	amr = t_reg(A.pd, abuf, t_page(), IBV_ACCESS_LOCAL_WRITE);
	rx_init(&a, &A);
	rx_init(&plain, &A);
	for (int i = 0; i < 3; i++)
		rx_init(&g[i], &B);
	ah = t_ud_ah(&A, &B.gid);

	/* who may be an agent, and listen */
	rccq = t_cq(&B, 4, NULL);
	rc = t_qp(&B, IBV_QPT_RC, rccq, rccq, NULL, 0, NULL);
	CHECK_EQ(urd_cm_agent(rc), -EINVAL);
	CHECK_EQ(urd_cm_listen(g[0].qp, SID_X, 1), -EINVAL);     /* not an agent yet */
	CHECK(urd_cm_agent(a.qp) >= 1);
	for (int i = 0; i < 3; i++) {
		s[i] = urd_cm_agent(g[i].qp);
		CHECK(s[i] >= 1 && s[i] <= 255);
	}
	CHECK(s[0] < s[1] && s[1] < s[2]);
	CHECK_EQ(urd_cm_agent(g[0].qp), -EINVAL);               /* already one */
	CHECK_OK(urd_cm_listen(g[0].qp, SID_X, 1));
	CHECK_EQ(urd_cm_listen(g[1].qp, SID_X, 1), -EADDRINUSE);
	CHECK_OK(urd_cm_listen(g[1].qp, SID_Y, 1));
	CHECK_EQ(urd_cm_listen(g[2].qp, SID_Y, 0), -ENOENT);     /* g2 does not listen on Y */

	/* by ServiceID */
	mad(abuf, 7, 0x10, 0x01000005, 0, SID_X, 1);             /* REQ X */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[0], g, 3, 1);
	mad(abuf, 7, 0x10, 0x01000006, 0, SID_Y, 2);             /* REQ Y */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[1], g, 3, 1);
	mad(abuf, 7, 0x17, 0x01000007, 0xffff0000, SID_Y, 3);    /* SIDR_REQ Y */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[1], g, 3, 1);
	mad(abuf, 7, 0x10, 0x01000008, 0, SID_X + 1, 4);         /* REQ nobody listens for */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[0], g, 3, 1);

	/* by slot: RemoteCommID for REP, RTU, DREQ; RequestID for SIDR_REP */
	mad(abuf, 7, 0x13, 0x01000009, (uint32_t)s[2] << 24 | 5, 0, 5);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[2], g, 3, 1);
	mad(abuf, 7, 0x14, 0x01000009, (uint32_t)s[1] << 24 | 5, 0, 6);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[1], g, 3, 1);
	mad(abuf, 7, 0x15, 0x01000009, (uint32_t)s[0] << 24 | 5, 0, 7);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[0], g, 3, 1);
	mad(abuf, 7, 0x18, (uint32_t)s[2] << 24 | 9, 0, SID_X, 8);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[2], g, 3, 1);

	/* a plain UD QP may send to QP1 too (as on a RoCE port): its own QPN */
	mad(abuf, 7, 0x14, 0x01000009, (uint32_t)s[0] << 24 | 5, 0, 9);
	send_mad(plain.qp, plain.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[0], g, 3, plain.qp->qp_num);

	/* dropped: an unknown slot, another MAD class, too short, a wrong Q_Key */
	mad(abuf, 7, 0x13, 0x01000009, 200u << 24 | 5, 0, 10);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_nowhere(g, 3);
	mad(abuf, 4, 0x10, 0x01000005, 0, SID_X, 11);            /* not the CM class */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_nowhere(g, 3);
	mad(abuf, 7, 0x10, 0x01000005, 0, SID_X, 12);
	send_mad(a.qp, a.cq, ah, 36, GSI_QKEY);                  /* ServiceID cut off */
	expect_nowhere(g, 3);
	send_mad(plain.qp, plain.cq, ah, MAD, 0x1234);           /* wrong Q_Key: the QKEY check drops it */
	expect_nowhere(g, 3);

	/* a destroyed agent stops listening */
	CHECK_OK(ibv_destroy_qp(g[0].qp));
	CHECK_OK(urd_cm_listen(g[2].qp, SID_X, 1));
	mad(abuf, 7, 0x10, 0x0100000a, 0, SID_X, 13);
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[2], g + 1, 2, 1);
	mad(abuf, 7, 0x10, 0x0100000b, 0, SID_X + 2, 14);         /* unlistened: now the lowest is g1 */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	expect_at(&g[1], g + 1, 2, 1);
	CHECK_OK(urd_cm_listen(g[2].qp, SID_X, 0));

	/* nobody on B's QP1: the daemon answers for it */
	CHECK_OK(ibv_destroy_qp(g[1].qp));
	CHECK_OK(ibv_destroy_qp(g[2].qp));
	mad(abuf, 7, 0x10, 0x0100000c, 0, SID_Y, 15);
	memset(abuf + 8, 0xa5, 8);                                /* TID */
	{
		struct ibv_wc wc;
		const uint8_t *r = send_for_answer(&a, ah, &wc);

		CHECK_EQ(wc.src_qp, 1);
		CHECK_EQ(wc.byte_len, 40 + MAD);
		CHECK(r[1] == 7 && r[3] == 3 && r[16] == 0 && r[17] == 0x12);    /* CM, Send, REJ */
		CHECK(!memcmp(r + 8, abuf + 8, 8));                             /* the REQ's TID */
		CHECK(r[28] == 1 && r[29] == 0 && r[30] == 0 && r[31] == 0x0c);  /* RemoteCommID */
		CHECK(r[34] == 0 && r[35] == 8);                                 /* reason 8 */
		CHECK(r[32] >> 6 == 0);                                          /* about the REQ */
	}
	mad(abuf, 7, 0x17, 0x0100000d, 0xffff0000, SID_Y, 16);   /* SIDR_REQ */
	{
		struct ibv_wc wc;
		const uint8_t *r = send_for_answer(&a, ah, &wc);

		CHECK(r[17] == 0x18 && r[24] == 1 && r[27] == 0x0d && r[28] == 1);  /* SIDR_REP, id, unsupported */
		CHECK(!memcmp(r + 24 + 12, abuf + 24 + 8, 8));                        /* ServiceID */
	}
	mad(abuf, 7, 0x15, 0x0100000f, 2u << 24 | 7, 0, 18);      /* DREQ to a departed agent */
	{
		struct ibv_wc wc;
		const uint8_t *r = send_for_answer(&a, ah, &wc);

		CHECK(r[17] == 0x16);                                            /* DREP */
		CHECK(r[24] == 2 && r[27] == 7 && r[28] == 1 && r[31] == 0x0f);  /* comm IDs swapped */
	}
	mad(abuf, 7, 0x13, 0x0100000e, 1u << 24 | 5, 0, 17);      /* a REP: no answer */
	send_mad(a.qp, a.cq, ah, MAD, GSI_QKEY);
	CHECK_EQ(t_cq_quiet(a.cq, 300), 0);
	t_pass();
	return 0;
}

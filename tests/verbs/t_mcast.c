/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_mcast: UD multicast (ibv_attach_mcast(3)), as the kernel and rxe give it.
 *
 * - ibv_query_device reports multicast limits.
 * - ibv_attach_mcast: EINVAL for an RC QP and for a GID that is not a
 *   multicast one; attaching twice is 0; ibv_detach_mcast of a group the QP
 *   is not in is EINVAL.
 * - A UD SEND to (group GID, QPN 0xffffff) reaches every QP attached to the
 *   group, on both vRNICs (both hosts under wire_verbs), and no other:
 *   payload after the 40-byte GRH area checked, IBV_WC_GRH, src_qp the
 *   sender's, and the GRH's IPv4 header addressed to the group.  A QP in
 *   another group gets nothing; after a detach the QP gets nothing; a wrong
 *   Q_Key reaches nobody.  A QP destroyed while attached leaves the group.
 *   A QP in 30 groups gets what is sent to the last (a host's wire socket
 *   needs more than the kernel's default 20 memberships).
 * - $UNIRDMA_TEST_MCAST_OTHER names a vRNIC of another tenant: its QP joins
 *   the same group and must never receive (wire_verbs sets it).
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <unistd.h>

#define QKEY 0x1234u
#define LEN 500u
#define SLOT 1024u
#define NQ 4
#define MANY 30

static struct t_dev A, B, O;
static struct ibv_qp *q[NQ];            /* q[0] sends (A); q[1] A, q[2] q[3] B */
static struct ibv_cq *cq[NQ];
static uint8_t *buf[NQ];
static struct ibv_mr *mr[NQ];
static struct ibv_qp *oq;               /* the other tenant's, if any */
static struct ibv_cq *ocq;
static uint8_t *obuf;
static struct ibv_mr *omr;

static void gid_v4(union ibv_gid *g, const char *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	CHECK(inet_pton(AF_INET, ip, g->raw + 12) == 1);
}

static void post_recvs(struct ibv_qp *qp, struct ibv_mr *m, uint8_t *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sg = t_sge(b + (size_t)i * SLOT, SLOT, m->lkey);

		CHECK_OK(t_post_recv(qp, (uint64_t)i, &sg, 1));
	}
}

static void send_to(struct ibv_ah *ah, uint32_t qkey, uint32_t seed)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sg;
	struct ibv_wc wc;

	t_fill(buf[0], LEN, seed, 0);
	sg = t_sge(buf[0], LEN, mr[0]->lkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seed;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = qkey;
	CHECK_OK(ibv_post_send(q[0], &wr, &bad));
	t_expect_wc(cq[0], &wc, seed, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* QP i received the message of seed into its next receive slot. */
static void expect_got(int i, int *slot, uint32_t seed, const union ibv_gid *group)
{
	struct ibv_wc wc;
	uint8_t *p;
	uint32_t dst;

	t_wait_wc(cq[i], &wc);
	if (wc.status != IBV_WC_SUCCESS)
		t_fail("QP %d: status %s", i, ibv_wc_status_str(wc.status));
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.wr_id, (uint64_t)*slot);
	CHECK_EQ(wc.byte_len, LEN + 40);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.src_qp, q[0]->qp_num);
	p = buf[i] + (size_t)*slot * SLOT;
	CHECK_DATA(p + 40, LEN, seed, 0);
	memcpy(&dst, p + 20 + 16, 4);           /* the IPv4 header's destination */
	CHECK(!memcmp(&dst, group->raw + 12, 4));
	CHECK(!memcmp(p + 20 + 12, A.gid.raw + 12, 4));    /* its source: the sender's vRNIC */
	(*slot)++;
}

static void open_other(const char *name)
{
	struct ibv_device **l;
	int n;

	l = ibv_get_device_list(&n);
	CHECK(l);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name)) {
			O.ctx = ibv_open_device(l[i]);
			break;
		}
	ibv_free_device_list(l);
	if (!O.ctx)
		t_fail("no device %s", name);
	O.pd = ibv_alloc_pd(O.ctx);
	CHECK(O.pd);
	ocq = t_cq(&O, 64, NULL);
	oq = t_qp(&O, IBV_QPT_UD, ocq, ocq, NULL, 1, NULL);
	t_ud_ready(oq, QKEY);
	obuf = t_map(64 * SLOT);
	omr = t_reg(O.pd, obuf, 64 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	post_recvs(oq, omr, obuf, 16);
}

int main(void)
{
	union ibv_gid g1, g2, plain;
	struct ibv_ah *ah1, *ah2;
	struct ibv_cq *rccq;
	struct ibv_qp *rc;
	int slot[NQ] = { 0 };
	const char *other = getenv("UNIRDMA_TEST_MCAST_OTHER");

	t_start("t_mcast");
	t_open(&A, 0);
	t_open(&B, 1);
	CHECK(A.attr.max_mcast_grp > 0 && A.attr.max_mcast_qp_attach > 0 &&
	      A.attr.max_total_mcast_qp_attach > 0);
	for (int i = 0; i < NQ; i++) {
		struct t_dev *d = i < 2 ? &A : &B;

		cq[i] = t_cq(d, 64, NULL);
		q[i] = t_qp(d, IBV_QPT_UD, cq[i], cq[i], NULL, 1, NULL);
		t_ud_ready(q[i], QKEY);
		buf[i] = t_map(64 * SLOT);
		mr[i] = t_reg(d->pd, buf[i], 64 * SLOT, IBV_ACCESS_LOCAL_WRITE);
		if (i)
			post_recvs(q[i], mr[i], buf[i], 32);
	}
	if (other && *other)
		open_other(other);
	gid_v4(&g1, "239.1.2.3");
	gid_v4(&g2, "239.1.2.4");
	gid_v4(&plain, "10.1.2.3");

	/* the kernel's checks */
	rccq = t_cq(&A, 16, NULL);
	rc = t_qp(&A, IBV_QPT_RC, rccq, rccq, NULL, 1, NULL);
	CHECK_EQ(ibv_attach_mcast(rc, &g1, 0), EINVAL);
	CHECK_EQ(ibv_attach_mcast(q[1], &plain, 0), EINVAL);
	CHECK_EQ(ibv_detach_mcast(q[1], &g1, 0), EINVAL);
	CHECK_OK(ibv_destroy_qp(rc));
	CHECK_OK(ibv_destroy_cq(rccq));

	CHECK_OK(ibv_attach_mcast(q[1], &g1, 0));
	CHECK_OK(ibv_attach_mcast(q[1], &g1, 0));       /* again: 0 */
	CHECK_OK(ibv_attach_mcast(q[2], &g1, 0));
	CHECK_OK(ibv_attach_mcast(q[3], &g1, 0));
	CHECK_OK(ibv_attach_mcast(q[3], &g2, 0));
	if (oq)
		CHECK_OK(ibv_attach_mcast(oq, &g1, 0));
	usleep(100 * 1000);     /* the IP group joins on the underlay */
	ah1 = t_ud_ah(&A, &g1);
	ah2 = t_ud_ah(&A, &g2);

	/* group 1: three members on two vRNICs */
	send_to(ah1, QKEY, 1);
	for (int i = 1; i < NQ; i++)
		expect_got(i, &slot[i], 1, &g1);
	/* group 2: q[3] alone */
	send_to(ah2, QKEY, 2);
	expect_got(3, &slot[3], 2, &g2);
	CHECK_CQ_EMPTY(cq[1]);
	CHECK_CQ_EMPTY(cq[2]);
	/* q[2] leaves group 1 */
	CHECK_OK(ibv_detach_mcast(q[2], &g1, 0));
	send_to(ah1, QKEY, 3);
	expect_got(1, &slot[1], 3, &g1);
	expect_got(3, &slot[3], 3, &g1);
	CHECK_CQ_EMPTY(cq[2]);
	/* many groups (more than the kernel's default 20 memberships of a
	 * socket, which the wire's multicast rides on): the last one works */
	{
		union ibv_gid many[MANY];
		struct ibv_ah *ahm;
		char ip[32];

		for (int k = 0; k < MANY; k++) {
			snprintf(ip, sizeof(ip), "239.2.0.%d", k + 1);
			gid_v4(&many[k], ip);
			CHECK_OK(ibv_attach_mcast(q[2], &many[k], 0));
		}
		usleep(100 * 1000);
		ahm = t_ud_ah(&A, &many[MANY - 1]);
		send_to(ahm, QKEY, 7);
		expect_got(2, &slot[2], 7, &many[MANY - 1]);
		CHECK_CQ_EMPTY(cq[1]);
		CHECK_OK(ibv_destroy_ah(ahm));
		for (int k = 0; k < MANY; k++)
			CHECK_OK(ibv_detach_mcast(q[2], &many[k], 0));
	}
	/* a wrong Q_Key reaches nobody */
	send_to(ah1, QKEY + 1, 4);
	for (int i = 1; i < NQ; i++)
		CHECK_CQ_EMPTY(cq[i]);
	/* the other tenant's member never got anything */
	if (oq) {
		CHECK_CQ_EMPTY(ocq);
		printf("the other tenant's QP in the group received nothing\n");
	}
	/* q[3] goes away while in both groups; group 2 is then empty */
	CHECK_OK(ibv_destroy_qp(q[3]));
	q[3] = NULL;
	send_to(ah2, QKEY, 5);
	send_to(ah1, QKEY, 6);
	expect_got(1, &slot[1], 6, &g1);
	CHECK_CQ_EMPTY(cq[2]);

	CHECK_OK(ibv_detach_mcast(q[1], &g1, 0));
	CHECK_OK(ibv_destroy_ah(ah1));
	CHECK_OK(ibv_destroy_ah(ah2));
	for (int i = 0; i < NQ; i++) {
		if (q[i])
			CHECK_OK(ibv_destroy_qp(q[i]));
		CHECK_OK(ibv_dereg_mr(mr[i]));
		CHECK_OK(ibv_destroy_cq(cq[i]));
		t_unmap(buf[i], 64 * SLOT);
	}
	if (oq) {
		CHECK_OK(ibv_destroy_qp(oq));
		CHECK_OK(ibv_dereg_mr(omr));
		CHECK_OK(ibv_destroy_cq(ocq));
		t_close(&O);
	}
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

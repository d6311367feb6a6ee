/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_unsupported: what the engine may not support fails cleanly.
 *
 * Each call either works or returns a clear error: NULL with errno set
 * (pointer verbs) or a nonzero value (int verbs), per the verbs man pages.
 * Where a limit is exceeded an error is required, with errno one of EINVAL,
 * ENOMEM, EOPNOTSUPP. A crash or a hang (watchdog) fails the test.
 * - ibv_create_qp: IBV_QPT_XRC_SEND (error or works), max_send_wr above
 *   max_qp_wr and 0xffffffff, max_send_sge above max_sge, max_inline_data of
 *   1 GiB (errors); ibv_create_cq above max_cqe; ibv_create_srq above
 *   max_srq_wr (errors).
 * - ibv_reg_mr with REMOTE_WRITE but not LOCAL_WRITE: EINVAL (ibv_reg_mr(3)).
 * - ibv_query_port(2), ibv_query_gid(index 4096), RESET->INIT with port 2:
 *   errors (phys_port_cnt is 1).
 * - ibv_alloc_mw (types 1 and 2), ibv_open_xrcd, ibv_alloc_dm, ibv_create_wq,
 *   ibv_resize_cq: error or works; ibv_create_flow on an RC QP: NULL.
 * - ibv_post_send with an invalid opcode: nonzero and *bad_wr = that WR; in a
 *   chain after a valid WR, the valid one still runs (ibv_post_send(3): it
 *   "stops processing WRs from this list at the first failure");
 *   IBV_WR_TSO on RC (not in the opcode table) and IBV_WR_LOCAL_INV of an
 *   unknown key: refused or completed, never hung.
 * - num_sge above the QP's max_send_sge / max_recv_sge: nonzero, bad_wr set.
 */
#include "helpers.h"

static struct t_dev A, B;

static int accepted(int e)
{
	return e == EINVAL || e == ENOMEM || e == EOPNOTSUPP;
}

#define MUST_FAIL_PTR(call, what)					\
	do {								\
		void *t_p_;						\
		int t_e_;						\
		errno = 0;						\
		t_p_ = (void *)(call);					\
		t_e_ = errno;						\
		if (t_p_)						\
			t_fail("%s succeeded", what);			\
		if (!accepted(t_e_))					\
			t_fail("%s: errno %d (%s), expected EINVAL, ENOMEM or EOPNOTSUPP", \
			       what, t_e_, strerror(t_e_));		\
		printf("ok %s -> %s\n", what, strerror(t_e_));		\
	} while (0)

/* NULL with errno set, or an object. */
static int may_fail(const void *p, const char *what)
{
	int e = errno;

	if (p) {
		printf("ok %s -> supported\n", what);
		return 1;
	}
	if (e == 0)
		t_fail("%s returned NULL without setting errno", what);
	printf("ok %s -> %s\n", what, strerror(e));
	return 0;
}

static struct ibv_qp *try_qp(enum ibv_qp_type type, struct ibv_cq *cq,
			     uint32_t swr, uint32_t ssge, uint32_t inl)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = type;
	ia.cap.max_send_wr = swr;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ssge;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = inl;
	return ibv_create_qp(A.pd, &ia);
}

static void creation_limits(struct ibv_cq *cq)
{
	struct ibv_srq_init_attr sia;
	struct ibv_qp *qp;
	int maxwr = A.attr.max_qp_wr, maxsge = A.attr.max_sge;

	errno = 0;
	qp = try_qp(IBV_QPT_XRC_SEND, cq, 4, 1, 0);
	if (may_fail(qp, "ibv_create_qp(IBV_QPT_XRC_SEND)"))
		CHECK_OK(ibv_destroy_qp(qp));
	MUST_FAIL_PTR(try_qp(IBV_QPT_RC, cq, (uint32_t)maxwr + 1, 1, 0),
		      "ibv_create_qp(max_send_wr = max_qp_wr + 1)");
	MUST_FAIL_PTR(try_qp(IBV_QPT_RC, cq, 0xffffffffu, 1, 0),
		      "ibv_create_qp(max_send_wr = 0xffffffff)");
	MUST_FAIL_PTR(try_qp(IBV_QPT_RC, cq, 4, (uint32_t)maxsge + 1, 0),
		      "ibv_create_qp(max_send_sge = max_sge + 1)");
	MUST_FAIL_PTR(try_qp(IBV_QPT_RC, cq, 4, 1, 1u << 30),
		      "ibv_create_qp(max_inline_data = 1 GiB)");
	if (A.attr.max_cqe < 0x7fffffff)
		MUST_FAIL_PTR(ibv_create_cq(A.ctx, A.attr.max_cqe + 1, NULL, NULL, 0),
			      "ibv_create_cq(max_cqe + 1)");
	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = (uint32_t)A.attr.max_srq_wr + 1;
	sia.attr.max_sge = 1;
	MUST_FAIL_PTR(ibv_create_srq(A.pd, &sia), "ibv_create_srq(max_srq_wr + 1)");
	/* Still fine after all that. */
	qp = try_qp(IBV_QPT_RC, cq, 4, 1, 0);
	CHECK(qp);
	CHECK_OK(ibv_destroy_qp(qp));
}

static void misc_verbs(struct ibv_cq *cq)
{
	size_t P = t_page();
	uint8_t *buf = t_map(P);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_qp_attr at;
	struct ibv_qp *qp;
	struct ibv_mw *mw;
	struct ibv_xrcd_init_attr xa;
	struct ibv_xrcd *xrcd;
	struct ibv_alloc_dm_attr da;
	struct ibv_dm *dm;
	struct ibv_wq_init_attr wa;
	struct ibv_wq *wq;
	struct ibv_cq *rcq;
	int rc;

	MUST_FAIL_PTR(ibv_reg_mr(A.pd, buf, P, IBV_ACCESS_REMOTE_WRITE),
		      "ibv_reg_mr(REMOTE_WRITE without LOCAL_WRITE)");
	CHECK(ibv_query_port(A.ctx, 2, &pa) != 0);
	CHECK(ibv_query_gid(A.ctx, T_PORT, 4096, &gid) != 0);
	qp = t_qp(&A, IBV_QPT_RC, cq, cq, NULL, 0, NULL);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 2;
	at.qp_access_flags = T_ALL_REMOTE;
	CHECK(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_ACCESS_FLAGS) != 0);
	CHECK_EQ(t_qp_state(qp), IBV_QPS_RESET);
	printf("ok port 2 refused\n");

	errno = 0;
	mw = ibv_alloc_mw(A.pd, IBV_MW_TYPE_1);
	if (may_fail(mw, "ibv_alloc_mw(type 1)"))
		CHECK_OK(ibv_dealloc_mw(mw));
	errno = 0;
	mw = ibv_alloc_mw(A.pd, IBV_MW_TYPE_2);
	if (may_fail(mw, "ibv_alloc_mw(type 2)"))
		CHECK_OK(ibv_dealloc_mw(mw));

	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = 0;
	errno = 0;
	xrcd = ibv_open_xrcd(A.ctx, &xa);
	if (may_fail(xrcd, "ibv_open_xrcd"))
		CHECK_OK(ibv_close_xrcd(xrcd));

	memset(&da, 0, sizeof(da));
	da.length = 4096;
	errno = 0;
	dm = ibv_alloc_dm(A.ctx, &da);
	if (may_fail(dm, "ibv_alloc_dm"))
		CHECK_OK(ibv_free_dm(dm));

	memset(&wa, 0, sizeof(wa));
	wa.wq_type = IBV_WQT_RQ;
	wa.max_wr = 4;
	wa.max_sge = 1;
	wa.pd = A.pd;
	wa.cq = cq;
	errno = 0;
	wq = ibv_create_wq(A.ctx, &wa);
	if (may_fail(wq, "ibv_create_wq"))
		CHECK_OK(ibv_destroy_wq(wq));

	{
		/* The specs follow the attr with no gap, as the kernel ABI wants. */
		struct flow_req {
			struct ibv_flow_attr attr;
			struct ibv_flow_spec_eth eth;
		} fa;
		struct ibv_flow *flow;

		_Static_assert(offsetof(struct flow_req, eth) == sizeof(struct ibv_flow_attr),
			       "flow spec must follow the attr directly");

		memset(&fa, 0, sizeof(fa));
		fa.attr.type = IBV_FLOW_ATTR_NORMAL;
		fa.attr.size = sizeof(fa);
		fa.attr.num_of_specs = 1;
		fa.attr.port = T_PORT;
		fa.eth.type = IBV_FLOW_SPEC_ETH;
		fa.eth.size = sizeof(fa.eth);
		errno = 0;
		flow = ibv_create_flow(qp, &fa.attr);
		if (flow)
			t_fail("ibv_create_flow on an RC QP succeeded");
		CHECK(errno != 0);
		printf("ok ibv_create_flow -> %s\n", strerror(errno));
	}
	CHECK_OK(ibv_destroy_qp(qp));

	rcq = t_cq(&A, 8, NULL);
	rc = ibv_resize_cq(rcq, 64);
	if (rc == 0)
		CHECK(rcq->cqe >= 64);
	printf("ok ibv_resize_cq -> %s\n", rc ? strerror(rc) : "supported");
	CHECK_OK(ibv_destroy_cq(rcq));
	t_unmap(buf, P);
}

/* A WR that may be refused or may run, but must not hang. */
static void refused_or_completed(struct ibv_qp *qp, struct ibv_cq *cq,
				 struct ibv_send_wr *wr, const char *what,
				 int success_ok)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int rc = ibv_post_send(qp, wr, &bad);

	if (rc) {
		CHECK(bad == wr);
		printf("ok %s -> refused (%s)\n", what, strerror(rc));
		return;
	}
	t_wait_wc(cq, &wc);
	CHECK_EQ(wc.wr_id, wr->wr_id);
	if (!success_ok && wc.status == IBV_WC_SUCCESS)
		t_fail("%s completed successfully", what);
	printf("ok %s -> completed with %s\n", what, ibv_wc_status_str(wc.status));
}

static void posting(void)
{
	size_t P = t_page();
	uint8_t *abuf = t_map(P), *bbuf = t_map(P);
	struct ibv_mr *amr = t_reg(A.pd, abuf, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *bmr = t_reg(B.pd, bbuf, P, T_ALL_ACCESS);
	struct ibv_cq *acq = t_cq(&A, 16, NULL), *bcq = t_cq(&B, 16, NULL);
	struct ibv_qp_cap cap = { .max_send_wr = 8, .max_recv_wr = 8,
				  .max_send_sge = 2, .max_recv_sge = 2 };
	struct ibv_qp_cap bcap = cap;
	struct ibv_qp *a = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 0, &cap);
	struct ibv_qp *b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, &bcap);
	struct ibv_send_wr w[2], *bad;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge *many;
	uint32_t nmany;
	struct ibv_wc wc;
	int rc;

	t_rc_connect(&A, a, &B, b, NULL);
	t_fill(abuf, P, 1, 0);

	/* An opcode that does not exist. */
	memset(w, 0, sizeof(w));
	w[0].wr_id = 1;
	w[0].sg_list = &(struct ibv_sge){ (uintptr_t)abuf, 8, amr->lkey };
	w[0].num_sge = 1;
	w[0].opcode = (enum ibv_wr_opcode)0x7f;
	w[0].send_flags = IBV_SEND_SIGNALED;
	bad = NULL;
	rc = ibv_post_send(a, &w[0], &bad);
	CHECK(rc != 0);
	CHECK(bad == &w[0]);
	printf("ok invalid opcode -> %s\n", strerror(rc));

	/* A valid WR, then the invalid one: the valid one still runs. */
	w[1] = w[0];
	w[1].wr_id = 3;
	w[0].wr_id = 2;
	w[0].opcode = IBV_WR_RDMA_WRITE;
	w[0].wr.rdma.remote_addr = (uintptr_t)bbuf + 16;
	w[0].wr.rdma.rkey = bmr->rkey;
	w[0].next = &w[1];
	bad = NULL;
	rc = ibv_post_send(a, &w[0], &bad);
	CHECK(rc != 0);
	CHECK(bad == &w[1]);
	t_expect_wc(acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(bbuf + 16, 8, 1, 0);

	/* Too many SGEs. */
	nmany = (cap.max_send_sge > bcap.max_recv_sge ? cap.max_send_sge :
		 bcap.max_recv_sge) + 1;
	many = calloc(nmany, sizeof(*many));
	CHECK(many);
	for (uint32_t i = 0; i < nmany; i++)
		many[i] = t_sge(abuf + i, 1, amr->lkey);
	rc = t_post(a, 4, IBV_WR_SEND, many, (int)cap.max_send_sge + 1,
		    IBV_SEND_SIGNALED, 0, 0, 0);
	CHECK(rc != 0);
	printf("ok num_sge = max_send_sge + 1 -> %s\n", strerror(rc));
	for (uint32_t i = 0; i < nmany; i++)
		many[i] = t_sge(bbuf + i, 1, bmr->lkey);
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 5;
	rw.sg_list = many;
	rw.num_sge = (int)bcap.max_recv_sge + 1;
	rbad = NULL;
	rc = ibv_post_recv(b, &rw, &rbad);
	CHECK(rc != 0);
	CHECK(rbad == &rw);
	printf("ok num_sge = max_recv_sge + 1 -> %s\n", strerror(rc));
	free(many);

	/* The QP is still fine. */
	w[0].next = NULL;
	w[0].wr_id = 6;
	CHECK_OK(ibv_post_send(a, &w[0], &bad));
	t_expect_wc(acq, &wc, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);

	/* Opcodes RC may not take here: refused, or completed, never hung. */
	memset(&w[0], 0, sizeof(w[0]));
	w[0].wr_id = 7;
	w[0].sg_list = &(struct ibv_sge){ (uintptr_t)abuf, 8, amr->lkey };
	w[0].num_sge = 1;
	w[0].opcode = IBV_WR_TSO;
	w[0].send_flags = IBV_SEND_SIGNALED;
	refused_or_completed(a, acq, &w[0], "IBV_WR_TSO on RC", 0);

	CHECK_OK(ibv_destroy_qp(a));
	a = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 0, &cap);
	CHECK_OK(ibv_destroy_qp(b));
	b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, &bcap);
	t_rc_connect(&A, a, &B, b, NULL);
	memset(&w[0], 0, sizeof(w[0]));
	w[0].wr_id = 8;
	w[0].opcode = IBV_WR_LOCAL_INV;
	w[0].invalidate_rkey = 0x00badbad;
	w[0].send_flags = IBV_SEND_SIGNALED;
	refused_or_completed(a, acq, &w[0], "IBV_WR_LOCAL_INV of an unknown key", 1);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
}

int main(void)
{
	struct ibv_cq *cq;

	t_start("t_unsupported");
	t_open(&A, 0);
	t_open(&B, 1);
	cq = t_cq(&A, 16, NULL);
	creation_limits(cq);
	misc_verbs(cq);
	CHECK_OK(ibv_destroy_cq(cq));
	posting();
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

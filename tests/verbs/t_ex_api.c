/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_ex_api: the extended verbs.
 *
 * - ibv_query_device_ex agrees with ibv_query_device (ibv_query_device_ex(3)).
 * - ibv_create_cq_ex with IBV_WC_EX_WITH_BYTE_LEN | _IMM | _QP_NUM | _SRC_QP;
 *   start_poll returns ENOENT on an empty CQ; start_poll / next_poll /
 *   end_poll batches; ibv_wc_read_opcode, _byte_len, _imm_data, _qp_num,
 *   _src_qp, _wc_flags (ibv_create_cq_ex(3)).
 * - ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; ibv_qp_to_qp_ex;
 *   one ibv_wr_start .. ibv_wr_complete batch of SEND (ibv_wr_set_sge),
 *   SEND_WITH_IMM and RDMA_WRITE (ibv_wr_set_sge_list), RDMA_WRITE_WITH_IMM,
 *   RDMA_READ (sge list), ATOMIC_FETCH_AND_ADD, ATOMIC_CMP_AND_SWP and an
 *   inline SEND (ibv_wr_set_inline_data; the buffer is clobbered right after
 *   the setter, which copies it: ibv_wr_post(3) "Inline setters will copy the
 *   send data during the setter"). Each WR's wr_id and wr_flags come from
 *   the ibv_qp_ex fields. Data and completions checked.
 * - ibv_wr_abort discards the batch: nothing runs, no receive is consumed.
 * - UD through ibv_wr_set_ud_addr; the receiver reads src_qp and IBV_WC_GRH.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <sched.h>

struct rec {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, src_qp;
	__be32 imm;
	unsigned int wc_flags;
};

static struct t_dev A, B;

#define WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
		  IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP)

static struct ibv_cq_ex *cq_ex(struct t_dev *d)
{
	struct ibv_cq_init_attr_ex ca;
	struct ibv_cq_ex *cq;
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };

	memset(&ca, 0, sizeof(ca));
	ca.cqe = 32;
	ca.wc_flags = WC_FLAGS;
	cq = ibv_create_cq_ex(d->ctx, &ca);
	CHECK(cq);
	CHECK(ibv_cq_ex_to_cq(cq)->cqe >= 32);
	/* Empty: ENOENT, and no end_poll after a failed start_poll. */
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	return cq;
}

static void read_one(struct ibv_cq_ex *cq, struct rec *r)
{
	r->wr_id = cq->wr_id;
	r->status = cq->status;
	r->opcode = ibv_wc_read_opcode(cq);
	r->wc_flags = ibv_wc_read_wc_flags(cq);
	r->byte_len = ibv_wc_read_byte_len(cq);
	r->qp_num = ibv_wc_read_qp_num(cq);
	r->src_qp = ibv_wc_read_src_qp(cq);
	r->imm = (r->wc_flags & IBV_WC_WITH_IMM) ? ibv_wc_read_imm_data(cq) : 0;
}

/* Collect exactly n completions, in batches, within the timeout. */
static void poll_ex(struct ibv_cq_ex *cq, struct rec *r, int n)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	uint64_t end = t_now_ms() + T_TIMEOUT_MS;
	int got = 0;

	while (got < n) {
		int ret = ibv_start_poll(cq, &pa);

		if (ret == ENOENT) {
			if (t_now_ms() > end)
				t_fail("only %d of %d extended completions", got, n);
			sched_yield();
			continue;
		}
		CHECK_EQ(ret, 0);
		for (;;) {
			CHECK(got < n);		/* no more than expected */
			read_one(cq, &r[got++]);
			ret = ibv_next_poll(cq);
			if (ret)
				break;
		}
		CHECK_EQ(ret, ENOENT);
		ibv_end_poll(cq);
	}
}

static void check_rec(const struct rec *r, uint64_t id, enum ibv_wc_opcode op,
		      uint32_t qpn)
{
	if (r->wr_id != id || r->status != IBV_WC_SUCCESS || r->opcode != op)
		t_fail("completion wr_id %llu status %s opcode %d; expected wr_id %llu success opcode %d",
		       (unsigned long long)r->wr_id, ibv_wc_status_str(r->status),
		       r->opcode, (unsigned long long)id, op);
	CHECK_EQ(r->qp_num, qpn);
}

static void empty_ex(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };

	t_sleep_ms(T_QUIET_MS);
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
}

static void rc_part(void)
{
	struct ibv_cq_ex *acq = cq_ex(&A), *bcq = cq_ex(&B);
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *qx;
	size_t P = t_page();
	uint8_t *abuf = t_map(4 * P), *bbuf = t_map(4 * P);
	struct ibv_mr *amr = t_reg(A.pd, abuf, 4 * P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *bmr = t_reg(B.pd, bbuf, 4 * P, T_ALL_ACCESS);
	uint8_t inl[40];
	struct ibv_sge s3[3], rs;
	struct rec ra[8], rb[5];
	uint64_t v;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = ibv_cq_ex_to_cq(acq);
	qa.recv_cq = ibv_cq_ex_to_cq(acq);
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 3;
	qa.cap.max_recv_sge = 3;
	qa.cap.max_inline_data = sizeof(inl);
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = A.pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	a = ibv_create_qp_ex(A.ctx, &qa);
	CHECK(a);
	CHECK(qa.cap.max_inline_data >= sizeof(inl));
	qx = ibv_qp_to_qp_ex(a);
	CHECK(qx);
	CHECK(&qx->qp_base == a);

	/* The receiver: ibv_create_qp_ex without send ops. */
	qa.send_cq = ibv_cq_ex_to_cq(bcq);
	qa.recv_cq = ibv_cq_ex_to_cq(bcq);
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = B.pd;
	qa.send_ops_flags = 0;
	qa.cap.max_inline_data = 0;
	b = ibv_create_qp_ex(B.ctx, &qa);
	CHECK(b);
	t_rc_connect(&A, a, &B, b, NULL);

	/* Receives: SEND, SEND_WITH_IMM, WRITE_WITH_IMM, inline SEND. */
	rs = t_sge(bbuf + 100, 300, bmr->lkey);
	CHECK_OK(t_post_recv(b, 101, &rs, 1));
	rs = t_sge(bbuf + 500, 300, bmr->lkey);
	CHECK_OK(t_post_recv(b, 102, &rs, 1));
	CHECK_OK(t_post_recv(b, 103, NULL, 0));
	rs = t_sge(bbuf + 900, 300, bmr->lkey);
	CHECK_OK(t_post_recv(b, 104, &rs, 1));

	t_fill(abuf, 4 * P, 1, 0);
	t_fill(bbuf + 2 * P, P, 2, 0);	/* what RDMA_READ fetches */
	v = 1000;
	memcpy(bbuf + 3 * P, &v, 8);	/* FETCH_AND_ADD target */
	v = 77;
	memcpy(bbuf + 3 * P + 8, &v, 8);	/* CMP_AND_SWP target */
	s3[0] = t_sge(abuf + 10, 50, amr->lkey);
	s3[1] = t_sge(abuf + P - 20, 60, amr->lkey);
	s3[2] = t_sge(abuf + 2 * P - 5, 40, amr->lkey);
	t_fill(inl, sizeof(inl), 3, 0);

	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 3, 100);

	qx->wr_id = 2;
	ibv_wr_send_imm(qx, htonl(0x2222));
	ibv_wr_set_sge_list(qx, 3, s3);

	qx->wr_id = 3;
	ibv_wr_rdma_write(qx, bmr->rkey, (uintptr_t)bbuf + P - 75);
	ibv_wr_set_sge_list(qx, 3, s3);

	qx->wr_id = 4;
	ibv_wr_rdma_write_imm(qx, bmr->rkey, (uintptr_t)bbuf + P + 200, htonl(0x4444));
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 3 * P, 64);

	qx->wr_id = 5;
	ibv_wr_rdma_read(qx, bmr->rkey, (uintptr_t)bbuf + 2 * P + 1);
	ibv_wr_set_sge_list(qx, 2, (struct ibv_sge[]){
		t_sge(abuf + 3 * P + 100, 30, amr->lkey),
		t_sge(abuf + 3 * P + 200, 70, amr->lkey) });

	qx->wr_id = 6;
	ibv_wr_atomic_fetch_add(qx, bmr->rkey, (uintptr_t)bbuf + 3 * P, 5);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 3 * P + 512, 8);

	qx->wr_id = 7;
	ibv_wr_atomic_cmp_swp(qx, bmr->rkey, (uintptr_t)bbuf + 3 * P + 8, 77, 88);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 3 * P + 520, 8);

	qx->wr_id = 8;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, inl, sizeof(inl));
	memset(inl, 0xEE, sizeof(inl));	/* already copied by the setter */
	CHECK_OK(ibv_wr_complete(qx));

	poll_ex(acq, ra, 8);
	check_rec(&ra[0], 1, IBV_WC_SEND, a->qp_num);
	check_rec(&ra[1], 2, IBV_WC_SEND, a->qp_num);
	check_rec(&ra[2], 3, IBV_WC_RDMA_WRITE, a->qp_num);
	check_rec(&ra[3], 4, IBV_WC_RDMA_WRITE, a->qp_num);
	check_rec(&ra[4], 5, IBV_WC_RDMA_READ, a->qp_num);
	CHECK_EQ(ra[4].byte_len, 100);
	check_rec(&ra[5], 6, IBV_WC_FETCH_ADD, a->qp_num);
	CHECK_EQ(ra[5].byte_len, 8);
	check_rec(&ra[6], 7, IBV_WC_COMP_SWAP, a->qp_num);
	CHECK_EQ(ra[6].byte_len, 8);
	check_rec(&ra[7], 8, IBV_WC_SEND, a->qp_num);

	poll_ex(bcq, rb, 4);
	check_rec(&rb[0], 101, IBV_WC_RECV, b->qp_num);
	CHECK_EQ(rb[0].byte_len, 100);
	CHECK(!(rb[0].wc_flags & IBV_WC_WITH_IMM));
	check_rec(&rb[1], 102, IBV_WC_RECV, b->qp_num);
	CHECK_EQ(rb[1].byte_len, 150);
	CHECK(rb[1].wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(rb[1].imm, htonl(0x2222));
	check_rec(&rb[2], 103, IBV_WC_RECV_RDMA_WITH_IMM, b->qp_num);
	CHECK_EQ(rb[2].byte_len, 64);
	CHECK(rb[2].wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(rb[2].imm, htonl(0x4444));
	check_rec(&rb[3], 104, IBV_WC_RECV, b->qp_num);
	CHECK_EQ(rb[3].byte_len, sizeof(inl));

	/* The data. */
	CHECK_DATA(bbuf + 100, 100, 1, 3);				/* 1 */
	CHECK_DATA(bbuf + 500, 50, 1, 10);				/* 2 */
	CHECK_DATA(bbuf + 550, 60, 1, P - 20);
	CHECK_DATA(bbuf + 610, 40, 1, 2 * P - 5);
	CHECK_DATA(bbuf + P - 75, 50, 1, 10);				/* 3 */
	CHECK_DATA(bbuf + P - 25, 60, 1, P - 20);
	CHECK_DATA(bbuf + P + 35, 40, 1, 2 * P - 5);
	CHECK_DATA(bbuf + P + 200, 64, 1, 3 * P);			/* 4 */
	CHECK_DATA(abuf + 3 * P + 100, 30, 2, 1);			/* 5 */
	CHECK_DATA(abuf + 3 * P + 200, 70, 2, 31);
	memcpy(&v, abuf + 3 * P + 512, 8);				/* 6 */
	CHECK_EQ(v, 1000);
	memcpy(&v, bbuf + 3 * P, 8);
	CHECK_EQ(v, 1005);
	memcpy(&v, abuf + 3 * P + 520, 8);				/* 7 */
	CHECK_EQ(v, 77);
	memcpy(&v, bbuf + 3 * P + 8, 8);
	CHECK_EQ(v, 88);
	CHECK_DATA(bbuf + 900, sizeof(inl), 3, 0);			/* 8 */

	/* ibv_wr_abort: nothing is posted. */
	rs = t_sge(bbuf + 1300, 300, bmr->lkey);
	CHECK_OK(t_post_recv(b, 105, &rs, 1));
	ibv_wr_start(qx);
	qx->wr_id = 99;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf, 10);
	ibv_wr_abort(qx);
	empty_ex(acq);
	empty_ex(bcq);
	ibv_wr_start(qx);
	qx->wr_id = 100;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 2000, 20);
	CHECK_OK(ibv_wr_complete(qx));
	poll_ex(acq, ra, 1);
	check_rec(&ra[0], 100, IBV_WC_SEND, a->qp_num);
	poll_ex(bcq, rb, 1);
	check_rec(&rb[0], 105, IBV_WC_RECV, b->qp_num);
	CHECK_EQ(rb[0].byte_len, 20);
	CHECK_DATA(bbuf + 1300, 20, 1, 2000);
	empty_ex(acq);
	empty_ex(bcq);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(acq)));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(bcq)));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
}

static void ud_part(void)
{
	struct ibv_cq_ex *acq = cq_ex(&A), *bcq = cq_ex(&B);
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *qx;
	struct ibv_ah *ah;
	size_t P = t_page();
	uint8_t *abuf = t_map(P), *bbuf = t_map(P);
	struct ibv_mr *amr = t_reg(A.pd, abuf, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *bmr = t_reg(B.pd, bbuf, P, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = t_sge(bbuf + 8, 40 + 256, bmr->lkey);
	struct rec r;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = ibv_cq_ex_to_cq(acq);
	qa.recv_cq = ibv_cq_ex_to_cq(acq);
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = A.pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a = ibv_create_qp_ex(A.ctx, &qa);
	CHECK(a);
	qx = ibv_qp_to_qp_ex(a);
	CHECK(qx);
	qa.send_cq = ibv_cq_ex_to_cq(bcq);
	qa.recv_cq = ibv_cq_ex_to_cq(bcq);
	qa.pd = B.pd;
	b = ibv_create_qp_ex(B.ctx, &qa);
	CHECK(b);
	t_ud_ready(a, 0x42);
	t_ud_ready(b, 0x42);
	ah = t_ud_ah(&A, &B.gid);
	CHECK_OK(t_post_recv(b, 7, &rs, 1));

	t_fill(abuf + 77, 200, 4, 0);
	ibv_wr_start(qx);
	qx->wr_id = 6;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah, b->qp_num, 0x42);
	ibv_wr_set_sge(qx, amr->lkey, (uintptr_t)abuf + 77, 200);
	CHECK_OK(ibv_wr_complete(qx));

	poll_ex(acq, &r, 1);
	check_rec(&r, 6, IBV_WC_SEND, a->qp_num);
	poll_ex(bcq, &r, 1);
	check_rec(&r, 7, IBV_WC_RECV, b->qp_num);
	CHECK_EQ(r.byte_len, 40 + 200);
	CHECK_EQ(r.src_qp, a->qp_num);
	CHECK(r.wc_flags & IBV_WC_GRH);
	CHECK_DATA(bbuf + 8 + 40, 200, 4, 0);
	empty_ex(bcq);

	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(acq)));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(bcq)));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
}

int main(void)
{
	struct ibv_device_attr_ex ax;

	t_start("t_ex_api");
	t_open(&A, 0);
	t_open(&B, 1);

	memset(&ax, 0, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(A.ctx, NULL, &ax));
	CHECK_EQ(ax.orig_attr.max_qp, A.attr.max_qp);
	CHECK_EQ(ax.orig_attr.max_qp_wr, A.attr.max_qp_wr);
	CHECK_EQ(ax.orig_attr.max_sge, A.attr.max_sge);
	CHECK_EQ(ax.orig_attr.max_cqe, A.attr.max_cqe);
	CHECK_EQ(ax.orig_attr.max_mr_size, A.attr.max_mr_size);
	CHECK_EQ(ax.orig_attr.atomic_cap, A.attr.atomic_cap);
	CHECK_EQ(ax.orig_attr.phys_port_cnt, 1);
	CHECK_EQ(ax.orig_attr.vendor_id, A.attr.vendor_id);
	CHECK_EQ(ax.orig_attr.sys_image_guid, A.attr.sys_image_guid);

	rc_part();
	ud_part();

	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

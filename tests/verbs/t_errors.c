/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_errors: protection errors on RC, and the flush that follows them.
 *
 * Remote errors (the responder refuses; IBA 9.7.5.2.4 NAK Remote Access
 * Error -> IBV_WC_REM_ACCESS_ERR at the requester):
 *   - RDMA_WRITE with a bad rkey;
 *   - RDMA_WRITE with the rkey of an MR in another PD of the responder;
 *   - RDMA_WRITE of 8 bytes ending one byte past the MR (after a write that
 *     ends exactly at the MR's last byte succeeded), and a 1-byte write just
 *     past the end; RDMA_READ starting one byte before the MR;
 *   - RDMA_WRITE to an MR without IBV_ACCESS_REMOTE_WRITE (a READ of it works);
 *   - RDMA_READ of an MR without IBV_ACCESS_REMOTE_READ (a WRITE to it works);
 *   - FETCH_AND_ADD on an MR without IBV_ACCESS_REMOTE_ATOMIC.
 * Local errors (IBA 10.6.3.1 L_Key checks -> IBV_WC_LOC_PROT_ERR):
 *   - a bad lkey in the local SGE; an SGE running past its MR's end;
 *   - RDMA_READ into an MR without IBV_ACCESS_LOCAL_WRITE.
 * After every error: the requester QP is in IBV_QPS_ERR (ibv_query_qp), WRs
 * posted afterwards complete with IBV_WC_WR_FLUSH_ERR, receives already posted
 * and posted afterwards are flushed too (IBA 10.3.1 Error state), and no byte
 * of the target memory changed. Fresh QPs for each case.
 */
#include "helpers.h"

static struct t_dev A, B;
static size_t P;
static uint8_t *abuf, *bbuf;	/* 2 pages at A, 4 pages at B */
static struct ibv_mr *mr_a, *mr_a_ro;
static int ncase;

struct pair {
	struct ibv_cq *scq, *rcq, *bcq;
	struct ibv_qp *a, *b;
};

static void pair_up(struct pair *p)
{
	p->scq = t_cq(&A, 16, NULL);
	p->rcq = t_cq(&A, 16, NULL);
	p->bcq = t_cq(&B, 16, NULL);
	p->a = t_qp(&A, IBV_QPT_RC, p->scq, p->rcq, NULL, 0, NULL);
	p->b = t_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, NULL, 0, NULL);
	t_rc_connect(&A, p->a, &B, p->b, NULL);
	/* Known contents everywhere, so any stray write shows. */
	t_fill(abuf, 2 * P, 0xa000 + ncase, 0);
	t_fill(bbuf, 4 * P, 0xb000 + ncase, 0);
}

static void pair_down(struct pair *p)
{
	CHECK_OK(ibv_destroy_qp(p->a));
	CHECK_OK(ibv_destroy_qp(p->b));
	CHECK_OK(ibv_destroy_cq(p->scq));
	CHECK_OK(ibv_destroy_cq(p->rcq));
	CHECK_OK(ibv_destroy_cq(p->bcq));
	ncase++;
}

static void check_b_untouched(void)
{
	CHECK_DATA(bbuf, 4 * P, 0xb000 + ncase, 0);
}

/* The WR id failed with st: the QP is in error and later work is flushed. */
static void expect_error(struct pair *p, uint64_t id, enum ibv_wc_status st)
{
	struct ibv_sge sg = t_sge(abuf, 16, mr_a->lkey);
	struct ibv_wc wc;

	t_expect_wc(p->scq, &wc, id, st, T_ANY_OPCODE);
	/* ibv_poll_cq(3): qp_num is valid in an error completion. */
	CHECK_EQ(wc.qp_num, p->a->qp_num);
	CHECK_EQ(t_qp_state(p->a), IBV_QPS_ERR);
	CHECK_OK(t_post(p->a, id + 1, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(p->scq, &wc, id + 1, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	CHECK_EQ(wc.qp_num, p->a->qp_num);
}

/* One RDMA op that must fail at the remote side. */
static void remote_fail(const char *what, enum ibv_wr_opcode op,
			struct ibv_sge *sg, uint64_t raddr, uint32_t rkey)
{
	struct pair p;

	pair_up(&p);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		CHECK_OK(t_post_atomic(p.a, 10, op, sg, IBV_SEND_SIGNALED, raddr,
				       rkey, 1, 0));
	else
		CHECK_OK(t_post(p.a, 10, op, sg, 1, IBV_SEND_SIGNALED, raddr, rkey, 0));
	expect_error(&p, 10, IBV_WC_REM_ACCESS_ERR);
	check_b_untouched();
	CHECK_DATA(abuf, 2 * P, 0xa000 + ncase, 0);	/* nothing came back */
	pair_down(&p);
	printf("ok %s\n", what);
}

/* Bad rkey, with the flush of receives before and after the error. */
static void case_bad_rkey(struct ibv_mr *mr_b)
{
	struct ibv_sge sg = t_sge(abuf + 8, 64, mr_a->lkey);
	struct ibv_sge rs[3];
	struct ibv_wc wc;
	struct pair p;

	pair_up(&p);
	for (int i = 0; i < 3; i++)
		rs[i] = t_sge(abuf + P + 100 * i, 100, mr_a->lkey);
	CHECK_OK(t_post_recv(p.a, 100, &rs[0], 1));
	CHECK_OK(t_post_recv(p.a, 101, &rs[1], 1));
	CHECK_OK(t_post(p.a, 10, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)mr_b->addr, ~mr_b->rkey, 0));
	expect_error(&p, 10, IBV_WC_REM_ACCESS_ERR);
	t_expect_wc(p.rcq, &wc, 100, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	CHECK_EQ(wc.qp_num, p.a->qp_num);
	t_expect_wc(p.rcq, &wc, 101, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	CHECK_OK(t_post_recv(p.a, 102, &rs[2], 1));
	t_expect_wc(p.rcq, &wc, 102, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	/* Two more sends in one post: both flushed, in order. */
	{
		struct ibv_send_wr w[2], *bad = NULL;

		memset(w, 0, sizeof(w));
		for (int i = 0; i < 2; i++) {
			w[i].wr_id = 20 + i;
			w[i].sg_list = &sg;
			w[i].num_sge = 1;
			w[i].opcode = IBV_WR_SEND;
			w[i].send_flags = IBV_SEND_SIGNALED;
		}
		w[0].next = &w[1];
		CHECK_OK(ibv_post_send(p.a, w, &bad));
		t_expect_wc(p.scq, &wc, 20, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
		t_expect_wc(p.scq, &wc, 21, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
	}
	CHECK_CQ_EMPTY(p.scq);
	CHECK_CQ_EMPTY(p.rcq);
	CHECK_CQ_EMPTY(p.bcq);	/* nothing reached the responder's CQ */
	check_b_untouched();
	/* Abuf is unchanged too: nothing was received into it. */
	CHECK_DATA(abuf, 2 * P, 0xa000 + ncase, 0);
	pair_down(&p);
	printf("ok bad rkey + flush\n");
}

/* Bounds: the last byte is writable, one byte more is not. */
static void case_bounds(void)
{
	/* MR over [bbuf + P + 100, bbuf + 2P + 100): not page aligned. */
	uint8_t *base = bbuf + P + 100;
	size_t len = P;
	struct ibv_mr *mr = t_reg(B.pd, base, len, T_ALL_ACCESS);
	struct ibv_sge sg8 = t_sge(abuf + 40, 8, mr_a->lkey);
	struct ibv_sge sg1 = t_sge(abuf + 40, 1, mr_a->lkey);
	struct ibv_wc wc;
	struct pair p;

	/* In bounds, ending at the last byte: succeeds. Then one past: fails,
	 * and none of the 8 bytes (7 of them in bounds) are written. */
	pair_up(&p);
	CHECK_OK(t_post(p.a, 1, IBV_WR_RDMA_WRITE, &sg8, 1, IBV_SEND_SIGNALED,
			(uintptr_t)(base + len - 8), mr->rkey, 0));
	t_expect_wc(p.scq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(base + len - 8, 8, 0xa000 + ncase, 40);
	t_fill(base + len - 8, 8, 0xb000 + ncase, (size_t)(base + len - 8 - bbuf));
	CHECK_OK(t_post(p.a, 2, IBV_WR_RDMA_WRITE, &sg8, 1, IBV_SEND_SIGNALED,
			(uintptr_t)(base + len - 7), mr->rkey, 0));
	expect_error(&p, 2, IBV_WC_REM_ACCESS_ERR);
	check_b_untouched();
	pair_down(&p);
	printf("ok write ending one byte past the MR\n");

	remote_fail("1-byte write just past the MR", IBV_WR_RDMA_WRITE, &sg1,
		    (uintptr_t)(base + len), mr->rkey);
	remote_fail("read starting one byte before the MR", IBV_WR_RDMA_READ, &sg8,
		    (uintptr_t)(base - 1), mr->rkey);
	CHECK_OK(ibv_dereg_mr(mr));
}

/* Permissions: each MR refuses the one kind of access it lacks. */
static void case_access(void)
{
	struct ibv_mr *no_w = t_reg(B.pd, bbuf + 64, 256,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_mr *no_r = t_reg(B.pd, bbuf + P - 128, 256,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_ATOMIC);
	struct ibv_mr *no_a = t_reg(B.pd, bbuf + 2 * P + 8, 256,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
	struct ibv_sge sg = t_sge(abuf + 16, 32, mr_a->lkey);
	struct ibv_sge sg_at = t_sge(abuf + 256, 8, mr_a->lkey);
	struct ibv_wc wc;
	struct pair p;

	/* Read of the no-remote-write MR works; a write to it does not. */
	pair_up(&p);
	CHECK_OK(t_post(p.a, 1, IBV_WR_RDMA_READ, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)no_w->addr, no_w->rkey, 0));
	t_expect_wc(p.scq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_DATA(abuf + 16, 32, 0xb000 + ncase, 64);
	CHECK_OK(t_post(p.a, 2, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)no_w->addr, no_w->rkey, 0));
	expect_error(&p, 2, IBV_WC_REM_ACCESS_ERR);
	check_b_untouched();
	pair_down(&p);
	printf("ok write to MR without REMOTE_WRITE\n");

	/* Write to the no-remote-read MR works; a read of it does not. */
	pair_up(&p);
	CHECK_OK(t_post(p.a, 1, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)no_r->addr, no_r->rkey, 0));
	t_expect_wc(p.scq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(no_r->addr, 32, 0xa000 + ncase, 16);
	t_fill(no_r->addr, 32, 0xb000 + ncase, P - 128);
	t_fill(abuf + 16, 32, 0xa000 + ncase, 16);
	CHECK_OK(t_post(p.a, 2, IBV_WR_RDMA_READ, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)no_r->addr, no_r->rkey, 0));
	expect_error(&p, 2, IBV_WC_REM_ACCESS_ERR);
	check_b_untouched();
	CHECK_DATA(abuf + 16, 32, 0xa000 + ncase, 16);	/* nothing read */
	pair_down(&p);
	printf("ok read of MR without REMOTE_READ\n");

	remote_fail("atomic on MR without REMOTE_ATOMIC",
		    IBV_WR_ATOMIC_FETCH_AND_ADD, &sg_at, (uintptr_t)no_a->addr,
		    no_a->rkey);

	CHECK_OK(ibv_dereg_mr(no_w));
	CHECK_OK(ibv_dereg_mr(no_r));
	CHECK_OK(ibv_dereg_mr(no_a));
}

/* Local protection: bad lkey, SGE past its MR, read into a read-only MR. */
static void local_fail(const char *what, enum ibv_wr_opcode op,
		       struct ibv_sge *sg, struct ibv_mr *mr_b)
{
	struct pair p;

	pair_up(&p);
	CHECK_OK(t_post(p.a, 10, op, sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)mr_b->addr, mr_b->rkey, 0));
	expect_error(&p, 10, IBV_WC_LOC_PROT_ERR);
	check_b_untouched();
	CHECK_DATA(abuf, 2 * P, 0xa000 + ncase, 0);
	pair_down(&p);
	printf("ok %s\n", what);
}

int main(void)
{
	struct ibv_pd *pd2;
	struct ibv_mr *mr_b, *mr_other_pd;
	struct ibv_sge sg;

	t_start("t_errors");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	abuf = t_map(2 * P);
	bbuf = t_map(4 * P);
	mr_a = t_reg(A.pd, abuf, 2 * P, IBV_ACCESS_LOCAL_WRITE);
	mr_a_ro = t_reg(A.pd, abuf + P, P, 0);
	mr_b = t_reg(B.pd, bbuf, 4 * P, T_ALL_ACCESS);

	case_bad_rkey(mr_b);

	/* A valid rkey, but of an MR in a PD the responder QP is not in. */
	pd2 = ibv_alloc_pd(B.ctx);
	CHECK(pd2);
	mr_other_pd = t_reg(pd2, bbuf + 2 * P, P, T_ALL_ACCESS);
	sg = t_sge(abuf, 64, mr_a->lkey);
	remote_fail("rkey of an MR in another PD", IBV_WR_RDMA_WRITE, &sg,
		    (uintptr_t)mr_other_pd->addr, mr_other_pd->rkey);
	CHECK_OK(ibv_dereg_mr(mr_other_pd));
	CHECK_OK(ibv_dealloc_pd(pd2));

	case_bounds();
	case_access();

	sg = t_sge(abuf + 8, 64, ~mr_a->lkey);
	local_fail("bad lkey", IBV_WR_RDMA_WRITE, &sg, mr_b);
	sg = t_sge(abuf + 2 * P - 32, 64, mr_a->lkey);
	local_fail("local SGE past the end of its MR", IBV_WR_RDMA_WRITE, &sg, mr_b);
	sg = t_sge(abuf + P + 8, 64, mr_a_ro->lkey);
	local_fail("RDMA_READ into an MR without LOCAL_WRITE", IBV_WR_RDMA_READ,
		   &sg, mr_b);

	CHECK_OK(ibv_dereg_mr(mr_a));
	CHECK_OK(ibv_dereg_mr(mr_a_ro));
	CHECK_OK(ibv_dereg_mr(mr_b));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

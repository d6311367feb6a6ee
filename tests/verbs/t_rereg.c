/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_rereg: ibv_rereg_mr(3) as on rxe.
 *
 * 1. rdma-core's input checks (IBV_REREG_MR_ERR_INPUT, EINVAL): unknown flags,
 *    a new translation without address or length, access without
 *    CHANGE_ACCESS. The device's refusals (IBV_REREG_MR_ERR_CMD): no flags
 *    (EINVAL), remote write without local write (EINVAL), a new translation
 *    (EOPNOTSUPP: rxe supports only PD and access changes).
 * 2. Access: B's MR loses IBV_ACCESS_REMOTE_WRITE while A's RDMA WRITEs target
 *    its rkey (200 in flight): the completions are successes, then one
 *    IBV_WC_REM_ACCESS_ERR, then flushes, in that order; no write lands after
 *    the refusal. The keys stay; a READ (still allowed) works on a new pair;
 *    write access given back, WRITEs work again.
 * 3. PD: the MR moves to a second PD: a QP of the first PD is refused
 *    (remote access error), a QP of the second one writes; that PD cannot
 *    be deallocated while the MR is in it.
 */
#include "helpers.h"

static struct t_dev A, B;

struct pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
};

static void pair_up(struct pair *p, struct ibv_pd *bpd)
{
	struct ibv_qp_cap cap = { .max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_pd *save = B.pd;

	p->acq = t_cq(&A, 512, NULL);
	p->bcq = t_cq(&B, 16, NULL);
	p->a = t_qp(&A, IBV_QPT_RC, p->acq, p->acq, NULL, 0, &cap);
	B.pd = bpd;
	p->b = t_qp(&B, IBV_QPT_RC, p->bcq, p->bcq, NULL, 0, NULL);
	B.pd = save;
	t_rc_connect(&A, p->a, &B, p->b, NULL);
}

static void pair_down(struct pair *p)
{
	CHECK_OK(ibv_destroy_qp(p->a));
	CHECK_OK(ibv_destroy_qp(p->b));
	CHECK_OK(ibv_destroy_cq(p->acq));
	CHECK_OK(ibv_destroy_cq(p->bcq));
}

static int write_once(struct pair *p, struct ibv_sge *sg, void *dst, uint32_t rkey)
{
	struct ibv_wc wc;

	CHECK_OK(t_post(p->a, 1, IBV_WR_RDMA_WRITE, sg, 1, IBV_SEND_SIGNALED, (uintptr_t)dst, rkey, 0));
	t_wait_wc(p->acq, &wc);
	return wc.status;
}

static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t len, int access,
		 int *err)
{
	int ret;

	errno = 0;
	ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);
	*err = errno;
	return ret;
}

int main(void)
{
	const int RW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *smr, *dmr;
	struct ibv_pd *pd2;
	struct ibv_sge sg;
	struct ibv_wc wc;
	struct pair p;
	uint32_t lkey, rkey;
	uint8_t *src, *dst;
	size_t P;
	int err;

	t_start("t_rereg");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	src = t_map(P);
	dst = t_map(P);
	smr = t_reg(A.pd, src, P, IBV_ACCESS_LOCAL_WRITE);
	dmr = t_reg(B.pd, dst, P, RW);
	lkey = dmr->lkey;
	rkey = dmr->rkey;

	/* 1 */
	CHECK_EQ(rereg(dmr, 1 << 7, NULL, NULL, 0, 0, &err), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(rereg(dmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0, &err), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(rereg(dmr, IBV_REREG_MR_CHANGE_PD, B.pd, NULL, 0, RW, &err), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(rereg(dmr, 0, NULL, NULL, 0, 0, &err), IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(rereg(dmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE, &err),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(rereg(dmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, src, P, 0, &err), IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(err, EOPNOTSUPP);
	CHECK(dmr->lkey == lkey && dmr->rkey == rkey && dmr->pd == B.pd);

	/* 2 */
	pair_up(&p, B.pd);
	t_fill(src, P, 7, 0);
	sg = t_sge(src, 64, smr->lkey);
	CHECK_EQ(write_once(&p, &sg, dst, rkey), IBV_WC_SUCCESS);
	CHECK_DATA(dst, 64, 7, 0);
	memset(dst, 0, P);
	for (int i = 0; i < 200; i++) {
		sg = t_sge(src + (i % 64) * 64, 64, smr->lkey);
		CHECK_OK(t_post(p.a, (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)(dst + (i % 64) * 64), rkey, 0));
	}
	CHECK_OK(ibv_rereg_mr(dmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
	CHECK(dmr->lkey == lkey && dmr->rkey == rkey);
	{
		int ok = 0, refused = 0, flushed = 0;

		for (int i = 0; i < 200; i++) {
			t_wait_wc(p.acq, &wc);
			CHECK_EQ(wc.wr_id, (uint64_t)i);
			if (wc.status == IBV_WC_SUCCESS) {
				CHECK(!refused && !flushed);    /* successes come first */
				ok++;
			} else if (wc.status == IBV_WC_REM_ACCESS_ERR) {
				CHECK(!refused && !flushed);
				refused++;
			} else {
				CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
				CHECK(refused);
				flushed++;
			}
		}
		printf("  %d writes landed before the rereg took effect, then %d refused, %d flushed\n",
		       ok, refused, flushed);
		/* every write that completed landed; the others did not: the
		 * slots of the last successes hold their data, a later write
		 * to a slot no success wrote leaves it zero */
		for (int i = 0; i < 64; i++) {
			int last = -1;

			for (int w = i; w < ok; w += 64)
				last = w;
			if (last >= 0)
				CHECK_DATA(dst + i * 64, 64, 7, (size_t)(i * 64));
			else
				CHECK_BYTES(dst + i * 64, 0, 64);
		}
		if (ok < 200) {
			CHECK_EQ(refused, 1);
		} else {        /* all landed before it: the next one is refused */
			sg = t_sge(src, 64, smr->lkey);
			CHECK_EQ(write_once(&p, &sg, dst, rkey), IBV_WC_REM_ACCESS_ERR);
		}
	}
	pair_down(&p);
	pair_up(&p, B.pd);
	sg = t_sge(src, 64, smr->lkey);
	CHECK_OK(t_post(p.a, 2, IBV_WR_RDMA_READ, &sg, 1, IBV_SEND_SIGNALED, (uintptr_t)dst, rkey, 0));
	t_expect_wc(p.acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_OK(ibv_rereg_mr(dmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, RW));
	t_fill(src, 64, 9, 0);
	CHECK_EQ(write_once(&p, &sg, dst, rkey), IBV_WC_SUCCESS);
	CHECK_DATA(dst, 64, 9, 0);
	pair_down(&p);

	/* 3 */
	pd2 = ibv_alloc_pd(B.ctx);
	CHECK(pd2);
	CHECK_OK(ibv_rereg_mr(dmr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0));
	CHECK(dmr->pd == pd2 && dmr->lkey == lkey && dmr->rkey == rkey);
	CHECK_EQ(ibv_dealloc_pd(pd2), EBUSY);
	pair_up(&p, B.pd);
	CHECK_EQ(write_once(&p, &sg, dst, rkey), IBV_WC_REM_ACCESS_ERR);
	pair_down(&p);
	pair_up(&p, pd2);
	t_fill(src, 64, 11, 0);
	CHECK_EQ(write_once(&p, &sg, dst, rkey), IBV_WC_SUCCESS);
	CHECK_DATA(dst, 64, 11, 0);
	pair_down(&p);
	CHECK_OK(ibv_rereg_mr(dmr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS, B.pd, NULL, 0, RW));
	CHECK_OK(ibv_dealloc_pd(pd2));

	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

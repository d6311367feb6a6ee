/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_mw: memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), ibv_post_send(3)
 * IBV_WR_BIND_MW / IBV_WR_LOCAL_INV / IBV_WR_SEND_WITH_INV), as on rxe, plus
 * the IB spec where rxe does not check (window range, type 2B's QP).
 *
 * A is the requester, B the responder; windows live on B and are bound by
 * B's QPs. Every RC access error moves both QPs of a pair to the error
 * state, so each refused access uses a fresh pair (pair_up). B's buffer
 * holds a known pattern around every access, so a write that lands one
 * byte off, or lands at all when refused, shows.
 *
 * 1. Device: IBV_DEVICE_MEM_WINDOW and IBV_DEVICE_MEM_WINDOW_TYPE_2B,
 *    max_mw > 0.
 * 2. Alloc: types 1 and 2 (type, pd, context, rkey != 0, keys distinct);
 *    type 3 is NULL / EINVAL; a PD with a window cannot be deallocated
 *    (EBUSY) until ibv_dealloc_mw (0).
 * 3. Type 1 through ibv_bind_mw on B's QP: a sub-range of an MR with
 *    IBV_ACCESS_MW_BIND; the rkey changes in its low 8 bits only; an
 *    IBV_WC_BIND_MW success. WRITEs at both ends of the window land exactly
 *    there; a READ returns the right bytes; a write inside the MR but
 *    outside the window (before it, across its end) is refused. A rebind
 *    changes the key again: the old key is refused, the new one (and the
 *    new range) works. A read-only window: READ works, WRITE refused. An
 *    unbind (mr NULL, 0, 0) completes; both the key it replaced and its own
 *    key are refused. libibverbs' inline checks: a type 2 window (EINVAL),
 *    mr NULL with a length or an address (EINVAL), an MR of another PD
 *    (EPERM); nothing is posted and mw->rkey is unchanged.
 * 4. Bind errors in the engine: IBV_WC_MW_BIND_ERR, the QP in IBV_QPS_ERR,
 *    a WR posted afterwards flushed. Type 1 (the consumer undoes the key
 *    ibv_bind_mw set at post time): an MR without IBV_ACCESS_MW_BIND; a
 *    writable window on an MR without IBV_ACCESS_LOCAL_WRITE (a read-only
 *    window on it binds); a range past the MR's end; afterwards the same
 *    window binds and works. Type 2 (IBV_WR_BIND_MW): a window already
 *    bound; length 0; a QP of another PD than the window's.
 * 5. Type 2 through ibv_post_send with wr.bind_mw.rkey = ibv_inc_rkey():
 *    IBV_WC_BIND_MW success; WRITE and READ through the new key on the pair
 *    whose B QP bound it; a second pair whose responder is another QP of
 *    B's PD is refused (type 2B belongs to one QP); the first pair still
 *    works. IBV_WR_BIND_MW on a UD QP: EINVAL, *bad_wr set.
 * 6. LOCAL_INV on the bound QP: IBV_WC_LOCAL_INV success, the key is
 *    refused afterwards; the window binds again with the next key byte on a
 *    fresh QP and works. IBV_WC_LOC_QP_OP_ERR (QP to error, flush) for: a
 *    type 2 window's key invalidated from another QP of the PD (the window
 *    stays valid for its own pair), a stale key byte of a live window, a
 *    type 1 window's key, an ordinary MR's key (the MR keeps working), the
 *    key of a deallocated window (names nothing).
 * 7. LOCAL_INV while 200 signaled 64-byte WRITEs target the window: A sees
 *    k successes, one IBV_WC_REM_ACCESS_ERR, then flushes, in order; slots
 *    0..k-1 hold their data, slots k.. and everything outside the window
 *    are untouched.
 * 8. SEND_WITH_INV: B's receive completes IBV_WC_RECV with IBV_WC_WITH_INV,
 *    invalidated_rkey, byte_len and data; A's IBV_WC_SEND; the key is
 *    refused afterwards. IBV_WC_REM_INV_REQ_ERR at A (B's receive in error)
 *    for a type 1 window's key (which stays valid) and for a type 2 window
 *    bound to another QP (which stays valid for its pair).
 *    IBV_WR_SEND_WITH_INV on UD: EINVAL.
 * 9. ibv_dereg_mr of an MR with bound windows: EINVAL, the MR (and its
 *    windows) keep working; it stays refused while any window is bound;
 *    after unbind (type 1) and LOCAL_INV (type 2) it succeeds. ibv_dealloc_mw
 *    of bound windows returns 0, their keys are refused, the MR deregisters.
 * 10. Destroying the QP a type 2 window is bound to succeeds; the window
 *    then binds on another QP and works.
 * 11. The extended API on ibv_create_qp_ex QPs (their send queues see only
 *    ibv_wr_*): ibv_wr_bind_mw, then ibv_wr_rdma_write through the key;
 *    ibv_wr_local_inv (a rebind then succeeds); ibv_wr_send_inv (B's
 *    completion has IBV_WC_WITH_INV; the key is refused afterwards).
 */
#include "helpers.h"

static struct t_dev A, B;
static size_t P;			/* page size */
static uint8_t *abuf, *bbuf;		/* 8 pages each */
static size_t alen, blen;
static struct ibv_mr *amr;		/* A: local write */
static struct ibv_mr *bmr;		/* B: MR_ACC */

#define MR_ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND)
#define WIN_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define BSEED 0xB0			/* B's background pattern */
#define RECV_OFF (6 * P)		/* B's receive buffer: outside every window */
#define NW 200				/* scenario 7's writes */

struct pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
};

/* A fresh RC pair; B's QP in bpd. Each side has one CQ for send and recv. */
static void pair_up(struct pair *p, struct ibv_pd *bpd)
{
	struct ibv_qp_cap cap = { .max_send_wr = 256, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct ibv_pd *save = B.pd;

	p->acq = t_cq(&A, 512, NULL);
	p->bcq = t_cq(&B, 64, NULL);
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

/* ---- B's memory --------------------------------------------------------- */

static void b_reset(void)
{
	t_fill(bbuf, blen, BSEED, 0);
}

/* B's buffer is the background pattern except [off, off + len), which holds
 * seed's pattern from position 0. */
static void b_check_at(int line, size_t off, size_t len, uint32_t seed)
{
	t_check_data_at(__FILE__, line, bbuf, off, BSEED, 0);
	t_check_data_at(__FILE__, line, bbuf + off, len, seed, 0);
	t_check_data_at(__FILE__, line, bbuf + off + len, blen - off - len, BSEED, off + len);
}

static void b_untouched_at(int line)
{
	t_check_data_at(__FILE__, line, bbuf, blen, BSEED, 0);
}

/* ---- A's accesses ------------------------------------------------------- */

/* One signaled WRITE (from abuf + aoff) or READ (into abuf + aoff) of len
 * bytes at B's bbuf + boff through rkey; the completion's status. */
static enum ibv_wc_status rdma_at(int line, struct pair *p, enum ibv_wr_opcode op, size_t aoff,
				  size_t boff, uint32_t len, uint32_t rkey)
{
	struct ibv_sge sg = t_sge(abuf + aoff, len, amr->lkey);
	struct ibv_wc wc;

	CHECK_OK(t_post(p->a, 0x77, op, &sg, 1, IBV_SEND_SIGNALED, (uintptr_t)(bbuf + boff), rkey, 0));
	t_wait_wc_at(__FILE__, line, p->acq, &wc);
	if (wc.wr_id != 0x77)
		t_fail_at(__FILE__, line, "wr_id 0x%llx, expected 0x77", (unsigned long long)wc.wr_id);
	if (wc.status == IBV_WC_SUCCESS)
		t_check_wc_at(__FILE__, line, &wc, IBV_WC_SUCCESS,
			      op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE);
	return wc.status;
}

/* A writes len bytes of seed's pattern at B + off through rkey: success, and
 * the bytes land there and nowhere else. */
static void write_ok_at(int line, struct pair *p, size_t off, uint32_t len, uint32_t rkey,
			uint32_t seed)
{
	enum ibv_wc_status st;

	b_reset();
	t_fill(abuf, len, seed, 0);
	st = rdma_at(line, p, IBV_WR_RDMA_WRITE, 0, off, len, rkey);
	if (st != IBV_WC_SUCCESS)
		t_fail_at(__FILE__, line, "WRITE of %u bytes at B+0x%zx, rkey 0x%x: %s, expected success",
			  len, off, rkey, ibv_wc_status_str(st));
	b_check_at(line, off, len, seed);
}
#define WRITE_OK(p, off, len, rkey, seed) write_ok_at(__LINE__, (p), (off), (len), (rkey), (seed))

/* A's write is refused with IBV_WC_REM_ACCESS_ERR and nothing at B changes.
 * The pair is in the error state afterwards. */
static void write_refused_at(int line, struct pair *p, size_t off, uint32_t len, uint32_t rkey)
{
	enum ibv_wc_status st;

	b_reset();
	t_fill(abuf, len, 0xEE, 0);
	st = rdma_at(line, p, IBV_WR_RDMA_WRITE, 0, off, len, rkey);
	if (st != IBV_WC_REM_ACCESS_ERR)
		t_fail_at(__FILE__, line, "WRITE of %u bytes at B+0x%zx, rkey 0x%x: %s, expected %s",
			  len, off, rkey, ibv_wc_status_str(st),
			  ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	b_untouched_at(line);
}
#define WRITE_REFUSED(p, off, len, rkey) write_refused_at(__LINE__, (p), (off), (len), (rkey))

/* A reads len bytes at B + off through rkey into abuf + 2 pages: B's pattern. */
static void read_ok_at(int line, struct pair *p, size_t off, uint32_t len, uint32_t rkey)
{
	enum ibv_wc_status st;

	b_reset();
	memset(abuf + 2 * P, 0, len);
	st = rdma_at(line, p, IBV_WR_RDMA_READ, 2 * P, off, len, rkey);
	if (st != IBV_WC_SUCCESS)
		t_fail_at(__FILE__, line, "READ of %u bytes at B+0x%zx, rkey 0x%x: %s, expected success",
			  len, off, rkey, ibv_wc_status_str(st));
	t_check_data_at(__FILE__, line, abuf + 2 * P, len, BSEED, off);
	b_untouched_at(line);
}
#define READ_OK(p, off, len, rkey) read_ok_at(__LINE__, (p), (off), (len), (rkey))

/* ---- B's local operations ---------------------------------------------- */

static void wc_is_at(int line, const struct ibv_wc *wc, uint64_t id, enum ibv_wc_status st,
		     int op)
{
	if (wc->wr_id != id)
		t_fail_at(__FILE__, line, "wr_id 0x%llx, expected 0x%llx",
			  (unsigned long long)wc->wr_id, (unsigned long long)id);
	t_check_wc_at(__FILE__, line, wc, st, op);
}

/* Type 1 through ibv_bind_mw on qp (its send CQ cq); addr NULL and len 0
 * with mr NULL unbinds. The completion's status must be st. ibv_bind_mw
 * sets mw->rkey at post time; after an error completion the consumer sets
 * it back (rxe: "user has to undo this if he gets an error wc"). */
static void bind1_at(int line, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw,
		     struct ibv_mr *mr, void *addr, size_t len, unsigned int acc,
		     enum ibv_wc_status st)
{
	struct ibv_mw_bind b;
	struct ibv_wc wc;
	uint32_t old = mw->rkey;
	int rc;

	memset(&b, 0, sizeof(b));
	b.wr_id = 0xb1;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = acc;
	rc = ibv_bind_mw(qp, mw, &b);
	if (rc)
		t_fail_at(__FILE__, line, "ibv_bind_mw returned %d (%s)", rc, strerror(rc));
	t_wait_wc_at(__FILE__, line, cq, &wc);
	wc_is_at(line, &wc, 0xb1, st, IBV_WC_BIND_MW);
	if (st == IBV_WC_SUCCESS) {
		if (mw->rkey == old || (mw->rkey & ~0xffu) != (old & ~0xffu))
			t_fail_at(__FILE__, line, "bind: rkey 0x%x -> 0x%x, expected a new low byte only",
				  old, mw->rkey);
	} else {
		mw->rkey = old;
	}
}
#define BIND1(qp, cq, mw, mr, addr, len, acc, st)				\
	bind1_at(__LINE__, (qp), (cq), (mw), (mr), (addr), (len), (acc), (st))

/* ibv_bind_mw's own checks: the return value, nothing posted, no new key. */
static void bind1_inline_at(int line, struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
			    void *addr, size_t len, int expect)
{
	struct ibv_mw_bind b;
	uint32_t old = mw->rkey;
	int rc;

	memset(&b, 0, sizeof(b));
	b.wr_id = 0xbad;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = WIN_ACC;
	rc = ibv_bind_mw(qp, mw, &b);
	if (rc != expect)
		t_fail_at(__FILE__, line, "ibv_bind_mw returned %d (%s), expected %d (%s)", rc,
			  strerror(rc), expect, strerror(expect));
	if (mw->rkey != old)
		t_fail_at(__FILE__, line, "refused ibv_bind_mw changed rkey 0x%x -> 0x%x", old, mw->rkey);
}
#define BIND1_INLINE(qp, mw, mr, addr, len, e)				\
	bind1_inline_at(__LINE__, (qp), (mw), (mr), (addr), (len), (e))

/* IBV_WR_BIND_MW through ibv_post_send; the post's return value. */
static int post_bind2(struct ibv_qp *qp, uint64_t id, struct ibv_mw *mw, uint32_t rkey,
		      struct ibv_mr *mr, void *addr, size_t len, unsigned int acc)
{
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

/* Type 2: binds mw with the next key byte (read-write window), completion
 * status st. On success the consumer's copy mw->rkey takes the new key, as
 * ibv_post_send(3) says the consumer keeps it. Returns the key posted. */
static uint32_t bind2_at(int line, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw,
			 struct ibv_mr *mr, void *addr, size_t len, enum ibv_wc_status st)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;
	int rc;

	rc = post_bind2(qp, 0xb2, mw, rkey, mr, addr, len, WIN_ACC);
	if (rc)
		t_fail_at(__FILE__, line, "ibv_post_send(BIND_MW) returned %d (%s)", rc, strerror(rc));
	t_wait_wc_at(__FILE__, line, cq, &wc);
	wc_is_at(line, &wc, 0xb2, st, IBV_WC_BIND_MW);
	if (st == IBV_WC_SUCCESS)
		mw->rkey = rkey;
	return rkey;
}
#define BIND2(qp, cq, mw, mr, addr, len, st)					\
	bind2_at(__LINE__, (qp), (cq), (mw), (mr), (addr), (len), (st))

/* IBV_WR_LOCAL_INV of rkey on qp: its completion status must be st. */
static void inv_at(int line, struct ibv_qp *qp, struct ibv_cq *cq, uint32_t rkey,
		   enum ibv_wc_status st)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1e;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		t_fail_at(__FILE__, line, "ibv_post_send(LOCAL_INV 0x%x) returned %d (%s)", rkey, rc,
			  strerror(rc));
	t_wait_wc_at(__FILE__, line, cq, &wc);
	wc_is_at(line, &wc, 0x1e, st, IBV_WC_LOCAL_INV);
}
#define INV(qp, cq, rkey, st) inv_at(__LINE__, (qp), (cq), (rkey), (st))

/* After an error completion: qp is in IBV_QPS_ERR and a WR posted now is
 * flushed. */
static void qp_dead_at(int line, struct ibv_qp *qp, struct ibv_cq *cq)
{
	struct ibv_wc wc;
	enum ibv_qp_state s = t_qp_state(qp);

	if (s != IBV_QPS_ERR)
		t_fail_at(__FILE__, line, "QP 0x%x in state %d, expected IBV_QPS_ERR", qp->qp_num, s);
	CHECK_OK(t_post(qp, 0xdead, IBV_WR_SEND, NULL, 0, IBV_SEND_SIGNALED, 0, 0, 0));
	t_wait_wc_at(__FILE__, line, cq, &wc);
	wc_is_at(line, &wc, 0xdead, IBV_WC_WR_FLUSH_ERR, T_ANY_OPCODE);
}
#define QP_DEAD(qp, cq) qp_dead_at(__LINE__, (qp), (cq))

static struct ibv_mw *mw_alloc(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, type);

	if (!mw)
		t_fail("ibv_alloc_mw(type %d) failed", type);
	CHECK_EQ(mw->type, type);
	CHECK(mw->pd == pd);
	CHECK(mw->context == pd->context);
	CHECK(mw->rkey != 0);
	return mw;
}

/* B posts one receive of 256 bytes at RECV_OFF. */
static void recv_post(struct pair *p, uint64_t id)
{
	struct ibv_sge sg = t_sge(bbuf + RECV_OFF, 256, bmr->lkey);

	CHECK_OK(t_post_recv(p->b, id, &sg, 1));
}

/* A posts SEND_WITH_INV of len bytes (seed's pattern) naming rkey. */
static int post_send_inv(struct ibv_qp *qp, uint64_t id, uint32_t len, uint32_t seed,
			 uint32_t rkey, struct ibv_ah *ah, uint32_t rqpn)
{
	struct ibv_sge sg = t_sge(abuf, len, amr->lkey);
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	t_fill(abuf, len, seed, 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.invalidate_rkey = rkey;
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rqpn;
		wr.wr.ud.remote_qkey = 0x42;
	}
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

/* ---- 1 ------------------------------------------------------------------ */

static void s1_device(void)
{
	const struct t_dev *d[2] = { &A, &B };

	printf("  1. device capabilities\n");
	for (int i = 0; i < 2; i++) {
		CHECK(d[i]->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
		CHECK(d[i]->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
		CHECK(d[i]->attr.max_mw > 0);
	}
}

/* ---- 2 ------------------------------------------------------------------ */

static void s2_alloc(void)
{
	struct ibv_mw *m1, *m2, *m;
	struct ibv_pd *pd;

	printf("  2. alloc / dealloc\n");
	m1 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	m2 = mw_alloc(B.pd, IBV_MW_TYPE_2);
	CHECK(m1->rkey != m2->rkey);
	errno = 0;
	m = ibv_alloc_mw(B.pd, (enum ibv_mw_type)3);
	CHECK(m == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_OK(ibv_dealloc_mw(m1));
	CHECK_OK(ibv_dealloc_mw(m2));

	/* A PD that still has a window cannot go. */
	pd = ibv_alloc_pd(B.ctx);
	CHECK(pd);
	m = mw_alloc(pd, IBV_MW_TYPE_2);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_OK(ibv_dealloc_mw(m));
	CHECK_OK(ibv_dealloc_pd(pd));
}

/* ---- 3 ------------------------------------------------------------------ */

static void s3_type1(void)
{
	struct ibv_mw *mw, *ro, *m2;
	struct ibv_mr *mr2;
	struct ibv_pd *pd2;
	struct pair p, q;
	uint32_t old;

	printf("  3. type 1 windows (ibv_bind_mw)\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_1);
	pair_up(&p, B.pd);

	/* Window = pages 1..2 of B's 8-page MR. */
	BIND1(p.b, p.bcq, mw, bmr, bbuf + P, 2 * P, WIN_ACC, IBV_WC_SUCCESS);
	WRITE_OK(&p, P + 100, 256, mw->rkey, 0x31);
	WRITE_OK(&p, P, 64, mw->rkey, 0x32);			/* its first bytes */
	WRITE_OK(&p, 3 * P - 64, 64, mw->rkey, 0x33);		/* its last bytes */
	WRITE_OK(&p, P, (uint32_t)(2 * P), mw->rkey, 0x34);	/* all of it */
	READ_OK(&p, 2 * P + 8, 128, mw->rkey);

	/* Inside the MR, outside the window: before it, across its end. */
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, P - 64, 64, mw->rkey);
	pair_down(&q);
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, 3 * P - 32, 64, mw->rkey);
	pair_down(&q);

	/* Rebind to pages 2..3: new key; the old one is refused. */
	old = mw->rkey;
	BIND1(p.b, p.bcq, mw, bmr, bbuf + 2 * P, 2 * P, WIN_ACC, IBV_WC_SUCCESS);
	CHECK(mw->rkey != old);
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, 2 * P, 64, old);
	pair_down(&q);
	WRITE_OK(&p, 3 * P + 10, 100, mw->rkey, 0x35);		/* outside the old range */
	WRITE_OK(&p, 4 * P - 64, 64, mw->rkey, 0x36);

	/* Read-only window. */
	ro = mw_alloc(B.pd, IBV_MW_TYPE_1);
	BIND1(p.b, p.bcq, ro, bmr, bbuf + P, P, IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS);
	pair_up(&q, B.pd);
	READ_OK(&q, P + 16, 64, ro->rkey);
	WRITE_REFUSED(&q, P + 16, 64, ro->rkey);
	pair_down(&q);

	/* libibverbs' inline checks: returned, nothing posted. */
	m2 = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pd2 = ibv_alloc_pd(B.ctx);
	CHECK(pd2);
	mr2 = t_reg(pd2, bbuf, blen, MR_ACC);
	BIND1_INLINE(p.b, m2, bmr, bbuf + P, P, EINVAL);	/* type 2 */
	BIND1_INLINE(p.b, mw, NULL, NULL, 64, EINVAL);		/* no MR, a length */
	BIND1_INLINE(p.b, mw, NULL, bbuf + P, 0, EINVAL);	/* no MR, an address */
	BIND1_INLINE(p.b, mw, mr2, bbuf + P, P, EPERM);		/* MR of another PD */
	CHECK_CQ_EMPTY(p.bcq);
	WRITE_OK(&p, 2 * P, 64, mw->rkey, 0x37);		/* still bound as it was */
	CHECK_OK(ibv_dereg_mr(mr2));
	CHECK_OK(ibv_dealloc_pd(pd2));
	CHECK_OK(ibv_dealloc_mw(m2));

	/* Unbind: completes; the key it replaced and its own are refused. */
	old = mw->rkey;
	BIND1(p.b, p.bcq, mw, NULL, NULL, 0, 0, IBV_WC_SUCCESS);
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, 2 * P, 64, old);
	pair_down(&q);
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, 2 * P, 64, mw->rkey);
	pair_down(&q);
	pair_down(&p);

	CHECK_OK(ibv_dealloc_mw(ro));
	CHECK_OK(ibv_dealloc_mw(mw));
}

/* ---- 4 ------------------------------------------------------------------ */

/* A type 1 bind that the engine refuses, on a fresh pair. */
static void bind1_fails_at(int line, struct ibv_mw *mw, struct ibv_mr *mr, void *addr, size_t len,
			   unsigned int acc)
{
	struct pair p;

	pair_up(&p, B.pd);
	bind1_at(line, p.b, p.bcq, mw, mr, addr, len, acc, IBV_WC_MW_BIND_ERR);
	qp_dead_at(line, p.b, p.bcq);
	pair_down(&p);
}
#define BIND1_FAILS(mw, mr, addr, len, acc)					\
	bind1_fails_at(__LINE__, (mw), (mr), (addr), (len), (acc))

static void s4_bind_errors(void)
{
	struct ibv_mr *nobind, *ronly;
	struct ibv_mw *mw, *mw2;
	struct ibv_pd *pd2;
	struct pair p;
	uint32_t key;

	printf("  4. bind errors (IBV_WC_MW_BIND_ERR)\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_1);
	key = mw->rkey;

	/* The MR lacks IBV_ACCESS_MW_BIND. */
	nobind = t_reg(B.pd, bbuf, blen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ);
	BIND1_FAILS(mw, nobind, bbuf + P, P, WIN_ACC);
	CHECK_EQ(mw->rkey, key);

	/* A writable window on an MR without local write; read-only binds. */
	ronly = t_reg(B.pd, bbuf, blen, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	pair_up(&p, B.pd);
	mw2 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	BIND1(p.b, p.bcq, mw2, ronly, bbuf + P, P, IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS);
	READ_OK(&p, P, 64, mw2->rkey);
	BIND1(p.b, p.bcq, mw, ronly, bbuf + P, P, IBV_ACCESS_REMOTE_WRITE, IBV_WC_MW_BIND_ERR);
	QP_DEAD(p.b, p.bcq);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw2));

	/* The range goes past the MR's end (and one byte past it). */
	BIND1_FAILS(mw, bmr, bbuf + blen - P, 2 * P, WIN_ACC);
	BIND1_FAILS(mw, bmr, bbuf + P, blen - P + 1, WIN_ACC);

	/* The failed binds left the window as it was: it binds and works. */
	pair_up(&p, B.pd);
	BIND1(p.b, p.bcq, mw, bmr, bbuf + P, P, WIN_ACC, IBV_WC_SUCCESS);
	WRITE_OK(&p, P + 8, 200, mw->rkey, 0x41);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
	CHECK_OK(ibv_dereg_mr(nobind));
	CHECK_OK(ibv_dereg_mr(ronly));

	/* Type 2: already bound (not invalidated). */
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	BIND2(p.b, p.bcq, mw, bmr, bbuf + P, P, IBV_WC_SUCCESS);
	WRITE_OK(&p, P, 64, mw->rkey, 0x42);
	key = mw->rkey;
	BIND2(p.b, p.bcq, mw, bmr, bbuf + 2 * P, P, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(mw->rkey, key);
	QP_DEAD(p.b, p.bcq);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));

	/* Type 2, length 0. */
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	BIND2(p.b, p.bcq, mw, bmr, bbuf + P, 0, IBV_WC_MW_BIND_ERR);
	QP_DEAD(p.b, p.bcq);
	pair_down(&p);

	/* Type 2 on a QP of another PD (the MR is in the window's PD). */
	pd2 = ibv_alloc_pd(B.ctx);
	CHECK(pd2);
	pair_up(&p, pd2);
	BIND2(p.b, p.bcq, mw, bmr, bbuf + P, P, IBV_WC_MW_BIND_ERR);
	QP_DEAD(p.b, p.bcq);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_pd(pd2));

	/* Still free after both: it binds on a QP of its PD. */
	pair_up(&p, B.pd);
	BIND2(p.b, p.bcq, mw, bmr, bbuf + P, P, IBV_WC_SUCCESS);
	WRITE_OK(&p, 2 * P - 64, 64, mw->rkey, 0x43);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
}

/* ---- 5 ------------------------------------------------------------------ */

static void s5_type2(void)
{
	struct ibv_cq *ucq;
	struct ibv_qp *ud;
	struct ibv_mw *mw;
	struct pair p, q;
	uint32_t old, r;

	printf("  5. type 2 windows (IBV_WR_BIND_MW)\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	old = mw->rkey;
	pair_up(&p, B.pd);
	r = BIND2(p.b, p.bcq, mw, bmr, bbuf + P, 2 * P, IBV_WC_SUCCESS);
	CHECK_EQ(r, ibv_inc_rkey(old));
	CHECK(r != old && (r & ~0xffu) == (old & ~0xffu));
	WRITE_OK(&p, P + 300, 1000, r, 0x51);
	WRITE_OK(&p, 3 * P - 64, 64, r, 0x52);
	READ_OK(&p, 2 * P + 5, 300, r);

	/* Another QP of B's PD as responder: the window is not its. */
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, P + 300, 64, r);
	pair_down(&q);
	WRITE_OK(&p, P + 400, 64, r, 0x53);

	/* IBV_WR_BIND_MW on UD: refused at post time. */
	ucq = t_cq(&B, 8, NULL);
	ud = t_qp(&B, IBV_QPT_UD, ucq, ucq, NULL, 0, NULL);
	t_ud_ready(ud, 0x42);
	CHECK_EQ(post_bind2(ud, 0x5d, mw, ibv_inc_rkey(r), bmr, bbuf + P, P, WIN_ACC), EINVAL);
	CHECK_OK(ibv_destroy_qp(ud));
	CHECK_OK(ibv_destroy_cq(ucq));
	WRITE_OK(&p, P, 64, r, 0x54);				/* nothing happened to it */

	INV(p.b, p.bcq, r, IBV_WC_SUCCESS);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
}

/* ---- 6 ------------------------------------------------------------------ */

/* LOCAL_INV of rkey on a fresh pair's B QP fails with IBV_WC_LOC_QP_OP_ERR. */
static void inv_fails_at(int line, struct pair *p, uint32_t rkey)
{
	inv_at(line, p->b, p->bcq, rkey, IBV_WC_LOC_QP_OP_ERR);
	qp_dead_at(line, p->b, p->bcq);
}
#define INV_FAILS(p, rkey) inv_fails_at(__LINE__, (p), (rkey))

static void s6_local_inv(void)
{
	struct ibv_mw *mw, *t1, *gone;
	struct pair p, q;
	uint32_t r, r2, nothing;

	printf("  6. local invalidate\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	r = BIND2(p.b, p.bcq, mw, bmr, bbuf + P, 2 * P, IBV_WC_SUCCESS);
	WRITE_OK(&p, P + 64, 128, r, 0x61);
	INV(p.b, p.bcq, r, IBV_WC_SUCCESS);
	WRITE_REFUSED(&p, P + 64, 128, r);
	pair_down(&p);

	/* Bound again, next key byte, on a fresh QP. */
	pair_up(&p, B.pd);
	r2 = BIND2(p.b, p.bcq, mw, bmr, bbuf + 2 * P, P, IBV_WC_SUCCESS);
	CHECK(r2 != r);
	WRITE_OK(&p, 2 * P + 1, 99, r2, 0x62);

	/* From another QP of the PD: refused; the window stays valid. */
	pair_up(&q, B.pd);
	INV_FAILS(&q, r2);
	pair_down(&q);
	WRITE_OK(&p, 3 * P - 100, 100, r2, 0x63);

	/* A stale key byte of the live window, on its own QP. */
	INV_FAILS(&p, ibv_inc_rkey(r2));
	pair_down(&p);

	/* A type 1 window's key (bound, so the key is live). */
	t1 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	pair_up(&p, B.pd);
	BIND1(p.b, p.bcq, t1, bmr, bbuf + P, P, WIN_ACC, IBV_WC_SUCCESS);
	INV_FAILS(&p, t1->rkey);
	pair_down(&p);
	pair_up(&p, B.pd);
	WRITE_OK(&p, P + 32, 32, t1->rkey, 0x64);		/* still bound */

	/* An ordinary MR's key: user MRs cannot be invalidated. */
	WRITE_OK(&p, 5 * P, 64, bmr->rkey, 0x65);
	INV_FAILS(&p, bmr->rkey);
	pair_down(&p);
	pair_up(&p, B.pd);
	WRITE_OK(&p, 5 * P, 64, bmr->rkey, 0x66);		/* the MR still works */
	pair_down(&p);

	/* A key that names nothing: that of a deallocated window. */
	gone = mw_alloc(B.pd, IBV_MW_TYPE_2);
	nothing = gone->rkey;
	CHECK_OK(ibv_dealloc_mw(gone));
	pair_up(&p, B.pd);
	INV_FAILS(&p, nothing);
	pair_down(&p);

	CHECK_OK(ibv_dealloc_mw(t1));
	CHECK_OK(ibv_dealloc_mw(mw));	/* its last QP is gone (scenario 10) */
}

/* ---- 7 ------------------------------------------------------------------ */

static void s7_inv_under_traffic(void)
{
	int ok = 0, refused = 0, flushed = 0;
	const size_t win = P;			/* the window's offset in B */
	struct ibv_sge sg;
	struct ibv_wc wc;
	struct ibv_mw *mw;
	struct pair p;
	uint32_t r;

	printf("  7. invalidate while %d writes target the window\n", NW);
	CHECK(win + NW * 64 <= RECV_OFF);
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	r = BIND2(p.b, p.bcq, mw, bmr, bbuf + win, NW * 64, IBV_WC_SUCCESS);
	b_reset();
	for (int i = 0; i < NW; i++)
		t_fill(abuf + i * 64, 64, 0x700 + (uint32_t)i, 0);
	for (int i = 0; i < NW; i++) {
		sg = t_sge(abuf + i * 64, 64, amr->lkey);
		CHECK_OK(t_post(p.a, (uint64_t)i, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				(uintptr_t)(bbuf + win + i * 64), r, 0));
	}
	INV(p.b, p.bcq, r, IBV_WC_SUCCESS);
	for (int i = 0; i < NW; i++) {
		t_wait_wc(p.acq, &wc);
		CHECK_EQ(wc.wr_id, (uint64_t)i);
		if (wc.status == IBV_WC_SUCCESS) {
			CHECK(!refused && !flushed);	/* successes come first */
			CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
			ok++;
		} else if (wc.status == IBV_WC_REM_ACCESS_ERR) {
			CHECK(!refused && !flushed);
			refused++;
		} else {
			if (wc.status != IBV_WC_WR_FLUSH_ERR)
				t_fail("write %d: %s", i, ibv_wc_status_str(wc.status));
			CHECK(refused);
			flushed++;
		}
	}
	printf("  %d writes landed before the invalidate, then %d refused, %d flushed\n",
	       ok, refused, flushed);
	CHECK_EQ(ok + refused + flushed, NW);
	if (ok < NW)
		CHECK_EQ(refused, 1);
	/* No write lands after the refusal. */
	for (int i = 0; i < NW; i++) {
		if (i < ok)
			CHECK_DATA(bbuf + win + i * 64, 64, 0x700 + (uint32_t)i, 0);
		else
			CHECK_DATA(bbuf + win + i * 64, 64, BSEED, win + i * 64);
	}
	CHECK_DATA(bbuf, win, BSEED, 0);
	CHECK_DATA(bbuf + win + NW * 64, blen - win - NW * 64, BSEED, win + NW * 64);
	if (ok == NW)		/* all landed before it: the next one is refused */
		WRITE_REFUSED(&p, win, 64, r);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
}

/* ---- 8 ------------------------------------------------------------------ */

/* A's SEND_WITH_INV of rkey on a pair is refused: IBV_WC_REM_INV_REQ_ERR at
 * A, an error completion of B's receive. */
static void send_inv_refused_at(int line, struct pair *p, uint32_t rkey)
{
	struct ibv_wc wc;

	recv_post(p, 0x8e0);
	b_reset();
	CHECK_OK(post_send_inv(p->a, 0x8e1, 64, 0x8e, rkey, NULL, 0));
	t_wait_wc_at(__FILE__, line, p->acq, &wc);
	wc_is_at(line, &wc, 0x8e1, IBV_WC_REM_INV_REQ_ERR, T_ANY_OPCODE);
	t_wait_wc_at(__FILE__, line, p->bcq, &wc);
	if (wc.wr_id != 0x8e0 || wc.status == IBV_WC_SUCCESS)
		t_fail_at(__FILE__, line, "B's receive: wr_id 0x%llx status %s, expected 0x8e0 with an error",
			  (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	printf("  SEND_WITH_INV of 0x%x refused; B's receive completed with %s\n", rkey,
	       ibv_wc_status_str(wc.status));
}
#define SEND_INV_REFUSED(p, rkey) send_inv_refused_at(__LINE__, (p), (rkey))

static void s8_send_inv(void)
{
	struct ibv_mw *mw, *t1, *other;
	struct ibv_cq *ucq;
	struct ibv_qp *ud;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct pair p, q;
	uint32_t r, ro;

	printf("  8. send with invalidate\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	r = BIND2(p.b, p.bcq, mw, bmr, bbuf + P, 2 * P, IBV_WC_SUCCESS);
	WRITE_OK(&p, P, 64, r, 0x81);
	recv_post(&p, 0x800);
	b_reset();
	CHECK_OK(post_send_inv(p.a, 0x801, 100, 0x82, r, NULL, 0));
	t_expect_wc(p.bcq, &wc, 0x800, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_INV);
	CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK_EQ(wc.invalidated_rkey, r);
	CHECK_EQ(wc.byte_len, 100);
	CHECK_EQ(wc.qp_num, p.b->qp_num);
	b_check_at(__LINE__, RECV_OFF, 100, 0x82);
	t_expect_wc(p.acq, &wc, 0x801, IBV_WC_SUCCESS, IBV_WC_SEND);
	WRITE_REFUSED(&p, P, 64, r);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));

	/* A type 1 window's key: refused, the window stays. */
	t1 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	pair_up(&p, B.pd);
	BIND1(p.b, p.bcq, t1, bmr, bbuf + P, P, WIN_ACC, IBV_WC_SUCCESS);
	SEND_INV_REFUSED(&p, t1->rkey);
	pair_down(&p);
	pair_up(&p, B.pd);
	WRITE_OK(&p, P + 8, 64, t1->rkey, 0x83);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(t1));

	/* A type 2 window bound to another QP: refused, it stays its QP's. */
	other = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	ro = BIND2(p.b, p.bcq, other, bmr, bbuf + P, P, IBV_WC_SUCCESS);
	pair_up(&q, B.pd);
	SEND_INV_REFUSED(&q, ro);
	pair_down(&q);
	WRITE_OK(&p, P + 16, 64, ro, 0x84);
	INV(p.b, p.bcq, ro, IBV_WC_SUCCESS);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(other));

	/* UD: no SEND_WITH_INV. */
	ucq = t_cq(&A, 8, NULL);
	ud = t_qp(&A, IBV_QPT_UD, ucq, ucq, NULL, 0, NULL);
	t_ud_ready(ud, 0x42);
	ah = t_ud_ah(&A, &A.gid);	/* to itself, were it sent */
	CHECK_EQ(post_send_inv(ud, 0x8d, 64, 0x85, r, ah, ud->qp_num), EINVAL);
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(ud));
	CHECK_OK(ibv_destroy_cq(ucq));
}

/* ---- 9 ------------------------------------------------------------------ */

static void s9_dereg(void)
{
	struct ibv_mw *w1, *w2, *w3, *w4;
	struct ibv_mr *m1, *m2;
	struct pair p, q;
	uint32_t r3, r4;

	printf("  9. deregistration with bound windows\n");
	m1 = t_reg(B.pd, bbuf, blen, MR_ACC);
	w1 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	w2 = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	BIND1(p.b, p.bcq, w1, m1, bbuf + P, P, WIN_ACC, IBV_WC_SUCCESS);
	BIND2(p.b, p.bcq, w2, m1, bbuf + 2 * P, P, IBV_WC_SUCCESS);
	CHECK_EQ(ibv_dereg_mr(m1), EINVAL);
	WRITE_OK(&p, 4 * P, 64, m1->rkey, 0x91);		/* the MR works */
	WRITE_OK(&p, P + 4, 64, w1->rkey, 0x92);		/* and its windows */
	WRITE_OK(&p, 2 * P + 4, 64, w2->rkey, 0x93);
	BIND1(p.b, p.bcq, w1, NULL, NULL, 0, 0, IBV_WC_SUCCESS);	/* unbind */
	CHECK_EQ(ibv_dereg_mr(m1), EINVAL);			/* w2 is still bound */
	WRITE_OK(&p, 4 * P + 64, 64, m1->rkey, 0x94);
	INV(p.b, p.bcq, w2->rkey, IBV_WC_SUCCESS);
	CHECK_OK(ibv_dereg_mr(m1));

	/* ibv_dealloc_mw of bound windows. */
	m2 = t_reg(B.pd, bbuf, blen, MR_ACC);
	w3 = mw_alloc(B.pd, IBV_MW_TYPE_2);
	w4 = mw_alloc(B.pd, IBV_MW_TYPE_1);
	r3 = BIND2(p.b, p.bcq, w3, m2, bbuf + 3 * P, P, IBV_WC_SUCCESS);
	BIND1(p.b, p.bcq, w4, m2, bbuf + 3 * P, P, WIN_ACC, IBV_WC_SUCCESS);
	r4 = w4->rkey;
	WRITE_OK(&p, 3 * P, 64, r3, 0x95);
	WRITE_OK(&p, 3 * P + 64, 64, r4, 0x96);
	CHECK_EQ(ibv_dereg_mr(m2), EINVAL);
	CHECK_OK(ibv_dealloc_mw(w3));
	CHECK_EQ(ibv_dereg_mr(m2), EINVAL);			/* w4 is still bound */
	WRITE_OK(&p, 3 * P + 128, 64, m2->rkey, 0x97);
	CHECK_OK(ibv_dealloc_mw(w4));
	WRITE_REFUSED(&p, 3 * P, 64, r3);
	pair_down(&p);
	pair_up(&q, B.pd);
	WRITE_REFUSED(&q, 3 * P, 64, r4);
	pair_down(&q);
	CHECK_OK(ibv_dereg_mr(m2));

	CHECK_OK(ibv_dealloc_mw(w1));
	CHECK_OK(ibv_dealloc_mw(w2));
}

/* ---- 10 ----------------------------------------------------------------- */

static void s10_destroy_qp(void)
{
	struct ibv_mw *mw;
	struct pair p;
	uint32_t r, r2;

	printf("  10. destroying the QP of a bound type 2 window\n");
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);
	pair_up(&p, B.pd);
	r = BIND2(p.b, p.bcq, mw, bmr, bbuf + P, P, IBV_WC_SUCCESS);
	WRITE_OK(&p, P + 10, 64, r, 0xa1);
	pair_down(&p);					/* destroy_qp: 0 */
	pair_up(&p, B.pd);
	r2 = BIND2(p.b, p.bcq, mw, bmr, bbuf + 2 * P, 2 * P, IBV_WC_SUCCESS);
	CHECK(r2 != r);
	WRITE_OK(&p, 2 * P + 10, 500, r2, 0xa2);
	READ_OK(&p, 4 * P - 200, 200, r2);
	INV(p.b, p.bcq, r2, IBV_WC_SUCCESS);
	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
}

/* ---- 11 ----------------------------------------------------------------- */

static struct ibv_qp *ex_qp(struct t_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = d->pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
		IBV_QP_EX_WITH_SEND_WITH_INV;
	qp = ibv_create_qp_ex(d->ctx, &qa);
	if (!qp)
		t_fail("ibv_create_qp_ex with BIND_MW, LOCAL_INV, SEND_WITH_INV failed");
	return qp;
}

/* Scenario 11's WRITE through the ex API (its send queues see only ibv_wr_*:
 * with UNIRDMA_DATAPATH=forward, lib/fwd.c forwards ibv_post_send but not
 * ibv_wr_*, and the two must not share a queue). The status must be st; on
 * success the data lands at B + off and nowhere else, on a refusal nothing
 * at B changes. */
static void ex_write_at(int line, struct ibv_qp_ex *ax, struct ibv_cq *acq, size_t off,
			uint32_t len, uint32_t rkey, uint32_t seed, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	b_reset();
	t_fill(abuf, len, seed, 0);
	ibv_wr_start(ax);
	ax->wr_id = 0xe0;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(ax, rkey, (uintptr_t)(bbuf + off));
	ibv_wr_set_sge(ax, amr->lkey, (uintptr_t)abuf, len);
	CHECK_OK(ibv_wr_complete(ax));
	t_wait_wc_at(__FILE__, line, acq, &wc);
	wc_is_at(line, &wc, 0xe0, st, IBV_WC_RDMA_WRITE);
	if (st == IBV_WC_SUCCESS)
		b_check_at(line, off, len, seed);
	else
		b_untouched_at(line);
}
#define EX_WRITE(ax, acq, off, len, rkey, seed, st)				\
	ex_write_at(__LINE__, (ax), (acq), (off), (len), (rkey), (seed), (st))

/* ibv_wr_bind_mw of mw with key rkey: success, IBV_WC_BIND_MW. */
static void ex_bind_at(int line, struct ibv_qp_ex *bx, struct ibv_cq *bcq, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct ibv_wc wc;

	ibv_wr_start(bx);
	bx->wr_id = 0xe1;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(bx, mw, rkey, bi);
	CHECK_OK(ibv_wr_complete(bx));
	t_wait_wc_at(__FILE__, line, bcq, &wc);
	wc_is_at(line, &wc, 0xe1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	mw->rkey = rkey;
}
#define EX_BIND(bx, bcq, mw, rkey, bi) ex_bind_at(__LINE__, (bx), (bcq), (mw), (rkey), (bi))

static void s11_ex_api(void)
{
	struct ibv_mw_bind_info bi;
	struct ibv_qp_ex *ax, *bx;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct pair p;
	uint32_t r, r2;

	printf("  11. extended API: wr_bind_mw, wr_local_inv, wr_send_inv\n");
	p.acq = t_cq(&A, 32, NULL);
	p.bcq = t_cq(&B, 32, NULL);
	p.a = ex_qp(&A, p.acq);
	p.b = ex_qp(&B, p.bcq);
	ax = ibv_qp_to_qp_ex(p.a);
	bx = ibv_qp_to_qp_ex(p.b);
	CHECK(ax && bx);
	t_rc_connect(&A, p.a, &B, p.b, NULL);
	mw = mw_alloc(B.pd, IBV_MW_TYPE_2);

	/* Bind (pages 1..2); A writes through it. */
	memset(&bi, 0, sizeof(bi));
	bi.mr = bmr;
	bi.addr = (uintptr_t)(bbuf + P);
	bi.length = 2 * P;
	bi.mw_access_flags = WIN_ACC;
	r = ibv_inc_rkey(mw->rkey);
	EX_BIND(bx, p.bcq, mw, r, &bi);
	EX_WRITE(ax, p.acq, P + 40, 300, r, 0xe2, IBV_WC_SUCCESS);

	/* Local invalidate; the window is free again: a rebind succeeds (a
	 * bound type 2 window could not be bound, scenario 4). */
	ibv_wr_start(bx);
	bx->wr_id = 0xe3;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(bx, r);
	CHECK_OK(ibv_wr_complete(bx));
	t_expect_wc(p.bcq, &wc, 0xe3, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	r2 = ibv_inc_rkey(r);
	EX_BIND(bx, p.bcq, mw, r2, &bi);
	EX_WRITE(ax, p.acq, 3 * P - 64, 64, r2, 0xe5, IBV_WC_SUCCESS);

	/* Send with invalidate from A's ex QP. */
	recv_post(&p, 0xe6);
	b_reset();
	t_fill(abuf, 64, 0xe7, 0);
	ibv_wr_start(ax);
	ax->wr_id = 0xe7;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(ax, r2);
	ibv_wr_set_sge(ax, amr->lkey, (uintptr_t)abuf, 64);
	CHECK_OK(ibv_wr_complete(ax));
	t_expect_wc(p.bcq, &wc, 0xe6, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_INV);
	CHECK_EQ(wc.invalidated_rkey, r2);
	CHECK_EQ(wc.byte_len, 64);
	b_check_at(__LINE__, RECV_OFF, 64, 0xe7);
	t_expect_wc(p.acq, &wc, 0xe7, IBV_WC_SUCCESS, IBV_WC_SEND);
	EX_WRITE(ax, p.acq, P, 64, r2, 0xe8, IBV_WC_REM_ACCESS_ERR);

	pair_down(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
}

int main(void)
{
	t_start("t_mw");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	alen = 8 * P;
	blen = 8 * P;
	CHECK(NW * 64 <= alen);
	abuf = t_map(alen);
	bbuf = t_map(blen);
	amr = t_reg(A.pd, abuf, alen, IBV_ACCESS_LOCAL_WRITE);
	bmr = t_reg(B.pd, bbuf, blen, MR_ACC);

	s1_device();
	s2_alloc();
	s3_type1();
	s4_bind_errors();
	s5_type2();
	s6_local_inv();
	s7_inv_under_traffic();
	s8_send_inv();
	s9_dereg();
	s10_destroy_qp();
	s11_ex_api();

	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_unmap(abuf, alen);
	t_unmap(bbuf, blen);
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_wqe: libFuzzer target for the engine's validation of what a tenant
 * writes into its rings: send and receive WQEs (opcodes, flags, SGEs, keys,
 * lengths, inline data, UD addresses), producer indices, CQ consumer indices
 * and doorbells, read by req_process/execute (engine/req.c), the responder
 * (engine/resp.c) and the completer (engine/comp.c).
 *
 * Every input starts from the same objects, made through ctrl_dispatch:
 *   vr0 (tenant t1), context A: the tenant under attack by the input
 *     PDs pd, pd2; memory M0 (4 pages) with MR1 [0, 8 KiB) all access,
 *     MR2 two segments (12 KiB - 1004, 1004 B) + (4 KiB, 2000 B) all access
 *     (segments are page-granular: only the first may start and only the last
 *     may end inside a page),
 *     MR3 [0, 4 KiB) remote read only, MR4 (in pd2) 12 KiB + 2100, 1000 B;
 *     M1 (1 page, never registered); the rest of the window, whose last page
 *     holds MR5: its last 4 bytes, then 4 bytes of M0 (vr0's mapping ends
 *     where vr2's begins, see harness.c); CQs scq, rcq (32 entries);
 *     RC a1 <-> b1 (vr1), RC a2 <-> a3 (a3 on the SRQ), UD u1, u2.
 *   vr1 (tenant t1), context B: MRb (2 pages, all access), RC b1 with 64
 *     receives posted, its CQ polled by the harness.
 *   vr2 (tenant t2), context C: RC c1 "connected" to a1's QPN and UD u3 with
 *     u1/u2's Q_Key, both with receives posted into MRc.
 * Then the input, a sequence of chunks cmd:u8 ... (op = cmd & 7):
 *   0 POST   ring:u8 len:u16 bytes   write one slot at the ring's producer
 *                                    index (zero-filled), prod++, doorbell
 *   1 RAW    ring:u8 off:u16 len:u16 bytes  raw bytes anywhere in the ring
 *                                    (its header and slots)
 *   2 PROD   ring:u8 delta:u32       prod += delta, doorbell
 *   3 RUN    ms:u8                   clock += ms, (cmd >> 3 & 3) + 1 engine passes
 *   4 POLL   cq:u8                   consume every CQE of scq or rcq
 *   5 BELL   word:u8 bits:u64        set doorbell bits of vr0 (any QP slot)
 *   6 MODIFY qp:u8 state:u8 dest:u8  move a QP (a1 a2 a3 u1 u2) to a state;
 *                                    RTR connects to one of 8 destinations,
 *                                    some in the other tenant
 *   7 KILL   what:u8                 a context dies, a QP is destroyed, an
 *                                    MR deregistered, M0 freed, ...
 *   rings: 0 a1.sq 1 a2.sq 2 a3.sq 3 u1.sq 4 u2.sq 5 a1.rq 6 a2.rq 7 u1.rq
 *          8 u2.rq 9 srq 10 scq 11 rcq
 * The engine then runs until it is idle.  Checked, besides ASan/UBSan/LSan
 * and the model invariants of harness.c:
 *   - canaries: the bytes of M0 outside every MR segment, M1, the window
 *     after M1, vr1's unregistered page, vr0's unused mailboxes and the arena
 *     after the last ring are unchanged: the engine wrote only registered
 *     memory and rings;
 *   - tenant t2 (vr2) is untouched: its memory, rings, mailbox and header
 *     are byte-for-byte what they were before the input.
 *
 * UNIRDMA_FUZZ_WRITE_SEEDS=DIR fuzz_wqe writes the seed corpus to DIR and exits.
 * UNIRDMA_FUZZ_TRACE=1 prints the chunks and every CQE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)
#define MR_ACCESS (ALL_ACCESS | IBV_ACCESS_MW_BIND)     /* windows may be bound to the MRs */
#define QKEY 0x11111111u
#define CANARY 0xa5
#define UNREG 0x5a
#define T2_FILL 0x77

enum { R_A1_SQ, R_A2_SQ, R_A3_SQ, R_U1_SQ, R_U2_SQ, R_A1_RQ, R_A2_RQ, R_U1_RQ, R_U2_RQ, R_SRQ,
       R_SCQ, R_RCQ, R_C1_SQ, R_C2_SQ, R_C1_RQ, R_C2_RQ, NRINGS };
/* a1..a3 RC, u1 u2 UD, c1 c2 UC (connected to each other) */
enum { Q_A1, Q_A2, Q_A3, Q_U1, Q_U2, Q_C1, Q_C2, NQPS };
static const int sq_ring[NQPS] = { R_A1_SQ, R_A2_SQ, R_A3_SQ, R_U1_SQ, R_U2_SQ, R_C1_SQ, R_C2_SQ };

struct ring {
	struct urd_vrnic *vr;
	uint8_t *base;                  /* ring header; slots follow */
	uint64_t bytes;
	uint32_t n, shift;
	int db;                         /* doorbell index of a send queue's QP, else -1 */
};

struct qpinfo {
	uint32_t handle, qpn, db;
	bool ud, uc;
	struct urd_create_qp_resp r;
};

struct mrinfo {
	uint32_t handle, lkey, rkey;
};

static struct {
	struct ring ring[NRINGS];
	struct qpinfo qp[NQPS], b1, c1, u3;
	struct mrinfo mr1, mr2, mr3, mr4, mr5, mrb, mrc;
	uint32_t pd, pd2, scq, rcq, srq, srq_num;
	uint32_t mw1, mw2;              /* R_Keys of a type 1 and a type 2 window in pd */
	uint8_t *m0, *m1, *mb, *mb_unreg, *mc;    /* daemon addresses of the memory */
	uint8_t *mend;                  /* the last page of vr0's memory window */
	bool vr2_follows;               /* vr2's mapping starts where vr0's ends */
	struct ring b1rq, bcq, c1rq, u3rq, ccq;
	uint8_t *t2_snap;               /* vr2's bytes before the input */
	bool a_alive, b_alive, c_alive, m0_kept;
	uint64_t arena_end[FZ_NVR];
} S;

static bool trace;

/* -------------------------------------------------------------- setup */

static void must(int st, const char *what)
{
	if (st)
		fz_fail("setup: %s failed: %s", what, strerror(-st));
}

static uint32_t alloc_pd(struct urd_vrnic *vr)
{
	struct urd_msg_hdr h;
	struct urd_handle_resp r;

	must(fz_req(vr, 0, URD_OP_ALLOC_PD, &h, sizeof(h), &r), "ALLOC_PD");
	return r.handle;
}

static uint8_t *mem_alloc(struct urd_vrnic *vr, uint64_t len)
{
	struct urd_mem_req q = { .len = len };
	struct urd_mem_resp r;

	must(fz_req(vr, 0, URD_OP_MEM_ALLOC, &q, sizeof(q), &r), "MEM_ALLOC");
	return vr->map + URD_REGION_CTRL_SIZE + r.off;
}

static struct mrinfo reg_mr(struct urd_vrnic *vr, uint32_t pd, uint32_t access, uint64_t iova,
			    uint32_t nsegs, const struct urd_mr_seg *segs)
{
	uint8_t buf[sizeof(struct urd_reg_mr_req) + 4 * sizeof(struct urd_mr_seg)];
	struct urd_reg_mr_req *q = (struct urd_reg_mr_req *)buf;
	struct urd_reg_mr_resp r;
	struct mrinfo mi;

	memset(buf, 0, sizeof(buf));
	q->pd = pd;
	q->access = access;
	q->iova = iova;
	q->nsegs = nsegs;
	for (uint32_t i = 0; i < nsegs; i++) {
		q->segs[i] = segs[i];
		q->length += segs[i].len;
	}
	must(fz_req(vr, 0, URD_OP_REG_MR, q, (uint32_t)(sizeof(*q) + nsegs * sizeof(*segs)), &r), "REG_MR");
	mi.handle = r.handle;
	mi.lkey = r.lkey;
	mi.rkey = r.rkey;
	return mi;
}

static void ring_at(struct ring *rg, struct urd_vrnic *vr, uint64_t off, uint32_t n, uint32_t shift, int db)
{
	rg->vr = vr;
	rg->base = vr->map + off;
	rg->n = n;
	rg->shift = shift;
	rg->bytes = URD_RING_HDR_SIZE + ((uint64_t)n << shift);
	rg->db = db;
}

static uint32_t create_cq(struct urd_vrnic *vr, uint32_t cqe, struct ring *rg)
{
	struct urd_create_cq_req q = { .cqe = cqe };
	struct urd_create_cq_resp r;

	must(fz_req(vr, 0, URD_OP_CREATE_CQ, &q, sizeof(q), &r), "CREATE_CQ");
	ring_at(rg, vr, r.ring_off, r.nentries, 6, -1);
	return r.handle;
}

static void create_qp(struct urd_vrnic *vr, struct qpinfo *qi, uint32_t type, uint32_t pd, uint32_t scq,
		      uint32_t rcq, uint32_t srq, uint32_t recv_wr, uint32_t recv_sge)
{
	struct urd_create_qp_req q;

	memset(&q, 0, sizeof(q));
	q.pd = pd;
	q.send_cq = scq;
	q.recv_cq = rcq;
	q.srq = srq;
	q.qp_type = type;
	q.cap = (struct urd_qp_cap){ .max_send_wr = 16, .max_recv_wr = recv_wr, .max_send_sge = 4,
				     .max_recv_sge = recv_sge, .max_inline_data = 64 };
	must(fz_req(vr, 0, URD_OP_CREATE_QP, &q, sizeof(q), &qi->r), "CREATE_QP");
	qi->handle = qi->r.handle;
	qi->qpn = qi->r.qpn;
	qi->db = qi->r.db_index;
	qi->ud = type == IBV_QPT_UD;
	qi->uc = type == IBV_QPT_UC;
}

static void gid_of(uint8_t gid[16], uint8_t last)
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = last;
}

/* The modify requests a verbs application makes for each state. */
static int modify(struct urd_vrnic *vr, const struct qpinfo *qi, uint32_t state, uint32_t dest_qpn,
		  uint8_t dest_ip, bool global)
{
	struct urd_modify_qp_req q;
	struct urd_qp_attr *at = &q.attr;
	uint32_t mask = IBV_QP_STATE;

	memset(&q, 0, sizeof(q));
	q.handle = qi->handle;
	at->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		at->port_num = 1;
		at->qkey = QKEY;
		at->qp_access_flags = ALL_ACCESS;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | (qi->ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
		break;
	case IBV_QPS_RTR:
		if (qi->ud)
			break;
		at->path_mtu = IBV_MTU_1024;
		at->dest_qp_num = dest_qpn;
		at->rq_psn = 1;
		at->max_dest_rd_atomic = 4;
		at->min_rnr_timer = 1;
		at->ah.is_global = global;
		at->ah.hop_limit = 1;
		at->ah.port_num = 1;
		gid_of(at->ah.dgid, dest_ip);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (!qi->uc)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTS:
		at->sq_psn = 1;
		mask |= IBV_QP_SQ_PSN;
		if (qi->ud || qi->uc)
			break;
		at->timeout = 1;
		at->retry_cnt = 2;
		at->rnr_retry = 2;
		at->max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	default:
		break;
	}
	q.attr_mask = mask;
	return fz_req(vr, 0, URD_OP_MODIFY_QP, &q, sizeof(q), NULL);
}

static void connect(struct urd_vrnic *vr, const struct qpinfo *qi, uint32_t dest_qpn, uint8_t dest_ip)
{
	must(modify(vr, qi, IBV_QPS_INIT, 0, 0, false), "modify INIT");
	must(modify(vr, qi, IBV_QPS_RTR, dest_qpn, dest_ip, true), "modify RTR");
	must(modify(vr, qi, IBV_QPS_RTS, 0, 0, false), "modify RTS");
}

static void ring_prod_add(struct ring *rg, uint32_t delta)
{
	struct urd_ring_hdr *h = (struct urd_ring_hdr *)rg->base;

	__atomic_store_n(&h->prod, h->prod + delta, __ATOMIC_RELEASE);
}

static uint8_t *ring_slot(struct ring *rg, uint32_t idx)
{
	return rg->base + URD_RING_HDR_SIZE + ((size_t)(idx & (rg->n - 1)) << rg->shift);
}

/* Receives written by the harness (the well-behaved tenants). */
static void post_recvs(struct ring *rg, uint32_t count, uint32_t lkey, uint64_t addr, uint32_t len)
{
	struct urd_ring_hdr *h = (struct urd_ring_hdr *)rg->base;

	for (uint32_t i = 0; i < count; i++) {
		uint8_t *s = ring_slot(rg, h->prod + i);
		struct urd_recv_wqe w = { .wr_id = 0xb0b0000 + i, .num_sge = 1 };
		struct urd_sge sg = { .addr = addr + (i % 16) * len, .length = len, .lkey = lkey };

		memcpy(s, &w, sizeof(w));
		memcpy(s + sizeof(w), &sg, sizeof(sg));
	}
	ring_prod_add(rg, count);
}

static void doorbell(struct urd_vrnic *vr, uint32_t db)
{
	__atomic_fetch_or(&vr->db->bits[db / 64], 1ull << (db % 64), __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&vr->db->summary, 1ull << (db / 64), __ATOMIC_SEQ_CST);
}

static void setup(void)
{
	struct urd_vrnic *va = fz_vr[0], *vb = fz_vr[1], *vc = fz_vr[2];
	struct urd_open_ctx_req open;

	memset(&S, 0, sizeof(S));
	memset(&open, 0, sizeof(open));
	for (int i = 0; i < FZ_NVR; i++)
		must(fz_req(fz_vr[i], 0, URD_OP_OPEN_CTX, &open, sizeof(open), NULL), "OPEN_CTX");

	/* vr0, context A */
	S.pd = alloc_pd(va);
	S.pd2 = alloc_pd(va);
	S.m0 = mem_alloc(va, 16384);
	S.m1 = mem_alloc(va, 4096);
	/* the rest of the window (never touched: the file is sparse), so that
	 * the last page can be registered too */
	mem_alloc(va, va->memwin.size - 20480 - 4096);
	S.mend = mem_alloc(va, 4096);
	S.vr2_follows = va->map + va->map_size == vc->map;
	{
		struct urd_mr_seg s1 = { 0, 8192 };
		struct urd_mr_seg s2[2] = { { 12288 - 1004, 1004 }, { 4096, 2000 } };
		struct urd_mr_seg s3 = { 0, 4096 };
		struct urd_mr_seg s4 = { 12288 + 2100, 1000 };

		S.mr1 = reg_mr(va, S.pd, MR_ACCESS, 0x10000, 1, &s1);
		S.mr2 = reg_mr(va, S.pd, MR_ACCESS, 0x20000, 2, s2);
		S.mr3 = reg_mr(va, S.pd, IBV_ACCESS_REMOTE_READ, 0x30000, 1, &s3);
		S.mr4 = reg_mr(va, S.pd2, MR_ACCESS, 0x40000, 1, &s4);
		/* MR5: the last 4 bytes of the window, then 4 bytes of M0 */
		{
			struct urd_mr_seg s5[2] = { { va->memwin.size - 4, 4 }, { 0, 4 } };

			S.mr5 = reg_mr(va, S.pd, MR_ACCESS, 0x60000, 2, s5);
		}
	}
	for (uint32_t i = 0; i < 16384; i++)
		S.m0[i] = (uint8_t)i;
	/* every byte of M0 outside the MR segments is a canary */
	memset(S.m0 + 8192, CANARY, 4096 - 1004);
	memset(S.m0 + 12288, CANARY, 2100);
	memset(S.m0 + 12288 + 2100 + 1000, CANARY, 4096 - 2100 - 1000);
	memset(S.m1, UNREG, 4096);
	S.scq = create_cq(va, 32, &S.ring[R_SCQ]);
	S.rcq = create_cq(va, 32, &S.ring[R_RCQ]);
	{
		struct urd_create_srq_req q = { .pd = S.pd, .max_wr = 16, .max_sge = 4, .srq_limit = 2 };
		struct urd_srq_resp r;

		must(fz_req(va, 0, URD_OP_CREATE_SRQ, &q, sizeof(q), &r), "CREATE_SRQ");
		S.srq = r.handle;
		S.srq_num = r.srq_num;
		ring_at(&S.ring[R_SRQ], va, r.ring_off, r.nentries, r.wqe_shift, -1);
	}
	create_qp(va, &S.qp[Q_A1], IBV_QPT_RC, S.pd, S.scq, S.rcq, 0, 16, 4);
	create_qp(va, &S.qp[Q_A2], IBV_QPT_RC, S.pd, S.scq, S.rcq, 0, 16, 4);
	create_qp(va, &S.qp[Q_A3], IBV_QPT_RC, S.pd, S.scq, S.rcq, S.srq, 0, 0);
	create_qp(va, &S.qp[Q_U1], IBV_QPT_UD, S.pd, S.scq, S.rcq, 0, 16, 4);
	create_qp(va, &S.qp[Q_U2], IBV_QPT_UD, S.pd, S.scq, S.rcq, 0, 16, 4);
	create_qp(va, &S.qp[Q_C1], IBV_QPT_UC, S.pd, S.scq, S.rcq, 0, 16, 4);
	create_qp(va, &S.qp[Q_C2], IBV_QPT_UC, S.pd, S.scq, S.rcq, 0, 16, 4);
	for (int i = 0; i < NQPS; i++) {
		const struct urd_create_qp_resp *r = &S.qp[i].r;

		ring_at(&S.ring[sq_ring[i]], va, r->sq_off, r->sq_n, r->sq_wqe_shift, (int)r->db_index);
	}
	ring_at(&S.ring[R_C1_RQ], va, S.qp[Q_C1].r.rq_off, S.qp[Q_C1].r.rq_n, S.qp[Q_C1].r.rq_wqe_shift, -1);
	ring_at(&S.ring[R_C2_RQ], va, S.qp[Q_C2].r.rq_off, S.qp[Q_C2].r.rq_n, S.qp[Q_C2].r.rq_wqe_shift, -1);
	ring_at(&S.ring[R_A1_RQ], va, S.qp[Q_A1].r.rq_off, S.qp[Q_A1].r.rq_n, S.qp[Q_A1].r.rq_wqe_shift, -1);
	ring_at(&S.ring[R_A2_RQ], va, S.qp[Q_A2].r.rq_off, S.qp[Q_A2].r.rq_n, S.qp[Q_A2].r.rq_wqe_shift, -1);
	ring_at(&S.ring[R_U1_RQ], va, S.qp[Q_U1].r.rq_off, S.qp[Q_U1].r.rq_n, S.qp[Q_U1].r.rq_wqe_shift, -1);
	ring_at(&S.ring[R_U2_RQ], va, S.qp[Q_U2].r.rq_off, S.qp[Q_U2].r.rq_n, S.qp[Q_U2].r.rq_wqe_shift, -1);

	/* vr1, context B: the peer of a1 in the same tenant */
	{
		uint32_t pd = alloc_pd(vb), cq;
		struct urd_mr_seg s = { 0, 8192 };

		S.mb = mem_alloc(vb, 8192);
		S.mb_unreg = mem_alloc(vb, 4096);
		S.mrb = reg_mr(vb, pd, ALL_ACCESS, 0x50000, 1, &s);
		memset(S.mb_unreg, UNREG, 4096);
		cq = create_cq(vb, 256, &S.bcq);
		create_qp(vb, &S.b1, IBV_QPT_RC, pd, cq, cq, 0, 64, 1);
		ring_at(&S.b1rq, vb, S.b1.r.rq_off, S.b1.r.rq_n, S.b1.r.rq_wqe_shift, -1);
		post_recvs(&S.b1rq, 64, S.mrb.lkey, 0x50000, 512);
	}
	/* vr2, context C: tenant t2, whose bytes must never change */
	{
		uint32_t pd = alloc_pd(vc), cq;
		struct urd_mr_seg s = { 0, 4096 };

		S.mc = mem_alloc(vc, 4096);
		S.mrc = reg_mr(vc, pd, ALL_ACCESS, 0x10000, 1, &s);
		memset(S.mc, T2_FILL, 4096);
		cq = create_cq(vc, 64, &S.ccq);
		create_qp(vc, &S.c1, IBV_QPT_RC, pd, cq, cq, 0, 16, 1);
		create_qp(vc, &S.u3, IBV_QPT_UD, pd, cq, cq, 0, 16, 1);
		ring_at(&S.c1rq, vc, S.c1.r.rq_off, S.c1.r.rq_n, S.c1.r.rq_wqe_shift, -1);
		ring_at(&S.u3rq, vc, S.u3.r.rq_off, S.u3.r.rq_n, S.u3.r.rq_wqe_shift, -1);
		post_recvs(&S.c1rq, 16, S.mrc.lkey, 0x10000, 256);
		post_recvs(&S.u3rq, 16, S.mrc.lkey, 0x10000, 256);
	}

	connect(va, &S.qp[Q_A1], S.b1.qpn, 2);
	connect(vb, &S.b1, S.qp[Q_A1].qpn, 1);
	connect(va, &S.qp[Q_A2], S.qp[Q_A3].qpn, 1);
	connect(va, &S.qp[Q_A3], S.qp[Q_A2].qpn, 1);
	connect(va, &S.qp[Q_U1], 0, 0);
	connect(va, &S.qp[Q_U2], 0, 0);
	connect(va, &S.qp[Q_C1], S.qp[Q_C2].qpn, 1);
	connect(va, &S.qp[Q_C2], S.qp[Q_C1].qpn, 1);
	connect(vc, &S.c1, S.qp[Q_A1].qpn, 1);   /* t2 claims a1: must not matter */
	connect(vc, &S.u3, 0, 0);
	S.a_alive = S.b_alive = S.c_alive = S.m0_kept = true;
	/* memory windows in vr0's PD (allocated last: the keys drawn before
	 * stay what older corpus files name) */
	{
		struct urd_alloc_mw_req q = { .pd = S.pd, .type = IBV_MW_TYPE_1 };
		struct urd_handle_resp r;

		must(fz_req(va, 0, URD_OP_ALLOC_MW, &q, sizeof(q), &r), "ALLOC_MW 1");
		S.mw1 = r.reserved;
		q.type = IBV_MW_TYPE_2;
		must(fz_req(va, 0, URD_OP_ALLOC_MW, &q, sizeof(q), &r), "ALLOC_MW 2");
		S.mw2 = r.reserved;
	}

	for (int i = 0; i < FZ_NVR; i++) {
		struct urd_vrnic *vr = fz_vr[i];

		const struct urd_extent *e = alloc_first_free(&vr->arena);

		S.arena_end[i] = e ? e->off : URD_REGION_CTRL_SIZE;
	}
	/* tenant t2's bytes: memory, every ring, its mailbox */
	S.t2_snap = malloc(4096 + URD_SLOT_HDR_SIZE + (S.arena_end[2] - URD_ARENA_OFF) + URD_HDR_SIZE);
	if (!S.t2_snap)
		abort();
	memcpy(S.t2_snap + 4096 + URD_SLOT_HDR_SIZE + (S.arena_end[2] - URD_ARENA_OFF), vc->map, URD_HDR_SIZE);
	memcpy(S.t2_snap, S.mc, 4096);
	memcpy(S.t2_snap + 4096, vc->map + urd_slot_off(0), URD_SLOT_HDR_SIZE);
	memcpy(S.t2_snap + 4096 + URD_SLOT_HDR_SIZE, vc->map + URD_ARENA_OFF, S.arena_end[2] - URD_ARENA_OFF);
}

/* ------------------------------------------------------------- checks */

static void expect_bytes(const char *what, const uint8_t *p, uint8_t v, size_t n)
{
	size_t i = fz_find_not(p, v, n);

	if (i < n)
		fz_fail("%s: byte %zu is %#x, expected %#x: the engine wrote outside registered memory",
			what, i, p[i], v);
}

static void check_canaries(void)
{
	struct urd_vrnic *va = fz_vr[0], *vc = fz_vr[2];
	uint8_t *win0 = va->map + URD_REGION_CTRL_SIZE;

	if (S.a_alive && S.m0_kept) {
		expect_bytes("M0 before MR2", S.m0 + 8192, CANARY, 4096 - 1004);
		expect_bytes("M0 before MR4", S.m0 + 12288, CANARY, 2100);
		expect_bytes("M0 after MR4", S.m0 + 12288 + 2100 + 1000, CANARY, 4096 - 2100 - 1000);
		expect_bytes("M1 (never registered)", S.m1, UNREG, 4096);
	}
	expect_bytes("vr0 memory window after the allocations", win0 + 20480, 0, 8192);
	if (S.b_alive)
		expect_bytes("vr1 unregistered page", S.mb_unreg, UNREG, 4096);
	for (uint32_t s = 1; s < URD_MAX_CTX; s++)
		if (fz_find_not(va->map + urd_slot_off(s), 0, URD_SLOT_HDR_SIZE) < URD_SLOT_HDR_SIZE)
			fz_fail("vr0: unused mailbox %u was written", s);
	expect_bytes("vr0 arena after the last ring", va->map + S.arena_end[0], 0, 65536);
	if (S.c_alive) {
		if (fz_find_diff(S.t2_snap, S.mc, 4096) < 4096)
			fz_fail("tenant t2's memory changed");
		if (fz_find_diff(S.t2_snap + 4096, vc->map + urd_slot_off(0), URD_SLOT_HDR_SIZE) <
		    URD_SLOT_HDR_SIZE)
			fz_fail("tenant t2's mailbox changed (an event reached it)");
		if (fz_find_diff(S.t2_snap + 4096 + URD_SLOT_HDR_SIZE, vc->map + URD_ARENA_OFF,
				 S.arena_end[2] - URD_ARENA_OFF) < S.arena_end[2] - URD_ARENA_OFF)
			fz_fail("tenant t2's rings changed (a receive was consumed or a CQE written)");
		if (fz_find_diff(S.t2_snap + 4096 + URD_SLOT_HDR_SIZE + (S.arena_end[2] - URD_ARENA_OFF),
				 vc->map, URD_HDR_SIZE) < URD_HDR_SIZE)
			fz_fail("tenant t2's region header changed%s", S.vr2_follows ?
				" (its mapping starts where vr0's ends: a write past the end of vr0's window)" : "");
	}
}

/* Clear what a previous input left in the parts of the regions the checks
 * read (the engine and the input wrote there; the daemon does not clear
 * them itself). */
static void clean_regions(void)
{
	for (int i = 0; i < FZ_NVR; i++) {
		struct urd_vrnic *vr = fz_vr[i];

		for (uint32_t s = 0; s < URD_MAX_CTX; s++)
			memset(vr->map + urd_slot_off(s), 0, URD_SLOT_HDR_SIZE);
		memset(vr->map + URD_DB_OFF, 0, URD_DB_SIZE);
	}
	memset(fz_vr[0]->map + URD_REGION_CTRL_SIZE + 20480, 0, 8192);
}

/* ---------------------------------------------------------------- run */

struct cursor {
	const uint8_t *p;
	size_t n;
};

static bool take(struct cursor *c, void *out, size_t len)
{
	if (c->n < len)
		return false;
	memcpy(out, c->p, len);
	c->p += len;
	c->n -= len;
	return true;
}

static void poll_all(struct ring *rg)
{
	struct urd_ring_hdr *h = (struct urd_ring_hdr *)rg->base;
	uint32_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);

	if (trace)
		for (uint32_t i = h->cons; i != prod && prod - i <= rg->n; i++) {
			const struct urd_cqe *c = (const struct urd_cqe *)ring_slot(rg, i);

			fprintf(stderr, "  cqe qp %#x wr_id %#llx status %u opcode %u len %u\n", c->qp_num,
				(unsigned long long)c->wr_id, c->status, c->opcode, c->byte_len);
		}
	__atomic_store_n(&h->cons, prod, __ATOMIC_RELEASE);
}

static void do_kill(uint8_t what)
{
	struct urd_vrnic *va = fz_vr[0];
	struct urd_handle_req q;
	uint32_t sel = what >> 3;

	memset(&q, 0, sizeof(q));
	switch (what & 7) {
	case 0:
		fz_ctx_died(fz_vr[1], 0);
		S.b_alive = false;
		break;
	case 1:
		q.handle = S.qp[sel % NQPS].handle;
		fz_req(va, 0, URD_OP_DESTROY_QP, &q, sizeof(q), NULL);
		break;
	case 2: {
		const struct mrinfo *m[4] = { &S.mr1, &S.mr2, &S.mr3, &S.mr4 };

		q.handle = m[sel % 4]->handle;
		fz_req(va, 0, URD_OP_DEREG_MR, &q, sizeof(q), NULL);
		break;
	}
	case 3: {
		struct urd_mem_req mq = { .off = 0, .len = 16384 };

		/* MRs keep the pages alive, but the canaries may go with the last one */
		fz_req(va, 0, URD_OP_MEM_FREE, &mq, sizeof(mq), NULL);
		S.m0_kept = false;
		break;
	}
	case 4:
		fz_ctx_died(va, 0);
		S.a_alive = false;
		break;
	case 5:
		fz_ctx_died(fz_vr[2], 0);
		S.c_alive = false;
		break;
	case 6:
		q.handle = sel & 1 ? S.rcq : S.scq;
		fz_req(va, 0, URD_OP_DESTROY_CQ, &q, sizeof(q), NULL);   /* busy */
		q.handle = S.srq;
		fz_req(va, 0, URD_OP_DESTROY_SRQ, &q, sizeof(q), NULL);
		break;
	default: {
		struct urd_qp_attr at;
		struct urd_modify_qp_req mq;

		/* an attribute-only change under traffic: rnr/retry counters */
		memset(&mq, 0, sizeof(mq));
		mq.handle = S.qp[sel % NQPS].handle;
		memset(&at, 0, sizeof(at));
		mq.attr_mask = IBV_QP_MIN_RNR_TIMER;
		mq.attr.min_rnr_timer = (uint8_t)(sel & 31);
		fz_req(va, 0, URD_OP_MODIFY_QP, &mq, sizeof(mq), NULL);
		break;
	}
	}
}

static const uint32_t states[6] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
				     IBV_QPS_ERR };

static void run_input(const uint8_t *data, size_t size)
{
	struct cursor c = { data, size };
	uint64_t now = 1000000000000ull, next;
	uint8_t cmd, slotbuf[1024];
	struct urd_vrnic *va;

	fz_begin();
	clean_regions();
	setup();
	va = fz_vr[0];
	while (take(&c, &cmd, 1)) {
		uint8_t ri = 0;
		struct ring *rg;

		if ((cmd & 7) <= 2 || (cmd & 7) == 4) {
			if (!take(&c, &ri, 1))
				break;
		}
		rg = &S.ring[ri % NRINGS];
		switch (cmd & 7) {
		case 0: {       /* POST */
			struct urd_ring_hdr *h = (struct urd_ring_hdr *)rg->base;
			size_t slot = (size_t)1 << rg->shift;
			uint16_t len;

			if (!take(&c, &len, 2))
				goto out;
			if (len > c.n)
				len = (uint16_t)c.n;
			memset(slotbuf, 0, sizeof(slotbuf));
			take(&c, slotbuf, len < slot ? len : slot);
			if (len > slot) {       /* the rest is dropped */
				c.p += len - slot;
				c.n -= len - slot;
			}
			memcpy(ring_slot(rg, h->prod), slotbuf, slot);
			ring_prod_add(rg, 1);
			if (rg->db >= 0)
				doorbell(va, (uint32_t)rg->db);
			if (trace)
				fprintf(stderr, "POST ring %u len %u\n", ri % NRINGS, len);
			break;
		}
		case 1: {       /* RAW */
			uint16_t off, len;
			uint64_t o;

			if (!take(&c, &off, 2) || !take(&c, &len, 2))
				goto out;
			if (len > c.n)
				len = (uint16_t)c.n;
			o = off % rg->bytes;
			if (o + len > rg->bytes) {
				c.p += len - (rg->bytes - o);
				c.n -= len - (rg->bytes - o);
				len = (uint16_t)(rg->bytes - o);
			}
			take(&c, rg->base + o, len);
			break;
		}
		case 2: {       /* PROD */
			uint32_t delta;

			if (!take(&c, &delta, 4))
				goto out;
			ring_prod_add(rg, delta);
			if (rg->db >= 0)
				doorbell(va, (uint32_t)rg->db);
			break;
		}
		case 3: {       /* RUN */
			uint8_t ms;

			if (!take(&c, &ms, 1))
				goto out;
			now += (uint64_t)ms * 1000000;
			for (uint32_t i = 0; i <= ((cmd >> 3) & 3u); i++)
				fz_engine_pass(now, &next);
			poll_all(&S.bcq);
			if (trace)
				fprintf(stderr, "RUN +%u ms\n", ms);
			break;
		}
		case 4:         /* POLL */
			poll_all(&S.ring[ri & 1 ? R_RCQ : R_SCQ]);
			break;
		case 5: {       /* BELL */
			uint8_t w;
			uint64_t bits;

			if (!take(&c, &w, 1) || !take(&c, &bits, 8))
				goto out;
			__atomic_fetch_or(&va->db->bits[w % 64], bits, __ATOMIC_SEQ_CST);
			__atomic_fetch_or(&va->db->summary, 1ull << (w % 64), __ATOMIC_SEQ_CST);
			break;
		}
		case 6: {       /* MODIFY */
			uint8_t q, st, dest;
			uint32_t dq[8] = { S.b1.qpn, S.qp[Q_A1].qpn, S.qp[Q_A2].qpn, S.qp[Q_A3].qpn, S.c1.qpn,
					   S.qp[Q_U1].qpn, 0xffffff, S.qp[Q_C2].qpn };
			int r;

			if (!take(&c, &q, 1) || !take(&c, &st, 1) || !take(&c, &dest, 1))
				goto out;
			/* dest bit 3: no GRH; 7: right QPN, wrong GID */
			r = modify(va, &S.qp[q % NQPS], states[st % 6], dq[dest & 7],
				   (dest & 7) == 7 ? 9 : (dest & 7) == 0 ? 2 : 1, !(dest & 8));
			if (trace)
				fprintf(stderr, "MODIFY qp %u -> %u dest %u: %d\n", q % NQPS, states[st % 6], dest, r);
			break;
		}
		default: {      /* KILL */
			uint8_t what;

			if (!take(&c, &what, 1))
				goto out;
			do_kill(what);
			if (trace)
				fprintf(stderr, "KILL %u\n", what);
			break;
		}
		}
	}
out:
	fz_engine_drain(&now, 64);
	if (trace) {
		poll_all(&S.ring[R_SCQ]);
		poll_all(&S.ring[R_RCQ]);
	}
	fz_check();
	check_canaries();
	free(S.t2_snap);
	fz_end();
}

/* ---------------------------------------------------------------- seeds */

static void put_post(struct fz_buf *b, int ring, const void *wqe, size_t len)
{
	fz_put8(b, 0);
	fz_put8(b, (uint8_t)ring);
	fz_put16(b, (uint16_t)len);
	fz_put(b, wqe, len);
}

static void put_send(struct fz_buf *b, int ring, uint8_t opcode, uint8_t flags, uint64_t wr_id,
		     const struct urd_sge *sg, uint16_t nsge, uint32_t rkey, uint64_t raddr,
		     uint64_t cmp, uint64_t swap)
{
	uint8_t buf[URD_SEND_WQE_HDR + 4 * sizeof(struct urd_sge)];
	struct urd_send_wqe *w = (struct urd_send_wqe *)buf;

	memset(buf, 0, sizeof(buf));
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->flags = flags;
	w->num_sge = nsge;
	w->imm_data = 0x12345678;
	w->rkey = rkey;
	w->remote_addr = raddr;
	w->compare_add = cmp;
	w->swap = swap;
	memcpy(buf + URD_SEND_WQE_HDR, sg, nsge * sizeof(*sg));
	put_post(b, ring, buf, URD_SEND_WQE_HDR + nsge * sizeof(*sg));
}

static void put_bind(struct fz_buf *b, int ring, uint64_t wr_id, uint32_t mw_rkey, uint32_t new_rkey,
		     uint32_t mr_lkey, uint64_t addr, uint64_t len, uint32_t access)
{
	struct urd_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = wr_id;
	w.opcode = URD_WR_BIND_MW;
	w.flags = URD_WQE_SIGNALED;
	w.bind_mw_rkey = mw_rkey;
	w.rkey = new_rkey;
	w.bind_mr_lkey = mr_lkey;
	w.remote_addr = addr;
	w.compare_add = len;
	w.bind_access = access;
	put_post(b, ring, &w, sizeof(w));
}

static void put_inv(struct fz_buf *b, int ring, uint8_t opcode, uint64_t wr_id, uint32_t rkey,
		    const struct urd_sge *sg, uint16_t nsge)
{
	uint8_t buf[URD_SEND_WQE_HDR + 4 * sizeof(struct urd_sge)];
	struct urd_send_wqe *w = (struct urd_send_wqe *)buf;

	memset(buf, 0, sizeof(buf));
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->flags = URD_WQE_SIGNALED;
	w->num_sge = nsge;
	w->invalidate_rkey = rkey;
	if (nsge)
		memcpy(buf + URD_SEND_WQE_HDR, sg, nsge * sizeof(*sg));
	put_post(b, ring, buf, URD_SEND_WQE_HDR + nsge * sizeof(*sg));
}

static void put_inline(struct fz_buf *b, int ring, uint8_t opcode, uint32_t inline_len, uint32_t rkey,
		       uint64_t raddr)
{
	uint8_t buf[URD_SEND_WQE_HDR + 64];
	struct urd_send_wqe *w = (struct urd_send_wqe *)buf;

	memset(buf, 0, sizeof(buf));
	w->wr_id = 0x1111;
	w->opcode = opcode;
	w->flags = URD_WQE_SIGNALED | URD_WQE_INLINE;
	w->inline_len = inline_len;
	w->rkey = rkey;
	w->remote_addr = raddr;
	for (int i = 0; i < 64; i++)
		buf[URD_SEND_WQE_HDR + i] = (uint8_t)(0xc0 + i);
	put_post(b, ring, buf, sizeof(buf));
}

static void put_ud(struct fz_buf *b, int ring, uint32_t qpn, uint32_t qkey, bool global, uint8_t ip,
		   const struct urd_sge *sg, uint16_t nsge)
{
	uint8_t buf[URD_SEND_WQE_HDR + 4 * sizeof(struct urd_sge)];
	struct urd_send_wqe *w = (struct urd_send_wqe *)buf;

	memset(buf, 0, sizeof(buf));
	w->wr_id = 0xdd;
	w->opcode = URD_WR_SEND;
	w->flags = URD_WQE_SIGNALED;
	w->num_sge = nsge;
	w->remote_qpn = qpn;
	w->remote_qkey = qkey;
	w->is_global = global;
	w->port_num = 1;
	gid_of(w->dgid, ip);
	memcpy(buf + URD_SEND_WQE_HDR, sg, nsge * sizeof(*sg));
	put_post(b, ring, buf, URD_SEND_WQE_HDR + nsge * sizeof(*sg));
}

static void put_recv(struct fz_buf *b, int ring, const struct urd_sge *sg, uint32_t nsge)
{
	uint8_t buf[sizeof(struct urd_recv_wqe) + 4 * sizeof(struct urd_sge)];
	struct urd_recv_wqe *w = (struct urd_recv_wqe *)buf;

	memset(buf, 0, sizeof(buf));
	w->wr_id = 0xee;
	w->num_sge = nsge;
	memcpy(buf + sizeof(*w), sg, nsge * sizeof(*sg));
	put_post(b, ring, buf, sizeof(*w) + nsge * sizeof(*sg));
}

static void put_run(struct fz_buf *b, uint8_t ms)
{
	fz_put8(b, 3 | 3 << 3);
	fz_put8(b, ms);
}

static void put_poll(struct fz_buf *b)
{
	fz_put8(b, 4);
	fz_put8(b, 0);
	fz_put8(b, 4);
	fz_put8(b, 1);
}

static void put_modify(struct fz_buf *b, uint8_t qp, uint8_t st, uint8_t dest)
{
	fz_put8(b, 6);
	fz_put8(b, qp);
	fz_put8(b, st);
	fz_put8(b, dest);
}

static void write_seeds(const char *dir)
{
	struct fz_buf b = { 0 };
	uint32_t l1, l2, l3, l4, rb;
	struct urd_sge sg[4];

	/* the keys and QPNs every input sees */
	fz_begin();
	clean_regions();
	setup();
	l1 = S.mr1.lkey;
	l2 = S.mr2.lkey;
	l3 = S.mr3.lkey;
	l4 = S.mr4.lkey;
	rb = S.mrb.rkey;

#define SEED(name) do { fz_seed_write(dir, name, b.p, b.len); b.len = 0; } while (0)
#define SG(i, a, l, k) (sg[i] = (struct urd_sge){ .addr = (a), .length = (l), .lkey = (k) })

	/* every opcode from a1 to b1 (vr1), signaled, multiple SGEs */
	SG(0, 0x10000, 100, l1); SG(1, 0x10000 + 5000, 300, l1); SG(2, 0x20000 + 1000, 10, l2);
	put_send(&b, R_A1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 1, sg, 3, 0, 0, 0, 0);
	put_send(&b, R_A1_SQ, URD_WR_SEND_WITH_IMM, URD_WQE_SIGNALED | URD_WQE_SOLICITED, 2, sg, 2, 0, 0, 0, 0);
	put_send(&b, R_A1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 3, sg, 3, rb, 0x50000 + 100, 0, 0);
	put_send(&b, R_A1_SQ, URD_WR_RDMA_WRITE_WITH_IMM, 0, 4, sg, 1, rb, 0x50000 + 4000, 0, 0);
	put_send(&b, R_A1_SQ, URD_WR_RDMA_READ, URD_WQE_SIGNALED, 5, sg, 3, rb, 0x50000, 0, 0);
	SG(0, 0x10000 + 16, 8, l1);
	put_send(&b, R_A1_SQ, URD_WR_ATOMIC_CMP_AND_SWP, URD_WQE_SIGNALED, 6, sg, 1, rb, 0x50000 + 64, 0, 7);
	put_send(&b, R_A1_SQ, URD_WR_ATOMIC_FETCH_AND_ADD, URD_WQE_SIGNALED | URD_WQE_FENCE, 7, sg, 1, rb,
		 0x50000 + 64, 5, 0);
	put_run(&b, 1);
	put_poll(&b);
	SEED("rc_opcodes");

	put_inline(&b, R_A1_SQ, URD_WR_SEND, 40, 0, 0);
	put_inline(&b, R_A1_SQ, URD_WR_RDMA_WRITE, 64, rb, 0x50000 + 8192 - 64);
	put_inline(&b, R_A1_SQ, URD_WR_SEND, 65, 0, 0);            /* > max_inline_data */
	put_run(&b, 1);
	SEED("inline");

	/* a2 -> a3 (loopback, SRQ): receives on the SRQ, then sends and RDMA
	 * into MR2, whose two segments are not contiguous */
	SG(0, 0x10000 + 6000, 1000, l1); SG(1, 0x20000, 1004, l2); SG(2, 0x20000 + 1004, 1000, l2);
	put_recv(&b, R_SRQ, sg, 3);
	put_recv(&b, R_SRQ, sg, 1);
	SG(0, 0x10000, 1500, l1);
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 10, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_A2_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 11, sg, 1, S.mr2.rkey, 0x20000 + 500, 0, 0);
	SG(0, 0x40000, 100, l4);                                     /* MR4 is in pd2: protection error */
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 12, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	put_poll(&b);
	SEED("srq_loopback");

	/* atomics on MR2 near the end of its first segment */
	SG(0, 0x10000 + 32, 8, l1);
	put_send(&b, R_A2_SQ, URD_WR_ATOMIC_FETCH_AND_ADD, URD_WQE_SIGNALED, 13, sg, 1, S.mr2.rkey,
		 0x20000 + 1000, 1ull << 32, 0);   /* 4 bytes left in the segment */
	put_send(&b, R_A2_SQ, URD_WR_ATOMIC_CMP_AND_SWP, URD_WQE_SIGNALED, 14, sg, 1, S.mr2.rkey,
		 0x20000 + 1004 + 4, 0, 1);
	put_run(&b, 1);
	SEED("atomic_mr2");

	/* an atomic on MR5: 4 bytes left in the window's last page */
	SG(0, 0x10000 + 40, 8, l1);
	put_send(&b, R_A2_SQ, URD_WR_ATOMIC_FETCH_AND_ADD, URD_WQE_SIGNALED, 15, sg, 1, S.mr5.rkey,
		 0x60000, 1ull << 32, 0);
	put_run(&b, 1);
	SEED("atomic_window_end");

	/* UD: u1 -> u2 with and without GRH, to a QPN in tenant t2, bad Q_Key */
	SG(0, 0x10000 + 2048, 1024, l1);
	put_recv(&b, R_U2_RQ, sg, 1);
	put_recv(&b, R_U2_RQ, sg, 1);
	SG(0, 0x10000, 200, l1);
	put_ud(&b, R_U1_SQ, S.qp[Q_U2].qpn, QKEY, true, 1, sg, 1);
	put_ud(&b, R_U1_SQ, S.qp[Q_U2].qpn, 0x80000000, false, 0, sg, 1);
	put_ud(&b, R_U1_SQ, S.u3.qpn, QKEY, true, 1, sg, 1);
	put_ud(&b, R_U1_SQ, S.u3.qpn, QKEY, false, 0, sg, 1);
	put_ud(&b, R_U1_SQ, S.qp[Q_U2].qpn, 1, false, 0, sg, 1);
	SG(0, 0x10000, 5000, l1);                                    /* > UD MTU */
	put_ud(&b, R_U1_SQ, S.qp[Q_U2].qpn, QKEY, false, 0, sg, 1);
	put_run(&b, 1);
	put_poll(&b);
	SEED("ud");

	/* UC: c1 -> c2, every UC opcode; a SEND with no receive WQE left, a
	 * bad R_Key and a too-long SEND are dropped, c2 stays; READ and an
	 * atomic are no UC operations (LOC_QP_OP_ERR, c1 to error) */
	SG(0, 0x10000 + 4096, 512, l1);
	put_recv(&b, R_C2_RQ, sg, 1);
	put_recv(&b, R_C2_RQ, sg, 1);
	put_recv(&b, R_C2_RQ, sg, 1);
	SG(0, 0x10000, 300, l1);
	put_send(&b, R_C1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 40, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_SEND_WITH_IMM, URD_WQE_SIGNALED, 41, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 42, sg, 1, S.mr1.rkey, 0x10000 + 6000, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_RDMA_WRITE_WITH_IMM, URD_WQE_SIGNALED, 43, sg, 1, S.mr1.rkey, 0x10000 + 7000,
		 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 44, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 45, sg, 1, 0x1234567, 0x10000, 0, 0);
	put_run(&b, 1);
	SG(0, 0x10000, 1000, l1);
	put_recv(&b, R_C2_RQ, sg, 1);
	SG(0, 0x10000, 2000, l1);
	put_send(&b, R_C1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 46, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_RDMA_READ, URD_WQE_SIGNALED, 47, sg, 1, S.mr1.rkey, 0x10000, 0, 0);
	put_send(&b, R_C1_SQ, URD_WR_ATOMIC_FETCH_AND_ADD, URD_WQE_SIGNALED, 48, sg, 1, S.mr1.rkey, 0x10000, 1, 0);
	put_run(&b, 1);
	put_poll(&b);
	SEED("uc");

	/* memory windows on the a2 <-> a3 pair (one PD): a3 binds the type 2
	 * window on 2 KiB of MR1, a2 writes and reads through it (in and out
	 * of range), invalidates it by SEND_WITH_INV, writes again (refused);
	 * a type 1 bind through a2, a bind to an MR of another PD, LOCAL_INV
	 * of an MR key and of a window bound elsewhere */
	{
		uint32_t k2 = (S.mw2 & ~0xffu) | ((S.mw2 + 1) & 0xffu);
		uint32_t k1 = (S.mw1 & ~0xffu) | ((S.mw1 + 1) & 0xffu);
		const uint32_t rw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

		put_bind(&b, R_A3_SQ, 60, S.mw2, k2, l1, 0x10000 + 1024, 2048, rw);
		put_run(&b, 1);
		SG(0, 0x20000 + 100, 300, l2);
		put_send(&b, R_A2_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 61, sg, 1, k2, 0x10000 + 1100, 0, 0);
		put_send(&b, R_A2_SQ, URD_WR_RDMA_READ, URD_WQE_SIGNALED, 62, sg, 1, k2, 0x10000 + 1024, 0, 0);
		put_bind(&b, R_A2_SQ, 63, S.mw1, k1, l2, 0x20000, 500, rw);
		SG(0, 0x20000 + 600, 64, l2);
		put_recv(&b, R_SRQ, sg, 1);
		put_inv(&b, R_A2_SQ, URD_WR_SEND_WITH_INV, 64, k2, sg, 1);
		put_run(&b, 1);
		put_send(&b, R_A2_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 65, sg, 1, k2, 0x10000 + 1100, 0, 0);
		put_run(&b, 1);
		put_inv(&b, R_A3_SQ, URD_WR_LOCAL_INV, 66, S.mr1.rkey, NULL, 0);
		put_bind(&b, R_C1_SQ, 67, S.mw2, k2 + 1, S.mr4.lkey, 0x40000, 100, rw);
		put_bind(&b, R_C2_SQ, 68, S.mw1, k1 + 1, 0, 0, 0, 0);
		put_inv(&b, R_U1_SQ, URD_WR_LOCAL_INV, 69, k1, NULL, 0);
		put_run(&b, 1);
		put_poll(&b);
		SEED("mw");
	}

	/* a1 reconnected to c1 (tenant t2): retries, then RETRY_EXC */
	put_modify(&b, Q_A1, 2 /* RTR */, 4);
	put_modify(&b, Q_A1, 0 /* RESET */, 0);
	put_modify(&b, Q_A1, 1 /* INIT */, 0);
	put_modify(&b, Q_A1, 2, 4);
	put_modify(&b, Q_A1, 3 /* RTS */, 0);
	SG(0, 0x10000, 64, l1);
	put_send(&b, R_A1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 20, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_A1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 21, sg, 1, S.mrc.rkey, 0x10000, 0, 0);
	for (int i = 0; i < 4; i++)
		put_run(&b, 100);
	SEED("other_tenant");

	/* local errors: bad lkey, read-only MR as a scatter target, bad opcode,
	 * too many SGEs, an RDMA op on UD */
	SG(0, 0x10000, 64, 0xdeadbeef);
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 30, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	put_modify(&b, Q_A2, 0, 0);
	put_modify(&b, Q_A2, 1, 0);
	put_modify(&b, Q_A2, 2, 3);
	put_modify(&b, Q_A2, 3, 0);
	SG(0, 0x30000, 64, l3);
	put_send(&b, R_A2_SQ, URD_WR_RDMA_READ, URD_WQE_SIGNALED, 31, sg, 1, rb, 0x50000, 0, 0);
	put_send(&b, R_A2_SQ, 7, URD_WQE_SIGNALED, 32, sg, 1, 0, 0, 0, 0);
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 33, sg, 4, 0, 0, 0, 0);
	put_send(&b, R_U1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 34, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	put_poll(&b);
	SEED("local_errors");

	/* remote errors: bad rkey, out of bounds, no remote write on MR3 */
	SG(0, 0x10000, 64, l1);
	put_send(&b, R_A1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 40, sg, 1, rb + 1, 0x50000, 0, 0);
	put_run(&b, 1);
	put_send(&b, R_A2_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, 41, sg, 1, S.mr3.rkey, 0x30000, 0, 0);
	put_send(&b, R_A2_SQ, URD_WR_RDMA_READ, URD_WQE_SIGNALED, 42, sg, 1, S.mr2.rkey, 0x20000 + 3000, 0, 0);
	put_run(&b, 1);
	SEED("remote_errors");

	/* receive side: RNR, then a receive too small, then flush on error */
	SG(0, 0x10000, 64, l1);
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 50, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	put_run(&b, 200);
	SG(0, 0x10000 + 8000, 16, l1);
	put_recv(&b, R_SRQ, sg, 1);
	put_run(&b, 200);
	put_recv(&b, R_A1_RQ, sg, 1);
	put_recv(&b, R_A1_RQ, sg, 1);
	put_modify(&b, Q_A1, 5 /* ERR */, 0);
	put_run(&b, 1);
	put_poll(&b);
	SEED("rnr_flush");

	/* CQ overrun: 40 signaled writes, nothing polled */
	SG(0, 0x10000, 8, l1);
	for (int i = 0; i < 40; i++) {
		put_send(&b, R_A1_SQ, URD_WR_RDMA_WRITE, URD_WQE_SIGNALED, (uint64_t)i, sg, 1, rb, 0x50000, 0, 0);
		if (i % 8 == 7)
			put_run(&b, 0);
	}
	SEED("cq_overrun");

	/* lying indices: prod far ahead, cons of the CQ ahead of prod, all
	 * doorbells set, garbage ring header */
	fz_put8(&b, 2); fz_put8(&b, R_A1_SQ); fz_put32(&b, 0x80000000u);
	fz_put8(&b, 2); fz_put8(&b, R_A1_RQ); fz_put32(&b, 17);
	fz_put8(&b, 1); fz_put8(&b, R_SCQ); fz_put16(&b, 64); fz_put16(&b, 4); fz_put32(&b, 0xfffffff0u);
	for (int w = 0; w < 64; w++) {
		fz_put8(&b, 5); fz_put8(&b, (uint8_t)w); fz_put32(&b, 0xffffffffu); fz_put32(&b, 0xffffffffu);
	}
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 60, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	SEED("lying_indices");

	/* lifetimes: work in flight while the peer dies, a QP is destroyed
	 * waiting for RNR, an MR is deregistered, memory is freed */
	SG(0, 0x10000, 64, l1);
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 70, sg, 1, 0, 0, 0, 0);
	put_run(&b, 1);
	put_send(&b, R_A1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 71, sg, 1, 0, 0, 0, 0);
	fz_put8(&b, 7); fz_put8(&b, 0);                              /* ctx B dies */
	put_run(&b, 1);
	fz_put8(&b, 7); fz_put8(&b, 1 | 2 << 3);                     /* destroy a3 */
	fz_put8(&b, 7); fz_put8(&b, 2 | 1 << 3);                     /* dereg MR2 */
	fz_put8(&b, 7); fz_put8(&b, 3);                              /* free M0 */
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 72, sg, 1, 0, 0, 0, 0);
	put_run(&b, 100);
	fz_put8(&b, 7); fz_put8(&b, 4);                              /* ctx A dies */
	put_run(&b, 1);
	SEED("lifetimes");

	/* SQD and back, RESET with work posted */
	put_send(&b, R_A1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 80, sg, 1, 0, 0, 0, 0);
	put_modify(&b, Q_A1, 4 /* SQD */, 0);
	put_run(&b, 1);
	put_modify(&b, Q_A1, 3, 0);
	put_send(&b, R_A1_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 81, sg, 1, 0, 0, 0, 0);
	put_modify(&b, Q_A1, 0, 0);
	put_run(&b, 1);
	SEED("states");

	/* a QP waiting for its RNR timer goes to the error state, then is
	 * destroyed: it must leave the engine's timer list */
	put_send(&b, R_A2_SQ, URD_WR_SEND, URD_WQE_SIGNALED, 90, sg, 1, 0, 0, 0, 0);
	put_run(&b, 0);
	put_modify(&b, Q_A2, 5 /* ERR */, 0);
	fz_put8(&b, 7); fz_put8(&b, 1 | Q_A2 << 3);                  /* destroy a2 */
	put_run(&b, 200);
	SEED("wait_then_error");

	/* a1 connected to c1, which (tenant t2) claims a1 as its peer; a1's
	 * context dies: that must not reach c1 in the other tenant */
	put_modify(&b, Q_A1, 0, 0);
	put_modify(&b, Q_A1, 1, 0);
	put_modify(&b, Q_A1, 2, 4);
	put_modify(&b, Q_A1, 3, 0);
	fz_put8(&b, 7); fz_put8(&b, 4);                              /* ctx A dies */
	put_run(&b, 1);
	SEED("peer_other_tenant");
#undef SG
#undef SEED
	free(b.p);
	free(S.t2_snap);
	fz_end();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("UNIRDMA_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	fz_init();
	trace = getenv("UNIRDMA_FUZZ_TRACE") != NULL;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run_input(data, size);
	return 0;
}

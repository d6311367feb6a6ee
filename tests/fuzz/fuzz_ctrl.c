/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_ctrl: libFuzzer target for the control-request decoder (ctrl_dispatch
 * and every handler in daemon/{pd,mr,cq,srq,qp,ctx}.c), with the tenant scribbling on its
 * region between requests.
 *
 * Each input starts with three open contexts (vr0 slots 0 and 1, vr1 slot 0;
 * vr0 and vr1 are vRNICs of one tenant) and is a sequence of chunks:
 *
 *   cmd:u8, then by act = cmd >> 3, on slot cmd & 3 of vRNIC (cmd >> 2) & 1:
 *   act 0..23   MSG     len:u16le, len bytes: one request, exactly len bytes
 *                       long (a handler that reads past its request is caught
 *                       by ASan), answered into a URD_MSG_MAX response buffer
 *   act 24..26  DIE     the context's process died (the liveness path)
 *   act 27..28  ENGINE  n:u8: (n & 3) + 1 engine passes, clock += n ms
 *   act 29      POKE    off:u16 val:u32: the tenant writes its region header
 *   act 30      POKE    off:u32 val:u32: ... its context mailboxes
 *   act 31      POKE    off:u32 val:u32: ... the first MiB of its ring arena
 *
 * After every request the daemon's model is checked (harness.c: counters,
 * references, tables, allocators); at the end every context is destroyed
 * and the daemon must be empty again.  LeakSanitizer finds what a handler
 * forgot to free.
 *
 * UNIRDMA_FUZZ_WRITE_SEEDS=DIR fuzz_ctrl writes the seed corpus to DIR and exits.
 * UNIRDMA_FUZZ_TRACE=1 prints every request and its status (for checking seeds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "unirdma/fwd.h"

#define ACT_MSG_END  24
#define ACT_DIE_END  27
#define ACT_ENGINE_END 29

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

static void poke(struct urd_vrnic *vr, uint64_t off, uint32_t val)
{
	off &= ~(uint64_t)3;
	/* a plain store, as a tenant's would be */
	memcpy(vr->map + off, &val, sizeof(val));
}

static bool trace;

static void run_input(const uint8_t *data, size_t size)
{
	struct cursor c = { data, size };
	static uint8_t resp[URD_MSG_MAX];
	uint64_t now = 1000000000000ull;
	struct urd_open_ctx_req open;
	uint8_t cmd;

	fz_begin();
	memset(&open, 0, sizeof(open));
	if (fz_req(fz_vr[0], 0, URD_OP_OPEN_CTX, &open, sizeof(open), NULL) ||
	    fz_req(fz_vr[0], 1, URD_OP_OPEN_CTX, &open, sizeof(open), NULL) ||
	    fz_req(fz_vr[1], 0, URD_OP_OPEN_CTX, &open, sizeof(open), NULL))
		fz_fail("OPEN_CTX failed on a fresh daemon");

	while (take(&c, &cmd, 1)) {
		struct urd_vrnic *vr = fz_vr[(cmd >> 2) & 1];
		uint32_t slot = cmd & 3, act = cmd >> 3;

		if (act < ACT_MSG_END) {
			uint16_t len;
			uint32_t rlen;
			uint8_t *req;
			int st;

			if (!take(&c, &len, sizeof(len)))
				break;
			if (len > c.n)
				len = (uint16_t)c.n;
			req = malloc(len ? len : 1);
			if (!req)
				abort();
			take(&c, req, len);
			st = fz_call(vr, slot, req, len, resp, &rlen);
			if (trace)
				fprintf(stderr, "vr%d slot %u op %u len %u: %d\n", (cmd >> 2) & 1, slot,
					len >= 4 ? ((struct urd_msg_hdr *)req)->op : 0, len, st);
			free(req);
		} else if (act < ACT_DIE_END) {
			fz_ctx_died(vr, slot);
		} else if (act < ACT_ENGINE_END) {
			uint8_t n;
			uint64_t next;

			if (!take(&c, &n, 1))
				break;
			now += (uint64_t)n * 1000000;
			for (int i = 0; i <= (n & 3); i++)
				fz_engine_pass(now, &next);
			fz_check();
		} else {
			uint32_t off = 0, val;

			if (act == 29) {
				uint16_t o16;

				if (!take(&c, &o16, sizeof(o16)))
					break;
				off = o16 % URD_HDR_SIZE;
			} else if (!take(&c, &off, sizeof(off))) {
				break;
			} else if (act == 30) {
				off = URD_SLOTS_OFF + off % (URD_MAX_CTX * URD_SLOT_SIZE);
			} else {
				off = URD_ARENA_OFF + off % (1u << 20);
			}
			if (!take(&c, &val, sizeof(val)))
				break;
			poke(vr, off, val);
		}
	}
	fz_engine_drain(&now, 16);
	fz_end();
}

/* The tenant's scribbles stay in the region: every input starts from the
 * header the daemon wrote and clean mailboxes and doorbells. */
static struct urd_region_hdr saved_hdr[2];

static void clean_regions(void)
{
	for (int i = 0; i < 2; i++) {
		*fz_vr[i]->hdr = saved_hdr[i];
		for (uint32_t s = 0; s < URD_MAX_CTX; s++)
			memset(fz_vr[i]->map + urd_slot_off(s), 0, URD_SLOT_HDR_SIZE);
		memset(fz_vr[i]->map + URD_DB_OFF, 0, URD_DB_SIZE);
	}
}

/* ---------------------------------------------------------------- seeds */

/* Handles are deterministic: a context's n-th object gets handle 1 << 16 | n. */
#define H(n) (0x10000u | (n))

static void msg(struct fz_buf *b, int vr, uint32_t slot, uint16_t op, void *req, uint32_t len)
{
	struct urd_msg_hdr *h = req;

	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = len;
	fz_put8(b, (uint8_t)(vr << 2 | slot));
	fz_put16(b, (uint16_t)len);
	fz_put(b, req, len);
}

static void msg_handle(struct fz_buf *b, int vr, uint32_t slot, uint16_t op, uint32_t handle)
{
	struct urd_handle_req r = { .handle = handle };

	msg(b, vr, slot, op, &r, sizeof(r));
}

static void msg_empty(struct fz_buf *b, int vr, uint32_t slot, uint16_t op)
{
	struct urd_msg_hdr h;

	memset(&h, 0, sizeof(h));
	msg(b, vr, slot, op, &h, sizeof(h));
}

static void msg_mem(struct fz_buf *b, int vr, uint32_t slot, uint16_t op, uint64_t off, uint64_t len)
{
	struct urd_mem_req r = { .off = off, .len = len };

	msg(b, vr, slot, op, &r, sizeof(r));
}

static void msg_reg_mr(struct fz_buf *b, int vr, uint32_t slot, uint32_t pd, uint32_t access,
		       uint64_t iova, uint32_t nsegs, const struct urd_mr_seg *segs)
{
	uint8_t buf[sizeof(struct urd_reg_mr_req) + 8 * sizeof(struct urd_mr_seg)];
	struct urd_reg_mr_req *r = (struct urd_reg_mr_req *)buf;
	uint64_t total = 0;

	memset(buf, 0, sizeof(buf));
	r->pd = pd;
	r->access = access;
	r->iova = iova;
	r->nsegs = nsegs;
	for (uint32_t i = 0; i < nsegs; i++) {
		r->segs[i] = segs[i];
		total += segs[i].len;
	}
	r->length = total;
	msg(b, vr, slot, URD_OP_REG_MR, r, (uint32_t)(sizeof(*r) + nsegs * sizeof(*segs)));
}

static void msg_cq(struct fz_buf *b, int vr, uint32_t slot, uint32_t cqe)
{
	struct urd_create_cq_req r = { .cqe = cqe };

	msg(b, vr, slot, URD_OP_CREATE_CQ, &r, sizeof(r));
}

static void msg_srq(struct fz_buf *b, int vr, uint32_t slot, uint32_t pd, uint32_t max_wr,
		    uint32_t max_sge, uint32_t limit)
{
	struct urd_create_srq_req r = { .pd = pd, .max_wr = max_wr, .max_sge = max_sge, .srq_limit = limit };

	msg(b, vr, slot, URD_OP_CREATE_SRQ, &r, sizeof(r));
}

static void msg_qp(struct fz_buf *b, int vr, uint32_t slot, uint32_t type, uint32_t pd, uint32_t scq,
		   uint32_t rcq, uint32_t srq)
{
	struct urd_create_qp_req r;

	memset(&r, 0, sizeof(r));
	r.pd = pd;
	r.send_cq = scq;
	r.recv_cq = rcq;
	r.srq = srq;
	r.qp_type = type;
	r.cap = (struct urd_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
				     .max_recv_sge = 4, .max_inline_data = 64 };
	msg(b, vr, slot, URD_OP_CREATE_QP, &r, sizeof(r));
}

static void msg_modify(struct fz_buf *b, int vr, uint32_t slot, uint32_t qp, uint32_t mask,
		       const struct urd_qp_attr *at)
{
	struct urd_modify_qp_req r;

	memset(&r, 0, sizeof(r));
	r.handle = qp;
	r.attr_mask = mask;
	r.attr = *at;
	msg(b, vr, slot, URD_OP_MODIFY_QP, &r, sizeof(r));
}

/* RESET -> INIT -> RTR -> RTS with the attributes the state table requires. */
static void msg_connect(struct fz_buf *b, int vr, uint32_t slot, uint32_t qp, bool ud, uint32_t dest_qpn,
			uint32_t dest_ip_last)
{
	struct urd_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = 0x11111111;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	msg_modify(b, vr, slot, qp, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS), &at);
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dest_qpn;
	at.rq_psn = 1;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 1;
	at.ah.is_global = 1;
	at.ah.hop_limit = 1;
	at.ah.port_num = 1;
	at.ah.dgid[10] = 0xff;
	at.ah.dgid[11] = 0xff;
	at.ah.dgid[12] = 10;
	at.ah.dgid[15] = (uint8_t)dest_ip_last;
	msg_modify(b, vr, slot, qp, ud ? IBV_QP_STATE :
		   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, &at);
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 1;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	msg_modify(b, vr, slot, qp, ud ? IBV_QP_STATE | IBV_QP_SQ_PSN :
		   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_MAX_QP_RD_ATOMIC, &at);
}

static void msg_state(struct fz_buf *b, int vr, uint32_t slot, uint32_t qp, uint32_t state)
{
	struct urd_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = state;
	msg_modify(b, vr, slot, qp, IBV_QP_STATE, &at);
}

static void act(struct fz_buf *b, uint32_t a, int vr, uint32_t slot)
{
	fz_put8(b, (uint8_t)(a << 3 | (uint32_t)vr << 2 | slot));
}

static void poke_hdr(struct fz_buf *b, int vr, uint16_t off, uint32_t val)
{
	act(b, 29, vr, 0);
	fz_put16(b, off);
	fz_put32(b, val);
}

#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)

static void write_seeds(const char *dir)
{
	struct fz_buf b = { 0 };
	struct urd_mr_seg seg1[1] = { { 0, 8192 } };
	struct urd_mr_seg seg2[2] = { { 100, 1000 }, { 4096 + 8, 3000 } };
	struct urd_mr_seg seg3[3] = { { 0, 1 }, { 4095, 1 }, { 8191, 1 } };
	uint32_t qpn0 = 0x100;   /* fz_begin: the first QP created gets 0x100, then 0x101, ... */

#define SEED(name) do { fz_seed_write(dir, name, b.p, b.len); b.len = 0; } while (0)

	/* objects one by one, created and destroyed */
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));
	msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));          /* twice: EINVAL */
	SEED("pd");

	/* memory windows: both types, a bad type, a bad PD; the PD is busy
	 * while a window is in it; dealloc twice */
	{
		struct urd_alloc_mw_req m = { .pd = H(1), .type = IBV_MW_TYPE_1 };

		msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
		msg(&b, 0, 0, URD_OP_ALLOC_MW, &m, sizeof(m));          /* H(2) */
		m.type = IBV_MW_TYPE_2;
		msg(&b, 0, 0, URD_OP_ALLOC_MW, &m, sizeof(m));          /* H(3) */
		m.type = 3;
		msg(&b, 0, 0, URD_OP_ALLOC_MW, &m, sizeof(m));          /* EINVAL */
		m.pd = H(7);
		m.type = IBV_MW_TYPE_2;
		msg(&b, 0, 0, URD_OP_ALLOC_MW, &m, sizeof(m));          /* EINVAL */
		msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));          /* busy */
		msg_handle(&b, 0, 0, URD_OP_DEALLOC_MW, H(2));
		msg_handle(&b, 0, 0, URD_OP_DEALLOC_MW, H(2));          /* twice: EINVAL */
		msg_handle(&b, 0, 0, URD_OP_DEALLOC_MW, H(1));          /* a PD: EINVAL */
		SEED("mw");
	}

	/* CM agents (include/unirdma/cm.h): two UD QPs become agents, an RC
	 * QP cannot; listens, a taken ServiceID, a stop of what is not
	 * listened; a destroyed agent and a dead context leave nothing behind */
	{
		struct urd_cm_req c = { .qp = H(3), .on = 1, .service_id = 0x1060000ull + 7471 };

		msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
		msg_cq(&b, 0, 0, 16);                                     /* H(2) */
		msg_qp(&b, 0, 0, IBV_QPT_UD, H(1), H(2), H(2), 0);        /* H(3) */
		msg_qp(&b, 0, 0, IBV_QPT_UD, H(1), H(2), H(2), 0);        /* H(4) */
		msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);        /* H(5) */
		msg(&b, 0, 0, URD_OP_CM_LISTEN, &c, sizeof(c));         /* not an agent: EINVAL */
		msg(&b, 0, 0, URD_OP_CM_AGENT, &c, sizeof(c));
		msg(&b, 0, 0, URD_OP_CM_AGENT, &c, sizeof(c));          /* twice: EINVAL */
		msg(&b, 0, 0, URD_OP_CM_LISTEN, &c, sizeof(c));
		c.qp = H(4);
		msg(&b, 0, 0, URD_OP_CM_AGENT, &c, sizeof(c));
		msg(&b, 0, 0, URD_OP_CM_LISTEN, &c, sizeof(c));         /* taken: EADDRINUSE */
		c.service_id++;
		msg(&b, 0, 0, URD_OP_CM_LISTEN, &c, sizeof(c));
		c.on = 0;
		c.service_id++;
		msg(&b, 0, 0, URD_OP_CM_LISTEN, &c, sizeof(c));         /* ENOENT */
		c.qp = H(5);
		msg(&b, 0, 0, URD_OP_CM_AGENT, &c, sizeof(c));          /* RC: EINVAL */
		msg_handle(&b, 0, 0, URD_OP_DESTROY_QP, H(3));
		act(&b, 24, 0, 0);                                        /* slot 0 dies */
		SEED("cm");
	}

	msg_mem(&b, 0, 0, URD_OP_MEM_ALLOC, 0, 8192);
	msg_mem(&b, 0, 0, URD_OP_MEM_ALLOC, 0, 4096);
	msg_mem(&b, 0, 0, URD_OP_MEM_FREE, 0, 8192);
	msg_mem(&b, 0, 0, URD_OP_MEM_FREE, 8192, 4096);
	msg_mem(&b, 0, 0, URD_OP_MEM_FREE, 8192, 4096);
	msg_mem(&b, 0, 0, URD_OP_MEM_ALLOC, 0, 4095);           /* not a page multiple */
	SEED("mem");

	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
	msg_mem(&b, 0, 0, URD_OP_MEM_ALLOC, 0, 8192);
	msg_reg_mr(&b, 0, 0, H(1), ALL_ACCESS, 0x10000, 1, seg1);  /* H(2) */
	msg_reg_mr(&b, 0, 0, H(1), IBV_ACCESS_REMOTE_READ, 0x7fff0001, 2, seg2); /* H(3) */
	msg_reg_mr(&b, 0, 0, H(1), IBV_ACCESS_LOCAL_WRITE, ~0ull - 3, 3, seg3);   /* ends at 2^64 - 1 */ /* H(4) */
	msg_reg_mr(&b, 0, 0, H(1), IBV_ACCESS_REMOTE_WRITE, 0, 1, seg1);  /* no LOCAL_WRITE: EINVAL */
	msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));          /* busy */
	{
		struct urd_rereg_mr_req m = { .handle = H(2), .flags = IBV_REREG_MR_CHANGE_ACCESS,
					      .access = IBV_ACCESS_LOCAL_WRITE };

		msg(&b, 0, 0, URD_OP_REREG_MR, &m, sizeof(m));
		m.flags = IBV_REREG_MR_CHANGE_PD;
		m.pd = H(1);
		msg(&b, 0, 0, URD_OP_REREG_MR, &m, sizeof(m));
		m.flags = IBV_REREG_MR_CHANGE_TRANSLATION;
		msg(&b, 0, 0, URD_OP_REREG_MR, &m, sizeof(m));      /* EOPNOTSUPP */
	}
	msg_mem(&b, 0, 0, URD_OP_MEM_FREE, 0, 8192);            /* MRs keep it alive */
	msg_handle(&b, 0, 0, URD_OP_DEREG_MR, H(2));
	msg_handle(&b, 0, 0, URD_OP_DEREG_MR, H(3));
	msg_handle(&b, 0, 0, URD_OP_DEREG_MR, H(4));
	msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));
	SEED("mr");

	/* an MR of memory another context of the vRNIC allocated */
	msg_mem(&b, 0, 1, URD_OP_MEM_ALLOC, 0, 8192);
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_reg_mr(&b, 0, 0, H(1), ALL_ACCESS, 0, 1, seg1);
	act(&b, 24, 0, 1);                                        /* slot 1 dies */
	msg_handle(&b, 0, 0, URD_OP_DEREG_MR, H(2));
	SEED("mr_shared");

	msg_cq(&b, 0, 0, 1);
	msg_cq(&b, 0, 0, 65536);
	msg_cq(&b, 0, 0, 65537);                                  /* EINVAL */
	msg_handle(&b, 0, 0, URD_OP_DESTROY_CQ, H(1));
	msg_handle(&b, 0, 0, URD_OP_DESTROY_CQ, H(2));
	SEED("cq");

	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_srq(&b, 0, 0, H(1), 100, 3, 10);                      /* H(2) */
	{
		struct urd_modify_srq_req r = { .handle = H(2), .attr_mask = IBV_SRQ_LIMIT, .srq_limit = 5 };

		msg(&b, 0, 0, URD_OP_MODIFY_SRQ, &r, sizeof(r));
		r.attr_mask = IBV_SRQ_MAX_WR;
		msg(&b, 0, 0, URD_OP_MODIFY_SRQ, &r, sizeof(r));
	}
	msg_handle(&b, 0, 0, URD_OP_QUERY_SRQ, H(2));
	msg_handle(&b, 0, 0, URD_OP_DESTROY_SRQ, H(2));
	msg_srq(&b, 0, 0, H(1), 16384, 16, 0);
	SEED("srq");

	/* RC QP through every state */
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
	msg_cq(&b, 0, 0, 16);                                     /* H(2) */
	msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);        /* H(3), qpn0 */
	msg_connect(&b, 0, 0, H(3), false, qpn0, 1);              /* to itself */
	msg_handle(&b, 0, 0, URD_OP_QUERY_QP, H(3));
	msg_state(&b, 0, 0, H(3), IBV_QPS_SQD);
	msg_state(&b, 0, 0, H(3), IBV_QPS_RTS);
	msg_state(&b, 0, 0, H(3), IBV_QPS_ERR);
	act(&b, 27, 0, 0);
	fz_put8(&b, 3);
	msg_state(&b, 0, 0, H(3), IBV_QPS_RESET);
	{
		struct urd_resize_cq_req z = { .handle = H(2), .cqe = 64 };

		msg(&b, 0, 0, URD_OP_RESIZE_CQ, &z, sizeof(z));         /* a QP on it */
		z.cqe = 1;
		msg(&b, 0, 0, URD_OP_RESIZE_CQ, &z, sizeof(z));
	}
	{
		struct urd_rereg_mr_req m = { .handle = H(1), .flags = IBV_REREG_MR_CHANGE_PD, .pd = H(1) };

		msg(&b, 0, 0, URD_OP_REREG_MR, &m, sizeof(m));          /* a PD, not an MR */
	}
	msg_handle(&b, 0, 0, URD_OP_DESTROY_CQ, H(2));          /* busy */
	msg_handle(&b, 0, 0, URD_OP_DESTROY_QP, H(3));
	msg_handle(&b, 0, 0, URD_OP_DESTROY_CQ, H(2));
	msg_handle(&b, 0, 0, URD_OP_DEALLOC_PD, H(1));
	SEED("qp_rc");

	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_cq(&b, 0, 0, 16);
	msg_cq(&b, 0, 0, 16);
	msg_qp(&b, 0, 0, IBV_QPT_UD, H(1), H(2), H(3), 0);
	msg_connect(&b, 0, 0, H(4), true, 0, 0);
	msg_handle(&b, 0, 0, URD_OP_QUERY_QP, H(4));
	SEED("qp_ud");

	/* multicast: join, join again, a unicast GID, an RC QP, leave twice,
	 * destroy while joined */
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
	msg_cq(&b, 0, 0, 16);                                     /* H(2) */
	msg_qp(&b, 0, 0, IBV_QPT_UD, H(1), H(2), H(2), 0);        /* H(3) */
	msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);        /* H(4) */
	msg_qp(&b, 0, 0, IBV_QPT_UC, H(1), H(2), H(2), 0);        /* H(5) */
	{
		struct urd_mcast_req m = { .handle = H(3), .gid = { [10] = 0xff, [11] = 0xff, [12] = 239, [15] = 1 } };

		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
		m.gid[0] = 0xff;                                  /* an IPv6 group */
		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
		m.gid[0] = 0;
		m.gid[12] = 10;                                   /* unicast: EINVAL */
		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
		m.gid[12] = 239;
		m.handle = H(4);                                  /* RC: EINVAL */
		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
		m.handle = H(3);
		msg(&b, 0, 0, URD_OP_DETACH_MCAST, &m, sizeof(m));
		msg(&b, 0, 0, URD_OP_DETACH_MCAST, &m, sizeof(m)); /* EINVAL */
		msg(&b, 0, 0, URD_OP_ATTACH_MCAST, &m, sizeof(m));
	}
	msg_connect(&b, 0, 0, H(5), false, qpn0, 1);
	msg_handle(&b, 0, 0, URD_OP_DESTROY_QP, H(3));          /* still in two groups */
	SEED("mcast_uc");

	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
	msg_cq(&b, 0, 0, 16);                                     /* H(2) */
	msg_srq(&b, 0, 0, H(1), 16, 2, 4);                        /* H(3) */
	msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), H(3));     /* H(4) */
	msg_qp(&b, 0, 0, IBV_QPT_UD, H(1), H(2), H(2), H(3));     /* H(5) */
	msg_handle(&b, 0, 0, URD_OP_DESTROY_SRQ, H(3));         /* busy */
	msg_connect(&b, 0, 0, H(4), false, qpn0 + 1, 1);
	SEED("qp_srq");

	/* two contexts connected by RC; one dies, then the other's vRNIC peer */
	for (int s = 0; s < 2; s++) {
		msg_empty(&b, 0, (uint32_t)s, URD_OP_ALLOC_PD);
		msg_cq(&b, 0, (uint32_t)s, 4);
		msg_qp(&b, 0, (uint32_t)s, IBV_QPT_RC, H(1), H(2), H(2), 0);
	}
	msg_empty(&b, 1, 0, URD_OP_ALLOC_PD);
	msg_cq(&b, 1, 0, 4);
	msg_qp(&b, 1, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);
	msg_connect(&b, 0, 0, H(3), false, qpn0 + 1, 1);
	msg_connect(&b, 0, 1, H(3), false, qpn0, 1);
	msg_connect(&b, 1, 0, H(3), false, qpn0, 1);
	act(&b, 24, 0, 1);
	act(&b, 27, 0, 0);
	fz_put8(&b, 0);
	act(&b, 24, 0, 0);
	SEED("ctx_death");

	/* closing and reopening contexts; requests without a context */
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_empty(&b, 0, 0, URD_OP_CLOSE_CTX);
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* EBADF */
	{
		struct urd_open_ctx_req r;

		memset(&r, 0, sizeof(r));
		msg(&b, 0, 0, URD_OP_OPEN_CTX, &r, sizeof(r));
		msg(&b, 0, 2, URD_OP_OPEN_CTX, &r, sizeof(r));
		msg(&b, 0, 1, URD_OP_OPEN_CTX, &r, sizeof(r));  /* replaces a live one */
	}
	msg_empty(&b, 0, 2, URD_OP_ALLOC_PD);
	SEED("ctx_reopen");

	/* malformed requests */
	{
		struct urd_handle_req r = { .handle = H(1) };

		msg(&b, 0, 0, URD_OP_MAX, &r, sizeof(r));
		msg(&b, 0, 0, 0, &r, sizeof(r));
		msg(&b, 0, 0, URD_OP_FWD_FIRST, &r, sizeof(r));
		msg(&b, 0, 0, URD_OP_DEALLOC_PD, &r, sizeof(r) - 1);
		r.hdr.version = 2;
		fz_put8(&b, 0);
		fz_put16(&b, sizeof(r));
		fz_put(&b, &r, sizeof(r));
		msg(&b, 0, 0, URD_OP_ALLOC_PD, &r, 15);                 /* shorter than a header */
	}
	SEED("malformed");

	/* the tenant rewrites its header between requests (device attributes) */
	poke_hdr(&b, 0, (uint16_t)(offsetof(struct urd_region_hdr, dev) +
				   offsetof(struct urd_dev_attr, max_mr_size)), 0xffffffff);
	poke_hdr(&b, 0, (uint16_t)(offsetof(struct urd_region_hdr, dev) +
				   offsetof(struct urd_dev_attr, max_qp_rd_atom)), 0xffffffff);
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_mem(&b, 0, 0, URD_OP_MEM_ALLOC, 0, 8192);
	msg_reg_mr(&b, 0, 0, H(1), ALL_ACCESS, 0, 1, seg1);
	msg_cq(&b, 0, 0, 1024);
	SEED("hdr_scribble");

	/* the header's max_cqe is the tenant's to write: CREATE_CQ must not
	 * trust it (cqe > 2^31 once sent roundup_pow2 into an endless loop) */
	poke_hdr(&b, 0, (uint16_t)(offsetof(struct urd_region_hdr, dev) +
				   offsetof(struct urd_dev_attr, max_cqe)), 0xffffffff);
	msg_cq(&b, 0, 0, 0x80000001u);
	msg_cq(&b, 0, 0, 0x40000000u);
	SEED("hdr_max_cqe");

	/* the forwarding data path (unirdma/fwd.h): posts, polls, arms */
	{
		uint8_t buf[512];
		struct urd_fwd_post_req *pr = (struct urd_fwd_post_req *)buf;
		struct urd_send_wqe *w;
		struct urd_recv_wqe *rw;
		struct urd_fwd_poll_req pq = { .handle = H(2), .max = 16 };
		struct urd_fwd_notify_req nq = { .handle = H(2), .solicited_only = 1 };
		uint32_t off;

		msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);                     /* H(1) */
		msg_cq(&b, 0, 0, 16);                                     /* H(2) */
		msg_srq(&b, 0, 0, H(1), 16, 2, 0);                        /* H(3) */
		msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);        /* H(4) */
		msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), H(3));     /* H(5) */
		msg_connect(&b, 0, 0, H(4), false, qpn0 + 1, 1);
		msg_connect(&b, 0, 0, H(5), false, qpn0, 1);
		/* two receives on H(4), one on the SRQ */
		memset(buf, 0, sizeof(buf));
		pr->handle = H(4);
		pr->nwr = 2;
		off = sizeof(*pr);
		for (int i = 0; i < 2; i++) {
			rw = (struct urd_recv_wqe *)(buf + off);
			rw->wr_id = (uint64_t)i;
			rw->num_sge = 1;
			off += 32;
		}
		msg(&b, 0, 0, URD_OP_FWD_POST_RECV, buf, off);
		pr->handle = H(3);
		pr->nwr = 1;
		msg(&b, 0, 0, URD_OP_FWD_POST_SRQ_RECV, buf, sizeof(*pr) + 32);
		/* a send with one SGE, an inline send, a zero-length write */
		memset(buf, 0, sizeof(buf));
		pr->handle = H(4);
		pr->nwr = 3;
		off = sizeof(*pr);
		w = (struct urd_send_wqe *)(buf + off);
		w->opcode = URD_WR_SEND;
		w->flags = URD_WQE_SIGNALED;
		w->num_sge = 1;
		off += URD_SEND_WQE_HDR + 16;
		w = (struct urd_send_wqe *)(buf + off);
		w->opcode = URD_WR_SEND_WITH_IMM;
		w->flags = URD_WQE_SIGNALED | URD_WQE_INLINE;
		w->inline_len = 20;
		off += URD_SEND_WQE_HDR + 32;
		w = (struct urd_send_wqe *)(buf + off);
		w->opcode = URD_WR_RDMA_WRITE;
		w->flags = URD_WQE_SIGNALED;
		off += URD_SEND_WQE_HDR;
		msg(&b, 0, 0, URD_OP_FWD_POST_SEND, buf, off);
		act(&b, 27, 0, 0);
		fz_put8(&b, 1);
		msg(&b, 0, 0, URD_OP_FWD_POLL_CQ, &pq, sizeof(pq));
		msg(&b, 0, 0, URD_OP_FWD_REQ_NOTIFY_CQ, &nq, sizeof(nq));
		nq.solicited_only = 0;
		msg(&b, 0, 0, URD_OP_FWD_REQ_NOTIFY_CQ, &nq, sizeof(nq));
		/* more WQEs announced than sent, an inline length past the slot */
		pr->nwr = 0xffffffff;
		msg(&b, 0, 0, URD_OP_FWD_POST_SEND, buf, sizeof(*pr) + URD_SEND_WQE_HDR + 16);
		w = (struct urd_send_wqe *)(buf + sizeof(*pr));
		w->flags = URD_WQE_INLINE;
		w->inline_len = 0x10000;
		pr->nwr = 1;
		msg(&b, 0, 0, URD_OP_FWD_POST_SEND, buf, sizeof(*pr) + URD_SEND_WQE_HDR + 16);
		pq.max = 0xffffffff;
		msg(&b, 0, 0, URD_OP_FWD_POLL_CQ, &pq, sizeof(pq));
		SEED("fwd");
	}

	/* a tenant that lies about its async ring and doorbells */
	msg_empty(&b, 0, 0, URD_OP_ALLOC_PD);
	msg_cq(&b, 0, 0, 1);
	msg_qp(&b, 0, 0, IBV_QPT_RC, H(1), H(2), H(2), 0);
	msg_connect(&b, 0, 0, H(3), false, qpn0, 1);
	act(&b, 30, 0, 0);
	fz_put32(&b, offsetof(struct urd_slot_hdr, async_cons));
	fz_put32(&b, 0x80000000u);
	act(&b, 31, 0, 0);                                        /* SQ prod of the QP */
	fz_put32(&b, 4096);
	fz_put32(&b, 1000);
	act(&b, 27, 0, 0);
	fz_put8(&b, 1);
	SEED("scribble_rings");
#undef SEED
	free(b.p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("UNIRDMA_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	fz_init();
	trace = getenv("UNIRDMA_FUZZ_TRACE") != NULL;
	for (int i = 0; i < 2; i++)
		saved_hdr[i] = *fz_vr[i]->hdr;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	clean_regions();
	run_input(data, size);
	return 0;
}

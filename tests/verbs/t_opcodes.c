/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_opcodes: every RC opcode moves exactly the right bytes, with the right
 * completions.
 *
 * SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM and RDMA_READ use 3
 * local SGEs in 3 MRs at odd offsets, each crossing a page boundary (neighbour
 * MRs share a page); SENDs scatter into 3 receive SGEs split at other points;
 * RDMA targets cross a page boundary. ATOMIC_CMP_AND_SWP (hit and miss) and
 * ATOMIC_FETCH_AND_ADD use the single 8-byte SGE and 8-byte aligned remote
 * address the IB spec requires (IBA 9.4.5). Atomics are checked in host byte
 * order, as the software RNICs (rxe, siw) do. Then the IBV_SEND_INLINE
 * variants, with the max_inline_data that ibv_create_qp granted, from
 * unregistered memory with lkey 0 that is overwritten as soon as
 * ibv_post_send returns (ibv_post_send(3): inline data is copied at post time,
 * its L_Key is not checked).
 *
 * Checked: wc status, opcode, wr_id, qp_num, byte_len (receives, RDMA read,
 * atomics), imm_data and IBV_WC_WITH_IMM (ibv_poll_cq(3)), and the whole of
 * both sides' memory after each operation: every byte outside the
 * destination must be unchanged.
 *
 * Usage: t_opcodes [event] [noglobal]
 *   event     wait through a completion channel: ibv_req_notify_cq before
 *             posting, poll() on channel->fd, ibv_get_cq_event,
 *             ibv_ack_cq_events (ibv_get_cq_event(3)).
 *   noglobal  connect with is_global=0, dlid=0 (peer found by QPN alone).
 */
#include "helpers.h"

#include <arpa/inet.h>

#define NPAGES 8
#define IMM 0x12345678u

static int event_mode;
static struct t_dev A, B;
static struct ibv_comp_channel *ach, *bch;
static struct ibv_cq *acq, *bcq;
static struct ibv_qp *aqp, *bqp;
static struct ibv_qp_cap acap;
static size_t P, LEN;

/* Each side's memory, and a shadow copy holding what it must contain. */
static uint8_t *mapA, *shA, *mapB, *shB;

struct seg {
	uint8_t *p;
	uint32_t len;
	struct ibv_mr *mr;
};

static struct seg src[3];	/* A: gather list / RDMA read scatter list */
static struct seg dst[3];	/* B: receive scatter list */
static struct ibv_mr *mr_t;	/* B: RDMA/atomic target */
static uint8_t *tgt;		/* B: RDMA target, crosses a page boundary */
static uint8_t *atom;		/* B: atomic target, 8-byte aligned */
static struct ibv_mr *mr_res;	/* A: atomic result */
static uint8_t *res;
static uint32_t msg_len;	/* sum of src[] lengths */

static void arm(void)
{
	if (!event_mode)
		return;
	CHECK_OK(ibv_req_notify_cq(acq, 0));
	CHECK_OK(ibv_req_notify_cq(bcq, 0));
}

/* Wait for the one completion an operation produces on cq. In event mode the
 * CQ was armed before posting, so a completion event must come first. */
static void get_wc(struct ibv_cq *cq, struct ibv_comp_channel *ch,
		   struct ibv_wc *wc)
{
	if (event_mode) {
		struct ibv_cq *ev = t_wait_cq_event(ch, T_TIMEOUT_MS);

		if (!ev)
			t_fail("no completion event within %d ms", T_TIMEOUT_MS);
		CHECK(ev == cq);
		ibv_ack_cq_events(ev, 1);
		CHECK_EQ(ibv_poll_cq(cq, 1, wc), 1);
	} else {
		t_wait_wc(cq, wc);
	}
}

/* Fresh background on both sides, in memory and in the shadows. */
static void reset_images(uint32_t seed)
{
	t_fill(mapA, LEN, seed ^ 0xA0A0, 0);
	t_fill(mapB, LEN, seed ^ 0xB0B0, 0);
	memcpy(shA, mapA, LEN);
	memcpy(shB, mapB, LEN);
}

/* Fill a list of segments (memory and shadow) as one stream. */
static void fill_segs(uint8_t *map, uint8_t *sh, struct seg *s, int n,
		      uint32_t seed)
{
	size_t pos = 0;

	for (int i = 0; i < n; i++) {
		t_fill(s[i].p, s[i].len, seed, pos);
		t_fill(sh + (s[i].p - map), s[i].len, seed, pos);
		pos += s[i].len;
	}
}

/* Expect the first total bytes of a stream scattered over a segment list. */
static void expect_scatter(uint8_t *map, uint8_t *sh, struct seg *s, int n,
			   uint32_t seed, size_t total)
{
	size_t pos = 0;

	for (int i = 0; i < n && pos < total; i++) {
		size_t k = total - pos < s[i].len ? total - pos : s[i].len;

		t_fill(sh + (s[i].p - map), k, seed, pos);
		pos += k;
	}
	CHECK_EQ(pos, total);
}

static void check_image(const char *op, const char *side, const uint8_t *map,
			const uint8_t *sh)
{
	for (size_t i = 0; i < LEN; i++)
		if (map[i] != sh[i])
			t_fail("%s: %s memory differs at page %zu offset %zu: 0x%02x, expected 0x%02x",
			       op, side, i / P, i % P, map[i], sh[i]);
}

static void check_images(const char *op)
{
	check_image(op, "requester", mapA, shA);
	check_image(op, "responder", mapB, shB);
}

static void sge_list(struct ibv_sge *sg, struct seg *s, int n)
{
	for (int i = 0; i < n; i++)
		sg[i] = t_sge(s[i].p, s[i].len, s[i].mr->lkey);
}

static void check_send_wc(const struct ibv_wc *wc, uint64_t id, int opcode)
{
	CHECK_WC(wc, IBV_WC_SUCCESS, opcode);
	CHECK_EQ(wc->wr_id, id);
	CHECK_EQ(wc->qp_num, aqp->qp_num);
}

static void check_recv_wc(const struct ibv_wc *wc, uint64_t id, int opcode,
			  uint32_t len, int imm)
{
	CHECK_WC(wc, IBV_WC_SUCCESS, opcode);
	CHECK_EQ(wc->wr_id, id);
	CHECK_EQ(wc->qp_num, bqp->qp_num);
	CHECK_EQ(wc->byte_len, len);
	if (imm) {
		CHECK(wc->wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(wc->imm_data, htonl(IMM));
	} else {
		CHECK(!(wc->wc_flags & IBV_WC_WITH_IMM));
	}
}

/* SEND / SEND_WITH_IMM, 3 SGEs -> 3 SGEs. */
static void op_send(int imm, uint32_t seed)
{
	const char *name = imm ? "SEND_WITH_IMM" : "SEND";
	struct ibv_sge ssg[3], rsg[3];
	struct ibv_wc wc;

	reset_images(seed);
	fill_segs(mapA, shA, src, 3, seed);
	sge_list(rsg, dst, 3);
	CHECK_OK(t_post_recv(bqp, 0xB0 + seed, rsg, 3));
	sge_list(ssg, src, 3);
	arm();
	CHECK_OK(t_post(aqp, 0xA0 + seed, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			ssg, 3, IBV_SEND_SIGNALED, 0, 0, IMM));
	get_wc(acq, ach, &wc);
	check_send_wc(&wc, 0xA0 + seed, IBV_WC_SEND);
	get_wc(bcq, bch, &wc);
	check_recv_wc(&wc, 0xB0 + seed, IBV_WC_RECV, msg_len, imm);
	expect_scatter(mapB, shB, dst, 3, seed, msg_len);
	check_images(name);
}

/* RDMA_WRITE / RDMA_WRITE_WITH_IMM, 3 SGEs -> one remote range. */
static void op_write(int imm, uint32_t seed)
{
	const char *name = imm ? "RDMA_WRITE_WITH_IMM" : "RDMA_WRITE";
	struct ibv_sge ssg[3];
	struct ibv_wc wc;

	reset_images(seed);
	fill_segs(mapA, shA, src, 3, seed);
	/* A receive with no SGE is enough for write-with-immediate. */
	if (imm)
		CHECK_OK(t_post_recv(bqp, 0xB0 + seed, NULL, 0));
	sge_list(ssg, src, 3);
	arm();
	CHECK_OK(t_post(aqp, 0xA0 + seed,
			imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
			ssg, 3, IBV_SEND_SIGNALED, (uintptr_t)tgt, mr_t->rkey, IMM));
	get_wc(acq, ach, &wc);
	check_send_wc(&wc, 0xA0 + seed, IBV_WC_RDMA_WRITE);
	if (imm) {
		get_wc(bcq, bch, &wc);
		check_recv_wc(&wc, 0xB0 + seed, IBV_WC_RECV_RDMA_WITH_IMM,
			      msg_len, 1);
	}
	t_fill(shB + (tgt - mapB), msg_len, seed, 0);
	check_images(name);
}

/* RDMA_READ, one remote range -> 3 SGEs. */
static void op_read(uint32_t seed)
{
	struct ibv_sge ssg[3];
	struct ibv_wc wc;

	reset_images(seed);
	t_fill(tgt, msg_len, seed, 0);
	t_fill(shB + (tgt - mapB), msg_len, seed, 0);
	sge_list(ssg, src, 3);
	arm();
	CHECK_OK(t_post(aqp, 0xA0 + seed, IBV_WR_RDMA_READ, ssg, 3,
			IBV_SEND_SIGNALED, (uintptr_t)tgt, mr_t->rkey, 0));
	get_wc(acq, ach, &wc);
	check_send_wc(&wc, 0xA0 + seed, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, msg_len);
	expect_scatter(mapA, shA, src, 3, seed, msg_len);
	check_images("RDMA_READ");
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* One atomic; checks the value fetched into res and the target afterwards. */
static void op_atomic(const char *name, enum ibv_wr_opcode op, uint64_t cmp_add,
		      uint64_t swap, uint64_t before, uint64_t after, uint32_t seed)
{
	struct ibv_sge sg = t_sge(res, 8, mr_res->lkey);
	struct ibv_wc wc;

	reset_images(seed);
	put64(atom, before);
	put64(shB + (atom - mapB), before);
	arm();
	CHECK_OK(t_post_atomic(aqp, 0xA0 + seed, op, &sg, IBV_SEND_SIGNALED,
			       (uintptr_t)atom, mr_t->rkey, cmp_add, swap));
	get_wc(acq, ach, &wc);
	check_send_wc(&wc, 0xA0 + seed, op == IBV_WR_ATOMIC_CMP_AND_SWP ?
		      IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	CHECK_EQ(wc.byte_len, 8);
	put64(shA + (res - mapA), before);	/* the original value comes back */
	put64(shB + (atom - mapB), after);
	check_images(name);
}

/* The inline variants: unregistered source, lkey 0, clobbered after posting. */
static void op_inline(enum ibv_wr_opcode op, uint32_t seed)
{
	static const char *names[] = {
		[IBV_WR_SEND] = "inline SEND",
		[IBV_WR_SEND_WITH_IMM] = "inline SEND_WITH_IMM",
		[IBV_WR_RDMA_WRITE] = "inline RDMA_WRITE",
		[IBV_WR_RDMA_WRITE_WITH_IMM] = "inline RDMA_WRITE_WITH_IMM",
	};
	int imm = op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	int send = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
	uint32_t cap_recv = dst[0].len + dst[1].len + dst[2].len;
	uint32_t L = acap.max_inline_data;
	uint32_t part[3];
	uint8_t *buf[3];
	struct ibv_sge ssg[4], rsg[3];
	struct ibv_wc wc;
	size_t pos = 0;

	if (L > cap_recv)
		L = cap_recv;
	if (L > msg_len)
		L = msg_len;
	part[0] = L / 3;
	part[1] = L / 3;
	part[2] = L - part[0] - part[1];
	reset_images(seed);
	for (int i = 0; i < 3; i++) {
		buf[i] = malloc(part[i] + 1);
		CHECK(buf[i]);
		t_fill(buf[i], part[i], seed, pos);
		ssg[i] = t_sge(buf[i], part[i], 0);	/* lkey is not checked */
		pos += part[i];
	}
	ssg[3] = (struct ibv_sge){ .addr = 0, .length = 0 };	/* UCX posts these: no bytes, no read */
	if (send) {
		sge_list(rsg, dst, 3);
		CHECK_OK(t_post_recv(bqp, 0xB0 + seed, rsg, 3));
	} else if (imm) {
		CHECK_OK(t_post_recv(bqp, 0xB0 + seed, NULL, 0));
	}
	arm();
	CHECK_OK(t_post(aqp, 0xA0 + seed, op, ssg, 4,
			IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			send ? 0 : (uintptr_t)tgt, send ? 0 : mr_t->rkey, IMM));
	for (int i = 0; i < 3; i++)
		memset(buf[i], 0xEE, part[i]);	/* may reuse at once */
	get_wc(acq, ach, &wc);
	check_send_wc(&wc, 0xA0 + seed, send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
	if (send || imm) {
		get_wc(bcq, bch, &wc);
		check_recv_wc(&wc, 0xB0 + seed,
			      send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM, L, imm);
	}
	if (send)
		expect_scatter(mapB, shB, dst, 3, seed, L);
	else
		t_fill(shB + (tgt - mapB), L, seed, 0);
	check_images(names[op]);
	for (int i = 0; i < 3; i++)
		free(buf[i]);
}

static void setup_memory(void)
{
	uint32_t R0, R1;

	P = t_page();
	LEN = NPAGES * P;
	mapA = t_map(LEN);
	mapB = t_map(LEN);
	shA = malloc(LEN);
	shB = malloc(LEN);
	CHECK(shA && shB);

	/* A: three sources, each across a page boundary; src0/src1 share
	 * page 1 and src1/src2 share page 3. */
	src[0] = (struct seg){ mapA + P - 300, 1000, NULL };
	src[1] = (struct seg){ mapA + 2 * P - 7, (uint32_t)P + 37, NULL };
	src[2] = (struct seg){ mapA + 4 * P - 100, 513, NULL };
	for (int i = 0; i < 3; i++)
		src[i].mr = t_reg(A.pd, src[i].p, src[i].len, IBV_ACCESS_LOCAL_WRITE);
	msg_len = src[0].len + src[1].len + src[2].len;
	res = mapA + 6 * P - 16;
	mr_res = t_reg(A.pd, res, 8, IBV_ACCESS_LOCAL_WRITE);

	/* B: three receive buffers split elsewhere, 300 bytes to spare. */
	R0 = 2000;
	R1 = (uint32_t)P / 2 + 1000;
	dst[0] = (struct seg){ mapB + P - 1000, R0, NULL };
	dst[1] = (struct seg){ mapB + 2 * P - 5, R1, NULL };
	dst[2] = (struct seg){ mapB + 4 * P - 400, msg_len + 300 - R0 - R1, NULL };
	for (int i = 0; i < 3; i++)
		dst[i].mr = t_reg(B.pd, dst[i].p, dst[i].len, IBV_ACCESS_LOCAL_WRITE);
	/* One remote-accessible MR over the last three pages (less 64 bytes). */
	mr_t = t_reg(B.pd, mapB + 5 * P - 64, 3 * P, T_ALL_ACCESS);
	tgt = mapB + 5 * P - 40;
	atom = mapB + 8 * P - 80;
	CHECK(tgt + msg_len < atom);
}

int main(int argc, char **argv)
{
	struct ibv_qp_cap cap;
	struct t_conn c;

	t_conn_default(&c);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "event") == 0)
			event_mode = 1;
		else if (strcmp(argv[i], "noglobal") == 0)
			c.is_global = 0;
		else {
			fprintf(stderr, "usage: %s [event] [noglobal]\n", argv[0]);
			return 1;
		}
	}
	t_start(event_mode ? (c.is_global ? "t_opcodes event" : "t_opcodes event noglobal")
			   : (c.is_global ? "t_opcodes" : "t_opcodes noglobal"));
	t_open(&A, 0);
	t_open(&B, 1);
	if (event_mode) {
		ach = t_channel(&A);
		bch = t_channel(&B);
	}
	acq = t_cq(&A, 16, ach);
	bcq = t_cq(&B, 16, bch);
	memset(&cap, 0, sizeof(cap));
	cap.max_send_wr = 16;
	cap.max_recv_wr = 16;
	cap.max_send_sge = 4;
	cap.max_recv_sge = 3;
	cap.max_inline_data = 128;
	acap = cap;
	aqp = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 0, &acap);
	bqp = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, &cap);
	c.max_rd_atomic = 1;
	t_rc_connect(&A, aqp, &B, bqp, &c);
	setup_memory();

	op_send(0, 1);
	op_send(1, 2);
	op_write(0, 3);
	op_write(1, 4);
	op_read(5);
	op_atomic("CMP_AND_SWP hit", IBV_WR_ATOMIC_CMP_AND_SWP,
		  0x1122334455667788ull, 0x8877665544332211ull,
		  0x1122334455667788ull, 0x8877665544332211ull, 6);
	op_atomic("CMP_AND_SWP miss", IBV_WR_ATOMIC_CMP_AND_SWP,
		  0x1122334455667788ull, 0x0123456789abcdefull,
		  0x8877665544332211ull, 0x8877665544332211ull, 7);
	/* The add carries across the 32-bit halves. */
	op_atomic("FETCH_AND_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD,
		  0x0000000100000020ull, 0,
		  0x11223344fffffff0ull, 0x1122334600000010ull, 8);
	op_inline(IBV_WR_SEND, 9);
	op_inline(IBV_WR_SEND_WITH_IMM, 10);
	op_inline(IBV_WR_RDMA_WRITE, 11);
	op_inline(IBV_WR_RDMA_WRITE_WITH_IMM, 12);

	CHECK_CQ_EMPTY(acq);
	CHECK_CQ_EMPTY(bcq);
	if (event_mode) {
		/* Every event was consumed; none is left without a completion. */
		CHECK(t_wait_cq_event(ach, 50) == NULL);
		CHECK(t_wait_cq_event(bch, 50) == NULL);
	}

	CHECK_OK(ibv_destroy_qp(aqp));
	CHECK_OK(ibv_destroy_qp(bqp));
	for (int i = 0; i < 3; i++) {
		CHECK_OK(ibv_dereg_mr(src[i].mr));
		CHECK_OK(ibv_dereg_mr(dst[i].mr));
	}
	CHECK_OK(ibv_dereg_mr(mr_res));
	CHECK_OK(ibv_dereg_mr(mr_t));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	if (event_mode) {
		CHECK_OK(ibv_destroy_comp_channel(ach));
		CHECK_OK(ibv_destroy_comp_channel(bch));
	}
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* u_engine: the engine on its own, linked with libunirdma-engine.a (engine/,
 * core/, common/) and nothing of the control plane.
 *
 * The test plays both the control plane (it builds a vRNIC, a context, a PD,
 * MRs, a CQ and two connected RC QPs directly in the object model, with
 * core/'s tables) and the library (it writes WQEs into the send ring, rings
 * the doorbell and reads CQEs).  Then it runs engine_pass() and checks the
 * bytes, the CQEs, the QP states and the engine's own counter:
 *   write_small   RDMA WRITE 64 B: data, one signaled CQE, nothing at the target
 *   write_pieces  RDMA WRITE 1 MiB + 5 B: moves in pieces over several passes
 *   send_recv     SEND into a posted receive WQE: data, both CQEs, byte_len
 *   read          RDMA READ 4 KiB back into the requester's MR
 *   bad_rkey      WRITE with a wrong rkey: REM_ACCESS_ERR, the QP in error,
 *                 the target untouched, later WQEs flushed
 * Output: one "ok NAME" / "FAIL NAME: why" line each; exit status 1 on failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "engine.h"
#include "objects.h"
#include "unirdma/barrier.h"

#define RING_N     64u
#define SQ_SLOT    256u                 /* header + 8 SGEs */
#define RQ_SLOT    64u                  /* header + 3 SGEs */
#define BUF_BYTES  (2u << 20)

static int failures;

#define CHECK(name, cond, ...) do {                                     \
	if (!(cond)) {                                                  \
		printf("FAIL %s: ", name);                               \
		printf(__VA_ARGS__);                                     \
		printf("\n");                                            \
		failures++;                                              \
		return;                                                  \
	}                                                               \
} while (0)

static void *zalloc(size_t n)
{
	void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);

	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, 0, (n + 4095) & ~(size_t)4095);
	return p;
}

static void ring_init(struct vr_ring *r, uint32_t n, uint32_t slot)
{
	urd_queue_init(&r->q, zalloc(URD_RING_HDR_SIZE + (size_t)n * slot), n,
		       (uint32_t)__builtin_ctz(slot));
	r->bytes = URD_RING_HDR_SIZE + (uint64_t)n * slot;
}

/* ------------------------------------------------------------ the model */

static struct urd_daemon dev;
static struct urd_vrnic vr;
static struct vr_ctx ctx;
static struct vr_pd pd;
static struct vr_cq cq;
static struct vr_qp qa, qb;
static struct vr_mr mra, mrb;
static struct vr_mr_piece piece_a, piece_b;
static uint8_t *buf_a, *buf_b;

static void mr_init(struct vr_mr *mr, struct vr_mr_piece *pc, uint8_t *buf, uint32_t access)
{
	mr->obj.type = OBJ_MR;
	mr->obj.ctx = &ctx;
	mr->pd = &pd;
	mr->access = access;
	mr->iova = (uintptr_t)buf;
	mr->length = BUF_BYTES;
	pc->mr_off = 0;
	pc->len = BUF_BYTES;
	pc->ptr = buf;
	mr->nsegs = 1;
	mr->segs = pc;
	mr->lkey = mr_key_new(&vr);
	mr->rkey = mr_key_new(&vr);
	mr_keys_link(&vr, mr);
}

static void qp_init(struct vr_qp *qp, uint32_t db)
{
	qp->obj.type = OBJ_QP;
	qp->obj.ctx = &ctx;
	qp->vr = &vr;
	qp->type = IBV_QPT_RC;
	qp->pd = &pd;
	qp->scq = qp->rcq = &cq;
	ring_init(&qp->sq, RING_N, SQ_SLOT);
	ring_init(&qp->rq, RING_N, RQ_SLOT);
	qp->cap.max_send_wr = qp->cap.max_recv_wr = RING_N;
	qp->cap.max_send_sge = 8;
	qp->cap.max_recv_sge = 3;
	qp->db_index = db;
	qp->qpn = qpn_alloc(&dev);
	qpn_link(&dev, qp);
	vr.qp_slots[db] = qp;
}

static void connect(struct vr_qp *a, struct vr_qp *b)
{
	a->state = IBV_QPS_RTS;
	a->attr.qp_state = IBV_QPS_RTS;
	a->attr.dest_qp_num = b->qpn;
	a->attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC;
	a->attr.timeout = 14;
	a->attr.retry_cnt = 7;
	a->attr.rnr_retry = 7;
	a->attr.min_rnr_timer = 1;
}

static void setup(void)
{
	pthread_mutex_init(&dev.lock, NULL);
	dev.qpn_sequential = true;
	dev.next_qpn = 100;
	vr.d = &dev;
	vr.id = 0;
	snprintf(vr.name, sizeof(vr.name), "u0");
	snprintf(vr.tenant, sizeof(vr.tenant), "t");
	vr.db = zalloc(sizeof(*vr.db));
	vr.fd = -1;
	urd_vrnic_slot_set(&dev, 0, &vr);
	ctx.vr = &vr;
	ctx.shm = zalloc(sizeof(*ctx.shm));
	pd.obj.type = OBJ_PD;
	pd.obj.ctx = &ctx;
	cq.obj.type = OBJ_CQ;
	cq.obj.ctx = &ctx;
	ring_init(&cq.ring, 4 * RING_N, sizeof(struct urd_cqe));
	buf_a = zalloc(BUF_BYTES);
	buf_b = zalloc(BUF_BYTES);
	mr_init(&mra, &piece_a, buf_a, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	mr_init(&mrb, &piece_b, buf_b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	qp_init(&qa, 1);
	qp_init(&qb, 70);               /* a second doorbell word */
	connect(&qa, &qb);
	connect(&qb, &qa);
}

/* ----------------------------------------------------- the library's side */

static void ring_doorbell(struct vr_qp *qp)
{
	uint32_t w = qp->db_index / 64, b = qp->db_index % 64;

	urd_fetch_or(&vr.db->bits[w], 1ull << b);
	urd_fetch_or(&vr.db->summary, 1ull << w);
}

static void post_send(struct vr_qp *qp, uint8_t opcode, uint64_t wr_id, uint8_t *local, uint32_t len,
		      const struct vr_mr *lmr, uint64_t raddr, uint32_t rkey)
{
	struct vr_ring *r = &qp->sq;
	uint32_t prod = r->q.hdr->prod;
	struct urd_send_wqe *w = urd_queue_slot(&r->q, prod);
	struct urd_sge *sg = (void *)(w + 1);

	memset(w, 0, SQ_SLOT);
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->flags = URD_WQE_SIGNALED;
	w->num_sge = 1;
	w->rkey = rkey;
	w->remote_addr = raddr;
	sg->addr = (uintptr_t)local;
	sg->length = len;
	sg->lkey = lmr->lkey;
	urd_store_release(&r->q.hdr->prod, prod + 1);
	ring_doorbell(qp);
}

static void post_recv(struct vr_qp *qp, uint64_t wr_id, uint8_t *local, uint32_t len, const struct vr_mr *lmr)
{
	struct vr_ring *r = &qp->rq;
	uint32_t prod = r->q.hdr->prod;
	struct urd_recv_wqe *w = urd_queue_slot(&r->q, prod);
	struct urd_sge *sg = (void *)(w + 1);

	w->wr_id = wr_id;
	w->num_sge = 1;
	sg->addr = (uintptr_t)local;
	sg->length = len;
	sg->lkey = lmr->lkey;
	urd_store_release(&r->q.hdr->prod, prod + 1);
}

static bool poll_cqe(struct urd_cqe *out)
{
	struct urd_ring_hdr *h = cq.ring.q.hdr;
	uint32_t cons = h->cons;

	if (cons == urd_load_acquire(&h->prod))
		return false;
	memcpy(out, urd_queue_slot(&cq.ring.q, cons), sizeof(*out));
	urd_store_release(&h->cons, cons + 1);
	return true;
}

/* Run engine passes until nothing is left to do (bounded); the number of
 * passes that did work. */
static int run_engine(void)
{
	int worked = 0;

	for (int i = 0; i < 10000; i++) {
		struct timespec ts;
		uint64_t now, next;
		bool did;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		pthread_mutex_lock(&dev.lock);
		did = engine_pass(&dev, now, &next);
		pthread_mutex_unlock(&dev.lock);
		worked += did;
		if (!did && next == UINT64_MAX && !dev.eng.nactive)
			break;
	}
	return worked;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

/* --------------------------------------------------------------- the cases */

static void write_small(void)
{
	const char *t = "write_small";
	uint64_t copied = dev.eng.copied_bytes;
	struct urd_cqe c;

	fill(buf_a, 64, 1);
	memset(buf_b + 4096, 0xee, 128);
	post_send(&qa, URD_WR_RDMA_WRITE, 11, buf_a, 64, &mra, (uintptr_t)buf_b + 4096, mrb.rkey);
	run_engine();
	CHECK(t, memcmp(buf_a, buf_b + 4096, 64) == 0, "target bytes differ");
	CHECK(t, buf_b[4096 + 64] == 0xee, "wrote past the end");
	CHECK(t, poll_cqe(&c), "no CQE");
	CHECK(t, c.wr_id == 11 && c.status == IBV_WC_SUCCESS && c.opcode == IBV_WC_RDMA_WRITE &&
	      c.qp_num == qa.qpn, "CQE wr_id %llu status %u opcode %u qp %u",
	      (unsigned long long)c.wr_id, c.status, c.opcode, c.qp_num);
	CHECK(t, !poll_cqe(&c), "a second CQE (wr_id %llu)", (unsigned long long)c.wr_id);
	CHECK(t, dev.eng.copied_bytes - copied == 64, "engine counted %llu bytes",
	      (unsigned long long)(dev.eng.copied_bytes - copied));
	CHECK(t, qa.cnt.tx_bytes == 64 && vr.cnt.tx_ops == 1, "counters tx %llu ops %llu",
	      (unsigned long long)qa.cnt.tx_bytes, (unsigned long long)vr.cnt.tx_ops);
	printf("ok %s\n", t);
}

static void write_pieces(void)
{
	const char *t = "write_pieces";
	const uint32_t len = (1u << 20) + 5;
	struct urd_cqe c;
	int passes;

	fill(buf_a, len, 3);
	memset(buf_b, 0, BUF_BYTES);
	post_send(&qa, URD_WR_RDMA_WRITE, 12, buf_a, len, &mra, (uintptr_t)buf_b + 7, mrb.rkey);
	passes = run_engine();
	CHECK(t, memcmp(buf_a, buf_b + 7, len) == 0, "target bytes differ");
	CHECK(t, buf_b[6] == 0 && buf_b[7 + len] == 0, "wrote outside the range");
	CHECK(t, passes >= 4, "%d passes for a 1 MiB message (pieces of 256 KiB expected)", passes);
	CHECK(t, poll_cqe(&c) && c.wr_id == 12 && c.status == IBV_WC_SUCCESS, "no good CQE");
	CHECK(t, !poll_cqe(&c), "more than one CQE for one message");
	printf("ok %s (%d passes)\n", t, passes);
}

static void send_recv(void)
{
	const char *t = "send_recv";
	struct urd_cqe c1, c2;

	fill(buf_a + 8192, 300, 5);
	post_recv(&qb, 21, buf_b + 8192, 1024, &mrb);
	post_send(&qa, URD_WR_SEND, 22, buf_a + 8192, 300, &mra, 0, 0);
	run_engine();
	CHECK(t, memcmp(buf_a + 8192, buf_b + 8192, 300) == 0, "received bytes differ");
	CHECK(t, poll_cqe(&c1) && poll_cqe(&c2), "two CQEs expected");
	if (c1.wr_id == 22) {           /* the order of the two is the engine's */
		struct urd_cqe x = c1;

		c1 = c2;
		c2 = x;
	}
	CHECK(t, c1.wr_id == 21 && c1.status == IBV_WC_SUCCESS && c1.opcode == IBV_WC_RECV &&
	      c1.byte_len == 300 && c1.qp_num == qb.qpn && c1.src_qp == qa.qpn,
	      "recv CQE wr_id %llu status %u opcode %u len %u qp %u src %u",
	      (unsigned long long)c1.wr_id, c1.status, c1.opcode, c1.byte_len, c1.qp_num, c1.src_qp);
	CHECK(t, c2.wr_id == 22 && c2.status == IBV_WC_SUCCESS && c2.opcode == IBV_WC_SEND, "send CQE");
	printf("ok %s\n", t);
}

static void rdma_read(void)
{
	const char *t = "read";
	struct urd_cqe c;

	fill(buf_b + 65536, 4096, 9);
	memset(buf_a + 65536, 0, 4096);
	post_send(&qa, URD_WR_RDMA_READ, 31, buf_a + 65536, 4096, &mra, (uintptr_t)buf_b + 65536, mrb.rkey);
	run_engine();
	CHECK(t, memcmp(buf_a + 65536, buf_b + 65536, 4096) == 0, "read bytes differ");
	CHECK(t, poll_cqe(&c) && c.wr_id == 31 && c.status == IBV_WC_SUCCESS &&
	      c.opcode == IBV_WC_RDMA_READ && c.byte_len == 4096, "CQE");
	printf("ok %s\n", t);
}

static void bad_rkey(void)
{
	const char *t = "bad_rkey";
	struct urd_cqe c;

	fill(buf_a, 64, 11);
	memset(buf_b + 12288, 0x5a, 64);
	post_send(&qa, URD_WR_RDMA_WRITE, 41, buf_a, 64, &mra, (uintptr_t)buf_b + 12288, mrb.rkey ^ 0x100);
	post_send(&qa, URD_WR_RDMA_WRITE, 42, buf_a, 64, &mra, (uintptr_t)buf_b + 12288, mrb.rkey);
	run_engine();
	for (int i = 0; i < 64; i++)
		CHECK(t, buf_b[12288 + i] == 0x5a, "the target changed at byte %d", i);
	CHECK(t, poll_cqe(&c) && c.wr_id == 41 && c.status == IBV_WC_REM_ACCESS_ERR,
	      "first CQE wr_id %llu status %u", (unsigned long long)c.wr_id, c.status);
	CHECK(t, poll_cqe(&c) && c.wr_id == 42 && c.status == IBV_WC_WR_FLUSH_ERR,
	      "second CQE wr_id %llu status %u", (unsigned long long)c.wr_id, c.status);
	CHECK(t, qa.state == IBV_QPS_ERR, "requester state %u", qa.state);
	CHECK(t, qa.cnt.errors == 1, "errors counted %llu", (unsigned long long)qa.cnt.errors);
	printf("ok %s\n", t);
}

int main(void)
{
	setup();
	write_small();
	write_pieces();
	send_recv();
	rdma_read();
	bad_rkey();
	printf("%s\n", failures ? "u_engine: FAILED" : "u_engine: all passed");
	return failures ? 1 : 0;
}

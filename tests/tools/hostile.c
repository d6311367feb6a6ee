/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* hostile: a tenant that attacks unirdmad through its own vRNIC region.
 *
 * It uses our libibverbs as any application does (PD, MR, CQs, RC QPs
 * connected to each other, a UD QP, an SRQ with a QP on it, posts and
 * polls), and ALSO maps its region file ($UNIRDMA_DEVDIR/<dev>/region)
 * MAP_SHARED, as the library does, and writes random and adversarial bytes
 * into every part of it: its own and other slots' mailboxes (request areas,
 * req_seq, async_cons, ...), ctrl_bell, engine_wake and engine_sleeping, the
 * doorbell bitmaps, the ring headers and slots of its QPs, CQs and SRQ (WQEs
 * with random opcodes, SGEs with random addresses, lengths and keys, inline
 * lengths, producer indices far ahead or wrapped), the header's attributes,
 * and raw control requests of its own, while it keeps making verbs calls.
 * As a final blow it truncates the region file (the daemon has a SIGBUS
 * guard for that).
 *
 *   phase 1 (checks)  in a clean state, garbage must get errors: invalid
 *                     control requests (bad version, op, lengths, handles,
 *                     segments, sizes, transitions) answer -errno, WQEs with
 *                     a bad lkey, rkey or bounds complete with an error, and
 *                     (--spray) SENDs to QPNs near its own, which belong to
 *                     other programs, are counted; with --isolated (no other
 *                     vRNIC is in our tenant) none may be acknowledged.
 *   phase 2 (chaos)   rounds of attacks, each in a child process: the
 *                     library may crash on the garbage it reads back (that
 *                     is allowed; the parent counts it and starts another).
 *                     --only ATTACK repeats one kind (a reproducer).
 *   phase 3           (unless --no-truncate) ftruncate the region to 4 KiB
 *                     in a last child, which then dies of SIGBUS.
 *
 * usage: hostile [-t SECONDS] [-s SEED] [--spray] [--spray-only] [--isolated]
 *                [--spray-qpns FILE] [--no-truncate] [--only ATTACK] [-v]
 * QPNs are random (issue 9): QPNs near our own are nobody's.  --spray-qpns
 * FILE sprays the QPNs listed in FILE instead (one per line, reread every
 * round), which the test writes from what the operator sees (`unirdma vrnic
 * show --json` of the victims).
 * Exit code: 0 when every phase-1 check saw an error, nothing it sprayed
 * reached another tenant and the final blow was struck; 1 otherwise; 2
 * usage; 77 no device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "unirdma/abi.h"
#include "unirdma/fwd.h"

/* ------------------------------------------------------------- options */

static struct {
	double secs;
	unsigned int seed;
	bool spray, spray_only, isolated, truncate;
	int verbose;
	const char *only;               /* one attack, repeated (a reproducer) */
	const char *qpn_file;           /* --spray-qpns: the QPNs to spray */
} opt = { 20.0, 0, false, false, false, true, 0, NULL, NULL };

/* Counters shared by the children (MAP_SHARED anonymous memory). */
struct stats {
	uint64_t rounds, crashed, killed, attacks;
	uint64_t raw_sent, raw_answered, raw_ok, raw_timeouts;
	uint64_t wc_ok, wc_err;
	uint64_t spray_sent, spray_acked;
	uint64_t checks, checks_failed;
	/* the header as the daemon wrote it: each round starts from it, so one
	 * round's scribbles on the attributes do not stop the next from working */
	uint32_t have_hdr, truncated, blow_step;
	uint8_t hdr[URD_HDR_SIZE];
	char region_path[600];
};
static struct stats *st;

#define ADD(field, n) __atomic_fetch_add(&st->field, (n), __ATOMIC_RELAXED)

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define VERBOSE(...) do { if (opt.verbose) say(__VA_ARGS__); } while (0)

/* ------------------------------------------------------------- random */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd_n(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* A value a careless or malicious writer would pick for a 32-bit field. */
static uint32_t evil32(uint32_t honest)
{
	switch (rnd_n(12)) {
	case 0: return 0;
	case 1: return UINT32_MAX;
	case 2: return honest + 1;
	case 3: return honest - 1;
	case 4: return 0x80000000u;
	case 5: return 0x7fffffffu;
	case 6: return honest + 0x10000;
	case 7: return honest ^ (1u << rnd_n(32));
	case 8: return (uint32_t)rnd_n(64);
	case 9: return honest * 2 + 1;
	default: return (uint32_t)rnd();
	}
}

static uint64_t evil64(uint64_t honest)
{
	switch (rnd_n(8)) {
	case 0: return 0;
	case 1: return UINT64_MAX;
	case 2: return honest + 1;
	case 3: return honest - 1;
	case 4: return 1ull << 63;
	case 5: return honest + (1ull << 32);
	default: return rnd();
	}
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;
	uint8_t v = (uint8_t)rnd();

	switch (rnd_n(4)) {
	case 0: memset(b, 0, n); break;
	case 1: memset(b, 0xff, n); break;
	case 2: memset(b, v, n); break;
	default:
		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)rnd();
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* ------------------------------------------------------- the device */

struct dev {
	struct ibv_context *ctx;
	const char *name;
	char region_path[600];
	int fd;                         /* the region file, O_RDWR */
	uint8_t *region;                /* MAP_SHARED, ctrl_size bytes */
	uint64_t ctrl_size;
	struct urd_region_hdr *hdr;
	union ibv_gid gid;
};

static int dev_open(struct dev *d)
{
	struct ibv_device **list;
	const char *dir = getenv("UNIRDMA_DEVDIR");
	struct urd_region_hdr h;
	int n;

	memset(d, 0, sizeof(*d));
	d->fd = -1;
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		return -ENODEV;
	d->name = ibv_get_device_name(list[0]);
	d->ctx = ibv_open_device(list[0]);
	if (!d->ctx)
		return -errno;
	if (ibv_query_gid(d->ctx, 1, 0, &d->gid))
		return -EIO;
	snprintf(d->region_path, sizeof(d->region_path), "%s/%s/region", dir ? dir : "/run/unirdma/dev",
		 d->name);
	d->fd = open(d->region_path, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	if (pread(d->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != URD_MAGIC ||
	    h.ctrl_size < URD_ARENA_OFF || h.ctrl_size > URD_REGION_CTRL_SIZE)
		return -EPROTO;
	d->ctrl_size = h.ctrl_size;
	d->region = mmap(NULL, d->ctrl_size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, 0);
	if (d->region == MAP_FAILED)
		return -errno;
	d->hdr = (struct urd_region_hdr *)d->region;
	return 0;
}

static struct urd_slot_hdr *slot_of(struct dev *d, uint32_t i)
{
	return (struct urd_slot_hdr *)(d->region + urd_slot_off(i));
}

/* ---------------------------------------- snooping on our own answers */

/* The library's answers stay in its slot's response area: the slot whose
 * resp_seq moved during a call holds the answer to it.  That is how this
 * tenant learns where the daemon put its rings (the library does not say). */
struct snoop {
	uint32_t seq[URD_MAX_CTX];
};

static void snoop_begin(struct dev *d, struct snoop *s)
{
	for (uint32_t i = 0; i < URD_MAX_CTX; i++)
		s->seq[i] = __atomic_load_n(&slot_of(d, i)->resp_seq, __ATOMIC_ACQUIRE);
}

static bool snoop_end(struct dev *d, const struct snoop *s, uint16_t op, void *out, size_t len)
{
	for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
		struct urd_slot_hdr *sl = slot_of(d, i);
		const struct urd_msg_hdr *h = (const void *)((uint8_t *)sl + URD_SLOT_RESP_OFF);

		if (__atomic_load_n(&sl->resp_seq, __ATOMIC_ACQUIRE) != s->seq[i] && h->op == op &&
		    h->status == 0) {
			memcpy(out, h, len);
			return true;
		}
	}
	return false;
}

/* ------------------------------------------- raw control requests */

/* A context of our own, spoken to without the library. */
struct raw {
	struct dev *d;
	int lock_fd;                    /* holds the slot's OFD lock; never mapped */
	uint32_t idx, seq;
	struct urd_slot_hdr *slot;
	bool open;
};

static int raw_open(struct raw *r, struct dev *d);

/* Sends len bytes of req (whose header says hdr_len) and waits up to 2 s for
 * the answer.  Returns its status, or 1 when none came. */
static int raw_call(struct raw *r, void *req, uint32_t len, void *resp, uint32_t resp_max)
{
	uint8_t *area = (uint8_t *)r->slot + URD_SLOT_REQ_OFF;
	const struct urd_msg_hdr *rh = (const void *)((uint8_t *)r->slot + URD_SLOT_RESP_OFF);
	uint32_t seq = r->seq + 1;
	double until = now_s() + 2.0;

	if (len > URD_MSG_MAX)
		len = URD_MSG_MAX;
	memcpy(area, req, len);
	__atomic_store_n(&r->slot->req_seq, seq, __ATOMIC_RELEASE);
	r->seq = seq;
	__atomic_fetch_add(&r->d->hdr->ctrl_bell, 1, __ATOMIC_SEQ_CST);
	futex_wake(&r->d->hdr->ctrl_bell);
	ADD(raw_sent, 1);
	while (__atomic_load_n(&r->slot->resp_seq, __ATOMIC_ACQUIRE) != seq) {
		struct timespec ts = { 0, 2000000 };

		if (now_s() > until) {
			ADD(raw_timeouts, 1);
			return 1;
		}
		syscall(SYS_futex, &r->slot->resp_seq, FUTEX_WAIT, r->slot->resp_seq, &ts, NULL, 0);
	}
	ADD(raw_answered, 1);
	if (rh->status == 0)
		ADD(raw_ok, 1);
	if (resp)
		memcpy(resp, rh, resp_max);
	return rh->status;
}

static void raw_hdr(void *req, uint16_t op, uint32_t len)
{
	struct urd_msg_hdr *h = req;

	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = len;
	h->status = 0;
	h->reserved = 0;
}

static int raw_open(struct raw *r, struct dev *d)
{
	struct urd_open_ctx_req q;

	memset(r, 0, sizeof(*r));
	r->d = d;
	r->lock_fd = open(d->region_path, O_RDWR | O_CLOEXEC);
	if (r->lock_fd < 0)
		return -errno;
	for (r->idx = 0; r->idx < URD_MAX_CTX; r->idx++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = r->idx, .l_len = 1 };

		if (!fcntl(r->lock_fd, F_OFD_SETLK, &fl))
			break;
	}
	if (r->idx == URD_MAX_CTX)
		return -EBUSY;
	r->slot = slot_of(d, r->idx);
	r->seq = __atomic_load_n(&r->slot->req_seq, __ATOMIC_ACQUIRE);
	memset(&q, 0, sizeof(q));
	raw_hdr(&q, URD_OP_OPEN_CTX, sizeof(q));
	q.pid = (uint32_t)getpid();
	if (raw_call(r, &q, sizeof(q), NULL, 0))
		return -EIO;
	r->open = true;
	return 0;
}

/* A raw request that must be refused. */
static void expect_refused(struct raw *r, const char *what, void *req, uint32_t len)
{
	int s = raw_call(r, req, len, NULL, 0);

	ADD(checks, 1);
	if (s < 0) {
		VERBOSE("  ok: %s refused (%d)", what, s);
		return;
	}
	ADD(checks_failed, 1);
	say("  FAIL: %s: %s", what, s == 0 ? "the daemon ACCEPTED it" : "no answer within 2 s");
}

static uint32_t raw_handle(struct raw *r, uint16_t op, void *req, uint32_t len)
{
	struct urd_handle_resp resp;

	raw_hdr(req, op, len);
	if (raw_call(r, req, len, &resp, sizeof(resp)))
		return 0;
	return resp.handle;
}

/* ------------------------------------------------------- verbs helpers */

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
};

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.cap.max_send_wr = 32;
	ia.cap.max_recv_wr = srq ? 0 : 32;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = srq ? 0 : 4;
	ia.cap.max_inline_data = 64;
	return ibv_create_qp(pd, &ia);
}

/* RESET -> INIT -> RTR -> RTS, connected to dest (RC) or ready (UD). */
static int connect_qp(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid, bool global,
		      uint8_t timeout, uint8_t retry)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = 0x11111111;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  (qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return -1;
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dest;
	at.rq_psn = 0;
	at.max_dest_rd_atomic = 4;
	at.min_rnr_timer = 1;
	at.ah_attr.is_global = global;
	at.ah_attr.grh.dgid = *gid;
	at.ah_attr.grh.hop_limit = 1;
	at.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &at, qp->qp_type == IBV_QPT_UD ? IBV_QP_STATE :
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	at.timeout = timeout;
	at.retry_cnt = retry;
	at.rnr_retry = retry;
	at.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &at, qp->qp_type == IBV_QPT_UD ? IBV_QP_STATE | IBV_QP_SQ_PSN :
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int make_pair(struct dev *d, struct ibv_pd *pd, struct pair *p)
{
	p->cq = ibv_create_cq(d->ctx, 128, NULL, NULL, 0);
	if (!p->cq)
		return -1;
	p->a = make_qp(pd, p->cq, NULL, IBV_QPT_RC);
	p->b = make_qp(pd, p->cq, NULL, IBV_QPT_RC);
	if (!p->a || !p->b)
		return -1;
	if (connect_qp(p->a, p->b->qp_num, &d->gid, true, 10, 1) ||
	    connect_qp(p->b, p->a->qp_num, &d->gid, true, 10, 1))
		return -1;
	return 0;
}

static void free_pair(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	memset(p, 0, sizeof(*p));
}

/* Waits up to 3 s for the completion of wr_id on cq; returns its status or -1. */
static int wait_wc(struct ibv_cq *cq, uint64_t wr_id)
{
	double until = now_s() + 3.0;
	struct ibv_wc wc;

	while (now_s() < until) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n == 1 && wc.wr_id == wr_id)
			return wc.status;
		if (n == 0)
			usleep(100);
	}
	return -1;
}

static int post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t addr, uint32_t len,
		    uint32_t lkey, uint32_t rkey, uint64_t raddr)
{
	struct ibv_sge sg = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv_one(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sg = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* A WQE that must complete with an error (the QP pair is used up). */
static void expect_wc_error(struct dev *d, struct ibv_pd *pd, struct ibv_mr *mr, const char *what,
			    enum ibv_wr_opcode op, uint64_t addr, uint32_t len, uint32_t lkey, uint32_t rkey,
			    uint64_t raddr)
{
	struct pair p;
	int s;

	memset(&p, 0, sizeof(p));
	ADD(checks, 1);
	if (make_pair(d, pd, &p)) {
		ADD(checks_failed, 1);
		say("  FAIL: %s: cannot set up a QP pair", what);
		free_pair(&p);
		return;
	}
	post_recv_one(p.b, 1, (uintptr_t)mr->addr, 4096, mr->lkey);
	if (post_one(p.a, op, 2, addr, len, lkey, rkey, raddr)) {
		VERBOSE("  ok: %s refused at post time", what);
		free_pair(&p);
		return;
	}
	s = wait_wc(p.cq, 2);
	if (s > 0) {
		VERBOSE("  ok: %s completed with %s", what, ibv_wc_status_str((enum ibv_wc_status)s));
	} else {
		ADD(checks_failed, 1);
		say("  FAIL: %s: %s", what, s == 0 ? "completed SUCCESSFULLY" : "no completion within 3 s");
	}
	free_pair(&p);
}

/* ------------------------------------------------------ phase 1: checks */

/* SENDs to QPNs near our own (or those of --spray-qpns), without a GRH
 * (found by QPN alone, as qperf and ibv_rc_pingpong without -g connect).
 * These are other programs' QPs, if anyone's. */
static void spray(struct dev *d, struct ibv_pd *pd, struct ibv_mr *mr, int width)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 4 * width + 8, NULL, NULL, 0);
	struct ibv_qp *mine = cq ? make_qp(pd, cq, NULL, IBV_QPT_RC) : NULL;
	uint32_t base, dests[256];
	uint64_t acked = 0, sent = 0;
	int nd = 0;

	if (!mine) {
		say("  FAIL: spray: cannot create a QP");
		ADD(checks_failed, 1);
		return;
	}
	base = mine->qp_num;
	ibv_destroy_qp(mine);
	if (opt.qpn_file) {
		FILE *f = fopen(opt.qpn_file, "r");
		unsigned int v;

		while (f && nd < 256 && fscanf(f, "%u", &v) == 1)
			dests[nd++] = v & 0xffffff;
		if (f)
			fclose(f);
	} else {
		for (int i = -width; i <= width && nd < 256; i++)
			dests[nd++] = (base + (uint32_t)i) & 0xffffff;
	}
	for (int i = 0; i < nd; i++) {
		uint32_t dest = dests[i];
		struct ibv_qp *qp = make_qp(pd, cq, NULL, IBV_QPT_RC);
		int s;

		if (!qp)
			break;
		if (qp->qp_num == dest || connect_qp(qp, dest, &d->gid, false, 1, 0)) {
			ibv_destroy_qp(qp);
			continue;
		}
		if (!post_one(qp, IBV_WR_SEND, 7, (uintptr_t)mr->addr, 64, mr->lkey, 0, 0)) {
			sent++;
			s = wait_wc(cq, 7);
			if (s == IBV_WC_SUCCESS) {
				acked++;
				say("  spray: our SEND to QPN %#x was acknowledged", dest);
			}
		}
		ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);
	ADD(spray_sent, sent);
	ADD(spray_acked, acked);
	say("spray: %llu SENDs to QPNs %s%#x that are not ours, %llu acknowledged",
	    (unsigned long long)sent, opt.qpn_file ? "listed, ours is " : "near ", base,
	    (unsigned long long)acked);
	ADD(checks, 1);
	if (opt.isolated && acked) {
		ADD(checks_failed, 1);
		say("  FAIL: SENDs reached QPs of another tenant");
	}
}

static void spray_loop(void)
{
	struct dev d;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	void *buf;
	double until = now_s() + opt.secs;

	if (dev_open(&d))
		_exit(77);
	pd = ibv_alloc_pd(d.ctx);
	if (!pd || posix_memalign(&buf, 4096, 65536))
		_exit(1);
	memset(buf, 0x5a, 65536);
	mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		_exit(1);
	while (now_s() < until) {
		spray(&d, pd, mr, 64);
		if (opt.qpn_file)
			usleep(50000);  /* the list changes as the victims run */
	}
	_exit(0);
}

static void phase_checks(void)
{
	struct dev d;
	struct raw r;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	void *buf;
	uint8_t req[512];
	uint32_t pdh, cqh, qph;
	int ret = dev_open(&d);

	if (ret) {
		say("cannot open the device or its region: %s", strerror(-ret));
		_exit(ret == -ENODEV ? 77 : 1);
	}
	say("device %s, region %s", d.name, d.region_path);
	memcpy(st->hdr, d.region, URD_HDR_SIZE);
	memcpy(st->region_path, d.region_path, sizeof(st->region_path));
	__atomic_store_n(&st->have_hdr, 1, __ATOMIC_RELEASE);
	pd = ibv_alloc_pd(d.ctx);
	if (posix_memalign(&buf, 4096, 65536) || !pd)
		_exit(1);
	memset(buf, 0x33, 65536);
	mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		_exit(1);

	/* verbs calls the daemon must refuse */
	ADD(checks, 2);
	if (ibv_create_cq(d.ctx, 0x7fffffff, NULL, NULL, 0)) {
		ADD(checks_failed, 1);
		say("  FAIL: a CQ of 2^31 entries was created");
	}
	{
		struct ibv_cq *cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 1u << 30;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		if (cq && ibv_create_qp(pd, &ia)) {
			ADD(checks_failed, 1);
			say("  FAIL: a QP with 2^30 send WRs was created");
		}
	}

	/* WQEs the engine must complete with an error */
	expect_wc_error(&d, pd, mr, "SEND with a wrong lkey", IBV_WR_SEND, (uintptr_t)buf, 64,
			mr->lkey ^ 0x5a5a5a5a, 0, 0);
	expect_wc_error(&d, pd, mr, "SEND from past the end of the MR", IBV_WR_SEND, (uintptr_t)buf + 65536 - 8,
			64, mr->lkey, 0, 0);
	expect_wc_error(&d, pd, mr, "SEND of 2 GiB", IBV_WR_SEND, (uintptr_t)buf, 0x80000000u, mr->lkey, 0, 0);
	expect_wc_error(&d, pd, mr, "RDMA WRITE with a wrong rkey", IBV_WR_RDMA_WRITE, (uintptr_t)buf, 64,
			mr->lkey, mr->rkey + 1, (uintptr_t)buf);
	expect_wc_error(&d, pd, mr, "RDMA READ past the end of the MR", IBV_WR_RDMA_READ, (uintptr_t)buf, 64,
			mr->lkey, mr->rkey, (uintptr_t)buf + 65536 - 32);
	expect_wc_error(&d, pd, mr, "misaligned ATOMIC", IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf, 8,
			mr->lkey, mr->rkey, (uintptr_t)buf + 3);

	/* raw control requests the daemon must refuse */
	if (raw_open(&r, &d)) {
		ADD(checks_failed, 1);
		say("  FAIL: cannot open a raw context (OPEN_CTX)");
		_exit(1);
	}
	memset(req, 0, sizeof(req));
	raw_hdr(req, URD_OP_ALLOC_PD, 16);
	((struct urd_msg_hdr *)req)->version = 0;
	expect_refused(&r, "version 0", req, 16);
	((struct urd_msg_hdr *)req)->version = URD_ABI_VERSION + 1;
	expect_refused(&r, "version 2", req, 16);
	raw_hdr(req, 0, 16);
	expect_refused(&r, "op 0", req, 16);
	raw_hdr(req, 0xffff, 16);
	expect_refused(&r, "op 65535", req, 16);
	raw_hdr(req, URD_OP_ALLOC_PD, 15);
	expect_refused(&r, "length 15", req, 16);
	raw_hdr(req, URD_OP_ALLOC_PD, URD_MSG_MAX + 1);
	expect_refused(&r, "length URD_MSG_MAX + 1", req, 16);
	raw_hdr(req, URD_OP_ALLOC_PD, UINT32_MAX);
	expect_refused(&r, "length 2^32 - 1", req, 16);
	{
		struct urd_handle_req *h = (void *)req;

		raw_hdr(req, URD_OP_DEALLOC_PD, sizeof(*h));
		h->handle = 0xdeadbeef;
		expect_refused(&r, "DEALLOC_PD of a random handle", req, sizeof(*h));
		raw_hdr(req, URD_OP_DEALLOC_PD, sizeof(*h) - 1);
		expect_refused(&r, "DEALLOC_PD shorter than its struct", req, sizeof(*h));
		raw_hdr(req, URD_OP_DESTROY_QP, sizeof(*h));
		h->handle = 0x10001;
		expect_refused(&r, "DESTROY_QP of a handle never given", req, sizeof(*h));
	}
	{
		struct urd_mem_req *m = (void *)req;

		raw_hdr(req, URD_OP_MEM_ALLOC, sizeof(*m));
		m->len = 0;
		expect_refused(&r, "MEM_ALLOC of 0 bytes", req, sizeof(*m));
		m->len = 4095;
		expect_refused(&r, "MEM_ALLOC of 4095 bytes", req, sizeof(*m));
		m->len = 1ull << 62;
		expect_refused(&r, "MEM_ALLOC of 2^62 bytes", req, sizeof(*m));
		raw_hdr(req, URD_OP_MEM_FREE, sizeof(*m));
		m->off = 4096 * 1000;
		m->len = 4096;
		expect_refused(&r, "MEM_FREE of memory never allocated", req, sizeof(*m));
	}
	memset(req, 0, sizeof(req));
	pdh = raw_handle(&r, URD_OP_ALLOC_PD, req, 16);
	{
		struct urd_reg_mr_req *m = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_REG_MR, sizeof(*m) + sizeof(m->segs[0]));
		m->pd = pdh;
		m->access = IBV_ACCESS_LOCAL_WRITE;
		m->iova = 0x1000;
		m->length = 4096;
		m->nsegs = 1;
		m->segs[0].off = 1ull << 40;
		m->segs[0].len = 4096;
		expect_refused(&r, "REG_MR of memory outside the window", req, sizeof(*m) + sizeof(m->segs[0]));
		m->segs[0].off = 0;
		m->nsegs = 0;
		expect_refused(&r, "REG_MR with no segment", req, sizeof(*m) + sizeof(m->segs[0]));
		m->nsegs = 0x10000000;
		expect_refused(&r, "REG_MR announcing 2^28 segments", req, sizeof(*m) + sizeof(m->segs[0]));
		m->nsegs = 1;
		m->iova = UINT64_MAX - 100;
		expect_refused(&r, "REG_MR whose iova + length wraps", req, sizeof(*m) + sizeof(m->segs[0]));
		m->iova = 0x1000;
		m->access = 0x80000000u;
		expect_refused(&r, "REG_MR with unknown access bits", req, sizeof(*m) + sizeof(m->segs[0]));
		m->access = IBV_ACCESS_REMOTE_WRITE;
		expect_refused(&r, "REG_MR with remote write and no local write", req,
			       sizeof(*m) + sizeof(m->segs[0]));
	}
	{
		struct urd_create_cq_req *c = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_CREATE_CQ, sizeof(*c));
		c->cqe = 0;
		expect_refused(&r, "CREATE_CQ of 0 entries", req, sizeof(*c));
		c->cqe = UINT32_MAX;
		expect_refused(&r, "CREATE_CQ of 2^32 - 1 entries", req, sizeof(*c));
		c->cqe = 0x80000001u;
		expect_refused(&r, "CREATE_CQ of 2^31 + 1 entries", req, sizeof(*c));
		c->cqe = 16;
		c->comp_vector = 7;
		expect_refused(&r, "CREATE_CQ on completion vector 7", req, sizeof(*c));
		c->comp_vector = 0;
		cqh = raw_handle(&r, URD_OP_CREATE_CQ, req, sizeof(*c));
	}
	{
		struct urd_resize_cq_req *z = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_RESIZE_CQ, sizeof(*z));
		z->handle = cqh;
		z->cqe = 0;
		expect_refused(&r, "RESIZE_CQ to 0 entries", req, sizeof(*z));
		z->cqe = UINT32_MAX;
		expect_refused(&r, "RESIZE_CQ to 2^32 - 1 entries", req, sizeof(*z));
		z->handle = cqh ^ 0x5a5a0000u;
		z->cqe = 16;
		expect_refused(&r, "RESIZE_CQ of a handle that is no CQ", req, sizeof(*z));
	}
	{
		struct urd_create_qp_req *q = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_CREATE_QP, sizeof(*q));
		q->pd = pdh;
		q->send_cq = q->recv_cq = cqh;
		q->qp_type = 99;
		q->cap.max_send_wr = q->cap.max_recv_wr = 4;
		expect_refused(&r, "CREATE_QP of type 99", req, sizeof(*q));
		q->qp_type = IBV_QPT_RC;
		q->send_cq = cqh + 1;
		expect_refused(&r, "CREATE_QP with a CQ handle never given", req, sizeof(*q));
		q->send_cq = cqh;
		q->srq = 0x77777;
		expect_refused(&r, "CREATE_QP with an SRQ handle never given", req, sizeof(*q));
		q->srq = 0;
		q->cap.max_send_sge = 1000;
		expect_refused(&r, "CREATE_QP with 1000 SGEs", req, sizeof(*q));
		q->cap.max_send_sge = 1;
		q->cap.max_inline_data = 1u << 20;
		expect_refused(&r, "CREATE_QP with 1 MiB of inline data", req, sizeof(*q));
		q->cap.max_inline_data = 0;
		qph = raw_handle(&r, URD_OP_CREATE_QP, req, sizeof(*q));
	}
	{
		struct urd_modify_qp_req *m = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_MODIFY_QP, sizeof(*m));
		m->handle = qph;
		m->attr_mask = IBV_QP_STATE;
		m->attr.qp_state = IBV_QPS_RTS;
		expect_refused(&r, "MODIFY_QP from RESET straight to RTS", req, sizeof(*m));
		m->attr.qp_state = 99;
		expect_refused(&r, "MODIFY_QP to state 99", req, sizeof(*m));
		m->attr.qp_state = IBV_QPS_INIT;
		m->attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		m->attr.port_num = 2;
		expect_refused(&r, "MODIFY_QP to port 2", req, sizeof(*m));
		m->attr.port_num = 1;
		m->attr.qp_access_flags = 0xff00;
		expect_refused(&r, "MODIFY_QP with unknown access flags", req, sizeof(*m));
		m->handle = qph ^ 0x10000;
		m->attr.qp_access_flags = 0;
		expect_refused(&r, "MODIFY_QP of a stale handle generation", req, sizeof(*m));
	}
	{
		struct urd_fwd_post_req *f = (void *)req;

		memset(req, 0, sizeof(req));
		raw_hdr(req, URD_OP_FWD_POST_SEND, sizeof(*f));
		f->handle = qph;
		f->nwr = 1000;
		expect_refused(&r, "FWD_POST_SEND announcing 1000 WRs and carrying none", req, sizeof(*f));
		raw_hdr(req, URD_OP_FWD_POLL_CQ, sizeof(*f));
		f->handle = 0x1234567;
		expect_refused(&r, "FWD_POLL_CQ of a CQ handle never given", req, sizeof(*f));
	}
	if (opt.spray)
		spray(&d, pd, mr, 48);
	_exit(0);
}

/* -------------------------------------------------------- phase 2: chaos */

struct ringref {
	uint8_t *base;                  /* ring header in our mapping */
	uint32_t n, shift;
	int db;                         /* doorbell index (send and receive queues), -1 for CQ/SRQ */
	bool send, cq;
};

struct chaos {
	struct dev d;
	struct raw r;
	bool raw_ok;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_mw *mw[2];           /* a type 1 and a type 2 window (binds, invalidations) */
	uint8_t *buf;
	struct ibv_cq *cq[2];
	struct ibv_srq *srq;
	struct ibv_qp *qp[5];           /* rc a <-> b, rc c (SRQ) <-> d, ud u */
	struct ringref ring[16];
	int nrings;
};

#define BUFSZ (1u << 16)

static void add_ring(struct chaos *c, uint64_t off, uint32_t n, uint32_t shift, int db, bool send, bool cq)
{
	struct ringref *r;

	if (!off || off + URD_RING_HDR_SIZE + ((uint64_t)n << shift) > c->d.ctrl_size || c->nrings >= 16 ||
	    shift > 16 || !n || n > (1u << 20))
		return;
	r = &c->ring[c->nrings++];
	r->base = c->d.region + off;
	r->n = n;
	r->shift = shift;
	r->db = db;
	r->send = send;
	r->cq = cq;
}

static struct ibv_cq *snoop_cq(struct chaos *c, int cqe)
{
	struct snoop s;
	struct urd_create_cq_resp r;
	struct ibv_cq *cq;

	snoop_begin(&c->d, &s);
	cq = ibv_create_cq(c->d.ctx, cqe, NULL, NULL, 0);
	if (cq && snoop_end(&c->d, &s, URD_OP_CREATE_CQ, &r, sizeof(r)))
		add_ring(c, r.ring_off, r.nentries, 6, -1, false, true);
	return cq;
}

static struct ibv_qp *snoop_qp(struct chaos *c, struct ibv_cq *cq, struct ibv_srq *srq, enum ibv_qp_type t)
{
	struct snoop s;
	struct urd_create_qp_resp r;
	struct ibv_qp *qp;

	snoop_begin(&c->d, &s);
	qp = make_qp(c->pd, cq, srq, t);
	if (qp && snoop_end(&c->d, &s, URD_OP_CREATE_QP, &r, sizeof(r)) && r.qpn == qp->qp_num) {
		add_ring(c, r.sq_off, r.sq_n, r.sq_wqe_shift, (int)r.db_index, true, false);
		if (r.rq_off)
			add_ring(c, r.rq_off, r.rq_n, r.rq_wqe_shift, (int)r.db_index, false, false);
	}
	return qp;
}

/* The header and the mailboxes as the daemon left them, before the library
 * reads them: a previous round's scribbles are not this round's problem. */
static void restore_region(void)
{
	int fd;

	/* by the path phase 1 found: with a scribbled header the library no
	 * longer lists the device */
	if (!__atomic_load_n(&st->have_hdr, __ATOMIC_ACQUIRE))
		return;
	fd = open(st->region_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pwrite(fd, st->hdr, URD_HDR_SIZE, 0) != URD_HDR_SIZE)
		VERBOSE("cannot restore the header: %s", strerror(errno));
	close(fd);
}

#define SETUP_FAIL(what, err) do { VERBOSE("round: %s failed", what); return (err); } while (0)

static int chaos_setup(struct chaos *c)
{
	struct ibv_srq_init_attr sa;
	int ret;

	memset(c, 0, sizeof(*c));
	restore_region();
	ret = dev_open(&c->d);
	if (ret)
		return ret;
	c->pd = ibv_alloc_pd(c->d.ctx);
	if (!c->pd || posix_memalign((void **)&c->buf, 4096, BUFSZ))
		SETUP_FAIL("ibv_alloc_pd", -ENOMEM);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	if (!c->mr)
		SETUP_FAIL("ibv_reg_mr", -ENOMEM);
	c->mw[0] = ibv_alloc_mw(c->pd, IBV_MW_TYPE_1);
	c->mw[1] = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	if (!c->mw[0] || !c->mw[1])
		SETUP_FAIL("ibv_alloc_mw", -ENOMEM);
	c->cq[0] = snoop_cq(c, 64);
	c->cq[1] = snoop_cq(c, 64);
	if (!c->cq[0] || !c->cq[1])
		SETUP_FAIL("ibv_create_cq", -ENOMEM);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 32;
	sa.attr.max_sge = 2;
	{
		struct snoop s;
		struct urd_srq_resp r;

		snoop_begin(&c->d, &s);
		c->srq = ibv_create_srq(c->pd, &sa);
		if (c->srq && snoop_end(&c->d, &s, URD_OP_CREATE_SRQ, &r, sizeof(r)))
			add_ring(c, r.ring_off, r.nentries, r.wqe_shift, -1, false, false);
	}
	c->qp[0] = snoop_qp(c, c->cq[0], NULL, IBV_QPT_RC);
	c->qp[1] = snoop_qp(c, c->cq[1], NULL, IBV_QPT_RC);
	c->qp[2] = c->srq ? snoop_qp(c, c->cq[0], c->srq, IBV_QPT_RC) : NULL;
	c->qp[3] = snoop_qp(c, c->cq[1], NULL, IBV_QPT_RC);
	c->qp[4] = snoop_qp(c, c->cq[0], NULL, IBV_QPT_UD);
	for (int i = 0; i < 5; i++)
		if (!c->qp[i])
			SETUP_FAIL("ibv_create_qp", -ENOMEM);
	if (connect_qp(c->qp[0], c->qp[1]->qp_num, &c->d.gid, true, 8, 3) ||
	    connect_qp(c->qp[1], c->qp[0]->qp_num, &c->d.gid, true, 8, 3) ||
	    connect_qp(c->qp[2], c->qp[3]->qp_num, &c->d.gid, true, 8, 3) ||
	    connect_qp(c->qp[3], c->qp[2]->qp_num, &c->d.gid, true, 8, 3) ||
	    connect_qp(c->qp[4], 0, &c->d.gid, true, 8, 3))
		SETUP_FAIL("ibv_modify_qp", -EIO);
	c->raw_ok = raw_open(&c->r, &c->d) == 0;
	return 0;
}

/* Honest traffic first: a SEND a -> b must still work before the attacks. */
static void honest_traffic(struct chaos *c)
{
	struct ibv_wc wc;
	int s;

	post_recv_one(c->qp[1], 11, (uintptr_t)c->buf + 4096, 4096, c->mr->lkey);
	if (post_one(c->qp[0], IBV_WR_SEND, 12, (uintptr_t)c->buf, 512, c->mr->lkey, 0, 0))
		return;
	s = wait_wc(c->cq[0], 12);
	if (s == 0)
		ADD(wc_ok, 1);
	else
		ADD(wc_err, 1);
	while (ibv_poll_cq(c->cq[1], 1, &wc) > 0)
		;
}

static void doorbell(struct chaos *c, int db)
{
	struct urd_doorbells *dbs = (struct urd_doorbells *)(c->d.region + URD_DB_OFF);

	if (db < 0)
		return;
	__atomic_fetch_or(&dbs->bits[(db / 64) % (URD_MAX_QP_SLOTS / 64)], 1ull << (db % 64), __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&dbs->summary, 1ull << ((db / 64) % 64), __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&c->d.hdr->engine_wake, 1, __ATOMIC_SEQ_CST);
	futex_wake(&c->d.hdr->engine_wake);
}

/* A send WQE an attacker would write: random opcode, flags, SGEs, keys,
 * lengths, inline sizes, UD addresses; sometimes nearly right. */
static void evil_send_wqe(struct chaos *c, uint8_t *slot, uint32_t bytes)
{
	struct urd_send_wqe *w = (struct urd_send_wqe *)slot;
	struct urd_sge *sg = (struct urd_sge *)(slot + URD_SEND_WQE_HDR);
	uint32_t room = bytes > URD_SEND_WQE_HDR ? (bytes - URD_SEND_WQE_HDR) / 16 : 0;

	fill_random(slot, bytes);
	if (rnd_n(3)) {
		w->opcode = (uint8_t)(rnd_n(4) ? rnd_n(URD_WR_NUM_OPCODES) : rnd());
		w->flags = (uint8_t)(rnd_n(2) ? URD_WQE_SIGNALED : rnd());
		w->num_sge = (uint16_t)(rnd_n(4) ? rnd_n(room + 2) : rnd());
		w->inline_len = rnd_n(3) ? rnd_n(600) : evil32(64);
		w->rkey = rnd_n(2) ? c->mr->rkey : evil32(c->mr->rkey);
		w->remote_addr = rnd_n(2) ? (uintptr_t)c->buf + rnd_n(BUFSZ) : evil64((uintptr_t)c->buf);
		w->remote_qpn = rnd_n(2) ? c->qp[4]->qp_num : evil32(c->qp[4]->qp_num);
		w->remote_qkey = rnd_n(2) ? 0x11111111 : (uint32_t)rnd();
		/* memory window operations: binds of our windows to our MR,
		 * nearly right or not at all; invalidations of their keys,
		 * of the MR's, or of anything */
		w->bind_mw_rkey = rnd_n(2) ? c->mw[rnd_n(2)]->rkey : evil32(c->mw[0]->rkey);
		w->bind_mr_lkey = rnd_n(2) ? c->mr->lkey : evil32(c->mr->lkey);
		w->bind_access = rnd_n(2) ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ : (uint32_t)rnd();
		w->invalidate_rkey = rnd_n(3) ? c->mw[rnd_n(2)]->rkey : rnd_n(2) ? c->mr->rkey : (uint32_t)rnd();
		if (w->opcode == URD_WR_BIND_MW && rnd_n(2)) {
			w->compare_add = rnd_n(BUFSZ);
			w->rkey = (w->bind_mw_rkey & ~0xffu) | (uint32_t)rnd_n(256);
		}
		for (uint32_t i = 0; i < room; i++) {
			sg[i].addr = rnd_n(2) ? (uintptr_t)c->buf + rnd_n(BUFSZ) : evil64((uintptr_t)c->buf);
			sg[i].length = rnd_n(2) ? rnd_n(8192) : evil32(BUFSZ);
			sg[i].lkey = rnd_n(2) ? c->mr->lkey : evil32(c->mr->lkey);
		}
	}
}

static void evil_recv_wqe(struct chaos *c, uint8_t *slot, uint32_t bytes)
{
	struct urd_recv_wqe *w = (struct urd_recv_wqe *)slot;
	struct urd_sge *sg = (struct urd_sge *)(slot + sizeof(*w));
	uint32_t room = bytes > sizeof(*w) ? (uint32_t)((bytes - sizeof(*w)) / 16) : 0;

	fill_random(slot, bytes);
	if (rnd_n(3)) {
		w->num_sge = rnd_n(2) ? rnd_n(room + 2) : evil32(room);
		for (uint32_t i = 0; i < room; i++) {
			sg[i].addr = rnd_n(2) ? (uintptr_t)c->buf + rnd_n(BUFSZ) : evil64((uintptr_t)c->buf);
			sg[i].length = rnd_n(2) ? rnd_n(8192) : evil32(BUFSZ);
			sg[i].lkey = rnd_n(2) ? c->mr->lkey : evil32(c->mr->lkey);
		}
	}
}

static void atk_ring(struct chaos *c)
{
	struct ringref *r;
	struct urd_ring_hdr *h;
	uint32_t k;

	if (!c->nrings)
		return;
	r = &c->ring[rnd_n((uint32_t)c->nrings)];
	h = (struct urd_ring_hdr *)r->base;
	if (r->cq) {
		switch (rnd_n(4)) {
		case 0: h->cons = evil32(h->prod); break;
		case 1: h->arm = evil32(URD_CQ_ARM_ANY); break;
		case 2: h->prod = evil32(h->prod); break;
		default: fill_random(r->base + URD_RING_HDR_SIZE + ((size_t)rnd_n(r->n) << r->shift),
				     (size_t)1 << r->shift);
		}
		return;
	}
	for (k = rnd_n(4) + 1; k; k--) {
		uint8_t *slot = r->base + URD_RING_HDR_SIZE + ((size_t)((h->prod + k - 1) & (r->n - 1)) << r->shift);

		if (r->send)
			evil_send_wqe(c, slot, 1u << r->shift);
		else
			evil_recv_wqe(c, slot, 1u << r->shift);
	}
	switch (rnd_n(6)) {
	case 0: h->prod = h->cons + r->n + 1 + rnd_n(1000); break;       /* far ahead */
	case 1: h->prod = h->cons - 1; break;                            /* behind */
	case 2: h->prod = (uint32_t)rnd(); break;
	case 3: h->cons = (uint32_t)rnd(); break;                        /* the engine's: ignored */
	default: h->prod += rnd_n(4) + 1; break;                         /* plausible */
	}
	doorbell(c, r->db);
}

static void atk_mailbox(struct chaos *c)
{
	uint32_t i = rnd_n(3) ? rnd_n(URD_MAX_CTX) : (c->raw_ok ? c->r.idx : 0);
	struct urd_slot_hdr *s = slot_of(&c->d, i);
	uint8_t *req = (uint8_t *)s + URD_SLOT_REQ_OFF;
	struct urd_msg_hdr *h = (struct urd_msg_hdr *)req;
	static const uint32_t lens[] = { 0, 1, 15, 16, 17, 23, 24, URD_MSG_MAX - 1, URD_MSG_MAX,
					 URD_MSG_MAX + 1, UINT32_MAX };

	switch (rnd_n(6)) {
	case 0:
		s->async_cons = evil32(s->async_prod);
		break;
	case 1:
		s->heartbeat = evil64(s->heartbeat);
		break;
	case 2:         /* the daemon's words: lying to ourselves */
		s->resp_seq = evil32(s->resp_seq);
		s->async_prod = evil32(s->async_prod);
		s->event_seq = evil32(s->event_seq);
		break;
	default:
		fill_random(req, 64 + rnd_n(URD_MSG_MAX - 64));
		if (rnd_n(2)) {
			h->version = rnd_n(4) ? URD_ABI_VERSION : (uint16_t)rnd();
			h->op = (uint16_t)(rnd_n(2) ? rnd_n(URD_OP_FWD_LAST + 2) : rnd());
			h->len = lens[rnd_n(sizeof(lens) / sizeof(lens[0]))];
		}
		__atomic_store_n(&s->req_seq, rnd_n(2) ? s->req_seq + 1 : evil32(s->req_seq), __ATOMIC_RELEASE);
		break;
	}
	__atomic_fetch_add(&c->d.hdr->ctrl_bell, 1, __ATOMIC_SEQ_CST);
	futex_wake(&c->d.hdr->ctrl_bell);
}

static void atk_header(struct chaos *c)
{
	struct urd_region_hdr *h = c->d.hdr;
	uint32_t *w;

	switch (rnd_n(8)) {
	case 0: h->engine_sleeping = evil32(1); futex_wake(&h->engine_wake); break;
	case 1: h->engine_wake = (uint32_t)rnd(); futex_wake(&h->engine_wake); break;
	case 2: h->ctrl_bell = (uint32_t)rnd(); futex_wake(&h->ctrl_bell); break;
	case 3: h->flags = evil32(h->flags); break;                       /* e.g. claim to be a VM */
	case 4:         /* device and port attributes: max_cqe, max_mr_size, ... */
		w = (uint32_t *)((uint8_t *)&h->dev + 4 * rnd_n(sizeof(h->dev) / 4));
		*w = evil32(*w);
		break;
	case 5:
		w = (uint32_t *)((uint8_t *)&h->port + 4 * rnd_n(sizeof(h->port) / 4));
		*w = evil32(*w);
		break;
	case 6:
		w = (uint32_t *)(c->d.region + 4 * rnd_n(URD_HDR_SIZE / 4));
		*w = evil32(*w);
		break;
	default:        /* the layout words the library checks; the daemon must not read them */
		h->mem_size = evil64(h->mem_size);
		h->arena_size = evil64(h->arena_size);
		break;
	}
}

static void atk_doorbells(struct chaos *c)
{
	struct urd_doorbells *dbs = (struct urd_doorbells *)(c->d.region + URD_DB_OFF);

	if (rnd_n(2)) {
		memset(dbs->bits, 0xff, sizeof(dbs->bits));
		dbs->summary = UINT64_MAX;
	} else {
		dbs->bits[rnd_n(URD_MAX_QP_SLOTS / 64)] = rnd();
		dbs->summary = rnd();
	}
	__atomic_fetch_add(&c->d.hdr->engine_wake, 1, __ATOMIC_SEQ_CST);
	futex_wake(&c->d.hdr->engine_wake);
}

static void atk_arena(struct chaos *c)
{
	uint64_t span = c->d.ctrl_size - URD_ARENA_OFF;
	uint64_t off = URD_ARENA_OFF + (rnd_n(4) ? rnd_n(1u << 20) : rnd() % span);
	uint32_t len = 1 + rnd_n(512);

	if (off + len > c->d.ctrl_size)
		return;
	fill_random(c->d.region + off, len);
	doorbell(c, (int)rnd_n(URD_MAX_QP_SLOTS));
}

/* Structured garbage through our raw context: real ops, random payloads. */
static void atk_raw(struct chaos *c)
{
	static uint8_t req[URD_MSG_MAX];
	uint32_t len = 16 + rnd_n(rnd_n(4) ? 256 : URD_MSG_MAX - 16);
	static const uint16_t ops[] = { URD_OP_ALLOC_PD, URD_OP_DEALLOC_PD, URD_OP_MEM_ALLOC, URD_OP_MEM_FREE,
					URD_OP_REG_MR, URD_OP_DEREG_MR, URD_OP_CREATE_CQ, URD_OP_DESTROY_CQ,
					URD_OP_CREATE_SRQ, URD_OP_MODIFY_SRQ, URD_OP_QUERY_SRQ,
					URD_OP_DESTROY_SRQ, URD_OP_CREATE_QP, URD_OP_MODIFY_QP,
					URD_OP_QUERY_QP, URD_OP_DESTROY_QP, URD_OP_FWD_POST_SEND,
					URD_OP_FWD_POST_RECV, URD_OP_FWD_POST_SRQ_RECV, URD_OP_FWD_POLL_CQ,
					URD_OP_FWD_REQ_NOTIFY_CQ, URD_OP_OPEN_CTX, URD_OP_RESIZE_CQ,
					URD_OP_REREG_MR };

	if (!c->raw_ok)
		return;
	fill_random(req, len);
	raw_hdr(req, ops[rnd_n(sizeof(ops) / sizeof(ops[0]))], len);
	if (rnd_n(2)) {  /* plausible handles: our raw context's first objects */
		uint32_t *hp = (uint32_t *)(req + 16);

		hp[0] = 0x10000 | (1 + rnd_n(8));
		hp[1] = rnd_n(2) ? 0x10000 | (1 + rnd_n(8)) : (uint32_t)rnd();
		hp[2] = rnd_n(2) ? 0x10000 | (1 + rnd_n(8)) : (uint32_t)rnd();
	}
	if (rnd_n(4) == 0)
		((struct urd_msg_hdr *)req)->len = evil32(len);
	if (raw_call(&c->r, req, len, NULL, 0) == 1)
		c->raw_ok = false;      /* no answer: the context's seq is lost */
}

/* Verbs calls with garbage arguments; the library passes most of it on. */
static void atk_verbs(struct chaos *c)
{
	struct ibv_qp *qp = c->qp[rnd_n(5)];
	struct ibv_sge sg[4];
	struct ibv_wc wc[8];

	for (int i = 0; i < 4; i++) {
		sg[i].addr = rnd_n(2) ? (uintptr_t)c->buf + rnd_n(BUFSZ) : evil64((uintptr_t)c->buf);
		sg[i].length = rnd_n(2) ? rnd_n(4096) : evil32(4096);
		sg[i].lkey = rnd_n(2) ? c->mr->lkey : evil32(c->mr->lkey);
	}
	switch (rnd_n(5)) {
	case 0: {
		struct ibv_send_wr wr, *bad;
		struct ibv_ah_attr aa;
		struct ibv_ah *ah = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = rnd();
		wr.opcode = (enum ibv_wr_opcode)rnd_n(7);
		wr.send_flags = (unsigned int)(rnd_n(2) ? IBV_SEND_SIGNALED : rnd_n(16));
		wr.sg_list = sg;
		wr.num_sge = (int)rnd_n(5);
		wr.imm_data = (uint32_t)rnd();
		wr.wr.rdma.rkey = rnd_n(2) ? c->mr->rkey : (uint32_t)rnd();
		wr.wr.rdma.remote_addr = rnd_n(2) ? (uintptr_t)c->buf + rnd_n(BUFSZ) : rnd();
		if (qp->qp_type == IBV_QPT_UD) {
			memset(&aa, 0, sizeof(aa));
			aa.is_global = 1;
			aa.grh.dgid = c->d.gid;
			aa.port_num = 1;
			ah = ibv_create_ah(c->pd, &aa);
			if (!ah)
				return;
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = rnd_n(2) ? c->qp[4]->qp_num : (uint32_t)rnd();
			wr.wr.ud.remote_qkey = rnd_n(2) ? 0x11111111 : (uint32_t)rnd();
			wr.opcode = IBV_WR_SEND;
			wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
		}
		ibv_post_send(qp, &wr, &bad);
		if (ah)
			ibv_destroy_ah(ah);
		break;
	}
	case 1: {
		struct ibv_recv_wr wr = { .wr_id = rnd(), .sg_list = sg, .num_sge = (int)rnd_n(5) }, *bad;

		if (qp->srq)
			ibv_post_srq_recv(qp->srq, &wr, &bad);
		else
			ibv_post_recv(qp, &wr, &bad);
		break;
	}
	case 2: {
		struct ibv_qp_attr at;

		memset(&at, 0, sizeof(at));
		at.qp_state = (enum ibv_qp_state)rnd_n(7);
		ibv_modify_qp(qp, &at, IBV_QP_STATE);
		break;
	}
	case 3: {
		struct ibv_cq *cq = ibv_create_cq(c->d.ctx, (int)(1 + rnd_n(1000)), NULL, NULL, 0);

		if (cq)
			ibv_destroy_cq(cq);
		break;
	}
	default:
		break;
	}
	for (int i = 0; i < 2; i++) {
		int n = ibv_poll_cq(c->cq[i], 8, wc);

		for (int k = 0; k < n; k++) {
			if (wc[k].status == IBV_WC_SUCCESS)
				ADD(wc_ok, 1);
			else
				ADD(wc_err, 1);
		}
	}
}

/* The daemon's timer list and QP lifetimes: a QP waiting for a retry timer
 * (its peer does not exist) moves to the error state and is destroyed. */
static void atk_lifetime(struct chaos *c)
{
	struct ibv_cq *cq = ibv_create_cq(c->d.ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? make_qp(c->pd, cq, NULL, IBV_QPT_RC) : NULL;
	struct ibv_qp_attr at;

	if (!qp)
		goto out;
	if (connect_qp(qp, 0xfffff0 + rnd_n(8), &c->d.gid, false, (uint8_t)(10 + rnd_n(8)), 7))
		goto out;
	post_one(qp, IBV_WR_SEND, 1, (uintptr_t)c->buf, 64, c->mr->lkey, 0, 0);
	usleep(rnd_n(2000));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(qp, &at, IBV_QP_STATE);
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
}

/* One SEND, without a GRH, to a QPN near our own that is not ours. */
static void atk_spray(struct chaos *c)
{
	struct ibv_qp *qp = make_qp(c->pd, c->cq[1], NULL, IBV_QPT_RC);
	uint32_t dest;
	int s;

	if (!qp)
		return;
	dest = (qp->qp_num + (uint32_t)rnd_n(129) - 64) & 0xffffff;
	for (int i = 0; i < 5; i++)
		if (dest == c->qp[i]->qp_num)
			goto out;
	if (dest == qp->qp_num || connect_qp(qp, dest, &c->d.gid, false, 1, 0))
		goto out;
	if (post_one(qp, IBV_WR_SEND, 0x5959, (uintptr_t)c->buf, 64, c->mr->lkey, 0, 0))
		goto out;
	ADD(spray_sent, 1);
	s = wait_wc(c->cq[1], 0x5959);
	if (s == IBV_WC_SUCCESS) {
		ADD(spray_acked, 1);
		say("spray: our SEND to QPN %#x was acknowledged", dest);
	}
out:
	ibv_destroy_qp(qp);
}

static const struct {
	const char *name;
	void (*fn)(struct chaos *);
} attacks[] = {
	{ "ring", atk_ring }, { "mailbox", atk_mailbox }, { "header", atk_header },
	{ "doorbells", atk_doorbells }, { "arena", atk_arena }, { "raw", atk_raw },
	{ "lifetime", atk_lifetime }, { "spray", atk_spray }, { "verbs", atk_verbs },
};

static void chaos_round(double secs)
{
	static struct chaos c;
	double until = now_s() + secs;
	int ret = chaos_setup(&c);

	if (ret) {
		VERBOSE("round: setup failed: %s", strerror(-ret));
		_exit(3);
	}
	honest_traffic(&c);
	while (now_s() < until) {
		ADD(attacks, 1);
		if (opt.only) {
			for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
				if (!strcmp(opt.only, attacks[i].name))
					attacks[i].fn(&c);
			continue;
		}
		switch (rnd_n(10)) {
		case 0: case 1: atk_ring(&c); break;
		case 2: atk_mailbox(&c); break;
		case 3: atk_header(&c); break;
		case 4: atk_doorbells(&c); break;
		case 5: atk_arena(&c); break;
		case 6: atk_raw(&c); break;
		case 7: atk_lifetime(&c); break;
		case 8: if (opt.spray && rnd_n(4) == 0) atk_spray(&c); else atk_verbs(&c); break;
		default: atk_verbs(&c); break;
		}
		if (rnd_n(64) == 0)
			usleep(1000);
	}
	_exit(0);
}

/* The final blow: work posted and every doorbell set, then the region file
 * cut to one page under the daemon's mapping.  Its control thread and engine
 * read mailboxes, doorbells and rings beyond the new end at once (SIGBUS,
 * which its guard must absorb). */
static void final_blow(void)
{
	static struct chaos c;
	struct urd_doorbells *dbs;
	int ret;

	st->blow_step = 1;
	ret = chaos_setup(&c);
	if (ret) {
		say("final blow: setup failed: %s", strerror(-ret));
		_exit(3);
	}
	st->blow_step = 2;
	for (int i = 0; i < 8; i++)
		post_one(c.qp[0], IBV_WR_SEND, 100 + (uint64_t)i, (uintptr_t)c.buf, 512, c.mr->lkey, 0, 0);
	dbs = (struct urd_doorbells *)(c.d.region + URD_DB_OFF);
	memset(dbs->bits, 0xff, sizeof(dbs->bits));
	dbs->summary = UINT64_MAX;
	st->blow_step = 3;
	/* Marked before the cut: the library's threads may die of it (SIGBUS)
	 * before this thread returns, and the daemon fails the vRNIC for it,
	 * so a retry could not even open the device. */
	__atomic_store_n(&st->truncated, 1, __ATOMIC_RELEASE);
	if (ftruncate(c.d.fd, 4096)) {
		__atomic_store_n(&st->truncated, 0, __ATOMIC_RELEASE);
		say("final blow: ftruncate: %s", strerror(errno));
		_exit(1);
	}
	say("final blow: %s cut to 4096 bytes", c.d.region_path);
	/* the library's own threads may now die of SIGBUS: that is ours */
	/* only the first page is left to write: the engine and control words */
	for (int i = 0; i < 20; i++) {
		__atomic_fetch_add(&c.d.hdr->engine_wake, 1, __ATOMIC_SEQ_CST);
		futex_wake(&c.d.hdr->engine_wake);
		__atomic_fetch_add(&c.d.hdr->ctrl_bell, 1, __ATOMIC_SEQ_CST);
		futex_wake(&c.d.hdr->ctrl_bell);
		usleep(10000);
	}
	_exit(0);
}

/* ------------------------------------------------------------ the parent */

/* Runs fn in a child with a deadline; returns its wait status. */
static int in_child(void (*fn)(void), double deadline_s, uint64_t seed)
{
	pid_t pid = fork();
	int status = 0;
	double until = now_s() + deadline_s;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		rng = seed;
		alarm((unsigned int)deadline_s + 2);
		fn();
		_exit(0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_s() > until) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			ADD(killed, 1);
			break;
		}
		usleep(20000);
	}
	return status;
}

static double round_secs;

static void run_round(void)
{
	chaos_round(round_secs);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hostile [-t SECONDS] [-s SEED] [--spray] [--spray-only] [--isolated]\n"
		"               [--no-truncate] [--only ATTACK] [-v]\n"
		"  -t SECONDS     how long to attack (default 20)\n"
		"  -s SEED        random seed (default: from the time; printed)\n"
		"  --spray        also send to QPNs near our own (other vRNICs' QPs)\n"
		"  --spray-only   nothing but that, for SECONDS (a reproducer)\n"
		"  --spray-qpns FILE  spray the QPNs listed in FILE (reread each round)\n"
		"  --isolated     no other vRNIC is in our tenant: a sprayed SEND that is\n"
		"                 acknowledged is a failure\n"
		"  --no-truncate  no final ftruncate of the region\n"
		"  --only ATTACK  phase 2 repeats one attack: ring, mailbox, header, doorbells,\n"
		"                 arena, raw, lifetime, spray or verbs (a reproducer)\n"
		"  -v             print every check\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "spray", no_argument, NULL, 'S' },
		{ "spray-only", no_argument, NULL, 'O' },
		{ "isolated", no_argument, NULL, 'I' },
		{ "no-truncate", no_argument, NULL, 'T' },
		{ "only", required_argument, NULL, 'A' },
		{ "spray-qpns", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double t0 = now_s(), end;
	int c, status, fails = 0;

	opt.seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	while ((c = getopt_long(argc, argv, "t:s:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 't': opt.secs = atof(optarg); break;
		case 's': opt.seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'v': opt.verbose++; break;
		case 'S': opt.spray = true; break;
		case 'O': opt.spray = opt.spray_only = true; break;
		case 'I': opt.isolated = true; break;
		case 'T': opt.truncate = false; break;
		case 'A': opt.only = optarg; break;
		case 'Q': opt.qpn_file = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt.only) {
		size_t i;

		for (i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
			if (!strcmp(opt.only, attacks[i].name))
				break;
		if (i == sizeof(attacks) / sizeof(attacks[0])) {
			fprintf(stderr, "hostile: no attack named %s\n", opt.only);
			return 2;
		}
	}
	if (optind != argc || opt.secs <= 0) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED)
		return 1;
	memset(st, 0, sizeof(*st));
	signal(SIGPIPE, SIG_IGN);
	say("hostile: seed %u, %.0f s%s%s%s", opt.seed, opt.secs, opt.spray ? ", spray" : "",
	    opt.isolated ? ", isolated" : "", opt.truncate ? ", truncate at the end" : "");
	end = t0 + opt.secs;

	if (opt.spray_only) {
		say("spraying SENDs at QPNs near our own for %.0f s", opt.secs);
		status = in_child(spray_loop, opt.secs + 30, opt.seed);
		say("sprayed SENDs to QPNs not ours: %llu, acknowledged %llu", (unsigned long long)st->spray_sent,
		    (unsigned long long)st->spray_acked);
		return WIFEXITED(status) && WEXITSTATUS(status) == 0 && !(opt.isolated && st->spray_acked) ? 0 : 1;
	}
	say("phase 1: garbage must get errors");
	status = in_child(phase_checks, 60, opt.seed);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		say("SKIP: no usable device");
		return 77;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		say("FAIL: the checks did not finish (%s %d)", WIFSIGNALED(status) ? "signal" : "exit code",
		    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		fails++;
	}
	say("phase 1: %llu checks, %llu failed", (unsigned long long)st->checks,
	    (unsigned long long)st->checks_failed);

	say("phase 2: chaos until %.0f s", opt.secs);
	for (uint64_t r = 1; now_s() < end - (opt.truncate ? 1.5 : 0); r++) {
		double left = end - now_s();

		round_secs = left < 2.0 ? left : 0.5 + (double)(r % 4) * 0.5;
		status = in_child(run_round, round_secs + 10, (uint64_t)opt.seed * 7919 + r);
		ADD(rounds, 1);
		if (WIFSIGNALED(status)) {
			ADD(crashed, 1);
			VERBOSE("round %llu: child killed by signal %d", (unsigned long long)r, WTERMSIG(status));
		}
	}
	if (opt.truncate) {
		say("phase 3: truncate the region");
		/* the library may trip over what the last round left (it can die
		 * before the cut): a few tries */
		for (int i = 0; i < 3 && !st->truncated; i++) {
			status = in_child(final_blow, 15, (uint64_t)opt.seed * 31 + 1 + (uint64_t)i);
			say("phase 3: the child ended with %s %d%s", WIFSIGNALED(status) ? "signal" : "exit code",
			    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
			    st->truncated ? "" : st->blow_step == 1 ? " in its setup" : " before the cut");
		}
		if (!st->truncated) {
			say("FAIL: the final blow did not happen");
			fails++;
		}
	}

	say("rounds %llu (children crashed %llu, killed on timeout %llu), attacks %llu",
	    (unsigned long long)st->rounds, (unsigned long long)st->crashed, (unsigned long long)st->killed,
	    (unsigned long long)st->attacks);
	say("raw requests %llu: answered %llu (accepted %llu), unanswered %llu",
	    (unsigned long long)st->raw_sent, (unsigned long long)st->raw_answered,
	    (unsigned long long)st->raw_ok, (unsigned long long)st->raw_timeouts);
	say("completions seen: %llu successful, %llu with an error", (unsigned long long)st->wc_ok,
	    (unsigned long long)st->wc_err);
	if (opt.spray) {
		say("sprayed SENDs to QPNs not ours: %llu, acknowledged %llu", (unsigned long long)st->spray_sent,
		    (unsigned long long)st->spray_acked);
		if (opt.isolated && st->spray_acked) {
			say("FAIL: sprayed SENDs reached QPs of another tenant");
			fails++;
		}
	}
	if (st->checks_failed)
		fails++;
	say("%s", fails ? "FAIL" : "done: every check saw an error");
	return fails ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared helpers for the verbs tests: see helpers.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "helpers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

const char *t_name = "test";
unsigned int t_scale = 1;
static struct ibv_device **t_devlist;
static int t_ndev;

static void t_watchdog(int sig)
{
	static const char msg[] = "FAIL: watchdog: test ran too long (hang?)\n";
	ssize_t r;

	(void)sig;
	r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(1);
}

void t_start(const char *name)
{
	struct sigaction sa;

	const char *sc = getenv("UNIRDMA_TEST_TIME_SCALE");

	t_name = name;
	if (sc && atoi(sc) > 1)
		t_scale = (unsigned int)atoi(sc);
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = t_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	alarm(T_WATCHDOG_S);
}

void t_pass(void)
{
	printf("PASS %s\n", t_name);
	fflush(stdout);
}

void t_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	fflush(stdout);
	exit(T_EXIT_SKIP);
}

void t_fail_at(const char *file, int line, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, " (last errno %d: %s)", err, strerror(err));
	fprintf(stderr, "\nFAIL %s\n", t_name);
	fflush(stderr);
	exit(1);
}

/* ---- devices ---------------------------------------------------------- */

static struct ibv_device *t_by_name(const char *name)
{
	for (int i = 0; i < t_ndev; i++)
		if (strcmp(ibv_get_device_name(t_devlist[i]), name) == 0)
			return t_devlist[i];
	t_fail("device '%s' (from the environment) not found", name);
}

struct ibv_device *t_find_device(int which)
{
	const char *env = getenv(which ? "UNIRDMA_TEST_DEV1" : "UNIRDMA_TEST_DEV0");

	if (!t_devlist) {
		/* Kept for the life of the process: the devices stay valid. */
		t_devlist = ibv_get_device_list(&t_ndev);
		if (!t_devlist || t_ndev <= 0)
			t_skip("no RDMA device");
	}
	if (env && *env)
		return t_by_name(env);
	if (which && t_ndev > 1)
		return t_devlist[1];
	return t_devlist[0];
}

void t_open(struct t_dev *d, int which)
{
	struct ibv_device *dev = t_find_device(which);

	memset(d, 0, sizeof(*d));
	d->name = ibv_get_device_name(dev);
	d->ctx = ibv_open_device(dev);
	if (!d->ctx)
		t_fail("ibv_open_device(%s) failed", d->name);
	CHECK_OK(ibv_query_device(d->ctx, &d->attr));
	CHECK_OK(ibv_query_port(d->ctx, T_PORT, &d->port_attr));
	CHECK_OK(ibv_query_gid(d->ctx, T_PORT, T_GID_INDEX, &d->gid));
	d->pd = ibv_alloc_pd(d->ctx);
	CHECK(d->pd);
}

void t_close(struct t_dev *d)
{
	if (d->pd)
		CHECK_OK(ibv_dealloc_pd(d->pd));
	if (d->ctx)
		CHECK_OK(ibv_close_device(d->ctx));
	memset(d, 0, sizeof(*d));
}

void t_peer_of(struct t_peer *p, const struct t_dev *d, const struct ibv_qp *qp)
{
	memset(p, 0, sizeof(*p));
	p->gid = d->gid;
	p->lid = d->port_attr.lid;
	p->qpn = qp->qp_num;
}

/* ---- memory ----------------------------------------------------------- */

size_t t_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

void *t_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p;
}

void t_unmap(void *p, size_t len)
{
	CHECK(munmap(p, len) == 0);
}

struct ibv_mr *t_reg(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		t_fail("ibv_reg_mr(%p, %zu, 0x%x) failed", addr, len, access);
	CHECK(mr->addr == addr);
	CHECK_EQ(mr->length, len);
	return mr;
}

/* A byte stream with no short period, so shifted or repeated data shows. */
uint8_t t_pat(uint32_t seed, size_t pos)
{
	uint32_t x = (uint32_t)pos * 0x9E3779B1u ^ (seed * 0x85EBCA77u + 0x165667B1u);

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	return (uint8_t)(x ^ (x >> 8));
}

void t_fill(void *p, size_t n, uint32_t seed, size_t pos)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = t_pat(seed, pos + i);
}

void t_check_data_at(const char *file, int line, const void *p, size_t n,
		     uint32_t seed, size_t pos)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != t_pat(seed, pos + i))
			t_fail_at(file, line,
				  "data mismatch at byte %zu of %zu: 0x%02x, expected 0x%02x",
				  i, n, b[i], t_pat(seed, pos + i));
}

void t_check_bytes_at(const char *file, int line, const void *p, int val,
		      size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)val)
			t_fail_at(file, line,
				  "byte %zu of %zu is 0x%02x, expected 0x%02x",
				  i, n, b[i], (uint8_t)val);
}

/* ---- CQs, channels, QPs ----------------------------------------------- */

static void t_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	CHECK(fl >= 0);
	CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

struct ibv_comp_channel *t_channel(struct t_dev *d)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d->ctx);

	CHECK(ch);
	CHECK(ch->fd >= 0);
	t_nonblock(ch->fd);
	return ch;
}

struct ibv_cq *t_cq(struct t_dev *d, int cqe, struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, cqe, NULL, ch, 0);

	if (!cq)
		t_fail("ibv_create_cq(%d) failed", cqe);
	CHECK(cq->cqe >= cqe);
	return cq;
}

struct ibv_qp *t_qp(struct t_dev *d, enum ibv_qp_type type, struct ibv_cq *scq,
		    struct ibv_cq *rcq, struct ibv_srq *srq, int sq_sig_all,
		    struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.sq_sig_all = sq_sig_all;
	if (cap) {
		ia.cap = *cap;
	} else {
		ia.cap.max_send_wr = 64;
		ia.cap.max_recv_wr = 64;
		ia.cap.max_send_sge = 4;
		ia.cap.max_recv_sge = 4;
	}
	qp = ibv_create_qp(d->pd, &ia);
	if (!qp)
		t_fail("ibv_create_qp(type %d, sq %u/%u, rq %u/%u, inline %u) failed",
		       type, ia.cap.max_send_wr, ia.cap.max_send_sge,
		       ia.cap.max_recv_wr, ia.cap.max_recv_sge,
		       ia.cap.max_inline_data);
	/* ibv_create_qp(3): granted caps are >= the requested ones. */
	if (cap) {
		CHECK(ia.cap.max_send_wr >= cap->max_send_wr);
		CHECK(ia.cap.max_send_sge >= cap->max_send_sge);
		CHECK(ia.cap.max_inline_data >= cap->max_inline_data);
		if (!srq) {
			CHECK(ia.cap.max_recv_wr >= cap->max_recv_wr);
			CHECK(ia.cap.max_recv_sge >= cap->max_recv_sge);
		}
		*cap = ia.cap;
	}
	CHECK(qp->qp_num != 0 && qp->qp_num != 1 && qp->qp_num <= 0xffffff);
	CHECK_EQ(qp->qp_type, type);
	CHECK(qp->context == d->ctx);
	return qp;
}

/* ---- RC connection ---------------------------------------------------- */

void t_conn_default(struct t_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->is_global = 1;
	c->access = T_ALL_REMOTE;
	c->rnr_retry = 7;
	c->min_rnr_timer = 12;
	c->retry_cnt = 7;
	c->timeout = 14;
	c->max_rd_atomic = 1;
	c->psn = 0x1234;
}

void t_ah_attr(struct ibv_ah_attr *ah, const struct t_peer *p, int is_global)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = T_PORT;
	ah->dlid = is_global ? p->lid : 0;
	ah->sl = 0;
	ah->is_global = is_global ? 1 : 0;
	if (is_global) {
		ah->grh.dgid = p->gid;
		ah->grh.sgid_index = T_GID_INDEX;
		ah->grh.hop_limit = 64;
	}
}

void t_rc_init(struct ibv_qp *qp, const struct t_conn *c)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = T_PORT;
	a.qp_access_flags = c->access;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	CHECK_EQ(qp->state, IBV_QPS_INIT);
}

void t_rc_rtr(struct ibv_qp *qp, const struct t_dev *d, const struct t_peer *p,
	      const struct t_conn *c)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->port_attr.active_mtu ? d->port_attr.active_mtu : IBV_MTU_1024;
	a.dest_qp_num = p->qpn;
	a.rq_psn = c->psn;
	a.max_dest_rd_atomic = c->max_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	t_ah_attr(&a.ah_attr, p, c->is_global);
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
	CHECK_EQ(qp->state, IBV_QPS_RTR);
}

void t_rc_rts(struct ibv_qp *qp, const struct t_conn *c)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->psn;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC));
	CHECK_EQ(qp->state, IBV_QPS_RTS);
}

void t_rc_connect(struct t_dev *da, struct ibv_qp *a, struct t_dev *db,
		  struct ibv_qp *b, const struct t_conn *c)
{
	struct t_conn def;
	struct t_peer pa, pb;

	if (!c) {
		t_conn_default(&def);
		c = &def;
	}
	t_peer_of(&pa, da, a);
	t_peer_of(&pb, db, b);
	t_rc_init(a, c);
	t_rc_init(b, c);
	t_rc_rtr(a, da, &pb, c);
	t_rc_rtr(b, db, &pa, c);
	t_rc_rts(a, c);
	t_rc_rts(b, c);
}

/* ---- UD --------------------------------------------------------------- */

void t_ud_ready(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = T_PORT;
	a.qkey = qkey;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_QKEY));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	CHECK_EQ(qp->state, IBV_QPS_RTS);
}

struct ibv_ah *t_ud_ah(struct t_dev *d, const union ibv_gid *dgid)
{
	struct t_peer p;
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&p, 0, sizeof(p));
	p.gid = *dgid;
	t_ah_attr(&a, &p, 1);
	ah = ibv_create_ah(d->pd, &a);
	CHECK(ah);
	return ah;
}

/* ---- posting ---------------------------------------------------------- */

int t_post(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
	   struct ibv_sge *sg, int nsge, unsigned int flags, uint64_t raddr,
	   uint32_t rkey, uint32_t imm)
{
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	wr.opcode = op;
	wr.send_flags = flags;
	if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

int t_post_atomic(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		  struct ibv_sge *sg, unsigned int flags, uint64_t raddr,
		  uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

int t_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sg, int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	rc = ibv_post_recv(qp, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

int t_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, struct ibv_sge *sg,
		    int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	rc = ibv_post_srq_recv(srq, &wr, &bad);
	if (rc)
		CHECK(bad == &wr);
	return rc;
}

/* ---- completions and events ------------------------------------------- */

uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void t_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int t_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			t_fail("ibv_poll_cq returned %d", n);
		if (n == 1)
			return 1;
		CHECK_EQ(n, 0);
		if (t_now_ms() >= end)
			return 0;
		/* Leave the CPU to the engine on small machines. */
		sched_yield();
	}
}

void t_wait_wc_at(const char *file, int line, struct ibv_cq *cq,
		  struct ibv_wc *wc)
{
	if (!t_poll(cq, wc, T_TIMEOUT_MS))
		t_fail_at(file, line, "no completion within %d ms", T_TIMEOUT_MS);
}

void t_check_wc_at(const char *file, int line, const struct ibv_wc *wc,
		   enum ibv_wc_status st, int opcode)
{
	if (wc->status != st)
		t_fail_at(file, line, "wr_id 0x%llx: status %d (%s), expected %d (%s)",
			  (unsigned long long)wc->wr_id, wc->status,
			  ibv_wc_status_str(wc->status), st, ibv_wc_status_str(st));
	/* ibv_poll_cq(3): opcode is only valid on success. */
	if (st == IBV_WC_SUCCESS && opcode != T_ANY_OPCODE &&
	    (int)wc->opcode != opcode)
		t_fail_at(file, line, "wr_id 0x%llx: opcode %d, expected %d",
			  (unsigned long long)wc->wr_id, wc->opcode, opcode);
}

int t_cq_quiet(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;
	int n = 0;
	uint64_t end = t_now_ms() + (uint64_t)ms;

	while (t_now_ms() < end) {
		int r = ibv_poll_cq(cq, 1, &wc);

		CHECK(r >= 0);
		if (r > 0) {
			fprintf(stderr, "unexpected completion: wr_id 0x%llx status %s opcode %d\n",
				(unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status), wc.opcode);
			n += r;
		} else {
			t_sleep_ms(1);
		}
	}
	return n;
}

struct ibv_cq *t_wait_cq_event(struct ibv_comp_channel *ch, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		struct ibv_cq *cq = NULL;
		void *cq_ctx = NULL;
		uint64_t now = t_now_ms();
		int left = now >= end ? 0 : (int)(end - now);
		int r = poll(&pfd, 1, left);

		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r >= 0);
		if (r == 0)
			return NULL;
		CHECK(pfd.revents & POLLIN);
		/* The fd is non-blocking: a spurious wake-up reads EAGAIN. */
		if (ibv_get_cq_event(ch, &cq, &cq_ctx) == 0) {
			CHECK(cq);
			return cq;
		}
		CHECK(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
		if (left == 0)
			return NULL;
	}
}

int t_wait_async(struct ibv_context *ctx, struct ibv_async_event *ev,
		 int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;

	CHECK(ctx->async_fd >= 0);
	t_nonblock(ctx->async_fd);
	for (;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		uint64_t now = t_now_ms();
		int left = now >= end ? 0 : (int)(end - now);
		int r = poll(&pfd, 1, left);

		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r >= 0);
		if (r == 0)
			return 0;
		CHECK(pfd.revents & POLLIN);
		memset(ev, 0, sizeof(*ev));
		if (ibv_get_async_event(ctx, ev) == 0)
			return 1;
		CHECK(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
		if (left == 0)
			return 0;
	}
}

enum ibv_qp_state t_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	return a.qp_state;
}

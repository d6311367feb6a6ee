/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* starve: a tenant that tries to starve the engine and the daemon's lock, and
 * a victim that measures what it suffers, for tests/integration/starve.sh
 * (issue 9, findings 3 and 9).  Each runs on the first device.
 *
 *   starve write [-q QPS] [-s BYTES] [-d DEPTH] [-t SECONDS]
 *       QPS loopback RC QPs each keep DEPTH RDMA WRITEs of BYTES posted
 *       (one MR of BYTES + 4 KiB: every WRITE moves it 4 KiB up), for
 *       SECONDS.  Prints "ready" once the first WRITEs are posted.
 *   starve flush [-q QPS] [-t SECONDS]
 *       QPS RC QPs with 16384-entry receive queues, moved to the error
 *       state, each on a CQ of its own of 65536.  Through its region it then keeps
 *       every RQ's prod a whole ring ahead of cons and every SQ's prod a
 *       ring ahead (a lie: nothing is posted), each CQ's cons at its prod (so
 *       the CQs do not overflow), and rings the doorbells: the engine flushes
 *       "receive WQEs" with no memory behind them, forever.  Prints "ready".
 *   starve victim [-t SECONDS] [--gap-ms MS] [-n COUNT] [--slow-ms MS]
 *       Two loopback RC QPs: 64-byte RDMA WRITEs, one at a time, each
 *       checked byte for byte at the target; the worst post-to-completion
 *       time.  Meanwhile, on a second context, a thread loops over control
 *       verbs (create CQ, create QP, reg MR, dereg MR, destroy QP, destroy
 *       CQ) and records the worst single call.  --gap-ms sleeps between
 *       WRITEs (so that the engine goes to sleep before each; its wake-up is
 *       measured); -n stops after COUNT WRITEs.  Prints
 *       "writes=N write_max_us=X ctrl_ops=M ctrl_max_us=Y ctrl_slow=K
 *       errors=E ctrl_max_at_ns=T", K the control calls that took
 *       --slow-ms (100) or more, T when the slowest began (CLOCK_MONOTONIC,
 *       as tests/tools/stallwatch prints its stalls).
 * Exit code 0, or 1 on any error (a verb failed, data wrong); 77 no device.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "unirdma/abi.h"

static struct {
	int qps, depth, gap_ms, slow_ms;
	uint64_t bytes;
	long count;
	double secs;
} opt = { 4, 4, 0, 100, 256ull << 20, 0, 10 };

static void die(const char *what)
{
	fprintf(stderr, "starve: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct ibv_context *open_dev(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "starve: no device\n");
		exit(77);
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	return ctx;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t swr, uint32_t rwr)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = swr;
	a.cap.max_recv_wr = rwr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &a);
	if (!qp)
		die("ibv_create_qp");
	return qp;
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
}

/* RESET -> RTS, connected to peer (a QP of the same context). */
static void connect_qp(struct ibv_context *ctx, struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		die("ibv_query_gid");
	to_init(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

static int post_write(struct ibv_qp *qp, uint64_t id, void *src, uint32_t len, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* ------------------------------------------------------------ attacks */

static int attack_write(void)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	uint64_t len = opt.bytes + 4096, end, moved = 0;
	struct ibv_qp *a[64], *b[64];
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;

	if (!pd || !ch)
		die("setup");
	if (opt.qps > 64)
		opt.qps = 64;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	memset(buf, 0x5a, len);
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	cq = ibv_create_cq(ctx, opt.qps * opt.depth * 2 + 16, NULL, ch, 0);
	if (!cq)
		die("ibv_create_cq");
	for (int i = 0; i < opt.qps; i++) {
		a[i] = make_qp(pd, cq, (uint32_t)opt.depth, 1);
		b[i] = make_qp(pd, cq, 1, 1);
	}
	for (int i = 0; i < opt.qps; i++) {
		connect_qp(ctx, a[i], b[i]);
		connect_qp(ctx, b[i], a[i]);
	}
	for (int i = 0; i < opt.qps; i++)
		for (int k = 0; k < opt.depth; k++)
			if (post_write(a[i], (uint64_t)i, buf, (uint32_t)opt.bytes, mr->lkey,
				       (uintptr_t)buf + 4096, mr->rkey))
				die("post");
	printf("ready: %d QPs x %d WRITEs of %llu bytes\n", opt.qps, opt.depth,
	       (unsigned long long)opt.bytes);
	fflush(stdout);
	end = now_ns() + (uint64_t)(opt.secs * 1e9);
	while (now_ns() < end) {
		struct ibv_wc wc[16];
		struct ibv_cq *ecq;
		void *ectx;
		int n;

		if (ibv_req_notify_cq(cq, 0))
			die("req_notify");
		n = ibv_poll_cq(cq, 16, wc);
		if (!n) {
			/* block: the engine's time is what is measured, not ours */
			if (ibv_get_cq_event(ch, &ecq, &ectx))
				die("get_cq_event");
			ibv_ack_cq_events(ecq, 1);
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "starve: WRITE status %d\n", wc[i].status);
				return 1;
			}
			moved += opt.bytes;
			if (post_write(a[wc[i].wr_id], wc[i].wr_id, buf, (uint32_t)opt.bytes, mr->lkey,
				       (uintptr_t)buf + 4096, mr->rkey))
				die("post");
		}
	}
	printf("attack done: %.1f GiB moved\n", (double)moved / (1 << 30));
	fflush(stdout);
	_exit(0);       /* leave the WRITEs in flight: the daemon cleans up */
}

/* The region of the first device, mapped as the library maps it. */
static uint8_t *map_region(struct ibv_context *ctx, uint64_t *size)
{
	const char *dir = getenv("UNIRDMA_DEVDIR");
	char path[600];
	struct urd_region_hdr h;
	uint8_t *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/region", dir ? dir : "/run/unirdma/dev",
		 ibv_get_device_name(ctx->device));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die(path);
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != URD_MAGIC)
		die("region header");
	p = mmap(NULL, h.ctrl_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap region");
	*size = h.ctrl_size;
	return p;
}

/* The library's answer to the call just made stays in its slot's response
 * area: the slot whose resp_seq moved holds it (how hostile.c learns where
 * the daemon put its rings). */
static void snoop_begin(uint8_t *region, uint32_t *seq)
{
	for (uint32_t i = 0; i < URD_MAX_CTX; i++)
		seq[i] = __atomic_load_n(&((struct urd_slot_hdr *)(region + urd_slot_off(i)))->resp_seq,
					 __ATOMIC_ACQUIRE);
}

static bool snoop_end(uint8_t *region, const uint32_t *seq, uint16_t op, void *out, size_t len)
{
	for (uint32_t i = 0; i < URD_MAX_CTX; i++) {
		struct urd_slot_hdr *sl = (struct urd_slot_hdr *)(region + urd_slot_off(i));
		const struct urd_msg_hdr *h = (const void *)((uint8_t *)sl + URD_SLOT_RESP_OFF);

		if (__atomic_load_n(&sl->resp_seq, __ATOMIC_ACQUIRE) != seq[i] && h->op == op && !h->status) {
			memcpy(out, h, len);
			return true;
		}
	}
	return false;
}

struct lying_qp {
	struct urd_ring_hdr *sq, *rq, *cq;
	uint32_t sq_n, rq_n, db;
};

static int attack_flush(void)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct lying_qp *q;
	struct urd_region_hdr *hdr;
	struct urd_doorbells *db;
	uint32_t seq[URD_MAX_CTX];
	uint64_t size, end, rounds = 0;
	uint8_t *region;

	if (!pd)
		die("ibv_alloc_pd");
	region = map_region(ctx, &size);
	hdr = (struct urd_region_hdr *)region;
	db = (struct urd_doorbells *)(region + hdr->db_off);
	q = calloc((size_t)opt.qps, sizeof(*q));
	for (int i = 0; i < opt.qps; i++) {
		struct urd_create_qp_resp r;
		struct urd_create_cq_resp cr;
		struct ibv_qp *qp;
		struct ibv_cq *cq;

		/* a CQ per QP, as big as allowed: while we are descheduled the
		 * engine must not overrun it (an overrun CQ ends the flushing) */
		snoop_begin(region, seq);
		cq = ibv_create_cq(ctx, (int)URD_MAX_CQE, NULL, NULL, 0);
		if (!cq || !snoop_end(region, seq, URD_OP_CREATE_CQ, &cr, sizeof(cr)))
			die("create CQ");
		q[i].cq = (struct urd_ring_hdr *)(region + cr.ring_off);
		snoop_begin(region, seq);
		qp = make_qp(pd, cq, 1024, URD_MAX_WR);
		if (!snoop_end(region, seq, URD_OP_CREATE_QP, &r, sizeof(r)) || !r.rq_off)
			die("create QP (snoop)");
		q[i].sq = (struct urd_ring_hdr *)(region + r.sq_off);
		q[i].rq = (struct urd_ring_hdr *)(region + r.rq_off);
		q[i].sq_n = r.sq_n;
		q[i].rq_n = r.rq_n;
		q[i].db = r.db_index;
		to_init(qp);
		if (ibv_modify_qp(qp, &err, IBV_QP_STATE))
			die("modify ERR");
	}
	printf("ready: %d errored QPs with lying RQ and SQ producer indices\n", opt.qps);
	fflush(stdout);
	end = now_ns() + (uint64_t)(opt.secs * 1e9);
	while (now_ns() < end) {
		for (int i = 0; i < opt.qps; i++) {
			struct lying_qp *l = &q[i];

			__atomic_store_n(&l->rq->prod, __atomic_load_n(&l->rq->cons, __ATOMIC_RELAXED) + l->rq_n,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&l->sq->prod, __atomic_load_n(&l->sq->cons, __ATOMIC_RELAXED) + l->sq_n,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&l->cq->cons, __atomic_load_n(&l->cq->prod, __ATOMIC_RELAXED),
					 __ATOMIC_RELEASE);
			__atomic_fetch_or(&db->bits[l->db / 64], 1ull << (l->db % 64), __ATOMIC_SEQ_CST);
			__atomic_fetch_or(&db->summary, 1ull << (l->db / 64), __ATOMIC_SEQ_CST);
		}
		if (__atomic_load_n(&hdr->engine_sleeping, __ATOMIC_SEQ_CST)) {
			__atomic_fetch_add(&hdr->engine_wake, 1, __ATOMIC_SEQ_CST);
			syscall(SYS_futex, &hdr->engine_wake, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
		}
		if (++rounds % 16 == 0)
			usleep(200);    /* the engine's work is what is measured, not ours */
	}
	printf("attack done\n");
	fflush(stdout);
	_exit(0);
}

/* ------------------------------------------------------------- victim */

static volatile bool victim_done;
static uint64_t lat_us[1u << 20];      /* the victim's WRITE latencies, for percentiles */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
static uint64_t ctrl_ops, ctrl_max_ns, ctrl_max_at, ctrl_errors, ctrl_slow;

static void ctrl_call_end(uint64_t t0, bool ok)
{
	uint64_t dt = now_ns() - t0;

	if (dt > ctrl_max_ns) {
		ctrl_max_ns = dt;
		ctrl_max_at = t0;
	}
	if (dt >= (uint64_t)opt.slow_ms * 1000000)
		ctrl_slow++;
	ctrl_ops++;
	if (!ok)
		ctrl_errors++;
}

static void *ctrl_loop(void *arg)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	void *page = aligned_alloc(4096, 4096);

	(void)arg;
	if (!pd || !page)
		die("ctrl setup");
	while (!victim_done) {
		struct ibv_qp_init_attr qa;
		struct ibv_cq *cq;
		struct ibv_qp *qp = NULL;
		struct ibv_mr *mr;
		uint64_t t;

		t = now_ns();
		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		ctrl_call_end(t, cq != NULL);
		if (!cq)
			break;
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		t = now_ns();
		qp = ibv_create_qp(pd, &qa);
		ctrl_call_end(t, qp != NULL);
		t = now_ns();
		mr = ibv_reg_mr(pd, page, 4096, IBV_ACCESS_LOCAL_WRITE);
		ctrl_call_end(t, mr != NULL);
		if (mr) {
			t = now_ns();
			ctrl_call_end(t, ibv_dereg_mr(mr) == 0);
		}
		if (qp) {
			t = now_ns();
			ctrl_call_end(t, ibv_destroy_qp(qp) == 0);
		}
		t = now_ns();
		ctrl_call_end(t, ibv_destroy_cq(cq) == 0);
		usleep(1000);
	}
	return NULL;
}

static int victim(void)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	uint64_t end, writes = 0, max_ns = 0, bad = 0;
	uint8_t *buf = aligned_alloc(4096, 8192);
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	pthread_t th;

	if (!cq || !buf)
		die("victim setup");
	memset(buf, 0, 8192);
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	a = make_qp(pd, cq, 4, 1);
	b = make_qp(pd, cq, 4, 1);
	connect_qp(ctx, a, b);
	connect_qp(ctx, b, a);
	if (pthread_create(&th, NULL, ctrl_loop, NULL))
		die("pthread_create");
	end = now_ns() + (uint64_t)(opt.secs * 1e9);
	while (now_ns() < end && (!opt.count || (long)writes < opt.count)) {
		uint8_t *src = buf + (writes % 32) * 64, *dst = buf + 4096 + (writes % 32) * 64;
		uint64_t t0, dt;
		struct ibv_wc wc;
		int n;

		for (int i = 0; i < 64; i++)
			src[i] = (uint8_t)(writes * 7 + (uint64_t)i);
		t0 = now_ns();
		if (post_write(a, writes, src, 64, mr->lkey, (uintptr_t)dst, mr->rkey))
			die("post");
		while (!(n = ibv_poll_cq(cq, 1, &wc)))
			if (now_ns() - t0 > 60ull * 1000000000)
				break;
		dt = now_ns() - t0;
		if (dt > max_ns)
			max_ns = dt;
		lat_us[writes % (1u << 20)] = dt / 1000;
		if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != writes || memcmp(src, dst, 64)) {
			fprintf(stderr, "starve: victim WRITE %llu failed (n %d status %d)\n",
				(unsigned long long)writes, n, n == 1 ? (int)wc.status : -1);
			bad++;
			break;
		}
		writes++;
		if (opt.gap_ms)
			usleep((useconds_t)opt.gap_ms * 1000);
	}
	victim_done = true;
	pthread_join(th, NULL);
	if (writes) {
		uint64_t k = writes < (1u << 20) ? writes : (1u << 20);

		qsort(lat_us, k, sizeof(lat_us[0]), cmp_u64);
		printf("write_us: p50 %llu p99 %llu p99.9 %llu\n", (unsigned long long)lat_us[k / 2],
		       (unsigned long long)lat_us[k * 99 / 100], (unsigned long long)lat_us[k * 999 / 1000]);
	}
	printf("writes=%llu write_max_us=%llu ctrl_ops=%llu ctrl_max_us=%llu ctrl_slow=%llu errors=%llu "
	       "ctrl_max_at_ns=%llu\n",
	       (unsigned long long)writes, (unsigned long long)(max_ns / 1000),
	       (unsigned long long)ctrl_ops, (unsigned long long)(ctrl_max_ns / 1000),
	       (unsigned long long)ctrl_slow, (unsigned long long)(bad + ctrl_errors),
	       (unsigned long long)ctrl_max_at);
	fflush(stdout);
	return bad || ctrl_errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "gap-ms", required_argument, NULL, 'g' },
		{ "slow-ms", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mode;
	int c;

	if (argc < 2) {
		fprintf(stderr, "usage: starve write|flush|victim [options] (see the source)\n");
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "q:s:d:t:n:", lo, NULL)) != -1) {
		switch (c) {
		case 'q': opt.qps = atoi(optarg); break;
		case 's': opt.bytes = strtoull(optarg, NULL, 0); break;
		case 'd': opt.depth = atoi(optarg); break;
		case 't': opt.secs = atof(optarg); break;
		case 'n': opt.count = atol(optarg); break;
		case 'g': opt.gap_ms = atoi(optarg); break;
		case 'S': opt.slow_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (opt.qps < 1 || opt.depth < 1 || opt.bytes < 1 || opt.bytes > (1ull << 31))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "write"))
		return attack_write();
	if (!strcmp(mode, "flush"))
		return attack_flush();
	if (!strcmp(mode, "victim"))
		return victim();
	fprintf(stderr, "starve: unknown mode %s\n", mode);
	return 2;
}

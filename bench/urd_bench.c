/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* urd_bench: the verbs benchmark of unirdma's suite (bench/README.md).
 *
 * A client and a server, each in a container of its own vRNIC, connect RC
 * QPs over a TCP side channel (like perftest) and measure:
 *   bw   RDMA WRITE, RDMA READ or SEND: bandwidth and message rate with a
 *        window of outstanding work requests on each of N QPs (every
 *        --signal'th signaled, one WR per ibv_post_send);
 *   lat  ping-pong latency: WRITE (each side polls the last byte of its
 *        buffer, as ib_write_lat) and SEND (each side polls its receive CQ),
 *        one-way = round trip / 2; READ: the time of one read, post to
 *        completion.  Percentiles over every iteration of the window.
 *   nop  (lat) the time of one ibv_poll_cq that finds the CQ empty: the cost
 *        of a data verb that does nothing, i.e. of the data path's plumbing;
 *   idle the session sits connected and does nothing (engine CPU when idle).
 * One session (one connection, one set of QPs) runs every test and kind
 * asked for (-t write,read,send -m bw,lat) at every size.  Each point has a
 * warm-up, then a timed window; the client prints one JSON object per point
 * on stdout.  CPU use is given in cores (CPU time / wall time) for the
 * client and the server (their own clocks), and for any thread the runner
 * hands over as an open /proc/<pid>/task/<tid>/{stat,schedstat} file
 * descriptor (--cpu NAME=FD): the runner's /proc stays readable from inside
 * the container through the inherited descriptor.
 *
 *   urd_bench server [-p PORT] [-d DEVICE]
 *   urd_bench client HOST [-p PORT] [-d DEVICE] -t TEST[,TEST...] -m bw|lat[,...]
 *             [-s SIZE,SIZE,...] [-q QPS[,QPS...]] [--depth N] [--signal N] [--rq-depth N]
 *             [--warmup-ms N] [--ms N] [--max-iters N] [--inline N]
 *             [--start-at UNIX_MS] [--cpu NAME=FD]... [--tag KEY=VALUE]...
 *
 * The server serves one session and exits.  The client retries connecting
 * for 20 s, so the two may start in any order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#include <infiniband/verbs.h>

#define MAGIC        0x55524442u    /* "URDB" */
#define VERSION      1u
#define MAX_QPS      1024
#define MAX_SIZES    64
#define MAX_CPU      8
#define MAX_TAGS     16
#define STOP_IMM     0x5354u        /* SEND_WITH_IMM that ends a send test */
#define SEQ_STOP     255            /* last byte that ends a write ping-pong */
#define CQ_BATCH     32

enum test { T_WRITE, T_READ, T_SEND, T_NOP, T_IDLE };
enum kind { K_BW, K_LAT };
static const char *const test_name[] = { "write", "read", "send", "nop", "idle" };
static const char *const kind_name[] = { "bw", "lat" };

/* ------------------------------------------------------------ utilities */

/* Where the program is, for the SIGTERM that a runner's timeout sends: a
 * hung benchmark says what it was waiting for. */
static const char *volatile phase = "start";
static volatile uint64_t diag_posted, diag_completed, diag_outstanding;

static void put_num(char *b, size_t *o, uint64_t v)
{
	char t[24];
	int n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		b[(*o)++] = t[--n];
}

static void on_term(int sig)
{
	char b[256];
	size_t o = 0, l = strlen(phase);

	memcpy(b + o, "urd_bench: terminated while: ", 29);
	o += 29;
	if (l > 120)
		l = 120;
	memcpy(b + o, phase, l);
	o += l;
	memcpy(b + o, " (posted ", 9);
	o += 9;
	put_num(b, &o, diag_posted);
	memcpy(b + o, ", completed ", 12);
	o += 12;
	put_num(b, &o, diag_completed);
	memcpy(b + o, ", outstanding batches ", 22);
	o += 22;
	put_num(b, &o, diag_outstanding);
	b[o++] = ')';
	b[o++] = '\n';
	if (write(2, b, o) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("side channel: send: %s", n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

static void recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("side channel: recv: %s", n < 0 ? strerror(errno) : "peer closed");
		p += n;
		len -= (size_t)n;
	}
}

/* ------------------------------------------------- CPU of other threads */

/* A /proc/<pid>/task/<tid>/schedstat (first field: ns on the CPU) or .../stat
 * (utime + stime, in clock ticks) file descriptor opened by the runner. */
struct cpu_src {
	char name[32];
	int fd;
};

static uint64_t cpu_src_ns(const struct cpu_src *c)
{
	char buf[1024], *p;
	ssize_t n = pread(c->fd, buf, sizeof(buf) - 1, 0);
	unsigned long long v[2];

	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p) {       /* schedstat */
		if (sscanf(buf, "%llu", &v[0]) != 1)
			return 0;
		return v[0];
	}
	/* stat: after "pid (comm)": state(3) ... utime(14) stime(15) */
	p++;
	for (int field = 3; field < 14; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return 0;
	}
	if (sscanf(p, " %llu %llu", &v[0], &v[1]) != 2)
		return 0;
	return (v[0] + v[1]) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* ------------------------------------------------------------- protocol */

enum { HELLO_RECV = 1 };         /* a SEND test will run: keep receives posted */

struct hello {                  /* client -> server */
	uint32_t magic, version;
	uint32_t flags, reserved;
	uint32_t nqp, depth, rq_depth, inline_max;
	uint64_t bufsize;
};

struct peer_info {              /* both ways, then nqp uint32_t QPNs */
	uint32_t magic;
	uint32_t nqp;
	uint8_t gid[16];
	uint64_t addr;              /* start of the buffer (receive area first) */
	uint32_t rkey;
	uint32_t max_rd_atomic;
};

enum cmd_op { CMD_POINT = 1, CMD_END, CMD_BYE };

struct cmd {                    /* client -> server */
	uint32_t op;
	uint32_t size;
	uint32_t test, kind;        /* CMD_POINT */
};

struct srv_stats {              /* server -> client after CMD_END */
	uint64_t cpu_ns, wall_ns;
	uint64_t msgs;
	uint64_t cpumask;           /* the server's CPU affinity (CPUs 0..63) */
};

static uint64_t my_cpumask(void)
{
	cpu_set_t s;
	uint64_t m = 0;

	if (sched_getaffinity(0, sizeof(s), &s))
		return 0;
	for (int i = 0; i < 64; i++)
		if (CPU_ISSET(i, &s))
			m |= 1ull << i;
	return m;
}

/* "0,1": the CPUs of a mask, for the JSON record. */
static const char *cpulist(uint64_t m, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < 64 && o + 4 < len; i++)
		if (m & (1ull << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", i);
	return buf;
}

/* ---------------------------------------------------------- verbs state */

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp[MAX_QPS];
	uint32_t nqp, depth, rq_depth, inline_max;
	uint32_t nqp_now;           /* QPs the point uses: the first nqp_now */
	uint8_t *buf;               /* [0, bufsize) receive area, [bufsize, 2 bufsize) source */
	uint64_t bufsize;
	uint8_t gid[16];
	uint32_t max_rd_atomic;
	struct peer_info peer;
	uint32_t peer_qpn[MAX_QPS];
	int sock;
	bool recv;                  /* receives are kept posted (SEND tests) */
	enum test test;             /* of the point being measured */
	enum kind kind;
	uint32_t inline_now;        /* inline threshold of the point: 0 for bandwidth */
};

static void open_dev(struct ctx *c, const char *devname)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr da;
	union ibv_gid gid;

	if (!list || !list[0])
		die("no RDMA device");
	for (int i = 0; list[i]; i++) {
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname)) {
			c->ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	if (!c->ctx)
		die("cannot open device %s: %s", devname ? devname : "(first)", strerror(errno));
	if (ibv_query_device(c->ctx, &da))
		die("ibv_query_device failed");
	c->max_rd_atomic = da.max_qp_rd_atom > 16 ? 16 : (uint32_t)da.max_qp_rd_atom;
	if (ibv_query_gid(c->ctx, 1, 0, &gid))
		die("ibv_query_gid failed");
	memcpy(c->gid, gid.raw, 16);
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
}

static void setup(struct ctx *c)
{
	size_t len = 2 * c->bufsize;
	uint32_t scqe = c->nqp * c->depth, rcqe = c->nqp * c->rq_depth;

	if (posix_memalign((void **)&c->buf, 4096, len))
		die("out of memory for %zu bytes", len);
	memset(c->buf, 0, len);
	c->mr = ibv_reg_mr(c->pd, c->buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	if (!c->mr)
		die("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
	if (scqe > 65536)
		scqe = 65536;
	if (rcqe > 65536)
		rcqe = 65536;
	c->scq = ibv_create_cq(c->ctx, (int)scqe, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->ctx, (int)rcqe, NULL, NULL, 0);
	if (!c->scq || !c->rcq)
		die("ibv_create_cq: %s", strerror(errno));
	for (uint32_t i = 0; i < c->nqp; i++) {
		struct ibv_qp_init_attr a = {
			.send_cq = c->scq,
			.recv_cq = c->rcq,
			.cap = {
				.max_send_wr = c->depth,
				.max_recv_wr = c->recv ? c->rq_depth : 1,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.max_inline_data = c->inline_max,
			},
			.qp_type = IBV_QPT_RC,
		};
		struct ibv_qp_attr at = {
			.qp_state = IBV_QPS_INIT,
			.pkey_index = 0,
			.port_num = 1,
			.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ,
		};

		c->qp[i] = ibv_create_qp(c->pd, &a);
		if (!c->qp[i])
			die("ibv_create_qp #%u: %s", i, strerror(errno));
		if (ibv_modify_qp(c->qp[i], &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
			die("modify QP to INIT failed");
	}
}

static void exchange(struct ctx *c, bool server)
{
	struct peer_info me = {
		.magic = MAGIC,
		.nqp = c->nqp,
		.addr = (uintptr_t)c->buf,
		.rkey = c->mr->rkey,
		.max_rd_atomic = c->max_rd_atomic,
	};
	uint32_t qpn[MAX_QPS];

	memcpy(me.gid, c->gid, 16);
	for (uint32_t i = 0; i < c->nqp; i++)
		qpn[i] = c->qp[i]->qp_num;
	if (server) {
		recv_all(c->sock, &c->peer, sizeof(c->peer));
		recv_all(c->sock, c->peer_qpn, c->nqp * sizeof(uint32_t));
	}
	send_all(c->sock, &me, sizeof(me));
	send_all(c->sock, qpn, c->nqp * sizeof(uint32_t));
	if (!server) {
		recv_all(c->sock, &c->peer, sizeof(c->peer));
		recv_all(c->sock, c->peer_qpn, c->nqp * sizeof(uint32_t));
	}
	if (c->peer.magic != MAGIC || c->peer.nqp != c->nqp)
		die("peer sent a bad connection record");
}

static void connect_qps(struct ctx *c)
{
	for (uint32_t i = 0; i < c->nqp; i++) {
		struct ibv_qp_attr at = {
			.qp_state = IBV_QPS_RTR,
			.path_mtu = IBV_MTU_4096,
			.dest_qp_num = c->peer_qpn[i],
			.rq_psn = 0,
			.max_dest_rd_atomic = (uint8_t)c->max_rd_atomic,
			.min_rnr_timer = 1,
			.ah_attr = {
				.is_global = 1,
				.port_num = 1,
				.grh = { .sgid_index = 0, .hop_limit = 64 },
			},
		};

		memcpy(at.ah_attr.grh.dgid.raw, c->peer.gid, 16);
		if (ibv_modify_qp(c->qp[i], &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
			die("modify QP to RTR failed");
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 0;
		at.timeout = 14;
		at.retry_cnt = 7;
		at.rnr_retry = 7;
		at.max_rd_atomic = (uint8_t)(c->peer.max_rd_atomic < c->max_rd_atomic ?
					     c->peer.max_rd_atomic : c->max_rd_atomic);
		if (ibv_modify_qp(c->qp[i], &at, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
			die("modify QP to RTS failed");
	}
}

/* Destroy everything before exiting: a context that dies with connected QPs
 * moves its peers' QPs to the error state, one async event each. */
static void teardown(struct ctx *c)
{
	phase = "teardown";
	for (uint32_t i = 0; i < c->nqp; i++)
		if (c->qp[i] && ibv_destroy_qp(c->qp[i]))
			die("ibv_destroy_qp failed");
	if (ibv_destroy_cq(c->scq) || ibv_destroy_cq(c->rcq) || ibv_dereg_mr(c->mr) ||
	    ibv_dealloc_pd(c->pd) || ibv_close_device(c->ctx))
		die("teardown failed");
	free(c->buf);
}

/* ------------------------------------------------------------ data path */

/* Receives always take a whole receive area, so that one posted for a point
 * serves any later one: they are posted once per session and topped up one
 * for one as they are consumed. */
static void post_recv1(struct ctx *c, uint32_t q)
{
	struct ibv_sge sge = { (uintptr_t)c->buf, (uint32_t)c->bufsize, c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = q, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = ibv_post_recv(c->qp[q], &wr, &bad);

	if (ret)
		die("ibv_post_recv: %s", strerror(ret));
}

/* One send-queue WR from the source area to the peer's receive area. */
static void post_send1(struct ctx *c, uint32_t q, enum ibv_wr_opcode op, uint32_t size,
		       bool signaled, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)(c->buf + c->bufsize), size, c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = q,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;
	int ret;

	if (op == IBV_WR_RDMA_READ)
		sge.addr = (uintptr_t)c->buf;       /* read lands in our receive area */
	if (op != IBV_WR_RDMA_READ && size <= c->inline_now)
		wr.send_flags |= IBV_SEND_INLINE;
	if (op == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = c->peer.addr;
	wr.wr.rdma.rkey = c->peer.rkey;
	ret = ibv_post_send(c->qp[q], &wr, &bad);
	if (ret)
		die("ibv_post_send: %s", strerror(ret));
}

static int poll(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = ibv_poll_cq(cq, n, wc);

	if (got < 0)
		die("ibv_poll_cq failed");
	for (int i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			die("completion with status %s (%d), opcode %d",
			    ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].opcode);
	return got;
}

static volatile uint8_t *last_byte(struct ctx *c, uint32_t size)
{
	return (volatile uint8_t *)(c->buf + (size ? size - 1 : 0));
}

/* Busy-wait until the last byte of the receive area says v (or, with
 * or_stop, SEQ_STOP), yielding every 64 reads as the library's poll_cq does
 * on empty polls: with fewer cores than spinning parties the engine must
 * get the CPU to write the byte.  Returns the value seen. */
static uint8_t wait_byte(volatile uint8_t *p, uint8_t v, bool or_stop)
{
	uint32_t spins = 0;
	uint8_t got;

	while ((got = *p) != v && !(or_stop && got == SEQ_STOP))
		if (++spins % 64 == 0)
			sched_yield();
	return got;
}

static uint8_t next_seq(uint8_t s)
{
	return s >= SEQ_STOP - 1 ? 1 : (uint8_t)(s + 1);
}

static void prepost(struct ctx *c)
{
	if (!c->recv)
		return;
	for (uint32_t q = 0; q < c->nqp; q++)
		for (uint32_t i = 0; i < c->rq_depth; i++)
			post_recv1(c, q);
}

/* ------------------------------------------------------------ server */

/* Keeps every QP's receive queue full while a send test runs; returns when
 * the STOP message arrived on some QP (all earlier sends completed at the
 * client before it sent STOP, so they are all in). */
static uint64_t serve_send_bw(struct ctx *c)
{
	struct ibv_wc wc[CQ_BATCH];
	uint64_t msgs = 0;

	for (;;) {
		int n = poll(c->rcq, wc, CQ_BATCH);

		for (int i = 0; i < n; i++) {
			post_recv1(c, (uint32_t)wc[i].wr_id);
			if ((wc[i].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[i].imm_data) == STOP_IMM)
				return msgs;
			msgs++;
		}
	}
}

static uint64_t serve_send_lat(struct ctx *c, uint32_t size)
{
	struct ibv_wc wc[CQ_BATCH];
	uint64_t msgs = 0;
	uint32_t unsignaled = 0;

	for (;;) {
		int n = poll(c->rcq, wc, 1);
		bool stop;

		if (!n)
			continue;
		post_recv1(c, 0);
		stop = (wc[0].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[0].imm_data) == STOP_IMM;
		if (++unsignaled >= c->depth / 2) {
			post_send1(c, 0, stop ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, size, true, STOP_IMM);
			while (!poll(c->scq, wc, 1))
				;
			unsignaled = 0;
		} else {
			post_send1(c, 0, stop ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, size, false, STOP_IMM);
		}
		if (stop)
			return msgs;
		msgs++;
	}
}

static uint64_t serve_write_lat(struct ctx *c, uint32_t size)
{
	volatile uint8_t *in = last_byte(c, size);
	uint8_t *out = c->buf + c->bufsize + (size - 1);
	struct ibv_wc wc[CQ_BATCH];
	uint8_t expect = 1;
	uint32_t unsignaled = 0;
	uint64_t msgs = 0;

	for (;;) {
		uint8_t v = wait_byte(in, expect, true);

		*out = v;
		if (++unsignaled >= c->depth / 2) {
			post_send1(c, 0, IBV_WR_RDMA_WRITE, size, true, 0);
			while (!poll(c->scq, wc, 1))
				;
			unsignaled = 0;
		} else {
			post_send1(c, 0, IBV_WR_RDMA_WRITE, size, false, 0);
		}
		if (v == SEQ_STOP)
			return msgs;
		expect = next_seq(expect);
		msgs++;
	}
}

static void run_server(const char *port, const char *devname)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	struct ctx c = { 0 };
	struct hello h;
	int lfd, one = 1;

	if (getaddrinfo(NULL, port, &hints, &ai))
		die("bad port %s", port);
	lfd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1))
		die("cannot listen on port %s: %s", port, strerror(errno));
	freeaddrinfo(ai);
	phase = "server: opening the device";
	open_dev(&c, devname);
	phase = "server: waiting for the client to connect";
	c.sock = accept(lfd, NULL, NULL);
	if (c.sock < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	setsockopt(c.sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	recv_all(c.sock, &h, sizeof(h));
	if (h.magic != MAGIC || h.version != VERSION || !h.nqp || h.nqp > MAX_QPS ||
	    h.bufsize < 64 || h.bufsize > (1ull << 30) ||
	    !h.depth || h.depth > 16384 || !h.rq_depth || h.rq_depth > 16384 || h.inline_max > 1024)
		die("client sent a bad hello");
	c.recv = h.flags & HELLO_RECV;
	c.nqp = h.nqp;
	c.depth = h.depth;
	c.rq_depth = h.rq_depth;
	c.inline_max = h.inline_max;
	c.bufsize = h.bufsize;
	phase = "server: creating QPs";
	setup(&c);
	phase = "server: exchanging QP numbers";
	exchange(&c, true);
	phase = "server: connecting QPs";
	connect_qps(&c);
	prepost(&c);

	for (;;) {
		struct srv_stats st = { 0 };
		struct cmd cmd;
		uint64_t cpu0, t0;

		phase = "server: waiting for a command";
		recv_all(c.sock, &cmd, sizeof(cmd));
		if (cmd.op == CMD_BYE)
			break;
		if (cmd.op != CMD_POINT || !cmd.size || cmd.size > c.bufsize || cmd.test > T_IDLE ||
		    cmd.kind > K_LAT || (cmd.test == T_SEND && !c.recv))
			die("client sent a bad command");
		c.test = cmd.test;
		c.kind = cmd.kind;
		c.inline_now = c.kind == K_LAT ? c.inline_max : 0;
		memset(c.buf, 0, 2 * c.bufsize);
		t0 = now_ns();
		cpu0 = cpu_self_ns();
		send_all(c.sock, &cmd, sizeof(cmd));            /* go */
		phase = c.test == T_SEND ? "server: receiving sends" :
			c.test == T_WRITE && c.kind == K_LAT ? "server: write ping-pong" :
			"server: waiting for the end of the point";
		if (c.test == T_SEND)
			st.msgs = c.kind == K_BW ? serve_send_bw(&c) : serve_send_lat(&c, cmd.size);
		else if (c.test == T_WRITE && c.kind == K_LAT)
			st.msgs = serve_write_lat(&c, cmd.size);
		phase = "server: waiting for the end of the point";
		recv_all(c.sock, &cmd, sizeof(cmd));
		if (cmd.op != CMD_END)
			die("client sent a bad command");
		st.cpu_ns = cpu_self_ns() - cpu0;
		st.wall_ns = now_ns() - t0;
		st.cpumask = my_cpumask();
		send_all(c.sock, &st, sizeof(st));
	}
	teardown(&c);
	close(c.sock);
}

/* ------------------------------------------------------------- client */

struct opts {
	const char *host, *port, *dev;
	enum test tests[T_IDLE + 1];
	enum kind kinds[K_LAT + 1];
	uint32_t ntests, nkinds;
	uint32_t sizes[MAX_SIZES], nsizes;
	uint32_t nqp, depth, signal, rq_depth, inline_max;
	uint32_t qps[16], nqps;     /* -q 1,16,256: QP counts of the points; nqp = the largest */
	uint64_t warmup_ns, window_ns, max_iters;
	uint64_t start_at_ms;
	struct cpu_src cpu[MAX_CPU];
	uint32_t ncpu;
	char *tags[MAX_TAGS];
	uint32_t ntags;
};

struct result {
	uint64_t ops, bytes, ns;
	double *lat;                /* microseconds, one per iteration */
	uint64_t nlat;
	uint64_t self_cpu_ns;
	uint64_t ext_ns[MAX_CPU];
};

/* Window bookkeeping shared by the loops: once the warm-up is over, take the
 * CPU and time snapshots that start the measured window. */
struct window {
	uint64_t start, end;        /* absolute ns: measuring in [start, end) */
	bool open, closed;
	uint64_t self0, ext0[MAX_CPU];
};

static void window_open(struct window *w, const struct opts *o, struct result *r, uint64_t t)
{
	w->open = true;
	w->start = t;
	w->end = t + o->window_ns;
	w->self0 = cpu_self_ns();
	for (uint32_t i = 0; i < o->ncpu; i++)
		w->ext0[i] = cpu_src_ns(&o->cpu[i]);
	r->ops = r->bytes = 0;
	r->nlat = 0;
}

static void window_close(struct window *w, const struct opts *o, struct result *r, uint64_t t)
{
	w->closed = true;
	r->ns = t - w->start;
	r->self_cpu_ns = cpu_self_ns() - w->self0;
	for (uint32_t i = 0; i < o->ncpu; i++)
		r->ext_ns[i] = cpu_src_ns(&o->cpu[i]) - w->ext0[i];
}

/* Bandwidth: every QP keeps up to depth WRs outstanding, posted in batches of
 * `signal` WRs of which the last is signaled; a completion retires a batch. */
static void client_bw(struct ctx *c, const struct opts *o, uint32_t size, struct result *r)
{
	enum ibv_wr_opcode op = c->test == T_WRITE ? IBV_WR_RDMA_WRITE :
				c->test == T_READ ? IBV_WR_RDMA_READ : IBV_WR_SEND;
	uint32_t batches_max = c->depth / o->signal, outstanding = 0;
	static uint32_t busy[MAX_QPS];
	struct ibv_wc wc[CQ_BATCH];
	struct window w = { 0 };
	uint64_t t0 = now_ns();
	uint32_t q = 0;

	memset(busy, 0, sizeof(busy));
	w.start = t0 + o->warmup_ns;
	for (uint32_t idle = 0;; idle++) {
		uint64_t t;

		/* the clock costs as much as a post in a VM: read it after
		 * progress, or every 64 empty turns */
		if (idle % 64 && w.open && !w.closed && outstanding == c->nqp_now * batches_max)
			goto poll_only;
		t = now_ns();
		if (!w.open && t >= w.start)
			window_open(&w, o, r, t);
		if (w.open && !w.closed && t >= w.end)
			window_close(&w, o, r, t);
		if (!w.closed) {
			/* one batch on the next QP with room, round robin */
			for (uint32_t k = 0; k < c->nqp_now; k++, q = (q + 1) % c->nqp_now) {
				if (busy[q] < batches_max) {
					for (uint32_t i = 0; i < o->signal; i++)
						post_send1(c, q, op, size, i == o->signal - 1, 0);
					busy[q]++;
					outstanding++;
					diag_posted += o->signal;
					diag_outstanding = outstanding;
					q = (q + 1) % c->nqp_now;
					break;
				}
			}
		} else if (!outstanding) {
			break;
		}
poll_only:;
		int n = poll(c->scq, wc, CQ_BATCH);

		if (n)
			idle = 0;
		for (int i = 0; i < n; i++) {
			busy[wc[i].wr_id]--;
			outstanding--;
			diag_completed += o->signal;
			diag_outstanding = outstanding;
			if (w.open && !w.closed) {
				r->ops += o->signal;
				r->bytes += (uint64_t)o->signal * size;
			}
		}
	}
	if (c->test == T_SEND) {
		post_send1(c, 0, IBV_WR_SEND_WITH_IMM, size, true, STOP_IMM);
		while (!poll(c->scq, wc, 1))
			;
	}
}

static void lat_record(const struct opts *o, struct window *w, struct result *r,
		       uint64_t t0, uint64_t t1, double div)
{
	if (!w->open && t1 >= w->start)
		window_open(w, o, r, t1);
	else if (w->open && !w->closed) {
		if (r->nlat < o->max_iters)
			r->lat[r->nlat++] = (double)(t1 - t0) / div / 1000.0;
		r->ops++;
		r->bytes += 0;
		if (t1 >= w->end || r->nlat >= o->max_iters)
			window_close(w, o, r, t1);
	}
}

static void client_lat(struct ctx *c, const struct opts *o, uint32_t size, struct result *r)
{
	struct ibv_wc wc[CQ_BATCH];
	struct window w = { 0 };
	uint32_t unsignaled = 0;
	uint8_t seq = 1;

	w.start = now_ns() + o->warmup_ns;
	while (!w.closed) {
		uint64_t t0 = now_ns(), t1;

		switch (c->test) {
		case T_WRITE: {
			volatile uint8_t *in = last_byte(c, size);

			c->buf[c->bufsize + size - 1] = seq;
			if (++unsignaled >= c->depth / 2) {
				post_send1(c, 0, IBV_WR_RDMA_WRITE, size, true, 0);
				unsignaled = 0;
				while (!poll(c->scq, wc, 1))
					;
			} else {
				post_send1(c, 0, IBV_WR_RDMA_WRITE, size, false, 0);
			}
			wait_byte(in, seq, false);
			seq = next_seq(seq);
			t1 = now_ns();
			lat_record(o, &w, r, t0, t1, 2.0);
			break;
		}
		case T_SEND:
			if (++unsignaled >= c->depth / 2) {
				post_send1(c, 0, IBV_WR_SEND, size, true, 0);
				unsignaled = 0;
				while (!poll(c->scq, wc, 1))
					;
			} else {
				post_send1(c, 0, IBV_WR_SEND, size, false, 0);
			}
			while (!poll(c->rcq, wc, 1))
				;
			post_recv1(c, 0);
			t1 = now_ns();
			lat_record(o, &w, r, t0, t1, 2.0);
			break;
		case T_READ:
			post_send1(c, 0, IBV_WR_RDMA_READ, size, true, 0);
			while (!poll(c->scq, wc, 1))
				;
			t1 = now_ns();
			lat_record(o, &w, r, t0, t1, 1.0);
			break;
		case T_NOP:
			/* the cost of one data verb that finds nothing to do */
			if (poll(c->scq, wc, 1))
				die("a completion nobody asked for");
			t1 = now_ns();
			lat_record(o, &w, r, t0, t1, 1.0);
			break;
		default:
			die("no latency test for %s", test_name[c->test]);
		}
	}
	r->bytes = r->ops * size;
	/* tell the server's ping-pong loop to stop */
	if (c->test == T_WRITE) {
		c->buf[c->bufsize + size - 1] = SEQ_STOP;
		post_send1(c, 0, IBV_WR_RDMA_WRITE, size, true, 0);
		while (!poll(c->scq, wc, 1))
			;
		wait_byte(last_byte(c, size), SEQ_STOP, false);
	} else if (c->test == T_SEND) {
		post_send1(c, 0, IBV_WR_SEND_WITH_IMM, size, true, STOP_IMM);
		while (!poll(c->scq, wc, 1))
			;
		while (!poll(c->rcq, wc, 1))
			;
		post_recv1(c, 0);
	}
}

/* Nothing of a point may leak into the next: every completion a loop asks for
 * is taken by that loop.  Check it (a leak is a bug of this program). */
static void check_cqs_empty(struct ctx *c)
{
	struct ibv_wc wc[CQ_BATCH];

	if (poll(c->scq, wc, CQ_BATCH) || poll(c->rcq, wc, CQ_BATCH))
		die("a completion of the previous point was left over");
}

static void client_idle(const struct opts *o, struct result *r)
{
	struct window w = { 0 };
	struct timespec ts = { (time_t)(o->window_ns / 1000000000ull),
			       (long)(o->window_ns % 1000000000ull) };

	window_open(&w, o, r, now_ns());
	nanosleep(&ts, NULL);
	window_close(&w, o, r, now_ns());
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, uint64_t n, double p)
{
	uint64_t i;

	if (!n)
		return 0;
	i = (uint64_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static uint64_t late_ms;

static void print_point(const struct ctx *c, const struct opts *o, uint32_t size,
			struct result *r, const struct srv_stats *st)
{
	const char *dp = getenv("UNIRDMA_DATAPATH");
	double secs = (double)r->ns / 1e9;
	char cl[256], sl[256];

	printf("{\"bench\":\"urd_bench\",\"datapath\":\"%s\",\"test\":\"%s\",\"kind\":\"%s\","
	       "\"size\":%u,\"qps\":%u,\"depth\":%u,\"signal\":%u,\"inline\":%u,",
	       dp && !strcmp(dp, "forward") ? "forward" : "mapped", test_name[c->test],
	       c->test == T_IDLE ? "idle" : kind_name[c->kind], size, c->nqp_now, c->depth,
	       c->kind == K_LAT ? 1 : o->signal, c->inline_now);
	printf("\"secs\":%.6f,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"MBps\":%.3f,\"Mops\":%.6f",
	       secs, r->ops, r->bytes, secs > 0 ? (double)r->bytes / secs / 1e6 : 0.0,
	       secs > 0 ? (double)r->ops / secs / 1e6 : 0.0);
	if (c->kind == K_LAT && c->test != T_IDLE) {
		double sum = 0;

		qsort(r->lat, r->nlat, sizeof(double), cmp_double);
		for (uint64_t i = 0; i < r->nlat; i++)
			sum += r->lat[i];
		printf(",\"lat_def\":\"%s\",\"lat_us\":{\"n\":%" PRIu64 ",\"min\":%.3f,\"p50\":%.3f,"
		       "\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"avg\":%.3f}",
		       c->test == T_READ ? "post to completion" :
		       c->test == T_NOP ? "one empty poll_cq" : "round trip / 2", r->nlat,
		       r->nlat ? r->lat[0] : 0.0, pct(r->lat, r->nlat, 50), pct(r->lat, r->nlat, 90),
		       pct(r->lat, r->nlat, 99), pct(r->lat, r->nlat, 99.9),
		       r->nlat ? r->lat[r->nlat - 1] : 0.0, r->nlat ? sum / (double)r->nlat : 0.0);
	}
	printf(",\"cpu_cores\":{\"client\":%.4f,\"server\":%.4f",
	       r->ns ? (double)r->self_cpu_ns / (double)r->ns : 0.0,
	       st->wall_ns ? (double)st->cpu_ns / (double)st->wall_ns : 0.0);
	for (uint32_t i = 0; i < o->ncpu; i++)
		printf(",\"%s\":%.4f", o->cpu[i].name,
		       r->ns ? (double)r->ext_ns[i] / (double)r->ns : 0.0);
	printf("},\"client_cpus\":\"%s\"", cpulist(my_cpumask(), cl, sizeof(cl)));
	printf(",\"server_cpus\":\"%s\"", cpulist(st->cpumask, sl, sizeof(sl)));
	if (o->start_at_ms)
		printf(",\"start_late_ms\":%" PRIu64, late_ms);
	if (o->ntags) {
		printf(",\"tags\":{");
		for (uint32_t i = 0; i < o->ntags; i++) {
			char *eq = strchr(o->tags[i], '=');

			printf("%s\"%.*s\":\"%s\"", i ? "," : "", (int)(eq - o->tags[i]), o->tags[i],
			       eq + 1);
		}
		printf("}");
	}
	printf("}\n");
	fflush(stdout);
}

static int connect_retry(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	uint64_t deadline = now_ns() + 20000000000ull;
	int one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("cannot resolve %s:%s", host, port);
	for (;;) {
		int fd = socket(ai->ai_family, ai->ai_socktype, 0);

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			freeaddrinfo(ai);
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
		if (now_ns() > deadline)
			die("cannot connect to %s:%s: %s", host, port, strerror(errno));
		usleep(20000);
	}
}

static void run_client(struct opts *o)
{
	struct ctx c = { 0 };
	struct hello h = { MAGIC, VERSION, 0, 0, o->nqp, o->depth, o->rq_depth, o->inline_max, 0 };
	uint32_t maxsize = 64;
	struct result r = { 0 };

	for (uint32_t i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > maxsize)
			maxsize = o->sizes[i];
	h.bufsize = (maxsize + 4095) & ~4095u;
	for (uint32_t i = 0; i < o->ntests; i++)
		if (o->tests[i] == T_SEND)
			c.recv = true;
	h.flags = c.recv ? HELLO_RECV : 0;
	c.nqp = o->nqp;
	c.depth = o->depth;
	c.rq_depth = o->rq_depth;
	c.inline_max = o->inline_max;
	c.bufsize = h.bufsize;
	for (uint32_t i = 0; i < o->nkinds; i++) {
		if (o->kinds[i] == K_LAT && !r.lat) {
			r.lat = malloc(o->max_iters * sizeof(double));
			if (!r.lat)
				die("out of memory for %" PRIu64 " samples", o->max_iters);
		}
	}
	phase = "client: opening the device";
	open_dev(&c, o->dev);
	phase = "client: connecting to the server";
	c.sock = connect_retry(o->host, o->port);
	send_all(c.sock, &h, sizeof(h));
	phase = "client: creating QPs";
	setup(&c);
	phase = "client: exchanging QP numbers";
	exchange(&c, false);
	phase = "client: connecting QPs";
	connect_qps(&c);
	prepost(&c);
	phase = "client: waiting for the start time";
	if (o->start_at_ms) {
		struct timespec ts;
		int64_t wait_ms;

		clock_gettime(CLOCK_REALTIME, &ts);
		wait_ms = (int64_t)o->start_at_ms - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		if (wait_ms > 0)
			usleep((useconds_t)wait_ms * 1000);
		else
			late_ms = (uint64_t)-wait_ms;   /* set up too slowly: windows overlap less */
	}

	for (uint32_t ti = 0; ti < o->ntests; ti++) {
		for (uint32_t ki = 0; ki < o->nkinds; ki++) {
			/* nop is a latency, idle a single window: one kind each */
			if ((o->tests[ti] == T_NOP && o->kinds[ki] != K_LAT) ||
			    (o->tests[ti] == T_IDLE && ki))
				continue;
			c.test = o->tests[ti];
			c.kind = o->tests[ti] == T_IDLE ? K_BW : o->kinds[ki];
			c.inline_now = c.kind == K_LAT ? c.inline_max : 0;
			for (uint32_t qi = 0; qi < o->nqps; qi++)
			for (uint32_t i = 0; i < o->nsizes; i++) {
				uint32_t size = o->sizes[i];
				struct cmd cmd = { CMD_POINT, size, c.test, c.kind };
				struct srv_stats st;

				c.nqp_now = o->qps[qi];
				if ((c.test == T_NOP || c.test == T_IDLE) && i)
					break;          /* the size means nothing to them */
				memset(c.buf, 0, 2 * c.bufsize);
				check_cqs_empty(&c);
				phase = "client: waiting for the server to be ready";
				send_all(c.sock, &cmd, sizeof(cmd));
				recv_all(c.sock, &cmd, sizeof(cmd));    /* the server is ready */
				phase = c.kind == K_BW ? "client: bandwidth loop" : "client: latency loop";
				if (c.test == T_IDLE)
					client_idle(o, &r);
				else if (c.kind == K_BW)
					client_bw(&c, o, size, &r);
				else
					client_lat(&c, o, size, &r);
				cmd.op = CMD_END;
				phase = "client: waiting for the server's figures";
				send_all(c.sock, &cmd, sizeof(cmd));
				recv_all(c.sock, &st, sizeof(st));
				print_point(&c, o, size, &r, &st);
			}
		}
	}
	{
		struct cmd bye = { CMD_BYE, 0, 0, 0 };

		send_all(c.sock, &bye, sizeof(bye));
	}
	/* the server destroys its QPs after our BYE, we ours: no QP is left
	 * connected to a dead context */
	teardown(&c);
	close(c.sock);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: urd_bench server [-p PORT] [-d DEVICE]\n"
		"       urd_bench client HOST [-p PORT] [-d DEVICE] -t write,read,send,nop,idle -m bw,lat\n"
		"                 [-s SIZE,...] [-q QPS,...] [--depth N] [--signal N] [--rq-depth N]\n"
		"                 [--warmup-ms N] [--ms N] [--max-iters N] [--inline N]\n"
		"                 [--start-at UNIX_MS] [--cpu NAME=FD]... [--tag KEY=VALUE]...\n"
		"One JSON object per size on stdout (bench/README.md).\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "dev", required_argument, NULL, 'd' },
		{ "test", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "sizes", required_argument, NULL, 's' },
		{ "qps", required_argument, NULL, 'q' },
		{ "depth", required_argument, NULL, 'D' },
		{ "signal", required_argument, NULL, 'S' },
		{ "rq-depth", required_argument, NULL, 'R' },
		{ "warmup-ms", required_argument, NULL, 'w' },
		{ "ms", required_argument, NULL, 'T' },
		{ "max-iters", required_argument, NULL, 'n' },
		{ "inline", required_argument, NULL, 'I' },
		{ "start-at", required_argument, NULL, 'A' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "tag", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.port = "18600", .tests = { T_WRITE }, .ntests = 1, .kinds = { K_BW }, .nkinds = 1,
		.nqp = 1, .depth = 128,
		.signal = 16, .rq_depth = 0, .inline_max = 0,
		.warmup_ns = 100000000ull, .window_ns = 500000000ull, .max_iters = 1000000,
	};
	bool server, inline_set = false, lat = false;
	int c;

	if (argc < 2)
		usage();
	server = !strcmp(argv[1], "server");
	if (!server && strcmp(argv[1], "client"))
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "p:d:t:m:s:q:", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.port = optarg; break;
		case 'd': o.dev = optarg; break;
		case 't':
			o.ntests = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				enum test t;

				for (t = T_WRITE; t <= T_IDLE; t++)
					if (!strcmp(tok, test_name[t]))
						break;
				if (t > T_IDLE || o.ntests > T_IDLE)
					die("unknown test %s", tok);
				o.tests[o.ntests++] = t;
			}
			break;
		case 'm':
			o.nkinds = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (o.nkinds > K_LAT)
					die("too many modes");
				if (!strcmp(tok, "bw"))
					o.kinds[o.nkinds++] = K_BW;
				else if (!strcmp(tok, "lat"))
					o.kinds[o.nkinds++] = K_LAT;
				else
					die("unknown mode %s", tok);
			}
			break;
		case 's':
			o.nsizes = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (o.nsizes == MAX_SIZES)
					die("too many sizes");
				o.sizes[o.nsizes] = (uint32_t)num(tok, "size");
				if (!o.sizes[o.nsizes] || o.sizes[o.nsizes] > (512u << 20))
					die("size out of range: %s", tok);
				o.nsizes++;
			}
			break;
		case 'q':
			o.nqps = 0;
			o.nqp = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (o.nqps == 16)
					die("too many QP counts");
				o.qps[o.nqps] = (uint32_t)num(tok, "QP count");
				if (!o.qps[o.nqps] || o.qps[o.nqps] > MAX_QPS)
					die("QP count must be 1..%d", MAX_QPS);
				if (o.qps[o.nqps] > o.nqp)
					o.nqp = o.qps[o.nqps];
				o.nqps++;
			}
			break;
		case 'D': o.depth = (uint32_t)num(optarg, "depth"); break;
		case 'S': o.signal = (uint32_t)num(optarg, "signal interval"); break;
		case 'R': o.rq_depth = (uint32_t)num(optarg, "receive depth"); break;
		case 'w': o.warmup_ns = num(optarg, "warm-up") * 1000000ull; break;
		case 'T': o.window_ns = num(optarg, "duration") * 1000000ull; break;
		case 'n': o.max_iters = num(optarg, "iterations"); break;
		case 'I': o.inline_max = (uint32_t)num(optarg, "inline size"); inline_set = true; break;
		case 'A': o.start_at_ms = num(optarg, "start time"); break;
		case 'c': {
			char *eq = strchr(optarg, '=');

			if (!eq || o.ncpu == MAX_CPU || eq - optarg >= (long)sizeof(o.cpu[0].name))
				die("bad --cpu %s", optarg);
			snprintf(o.cpu[o.ncpu].name, sizeof(o.cpu[0].name), "%.*s",
				 (int)(eq - optarg), optarg);
			o.cpu[o.ncpu].fd = (int)num(eq + 1, "file descriptor");
			o.ncpu++;
			break;
		}
		case 'g':
			if (!strchr(optarg, '=') || o.ntags == MAX_TAGS)
				die("bad --tag %s", optarg);
			o.tags[o.ntags++] = optarg;
			break;
		default:
			usage();
		}
	}
	signal(SIGTERM, on_term);
	if (server) {
		if (optind != argc)
			usage();
		run_server(o.port, o.dev);
		return 0;
	}
	if (optind != argc - 1)
		usage();
	o.host = argv[optind];
	for (uint32_t i = 0; i < o.nkinds; i++)
		lat |= o.kinds[i] == K_LAT;
	for (uint32_t i = 0; i < o.ntests; i++)
		lat |= o.tests[i] == T_NOP;
	if (!o.nsizes) {
		o.sizes[0] = o.nkinds == 1 && o.kinds[0] == K_LAT ? 2 : 65536;
		o.nsizes = 1;
	}
	if (!o.nqps) {
		o.qps[0] = o.nqp;
		o.nqps = 1;
	}
	if (!o.nqp || o.nqp > MAX_QPS || (lat && o.nqp != 1))
		die("QP count must be 1..%d (1 for latency)", MAX_QPS);
	if (!inline_set)
		o.inline_max = 220;     /* perftest's default for latency tests; bandwidth uses none */
	if (!o.signal || !o.depth || o.depth % o.signal || o.depth > 16384)
		die("the depth must be a multiple of the signal interval, at most 16384");
	if (!o.rq_depth)
		o.rq_depth = 512;
	if (!o.max_iters)
		die("--max-iters must be positive");
	run_client(&o);
	return 0;
}

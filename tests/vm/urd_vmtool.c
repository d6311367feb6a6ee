/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* urd_vmtool: the VM tests' own program (tests/integration/vm.sh).  It runs
 * in a guest, in a container or on the host, against unirdma's libibverbs.
 *
 *   urd_vmtool opcodes [-p PORT] [-d DEV]          server: waits for a peer on TCP PORT
 *   urd_vmtool opcodes [-p PORT] [-d DEV] HOST     client
 *       Every RC opcode in both directions between the two processes, with
 *       the data checked on both sides: SEND, SEND_WITH_IMM, RDMA_WRITE
 *       (1 MiB, many pages), RDMA_WRITE_WITH_IMM, RDMA_READ (512 KiB),
 *       ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, a two-SGE SEND and an
 *       inline SEND; then UD SENDs both ways.  Buffers start at odd
 *       addresses so that MRs begin and end inside pages.  Exit 0 when every
 *       check passed.
 *   urd_vmtool uc [-p PORT] [-d DEV] [HOST]
 *       The same over a UC QP, without the READ and the atomics.
 *   urd_vmtool mw [-p PORT] [-d DEV] [HOST]
 *       Memory windows over the RC QP, each side in turn owning one (the
 *       server first): the owner binds a type 2 window (IBV_WR_BIND_MW,
 *       64 KiB of its MR, remote read and write); the peer RDMA WRITEs
 *       16 KiB and READs 4 KiB through its key, then invalidates it with a
 *       SEND_WITH_INV, whose RECV must say so (IBV_WC_WITH_INV,
 *       invalidated_rkey); the owner binds the same window again with the
 *       next key, the peer WRITEs through it, the owner LOCAL_INVs it.  The
 *       data and the bytes around the window are checked.  Last, the
 *       server's WRITE through the client's invalidated key must fail with
 *       IBV_WC_REM_ACCESS_ERR (both QPs go to the error state).
 *   urd_vmtool mcast [-p PORT] [-d DEV] [HOST]
 *       UD multicast over the UD QP (Q_Key 0x11111111): both sides join the
 *       group ::ffff:239.1.2.3 (ibv_attach_mcast) and post 8 RECVs; the
 *       server sends 3 SENDs to (group, QPN 0xffffff), then the client 3.
 *       Every member gets every SEND, the sender's own QP too (no loopback
 *       blocking, as t_mcast): each side checks all 6 RECVs, in order:
 *       success, IBV_WC_GRH, 40 + 500 bytes, the payload (a distinct
 *       pattern each), src_qp the sender's UD QP, the GRH's IPv4 header
 *       from the sender's address to the group.  Then the client leaves
 *       (ibv_detach_mcast: 0, again: EINVAL) and the server sends once more:
 *       the server, still a member, gets its own copy; the client nothing
 *       within 300 ms.  Last, the server leaves too.
 *   urd_vmtool hold [-p PORT] [-d DEV] [HOST]
 *       Connects an RC QP like `opcodes`, says "URD-HOLDING", then keeps
 *       posting SENDs (one every 10 ms, each acknowledged by the peer's
 *       RECV) until its QP fails; exits 0 when a completion came back in
 *       error (the peer died or was released), 1 otherwise.
 *   urd_vmtool scribble [SECONDS] [SEED]   (guest, root)
 *       Writes random bytes all over every ivshmem BAR of the guest (header,
 *       mailboxes, doorbells, rings) and rings random doorbells and mailbox
 *       sequence numbers, for SECONDS (default 3).
 *   urd_vmtool bigmr [MIB]   (guest, root)
 *       Touches a buffer of MIB MiB (default 32) from its last page to its
 *       first, so that its guest frames do not form runs, registers it (more
 *       segments than one REG_MR message carries: the segment table goes to
 *       the daemon through guest RAM), then RDMA WRITEs and READs through it
 *       between two QPs of this process, 64 KiB at a time at odd offsets
 *       all over it, checking every byte.  A writable MR of read-only
 *       pages must fail with EFAULT.
 *   urd_vmtool badmr   (guest, root)
 *       Speaks the mailbox protocol on the BAR itself (abi.h): claims a slot,
 *       opens a context, allocates a PD and asks REG_MR for segments that are
 *       not guest RAM (the PCI hole, past the end of RAM, wrapping around,
 *       zero length) and for the MEM_ALLOC of a container; every one must be
 *       refused.  A segment of its own pinned page must be accepted.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "unirdma/abi.h"

#define KIB 1024ul
#define MIB (1024ul * 1024)

/* Layout of each side's buffer (offsets from buf, which starts 100 bytes
 * into a page so that the MR begins and ends inside pages). */
#define OFF_SEND    0ul                    /* 64 KiB: SEND sources */
#define OFF_RECV    (64 * KIB)             /* 6 RECV slots of 16 KiB */
#define RECV_SLOT   (16 * KIB)
#define OFF_WRITE   (192 * KIB)            /* 1 MiB: the peer writes here */
#define OFF_WSRC    (OFF_WRITE + MIB)      /* 1 MiB: our RDMA WRITE source */
#define OFF_READSRC (OFF_WSRC + MIB)       /* 512 KiB: the peer reads this */
#define OFF_READDST (OFF_READSRC + 512 * KIB) /* 512 KiB: our RDMA READ lands here */
#define OFF_ATOMIC  (OFF_READDST + 512 * KIB + 4) /* 8-byte word the peer works on (buf + 100 + 4: 8-aligned) */
#define OFF_ARES    (OFF_ATOMIC + 64)       /* 2 x 8 bytes: our atomic results */
#define BUF_LEN     (OFF_ARES + 64)
#define WRITE_LEN   MIB
#define READ_LEN    (512 * KIB)
#define WIMM_LEN    (8 * KIB)
#define SEND_LEN    4000
#define NRECV       6
#define UD_LEN      1000

static int failures;
static const char *me = "urd_vmtool";
static bool uc_mode;                    /* mode uc: the connected QP is UC (no READ, no atomics) */
static bool mw_mode;                    /* mode mw: the MR allows memory windows */

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", me);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: %s: ", me, ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (!ok)
		failures++;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: FAIL: ", me);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	exit(1);
}

static uint8_t pat(uint32_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)(x >> 29 ^ x >> 47);
}

static void fill(uint8_t *p, uint64_t n, uint32_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

static bool same(const uint8_t *p, uint64_t n, uint32_t seed, uint64_t *bad)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != pat(seed, i)) {
			*bad = i;
			return false;
		}
	return true;
}

/* ------------------------------------------------------------- TCP */

static int tcp_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char ps[16];
	int fd = -1, one = 1;

	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &ai))
		die("cannot resolve %s", host);
	for (int tries = 0; tries < 100; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		die("cannot connect to %s:%d", host, port);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tcp_accept(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd, one = 1;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
		die("cannot listen on port %d: %s", port, strerror(errno));
	say("listening on TCP port %d", port);
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void xfer(int fd, void *p, size_t n, bool out)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = out ? write(fd, (char *)p + done, n - done) : read(fd, (char *)p + done, n - done);

		if (r <= 0)
			die("the TCP connection to the peer broke (%s)", r < 0 ? strerror(errno) : "closed");
		done += (size_t)r;
	}
}

/* A one-word rendezvous: both sides send tag and expect the peer's to match. */
static void sync_peer(int fd, uint32_t tag)
{
	uint32_t got;

	xfer(fd, &tag, sizeof(tag), true);
	xfer(fd, &got, sizeof(got), false);
	if (got != tag)
		die("out of step with the peer (tag %#x, got %#x)", tag, got);
}

/* --------------------------------------------------------- verbs */

struct peer_info {
	uint32_t qpn, ud_qpn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *ud;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *mem, *buf;
	union ibv_gid gid;
	struct peer_info peer;
};

static struct ibv_context *open_dev(const char *name)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *c = NULL;

	if (!l || !n)
		die("no RDMA device");
	for (int i = 0; i < n; i++) {
		if (name && strcmp(ibv_get_device_name(l[i]), name))
			continue;
		say("device %s", ibv_get_device_name(l[i]));
		c = ibv_open_device(l[i]);
		break;
	}
	ibv_free_device_list(l);
	if (!c)
		die("cannot open device %s: %s", name ? name : "(first)", strerror(errno));
	return c;
}

static void wait_wc(struct side *s, struct ibv_wc *wc, int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n < 0)
			die("poll_cq failed");
		if (n)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			die("no completion within %d ms", timeout_ms);
		usleep(50);
	}
}

static void setup(struct side *s, const char *dev)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	size_t len = BUF_LEN + 100 + 4096;

	s->ctx = open_dev(dev);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		die("alloc_pd/create_cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = s->cq;
	if (uc_mode)
		ia.qp_type = IBV_QPT_UC;
	s->qp = ibv_create_qp(s->pd, &ia);
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	s->ud = ibv_create_qp(s->pd, &ia);
	if (!s->qp || !s->ud)
		die("create_qp: %s", strerror(errno));
	s->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED)
		die("mmap");
	s->buf = s->mem + 100;
	memset(s->buf, 0, BUF_LEN);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			   (mw_mode ? IBV_ACCESS_MW_BIND : 0));
	if (!s->mr)
		die("reg_mr of %lu bytes: %s", (unsigned long)BUF_LEN, strerror(errno));
	say("registered %lu bytes at %p: lkey %#x rkey %#x", (unsigned long)BUF_LEN, (void *)s->buf,
	    s->mr->lkey, s->mr->rkey);
	if (ibv_query_gid(s->ctx, 1, 0, &s->gid))
		die("query_gid");
}

static void connect_qps(struct side *s, int fd)
{
	struct peer_info mine = { .qpn = s->qp->qp_num, .ud_qpn = s->ud->qp_num, .rkey = s->mr->rkey,
				  .addr = (uintptr_t)s->buf };
	struct ibv_qp_attr a;
	struct ibv_ah_attr aha;

	memcpy(mine.gid, s->gid.raw, 16);
	xfer(fd, &mine, sizeof(mine), true);
	xfer(fd, &s->peer, sizeof(s->peer), false);

	memset(&aha, 0, sizeof(aha));
	aha.is_global = 1;
	aha.port_num = 1;
	aha.grh.hop_limit = 1;
	aha.grh.sgid_index = 0;
	memcpy(aha.grh.dgid.raw, s->peer.gid, 16);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("RC to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = s->peer.qpn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr = aha;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | (uc_mode ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		die("RC to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  (uc_mode ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC)))
		die("RC to RTS");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(s->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
	s->ah = ibv_create_ah(s->pd, &aha);
	if (!s->ah)
		die("create_ah");
}

static void post_recv(struct side *s, struct ibv_qp *qp, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + OFF_RECV + slot * RECV_SLOT), RECV_SLOT, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1000 + slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("post_recv");
}

static void post_send(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(wr->opcode == IBV_WR_SEND && wr->wr.ud.ah ? s->ud : s->qp, wr, &bad))
		die("post_send opcode %d: %s", wr->opcode, strerror(errno));
}

static void expect_wc(struct side *s, uint64_t wr_id, enum ibv_wc_opcode op, const char *what,
		      struct ibv_wc *out)
{
	struct ibv_wc wc;

	wait_wc(s, &wc, 20000);
	check(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == op,
	      "%s completes (status %s, wr_id %llu, opcode %d)", what, ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, wc.opcode);
	if (wc.status != IBV_WC_SUCCESS)
		die("a completion in error ends the test");
	if (out)
		*out = wc;
}

/* One direction: the requester acts on the responder. seed: the requester's
 * pattern seed; pseed: the responder's. */
static void requester(struct side *s, int fd, uint32_t seed, uint32_t pseed)
{
	struct ibv_sge sge, sg2[2];
	struct ibv_send_wr wr;
	uint64_t *ares = (uint64_t *)(s->buf + OFF_ARES), bad;
	uint8_t inl[48];

	fill(s->buf + OFF_SEND, 64 * KIB, seed);
	fill(s->buf + OFF_WSRC, WRITE_LEN, seed + 1);
	memset(s->buf + OFF_READDST, 0, READ_LEN);
	sync_peer(fd, 0x100 + seed);            /* the responder's RECVs are posted */

#define WR(id, opc) do { memset(&wr, 0, sizeof(wr)); wr.wr_id = (id); wr.opcode = (opc); \
		wr.sg_list = &sge; wr.num_sge = 1; } while (0)
	WR(1, IBV_WR_SEND);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND), SEND_LEN, s->mr->lkey };
	post_send(s, &wr);
	expect_wc(s, 1, IBV_WC_SEND, "SEND", NULL);

	WR(2, IBV_WR_SEND_WITH_IMM);
	wr.imm_data = htonl(0x12340000 + seed);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND + 1), 777, s->mr->lkey };
	post_send(s, &wr);
	expect_wc(s, 2, IBV_WC_SEND, "SEND_WITH_IMM", NULL);

	WR(3, IBV_WR_RDMA_WRITE);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_WSRC), WRITE_LEN, s->mr->lkey };
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE;
	wr.wr.rdma.rkey = s->peer.rkey;
	post_send(s, &wr);
	expect_wc(s, 3, IBV_WC_RDMA_WRITE, "RDMA_WRITE of 1 MiB", NULL);

	WR(4, IBV_WR_RDMA_WRITE_WITH_IMM);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND + 4096 - 5), WIMM_LEN, s->mr->lkey };
	wr.imm_data = htonl(0x56780000 + seed);
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_WRITE + WRITE_LEN - WIMM_LEN;
	wr.wr.rdma.rkey = s->peer.rkey;
	post_send(s, &wr);
	expect_wc(s, 4, IBV_WC_RDMA_WRITE, "RDMA_WRITE_WITH_IMM", NULL);

	if (uc_mode)
		goto no_read;           /* UC: SEND and WRITE only */
	WR(5, IBV_WR_RDMA_READ);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_READDST), READ_LEN, s->mr->lkey };
	wr.wr.rdma.remote_addr = s->peer.addr + OFF_READSRC;
	wr.wr.rdma.rkey = s->peer.rkey;
	post_send(s, &wr);
	expect_wc(s, 5, IBV_WC_RDMA_READ, "RDMA_READ of 512 KiB", NULL);
	{
		bool ok = same(s->buf + OFF_READDST, READ_LEN, pseed + 2, &bad);

		check(ok, "RDMA_READ brought the responder's %lu bytes%s", (unsigned long)READ_LEN,
		      ok ? "" : " (they differ)");
		if (!ok)
			say("first difference at byte %llu", (unsigned long long)bad);
	}

	WR(6, IBV_WR_ATOMIC_CMP_AND_SWP);
	sge = (struct ibv_sge){ (uintptr_t)&ares[0], 8, s->mr->lkey };
	wr.wr.atomic.remote_addr = s->peer.addr + OFF_ATOMIC;
	wr.wr.atomic.rkey = s->peer.rkey;
	wr.wr.atomic.compare_add = 1000 + pseed;
	wr.wr.atomic.swap = 5000 + seed;
	post_send(s, &wr);
	expect_wc(s, 6, IBV_WC_COMP_SWAP, "ATOMIC_CMP_AND_SWP", NULL);
	check(ares[0] == 1000 + pseed, "CMP_AND_SWP returned the old value (%llu)", (unsigned long long)ares[0]);

	WR(7, IBV_WR_ATOMIC_FETCH_AND_ADD);
	sge = (struct ibv_sge){ (uintptr_t)&ares[1], 8, s->mr->lkey };
	wr.wr.atomic.remote_addr = s->peer.addr + OFF_ATOMIC;
	wr.wr.atomic.rkey = s->peer.rkey;
	wr.wr.atomic.compare_add = 7;
	post_send(s, &wr);
	expect_wc(s, 7, IBV_WC_FETCH_ADD, "ATOMIC_FETCH_AND_ADD", NULL);
	check(ares[1] == 5000 + seed, "FETCH_AND_ADD returned the swapped value (%llu)", (unsigned long long)ares[1]);
no_read:

	/* two SGEs from two places, then inline data */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.opcode = IBV_WR_SEND;
	sg2[0] = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND), 3000, s->mr->lkey };
	sg2[1] = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND + 3000), 5000, s->mr->lkey };
	wr.sg_list = sg2;
	wr.num_sge = 2;
	post_send(s, &wr);
	expect_wc(s, 8, IBV_WC_SEND, "SEND with two SGEs", NULL);

	for (unsigned i = 0; i < sizeof(inl); i++)
		inl[i] = pat(seed + 3, i);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	sge = (struct ibv_sge){ (uintptr_t)inl, sizeof(inl), 0 };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	post_send(s, &wr);
	memset(inl, 0, sizeof(inl));            /* inline: the data went with the WR */
	expect_wc(s, 9, IBV_WC_SEND, "inline SEND", NULL);

	/* UD */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 10;
	wr.opcode = IBV_WR_SEND;
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND + 9), UD_LEN, s->mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = s->peer.ud_qpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	post_send(s, &wr);
	expect_wc(s, 10, IBV_WC_SEND, "UD SEND", NULL);
#undef WR
	sync_peer(fd, 0x200 + seed);            /* everything is in: check */
	sync_peer(fd, 0x300 + seed);            /* checked */
}

static void responder(struct side *s, int fd, uint32_t seed, uint32_t pseed)
{
	uint64_t *word = (uint64_t *)(s->buf + OFF_ATOMIC), bad = 0;
	struct ibv_wc wc;
	uint8_t inl[48];

	memset(s->buf + OFF_WRITE, 0, WRITE_LEN);
	memset(s->buf + OFF_RECV, 0, NRECV * RECV_SLOT);
	fill(s->buf + OFF_READSRC, READ_LEN, seed + 2);
	*word = 1000 + seed;
	for (uint32_t i = 0; i < NRECV - 1; i++)
		post_recv(s, s->qp, i);
	post_recv(s, s->ud, NRECV - 1);
	sync_peer(fd, 0x100 + pseed);

	expect_wc(s, 1000, IBV_WC_RECV, "RECV of a SEND", &wc);
	check(wc.byte_len == SEND_LEN && same(s->buf + OFF_RECV, SEND_LEN, pseed, &bad),
	      "SEND: %u bytes, as sent", wc.byte_len);
	expect_wc(s, 1001, IBV_WC_RECV, "RECV of a SEND_WITH_IMM", &wc);
	check(wc.byte_len == 777 && (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x12340000 + pseed,
	      "SEND_WITH_IMM: %u bytes, immediate %#x", wc.byte_len, ntohl(wc.imm_data));
	{
		bool ok = true;

		for (unsigned i = 0; i < 777; i++)
			ok &= s->buf[OFF_RECV + RECV_SLOT + i] == pat(pseed, i + 1);
		check(ok, "SEND_WITH_IMM: payload as sent");
	}
	expect_wc(s, 1002, IBV_WC_RECV_RDMA_WITH_IMM, "RECV of an RDMA_WRITE_WITH_IMM", &wc);
	check((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0x56780000 + pseed,
	      "RDMA_WRITE_WITH_IMM: immediate %#x", ntohl(wc.imm_data));
	expect_wc(s, 1003, IBV_WC_RECV, "RECV of a two-SGE SEND", &wc);
	check(wc.byte_len == 8000 && same(s->buf + OFF_RECV + 3 * RECV_SLOT, 8000, pseed, &bad),
	      "two-SGE SEND: %u bytes, in order", wc.byte_len);
	expect_wc(s, 1004, IBV_WC_RECV, "RECV of an inline SEND", &wc);
	for (unsigned i = 0; i < sizeof(inl); i++)
		inl[i] = pat(pseed + 3, i);
	check(wc.byte_len == sizeof(inl) && !memcmp(s->buf + OFF_RECV + 4 * RECV_SLOT, inl, sizeof(inl)),
	      "inline SEND: %u bytes, as sent", wc.byte_len);
	expect_wc(s, 1005, IBV_WC_RECV, "RECV on the UD QP", &wc);
	{
		bool ok = wc.byte_len == UD_LEN + 40 && (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == s->peer.ud_qpn;

		for (unsigned i = 0; ok && i < UD_LEN; i++)
			ok = s->buf[OFF_RECV + 5 * RECV_SLOT + 40 + i] == pat(pseed, i + 9);
		check(ok, "UD SEND: %u bytes (40 of GRH), from QP %#x, payload as sent", wc.byte_len, wc.src_qp);
	}
	sync_peer(fd, 0x200 + pseed);
	{
		uint8_t *w = s->buf + OFF_WRITE;
		bool ok = same(w, WRITE_LEN - WIMM_LEN, pseed + 1, &bad);

		check(ok, "RDMA_WRITE: 1 MiB landed in place");
		if (!ok)
			say("first difference at byte %llu", (unsigned long long)bad);
		ok = true;
		for (unsigned i = 0; i < WIMM_LEN; i++)
			ok &= w[WRITE_LEN - WIMM_LEN + i] == pat(pseed, 4096 - 5 + i);
		check(ok, "RDMA_WRITE_WITH_IMM: payload in place");
	}
	if (!uc_mode)
		check(*word == 5000 + pseed + 7, "the atomic word is swap + add (%llu)", (unsigned long long)*word);
	sync_peer(fd, 0x300 + pseed);
}

static int run_opcodes(const char *host, int port, const char *dev)
{
	struct side s;
	int fd;
	uint32_t seed = host ? 2 : 1, pseed = host ? 1 : 2;

	memset(&s, 0, sizeof(s));
	setup(&s, dev);
	fd = host ? tcp_connect(host, port) : tcp_accept(port);
	connect_qps(&s, fd);
	say("connected: RC QP %#x -> %#x, UD QP %#x -> %#x", s.qp->qp_num, s.peer.qpn, s.ud->qp_num,
	    s.peer.ud_qpn);
	/* the server acts first, then the client */
	if (!host) {
		requester(&s, fd, seed, pseed);
		responder(&s, fd, seed, pseed);
	} else {
		responder(&s, fd, seed, pseed);
		requester(&s, fd, seed, pseed);
	}
	{
		int theirs, mine = failures;

		xfer(fd, &mine, sizeof(mine), true);
		xfer(fd, &theirs, sizeof(theirs), false);
		say("%d failed checks here, %d at the peer", mine, theirs);
		failures += theirs;
	}
	close(fd);
	ibv_destroy_ah(s.ah);
	ibv_destroy_qp(s.qp);
	ibv_destroy_qp(s.ud);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	say("%s", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------- mw */

/* Mode mw: a type 2 memory window in the owner's MR, used by its peer. */
#define WIN_OFF     (OFF_WRITE + 4096)      /* the window: 64 KiB inside the 1 MiB the peer writes */
#define WIN_LEN     (64 * KIB)
#define WIN_WOFF    100ul                   /* the peer's 16 KiB WRITE lands here in the window */
#define WIN_WLEN    (16 * KIB)
#define WIN_ROFF    (32 * KIB)              /* 4 KiB of pattern the peer READs */
#define WIN_RLEN    (4 * KIB)
#define WIN_W2OFF   (WIN_LEN - 4 * KIB)     /* the WRITE through the rebound window: its last 4 KiB */
#define WIN_W2LEN   (4 * KIB)
#define WIN_W3OFF   (8 * KIB)               /* the WRITE through the invalidated key (refused) */
#define INV_LEN     100

struct mw_info {
	uint32_t rkey, pad;
	uint64_t addr;
};

/* BIND_MW of the window on the RC QP with key rkey: [buf + WIN_OFF, + WIN_LEN),
 * remote read and write. */
static void mw_bind2(struct side *s, struct ibv_mw *mw, uint32_t rkey, uint64_t id)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = s->mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)(s->buf + WIN_OFF);
	wr.bind_mw.bind_info.length = WIN_LEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	post_send(s, &wr);
	expect_wc(s, id, IBV_WC_BIND_MW, "BIND_MW of a type 2 window", NULL);
	mw->rkey = rkey;                        /* the consumer keeps the key (ibv_post_send(3)) */
}

/* The bytes [from, to) of the region around the window are all zero. */
static bool zero(const uint8_t *p, uint64_t from, uint64_t to, uint64_t *bad)
{
	for (uint64_t i = from; i < to; i++)
		if (p[i]) {
			*bad = i;
			return false;
		}
	return true;
}

/* The owner's turn: it binds a window, the peer uses it and invalidates it
 * with a SEND_WITH_INV; the owner binds it again, the peer writes through
 * it, the owner invalidates it locally.  last: then the peer's WRITE through
 * the dead key is refused (both QPs go to the error state). */
static void mw_owner(struct side *s, int fd, uint32_t seed, uint32_t pseed, bool last)
{
	uint8_t *win = s->buf + WIN_OFF, *around = s->buf + OFF_WRITE;
	const uint64_t alen = WIN_LEN + 8192;   /* the window and 4 KiB either side */
	struct mw_info info;
	struct ibv_send_wr wr;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey, key0;
	uint64_t bad = 0;
	bool ok;

	mw = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
	if (!mw)
		die("ibv_alloc_mw(IBV_MW_TYPE_2): %s", strerror(errno));
	check(mw->type == IBV_MW_TYPE_2 && mw->pd == s->pd && mw->rkey, "a type 2 window allocated (rkey %#x)",
	      mw->rkey);
	key0 = mw->rkey;
	memset(around, 0, alen);
	fill(win + WIN_ROFF, WIN_RLEN, seed + 10);
	rkey = ibv_inc_rkey(mw->rkey);
	mw_bind2(s, mw, rkey, 21);
	check(rkey >> 8 == key0 >> 8 && rkey != key0, "the bind changed the key byte only (%#x -> %#x)", key0, rkey);
	memset(s->buf + OFF_RECV, 0, RECV_SLOT);
	post_recv(s, s->qp, 0);
	info = (struct mw_info){ .rkey = rkey, .addr = (uintptr_t)win };
	xfer(fd, &info, sizeof(info), true);

	/* the peer WRITEs, READs, then SEND_WITH_INV */
	expect_wc(s, 1000, IBV_WC_RECV, "RECV of a SEND_WITH_INV", &wc);
	check((wc.wc_flags & IBV_WC_WITH_INV) && !(wc.wc_flags & IBV_WC_WITH_IMM) && wc.invalidated_rkey == rkey,
	      "the RECV says the window's key %#x was invalidated (flags %#x, invalidated_rkey %#x)", rkey,
	      wc.wc_flags, wc.invalidated_rkey);
	check(wc.byte_len == INV_LEN && same(s->buf + OFF_RECV, INV_LEN, pseed + 12, &bad),
	      "SEND_WITH_INV: %u bytes, as sent", wc.byte_len);
	ok = same(win + WIN_WOFF, WIN_WLEN, pseed + 11, &bad);
	check(ok, "the peer's 16 KiB WRITE through the window landed at window offset %lu", WIN_WOFF);
	if (!ok)
		say("first difference at byte %llu", (unsigned long long)bad);
	ok = zero(around, 0, 4096 + WIN_WOFF, &bad) &&
	     zero(around, 4096 + WIN_WOFF + WIN_WLEN, 4096 + WIN_ROFF, &bad) &&
	     zero(around, 4096 + WIN_ROFF + WIN_RLEN, alen, &bad);
	check(ok, "nothing else changed around it");
	if (!ok)
		say("byte %llu of the region around the window changed", (unsigned long long)bad);
	ok = same(win + WIN_ROFF, WIN_RLEN, seed + 10, &bad);
	check(ok, "the pattern the peer READ is intact");

	/* free again after the remote invalidation: the same window binds again */
	memset(around, 0, alen);
	rkey = ibv_inc_rkey(rkey);
	mw_bind2(s, mw, rkey, 22);
	info = (struct mw_info){ .rkey = rkey, .addr = (uintptr_t)win };
	xfer(fd, &info, sizeof(info), true);
	sync_peer(fd, 0x510 + seed);            /* the peer's WRITE through the new key is done */
	ok = same(win + WIN_W2OFF, WIN_W2LEN, pseed + 13, &bad);
	check(ok, "the peer's 4 KiB WRITE through the rebound window (key %#x) landed at its end", rkey);
	ok = zero(around, 0, 4096 + WIN_W2OFF, &bad) && zero(around, 4096 + WIN_LEN, alen, &bad);
	check(ok, "nothing else changed around it");
	if (!ok)
		say("byte %llu of the region around the window changed", (unsigned long long)bad);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 23;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = rkey;
	post_send(s, &wr);
	expect_wc(s, 23, IBV_WC_LOCAL_INV, "LOCAL_INV of the window's key", NULL);
	if (last) {
		/* the peer's WRITE through the invalidated key is refused; our
		 * QP goes to the error state with it: nothing more on it */
		sync_peer(fd, 0x520 + seed);
		sync_peer(fd, 0x530 + seed);
		ok = zero(around, 0, 4096 + WIN_W2OFF, &bad);
		check(ok, "the refused WRITE through the invalidated key changed nothing");
		if (!ok)
			say("byte %llu of the region around the window changed", (unsigned long long)bad);
	}
	check(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
	sync_peer(fd, 0x540 + seed);
}

/* The peer's turn: it uses the owner's window. */
static void mw_peer(struct side *s, int fd, uint32_t seed, uint32_t pseed, bool last)
{
	struct mw_info info;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t bad = 0;
	bool ok;

	fill(s->buf + OFF_WSRC, WIN_WLEN, seed + 11);
	fill(s->buf + OFF_SEND, INV_LEN, seed + 12);
	fill(s->buf + OFF_WSRC + WIN_WLEN, WIN_W2LEN, seed + 13);
	memset(s->buf + OFF_READDST, 0, WIN_RLEN);
	xfer(fd, &info, sizeof(info), false);
	say("the peer's window: rkey %#x at %#llx", info.rkey, (unsigned long long)info.addr);

#define WR(id, opc) do { memset(&wr, 0, sizeof(wr)); wr.wr_id = (id); wr.opcode = (opc); \
		wr.sg_list = &sge; wr.num_sge = 1; } while (0)
	WR(31, IBV_WR_RDMA_WRITE);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_WSRC), WIN_WLEN, s->mr->lkey };
	wr.wr.rdma.remote_addr = info.addr + WIN_WOFF;
	wr.wr.rdma.rkey = info.rkey;
	post_send(s, &wr);
	expect_wc(s, 31, IBV_WC_RDMA_WRITE, "RDMA_WRITE of 16 KiB through the window", NULL);

	WR(32, IBV_WR_RDMA_READ);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_READDST), WIN_RLEN, s->mr->lkey };
	wr.wr.rdma.remote_addr = info.addr + WIN_ROFF;
	wr.wr.rdma.rkey = info.rkey;
	post_send(s, &wr);
	expect_wc(s, 32, IBV_WC_RDMA_READ, "RDMA_READ of 4 KiB through the window", NULL);
	ok = same(s->buf + OFF_READDST, WIN_RLEN, pseed + 10, &bad);
	check(ok, "RDMA_READ brought the window's pattern");
	if (!ok)
		say("first difference at byte %llu", (unsigned long long)bad);

	WR(33, IBV_WR_SEND_WITH_INV);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_SEND), INV_LEN, s->mr->lkey };
	wr.invalidate_rkey = info.rkey;
	post_send(s, &wr);
	expect_wc(s, 33, IBV_WC_SEND, "SEND_WITH_INV of the window's key", NULL);

	/* the owner binds the window again */
	xfer(fd, &info, sizeof(info), false);
	say("the window again: rkey %#x", info.rkey);
	WR(34, IBV_WR_RDMA_WRITE);
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_WSRC + WIN_WLEN), WIN_W2LEN, s->mr->lkey };
	wr.wr.rdma.remote_addr = info.addr + WIN_W2OFF;
	wr.wr.rdma.rkey = info.rkey;
	post_send(s, &wr);
	expect_wc(s, 34, IBV_WC_RDMA_WRITE, "RDMA_WRITE of 4 KiB through the rebound window", NULL);
	sync_peer(fd, 0x510 + pseed);

	if (last) {
		sync_peer(fd, 0x520 + pseed);   /* the owner invalidated the key */
		WR(35, IBV_WR_RDMA_WRITE);
		sge = (struct ibv_sge){ (uintptr_t)(s->buf + OFF_WSRC), WIN_W2LEN, s->mr->lkey };
		wr.wr.rdma.remote_addr = info.addr + WIN_W3OFF;
		wr.wr.rdma.rkey = info.rkey;
		post_send(s, &wr);
		wait_wc(s, &wc, 20000);
		check(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 35,
		      "RDMA_WRITE through the invalidated key %#x is refused (status %s, wr_id %llu)", info.rkey,
		      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
		sync_peer(fd, 0x530 + pseed);
	}
#undef WR
	sync_peer(fd, 0x540 + pseed);
}

static int run_mw(const char *host, int port, const char *dev)
{
	struct side s;
	int fd;
	uint32_t seed = host ? 2 : 1, pseed = host ? 1 : 2;

	memset(&s, 0, sizeof(s));
	setup(&s, dev);
	fd = host ? tcp_connect(host, port) : tcp_accept(port);
	connect_qps(&s, fd);
	say("connected: RC QP %#x -> %#x", s.qp->qp_num, s.peer.qpn);
	/* the server owns a window first, then the client; the refused WRITE
	 * at the very end breaks both QPs */
	if (!host) {
		mw_owner(&s, fd, seed, pseed, false);
		mw_peer(&s, fd, seed, pseed, true);
	} else {
		mw_peer(&s, fd, seed, pseed, false);
		mw_owner(&s, fd, seed, pseed, true);
	}
	{
		int theirs, mine = failures;

		xfer(fd, &mine, sizeof(mine), true);
		xfer(fd, &theirs, sizeof(theirs), false);
		say("%d failed checks here, %d at the peer", mine, theirs);
		failures += theirs;
	}
	close(fd);
	ibv_destroy_ah(s.ah);
	ibv_destroy_qp(s.qp);
	ibv_destroy_qp(s.ud);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	say("%s", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

/* ---------------------------------------------------------- mcast */

/* Mode mcast: UD SENDs to a multicast group between the two sides' UD QPs. */
#define MC_LEN      500u
#define MC_NRECV    8u                      /* 8 RECV slots of 16 KiB fit before OFF_WRITE */
#define MC_QKEY     0x11111111u             /* the UD QPs' Q_Key (connect_qps) */
#define MC_SSEED    0x40u                   /* the server's SENDs: seeds 0x40.. */
#define MC_CSEED    0x50u                   /* the client's: 0x50.. */
#define MC_LSEED    0x60u                   /* the server's SEND after the client left */

/* ::ffff:239.1.2.3, a RoCE v2 GID of an IPv4 multicast group */
static void mc_group(union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = 239;
	g->raw[13] = 1;
	g->raw[14] = 2;
	g->raw[15] = 3;
}

/* A UD SEND of MC_LEN bytes of pattern seed to the group (QPN 0xffffff). */
static void mc_send(struct side *s, struct ibv_ah *ah, uint32_t seed, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + OFF_SEND + (id % 16) * 1024), MC_LEN, s->mr->lkey };
	struct ibv_send_wr wr;

	fill(s->buf + OFF_SEND + (id % 16) * 1024, MC_LEN, seed);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = MC_QKEY;
	post_send(s, &wr);
}

/* Waits for nsend SEND and nrecv RECV completions, in any order (a sender
 * in the group gets its own copies on the same CQ); the RECVs go to rw[]. */
static void mc_collect(struct side *s, unsigned nsend, unsigned nrecv, struct ibv_wc *rw, const char *what)
{
	unsigned sends = 0, recvs = 0;
	struct ibv_wc wc;

	while (sends < nsend || recvs < nrecv) {
		wait_wc(s, &wc, 20000);
		if (wc.status != IBV_WC_SUCCESS) {
			check(false, "%s: a completion in error (status %s, wr_id %llu, opcode %d)", what,
			      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.opcode);
			die("a completion in error ends the test");
		}
		if (wc.opcode == IBV_WC_SEND && sends < nsend)
			sends++;
		else if (wc.opcode == IBV_WC_RECV && recvs < nrecv)
			rw[recvs++] = wc;
		else
			check(false, "%s: an unexpected completion (wr_id %llu, opcode %d, %u bytes)", what,
			      (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len);
	}
	check(true, "%s: %u SEND and %u RECV completion(s)", what, nsend, nrecv);
}

/* The RECV in slot `slot` holds the SEND of pattern seed from UD QP src_qpn
 * of the vRNIC whose GID is src_gid, to the group g. */
static void mc_check(struct side *s, const struct ibv_wc *wc, uint32_t slot, uint32_t seed, uint32_t src_qpn,
		     const uint8_t *src_gid, const union ibv_gid *g, const char *what)
{
	const uint8_t *p = s->buf + OFF_RECV + slot * RECV_SLOT;
	uint64_t bad = 0;
	bool ok;

	check(wc->opcode == IBV_WC_RECV && wc->wr_id == 1000 + slot && (wc->wc_flags & IBV_WC_GRH) &&
	      wc->byte_len == MC_LEN + 40 && wc->src_qp == src_qpn,
	      "%s: RECV %llu (slot %u), %u bytes (40 of GRH), GRH flag %s, from QP %#x (expected %#x)", what,
	      (unsigned long long)wc->wr_id, slot, wc->byte_len, (wc->wc_flags & IBV_WC_GRH) ? "set" : "clear",
	      wc->src_qp, src_qpn);
	ok = same(p + 40, MC_LEN, seed, &bad);
	check(ok, "%s: payload as sent (pattern %#x)", what, seed);
	if (!ok)
		say("first difference at byte %llu", (unsigned long long)bad);
	/* RoCE v2 over IPv4: the IPv4 header is the GRH area's last 20 bytes */
	check(!memcmp(p + 20 + 16, g->raw + 12, 4) && !memcmp(p + 20 + 12, src_gid + 12, 4),
	      "%s: the GRH's IPv4 header says %u.%u.%u.%u -> %u.%u.%u.%u", what, p[32], p[33], p[34], p[35],
	      p[36], p[37], p[38], p[39]);
}

/* One side's turn to send n SENDs to the group (seeds seed0..), the other's
 * to listen; both are members, so both check n RECVs from slot first on. */
static void mc_round(struct side *s, struct ibv_ah *ah, bool sender, unsigned n, uint32_t seed0, uint32_t first,
		     uint32_t src_qpn, const uint8_t *src_gid, const union ibv_gid *g, const char *who)
{
	struct ibv_wc rw[MC_NRECV];
	char what[96];

	if (sender)
		for (unsigned i = 0; i < n; i++)
			mc_send(s, ah, seed0 + i, 40 + first + i);
	snprintf(what, sizeof(what), "SEND(s) to the group from %s%s", who, sender ? " (our own copies)" : "");
	mc_collect(s, sender ? n : 0, n, rw, what);
	for (unsigned i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "multicast SEND %u from %s", i + 1, who);
		mc_check(s, &rw[i], first + i, seed0 + i, src_qpn, src_gid, g, what);
	}
}

static int run_mcast(const char *host, int port, const char *dev)
{
	struct ibv_ah_attr aha;
	struct ibv_ah *mah;
	union ibv_gid g;
	struct side s;
	struct ibv_wc wc;
	struct timespec t0, t;
	uint32_t srv_qpn, cli_qpn;
	const uint8_t *srv_gid, *cli_gid;
	int fd, rc, n = 0;
	long ms = 0;

	memset(&s, 0, sizeof(s));
	setup(&s, dev);
	fd = host ? tcp_connect(host, port) : tcp_accept(port);
	connect_qps(&s, fd);
	srv_qpn = host ? s.peer.ud_qpn : s.ud->qp_num;
	cli_qpn = host ? s.ud->qp_num : s.peer.ud_qpn;
	srv_gid = host ? s.peer.gid : s.gid.raw;
	cli_gid = host ? s.gid.raw : s.peer.gid;
	say("UD QP %#x, the peer's %#x; group ::ffff:239.1.2.3", s.ud->qp_num, s.peer.ud_qpn);

	mc_group(&g);
	rc = ibv_attach_mcast(s.ud, &g, 0);
	check(rc == 0, "ibv_attach_mcast of UD QP %#x to ::ffff:239.1.2.3 (%d)", s.ud->qp_num, rc);
	memset(s.buf + OFF_RECV, 0, MC_NRECV * RECV_SLOT);
	for (uint32_t i = 0; i < MC_NRECV; i++)
		post_recv(&s, s.ud, i);
	memset(&aha, 0, sizeof(aha));
	aha.is_global = 1;
	aha.port_num = 1;
	aha.grh.dgid = g;
	aha.grh.sgid_index = 0;
	aha.grh.hop_limit = 1;
	mah = ibv_create_ah(s.pd, &aha);
	if (!mah)
		die("create_ah to the group: %s", strerror(errno));
	sync_peer(fd, 0x600);                   /* both are members with RECVs posted */

	/* the server sends, then the client; each member gets all 6 */
	mc_round(&s, mah, !host, 3, MC_SSEED, 0, srv_qpn, srv_gid, &g, "the server");
	sync_peer(fd, 0x610);
	mc_round(&s, mah, !!host, 3, MC_CSEED, 3, cli_qpn, cli_gid, &g, "the client");
	sync_peer(fd, 0x620);

	/* the client leaves; the server's next SEND reaches the server alone */
	if (host) {
		rc = ibv_detach_mcast(s.ud, &g, 0);
		check(rc == 0, "ibv_detach_mcast (%d)", rc);
		rc = ibv_detach_mcast(s.ud, &g, 0);
		check(rc == EINVAL, "ibv_detach_mcast again: EINVAL (%d)", rc);
	}
	sync_peer(fd, 0x630);
	if (!host)
		mc_round(&s, mah, true, 1, MC_LSEED, 6, srv_qpn, srv_gid, &g, "the server (the client gone)");
	sync_peer(fd, 0x640);                   /* the server has its own copy */
	if (host) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (ms < 300 && !(n = ibv_poll_cq(s.cq, 1, &wc))) {
			usleep(1000);
			clock_gettime(CLOCK_MONOTONIC, &t);
			ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		}
		check(n == 0, "after the detach, nothing reached the client in %ld ms%s", ms,
		      n ? " (a completion came)" : "");
		if (n > 0)
			say("the completion: status %s, wr_id %llu, opcode %d, %u bytes, from QP %#x",
			    ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len,
			    wc.src_qp);
	} else {
		rc = ibv_detach_mcast(s.ud, &g, 0);
		check(rc == 0, "the server leaves the group (%d)", rc);
	}
	sync_peer(fd, 0x650);
	{
		int theirs, mine = failures;

		xfer(fd, &mine, sizeof(mine), true);
		xfer(fd, &theirs, sizeof(theirs), false);
		say("%d failed checks here, %d at the peer", mine, theirs);
		failures += theirs;
	}
	close(fd);
	ibv_destroy_ah(mah);
	ibv_destroy_ah(s.ah);
	ibv_destroy_qp(s.qp);
	ibv_destroy_qp(s.ud);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	say("%s", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

/* ----------------------------------------------------------- hold */

static int run_hold(const char *host, int port, const char *dev)
{
	struct side s;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int fd, sent = 0, got = 0;

	memset(&s, 0, sizeof(s));
	setup(&s, dev);
	fd = host ? tcp_connect(host, port) : tcp_accept(port);
	connect_qps(&s, fd);
	for (uint32_t i = 0; i < 32; i++)
		post_recv(&s, s.qp, i % NRECV);
	sync_peer(fd, 0x4001);
	say("URD-HOLDING (QP %#x -> %#x)", s.qp->qp_num, s.peer.qpn);
	for (;;) {
		int n;

		memset(&wr, 0, sizeof(wr));
		sge = (struct ibv_sge){ (uintptr_t)(s.buf + OFF_SEND), 64, s.mr->lkey };
		wr.wr_id = 1;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (sent - got < 16) {
			if (ibv_post_send(s.qp, &wr, &bad)) {
				say("post_send failed: %s", strerror(errno));
				return 0;
			}
			sent++;
		}
		while ((n = ibv_poll_cq(s.cq, 1, &wc)) > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				say("completion in error: %s (after %d sends, %d completions)",
				    ibv_wc_status_str(wc.status), sent, got);
				say("URD-PEER-GONE");
				return 0;
			}
			if (wc.opcode == IBV_WC_RECV)
				post_recv(&s, s.qp, (uint32_t)(wc.wr_id - 1000));
			else
				got++;
		}
		if (n < 0)
			die("poll_cq");
		usleep(10000);
	}
}

/* ----------------------------------------------------------- BARs */

static int find_bars(char paths[][512], int max)
{
	const char *dir = getenv("UNIRDMA_PCI_DIR") ? getenv("UNIRDMA_PCI_DIR") : "/sys/bus/pci/devices";
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char p[600], v[32] = "", dv[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s/vendor", dir, e->d_name);
		if ((f = fopen(p, "r"))) {
			if (!fgets(v, sizeof(v), f))
				v[0] = 0;
			fclose(f);
		}
		snprintf(p, sizeof(p), "%s/%s/device", dir, e->d_name);
		if ((f = fopen(p, "r"))) {
			if (!fgets(dv, sizeof(dv), f))
				dv[0] = 0;
			fclose(f);
		}
		if (strtol(v, NULL, 16) == 0x1af4 && strtol(dv, NULL, 16) == 0x1110)
			snprintf(paths[n++], 512, "%s/%s/resource2", dir, e->d_name);
	}
	closedir(d);
	return n;
}

static uint8_t *map_bar(const char *path)
{
	int fd = open(path, O_RDWR);
	void *p;

	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	p = mmap(NULL, URD_REGION_CTRL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		die("mmap %s: %s", path, strerror(errno));
	return p;
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static int run_scribble(int secs, uint64_t seed)
{
	char bars[8][512];
	int n = find_bars(bars, 8);
	uint64_t x = seed | 1, writes = 0;
	time_t end = time(NULL) + secs;

	if (!n)
		die("no ivshmem BAR in this machine");
	say("URD-SCRIBBLING over %d BAR(s) for %d s", n, secs);
	while (time(NULL) < end) {
		for (int b = 0; b < n; b++) {
			uint8_t *m = map_bar(bars[b]);

			for (int k = 0; k < 20000; k++) {
				uint64_t r = rnd(&x), off;

				switch (r % 8) {
				case 0:         /* anywhere */
					off = rnd(&x) % URD_REGION_CTRL_SIZE & ~7ull;
					break;
				case 1:         /* the header */
					off = rnd(&x) % URD_HDR_SIZE & ~7ull;
					break;
				case 2:         /* doorbells */
					off = URD_DB_OFF + (rnd(&x) % URD_DB_SIZE & ~7ull);
					break;
				case 3:         /* a mailbox's request: garbage, then publish it */
				{
					uint32_t slot = (uint32_t)(rnd(&x) % URD_MAX_CTX);
					uint8_t *sl = m + urd_slot_off(slot);

					for (int i = 0; i < 64; i++)
						((uint64_t *)(sl + URD_SLOT_REQ_OFF))[i] = rnd(&x);
					if (r & 16) {   /* a plausible header with a random op */
						struct urd_msg_hdr *h = (void *)(sl + URD_SLOT_REQ_OFF);

						h->version = URD_ABI_VERSION;
						h->op = (uint16_t)(rnd(&x) % 80);
						h->len = (uint32_t)(rnd(&x) % (URD_MSG_MAX + 64));
					}
					__atomic_fetch_add((uint32_t *)sl, 1, __ATOMIC_SEQ_CST);
					writes++;
					continue;
				}
				default:        /* the ring arena */
					off = URD_ARENA_OFF + (rnd(&x) % (64 * MIB) & ~7ull);
					break;
				}
				*(volatile uint64_t *)(m + off) = rnd(&x);
				writes++;
			}
			munmap(m, URD_REGION_CTRL_SIZE);
		}
	}
	say("%llu random writes into %d BAR(s)", (unsigned long long)writes, n);
	return 0;
}

/* ------------------------------------------------------------ bigmr */

static int run_bigmr(unsigned mib, const char *dev)
{
	const size_t len = (size_t)mib * MIB, chunk = 64 * KIB;
	struct side s;
	struct ibv_qp *q[2];
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .cap = { 16, 16, 1, 1, 0 } };
	struct ibv_mr *big, *small;
	uint8_t *b, *sm;
	unsigned long bad_chunks = 0, n = 0;

	memset(&s, 0, sizeof(s));
	s.ctx = open_dev(dev);
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 64, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = s.cq;
	q[0] = ibv_create_qp(s.pd, &ia);
	q[1] = ibv_create_qp(s.pd, &ia);
	if (!s.pd || !s.cq || !q[0] || !q[1] || ibv_query_gid(s.ctx, 1, 0, &s.gid))
		die("setup: %s", strerror(errno));
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sm = mmap(NULL, 2 * chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED || sm == MAP_FAILED)
		die("mmap");
	madvise(b, len, MADV_NOHUGEPAGE);
	for (size_t off = len; off; off -= 4096)        /* backwards: frames out of order */
		b[off - 4096] = 1;
	memset(b, 0, len);
	big = ibv_reg_mr(s.pd, b, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	small = ibv_reg_mr(s.pd, sm, 2 * chunk, IBV_ACCESS_LOCAL_WRITE);
	check(big != NULL, "a %u MiB MR of scattered frames registers (%s)", mib, big ? "ok" : strerror(errno));
	if (!big || !small)
		return 1;
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

		if (ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			die("INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = q[1 - i]->qp_num;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.grh.dgid = s.gid;
		if (ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			die("RTR");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		if (ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			die("RTS");
	}
	s.qp = q[0];
	for (size_t off = 123; off + chunk <= len; off += chunk * 7 + 4093, n++) {
		struct ibv_sge sge = { (uintptr_t)sm, (uint32_t)chunk, small->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *badwr;
		struct ibv_wc wc;
		uint64_t bad;

		fill(sm, chunk, (uint32_t)n);
		wr.wr.rdma.remote_addr = (uintptr_t)b + off;
		wr.wr.rdma.rkey = big->rkey;
		if (ibv_post_send(q[0], &wr, &badwr))
			die("post_send");
		wait_wc(&s, &wc, 20000);
		if (wc.status != IBV_WC_SUCCESS)
			die("RDMA WRITE at %zu: %s", off, ibv_wc_status_str(wc.status));
		if (!same(b + off, chunk, (uint32_t)n, &bad))
			bad_chunks++;
		sge.addr = (uintptr_t)sm + chunk;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr_id = 2;
		if (ibv_post_send(q[0], &wr, &badwr))
			die("post_send");
		wait_wc(&s, &wc, 20000);
		if (wc.status != IBV_WC_SUCCESS)
			die("RDMA READ at %zu: %s", off, ibv_wc_status_str(wc.status));
		if (!same(sm + chunk, chunk, (uint32_t)n, &bad))
			bad_chunks++;
	}
	check(!bad_chunks, "%lu RDMA WRITEs and READs of 64 KiB all over the MR moved the right bytes (%lu wrong)",
	      n, bad_chunks);
	{
		/* read-only pages: a writable MR would pin the shared zero page */
		void *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *m = ibv_reg_mr(s.pd, ro, 8192, IBV_ACCESS_LOCAL_WRITE);

		check(!m && errno == EFAULT, "a writable MR of read-only pages is refused (%s)",
		      m ? "registered" : strerror(errno));
		if (m)
			ibv_dereg_mr(m);
		m = ibv_reg_mr(s.pd, ro, 8192, IBV_ACCESS_REMOTE_READ);
		check(m != NULL, "a read-only MR of them is fine (%s)", m ? "ok" : strerror(errno));
		if (m)
			ibv_dereg_mr(m);
	}
	ibv_dereg_mr(big);
	ibv_dereg_mr(small);
	ibv_destroy_qp(q[0]);
	ibv_destroy_qp(q[1]);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	say("%s", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ badmr */

struct raw {
	uint8_t *m;
	struct urd_slot_hdr *s;
	uint32_t seq;
};

static int32_t raw_req(struct raw *r, uint16_t op, void *req, uint32_t len, void *resp, uint32_t rlen)
{
	struct urd_msg_hdr *h = req, *rh = (void *)((uint8_t *)r->s + URD_SLOT_RESP_OFF);
	struct timespec t0, t;

	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = len;
	memcpy((uint8_t *)r->s + URD_SLOT_REQ_OFF, req, len);
	__atomic_store_n(&r->s->req_seq, ++r->seq, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&r->s->resp_seq, __ATOMIC_ACQUIRE) != r->seq) {
		__atomic_fetch_add(&r->s->heartbeat, 1, __ATOMIC_SEQ_CST);
		usleep(50);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			die("no answer to op %u", op);
	}
	if (resp)
		memcpy(resp, rh, rlen);
	return rh->status;
}

static uint64_t gpa_of(void *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;

	if (fd < 0 || pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) != 8)
		die("pagemap");
	close(fd);
	if (!(e & (1ull << 63)) || !(e & ((1ull << 55) - 1)))
		die("no frame number in pagemap (root needed)");
	return (e & ((1ull << 55) - 1)) * 4096;
}

static int run_badmr(void)
{
	char bars[8][512];
	struct raw r = { 0 };
	struct urd_open_ctx_req oreq = { 0 };
	struct urd_handle_req hreq = { 0 };
	struct urd_handle_resp hresp;
	struct urd_mem_req mreq = { .len = 4096 };
	uint64_t ram = 0, own;
	uint32_t pd, token = 0x5eed0000u | (uint32_t)getpid(), slot;
	uint8_t *page;
	int32_t st;
	uint64_t mrbuf[(sizeof(struct urd_reg_mr_req) + 2 * sizeof(struct urd_mr_seg)) / 8 + 1];
	struct urd_reg_mr_req *mr = (struct urd_reg_mr_req *)mrbuf;
	const uint32_t one_seg = sizeof(*mr) + sizeof(struct urd_mr_seg);
	struct { const char *what; uint64_t off, len; } bad[] = {
		{ "the PCI hole", 0xd0000000ull, 4096 },
		{ "the last page below 4 GiB", 0xfffff000ull, 4096 },
		{ "past the end of guest RAM", 0, 4096 },
		{ "the end of guest RAM straddled", 0, 8192 },
		{ "a range that wraps around", 0xfffffffffffff000ull, 8192 },
		{ "an address above 4 GiB + RAM", 0x100000000ull + (1ull << 40), 4096 },
		{ "zero length", 0, 0 },
	};

	if (!find_bars(bars, 8))
		die("no ivshmem BAR in this machine");
	r.m = map_bar(bars[0]);
	{
		const struct urd_region_hdr *h = (const void *)r.m;

		if (h->magic != URD_MAGIC || !(h->flags & URD_REGION_VM))
			die("BAR 0 is not a VM vRNIC region");
		ram = h->dev.max_mr_size;
		say("vRNIC %s: guest RAM %llu MiB", h->name, (unsigned long long)(ram >> 20));
	}
	for (slot = 0; slot < URD_MAX_CTX; slot++) {
		uint32_t z = 0;

		r.s = (struct urd_slot_hdr *)(r.m + urd_slot_off(slot));
		if (__atomic_compare_exchange_n(&r.s->vm_owner, &z, token, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			break;
	}
	if (slot == URD_MAX_CTX)
		die("no free slot");
	r.seq = __atomic_load_n(&r.s->req_seq, __ATOMIC_ACQUIRE);
	st = raw_req(&r, URD_OP_OPEN_CTX, &oreq, sizeof(oreq), NULL, 0);
	check(st == 0, "OPEN_CTX on slot %u by hand (%d)", slot, st);
	st = raw_req(&r, URD_OP_ALLOC_PD, &hreq, sizeof(struct urd_msg_hdr), &hresp, sizeof(hresp));
	check(st == 0, "ALLOC_PD (%d)", st);
	pd = hresp.handle;
	st = raw_req(&r, URD_OP_MEM_ALLOC, &mreq, sizeof(mreq), NULL, 0);
	check(st == -EOPNOTSUPP, "MEM_ALLOC (a container's window) is refused: %s", strerror(-st));

	bad[2].off = ram < (3ull << 30) ? ram : 0x100000000ull + ram - (3ull << 30);
	bad[3].off = bad[2].off - 4096;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(mrbuf, 0, sizeof(mrbuf));
		mr->pd = pd;
		mr->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		mr->iova = 0x10000;
		mr->length = bad[i].len ? bad[i].len : 4096;
		mr->nsegs = 1;
		mr->segs[0].off = bad[i].off;
		mr->segs[0].len = bad[i].len;
		st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
		check(st == -EINVAL, "REG_MR of %s (GPA %#llx + %llu) is refused: %s", bad[i].what,
		      (unsigned long long)bad[i].off, (unsigned long long)bad[i].len, strerror(-st));
	}
	/* a good one: our own pinned page, then one good and one bad segment */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mlock(page, 4096))
		die("mlock");
	memset(page, 0x5a, 4096);
	own = gpa_of(page);
	memset(mrbuf, 0, sizeof(mrbuf));
	mr->pd = pd;
	mr->access = IBV_ACCESS_LOCAL_WRITE;
	mr->iova = 0x10000;
	mr->length = 4096;
	mr->nsegs = 1;
	mr->segs[0].off = own;
	mr->segs[0].len = 4096;
	st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
	check(st == 0, "REG_MR of its own page (GPA %#llx) is accepted (%d)", (unsigned long long)own, st);
	mr->length = 8192;
	mr->nsegs = 2;
	mr->segs[1].off = 0xe0000000ull;
	mr->segs[1].len = 4096;
	st = raw_req(&r, URD_OP_REG_MR, mr, one_seg + sizeof(struct urd_mr_seg), NULL, 0);
	check(st == -EINVAL, "REG_MR with a second segment in the PCI hole is refused: %s", strerror(-st));

	/* URD_REG_MR_INDIRECT: the segment table in guest RAM (a second page) */
	{
		uint8_t *tp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct urd_mr_seg *tab = (struct urd_mr_seg *)tp;
		uint64_t tgpa;

		if (tp == MAP_FAILED || mlock(tp, 4096))
			die("mlock");
		tab[0].off = own;
		tab[0].len = 4096;
		tgpa = gpa_of(tp);
		memset(mrbuf, 0, sizeof(mrbuf));
		mr->pd = pd;
		mr->access = IBV_ACCESS_LOCAL_WRITE;
		mr->iova = 0x10000;
		mr->length = 4096;
		mr->nsegs = 1;
		mr->flags = URD_REG_MR_INDIRECT;
		mr->segs[0].off = tgpa;
		mr->segs[0].len = 16;
		st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
		check(st == 0, "REG_MR through a segment table in guest RAM is accepted (%d)", st);
		tab[0].off = 0xd0000000ull;
		st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
		check(st == -EINVAL, "... not when the table lists the PCI hole: %s", strerror(-st));
		tab[0].off = own;
		mr->segs[0].off = 0xd0000000ull;
		st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
		check(st == -EINVAL, "... nor when the table itself is said to be in the PCI hole: %s", strerror(-st));
		mr->segs[0].off = tgpa;
		mr->segs[0].len = 12;
		st = raw_req(&r, URD_OP_REG_MR, mr, one_seg, NULL, 0);
		check(st == -EINVAL, "... nor with a table of 12 bytes: %s", strerror(-st));
	}
	st = raw_req(&r, URD_OP_CLOSE_CTX, &hreq, sizeof(struct urd_msg_hdr), NULL, 0);
	check(st == 0, "CLOSE_CTX (%d)", st);
	__atomic_store_n(&r.s->vm_owner, 0, __ATOMIC_SEQ_CST);
	say("%s", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *mode;
	int port = 18515, opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: urd_vmtool opcodes|uc|mw|mcast|hold [-p PORT] [-d DEV] [HOST] | scribble [SECS [SEED]] | badmr | bigmr [MIB]\n");
		return 2;
	}
	mode = argv[1];
	argv++;
	argc--;
	while ((opt = getopt(argc, argv, "p:d:")) != -1) {
		if (opt == 'p')
			port = atoi(optarg);
		else if (opt == 'd')
			dev = optarg;
		else
			return 2;
	}
	if (!strcmp(mode, "opcodes"))
		return run_opcodes(optind < argc ? argv[optind] : NULL, port, dev);
	if (!strcmp(mode, "uc")) {
		uc_mode = true;
		return run_opcodes(optind < argc ? argv[optind] : NULL, port, dev);
	}
	if (!strcmp(mode, "mw")) {
		mw_mode = true;
		return run_mw(optind < argc ? argv[optind] : NULL, port, dev);
	}
	if (!strcmp(mode, "mcast"))
		return run_mcast(optind < argc ? argv[optind] : NULL, port, dev);
	if (!strcmp(mode, "hold"))
		return run_hold(optind < argc ? argv[optind] : NULL, port, dev);
	if (!strcmp(mode, "scribble"))
		return run_scribble(optind < argc ? atoi(argv[optind]) : 3,
				    optind + 1 < argc ? strtoull(argv[optind + 1], NULL, 0) : 42);
	if (!strcmp(mode, "badmr"))
		return run_badmr();
	if (!strcmp(mode, "bigmr"))
		return run_bigmr(optind < argc ? (unsigned)atoi(argv[optind]) : 32, dev);
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}

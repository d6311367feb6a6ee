/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* lifeprobe: lifecycle probes for tests/integration/lifecycle.sh.
 *
 *   lifeprobe stream --me FILE --peer FILE [--survive] [--timeout S]
 *       One end of an RC stream (RDMA WRITEs and SENDs, 16 in flight, the
 *       peer's receives reposted as they complete).  The ends find each
 *       other through two files (each writes --me, reads --peer).  Prints
 *       STREAMING once data flows.  Without --survive it streams until it is
 *       killed (exit 1 after S seconds).  With --survive it streams until its
 *       peer disappears and then requires, within 3 s of the first sign:
 *       IBV_EVENT_QP_FATAL for its QP on the async fd, every outstanding send
 *       completed (those still in the send queue when the QP failed with
 *       IBV_WC_WR_FLUSH_ERR or a retry-exceeded error, nothing else), every
 *       posted receive flushed, a send posted after the event flushed too,
 *       the QP in the error state; then it destroys everything and exits 0.
 *
 *   lifeprobe loop --keep DEV --kill DEV [--iters N] [--warmup W] [--stop FILE] [--progress]
 *                  [--early-every K]
 *       The same 200 times, fast: this process keeps a context on DEV --keep;
 *       each iteration it forks a child (lifeprobe child) on DEV --kill,
 *       streams with it both ways, SIGKILLs it mid-transfer, and requires the
 *       QP_FATAL event and the flush as above, and that `vrnic.show` of the
 *       --kill vRNIC (admin socket $UNIRDMA_STATE_DIR/admin.sock) returns to
 *       0 contexts, pds, mrs, cqs, qps, srqs and mem_bytes within 1 s.  After
 *       W iterations and at the end it records the daemon's open fds and
 *       VmRSS (/proc/PID of the pid `ping` reports) and the region file's
 *       allocated size, and prints them:
 *         DAEMON fds WARM END / DAEMON rss_kb WARM END / DAEMON region_kb WARM END
 *       --stop FILE ends the loop early once FILE exists; --progress prints a
 *       line per kill ("kill N: ...").  --early-every K adds, after every K-th
 *       iteration, a child SIGKILLed at a random moment of its first 25 ms
 *       (opening the device, registering memory, creating the CQ and QP):
 *       its objects must be released within 1 s as well.  Devices are picked
 *       by name among those $UNIRDMA_DEVDIR shows.
 *
 *   lifeprobe hold [--churn] [--linger FILE] [--timeout S]
 *       Opens the first device, builds a connected RC loopback pair, proves
 *       it moves data, prints READY and waits (at most S s) for
 *       IBV_EVENT_DEVICE_FATAL; --churn creates and destroys CQs meanwhile
 *       (a control verb in flight when the daemon goes).  Prints
 *         FATAL epoch_ms=T          (CLOCK_REALTIME, to compare with the kill)
 *         CHURN-FAILED epoch_ms=T errno=E
 *       then checks that control verbs fail (alloc_pd, reg_mr, create_cq,
 *       create_qp, modify_qp, query_qp) and port 1 reads DOWN, that the work
 *       still outstanding (8 receives, a send posted now) completes in error
 *       within 1 s or poll_cq fails (no program waits forever for a
 *       completion), and with --linger waits until FILE exists before it
 *       destroys everything.  Every call runs under a 5 s alarm: a hang is
 *       a failure (exit 3), never a stuck test.
 */
#include "helpers.c"

#include <dirent.h>
#include <getopt.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#define S_BUF        (256u << 10)
#define S_WRITE_OFF  0u
#define S_WRITE_LEN  (16u << 10)
#define S_RECV_OFF   (128u << 10)
#define S_RECV_SLOT  1024u
#define S_NRECV      32u
#define S_SEND_OFF   (192u << 10)
#define S_SEND_LEN   1024u
#define S_WINDOW     16u
#define RECV_ID      0x100000ull
#define PROBE_ID     0xfffffull       /* a send posted after QP_FATAL */
#define DRAIN_MS     3000u
#define RELEASE_MS   1000u

/* ------------------------------------------------------------ streams */

/* min_rnr_timer of the side that gets killed (--rnr-timer): with a long one
 * the survivor's SENDs sit out long RNR waits when the peer dies. */
static int rnr_timer_opt;

struct peer_info {
	uint32_t qpn, rkey;
	uint64_t addr;
	union ibv_gid gid;
	int pid;
};

struct stream {
	struct t_dev d;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct peer_info peer;
	uint32_t sends_out, recvs_out;
	uint64_t seq;
	uint64_t send_ok, recv_ok, flushed_send, flushed_recv, retry_exc, other_err;
	int stopped;            /* a WR failed or we were told: post nothing more */
	uint8_t rnr_timer;      /* our min_rnr_timer: how long a SEND to us waits after an RNR NAK */
	uint64_t first_err_ms, fatal_ms;
	int probe_posted, probe_status;
};

static void stream_open(struct stream *s, const char *dev)
{
	memset(s, 0, sizeof(*s));
	if (dev)
		setenv("UNIRDMA_TEST_DEV0", dev, 1);
	t_open(&s->d, 0);
	s->buf = t_map(S_BUF);
	t_fill(s->buf, S_BUF, 0x11fe, 0);
	s->mr = t_reg(s->d.pd, s->buf, S_BUF, T_ALL_ACCESS);
	s->cq = t_cq(&s->d, 256, NULL);
	/* we read async events without blocking */
	CHECK(fcntl(s->d.ctx->async_fd, F_SETFL, fcntl(s->d.ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0);
}

static void stream_close(struct stream *s)
{
	CHECK_OK(ibv_destroy_cq(s->cq));
	CHECK_OK(ibv_dereg_mr(s->mr));
	t_unmap(s->buf, S_BUF);
	t_close(&s->d);
}

static void stream_new_qp(struct stream *s)
{
	struct ibv_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
				  .max_recv_sge = 1, .max_inline_data = 0 };

	s->qp = t_qp(&s->d, IBV_QPT_RC, s->cq, s->cq, NULL, 0, &cap);
	s->sends_out = s->recvs_out = 0;
	s->seq = s->send_ok = s->recv_ok = 0;
	s->flushed_send = s->flushed_recv = s->retry_exc = s->other_err = 0;
	s->stopped = 0;
	s->first_err_ms = s->fatal_ms = 0;
	s->probe_posted = 0;
	s->probe_status = -1;
	if (!s->rnr_timer)
		s->rnr_timer = 1;       /* 10 us */
}

static void info_line(const struct stream *s, char *buf, size_t len)
{
	char g[64];

	CHECK(inet_ntop(AF_INET6, s->d.gid.raw, g, sizeof(g)));
	snprintf(buf, len, "PEER qpn=0x%x rkey=0x%x addr=0x%llx pid=%d gid=%s\n", s->qp->qp_num,
		 s->mr->rkey, (unsigned long long)(uintptr_t)s->buf, (int)getpid(), g);
}

static int parse_info(const char *line, struct peer_info *p)
{
	char g[80];
	unsigned long long addr;

	memset(p, 0, sizeof(*p));
	if (sscanf(line, "PEER qpn=0x%x rkey=0x%x addr=0x%llx pid=%d gid=%79s", &p->qpn, &p->rkey,
		   &addr, &p->pid, g) != 5)
		return -1;
	p->addr = addr;
	return inet_pton(AF_INET6, g, p->gid.raw) == 1 ? 0 : -1;
}

static void post_recv_slot(struct stream *s, uint32_t i)
{
	struct ibv_sge sg = t_sge(s->buf + S_RECV_OFF + i * S_RECV_SLOT, S_RECV_SLOT, s->mr->lkey);

	if (t_post_recv(s->qp, RECV_ID + i, &sg, 1) == 0)
		s->recvs_out++;
	else
		s->stopped = 1;
}

static void stream_connect(struct stream *s)
{
	struct t_conn c;
	struct t_peer p;

	t_conn_default(&c);
	c.timeout = 10;         /* ~4 ms per try */
	c.retry_cnt = 3;
	c.rnr_retry = 7;        /* a receiver that stopped reposting: wait for it */
	c.min_rnr_timer = s->rnr_timer;
	c.max_rd_atomic = 4;
	memset(&p, 0, sizeof(p));
	p.gid = s->peer.gid;
	p.qpn = s->peer.qpn;
	t_rc_init(s->qp, &c);
	for (uint32_t i = 0; i < S_NRECV; i++)
		post_recv_slot(s, i);
	t_rc_rtr(s->qp, &s->d, &p, &c);
	t_rc_rts(s->qp, &c);
}

static void handle_wc(struct stream *s, const struct ibv_wc *wc, int verbose)
{
	int recv = wc->wr_id >= RECV_ID;

	if (recv)
		s->recvs_out--;
	else
		s->sends_out--;
	if (wc->wr_id == PROBE_ID) {
		s->probe_status = wc->status;
		return;
	}
	if (wc->status == IBV_WC_SUCCESS) {
		if (recv) {
			s->recv_ok++;
			if (!s->stopped)
				post_recv_slot(s, (uint32_t)(wc->wr_id - RECV_ID));
		} else {
			s->send_ok++;
		}
		return;
	}
	if (!s->first_err_ms)
		s->first_err_ms = t_now_ms();
	s->stopped = 1;
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (recv)
			s->flushed_recv++;
		else
			s->flushed_send++;
	} else if (!recv && (wc->status == IBV_WC_RETRY_EXC_ERR || wc->status == IBV_WC_RNR_RETRY_EXC_ERR)) {
		s->retry_exc++;
	} else {
		s->other_err++;
		if (verbose)
			printf("unexpected completion: wr_id 0x%llx status %s\n",
			       (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
	}
}

/* Posts sends up to the window: RDMA WRITEs into the peer's buffer and
 * SENDs into its receives, alternately, all signaled. */
static void post_sends(struct stream *s)
{
	while (!s->stopped && s->sends_out < S_WINDOW) {
		struct ibv_sge sg;
		int rc;

		if (s->seq & 1) {
			sg = t_sge(s->buf + S_SEND_OFF, S_SEND_LEN, s->mr->lkey);
			rc = t_post(s->qp, s->seq, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0);
		} else {
			sg = t_sge(s->buf + S_SEND_OFF, S_WRITE_LEN, s->mr->lkey);
			rc = t_post(s->qp, s->seq, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				    s->peer.addr + S_WRITE_OFF, s->peer.rkey, 0);
		}
		if (rc) {
			s->stopped = 1;
			break;
		}
		s->seq++;
		s->sends_out++;
	}
}

/* Async events: QP_FATAL for our QP is recorded; anything else is shown.
 * Returns the number of unexpected events. */
static int drain_async(struct stream *s, int verbose)
{
	struct ibv_async_event ev;
	int bad = 0;

	while (ibv_get_async_event(s->d.ctx, &ev) == 0) {
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == s->qp) {
			if (!s->fatal_ms)
				s->fatal_ms = t_now_ms();
			s->stopped = 1;
		} else {
			bad++;
			if (verbose)
				printf("unexpected async event %s\n", ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
	return bad;
}

/* One round: poll, post.  Returns completions seen. */
static int pump(struct stream *s, int verbose)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(s->cq, 16, wc);

	CHECK(n >= 0);
	for (int i = 0; i < n; i++)
		handle_wc(s, &wc[i], verbose);
	post_sends(s);
	if (!n)
		sched_yield();
	return n;
}

static int drained(const struct stream *s)
{
	return s->fatal_ms && !s->sends_out && !s->recvs_out;
}

/* After the peer died (or was killed at t0): wait for QP_FATAL and the
 * flush of everything outstanding.  0 when all is as it must be. */
static int survive(struct stream *s, uint64_t t0, int verbose)
{
	uint64_t end = t0 + DRAIN_MS * t_scale;
	int unexpected = 0, fails = 0;
	uint32_t sends_at_stop, recvs_at_stop;

	while (!drained(s) && t_now_ms() < end) {
		unexpected += drain_async(s, verbose);
		if (s->fatal_ms && !s->probe_posted) {
			/* work posted to a QP in the error state is flushed too */
			struct ibv_sge sg = t_sge(s->buf + S_SEND_OFF, 64, s->mr->lkey);

			s->probe_posted = 1;
			if (t_post(s->qp, PROBE_ID, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0) == 0)
				s->sends_out++;
			else
				s->probe_posted = 2;    /* refused: as good as an error */
		}
		pump(s, verbose);
	}
	unexpected += drain_async(s, verbose);
	sends_at_stop = s->sends_out;
	recvs_at_stop = s->recvs_out;
	if (verbose || !drained(s) || s->other_err || unexpected || !s->flushed_recv ||
	    (s->probe_posted == 1 && s->probe_status != IBV_WC_WR_FLUSH_ERR))
		printf("SURVIVOR fatal_event_ms=%lld first_error_ms=%lld flushed_sends=%llu flushed_recvs=%llu "
		       "retry_exceeded=%llu other_errors=%llu good_sends=%llu good_recvs=%llu probe=%s\n",
		       s->fatal_ms ? (long long)(s->fatal_ms - t0) : -1LL,
		       s->first_err_ms ? (long long)(s->first_err_ms - t0) : -1LL,
		       (unsigned long long)s->flushed_send, (unsigned long long)s->flushed_recv,
		       (unsigned long long)s->retry_exc, (unsigned long long)s->other_err,
		       (unsigned long long)s->send_ok, (unsigned long long)s->recv_ok,
		       s->probe_posted == 2 ? "refused" : s->probe_status < 0 ? "none" :
		       ibv_wc_status_str((enum ibv_wc_status)s->probe_status));
	if (!s->fatal_ms) {
		printf("FAIL: no IBV_EVENT_QP_FATAL within %u ms\n", DRAIN_MS);
		fails++;
	}
	if (sends_at_stop || recvs_at_stop) {
		printf("FAIL: %u sends and %u receives still outstanding after %u ms\n", sends_at_stop,
		       recvs_at_stop, DRAIN_MS);
		fails++;
	}
	if (!s->flushed_recv) {
		printf("FAIL: no receive was flushed\n");
		fails++;
	}
	if (s->probe_posted == 1 && s->probe_status != IBV_WC_WR_FLUSH_ERR) {
		printf("FAIL: a send posted after QP_FATAL completed with %s, not IBV_WC_WR_FLUSH_ERR\n",
		       s->probe_status < 0 ? "nothing" : ibv_wc_status_str((enum ibv_wc_status)s->probe_status));
		fails++;
	}
	if (s->other_err || unexpected) {
		printf("FAIL: %llu unexpected completion statuses, %d unexpected async events\n",
		       (unsigned long long)s->other_err, unexpected);
		fails++;
	}
	if (t_qp_state(s->qp) != IBV_QPS_ERR) {
		printf("FAIL: the QP is in state %d, not IBV_QPS_ERR\n", t_qp_state(s->qp));
		fails++;
	}
	return fails;
}

/* ---------------------------------------------------- stream (files) */

static void write_file(const char *path, const char *text)
{
	char tmp[600];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	CHECK(f);
	fputs(text, f);
	CHECK(fclose(f) == 0);
	CHECK(rename(tmp, path) == 0);
}

static void wait_file(const char *path, struct peer_info *p, int timeout_s)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_s * 1000;
	char line[512];

	for (;;) {
		FILE *f = fopen(path, "r");

		if (f) {
			int ok = fgets(line, sizeof(line), f) && parse_info(line, p) == 0;

			fclose(f);
			if (ok)
				return;
		}
		if (t_now_ms() > end)
			t_fail("no peer info in %s within %d s", path, timeout_s);
		t_sleep_ms(5);
	}
}

static void wait_exists(const char *path, int timeout_s)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_s * 1000;

	while (access(path, F_OK)) {
		if (t_now_ms() > end)
			t_fail("%s did not appear within %d s", path, timeout_s);
		t_sleep_ms(2);
	}
}

static int cmd_stream(const char *me, const char *peer, int survivor, int timeout_s)
{
	struct stream s;
	char line[512];
	uint64_t end, total = 0;
	int announced = 0, fails, early_unexpected = 0;

	stream_open(&s, getenv("LIFEPROBE_DEV"));
	s.rnr_timer = (uint8_t)rnr_timer_opt;
	stream_new_qp(&s);
	info_line(&s, line, sizeof(line));
	write_file(me, line);
	wait_file(peer, &s.peer, 30);
	stream_connect(&s);
	/* nobody sends before both QPs are ready to receive: a request that
	 * finds its target still in INIT is dropped like on the wire, and a
	 * slow peer would turn into a retry-exceeded error */
	snprintf(line, sizeof(line), "%s.ready", me);
	write_file(line, "ready\n");
	snprintf(line, sizeof(line), "%s.ready", peer);
	wait_exists(line, 30);
	printf("%s: QPN 0x%x connected to QPN 0x%x (pid %d)\n", s.d.name, s.qp->qp_num, s.peer.qpn,
	       s.peer.pid);
	end = t_now_ms() + (uint64_t)timeout_s * 1000;
	while (t_now_ms() < end) {
		total += (uint64_t)pump(&s, 1);
		if (!announced && s.send_ok >= 64 && s.recv_ok >= 16) {
			printf("STREAMING\n");
			announced = 1;
		}
		early_unexpected += drain_async(&s, 1);
		if (s.stopped || s.fatal_ms)
			break;
	}
	if (!s.stopped && !s.fatal_ms) {
		printf("FAIL: %s: still streaming after %d s (%llu completions): nobody killed the peer\n",
		       survivor ? "survivor" : "streamer", timeout_s, (unsigned long long)total);
		return 1;
	}
	if (!survivor) {
		printf("FAIL: the stream broke although this side expected to be killed\n");
		return 1;
	}
	printf("survivor: the peer is gone after %llu good sends and %llu good receives\n",
	       (unsigned long long)s.send_ok, (unsigned long long)s.recv_ok);
	fails = survive(&s, s.first_err_ms ? s.first_err_ms : t_now_ms(), 1);
	if (early_unexpected) {
		printf("FAIL: %d unexpected async events while streaming\n", early_unexpected);
		fails++;
	}
	CHECK_OK(ibv_destroy_qp(s.qp));
	stream_close(&s);
	printf("SURVIVOR %s\n", fails ? "FAILED" : "OK");
	return fails ? 1 : 0;
}

/* ------------------------------------------------- admin and /proc */

/* One request on the daemon's admin socket; the answer in out. */
static int admin_req(const char *req, char *out, size_t len)
{
	const char *dir = getenv("UNIRDMA_STATE_DIR");
	struct sockaddr_un sa;
	size_t n = 0;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/admin.sock", dir ? dir : "/run/unirdma");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, out + n, len - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == len - 1)
			break;
	}
	close(fd);
	out[n] = 0;
	return n ? 0 : -1;
}

static long long json_int(const char *js, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(js, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static const char *const OBJ_FIELDS[] = { "contexts", "pds", "mrs", "cqs", "qps", "srqs", "mem_bytes" };

/* Sum of the object counts of a vRNIC (-1 when it cannot be read); the
 * answer stays in js. */
static long long vrnic_objects(const char *name, char *js, size_t len)
{
	char req[128];
	long long sum = 0;

	snprintf(req, sizeof(req), "{\"cmd\":\"vrnic.show\",\"name\":\"%s\"}\n", name);
	if (admin_req(req, js, len))
		return -1;
	for (size_t i = 0; i < sizeof(OBJ_FIELDS) / sizeof(OBJ_FIELDS[0]); i++) {
		long long v = json_int(js, OBJ_FIELDS[i]);

		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

static int daemon_pid(void)
{
	char js[1024];

	if (admin_req("{\"cmd\":\"ping\"}\n", js, sizeof(js)))
		return -1;
	return (int)json_int(js, "pid");
}

static long count_fds(int pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	long n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static long status_kb(int pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Allocated KiB of the vRNIC's region file (tmpfs pages it holds). */
static long region_kb(const char *name)
{
	char js[4096], path[600];
	const char *p, *q;
	struct stat st;
	size_t n = 0;

	if (vrnic_objects(name, js, sizeof(js)) < 0 || !(p = strstr(js, "\"dir\":\"")))
		return -1;
	p += 7;
	q = strchr(p, '"');
	if (!q)
		return -1;
	for (; p < q && n < sizeof(path) - 8; p++)
		if (*p != '\\')         /* json-c escapes '/' as "\/" */
			path[n++] = *p;
	memcpy(path + n, "/region", 8);
	if (stat(path, &st))
		return -1;
	return (long)st.st_blocks / 2;
}

/* ------------------------------------------------------------- loop */

static int read_line_fd(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;

	while (n < len - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = t_now_ms();
		ssize_t r;

		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return -1;
		r = read(fd, buf + n, 1);
		if (r <= 0)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	return -1;
}

/* The side that gets killed: connects over the pipes and streams until the
 * SIGKILL comes (or 30 s pass). */
static int cmd_child(const char *dev, int rfd, int wfd)
{
	struct stream s;
	char line[512];
	int told = 0;
	uint64_t end;

	stream_open(&s, dev);
	s.rnr_timer = (uint8_t)rnr_timer_opt;
	stream_new_qp(&s);
	info_line(&s, line, sizeof(line));
	CHECK(write(wfd, line, strlen(line)) == (ssize_t)strlen(line));
	if (read_line_fd(rfd, line, sizeof(line), 10000) || parse_info(line, &s.peer))
		t_fail("child: no peer info");
	/* the parent is in RTS already; it sends once we are too */
	stream_connect(&s);
	CHECK(write(wfd, "R\n", 2) == 2);
	end = t_now_ms() + 30000;
	while (t_now_ms() < end) {
		pump(&s, 1);
		if (!told && s.send_ok >= 32 && s.recv_ok >= 8) {
			CHECK(write(wfd, "S\n", 2) == 2);
			told = 1;
		}
		if (s.stopped)
			t_fail("child: the stream broke before the kill (good sends %llu, receives %llu; "
			       "flushed %llu/%llu, retry exceeded %llu, other errors %llu)",
			       (unsigned long long)s.send_ok, (unsigned long long)s.recv_ok,
			       (unsigned long long)s.flushed_send, (unsigned long long)s.flushed_recv,
			       (unsigned long long)s.retry_exc, (unsigned long long)s.other_err);
	}
	t_fail("child: not killed within 30 s");
}

struct daemon_figures {
	long fds, rss_kb, anon_kb, shmem_kb, region_kb;
};

static void figures(int pid, const char *vr, struct daemon_figures *f)
{
	f->fds = count_fds(pid);
	f->rss_kb = status_kb(pid, "VmRSS");
	f->anon_kb = status_kb(pid, "RssAnon");
	f->shmem_kb = status_kb(pid, "RssShmem");
	f->region_kb = region_kb(vr);
}

/* Starts `lifeprobe child` on kill_dev; fds: [0] read from it, [1] write to it. */
static pid_t spawn_child(const char *self, const char *kill_dev, int fds[2])
{
	int to_child[2], from_child[2];
	char a1[16], a2[16], a3[16];
	pid_t pid;

	CHECK(pipe2(to_child, O_CLOEXEC) == 0 && pipe2(from_child, O_CLOEXEC) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* only the child's ends survive the exec */
		if (fcntl(to_child[0], F_SETFD, 0) || fcntl(from_child[1], F_SETFD, 0))
			_exit(126);
		snprintf(a1, sizeof(a1), "%d", to_child[0]);
		snprintf(a2, sizeof(a2), "%d", from_child[1]);
		snprintf(a3, sizeof(a3), "%d", rnr_timer_opt);
		execl(self, self, "child", "--dev", kill_dev, "--rfd", a1, "--wfd", a2, "--rnr-timer", a3,
		      (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	fds[0] = from_child[0];
	fds[1] = to_child[1];
	return pid;
}

/* Waits until kill_dev shows no object (at most RELEASE_MS after t_kill).
 * Returns the milliseconds it took, or -1 (js holds the last answer). */
static long long wait_released(const char *kill_dev, uint64_t t_kill, char *js, size_t len)
{
	uint64_t end = t_kill + RELEASE_MS * t_scale;

	for (;;) {
		if (vrnic_objects(kill_dev, js, len) == 0)
			return (long long)(t_now_ms() - t_kill);
		if (t_now_ms() > end)
			return -1;
		t_sleep_ms(5);
	}
}

/* A child killed at a random moment of its setup (opening the device,
 * registering memory, creating the CQ and QP, waiting for us): whatever it
 * had must go too.  0 or 1 (failed). */
static int early_kill(const char *self, const char *kill_dev, int iter, unsigned int *seed,
		      uint64_t *release_max, int progress)
{
	int fds[2], status;
	char js[4096];
	pid_t pid = spawn_child(self, kill_dev, fds);
	long delay_us = (long)(rand_r(seed) % 25000);
	struct timespec ts = { 0, delay_us * 1000 };
	uint64_t t_kill;
	long long released;

	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	t_kill = t_now_ms();
	CHECK(waitpid(pid, &status, 0) == pid);
	close(fds[0]);
	close(fds[1]);
	released = wait_released(kill_dev, t_kill, js, sizeof(js));
	if (progress || released < 0)
		printf("early kill %d (%ld us after the start): released after %lld ms%s\n", iter, delay_us,
		       released, released < 0 ? " FAILED" : "");
	if (released < 0) {
		printf("early kill %d: %s still shows objects %u ms after the kill: %s\n", iter, kill_dev,
		       RELEASE_MS, js);
		return 1;
	}
	if ((uint64_t)released > *release_max)
		*release_max = (uint64_t)released;
	return 0;
}

/* A failed iteration: the child goes, our QP is flushed (error state) and
 * destroyed, so that the next iteration starts with an empty CQ. */
static void abandon(struct stream *s, pid_t pid, int fds[2])
{
	struct ibv_qp_attr a;
	uint64_t end = t_now_ms() + DRAIN_MS;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fds[0]);
	close(fds[1]);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(s->qp, &a, IBV_QP_STATE);
	s->stopped = 1;
	while ((s->sends_out || s->recvs_out) && t_now_ms() < end)
		pump(s, 0);
	drain_async(s, 0);
	CHECK_OK(ibv_destroy_qp(s->qp));
}

/* One iteration: 0 or the number of failed requirements. */
static int one_kill(struct stream *s, const char *self, const char *kill_dev, int iter,
		    uint64_t *fatal_max, uint64_t *release_max, int progress)
{
	int fds[2], fails = 0, status;
	char line[512], js[4096];
	pid_t pid;
	uint64_t t_kill, end;
	long long released;

	stream_new_qp(s);
	pid = spawn_child(self, kill_dev, fds);
	if (read_line_fd(fds[0], line, sizeof(line), 10000) || parse_info(line, &s->peer)) {
		printf("iteration %d: no info from the child\n", iter);
		abandon(s, pid, fds);
		return 1;
	}
	/* RTS before the child learns our QPN; we send once it says R(eady) */
	stream_connect(s);
	info_line(s, line, sizeof(line));
	CHECK(write(fds[1], line, strlen(line)) == (ssize_t)strlen(line));
	if (read_line_fd(fds[0], line, sizeof(line), 10000) || line[0] != 'R') {
		printf("iteration %d: the child did not connect\n", iter);
		abandon(s, pid, fds);
		return 1;
	}

	/* stream both ways until the child says it streams, and we do too */
	end = t_now_ms() + 10000;
	for (int child_ok = 0; !(child_ok && s->send_ok >= 16 && s->recv_ok >= 8);) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };

		pump(s, 1);
		if (!child_ok && poll(&p, 1, 0) == 1)
			child_ok = read_line_fd(fds[0], line, sizeof(line), 1000) == 0 &&
				   line[0] == 'S';
		if (s->stopped || t_now_ms() > end) {
			printf("iteration %d: the stream did not start (stopped %d: good sends %llu, receives %llu, "
			       "flushed %llu/%llu, retry exceeded %llu, other errors %llu)\n", iter, s->stopped,
			       (unsigned long long)s->send_ok, (unsigned long long)s->recv_ok,
			       (unsigned long long)s->flushed_send, (unsigned long long)s->flushed_recv,
			       (unsigned long long)s->retry_exc, (unsigned long long)s->other_err);
			abandon(s, pid, fds);
			return 1;
		}
	}
	pump(s, 1);             /* a full window in flight */
	kill(s->peer.pid, SIGKILL);
	t_kill = t_now_ms();
	CHECK(waitpid(pid, &status, 0) == pid);
	close(fds[0]);
	close(fds[1]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		printf("iteration %d: the child ended with status 0x%x before the kill\n", iter, status);
		fails++;
	}
	if (survive(s, t_kill, 0)) {
		printf("iteration %d: the survivor's requirements failed (above)\n", iter);
		fails++;
	}
	if (s->fatal_ms && s->fatal_ms - t_kill > *fatal_max)
		*fatal_max = s->fatal_ms - t_kill;
	CHECK_OK(ibv_destroy_qp(s->qp));

	/* the killed context's resources are gone at the daemon */
	released = wait_released(kill_dev, t_kill, js, sizeof(js));
	if (released < 0) {
		printf("iteration %d: %s still shows objects %u ms after the kill: %s\n", iter, kill_dev,
		       RELEASE_MS, js);
		fails++;
	} else if ((uint64_t)released > *release_max) {
		*release_max = (uint64_t)released;
	}
	if (progress)
		printf("kill %d: QP_FATAL after %lld ms, released after %lld ms%s\n", iter,
		       s->fatal_ms ? (long long)(s->fatal_ms - t_kill) : -1LL, released,
		       fails ? " FAILED" : "");
	return fails;
}

static int cmd_loop(const char *keep, const char *kill_dev, int iters, int warmup, const char *stop,
		    int progress, int early_every)
{
	unsigned int seed = (unsigned int)getpid();
	int early = 0;
	struct stream s;
	struct daemon_figures w, e;
	uint64_t fatal_max = 0, release_max = 0, t0 = t_now_ms();
	int pid = daemon_pid(), fails = 0, done = 0;
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	CHECK(n > 0);
	self[n] = 0;
	if (pid <= 0)
		t_fail("cannot reach the daemon's admin socket ($UNIRDMA_STATE_DIR/admin.sock)");
	memset(&w, 0, sizeof(w));
	stream_open(&s, keep);
	printf("loop: keeping %s, killing a peer on %s %d times (daemon pid %d)\n", keep, kill_dev,
	       iters, pid);
	for (int i = 1; i <= iters; i++) {
		int f = one_kill(&s, self, kill_dev, i, &fatal_max, &release_max, progress);

		if (early_every > 0 && i % early_every == 0) {
			early++;
			f += early_kill(self, kill_dev, early, &seed, &release_max, progress);
		}
		fails += f;
		done = i;
		if (fails > 3) {
			printf("loop: giving up after %d failures\n", fails);
			break;
		}
		if (i == warmup) {
			figures(pid, kill_dev, &w);
			printf("loop: after %d warm-up kills: daemon fds %ld, VmRSS %ld kB (anon %ld, shmem %ld), region %ld kB\n",
			       i, w.fds, w.rss_kb, w.anon_kb, w.shmem_kb, w.region_kb);
		}
		if (i % 25 == 0)
			printf("loop: %d kills, %.1f s, slowest QP_FATAL %llu ms, slowest release %llu ms\n", i,
			       (double)(t_now_ms() - t0) / 1000, (unsigned long long)fatal_max,
			       (unsigned long long)release_max);
		if (stop && access(stop, F_OK) == 0)
			break;
	}
	stream_close(&s);
	figures(pid, kill_dev, &e);
	printf("KILLS %d mid-transfer and %d during setup in %.1f s; failures %d; slowest QP_FATAL %llu ms; "
	       "slowest release %llu ms\n", done, early, (double)(t_now_ms() - t0) / 1000, fails,
	       (unsigned long long)fatal_max, (unsigned long long)release_max);
	if (done >= warmup && warmup > 0) {
		printf("DAEMON fds %ld %ld\n", w.fds, e.fds);
		printf("DAEMON rss_kb %ld %ld\n", w.rss_kb, e.rss_kb);
		printf("DAEMON anon_kb %ld %ld\n", w.anon_kb, e.anon_kb);
		printf("DAEMON shmem_kb %ld %ld\n", w.shmem_kb, e.shmem_kb);
		printf("DAEMON region_kb %ld %ld\n", w.region_kb, e.region_kb);
	}
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------- hold */

static const char *hang_what = "?";

static void on_alarm(int sig)
{
	char msg[160];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "FAIL: HANG: %s did not return within 5 s\n", hang_what);
	if (write(1, msg, (size_t)n) < 0)
		_exit(4);
	_exit(3);
}

#define GUARD(what) do { hang_what = (what); alarm(5 * t_scale); } while (0)
#define UNGUARD() alarm(0)

static uint64_t epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int cmd_hold(int churn, const char *linger, int timeout_s)
{
	struct t_dev d;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *x, *y;
	struct ibv_mr *mr;
	struct ibv_port_attr pa;
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	struct sigaction sa;
	uint8_t *buf;
	uint64_t end, t_fatal = 0;
	int fails = 0, churned = 0, churn_failed = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);

	GUARD("setup");
	t_open(&d, 0);
	buf = t_map(S_BUF);
	mr = t_reg(d.pd, buf, S_BUF, T_ALL_ACCESS);
	ch = t_channel(&d);
	cq = t_cq(&d, 256, ch);
	x = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 0, NULL);
	y = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 0, NULL);
	t_rc_connect(&d, x, &d, y, NULL);
	for (int i = 0; i < 10; i++) {
		struct ibv_sge r = t_sge(buf + 4096, 4096, mr->lkey), s = t_sge(buf, 4096, mr->lkey);

		t_fill(buf, 4096, 7, (size_t)i);
		CHECK_OK(t_post_recv(y, 100 + (uint64_t)i, &r, 1));
		CHECK_OK(t_post(x, (uint64_t)i, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED, 0, 0, 0));
		for (int k = 0; k < 2; k++) {
			t_wait_wc(cq, &wc);
			CHECK_WC(&wc, IBV_WC_SUCCESS, T_ANY_OPCODE);
		}
		CHECK_DATA(buf + 4096, 4096, 7, (size_t)i);
	}
	/* leave receives posted and a CQ armed, as a live application would */
	for (int i = 0; i < 8; i++) {
		struct ibv_sge r = t_sge(buf + 8192 + 1024 * (size_t)i, 1024, mr->lkey);

		CHECK_OK(t_post_recv(x, 200 + (uint64_t)i, &r, 1));
	}
	CHECK_OK(ibv_req_notify_cq(cq, 0));
	CHECK(fcntl(d.ctx->async_fd, F_SETFL, fcntl(d.ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0);
	UNGUARD();
	printf("READY pid %d: %s, loopback RC pair 0x%x <-> 0x%x moved 10 x 4 KiB\n", (int)getpid(),
	       d.name, x->qp_num, y->qp_num);
	fflush(stdout);

	end = t_now_ms() + (uint64_t)timeout_s * 1000;
	/* until the event came and, with --churn, a control verb failed */
	while ((!t_fatal || (churn && !churn_failed)) && t_now_ms() < end) {
		struct pollfd p = { .fd = d.ctx->async_fd, .events = POLLIN };

		if (churn && !churn_failed) {
			struct ibv_cq *c2;

			GUARD("ibv_create_cq while the daemon goes away");
			c2 = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
			if (!c2) {
				churn_failed = 1;
				printf("CHURN-FAILED epoch_ms=%llu errno=%d (%s) after %d create/destroy pairs\n",
				       (unsigned long long)epoch_ms(), errno, strerror(errno), churned);
			} else {
				GUARD("ibv_destroy_cq while the daemon goes away");
				if (ibv_destroy_cq(c2) == 0)
					churned++;
			}
			UNGUARD();
		}
		if (t_fatal || poll(&p, 1, churn && !churn_failed ? 0 : 20) <= 0)
			continue;
		GUARD("ibv_get_async_event");
		while (ibv_get_async_event(d.ctx, &ev) == 0) {
			if (ev.event_type == IBV_EVENT_DEVICE_FATAL) {
				t_fatal = epoch_ms();
				printf("FATAL epoch_ms=%llu\n", (unsigned long long)t_fatal);
			} else {
				printf("async event %s (ignored)\n", ibv_event_type_str(ev.event_type));
			}
			ibv_ack_async_event(&ev);
		}
		UNGUARD();
	}
	if (!t_fatal) {
		printf("FAIL: no IBV_EVENT_DEVICE_FATAL within %d s\n", timeout_s);
		return 1;
	}
	if (churn && !churn_failed) {
		printf("FAIL: ibv_create_cq kept working %d s after IBV_EVENT_DEVICE_FATAL\n", timeout_s);
		fails++;
	}

#define MUST_FAIL(what, failed)							\
	do {									\
		GUARD(what);							\
		uint64_t t_ = t_now_ms();					\
		int f_ = (failed);						\
		UNGUARD();							\
		if (f_) {							\
			printf("  ok: %s fails (errno %d, %llu ms)\n", what, errno, \
			       (unsigned long long)(t_now_ms() - t_));		\
		} else {							\
			printf("  FAIL: %s succeeded on a dead device\n", what); \
			fails++;						\
		}								\
	} while (0)

	printf("after DEVICE_FATAL:\n");
	errno = 0;
	MUST_FAIL("ibv_alloc_pd", ibv_alloc_pd(d.ctx) == NULL);
	MUST_FAIL("ibv_reg_mr", ibv_reg_mr(d.pd, buf + 65536, 65536, IBV_ACCESS_LOCAL_WRITE) == NULL);
	MUST_FAIL("ibv_create_cq", ibv_create_cq(d.ctx, 16, NULL, NULL, 0) == NULL);
	{
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		MUST_FAIL("ibv_create_qp", ibv_create_qp(d.pd, &ia) == NULL);
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	MUST_FAIL("ibv_modify_qp", ibv_modify_qp(x, &qa, IBV_QP_STATE) != 0);
	MUST_FAIL("ibv_query_qp", ibv_query_qp(x, &qa, IBV_QP_STATE, &qia) != 0);
	GUARD("ibv_query_port");
	if (ibv_query_port(d.ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
		printf("  FAIL: port 1 still reads ACTIVE\n");
		fails++;
	} else {
		printf("  ok: port 1 is not ACTIVE\n");
	}
	/* Work still outstanding (8 receives on x, and a send posted now) must
	 * end in errors: a program waiting for its completions must not wait
	 * forever.  Either the WRs complete (flushed) or poll_cq fails. */
	GUARD("ibv_post_send");
	{
		struct ibv_sge s = t_sge(buf, 64, mr->lkey);
		int rc = t_post(x, 999, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED, 0, 0, 0);
		int want = 8 + (rc == 0), got = 0, good = 0, neg = 0;
		uint64_t t0 = t_now_ms(), until = t0 + 1000 * t_scale;

		printf("  ibv_post_send on the dead device returned %d\n", rc);
		GUARD("ibv_poll_cq");
		while (got < want && t_now_ms() < until) {
			int n = ibv_poll_cq(cq, 1, &wc);

			if (n < 0) {
				neg = n;
				break;
			}
			if (!n) {
				t_sleep_ms(1);
				continue;
			}
			got++;
			if (wc.status == IBV_WC_SUCCESS)
				good++;
		}
		UNGUARD();
		if (neg)
			printf("  ok: ibv_poll_cq fails (%d) after %llu ms\n", neg,
			       (unsigned long long)(t_now_ms() - t0));
		else if (got == want && !good)
			printf("  ok: all %d outstanding work requests completed in error within %llu ms\n", want,
			       (unsigned long long)(t_now_ms() - t0));
		else {
			printf("  FAIL: %d of %d outstanding work requests completed (%d successfully) within 1 s, "
			       "and ibv_poll_cq reports no error: a program waiting for them hangs\n", got, want, good);
			fails++;
		}
	}

	if (linger) {
		printf("LINGER: keeping the dead context until %s exists\n", linger);
		fflush(stdout);
		end = t_now_ms() + 120000;
		while (access(linger, F_OK) && t_now_ms() < end)
			t_sleep_ms(20);
	}

	GUARD("ibv_destroy_qp");
	printf("  destroy_qp %d %d", ibv_destroy_qp(x), ibv_destroy_qp(y));
	GUARD("ibv_destroy_cq");
	printf(", destroy_cq %d", ibv_destroy_cq(cq));
	GUARD("ibv_destroy_comp_channel");
	printf(", destroy_comp_channel %d", ibv_destroy_comp_channel(ch));
	GUARD("ibv_dereg_mr");
	printf(", dereg_mr %d", ibv_dereg_mr(mr));
	GUARD("ibv_dealloc_pd");
	printf(", dealloc_pd %d", ibv_dealloc_pd(d.pd));
	GUARD("ibv_close_device");
	printf(", close_device %d: no hang\n", ibv_close_device(d.ctx));
	UNGUARD();
	printf("HOLD %s\n", fails ? "FAILED" : "OK");
	return fails ? 1 : 0;
}

/* --------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: lifeprobe stream --me FILE --peer FILE [--survive] [--timeout S]\n"
		"       lifeprobe loop --keep DEV --kill DEV [--iters N] [--warmup W] [--stop FILE] [--progress]\n"
		"                      [--early-every K]\n"
		"       lifeprobe hold [--churn] [--linger FILE] [--timeout S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "me", required_argument, NULL, 'm' },
		{ "peer", required_argument, NULL, 'p' },
		{ "survive", no_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "keep", required_argument, NULL, 'k' },
		{ "kill", required_argument, NULL, 'K' },
		{ "dev", required_argument, NULL, 'd' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "stop", required_argument, NULL, 'S' },
		{ "rfd", required_argument, NULL, 'r' },
		{ "wfd", required_argument, NULL, 'W' },
		{ "churn", no_argument, NULL, 'c' },
		{ "linger", required_argument, NULL, 'l' },
		{ "progress", no_argument, NULL, 'P' },
		{ "early-every", required_argument, NULL, 'E' },
		{ "rnr-timer", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	const char *me = NULL, *peer = NULL, *keep = NULL, *killdev = NULL, *dev = NULL;
	const char *stop = NULL, *linger = NULL, *mode, *sc;
	int survivor = 0, timeout_s = 30, iters = 200, warmup = 20, rfd = -1, wfd = -1, churn = 0, c;
	int progress = 0, early_every = 0;

	if (argc < 2)
		usage();
	mode = argv[1];
	t_name = "lifeprobe";
	sc = getenv("UNIRDMA_TEST_TIME_SCALE");
	if (sc && atoi(sc) > 1)
		t_scale = (unsigned int)atoi(sc);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm': me = optarg; break;
		case 'p': peer = optarg; break;
		case 's': survivor = 1; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'k': keep = optarg; break;
		case 'K': killdev = optarg; break;
		case 'd': dev = optarg; break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 'S': stop = optarg; break;
		case 'r': rfd = atoi(optarg); break;
		case 'W': wfd = atoi(optarg); break;
		case 'c': churn = 1; break;
		case 'l': linger = optarg; break;
		case 'P': progress = 1; break;
		case 'E': early_every = atoi(optarg); break;
		case 'R': rnr_timer_opt = atoi(optarg) & 31; break;
		default: usage();
		}
	}
	if (!strcmp(mode, "stream") && me && peer)
		return cmd_stream(me, peer, survivor, timeout_s);
	if (!strcmp(mode, "loop") && keep && killdev)
		return cmd_loop(keep, killdev, iters, warmup, stop, progress, early_every);
	if (!strcmp(mode, "child") && dev && rfd >= 0 && wfd >= 0)
		return cmd_child(dev, rfd, wfd);
	if (!strcmp(mode, "hold"))
		return cmd_hold(churn, linger, timeout_s);
	usage();
	return 2;
}

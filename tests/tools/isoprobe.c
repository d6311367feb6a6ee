/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* isoprobe: tenant-isolation probes for tests/integration/isolation.sh.
 *
 *   isoprobe victim --info FILE --go FILE [--expect intact|touched] [--timeout S]
 *   isoprobe attack --info FILE --expect blocked|ok [--gid GID]... ROUTE...
 *
 * victim: registers a 64 KiB buffer holding a known pattern with
 * REMOTE_READ|REMOTE_WRITE|REMOTE_ATOMIC, creates an RC QP (access flags
 * granting everything) and a UD QP (RTS, Q_Key V_QKEY), posts receives on
 * both, and writes one line to FILE (and stdout):
 *   VICTIM rc_qpn=0x.. ud_qpn=0x.. rkey=0x.. addr=0x.. len=N qkey=0x.. gid=::ffff:a.b.c.d
 * The attacker answers with FILE.attacker (ATTACKER rc_qpn=0x.. gid=..): the
 * victim connects its RC QP to that QP (RTR, RTS; as if the attacker had
 * talked it into it, e.g. over TCP), so that an RC responder's rule "only my
 * connected peer" does not stop the attack and tenant isolation alone must,
 * and then creates FILE.ready.  Then it waits until the file --go exists
 * (which may also come first: then the RC QP stays in INIT) and checks:
 *   intact   the buffer and the receive buffers are byte for byte unchanged,
 *            no completion arrived, both QPs are still in RTS;
 *   touched  what a same-tenant "attack" (expect ok) leaves: the write and
 *            write-with-imm windows hold the attacker's pattern, the atomics
 *            took effect, the rest is unchanged, receives completed with the
 *            attacker's bytes.
 *
 * attack: reads FILE, creates its RC QP, hands it to the victim (unless
 * --blind: a brute-forcer the victim knows nothing of) and waits for
 * FILE.ready; then goes through the ROUTEs.  Every RC attempt resets that QP
 * and connects it anew (timeout 6 = 262 us, retry_cnt 2, so an unreachable
 * peer costs under a millisecond; an attempt that takes more than 1 s fails)
 * and tries RDMA WRITE, WRITE_WITH_IMM, READ, SEND, SEND_WITH_IMM,
 * CMP_AND_SWP and FETCH_AND_ADD against the victim's QPN, rkey and address.
 *   grh       GRH to the victim's GID
 *   nogrh     no GRH (is_global 0, dlid 0): by QPN alone
 *   own       GRH to each --gid (default: our own GID), i.e. an address of
 *             the attacker's own tenant, with the victim's QPN
 *   ud        UD SENDs with the victim's Q_Key to its UD QPN, with a GRH to
 *             its GID, without a GRH, and with a GRH to each --gid
 *   guess=N   every QPN within N of the victim's RC QPN (our own excepted):
 *             RDMA WRITE without GRH and RDMA READ with GRH using the
 *             victim's rkey, and UD SENDs with the victim's Q_Key
 *   keys      the victim's rkey replayed inside our own tenant (RC loopback
 *             pair: READ and WRITE must fail with a remote access error) and
 *             used as a local key (SEND from the victim's address: local
 *             protection error); nothing of the victim's may show up
 * --expect blocked: every RC attempt must end with IBV_WC_RETRY_EXC_ERR and
 * bring nothing back (READ and atomic targets keep their fill bytes);
 * --expect ok: every attempt succeeds and returns the victim's data.
 * Exit 0 when everything was as expected, 1 otherwise.
 */
#include "helpers.c"

#include <arpa/inet.h>
#include <getopt.h>

#define BUF_LEN    65536u
#define V_SEED     0x51c7u      /* the victim's pattern */
#define A_SEED     0xa77au      /* the attacker's pattern */
#define OFF_WRITE  0u
#define OFF_WIMM   4096u
#define OFF_CAS    8192u
#define OFF_FAA    8200u
#define OFF_READ   16384u
#define RDMA_LEN   4096u
#define MSG_LEN    64u
#define NRECV      32u
#define RECV_SLOT  256u
#define V_QKEY     0x1badcafeu
#define A_QKEY     0x22222222u
#define CAS_SWAP   0x5357415050454421ull
#define FAA_ADD    0x1000001ull
#define FILL_BYTE  0xa5
#define RECV_FILL  0xee
#define MAX_GIDS   8
#define MAX_OWN    256
/* Requester timers of every RC attempt: 4.096 us << 6 = 262 us per try,
 * three tries.  Real RC hardware reports an unreachable peer after
 * (retry_cnt + 1) transport timeouts; the engine gets 1 s (x the time
 * scale) for what should take under a millisecond. */
#define RC_TIMEOUT 6
#define RC_RETRY   2
#define RC_BUDGET_MS (1000u * t_scale)

static int failures;
static int attempts;
static uint64_t slowest_ms;     /* the slowest RC attempt: post to completion */

#define BAD(...)						\
	do {							\
		printf("  FAIL: " __VA_ARGS__);			\
		printf("\n");					\
		failures++;					\
	} while (0)

/* ------------------------------------------------------------ helpers */

static uint64_t pat64(uint32_t seed, size_t pos)
{
	uint64_t v;
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = t_pat(seed, pos + (size_t)i);
	memcpy(&v, b, 8);
	return v;
}

/* Index of the first byte of p[0..n) that differs from the pattern, or -1. */
static long pat_diff(const uint8_t *p, size_t n, uint32_t seed, size_t pos)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != t_pat(seed, pos + i))
			return (long)i;
	return -1;
}

static long byte_diff(const uint8_t *p, size_t n, uint8_t val)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != val)
			return (long)i;
	return -1;
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void parse_gid(const char *s, union ibv_gid *g)
{
	if (inet_pton(AF_INET6, s, g->raw) != 1)
		t_fail("not a GID: %s", s);
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
	default: return "?";
	}
}

static void open_dev(struct t_dev *d, const char *name)
{
	if (name)
		setenv("UNIRDMA_TEST_DEV0", name, 1);
	t_open(d, 0);
}

/* ------------------------------------------------------------- victim */

static int victim(const char *info, const char *go, const char *expect, int timeout_s)
{
	struct t_dev d;
	struct t_conn c;
	struct t_peer peer;
	struct ibv_mr *mr, *rmr;
	struct ibv_cq *cq;
	struct ibv_qp *rc, *ud;
	uint8_t *buf, *rbuf;
	char gid[64], tmp[512], line[256], pgid[80];
	FILE *f;
	uint64_t end;
	int touched = !strcmp(expect, "touched"), connected = 0;
	long at;

	if (!touched && strcmp(expect, "intact"))
		t_fail("--expect intact|touched");
	open_dev(&d, getenv("ISOPROBE_DEV"));
	buf = t_map(BUF_LEN);
	t_fill(buf, BUF_LEN, V_SEED, 0);
	mr = t_reg(d.pd, buf, BUF_LEN, T_ALL_ACCESS);
	rbuf = t_map(2 * NRECV * RECV_SLOT);
	memset(rbuf, RECV_FILL, 2 * NRECV * RECV_SLOT);
	rmr = t_reg(d.pd, rbuf, 2 * NRECV * RECV_SLOT, IBV_ACCESS_LOCAL_WRITE);
	cq = t_cq(&d, 256, NULL);
	rc = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 0, NULL);
	ud = t_qp(&d, IBV_QPT_UD, cq, cq, NULL, 0, NULL);

	/* RC: INIT now; connected below to the attacker's QP, whatever tenant
	 * it is in, so that the only thing between them is tenant isolation
	 * (an RC responder takes packets from its connected peer only). */
	t_conn_default(&c);
	c.max_rd_atomic = 16;
	t_rc_init(rc, &c);
	t_ud_ready(ud, V_QKEY);
	for (uint32_t i = 0; i < NRECV; i++) {
		struct ibv_sge s1 = t_sge(rbuf + i * RECV_SLOT, RECV_SLOT, rmr->lkey);
		struct ibv_sge s2 = t_sge(rbuf + (NRECV + i) * RECV_SLOT, RECV_SLOT, rmr->lkey);

		CHECK_OK(t_post_recv(rc, 0x10000 | i, &s1, 1));
		CHECK_OK(t_post_recv(ud, 0x20000 | i, &s2, 1));
	}

	gid_str(&d.gid, gid, sizeof(gid));
	snprintf(tmp, sizeof(tmp), "%s.tmp", info);
	f = fopen(tmp, "w");
	CHECK(f);
	fprintf(f, "VICTIM rc_qpn=0x%x ud_qpn=0x%x rkey=0x%x addr=0x%llx len=%u qkey=0x%x gid=%s\n",
		rc->qp_num, ud->qp_num, mr->rkey, (unsigned long long)(uintptr_t)buf, BUF_LEN,
		V_QKEY, gid);
	CHECK(fclose(f) == 0);
	CHECK(rename(tmp, info) == 0);
	printf("VICTIM rc_qpn=0x%x ud_qpn=0x%x rkey=0x%x addr=0x%llx len=%u qkey=0x%x gid=%s\n",
	       rc->qp_num, ud->qp_num, mr->rkey, (unsigned long long)(uintptr_t)buf, BUF_LEN,
	       V_QKEY, gid);
	fflush(stdout);

	/* the attacker's RC QP (INFO.attacker), unless the go file comes first */
	end = t_now_ms() + (uint64_t)timeout_s * 1000;
	snprintf(tmp, sizeof(tmp), "%s.attacker", info);
	while (access(go, F_OK) != 0) {
		if (!connected && (f = fopen(tmp, "r"))) {
			memset(&peer, 0, sizeof(peer));
			if (fgets(line, sizeof(line), f) &&
			    sscanf(line, "ATTACKER rc_qpn=0x%x gid=%79s", &peer.qpn, pgid) == 2) {
				parse_gid(pgid, &peer.gid);
				t_rc_rtr(rc, &d, &peer, &c);
				t_rc_rts(rc, &c);
				connected = 1;
				printf("victim: RC QP 0x%x connected to the attacker's QP 0x%x (%s)\n", rc->qp_num,
				       peer.qpn, pgid);
			}
			fclose(f);
			if (connected) {
				snprintf(line, sizeof(line), "%s.ready", info);
				f = fopen(line, "w");
				CHECK(f);
				fclose(f);
			}
		}
		if (t_now_ms() > end)
			t_fail("%s did not appear within %d s", go, timeout_s);
		t_sleep_ms(5);
	}
	/* let anything still in flight land before we look */
	t_sleep_ms(50);

	printf("victim: checking (%s)\n", expect);
	{
		struct ibv_wc wc;
		int rc_ok = 0, ud_ok = 0, other = 0, n;

		while ((n = ibv_poll_cq(cq, 1, &wc)) > 0) {
			uint32_t idx = (uint32_t)(wc.wr_id & 0xffff);
			uint8_t *slot = rbuf + ((wc.wr_id >> 16) == 2 ? NRECV + idx : idx) * RECV_SLOT;

			printf("  completion: wr_id 0x%llx status %s opcode %d byte_len %u src_qp 0x%x\n",
			       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode,
			       wc.byte_len, wc.src_qp);
			if (!touched) {
				BAD("a receive completed on the victim (wr_id 0x%llx)",
				    (unsigned long long)wc.wr_id);
				continue;
			}
			if (wc.status != IBV_WC_SUCCESS || idx >= NRECV) {
				other++;
				continue;
			}
			if ((wc.wr_id >> 16) == 1) {
				/* SEND, SEND_WITH_IMM: the payload; WRITE_WITH_IMM: nothing */
				if (wc.opcode == IBV_WC_RECV &&
				    (wc.byte_len != MSG_LEN || pat_diff(slot, MSG_LEN, A_SEED, 0) >= 0))
					BAD("RC receive 0x%llx: wrong length or data", (unsigned long long)wc.wr_id);
				rc_ok++;
			} else if ((wc.wr_id >> 16) == 2) {
				if (wc.byte_len != MSG_LEN + 40 || pat_diff(slot + 40, MSG_LEN, A_SEED, 0) >= 0)
					BAD("UD receive 0x%llx: wrong length or data", (unsigned long long)wc.wr_id);
				ud_ok++;
			} else {
				other++;
			}
		}
		CHECK(n == 0);
		if (touched) {
			if (rc_ok < 3 || ud_ok < 1 || other)
				BAD("expected >= 3 good RC and >= 1 good UD receives, got %d RC, %d UD, %d others",
				    rc_ok, ud_ok, other);
			else
				printf("  ok: %d RC and %d UD receives with the attacker's data\n", rc_ok, ud_ok);
		} else {
			printf("  ok: no completion on the victim's CQ\n");
		}
	}
	if (!touched) {
		at = pat_diff(buf, BUF_LEN, V_SEED, 0);
		if (at >= 0)
			BAD("victim buffer changed at byte %ld (0x%02x, expected 0x%02x)", at, buf[at],
			    t_pat(V_SEED, (size_t)at));
		else
			printf("  ok: all %u bytes of the victim's buffer unchanged\n", BUF_LEN);
		at = byte_diff(rbuf, 2 * NRECV * RECV_SLOT, RECV_FILL);
		if (at >= 0)
			BAD("receive buffer changed at byte %ld", at);
		else
			printf("  ok: receive buffers untouched\n");
	} else {
		uint64_t cas, faa, orig_faa = pat64(V_SEED, OFF_FAA), k;

		if ((at = pat_diff(buf + OFF_WRITE, RDMA_LEN, A_SEED, 0)) >= 0)
			BAD("RDMA WRITE window: byte %ld is not the attacker's", at);
		if ((at = pat_diff(buf + OFF_WIMM, RDMA_LEN, A_SEED, OFF_WIMM)) >= 0)
			BAD("RDMA WRITE_WITH_IMM window: byte %ld is not the attacker's", at);
		memcpy(&cas, buf + OFF_CAS, 8);
		memcpy(&faa, buf + OFF_FAA, 8);
		if (cas != CAS_SWAP)
			BAD("CMP_AND_SWP target 0x%llx, expected 0x%llx", (unsigned long long)cas,
			    (unsigned long long)CAS_SWAP);
		k = (faa - orig_faa) / FAA_ADD;
		if ((faa - orig_faa) % FAA_ADD || k < 1 || k > 16)
			BAD("FETCH_AND_ADD target 0x%llx is not the original 0x%llx plus 1..16 x 0x%llx",
			    (unsigned long long)faa, (unsigned long long)orig_faa,
			    (unsigned long long)FAA_ADD);
		if ((at = pat_diff(buf + OFF_FAA + 8, BUF_LEN - OFF_FAA - 8, V_SEED, OFF_FAA + 8)) >= 0)
			BAD("byte %ld past the atomics changed", at + OFF_FAA + 8);
		if (!failures)
			printf("  ok: writes and atomics landed (%llu fetch-and-adds), the rest is unchanged\n",
			       (unsigned long long)k);
	}
	if (t_qp_state(rc) != (connected ? IBV_QPS_RTS : IBV_QPS_INIT) || t_qp_state(ud) != IBV_QPS_RTS)
		BAD("a victim QP changed state (RC %d, UD %d)", t_qp_state(rc), t_qp_state(ud));
	else
		printf("  ok: both victim QPs still in %s\n", connected ? "RTS" : "INIT and RTS");

	CHECK_OK(ibv_destroy_qp(rc));
	CHECK_OK(ibv_destroy_qp(ud));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_dereg_mr(rmr));
	t_close(&d);
	printf("VICTIM %s\n", failures ? "FAILED" : "OK");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------- attack */

struct vinfo {
	uint32_t rc_qpn, ud_qpn, rkey, qkey, len;
	uint64_t addr;
	union ibv_gid gid;
};

struct attacker {
	struct t_dev d;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_qp *ud;
	struct ibv_qp *rc;      /* our one RC QP: reset and reconnected for every attempt */
	struct vinfo v;
	int ok;                 /* expect ok (1) or blocked (0) */
	uint32_t own[MAX_OWN];  /* QPNs we created: guesses skip them */
	int nown;
	uint64_t cas_orig;
};

static void read_info(const char *path, struct vinfo *v)
{
	char line[512], gid[80];
	unsigned long long addr;
	FILE *f = fopen(path, "r");

	if (!f)
		t_fail("cannot open %s", path);
	if (!fgets(line, sizeof(line), f))
		t_fail("%s is empty", path);
	fclose(f);
	memset(v, 0, sizeof(*v));
	if (sscanf(line, "VICTIM rc_qpn=0x%x ud_qpn=0x%x rkey=0x%x addr=0x%llx len=%u qkey=0x%x gid=%79s",
		   &v->rc_qpn, &v->ud_qpn, &v->rkey, &addr, &v->len, &v->qkey, gid) != 7)
		t_fail("cannot parse %s: %s", path, line);
	v->addr = addr;
	parse_gid(gid, &v->gid);
}

static void note_own(struct attacker *a, uint32_t qpn)
{
	if (a->nown < MAX_OWN)
		a->own[a->nown++] = qpn;
}

static int is_own(const struct attacker *a, uint32_t qpn)
{
	for (int i = 0; i < a->nown; i++)
		if (a->own[i] == qpn)
			return 1;
	return 0;
}

static struct ibv_qp *new_rc(struct attacker *a)
{
	struct ibv_qp *qp = t_qp(&a->d, IBV_QPT_RC, a->cq, a->cq, NULL, 0, NULL);

	note_own(a, qp->qp_num);
	return qp;
}

/* RESET -> INIT -> RTR -> RTS towards (gid, qpn), with short timers. */
static void rc_connect_to(struct attacker *a, struct ibv_qp *qp, int is_global,
			  const union ibv_gid *gid, uint32_t qpn)
{
	struct t_conn c;
	struct t_peer p;
	struct ibv_qp_attr at;

	if (qp->state != IBV_QPS_RESET) {
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_RESET;
		CHECK_OK(ibv_modify_qp(qp, &at, IBV_QP_STATE));
	}
	t_conn_default(&c);
	c.is_global = is_global;
	c.timeout = RC_TIMEOUT;
	c.retry_cnt = RC_RETRY;
	c.rnr_retry = 1;
	c.min_rnr_timer = 1;
	memset(&p, 0, sizeof(p));
	if (gid)
		p.gid = *gid;
	p.qpn = qpn;
	t_rc_init(qp, &c);
	t_rc_rtr(qp, &a->d, &p, &c);
	t_rc_rts(qp, &c);
}

static int post_op(struct attacker *a, struct ibv_qp *qp, enum ibv_wr_opcode op,
		   uint64_t raddr_off, uint32_t rkey)
{
	struct ibv_sge s;
	uint64_t raddr = a->v.addr + raddr_off;

	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		t_fill(a->buf + raddr_off, RDMA_LEN, A_SEED, raddr_off);
		s = t_sge(a->buf + raddr_off, RDMA_LEN, a->mr->lkey);
		return t_post(qp, op, op, &s, 1, IBV_SEND_SIGNALED, raddr, rkey, 0x1234);
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		t_fill(a->buf + 32768, MSG_LEN, A_SEED, 0);
		s = t_sge(a->buf + 32768, MSG_LEN, a->mr->lkey);
		return t_post(qp, op, op, &s, 1, IBV_SEND_SIGNALED, 0, 0, 0x1234);
	case IBV_WR_RDMA_READ:
		memset(a->buf + raddr_off, FILL_BYTE, RDMA_LEN);
		s = t_sge(a->buf + raddr_off, RDMA_LEN, a->mr->lkey);
		return t_post(qp, op, op, &s, 1, IBV_SEND_SIGNALED, raddr, rkey, 0);
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		memset(a->buf + raddr_off, FILL_BYTE, 8);
		s = t_sge(a->buf + raddr_off, 8, a->mr->lkey);
		return t_post_atomic(qp, op, op, &s, IBV_SEND_SIGNALED, raddr, rkey,
				     op == IBV_WR_ATOMIC_CMP_AND_SWP ? a->cas_orig : FAA_ADD, CAS_SWAP);
	default:
		return EINVAL;
	}
}

/* Checks the local side of a finished attempt (READ and atomic results). */
static void check_result(struct attacker *a, const char *tag, enum ibv_wr_opcode op,
			 uint64_t off, const struct ibv_wc *wc, enum ibv_wc_status want)
{
	long at;

	if (wc->status != want) {
		BAD("[%s] %s: status %s, expected %s", tag, op_name(op), ibv_wc_status_str(wc->status),
		    ibv_wc_status_str(want));
		return;
	}
	if (op == IBV_WR_RDMA_READ) {
		if (want == IBV_WC_SUCCESS) {
			at = pat_diff(a->buf + off, RDMA_LEN, V_SEED, off);
			if (at >= 0) {
				BAD("[%s] RDMA_READ returned wrong data at byte %ld", tag, at);
				return;
			}
		} else if ((at = byte_diff(a->buf + off, RDMA_LEN, FILL_BYTE)) >= 0) {
			BAD("[%s] RDMA_READ failed but wrote byte %ld of our buffer (0x%02x; the victim's is 0x%02x)",
			    tag, at, a->buf[off + (size_t)at], t_pat(V_SEED, off + (size_t)at));
			return;
		}
	}
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		uint64_t got, orig = pat64(V_SEED, off);

		memcpy(&got, a->buf + off, 8);
		if (want != IBV_WC_SUCCESS) {
			if (byte_diff(a->buf + off, 8, FILL_BYTE) >= 0) {
				BAD("[%s] %s failed but returned 0x%llx", tag, op_name(op),
				    (unsigned long long)got);
				return;
			}
		} else if (op == IBV_WR_ATOMIC_CMP_AND_SWP ? (got != orig && got != CAS_SWAP)
			   : ((got - orig) % FAA_ADD != 0 || (got - orig) / FAA_ADD > 16)) {
			BAD("[%s] %s returned 0x%llx (original 0x%llx)", tag, op_name(op),
			    (unsigned long long)got, (unsigned long long)orig);
			return;
		}
	}
	printf("  [%s] %s: %s (as expected)\n", tag, op_name(op), ibv_wc_status_str(wc->status));
}

/* One op on a connected RC QP; waits for its completion. */
static void rc_try(struct attacker *a, struct ibv_qp *qp, const char *tag, enum ibv_wr_opcode op,
		   uint64_t off, uint32_t rkey, enum ibv_wc_status want, int quiet)
{
	struct ibv_wc wc;
	int rc;

	uint64_t t0, took;

	attempts++;
	t0 = t_now_ms();
	rc = post_op(a, qp, op, off, rkey);
	if (rc) {
		BAD("[%s] ibv_post_send(%s) returned %d", tag, op_name(op), rc);
		return;
	}
	if (!t_poll(a->cq, &wc, T_TIMEOUT_MS)) {
		BAD("[%s] %s: no completion within %d ms (the requester's retry budget is %u x %.3f ms)",
		    tag, op_name(op), T_TIMEOUT_MS, RC_RETRY + 1, (4096u << RC_TIMEOUT) / 1e6);
		/* a late completion would be taken for the next attempt's: stop */
		printf("ATTACK FAILED: stopped after %d attempts: a work request never completed\n", attempts);
		exit(1);
	}
	took = t_now_ms() - t0;
	if (took > slowest_ms)
		slowest_ms = took;
	if (took > RC_BUDGET_MS)
		BAD("[%s] %s: the completion (%s) took %llu ms; the requester's retry budget is %u x %.3f ms",
		    tag, op_name(op), ibv_wc_status_str(wc.status), (unsigned long long)took, RC_RETRY + 1,
		    (4096u << RC_TIMEOUT) / 1e6);
	if (wc.wr_id != (uint64_t)op)
		BAD("[%s] completion for wr_id %llu, expected %d", tag, (unsigned long long)wc.wr_id, op);
	if (quiet && wc.status == want) {
		/* guesses: only the local side needs a look */
		if (op == IBV_WR_RDMA_READ && byte_diff(a->buf + off, RDMA_LEN, FILL_BYTE) >= 0)
			BAD("[%s] RDMA_READ failed but wrote our buffer", tag);
		return;
	}
	check_result(a, tag, op, off, &wc, want);
}

static const enum ibv_wr_opcode rc_ops[] = {
	IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_SEND,
	IBV_WR_SEND_WITH_IMM, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
};

static uint64_t op_off(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return OFF_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return OFF_WIMM;
	case IBV_WR_RDMA_READ: return OFF_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return OFF_CAS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return OFF_FAA;
	default: return 0;
	}
}

/* Every RC op over a fresh QP each (an error moves a QP to the error state). */
static void rc_route(struct attacker *a, const char *tag, int is_global, const union ibv_gid *gid)
{
	char g[64] = "-";

	if (gid)
		gid_str(gid, g, sizeof(g));
	printf("route %s: RC to QPN 0x%x, %s%s\n", tag, a->v.rc_qpn,
	       is_global ? "GRH to " : "no GRH, dlid 0", is_global ? g : "");
	for (size_t i = 0; i < sizeof(rc_ops) / sizeof(rc_ops[0]); i++) {
		rc_connect_to(a, a->rc, is_global, gid, a->v.rc_qpn);
		rc_try(a, a->rc, tag, rc_ops[i], op_off(rc_ops[i]), a->v.rkey,
		       a->ok ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR, 0);
	}
}

static void ensure_ud(struct attacker *a)
{
	if (a->ud)
		return;
	a->ud = t_qp(&a->d, IBV_QPT_UD, a->cq, a->cq, NULL, 0, NULL);
	note_own(a, a->ud->qp_num);
	t_ud_ready(a->ud, A_QKEY);
}

static struct ibv_ah *make_ah(struct attacker *a, int is_global, const union ibv_gid *gid)
{
	struct ibv_ah_attr at;
	struct ibv_ah *ah;

	memset(&at, 0, sizeof(at));
	at.port_num = T_PORT;
	if (is_global) {
		at.is_global = 1;
		at.grh.dgid = *gid;
		at.grh.sgid_index = T_GID_INDEX;
		at.grh.hop_limit = 64;
	}
	ah = ibv_create_ah(a->d.pd, &at);
	CHECK(ah);
	return ah;
}

/* One UD SEND; the sender completes either way (unreliable), the victim
 * tells whether it arrived. */
static void ud_send(struct attacker *a, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s;
	struct ibv_wc wc;

	attempts++;
	t_fill(a->buf + 32768, MSG_LEN, A_SEED, 0);
	s = t_sge(a->buf + 32768, MSG_LEN, a->mr->lkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x5d;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	if (ibv_post_send(a->ud, &wr, &bad)) {
		BAD("UD ibv_post_send failed");
		return;
	}
	if (!t_poll(a->cq, &wc, T_TIMEOUT_MS)) {
		BAD("UD SEND: no completion");
		return;
	}
	if (wc.status != IBV_WC_SUCCESS)
		BAD("UD SEND to 0x%x: status %s", qpn, ibv_wc_status_str(wc.status));
}

static void ud_route(struct attacker *a, const union ibv_gid *gids, int ngids)
{
	struct ibv_ah *ah;
	char g[64];

	ensure_ud(a);
	gid_str(&a->v.gid, g, sizeof(g));
	printf("route ud: SEND to UD QPN 0x%x with Q_Key 0x%x, GRH to %s\n", a->v.ud_qpn, a->v.qkey, g);
	ah = make_ah(a, 1, &a->v.gid);
	ud_send(a, ah, a->v.ud_qpn, a->v.qkey);
	CHECK_OK(ibv_destroy_ah(ah));
	printf("route ud: SEND to UD QPN 0x%x with Q_Key 0x%x, no GRH\n", a->v.ud_qpn, a->v.qkey);
	ah = make_ah(a, 0, NULL);
	ud_send(a, ah, a->v.ud_qpn, a->v.qkey);
	CHECK_OK(ibv_destroy_ah(ah));
	for (int i = 0; i < ngids; i++) {
		gid_str(&gids[i], g, sizeof(g));
		printf("route ud: SEND to UD QPN 0x%x with Q_Key 0x%x, GRH to %s (own tenant)\n",
		       a->v.ud_qpn, a->v.qkey, g);
		ah = make_ah(a, 1, &gids[i]);
		ud_send(a, ah, a->v.ud_qpn, a->v.qkey);
		CHECK_OK(ibv_destroy_ah(ah));
	}
}

static void guess_route(struct attacker *a, uint32_t range)
{
	uint32_t lo = a->v.rc_qpn > range ? a->v.rc_qpn - range : 1, hi = a->v.rc_qpn + range;
	struct ibv_qp *qp;
	struct ibv_ah *ah_g, *ah_n;
	int tried = 0, skipped = 0;
	int before = failures;

	ensure_ud(a);
	qp = a->rc;
	printf("route guess: QPNs 0x%x..0x%x (RDMA WRITE without GRH, RDMA READ with GRH, UD SENDs)\n",
	       lo, hi);
	ah_g = make_ah(a, 1, &a->v.gid);
	ah_n = make_ah(a, 0, NULL);
	for (uint32_t q = lo; q <= hi; q++) {
		char tag[32];

		if (is_own(a, q)) {
			skipped++;
			continue;
		}
		snprintf(tag, sizeof(tag), "guess 0x%x", q);
		rc_connect_to(a, qp, 0, NULL, q);
		rc_try(a, qp, tag, IBV_WR_RDMA_WRITE, OFF_WRITE, a->v.rkey, IBV_WC_RETRY_EXC_ERR, 1);
		rc_connect_to(a, qp, 1, &a->v.gid, q);
		rc_try(a, qp, tag, IBV_WR_RDMA_READ, OFF_READ, a->v.rkey, IBV_WC_RETRY_EXC_ERR, 1);
		ud_send(a, ah_g, q, a->v.qkey);
		ud_send(a, ah_n, q, a->v.qkey);
		tried++;
	}
	CHECK_OK(ibv_destroy_ah(ah_g));
	CHECK_OK(ibv_destroy_ah(ah_n));
	printf("  [guess] %d QPNs tried (%d of our own skipped): %s\n", tried, skipped,
	       failures == before ? "every RC attempt ended in retry exceeded, no data came back"
				  : "FAILURES above");
}

/* The victim's keys replayed inside our own tenant. */
static void keys_route(struct attacker *a)
{
	struct ibv_qp *x, *y;
	struct t_conn c;
	struct ibv_sge s;
	struct ibv_wc wc;
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
						  IBV_WR_ATOMIC_FETCH_AND_ADD };

	printf("route keys: the victim's rkey 0x%x on an RC loopback pair of our own vRNIC\n", a->v.rkey);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		x = new_rc(a);
		y = new_rc(a);
		t_conn_default(&c);
		c.timeout = 8;
		c.retry_cnt = 2;
		t_rc_connect(&a->d, x, &a->d, y, &c);
		rc_try(a, x, "keys", ops[i], op_off(ops[i]), a->v.rkey, IBV_WC_REM_ACCESS_ERR, 0);
		CHECK_OK(ibv_destroy_qp(x));
		CHECK_OK(ibv_destroy_qp(y));
	}

	printf("route keys: the victim's rkey as a local key, the victim's address as the source\n");
	x = new_rc(a);
	y = new_rc(a);
	t_conn_default(&c);
	t_rc_connect(&a->d, x, &a->d, y, &c);
	{
		uint8_t *rb = a->buf + 40960;
		struct ibv_sge rs = t_sge(rb, 4096, a->mr->lkey);

		memset(rb, FILL_BYTE, 4096);
		CHECK_OK(t_post_recv(y, 0x77, &rs, 1));
		attempts++;
		s = t_sge((void *)(uintptr_t)a->v.addr, MSG_LEN, a->v.rkey);
		if (t_post(x, 0x76, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED, 0, 0, 0)) {
			printf("  [keys] SEND with a foreign lkey: refused by ibv_post_send (as good as an error)\n");
		} else if (!t_poll(a->cq, &wc, T_TIMEOUT_MS)) {
			BAD("[keys] SEND with a foreign lkey: no completion");
		} else {
			/* the receive on y may complete first if something went wrong */
			int got_recv = 0;

			do {
				if (wc.wr_id == 0x77) {
					if (wc.status == IBV_WC_SUCCESS) {
						got_recv = 1;
						BAD("[keys] our receive got %u bytes sent from the victim's address",
						    wc.byte_len);
					}
				} else if (wc.status == IBV_WC_SUCCESS) {
					BAD("[keys] SEND with the victim's key as lkey succeeded");
				} else {
					printf("  [keys] SEND with a foreign lkey: %s (as expected)\n",
					       ibv_wc_status_str(wc.status));
				}
			} while (t_poll(a->cq, &wc, 50));
			if (!got_recv && byte_diff(rb, 4096, FILL_BYTE) >= 0)
				BAD("[keys] our receive buffer changed");
		}
	}
	CHECK_OK(ibv_destroy_qp(x));
	CHECK_OK(ibv_destroy_qp(y));
}

static int attack(const char *info, const char *expect, const union ibv_gid *gids, int ngids,
		  char **routes, int nroutes, int blind)
{
	struct attacker a;
	union ibv_gid own_default[1];

	memset(&a, 0, sizeof(a));
	if (!strcmp(expect, "ok"))
		a.ok = 1;
	else if (strcmp(expect, "blocked"))
		t_fail("--expect blocked|ok");
	read_info(info, &a.v);
	open_dev(&a.d, getenv("ISOPROBE_DEV"));
	a.buf = t_map(BUF_LEN);
	memset(a.buf, FILL_BYTE, BUF_LEN);
	a.mr = t_reg(a.d.pd, a.buf, BUF_LEN, T_ALL_ACCESS);
	a.cq = t_cq(&a.d, 256, NULL);
	a.cas_orig = pat64(V_SEED, OFF_CAS);
	a.rc = new_rc(&a);
	if (!blind) {
		/* hand our RC QP to the victim, which connects to it */
		char path[512], g[64], line[256];
		uint64_t end = t_now_ms() + 30000;

		gid_str(&a.d.gid, g, sizeof(g));
		snprintf(line, sizeof(line), "ATTACKER rc_qpn=0x%x gid=%s\n", a.rc->qp_num, g);
		snprintf(path, sizeof(path), "%s.attacker.tmp", info);
		{
			FILE *f = fopen(path, "w");

			CHECK(f);
			fputs(line, f);
			CHECK(fclose(f) == 0);
		}
		snprintf(line, sizeof(line), "%s.attacker", info);
		CHECK(rename(path, line) == 0);
		snprintf(path, sizeof(path), "%s.ready", info);
		while (access(path, F_OK)) {
			if (t_now_ms() > end)
				t_fail("the victim did not connect to our QP within 30 s (%s)", path);
			t_sleep_ms(5);
		}
		printf("the victim's RC QP is connected to ours (0x%x)\n", a.rc->qp_num);
	}
	if (!ngids) {
		own_default[0] = a.d.gid;
		gids = own_default;
		ngids = 1;
	}
	{
		char vg[64], og[64];

		gid_str(&a.v.gid, vg, sizeof(vg));
		gid_str(&a.d.gid, og, sizeof(og));
		printf("attacker %s (GID %s) -> victim RC 0x%x UD 0x%x rkey 0x%x addr 0x%llx GID %s; expect %s\n",
		       a.d.name, og, a.v.rc_qpn, a.v.ud_qpn, a.v.rkey, (unsigned long long)a.v.addr, vg,
		       expect);
	}

	for (int r = 0; r < nroutes; r++) {
		const char *rt = routes[r];

		if (!strcmp(rt, "grh")) {
			rc_route(&a, "grh", 1, &a.v.gid);
		} else if (!strcmp(rt, "nogrh")) {
			rc_route(&a, "nogrh", 0, NULL);
		} else if (!strcmp(rt, "own")) {
			for (int i = 0; i < ngids; i++)
				rc_route(&a, "own", 1, &gids[i]);
		} else if (!strcmp(rt, "ud")) {
			ud_route(&a, a.ok ? NULL : gids, a.ok ? 0 : ngids);
		} else if (!strncmp(rt, "guess", 5)) {
			uint32_t n = rt[5] == '=' ? (uint32_t)strtoul(rt + 6, NULL, 0) : 64;

			if (a.ok)
				t_fail("guess needs --expect blocked");
			guess_route(&a, n);
		} else if (!strcmp(rt, "keys")) {
			keys_route(&a);
		} else {
			t_fail("unknown route %s", rt);
		}
	}
	if (a.ud)
		CHECK_OK(ibv_destroy_qp(a.ud));
	CHECK_OK(ibv_destroy_qp(a.rc));
	CHECK_OK(ibv_destroy_cq(a.cq));
	CHECK_OK(ibv_dereg_mr(a.mr));
	t_close(&a.d);
	printf("ATTACK %s: %d attempts, %d unexpected outcomes; slowest RC completion %llu ms\n",
	       failures ? "FAILED" : "OK", attempts, failures, (unsigned long long)slowest_ms);
	return failures ? 1 : 0;
}

/* --------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: isoprobe victim --info FILE --go FILE [--expect intact|touched] [--timeout S]\n"
		"       isoprobe attack --info FILE --expect blocked|ok [--blind] [--gid GID]... ROUTE...\n"
		"ROUTE: grh nogrh own ud guess[=N] keys\n"
		"$ISOPROBE_DEV picks the device by name (default: the first one)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "info", required_argument, NULL, 'i' },
		{ "go", required_argument, NULL, 'g' },
		{ "expect", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "gid", required_argument, NULL, 'G' },
		{ "blind", no_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	const char *info = NULL, *go = NULL, *expect = NULL, *mode;
	union ibv_gid gids[MAX_GIDS];
	int ngids = 0, timeout_s = 60, blind = 0, c;

	if (argc < 2)
		usage();
	mode = argv[1];
	t_name = "isoprobe";
	if (getenv("UNIRDMA_TEST_TIME_SCALE") && atoi(getenv("UNIRDMA_TEST_TIME_SCALE")) > 1)
		t_scale = (unsigned int)atoi(getenv("UNIRDMA_TEST_TIME_SCALE"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i': info = optarg; break;
		case 'g': go = optarg; break;
		case 'e': expect = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'B': blind = 1; break;
		case 'G':
			if (ngids == MAX_GIDS)
				usage();
			parse_gid(optarg, &gids[ngids++]);
			break;
		default: usage();
		}
	}
	if (!info)
		usage();
	if (!strcmp(mode, "victim")) {
		if (!go)
			usage();
		return victim(info, go, expect ? expect : "intact", timeout_s);
	}
	if (!strcmp(mode, "attack")) {
		if (!expect || optind >= argc)
			usage();
		return attack(info, expect, gids, ngids, argv + optind, argc - optind, blind);
	}
	usage();
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_multi: several users of one device.
 *
 * 1. Several processes: two children are forked BEFORE anything touches the
 *    verbs library; each opens device 0 itself, creates its QP, and they
 *    exchange (GID, QPN, rkey, address) over a socketpair. Child 0 does an
 *    RDMA_WRITE and a SEND into child 1, child 1 checks both and replies with
 *    a SEND. QP numbers differ between the processes (DESIGN.md 5: unique
 *    host-wide). The parent collects the exit codes (77 from both = skip).
 * 2. Several contexts in one process: device 0 opened twice; SEND,
 *    RDMA_WRITE and RDMA_READ between the two contexts; a third context
 *    opened, used and closed meanwhile does not disturb them; and an lkey of
 *    the other context's MR is refused (IBV_WC_LOC_PROT_ERR: keys belong to a
 *    PD, IBA 10.6.3.1).
 */
#include "helpers.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct info {
	union ibv_gid gid;
	uint32_t lid, qpn, rkey, pad;
	uint64_t addr;
};

static int write_full(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t r = write(fd, c, n);

		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* 1 = got it all, 0 = the peer is gone (it skipped or failed). */
static int read_full(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r <= 0)
			return 0;
		c += r;
		n -= (size_t)r;
	}
	return 1;
}

static void child(int role, int fd)
{
	struct t_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct info me, peer;
	struct t_peer tp;
	struct t_conn c;
	struct ibv_sge sg;
	struct ibv_wc wc;
	size_t P = t_page();
	uint8_t *buf, ok = 1;

	t_start(role ? "t_multi child 1" : "t_multi child 0");
	alarm(6 * t_scale);
	signal(SIGPIPE, SIG_IGN);	/* a vanished peer is an error return */
	t_open(&d, 0);
	cq = t_cq(&d, 16, NULL);
	qp = t_qp(&d, IBV_QPT_RC, cq, cq, NULL, 0, NULL);
	buf = t_map(2 * P);
	mr = t_reg(d.pd, buf, 2 * P, T_ALL_ACCESS);
	t_conn_default(&c);
	t_rc_init(qp, &c);
	/* A receive (legal from INIT on) for the other process's message. */
	sg = t_sge(buf, 1000, mr->lkey);
	CHECK_OK(t_post_recv(qp, 1, &sg, 1));

	memset(&me, 0, sizeof(me));
	me.gid = d.gid;
	me.lid = d.port_attr.lid;
	me.qpn = qp->qp_num;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	if (write_full(fd, &me, sizeof(me)) != 0 ||
	    !read_full(fd, &peer, sizeof(peer)))
		t_skip("the other process did not start");
	CHECK(peer.qpn != me.qpn);

	memset(&tp, 0, sizeof(tp));
	tp.gid = peer.gid;
	tp.lid = (uint16_t)peer.lid;
	tp.qpn = peer.qpn;
	t_rc_rtr(qp, &d, &tp, &c);
	t_rc_rts(qp, &c);
	/* Both sides at RTS before anyone sends. */
	CHECK(write_full(fd, &ok, 1) == 0);
	CHECK(read_full(fd, &ok, 1));

	if (role == 0) {
		t_fill(buf + P, 1500, 0x11, 0);
		t_fill(buf + P + 1500, 500, 0x12, 0);
		sg = t_sge(buf + P, 1500, mr->lkey);
		CHECK_OK(t_post(qp, 2, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
				peer.addr + P + 100, peer.rkey, 0));
		sg = t_sge(buf + P + 1500, 500, mr->lkey);
		CHECK_OK(t_post(qp, 3, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
		t_expect_wc(cq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		t_expect_wc(cq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND);
		t_expect_wc(cq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 300);
		CHECK_DATA(buf, 300, 0x13, 0);
	} else {
		t_expect_wc(cq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 500);
		CHECK_DATA(buf, 500, 0x12, 0);
		/* RC ordering: the write before the send is visible now. */
		CHECK_DATA(buf + P + 100, 1500, 0x11, 0);
		t_fill(buf + 1200, 300, 0x13, 0);
		sg = t_sge(buf + 1200, 300, mr->lkey);
		CHECK_OK(t_post(qp, 4, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
		t_expect_wc(cq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	/* Neither tears down while the other may still be working. */
	CHECK(write_full(fd, &ok, 1) == 0);
	CHECK(read_full(fd, &ok, 1));

	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dereg_mr(mr));
	t_close(&d);
	t_pass();
	exit(0);
}

static void processes(void)
{
	pid_t pid[2];
	int sv[2], st[2], done = 0;
	uint64_t end;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fflush(NULL);
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		CHECK(pid[r] >= 0);
		if (pid[r] == 0) {
			close(sv[1 - r]);
			child(r, sv[r]);
		}
	}
	close(sv[0]);
	close(sv[1]);

	end = t_now_ms() + 7000 * (uint64_t)t_scale;
	while (done < 2) {
		for (int r = 0; r < 2; r++) {
			int s;

			if (pid[r] > 0 && waitpid(pid[r], &s, WNOHANG) == pid[r]) {
				st[r] = s;
				pid[r] = 0;
				done++;
			}
		}
		if (done < 2 && t_now_ms() > end) {
			for (int r = 0; r < 2; r++)
				if (pid[r] > 0) {
					kill(pid[r], SIGKILL);
					waitpid(pid[r], NULL, 0);
				}
			t_fail("child processes did not finish");
		}
		t_sleep_ms(5);
	}
	for (int r = 0; r < 2; r++)
		if (!WIFEXITED(st[r]))
			t_fail("child %d killed by signal %d", r, WTERMSIG(st[r]));
	if (WEXITSTATUS(st[0]) == T_EXIT_SKIP && WEXITSTATUS(st[1]) == T_EXIT_SKIP)
		t_skip("no RDMA device");
	for (int r = 0; r < 2; r++)
		if (WEXITSTATUS(st[r]) != 0)
			t_fail("child %d exited with %d", r, WEXITSTATUS(st[r]));
	printf("ok two processes on one device\n");
}

static void contexts(void)
{
	struct t_dev X, Y, Z;
	struct ibv_cq *xcq, *ycq, *zcq;
	struct ibv_qp *x, *y, *zq;
	struct ibv_mr *xmr, *ymr;
	size_t P = t_page();
	uint8_t *xb = t_map(2 * P), *yb = t_map(2 * P);
	struct ibv_sge sg;
	struct ibv_wc wc;

	t_open(&X, 0);
	t_open(&Y, 0);
	CHECK(X.ctx != Y.ctx);
	xcq = t_cq(&X, 16, NULL);
	ycq = t_cq(&Y, 16, NULL);
	x = t_qp(&X, IBV_QPT_RC, xcq, xcq, NULL, 0, NULL);
	y = t_qp(&Y, IBV_QPT_RC, ycq, ycq, NULL, 0, NULL);
	CHECK(x->qp_num != y->qp_num);
	xmr = t_reg(X.pd, xb, 2 * P, T_ALL_ACCESS);
	ymr = t_reg(Y.pd, yb, 2 * P, T_ALL_ACCESS);
	t_rc_connect(&X, x, &Y, y, NULL);

	/* A third context comes and goes. */
	t_open(&Z, 0);
	zcq = t_cq(&Z, 4, NULL);
	zq = t_qp(&Z, IBV_QPT_RC, zcq, zcq, NULL, 0, NULL);
	CHECK(zq->qp_num != x->qp_num && zq->qp_num != y->qp_num);
	CHECK_OK(ibv_destroy_qp(zq));
	CHECK_OK(ibv_destroy_cq(zcq));
	t_close(&Z);

	/* SEND x -> y. */
	t_fill(xb, 2 * P, 0x21, 0);
	sg = t_sge(yb + 10, 800, ymr->lkey);
	CHECK_OK(t_post_recv(y, 1, &sg, 1));
	sg = t_sge(xb + P - 400, 800, xmr->lkey);
	CHECK_OK(t_post(x, 2, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(xcq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(ycq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 800);
	CHECK_DATA(yb + 10, 800, 0x21, P - 400);

	/* RDMA_WRITE y -> x, RDMA_READ x <- y. */
	t_fill(yb + P, P, 0x22, 0);
	sg = t_sge(yb + P, 1000, ymr->lkey);
	CHECK_OK(t_post(y, 3, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)xb + 3, xmr->rkey, 0));
	t_expect_wc(ycq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(xb + 3, 1000, 0x22, 0);
	sg = t_sge(xb + P, 700, xmr->lkey);
	CHECK_OK(t_post(x, 4, IBV_WR_RDMA_READ, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)yb + P + 50, ymr->rkey, 0));
	t_expect_wc(xcq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_DATA(xb + P, 700, 0x22, 50);

	/* y's lkey is not valid on x's QP (another context, another PD). */
	t_fill(yb, P, 0x23, 0);
	sg = t_sge(yb, 64, ymr->lkey);
	CHECK_OK(t_post(x, 5, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)yb + 100, ymr->rkey, 0));
	t_expect_wc(xcq, &wc, 5, IBV_WC_LOC_PROT_ERR, T_ANY_OPCODE);
	CHECK_DATA(yb, P, 0x23, 0);

	CHECK_OK(ibv_destroy_qp(x));
	CHECK_OK(ibv_destroy_qp(y));
	CHECK_OK(ibv_destroy_cq(xcq));
	CHECK_OK(ibv_destroy_cq(ycq));
	CHECK_OK(ibv_dereg_mr(xmr));
	CHECK_OK(ibv_dereg_mr(ymr));
	t_close(&X);
	t_close(&Y);
	printf("ok two contexts in one process\n");
}

int main(void)
{
	t_start("t_multi");
	processes();	/* first: the children must fork before any verbs call */
	contexts();
	t_pass();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_fork: fork() after memory registration.
 *
 * An application registers memory, connects a QP, then forks (without
 * ibv_fork_init; ibv_is_fork_initialized is IBV_FORK_UNNEEDED). What a Linux
 * RNIC gives it (pinned pages stay with the parent, the child gets a copy at
 * fork time) is the contract tested here:
 * - the child has its own copy of the registered buffer: an RDMA READ the
 *   parent does once the child runs does not show in the child's copy;
 * - the child writes all over its copy (the registered range and the rest of
 *   its pages) and exits normally with exit(); the parent's buffer does not
 *   change;
 * - the parent's QP and MR still work afterwards: the engine reads the bytes
 *   the parent writes after the fork (not a stale copy), and RDMA into the
 *   parent's MR lands in the parent's memory; SEND, RDMA_WRITE and
 *   RDMA_READ, data checked.
 * The MR is not page aligned, so the pages at its edges are shared with
 * unregistered bytes, which are checked too.
 */
#include "helpers.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NP 4

static size_t P;

static int wait_byte(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	return read(fd, &c, 1) == 1;
}

/* The child: check its copy, scribble on it, exit normally. */
static void child(uint8_t *abuf, int in, int out)
{
	char c = 1;

	alarm(5 * t_scale);
	if (write(out, &c, 1) != 1)	/* running: fork() has returned here */
		exit(4);
	if (!wait_byte(in, T_TIMEOUT_MS))
		exit(3);
	for (size_t i = 0; i < NP * P; i++)
		if (abuf[i] != t_pat(1, i)) {
			fprintf(stderr, "child: byte %zu of its copy changed after fork\n", i);
			exit(2);
		}
	memset(abuf, 0xCC, NP * P);
	if (write(out, &c, 1) != 1)
		exit(4);
	exit(0);
}

int main(void)
{
	struct t_dev A, B;
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	struct ibv_mr *amr, *bmr;
	uint8_t *abuf, *bbuf, *m;
	size_t mlen;
	struct ibv_sge sg;
	struct ibv_wc wc;
	int p2c[2], c2p[2], st = 0;
	char c = 1;
	pid_t pid;
	uint64_t end;

	t_start("t_fork");
	t_open(&A, 0);
	t_open(&B, 1);
	P = t_page();
	abuf = t_map(NP * P);
	bbuf = t_map(NP * P);
	m = abuf + 100;			/* the MR: [abuf + 100, abuf + 3P + 100) */
	mlen = 3 * P;
	amr = t_reg(A.pd, m, mlen, T_ALL_ACCESS);
	bmr = t_reg(B.pd, bbuf, NP * P, T_ALL_ACCESS);
	acq = t_cq(&A, 16, NULL);
	bcq = t_cq(&B, 16, NULL);
	a = t_qp(&A, IBV_QPT_RC, acq, acq, NULL, 0, NULL);
	b = t_qp(&B, IBV_QPT_RC, bcq, bcq, NULL, 0, NULL);
	t_rc_connect(&A, a, &B, b, NULL);

	/* Before the fork: it works. */
	t_fill(abuf, NP * P, 1, 0);
	sg = t_sge(m, (uint32_t)mlen, amr->lkey);
	CHECK_OK(t_post(a, 1, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)bbuf, bmr->rkey, 0));
	t_expect_wc(acq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(bbuf, mlen, 1, 100);

	CHECK(pipe(p2c) == 0 && pipe(c2p) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		child(abuf, p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);

	/* Once the child runs, the engine writes into the parent's pages only.
	 * (Waiting for the child keeps this independent of when exactly the
	 * child's copy is made during fork.) */
	if (!wait_byte(c2p[0], T_TIMEOUT_MS)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		t_fail("the child did not start (wait status 0x%x)", st);
	}
	t_fill(bbuf + 2 * P, P + 700, 2, 0);
	sg = t_sge(m + P - 300, P + 700, amr->lkey);
	CHECK_OK(t_post(a, 2, IBV_WR_RDMA_READ, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + 2 * P, bmr->rkey, 0));
	t_expect_wc(acq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_DATA(m + P - 300, P + 700, 2, 0);

	/* Let the child check its copy and scribble on it, then exit. */
	CHECK(write(p2c[1], &c, 1) == 1);
	if (!wait_byte(c2p[0], T_TIMEOUT_MS))
		printf("note: the child did not report back\n");
	end = t_now_ms() + T_TIMEOUT_MS;
	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (t_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			t_fail("the child did not exit");
		}
		t_sleep_ms(2);
	}
	if (WIFSIGNALED(st))
		t_fail("the child was killed by signal %d touching its copy of registered memory",
		       WTERMSIG(st));
	if (WEXITSTATUS(st) == 2)
		t_fail("the child's copy of registered memory showed the parent's RDMA after fork");
	CHECK_EQ(WEXITSTATUS(st), 0);

	/* The parent's memory: all as before, nothing of the child's 0xCC. */
	CHECK_DATA(abuf, 100 + P - 300, 1, 0);
	CHECK_DATA(m + P - 300, P + 700, 2, 0);
	CHECK_DATA(m + 2 * P + 400, NP * P - (100 + 2 * P + 400), 1, 100 + 2 * P + 400);

	/* The engine reads what the parent writes now. */
	t_fill(m, mlen, 3, 0);
	sg = t_sge(m, (uint32_t)mlen, amr->lkey);
	CHECK_OK(t_post(a, 3, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)bbuf + 10, bmr->rkey, 0));
	t_expect_wc(acq, &wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(bbuf + 10, mlen, 3, 0);

	/* SEND from the parent's buffer. */
	sg = t_sge(bbuf + 3 * P, 500, bmr->lkey);
	CHECK_OK(t_post_recv(b, 4, &sg, 1));
	sg = t_sge(m + 1000, 500, amr->lkey);
	CHECK_OK(t_post(a, 5, IBV_WR_SEND, &sg, 1, IBV_SEND_SIGNALED, 0, 0, 0));
	t_expect_wc(acq, &wc, 5, IBV_WC_SUCCESS, IBV_WC_SEND);
	t_expect_wc(bcq, &wc, 4, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_DATA(bbuf + 3 * P, 500, 3, 1000);

	/* The peer writes into the parent's MR; the parent sees it. */
	t_fill(bbuf, 2 * P, 4, 0);
	sg = t_sge(bbuf, 2 * P, bmr->lkey);
	CHECK_OK(t_post(b, 6, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED,
			(uintptr_t)m + 50, amr->rkey, 0));
	t_expect_wc(bcq, &wc, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(m + 50, 2 * P, 4, 0);
	CHECK_DATA(m, 50, 3, 0);

	CHECK_OK(ibv_destroy_qp(a));
	CHECK_OK(ibv_destroy_qp(b));
	CHECK_OK(ibv_destroy_cq(acq));
	CHECK_OK(ibv_destroy_cq(bcq));
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	t_close(&A);
	t_close(&B);
	t_pass();
	return 0;
}

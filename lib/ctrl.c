/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ctrl.c - the control mailbox of a context.
 *
 * A context owns one slot of the region (claimed with an OFD lock, see
 * device.c).  A request is written to the slot's request area and published
 * by a release store of req_seq; the daemon answers in the response area and
 * publishes resp_seq == req_seq with a release store that our acquire load
 * pairs with.  One request is in flight per context (ctrl_lock).
 *
 * Waiting: spin a few microseconds (most answers come that fast), then sleep
 * on resp_seq with FUTEX_WAIT in 50 ms steps, checking the daemon's state at
 * every step.  A VM guest has no futex shared with the host (URD_REGION_VM):
 * it polls with short sleeps instead.
 *
 * Timeout: after CTRL_TIMEOUT_NS (UNIRDMA_CTRL_TIMEOUT_MS for tests) we give
 * up and swap resp_seq to ~seq.  A daemon that runs the request later sees
 * the mark instead of publishing the answer and undoes what the request
 * created (daemon/ctrl.c publish), so a call that failed leaves nothing
 * behind.  The compare-and-swap decides the race with a late answer: either
 * the answer is there and we take it, or the mark is and the daemon undoes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

int urd_debug_enabled;

void urd_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!urd_debug_enabled)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "unirdma: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The daemon is gone when it said so (stop, vRNIC deleted) or, for a
 * container, when its OFD lock on URD_DAEMON_LOCK_BYTE has vanished: the
 * kernel dropped it because the daemon died, even by SIGKILL.  Not for the
 * data path: it costs a syscall. */
bool urd_daemon_gone(struct urd_context *ctx)
{
	uint32_t st = urd_load_acquire(&ctx->hdr->daemon_state);
	struct flock fl;

	if (st == URD_STATE_DEAD || st == URD_STATE_DELETED)
		return true;
	if (ctx->vm)
		return urd_vm_daemon_stalled(ctx);      /* VM hook: its heartbeat (vm.c) */
	if (ctx->lock_fd < 0)
		return false;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = URD_DAEMON_LOCK_BYTE;
	fl.l_len = 1;
	if (fcntl(ctx->lock_fd, F_OFD_GETLK, &fl))
		return false;
	return fl.l_type == F_UNLCK;
}

enum {
	SPIN_NS = 20 * 1000,                    /* busy-wait before sleeping */
	STEP_NS = 50 * 1000 * 1000,             /* futex wait step */
	VM_POLL_NS = 20 * 1000,                 /* VM guests: poll interval */
};
static const uint64_t CTRL_TIMEOUT_NS = 10ull * 1000 * 1000 * 1000;

static uint64_t ctrl_timeout_ns(void)
{
	static uint64_t cached;
	uint64_t t = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	const char *e;

	if (!t) {
		long ms = (e = getenv("UNIRDMA_CTRL_TIMEOUT_MS")) ? strtol(e, NULL, 10) : 0;

		t = ms >= 10 && ms <= 3600000 ? (uint64_t)ms * 1000000ull : CTRL_TIMEOUT_NS;
		__atomic_store_n(&cached, t, __ATOMIC_RELAXED);
	}
	return t;
}

/* Give up on request seq, unless its answer came meanwhile (then 0). */
static int abandon(uint32_t *rs, uint32_t seq)
{
	uint32_t cur = urd_load_acquire(rs);

	for (;;) {
		if (cur == seq)
			return 0;
		/* pairs with the daemon's compare-and-swap in publish(): exactly
		 * one of the answer and the mark wins */
		if (__atomic_compare_exchange_n(rs, &cur, ~seq, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return -ETIMEDOUT;
	}
}

/* Wait for resp_seq == seq.  0, -EIO or -ETIMEDOUT. */
static int wait_response(struct urd_context *ctx, uint32_t seq)
{
	uint32_t *rs = &ctx->slot->resp_seq;
	uint64_t start = urd_now_ns(), last_check = start, t, timeout = ctrl_timeout_ns();
	uint32_t v;

	while ((t = urd_now_ns()) - start < SPIN_NS) {
		for (int i = 0; i < 64; i++) {
			if (urd_load_acquire(rs) == seq)
				return 0;
			urd_cpu_relax();
		}
	}

	for (;;) {
		v = urd_load_acquire(rs);
		if (v == seq)
			return 0;
		t = urd_now_ns();
		if (t - last_check >= STEP_NS || t - start >= timeout) {
			last_check = t;
			if (urd_daemon_gone(ctx)) {
				urd_store_release(&ctx->dead, 1);
				return -EIO;
			}
			if (t - start >= timeout)
				return abandon(rs, seq);
		}
		if (ctx->vm) {
			struct timespec ts = { 0, VM_POLL_NS };

			/* a VM context is alive while this moves (vm.c) */
			urd_fetch_add(&ctx->slot->heartbeat, 1);
			nanosleep(&ts, NULL);
		} else {
			/* EAGAIN (value changed), EINTR and ETIMEDOUT all
			 * just lead to the next check. */
			urd_futex_wait(rs, v, STEP_NS);
		}
	}
}

int urd_ctrl(struct urd_context *ctx, uint16_t op, void *req, uint32_t req_len,
	     void *resp, uint32_t resp_min, uint32_t resp_max)
{
	struct urd_msg_hdr *h = req, rh;
	uint32_t seq;
	int ret;

	if (req_len < sizeof(*h) || req_len > URD_MSG_MAX ||
	    resp_max > URD_MSG_MAX || resp_min > resp_max)
		return -EINVAL;
	if (urd_ctx_dead(ctx))
		return -EIO;

	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = req_len;
	h->status = 0;
	h->reserved = 0;

	pthread_mutex_lock(&ctx->ctrl_lock);
	if (urd_ctx_dead(ctx)) {
		ret = -EIO;
		goto out;
	}
	memcpy(ctx->req_area, req, req_len);
	/* Never a seq that resp_seq already holds: after an abandoned request
	 * it holds the mark ~old, which is old + 1 for old = 0x7fffffff or
	 * 0xffffffff, and would pass for this request's answer. */
	do
		seq = ++ctx->seq;
	while (seq == urd_load_acquire(&ctx->slot->resp_seq));
	/* Pairs with the daemon's acquire of req_seq: it sees the request. */
	urd_store_release(&ctx->slot->req_seq, seq);
	urd_fetch_add(&ctx->hdr->ctrl_bell, 1);
	if (!ctx->vm)
		urd_futex_wake(&ctx->hdr->ctrl_bell, 1);

	ret = wait_response(ctx, seq);
	if (ret)
		goto out;

	/* The acquire of resp_seq above makes the response visible. */
	memcpy(&rh, ctx->resp_area, sizeof(rh));
	if (rh.version != URD_ABI_VERSION || rh.op != op ||
	    rh.len < sizeof(rh) || rh.len > URD_MSG_MAX) {
		urd_dbg("malformed response to op %u (op %u, len %u, version %u)",
			op, rh.op, rh.len, rh.version);
		ret = -EPROTO;
		goto out;
	}
	if (rh.status > 0 || rh.status < -4095) {
		ret = -EPROTO;
		goto out;
	}
	ret = rh.status;
	if (ret == 0 && rh.len < resp_min) {
		urd_dbg("short response to op %u: %u < %u", op, rh.len, resp_min);
		ret = -EPROTO;
		goto out;
	}
	if (resp) {
		uint32_t n = rh.len < resp_max ? rh.len : resp_max;

		memset(resp, 0, resp_max);
		memcpy(resp, ctx->resp_area, n);
	}
out:
	pthread_mutex_unlock(&ctx->ctrl_lock);
	return ret;
}

int urd_ctrl_handle(struct urd_context *ctx, uint16_t op, uint32_t handle)
{
	struct urd_handle_req req = { .handle = handle };

	return urd_ctrl(ctx, op, &req, sizeof(req), NULL, 0, 0);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The forwarding data path: a BENCHMARK BASELINE, not a product feature.
 *
 * With UNIRDMA_DATAPATH=forward in its environment, the library sends every
 * data verb (post_send, post_recv, post_srq_recv, poll_cq, req_notify_cq) to
 * the daemon as a control request, and the daemon's control plane executes it
 * on the application's behalf: it writes the work requests into the QP's
 * rings and rings the doorbell, or copies CQEs out of the CQ ring into its
 * answer.  That is FreeFlow's design (every data verb crosses the virtual
 * layer), built on the same engine and daemon so that bench/ can measure what
 * resource mapping saves.  bench/README.md describes how it is used.
 *
 * Messages use the control mailbox of abi.h: ops URD_OP_FWD_FIRST..LAST, the
 * common urd_msg_hdr, and the request/response areas of the context's slot.
 * Work requests travel in exactly the form they take in the rings, so the
 * daemon validates them against its private QP/SRQ state and copies them in.
 *
 * Notes on trust (the daemon's side, daemon/fwd.c):
 * - the request is the daemon's private copy; every length, count and
 *   handle is checked against it and against the context's own objects;
 * - ring producer indices of forwarded queues and the CQ consumer index live
 *   in the region, where the tenant can scribble on them; the daemon masks
 *   every index and bounds every count by its own ring state, so a scribbler
 *   only breaks its own queues, as with the mapped path.
 */
#ifndef UNIRDMA_FWD_H
#define UNIRDMA_FWD_H

#include <assert.h>
#include <stdint.h>

#include "unirdma/abi.h"

enum urd_fwd_op {
	URD_OP_FWD_POST_SEND     = 64,  /* urd_fwd_post_req -> urd_fwd_post_resp */
	URD_OP_FWD_POST_RECV     = 65,  /* urd_fwd_post_req -> urd_fwd_post_resp */
	URD_OP_FWD_POST_SRQ_RECV = 66,  /* urd_fwd_post_req -> urd_fwd_post_resp */
	URD_OP_FWD_POLL_CQ       = 67,  /* urd_fwd_poll_req -> urd_fwd_poll_resp */
	URD_OP_FWD_REQ_NOTIFY_CQ = 68,  /* urd_fwd_notify_req -> urd_msg_hdr */
};
static_assert((int)URD_OP_FWD_POST_SEND >= (int)URD_OP_FWD_FIRST &&
	      (int)URD_OP_FWD_REQ_NOTIFY_CQ <= (int)URD_OP_FWD_LAST, "forwarding ops in their range");

/* Each entry's size is padded to a multiple of this many bytes (entries
 * start right after the fixed part, so offsets are not aligned to it). */
#define URD_FWD_ALIGN 16u

/* POST_SEND, POST_RECV (handle: a QP) and POST_SRQ_RECV (handle: an SRQ).
 * nwr entries follow the fixed part, each padded to URD_FWD_ALIGN:
 *   send: struct urd_send_wqe, then num_sge struct urd_sge, or inline_len
 *         bytes of inline data when URD_WQE_INLINE is set;
 *   recv: struct urd_recv_wqe, then num_sge struct urd_sge.
 * The daemon posts the entries in order until one is refused; posted says
 * how many went into the ring and hdr.status why the next did not (0 when
 * all did): -ENOMEM queue full, -EINVAL malformed or not allowed. */
struct urd_fwd_post_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t nwr;
};
static_assert(sizeof(struct urd_fwd_post_req) == 24, "fwd post req");

struct urd_fwd_post_resp {
	struct urd_msg_hdr hdr;
	uint32_t posted;
	uint32_t reserved;
};
static_assert(sizeof(struct urd_fwd_post_resp) == 24, "fwd post resp");

/* POLL_CQ: up to max CQEs (at most URD_FWD_POLL_MAX) are taken from the CQ
 * ring and returned in order; the answer's hdr.len covers exactly n. */
struct urd_fwd_poll_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t max;
};
static_assert(sizeof(struct urd_fwd_poll_req) == 24, "fwd poll req");

struct urd_fwd_poll_resp {
	struct urd_msg_hdr hdr;
	uint32_t n;
	uint32_t reserved;
	struct urd_cqe cqe[];
};
static_assert(sizeof(struct urd_fwd_poll_resp) == 24, "fwd poll resp");

#define URD_FWD_POLL_MAX \
	((uint32_t)((URD_MSG_MAX - sizeof(struct urd_fwd_poll_resp)) / sizeof(struct urd_cqe)))

/* REQ_NOTIFY_CQ: arm the CQ as ibv_req_notify_cq(cq, solicited_only) does. */
struct urd_fwd_notify_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t solicited_only;
};
static_assert(sizeof(struct urd_fwd_notify_req) == 24, "fwd notify req");

#endif

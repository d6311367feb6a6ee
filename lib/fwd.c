/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fwd.c - the forwarding data path: a BENCHMARK BASELINE, not a product
 * feature (bench/README.md).
 *
 * With UNIRDMA_DATAPATH=forward, every data verb of a context becomes a
 * request in its control mailbox, as in FreeFlow, where the router executes
 * each verb for the application: post_send/post_recv/post_srq_recv copy the
 * work requests into the request (in the form they take in the rings,
 * include/unirdma/fwd.h) and the daemon writes them into the rings and rings
 * the doorbell; poll_cq asks the daemon, which copies CQEs out of the CQ ring
 * into its answer; req_notify_cq arms the CQ through the daemon.  The library
 * never touches the rings' producer indices (SQ/RQ/SRQ) or the CQ's consumer
 * index in this mode; completion events and everything else are unchanged.
 *
 * Not forwarded: the extended interfaces (ibv_wr_* on an ibv_qp_ex and
 * ibv_start_poll on an ibv_cq_ex) keep the mapped rings; do not mix them
 * with forwarded verbs on the same queue.
 *
 * Requests are built on the stack, at most FWD_BUF bytes each; a longer list
 * of work requests goes in several requests, and poll_cq takes at most
 * FWD_POLL CQEs per call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "unirdma/fwd.h"

enum {
	FWD_BUF = 4096,
	FWD_POLL = (FWD_BUF - sizeof(struct urd_fwd_poll_resp)) / sizeof(struct urd_cqe),
};
static_assert(URD_SEND_WQE_HDR + URD_MAX_INLINE <= FWD_BUF - sizeof(struct urd_fwd_post_req) &&
	      URD_SEND_WQE_HDR + URD_MAX_SGE * sizeof(struct urd_sge) <=
	      FWD_BUF - sizeof(struct urd_fwd_post_req) &&
	      sizeof(struct urd_recv_wqe) + URD_MAX_SGE * sizeof(struct urd_sge) <=
	      FWD_BUF - sizeof(struct urd_fwd_post_req),
	      "any one work request fits in one request");

static uint32_t pad(uint32_t n)
{
	return (n + URD_FWD_ALIGN - 1) & ~(URD_FWD_ALIGN - 1);
}

/* A positive errno from a -errno of urd_ctrl. */
static int pos(int ret)
{
	return ret < 0 ? -ret : ret;
}

/* ------------------------------------------------------------ post_send */

/* Append wr as a send WQE at buf + *off (room: FWD_BUF).  0, a positive
 * errno (the WR is invalid, as the mapped path would say), or -ENOSPC when
 * it does not fit after what is already there. */
static int put_send(struct urd_qp *qp, const struct ibv_send_wr *wr, uint8_t *buf, uint32_t *off)
{
	uint32_t body;
	struct urd_send_wqe w;
	const char *why;
	uint64_t total = 0;
	bool inl;
	int ret;

	ret = urd_send_wqe_header(qp, wr, &w, &inl, &why);
	if (ret)
		return ret;
	if (inl) {
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->max_inline)
			return EINVAL;
		body = (uint32_t)total;
	} else {
		body = (uint32_t)urd_wr_nsge(wr) * (uint32_t)sizeof(struct urd_sge);
	}
	if (*off + sizeof(w) + body > FWD_BUF)
		return -ENOSPC;

	if (inl) {
		urd_gather_inline(buf + *off + sizeof(w), wr);
		w.flags |= URD_WQE_INLINE;
		w.inline_len = body;
	} else if (urd_wr_nsge(wr)) {
		memcpy(buf + *off + sizeof(w), wr->sg_list, body);
		w.num_sge = (uint16_t)wr->num_sge;
	}
	memcpy(buf + *off, &w, sizeof(w));
	*off += pad((uint32_t)sizeof(w) + body);       /* entries are padded, not offsets */
	if (*off > FWD_BUF)
		*off = FWD_BUF;
	return 0;
}

/* Send one post request of n entries; on a partial post, *bad points at the
 * first WR the daemon did not take.  0 or a positive errno. */
static int post_req(struct urd_context *ctx, uint16_t op, uint8_t *buf, uint32_t len,
		    uint32_t handle, uint32_t n, uint32_t *posted)
{
	struct urd_fwd_post_req *r = (void *)buf;
	struct urd_fwd_post_resp resp = { .posted = 0 };
	int ret;

	r->handle = handle;
	r->nwr = n;
	ret = urd_ctrl(ctx, op, buf, len, &resp, sizeof(resp), sizeof(resp));
	/* urd_ctrl copies the answer also when its status is an error */
	*posted = resp.hdr.len >= sizeof(resp) && resp.posted <= n ? resp.posted : 0;
	if (ret == 0 && *posted != n)
		ret = -EPROTO;
	return pos(ret);
}

static int fwd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct urd_context *ctx = to_uctx(ibqp->context);
	struct urd_qp *qp = to_uqp(ibqp);
	uint8_t buf[FWD_BUF] __attribute__((aligned(16)));

	if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT) {
		*bad_wr = wr;
		return EINVAL;
	}
	while (wr) {
		struct ibv_send_wr *first = wr;
		uint32_t off = sizeof(struct urd_fwd_post_req), n = 0, posted;
		int ret = 0;

		for (; wr; wr = wr->next, n++) {
			ret = put_send(qp, wr, buf, &off);
			if (ret)
				break;
		}
		if (ret > 0 && !n) {            /* the first WR itself is invalid */
			*bad_wr = wr;
			return ret;
		}
		/* -ENOSPC (buffer full) or a bad WR later in the list: send what
		 * we have; the bad one is refused on the next round. */
		ret = post_req(ctx, URD_OP_FWD_POST_SEND, buf, off, ibqp->handle, n, &posted);
		if (ret) {
			wr = first;
			while (posted--)
				wr = wr->next;
			*bad_wr = wr;
			return ret;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ post_recv */

static int fwd_recv(struct urd_context *ctx, uint16_t op, uint32_t handle, uint32_t max_sge,
		    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint8_t buf[FWD_BUF] __attribute__((aligned(16)));

	while (wr) {
		struct ibv_recv_wr *first = wr;
		uint32_t off = sizeof(struct urd_fwd_post_req), n = 0, posted;
		int ret;

		for (; wr; wr = wr->next, n++) {
			struct urd_recv_wqe h = { .wr_id = wr->wr_id };
			uint32_t body;

			if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
				if (!n) {
					*bad_wr = wr;
					return EINVAL;
				}
				break;
			}
			body = (uint32_t)wr->num_sge * (uint32_t)sizeof(struct urd_sge);
			if (off + sizeof(h) + body > FWD_BUF)
				break;
			h.num_sge = (uint32_t)wr->num_sge;
			memcpy(buf + off, &h, sizeof(h));
			if (body)
				memcpy(buf + off + sizeof(h), wr->sg_list, body);
			off += pad((uint32_t)sizeof(h) + body);
		}
		ret = post_req(ctx, op, buf, off, handle, n, &posted);
		if (ret) {
			wr = first;
			while (posted--)
				wr = wr->next;
			*bad_wr = wr;
			return ret;
		}
	}
	return 0;
}

static int fwd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct urd_qp *qp = to_uqp(ibqp);

	if (ibqp->srq || !qp->rq.q.n || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return fwd_recv(to_uctx(ibqp->context), URD_OP_FWD_POST_RECV, ibqp->handle,
			qp->rq.max_sge, wr, bad_wr);
}

static int fwd_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	return fwd_recv(to_uctx(ibsrq->context), URD_OP_FWD_POST_SRQ_RECV, ibsrq->handle,
			to_usrq(ibsrq)->rq.max_sge, wr, bad_wr);
}

/* --------------------------------------------------------------- poll_cq */

static int fwd_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct urd_fwd_poll_req req = { .handle = ibcq->handle };
	uint8_t buf[sizeof(struct urd_fwd_poll_resp) + FWD_POLL * sizeof(struct urd_cqe)]
		__attribute__((aligned(16)));
	struct urd_fwd_poll_resp *resp = (void *)buf;
	uint32_t n;
	int ret;

	if (ne <= 0)
		return 0;
	req.max = (uint32_t)ne < FWD_POLL ? (uint32_t)ne : FWD_POLL;
	ret = urd_ctrl(to_uctx(ibcq->context), URD_OP_FWD_POLL_CQ, &req, sizeof(req),
		       buf, sizeof(*resp), sizeof(buf));
	if (ret)
		return -1;
	n = resp->n;
	if (n > req.max || resp->hdr.len != sizeof(*resp) + n * sizeof(struct urd_cqe))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const struct urd_cqe *e = &resp->cqe[i];

		wc[i].wr_id = e->wr_id;
		wc[i].status = (enum ibv_wc_status)e->status;
		wc[i].opcode = (enum ibv_wc_opcode)e->opcode;
		wc[i].vendor_err = e->vendor_err;
		wc[i].byte_len = e->byte_len;
		wc[i].imm_data = e->imm_data;
		wc[i].qp_num = e->qp_num;
		wc[i].src_qp = e->src_qp;
		wc[i].wc_flags = e->wc_flags;
		wc[i].pkey_index = e->pkey_index;
		wc[i].slid = e->slid;
		wc[i].sl = e->sl;
		wc[i].dlid_path_bits = e->dlid_path_bits;
	}
	return (int)n;
}

static int fwd_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct urd_fwd_notify_req req = {
		.handle = ibcq->handle,
		.solicited_only = solicited_only ? 1 : 0,
	};

	return pos(urd_ctrl(to_uctx(ibcq->context), URD_OP_FWD_REQ_NOTIFY_CQ, &req,
			    sizeof(req), NULL, 0, 0));
}

/* ------------------------------------------------------------- install */

void urd_fwd_install(struct urd_context *ctx)
{
	const char *mode = getenv("UNIRDMA_DATAPATH");
	struct urd_fwd_poll_req probe = { .handle = 0, .max = 0 };
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;
	int ret;

	if (!mode || strcmp(mode, "forward"))
		return;
	/* Handle 0 is never an object: a daemon that forwards says EINVAL. */
	ret = urd_ctrl(ctx, URD_OP_FWD_POLL_CQ, &probe, sizeof(probe), NULL, 0, 0);
	if (ret != -EINVAL) {
		fprintf(stderr, "unirdma: UNIRDMA_DATAPATH=forward, but the daemon does not "
			"forward data verbs (%s); using the mapped data path\n", strerror(pos(ret)));
		return;
	}
	ops->post_send = fwd_post_send;
	ops->post_recv = fwd_post_recv;
	ops->post_srq_recv = fwd_post_srq_recv;
	ops->poll_cq = fwd_poll_cq;
	ops->req_notify_cq = fwd_req_notify_cq;
	urd_dbg("forwarding data path: every data verb is a request to the daemon");
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The software RNIC engine's internal interfaces (engine/ only; the control
 * plane sees engine.h).
 *
 * The engine plays the hardware: it is the only party that moves bytes
 * between tenants' registered memory.  A request runs through three roles, as
 * in a real RNIC pipeline (and the Linux rxe driver):
 *   req.c   requester: takes a WQE from a send queue, checks the local side,
 *           resolves the destination and hands a "packet" to the responder;
 *   resp.c  responder: checks the destination QP, keys, bounds and access,
 *           moves the data, answers ACK or NAK (RNR, access, invalid request);
 *   comp.c  completer: turns outcomes into CQEs, events and QP errors.
 * On one host the three run synchronously in the engine thread under the big
 * lock; the packet is a struct, not bytes on a wire.
 */
#ifndef UNIRDMA_ENGINE_INTERNAL_H
#define UNIRDMA_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "engine.h"
#include "objects.h"
#include "unirdma/opcode.h"

/* A validated scatter/gather element: a range of an MR, or flat engine memory
 * (inline data, atomic results). */
struct vsge {
	struct vr_mr *mr;
	uint64_t off;                   /* offset inside the MR */
	uint32_t len;
	uint8_t *flat;                  /* when mr == NULL */
};

#define ENGINE_MAX_SGE URD_MAX_SGE

/* The responder's answer to one request (IB spec 9.7.5.2: ACK / NAK codes). */
enum resp_result {
	RESP_ACK = 0,
	RESP_RNR,                       /* RNR NAK: no receive WQE */
	RESP_SILENT,                    /* no answer: unreachable peer or QP not ready */
	RESP_NAK_INV_REQ,               /* invalid request, length error, misaligned atomic */
	RESP_NAK_ACCESS,                /* remote access error */
	RESP_NAK_OP,                    /* remote operational error */
	RESP_RESTART,                   /* a later piece found no message state: start it over */
};

/* Messages longer than this move in pieces of at most this size, one piece
 * per engine step, so that the big lock is never held for long (issue 9,
 * finding 3).  A piece lands like a run of packets on a wire; the CQEs are
 * written when the whole message is done. */
#define ENGINE_PIECE (256u << 10)

#define WQE_MAX_BYTES 1024u             /* largest send WQE slot the engine takes */

/* A message in pieces, kept per QP between engine steps (allocated when a
 * QP first needs it, freed by engine_forget). */
struct engine_xfer {
	/* requester: the WQE at the SQ head, in progress */
	bool tx;
	uint32_t tx_head;               /* its SQ index */
	uint64_t tx_token;              /* names the message to the responder */
	uint64_t tx_done;               /* bytes the responder acknowledged */
	/* the WQE as copied and validated at its start: never read again from
	 * the region, which the tenant may rewrite meanwhile */
	uint8_t wqe[WQE_MAX_BYTES] __attribute__((aligned(64)));
	/* responder: the receive WQE a SEND in pieces consumed (it stays
	 * consumed by that message; a restarted message reuses it) */
	bool rx;
	uint64_t rx_token;
	uint64_t rx_wr_id;
	uint32_t rx_nsge;
	struct urd_sge rx_sge[URD_MAX_SGE];
};

struct packet {
	struct vr_qp *src;
	const struct urd_send_wqe *wqe;
	const struct urd_opcode_info *op;
	struct vsge *local;             /* gather (send/write) or scatter (read/atomic) list */
	uint32_t nlocal;
	uint32_t len;                   /* this piece's length (the whole message unless in pieces) */
	uint32_t total;                 /* the message's length */
	uint64_t off;                   /* this piece's offset in the message */
	uint64_t token;                 /* the message, across its pieces */
	uint64_t atomic_orig;           /* result of an atomic */
	uint32_t rnr_timer;             /* responder's min_rnr_timer, for an RNR NAK */
	uint32_t dip;                   /* UD: the GRH's destination (a multicast group); 0: the receiver's */
};

/* mem.c */
int mr_check_local(struct urd_vrnic *vr, struct vr_pd *pd, const struct urd_sge *sge,
		   uint32_t need_access, struct vsge *out);
int mr_check_remote(struct urd_vrnic *vr, struct vr_qp *qp, uint32_t rkey, uint64_t addr,
		    uint64_t len, uint32_t need_access, struct vsge *out);
uint8_t *vsge_ptr(const struct vsge *v, uint64_t off, uint64_t *contig);
uint8_t *vsge_list_ptr(const struct vsge *g, uint32_t ng, uint64_t off, uint64_t *contig);
/* mw.c: memory windows (0 or -errno; local_op_execute: 0 or a WC status) */
int mw_check_remote(struct urd_vrnic *vr, struct vr_qp *qp, uint32_t rkey, uint64_t addr, uint64_t len,
		    uint32_t need_access, struct vsge *out);
int mw_bind(struct vr_qp *qp, const struct urd_send_wqe *w);
int mw_invalidate(struct vr_qp *qp, uint32_t rkey);
int local_op_execute(struct vr_qp *qp, const struct urd_send_wqe *w);
/* Copies bytes [off, off + len) of a gather list out to dst, or flat src in
 * at off of a scatter list; counted in eng->copied_bytes. */
void vsge_read(struct engine *eng, uint8_t *dst, const struct vsge *g, uint32_t ng, uint64_t off, uint32_t len);
void vsge_write(struct engine *eng, const struct vsge *g, uint32_t ng, uint64_t off, const uint8_t *src,
		uint32_t len);
uint32_t vsge_advance(struct vsge *v, uint32_t n, uint64_t off);
void sg_copy(struct engine *eng, const struct vsge *dst, uint32_t ndst, const struct vsge *src, uint32_t nsrc, uint64_t len);

#define URD_WC_SL_ROCE_IPV4 2    /* wc.sl of UD receives: RoCE v2 over IPv4 (comp.c) */

/* What a receive completion says about the message (comp.c). */
struct recv_info {
	uint32_t src_qpn;
	uint32_t imm_be;
	bool has_imm, solicited;
	uint8_t sl;
	const uint8_t *grh;             /* UD: the 40 bytes to put first, or NULL */
	bool has_inv;                   /* SEND_WITH_INV: inv_rkey was invalidated */
	uint32_t inv_rkey;
};

/* route.c */
struct vr_qp *route_rc(struct vr_qp *src);
struct vr_qp *route_ud(struct vr_qp *src, const struct urd_send_wqe *wqe, const struct packet *pkt);

/* cm_steer.c: QP1's datagrams to the vRNIC's CM agents */
#define CM_STEER_BYTES 40       /* the MAD header and the first 16 bytes of CM data */
struct cm_steer_key {
	bool by_service;                /* REQ, SIDR_REQ: by service_id */
	uint64_t service_id;
	uint32_t slot;                  /* otherwise: the agent's slot (0: none) */
};
int cm_steer_key(const uint8_t *mad, uint32_t len, struct cm_steer_key *k);
struct vr_qp *cm_steer(struct urd_vrnic *vr, const uint8_t *mad, uint32_t len);
#define CM_MAD_BYTES 256
bool cm_served(const struct urd_vrnic *vr);
bool cm_orphan_answer(const struct urd_vrnic *vr, const uint8_t *mad, uint32_t len, uint8_t out[CM_MAD_BYTES]);
/* The QP takes requests (RTR and after, until an error or a drain ends). */
static inline bool qp_can_receive(const struct vr_qp *qp)
{
	return qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD;
}

/* The QPN a QP's datagrams carry as their source: 1 for a CM agent. */
static inline uint32_t qp_src_qpn(const struct vr_qp *qp)
{
	return qp->cm_slot ? URD_GSI_QPN : qp->qpn;
}

/* resp.c */
enum resp_result resp_handle(struct vr_qp *dst, struct packet *pkt);
/* The next receive WQE of qp (its SRQ or RQ), consumed: 1 and its wr_id and
 * scatter list; 0 none; -1 a malformed one (consumed and completed in error). */
int recv_take(struct vr_qp *qp, uint64_t *wr_id, struct urd_sge *sge, uint32_t *nsge);
int recv_sg_check(struct vr_qp *qp, const struct urd_sge *sg, uint32_t num, struct vsge *out, uint64_t *room);
/* UD from the wire: the GRH, then the payload, into the next receive WQE;
 * false if there was none. */
bool recv_deliver_ud(struct vr_qp *qp, const struct recv_info *ri, const uint8_t *data, uint32_t len);
/* The 40-byte GRH area of a UD receive: 20 zero bytes, then the IPv4 header
 * of a RoCEv2 packet from sip to dip whose UDP datagram is udp_len bytes. */
void grh_fill(uint8_t grh[40], uint32_t sip, uint32_t dip, uint32_t udp_len);

/* wire*.c, for the requester and the engine thread */
enum resp_result wire_ud_send(struct vr_qp *qp, const struct urd_send_wqe *wqe, const struct urd_opcode_info *op,
			      const struct vsge *local, uint32_t n, uint32_t len);
bool wire_rc_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes);
void wire_qp_forget(struct vr_qp *qp);
/* req.c's send-queue helpers, shared with wire_rc.c */
bool sq_fetch(struct vr_qp *qp);
void sq_unwatch(struct vr_ring *sq);
void wqe_copy(uint8_t *buf, const uint8_t *slot, uint32_t slot_bytes);

/* comp.c: the only code that posts a CQE or moves a QP to the error state */
enum qp_fail_reason {
	QP_FAIL_WQE,                    /* a WQE failed (its CQE says how); counted */
	QP_FAIL_REQUEST,                /* responder, class C: invalid request or operation; counted */
	QP_FAIL_ACCESS,                 /* responder, class C: remote access; counted, IBV_EVENT_QP_ACCESS_ERR */
	QP_FAIL_FATAL,                  /* CQ overrun, broken ring: IBV_EVENT_QP_FATAL */
};
void complete_send(struct vr_qp *qp, const struct urd_send_wqe *wqe, enum ibv_wc_status st);
void complete_recv(struct vr_qp *qp, uint64_t wr_id, enum ibv_wc_status st, uint32_t opcode,
		   uint32_t byte_len, const struct packet *pkt);
void complete_recv_info(struct vr_qp *qp, uint64_t wr_id, enum ibv_wc_status st, uint32_t opcode,
			uint32_t byte_len, const struct recv_info *ri);
bool flush_recv_queue(struct vr_qp *qp, uint32_t *budget);
void qp_fail(struct vr_qp *qp, enum qp_fail_reason why);

/* req.c: the engine's two steps for a QP.  Each runs up to budget WQEs and
 * about *bytes bytes (lowered by what it did); true if work is left.
 *   req_process    a QP not in the error state: executes its send queue;
 *   flush_process  a QP in the error state: flushes its queues. */
bool req_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes);
bool flush_process(struct vr_qp *qp, uint32_t budget, int64_t *bytes);

/* Counters: every event counts on the QP and on its vRNIC. */
#define CNT_BOTH(qp, field, n) do { (qp)->cnt.field += (n); (qp)->vr->cnt.field += (n); } while (0)

static inline void count_tx(struct vr_qp *qp, uint32_t op, uint64_t len)
{
	CNT_BOTH(qp, tx_ops, 1);
	CNT_BOTH(qp, tx_bytes, len);
	CNT_BOTH(qp, tx_op_ops[op], 1);
	CNT_BOTH(qp, tx_op_bytes[op], len);
}

static inline void count_rx(struct vr_qp *qp, uint32_t op, uint64_t len)
{
	CNT_BOTH(qp, rx_ops, 1);
	CNT_BOTH(qp, rx_bytes, len);
	CNT_BOTH(qp, rx_op_ops[op], 1);
	CNT_BOTH(qp, rx_op_bytes[op], len);
}

/* engine.c */
struct engine_xfer *engine_xfer_get(struct vr_qp *qp);        /* NULL: out of memory */
void engine_wait(struct vr_qp *qp, enum engine_wait why, uint64_t until_ns);

/* The engine's and the wire's threads: named, and with a short scheduler
 * slice, so that when they wake they preempt a program busy-polling on
 * their CPU at once (EEVDF, Linux 6.12+; older kernels ignore it). */
void engine_thread_init(const char *name);

/* qos.c: may vr send bytes now?  If not, *until is when. */
bool qos_admit(struct urd_vrnic *vr, uint64_t bytes, uint64_t now, uint64_t *until);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The send opcodes (URD_WR_*, abi.h): one table of what each one does, read
 * by the library's post-time checks (lib/qp.c) and by the engine (requester,
 * responder, completer), as Linux rxe reads rxe_wr_opcode_info
 * (drivers/infiniband/sw/rxe/rxe_opcode.c).  The facts come from IB spec 9.4
 * (table 38) and ibv_post_send(3).
 *
 * Every opcode has its URD_OPF_* flags (what it does, the same on every QP
 * type that may post it) and the mask of those QP types (IB spec 9.8.x,
 * operations per transport service: RC all seven, UC sends and writes, UD
 * sends only).  The table itself is in common/opcode.c, linked into the
 * library and the daemon; the library keeps it internal (hidden visibility,
 * and lib/libibverbs.map exports nothing of ours).
 */
#ifndef UNIRDMA_OPCODE_H
#define UNIRDMA_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "unirdma/abi.h"

enum urd_opcode_flags {
	URD_OPF_SEND        = 1u << 0,  /* consumes a receive WQE at the responder */
	URD_OPF_IMM         = 1u << 1,  /* carries immediate data */
	URD_OPF_WRITE       = 1u << 2,  /* writes the remote MR (RDMA WRITE) */
	URD_OPF_READ        = 1u << 3,  /* reads the remote MR (RDMA READ) */
	URD_OPF_ATOMIC      = 1u << 4,  /* 8-byte atomic on the remote MR */
	URD_OPF_INLINE      = 1u << 5,  /* the payload goes out from the requester: may be inline */
	URD_OPF_LOCAL_WRITE = 1u << 6,  /* the local SGEs are written (read response, atomic result) */
	URD_OPF_LOCAL       = 1u << 7,  /* a local operation (BIND_MW, LOCAL_INV): no packet, no SGEs */
	URD_OPF_INV         = 1u << 8,  /* invalidates invalidate_rkey at the responder (SEND_WITH_INV) */
};

#define URD_QPT_BIT(t) (1u << (t))      /* in qp_types: an enum ibv_qp_type */

struct urd_opcode_info {
	const char *name;               /* counter label: "rdma_write", ... (vrnic show, metrics) */
	uint32_t flags;                 /* URD_OPF_* */
	uint32_t qp_types;              /* URD_QPT_BIT() of every QP type that may post it */
	uint32_t remote_access;         /* IBV_ACCESS_REMOTE_* the target MR and QP must grant */
	enum ibv_wc_opcode wc_opcode;   /* of the requester's completion */
};

extern const struct urd_opcode_info urd_opcodes[URD_WR_NUM_OPCODES] __attribute__((visibility("hidden")));

/* Whether a QP of type qpt may post the opcode of row. */
static inline bool urd_opcode_allowed(const struct urd_opcode_info *row, uint32_t qpt)
{
	return qpt < 32 && (row->qp_types & URD_QPT_BIT(qpt));
}

/* The row of opcode op if a QP of type qpt may post it, else NULL: op and
 * qpt may come from an application or a tenant. */
static inline const struct urd_opcode_info *urd_opcode(uint32_t op, uint32_t qpt)
{
	if (op >= URD_WR_NUM_OPCODES || !urd_opcode_allowed(&urd_opcodes[op], qpt))
		return NULL;
	return &urd_opcodes[op];
}

/* Bit 1 << op for every opcode a QP of type qpt may post (the library's
 * send_ops_flags: IBV_QP_EX_WITH_<op> == 1 << op, lib/qp.c checks it). */
static inline uint64_t urd_opcodes_valid(uint32_t qpt)
{
	uint64_t bits = 0;

	for (uint32_t op = 0; op < URD_WR_NUM_OPCODES; op++)
		if (urd_opcode(op, qpt))
			bits |= 1ull << op;
	return bits;
}

#endif

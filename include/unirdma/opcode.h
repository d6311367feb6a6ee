/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The send opcodes (URD_WR_*, abi.h): one table of what each one does, read
 * by the library's post-time checks (lib/qp.c) and by the engine (requester,
 * responder, completer), as Linux rxe reads rxe_wr_opcode_info
 * (drivers/infiniband/sw/rxe/rxe_opcode.c).  The facts come from IB spec 9.4
 * (table 38) and ibv_post_send(3).
 *
 * Every opcode has a mask per QP type: 0 means the opcode is not valid on
 * that type (IB spec 9.8.x, operations per transport service: RC all seven,
 * UD sends only); otherwise it is the opcode's URD_OPF_* flags, the same on
 * every type that allows it.  The table itself is in common/opcode.c, linked
 * into the library and the daemon; the library keeps it internal (hidden
 * visibility, and lib/libibverbs.map exports nothing of ours).
 */
#ifndef UNIRDMA_OPCODE_H
#define UNIRDMA_OPCODE_H

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
};

/* mask[] is indexed by enum ibv_qp_type, up to the highest type we serve. */
#define URD_OPCODE_QPT_MAX (IBV_QPT_UD + 1)

struct urd_opcode_info {
	const char *name;               /* counter label: "rdma_write", ... (vrnic show, metrics) */
	uint32_t mask[URD_OPCODE_QPT_MAX];      /* per QP type: URD_OPF_*, 0 = not valid there */
	uint32_t remote_access;         /* IBV_ACCESS_REMOTE_* the target MR and QP must grant */
	enum ibv_wc_opcode wc_opcode;   /* of the requester's completion */
};

extern const struct urd_opcode_info urd_opcodes[URD_WR_NUM_OPCODES] __attribute__((visibility("hidden")));

/* The flags of opcode op on a QP of type qpt; 0 if op is not valid there
 * (or not an opcode at all: op comes from an application or a tenant). */
static inline uint32_t urd_opcode_mask(uint32_t op, uint32_t qpt)
{
	if (op >= URD_WR_NUM_OPCODES || qpt >= URD_OPCODE_QPT_MAX)
		return 0;
	return urd_opcodes[op].mask[qpt];
}

/* Bit 1 << op for every opcode valid on a QP of type qpt (the library's
 * send_ops_flags: IBV_QP_EX_WITH_<op> == 1 << op, lib/qp.c checks it). */
static inline uint64_t urd_opcodes_valid(uint32_t qpt)
{
	uint64_t bits = 0;

	for (uint32_t op = 0; op < URD_WR_NUM_OPCODES; op++)
		if (urd_opcode_mask(op, qpt))
			bits |= 1ull << op;
	return bits;
}

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The opcode table (include/unirdma/opcode.h): what each send opcode does,
 * from IB spec 9.4 (table 38), 9.8.x (operations per transport service) and
 * ibv_post_send(3).  UC (9.8.2): SEND and RDMA WRITE, with or without
 * immediate; no READ, no atomics.  One copy for the library and the daemon.
 * The memory window operations follow rxe_wr_opcode_info: BIND_MW on RC and
 * UC, LOCAL_INV on RC; SEND_WITH_INV on RC only (rxe lists UC and UD too,
 * but has no UC or UD packet that carries an IETH: IB spec 9.4 defines
 * SEND with Invalidate for RC and XRC alone). */
#include "unirdma/opcode.h"

#define RC URD_QPT_BIT(IBV_QPT_RC)
#define UC URD_QPT_BIT(IBV_QPT_UC)
#define UD URD_QPT_BIT(IBV_QPT_UD)

const struct urd_opcode_info urd_opcodes[URD_WR_NUM_OPCODES] = {
	[URD_WR_RDMA_WRITE] = {
		.name = "rdma_write",
		.flags = URD_OPF_WRITE | URD_OPF_INLINE,
		.qp_types = RC | UC,
		.remote_access = IBV_ACCESS_REMOTE_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[URD_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "rdma_write_imm",
		.flags = URD_OPF_WRITE | URD_OPF_IMM | URD_OPF_SEND | URD_OPF_INLINE,
		.qp_types = RC | UC,
		.remote_access = IBV_ACCESS_REMOTE_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[URD_WR_SEND] = {
		.name = "send",
		.flags = URD_OPF_SEND | URD_OPF_INLINE,
		.qp_types = RC | UC | UD,
		.remote_access = 0,
		.wc_opcode = IBV_WC_SEND,
	},
	[URD_WR_SEND_WITH_IMM] = {
		.name = "send_imm",
		.flags = URD_OPF_SEND | URD_OPF_IMM | URD_OPF_INLINE,
		.qp_types = RC | UC | UD,
		.remote_access = 0,
		.wc_opcode = IBV_WC_SEND,
	},
	[URD_WR_RDMA_READ] = {
		.name = "rdma_read",
		.flags = URD_OPF_READ | URD_OPF_LOCAL_WRITE,
		.qp_types = RC,
		.remote_access = IBV_ACCESS_REMOTE_READ,
		.wc_opcode = IBV_WC_RDMA_READ,
	},
	[URD_WR_ATOMIC_CMP_AND_SWP] = {
		.name = "atomic_cmp_swp",
		.flags = URD_OPF_ATOMIC | URD_OPF_LOCAL_WRITE,
		.qp_types = RC,
		.remote_access = IBV_ACCESS_REMOTE_ATOMIC,
		.wc_opcode = IBV_WC_COMP_SWAP,
	},
	[URD_WR_ATOMIC_FETCH_AND_ADD] = {
		.name = "atomic_fetch_add",
		.flags = URD_OPF_ATOMIC | URD_OPF_LOCAL_WRITE,
		.qp_types = RC,
		.remote_access = IBV_ACCESS_REMOTE_ATOMIC,
		.wc_opcode = IBV_WC_FETCH_ADD,
	},
	[URD_WR_LOCAL_INV] = {
		.name = "local_inv",
		.flags = URD_OPF_LOCAL,
		.qp_types = RC,
		.remote_access = 0,
		.wc_opcode = IBV_WC_LOCAL_INV,
	},
	[URD_WR_BIND_MW] = {
		.name = "bind_mw",
		.flags = URD_OPF_LOCAL,
		.qp_types = RC | UC,
		.remote_access = 0,
		.wc_opcode = IBV_WC_BIND_MW,
	},
	[URD_WR_SEND_WITH_INV] = {
		.name = "send_inv",
		.flags = URD_OPF_SEND | URD_OPF_INLINE | URD_OPF_INV,
		.qp_types = RC,
		.remote_access = 0,
		.wc_opcode = IBV_WC_SEND,
	},
};

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The opcode table (include/unirdma/opcode.h): what each send opcode does,
 * from IB spec 9.4 (table 38), 9.8.x (operations per transport service) and
 * ibv_post_send(3).  One copy for the library and the daemon. */
#include "unirdma/opcode.h"

#define RC(m) [IBV_QPT_RC] = (m)
#define UD(m) [IBV_QPT_UD] = (m)

const struct urd_opcode_info urd_opcodes[URD_WR_NUM_OPCODES] = {
	[URD_WR_RDMA_WRITE] = {
		.name = "rdma_write",
		.mask = { RC(URD_OPF_WRITE | URD_OPF_INLINE) },
		.remote_access = IBV_ACCESS_REMOTE_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[URD_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "rdma_write_imm",
		.mask = { RC(URD_OPF_WRITE | URD_OPF_IMM | URD_OPF_SEND | URD_OPF_INLINE) },
		.remote_access = IBV_ACCESS_REMOTE_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[URD_WR_SEND] = {
		.name = "send",
		.mask = { RC(URD_OPF_SEND | URD_OPF_INLINE), UD(URD_OPF_SEND | URD_OPF_INLINE) },
		.remote_access = 0,
		.wc_opcode = IBV_WC_SEND,
	},
	[URD_WR_SEND_WITH_IMM] = {
		.name = "send_imm",
		.mask = { RC(URD_OPF_SEND | URD_OPF_IMM | URD_OPF_INLINE),
			  UD(URD_OPF_SEND | URD_OPF_IMM | URD_OPF_INLINE) },
		.remote_access = 0,
		.wc_opcode = IBV_WC_SEND,
	},
	[URD_WR_RDMA_READ] = {
		.name = "rdma_read",
		.mask = { RC(URD_OPF_READ | URD_OPF_LOCAL_WRITE) },
		.remote_access = IBV_ACCESS_REMOTE_READ,
		.wc_opcode = IBV_WC_RDMA_READ,
	},
	[URD_WR_ATOMIC_CMP_AND_SWP] = {
		.name = "atomic_cmp_swp",
		.mask = { RC(URD_OPF_ATOMIC | URD_OPF_LOCAL_WRITE) },
		.remote_access = IBV_ACCESS_REMOTE_ATOMIC,
		.wc_opcode = IBV_WC_COMP_SWAP,
	},
	[URD_WR_ATOMIC_FETCH_AND_ADD] = {
		.name = "atomic_fetch_add",
		.mask = { RC(URD_OPF_ATOMIC | URD_OPF_LOCAL_WRITE) },
		.remote_access = IBV_ACCESS_REMOTE_ATOMIC,
		.wc_opcode = IBV_WC_FETCH_ADD,
	},
};

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat.c - the parts of the libibverbs ABI that have nothing to do with
 * unirdma's own devices.
 *
 * Two groups live here:
 *  - Small public helpers with their documented behaviour: enum-to-string and
 *    rate conversions, kernel-ABI struct copies (ibv_copy_*_from/to_kern),
 *    sysfs and fork helpers, and verbs a vRNIC does not offer (multicast,
 *    ECE, dma-buf and DM import), which fail the way the man pages say an
 *    unsupported verb fails.
 *  - The IBVERBS_PRIVATE_34 provider interface. rdma-core's providers
 *    (libmlx5, libefa) import it and are loaded by perftest et al. with
 *    BIND_NOW, so every symbol must exist, but none of it is ever reached for
 *    a unirdma device: ibv_cmd_* and friends fail with EOPNOTSUPP, and
 *    verbs_register_driver_34, which the providers' constructors call, is
 *    accepted and ignored. ibv_query_gid_type is the one real entry point
 *    (ibv_devinfo and pyverbs call it).
 *
 * Error conventions at this boundary: int verbs return a positive errno,
 * pointer verbs return NULL and set errno; the sysfs readers return -1 and
 * set errno like rdma-core's.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "unirdma/abi.h"

#define UNUSED __attribute__((unused))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Declarations that rdma-core keeps in headers Debian does not install
 * (driver.h, marshall.h, cmd_ioctl.h). Only pointers to the private structs
 * cross this file, so they stay incomplete.
 */
struct ibv_command_buffer;
struct verbs_counters;
struct verbs_context_ops;
struct verbs_cq;
struct verbs_device_ops;
struct verbs_dm;
struct verbs_flow_action;
struct verbs_mr;
struct verbs_qp;
struct verbs_srq;
struct verbs_sysfs_dev;
struct verbs_xrcd;
/* command and response layouts of the write() ABI (rdma-core kern-abi.h) */
struct ibv_alloc_mw;
struct ibv_alloc_pd;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_create_srq;
struct ibv_create_wq;
struct ibv_create_xsrq;
struct ibv_get_context;
struct ibv_modify_cq;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_modify_srq;
struct ibv_modify_wq;
struct ibv_open_qp;
struct ibv_open_xrcd;
struct ibv_query_port;
struct ibv_query_qp;
struct ibv_query_srq;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_resize_cq;

enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	IBV_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

/* marshall.h */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src);

/* driver.h: public-but-undeclared helpers */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* driver.h / cmd_ioctl.h: the IBVERBS_PRIVATE_34 interface */
extern bool verbs_allow_disassociate_destroy;
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     struct ibv_command_buffer *link);
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
int ibv_cmd_alloc_dm(struct ibv_context *ctx,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_create_counters(struct ibv_context *context,
			    struct ibv_counters_init_attr *init_attr,
			    struct verbs_counters *vcounters,
			    struct ibv_command_buffer *link);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size);
int ibv_cmd_create_flow_action_esp(struct ibv_context *ctx,
				   struct ibv_flow_action_esp_attr *attr,
				   struct verbs_flow_action *flow_action,
				   struct ibv_command_buffer *driver);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
				 struct ibv_rwq_ind_table_init_attr *init_attr,
				 struct ibv_rwq_ind_table *rwq_ind_table,
				 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
				 size_t resp_size);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
		      struct ibv_create_wq *cmd, size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_destroy_counters(struct verbs_counters *vcounters);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);
int ibv_cmd_destroy_flow_action(struct verbs_flow_action *action);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_free_dm(struct verbs_dm *dm);
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);
int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action *flow_action,
				   struct ibv_flow_action_esp_attr *attr,
				   struct ibv_command_buffer *driver);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_modify_qp_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);
int ibv_cmd_query_context(struct ibv_context *ctx,
			  struct ibv_command_buffer *driver);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr,
		     uint32_t mr_handle);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_read_counters(struct verbs_counters *vcounters,
			  uint64_t *counters_value, uint32_t ncounters,
			  uint32_t flags, struct ibv_command_buffer *link);
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);

/* ------------------------------------------------------------------------ */
/* Strings (ibv_*_str(3)): out-of-range values give "unknown".              */

static const char *const wc_status_names[] = {
	[IBV_WC_SUCCESS] = "success",
	[IBV_WC_LOC_LEN_ERR] = "local length error",
	[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[IBV_WC_LOC_PROT_ERR] = "local protection error",
	[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[IBV_WC_MW_BIND_ERR] = "memory management operation error",
	[IBV_WC_BAD_RESP_ERR] = "bad response error",
	[IBV_WC_LOC_ACCESS_ERR] = "local access error",
	[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[IBV_WC_REM_ACCESS_ERR] = "remote access error",
	[IBV_WC_REM_OP_ERR] = "remote operation error",
	[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[IBV_WC_REM_ABORT_ERR] = "aborted error",
	[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[IBV_WC_FATAL_ERR] = "fatal error",
	[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[IBV_WC_GENERAL_ERR] = "general error",
	[IBV_WC_TM_ERR] = "TM error",
	[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

static const char *const event_type_names[] = {
	[IBV_EVENT_CQ_ERR] = "CQ error",
	[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	[IBV_EVENT_COMM_EST] = "communication established",
	[IBV_EVENT_SQ_DRAINED] = "send queue drained",
	[IBV_EVENT_PATH_MIG] = "path migrated",
	[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	[IBV_EVENT_PORT_ACTIVE] = "port active",
	[IBV_EVENT_PORT_ERR] = "port error",
	[IBV_EVENT_LID_CHANGE] = "LID change",
	[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	[IBV_EVENT_SM_CHANGE] = "SM change",
	[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	[IBV_EVENT_GID_CHANGE] = "GID table change",
	[IBV_EVENT_WQ_FATAL] = "WQ fatal",
};

static const char *const node_type_names[] = {
	[IBV_NODE_CA] = "InfiniBand channel adapter",
	[IBV_NODE_SWITCH] = "InfiniBand switch",
	[IBV_NODE_ROUTER] = "InfiniBand router",
	[IBV_NODE_RNIC] = "iWARP NIC",
	[IBV_NODE_USNIC] = "usNIC",
	[IBV_NODE_USNIC_UDP] = "usNIC UDP",
	[IBV_NODE_UNSPECIFIED] = "unspecified",
};

static const char *const port_state_names[] = {
	[IBV_PORT_NOP] = "no state change (NOP)",
	[IBV_PORT_DOWN] = "down",
	[IBV_PORT_INIT] = "init",
	[IBV_PORT_ARMED] = "armed",
	[IBV_PORT_ACTIVE] = "active",
	[IBV_PORT_ACTIVE_DEFER] = "active defer",
};

/* Enums may be signed, and callers pass whatever they got off the wire. */
static const char *name_of(const char *const *names, size_t n, long v)
{
	if (v < 0 || (unsigned long)v >= n || !names[v])
		return "unknown";
	return names[v];
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return name_of(wc_status_names, ARRAY_SIZE(wc_status_names), status);
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	return name_of(event_type_names, ARRAY_SIZE(event_type_names), event);
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	/* index 0 has no entry, so it reads "unknown" like IBV_NODE_UNKNOWN */
	return name_of(node_type_names, ARRAY_SIZE(node_type_names), node_type);
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return name_of(port_state_names, ARRAY_SIZE(port_state_names),
		       port_state);
}

/* ------------------------------------------------------------------------ */
/* Static rates (ibv_rate_to_mult(3), ibv_rate_to_mbps(3)).                 */

/*
 * One row per enum ibv_rate value. mult is the rate as a multiple of
 * 2.5 Gb/s, or 0 for the rates that are not such a multiple (the FDR/EDR/HDR
 * speeds with 64b/66b encoding): those have no multiplier, so
 * ibv_rate_to_mult() returns -1 for them and mult_to_ibv_rate() never
 * produces them. mbps is the data rate in Mb/s.
 */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rate_table[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },
	{ IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },
	{ IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },
	{ IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < ARRAY_SIZE(rate_table); i++)
		if (rate_table[i].rate == rate)
			return rate_table[i].mult ? rate_table[i].mult : -1;
	return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < ARRAY_SIZE(rate_table); i++)
		if (rate_table[i].mult && rate_table[i].mult == mult)
			return rate_table[i].rate;
	return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < ARRAY_SIZE(rate_table); i++)
		if (rate_table[i].rate == rate)
			return rate_table[i].mbps;
	return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < ARRAY_SIZE(rate_table); i++)
		if (rate_table[i].mbps == mbps)
			return rate_table[i].rate;
	return IBV_RATE_MAX;
}

/* ------------------------------------------------------------------------ */
/* Kernel ABI struct copies (used by librdmacm-style code over ucma).        */

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;

	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src)
{
	/*
	 * qp_state is deliberately left alone, as rdma-core does: callers such
	 * as rdma_init_qp_attr() put the state they are asking about there and
	 * rely on it surviving the copy.
	 */
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;

	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;

	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* Both sides keep the wire (big-endian) byte order; nothing is swapped. */
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = src->reversible;
	dst->mtu = (uint8_t)src->mtu; /* an IB MTU enum, 1..5 */
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* ------------------------------------------------------------------------ */
/* sysfs and fork helpers.                                                  */

/* A vRNIC has no sysfs presence; callers only use this to build paths. */
const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

int ibv_read_sysfs_file(UNUSED const char *dir, UNUSED const char *file,
			UNUSED char *buf, UNUSED size_t size)
{
	errno = ENOENT;
	return -1;
}

/*
 * Registered memory is never pinned for a device's DMA, so a child after
 * fork() cannot corrupt it: fork protection is simply not needed.
 */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(UNUSED void *base, UNUSED size_t size)
{
	return 0;
}

int ibv_dofork_range(UNUSED void *base, UNUSED size_t size)
{
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Public verbs a vRNIC does not offer.                                     */

int ibv_resolve_eth_l2_from_gid(UNUSED struct ibv_context *context,
				UNUSED struct ibv_ah_attr *attr,
				UNUSED uint8_t eth_mac[6],
				UNUSED uint16_t *vid)
{
	return EOPNOTSUPP;
}

int ibv_query_ece(UNUSED struct ibv_qp *qp, UNUSED struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

int ibv_set_ece(UNUSED struct ibv_qp *qp, UNUSED struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(UNUSED struct ibv_pd *pd,
				 UNUSED uint64_t offset, UNUSED size_t length,
				 UNUSED uint64_t iova, UNUSED int fd,
				 UNUSED int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_dm *ibv_import_dm(UNUSED struct ibv_context *context,
			     UNUSED uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void ibv_unimport_dm(UNUSED struct ibv_dm *dm)
{
}

/* A flags mask of guarantees; 0 promises nothing about write ordering. */
int ibv_query_qp_data_in_order(UNUSED struct ibv_qp *qp,
			       UNUSED enum ibv_wr_opcode op,
			       UNUSED uint32_t flags)
{
	return 0;
}

/* ------------------------------------------------------------------------ */
/* IBVERBS_PRIVATE_34: the provider interface, inert.                       */

bool verbs_allow_disassociate_destroy;

/* Called from libmlx5's and libefa's constructors; they never match a vRNIC. */
void verbs_register_driver_34(UNUSED const struct verbs_device_ops *ops)
{
}

void __verbs_log(UNUSED struct verbs_context *ctx, UNUSED uint32_t level,
		 UNUSED const char *fmt, ...)
{
}

/* Sizes a provider's on-stack command buffer; only the caller's own count. */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     UNUSED struct ibv_command_buffer *link)
{
	return num_attrs;
}

int execute_ioctl(UNUSED struct ibv_context *context,
		  UNUSED struct ibv_command_buffer *cmd)
{
	return EOPNOTSUPP;
}

void *_verbs_init_and_alloc_context(UNUSED struct ibv_device *device,
				    UNUSED int cmd_fd, UNUSED size_t alloc_size,
				    UNUSED struct verbs_context *context_offset,
				    UNUSED uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void verbs_uninit_context(UNUSED struct verbs_context *context)
{
}

void verbs_set_ops(UNUSED struct verbs_context *vctx,
		   UNUSED const struct verbs_context_ops *ops)
{
}

void verbs_init_cq(UNUSED struct ibv_cq *cq, UNUSED struct ibv_context *context,
		   UNUSED struct ibv_comp_channel *channel,
		   UNUSED void *cq_context)
{
}

struct ibv_context *verbs_open_device(UNUSED struct ibv_device *device,
				      UNUSED void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_read_ibdev_sysfs_file(UNUSED char *buf, UNUSED size_t size,
			      UNUSED struct verbs_sysfs_dev *sysfs_dev,
			      UNUSED const char *fnfmt, ...)
{
	errno = ENOENT;
	return -1;
}

/*
 * Every vRNIC has one port whose GIDs are its IPv4-mapped RoCEv2 GID at the
 * indices of URD_GID_TBL_LEN's layout (abi.h); index 2 is empty.  ibv_devinfo
 * treats a failure here as "type unknown" and only prints non-zero GIDs.
 */
int ibv_query_gid_type(UNUSED struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type)
{
	if (port_num != 1 || !urd_gid_index_ok(index) || !type)
		return EINVAL;
	*type = IBV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

/*
 * The ibv_cmd_* write()/ioctl() wrappers. A provider reaches them only
 * through its own context, which a vRNIC never creates.
 */
#define CMD_INERT(name, ...)                   \
	int name(__VA_ARGS__)                  \
	{                                      \
		return EOPNOTSUPP;             \
	}

CMD_INERT(ibv_cmd_advise_mr, UNUSED struct ibv_pd *pd,
	  UNUSED enum ibv_advise_mr_advice advice, UNUSED uint32_t flags,
	  UNUSED struct ibv_sge *sg_list, UNUSED uint32_t num_sge)
CMD_INERT(ibv_cmd_alloc_dm, UNUSED struct ibv_context *ctx,
	  UNUSED const struct ibv_alloc_dm_attr *dm_attr,
	  UNUSED struct verbs_dm *dm, UNUSED struct ibv_command_buffer *link)
CMD_INERT(ibv_cmd_alloc_mw, UNUSED struct ibv_pd *pd,
	  UNUSED enum ibv_mw_type type, UNUSED struct ibv_mw *mw,
	  UNUSED struct ibv_alloc_mw *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_alloc_mw_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_alloc_pd, UNUSED struct ibv_context *context,
	  UNUSED struct ibv_pd *pd, UNUSED struct ibv_alloc_pd *cmd,
	  UNUSED size_t cmd_size, UNUSED struct ib_uverbs_alloc_pd_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_attach_mcast, UNUSED struct ibv_qp *qp,
	  UNUSED const union ibv_gid *gid, UNUSED uint16_t lid)
CMD_INERT(ibv_cmd_close_xrcd, UNUSED struct verbs_xrcd *xrcd)
CMD_INERT(ibv_cmd_create_ah, UNUSED struct ibv_pd *pd,
	  UNUSED struct ibv_ah *ah, UNUSED struct ibv_ah_attr *attr,
	  UNUSED struct ib_uverbs_create_ah_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_counters, UNUSED struct ibv_context *context,
	  UNUSED struct ibv_counters_init_attr *init_attr,
	  UNUSED struct verbs_counters *vcounters,
	  UNUSED struct ibv_command_buffer *link)
CMD_INERT(ibv_cmd_create_cq, UNUSED struct ibv_context *context,
	  UNUSED int cqe, UNUSED struct ibv_comp_channel *channel,
	  UNUSED int comp_vector, UNUSED struct ibv_cq *cq,
	  UNUSED struct ibv_create_cq *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_create_cq_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_cq_ex, UNUSED struct ibv_context *context,
	  UNUSED const struct ibv_cq_init_attr_ex *cq_attr,
	  UNUSED struct verbs_cq *cq, UNUSED struct ibv_create_cq_ex *cmd,
	  UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_ex_create_cq_resp *resp,
	  UNUSED size_t resp_size, UNUSED uint32_t cmd_flags)
CMD_INERT(ibv_cmd_create_flow, UNUSED struct ibv_qp *qp,
	  UNUSED struct ibv_flow *flow_id, UNUSED struct ibv_flow_attr *flow_attr,
	  UNUSED void *ucmd, UNUSED size_t ucmd_size)
CMD_INERT(ibv_cmd_create_flow_action_esp, UNUSED struct ibv_context *ctx,
	  UNUSED struct ibv_flow_action_esp_attr *attr,
	  UNUSED struct verbs_flow_action *flow_action,
	  UNUSED struct ibv_command_buffer *driver)
CMD_INERT(ibv_cmd_create_qp, UNUSED struct ibv_pd *pd,
	  UNUSED struct ibv_qp *qp, UNUSED struct ibv_qp_init_attr *attr,
	  UNUSED struct ibv_create_qp *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_create_qp_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_qp_ex, UNUSED struct ibv_context *context,
	  UNUSED struct verbs_qp *qp, UNUSED struct ibv_qp_init_attr_ex *attr_ex,
	  UNUSED struct ibv_create_qp *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_create_qp_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_qp_ex2, UNUSED struct ibv_context *context,
	  UNUSED struct verbs_qp *qp, UNUSED struct ibv_qp_init_attr_ex *qp_attr,
	  UNUSED struct ibv_create_qp_ex *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_ex_create_qp_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_rwq_ind_table, UNUSED struct ibv_context *context,
	  UNUSED struct ibv_rwq_ind_table_init_attr *init_attr,
	  UNUSED struct ibv_rwq_ind_table *rwq_ind_table,
	  UNUSED struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_srq, UNUSED struct ibv_pd *pd,
	  UNUSED struct ibv_srq *srq, UNUSED struct ibv_srq_init_attr *attr,
	  UNUSED struct ibv_create_srq *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_create_srq_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_srq_ex, UNUSED struct ibv_context *context,
	  UNUSED struct verbs_srq *srq,
	  UNUSED struct ibv_srq_init_attr_ex *attr_ex,
	  UNUSED struct ibv_create_xsrq *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_create_srq_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_create_wq, UNUSED struct ibv_context *context,
	  UNUSED struct ibv_wq_init_attr *wq_init_attr, UNUSED struct ibv_wq *wq,
	  UNUSED struct ibv_create_wq *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_ex_create_wq_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_dealloc_mw, UNUSED struct ibv_mw *mw)
CMD_INERT(ibv_cmd_dealloc_pd, UNUSED struct ibv_pd *pd)
CMD_INERT(ibv_cmd_dereg_mr, UNUSED struct verbs_mr *vmr)
CMD_INERT(ibv_cmd_destroy_ah, UNUSED struct ibv_ah *ah)
CMD_INERT(ibv_cmd_destroy_counters, UNUSED struct verbs_counters *vcounters)
CMD_INERT(ibv_cmd_destroy_cq, UNUSED struct ibv_cq *cq)
CMD_INERT(ibv_cmd_destroy_flow, UNUSED struct ibv_flow *flow_id)
CMD_INERT(ibv_cmd_destroy_flow_action, UNUSED struct verbs_flow_action *action)
CMD_INERT(ibv_cmd_destroy_qp, UNUSED struct ibv_qp *qp)
CMD_INERT(ibv_cmd_destroy_rwq_ind_table,
	  UNUSED struct ibv_rwq_ind_table *rwq_ind_table)
CMD_INERT(ibv_cmd_destroy_srq, UNUSED struct ibv_srq *srq)
CMD_INERT(ibv_cmd_destroy_wq, UNUSED struct ibv_wq *wq)
CMD_INERT(ibv_cmd_detach_mcast, UNUSED struct ibv_qp *qp,
	  UNUSED const union ibv_gid *gid, UNUSED uint16_t lid)
CMD_INERT(ibv_cmd_free_dm, UNUSED struct verbs_dm *dm)
CMD_INERT(ibv_cmd_get_context, UNUSED struct verbs_context *context,
	  UNUSED struct ibv_get_context *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_get_context_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_modify_cq, UNUSED struct ibv_cq *cq,
	  UNUSED struct ibv_modify_cq_attr *attr,
	  UNUSED struct ibv_modify_cq *cmd, UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_modify_flow_action_esp,
	  UNUSED struct verbs_flow_action *flow_action,
	  UNUSED struct ibv_flow_action_esp_attr *attr,
	  UNUSED struct ibv_command_buffer *driver)
CMD_INERT(ibv_cmd_modify_qp, UNUSED struct ibv_qp *qp,
	  UNUSED struct ibv_qp_attr *attr, UNUSED int attr_mask,
	  UNUSED struct ibv_modify_qp *cmd, UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_modify_qp_ex, UNUSED struct ibv_qp *qp,
	  UNUSED struct ibv_qp_attr *attr, UNUSED int attr_mask,
	  UNUSED struct ibv_modify_qp_ex *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_ex_modify_qp_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_modify_srq, UNUSED struct ibv_srq *srq,
	  UNUSED struct ibv_srq_attr *srq_attr, UNUSED int srq_attr_mask,
	  UNUSED struct ibv_modify_srq *cmd, UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_modify_wq, UNUSED struct ibv_wq *wq,
	  UNUSED struct ibv_wq_attr *attr, UNUSED struct ibv_modify_wq *cmd,
	  UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_open_qp, UNUSED struct ibv_context *context,
	  UNUSED struct verbs_qp *qp, UNUSED int vqp_sz,
	  UNUSED struct ibv_qp_open_attr *attr, UNUSED struct ibv_open_qp *cmd,
	  UNUSED size_t cmd_size, UNUSED struct ib_uverbs_create_qp_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_open_xrcd, UNUSED struct ibv_context *context,
	  UNUSED struct verbs_xrcd *xrcd, UNUSED int vxrcd_size,
	  UNUSED struct ibv_xrcd_init_attr *attr,
	  UNUSED struct ibv_open_xrcd *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_open_xrcd_resp *resp, UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_poll_cq, UNUSED struct ibv_cq *cq, UNUSED int ne,
	  UNUSED struct ibv_wc *wc)
CMD_INERT(ibv_cmd_post_recv, UNUSED struct ibv_qp *ibqp,
	  UNUSED struct ibv_recv_wr *wr, UNUSED struct ibv_recv_wr **bad_wr)
CMD_INERT(ibv_cmd_post_send, UNUSED struct ibv_qp *ibqp,
	  UNUSED struct ibv_send_wr *wr, UNUSED struct ibv_send_wr **bad_wr)
CMD_INERT(ibv_cmd_post_srq_recv, UNUSED struct ibv_srq *srq,
	  UNUSED struct ibv_recv_wr *wr, UNUSED struct ibv_recv_wr **bad_wr)
CMD_INERT(ibv_cmd_query_context, UNUSED struct ibv_context *ctx,
	  UNUSED struct ibv_command_buffer *driver)
CMD_INERT(ibv_cmd_query_device_any, UNUSED struct ibv_context *context,
	  UNUSED const struct ibv_query_device_ex_input *input,
	  UNUSED struct ibv_device_attr_ex *attr, UNUSED size_t attr_size,
	  UNUSED struct ib_uverbs_ex_query_device_resp *resp,
	  UNUSED size_t *resp_size)
CMD_INERT(ibv_cmd_query_mr, UNUSED struct ibv_pd *pd,
	  UNUSED struct verbs_mr *vmr, UNUSED uint32_t mr_handle)
CMD_INERT(ibv_cmd_query_port, UNUSED struct ibv_context *context,
	  UNUSED uint8_t port_num, UNUSED struct ibv_port_attr *port_attr,
	  UNUSED struct ibv_query_port *cmd, UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_query_qp, UNUSED struct ibv_qp *qp,
	  UNUSED struct ibv_qp_attr *qp_attr, UNUSED int attr_mask,
	  UNUSED struct ibv_qp_init_attr *qp_init_attr,
	  UNUSED struct ibv_query_qp *cmd, UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_query_srq, UNUSED struct ibv_srq *srq,
	  UNUSED struct ibv_srq_attr *srq_attr, UNUSED struct ibv_query_srq *cmd,
	  UNUSED size_t cmd_size)
CMD_INERT(ibv_cmd_read_counters, UNUSED struct verbs_counters *vcounters,
	  UNUSED uint64_t *counters_value, UNUSED uint32_t ncounters,
	  UNUSED uint32_t flags, UNUSED struct ibv_command_buffer *link)
CMD_INERT(ibv_cmd_reg_dm_mr, UNUSED struct ibv_pd *pd,
	  UNUSED struct verbs_dm *dm, UNUSED uint64_t offset,
	  UNUSED size_t length, UNUSED unsigned int access,
	  UNUSED struct verbs_mr *vmr, UNUSED struct ibv_command_buffer *link)
CMD_INERT(ibv_cmd_reg_dmabuf_mr, UNUSED struct ibv_pd *pd,
	  UNUSED uint64_t offset, UNUSED size_t length, UNUSED uint64_t iova,
	  UNUSED int fd, UNUSED int access, UNUSED struct verbs_mr *vmr)
CMD_INERT(ibv_cmd_reg_mr, UNUSED struct ibv_pd *pd, UNUSED void *addr,
	  UNUSED size_t length, UNUSED uint64_t hca_va, UNUSED int access,
	  UNUSED struct verbs_mr *vmr, UNUSED struct ibv_reg_mr *cmd,
	  UNUSED size_t cmd_size, UNUSED struct ib_uverbs_reg_mr_resp *resp,
	  UNUSED size_t resp_size)
CMD_INERT(ibv_cmd_req_notify_cq, UNUSED struct ibv_cq *cq,
	  UNUSED int solicited_only)
CMD_INERT(ibv_cmd_rereg_mr, UNUSED struct verbs_mr *vmr, UNUSED uint32_t flags,
	  UNUSED void *addr, UNUSED size_t length, UNUSED uint64_t hca_va,
	  UNUSED int access, UNUSED struct ibv_pd *pd,
	  UNUSED struct ibv_rereg_mr *cmd, UNUSED size_t cmd_sz,
	  UNUSED struct ib_uverbs_rereg_mr_resp *resp, UNUSED size_t resp_sz)
CMD_INERT(ibv_cmd_resize_cq, UNUSED struct ibv_cq *cq, UNUSED int cqe,
	  UNUSED struct ibv_resize_cq *cmd, UNUSED size_t cmd_size,
	  UNUSED struct ib_uverbs_resize_cq_resp *resp, UNUSED size_t resp_size)

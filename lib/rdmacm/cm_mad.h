/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The IB Communication Manager's messages (IBA Vol 1, chapter 12.6) as GSI
 * MADs on QP1: decoded into host-order structs and encoded back, byte exact.
 * No state here: cm_mad.c is a codec, fuzzed and unit-tested on its own
 * (tests/unit/u_cm_mad.c, tests/fuzz/fuzz_cm.c).  The daemon does not use
 * it: it steers QP1 traffic by three fields only (engine/cm_steer.c).
 *
 * A MAD is 256 bytes: the 24-byte common header, then 232 bytes of CM data
 * whose layout the attribute ID selects.  All multi-byte fields are big
 * endian on the wire; bit fields are packed from the most significant bit. */
#ifndef URD_CM_MAD_H
#define URD_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#define CM_MAD_SIZE          256
#define CM_MAD_HDR_SIZE      24
#define CM_MGMT_CLASS        0x07
#define CM_CLASS_VERSION     2
#define CM_BASE_VERSION      1
#define CM_METHOD_SEND       0x03

enum cm_attr {
	CM_ATTR_CLASS_PORT_INFO = 0x0001,
	CM_ATTR_REQ      = 0x0010,
	CM_ATTR_MRA      = 0x0011,
	CM_ATTR_REJ      = 0x0012,
	CM_ATTR_REP      = 0x0013,
	CM_ATTR_RTU      = 0x0014,
	CM_ATTR_DREQ     = 0x0015,
	CM_ATTR_DREP     = 0x0016,
	CM_ATTR_SIDR_REQ = 0x0017,
	CM_ATTR_SIDR_REP = 0x0018,
	CM_ATTR_LAP      = 0x0019,
	CM_ATTR_APR      = 0x001a,
};

/* Private data room of each message (bytes). */
#define CM_REQ_PDATA      92
#define CM_MRA_PDATA      222
#define CM_REJ_PDATA      148
#define CM_REP_PDATA      196
#define CM_RTU_PDATA      224
#define CM_DREQ_PDATA     220
#define CM_DREP_PDATA     224
#define CM_SIDR_REQ_PDATA 216
#define CM_SIDR_REP_PDATA 136
#define CM_REJ_ARI        72

/* REJ reasons (Linux's ib_cm_rej_reason) that rdma_cm programs see as event status. */
enum cm_rej_reason {
	CM_REJ_NO_QP               = 1,
	CM_REJ_NO_EEC              = 2,
	CM_REJ_NO_RESOURCES        = 3,
	CM_REJ_TIMEOUT             = 4,
	CM_REJ_UNSUPPORTED         = 5,
	CM_REJ_INVALID_COMM_ID     = 6,
	CM_REJ_INVALID_COMM_INST   = 7,
	CM_REJ_INVALID_SERVICE_ID  = 8,
	CM_REJ_INVALID_TRANSPORT   = 9,
	CM_REJ_STALE_CONN          = 10,
	CM_REJ_CONSUMER_DEFINED    = 28,
};

/* Which message a REJ or MRA is about (2-bit field). */
enum cm_msg_ref { CM_MSG_REQ = 0, CM_MSG_REP = 1, CM_MSG_OTHER = 2 };

/* The 24-byte MAD header. */
struct cm_mad_hdr {
	uint8_t  base_version;      /* 1 */
	uint8_t  mgmt_class;        /* 0x07 */
	uint8_t  class_version;     /* 2 */
	uint8_t  method;            /* 0x03 Send */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;           /* enum cm_attr */
	uint32_t attr_mod;
};

/* One path (primary; the alternate is encoded as all zero). */
struct cm_path {
	uint16_t local_lid, remote_lid;     /* RoCE: 0xffff (permissive) when hop_limit > 1, as Linux's
					     * cm_format_req (else the path's LIDs and subnet_local 1) */
	uint8_t  local_gid[16], remote_gid[16];
	uint32_t flow_label;                /* 20 bits */
	uint8_t  packet_rate;               /* 6 bits */
	uint8_t  traffic_class;
	uint8_t  hop_limit;
	uint8_t  sl;                        /* 4 bits */
	uint8_t  subnet_local;              /* 1 bit */
	uint8_t  local_ack_timeout;         /* 5 bits */
};

struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;                 /* 24 bits */
	uint8_t  responder_resources;
	uint32_t local_eecn;                /* 24 bits */
	uint8_t  initiator_depth;
	uint32_t remote_eecn;               /* 24 bits */
	uint8_t  remote_cm_response_timeout;/* 5 bits */
	uint8_t  transport_type;            /* 2 bits: 0 RC, 1 UC, 2 RD, 3 extended (then extended_transport) */
	uint8_t  flow_control;              /* 1 bit */
	uint32_t starting_psn;              /* 24 bits */
	uint8_t  local_cm_response_timeout; /* 5 bits */
	uint8_t  retry_count;               /* 3 bits */
	uint16_t pkey;
	uint8_t  path_mtu;                  /* 4 bits: enum ibv_mtu */
	uint8_t  rdc_exists;                /* 1 bit */
	uint8_t  rnr_retry_count;           /* 3 bits */
	uint8_t  max_cm_retries;            /* 4 bits */
	uint8_t  srq;                       /* 1 bit */
	uint8_t  extended_transport;        /* 3 bits */
	struct cm_path primary;
	uint8_t  pdata[CM_REQ_PDATA];       /* always the whole room; the length is not on the wire */
};

struct cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t  msg_mraed;                 /* enum cm_msg_ref */
	uint8_t  service_timeout;           /* 5 bits */
	uint8_t  pdata[CM_MRA_PDATA];
};

struct cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t  msg_rejected;              /* enum cm_msg_ref */
	uint8_t  ari_length;                /* 7 bits, <= CM_REJ_ARI */
	uint16_t reason;                    /* enum cm_rej_reason */
	uint8_t  ari[CM_REJ_ARI];
	uint8_t  pdata[CM_REJ_PDATA];
};

struct cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;                 /* 24 bits */
	uint32_t local_eecn;                /* 24 bits */
	uint32_t starting_psn;              /* 24 bits */
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	uint8_t  target_ack_delay;          /* 5 bits */
	uint8_t  failover_accepted;         /* 2 bits */
	uint8_t  flow_control;              /* 1 bit */
	uint8_t  rnr_retry_count;           /* 3 bits */
	uint8_t  srq;                       /* 1 bit */
	uint64_t local_ca_guid;
	uint8_t  pdata[CM_REP_PDATA];
};

struct cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t  pdata[CM_RTU_PDATA];
};

struct cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;                /* 24 bits */
	uint8_t  pdata[CM_DREQ_PDATA];
};

struct cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t  pdata[CM_DREP_PDATA];
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t  pdata[CM_SIDR_REQ_PDATA];
};

/* SIDR_REP status values (Linux's ib_cm_sidr_status) */
enum cm_sidr_status {
	CM_SIDR_SUCCESS      = 0,
	CM_SIDR_UNSUPPORTED  = 1,     /* no such service: rdma_cm maps it to UNREACHABLE */
	CM_SIDR_REJECT       = 2,
	CM_SIDR_NO_QP        = 3,
	CM_SIDR_REDIRECT     = 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t  status;
	uint8_t  add_info_length;
	uint32_t qpn;                       /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t  class_port_info[72];
	uint8_t  pdata[CM_SIDR_REP_PDATA];
};

struct cm_msg {
	struct cm_mad_hdr hdr;              /* hdr.attr_id says which member is valid */
	union {
		struct cm_req      req;
		struct cm_mra      mra;
		struct cm_rej      rej;
		struct cm_rep      rep;
		struct cm_rtu      rtu;
		struct cm_dreq     dreq;
		struct cm_drep     drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	};
};

/* Decode a received MAD.  len is what arrived (the GRH already stripped):
 * at least CM_MAD_SIZE bytes are needed.  0, or -EINVAL for anything that
 * is not a CM message this codec knows: short, base/class/version wrong,
 * method not Send, an unknown attribute (LAP, APR and ClassPortInfo too),
 * a REJ whose ARI length is over CM_REJ_ARI.  Reserved bits are ignored, as
 * the spec says receivers must.  Never reads past len, never lets a length
 * field decide how much is copied. */
int cm_mad_decode(const uint8_t *mad, size_t len, struct cm_msg *out);

/* Encode msg (hdr.attr_id selects the layout; base_version, mgmt_class,
 * class_version and method are filled in by the codec) into exactly
 * CM_MAD_SIZE bytes.  Fields wider than their wire room are truncated to it.
 * 0, or -EINVAL for an unknown attribute. */
int cm_mad_encode(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE]);

/* The name of an attribute ID for logs ("REQ", "REP", ..., "?"). */
const char *cm_attr_name(uint16_t attr_id);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The vRNIC region: the one interface between a tenant (our libibverbs, in a
 * container or a VM guest) and unirdmad.
 *
 * Notes (read before touching anything here)
 * - One file per vRNIC.  The first URD_REGION_CTRL_SIZE bytes are the control
 *   part (header, per-context mailboxes, doorbells, ring arena).  For a
 *   container the same file continues with a memory window (hdr.mem_off,
 *   hdr.mem_size) onto which the library moves registered pages; for a VM the
 *   file is only the control part (an ivshmem BAR must be a power of two) and
 *   registered memory lives in guest RAM.
 * - Offsets, never pointers.  Fixed-width little-endian fields.
 * - Every byte is writable by the tenant.  The daemon copies a request out of
 *   a mailbox before validating it, keeps authoritative state privately, masks
 *   every index it reads, and never trusts a value it did not write itself.
 *   Daemon-written fields (device attributes, CQEs, engine indices) are only
 *   ever trusted by the tenant that can scribble on them anyway.
 * - Rings use free-running 32-bit indices; slot = index & (n - 1); a ring is
 *   full when prod - cons == n.  Producer and consumer indices sit on separate
 *   cache lines.
 *
 * Who writes what:
 *   header device/port attributes, daemon words ........ daemon
 *   header engine_sleeping ............................. engine
 *   header engine_wake, ctrl_bell (futex words) ........ tenant increments, daemon waits
 *   slot req_* + request area .......................... tenant
 *   slot resp_* + response area, events ................ daemon
 *   SQ/RQ/SRQ: prod + WQEs by tenant, cons by engine
 *   CQ: prod + CQEs by engine, cons + arm by tenant
 *   doorbell bits ...................................... tenant sets, engine clears
 */
#ifndef UNIRDMA_ABI_H
#define UNIRDMA_ABI_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define URD_MAGIC            0x31414d4452494e55ULL /* "UNIRDMA1" little endian */
#define URD_ABI_VERSION      1u
#define URD_CACHELINE        64u
#define URD_PAGE_SIZE        4096u

#define URD_REGION_CTRL_SIZE (256ull << 20)  /* power of two: also the VM BAR size */
#define URD_HDR_SIZE         4096u
#define URD_MAX_CTX          64u             /* mailboxes per vRNIC */
#define URD_SLOT_SIZE        (64u << 10)
#define URD_SLOTS_OFF        (64u << 10)
#define URD_DB_OFF           (URD_SLOTS_OFF + URD_MAX_CTX * URD_SLOT_SIZE)
#define URD_DB_SIZE          4096u
#define URD_MAX_QP_SLOTS     4096u           /* doorbell bits: QPs per vRNIC */
#define URD_ARENA_OFF        (8u << 20)
#define URD_ARENA_SIZE       (URD_REGION_CTRL_SIZE - URD_ARENA_OFF)

/* Byte of the region file the daemon keeps an OFD write lock on while it
 * serves the vRNIC: a tenant that finds it unlocked knows the daemon died
 * (even by SIGKILL) without waiting for a timeout.  Context slots lock bytes
 * [0, URD_MAX_CTX). */
#define URD_DAEMON_LOCK_BYTE URD_MAX_CTX

#define URD_SLOT_HDR_SIZE    4096u
#define URD_MSG_MAX          ((URD_SLOT_SIZE - URD_SLOT_HDR_SIZE) / 2)   /* 30 KiB */
#define URD_ASYNC_RING_N     64u

#define URD_RING_HDR_SIZE    256u            /* ring control block before the slots */

/* Device limits the daemon advertises (the header carries the live values). */
/* The GID table of the port, laid out so that the habits of programs written
 * for other RoCE devices find the routable GID: every entry is the vRNIC's
 * ::ffff:<ip>, RoCE v2, except index 2, which is empty.  Index 0 is ours
 * (DESIGN.md 5, `-g 0`, `-x 0`); index 1 is where rxe puts its IPv4 RoCE v2
 * GID (after fe80:: at 0: `-g 1`); index 3 is ConnectX's (fe80:: v1 and v2
 * at 0 and 1, ::ffff:<ip> v1 at 2, v2 at 3: perftest's `-x 3`).  No RoCE v1
 * and no link-local GID: a vRNIC speaks RoCE v2 over IPv4 only, so ConnectX's
 * index 2 (RoCE v1) stays empty rather than lie about its type. */
#define URD_GID_TBL_LEN      4u
static inline bool urd_gid_index_ok(uint32_t i)
{
	return i < URD_GID_TBL_LEN && i != 2;
}

/* Multicast (ibv_attach_mcast): groups a vRNIC's QPs may join in all, and
 * QPs of one tenant on one host in one group. */
#define URD_MAX_MCAST_ATTACH 1024u
#define URD_MAX_MCAST_QP     56u             /* rxe's max_mcast_qp_attach */
#define URD_MCAST_QPN        0xffffffu       /* the destination QPN of a multicast send */
#define URD_MAX_INLINE       512u
#define URD_MAX_SGE          16u
#define URD_SEND_WQE_HDR     128u
#define URD_MAX_WR           16384u
#define URD_MAX_CQE          65536u
#define URD_MAX_MSG          (1u << 31)
#define URD_MAX_RD_ATOM      128u

/* ------------------------------------------------------------------ header */

enum urd_daemon_state {
	URD_STATE_STARTING = 0,
	URD_STATE_RUNNING  = 1,
	URD_STATE_DEAD     = 2,   /* daemon stopped: every call fails, DEVICE_FATAL raised */
	URD_STATE_DELETED  = 3,   /* vRNIC deleted by the operator */
};

enum urd_region_flags {
	URD_REGION_VM = 1u << 0,  /* no futexes reach this tenant: poll, never sleep on a word */
	/* The operator lets this vRNIC take address vectors without a GRH
	 * (`vrnic set --grhless-av on`): ibv_create_ah and the RC/UC AV of
	 * ibv_modify_qp accept is_global = 0 and find the peer by QPN alone,
	 * as on InfiniBand.  Off (the default) they give EINVAL, as the
	 * kernel's verbs layer does on a RoCE port (rdma_check_ah_attr). */
	URD_REGION_GRHLESS_AV = 1u << 1,
};

struct urd_dev_attr {
	char     fw_ver[64];
	uint64_t node_guid;         /* host byte order */
	uint64_t sys_image_guid;    /* host byte order */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t device_cap_flags;
	uint32_t max_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t atomic_cap;        /* enum ibv_atomic_cap */
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_ah;
	uint32_t max_inline_data;
	uint16_t max_pkeys;
	uint8_t  local_ca_ack_delay;
	uint8_t  phys_port_cnt;
	uint32_t reserved[8];
};
static_assert(sizeof(struct urd_dev_attr) == 216, "urd_dev_attr size");

struct urd_port_attr {
	uint32_t state;             /* enum ibv_port_state */
	uint32_t max_mtu;           /* enum ibv_mtu */
	uint32_t active_mtu;
	uint32_t gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint16_t pkey_tbl_len;
	uint8_t  active_width;
	uint8_t  active_speed;
	uint8_t  phys_state;
	uint8_t  link_layer;        /* IBV_LINK_LAYER_ETHERNET */
	uint8_t  pad[2];
	uint8_t  gid[16];           /* index 0: ::ffff:a.b.c.d */
	uint32_t vip;               /* virtual IPv4, network byte order */
	uint32_t reserved[7];
};
static_assert(sizeof(struct urd_port_attr) == 80, "urd_port_attr size");

struct urd_region_hdr {
	uint64_t magic;
	uint32_t abi_version;
	uint32_t hdr_size;
	uint64_t region_size;       /* the whole file */
	uint64_t ctrl_size;         /* URD_REGION_CTRL_SIZE */
	uint64_t slots_off;
	uint32_t nslots;
	uint32_t slot_size;
	uint64_t db_off;
	uint64_t arena_off;
	uint64_t arena_size;
	uint64_t mem_off;           /* container memory window; 0 when none */
	uint64_t mem_size;
	uint32_t flags;             /* enum urd_region_flags */
	uint32_t vrnic_id;
	char     name[64];
	char     tenant[64];
	struct urd_dev_attr  dev;
	struct urd_port_attr port;
	uint8_t  pad0[1024 - 520];

	/* 1024: engine handshake.  The engine sets engine_sleeping before it
	 * re-checks the doorbells and waits on engine_wake; a poster sets its
	 * doorbell bit, then (full fence) reads engine_sleeping and, if set,
	 * increments engine_wake and futex-wakes it. */
	uint32_t engine_sleeping;
	uint32_t engine_wake;
	uint8_t  pad1[URD_CACHELINE - 8];

	/* 1088: tenant increments and futex-wakes after publishing a request. */
	uint32_t ctrl_bell;
	uint8_t  pad2[URD_CACHELINE - 4];

	/* 1152: daemon status (enum urd_daemon_state) and liveness. */
	uint32_t daemon_state;
	uint32_t daemon_epoch;      /* changes on every daemon start */
	uint64_t daemon_heartbeat;  /* daemon increments while it runs (VM tenants watch it) */
	uint8_t  pad3[URD_CACHELINE - 16];

	uint8_t  pad4[URD_HDR_SIZE - 1216];
};
static_assert(offsetof(struct urd_region_hdr, dev) == 224, "dev offset");
static_assert(offsetof(struct urd_region_hdr, port) == 440, "port offset");
static_assert(offsetof(struct urd_region_hdr, engine_sleeping) == 1024, "engine line");
static_assert(offsetof(struct urd_region_hdr, ctrl_bell) == 1088, "ctrl line");
static_assert(offsetof(struct urd_region_hdr, daemon_state) == 1152, "daemon line");
static_assert(sizeof(struct urd_region_hdr) == URD_HDR_SIZE, "header is one page");

/* --------------------------------------------------------------- doorbells */

/* Bit i of bits[] means "QP with db_index i may have new work".  summary bit w
 * means "bits[w] may be non-zero".  The tenant sets bits (fetch_or), the engine
 * takes them (exchange with 0).  A bit the tenant sets for a QP it does not own
 * only makes the engine look at that index and find nothing of the tenant's. */
struct urd_doorbells {
	uint64_t summary;
	uint8_t  pad[URD_CACHELINE - 8];
	uint64_t bits[URD_MAX_QP_SLOTS / 64];
};
static_assert(sizeof(struct urd_doorbells) <= URD_DB_SIZE, "doorbells fit");
static_assert(URD_MAX_QP_SLOTS / 64 <= 64, "summary covers every word");

/* ------------------------------------------------------------------- rings */

struct urd_ring_hdr {
	uint32_t prod;              /* line 0: producer index */
	uint8_t  pad0[URD_CACHELINE - 4];
	uint32_t cons;              /* line 1: consumer index */
	uint8_t  pad1[URD_CACHELINE - 4];
	/* line 2, CQ only, tenant-written: arm request.  The library stores
	 * URD_CQ_ARM_* here; the engine, after writing a CQE that matches,
	 * exchanges it with 0 and raises a completion event. */
	uint32_t arm;
	uint8_t  pad2[URD_CACHELINE - 4];
	/* line 3, engine-written: completion events raised (CQ), error flag,
	 * and (SQ) polling: 1 while the engine has this send queue on its
	 * active list and will read prod again without a doorbell.  The library
	 * publishes prod, fences, reads polling and rings the doorbell only if
	 * it is 0; the engine stores 0, fences and reads prod once more before
	 * it drops the queue (Dekker: one side always sees the other).  The
	 * engine never reads it: a tenant that scribbles 1 here only stops its
	 * own doorbells. */
	uint32_t events;
	uint32_t flags;             /* URD_RING_F_* */
	uint32_t polling;
	uint8_t  pad3[URD_CACHELINE - 12];
};
static_assert(offsetof(struct urd_ring_hdr, cons) == 64, "cons line");
static_assert(offsetof(struct urd_ring_hdr, arm) == 128, "arm line");
static_assert(offsetof(struct urd_ring_hdr, events) == 192, "events line");
static_assert(offsetof(struct urd_ring_hdr, polling) == 200, "polling flag");
static_assert(sizeof(struct urd_ring_hdr) == URD_RING_HDR_SIZE, "ring header");

enum { URD_CQ_ARM_NONE = 0, URD_CQ_ARM_SOLICITED = 1, URD_CQ_ARM_ANY = 2 };
enum { URD_RING_F_ERROR = 1u << 0 };  /* CQ overrun: no more CQEs are written */

struct urd_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
static_assert(sizeof(struct urd_sge) == 16, "sge");

enum urd_wr_opcode {            /* values of ibv_wr_opcode, kept explicit */
	URD_WR_RDMA_WRITE          = 0,
	URD_WR_RDMA_WRITE_WITH_IMM = 1,
	URD_WR_SEND                = 2,
	URD_WR_SEND_WITH_IMM       = 3,
	URD_WR_RDMA_READ           = 4,
	URD_WR_ATOMIC_CMP_AND_SWP  = 5,
	URD_WR_ATOMIC_FETCH_AND_ADD = 6,
	URD_WR_LOCAL_INV           = 7,    /* invalidate_rkey: a type 2 memory window */
	URD_WR_BIND_MW             = 8,    /* the bind_* fields */
	URD_WR_SEND_WITH_INV       = 9,    /* SEND + invalidate_rkey at the responder */
	URD_WR_NUM_OPCODES         = 10,
};

enum urd_wqe_flags {
	URD_WQE_SIGNALED  = 1u << 0,
	URD_WQE_SOLICITED = 1u << 1,
	URD_WQE_INLINE    = 1u << 2,
	URD_WQE_FENCE     = 1u << 3,
};

/* Send WQE: a 128-byte header, then num_sge urd_sge or inline_len bytes. */
struct urd_send_wqe {
	uint64_t wr_id;
	uint8_t  opcode;            /* enum urd_wr_opcode */
	uint8_t  flags;             /* enum urd_wqe_flags */
	uint16_t num_sge;
	uint32_t inline_len;
	uint32_t imm_data;          /* network byte order, as the application gave it */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	/* UD destination (from the AH and the WR) */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint8_t  dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint8_t  is_global;
	uint8_t  sl;
	uint8_t  hop_limit;
	uint8_t  traffic_class;
	uint8_t  sgid_index;
	uint8_t  port_num;
	/* LOCAL_INV, SEND_WITH_INV: the R_Key to invalidate (host order) */
	uint32_t invalidate_rkey;
	/* BIND_MW (IB spec 10.6.7.2): the window as the poster names it (its
	 * current R_Key), the MR it goes on (0: unbind a type 1 window), the
	 * window's IBV_ACCESS_* flags; rkey is the window's new R_Key (only
	 * its low 8 bits may differ), remote_addr and compare_add its start
	 * and length. */
	uint32_t bind_mw_rkey;
	uint32_t bind_mr_lkey;
	uint32_t bind_access;
	uint8_t  reserved[24];
};
static_assert(sizeof(struct urd_send_wqe) == URD_SEND_WQE_HDR, "send wqe header");

struct urd_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved;
	/* followed by num_sge struct urd_sge */
};
static_assert(sizeof(struct urd_recv_wqe) == 16, "recv wqe header");

/* A CQE carries ibv_wc's fields in fixed-width form. */
struct urd_cqe {
	uint64_t wr_id;
	uint32_t status;            /* enum ibv_wc_status */
	uint32_t opcode;            /* enum ibv_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;          /* network byte order */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;          /* IBV_WC_GRH, IBV_WC_WITH_IMM, ... */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t  sl;
	uint8_t  dlid_path_bits;
	uint16_t reserved0;
	uint64_t timestamp;
	uint64_t reserved1;
};
static_assert(sizeof(struct urd_cqe) == 64, "cqe is a cache line");

/* ---------------------------------------------------------- context slots */

enum urd_obj_kind { URD_OBJ_NONE = 0, URD_OBJ_QP, URD_OBJ_CQ, URD_OBJ_SRQ, URD_OBJ_PORT, URD_OBJ_DEVICE };

struct urd_async_event {
	uint32_t event_type;        /* enum ibv_event_type */
	uint32_t obj_kind;          /* enum urd_obj_kind */
	uint32_t handle;            /* the object's handle, or port number */
	uint32_t reserved;
};

/* A context slot: claimed by the library with an open-file-description
 * write lock on byte <slot index> of the region file (F_OFD_SETLK); the
 * kernel drops the lock when the process dies, which is how the daemon
 * learns that the context is gone.  In a VM region (URD_REGION_VM) no lock
 * reaches the host: the slot is claimed through vm_owner and the context is
 * alive while its heartbeat moves (lib/vm.c, daemon/vm.c). */
struct urd_slot_hdr {
	/* line 0, tenant: request published when req_seq changes. */
	uint32_t req_seq;
	uint8_t  pad0[URD_CACHELINE - 4];
	/* line 1, daemon: response for req_seq == resp_seq; futex word. */
	uint32_t resp_seq;
	uint8_t  pad1[URD_CACHELINE - 4];
	/* line 2, daemon: incremented (and futex-woken) after every event. */
	uint32_t event_seq;
	uint8_t  pad2[URD_CACHELINE - 4];
	/* line 3, daemon: async event ring producer. */
	uint32_t async_prod;
	uint8_t  pad3[URD_CACHELINE - 4];
	/* line 4, tenant: async event ring consumer. */
	uint32_t async_cons;
	uint8_t  pad4[URD_CACHELINE - 4];
	/* line 5, tenant: heartbeat for tenants without process liveness (VMs). */
	uint64_t heartbeat;
	/* VM regions only (no OFD lock reaches a guest): a guest process claims
	 * the slot by compare-and-swap of 0 -> a non-zero token and gives it back
	 * by storing 0 after CLOSE_CTX; the daemon stores 0 when the heartbeat
	 * stopped (daemon/vm.c). */
	uint32_t vm_owner;
	uint32_t vm_reserved;
	uint8_t  pad5[URD_CACHELINE - 16];
	struct urd_async_event async[URD_ASYNC_RING_N];
	uint8_t  pad6[URD_SLOT_HDR_SIZE - 6 * URD_CACHELINE - URD_ASYNC_RING_N * 16];
};
static_assert(offsetof(struct urd_slot_hdr, resp_seq) == 64, "resp line");
static_assert(offsetof(struct urd_slot_hdr, async) == 384, "async ring");
static_assert(offsetof(struct urd_slot_hdr, heartbeat) == 320, "heartbeat line");
static_assert(offsetof(struct urd_slot_hdr, vm_owner) == 328, "vm owner word");
static_assert(sizeof(struct urd_slot_hdr) == URD_SLOT_HDR_SIZE, "slot header");

/* Request area at slot + URD_SLOT_HDR_SIZE, response area URD_MSG_MAX later. */
#define URD_SLOT_REQ_OFF  URD_SLOT_HDR_SIZE
#define URD_SLOT_RESP_OFF (URD_SLOT_HDR_SIZE + URD_MSG_MAX)

/* ------------------------------------------------------ control protocol */

/* Every message starts with this header; version is URD_ABI_VERSION.  A
 * request with another version is answered with status -EPROTO and nothing
 * else happens.  Op numbers are never renumbered. */
struct urd_msg_hdr {
	uint16_t version;
	uint16_t op;                /* enum urd_op */
	uint32_t len;               /* bytes including this header */
	int32_t  status;            /* response: 0 or -errno */
	uint32_t reserved;
};
static_assert(sizeof(struct urd_msg_hdr) == 16, "msg header");

enum urd_op {
	URD_OP_OPEN_CTX   = 1,
	URD_OP_CLOSE_CTX  = 2,
	URD_OP_ALLOC_PD   = 3,
	URD_OP_DEALLOC_PD = 4,
	URD_OP_MEM_ALLOC  = 5,
	URD_OP_MEM_FREE   = 6,
	URD_OP_REG_MR     = 7,
	URD_OP_DEREG_MR   = 8,
	URD_OP_CREATE_CQ  = 9,
	URD_OP_DESTROY_CQ = 10,
	URD_OP_CREATE_SRQ = 11,
	URD_OP_MODIFY_SRQ = 12,
	URD_OP_QUERY_SRQ  = 13,
	URD_OP_DESTROY_SRQ = 14,
	URD_OP_CREATE_QP  = 15,
	URD_OP_MODIFY_QP  = 16,
	URD_OP_QUERY_QP   = 17,
	URD_OP_DESTROY_QP = 18,
	URD_OP_REREG_MR   = 19,
	URD_OP_ALLOC_MW   = 20,
	URD_OP_DEALLOC_MW = 21,
	URD_OP_RESIZE_CQ  = 22,
	URD_OP_ATTACH_MCAST = 23,
	URD_OP_DETACH_MCAST = 24,
	URD_OP_CM_AGENT   = 25,         /* include/unirdma/cm.h */
	URD_OP_CM_LISTEN  = 26,
	URD_OP_MAX,

	/* 64..79: the forwarding data path, a baseline for benchmarks only
	 * (FreeFlow's design: every data verb is a request the daemon's control
	 * plane executes).  Layouts in unirdma/fwd.h. */
	URD_OP_FWD_FIRST  = 64,
	URD_OP_FWD_LAST   = 79,
};

struct urd_open_ctx_req {
	struct urd_msg_hdr hdr;
	uint32_t pid;               /* informational only */
	uint32_t flags;
	char     comm[16];          /* informational only */
};
struct urd_open_ctx_resp {
	struct urd_msg_hdr hdr;
	uint32_t ctx_id;
	uint32_t reserved;
};

/* Generic "one handle" request, used by DEALLOC_PD, DEREG_MR, DESTROY_CQ,
 * DESTROY_SRQ, QUERY_SRQ, DESTROY_QP, QUERY_QP, CLOSE_CTX (handle 0). */
struct urd_handle_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t reserved;
};
struct urd_handle_resp {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t reserved;
};

/* MEM_ALLOC: len bytes (a page multiple) of the container memory window;
 * off is relative to hdr.mem_off.  MEM_FREE gives back exactly one earlier
 * allocation (off, len). */
struct urd_mem_req {
	struct urd_msg_hdr hdr;
	uint64_t off;
	uint64_t len;
};
struct urd_mem_resp {
	struct urd_msg_hdr hdr;
	uint64_t off;
	uint64_t len;
};

/* REG_MR: the MR covers [iova, iova + length).  Its bytes are described in
 * order by segments: segment i covers the next segs[i].len bytes and lives at
 * segs[i].off in the tenant's memory space (container: offset in the memory
 * window, inside allocations of this context; VM: guest-physical address).
 *
 * URD_REG_MR_INDIRECT (VM regions only): more segments than a message holds.
 * segs[] then describe, in order, the guest-physical pieces of a table of
 * struct urd_mr_seg in guest RAM; the table is their concatenation (a
 * multiple of 16 bytes, at most URD_MR_MAX_SEGS_INDIRECT entries) and its
 * entries are the MR's segments.  The daemon copies the table during the
 * request; the guest may free it once the answer came. */
struct urd_mr_seg {
	uint64_t off;
	uint64_t len;
};
struct urd_reg_mr_req {
	struct urd_msg_hdr hdr;
	uint32_t pd;
	uint32_t access;            /* enum ibv_access_flags */
	uint64_t iova;
	uint64_t length;
	uint32_t nsegs;
	uint32_t flags;             /* URD_REG_MR_*; was reserved (0) */
	struct urd_mr_seg segs[];
};
#define URD_MR_MAX_SEGS ((URD_MSG_MAX - sizeof(struct urd_reg_mr_req)) / sizeof(struct urd_mr_seg))
#define URD_REG_MR_INDIRECT      1u
#define URD_MR_MAX_SEGS_INDIRECT (1u << 20)
struct urd_reg_mr_resp {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t reserved;
};

struct urd_create_cq_req {
	struct urd_msg_hdr hdr;
	uint32_t cqe;
	uint32_t comp_vector;
};
struct urd_create_cq_resp {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t nentries;          /* power of two; usable CQEs = nentries */
	uint64_t ring_off;          /* from region start: urd_ring_hdr then CQEs */
};

/* RESIZE_CQ: a new ring of at least cqe entries holding, in order, the CQEs
 * the old one had between its cons and prod; the answer is a
 * urd_create_cq_resp of the new ring (handle unchanged), whose cons is 0 and
 * prod the number of CQEs carried over.  EINVAL when cqe is below that
 * number (rxe's rule) or above max_cqe. */
struct urd_resize_cq_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t cqe;
};

/* ATTACH_MCAST / DETACH_MCAST: the UD QP handle joins or leaves the group
 * gid (a multicast GID: ff00::/8, or ::ffff:224.0.0.0/4 for RoCEv2 over
 * IPv4).  The answer repeats the request (ATTACH's undo detaches it).
 * EINVAL: not a UD QP, not a multicast GID, DETACH of a group the QP is not
 * in; ENOMEM: URD_MAX_MCAST_ATTACH or URD_MAX_MCAST_QP reached.  Attaching
 * twice is 0, as rxe. */
struct urd_mcast_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t reserved;
	uint8_t gid[16];
};

/* CM_AGENT: make UD QP `qp` its vRNIC's CM agent (include/unirdma/cm.h);
 * the slot (1..255) comes back in urd_handle_resp.handle.  CM_LISTEN: listen
 * (on = 1) or stop (on = 0) on service_id with agent `qp`. */
#define URD_CM_MAX_AGENTS   255u        /* slots 1..255 per vRNIC */
#define URD_CM_MAX_LISTEN   1024u       /* listened ServiceIDs per vRNIC */
#define URD_CM_SLOT(id)     ((uint32_t)(id) >> 24)
#define URD_GSI_QPN         1u
struct urd_cm_req {
	struct urd_msg_hdr hdr;
	uint32_t qp;
	uint32_t on;
	uint64_t service_id;
};

/* A multicast GID (the kernel's rdma_is_multicast_addr). */
static inline bool urd_gid_is_mcast(const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (gid[0] == 0xff)
		return true;
	return !memcmp(gid, v4mapped, sizeof(v4mapped)) && (gid[12] & 0xf0) == 0xe0;
}

/* ALLOC_MW: a memory window of type 1 or 2 (enum ibv_mw_type) in the PD
 * handle pd; the answer is a urd_handle_resp whose reserved field is the
 * window's R_Key (its undo deallocates it).  DEALLOC_MW takes a
 * urd_handle_req; a bound window is unbound first, as rxe does.  Window
 * R_Keys have URD_MW_KEY_BIT set and MR keys never do: the engine tells
 * them apart by that bit (rxe: by the index range).  The low 8 bits of a
 * window's R_Key are the consumer's key, changed by each bind. */
struct urd_alloc_mw_req {
	struct urd_msg_hdr hdr;
	uint32_t pd;
	uint32_t type;
};
#define URD_MW_KEY_BIT 0x80000000u
#define URD_MAX_MW     4096u            /* windows per vRNIC (max_mw) */

/* REREG_MR: flags are IBV_REREG_MR_CHANGE_*; pd (a PD handle) counts with
 * CHANGE_PD, access with CHANGE_ACCESS.  As rxe: the PD and the access
 * flags change in place, the keys stay; CHANGE_TRANSLATION is EOPNOTSUPP.
 * The answer is a urd_reg_mr_resp (handle, lkey, rkey). */
struct urd_rereg_mr_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t flags;
	uint32_t pd;
	uint32_t access;
};

struct urd_create_srq_req {
	struct urd_msg_hdr hdr;
	uint32_t pd;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
};
struct urd_srq_resp {            /* CREATE_SRQ, QUERY_SRQ */
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t srq_num;
	uint32_t max_wr;            /* granted */
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t nentries;          /* ring slots, power of two */
	uint32_t wqe_shift;         /* log2 of the recv WQE slot size */
	uint32_t reserved;
	uint64_t ring_off;
};
struct urd_modify_srq_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t attr_mask;         /* IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT */
	uint32_t max_wr;
	uint32_t srq_limit;
};

struct urd_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t reserved;
};

struct urd_create_qp_req {
	struct urd_msg_hdr hdr;
	uint32_t pd;
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t srq;               /* 0: none */
	uint32_t qp_type;           /* IBV_QPT_RC or IBV_QPT_UD */
	uint32_t sq_sig_all;
	struct urd_qp_cap cap;
};
struct urd_create_qp_resp {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t qpn;
	uint32_t db_index;          /* doorbell bit of this QP */
	uint32_t reserved;
	struct urd_qp_cap cap;      /* granted */
	uint64_t sq_off;            /* ring header + slots */
	uint32_t sq_n;
	uint32_t sq_wqe_shift;
	uint64_t rq_off;            /* 0 when the QP uses an SRQ */
	uint32_t rq_n;
	uint32_t rq_wqe_shift;
};

struct urd_ah {
	uint8_t  dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint8_t  sgid_index;
	uint8_t  hop_limit;
	uint8_t  traffic_class;
	uint8_t  is_global;
	uint8_t  sl;
	uint8_t  src_path_bits;
	uint8_t  static_rate;
	uint8_t  port_num;
	uint8_t  reserved[10];
};
static_assert(sizeof(struct urd_ah) == 40, "ah");

/* Mirror of the ibv_qp_attr fields unirdma implements. */
struct urd_qp_attr {
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu;
	uint32_t path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint8_t  en_sqd_async_notify;
	uint8_t  sq_draining;
	uint8_t  max_rd_atomic;
	uint8_t  max_dest_rd_atomic;
	uint8_t  min_rnr_timer;
	uint8_t  port_num;
	uint8_t  timeout;
	uint8_t  retry_cnt;
	uint8_t  rnr_retry;
	uint8_t  reserved0;
	struct urd_qp_cap cap;
	struct urd_ah ah;
};
static_assert(sizeof(struct urd_qp_attr) == 112, "qp attr");

struct urd_modify_qp_req {
	struct urd_msg_hdr hdr;
	uint32_t handle;
	uint32_t attr_mask;         /* enum ibv_qp_attr_mask */
	struct urd_qp_attr attr;
};
struct urd_query_qp_resp {
	struct urd_msg_hdr hdr;
	struct urd_qp_attr attr;
	uint32_t qp_type;
	uint32_t sq_sig_all;
	uint32_t srq;
	uint32_t reserved;
};

static inline uint64_t urd_slot_off(uint32_t slot)
{
	return URD_SLOTS_OFF + (uint64_t)slot * URD_SLOT_SIZE;
}

#endif

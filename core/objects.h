/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The object model: vRNICs, contexts and the verbs objects behind them, and
 * the services both planes use (core/pool.c: object tables and lookups;
 * core/events.c: async events and CQ notification; core/alloc.c: byte
 * extents).
 *
 * Who may call whom (tests/check-layering.sh checks it):
 *   daemon/ (control plane: mailbox, handlers, admin, metrics)
 *      -> engine/engine.h (the RNIC's API), core/, common/
 *   engine/ (the RNIC)  -> core/, common/        never daemon/
 *   core/               -> common/               never engine/ or daemon/
 *                          (it includes engine/engine.h only for the types
 *                          of the engine state embedded in its objects)
 *   lib/ (the tenant's library) -> include/unirdma/, common/ only
 *
 * Everything here is the daemon's authoritative state.  The region only holds
 * copies that tenants can scribble on.  One mutex (d->lock, "the big lock")
 * guards every table and every object; the control plane holds it while it
 * creates, modifies or destroys objects, the engine holds it for one bounded
 * step (one QP's share of a pass) and hands it to any waiter between steps
 * (engine/engine.c).  That keeps object lifetime simple: nothing the engine
 * touches can be freed under it within a step; across steps it keeps only
 * what it checks again (struct engine_xfer).
 */
#ifndef UNIRDMA_CORE_OBJECTS_H
#define UNIRDMA_CORE_OBJECTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <bsd/sys/tree.h>    /* header-only red-black tree macros (libbsd-dev) */

#include "compiler.h"
#include "engine.h"             /* the engine state embedded in the objects */
#include "unirdma/abi.h"
#include "unirdma/ring.h"

#define URD_MAX_VRNICS   128
#define URD_NAME_MAX     32
#define URD_MAX_HANDLES  (1u << 16)

struct urd_daemon;
struct urd_vrnic;
struct vr_ctx;

/* Byte extents, used for the ring arena and the memory window. */
struct urd_extent {
	uint64_t off;
	uint64_t len;
	RB_ENTRY(urd_extent) node;      /* alloc.c's tree of free extents, by offset */
};

struct urd_alloc {
	RB_HEAD(urd_extents, urd_extent) free;
	uint64_t nfree;                 /* free extents */
	uint64_t base, size, used;
	/* >= 0: alloc_get allocates the pages of what it hands out in this
	 * file first (the ring arena), so that a tenant who fills its file
	 * system makes the allocation fail instead of a later daemon write */
	int fd;
};

/* Traffic counters, per vRNIC and per QP.  tx_* count requests this side
 * initiated (by send opcode), rx_* requests it served as the responder. */
struct urd_counters {
	uint64_t tx_bytes, tx_ops, rx_bytes, rx_ops;            /* totals */
	uint64_t tx_op_bytes[URD_WR_NUM_OPCODES], tx_op_ops[URD_WR_NUM_OPCODES];
	uint64_t rx_op_bytes[URD_WR_NUM_OPCODES], rx_op_ops[URD_WR_NUM_OPCODES];
	uint64_t errors;                /* WQEs completed in error (not flushes) */
	uint64_t rnr_naks;              /* receive-not-ready answers given */
	uint64_t retries;               /* transport retries (peer silent) */
	uint64_t drops_other_tenant;    /* traffic to another tenant, dropped */
	uint64_t qos_delays;            /* times a WQE waited for the rate limiter */
	uint64_t qos_delay_ns;          /* time it waited, in total */
};

/* Per-vRNIC quotas, set at creation and changeable at run time.  A request
 * over a quota fails with the errno the verbs man pages allow (ENOMEM for
 * objects and memory, EINVAL for ring sizes, EDQUOT for contexts) and
 * changes nothing.  Lowering a quota below current use keeps what exists. */
struct urd_limits {
	uint32_t max_ctx, max_pd, max_mr, max_cq, max_qp, max_srq;
	uint64_t max_mem_bytes;         /* bytes of the memory window (registered pages) */
	uint32_t max_qp_wr, max_cqe, max_srq_wr;
};

/* Rate limits enforced by the engine before it starts a WQE: token buckets
 * in bytes/s and operations/s, each with a burst; 0 = unlimited. */
struct urd_qos {
	uint64_t rate_bytes, burst_bytes;
	uint64_t rate_ops, burst_ops;
	double tok_bytes, tok_ops;      /* may go negative: a big WQE borrows */
	uint64_t last_ns;
};

/* ctx.c destroys a dead context's objects from the highest type down: windows
 * before the QPs and MRs they are bound to, MRs before their PDs. */
enum urd_obj_type { OBJ_NONE = 0, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_SRQ, OBJ_QP, OBJ_MW };

struct vr_obj {
	enum urd_obj_type type;
	uint32_t handle;
	struct vr_ctx *ctx;
	int refs;                       /* other objects that point at this one */
};

struct vr_pd {
	struct vr_obj obj;
};

/* A memory allocation of a context in the vRNIC's memory window.  MRs keep
 * it alive (refs) after the context frees it or dies. */
struct vr_mem {
	uint64_t off, len;
	int refs;
	bool freed_by_tenant;
	struct vr_ctx *ctx;
	struct vr_mem *next;
	struct vr_mem *prev;           /* vr->mems is doubly linked: O(1) unlink */
};

struct vr_mr_piece {
	uint64_t mr_off;                /* offset of this segment inside the MR */
	uint64_t len;
	uint8_t *ptr;                   /* daemon address of the first byte */
	struct vr_mem *mem;
};

struct vr_mr {
	struct vr_obj obj;
	struct vr_pd *pd;
	uint32_t lkey, rkey;
	uint32_t access;
	uint64_t iova, length;
	uint32_t nsegs;
	struct vr_mr_piece *segs;
	struct vr_mr *lkey_next, *rkey_next;   /* hash chains in the vRNIC */
	uint64_t charged;               /* VM MR: page-rounded bytes counted in memwin.used */
	uint64_t meta;                  /* daemon heap bytes counted in vr->meta_bytes */
	uint32_t nmw;                   /* memory windows bound to it: dereg is refused (rxe) */
};

/* A memory window (IB spec 10.6.7; rxe_mw.c).  Type 1 is bound by
 * ibv_bind_mw and stays valid (a length of 0 grants nothing); type 2 (2B)
 * is free until a BIND_MW WQE binds it to the posting QP, and free again
 * after LOCAL_INV, SEND_WITH_INV or its QP's destruction.  The binding is
 * the RNIC's state: the engine writes it (engine/mw.c) when it executes
 * the WQE, the control plane when the window, its MR's context or its QP
 * goes away, both under the big lock. */
struct vr_mw {
	struct vr_obj obj;
	struct vr_pd *pd;
	uint32_t type;                  /* IBV_MW_TYPE_1 / IBV_MW_TYPE_2 */
	uint32_t rkey;                  /* URD_MW_KEY_BIT | index << 8 | key */
	struct vr_mr *mr;               /* bound to (mr->nmw counts it); NULL: type 2 FREE */
	struct vr_qp *qp;               /* type 2: the QP it is bound to */
	uint64_t addr, length;
	uint32_t access;                /* IBV_ACCESS_REMOTE_* it grants */
	struct vr_mw *next;             /* vr->mws hash chain, by index */
};

struct vr_ring {
	/* q.own: the engine's index (SQ/RQ/SRQ: cons, CQ: prod); q.seen: the
	 * tenant's as last read (SQ: prod, CQ: cons), so that the shared line
	 * is read once per batch, not per WQE or CQE (unirdma/ring.h). */
	struct urd_queue q;
	uint64_t off;                   /* arena offset, for freeing */
	uint64_t bytes;
	bool polling;                   /* SQ: we last stored hdr->polling = 1 */
};

struct vr_cq {
	struct vr_obj obj;
	struct vr_ring ring;
	bool overflowed;
	uint32_t events;
};

struct vr_srq {
	struct vr_obj obj;
	struct vr_pd *pd;
	struct vr_ring ring;
	uint32_t srq_num;
	uint32_t max_wr, max_sge, limit;
};

struct vr_qp {
	struct vr_obj obj;
	struct urd_vrnic *vr;
	uint32_t qpn;
	uint32_t type;                  /* IBV_QPT_RC / IBV_QPT_UD */
	uint32_t state;                 /* enum ibv_qp_state */
	bool sq_sig_all;
	struct vr_pd *pd;
	struct vr_cq *scq, *rcq;
	struct vr_srq *srq;
	struct vr_ring sq, rq;
	struct urd_qp_cap cap;
	uint32_t db_index;
	struct urd_qp_attr attr;        /* last values set by modify */
	struct urd_counters cnt;
	struct vr_qp *qpn_next;         /* global QPN hash chain (pool.c) */
	uint32_t nmcast;                /* multicast groups it is attached to (pool.c) */
	uint8_t cm_slot;                /* 1..255: its vRNIC's CM agent in that slot (daemon/cm.c) */
	struct engine_qp eng;           /* engine/engine.h: written by the engine only */
};

/* One QP in one multicast group (pool.c mcast_*): a chain per hash bucket
 * of the group's GID, host-wide; the engine delivers a multicast UD SEND to
 * every QP of the group in the sender's tenant. */
struct vr_mcast {
	struct vr_mcast *next;
	struct vr_qp *qp;
	uint8_t gid[16];
};
#define URD_MCAST_BUCKETS 256

/* A ServiceID a CM agent listens on (daemon/cm.c). */
struct vr_cm_listen {
	uint64_t service_id;
	struct vr_qp *qp;
};

struct vr_ctx {
	struct urd_vrnic *vr;
	uint32_t slot;
	uint32_t id;
	uint32_t last_req_seq;
	uint32_t async_prod;
	/* Events that found the slot's async ring full, oldest first, waiting
	 * for the tenant to make room (ctx_async_flush); bounded by
	 * URD_ASYNC_BACKLOG_MAX. */
	struct urd_async_event *backlog;
	uint32_t backlog_head, backlog_n, backlog_cap;
	struct urd_slot_hdr *shm;       /* its mailbox, in the region */
	struct vr_obj **handles;       /* index -> object; handle = gen << 16 | index */
	uint16_t *gens;
	uint32_t nhandles;
	struct vr_mem *mems;
};

#define URD_KEY_BUCKETS 1024

struct urd_vrnic {
	struct urd_daemon *d;
	uint32_t id;
	char name[URD_NAME_MAX + 1];
	char tenant[URD_NAME_MAX + 1];
	uint32_t vip;                   /* network order */
	uint8_t prefix;
	char dir[512];
	int fd;
	uint8_t *map;                   /* the whole file */
	uint64_t map_size;
	struct urd_region_hdr *hdr;
	struct urd_doorbells *db;
	struct urd_alloc arena;
	struct urd_alloc memwin;
	struct vr_mem *mems;           /* allocations in the memory window */
	void *mem_tree;                 /* the same, by offset (tsearch): O(log n) lookups */
	uint32_t nmem;                  /* allocations, capped (objects.c mem_alloc_cap) */
	struct vr_mem *reap;           /* released by a dead context, not yet given back */
	struct vr_mr *mr_reap;         /* a dead context's MRs whose pieces wait (lkey_next) */
	uint64_t meta_bytes;            /* daemon heap for segment tables etc., capped */
	uint64_t ctx_mask;              /* slots with a context (atomic: the control
					 * thread reads it without the big lock) */
	struct vr_ctx *ctx[URD_MAX_CTX];
	uint32_t last_seq[URD_MAX_CTX]; /* per slot, for slots without a context */
	struct vr_qp *qp_slots[URD_MAX_QP_SLOTS];
	struct vr_mr *lkeys[URD_KEY_BUCKETS], *rkeys[URD_KEY_BUCKETS];
	struct vr_mw *mws[URD_KEY_BUCKETS];     /* memory windows, by R_Key index */
	uint32_t nmw;
	struct urd_counters cnt;
	struct urd_limits lim;
	struct urd_qos qos;
	uint32_t nctx, npd, nmr, ncq, nqp, nsrq;
	uint32_t nmcast;                /* multicast attachments of its QPs */
	pthread_t ctrl_thread;
	bool stop;
	bool deleting;
	struct urd_vm *vm;              /* VM vRNIC (vm.c); NULL for containers */
	/* The daemon faulted on the tenant's memory (guard.c): no longer
	 * served, tenants see DEAD; kept listed as "failed" until deleted. */
	bool failed;
	/* vr->dir is a tmpfs of this vRNIC alone, fs_bytes big (region + guest
	 * RAM are bounded by it), unmounted at delete; false in harnesses */
	bool own_mount;
	uint64_t fs_bytes;
	bool underlay_addr;             /* daemon/underlay.c put vip on the underlay */
	bool grhless_av;                /* AVs without a GRH allowed (URD_REGION_GRHLESS_AV) */
	/* QP1, shared by the CM agents of the processes on this vRNIC
	 * (include/unirdma/cm.h; daemon/cm.c writes, engine/cm_steer.c reads,
	 * both under the big lock) */
	struct vr_qp *cm_agent[URD_CM_MAX_AGENTS + 1];  /* by slot; [0] unused */
	struct vr_cm_listen *cm_listen;                 /* ncm_listen of them, unordered */
	uint32_t ncm_listen;
	struct engine_vrnic eng;        /* engine/engine.h: written by the engine only */
};

#define URD_QPN_BUCKETS 4096

struct urd_daemon {
	pthread_mutex_t lock;           /* the big lock */
	char state_dir[384];
	struct urd_vrnic *vrnics[URD_MAX_VRNICS];       /* set with urd_vrnic_slot_set */
	uint32_t vrnic_hi;      /* one past the highest slot in use: the per-packet and
				 * per-pass loops stop there, not at URD_MAX_VRNICS */
	struct vr_qp *qpn_hash[URD_QPN_BUCKETS];        /* pool.c */
	struct vr_mcast *mcast[URD_MCAST_BUCKETS];      /* pool.c */
	uint32_t next_qpn;
	bool qpn_sequential;            /* fuzz harnesses only: next_qpn++, reproducible */
	uint32_t qpn_base, qpn_span;    /* the host's QPN range (cluster); span 0: all 24 bits */
	uint32_t next_srqn;
	uint32_t epoch;
	uint32_t next_ctx_id;
	volatile int stopping;
	gid_t admin_gid;                /* --admin-group: may manage besides root */
	bool admin_gid_set;
	struct engine eng;              /* engine/engine.h: written by the engine only */
};

/* d->vrnics[slot] = vr, keeping d->vrnic_hi (big lock held). */
static inline void urd_vrnic_slot_set(struct urd_daemon *d, uint32_t slot, struct urd_vrnic *vr)
{
	d->vrnics[slot] = vr;
	if (vr && slot >= d->vrnic_hi)
		d->vrnic_hi = slot + 1;
	while (d->vrnic_hi && !d->vrnics[d->vrnic_hi - 1])
		d->vrnic_hi--;
}

/* pool.c: object tables.  Big lock held for all of these. */
/* A handle for o in ctx's table (generation << 16 | index); -ENOMEM when full. */
int handle_new(struct vr_ctx *ctx, struct vr_obj *o, enum urd_obj_type type);
void handle_free(struct vr_obj *o);
/* The context's object behind handle, if it is of that type; NULL otherwise. */
void *obj_get(struct vr_ctx *ctx, uint32_t handle, enum urd_obj_type type);
/* MR keys: random, unique in the vRNIC, never 0 or ~0. */
uint32_t mr_key_new(struct urd_vrnic *vr);
void mr_keys_link(struct urd_vrnic *vr, struct vr_mr *mr);
void mr_keys_unlink(struct urd_vrnic *vr, struct vr_mr *mr);
struct vr_mr *mr_by_lkey(struct urd_vrnic *vr, uint32_t lkey);
struct vr_mr *mr_by_rkey(struct urd_vrnic *vr, uint32_t rkey);
/* Memory windows: an R_Key with URD_MW_KEY_BIT and an index unique in the
 * vRNIC (0 when URD_MAX_MW windows exist); the window whose R_Key is rkey
 * exactly; unbinding one, or every window bound to qp (the QP goes away).
 * mw_by_rkey and mw_unbind are engine services (check-layering.sh): the
 * RNIC executes BIND_MW and LOCAL_INV and checks window R_Keys, as it looks
 * MR keys up. */
uint32_t mw_key_new(struct urd_vrnic *vr);
void mw_link(struct urd_vrnic *vr, struct vr_mw *mw);
void mw_unlink(struct urd_vrnic *vr, struct vr_mw *mw);
struct vr_mw *mw_by_rkey(struct urd_vrnic *vr, uint32_t rkey);
void mw_unbind(struct vr_mw *mw);
void mw_unbind_qp(struct urd_vrnic *vr, struct vr_qp *qp);
/* QPNs: random 24-bit, unique host-wide; within [base, base + span) once the
 * cluster directory gave this host a range (qpn_range_set; span 0: none). */
uint32_t qpn_alloc(struct urd_daemon *d);
void qpn_range_set(struct urd_daemon *d, uint32_t base, uint32_t span);
void qpn_link(struct urd_daemon *d, struct vr_qp *qp);
void qpn_unlink(struct urd_daemon *d, struct vr_qp *qp);
struct vr_qp *qpn_lookup(struct urd_daemon *d, uint32_t qpn);
/* Multicast groups.  attach: 0 (also when already attached), -ENOMEM past
 * URD_MAX_MCAST_ATTACH of the vRNIC or URD_MAX_MCAST_QP QPs of its tenant in
 * the group; *first says the host had no QP in the group before.  detach:
 * 0 or -EINVAL (not attached); *last says it was the host's last QP in the
 * group.  detach_all: every group of a QP going away, calling gone(arg, gid)
 * for each group the host no longer has. */
int mcast_attach(struct urd_daemon *d, struct vr_qp *qp, const uint8_t gid[16], bool *first);
int mcast_detach(struct urd_daemon *d, struct vr_qp *qp, const uint8_t gid[16], bool *last);
void mcast_detach_all(struct urd_daemon *d, struct vr_qp *qp,
		      void (*gone)(struct urd_daemon *d, const uint8_t gid[16]));
/* The next attachment of group gid after m (NULL: the first).  The engine
 * walks a group with it to deliver a multicast SEND, as an RNIC looks its
 * multicast table up for every packet. */
struct vr_mcast *mcast_next(struct urd_daemon *d, const struct vr_mcast *m, const uint8_t gid[16]);

/* events.c: what a context learns besides its mailbox answers.  Big lock held. */
void ctx_post_async(struct vr_ctx *ctx, uint32_t event, uint32_t kind, uint32_t handle);
/* Move backlogged async events into the ring as far as the tenant made room. */
void ctx_async_flush(struct vr_ctx *ctx);
#define URD_ASYNC_BACKLOG_MAX 16384u    /* per context: 4 per QP slot, 256 KiB */
void ctx_notify(struct vr_ctx *ctx);    /* wake its event thread (CQ events, async) */

/* alloc.c: byte extents of the ring arena and the memory window */
int alloc_init(struct urd_alloc *a, uint64_t base, uint64_t size);
int alloc_get(struct urd_alloc *a, uint64_t len, uint64_t align, uint64_t *off);
void alloc_put(struct urd_alloc *a, uint64_t off, uint64_t len);
void alloc_fini(struct urd_alloc *a);
const struct urd_extent *alloc_first_free(const struct urd_alloc *a);
const struct urd_extent *alloc_next_free(const struct urd_extent *e);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* priv.h - internal types of unirdma's libibverbs.so.1.
 *
 * Every object an application sees (ibv_context, ibv_cq, ibv_qp, ...) is the
 * first member of (or, for the context, embedded in) a private struct defined
 * here; to_u*() converts back.  Nothing here is exported: the version script
 * exports only the verbs, and every internal non-static symbol is prefixed
 * urd_.
 *
 * Error convention inside the library: functions return 0 or -errno and never
 * touch errno.  Only the verbs entry points translate (positive errno for int
 * verbs, NULL + errno for pointer verbs, -1 + errno where the man page says
 * so).
 *
 * Trust: the vRNIC region is shared with the daemon and is writable by this
 * very process, so nothing read from it can hurt anybody but this process.
 * Still, every offset the daemon gives us is checked against the control size
 * before it is turned into a pointer, and every ring index read from the
 * region is masked, so a scribbled word makes us misbehave but never read or
 * write outside the mapping.
 */
#ifndef URD_LIB_PRIV_H
#define URD_LIB_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "compiler.h"
#include "futex.h"
#include "unirdma/abi.h"
#include "unirdma/barrier.h"
#include "unirdma/ring.h"

#define URD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define urd_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ---------------------------------------------------------------- logging */

/* Messages go to stderr only when UNIRDMA_DEBUG is set in the environment. */
extern int urd_debug_enabled;
void urd_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------- memory */

/* Every object of the library lives in memory of its own (alloc.c), never
 * in a page an application buffer shares: registration moves such pages. */
void *urd_zalloc(size_t n);
void *urd_calloc(size_t nmemb, size_t size);
void *urd_realloc(void *p, size_t n);
void urd_free(void *p);
void urd_alloc_fork_prepare(void);
void urd_alloc_fork_parent(void);
void urd_alloc_fork_child(void);

/* ----------------------------------------------------------------- device */

/* rdma-core's struct verbs_device, field for field.  libmlx5 and libefa (which
 * perftest loads) cast any ibv_device to it and compare ops with their own;
 * ops must therefore stay NULL. */
struct urd_verbs_device {
	struct ibv_device device;
	const void *ops;
	int refcount;
	struct {
		void *next, *prev;
	} entry;
	void *sysfs;
	uint64_t core_support;
};

struct urd_device {
	struct urd_verbs_device vdev;   /* must be first */
	int refcnt;                     /* list + open contexts; atomic */
	int index;
	uint64_t node_guid;             /* host order, as in the header */
	bool vm;                        /* an ivshmem BAR in a VM guest (vm.c) */
	char region_path[PATH_MAX];
};

static inline struct urd_device *to_udev(struct ibv_device *d)
{
	return (struct urd_device *)d;
}

void urd_device_put(struct urd_device *dev);

/* ----------------------------------------------------------- event queues */

/* One pending event.  obj is cleared (the entry becomes dead) when the object
 * it names is destroyed before the application reads it. */
struct urd_ev {
	void *obj;
	uint32_t type;                  /* enum ibv_event_type (async queue) */
	int port;
};

/* FIFO of events behind a pipe: one byte in the pipe per queued entry; the
 * writer queues the entry before it writes the byte and the reader reads the
 * byte before it dequeues, so a byte read always finds an entry. */
struct urd_evq {
	pthread_mutex_t lock;
	struct urd_ev *buf;
	uint32_t head, count, cap;
	int rfd, wfd;
};

int urd_evq_init(struct urd_evq *q);
void urd_evq_fini(struct urd_evq *q);
/* Queue one event and write its byte; 0 or -errno (the event is dropped). */
int urd_evq_push_locked(struct urd_evq *q, void *obj, uint32_t type, int port);
/* Read one byte (blocking unless the app set O_NONBLOCK on rfd), then take the
 * oldest entry; dead entries are skipped.  0 or -errno.  *ev is valid only
 * while q->lock is held: on success returns with q->lock HELD. */
int urd_evq_pop_lock(struct urd_evq *q, struct urd_ev *ev);
void urd_evq_kill_obj(struct urd_evq *q, void *obj);

/* ------------------------------------------------------------ object maps */

enum { URD_OBJMAP_BUCKETS = 256 };

/* Intrusive node: QPs, CQs and SRQs carry one so the event thread can turn
 * the (kind, handle) of an async event into the application's pointer. */
struct urd_objnode {
	uint32_t kind;                  /* enum urd_obj_kind */
	uint32_t handle;
	struct urd_objnode *next;
};

struct urd_objmap {
	struct urd_objnode *bucket[URD_OBJMAP_BUCKETS];
};

/* ---------------------------------------------------------------- context */

struct urd_memdev;
struct urd_cq;
struct urd_mr;

struct urd_context {
	/* What applications reach: ibv_context is the last member of
	 * verbs_context and the extended ops lie before it. */
	struct verbs_context vctx;

	struct urd_device *dev;
	uint8_t *region;                /* ctrl_size bytes, MAP_SHARED, RW */
	uint64_t ctrl_size;
	struct urd_region_hdr *hdr;
	struct urd_slot_hdr *slot;
	uint8_t *req_area, *resp_area;
	struct urd_doorbells *db;
	uint32_t slot_idx;
	uint32_t ctx_id;
	bool vm;                        /* URD_REGION_VM: never use futexes */
	int lock_fd;                    /* OFD lock on byte slot_idx = liveness */
	uint32_t vm_owner;              /* VM: our token in slot->vm_owner (vm.c) */
	uint64_t vm_dhb, vm_dhb_ns;     /* VM: daemon heartbeat last seen, when */

	/* mailbox: one request at a time per context */
	pthread_mutex_t ctrl_lock;
	uint32_t seq;
	int dead;                       /* atomic: daemon gone, or forked child */

	/* registered memory */
	struct urd_memdev *mem;
	struct urd_mr *mrs;             /* under the global memory lock */

	/* events */
	pthread_t ev_thread;
	bool ev_started;
	int ev_stop;                    /* atomic */
	pthread_mutex_t ev_lock;        /* objs, chan_cqs, async_cons */
	struct urd_objmap objs;
	struct urd_cq *chan_cqs;        /* CQs with a completion channel */
	uint32_t async_cons;
	bool fatal_sent;
	struct urd_evq async_q;

	struct urd_context *next_all;   /* every open context (fork handler) */
};

static inline struct urd_context *to_uctx(struct ibv_context *c)
{
	return urd_container_of(c, struct urd_context, vctx.context);
}

static inline int urd_ctx_dead(struct urd_context *ctx)
{
	return urd_load_acquire(&ctx->dead);
}

/* Offsets from the daemon: true when [off, off + len) lies inside the control
 * part and off is aligned to align (a power of two). */
static inline bool urd_range_ok(const struct urd_context *ctx, uint64_t off,
				uint64_t len, uint64_t align)
{
	return off <= ctx->ctrl_size && len <= ctx->ctrl_size - off &&
	       (off & (align - 1)) == 0;
}

/* -------------------------------------------------------------- mailbox */

/* Send one request and wait for its answer.  req starts with a struct
 * urd_msg_hdr whose version, op and len this fills.  resp (resp_max bytes,
 * may be NULL) receives the answer, which must be at least resp_min bytes
 * when its status is 0.  Returns the daemon's status (0 or -errno), or -EIO
 * (daemon gone, context dead), -ETIMEDOUT, -EPROTO (malformed answer). */
int urd_ctrl(struct urd_context *ctx, uint16_t op, void *req, uint32_t req_len,
	     void *resp, uint32_t resp_min, uint32_t resp_max);
/* One-handle request (DEALLOC_PD, DESTROY_*, ...). */
int urd_ctrl_handle(struct urd_context *ctx, uint16_t op, uint32_t handle);

/* Doorbell: tell the engine that QP db_index has work.  The full fence orders
 * our doorbell bit before the read of engine_sleeping; the engine sets
 * engine_sleeping and then re-reads the doorbells (abi.h, header line 1024),
 * so one of the two sides always sees the other.  The futex wake is the only
 * syscall of the data path, and only when the engine sleeps. */
static inline void urd_ring_doorbell(struct urd_context *ctx, uint32_t db_index)
{
	struct urd_doorbells *db = ctx->db;
	uint32_t w = (db_index / 64) & (URD_MAX_QP_SLOTS / 64 - 1);

	urd_fetch_or(&db->bits[w], 1ull << (db_index % 64));
	urd_fetch_or(&db->summary, 1ull << w);
	urd_smp_mb();
	if (urd_load_relaxed(&ctx->hdr->engine_sleeping)) {
		urd_fetch_add(&ctx->hdr->engine_wake, 1);
		if (!ctx->vm)
			urd_futex_wake(&ctx->hdr->engine_wake, 1);
	}
}

/* ---------------------------------------------------------------- objects */

struct urd_pd {
	struct ibv_pd ibv;
};

static inline struct urd_pd *to_upd(struct ibv_pd *p)
{
	return (struct urd_pd *)p;
}

/* An address handle lives only in the library: post_send copies it into
 * every UD WQE. */
struct urd_ahobj {
	struct ibv_ah ibv;
	struct urd_ah av;
};

static inline struct urd_ahobj *to_uah(struct ibv_ah *a)
{
	return (struct urd_ahobj *)a;
}

struct urd_channel {
	struct ibv_comp_channel ibv;
	struct urd_evq q;
};

static inline struct urd_channel *to_uchan(struct ibv_comp_channel *c)
{
	return (struct urd_channel *)c;
}

struct urd_cq {
	struct ibv_cq_ex ex;            /* ibv_cq is its prefix */
	pthread_spinlock_t lock;
	struct urd_queue q;             /* we consume: q.own is our cons */
	uint32_t empty_polls;
	uint64_t wc_flags;              /* requested by create_cq_ex */
	const struct urd_cqe *cur;      /* extended polling: current CQE */
	struct urd_cqe cur_copy;
	struct urd_objnode node;
	/* events, under ev_lock of the context */
	struct urd_cq *chan_next;
	uint32_t last_events;
	uint32_t wd_prod, wd_cons;      /* lost-event watchdog (event.c) */
	uint64_t wd_since;
	/* under ibv mutex: events handed to the application */
	uint32_t comp_reported;
	uint32_t async_reported;
};

static inline struct urd_cq *to_ucq(struct ibv_cq *c)
{
	return (struct urd_cq *)c;
}

struct urd_wq {                         /* one SQ, RQ or SRQ ring */
	struct urd_queue q;             /* we produce: q.own is our prod,
					 * q.seen the engine's cons as last read */
	uint32_t max_wr;                /* granted: outstanding limit */
	uint32_t max_sge;
	pthread_spinlock_t lock;
};

/* Free slots, never more than max_wr outstanding (ring.h: a lying cons
 * counts as full; cons's line is read only when the queue looks full). */
static inline uint32_t urd_wq_room(struct urd_wq *wq)
{
	return urd_queue_room(&wq->q, wq->max_wr < wq->q.n ? wq->max_wr : wq->q.n);
}

int urd_wq_map(struct urd_context *ctx, struct urd_wq *wq, uint64_t off,
	       uint32_t n, uint32_t shift, uint32_t min_slot);

struct urd_srq {
	struct ibv_srq ibv;
	struct urd_wq rq;
	uint32_t srq_num;
	uint32_t srq_limit;
	struct urd_objnode node;
	uint32_t async_reported;        /* under ibv.mutex */
};

static inline struct urd_srq *to_usrq(struct ibv_srq *s)
{
	return (struct urd_srq *)s;
}

struct urd_qp {
	struct ibv_qp_ex qpx;           /* ibv_qp is its first member */
	struct urd_wq sq;
	struct urd_wq rq;               /* rq.q.n == 0 when the QP uses an SRQ */
	uint32_t db_index;
	uint32_t max_inline;
	uint64_t send_ops;              /* IBV_QP_EX_WITH_* allowed for wr_* */
	bool sig_all;
	struct urd_objnode node;
	uint32_t async_reported;        /* under qp mutex */
	/* ibv_wr_* batch state, under sq.lock between wr_start and complete */
	uint32_t wr_start_prod;
	struct urd_send_wqe *wr_cur;
	int wr_err;
};

static inline struct urd_qp *to_uqp(struct ibv_qp *q)
{
	return (struct urd_qp *)q;
}

/* ----------------------------------------------------------- object maps */

void urd_obj_add(struct urd_context *ctx, struct urd_objnode *n, uint32_t kind,
		 uint32_t handle);
void urd_obj_del(struct urd_context *ctx, struct urd_objnode *n);

/* -------------------------------------------------------- cross-file API */

/* device.c */
extern const struct ibv_context_ops urd_ctx_ops;
int urd_query_port_ex(struct ibv_context *c, uint8_t port_num,
		      struct ibv_port_attr *attr, size_t attr_len);
int urd_query_device_ex(struct ibv_context *c,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size);

/* event.c */
int urd_events_start(struct urd_context *ctx);
void urd_events_stop(struct urd_context *ctx);
void urd_cq_events_attach(struct urd_context *ctx, struct urd_cq *cq);
void urd_cq_events_detach(struct urd_context *ctx, struct urd_cq *cq);
/* After the object is gone at the daemon: forget it and wait until the
 * application acknowledged every event it was given (ibv_destroy_* rule). */
void urd_qp_events_drain(struct urd_context *ctx, struct urd_qp *qp);
void urd_srq_events_drain(struct urd_context *ctx, struct urd_srq *srq);
void urd_cq_events_drain(struct urd_context *ctx, struct urd_cq *cq);

/* cq.c */
int urd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int urd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *urd_create_cq_ex(struct ibv_context *c,
				   struct ibv_cq_init_attr_ex *attr);

/* qp.c */
int urd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad);
int urd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
struct ibv_qp *urd_create_qp_ex(struct ibv_context *c,
				struct ibv_qp_init_attr_ex *attr);
int urd_post_recv_wq(struct urd_wq *wq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);

/* srq.c */
int urd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);
int urd_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

/* mem.c */
int urd_mem_attach(struct urd_context *ctx, int region_fd);
/* Drop what this context still holds (MRs the application never
 * deregistered) and detach from the per-device memory table. */
void urd_mem_detach(struct urd_context *ctx);
/* Daemon dead or vRNIC deleted: give the moved pages back to the process. */
void urd_mem_daemon_gone(struct urd_context *ctx);
void urd_ctx_register(struct urd_context *ctx);
void urd_ctx_unregister(struct urd_context *ctx);

/* ah.c */
void urd_ah_to_urd(const struct ibv_ah_attr *in, struct urd_ah *out);
void urd_ah_from_urd(const struct urd_ah *in, struct ibv_ah_attr *out);

bool urd_daemon_gone(struct urd_context *ctx);

/* qp.c: an ibv_send_wr's WQE header (mapped and forwarding data paths) */
int urd_send_wqe_header(const struct urd_qp *qp, const struct ibv_send_wr *wr,
			struct urd_send_wqe *w, bool *inl, const char **why);
/* The inline payload of wr, its SGEs' bytes one after the other at dst (both
 * data paths).  A zero-length SGE is skipped unread: its addr may be 0 (UCX
 * posts such SGEs). */
void urd_gather_inline(uint8_t *dst, const struct ibv_send_wr *wr);
/* The SGEs a WR carries: none for the memory window operations, whose
 * sg_list and num_sge mean nothing (ibv_post_send(3)). */
static inline int urd_wr_nsge(const struct ibv_send_wr *wr)
{
	return wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV ? 0 : wr->num_sge;
}
/* pd.c: memory windows (the ops table's alloc_mw, dealloc_mw, bind_mw) */
struct ibv_mw *urd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urd_dealloc_mw(struct ibv_mw *mw);
int urd_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* vm.c: the library in a QEMU guest (ivshmem BAR, CAS slots, pinned MRs) */
int urd_vm_find_bars(char ***paths);    /* malloc'd resource2 paths; count */
int urd_vm_read_hdr(int fd, struct urd_region_hdr *h);
int urd_vm_claim_slot(struct urd_context *ctx, uint32_t nslots, uint32_t *slot);
void urd_vm_release_slot(struct urd_context *ctx);
bool urd_vm_daemon_stalled(struct urd_context *ctx);
int urd_vm_reg_mr(struct urd_context *ctx, uint32_t pd_handle, uintptr_t a, size_t len,
		  uint64_t iova, unsigned int access, struct ibv_mr *mr);
void urd_vm_unpin(uintptr_t a, size_t len);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cma.h: the internals of our librdmacm, shared by cma.c (the rdma_cm API:
 * event channels, ids, address and route resolution, QPs), cm_agent.c (the
 * IB CM on each vRNIC's QP1: the agent QP, the CM thread, the connection
 * state machines) and ep.c / addrinfo.c.
 *
 * Locking: one mutex, g_cma.lock, guards every id, channel queue and agent;
 * g_cma.cond is broadcast whenever an event is acked (rdma_destroy_id and
 * rdma_migrate_id wait on it).  The library never calls application code,
 * so nothing is called back with the lock held.  A channel is a pipe: one
 * byte is written per queued event, after the event is queued, so the read
 * end is readable exactly when an event may be waiting (a reader that finds
 * the queue empty, after rdma_destroy_id purged or rdma_migrate_id moved
 * events, reads again). */
#ifndef URD_CMA_H
#define URD_CMA_H

#include <pthread.h>
#include <sys/types.h>
#include <stdint.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <unirdma/cm.h>

#include "cm_mad.h"

#define CMA_GSI_QKEY     0x80010000u
#define CMA_HDR_LEN      36             /* the kernel cma's struct cma_hdr */
#define CMA_MAX_DEVS     64
#define CMA_PKT_LIFE     16             /* path packet_life_time on RoCE, as the kernel's CMA_IBOE_PACKET_LIFETIME */
#define CMA_CM_TIMEOUT   20             /* CM response timeout exponent: 4.096 us << 20 = 4.3 s */
#define CMA_MAX_CM_RETRY 15
#define CMA_HOP_LIMIT    64

struct cma_id;

struct cma_event {
	struct rdma_cm_event ev;        /* first: what the application sees */
	struct cma_event *next;
	struct cma_id *owner;           /* whose delivered-event count it is in */
	uint8_t pdata[256];
};

struct cma_chan {
	struct rdma_event_channel ch;   /* first: ch.fd is the pipe's read end */
	int wfd;
	struct cma_event *head, *tail;
	uint32_t readers;               /* threads inside rdma_get_cm_event */
	bool closed;                    /* destroyed while some of them waited */
};

struct cma_ah {
	struct cma_ah *next;
	union ibv_gid dgid;
	struct ibv_ah *ah;
};

struct cma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;              /* default PD, made on first use */
	union ibv_gid gid;              /* GID 0: ::ffff:<IPv4> */
	uint32_t ip;                    /* that IPv4, network order */
	enum ibv_mtu mtu;
	uint64_t guid;                  /* host order */
	uint8_t max_rd_atom, max_init_rd_atom;
	/* the CM agent (cm_agent.c) */
	bool agent_ok;
	int slot;
	uint32_t next_n;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	unsigned send_idx;
	unsigned sends_out;             /* posted, completion not yet reaped */
	struct cma_ah *ahs;
};

enum cma_state {
	CS_IDLE, CS_BOUND, CS_ADDR_RESOLVED, CS_ROUTE_RESOLVED, CS_LISTEN,
	CS_REQ_SENT,            /* active: REQ sent, waiting for REP */
	CS_REP_RCVD,            /* active, no QP on the id: CONNECT_RESPONSE queued, rdma_establish sends RTU */
	CS_REQ_RCVD,            /* passive: CONNECT_REQUEST queued */
	CS_REP_SENT,            /* passive: accepted, waiting for RTU */
	CS_ESTABLISHED,
	CS_DREQ_SENT,
	CS_DISCONNECTED,
	CS_SIDR_REQ_SENT, CS_SIDR_RCVD, CS_UD_CONNECTED,
	CS_ERROR,
};

struct cma_mc {
	struct cma_mc *next;
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	void *context;
	bool attached;
};

struct cma_id {
	struct rdma_cm_id id;           /* first: the application's view */
	struct cma_id *next_all;
	struct cma_dev *dev;            /* NULL: not bound to a device (wildcard) */
	bool sync;                      /* channel NULL at creation: a private channel, calls wait */
	bool passive;
	enum cma_state state;
	uint32_t src_ip;                /* network order, 0: wildcard */
	uint16_t port;                  /* host order */
	int backlog, pending;
	uint64_t listen_devs;           /* bit i: listening on g_cma.devs[i] */
	struct cma_id *listen;          /* the listener this id came from */
	int delivered;                  /* events delivered and not yet acked */
	uint8_t tos; bool tos_set;
	uint8_t ack_timeout; bool ack_timeout_set;
	int reuseaddr, afonly;
	struct ibv_sa_path_rec path;
	/* the connection */
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn, sq_psn, rq_psn;   /* sq_psn: the Starting PSN we advertise, rq_psn: the peer's (cma.c RTR) */
	uint8_t resp_res, init_depth, retry_cnt, rnr_retry, srq_flag, flow_control;
	enum ibv_mtu mtu;
	bool disc_queued;
	/* retransmission of the last request or reply (REQ, REP, DREQ, SIDR_REQ) */
	uint8_t mad[CM_MAD_SIZE];
	bool has_mad;                   /* mad holds the last message (also REP / SIDR_REP for duplicates) */
	uint16_t rtx_attr;              /* 0: no timer */
	int tries, max_tries;
	uint32_t tmo_ms;
	uint64_t deadline;              /* ms, CLOCK_MONOTONIC */
	struct ibv_qp_init_attr_ex *ep_attr;   /* rdma_create_ep on a listener: QP for each request */
	struct cma_mc *mcs;
	struct ibv_ece ece;
};

struct cma_global {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cma_dev devs[CMA_MAX_DEVS];
	int ndev;
	int init_err;                   /* errno of the device scan, 0 ok */
	struct cma_id *ids;
	bool thread_started;
	int wake[2];
	pid_t agent_pid;                /* the process that made the agents (not a forked child) */
};

extern struct cma_global g_cma;

static inline struct cma_id *cma_of(struct rdma_cm_id *id) { return (struct cma_id *)id; }
static inline struct cma_chan *chan_of(struct rdma_event_channel *ch) { return (struct cma_chan *)ch; }

/* cma.c */
int cma_init(void);                     /* scans devices once; 0 or errno */
uint64_t cma_now_ms(void);
uint32_t cma_random(void);
struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status);
void cma_queue(struct cma_id *owner, struct cma_event *e);     /* lock held */
struct cma_id *cma_id_alloc(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt);  /* lock held, linked */
void cma_set_ibaddr(struct cma_id *c, const union ibv_gid *dgid);
void cma_fill_path(struct cma_id *c, enum ibv_mtu mtu);
int cma_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask);
int cma_qp_to_err(struct cma_id *c);
int cma_qp_rtr_rts(struct cma_id *c);
struct cma_dev *cma_dev_by_ip(uint32_t ip);
void cma_set_dev(struct cma_id *c, struct cma_dev *d);   /* lock held: dev, verbs, port_num, pd */
void cma_gid_of_ip(union ibv_gid *gid, uint32_t ip);
int cma_complete(struct cma_id *c);
int cma_create_channel_for(struct cma_id *c);
void cma_teardown_conn(struct cma_id *c);

/* cm_agent.c (lock held for all) */
extern int cm_debug;
int cm_agent_start(struct cma_dev *d);
uint32_t cm_new_comm_id(struct cma_dev *d);
int cm_send(struct cma_dev *d, const union ibv_gid *dgid, struct cm_msg *m, struct cma_id *save);
void cm_arm(struct cma_id *c, uint16_t attr, int max_tries, uint32_t first_ms);
void cm_disarm(struct cma_id *c);
void cm_send_rej(struct cma_dev *d, const union ibv_gid *dgid, uint32_t local, uint32_t remote,
		 uint8_t msg_ref, uint16_t reason, const void *pdata, size_t len);
int cm_send_req(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_rep(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_sidr_req(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_sidr_rep(struct cma_id *c, uint8_t status, uint32_t qpn, const void *pdata, size_t len);
int cm_send_dreq(struct cma_id *c);
int cm_send_rtu(struct cma_id *c);
void cm_listen_added(void);           /* a held REQ may have its listener now */
void cm_fill_ud_ah(struct cma_id *c, struct ibv_ah_attr *ah, const union ibv_gid *dgid);

/* urd_cm_agent / urd_cm_listen come from our libibverbs (UNIRDMA_PRIVATE_1.0);
 * weak, so that the library still loads over another libibverbs (the CM
 * then fails with ENOSYS instead of the program failing to start). */
#pragma weak urd_cm_agent
#pragma weak urd_cm_listen

#endif

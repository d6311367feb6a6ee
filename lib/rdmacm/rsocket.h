/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rsocket.h: the internals of our rsockets (rsocket.c: streams over RC,
 * the fd table, rpoll/rselect, options; rsocket_dgram.c: datagrams over UD).
 *
 * Wire format (what rdma-core's librdmacm/rsocket.c puts on the wire; the
 * two must interoperate, so none of it may change):
 *   - connection private data: struct rs_conn_data (40 bytes, big endian
 *     fields), in the REQ after the rdma_cm header and in the REP;
 *   - every stream message is an RDMA WRITE WITH IMMEDIATE whose 32-bit
 *     immediate (big endian on the wire) is op << 29 | data:
 *       RS_OP_DATA     data = bytes written into the peer's receive buffer
 *       RS_OP_SGL      data = the sender's new credit limit (a 16-bit receive
 *                      sequence number); carries a 16-byte struct rs_sge
 *                      written into the peer's target SGL ring, or nothing
 *       RS_OP_IOMAP_SGL data = slot index; carries a 24-byte struct rs_iomap
 *                      written into the peer's iomap table
 *       RS_OP_CTRL     data = RS_CTRL_DISCONNECT / RS_CTRL_SHUTDOWN
 *     riowrite data are plain RDMA WRITEs (no immediate), keep-alives are
 *     0-byte plain RDMA WRITEs;
 *   - struct rs_sge / rs_iomap are written in the writer's byte order; the
 *     RS_CONN_FLAG_NET flag says whether that is big endian (a peer of the
 *     other order swaps what it writes);
 *   - datagrams: a struct ds_udp_header over the UDP socket to exchange QP
 *     numbers, then UD SENDs (qkey RDMA_UDP_QKEY) that begin with a struct
 *     ds_header naming the sender's address. */
#ifndef URD_RSOCKET_H
#define URD_RSOCKET_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

/* ---- wire ---------------------------------------------------------------- */

enum {
	RS_OP_DATA = 0,
	RS_OP_WRITE = 2,        /* riowrite: never in an immediate, only in wr_ids */
	RS_OP_SGL = 4,
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};
enum { RS_CTRL_DISCONNECT = 0, RS_CTRL_KEEPALIVE = 1, RS_CTRL_SHUTDOWN = 2 };

static inline uint32_t rs_msg(uint32_t op, uint32_t data) { return op << 29 | (data & 0x1fffffff); }
static inline uint32_t rs_msg_op(uint32_t m) { return m >> 29; }
static inline uint32_t rs_msg_data(uint32_t m) { return m & 0x1fffffff; }

struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

#define RS_CONN_VERSION    1
#define RS_CONN_FLAG_NET   (1 << 0)     /* the sender is big endian */
#define RS_CONN_FLAG_IOMAP (1 << 1)     /* an iomap table follows the target SGL */

struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;               /* big endian: the sender's receive queue size */
	uint8_t reserved[3];
	uint8_t target_iomap_size;      /* rs_value_to_scale(size, 8) */
	struct rs_sge target_sgl;       /* big endian: where the peer writes SGL updates */
	struct rs_sge data_buf;         /* big endian: the first half of the receive buffer */
};

static_assert(sizeof(struct rs_sge) == 16, "rs_sge is 16 bytes on the wire");
static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");
static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes on the wire");
static_assert(offsetof(struct rs_conn_data, target_iomap_size) == 7, "rs_conn_data layout");
static_assert(offsetof(struct rs_conn_data, target_sgl) == 8, "rs_conn_data layout");
static_assert(offsetof(struct rs_conn_data, data_buf) == 24, "rs_conn_data layout");

#define DS_UDP_TAG 0x55555555u

struct ds_udp_header {
	uint32_t tag;                   /* big endian DS_UDP_TAG */
	uint8_t version;                /* 4 or 6 */
	uint8_t op;                     /* RS_OP_DATA: data follow; RS_OP_CTRL: QPN reply */
	uint8_t length;                 /* of this header: 16 (IPv4) or 28 (IPv6) */
	uint8_t reserved;
	uint32_t qpn;                   /* big endian, the sender's UD QP */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;                         /* the sender's QP address */
} __attribute__((packed));

#define DS_UDP_IPV4_HDR_LEN 16
#define DS_UDP_IPV6_HDR_LEN 28

struct ds_header {
	uint8_t version;
	uint8_t length;                 /* 8 (IPv4) or 24 (IPv6) */
	uint16_t port;                  /* network order */
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};

#define DS_IPV4_HDR_LEN 8
#define DS_IPV6_HDR_LEN 24

static_assert(sizeof(struct ds_udp_header) == 28, "ds_udp_header layout");
static_assert(sizeof(struct ds_header) == 24, "ds_header layout");

/* ---- sizes and defaults (rdma-core's) -------------------------------------- */

#define RS_OLAP_START_SIZE 2048
#define RS_MAX_TRANSFER    65536
#define RS_SNDLOWAT        2048
#define RS_QP_MIN_SIZE     16
#define RS_QP_MAX_SIZE     0xfffe
#define RS_QP_CTRL_SIZE    4            /* send WRs kept for control messages */
#define RS_SGL_SIZE        2
#define RS_MAX_CTRL_MSG    sizeof(struct rs_sge)
#define RS_DEF_INLINE      64
#define RS_DEF_QSIZE       384
#define RS_DEF_MEM         (1 << 17)

#define RS_WR_RECV         (1ull << 63)

/* ---- state ------------------------------------------------------------- */

/* ordered: passive < opening < connected < disconnected (rdma-core's values) */
enum {
	RS_INIT = 0,
	RS_BOUND = 0x0001,
	RS_LISTENING = 0x0002,
	RS_OPENING = 0x0004,
	RS_RESOLVING_ADDR = RS_OPENING | 0x0010,
	RS_RESOLVING_ROUTE = RS_OPENING | 0x0020,
	RS_CONNECTING = RS_OPENING | 0x0040,
	RS_ACCEPTING = RS_OPENING | 0x0080,
	RS_CONNECTED = 0x0100,
	RS_WRITABLE = 0x0200,
	RS_READABLE = 0x0400,
	RS_CONNECT_RDWR = RS_CONNECTED | RS_READABLE | RS_WRITABLE,
	RS_CONNECT_ERROR = 0x0800,
	RS_DISCONNECTED = 0x1000,
	RS_ERROR = 0x2000,
};

struct rs_rmsg { uint32_t op, data; };

struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	uint64_t offset;
	struct ibv_mr *mr;
	int index;                      /* slot in the peer's table; -1: local only */
	bool queued;                    /* not yet written to the peer */
};

struct ds_qp;

struct ds_dest {
	struct ds_dest *next;
	struct sockaddr_storage addr;
	struct ds_qp *qp;
	struct ibv_ah *ah;
	uint32_t qpn;
};

struct ds_qp {
	struct ds_qp *next;
	struct rsock *rs;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct sockaddr_storage src;
	struct ds_header hdr;
	struct ibv_mr *smr, *rmr;
	uint8_t *rbuf;                  /* rq_size slots of RS_SNDLOWAT, then the GRH */
	bool cq_armed;
};

struct ds_rmsg {
	struct ds_qp *qp;               /* NULL: came over UDP, data in udp_data */
	uint32_t offset, length;
	uint8_t *udp_data;
	struct sockaddr_storage udp_src;
};

struct rsock {
	int type;                       /* SOCK_STREAM or SOCK_DGRAM */
	int fd;                         /* the descriptor programs see */
	pthread_mutex_t lock;
	int state, err;
	int fs_flags, fd_flags;
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint16_t target_iomap_size;
	uint64_t so_opts, tcp_opts, ipv6_opts;
	int ipv4_tos;
	unsigned keepalive_time;
	bool swap_sgl;

	/* stream */
	struct rdma_event_channel *ch;  /* ch->fd is fd */
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool cq_armed;
	struct rsock *accept_q;         /* listener: accepted, not yet returned */
	struct rsock *accept_next;
	int backlog;

	unsigned ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp, rseq_no, rseq_comp;

	int remote_sge;
	struct rs_sge remote_sgl, remote_iomap;

	struct ibv_mr *target_mr;
	void *target_buf;
	volatile struct rs_sge *target_sgl;
	volatile struct rs_iomap *target_iomap;
	int target_sge;

	int rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	struct ibv_mr *rmr;
	uint8_t *rbuf;

	int sbuf_bytes_avail;
	struct ibv_mr *smr;
	uint8_t *sbuf;
	struct ibv_sge ssgl[2];

	int sqe_avail;
	int rmsg_head, rmsg_tail;
	struct rs_rmsg *rmsg;

	struct rs_iomap_mr *iomaps;     /* every mapping, writable ones in slot order */
	struct rs_iomap_mr *remote_slots; /* remote_iomap.length of them */
	bool iomap_pending;

	/* datagram */
	int udp_sock, epfd;
	struct ds_qp *qps;
	struct ds_dest *dests, *conn_dest;
	uint8_t *dsbuf;                 /* sq_size send slots of RS_SNDLOWAT */
	uint32_t *dsfree;               /* stack of free slot indices */
	int dsfree_n;
	int rqe_avail;
	struct ds_rmsg *dmsg;
};

/* rsocket.c */
int rs_table_set(int fd, struct rsock *rs);
void rs_table_clear(int fd);
int rs_err(int e);                      /* errno = e, returns -1 */
uint64_t rs_now_us(void);

/* rsocket_dgram.c (rs->lock held unless said) */
int ds_socket(struct rsock *rs, int domain, int type);
void ds_free(struct rsock *rs);         /* lock not held, table entry gone */
int ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
int ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
ssize_t ds_sendto(struct rsock *rs, const void *buf, size_t len, int flags,
		  const struct sockaddr *to, socklen_t tolen);
ssize_t ds_recvfrom(struct rsock *rs, void *buf, size_t len, int flags,
		    struct sockaddr *from, socklen_t *fromlen);
int ds_poll_events(struct rsock *rs, int events);   /* progress, no wait */
bool ds_arm(struct rsock *rs);                      /* arms the CQs; false: armed just now */
int ds_wait_fd(struct rsock *rs);                   /* the fd to sleep on */
void ds_wait_done(struct rsock *rs);                /* after that fd was readable */

#endif

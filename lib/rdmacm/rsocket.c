/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rsocket.c: the rsockets entry points (<rdma/rsocket.h>): stream rsockets
 * over RC QPs, the descriptor table, rpoll/rselect, options and iomaps.
 * Datagram rsockets are in rsocket_dgram.c; the wire format in rsocket.h.
 *
 * An rsocket's descriptor is a real descriptor the library owns, as in
 * rdma-core: a stream rsocket's is its rdma_cm event channel's, a datagram
 * one's its UDP socket's, so it never collides with the program's own and
 * programs can mix both in pollfds and fd_sets.  A descriptor that is not an
 * rsocket goes to the libc call of the same name in every call.
 *
 * There are no service threads: connection events, accepts, credit updates
 * and datagram address exchange progress inside the calls (rpoll included),
 * and a listener accepts when raccept or rpoll looks at it.  A blocking call
 * waits in poll() on the CQ's completion channel and the CM channel.
 *
 * Not supported (as rdma-core's Debian build is used by the rdmacm-utils):
 * fork support (rstream -T f), keep-alive sending (SO_KEEPALIVE is accepted
 * and recorded; incoming keep-alives need no handling), AF_IB, iWARP's
 * send-based messages, RDMA_ROUTE (accepted, the path is always ours). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <byteswap.h>
#include <endian.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>

#include "rsocket.h"

static bool host_is_net(void) { return __BYTE_ORDER == __BIG_ENDIAN; }

/* ---- descriptor table ----------------------------------------------------- */

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsock **tab;
static int tab_cap;

int rs_err(int e)
{
	errno = e;
	return -1;
}

uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int rs_table_set(int fd, struct rsock *rs)
{
	int ret = 0;

	if (fd < 0)
		return -EBADF;
	pthread_mutex_lock(&tab_lock);
	if (fd >= tab_cap) {
		int ncap = tab_cap ? tab_cap : 64;
		struct rsock **n;

		while (ncap <= fd)
			ncap *= 2;
		n = realloc(tab, (size_t)ncap * sizeof(*n));
		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		memset(n + tab_cap, 0, (size_t)(ncap - tab_cap) * sizeof(*n));
		tab = n;
		tab_cap = ncap;
	}
	tab[fd] = rs;
	rs->fd = fd;
out:
	pthread_mutex_unlock(&tab_lock);
	return ret;
}

void rs_table_clear(int fd)
{
	pthread_mutex_lock(&tab_lock);
	if (fd >= 0 && fd < tab_cap)
		tab[fd] = NULL;
	pthread_mutex_unlock(&tab_lock);
}

static struct rsock *rs_lookup(int fd)
{
	struct rsock *rs = NULL;

	pthread_mutex_lock(&tab_lock);
	if (fd >= 0 && fd < tab_cap)
		rs = tab[fd];
	pthread_mutex_unlock(&tab_lock);
	return rs;
}

static bool any_rsock(void)
{
	return __atomic_load_n(&tab_cap, __ATOMIC_RELAXED) != 0;
}

/* ---- allocation -------------------------------------------------------- */

static int value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

static int scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

static struct rsock *rs_alloc(const struct rsock *parent, int type)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->fd = -1;
	rs->udp_sock = -1;
	rs->epfd = -1;
	pthread_mutex_init(&rs->lock, NULL);
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_inline = parent->sq_inline;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->fs_flags = parent->fs_flags;
		rs->fd_flags = parent->fd_flags;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
	} else {
		rs->sbuf_size = RS_DEF_MEM;
		rs->rbuf_size = RS_DEF_MEM;
		rs->sq_inline = RS_DEF_INLINE;
		rs->sq_size = RS_DEF_QSIZE;
		rs->rq_size = RS_DEF_QSIZE;
	}
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	return rs;
}

static void rs_free_iomaps(struct rsock *rs)
{
	struct rs_iomap_mr *m;

	while ((m = rs->iomaps)) {
		rs->iomaps = m->next;
		if (m->mr)
			ibv_dereg_mr(m->mr);
		if (m->index < 0)
			free(m);
	}
	free(rs->remote_slots);
	rs->remote_slots = NULL;
}

/* Frees a stream rsocket (its table entry already gone). */
static void rs_free(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM) {
		ds_free(rs);
		return;
	}
	rs_free_iomaps(rs);
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buf);
	free(rs->rmsg);
	if (rs->cq)
		ibv_destroy_cq(rs->cq);
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
	if (rs->id) {
		if (rs->id->event) {
			rdma_ack_cm_event(rs->id->event);
			rs->id->event = NULL;
		}
		rdma_destroy_id(rs->id);
	}
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A stream rsocket's CM side: an id on a channel of its own, whose
 * descriptor is the rsocket's.  The channel is nonblocking: events are
 * drained in the calls, and blocking calls wait in poll(). */
static int rs_new_channel(struct rsock *rs)
{
	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		return -1;
	if (set_nonblock(rs->ch->fd))
		return -1;
	return 0;
}

/* ---- stream endpoint: QP, buffers ------------------------------------------ */

static void *page_alloc(size_t len)
{
	void *p;

	len = (len + 4095) & ~(size_t)4095;
	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static void rs_clamp_qp(struct rsock *rs)
{
	struct ibv_device_attr a;
	uint32_t max = RS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->id->verbs, &a) && (uint32_t)a.max_qp_wr < max)
		max = (uint32_t)a.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	else if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	else if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

static int rs_post_recv(struct rsock *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV }, *bad;

	/* no buffer: every message is an RDMA WRITE WITH IMMEDIATE */
	return ibv_post_recv(rs->id->qp, &wr, &bad);
}

/* 0 or -1 with errno */
static int rs_create_ep(struct rsock *rs)
{
	struct ibv_qp_init_attr qa;
	size_t tlen, slen;
	int i, acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	rs_clamp_qp(rs);
	rs->cch = ibv_create_comp_channel(rs->id->verbs);
	if (!rs->cch)
		return -1;
	if (set_nonblock(rs->cch->fd))
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size, rs, rs->cch, 0);
	if (!rs->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, NULL, &qa))
		return -1;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;

	rs->rmsg = calloc(rs->rq_size + 1u, sizeof(*rs->rmsg));
	slen = rs->sbuf_size;
	if (rs->sq_inline < RS_MAX_CTRL_MSG)
		slen += RS_MAX_CTRL_MSG * RS_QP_CTRL_SIZE;
	rs->sbuf = page_alloc(slen);
	tlen = sizeof(struct rs_sge) * RS_SGL_SIZE + sizeof(struct rs_iomap) * rs->target_iomap_size;
	rs->target_buf = page_alloc(tlen);
	rs->rbuf = page_alloc(rs->rbuf_size);
	if (!rs->rmsg || !rs->sbuf || !rs->target_buf || !rs->rbuf)
		return rs_err(ENOMEM);
	rs->smr = ibv_reg_mr(rs->id->pd, rs->sbuf, slen, IBV_ACCESS_LOCAL_WRITE);
	rs->target_mr = ibv_reg_mr(rs->id->pd, rs->target_buf, tlen, acc);
	rs->rmr = ibv_reg_mr(rs->id->pd, rs->rbuf, rs->rbuf_size, acc);
	if (!rs->smr || !rs->target_mr || !rs->rmr)
		return -1;
	rs->target_sgl = rs->target_buf;
	if (rs->target_iomap_size)
		rs->target_iomap = (struct rs_iomap *)((struct rs_sge *)rs->target_buf + RS_SGL_SIZE);

	rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
	rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
	rs->sbuf_bytes_avail = (int)rs->sbuf_size;
	rs->rbuf_free_offset = (int)(rs->rbuf_size >> 1);
	rs->rbuf_bytes_avail = (int)(rs->rbuf_size >> 1);
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	for (i = 0; i < rs->rq_size; i++) {
		int e = rs_post_recv(rs);

		if (e)
			return rs_err(e);
	}
	return 0;
}

static void rs_format_conn_data(struct rsock *rs, struct rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RS_CONN_VERSION;
	c->flags = RS_CONN_FLAG_IOMAP | (host_is_net() ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)value_to_scale(rs->target_iomap_size, 8);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_buf);
	c->target_sgl.length = htobe32(RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->target_mr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size >> 1);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

static void rs_save_conn_data(struct rsock *rs, const struct rs_conn_data *c)
{
	rs->remote_sgl.addr = be64toh(c->target_sgl.addr);
	rs->remote_sgl.length = be32toh(c->target_sgl.length);
	rs->remote_sgl.key = be32toh(c->target_sgl.key);
	rs->remote_sge = 1;
	rs->swap_sgl = host_is_net() != !!(c->flags & RS_CONN_FLAG_NET);
	if (c->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr + sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)scale_to_value(c->target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(c->data_buf.addr);
	rs->target_sgl[0].length = be32toh(c->data_buf.length);
	rs->target_sgl[0].key = be32toh(c->data_buf.key);
	rs->sseq_comp = be16toh(c->credits);
}

/* ---- stream data path ------------------------------------------------------ */

static int post_write(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, bool imm,
		      int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = msg;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = (unsigned)flags;
	wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(rs->id->qp, &wr, &bad);
}

/* A message without payload.  The R_Key and address of a 0-byte write are
 * not looked at by an IBA responder; ours names the peer's target SGL
 * anyway, a region the peer did register for us (our engine checks them). */
static int post_msg(struct rsock *rs, uint32_t msg)
{
	return post_write(rs, NULL, 0, msg, true, 0, rs->remote_sgl.addr, rs->remote_sgl.key);
}

static uint32_t sbuf_left(struct rsock *rs)
{
	return (uint32_t)((uintptr_t)&rs->sbuf[rs->sbuf_size] - rs->ssgl[0].addr);
}

static int write_data(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t len, int flags)
{
	volatile struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t key = t->key;

	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)len;
	t->addr += len;
	t->length -= len;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return post_write(rs, sgl, nsge, rs_msg(RS_OP_DATA, len), true, flags, addr, key);
}

static void *ctrl_buf(struct rsock *rs)
{
	return rs->sbuf + rs->sbuf_size + RS_MAX_CTRL_MSG * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
}

/* Credits: the new limit (our received-message count plus our receive
 * queue), with the next free half of the receive buffer when there is one. */
static void send_credits(struct rsock *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint32_t credit = (uint16_t)(rs->rseq_no + rs->rq_size);

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	if (rs->rbuf_bytes_avail >= (int)half) {
		struct rs_sge sge;
		struct ibv_sge isge;
		int flags = 0;

		sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
		sge.key = rs->rmr->rkey;
		sge.length = half;
		if (rs->swap_sgl) {
			sge.addr = bswap_64(sge.addr);
			sge.key = bswap_32(sge.key);
			sge.length = bswap_32(sge.length);
		}
		if (rs->sq_inline >= sizeof(sge)) {
			isge.addr = (uintptr_t)&sge;
			isge.lkey = 0;
			flags = IBV_SEND_INLINE;
		} else {
			void *cb = ctrl_buf(rs);

			memcpy(cb, &sge, sizeof(sge));
			isge.addr = (uintptr_t)cb;
			isge.lkey = rs->smr->lkey;
		}
		isge.length = sizeof(sge);
		post_write(rs, &isge, 1, rs_msg(RS_OP_SGL, credit), true, flags,
			   rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(struct rs_sge),
			   rs->remote_sgl.key);
		rs->rbuf_bytes_avail -= (int)half;
		rs->rbuf_free_offset += (int)half;
		if (rs->rbuf_free_offset >= (int)rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == (int)rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else {
		post_msg(rs, rs_msg(RS_OP_SGL, credit));
	}
}

static bool ctrl_avail(struct rsock *rs) { return rs->ctrl_seqno != rs->ctrl_max_seqno; }

static void update_credits(struct rsock *rs)
{
	if ((rs->state & RS_CONNECTED) && ctrl_avail(rs) &&
	    (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1) ||
	     (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0))
		send_credits(rs);
}

static void poll_cq(struct rsock *rs)
{
	struct ibv_wc wc;
	int rcnt = 0;

	if (!rs->cq)
		return;
	while (ibv_poll_cq(rs->cq, 1, &wc) > 0) {
		if (wc.wr_id & RS_WR_RECV) {
			uint32_t m;

			if (wc.status != IBV_WC_SUCCESS)
				continue;
			rcnt++;
			if (!(wc.wc_flags & IBV_WC_WITH_IMM))
				continue;
			m = be32toh(wc.imm_data);
			switch (rs_msg_op(m)) {
			case RS_OP_SGL:
				rs->sseq_comp = (uint16_t)rs_msg_data(m);
				break;
			case RS_OP_IOMAP_SGL:
				break;  /* the table entry is in place */
			case RS_OP_CTRL:
				if (rs_msg_data(m) == RS_CTRL_DISCONNECT) {
					rs->state = RS_DISCONNECTED;
				} else if (rs_msg_data(m) == RS_CTRL_SHUTDOWN) {
					if (rs->state & RS_WRITABLE)
						rs->state &= ~RS_READABLE;
					else
						rs->state = RS_DISCONNECTED;
				}
				break;
			case RS_OP_DATA:
				rs->rmsg[rs->rmsg_tail].op = RS_OP_DATA;
				rs->rmsg[rs->rmsg_tail].data = rs_msg_data(m);
				if (++rs->rmsg_tail == rs->rq_size + 1)
					rs->rmsg_tail = 0;
				break;
			default:
				break;
			}
		} else {
			uint32_t m = (uint32_t)wc.wr_id;

			switch (rs_msg_op(m)) {
			case RS_OP_SGL:
				rs->ctrl_max_seqno++;
				break;
			case RS_OP_CTRL:
				rs->ctrl_max_seqno++;
				if (rs_msg_data(m) == RS_CTRL_DISCONNECT)
					rs->state = RS_DISCONNECTED;
				break;
			case RS_OP_IOMAP_SGL:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += (int)sizeof(struct rs_iomap);
				break;
			default:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += (int)rs_msg_data(m);
				break;
			}
			if (wc.status != IBV_WC_SUCCESS && (rs->state & RS_CONNECTED)) {
				rs->state = RS_ERROR;
				rs->err = EIO;
			}
		}
	}
	if (rs->state & RS_CONNECTED) {
		while (rcnt-- > 0) {
			int e = rs_post_recv(rs);

			if (e) {
				rs->state = RS_ERROR;
				rs->err = e;
				break;
			}
		}
	}
}

static bool can_send(struct rsock *rs)
{
	return rs->sqe_avail && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->target_sgl[rs->target_sge].length != 0;
}

static bool t_can_send(struct rsock *rs) { return can_send(rs) || !(rs->state & RS_WRITABLE); }
static bool have_rdata(struct rsock *rs) { return rs->rmsg_head != rs->rmsg_tail; }
static bool t_have_rdata(struct rsock *rs) { return have_rdata(rs) || !(rs->state & RS_READABLE); }
static bool t_ctrl(struct rsock *rs) { return ctrl_avail(rs) || !(rs->state & RS_CONNECTED); }
static bool t_all_sent(struct rsock *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       !(rs->state & RS_CONNECTED);
}

/* ---- stream CM progress ----------------------------------------------------- */

static int cm_status_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return ev->status == -ETIMEDOUT || ev->status == ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
	default:
		return ev->status < 0 ? -ev->status : ev->status ? ev->status : ECONNRESET;
	}
}

static void connect_failed(struct rsock *rs, int e)
{
	rs->state = RS_CONNECT_ERROR;
	rs->err = e;
}

/* The active side, after the route: QP, buffers, REQ with our conn data. */
static void rs_send_req(struct rsock *rs)
{
	struct rdma_conn_param p;
	struct rs_conn_data cd;

	if (rs_create_ep(rs)) {
		connect_failed(rs, errno ? errno : ENOMEM);
		return;
	}
	rs_format_conn_data(rs, &cd);
	memset(&p, 0, sizeof(p));
	p.private_data = &cd;
	p.private_data_len = sizeof(cd);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	if (rdma_connect(rs->id, &p))
		connect_failed(rs, errno);
	else
		rs->state = RS_CONNECTING;
}

static void rs_cm_event(struct rsock *rs, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RS_RESOLVING_ADDR)
			break;
		if (rdma_resolve_route(rs->id, 2000))
			connect_failed(rs, errno);
		else
			rs->state = RS_RESOLVING_ROUTE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == RS_RESOLVING_ROUTE)
			rs_send_req(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state == RS_CONNECTING) {
			const struct rs_conn_data *cd = ev->param.conn.private_data;

			if (!cd || ev->param.conn.private_data_len < sizeof(*cd) ||
			    cd->version != RS_CONN_VERSION) {
				connect_failed(rs, ENOTSUP);
				break;
			}
			rs_save_conn_data(rs, cd);
			rs->state = RS_CONNECT_RDWR;
		} else if (rs->state == RS_ACCEPTING) {
			rs->state = RS_CONNECT_RDWR;
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (rs->state & RS_OPENING)
			connect_failed(rs, cm_status_errno(ev));
		else if (rs->state & RS_CONNECTED)
			rs->state = RS_ERROR, rs->err = ECONNRESET;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rs->state & RS_CONNECTED)
			rs->state = RS_DISCONNECTED;
		else if (rs->state & RS_OPENING)
			connect_failed(rs, ECONNRESET);
		break;
	default:
		break;
	}
}

/* Handles the events queued on a connecting or connected rsocket's channel. */
static void rs_cm_drain(struct rsock *rs)
{
	struct rdma_cm_event *ev;

	if (!rs->ch || rs->state == RS_LISTENING)
		return;
	while (!rdma_get_cm_event(rs->ch, &ev)) {
		rs_cm_event(rs, ev);
		rdma_ack_cm_event(ev);
	}
}

/* Passive side of one CONNECT_REQUEST: a new rsocket with a channel of its
 * own, its QP and buffers, REP with our conn data.  It is queued on the
 * listener for raccept.  On failure the request is rejected. */
static void rs_accept_one(struct rsock *l, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param p = ev->param.conn;
	struct rs_conn_data req, resp;
	struct rsock *rs, **pp;
	bool ok = p.private_data && p.private_data_len >= sizeof(req);

	if (ok)
		memcpy(&req, p.private_data, sizeof(req));
	rdma_ack_cm_event(ev);
	if (!ok || req.version != RS_CONN_VERSION)
		goto reject;
	rs = rs_alloc(l, SOCK_STREAM);
	if (!rs)
		goto reject;
	rs->id = id;
	id->context = rs;
	if (rs_new_channel(rs) || rdma_migrate_id(id, rs->ch) ||
	    rs_table_set(rs->ch->fd, rs) || rs_create_ep(rs))
		goto free;
	rs_save_conn_data(rs, &req);
	rs_format_conn_data(rs, &resp);
	p.private_data = &resp;
	p.private_data_len = sizeof(resp);
	rs->state = RS_CONNECT_RDWR;    /* our QP is ready to send after the REP */
	if (rdma_accept(id, &p))
		goto free;
	for (pp = &l->accept_q; *pp; pp = &(*pp)->accept_next)
		;
	*pp = rs;
	return;
free:
	rdma_reject(id, NULL, 0);
	if (rs->fd >= 0)
		rs_table_clear(rs->fd);
	rs_free(rs);
	return;
reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static void rs_listen_drain(struct rsock *l)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(l->ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			rs_accept_one(l, ev);
		else
			rdma_ack_cm_event(ev);
	}
}

/* ---- waiting ------------------------------------------------------------------ */

/* Progress without waiting: CM events, completions, credits. */
static void rs_progress(struct rsock *rs)
{
	rs_cm_drain(rs);
	if (rs->cq) {
		update_credits(rs);
		poll_cq(rs);
		update_credits(rs);
	}
}

/* Takes the completion event the channel signalled; the CQ is disarmed then. */
static void rs_take_cq_event(struct rsock *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	while (rs->cch && !ibv_get_cq_event(rs->cch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

/* Arms the CQ if needed; returns whether the caller may sleep now (the CQ
 * was armed before the last poll, so no completion can be missed). */
static bool rs_arm(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM)
		return ds_arm(rs);
	if (!rs->cq || rs->cq_armed)
		return true;
	ibv_req_notify_cq(rs->cq, 0);
	rs->cq_armed = true;
	return false;
}

static int rs_wait_fds(struct rsock *rs, struct pollfd *p)
{
	int n = 0;

	if (rs->cch) {
		p[n].fd = rs->cch->fd;
		p[n++].events = POLLIN;
	}
	if (rs->ch) {
		p[n].fd = rs->ch->fd;
		p[n++].events = POLLIN;
	}
	return n;
}

/* Progresses rs until test(rs), without waiting if nonblock (EWOULDBLOCK).
 * Lock held; released while asleep.  0 or -1 with errno. */
static int rs_get_comp(struct rsock *rs, bool nonblock, bool (*test)(struct rsock *))
{
	uint64_t spin_until = 0;

	for (;;) {
		struct pollfd p[2];
		int n;

		rs_progress(rs);
		if (test(rs))
			return 0;
		if (rs->state & (RS_ERROR | RS_CONNECT_ERROR))
			return rs_err(rs->err ? rs->err : ECONNRESET);
		if (nonblock)
			return rs_err(EWOULDBLOCK);
		/* a short spin first: a reply often is microseconds away */
		if (!spin_until)
			spin_until = rs_now_us() + 20;
		if (rs_now_us() < spin_until)
			continue;
		if (!rs_arm(rs))
			continue;
		n = rs_wait_fds(rs, p);
		pthread_mutex_unlock(&rs->lock);
		poll(p, (nfds_t)n, -1);
		pthread_mutex_lock(&rs->lock);
		rs_take_cq_event(rs);
	}
}

static bool nonblocking(struct rsock *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

static bool t_open_done(struct rsock *rs) { return !(rs->state & RS_OPENING); }

/* A connect in progress: on, and wait for it unless nonblock.  0 when
 * connected; -1 with EINPROGRESS or the error. */
static int rs_finish_connect(struct rsock *rs, bool nonblock)
{
	if (rs->state & RS_OPENING) {
		if (rs_get_comp(rs, nonblock, t_open_done))
			return rs_err(errno == EWOULDBLOCK ? EINPROGRESS : errno);
	}
	if (rs->state == RS_CONNECT_ERROR)
		return rs_err(rs->err ? rs->err : ECONNREFUSED);
	return 0;
}

/* ---- API: sockets ------------------------------------------------------------ */

int rsocket(int domain, int type, int protocol)
{
	int stype = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct rsock *rs;
	int e;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    (stype != SOCK_STREAM && stype != SOCK_DGRAM) ||
	    (stype == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (stype == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return rs_err(ENOTSUP);
	rs = rs_alloc(NULL, stype);
	if (!rs)
		return rs_err(ENOMEM);
	rs->fd_flags = (type & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
	rs->fs_flags = (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	if (stype == SOCK_DGRAM) {
		e = ds_socket(rs, domain, type);
		if (e)
			goto fail;
		e = -rs_table_set(rs->udp_sock, rs);
		if (e)
			goto fail;
		return rs->fd;
	}
	if (rs_new_channel(rs) || rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP)) {
		e = errno;
		goto fail;
	}
	rs->id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	e = -rs_table_set(rs->ch->fd, rs);
	if (e)
		goto fail;
	return rs->fd;
fail:
	rs->fd = -1;
	rs_free(rs);
	return rs_err(e ? e : ENOMEM);
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return bind(socket, addr, addrlen);
	pthread_mutex_lock(&rs->lock);
	if (rs->type == SOCK_DGRAM) {
		ret = ds_bind(rs, addr, addrlen);
	} else {
		ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
		if (!ret)
			rs->state = RS_BOUND;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rlisten(int socket, int backlog)
{
	struct rsock *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return listen(socket, backlog);
	if (rs->type != SOCK_STREAM)
		return rs_err(EOPNOTSUPP);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_LISTENING) {
		ret = rdma_listen(rs->id, backlog);
		if (!ret) {
			rs->state = RS_LISTENING;
			rs->backlog = backlog;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *l = rs_lookup(socket), *rs;

	if (!l)
		return accept(socket, addr, addrlen);
	if (l->type != SOCK_STREAM || l->state != RS_LISTENING)
		return rs_err(EINVAL);
	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct pollfd p = { .fd = l->ch->fd, .events = POLLIN };

		rs_listen_drain(l);
		if (l->accept_q)
			break;
		if (l->fs_flags & O_NONBLOCK) {
			pthread_mutex_unlock(&l->lock);
			return rs_err(EAGAIN);
		}
		pthread_mutex_unlock(&l->lock);
		poll(&p, 1, -1);
		pthread_mutex_lock(&l->lock);
	}
	rs = l->accept_q;
	l->accept_q = rs->accept_next;
	rs->accept_next = NULL;
	pthread_mutex_unlock(&l->lock);
	if (addr && addrlen)
		rgetpeername(rs->fd, addr, addrlen);
	return rs->fd;
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsock *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return connect(socket, addr, addrlen);
	pthread_mutex_lock(&rs->lock);
	if (rs->type == SOCK_DGRAM) {
		ret = ds_connect(rs, addr, addrlen);
		pthread_mutex_unlock(&rs->lock);
		return ret;
	}
	if (rs->state == RS_INIT || rs->state == RS_BOUND) {
		if (addrlen > sizeof(rs->id->route.addr.dst_storage)) {
			pthread_mutex_unlock(&rs->lock);
			return rs_err(EINVAL);
		}
		memcpy(&rs->id->route.addr.dst_addr, addr, addrlen);
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, 2000)) {
			connect_failed(rs, errno);
		} else {
			rs->state = RS_RESOLVING_ADDR;
		}
	} else if (!(rs->state & RS_OPENING)) {
		ret = rs->state & RS_CONNECTED ? EISCONN : rs->state == RS_CONNECT_ERROR ? rs->err : EINVAL;
		pthread_mutex_unlock(&rs->lock);
		return rs_err(ret ? ret : ECONNREFUSED);
	}
	ret = rs_finish_connect(rs, rs->fs_flags & O_NONBLOCK);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* ---- API: data ------------------------------------------------------------------ */

static void peek_copy(struct rsock *rs, uint8_t *buf, size_t len, size_t *got)
{
	int head = rs->rmsg_head, off = rs->rbuf_offset;
	size_t left = len;

	while (left && head != rs->rmsg_tail) {
		uint32_t rsize = rs->rmsg[head].data, end;

		if (left < rsize)
			rsize = (uint32_t)left;
		else if (++head == rs->rq_size + 1)
			head = 0;
		end = rs->rbuf_size - (uint32_t)off;
		if (rsize > end) {
			memcpy(buf, &rs->rbuf[off], end);
			buf += end;
			left -= end;
			rsize -= end;
			off = 0;
		}
		memcpy(buf, &rs->rbuf[off], rsize);
		buf += rsize;
		left -= rsize;
		off += (int)rsize;
	}
	*got = len - left;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct rsock *rs = rs_lookup(socket);
	uint8_t *p = buf;
	size_t left = len;
	int ret = 0;

	if (!rs)
		return recv(socket, buf, len, flags);
	pthread_mutex_lock(&rs->lock);
	if (rs->type == SOCK_DGRAM) {
		ssize_t r = ds_recvfrom(rs, buf, len, flags, NULL, NULL);

		pthread_mutex_unlock(&rs->lock);
		return r;
	}
	if (rs->state & RS_OPENING) {
		ret = rs_finish_connect(rs, nonblocking(rs, flags));
		if (ret) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			pthread_mutex_unlock(&rs->lock);
			return ret;
		}
	}
	if (!(rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR))) {
		pthread_mutex_unlock(&rs->lock);
		return rs_err(ENOTCONN);
	}
	do {
		if (!have_rdata(rs)) {
			ret = rs_get_comp(rs, nonblocking(rs, flags), t_have_rdata);
			if (ret)
				break;
		}
		if (flags & MSG_PEEK) {
			size_t got;

			peek_copy(rs, p, left, &got);
			left -= got;
			break;
		}
		while (left && have_rdata(rs)) {
			uint32_t rsize = rs->rmsg[rs->rmsg_head].data, end;

			if (left < rsize) {
				rsize = (uint32_t)left;
				rs->rmsg[rs->rmsg_head].data -= rsize;
			} else {
				rs->rseq_no++;
				if (++rs->rmsg_head == rs->rq_size + 1)
					rs->rmsg_head = 0;
			}
			end = rs->rbuf_size - (uint32_t)rs->rbuf_offset;
			if (rsize > end) {
				memcpy(p, &rs->rbuf[rs->rbuf_offset], end);
				rs->rbuf_offset = 0;
				p += end;
				left -= end;
				rsize -= end;
				rs->rbuf_bytes_avail += (int)end;
			}
			memcpy(p, &rs->rbuf[rs->rbuf_offset], rsize);
			rs->rbuf_offset += (int)rsize;
			if (rs->rbuf_offset == (int)rs->rbuf_size)
				rs->rbuf_offset = 0;
			p += rsize;
			left -= rsize;
			rs->rbuf_bytes_avail += (int)rsize;
		}
	} while (left && (flags & MSG_WAITALL) && (rs->state & RS_READABLE));
	if (rs->cq)
		update_credits(rs);
	pthread_mutex_unlock(&rs->lock);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	struct rsock *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return recvfrom(socket, buf, len, flags, src_addr, addrlen);
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_lock(&rs->lock);
		ret = ds_recvfrom(rs, buf, len, flags, src_addr, addrlen);
		pthread_mutex_unlock(&rs->lock);
		return ret;
	}
	ret = rrecv(socket, buf, len, flags);
	if (ret > 0 && src_addr && addrlen)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rsock *rs = rs_lookup(socket);

	if (!rs)
		return recvmsg(socket, msg, flags);
	if (msg->msg_control && msg->msg_controllen)
		return rs_err(ENOTSUP);
	if (!msg->msg_iovlen)
		return 0;
	/* the first vector only, as rdma-core */
	return rrecvfrom(socket, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags,
			 msg->msg_name, msg->msg_name ? &msg->msg_namelen : NULL);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	if (!rs_lookup(socket))
		return read(socket, buf, count);
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	if (!rs_lookup(socket))
		return readv(socket, iov, iovcnt);
	if (iovcnt <= 0)
		return 0;
	return rrecv(socket, iov[0].iov_base, iov[0].iov_len, 0);
}

/* Copies len bytes from an iovec cursor. */
static void iov_copy(uint8_t *dst, const struct iovec **iov, size_t *off, size_t len)
{
	while (len) {
		size_t n = (*iov)->iov_len - *off;

		if (n > len) {
			memcpy(dst, (uint8_t *)(*iov)->iov_base + *off, len);
			*off += len;
			return;
		}
		memcpy(dst, (uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		(*iov)++;
		*off = 0;
	}
}

static int write_iomap(struct rsock *rs, struct rs_iomap_mr *m, struct ibv_sge *sgl, int nsge, int flags)
{
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)sizeof(struct rs_iomap);
	return post_write(rs, sgl, nsge, rs_msg(RS_OP_IOMAP_SGL, (uint32_t)m->index), true, flags,
			  rs->remote_iomap.addr + (uint64_t)m->index * sizeof(struct rs_iomap),
			  rs->remote_iomap.key);
}

/* Stages len bytes from the iovec cursor in the send ring (wrapping into a
 * second SGE) and gives the SGEs to post in out; the ring moves on. */
static void stage(struct rsock *rs, const struct iovec **iov, size_t *off, uint32_t len,
		  struct ibv_sge *out, int *nsge)
{
	uint32_t left_in_ring = sbuf_left(rs);

	out[0] = rs->ssgl[0];
	if (len <= left_in_ring) {
		iov_copy((uint8_t *)(uintptr_t)out[0].addr, iov, off, len);
		out[0].length = len;
		*nsge = 1;
		if (len < left_in_ring)
			rs->ssgl[0].addr += len;
		else
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
	} else {
		out[0].length = left_in_ring;
		iov_copy((uint8_t *)(uintptr_t)out[0].addr, iov, off, left_in_ring);
		out[1] = rs->ssgl[1];
		out[1].addr = (uintptr_t)rs->sbuf;
		out[1].length = len - left_in_ring;
		iov_copy(rs->sbuf, iov, off, out[1].length);
		*nsge = 2;
		rs->ssgl[0].addr = (uintptr_t)rs->sbuf + out[1].length;
	}
}

static int send_iomaps(struct rsock *rs, int flags)
{
	struct rs_iomap_mr *m;
	int ret = 0;

	for (m = rs->iomaps; m; m = m->next) {
		struct rs_iomap iom;
		struct iovec v = { .iov_base = &iom, .iov_len = sizeof(iom) };
		const struct iovec *cur = &v;
		size_t off = 0;
		int nsge;

		if (!m->queued)
			continue;
		if (!can_send(rs)) {
			ret = rs_get_comp(rs, nonblocking(rs, flags), t_can_send);
			if (ret)
				break;
			if (!(rs->state & RS_WRITABLE)) {
				ret = rs_err(ECONNRESET);
				break;
			}
		}
		iom.offset = m->offset;
		iom.sge.addr = (uintptr_t)m->mr->addr;
		iom.sge.length = (uint32_t)m->mr->length;
		iom.sge.key = m->mr->rkey;
		if (rs->swap_sgl) {
			iom.offset = bswap_64(iom.offset);
			iom.sge.addr = bswap_64(iom.sge.addr);
			iom.sge.length = bswap_32(iom.sge.length);
			iom.sge.key = bswap_32(iom.sge.key);
		}
		m->queued = false;
		if (rs->sq_inline >= sizeof(iom)) {
			struct ibv_sge s = { .addr = (uintptr_t)&iom, .length = sizeof(iom) };

			ret = write_iomap(rs, m, &s, 1, IBV_SEND_INLINE);
		} else {
			struct ibv_sge sg[2];

			stage(rs, &cur, &off, sizeof(iom), sg, &nsge);
			ret = write_iomap(rs, m, sg, nsge, 0);
		}
		if (ret) {
			ret = rs_err(ret);
			break;
		}
	}
	rs->iomap_pending = false;
	for (m = rs->iomaps; m; m = m->next)
		if (m->queued)
			rs->iomap_pending = true;
	return ret;
}

/* The stream send loop: rsend, rsendv and riowrite (iom != NULL). */
static ssize_t rs_sendv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
			bool direct, off_t offset)
{
	const struct iovec *cur = iov;
	size_t len = 0, left, off = 0;
	uint32_t olen = RS_OLAP_START_SIZE;
	volatile struct rs_iomap *iom = NULL;
	int i, ret = 0;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	left = len;
	while (cur < iov + iovcnt && cur->iov_len == 0)
		cur++;
	if (rs->state & RS_OPENING) {
		ret = rs_finish_connect(rs, nonblocking(rs, flags));
		if (ret) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			return ret;
		}
	}
	if (!(rs->state & RS_CONNECTED))
		return rs_err(rs->state & (RS_DISCONNECTED | RS_ERROR) ? ECONNRESET : ENOTCONN);
	if (rs->iomap_pending) {
		ret = send_iomaps(rs, flags);
		if (ret)
			return ret;
	}
	while (left) {
		uint32_t xfer;
		int nsge, sflags = 0;

		if (direct && (!iom || (uint64_t)offset >= iom->offset + iom->sge.length)) {
			iom = NULL;
			for (i = 0; i < rs->target_iomap_size; i++)
				if ((uint64_t)offset >= rs->target_iomap[i].offset &&
				    (uint64_t)offset < rs->target_iomap[i].offset +
						       rs->target_iomap[i].sge.length)
					iom = &rs->target_iomap[i];
			if (!iom) {
				if (left == len)
					ret = rs_err(EINVAL);
				break;
			}
		}
		if (!can_send(rs)) {
			ret = rs_get_comp(rs, nonblocking(rs, flags), t_can_send);
			if (ret)
				break;
			if (!(rs->state & RS_WRITABLE)) {
				ret = rs_err(ECONNRESET);
				break;
			}
		}
		if (olen < left) {
			xfer = olen;
			if (olen < RS_MAX_TRANSFER)
				olen <<= 1;
		} else {
			xfer = (uint32_t)left;
		}
		if (xfer > (uint32_t)rs->sbuf_bytes_avail)
			xfer = (uint32_t)rs->sbuf_bytes_avail;
		if (direct) {
			uint64_t room = iom->offset + iom->sge.length - (uint64_t)offset;

			if (xfer > room)
				xfer = (uint32_t)room;
		} else if (xfer > rs->target_sgl[rs->target_sge].length) {
			xfer = rs->target_sgl[rs->target_sge].length;
		}
		if (xfer <= rs->sq_inline && cur->iov_len - off >= xfer)
			sflags = IBV_SEND_INLINE;       /* straight from the caller's buffer */
		if (sflags) {
			struct ibv_sge s = { .addr = (uintptr_t)cur->iov_base + off, .length = xfer };

			off += xfer;
			if (off == cur->iov_len) {
				cur++;
				off = 0;
			}
			if (direct) {
				rs->sqe_avail--;
				rs->sbuf_bytes_avail -= (int)xfer;
				ret = post_write(rs, &s, 1, rs_msg(RS_OP_WRITE, xfer), false, sflags,
						 iom->sge.addr + (uint64_t)offset - iom->offset, iom->sge.key);
			} else {
				ret = write_data(rs, &s, 1, xfer, sflags);
			}
		} else {
			struct ibv_sge sg[2];

			stage(rs, &cur, &off, xfer, sg, &nsge);
			if (direct) {
				rs->sqe_avail--;
				rs->sbuf_bytes_avail -= (int)xfer;
				ret = post_write(rs, sg, nsge, rs_msg(RS_OP_WRITE, xfer), false, 0,
						 iom->sge.addr + (uint64_t)offset - iom->offset, iom->sge.key);
			} else {
				ret = write_data(rs, sg, nsge, xfer, 0);
			}
		}
		if (ret) {
			ret = rs_err(ret);
			break;
		}
		while (cur < iov + iovcnt && off == cur->iov_len) {
			cur++;
			off = 0;
		}
		left -= xfer;
		offset += xfer;
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct rsock *rs = rs_lookup(socket);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t ret;

	if (!rs)
		return send(socket, buf, len, flags);
	pthread_mutex_lock(&rs->lock);
	if (rs->type == SOCK_DGRAM)
		ret = ds_sendto(rs, buf, len, flags, NULL, 0);
	else
		ret = rs_sendv(rs, &v, 1, flags, false, 0);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct rsock *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return sendto(socket, buf, len, flags, dest_addr, addrlen);
	if (rs->type == SOCK_STREAM) {
		if (dest_addr || addrlen)
			return rs_err(EISCONN);
		return rsend(socket, buf, len, flags);
	}
	pthread_mutex_lock(&rs->lock);
	ret = ds_sendto(rs, buf, len, flags, dest_addr, addrlen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rsock *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return sendmsg(socket, msg, flags);
	if (msg->msg_control && msg->msg_controllen)
		return rs_err(ENOTSUP);
	if (rs->type == SOCK_DGRAM) {
		if (msg->msg_iovlen != 1)
			return rs_err(ENOTSUP);
		return rsendto(socket, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags,
			       msg->msg_name, msg->msg_namelen);
	}
	pthread_mutex_lock(&rs->lock);
	ret = rs_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags, false, 0);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	if (!rs_lookup(socket))
		return write(socket, buf, count);
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct rsock *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return writev(socket, iov, iovcnt);
	if (rs->type == SOCK_DGRAM)
		return iovcnt == 1 ? rsend(socket, iov[0].iov_base, iov[0].iov_len, 0) : rs_err(ENOTSUP);
	pthread_mutex_lock(&rs->lock);
	ret = rs_sendv(rs, iov, iovcnt, 0, false, 0);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* ---- rpoll / rselect ------------------------------------------------------------ */

/* What the program would see on rs now, after progress without waiting. */
static short rs_revents(struct rsock *rs, short events)
{
	short rev = 0;

	if (rs->type == SOCK_DGRAM)
		return (short)ds_poll_events(rs, events);
	if (rs->state == RS_LISTENING) {
		rs_listen_drain(rs);
		return rs->accept_q ? (events & POLLIN) : 0;
	}
	rs_progress(rs);
	if (rs->state & (RS_CONNECTED | RS_DISCONNECTED | RS_ERROR)) {
		if ((events & POLLIN) && t_have_rdata(rs))
			rev |= POLLIN;
		if ((events & POLLOUT) && can_send(rs))
			rev |= POLLOUT;
		/* the hang-up once the data before it are read: rstream's
		 * do_poll fails on POLLHUP even with POLLIN, and a peer's
		 * close may overtake its last data's rpoll here */
		if (!(rs->state & RS_CONNECTED) && !have_rdata(rs))
			rev |= rs->state == RS_DISCONNECTED ? POLLHUP : POLLERR;
	} else if (rs->state == RS_CONNECT_ERROR) {
		rev = (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	}
	return rev;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *w = NULL;
	struct rsock **rss = NULL;
	uint64_t deadline = timeout > 0 ? rs_now_us() + (uint64_t)timeout * 1000u : 0;
	nfds_t i;
	int ret = 0;
	bool any = false;

	if (!any_rsock())
		return poll(fds, nfds, timeout);
	rss = calloc(nfds ? nfds : 1, sizeof(*rss));
	w = calloc(nfds * 2 + 1, sizeof(*w));
	if (!rss || !w) {
		ret = rs_err(ENOMEM);
		goto out;
	}
	for (i = 0; i < nfds; i++) {
		rss[i] = rs_lookup(fds[i].fd);
		any |= rss[i] != NULL;
	}
	if (!any) {
		ret = poll(fds, nfds, timeout);
		goto out;
	}
	for (;;) {
		int cnt = 0, n = 0, wait_ms;

		/* the rsockets' state now; their CQs armed before the last look */
		for (i = 0; i < nfds; i++) {
			struct rsock *rs = rss[i];

			fds[i].revents = 0;
			if (!rs)
				continue;
			pthread_mutex_lock(&rs->lock);
			fds[i].revents = rs_revents(rs, fds[i].events);
			if (!fds[i].revents && !rs_arm(rs))
				fds[i].revents = rs_revents(rs, fds[i].events);
			pthread_mutex_unlock(&rs->lock);
			if (fds[i].revents)
				cnt++;
		}
		/* what to sleep on: the others' fds, the rsockets' channels */
		for (i = 0; i < nfds; i++) {
			struct rsock *rs = rss[i];

			if (!rs) {
				w[n].fd = fds[i].fd;
				w[n++].events = fds[i].events;
				continue;
			}
			pthread_mutex_lock(&rs->lock);
			if (rs->type == SOCK_DGRAM) {
				w[n].fd = ds_wait_fd(rs);
				w[n++].events = POLLIN;
			} else {
				n += rs_wait_fds(rs, &w[n]);
			}
			pthread_mutex_unlock(&rs->lock);
		}
		if (cnt) {
			wait_ms = 0;
		} else if (timeout < 0) {
			wait_ms = -1;
		} else if (timeout == 0) {
			wait_ms = 0;
		} else {
			uint64_t now = rs_now_us();

			wait_ms = now >= deadline ? 0 : (int)((deadline - now + 999) / 1000);
		}
		for (int k = 0; k < n; k++)
			w[k].revents = 0;
		if (poll(w, (nfds_t)n, wait_ms) < 0) {
			ret = -1;
			goto out;
		}
		/* the others' events; the rsockets' wakeups consumed */
		n = 0;
		for (i = 0; i < nfds; i++) {
			struct rsock *rs = rss[i];

			if (!rs) {
				fds[i].revents = w[n++].revents;
				if (fds[i].revents && !cnt)
					cnt = -1;
				continue;
			}
			pthread_mutex_lock(&rs->lock);
			if (rs->type == SOCK_DGRAM) {
				if (w[n++].revents)
					ds_wait_done(rs);
			} else {
				n += rs->cch ? 1 : 0;
				n += rs->ch ? 1 : 0;
				rs_take_cq_event(rs);
			}
			pthread_mutex_unlock(&rs->lock);
		}
		if (cnt || wait_ms == 0) {
			/* count again: the other fds' results are in, the rsockets' too */
			cnt = 0;
			for (i = 0; i < nfds; i++) {
				if (rss[i] && !fds[i].revents) {
					pthread_mutex_lock(&rss[i]->lock);
					fds[i].revents = rs_revents(rss[i], fds[i].events);
					pthread_mutex_unlock(&rss[i]->lock);
				}
				if (fds[i].revents)
					cnt++;
			}
			if (cnt || wait_ms == 0) {
				ret = cnt;
				goto out;
			}
		}
	}
out:
	/* POLLERR on a socket whose connect failed: errno says why (what
	 * SO_ERROR would), for the programs that perror() after rpoll, as
	 * rstream does: "Connection refused", not a stale EAGAIN */
	for (i = 0; ret > 0 && rss && i < nfds; i++)
		if (rss[i] && (fds[i].revents & POLLERR)) {
			pthread_mutex_lock(&rss[i]->lock);
			if (rss[i]->state == RS_CONNECT_ERROR && rss[i]->err)
				errno = rss[i]->err;
			pthread_mutex_unlock(&rss[i]->lock);
		}
	free(rss);
	free(w);
	return ret;
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int fd, n = 0, ret, tmo;

	if (!any_rsock())
		return select(nfds, readfds, writefds, exceptfds, timeout);
	fds = calloc(nfds > 0 ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return rs_err(ENOMEM);
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;
		bool in = false;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN, in = true;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT, in = true;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI, in = true;
		if (in) {
			fds[n].fd = fd;
			fds[n++].events = ev;
		}
	}
	tmo = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
	ret = rpoll(fds, (nfds_t)n, tmo);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	if (ret > 0) {
		int i;

		ret = 0;
		for (i = 0; i < n; i++) {
			if (readfds && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				FD_SET(fds[i].fd, readfds);
				ret++;
			}
			if (writefds && (fds[i].revents & (POLLOUT | POLLERR))) {
				FD_SET(fds[i].fd, writefds);
				ret++;
			}
			if (exceptfds && (fds[i].revents & POLLPRI)) {
				FD_SET(fds[i].fd, exceptfds);
				ret++;
			}
		}
	}
	free(fds);
	return ret;
}

/* ---- shutdown, close ------------------------------------------------------------ */

static int rs_shutdown_locked(struct rsock *rs, int how)
{
	uint32_t ctrl;
	int ret = 0;

	if (!(rs->state & RS_CONNECTED))
		goto out;
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs->state &= ~(RS_READABLE | RS_WRITABLE);
	} else if (how == SHUT_WR) {
		rs->state &= ~RS_WRITABLE;
		ctrl = (rs->state & RS_READABLE) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->state &= ~RS_READABLE;
		if (rs->state & RS_WRITABLE)
			return 0;
		ctrl = RS_CTRL_DISCONNECT;
	}
	if (!ctrl_avail(rs) && rs_get_comp(rs, false, t_ctrl))
		return -1;
	if ((rs->state & RS_CONNECTED) && ctrl_avail(rs)) {
		rs->ctrl_seqno++;
		ret = post_msg(rs, rs_msg(RS_OP_CTRL, ctrl));
		if (ret)
			ret = rs_err(ret);
	}
	if (rs->state & RS_CONNECTED)
		rs_get_comp(rs, false, t_all_sent);
out:
	if ((rs->state & RS_DISCONNECTED) && rs->id && rs->id->qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		/* flush, as rdma-core does: the receives end, rpoll wakes */
		ibv_modify_qp(rs->id->qp, &a, IBV_QP_STATE);
	}
	return ret;
}

int rshutdown(int socket, int how)
{
	struct rsock *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return shutdown(socket, how);
	if (rs->type == SOCK_DGRAM)
		return 0;
	pthread_mutex_lock(&rs->lock);
	ret = rs_shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rclose(int socket)
{
	struct rsock *rs = rs_lookup(socket), *a;

	if (!rs)
		return close(socket);
	if (rs->type == SOCK_STREAM) {
		pthread_mutex_lock(&rs->lock);
		if (rs->state & RS_CONNECTED)
			rs_shutdown_locked(rs, SHUT_RDWR);
		while ((a = rs->accept_q)) {
			rs->accept_q = a->accept_next;
			rs_table_clear(a->fd);
			rs_free(a);
		}
		pthread_mutex_unlock(&rs->lock);
	}
	rs_table_clear(socket);
	rs_free(rs);
	return 0;
}

/* ---- names, options, fcntl -------------------------------------------------------- */

static void copy_addr(struct sockaddr *dst, const struct sockaddr *src, socklen_t *len)
{
	socklen_t size = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_lookup(socket);

	if (!rs)
		return getpeername(socket, addr, addrlen);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->udp_sock, addr, addrlen);
	copy_addr(addr, rdma_get_peer_addr(rs->id), addrlen);
	return 0;
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_lookup(socket);

	if (!rs)
		return getsockname(socket, addr, addrlen);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->udp_sock, addr, addrlen);
	copy_addr(addr, rdma_get_local_addr(rs->id), addrlen);
	return 0;
}

static int opt_int(const void *v, socklen_t len)
{
	return v && len >= sizeof(int) ? *(const int *)v : 0;
}

int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsock *rs = rs_lookup(socket);
	uint64_t *opts = NULL;
	int ret = rs_err(ENOTSUP), on = 0;

	if (!rs) {
		if (level == SOL_RDMA)
			return rs_err(ENOTSOCK);
		return setsockopt(socket, level, optname, optval, optlen);
	}
	if (!optval || optlen < sizeof(int))
		return rs_err(EINVAL);
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    setsockopt(rs->udp_sock, level, optname, optval, optlen))
		return -1;
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		opts = &rs->so_opts;
		switch (optname) {
		case SO_REUSEADDR:
			if (rs->type == SOCK_STREAM)
				rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
						(void *)optval, sizeof(int));
			on = opt_int(optval, optlen);
			ret = 0;
			break;
		case SO_RCVBUF:
			if ((rs->type == SOCK_STREAM && !rs->rbuf) || (rs->type == SOCK_DGRAM && !rs->qps))
				rs->rbuf_size = (uint32_t)opt_int(optval, optlen) << 1;
			ret = 0;
			break;
		case SO_SNDBUF:
			if (!rs->sbuf && !rs->dsbuf)
				rs->sbuf_size = (uint32_t)opt_int(optval, optlen) << 1;
			if (rs->sbuf_size < RS_SNDLOWAT)
				rs->sbuf_size = RS_SNDLOWAT << 1;
			ret = 0;
			break;
		case SO_LINGER:
			on = optlen >= sizeof(struct linger) && !((const struct linger *)optval)->l_onoff;
			ret = 0;
			break;
		case SO_KEEPALIVE:
			/* recorded only: we send no keep-alives */
			on = opt_int(optval, optlen);
			if (on && !rs->keepalive_time)
				rs->keepalive_time = 7200;
			ret = 0;
			break;
		case SO_OOBINLINE:
			on = opt_int(optval, optlen);
			ret = 0;
			break;
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS) {
			uint8_t tos = (uint8_t)opt_int(optval, optlen);

			rs->ipv4_tos = opt_int(optval, optlen);
			ret = rs->type == SOCK_STREAM ?
			      rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1) : 0;
		}
		break;
	case IPPROTO_TCP:
		opts = &rs->tcp_opts;
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
		case TCP_CONGESTION:
			ret = 0;
			break;
		case TCP_KEEPIDLE:
			if (opt_int(optval, optlen) <= 0) {
				ret = rs_err(EINVAL);
				break;
			}
			rs->keepalive_time = (unsigned)opt_int(optval, optlen);
			ret = 0;
			break;
		case TCP_NODELAY:
			on = opt_int(optval, optlen);
			ret = 0;
			break;
		}
		break;
	case IPPROTO_IPV6:
		opts = &rs->ipv6_opts;
		if (optname == IPV6_V6ONLY) {
			if (rs->type == SOCK_STREAM)
				rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
						(void *)optval, sizeof(int));
			on = opt_int(optval, optlen);
			ret = 0;
		}
		break;
	case SOL_RDMA:
		if (rs->state >= RS_OPENING) {
			ret = rs_err(EINVAL);
			break;
		}
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)((uint32_t)opt_int(optval, optlen) > RS_QP_MAX_SIZE ?
						 RS_QP_MAX_SIZE : (uint32_t)opt_int(optval, optlen));
			ret = 0;
			break;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)((uint32_t)opt_int(optval, optlen) > RS_QP_MAX_SIZE ?
						 RS_QP_MAX_SIZE : (uint32_t)opt_int(optval, optlen));
			ret = 0;
			break;
		case RDMA_INLINE:
			rs->sq_inline = (uint16_t)((uint32_t)opt_int(optval, optlen) > RS_QP_MAX_SIZE ?
						   RS_QP_MAX_SIZE : (uint32_t)opt_int(optval, optlen));
			ret = 0;
			break;
		case RDMA_IOMAPSIZE:
			rs->target_iomap_size = (uint16_t)scale_to_value(
				(uint8_t)value_to_scale(opt_int(optval, optlen), 8), 8);
			ret = 0;
			break;
		case RDMA_ROUTE:
			ret = 0;        /* our path is the only one */
			break;
		}
		break;
	}
	if (!ret && opts) {
		if (on)
			*opts |= 1ull << optname;
		else
			*opts &= ~(1ull << optname);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

static void put_int(void *optval, socklen_t *optlen, int v)
{
	if (*optlen >= sizeof(int))
		*(int *)optval = v;
	*optlen = sizeof(int);
}

int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsock *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs) {
		if (level == SOL_RDMA)
			return rs_err(ENOTSOCK);
		return getsockopt(socket, level, optname, optval, optlen);
	}
	if (!optval || !optlen)
		return rs_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			put_int(optval, optlen, !!(rs->so_opts & (1ull << optname)));
			break;
		case SO_RCVBUF:
			put_int(optval, optlen, (int)rs->rbuf_size);
			break;
		case SO_SNDBUF:
			put_int(optval, optlen, (int)rs->sbuf_size);
			break;
		case SO_LINGER:
			if (*optlen >= sizeof(struct linger)) {
				((struct linger *)optval)->l_onoff = !(rs->so_opts & (1ull << optname));
				((struct linger *)optval)->l_linger = 0;
			}
			*optlen = sizeof(struct linger);
			break;
		case SO_ERROR:
			if (rs->type == SOCK_STREAM && (rs->state & RS_OPENING))
				rs_progress(rs);
			put_int(optval, optlen, rs->err);
			rs->err = 0;
			break;
		case SO_TYPE:
			put_int(optval, optlen, rs->type);
			break;
		default:
			ret = ENOTSUP;
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS)
			put_int(optval, optlen, rs->ipv4_tos);
		else
			ret = ENOTSUP;
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			put_int(optval, optlen, 1);
			break;
		case TCP_KEEPIDLE:
			put_int(optval, optlen, (int)rs->keepalive_time);
			break;
		case TCP_NODELAY:
			put_int(optval, optlen, !!(rs->tcp_opts & (1ull << optname)));
			break;
		case TCP_MAXSEG:
			put_int(optval, optlen, rs->id && rs->id->route.num_paths ?
				1 << (7 + rs->id->route.path_rec->mtu) : 2048);
			break;
		default:
			ret = ENOTSUP;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			put_int(optval, optlen, !!(rs->ipv6_opts & (1ull << optname)));
		else
			ret = ENOTSUP;
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			put_int(optval, optlen, rs->sq_size);
			break;
		case RDMA_RQSIZE:
			put_int(optval, optlen, rs->rq_size);
			break;
		case RDMA_INLINE:
			put_int(optval, optlen, rs->sq_inline);
			break;
		case RDMA_IOMAPSIZE:
			put_int(optval, optlen, rs->target_iomap_size);
			break;
		default:
			ret = ENOTSUP;
		}
		break;
	default:
		ret = ENOTSUP;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret ? rs_err(ret) : 0;
}

int rfcntl(int socket, int cmd, ...)
{
	struct rsock *rs = rs_lookup(socket);
	va_list ap;
	long arg;
	int ret = 0;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (!rs)
		return fcntl(socket, cmd, arg);
	pthread_mutex_lock(&rs->lock);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fs_flags;
		break;
	case F_SETFL:
		rs->fs_flags = (int)arg;
		break;
	case F_GETFD:
		ret = rs->fd_flags;
		break;
	case F_SETFD:
		rs->fd_flags = (int)arg;
		break;
	default:
		ret = rs_err(ENOTSUP);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* ---- iomaps --------------------------------------------------------------------- */

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsock *rs = rs_lookup(socket);
	struct rs_iomap_mr *m = NULL, **pp;
	int access = IBV_ACCESS_LOCAL_WRITE;
	uint32_t i;

	(void)flags;
	if (!rs || rs->type != SOCK_STREAM)
		return rs_err(EBADF);
	if (!rs->id->pd || (prot & ~(PROT_WRITE | PROT_NONE)))
		return rs_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (prot & PROT_WRITE) {
		if (!rs->remote_slots && rs->remote_iomap.length) {
			rs->remote_slots = calloc(rs->remote_iomap.length, sizeof(*rs->remote_slots));
			if (rs->remote_slots)
				for (i = 0; i < rs->remote_iomap.length; i++)
					rs->remote_slots[i].index = (int)i;
		}
		for (i = 0; rs->remote_slots && i < rs->remote_iomap.length; i++)
			if (!rs->remote_slots[i].mr) {
				m = &rs->remote_slots[i];
				break;
			}
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		m = calloc(1, sizeof(*m));
		if (m)
			m->index = -1;
	}
	if (!m) {
		pthread_mutex_unlock(&rs->lock);
		return rs_err(ENOMEM);
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len, access);
	if (!m->mr) {
		if (m->index < 0)
			free(m);
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->queued = m->index >= 0;
	if (m->queued)
		rs->iomap_pending = true;
	for (pp = &rs->iomaps; *pp; pp = &(*pp)->next)
		;
	m->next = NULL;
	*pp = m;
	pthread_mutex_unlock(&rs->lock);
	return offset;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct rsock *rs = rs_lookup(socket);
	struct rs_iomap_mr **pp, *m;

	if (!rs || rs->type != SOCK_STREAM)
		return rs_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	for (pp = &rs->iomaps; (m = *pp); pp = &m->next) {
		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*pp = m->next;
		ibv_dereg_mr(m->mr);
		m->mr = NULL;
		m->queued = false;
		if (m->index < 0)
			free(m);
		pthread_mutex_unlock(&rs->lock);
		return 0;
	}
	pthread_mutex_unlock(&rs->lock);
	return rs_err(EINVAL);
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsock *rs = rs_lookup(socket);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = count };
	ssize_t ret;

	if (!rs || rs->type != SOCK_STREAM)
		return (size_t)rs_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	ret = rs_sendv(rs, &v, 1, flags, true, offset);
	pthread_mutex_unlock(&rs->lock);
	return (size_t)ret;
}

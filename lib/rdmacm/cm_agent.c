/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cm_agent.c: the IB CM of our librdmacm (IBA Vol 1 chapter 12).
 *
 * Per device, one UD QP of this process is its "CM agent"
 * (include/unirdma/cm.h): the daemon sends its datagrams from QPN 1 and
 * steers to it the CM MADs that arrive at the vRNIC's QP1 for the comm IDs
 * and ServiceIDs that are ours.  One thread per process waits on the
 * agents' completion channels and on the retransmission timer, decodes
 * MADs (cm_mad.c) and runs each id's connection state machine
 * (enum cma_state in cma.h); events go to the ids' channels.
 *
 * Flows, as the kernel's cm.c + cma.c run them for user space over RoCE:
 *   active  REQ -> (REP) -> RTU, ESTABLISHED   | REJ -> REJECTED | timeout -> UNREACHABLE
 *   passive (REQ) CONNECT_REQUEST, accept: REP -> (RTU) ESTABLISHED
 *   either  DREQ -> (DREP) DISCONNECTED; (DREQ) -> DREP, DISCONNECTED
 *   UD      SIDR_REQ -> (SIDR_REP) ESTABLISHED / UNREACHABLE
 * Every function here runs with g_cma.lock held. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>

#include "cma.h"

#define AG_NRECV   64
#define AG_NSEND   128
#define AG_BUFSZ   (40 + CM_MAD_SIZE)     /* GRH room + MAD */

/* UNIRDMA_CM_DEBUG=1: agents and listens on stderr (tests wait for the
 * "listening" line); 2: every CM message too. */
int cm_debug;

#define DBG(...) do { if (cm_debug > 1) fprintf(stderr, "rdmacm: " __VA_ARGS__); } while (0)
#define LOG(...) do { if (cm_debug > 0) fprintf(stderr, "rdmacm: " __VA_ARGS__); } while (0)

static void *cm_thread(void *arg);

static int post_recv(struct cma_dev *d, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->buf + (size_t)i * AG_BUFSZ),
		.length = AG_BUFSZ,
		.lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(d->qp, &wr, &bad);
}

static void wake_thread(void)
{
	char b = 'w';

	if (g_cma.wake[1] >= 0 && write(g_cma.wake[1], &b, 1) != 1) {
		/* already awake */
	}
}

static int start_thread(void)
{
	pthread_t t;
	pthread_attr_t at;
	int ret;

	if (g_cma.thread_started)
		return 0;
	if (pipe2(g_cma.wake, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &at, cm_thread, NULL);
	pthread_attr_destroy(&at);
	if (ret) {
		close(g_cma.wake[0]);
		close(g_cma.wake[1]);
		g_cma.wake[0] = g_cma.wake[1] = -1;
		return -ret;
	}
	g_cma.thread_started = true;
	return 0;
}

int cm_agent_start(struct cma_dev *d)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	unsigned i;
	int ret, slot;

	if (d->agent_ok)
		return 0;
	if (!urd_cm_agent || !urd_cm_listen)
		return -ENOSYS;         /* not our libibverbs: no QP1 to share */
	ret = start_thread();
	if (ret)
		return ret;
	if (!d->pd && !(d->pd = ibv_alloc_pd(d->verbs)))
		return -ENOMEM;
	d->cch = ibv_create_comp_channel(d->verbs);
	if (!d->cch)
		return errno ? -errno : -ENOMEM;
	d->cq = ibv_create_cq(d->verbs, AG_NRECV + AG_NSEND, NULL, d->cch, 0);
	if (!d->cq) {
		ret = errno ? -errno : -ENOMEM;
		goto err_cch;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = d->cq;
	qa.recv_cq = d->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = AG_NSEND;
	qa.cap.max_recv_wr = AG_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	d->qp = ibv_create_qp(d->pd, &qa);
	if (!d->qp) {
		ret = errno ? -errno : -ENOMEM;
		goto err_cq;
	}
	slot = urd_cm_agent(d->qp);
	if (slot < 0) {
		ret = slot;
		goto err_qp;
	}
	d->slot = slot;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = CMA_GSI_QKEY;
	ret = ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (!ret) {
		a.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(d->qp, &a, IBV_QP_STATE);
	}
	if (!ret) {
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		ret = ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (ret) {
		ret = -ret;
		goto err_qp;
	}
	d->buf = calloc(AG_NRECV + AG_NSEND, AG_BUFSZ);
	if (!d->buf) {
		ret = -ENOMEM;
		goto err_qp;
	}
	d->mr = ibv_reg_mr(d->pd, d->buf, (size_t)(AG_NRECV + AG_NSEND) * AG_BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr) {
		ret = errno ? -errno : -ENOMEM;
		goto err_buf;
	}
	for (i = 0; i < AG_NRECV; i++)
		if ((ret = post_recv(d, i))) {
			ret = -ret;
			goto err_mr;
		}
	if ((ret = ibv_req_notify_cq(d->cq, 0))) {
		ret = -ret;
		goto err_mr;
	}
	d->next_n = cma_random() & 0xffff;
	g_cma.agent_pid = getpid();
	d->agent_ok = true;
	LOG("agent on %s: slot %d qpn %u\n", ibv_get_device_name(d->verbs->device), slot, d->qp->qp_num);
	wake_thread();
	return 0;
err_mr:
	ibv_dereg_mr(d->mr);
	d->mr = NULL;
err_buf:
	free(d->buf);
	d->buf = NULL;
err_qp:
	ibv_destroy_qp(d->qp);
	d->qp = NULL;
err_cq:
	ibv_destroy_cq(d->cq);
	d->cq = NULL;
err_cch:
	ibv_destroy_comp_channel(d->cch);
	d->cch = NULL;
	return ret;
}

uint32_t cm_new_comm_id(struct cma_dev *d)
{
	d->next_n = (d->next_n + 1) & 0xffffff;
	if (!d->next_n)
		d->next_n = 1;
	return ((uint32_t)d->slot << 24) | d->next_n;
}

static struct ibv_ah *ah_for(struct cma_dev *d, const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa;
	struct cma_ah *a;

	for (a = d->ahs; a; a = a->next)
		if (!memcmp(&a->dgid, dgid, sizeof(*dgid)))
			return a->ah;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = *dgid;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = CMA_HOP_LIMIT;
	aa.port_num = 1;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->ah = ibv_create_ah(d->pd, &aa);
	if (!a->ah) {
		free(a);
		return NULL;
	}
	a->dgid = *dgid;
	a->next = d->ahs;
	d->ahs = a;
	return a->ah;
}

static int send_raw(struct cma_dev *d, const union ibv_gid *dgid, const uint8_t *mad)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_ah *ah;
	uint8_t *slot;
	int ret;

	if (!d || !d->agent_ok)
		return -ENOTCONN;
	ah = ah_for(d, dgid);
	if (!ah)
		return errno ? -errno : -ENOMEM;
	slot = d->buf + (size_t)(AG_NRECV + d->send_idx++ % AG_NSEND) * AG_BUFSZ;
	memcpy(slot, mad, CM_MAD_SIZE);
	sge.addr = (uintptr_t)slot;
	sge.length = CM_MAD_SIZE;
	sge.lkey = d->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = ~0ull;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = CMA_GSI_QKEY;
	ret = ibv_post_send(d->qp, &wr, &bad);
	if (ret)
		return -ret;
	d->sends_out++;
	return 0;
}

/* Encodes and sends m; save: keep the MAD in that id for retransmission
 * and for answering duplicates. */
int cm_send(struct cma_dev *d, const union ibv_gid *dgid, struct cm_msg *m, struct cma_id *save)
{
	uint8_t mad[CM_MAD_SIZE];
	int ret;

	if (!m->hdr.tid)
		m->hdr.tid = ((uint64_t)cma_random() << 32) | cma_random();
	ret = cm_mad_encode(m, mad);
	if (ret)
		return ret;
	if (save) {
		memcpy(save->mad, mad, sizeof(mad));
		save->has_mad = true;
	}
	DBG("send %s\n", cm_attr_name(m->hdr.attr_id));
	return send_raw(d, dgid, mad);
}

void cm_arm(struct cma_id *c, uint16_t attr, int max_tries, uint32_t first_ms)
{
	c->rtx_attr = attr;
	c->tries = 0;
	c->max_tries = max_tries;
	c->tmo_ms = first_ms;
	c->deadline = cma_now_ms() + first_ms;
	wake_thread();
}

void cm_disarm(struct cma_id *c)
{
	c->rtx_attr = 0;
	c->deadline = 0;
}

void cm_send_rej(struct cma_dev *d, const union ibv_gid *dgid, uint32_t local, uint32_t remote,
		 uint8_t msg_ref, uint16_t reason, const void *pdata, size_t len)
{
	struct cm_msg m;

	if (!d)
		return;
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_REJ;
	m.rej.local_comm_id = local;
	m.rej.remote_comm_id = remote;
	m.rej.msg_rejected = msg_ref;
	m.rej.reason = reason;
	if (pdata && len)
		memcpy(m.rej.pdata, pdata, len > CM_REJ_PDATA ? CM_REJ_PDATA : len);
	cm_send(d, dgid, &m, NULL);
}

/* The kernel cma's header in front of the user's private data of a REQ or
 * SIDR_REQ: version 0, IP version in the high nibble, source port, then the
 * source and destination addresses (IPv4 in the last 4 bytes of 16). */
static void put_cma_hdr(struct cma_id *c, uint8_t *p)
{
	const struct sockaddr_in *src = &c->id.route.addr.src_sin;
	const struct sockaddr_in *dst = &c->id.route.addr.dst_sin;
	uint16_t port = htons(c->port);

	memset(p, 0, CMA_HDR_LEN);
	p[0] = 0x00;
	p[1] = 0x40;
	memcpy(p + 2, &port, 2);
	memcpy(p + 4 + 12, &src->sin_addr.s_addr, 4);
	memcpy(p + 20 + 12, &dst->sin_addr.s_addr, 4);
}

static uint64_t service_id(struct cma_id *c, uint16_t port)
{
	return ((uint64_t)c->id.ps << 16) | port;
}

int cm_send_req(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_msg m;
	struct cm_req *r = &m.req;
	struct rdma_ib_addr *ib = &c->id.route.addr.addr.ibaddr;
	int ret;

	if (p && p->private_data_len > CM_REQ_PDATA - CMA_HDR_LEN)
		return -EINVAL;
	if (p && p->private_data_len && !p->private_data)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	c->local_comm_id = cm_new_comm_id(c->dev);
	c->sq_psn = cma_random() & 0xffffff;
	c->passive = false;
	m.hdr.attr_id = CM_ATTR_REQ;
	r->local_comm_id = c->local_comm_id;
	r->service_id = service_id(c, ntohs(c->id.route.addr.dst_sin.sin_port));
	r->local_ca_guid = c->dev->guid;
	r->local_qkey = 0;
	r->local_qpn = c->id.qp ? c->id.qp->qp_num : (p ? p->qp_num : 0);
	r->responder_resources = c->resp_res;
	r->initiator_depth = c->init_depth;
	r->remote_cm_response_timeout = CMA_CM_TIMEOUT;
	r->transport_type = c->id.qp_type == IBV_QPT_UC ? 1 : 0;
	r->flow_control = c->flow_control;
	r->starting_psn = c->sq_psn;
	r->local_cm_response_timeout = CMA_CM_TIMEOUT;
	r->retry_count = c->retry_cnt;
	r->pkey = 0xffff;
	r->path_mtu = (uint8_t)c->mtu;
	r->rnr_retry_count = c->rnr_retry;
	r->max_cm_retries = CMA_MAX_CM_RETRY;
	r->srq = c->id.qp ? (c->id.qp->srq != NULL) : c->srq_flag;
	r->primary.local_lid = 0xffff;
	r->primary.remote_lid = 0xffff;
	memcpy(r->primary.local_gid, ib->sgid.raw, 16);
	memcpy(r->primary.remote_gid, ib->dgid.raw, 16);
	r->primary.packet_rate = c->path.rate;
	r->primary.traffic_class = c->tos;
	r->primary.hop_limit = CMA_HOP_LIMIT;
	r->primary.sl = 0;
	r->primary.subnet_local = 0;
	r->primary.local_ack_timeout = (uint8_t)(c->ack_timeout_set ? c->ack_timeout
						 : (c->path.packet_life_time + 1) & 0x1f);
	put_cma_hdr(c, r->pdata);
	if (p && p->private_data_len)
		memcpy(r->pdata + CMA_HDR_LEN, p->private_data, p->private_data_len);
	ret = cm_send(c->dev, &ib->dgid, &m, c);
	if (ret)
		return ret;
	c->state = CS_REQ_SENT;
	/* the kernel waits 4.3 s (CM response timeout 20) per try, 15 retries;
	 * the first tries come sooner, the total stays near the kernel's */
	cm_arm(c, CM_ATTR_REQ, CMA_MAX_CM_RETRY, 500);
	return 0;
}

int cm_send_rep(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_msg m;
	struct cm_rep *r = &m.rep;
	int ret;

	if (p && p->private_data_len > CM_REP_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_REP;
	r->local_comm_id = c->local_comm_id;
	r->remote_comm_id = c->remote_comm_id;
	r->local_qkey = 0;
	r->local_qpn = c->id.qp ? c->id.qp->qp_num : (p ? p->qp_num : 0);
	r->starting_psn = c->sq_psn;
	r->responder_resources = c->resp_res;
	r->initiator_depth = c->init_depth;
	r->target_ack_delay = 0;
	r->failover_accepted = 0;
	r->flow_control = c->flow_control;
	r->rnr_retry_count = p ? (p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count) : 7;
	r->srq = c->id.qp ? (c->id.qp->srq != NULL) : c->srq_flag;
	r->local_ca_guid = c->dev->guid;
	if (p && p->private_data && p->private_data_len)
		memcpy(r->pdata, p->private_data, p->private_data_len);
	ret = cm_send(c->dev, &c->id.route.addr.addr.ibaddr.dgid, &m, c);
	if (ret)
		return ret;
	c->state = CS_REP_SENT;
	cm_arm(c, CM_ATTR_REP, CMA_MAX_CM_RETRY, 500);
	return 0;
}

int cm_send_rtu(struct cma_id *c)
{
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_RTU;
	m.rtu.local_comm_id = c->local_comm_id;
	m.rtu.remote_comm_id = c->remote_comm_id;
	return cm_send(c->dev, &c->id.route.addr.addr.ibaddr.dgid, &m, NULL);
}

int cm_send_dreq(struct cma_id *c)
{
	struct cm_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_DREQ;
	m.dreq.local_comm_id = c->local_comm_id;
	m.dreq.remote_comm_id = c->remote_comm_id;
	m.dreq.remote_qpn = c->remote_qpn;
	ret = cm_send(c->dev, &c->id.route.addr.addr.ibaddr.dgid, &m, c);
	if (!ret)
		cm_arm(c, CM_ATTR_DREQ, 4, 500);   /* then give up: DISCONNECTED, -ETIMEDOUT */
	return ret;
}

static void send_drep(struct cma_dev *d, const union ibv_gid *dgid, uint32_t local, uint32_t remote)
{
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_DREP;
	m.drep.local_comm_id = local;
	m.drep.remote_comm_id = remote;
	cm_send(d, dgid, &m, NULL);
}

int cm_send_sidr_req(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_msg m;
	int ret;

	if (p && p->private_data_len > CM_SIDR_REQ_PDATA - CMA_HDR_LEN)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	c->local_comm_id = cm_new_comm_id(c->dev);
	c->passive = false;
	m.hdr.attr_id = CM_ATTR_SIDR_REQ;
	m.sidr_req.request_id = c->local_comm_id;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = service_id(c, ntohs(c->id.route.addr.dst_sin.sin_port));
	put_cma_hdr(c, m.sidr_req.pdata);
	if (p && p->private_data && p->private_data_len)
		memcpy(m.sidr_req.pdata + CMA_HDR_LEN, p->private_data, p->private_data_len);
	ret = cm_send(c->dev, &c->id.route.addr.addr.ibaddr.dgid, &m, c);
	if (ret)
		return ret;
	c->state = CS_SIDR_REQ_SENT;
	cm_arm(c, CM_ATTR_SIDR_REQ, CMA_MAX_CM_RETRY, 500);
	return 0;
}

static int sidr_rep(struct cma_dev *d, const union ibv_gid *dgid, uint32_t req_id, uint64_t sid,
		    uint8_t status, uint32_t qpn, const void *pdata, size_t len, struct cma_id *save)
{
	struct cm_msg m;

	if (len > CM_SIDR_REP_PDATA)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_SIDR_REP;
	m.sidr_rep.request_id = req_id;
	m.sidr_rep.status = status;
	m.sidr_rep.qpn = status == CM_SIDR_SUCCESS ? qpn : 0;
	m.sidr_rep.service_id = sid;
	m.sidr_rep.qkey = status == CM_SIDR_SUCCESS ? RDMA_UDP_QKEY : 0;
	if (pdata && len)
		memcpy(m.sidr_rep.pdata, pdata, len);
	return cm_send(d, dgid, &m, save);
}

int cm_send_sidr_rep(struct cma_id *c, uint8_t status, uint32_t qpn, const void *pdata, size_t len)
{
	return sidr_rep(c->dev, &c->id.route.addr.addr.ibaddr.dgid, c->remote_comm_id,
			service_id(c, c->port), status, qpn, pdata, len, c);
}

/* ---- receiving ------------------------------------------------------------ */

static struct cma_id *find_local(struct cma_dev *d, uint32_t local_comm_id)
{
	struct cma_id *c;

	if (!local_comm_id)
		return NULL;
	for (c = g_cma.ids; c; c = c->next_all)
		if (c->dev == d && c->local_comm_id == local_comm_id && c->state != CS_IDLE)
			return c;
	return NULL;
}

static struct cma_id *find_listener(struct cma_dev *d, uint64_t sid, uint32_t dst_ip)
{
	struct cma_id *c;
	int di = (int)(d - g_cma.devs);

	for (c = g_cma.ids; c; c = c->next_all) {
		if (c->state != CS_LISTEN || !(c->listen_devs & (1ull << di)))
			continue;
		if (service_id(c, c->port) != sid)
			continue;
		if (c->src_ip && dst_ip && c->src_ip != dst_ip)
			continue;
		return c;
	}
	return NULL;
}

static void queue_pdata(struct cma_event *e, const uint8_t *p, size_t len, bool ud)
{
	memcpy(e->pdata, p, len);
	if (ud) {
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = (uint8_t)len;
	} else {
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
}

/* A new id for a connection request on listener l (REQ or SIDR_REQ). */
static struct cma_id *new_child(struct cma_id *l, struct cma_dev *d, const union ibv_gid *peer,
				const uint8_t *hdr)
{
	struct cma_id *c;
	uint32_t sip, dip;
	uint16_t sport;

	c = cma_id_alloc(l->id.channel, l->id.context, l->id.ps, l->id.qp_type);
	if (!c)
		return NULL;
	memcpy(&sport, hdr + 2, 2);
	memcpy(&sip, hdr + 4 + 12, 4);
	memcpy(&dip, hdr + 20 + 12, 4);
	if (!dip)
		dip = d->ip;
	cma_set_dev(c, d);
	c->passive = true;
	c->listen = l;
	c->sync = false;
	c->port = l->port;
	c->src_ip = dip;
	c->tos = l->tos;
	c->id.route.addr.src_sin.sin_family = AF_INET;
	c->id.route.addr.src_sin.sin_addr.s_addr = dip;
	c->id.route.addr.src_sin.sin_port = htons(l->port);
	c->id.route.addr.dst_sin.sin_family = AF_INET;
	c->id.route.addr.dst_sin.sin_addr.s_addr = sip;
	c->id.route.addr.dst_sin.sin_port = sport;
	cma_set_ibaddr(c, peer);
	l->pending++;
	return c;
}

static bool hdr_ok(const uint8_t *p)
{
	return p[0] == 0 && (p[1] >> 4) == 4;
}

/* A REQ for a ServiceID nobody listens on is held a moment before it is
 * rejected: programs that agree on "now listen, now connect" over another
 * channel (perftest -R's second connection, over its first one) race their
 * peer's rdma_listen by microseconds, and a REJ there is final.  A CM may
 * answer late (the requester waits its CM response timeout, 4.3 s, before
 * it even retransmits), so holding 200 ms breaks nothing, and a REQ nobody
 * ever listens for is still rejected within 0.2 s. */
#define HOLD_MAX 16
#define HOLD_MS  200

struct held_req {
	struct cma_dev *d;              /* NULL: free */
	union ibv_gid peer;
	uint64_t deadline;
	struct cm_msg m;
};

static struct held_req held[HOLD_MAX];

static void on_req(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m);

/* true: m is held (or already was: a retransmission) */
static bool hold_req(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	struct held_req *free_slot = NULL;
	int i;

	for (i = 0; i < HOLD_MAX; i++) {
		if (!held[i].d) {
			if (!free_slot)
				free_slot = &held[i];
			continue;
		}
		if (held[i].d == d && held[i].m.req.local_comm_id == m->req.local_comm_id &&
		    !memcmp(&held[i].peer, peer, sizeof(*peer)))
			return held[i].deadline > cma_now_ms();
	}
	if (!free_slot)
		return false;
	free_slot->d = d;
	free_slot->peer = *peer;
	free_slot->m = *m;
	free_slot->deadline = cma_now_ms() + HOLD_MS;
	DBG("REQ for service 0x%llx: nobody listens yet, held\n", (unsigned long long)m->req.service_id);
	wake_thread();
	return true;
}

/* Held REQs that a new listener can take now, or whose time is up (then
 * on_req rejects them); returns the ms to the next deadline, -1: none. */
static int run_held(bool listened)
{
	uint64_t now = cma_now_ms(), next = 0;
	int i;

	for (i = 0; i < HOLD_MAX; i++) {
		struct held_req h = held[i];

		if (!h.d)
			continue;
		if (listened && find_listener(h.d, h.m.req.service_id, 0)) {
			held[i].d = NULL;
			on_req(h.d, &h.peer, &h.m);
			continue;
		}
		if (h.deadline <= now) {
			held[i].d = NULL;
			DBG("REQ for service 0x%llx: nobody listens\n", (unsigned long long)h.m.req.service_id);
			cm_send_rej(h.d, &h.peer, 0, h.m.req.local_comm_id, CM_MSG_REQ,
				    CM_REJ_INVALID_SERVICE_ID, NULL, 0);
			continue;
		}
		if (!next || h.deadline < next)
			next = h.deadline;
	}
	return next ? (int)(next - now) : -1;
}

void cm_listen_added(void)
{
	run_held(true);
}

static void on_req(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	const struct cm_req *r = &m->req;
	struct cma_id *c, *l;
	struct cma_event *e;
	uint32_t dip;

	for (c = g_cma.ids; c; c = c->next_all)
		if (c->dev == d && c->passive && c->remote_comm_id == r->local_comm_id &&
		    !memcmp(&c->id.route.addr.addr.ibaddr.dgid, peer, sizeof(*peer)) && c->state != CS_IDLE) {
			/* a retransmitted REQ: our REP was lost */
			if ((c->state == CS_REP_SENT || c->state == CS_ESTABLISHED) && c->has_mad)
				send_raw(d, peer, c->mad);
			return;
		}
	if (!hdr_ok(r->pdata)) {
		cm_send_rej(d, peer, 0, r->local_comm_id, CM_MSG_REQ, CM_REJ_INVALID_SERVICE_ID, NULL, 0);
		return;
	}
	memcpy(&dip, r->pdata + 20 + 12, 4);
	l = find_listener(d, r->service_id, dip);
	if (!l) {
		if (hold_req(d, peer, m))
			return;
		DBG("REQ for service 0x%llx: nobody listens\n", (unsigned long long)r->service_id);
		cm_send_rej(d, peer, 0, r->local_comm_id, CM_MSG_REQ, CM_REJ_INVALID_SERVICE_ID, NULL, 0);
		return;
	}
	if (l->pending >= l->backlog) {
		cm_send_rej(d, peer, 0, r->local_comm_id, CM_MSG_REQ, CM_REJ_NO_RESOURCES, NULL, 0);
		return;
	}
	c = new_child(l, d, peer, r->pdata);
	if (!c)
		return;
	c->local_comm_id = cm_new_comm_id(d);
	c->remote_comm_id = r->local_comm_id;
	c->remote_qpn = r->local_qpn;
	c->rq_psn = r->starting_psn;
	/* the passive side's view: its responder resources are the peer's depth */
	c->resp_res = r->initiator_depth;
	c->init_depth = r->responder_resources;
	c->retry_cnt = r->retry_count;
	c->rnr_retry = r->rnr_retry_count;
	c->flow_control = r->flow_control;
	c->srq_flag = r->srq;
	if (!l->ack_timeout_set && r->primary.local_ack_timeout) {
		c->ack_timeout = r->primary.local_ack_timeout;
		c->ack_timeout_set = true;
	} else {
		c->ack_timeout = l->ack_timeout;
		c->ack_timeout_set = l->ack_timeout_set;
	}
	cma_fill_path(c, (enum ibv_mtu)(r->path_mtu ? r->path_mtu : d->mtu));
	c->path.traffic_class = r->primary.traffic_class;
	c->state = CS_REQ_RCVD;
	e = cma_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e)
		return;
	e->ev.listen_id = &l->id;
	queue_pdata(e, r->pdata + CMA_HDR_LEN, CM_REQ_PDATA - CMA_HDR_LEN, false);
	e->ev.param.conn.responder_resources = r->initiator_depth;
	e->ev.param.conn.initiator_depth = r->responder_resources;
	e->ev.param.conn.flow_control = r->flow_control;
	e->ev.param.conn.retry_count = r->retry_count;
	e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
	e->ev.param.conn.srq = r->srq;
	e->ev.param.conn.qp_num = r->local_qpn;
	cma_queue(l, e);
}

static void on_rep(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	const struct cm_rep *r = &m->rep;
	struct cma_id *c = find_local(d, r->remote_comm_id);
	struct cma_event *e;
	int ret;

	if (!c) {
		cm_send_rej(d, peer, 0, r->local_comm_id, CM_MSG_REP, CM_REJ_INVALID_COMM_ID, NULL, 0);
		return;
	}
	if (c->state == CS_ESTABLISHED && c->remote_comm_id == r->local_comm_id) {
		cm_send_rtu(c);         /* our RTU was lost */
		return;
	}
	if (c->state != CS_REQ_SENT)
		return;
	cm_disarm(c);
	c->remote_comm_id = r->local_comm_id;
	c->remote_qpn = r->local_qpn;
	c->rq_psn = r->starting_psn;
	c->resp_res = r->initiator_depth < c->resp_res ? r->initiator_depth : c->resp_res;
	c->init_depth = r->responder_resources < c->init_depth ? r->responder_resources : c->init_depth;
	c->rnr_retry = r->rnr_retry_count;
	e = cma_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (e) {
		queue_pdata(e, r->pdata, CM_REP_PDATA, false);
		e->ev.param.conn.responder_resources = r->responder_resources;
		e->ev.param.conn.initiator_depth = r->initiator_depth;
		e->ev.param.conn.flow_control = r->flow_control;
		e->ev.param.conn.rnr_retry_count = r->rnr_retry_count;
		e->ev.param.conn.srq = r->srq;
		e->ev.param.conn.qp_num = r->local_qpn;
	}
	if (!c->id.qp) {
		c->state = CS_REP_RCVD;
		if (e)
			e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
	} else if ((ret = cma_qp_rtr_rts(c))) {
		cm_send_rej(d, peer, c->local_comm_id, c->remote_comm_id, CM_MSG_REP,
			    CM_REJ_CONSUMER_DEFINED, NULL, 0);
		c->state = CS_ERROR;
		if (e) {
			e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
			e->ev.status = ret;
		}
	} else {
		cm_send_rtu(c);
		c->state = CS_ESTABLISHED;
	}
	cma_queue(c, e);
}

static void on_rtu(struct cma_dev *d, const struct cm_msg *m)
{
	struct cma_id *c = find_local(d, m->rtu.remote_comm_id);

	if (!c || c->state != CS_REP_SENT)
		return;
	cm_disarm(c);
	c->state = CS_ESTABLISHED;
	cma_queue(c, cma_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0));
}

static void on_rej(struct cma_dev *d, const struct cm_msg *m)
{
	const struct cm_rej *r = &m->rej;
	struct cma_id *c = find_local(d, r->remote_comm_id);
	struct cma_event *e;

	if (!c)
		return;
	if (c->state != CS_REQ_SENT && c->state != CS_REP_SENT && c->state != CS_REP_RCVD)
		return;
	DBG("REJ reason %u\n", r->reason);
	cm_disarm(c);
	c->state = CS_ERROR;            /* rdma_get_cm_event moves the QP to ERR */
	e = cma_event_new(c, RDMA_CM_EVENT_REJECTED, r->reason);
	if (e)
		queue_pdata(e, r->pdata, CM_REJ_PDATA, false);
	cma_queue(c, e);
}

static void on_mra(struct cma_dev *d, const struct cm_msg *m)
{
	struct cma_id *c = find_local(d, m->mra.remote_comm_id);
	uint64_t ms;

	if (!c || !c->rtx_attr)
		return;
	/* the peer needs service_timeout longer: 4.096 us << t, plus our own */
	ms = ((4096ull << (m->mra.service_timeout & 0x1f)) / 1000000ull) + c->tmo_ms;
	c->deadline = cma_now_ms() + ms;
}

/* The connection is over: DISCONNECTED for the application, once. */
static void disconnected(struct cma_id *c)
{
	c->state = CS_DISCONNECTED;
	if (!c->disc_queued) {
		c->disc_queued = true;
		cma_queue(c, cma_event_new(c, RDMA_CM_EVENT_DISCONNECTED, 0));
	}
}

static void on_dreq(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	const struct cm_dreq *r = &m->dreq;
	struct cma_id *c = find_local(d, r->remote_comm_id);

	if (!c) {
		/* already gone (time wait): answer so the peer need not wait */
		send_drep(d, peer, r->remote_comm_id, r->local_comm_id);
		return;
	}
	switch (c->state) {
	case CS_ESTABLISHED:
	case CS_REP_SENT:
	case CS_REP_RCVD:
	case CS_DREQ_SENT:
		/* the QP is left alone, as rdma-core does: the application
		 * may have destroyed it already (perftest calls
		 * ibv_destroy_qp itself); rdma_disconnect moves it to ERR.
		 * In DREQ_SENT both sides disconnect: answer, and stop
		 * waiting for the DREP to ours, as the kernel's CM does
		 * (cm_dreq_handler cancels the DREQ in DREQ_SENT): the peer
		 * may be gone by the time our DREQ reaches it */
		cm_disarm(c);
		send_drep(d, peer, c->local_comm_id, c->remote_comm_id);
		disconnected(c);
		break;
	case CS_DISCONNECTED:   /* our DREP was lost */
		send_drep(d, peer, c->local_comm_id, c->remote_comm_id);
		break;
	default:
		send_drep(d, peer, r->remote_comm_id, r->local_comm_id);
		break;
	}
}

static void on_drep(struct cma_dev *d, const struct cm_msg *m)
{
	struct cma_id *c = find_local(d, m->drep.remote_comm_id);

	if (!c || c->state != CS_DREQ_SENT)
		return;
	cm_disarm(c);
	disconnected(c);
}

static void on_sidr_req(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	const struct cm_sidr_req *r = &m->sidr_req;
	struct cma_id *c, *l;
	struct cma_event *e;
	uint32_t dip;

	for (c = g_cma.ids; c; c = c->next_all)
		if (c->dev == d && c->passive && c->remote_comm_id == r->request_id &&
		    !memcmp(&c->id.route.addr.addr.ibaddr.dgid, peer, sizeof(*peer)) &&
		    (c->state == CS_SIDR_RCVD || c->state == CS_UD_CONNECTED)) {
			if (c->state == CS_UD_CONNECTED && c->has_mad)
				send_raw(d, peer, c->mad);
			return;
		}
	memcpy(&dip, r->pdata + 20 + 12, 4);
	l = hdr_ok(r->pdata) ? find_listener(d, r->service_id, dip) : NULL;
	if (!l) {
		sidr_rep(d, peer, r->request_id, r->service_id, CM_SIDR_UNSUPPORTED, 0, NULL, 0, NULL);
		return;
	}
	if (l->pending >= l->backlog) {
		sidr_rep(d, peer, r->request_id, r->service_id, CM_SIDR_REJECT, 0, NULL, 0, NULL);
		return;
	}
	c = new_child(l, d, peer, r->pdata);
	if (!c)
		return;
	c->remote_comm_id = r->request_id;
	cma_fill_path(c, d->mtu);
	c->state = CS_SIDR_RCVD;
	e = cma_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e)
		return;
	e->ev.listen_id = &l->id;
	queue_pdata(e, r->pdata + CMA_HDR_LEN, CM_SIDR_REQ_PDATA - CMA_HDR_LEN, true);
	cm_fill_ud_ah(c, &e->ev.param.ud.ah_attr, peer);
	cma_queue(l, e);
}

static void on_sidr_rep(struct cma_dev *d, const union ibv_gid *peer, const struct cm_msg *m)
{
	const struct cm_sidr_rep *r = &m->sidr_rep;
	struct cma_id *c = find_local(d, r->request_id);
	struct cma_event *e;

	if (!c || c->state != CS_SIDR_REQ_SENT)
		return;
	cm_disarm(c);
	if (r->status != CM_SIDR_SUCCESS) {
		c->state = CS_ERROR;
		e = cma_event_new(c, RDMA_CM_EVENT_UNREACHABLE, r->status);
		if (e)
			queue_pdata(e, r->pdata, CM_SIDR_REP_PDATA, true);
		cma_queue(c, e);
		return;
	}
	c->state = CS_UD_CONNECTED;
	c->remote_qpn = r->qpn;
	e = cma_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!e)
		return;
	queue_pdata(e, r->pdata, CM_SIDR_REP_PDATA, true);
	cm_fill_ud_ah(c, &e->ev.param.ud.ah_attr, peer);
	e->ev.param.ud.qp_num = r->qpn;
	e->ev.param.ud.qkey = r->qkey;
	cma_queue(c, e);
}

static void on_mad(struct cma_dev *d, const uint8_t *buf, uint32_t len)
{
	struct cm_msg m;
	union ibv_gid peer;
	uint32_t sip;

	if (len < 40 + CM_MAD_SIZE || cm_mad_decode(buf + 40, len - 40, &m))
		return;
	memcpy(&sip, buf + 32, 4);      /* RoCEv2/IPv4: the IPv4 header ends the GRH room */
	cma_gid_of_ip(&peer, sip);
	DBG("recv %s\n", cm_attr_name(m.hdr.attr_id));
	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ:      on_req(d, &peer, &m); break;
	case CM_ATTR_REP:      on_rep(d, &peer, &m); break;
	case CM_ATTR_RTU:      on_rtu(d, &m); break;
	case CM_ATTR_REJ:      on_rej(d, &m); break;
	case CM_ATTR_MRA:      on_mra(d, &m); break;
	case CM_ATTR_DREQ:     on_dreq(d, &peer, &m); break;
	case CM_ATTR_DREP:     on_drep(d, &m); break;
	case CM_ATTR_SIDR_REQ: on_sidr_req(d, &peer, &m); break;
	case CM_ATTR_SIDR_REP: on_sidr_rep(d, &peer, &m); break;
	default: break;         /* LAP/APR, ClassPortInfo: not used by rdma_cm */
	}
}

static void drain_cq(struct cma_dev *d)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id == ~0ull) {
				if (d->sends_out)
					d->sends_out--;
				continue;       /* a send */
			}
			if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & IBV_WC_RECV))
				on_mad(d, d->buf + (size_t)wc[i].wr_id * AG_BUFSZ, wc[i].byte_len);
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(d, (unsigned)wc[i].wr_id);
		}
	}
}

/* Retransmissions and their ends; returns the ms to the next deadline. */
static int run_timers(void)
{
	uint64_t now = cma_now_ms(), next = 0;
	struct cma_id *c;
	struct cma_event *e;

	for (c = g_cma.ids; c; c = c->next_all) {
		if (!c->rtx_attr || !c->deadline)
			continue;
		if (c->deadline > now) {
			if (!next || c->deadline < next)
				next = c->deadline;
			continue;
		}
		if (c->tries < c->max_tries) {
			c->tries++;
			DBG("retransmit %s (%d)\n", cm_attr_name(c->rtx_attr), c->tries);
			send_raw(c->dev, &c->id.route.addr.addr.ibaddr.dgid, c->mad);
			if (c->tmo_ms < 4096)
				c->tmo_ms *= 2;
			c->deadline = now + c->tmo_ms;
			if (!next || c->deadline < next)
				next = c->deadline;
			continue;
		}
		/* out of retries */
		e = NULL;
		switch (c->rtx_attr) {
		case CM_ATTR_REQ:
		case CM_ATTR_REP:
		case CM_ATTR_SIDR_REQ:
			c->state = CS_ERROR;    /* rdma_get_cm_event moves the QP to ERR */
			e = cma_event_new(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
			break;
		case CM_ATTR_DREQ:
			c->state = CS_DISCONNECTED;
			if (!c->disc_queued) {
				c->disc_queued = true;
				e = cma_event_new(c, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT);
			}
			break;
		}
		cm_disarm(c);
		if (e)
			cma_queue(c, e);
	}
	if (!next)
		return -1;
	return next > now ? (int)(next - now) : 0;
}

static void *cm_thread(void *arg)
{
	struct pollfd pfd[CMA_MAX_DEVS + 1];
	struct cma_dev *pdev[CMA_MAX_DEVS + 1];
	int n, i, tmo;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&g_cma.lock);
		n = 0;
		pfd[n].fd = g_cma.wake[0];
		pfd[n].events = POLLIN;
		pdev[n++] = NULL;
		for (i = 0; i < g_cma.ndev; i++)
			if (g_cma.devs[i].agent_ok) {
				pfd[n].fd = g_cma.devs[i].cch->fd;
				pfd[n].events = POLLIN;
				pdev[n++] = &g_cma.devs[i];
			}
		tmo = run_timers();
		i = run_held(false);
		if (i >= 0 && (tmo < 0 || i < tmo))
			tmo = i;
		pthread_mutex_unlock(&g_cma.lock);

		if (poll(pfd, (nfds_t)n, tmo) < 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			char b[64];

			while (read(g_cma.wake[0], b, sizeof(b)) > 0)
				;
		}
		for (i = 1; i < n; i++) {
			struct ibv_cq *cq;
			void *ctx;

			if (!(pfd[i].revents & POLLIN))
				continue;
			if (ibv_get_cq_event(pdev[i]->cch, &cq, &ctx))
				continue;
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
			pthread_mutex_lock(&g_cma.lock);
			drain_cq(pdev[i]);
			pthread_mutex_unlock(&g_cma.lock);
		}
	}
	return NULL;
}

/* The process exits (or the library is unloaded): a kernel closes the
 * process's rdma_cm file then, which destroys its ids, and so tells every
 * peer (DREQ for a connection, REJ for one being set up).  Do the same,
 * and wait a little for those sends to leave: once the process is gone
 * its agent is too, and a peer's DREQ would go unanswered until it times
 * out.  Not in a forked child: the ids are its parent's. */
static void __attribute__((destructor)) cm_exit(void)
{
	struct cma_id *c;
	int i, waits;
	bool busy;

	if (!g_cma.agent_pid || g_cma.agent_pid != getpid())
		return;
	pthread_mutex_lock(&g_cma.lock);
	for (c = g_cma.ids; c; c = c->next_all)
		if (c->dev && c->dev->agent_ok)
			cma_teardown_conn(c);
	for (waits = 0; waits < 200; waits++) {
		busy = false;
		for (i = 0; i < g_cma.ndev; i++)
			if (g_cma.devs[i].agent_ok && g_cma.devs[i].sends_out)
				busy = true;
		if (!busy)
			break;
		/* the CM thread reaps the completions */
		pthread_mutex_unlock(&g_cma.lock);
		usleep(1000);
		pthread_mutex_lock(&g_cma.lock);
	}
	pthread_mutex_unlock(&g_cma.lock);
}

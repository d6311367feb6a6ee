/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ep.c: the synchronous endpoint API of <rdma/rdma_verbs.h> -
 * rdma_create_ep / rdma_destroy_ep / rdma_get_request, as rdma-core's
 * examples (rdma_server/client, rdma_xserver/xclient) use it: the id has
 * a private channel and every call waits for its own event. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "cma.h"

int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);

static int err(int e) { errno = e; return -1; }

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cma_id *c;
	enum rdma_port_space ps;
	enum ibv_qp_type qpt;
	int e;

	if (!id || !res)
		return err(EINVAL);
	ps = res->ai_port_space ? (enum rdma_port_space)res->ai_port_space :
	     res->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
	qpt = res->ai_qp_type ? (enum ibv_qp_type)res->ai_qp_type :
	      ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
	if (cma_create_id_qpt(NULL, &cid, NULL, ps, qpt))
		return -1;
	c = cma_of(cid);
	if (res->ai_flags & RAI_PASSIVE) {
		if (res->ai_src_addr && rdma_bind_addr(cid, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			c->ep_attr = calloc(1, sizeof(*c->ep_attr));
			if (!c->ep_attr) {
				errno = ENOMEM;
				goto fail;
			}
			memcpy(c->ep_attr, qp_init_attr, sizeof(*qp_init_attr));
			c->ep_attr->qp_type = qpt;
		}
		cid->pd = pd;
	} else {
		if (rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000) ||
		    rdma_resolve_route(cid, 2000))
			goto fail;
		if (qp_init_attr) {
			qp_init_attr->qp_type = qpt;
			if (rdma_create_qp(cid, pd, qp_init_attr))
				goto fail;
		}
	}
	*id = cid;
	return 0;
fail:
	e = errno;
	rdma_destroy_id(cid);
	return err(e);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l = cma_of(listen), *c;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int e;

	if (!l || !id || !l->sync)
		return err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status) {
		e = ev->status < 0 ? -ev->status : ev->status;
		rdma_ack_cm_event(ev);
		return err(e);
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return err(EINVAL);
	}
	c = cma_of(ev->id);
	ch = rdma_create_event_channel();
	if (!ch) {
		e = errno;
		rdma_ack_cm_event(ev);
		rdma_reject(&c->id, NULL, 0);
		rdma_destroy_id(&c->id);
		return err(e);
	}
	pthread_mutex_lock(&g_cma.lock);
	c->id.channel = ch;
	c->sync = true;
	pthread_mutex_unlock(&g_cma.lock);
	c->id.event = ev;
	if (l->ep_attr) {
		struct ibv_qp_init_attr attr;

		memcpy(&attr, l->ep_attr, sizeof(attr));
		if (rdma_create_qp(&c->id, listen->pd, &attr)) {
			e = errno;
			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			return err(e);
		}
	}
	*id = &c->id;
	return 0;
}

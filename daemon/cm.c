/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* QP1 of a vRNIC, shared by the CM agents of the processes that run rdma_cm
 * on it (include/unirdma/cm.h).  A vRNIC has one GSI address, but each
 * process runs its own IB CM: the daemon keeps only which of its UD QPs are
 * agents (by slot) and which ServiceIDs they listen on; the engine steers
 * each datagram for QPN 1 to one agent by the CM message it carries
 * (engine/cm_steer.c).  Everything here runs under the big lock, which the
 * engine holds while it steers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "log.h"
#include "verbs.h"

static struct vr_qp *agent_qp(struct handler_args *a, uint32_t handle)
{
	struct vr_qp *qp = obj_get(a->ctx, handle, OBJ_QP);

	return qp && qp->type == IBV_QPT_UD ? qp : NULL;
}

int op_cm_agent(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_cm_req *r = req;
	struct urd_handle_resp *o = resp;
	struct urd_vrnic *vr = a->vr;
	struct vr_qp *qp = agent_qp(a, r->qp);

	if (!qp || qp->cm_slot)
		return -EINVAL;
	for (uint32_t s = 1; s <= URD_CM_MAX_AGENTS; s++) {
		if (vr->cm_agent[s])
			continue;
		vr->cm_agent[s] = qp;
		qp->cm_slot = (uint8_t)s;
		o->handle = s;
		*resp_len = sizeof(*o);
		log_debug("vrnic %s: qp %u is CM agent %u", vr->name, qp->qpn, s);
		return 0;
	}
	return -ENOSPC;
}

static struct vr_cm_listen *listen_find(struct urd_vrnic *vr, uint64_t sid)
{
	for (uint32_t i = 0; i < vr->ncm_listen; i++)
		if (vr->cm_listen[i].service_id == sid)
			return &vr->cm_listen[i];
	return NULL;
}

static void listen_drop(struct urd_vrnic *vr, struct vr_cm_listen *l)
{
	*l = vr->cm_listen[--vr->ncm_listen];   /* unordered: the last fills the hole */
	if (!vr->ncm_listen) {
		free(vr->cm_listen);
		vr->cm_listen = NULL;
	}
}

int op_cm_listen(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED,
		 uint32_t *resp_len URD_UNUSED)
{
	const struct urd_cm_req *r = req;
	struct urd_vrnic *vr = a->vr;
	struct vr_qp *qp = agent_qp(a, r->qp);
	struct vr_cm_listen *l;

	if (!qp || !qp->cm_slot || r->on > 1)
		return -EINVAL;
	l = listen_find(vr, r->service_id);
	if (!r->on) {
		if (!l || l->qp != qp)
			return -ENOENT;
		listen_drop(vr, l);
		return 0;
	}
	if (l)
		return -EADDRINUSE;
	if (vr->ncm_listen >= URD_CM_MAX_LISTEN)
		return -ENOSPC;
	/* grown one at a time: listens are rare and at most 1024 (16 KiB) */
	l = realloc(vr->cm_listen, (vr->ncm_listen + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	vr->cm_listen = l;
	vr->cm_listen[vr->ncm_listen++] = (struct vr_cm_listen){ .service_id = r->service_id, .qp = qp };
	return 0;
}

/* A QP going away stops being an agent and stops listening. */
void cm_forget(struct vr_qp *qp)
{
	struct urd_vrnic *vr = qp->vr;

	if (!qp->cm_slot)
		return;
	for (uint32_t i = 0; i < vr->ncm_listen;) {
		if (vr->cm_listen[i].qp == qp)
			listen_drop(vr, &vr->cm_listen[i]);
		else
			i++;
	}
	vr->cm_agent[qp->cm_slot] = NULL;
	qp->cm_slot = 0;
}

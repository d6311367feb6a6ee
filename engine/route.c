/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Addressing: where does a QP's traffic go?  This is the one place that
 * answers "where is this GID / QPN" (a fabric between hosts will answer it
 * later) and the place that enforces tenant isolation: a vRNIC reaches only
 * vRNICs of its own tenant.  Anything else is dropped silently, exactly like
 * an unreachable peer, so the requester sees a retry-exceeded error. */
#include <string.h>

#include "internal.h"
#include "roce.h"

static struct urd_vrnic *vrnic_by_gid(struct urd_daemon *d, const char *tenant, const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	uint32_t vip;

	if (memcmp(gid, v4mapped, sizeof(v4mapped)))
		return NULL;
	memcpy(&vip, gid + 12, 4);
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		struct urd_vrnic *vr = d->vrnics[i];

		if (vr && vr->vip == vip && !strcmp(vr->tenant, tenant))
			return vr;
	}
	return NULL;
}

static struct vr_qp *route(struct vr_qp *src, uint32_t dqpn, bool is_global, const uint8_t *dgid)
{
	struct urd_daemon *d = src->vr->d;
	struct vr_qp *dst = qpn_lookup(d, dqpn);

	if (dst && strcmp(dst->vr->tenant, src->vr->tenant)) {
		CNT_BOTH(src, drops_other_tenant, 1);
		return NULL;
	}
	if (is_global && (!dst || vrnic_by_gid(d, src->vr->tenant, dgid) != dst->vr))
		return NULL;
	return dst;
}

struct vr_qp *route_rc(struct vr_qp *src)
{
	const struct urd_ah *ah = &src->attr.ah;

	return route(src, src->attr.dest_qp_num, ah->is_global, ah->dgid);
}

/* A CM message nobody on vr answers (cm_steer.c cm_orphan_answer): the
 * answer goes straight back to the sending QP, as from QP1. */
static void cm_answer_orphan(struct urd_vrnic *vr, struct vr_qp *src, const struct packet *pkt)
{
	struct urd_daemon *d = vr->d;
	uint8_t req[CM_MAD_BYTES], rep[CM_MAD_BYTES], grh[40];
	struct recv_info ri = { .src_qpn = URD_GSI_QPN, .grh = grh };

	if (pkt->len < CM_MAD_BYTES || src->attr.qkey != ROCE_GSI_QKEY ||
	    !qp_can_receive(src))
		return;
	vsge_read(&d->eng, req, pkt->local, pkt->nlocal, 0, CM_MAD_BYTES);
	if (!cm_orphan_answer(vr, req, CM_MAD_BYTES, rep))
		return;
	/* UDP: 8, BTH 12, DETH 8, the MAD, ICRC 4 */
	grh_fill(grh, vr->vip, src->vr->vip, 8 + 12 + 8 + CM_MAD_BYTES + 4);
	recv_deliver_ud(src, &ri, rep, CM_MAD_BYTES);
}

/* QPN 1 of a vRNIC on this host: the CM agent the MAD's first bytes name
 * (cm_steer.c).  GSI traffic needs the GRH (the vRNIC is found by GID). */
static struct vr_qp *route_gsi(struct vr_qp *src, const struct urd_send_wqe *wqe, const struct packet *pkt)
{
	struct urd_daemon *d = src->vr->d;
	uint8_t mad[CM_STEER_BYTES];
	struct urd_vrnic *vr;
	struct vr_qp *dst;

	if (!wqe->is_global || pkt->len < CM_STEER_BYTES)
		return NULL;
	vr = vrnic_by_gid(d, src->vr->tenant, wqe->dgid);
	if (!vr || vr->failed)
		return NULL;
	vsge_read(&d->eng, mad, pkt->local, pkt->nlocal, 0, CM_STEER_BYTES);
	dst = cm_steer(vr, mad, CM_STEER_BYTES);
	if (!dst)
		cm_answer_orphan(vr, src, pkt);
	return dst;
}

struct vr_qp *route_ud(struct vr_qp *src, const struct urd_send_wqe *wqe, const struct packet *pkt)
{
	uint32_t dqpn = wqe->remote_qpn & 0xffffff;

	if (dqpn == URD_GSI_QPN)
		return route_gsi(src, wqe, pkt);
	return route(src, dqpn, wqe->is_global, wqe->dgid);
}

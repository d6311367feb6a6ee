/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Which CM agent of a vRNIC gets a datagram sent to its QP1
 * (include/unirdma/cm.h).  The daemon reads three fields of the MAD and
 * nothing else: the rest of the message is the agent's to parse (its codec,
 * lib/rdmacm/cm_mad.c, is fuzzed on its own).  The bytes come from another
 * tenant's memory or from the network: every read is bounds-checked, and a
 * datagram that names no agent is dropped. */
#include <string.h>

#include "internal.h"

#define MAD_MGMT_CLASS   1
#define MAD_CLASS_CM     0x07
#define MAD_ATTR_ID      16
#define MAD_DATA         24
#define CM_ATTR_REQ      0x0010
#define CM_ATTR_REJ      0x0012
#define CM_ATTR_DREQ     0x0015
#define CM_ATTR_DREP     0x0016
#define CM_ATTR_SIDR_REQ 0x0017
#define CM_ATTR_SIDR_REP 0x0018
#define CM_REJ_INVALID_SERVICE_ID 8
#define CM_SIDR_UNSUPPORTED       1

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int cm_steer_key(const uint8_t *mad, uint32_t len, struct cm_steer_key *k)
{
	uint16_t attr;

	if (len < CM_STEER_BYTES || mad[MAD_MGMT_CLASS] != MAD_CLASS_CM)
		return -1;
	attr = (uint16_t)(mad[MAD_ATTR_ID] << 8 | mad[MAD_ATTR_ID + 1]);
	memset(k, 0, sizeof(*k));
	if (attr == CM_ATTR_REQ || attr == CM_ATTR_SIDR_REQ) {
		/* ServiceID: REQ data offset 8, SIDR_REQ data offset 8 */
		k->by_service = true;
		k->service_id = (uint64_t)be32_at(mad + MAD_DATA + 8) << 32 | be32_at(mad + MAD_DATA + 12);
	} else if (attr == CM_ATTR_SIDR_REP) {
		k->slot = URD_CM_SLOT(be32_at(mad + MAD_DATA));         /* RequestID */
	} else {
		k->slot = URD_CM_SLOT(be32_at(mad + MAD_DATA + 4));     /* RemoteCommID */
	}
	return 0;
}

struct vr_qp *cm_steer(struct urd_vrnic *vr, const uint8_t *mad, uint32_t len)
{
	struct cm_steer_key k;

	if (!vr || cm_steer_key(mad, len, &k))
		return NULL;
	if (!k.by_service)
		return k.slot ? vr->cm_agent[k.slot] : NULL;
	for (uint32_t i = 0; i < vr->ncm_listen; i++)
		if (vr->cm_listen[i].service_id == k.service_id)
			return vr->cm_listen[i].qp;
	/* nobody listens: the first agent answers "invalid service ID" */
	for (uint32_t s = 1; s <= URD_CM_MAX_AGENTS; s++)
		if (vr->cm_agent[s])
			return vr->cm_agent[s];
	return NULL;
}

/* A CM message that nobody on the vRNIC will answer gets the answer a
 * kernel's IB CM gives, at once (else its sender waits out its retries):
 *   - REQ or SIDR_REQ on a vRNIC with no CM agent at all (a ServiceID
 *     nobody listens on: cm_req_handler, cm_sidr_req_handler): REJ
 *     "invalid service ID", or SIDR_REP "unsupported";
 *   - DREQ for a comm ID whose agent is gone (its process died without
 *     disconnecting; cm_dreq_handler answers an unknown comm ID): DREP.
 * The answer has the message's TID and swaps its comm IDs.  Anything else
 * gets no answer.  true: out holds the answer, to go back to the sender's
 * QP with the GSI Q_Key. */
bool cm_orphan_answer(const struct urd_vrnic *vr, const uint8_t *mad, uint32_t len, uint8_t out[CM_MAD_BYTES])
{
	struct cm_steer_key k;
	uint16_t attr;

	if (len < CM_MAD_BYTES || cm_steer_key(mad, len, &k) || mad[0] != 1 || mad[2] != 2 || mad[3] != 0x03)
		return false;
	attr = (uint16_t)(mad[MAD_ATTR_ID] << 8 | mad[MAD_ATTR_ID + 1]);
	if (k.by_service ? cm_served(vr) : attr != CM_ATTR_DREQ || (k.slot && vr->cm_agent[k.slot]))
		return false;
	memset(out, 0, CM_MAD_BYTES);
	memcpy(out, mad, 4);                            /* base, class, class version, method Send */
	memcpy(out + 8, mad + 8, 8);                    /* the message's TID */
	/* LocalCommID: its RemoteCommID; RemoteCommID: its LocalCommID (REQ,
	 * DREQ); SIDR: the RequestID */
	memcpy(out + MAD_DATA, mad + MAD_DATA + (attr == CM_ATTR_SIDR_REQ ? 0 : 4), 4);
	if (attr != CM_ATTR_SIDR_REQ)
		memcpy(out + MAD_DATA + 4, mad + MAD_DATA, 4);
	if (attr == CM_ATTR_REQ) {
		out[MAD_ATTR_ID + 1] = CM_ATTR_REJ;     /* message REJected: REQ (0); no ARI */
		out[MAD_DATA + 11] = CM_REJ_INVALID_SERVICE_ID;
	} else if (attr == CM_ATTR_SIDR_REQ) {
		out[MAD_ATTR_ID + 1] = CM_ATTR_SIDR_REP;
		out[MAD_DATA + 4] = CM_SIDR_UNSUPPORTED;
		memcpy(out + MAD_DATA + 12, mad + MAD_DATA + 8, 8); /* ServiceID */
	} else {
		out[MAD_ATTR_ID + 1] = CM_ATTR_DREP;
	}
	return true;
}

/* Is there a CM agent on vr? */
bool cm_served(const struct urd_vrnic *vr)
{
	for (uint32_t s = 1; s <= URD_CM_MAX_AGENTS; s++)
		if (vr->cm_agent[s])
			return true;
	return false;
}

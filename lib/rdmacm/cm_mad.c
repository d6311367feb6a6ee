/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The IB CM message codec (cm_mad.h): MAD bytes <-> struct cm_msg.
 *
 * Sources: IBA Vol 1 12.6 (tables 106-120: REQ, MRA, REJ, REP, RTU, DREQ,
 * DREP, SIDR_REQ, SIDR_REP) and 13.4 (the MAD common header); offsets
 * cross-checked against Linux's include/rdma/ibta_vol1_c12.h, whose
 * CM_FIELD* offsets also count from the end of the 24-byte header.
 *
 * Every offset below is into the CM data (the MAD from byte 24 on).  The
 * spec numbers bits from the most significant one, so a field at
 * Byte[Bit] with width w is (byte >> (8 - Bit - w)) & (2^w - 1).
 *
 * What arrives is untrusted (any tenant, any peer can send a MAD to QP1):
 * decode reads exactly CM_MAD_SIZE bytes after checking len, copies every
 * array whole (no length field from the wire sizes a copy) and refuses a
 * REJ whose ARI length exceeds its 72-byte room rather than clamping it,
 * so that what a caller sees is what was sent.  Reserved bits are ignored
 * on decode (the spec's rule for reserved fields: sent as zero, not
 * checked by the receiver) and written as zero on encode, because encode
 * starts from a zeroed MAD and only ORs fields in.  The alternate path of
 * a REQ (bytes 96..139) is dropped on decode and sent as zeros: we have one
 * port and no path migration. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cm_mad.h"

/* ---- big-endian access and bit fields --------------------------------------- */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* a 24-bit field in the top three bytes of a 32-bit word */
static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* Byte[bit] of width w, bit counted from the MSB as the spec's tables do. */
static uint8_t getbits(const uint8_t *p, unsigned bit, unsigned w)
{
	return (uint8_t)((*p >> (8 - bit - w)) & ((1u << w) - 1));
}

/* OR into a byte that starts zeroed: whatever is not a field stays 0. */
static void putbits(uint8_t *p, unsigned bit, unsigned w, unsigned v)
{
	*p |= (uint8_t)((v & ((1u << w) - 1)) << (8 - bit - w));
}

/* ---- one pair of functions per message (d: the CM data, 232 bytes) ---------- */

static void req_decode(const uint8_t *d, struct cm_msg *m)
{
	struct cm_req *r = &m->req;
	struct cm_path *pp = &r->primary;

	r->local_comm_id = get32(d + 0);
	r->service_id = get64(d + 8);
	r->local_ca_guid = get64(d + 16);
	r->local_qkey = get32(d + 28);
	r->local_qpn = get24(d + 32);
	r->responder_resources = d[35];
	r->local_eecn = get24(d + 36);
	r->initiator_depth = d[39];
	r->remote_eecn = get24(d + 40);
	r->remote_cm_response_timeout = getbits(d + 43, 0, 5);
	r->transport_type = getbits(d + 43, 5, 2);
	r->flow_control = getbits(d + 43, 7, 1);
	r->starting_psn = get24(d + 44);
	r->local_cm_response_timeout = getbits(d + 47, 0, 5);
	r->retry_count = getbits(d + 47, 5, 3);
	r->pkey = get16(d + 48);
	r->path_mtu = getbits(d + 50, 0, 4);
	r->rdc_exists = getbits(d + 50, 4, 1);
	r->rnr_retry_count = getbits(d + 50, 5, 3);
	r->max_cm_retries = getbits(d + 51, 0, 4);
	r->srq = getbits(d + 51, 4, 1);
	r->extended_transport = getbits(d + 51, 5, 3);
	pp->local_lid = get16(d + 52);
	pp->remote_lid = get16(d + 54);
	memcpy(pp->local_gid, d + 56, 16);
	memcpy(pp->remote_gid, d + 72, 16);
	pp->flow_label = get32(d + 88) >> 12;
	pp->packet_rate = getbits(d + 91, 2, 6);
	pp->traffic_class = d[92];
	pp->hop_limit = d[93];
	pp->sl = getbits(d + 94, 0, 4);
	pp->subnet_local = getbits(d + 94, 4, 1);
	pp->local_ack_timeout = getbits(d + 95, 0, 5);
	memcpy(r->pdata, d + 140, CM_REQ_PDATA);
}

static void req_encode(const struct cm_msg *m, uint8_t *d)
{
	const struct cm_req *r = &m->req;
	const struct cm_path *pp = &r->primary;

	put32(d + 0, r->local_comm_id);
	put64(d + 8, r->service_id);
	put64(d + 16, r->local_ca_guid);
	put32(d + 28, r->local_qkey);
	put24(d + 32, r->local_qpn);
	d[35] = r->responder_resources;
	put24(d + 36, r->local_eecn);
	d[39] = r->initiator_depth;
	put24(d + 40, r->remote_eecn);
	putbits(d + 43, 0, 5, r->remote_cm_response_timeout);
	putbits(d + 43, 5, 2, r->transport_type);
	putbits(d + 43, 7, 1, r->flow_control);
	put24(d + 44, r->starting_psn);
	putbits(d + 47, 0, 5, r->local_cm_response_timeout);
	putbits(d + 47, 5, 3, r->retry_count);
	put16(d + 48, r->pkey);
	putbits(d + 50, 0, 4, r->path_mtu);
	putbits(d + 50, 4, 1, r->rdc_exists);
	putbits(d + 50, 5, 3, r->rnr_retry_count);
	putbits(d + 51, 0, 4, r->max_cm_retries);
	putbits(d + 51, 4, 1, r->srq);
	putbits(d + 51, 5, 3, r->extended_transport);
	put16(d + 52, pp->local_lid);
	put16(d + 54, pp->remote_lid);
	memcpy(d + 56, pp->local_gid, 16);
	memcpy(d + 72, pp->remote_gid, 16);
	/* flow label: the top 20 bits of the word; byte 91 is then
	 * reserved(2) | packet rate(6), ORed in after */
	put32(d + 88, (pp->flow_label & 0xfffff) << 12);
	putbits(d + 91, 2, 6, pp->packet_rate);
	d[92] = pp->traffic_class;
	d[93] = pp->hop_limit;
	putbits(d + 94, 0, 4, pp->sl);
	putbits(d + 94, 4, 1, pp->subnet_local);
	putbits(d + 95, 0, 5, pp->local_ack_timeout);
	/* 96..139: the alternate path, left zero (no alternate) */
	memcpy(d + 140, r->pdata, CM_REQ_PDATA);
}

static void mra_decode(const uint8_t *d, struct cm_msg *m)
{
	m->mra.local_comm_id = get32(d + 0);
	m->mra.remote_comm_id = get32(d + 4);
	m->mra.msg_mraed = getbits(d + 8, 0, 2);
	m->mra.service_timeout = getbits(d + 9, 0, 5);
	memcpy(m->mra.pdata, d + 10, CM_MRA_PDATA);
}

static void mra_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->mra.local_comm_id);
	put32(d + 4, m->mra.remote_comm_id);
	putbits(d + 8, 0, 2, m->mra.msg_mraed);
	putbits(d + 9, 0, 5, m->mra.service_timeout);
	memcpy(d + 10, m->mra.pdata, CM_MRA_PDATA);
}

static void rej_decode(const uint8_t *d, struct cm_msg *m)
{
	m->rej.local_comm_id = get32(d + 0);
	m->rej.remote_comm_id = get32(d + 4);
	m->rej.msg_rejected = getbits(d + 8, 0, 2);
	m->rej.ari_length = getbits(d + 9, 0, 7);
	m->rej.reason = get16(d + 10);
	memcpy(m->rej.ari, d + 12, CM_REJ_ARI);
	memcpy(m->rej.pdata, d + 84, CM_REJ_PDATA);
}

static void rej_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->rej.local_comm_id);
	put32(d + 4, m->rej.remote_comm_id);
	putbits(d + 8, 0, 2, m->rej.msg_rejected);
	putbits(d + 9, 0, 7, m->rej.ari_length);
	put16(d + 10, m->rej.reason);
	memcpy(d + 12, m->rej.ari, CM_REJ_ARI);
	memcpy(d + 84, m->rej.pdata, CM_REJ_PDATA);
}

static void rep_decode(const uint8_t *d, struct cm_msg *m)
{
	struct cm_rep *r = &m->rep;

	r->local_comm_id = get32(d + 0);
	r->remote_comm_id = get32(d + 4);
	r->local_qkey = get32(d + 8);
	r->local_qpn = get24(d + 12);
	r->local_eecn = get24(d + 16);
	r->starting_psn = get24(d + 20);
	r->responder_resources = d[24];
	r->initiator_depth = d[25];
	r->target_ack_delay = getbits(d + 26, 0, 5);
	r->failover_accepted = getbits(d + 26, 5, 2);
	r->flow_control = getbits(d + 26, 7, 1);
	r->rnr_retry_count = getbits(d + 27, 0, 3);
	r->srq = getbits(d + 27, 3, 1);
	r->local_ca_guid = get64(d + 28);
	memcpy(r->pdata, d + 36, CM_REP_PDATA);
}

static void rep_encode(const struct cm_msg *m, uint8_t *d)
{
	const struct cm_rep *r = &m->rep;

	put32(d + 0, r->local_comm_id);
	put32(d + 4, r->remote_comm_id);
	put32(d + 8, r->local_qkey);
	put24(d + 12, r->local_qpn);
	put24(d + 16, r->local_eecn);
	put24(d + 20, r->starting_psn);
	d[24] = r->responder_resources;
	d[25] = r->initiator_depth;
	putbits(d + 26, 0, 5, r->target_ack_delay);
	putbits(d + 26, 5, 2, r->failover_accepted);
	putbits(d + 26, 7, 1, r->flow_control);
	putbits(d + 27, 0, 3, r->rnr_retry_count);
	putbits(d + 27, 3, 1, r->srq);
	put64(d + 28, r->local_ca_guid);
	memcpy(d + 36, r->pdata, CM_REP_PDATA);
}

/* RTU and DREP share their layout: the two IDs and private data. */
static void rtu_decode(const uint8_t *d, struct cm_msg *m)
{
	m->rtu.local_comm_id = get32(d + 0);
	m->rtu.remote_comm_id = get32(d + 4);
	memcpy(m->rtu.pdata, d + 8, CM_RTU_PDATA);
}

static void rtu_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->rtu.local_comm_id);
	put32(d + 4, m->rtu.remote_comm_id);
	memcpy(d + 8, m->rtu.pdata, CM_RTU_PDATA);
}

static void drep_decode(const uint8_t *d, struct cm_msg *m)
{
	m->drep.local_comm_id = get32(d + 0);
	m->drep.remote_comm_id = get32(d + 4);
	memcpy(m->drep.pdata, d + 8, CM_DREP_PDATA);
}

static void drep_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->drep.local_comm_id);
	put32(d + 4, m->drep.remote_comm_id);
	memcpy(d + 8, m->drep.pdata, CM_DREP_PDATA);
}

static void dreq_decode(const uint8_t *d, struct cm_msg *m)
{
	m->dreq.local_comm_id = get32(d + 0);
	m->dreq.remote_comm_id = get32(d + 4);
	m->dreq.remote_qpn = get24(d + 8);
	memcpy(m->dreq.pdata, d + 12, CM_DREQ_PDATA);
}

static void dreq_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->dreq.local_comm_id);
	put32(d + 4, m->dreq.remote_comm_id);
	put24(d + 8, m->dreq.remote_qpn);
	memcpy(d + 12, m->dreq.pdata, CM_DREQ_PDATA);
}

static void sidr_req_decode(const uint8_t *d, struct cm_msg *m)
{
	m->sidr_req.request_id = get32(d + 0);
	m->sidr_req.pkey = get16(d + 4);
	m->sidr_req.service_id = get64(d + 8);
	memcpy(m->sidr_req.pdata, d + 16, CM_SIDR_REQ_PDATA);
}

static void sidr_req_encode(const struct cm_msg *m, uint8_t *d)
{
	put32(d + 0, m->sidr_req.request_id);
	put16(d + 4, m->sidr_req.pkey);
	put64(d + 8, m->sidr_req.service_id);
	memcpy(d + 16, m->sidr_req.pdata, CM_SIDR_REQ_PDATA);
}

/* The additional information (ClassPortInfo on a redirect) is copied whole
 * whatever its length byte says; the length is handed on as it came. */
static void sidr_rep_decode(const uint8_t *d, struct cm_msg *m)
{
	struct cm_sidr_rep *r = &m->sidr_rep;

	r->request_id = get32(d + 0);
	r->status = d[4];
	r->add_info_length = d[5];
	r->qpn = get24(d + 8);
	r->service_id = get64(d + 12);
	r->qkey = get32(d + 20);
	memcpy(r->class_port_info, d + 24, sizeof(r->class_port_info));
	memcpy(r->pdata, d + 96, CM_SIDR_REP_PDATA);
}

static void sidr_rep_encode(const struct cm_msg *m, uint8_t *d)
{
	const struct cm_sidr_rep *r = &m->sidr_rep;

	put32(d + 0, r->request_id);
	d[4] = r->status;
	d[5] = r->add_info_length;
	put24(d + 8, r->qpn);
	put64(d + 12, r->service_id);
	put32(d + 20, r->qkey);
	memcpy(d + 24, r->class_port_info, sizeof(r->class_port_info));
	memcpy(d + 96, r->pdata, CM_SIDR_REP_PDATA);
}

/* ---- the attribute table ------------------------------------------------------ */

struct cm_codec {
	uint16_t attr_id;
	const char *name;
	/* NULL: known by name for logs, not decoded (LAP, APR, ClassPortInfo:
	 * no alternate paths here, and nobody asks our CM for its ClassPortInfo) */
	void (*decode)(const uint8_t *d, struct cm_msg *m);
	void (*encode)(const struct cm_msg *m, uint8_t *d);
};

static const struct cm_codec codecs[] = {
	{ CM_ATTR_CLASS_PORT_INFO, "ClassPortInfo", NULL, NULL },
	{ CM_ATTR_REQ, "REQ", req_decode, req_encode },
	{ CM_ATTR_MRA, "MRA", mra_decode, mra_encode },
	{ CM_ATTR_REJ, "REJ", rej_decode, rej_encode },
	{ CM_ATTR_REP, "REP", rep_decode, rep_encode },
	{ CM_ATTR_RTU, "RTU", rtu_decode, rtu_encode },
	{ CM_ATTR_DREQ, "DREQ", dreq_decode, dreq_encode },
	{ CM_ATTR_DREP, "DREP", drep_decode, drep_encode },
	{ CM_ATTR_SIDR_REQ, "SIDR_REQ", sidr_req_decode, sidr_req_encode },
	{ CM_ATTR_SIDR_REP, "SIDR_REP", sidr_rep_decode, sidr_rep_encode },
	{ CM_ATTR_LAP, "LAP", NULL, NULL },
	{ CM_ATTR_APR, "APR", NULL, NULL },
};

static const struct cm_codec *codec_of(uint16_t attr_id)
{
	size_t i;

	for (i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		if (codecs[i].attr_id == attr_id)
			return &codecs[i];
	return NULL;
}

const char *cm_attr_name(uint16_t attr_id)
{
	const struct cm_codec *c = codec_of(attr_id);

	return c ? c->name : "?";
}

/* ---- the MAD ------------------------------------------------------------------ */

int cm_mad_decode(const uint8_t *mad, size_t len, struct cm_msg *out)
{
	const struct cm_codec *c;
	struct cm_mad_hdr *h = &out->hdr;

	if (!mad || len < CM_MAD_SIZE)
		return -EINVAL;
	/* A MAD of another class or version is not ours to interpret (the
	 * versions select the layout); only Send carries CM messages, and
	 * the GSI's Get of ClassPortInfo we do not serve. */
	if (mad[0] != CM_BASE_VERSION || mad[1] != CM_MGMT_CLASS || mad[2] != CM_CLASS_VERSION ||
	    mad[3] != CM_METHOD_SEND)
		return -EINVAL;
	c = codec_of(get16(mad + 16));
	if (!c || !c->decode)
		return -EINVAL;
	/* the ARI length is the only length field with a room: one beyond it
	 * is a malformed REJ, refused rather than clamped */
	if (c->attr_id == CM_ATTR_REJ && getbits(mad + CM_MAD_HDR_SIZE + 9, 0, 7) > CM_REJ_ARI)
		return -EINVAL;

	/* zero padding and the union's tail too, so that two decodes of the
	 * same message compare equal with memcmp */
	memset(out, 0, sizeof(*out));
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = get16(mad + 4);
	h->class_specific = get16(mad + 6);
	h->tid = get64(mad + 8);
	h->attr_id = c->attr_id;
	/* 18..19 reserved */
	h->attr_mod = get32(mad + 20);
	c->decode(mad + CM_MAD_HDR_SIZE, out);
	return 0;
}

int cm_mad_encode(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE])
{
	const struct cm_codec *c = codec_of(msg->hdr.attr_id);

	memset(mad, 0, CM_MAD_SIZE);
	if (!c || !c->encode)
		return -EINVAL;
	mad[0] = CM_BASE_VERSION;
	mad[1] = CM_MGMT_CLASS;
	mad[2] = CM_CLASS_VERSION;
	mad[3] = CM_METHOD_SEND;
	put16(mad + 4, msg->hdr.status);
	put16(mad + 6, msg->hdr.class_specific);
	put64(mad + 8, msg->hdr.tid);
	put16(mad + 16, msg->hdr.attr_id);
	put32(mad + 20, msg->hdr.attr_mod);
	c->encode(msg, mad + CM_MAD_HDR_SIZE);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* u_cm_mad: the IB CM message codec (lib/rdmacm/cm_mad.h), on its own.
 *
 * The expected bytes here are written from IBA Vol 1 12.6's tables (offsets
 * into the CM data, i.e. after the 24-byte MAD header), not from the codec,
 * so that a field in the wrong place shows up as a wrong byte and not as a
 * round trip that agrees with itself.
 *
 * 1. Each message with distinctive values (every bit field non-zero, some
 *    at their maximum): the MAD header and the bytes of every field, then
 *    decode gives back every field.
 * 2. Each message with every field all ones: the MAD is exactly the mask of
 *    the layout's non-reserved bits (no field spills into a reserved bit or
 *    a neighbour; the REQ's alternate path stays zero), and decode gives
 *    every field at its maximum (a REJ with ARI length 127 is refused).
 * 3. One field at a time at its maximum, the others zero: each field's
 *    bits are disjoint from every other's, together they are exactly the
 *    non-reserved bits, and decode gives back that field alone (a field
 *    read from a neighbour's bits cannot hide behind equal values).
 * 4. Reserved bits (and the REQ's alternate path) set on the wire: decode
 *    is unaffected.
 * 5. What decode refuses: short, base version, class, class version,
 *    method, attributes it does not know, ARI length over 72.
 * 6. Encode: header constants filled in whatever the struct says, fields
 *    truncated to their width, unknown attributes refused; cm_attr_name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_mad.h"
#include "unit.h"

#define H CM_MAD_HDR_SIZE

static const uint16_t attrs[] = {
	CM_ATTR_REQ,  CM_ATTR_MRA,  CM_ATTR_REJ,      CM_ATTR_REP,      CM_ATTR_RTU,
	CM_ATTR_DREQ, CM_ATTR_DREP, CM_ATTR_SIDR_REQ, CM_ATTR_SIDR_REP,
};
#define N_ATTRS (sizeof(attrs) / sizeof(attrs[0]))

/* ---- the layouts' reserved bits (IBA tables 106-120), from the spec ---------- */

struct resv {
	uint16_t attr;
	uint8_t off, len, mask; /* CM data bytes off..off+len-1, bits in mask */
};

static const struct resv resv[] = {
	{ CM_ATTR_REQ, 4, 4, 0xff },   { CM_ATTR_REQ, 24, 4, 0xff },
	{ CM_ATTR_REQ, 90, 1, 0x0f },  /* flow label(20) | reserved(6) | rate(6) */
	{ CM_ATTR_REQ, 91, 1, 0xc0 },  { CM_ATTR_REQ, 94, 1, 0x07 },
	{ CM_ATTR_REQ, 95, 1, 0x07 },  { CM_ATTR_REQ, 96, 44, 0xff }, /* alternate path: not kept */
	{ CM_ATTR_MRA, 8, 1, 0x3f },   { CM_ATTR_MRA, 9, 1, 0x07 },
	{ CM_ATTR_REJ, 8, 1, 0x3f },   { CM_ATTR_REJ, 9, 1, 0x01 },
	{ CM_ATTR_REP, 15, 1, 0xff },  { CM_ATTR_REP, 19, 1, 0xff },
	{ CM_ATTR_REP, 23, 1, 0xff },  { CM_ATTR_REP, 27, 1, 0x0f },
	{ CM_ATTR_DREQ, 11, 1, 0xff }, { CM_ATTR_SIDR_REQ, 6, 2, 0xff },
	{ CM_ATTR_SIDR_REP, 6, 2, 0xff }, { CM_ATTR_SIDR_REP, 11, 1, 0xff },
};

/* kept[i]: the bits of MAD byte i that carry a field of attr's layout */
static void kept_mask(uint16_t attr, uint8_t kept[CM_MAD_SIZE])
{
	size_t i, k;

	memset(kept, 0xff, CM_MAD_SIZE);
	kept[18] = kept[19] = 0; /* MAD header reserved */
	for (i = 0; i < sizeof(resv) / sizeof(resv[0]); i++)
		if (resv[i].attr == attr)
			for (k = 0; k < resv[i].len; k++)
				kept[H + resv[i].off + k] &= (uint8_t)~resv[i].mask;
}

/* ---- the fields of each message, with the largest value each may hold -------- */

#define M64 0xffffffffffffffffull
#define HDR_FIELDS(X)                                                          \
	X(hdr.base_version, 0xff) X(hdr.mgmt_class, 0xff) X(hdr.class_version, 0xff) \
	X(hdr.method, 0xff) X(hdr.status, 0xffff) X(hdr.class_specific, 0xffff)     \
	X(hdr.tid, M64) X(hdr.attr_id, 0xffff) X(hdr.attr_mod, 0xffffffff)
#define REQ_FIELDS(X, A)                                                       \
	X(req.local_comm_id, 0xffffffff) X(req.service_id, M64)                    \
	X(req.local_ca_guid, M64) X(req.local_qkey, 0xffffffff)                    \
	X(req.local_qpn, 0xffffff) X(req.responder_resources, 0xff)                \
	X(req.local_eecn, 0xffffff) X(req.initiator_depth, 0xff)                   \
	X(req.remote_eecn, 0xffffff) X(req.remote_cm_response_timeout, 31)         \
	X(req.transport_type, 3) X(req.flow_control, 1)                            \
	X(req.starting_psn, 0xffffff) X(req.local_cm_response_timeout, 31)         \
	X(req.retry_count, 7) X(req.pkey, 0xffff) X(req.path_mtu, 15)              \
	X(req.rdc_exists, 1) X(req.rnr_retry_count, 7) X(req.max_cm_retries, 15)   \
	X(req.srq, 1) X(req.extended_transport, 7)                                 \
	X(req.primary.local_lid, 0xffff) X(req.primary.remote_lid, 0xffff)         \
	X(req.primary.flow_label, 0xfffff) X(req.primary.packet_rate, 63)          \
	X(req.primary.traffic_class, 0xff) X(req.primary.hop_limit, 0xff)          \
	X(req.primary.sl, 15) X(req.primary.subnet_local, 1)                       \
	X(req.primary.local_ack_timeout, 31)                                       \
	A(req.primary.local_gid) A(req.primary.remote_gid) A(req.pdata)
#define MRA_FIELDS(X, A)                                                       \
	X(mra.local_comm_id, 0xffffffff) X(mra.remote_comm_id, 0xffffffff)         \
	X(mra.msg_mraed, 3) X(mra.service_timeout, 31) A(mra.pdata)
/* ARI length: the largest decode accepts */
#define REJ_FIELDS(X, A)                                                       \
	X(rej.local_comm_id, 0xffffffff) X(rej.remote_comm_id, 0xffffffff)         \
	X(rej.msg_rejected, 3) X(rej.ari_length, CM_REJ_ARI) X(rej.reason, 0xffff) \
	A(rej.ari) A(rej.pdata)
#define REP_FIELDS(X, A)                                                       \
	X(rep.local_comm_id, 0xffffffff) X(rep.remote_comm_id, 0xffffffff)         \
	X(rep.local_qkey, 0xffffffff) X(rep.local_qpn, 0xffffff)                   \
	X(rep.local_eecn, 0xffffff) X(rep.starting_psn, 0xffffff)                  \
	X(rep.responder_resources, 0xff) X(rep.initiator_depth, 0xff)              \
	X(rep.target_ack_delay, 31) X(rep.failover_accepted, 3)                    \
	X(rep.flow_control, 1) X(rep.rnr_retry_count, 7) X(rep.srq, 1)             \
	X(rep.local_ca_guid, M64) A(rep.pdata)
#define RTU_FIELDS(X, A)                                                       \
	X(rtu.local_comm_id, 0xffffffff) X(rtu.remote_comm_id, 0xffffffff) A(rtu.pdata)
#define DREQ_FIELDS(X, A)                                                      \
	X(dreq.local_comm_id, 0xffffffff) X(dreq.remote_comm_id, 0xffffffff)       \
	X(dreq.remote_qpn, 0xffffff) A(dreq.pdata)
#define DREP_FIELDS(X, A)                                                      \
	X(drep.local_comm_id, 0xffffffff) X(drep.remote_comm_id, 0xffffffff) A(drep.pdata)
#define SIDR_REQ_FIELDS(X, A)                                                  \
	X(sidr_req.request_id, 0xffffffff) X(sidr_req.pkey, 0xffff)                \
	X(sidr_req.service_id, M64) A(sidr_req.pdata)
#define SIDR_REP_FIELDS(X, A)                                                  \
	X(sidr_rep.request_id, 0xffffffff) X(sidr_rep.status, 0xff)                \
	X(sidr_rep.add_info_length, 0xff) X(sidr_rep.qpn, 0xffffff)                \
	X(sidr_rep.service_id, M64) X(sidr_rep.qkey, 0xffffffff)                   \
	A(sidr_rep.class_port_info) A(sidr_rep.pdata)

#define FOR_FIELDS(attr, X, A)                                                 \
	do {                                                                   \
		switch (attr) {                                                \
		case CM_ATTR_REQ: REQ_FIELDS(X, A) break;                      \
		case CM_ATTR_MRA: MRA_FIELDS(X, A) break;                      \
		case CM_ATTR_REJ: REJ_FIELDS(X, A) break;                      \
		case CM_ATTR_REP: REP_FIELDS(X, A) break;                      \
		case CM_ATTR_RTU: RTU_FIELDS(X, A) break;                      \
		case CM_ATTR_DREQ: DREQ_FIELDS(X, A) break;                    \
		case CM_ATTR_DREP: DREP_FIELDS(X, A) break;                    \
		case CM_ATTR_SIDR_REQ: SIDR_REQ_FIELDS(X, A) break;            \
		case CM_ATTR_SIDR_REP: SIDR_REP_FIELDS(X, A) break;            \
		default: CHECK(0, "no field list for attribute %#x", attr);   \
		}                                                              \
	} while (0)

/* every field of got equals the one of want */
static void compare(const char *what, const struct cm_msg *want, const struct cm_msg *got)
{
#define CMP(f, max)                                                            \
	CHECK(got->f == want->f, "%s %s: " #f " is %#llx, want %#llx", what,     \
	      cm_attr_name(want->hdr.attr_id), (unsigned long long)got->f,     \
	      (unsigned long long)want->f);
#define CMPA(f)                                                                \
	CHECK(!memcmp(got->f, want->f, sizeof(want->f)), "%s %s: " #f " differs", what, \
	      cm_attr_name(want->hdr.attr_id));
	HDR_FIELDS(CMP)
	FOR_FIELDS(want->hdr.attr_id, CMP, CMPA);
#undef CMP
#undef CMPA
}

/* every field of got holds its largest value (arrays all 0xff) */
static void check_max(const struct cm_msg *got)
{
	size_t i;
#define ISMAX(f, max)                                                          \
	CHECK(got->f == (max), "all ones %s: " #f " is %#llx, want %#llx",       \
	      cm_attr_name(got->hdr.attr_id), (unsigned long long)got->f,      \
	      (unsigned long long)(max));
#define ISMAXA(f)                                                              \
	for (i = 0; i < sizeof(got->f); i++)                                   \
		if (got->f[i] != 0xff)                                         \
			break;                                                 \
	CHECK(i == sizeof(got->f), "all ones %s: " #f "[%zu] is %#x",          \
	      cm_attr_name(got->hdr.attr_id), i, i < sizeof(got->f) ? got->f[i] : 0);
	FOR_FIELDS(got->hdr.attr_id, ISMAX, ISMAXA);
#undef ISMAX
#undef ISMAXA
}

/* ---- expected bytes ------------------------------------------------------------ */

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	while (*s) {
		if (*s == ' ') {
			s++;
			continue;
		}
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

/* MAD bytes at CM data offset off are the hex string want */
#define EXPECT(mad, off, want) expect_bytes(__LINE__, mad, H + (off), want)

static void expect_bytes(int line, const uint8_t *mad, size_t at, const char *want)
{
	uint8_t w[64];
	size_t n = unhex(want, w), i;

	for (i = 0; i < n; i++)
		CHECK(mad[at + i] == w[i], "line %d: MAD byte %zu (CM data %zu) is %02x, want %02x", line,
		      at + i, at + i - H, mad[at + i], w[i]);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 3);
}

#define EXPECT_FILL(mad, off, n, seed) expect_fill(__LINE__, mad, off, n, seed)

static void expect_fill(int line, const uint8_t *mad, size_t off, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (mad[H + off + i] != (uint8_t)(seed + i * 3))
			break;
	CHECK(i == n, "line %d: array at CM data %zu, %zu bytes: byte %zu differs", line, off, n, i);
}

static void expect_zero(int line, const uint8_t *mad, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECK(!mad[H + off + i], "line %d: reserved CM data byte %zu is %02x", line, off + i,
		      mad[H + off + i]);
}

/* ---- 1. distinctive values ----------------------------------------------------- */

static void distinct(uint16_t attr, struct cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = CM_BASE_VERSION; /* what decode gives back */
	m->hdr.mgmt_class = CM_MGMT_CLASS;
	m->hdr.class_version = CM_CLASS_VERSION;
	m->hdr.method = CM_METHOD_SEND;
	m->hdr.status = 0x8001;
	m->hdr.class_specific = 0x0203;
	m->hdr.tid = 0xf1e2d3c4b5a69788ull;
	m->hdr.attr_id = attr;
	m->hdr.attr_mod = 0xdeadbeef;
	switch (attr) {
	case CM_ATTR_REQ:
		m->req.local_comm_id = 0x11223344;
		m->req.service_id = 0x0106000000000a0bull;
		m->req.local_ca_guid = 0xa1a2a3a4a5a6a7a8ull;
		m->req.local_qkey = 0x80010203;
		m->req.local_qpn = 0xffffff;
		m->req.responder_resources = 0x5a;
		m->req.local_eecn = 0x123456;
		m->req.initiator_depth = 0xa5;
		m->req.remote_eecn = 0xabcdef;
		m->req.remote_cm_response_timeout = 0x15; /* 10101 */
		m->req.transport_type = 2;
		m->req.flow_control = 1;
		m->req.starting_psn = 0xfedcba;
		m->req.local_cm_response_timeout = 31;
		m->req.retry_count = 5;
		m->req.pkey = 0x8001;
		m->req.path_mtu = 5;
		m->req.rdc_exists = 1;
		m->req.rnr_retry_count = 6;
		m->req.max_cm_retries = 0xb;
		m->req.srq = 1;
		m->req.extended_transport = 3;
		m->req.primary.local_lid = 0x1234;
		m->req.primary.remote_lid = 0xffff;
		fill(m->req.primary.local_gid, 16, 0x10);
		fill(m->req.primary.remote_gid, 16, 0x40);
		m->req.primary.flow_label = 0xabcde;
		m->req.primary.packet_rate = 0x2b; /* 101011 */
		m->req.primary.traffic_class = 0x6a;
		m->req.primary.hop_limit = 0x40;
		m->req.primary.sl = 9;
		m->req.primary.subnet_local = 1;
		m->req.primary.local_ack_timeout = 31;
		fill(m->req.pdata, CM_REQ_PDATA, 0x5c);
		break;
	case CM_ATTR_MRA:
		m->mra.local_comm_id = 0x01020304;
		m->mra.remote_comm_id = 0x05060708;
		m->mra.msg_mraed = CM_MSG_OTHER;
		m->mra.service_timeout = 31;
		fill(m->mra.pdata, CM_MRA_PDATA, 0x21);
		break;
	case CM_ATTR_REJ:
		m->rej.local_comm_id = 0x01020304;
		m->rej.remote_comm_id = 0x05060708;
		m->rej.msg_rejected = CM_MSG_REP;
		m->rej.ari_length = CM_REJ_ARI;
		m->rej.reason = CM_REJ_CONSUMER_DEFINED;
		fill(m->rej.ari, CM_REJ_ARI, 0x33);
		fill(m->rej.pdata, CM_REJ_PDATA, 0x77);
		break;
	case CM_ATTR_REP:
		m->rep.local_comm_id = 0x0a0b0c0d;
		m->rep.remote_comm_id = 0x11223344;
		m->rep.local_qkey = 0x80000001;
		m->rep.local_qpn = 0xabcdef;
		m->rep.local_eecn = 0xffffff;
		m->rep.starting_psn = 0x123456;
		m->rep.responder_resources = 0x10;
		m->rep.initiator_depth = 0x20;
		m->rep.target_ack_delay = 0x13; /* 10011 */
		m->rep.failover_accepted = 1;
		m->rep.flow_control = 1;
		m->rep.rnr_retry_count = 5;
		m->rep.srq = 1;
		m->rep.local_ca_guid = 0x0002c90300b1b2b3ull;
		fill(m->rep.pdata, CM_REP_PDATA, 0x90);
		break;
	case CM_ATTR_RTU:
		m->rtu.local_comm_id = 0x10203040;
		m->rtu.remote_comm_id = 0x50607080;
		fill(m->rtu.pdata, CM_RTU_PDATA, 0x01);
		break;
	case CM_ATTR_DREQ:
		m->dreq.local_comm_id = 0x10203040;
		m->dreq.remote_comm_id = 0x50607080;
		m->dreq.remote_qpn = 0xfedcba;
		fill(m->dreq.pdata, CM_DREQ_PDATA, 0x02);
		break;
	case CM_ATTR_DREP:
		m->drep.local_comm_id = 0x90a0b0c0;
		m->drep.remote_comm_id = 0xd0e0f000;
		fill(m->drep.pdata, CM_DREP_PDATA, 0x03);
		break;
	case CM_ATTR_SIDR_REQ:
		m->sidr_req.request_id = 0xcafef00d;
		m->sidr_req.pkey = 0xffff;
		m->sidr_req.service_id = 0x0106000000004e21ull;
		fill(m->sidr_req.pdata, CM_SIDR_REQ_PDATA, 0x04);
		break;
	case CM_ATTR_SIDR_REP:
		m->sidr_rep.request_id = 0xcafef00d;
		m->sidr_rep.status = CM_SIDR_REDIRECT;
		m->sidr_rep.add_info_length = 72;
		m->sidr_rep.qpn = 0x123456;
		m->sidr_rep.service_id = 0x0106000000004e21ull;
		m->sidr_rep.qkey = 0x11111111;
		fill(m->sidr_rep.class_port_info, 72, 0x05);
		fill(m->sidr_rep.pdata, CM_SIDR_REP_PDATA, 0x06);
		break;
	}
}

static void expect_distinct(uint16_t attr, const uint8_t *mad)
{
	uint8_t hdr[CM_MAD_HDR_SIZE];
	size_t i;

	unhex("01 07 02 03 80 01 02 03 f1 e2 d3 c4 b5 a6 97 88 00 00 00 00 de ad be ef", hdr);
	hdr[16] = (uint8_t)(attr >> 8);
	hdr[17] = (uint8_t)attr;
	for (i = 0; i < sizeof(hdr); i++)
		CHECK(mad[i] == hdr[i], "%s: MAD header byte %zu is %02x, want %02x", cm_attr_name(attr), i,
		      mad[i], hdr[i]);
	switch (attr) {
	case CM_ATTR_REQ:
		EXPECT(mad, 0, "11 22 33 44  00 00 00 00");
		EXPECT(mad, 8, "01 06 00 00 00 00 0a 0b  a1 a2 a3 a4 a5 a6 a7 a8");
		EXPECT(mad, 24, "00 00 00 00  80 01 02 03");
		EXPECT(mad, 32, "ff ff ff 5a"); /* QPN | responder resources */
		EXPECT(mad, 36, "12 34 56 a5"); /* EECN | initiator depth */
		EXPECT(mad, 40, "ab cd ef ad"); /* EECN | 10101 timeout, 10 transport, 1 flow control */
		EXPECT(mad, 44, "fe dc ba fd"); /* PSN | 11111 timeout, 101 retries */
		EXPECT(mad, 48, "80 01");       /* P_Key */
		EXPECT(mad, 50, "5e");          /* 0101 MTU, 1 RDC, 110 RNR retries */
		EXPECT(mad, 51, "bb");          /* 1011 CM retries, 1 SRQ, 011 extended */
		EXPECT(mad, 52, "12 34 ff ff");
		EXPECT_FILL(mad, 56, 16, 0x10);
		EXPECT_FILL(mad, 72, 16, 0x40);
		EXPECT(mad, 88, "ab cd e0 2b"); /* flow label 20 | resv 6 | rate 6 */
		EXPECT(mad, 92, "6a 40 98 f8"); /* TC, hop limit, 1001 SL 1 subnet local, 11111 ACK timeout */
		expect_zero(__LINE__, mad, 96, 44);
		EXPECT_FILL(mad, 140, CM_REQ_PDATA, 0x5c);
		break;
	case CM_ATTR_MRA:
		EXPECT(mad, 0, "01 02 03 04 05 06 07 08 80 f8");
		EXPECT_FILL(mad, 10, CM_MRA_PDATA, 0x21);
		break;
	case CM_ATTR_REJ:
		EXPECT(mad, 0, "01 02 03 04 05 06 07 08 40 90 00 1c");
		EXPECT_FILL(mad, 12, CM_REJ_ARI, 0x33);
		EXPECT_FILL(mad, 84, CM_REJ_PDATA, 0x77);
		break;
	case CM_ATTR_REP:
		EXPECT(mad, 0, "0a 0b 0c 0d 11 22 33 44 80 00 00 01");
		EXPECT(mad, 12, "ab cd ef 00 ff ff ff 00 12 34 56 00");
		EXPECT(mad, 24, "10 20 9b b0"); /* 10011 delay 01 failover 1 flow; 101 RNR 1 SRQ */
		EXPECT(mad, 28, "00 02 c9 03 00 b1 b2 b3");
		EXPECT_FILL(mad, 36, CM_REP_PDATA, 0x90);
		break;
	case CM_ATTR_RTU:
		EXPECT(mad, 0, "10 20 30 40 50 60 70 80");
		EXPECT_FILL(mad, 8, CM_RTU_PDATA, 0x01);
		break;
	case CM_ATTR_DREQ:
		EXPECT(mad, 0, "10 20 30 40 50 60 70 80 fe dc ba 00");
		EXPECT_FILL(mad, 12, CM_DREQ_PDATA, 0x02);
		break;
	case CM_ATTR_DREP:
		EXPECT(mad, 0, "90 a0 b0 c0 d0 e0 f0 00");
		EXPECT_FILL(mad, 8, CM_DREP_PDATA, 0x03);
		break;
	case CM_ATTR_SIDR_REQ:
		EXPECT(mad, 0, "ca fe f0 0d ff ff 00 00 01 06 00 00 00 00 4e 21");
		EXPECT_FILL(mad, 16, CM_SIDR_REQ_PDATA, 0x04);
		break;
	case CM_ATTR_SIDR_REP:
		EXPECT(mad, 0, "ca fe f0 0d 04 48 00 00 12 34 56 00");
		EXPECT(mad, 12, "01 06 00 00 00 00 4e 21 11 11 11 11");
		EXPECT_FILL(mad, 24, 72, 0x05);
		EXPECT_FILL(mad, 96, CM_SIDR_REP_PDATA, 0x06);
		break;
	}
}

static void test_distinct(void)
{
	uint8_t mad[CM_MAD_SIZE + 16];
	struct cm_msg m, d;
	size_t k;

	for (k = 0; k < N_ATTRS; k++) {
		distinct(attrs[k], &m);
		memset(mad, 0xee, sizeof(mad));
		CHECK(cm_mad_encode(&m, mad) == 0, "encode %s", cm_attr_name(attrs[k]));
		CHECK(mad[CM_MAD_SIZE] == 0xee, "encode %s wrote past 256 bytes", cm_attr_name(attrs[k]));
		expect_distinct(attrs[k], mad);
		memset(&d, 0xaa, sizeof(d));
		CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &d) == 0, "decode %s", cm_attr_name(attrs[k]));
		compare("distinct", &m, &d);
	}
}

/* ---- 2. every field all ones ---------------------------------------------------- */

static void test_all_ones(void)
{
	uint8_t mad[CM_MAD_SIZE], kept[CM_MAD_SIZE], want;
	struct cm_msg m, d;
	size_t k, i;

	for (k = 0; k < N_ATTRS; k++) {
		memset(&m, 0xff, sizeof(m));
		m.hdr.attr_id = attrs[k];
		CHECK(cm_mad_encode(&m, mad) == 0, "encode all ones %s", cm_attr_name(attrs[k]));
		kept_mask(attrs[k], kept);
		for (i = 0; i < CM_MAD_SIZE; i++) {
			switch (i) {
			case 0: want = CM_BASE_VERSION; break;
			case 1: want = CM_MGMT_CLASS; break;
			case 2: want = CM_CLASS_VERSION; break;
			case 3: want = CM_METHOD_SEND; break;
			case 16: want = (uint8_t)(attrs[k] >> 8); break;
			case 17: want = (uint8_t)attrs[k]; break;
			default: want = kept[i];
			}
			CHECK(mad[i] == want, "all ones %s: MAD byte %zu (CM data %ld) is %02x, want %02x",
			      cm_attr_name(attrs[k]), i, (long)i - H, mad[i], want);
		}
		if (attrs[k] == CM_ATTR_REJ) {
			/* ARI length 127: beyond the ARI's room */
			CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &d) == -EINVAL, "REJ with ARI length 127");
			m.rej.ari_length = CM_REJ_ARI;
			CHECK(cm_mad_encode(&m, mad) == 0, "encode");
		}
		CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &d) == 0, "decode all ones %s", cm_attr_name(attrs[k]));
		check_max(&d);
	}
}

/* ---- 3. one field at a time ------------------------------------------------------ */

/* m: one field set.  Its bits go into seen, and must not be there already. */
static void one_field(const struct cm_msg *m, const char *field, uint8_t seen[CM_MAD_SIZE])
{
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg d;
	size_t i;

	CHECK(cm_mad_encode(m, mad) == 0, "encode %s", field);
	for (i = H; i < CM_MAD_SIZE; i++) {
		CHECK(!(mad[i] & seen[i]), "%s %s: CM data byte %zu bits %02x belong to another field too",
		      cm_attr_name(m->hdr.attr_id), field, i - H, mad[i] & seen[i]);
		seen[i] |= mad[i];
	}
	CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &d) == 0, "decode %s", field);
	compare(field, m, &d);
}

static void test_one_field(void)
{
	uint8_t seen[CM_MAD_SIZE], kept[CM_MAD_SIZE];
	struct cm_msg m;
	size_t k, i;

#define START(m)                                                               \
	memset(&m, 0, sizeof(m));                                              \
	m.hdr.base_version = CM_BASE_VERSION;                                  \
	m.hdr.mgmt_class = CM_MGMT_CLASS;                                      \
	m.hdr.class_version = CM_CLASS_VERSION;                                \
	m.hdr.method = CM_METHOD_SEND;                                         \
	m.hdr.attr_id = attrs[k];
#define ONE(f, max)                                                            \
	START(m) m.f = (max);                                                  \
	one_field(&m, #f, seen);
#define ONEA(f)                                                                \
	START(m) memset(m.f, 0xff, sizeof(m.f));                               \
	one_field(&m, #f, seen);
	for (k = 0; k < N_ATTRS; k++) {
		memset(seen, 0, sizeof(seen));
		FOR_FIELDS(attrs[k], ONE, ONEA);
		kept_mask(attrs[k], kept);
		if (attrs[k] == CM_ATTR_REJ)
			kept[H + 9] = CM_REJ_ARI << 1; /* the largest ARI length decode takes */
		for (i = H; i < CM_MAD_SIZE; i++)
			CHECK(seen[i] == kept[i], "%s: CM data byte %zu: the fields cover %02x, want %02x",
			      cm_attr_name(attrs[k]), i - H, seen[i], kept[i]);
	}
#undef ONE
#undef ONEA
#undef START
}

/* ---- 4. reserved bits are not fields -------------------------------------------- */

static void test_reserved(void)
{
	uint8_t mad[CM_MAD_SIZE], again[CM_MAD_SIZE], kept[CM_MAD_SIZE];
	struct cm_msg m, clean, dirty;
	size_t k, i;

	for (k = 0; k < N_ATTRS; k++) {
		distinct(attrs[k], &m);
		cm_mad_encode(&m, mad);
		memset(&clean, 0, sizeof(clean));
		CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &clean) == 0, "decode %s", cm_attr_name(attrs[k]));
		kept_mask(attrs[k], kept);
		for (i = 0; i < CM_MAD_SIZE; i++)
			mad[i] |= (uint8_t)~kept[i];
		memset(&dirty, 0x55, sizeof(dirty));
		CHECK(cm_mad_decode(mad, CM_MAD_SIZE, &dirty) == 0, "decode %s with reserved bits set",
		      cm_attr_name(attrs[k]));
		compare("reserved bits set", &m, &dirty);
		CHECK(!memcmp(&clean, &dirty, sizeof(clean)), "%s: reserved bits changed the decode",
		      cm_attr_name(attrs[k]));
		/* and they are not sent on */
		cm_mad_encode(&dirty, again);
		for (i = 0; i < CM_MAD_SIZE; i++)
			CHECK(again[i] == (mad[i] & kept[i]), "%s: re-encode byte %zu is %02x, want %02x",
			      cm_attr_name(attrs[k]), i, again[i], mad[i] & kept[i]);
	}
}

/* ---- 5. what decode refuses ------------------------------------------------------- */

static void test_reject(void)
{
	static const uint16_t unknown[] = { 0x0000, CM_ATTR_CLASS_PORT_INFO, CM_ATTR_LAP, CM_ATTR_APR,
					    0x000f, 0x001b, 0x0110, 0xffff };
	uint8_t good[CM_MAD_SIZE + 64], bad[CM_MAD_SIZE + 64];
	struct cm_msg m, d;
	uint8_t *exact;
	size_t i;

	distinct(CM_ATTR_REQ, &m);
	memset(good, 0, sizeof(good));
	cm_mad_encode(&m, good);
	CHECK(cm_mad_decode(good, CM_MAD_SIZE, &d) == 0, "the good MAD");
	CHECK(cm_mad_decode(good, sizeof(good), &d) == 0, "a MAD with trailing bytes (len > 256)");
	CHECK(cm_mad_decode(good, CM_MAD_SIZE - 1, &d) == -EINVAL, "255 bytes");
	CHECK(cm_mad_decode(good, H, &d) == -EINVAL, "the header alone");
	CHECK(cm_mad_decode(good, 0, &d) == -EINVAL, "0 bytes");

	/* exactly 256 bytes on the heap: ASan (make asan) sees any read past */
	exact = malloc(CM_MAD_SIZE);
	CHECK(exact != NULL, "malloc");
	if (exact) {
		memcpy(exact, good, CM_MAD_SIZE);
		CHECK(cm_mad_decode(exact, CM_MAD_SIZE, &d) == 0, "a MAD of exactly 256 bytes");
		free(exact);
	}

#define BAD(byte, val, what)                                                   \
	do {                                                                   \
		memcpy(bad, good, sizeof(bad));                                \
		bad[byte] = (val);                                             \
		CHECK(cm_mad_decode(bad, CM_MAD_SIZE, &d) == -EINVAL, what);   \
	} while (0)
	BAD(0, 2, "base version 2");
	BAD(0, 0, "base version 0");
	BAD(1, 0x03, "class 0x03 (SA)");
	BAD(1, 0x87, "class 0x87");
	BAD(2, 1, "class version 1");
	BAD(2, 3, "class version 3");
	BAD(3, 0x01, "method Get");
	BAD(3, 0x02, "method Set");
	BAD(3, 0x81, "method GetResp");
	BAD(3, 0x83, "method 0x83 (Send with the response bit)");
#undef BAD
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		memcpy(bad, good, sizeof(bad));
		bad[16] = (uint8_t)(unknown[i] >> 8);
		bad[17] = (uint8_t)unknown[i];
		CHECK(cm_mad_decode(bad, CM_MAD_SIZE, &d) == -EINVAL, "attribute %#x", unknown[i]);
	}

	/* REJ: ARI length 72 is the room, 73 is refused (not clamped) */
	distinct(CM_ATTR_REJ, &m);
	m.rej.ari_length = 73;
	cm_mad_encode(&m, bad);
	CHECK(bad[H + 9] == 73 << 1, "ARI length 73 on the wire");
	CHECK(cm_mad_decode(bad, CM_MAD_SIZE, &d) == -EINVAL, "REJ with ARI length 73");
	bad[H + 9] = 72 << 1 | 1; /* and the reserved bit does not count */
	CHECK(cm_mad_decode(bad, CM_MAD_SIZE, &d) == 0 && d.rej.ari_length == 72, "REJ with ARI length 72");
	bad[H + 9] = 0;
	CHECK(cm_mad_decode(bad, CM_MAD_SIZE, &d) == 0 && d.rej.ari_length == 0, "REJ with ARI length 0");
}

/* ---- 6. encode's own duties; names -------------------------------------------------- */

static void test_encode(void)
{
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m;
	size_t i;

	/* the header constants come from the codec, not the struct */
	distinct(CM_ATTR_DREQ, &m);
	m.hdr.base_version = 9;
	m.hdr.mgmt_class = 0x81;
	m.hdr.class_version = 7;
	m.hdr.method = 0x81;
	CHECK(cm_mad_encode(&m, mad) == 0, "encode DREQ");
	CHECK(mad[0] == 1 && mad[1] == 7 && mad[2] == 2 && mad[3] == 3, "header constants %02x %02x %02x %02x",
	      mad[0], mad[1], mad[2], mad[3]);

	/* wider than the wire: truncated, neighbours untouched */
	m.dreq.remote_qpn = 0x12345678;
	cm_mad_encode(&m, mad);
	EXPECT(mad, 8, "34 56 78 00");
	distinct(CM_ATTR_REQ, &m);
	m.req.local_qpn = 0xff000001;
	m.req.responder_resources = 0;
	m.req.path_mtu = 0xf0 | 3;
	m.req.rdc_exists = 2;
	m.req.rnr_retry_count = 0x08;
	m.req.primary.flow_label = 0xfff00001;
	m.req.primary.packet_rate = 0xc1;
	cm_mad_encode(&m, mad);
	EXPECT(mad, 32, "00 00 01 00");
	EXPECT(mad, 50, "30");
	EXPECT(mad, 88, "00 00 10 01");

	/* an attribute without a layout: refused, nothing of msg written */
	memset(mad, 0xee, sizeof(mad));
	m.hdr.attr_id = CM_ATTR_LAP;
	CHECK(cm_mad_encode(&m, mad) == -EINVAL, "encode LAP");
	m.hdr.attr_id = 0x4242;
	CHECK(cm_mad_encode(&m, mad) == -EINVAL, "encode 0x4242");
	for (i = 0; i < CM_MAD_SIZE; i++)
		if (mad[i])
			break;
	CHECK(i == CM_MAD_SIZE, "a refused encode leaves the MAD zeroed");

	CHECK(!strcmp(cm_attr_name(CM_ATTR_REQ), "REQ"), "name of REQ");
	CHECK(!strcmp(cm_attr_name(CM_ATTR_SIDR_REP), "SIDR_REP"), "name of SIDR_REP");
	CHECK(!strcmp(cm_attr_name(CM_ATTR_DREP), "DREP"), "name of DREP");
	CHECK(!strcmp(cm_attr_name(0x4242), "?"), "name of 0x4242");
	for (i = 0; i < N_ATTRS; i++)
		CHECK(strcmp(cm_attr_name(attrs[i]), "?"), "attribute %#x has no name", attrs[i]);
}

int main(void)
{
	test_distinct();
	test_all_ones();
	test_one_field();
	test_reserved();
	test_reject();
	test_encode();
	if (fails) {
		fprintf(stderr, "u_cm_mad: %d checks failed\n", fails);
		return 1;
	}
	printf("u_cm_mad: all checks passed\n");
	return 0;
}

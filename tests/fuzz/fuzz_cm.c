/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_cm: the IB CM message codec (lib/rdmacm/cm_mad.c) on MADs from QP1.
 *
 * Input: the MAD as it arrives (GRH stripped), any length.  Invariants:
 *  - cm_mad_decode reads only the input (ASan: libFuzzer's buffer is
 *    exactly size bytes) and accepts exactly what the spec's rules below
 *    say it should: 256 bytes or more, base version 1, class 0x07, class
 *    version 2, method Send, an attribute with a layout, a REJ's ARI length
 *    within its 72 bytes;
 *  - what it accepted encodes again, and the encoding is the input's first
 *    256 bytes with the reserved bits (and a REQ's alternate path, which
 *    the codec drops) cleared: the table below is written from IBA Vol 1
 *    12.6, not from the codec;
 *  - decoding that encoding gives the same struct (memcmp: decode zeroes
 *    it first), and encoding that gives the same bytes.
 * The same bytes are also read as a struct cm_msg and encoded: whatever
 * encode writes that decode takes must come back to the same bytes.
 * UNIRDMA_FUZZ_WRITE_SEEDS=DIR fuzz_cm writes the seed corpus to DIR and
 * exits: one MAD of each message, and a few that decode must refuse. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_mad.h"

#define H CM_MAD_HDR_SIZE

static void fail(const char *what)
{
	fprintf(stderr, "fuzz invariant violated: %s\n", what);
	abort();
}

/* The reserved bits of each layout: CM data bytes off..off+len-1, mask. */
static const struct {
	uint16_t attr;
	uint8_t off, len, mask;
} resv[] = {
	{ CM_ATTR_REQ, 4, 4, 0xff },      { CM_ATTR_REQ, 24, 4, 0xff },     { CM_ATTR_REQ, 90, 1, 0x0f },
	{ CM_ATTR_REQ, 91, 1, 0xc0 },     { CM_ATTR_REQ, 94, 1, 0x07 },     { CM_ATTR_REQ, 95, 1, 0x07 },
	{ CM_ATTR_REQ, 96, 44, 0xff },    { CM_ATTR_MRA, 8, 1, 0x3f },      { CM_ATTR_MRA, 9, 1, 0x07 },
	{ CM_ATTR_REJ, 8, 1, 0x3f },      { CM_ATTR_REJ, 9, 1, 0x01 },      { CM_ATTR_REP, 15, 1, 0xff },
	{ CM_ATTR_REP, 19, 1, 0xff },     { CM_ATTR_REP, 23, 1, 0xff },     { CM_ATTR_REP, 27, 1, 0x0f },
	{ CM_ATTR_DREQ, 11, 1, 0xff },    { CM_ATTR_SIDR_REQ, 6, 2, 0xff }, { CM_ATTR_SIDR_REP, 6, 2, 0xff },
	{ CM_ATTR_SIDR_REP, 11, 1, 0xff },
};

static int has_layout(uint16_t attr)
{
	return attr >= CM_ATTR_REQ && attr <= CM_ATTR_SIDR_REP;
}

/* What decode must accept, from the rules alone. */
static int acceptable(const uint8_t *p, size_t size)
{
	uint16_t attr;

	if (size < CM_MAD_SIZE || p[0] != 1 || p[1] != 0x07 || p[2] != 2 || p[3] != 0x03)
		return 0;
	attr = (uint16_t)(p[16] << 8 | p[17]);
	if (!has_layout(attr))
		return 0;
	return attr != CM_ATTR_REJ || (p[H + 9] >> 1) <= CM_REJ_ARI;
}

static void check_mad(const uint8_t *data, size_t size)
{
	uint8_t want[CM_MAD_SIZE], e1[CM_MAD_SIZE], e2[CM_MAD_SIZE];
	struct cm_msg a, b;
	uint16_t attr;
	size_t i, k;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = cm_mad_decode(data, size, &a);
	if (rc != 0 && rc != -EINVAL)
		fail("decode: neither 0 nor -EINVAL");
	if ((rc == 0) != acceptable(data, size))
		fail(rc ? "decode refused a valid MAD" : "decode accepted an invalid MAD");
	if (rc)
		return;
	attr = (uint16_t)(data[16] << 8 | data[17]);
	if (a.hdr.attr_id != attr || strcmp(cm_attr_name(attr), "?") == 0)
		fail("decode: attribute");

	if (cm_mad_encode(&a, e1))
		fail("encode refused what decode accepted");
	memcpy(want, data, CM_MAD_SIZE);
	want[18] = want[19] = 0;
	for (i = 0; i < sizeof(resv) / sizeof(resv[0]); i++)
		if (resv[i].attr == attr)
			for (k = 0; k < resv[i].len; k++)
				want[H + resv[i].off + k] &= (uint8_t)~resv[i].mask;
	if (memcmp(e1, want, CM_MAD_SIZE))
		fail("encode(decode(m)) differs from m outside its reserved bits");

	memset(&b, 0, sizeof(b));
	if (cm_mad_decode(e1, CM_MAD_SIZE, &b))
		fail("decode refused what encode wrote");
	if (memcmp(&a, &b, sizeof(a)))
		fail("decode(encode(decode(m))) differs from decode(m)");
	if (cm_mad_encode(&b, e2) || memcmp(e1, e2, CM_MAD_SIZE))
		fail("encode is not stable");
}

/* The input as a struct: encode must stay within 256 bytes (ASan, the
 * guard) and whatever decode takes back re-encodes to the same bytes. */
static void check_struct(const uint8_t *data, size_t size)
{
	uint8_t e1[CM_MAD_SIZE + 1], e2[CM_MAD_SIZE];
	struct cm_msg m, d;

	memset(&m, 0, sizeof(m));
	memcpy(&m, data, size < sizeof(m) ? size : sizeof(m));
	e1[CM_MAD_SIZE] = 0xa5;
	if (cm_mad_encode(&m, e1) != (has_layout(m.hdr.attr_id) ? 0 : -EINVAL))
		fail("encode: which attributes it takes");
	if (e1[CM_MAD_SIZE] != 0xa5)
		fail("encode wrote past 256 bytes");
	memset(&d, 0, sizeof(d));
	if (cm_mad_decode(e1, CM_MAD_SIZE, &d))
		return;
	if (cm_mad_encode(&d, e2) || memcmp(e1, e2, CM_MAD_SIZE))
		fail("encode(decode(encode(s))) differs from encode(s)");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_mad(data, size);
	check_struct(data, size);
	return 0;
}

/* ---- seeds --------------------------------------------------------------- */

static void write_seed(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(b, 1, n, fp) != n || fclose(fp)) {
		perror(path);
		exit(1);
	}
}

static void encode_seed(const char *dir, const char *name, const struct cm_msg *m)
{
	uint8_t mad[CM_MAD_SIZE];

	if (cm_mad_encode(m, mad)) {
		fprintf(stderr, "seed %s: encode failed\n", name);
		exit(1);
	}
	write_seed(dir, name, mad, sizeof(mad));
}

/* A connection as rdma_cm makes one over RoCE: REQ, REP, RTU, DREQ, DREP,
 * an MRA and a REJ on the way, and a SIDR exchange for a UD port space. */
static void write_seeds(const char *dir)
{
	static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000001ull;
	m.hdr.attr_id = CM_ATTR_REQ;
	m.req.local_comm_id = 0x1a2b3c4d;
	m.req.service_id = 0x0000000001064e21ull; /* RDMA_PS_TCP, port 20001 */
	m.req.local_ca_guid = 0x0002c9fffe000001ull;
	m.req.local_qpn = 0x000011;
	m.req.responder_resources = 16;
	m.req.initiator_depth = 16;
	m.req.remote_cm_response_timeout = 20;
	m.req.flow_control = 1;
	m.req.starting_psn = 0x6c29a1;
	m.req.local_cm_response_timeout = 20;
	m.req.retry_count = 7;
	m.req.pkey = 0xffff;
	m.req.path_mtu = 3;
	m.req.rnr_retry_count = 7;
	m.req.max_cm_retries = 15;
	m.req.primary.local_lid = 0xffff;
	m.req.primary.remote_lid = 0xffff;
	memcpy(m.req.primary.local_gid, gid_a, 16);
	memcpy(m.req.primary.remote_gid, gid_b, 16);
	m.req.primary.packet_rate = 3;
	m.req.primary.hop_limit = 64;
	m.req.primary.local_ack_timeout = 14;
	m.req.pdata[0] = 0x00; /* rdma_cm's IP header: version 4 */
	m.req.pdata[1] = 0x40;
	encode_seed(dir, "REQ", &m);

	/* the same REQ with every reserved bit and the alternate path set */
	cm_mad_encode(&m, mad);
	mad[18] = mad[19] = 0xff;
	memset(mad + H + 4, 0xff, 4);
	memset(mad + H + 24, 0xff, 4);
	mad[H + 90] |= 0x0f;
	mad[H + 91] |= 0xc0;
	mad[H + 94] |= 0x07;
	mad[H + 95] |= 0x07;
	memset(mad + H + 96, 0xa5, 44);
	write_seed(dir, "REQ-reserved-set", mad, sizeof(mad));
	write_seed(dir, "REQ-short", mad, CM_MAD_SIZE - 1);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000001ull;
	m.hdr.attr_id = CM_ATTR_MRA;
	m.mra.local_comm_id = 0x5e6f7081;
	m.mra.remote_comm_id = 0x1a2b3c4d;
	m.mra.msg_mraed = CM_MSG_REQ;
	m.mra.service_timeout = 23;
	encode_seed(dir, "MRA", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000001ull;
	m.hdr.attr_id = CM_ATTR_REP;
	m.rep.local_comm_id = 0x5e6f7081;
	m.rep.remote_comm_id = 0x1a2b3c4d;
	m.rep.local_qpn = 0x000012;
	m.rep.starting_psn = 0x0a0b0c;
	m.rep.responder_resources = 16;
	m.rep.initiator_depth = 16;
	m.rep.target_ack_delay = 15;
	m.rep.flow_control = 1;
	m.rep.rnr_retry_count = 7;
	m.rep.local_ca_guid = 0x0002c9fffe000002ull;
	encode_seed(dir, "REP", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000001ull;
	m.hdr.attr_id = CM_ATTR_REJ;
	m.rej.local_comm_id = 0x5e6f7081;
	m.rej.remote_comm_id = 0x1a2b3c4d;
	m.rej.msg_rejected = CM_MSG_REQ;
	m.rej.reason = CM_REJ_CONSUMER_DEFINED;
	m.rej.ari_length = 4;
	memcpy(m.rej.ari, "\x00\x00\x00\x01", 4);
	encode_seed(dir, "REJ", &m);
	m.rej.ari_length = CM_REJ_ARI + 1; /* refused */
	encode_seed(dir, "REJ-ari-73", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000002ull;
	m.hdr.attr_id = CM_ATTR_RTU;
	m.rtu.local_comm_id = 0x1a2b3c4d;
	m.rtu.remote_comm_id = 0x5e6f7081;
	encode_seed(dir, "RTU", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000003ull;
	m.hdr.attr_id = CM_ATTR_DREQ;
	m.dreq.local_comm_id = 0x1a2b3c4d;
	m.dreq.remote_comm_id = 0x5e6f7081;
	m.dreq.remote_qpn = 0x000012;
	encode_seed(dir, "DREQ", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000003ull;
	m.hdr.attr_id = CM_ATTR_DREP;
	m.drep.local_comm_id = 0x5e6f7081;
	m.drep.remote_comm_id = 0x1a2b3c4d;
	encode_seed(dir, "DREP", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000004ull;
	m.hdr.attr_id = CM_ATTR_SIDR_REQ;
	m.sidr_req.request_id = 0x77665544;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = 0x0000000001114e21ull; /* RDMA_PS_UDP, port 20001 */
	encode_seed(dir, "SIDR_REQ", &m);

	memset(&m, 0, sizeof(m));
	m.hdr.tid = 0x0000000100000004ull;
	m.hdr.attr_id = CM_ATTR_SIDR_REP;
	m.sidr_rep.request_id = 0x77665544;
	m.sidr_rep.status = CM_SIDR_SUCCESS;
	m.sidr_rep.qpn = 0x000013;
	m.sidr_rep.service_id = 0x0000000001114e21ull;
	m.sidr_rep.qkey = 0x01234567; /* RDMA_UDP_QKEY */
	encode_seed(dir, "SIDR_REP", &m);

	/* a LAP: a CM attribute the codec has no layout for */
	memset(&m, 0, sizeof(m));
	m.hdr.attr_id = CM_ATTR_RTU;
	cm_mad_encode(&m, mad);
	mad[17] = CM_ATTR_LAP;
	write_seed(dir, "LAP", mad, sizeof(mad));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("UNIRDMA_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

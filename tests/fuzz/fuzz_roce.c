/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_roce: the RoCEv2 codec (common/roce.c) on bytes from the network.
 *
 * Input: source IPv4 address (4 bytes), destination (4), UDP source port
 * (2), then the UDP payload (BTH .. ICRC).  Invariants:
 *  - roce_parse reads only the packet (ASan) and, when it accepts, the
 *    lengths add up and the payload lies inside the packet;
 *  - roce_build of what was parsed gives back the packet's header bytes,
 *    except what the parser does not keep (BTH byte 4, resv7, DETH's resv8;
 *    P_Key 0 builds as 0xffff);
 *  - roce_icrc_check's answer agrees with roce_icrc_calc: the ID it names
 *    does give the ICRC on the wire, and for ID 0 when it says ID 0.
 * UNIRDMA_FUZZ_WRITE_SEEDS=DIR fuzz_roce writes the seed corpus to DIR and
 * exits: ROCE.md's two captured packets and one packet of each opcode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

static void fail(const char *what)
{
	fprintf(stderr, "fuzz invariant violated: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hb[ROCE_MAX_HDR_LEN], want[ROCE_MAX_HDR_LEN];
	uint32_t sa, da, hl, wire;
	struct roce_hdr h;
	const uint8_t *p;
	uint16_t sport, id = 0;
	size_t len;
	uint32_t f;

	if (size < 10)
		return 0;
	memcpy(&sa, data, 4);
	memcpy(&da, data + 4, 4);
	sport = (uint16_t)(data[8] << 8 | data[9]);
	p = data + 10;
	len = size - 10;

	if (roce_parse(p, len, &h) == 0) {
		f = roce_op_flags(h.opcode);
		hl = roce_hdr_len(h.opcode);
		if (!f || hl + h.payload_len + h.pad + ROCE_ICRC_LEN != len)
			fail("parse: lengths");
		if (h.payload_len && (h.payload != p + hl || !(f & ROCE_F_PAYLOAD)))
			fail("parse: payload");
		if (roce_build(hb, &h) != hl)
			fail("build: length");
		memcpy(want, p, hl);
		want[4] = 0;
		want[8] &= 0x80;
		if (!want[2] && !want[3])
			want[2] = want[3] = 0xff;
		if (f & ROCE_F_DETH)
			want[ROCE_BTH_LEN + ((f & ROCE_F_RETH) ? ROCE_RETH_LEN : 0) + 4] = 0;
		if (memcmp(hb, want, hl))
			fail("build(parse(p)) differs from p");
	}
	if (roce_icrc_check(sa, da, sport, p, len, &id)) {
		wire = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 | (uint32_t)p[len - 2] << 16 |
		       (uint32_t)p[len - 1] << 24;
		if (roce_icrc_calc(sa, da, sport, id, p, len) != wire)
			fail("icrc_check named an ID that does not give the wire ICRC");
	} else if (len >= ROCE_BTH_LEN + ROCE_ICRC_LEN && len <= ROCE_MAX_UDP_PAYLOAD) {
		wire = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 | (uint32_t)p[len - 2] << 16 |
		       (uint32_t)p[len - 1] << 24;
		if (roce_icrc_calc(sa, da, sport, 0, p, len) == wire)
			fail("icrc_check refused a packet right for ID 0");
	}
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

static void write_seeds(const char *dir)
{
	/* ROCE.md 1.4: rxe's ACK with IP ID 0x5c85, our SEND_ONLY with ID 0 */
	static const uint8_t v1[] = { 10, 199, 0, 2, 10, 199, 0, 1, 0xf6, 0xad, 0x11, 0x00, 0xff, 0xff, 0x00,
				      0x00, 0x0a, 0xbf, 0x00, 0x06, 0x6c, 0x29, 0x1f, 0x00, 0x00, 0x01, 0x6f, 0xbb,
				      0x03, 0xed };
	uint8_t b[10 + 200];
	struct roce_hdr h;
	uint32_t n, c, sa = 0x0100000a, da = 0x0200000a; /* 10.0.0.1, 10.0.0.2 */
	unsigned op;
	char name[64];

	write_seed(dir, "rxe-ack-id5c85", v1, sizeof(v1));
	for (op = 0; op < 256; op++) {
		uint32_t f = roce_op_flags((uint8_t)op);

		if (!f)
			continue;
		memset(&h, 0, sizeof(h));
		h.opcode = (uint8_t)op;
		h.dqpn = 0x11;
		h.psn = op;
		h.ackreq = f & ROCE_F_LAST;
		h.va = 0x1000;
		h.rkey = 0x1234;
		h.dmalen = 13;
		h.syndrome = 0x1f;
		h.qkey = ROCE_GSI_QKEY;
		h.sqpn = 1;
		h.imm_be = 0x01020304;
		h.pad = (f & ROCE_F_PAYLOAD) ? 3 : 0;
		if ((f & ROCE_F_PAYLOAD) && !(f & ROCE_F_LAST))
			h.pad = 0;
		memcpy(b, &sa, 4);
		memcpy(b + 4, &da, 4);
		b[8] = 0xc0;
		b[9] = (uint8_t)op;
		n = roce_build(b + 10, &h);
		if (f & ROCE_F_PAYLOAD) {
			uint32_t pl = (f & ROCE_F_LAST) ? 13 : 16;

			memset(b + 10 + n, 0x7b, pl);
			memset(b + 10 + n + pl, 0, h.pad);
			n += pl + h.pad;
		}
		c = roce_icrc_start(sa, da, (uint16_t)(0xc000 | op), 0, (uint16_t)(8 + n + 4), b + 10);
		c = roce_icrc_add(c, b + 10 + ROCE_BTH_LEN, n - ROCE_BTH_LEN);
		roce_icrc_put(c, b + 10 + n);
		snprintf(name, sizeof(name), "%s", roce_op_name((uint8_t)op));
		write_seed(dir, name, b, 10 + n + 4);
	}
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

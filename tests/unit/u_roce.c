/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* u_roce: the RoCEv2 codec of common/roce.h, on its own.
 *
 * 1. The CRC: both engines (PCLMUL folding for 64 bytes and more, slice-by-8
 *    for the rest) against a bit-at-a-time CRC-32, any length, alignment
 *    and split; the check value of "123456789"; the 8-byte LRH seed.
 * 2. ROCE.md 1.4's two captured packets byte for byte: headers from
 *    roce_build, ICRC from start/add/put; roce_icrc_check finds rxe's IP ID
 *    0x5c85 in the first and ID 0 in the second.
 * 3. Every opcode: build -> parse round trip of every field, the table's
 *    header lengths and flags; parse rejects what it must.
 * 4. The ICRC check: random packets with random IP IDs are accepted with
 *    that ID; corrupted ones are refused (always for the exact ID-0 check,
 *    and at most about 2^-16 of the time with the ID solver).
 * 5. Random bytes into roce_parse and roce_icrc_check (run it under ASan
 *    too: make asan; build-asan/tests/u_roce).
 * 6. Prints roce_icrc_add's speed on 4 KiB (not a check). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce.h"
#include "unit.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so a failure repeats */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	int k;

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	while (*s) {
		if (*s == ' ' || *s == '|') {
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

static void test_crc(void)
{
	static uint8_t buf[70000];
	size_t i, len, off, cut;
	uint32_t c, ref;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	CHECK(roce_icrc_add(0, "123456789", 9) == 0xcbf43926u, "check value %08x",
	      roce_icrc_add(0, "123456789", 9));
	memset(buf + 60000, 0xff, 8);
	CHECK(~roce_icrc_add(0, buf + 60000, 8) == 0xdebb20e3u, "seed of the masked LRH");
	for (len = 0; len <= 600; len++) {
		off = rnd() % 64;
		ref = crc_bitwise(0, buf + off, len);
		c = roce_icrc_add(0, buf + off, len);
		CHECK(c == ref, "len %zu off %zu: %08x != %08x", len, off, c, ref);
		cut = len ? rnd() % len : 0;
		c = roce_icrc_add(roce_icrc_add(0, buf + off, cut), buf + off + cut, len - cut);
		CHECK(c == ref, "len %zu split at %zu", len, cut);
	}
	for (i = 0; i < 40; i++) {
		len = rnd() % 65536;
		off = rnd() % 64;
		ref = crc_bitwise(0x12345678, buf + off, len);
		CHECK(roce_icrc_add(0x12345678, buf + off, len) == ref, "long len %zu off %zu", len, off);
		/* the slice-by-8 path alone: pieces under 64 bytes */
		c = 0x12345678;
		for (cut = 0; cut < len; cut += 63)
			c = roce_icrc_add(c, buf + off + cut, len - cut < 63 ? len - cut : 63);
		CHECK(c == ref, "long len %zu in 63-byte pieces", len);
	}
}

/* ROCE.md 1.4, vector 1: an RC ACK from kernel rxe (IP ID 0x5c85). */
static const char v1_ip[] = "45 00 00 30 5c 85 40 00 40 11 c8 a7 0a c7 00 02 0a c7 00 01";
static const char v1_udp[] = "f6 ad 12 b7 00 1c 00 00";
static const char v1_roce[] = "11 00 ff ff 00 00 0a bf 00 06 6c 29 1f 00 00 01 6f bb 03 ed";
/* vector 2: RC SEND_ONLY through a UDP socket (ID 0), 64 bytes of 0x7b */
static const char v2_ip[] = "4500006c 00004000 401124f1 0ac70001 0ac70002";
static const char v2_udp[] = "12b712b7 005815fa";
static const char v2_bth[] = "0400ffff 00000011 80066c29";
static const char v2_icrc[] = "e1 76 94 9f";

static void test_vectors(void)
{
	uint8_t ip[20], udp[8], want[128], got[128], bth[12], icrc[4];
	struct roce_hdr h;
	uint32_t saddr, daddr, n, c;
	size_t wl;
	uint16_t id = 0xdead;

	/* 1: build the ACK */
	unhex(v1_ip, ip);
	unhex(v1_udp, udp);
	wl = unhex(v1_roce, want);
	memcpy(&saddr, ip + 12, 4);
	memcpy(&daddr, ip + 16, 4);
	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_RC_ACK;
	h.pkey = 0xffff;
	h.dqpn = 0xabf;
	h.psn = 0x066c29;
	h.syndrome = 0x1f;
	h.msn = 1;
	n = roce_build(got, &h);
	CHECK(n == 16 && wl == 20, "ACK headers %u bytes", n);
	c = roce_icrc_start(saddr, daddr, 63149, 0x5c85, 28, got);
	c = roce_icrc_add(c, got + 12, n - 12);
	roce_icrc_put(c, got + n);
	CHECK(!memcmp(got, want, wl), "vector 1 differs");
	CHECK(roce_icrc_check(saddr, daddr, 63149, want, wl, &id) && id == 0x5c85,
	      "vector 1: check found ID %#x", id);
	CHECK(roce_icrc_calc(saddr, daddr, 63149, 0x5c85, want, wl) == 0xed03bb6fu, "vector 1 calc");
	CHECK(roce_parse(want, wl, &h) == 0 && h.opcode == ROCE_RC_ACK && h.dqpn == 0xabf &&
		      h.psn == 0x066c29 && h.syndrome == 0x1f && h.msn == 1 && !h.ackreq && h.pkey == 0xffff,
	      "vector 1 parse");

	/* 2: build the SEND_ONLY (pkey 0 builds as 0xffff) */
	unhex(v2_ip, ip);
	unhex(v2_udp, udp);
	unhex(v2_bth, bth);
	unhex(v2_icrc, icrc);
	memcpy(&saddr, ip + 12, 4);
	memcpy(&daddr, ip + 16, 4);
	memcpy(want, bth, 12);
	memset(want + 12, 0x7b, 64);
	memcpy(want + 76, icrc, 4);
	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_RC_SEND_ONLY;
	h.dqpn = 0x11;
	h.psn = 0x066c29;
	h.ackreq = true;
	n = roce_build(got, &h);
	CHECK(n == 12, "SEND_ONLY headers %u bytes", n);
	memset(got + 12, 0x7b, 64);
	c = roce_icrc_start(saddr, daddr, 4791, 0, 88, got);
	c = roce_icrc_add(c, got + 12, 64);
	roce_icrc_put(c, got + 76);
	CHECK(!memcmp(got, want, 80), "vector 2 differs");
	id = 0xdead;
	CHECK(roce_icrc_check(saddr, daddr, 4791, want, 80, &id) && id == 0, "vector 2: ID %#x", id);
	CHECK(roce_parse(want, 80, &h) == 0 && h.payload == want + 12 && h.payload_len == 64 && h.ackreq &&
		      h.dqpn == 0x11,
	      "vector 2 parse");
	/* the wrong addresses or port fail */
	CHECK(!roce_icrc_check(daddr, saddr, 4791, want, 80, NULL), "swapped addresses pass");
	CHECK(!roce_icrc_check(saddr, daddr, 4792, want, 80, NULL), "other sport passes");
}

static void random_fields(struct roce_hdr *h, uint8_t op)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->se = rnd() & 1;
	h->mig = rnd() & 1;
	h->ackreq = rnd() & 1;
	h->pkey = (uint16_t)(rnd() | 1);
	h->dqpn = rnd() & 0xffffff;
	h->psn = rnd() & 0xffffff;
	h->va = rnd();
	h->rkey = (uint32_t)rnd();
	h->dmalen = (uint32_t)rnd();
	h->syndrome = (uint8_t)rnd();
	h->msn = rnd() & 0xffffff;
	h->qkey = (uint32_t)rnd();
	h->sqpn = rnd() & 0xffffff;
	h->imm_be = (uint32_t)rnd();
	h->swap_add = rnd();
	h->cmp = rnd();
	h->orig = rnd();
	h->ieth_rkey = (uint32_t)rnd();
}

/* Builds a whole UDP payload for h with plen payload bytes; returns its length. */
static size_t make_packet(uint8_t *pkt, struct roce_hdr *h, uint32_t plen, uint32_t saddr, uint32_t daddr,
			  uint16_t sport, uint16_t ip_id)
{
	uint32_t n, c;
	size_t i;

	h->pad = (roce_op_flags(h->opcode) & ROCE_F_PAYLOAD) ? (uint8_t)((-plen) & 3) : 0;
	n = roce_build(pkt, h);
	for (i = 0; i < plen; i++)
		pkt[n + i] = (uint8_t)rnd();
	memset(pkt + n + plen, 0, h->pad);
	n += plen + h->pad;
	c = roce_icrc_start(saddr, daddr, sport, ip_id, (uint16_t)(8 + n + 4), pkt);
	c = roce_icrc_add(c, pkt + 12, n - 12);
	roce_icrc_put(c, pkt + n);
	return n + 4;
}

static const uint8_t known[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
				 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
				 /* UC */
				 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b,
				 0x64, 0x65 };

static void test_opcodes(void)
{
	static const struct {
		uint8_t op;
		uint32_t hl;
	} lens[] = { { ROCE_RC_SEND_FIRST, 12 },     { ROCE_RC_SEND_LAST_IMM, 16 }, { ROCE_RC_WRITE_FIRST, 28 },
		     { ROCE_RC_WRITE_ONLY_IMM, 32 }, { ROCE_RC_READ_REQUEST, 28 },  { ROCE_RC_READ_RESP_MIDDLE, 12 },
		     { ROCE_RC_READ_RESP_ONLY, 16 }, { ROCE_RC_ACK, 16 },           { ROCE_RC_ATOMIC_ACK, 24 },
		     { ROCE_RC_CMP_SWAP, 40 },       { ROCE_RC_FETCH_ADD, 40 },     { ROCE_RC_SEND_ONLY_INV, 16 },
		     { ROCE_UD_SEND_ONLY, 20 },      { ROCE_UD_SEND_ONLY_IMM, 24 } };
	uint8_t pkt[2048], bad[2048];
	struct roce_hdr h, g;
	unsigned i, k, nknown = 0, op;
	uint32_t f, plen;
	size_t len;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		CHECK(roce_hdr_len(lens[i].op) == lens[i].hl, "hdr_len(%#x) = %u", lens[i].op,
		      roce_hdr_len(lens[i].op));
	/* flags the lead relies on */
	f = roce_op_flags(ROCE_RC_SEND_ONLY);
	CHECK((f & (ROCE_F_FIRST | ROCE_F_LAST | ROCE_F_ONLY | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_PAYLOAD)) ==
		      (ROCE_F_FIRST | ROCE_F_LAST | ROCE_F_ONLY | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_PAYLOAD),
	      "SEND_ONLY flags %#x", f);
	CHECK(roce_op_flags(ROCE_RC_WRITE_MIDDLE) & ROCE_F_MIDDLE, "WRITE_MIDDLE");
	CHECK(!(roce_op_flags(ROCE_RC_READ_RESP_FIRST) & (ROCE_F_REQ | ROCE_F_ACK)), "read response is no ACK");
	CHECK((roce_op_flags(ROCE_RC_ATOMIC_ACK) & (ROCE_F_ACK | ROCE_F_AETH | ROCE_F_ATMACK)) ==
		      (ROCE_F_ACK | ROCE_F_AETH | ROCE_F_ATMACK),
	      "ATOMIC_ACK");
	CHECK(roce_op_flags(ROCE_RC_FETCH_ADD) & ROCE_F_ATOMIC, "FETCH_ADD");
	CHECK(roce_op_flags(ROCE_RC_WRITE_LAST_IMM) & ROCE_F_IMM, "WRITE_LAST_IMM");
	/* UC: the RC layout + 0x20, flagged UC, same headers */
	for (op = ROCE_RC_SEND_FIRST; op <= ROCE_RC_WRITE_ONLY_IMM; op++)
		CHECK(roce_op_flags((uint8_t)(op + 0x20)) == (roce_op_flags((uint8_t)op) | ROCE_F_UC) &&
			      roce_hdr_len((uint8_t)(op + 0x20)) == roce_hdr_len((uint8_t)op) &&
			      !(roce_op_flags((uint8_t)op) & ROCE_F_UC),
		      "UC opcode %#x", op + 0x20);
	CHECK(roce_op_from_name("send_only") == ROCE_RC_SEND_ONLY &&
		      roce_op_from_name("UD_SEND_ONLY_IMM") == ROCE_UD_SEND_ONLY_IMM &&
		      roce_op_from_name("0x11") == ROCE_RC_ACK && roce_op_from_name("20") == ROCE_RC_FETCH_ADD &&
		      roce_op_from_name("0x15") == -EINVAL && roce_op_from_name("0x2c") == -EINVAL &&
		      roce_op_from_name("uc_write_only_imm") == ROCE_UC_WRITE_ONLY_IMM &&
		      roce_op_from_name("bogus") == -EINVAL && roce_op_from_name("0x1zz") == -EINVAL &&
		      roce_op_from_name("") == -EINVAL,
	      "roce_op_from_name");

	for (op = 0; op < 256; op++) {
		f = roce_op_flags((uint8_t)op);
		for (k = 0; k < sizeof(known) && known[k] != op; k++)
			;
		if (k == sizeof(known)) {
			/* unknown: no flags, no length, no build, no parse */
			memset(&h, 0, sizeof(h));
			h.opcode = (uint8_t)op;
			memset(pkt, 0, 64);
			pkt[0] = (uint8_t)op;
			CHECK(!f && !roce_hdr_len((uint8_t)op) && !roce_op_name((uint8_t)op) && !roce_build(bad, &h) &&
				      roce_parse(pkt, 64, &g) == -EINVAL,
			      "opcode %#x should be unknown", op);
			continue;
		}
		nknown++;
		CHECK(f & ROCE_F_VALID, "opcode %#x flags %#x", op, f);
		CHECK(!strcmp(roce_op_name((uint8_t)op), roce_op_name((uint8_t)roce_op_from_name(roce_op_name((uint8_t)op)))),
		      "name of %#x", op);
		CHECK(!!(f & ROCE_F_ONLY) == ((f & (ROCE_F_FIRST | ROCE_F_LAST)) == (ROCE_F_FIRST | ROCE_F_LAST)),
		      "opcode %#x: ONLY iff FIRST and LAST", op);
		CHECK(!!(f & ROCE_F_REQ) == !(f & (ROCE_F_ACK | ROCE_F_READ_RESP)), "opcode %#x: REQ", op);
		for (i = 0; i < 200; i++) {
			random_fields(&h, (uint8_t)op);
			plen = 0;
			if (f & ROCE_F_PAYLOAD) {
				plen = (uint32_t)(rnd() % 1500);
				if (!(f & ROCE_F_LAST))
					plen &= ~3u;
			}
			len = make_packet(pkt, &h, plen, htonl(0x0a000001), htonl(0x0a000002), 0xc123, 0);
			CHECK(len == roce_hdr_len((uint8_t)op) + plen + h.pad + 4, "opcode %#x: length", op);
			if (roce_parse(pkt, len, &g)) {
				CHECK(0, "opcode %#x: own packet does not parse", op);
				break;
			}
			CHECK(roce_icrc_check(htonl(0x0a000001), htonl(0x0a000002), 0xc123, pkt, len, NULL),
			      "opcode %#x: own ICRC", op);
			CHECK(g.opcode == op && g.se == h.se && g.mig == h.mig && g.ackreq == h.ackreq &&
				      g.pad == h.pad && g.pkey == h.pkey && g.dqpn == h.dqpn && g.psn == h.psn,
			      "opcode %#x: BTH", op);
			CHECK(g.payload_len == plen && (!plen || g.payload == pkt + roce_hdr_len((uint8_t)op)),
			      "opcode %#x: payload", op);
#define FIELD(flag, field) CHECK(g.field == ((f & (flag)) ? h.field : 0), "opcode %#x: " #field, op)
			FIELD(ROCE_F_RETH | ROCE_F_ATMETH, va);
			FIELD(ROCE_F_RETH | ROCE_F_ATMETH, rkey);
			FIELD(ROCE_F_RETH, dmalen);
			FIELD(ROCE_F_AETH, syndrome);
			FIELD(ROCE_F_AETH, msn);
			FIELD(ROCE_F_DETH, qkey);
			FIELD(ROCE_F_DETH, sqpn);
			FIELD(ROCE_F_IMM, imm_be);
			FIELD(ROCE_F_ATMETH, swap_add);
			FIELD(ROCE_F_ATMETH, cmp);
			FIELD(ROCE_F_ATMACK, orig);
			FIELD(ROCE_F_IETH, ieth_rkey);
#undef FIELD
		}
		/* 24-bit fields are masked when built */
		random_fields(&h, (uint8_t)op);
		h.dqpn = 0xff123456;
		h.psn = 0xfe654321;
		h.msn = 0xfdabcdef;
		h.sqpn = 0xfc111111;
		len = make_packet(pkt, &h, 0, 1, 2, 3, 0);
		CHECK(!roce_parse(pkt, len, &g) && g.dqpn == 0x123456 && g.psn == 0x654321 &&
			      g.msn == ((f & ROCE_F_AETH) ? 0xabcdefu : 0) &&
			      g.sqpn == ((f & ROCE_F_DETH) ? 0x111111u : 0),
		      "opcode %#x: 24-bit fields", op);
		/* rejects */
		CHECK(roce_parse(pkt, roce_hdr_len((uint8_t)op) + 3, &g) == -EINVAL, "opcode %#x: short", op);
		CHECK(roce_parse(pkt, 15, &g) == -EINVAL, "opcode %#x: shorter than BTH+ICRC", op);
		memcpy(bad, pkt, len);
		bad[1] |= 1; /* TVer 1 */
		CHECK(roce_parse(bad, len, &g) == -EINVAL, "opcode %#x: TVer 1", op);
		memcpy(bad, pkt, len);
		bad[1] = (uint8_t)((bad[1] & ~0x30) | 0x10); /* pad 1 */
		if (!(f & ROCE_F_PAYLOAD)) {
			CHECK(roce_parse(bad, len, &g) == -EINVAL, "opcode %#x: pad without payload", op);
			memset(bad + len, 0, 4);
			CHECK(roce_parse(bad, len + 4, &g) == -EINVAL, "opcode %#x: payload where none", op);
		} else {
			/* pad 1 with no payload: longer than the bytes after the headers */
			CHECK(roce_parse(bad, len, &g) == -EINVAL, "opcode %#x: pad > payload", op);
			/* 4 bytes of payload, pad 1 */
			random_fields(&h, (uint8_t)op);
			len = make_packet(pkt, &h, 4, 1, 2, 3, 0);
			memcpy(bad, pkt, len);
			bad[1] = (uint8_t)((bad[1] & ~0x30) | 0x10);
			CHECK((roce_parse(bad, len, &g) == 0) == !!(f & ROCE_F_LAST),
			      "opcode %#x: pad 1 on %s", op, (f & ROCE_F_LAST) ? "a last" : "a non-last");
			if (f & ROCE_F_LAST)
				CHECK(g.payload_len == 3, "opcode %#x: pad 1 of 4", op);
			/* 5 bytes of payload, pad 0: not 4-byte aligned */
			CHECK(roce_parse(pkt, len + 1, &g) == -EINVAL, "opcode %#x: unaligned", op);
		}
	}
	CHECK(nknown == sizeof(known), "%u known opcodes", nknown);
}

static void test_icrc_check(void)
{
	uint8_t pkt[4200];
	struct roce_hdr h;
	unsigned i, pass_solver = 0, pass_exact = 0, trials = 0;
	size_t len, pos;
	uint32_t sa, da;
	uint16_t id, got;
	uint8_t op;

	for (i = 0; i < 3000; i++) {
		op = known[rnd() % sizeof(known)];
		random_fields(&h, op);
		sa = (uint32_t)rnd();
		da = (uint32_t)rnd();
		id = (uint16_t)rnd();
		if (i < 500)
			id = (uint16_t)(1u << (i % 16)); /* each bit alone */
		len = make_packet(pkt, &h,
				  (roce_op_flags(op) & ROCE_F_PAYLOAD) ? (uint32_t)(rnd() % 4097) & ~3u : 0, sa, da,
				  0xc000 | (uint16_t)i, id);
		got = 0x1234;
		CHECK(roce_icrc_check(sa, da, 0xc000 | (uint16_t)i, pkt, len, &got) && got == id,
		      "packet %u with ID %#x: check says %#x", i, id, got);
		/* now corrupt: one to eight random bits of the UDP payload */
		for (unsigned t = 0; t < 10; t++) {
			unsigned nb = 1 + (unsigned)(rnd() % 8), b;
			size_t flips[8];

			for (b = 0; b < nb; b++) {
				unsigned c;

				/* distinct bits, not in BTH byte 4 (FECN, BECN: the ICRC masks it) */
				do {
					pos = rnd() % (len * 8);
					for (c = 0; c < b && flips[c] != pos; c++)
						;
				} while (pos / 8 == 4 || c < b);
				flips[b] = pos;
				pkt[pos / 8] ^= (uint8_t)(1u << (pos % 8));
			}
			trials++;
			if (roce_icrc_check(sa, da, 0xc000 | (uint16_t)i, pkt, len, NULL))
				pass_solver++;
			if (roce_icrc_calc(sa, da, 0xc000 | (uint16_t)i, id, pkt, len) ==
			    ((uint32_t)pkt[len - 4] | (uint32_t)pkt[len - 3] << 8 | (uint32_t)pkt[len - 2] << 16 |
			     (uint32_t)pkt[len - 1] << 24))
				pass_exact++;
			for (b = nb; b-- > 0;)
				pkt[flips[b] / 8] ^= (uint8_t)(1u << (flips[b] % 8));
		}
	}
	printf("corrupted packets: %u tries, %u passed the exact-ID check, %u passed the ID solver "
	       "(expected about %.2f)\n",
	       trials, pass_exact, pass_solver, trials / 65536.0);
	CHECK(pass_exact == 0, "%u corrupted packets passed the exact check", pass_exact);
	CHECK(pass_solver <= 5, "%u of %u corrupted packets passed the solver", pass_solver, trials);
	/* out of range lengths */
	CHECK(!roce_icrc_check(1, 2, 3, pkt, 15, NULL) && !roce_icrc_check(1, 2, 3, pkt, 70000, NULL),
	      "check of a bad length");
	CHECK(roce_icrc_calc(1, 2, 3, 0, pkt, 15) == 0, "calc of a bad length");
	{
		static uint8_t big[ROCE_MAX_UDP_PAYLOAD + 4];
		struct roce_hdr g;

		memset(big, 0, sizeof(big));
		big[0] = ROCE_RC_SEND_ONLY;
		CHECK(roce_parse(big, ROCE_MAX_UDP_PAYLOAD & ~3, &g) == 0 &&
			      g.payload_len == (ROCE_MAX_UDP_PAYLOAD & ~3) - 16,
		      "the longest datagram parses");
		CHECK(roce_parse(big, ROCE_MAX_UDP_PAYLOAD + 4, &g) == -EINVAL, "longer than a datagram");
	}
}

static void test_fuzz(void)
{
	static uint8_t buf[600];
	struct roce_hdr h;
	unsigned i, ok = 0;
	size_t len, j;
	uint8_t *p;

	for (i = 0; i < 300000; i++) {
		len = rnd() % sizeof(buf);
		/* the packet at the end of a heap block, so ASan sees an overread */
		p = malloc(len ? len : 1);
		if (!p)
			abort();
		for (j = 0; j < len; j++)
			p[j] = (uint8_t)rnd();
		if (len && (rnd() & 1))
			p[0] = known[rnd() % sizeof(known)];
		if (len > 1 && (rnd() & 1))
			p[1] &= 0xf0;
		if (roce_parse(p, len, &h) == 0) {
			ok++;
			CHECK(h.opcode == p[0] && roce_hdr_len(h.opcode) + h.payload_len + h.pad + 4 == len,
			      "fuzz: lengths");
			CHECK(!h.payload_len || (h.payload >= p && h.payload + h.payload_len <= p + len - 4),
			      "fuzz: payload outside");
		}
		(void)roce_icrc_check((uint32_t)rnd(), (uint32_t)rnd(), (uint16_t)rnd(), p, len, NULL);
		free(p);
	}
	printf("fuzz: %u random buffers, %u parsed\n", i, ok);
	CHECK(ok > 1000, "fuzz: too few parsed (%u)", ok);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(void)
{
	static uint8_t buf[4096];
	uint32_t c = 0;
	double t0, t;
	unsigned i, n = 0;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	t0 = now();
	do {
		for (i = 0; i < 1000; i++)
			c = roce_icrc_add(c, buf, sizeof(buf));
		n += 1000;
		t = now() - t0;
	} while (t < 0.2);
	printf("roce_icrc_add on 4 KiB: %.0f MB/s (crc %08x)\n", n * 4096.0 / t / 1e6, c);
	c = 0;
	n = 0;
	t0 = now();
	do {
		for (i = 0; i < 1000; i++)
			for (unsigned k = 0; k < 4096; k += 63)
				c = roce_icrc_add(c, buf + k, 4096 - k < 63 ? 4096 - k : 63);
		n += 1000;
		t = now() - t0;
	} while (t < 0.2);
	printf("roce_icrc_add on 4 KiB in 63-byte pieces (slice-by-8): %.0f MB/s (crc %08x)\n",
	       n * 4096.0 / t / 1e6, c);
	/* the receive check: ID 0 (one CRC pass) and a hashed ID (the solver) */
	for (unsigned plen = 64; plen <= 4096; plen *= 64) {
		static uint8_t pkt[4200];
		struct roce_hdr h;
		size_t len;

		for (unsigned which = 0; which < 2; which++) {
			random_fields(&h, ROCE_RC_SEND_ONLY);
			len = make_packet(pkt, &h, plen, 1, 2, 3, which ? 0x5c85 : 0);
			n = 0;
			t0 = now();
			do {
				for (i = 0; i < 1000; i++)
					n += roce_icrc_check(1, 2, 3, pkt, len, NULL);
				t = now() - t0;
			} while (t < 0.1);
			printf("roce_icrc_check, %u-byte payload, IP ID %s: %.0f ns a packet\n", plen,
			       which ? "0x5c85 (solver)" : "0", t / n * 1e9);
		}
	}
}

int main(void)
{
	test_crc();
	test_vectors();
	test_opcodes();
	test_icrc_check();
	test_fuzz();
	bench();
	if (fails) {
		fprintf(stderr, "u_roce: %d checks failed\n", fails);
		return 1;
	}
	printf("u_roce: all checks passed\n");
	return 0;
}

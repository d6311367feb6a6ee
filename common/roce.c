/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RoCEv2 codec (common/roce.h): the opcode table, BTH + extension headers
 * built and parsed from it, and the ICRC.
 *
 * Sources: ../shared/reference/ROCE.md 1.2-1.4 (Linux 6.1 rxe_opcode.c,
 * rxe_hdr.h, rxe_icrc.c), IB spec vol. 1 9.2-9.3 and annex A17 (RoCEv2).
 *
 * The CRC is the reflected CRC-32 of Ethernet and zlib.  Two engines, one
 * answer: carry-less multiplication folding (PCLMULQDQ; Gopal, Ozturk et al.,
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", Intel
 * 2009) for 64 bytes and more where the CPU has it, slice-by-8 tables for the
 * rest.  tests/unit/u_roce checks both against a bit-at-a-time CRC. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "roce.h"

/* ---- the opcode table ------------------------------------------------------ */

#define ONE_PACKET (ROCE_F_FIRST | ROCE_F_LAST | ROCE_F_ONLY)
#define HDRLEN(f)                                                              \
	(ROCE_BTH_LEN + (((f) & ROCE_F_RETH) ? ROCE_RETH_LEN : 0) +            \
	 (((f) & ROCE_F_AETH) ? ROCE_AETH_LEN : 0) +                           \
	 (((f) & ROCE_F_DETH) ? ROCE_DETH_LEN : 0) +                           \
	 (((f) & ROCE_F_IMM) ? ROCE_IMM_LEN : 0) +                             \
	 (((f) & ROCE_F_ATMETH) ? ROCE_ATMETH_LEN : 0) +                       \
	 (((f) & ROCE_F_ATMACK) ? ROCE_ATMACK_LEN : 0) +                       \
	 (((f) & ROCE_F_IETH) ? ROCE_IETH_LEN : 0))
#define OP(code, nm, f) [code] = { .flags = (f) | ROCE_F_VALID, .hdr_len = HDRLEN(f), .name = nm }

static const struct {
	uint32_t flags;
	uint8_t hdr_len;
	const char *name;
} ops[ROCE_UD_SEND_ONLY_IMM + 1] = {
	OP(ROCE_RC_SEND_FIRST, "RC_SEND_FIRST", ROCE_F_PAYLOAD | ROCE_F_FIRST | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_MIDDLE, "RC_SEND_MIDDLE", ROCE_F_PAYLOAD | ROCE_F_MIDDLE | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_LAST, "RC_SEND_LAST", ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_LAST_IMM, "RC_SEND_LAST_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_ONLY, "RC_SEND_ONLY", ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_ONLY_IMM, "RC_SEND_ONLY_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_FIRST, "RC_WRITE_FIRST",
	   ROCE_F_RETH | ROCE_F_PAYLOAD | ROCE_F_FIRST | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_MIDDLE, "RC_WRITE_MIDDLE", ROCE_F_PAYLOAD | ROCE_F_MIDDLE | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_LAST, "RC_WRITE_LAST", ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_LAST_IMM, "RC_WRITE_LAST_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_ONLY, "RC_WRITE_ONLY",
	   ROCE_F_RETH | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_WRITE_ONLY_IMM, "RC_WRITE_ONLY_IMM",
	   ROCE_F_RETH | ROCE_F_IMM | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_WRITE | ROCE_F_REQ),
	OP(ROCE_RC_READ_REQUEST, "RC_READ_REQUEST", ROCE_F_RETH | ONE_PACKET | ROCE_F_READ_REQ | ROCE_F_REQ),
	OP(ROCE_RC_READ_RESP_FIRST, "RC_READ_RESP_FIRST",
	   ROCE_F_AETH | ROCE_F_PAYLOAD | ROCE_F_FIRST | ROCE_F_READ_RESP),
	OP(ROCE_RC_READ_RESP_MIDDLE, "RC_READ_RESP_MIDDLE", ROCE_F_PAYLOAD | ROCE_F_MIDDLE | ROCE_F_READ_RESP),
	OP(ROCE_RC_READ_RESP_LAST, "RC_READ_RESP_LAST",
	   ROCE_F_AETH | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_READ_RESP),
	OP(ROCE_RC_READ_RESP_ONLY, "RC_READ_RESP_ONLY",
	   ROCE_F_AETH | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_READ_RESP),
	OP(ROCE_RC_ACK, "RC_ACK", ROCE_F_AETH | ONE_PACKET | ROCE_F_ACK),
	OP(ROCE_RC_ATOMIC_ACK, "RC_ATOMIC_ACK", ROCE_F_AETH | ROCE_F_ATMACK | ONE_PACKET | ROCE_F_ACK),
	OP(ROCE_RC_CMP_SWAP, "RC_CMP_SWAP", ROCE_F_ATMETH | ONE_PACKET | ROCE_F_ATOMIC | ROCE_F_REQ),
	OP(ROCE_RC_FETCH_ADD, "RC_FETCH_ADD", ROCE_F_ATMETH | ONE_PACKET | ROCE_F_ATOMIC | ROCE_F_REQ),
	OP(ROCE_RC_SEND_LAST_INV, "RC_SEND_LAST_INV",
	   ROCE_F_IETH | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_RC_SEND_ONLY_INV, "RC_SEND_ONLY_INV",
	   ROCE_F_IETH | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_UC_SEND_FIRST, "UC_SEND_FIRST", ROCE_F_PAYLOAD | ROCE_F_FIRST | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_SEND_MIDDLE, "UC_SEND_MIDDLE", ROCE_F_PAYLOAD | ROCE_F_MIDDLE | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_SEND_LAST, "UC_SEND_LAST", ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_SEND_LAST_IMM, "UC_SEND_LAST_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_SEND_ONLY, "UC_SEND_ONLY", ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_SEND_ONLY_IMM, "UC_SEND_ONLY_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_FIRST, "UC_WRITE_FIRST",
	   ROCE_F_RETH | ROCE_F_PAYLOAD | ROCE_F_FIRST | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_MIDDLE, "UC_WRITE_MIDDLE", ROCE_F_PAYLOAD | ROCE_F_MIDDLE | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_LAST, "UC_WRITE_LAST", ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_LAST_IMM, "UC_WRITE_LAST_IMM",
	   ROCE_F_IMM | ROCE_F_PAYLOAD | ROCE_F_LAST | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_ONLY, "UC_WRITE_ONLY",
	   ROCE_F_RETH | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UC_WRITE_ONLY_IMM, "UC_WRITE_ONLY_IMM",
	   ROCE_F_RETH | ROCE_F_IMM | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_WRITE | ROCE_F_REQ | ROCE_F_UC),
	OP(ROCE_UD_SEND_ONLY, "UD_SEND_ONLY", ROCE_F_DETH | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ),
	OP(ROCE_UD_SEND_ONLY_IMM, "UD_SEND_ONLY_IMM",
	   ROCE_F_DETH | ROCE_F_IMM | ROCE_F_PAYLOAD | ONE_PACKET | ROCE_F_SEND | ROCE_F_REQ),
};
_Static_assert(HDRLEN(ROCE_F_ATMETH) == ROCE_MAX_HDR_LEN, "the longest headers");

uint32_t roce_op_flags(uint8_t opcode)
{
	return opcode < sizeof(ops) / sizeof(ops[0]) ? ops[opcode].flags : 0;
}

uint32_t roce_hdr_len(uint8_t opcode)
{
	return opcode < sizeof(ops) / sizeof(ops[0]) ? ops[opcode].hdr_len : 0;
}

const char *roce_op_name(uint8_t opcode)
{
	return opcode < sizeof(ops) / sizeof(ops[0]) ? ops[opcode].name : NULL;
}

int roce_op_from_name(const char *name)
{
	char *end;
	unsigned long v;
	unsigned i;

	if (!name || !*name)
		return -EINVAL;
	if (name[0] >= '0' && name[0] <= '9') {
		errno = 0;
		v = strtoul(name, &end, 0);
		if (errno || *end || v > 0xff || !roce_op_flags((uint8_t)v))
			return -EINVAL;
		return (int)v;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!ops[i].name)
			continue;
		if (!strcasecmp(name, ops[i].name) ||
		    (!strncmp(ops[i].name, "RC_", 3) && !strcasecmp(name, ops[i].name + 3)))
			return (int)i;
	}
	return -EINVAL;
}

/* ---- headers --------------------------------------------------------------- */

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static inline uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t get32(const uint8_t *p)
{
	return get16(p) << 16 | get16(p + 2);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Header order after the BTH (rxe_opcode.c's offsets): RETH or DETH, AETH,
 * AtomicAckETH, AtomicETH, ImmDt, IETH.  No opcode here carries both RETH
 * and DETH (that is RD). */
uint32_t roce_build(uint8_t *buf, const struct roce_hdr *h)
{
	uint32_t f = roce_op_flags(h->opcode);
	uint8_t *p = buf;

	if (!f)
		return 0;
	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) | (h->pad & 3) << 4); /* TVer 0 */
	put16(p + 2, h->pkey ? h->pkey : ROCE_PKEY_DEFAULT);
	p[4] = 0; /* FECN, BECN, resv6a */
	put24(p + 5, h->dqpn);
	p[8] = h->ackreq ? 0x80 : 0; /* resv7 0 */
	put24(p + 9, h->psn);
	p += ROCE_BTH_LEN;
	if (f & ROCE_F_RETH) {
		put64(p, h->va);
		put32(p + 8, h->rkey);
		put32(p + 12, h->dmalen);
		p += ROCE_RETH_LEN;
	}
	if (f & ROCE_F_DETH) {
		put32(p, h->qkey);
		p[4] = 0;
		put24(p + 5, h->sqpn);
		p += ROCE_DETH_LEN;
	}
	if (f & ROCE_F_AETH) {
		p[0] = h->syndrome;
		put24(p + 1, h->msn);
		p += ROCE_AETH_LEN;
	}
	if (f & ROCE_F_ATMACK) {
		put64(p, h->orig);
		p += ROCE_ATMACK_LEN;
	}
	if (f & ROCE_F_ATMETH) {
		put64(p, h->va);
		put32(p + 8, h->rkey);
		put64(p + 12, h->swap_add);
		put64(p + 20, h->cmp);
		p += ROCE_ATMETH_LEN;
	}
	if (f & ROCE_F_IMM) {
		memcpy(p, &h->imm_be, 4);
		p += ROCE_IMM_LEN;
	}
	if (f & ROCE_F_IETH) {
		put32(p, h->ieth_rkey);
		p += ROCE_IETH_LEN;
	}
	return (uint32_t)(p - buf);
}

int roce_parse(const uint8_t *p, size_t len, struct roce_hdr *h)
{
	uint32_t f, hl;
	size_t rest;
	const uint8_t *q;

	memset(h, 0, sizeof(*h));
	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN || len > ROCE_MAX_UDP_PAYLOAD)
		return -EINVAL;
	if (p[1] & 0x0f) /* TVer */
		return -EINVAL;
	f = roce_op_flags(p[0]);
	if (!f)
		return -EINVAL;
	hl = roce_hdr_len(p[0]);
	if (len < hl + ROCE_ICRC_LEN)
		return -EINVAL;
	h->opcode = p[0];
	h->se = p[1] & 0x80;
	h->mig = p[1] & 0x40;
	h->pad = (p[1] >> 4) & 3;
	h->pkey = (uint16_t)get16(p + 2);
	h->dqpn = get24(p + 5);
	h->ackreq = p[8] & 0x80;
	h->psn = get24(p + 9);

	rest = len - hl - ROCE_ICRC_LEN;
	if (!(f & ROCE_F_PAYLOAD)) {
		if (rest || h->pad)
			return -EINVAL;
	} else {
		if (h->pad && !(f & ROCE_F_LAST))
			return -EINVAL;
		if (h->pad > rest || rest % 4)
			return -EINVAL;
		h->payload = p + hl;
		h->payload_len = (uint32_t)(rest - h->pad);
	}

	q = p + ROCE_BTH_LEN;
	if (f & ROCE_F_RETH) {
		h->va = get64(q);
		h->rkey = get32(q + 8);
		h->dmalen = get32(q + 12);
		q += ROCE_RETH_LEN;
	}
	if (f & ROCE_F_DETH) {
		h->qkey = get32(q);
		h->sqpn = get24(q + 5);
		q += ROCE_DETH_LEN;
	}
	if (f & ROCE_F_AETH) {
		h->syndrome = q[0];
		h->msn = get24(q + 1);
		q += ROCE_AETH_LEN;
	}
	if (f & ROCE_F_ATMACK) {
		h->orig = get64(q);
		q += ROCE_ATMACK_LEN;
	}
	if (f & ROCE_F_ATMETH) {
		h->va = get64(q);
		h->rkey = get32(q + 8);
		h->swap_add = get64(q + 12);
		h->cmp = get64(q + 20);
		q += ROCE_ATMETH_LEN;
	}
	if (f & ROCE_F_IMM) {
		memcpy(&h->imm_be, q, 4);
		q += ROCE_IMM_LEN;
	}
	if (f & ROCE_F_IETH) {
		h->ieth_rkey = get32(q);
		q += ROCE_IETH_LEN;
	}
	return 0;
}

/* ---- CRC-32 ------------------------------------------------------------------ */

#define CRC_POLY 0xedb88320u /* reflected 0x04C11DB7 */

static uint32_t crc_tab[8][256]; /* slice-by-8 */
static uint32_t x2n_tab[32];     /* x^(2^k) mod P, reflected */
static bool have_clmul;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* a * b mod P, both reflected (bit 31 is x^0) */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
	uint32_t p = 0;
	int i;

	for (i = 31; i >= 0; i--) {
		if (a & (1u << i))
			p ^= b;
		b = b & 1 ? (b >> 1) ^ CRC_POLY : b >> 1;
	}
	return p;
}

/* x^(n * 2^k) mod P */
static uint32_t x2nmodp(size_t n, unsigned k)
{
	uint32_t p = 1u << 31; /* x^0 */

	while (n) {
		if (n & 1)
			p = multmodp(x2n_tab[k & 31], p);
		n >>= 1;
		k++;
	}
	return p;
}

static void crc_init(void)
{
	uint32_t c, p;
	int i, j;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ CRC_POLY : c >> 1;
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^ crc_tab[0][crc_tab[j - 1][i] & 0xff];
	p = 1u << 30; /* x^1 */
	x2n_tab[0] = p;
	for (i = 1; i < 32; i++)
		x2n_tab[i] = p = multmodp(p, p);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
		     !getenv("UNIRDMA_NO_CLMUL");
#endif
}

/* r: the CRC register (inverted zlib value) */
static uint32_t crc_sb8(uint32_t r, const uint8_t *p, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w;

	while (n && ((uintptr_t)p & 7)) {
		r = crc_tab[0][(r ^ *p++) & 0xff] ^ (r >> 8);
		n--;
	}
	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		w ^= r;
		r = crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^ crc_tab[5][(w >> 16) & 0xff] ^
		    crc_tab[4][(w >> 24) & 0xff] ^ crc_tab[3][(w >> 32) & 0xff] ^
		    crc_tab[2][(w >> 40) & 0xff] ^ crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
	}
#endif
	while (n--)
		r = crc_tab[0][(r ^ *p++) & 0xff] ^ (r >> 8);
	return r;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* Folding with carry-less multiplication (the paper's constants for the
 * reflected CRC-32: k1 = x^(4*128+32) mod P, k2 = x^(4*128-32), k3 =
 * x^(128+32), k4 = x^(128-32), k5 = x^64, then Barrett reduction with P' and
 * mu, all bit-reflected and shifted by one).  n >= 64; it consumes n & ~15
 * bytes and returns the register; the caller does the tail. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_clmul(uint32_t r, const uint8_t *p,
								       size_t n)
{
	const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
	const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
	const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);
	__m128i a, b, c, d, t;

	a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)r));
	b = _mm_loadu_si128((const __m128i *)(p + 16));
	c = _mm_loadu_si128((const __m128i *)(p + 32));
	d = _mm_loadu_si128((const __m128i *)(p + 48));
	p += 64;
	n -= 64;
	/* four lanes, 64 bytes a step: each lane * x^512 + the next 16 bytes */
#define FOLD(x, k, next)                                                              \
	do {                                                                          \
		t = _mm_clmulepi64_si128(x, k, 0x00);                                 \
		x = _mm_clmulepi64_si128(x, k, 0x11);                                 \
		x = _mm_xor_si128(_mm_xor_si128(x, t), next);                         \
	} while (0)
	for (; n >= 64; n -= 64, p += 64) {
		FOLD(a, k1k2, _mm_loadu_si128((const __m128i *)p));
		FOLD(b, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
		FOLD(c, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
		FOLD(d, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	/* four lanes into one, then 16 bytes a step */
	FOLD(a, k3k4, b);
	FOLD(a, k3k4, c);
	FOLD(a, k3k4, d);
	for (; n >= 16; n -= 16, p += 16)
		FOLD(a, k3k4, _mm_loadu_si128((const __m128i *)p));
#undef FOLD
	/* 128 -> 64 bits */
	t = _mm_clmulepi64_si128(a, k3k4, 0x10);
	a = _mm_xor_si128(_mm_srli_si128(a, 8), t);
	/* 64 -> 32 bits */
	t = _mm_srli_si128(a, 4);
	a = _mm_clmulepi64_si128(_mm_and_si128(a, mask32), k5, 0x00);
	a = _mm_xor_si128(a, t);
	/* Barrett reduction */
	t = _mm_and_si128(a, mask32);
	t = _mm_clmulepi64_si128(t, poly, 0x10);
	t = _mm_and_si128(t, mask32);
	t = _mm_clmulepi64_si128(t, poly, 0x00);
	a = _mm_xor_si128(a, t);
	return (uint32_t)_mm_extract_epi32(a, 1);
}
#endif

static uint32_t crc_update(uint32_t r, const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
	if (n >= 64 && have_clmul) {
		r = crc_clmul(r, p, n);
		p += n & ~(size_t)15;
		n &= 15;
	}
#endif
	return crc_sb8(r, p, n);
}

uint32_t roce_icrc_add(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_update(~crc, p, n);
}

void roce_icrc_put(uint32_t crc, uint8_t out[ROCE_ICRC_LEN])
{
	out[0] = (uint8_t)crc;
	out[1] = (uint8_t)(crc >> 8);
	out[2] = (uint8_t)(crc >> 16);
	out[3] = (uint8_t)(crc >> 24);
}

/* ---- ICRC ------------------------------------------------------------------ */

/* The stream the ICRC covers: 8 bytes 0xff (the masked LRH RoCEv1 would
 * have), the IPv4 header, the UDP header, the BTH, all masked; the rest as
 * is.  The IP ID is at stream offset 12..13. */
enum { ICRC_PRE = 8 + 20 + 8 + ROCE_BTH_LEN, ICRC_ID_OFF = 8 + 4 };

static void icrc_prefix(uint8_t s[ICRC_PRE], uint32_t saddr_be, uint32_t daddr_be, uint16_t sport,
			uint16_t ip_id, uint16_t udp_len, const uint8_t *bth)
{
	uint8_t *ip = s + 8, *udp = s + 28;

	memset(s, 0xff, 8);
	ip[0] = 0x45;
	ip[1] = 0xff; /* TOS */
	put16(ip + 2, (uint16_t)(20 + udp_len));
	put16(ip + 4, ip_id);
	ip[6] = 0x40; /* DF */
	ip[7] = 0;
	ip[8] = 0xff; /* TTL */
	ip[9] = 17;   /* UDP */
	ip[10] = ip[11] = 0xff; /* checksum */
	memcpy(ip + 12, &saddr_be, 4);
	memcpy(ip + 16, &daddr_be, 4);
	put16(udp, sport);
	put16(udp + 2, ROCE_UDP_PORT);
	put16(udp + 4, udp_len);
	udp[6] = udp[7] = 0xff; /* checksum */
	memcpy(s + 36, bth, ROCE_BTH_LEN);
	s[36 + 4] = 0xff; /* FECN, BECN, resv6a */
}

uint32_t roce_icrc_start(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t ip_id,
			 uint16_t udp_len, const uint8_t bth[ROCE_BTH_LEN])
{
	uint8_t s[ICRC_PRE];

	icrc_prefix(s, saddr_be, daddr_be, sport, ip_id, udp_len, bth);
	return roce_icrc_add(0, s, sizeof(s));
}

uint32_t roce_icrc_calc(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t ip_id,
			const uint8_t *p, size_t len)
{
	uint32_t c;

	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN || len > ROCE_MAX_UDP_PAYLOAD)
		return 0;
	c = roce_icrc_start(saddr_be, daddr_be, sport, ip_id, (uint16_t)(8 + len), p);
	return roce_icrc_add(c, p + ROCE_BTH_LEN, len - ROCE_BTH_LEN - ROCE_ICRC_LEN);
}

/* The CRC is affine in the ID's 16 bits: crc(id) = crc(0) ^ sum of D_i over
 * the set bits i, where D_i is the register a lone bit i leaves after the
 * rest of the stream went through as zeros (the CRC's linear part).
 * Reflected, a byte's bit 0 goes in first; the ID is big-endian, so the
 * last of its bits to go in is bit 7 of the low byte, then come N zero
 * bytes.  Its D is T[0x80] moved on by x^(8N); each bit before it is one
 * step further from the end, one more factor x.  Then solve
 * sum x_i D_i = crc(0) ^ wire over GF(2) (16 unknowns, 32 equations; the
 * D_i are independent because CRC-32 detects every burst of up to 32 bits,
 * so a solution, when there is one, is unique). */
static uint32_t mulx(uint32_t b)
{
	return b & 1 ? (b >> 1) ^ CRC_POLY : b >> 1;
}

static bool icrc_solve(uint32_t diff, size_t len, uint16_t *id_out)
{
	/* The basis for the last length, per thread: packets of one length
	 * come in runs (a GRO train's are all alike), and building it costs
	 * more than the CRC of the packet. */
	static __thread size_t last_len;
	static __thread uint32_t basis[32], bmask[32];
	uint32_t v, m, d;
	int i, b, k;

	if (len != last_len) {
		/* bytes after the ID: IP 6..19, UDP, BTH .. pad */
		d = multmodp(x2nmodp((20 - 6) + 8 + (len - ROCE_ICRC_LEN), 3), crc_tab[0][0x80]);
		memset(basis, 0, sizeof(basis));
		memset(bmask, 0, sizeof(bmask));
		for (k = 0; k < 16; k++, d = mulx(d)) {
			/* k-th bit from the end: low byte's bits 7..0, then the high byte's */
			i = k < 8 ? 7 - k : 15 - (k - 8);
			v = d;
			m = 1u << i;
			for (b = 31; b >= 0 && v; b--) {
				if (!(v & (1u << b)))
					continue;
				if (!basis[b]) {
					basis[b] = v;
					bmask[b] = m;
					break;
				}
				v ^= basis[b];
				m ^= bmask[b];
			}
		}
		last_len = len;
	}
	v = diff;
	m = 0;
	for (b = 31; b >= 0 && v; b--) {
		if (!(v & (1u << b)))
			continue;
		if (!basis[b])
			return false;
		v ^= basis[b];
		m ^= bmask[b];
	}
	if (v)
		return false;
	*id_out = (uint16_t)m;
	return true;
}

bool roce_icrc_match(uint32_t crc_id0, const uint8_t icrc[ROCE_ICRC_LEN], size_t len, uint16_t *ip_id)
{
	uint32_t wire = (uint32_t)icrc[0] | (uint32_t)icrc[1] << 8 | (uint32_t)icrc[2] << 16 |
			(uint32_t)icrc[3] << 24;
	uint16_t id = 0;

	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN || len > ROCE_MAX_UDP_PAYLOAD)
		return false;
	if (crc_id0 != wire && !icrc_solve(crc_id0 ^ wire, len, &id))
		return false;
	if (ip_id)
		*ip_id = id;
	return true;
}

bool roce_icrc_check(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, const uint8_t *p,
		     size_t len, uint16_t *ip_id)
{
	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN || len > ROCE_MAX_UDP_PAYLOAD)
		return false;
	return roce_icrc_match(roce_icrc_calc(saddr_be, daddr_be, sport, 0, p, len), p + len - ROCE_ICRC_LEN, len,
			       ip_id);
}

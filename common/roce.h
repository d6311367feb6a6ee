/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RoCEv2 packets (IPv4): the BTH and its extension headers, built and parsed
 * from one opcode table, and the ICRC, as Linux rxe puts them on the wire
 * (../shared/reference/ROCE.md section 1; IB spec vol. 1 ch. 9.2-9.3,
 * RoCEv2 annex A17).  The engine's wire port, the test tools and the unit
 * test use it; nothing here allocates, locks or touches a socket.
 *
 * Byte order: struct roce_hdr holds host-order numbers except imm_be (ImmDt
 * is opaque: the verbs API hands it over already big-endian).  IPv4
 * addresses are passed as in struct in_addr (network order, "_be"); ports,
 * IP IDs and lengths in host order. */
#ifndef UNIRDMA_ROCE_H
#define UNIRDMA_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROCE_UDP_PORT 4791
#define ROCE_BTH_LEN 12
#define ROCE_ICRC_LEN 4
/* extension header sizes (ROCE.md 1.3) */
#define ROCE_RETH_LEN 16
#define ROCE_AETH_LEN 4
#define ROCE_DETH_LEN 8
#define ROCE_IMM_LEN 4
#define ROCE_ATMETH_LEN 28
#define ROCE_ATMACK_LEN 8
#define ROCE_IETH_LEN 4
/* the longest BTH + extension headers of any opcode here (ATOMIC_ACK 24,
 * CMP_SWAP 40) */
#define ROCE_MAX_HDR_LEN (ROCE_BTH_LEN + ROCE_ATMETH_LEN)
#define ROCE_PKEY_DEFAULT 0xffff
/* the longest UDP payload in an IPv4 packet without options */
#define ROCE_MAX_UDP_PAYLOAD (65535 - 20 - 8)
#define ROCE_GSI_QKEY 0x80010000u

/* BTH opcodes: RC 0x00..0x17 (ROCE.md 1.2), UC 0x20..0x2b (the RC SEND and
 * WRITE opcodes + 0x20, IB spec 9.2.3 table 34), UD 0x64/0x65.  Nothing else
 * is known here: RD, CNP, and 6.2's FLUSH and ATOMIC_WRITE are "unknown". */
enum roce_opcode {
	ROCE_RC_SEND_FIRST = 0x00,
	ROCE_RC_SEND_MIDDLE,
	ROCE_RC_SEND_LAST,
	ROCE_RC_SEND_LAST_IMM,
	ROCE_RC_SEND_ONLY,
	ROCE_RC_SEND_ONLY_IMM,
	ROCE_RC_WRITE_FIRST,
	ROCE_RC_WRITE_MIDDLE,
	ROCE_RC_WRITE_LAST,
	ROCE_RC_WRITE_LAST_IMM,
	ROCE_RC_WRITE_ONLY,
	ROCE_RC_WRITE_ONLY_IMM,
	ROCE_RC_READ_REQUEST,
	ROCE_RC_READ_RESP_FIRST,
	ROCE_RC_READ_RESP_MIDDLE,
	ROCE_RC_READ_RESP_LAST,
	ROCE_RC_READ_RESP_ONLY,
	ROCE_RC_ACK,
	ROCE_RC_ATOMIC_ACK,
	ROCE_RC_CMP_SWAP,
	ROCE_RC_FETCH_ADD,
	ROCE_RC_SEND_LAST_INV = 0x16,
	ROCE_RC_SEND_ONLY_INV = 0x17,
	ROCE_UC_SEND_FIRST = 0x20,      /* UC: ROCE_RC_SEND_FIRST .. _WRITE_ONLY_IMM + 0x20 */
	ROCE_UC_SEND_MIDDLE,
	ROCE_UC_SEND_LAST,
	ROCE_UC_SEND_LAST_IMM,
	ROCE_UC_SEND_ONLY,
	ROCE_UC_SEND_ONLY_IMM,
	ROCE_UC_WRITE_FIRST,
	ROCE_UC_WRITE_MIDDLE,
	ROCE_UC_WRITE_LAST,
	ROCE_UC_WRITE_LAST_IMM,
	ROCE_UC_WRITE_ONLY,
	ROCE_UC_WRITE_ONLY_IMM,
	ROCE_UD_SEND_ONLY = 0x64,
	ROCE_UD_SEND_ONLY_IMM = 0x65,
};

/* Per-opcode properties (roce_op_flags).  Headers carried: */
#define ROCE_F_RETH (1u << 0)
#define ROCE_F_AETH (1u << 1)
#define ROCE_F_DETH (1u << 2)
#define ROCE_F_IMM (1u << 3)
#define ROCE_F_ATMETH (1u << 4)
#define ROCE_F_ATMACK (1u << 5)
#define ROCE_F_IETH (1u << 6)
#define ROCE_F_PAYLOAD (1u << 7) /* may carry a payload (possibly empty) */
/* Position in a message.  An *_ONLY opcode, and every opcode that is a whole
 * message in one packet (READ_REQUEST, ACK, ATOMIC_ACK, the atomics, UD
 * sends), has ROCE_F_ONLY and also ROCE_F_FIRST and ROCE_F_LAST (like rxe's
 * START/END masks): "starts a message" and "ends a message" are one test. */
#define ROCE_F_FIRST (1u << 8)
#define ROCE_F_MIDDLE (1u << 9)
#define ROCE_F_LAST (1u << 10)
#define ROCE_F_ONLY (1u << 11)
/* Operation */
#define ROCE_F_SEND (1u << 12)      /* SEND*, SEND*_INV, UD SEND* */
#define ROCE_F_WRITE (1u << 13)     /* RDMA WRITE* */
#define ROCE_F_READ_REQ (1u << 14)  /* RDMA READ request */
#define ROCE_F_READ_RESP (1u << 15) /* RDMA READ response FIRST..ONLY */
#define ROCE_F_ACK (1u << 16)       /* ACK and ATOMIC_ACK (not read responses) */
#define ROCE_F_ATOMIC (1u << 17)    /* CMP_SWAP, FETCH_ADD */
#define ROCE_F_REQ (1u << 18)       /* a request (sent by a requester) */
#define ROCE_F_UC (1u << 19)        /* a UC opcode */
#define ROCE_F_VALID (1u << 31)     /* set on every known opcode */

/* 0 for an unknown opcode (RD, CNP, FLUSH, ATOMIC_WRITE, ...). */
uint32_t roce_op_flags(uint8_t opcode);
/* BTH + the opcode's extension headers, in bytes; 0 for an unknown opcode. */
uint32_t roce_hdr_len(uint8_t opcode);
/* "RC_SEND_ONLY", "UD_SEND_ONLY_IMM", ...; NULL for an unknown opcode. */
const char *roce_op_name(uint8_t opcode);
/* The opcode named NAME (as roce_op_name, case-insensitive, the "RC_" prefix
 * optional, or a number "0x04"/"4" of a known opcode); -EINVAL otherwise. */
int roce_op_from_name(const char *name);

/* A packet's headers.  Fields of headers the opcode does not carry are 0
 * after roce_parse and ignored by roce_build. */
struct roce_hdr {
	uint8_t opcode;
	bool se, mig, ackreq;
	uint8_t pad;   /* 0..3 */
	uint16_t pkey; /* build: 0 means ROCE_PKEY_DEFAULT (0 is no valid P_Key) */
	uint32_t dqpn, psn; /* 24 bit (build masks them) */
	uint64_t va;                /* RETH, or AtomicETH's va/rkey */
	uint32_t rkey, dmalen;
	uint8_t syndrome;           /* AETH */
	uint32_t msn;               /* 24 bit */
	uint32_t qkey, sqpn;        /* DETH; sqpn 24 bit */
	uint32_t imm_be;            /* ImmDt as on the wire (already big-endian) */
	uint64_t swap_add, cmp;     /* AtomicETH */
	uint64_t orig;              /* AtomicAckETH */
	uint32_t ieth_rkey;         /* IETH */
	const uint8_t *payload;     /* parse: the payload, without pad and ICRC */
	uint32_t payload_len;
};

/* Writes BTH + the opcode's extension headers into buf (at least
 * roce_hdr_len(h->opcode) bytes) and returns their length; 0 (nothing
 * written) for an unknown opcode.  TVer 0, FECN/BECN 0, reserved bits 0;
 * pad from h->pad & 3.  The payload and ICRC are the caller's. */
uint32_t roce_build(uint8_t *buf, const struct roce_hdr *h);

/* Parses a UDP payload (BTH .. ICRC) into *h (all of it written).  0, or
 * -EINVAL when: shorter than BTH + ICRC or than the opcode's headers + ICRC,
 * or longer than a UDP datagram can be (ROCE_MAX_UDP_PAYLOAD);
 * TVer != 0; unknown opcode; a pad count on an opcode that carries no
 * payload or is not the last of a message (FIRST, MIDDLE); a pad longer than
 * the bytes after the headers; payload + pad not a multiple of 4 (IBA 9.3:
 * every packet's headers + payload + pad are 4-byte aligned; rxe and RNICs
 * always pad so); bytes after the headers of an opcode without a payload.
 * Does NOT check the ICRC (roce_icrc_check) nor the P_Key.  h->payload
 * points into p. */
int roce_parse(const uint8_t *p, size_t len, struct roce_hdr *h);

/* ICRC (ROCE.md 1.4), incremental, so a sender can gather the payload
 * straight from memory:
 *   c = roce_icrc_start(saddr, daddr, sport, ip_id, udp_len, bth);
 *       the masked LRH, IPv4 and UDP headers as the kernel will write them
 *       (version 4, IHL 5, TOS, TTL and checksum masked, total length
 *       20 + udp_len, DF, protocol 17; UDP sport -> 4791, length udp_len,
 *       checksum masked), then the BTH with byte 4 masked.  udp_len is the
 *       UDP length: 8 + BTH .. ICRC.
 *   c = roce_icrc_add(c, p, n);   the rest of the headers, the payload, the
 *                                 pad (any number of calls, any split)
 *   roce_icrc_put(c, out);        the 4 ICRC bytes in wire order.
 * The value between calls is a zlib-style CRC-32 (roce_icrc_add(c, p, n) ==
 * zlib's crc32(c, p, n)). */
uint32_t roce_icrc_start(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t ip_id,
			 uint16_t udp_len, const uint8_t bth[ROCE_BTH_LEN]);
uint32_t roce_icrc_add(uint32_t crc, const void *p, size_t n);
void roce_icrc_put(uint32_t crc, uint8_t out[ROCE_ICRC_LEN]);

/* The ICRC of a whole UDP payload p (BTH .. ICRC, len bytes; the last 4 are
 * not read) for IP ID ip_id, as roce_icrc_put would write it, read as a
 * little-endian u32.  len must be at least BTH + ICRC and at most
 * 65535 - 28 (ROCE_MAX_UDP_PAYLOAD); otherwise 0. */
uint32_t roce_icrc_calc(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t ip_id,
			const uint8_t *p, size_t len);

/* Receive side: a UDP socket does not show the sender's IP ID.  True if the
 * ICRC at the end of p is right for ID 0 (our peers, unconnected DF
 * sockets) or, failing that, for the one ID that solves the 16-bit affine
 * system (rxe's hashed IDs; ROCE.md 1.4): *ip_id (may be NULL) gets it.  A
 * corrupt packet passes with probability 2^-16.  p = UDP payload incl.
 * ICRC; false when len is out of roce_icrc_calc's range.  Costs one CRC
 * pass over the packet (41 ns for 64 bytes of payload, 280 ns for 4 KiB on
 * the development machine), and on a mismatch the solver, about 100 ns more
 * (thread-safe; it keeps the last length's shift per thread). */
bool roce_icrc_check(uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, const uint8_t *p,
		     size_t len, uint16_t *ip_id);

/* The same check for a packet whose pieces lie apart (a payload already at
 * its destination): crc_id0 is what roce_icrc_start(.., ip_id 0, ..) and
 * roce_icrc_add over the rest of the headers, the payload and the pad gave,
 * icrc the packet's last 4 bytes, len its UDP payload length. */
bool roce_icrc_match(uint32_t crc_id0, const uint8_t icrc[ROCE_ICRC_LEN], size_t len, uint16_t *ip_id);

#endif

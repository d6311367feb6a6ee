/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* roce_pcapcheck: checks every RoCEv2 frame (IPv4, UDP destination port
 * 4791) of a capture: the ICRC with the IP ID from the frame's own IP header
 * (masks of ROCE.md 1.4, computed over the header as captured, so a sender
 * that sets other IP flags or options is checked as it is), and that the
 * headers parse (common/roce.c's roce_parse: known opcode, TVer 0, pad and
 * lengths consistent).  It also asks roce_icrc_check, which does not see the
 * IP ID, to find it (the receive path's solver) and counts disagreements.
 *
 * Reads pcap (microsecond or nanosecond, either byte order) and pcapng;
 * link types Ethernet (VLAN tags too), Linux cooked v1 and v2, raw IPv4.
 *
 * usage: roce_pcapcheck [-v] FILE
 * Prints  frames N bad_icrc N malformed N  (frames: the UDP 4791 frames),
 * then  other N  (frames that are not), then  solver_mismatch N,  then one
 * line per opcode seen: opcode NAME N.  -v names each bad frame.
 * Exit 0: all good; 1: a bad ICRC, a malformed frame or a solver mismatch;
 * 2: usage or an unreadable file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

static unsigned long frames, bad_icrc, malformed, other, solver_mismatch, frameno;
static unsigned long per_op[256];
static int verbose;

static void bad(const char *what)
{
	if (verbose)
		printf("frame %lu: %s\n", frameno, what);
}

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* One IPv4 packet (n bytes captured, orig on the wire). */
static void check_ip(const uint8_t *ip, size_t n, size_t orig)
{
	uint8_t s[8 + 60 + 8 + ROCE_BTH_LEN];
	const uint8_t *udp, *p;
	size_t ihl, tot, ulen, plen;
	struct roce_hdr h;
	uint32_t c, wire, saddr, daddr;
	uint16_t id;

	if (n < 20 || (ip[0] >> 4) != 4 || ip[9] != 17)
		goto not_roce;
	ihl = (size_t)(ip[0] & 15) * 4;
	if (ihl < 20 || n < ihl + 8)
		goto not_roce;
	udp = ip + ihl;
	if (be16(udp + 2) != ROCE_UDP_PORT)
		goto not_roce;
	if (be16(ip + 6) & 0x3fff) /* MF or an offset: RoCE is never fragmented */
		goto not_roce;
	frames++;
	tot = be16(ip + 2);
	ulen = be16(udp + 4);
	if (n < orig) {
		malformed++;
		bad("truncated capture");
		return;
	}
	if (tot > n || ulen + ihl != tot || ulen < 8 + ROCE_BTH_LEN + ROCE_ICRC_LEN) {
		malformed++;
		bad("IP and UDP lengths inconsistent");
		return;
	}
	p = udp + 8;
	plen = ulen - 8;
	if (roce_parse(p, plen, &h)) {
		malformed++;
		bad("RoCE headers do not parse");
	} else {
		per_op[h.opcode]++;
	}
	/* the ICRC over the headers as captured */
	memset(s, 0xff, 8);
	memcpy(s + 8, ip, ihl);
	s[8 + 1] = 0xff;                 /* TOS */
	s[8 + 8] = 0xff;                 /* TTL */
	s[8 + 10] = s[8 + 11] = 0xff;    /* IP checksum */
	memcpy(s + 8 + ihl, udp, 8);
	s[8 + ihl + 6] = s[8 + ihl + 7] = 0xff; /* UDP checksum */
	memcpy(s + 8 + ihl + 8, p, ROCE_BTH_LEN);
	s[8 + ihl + 8 + 4] = 0xff;       /* FECN, BECN */
	c = roce_icrc_add(0, s, 8 + ihl + 8 + ROCE_BTH_LEN);
	c = roce_icrc_add(c, p + ROCE_BTH_LEN, plen - ROCE_BTH_LEN - ROCE_ICRC_LEN);
	wire = (uint32_t)p[plen - 4] | (uint32_t)p[plen - 3] << 8 | (uint32_t)p[plen - 2] << 16 |
	       (uint32_t)p[plen - 1] << 24;
	if (c != wire) {
		bad_icrc++;
		bad("bad ICRC");
		return;
	}
	/* the receive path's view: no IP header, find the ID */
	if (ihl == 20 && (be16(ip + 6) & 0x4000)) {
		memcpy(&saddr, ip + 12, 4);
		memcpy(&daddr, ip + 16, 4);
		if (!roce_icrc_check(saddr, daddr, (uint16_t)be16(udp), p, plen, &id) || id != be16(ip + 4)) {
			solver_mismatch++;
			bad("roce_icrc_check did not find the IP ID");
		}
	}
	return;
not_roce:
	other++;
}

/* One captured frame of link type lt. */
static void check_frame(unsigned lt, const uint8_t *f, size_t n, size_t orig)
{
	size_t off;
	uint32_t proto;

	frameno++;
	switch (lt) {
	case 1: /* Ethernet */
		if (n < 14)
			goto skip;
		off = 12;
		proto = be16(f + off);
		while ((proto == 0x8100 || proto == 0x88a8) && n >= off + 6) {
			off += 4;
			proto = be16(f + off);
		}
		off += 2;
		break;
	case 113: /* Linux cooked v1 */
		if (n < 16)
			goto skip;
		proto = be16(f + 14);
		off = 16;
		break;
	case 276: /* Linux cooked v2 */
		if (n < 20)
			goto skip;
		proto = be16(f);
		off = 20;
		break;
	case 101: /* raw IP */
	case 228: /* raw IPv4 */
		proto = 0x0800;
		off = 0;
		break;
	default:
		goto skip;
	}
	if (proto != 0x0800)
		goto skip;
	check_ip(f + off, n - off, orig >= off ? orig - off : 0);
	return;
skip:
	other++;
}

static uint32_t rd32(const uint8_t *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const uint8_t *p, int swap)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return swap ? __builtin_bswap16(v) : v;
}

static int read_pcap(FILE *fp, const uint8_t *gh, int swap)
{
	static uint8_t buf[262144];
	uint8_t rh[16];
	unsigned lt = rd32(gh + 20, swap) & 0xffff;
	uint32_t caplen, origlen;

	while (fread(rh, 1, 16, fp) == 16) {
		caplen = rd32(rh + 8, swap);
		origlen = rd32(rh + 12, swap);
		if (caplen > sizeof(buf) || fread(buf, 1, caplen, fp) != caplen) {
			fprintf(stderr, "roce_pcapcheck: truncated or corrupt record after frame %lu\n", frameno);
			return -1;
		}
		check_frame(lt, buf, caplen, origlen);
	}
	return 0;
}

#define MAX_IF 64

static int read_pcapng(FILE *fp, const uint8_t *first)
{
	static uint8_t blk[262144 + 64];
	unsigned lt[MAX_IF], snap[MAX_IF], nif = 0;
	uint32_t type, blen, caplen, origlen, ifc;
	int swap = 0, have_first = 1;

	for (;;) {
		uint8_t hdr[12];

		if (have_first) {
			memcpy(hdr, first, 12);
			have_first = 0;
		} else if (fread(hdr, 1, 12, fp) != 12) {
			return 0;
		}
		memcpy(&type, hdr, 4);
		if (type == 0x0a0d0d0a) { /* Section Header: byte order, fresh interfaces */
			uint32_t bom;

			memcpy(&bom, hdr + 8, 4);
			if (bom == 0x1a2b3c4d)
				swap = 0;
			else if (bom == 0x4d3c2b1a)
				swap = 1;
			else
				goto corrupt;
			nif = 0;
		}
		blen = rd32(hdr + 4, swap);
		type = rd32(hdr, swap);
		if (blen < 12 || blen % 4 || blen - 12 + 4 > sizeof(blk))
			goto corrupt;
		/* body (after type and length; hdr[8..11] is its first 4 bytes) */
		memcpy(blk, hdr + 8, 4);
		if (fread(blk + 4, 1, blen - 12, fp) != blen - 12)
			goto corrupt;
		switch (type) {
		case 1: /* Interface Description */
			if (blen < 20 || nif == MAX_IF)
				goto corrupt;
			lt[nif] = rd16(blk, swap);
			snap[nif++] = rd32(blk + 4, swap);
			break;
		case 6: /* Enhanced Packet */
			if (blen < 32)
				goto corrupt;
			ifc = rd32(blk, swap);
			caplen = rd32(blk + 12, swap);
			origlen = rd32(blk + 16, swap);
			if (ifc >= nif || caplen > blen - 32)
				goto corrupt;
			check_frame(lt[ifc], blk + 20, caplen, origlen);
			break;
		case 3: /* Simple Packet */
			if (blen < 16 || !nif)
				goto corrupt;
			origlen = rd32(blk, swap);
			caplen = origlen;
			if (snap[0] && caplen > snap[0])
				caplen = snap[0];
			if (caplen > blen - 16)
				goto corrupt;
			check_frame(lt[0], blk + 4, caplen, origlen);
			break;
		default: /* statistics, name resolution, ...: nothing for us */
			break;
		}
	}
corrupt:
	fprintf(stderr, "roce_pcapcheck: corrupt pcapng block after frame %lu\n", frameno);
	return -1;
}

int main(int argc, char **argv)
{
	uint8_t gh[24];
	uint32_t magic;
	FILE *fp;
	int rc, i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else {
			fprintf(stderr, "usage: roce_pcapcheck [-v] FILE.pcap|FILE.pcapng\n");
			return 2;
		}
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: roce_pcapcheck [-v] FILE.pcap|FILE.pcapng\n");
		return 2;
	}
	fp = fopen(argv[i], "rb");
	if (!fp) {
		fprintf(stderr, "roce_pcapcheck: %s: %s\n", argv[i], strerror(errno));
		return 2;
	}
	if (fread(gh, 1, 24, fp) != 24) {
		fprintf(stderr, "roce_pcapcheck: %s: too short for a capture file\n", argv[i]);
		return 2;
	}
	memcpy(&magic, gh, 4);
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
		rc = read_pcap(fp, gh, 0);
	else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
		rc = read_pcap(fp, gh, 1);
	else if (magic == 0x0a0d0d0a)
		rc = fseek(fp, 12, SEEK_SET) ? -1 : read_pcapng(fp, gh);
	else {
		fprintf(stderr, "roce_pcapcheck: %s: not a pcap or pcapng file\n", argv[i]);
		return 2;
	}
	fclose(fp);
	printf("frames %lu bad_icrc %lu malformed %lu\n", frames, bad_icrc, malformed);
	printf("other %lu\n", other);
	printf("solver_mismatch %lu\n", solver_mismatch);
	for (i = 0; i < 256; i++)
		if (per_op[i])
			printf("opcode %s %lu\n", roce_op_name((uint8_t)i), per_op[i]);
	if (rc)
		return 2;
	return bad_icrc || malformed || solver_mismatch ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* roce_inject: crafts RoCEv2 packets and sends them to DST:4791, for the
 * hostile tests across hosts (guessed QPNs, spoofed GIDs, packets from
 * addresses the directory does not know) and the codec's own wire test
 * (tests/integration/roce_wire.sh).  Links only common/roce.c and libc.
 *
 * It sends from an unconnected UDP socket bound to SRC (an address of the
 * network namespace it runs in) with IP_PMTUDISC_DO, so the kernel writes
 * IP ID 0 and DF, and the ICRC is computed for ID 0 (ROCE.md 1.4).  With
 * --ip-id it writes the IPv4 header itself (raw socket, IP_HDRINCL) to send
 * any ID, as rxe's hashed IDs, and with --spoof from an address that is not
 * the namespace's (no bind: a host on the underlay that forges its source;
 * adding the victim's address to the attacker's namespace instead would fight
 * the victim over ARP).  Exit 0: all sent; 1: a send failed; 2: usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "roce.h"

static const char usage_text[] =
	"usage: roce_inject --src IP --dst IP --opcode NAME|0xNN --dqpn N --psn N [options]\n"
	"  --sport N          UDP source port (default: any, as the kernel picks)\n"
	"  --sqpn N --qkey N  DETH (UD opcodes)\n"
	"  --va N --rkey N --len N   RETH or AtomicETH (--len: RETH DMA length,\n"
	"                     default the payload length)\n"
	"  --swap N --cmp N   AtomicETH swap (or add) and compare values\n"
	"  --syndrome N --msn N  AETH;  --orig N  AtomicAckETH;  --ieth N  IETH R_Key\n"
	"  --imm N            ImmDt (written big-endian)\n"
	"  --pkey N           P_Key (default 0xffff);  --se, --ackreq, --mig  BTH bits\n"
	"  --payload-byte B --payload-len N   payload: N bytes of B (default 0 bytes)\n"
	"  --pad N            PadCnt (default: (-payload-len) & 3 on LAST and ONLY\n"
	"                     opcodes, else 0; written as given)\n"
	"  --set OFF=VAL      set byte OFF of the UDP payload (BTH = offset 0) to VAL\n"
	"                     before the ICRC (malformed packets); repeatable\n"
	"  --count N          send N packets (default 1);  --psn-step N, --dqpn-step N\n"
	"                     add N to the PSN, the destination QPN after each (default 0)\n"
	"  --every MS         wait MS milliseconds between packets (a slow, steady stream)\n"
	"  --ip-id N          send with IP ID N (raw socket, IP_HDRINCL)\n"
	"  --spoof            SRC need not be an address of this namespace (raw socket,\n"
	"                     not bound; IP ID 0 unless --ip-id)\n"
	"  --bad-icrc         send a wrong ICRC\n"
	"  -q                 quiet\n"
	"opcodes: RC_SEND_FIRST .. RC_SEND_ONLY_INV, UD_SEND_ONLY(_IMM) (RC_ optional), or a number\n";

static void usage(const char *why)
{
	if (why)
		fprintf(stderr, "roce_inject: %s\n", why);
	fputs(usage_text, stderr);
	exit(2);
}

static uint64_t num(const char *opt, const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-' || v > max) {
		fprintf(stderr, "roce_inject: --%s: bad number '%s' (0..%#llx)\n", opt, s, (unsigned long long)max);
		exit(2);
	}
	return v;
}

enum {
	O_SRC = 256, O_DST, O_SPORT, O_OPCODE, O_DQPN, O_PSN, O_SQPN, O_QKEY, O_VA, O_RKEY, O_LEN, O_SWAP,
	O_CMP, O_SYNDROME, O_MSN, O_ORIG, O_IETH, O_IMM, O_PKEY, O_SE, O_ACKREQ, O_MIG, O_PBYTE, O_PLEN,
	O_PAD, O_SET, O_COUNT, O_PSNSTEP, O_DQPNSTEP, O_IPID, O_SPOOF, O_BADICRC, O_EVERY,
};

static const struct option longopts[] = {
	{ "src", required_argument, 0, O_SRC },
	{ "dst", required_argument, 0, O_DST },
	{ "sport", required_argument, 0, O_SPORT },
	{ "opcode", required_argument, 0, O_OPCODE },
	{ "dqpn", required_argument, 0, O_DQPN },
	{ "psn", required_argument, 0, O_PSN },
	{ "sqpn", required_argument, 0, O_SQPN },
	{ "qkey", required_argument, 0, O_QKEY },
	{ "va", required_argument, 0, O_VA },
	{ "rkey", required_argument, 0, O_RKEY },
	{ "len", required_argument, 0, O_LEN },
	{ "swap", required_argument, 0, O_SWAP },
	{ "cmp", required_argument, 0, O_CMP },
	{ "syndrome", required_argument, 0, O_SYNDROME },
	{ "msn", required_argument, 0, O_MSN },
	{ "orig", required_argument, 0, O_ORIG },
	{ "ieth", required_argument, 0, O_IETH },
	{ "imm", required_argument, 0, O_IMM },
	{ "pkey", required_argument, 0, O_PKEY },
	{ "se", no_argument, 0, O_SE },
	{ "ackreq", no_argument, 0, O_ACKREQ },
	{ "mig", no_argument, 0, O_MIG },
	{ "payload-byte", required_argument, 0, O_PBYTE },
	{ "payload-len", required_argument, 0, O_PLEN },
	{ "pad", required_argument, 0, O_PAD },
	{ "set", required_argument, 0, O_SET },
	{ "count", required_argument, 0, O_COUNT },
	{ "every", required_argument, 0, O_EVERY },
	{ "psn-step", required_argument, 0, O_PSNSTEP },
	{ "dqpn-step", required_argument, 0, O_DQPNSTEP },
	{ "spoof", no_argument, 0, O_SPOOF },
	{ "ip-id", required_argument, 0, O_IPID },
	{ "bad-icrc", no_argument, 0, O_BADICRC },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

#define MAX_SETS 32

static uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

int main(int argc, char **argv)
{
	static uint8_t pkt[28 + ROCE_MAX_UDP_PAYLOAD];
	uint8_t *udp = pkt + 20, *bth = pkt + 28;
	struct roce_hdr h = { 0 };
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };
	socklen_t sl = sizeof(src);
	bool have_src = false, have_dst = false, have_op = false, have_dqpn = false, have_psn = false;
	bool have_len = false, have_pad = false, bad_icrc = false, quiet = false, spoof = false;
	uint32_t plen = 0, psn_step = 0, dqpn_step = 0, set_off[MAX_SETS], hl;
	uint8_t pbyte = 0, set_val[MAX_SETS];
	uint16_t sport = 0; /* network order */
	uint64_t count = 1, sent, every_ms = 0;
	long ip_id = -1;
	unsigned nsets = 0, i;
	int opt, op, fd, pmtu = IP_PMTUDISC_DO, one = 1;
	size_t len;
	char *eq;

	while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (opt) {
		case O_SRC:
			if (inet_pton(AF_INET, optarg, &src.sin_addr) != 1)
				usage("--src: not an IPv4 address");
			have_src = true;
			break;
		case O_DST:
			if (inet_pton(AF_INET, optarg, &dst.sin_addr) != 1)
				usage("--dst: not an IPv4 address");
			have_dst = true;
			break;
		case O_SPORT:
			sport = htons((uint16_t)num("sport", optarg, 0xffff));
			src.sin_port = sport;
			break;
		case O_OPCODE:
			op = roce_op_from_name(optarg);
			if (op < 0)
				usage("--opcode: unknown opcode (RoCE RC or UD)");
			h.opcode = (uint8_t)op;
			have_op = true;
			break;
		case O_DQPN: h.dqpn = (uint32_t)num("dqpn", optarg, 0xffffff); have_dqpn = true; break;
		case O_PSN: h.psn = (uint32_t)num("psn", optarg, 0xffffff); have_psn = true; break;
		case O_SQPN: h.sqpn = (uint32_t)num("sqpn", optarg, 0xffffff); break;
		case O_QKEY: h.qkey = (uint32_t)num("qkey", optarg, 0xffffffff); break;
		case O_VA: h.va = num("va", optarg, UINT64_MAX); break;
		case O_RKEY: h.rkey = (uint32_t)num("rkey", optarg, 0xffffffff); break;
		case O_LEN: h.dmalen = (uint32_t)num("len", optarg, 0xffffffff); have_len = true; break;
		case O_SWAP: h.swap_add = num("swap", optarg, UINT64_MAX); break;
		case O_CMP: h.cmp = num("cmp", optarg, UINT64_MAX); break;
		case O_SYNDROME: h.syndrome = (uint8_t)num("syndrome", optarg, 0xff); break;
		case O_MSN: h.msn = (uint32_t)num("msn", optarg, 0xffffff); break;
		case O_ORIG: h.orig = num("orig", optarg, UINT64_MAX); break;
		case O_IETH: h.ieth_rkey = (uint32_t)num("ieth", optarg, 0xffffffff); break;
		case O_IMM: h.imm_be = htonl((uint32_t)num("imm", optarg, 0xffffffff)); break;
		case O_PKEY: h.pkey = (uint16_t)num("pkey", optarg, 0xffff); break;
		case O_SE: h.se = true; break;
		case O_ACKREQ: h.ackreq = true; break;
		case O_MIG: h.mig = true; break;
		case O_PBYTE: pbyte = (uint8_t)num("payload-byte", optarg, 0xff); break;
		case O_PLEN: plen = (uint32_t)num("payload-len", optarg, ROCE_MAX_UDP_PAYLOAD); break;
		case O_PAD: h.pad = (uint8_t)num("pad", optarg, 3); have_pad = true; break;
		case O_SET:
			eq = strchr(optarg, '=');
			if (!eq || nsets == MAX_SETS)
				usage("--set: OFF=VAL (at most 32)");
			*eq = 0;
			set_off[nsets] = (uint32_t)num("set", optarg, ROCE_MAX_UDP_PAYLOAD - 1);
			set_val[nsets++] = (uint8_t)num("set", eq + 1, 0xff);
			break;
		case O_COUNT: count = num("count", optarg, 100000000); break;
		case O_EVERY: every_ms = num("every", optarg, 60000); break;
		case O_PSNSTEP: psn_step = (uint32_t)num("psn-step", optarg, 0xffffff); break;
		case O_DQPNSTEP: dqpn_step = (uint32_t)num("dqpn-step", optarg, 0xffffff); break;
		case O_SPOOF: spoof = true; break;
		case O_IPID: ip_id = (long)num("ip-id", optarg, 0xffff); break;
		case O_BADICRC: bad_icrc = true; break;
		case 'q': quiet = true; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: usage(NULL);
		}
	}
	if (optind < argc)
		usage("unexpected argument");
	if (!have_src || !have_dst || !have_op || !have_dqpn || !have_psn)
		usage("--src, --dst, --opcode, --dqpn and --psn are required");
	if (plen && !(roce_op_flags(h.opcode) & ROCE_F_PAYLOAD))
		fprintf(stderr, "roce_inject: note: %s carries no payload; sending one anyway\n",
			roce_op_name(h.opcode));
	if (!have_pad && (roce_op_flags(h.opcode) & ROCE_F_PAYLOAD) && (roce_op_flags(h.opcode) & ROCE_F_LAST))
		h.pad = (uint8_t)((-plen) & 3);
	if (!(roce_op_flags(h.opcode) & ROCE_F_LAST) && (plen + h.pad) % 4)
		fprintf(stderr, "roce_inject: note: %s with %u bytes: not 4-byte aligned, a malformed packet\n",
			roce_op_name(h.opcode), plen + h.pad);
	if (!have_len)
		h.dmalen = plen;
	hl = roce_hdr_len(h.opcode);
	len = (size_t)hl + plen + h.pad + ROCE_ICRC_LEN;
	if (len > ROCE_MAX_UDP_PAYLOAD)
		usage("packet too long");
	for (i = 0; i < nsets; i++)
		if (set_off[i] >= len - ROCE_ICRC_LEN)
			usage("--set: offset past the packet (before the ICRC)");

	if (spoof && ip_id < 0)
		ip_id = 0; /* raw socket: the ID is ours to write */
	if (ip_id < 0) {
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0) {
			perror("roce_inject: socket");
			return 1;
		}
		if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu))) {
			perror("roce_inject: IP_MTU_DISCOVER");
			return 1;
		}
	} else {
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
		if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
			perror("roce_inject: raw socket (--ip-id needs CAP_NET_RAW)");
			return 1;
		}
	}
	if (!spoof && (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
		       getsockname(fd, (struct sockaddr *)&src, &sl))) {
		fprintf(stderr, "roce_inject: bind %s: %s (is it an address of this namespace?)\n",
			inet_ntoa(src.sin_addr), strerror(errno));
		return 1;
	}
	if (ip_id >= 0) /* a raw socket has no port (getsockname shows the protocol) */
		src.sin_port = sport ? sport : htons(0xc000 | (uint16_t)(getpid() & 0x3fff));
	dst.sin_port = htons(ROCE_UDP_PORT);

	for (sent = 0; sent < count; sent++) {
		uint32_t c;
		ssize_t n;

		hl = roce_build(bth, &h);
		memset(bth + hl, pbyte, plen);
		memset(bth + hl + plen, 0, h.pad);
		for (i = 0; i < nsets; i++)
			bth[set_off[i]] = set_val[i];
		c = roce_icrc_start(src.sin_addr.s_addr, dst.sin_addr.s_addr, ntohs(src.sin_port),
				    ip_id < 0 ? 0 : (uint16_t)ip_id, (uint16_t)(8 + len), bth);
		c = roce_icrc_add(c, bth + ROCE_BTH_LEN, len - ROCE_BTH_LEN - ROCE_ICRC_LEN);
		roce_icrc_put(bad_icrc ? ~c : c, bth + len - ROCE_ICRC_LEN);
		if (ip_id < 0) {
			n = sendto(fd, bth, len, 0, (struct sockaddr *)&dst, sizeof(dst));
		} else {
			pkt[0] = 0x45;
			pkt[1] = 0;
			pkt[2] = (uint8_t)((28 + len) >> 8);
			pkt[3] = (uint8_t)(28 + len);
			pkt[4] = (uint8_t)(ip_id >> 8);
			pkt[5] = (uint8_t)ip_id;
			pkt[6] = 0x40; /* DF */
			pkt[7] = 0;
			pkt[8] = 64;
			pkt[9] = IPPROTO_UDP;
			pkt[10] = pkt[11] = 0;
			memcpy(pkt + 12, &src.sin_addr, 4);
			memcpy(pkt + 16, &dst.sin_addr, 4);
			c = ip_csum(pkt, 20);
			pkt[10] = (uint8_t)(c >> 8);
			pkt[11] = (uint8_t)c;
			memcpy(udp, &src.sin_port, 2);
			memcpy(udp + 2, &dst.sin_port, 2);
			udp[4] = (uint8_t)((8 + len) >> 8);
			udp[5] = (uint8_t)(8 + len);
			udp[6] = udp[7] = 0; /* no UDP checksum, as rxe */
			n = sendto(fd, pkt, 28 + len, 0, (struct sockaddr *)&dst, sizeof(dst));
		}
		if (n < 0) {
			fprintf(stderr, "roce_inject: send %llu to %s:%d: %s\n", (unsigned long long)sent,
				inet_ntoa(dst.sin_addr), ROCE_UDP_PORT, strerror(errno));
			return 1;
		}
		h.psn = (h.psn + psn_step) & 0xffffff;
		h.dqpn = (h.dqpn + dqpn_step) & 0xffffff;
		if (every_ms && sent + 1 < count) {
			struct timespec ts = { (time_t)(every_ms / 1000), (long)(every_ms % 1000) * 1000000 };

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
	}
	if (!quiet) {
		printf("roce_inject: sent %llu x %s (%zu bytes of UDP payload) from %s:%u", (unsigned long long)sent,
		       roce_op_name(h.opcode), len, inet_ntoa(src.sin_addr), ntohs(src.sin_port));
		printf(" to %s:%d%s\n", inet_ntoa(dst.sin_addr), ROCE_UDP_PORT, bad_icrc ? ", bad ICRC" : "");
	}
	close(fd);
	return 0;
}

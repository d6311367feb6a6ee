/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* roce_relay: reorders and duplicates the packets a netfilter queue hands it,
 * for the multi-host tests (tests/integration/mhlib.sh, mh_relay).  The test
 * sends a host's RoCE packets into the queue:
 *
 *   iptables -t mangle -A OUTPUT -p udp --dport 4791 \
 *            -m mark ! --mark MARK -j NFQUEUE --queue-num Q
 *   roce_relay --queue Q --mark MARK [--reorder N] [--dup N] [--stall GAP:MS]
 *              [--stall-every T:MS] [--stats FILE]
 *
 *   --reorder N  every Nth packet is held back until the next one has passed
 *                (or HOLD_MS went by without one): the two swap places
 *   --dup N      every Nth packet also goes out a second time (a copy sent
 *                on a raw socket with MARK, which the rule lets through)
 *   --stall GAP:MS  a packet that follows GAP ms without one starts a
 *                stall: it and every packet after it are held for MS ms,
 *                then all go out at once, in order (a path, or a peer's CPU,
 *                that stops for a while at the start of an exchange: the
 *                sender's timers fire meanwhile, and the burst arrives in
 *                one receive batch).  Of the ACKs held for one QP only the
 *                last goes out, the earlier ones are dropped (lost, or
 *                coalesced: the receiver cannot tell)
 *   --stall-every T:MS[-MAX]  the same stall, started by the first packet
 *                T ms or more after the last stall began (a stream that
 *                stops now and then, where --stall needs a quiet gap); with
 *                MAX, each stall lasts MS to MAX ms (uniform, fixed seed).
 *                Given with --stall, the one given last sets MS.
 *   --stats FILE written at exit: "seen S reordered R duplicated D stalls T
 *                stalled P acks_dropped A"
 *
 * Prints "ready" once it is bound to the queue.  SIGTERM/SIGINT: lets a held
 * packet go, writes the counts, exits 0.  This kernel has no netem and no
 * nft `queue` (CONFIG_NFT_QUEUE), but the xtables NFQUEUE target. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define HOLD_MS 50
#define STALL_MAX 8192          /* packets a stall holds (the queue's length) */

static volatile sig_atomic_t stop;
static unsigned reorder_every, dup_every;
static uint64_t seen, reordered, duplicated, stalls, stalled, acks_dropped;
static unsigned stall_gap, stall_ms, stall_every, stall_max;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static bool stall_quiet;        /* --stall: a quiet gap starts a stall */
static uint64_t stall_began;    /* ms: the last stall's start (0: none yet) */
static uint64_t last_at;        /* ms: the last packet (0: none yet) */
static uint64_t stall_until;    /* ms (CLOCK_MONOTONIC); 0: not stalling */
static uint32_t stall_ids[STALL_MAX];
static int32_t stall_ack_qpn[STALL_MAX]; /* an ACK's destination QP, or -1 */
static unsigned stall_n;
static int raw_fd = -1;
static struct nfq_q_handle *qh;
static uint32_t held_id; /* 0 = none (netfilter ids start at 1) */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void verdict(uint32_t id)
{
	if (nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL) < 0)
		fprintf(stderr, "roce_relay: verdict for %u: %s\n", id, strerror(errno));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* the end of a stall: what it held goes out, in order */
static void stall_release(void)
{
	for (unsigned i = 0; i < stall_n; i++)
		if (stall_ids[i])
			verdict(stall_ids[i]);
	stall_n = 0;
	stall_until = 0;
}

/* A copy of an IPv4 packet, sent as it is (IP_HDRINCL) with the mark that
 * keeps it out of the queue. */
static void send_copy(const unsigned char *pkt, int len)
{
	const struct iphdr *ip = (const struct iphdr *)pkt;
	struct sockaddr_in to = { .sin_family = AF_INET };

	if (len < (int)sizeof(*ip) || ip->version != 4)
		return;
	to.sin_addr.s_addr = ip->daddr;
	if (sendto(raw_fd, pkt, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)) != len)
		fprintf(stderr, "roce_relay: raw send: %s\n", strerror(errno));
	else
		duplicated++;
}

/* The destination QP of a RoCEv2 ACK (BTH opcode RC ACKNOWLEDGE, AETH
 * syndrome ACK), or -1 for any other packet. */
static int32_t ack_qpn(const unsigned char *pkt, int len)
{
	const struct iphdr *ip = (const struct iphdr *)pkt;
	const unsigned char *bth;
	int ihl;

	if (len < (int)sizeof(*ip) || ip->version != 4 || ip->protocol != IPPROTO_UDP)
		return -1;
	ihl = ip->ihl * 4;
	if (len < ihl + 8 + 12 + 4)
		return -1;
	bth = pkt + ihl + 8;
	if (bth[0] != 0x11 || (bth[12] & 0x60) != 0)
		return -1;
	return (int32_t)((uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7]);
}

static int on_packet(struct nfq_q_handle *q, struct nfgenmsg *msg, struct nfq_data *nfa, void *data)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	unsigned char *payload;
	uint64_t t;
	uint32_t id;
	bool quiet, due;
	int len;

	(void)q;
	(void)msg;
	(void)data;
	if (!ph)
		return 0;
	id = ntohl(ph->packet_id);
	seen++;
	len = nfq_get_payload(nfa, &payload);
	if (dup_every && seen % dup_every == 0 && len > 0)
		send_copy(payload, len);
	t = now_ms();
	quiet = stall_quiet && (!last_at || t - last_at >= stall_gap);
	due = stall_every && (!stall_began || t - stall_began >= stall_every);
	last_at = t;
	if (!stall_until && stall_ms && (quiet || due)) {
		if (held_id) {          /* a packet held for reordering goes first */
			verdict(held_id);
			held_id = 0;
		}
		stall_until = t + stall_ms;
		if (stall_max > stall_ms) {     /* xorshift64 */
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			stall_until += rng % (stall_max - stall_ms + 1);
		}
		stall_began = t;
		stalls++;
	}
	if (stall_until) {
		if (stall_n == STALL_MAX) {
			stall_release();
			verdict(id);
			return 0;
		}
		{
			int32_t qpn = len > 0 ? ack_qpn(payload, len) : -1;

			for (unsigned i = 0; qpn >= 0 && i < stall_n; i++) {
				if (stall_ids[i] && stall_ack_qpn[i] == qpn) {
					/* a later ACK of the QP covers it */
					if (nfq_set_verdict(qh, stall_ids[i], NF_DROP, 0, NULL) < 0)
						fprintf(stderr, "roce_relay: drop %u: %s\n", stall_ids[i],
							strerror(errno));
					stall_ids[i] = 0;
					acks_dropped++;
				}
			}
			stall_ack_qpn[stall_n] = qpn;
		}
		stall_ids[stall_n++] = id;
		stalled++;
		return 0;
	}
	if (held_id) {
		/* this one first, then the one held back */
		verdict(id);
		verdict(held_id);
		held_id = 0;
		reordered++;
		return 0;
	}
	if (reorder_every && seen % reorder_every == 0) {
		held_id = id;
		return 0;
	}
	verdict(id);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: roce_relay --queue Q --mark MARK [--reorder N] [--dup N] [--stall GAP:MS]\n"
			"                  [--stall-every T:MS[-MAX]] [--stats FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "queue", required_argument, NULL, 'q' }, { "mark", required_argument, NULL, 'm' },
		{ "reorder", required_argument, NULL, 'r' }, { "dup", required_argument, NULL, 'd' },
		{ "stall", required_argument, NULL, 't' }, { "stall-every", required_argument, NULL, 'e' },
		{ "stats", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *stats = NULL;
	unsigned long queue = 0, mark = 0;
	struct nfq_handle *h;
	struct sigaction sa = { .sa_handler = on_signal };
	char buf[65536 + 4096];
	int c, fd, one = 1;
	bool have_queue = false;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'q': queue = strtoul(optarg, NULL, 0); have_queue = true; break;
		case 'm': mark = strtoul(optarg, NULL, 0); break;
		case 'r': reorder_every = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': dup_every = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': stats = optarg; break;
		case 't':
		case 'e': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 0);

			if (*end != ':' || v > 3600000)
				usage();
			if (c == 't') {
				stall_gap = (unsigned)v;
				stall_quiet = true;
			} else {
				if (!v)
					usage();
				stall_every = (unsigned)v;
			}
			stall_ms = (unsigned)strtoul(end + 1, &end, 0);
			if (c == 'e' && *end == '-')
				stall_max = (unsigned)strtoul(end + 1, &end, 0);
			if (*end || !stall_ms || stall_ms > 60000 || stall_max > 60000)
				usage();
			break;
		}
		default: usage();
		}
	}
	if (!have_queue || queue > 65535 || optind != argc)
		usage();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	raw_fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (raw_fd < 0 || setsockopt(raw_fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one)) < 0 ||
	    setsockopt(raw_fd, SOL_SOCKET, SO_MARK, &(int){ (int)mark }, sizeof(int)) < 0) {
		fprintf(stderr, "roce_relay: raw socket: %s\n", strerror(errno));
		return 1;
	}
	h = nfq_open();
	if (!h) {
		fprintf(stderr, "roce_relay: nfq_open: %s\n", strerror(errno));
		return 1;
	}
	qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh || nfq_set_mode(qh, NFQNL_COPY_PACKET, 0xffff) < 0 || nfq_set_queue_maxlen(qh, STALL_MAX) < 0) {
		fprintf(stderr, "roce_relay: queue %lu: %s\n", queue, strerror(errno));
		return 1;
	}
	fd = nfq_fd(h);
	printf("ready queue %lu reorder every %u dup every %u stall after %u ms idle or every %u ms for %u ms\n",
	       queue, reorder_every, dup_every, stall_quiet ? stall_gap : 0, stall_every, stall_ms);
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait = held_id ? HOLD_MS : 200, n;

		if (stall_until) {
			uint64_t t = now_ms();

			wait = t >= stall_until ? 0 : (int)(stall_until - t);
		}
		n = poll(&p, 1, wait);
		if (n < 0 && errno != EINTR)
			break;
		if (stall_until && now_ms() >= stall_until)
			stall_release();
		if (n == 0 && held_id) {
			/* nothing came after it: let it go alone */
			verdict(held_id);
			held_id = 0;
			continue;
		}
		if (n <= 0)
			continue;
		n = (int)recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == ENOBUFS) /* the kernel dropped some: go on */
				continue;
			if (errno == EINTR)
				continue;
			fprintf(stderr, "roce_relay: recv: %s\n", strerror(errno));
			break;
		}
		nfq_handle_packet(h, buf, n);
	}
	if (held_id)
		verdict(held_id);
	stall_release();
	nfq_destroy_queue(qh);
	nfq_close(h);
	if (stats) {
		FILE *f = fopen(stats, "w");

		if (f) {
			fprintf(f, "seen %llu reordered %llu duplicated %llu stalls %llu stalled %llu acks_dropped %llu\n",
				(unsigned long long)seen, (unsigned long long)reordered,
				(unsigned long long)duplicated, (unsigned long long)stalls,
				(unsigned long long)stalled, (unsigned long long)acks_dropped);
			fclose(f);
		}
	}
	printf("seen %llu reordered %llu duplicated %llu stalls %llu stalled %llu acks_dropped %llu\n",
	       (unsigned long long)seen, (unsigned long long)reordered, (unsigned long long)duplicated,
	       (unsigned long long)stalls, (unsigned long long)stalled, (unsigned long long)acks_dropped);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* roce_relay: reorders and duplicates the packets a netfilter queue hands it,
 * for the multi-host tests (tests/integration/mhlib.sh, mh_relay).  The test
 * sends a host's RoCE packets into the queue:
 *
 *   iptables -t mangle -A OUTPUT -p udp --dport 4791 \
 *            -m mark ! --mark MARK -j NFQUEUE --queue-num Q
 *   roce_relay --queue Q --mark MARK [--reorder N] [--dup N] [--stats FILE]
 *
 *   --reorder N  every Nth packet is held back until the next one has passed
 *                (or HOLD_MS went by without one): the two swap places
 *   --dup N      every Nth packet also goes out a second time (a copy sent
 *                on a raw socket with MARK, which the rule lets through)
 *   --stats FILE written at exit: "seen S reordered R duplicated D"
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
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define HOLD_MS 50

static volatile sig_atomic_t stop;
static unsigned reorder_every, dup_every;
static uint64_t seen, reordered, duplicated;
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

static int on_packet(struct nfq_q_handle *q, struct nfgenmsg *msg, struct nfq_data *nfa, void *data)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	unsigned char *payload;
	uint32_t id;
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
	fprintf(stderr, "usage: roce_relay --queue Q --mark MARK [--reorder N] [--dup N] [--stats FILE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "queue", required_argument, NULL, 'q' }, { "mark", required_argument, NULL, 'm' },
		{ "reorder", required_argument, NULL, 'r' }, { "dup", required_argument, NULL, 'd' },
		{ "stats", required_argument, NULL, 's' }, { NULL, 0, NULL, 0 },
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
	if (!qh || nfq_set_mode(qh, NFQNL_COPY_PACKET, 0xffff) < 0) {
		fprintf(stderr, "roce_relay: queue %lu: %s\n", queue, strerror(errno));
		return 1;
	}
	fd = nfq_fd(h);
	printf("ready queue %lu reorder every %u dup every %u\n", queue, reorder_every, dup_every);
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, held_id ? HOLD_MS : 200);

		if (n < 0 && errno != EINTR)
			break;
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
	nfq_destroy_queue(qh);
	nfq_close(h);
	if (stats) {
		FILE *f = fopen(stats, "w");

		if (f) {
			fprintf(f, "seen %llu reordered %llu duplicated %llu\n", (unsigned long long)seen,
				(unsigned long long)reordered, (unsigned long long)duplicated);
			fclose(f);
		}
	}
	printf("seen %llu reordered %llu duplicated %llu\n", (unsigned long long)seen,
	       (unsigned long long)reordered, (unsigned long long)duplicated);
	return 0;
}

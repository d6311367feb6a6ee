/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fabric's internals (engine/wire*.c only).
 *
 *   wire_dir.c  the engine's copy of the directory: remote hosts and GIDs
 *   wire.c      the socket, the wire thread, packet batches, receive checks
 *               (who may send to whom), UD, connecting a QP to a remote peer
 *   wire_rc.c   reliable connection as rxe does it: the requester's packets,
 *               PSN window, retransmission, the completer (ACK, NAK, read
 *               responses) and the responder (PSN checks, duplicates, RNR,
 *               responder resources for READ and atomics)
 *
 * Threads: the engine thread sends requests (wire_rc_process, from
 * req_process); the wire thread receives, answers and runs the
 * retransmission and RNR timers.  Both hold the big lock while they touch
 * a QP and flush their packets before they let it go, so the one batch
 * (struct engine_wire.tx) is never shared across a lock release.
 */
#ifndef UNIRDMA_ENGINE_WIRE_H
#define UNIRDMA_ENGINE_WIRE_H

#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "futex.h"
#include "internal.h"
#include "roce.h"

#define WIRE_BATCH       64             /* packets per sendmmsg / recvmmsg */
#define WIRE_MAX_IOV     40             /* header, payload pieces, pad + ICRC */
#define WIRE_HDR_MAX     64             /* BTH and extension headers: at most 40 */
#define WIRE_RX_BUF      (4096 + 128)   /* one datagram: MTU 4096 payload + headers */
#define WIRE_RX_GRO_BUF  65536          /* with UDP_GRO: a train of datagrams */
#define WIRE_GSO_SEGS    64             /* packets per GSO send (the kernel's UDP_MAX_SEGMENTS) */
#define WIRE_GSO_BYTES   65000          /* UDP payload of one GSO send, at most (IP's 64 KiB less headers) */
/* Unacknowledged PSNs a requester may have (its cwnd's ceiling).  rxe's
 * requester stops at 128 (RXE_MAX_UNACKED_PSNS); a responder, rxe's too,
 * sets no limit.  256 rides out the ms a peer's wire thread waits for its
 * CPU here: 64 KiB WRITEs across hosts 1387 -> 1614 MB/s (means of five
 * alternating quick runs, stop 24). */
#define WIRE_WINDOW      256
#define WIRE_ACK_EVERY   64             /* AckReq at least every this many packets */
#define WIRE_MAX_INFLIGHT 256           /* WQEs in flight per QP */
#define WIRE_OOO_SLOTS   WIRE_WINDOW    /* packets a responder holds after a gap */
#define WIRE_OOO_MAX_BYTES (64u << 20)  /* held packets' buffers, all QPs of a daemon */
#define WIRE_OOO_VRNIC_BYTES (WIRE_OOO_MAX_BYTES / 4) /* ... of one vRNIC's QPs */
#define WIRE_OOO_IDLE_NS (1000ull * 1000 * 1000) /* a QP's buffer goes back after this unused */
#define WIRE_MAX_RES     128            /* responder resources (READ, atomics) kept */
#define GRH_BYTES        40u
#define WIRE_SPORTS      16             /* UDP source ports the QPs spread over (a power of two) */

struct wire_gid {
	uint8_t gid[16];
	char tenant[URD_NAME_MAX + 1];
	struct engine_host *host;
	struct wire_gid *next;
};

struct wire_gid *wire_gid_find(struct urd_daemon *d, const uint8_t gid[16]);
void wire_dir_free(struct urd_daemon *d);
struct engine_host *wire_host_by_qpn(struct urd_daemon *d, uint32_t qpn);

/* One batch of packets under construction.
 *
 * UDP GSO (engine_wire.gso): consecutive packets of one length from one
 * address to one address (the last may be shorter) leave in one send with
 * UDP_SEGMENT; the kernel cuts the buffer at that length, writes each
 * piece's IP and UDP headers and numbers the IP IDs 0, 1, 2, ... (an
 * unconnected socket with DF starts at 0; inet_gso_segment counts up).
 * Each packet is a whole RoCE packet, BTH to ICRC, whose ICRC was computed
 * for the ID of its place in its group (gpos), so what leaves is exactly
 * what rxe or a RoCE NIC would send, packet by packet, in one syscall. */
struct wire_tx {
	uint32_t n;
	struct mmsghdr msg[WIRE_BATCH];
	uint8_t gpos[WIRE_BATCH];               /* place in its GSO group (0: its first) */
	uint16_t pay[WIRE_BATCH];               /* UDP payload length */
	uint32_t sip[WIRE_BATCH];
	uint32_t qpn[WIRE_BATCH];               /* the sending QP: a group is one QP's */
	bool gopen;                             /* the last packet's group takes more */
	uint32_t gbytes;                        /* UDP payload of the open group */
	struct mmsghdr gmsg[WIRE_BATCH];        /* one per group, at flush */
	uint32_t gfirst[WIRE_BATCH], gn[WIRE_BATCH];
	struct iovec giov[WIRE_BATCH * WIRE_MAX_IOV];
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} gctl[WIRE_BATCH];
	struct iovec iov[WIRE_BATCH][WIRE_MAX_IOV];
	uint8_t hdr[WIRE_BATCH][WIRE_HDR_MAX];
	uint8_t trailer[WIRE_BATCH][8];
	struct sockaddr_in dst[WIRE_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} ctl[WIRE_BATCH];
	struct engine_host *host[WIRE_BATCH];
	int fd[WIRE_BATCH];                     /* the socket of its source port */
	int gfd[WIRE_BATCH];                    /* ... of each group, at flush */
	uint8_t bounce[WIRE_BATCH][4096];       /* payloads in more pieces than iov takes */
};

struct engine_wire {
	int fd;                         /* UDP 4791: receives, sends multicast */
	/* Sending sockets, each bound to a port of its own: a QP's packets leave
	 * from one of them (wire_sport), as a RoCE NIC gives each QP a source
	 * port, so that ECMP spreads QPs over paths; -1: that slot sends from
	 * fd (port 4791) */
	int sfd[WIRE_SPORTS];
	uint16_t sport[WIRE_SPORTS];
	char dev[IF_NAMESIZE];
	uint32_t ip;                    /* the underlay's address, network order */
	uint32_t dev_mtu;
	uint32_t port_mtu;              /* enum ibv_mtu */
	int ifindex;                    /* the underlay's: multicast goes out there */
	uint64_t ooo_alloc;             /* bytes of the QPs' held-packet buffers */
	struct wire_qp *ooo_list;       /* the QPs that have one */
	uint64_t ooo_sweep_at;          /* next look for buffers unused for WIRE_OOO_IDLE_NS */
	pthread_t thread;
	bool started;
	uint64_t next_timer;            /* earliest RTO/RNR deadline (0: scan now) */
	uint64_t sleep_until;           /* the wire thread sleeps until then (0: awake) */
	int efd;                        /* eventfd: an earlier timer wakes the wire thread */
	struct wire_qp *timers;         /* QPs with something in flight or an RNR wait */
	struct wire_tx tx;
	bool gso;                       /* send trains of packets with UDP_SEGMENT */
	bool gro;                       /* receive them with UDP_GRO */
	/* packets per syscall */
	uint64_t tx_calls, tx_pkts, rx_calls, rx_pkts, tx_dropped, tx_gso_sends, rx_gro_trains;
	/* packets and payload bytes the kernel put straight into registered
	 * memory (wire.c, rx_in_place) */
	uint64_t rx_placed_pkts, rx_placed_bytes;
	uint64_t rx_place_misses;       /* placed, not the packet predicted: put back */
	uint32_t fault_skew, fault_skew_n;      /* UNIRDMA_FAULT_IN_PLACE_SKEW */
	bool rx_in_place_ok;            /* not UNIRDMA_WIRE_RX_COPY=1 */
	uint64_t in_place_until;        /* in_place stays on until then at least */
	uint64_t in_place_quiet_until;  /* no hint turns it on before then */
	uint32_t in_place_lone;         /* datagrams in a row that were no train */
	bool in_place;                  /* look at each datagram first (atomic: the
					 * engine thread sets it too) */
	uint32_t in_place_miss;         /* heads in a row that were not for that */
	uint32_t rx_size;               /* bytes of each receive buffer */
	uint8_t *rx;                    /* WIRE_BATCH buffers of rx_size */
};

/* A send WQE in flight, copied when it was first sent: the tenant may
 * rewrite its slot meanwhile. */
struct wire_wqe {
	uint32_t first_psn, last_psn;   /* READ: the responses' PSNs */
	uint32_t len;
	uint32_t npkts;
	bool failed;                    /* local error found when it was started */
	uint8_t status;                 /* its status then */
	uint8_t wqe[] __attribute__((aligned(8)));      /* the slot's bytes */
};

/* A responder resource: a READ or an atomic kept for replay of duplicates. */
struct wire_res {
	bool valid, atomic;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t orig;                  /* the atomic's original value */
};

/* Per QP whose peer is on another host (RC), allocated when it is connected. */
struct wire_qp {
	struct vr_qp *qp;
	uint32_t sip, dip;              /* our vRNIC's and the peer's addresses */
	bool by_qpn;                    /* no GRH: dip is the peer host's address,
					 * found by the QPN range of dest_qp_num */
	uint32_t mtu;                   /* path MTU in bytes */
	/* requester */
	uint32_t psn;                   /* next PSN to send (req.psn) */
	uint32_t una;                   /* oldest unacknowledged PSN (comp.psn) */
	uint32_t psn_max;               /* after the highest PSN ever sent */
	uint32_t next_idx;              /* SQ index of the next WQE to start */
	uint32_t hi_idx;                /* after the last WQE ever started: a go-back
					 * takes back [next_idx, hi_idx), which keep
					 * their PSNs */
	uint32_t cur_idx;               /* WQE being sent (== next_idx - 1 while cur_off < len) */
	bool cur_open;                  /* a WQE is partly sent */
	bool in_retry;                  /* went back for a gap in responses */
	uint32_t cur_pkt;               /* its next packet */
	uint32_t noack;                 /* packets since the last AckReq */
	uint32_t cwnd, cwnd_acc;        /* congestion window in PSNs (wire_rc.c) */
	uint32_t cwnd_psn;              /* the PSNs before it counted for cwnd */
	uint32_t rd_out;                /* READs and atomics in flight */
	uint32_t retry_left, rnr_left;
	uint64_t rto_at;                /* retransmission deadline, 0: off */
	uint64_t tlp_at;                /* tail-loss probe due, 0: off */
	bool tlp_sent;                  /* one went out since the last progress */
	uint64_t rnr_at;                /* RNR wait until, 0: none */
	uint64_t progress_at;           /* last progress (or first send after idle) */
	uint64_t srtt;                  /* smoothed round trip, ns (0: none yet) */
	uint64_t rttvar;                /* its mean deviation, ns (RFC 6298) */
	uint32_t backoff;               /* resend timer doublings since progress */
	uint32_t back_psn;              /* the last PSN-sequence NAK gone back for, */
	uint64_t back_at;               /* and when */
	bool sel_wait;                  /* only back_psn went again (AETH_HELD): its ACK is due */
	uint64_t probe_at;              /* RTT sample: sent at, and its PSN */
	uint32_t probe_psn;
	uint32_t ring_n;                /* in-flight slots (power of two) */
	uint32_t wqe_bytes;             /* bytes of one entry */
	uint8_t *ring;                  /* ring_n entries of struct wire_wqe + slot */
	/* responder */
	uint32_t epsn;                  /* expected PSN */
	uint32_t msn;
	bool nak_sent;                  /* a PSN-sequence NAK went out for this gap, */
	uint64_t nak_at;                /* at this time */
	/* packets after a gap from a unirdma peer, held (by PSN) until the
	 * gap is filled, then taken in order: that peer sends again only what
	 * was lost (wire_rc.c, ooo_hold) */
	uint8_t *ooo;                   /* WIRE_OOO_SLOTS entries of ooo_bytes, or NULL */
	struct wire_qp *ooo_next;       /* the daemon's QPs with a buffer (ooo_list) */
	uint64_t ooo_used_at;           /* last held or drained */
	uint32_t ooo_bytes;             /* one entry: struct wire_ooo + mtu */
	uint32_t ooo_n;                 /* entries held */
	bool ooo_lost;                  /* one after the gap was dropped, not held */
	uint8_t in_msg;                 /* 0, or 1 a SEND, 2 a WRITE in progress */
	bool rx_wqe;                    /* a receive WQE is taken by the SEND in progress */
	bool uc_drop;                   /* UC: dropping until a FIRST or ONLY */
	uint64_t rx_wr_id;
	uint32_t rx_nsge;
	uint64_t rx_off;
	struct urd_sge rx_sge[URD_MAX_SGE];
	uint64_t wr_va;                 /* WRITE in progress: next address, key, bytes left */
	uint32_t wr_rkey;
	uint64_t wr_resid;
	struct wire_res res[WIRE_MAX_RES];
	uint32_t res_next;
	/* timer list */
	struct wire_qp *timer_next;
	bool on_timer;
};

static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline struct wire_wqe *wire_slot(const struct wire_qp *w, uint32_t idx)
{
	return (struct wire_wqe *)(w->ring + (size_t)(idx & (w->ring_n - 1)) * w->wqe_bytes);
}

/* wire.c */
struct wire_pkt_out {                   /* what wire_emit sends */
	struct roce_hdr h;
	uint32_t sip, dip;
	const struct vsge *pay;         /* payload: a gather list ... */
	uint32_t npay;
	uint64_t pay_off;               /* ... from this offset */
	uint32_t pay_len;
	const uint8_t *flat;            /* or flat bytes */
	struct engine_host *host;       /* counters */
	struct engine *eng;
	uint32_t lqpn;                  /* the sending QP (its source port) */
};
void wire_emit(struct engine_wire *w, const struct wire_pkt_out *p);
void wire_flush(struct engine_wire *w);
void wire_timer_arm(struct engine_wire *w, struct wire_qp *q, uint64_t at);
struct engine_host *wire_host_of(struct urd_daemon *d, uint32_t ip);
/* Whether qp may send to dip now: a GID the directory puts in qp's tenant. */
bool wire_may_send(struct vr_qp *qp, uint32_t dip, struct engine_host **host);
/* The sending socket and UDP source port of local QP qpn's packets. */
int wire_sport(const struct engine_wire *w, uint32_t qpn, uint16_t *port);

/* wire_rc.c */
struct wire_rx {                        /* a received packet that passed the checks */
	struct roce_hdr h;
	bool placed;                    /* h.payload is already where the WRITE puts it */
	uint32_t sip, dip;
	struct engine_host *host;
	struct wire_counters *cnt;
};
/* Receiving in place (wire.c, rx_in_place): where the payload of packet psn
 * (a MIDDLE or LAST of an RDMA WRITE or READ response) goes if it continues
 * the message under way on qp, in sequence; false if it does not. */
/* A bulk message is coming (a WRITE of this many bytes started, a READ of
 * them asked for, a train of them came): the wire thread looks at each
 * datagram first for at least WIRE_IN_PLACE_HOLD_NS, unless it found
 * packets coming one by one in the last WIRE_IN_PLACE_QUIET_NS and no train
 * since (no UDP GRO on the path: a look per datagram would cost more than
 * the copy it saves).
 * Big lock held. */
#define WIRE_IN_PLACE_MIN (16u << 10)
#define WIRE_IN_PLACE_HOLD_NS (20ull * 1000 * 1000)
#define WIRE_IN_PLACE_QUIET_NS (1000ull * 1000 * 1000)
static inline void wire_in_place_hint(struct engine_wire *w)
{
	uint64_t now;

	if (!w->rx_in_place_ok)
		return;
	now = urd_now_ns();
	if (now < w->in_place_quiet_until)
		return;
	w->in_place_until = now + WIRE_IN_PLACE_HOLD_NS;
	__atomic_store_n(&w->in_place, true, __ATOMIC_RELAXED);
}

struct wire_dst {
	struct vsge sg[ENGINE_MAX_SGE]; /* the message's destination */
	uint32_t nsg;
	uint64_t at;                    /* where in sg the packet's payload starts */
	uint64_t resid;                 /* bytes the message has left from there */
	uint32_t last_hl;               /* header bytes of the message's LAST */
};
bool wire_rc_dst(struct vr_qp *qp, uint8_t opcode, uint32_t psn, struct wire_dst *m);
bool wire_rc_process(struct vr_qp *qp, uint64_t now, uint32_t budget, int64_t *bytes);
void wire_rc_rx(struct urd_daemon *d, struct vr_qp *qp, struct wire_rx *rx, uint64_t now);
void wire_rc_timer(struct urd_daemon *d, struct wire_qp *q, uint64_t now);
struct wire_qp *wire_rc_new(struct vr_qp *qp, uint32_t sip, uint32_t dip);
void wire_rc_sync(struct vr_qp *qp);

#endif

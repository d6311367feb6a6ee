/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The engine's interface to the control plane: the only engine header that
 * daemon/ may include.
 *
 * The engine plays the RNIC.  The control plane (daemon/: mailbox handlers,
 * admin, metrics) creates and destroys objects and calls the engine through
 * the functions below; the engine never calls back into it.  It calls down
 * only into the object model's services in core/ (tables and lookups,
 * async events and CQ notification) and into common/.  tests/check-layering.sh
 * checks both walls.
 *
 * The engine's own state lives in three structs embedded in the model's
 * objects (core/objects.h): struct engine in the daemon, struct engine_vrnic
 * in each vRNIC, struct engine_qp in each QP.  Only engine/ writes them; the
 * control plane reads the counters (metrics) under the big lock.
 */
#ifndef UNIRDMA_ENGINE_H
#define UNIRDMA_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct urd_daemon;
struct urd_vrnic;
struct vr_qp;
struct engine_xfer;
struct futex_waitv;
struct engine_wire;
struct wire_qp;

/* Why a QP's send queue is parked on the timer list. */
enum engine_wait { QP_WAIT_NONE = 0, QP_WAIT_RNR, QP_WAIT_RETRY, QP_WAIT_QOS };

/* Per QP. */
struct engine_qp {
	bool active;                    /* on the work list */
	struct vr_qp *active_next;
	enum engine_wait wait;
	uint64_t wait_until_ns;
	uint32_t rnr_left, retry_left;  /* retries left for the WQE at the SQ head */
	uint32_t retry_head;            /* SQ index the retry counters belong to */
	bool retry_armed;
	struct vr_qp *wait_next;        /* on the timer list while wait != NONE */
	struct engine_xfer *xfer;       /* a message in pieces (internal.h), or NULL */
	struct wire_qp *wire;           /* RC peer on another host (wire.h), or NULL */
};

/* Per vRNIC: its QPs with work, in the order they get their turns.  A pass
 * gives each vRNIC a budget of bytes; QPs it did not reach keep their place,
 * untouched, so that the cost of a pass follows the work done, not the
 * number of QPs waiting. */
struct engine_vrnic {
	struct vr_qp *active_head, *active_tail;
	uint32_t nactive;
};

/* Why a received packet was dropped (engine_wire_counters.drops). */
enum wire_drop {
	WDROP_MALFORMED = 0,    /* too short, bad BTH (TVer, P_Key), unknown opcode */
	WDROP_ICRC,             /* ICRC does not match */
	WDROP_UNKNOWN_SOURCE,   /* source GID not in the directory nor admitted */
	WDROP_SPOOFED_LOCAL,    /* source GID is one of this host's own vRNICs */
	WDROP_OTHER_TENANT,     /* source GID's tenant is not the destination QP's */
	WDROP_NO_QP,            /* no such destination QPN (or QP 0/1) */
	WDROP_QP_STATE,         /* destination QP cannot receive (not RTR/RTS) */
	WDROP_NOT_PEER,         /* RC: not the QP's connected peer (GID, QPN) */
	WDROP_PSN,              /* RC: out of sequence after one NAK, or stale */
	WDROP_QKEY,             /* UD: Q_Key mismatch */
	WDROP_NO_RECV,          /* UD: no receive WQE */
	WDROP_TRANSPORT,        /* opcode of another transport than the QP's */
	WDROP_UC,               /* UC: a message the responder could not take, or
				 * a packet after a gap or a drop (no FIRST) */
	WDROP_NUM
};

/* NAK syndromes counted per host (sent and received). */
enum wire_nak { WNAK_SEQ = 0, WNAK_INV_REQ, WNAK_ACCESS, WNAK_OP, WNAK_RNR, WNAK_NUM };

struct wire_counters {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;  /* bytes: UDP payloads */
	uint64_t retransmits;           /* packets sent again (timeout or NAK) */
	uint64_t timeouts;              /* retransmission timer expiries */
	uint64_t tail_probes;           /* last packets sent again after 2 srtt without an ACK */
	uint64_t held;                  /* packets after a gap held by a responder (unirdma peers) */
	uint64_t acks_tx, acks_rx;
	uint64_t naks_tx[WNAK_NUM], naks_rx[WNAK_NUM];
	uint64_t drops[WDROP_NUM];
};

#define ENGINE_HOST_NAME_MAX 63

/* A peer host: another unirdmad, or an admitted external RoCE node. */
struct engine_host {
	char name[ENGINE_HOST_NAME_MAX + 1];
	uint32_t ip;                    /* its underlay address, network order */
	uint64_t incarnation;           /* a restarted daemon is a new one */
	bool external;
	uint32_t qpn_base, qpn_span;    /* its QPN range (0, 0: none known) */
	struct wire_counters cnt;       /* traffic with this host's GIDs */
	struct engine_host *next;
};

/* The engine's copy of the directory (wire_dir.c). */
#define WIRE_GID_BUCKETS 4096
struct wire_gid;
struct wire_dir {
	struct engine_host *hosts;
	struct wire_gid *gids[WIRE_GID_BUCKETS];
	uint32_t ngids;
	struct wire_counters cnt;       /* packets that belong to no host */
};

/* Per daemon: the engine thread, its lists and counters. */
struct engine {
	pthread_t thread;
	uint32_t nactive;               /* QPs on the vRNICs' work lists */
	uint32_t next_vr;               /* the vRNIC the next pass starts with */
	struct vr_qp *wait_head;        /* QPs waiting for an RNR, retry or QoS timer */
	uint32_t kick;                  /* private futex word: the control plane wakes the engine */
	uint64_t copied_bytes;          /* every byte moved (payload, GRH, atomic results) */
	uint64_t passes, sleeps;
	uint64_t xfer_token;            /* names messages in pieces */
	uint64_t yields;                /* times it handed the big lock to a waiter */
	bool lock_slow;                 /* took the lock by blocking (engine.c) */
	/* with more vRNICs than one futex_waitv takes, a second thread waits on
	 * the rest and kicks the engine */
	pthread_t waiter;
	bool waiter_started;
	uint32_t waiter_kick;           /* the waiter's private futex word */
	uint32_t waiter_n;              /* words the engine handed it, under the big lock */
	struct futex_waitv *waiter_list;        /* those words (engine.c) */
	struct engine_wire *wire;       /* the fabric (wire.c), NULL without an underlay */
	struct wire_dir dir;            /* remote hosts and GIDs (wire_dir.c) */
};

/* The engine thread (engine.c). */
int engine_start(struct urd_daemon *d);
void engine_stop(struct urd_daemon *d);
void engine_kick(struct urd_daemon *d);        /* wake it: new work or a changed vRNIC */
void engine_kick_if_work(struct urd_daemon *d); /* wake it if a QP has work (big lock held) */

/* QPs; the big lock is held for each of these. */
void engine_activate(struct vr_qp *qp);       /* the SQ has work (or must be flushed) */
void engine_forget(struct vr_qp *qp);         /* qp is going away: off every list */
void engine_unwait(struct vr_qp *qp);         /* off the timer list */
/* The QP enters the error state: its timers stop, its queues are flushed by
 * the engine; async: post IBV_EVENT_QP_FATAL (the first time). */
void engine_qp_error(struct vr_qp *qp, bool async);

/* For fuzz harnesses and unit tests that run the engine without its thread:
 * one pass over the work list (big lock held); true if it did work, and
 * *next_timer the earliest timer (UINT64_MAX: none). */
bool engine_pass(struct urd_daemon *d, uint64_t now, uint64_t *next_timer);

/* ---- The fabric: other hosts over RoCEv2 (engine/wire*.c) ----------------
 *
 * With an underlay (unirdmad --underlay DEV) the engine owns one UDP socket on
 * DEV's address, port 4791, and carries the traffic of QPs whose peer GID is
 * not a local vRNIC as genuine RoCEv2 (../shared/reference/ROCE.md).  A GID's
 * IPv4 address is its address on the underlay: a vRNIC's address is added to
 * DEV, so peers (other daemons, kernel rxe, hardware) reach it as any RoCE
 * GID.  The control plane's directory client tells the engine which remote
 * GIDs exist, in which tenant and on which host (engine_gid_set); a packet
 * whose source GID is not there, or is in another tenant than its
 * destination QP, is dropped and counted. */

/* Start the fabric on underlay dev (before engine_start): bind UDP 4791 on
 * its first IPv4 address and start the wire thread; gso: trains of packets
 * leave with UDP GSO and arrive with UDP GRO (engine/wire.h).  0 or -errno,
 * with a message in err. */
int engine_wire_start(struct urd_daemon *d, const char *dev, bool gso, char *err, size_t errlen);
void engine_wire_stop(struct urd_daemon *d);
bool engine_wire_on(const struct urd_daemon *d);
/* The underlay's address (network order), its MTU, and the active MTU of
 * every vRNIC's port (enum ibv_mtu): the underlay MTU less 80, rounded down,
 * as rxe's rxe_set_mtu; IBV_MTU_4096 without an underlay. */
uint32_t engine_wire_ip(const struct urd_daemon *d);
uint32_t engine_wire_dev_mtu(const struct urd_daemon *d);
uint32_t engine_port_mtu(const struct urd_daemon *d);
const char *engine_wire_dev(const struct urd_daemon *d);

/* A QP entered RTR or RTS: an RC QP whose AV names a GID that is not a
 * vRNIC of this host gets its connection state for the wire. */
void engine_qp_connect(struct vr_qp *qp);
/* The host's first QP joined multicast group gid, or its last one left: the
 * wire joins or leaves the group's IPv4 multicast address on the underlay
 * (nothing without a wire or for a GID that is no IPv4 one). */
void engine_mcast_join(struct urd_daemon *d, const uint8_t gid[16], bool join);
/* gid is ::ffff:a.b.c.d: *ip = a.b.c.d (network order) */
bool engine_gid_ip(const uint8_t gid[16], uint32_t *ip);

/* Packets per system call, for the operator and the benchmarks. */
struct engine_wire_stats {
	uint64_t tx_calls, tx_pkts, rx_calls, rx_pkts, tx_dropped, tx_gso_sends, rx_gro_trains;
	uint64_t rx_placed_pkts, rx_placed_bytes;       /* received straight into registered memory */
	uint64_t rx_place_misses;       /* placed, but not the packet predicted (put back, copied) */
	uint64_t held_bytes, held_qps;  /* held-packet buffers (wire_rc.c ooo_hold) and their QPs */
};
void engine_wire_stats(const struct urd_daemon *d, struct engine_wire_stats *s);

/* The directory's view, kept by the engine for the data path.  Big lock
 * held.  engine_host_del forgets the host's GIDs too. */
int engine_host_set(struct urd_daemon *d, const char *name, uint32_t ip, uint64_t incarnation, bool external);
void engine_host_del(struct urd_daemon *d, const char *name);
/* The host's QPN range: a QP connected without a GRH (qperf, the pingpongs
 * without -g) reaches a remote QPN through it, at the host's address. */
int engine_host_qpns(struct urd_daemon *d, const char *name, uint32_t base, uint32_t span);
int engine_gid_set(struct urd_daemon *d, const uint8_t gid[16], const char *tenant, const char *host);
void engine_gid_del(struct urd_daemon *d, const uint8_t gid[16]);
/* Reading them (admin, metrics): hosts in a list, counters of packets that
 * belong to no host (unknown sources and the like). */
const struct engine_host *engine_hosts(const struct urd_daemon *d);
const struct wire_counters *engine_wire_counters(const struct urd_daemon *d);
/* A connected RC/UC QP's transport state on the wire, for the operator and
 * for tests that hang (vrnic show): false when the QP has none (its peer is
 * on this host, or it is not connected).  Big lock held.  Times are ns from
 * now (0: off). */
struct engine_qp_wire {
	uint32_t psn, una, psn_max, epsn, cwnd, retry_left, rnr_left, backoff;
	uint32_t sq_seen, sq_prod;      /* the send queue as the engine read it, and as it is */
	bool active, watching;          /* on the engine's list; polling the queue (no doorbell) */
	uint32_t sq_own, sq_next, cur_idx, cur_pkt;
	bool cur_open, nak_sent, tlp_sent;
	uint64_t srtt_ns, rto_in_ns, tlp_in_ns, rnr_in_ns;
};
bool engine_qp_wire(const struct vr_qp *qp, struct engine_qp_wire *s);
/* Remote GIDs known: calls fn for each (big lock held). */
void engine_gids_each(const struct urd_daemon *d,
		      void (*fn)(void *arg, const uint8_t gid[16], const char *tenant, const struct engine_host *h),
		      void *arg);

#endif

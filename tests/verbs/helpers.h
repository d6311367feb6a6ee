/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared helpers for the verbs tests under tests/verbs/.
 *
 * Every test is a standalone program: exit 0 = pass, 1 = fail, 77 = skip (no
 * device). Everything here fails the test (exit 1, with file:line) instead of
 * returning an error, and every wait has a timeout, so a broken engine makes a
 * test fail rather than hang. A watchdog (t_start) ends any test after
 * T_WATCHDOG_S seconds.
 *
 * Devices: device 0 is $UNIRDMA_TEST_DEV0 (by name) or the first device;
 * device 1 is $UNIRDMA_TEST_DEV1, else the second device if there is one, else
 * the first again (opened as a second, independent context).
 * Addressing follows DESIGN.md section 5: port 1, GID index 0, RoCEv2.
 */
#ifndef UNIRDMA_TESTS_VERBS_HELPERS_H
#define UNIRDMA_TESTS_VERBS_HELPERS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

/* $UNIRDMA_TEST_TIME_SCALE (an integer, default 1) stretches every timeout,
 * for runs under valgrind or sanitizers. */
extern unsigned int t_scale;
#define T_TIMEOUT_MS (5000 * (int)t_scale)	/* longest wait for one event */
#define T_QUIET_MS 200				/* "nothing happens" is watched this long */
#define T_WATCHDOG_S (9 * t_scale)		/* whole-test limit */
#define T_PORT 1
#define T_GID_INDEX 0
#define T_EXIT_SKIP 77

#define T_ALL_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		      IBV_ACCESS_REMOTE_ATOMIC)
#define T_ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | T_ALL_REMOTE)

/* Fail the test with file:line and the failing expression. */
#define CHECK(cond)							\
	do {								\
		if (!(cond))						\
			t_fail_at(__FILE__, __LINE__, "CHECK(%s) failed", #cond); \
	} while (0)

/* Like CHECK(a == b), printing both values. */
#define CHECK_EQ(a, b)							\
	do {								\
		unsigned long long t_a_ = (unsigned long long)(a);	\
		unsigned long long t_b_ = (unsigned long long)(b);	\
		if (t_a_ != t_b_)					\
			t_fail_at(__FILE__, __LINE__,			\
				  "CHECK_EQ(%s, %s) failed: 0x%llx != 0x%llx", \
				  #a, #b, t_a_, t_b_);			\
	} while (0)

/* A verbs call that returns 0 or an errno value. */
#define CHECK_OK(call)							\
	do {								\
		int t_rc_ = (call);					\
		if (t_rc_ != 0)						\
			t_fail_at(__FILE__, __LINE__, "%s returned %d (%s)", \
				  #call, t_rc_, strerror(t_rc_ > 0 ? t_rc_ : -t_rc_)); \
	} while (0)

/* A work completion's status and opcode. */
#define CHECK_WC(wc, st, op)						\
	t_check_wc_at(__FILE__, __LINE__, (wc), (st), (int)(op))
#define T_ANY_OPCODE (-1)

/* Data pattern check: p[0..n) must equal the pattern (seed) at stream
 * position pos..pos+n. */
#define CHECK_DATA(p, n, seed, pos)					\
	t_check_data_at(__FILE__, __LINE__, (p), (n), (seed), (pos))
/* Every byte of p[0..n) must equal val. */
#define CHECK_BYTES(p, val, n)						\
	t_check_bytes_at(__FILE__, __LINE__, (p), (val), (n))

/* Wait up to T_TIMEOUT_MS for one completion; fail on timeout. */
#define t_wait_wc(cq, wc) t_wait_wc_at(__FILE__, __LINE__, (cq), (wc))
/* Wait for one completion and check wr_id, status and opcode. */
#define t_expect_wc(cq, wc, id, st, op)					\
	do {								\
		t_wait_wc_at(__FILE__, __LINE__, (cq), (wc));		\
		t_check_wc_at(__FILE__, __LINE__, (wc), (st), (int)(op)); \
		if ((wc)->wr_id != (uint64_t)(id))			\
			t_fail_at(__FILE__, __LINE__, "wr_id 0x%llx, expected 0x%llx", \
				  (unsigned long long)(wc)->wr_id,	\
				  (unsigned long long)(id));		\
	} while (0)
/* No completion may arrive on cq during T_QUIET_MS. */
#define CHECK_CQ_EMPTY(cq)						\
	do {								\
		int t_n_ = t_cq_quiet((cq), T_QUIET_MS);		\
		if (t_n_ != 0)						\
			t_fail_at(__FILE__, __LINE__, "%d unexpected completion(s) on %s", \
				  t_n_, #cq);				\
	} while (0)

#define T_NORETURN __attribute__((noreturn))
#define T_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* An opened device: context, a PD, and port 1 / GID 0 facts. */
struct t_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port_attr;
	union ibv_gid gid;
	const char *name;
};

/* What a peer needs to reach one of our QPs. */
struct t_peer {
	union ibv_gid gid;
	uint16_t lid;
	uint32_t qpn;
};

/* Connection parameters for t_rc_connect and friends. */
struct t_conn {
	int is_global;		/* 1: GRH with GID index 0; 0: dlid = 0, no GRH */
	unsigned int access;	/* qp_access_flags given at INIT */
	uint8_t rnr_retry;	/* 7 = infinite */
	uint8_t min_rnr_timer;	/* IB encoding; 12 = 0.64 ms */
	uint8_t retry_cnt;
	uint8_t timeout;	/* IB encoding; 14 = 67 ms */
	uint8_t max_rd_atomic;	/* both initiator depth and responder resources */
	uint32_t psn;		/* start PSN of both directions */
};

/* Lifecycle. */
void t_start(const char *name);		/* name for PASS/FAIL lines; arms watchdog */
void t_pass(void);			/* prints "PASS name" */
T_NORETURN void t_skip(const char *why);
T_NORETURN T_PRINTF(3, 4) void t_fail_at(const char *file, int line,
					 const char *fmt, ...);
#define t_fail(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
extern const char *t_name;

/* Devices. */
struct ibv_device *t_find_device(int which);	/* skips (77) if none */
void t_open(struct t_dev *d, int which);
void t_close(struct t_dev *d);
void t_peer_of(struct t_peer *p, const struct t_dev *d, const struct ibv_qp *qp);

/* Memory. */
size_t t_page(void);
void *t_map(size_t len);			/* page-aligned anonymous memory */
void t_unmap(void *p, size_t len);
struct ibv_mr *t_reg(struct ibv_pd *pd, void *addr, size_t len, int access);
uint8_t t_pat(uint32_t seed, size_t pos);
void t_fill(void *p, size_t n, uint32_t seed, size_t pos);
void t_check_data_at(const char *file, int line, const void *p, size_t n,
		     uint32_t seed, size_t pos);
void t_check_bytes_at(const char *file, int line, const void *p, int val,
		      size_t n);
static inline struct ibv_sge t_sge(const void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	return s;
}

/* CQs, channels, QPs. */
struct ibv_comp_channel *t_channel(struct t_dev *d);	/* fd set O_NONBLOCK */
struct ibv_cq *t_cq(struct t_dev *d, int cqe, struct ibv_comp_channel *ch);
/* cap: requested capabilities in, granted out; NULL = 64 WRs, 4 SGEs each way. */
struct ibv_qp *t_qp(struct t_dev *d, enum ibv_qp_type type, struct ibv_cq *scq,
		    struct ibv_cq *rcq, struct ibv_srq *srq, int sq_sig_all,
		    struct ibv_qp_cap *cap);

/* RC connection. */
void t_conn_default(struct t_conn *c);
void t_ah_attr(struct ibv_ah_attr *ah, const struct t_peer *p, int is_global);
void t_rc_init(struct ibv_qp *qp, const struct t_conn *c);
void t_rc_rtr(struct ibv_qp *qp, const struct t_dev *d, const struct t_peer *p,
	      const struct t_conn *c);
void t_rc_rts(struct ibv_qp *qp, const struct t_conn *c);
/* Both QPs RESET -> INIT -> RTR -> RTS, each the other's peer; c NULL = default. */
void t_rc_connect(struct t_dev *da, struct ibv_qp *a, struct t_dev *db,
		  struct ibv_qp *b, const struct t_conn *c);

/* UD. */
void t_ud_ready(struct ibv_qp *qp, uint32_t qkey);	/* RESET -> RTS */
struct ibv_ah *t_ud_ah(struct t_dev *d, const union ibv_gid *dgid);

/* Posting. imm is in host order (converted with htonl). */
int t_post(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
	   struct ibv_sge *sg, int nsge, unsigned int flags, uint64_t raddr,
	   uint32_t rkey, uint32_t imm);
int t_post_atomic(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		  struct ibv_sge *sg, unsigned int flags, uint64_t raddr,
		  uint32_t rkey, uint64_t compare_add, uint64_t swap);
int t_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sg, int nsge);
int t_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, struct ibv_sge *sg,
		    int nsge);

/* Completions and events. */
int t_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms); /* 1 or 0 */
void t_wait_wc_at(const char *file, int line, struct ibv_cq *cq,
		  struct ibv_wc *wc);
void t_check_wc_at(const char *file, int line, const struct ibv_wc *wc,
		   enum ibv_wc_status st, int opcode);
int t_cq_quiet(struct ibv_cq *cq, int ms);	/* completions seen in ms */
/* poll() on the channel fd, then ibv_get_cq_event. Returns the CQ (caller
 * acks it) or NULL on timeout. */
struct ibv_cq *t_wait_cq_event(struct ibv_comp_channel *ch, int timeout_ms);
/* poll() on ctx->async_fd, then ibv_get_async_event. 1 = got one (caller acks),
 * 0 = timeout. */
int t_wait_async(struct ibv_context *ctx, struct ibv_async_event *ev,
		 int timeout_ms);

/* QP state as ibv_query_qp reports it. */
enum ibv_qp_state t_qp_state(struct ibv_qp *qp);

/* Milliseconds on CLOCK_MONOTONIC, and a sleep. */
uint64_t t_now_ms(void);
void t_sleep_ms(unsigned int ms);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ctrlmem: control-plane attacks of issue 9 (findings 4, 6 and 11) and the
 * probes that measure their effect.  Used by tests/integration/ctrlmem.sh.
 *
 * The attacks speak the raw mailbox protocol of a region file, as a hostile
 * tenant can (REGION is STATE/vrnics/NAME/region; for a VM vRNIC the tool
 * plays the guest: it claims slots by compare-and-swap and keeps their
 * heartbeats ticking); the probes use our libibverbs as any program does.
 *
 *   allocs REGION [-n MAX] [-s SEGS] [-T THREADS] [-t SECS] [-k]
 *        MEM_ALLOC one page at a time until refused (or MAX), then THREADS
 *        contexts REG_MR SEGS one-page segments over the oldest allocations
 *        (the far end of a list) and DEREG_MR, in a loop, for SECS; -k keeps
 *        the MRs (until the daemon refuses more) and dies with them.
 *   victim [-t SECS]
 *        (library, first device) alloc_pd, reg_mr, dereg_mr, dealloc_pd in a
 *        loop; prints the worst latency of any of them.
 *   vmheap REGION GUESTRAM alias|scatter [-n REQS] [--hold FILE]
 *        REQS REG_MRs with URD_REG_MR_INDIRECT segment tables in guest RAM:
 *        alias: 2^20 segments that all name one page (a 4 GiB MR);
 *        scatter: every other page of guest RAM, one segment each.
 *   alias REGION [--hold FILE]
 *        a container MR of URD_MR_MAX_SEGS segments over one page (must be
 *        refused) and an honest MR of 16 adjacent one-page segments.
 *   abandon REGION [-n N] [--hold FILE]
 *        N ALLOC_PD requests that the tenant abandoned (resp_seq = ~seq, as
 *        the library does on timeout): none may leave a PD behind.
 *   libabandon [--hold FILE]
 *        (library) one ibv_alloc_pd that times out (the daemon delays it:
 *        UNIRDMA_FAULT_CTRL_DELAY; UNIRDMA_CTRL_TIMEOUT_MS is short).
 *   openbusy REGION
 *        (library + raw) OPEN_CTX written into the mailbox of our own live
 *        context: must be refused, and the context must keep its PD.
 *   qpns [-n N]
 *        (library, first two devices) N QPs on each, created alternately;
 *        prints the QPNs and counts steps of less than 1024 between QPNs
 *        created one after the other.
 *   reopen REGION
 *        a raw context lets go of its slot's lock, and the library opens the
 *        device at once (it lands on the same slot before the daemon noticed).
 *   hold REGION
 *        one raw ALLOC_PD (the daemon holds its lock meanwhile when started
 *        with UNIRDMA_FAULT_LOCK_HOLD=3:MS).
 *   heartbeat REGION [-t SECS]
 *        samples the region header's daemon_heartbeat every millisecond and
 *        prints the longest time it did not move.
 * --hold FILE: after the attack print READY and wait (at most 120 s) until
 * FILE exists, keeping every context alive, so that the caller can look.
 * Exit code 0 unless a step the mode needs failed (the caller checks the
 * printed figures); 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "unirdma/abi.h"

#define PAGE 4096ull
#define GIB (1ull << 30)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "ctrlmem: %s\n", what);
	exit(1);
}

static const char *hold_file;

static void hold(void)
{
	double until = now_s() + 120;

	printf("READY\n");
	fflush(stdout);
	if (!hold_file)
		return;
	while (access(hold_file, F_OK) && now_s() < until)
		usleep(50000);
}

/* --------------------------------------------------------- raw mailbox */

struct region {
	const char *path;
	int fd;
	uint8_t *map;
	uint64_t size;
	struct urd_region_hdr *hdr;
	bool vm;
};

static void region_open(struct region *rg, const char *path)
{
	struct urd_region_hdr h;

	rg->path = path;
	rg->fd = open(path, O_RDWR | O_CLOEXEC);
	if (rg->fd < 0 || pread(rg->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != URD_MAGIC)
		die("cannot open the region");
	rg->size = h.ctrl_size;
	rg->vm = h.flags & URD_REGION_VM;
	rg->map = mmap(NULL, rg->size, PROT_READ | PROT_WRITE, MAP_SHARED, rg->fd, 0);
	if (rg->map == MAP_FAILED)
		die("cannot map the region");
	rg->hdr = (struct urd_region_hdr *)rg->map;
}

struct raw {
	struct region *rg;
	int lock_fd;
	uint32_t idx, seq;
	struct urd_slot_hdr *slot;
};

/* VM slots we own: their heartbeats tick in a thread. */
static uint64_t *beats[URD_MAX_CTX];
static int nbeats;
static pthread_mutex_t beat_lock = PTHREAD_MUTEX_INITIALIZER;

static void *beat_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&beat_lock);
		for (int i = 0; i < nbeats; i++)
			__atomic_fetch_add(beats[i], 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&beat_lock);
		usleep(1000);
	}
	return NULL;
}

static struct urd_slot_hdr *slot_of(struct region *rg, uint32_t i)
{
	return (struct urd_slot_hdr *)(rg->map + urd_slot_off(i));
}

static void raw_hdr(void *req, uint16_t op, uint32_t len)
{
	struct urd_msg_hdr *h = req;

	memset(h, 0, sizeof(*h));
	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = len;
}

static void publish(struct raw *r, const void *req, uint32_t len, uint32_t seq)
{
	memcpy((uint8_t *)r->slot + URD_SLOT_REQ_OFF, req, len);
	__atomic_store_n(&r->slot->req_seq, seq, __ATOMIC_RELEASE);
	__atomic_fetch_add(&r->rg->hdr->ctrl_bell, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &r->rg->hdr->ctrl_bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* Status of the answer to seq, or 1 when none came within secs. */
static int wait_answer(struct raw *r, uint32_t seq, double secs, void *resp, uint32_t resp_max)
{
	double until = now_s() + secs;
	const struct urd_msg_hdr *rh = (const void *)((uint8_t *)r->slot + URD_SLOT_RESP_OFF);
	uint32_t v;

	while ((v = __atomic_load_n(&r->slot->resp_seq, __ATOMIC_ACQUIRE)) != seq) {
		struct timespec ts = { 0, 1000000 };

		if (now_s() > until)
			return 1;
		if (r->rg->vm)
			usleep(50);
		else
			syscall(SYS_futex, &r->slot->resp_seq, FUTEX_WAIT, v, &ts, NULL, 0);
	}
	if (resp)
		memcpy(resp, rh, resp_max);
	return rh->status;
}

static int raw_call(struct raw *r, void *req, uint32_t len, void *resp, uint32_t resp_max, double secs)
{
	uint32_t seq = ++r->seq;

	publish(r, req, len, seq);
	return wait_answer(r, seq, secs, resp, resp_max);
}

static void raw_open(struct raw *r, struct region *rg)
{
	struct urd_open_ctx_req q;
	static bool beating;

	memset(r, 0, sizeof(*r));
	r->rg = rg;
	r->lock_fd = -1;
	if (rg->vm) {
		uint32_t token = (uint32_t)getpid() * 2654435761u ^ (uint32_t)rand() ^ 1;

		for (r->idx = 0; r->idx < URD_MAX_CTX; r->idx++) {
			uint32_t expect = 0;

			if (__atomic_compare_exchange_n(&slot_of(rg, r->idx)->vm_owner, &expect, token, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				break;
		}
		if (r->idx == URD_MAX_CTX)
			die("no free VM slot");
		pthread_mutex_lock(&beat_lock);
		beats[nbeats++] = &slot_of(rg, r->idx)->heartbeat;
		pthread_mutex_unlock(&beat_lock);
		if (!beating) {
			pthread_t t;

			beating = true;
			pthread_create(&t, NULL, beat_main, NULL);
		}
	} else {
		r->lock_fd = open(rg->path, O_RDWR | O_CLOEXEC);
		if (r->lock_fd < 0)
			die("cannot open the region for the lock");
		for (r->idx = 0; r->idx < URD_MAX_CTX; r->idx++) {
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = r->idx, .l_len = 1 };

			if (!fcntl(r->lock_fd, F_OFD_SETLK, &fl))
				break;
		}
		if (r->idx == URD_MAX_CTX)
			die("no free slot");
	}
	r->slot = slot_of(rg, r->idx);
	r->seq = __atomic_load_n(&r->slot->req_seq, __ATOMIC_ACQUIRE);
	memset(&q, 0, sizeof(q));
	raw_hdr(&q, URD_OP_OPEN_CTX, sizeof(q));
	q.pid = (uint32_t)getpid();
	if (raw_call(r, &q, sizeof(q), NULL, 0, 30))
		die("OPEN_CTX failed");
}

static uint32_t raw_pd(struct raw *r)
{
	struct urd_msg_hdr q;
	struct urd_handle_resp resp;

	raw_hdr(&q, URD_OP_ALLOC_PD, sizeof(q));
	if (raw_call(r, &q, sizeof(q), &resp, sizeof(resp), 60))
		die("ALLOC_PD failed");
	return resp.handle;
}

static int raw_dereg(struct raw *r, uint32_t handle)
{
	struct urd_handle_req q = { .handle = handle };

	raw_hdr(&q, URD_OP_DEREG_MR, sizeof(q));
	return raw_call(r, &q, sizeof(q), NULL, 0, 120);
}

/* ------------------------------------------------------------- allocs */

static struct {
	struct region rg;
	uint64_t *offs;
	uint32_t nsegs;
	double until;
	uint64_t reqs, ok, timeouts;
	double worst;
	bool keep;
} A;

static void *alloc_thread(void *arg)
{
	struct raw r;
	uint32_t pd;
	uint32_t len = (uint32_t)(sizeof(struct urd_reg_mr_req) + A.nsegs * sizeof(struct urd_mr_seg));
	struct urd_reg_mr_req *q = calloc(1, len);

	(void)arg;
	raw_open(&r, &A.rg);
	pd = raw_pd(&r);
	while (now_s() < A.until) {
		struct urd_reg_mr_resp resp;
		double t0 = now_s(), dt;
		int s;

		raw_hdr(q, URD_OP_REG_MR, len);
		q->pd = pd;
		q->access = IBV_ACCESS_LOCAL_WRITE;
		q->iova = 1ull << 32;
		q->length = A.nsegs * PAGE;
		q->nsegs = A.nsegs;
		for (uint32_t i = 0; i < A.nsegs; i++) {
			q->segs[i].off = A.offs[i];
			q->segs[i].len = PAGE;
		}
		s = raw_call(&r, q, len, &resp, sizeof(resp), 120);
		dt = now_s() - t0;
		__atomic_fetch_add(&A.reqs, 1, __ATOMIC_RELAXED);
		if (s == 1)
			__atomic_fetch_add(&A.timeouts, 1, __ATOMIC_RELAXED);
		if (s == 0) {
			__atomic_fetch_add(&A.ok, 1, __ATOMIC_RELAXED);
			if (!A.keep)
				raw_dereg(&r, resp.handle);
		}
		pthread_mutex_lock(&beat_lock);
		if (dt > A.worst)
			A.worst = dt;
		pthread_mutex_unlock(&beat_lock);
	}
	free(q);
	return NULL;
}

static int mode_allocs(const char *region, uint64_t max, uint32_t nsegs, int threads, double secs)
{
	struct raw r;
	uint64_t n = 0;
	int last = 0;
	double t0, stop;
	pthread_t t[64];

	region_open(&A.rg, region);
	raw_open(&r, &A.rg);
	A.offs = calloc(max, sizeof(*A.offs));
	if (!A.offs)
		die("no memory");
	t0 = now_s();
	stop = t0 + 120;
	while (n < max && now_s() < stop) {
		struct urd_mem_req q = { .len = PAGE };
		struct urd_mem_resp resp;

		raw_hdr(&q, URD_OP_MEM_ALLOC, sizeof(q));
		last = raw_call(&r, &q, sizeof(q), &resp, sizeof(resp), 60);
		if (last)
			break;
		A.offs[n++] = resp.off;
	}
	printf("allocations: %llu in %.1f s (last answer %d)\n", (unsigned long long)n, now_s() - t0, last);
	fflush(stdout);
	if (n < nsegs)
		nsegs = (uint32_t)n;
	A.nsegs = nsegs;
	if (!nsegs)
		die("no allocations");
	A.until = now_s() + secs;
	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, alloc_thread, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("reg_mr: %llu requests of %u segments from %d contexts, %llu ok, %llu unanswered, worst %.1f ms\n",
	       (unsigned long long)A.reqs, nsegs, threads, (unsigned long long)A.ok,
	       (unsigned long long)A.timeouts, A.worst * 1e3);
	return 0;
}

/* ------------------------------------------------------------- victim */

static struct ibv_context *open_dev(int i)
{
	struct ibv_device **l;
	int n;
	struct ibv_context *c;

	l = ibv_get_device_list(&n);
	if (!l || n <= i)
		die("no device");
	c = ibv_open_device(l[i]);
	if (!c)
		die("cannot open the device");
	ibv_free_device_list(l);
	return c;
}

static int mode_victim(double secs)
{
	struct ibv_context *c = open_dev(0);
	double until = now_s() + secs, worst = 0, t;
	const char *worst_op = "none";
	uint64_t rounds = 0, fails = 0;
	void *buf;

	if (posix_memalign(&buf, PAGE, PAGE))
		die("no memory");
	memset(buf, 1, PAGE);
#define TIMED(name, expr) do { t = now_s(); expr; t = now_s() - t; \
		if (t > worst) { worst = t; worst_op = name; } } while (0)
	while (now_s() < until) {
		struct ibv_pd *pd;
		struct ibv_mr *mr = NULL;

		TIMED("alloc_pd", pd = ibv_alloc_pd(c));
		if (!pd) {
			fails++;
			continue;
		}
		TIMED("reg_mr", mr = ibv_reg_mr(pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE));
		if (mr)
			TIMED("dereg_mr", ibv_dereg_mr(mr));
		else
			fails++;
		TIMED("dealloc_pd", ibv_dealloc_pd(pd));
		rounds++;
		usleep(2000);
	}
#undef TIMED
	printf("victim: %llu rounds, %llu failures, worst control verb %.1f ms (%s)\n",
	       (unsigned long long)rounds, (unsigned long long)fails, worst * 1e3, worst_op);
	printf("victim_worst_ms %.0f\n", worst * 1e3 + 0.5);
	return fails ? 1 : 0;
}

/* ------------------------------------------------------------- vmheap */

static int mode_vmheap(const char *region, const char *gram, const char *kind, int reqs)
{
	struct region rg;
	struct raw r;
	struct stat st;
	uint8_t *ram;
	uint64_t ram_bytes, lowmem, nsegs, length, table_gpa = 16ull << 20, registered = 0;
	struct urd_mr_seg *table;
	bool alias = !strcmp(kind, "alias");
	uint32_t pd, len = sizeof(struct urd_reg_mr_req) + sizeof(struct urd_mr_seg);
	struct urd_reg_mr_req *q = calloc(1, len);
	int ok = 0, refused = 0, unanswered = 0, last = 0;
	double worst = 0;

	region_open(&rg, region);
	if (!rg.vm)
		die("not a VM region");
	int fd = open(gram, O_RDWR | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		die("cannot open guest RAM");
	ram_bytes = (uint64_t)st.st_size;
	lowmem = ram_bytes < 3 * GIB ? ram_bytes : 3 * GIB;
	ram = mmap(NULL, ram_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ram == MAP_FAILED)
		die("cannot map guest RAM");
	if (alias) {
		nsegs = URD_MR_MAX_SEGS_INDIRECT;
		length = nsegs * PAGE;
	} else {
		nsegs = ram_bytes / (2 * PAGE);
		if (nsegs > URD_MR_MAX_SEGS_INDIRECT)
			nsegs = URD_MR_MAX_SEGS_INDIRECT;
		length = nsegs * PAGE;
	}
	if (table_gpa + nsegs * sizeof(*table) > lowmem)
		die("guest RAM too small for the table");
	table = (struct urd_mr_seg *)(ram + table_gpa);
	for (uint64_t i = 0; i < nsegs; i++) {
		uint64_t foff = alias ? PAGE : 2 * i * PAGE;

		table[i].off = foff < lowmem ? foff : foff - lowmem + 4 * GIB;
		table[i].len = PAGE;
	}
	raw_open(&r, &rg);
	pd = raw_pd(&r);
	for (int i = 0; i < reqs; i++) {
		struct urd_reg_mr_resp resp;
		double t0 = now_s(), dt;

		raw_hdr(q, URD_OP_REG_MR, len);
		q->pd = pd;
		q->access = IBV_ACCESS_LOCAL_WRITE;
		q->iova = 0;
		q->length = length;
		q->nsegs = 1;
		q->flags = URD_REG_MR_INDIRECT;
		q->segs[0].off = table_gpa;
		q->segs[0].len = nsegs * sizeof(*table);
		last = raw_call(&r, q, len, &resp, sizeof(resp), 60);
		dt = now_s() - t0;
		if (dt > worst)
			worst = dt;
		if (last == 0) {
			ok++;
			registered += length;
		} else if (last == 1) {
			unanswered++;
		} else {
			refused++;
		}
	}
	printf("vmheap %s: %d REG_MR of %llu segments (%llu bytes): %d ok, %d refused (last %d), %d unanswered, worst %.1f ms\n",
	       kind, reqs, (unsigned long long)nsegs, (unsigned long long)length, ok, refused, last, unanswered,
	       worst * 1e3);
	printf("registered_bytes %llu\n", (unsigned long long)registered);
	hold();
	free(q);
	return 0;
}

/* -------------------------------------------------------------- alias */

static int mode_alias(const char *region)
{
	struct region rg;
	struct raw r;
	uint32_t n = (uint32_t)URD_MR_MAX_SEGS, pd;
	uint32_t len = (uint32_t)(sizeof(struct urd_reg_mr_req) + n * sizeof(struct urd_mr_seg));
	struct urd_reg_mr_req *q = calloc(1, len);
	struct urd_mem_req mq = { .len = 16 * PAGE };
	struct urd_mem_resp mresp;
	int s1, s2;

	region_open(&rg, region);
	raw_open(&r, &rg);
	pd = raw_pd(&r);
	raw_hdr(&mq, URD_OP_MEM_ALLOC, sizeof(mq));
	if (raw_call(&r, &mq, sizeof(mq), &mresp, sizeof(mresp), 30))
		die("MEM_ALLOC failed");
	/* every segment the same page */
	raw_hdr(q, URD_OP_REG_MR, len);
	q->pd = pd;
	q->access = IBV_ACCESS_LOCAL_WRITE;
	q->length = n * PAGE;
	q->nsegs = n;
	for (uint32_t i = 0; i < n; i++) {
		q->segs[i].off = mresp.off;
		q->segs[i].len = PAGE;
	}
	s1 = raw_call(&r, q, len, NULL, 0, 30);
	/* honest: the 16 pages in order, one segment each */
	n = 16;
	len = (uint32_t)(sizeof(struct urd_reg_mr_req) + n * sizeof(struct urd_mr_seg));
	raw_hdr(q, URD_OP_REG_MR, len);
	q->length = n * PAGE;
	q->nsegs = n;
	for (uint32_t i = 0; i < n; i++) {
		q->segs[i].off = mresp.off + i * PAGE;
		q->segs[i].len = PAGE;
	}
	s2 = raw_call(&r, q, len, NULL, 0, 30);
	printf("alias: %u segments over one page: %d; 16 adjacent pages: %d\n", (uint32_t)URD_MR_MAX_SEGS, s1, s2);
	printf("aliased_status %d\nhonest_status %d\nallocated_bytes %llu\n", s1, s2,
	       (unsigned long long)(16 * PAGE));
	hold();
	free(q);
	return 0;
}

/* ------------------------------------------------------------ abandon */

static int mode_abandon(const char *region, int n)
{
	struct region rg;
	struct raw r;
	struct urd_msg_hdr q;
	int answered = 0;

	region_open(&rg, region);
	raw_open(&r, &rg);
	for (int i = 0; i < n; i++) {
		uint32_t seq = ++r.seq;

		/* the library's timeout mark, here before the daemon even looks */
		__atomic_store_n(&r.slot->resp_seq, ~seq, __ATOMIC_RELEASE);
		raw_hdr(&q, URD_OP_ALLOC_PD, sizeof(q));
		publish(&r, &q, sizeof(q), seq);
		if (wait_answer(&r, seq, 0.2, NULL, 0) != 1)
			answered++;
	}
	printf("abandon: %d ALLOC_PD requests abandoned, %d answered anyway\n", n, answered);
	hold();
	return 0;
}

static int mode_libabandon(void)
{
	struct ibv_context *c = open_dev(0);
	struct ibv_pd *pd;
	double t0 = now_s();

	errno = 0;
	pd = ibv_alloc_pd(c);
	printf("libabandon: ibv_alloc_pd %s after %.0f ms (errno %d)\n", pd ? "succeeded" : "failed",
	       (now_s() - t0) * 1e3, errno);
	printf("libabandon_failed %d\n", pd ? 0 : 1);
	usleep(2500000);        /* the daemon runs the request meanwhile */
	hold();
	return 0;
}

/* ----------------------------------------------------------- openbusy */

static int mode_openbusy(const char *region)
{
	struct ibv_context *c = open_dev(0);
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct region rg;
	struct raw r;
	struct urd_open_ctx_req q;
	int probe, slot = -1, s, dealloc;

	if (!pd)
		die("alloc_pd failed");
	region_open(&rg, region);
	/* our library context's slot: the only one whose lock is held */
	probe = open(region, O_RDWR | O_CLOEXEC);
	for (int i = 0; i < (int)URD_MAX_CTX && slot < 0; i++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = i, .l_len = 1 };

		if (!fcntl(probe, F_OFD_GETLK, &fl) && fl.l_type != F_UNLCK)
			slot = i;
	}
	if (slot < 0)
		die("no locked slot");
	memset(&r, 0, sizeof(r));
	r.rg = &rg;
	r.slot = slot_of(&rg, (uint32_t)slot);
	r.seq = __atomic_load_n(&r.slot->req_seq, __ATOMIC_ACQUIRE) + 1000;
	memset(&q, 0, sizeof(q));
	raw_hdr(&q, URD_OP_OPEN_CTX, sizeof(q));
	s = raw_call(&r, &q, sizeof(q), NULL, 0, 5);
	dealloc = ibv_dealloc_pd(pd);
	printf("openbusy: OPEN_CTX into the live context's slot %d: %d; its dealloc_pd afterwards: %d\n",
	       slot, s, dealloc);
	printf("open_status %d\ndealloc_status %d\n", s, dealloc);
	ibv_close_device(c);
	return 0;
}

/* ------------------------------------------------------------- reopen */

/* A raw context dies (its lock goes) and the library opens the device at
 * once, in the same slot, before the daemon's liveness round saw it. */
static int mode_reopen(const char *region)
{
	struct region rg;
	struct raw r;
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_len = 1 };
	struct ibv_context *c;
	struct ibv_pd *pd;
	double t0;

	region_open(&rg, region);
	raw_open(&r, &rg);
	fl.l_start = r.idx;
	t0 = now_s();
	fcntl(r.lock_fd, F_OFD_SETLK, &fl);
	c = open_dev(0);
	pd = ibv_alloc_pd(c);
	printf("reopen: slot %u: device opened and PD %s after %.0f ms\n", r.idx, pd ? "allocated" : "FAILED",
	       (now_s() - t0) * 1e3);
	printf("reopen_ok %d\n", pd ? 1 : 0);
	return 0;
}

/* --------------------------------------------------------------- qpns */

static int mode_qpns(int n)
{
	struct ibv_context *c[2] = { open_dev(0), open_dev(1) };
	struct ibv_pd *pd[2];
	struct ibv_cq *cq[2];
	uint32_t *q = calloc((size_t)2 * n, sizeof(*q));
	int close = 0, bad = 0;

	for (int k = 0; k < 2; k++) {
		pd[k] = ibv_alloc_pd(c[k]);
		cq[k] = pd[k] ? ibv_create_cq(c[k], 16, NULL, NULL, 0) : NULL;
		if (!cq[k])
			die("pd/cq failed");
	}
	for (int i = 0; i < 2 * n; i++) {
		struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC, .cap = { 1, 1, 1, 1, 0 } };
		struct ibv_qp *qp;
		int k = i & 1;

		a.send_cq = a.recv_cq = cq[k];
		qp = ibv_create_qp(pd[k], &a);
		if (!qp)
			die("create_qp failed");
		q[i] = qp->qp_num;
		printf("%s%s%#x", i ? " " : "qpns: ", k ? "B" : "A", q[i]);
		if (q[i] <= 1 || q[i] > 0xffffff)
			bad++;
		for (int j = 0; j < i; j++)
			if (q[j] == q[i])
				bad++;
		if (i && (q[i] - q[i - 1] < 1024 || q[i - 1] - q[i] < 1024))
			close++;
	}
	printf("\nqpns: %d QPs, %d steps of less than 1024 between consecutive creations, %d invalid or repeated\n",
	       2 * n, close, bad);
	printf("close_steps %d\ninvalid %d\n", close, bad);
	return 0;
}

/* --------------------------------------------------------- heartbeat */

static int mode_hold(const char *region)
{
	struct region rg;
	struct raw r;
	double t0;

	region_open(&rg, region);
	raw_open(&r, &rg);
	t0 = now_s();
	raw_pd(&r);
	printf("hold: ALLOC_PD answered after %.0f ms\n", (now_s() - t0) * 1e3);
	return 0;
}

static int mode_heartbeat(const char *region, double secs)
{
	struct region rg;
	double until, last, gap = 0;
	uint64_t v, seen;

	region_open(&rg, region);
	until = now_s() + secs;
	seen = __atomic_load_n(&rg.hdr->daemon_heartbeat, __ATOMIC_ACQUIRE);
	last = now_s();
	while (now_s() < until) {
		usleep(1000);
		v = __atomic_load_n(&rg.hdr->daemon_heartbeat, __ATOMIC_ACQUIRE);
		if (v != seen) {
			if (now_s() - last > gap)
				gap = now_s() - last;
			seen = v;
			last = now_s();
		}
	}
	if (now_s() - last > gap)
		gap = now_s() - last;
	printf("heartbeat: longest stall %.0f ms in %.1f s\n", gap * 1e3, secs);
	printf("heartbeat_gap_ms %.0f\n", gap * 1e3);
	return 0;
}

/* --------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	long n = -1;                    /* -n: each mode has its default */
	uint32_t segs = (uint32_t)URD_MR_MAX_SEGS;
	int threads = 4;
	double secs = 5;
	const char *pos[4] = { 0 };
	int npos = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand((unsigned int)getpid());
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			segs = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-T") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "-k"))
			A.keep = true;
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			hold_file = argv[++i];
		else if (npos < 4)
			pos[npos++] = argv[i];
	}
	if (!pos[0])
		goto usage;
	if (!strcmp(pos[0], "allocs") && pos[1])
		return mode_allocs(pos[1], n < 0 ? 300000 : (uint64_t)n, segs > URD_MR_MAX_SEGS ? (uint32_t)URD_MR_MAX_SEGS : segs,
				   threads, secs);
	if (!strcmp(pos[0], "victim"))
		return mode_victim(secs);
	if (!strcmp(pos[0], "vmheap") && pos[3])
		return mode_vmheap(pos[1], pos[2], pos[3], n < 0 ? 48 : (int)n);
	if (!strcmp(pos[0], "alias") && pos[1])
		return mode_alias(pos[1]);
	if (!strcmp(pos[0], "abandon") && pos[1])
		return mode_abandon(pos[1], n < 0 ? 20 : (int)n);
	if (!strcmp(pos[0], "libabandon"))
		return mode_libabandon();
	if (!strcmp(pos[0], "openbusy") && pos[1])
		return mode_openbusy(pos[1]);
	if (!strcmp(pos[0], "reopen") && pos[1])
		return mode_reopen(pos[1]);
	if (!strcmp(pos[0], "hold") && pos[1])
		return mode_hold(pos[1]);
	if (!strcmp(pos[0], "heartbeat") && pos[1])
		return mode_heartbeat(pos[1], secs);
	if (!strcmp(pos[0], "qpns"))
		return mode_qpns(n < 0 ? 32 : (int)n);
usage:
	fprintf(stderr, "usage: ctrlmem allocs|victim|vmheap|alias|abandon|libabandon|openbusy|qpns|reopen|hold|heartbeat ... (see the source)\n");
	return 2;
}

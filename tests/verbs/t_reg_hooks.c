/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_reg_hooks: registration is invisible to an application's memory hooks.
 *
 * ibv_reg_mr moves a buffer's pages onto the vRNIC file (copy, then a
 * MAP_FIXED mmap over the same addresses) and ibv_dereg_mr moves them back
 * (mremap).  UCX's memory hooks (ucm) interpose mmap, mremap, munmap and
 * madvise and read a MAP_FIXED mmap over a range as an unmap of it: its
 * registration cache then dropped every buffer as we registered it, and
 * each Open MPI message above UCX's rendezvous threshold registered its
 * buffer again (NetPIPE at 1 MiB: 0.7 GB/s instead of 14 GB/s).
 *
 * This program interposes those four calls itself, as ucm's PLT mode does
 * (a definition in the executable wins over libc's for every library), and
 * checks that registering, using and deregistering a malloc'd buffer and a
 * mapped one never calls them on the buffer, while the data still moves
 * (an RDMA WRITE into each, checked) and survives deregistration.
 */
#include "helpers.h"

#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static uintptr_t watch_lo, watch_hi;    /* the buffer under test */
static unsigned long hits;              /* hooked calls that touched it */

static void note(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	if (watch_hi && a < watch_hi && a + len > watch_lo)
		hits++;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (flags & MAP_FIXED)
		note(addr, len);
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
	note(addr, len);
	return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	va_list ap;

	va_start(ap, flags);
	if (flags & MREMAP_FIXED)
		new_addr = va_arg(ap, void *);
	va_end(ap);
	note(old, old_len);
	if (new_addr)
		note(new_addr, new_len);
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

int madvise(void *addr, size_t len, int advice)
{
	note(addr, len);
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* Register buf, WRITE len bytes into it from A, check, deregister, check
 * the bytes are still there; no hooked call may touch buf meanwhile. */
static void one(struct t_dev *a, struct t_dev *b, struct ibv_qp *qa, struct ibv_cq *cq, uint8_t *src,
		struct ibv_mr *smr, uint8_t *buf, size_t len, uint32_t seed)
{
	struct ibv_mr *mr;
	struct ibv_sge sg;
	struct ibv_wc wc;

	(void)a;
	memset(buf, 0, len);
	watch_lo = (uintptr_t)buf;
	watch_hi = (uintptr_t)buf + len;
	hits = 0;
	mr = t_reg(b->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	t_fill(src, len, seed, 0);
	sg = t_sge(src, (uint32_t)len, smr->lkey);
	CHECK_OK(t_post(qa, seed, IBV_WR_RDMA_WRITE, &sg, 1, IBV_SEND_SIGNALED, (uintptr_t)buf, mr->rkey, 0));
	t_expect_wc(cq, &wc, seed, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_DATA(buf, len, seed, 0);
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_DATA(buf, len, seed, 0);
	watch_hi = 0;
	CHECK_EQ(hits, 0);
}

int main(void)
{
	const size_t len = 1 << 20;
	struct t_dev a, b;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct t_conn c;
	struct ibv_mr *smr;
	uint8_t *src, *heap, *mapped;

	t_start("t_reg_hooks");
	t_open(&a, 0);
	t_open(&b, 1);
	cqa = t_cq(&a, 16, NULL);
	cqb = t_cq(&b, 16, NULL);
	qa = t_qp(&a, IBV_QPT_RC, cqa, cqa, NULL, 0, NULL);
	qb = t_qp(&b, IBV_QPT_RC, cqb, cqb, NULL, 0, NULL);
	t_conn_default(&c);
	t_rc_connect(&a, qa, &b, qb, &c);
	src = t_map(len);
	smr = t_reg(a.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	heap = malloc(len + 100);               /* glibc: an mmap'd chunk, not page aligned */
	CHECK(heap);
	mapped = t_map(len);
	for (uint32_t round = 1; round <= 3; round++) {
		one(&a, &b, qa, cqa, src, smr, heap + 8, len, round);
		one(&a, &b, qa, cqa, src, smr, mapped, len, 100 + round);
	}
	free(heap);
	t_pass();
	return 0;
}

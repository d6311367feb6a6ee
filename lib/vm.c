/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* vm.c - the library inside a QEMU guest.
 *
 * The same library, the same region layout: only the way the region arrives
 * and the way registered memory is described differ (DESIGN.md sections 2
 * and 4).
 *
 * Discovery: a vRNIC is an ivshmem-plain PCI device (vendor 0x1af4, device
 * 0x1110) whose BAR 2 is the region; /sys/bus/pci/devices/X/resource2 is
 * opened and mmapped like a region file (root in the guest).  The header's
 * magic and ABI version decide, as for files; the name comes from the header.
 * UNIRDMA_PCI_DIR replaces /sys/bus/pci/devices (tests on the host).
 *
 * Slots: no lock of the guest reaches the host, so a context claims its slot
 * with a compare-and-swap of the slot's vm_owner word (0 -> a random token)
 * and proves it is alive by the slot's heartbeat word, which the event thread
 * (event.c) and the mailbox wait (ctrl.c) keep ticking.  The daemon releases
 * a context whose heartbeat stops (daemon/vm.c), e.g. when QEMU exits.
 *
 * Daemon liveness: the daemon increments hdr.daemon_heartbeat every 100 ms;
 * no change for DAEMON_DEAD_NS means the daemon died (a killed daemon cannot
 * say so through daemon_state).
 *
 * Memory registration: the buffer's pages stay where they are.  They are
 * pinned (mlock: resident, no swap; MADV_NOHUGEPAGE first, so that khugepaged
 * never collapses them into other frames; MADV_DONTFORK, so that a fork's
 * copy-on-write never gives the parent new frames behind the MR, as
 * rdma-core's ibv_fork_init does), their guest-physical addresses are read
 * from /proc/self/pagemap (needs CAP_SYS_ADMIN, else the PFNs read 0), runs
 * of contiguous frames are coalesced into segments and REG_MR carries them.
 * The daemon translates each segment to its mapping of guest RAM and refuses
 * anything that is not guest RAM.  Pins are counted per page range, so
 * overlapping MRs keep their pages pinned until the last one goes.
 * Compaction may still migrate mlocked pages unless the guest sets
 * vm.compact_unevictable_allowed=0 (the test image does).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"

/* Pinning goes through raw syscalls: AddressSanitizer intercepts mlock()
 * and munlock() as no-ops, and then untouched read-only pages never get a
 * frame and registration fails (the sanitizer run of the VM tests). */
static int pin_pages(const void *p, size_t len)
{
	return (int)syscall(SYS_mlock, p, len);
}

static int unpin_pages(const void *p, size_t len)
{
	return (int)syscall(SYS_munlock, p, len);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_DEVICE 0x1110
#define DAEMON_DEAD_NS (5ull * 1000 * 1000 * 1000)
#define PAGEMAP_PFN_MASK ((1ull << 55) - 1)
#define PAGEMAP_PRESENT (1ull << 63)

static const char *pci_dir(void)
{
	const char *d = getenv("UNIRDMA_PCI_DIR");

	return d && *d ? d : "/sys/bus/pci/devices";
}

static long read_hex_file(const char *dir, const char *dev, const char *name)
{
	char path[PATH_MAX], buf[32];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s/%s", dir, dev, name) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 16);
}

static int skip_dots(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

int urd_vm_find_bars(char ***paths_out)
{
	const char *dir = pci_dir();
	struct dirent **names = NULL;
	char **paths;
	int n, count = 0;

	*paths_out = NULL;
	n = scandir(dir, &names, skip_dots, alphasort);
	if (n <= 0) {
		free(names);
		return 0;
	}
	paths = calloc((size_t)n, sizeof(*paths));
	for (int i = 0; i < n; i++) {
		const char *e = names[i]->d_name;

		if (paths && read_hex_file(dir, e, "vendor") == IVSHMEM_VENDOR &&
		    read_hex_file(dir, e, "device") == IVSHMEM_DEVICE &&
		    asprintf(&paths[count], "%s/%s/resource2", dir, e) > 0) {
			if (access(paths[count], F_OK) == 0)
				count++;
			else
				free(paths[count]);
		}
		free(names[i]);
	}
	free(names);
	if (!count) {
		free(paths);
		return 0;
	}
	urd_dbg("%d ivshmem device(s) under %s", count, dir);
	*paths_out = paths;
	return count;
}

/* A BAR file can be mapped but not read(). */
int urd_vm_read_hdr(int fd, struct urd_region_hdr *h)
{
	void *p = mmap(NULL, URD_HDR_SIZE, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	memcpy(h, p, sizeof(*h));
	munmap(p, URD_HDR_SIZE);
	return 0;
}

/* ------------------------------------------------------------ slots */

int urd_vm_claim_slot(struct urd_context *ctx, uint32_t nslots, uint32_t *slot)
{
	uint32_t token = 0;

	while (!token) {
		if (getrandom(&token, sizeof(token), GRND_NONBLOCK) != sizeof(token))
			token = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
	}
	for (uint32_t i = 0; i < nslots; i++) {
		struct urd_slot_hdr *s = (struct urd_slot_hdr *)(ctx->region + urd_slot_off(i));
		uint32_t expect = 0;

		if (__atomic_compare_exchange_n(&s->vm_owner, &expect, token, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			/* alive from the first moment: the daemon times out
			 * an owned slot whose heartbeat does not move */
			urd_fetch_add(&s->heartbeat, 1);
			ctx->vm_owner = token;
			*slot = i;
			return 0;
		}
	}
	return -EBUSY;
}

void urd_vm_release_slot(struct urd_context *ctx)
{
	uint32_t expect = ctx->vm_owner;

	if (!ctx->slot || !expect)
		return;
	__atomic_compare_exchange_n(&ctx->slot->vm_owner, &expect, 0, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	ctx->vm_owner = 0;
}

/* Called from the event thread and the mailbox wait: the fields are only a
 * hint of when the heartbeat last moved, races between them are harmless. */
bool urd_vm_daemon_stalled(struct urd_context *ctx)
{
	uint64_t hb = urd_load_acquire(&ctx->hdr->daemon_heartbeat);
	uint64_t now = urd_now_ns();
	uint64_t since = urd_load_relaxed(&ctx->vm_dhb_ns);

	if (hb != urd_load_relaxed(&ctx->vm_dhb) || !since) {
		urd_store_relaxed(&ctx->vm_dhb, hb);
		urd_store_relaxed(&ctx->vm_dhb_ns, now);
		return false;
	}
	return now - since > DAEMON_DEAD_NS;
}

/* ---------------------------------------------------------- pinning */

struct pin {
	uintptr_t s, e;                 /* page aligned */
};

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pin *pins;
static size_t npins, pincap;

static uintptr_t page_sz(void)
{
	static uintptr_t ps;

	if (!ps) {
		long v = sysconf(_SC_PAGESIZE);

		ps = v > 0 ? (uintptr_t)v : URD_PAGE_SIZE;
	}
	return ps;
}

static int cmp_pin(const void *a, const void *b)
{
	const struct pin *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Unpin the parts of [s, e) no remaining pin covers.  Under pin_lock. */
static void unpin_uncovered(uintptr_t s, uintptr_t e)
{
	struct pin *cov = NULL;
	size_t nc = 0;
	uintptr_t p = s;

	if (npins) {
		cov = malloc(npins * sizeof(*cov));
		if (!cov)
			return;         /* stays pinned: safe */
		for (size_t i = 0; i < npins; i++)
			if (pins[i].s < e && pins[i].e > s)
				cov[nc++] = pins[i];
		qsort(cov, nc, sizeof(*cov), cmp_pin);
	}
	for (size_t i = 0; i <= nc && p < e; i++) {
		uintptr_t gap_end = i < nc ? (cov[i].s > e ? e : cov[i].s) : e;

		if (gap_end > p) {
			unpin_pages((void *)p, gap_end - p);
			madvise((void *)p, gap_end - p, MADV_DOFORK);
		}
		if (i < nc && cov[i].e > p)
			p = cov[i].e;
	}
	free(cov);
}

/* Whether this kernel has MADV_POPULATE_WRITE (5.14): EINVAL means "not
 * supported" on older ones and "not writable" on newer ones. */
static bool have_populate_write(void)
{
	static int have = -1;

	if (have < 0) {
		void *p = mmap(NULL, page_sz(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		have = p != MAP_FAILED && madvise(p, page_sz(), MADV_POPULATE_WRITE) == 0;
		if (p != MAP_FAILED)
			munmap(p, page_sz());
	}
	return have;
}

/* write: the MR may be written (by the engine): the pages must be
 * writable and have frames of their own (not the zero page, not shared
 * copy-on-write), as the kernel's FOLL_WRITE pinning of rdma-core ensures. */
static int pin(uintptr_t s, uintptr_t e, bool write)
{
	int ret = 0;

	pthread_mutex_lock(&pin_lock);
	if (npins == pincap) {
		size_t nc = pincap ? pincap * 2 : 16;
		struct pin *n = realloc(pins, nc * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		pins = n;
		pincap = nc;
	}
	/* NOHUGEPAGE may fail on mappings that do not support it: harmless */
	madvise((void *)s, e - s, MADV_NOHUGEPAGE);
	if (madvise((void *)s, e - s, MADV_DONTFORK)) {
		ret = errno == ENOMEM ? -EFAULT : -errno;       /* not mapped */
		goto out;
	}
	/* without MADV_POPULATE_WRITE (before 5.14), mlock below still breaks
	 * copy-on-write of writable private pages, but read-only ones pass */
	if (write && have_populate_write() && madvise((void *)s, e - s, MADV_POPULATE_WRITE)) {
		ret = -EFAULT;                                  /* read-only memory */
		unpin_uncovered(s, e);
		goto out;
	}
	if (pin_pages((void *)s, e - s)) {
		ret = -errno;
		unpin_uncovered(s, e);
		goto out;
	}
	pins[npins++] = (struct pin){ s, e };
out:
	pthread_mutex_unlock(&pin_lock);
	return ret;
}

void urd_vm_unpin(uintptr_t a, size_t len)
{
	uintptr_t s = a & ~(page_sz() - 1);
	uintptr_t e = (a + len + page_sz() - 1) & ~(page_sz() - 1);

	pthread_mutex_lock(&pin_lock);
	for (size_t i = 0; i < npins; i++) {
		if (pins[i].s == s && pins[i].e == e) {
			pins[i] = pins[--npins];
			unpin_uncovered(s, e);
			break;
		}
	}
	pthread_mutex_unlock(&pin_lock);
}

/* ------------------------------------------------------- segments */

/* Guest-physical segments of [a, a + len), byte exact, contiguous frames
 * coalesced, at most max of them.  The pages are pinned. */
static int build_segments(uintptr_t a, size_t len, uint32_t max, struct urd_mr_seg **out,
			  uint32_t *nout)
{
	const uintptr_t ps = page_sz();
	uintptr_t p0 = a & ~(ps - 1);
	size_t npages = ((a + len + ps - 1) & ~(ps - 1)) / ps - p0 / ps;
	struct urd_mr_seg *segs = NULL;
	uint32_t n = 0, cap = 0;
	uint64_t ents[512];
	int fd, ret = 0;

	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t k = 0; k < npages; k += URD_ARRAY_SIZE(ents)) {
		size_t cnt = npages - k < URD_ARRAY_SIZE(ents) ? npages - k : URD_ARRAY_SIZE(ents);
		ssize_t got = pread(fd, ents, cnt * sizeof(ents[0]),
				    (off_t)((p0 / ps + k) * sizeof(ents[0])));

		if (got != (ssize_t)(cnt * sizeof(ents[0]))) {
			ret = got < 0 ? -errno : -EIO;
			goto out;
		}
		for (size_t j = 0; j < cnt; j++) {
			uintptr_t pg = p0 + (k + j) * ps;
			uintptr_t bs = pg > a ? pg : a;
			uintptr_t be = pg + ps < a + len ? pg + ps : a + len;
			uint64_t gpa;

			if (!(ents[j] & PAGEMAP_PRESENT)) {
				ret = -EFAULT;
				goto out;
			}
			if (!(ents[j] & PAGEMAP_PFN_MASK)) {
				urd_dbg("reg_mr: /proc/self/pagemap gives no frame numbers "
					"(needs CAP_SYS_ADMIN in the guest)");
				ret = -EPERM;
				goto out;
			}
			gpa = (ents[j] & PAGEMAP_PFN_MASK) * ps + (bs - pg);
			if (n && segs[n - 1].off + segs[n - 1].len == gpa) {
				segs[n - 1].len += be - bs;
				continue;
			}
			if (n == max) {
				urd_dbg("reg_mr: %p+%zu spans more than %u runs of guest frames",
					(void *)a, len, (unsigned)max);
				ret = -ENOMEM;
				goto out;
			}
			if (n == cap) {
				uint32_t nc = cap ? cap * 2 : 16;
				struct urd_mr_seg *ns = realloc(segs, nc * sizeof(*ns));

				if (!ns) {
					ret = -ENOMEM;
					goto out;
				}
				segs = ns;
				cap = nc;
			}
			segs[n].off = gpa;
			segs[n].len = be - bs;
			n++;
		}
	}
out:
	close(fd);
	if (ret) {
		free(segs);
		return ret;
	}
	*out = segs;
	*nout = n;
	return 0;
}

/* More segments than a message holds: the table goes into pinned memory of
 * its own and the request lists the table's pieces (URD_REG_MR_INDIRECT);
 * the daemon copies it before it answers. */
static int indirect_table(const struct urd_mr_seg *segs, uint32_t n, void **tbl, size_t *tlen,
			  struct urd_mr_seg **pieces, uint32_t *np)
{
	size_t bytes = (size_t)n * sizeof(*segs);
	int ret;

	*tlen = (bytes + page_sz() - 1) & ~(page_sz() - 1);
	*tbl = mmap(NULL, *tlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*tbl == MAP_FAILED)
		return -ENOMEM;
	memcpy(*tbl, segs, bytes);
	ret = pin((uintptr_t)*tbl, (uintptr_t)*tbl + *tlen, false);
	if (!ret) {
		ret = build_segments((uintptr_t)*tbl, bytes, URD_MR_MAX_SEGS, pieces, np);
		if (ret)
			urd_vm_unpin((uintptr_t)*tbl, *tlen);
	}
	if (ret)
		munmap(*tbl, *tlen);
	return ret;
}

int urd_vm_reg_mr(struct urd_context *ctx, uint32_t pd_handle, uintptr_t a, size_t len,
		  uint64_t iova, unsigned int access, struct ibv_mr *mr)
{
	uintptr_t s = a & ~(page_sz() - 1);
	uintptr_t e = (a + len + page_sz() - 1) & ~(page_sz() - 1);
	struct urd_reg_mr_req *req = NULL;
	struct urd_reg_mr_resp resp;
	struct urd_mr_seg *segs = NULL, *pieces = NULL;
	uint32_t n = 0, np = 0, nmsg;
	void *tbl = NULL;
	size_t sz, tlen = 0;
	int ret;

	static int warned;

	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
		int fd = open("/proc/sys/vm/compact_unevictable_allowed", O_RDONLY | O_CLOEXEC);
		char c = '0';

		if (fd >= 0 && read(fd, &c, 1) == 1 && c != '0')
			urd_dbg("vm.compact_unevictable_allowed is not 0: compaction may move "
				"registered pages behind the daemon's back");
		if (fd >= 0)
			close(fd);
	}
	ret = pin(s, e, access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_ATOMIC));
	if (ret)
		return ret;
	ret = build_segments(a, len, URD_MR_MAX_SEGS_INDIRECT, &segs, &n);
	if (ret)
		goto err_unpin;
	if (n > URD_MR_MAX_SEGS) {
		ret = indirect_table(segs, n, &tbl, &tlen, &pieces, &np);
		if (ret)
			goto err_unpin;
	}
	nmsg = tbl ? np : n;
	sz = sizeof(*req) + (size_t)nmsg * sizeof(*segs);
	req = calloc(1, sz);
	if (!req) {
		ret = -ENOMEM;
		goto err_unpin;
	}
	memcpy(req->segs, tbl ? pieces : segs, (size_t)nmsg * sizeof(*segs));
	req->pd = pd_handle;
	req->access = access;
	req->iova = iova;
	req->length = len;
	req->nsegs = nmsg;
	req->flags = tbl ? URD_REG_MR_INDIRECT : 0;
	ret = urd_ctrl(ctx, URD_OP_REG_MR, req, (uint32_t)sz, &resp, sizeof(resp), sizeof(resp));
	if (ret)
		goto err_unpin;
	if (urd_debug_enabled) {
		uint64_t lo = UINT64_MAX, hi = 0;

		for (uint32_t i = 0; i < n; i++) {
			lo = segs[i].off < lo ? segs[i].off : lo;
			hi = segs[i].off + segs[i].len > hi ? segs[i].off + segs[i].len : hi;
		}
		urd_dbg("reg_mr %p+%zu: %u guest-physical segment(s)%s, GPAs %#llx-%#llx", (void *)a, len, n,
			tbl ? " in a table in guest RAM" : "", (unsigned long long)lo, (unsigned long long)hi);
	}
	mr->handle = resp.handle;
	mr->lkey = resp.lkey;
	mr->rkey = resp.rkey;
	ret = 0;
	goto out;

err_unpin:
	urd_vm_unpin(a, len);
out:
	if (tbl) {
		urd_vm_unpin((uintptr_t)tbl, tlen);
		munmap(tbl, tlen);
	}
	free(req);
	free(segs);
	free(pieces);
	return ret;
}

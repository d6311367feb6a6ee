/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* mem.c - memory registration: moving the application's pages onto the vRNIC
 * file, the per-device table of moved pages, and fork.
 *
 * Container path (DESIGN.md section 4): the engine can reach only memory of
 * the vRNIC file.  At registration the pages under [addr, addr + length) are
 * moved there: the daemon hands out a piece of the file's memory window
 * (URD_OP_MEM_ALLOC), we copy the pages' current contents into it (pwrite)
 * and map it MAP_SHARED|MAP_FIXED over the very same addresses, with the
 * application's other threads kept from writing to those pages meanwhile
 * (see "moving pages under writers" below).  The
 * application keeps its pointers and sees every byte the engine writes.  The
 * MR is then described to the daemon as a byte-exact list of segments of the
 * window (URD_OP_REG_MR).
 *
 * Moved pages are tracked per process and per vRNIC in runs: one run is one
 * MEM_ALLOC, a contiguous page range with a refcount (one per MR that covers
 * part of it).  Overlapping registrations reuse the runs already there; gaps
 * get new runs; runs are never split.  When the last MR of a run goes, its
 * pages move back to private anonymous memory, contents included, and the
 * window piece is given back (URD_OP_MEM_FREE, exactly as allocated).
 *
 * A page can live in one file only: registering it with a second vRNIC fails
 * (EINVAL).
 *
 * Fork: a child must not share the parent's registered pages (with rdma-core
 * it gets copy-on-write copies).  The atfork child handler moves every run
 * back to private memory in the child, replaces the child's view of the
 * control region by anonymous memory (so that stray data-path calls in the
 * child cannot disturb the parent's rings) and closes the child's copies of
 * the liveness lock fds: the child has no usable contexts, its control verbs
 * fail with EIO, its destroy verbs clean up locally.
 *
 * VM path: registered memory stays in guest RAM; the pages are pinned and
 * described by their guest-physical addresses (lib/vm.c).  Such an MR has
 * no runs; reg_mr_vm() below is the whole difference here.
 *
 * Everything here runs under mem_lock (a slow path).  Lock order: mem_lock ->
 * ctx->ev_lock (fork only) and mem_lock -> ctx->ctrl_lock (messages).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "priv.h"

/* Under valgrind, the copies of whole pages read the neighbours' bytes, free
 * heap among them: not the program's error, and not one either (the bytes
 * move as they are).  The header is macros only (valgrind's package). */
#if defined(__has_include) && __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define PAGE_COPY_BEGIN() VALGRIND_DISABLE_ERROR_REPORTING
#define PAGE_COPY_END() VALGRIND_ENABLE_ERROR_REPORTING
#else
#define PAGE_COPY_BEGIN() ((void)0)
#define PAGE_COPY_END() ((void)0)
#endif

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct urd_run {
	uintptr_t start;                /* page aligned */
	size_t len;                     /* page multiple */
	uint64_t off;                   /* in the memory window */
	uint32_t refcnt;                /* MRs covering part of it */
	struct urd_context *owner;      /* context that allocated it; NULL
					 * once that context closed */
};

struct urd_memdev {
	dev_t st_dev;
	ino_t st_ino;
	int fd;                         /* the region file, O_RDWR */
	uint64_t mem_off, mem_size;     /* memory window; size 0: none */
	int nctx;
	bool gone;                      /* daemon dead: pages already private */
	struct urd_run **runs;          /* sorted by start, disjoint */
	size_t nruns, cap;
	char name[64];
	struct urd_memdev *next;
};

struct urd_mr {
	struct ibv_mr ibv;
	struct urd_context *ctx;
	struct urd_run **runs;          /* each run once, address order */
	size_t nruns;
	bool vm;                        /* pinned guest pages (vm.c), no runs */
	struct urd_mr *next;            /* ctx->mrs */
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urd_memdev *memdevs;
static struct urd_context *all_ctxs;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static uintptr_t page_size = URD_PAGE_SIZE;

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

static void init_once(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		page_size = (uintptr_t)ps;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* -------------------------------------------------------- run table */

/* First run that ends after p. */
static size_t run_lower_bound(const struct urd_memdev *md, uintptr_t p)
{
	size_t lo = 0, hi = md->nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct urd_run *r = md->runs[mid];

		if (r->start + r->len <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool md_overlaps(const struct urd_memdev *md, uintptr_t s, uintptr_t e)
{
	size_t i = run_lower_bound(md, s);

	return i < md->nruns && md->runs[i]->start < e;
}

static int run_insert(struct urd_memdev *md, size_t i, struct urd_run *r)
{
	if (md->nruns == md->cap) {
		size_t ncap = md->cap ? md->cap * 2 : 16;
		struct urd_run **n = urd_realloc(md->runs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		md->runs = n;
		md->cap = ncap;
	}
	memmove(&md->runs[i + 1], &md->runs[i], (md->nruns - i) * sizeof(*md->runs));
	md->runs[i] = r;
	md->nruns++;
	return 0;
}

static void run_remove(struct urd_memdev *md, struct urd_run *r)
{
	size_t i = run_lower_bound(md, r->start);

	if (i < md->nruns && md->runs[i] == r) {
		memmove(&md->runs[i], &md->runs[i + 1],
			(md->nruns - i - 1) * sizeof(*md->runs));
		md->nruns--;
	}
}

/* ------------------------------------------------------ moving pages */

static int window_alloc(struct urd_context *ctx, struct urd_memdev *md,
			uint64_t len, uint64_t *off)
{
	struct urd_mem_req req = { .len = len };
	struct urd_mem_resp resp;
	int ret;

	ret = urd_ctrl(ctx, URD_OP_MEM_ALLOC, &req, sizeof(req), &resp,
		       sizeof(resp), sizeof(resp));
	if (ret)
		return ret;
	if (resp.len != len || resp.off % page_size || resp.off > md->mem_size ||
	    len > md->mem_size - resp.off) {
		urd_dbg("MEM_ALLOC: bad answer off %llu len %llu (asked %llu)",
			(unsigned long long)resp.off, (unsigned long long)resp.len,
			(unsigned long long)len);
		return -EPROTO;
	}
	*off = resp.off;
	return 0;
}

static void window_free(struct urd_context *ctx, uint64_t off, uint64_t len)
{
	struct urd_mem_req req = { .off = off, .len = len };

	if (ctx && !urd_ctx_dead(ctx))
		urd_ctrl(ctx, URD_OP_MEM_FREE, &req, sizeof(req), NULL, 0, 0);
}

/* Whole pages move, with whatever lies around the application's buffer on
 * them.  Under AddressSanitizer those neighbouring bytes may be poisoned
 * (redzones), so the copies here are neither instrumented nor intercepted:
 * the kernel copies for pwrite (a raw syscall), and page_copy is plain
 * volatile word moves, which the compiler cannot turn into a memcpy call. */
__attribute__((no_sanitize("address"), noinline))
static void page_copy(void *dst, const void *src, size_t len)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;

	for (size_t i = 0; i < len / sizeof(uint64_t); i++)
		d[i] = s[i];
}

/* The page moves below are the library's business, not the application's:
 * they go to the kernel directly, past any interposed mmap, mremap, munmap
 * or madvise.  UCX's memory hooks (ucm) patch those entry points and take a
 * MAP_FIXED mmap over a range for an unmap of it, so UCX's registration
 * cache dropped a buffer each time our ibv_reg_mr moved it into the window:
 * every Open MPI message above UCX's rendezvous threshold registered its
 * buffer again (NetPIPE: 47 us at 192 KiB, 708 us at 256 KiB).  The memory
 * at those addresses keeps its contents throughout: nothing the
 * application sees was unmapped. */
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

static int sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* ------------------------------------------- moving pages under writers
 *
 * Whole pages move, and the application's other threads may be writing to
 * the bytes around a buffer (other heap objects) meanwhile.  A copy followed
 * by a switch of mappings loses every write that lands between the two: the
 * writer's store goes to the old page after the copy was taken.  rping's CM
 * thread acknowledged an event (a count in our librdmacm's id, on the heap
 * beside rping's buffers) while main deregistered those buffers; the count
 * came back as it was, and rdma_destroy_id waited for an acknowledgement
 * that had already happened (CI, 2026-11-29).
 *
 * So writers wait while pages move: the range is write-protected with
 * userfaultfd (UFFDIO_WRITEPROTECT) before the copy, a thread that writes
 * to it blocks in its page fault, and closing the userfaultfd after the new
 * mapping is in place wakes it to retry its store there.  Anonymous memory
 * can be protected so (Linux 5.7), and so can a region file on tmpfs
 * (5.19; /run is tmpfs on Debian).  This thread blocks its signals for the
 * moment: a handler writing to the range here would wait for itself.  For
 * the same reason nothing between wp_begin and wp_end takes a lock, prints
 * or allocates: a writer held in its fault may hold that lock (a debug
 * print there hung rping: stdio's lock).
 *
 * Without userfaultfd (an older kernel, a seccomp filter that refuses it;
 * `unirdma exec` allows user-mode-only ones, which is what we ask for when
 * a full one is refused; valgrind, which does not know the call) or for a
 * region file off tmpfs (its shared mapping cannot be write-protected):
 *  - moving back still loses nothing: the range is mapped MAP_PRIVATE from
 *    the same piece of the file in one mmap, which the kernel switches
 *    atomically, and every page is then copied on write
 *    (MADV_POPULATE_WRITE) while no store can miss it.  Only if the range
 *    still maps that piece (/proc/self/maps): an application may unmap a
 *    buffer, map other memory there and only then deregister (UCX's
 *    registration cache does, under Open MPI), and that memory keeps its
 *    contents.  Such pages stay file-backed: an madvise(MADV_DONTNEED) of
 *    them reads the file piece again (zeros, as the daemon punched it,
 *    until another registration takes it) where anonymous memory reads
 *    zeros;
 *  - moving onto the file has no such trick (an anonymous page cannot
 *    become a file page in place): the copy and the switch are done back
 *    to back, and a write in between is lost. */

struct wp_guard {
	int fd;                 /* the userfaultfd; -1: not protected */
	sigset_t old;           /* this thread's signal mask before */
};

static long uffd_ioctl(int fd, unsigned long req, void *arg)
{
	return syscall(SYS_ioctl, fd, req, arg);
}

/* A userfaultfd: a full one where allowed (faults of the kernel's own
 * copies wait too), else a user-mode-only one (Linux 5.11; all `unirdma
 * exec` allows).  The kind that worked is kept, and so is "neither" (under
 * mem_lock, as every move): a move tries once, or not at all. */
static int uffd_open(void)
{
	static const int kinds[] = { 0, UFFD_USER_MODE_ONLY };
	static unsigned int kind;       /* next to try; 2: none works here */

	while (kind < 2) {
		int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | kinds[kind]);

		if (fd >= 0)
			return fd;
		if (errno != EPERM && errno != ENOSYS && errno != EINVAL)
			return -1;      /* out of fds or memory: this time only */
		kind++;
	}
	return -1;
}

/* Write-protects [p, p + len) (all mapped): true if writers now wait. */
static bool wp_begin(struct wp_guard *g, uintptr_t p, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = p, .len = len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	sigset_t all;
	int fd;

	g->fd = -1;
#ifdef RUNNING_ON_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return false;
#endif
	fd = uffd_open();
	if (fd < 0)
		return false;
	if (uffd_ioctl(fd, UFFDIO_API, &api) || uffd_ioctl(fd, UFFDIO_REGISTER, &reg) ||
	    !(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT)))
		goto fail;
	/* signals off before the range is protected */
	sigfillset(&all);
	if (sigprocmask(SIG_SETMASK, &all, &g->old))
		goto fail;
	if (uffd_ioctl(fd, UFFDIO_WRITEPROTECT, &wp)) {
		sigprocmask(SIG_SETMASK, &g->old, NULL);
		goto fail;
	}
	g->fd = fd;
	return true;
fail:
	syscall(SYS_close, fd);
	return false;
}

/* The new mapping is in place: the writers that waited retry there. */
static void wp_end(struct wp_guard *g)
{
	if (g->fd < 0)
		return;
	syscall(SYS_close, g->fd);
	g->fd = -1;
	sigprocmask(SIG_SETMASK, &g->old, NULL);
}

/* Move [p, p + len) onto the window piece at off: copy, then map over. */
static int move_in(struct urd_memdev *md, uintptr_t p, size_t len, uint64_t off)
{
	struct wp_guard g;
	size_t done = 0;
	void *m;
	int ret = 0;

	wp_begin(&g, p, len);
	PAGE_COPY_BEGIN();
	while (done < len) {
		ssize_t w = syscall(SYS_pwrite64, md->fd, (const void *)(p + done), len - done,
				    (off_t)(md->mem_off + off + done));

		if (w < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;   /* EFAULT: not mapped memory */
			break;
		}
		done += (size_t)w;
	}
	PAGE_COPY_END();
	if (!ret) {
		m = sys_mmap((void *)p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			     md->fd, (off_t)(md->mem_off + off));
		if (m == MAP_FAILED)
			ret = -errno;
	}
	wp_end(&g);
	return ret;
}

/* Copy [p, p + len) to fresh anonymous memory that then replaces it in one
 * mremap, so the bytes never disappear from under other threads.  A write
 * between the copy and the mremap is lost unless the caller made writers
 * wait (or is alone: a fork child). */
static bool copy_to_anon(uintptr_t p, size_t len)
{
	void *tmp = sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp == MAP_FAILED)
		return false;   /* said by the caller, once writers run again */
	PAGE_COPY_BEGIN();
	page_copy(tmp, (const void *)p, len);
	PAGE_COPY_END();
	if (sys_mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)p) ==
	    MAP_FAILED) {
		if (sys_mmap((void *)p, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
			page_copy((void *)p, tmp, len);
		sys_munmap(tmp, len);
	}
	return true;
}

/* True if [p, p + len) is still one shared mapping of md's file at the
 * window offset off, as the run left it. */
static bool maps_our_piece(const struct urd_memdev *md, uintptr_t p, size_t len, uint64_t off)
{
	char buf[4096];
	size_t have = 0;
	bool ours = false, done = false;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (!done) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;
		size_t rest;

		if (n <= 0)
			break;
		have += (size_t)n;
		while (!done && (nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			unsigned long s, e, o, ino;
			unsigned int maj, mnr;
			char perms[5];

			*nl = '\0';
			if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &s, &e, perms, &o, &maj, &mnr,
				   &ino) == 7 && e > p) {
				ours = s <= p && e - p >= len && perms[3] == 's' &&
				       ino == md->st_ino && makedev(maj, mnr) == md->st_dev &&
				       o + (p - s) == md->mem_off + off;
				done = true;    /* the lines are in address order */
			}
			line = nl + 1;
		}
		rest = have - (size_t)(line - buf);
		if (rest == sizeof(buf) - 1)
			break;          /* no line is that long */
		memmove(buf, line, rest);
		have = rest;
	}
	close(fd);
	return ours;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Each page copied on write, contents kept: a locked no-op on one byte per
 * page where MADV_POPULATE_WRITE is missing (before Linux 5.14). */
__attribute__((no_sanitize("address", "thread"), noinline))
static void touch_pages(uintptr_t p, size_t len)
{
	for (size_t i = 0; i < len; i += page_size)
		__atomic_fetch_or((volatile uint8_t *)(p + i), 0, __ATOMIC_RELAXED);
}

/* Give [p, p + len), where the run left the window piece at off of md,
 * back to private memory with its contents (see above); md NULL: this
 * thread is the process's only one (a fork child). */
static void move_out_range(const struct urd_memdev *md, uintptr_t p, size_t len, uint64_t off)
{
	struct wp_guard g;
	bool ok;

	if (!md) {
		ok = copy_to_anon(p, len);
		goto out;
	}
	if (wp_begin(&g, p, len)) {
		ok = copy_to_anon(p, len);  /* nothing here may take a lock: */
		wp_end(&g);                 /* a writer waiting may hold it */
		goto out;
	}
	if (maps_our_piece(md, p, len, off) &&
	    sys_mmap((void *)p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, md->fd,
		     (off_t)(md->mem_off + off)) != MAP_FAILED) {
		if (sys_madvise((void *)p, len, MADV_POPULATE_WRITE))
			touch_pages(p, len);
		return;
	}
	ok = copy_to_anon(p, len);
out:
	if (!ok)
		urd_dbg("cannot move %#lx+%zu back to private memory", (unsigned long)p, len);
}

/* An application may unmap a buffer before deregistering it.  Only pages that
 * are still mapped are moved back (madvise(MADV_NORMAL) changes nothing and
 * fails with ENOMEM on unmapped pages). */
static void move_out(const struct urd_memdev *md, uintptr_t p, size_t len, uint64_t off)
{
	if (sys_madvise((void *)p, len, MADV_NORMAL) == 0) {
		move_out_range(md, p, len, off);
		return;
	}
	for (size_t i = 0; i < len; i += page_size)
		if (sys_madvise((void *)(p + i), page_size, MADV_NORMAL) == 0)
			move_out_range(md, p + i, page_size, off + i);
}

static int run_new(struct urd_context *ctx, struct urd_memdev *md, uintptr_t p,
		   size_t len, struct urd_run **out)
{
	struct urd_run *r = urd_calloc(1, sizeof(*r));
	uint64_t off;
	int ret;

	if (!r)
		return -ENOMEM;
	ret = window_alloc(ctx, md, len, &off);
	if (ret)
		goto err_free;
	ret = move_in(md, p, len, off);
	if (ret) {
		window_free(ctx, off, len);
		goto err_free;
	}
	r->start = p;
	r->len = len;
	r->off = off;
	r->owner = ctx;
	*out = r;
	return 0;
err_free:
	urd_free(r);
	return ret;
}

/* Drop one reference; the last one moves the pages back and frees the
 * window piece through the context that allocated it (if it still lives:
 * a closed context's allocations were freed by the daemon). */
static void run_put(struct urd_memdev *md, struct urd_run *r, bool free_window)
{
	if (--r->refcnt)
		return;
	run_remove(md, r);
	if (!md->gone) {
		move_out(md, r->start, r->len, r->off);
		if (free_window)
			window_free(r->owner, r->off, r->len);
	}
	urd_free(r);
}

/* ---------------------------------------------------- registration */

#define KNOWN_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |   \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |   \
		      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |          \
		      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)
/* What the daemon enforces (MW_BIND: memory windows may be bound to it). */
#define PERM_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |    \
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |    \
		     IBV_ACCESS_MW_BIND)

static int check_access(unsigned int access)
{
	/* Optional flags (RELAXED_ORDERING and the rest of the optional
	 * range) may be ignored by a device, by definition. */
	unsigned int a = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;

	if (a & ~(unsigned int)KNOWN_ACCESS)
		return -EINVAL;
	/* man ibv_reg_mr: remote write or atomic needs local write. */
	if ((a & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(a & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* The VM hook: a guest's memory is not moved but pinned and translated to
 * guest-physical segments (lib/vm.c). */
static int reg_mr_vm(struct urd_context *ctx, struct ibv_pd *pd, void *addr, size_t length,
		     uint64_t iova, unsigned int access, struct urd_mr **out)
{
	struct urd_mr *mr;
	int ret;

	if (!ctx->dev->vm)
		return -EOPNOTSUPP;     /* a VM's region opened outside its guest */
	mr = urd_calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	ret = urd_vm_reg_mr(ctx, pd->handle, (uintptr_t)addr, length, iova,
			    access & PERM_ACCESS, &mr->ibv);
	if (ret) {
		urd_free(mr);
		return ret;
	}
	mr->vm = true;
	pthread_mutex_lock(&mem_lock);
	mr->ctx = ctx;
	mr->next = ctx->mrs;
	ctx->mrs = mr;
	pthread_mutex_unlock(&mem_lock);
	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	*out = mr;
	return 0;
}

/* Reference (moving where needed) every page under [a, a + length) and list
 * the runs in mr.  On failure nothing stays referenced. */
static int take_runs(struct urd_context *ctx, struct urd_memdev *md,
		     struct urd_mr *mr, uintptr_t a, size_t length)
{
	uintptr_t p = a & ~(page_size - 1);
	uintptr_t p1 = (a + length + page_size - 1) & ~(page_size - 1);
	size_t i = run_lower_bound(md, p), cap = 0;
	int ret = 0;

	while (p < p1) {
		struct urd_run *r = i < md->nruns ? md->runs[i] : NULL;

		if (mr->nruns == cap) {
			size_t ncap = cap ? cap * 2 : 4;
			struct urd_run **n = urd_realloc(mr->runs, ncap * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			mr->runs = n;
			cap = ncap;
		}
		if (!r || r->start > p) {
			uintptr_t gap_end = r && r->start < p1 ? r->start : p1;

			ret = run_new(ctx, md, p, gap_end - p, &r);
			if (ret)
				break;
			ret = run_insert(md, i, r);
			if (ret) {
				move_out(md, r->start, r->len, r->off);
				window_free(ctx, r->off, r->len);
				urd_free(r);
				break;
			}
		}
		r->refcnt++;
		mr->runs[mr->nruns++] = r;
		p = r->start + r->len;
		i++;
	}
	if (ret) {
		for (size_t k = 0; k < mr->nruns; k++)
			run_put(md, mr->runs[k], true);
		mr->nruns = 0;
	}
	return ret;
}

static int send_reg(struct urd_context *ctx, struct urd_mr *mr,
		    struct ibv_pd *pd, uintptr_t a, size_t length,
		    uint64_t iova, unsigned int access)
{
	struct urd_reg_mr_req *req;
	struct urd_reg_mr_resp resp;
	uint32_t n = 0;
	size_t sz;
	int ret;

	if (mr->nruns > URD_MR_MAX_SEGS)
		return -EINVAL;
	sz = sizeof(*req) + mr->nruns * sizeof(struct urd_mr_seg);
	req = urd_calloc(1, sz);
	if (!req)
		return -ENOMEM;
	for (size_t k = 0; k < mr->nruns; k++) {
		const struct urd_run *r = mr->runs[k];
		uintptr_t s = a > r->start ? a : r->start;
		uintptr_t e = a + length < r->start + r->len ? a + length
							     : r->start + r->len;

		/* One segment per run, never merged with the next even when
		 * the window pieces happen to be adjacent: the daemon wants
		 * every segment inside one allocation. */
		req->segs[n].off = r->off + (s - r->start);
		req->segs[n].len = e - s;
		n++;
	}
	req->pd = pd->handle;
	req->access = access & PERM_ACCESS;
	req->iova = iova;
	req->length = length;
	req->nsegs = n;
	sz = sizeof(*req) + n * sizeof(struct urd_mr_seg);
	ret = urd_ctrl(ctx, URD_OP_REG_MR, req, (uint32_t)sz, &resp,
		       sizeof(resp), sizeof(resp));
	urd_free(req);
	if (ret)
		return ret;
	mr->ibv.handle = resp.handle;
	mr->ibv.lkey = resp.lkey;
	mr->ibv.rkey = resp.rkey;
	return 0;
}

static int reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		  unsigned int access, struct urd_mr **out)
{
	struct urd_context *ctx = to_uctx(pd->context);
	struct urd_memdev *md = ctx->mem;
	uintptr_t a = (uintptr_t)addr;
	struct urd_mr *mr;
	int ret;

	if (urd_ctx_dead(ctx))
		return -EIO;
	if (!addr || !length || a + length < a ||
	    length > urd_load_relaxed(&ctx->hdr->dev.max_mr_size))
		return -EINVAL;
	ret = check_access(access);
	if (ret)
		return ret;
	if (ctx->vm)
		return reg_mr_vm(ctx, pd, addr, length, iova, access, out);
	if (!md || !md->mem_size)
		return -EOPNOTSUPP;

	mr = urd_calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;

	pthread_mutex_lock(&mem_lock);
	{
		uintptr_t p0 = a & ~(page_size - 1);
		uintptr_t p1 = (a + length + page_size - 1) & ~(page_size - 1);

		for (struct urd_memdev *o = memdevs; o; o = o->next) {
			if (o != md && !o->gone && md_overlaps(o, p0, p1)) {
				urd_dbg("reg_mr %p+%zu on %s: pages already "
					"registered with vRNIC %s; a buffer can "
					"be registered with one vRNIC only",
					addr, length, md->name, o->name);
				ret = -EINVAL;
				goto err_unlock;
			}
		}
	}
	ret = take_runs(ctx, md, mr, a, length);
	if (ret)
		goto err_unlock;
	ret = send_reg(ctx, mr, pd, a, length, iova, access);
	if (ret) {
		for (size_t k = 0; k < mr->nruns; k++)
			run_put(md, mr->runs[k], true);
		goto err_unlock;
	}
	mr->ctx = ctx;
	mr->next = ctx->mrs;
	ctx->mrs = mr;
	pthread_mutex_unlock(&mem_lock);

	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	*out = mr;
	return 0;

err_unlock:
	pthread_mutex_unlock(&mem_lock);
	urd_free(mr->runs);
	urd_free(mr);
	return ret;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct urd_mr *mr;
	int ret = reg_mr(pd, addr, length, iova, access, &mr);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &mr->ibv;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* man ibv_rereg_mr, with rdma-core's input checks first (ERR_INPUT: nothing
 * changed), then the device's answer (ERR_CMD with its errno), as rxe
 * gives it: the PD and the access flags change in place and the keys
 * stay; a new translation is EOPNOTSUPP. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct urd_mr *mr = urd_container_of(ibmr, struct urd_mr, ibv);
	struct urd_rereg_mr_req req = { 0 };
	struct urd_reg_mr_resp resp;
	int ret;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != ibmr->context)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	req.handle = ibmr->handle;
	req.flags = (uint32_t)flags;
	req.pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0;
	req.access = (uint32_t)access;
	ret = urd_ctrl(mr->ctx, URD_OP_REREG_MR, &req, sizeof(req), &resp, sizeof(resp), sizeof(resp));
	if (ret) {
		errno = -ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = pd;
	ibmr->lkey = resp.lkey;
	ibmr->rkey = resp.rkey;
	return 0;
}

/* Under mem_lock: unlink mr from its context. */
static void mr_unlink(struct urd_mr *mr)
{
	for (struct urd_mr **p = &mr->ctx->mrs; *p; p = &(*p)->next) {
		if (*p == mr) {
			*p = mr->next;
			return;
		}
	}
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct urd_mr *mr = urd_container_of(ibmr, struct urd_mr, ibv);
	struct urd_context *ctx = mr->ctx;
	int ret;

	ret = urd_ctrl_handle(ctx, URD_OP_DEREG_MR, ibmr->handle);
	if (ret && !urd_ctx_dead(ctx))
		return -ret;
	pthread_mutex_lock(&mem_lock);
	mr_unlink(mr);
	for (size_t k = 0; k < mr->nruns; k++)
		run_put(ctx->mem, mr->runs[k], true);
	pthread_mutex_unlock(&mem_lock);
	if (mr->vm)
		urd_vm_unpin((uintptr_t)ibmr->addr, ibmr->length);
	urd_free(mr->runs);
	urd_free(mr);
	return 0;
}

/* ------------------------------------------------ context attachment */

void urd_ctx_register(struct urd_context *ctx)
{
	pthread_mutex_lock(&mem_lock);
	ctx->next_all = all_ctxs;
	all_ctxs = ctx;
	pthread_mutex_unlock(&mem_lock);
}

void urd_ctx_unregister(struct urd_context *ctx)
{
	pthread_mutex_lock(&mem_lock);
	for (struct urd_context **p = &all_ctxs; *p; p = &(*p)->next_all) {
		if (*p == ctx) {
			*p = ctx->next_all;
			break;
		}
	}
	pthread_mutex_unlock(&mem_lock);
}

int urd_mem_attach(struct urd_context *ctx, int region_fd)
{
	struct urd_memdev *md;
	struct stat st;
	uint64_t mo = ctx->hdr->mem_off, ms = ctx->hdr->mem_size;
	int ret = 0;

	pthread_once(&atfork_once, init_once);
	if (fstat(region_fd, &st))
		return -errno;

	pthread_mutex_lock(&mem_lock);
	for (md = memdevs; md; md = md->next)
		if (md->st_dev == st.st_dev && md->st_ino == st.st_ino)
			break;
	if (!md) {
		md = urd_calloc(1, sizeof(*md));
		if (!md) {
			ret = -ENOMEM;
			goto out;
		}
		md->fd = fcntl(region_fd, F_DUPFD_CLOEXEC, 0);
		if (md->fd < 0) {
			ret = -errno;
			urd_free(md);
			goto out;
		}
		md->st_dev = st.st_dev;
		md->st_ino = st.st_ino;
		memcpy(md->name, ctx->dev->vdev.device.name, sizeof(md->name) - 1);
		/* No usable window (a VM region, or a bad header): every
		 * container registration will fail with EOPNOTSUPP. */
		if (mo && mo % page_size == 0 && mo >= ctx->ctrl_size &&
		    mo <= (uint64_t)st.st_size && ms <= (uint64_t)st.st_size - mo) {
			md->mem_off = mo;
			md->mem_size = ms;
		} else if (mo || ms) {
			urd_dbg("%s: unusable memory window %llu+%llu",
				md->name, (unsigned long long)mo,
				(unsigned long long)ms);
		}
		md->next = memdevs;
		memdevs = md;
	}
	md->nctx++;
	ctx->mem = md;
out:
	pthread_mutex_unlock(&mem_lock);
	return ret;
}

static void memdev_free_locked(struct urd_memdev *md)
{
	for (struct urd_memdev **p = &memdevs; *p; p = &(*p)->next) {
		if (*p == md) {
			*p = md->next;
			break;
		}
	}
	close(md->fd);
	urd_free(md->runs);
	urd_free(md);
}

void urd_mem_detach(struct urd_context *ctx)
{
	struct urd_memdev *md = ctx->mem;

	if (!md)
		return;
	pthread_mutex_lock(&mem_lock);
	/* MRs the application never deregistered.  Their window pieces that
	 * this context allocated are freed by the daemon with the context. */
	while (ctx->mrs) {
		struct urd_mr *mr = ctx->mrs;

		ctx->mrs = mr->next;
		for (size_t k = 0; k < mr->nruns; k++)
			run_put(md, mr->runs[k], mr->runs[k]->owner != ctx);
		if (mr->vm)
			urd_vm_unpin((uintptr_t)mr->ibv.addr, mr->ibv.length);
		urd_free(mr->runs);
		urd_free(mr);
	}
	/* Runs this context allocated that other contexts' MRs still use. */
	for (size_t i = 0; i < md->nruns; i++) {
		if (md->runs[i]->owner == ctx) {
			urd_dbg("%s: pages %#lx+%zu outlive the context that "
				"allocated them", md->name,
				(unsigned long)md->runs[i]->start, md->runs[i]->len);
			md->runs[i]->owner = NULL;
		}
	}
	if (--md->nctx == 0)
		memdev_free_locked(md);
	ctx->mem = NULL;
	pthread_mutex_unlock(&mem_lock);
}

/* The daemon stopped or the vRNIC was deleted: the window is no longer
 * served, so every moved page goes back to private memory now.  The
 * application keeps its data; its MRs are dead anyway (EIO). */
void urd_mem_daemon_gone(struct urd_context *ctx)
{
	struct urd_memdev *md = ctx->mem;

	pthread_mutex_lock(&mem_lock);
	if (md && !md->gone) {
		for (size_t i = 0; i < md->nruns; i++)
			move_out(md, md->runs[i]->start, md->runs[i]->len, md->runs[i]->off);
		md->gone = true;
	}
	pthread_mutex_unlock(&mem_lock);
}

/* --------------------------------------------------------------- fork */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&mem_lock);
	/* Event threads touch queues only under ev_lock: holding every
	 * ev_lock across fork leaves no queue lock held in the child. */
	for (struct urd_context *c = all_ctxs; c; c = c->next_all)
		pthread_mutex_lock(&c->ev_lock);
	urd_alloc_fork_prepare();       /* a leaf: last */
}

static void atfork_parent(void)
{
	urd_alloc_fork_parent();
	for (struct urd_context *c = all_ctxs; c; c = c->next_all)
		pthread_mutex_unlock(&c->ev_lock);
	pthread_mutex_unlock(&mem_lock);
}

static void atfork_child(void)
{
	urd_alloc_fork_child();
	/* Registered pages: private copies for the child. */
	for (struct urd_memdev *md = memdevs; md; md = md->next) {
		for (size_t i = 0; i < md->nruns; i++) {
			if (!md->gone)
				move_out(NULL, md->runs[i]->start, md->runs[i]->len, 0);
			urd_free(md->runs[i]);
		}
		md->nruns = 0;
	}
	for (struct urd_context *c = all_ctxs; c; c = c->next_all) {
		for (struct urd_mr *mr = c->mrs; mr; mr = mr->next)
			mr->nruns = 0;          /* the runs are gone */
		urd_store_release(&c->dead, 1);
		/* No event thread was copied into the child. */
		c->ev_started = false;
		/* The lock is the parent's liveness: not ours to keep. */
		if (c->lock_fd >= 0) {
			close(c->lock_fd);
			c->lock_fd = -1;
			c->vctx.context.cmd_fd = -1;
		}
		/* Rings and doorbells are the parent's. */
		mmap(c->region, c->ctrl_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		pthread_mutex_unlock(&c->ev_lock);
	}
	pthread_mutex_unlock(&mem_lock);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Control requests: the verbs objects behind each context, their validation,
 * and their release when a context closes or dies.
 *
 * Every handler gets the daemon's private copy of the request, already checked
 * for its minimum size, and runs under the big lock.  It returns 0 or -errno;
 * the errno is what the verbs call returns to the application.  A handler's
 * work must not grow with what a tenant accumulated: allocations are found in
 * a tree, a VM MR's segment list is prepared before the lock is taken, and a
 * dead context's allocations go back in batches (mem_reap).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "daemon.h"
#include "log.h"
#include "unirdma/barrier.h"

/* ------------------------------------------------------------- handles */

static int handle_new(struct vr_ctx *ctx, struct vr_obj *o, enum urd_obj_type type)
{
	uint32_t idx;

	for (idx = 1; idx < ctx->nhandles; idx++)
		if (!ctx->handles[idx])
			break;
	if (idx >= ctx->nhandles) {
		uint32_t n = ctx->nhandles ? ctx->nhandles * 2 : 64;
		struct vr_obj **h;
		uint16_t *g;

		if (n > URD_MAX_HANDLES)
			return -ENOMEM;
		h = realloc(ctx->handles, n * sizeof(*h));
		if (!h)
			return -ENOMEM;
		ctx->handles = h;
		g = realloc(ctx->gens, n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		ctx->gens = g;
		memset(h + ctx->nhandles, 0, (n - ctx->nhandles) * sizeof(*h));
		memset(g + ctx->nhandles, 0, (n - ctx->nhandles) * sizeof(*g));
		idx = ctx->nhandles ? ctx->nhandles : 1;
		ctx->nhandles = n;
	}
	ctx->gens[idx] = (uint16_t)(ctx->gens[idx] + 1) ? (uint16_t)(ctx->gens[idx] + 1) : 1;
	ctx->handles[idx] = o;
	o->type = type;
	o->ctx = ctx;
	o->handle = (uint32_t)ctx->gens[idx] << 16 | idx;
	return 0;
}

static void handle_free(struct vr_obj *o)
{
	o->ctx->handles[o->handle & 0xffff] = NULL;
}

void *obj_get(struct vr_ctx *ctx, uint32_t handle, enum urd_obj_type type)
{
	uint32_t idx = handle & 0xffff;
	struct vr_obj *o;

	if (!idx || idx >= ctx->nhandles)
		return NULL;
	o = ctx->handles[idx];
	if (!o || o->handle != handle || o->type != type)
		return NULL;
	return o;
}

/* Callers bound v far below 2^31 (device limits); the cap keeps the loop
 * finite whatever they pass. */
static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v && r < (1u << 31))
		r <<= 1;
	return r;
}

static uint32_t ilog2(uint32_t v)
{
	uint32_t r = 0;

	while ((1u << r) < v)
		r++;
	return r;
}

/* --------------------------------------------------------------- rings */

static int ring_alloc(struct urd_vrnic *vr, struct vr_ring *r, uint32_t n, uint32_t slot_bytes)
{
	uint64_t bytes = URD_RING_HDR_SIZE + (uint64_t)n * slot_bytes;
	uint64_t off;
	int ret;

	bytes = (bytes + URD_PAGE_SIZE - 1) & ~(uint64_t)(URD_PAGE_SIZE - 1);
	ret = alloc_get(&vr->arena, bytes, URD_PAGE_SIZE, &off);
	if (ret)
		return ret;
	/* Back the pages before touching them: the tenant may have filled its
	 * file system (its own quota), and a daemon write into a hole would
	 * then fault and fail the whole vRNIC instead of this one request. */
	if (vr->fd >= 0 && fallocate(vr->fd, 0, (off_t)off, (off_t)bytes)) {
		ret = errno == ENOSPC ? -ENOMEM : -errno;
		alloc_put(&vr->arena, off, bytes);
		return ret;
	}
	memset(vr->map + off, 0, bytes);
	r->off = off;
	r->bytes = bytes;
	r->hdr = (struct urd_ring_hdr *)(vr->map + off);
	r->slots = vr->map + off + URD_RING_HDR_SIZE;
	r->n = n;
	r->shift = ilog2(slot_bytes);
	r->head = 0;
	r->seen = 0;
	r->polling = false;
	return 0;
}

static void ring_free(struct urd_vrnic *vr, struct vr_ring *r)
{
	if (r->bytes)
		alloc_put(&vr->arena, r->off, r->bytes);
	r->bytes = 0;
}

/* ------------------------------------------------------------ key tables */

static uint32_t key_bucket(uint32_t key)
{
	return (key * 2654435761u) >> 22;       /* 10 bits */
}

struct vr_mr *mr_by_lkey(struct urd_vrnic *vr, uint32_t lkey)
{
	for (struct vr_mr *m = vr->lkeys[key_bucket(lkey)]; m; m = m->lkey_next)
		if (m->lkey == lkey)
			return m;
	return NULL;
}

struct vr_mr *mr_by_rkey(struct urd_vrnic *vr, uint32_t rkey)
{
	for (struct vr_mr *m = vr->rkeys[key_bucket(rkey)]; m; m = m->rkey_next)
		if (m->rkey == rkey)
			return m;
	return NULL;
}

/* Keys are random so that a tenant cannot guess another MR's key from its own. */
static uint32_t new_key(struct urd_vrnic *vr)
{
	uint32_t k;

	do {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (uint32_t)rand() ^ (uint32_t)urd_d->next_ctx_id << 16;
	} while (!k || k == UINT32_MAX || mr_by_lkey(vr, k) || mr_by_rkey(vr, k));
	return k;
}

/* ------------------------------------------------------------------ QPNs */

struct vr_qp *qpn_lookup(struct urd_daemon *d, uint32_t qpn)
{
	for (struct vr_qp *q = d->qpn_hash[qpn % URD_QPN_BUCKETS]; q; q = q->qpn_next)
		if (q->qpn == qpn)
			return q;
	return NULL;
}

/* QPNs are random, not sequential: a tenant must not learn from its own QPNs
 * how many QPs other tenants create.  24 bits, never 0 or 1 (QP1 is the
 * GSI), unique host-wide (the hash); a few thousand QPs in 2^24 numbers make
 * collisions rare, and the loop ends. */
static uint32_t qpn_alloc(struct urd_daemon *d)
{
	for (;;) {
		uint32_t q;

		if (d->qpn_sequential)
			q = d->next_qpn++;
		else if (getrandom(&q, sizeof(q), 0) != sizeof(q))
			q = (uint32_t)rand() ^ (d->next_qpn++ * 2654435761u);
		q &= 0xffffff;
		if (q > 1 && !qpn_lookup(d, q))
			return q;
	}
}

static void qpn_unlink(struct urd_daemon *d, struct vr_qp *qp)
{
	for (struct vr_qp **pp = &d->qpn_hash[qp->qpn % URD_QPN_BUCKETS]; *pp; pp = &(*pp)->qpn_next)
		if (*pp == qp) {
			*pp = qp->qpn_next;
			return;
		}
}

/* ----------------------------------------------------------- the handlers */

#define REQ(type) const struct type *r = (const struct type *)req; (void)r
#define RESP(type) struct type *o = (struct type *)resp; *resp_len = sizeof(*o)

struct handler_args {
	struct urd_vrnic *vr;
	struct vr_ctx *ctx;
	uint32_t slot;
	struct vr_mr_prep *prep;       /* REG_MR of a VM: done without the big lock */
};

static int op_alloc_pd(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	RESP(urd_handle_resp);
	struct vr_pd *pd;
	int ret;

	if (a->vr->npd >= a->vr->lim.max_pd)
		return -ENOMEM;         /* quota */
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	ret = handle_new(a->ctx, &pd->obj, OBJ_PD);
	if (ret) {
		free(pd);
		return ret;
	}
	a->vr->npd++;
	o->handle = pd->obj.handle;
	return 0;
}

static void pd_free(struct vr_pd *pd)
{
	pd->obj.ctx->vr->npd--;
	handle_free(&pd->obj);
	free(pd);
}

static int op_dealloc_pd(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_handle_req);
	struct vr_pd *pd = obj_get(a->ctx, r->handle, OBJ_PD);

	if (!pd)
		return -EINVAL;
	if (pd->obj.refs)
		return -EBUSY;
	pd_free(pd);
	return 0;
}

/* Memory window allocations live in the vRNIC, not in the context: an MR of
 * another context of the same tenant may still reference them after the
 * allocating context freed them or died. */
static void mem_release(struct urd_vrnic *vr, struct vr_mem *m)
{
	/* While the vRNIC is torn down under running applications their pages
	 * stay where they are: punching them would zero live memory.  The file
	 * goes away with its last mapping. */
	if (!vr->deleting)
		fallocate(vr->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)(URD_REGION_CTRL_SIZE + m->off), (off_t)m->len);
	alloc_put(&vr->memwin, m->off, m->len);
}

/* Daemon heap per allocation: the struct and its tsearch node, each with
 * malloc's header. */
#define MALLOC_OVERHEAD 16u
#define MEM_META ((uint64_t)sizeof(struct vr_mem) + 4 * sizeof(void *) + 2 * MALLOC_OVERHEAD)

/* Allocations per vRNIC: the library makes one per run of pages it moves,
 * and a run lives while an MR covers part of it; an MR can add at most one
 * run per gap it fills, so twice the MR quota (plus one pending allocation
 * per context) is more than any program needs. */
static uint64_t mem_alloc_cap(const struct urd_vrnic *vr)
{
	return 2ull * vr->lim.max_mr + URD_MAX_CTX;
}

/* Daemon metadata per vRNIC (segment tables, allocation records): a base,
 * plus one 32-byte piece for every page the quota lets it register (a VM MR
 * over fully scattered guest pages needs exactly that). */
#define URD_META_BASE (16ull << 20)

static uint64_t meta_cap(const struct urd_vrnic *vr)
{
	return URD_META_BASE + vr->lim.max_mem_bytes / URD_PAGE_SIZE * sizeof(struct vr_mr_piece);
}

static bool meta_charge(struct urd_vrnic *vr, uint64_t bytes)
{
	if (bytes > meta_cap(vr) || vr->meta_bytes > meta_cap(vr) - bytes)
		return false;
	vr->meta_bytes += bytes;
	return true;
}

/* Live allocations never overlap (the window allocator hands them out), so
 * "overlaps" is equality and the tree orders them by offset. */
static int mem_cmp(const void *a, const void *b)
{
	const struct vr_mem *x = a, *y = b;

	if (x->off + x->len <= y->off)
		return -1;
	if (y->off + y->len <= x->off)
		return 1;
	return 0;
}

/* The allocation holding byte off, in O(log n). */
static struct vr_mem *mem_at(struct urd_vrnic *vr, uint64_t off)
{
	struct vr_mem key = { .off = off, .len = 1 };
	void *n = tfind(&key, &vr->mem_tree, mem_cmp);

	return n ? *(struct vr_mem **)n : NULL;
}

static void mem_unlink(struct urd_vrnic *vr, struct vr_mem *m)
{
	if (m->prev)
		m->prev->next = m->next;
	else
		vr->mems = m->next;
	if (m->next)
		m->next->prev = m->prev;
	m->prev = m->next = NULL;
}

static void mem_drop(struct urd_vrnic *vr, struct vr_mem *m)
{
	tdelete(m, &vr->mem_tree, mem_cmp);
	vr->nmem--;
	vr->meta_bytes -= MEM_META;
	alloc_put(&vr->memwin, m->off, m->len);
	free(m);
}

static void mem_unlink_free(struct urd_vrnic *vr, struct vr_mem *m)
{
	mem_unlink(vr, m);
	mem_release(vr, m);
	tdelete(m, &vr->mem_tree, mem_cmp);
	vr->nmem--;
	vr->meta_bytes -= MEM_META;
	free(m);
}

static int mem_off_cmp(const void *a, const void *b)
{
	const struct vr_mem *x = *(struct vr_mem *const *)a, *y = *(struct vr_mem *const *)b;

	return x->off < y->off ? -1 : x->off > y->off;
}

#define REAP_BATCH 1024u

/* Reaping is deferred to the control thread while there is one and the
 * vRNIC stays; otherwise (teardown, in-process harnesses) done at once. */
static bool reap_later(const struct urd_vrnic *vr)
{
	return urd_vrnic_threads && !vr->deleting;
}

static bool mems_reap(struct urd_vrnic *vr, uint32_t max)
{
	struct vr_mem *batch[REAP_BATCH];
	uint32_t n = 0;

	if (max > REAP_BATCH)
		max = REAP_BATCH;
	while (vr->reap && n < max) {
		batch[n++] = vr->reap;
		vr->reap = vr->reap->next;
	}
	if (!n)
		return false;
	/* one punch per run of adjacent pieces, then the pieces go back in
	 * order (the free list is sorted: ascending puts walk it least) */
	qsort(batch, n, sizeof(batch[0]), mem_off_cmp);
	for (uint32_t i = 0, j; i < n; i = j) {
		uint64_t end = batch[i]->off + batch[i]->len;

		for (j = i + 1; j < n && batch[j]->off == end; j++)
			end += batch[j]->len;
		if (!vr->deleting)
			fallocate(vr->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(URD_REGION_CTRL_SIZE + batch[i]->off), (off_t)(end - batch[i]->off));
	}
	for (uint32_t i = 0; i < n; i++)
		mem_drop(vr, batch[i]);
	return vr->reap != NULL;
}

static void mem_put(struct urd_vrnic *vr, struct vr_mem *m)
{
	if (!m)
		return;         /* a VM MR's segment: guest RAM, no window piece */
	if (--m->refs || !m->freed_by_tenant)
		return;
	if (!reap_later(vr)) {
		mem_unlink_free(vr, m);
		return;
	}
	mem_unlink(vr, m);      /* its punch joins the next batch */
	m->next = vr->reap;
	vr->reap = m;
}

static int op_mem_alloc(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_mem_req);
	RESP(urd_mem_resp);
	struct urd_vrnic *vr = a->vr;
	struct vr_mem *m;
	uint64_t off;
	int ret;

	if (vr->vm)
		return -EOPNOTSUPP;     /* VM hook: registered memory stays in guest RAM */
	if (!r->len || r->len % URD_PAGE_SIZE || r->len > vr->memwin.size)
		return -EINVAL;
	if (vr->memwin.used + r->len > vr->lim.max_mem_bytes)
		return -ENOMEM;         /* registered-bytes quota */
	if (vr->nmem >= mem_alloc_cap(vr))
		return -ENOMEM;         /* allocations quota */
	if (!meta_charge(vr, MEM_META))
		return -ENOMEM;         /* daemon metadata quota */
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = -ENOMEM;
		goto err_meta;
	}
	ret = alloc_get(&vr->memwin, r->len, URD_PAGE_SIZE, &off);
	if (ret)
		goto err_free;
	m->off = off;
	m->len = r->len;
	m->ctx = a->ctx;
	if (!tsearch(m, &vr->mem_tree, mem_cmp)) {
		ret = -ENOMEM;
		goto err_put;
	}
	m->next = vr->mems;
	if (m->next)
		m->next->prev = m;
	vr->mems = m;
	vr->nmem++;
	o->off = off;
	o->len = r->len;
	return 0;

err_put:
	alloc_put(&vr->memwin, off, r->len);
err_free:
	free(m);
err_meta:
	vr->meta_bytes -= MEM_META;
	return ret;
}

static int op_mem_free(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_mem_req);

	if (a->vr->vm)
		return -EOPNOTSUPP;     /* VM hook: no window */
	struct vr_mem *m = r->len ? mem_at(a->vr, r->off) : NULL;

	if (m && m->off == r->off && m->len == r->len && !m->freed_by_tenant && m->ctx == a->ctx) {
		m->freed_by_tenant = true;
		m->ctx = NULL;
		if (!m->refs)
			mem_unlink_free(a->vr, m);
		return 0;
	}
	return -EINVAL;
}

static struct vr_mem *mem_containing(struct urd_vrnic *vr, uint64_t off, uint64_t len)
{
	struct vr_mem *m = len ? mem_at(vr, off) : NULL;

	if (m && !m->freed_by_tenant && off >= m->off && len <= m->len && off - m->off <= m->len - len)
		return m;
	return NULL;
}

/* Segment lists (issue 9 finding 6).  An MR's segments must be page-granular
 * (only the MR's first byte may start inside a page and only its last byte
 * end inside one: every other boundary is a page boundary) and must not
 * share a page with each other (no aliasing: an MR of 1917 segments over one
 * page registered 4 KiB and made the daemon keep 1917 pieces).  Adjacent
 * segments are coalesced into one piece (container: inside one allocation;
 * VM: contiguous in guest RAM), so the daemon keeps one piece per
 * discontiguity, and every piece is charged to the vRNIC's metadata quota.
 * One exception: a VM MR without write access may alias guest frames (the
 * guest's zero page); its pieces are charged to the memory quota one by one. */
struct vr_mr_prep {
	int err;
	uint32_t n;                     /* pieces */
	uint64_t charge;                /* VM: page-rounded bytes, for the memory quota */
	struct vr_mr_piece *p;         /* n pieces, malloc'd (or mmapped: mapped) */
	uint32_t mapped;                /* pieces p was mmapped for; 0: malloc'd */
};

static bool seg_granular(uint64_t off, uint64_t len, uint32_t i, uint32_t n)
{
	if (i > 0 && off % URD_PAGE_SIZE)
		return false;
	if (i + 1 < n && (off + len) % URD_PAGE_SIZE)
		return false;
	return true;
}

static uintptr_t page_down(const uint8_t *p)
{
	return (uintptr_t)p & ~(uintptr_t)(URD_PAGE_SIZE - 1);
}

static uintptr_t page_up(const uint8_t *p)
{
	return ((uintptr_t)p + URD_PAGE_SIZE - 1) & ~(uintptr_t)(URD_PAGE_SIZE - 1);
}

struct span {
	uintptr_t lo, hi;
};

/* Heapsort by lo, in place: glibc's qsort mallocs a buffer as big as the
 * array (16 MiB for a VM's largest list), which would stay in the heap. */
static void span_sift(struct span *s, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct span t;

		if (c >= n)
			return;
		if (c + 1 < n && s[c + 1].lo > s[c].lo)
			c++;
		if (s[i].lo >= s[c].lo)
			return;
		t = s[i];
		s[i] = s[c];
		s[c] = t;
		i = c;
	}
}

static void span_sort(struct span *s, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		span_sift(s, i, n);
	for (size_t end = n; end-- > 1;) {
		struct span t = s[0];

		s[0] = s[end];
		s[end] = t;
		span_sift(s, 0, end);
	}
}

/* Transient tables (up to 16 MiB) come from mmap, so that they go back to
 * the system at once instead of staying in malloc's arenas. */
static void *big_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* 0 when no two pieces touch the same page; -EINVAL otherwise.  O(n log n). */
static int pieces_disjoint(const struct vr_mr_piece *p, uint32_t n)
{
	size_t bytes = (size_t)n * sizeof(struct span);
	struct span *s;
	int ret = 0;

	if (n < 2)
		return 0;
	s = big_alloc(bytes);
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		s[i].lo = page_down(p[i].ptr);
		s[i].hi = page_up(p[i].ptr + p[i].len);
	}
	span_sort(s, n);
	for (uint32_t i = 1; i < n && !ret; i++)
		if (s[i].lo < s[i - 1].hi)
			ret = -EINVAL;
	munmap(s, bytes);
	return ret;
}

static bool reg_mr_segs_ok(const struct urd_reg_mr_req *r, uint32_t len)
{
	return r->nsegs && r->nsegs <= URD_MR_MAX_SEGS &&
	       len >= sizeof(*r) + (uint64_t)r->nsegs * sizeof(r->segs[0]);
}

/* VM: segments are guest-physical; vm_translate checks that each is guest
 * RAM and gives the daemon's address of it.  No big lock needed. */
static int vm_segments(struct urd_vrnic *vr, const struct urd_reg_mr_req *r, uint32_t len,
		       struct vr_mr_prep *p)
{
	const struct urd_mr_seg *segs = r->segs;
	struct urd_mr_seg *table = NULL;
	uint32_t nsegs = r->nsegs, n = 0;
	uint64_t total = 0;
	uint8_t *end = NULL;
	int ret;

	if (!reg_mr_segs_ok(r, len))
		return -EINVAL;
	if (r->flags & URD_REG_MR_INDIRECT) {
		/* the segments are a table in guest RAM; work on a copy */
		ret = vm_copy_seg_table(vr, r->segs, r->nsegs, &table, &nsegs);
		if (ret)
			return ret;
		segs = table;
	}
	/* pass 1: check and count the coalesced pieces */
	for (uint32_t i = 0; i < nsegs; i++) {
		uint8_t *ptr;

		if (!segs[i].len || segs[i].len > r->length - total ||
		    !seg_granular(segs[i].off, segs[i].len, i, nsegs) ||
		    vm_translate(vr, segs[i].off, segs[i].len, &ptr)) {
			ret = -EINVAL;
			goto out;
		}
		if (ptr != end)
			n++;
		end = ptr + segs[i].len;
		total += segs[i].len;
	}
	if (total != r->length) {
		ret = -EINVAL;
		goto out;
	}
	/* a scattered MR needs at most one piece per page of guest RAM */
	if (n > vm_ram_bytes(vr) / URD_PAGE_SIZE + 1) {
		ret = -EINVAL;
		goto out;
	}
	/* mmapped until op_reg_mr keeps them: a refused list leaves nothing */
	p->p = big_alloc((size_t)n * sizeof(*p->p));
	if (!p->p) {
		ret = -ENOMEM;
		goto out;
	}
	p->mapped = n;
	/* pass 2: the pieces (the table is our copy: it did not change) */
	total = 0;
	end = NULL;
	for (uint32_t i = 0; i < nsegs; i++) {
		uint8_t *ptr;

		vm_translate(vr, segs[i].off, segs[i].len, &ptr);
		if (ptr == end) {
			p->p[p->n - 1].len += segs[i].len;
		} else {
			p->p[p->n].mr_off = total;
			p->p[p->n].len = segs[i].len;
			p->p[p->n].ptr = ptr;
			p->p[p->n].mem = NULL;
			p->n++;
		}
		end = ptr + segs[i].len;
		total += segs[i].len;
	}
	for (uint32_t i = 0; i < p->n; i++)
		p->charge += page_up(p->p[i].ptr + p->p[i].len) - page_down(p->p[i].ptr);
	/* A read-only MR may name one guest frame more than once: the guest
	 * maps never-written anonymous pages to its zero page (so do real
	 * RNICs: a read-only registration pins that page again and again).
	 * Every piece is charged all the same. */
	if (r->access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		ret = pieces_disjoint(p->p, p->n);
	else
		ret = 0;
out:
	vm_free_seg_table(table, table ? nsegs : 0);
	return ret;
}

/* Container: segments are offsets in the memory window, each inside one
 * live allocation (looked up in O(log n)).  Big lock held. */
static int win_segments(struct urd_vrnic *vr, const struct urd_reg_mr_req *r, uint32_t len,
			struct vr_mr_prep *p)
{
	uint64_t total = 0;

	if (!reg_mr_segs_ok(r, len))
		return -EINVAL;
	p->p = malloc((size_t)r->nsegs * sizeof(*p->p));
	if (!p->p)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nsegs; i++) {
		const struct urd_mr_seg *sg = &r->segs[i];
		struct vr_mem *m;
		struct vr_mr_piece *last = p->n ? &p->p[p->n - 1] : NULL;

		if (!sg->len || sg->len > r->length - total || !seg_granular(sg->off, sg->len, i, r->nsegs))
			return -EINVAL;
		m = mem_containing(vr, sg->off, sg->len);
		if (!m)
			return -EINVAL;
		if (last && last->mem == m &&
		    last->ptr + last->len == vr->map + URD_REGION_CTRL_SIZE + sg->off) {
			last->len += sg->len;
		} else {
			p->p[p->n].mr_off = total;
			p->p[p->n].len = sg->len;
			p->p[p->n].ptr = vr->map + URD_REGION_CTRL_SIZE + sg->off;
			p->p[p->n].mem = m;
			p->n++;
		}
		total += sg->len;
	}
	if (total != r->length)
		return -EINVAL;
	return pieces_disjoint(p->p, p->n);
}

static void prep_pieces_free(struct vr_mr_prep *p)
{
	if (p->mapped)
		munmap(p->p, (size_t)p->mapped * sizeof(*p->p));
	else
		free(p->p);
	p->p = NULL;
	p->mapped = 0;
}

void mr_prep_free(struct vr_mr_prep *p)
{
	if (!p)
		return;
	prep_pieces_free(p);
	free(p);
}

void mr_prepare(struct urd_vrnic *vr, const void *req, uint32_t req_len, struct vr_mr_prep **out)
{
	const struct urd_msg_hdr *h = req;
	struct vr_mr_prep *p;

	*out = NULL;
	if (!vr->vm || req_len < sizeof(struct urd_reg_mr_req) || req_len > URD_MSG_MAX ||
	    h->version != URD_ABI_VERSION || h->op != URD_OP_REG_MR)
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;         /* op_reg_mr does the work itself */
	p->err = vm_segments(vr, req, req_len, p);
	*out = p;
}

#define URD_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING)

static int op_reg_mr(struct handler_args *a, const void *req, uint32_t len, void *resp, uint32_t *resp_len)
{
	REQ(urd_reg_mr_req);
	RESP(urd_reg_mr_resp);
	struct urd_vrnic *vr = a->vr;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_mr_prep local = { 0 }, *p = a->prep ? a->prep : &local;
	struct vr_mr *mr;
	uint64_t meta;
	uint32_t b;
	int ret;

	if (!pd)
		return -EINVAL;
	if (r->access & ~(uint32_t)URD_ACCESS_ALL)
		return -EINVAL;
	if ((r->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(r->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;         /* man ibv_reg_mr */
	if (!r->length || r->length > vr->memwin.size || r->iova + r->length < r->iova)
		return -EINVAL;
	if (vr->nmr >= vr->lim.max_mr)
		return -ENOMEM;         /* quota */
	if (!reg_mr_segs_ok(r, len))
		return -EINVAL;
	if ((r->flags & URD_REG_MR_INDIRECT) && !vr->vm)
		return -EINVAL;
	if (!a->prep)           /* VM: normally prepared without the big lock */
		local.err = vr->vm ? vm_segments(vr, r, len, &local) : win_segments(vr, r, len, &local);
	ret = p->err;
	if (ret)
		goto err_prep;
	/* registered-memory quota: a VM MR's pages count as a container's
	 * allocations do (there is no window: memwin.used counts them) */
	if (p->charge && vr->memwin.used + p->charge > vr->lim.max_mem_bytes) {
		ret = -ENOMEM;
		goto err_prep;
	}
	meta = sizeof(*mr) + (uint64_t)p->n * sizeof(*p->p) + 2 * MALLOC_OVERHEAD;
	if (!meta_charge(vr, meta)) {
		ret = -ENOMEM;
		goto err_prep;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		ret = -ENOMEM;
		goto err_meta;
	}
	ret = handle_new(a->ctx, &mr->obj, OBJ_MR);
	if (ret)
		goto err_mr;
	/* the pieces move into the MR */
	if (p->mapped) {
		mr->segs = malloc((size_t)p->n * sizeof(*p->p));
		if (!mr->segs) {
			ret = -ENOMEM;
			goto err_handle;
		}
		memcpy(mr->segs, p->p, (size_t)p->n * sizeof(*p->p));
		prep_pieces_free(p);
	} else {
		/* shrink to what coalescing left */
		mr->segs = realloc(p->p, (size_t)p->n * sizeof(*p->p));
		if (!mr->segs)
			mr->segs = p->p;
		p->p = NULL;
	}
	mr->nsegs = p->n;
	for (uint32_t i = 0; i < mr->nsegs; i++)
		if (mr->segs[i].mem)
			mr->segs[i].mem->refs++;
	mr->charged = p->charge;
	vr->memwin.used += p->charge;
	mr->meta = meta;
	mr->pd = pd;
	pd->obj.refs++;
	mr->access = r->access;
	mr->iova = r->iova;
	mr->length = r->length;
	mr->lkey = new_key(vr);
	mr->rkey = new_key(vr);
	b = key_bucket(mr->lkey);
	mr->lkey_next = vr->lkeys[b];
	vr->lkeys[b] = mr;
	b = key_bucket(mr->rkey);
	mr->rkey_next = vr->rkeys[b];
	vr->rkeys[b] = mr;
	vr->nmr++;
	o->handle = mr->obj.handle;
	o->lkey = mr->lkey;
	o->rkey = mr->rkey;
	prep_pieces_free(&local);
	return 0;

err_handle:
	handle_free(&mr->obj);
err_mr:
	free(mr);
err_meta:
	vr->meta_bytes -= meta;
err_prep:
	prep_pieces_free(&local);
	return ret;
}

static void mr_release(struct urd_vrnic *vr, struct vr_mr *mr)
{
	for (uint32_t i = 0; i < mr->nsegs; i++)
		mem_put(vr, mr->segs[i].mem);
	vr->memwin.used -= mr->charged;
	vr->meta_bytes -= mr->meta;
	free(mr->segs);
	free(mr);
}

/* defer: a dying context's MR (ctx_destroy), whose pieces may be many */
static void mr_free(struct vr_mr *mr, bool defer)
{
	struct urd_vrnic *vr = mr->obj.ctx->vr;

	for (struct vr_mr **pp = &vr->lkeys[key_bucket(mr->lkey)]; *pp; pp = &(*pp)->lkey_next)
		if (*pp == mr) {
			*pp = mr->lkey_next;
			break;
		}
	for (struct vr_mr **pp = &vr->rkeys[key_bucket(mr->rkey)]; *pp; pp = &(*pp)->rkey_next)
		if (*pp == mr) {
			*pp = mr->rkey_next;
			break;
		}
	mr->pd->obj.refs--;
	vr->nmr--;
	handle_free(&mr->obj);
	if (defer && mr->nsegs > 64) {
		/* unreachable already (no key, no handle); its pieces go back
		 * in batches, its quota with them */
		mr->lkey_next = vr->mr_reap;
		vr->mr_reap = mr;
		return;
	}
	mr_release(vr, mr);
}

/* Up to 32k pieces of dead contexts' MRs, then up to max allocations. */
bool mem_reap(struct urd_vrnic *vr, uint32_t max)
{
	uint32_t pieces = 0;

	while (vr->mr_reap && pieces < 32768) {
		struct vr_mr *mr = vr->mr_reap;

		vr->mr_reap = mr->lkey_next;
		pieces += mr->nsegs;
		mr_release(vr, mr);
	}
	return mems_reap(vr, max) || vr->mr_reap;
}

static int op_dereg_mr(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_handle_req);
	struct vr_mr *mr = obj_get(a->ctx, r->handle, OBJ_MR);

	if (!mr)
		return -EINVAL;
	mr_free(mr, false);
	return 0;
}

static int op_create_cq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_create_cq_req);
	RESP(urd_create_cq_resp);
	struct vr_cq *cq;
	int ret;

	if (!r->cqe || r->cqe > a->vr->lim.max_cqe)
		return -EINVAL;
	if (a->vr->ncq >= a->vr->lim.max_cq)
		return -ENOMEM;         /* quota */
	if (r->comp_vector >= 1)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	ret = ring_alloc(a->vr, &cq->ring, roundup_pow2(r->cqe), sizeof(struct urd_cqe));
	if (ret)
		goto err_free;
	ret = handle_new(a->ctx, &cq->obj, OBJ_CQ);
	if (ret)
		goto err_ring;
	a->vr->ncq++;
	o->handle = cq->obj.handle;
	o->nentries = cq->ring.n;
	o->ring_off = cq->ring.off;
	return 0;

err_ring:
	ring_free(a->vr, &cq->ring);
err_free:
	free(cq);
	return ret;
}

static void cq_free(struct vr_cq *cq)
{
	struct urd_vrnic *vr = cq->obj.ctx->vr;

	ring_free(vr, &cq->ring);
	vr->ncq--;
	handle_free(&cq->obj);
	free(cq);
}

static int op_destroy_cq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_handle_req);
	struct vr_cq *cq = obj_get(a->ctx, r->handle, OBJ_CQ);

	if (!cq)
		return -EINVAL;
	if (cq->obj.refs)
		return -EBUSY;
	cq_free(cq);
	return 0;
}

static uint32_t recv_wqe_bytes(uint32_t max_sge)
{
	return roundup_pow2((uint32_t)sizeof(struct urd_recv_wqe) +
			    (max_sge ? max_sge : 1) * (uint32_t)sizeof(struct urd_sge));
}

static void srq_fill(const struct vr_srq *srq, struct urd_srq_resp *o)
{
	o->handle = srq->obj.handle;
	o->srq_num = srq->srq_num;
	o->max_wr = srq->max_wr;
	o->max_sge = srq->max_sge;
	o->srq_limit = srq->limit;
	o->nentries = srq->ring.n;
	o->wqe_shift = srq->ring.shift;
	o->ring_off = srq->ring.off;
}

static int op_create_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_create_srq_req);
	RESP(urd_srq_resp);
	const struct urd_dev_attr *dev = &a->vr->hdr->dev;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_srq *srq;
	uint32_t n;
	int ret;

	if (!pd || !r->max_wr || r->max_wr > a->vr->lim.max_srq_wr || r->max_sge > URD_MAX_SGE ||
	    r->srq_limit > r->max_wr)
		return -EINVAL;
	if (a->vr->nsrq >= a->vr->lim.max_srq)
		return -ENOMEM;         /* quota */
	(void)dev;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	n = roundup_pow2(r->max_wr);
	ret = ring_alloc(a->vr, &srq->ring, n, recv_wqe_bytes(r->max_sge));
	if (ret)
		goto err_free;
	ret = handle_new(a->ctx, &srq->obj, OBJ_SRQ);
	if (ret)
		goto err_ring;
	srq->pd = pd;
	pd->obj.refs++;
	srq->max_wr = n;
	srq->max_sge = r->max_sge ? r->max_sge : 1;
	srq->limit = r->srq_limit;
	srq->srq_num = a->vr->d->next_srqn++ & 0xffffff;
	a->vr->nsrq++;
	srq_fill(srq, o);
	return 0;

err_ring:
	ring_free(a->vr, &srq->ring);
err_free:
	free(srq);
	return ret;
}

static int op_modify_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_modify_srq_req);
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (r->attr_mask & ~(uint32_t)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	if (r->attr_mask & IBV_SRQ_MAX_WR)
		return -EINVAL;         /* resizing is not supported (no IBV_DEVICE_SRQ_RESIZE) */
	if (r->attr_mask & IBV_SRQ_LIMIT) {
		if (r->srq_limit > srq->max_wr)
			return -EINVAL;
		srq->limit = r->srq_limit;      /* arms the limit event; 0 disarms */
	}
	return 0;
}

static int op_query_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_handle_req);
	RESP(urd_srq_resp);
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	srq_fill(srq, o);
	return 0;
}

static void srq_free(struct vr_srq *srq)
{
	struct urd_vrnic *vr = srq->obj.ctx->vr;

	ring_free(vr, &srq->ring);
	srq->pd->obj.refs--;
	vr->nsrq--;
	handle_free(&srq->obj);
	free(srq);
}

static int op_destroy_srq(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_handle_req);
	struct vr_srq *srq = obj_get(a->ctx, r->handle, OBJ_SRQ);

	if (!srq)
		return -EINVAL;
	if (srq->obj.refs)
		return -EBUSY;
	srq_free(srq);
	return 0;
}

static int op_create_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_create_qp_req);
	RESP(urd_create_qp_resp);
	struct urd_vrnic *vr = a->vr;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_cq *scq = obj_get(a->ctx, r->send_cq, OBJ_CQ);
	struct vr_cq *rcq = obj_get(a->ctx, r->recv_cq, OBJ_CQ);
	struct vr_srq *srq = NULL;
	struct urd_qp_cap cap = r->cap;
	uint32_t sq_bytes, room, db = UINT32_MAX;
	struct vr_qp *qp;
	int ret;

	if (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if (!pd || !scq || !rcq)
		return -EINVAL;
	if (r->srq && !(srq = obj_get(a->ctx, r->srq, OBJ_SRQ)))
		return -EINVAL;
	if (cap.max_send_wr > vr->lim.max_qp_wr || cap.max_send_sge > URD_MAX_SGE ||
	    cap.max_inline_data > URD_MAX_INLINE ||
	    (!srq && (cap.max_recv_wr > vr->lim.max_qp_wr || cap.max_recv_sge > URD_MAX_SGE)))
		return -EINVAL;
	if (vr->nqp >= vr->lim.max_qp)
		return -ENOMEM;         /* quota */
	for (uint32_t i = 0; i < URD_MAX_QP_SLOTS; i++)
		if (!vr->qp_slots[i]) {
			db = i;
			break;
		}
	if (db == UINT32_MAX)
		return -ENOMEM;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	room = cap.max_send_sge * (uint32_t)sizeof(struct urd_sge);
	if (cap.max_inline_data > room)
		room = cap.max_inline_data;
	if (room < sizeof(struct urd_sge))
		room = sizeof(struct urd_sge);
	sq_bytes = roundup_pow2(URD_SEND_WQE_HDR + room);
	ret = ring_alloc(vr, &qp->sq, roundup_pow2(cap.max_send_wr ? cap.max_send_wr : 1), sq_bytes);
	if (ret)
		goto err_free;
	room = sq_bytes - URD_SEND_WQE_HDR;
	cap.max_inline_data = room < URD_MAX_INLINE ? room : URD_MAX_INLINE;
	cap.max_send_sge = room / sizeof(struct urd_sge) < URD_MAX_SGE ?
			   room / (uint32_t)sizeof(struct urd_sge) : URD_MAX_SGE;
	cap.max_send_wr = qp->sq.n;
	if (!srq) {
		uint32_t rb = recv_wqe_bytes(cap.max_recv_sge);

		ret = ring_alloc(vr, &qp->rq, roundup_pow2(cap.max_recv_wr ? cap.max_recv_wr : 1), rb);
		if (ret)
			goto err_sq;
		cap.max_recv_wr = qp->rq.n;
		cap.max_recv_sge = (rb - (uint32_t)sizeof(struct urd_recv_wqe)) / (uint32_t)sizeof(struct urd_sge);
		if (cap.max_recv_sge > URD_MAX_SGE)
			cap.max_recv_sge = URD_MAX_SGE;
	} else {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	ret = handle_new(a->ctx, &qp->obj, OBJ_QP);
	if (ret)
		goto err_rq;
	qp->vr = vr;
	qp->type = r->qp_type;
	qp->state = IBV_QPS_RESET;
	qp->sq_sig_all = r->sq_sig_all != 0;
	qp->pd = pd;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->srq = srq;
	pd->obj.refs++;
	scq->obj.refs++;
	rcq->obj.refs++;
	if (srq)
		srq->obj.refs++;
	qp->cap = cap;
	qp->db_index = db;
	qp->qpn = qpn_alloc(vr->d);
	qp->qpn_next = vr->d->qpn_hash[qp->qpn % URD_QPN_BUCKETS];
	vr->d->qpn_hash[qp->qpn % URD_QPN_BUCKETS] = qp;
	vr->qp_slots[db] = qp;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.port_num = 1;
	qp->attr.cap = cap;
	vr->nqp++;

	o->handle = qp->obj.handle;
	o->qpn = qp->qpn;
	o->db_index = db;
	o->cap = cap;
	o->sq_off = qp->sq.off;
	o->sq_n = qp->sq.n;
	o->sq_wqe_shift = qp->sq.shift;
	o->rq_off = srq ? 0 : qp->rq.off;
	o->rq_n = srq ? 0 : qp->rq.n;
	o->rq_wqe_shift = srq ? 0 : qp->rq.shift;
	return 0;

err_rq:
	ring_free(vr, &qp->rq);
err_sq:
	ring_free(vr, &qp->sq);
err_free:
	free(qp);
	return ret;
}

/* IB spec 11.2.4.2 / the kernel's QP state table: attributes each transition
 * requires and may take. */
static bool qp_transition(uint32_t type, uint32_t cur, uint32_t next, uint32_t *req, uint32_t *opt)
{
	const bool ud = type == IBV_QPT_UD;

	*req = IBV_QP_STATE;
	*opt = 0;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return cur <= IBV_QPS_ERR;
	switch (cur) {
	case IBV_QPS_RESET:
		if (next != IBV_QPS_INIT)
			return false;
		*req |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
		return true;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			*opt = IBV_QP_PKEY_INDEX | IBV_QP_PORT | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
			return true;
		}
		if (next != IBV_QPS_RTR)
			return false;
		if (ud) {
			*opt = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		} else {
			*req |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			*opt = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
		}
		return true;
	case IBV_QPS_RTR:
		if (next != IBV_QPS_RTS)
			return false;
		*req |= IBV_QP_SQ_PSN;
		if (ud) {
			*opt = IBV_QP_CUR_STATE | IBV_QP_QKEY;
		} else {
			*req |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			*opt = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
		}
		return true;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
		if (next == IBV_QPS_SQD && cur != IBV_QPS_SQE) {
			*opt = IBV_QP_EN_SQD_ASYNC_NOTIFY;
			return true;
		}
		if (next != IBV_QPS_RTS)
			return false;
		*opt = IBV_QP_CUR_STATE | (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					   IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER);
		if (cur == IBV_QPS_SQD && !ud)
			*opt |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_AV;
		return true;
	default:
		return false;
	}
}

static void ring_reset(struct vr_ring *r)
{
	if (!r->bytes)
		return;
	/* drop whatever the tenant posted: RESET empties the queues (no completions) */
	r->head = urd_load_acquire(&r->hdr->prod);
	r->seen = r->head;
	r->polling = false;
	urd_store_relaxed(&r->hdr->polling, 0);
	urd_store_release(&r->hdr->cons, r->head);
}

static int op_modify_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_modify_qp_req);
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);
	const struct urd_qp_attr *at = &r->attr;
	uint32_t mask = r->attr_mask, need, opt, next;

	if (!qp)
		return -EINVAL;
	next = (mask & IBV_QP_STATE) ? at->qp_state : qp->state;
	if (next > IBV_QPS_ERR)
		return -EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && at->cur_qp_state != qp->state)
		return -EINVAL;
	if (!(mask & IBV_QP_STATE)) {
		/* attribute-only change: allowed where the same-state transition is */
		if (!qp_transition(qp->type, qp->state, qp->state, &need, &opt))
			return -EINVAL;
		need &= ~(uint32_t)IBV_QP_STATE;
	} else if (!qp_transition(qp->type, qp->state, next, &need, &opt)) {
		return -EINVAL;
	}
	if ((mask & need) != need || (mask & ~(need | opt | IBV_QP_STATE)))
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && at->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && at->pkey_index != 0)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (at->path_mtu < IBV_MTU_256 || at->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && at->dest_qp_num > 0xffffff)
		return -EINVAL;
	if ((mask & IBV_QP_AV) && ((at->ah.is_global && at->ah.sgid_index != 0) ||
				   (at->ah.port_num && at->ah.port_num != 1)))
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && at->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && at->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && at->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && at->rnr_retry > 7)
		return -EINVAL;
	/* limits from private state: the header is tenant-writable */
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && at->max_rd_atomic > URD_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && at->max_dest_rd_atomic > URD_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (at->qp_access_flags & ~(uint32_t)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;

#define TAKE(bit, field) do { if (mask & (bit)) qp->attr.field = at->field; } while (0)
	TAKE(IBV_QP_PKEY_INDEX, pkey_index);
	TAKE(IBV_QP_PORT, port_num);
	TAKE(IBV_QP_QKEY, qkey);
	TAKE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	TAKE(IBV_QP_PATH_MTU, path_mtu);
	TAKE(IBV_QP_DEST_QPN, dest_qp_num);
	TAKE(IBV_QP_RQ_PSN, rq_psn);
	TAKE(IBV_QP_SQ_PSN, sq_psn);
	TAKE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	TAKE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	TAKE(IBV_QP_TIMEOUT, timeout);
	TAKE(IBV_QP_RETRY_CNT, retry_cnt);
	TAKE(IBV_QP_RNR_RETRY, rnr_retry);
	TAKE(IBV_QP_PATH_MIG_STATE, path_mig_state);
	TAKE(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
	TAKE(IBV_QP_AV, ah);
#undef TAKE
	if (!(mask & IBV_QP_STATE))
		return 0;
	if (next == IBV_QPS_RESET) {
		engine_forget(qp);
		ring_reset(&qp->sq);
		ring_reset(&qp->rq);
		qp->wait = QP_WAIT_NONE;
	}
	qp->state = next;
	qp->attr.qp_state = next;
	if (next == IBV_QPS_ERR)
		qp_to_error(qp, false);
	else if (next == IBV_QPS_RTS || next == IBV_QPS_RTR)
		engine_activate(qp);    /* WQEs posted before the transition may be waiting */
	return 0;
}

static int op_query_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	REQ(urd_handle_req);
	RESP(urd_query_qp_resp);
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);

	if (!qp)
		return -EINVAL;
	o->attr = qp->attr;
	o->attr.qp_state = qp->state;
	o->attr.cur_qp_state = qp->state;
	o->attr.cap = qp->cap;
	o->qp_type = qp->type;
	o->sq_sig_all = qp->sq_sig_all;
	o->srq = qp->srq ? qp->srq->obj.handle : 0;
	return 0;
}

static void qp_free(struct vr_qp *qp)
{
	struct urd_vrnic *vr = qp->vr;

	engine_forget(qp);
	qpn_unlink(vr->d, qp);
	vr->qp_slots[qp->db_index] = NULL;
	ring_free(vr, &qp->sq);
	ring_free(vr, &qp->rq);
	qp->pd->obj.refs--;
	qp->scq->obj.refs--;
	qp->rcq->obj.refs--;
	if (qp->srq)
		qp->srq->obj.refs--;
	vr->nqp--;
	handle_free(&qp->obj);
	free(qp);
}

static int op_destroy_qp(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	REQ(urd_handle_req);
	struct vr_qp *qp = obj_get(a->ctx, r->handle, OBJ_QP);

	if (!qp)
		return -EINVAL;
	qp_free(qp);
	return 0;
}

void qp_to_error(struct vr_qp *qp, bool async)
{
	bool was = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	engine_unwait(qp);
	if (async && !was)
		ctx_post_async(qp->obj.ctx, IBV_EVENT_QP_FATAL, URD_OBJ_QP, qp->obj.handle);
	engine_activate(qp);            /* the engine flushes what is posted */
}

/* ----------------------------------------------------------- contexts */

static int op_open_ctx(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	RESP(urd_open_ctx_resp);
	struct urd_vrnic *vr = a->vr;
	struct vr_ctx *ctx;

	if (vr->deleting)
		return -ENODEV;
	if (!vr->ctx[a->slot] && vr->nctx >= vr->lim.max_ctx)
		return -EDQUOT;         /* contexts quota */
	if (vr->ctx[a->slot]) {
		/* Anyone who can write the region can write any slot's mailbox:
		 * a live context is never replaced.  A library whose slot still
		 * holds its dead predecessor's context (the liveness check runs
		 * every 100 ms) lets go of the slot and tries again (lib/device.c). */
		if (!ctrl_occupant_dead(vr, a->slot))
			return -EBUSY;
		ctx_destroy(vr->ctx[a->slot]);
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->vr = vr;
	ctx->slot = a->slot;
	ctx->id = ++vr->d->next_ctx_id;
	ctx->shm = (struct urd_slot_hdr *)(vr->map + urd_slot_off(a->slot));
	/* the async ring restarts where the tenant's consumer is */
	ctx->async_prod = urd_load_acquire(&ctx->shm->async_cons);
	urd_store_release(&ctx->shm->async_prod, ctx->async_prod);
	vr->ctx[a->slot] = ctx;
	__atomic_fetch_or(&vr->ctx_mask, 1ull << a->slot, __ATOMIC_RELEASE);
	vr->nctx++;
	o->ctx_id = ctx->id;
	log_debug("vrnic %s: context %u opened in slot %u", vr->name, ctx->id, a->slot);
	return 0;
}

/* Release everything the context owned.  Peers connected to its RC QPs go to
 * the error state: their next work would otherwise wait for a dead peer. */
void ctx_destroy(struct vr_ctx *ctx)
{
	struct urd_vrnic *vr = ctx->vr;
	struct urd_daemon *d = vr->d;

	for (uint32_t pass = OBJ_QP; pass >= OBJ_PD; pass--) {
		for (uint32_t i = 1; i < ctx->nhandles; i++) {
			struct vr_obj *o = ctx->handles[i];

			if (!o || o->type != pass)
				continue;
			switch (o->type) {
			case OBJ_QP: {
				struct vr_qp *qp = (struct vr_qp *)o;

				if (qp->type == IBV_QPT_RC) {
					struct vr_qp *peer = qpn_lookup(d, qp->attr.dest_qp_num);

					/* only a peer of the same tenant: a QP elsewhere that
					 * names this QPN is no peer (and must not hear of it) */
					if (peer && peer->obj.ctx != ctx && peer->type == IBV_QPT_RC &&
					    !strcmp(peer->vr->tenant, vr->tenant) &&
					    peer->attr.dest_qp_num == qp->qpn &&
					    (peer->state == IBV_QPS_RTR || peer->state == IBV_QPS_RTS ||
					     peer->state == IBV_QPS_SQD))
						qp_to_error(peer, true);
				}
				qp_free(qp);
				break;
			}
			case OBJ_SRQ: srq_free((struct vr_srq *)o); break;
			case OBJ_CQ:  cq_free((struct vr_cq *)o); break;
			case OBJ_MR:  mr_free((struct vr_mr *)o, reap_later(vr)); break;
			case OBJ_PD:  pd_free((struct vr_pd *)o); break;
			default: break;
			}
		}
	}
	for (struct vr_mem *m = vr->mems, *next; m; m = next) {
		next = m->next;
		if (m->ctx == ctx) {
			m->ctx = NULL;
			m->freed_by_tenant = true;
			if (m->refs)
				continue;
			/* the control thread gives them back in batches
			 * (mem_reap); no thread, or a vRNIC going away: now */
			mem_unlink(vr, m);
			m->next = vr->reap;
			vr->reap = m;
		}
	}
	if (!reap_later(vr))
		while (mems_reap(vr, REAP_BATCH))
			;
	__atomic_store_n(&vr->last_seq[ctx->slot], ctx->last_req_seq, __ATOMIC_RELAXED);
	vr->ctx[ctx->slot] = NULL;
	__atomic_fetch_and(&vr->ctx_mask, ~(1ull << ctx->slot), __ATOMIC_RELEASE);
	vr->nctx--;
	free(ctx->handles);
	free(ctx->gens);
	free(ctx->backlog);
	free(ctx);
}

static int op_close_ctx(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	ctx_destroy(a->ctx);
	a->ctx = NULL;
	return 0;
}

/* ------------------------------------------------------------ dispatch */

typedef int (*handler_fn)(struct handler_args *, const void *, uint32_t, void *, uint32_t *);

static const struct {
	handler_fn fn;
	uint32_t min_len;
	bool needs_ctx;
} handlers[URD_OP_MAX] = {
	[URD_OP_OPEN_CTX]    = { op_open_ctx,    sizeof(struct urd_open_ctx_req),    false },
	[URD_OP_CLOSE_CTX]   = { op_close_ctx,   sizeof(struct urd_msg_hdr),         true },
	[URD_OP_ALLOC_PD]    = { op_alloc_pd,    sizeof(struct urd_msg_hdr),         true },
	[URD_OP_DEALLOC_PD]  = { op_dealloc_pd,  sizeof(struct urd_handle_req),      true },
	[URD_OP_MEM_ALLOC]   = { op_mem_alloc,   sizeof(struct urd_mem_req),         true },
	[URD_OP_MEM_FREE]    = { op_mem_free,    sizeof(struct urd_mem_req),         true },
	[URD_OP_REG_MR]      = { op_reg_mr,      sizeof(struct urd_reg_mr_req),      true },
	[URD_OP_DEREG_MR]    = { op_dereg_mr,    sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_CQ]   = { op_create_cq,   sizeof(struct urd_create_cq_req),   true },
	[URD_OP_DESTROY_CQ]  = { op_destroy_cq,  sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_SRQ]  = { op_create_srq,  sizeof(struct urd_create_srq_req),  true },
	[URD_OP_MODIFY_SRQ]  = { op_modify_srq,  sizeof(struct urd_modify_srq_req),  true },
	[URD_OP_QUERY_SRQ]   = { op_query_srq,   sizeof(struct urd_handle_req),      true },
	[URD_OP_DESTROY_SRQ] = { op_destroy_srq, sizeof(struct urd_handle_req),      true },
	[URD_OP_CREATE_QP]   = { op_create_qp,   sizeof(struct urd_create_qp_req),   true },
	[URD_OP_MODIFY_QP]   = { op_modify_qp,   sizeof(struct urd_modify_qp_req),   true },
	[URD_OP_QUERY_QP]    = { op_query_qp,    sizeof(struct urd_handle_req),      true },
	[URD_OP_DESTROY_QP]  = { op_destroy_qp,  sizeof(struct urd_handle_req),      true },
};

int ctrl_dispatch(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		  void *resp, uint32_t *resp_len)
{
	return ctrl_dispatch_prep(vr, slot, req, req_len, resp, resp_len, NULL);
}

int ctrl_dispatch_prep(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t req_len,
		       void *resp, uint32_t *resp_len, struct vr_mr_prep *prep)
{
	const struct urd_msg_hdr *h = req;
	struct handler_args a = { vr, vr->ctx[slot], slot, prep };
	*resp_len = sizeof(struct urd_msg_hdr);
	if (req_len < sizeof(*h) || req_len > URD_MSG_MAX)
		return -EINVAL;
	if (h->version != URD_ABI_VERSION)
		return -EPROTO;
	if (h->op >= URD_OP_FWD_FIRST && h->op <= URD_OP_FWD_LAST) {
		if (!a.ctx)
			return -EBADF;
		return fwd_dispatch(vr, a.ctx, req, req_len, resp, resp_len);
	}
	if (h->op >= URD_OP_MAX || !handlers[h->op].fn)
		return -EOPNOTSUPP;
	if (req_len < handlers[h->op].min_len)
		return -EINVAL;
	if (handlers[h->op].needs_ctx && !a.ctx)
		return -EBADF;
	return handlers[h->op].fn(&a, req, req_len, resp, resp_len);
}

/* Undo a request whose answer nobody waits for any more, with the same
 * checks as the destroy verb (an object something else uses stays). */
void ctrl_undo(struct urd_vrnic *vr, uint32_t slot, uint16_t op, const void *resp)
{
	static const uint16_t destroy[URD_OP_MAX] = {
		[URD_OP_ALLOC_PD] = URD_OP_DEALLOC_PD, [URD_OP_REG_MR] = URD_OP_DEREG_MR,
		[URD_OP_CREATE_CQ] = URD_OP_DESTROY_CQ, [URD_OP_CREATE_SRQ] = URD_OP_DESTROY_SRQ,
		[URD_OP_CREATE_QP] = URD_OP_DESTROY_QP,
	};
	struct handler_args a = { vr, vr->ctx[slot], slot, NULL };
	uint32_t rl = 0;
	uint8_t dummy[sizeof(struct urd_msg_hdr)];

	if (!a.ctx || op >= URD_OP_MAX)
		return;
	if (op == URD_OP_OPEN_CTX) {
		ctx_destroy(a.ctx);
	} else if (op == URD_OP_MEM_ALLOC) {
		const struct urd_mem_resp *m = resp;
		struct urd_mem_req q = { .off = m->off, .len = m->len };

		op_mem_free(&a, &q, sizeof(q), dummy, &rl);
	} else if (destroy[op]) {
		/* every creating op answers a handle first (urd_handle_resp layout) */
		struct urd_handle_req q = { .handle = ((const struct urd_handle_resp *)resp)->handle };

		handlers[destroy[op]].fn(&a, &q, sizeof(q), dummy, &rl);
	}
}

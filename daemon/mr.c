/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Memory: allocations in the vRNIC's memory window (MEM_ALLOC/MEM_FREE) and
 * memory regions over them or over a VM's guest RAM (REG_MR/DEREG_MR). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "log.h"
#include "unirdma/barrier.h"
#include "verbs.h"

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
bool mem_reap_later(const struct urd_vrnic *vr)
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
	if (!mem_reap_later(vr)) {
		mem_unlink_free(vr, m);
		return;
	}
	mem_unlink(vr, m);      /* its punch joins the next batch */
	m->next = vr->reap;
	vr->reap = m;
}

int op_mem_alloc(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_mem_req *r = req;
	struct urd_mem_resp *o = resp;
	*resp_len = sizeof(*o);
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

int op_mem_free(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_mem_req *r = req;

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

int op_reg_mr(struct handler_args *a, const void *req, uint32_t len, void *resp, uint32_t *resp_len)
{
	const struct urd_reg_mr_req *r = req;
	struct urd_reg_mr_resp *o = resp;
	*resp_len = sizeof(*o);
	struct urd_vrnic *vr = a->vr;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_mr_prep local = { 0 }, *p = a->prep ? a->prep : &local;
	struct vr_mr *mr;
	uint64_t meta;
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
	mr->lkey = mr_key_new(vr);
	mr->rkey = mr_key_new(vr);
	mr_keys_link(vr, mr);
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
void mr_free(struct vr_mr *mr, bool defer)
{
	struct urd_vrnic *vr = mr->obj.ctx->vr;

	mr_keys_unlink(vr, mr);
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

/* As rxe_rereg_user_mr and the kernel's checks before it: PD and access
 * change in place under the big lock (the engine checks both on every key
 * lookup, so the next packet sees them); the keys stay. */
int op_rereg_mr(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_rereg_mr_req *r = req;
	struct urd_reg_mr_resp *o = resp;
	struct vr_mr *mr = obj_get(a->ctx, r->handle, OBJ_MR);
	const uint32_t known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			       IBV_REREG_MR_CHANGE_ACCESS;
	const uint32_t writes = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct vr_pd *pd = NULL;

	*resp_len = sizeof(*o);
	if (!mr || !r->flags || (r->flags & ~known))
		return -EINVAL;
	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		return -EOPNOTSUPP;     /* rxe: RXE_MR_REREG_SUPPORTED is PD | ACCESS */
	if (r->flags & IBV_REREG_MR_CHANGE_PD) {
		pd = obj_get(a->ctx, r->pd, OBJ_PD);
		if (!pd)
			return -EINVAL;
		if (mr->nmw && pd != mr->pd)
			return -EBUSY;  /* its windows are in the old PD */
	}
	if (r->flags & IBV_REREG_MR_CHANGE_ACCESS) {
		if (r->access & ~(uint32_t)URD_ACCESS_ALL)
			return -EINVAL;
		if ((r->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(r->access & IBV_ACCESS_LOCAL_WRITE))
			return -EINVAL;
		/* a VM MR registered read-only may alias guest frames (see
		 * above): it does not become writable */
		if (a->vr->vm && !(mr->access & writes) && (r->access & writes))
			return -EACCES;
		mr->access = r->access;
	}
	if (pd) {
		mr->pd->obj.refs--;
		mr->pd = pd;
		pd->obj.refs++;
	}
	o->handle = mr->obj.handle;
	o->lkey = mr->lkey;
	o->rkey = mr->rkey;
	return 0;
}

int op_dereg_mr(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_mr *mr = obj_get(a->ctx, r->handle, OBJ_MR);

	if (!mr)
		return -EINVAL;
	if (mr->nmw)
		return -EINVAL;         /* windows are bound to it: rxe_dereg_mr's errno */
	mr_free(mr, false);
	return 0;
}

/* ---- memory windows (the binding itself is the engine's: engine/mw.c) ---- */

int op_alloc_mw(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	const struct urd_alloc_mw_req *r = req;
	struct urd_handle_resp *o = resp;
	struct vr_pd *pd = obj_get(a->ctx, r->pd, OBJ_PD);
	struct vr_mw *mw;
	uint32_t key;
	int ret;

	*resp_len = sizeof(*o);
	if (!pd || (r->type != IBV_MW_TYPE_1 && r->type != IBV_MW_TYPE_2))
		return -EINVAL;
	key = mw_key_new(a->vr);
	if (!key)
		return -ENOMEM;         /* URD_MAX_MW windows */
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	ret = handle_new(a->ctx, &mw->obj, OBJ_MW);
	if (ret) {
		free(mw);
		return ret;
	}
	mw->pd = pd;
	mw->type = r->type;
	mw->rkey = key;
	pd->obj.refs++;
	mw_link(a->vr, mw);
	o->handle = mw->obj.handle;
	o->reserved = mw->rkey;
	return 0;
}

void mw_free(struct vr_mw *mw)
{
	struct urd_vrnic *vr = mw->obj.ctx->vr;

	mw_unbind(mw);
	mw_unlink(vr, mw);
	mw->pd->obj.refs--;
	handle_free(&mw->obj);
	free(mw);
}

int op_dealloc_mw(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED,
		  uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_mw *mw = obj_get(a->ctx, r->handle, OBJ_MW);

	if (!mw)
		return -EINVAL;
	mw_free(mw);
	return 0;
}

/* The context is going away: its allocations in the memory window become
 * the vRNIC's to give back, now or in batches (mem_reap), once no MR uses
 * them. */
void mem_ctx_release(struct urd_vrnic *vr, struct vr_ctx *ctx)
{
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
	if (!mem_reap_later(vr))
		while (mems_reap(vr, REAP_BATCH))
			;
}

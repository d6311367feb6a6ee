/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fuzz harness's oracle: the daemon's private model is consistent with
 * itself (see harness.h).  Built without coverage instrumentation: these
 * scans of whole tables would slow every input down and their comparisons
 * would only distract libFuzzer. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "harness.h"

/* A small pointer set (open addressing) for membership checks. */
struct pset {
	const void **v;
	size_t n;
};

static void pset_init(struct pset *s, size_t count)
{
	s->n = 64;
	while (s->n < count * 2)
		s->n <<= 1;
	s->v = calloc(s->n, sizeof(*s->v));
	if (!s->v)
		abort();
}

static size_t pset_slot(const struct pset *s, const void *p)
{
	size_t h = ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull;

	for (h &= s->n - 1; s->v[h] && s->v[h] != p; h = (h + 1) & (s->n - 1))
		;
	return h;
}

static void pset_add(struct pset *s, const void *p)
{
	s->v[pset_slot(s, p)] = p;
}

static bool pset_has(const struct pset *s, const void *p)
{
	return s->v[pset_slot(s, p)] == p;
}

static void check_alloc(const char *what, const struct urd_alloc *a)
{
	uint64_t free_bytes = 0, end = a->base, nfree = 0;

	if (a->used > a->size)
		fz_fail("%s: used %llu > size %llu", what, (unsigned long long)a->used,
			(unsigned long long)a->size);
	for (const struct urd_extent *e = alloc_first_free(a); e; e = alloc_next_free(e)) {
		if (!e->len || e->off < end || e->off + e->len > a->base + a->size ||
		    e->off + e->len < e->off)
			fz_fail("%s: bad free extent [%#llx, +%#llx)", what, (unsigned long long)e->off,
				(unsigned long long)e->len);
		if (e != alloc_first_free(a) && e->off == end)
			fz_fail("%s: adjacent free extents at %#llx not merged", what,
				(unsigned long long)e->off);
		end = e->off + e->len;
		free_bytes += e->len;
		nfree++;
	}
	if (nfree != a->nfree)
		fz_fail("%s: %llu free extents, the allocator counts %llu", what,
			(unsigned long long)nfree, (unsigned long long)a->nfree);
	if (free_bytes + a->used != a->size)
		fz_fail("%s: free %llu + used %llu != size %llu", what, (unsigned long long)free_bytes,
			(unsigned long long)a->used, (unsigned long long)a->size);
}

static uint64_t check_ring(const struct urd_vrnic *vr, const struct vr_ring *r, const char *what)
{
	if (!r->bytes)
		return 0;
	if (r->off < URD_ARENA_OFF || r->off + r->bytes > URD_REGION_CTRL_SIZE || r->off % URD_PAGE_SIZE ||
	    r->q.hdr != (struct urd_ring_hdr *)(vr->map + r->off) || r->q.slots != vr->map + r->off + URD_RING_HDR_SIZE ||
	    !r->q.n || (r->q.n & (r->q.n - 1)) || r->q.shift > 20 ||
	    URD_RING_HDR_SIZE + ((uint64_t)r->q.n << r->q.shift) > r->bytes)
		fz_fail("vrnic %s: bad %s ring (off %#llx bytes %#llx n %u shift %u)", vr->name, what,
			(unsigned long long)r->off, (unsigned long long)r->bytes, r->q.n, r->q.shift);
	return r->bytes;
}

static bool obj_live(const struct vr_ctx *ctx, const struct vr_obj *o, enum urd_obj_type type)
{
	uint32_t idx;

	if (!o)
		return false;
	idx = o->handle & 0xffff;
	return o->type == type && o->ctx == ctx && idx && idx < ctx->nhandles && ctx->handles[idx] == o;
}

static void check_vrnic(struct urd_vrnic *vr, struct pset *live_qps, uint32_t *nqp_total, bool tables)
{
	uint32_t n[OBJ_MW + 1] = { 0 }, nctx = 0, nslots = 0, nkeys;
	uint64_t arena = 0, mem_bytes = 0, seg_refs = 0, mem_refs = 0;
	size_t nmems = 0;
	struct pset mems;

	for (struct vr_mem *m = vr->mems; m; m = m->next)
		nmems++;
	pset_init(&mems, nmems);
	for (struct vr_mem *m = vr->mems; m; m = m->next) {
		if (!m->len || m->len % URD_PAGE_SIZE || m->off % URD_PAGE_SIZE ||
		    m->off + m->len > vr->memwin.size || m->refs < 0)
			fz_fail("vrnic %s: bad memory allocation [%#llx, +%#llx) refs %d", vr->name,
				(unsigned long long)m->off, (unsigned long long)m->len, m->refs);
		if (m->freed_by_tenant ? (m->ctx || !m->refs) :
		    (!m->ctx || m->ctx->vr != vr || vr->ctx[m->ctx->slot] != m->ctx))
			fz_fail("vrnic %s: allocation [%#llx, +%#llx) has a dead owner or should be gone "
				"(freed %d, refs %d)", vr->name, (unsigned long long)m->off,
				(unsigned long long)m->len, m->freed_by_tenant, m->refs);
		mem_bytes += m->len;
		mem_refs += (uint64_t)m->refs;
		pset_add(&mems, m);
	}

	for (uint32_t s = 0; s < URD_MAX_CTX; s++) {
		struct vr_ctx *ctx = vr->ctx[s];
		int *refs, *mwrefs;

		if (!ctx)
			continue;
		nctx++;
		if (ctx->vr != vr || ctx->slot != s || ctx->nhandles > URD_MAX_HANDLES)
			fz_fail("vrnic %s: context in slot %u is inconsistent", vr->name, s);
		refs = calloc(ctx->nhandles ? ctx->nhandles : 1, sizeof(*refs));
		mwrefs = calloc(ctx->nhandles ? ctx->nhandles : 1, sizeof(*mwrefs));
		if (!refs || !mwrefs)
			abort();
		/* pass 1: the objects themselves, and the references they hold */
		for (uint32_t i = 1; i < ctx->nhandles; i++) {
			struct vr_obj *o = ctx->handles[i];

			if (!o)
				continue;
			if ((o->handle & 0xffff) != i || (o->handle >> 16) != ctx->gens[i] || !ctx->gens[i] ||
			    o->ctx != ctx || o->type < OBJ_PD || o->type > OBJ_MW || o->refs < 0)
				fz_fail("vrnic %s slot %u: handle %u is inconsistent (handle %#x type %d refs %d)",
					vr->name, s, i, o->handle, o->type, o->refs);
			n[o->type]++;
			switch (o->type) {
			case OBJ_MR: {
				struct vr_mr *mr = (struct vr_mr *)o;
				uint64_t total = 0;

				if (!obj_live(ctx, &mr->pd->obj, OBJ_PD))
					fz_fail("MR %#x: its PD is not live", o->handle);
				refs[mr->pd->obj.handle & 0xffff]++;
				if (mr_by_lkey(vr, mr->lkey) != mr || mr_by_rkey(vr, mr->rkey) != mr)
					fz_fail("MR %#x: not found by its keys", o->handle);
				if (!mr->nsegs || !mr->length || mr->iova + mr->length < mr->iova)
					fz_fail("MR %#x: empty or wrapping", o->handle);
				for (uint32_t k = 0; k < mr->nsegs; k++) {
					const struct vr_mr_piece *p = &mr->segs[k];
					const struct vr_mem *m = p->mem;
					const uint8_t *lo;

					if (!m) {
						/* not window memory (a VM's guest RAM): never
						 * anything of the region's mapping */
						if (!p->len || !p->ptr || p->mr_off != total ||
						    (p->ptr + p->len > vr->map && p->ptr < vr->map + vr->map_size))
							fz_fail("MR %#x segment %u: no allocation, bad address",
								o->handle, k);
						total += p->len;
						continue;
					}
					if (!pset_has(&mems, m))
						fz_fail("MR %#x segment %u: its allocation is gone", o->handle, k);
					lo = vr->map + URD_REGION_CTRL_SIZE + m->off;
					if (p->mr_off != total || !p->len || p->ptr < lo ||
					    p->ptr + p->len > lo + m->len)
						fz_fail("MR %#x segment %u outside its allocation", o->handle, k);
					total += p->len;
					seg_refs++;
				}
				if (total != mr->length)
					fz_fail("MR %#x: segments cover %llu bytes of %llu", o->handle,
						(unsigned long long)total, (unsigned long long)mr->length);
				break;
			}
			case OBJ_CQ:
				arena += check_ring(vr, &((struct vr_cq *)o)->ring, "CQ");
				break;
			case OBJ_MW: {
				struct vr_mw *mw = (struct vr_mw *)o;

				if (!obj_live(ctx, &mw->pd->obj, OBJ_PD))
					fz_fail("MW %#x: its PD is not live", o->handle);
				refs[mw->pd->obj.handle & 0xffff]++;
				if (!(mw->rkey & URD_MW_KEY_BIT) || mw_by_rkey(vr, mw->rkey) != mw)
					fz_fail("MW %#x: not found by its R_Key %#x", o->handle, mw->rkey);
				if (mw->type != IBV_MW_TYPE_1 && mw->type != IBV_MW_TYPE_2)
					fz_fail("MW %#x: type %u", o->handle, mw->type);
				if (mw->mr) {
					if (!obj_live(ctx, &mw->mr->obj, OBJ_MR) || mw->mr->pd != mw->pd)
						fz_fail("MW %#x: bound to an MR that is not live or in another PD",
							o->handle);
					if (!mw->length || mw->addr < mw->mr->iova ||
					    mw->addr - mw->mr->iova + mw->length > mw->mr->length)
						fz_fail("MW %#x: binding outside its MR", o->handle);
					mwrefs[mw->mr->obj.handle & 0xffff]++;
				} else if (mw->length || mw->access) {
					fz_fail("MW %#x: bound without an MR", o->handle);
				}
				if (mw->type == IBV_MW_TYPE_2 ? ((mw->mr != NULL) != (mw->qp != NULL)) : mw->qp != NULL)
					fz_fail("MW %#x: type %u, MR %p, QP %p", o->handle, mw->type, (void *)mw->mr,
						(void *)mw->qp);
				if (mw->qp && (!obj_live(ctx, &mw->qp->obj, OBJ_QP) || mw->qp->pd != mw->pd))
					fz_fail("MW %#x: bound to a QP that is not live or in another PD", o->handle);
				break;
			}
			case OBJ_SRQ: {
				struct vr_srq *srq = (struct vr_srq *)o;

				if (!obj_live(ctx, &srq->pd->obj, OBJ_PD))
					fz_fail("SRQ %#x: its PD is not live", o->handle);
				refs[srq->pd->obj.handle & 0xffff]++;
				if (!srq->ring.bytes)
					fz_fail("SRQ %#x: no ring", o->handle);
				arena += check_ring(vr, &srq->ring, "SRQ");
				break;
			}
			case OBJ_QP: {
				struct vr_qp *qp = (struct vr_qp *)o;

				if (!obj_live(ctx, &qp->pd->obj, OBJ_PD) || !obj_live(ctx, &qp->scq->obj, OBJ_CQ) ||
				    !obj_live(ctx, &qp->rcq->obj, OBJ_CQ) ||
				    (qp->srq && !obj_live(ctx, &qp->srq->obj, OBJ_SRQ)))
					fz_fail("QP %#x: refers to an object that is not live", o->handle);
				refs[qp->pd->obj.handle & 0xffff]++;
				refs[qp->scq->obj.handle & 0xffff]++;
				refs[qp->rcq->obj.handle & 0xffff]++;
				if (qp->srq)
					refs[qp->srq->obj.handle & 0xffff]++;
				if (qp->vr != vr || qpn_lookup(vr->d, qp->qpn) != qp ||
				    qp->db_index >= URD_MAX_QP_SLOTS || vr->qp_slots[qp->db_index] != qp)
					fz_fail("QP %#x (qpn %#x): not found by its QPN or doorbell", o->handle, qp->qpn);
				if (qp->state > IBV_QPS_ERR || (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC && qp->type != IBV_QPT_UD))
					fz_fail("QP %#x: state %u type %u", o->handle, qp->state, qp->type);
				if (!qp->sq.bytes || (!qp->srq && !qp->rq.bytes) || (qp->srq && qp->rq.bytes))
					fz_fail("QP %#x: rings do not match its SRQ use", o->handle);
				arena += check_ring(vr, &qp->sq, "SQ");
				arena += check_ring(vr, &qp->rq, "RQ");
				if (qp->eng.wait != QP_WAIT_NONE && qp->eng.wait != QP_WAIT_RNR && qp->eng.wait != QP_WAIT_RETRY)
					fz_fail("QP %#x: wait %d", o->handle, qp->eng.wait);
				pset_add(live_qps, qp);
				break;
			}
			default:
				break;
			}
		}
		/* pass 2: every object's reference count is what pass 1 found */
		for (uint32_t i = 1; i < ctx->nhandles; i++) {
			struct vr_obj *o = ctx->handles[i];

			if (o && o->refs != refs[i])
				fz_fail("vrnic %s slot %u: object %#x (type %d) has refs %d, %d objects refer to it",
					vr->name, s, o->handle, o->type, o->refs, refs[i]);
			if (o && o->type == OBJ_MR && ((struct vr_mr *)o)->nmw != (uint32_t)mwrefs[i])
				fz_fail("MR %#x: nmw %u, %d windows are bound to it", o->handle,
					((struct vr_mr *)o)->nmw, mwrefs[i]);
		}
		free(refs);
		free(mwrefs);
	}
	if (tables) {   /* whole-table scans: at the end of an input only */
		for (uint32_t i = 0; i < URD_MAX_QP_SLOTS; i++)
			nslots += vr->qp_slots[i] != NULL;
		nkeys = 0;
		for (uint32_t b = 0; b < URD_KEY_BUCKETS; b++)
			for (struct vr_mr *m = vr->lkeys[b]; m; m = m->lkey_next)
				nkeys++;
		if (nkeys != vr->nmr)
			fz_fail("vrnic %s: %u lkeys for %u MRs", vr->name, nkeys, vr->nmr);
		nkeys = 0;
		for (uint32_t b = 0; b < URD_KEY_BUCKETS; b++)
			for (struct vr_mr *m = vr->rkeys[b]; m; m = m->rkey_next)
				nkeys++;
		if (nkeys != vr->nmr)
			fz_fail("vrnic %s: %u rkeys for %u MRs", vr->name, nkeys, vr->nmr);
		nkeys = 0;
		for (uint32_t b = 0; b < URD_KEY_BUCKETS; b++)
			for (struct vr_mw *w = vr->mws[b]; w; w = w->next)
				nkeys++;
		if (nkeys != vr->nmw || n[OBJ_MW] != vr->nmw)
			fz_fail("vrnic %s: %u windows hashed, %u counted, %u live", vr->name, nkeys, vr->nmw,
				n[OBJ_MW]);
	} else {
		nslots = n[OBJ_QP];
	}
	if (nctx != vr->nctx || n[OBJ_PD] != vr->npd || n[OBJ_MR] != vr->nmr || n[OBJ_CQ] != vr->ncq ||
	    n[OBJ_QP] != vr->nqp || n[OBJ_SRQ] != vr->nsrq || nslots != vr->nqp)
		fz_fail("vrnic %s: counters ctx %u pd %u mr %u cq %u qp %u srq %u, found ctx %u pd %u mr %u "
			"cq %u qp %u (doorbell slots %u) srq %u", vr->name, vr->nctx, vr->npd, vr->nmr, vr->ncq,
			vr->nqp, vr->nsrq, nctx, n[OBJ_PD], n[OBJ_MR], n[OBJ_CQ], n[OBJ_QP], nslots, n[OBJ_SRQ]);
	if (seg_refs != mem_refs)
		fz_fail("vrnic %s: MR segments hold %llu references, allocations count %llu", vr->name,
			(unsigned long long)seg_refs, (unsigned long long)mem_refs);
	check_alloc("arena", &vr->arena);
	check_alloc("memory window", &vr->memwin);
	if (arena != vr->arena.used)
		fz_fail("vrnic %s: rings use %llu arena bytes, the allocator says %llu", vr->name,
			(unsigned long long)arena, (unsigned long long)vr->arena.used);
	if (mem_bytes != vr->memwin.used)
		fz_fail("vrnic %s: allocations hold %llu bytes, the allocator says %llu", vr->name,
			(unsigned long long)mem_bytes, (unsigned long long)vr->memwin.used);
	*nqp_total += vr->nqp;
	free(mems.v);
}

static void check(bool tables)
{
	struct urd_daemon *d = urd_d;
	struct pset live;
	uint32_t nqp = 0, hashed = 0, nlist = 0, nactive = 0;
	struct vr_qp *last = NULL;

	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			nqp += d->vrnics[i]->nqp;
	pset_init(&live, nqp);
	nqp = 0;
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			check_vrnic(d->vrnics[i], &live, &nqp, tables);
	if (tables) {
		for (uint32_t b = 0; b < URD_QPN_BUCKETS; b++)
			for (struct vr_qp *q = d->qpn_hash[b]; q; q = q->qpn_next) {
				if (!pset_has(&live, q) || q->qpn % URD_QPN_BUCKETS != b)
					fz_fail("QPN hash: entry %#x is not a live QP", q->qpn);
				hashed++;
			}
		if (hashed != nqp)
			fz_fail("QPN hash holds %u QPs, the vRNICs %u", hashed, nqp);
	}
	for (int v = 0; v < URD_MAX_VRNICS; v++) {
		struct urd_vrnic *vr = d->vrnics[v];
		uint32_t nvr = 0;

		if (!vr)
			continue;
		last = NULL;
		for (struct vr_qp *q = vr->eng.active_head; q; q = q->eng.active_next) {
			if (!pset_has(&live, q) || !q->eng.active || q->vr != vr || ++nlist > nqp)
				fz_fail("engine work list: a dead, inactive, foreign or repeated QP");
			last = q;
			nvr++;
		}
		if (last != vr->eng.active_tail)
			fz_fail("engine work list: tail is not the last entry");
		if (nvr != vr->eng.nactive)
			fz_fail("engine work list of %s: %u QPs, nactive %u", vr->name, nvr, vr->eng.nactive);
	}
	if (nlist != d->eng.nactive)
		fz_fail("engine: %u QPs on the work lists, nactive %u", nlist, d->eng.nactive);
	for (size_t i = 0; i < live.n; i++)
		if (live.v[i] && ((const struct vr_qp *)live.v[i])->eng.active)
			nactive++;
	if (nactive != nlist)
		fz_fail("engine: %u QPs marked active, %u on the list", nactive, nlist);
	nlist = 0;
	for (struct vr_qp *q = d->eng.wait_head; q; q = q->eng.wait_next)
		if (!pset_has(&live, q) || q->eng.wait == QP_WAIT_NONE || ++nlist > nqp)
			fz_fail("engine timer list: a dead, repeated or not waiting QP");
	/* multicast attachments: live UD QPs, multicast GIDs, as counted */
	{
		uint64_t natt = 0, nqpatt = 0, nvratt = 0;

		for (uint32_t b = 0; b < URD_MCAST_BUCKETS; b++)
			for (struct vr_mcast *m = d->mcast[b]; m; m = m->next) {
				if (!pset_has(&live, m->qp) || m->qp->type != IBV_QPT_UD || !urd_gid_is_mcast(m->gid))
					fz_fail("multicast: an attachment of a dead or non-UD QP, or no multicast GID");
				natt++;
			}
		for (size_t i = 0; i < live.n; i++)
			if (live.v[i])
				nqpatt += ((const struct vr_qp *)live.v[i])->nmcast;
		for (int v = 0; v < URD_MAX_VRNICS; v++)
			if (d->vrnics[v])
				nvratt += d->vrnics[v]->nmcast;
		if (natt != nqpatt || natt != nvratt)
			fz_fail("multicast: %llu attachments, QPs count %llu, vRNICs %llu", (unsigned long long)natt,
				(unsigned long long)nqpatt, (unsigned long long)nvratt);
	}
	/* CM agents: live UD QPs of their vRNIC in the slot they say; every
	 * listen belongs to one, no ServiceID twice */
	for (int v = 0; v < URD_MAX_VRNICS; v++) {
		struct urd_vrnic *vr = d->vrnics[v];

		if (!vr)
			continue;
		for (uint32_t s = 0; s <= URD_CM_MAX_AGENTS; s++) {
			struct vr_qp *q = vr->cm_agent[s];

			if (q && (!s || !pset_has(&live, q) || q->vr != vr || q->type != IBV_QPT_UD || q->cm_slot != s))
				fz_fail("CM agent slot %u of %s: a dead, foreign or non-UD QP, or one in another slot", s,
					vr->name);
		}
		if (vr->ncm_listen > URD_CM_MAX_LISTEN)
			fz_fail("CM listens of %s: %u, over the limit", vr->name, vr->ncm_listen);
		for (uint32_t i = 0; i < vr->ncm_listen; i++) {
			const struct vr_cm_listen *l = &vr->cm_listen[i];

			if (!pset_has(&live, l->qp) || l->qp->vr != vr || !l->qp->cm_slot ||
			    vr->cm_agent[l->qp->cm_slot] != l->qp)
				fz_fail("CM listen on %#llx of %s: not a live agent", (unsigned long long)l->service_id,
					vr->name);
			for (uint32_t j = 0; j < i; j++)
				if (vr->cm_listen[j].service_id == l->service_id)
					fz_fail("CM listen on %#llx of %s: twice", (unsigned long long)l->service_id,
						vr->name);
		}
	}
	pthread_mutex_unlock(&d->lock);
	free(live.v);
}


/* UNIRDMA_FUZZ_NO_CHECK=1 turns the model checks off, to see what a
 * violation leads to (a sanitizer report, a hang) without them. */
static int enabled = -1;

void fz_check(void)
{
	if (enabled < 0)
		enabled = !getenv("UNIRDMA_FUZZ_NO_CHECK");
	if (enabled)
		check(false);
}

void fz_check_full(void)
{
	if (enabled < 0)
		enabled = !getenv("UNIRDMA_FUZZ_NO_CHECK");
	if (enabled)
		check(true);
}

/* The scans read region memory, which ASan does not track: no shadow
 * checks, and a word at a time. */
__attribute__((no_sanitize("address")))
size_t fz_find_not(const uint8_t *p, uint8_t v, size_t n)
{
	uint64_t w = 0x0101010101010101ull * v, x;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, p + i, 8);
		if (x != w)
			break;
	}
	for (; i < n; i++)
		if (p[i] != v)
			return i;
	return n;
}

__attribute__((no_sanitize("address")))
size_t fz_find_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t x, y;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

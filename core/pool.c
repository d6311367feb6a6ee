/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Object tables: each context's handle table, the vRNIC's MR key hash and
 * the host-wide QPN hash.  Services of the object model: the control plane
 * fills the tables, the engine looks objects up in them.  Big lock held. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "objects.h"

int handle_new(struct vr_ctx *ctx, struct vr_obj *o, enum urd_obj_type type)
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

void handle_free(struct vr_obj *o)
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
uint32_t mr_key_new(struct urd_vrnic *vr)
{
	uint32_t k;

	do {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (uint32_t)rand() ^ (uint32_t)vr->d->next_ctx_id << 16;
		k &= ~URD_MW_KEY_BIT;   /* the windows' half of the key space */
	} while (!k || mr_by_lkey(vr, k) || mr_by_rkey(vr, k));
	return k;
}

/* ---- memory windows: R_Key = URD_MW_KEY_BIT | index << 8 | key ---- */

static uint32_t mw_bucket(uint32_t rkey)
{
	return key_bucket(rkey >> 8);
}

static struct vr_mw *mw_by_index(struct urd_vrnic *vr, uint32_t rkey)
{
	for (struct vr_mw *w = vr->mws[mw_bucket(rkey)]; w; w = w->next)
		if ((w->rkey >> 8) == (rkey >> 8))
			return w;
	return NULL;
}

struct vr_mw *mw_by_rkey(struct urd_vrnic *vr, uint32_t rkey)
{
	struct vr_mw *w = mw_by_index(vr, rkey);

	return w && w->rkey == rkey ? w : NULL;
}

/* Random, like MR keys: a tenant learns nothing of other windows' keys. */
uint32_t mw_key_new(struct urd_vrnic *vr)
{
	uint32_t k;

	if (vr->nmw >= URD_MAX_MW)
		return 0;
	do {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (uint32_t)rand() ^ (uint32_t)vr->d->next_ctx_id << 16;
		k |= URD_MW_KEY_BIT;
	} while (k == UINT32_MAX || mw_by_index(vr, k));
	return k;
}

void mw_link(struct urd_vrnic *vr, struct vr_mw *mw)
{
	uint32_t b = mw_bucket(mw->rkey);

	mw->next = vr->mws[b];
	vr->mws[b] = mw;
	vr->nmw++;
}

void mw_unlink(struct urd_vrnic *vr, struct vr_mw *mw)
{
	for (struct vr_mw **pp = &vr->mws[mw_bucket(mw->rkey)]; *pp; pp = &(*pp)->next)
		if (*pp == mw) {
			*pp = mw->next;
			vr->nmw--;
			return;
		}
}

/* The window grants nothing any more: type 2 is free again, type 1 stays
 * valid with nothing behind it (rxe_do_invalidate_mw, rxe_mw_cleanup). */
void mw_unbind(struct vr_mw *mw)
{
	if (mw->mr)
		mw->mr->nmw--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->addr = mw->length = 0;
	mw->access = 0;
}

void mw_unbind_qp(struct urd_vrnic *vr, struct vr_qp *qp)
{
	if (!vr->nmw)
		return;
	for (uint32_t b = 0; b < URD_KEY_BUCKETS; b++)
		for (struct vr_mw *w = vr->mws[b]; w; w = w->next)
			if (w->qp == qp)
				mw_unbind(w);
}

struct vr_qp *qpn_lookup(struct urd_daemon *d, uint32_t qpn)
{
	for (struct vr_qp *q = d->qpn_hash[qpn % URD_QPN_BUCKETS]; q; q = q->qpn_next)
		if (q->qpn == qpn)
			return q;
	return NULL;
}

void mr_keys_link(struct urd_vrnic *vr, struct vr_mr *mr)
{
	uint32_t b = key_bucket(mr->lkey);

	mr->lkey_next = vr->lkeys[b];
	vr->lkeys[b] = mr;
	b = key_bucket(mr->rkey);
	mr->rkey_next = vr->rkeys[b];
	vr->rkeys[b] = mr;
}

void mr_keys_unlink(struct urd_vrnic *vr, struct vr_mr *mr)
{
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
}

/* QPNs are random, not sequential: a tenant must not learn from its own QPNs
 * how many QPs other tenants create.  24 bits, never 0 or 1 (QP1 is the
 * GSI) nor 0xffffff (multicast), unique host-wide (the hash); a few thousand QPs in 2^24 numbers make
 * collisions rare, and the loop ends.  In a cluster the host draws them from
 * its own range (2^16 numbers, qpn_range_set) so that a QPN names one host's
 * QP fabric-wide; a range nearly full is searched in order, and a full one
 * (65534 QPs on one host) falls back to the whole space. */
static uint32_t qpn_draw(struct urd_daemon *d)
{
	uint32_t q;

	if (d->qpn_sequential)
		q = d->next_qpn++;
	else if (getrandom(&q, sizeof(q), 0) != sizeof(q))
		q = (uint32_t)rand() ^ (d->next_qpn++ * 2654435761u);
	return q;
}

uint32_t qpn_alloc(struct urd_daemon *d)
{
	if (d->qpn_span) {
		uint32_t q = 0;

		for (int tries = 0; tries < 64; tries++) {
			q = d->qpn_base + qpn_draw(d) % d->qpn_span;
			if (q > 1 && q < URD_MCAST_QPN && !qpn_lookup(d, q))
				return q;
		}
		for (uint32_t i = 0; i < d->qpn_span; i++) {
			uint32_t c = d->qpn_base + (q - d->qpn_base + i) % d->qpn_span;

			if (c > 1 && c < URD_MCAST_QPN && !qpn_lookup(d, c))
				return c;
		}
	}
	for (;;) {
		uint32_t q = qpn_draw(d) & 0xffffff;

		if (q > 1 && q != URD_MCAST_QPN && !qpn_lookup(d, q))
			return q;
	}
}

/* QPs created before keep their numbers. */
void qpn_range_set(struct urd_daemon *d, uint32_t base, uint32_t span)
{
	if (!span || base > 0xffffff || span > 0x1000000 - base)
		base = span = 0;
	d->qpn_base = base;
	d->qpn_span = span;
}

void qpn_unlink(struct urd_daemon *d, struct vr_qp *qp)
{
	for (struct vr_qp **pp = &d->qpn_hash[qp->qpn % URD_QPN_BUCKETS]; *pp; pp = &(*pp)->qpn_next)
		if (*pp == qp) {
			*pp = qp->qpn_next;
			return;
		}
}

void qpn_link(struct urd_daemon *d, struct vr_qp *qp)
{
	qp->qpn_next = d->qpn_hash[qp->qpn % URD_QPN_BUCKETS];
	d->qpn_hash[qp->qpn % URD_QPN_BUCKETS] = qp;
}

/* ---- multicast groups ------------------------------------------------------ */

static struct vr_mcast **mcast_bucket(struct urd_daemon *d, const uint8_t gid[16])
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	return &d->mcast[h % URD_MCAST_BUCKETS];
}

struct vr_mcast *mcast_next(struct urd_daemon *d, const struct vr_mcast *m, const uint8_t gid[16])
{
	struct vr_mcast *c = m ? m->next : *mcast_bucket(d, gid);

	while (c && memcmp(c->gid, gid, 16))
		c = c->next;
	return c;
}

int mcast_attach(struct urd_daemon *d, struct vr_qp *qp, const uint8_t gid[16], bool *first)
{
	struct vr_mcast **b = mcast_bucket(d, gid), *m;
	uint32_t same_tenant = 0;

	*first = true;
	for (m = mcast_next(d, NULL, gid); m; m = mcast_next(d, m, gid)) {
		if (m->qp == qp)
			return 0;       /* already in it (rxe: 0) */
		*first = false;
		if (!strcmp(m->qp->vr->tenant, qp->vr->tenant))
			same_tenant++;
	}
	if (qp->vr->nmcast >= URD_MAX_MCAST_ATTACH || same_tenant >= URD_MAX_MCAST_QP)
		return -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->qp = qp;
	memcpy(m->gid, gid, 16);
	m->next = *b;
	*b = m;
	qp->nmcast++;
	qp->vr->nmcast++;
	return 0;
}

int mcast_detach(struct urd_daemon *d, struct vr_qp *qp, const uint8_t gid[16], bool *last)
{
	struct vr_mcast **pp = mcast_bucket(d, gid), *m = NULL;

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->qp == qp && !memcmp((*pp)->gid, gid, 16)) {
			m = *pp;
			*pp = m->next;
			break;
		}
	if (!m)
		return -EINVAL;
	free(m);
	qp->nmcast--;
	qp->vr->nmcast--;
	*last = !mcast_next(d, NULL, gid);
	return 0;
}

void mcast_detach_all(struct urd_daemon *d, struct vr_qp *qp,
		      void (*gone)(struct urd_daemon *d, const uint8_t gid[16]))
{
	for (uint32_t b = 0; b < URD_MCAST_BUCKETS && qp->nmcast; b++) {
		struct vr_mcast **pp = &d->mcast[b];

		while (*pp) {
			struct vr_mcast *m = *pp;
			uint8_t gid[16];

			if (m->qp != qp) {
				pp = &m->next;
				continue;
			}
			*pp = m->next;
			memcpy(gid, m->gid, 16);
			free(m);
			qp->nmcast--;
			qp->vr->nmcast--;
			if (gone && !mcast_next(d, NULL, gid))
				gone(d, gid);
		}
	}
}

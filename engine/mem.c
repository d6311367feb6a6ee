/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Memory protection and data movement: every access to registered memory is
 * checked here against the daemon's private MR table (key, PD, bounds,
 * access flags) before a byte moves.  Bytes move once, from the source MR to
 * the destination MR. */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* [addr, addr + len) inside [iova, iova + length), without overflow. */
static bool in_bounds(const struct vr_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->iova && len <= mr->length && addr - mr->iova <= mr->length - len;
}

/* A local SGE (lkey): IB spec 10.6.3.1 / C10-13.  Returns 0 or -EACCES. */
int mr_check_local(struct urd_vrnic *vr, struct vr_pd *pd, const struct urd_sge *sge,
		   uint32_t need_access, struct vsge *out)
{
	struct vr_mr *mr = mr_by_lkey(vr, sge->lkey);

	if (!mr || mr->pd != pd || (mr->access & need_access) != need_access ||
	    !in_bounds(mr, sge->addr, sge->length))
		return -EACCES;
	out->mr = mr;
	out->off = sge->addr - mr->iova;
	out->len = sge->length;
	out->flat = NULL;
	return 0;
}

/* A remote access (rkey) at the responder: the MR must belong to the target
 * QP's PD, and both the MR and the QP must grant the access (IB spec 9.7.4.1.5
 * and 10.6.3.2).  A memory window's R_Key goes to mw.c. */
int mr_check_remote(struct urd_vrnic *vr, struct vr_qp *qp, uint32_t rkey, uint64_t addr,
		    uint64_t len, uint32_t need_access, struct vsge *out)
{
	struct vr_mr *mr;

	if (rkey & URD_MW_KEY_BIT)
		return mw_check_remote(vr, qp, rkey, addr, len, need_access, out);
	mr = mr_by_rkey(vr, rkey);
	if (!mr || mr->pd != qp->pd || (mr->access & need_access) != need_access ||
	    (qp->attr.qp_access_flags & need_access) != need_access || !in_bounds(mr, addr, len))
		return -EACCES;
	out->mr = mr;
	out->off = addr - mr->iova;
	out->len = (uint32_t)len;
	out->flat = NULL;
	return 0;
}

/* Daemon address of byte off of a vsge, and how many bytes from there are
 * contiguous in the daemon's view. */
uint8_t *vsge_ptr(const struct vsge *v, uint64_t off, uint64_t *contig)
{
	const struct vr_mr *mr = v->mr;
	uint64_t mo;
	uint32_t lo = 0, hi;

	if (!mr) {
		*contig = v->len - off;
		return v->flat + off;
	}
	mo = v->off + off;
	hi = mr->nsegs;
	while (hi - lo > 1) {           /* last segment whose mr_off <= mo */
		uint32_t mid = (lo + hi) / 2;

		if (mr->segs[mid].mr_off <= mo)
			lo = mid;
		else
			hi = mid;
	}
	*contig = mr->segs[lo].mr_off + mr->segs[lo].len - mo;
	if (*contig > v->len - off)
		*contig = v->len - off;
	return mr->segs[lo].ptr + (mo - mr->segs[lo].mr_off);
}

/* The same for byte off of a list of vsges (contiguous within that vsge);
 * NULL past the list's end. */
uint8_t *vsge_list_ptr(const struct vsge *g, uint32_t ng, uint64_t off, uint64_t *contig)
{
	uint32_t i = 0;

	while (i < ng && off >= g[i].len) {
		off -= g[i].len;
		i++;
	}
	if (i == ng) {
		*contig = 0;
		return NULL;
	}
	return vsge_ptr(&g[i], off, contig);
}

void sg_copy(struct engine *eng, const struct vsge *dst, uint32_t ndst, const struct vsge *src, uint32_t nsrc, uint64_t len)
{
	uint32_t di = 0, si = 0;
	uint64_t doff = 0, soff = 0;

	while (len) {
		uint64_t dc, sc, n;
		uint8_t *d, *s;

		while (di < ndst && doff == dst[di].len) {
			di++;
			doff = 0;
		}
		while (si < nsrc && soff == src[si].len) {
			si++;
			soff = 0;
		}
		if (di == ndst || si == nsrc)
			return;
		d = vsge_ptr(&dst[di], doff, &dc);
		s = vsge_ptr(&src[si], soff, &sc);
		n = dc < sc ? dc : sc;
		if (n > len)
			n = len;
		memmove(d, s, n);
		eng->copied_bytes += n;
		doff += n;
		soff += n;
		len -= n;
	}
}

/* Drop the first off bytes of the list v[0..n) in place (a message resuming
 * in its middle); returns the index of the first element left, n if none. */
uint32_t vsge_advance(struct vsge *v, uint32_t n, uint64_t off)
{
	uint32_t i = 0;

	while (i < n && off >= v[i].len) {
		off -= v[i].len;
		i++;
	}
	if (i < n && off) {
		if (v[i].mr)
			v[i].off += off;
		else
			v[i].flat += off;
		v[i].len -= (uint32_t)off;
	}
	return i;
}

/* Bytes [off, off + len) of the list g, as flat memory at buf, in or out. */
static void vsge_flat(struct engine *eng, const struct vsge *g, uint32_t ng, uint64_t off, uint8_t *buf,
		      uint32_t len, bool out)
{
	struct vsge f = { .mr = NULL, .off = 0, .len = len, .flat = buf };
	uint32_t i = 0;

	while (i < ng && off >= g[i].len) {
		off -= g[i].len;
		i++;
	}
	if (i == ng)
		return;
	{
		struct vsge first = g[i];
		struct vsge tmp[ENGINE_MAX_SGE + 1];
		uint32_t n = 0;

		vsge_advance(&first, 1, off);
		tmp[n++] = first;
		for (uint32_t j = i + 1; j < ng && n < ENGINE_MAX_SGE + 1; j++)
			tmp[n++] = g[j];
		if (out)
			sg_copy(eng, &f, 1, tmp, n, len);
		else
			sg_copy(eng, tmp, n, &f, 1, len);
	}
}

void vsge_read(struct engine *eng, uint8_t *dst, const struct vsge *g, uint32_t ng, uint64_t off, uint32_t len)
{
	vsge_flat(eng, g, ng, off, dst, len, true);
}

void vsge_write(struct engine *eng, const struct vsge *g, uint32_t ng, uint64_t off, const uint8_t *src,
		uint32_t len)
{
	vsge_flat(eng, g, ng, off, (uint8_t *)src, len, false);
}

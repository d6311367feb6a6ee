/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Byte-extent allocator for a vRNIC's ring arena and memory window.
 *
 * Free extents live in a red-black tree ordered by offset (libbsd's
 * <bsd/sys/tree.h>, header-only macros).  Giving space back finds its two
 * neighbours in O(log n), so a tenant that fragments its window cannot make
 * frees (at context death, vRNIC delete) cost the square of its
 * allocations under the big lock.  Getting space is first fit, lowest
 * offset first, by an in-order walk: linear in the free extents, bounded
 * per request.  Free extents are never adjacent: a put merges with both
 * neighbours.
 */
#include <errno.h>
#include <stdlib.h>

#include "objects.h"

/* tree.h's static generator names this attribute; libbsd leaves it undefined
 * because Linux headers use the name for struct members: define it here only */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif

static int ext_cmp(const struct urd_extent *a, const struct urd_extent *b)
{
	return a->off < b->off ? -1 : a->off > b->off;
}

RB_GENERATE_STATIC(urd_extents, urd_extent, node, ext_cmp)

int alloc_init(struct urd_alloc *a, uint64_t base, uint64_t size)
{
	struct urd_extent *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	RB_INIT(&a->free);
	e->off = base;
	e->len = size;
	RB_INSERT(urd_extents, &a->free, e);
	a->nfree = 1;
	a->base = base;
	a->size = size;
	a->used = 0;
	return 0;
}

void alloc_fini(struct urd_alloc *a)
{
	struct urd_extent *e, *n;

	RB_FOREACH_SAFE(e, urd_extents, &a->free, n) {
		RB_REMOVE(urd_extents, &a->free, e);
		free(e);
	}
	a->nfree = 0;
}

/* First fit; len and align are page multiples. */
int alloc_get(struct urd_alloc *a, uint64_t len, uint64_t align, uint64_t *off)
{
	struct urd_extent *e;

	if (!len || !align || (align & (align - 1)))
		return -EINVAL;
	RB_FOREACH(e, urd_extents, &a->free) {
		uint64_t start = (e->off + align - 1) & ~(align - 1);
		uint64_t pad = start - e->off;

		if (pad > e->len || len > e->len - pad)
			continue;
		if (pad) {      /* the alignment gap stays free, as its own extent */
			struct urd_extent *g = calloc(1, sizeof(*g));

			if (!g)
				return -ENOMEM;
			g->off = e->off;
			g->len = pad;
			/* moving e's start up keeps the order: g takes its place */
			e->off += pad;
			e->len -= pad;
			RB_INSERT(urd_extents, &a->free, g);
			a->nfree++;
		}
		*off = e->off;
		e->off += len;
		e->len -= len;
		a->used += len;
		if (!e->len) {
			RB_REMOVE(urd_extents, &a->free, e);
			a->nfree--;
			free(e);
		}
		return 0;
	}
	return -ENOMEM;
}

void alloc_put(struct urd_alloc *a, uint64_t off, uint64_t len)
{
	struct urd_extent key = { .off = off }, *next, *prev, *e;

	next = RB_NFIND(urd_extents, &a->free, &key);   /* first free extent at or above off */
	prev = next ? RB_PREV(urd_extents, &a->free, next) : RB_MAX(urd_extents, &a->free);
	a->used -= len;
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (next && prev->off + prev->len == next->off) {
			prev->len += next->len;
			RB_REMOVE(urd_extents, &a->free, next);
			a->nfree--;
			free(next);
		}
		return;
	}
	if (next && off + len == next->off) {
		next->off = off;        /* still above prev: the order holds */
		next->len += len;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;         /* the space is lost, never handed out twice */
	e->off = off;
	e->len = len;
	RB_INSERT(urd_extents, &a->free, e);
	a->nfree++;
}

/* The free extents in offset order (consistency checks of the fuzzers). */
const struct urd_extent *alloc_first_free(const struct urd_alloc *a)
{
	return RB_MIN(urd_extents, (struct urd_extents *)&a->free);
}

const struct urd_extent *alloc_next_free(const struct urd_extent *e)
{
	return RB_NEXT(urd_extents, NULL, (struct urd_extent *)e);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The ring arena: the pages of the region that hold the queues of CQs, SRQs
 * and QPs. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "unirdma/barrier.h"
#include "verbs.h"

/* Callers bound v far below 2^31 (device limits); the cap keeps the loop
 * finite whatever they pass. */
uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v && r < (1u << 31))
		r <<= 1;
	return r;
}

uint32_t ilog2(uint32_t v)
{
	uint32_t r = 0;

	while ((1u << r) < v)
		r++;
	return r;
}


int ring_alloc(struct urd_vrnic *vr, struct vr_ring *r, uint32_t n, uint32_t slot_bytes)
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
	urd_queue_init(&r->q, vr->map + off, n, ilog2(slot_bytes));
	r->polling = false;
	return 0;
}

void ring_free(struct urd_vrnic *vr, struct vr_ring *r)
{
	if (r->bytes)
		alloc_put(&vr->arena, r->off, r->bytes);
	r->bytes = 0;
}

void ring_reset(struct vr_ring *r)
{
	if (!r->bytes)
		return;
	/* drop whatever the tenant posted: RESET empties the queues (no completions) */
	r->q.own = urd_queue_load_prod(&r->q);
	r->q.seen = r->q.own;
	r->polling = false;
	urd_store_relaxed(&r->q.hdr->polling, 0);
	urd_queue_release_cons(&r->q, r->q.own);
}

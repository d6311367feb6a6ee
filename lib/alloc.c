/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* alloc.c - the library's own memory, on pages no application data shares.
 *
 * Registration moves whole pages (mem.c): the pages under a buffer, edge
 * pages included, are copied into the vRNIC file and the file is mapped
 * over them.  A write another thread makes to such a page between the copy
 * and the mapping is lost.  With the library's objects on malloc's heap, the
 * edge page of a buffer could hold a context, a CQ or a QP, written at any
 * time by the event thread or by a polling thread: ibv_ud_pingpong's buffer
 * (size + 40 bytes) ended in the page that held its context, and a move that
 * overlapped the event thread taking ev_lock brought back the copy with the
 * lock held and nobody holding it; both threads then slept on it forever.
 *
 * So every object of the library comes from here: size classes carved out
 * of anonymous mappings of our own (64 KiB slabs), and a mapping of its own
 * for anything larger than the largest class.  No application buffer can
 * share a page with them.  Chunks are never given back to the kernel (the
 * library's objects are few and small); a free list per class reuses them.
 *
 * alloc_lock is a leaf: nothing else is taken while it is held.  fork: the
 * atfork handlers of mem.c hold it across fork (urd_alloc_fork_*).
 *
 * Under AddressSanitizer the bytes of a chunk past the object and every free
 * chunk are poisoned, so overflows and uses after free are still reported.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "priv.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum {
	HDR = 16,                       /* keeps objects 16-byte aligned */
	MIN_SHIFT = 6,                  /* classes: 64 B .. 4 KiB chunks */
	NCLASS = 7,
	SLAB = 64 * 1024,
};

#define BIG_FLAG (1ull << 63)           /* the chunk is a mapping of its own */

struct chunk_hdr {
	uint64_t size;                  /* chunk bytes, | BIG_FLAG for a mapping */
	uint64_t used;                  /* object bytes asked for */
};

struct free_chunk {
	struct free_chunk *next;
};

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_chunk *free_list[NCLASS];
static uint8_t *slab_next;
static size_t slab_left;

static int class_of(size_t total)
{
	for (int c = 0; c < NCLASS; c++)
		if (total <= (size_t)1 << (MIN_SHIFT + c))
			return c;
	return -1;
}

static void *map_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A chunk of class c, under alloc_lock. */
static uint8_t *chunk_get(int c)
{
	size_t sz = (size_t)1 << (MIN_SHIFT + c);
	uint8_t *p;

	if (free_list[c]) {
		p = (uint8_t *)free_list[c];
		UNPOISON(p, sizeof(struct free_chunk));
		free_list[c] = free_list[c]->next;
		return p;
	}
	if (slab_left < sz) {
		/* the rest of the old slab is dropped: at most 4 KiB a slab */
		slab_next = map_pages(SLAB);
		if (!slab_next) {
			slab_left = 0;
			return NULL;
		}
		slab_left = SLAB;
		POISON(slab_next, SLAB);
	}
	p = slab_next;
	slab_next += sz;
	slab_left -= sz;
	return p;
}

/* Zeroed memory for n bytes, or NULL. */
void *urd_zalloc(size_t n)
{
	size_t total = n + HDR;
	struct chunk_hdr *h;
	int c;

	if (n > SIZE_MAX / 2)
		return NULL;
	c = class_of(total);
	if (c < 0) {
		size_t len = (total + URD_PAGE_SIZE - 1) & ~(size_t)(URD_PAGE_SIZE - 1);

		h = map_pages(len);     /* zeroed by the kernel */
		if (!h)
			return NULL;
		h->size = len | BIG_FLAG;
		h->used = n;
		return (uint8_t *)h + HDR;
	}
	pthread_mutex_lock(&alloc_lock);
	h = (struct chunk_hdr *)chunk_get(c);
	pthread_mutex_unlock(&alloc_lock);
	if (!h)
		return NULL;
	UNPOISON(h, total);
	h->size = (size_t)1 << (MIN_SHIFT + c);
	h->used = n;
	POISON(h, HDR);
	memset((uint8_t *)h + HDR, 0, n);
	return (uint8_t *)h + HDR;
}

/* calloc's contract, with the overflow check. */
void *urd_calloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	return urd_zalloc(nmemb * size);
}

static struct chunk_hdr *hdr_of(void *p)
{
	struct chunk_hdr *h = (struct chunk_hdr *)((uint8_t *)p - HDR);

	UNPOISON(h, HDR);
	return h;
}

void urd_free(void *p)
{
	struct chunk_hdr *h;
	uint64_t size;

	if (!p)
		return;
	h = hdr_of(p);
	size = h->size;
	if (size & BIG_FLAG) {
		munmap(h, size & ~BIG_FLAG);
		return;
	}
	POISON(h, size);
	UNPOISON(h, sizeof(struct free_chunk));
	pthread_mutex_lock(&alloc_lock);
	((struct free_chunk *)h)->next = free_list[class_of(size)];
	free_list[class_of(size)] = (struct free_chunk *)h;
	POISON(h, sizeof(struct free_chunk));
	pthread_mutex_unlock(&alloc_lock);
}

/* realloc's contract: NULL p allocates; on failure p is untouched.  Bytes
 * past the old size are zero. */
void *urd_realloc(void *p, size_t n)
{
	struct chunk_hdr *h;
	size_t old;
	void *q;

	if (!p)
		return urd_zalloc(n);
	h = hdr_of(p);
	old = h->used;
	POISON(h, HDR);
	q = urd_zalloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	urd_free(p);
	return q;
}

/* fork: held across it, so the child never inherits a half-made list. */
void urd_alloc_fork_prepare(void)
{
	pthread_mutex_lock(&alloc_lock);
}

void urd_alloc_fork_parent(void)
{
	pthread_mutex_unlock(&alloc_lock);
}

void urd_alloc_fork_child(void)
{
	pthread_mutex_unlock(&alloc_lock);
}

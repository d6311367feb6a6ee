/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* In-process unirdmad for the libFuzzer targets: see harness.h.  The
 * fuzzers run the engine's passes themselves (engine_pass, the very code the
 * engine thread runs), without its thread.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "log.h"

struct urd_daemon *urd_d;
struct urd_vrnic *fz_vr[FZ_NVR];

/* --------------------------------------------------- deterministic keys */

/* The daemon draws MR keys from getrandom(); here they come from a generator
 * that restarts with every input, so a key in a corpus file stays valid.
 * (The executable's definition interposes on libc's.) */
static uint64_t prng_state;

static uint64_t prng_next(void)
{
	uint64_t z = (prng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	uint8_t *p = buf;

	(void)flags;
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)prng_next();
	return (ssize_t)len;
}

/* ------------------------------------------------------------- failure */

void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz invariant violated: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---------------------------------------------------------------- setup */

void fz_init(void)
{
	static const struct { const char *name, *tenant, *ip; } vrs[FZ_NVR] = {
		{ "vr0", "t1", "10.0.0.1/24" },
		{ "vr1", "t1", "10.0.0.2/24" },
		{ "vr2", "t2", "10.0.0.1/24" },     /* same address, other tenant */
	};
	struct urd_daemon *d;
	char path[700];
	int ret;

	if (urd_d)
		return;
	urd_log_level = getenv("UNIRDMA_FUZZ_LOG") ? URD_LOG_DEBUG : -1;
	urd_vrnic_threads = false;
	d = calloc(1, sizeof(*d));
	if (!d)
		abort();
	snprintf(d->state_dir, sizeof(d->state_dir), "/dev/shm/unirdma-fuzz.XXXXXX");
	if (!mkdtemp(d->state_dir))
		fz_fail("mkdtemp %s: %m", d->state_dir);
	snprintf(path, sizeof(path), "%s/vrnics", d->state_dir);
	if (mkdir(path, 0755))
		fz_fail("mkdir %s: %m", path);
	pthread_mutex_init(&d->lock, NULL);
	d->epoch = 1;
	urd_d = d;
	fz_begin();
	/* Created in the order vr1, vr2, vr0: mappings go top-down, so vr0's
	 * region (the attacker's in fuzz_wqe) ends where vr2's (the other
	 * tenant's) begins, and a write past the end of vr0's memory window
	 * shows up in vr2's header instead of in unmapped memory. */
	for (int k = 0; k < FZ_NVR; k++) {
		int i = (k + 1) % FZ_NVR;

		ret = vrnic_create(d, vrs[i].name, vrs[i].tenant, vrs[i].ip, &fz_vr[i]);
		if (ret)
			fz_fail("vrnic_create %s: %s", vrs[i].name, strerror(-ret));
		/* address vectors without a GRH too: the routes by QPN alone
		 * are the widest a tenant can be given */
		vrnic_set_grhless_av(fz_vr[i], true);
		/* the daemon keeps its descriptor and mapping; the names can go */
		snprintf(path, sizeof(path), "%s/region", fz_vr[i]->dir);
		unlink(path);
		rmdir(fz_vr[i]->dir);
	}
	snprintf(path, sizeof(path), "%s/vrnics", d->state_dir);
	rmdir(path);
	rmdir(d->state_dir);
}

void fz_begin(void)
{
	struct urd_daemon *d = urd_d;

	d->next_qpn = 0x100;
	d->qpn_sequential = true;       /* the seeds connect QPs by these numbers */
	d->next_srqn = 1;
	d->next_ctx_id = 0;
	prng_state = 0x756e6972646d61ull;       /* "unirdma" */
}

/* ------------------------------------------------------------ requests */

int fz_call(struct urd_vrnic *vr, uint32_t slot, const void *req, uint32_t len,
	    void *resp, uint32_t *resp_len)
{
	struct urd_daemon *d = urd_d;
	int st;

	*resp_len = 0;
	pthread_mutex_lock(&d->lock);
	st = ctrl_dispatch(vr, slot, req, len, resp, resp_len);
	pthread_mutex_unlock(&d->lock);
	if (*resp_len < sizeof(struct urd_msg_hdr) || *resp_len > URD_MSG_MAX)
		fz_fail("op %u: response length %u out of [16, %u]",
			len >= 4 ? ((const struct urd_msg_hdr *)req)->op : 0, *resp_len, URD_MSG_MAX);
	if (st > 0 || st < -4095)
		fz_fail("op %u: status %d is not 0 or -errno",
			len >= 4 ? ((const struct urd_msg_hdr *)req)->op : 0, st);
	fz_check();
	return st;
}

int fz_req(struct urd_vrnic *vr, uint32_t slot, uint16_t op, void *req, uint32_t len, void *resp)
{
	static uint8_t rbuf[URD_MSG_MAX];
	struct urd_msg_hdr *h = req;
	uint32_t rlen;
	int st;

	h->version = URD_ABI_VERSION;
	h->op = op;
	h->len = len;
	h->status = 0;
	h->reserved = 0;
	st = fz_call(vr, slot, req, len, rbuf, &rlen);
	if (resp)
		memcpy(resp, rbuf, rlen);
	return st;
}

void fz_ctx_died(struct urd_vrnic *vr, uint32_t slot)
{
	pthread_mutex_lock(&urd_d->lock);
	if (vr->ctx[slot])
		ctx_destroy(vr->ctx[slot]);
	pthread_mutex_unlock(&urd_d->lock);
	fz_check();
}

/* -------------------------------------------------------------- engine */

bool fz_engine_pass(uint64_t now, uint64_t *next_timer)
{
	bool did;

	pthread_mutex_lock(&urd_d->lock);
	did = engine_pass(urd_d, now, next_timer);
	pthread_mutex_unlock(&urd_d->lock);
	return did;
}

void fz_engine_drain(uint64_t *now, int max)
{
	uint64_t next;

	for (int i = 0; i < max; i++) {
		bool did = fz_engine_pass(*now, &next);

		if (!did && !urd_d->eng.nactive && !urd_d->eng.wait_head)
			break;
		if (!did && next != UINT64_MAX && next > *now)
			*now = next;
		else
			*now += 1000;
	}
}

void fz_end(void)
{
	struct urd_daemon *d = urd_d;

	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < FZ_NVR; i++)
		for (uint32_t s = 0; s < URD_MAX_CTX; s++)
			if (fz_vr[i]->ctx[s])
				ctx_destroy(fz_vr[i]->ctx[s]);
	pthread_mutex_unlock(&d->lock);
	fz_check_full();
	for (int i = 0; i < FZ_NVR; i++) {
		struct urd_vrnic *vr = fz_vr[i];

		if (vr->mems || vr->arena.used || vr->memwin.used || vr->nctx)
			fz_fail("vrnic %s: resources left after every context died (mems %p, arena %llu, "
				"window %llu bytes)", vr->name, (void *)vr->mems,
				(unsigned long long)vr->arena.used, (unsigned long long)vr->memwin.used);
		if (vr->arena.nfree != 1 || vr->memwin.nfree != 1)
			fz_fail("vrnic %s: free space fragmented with nothing allocated", vr->name);
	}
	if (d->eng.nactive || d->eng.wait_head)
		fz_fail("engine lists not empty with no QP left");
}

/* --------------------------------------------------------------- seeds */

void fz_seed_write(const char *dir, const char *name, const void *data, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		fz_fail("cannot write %s: %m", path);
}

void fz_put(struct fz_buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

void fz_put8(struct fz_buf *b, uint8_t v) { fz_put(b, &v, 1); }
void fz_put16(struct fz_buf *b, uint16_t v) { fz_put(b, &v, 2); }
void fz_put32(struct fz_buf *b, uint32_t v) { fz_put(b, &v, 4); }

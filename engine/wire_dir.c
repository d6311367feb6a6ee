/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The engine's copy of the cluster directory: remote hosts and the GIDs they
 * serve, with each GID's tenant.  The control plane's directory client
 * (daemon/directory.c) keeps it current under the big lock; the data path
 * reads it without ever waiting for the directory's store.
 *
 * GIDs live in an open hash table keyed by the 16 GID bytes, hosts in a
 * short list (a cluster has tens to hundreds of hosts).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static uint32_t gid_hash(const uint8_t gid[16])
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	return h;
}

static struct wire_dir *dir_of(struct urd_daemon *d)
{
	return &d->eng.dir;
}

struct wire_gid *wire_gid_find(struct urd_daemon *d, const uint8_t gid[16])
{
	struct wire_dir *w = dir_of(d);

	for (struct wire_gid *g = w->gids[gid_hash(gid) % WIRE_GID_BUCKETS]; g; g = g->next)
		if (!memcmp(g->gid, gid, 16))
			return g;
	return NULL;
}

static struct engine_host *host_find(struct urd_daemon *d, const char *name)
{
	for (struct engine_host *h = dir_of(d)->hosts; h; h = h->next)
		if (!strcmp(h->name, name))
			return h;
	return NULL;
}

int engine_host_set(struct urd_daemon *d, const char *name, uint32_t ip, uint64_t incarnation, bool external)
{
	struct wire_dir *w = dir_of(d);
	struct engine_host *h;

	if (!name || !*name || strlen(name) > ENGINE_HOST_NAME_MAX)
		return -EINVAL;
	h = host_find(d, name);
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		strcpy(h->name, name);
		h->next = w->hosts;
		w->hosts = h;
	} else if (h->incarnation != incarnation) {
		memset(&h->cnt, 0, sizeof(h->cnt));     /* a new daemon there: new counters */
	}
	h->ip = ip;
	h->incarnation = incarnation;
	h->external = external;
	return 0;
}

static void gid_unlink(struct wire_dir *w, struct wire_gid **pp)
{
	struct wire_gid *g = *pp;

	*pp = g->next;
	free(g);
	w->ngids--;
}

int engine_host_qpns(struct urd_daemon *d, const char *name, uint32_t base, uint32_t span)
{
	struct engine_host *h = host_find(d, name);

	if (!h || base > 0xffffff || span > 0x1000000 - base)
		return -EINVAL;
	h->qpn_base = base;
	h->qpn_span = span;
	return 0;
}

struct engine_host *wire_host_by_qpn(struct urd_daemon *d, uint32_t qpn)
{
	for (struct engine_host *h = dir_of(d)->hosts; h; h = h->next)
		if (!h->external && h->qpn_span && qpn - h->qpn_base < h->qpn_span)
			return h;
	return NULL;
}

void engine_host_del(struct urd_daemon *d, const char *name)
{
	struct wire_dir *w = dir_of(d);
	struct engine_host *h = host_find(d, name);

	if (!h)
		return;
	for (uint32_t b = 0; b < WIRE_GID_BUCKETS; b++)
		for (struct wire_gid **pp = &w->gids[b]; *pp;) {
			if ((*pp)->host == h)
				gid_unlink(w, pp);
			else
				pp = &(*pp)->next;
		}
	for (struct engine_host **pp = &w->hosts; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	free(h);
}

int engine_gid_set(struct urd_daemon *d, const uint8_t gid[16], const char *tenant, const char *host)
{
	struct wire_dir *w = dir_of(d);
	struct engine_host *h = host_find(d, host);
	struct wire_gid *g;

	if (!h || !tenant || !*tenant || strlen(tenant) >= sizeof(g->tenant))
		return -EINVAL;
	g = wire_gid_find(d, gid);
	if (!g) {
		uint32_t b = gid_hash(gid) % WIRE_GID_BUCKETS;

		g = calloc(1, sizeof(*g));
		if (!g)
			return -ENOMEM;
		memcpy(g->gid, gid, 16);
		g->next = w->gids[b];
		w->gids[b] = g;
		w->ngids++;
	}
	strcpy(g->tenant, tenant);
	g->host = h;
	return 0;
}

void engine_gid_del(struct urd_daemon *d, const uint8_t gid[16])
{
	struct wire_dir *w = dir_of(d);

	for (struct wire_gid **pp = &w->gids[gid_hash(gid) % WIRE_GID_BUCKETS]; *pp; pp = &(*pp)->next)
		if (!memcmp((*pp)->gid, gid, 16)) {
			gid_unlink(w, pp);
			return;
		}
}

const struct engine_host *engine_hosts(const struct urd_daemon *d)
{
	return d->eng.dir.hosts;
}

const struct wire_counters *engine_wire_counters(const struct urd_daemon *d)
{
	return &d->eng.dir.cnt;
}

void engine_gids_each(const struct urd_daemon *d,
		      void (*fn)(void *arg, const uint8_t gid[16], const char *tenant, const struct engine_host *h),
		      void *arg)
{
	for (uint32_t b = 0; b < WIRE_GID_BUCKETS; b++)
		for (const struct wire_gid *g = d->eng.dir.gids[b]; g; g = g->next)
			fn(arg, g->gid, g->tenant, g->host);
}

void wire_dir_free(struct urd_daemon *d)
{
	struct wire_dir *w = dir_of(d);

	while (w->hosts)
		engine_host_del(d, w->hosts->name);
}

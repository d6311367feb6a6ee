/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_dir: libFuzzer target for the cluster directory client's parsers of
 * what etcd sends (daemon/directory.c): a range answer of the whole prefix
 * (the snapshot a session starts from) and the watch stream after it, with
 * keys and values in base64, and the engine's tables they feed.
 *
 * Input: ctl:u8, then the range answer up to the first NUL byte (none: no
 * snapshot), then the watch stream, handed over in pieces of ctl bytes
 * (0: whole), as curl may split it.
 *
 * After the input the engine's tables must hold no entry of this host (its
 * own entries are never remote) and every GID must name a host that is in
 * the table; then everything is forgotten and the tables must be empty.
 * ASan and LeakSanitizer find the rest.
 *
 * UNIRDMA_FUZZ_WRITE_SEEDS=DIR fuzz_dir writes the seed corpus to DIR and exits.
 * UNIRDMA_FUZZ_TRACE=1 prints the tables' sizes (for checking seeds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "directory.h"

#define SELF "self"

struct gid_check {
	const struct urd_daemon *d;
	unsigned n;
};

static void check_gid(void *arg, const uint8_t gid[16], const char *tenant, const struct engine_host *h)
{
	struct gid_check *c = arg;
	bool found = false;

	(void)gid;
	c->n++;
	if (!tenant || !*tenant)
		fz_fail("a GID without a tenant");
	for (const struct engine_host *x = engine_hosts(c->d); x; x = x->next)
		found |= x == h;
	if (!found)
		fz_fail("a GID names a host that is not in the table");
}

static void check_tables(struct urd_daemon *d, bool empty)
{
	struct gid_check c = { .d = d };
	unsigned nh = 0;

	pthread_mutex_lock(&d->lock);
	for (const struct engine_host *h = engine_hosts(d); h; h = h->next) {
		nh++;
		if (!strcmp(h->name, SELF))
			fz_fail("this host's own entry is in the engine's table");
	}
	engine_gids_each(d, check_gid, &c);
	pthread_mutex_unlock(&d->lock);
	if (empty && (nh || c.n))
		fz_fail("%u hosts and %u GIDs left after everything was forgotten", nh, c.n);
	if (getenv("UNIRDMA_FUZZ_TRACE"))
		fprintf(stderr, "fuzz_dir: %u hosts, %u GIDs%s\n", nh, c.n, empty ? " (after forgetting)" : "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1, *nul;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1;
	nul = memchr(p, 0, n);
	if (nul) {
		directory_fuzz_range(p, (size_t)(nul - p));
		n -= (size_t)(nul - p) + 1;
		p = nul + 1;
	}
	directory_fuzz_watch(p, n, data[0]);
	check_tables(urd_d, false);
	directory_fuzz_end();
	check_tables(urd_d, true);
	return 0;
}

/* ---- seeds ------------------------------------------------------------------- */

static char *b64(const char *s)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		fz_fail("out of memory");
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)(unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned)(unsigned char)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? (unsigned char)s[i + 2] : 0);

		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* appends {"key":..,"value":..} (value NULL: none) to b */
static void kv(struct fz_buf *b, const char *key, const char *value)
{
	char *k = b64(key), *v = value ? b64(value) : NULL;
	char buf[1024];

	snprintf(buf, sizeof(buf), "{\"key\":\"%s\"%s%s%s,\"mod_revision\":\"7\"}", k, v ? ",\"value\":\"" : "",
		 v ? v : "", v ? "\"" : "");
	fz_put(b, buf, strlen(buf));
	free(k);
	free(v);
}

static void puts_(struct fz_buf *b, const char *s)
{
	fz_put(b, s, strlen(s));
}

#define HOST_B "{\"ip\":\"10.78.0.2\",\"incarnation\":\"0123456789abcdef\",\"qpn_base\":131072,\"qpn_bits\":16}"
#define HOST_S "{\"ip\":\"10.78.0.1\",\"incarnation\":\"fedcba9876543210\",\"qpn_base\":65536,\"qpn_bits\":16}"

static void write_seeds(const char *dir)
{
	struct fz_buf b = { 0 };

	/* a snapshot with two hosts (one of them this one), GIDs, a peer;
	 * then a watch that adds, changes and deletes */
	fz_put8(&b, 0);
	puts_(&b, "{\"header\":{\"revision\":\"7\"},\"kvs\":[");
	kv(&b, "/unirdma/v1/hosts/B", HOST_B);
	puts_(&b, ",");
	kv(&b, "/unirdma/v1/hosts/" SELF, HOST_S);
	puts_(&b, ",");
	kv(&b, "/unirdma/v1/gids/10.79.0.1", "{\"host\":\"B\",\"tenant\":\"t1\",\"vrnic\":\"v1\"}");
	puts_(&b, ",");
	kv(&b, "/unirdma/v1/gids/10.79.0.2", "{\"host\":\"" SELF "\",\"tenant\":\"t1\",\"vrnic\":\"v2\"}");
	puts_(&b, ",");
	kv(&b, "/unirdma/v1/external/10.78.0.77", "{\"tenant\":\"t5\"}");
	puts_(&b, ",");
	kv(&b, "/unirdma/v1/qpn/2", "B");
	puts_(&b, "],\"count\":\"6\"}");
	fz_put8(&b, 0);
	puts_(&b, "{\"result\":{\"header\":{\"revision\":\"8\"},\"created\":true}}\n");
	puts_(&b, "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":");
	kv(&b, "/unirdma/v1/gids/10.79.0.3", "{\"host\":\"C\",\"tenant\":\"t2\",\"vrnic\":\"v3\"}");
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/hosts/C", "{\"ip\":\"10.78.0.3\",\"incarnation\":\"00000000000000c3\"}");
	puts_(&b, "},{\"type\":\"DELETE\",\"kv\":");
	kv(&b, "/unirdma/v1/gids/10.79.0.1", NULL);
	puts_(&b, "}]}}\n{\"result\":{\"header\":{\"revision\":\"10\"},\"events\":[{\"type\":\"DELETE\",\"kv\":");
	kv(&b, "/unirdma/v1/hosts/B", NULL);
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/gids/10.79.0.3", "{\"host\":\"" SELF "\",\"tenant\":\"t2\",\"vrnic\":\"v3\"}");
	puts_(&b, "}]}}\n");
	fz_seed_write(dir, "snapshot_watch", b.p, b.len);

	/* the same watch in 7-byte pieces, no snapshot */
	b.len = 0;
	fz_put8(&b, 7);
	puts_(&b, "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":");
	kv(&b, "/unirdma/v1/hosts/C", "{\"ip\":\"10.78.0.3\",\"incarnation\":\"00000000000000c3\"}");
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/gids/10.79.0.3", "{\"host\":\"C\",\"tenant\":\"t2\"}");
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/external/10.78.0.99", "{\"tenant\":\"t9\"}");
	puts_(&b, "}]}}\n");
	fz_seed_write(dir, "watch_pieces", b.p, b.len);

	/* bad values and a compaction */
	b.len = 0;
	fz_put8(&b, 0);
	puts_(&b, "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":");
	kv(&b, "/unirdma/v1/hosts/evil", "not json");
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/gids/1.2.3.4", "{\"host\":\"A\",\"tenant\":\"../x\"}");
	puts_(&b, "},{\"kv\":");
	kv(&b, "/unirdma/v1/gids/notanip", "{\"host\":\"A\",\"tenant\":\"t1\"}");
	puts_(&b, "},{\"kv\":{\"key\":\"!!!\"}}]}}\n");
	puts_(&b, "{\"result\":{\"compact_revision\":\"5\",\"canceled\":true}}\n");
	fz_seed_write(dir, "bad_values", b.p, b.len);
	free(b.p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("UNIRDMA_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	fz_init();
	directory_fuzz_begin(urd_d, SELF);
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

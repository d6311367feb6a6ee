/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster directory client: etcd v3 through its JSON gateway (libcurl,
 * json-c; keys and values base64, 64-bit integers as strings).
 *
 * Key layout, under DIR_PREFIX (/unirdma/v1/):
 *   hosts/<name>     {"ip","incarnation" (16 hex),"qpn_base","qpn_bits","started"}
 *                    under the host's lease (TTL 3 s, keepalive every 1 s)
 *   qpn/<k>          "<host name>", k in 1..255: QPNs [k << 16, (k+1) << 16),
 *                    claimed create-if-absent under the lease
 *   gids/<a.b.c.d>   {"host","tenant","vrnic"} under the lease, create-if-absent:
 *                    a vRNIC address has one host cluster-wide
 *   external/<a.b.c.d> {"tenant"} without lease: an admitted external RoCE node
 *
 * One thread runs sessions: grant a lease, claim a QPN range, put the host and
 * its GIDs, read the whole prefix at one revision, replace the engine's tables
 * with it, then watch from the next revision (a second thread reads the
 * streaming answer) while keeping the lease alive and publishing vRNIC
 * changes.  Any failure ends the session: the engine keeps its tables (the
 * data path never waits for etcd) and a new session starts after a backoff of
 * at most 1 s.  Entries are checked before use: a bad key or value is logged
 * and treated as absent.
 *
 * Locks: nothing here holds the big lock while it talks to etcd; dir.mu nests
 * inside the big lock. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon.h"
#include "directory.h"
#include "futex.h"
#include "log.h"

const char *const wire_drop_names[WDROP_NUM] = {
	[WDROP_MALFORMED] = "malformed",
	[WDROP_ICRC] = "icrc",
	[WDROP_UNKNOWN_SOURCE] = "unknown_source",
	[WDROP_SPOOFED_LOCAL] = "spoofed_local",
	[WDROP_OTHER_TENANT] = "other_tenant",
	[WDROP_NO_QP] = "no_qp",
	[WDROP_QP_STATE] = "qp_state",
	[WDROP_NOT_PEER] = "not_peer",
	[WDROP_PSN] = "psn",
	[WDROP_QKEY] = "qkey",
	[WDROP_NO_RECV] = "no_recv",
	[WDROP_TRANSPORT] = "transport",
	[WDROP_UC] = "uc_dropped",
};

const char *const wire_nak_names[WNAK_NUM] = {
	[WNAK_SEQ] = "psn_seq_error",
	[WNAK_INV_REQ] = "invalid_request",
	[WNAK_ACCESS] = "remote_access_error",
	[WNAK_OP] = "remote_operational_error",
	[WNAK_RNR] = "rnr",
};

#define LEASE_TTL_S 3
#define KEEPALIVE_MS 1000
#define BACKOFF_MAX_MS 1000
#define CALL_TIMEOUT_MS 1500            /* one request of the client thread */
#define CLAIM_TIMEOUT_MS 2000           /* an admin request waits at most this */
#define MAX_ANSWER (64u << 20)          /* bytes of one etcd answer (or watch message) */
#define MAX_ENDPOINTS 8
#define QPN_RANGES 256                  /* k = 1..255 */
#define QPN_BITS 16
#define HOST_NAME_LEN ENGINE_HOST_NAME_MAX

enum dkind { K_HOST, K_GID, K_EXT };

/* One entry of the directory as last read from etcd. */
struct dent {
	struct dent *next;
	enum dkind kind;
	char id[HOST_NAME_LEN + 1];     /* host name, or the dotted address */
	uint32_t ip;                    /* network order */
	uint64_t incarnation;
	uint32_t qpn_base, qpn_bits;
	char host[HOST_NAME_LEN + 1];   /* gid: its host */
	char tenant[URD_NAME_MAX + 1];
	char vrnic[URD_NAME_MAX + 1];
};

/* A GID this host serves, and where it stands in etcd. */
enum pub_state { PUB_WANT, PUB_DONE, PUB_CONFLICT };
struct pub {
	struct pub *next;
	uint32_t ip;
	char tenant[URD_NAME_MAX + 1], vrnic[URD_NAME_MAX + 1];
	enum pub_state state;
	bool live;                      /* a local vRNIC has it (reconcile) */
	int claims;                     /* vrnic.create requests between claim and done */
	char other[HOST_NAME_LEN + 1];  /* PUB_CONFLICT: who has it */
	char value[256];                /* the JSON we put (withdraw compares it) */
	uint64_t pass;                  /* the reconcile pass that last tried it */
};

static struct {
	struct urd_daemon *d;
	bool clustered;
	char *eps[MAX_ENDPOINTS];
	int neps;
	char host[HOST_NAME_LEN + 1];
	uint64_t incarnation;
	time_t started;
	char peers_path[512];           /* lone daemon: STATE/peers.json */

	pthread_t thread, watcher;
	bool thread_started;
	pthread_mutex_t mu;             /* everything below; inside the big lock */
	pthread_cond_t cv;
	bool stop, kick;
	bool rejoin;                    /* our host or QPN range entry vanished: a new session */
	int cur_ep;
	/* status */
	bool reachable;
	int64_t lease;
	uint32_t qpn_k;                 /* 0: none */
	int64_t revision;               /* of the last snapshot or watch message */
	char last_error[256];
	char self_ip[INET_ADDRSTRLEN];
	uint64_t sessions, skipped;
	/* the watch of the current session */
	bool watch_running, watch_stop;
	CURLM *watch_multi;             /* the watch's transfer, to wake it for a stop */
	int64_t watch_from;
	/* the directory as read; pubs */
	struct dent *ents;
	struct pub *pubs;
} dir = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
	va_list ap;
	char buf[sizeof(dir.last_error)];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&dir.mu);
	if (strcmp(buf, dir.last_error))
		log_warn("cluster: %s", buf);
	snprintf(dir.last_error, sizeof(dir.last_error), "%s", buf);
	pthread_mutex_unlock(&dir.mu);
}

/* ---- names and values ------------------------------------------------- */

static bool valid_name(const char *s)          /* vRNIC and tenant names, as vrnic.c */
{
	size_t n = strlen(s);

	if (!n || n > URD_NAME_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return true;
}

/* Host names: [A-Za-z0-9._-], up to 63, not "ext-..." (admitted peers' names). */
static bool valid_host(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > HOST_NAME_LEN || s[0] == '-' || s[0] == '.' || !strncmp(s, "ext-", 4))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return true;
}

/* A unicast IPv4 address, dotted, canonical (what inet_ntop writes). */
static bool parse_ip(const char *s, uint32_t *ip)
{
	char back[INET_ADDRSTRLEN];
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1 || !inet_ntop(AF_INET, &a, back, sizeof(back)) || strcmp(s, back))
		return false;
	if (!a.s_addr || a.s_addr == INADDR_BROADCAST || (ntohl(a.s_addr) >> 28) == 0xe)
		return false;
	*ip = a.s_addr;
	return true;
}

static const char *ip_str(uint32_t ip, char buf[INET_ADDRSTRLEN])
{
	return inet_ntop(AF_INET, &ip, buf, INET_ADDRSTRLEN);
}

static void gid_of(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &ip, 4);
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* etcd's 64-bit integers are strings; plain JSON integers are taken too. */
static bool jint64(json_object *o, const char *k, int64_t *out)
{
	json_object *v;
	const char *s;
	char *end;

	if (!o || !json_object_object_get_ex(o, k, &v))
		return false;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	s = json_object_get_string(v);
	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s && !*end && !errno;
}

/* ---- base64 ------------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_enc(const void *data, size_t n)
{
	const uint8_t *p = data;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);

		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* Decodes into a NUL-terminated string; NULL if s is not base64 or holds a NUL. */
static char *b64_dec(const char *s, size_t *len)
{
	size_t n = strlen(s), k = 0;
	char *out;
	uint32_t acc = 0;
	int bits = 0;

	if (n % 4)
		return NULL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *c;

		if (s[i] == '=') {
			if (i + 2 < n || (i + 1 < n && s[i + 1] != '='))
				goto bad;
			break;
		}
		c = strchr(b64, s[i]);
		if (!c || !*c)
			goto bad;
		acc = acc << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k] = (char)(acc >> bits & 0xff);
			if (!out[k++])
				goto bad;
		}
	}
	out[k] = 0;
	if (len)
		*len = k;
	return out;
bad:
	free(out);
	return NULL;
}

static void add_b64(json_object *o, const char *k, const char *s)
{
	char *e = b64_enc(s, strlen(s));

	json_object_object_add(o, k, json_object_new_string(e ? e : ""));
	free(e);
}

static void add_i64s(json_object *o, const char *k, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	json_object_object_add(o, k, json_object_new_string(buf));
}

/* ---- HTTP ---------------------------------------------------------------- */

struct buf {
	char *p;
	size_t n, cap;
};

static size_t buf_write(char *ptr, size_t sz, size_t nm, void *ud)
{
	struct buf *b = ud;
	size_t n = sz * nm;

	if (b->n + n + 1 > MAX_ANSWER)
		return 0;               /* aborts the transfer */
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

static void curl_setup(CURL *c, const char *url, const char *body, long timeout_ms)
{
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1000 ? timeout_ms : 1000L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
}

/* POST req to path on an endpoint, the current one first.  0 with the answer
 * object in *resp; -EHOSTUNREACH when no endpoint answered; -EPROTO (message
 * in err) when etcd answered an error or something that is not JSON. */
static int etcd_post(CURL **cp, const char *path, json_object *req, long timeout_ms, json_object **resp,
		     char *err, size_t errlen)
{
	const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	CURL *c = cp ? *cp : NULL;
	int ret = -EHOSTUNREACH, first, neps;
	struct buf b = { 0 };

	*resp = NULL;
	if (!c) {
		c = curl_easy_init();
		if (!c) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (cp)
			*cp = c;
	}
	pthread_mutex_lock(&dir.mu);
	first = dir.cur_ep;
	neps = dir.neps;
	pthread_mutex_unlock(&dir.mu);
	snprintf(err, errlen, "no etcd endpoint");
	for (int i = 0; i < neps; i++) {
		int ep = (first + i) % neps;
		char url[512];
		long code = 0;
		CURLcode cr;

		snprintf(url, sizeof(url), "%s%s", dir.eps[ep], path);
		curl_setup(c, url, body, timeout_ms / neps > 300 ? timeout_ms / neps : 300);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms / neps > 300 ? timeout_ms / neps : 300L);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		b.n = 0;
		cr = curl_easy_perform(c);
		if (cr != CURLE_OK) {
			snprintf(err, errlen, "etcd %s: %s", dir.eps[ep], curl_easy_strerror(cr));
			continue;
		}
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		pthread_mutex_lock(&dir.mu);
		dir.cur_ep = ep;
		if (!dir.self_ip[0]) {
			char *lip = NULL;

			if (curl_easy_getinfo(c, CURLINFO_LOCAL_IP, &lip) == CURLE_OK && lip && strchr(lip, '.'))
				snprintf(dir.self_ip, sizeof(dir.self_ip), "%s", lip);
		}
		pthread_mutex_unlock(&dir.mu);
		*resp = b.p ? json_tokener_parse(b.p) : NULL;
		if (!*resp || !json_object_is_type(*resp, json_type_object)) {
			snprintf(err, errlen, "etcd %s%s: HTTP %ld, answer is not a JSON object", dir.eps[ep], path, code);
			ret = -EPROTO;
		} else if (code != 200 || json_object_object_get_ex(*resp, "error", NULL)) {
			const char *m = jstr(*resp, "message");

			snprintf(err, errlen, "etcd %s: HTTP %ld: %.150s", path, code, m ? m : jstr(*resp, "error") ? jstr(*resp, "error") : "error");
			ret = -EPROTO;
		} else {
			ret = 0;
		}
		if (ret) {
			json_object_put(*resp);
			*resp = NULL;
		}
		break;
	}
	free(b.p);
	if (!cp)
		curl_easy_cleanup(c);
	return ret;
}

static json_object *kv_req(const char *key)
{
	json_object *o = json_object_new_object();

	add_b64(o, "key", key);
	return o;
}

static json_object *put_req(const char *key, const char *value, int64_t lease)
{
	json_object *o = kv_req(key);

	add_b64(o, "value", value);
	if (lease)
		add_i64s(o, "lease", lease);
	return o;
}

/* A txn: if the key's compare holds, put (key, value, lease); else read the
 * key.  cmp_value NULL: compare CREATE == 0 (absent).  Returns 1 when it
 * put, 0 when not (*cur: the present value, malloc'd, or NULL), -errno. */
static int txn_put_if(CURL **cp, const char *key, const char *cmp_value, const char *value, int64_t lease,
		      long timeout_ms, char **cur, char *err, size_t errlen)
{
	json_object *req = json_object_new_object(), *cmp = kv_req(key), *arr, *op, *resp, *v;
	int ret;

	if (cur)
		*cur = NULL;
	if (cmp_value) {
		json_object_object_add(cmp, "target", json_object_new_string("VALUE"));
		add_b64(cmp, "value", cmp_value);
	} else {
		json_object_object_add(cmp, "target", json_object_new_string("CREATE"));
		add_i64s(cmp, "create_revision", 0);
	}
	json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
	arr = json_object_new_array();
	json_object_array_add(arr, cmp);
	json_object_object_add(req, "compare", arr);
	op = json_object_new_object();
	json_object_object_add(op, value ? "request_put" : "request_delete_range",
			       value ? put_req(key, value, lease) : kv_req(key));
	arr = json_object_new_array();
	json_object_array_add(arr, op);
	json_object_object_add(req, "success", arr);
	op = json_object_new_object();
	json_object_object_add(op, "request_range", kv_req(key));
	arr = json_object_new_array();
	json_object_array_add(arr, op);
	json_object_object_add(req, "failure", arr);
	ret = etcd_post(cp, "/v3/kv/txn", req, timeout_ms, &resp, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	if (json_object_object_get_ex(resp, "succeeded", &v) && json_object_get_boolean(v)) {
		ret = 1;
	} else if (cur) {
		/* responses[0].response_range.kvs[0].value */
		json_object *r, *kvs;

		if (json_object_object_get_ex(resp, "responses", &r) && json_object_is_type(r, json_type_array) &&
		    json_object_array_length(r) > 0 &&
		    json_object_object_get_ex(json_object_array_get_idx(r, 0), "response_range", &r) &&
		    json_object_object_get_ex(r, "kvs", &kvs) && json_object_is_type(kvs, json_type_array) &&
		    json_object_array_length(kvs) > 0) {
			const char *val = jstr(json_object_array_get_idx(kvs, 0), "value");

			*cur = val ? b64_dec(val, NULL) : NULL;
			if (!*cur)
				*cur = strdup("");
		}
	}
	json_object_put(resp);
	return ret;
}

static int etcd_put(CURL **cp, const char *key, const char *value, int64_t lease, long timeout_ms, char *err,
		    size_t errlen)
{
	json_object *req = put_req(key, value, lease), *resp;
	int ret = etcd_post(cp, "/v3/kv/put", req, timeout_ms, &resp, err, errlen);

	json_object_put(req);
	json_object_put(resp);
	return ret;
}

/* All keys under prefix (at revision rev; 0: the latest); *resp holds kvs. */
static int etcd_range(CURL **cp, const char *prefix, int64_t rev, json_object **resp, char *err, size_t errlen)
{
	json_object *req = kv_req(prefix);
	char *end = strdup(prefix);
	int ret;

	if (!end) {
		json_object_put(req);
		return -ENOMEM;
	}
	end[strlen(end) - 1]++;         /* the prefix's range end: "/" + 1 */
	add_b64(req, "range_end", end);
	free(end);
	if (rev)
		add_i64s(req, "revision", rev);
	ret = etcd_post(cp, "/v3/kv/range", req, CALL_TIMEOUT_MS * 2, resp, err, errlen);
	json_object_put(req);
	return ret;
}

static void lease_revoke(CURL **cp, int64_t id)
{
	json_object *req = json_object_new_object(), *resp;
	char err[128];

	add_i64s(req, "ID", id);
	etcd_post(cp, "/v3/lease/revoke", req, 500, &resp, err, sizeof(err));
	json_object_put(req);
	json_object_put(resp);
}

/* ---- the directory as read, and the engine's copy ----------------------- */

static struct dent *ent_find(struct dent *list, enum dkind kind, const char *id)
{
	for (struct dent *e = list; e; e = e->next)
		if (e->kind == kind && !strcmp(e->id, id))
			return e;
	return NULL;
}

static void ents_free(struct dent *e)
{
	while (e) {
		struct dent *n = e->next;

		free(e);
		e = n;
	}
}

/* Parses one key and value of etcd into e.  1: an entry; 0: a key of ours
 * that the engine does not need (qpn/); -EINVAL: bad (why in err). */
static int ent_parse(const char *key, const char *value, struct dent *e, char *err, size_t errlen)
{
	const char *rest;
	json_object *o = NULL;
	int ret = -EINVAL;

	memset(e, 0, sizeof(*e));
	if (strncmp(key, DIR_PREFIX, strlen(DIR_PREFIX))) {
		snprintf(err, errlen, "key outside the prefix");
		return -EINVAL;
	}
	rest = key + strlen(DIR_PREFIX);
	if (!strncmp(rest, "qpn/", 4))
		return 0;
	if (value)
		o = json_tokener_parse(value);
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "value is not a JSON object");
		goto out;
	}
	if (!strncmp(rest, "hosts/", 6)) {
		const char *ip = jstr(o, "ip"), *inc = jstr(o, "incarnation");
		int64_t base = 0, bits = 0;
		char *end;

		e->kind = K_HOST;
		if (!valid_host(rest + 6)) {
			snprintf(err, errlen, "bad host name");
			goto out;
		}
		snprintf(e->id, sizeof(e->id), "%s", rest + 6);
		if (!parse_ip(ip, &e->ip)) {
			snprintf(err, errlen, "bad \"ip\"");
			goto out;
		}
		if (!inc || strlen(inc) != 16 || (errno = 0, e->incarnation = strtoull(inc, &end, 16), *end || errno)) {
			snprintf(err, errlen, "bad \"incarnation\" (16 hex digits)");
			goto out;
		}
		if ((jint64(o, "qpn_base", &base) && (base < 0 || base > 0xffffff)) ||
		    (jint64(o, "qpn_bits", &bits) && (bits < 0 || bits > 24))) {
			snprintf(err, errlen, "bad \"qpn_base\" or \"qpn_bits\"");
			goto out;
		}
		e->qpn_base = (uint32_t)base;
		e->qpn_bits = (uint32_t)bits;
		ret = 1;
	} else if (!strncmp(rest, "gids/", 5) || !strncmp(rest, "external/", 9)) {
		const char *ipstr = strchr(rest, '/') + 1, *host = jstr(o, "host"), *tenant = jstr(o, "tenant");
		const char *vrnic = jstr(o, "vrnic");

		e->kind = rest[0] == 'g' ? K_GID : K_EXT;
		if (!parse_ip(ipstr, &e->ip)) {
			snprintf(err, errlen, "bad address in the key");
			goto out;
		}
		snprintf(e->id, sizeof(e->id), "%s", ipstr);
		if (!tenant || !valid_name(tenant)) {
			snprintf(err, errlen, "bad \"tenant\"");
			goto out;
		}
		snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
		if (e->kind == K_GID) {
			if (!host || !valid_host(host)) {
				snprintf(err, errlen, "bad \"host\"");
				goto out;
			}
			snprintf(e->host, sizeof(e->host), "%s", host);
			if (vrnic && valid_name(vrnic))
				snprintf(e->vrnic, sizeof(e->vrnic), "%s", vrnic);
		}
		ret = 1;
	} else {
		ret = 0;                /* a later version's key: not ours to judge */
	}
out:
	json_object_put(o);
	return ret;
}

/* Parses one kv object of an answer (key and value base64).  1: *out is an
 * entry (malloc'd), 0: nothing for the engine, -EINVAL: skipped, logged. */
static int kv_parse(json_object *kv, bool deleted, char **keyp, struct dent **out)
{
	const char *k64 = jstr(kv, "key"), *v64 = jstr(kv, "value");
	char *key = k64 ? b64_dec(k64, NULL) : NULL, *val = NULL, err[128];
	struct dent e;
	int ret;

	*out = NULL;
	*keyp = key;
	if (!key) {
		log_warn("cluster: an entry with a bad key skipped");
		return -EINVAL;
	}
	if (deleted)
		return 0;
	val = v64 ? b64_dec(v64, NULL) : strdup("");
	ret = ent_parse(key, val, &e, err, sizeof(err));
	free(val);
	if (ret < 0) {
		log_warn("cluster: %.200s: %s: skipped", key, err);
		pthread_mutex_lock(&dir.mu);
		dir.skipped++;
		pthread_mutex_unlock(&dir.mu);
		return ret;
	}
	if (ret == 0)
		return 0;
	*out = malloc(sizeof(e));
	if (!*out)
		return -ENOMEM;
	**out = e;
	return 1;
}

static void ext_name(const struct dent *e, char *buf, size_t len)
{
	snprintf(buf, len, "ext-%.15s", e->id);
}

/* The engine's side of one entry appearing or changing.  Big lock and dir.mu held. */
static void engine_apply_put(struct urd_daemon *d, const struct dent *e, const struct dent *old)
{
	uint8_t gid[16];
	char name[HOST_NAME_LEN + 1];

	switch (e->kind) {
	case K_HOST:
		if (!strcmp(e->id, dir.host))
			return;         /* the engine knows its own vRNICs */
		engine_host_set(d, e->id, e->ip, e->incarnation, false);
		if (e->qpn_bits)
			engine_host_qpns(d, e->id, e->qpn_base, 1u << e->qpn_bits);
		for (const struct dent *g = dir.ents; g; g = g->next)
			if (g->kind == K_GID && !strcmp(g->host, e->id)) {
				gid_of(g->ip, gid);
				engine_gid_set(d, gid, g->tenant, g->host);
			}
		break;
	case K_GID:
		gid_of(e->ip, gid);
		if (!strcmp(e->host, dir.host)) {
			if (old && strcmp(old->host, dir.host))
				engine_gid_del(d, gid);
			return;
		}
		/* -EINVAL while its host is not known yet: the host's entry brings it */
		engine_gid_set(d, gid, e->tenant, e->host);
		break;
	case K_EXT:
		ext_name(e, name, sizeof(name));
		gid_of(e->ip, gid);
		engine_host_set(d, name, e->ip, 0, true);
		engine_gid_set(d, gid, e->tenant, name);
		break;
	}
}

static void engine_apply_del(struct urd_daemon *d, const struct dent *old)
{
	uint8_t gid[16];
	char name[HOST_NAME_LEN + 1];

	switch (old->kind) {
	case K_HOST:
		if (strcmp(old->id, dir.host))
			engine_host_del(d, old->id);
		break;
	case K_GID:
		if (strcmp(old->host, dir.host)) {
			gid_of(old->ip, gid);
			engine_gid_del(d, gid);
		}
		break;
	case K_EXT:
		ext_name(old, name, sizeof(name));
		engine_host_del(d, name);
		break;
	}
}

static struct pub *pub_find(uint32_t ip)
{
	for (struct pub *p = dir.pubs; p; p = p->next)
		if (p->ip == ip)
			return p;
	return NULL;
}

/* key changed to e (NULL: deleted).  Big lock and dir.mu held. */
static void model_update(struct urd_daemon *d, const char *key, struct dent *e)
{
	const char *rest = key + strlen(DIR_PREFIX);
	enum dkind kind;
	const char *id;
	struct dent **pp, *old = NULL;

	if (strncmp(key, DIR_PREFIX, strlen(DIR_PREFIX))) {
		free(e);
		return;
	}
	if (!strncmp(rest, "hosts/", 6))
		kind = K_HOST, id = rest + 6;
	else if (!strncmp(rest, "gids/", 5))
		kind = K_GID, id = rest + 5;
	else if (!strncmp(rest, "external/", 9))
		kind = K_EXT, id = rest + 9;
	else {
		free(e);
		return;
	}
	for (pp = &dir.ents; *pp; pp = &(*pp)->next)
		if ((*pp)->kind == kind && !strcmp((*pp)->id, id)) {
			old = *pp;
			*pp = old->next;
			break;
		}
	if (e) {
		e->next = dir.ents;
		dir.ents = e;
		engine_apply_put(d, e, old);
	} else if (old) {
		engine_apply_del(d, old);
	}
	if (kind == K_GID) {
		struct pub *p = pub_find(e ? e->ip : old ? old->ip : 0);

		/* ours deleted or overwritten behind our back: claim it again
		 * (or learn the conflict); conflicts may clear */
		if (p && p->state == PUB_DONE && (!e || strcmp(e->host, dir.host)))
			p->state = PUB_WANT;
		dir.kick = true;
	}
	if (kind == K_HOST && !e && !strcmp(id, dir.host) && dir.lease)
		dir.rejoin = true;      /* our host entry deleted: publish everything again */
	free(old);
}

struct gid_list {
	uint8_t (*gids)[16];
	size_t n, cap;
	struct dent *keep;
};

static void collect_stale_gid(void *arg, const uint8_t gid[16], const char *tenant, const struct engine_host *h)
{
	struct gid_list *l = arg;
	uint32_t ip;
	char ipb[INET_ADDRSTRLEN];
	const struct dent *e;
	bool ok;

	memcpy(&ip, gid + 12, 4);
	ip_str(ip, ipb);
	if (h->external)
		e = ent_find(l->keep, K_EXT, ipb), ok = e && !strcmp(e->tenant, tenant);
	else
		e = ent_find(l->keep, K_GID, ipb), ok = e && !strcmp(e->tenant, tenant) && !strcmp(e->host, h->name);
	if (ok || l->n == l->cap)
		return;
	memcpy(l->gids[l->n++], gid, 16);
}

/* Replace the engine's tables with ents (a snapshot).  Big lock and dir.mu held. */
static void model_replace(struct urd_daemon *d, struct dent *ents)
{
	struct gid_list l = { .keep = ents };
	char (*names)[HOST_NAME_LEN + 1] = NULL;
	size_t nn = 0, cap = 0;

	for (const struct engine_host *h = engine_hosts(d); h; h = h->next)
		cap++;
	names = calloc(cap ? cap : 1, sizeof(*names));
	for (const struct engine_host *h = engine_hosts(d); h && names; h = h->next) {
		bool keep;

		if (h->external)
			keep = !strncmp(h->name, "ext-", 4) && ent_find(ents, K_EXT, h->name + 4) &&
			       ent_find(ents, K_EXT, h->name + 4)->ip == h->ip;
		else
			keep = ent_find(ents, K_HOST, h->name) != NULL;
		if (!keep)
			snprintf(names[nn++], sizeof(names[0]), "%s", h->name);
	}
	for (size_t i = 0; i < nn; i++)
		engine_host_del(d, names[i]);
	free(names);
	l.cap = 1024;
	for (;;) {
		l.gids = calloc(l.cap, 16);
		l.n = 0;
		if (!l.gids)
			break;
		engine_gids_each(d, collect_stale_gid, &l);
		for (size_t i = 0; i < l.n; i++)
			engine_gid_del(d, l.gids[i]);
		free(l.gids);
		if (l.n < l.cap)
			break;          /* all seen */
	}
	ents_free(dir.ents);
	dir.ents = ents;
	for (const struct dent *e = ents; e; e = e->next)
		if (e->kind != K_GID)
			engine_apply_put(d, e, NULL);
	dir.kick = true;
}

/* ---- the lone daemon's admitted peers (STATE/peers.json) ---------------- */

static int peers_save(void)
{
	json_object *arr = json_object_new_array();
	char tmp[600];
	int ret = 0;

	pthread_mutex_lock(&dir.mu);
	for (const struct dent *e = dir.ents; e; e = e->next)
		if (e->kind == K_EXT) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "ip", json_object_new_string(e->id));
			json_object_object_add(o, "tenant", json_object_new_string(e->tenant));
			json_object_array_add(arr, o);
		}
	pthread_mutex_unlock(&dir.mu);
	snprintf(tmp, sizeof(tmp), "%s.tmp", dir.peers_path);
	if (json_object_to_file_ext(tmp, arr, JSON_C_TO_STRING_PRETTY) || rename(tmp, dir.peers_path)) {
		ret = -EIO;
		log_err("cannot write %s", dir.peers_path);
		unlink(tmp);
	}
	json_object_put(arr);
	return ret;
}

static void peers_load(struct urd_daemon *d)
{
	json_object *arr;
	size_t n;

	if (access(dir.peers_path, F_OK))
		return;
	arr = json_object_from_file(dir.peers_path);
	if (!arr || !json_object_is_type(arr, json_type_array)) {
		log_warn("%s is not a JSON array: no peers admitted from it", dir.peers_path);
		json_object_put(arr);
		return;
	}
	n = json_object_array_length(arr);
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&dir.mu);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		const char *ip = jstr(o, "ip"), *tenant = jstr(o, "tenant");
		struct dent *e = calloc(1, sizeof(*e));
		uint32_t a;

		if (!e)
			break;
		if (!parse_ip(ip, &a) || !tenant || !valid_name(tenant) || ent_find(dir.ents, K_EXT, ip)) {
			log_warn("%s: entry %zu is bad or repeated: skipped", dir.peers_path, i);
			free(e);
			continue;
		}
		e->kind = K_EXT;
		e->ip = a;
		snprintf(e->id, sizeof(e->id), "%s", ip);
		snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
		e->next = dir.ents;
		dir.ents = e;
		engine_apply_put(d, e, NULL);
		log_info("external peer %s admitted in tenant %s (%s)", ip, tenant, dir.peers_path);
	}
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	json_object_put(arr);
}

/* ---- publishing this host's GIDs ----------------------------------------- */


static void pub_value(struct pub *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "host", json_object_new_string(dir.host));
	json_object_object_add(o, "tenant", json_object_new_string(p->tenant));
	json_object_object_add(o, "vrnic", json_object_new_string(p->vrnic));
	snprintf(p->value, sizeof(p->value), "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

/* The holder of a gids/ value, if it parses. */
static void value_host(const char *value, char *host, size_t len)
{
	json_object *o = value ? json_tokener_parse(value) : NULL;
	const char *h = jstr(o, "host");

	snprintf(host, len, "%s", h && valid_host(h) ? h : "?");
	json_object_put(o);
}

/* Put gids/<ip> for p under lease: create-if-absent, or take over our own
 * entry (an earlier session's or incarnation's).  1 published, 0 held by
 * another host (p->other), -errno. */
static int gid_claim(CURL **cp, struct pub *p, int64_t lease, long timeout_ms, char *err, size_t errlen)
{
	char key[128], ipb[INET_ADDRSTRLEN], *cur = NULL, holder[HOST_NAME_LEN + 1];
	int ret;

	snprintf(key, sizeof(key), DIR_PREFIX "gids/%s", ip_str(p->ip, ipb));
	for (int tries = 0; tries < 3; tries++) {
		ret = txn_put_if(cp, key, NULL, p->value, lease, timeout_ms, &cur, err, errlen);
		if (ret)
			return ret;
		if (!cur)
			continue;       /* deleted in between: try again */
		value_host(cur, holder, sizeof(holder));
		if (strcmp(holder, dir.host)) {
			snprintf(p->other, sizeof(p->other), "%s", holder);
			free(cur);
			return 0;
		}
		ret = txn_put_if(cp, key, cur, p->value, lease, timeout_ms, NULL, err, errlen);
		free(cur);
		if (ret)
			return ret;
	}
	snprintf(err, errlen, "%s keeps changing", key);
	return -EAGAIN;
}

struct local_vr {
	uint32_t ip;
	char name[URD_NAME_MAX + 1], tenant[URD_NAME_MAX + 1];
};

/* Publish what the local vRNICs need and withdraw what they no longer do. */
static int reconcile(CURL **cp, int64_t lease)
{
	static uint64_t passes;
	uint64_t pass = ++passes;
	struct urd_daemon *d = dir.d;
	struct local_vr *lv = calloc(URD_MAX_VRNICS, sizeof(*lv));
	int n = 0, ret = 0;
	char err[256];

	if (!lv)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];

		if (!vr)
			continue;
		lv[n].ip = vr->vip;
		snprintf(lv[n].name, sizeof(lv[n].name), "%s", vr->name);
		snprintf(lv[n].tenant, sizeof(lv[n].tenant), "%s", vr->tenant);
		n++;
	}
	pthread_mutex_lock(&dir.mu);
	dir.kick = false;
	for (struct pub *p = dir.pubs; p; p = p->next)
		p->live = false;
	for (int i = 0; i < n; i++) {
		struct pub *p = pub_find(lv[i].ip);

		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p)
				break;
			p->ip = lv[i].ip;
			p->next = dir.pubs;
			dir.pubs = p;
		}
		if (strcmp(p->tenant, lv[i].tenant) || strcmp(p->vrnic, lv[i].name)) {
			snprintf(p->tenant, sizeof(p->tenant), "%s", lv[i].tenant);
			snprintf(p->vrnic, sizeof(p->vrnic), "%s", lv[i].name);
			p->state = PUB_WANT;
		}
		p->live = true;
	}
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	free(lv);

	/* one entry at a time, dir.mu not held across the calls */
	for (;;) {
		struct pub work, *p;
		bool withdraw = false, found = false;
		char key[128], ipb[INET_ADDRSTRLEN];
		int r;

		pthread_mutex_lock(&dir.mu);
		for (p = dir.pubs; p; p = p->next) {
			if (p->pass == pass)
				continue;
			if (!p->live && !p->claims) {
				withdraw = found = true;
				break;
			}
			if (p->live && p->state != PUB_DONE) {
				found = true;
				break;
			}
		}
		if (found) {
			if (!withdraw && !p->value[0])
				pub_value(p);
			if (!withdraw && p->state == PUB_WANT) {
				/* value may be stale after a rename of tenant: rebuild */
				pub_value(p);
			}
			p->pass = pass;
			work = *p;
		}
		pthread_mutex_unlock(&dir.mu);
		if (!found)
			break;
		snprintf(key, sizeof(key), DIR_PREFIX "gids/%s", ip_str(work.ip, ipb));
		if (withdraw) {
			/* only our own value: another host may hold it (a conflict) */
			r = work.state == PUB_CONFLICT || !work.value[0] ? 0 :
			    txn_put_if(cp, key, work.value, NULL, 0, CALL_TIMEOUT_MS, NULL, err, sizeof(err));
			if (r < 0 && r != -EPROTO) {
				ret = r;
				set_error("withdrawing %s: %s", key, err);
				break;
			}
			pthread_mutex_lock(&dir.mu);
			for (struct pub **pp = &dir.pubs; *pp; pp = &(*pp)->next)
				if ((*pp)->ip == work.ip && !(*pp)->live && !(*pp)->claims) {
					struct pub *x = *pp;

					*pp = x->next;
					free(x);
					break;
				}
			pthread_mutex_unlock(&dir.mu);
			if (r == 1)
				log_info("cluster: %s withdrawn", key);
			continue;
		}
		r = gid_claim(cp, &work, lease, CALL_TIMEOUT_MS, err, sizeof(err));
		if (r < 0) {
			ret = r;
			set_error("publishing %s: %s", key, err);
			break;
		}
		pthread_mutex_lock(&dir.mu);
		p = pub_find(work.ip);
		if (p && p->live && !strcmp(p->value, work.value)) {
			if (r == 0 && p->state != PUB_CONFLICT)
				log_err("cluster: conflict: vRNIC %s's address %s is served by host %s; not published",
					work.vrnic, ipb, work.other);
			else if (r == 1)
				log_info("cluster: vRNIC %s published as %s", work.vrnic, key);
			p->state = r == 1 ? PUB_DONE : PUB_CONFLICT;
			snprintf(p->other, sizeof(p->other), "%s", r ? "" : work.other);
		} else if (p && p->live) {
			dir.kick = true;        /* it changed meanwhile: another pass */
		}
		pthread_mutex_unlock(&dir.mu);
		if (r == 0)
			continue;       /* a conflict: the others still get their turn */
	}
	return ret;
}

/* ---- the watch ------------------------------------------------------------ */

struct watch_ctx {
	json_tokener *tok;
	size_t pending;                 /* bytes fed to the current object */
	bool bad;                       /* resync needed */
};

static void watch_message(json_object *msg, struct watch_ctx *w)
{
	struct urd_daemon *d = dir.d;
	struct update {
		char *key;
		struct dent *e;
		bool del, apply;
	} *ups;
	json_object *res, *evs, *hdr;
	int64_t rev = 0, compact = 0;
	size_t n;

	if (!json_object_object_get_ex(msg, "result", &res) || !json_object_is_type(res, json_type_object)) {
		set_error("watch: %.150s", json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
		w->bad = true;
		return;
	}
	if ((jint64(res, "compact_revision", &compact) && compact > 0) ||
	    (json_object_object_get_ex(res, "canceled", &hdr) && json_object_get_boolean(hdr))) {
		set_error("watch canceled (compacted at %" PRId64 "): reading everything again", compact);
		w->bad = true;
		return;
	}
	if (json_object_object_get_ex(res, "header", &hdr))
		jint64(hdr, "revision", &rev);
	if (!json_object_object_get_ex(res, "events", &evs) || !json_object_is_type(evs, json_type_array)) {
		pthread_mutex_lock(&dir.mu);
		if (rev > dir.revision)
			dir.revision = rev;
		pthread_mutex_unlock(&dir.mu);
		return;
	}
	/* parsed first, applied under the big lock after: the lock is held
	 * for the tables' updates only */
	n = json_object_array_length(evs);
	ups = calloc(n ? n : 1, sizeof(*ups));
	if (!ups) {
		w->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i), *kv;
		const char *type = jstr(ev, "type");
		int r;

		ups[i].del = type && !strcmp(type, "DELETE");
		if (!json_object_object_get_ex(ev, "kv", &kv))
			continue;
		r = kv_parse(kv, ups[i].del, &ups[i].key, &ups[i].e);
		ups[i].apply = ups[i].key && (r >= 0 || r == -EINVAL);     /* a bad value counts as absent */
		if (r != 1) {
			free(ups[i].e);
			ups[i].e = NULL;
		}
	}
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&dir.mu);
	for (size_t i = 0; i < n; i++) {
		if (ups[i].apply) {
			model_update(d, ups[i].key, ups[i].e);
			ups[i].e = NULL;
		}
		if (ups[i].key && ups[i].del && dir.qpn_k) {
			char qk[64];

			snprintf(qk, sizeof(qk), DIR_PREFIX "qpn/%u", dir.qpn_k);
			if (!strcmp(ups[i].key, qk))
				dir.rejoin = true;      /* our QPN range must be ours again */
		}
	}
	if (rev > dir.revision)
		dir.revision = rev;
	if (dir.kick || dir.rejoin)
		pthread_cond_signal(&dir.cv);
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; i < n; i++) {
		free(ups[i].key);
		free(ups[i].e);
	}
	free(ups);
}

static size_t watch_write(char *ptr, size_t sz, size_t nm, void *ud)
{
	struct watch_ctx *w = ud;
	size_t n = sz * nm, off = 0;

	while (off < n) {
		json_object *o = json_tokener_parse_ex(w->tok, ptr + off, (int)(n - off > 1 << 20 ? 1 << 20 : n - off));
		enum json_tokener_error e = json_tokener_get_error(w->tok);
		size_t used = json_tokener_get_parse_end(w->tok);

		if (!o && e == json_tokener_continue) {
			w->pending += used;
			off += used;
			if (w->pending > MAX_ANSWER) {
				set_error("watch: a message over %u bytes", MAX_ANSWER);
				return 0;
			}
			continue;
		}
		if (!o) {
			/* whitespace between messages parses as nothing: skip it */
			if (ptr[off] == '\n' || ptr[off] == '\r' || ptr[off] == ' ') {
				json_tokener_reset(w->tok);
				off++;
				continue;
			}
			set_error("watch: bad JSON from etcd: %s", json_tokener_error_desc(e));
			return 0;
		}
		off += used;
		w->pending = 0;
		json_tokener_reset(w->tok);
		if (json_object_is_type(o, json_type_object))
			watch_message(o, w);
		json_object_put(o);
		if (w->bad)
			return 0;
	}
	return n;
}

static int watch_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t e)
{
	bool stop;

	(void)ud, (void)a, (void)b, (void)c, (void)e;
	pthread_mutex_lock(&dir.mu);
	stop = dir.watch_stop || dir.stop;
	pthread_mutex_unlock(&dir.mu);
	return stop;
}

/* The watch's transfer, run on a multi handle so that a stop wakes it at once
 * (curl_multi_wakeup in watch_wake); an easy perform would only look at the
 * progress callback about once a second, and every stop or new session of
 * the daemon would wait for that. */
static CURLcode watch_run(CURL *c)
{
	CURLM *m = curl_multi_init();
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	CURLMsg *msg;
	int running = 1, left;

	if (!m || curl_multi_add_handle(m, c) != CURLM_OK) {
		if (m)
			curl_multi_cleanup(m);
		return rc;
	}
	pthread_mutex_lock(&dir.mu);
	dir.watch_multi = m;
	pthread_mutex_unlock(&dir.mu);
	rc = CURLE_ABORTED_BY_CALLBACK;
	while (running && !watch_progress(NULL, 0, 0, 0, 0)) {
		if (curl_multi_perform(m, &running) != CURLM_OK ||
		    (running && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK)) {
			rc = CURLE_RECV_ERROR;
			break;
		}
	}
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	pthread_mutex_lock(&dir.mu);
	dir.watch_multi = NULL;
	pthread_mutex_unlock(&dir.mu);
	curl_multi_remove_handle(m, c);
	curl_multi_cleanup(m);
	return rc;
}

/* Under dir.mu, after setting stop or watch_stop. */
static void watch_wake(void)
{
	if (dir.watch_multi)
		curl_multi_wakeup(dir.watch_multi);
}

static void *watch_main(void *arg)
{
	struct watch_ctx w = { .tok = json_tokener_new() };
	json_object *req = json_object_new_object(), *cr = kv_req(DIR_PREFIX);
	CURL *c = curl_easy_init();
	char url[512], end[] = DIR_PREFIX;
	CURLcode rc = CURLE_OK;

	(void)arg;
	end[strlen(end) - 1]++;
	add_b64(cr, "range_end", end);
	pthread_mutex_lock(&dir.mu);
	add_i64s(cr, "start_revision", dir.watch_from);
	snprintf(url, sizeof(url), "%s/v3/watch", dir.eps[dir.cur_ep]);
	pthread_mutex_unlock(&dir.mu);
	json_object_object_add(req, "create_request", cr);
	if (c && w.tok) {
		curl_setup(c, url, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), 1000);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
		rc = watch_run(c);
	}
	pthread_mutex_lock(&dir.mu);
	if (!dir.watch_stop && !dir.stop && !w.bad)
		snprintf(dir.last_error, sizeof(dir.last_error), "watch ended: %s", curl_easy_strerror(rc));
	dir.watch_running = false;
	pthread_cond_signal(&dir.cv);
	pthread_mutex_unlock(&dir.mu);
	json_object_put(req);
	if (w.tok)
		json_tokener_free(w.tok);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* ---- sessions ------------------------------------------------------------- */

static int lease_grant(CURL **cp, int64_t *id, char *err, size_t errlen)
{
	json_object *req = json_object_new_object(), *resp;
	int64_t ttl = 0;
	int ret;

	json_object_object_add(req, "TTL", json_object_new_int(LEASE_TTL_S));
	ret = etcd_post(cp, "/v3/lease/grant", req, CALL_TIMEOUT_MS, &resp, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	if (!jint64(resp, "ID", id) || *id <= 0 || !jint64(resp, "TTL", &ttl) || ttl <= 0) {
		snprintf(err, errlen, "lease grant: no ID or TTL in the answer");
		ret = -EPROTO;
	}
	json_object_put(resp);
	return ret;
}

/* 0: alive; -ENOENT: the lease is gone; -errno: etcd not reachable. */
static int lease_keepalive(CURL **cp, int64_t id, char *err, size_t errlen)
{
	json_object *req = json_object_new_object(), *resp, *res;
	int64_t ttl = 0;
	int ret;

	add_i64s(req, "ID", id);
	ret = etcd_post(cp, "/v3/lease/keepalive", req, CALL_TIMEOUT_MS, &resp, err, errlen);
	json_object_put(req);
	if (ret)
		return ret;
	if (!json_object_object_get_ex(resp, "result", &res) || !jint64(res, "TTL", &ttl) || ttl <= 0) {
		snprintf(err, errlen, "lease %" PRId64 " expired", id);
		ret = -ENOENT;
	}
	json_object_put(resp);
	return ret;
}

/* A QPN range: the one we had (or any of ours left from an earlier
 * incarnation), else a free one from a random start. */
static int qpn_claim(CURL **cp, int64_t lease, uint32_t *kout, char *err, size_t errlen)
{
	bool taken[QPN_RANGES] = { false };
	uint32_t mine = 0, start, prefer;
	json_object *resp, *kvs;
	int ret;

	ret = etcd_range(cp, DIR_PREFIX "qpn/", 0, &resp, err, errlen);
	if (ret)
		return ret;
	if (json_object_object_get_ex(resp, "kvs", &kvs) && json_object_is_type(kvs, json_type_array))
		for (size_t i = 0; i < json_object_array_length(kvs); i++) {
			json_object *kv = json_object_array_get_idx(kvs, i);
			const char *k64 = jstr(kv, "key"), *v64 = jstr(kv, "value");
			char *key = k64 ? b64_dec(k64, NULL) : NULL, *val = v64 ? b64_dec(v64, NULL) : NULL, *end;
			unsigned long k = key ? strtoul(key + strlen(DIR_PREFIX "qpn/"), &end, 10) : 0;

			if (key && *end == 0 && k >= 1 && k < QPN_RANGES) {
				taken[k] = true;
				if (val && !strcmp(val, dir.host) && !mine)
					mine = (uint32_t)k;
			}
			free(key);
			free(val);
		}
	json_object_put(resp);
	pthread_mutex_lock(&dir.mu);
	prefer = dir.qpn_k;
	pthread_mutex_unlock(&dir.mu);
	if (!prefer)
		prefer = mine;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint32_t)rand();
	for (uint32_t i = 0; i < QPN_RANGES; i++) {
		uint32_t k = i == 0 && prefer ? prefer : 1 + (start + i) % (QPN_RANGES - 1);
		char key[64], *cur = NULL;

		if (k != prefer && taken[k])
			continue;
		snprintf(key, sizeof(key), DIR_PREFIX "qpn/%u", k);
		ret = txn_put_if(cp, key, NULL, dir.host, lease, CALL_TIMEOUT_MS, &cur, err, errlen);
		if (ret == 0 && cur && !strcmp(cur, dir.host))
			ret = txn_put_if(cp, key, dir.host, dir.host, lease, CALL_TIMEOUT_MS, NULL, err, errlen);
		free(cur);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			*kout = k;
			return 0;
		}
	}
	snprintf(err, errlen, "all %d QPN ranges are taken", QPN_RANGES - 1);
	return -ENOSPC;
}

static int put_host(CURL **cp, int64_t lease, uint32_t k, char *err, size_t errlen)
{
	json_object *o = json_object_new_object();
	char inc[17], started[32], key[128], ip[INET_ADDRSTRLEN];
	struct tm tm;
	int ret;

	pthread_mutex_lock(&dir.mu);
	if (engine_wire_on(dir.d))
		ip_str(engine_wire_ip(dir.d), ip);
	else
		snprintf(ip, sizeof(ip), "%s", dir.self_ip[0] ? dir.self_ip : "127.0.0.1");
	pthread_mutex_unlock(&dir.mu);
	snprintf(inc, sizeof(inc), "%016" PRIx64, dir.incarnation);
	gmtime_r(&dir.started, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(o, "ip", json_object_new_string(ip));
	json_object_object_add(o, "incarnation", json_object_new_string(inc));
	json_object_object_add(o, "qpn_base", json_object_new_int64((int64_t)k << QPN_BITS));
	json_object_object_add(o, "qpn_bits", json_object_new_int(QPN_BITS));
	json_object_object_add(o, "started", json_object_new_string(started));
	snprintf(key, sizeof(key), DIR_PREFIX "hosts/%s", dir.host);
	ret = etcd_put(cp, key, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), lease, CALL_TIMEOUT_MS,
		       err, errlen);
	json_object_put(o);
	return ret;
}

/* The lease our previous incarnation's host entry is under, if any: revoked
 * once we hold everything again, so that its leftovers go at once. */
static int64_t old_lease(CURL **cp)
{
	json_object *req = kv_req(DIR_PREFIX "hosts/"), *resp, *kvs;
	char key[128], err[128];
	int64_t l = 0;

	snprintf(key, sizeof(key), DIR_PREFIX "hosts/%s", dir.host);
	json_object_put(req);
	req = kv_req(key);
	if (!etcd_post(cp, "/v3/kv/range", req, CALL_TIMEOUT_MS, &resp, err, sizeof(err))) {
		if (json_object_object_get_ex(resp, "kvs", &kvs) && json_object_is_type(kvs, json_type_array) &&
		    json_object_array_length(kvs) == 1)
			jint64(json_object_array_get_idx(kvs, 0), "lease", &l);
		json_object_put(resp);
	}
	json_object_put(req);
	return l;
}

/* A range answer of the whole prefix into the engine (what vanished goes). */
static int snapshot_apply(json_object *resp, int64_t *rev, char *err, size_t errlen)
{
	struct urd_daemon *d = dir.d;
	json_object *kvs, *hdr;
	struct dent *ents = NULL;

	if (!json_object_object_get_ex(resp, "header", &hdr) || !jint64(hdr, "revision", rev) || *rev <= 0) {
		snprintf(err, errlen, "range: no revision in the answer");
		return -EPROTO;
	}
	if (json_object_object_get_ex(resp, "kvs", &kvs) && json_object_is_type(kvs, json_type_array))
		for (size_t i = 0; i < json_object_array_length(kvs); i++) {
			struct dent *e;
			char *key;

			if (kv_parse(json_object_array_get_idx(kvs, i), false, &key, &e) == 1 &&
			    !ent_find(ents, e->kind, e->id)) {
				e->next = ents;
				ents = e;
			} else {
				free(e);
			}
			free(key);
		}
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&dir.mu);
	model_replace(d, ents);
	dir.revision = *rev;
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* The whole prefix at one revision into the engine.  *rev: that revision. */
static int snapshot(CURL **cp, int64_t *rev, char *err, size_t errlen)
{
	json_object *resp;
	int ret;

	ret = etcd_range(cp, DIR_PREFIX, 0, &resp, err, errlen);
	if (ret)
		return ret;
	ret = snapshot_apply(resp, rev, err, errlen);
	json_object_put(resp);
	return ret;
}

static void watch_stop_join(void)
{
	pthread_mutex_lock(&dir.mu);
	dir.watch_stop = true;
	watch_wake();
	pthread_mutex_unlock(&dir.mu);
	pthread_join(dir.watcher, NULL);
}

/* One session, until etcd fails us or we stop.  Returns after cleaning up. */
static void session(CURL **cp)
{
	int64_t lease = 0, rev = 0, prev;
	uint32_t k = 0;
	char err[256];
	bool watching = false;
	int ret;

	prev = old_lease(cp);
	ret = lease_grant(cp, &lease, err, sizeof(err));
	if (!ret)
		ret = qpn_claim(cp, lease, &k, err, sizeof(err));
	if (!ret) {
		pthread_mutex_lock(&dir.d->lock);
		qpn_range_set(dir.d, k << QPN_BITS, 1u << QPN_BITS);
		pthread_mutex_unlock(&dir.d->lock);
		pthread_mutex_lock(&dir.mu);
		if (dir.qpn_k != k)
			log_info("cluster: QPN range %u: [0x%06x, 0x%06x)", k, k << QPN_BITS, (k + 1) << QPN_BITS);
		dir.qpn_k = k;
		dir.lease = lease;
		pthread_mutex_unlock(&dir.mu);
		ret = put_host(cp, lease, k, err, sizeof(err));
	}
	if (!ret) {
		/* every GID again under this lease */
		pthread_mutex_lock(&dir.mu);
		for (struct pub *p = dir.pubs; p; p = p->next)
			if (p->state == PUB_DONE)
				p->state = PUB_WANT;
		pthread_mutex_unlock(&dir.mu);
		ret = reconcile(cp, lease);
		if (ret)
			snprintf(err, sizeof(err), "%s", dir.last_error);
	}
	if (!ret && prev && prev != lease)
		lease_revoke(cp, prev);
	if (!ret)
		ret = snapshot(cp, &rev, err, sizeof(err));
	if (ret) {
		set_error("%s", err);
		goto out;
	}
	pthread_mutex_lock(&dir.mu);
	dir.sessions++;
	dir.reachable = true;
	dir.last_error[0] = 0;
	dir.watch_from = rev + 1;
	dir.watch_stop = false;
	dir.watch_running = true;
	pthread_mutex_unlock(&dir.mu);
	if (pthread_create(&dir.watcher, NULL, watch_main, NULL)) {
		set_error("cannot start the watch thread");
		goto out;
	}
	watching = true;
	log_info("cluster: joined as %s (lease %" PRIx64 ", revision %" PRId64 ")", dir.host, (uint64_t)lease, rev);

	for (uint64_t next = urd_now_ns() + KEEPALIVE_MS * 1000000ull;;) {
		struct timespec ts;
		bool kick, conflicts = false;

		pthread_mutex_lock(&dir.mu);
		while (!dir.stop && !dir.kick && !dir.rejoin && dir.watch_running && urd_now_ns() < next) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 100 * 1000000;
			if (ts.tv_nsec >= 1000000000)
				ts.tv_sec++, ts.tv_nsec -= 1000000000;
			pthread_cond_timedwait(&dir.cv, &dir.mu, &ts);
		}
		kick = dir.kick || dir.rejoin;
		for (struct pub *p = dir.pubs; p; p = p->next)
			conflicts |= p->state == PUB_CONFLICT && p->live;
		if (dir.rejoin) {
			log_warn("cluster: this host's entries were deleted in etcd: joining again");
			dir.rejoin = false;
			pthread_mutex_unlock(&dir.mu);
			break;
		}
		if (dir.stop || !dir.watch_running) {
			pthread_mutex_unlock(&dir.mu);
			break;
		}
		pthread_mutex_unlock(&dir.mu);
		if (kick && reconcile(cp, lease))
			break;
		if (urd_now_ns() >= next) {
			next = urd_now_ns() + KEEPALIVE_MS * 1000000ull;
			ret = lease_keepalive(cp, lease, err, sizeof(err));
			if (ret) {
				set_error("%s", err);
				break;
			}
			if (conflicts && reconcile(cp, lease))
				break;
		}
	}
out:
	if (watching)
		watch_stop_join();
	pthread_mutex_lock(&dir.mu);
	if (!dir.stop) {
		dir.reachable = false;
		if (!dir.last_error[0])
			snprintf(dir.last_error, sizeof(dir.last_error), "session ended");
	}
	bool stopping = dir.stop;
	pthread_mutex_unlock(&dir.mu);
	if (stopping && lease)
		lease_revoke(cp, lease);        /* peers forget us at once */
}

static void *dir_main(void *arg)
{
	CURL *c = NULL;
	long backoff = 100;

	(void)arg;
	for (;;) {
		uint64_t t0 = urd_now_ns();
		struct timespec ts;
		bool stop;

		session(&c);
		pthread_mutex_lock(&dir.mu);
		stop = dir.stop;
		pthread_mutex_unlock(&dir.mu);
		if (stop)
			break;
		/* a session that lasted is a fresh start; quick failures back off */
		backoff = urd_now_ns() - t0 > 5000000000ull ? 100 : (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += backoff / 1000;
		ts.tv_nsec += (backoff % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000)
			ts.tv_sec++, ts.tv_nsec -= 1000000000;
		pthread_mutex_lock(&dir.mu);
		while (!dir.stop && pthread_cond_timedwait(&dir.cv, &dir.mu, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&dir.mu);
	}
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* ---- the daemon's side ----------------------------------------------------- */

int directory_init(struct urd_daemon *d, const char *cluster, const char *host_name, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	char hn[256];

	dir.d = d;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dir.cv, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(dir.peers_path, sizeof(dir.peers_path), "%s/peers.json", d->state_dir);
	if (!host_name) {
		if (gethostname(hn, sizeof(hn)))
			snprintf(hn, sizeof(hn), "localhost");
		hn[sizeof(hn) - 1] = 0;
		host_name = hn;
	}
	if (!valid_host(host_name) && !cluster)
		host_name = "localhost";        /* a lone daemon's name is only shown */
	if (!valid_host(host_name)) {
		snprintf(err, errlen, "host name '%.80s' is not 1-63 of [A-Za-z0-9._-] (and not ext-*): use --host-name",
			 host_name);
		return -EINVAL;
	}
	snprintf(dir.host, sizeof(dir.host), "%.63s", host_name);
	if (getrandom(&dir.incarnation, sizeof(dir.incarnation), 0) != sizeof(dir.incarnation))
		dir.incarnation = (uint64_t)rand() << 32 ^ (uint64_t)rand() ^ urd_now_ns();
	dir.started = time(NULL);
	if (!cluster) {
		peers_load(d);
		return 0;
	}
	for (const char *p = cluster; *p;) {
		size_t n = strcspn(p, ",");

		if (n) {
			if (dir.neps == MAX_ENDPOINTS || n > 200 ||
			    (strncmp(p, "http://", 7) && strncmp(p, "https://", 8))) {
				snprintf(err, errlen, "--cluster: up to %d http(s):// URLs separated by commas", MAX_ENDPOINTS);
				return -EINVAL;
			}
			dir.eps[dir.neps] = strndup(p, n);
			if (!dir.eps[dir.neps])
				return -ENOMEM;
			while (strlen(dir.eps[dir.neps]) && dir.eps[dir.neps][strlen(dir.eps[dir.neps]) - 1] == '/')
				dir.eps[dir.neps][strlen(dir.eps[dir.neps]) - 1] = 0;
			dir.neps++;
		}
		p += n + (p[n] == ',');
	}
	if (!dir.neps) {
		snprintf(err, errlen, "--cluster: no endpoint");
		return -EINVAL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl did not initialize");
		return -EIO;
	}
	dir.clustered = true;
	snprintf(dir.last_error, sizeof(dir.last_error), "not connected yet");
	return 0;
}

int directory_start(struct urd_daemon *d)
{
	int ret;

	(void)d;
	if (!dir.clustered)
		return 0;
	ret = pthread_create(&dir.thread, NULL, dir_main, NULL);
	if (ret)
		return -ret;
	pthread_setname_np(dir.thread, "urd-directory");
	dir.thread_started = true;
	return 0;
}

void directory_stop(struct urd_daemon *d)
{
	(void)d;
	if (!dir.thread_started)
		return;
	pthread_mutex_lock(&dir.mu);
	dir.stop = true;
	watch_wake();
	pthread_cond_broadcast(&dir.cv);
	pthread_mutex_unlock(&dir.mu);
	pthread_join(dir.thread, NULL);
	dir.thread_started = false;
	for (int i = 0; i < dir.neps; i++)
		free(dir.eps[i]);
	dir.neps = 0;
	ents_free(dir.ents);
	dir.ents = NULL;
	while (dir.pubs) {
		struct pub *n = dir.pubs->next;

		free(dir.pubs);
		dir.pubs = n;
	}
	curl_global_cleanup();
}

static void kick(void)
{
	pthread_mutex_lock(&dir.mu);
	dir.kick = true;
	pthread_cond_signal(&dir.cv);
	pthread_mutex_unlock(&dir.mu);
}

void directory_vrnic_added(struct urd_daemon *d, struct urd_vrnic *vr)
{
	(void)d, (void)vr;
	if (dir.clustered)
		kick();
}

void directory_vrnic_removed(struct urd_daemon *d, struct urd_vrnic *vr)
{
	(void)d, (void)vr;
	if (dir.clustered)
		kick();
}

/* The vRNIC's address from a vrnic.create request ("A.B.C.D/P"). */
static bool req_ip(json_object *req, uint32_t *ip)
{
	const char *s = jstr(req, "ip");
	char buf[INET_ADDRSTRLEN];
	size_t n;

	if (!s || !(n = strcspn(s, "/")) || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	return parse_ip(buf, ip);
}

int directory_vrnic_claim(struct urd_daemon *d, json_object *req, char *err, size_t errlen)
{
	const char *name = jstr(req, "name"), *tenant = jstr(req, "tenant");
	const char *cmd = jstr(req, "cmd");
	bool set = cmd && !strcmp(cmd, "vrnic.set");            /* a new address */
	char ipb[INET_ADDRSTRLEN], e2[256], tbuf[URD_NAME_MAX + 1];
	struct urd_vrnic *vr;
	struct pub *p, work;
	int64_t lease;
	uint32_t ip;
	bool mine;
	int ret;

	if (!dir.clustered || !name || !valid_name(name) || !req_ip(req, &ip) ||
	    (!set && (!tenant || !valid_name(tenant))))
		return 0;       /* vrnic_create / vrnic.set judges the request */
	/* cluster-wide, an address is one GID: one vRNIC, whatever its tenant */
	pthread_mutex_lock(&d->lock);
	vr = vrnic_find(d, name);
	if (set ? !vr || vr->vip == ip || vr->nctx : !!vr) {
		pthread_mutex_unlock(&d->lock);
		return 0;               /* refused (EEXIST, ENOENT, EBUSY) or nothing to claim */
	}
	if (set) {
		snprintf(tbuf, sizeof(tbuf), "%s", vr->tenant);
		tenant = tbuf;
	}
	mine = false;
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i] && d->vrnics[i]->vip == ip)
			mine = true;
	pthread_mutex_lock(&dir.mu);
	{
		const struct dent *x = ent_find(dir.ents, K_EXT, ip_str(ip, ipb));

		if (x)
			snprintf(err, errlen, "address %s is an admitted external peer's (tenant %s)", ipb, x->tenant);
		if (x)
			mine = true;
		else if (mine)
			snprintf(err, errlen, "address %s is already a vRNIC's on this host", ipb);
	}
	p = mine ? NULL : pub_find(ip);
	if (!mine && !p) {
		p = calloc(1, sizeof(*p));
		if (p) {
			p->ip = ip;
			p->next = dir.pubs;
			dir.pubs = p;
		}
	}
	if (p) {
		p->claims++;
		snprintf(p->tenant, sizeof(p->tenant), "%s", tenant);
		snprintf(p->vrnic, sizeof(p->vrnic), "%s", name);
		p->state = PUB_WANT;
		pub_value(p);
		work = *p;
	}
	lease = dir.lease;
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	if (mine)
		return -EADDRINUSE;
	if (!p)
		return -ENOMEM;
	if (!lease)
		return 0;               /* no session yet: published when there is one */
	ret = gid_claim(NULL, &work, lease, CLAIM_TIMEOUT_MS, e2, sizeof(e2));
	pthread_mutex_lock(&dir.mu);
	p = pub_find(ip);
	if (ret == 0) {
		snprintf(err, errlen, "address %s is served by host %s in the cluster", ipb, work.other);
		if (p)
			p->claims--;    /* withdrawn by the reconcile (nothing of ours to delete) */
		if (p && p->state == PUB_WANT && !p->live)
			p->state = PUB_CONFLICT;
		dir.kick = true;
		pthread_cond_signal(&dir.cv);
		pthread_mutex_unlock(&dir.mu);
		return -EADDRINUSE;
	}
	if (ret == 1 && p && !strcmp(p->value, work.value))
		p->state = PUB_DONE;
	pthread_mutex_unlock(&dir.mu);
	if (ret < 0)
		log_warn("cluster: vRNIC %s: etcd did not answer (%s): created, published later", name, e2);
	return 0;
}

void directory_vrnic_claim_done(struct urd_daemon *d, json_object *req)
{
	struct pub *p;
	uint32_t ip;

	(void)d;
	if (!dir.clustered || !req_ip(req, &ip))
		return;
	pthread_mutex_lock(&dir.mu);
	p = pub_find(ip);
	if (p && p->claims > 0)
		p->claims--;
	dir.kick = true;
	pthread_cond_signal(&dir.cv);
	pthread_mutex_unlock(&dir.mu);
}

json_object *directory_vrnic_json(const struct urd_vrnic *vr)
{
	json_object *o;
	struct pub *p;

	if (!dir.clustered)
		return NULL;
	o = json_object_new_object();
	pthread_mutex_lock(&dir.mu);
	p = pub_find(vr->vip);
	json_object_object_add(o, "state", json_object_new_string(
		!p || p->state == PUB_WANT ? "pending" : p->state == PUB_DONE ? "published" : "conflict"));
	if (p && p->state == PUB_CONFLICT)
		json_object_object_add(o, "served_by", json_object_new_string(p->other));
	pthread_mutex_unlock(&dir.mu);
	return o;
}

/* ---- admin commands ---------------------------------------------------- */

static json_object *err_json(int e, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "errno", json_object_new_int(e));
	json_object_object_add(o, "error", json_object_new_string(msg ? msg : strerror(e)));
	return o;
}

static json_object *ok_json(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

#define ADD_U64(o, k, v) json_object_object_add((o), (k), json_object_new_int64((int64_t)(v)))

static json_object *counters_json(const struct wire_counters *c)
{
	json_object *o = json_object_new_object(), *x;

	ADD_U64(o, "tx_packets", c->tx_pkts);
	ADD_U64(o, "tx_bytes", c->tx_bytes);
	ADD_U64(o, "rx_packets", c->rx_pkts);
	ADD_U64(o, "rx_bytes", c->rx_bytes);
	ADD_U64(o, "retransmits", c->retransmits);
	ADD_U64(o, "timeouts", c->timeouts);
	ADD_U64(o, "tail_probes", c->tail_probes);
	ADD_U64(o, "held", c->held);
	ADD_U64(o, "acks_tx", c->acks_tx);
	ADD_U64(o, "acks_rx", c->acks_rx);
	x = json_object_new_object();
	for (int i = 0; i < WNAK_NUM; i++)
		ADD_U64(x, wire_nak_names[i], c->naks_tx[i]);
	json_object_object_add(o, "naks_tx", x);
	x = json_object_new_object();
	for (int i = 0; i < WNAK_NUM; i++)
		ADD_U64(x, wire_nak_names[i], c->naks_rx[i]);
	json_object_object_add(o, "naks_rx", x);
	x = json_object_new_object();
	for (int i = 0; i < WDROP_NUM; i++)
		ADD_U64(x, wire_drop_names[i], c->drops[i]);
	json_object_object_add(o, "drops", x);
	return o;
}

struct gids_arg {
	json_object *arr;
	uint32_t n;
	const char *host;               /* count only this host's, or NULL */
	const char *tenant;             /* the tenant of the one host (externals) */
};

static void gid_json(void *arg, const uint8_t gid[16], const char *tenant, const struct engine_host *h)
{
	struct gids_arg *a = arg;
	char ipb[INET_ADDRSTRLEN], g[64];
	uint32_t ip;
	json_object *o;

	if (a->host) {
		if (!strcmp(h->name, a->host)) {
			a->n++;
			a->tenant = tenant;
		}
		return;
	}
	a->n++;
	if (!a->arr)
		return;
	memcpy(&ip, gid + 12, 4);
	ip_str(ip, ipb);
	snprintf(g, sizeof(g), "::ffff:%s", ipb);
	o = json_object_new_object();
	json_object_object_add(o, "gid", json_object_new_string(g));
	json_object_object_add(o, "ip", json_object_new_string(ipb));
	json_object_object_add(o, "tenant", json_object_new_string(tenant));
	json_object_object_add(o, "host", json_object_new_string(h->name));
	json_object_object_add(o, "external", json_object_new_boolean(h->external));
	json_object_array_add(a->arr, o);
}

static json_object *hosts_json(struct urd_daemon *d)
{
	json_object *ok = ok_json(), *arr = json_object_new_array();

	pthread_mutex_lock(&d->lock);
	for (const struct engine_host *h = engine_hosts(d); h; h = h->next) {
		json_object *o = json_object_new_object();
		char ipb[INET_ADDRSTRLEN], inc[17];
		struct gids_arg a = { .host = h->name };

		engine_gids_each(d, gid_json, &a);
		snprintf(inc, sizeof(inc), "%016" PRIx64, h->incarnation);
		json_object_object_add(o, "name", json_object_new_string(h->name));
		json_object_object_add(o, "ip", json_object_new_string(ip_str(h->ip, ipb)));
		json_object_object_add(o, "incarnation", json_object_new_string(inc));
		json_object_object_add(o, "external", json_object_new_boolean(h->external));
		if (h->external && a.tenant)
			json_object_object_add(o, "tenant", json_object_new_string(a.tenant));
		json_object_object_add(o, "gids", json_object_new_int((int)a.n));
		json_object_object_add(o, "counters", counters_json(&h->cnt));
		json_object_array_add(arr, o);
	}
	json_object_object_add(ok, "local", json_object_new_string(dir.host));
	json_object_object_add(ok, "hosts", arr);
	json_object_object_add(ok, "unattributed", counters_json(engine_wire_counters(d)));
	if (engine_wire_on(d)) {
		struct engine_wire_stats ws;
		json_object *w = json_object_new_object();
		char ipb[INET_ADDRSTRLEN];

		engine_wire_stats(d, &ws);
		json_object_object_add(w, "dev", json_object_new_string(engine_wire_dev(d)));
		json_object_object_add(w, "ip", json_object_new_string(ip_str(engine_wire_ip(d), ipb)));
		ADD_U64(w, "tx_calls", ws.tx_calls);
		ADD_U64(w, "tx_packets", ws.tx_pkts);
		ADD_U64(w, "rx_calls", ws.rx_calls);
		ADD_U64(w, "rx_packets", ws.rx_pkts);
		ADD_U64(w, "tx_dropped", ws.tx_dropped);
		ADD_U64(w, "tx_gso_trains", ws.tx_gso_sends);
		ADD_U64(w, "rx_gro_trains", ws.rx_gro_trains);
		ADD_U64(w, "rx_placed_packets", ws.rx_placed_pkts);
		ADD_U64(w, "rx_placed_bytes", ws.rx_placed_bytes);
		ADD_U64(w, "rx_place_misses", ws.rx_place_misses);
		ADD_U64(w, "held_buffer_bytes", ws.held_bytes);
		ADD_U64(w, "held_buffer_qps", ws.held_qps);
		json_object_object_add(ok, "underlay", w);
	}
	pthread_mutex_unlock(&d->lock);
	return ok;
}

static json_object *cluster_json(struct urd_daemon *d, bool gids)
{
	json_object *ok = ok_json(), *eps = json_object_new_array(), *loc;
	struct gids_arg a = { .arr = gids ? json_object_new_array() : NULL };
	char inc[17];

	pthread_mutex_lock(&d->lock);
	engine_gids_each(d, gid_json, &a);
	pthread_mutex_lock(&dir.mu);
	snprintf(inc, sizeof(inc), "%016" PRIx64, dir.incarnation);
	json_object_object_add(ok, "host", json_object_new_string(dir.host));
	json_object_object_add(ok, "clustered", json_object_new_boolean(dir.clustered));
	json_object_object_add(ok, "incarnation", json_object_new_string(inc));
	for (int i = 0; i < dir.neps; i++)
		json_object_array_add(eps, json_object_new_string(dir.eps[i]));
	json_object_object_add(ok, "endpoints", eps);
	json_object_object_add(ok, "reachable", json_object_new_boolean(dir.reachable));
	if (dir.clustered) {
		char l[24];

		snprintf(l, sizeof(l), "%016" PRIx64, (uint64_t)dir.lease);
		json_object_object_add(ok, "lease", json_object_new_string(dir.lease ? l : ""));
		json_object_object_add(ok, "lease_ttl_s", json_object_new_int(LEASE_TTL_S));
		ADD_U64(ok, "revision", dir.revision);
		ADD_U64(ok, "sessions", dir.sessions);
		json_object_object_add(ok, "last_error", json_object_new_string(dir.last_error));
	}
	ADD_U64(ok, "qpn_range", dir.qpn_k);
	ADD_U64(ok, "qpn_base", dir.qpn_k ? dir.qpn_k << QPN_BITS : 0);
	ADD_U64(ok, "qpn_span", dir.qpn_k ? 1u << QPN_BITS : 1u << 24);
	ADD_U64(ok, "remote_gids", a.n);
	ADD_U64(ok, "skipped_entries", dir.skipped);
	if (gids) {
		json_object_object_add(ok, "remote", a.arr);
		loc = json_object_new_array();
		for (int i = 0; i < URD_MAX_VRNICS; i++) {
			const struct urd_vrnic *vr = d->vrnics[i];
			struct pub *p;
			json_object *o;
			char ipb[INET_ADDRSTRLEN];

			if (!vr)
				continue;
			p = pub_find(vr->vip);
			o = json_object_new_object();
			json_object_object_add(o, "ip", json_object_new_string(ip_str(vr->vip, ipb)));
			json_object_object_add(o, "vrnic", json_object_new_string(vr->name));
			json_object_object_add(o, "tenant", json_object_new_string(vr->tenant));
			json_object_object_add(o, "state", json_object_new_string(!dir.clustered ? "local" :
				!p || p->state == PUB_WANT ? "pending" : p->state == PUB_DONE ? "published" : "conflict"));
			json_object_array_add(loc, o);
		}
		json_object_object_add(ok, "local", loc);
	}
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	return ok;
}

static json_object *peer_admin(struct urd_daemon *d, json_object *req, bool admit)
{
	const char *ips = jstr(req, "ip"), *tenant = jstr(req, "tenant");
	char err[256], key[128], value[128];
	struct dent *e = NULL;
	uint32_t ip;
	int ret = 0;

	if (!parse_ip(ips, &ip))
		return err_json(EINVAL, "\"ip\" must be a unicast IPv4 address A.B.C.D");
	if (admit && (!tenant || !valid_name(tenant)))
		return err_json(EINVAL, "\"tenant\" must be 1-32 of [A-Za-z0-9_-]");
	pthread_mutex_lock(&d->lock);
	for (int i = 0; admit && i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i] && d->vrnics[i]->vip == ip)
			ret = -EADDRINUSE;
	pthread_mutex_lock(&dir.mu);
	{
		const struct dent *g = ent_find(dir.ents, K_GID, ips);

		if (admit && g)
			ret = -EADDRINUSE;
		if (!admit && !ent_find(dir.ents, K_EXT, ips) && !dir.clustered)
			ret = -ENOENT;
	}
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	if (ret == -EADDRINUSE)
		return err_json(EADDRINUSE, "the address is a vRNIC's (of this host or of the cluster)");
	if (ret == -ENOENT)
		return err_json(ENOENT, "no such admitted peer");
	if (admit) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return err_json(ENOMEM, NULL);
		e->kind = K_EXT;
		e->ip = ip;
		snprintf(e->id, sizeof(e->id), "%s", ips);
		snprintf(e->tenant, sizeof(e->tenant), "%s", tenant);
	}
	snprintf(key, sizeof(key), DIR_PREFIX "external/%s", ips);
	if (dir.clustered) {
		if (admit) {
			json_object *v = json_object_new_object();

			json_object_object_add(v, "tenant", json_object_new_string(tenant));
			snprintf(value, sizeof(value), "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			json_object_put(v);
			ret = etcd_put(NULL, key, value, 0, CLAIM_TIMEOUT_MS, err, sizeof(err));
		} else {
			json_object *r = kv_req(key), *resp;
			int64_t deleted = 0;

			ret = etcd_post(NULL, "/v3/kv/deleterange", r, CLAIM_TIMEOUT_MS, &resp, err, sizeof(err));
			json_object_put(r);
			if (!ret && (!jint64(resp, "deleted", &deleted) || !deleted))
				ret = -ENOENT;
			json_object_put(resp);
			if (ret == -ENOENT) {
				free(e);
				return err_json(ENOENT, "no such admitted peer");
			}
		}
		if (ret) {
			char msg[320];

			snprintf(msg, sizeof(msg), "the cluster directory did not take it: %s", err);
			free(e);
			return err_json(ret == -EHOSTUNREACH ? EHOSTUNREACH : EIO, msg);
		}
	}
	/* the engine at once (the watch brings the same) */
	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&dir.mu);
	model_update(d, key, e);
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
	if (!dir.clustered && peers_save())
		return err_json(EIO, "admitted, but STATE/peers.json could not be written");
	log_info("external peer %s %s%s%s", ips, admit ? "admitted in tenant " : "removed", admit ? tenant : "",
		 dir.clustered ? " (cluster)" : "");
	return ok_json();
}

json_object *directory_admin(struct urd_daemon *d, json_object *req, const char *cmd)
{
	if (!cmd)
		return NULL;
	if (!strcmp(cmd, "peer.admit"))
		return peer_admin(d, req, true);
	if (!strcmp(cmd, "peer.remove"))
		return peer_admin(d, req, false);
	if (!strcmp(cmd, "hosts"))
		return hosts_json(d);
	if (!strcmp(cmd, "cluster"))
		return cluster_json(d, false);
	if (!strcmp(cmd, "cluster.gids"))
		return cluster_json(d, true);
	return NULL;
}

/* ---- the fuzz harness's way in (tests/fuzz/fuzz_dir.c) -------------------- */

void directory_fuzz_begin(struct urd_daemon *d, const char *host)
{
	dir.d = d;
	snprintf(dir.host, sizeof(dir.host), "%s", host);
}

void directory_fuzz_range(const char *data, size_t n)
{
	json_tokener *tok = json_tokener_new();
	json_object *o = tok ? json_tokener_parse_ex(tok, data, (int)n) : NULL;
	char err[128];
	int64_t rev;

	if (o && json_object_is_type(o, json_type_object))
		snapshot_apply(o, &rev, err, sizeof(err));
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
}

/* Bytes of a watch stream, in pieces as curl may hand them over; false when
 * the stream would have been dropped (bad JSON, a cancel: a resync). */
bool directory_fuzz_watch(const char *data, size_t n, size_t piece)
{
	struct watch_ctx w = { .tok = json_tokener_new() };
	bool ok = true;

	for (size_t off = 0; w.tok && off < n && ok; off += piece ? piece : n) {
		size_t len = piece && n - off > piece ? piece : n - off;

		ok = watch_write((char *)data + off, 1, len, &w) == len;
	}
	if (w.tok)
		json_tokener_free(w.tok);
	return ok;
}

void directory_fuzz_end(void)
{
	struct urd_daemon *d = dir.d;

	pthread_mutex_lock(&d->lock);
	pthread_mutex_lock(&dir.mu);
	model_replace(d, NULL);
	while (dir.pubs) {
		struct pub *n = dir.pubs->next;

		free(dir.pubs);
		dir.pubs = n;
	}
	dir.revision = 0;
	dir.kick = dir.rejoin = false;
	pthread_mutex_unlock(&dir.mu);
	pthread_mutex_unlock(&d->lock);
}

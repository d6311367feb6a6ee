/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Prometheus text-format metrics on a local HTTP endpoint (libmicrohttpd):
 * per-vRNIC traffic by opcode, errors, RNR, retries, cross-tenant drops,
 * rate-limiter delays, object counts and memory; per-QP traffic totals; the
 * engine's copied bytes.  GET /metrics only; it listens on loopback unless the
 * operator says otherwise (--metrics ADDR:PORT).  The page names every tenant:
 * only a client that sends the bearer token (STATE/metrics.token, root and
 * the admin group may read it; or --metrics-token-file) gets it, others 401. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon.h"
#include "directory.h"
#include "log.h"
#include "unirdma/opcode.h"

static struct MHD_Daemon *mhd;
static int bound_port;

struct family {
	const char *name, *type, *help;
	size_t off;                     /* of a uint64_t in struct urd_counters */
	double scale;
};

#define CNT(f) offsetof(struct urd_counters, f)

static const struct family vr_families[] = {
	{ "unirdma_errors_total", "counter", "Work requests completed in error.", CNT(errors), 1 },
	{ "unirdma_rnr_naks_total", "counter", "Receiver-not-ready answers the vRNIC gave.", CNT(rnr_naks), 1 },
	{ "unirdma_retries_total", "counter", "Transport retries (peer silent).", CNT(retries), 1 },
	{ "unirdma_drops_other_tenant_total", "counter", "Requests to another tenant, dropped.",
	  CNT(drops_other_tenant), 1 },
	{ "unirdma_qos_delays_total", "counter", "Times a work request waited for the rate limiter.",
	  CNT(qos_delays), 1 },
	{ "unirdma_qos_delay_seconds_total", "counter", "Time work requests waited for the rate limiter.",
	  CNT(qos_delay_ns), 1e-9 },
};

static uint64_t field(const struct urd_counters *c, size_t off)
{
	return *(const uint64_t *)((const char *)c + off);
}

/* What the page shows, copied under the big lock and formatted without it:
 * the copy is a few hundred bytes per vRNIC and 24 per QP, the formatting
 * (tens of KiB of text) is not done while the engine and the control plane
 * wait. */
struct snap_qp {
	uint32_t qpn;
	uint64_t tx_bytes, rx_bytes;
};

struct snap_vr {
	char name[URD_NAME_MAX + 1], tenant[URD_NAME_MAX + 1];
	struct urd_counters cnt;
	uint32_t nobj[6];               /* context, pd, mr, cq, qp, srq */
	uint64_t mem_used;
	struct snap_qp *qps;
	uint32_t nqps;
};

/* a peer host of the fabric (engine_hosts) */
struct snap_host {
	char name[ENGINE_HOST_NAME_MAX + 1];
	bool external;
	struct wire_counters cnt;
};

struct snap {
	struct snap_vr *vr;
	uint32_t nvr;
	uint64_t copied_bytes;
	struct snap_host *hosts;
	uint32_t nhosts;
	struct wire_counters unattributed;      /* packets of no known host */
	struct engine_wire_stats wire;          /* the underlay's (zero without one) */
};

static void snap_free(struct snap *s)
{
	for (uint32_t i = 0; i < s->nvr; i++)
		free(s->vr[i].qps);
	free(s->vr);
	free(s->hosts);
}

static int snap_take(struct urd_daemon *d, struct snap *s)
{
	int ret = 0;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&d->lock);
	s->vr = calloc(URD_MAX_VRNICS, sizeof(*s->vr));
	if (!s->vr) {
		ret = -ENOMEM;
		goto unlock;
	}
	s->copied_bytes = d->eng.copied_bytes;
	s->unattributed = *engine_wire_counters(d);
	engine_wire_stats(d, &s->wire);
	for (const struct engine_host *h = engine_hosts(d); h; h = h->next)
		s->nhosts++;
	s->hosts = calloc(s->nhosts ? s->nhosts : 1, sizeof(*s->hosts));
	if (!s->hosts) {
		ret = -ENOMEM;
		goto unlock;
	}
	s->nhosts = 0;
	for (const struct engine_host *h = engine_hosts(d); h; h = h->next) {
		struct snap_host *o = &s->hosts[s->nhosts++];

		memcpy(o->name, h->name, sizeof(o->name));
		o->external = h->external;
		o->cnt = h->cnt;
	}
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];
		struct snap_vr *o = &s->vr[s->nvr];

		if (!vr)
			continue;
		s->nvr++;
		memcpy(o->name, vr->name, sizeof(o->name));
		memcpy(o->tenant, vr->tenant, sizeof(o->tenant));
		o->cnt = vr->cnt;
		o->nobj[0] = vr->nctx, o->nobj[1] = vr->npd, o->nobj[2] = vr->nmr;
		o->nobj[3] = vr->ncq, o->nobj[4] = vr->nqp, o->nobj[5] = vr->nsrq;
		o->mem_used = vr->memwin.used;
		if (!vr->nqp)
			continue;
		o->qps = malloc(vr->nqp * sizeof(*o->qps));
		if (!o->qps) {
			ret = -ENOMEM;
			goto unlock;
		}
		/* nqp counts the slots in use: stop at the last one */
		for (uint32_t q = 0; q < URD_MAX_QP_SLOTS && o->nqps < vr->nqp; q++) {
			const struct vr_qp *qp = vr->qp_slots[q];

			if (qp)
				o->qps[o->nqps++] = (struct snap_qp){ qp->qpn, qp->cnt.tx_bytes, qp->cnt.rx_bytes };
		}
	}
unlock:
	pthread_mutex_unlock(&d->lock);
	if (ret)
		snap_free(s);
	return ret;
}

static void by_opcode(FILE *f, const struct snap *s, const char *name, const char *help, bool tx, bool bytes)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (uint32_t i = 0; i < s->nvr; i++) {
		const struct snap_vr *vr = &s->vr[i];

		for (int op = 0; op < URD_WR_NUM_OPCODES; op++) {
			const uint64_t *v = tx ? (bytes ? vr->cnt.tx_op_bytes : vr->cnt.tx_op_ops)
					       : (bytes ? vr->cnt.rx_op_bytes : vr->cnt.rx_op_ops);

			fprintf(f, "%s{vrnic=\"%s\",tenant=\"%s\",opcode=\"%s\"} %llu\n", name, vr->name,
				vr->tenant, urd_opcodes[op].name, (unsigned long long)v[op]);
		}
	}
}

#define WCNT(x) offsetof(struct wire_counters, x)

static const struct family wire_fams[] = {
	{ "unirdma_wire_tx_packets_total", "counter", "RoCEv2 packets sent to the host's GIDs.", WCNT(tx_pkts), 1 },
	{ "unirdma_wire_tx_bytes_total", "counter", "UDP payload bytes sent to the host's GIDs.", WCNT(tx_bytes), 1 },
	{ "unirdma_wire_rx_packets_total", "counter", "RoCEv2 packets received from the host's GIDs.", WCNT(rx_pkts), 1 },
	{ "unirdma_wire_rx_bytes_total", "counter", "UDP payload bytes received from the host's GIDs.", WCNT(rx_bytes), 1 },
	{ "unirdma_wire_retransmits_total", "counter", "Packets sent again to the host (timeout or NAK).",
	  WCNT(retransmits), 1 },
	{ "unirdma_wire_timeouts_total", "counter", "Retransmission timer expiries for the host.", WCNT(timeouts), 1 },
	{ "unirdma_wire_tail_probes_total", "counter", "Tail-loss probes: last packets sent again to the host.",
	  WCNT(tail_probes), 1 },
	{ "unirdma_wire_held_total", "counter",
	  "Packets from the host after a gap, held until it was filled (only its lost packets came again).",
	  WCNT(held), 1 },
	{ "unirdma_wire_acks_tx_total", "counter", "ACKs sent to the host.", WCNT(acks_tx), 1 },
	{ "unirdma_wire_acks_rx_total", "counter", "ACKs received from the host.", WCNT(acks_rx), 1 },
};

static uint64_t wfield(const struct wire_counters *c, size_t off)
{
	return *(const uint64_t *)((const char *)c + off);
}

/* Per peer host of the fabric (label host=, external=), and the drops of
 * packets that belong to no known host. */
static void wire_families(FILE *f, const struct snap *s)
{
	for (size_t k = 0; k < sizeof(wire_fams) / sizeof(wire_fams[0]); k++) {
		const struct family *fam = &wire_fams[k];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
		for (uint32_t i = 0; i < s->nhosts; i++)
			fprintf(f, "%s{host=\"%s\",external=\"%s\"} %llu\n", fam->name, s->hosts[i].name,
				s->hosts[i].external ? "true" : "false",
				(unsigned long long)wfield(&s->hosts[i].cnt, fam->off));
	}
	fprintf(f, "# HELP unirdma_wire_naks_tx_total NAKs sent to the host, by syndrome.\n"
		   "# TYPE unirdma_wire_naks_tx_total counter\n");
	for (uint32_t i = 0; i < s->nhosts; i++)
		for (int n = 0; n < WNAK_NUM; n++)
			fprintf(f, "unirdma_wire_naks_tx_total{host=\"%s\",syndrome=\"%s\"} %llu\n", s->hosts[i].name,
				wire_nak_names[n], (unsigned long long)s->hosts[i].cnt.naks_tx[n]);
	fprintf(f, "# HELP unirdma_wire_naks_rx_total NAKs received from the host, by syndrome.\n"
		   "# TYPE unirdma_wire_naks_rx_total counter\n");
	for (uint32_t i = 0; i < s->nhosts; i++)
		for (int n = 0; n < WNAK_NUM; n++)
			fprintf(f, "unirdma_wire_naks_rx_total{host=\"%s\",syndrome=\"%s\"} %llu\n", s->hosts[i].name,
				wire_nak_names[n], (unsigned long long)s->hosts[i].cnt.naks_rx[n]);
	fprintf(f, "# HELP unirdma_wire_drops_total Packets from the host's GIDs dropped, by reason.\n"
		   "# TYPE unirdma_wire_drops_total counter\n");
	for (uint32_t i = 0; i < s->nhosts; i++)
		for (int r = 0; r < WDROP_NUM; r++)
			fprintf(f, "unirdma_wire_drops_total{host=\"%s\",reason=\"%s\"} %llu\n", s->hosts[i].name,
				wire_drop_names[r], (unsigned long long)s->hosts[i].cnt.drops[r]);
	fprintf(f, "# HELP unirdma_wire_unattributed_drops_total Packets of no known host dropped, by reason.\n"
		   "# TYPE unirdma_wire_unattributed_drops_total counter\n");
	for (int r = 0; r < WDROP_NUM; r++)
		fprintf(f, "unirdma_wire_unattributed_drops_total{reason=\"%s\"} %llu\n", wire_drop_names[r],
			(unsigned long long)s->unattributed.drops[r]);
	fprintf(f, "# HELP unirdma_wire_held_buffer_bytes Buffers of packets held after a gap, all QPs.\n"
		   "# TYPE unirdma_wire_held_buffer_bytes gauge\n"
		   "unirdma_wire_held_buffer_bytes %llu\n"
		   "# HELP unirdma_wire_held_buffer_qps QPs with a buffer of packets held after a gap.\n"
		   "# TYPE unirdma_wire_held_buffer_qps gauge\n"
		   "unirdma_wire_held_buffer_qps %llu\n"
		   "# HELP unirdma_wire_rx_placed_packets_total Packets whose payload the kernel put straight into registered memory.\n"
		   "# TYPE unirdma_wire_rx_placed_packets_total counter\n"
		   "unirdma_wire_rx_placed_packets_total %llu\n"
		   "# HELP unirdma_wire_rx_placed_bytes_total Payload bytes the kernel put straight into registered memory.\n"
		   "# TYPE unirdma_wire_rx_placed_bytes_total counter\n"
		   "unirdma_wire_rx_placed_bytes_total %llu\n"
		   "# HELP unirdma_wire_rx_place_misses_total Packets placed but not the one predicted (put back together, copied).\n"
		   "# TYPE unirdma_wire_rx_place_misses_total counter\n"
		   "unirdma_wire_rx_place_misses_total %llu\n",
		(unsigned long long)s->wire.held_bytes, (unsigned long long)s->wire.held_qps,
		(unsigned long long)s->wire.rx_placed_pkts, (unsigned long long)s->wire.rx_placed_bytes,
		(unsigned long long)s->wire.rx_place_misses);
}

static char *render(const struct snap *s)
{
	static const char *const obj_kind[6] = { "context", "pd", "mr", "cq", "qp", "srq" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	by_opcode(f, s, "unirdma_tx_bytes_total", "Bytes of requests the vRNIC initiated.", true, true);
	by_opcode(f, s, "unirdma_tx_ops_total", "Requests the vRNIC initiated.", true, false);
	by_opcode(f, s, "unirdma_rx_bytes_total", "Bytes of requests the vRNIC served as responder.", false, true);
	by_opcode(f, s, "unirdma_rx_ops_total", "Requests the vRNIC served as responder.", false, false);
	for (size_t k = 0; k < sizeof(vr_families) / sizeof(vr_families[0]); k++) {
		const struct family *fam = &vr_families[k];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
		for (uint32_t i = 0; i < s->nvr; i++)
			fprintf(f, "%s{vrnic=\"%s\",tenant=\"%s\"} %.9g\n", fam->name, s->vr[i].name, s->vr[i].tenant,
				(double)field(&s->vr[i].cnt, fam->off) * fam->scale);
	}
	fprintf(f, "# HELP unirdma_objects Verbs objects a vRNIC holds.\n# TYPE unirdma_objects gauge\n");
	for (uint32_t i = 0; i < s->nvr; i++)
		for (size_t k = 0; k < 6; k++)
			fprintf(f, "unirdma_objects{vrnic=\"%s\",tenant=\"%s\",kind=\"%s\"} %u\n", s->vr[i].name,
				s->vr[i].tenant, obj_kind[k], s->vr[i].nobj[k]);
	fprintf(f, "# HELP unirdma_registered_bytes Bytes of the vRNIC's memory window in use.\n"
		   "# TYPE unirdma_registered_bytes gauge\n");
	for (uint32_t i = 0; i < s->nvr; i++)
		fprintf(f, "unirdma_registered_bytes{vrnic=\"%s\",tenant=\"%s\"} %llu\n", s->vr[i].name,
			s->vr[i].tenant, (unsigned long long)s->vr[i].mem_used);
	fprintf(f, "# HELP unirdma_qp_tx_bytes_total Bytes a QP initiated.\n# TYPE unirdma_qp_tx_bytes_total counter\n");
	fprintf(f, "# HELP unirdma_qp_rx_bytes_total Bytes a QP served.\n# TYPE unirdma_qp_rx_bytes_total counter\n");
	for (uint32_t i = 0; i < s->nvr; i++) {
		const struct snap_vr *vr = &s->vr[i];

		for (uint32_t q = 0; q < vr->nqps; q++) {
			fprintf(f, "unirdma_qp_tx_bytes_total{vrnic=\"%s\",qpn=\"%u\"} %llu\n", vr->name, vr->qps[q].qpn,
				(unsigned long long)vr->qps[q].tx_bytes);
			fprintf(f, "unirdma_qp_rx_bytes_total{vrnic=\"%s\",qpn=\"%u\"} %llu\n", vr->name, vr->qps[q].qpn,
				(unsigned long long)vr->qps[q].rx_bytes);
		}
	}
	wire_families(f, s);
	fprintf(f, "# HELP unirdma_engine_copied_bytes_total Bytes the engine moved between memory regions.\n"
		   "# TYPE unirdma_engine_copied_bytes_total counter\nunirdma_engine_copied_bytes_total %llu\n",
		(unsigned long long)s->copied_bytes);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *metrics_render(struct urd_daemon *d)
{
	struct snap s;
	char *page;

	if (snap_take(d, &s))
		return NULL;
	page = render(&s);
	snap_free(&s);
	return page;
}

/* ---- who may read it: a bearer token -------------------------------------- */

#define TOKEN_MAX 256

static char token[TOKEN_MAX + 1];
static size_t token_len;
static char token_path[512];            /* the file we wrote, removed at stop */

/* Constant time in the token's bytes: the answer's timing tells a guesser
 * nothing about how much of a guess was right. */
static bool token_ok(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned char diff;
	size_t n;

	if (!h || strncasecmp(h, "Bearer ", 7))
		return false;
	for (h += 7; *h == ' '; h++)
		;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	diff = n != token_len;
	for (size_t i = 0; i < token_len; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < n ? h[i] : 0);
	return token_len && !diff;
}

/* A token is 16..256 printable characters without spaces (it travels in an
 * HTTP header); surrounding white space in the file is ignored. */
static int token_read(const char *path)
{
	char buf[TOKEN_MAX + 2];
	size_t n, start = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < 0)
		return -errno;
	n = (size_t)r;
	while (n && isspace((unsigned char)buf[n - 1]))
		n--;
	while (start < n && isspace((unsigned char)buf[start]))
		start++;
	if (n - start < 16 || n - start > TOKEN_MAX)
		return -EINVAL;
	for (size_t i = start; i < n; i++)
		if (!isgraph((unsigned char)buf[i]))
			return -EINVAL;
	memcpy(token, buf + start, n - start);
	token_len = n - start;
	token[token_len] = 0;
	return 0;
}

/* A fresh random token in STATE/metrics.token, mode 0640, group = the admin
 * group if there is one: root and the admin group may scrape.  Written to a
 * new file and renamed, so a planted file or link is replaced, not followed. */
static int token_make(struct urd_daemon *d)
{
	unsigned char rnd[32];
	char tmp[512];
	int fd, ret = 0;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	token_len = 2 * sizeof(rnd);
	if ((size_t)snprintf(token_path, sizeof(token_path), "%s/metrics.token", d->state_dir) >= sizeof(token_path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.metrics.token.XXXXXX", d->state_dir) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	if ((d->admin_gid_set && fchown(fd, (uid_t)-1, d->admin_gid)) || fchmod(fd, 0640) ||
	    dprintf(fd, "%s\n", token) != (int)token_len + 1)
		ret = errno ? -errno : -EIO;
	close(fd);
	if (!ret && rename(tmp, token_path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		token_path[0] = 0;
	}
	return ret;
}

static void metrics_forget_token(void)
{
	if (token_path[0])
		unlink(token_path);
	token_path[0] = 0;
	explicit_bzero(token, sizeof(token));
	token_len = 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version URD_UNUSED, const char *upload URD_UNUSED,
			      size_t *upload_size URD_UNUSED, void **con_cls URD_UNUSED)
{
	struct urd_daemon *d = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body;
	unsigned int status = MHD_HTTP_OK;

	if (strcmp(method, "GET")) {
		static char msg[] = "only GET\n";

		r = MHD_create_response_from_buffer(sizeof(msg) - 1, msg, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		static char msg[] = "not found: try /metrics\n";

		r = MHD_create_response_from_buffer(sizeof(msg) - 1, msg, MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_NOT_FOUND;
	} else if (!token_ok(c)) {
		static char msg[] = "unauthorized: send \"Authorization: Bearer TOKEN\" with the token of "
				    "STATE/metrics.token or --metrics-token-file\n";

		r = MHD_create_response_from_buffer(sizeof(msg) - 1, msg, MHD_RESPMEM_PERSISTENT);
		if (r)
			MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"unirdma\"");
		status = MHD_HTTP_UNAUTHORIZED;
	} else {
		body = metrics_render(d);
		if (!body)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	}
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* listen_addr: "A.B.C.D:PORT" (PORT 0: any free port, see metrics_port()).
 * token_file: the token scrapers must send; NULL: make one (token_make). */
int metrics_start(struct urd_daemon *d, const char *listen_addr, const char *token_file)
{
	struct sockaddr_in sa;
	char host[64];
	const char *colon = strrchr(listen_addr, ':');
	char *end;
	long port;
	const union MHD_DaemonInfo *info;
	int ret;

	if (!colon || (size_t)(colon - listen_addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, listen_addr, (size_t)(colon - listen_addr));
	host[colon - listen_addr] = 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	ret = token_file ? token_read(token_file) : token_make(d);
	if (ret) {
		log_warn("metrics: no token (%s: %s): the endpoint stays off", token_file ? token_file : "metrics.token",
			 ret == -EINVAL ? "16 to 256 printable characters expected" : strerror(-ret));
		return ret;
	}
	mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
			       answer, d, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			       MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_END);
	if (!mhd) {
		metrics_forget_token();
		return -EADDRINUSE;
	}
	info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT);
	bound_port = info ? info->port : (int)port;
	return 0;
}

int metrics_port(void)
{
	return mhd ? bound_port : 0;
}

const char *metrics_token_file(void)
{
	return mhd && token_path[0] ? token_path : NULL;
}

void metrics_stop(void)
{
	if (mhd)
		MHD_stop_daemon(mhd);
	mhd = NULL;
	metrics_forget_token();
}

/* Prometheus text-format metrics on a local HTTP endpoint (libmicrohttpd):
 * per-vRNIC traffic by opcode, errors, RNR, retries, cross-tenant drops,
 * rate-limiter delays, object counts and memory; per-QP traffic totals; the
 * engine's copied bytes.  GET /metrics only; it listens on loopback unless the
 * operator says otherwise (--metrics ADDR:PORT). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "daemon.h"
#include "log.h"

static struct MHD_Daemon *mhd;
static int bound_port;

static const char *const op_label[URD_WR_NUM_OPCODES] = {
	"rdma_write", "rdma_write_imm", "send", "send_imm", "rdma_read", "atomic_cmp_swp", "atomic_fetch_add",
};

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

static void by_opcode(FILE *f, struct urd_daemon *d, const char *name, const char *help, bool tx, bool bytes)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];

		if (!vr)
			continue;
		for (int op = 0; op < URD_WR_NUM_OPCODES; op++) {
			const uint64_t *v = tx ? (bytes ? vr->cnt.tx_op_bytes : vr->cnt.tx_op_ops)
					       : (bytes ? vr->cnt.rx_op_bytes : vr->cnt.rx_op_ops);

			fprintf(f, "%s{vrnic=\"%s\",tenant=\"%s\",opcode=\"%s\"} %llu\n", name, vr->name,
				vr->tenant, op_label[op], (unsigned long long)v[op]);
		}
	}
}

char *metrics_render(struct urd_daemon *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	by_opcode(f, d, "unirdma_tx_bytes_total", "Bytes of requests the vRNIC initiated.", true, true);
	by_opcode(f, d, "unirdma_tx_ops_total", "Requests the vRNIC initiated.", true, false);
	by_opcode(f, d, "unirdma_rx_bytes_total", "Bytes of requests the vRNIC served as responder.", false, true);
	by_opcode(f, d, "unirdma_rx_ops_total", "Requests the vRNIC served as responder.", false, false);
	for (size_t k = 0; k < sizeof(vr_families) / sizeof(vr_families[0]); k++) {
		const struct family *fam = &vr_families[k];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
		for (int i = 0; i < URD_MAX_VRNICS; i++) {
			const struct urd_vrnic *vr = d->vrnics[i];

			if (vr)
				fprintf(f, "%s{vrnic=\"%s\",tenant=\"%s\"} %.9g\n", fam->name, vr->name, vr->tenant,
					(double)field(&vr->cnt, fam->off) * fam->scale);
		}
	}
	fprintf(f, "# HELP unirdma_objects Verbs objects a vRNIC holds.\n# TYPE unirdma_objects gauge\n");
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];
		const struct { const char *k; uint32_t v; } objs[] = {
			{ "context", vr ? vr->nctx : 0 }, { "pd", vr ? vr->npd : 0 }, { "mr", vr ? vr->nmr : 0 },
			{ "cq", vr ? vr->ncq : 0 }, { "qp", vr ? vr->nqp : 0 }, { "srq", vr ? vr->nsrq : 0 },
		};

		if (!vr)
			continue;
		for (size_t k = 0; k < sizeof(objs) / sizeof(objs[0]); k++)
			fprintf(f, "unirdma_objects{vrnic=\"%s\",tenant=\"%s\",kind=\"%s\"} %u\n", vr->name,
				vr->tenant, objs[k].k, objs[k].v);
	}
	fprintf(f, "# HELP unirdma_registered_bytes Bytes of the vRNIC's memory window in use.\n"
		   "# TYPE unirdma_registered_bytes gauge\n");
	for (int i = 0; i < URD_MAX_VRNICS; i++)
		if (d->vrnics[i])
			fprintf(f, "unirdma_registered_bytes{vrnic=\"%s\",tenant=\"%s\"} %llu\n", d->vrnics[i]->name,
				d->vrnics[i]->tenant, (unsigned long long)d->vrnics[i]->memwin.used);
	fprintf(f, "# HELP unirdma_qp_tx_bytes_total Bytes a QP initiated.\n# TYPE unirdma_qp_tx_bytes_total counter\n");
	fprintf(f, "# HELP unirdma_qp_rx_bytes_total Bytes a QP served.\n# TYPE unirdma_qp_rx_bytes_total counter\n");
	for (int i = 0; i < URD_MAX_VRNICS; i++) {
		const struct urd_vrnic *vr = d->vrnics[i];

		if (!vr)
			continue;
		for (uint32_t q = 0; q < URD_MAX_QP_SLOTS; q++) {
			const struct urd_qp *qp = vr->qp_slots[q];

			if (!qp)
				continue;
			fprintf(f, "unirdma_qp_tx_bytes_total{vrnic=\"%s\",qpn=\"%u\"} %llu\n", vr->name, qp->qpn,
				(unsigned long long)qp->cnt.tx_bytes);
			fprintf(f, "unirdma_qp_rx_bytes_total{vrnic=\"%s\",qpn=\"%u\"} %llu\n", vr->name, qp->qpn,
				(unsigned long long)qp->cnt.rx_bytes);
		}
	}
	fprintf(f, "# HELP unirdma_engine_copied_bytes_total Bytes the engine moved between memory regions.\n"
		   "# TYPE unirdma_engine_copied_bytes_total counter\nunirdma_engine_copied_bytes_total %llu\n",
		(unsigned long long)d->copied_bytes);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
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
	} else {
		pthread_mutex_lock(&d->lock);
		body = metrics_render(d);
		pthread_mutex_unlock(&d->lock);
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

/* listen_addr: "A.B.C.D:PORT" (PORT 0: any free port, see metrics_port()). */
int metrics_start(struct urd_daemon *d, const char *listen_addr)
{
	struct sockaddr_in sa;
	char host[64];
	const char *colon = strrchr(listen_addr, ':');
	char *end;
	long port;
	const union MHD_DaemonInfo *info;

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
	mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
			       answer, d, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			       MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_END);
	if (!mhd)
		return -EADDRINUSE;
	info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT);
	bound_port = info ? info->port : (int)port;
	return 0;
}

int metrics_port(void)
{
	return mhd ? bound_port : 0;
}

void metrics_stop(void)
{
	if (mhd)
		MHD_stop_daemon(mhd);
	mhd = NULL;
}

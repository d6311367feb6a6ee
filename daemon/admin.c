/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The admin socket: STATE/admin.sock, one JSON request per connection, one
 * JSON answer.  Only root (and --admin-group) may manage vRNICs: the peer's
 * credentials are checked at accept and anyone else gets one refusal at once.
 * A request must arrive whole within 2 s of accept; admitted clients are
 * served concurrently.  Everything a client sends is size-limited and parsed
 * by json-c; bad input gets {"ok":false,"errno":N,"error":"..."} and changes
 * nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>
#include <infiniband/verbs.h>

#include "daemon.h"
#include "directory.h"
#include "futex.h"
#include "log.h"
#include "unirdma/opcode.h"

#define ADMIN_MAX_REQ 65536
#define ADMIN_DEADLINE_MS 2000          /* for a whole request, from accept */
#define ADMIN_MAX_CLIENTS 16            /* admitted clients served at once */

static int listen_fd = -1;
static pthread_t admin_thread;
static struct urd_daemon *admin_d;

#define ADD_I64(o, k, v) json_object_object_add((o), (k), json_object_new_int64((int64_t)(v)))

static json_object *counters_json(const struct urd_counters *c)
{
	json_object *o = json_object_new_object(), *by = json_object_new_object();

	ADD_I64(o, "tx_bytes", c->tx_bytes);
	ADD_I64(o, "tx_ops", c->tx_ops);
	ADD_I64(o, "rx_bytes", c->rx_bytes);
	ADD_I64(o, "rx_ops", c->rx_ops);
	ADD_I64(o, "errors", c->errors);
	ADD_I64(o, "rnr_naks", c->rnr_naks);
	ADD_I64(o, "retries", c->retries);
	ADD_I64(o, "drops_other_tenant", c->drops_other_tenant);
	ADD_I64(o, "qos_delays", c->qos_delays);
	ADD_I64(o, "qos_delay_ns", c->qos_delay_ns);
	for (int i = 0; i < URD_WR_NUM_OPCODES; i++) {
		json_object *e = json_object_new_object();

		ADD_I64(e, "tx_ops", c->tx_op_ops[i]);
		ADD_I64(e, "tx_bytes", c->tx_op_bytes[i]);
		ADD_I64(e, "rx_ops", c->rx_op_ops[i]);
		ADD_I64(e, "rx_bytes", c->rx_op_bytes[i]);
		json_object_object_add(by, urd_opcodes[i].name, e);
	}
	json_object_object_add(o, "by_opcode", by);
	return o;
}

static json_object *limits_json(const struct urd_limits *l)
{
	json_object *o = json_object_new_object();

	ADD_I64(o, "max_contexts", l->max_ctx);
	ADD_I64(o, "max_pds", l->max_pd);
	ADD_I64(o, "max_mrs", l->max_mr);
	ADD_I64(o, "max_cqs", l->max_cq);
	ADD_I64(o, "max_qps", l->max_qp);
	ADD_I64(o, "max_srqs", l->max_srq);
	ADD_I64(o, "max_mem_bytes", l->max_mem_bytes);
	ADD_I64(o, "max_qp_wr", l->max_qp_wr);
	ADD_I64(o, "max_cqe", l->max_cqe);
	ADD_I64(o, "max_srq_wr", l->max_srq_wr);
	return o;
}

static json_object *qos_json(const struct urd_qos *q)
{
	json_object *o = json_object_new_object();

	ADD_I64(o, "rate_bytes", q->rate_bytes);
	ADD_I64(o, "burst_bytes", q->burst_bytes);
	ADD_I64(o, "rate_ops", q->rate_ops);
	ADD_I64(o, "burst_ops", q->burst_ops);
	return o;
}

static const char *qp_state_name(uint32_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s < 7 ? n[s] : "UNKNOWN";
}

/* An RC/UC QP's transport state on the wire (engine_qp_wire): where a
 * connection that stopped moving stands. */
static json_object *qp_wire_json(const struct engine_qp_wire *w)
{
	json_object *o = json_object_new_object();

	ADD_I64(o, "psn", w->psn);
	ADD_I64(o, "una", w->una);
	ADD_I64(o, "psn_max", w->psn_max);
	ADD_I64(o, "epsn", w->epsn);
	ADD_I64(o, "cwnd", w->cwnd);
	ADD_I64(o, "retry_left", w->retry_left);
	ADD_I64(o, "rnr_left", w->rnr_left);
	ADD_I64(o, "backoff", w->backoff);
	ADD_I64(o, "sq_own", w->sq_own);
	ADD_I64(o, "sq_next", w->sq_next);
	ADD_I64(o, "sq_seen", w->sq_seen);
	ADD_I64(o, "sq_prod", w->sq_prod);
	json_object_object_add(o, "active", json_object_new_boolean(w->active));
	json_object_object_add(o, "watching", json_object_new_boolean(w->watching));
	ADD_I64(o, "cur_idx", w->cur_idx);
	ADD_I64(o, "cur_pkt", w->cur_pkt);
	json_object_object_add(o, "cur_open", json_object_new_boolean(w->cur_open));
	json_object_object_add(o, "nak_sent", json_object_new_boolean(w->nak_sent));
	json_object_object_add(o, "tlp_sent", json_object_new_boolean(w->tlp_sent));
	ADD_I64(o, "srtt_ns", w->srtt_ns);
	ADD_I64(o, "rto_in_ns", w->rto_in_ns);
	ADD_I64(o, "tlp_in_ns", w->tlp_in_ns);
	ADD_I64(o, "rnr_in_ns", w->rnr_in_ns);
	return o;
}

static json_object *vrnic_json(const struct urd_vrnic *vr, bool detail)
{
	json_object *o = json_object_new_object();
	char ip[INET_ADDRSTRLEN], gid[64];

	inet_ntop(AF_INET, &vr->vip, ip, sizeof(ip));
	snprintf(gid, sizeof(gid), "::ffff:%s", ip);
	json_object_object_add(o, "name", json_object_new_string(vr->name));
	json_object_object_add(o, "tenant", json_object_new_string(vr->tenant));
	json_object_object_add(o, "ip", json_object_new_string(ip));
	json_object_object_add(o, "prefix", json_object_new_int(vr->prefix));
	json_object_object_add(o, "gid", json_object_new_string(gid));
	json_object_object_add(o, "dir", json_object_new_string(vr->dir));
	/* "failed": the daemon faulted on its memory and stopped serving it */
	json_object_object_add(o, "state", json_object_new_string(vr->failed ? "failed" : "running"));
	json_object_object_add(o, "contexts", json_object_new_int((int)vr->nctx));
	json_object_object_add(o, "pds", json_object_new_int((int)vr->npd));
	json_object_object_add(o, "mrs", json_object_new_int((int)vr->nmr));
	json_object_object_add(o, "cqs", json_object_new_int((int)vr->ncq));
	json_object_object_add(o, "qps", json_object_new_int((int)vr->nqp));
	json_object_object_add(o, "srqs", json_object_new_int((int)vr->nsrq));
	ADD_I64(o, "mem_bytes", vr->memwin.used);
	ADD_I64(o, "meta_bytes", vr->meta_bytes);  /* daemon memory for its MR tables, allocations */
	json_object_object_add(o, "limits", limits_json(&vr->lim));
	json_object_object_add(o, "qos", qos_json(&vr->qos));
	/* address vectors without a GRH: refused as on a RoCE port unless set */
	json_object_object_add(o, "grhless_av", json_object_new_boolean(vr->grhless_av));
	json_object_object_add(o, "counters", counters_json(&vr->cnt));
	/* when these counters were read (CLOCK_MONOTONIC): rates without the
	 * client's latency in them */
	ADD_I64(o, "time_ns", urd_now_ns());
	if (vr->vm)             /* VM hook: guest RAM layout and files (vm.c) */
		json_object_object_add(o, "vm", vm_json(vr));
	{
		json_object *dj = directory_vrnic_json(vr);     /* cluster: is its GID published? */

		if (dj)
			json_object_object_add(o, "directory", dj);
	}
	if (detail) {
		json_object *arr = json_object_new_array();

		for (uint32_t i = 0; i < URD_MAX_QP_SLOTS; i++) {
			const struct vr_qp *qp = vr->qp_slots[i];
			json_object *q;

			if (!qp)
				continue;
			q = json_object_new_object();
			ADD_I64(q, "qpn", qp->qpn);
			json_object_object_add(q, "type", json_object_new_string(qp->type == IBV_QPT_RC ? "RC" :
									     qp->type == IBV_QPT_UC ? "UC" : "UD"));
			json_object_object_add(q, "state", json_object_new_string(qp_state_name(qp->state)));
			ADD_I64(q, "context", qp->obj.ctx->id);
			if (qp->type != IBV_QPT_UD)
				ADD_I64(q, "dest_qpn", qp->attr.dest_qp_num);
			json_object_object_add(q, "counters", counters_json(&qp->cnt));
			{
				struct engine_qp_wire w;

				if (engine_qp_wire(qp, &w))
					json_object_object_add(q, "wire", qp_wire_json(&w));
			}
			json_object_array_add(arr, q);
		}
		json_object_object_add(o, "qp_list", arr);
	}
	return o;
}

static json_object *engine_json(const struct urd_daemon *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "copied_bytes", json_object_new_int64((int64_t)d->eng.copied_bytes));
	json_object_object_add(o, "busy_passes", json_object_new_int64((int64_t)d->eng.passes));
	json_object_object_add(o, "sleeps", json_object_new_int64((int64_t)d->eng.sleeps));
	return o;
}

static json_object *error_json(int err, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "errno", json_object_new_int(err));
	json_object_object_add(o, "error", json_object_new_string(msg ? msg : strerror(err)));
	return o;
}

static const char *str_field(json_object *req, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Reads an optional object of non-negative integers; unknown keys and bad
 * values are errors (a typo must not silently leave a quota unset). */
static int parse_u64s(json_object *req, const char *key, const char *const *names, uint64_t *vals,
		      int n, char *err, size_t errlen)
{
	json_object *o;

	if (!json_object_object_get_ex(req, key, &o))
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "\"%s\" must be an object", key);
		return -EINVAL;
	}
	json_object_object_foreach(o, k, v) {
		int i;

		for (i = 0; i < n; i++)
			if (!strcmp(k, names[i]))
				break;
		if (i == n) {
			snprintf(err, errlen, "unknown field \"%s\" in \"%s\"", k, key);
			return -EINVAL;
		}
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
			snprintf(err, errlen, "\"%s.%s\" must be a non-negative integer", key, k);
			return -EINVAL;
		}
		vals[i] = (uint64_t)json_object_get_int64(v);
	}
	return 0;
}

/* Applies "limits" and "qos" of a create or set request to vr; all or nothing. */
static int apply_settings(struct urd_vrnic *vr, json_object *req, char *err, size_t errlen)
{
	static const char *const lnames[] = { "max_contexts", "max_pds", "max_mrs", "max_cqs", "max_qps",
					      "max_srqs", "max_mem_bytes", "max_qp_wr", "max_cqe", "max_srq_wr" };
	static const char *const qnames[] = { "rate_bytes", "burst_bytes", "rate_ops", "burst_ops" };
	struct urd_limits l = vr->lim;
	uint64_t lv[10] = { l.max_ctx, l.max_pd, l.max_mr, l.max_cq, l.max_qp, l.max_srq,
			    l.max_mem_bytes, l.max_qp_wr, l.max_cqe, l.max_srq_wr };
	uint64_t qv[4] = { vr->qos.rate_bytes, vr->qos.burst_bytes, vr->qos.rate_ops, vr->qos.burst_ops };
	json_object *tmp;
	int ret;

	ret = parse_u64s(req, "limits", lnames, lv, 10, err, errlen);
	if (!ret)
		ret = parse_u64s(req, "qos", qnames, qv, 4, err, errlen);
	if (ret)
		return ret;
	if (json_object_object_get_ex(req, "grhless_av", &tmp) && !json_object_is_type(tmp, json_type_boolean)) {
		snprintf(err, errlen, "grhless_av must be true or false");
		return -EINVAL;
	}
	for (int i = 0; i < 10; i++)
		if (i != 6 && lv[i] > UINT32_MAX) {
			snprintf(err, errlen, "limits.%s is too large", lnames[i]);
			return -EINVAL;
		}
	l = (struct urd_limits){ (uint32_t)lv[0], (uint32_t)lv[1], (uint32_t)lv[2], (uint32_t)lv[3],
				 (uint32_t)lv[4], (uint32_t)lv[5], lv[6], (uint32_t)lv[7], (uint32_t)lv[8],
				 (uint32_t)lv[9] };
	if (json_object_object_get_ex(req, "limits", &tmp) && vrnic_set_limits(vr, &l)) {
		snprintf(err, errlen, "a limit is 0 or above what the device supports (see vrnic show)");
		return -EINVAL;
	}
	if (json_object_object_get_ex(req, "qos", &tmp)) {
		/* a burst given without its rate keeps the current rate */
		json_object *q = tmp, *x;

		if (!json_object_object_get_ex(q, "burst_bytes", &x) && json_object_object_get_ex(q, "rate_bytes", &x))
			qv[1] = 0;      /* a new rate without a burst gets the default burst */
		if (!json_object_object_get_ex(q, "burst_ops", &x) && json_object_object_get_ex(q, "rate_ops", &x))
			qv[3] = 0;
		vrnic_set_qos(vr, qv[0], qv[1], qv[2], qv[3]);
	}
	if (json_object_object_get_ex(req, "grhless_av", &tmp))
		vrnic_set_grhless_av(vr, json_object_get_boolean(tmp));
	return 0;
}

/* Returns the answer; sets *shutdown for a stop request.  Big lock held. */
static json_object *handle(struct urd_daemon *d, json_object *req, bool *shutdown)
{
	const char *cmd = str_field(req, "cmd");
	json_object *ok = json_object_new_object();
	char err[256];
	struct urd_vrnic *vr;
	int ret;

	json_object_object_add(ok, "ok", json_object_new_boolean(1));
	if (!cmd) {
		json_object_put(ok);
		return error_json(EINVAL, "missing \"cmd\"");
	}
	if (!strcmp(cmd, "ping")) {
		json_object_object_add(ok, "version", json_object_new_string(UNIRDMA_VERSION));
		json_object_object_add(ok, "pid", json_object_new_int(getpid()));
		json_object_object_add(ok, "engine", engine_json(d));
		json_object_object_add(ok, "metrics_port", json_object_new_int(metrics_port()));
		if (metrics_token_file())
			json_object_object_add(ok, "metrics_token_file", json_object_new_string(metrics_token_file()));
		return ok;
	}
	if (!strcmp(cmd, "shutdown")) {
		*shutdown = true;
		return ok;
	}
	if (!strcmp(cmd, "vrnic.list")) {
		json_object *arr = json_object_new_array();

		for (int i = 0; i < URD_MAX_VRNICS; i++)
			if (d->vrnics[i])
				json_object_array_add(arr, vrnic_json(d->vrnics[i], false));
		json_object_object_add(ok, "vrnics", arr);
		return ok;
	}
	if (!strcmp(cmd, "vrnic.create")) {
		const char *name = str_field(req, "name"), *tenant = str_field(req, "tenant");
		const char *ip = str_field(req, "ip");
		struct urd_vm_cfg vmc;

		if (!name || !tenant || !ip) {
			json_object_put(ok);
			return error_json(EINVAL, "vrnic.create needs \"name\", \"tenant\" and \"ip\" (A.B.C.D/P)");
		}
		if (json_object_object_get_ex(req, "limits", NULL) || json_object_object_get_ex(req, "qos", NULL)) {
			/* validate before creating anything */
			struct urd_vrnic probe;

			memset(&probe, 0, sizeof(probe));
			vrnic_default_limits(&probe.lim);
			probe.memwin.size = probe.lim.max_mem_bytes;
			probe.hdr = calloc(1, sizeof(*probe.hdr));
			if (!probe.hdr) {
				json_object_put(ok);
				return error_json(ENOMEM, NULL);
			}
			ret = apply_settings(&probe, req, err, sizeof(err));
			free(probe.hdr);
			if (ret) {
				json_object_put(ok);
				return error_json(-ret, err);
			}
		}
		ret = vm_parse_cfg(req, &vmc, err, sizeof(err));     /* VM hook: "vm": {"ram_mb": N} */
		if (ret) {
			json_object_put(ok);
			return error_json(-ret, err);
		}
		ret = vrnic_create_ex(d, name, tenant, ip, vmc.ram_bytes ? &vmc : NULL, &vr);
		if (!ret) {
			ret = apply_settings(vr, req, err, sizeof(err));   /* validated above */
			if (ret) {      /* a VM's quota range is its RAM, not the window the probe had */
				vrnic_delete(d, name);
				json_object_put(ok);
				return error_json(-ret, err);
			}
		}
		if (ret) {
			json_object_put(ok);
			return error_json(-ret, ret == -EINVAL ? "invalid name, tenant (1-32 of [A-Za-z0-9_-]) or ip (A.B.C.D/P)" :
					  ret == -EEXIST ? "a vRNIC with this name exists" :
					  ret == -EADDRINUSE ? "this ip is already used in the tenant" : NULL);
		}
		json_object_object_add(ok, "vrnic", vrnic_json(vr, true));
		return ok;
	}
	if (!strcmp(cmd, "vrnic.set")) {
		const char *name = str_field(req, "name");
		const char *ip = str_field(req, "ip");
		uint32_t vip = 0;
		uint8_t prefix = 0;

		vr = name ? vrnic_find(d, name) : NULL;
		if (!vr) {
			json_object_put(ok);
			return error_json(ENOENT, name ? "no such vRNIC" : "missing \"name\"");
		}
		/* all or nothing: the address is judged before any setting changes */
		ret = json_object_object_get_ex(req, "ip", NULL) && !ip ? -EINVAL :
		      ip ? vrnic_check_addr(vr, ip, &vip, &prefix) : 0;
		if (ret) {
			if (ret == -EBUSY)
				snprintf(err, sizeof(err), "vRNIC %s is in use: %u device context%s open; "
					 "its address changes only while no program has it open", vr->name,
					 vr->nctx, vr->nctx == 1 ? " is" : "s are");
			else
				snprintf(err, sizeof(err), "%s", ret == -EINVAL ? "invalid ip (A.B.C.D or A.B.C.D/P)" :
					 ret == -EADDRINUSE ? "this ip is already a vRNIC's (in the tenant, or on this host with --underlay)" :
					 strerror(-ret));
			json_object_put(ok);
			return error_json(-ret, err);
		}
		ret = apply_settings(vr, req, err, sizeof(err));
		if (ret) {
			json_object_put(ok);
			return error_json(-ret, err);
		}
		if (ip)
			vrnic_set_addr(vr, vip, prefix);
		log_info("vrnic %s: settings changed", vr->name);
		json_object_object_add(ok, "vrnic", vrnic_json(vr, false));
		return ok;
	}
	if (!strcmp(cmd, "vrnic.show") || !strcmp(cmd, "vrnic.delete")) {
		const char *name = str_field(req, "name");

		vr = name ? vrnic_find(d, name) : NULL;
		if (!vr) {
			json_object_put(ok);
			return error_json(ENOENT, name ? "no such vRNIC" : "missing \"name\"");
		}
		if (!strcmp(cmd, "vrnic.show")) {
			json_object_object_add(ok, "vrnic", vrnic_json(vr, true));
		} else {
			vrnic_delete(d, name);
		}
		return ok;
	}
	json_object_put(ok);
	return error_json(EOPNOTSUPP, "unknown command");
}

/* Whether req was a vRNIC create, delete or set that the daemon carried out. */
static bool vrnics_changed(json_object *req, json_object *ans)
{
	const char *cmd = str_field(req, "cmd");
	json_object *ok;

	return cmd && (!strcmp(cmd, "vrnic.create") || !strcmp(cmd, "vrnic.delete") || !strcmp(cmd, "vrnic.set")) &&
	       json_object_object_get_ex(ans, "ok", &ok) && json_object_get_boolean(ok);
}

/* root, or a member (primary or supplementary group) of --admin-group.  The
 * credentials are the kernel's record of the peer at connect() (SO_PEERCRED,
 * SO_PEERGROUPS), not /proc/PID read later: that PID may be another process
 * by then. */
static bool may_manage(const struct urd_daemon *d, int fd, uid_t *uid)
{
	gid_t groups[64], *g = groups;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool ok = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred))
		return false;
	*uid = cred.uid;
	if (cred.uid == 0)
		return true;
	if (!d->admin_gid_set)
		return false;
	if (cred.gid == d->admin_gid)
		return true;
	len = sizeof(groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE || !len)
			return false;
		g = malloc(len);        /* up to NGROUPS_MAX (65536) groups */
		if (!g || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			free(g);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (g[i] == d->admin_gid)
			ok = true;
	if (g != groups)
		free(g);
	return ok;
}

static void send_answer(int fd, json_object *ans, int flags)
{
	const char *out = json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PLAIN);

	if (send(fd, out, strlen(out), MSG_NOSIGNAL | flags) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL | flags) < 0)
		log_debug("admin: client went away");
}

static long long now_ms(void)
{
	return (long long)(urd_now_ns() / 1000000);
}

/* One request: one line of at most ADMIN_MAX_REQ bytes that must be complete
 * ADMIN_DEADLINE_MS after accept, however it is dribbled in. */
static void serve(struct urd_daemon *d, int fd, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	json_object *req = NULL, *ans;
	bool shutdown = false, claimed = false;
	size_t n = 0;
	char *buf = malloc(ADMIN_MAX_REQ + 1);

	if (!buf) {
		ans = error_json(ENOMEM, NULL);
		goto answer;
	}
	while (n < ADMIN_MAX_REQ && !memchr(buf, '\n', n)) {
		long long left = deadline - now_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		r = read(fd, buf + n, ADMIN_MAX_REQ - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	req = json_tokener_parse(buf);
	if (!req || !json_object_is_type(req, json_type_object)) {
		if (!memchr(buf, '\n', n) && n < ADMIN_MAX_REQ && now_ms() >= deadline)
			ans = error_json(ETIMEDOUT, "the request did not arrive within 2 s");
		else
			ans = error_json(EINVAL, "request is not a JSON object");
		goto answer;
	}
	/* the cluster directory's commands and claims talk to etcd: never
	 * under the big lock */
	ans = directory_admin(d, req, str_field(req, "cmd"));
	if (ans)
		goto answer;
	if (str_field(req, "cmd") && (!strcmp(str_field(req, "cmd"), "vrnic.create") ||
				      (!strcmp(str_field(req, "cmd"), "vrnic.set") && str_field(req, "ip")))) {
		char err[256];
		int ret = directory_vrnic_claim(d, req, err, sizeof(err));

		if (ret) {
			ans = error_json(-ret, err);
			goto answer;
		}
		claimed = true;
	}
	pthread_mutex_lock(&d->lock);
	ans = handle(d, req, &shutdown);
	if (vrnics_changed(req, ans))
		cdi_update(d);
	pthread_mutex_unlock(&d->lock);
	if (claimed)
		directory_vrnic_claim_done(d, req);
answer:
	free(buf);
	send_answer(fd, ans, 0);
	json_object_put(ans);
	if (req)
		json_object_put(req);
	if (shutdown)
		kill(getpid(), SIGTERM);
}

/* Admitted clients are served side by side, each by a thread of its own, at
 * most ADMIN_MAX_CLIENTS members of the admin group at a time besides root's
 * (only root and the admin group get that far; each is done within its
 * deadline plus its handler). */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_done = PTHREAD_COND_INITIALIZER;
static unsigned int nconn;              /* being served */
static unsigned int ngroup;             /* of them, not root's */

struct conn {
	int fd;
	bool root;
	long long deadline;
};

static void *conn_main(void *arg)
{
	struct conn *c = arg;

	serve(admin_d, c->fd, c->deadline);
	/* the slot is free before the client sees its connection end */
	pthread_mutex_lock(&conn_lock);
	ngroup -= !c->root;
	pthread_mutex_unlock(&conn_lock);
	close(c->fd);
	pthread_mutex_lock(&conn_lock);
	nconn--;
	pthread_cond_broadcast(&conn_done);
	pthread_mutex_unlock(&conn_lock);
	free(c);
	return NULL;
}

/* A refused client gets its one-line answer at once.  What it already sent is
 * read first (without waiting): closing a socket with unread data makes the
 * peer's reads fail with ECONNRESET instead of returning the answer. */
static void refuse(int fd, int err, const char *msg)
{
	char sink[4096];
	json_object *ans = error_json(err, msg);

	/* bounded: a client that writes as fast as we read gets no more */
	for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	send_answer(fd, ans, MSG_DONTWAIT);  /* never blocks the accepting thread */
	json_object_put(ans);
	shutdown(fd, SHUT_WR);
	for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
}

static void admit(struct urd_daemon *d, int fd)
{
	struct timeval snd = { .tv_sec = ADMIN_DEADLINE_MS / 1000, .tv_usec = ADMIN_DEADLINE_MS % 1000 * 1000 };
	pthread_attr_t attr;
	pthread_t t;
	struct conn *c;
	uid_t uid = (uid_t)-1;
	bool full;

	if (!may_manage(d, fd, &uid)) {
		log_debug("admin: uid %d refused", (int)uid);
		refuse(fd, EPERM, d->admin_gid_set ? "only root and the admin group may manage unirdma"
						   : "only root may manage unirdma");
		close(fd);
		return;
	}
	/* an answer the client does not read must not hold a thread forever */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd));
	pthread_mutex_lock(&conn_lock);
	full = uid != 0 && ngroup >= ADMIN_MAX_CLIENTS;    /* the group cannot lock root out */
	if (!full) {
		nconn++;
		ngroup += uid != 0;
	}
	pthread_mutex_unlock(&conn_lock);
	c = full ? NULL : malloc(sizeof(*c));
	if (!c)
		goto busy;
	c->fd = fd;
	c->root = uid == 0;
	c->deadline = now_ms() + ADMIN_DEADLINE_MS;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&t, &attr, conn_main, c)) {
		pthread_attr_destroy(&attr);
		return;
	}
	pthread_attr_destroy(&attr);
	free(c);
busy:
	if (!full) {
		pthread_mutex_lock(&conn_lock);
		nconn--;
		ngroup -= uid != 0;
		pthread_mutex_unlock(&conn_lock);
	}
	refuse(fd, EBUSY, "too many admin requests at once; try again");
	close(fd);
}

static void *admin_main(void *arg)
{
	struct urd_daemon *d = arg;

	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				usleep(10000);  /* out of fds: the served clients will free some */
				continue;
			}
			break;          /* the socket was shut down */
		}
		admit(d, fd);
	}
	return NULL;
}

int admin_start(struct urd_daemon *d)
{
	struct sockaddr_un sa;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/admin.sock", d->state_dir) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(listen_fd, 64)) {
		ret = -errno;
		close(listen_fd);
		return ret;
	}
	if (d->admin_gid_set && (chown(sa.sun_path, 0, d->admin_gid) || chmod(sa.sun_path, 0660)))
		log_warn("cannot give %s to the admin group: %s", sa.sun_path, strerror(errno));
	else if (!d->admin_gid_set && chmod(sa.sun_path, 0666))
		/* anyone may connect and be told no: the credential check decides */
		log_warn("cannot set the mode of %s: %s", sa.sun_path, strerror(errno));
	admin_d = d;
	ret = pthread_create(&admin_thread, NULL, admin_main, d);
	return -ret;
}

void admin_stop(void)
{
	char path[512];

	if (listen_fd < 0)
		return;
	shutdown(listen_fd, SHUT_RDWR);
	pthread_join(admin_thread, NULL);
	/* the clients being served end within their deadline */
	pthread_mutex_lock(&conn_lock);
	while (nconn)
		pthread_cond_wait(&conn_done, &conn_lock);
	pthread_mutex_unlock(&conn_lock);
	close(listen_fd);
	snprintf(path, sizeof(path), "%s/admin.sock", admin_d->state_dir);
	unlink(path);
	listen_fd = -1;
}

/* The admin socket: STATE/admin.sock, one JSON request per connection, one
 * JSON answer.  Only root may manage vRNICs (SO_PEERCRED).  Everything a
 * client sends is size-limited and parsed by json-c; bad input gets
 * {"ok":false,"errno":N,"error":"..."} and changes nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon.h"
#include "log.h"

#define ADMIN_MAX_REQ 65536

static int listen_fd = -1;
static pthread_t admin_thread;
static struct urd_daemon *admin_d;

static json_object *vrnic_json(const struct urd_vrnic *vr)
{
	json_object *o = json_object_new_object();
	json_object *c = json_object_new_object();
	char ip[INET_ADDRSTRLEN], gid[64];

	inet_ntop(AF_INET, &vr->vip, ip, sizeof(ip));
	snprintf(gid, sizeof(gid), "::ffff:%s", ip);
	json_object_object_add(o, "name", json_object_new_string(vr->name));
	json_object_object_add(o, "tenant", json_object_new_string(vr->tenant));
	json_object_object_add(o, "ip", json_object_new_string(ip));
	json_object_object_add(o, "prefix", json_object_new_int(vr->prefix));
	json_object_object_add(o, "gid", json_object_new_string(gid));
	json_object_object_add(o, "dir", json_object_new_string(vr->dir));
	json_object_object_add(o, "contexts", json_object_new_int((int)vr->nctx));
	json_object_object_add(o, "pds", json_object_new_int((int)vr->npd));
	json_object_object_add(o, "mrs", json_object_new_int((int)vr->nmr));
	json_object_object_add(o, "cqs", json_object_new_int((int)vr->ncq));
	json_object_object_add(o, "qps", json_object_new_int((int)vr->nqp));
	json_object_object_add(o, "srqs", json_object_new_int((int)vr->nsrq));
	json_object_object_add(o, "mem_bytes", json_object_new_int64((int64_t)vr->memwin.used));
	json_object_object_add(c, "tx_bytes", json_object_new_int64((int64_t)vr->cnt.tx_bytes));
	json_object_object_add(c, "tx_ops", json_object_new_int64((int64_t)vr->cnt.tx_ops));
	json_object_object_add(c, "rx_bytes", json_object_new_int64((int64_t)vr->cnt.rx_bytes));
	json_object_object_add(c, "rx_ops", json_object_new_int64((int64_t)vr->cnt.rx_ops));
	json_object_object_add(c, "errors", json_object_new_int64((int64_t)vr->cnt.errors));
	json_object_object_add(c, "rnr_naks", json_object_new_int64((int64_t)vr->cnt.rnr_naks));
	json_object_object_add(c, "drops_other_tenant", json_object_new_int64((int64_t)vr->cnt.drops_other_tenant));
	json_object_object_add(o, "counters", c);
	return o;
}

static json_object *engine_json(const struct urd_daemon *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "copied_bytes", json_object_new_int64((int64_t)d->copied_bytes));
	json_object_object_add(o, "busy_passes", json_object_new_int64((int64_t)d->engine_passes));
	json_object_object_add(o, "sleeps", json_object_new_int64((int64_t)d->engine_sleeps));
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

/* Returns the answer; sets *shutdown for a stop request.  Big lock held. */
static json_object *handle(struct urd_daemon *d, json_object *req, bool *shutdown)
{
	const char *cmd = str_field(req, "cmd");
	json_object *ok = json_object_new_object();
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
				json_object_array_add(arr, vrnic_json(d->vrnics[i]));
		json_object_object_add(ok, "vrnics", arr);
		return ok;
	}
	if (!strcmp(cmd, "vrnic.create")) {
		const char *name = str_field(req, "name"), *tenant = str_field(req, "tenant");
		const char *ip = str_field(req, "ip");

		if (!name || !tenant || !ip) {
			json_object_put(ok);
			return error_json(EINVAL, "vrnic.create needs \"name\", \"tenant\" and \"ip\" (A.B.C.D/P)");
		}
		ret = vrnic_create(d, name, tenant, ip, &vr);
		if (ret) {
			json_object_put(ok);
			return error_json(-ret, ret == -EINVAL ? "invalid name, tenant (1-32 of [A-Za-z0-9_-]) or ip (A.B.C.D/P)" :
					  ret == -EEXIST ? "a vRNIC with this name exists" :
					  ret == -EADDRINUSE ? "this ip is already used in the tenant" : NULL);
		}
		json_object_object_add(ok, "vrnic", vrnic_json(vr));
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
			json_object_object_add(ok, "vrnic", vrnic_json(vr));
		} else {
			vrnic_delete(d, name);
		}
		return ok;
	}
	json_object_put(ok);
	return error_json(EOPNOTSUPP, "unknown command");
}

static void serve(struct urd_daemon *d, int fd)
{
	static char buf[ADMIN_MAX_REQ + 1];
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	json_object *req = NULL, *ans;
	bool shutdown = false;
	size_t n = 0;
	const char *out;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) || cred.uid != 0) {
		ans = error_json(EPERM, "only root may manage unirdma");
		goto answer;
	}
	/* one line, at most ADMIN_MAX_REQ bytes, within 2 s */
	while (n < ADMIN_MAX_REQ && !memchr(buf, '\n', n)) {
		ssize_t r;

		if (poll(&p, 1, 2000) <= 0)
			break;
		r = read(fd, buf + n, ADMIN_MAX_REQ - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	req = json_tokener_parse(buf);
	if (!req || !json_object_is_type(req, json_type_object)) {
		ans = error_json(EINVAL, "request is not a JSON object");
		goto answer;
	}
	pthread_mutex_lock(&d->lock);
	ans = handle(d, req, &shutdown);
	pthread_mutex_unlock(&d->lock);
answer:
	out = json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PLAIN);
	if (write(fd, out, strlen(out)) < 0 || write(fd, "\n", 1) < 0)
		log_debug("admin: client went away");
	json_object_put(ans);
	if (req)
		json_object_put(req);
	if (shutdown)
		kill(getpid(), SIGTERM);
}

static void *admin_main(void *arg)
{
	struct urd_daemon *d = arg;

	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;          /* the socket was shut down */
		}
		serve(d, fd);
		close(fd);
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
	close(listen_fd);
	snprintf(path, sizeof(path), "%s/admin.sock", admin_d->state_dir);
	unlink(path);
	listen_fd = -1;
}

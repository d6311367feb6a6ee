/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* device-plugin.c: unirdma-device-plugin, a kubelet device plugin (API
 * v1beta1) that offers the vRNICs of one unirdmad as the extended resource
 * unirdma.io/vrnic and answers Allocate with their CDI names, so that a CDI
 * runtime (containerd >= 1.7, CRI-O) applies the spec the daemon keeps
 * (daemon/cdi.c): the vRNIC's region file, our library, the hook that gives
 * the container an interface on the tenant's bridge (eth0, or rdma0 in a
 * pod's namespace, which has the cluster network's eth0).
 *
 *   kubelet                                   this plugin
 *   Registration/Register on kubelet.sock <-- RegisterRequest (version, our
 *                                             socket's name, resource)
 *   DevicePlugin methods on <kubelet-dir>/<our socket> -->
 *     GetDevicePluginOptions, ListAndWatch (a stream: the list again on
 *     every change), GetPreferredAllocation, Allocate, PreStartContainer
 *
 * The vRNICs come from the daemon's admin socket (vrnic.list, the request
 * `unirdma vrnic list --json` makes), asked every POLL_MS and before each
 * Allocate: device ID = vRNIC name, Healthy while the daemon serves it,
 * every device Unhealthy while the daemon does not answer.  Left out: VM
 * vRNICs and the name "cni" (not in the CDI spec), vRNICs that unirdma-cni
 * made for a pod (STATE/cni/NAME.json: they belong to that pod's network
 * namespace), names that are no valid CDI device name, and with --tenant
 * other tenants' vRNICs.
 *
 * With --cni-pool N the plugin offers instead N tokens cni-0..cni-(N-1)
 * under a resource of its own (default unirdma.io/vrnic-cni) and answers
 * Allocate for any of them with the one CDI device unirdma.io/vrnic=cni,
 * whose hook brings the vRNIC that unirdma-cni made for the pod (a pod on
 * a Multus network of unirdma-cni cannot name its vRNIC beforehand: CNI
 * ADD makes it after the devices were allocated).  N bounds how many
 * containers of the node have that device at once; all are Healthy while
 * the daemon answers.  One resource per process: kubelet takes one
 * resource per registration, and a second instance (--cni-pool) keeps
 * this one's single registration, socket and list.
 *
 * Kubelet removes every plugin socket when it starts and then creates
 * kubelet.sock: inotify on the kubelet directory (and a check every tick)
 * notices either, and the plugin serves its socket again and registers
 * again.  One thread, one poll loop (grpc.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dplog.h"
#include "grpc.h"
#include "pb.h"

#define API_VERSION "v1beta1"
#define CDI_KIND "unirdma.io/vrnic"             /* the daemon's (daemon/cdi.c) */
#define CDI_ANNOTATION "cdi.k8s.io/unirdma_"    /* + the first device ID of a container */
#define CNI_DEVICE "cni"                        /* the CDI device of unirdma-cni's pods */
#define NAME_MAX_LEN 32                         /* the daemon's vRNIC name limit */
#define MAX_DEVS 256                            /* also the largest --cni-pool */
#define CNI_RESOURCE "unirdma.io/vrnic-cni"     /* --cni-pool's default resource */
#define MAX_WATCHERS 16
#define MAX_CONTAINERS 64                       /* container requests in one call */
#define POLL_MS 500
#define RETRY_MIN_MS 100                        /* registration retries: doubling up to */
#define RETRY_MAX_MS 5000
#define REGISTER_TIMEOUT_MS 10000
#define ADMIN_TIMEOUT_MS 2000
#define DOWN_AFTER 3                            /* missed answers that make all Unhealthy */
#define ADMIN_MAX_ANSWER (8 << 20)

enum {
	EXIT_USAGE = 2,
};

static const char usage_text[] =
	"usage: unirdma-device-plugin [OPTIONS]\n"
	"\n"
	"A kubelet device plugin (API " API_VERSION ") that offers unirdmad's vRNICs as an\n"
	"extended resource and answers Allocate with their CDI names\n"
	"(" CDI_KIND "=NAME).\n"
	"\n"
	"  --state-dir DIR    the daemon's state directory (default /run/unirdma)\n"
	"  --kubelet-dir DIR  kubelet's device plugin directory\n"
	"                     (default /var/lib/kubelet/device-plugins)\n"
	"  --resource NAME    the resource to register (default unirdma.io/vrnic;\n"
	"                     with --cni-pool " CNI_RESOURCE ")\n"
	"  --tenant TENANT    offer only this tenant's vRNICs\n"
	"  --cni-pool N       offer instead N devices cni-0..cni-<N-1> (1 to 256; 0: off,\n"
	"                     the default), each allocated as " CDI_KIND "=" CNI_DEVICE ":\n"
	"                     for pods whose vRNIC unirdma-cni makes (Multus); run it\n"
	"                     as a second plugin beside the one for named vRNICs\n"
	"  --help             this text\n"
	"\n"
	"Runs until SIGTERM or SIGINT (exit 0; its socket is removed). Exit codes:\n"
	"1 a runtime error (no socket, no kubelet directory), 2 a usage error.\n"
	"man unirdma-device-plugin says more.\n";

static struct {
	const char *state_dir, *kubelet_dir, *resource, *tenant;
	int cni_pool;                   /* > 0: offer cni-0..cni-(cni_pool - 1) */
	bool resource_set;              /* --resource given: --cni-pool keeps it */
} opt = {
	.state_dir = "/run/unirdma",
	.kubelet_dir = "/var/lib/kubelet/device-plugins",
	.resource = "unirdma.io/vrnic",
};

struct dev {
	char id[NAME_MAX_LEN + 1];
	bool healthy;
};

static struct {
	char sock_name[NAME_MAX];       /* our endpoint, a file in kubelet_dir */
	char sock_path[PATH_MAX];
	char kubelet_sock[PATH_MAX];
	char admin_sock[PATH_MAX];
	int listen_fd, inotify_fd, signal_fd;
	dev_t sock_dev;
	ino_t sock_ino;                 /* of the socket we bound (0: none) */
	ino_t kubelet_ino;              /* of the kubelet.sock we registered with (0: none seen) */
	/* registration */
	struct pb_buf regreq;
	bool reg_pending, need_register, waiting_logged, serve_failed;
	int watch;                      /* inotify watch of kubelet_dir (-1: lost) */
	long long retry_at;             /* ms; 0: no retry planned */
	int backoff_ms;                 /* the last wait before a retry (0: none yet) */
	int reg_err;                    /* the failure last logged: errno, or 1000 + gRPC code */
	/* the devices as last seen */
	struct dev devs[MAX_DEVS];
	int ndevs;
	bool daemon_up, daemon_seen;
	int failures;                   /* the daemon's answers missed in a row */
	char skipped[8][NAME_MAX_LEN + 1]; /* names logged as not offered */
	int nskipped;
	struct grpc_call *watchers[MAX_WATCHERS];
	int nwatchers;
} dp = { .listen_fd = -1, .inotify_fd = -1, .signal_fd = -1 };

void dp_log(const char *fmt, ...)
{
	struct timespec ts;
	char buf[1024];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%ld.%03ld unirdma-device-plugin: %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000L, buf);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A peer's string for a log line or an error message: printable ASCII,
 * at most 40 characters. */
static const char *printable(const uint8_t *s, size_t len, char *buf, size_t buflen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 4 < buflen && o < 40; i++)
		buf[o++] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
	if (len > 40 && o + 4 < buflen) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/* What a device is, in log lines and errors. */
#define WHAT (opt.cni_pool ? "device" : "vRNIC")

/* ------------------------------------------------------------ names */

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A CDI device name (the CDI spec's parser): letters, digits, '_', '-',
 * '.', ':', beginning and ending with a letter or digit.  vRNIC names are
 * [A-Za-z0-9_-] (daemon/vrnic.c), so "vr0-" is a vRNIC but no device.
 * The annotation key CDI_ANNOTATION + name then holds too (63 at most,
 * letters, digits, '_', '-', '.', alphanumeric at both ends). */
static bool cdi_device_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.' && s[i] != ':')
			return false;
	return true;
}

/* The daemon's rule for tenant names (daemon/vrnic.c valid_name). */
static bool valid_tenant(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* An extended resource name as kubelet accepts it: DOMAIN/NAME, DOMAIN a
 * lower-case DNS subdomain outside kubernetes.io, NAME a qualified name
 * (63 at most, alphanumeric at both ends, '-', '_', '.' inside). */
static const char *bad_resource(const char *r)
{
	const char *slash = strchr(r, '/'), *name;
	size_t dlen, nlen;

	if (!slash || strchr(slash + 1, '/'))
		return "it must be DOMAIN/NAME, e.g. unirdma.io/vrnic";
	dlen = (size_t)(slash - r);
	name = slash + 1;
	nlen = strlen(name);
	if (!dlen || dlen > 253)
		return "the domain must have 1 to 253 characters";
	for (size_t i = 0; i < dlen; i++) {
		char c = r[i];
		bool edge = i == 0 || i == dlen - 1 || r[i - 1] == '.' || r[i + 1] == '.';

		if (c == '.' && !edge)
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && !edge)))
			return "the domain must be a lower-case DNS name (letters, digits, '-', '.')";
	}
	if ((dlen == 13 && !strncmp(r, "kubernetes.io", 13)) || (dlen > 14 && !strncmp(slash - 14, ".kubernetes.io", 14)))
		return "kubernetes.io names are kubelet's own resources";
	if (!nlen || nlen > 63 || !is_alnum(name[0]) || !is_alnum(name[nlen - 1]))
		return "the name must have 1 to 63 characters, a letter or digit at both ends";
	for (size_t i = 0; i < nlen; i++)
		if (!is_alnum(name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
			return "the name may hold only letters, digits, '-', '_' and '.'";
	return NULL;
}

/* ------------------------------------------------------------ the daemon */

/* {"cmd":"vrnic.list"} on the admin socket: the answer, or -errno. */
static int admin_list(struct json_object **out, char *err, size_t errlen)
{
	static const char req[] = "{\"cmd\":\"vrnic.list\"}\n";
	long long deadline = now_ms() + ADMIN_TIMEOUT_MS;
	struct json_object *ans = NULL, *ok;
	size_t len = 0, cap = 0, off = 0;
	char *buf = NULL;
	int fd, ret;

	fd = unix_connect(dp.admin_sock);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = off < sizeof(req) - 1 ? POLLOUT : POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			ret = -ETIMEDOUT;
			goto close_fd;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			ret = -errno;
			goto close_fd;
		}
		if (off < sizeof(req) - 1) {
			n = send(fd, req + off, sizeof(req) - 1 - off, MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* a daemon that refuses us may close first: read its answer */
				if (errno != EPIPE && errno != ECONNRESET) {
					ret = -errno;
					goto close_fd;
				}
				off = sizeof(req) - 1;
			} else if (n > 0) {
				off += (size_t)n;
			}
			continue;
		}
		if (cap - len < 4096) {
			char *nb;

			if (cap >= ADMIN_MAX_ANSWER) {
				ret = -EMSGSIZE;
				goto close_fd;
			}
			nb = realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				ret = -ENOMEM;
				goto close_fd;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			ret = -errno;
			goto close_fd;
		}
		if (n == 0 || memchr(buf + len, '\n', (size_t)n)) {
			len += (size_t)n;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	ans = json_tokener_parse(buf);
	free(buf);
	if (!ans || !json_object_is_type(ans, json_type_object) || !json_object_object_get_ex(ans, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean)) {
		snprintf(err, errlen, "not an answer of unirdmad");
		json_object_put(ans);
		return -EPROTO;
	}
	if (!json_object_get_boolean(ok)) {
		struct json_object *e;
		int no = json_object_object_get_ex(ans, "errno", &e) ? json_object_get_int(e) : 0;

		snprintf(err, errlen, "the daemon refused: %s",
			 json_object_object_get_ex(ans, "error", &e) ? json_object_get_string(e) : "?");
		json_object_put(ans);
		return no > 0 && no < 4096 ? -no : -EPROTO;
	}
	*out = ans;
	return 0;
close_fd:
	close(fd);
fail:
	free(buf);
	snprintf(err, errlen, "%s", strerror(-ret));
	return ret;
}

static const char *jstring(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* A vRNIC that unirdma-cni made for a pod: STATE/cni/NAME.json. */
static bool cni_owned(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/cni/%s.json", opt.state_dir, name);
	return !access(path, F_OK);
}

static void note_skipped(const char *name, const char *why)
{
	for (int i = 0; i < dp.nskipped; i++)
		if (!strcmp(dp.skipped[i], name))
			return;
	dp_log("vRNIC %s is not offered: %s", name, why);
	if (dp.nskipped < (int)(sizeof(dp.skipped) / sizeof(dp.skipped[0])))
		snprintf(dp.skipped[dp.nskipped++], sizeof(dp.skipped[0]), "%s", name);
}

static int dev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dev *)a)->id, ((const struct dev *)b)->id);
}

/* The devices the daemon has now (sorted), or -errno. */
static int daemon_devices(struct dev *out, int *n, char *err, size_t errlen)
{
	struct json_object *ans = NULL, *arr;
	int ret = admin_list(&ans, err, errlen);
	size_t len;

	if (ret)
		return ret;
	if (!json_object_object_get_ex(ans, "vrnics", &arr) || !json_object_is_type(arr, json_type_array)) {
		snprintf(err, errlen, "the answer has no vrnics array");
		json_object_put(ans);
		return -EPROTO;
	}
	*n = 0;
	if (opt.cni_pool) {             /* the daemon answers: its cni device is there */
		for (int i = 0; i < opt.cni_pool; i++) {
			snprintf(out[*n].id, sizeof(out[*n].id), CNI_DEVICE "-%d", i);
			out[(*n)++].healthy = true;
		}
		json_object_put(ans);
		qsort(out, (size_t)*n, sizeof(*out), dev_cmp);
		return 0;
	}
	len = json_object_array_length(arr);
	for (size_t i = 0; i < len; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		const char *name = jstring(v, "name"), *tenant = jstring(v, "tenant"), *state = jstring(v, "state");

		if (!name || !tenant)
			continue;
		if (json_object_object_get_ex(v, "vm", NULL) || !strcmp(name, CNI_DEVICE))
			continue;       /* not in the CDI spec */
		if (opt.tenant && strcmp(tenant, opt.tenant))
			continue;
		if (!cdi_device_name(name)) {
			note_skipped(name, "not a valid CDI device name (a letter or digit must begin and end it)");
			continue;
		}
		if (cni_owned(name))
			continue;
		if (*n == MAX_DEVS) {
			note_skipped(name, "more than 256 vRNICs");
			continue;
		}
		snprintf(out[*n].id, sizeof(out[*n].id), "%s", name);
		/* a failed vRNIC is out of the CDI spec too (daemon/cdi.c) */
		out[*n].healthy = state && !strcmp(state, "running");
		(*n)++;
	}
	json_object_put(ans);
	qsort(out, (size_t)*n, sizeof(*out), dev_cmp);
	return 0;
}

/* ------------------------------------------------------------ ListAndWatch */

static void encode_list(struct pb_buf *b)
{
	for (int i = 0; i < dp.ndevs; i++) {
		struct pb_buf d = { 0 };

		pb_put_string(&d, 1, dp.devs[i].id);
		pb_put_string(&d, 2, dp.devs[i].healthy ? "Healthy" : "Unhealthy");
		pb_put_msg(b, 1, &d);
		pb_buf_free(&d);
	}
}

static void send_list(struct grpc_call *call, const struct pb_buf *msg)
{
	int ret = grpc_stream_send(call, msg);

	if (ret) {
		dp_log("ListAndWatch: cannot send the list: %s: ending the stream", strerror(-ret));
		grpc_stream_end(call, GRPC_RESOURCE_EXHAUSTED, "the peer does not read its stream");
	}
}

static void broadcast(void)
{
	struct pb_buf msg = { 0 };

	encode_list(&msg);
	for (int i = 0; i < dp.nwatchers; i++)
		send_list(dp.watchers[i], &msg);
	pb_buf_free(&msg);
}

static void watch_closed(struct grpc_call *call, void *arg)
{
	(void)arg;
	for (int i = 0; i < dp.nwatchers; i++) {
		if (dp.watchers[i] == call) {
			dp.watchers[i] = dp.watchers[--dp.nwatchers];
			dp_log("a ListAndWatch stream ended (%d left)", dp.nwatchers);
			return;
		}
	}
}

/* Asks the daemon; logs and sends what changed. */
static void refresh(void)
{
	struct dev fresh[MAX_DEVS];
	char err[256];
	int n = 0, ret = daemon_devices(fresh, &n, err, sizeof(err));
	bool changed = false;
	int i, j;

	if (ret) {
		/* no socket or nobody on it: the daemon is gone.  Anything else
		 * (busy, slow, refused) may pass: say Unhealthy on the third
		 * miss in a row only, so that a loaded daemon makes no flapping. */
		if (ret != -ENOENT && ret != -ECONNREFUSED && ++dp.failures < DOWN_AFTER && dp.daemon_up) {
			if (dp.failures == 1)
				dp_log("unirdmad at %s did not answer (%s): asking again", dp.admin_sock, err);
			return;
		}
		if (dp.daemon_up || !dp.daemon_seen)
			dp_log("unirdmad at %s does not answer (%s): %d %s%s Unhealthy", dp.admin_sock, err,
			       dp.ndevs, WHAT, dp.ndevs == 1 ? "" : "s");
		dp.daemon_up = false;
		dp.daemon_seen = true;
		for (i = 0; i < dp.ndevs; i++) {
			changed |= dp.devs[i].healthy;
			dp.devs[i].healthy = false;
		}
		if (changed)
			broadcast();
		return;
	}
	dp.failures = 0;
	if (!dp.daemon_up)
		dp_log("unirdmad at %s answers: %d %s%s to offer", dp.admin_sock, n, WHAT, n == 1 ? "" : "s");
	dp.daemon_up = true;
	dp.daemon_seen = true;
	/* both sorted: one merge pass names what came, went or changed */
	for (i = 0, j = 0; i < dp.ndevs || j < n;) {
		int c = i == dp.ndevs ? 1 : j == n ? -1 : strcmp(dp.devs[i].id, fresh[j].id);

		if (c < 0) {
			dp_log("%s %s is gone", WHAT, dp.devs[i].id);
			i++;
		} else if (c > 0) {
			dp_log("%s %s is offered (%s)", WHAT, fresh[j].id, fresh[j].healthy ? "Healthy" : "Unhealthy");
			j++;
		} else {
			if (dp.devs[i].healthy != fresh[j].healthy)
				dp_log("%s %s is %s", WHAT, fresh[j].id, fresh[j].healthy ? "Healthy" : "Unhealthy");
			else
				c = 2;  /* unchanged */
			i++, j++;
		}
		changed |= c != 2;
	}
	if (!changed)
		return;
	memcpy(dp.devs, fresh, sizeof(fresh[0]) * (size_t)n);
	dp.ndevs = n;
	broadcast();
}

/* ------------------------------------------------------------ requests */

/* Walks a message whose fields this plugin ignores (Empty): it must still
 * be well-formed. */
static bool well_formed(const uint8_t *msg, size_t len)
{
	struct pb_reader r;
	struct pb_field f;
	int ret;

	pb_reader_init(&r, msg, len);
	while ((ret = pb_next(&r, &f)) > 0)
		;
	return ret == 0;
}

static void h_options(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg)
{
	struct pb_buf out = { 0 };

	(void)arg;
	if (!well_formed(msg, len)) {
		grpc_fail(call, GRPC_INTERNAL, "malformed Empty");
		return;
	}
	pb_put_bool(&out, 1, false);            /* pre_start_required */
	pb_put_bool(&out, 2, true);             /* get_preferred_allocation_available */
	grpc_reply(call, &out);
	pb_buf_free(&out);
}

static void h_list_and_watch(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg)
{
	struct pb_buf out = { 0 };

	(void)arg;
	if (!well_formed(msg, len)) {
		grpc_fail(call, GRPC_INTERNAL, "malformed Empty");
		return;
	}
	if (dp.nwatchers == MAX_WATCHERS) {
		dp_log("ListAndWatch refused: %d streams open already", MAX_WATCHERS);
		grpc_fail(call, GRPC_RESOURCE_EXHAUSTED, "too many ListAndWatch streams");
		return;
	}
	dp.watchers[dp.nwatchers++] = call;
	grpc_stream_open(call, watch_closed, NULL);
	dp_log("ListAndWatch: a stream opened (%d open): %d %s%s", dp.nwatchers, dp.ndevs, WHAT,
	       dp.ndevs == 1 ? "" : "s");
	encode_list(&out);
	send_list(call, &out);
	pb_buf_free(&out);
}

static int find_dev(const uint8_t *id, size_t len)
{
	for (int i = 0; i < dp.ndevs; i++)
		if (strlen(dp.devs[i].id) == len && !memcmp(dp.devs[i].id, id, len))
			return i;
	return -1;
}

/* One ContainerAllocateRequest into one ContainerAllocateResponse:
 * cdi_devices (5) and the annotation (4) that carries the same names to
 * runtimes that read CDI annotations instead.  0, or a gRPC code with
 * its message in err. */
static int allocate_one(const uint8_t *msg, size_t len, int nth, struct pb_buf *resp, char *err, size_t errlen)
{
	bool taken[MAX_DEVS] = { false };
	char names[MAX_DEVS * (sizeof(CDI_KIND) + NAME_MAX_LEN + 2)], key[128], shown[64];
	char name[sizeof(CDI_KIND) + NAME_MAX_LEN + 1];
	struct pb_buf entry = { 0 }, cdi = { 0 };
	struct pb_reader r;
	struct pb_field f;
	size_t nlen = 0;
	int ret, nids = 0;

	names[0] = '\0';
	key[0] = '\0';
	pb_reader_init(&r, msg, len);
	while ((ret = pb_next(&r, &f)) > 0) {
		int d;

		if (f.num != 1)         /* devices_ids; others are unknown to us */
			continue;
		if (!pb_is_string(&f)) {
			snprintf(err, errlen, "malformed ContainerAllocateRequest");
			return GRPC_INTERNAL;
		}
		d = find_dev(f.data, f.len);
		if (d < 0) {
			snprintf(err, errlen, "unknown device ID \"%s\"", printable(f.data, f.len, shown, sizeof(shown)));
			return GRPC_INVALID_ARGUMENT;
		}
		if (taken[d]) {
			snprintf(err, errlen, "device ID %s twice in one container request", dp.devs[d].id);
			return GRPC_INVALID_ARGUMENT;
		}
		if (!dp.devs[d].healthy) {
			snprintf(err, errlen, "%s %s is not healthy (%s)", WHAT, dp.devs[d].id,
				 dp.daemon_up ? "failed" : "unirdmad does not answer");
			return GRPC_UNAVAILABLE;
		}
		taken[d] = true;
		if (!nids++)
			snprintf(key, sizeof(key), CDI_ANNOTATION "%s", dp.devs[d].id);
		else if (opt.cni_pool)
			continue;       /* one device brings all of the pod's CNI vRNICs */
		snprintf(name, sizeof(name), CDI_KIND "=%s", opt.cni_pool ? CNI_DEVICE : dp.devs[d].id);
		/* at most MAX_DEVS names, each once: names cannot overflow */
		nlen += (size_t)snprintf(names + nlen, sizeof(names) - nlen, "%s%s", nlen ? "," : "", name);
		pb_put_string(&cdi, 1, name);
		pb_put_msg(resp, 5, &cdi);      /* cdi_devices: CDIDevice{name} */
		pb_buf_free(&cdi);
	}
	if (ret < 0) {
		snprintf(err, errlen, "malformed ContainerAllocateRequest");
		return GRPC_INTERNAL;
	}
	if (!nids) {
		snprintf(err, errlen, "container request %d names no device", nth);
		return GRPC_INVALID_ARGUMENT;
	}
	pb_put_string(&entry, 1, key);          /* annotations: map entry {key, value} */
	pb_put_string(&entry, 2, names);
	pb_put_msg(resp, 4, &entry);
	pb_buf_free(&entry);
	dp_log("Allocate: container %d: %s", nth, names);
	return 0;
}

static void h_allocate(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg)
{
	struct pb_buf out = { 0 };
	struct pb_reader r;
	struct pb_field f;
	char err[160];
	int ret = 0, code = 0, n = 0;

	(void)arg;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION       /* k8s/fuzz: no daemon */
	refresh();              /* what the daemon has now, not up to POLL_MS ago */
#endif
	pb_reader_init(&r, msg, len);
	while (!code && (ret = pb_next(&r, &f)) > 0) {
		struct pb_buf one = { 0 };

		if (f.num != 1)         /* container_requests */
			continue;
		if (f.wire != PB_LEN) {
			ret = -EBADMSG;
			break;
		}
		if (++n > MAX_CONTAINERS) {
			snprintf(err, sizeof(err), "more than %d container requests", MAX_CONTAINERS);
			code = GRPC_INVALID_ARGUMENT;
			break;
		}
		code = allocate_one(f.data, f.len, n, &one, err, sizeof(err));
		if (!code)
			pb_put_msg(&out, 1, &one);      /* container_responses */
		pb_buf_free(&one);
	}
	if (!code && ret < 0) {
		snprintf(err, sizeof(err), "malformed AllocateRequest");
		code = GRPC_INTERNAL;
	}
	if (!code && !n) {
		snprintf(err, sizeof(err), "no container requests");
		code = GRPC_INVALID_ARGUMENT;
	}
	if (!code && out.oom) {
		snprintf(err, sizeof(err), "out of memory");
		code = GRPC_RESOURCE_EXHAUSTED;
	}
	if (code) {
		dp_log("Allocate refused: %s", err);
		grpc_fail(call, code, "%s", err);
	} else {
		grpc_reply(call, &out);
	}
	pb_buf_free(&out);
}

#define MAX_PREFERRED 1024      /* device IDs in one list of a preferred-allocation request */

/* ContainerPreferredAllocationRequest: must_include first, then the
 * available ones in their order, up to allocation_size. */
static int prefer_one(const uint8_t *msg, size_t len, struct pb_buf *resp)
{
	struct { const uint8_t *p; size_t len; } avail[MAX_PREFERRED], must[MAX_PREFERRED];
	size_t navail = 0, nmust = 0, taken = 0;
	struct pb_reader r;
	struct pb_field f;
	int32_t size = 0;
	int ret;

	pb_reader_init(&r, msg, len);
	while ((ret = pb_next(&r, &f)) > 0) {
		if (f.num == 1 || f.num == 2) {
			if (!pb_is_string(&f))
				return -EBADMSG;
			if ((f.num == 1 ? navail : nmust) == MAX_PREFERRED)
				return -E2BIG;
			if (f.num == 1)
				avail[navail].p = f.data, avail[navail++].len = f.len;
			else
				must[nmust].p = f.data, must[nmust++].len = f.len;
		} else if (f.num == 3) {
			if (pb_get_int32(&f, &size))
				return -EBADMSG;
		}
	}
	if (ret < 0)
		return ret;
	if (size < 0)
		return -EINVAL;
	for (size_t i = 0; i < nmust; i++, taken++)
		pb_put_bytes(resp, 1, must[i].p, must[i].len);
	for (size_t i = 0; i < navail && taken < (size_t)size; i++) {
		bool dup = false;

		for (size_t k = 0; k < nmust && !dup; k++)
			dup = must[k].len == avail[i].len && !memcmp(must[k].p, avail[i].p, avail[i].len);
		if (!dup) {
			pb_put_bytes(resp, 1, avail[i].p, avail[i].len);
			taken++;
		}
	}
	return 0;
}

static void h_preferred(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg)
{
	struct pb_buf out = { 0 };
	struct pb_reader r;
	struct pb_field f;
	int ret;

	(void)arg;
	pb_reader_init(&r, msg, len);
	while ((ret = pb_next(&r, &f)) > 0) {
		struct pb_buf one = { 0 };

		if (f.num != 1)         /* container_requests */
			continue;
		ret = f.wire == PB_LEN ? prefer_one(f.data, f.len, &one) : -EBADMSG;
		pb_put_msg(&out, 1, &one);      /* container_responses */
		pb_buf_free(&one);
		if (ret < 0)
			break;
	}
	if (ret == -EINVAL || ret == -E2BIG)
		grpc_fail(call, GRPC_INVALID_ARGUMENT, "%s", ret == -EINVAL ? "negative allocation_size"
									 : "too many device IDs");
	else if (ret < 0)
		grpc_fail(call, GRPC_INTERNAL, "malformed PreferredAllocationRequest");
	else if (out.oom)
		grpc_fail(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
	else
		grpc_reply(call, &out);
	pb_buf_free(&out);
}

static void h_prestart(struct grpc_call *call, const uint8_t *msg, size_t len, void *arg)
{
	struct pb_reader r;
	struct pb_field f;
	int ret;

	(void)arg;
	pb_reader_init(&r, msg, len);
	while ((ret = pb_next(&r, &f)) > 0) {
		if (f.num == 1 && !pb_is_string(&f)) {  /* devices_ids */
			ret = -EBADMSG;
			break;
		}
	}
	if (ret < 0)
		grpc_fail(call, GRPC_INTERNAL, "malformed PreStartContainerRequest");
	else
		grpc_reply(call, NULL); /* nothing to do before a container starts */
}

static const struct grpc_method methods[] = {
	{ "/v1beta1.DevicePlugin/GetDevicePluginOptions", h_options },
	{ "/v1beta1.DevicePlugin/ListAndWatch", h_list_and_watch },
	{ "/v1beta1.DevicePlugin/GetPreferredAllocation", h_preferred },
	{ "/v1beta1.DevicePlugin/Allocate", h_allocate },
	{ "/v1beta1.DevicePlugin/PreStartContainer", h_prestart },
};

/* ------------------------------------------------------------ kubelet */

/* Serves our socket (again): kubelet removed it, or we start. */
static int serve_socket(void)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t mask;
	int fd, dirfd, ret;

	if (dp.listen_fd >= 0)
		close(dp.listen_fd);
	dp.listen_fd = -1;
	dp.sock_ino = 0;
	if (unlink(dp.sock_path) && errno != ENOENT)
		dp_log("removing the old %s: %s", dp.sock_path, strerror(errno));
	ret = unix_addr(dp.sock_path, &sa, &dirfd);
	if (ret)
		goto fail;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto close_dir;
	}
	mask = umask(0077);     /* kubelet runs as root; nobody else talks to us */
	ret = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(mask);
	if (ret || listen(fd, 16) || stat(dp.sock_path, &st)) {
		ret = ret ? ret : -errno;
		close(fd);
		goto close_dir;
	}
	if (dirfd >= 0)
		close(dirfd);
	dp.listen_fd = fd;
	dp.sock_dev = st.st_dev;
	dp.sock_ino = st.st_ino;
	dp.serve_failed = false;
	dp_log("serving %s", dp.sock_path);
	return 0;
close_dir:
	if (dirfd >= 0)
		close(dirfd);
fail:
	if (!dp.serve_failed)   /* tried again every tick: said once */
		dp_log("cannot serve %s: %s", dp.sock_path, strerror(-ret));
	dp.serve_failed = true;
	return ret;
}

/* The next try: soon at first (kubelet.sock exists from bind(), a moment
 * before kubelet listens on it), then at most every RETRY_MAX_MS. */
static void plan_retry(void)
{
	dp.backoff_ms = dp.backoff_ms ? dp.backoff_ms * 2 : RETRY_MIN_MS;
	if (dp.backoff_ms > RETRY_MAX_MS)
		dp.backoff_ms = RETRY_MAX_MS;
	dp.retry_at = now_ms() + dp.backoff_ms;
}

static void register_done(void *arg, int code, const char *message, const uint8_t *resp, size_t len)
{
	(void)arg, (void)resp, (void)len;
	dp.reg_pending = false;
	if (code == GRPC_OK) {
		dp.retry_at = 0;
		dp.backoff_ms = 0;
		dp.reg_err = 0;
		dp.waiting_logged = false;
		dp_log("registered with kubelet: resource %s, endpoint %s", opt.resource, dp.sock_name);
		return;
	}
	plan_retry();
	if (dp.reg_err != 1000 + code)  /* each reason once, not every retry */
		dp_log("kubelet did not register us (gRPC status %d: %s): trying again", code, message);
	dp.reg_err = 1000 + code;
}

static void start_register(void)
{
	int ret;

	dp.need_register = false;
	dp.retry_at = 0;
	ret = grpc_call_unary(dp.kubelet_sock, "/v1beta1.Registration/Register", &dp.regreq, REGISTER_TIMEOUT_MS,
			      register_done, NULL);
	if (!ret) {
		dp.reg_pending = true;
		return;
	}
	plan_retry();
	if (dp.reg_err != -ret)
		dp_log("cannot reach kubelet at %s (%s): trying again", dp.kubelet_sock, strerror(-ret));
	dp.reg_err = -ret;
}

/* Is our socket still ours, and is kubelet.sock the one we registered
 * with?  Kubelet, when it starts, removes every socket in its directory,
 * then serves kubelet.sock anew. */
static int add_watch(void)
{
	return inotify_add_watch(dp.inotify_fd, opt.kubelet_dir,
				 IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
					 IN_MOVE_SELF | IN_ONLYDIR);
}

/* kubelet_new: inotify saw kubelet.sock made (its inode may be the old
 * one's again). */
static void check_sockets(bool kubelet_new)
{
	struct stat st;

	if (dp.watch < 0)       /* the directory went away and came back? */
		dp.watch = add_watch();
	if (stat(dp.sock_path, &st) || st.st_ino != dp.sock_ino || st.st_dev != dp.sock_dev) {
		if (dp.sock_ino)
			dp_log("%s is gone (kubelet restarted?): serving it again", dp.sock_path);
		if (!serve_socket()) {
			dp.need_register = true;
			dp.backoff_ms = 0;
		}
	}
	if (stat(dp.kubelet_sock, &st) || !S_ISSOCK(st.st_mode)) {
		if (!dp.waiting_logged)
			dp_log("waiting for kubelet: no socket %s", dp.kubelet_sock);
		dp.waiting_logged = true;
		return;
	}
	if (st.st_ino != dp.kubelet_ino || kubelet_new) {
		if (dp.kubelet_ino)
			dp_log("%s is new (kubelet restarted?): registering again", dp.kubelet_sock);
		dp.kubelet_ino = st.st_ino;
		dp.need_register = true;
		dp.backoff_ms = 0;
	}
}

static void read_inotify(void)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(dp.inotify_fd, buf, sizeof(buf));
	bool ours = false, kubelet_new = false;

	for (char *p = buf; n > 0 && p < buf + n;) {
		const struct inotify_event *ev = (const struct inotify_event *)p;

		if (ev->mask & IN_IGNORED)
			dp.watch = -1;
		if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
			ours = true;
		} else if (ev->len && !strcmp(ev->name, "kubelet.sock")) {
			ours = true;
			kubelet_new |= !!(ev->mask & (IN_CREATE | IN_MOVED_TO));
		} else if (ev->len && !strcmp(ev->name, dp.sock_name)) {
			ours = true;
		}
		p += sizeof(*ev) + ev->len;
	}
	if (ours)
		check_sockets(kubelet_new);
}

static void accept_all(void)
{
	static long long last_refusal;

	for (;;) {
		int fd = accept4(dp.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return; /* EAGAIN, or the peer gave up already */
		if (grpc_serve_fd(fd, methods, sizeof(methods) / sizeof(methods[0]), NULL) &&
		    now_ms() - last_refusal > 1000) {
			dp_log("connection refused: too many open");
			last_refusal = now_ms();
		}
	}
}

/* ------------------------------------------------------------ main */

static int parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "kubelet-dir", required_argument, NULL, 'k' },
		{ "resource", required_argument, NULL, 'r' },
		{ "tenant", required_argument, NULL, 't' },
		{ "cni-pool", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *why;
	char *end;
	long pool;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt.state_dir = optarg;
			break;
		case 'k':
			opt.kubelet_dir = optarg;
			break;
		case 'r':
			opt.resource = optarg;
			opt.resource_set = true;
			break;
		case 't':
			opt.tenant = optarg;
			break;
		case 'c':
			errno = 0;
			pool = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pool < 0 || pool > MAX_DEVS) {
				fprintf(stderr, "unirdma-device-plugin: --cni-pool %s: not a number from 0 to %d\n",
					optarg, MAX_DEVS);
				return EXIT_USAGE;
			}
			opt.cni_pool = (int)pool;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case ':':
			fprintf(stderr, "unirdma-device-plugin: %s needs an argument (--help lists the options)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "unirdma-device-plugin: unknown option -%c (--help lists the options)\n",
					optopt);
			else
				fprintf(stderr, "unirdma-device-plugin: unknown option %s (--help lists the options)\n",
					argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unirdma-device-plugin: unexpected argument %s (--help lists the options)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (opt.state_dir[0] != '/' || opt.kubelet_dir[0] != '/') {
		fprintf(stderr, "unirdma-device-plugin: --%s %s: must be an absolute path\n",
			opt.state_dir[0] != '/' ? "state-dir" : "kubelet-dir",
			opt.state_dir[0] != '/' ? opt.state_dir : opt.kubelet_dir);
		return EXIT_USAGE;
	}
	if (strlen(opt.state_dir) > PATH_MAX - 64 || strlen(opt.kubelet_dir) > PATH_MAX - 300) {
		fprintf(stderr, "unirdma-device-plugin: a directory name is too long\n");
		return EXIT_USAGE;
	}
	if (opt.cni_pool && opt.tenant) {
		fprintf(stderr, "unirdma-device-plugin: --cni-pool and --tenant: the tenant of a CNI vRNIC is its "
			"network's (the conflist's), not the plugin's\n");
		return EXIT_USAGE;
	}
	if (opt.cni_pool && !opt.resource_set)
		opt.resource = CNI_RESOURCE;
	why = bad_resource(opt.resource);
	if (why || strlen(opt.resource) > 200) {
		fprintf(stderr, "unirdma-device-plugin: --resource %s: %s\n", opt.resource,
			why ? why : "longer than 200 characters");
		return EXIT_USAGE;
	}
	if (opt.tenant && !valid_tenant(opt.tenant)) {
		fprintf(stderr, "unirdma-device-plugin: --tenant %s: not a tenant name (1 to 32 letters, digits, "
			"'_' or '-', not beginning with '-')\n", opt.tenant);
		return EXIT_USAGE;
	}
	return 0;
}

/* Our socket's name: the resource with '/' as '-' ("unirdma.io-vrnic.sock"),
 * so that plugins of several resources share the directory. */
static void setup_names(void)
{
	char *p;

	snprintf(dp.sock_name, sizeof(dp.sock_name), "%s.sock", opt.resource);
	for (p = dp.sock_name; (p = strchr(p, '/'));)
		*p = '-';
	snprintf(dp.sock_path, sizeof(dp.sock_path), "%s/%s", opt.kubelet_dir, dp.sock_name);
	snprintf(dp.kubelet_sock, sizeof(dp.kubelet_sock), "%s/kubelet.sock", opt.kubelet_dir);
	snprintf(dp.admin_sock, sizeof(dp.admin_sock), "%s/admin.sock", opt.state_dir);
}

/* RegisterRequest{version, endpoint, resource_name, options}. */
static void build_register_request(void)
{
	struct pb_buf options = { 0 };

	pb_put_string(&dp.regreq, 1, API_VERSION);
	pb_put_string(&dp.regreq, 2, dp.sock_name);
	pb_put_string(&dp.regreq, 3, opt.resource);
	pb_put_bool(&options, 2, true);         /* get_preferred_allocation_available */
	pb_put_msg(&dp.regreq, 4, &options);
	pb_buf_free(&options);
}

static int setup(void)
{
	struct stat st;
	sigset_t sigs;

	if (stat(opt.kubelet_dir, &st) || !S_ISDIR(st.st_mode)) {
		dp_log("--kubelet-dir %s: %s", opt.kubelet_dir, errno ? strerror(errno) : "not a directory");
		return -ENOTDIR;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	dp.signal_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	dp.inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (dp.signal_fd < 0 || dp.inotify_fd < 0) {
		dp_log("signalfd/inotify: %s", strerror(errno));
		return -errno;
	}
	dp.watch = add_watch();
	if (dp.watch < 0) {
		dp_log("inotify on %s: %s", opt.kubelet_dir, strerror(errno));
		return -errno;
	}
	build_register_request();
	if (dp.regreq.oom)
		return -ENOMEM;
	return serve_socket();
}

/* SIGTERM, SIGINT: end the streams (kubelet sees a clean end), take our
 * socket away (if it is still ours), free everything. */
static void shut_down(int sig)
{
	struct stat st;

	dp_log("%s: stopping", strsignal(sig));
	for (int i = 0; i < dp.nwatchers; i++)
		grpc_stream_end(dp.watchers[i], GRPC_OK, NULL);
	grpc_flush();
	if (dp.listen_fd >= 0)
		close(dp.listen_fd);
	if (dp.sock_ino && !stat(dp.sock_path, &st) && st.st_ino == dp.sock_ino && st.st_dev == dp.sock_dev)
		unlink(dp.sock_path);
	grpc_close_all();
	pb_buf_free(&dp.regreq);
	close(dp.inotify_fd);
	close(dp.signal_fd);
}

int main(int argc, char **argv)
{
	long long next_poll = 0;
	int ret = parse_options(argc, argv);

	if (ret)
		return ret;
	setup_names();
	dp_log("starting: state dir %s, kubelet dir %s, resource %s%s%s", opt.state_dir, opt.kubelet_dir,
	       opt.resource, opt.tenant ? ", tenant " : "", opt.tenant ? opt.tenant : "");
	if (opt.cni_pool)
		dp_log("offering %d device%s " CNI_DEVICE "-0..%d, each allocated as " CDI_KIND "=" CNI_DEVICE,
		       opt.cni_pool, opt.cni_pool == 1 ? "" : "s", opt.cni_pool - 1);
	if (setup())
		return 1;
	for (;;) {
		struct pollfd pfd[64];
		int n = 0, base, timeout, t;
		long long now;

		now = now_ms();
		if (now >= next_poll) {
			refresh();
			check_sockets(false);
			next_poll = now + POLL_MS;
		}
		if (!dp.reg_pending && dp.listen_fd >= 0 &&
		    (dp.need_register || (dp.retry_at && now >= dp.retry_at)))
			start_register();
		timeout = (int)(next_poll - now);
		if (dp.retry_at && !dp.reg_pending && dp.retry_at - now < timeout)
			timeout = (int)(dp.retry_at - now);
		t = grpc_tick();
		if (t >= 0 && t < timeout)
			timeout = t;
		if (timeout < 0)
			timeout = 0;
		pfd[n++] = (struct pollfd){ .fd = dp.signal_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = dp.inotify_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = dp.listen_fd, .events = POLLIN };  /* -1: ignored */
		base = n;
		n += grpc_pollfds(pfd + n, (int)(sizeof(pfd) / sizeof(pfd[0])) - n);
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR) {
			dp_log("poll: %s", strerror(errno));
			return 1;
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			if (read(dp.signal_fd, &si, sizeof(si)) == sizeof(si)) {
				shut_down((int)si.ssi_signo);
				return 0;
			}
		}
		grpc_handle(pfd + base, n - base);
		if (pfd[1].revents)
			read_inotify();
		if (pfd[2].revents && dp.listen_fd >= 0)
			accept_all();
	}
}

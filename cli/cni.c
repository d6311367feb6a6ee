/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cni.c: unirdma-cni, a CNI plugin (spec versions 0.4.0 and 1.0.0) that
 * gives each container of a network a vRNIC with the container's address.
 *
 * It is chained after the plugin that makes the interface (bridge +
 * host-local, macvlan, ...), as rdma-cni is after sriov-cni, and is this
 * CLI run under the name unirdma-cni (build/bin/unirdma-cni is a link to
 * unirdma), so it talks to unirdmad through the CLI's admin client.
 *
 *   ADD    creates the vRNIC cni-<the first 28 characters of CNI_CONTAINERID>
 *          (characters other than [A-Za-z0-9_-] become '_'; 32 is the
 *          daemon's name limit) with the first IPv4 address of prevResult
 *          on CNI_IFNAME (else its first IPv4 address) and its prefix, in
 *          the tenant "tenant" of the config, else the network's "name".
 *          If that vRNIC exists with that address and tenant, ADD binds it
 *          (ADD is idempotent). It records CNI_NETNS in STATE/cni/NAME.json,
 *          where `unirdma cdi-hook --cni` looks for the vRNIC of a new
 *          container's network namespace. Prints prevResult unchanged but
 *          for its cniVersion: a chained plugin adds no interface or address.
 *   DEL    deletes the vRNIC and the record; what is gone already (or a
 *          daemon that is not running, which has no vRNICs) is success.
 *   CHECK  the vRNIC and the record exist, with prevResult's address.
 *   VERSION the versions above.
 *
 * Config keys besides the spec's: "stateDir" (unirdmad's state directory,
 * default the CLI's, /run/unirdma) and "tenant". Errors are the spec's error
 * object on stdout, exit code 1; the codes are the spec's (1 version, 4
 * environment, 5 I/O, 6 decoding, 7 network config, 11 try again later)
 * and 100 (unirdmad refused) and 101 (CHECK found a difference). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cni.h"

#define CNI_CONFIG_MAX (1 << 20)
#define CNI_NAME_PREFIX "cni-"
#define CNI_NAME_MAX 32                 /* URD_NAME_MAX: the daemon's limit */

enum {
	CNI_ERR_VERSION = 1,
	CNI_ERR_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_CONFIG = 7,
	CNI_ERR_TRY_LATER = 11,
	CNI_ERR_DAEMON = 100,           /* unirdmad refused the request */
	CNI_ERR_CHECK = 101,            /* CHECK: the vRNIC is missing or differs */
};

static const char *const supported[] = { "0.4.0", "1.0.0" };
#define NSUPPORTED (sizeof(supported) / sizeof(supported[0]))

struct cni_req {
	const char *command, *container, *netns, *ifname;
	const char *version;            /* the config's cniVersion ("1.0.0" until known) */
	const char *network, *tenant;
	json_object *conf, *prev;       /* prev: the config's prevResult, or NULL */
	char vrnic[CNI_NAME_MAX + 1];
	char record[PATH_MAX];
	char ip[INET_ADDRSTRLEN];       /* from prevResult */
	int prefix;
};

/* Prints the spec's error object on stdout; returns the exit code (1). */
static int __attribute__((format(printf, 3, 4)))
cni_error(const struct cni_req *r, int code, const char *fmt, ...)
{
	json_object *e = json_object_new_object();
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(e, "cniVersion", json_object_new_string(r->version));
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "msg", json_object_new_string(msg));
	json_object_object_add(e, "details", json_object_new_string(""));
	printf("%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(e);
	return 1;
}

char *cni_read_all(int fd, size_t max)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0) {
			buf[len] = '\0';
			return buf;
		}
		len += (size_t)n;
		if (len == cap) {
			char *nb = cap < max ? realloc(buf, 2 * cap + 1) : NULL;

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	free(buf);
	return NULL;
}

/* One admin request, with what the client prints on failure ("unirdma:
 * vrnic create X: this ip is already used ... (Address in use)") kept in
 * err for the CNI error instead of going to stderr. */
static int call(const char *what, json_object *req, json_object **resp, char *err, size_t errlen)
{
	int saved, mfd, rc;
	ssize_t n;

	err[0] = '\0';
	saved = dup(STDERR_FILENO);
	mfd = memfd_create("unirdma-cni", MFD_CLOEXEC);
	if (saved < 0 || mfd < 0 || dup2(mfd, STDERR_FILENO) < 0) {
		if (saved >= 0)
			close(saved);
		if (mfd >= 0)
			close(mfd);
		return admin_request(what, req, false, resp);
	}
	rc = admin_request(what, req, false, resp);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(mfd, err, errlen - 1, 0);
	close(mfd);
	err[n > 0 ? n : 0] = '\0';
	/* one line, without our "unirdma: " prefixes */
	for (char *p; (p = strstr(err, "unirdma: "));)
		memmove(p, p + 9, strlen(p + 9) + 1);
	for (char *p = err; *p; p++)
		if (*p == '\n')
			*p = p[1] ? ' ' : '\0';
	return rc;
}

static json_object *name_request(const char *cmd, const char *name)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	json_object_object_add(req, "name", json_object_new_string(name));
	return req;
}

/* The vRNIC's object from the daemon's list (put it), NULL if there is none.
 * Returns 0, or a CNI error code with err filled. */
static int find_vrnic(const char *name, json_object **out, char *err, size_t errlen)
{
	json_object *req = json_object_new_object(), *resp, *arr;
	int rc;

	*out = NULL;
	json_object_object_add(req, "cmd", json_object_new_string("vrnic.list"));
	rc = call("vrnic list", req, &resp, err, errlen);
	json_object_put(req);
	if (rc)
		return rc == CLI_EXIT_UNREACHABLE ? CNI_ERR_TRY_LATER : CNI_ERR_DAEMON;
	if (json_object_object_get_ex(resp, "vrnics", &arr) && json_object_is_type(arr, json_type_array))
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *v = json_object_array_get_idx(arr, i);

			if (!strcmp(jstr(v, "name"), name)) {
				*out = json_object_get(v);
				break;
			}
		}
	json_object_put(resp);
	return 0;
}

/* ------------------------------------------------------------ the request */

static const char *conf_str(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : NULL;
}

static bool valid_tenant(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > CNI_NAME_MAX || s[0] == '-')
		return false;
	for (const char *p = s; *p; p++)
		if (!(*p == '-' || *p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return false;
	return true;
}

/* The vRNIC's name for a container ID (see the rule at the top). */
static void vrnic_name(const char *id, char *buf, size_t len)
{
	size_t n = strlen(CNI_NAME_PREFIX);

	snprintf(buf, len, "%s", CNI_NAME_PREFIX);
	for (const char *p = id; *p && n < CNI_NAME_MAX && n + 1 < len; p++, n++)
		buf[n] = (*p == '-' || *p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			  (*p >= 'A' && *p <= 'Z')) ? *p : '_';
	buf[n] = '\0';
}

/* The address for the vRNIC: the first IPv4 of prevResult's ips on the
 * interface CNI_IFNAME, else the first IPv4. false if there is none. */
static bool prev_ipv4(struct cni_req *r)
{
	json_object *ips, *ifs = NULL;
	bool found = false;

	if (!r->prev || !json_object_object_get_ex(r->prev, "ips", &ips) ||
	    !json_object_is_type(ips, json_type_array))
		return false;
	json_object_object_get_ex(r->prev, "interfaces", &ifs);
	for (int pass = 0; pass < 2 && !found; pass++)
		for (size_t i = 0; i < json_object_array_length(ips) && !found; i++) {
			json_object *ipo = json_object_array_get_idx(ips, i), *idx;
			const char *addr = conf_str(ipo, "address"), *slash;
			char a[INET_ADDRSTRLEN], *end;
			struct in_addr in;
			long p;

			if (!addr || !(slash = strchr(addr, '/')) || (size_t)(slash - addr) >= sizeof(a))
				continue;
			memcpy(a, addr, (size_t)(slash - addr));
			a[slash - addr] = '\0';
			p = strtol(slash + 1, &end, 10);
			if (inet_pton(AF_INET, a, &in) != 1 || *end || slash[1] < '0' || slash[1] > '9' || p > 32)
				continue;
			if (pass == 0) {        /* on CNI_IFNAME only */
				json_object *ifo;

				if (!json_object_object_get_ex(ipo, "interface", &idx) ||
				    !json_object_is_type(idx, json_type_int) || !ifs ||
				    !json_object_is_type(ifs, json_type_array) || json_object_get_int(idx) < 0 ||
				    (size_t)json_object_get_int(idx) >= json_object_array_length(ifs))
					continue;
				ifo = json_object_array_get_idx(ifs, (size_t)json_object_get_int(idx));
				if (!conf_str(ifo, "name") || strcmp(conf_str(ifo, "name"), r->ifname))
					continue;
			}
			snprintf(r->ip, sizeof(r->ip), "%s", a);
			r->prefix = (int)p;
			found = true;
		}
	return found;
}

/* Parses stdin and the environment. Returns 0 or the exit code (error printed). */
static int parse_request(struct cni_req *r, bool del)
{
	char *text = cni_read_all(STDIN_FILENO, CNI_CONFIG_MAX);
	enum json_tokener_error jerr = json_tokener_success;
	const char *state;
	bool ok = false;

	if (!text)
		return cni_error(r, CNI_ERR_IO, "cannot read the network configuration on stdin");
	r->conf = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!r->conf || !json_object_is_type(r->conf, json_type_object))
		return cni_error(r, CNI_ERR_DECODE, "the network configuration on stdin is not a JSON object%s%s",
				 jerr != json_tokener_success ? ": " : "",
				 jerr != json_tokener_success ? json_tokener_error_desc(jerr) : "");
	if (conf_str(r->conf, "cniVersion"))
		r->version = conf_str(r->conf, "cniVersion");
	for (size_t i = 0; i < NSUPPORTED; i++)
		ok |= !strcmp(r->version, supported[i]);
	if (!ok)
		return cni_error(r, CNI_ERR_VERSION, "cniVersion %s is not supported (0.4.0, 1.0.0 are)", r->version);
	r->network = conf_str(r->conf, "name");
	if (!r->network)
		return cni_error(r, CNI_ERR_CONFIG, "the network configuration has no \"name\"");
	r->tenant = conf_str(r->conf, "tenant") ? conf_str(r->conf, "tenant") : r->network;
	if (!del && !valid_tenant(r->tenant))       /* DEL needs no tenant: it always cleans up */
		return cni_error(r, CNI_ERR_CONFIG, "tenant '%s' is not a valid tenant (1-32 of [A-Za-z0-9_-]); "
				 "set \"tenant\" in the plugin's configuration", r->tenant);
	state = conf_str(r->conf, "stateDir");
	if (state && state[0] != '/')
		return cni_error(r, CNI_ERR_CONFIG, "\"stateDir\" must be an absolute path");
	cli.state_dir = state ? state : CLI_DEFAULT_STATE_DIR;
	if (json_object_object_get_ex(r->conf, "prevResult", &r->prev) &&
	    !json_object_is_type(r->prev, json_type_object))
		return cni_error(r, CNI_ERR_CONFIG, "\"prevResult\" is not an object");
	r->container = getenv("CNI_CONTAINERID");
	r->netns = getenv("CNI_NETNS");
	r->ifname = getenv("CNI_IFNAME");
	if (!r->container || !*r->container)
		return cni_error(r, CNI_ERR_ENV, "CNI_CONTAINERID is missing");
	if (!r->ifname || !*r->ifname)
		return cni_error(r, CNI_ERR_ENV, "CNI_IFNAME is missing");
	if (!del && (!r->netns || r->netns[0] != '/'))
		return cni_error(r, CNI_ERR_ENV, "CNI_NETNS is missing or not an absolute path");
	vrnic_name(r->container, r->vrnic, sizeof(r->vrnic));
	if (snprintf(r->record, sizeof(r->record), "%s/%s/%s.json", cli.state_dir, CNI_RECORD_DIR, r->vrnic) >=
	    (int)sizeof(r->record))
		return cni_error(r, CNI_ERR_CONFIG, "\"stateDir\" is too long");
	return 0;
}

/* ------------------------------------------------------------ the records */

/* STATE/cni/NAME.json: which container and network namespace the vRNIC is for. */
static int write_record(const struct cni_req *r)
{
	json_object *o = json_object_new_object();
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	const char *text;
	int fd, ret = 0;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/%s", cli.state_dir, CNI_RECORD_DIR);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	json_object_object_add(o, "vrnic", json_object_new_string(r->vrnic));
	json_object_object_add(o, "containerId", json_object_new_string(r->container));
	json_object_object_add(o, "netns", json_object_new_string(r->netns));
	json_object_object_add(o, "ifname", json_object_new_string(r->ifname));
	json_object_object_add(o, "network", json_object_new_string(r->network));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	snprintf(tmp, sizeof(tmp), "%s.tmp", r->record);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		ret = -errno;
	else if (write(fd, text, len) != (ssize_t)len)
		ret = errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, r->record))
		ret = -errno;
	if (ret)
		unlink(tmp);
	json_object_put(o);
	return ret;
}

static json_object *read_record(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	json_object *o;
	char *text;

	if (fd < 0)
		return NULL;
	text = cni_read_all(fd, 1 << 16);
	close(fd);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

int cni_vrnics_of_netns(const char *state_dir, dev_t dev, ino_t ino, char (*names)[64], char (*ifnames)[16],
			int max)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent *e;
	int n = 0;
	DIR *dh;

	snprintf(dir, sizeof(dir), "%s/%s", state_dir, CNI_RECORD_DIR);
	dh = opendir(dir);
	if (!dh)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dh)) && n < max) {
		size_t len = strlen(e->d_name);
		const char *netns, *name, *ifname;
		json_object *o;
		struct stat st;

		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		o = read_record(path);
		netns = conf_str(o, "netns");
		name = conf_str(o, "vrnic");
		/* the recorded path names the namespace while the container lives
		 * (the runtime keeps it mounted); a stale record names none */
		if (netns && name && strlen(name) < 64 && !stat(netns, &st) && st.st_dev == dev && st.st_ino == ino) {
			ifname = conf_str(o, "ifname");
			/* the interface with the vRNIC's address (Multus: net1, ...) */
			if (!ifname || !*ifname || strlen(ifname) >= 16 || strpbrk(ifname, "/\n"))
				ifname = "";
			snprintf(ifnames[n], 16, "%s", ifname);
			snprintf(names[n++], 64, "%s", name);
		}
		json_object_put(o);
	}
	closedir(dh);
	return n;
}

/* ------------------------------------------------------------ commands */

static bool same_vrnic(json_object *v, const struct cni_req *r)
{
	return !strcmp(jstr(v, "tenant"), r->tenant) && !strcmp(jstr(v, "ip"), r->ip) &&
	       jint(v, "prefix") == r->prefix;
}

static int cmd_add(struct cni_req *r)
{
	json_object *req, *resp = NULL, *v = NULL, *out;
	char cidr[INET_ADDRSTRLEN + 4], err[1024], err2[1024];
	bool created = false;
	int rc, ret;

	if (!r->prev)
		return cni_error(r, CNI_ERR_CONFIG, "no prevResult: chain unirdma-cni after the plugin that "
				 "makes the interface (bridge, macvlan, ...) in a conflist");
	if (!prev_ipv4(r))
		return cni_error(r, CNI_ERR_CONFIG, "prevResult has no IPv4 address (of %s or any interface): "
				 "a vRNIC needs one", r->ifname);
	snprintf(cidr, sizeof(cidr), "%s/%d", r->ip, r->prefix);
	req = name_request("vrnic.create", r->vrnic);
	json_object_object_add(req, "tenant", json_object_new_string(r->tenant));
	json_object_object_add(req, "ip", json_object_new_string(cidr));
	rc = call("vrnic create", req, &resp, err, sizeof(err));
	json_object_put(req);
	json_object_put(resp);
	if (rc == CLI_EXIT_UNREACHABLE)
		return cni_error(r, CNI_ERR_TRY_LATER, "%s", err);
	if (rc) {
		/* it exists: ADD again for the same container binds it */
		ret = find_vrnic(r->vrnic, &v, err2, sizeof(err2));
		if (ret)
			return cni_error(r, ret, "%s", err2);
		if (!v)
			return cni_error(r, CNI_ERR_DAEMON, "%s", err);
		if (!same_vrnic(v, r)) {
			cni_error(r, CNI_ERR_DAEMON, "vRNIC %s exists with tenant %s and address %s/%lld, not %s %s",
				  r->vrnic, jstr(v, "tenant"), jstr(v, "ip"), jint(v, "prefix"), r->tenant, cidr);
			json_object_put(v);
			return 1;
		}
		json_object_put(v);
	} else {
		created = true;
	}
	ret = write_record(r);
	if (ret) {
		if (created) {
			req = name_request("vrnic.delete", r->vrnic);
			call("vrnic delete", req, &resp, err2, sizeof(err2));
			json_object_put(req);
			json_object_put(resp);
		}
		return cni_error(r, CNI_ERR_IO, "writing %s: %s", r->record, strerror(-ret));
	}
	/* the result is prevResult's, in the config's version */
	out = json_object_get(r->prev);
	json_object_object_add(out, "cniVersion", json_object_new_string(r->version));
	printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
	return 0;
}

static int cmd_del(struct cni_req *r)
{
	json_object *req, *resp = NULL, *v = NULL;
	char err[1024];
	int rc;

	/* a daemon that is not running has no vRNICs: nothing to delete */
	if (admin_reachable()) {
		rc = find_vrnic(r->vrnic, &v, err, sizeof(err));
		if (rc)
			return cni_error(r, rc, "%s", err);
		if (v) {
			json_object_put(v);
			req = name_request("vrnic.delete", r->vrnic);
			rc = call("vrnic delete", req, &resp, err, sizeof(err));
			json_object_put(req);
			json_object_put(resp);
			if (rc) {       /* gone meanwhile is gone */
				char err2[1024];

				if (find_vrnic(r->vrnic, &v, err2, sizeof(err2)) || v) {
					json_object_put(v);
					return cni_error(r, rc == CLI_EXIT_UNREACHABLE ? CNI_ERR_TRY_LATER
										   : CNI_ERR_DAEMON, "%s", err);
				}
			}
		}
	}
	if (unlink(r->record) && errno != ENOENT)
		return cni_error(r, CNI_ERR_IO, "removing %s: %s", r->record, strerror(errno));
	return 0;
}

static int cmd_check(struct cni_req *r)
{
	json_object *v, *rec;
	char err[1024];
	struct stat a, b;
	int rc;

	if (!r->prev)
		return cni_error(r, CNI_ERR_CONFIG, "CHECK needs prevResult");
	if (!prev_ipv4(r))
		return cni_error(r, CNI_ERR_CONFIG, "prevResult has no IPv4 address");
	rc = find_vrnic(r->vrnic, &v, err, sizeof(err));
	if (rc)
		return cni_error(r, rc, "%s", err);
	if (!v)
		return cni_error(r, CNI_ERR_CHECK, "vRNIC %s does not exist", r->vrnic);
	if (!same_vrnic(v, r)) {
		cni_error(r, CNI_ERR_CHECK, "vRNIC %s has tenant %s and address %s/%lld, not %s %s/%d", r->vrnic,
			  jstr(v, "tenant"), jstr(v, "ip"), jint(v, "prefix"), r->tenant, r->ip, r->prefix);
		json_object_put(v);
		return 1;
	}
	json_object_put(v);
	rec = read_record(r->record);
	rc = !rec || !conf_str(rec, "netns") || stat(conf_str(rec, "netns"), &a) || stat(r->netns, &b) ||
	     a.st_dev != b.st_dev || a.st_ino != b.st_ino;
	json_object_put(rec);
	if (rc)
		return cni_error(r, CNI_ERR_CHECK, "%s does not name the network namespace %s", r->record, r->netns);
	return 0;
}

static int cmd_version(void)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	char *text = cni_read_all(STDIN_FILENO, CNI_CONFIG_MAX);     /* {"cniVersion": ...}: any */

	free(text);
	for (size_t i = 0; i < NSUPPORTED; i++)
		json_object_array_add(arr, json_object_new_string(supported[i]));
	json_object_object_add(o, "cniVersion", json_object_new_string(supported[NSUPPORTED - 1]));
	json_object_object_add(o, "supportedVersions", arr);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return 0;
}

int cni_main(int argc, char **argv)
{
	struct cni_req r = { .version = supported[NSUPPORTED - 1] };
	const char *cmd = getenv("CNI_COMMAND");
	int rc;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: CNI_COMMAND=ADD|DEL|CHECK|VERSION CNI_CONTAINERID=ID CNI_NETNS=PATH \\\n"
		       "       CNI_IFNAME=IF CNI_PATH=DIRS unirdma-cni < NETWORK-CONFIG\n"
		       "\n"
		       "A CNI plugin (spec 0.4.0, 1.0.0), chained after the plugin that makes the\n"
		       "interface: it gives each container a vRNIC (cni-<container ID>) with the\n"
		       "interface's address. Config keys: \"stateDir\" (default %s),\n"
		       "\"tenant\" (default the network's name). See unirdma(8).\n", CLI_DEFAULT_STATE_DIR);
		return 0;
	}
	if (!cmd || !*cmd)
		return cni_error(&r, CNI_ERR_ENV, "CNI_COMMAND is missing (%s is a CNI plugin, run by container "
				 "runtimes; --help says more)", CNI_PROGRAM);
	if (!strcmp(cmd, "VERSION"))
		return cmd_version();
	if (strcmp(cmd, "ADD") && strcmp(cmd, "DEL") && strcmp(cmd, "CHECK"))
		return cni_error(&r, CNI_ERR_ENV, "CNI_COMMAND %s is not supported (ADD, DEL, CHECK, VERSION are)", cmd);
	rc = parse_request(&r, !strcmp(cmd, "DEL"));
	if (!rc) {
		if (!strcmp(cmd, "ADD"))
			rc = cmd_add(&r);
		else if (!strcmp(cmd, "DEL"))
			rc = cmd_del(&r);
		else
			rc = cmd_check(&r);
	}
	json_object_put(r.conf);
	return rc;
}

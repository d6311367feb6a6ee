/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-vrnic.c: `unirdma vrnic create|delete|list|show`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The counters of a vrnic object, in display order. */
static const char *const counters[] = { "contexts", "pds", "mrs", "cqs", "qps", "srqs" };
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static bool is_known_key(const char *key)
{
	static const char *const known[] = { "name", "tenant", "ip", "prefix", "gid", "dir", "limits",
					     "qos", "counters", "qp_list", "mem_bytes", "meta_bytes" };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(key, known[i]))
			return true;
	for (size_t i = 0; i < NCOUNTERS; i++)
		if (!strcmp(key, counters[i]))
			return true;
	return false;
}

static struct json_object *jobj(struct json_object *v, const char *key)
{
	struct json_object *o;

	return json_object_object_get_ex(v, key, &o) && json_object_is_type(o, json_type_object) ? o : NULL;
}

/* One "key value, key value" line of an object's integer members. */
static void print_members(const char *label, struct json_object *o)
{
	bool first = true;

	if (!o)
		return;
	printf("%-9s", label);
	json_object_object_foreach(o, k, val) {
		if (json_object_is_type(val, json_type_object))
			continue;
		printf("%s %s %s", first ? "" : ",", k, json_object_get_string(val));
		first = false;
	}
	printf("\n");
}

static void print_details(struct json_object *v)
{
	struct json_object *c = jobj(v, "counters"), *by = c ? jobj(c, "by_opcode") : NULL, *arr;

	printf("memory:   %lld bytes registered, %lld bytes of daemon metadata\n", jint(v, "mem_bytes"),
	       jint(v, "meta_bytes"));
	print_members("limits:", jobj(v, "limits"));
	print_members("qos:", jobj(v, "qos"));
	print_members("counters:", c);
	if (by) {
		printf("by opcode:           tx ops       tx bytes     rx ops       rx bytes\n");
		json_object_object_foreach(by, op, e)
			if (jint(e, "tx_ops") || jint(e, "rx_ops"))
				printf("  %-18s %10lld %14lld %10lld %14lld\n", op, jint(e, "tx_ops"),
				       jint(e, "tx_bytes"), jint(e, "rx_ops"), jint(e, "rx_bytes"));
	}
	if (json_object_object_get_ex(v, "qp_list", &arr) && json_object_is_type(arr, json_type_array) &&
	    json_object_array_length(arr)) {
		printf("QPs:        QPN  TYPE  STATE  CTX   DEST      tx bytes       rx bytes  errors\n");
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *q = json_object_array_get_idx(arr, i), *qc = jobj(q, "counters"), *qw;

			printf("  %#10llx  %-4s  %-5s  %3lld  %#8llx %14lld %14lld %7lld\n",
			       jint(q, "qpn"), jstr(q, "type"), jstr(q, "state"), jint(q, "context"),
			       jint(q, "dest_qpn"), qc ? jint(qc, "tx_bytes") : 0, qc ? jint(qc, "rx_bytes") : 0,
			       qc ? jint(qc, "errors") : 0);
			if ((qw = jobj(q, "wire")))     /* its peer is on another host */
				printf("              wire: psn %#llx, una %#llx, epsn %#llx, cwnd %lld, "
				       "srtt %lld us, retries left %lld, resend in %lld us\n",
				       jint(qw, "psn"), jint(qw, "una"), jint(qw, "epsn"), jint(qw, "cwnd"),
				       jint(qw, "srtt_ns") / 1000, jint(qw, "retry_left"), jint(qw, "rto_in_ns") / 1000);
		}
	}
}

static void print_vrnic(struct json_object *v)
{
	printf("name:     %s\n", jstr(v, "name"));
	printf("tenant:   %s\n", jstr(v, "tenant"));
	printf("ip:       %s/%lld\n", jstr(v, "ip"), jint(v, "prefix"));
	printf("gid:      %s\n", jstr(v, "gid"));
	printf("dir:      %s\n", jstr(v, "dir"));
	printf("objects: ");
	for (size_t i = 0; i < NCOUNTERS; i++)
		printf(" %s %lld%s", counters[i], jint(v, counters[i]), i + 1 < NCOUNTERS ? "," : "\n");
	print_details(v);
	/* Further fields are shown as they come; an object's members on one line. */
	json_object_object_foreach(v, key, val) {
		char label[64];

		if (is_known_key(key))
			continue;
		snprintf(label, sizeof(label), "%s:", key);
		if (!json_object_is_type(val, json_type_object)) {
			printf("%-9s %s\n", label, json_object_get_string(val));
			continue;
		}
		printf("%-9s", label);
		bool first = true;
		json_object_object_foreach(val, k2, v2) {
			printf("%s %s %s", first ? "" : ",", k2, json_object_get_string(v2));
			first = false;
		}
		printf("\n");
	}
}

static struct json_object *request(const char *cmd, const char *name)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	if (name)
		json_object_object_add(req, "name", json_object_new_string(name));
	return req;
}

/* Sends req (consumed), prints the vrnic object of the answer unless --json. */
static int request_and_show(const char *what, struct json_object *req)
{
	struct json_object *resp, *v;
	int rc = admin_request(what, req, cli.json, &resp);

	json_object_put(req);
	if (rc)
		return rc;
	if (!cli.json) {
		if (json_object_object_get_ex(resp, "vrnic", &v) &&
		    json_object_is_type(v, json_type_object))
			print_vrnic(v);
		else
			cli_err("%s: the answer has no vrnic object", what);
	}
	json_object_put(resp);
	return CLI_EXIT_OK;
}

/* Accepts exactly A.B.C.D/P with P in 0..32. */
static bool valid_cidr(const char *s)
{
	const char *slash = strchr(s, '/');
	char addr[INET_ADDRSTRLEN], *end;
	struct in_addr in;
	long p;

	if (!slash || (size_t)(slash - s) >= sizeof(addr) || !slash[1])
		return false;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1)
		return false;
	p = strtol(slash + 1, &end, 10);
	return *end == '\0' && slash[1] >= '0' && slash[1] <= '9' && p >= 0 && p <= 32;
}

/* Quota and rate options of create and set: option value -> (object, key). */
enum { OPT_SETTING = 0x2000, OPT_VM = 0x2100, OPT_VM_RAM, OPT_GRHLESS };
static const struct setting {
	const char *opt, *obj, *key;
	bool bytes;                     /* accepts K, M, G, T suffixes (powers of 1024) */
} settings[] = {
	{ "max-contexts", "limits", "max_contexts", false },
	{ "max-pds", "limits", "max_pds", false },
	{ "max-mrs", "limits", "max_mrs", false },
	{ "max-cqs", "limits", "max_cqs", false },
	{ "max-qps", "limits", "max_qps", false },
	{ "max-srqs", "limits", "max_srqs", false },
	{ "max-mem", "limits", "max_mem_bytes", true },
	{ "max-qp-wr", "limits", "max_qp_wr", false },
	{ "max-cqe", "limits", "max_cqe", false },
	{ "max-srq-wr", "limits", "max_srq_wr", false },
	{ "rate", "qos", "rate_bytes", true },
	{ "burst", "qos", "burst_bytes", true },
	{ "ops-rate", "qos", "rate_ops", false },
	{ "ops-burst", "qos", "burst_ops", false },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

#define SETTINGS_LONGOPTS \
	{ "max-contexts", required_argument, NULL, OPT_SETTING + 0 }, \
	{ "max-pds", required_argument, NULL, OPT_SETTING + 1 }, \
	{ "max-mrs", required_argument, NULL, OPT_SETTING + 2 }, \
	{ "max-cqs", required_argument, NULL, OPT_SETTING + 3 }, \
	{ "max-qps", required_argument, NULL, OPT_SETTING + 4 }, \
	{ "max-srqs", required_argument, NULL, OPT_SETTING + 5 }, \
	{ "max-mem", required_argument, NULL, OPT_SETTING + 6 }, \
	{ "max-qp-wr", required_argument, NULL, OPT_SETTING + 7 }, \
	{ "max-cqe", required_argument, NULL, OPT_SETTING + 8 }, \
	{ "max-srq-wr", required_argument, NULL, OPT_SETTING + 9 }, \
	{ "rate", required_argument, NULL, OPT_SETTING + 10 }, \
	{ "burst", required_argument, NULL, OPT_SETTING + 11 }, \
	{ "ops-rate", required_argument, NULL, OPT_SETTING + 12 }, \
	{ "ops-burst", required_argument, NULL, OPT_SETTING + 13 }, \
	{ "grhless-av", required_argument, NULL, OPT_GRHLESS }

#define SETTINGS_HELP \
	"Quotas (a verbs call over a quota fails with ENOMEM, or EINVAL for ring\n" \
	"sizes, EDQUOT for contexts, and changes nothing):\n" \
	"  --max-contexts N --max-pds N --max-mrs N --max-cqs N --max-qps N\n" \
	"  --max-srqs N --max-qp-wr N --max-cqe N --max-srq-wr N\n" \
	"  --max-mem BYTES       registered memory (K, M, G suffixes)\n" \
	"Rate limits, enforced by the engine (0: unlimited):\n" \
	"  --rate BYTES          bytes per second (K, M, G suffixes)\n" \
	"  --burst BYTES         bucket size (default 10 ms of --rate)\n" \
	"  --ops-rate N          work requests per second\n" \
	"  --ops-burst N         bucket size (default 10 ms of --ops-rate)\n" \
	"Verbs:\n" \
	"  --grhless-av on|off   address vectors without a GRH (is_global = 0): off,\n" \
	"                        the default, refuses them with EINVAL as a RoCE port\n" \
	"                        does; on finds the peer by QPN alone, as InfiniBand\n" \
	"                        does (qperf without -cm1, ibv_*_pingpong without -g)\n"

/* Parses a non-negative integer, with K/M/G/T (x1024) suffixes if bytes. */
static bool parse_amount(const char *s, bool bytes, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return false;
	v = strtoll(s, &end, 10);
	if (bytes && *end) {
		static const char suf[] = "KMGT";
		const char *p = strchr(suf, end[0] & ~0x20);

		if (!p || (end[1] && !(end[1] == 'i' && end[2] == 'B' && !end[3]) &&
			   !((end[1] == 'B' || end[1] == 'b') && !end[2])))
			return false;
		for (long i = 0; i <= p - suf; i++) {
			if (v > (1LL << 52))
				return false;
			v *= 1024;
		}
		end = (char *)"";
	}
	if (*end || v < 0)
		return false;
	*out = v;
	return true;
}

struct create_opts {
	const char *tenant, *ip;
	bool vm;                        /* --vm: a VM vRNIC (cmd-vm.c) */
	long long vm_ram;               /* --vm-ram bytes; 0: default */
	struct json_object *objs[2];    /* limits, qos; NULL until an option sets one */
	int grhless;                    /* --grhless-av: 0 not given, 1 on, 2 off */
	const char *bad;                /* the option whose value did not parse */
};

static int setting_opt(struct create_opts *o, int opt, const char *arg)
{
	const struct setting *st;
	long long v;
	int k;

	if (opt == OPT_GRHLESS) {
		if (strcmp(arg, "on") && strcmp(arg, "off")) {
			cli_err("invalid --grhless-av '%s': expected on or off", arg);
			return CLI_EXIT_USAGE;
		}
		o->grhless = strcmp(arg, "on") ? 2 : 1;
		return 0;
	}
	if (opt < OPT_SETTING || opt >= OPT_SETTING + (int)NSETTINGS)
		return CLI_EXIT_USAGE;
	st = &settings[opt - OPT_SETTING];
	if (!parse_amount(arg, st->bytes, &v)) {
		cli_err("invalid --%s '%s': expected a number%s", st->opt, arg,
			st->bytes ? " of bytes (K, M, G suffixes allowed)" : "");
		return CLI_EXIT_USAGE;
	}
	k = strcmp(st->obj, "limits") ? 1 : 0;
	if (!o->objs[k])
		o->objs[k] = json_object_new_object();
	json_object_object_add(o->objs[k], st->key, json_object_new_int64(v));
	return 0;
}

static int create_opt(int opt, const char *arg, void *ctx)
{
	struct create_opts *o = ctx;

	if (opt == 't')
		o->tenant = arg;
	else if (opt == 'i')
		o->ip = arg;
	else if (opt == OPT_VM)
		o->vm = true;
	else if (opt == OPT_VM_RAM) {
		if (!parse_amount(arg, true, &o->vm_ram) || o->vm_ram < (1LL << 20) || o->vm_ram % (1LL << 20)) {
			cli_err("invalid --vm-ram '%s': expected a whole number of MiB, e.g. 512M or 1G", arg);
			return CLI_EXIT_USAGE;
		}
		o->vm = true;
	} else
		return setting_opt(o, opt, arg);
	return 0;
}

static void add_settings(struct json_object *req, struct create_opts *o)
{
	if (o->objs[0])
		json_object_object_add(req, "limits", o->objs[0]);
	if (o->objs[1])
		json_object_object_add(req, "qos", o->objs[1]);
	if (o->grhless)
		json_object_object_add(req, "grhless_av", json_object_new_boolean(o->grhless == 1));
	o->objs[0] = o->objs[1] = NULL;
}

static void drop_settings(struct create_opts *o)
{
	json_object_put(o->objs[0]);
	json_object_put(o->objs[1]);
}

static int run_create(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tenant", required_argument, NULL, 't' },
		{ "ip", required_argument, NULL, 'i' },
		{ "vm", no_argument, NULL, OPT_VM },
		{ "vm-ram", required_argument, NULL, OPT_VM_RAM },
		SETTINGS_LONGOPTS,
		CLI_COMMON_LONGOPTS,
	};
	struct create_opts o = { 0 };
	struct json_object *req;
	char what[128];
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "t:i:", longopts, false, create_opt, &o, &first);
	if (rc >= 0) {
		drop_settings(&o);
		return rc;
	}
	if (argc - first != 1 || !o.tenant || !o.ip || !valid_cidr(o.ip))
		drop_settings(&o);
	if (argc - first != 1)
		return cli_usage_error(cmd, argc == first ? "vrnic create: NAME is missing"
							  : "vrnic create: takes one NAME");
	if (!o.tenant)
		return cli_usage_error(cmd, "vrnic create: --tenant TENANT is missing");
	if (!o.ip)
		return cli_usage_error(cmd, "vrnic create: --ip A.B.C.D/PREFIX is missing");
	if (!valid_cidr(o.ip))
		return cli_usage_error(cmd, "vrnic create: invalid --ip '%s': expected A.B.C.D/PREFIX, e.g. 10.77.0.1/24",
				       o.ip);
	snprintf(what, sizeof(what), "vrnic create %s", argv[first]);
	req = request("vrnic.create", argv[first]);
	json_object_object_add(req, "tenant", json_object_new_string(o.tenant));
	json_object_object_add(req, "ip", json_object_new_string(o.ip));
	if (o.vm)
		json_object_object_add(req, "vm", cli_vm_request(o.vm_ram));
	add_settings(req, &o);
	return request_and_show(what, req);
}

static int set_opt(int opt, const char *arg, void *ctx)
{
	struct create_opts *o = ctx;

	if (opt == 'i') {
		o->ip = arg;
		return 0;
	}
	return setting_opt(ctx, opt, arg);
}

/* A.B.C.D or A.B.C.D/PREFIX */
static bool valid_addr(const char *s)
{
	struct in_addr a;

	return strchr(s, '/') ? valid_cidr(s) : inet_pton(AF_INET, s, &a) == 1;
}

static int run_set(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ip", required_argument, NULL, 'i' },
		SETTINGS_LONGOPTS,
		CLI_COMMON_LONGOPTS,
	};
	struct create_opts o = { 0 };
	struct json_object *req;
	char what[128];
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "i:", longopts, false, set_opt, &o, &first);
	if (rc >= 0) {
		drop_settings(&o);
		return rc;
	}
	if (argc - first != 1) {
		drop_settings(&o);
		return cli_usage_error(cmd, argc == first ? "vrnic set: NAME is missing"
							  : "vrnic set: takes one NAME");
	}
	if (!o.objs[0] && !o.objs[1] && !o.ip && !o.grhless)
		return cli_usage_error(cmd, "vrnic set: nothing to change (give --ip, a quota, a rate option or --grhless-av)");
	if (o.ip && !valid_addr(o.ip)) {
		drop_settings(&o);
		return cli_usage_error(cmd, "vrnic set: invalid --ip '%s': expected A.B.C.D or A.B.C.D/PREFIX", o.ip);
	}
	snprintf(what, sizeof(what), "vrnic set %s", argv[first]);
	req = request("vrnic.set", argv[first]);
	if (o.ip)
		json_object_object_add(req, "ip", json_object_new_string(o.ip));
	add_settings(req, &o);
	return request_and_show(what, req);
}

/* Commands with exactly one NAME operand and no options of their own. */
static int one_name(const struct cli_cmd *cmd, int argc, char **argv, const char **name)
{
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", (const struct option[]){ CLI_COMMON_LONGOPTS },
		       false, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return cli_usage_error(cmd, argc == first ? "%s %s: NAME is missing"
							  : "%s %s: takes one NAME",
				       cmd->word1, cmd->word2);
	*name = argv[first];
	return -1;
}

static int run_delete(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *req, *resp;
	const char *name;
	char what[128];
	int rc = one_name(cmd, argc, argv, &name);

	if (rc >= 0)
		return rc;
	snprintf(what, sizeof(what), "vrnic delete %s", name);
	req = request("vrnic.delete", name);
	rc = admin_request(what, req, cli.json, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	json_object_put(resp);
	if (!cli.json)
		printf("deleted vrnic %s\n", name);
	return CLI_EXIT_OK;
}

static int run_show(const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *name;
	char what[128];
	int rc = one_name(cmd, argc, argv, &name);

	if (rc >= 0)
		return rc;
	snprintf(what, sizeof(what), "vrnic show %s", name);
	return request_and_show(what, request("vrnic.show", name));
}

static int run_list(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const char *const head[] = { "NAME", "TENANT", "IP", "GID", "CTX", "PD",
					    "MR", "CQ", "QP", "SRQ" };
	enum { NCOL = sizeof(head) / sizeof(head[0]) };
	struct json_object *req, *resp, *arr;
	char (*cells)[NCOL][80];
	int width[NCOL], rc, first;
	size_t n;

	rc = cli_parse(cmd, argc, argv, "", (const struct option[]){ CLI_COMMON_LONGOPTS },
		       false, NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (first != argc)
		return cli_usage_error(cmd, "vrnic list: takes no operands");
	req = request("vrnic.list", NULL);
	rc = admin_request("vrnic list", req, cli.json, &resp);
	json_object_put(req);
	if (rc || cli.json) {
		json_object_put(resp);
		return rc;
	}
	if (!json_object_object_get_ex(resp, "vrnics", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		cli_err("vrnic list: the answer has no vrnics array");
		json_object_put(resp);
		return CLI_EXIT_UNREACHABLE;
	}
	n = json_object_array_length(arr);
	cells = calloc(n + 1, sizeof(*cells));
	if (!cells) {
		json_object_put(resp);
		cli_err("vrnic list: out of memory");
		return CLI_EXIT_DAEMON;
	}
	for (int c = 0; c < NCOL; c++) {
		snprintf(cells[0][c], sizeof(cells[0][c]), "%s", head[c]);
		width[c] = (int)strlen(head[c]);
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		char (*row)[80] = cells[i + 1];

		snprintf(row[0], 80, "%s", jstr(v, "name"));
		snprintf(row[1], 80, "%s", jstr(v, "tenant"));
		snprintf(row[2], 80, "%s/%lld", jstr(v, "ip"), jint(v, "prefix"));
		snprintf(row[3], 80, "%s", jstr(v, "gid"));
		for (size_t k = 0; k < NCOUNTERS; k++)
			snprintf(row[4 + k], 80, "%lld", jint(v, counters[k]));
		for (int c = 0; c < NCOL; c++)
			if ((int)strlen(row[c]) > width[c])
				width[c] = (int)strlen(row[c]);
	}
	for (size_t i = 0; i <= n; i++)
		for (int c = 0; c < NCOL; c++)
			printf(c < 4 ? "%-*s%s" : "%*s%s", width[c], cells[i][c],
			       c + 1 < NCOL ? "  " : "\n");
	free(cells);
	json_object_put(resp);
	return CLI_EXIT_OK;
}

int vrnic_lookup(const char *name, struct vrnic_info *vi)
{
	struct json_object *req = request("vrnic.show", name), *resp, *v;
	char what[128];
	const char *dir;
	int rc;

	vi->ifname[0] = '\0';
	snprintf(what, sizeof(what), "vrnic %s", name);
	rc = admin_request(what, req, false, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	rc = CLI_EXIT_UNREACHABLE;
	if (!json_object_object_get_ex(resp, "vrnic", &v) || !json_object_is_type(v, json_type_object)) {
		cli_err("vrnic show %s: the answer has no vrnic object", name);
		goto out;
	}
	dir = jstr(v, "dir");
	if (dir[0] != '/' || strlen(dir) >= sizeof(vi->dir) ||
	    snprintf(vi->ip, sizeof(vi->ip), "%s", jstr(v, "ip")) >= (int)sizeof(vi->ip) ||
	    snprintf(vi->name, sizeof(vi->name), "%s", jstr(v, "name")) >= (int)sizeof(vi->name) ||
	    snprintf(vi->tenant, sizeof(vi->tenant), "%s", jstr(v, "tenant")) >=
		    (int)sizeof(vi->tenant)) {
		cli_err("vrnic show %s: the answer's name, tenant, ip or dir is unusable", name);
		goto out;
	}
	/* The name becomes a path component and a hostname inside containers. */
	if (!vi->name[0] || strchr(vi->name, '/') || !strcmp(vi->name, ".") ||
	    !strcmp(vi->name, "..")) {
		cli_err("vrnic show %s: the answer's name '%s' is unusable", name, vi->name);
		goto out;
	}
	strcpy(vi->dir, dir);
	vi->prefix = (int)jint(v, "prefix");
	rc = CLI_EXIT_OK;
out:
	json_object_put(resp);
	return rc;
}

const struct cli_cmd cmd_vrnic_create = {
	"vrnic", "create", "create a vRNIC",
	"usage: unirdma vrnic create NAME --tenant TENANT --ip A.B.C.D/PREFIX [--vm [--vm-ram SIZE]]\n"
	"\n"
	"Create the vRNIC NAME in virtual network TENANT with the IPv4 address\n"
	"A.B.C.D/PREFIX; its GID 0 is ::ffff:A.B.C.D. vRNICs reach only vRNICs of\n"
	"their own tenant. Prints the new vRNIC (the daemon's JSON with --json).\n"
	"\n"
	"Options:\n"
	"  -t, --tenant TENANT   virtual network the vRNIC belongs to\n"
	"  -i, --ip A.B.C.D/P    its address and prefix length\n"
	"  --vm                  a vRNIC for a QEMU guest: the daemon also creates the\n"
	"                        guest's RAM file; `unirdma vm-args NAME` prints the\n"
	"                        QEMU options that attach both\n"
	"  --vm-ram SIZE         the guest's RAM (M, G suffixes; default 512M); implies --vm\n"
	"\n" SETTINGS_HELP,
	run_create,
};

const struct cli_cmd cmd_vrnic_set = {
	"vrnic", "set", "change a vRNIC's address, quotas, rate limits and AV rule",
	"usage: unirdma vrnic set NAME [--ip A.B.C.D[/PREFIX]] [QUOTA, RATE AND VERBS OPTIONS]\n"
	"\n"
	"Change quotas, rate limits and the AV rule of the vRNIC NAME while it runs\n"
	"(a new AV rule applies to the next ibv_create_ah or ibv_modify_qp). Lowering a\n"
	"quota below what is in use keeps what exists and refuses new objects.\n"
	"All changes of one command are made, or none.\n"
	"\n"
	"Options:\n"
	"  -i, --ip A.B.C.D[/P]  a new address (and GID ::ffff:A.B.C.D); without /P the\n"
	"                        prefix stays. Refused while a program has the vRNIC\n"
	"                        open (EBUSY: its QPs carry the old GID) and when another\n"
	"                        vRNIC holds the address (as at create). Containers that\n"
	"                        `unirdma exec` started before keep the old address on\n"
	"                        their interface: start them again.\n"
	"\n" SETTINGS_HELP,
	run_set,
};

const struct cli_cmd cmd_vrnic_delete = {
	"vrnic", "delete", "delete a vRNIC",
	"usage: unirdma vrnic delete NAME\n"
	"\n"
	"Delete the vRNIC NAME. Its tenants' connections break as on a lost link.\n",
	run_delete,
};

const struct cli_cmd cmd_vrnic_list = {
	"vrnic", "list", "list vRNICs and their object counts",
	"usage: unirdma vrnic list [--json]\n"
	"\n"
	"List all vRNICs: name, tenant, address, GID and how many device contexts,\n"
	"PDs, MRs, CQs, QPs and SRQs their tenants hold.\n",
	run_list,
};

const struct cli_cmd cmd_vrnic_show = {
	"vrnic", "show", "show one vRNIC",
	"usage: unirdma vrnic show NAME [--json]\n"
	"\n"
	"Show the vRNIC NAME: tenant, address, GID, its directory on the host\n"
	"(holding the region file that tenants map), its object counts, quotas,\n"
	"rate limits, traffic counters (totals and by opcode) and its QPs.\n",
	run_show,
};

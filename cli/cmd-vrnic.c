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
	static const char *const known[] = { "name", "tenant", "ip", "prefix", "gid", "dir" };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(key, known[i]))
			return true;
	for (size_t i = 0; i < NCOUNTERS; i++)
		if (!strcmp(key, counters[i]))
			return true;
	return false;
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
	/* Further fields (counters, ...) are shown as they come; an object's
	 * members on one line. */
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

struct create_opts {
	const char *tenant, *ip;
};

static int create_opt(int opt, const char *arg, void *ctx)
{
	struct create_opts *o = ctx;

	if (opt == 't')
		o->tenant = arg;
	else if (opt == 'i')
		o->ip = arg;
	else
		return CLI_EXIT_USAGE;
	return 0;
}

static int run_create(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tenant", required_argument, NULL, 't' },
		{ "ip", required_argument, NULL, 'i' },
		CLI_COMMON_LONGOPTS,
	};
	struct create_opts o = { 0 };
	struct json_object *req;
	char what[128];
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "t:i:", longopts, false, create_opt, &o, &first);
	if (rc >= 0)
		return rc;
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
	    snprintf(vi->name, sizeof(vi->name), "%s", jstr(v, "name")) >= (int)sizeof(vi->name)) {
		cli_err("vrnic show %s: the answer's name, ip or dir is unusable", name);
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
	"usage: unirdma vrnic create NAME --tenant TENANT --ip A.B.C.D/PREFIX\n"
	"\n"
	"Create the vRNIC NAME in virtual network TENANT with the IPv4 address\n"
	"A.B.C.D/PREFIX; its GID 0 is ::ffff:A.B.C.D. vRNICs reach only vRNICs of\n"
	"their own tenant. Prints the new vRNIC (the daemon's JSON with --json).\n"
	"\n"
	"Options:\n"
	"  -t, --tenant TENANT   virtual network the vRNIC belongs to\n"
	"  -i, --ip A.B.C.D/P    its address and prefix length\n",
	run_create,
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
	"(holding the region file that tenants map) and its object counts.\n",
	run_show,
};

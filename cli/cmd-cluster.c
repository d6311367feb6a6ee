/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-cluster.c: `unirdma hosts`, `unirdma cluster [gids]`, `unirdma peer
 * admit|remove`: the fabric as this daemon sees it (its copy of the cluster
 * directory and the wire counters per peer host) and the admitted external
 * RoCE peers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int plain_request(const char *what, const char *cmdname, struct json_object *req,
			 struct json_object **resp)
{
	int rc;

	if (!req)
		req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string(cmdname));
	rc = admin_request(what, req, cli.json, resp);
	json_object_put(req);
	return rc;
}

static int operands(const struct cli_cmd *cmd, int argc, char **argv, const struct option *longopts,
		    int (*on_opt)(int, const char *, void *), void *ctx, int want, char ***ops)
{
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", longopts, false, on_opt, ctx, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != want)
		return cli_usage_error(cmd, "%s%s%s: takes %d operand%s", cmd->word1, cmd->word2 ? " " : "",
				       cmd->word2 ? cmd->word2 : "", want, want == 1 ? "" : "s");
	*ops = argv + first;
	return -1;
}

static long long sum(struct json_object *o)
{
	long long s = 0;

	json_object_object_foreach(o, k, v) {
		(void)k;
		s += json_object_get_int64(v);
	}
	return s;
}

/* "name=N name=N" of the non-zero members, or "-" */
static void print_nonzero(const char *label, struct json_object *o)
{
	bool any = false;

	json_object_object_foreach(o, k, v) {
		if (!json_object_get_int64(v))
			continue;
		printf("%s%s=%lld", any ? " " : label, k, (long long)json_object_get_int64(v));
		any = true;
	}
	if (any)
		printf("\n");
}

static int run_hosts(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *resp, *hosts, *un;
	char **ops;
	int rc = operands(cmd, argc, argv, (const struct option[]){ CLI_COMMON_LONGOPTS }, NULL, NULL, 0, &ops);

	if (rc >= 0)
		return rc;
	rc = plain_request("hosts", "hosts", NULL, &resp);
	if (rc || cli.json) {
		if (!rc)
			json_object_put(resp);
		return rc;
	}
	hosts = jget(resp, "hosts");
	printf("%-20s %-15s %-16s %-8s %5s %10s %10s %8s %8s %8s %8s %8s\n", "HOST", "IP", "INCARNATION", "KIND", "GIDS",
	       "TX_PKTS", "RX_PKTS", "RETRANS", "TIMEOUTS", "PROBES", "HELD", "DROPS");
	for (size_t i = 0; hosts && i < json_object_array_length(hosts); i++) {
		struct json_object *h = json_object_array_get_idx(hosts, i), *c = jget(h, "counters");
		bool ext = json_object_get_boolean(jget(h, "external"));

		printf("%-20s %-15s %-16s %-8s %5lld %10lld %10lld %8lld %8lld %8lld %8lld %8lld\n", jstr(h, "name"),
		       jstr(h, "ip"), ext ? "-" : jstr(h, "incarnation"), ext ? "external" : "unirdma", jint(h, "gids"),
		       jint(c, "tx_packets"), jint(c, "rx_packets"), jint(c, "retransmits"), jint(c, "timeouts"),
		       jint(c, "tail_probes"), jint(c, "held"), sum(jget(c, "drops")));
		print_nonzero("    naks sent: ", jget(c, "naks_tx"));
		print_nonzero("    naks received: ", jget(c, "naks_rx"));
		print_nonzero("    drops: ", jget(c, "drops"));
	}
	if ((un = jget(resp, "underlay")))
		printf("underlay %s (%s): sent %lld packets in %lld calls, received %lld in %lld, %lld not sent\n",
		       jstr(un, "dev"), jstr(un, "ip"), jint(un, "tx_packets"), jint(un, "tx_calls"),
		       jint(un, "rx_packets"), jint(un, "rx_calls"), jint(un, "tx_dropped"));
	if (un && jint(un, "held_buffer_qps"))
		printf("  buffers for packets held after a gap: %lld KiB, %lld QPs\n",
		       jint(un, "held_buffer_bytes") / 1024, jint(un, "held_buffer_qps"));
	un = jget(resp, "unattributed");
	if (un && sum(jget(un, "drops")))
		print_nonzero("packets of no known host dropped: ", jget(un, "drops"));
	json_object_put(resp);
	return CLI_EXIT_OK;
}

static int run_cluster(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *resp, *eps;
	char **ops;
	int rc = operands(cmd, argc, argv, (const struct option[]){ CLI_COMMON_LONGOPTS }, NULL, NULL, 0, &ops);

	if (rc >= 0)
		return rc;
	rc = plain_request("cluster", "cluster", NULL, &resp);
	if (rc || cli.json) {
		if (!rc)
			json_object_put(resp);
		return rc;
	}
	printf("host:        %s (incarnation %s)\n", jstr(resp, "host"), jstr(resp, "incarnation"));
	if (!json_object_get_boolean(jget(resp, "clustered"))) {
		printf("cluster:     none (this daemon works alone)\n");
	} else {
		eps = jget(resp, "endpoints");
		printf("etcd:        ");
		for (size_t i = 0; eps && i < json_object_array_length(eps); i++)
			printf("%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(eps, i)));
		printf(" (%s)\n", json_object_get_boolean(jget(resp, "reachable")) ? "reachable" : "NOT reachable");
		printf("lease:       %s (TTL %lld s)\n", *jstr(resp, "lease") ? jstr(resp, "lease") : "none",
		       jint(resp, "lease_ttl_s"));
		printf("revision:    %lld\n", jint(resp, "revision"));
		if (*jstr(resp, "last_error"))
			printf("last error:  %s\n", jstr(resp, "last_error"));
	}
	if (jint(resp, "qpn_range") > 0)
		printf("QPN range:   %lld: 0x%06llx-0x%06llx\n", jint(resp, "qpn_range"), jint(resp, "qpn_base"),
		       jint(resp, "qpn_base") + jint(resp, "qpn_span") - 1);
	else
		printf("QPN range:   none (the whole 24-bit space)\n");
	printf("remote GIDs: %lld\n", jint(resp, "remote_gids"));
	if (jint(resp, "skipped_entries") > 0)
		printf("bad entries skipped: %lld\n", jint(resp, "skipped_entries"));
	json_object_put(resp);
	return CLI_EXIT_OK;
}

static int run_gids(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *resp, *arr;
	char **ops;
	int rc = operands(cmd, argc, argv, (const struct option[]){ CLI_COMMON_LONGOPTS }, NULL, NULL, 0, &ops);

	if (rc >= 0)
		return rc;
	rc = plain_request("cluster gids", "cluster.gids", NULL, &resp);
	if (rc || cli.json) {
		if (!rc)
			json_object_put(resp);
		return rc;
	}
	printf("%-15s %-20s %-20s %s\n", "IP", "TENANT", "HOST", "STATE");
	arr = jget(resp, "local");
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *g = json_object_array_get_idx(arr, i);

		printf("%-15s %-20s %-20s %s (vRNIC %s)\n", jstr(g, "ip"), jstr(g, "tenant"), jstr(resp, "host"),
		       jstr(g, "state"), jstr(g, "vrnic"));
	}
	arr = jget(resp, "remote");
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *g = json_object_array_get_idx(arr, i);

		printf("%-15s %-20s %-20s %s\n", jstr(g, "ip"), jstr(g, "tenant"), jstr(g, "host"),
		       json_object_get_boolean(jget(g, "external")) ? "external" : "remote");
	}
	json_object_put(resp);
	return CLI_EXIT_OK;
}

static int tenant_opt(int opt, const char *arg, void *ctx)
{
	if (opt != 't')
		return CLI_EXIT_USAGE;
	*(const char **)ctx = arg;
	return 0;
}

static bool valid_ip(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

static int run_admit(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tenant", required_argument, NULL, 't' },
		CLI_COMMON_LONGOPTS,
	};
	struct json_object *req, *resp;
	const char *tenant = NULL;
	char **ops, what[64];
	int rc = operands(cmd, argc, argv, longopts, tenant_opt, &tenant, 1, &ops);

	if (rc >= 0)
		return rc;
	if (!tenant)
		return cli_usage_error(cmd, "peer admit: --tenant is required");
	if (!valid_ip(ops[0]))
		return cli_usage_error(cmd, "peer admit: '%s' is not an IPv4 address", ops[0]);
	req = json_object_new_object();
	json_object_object_add(req, "ip", json_object_new_string(ops[0]));
	json_object_object_add(req, "tenant", json_object_new_string(tenant));
	snprintf(what, sizeof(what), "peer admit %s", ops[0]);
	rc = plain_request(what, "peer.admit", req, &resp);
	if (rc)
		return rc;
	if (!cli.json)
		printf("peer %s admitted in tenant %s\n", ops[0], tenant);
	json_object_put(resp);
	return CLI_EXIT_OK;
}

static int run_remove(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *req, *resp;
	char **ops, what[64];
	int rc = operands(cmd, argc, argv, (const struct option[]){ CLI_COMMON_LONGOPTS }, NULL, NULL, 1, &ops);

	if (rc >= 0)
		return rc;
	if (!valid_ip(ops[0]))
		return cli_usage_error(cmd, "peer remove: '%s' is not an IPv4 address", ops[0]);
	req = json_object_new_object();
	json_object_object_add(req, "ip", json_object_new_string(ops[0]));
	snprintf(what, sizeof(what), "peer remove %s", ops[0]);
	rc = plain_request(what, "peer.remove", req, &resp);
	if (rc)
		return rc;
	if (!cli.json)
		printf("peer %s removed\n", ops[0]);
	json_object_put(resp);
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_hosts = {
	"hosts", NULL, "peer hosts and their wire counters",
	"usage: unirdma hosts [--json]\n"
	"\n"
	"The hosts this daemon exchanges RoCEv2 traffic with: the other unirdmad\n"
	"daemons of the cluster (name, underlay address, incarnation) and the admitted\n"
	"external RoCE peers, each with the traffic counters of its GIDs: packets and\n"
	"bytes each way, retransmissions, retransmission timeouts, tail-loss probes,\n"
	"ACKs, NAKs by syndrome sent and received, and received packets dropped by\n"
	"reason.  Packets that belong to no known host are counted under\n"
	"\"unattributed\".\n",
	run_hosts,
};

const struct cli_cmd cmd_cluster_gids = {
	"cluster", "gids", "the GIDs of the cluster directory",
	"usage: unirdma cluster gids [--json]\n"
	"\n"
	"This host's vRNIC GIDs with their state in the directory (published, pending\n"
	"while etcd is not reachable, conflict when another host serves the address),\n"
	"then the remote and external GIDs this daemon accepts traffic from, with\n"
	"their tenant and host.\n",
	run_gids,
};

const struct cli_cmd cmd_cluster = {
	"cluster", NULL, "this daemon's place in the cluster",
	"usage: unirdma cluster [--json]\n"
	"       unirdma cluster gids [--json]\n"
	"\n"
	"This host's name and incarnation, the etcd endpoints (unirdmad --cluster) and\n"
	"whether etcd is reachable, the host's lease, its QPN range, how many remote\n"
	"GIDs it knows, and the last error of the directory client.\n",
	run_cluster,
};

const struct cli_cmd cmd_peer_admit = {
	"peer", "admit", "admit an external RoCE node's GID into a tenant",
	"usage: unirdma peer admit IP --tenant TENANT\n"
	"\n"
	"Let the RoCE node with GID ::ffff:IP (kernel rxe, a hardware RNIC) reach the\n"
	"vRNICs of TENANT (and only those).  In a cluster it is stored in etcd\n"
	"(/unirdma/v1/external/IP) for every host; a lone daemon keeps it in\n"
	"STATE_DIR/peers.json.\n",
	run_admit,
};

const struct cli_cmd cmd_peer_remove = {
	"peer", "remove", "forget an admitted external peer",
	"usage: unirdma peer remove IP\n",
	run_remove,
};

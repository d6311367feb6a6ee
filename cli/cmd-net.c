/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-net.c: `unirdma net-down`: remove the containers' bridge namespace. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int run_net_down(const struct cli_cmd *cmd, int argc, char **argv)
{
	char nsname[64];
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", (const struct option[]){ CLI_COMMON_LONGOPTS }, false,
		       NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (first != argc)
		return cli_usage_error(cmd, "net-down: takes no operands");
	rc = net_remove_bridges(cli_state_dir_resolved());
	if (rc < 0) {
		cli_err("net-down: removing the network namespaces: %s", strerror(-rc));
		return CLI_EXIT_SETUP;
	}
	if (!rc) {
		net_ns_name(cli_state_dir_resolved(), NULL, nsname, sizeof(nsname));
		printf("no network namespace %s-*\n", nsname);
	}
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_net_down = {
	"net-down", NULL, "remove the containers' bridge networks",
	"usage: unirdma net-down\n"
	"\n"
	"Remove the network namespaces unirdma-<hash of the state dir>-<hash of the\n"
	"tenant>, one per tenant, that hold the bridges of `unirdma exec` containers.\n"
	"Running containers lose their network (their eth0 disappears). Does not\n"
	"need the daemon. Exit code 0 also when there was nothing to remove.\n",
	run_net_down,
};

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
	net_ns_name(cli_state_dir_resolved(), nsname, sizeof(nsname));
	rc = net_remove_bridge(nsname);
	if (rc < 0) {
		cli_err("net-down: removing network namespace %s: %s", nsname, strerror(-rc));
		return CLI_EXIT_SETUP;
	}
	printf(rc ? "removed network namespace %s\n" : "no network namespace %s\n", nsname);
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_net_down = {
	"net-down", NULL, "remove the containers' bridge network",
	"usage: unirdma net-down\n"
	"\n"
	"Remove the network namespace unirdma-<hash of the state dir> that holds the\n"
	"bridge of `unirdma exec` containers. Running containers lose their network\n"
	"(their eth0 disappears). Does not need the daemon. Exit code 0 also when\n"
	"there was nothing to remove.\n",
	run_net_down,
};

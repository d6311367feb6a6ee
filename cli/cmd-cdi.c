/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-cdi.c: `unirdma cdi-hook NAME`, the createRuntime hook of the CDI
 * spec the daemon keeps (daemon/cdi.c).  A container runtime runs it after
 * it made the container's namespaces and before the program starts, with
 * the OCI state ({"ociVersion", "id", "pid", "bundle", ...}) on stdin.  It
 * gives the container's network namespace what `unirdma exec` gives its
 * containers: eth0 on the tenant's bridge with the vRNIC's address. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define STATE_MAX (1 << 20)     /* the OCI state is small: annotations at most */

/* The container's PID from the OCI state on stdin; 0 if there is none. */
static pid_t state_pid(void)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	json_object *st = NULL, *v;
	pid_t pid = 0;
	ssize_t n;

	if (!buf)
		return 0;
	while ((n = read(STDIN_FILENO, buf + len, cap - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
		if (len == cap) {
			char *nb = cap < STATE_MAX ? realloc(buf, 2 * cap + 1) : NULL;

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	st = json_tokener_parse(buf);
	if (st && json_object_object_get_ex(st, "pid", &v) && json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 0 && json_object_get_int64(v) < (1 << 22))
		pid = (pid_t)json_object_get_int64(v);
	json_object_put(st);
	free(buf);
	return pid;
}

/* Enters pid's network namespace and sets eth0 up there (net.c). */
static int setup_in(pid_t pid, const struct vrnic_info *vi)
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		cli_err("cdi-hook: entering %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	close(fd);
	rc = net_setup_inside(vi->ip, vi->prefix);
	return rc;
}

static int run_cdi_hook(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct vrnic_info vi;
	char nsname[64];
	int rc, first;
	pid_t pid;

	rc = cli_parse(cmd, argc, argv, "", (const struct option[]){ CLI_COMMON_LONGOPTS }, false,
		       NULL, NULL, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return cli_usage_error(cmd, argc == first ? "cdi-hook: NAME is missing" : "cdi-hook: takes one NAME");
	pid = state_pid();
	if (!pid) {
		cli_err("cdi-hook: no container PID in the OCI state on stdin (a container runtime runs this hook)");
		return CLI_EXIT_USAGE;
	}
	rc = vrnic_lookup(argv[first], &vi);
	if (rc)
		return rc;
	if (net_tenant_bridge(cli_state_dir_resolved(), vi.tenant, nsname, sizeof(nsname)))
		return CLI_EXIT_SETUP;
	if (net_attach(nsname, pid) < 0 || setup_in(pid, &vi))
		return CLI_EXIT_SETUP;
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_cdi_hook = {
	"cdi-hook", NULL, "attach a CDI container to its vRNIC's network (run by runtimes)",
	"usage: unirdma cdi-hook NAME < OCI-STATE\n"
	"\n"
	"The createRuntime hook of the CDI spec unirdmad keeps (kind unirdma.io/vrnic,\n"
	"see unirdmad(8) --cdi-dir): a container runtime runs it with the OCI state\n"
	"of a new container on stdin. It adds eth0 with the address of the vRNIC NAME\n"
	"to the container's network namespace, on the tenant's bridge, as `unirdma\n"
	"exec` does. The container must have no eth0 of its own (podman --network\n"
	"none). Not meant to be run by hand.\n",
	run_cdi_hook,
};

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-daemon.c: `unirdma daemon ping|stop`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define STOP_WAIT_MS 10000

static int simple_request(const char *what, const char *cmdname, struct json_object **resp)
{
	struct json_object *req = json_object_new_object();
	int rc;

	json_object_object_add(req, "cmd", json_object_new_string(cmdname));
	rc = admin_request(what, req, cli.json, resp);
	json_object_put(req);
	return rc;
}

static int no_operands(const struct cli_cmd *cmd, int argc, char **argv,
		       const struct option *longopts, int (*on_opt)(int, const char *, void *),
		       void *ctx)
{
	int rc, first;

	rc = cli_parse(cmd, argc, argv, "", longopts, false, on_opt, ctx, &first);
	if (rc >= 0)
		return rc;
	if (first != argc)
		return cli_usage_error(cmd, "%s %s: takes no operands", cmd->word1, cmd->word2);
	return -1;
}

static int run_ping(const struct cli_cmd *cmd, int argc, char **argv)
{
	struct json_object *resp;
	int rc = no_operands(cmd, argc, argv, (const struct option[]){ CLI_COMMON_LONGOPTS },
			     NULL, NULL);

	if (rc >= 0)
		return rc;
	rc = simple_request("daemon ping", "ping", &resp);
	if (rc)
		return rc;
	if (!cli.json)
		printf("unirdmad %s is up at %s\n", jstr(resp, "version"), admin_socket_path());
	json_object_put(resp);
	return CLI_EXIT_OK;
}

static pid_t read_pidfile(void)
{
	char path[4096];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/unirdmad.pid", cli.state_dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* A zombie counts as gone: its parent may not have reaped it yet. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	bool alive = true;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno != ENOENT;
	if (fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) && rp[1] == ' ' &&
	    (rp[2] == 'Z' || rp[2] == 'X'))
		alive = false;
	fclose(f);
	return alive;
}

static int stop_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	if (opt != 'n')
		return CLI_EXIT_USAGE;
	*(bool *)ctx = true;
	return 0;
}

static int run_stop(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "no-wait", no_argument, NULL, 'n' },
		CLI_COMMON_LONGOPTS,
	};
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	struct json_object *resp;
	bool no_wait = false;
	pid_t pid;
	int rc = no_operands(cmd, argc, argv, longopts, stop_opt, &no_wait);

	if (rc >= 0)
		return rc;
	pid = read_pidfile();
	if (pid && !pid_alive(pid))
		pid = 0; /* stale pid file */
	rc = simple_request("daemon stop", "shutdown", &resp);
	if (rc)
		return rc;
	json_object_put(resp);
	if (!no_wait) {
		/* The daemon answers before it exits: wait until it is gone, so that
		 * scripts can remove its state directory right after. */
		for (int waited = 0;; waited += 10) {
			if (pid ? !pid_alive(pid) : !admin_reachable())
				break;
			if (waited >= STOP_WAIT_MS) {
				cli_err("daemon stop: unirdmad%s is still running after %d s",
					pid ? "" : " (no pid file; judged by its admin socket)",
					STOP_WAIT_MS / 1000);
				return CLI_EXIT_DAEMON;
			}
			nanosleep(&tick, NULL);
		}
	}
	if (!cli.json)
		printf("unirdmad stopped\n");
	return CLI_EXIT_OK;
}

const struct cli_cmd cmd_daemon_ping = {
	"daemon", "ping", "check that unirdmad answers",
	"usage: unirdma daemon ping [--json]\n"
	"\n"
	"Ask unirdmad for its version. Exit code 0 when it answers, 3 when it is\n"
	"not reachable: scripts use this to wait for a starting daemon.\n",
	run_ping,
};

const struct cli_cmd cmd_daemon_stop = {
	"daemon", "stop", "stop unirdmad",
	"usage: unirdma daemon stop [--no-wait]\n"
	"\n"
	"Ask unirdmad to shut down, then wait (up to 10 s) until its process (from\n"
	"STATE_DIR/unirdmad.pid) has exited.\n"
	"\n"
	"Options:\n"
	"  -n, --no-wait   return as soon as the daemon has accepted the request\n",
	run_stop,
};

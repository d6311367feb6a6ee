/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* main.c: `unirdma` entry point: global options, the command table, help.
 *
 * Each command is one table entry; its usage text and code live in the
 * cmd-*.c file named after it. Commands are one or two words ("exec",
 * "vrnic create"); global options may come before the command or among its
 * own options. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cni.h"

#ifndef UNIRDMA_VERSION
#define UNIRDMA_VERSION "0.1"
#endif

struct cli_globals cli;

extern const struct cli_cmd cmd_vrnic_create, cmd_vrnic_delete, cmd_vrnic_list,
	cmd_vrnic_show, cmd_vrnic_set, cmd_daemon_ping, cmd_daemon_stop, cmd_exec, cmd_net_down,
	cmd_vm_args, cmd_hosts, cmd_cluster_gids, cmd_cluster, cmd_peer_admit, cmd_peer_remove,
	cmd_cdi_hook, cmd_rsh;

static const struct cli_cmd *const commands[] = {
	&cmd_vrnic_create, &cmd_vrnic_delete, &cmd_vrnic_list, &cmd_vrnic_show, &cmd_vrnic_set,
	&cmd_exec, &cmd_daemon_ping, &cmd_daemon_stop, &cmd_net_down, &cmd_vm_args,
	&cmd_hosts, &cmd_cluster_gids, &cmd_cluster, &cmd_peer_admit, &cmd_peer_remove,       /* cmd-cluster.c */
	&cmd_cdi_hook, &cmd_rsh,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char main_usage_head[] =
	"usage: unirdma [--state-dir DIR] [--json] COMMAND [ARGS...]\n"
	"\n"
	"Control unirdmad, the unirdma daemon that provides virtual RDMA NICs (vRNICs),\n"
	"and run programs as tenants of a vRNIC.\n"
	"\n"
	"Commands:\n";

static const char main_usage_tail[] =
	"\n"
	"Global options:\n"
	"  --state-dir DIR  the daemon's state directory (env UNIRDMA_STATE_DIR,\n"
	"                   default " CLI_DEFAULT_STATE_DIR "); its admin socket is DIR/admin.sock\n"
	"  --json           print the daemon's raw JSON answer\n"
	"  -h, --help       this help; `unirdma COMMAND --help` for one command\n"
	"  --version        print the CLI's version\n"
	"\n"
	"Exit codes:\n"
	"  0  success\n"
	"  1  the daemon refused the request (its error is printed)\n"
	"  2  usage error\n"
	"  3  the daemon is not reachable (or gave no valid answer)\n"
	"  exec returns PROGRAM's exit code (128+N if a signal N killed it); before\n"
	"  PROGRAM runs it fails with 1-3 as above, 125 if the container could not be\n"
	"  set up, 126 if PROGRAM is not executable, 127 if it was not found.\n";

static void cmd_full_name(const struct cli_cmd *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", c->word1, c->word2 ? " " : "", c->word2 ? c->word2 : "");
}

static void print_main_usage(FILE *f)
{
	char name[64];

	fputs(main_usage_head, f);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		cmd_full_name(commands[i], name, sizeof(name));
		fprintf(f, "  %-14s %s\n", name, commands[i]->summary);
	}
	fputs(main_usage_tail, f);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("unirdma: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	char name[64] = "";
	va_list ap;

	fflush(stdout);
	fputs("unirdma: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd) {
		cmd_full_name(cmd, name, sizeof(name));
		fprintf(stderr, "\nTry 'unirdma %s --help'.\n", name);
	} else {
		fputs("\nTry 'unirdma --help'.\n", stderr);
	}
	return CLI_EXIT_USAGE;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, const char *shortopts,
	      const struct option *longopts, bool stop_at_operand,
	      int (*on_opt)(int opt, const char *arg, void *ctx), void *ctx, int *first_arg)
{
	char opts[64];
	int c, rc;

	/* "+" stops at the first operand (exec's PROGRAM keeps its options);
	 * ":" lets us word the missing-argument error ourselves. */
	snprintf(opts, sizeof(opts), "%s:h%s", stop_at_operand ? "+" : "", shortopts);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
		switch (c) {
		case CLI_OPT_STATE_DIR:
			cli.state_dir = optarg;
			break;
		case CLI_OPT_JSON:
			cli.json = true;
			break;
		case 'h':
		case CLI_OPT_HELP:
			fputs(cmd->usage, stdout);
			return 0;
		case ':':
			return cli_usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
		case '?':
			if (optopt)
				return cli_usage_error(cmd, "unknown option '-%c'", optopt);
			return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		default:
			rc = on_opt ? on_opt(c, optarg, ctx) : CLI_EXIT_USAGE;
			if (rc)
				return rc;
		}
	}
	*first_arg = optind;
	return -1;
}

const char *cli_state_dir_resolved(void)
{
	static char buf[PATH_MAX];

	if (!buf[0] && !realpath(cli.state_dir, buf))
		snprintf(buf, sizeof(buf), "%s", cli.state_dir);
	return buf;
}

static const struct cli_cmd *find_command(int argc, char **argv, int *nwords)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct cli_cmd *c = commands[i];

		if (strcmp(argv[0], c->word1))
			continue;
		if (!c->word2) {
			*nwords = 1;
			return c;
		}
		if (argc > 1 && !strcmp(argv[1], c->word2)) {
			*nwords = 2;
			return c;
		}
	}
	return NULL;
}

/* `unirdma vrnic` or `unirdma vrnic --help`: list that group's commands. */
static int group_help(const char *word, bool asked)
{
	char name[64];
	bool any = false;
	FILE *f = asked ? stdout : stderr;

	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i]->word1, word) || !commands[i]->word2)
			continue;
		if (!any)
			fprintf(f, "usage: unirdma %s SUBCOMMAND ...\n\nSubcommands:\n", word);
		any = true;
		cmd_full_name(commands[i], name, sizeof(name));
		fprintf(f, "  %-14s %s\n", name, commands[i]->summary);
	}
	if (!any)
		return cli_usage_error(NULL, "unknown command '%s'", word);
	if (!asked)
		fputs("\nA subcommand is missing.\n", f);
	return asked ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "version", no_argument, NULL, 'V' },
		CLI_COMMON_LONGOPTS,
	};
	const struct cli_cmd *cmd;
	const char *prog = argc > 0 && argv[0] ? argv[0] : "", *slash = strrchr(prog, '/');
	int c, nwords;

	/* run as unirdma-cni (a link to us in a CNI plugin directory): the plugin */
	if (!strcmp(slash ? slash + 1 : prog, CNI_PROGRAM))
		return cni_main(argc, argv);
	cli.state_dir = getenv("UNIRDMA_STATE_DIR");
	if (!cli.state_dir || !*cli.state_dir)
		cli.state_dir = CLI_DEFAULT_STATE_DIR;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case CLI_OPT_STATE_DIR:
			cli.state_dir = optarg;
			break;
		case CLI_OPT_JSON:
			cli.json = true;
			break;
		case 'h':
		case CLI_OPT_HELP:
			print_main_usage(stdout);
			return CLI_EXIT_OK;
		case 'V':
			printf("unirdma %s\n", UNIRDMA_VERSION);
			return CLI_EXIT_OK;
		case ':':
			return cli_usage_error(NULL, "option '%s' needs an argument", argv[optind - 1]);
		default:
			return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		print_main_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help")) {
		if (argc == 1) {
			print_main_usage(stdout);
			return CLI_EXIT_OK;
		}
		cmd = find_command(argc - 1, argv + 1, &nwords);
		if (!cmd)
			return group_help(argv[1], true);
		fputs(cmd->usage, stdout);
		return CLI_EXIT_OK;
	}
	cmd = find_command(argc, argv, &nwords);
	if (!cmd) {
		if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
			return group_help(argv[0], true);
		if (argc > 1 && argv[1][0] != '-') {
			/* a known group with an unknown subcommand */
			for (size_t i = 0; i < NCOMMANDS; i++)
				if (!strcmp(commands[i]->word1, argv[0]))
					return cli_usage_error(NULL, "unknown command '%s %s'",
							       argv[0], argv[1]);
		}
		return group_help(argv[0], false);
	}
	/* The command sees its last word as argv[0], getopt style. */
	return cmd->run(cmd, argc - (nwords - 1), argv + (nwords - 1));
}

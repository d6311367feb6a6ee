/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cli.h: shared declarations of the `unirdma` command-line tool.
 *
 * The CLI is a thin client of unirdmad's admin socket (admin.c) plus a small
 * container runtime for `unirdma exec` (container.c, net.c). Each command is
 * one entry of the table in main.c, implemented in a cmd-*.c file that
 * carries its own usage text. */
#ifndef UNIRDMA_CLI_H
#define UNIRDMA_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

struct json_object;

/* Exit codes (documented in `unirdma --help` and README.md). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_DAEMON = 1,      /* the daemon answered {"ok":false,...} */
	CLI_EXIT_USAGE = 2,       /* bad command line */
	CLI_EXIT_UNREACHABLE = 3, /* no daemon at the admin socket, or no valid answer */
	CLI_EXIT_SETUP = 125,     /* exec: the container or environment could not be set up */
	CLI_EXIT_NOEXEC = 126,    /* exec: PROGRAM found but not executable */
	CLI_EXIT_NOTFOUND = 127,  /* exec: PROGRAM not found */
};

#define CLI_DEFAULT_STATE_DIR "/run/unirdma"
#define CLI_CONTAINER_RUN_DIR "/run/unirdma"     /* hidden inside a container */
#define CLI_CONTAINER_DEVDIR "/run/unirdma/dev" /* where a container sees its vRNIC */

struct cli_cmd {
	const char *word1, *word2; /* "vrnic" "create"; word2 NULL for one-word commands */
	const char *summary;       /* one line for `unirdma --help` */
	const char *usage;         /* full help of the command, starting with its synopsis */
	int (*run)(const struct cli_cmd *cmd, int argc, char **argv);
};

/* Global options, settable before the command or among its options. */
struct cli_globals {
	const char *state_dir;
	bool json;
};
extern struct cli_globals cli;

/* Options every command accepts; a command's getopt table ends with these. */
enum { CLI_OPT_STATE_DIR = 0x1000, CLI_OPT_JSON, CLI_OPT_HELP };
#define CLI_COMMON_LONGOPTS                                            \
	{ "state-dir", required_argument, NULL, CLI_OPT_STATE_DIR },   \
	{ "json", no_argument, NULL, CLI_OPT_JSON },                   \
	{ "help", no_argument, NULL, CLI_OPT_HELP },                   \
	{ NULL, 0, NULL, 0 }

/* Parses a command's options with getopt_long (argv[0] is the command word).
 * Calls on_opt for each option not common to all commands; on_opt returns 0
 * or a CLI exit code. Returns -1 on success with *first_arg set to the index
 * of the first operand, 0 after printing --help, or a CLI exit code. */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, const char *shortopts,
	      const struct option *longopts, bool stop_at_operand,
	      int (*on_opt)(int opt, const char *arg, void *ctx), void *ctx, int *first_arg);

/* Prints "unirdma: <fmt>" to stderr; usage_error also points at --help. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* admin.c: one request/answer exchange with unirdmad.
 * Sends req (not consumed). On {"ok":true} stores the parsed answer in *resp
 * (caller puts it) and returns 0. Otherwise prints why, prefixed with what,
 * and returns CLI_EXIT_DAEMON or CLI_EXIT_UNREACHABLE. When echo_json is set
 * the daemon's raw answer line goes to stdout, whatever it says. */
int admin_request(const char *what, struct json_object *req, bool echo_json,
		  struct json_object **resp);
const char *admin_socket_path(void);
/* Whether something accepts connections on the admin socket. */
bool admin_reachable(void);

/* Field getters on a daemon answer that fall back to "?" / -1. */
const char *jstr(struct json_object *o, const char *key);
long long jint(struct json_object *o, const char *key);

/* A vRNIC as `vrnic.show` describes it, the part exec needs. */
struct vrnic_info {
	char name[64];
	char tenant[256];
	char ip[16];
	int prefix;
	char dir[4096];
	/* The container's interface that holds ip (the netdev of the GID in
	 * its /sys/class/infiniband tree); empty: eth0. */
	char ifname[16];
};
/* Fills *vi from vrnic.show NAME. Returns 0 or a CLI exit code (printed). */
int vrnic_lookup(const char *name, struct vrnic_info *vi);

/* net.c: the bridge network of containers. */
/* The name of the bridge namespace of a tenant's containers:
 * unirdma-<hash of state dir>-<hash of tenant>. With tenant NULL, the
 * prefix all of a state directory's namespaces share (without the '-'). */
void net_ns_name(const char *state_dir, const char *tenant, char *buf, size_t len);
/* The bridge namespace of a tenant's containers (its name into nsname),
 * made with br0 in it if it is missing. 0 or -errno (printed). */
int net_tenant_bridge(const char *state_dir, const char *tenant, char *nsname, size_t len);
/* Creates a veth pair: one end on br0 in nsname, the other named ifname in
 * the network namespace of pid, with the MAC address mac (NULL: one the
 * kernel picks). The port on br0 is named after that namespace and ifname.
 * 0 or -errno (printed). */
int net_attach(const char *nsname, pid_t pid, const char *ifname, const unsigned char *mac);
/* In the calling process's network namespace: lo up, ifname with ip/prefix, up. */
int net_setup_inside(const char *ip, int prefix, const char *ifname);
/* The MAC address the CDI hook gives the interface of a vRNIC: locally
 * administered, a hash of the tenant, then the IPv4 address (as Docker
 * derives its containers' MACs from their addresses). How the hook knows
 * an interface that has the vRNIC's address as one it made. */
void net_vrnic_mac(const struct vrnic_info *vi, unsigned char mac[6]);
/* In the calling process's network namespace: the interface that has the
 * IPv4 address ip. 1 with its name in ifname (IFNAMSIZ) and its MAC in
 * mac, 0 when none has it, or -errno. */
int net_find_addr(const char *ip, char *ifname, unsigned char mac[6]);
/* In the calling process's network namespace: eth0 if there is none, else
 * the first of rdma0..rdma7 that does not exist, into ifname (IFNAMSIZ).
 * 0, or -EEXIST when all of them exist. */
int net_free_ifname(char *ifname);
/* Removes every bridge namespace of the state dir (every tenant's), printing
 * each name removed. Returns how many, or -errno. */
int net_remove_bridges(const char *state_dir);

/* container.c */
#define CLI_KEEP_FDS_MAX 16

struct container_spec {
	const struct vrnic_info *vrnic;
	const char *state_dir; /* resolved; hidden inside */
	const char *pidfile;   /* NULL or where to write the init's host PID */
	char **argv;           /* PROGRAM ARGS... */
	/* Host paths (absolute, resolved) shown at the same place inside, read-only
	 * or writable; everything else of the host's tree is absent. */
	char **ro, **rw;
	size_t n_ro, n_rw;
	/* Inherited fds PROGRAM keeps (--keep-fd), ascending; every other fd
	 * above stderr is closed.  None is a directory (checked). */
	int keep_fds[CLI_KEEP_FDS_MAX];
	size_t n_keep_fds;
};
/* Runs argv in a fresh container; returns the exit code for the CLI. */
int container_run(const struct container_spec *spec);
/* In the container's mount namespace, before it runs anything: covers its
 * /sys/class (sysfd: its /sys, a sysfs) with a tmpfs that holds a read-only
 * bind of each class there but the RDMA ones, and the tree that RDMA
 * software (UCX) reads of vis[0..n): infiniband/<name> and
 * infiniband_verbs/uverbs<i>, then makes it read-only. Messages start with
 * caller ("exec", "cdi-hook"). 0 or -errno (printed). */
int container_sys_class(int sysfd, const struct vrnic_info *vis, size_t n, const char *caller);

/* proc.c: running a program and waiting for it. */
/* Waits for pid while forwarding HUP/INT/QUIT/TERM/USR1/USR2/ALRM that were
 * sent by a process (not by the terminal, which signals the whole foreground
 * group anyway). Returns the shell-style exit code: status, or 128+signal. */
int proc_wait_forward(pid_t pid);
/* In a forked child: execvp(argv) and on failure print why, exit 126/127. */
void proc_exec_or_die(char **argv) __attribute__((noreturn));
/* Fork + exec argv, wait. quiet sends its stdout and/or stderr to /dev/null.
 * Returns the exit status, or -errno if it could not fork. */
enum { PROC_QUIET_STDOUT = 1, PROC_QUIET_STDERR = 2 };
int proc_run(char *const argv[], int quiet);

/* sandbox.c: drops every capability, sets no_new_privs, installs the
 * seccomp filter. For the calling process and what it forks/execs. 0 or -errno. */
int sandbox_lockdown(void);

/* Env for the tenant program: UNIRDMA_DEVDIR, LD_LIBRARY_PATH, ... */
int exec_prepare_env(const char *devdir, const char *vrnic_name);

/* cmd-vm.c: the "vm" object of a vrnic.create request for a guest of
 * ram_bytes (0: the default size). */
struct json_object *cli_vm_request(long long ram_bytes);

/* Returns the resolved state directory (realpath when it exists). */
const char *cli_state_dir_resolved(void);

#endif

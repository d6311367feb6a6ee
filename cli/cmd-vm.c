/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd-vm.c: `unirdma vm-args`: the QEMU options that attach a VM vRNIC.
 *
 * A VM vRNIC (`vrnic create --vm`) has two files in its directory, both
 * created and mapped by the daemon: `region`, the control part, which QEMU
 * exposes as an ivshmem-plain PCI BAR, and `guest-ram`, the guest's RAM,
 * which QEMU maps as a shared memory backend so that the engine reaches
 * registered buffers in place.  The daemon pins the RAM layout through
 * max-ram-below-4g (daemon/vm.c); the options below must be used as printed
 * (add -kernel, -smp, networking, ... around them, but no other -m or
 * -machine). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define VM_DEFAULT_RAM (512LL << 20)

struct json_object *cli_vm_request(long long ram_bytes)
{
	struct json_object *vm = json_object_new_object();

	if (ram_bytes <= 0)
		ram_bytes = VM_DEFAULT_RAM;
	json_object_object_add(vm, "ram_mb", json_object_new_int64(ram_bytes >> 20));
	return vm;
}

struct vm_args_opts {
	const char *dir;
	bool container, lines;
};

enum { OPT_DIR = 0x2200, OPT_CONTAINER, OPT_LINES };

static int vm_args_opt(int opt, const char *arg, void *ctx)
{
	struct vm_args_opts *o = ctx;

	switch (opt) {
	case OPT_DIR:
		o->dir = arg;
		return 0;
	case OPT_CONTAINER:
		o->container = true;
		return 0;
	case OPT_LINES:
		o->lines = true;
		return 0;
	default:
		return CLI_EXIT_USAGE;
	}
}

static bool shell_safe(const char *s)
{
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-,=:+@%", *s))
			return false;
	return true;
}

static int run_vm_args(const struct cli_cmd *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "container", no_argument, NULL, OPT_CONTAINER },
		{ "lines", no_argument, NULL, OPT_LINES },
		CLI_COMMON_LONGOPTS,
	};
	struct vm_args_opts o = { 0 };
	struct json_object *req, *resp, *v, *vm, *arr;
	char what[128], dir[4200], *args[12];
	long long ram_mb, below4g;
	int rc, first, n = 0;

	rc = cli_parse(cmd, argc, argv, "", longopts, false, vm_args_opt, &o, &first);
	if (rc >= 0)
		return rc;
	if (argc - first != 1)
		return cli_usage_error(cmd, argc == first ? "vm-args: NAME is missing" : "vm-args: takes one NAME");
	if (o.dir && o.container)
		return cli_usage_error(cmd, "vm-args: --dir and --container exclude each other");
	snprintf(what, sizeof(what), "vm-args %s", argv[first]);
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string("vrnic.show"));
	json_object_object_add(req, "name", json_object_new_string(argv[first]));
	rc = admin_request(what, req, false, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	rc = CLI_EXIT_DAEMON;
	if (!json_object_object_get_ex(resp, "vrnic", &v) || !json_object_is_type(v, json_type_object)) {
		cli_err("%s: the answer has no vrnic object", what);
		rc = CLI_EXIT_UNREACHABLE;
		goto out;
	}
	if (!json_object_object_get_ex(v, "vm", &vm) || !json_object_is_type(vm, json_type_object)) {
		cli_err("%s: %s is not a VM vRNIC (create it with `vrnic create ... --vm`)", what, argv[first]);
		goto out;
	}
	ram_mb = jint(vm, "ram_bytes") >> 20;
	below4g = jint(vm, "max_ram_below_4g");
	if (ram_mb <= 0 || below4g <= 0 || below4g % (1LL << 30) || strcmp(jstr(vm, "machine"), "pc")) {
		cli_err("%s: the daemon describes a VM this CLI does not know how to start", what);
		rc = CLI_EXIT_UNREACHABLE;
		goto out;
	}
	if (o.container)
		snprintf(dir, sizeof(dir), CLI_CONTAINER_DEVDIR "/%s", jstr(v, "name"));
	else
		snprintf(dir, sizeof(dir), "%s", o.dir ? o.dir : jstr(v, "dir"));

	if (asprintf(&args[n++], "-machine") < 0 ||
	    asprintf(&args[n++], "pc,memory-backend=urd-ram,max-ram-below-4g=%lldG", below4g >> 30) < 0 ||
	    asprintf(&args[n++], "-m") < 0 || asprintf(&args[n++], "%lldM", ram_mb) < 0 ||
	    asprintf(&args[n++], "-object") < 0 ||
	    asprintf(&args[n++], "memory-backend-file,id=urd-ram,share=on,mem-path=%s/guest-ram,size=%lldM",
		     dir, ram_mb) < 0 ||
	    asprintf(&args[n++], "-object") < 0 ||
	    asprintf(&args[n++], "memory-backend-file,id=urd-bar,share=on,mem-path=%s/region,size=%lldM",
		     dir, jint(vm, "region_bytes") >> 20) < 0 ||
	    asprintf(&args[n++], "-device") < 0 || asprintf(&args[n++], "ivshmem-plain,memdev=urd-bar") < 0) {
		cli_err("%s: out of memory", what);
		n--;
		goto free_args;
	}
	if (cli.json) {
		arr = json_object_new_array();
		for (int i = 0; i < n; i++)
			json_object_array_add(arr, json_object_new_string(args[i]));
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
	} else {
		for (int i = 0; i < n; i++) {
			if (!o.lines && !shell_safe(args[i]))
				cli_err("warning: %s has characters a shell splits or expands; use --lines or --json",
					args[i]);
			printf("%s%s", args[i], o.lines || i + 1 == n ? "\n" : " ");
		}
	}
	rc = CLI_EXIT_OK;
free_args:
	for (int i = 0; i < n; i++)
		free(args[i]);
out:
	json_object_put(resp);
	return rc;
}

const struct cli_cmd cmd_vm_args = {
	"vm-args", NULL, "print the QEMU options that attach a VM vRNIC",
	"usage: unirdma vm-args NAME [--container | --dir DIR] [--lines] [--json]\n"
	"\n"
	"Print the QEMU (qemu-system-x86_64) options that give a guest the VM vRNIC\n"
	"NAME (created with `vrnic create NAME ... --vm`): its region as an\n"
	"ivshmem-plain PCI device and the guest's RAM as a shared memory backend that\n"
	"unirdmad maps too (registered memory is reached in place). They fix the\n"
	"machine type (pc), the RAM size and the RAM layout: add other options (kernel,\n"
	"disks, -smp, network) but no other -m or -machine. In the guest, our\n"
	"libibverbs.so.1 finds the vRNIC by its PCI device (root is needed to map it\n"
	"and to read /proc/self/pagemap).\n"
	"\n"
	"  qemu-system-x86_64 $(unirdma vm-args vm0) -kernel ... -initrd ...\n"
	"  unirdma exec vm0 -- qemu-system-x86_64 $(unirdma vm-args --container vm0) ...\n"
	"\n"
	"The second form runs QEMU in a container of the vRNIC, so that QEMU's user\n"
	"networking (-netdev user) puts the guest on the vRNIC's address and bridge.\n"
	"\n"
	"Options:\n"
	"  --container   the paths as `unirdma exec NAME` shows them (" CLI_CONTAINER_DEVDIR "/NAME)\n"
	"  --dir DIR     the directory where QEMU finds the vRNIC's files (default: the\n"
	"                daemon's directory of the vRNIC)\n"
	"  --lines       one option per line\n"
	"  --json        a JSON array of the options\n",
	run_vm_args,
};

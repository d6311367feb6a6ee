/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cni.h: the CNI plugin unirdma-cni (cni.c) and what the CDI hook
 * `unirdma cdi-hook --cni` (cmd-cdi.c) shares with it: the records of the
 * vRNICs it made, one per container, under STATE_DIR/cni. */
#ifndef UNIRDMA_CLI_CNI_H
#define UNIRDMA_CLI_CNI_H

#include <stddef.h>
#include <sys/types.h>

#define CNI_PROGRAM "unirdma-cni"      /* argv[0] that makes the CLI the plugin */
#define CNI_RECORD_DIR "cni"           /* STATE_DIR/cni/<vRNIC>.json */

/* The plugin: CNI_COMMAND and the rest from the environment, the network
 * configuration on stdin, the result or a CNI error on stdout. Returns the
 * exit code. */
int cni_main(int argc, char **argv);

/* Reads fd to its end (at most max bytes) into a NUL-terminated buffer
 * (caller frees). NULL on error or when longer than max. */
char *cni_read_all(int fd, size_t max);

/* The vRNICs unirdma-cni made for the network namespace (dev, ino): the
 * records whose CNI_NETNS is that namespace now. Up to max names into
 * names[i] (64 bytes each), the CNI_IFNAME each was made for into ifnames[i]
 * ("" when the record has none usable). Returns how many, or -errno. */
int cni_vrnics_of_netns(const char *state_dir, dev_t dev, ino_t ino, char (*names)[64], char (*ifnames)[16],
			int max);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fabric's internals (engine/wire*.c only). */
#ifndef UNIRDMA_ENGINE_WIRE_H
#define UNIRDMA_ENGINE_WIRE_H

#include "internal.h"

struct wire_gid {
	uint8_t gid[16];
	char tenant[URD_NAME_MAX + 1];
	struct engine_host *host;
	struct wire_gid *next;
};

struct wire_gid *wire_gid_find(struct urd_daemon *d, const uint8_t gid[16]);
void wire_dir_free(struct urd_daemon *d);

#endif

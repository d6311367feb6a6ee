/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fabric: RoCEv2 over UDP 4791 on the underlay. */
#include <errno.h>
#include <stdio.h>

#include "wire.h"

int engine_wire_start(struct urd_daemon *d, const char *dev, char *err, size_t errlen)
{
	(void)d;
	snprintf(err, errlen, "underlay %s: not built yet", dev);
	return -EOPNOTSUPP;
}

void engine_wire_stop(struct urd_daemon *d)
{
	wire_dir_free(d);
}

bool engine_wire_on(const struct urd_daemon *d)
{
	return d->eng.wire != NULL;
}

uint32_t engine_wire_ip(const struct urd_daemon *d)
{
	(void)d;
	return 0;
}

uint32_t engine_wire_dev_mtu(const struct urd_daemon *d)
{
	(void)d;
	return 0;
}

uint32_t engine_port_mtu(const struct urd_daemon *d)
{
	(void)d;
	return 5;       /* IBV_MTU_4096 */
}

const char *engine_wire_dev(const struct urd_daemon *d)
{
	(void)d;
	return NULL;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_nodevice: no vRNIC at all is an empty list, not an error.
 *
 * UNIRDMA_DEVDIR points at an empty directory before the first
 * ibv_get_device_list call. ibv_get_device_list(3): "If no devices are found
 * then num_devices is set to 0, and non-NULL is returned." Asked twice, and
 * once with num_devices == NULL; each list is freed; nothing crashes.
 */
#include "helpers.h"

#include <unistd.h>

int main(void)
{
	char dir[] = "/tmp/unirdma-nodev-XXXXXX";
	struct ibv_device **l;
	int n;

	t_start("t_nodevice");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(setenv("UNIRDMA_DEVDIR", dir, 1) == 0);

	for (int round = 0; round < 2; round++) {
		n = -1;
		errno = 0;
		l = ibv_get_device_list(&n);
		if (!l)
			t_fail("ibv_get_device_list returned NULL (errno %d)", errno);
		CHECK_EQ(n, 0);
		CHECK(l[0] == NULL);
		ibv_free_device_list(l);
	}
	l = ibv_get_device_list(NULL);
	CHECK(l);
	CHECK(l[0] == NULL);
	ibv_free_device_list(l);

	CHECK(rmdir(dir) == 0);
	t_pass();
	return 0;
}

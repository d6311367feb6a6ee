/* The forwarding data path: a benchmark baseline (FreeFlow's design), where
 * every data verb is a control request executed by the daemon.  Not built
 * yet: every forwarding request is refused. */
#include <errno.h>

#include "daemon.h"

int fwd_dispatch(struct urd_vrnic *vr URD_UNUSED, struct urd_ctx *ctx URD_UNUSED,
		 const void *req URD_UNUSED, uint32_t req_len URD_UNUSED,
		 void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	return -EOPNOTSUPP;
}

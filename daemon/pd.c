/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Protection domains. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <search.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "unirdma/barrier.h"
#include "verbs.h"

int op_alloc_pd(struct handler_args *a, const void *req URD_UNUSED, uint32_t len URD_UNUSED, void *resp, uint32_t *resp_len)
{
	struct urd_handle_resp *o = resp;
	*resp_len = sizeof(*o);
	struct vr_pd *pd;
	int ret;

	if (a->vr->npd >= a->vr->lim.max_pd)
		return -ENOMEM;         /* quota */
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	ret = handle_new(a->ctx, &pd->obj, OBJ_PD);
	if (ret) {
		free(pd);
		return ret;
	}
	a->vr->npd++;
	o->handle = pd->obj.handle;
	return 0;
}

void pd_free(struct vr_pd *pd)
{
	pd->obj.ctx->vr->npd--;
	handle_free(&pd->obj);
	free(pd);
}

int op_dealloc_pd(struct handler_args *a, const void *req, uint32_t len URD_UNUSED, void *resp URD_UNUSED, uint32_t *resp_len URD_UNUSED)
{
	const struct urd_handle_req *r = req;
	struct vr_pd *pd = obj_get(a->ctx, r->handle, OBJ_PD);

	if (!pd)
		return -EINVAL;
	if (pd->obj.refs)
		return -EBUSY;
	pd_free(pd);
	return 0;
}

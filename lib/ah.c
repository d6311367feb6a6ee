/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ah.c - address handles.  They live only in the library: post_send copies
 * the address into every UD work request, and the engine checks it there
 * (a tenant can only reach vRNICs of its own virtual network). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

void urd_ah_to_urd(const struct ibv_ah_attr *in, struct urd_ah *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->dgid, in->grh.dgid.raw, sizeof(out->dgid));
	out->flow_label = in->grh.flow_label;
	out->dlid = in->dlid;
	out->sgid_index = in->grh.sgid_index;
	out->hop_limit = in->grh.hop_limit;
	out->traffic_class = in->grh.traffic_class;
	out->is_global = in->is_global;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

void urd_ah_from_urd(const struct urd_ah *in, struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->grh.dgid.raw, in->dgid, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->flow_label;
	out->dlid = in->dlid;
	out->grh.sgid_index = in->sgid_index;
	out->grh.hop_limit = in->hop_limit;
	out->grh.traffic_class = in->traffic_class;
	out->is_global = in->is_global;
	out->sl = in->sl;
	out->src_path_bits = in->src_path_bits;
	out->static_rate = in->static_rate;
	out->port_num = in->port_num;
}

/* A RoCE port's address handle needs a GRH: is_global = 0 is EINVAL, as
 * the kernel's rdma_check_ah_attr gives it, unless the operator let this
 * vRNIC take InfiniBand-style AVs (URD_REGION_GRHLESS_AV: qperf without
 * -cm1, ibv_ud_pingpong without -g find their peer by QPN alone). */
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct urd_context *ctx = to_uctx(pd->context);
	struct urd_ahobj *ah;

	if (urd_ctx_dead(ctx)) {
		errno = EIO;
		return NULL;
	}
	if (!attr->is_global && !(__atomic_load_n(&ctx->hdr->flags, __ATOMIC_ACQUIRE) & URD_REGION_GRHLESS_AV)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->port_num != 1 || (attr->is_global && !urd_gid_index_ok(attr->grh.sgid_index))) {
		errno = EINVAL;
		return NULL;
	}
	ah = urd_calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	urd_ah_to_urd(attr, &ah->av);
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	return &ah->ibv;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	urd_free(to_uah(ah));
	return 0;
}

/* The GRH area of a UD receive buffer holds either an IB/RoCEv1 GRH or, for
 * RoCEv2 over IPv4, a 20-byte IPv4 header in its last 20 bytes (the first 20
 * undefined), as on real RoCE NICs. */
static bool grh_is_ipv4(const struct ibv_grh *grh)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	uint32_t ver = be32toh(grh->version_tclass_flow) >> 28;

	if (ver == 6)
		return false;
	return (ip[0] >> 4) == 4;
}

/* man ibv_init_ah_from_wc: 0 on success, -1 (errno) on error. */
int ibv_init_ah_from_wc(struct ibv_context *context URD_UNUSED, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	if (!grh) {
		errno = EINVAL;
		return -1;
	}
	ah_attr->is_global = 1;
	ah_attr->grh.sgid_index = 0;    /* our only GID */
	if (grh_is_ipv4(grh)) {
		struct iphdr ip;

		memcpy(&ip, (const uint8_t *)grh + 20, sizeof(ip));
		/* ::ffff:a.b.c.d of the sender */
		memset(ah_attr->grh.dgid.raw, 0, 10);
		ah_attr->grh.dgid.raw[10] = 0xff;
		ah_attr->grh.dgid.raw[11] = 0xff;
		memcpy(&ah_attr->grh.dgid.raw[12], &ip.saddr, 4);
		ah_attr->grh.hop_limit = ip.ttl;
		ah_attr->grh.traffic_class = ip.tos;
	} else {
		uint32_t vtf = be32toh(grh->version_tclass_flow);

		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.flow_label = vtf & 0xfffff;
		ah_attr->grh.traffic_class = (vtf >> 20) & 0xff;
		ah_attr->grh.hop_limit = grh->hop_limit;
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

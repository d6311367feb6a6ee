/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* t_device: a vRNIC looks like a RoCEv2 device (DESIGN.md 5, VERBS-ABI facts).
 *
 * For every device in the list: node_type IBV_NODE_CA, transport
 * IBV_TRANSPORT_IB; ibv_query_device: one port, max_sge > 1, max_qp_rd_atom
 * >= 1, atomic_cap not NONE, limits nonzero; port 1 ACTIVE with link layer
 * Ethernet, lid 0 and a valid active MTU; GID index 0 = ::ffff:a.b.c.d;
 * pkey index 0 = 0xffff; the context has a pollable async_fd and at least
 * one completion vector (ibv_open_device(3), ibv_query_port(3),
 * ibv_query_gid(3), ibv_query_pkey(3)). Two different devices have different
 * GIDs.  The list may be given back with free(), as qperf does (rdma-core's
 * comes from malloc).
 */
#include "helpers.h"

#include <poll.h>

int main(void)
{
	struct ibv_device **list;
	union ibv_gid first_gid;
	int n;

	t_start("t_device");
	list = ibv_get_device_list(&n);
	if (!list || n <= 0)
		t_skip("no RDMA device");
	for (int i = 0; i < n; i++) {
		struct ibv_device *dev = list[i];
		struct ibv_context *ctx;
		struct ibv_device_attr da;
		struct ibv_port_attr pa;
		union ibv_gid gid;
		__be16 pkey;
		struct pollfd pfd;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
						      0, 0, 0xff, 0xff };

		CHECK(dev);
		CHECK(ibv_get_device_name(dev) && *ibv_get_device_name(dev));
		CHECK_EQ(dev->node_type, IBV_NODE_CA);
		CHECK_EQ(dev->transport_type, IBV_TRANSPORT_IB);
		ctx = ibv_open_device(dev);
		CHECK(ctx);
		CHECK(ctx->device == dev);
		CHECK(ctx->num_comp_vectors >= 1);
		CHECK(ctx->async_fd >= 0);
		pfd.fd = ctx->async_fd;
		pfd.events = POLLIN;
		CHECK(poll(&pfd, 1, 0) >= 0);
		CHECK(!(pfd.revents & POLLNVAL));

		CHECK_OK(ibv_query_device(ctx, &da));
		CHECK_EQ(da.phys_port_cnt, 1);
		CHECK(da.max_sge > 1);
		CHECK(da.max_qp_rd_atom >= 1);
		CHECK(da.atomic_cap != IBV_ATOMIC_NONE);
		CHECK(da.max_qp > 0 && da.max_qp_wr > 0 && da.max_cq > 0 &&
		      da.max_cqe > 0 && da.max_mr > 0 && da.max_pd > 0 &&
		      da.max_mr_size > 0);

		CHECK_OK(ibv_query_port(ctx, T_PORT, &pa));
		CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
		CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
		CHECK_EQ(pa.lid, 0);
		CHECK(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu);
		CHECK(pa.gid_tbl_len >= 1);
		CHECK(pa.pkey_tbl_len >= 1);

		CHECK_OK(ibv_query_gid(ctx, T_PORT, 0, &gid));
		if (memcmp(gid.raw, v4mapped, 12) != 0)
			t_fail("%s: GID 0 is not an IPv4-mapped address",
			       ibv_get_device_name(dev));
		CHECK_OK(ibv_query_pkey(ctx, T_PORT, 0, &pkey));
		CHECK_EQ(pkey, 0xffff);
		printf("%s: GID %u.%u.%u.%u\n", ibv_get_device_name(dev),
		       gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
		if (i == 0)
			first_gid = gid;
		else
			CHECK(memcmp(first_gid.raw, gid.raw, 16) != 0);
		CHECK_OK(ibv_close_device(ctx));
	}
	ibv_free_device_list(list);
	list = ibv_get_device_list(NULL);
	CHECK(list);
	free(list);             /* qperf's way: the devices stay valid */
	t_pass();
	return 0;
}

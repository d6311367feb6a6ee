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
 * GIDs.  The GID table has 4 entries: the GID at 0, 1 and 3 (RoCE v2), index 2
 * empty (ENODATA from ibv_query_gid_ex, zeros from ibv_query_gid), and
 * ibv_query_gid_table lists the three.  ibv_create_ah and an RTR's AV take
 * source GID indices 0, 1 and 3; 2 and 4.. are EINVAL.  The list may be given back with free(), as qperf does (rdma-core's
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
		/* the GID table (abi.h): the routable RoCE v2 GID where rxe
		 * (index 1) and ConnectX (index 3) programs look for it too;
		 * index 2 empty; nothing past the table */
		CHECK_EQ(pa.gid_tbl_len, 4);
		{
			struct ibv_gid_entry tbl[8], e;
			union ibv_gid g;
			ssize_t n;

			for (uint32_t k = 0; k < 4; k++) {
				CHECK_OK(ibv_query_gid(ctx, T_PORT, (int)k, &g));
				if (k == 2) {
					static const uint8_t zero[16];

					CHECK(!memcmp(g.raw, zero, 16));
					CHECK_EQ(ibv_query_gid_ex(ctx, T_PORT, k, &e, 0), ENODATA);
					continue;
				}
				CHECK(!memcmp(g.raw, gid.raw, 16));
				CHECK_OK(ibv_query_gid_ex(ctx, T_PORT, k, &e, 0));
				CHECK_EQ(e.gid_index, k);
				CHECK_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
				CHECK(!memcmp(e.gid.raw, gid.raw, 16));
			}
			CHECK(ibv_query_gid(ctx, T_PORT, 4, &g) != 0);
			CHECK_EQ(ibv_query_gid_ex(ctx, T_PORT, 4, &e, 0), EINVAL);
			n = ibv_query_gid_table(ctx, tbl, 8, 0);
			CHECK_EQ(n, 3);
			CHECK(tbl[0].gid_index == 0 && tbl[1].gid_index == 1 && tbl[2].gid_index == 3);
			CHECK_EQ(ibv_query_gid_table(ctx, tbl, 2, 0), -EINVAL);
		}
		/* an address handle or a QP's AV takes the GID's indices, not
		 * the empty one nor one past the table (EINVAL, as the kernel) */
		{
			struct ibv_pd *pd = ibv_alloc_pd(ctx);
			struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
			struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
						       .cap = { 1, 1, 1, 1, 0 } };
			struct ibv_ah_attr ah = { .is_global = 1, .port_num = T_PORT };
			struct ibv_qp_attr a;
			struct ibv_qp *qp;
			struct ibv_ah *h;
			int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

			CHECK(pd && cq);
			ah.grh.dgid = gid;
			ah.grh.hop_limit = 64;
			for (uint8_t k = 0; k < 6; k++) {
				ah.grh.sgid_index = k;
				errno = 0;
				h = ibv_create_ah(pd, &ah);
				if (k == 2 || k >= 4) {
					CHECK(!h && errno == EINVAL);
				} else {
					CHECK(h);
					CHECK_OK(ibv_destroy_ah(h));
				}
			}
			ia.send_cq = ia.recv_cq = cq;
			qp = ibv_create_qp(pd, &ia);
			CHECK(qp);
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_INIT;
			a.port_num = T_PORT;
			CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS));
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_RTR;
			a.path_mtu = IBV_MTU_1024;
			a.dest_qp_num = qp->qp_num;
			a.ah_attr = ah;
			a.ah_attr.grh.sgid_index = 2;
			CHECK_EQ(ibv_modify_qp(qp, &a, mask), EINVAL);
			a.ah_attr.grh.sgid_index = 3;
			CHECK_OK(ibv_modify_qp(qp, &a, mask));
			CHECK_OK(ibv_destroy_qp(qp));
			CHECK_OK(ibv_destroy_cq(cq));
			CHECK_OK(ibv_dealloc_pd(pd));
		}
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

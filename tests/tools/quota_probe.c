/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* quota_probe: exhausts one vRNIC quota through the verbs API and prints what
 * happened, one "key=value" per line, for tests/integration/mgmt.sh.
 *
 *   quota_probe qps N       create up to N RC QPs; prints created=K errno=E
 *   quota_probe mrs N       register up to N MRs of one page each
 *   quota_probe mem BYTES   register one MR of BYTES
 *   quota_probe cqe N       create a CQ of N entries
 *   quota_probe qpwr N      create a QP with max_send_wr N
 *   quota_probe ctx N       open up to N contexts
 * Exit 0 when the probe ran (whatever the quota said), 1 on a setup error.
 * The objects stay alive until the program exits, so several limits can be
 * watched from the daemon while it sleeps (argv[3]: seconds to hold). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	long n, created = 0;
	int num, err = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: quota_probe qps|mrs|mem|cqe|qpwr|ctx N [HOLD_SECONDS]\n");
		return 1;
	}
	n = strtol(argv[2], NULL, 0);
	list = ibv_get_device_list(&num);
	if (!list || num < 1) {
		fprintf(stderr, "quota_probe: no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(stderr, "quota_probe: open: %s\n", strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "quota_probe: setup: %s\n", strerror(errno));
		return 1;
	}

	if (!strcmp(argv[1], "qps") || !strcmp(argv[1], "qpwr")) {
		bool wr = !strcmp(argv[1], "qpwr");

		for (long i = 0; i < (wr ? 1 : n); i++) {
			struct ibv_qp_init_attr a = {
				.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = wr ? (uint32_t)n : 4, .max_recv_wr = 4,
					 .max_send_sge = 1, .max_recv_sge = 1 },
			};

			if (!ibv_create_qp(pd, &a)) {
				err = errno;
				break;
			}
			created++;
		}
	} else if (!strcmp(argv[1], "mrs")) {
		for (long i = 0; i < n; i++) {
			void *p = aligned_alloc(4096, 4096);

			if (!p || !ibv_reg_mr(pd, p, 4096, IBV_ACCESS_LOCAL_WRITE)) {
				err = errno;
				break;
			}
			created++;
		}
	} else if (!strcmp(argv[1], "mem")) {
		void *p = aligned_alloc(4096, (size_t)n);

		if (!p || !ibv_reg_mr(pd, p, (size_t)n, IBV_ACCESS_LOCAL_WRITE))
			err = errno;
		else
			created = 1;
	} else if (!strcmp(argv[1], "cqe")) {
		if (!ibv_create_cq(ctx, (int)n, NULL, NULL, 0))
			err = errno;
		else
			created = 1;
	} else if (!strcmp(argv[1], "ctx")) {
		created = 1;    /* the one opened above */
		for (long i = 1; i < n; i++) {
			if (!ibv_open_device(list[0])) {
				err = errno;
				break;
			}
			created++;
		}
	} else {
		fprintf(stderr, "quota_probe: unknown probe %s\n", argv[1]);
		return 1;
	}
	printf("created=%ld\nerrno=%d\nerror=%s\n", created, err, err ? strerror(err) : "none");
	fflush(stdout);
	if (argc > 3)
		sleep((unsigned)atoi(argv[3]));
	return 0;
}

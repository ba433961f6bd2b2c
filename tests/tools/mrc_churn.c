// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_churn: create and destroy CQs, QPs and MRs in a loop, for races
 * against whatever inspects them meanwhile (rdma resource show).
 *
 *   mrc_churn DEVICE SECONDS [QPS]
 *
 * Each round creates QPS (default 8) RC QPs, each with its own CQ, moves
 * every other one to INIT, registers a small MR, then destroys it all.
 * Prints "churn: N rounds" and exits 0, or says what failed and exits 1.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QPS_MAX	64

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int round_trip(struct ibv_context *ctx, struct ibv_pd *pd, int nqp,
		      char *buf)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_READ };
	struct ibv_cq *cq[QPS_MAX];
	struct ibv_qp *qp[QPS_MAX];
	struct ibv_mr *mr;
	int i;

	for (i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		cq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		if (!cq[i]) {
			perror("churn: ibv_create_cq");
			return 1;
		}
		ia.send_cq = cq[i];
		ia.recv_cq = cq[i];
		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i]) {
			perror("churn: ibv_create_qp");
			return 1;
		}
		if ((i & 1) && ibv_modify_qp(qp[i], &a, IBV_QP_STATE |
				IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS)) {
			perror("churn: ibv_modify_qp INIT");
			return 1;
		}
	}
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		perror("churn: ibv_reg_mr");
		return 1;
	}
	for (i = 0; i < nqp; i++) {
		if (ibv_destroy_qp(qp[i]) || ibv_destroy_cq(cq[i])) {
			perror("churn: destroy");
			return 1;
		}
	}
	if (ibv_dereg_mr(mr)) {
		perror("churn: ibv_dereg_mr");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[4096];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	double end;
	long rounds = 0;
	int nqp;

	if (argc < 3) {
		fprintf(stderr, "usage: mrc_churn DEVICE SECONDS [QPS]\n");
		return 2;
	}
	nqp = argc > 3 ? atoi(argv[3]) : 8;
	if (nqp < 1 || nqp > QPS_MAX) {
		fprintf(stderr, "churn: QPS is 1..%d\n", QPS_MAX);
		return 2;
	}
	ctx = open_dev(argv[1]);
	if (!ctx) {
		fprintf(stderr, "churn: cannot open %s\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		perror("churn: ibv_alloc_pd");
		return 1;
	}
	end = now_s() + atof(argv[2]);
	while (now_s() < end) {
		if (round_trip(ctx, pd, nqp, buf))
			return 1;
		rounds++;
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("churn: %ld rounds\n", rounds);
	return 0;
}

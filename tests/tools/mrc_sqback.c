// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_sqback: a provider that moves the SQ producer index backwards
 * (review L4 of issue 42).
 *
 *   mrc_sqback DEVICE GID_INDEX
 *
 * Connects an RC QP to a QP number that no longer exists, so the SENDs it
 * posts stay in flight (nothing acknowledges them).  With four SENDs out,
 * it writes the shared SQ ring's producer index back to the consumer index
 * (below what the kernel already took) and posts one more SEND, which
 * rings the doorbell with prod = cons + 1 < the kernel's next index.  The
 * kernel must treat that as a local QP error at once: the first completion
 * is IBV_WC_LOC_QP_OP_ERR and the QP is in the error state, instead of the
 * kernel loading slots that were never published.  Prints "sqback: ok" and
 * exits 0, or says what went wrong and exits 1.
 *
 * It reaches into the provider's QP (providers/metaroce/metaroce.h) for
 * the ring header, as only a misbehaving provider would write it.
 */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metaroce.h"

#define NSEND	4

static int fail(const char *what)
{
	fprintf(stderr, "sqback: FAIL %s\n", what);
	return 1;
}

static int to_rts(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid *gid,
		  int gid_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20;		/* ~4 s: no retry before the test is over */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_send(struct ibv_qp *qp, struct ibv_mr *mr, char *buf,
		     uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = 64,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* the first completion within @ms milliseconds; -1 if none came */
static int first_status(struct ibv_cq *cq, int ms, uint64_t *wr_id)
{
	struct ibv_wc wc;
	int i, n;

	for (i = 0; i < ms; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			return -2;
		if (n > 0) {
			*wr_id = wc.wr_id;
			return wc.status;
		}
		usleep(1000);
	}
	return -1;
}

/* a QP number that no QP has: a QP's, after destroying that QP */
static uint32_t dead_qpn(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	uint32_t qpn;

	if (!qp)
		return 0;
	qpn = qp->qp_num;
	ibv_destroy_qp(qp);
	return qpn;
}

static int run(struct ibv_context *ctx, int gid_index)
{
	static char buf[4096];
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC };
	struct ibv_qp_attr qa;
	struct metaroce_queue *sq;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint32_t dqpn, cons;
	uint64_t id = 0;
	int i, st;

	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || ibv_query_gid(ctx, 1, gid_index, &gid))
		return fail("PD, CQ, MR or GID");
	dqpn = dead_qpn(pd, cq);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = dqpn ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp || to_rts(qp, dqpn, &gid, gid_index))
		return fail("an RC QP in RTS");
	for (i = 0; i < NSEND; i++)
		if (post_send(qp, mr, buf, i))
			return fail("posting the SENDs");
	usleep(100 * 1000);	/* the kernel takes them (no ACK comes) */
	if (first_status(cq, 1, &id) != -1)
		return fail("a completion with nothing acknowledged");

	sq = &to_mqp(qp)->sq;
	cons = ring_load_acquire(&sq->hdr->cons);
	printf("sqback: prod %u cons %u; writing prod %u\n",
	       ring_load_relaxed(&sq->hdr->prod), cons, cons);
	ring_store_release(&sq->hdr->prod, cons);
	/* one more SEND: prod = cons + 1, below what the kernel took */
	if (post_send(qp, mr, buf, 100))
		return fail("posting the SEND that rings the doorbell");

	st = first_status(cq, 1000, &id);
	if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia))
		return fail("ibv_query_qp");
	printf("sqback: first completion status %d (%s) wr_id %llu, QP state %d\n",
	       st, st >= 0 ? ibv_wc_status_str(st) : "none within 1 s",
	       (unsigned long long)id, qa.qp_state);
	if (st != IBV_WC_LOC_QP_OP_ERR || qa.qp_state != IBV_QPS_ERR)
		return fail("want IBV_WC_LOC_QP_OP_ERR at once and the QP in ERR");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	printf("sqback: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n, ret;

	if (argc != 3) {
		fprintf(stderr, "usage: mrc_sqback DEVICE GID_INDEX\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return fail("no such device");
	ret = run(ctx, atoi(argv[2]));
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return ret;
}

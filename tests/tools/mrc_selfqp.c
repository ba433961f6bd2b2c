// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_selfqp: an RC QP connected to itself (NCCL's flush QP pattern) and
 * CQ resizing with completions pending.
 *
 *   mrc_selfqp DEVICE GID_INDEX
 *
 * Posts RDMA WRITEs from one buffer to another through a QP whose
 * destination is itself, checks every byte, then a 1-byte RDMA READ; in
 * between it resizes the CQ while completions are still queued and checks
 * that none is lost or reordered; finally it moves the QP to SQD while a
 * WRITE is in flight, checks the SQ_DRAINED event and that a WQE posted
 * in SQD waits until the QP is back in RTS.  Prints "selfqp: ok" and exits 0, or
 * says what went wrong and exits 1.
 */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN	(256 * 1024)
#define NWR	24

static int fail(const char *what)
{
	fprintf(stderr, "selfqp: %s\n", what);
	return 1;
}

static int poll_n(struct ibv_cq *cq, int n, uint64_t first_id)
{
	struct ibv_wc wc;
	int got = 0, spins = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			return fail("poll_cq failed");
		if (!r) {
			if (++spins > 200000000)
				return fail("completion timeout");
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "selfqp: wr %llu status %s\n",
				(unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status));
			return 1;
		}
		if (wc.wr_id != first_id + got) {
			fprintf(stderr, "selfqp: wr_id %llu, expected %llu\n",
				(unsigned long long)wc.wr_id,
				(unsigned long long)(first_id + got));
			return 1;
		}
		got++;
	}
	return 0;
}

/* wait up to @ms for an async event of type @want */
static int wait_event(struct ibv_context *ctx, enum ibv_event_type want, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int flags = fcntl(ctx->async_fd, F_GETFL);

	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	for (;;) {
		if (poll(&pfd, 1, ms) <= 0)
			return fail("no SQ drained event");
		if (ibv_get_async_event(ctx, &ev))
			continue;
		ibv_ack_async_event(&ev);
		if (ev.event_type == want)
			return 0;
		fprintf(stderr, "selfqp: unexpected async event %s\n",
			ibv_event_type_str(ev.event_type));
		return 1;
	}
}

static int post_write(struct ibv_qp *qp, uint64_t id, void *src, uint32_t lkey,
		      void *dst, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = len, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma.remote_addr = (uintptr_t)dst, .wr.rdma.rkey = rkey,
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/*
 * SQD: a message in flight finishes and raises SQ_DRAINED, a WQE posted
 * in SQD waits, and RTS again sends it.
 */
static int sqd_phase(struct ibv_context *ctx, struct ibv_qp *qp,
		     struct ibv_cq *cq, unsigned char *src,
		     struct ibv_mr *src_mr, unsigned char *dst,
		     struct ibv_mr *dst_mr)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_wc wc;
	int i;

	memset(dst, 0, LEN);
	if (post_write(qp, 600, src, src_mr->lkey, dst, dst_mr->rkey, LEN / 2))
		return fail("post WRITE before SQD");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY))
		return fail("RTS -> SQD refused");
	if (post_write(qp, 601, src + LEN / 2, src_mr->lkey, dst + LEN / 2,
		       dst_mr->rkey, LEN / 2))
		return fail("post WRITE in SQD");
	if (wait_event(ctx, IBV_EVENT_SQ_DRAINED, 10000))
		return 1;
	if (poll_n(cq, 1, 600))
		return 1;
	if (memcmp(src, dst, LEN / 2))
		return fail("WRITE before SQD: data differs");
	/* the WQE posted in SQD must not have gone out */
	for (i = 0; i < 200000; i++)
		if (ibv_poll_cq(cq, 1, &wc))
			return fail("a WQE posted in SQD completed");
	for (i = LEN / 2; i < LEN; i++)
		if (dst[i])
			return fail("a WQE posted in SQD wrote data");
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return fail("query_qp in SQD");
	if (a.qp_state != IBV_QPS_SQD || a.sq_draining)
		return fail("query_qp: not SQD, or still draining");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return fail("SQD -> RTS refused");
	if (poll_n(cq, 1, 601))
		return 1;
	if (memcmp(src, dst, LEN))
		return fail("WRITE after SQD: data differs");
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_attr a;
	struct ibv_mr *src_mr, *dst_mr;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	unsigned char *src, *dst;
	int i, n, gidx;

	if (argc != 3)
		return fail("usage: mrc_selfqp DEVICE GID_INDEX");
	gidx = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return fail("no such device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	src = malloc(LEN);
	dst = calloc(1, LEN + 1);
	if (!pd || !cq || !src || !dst)
		return fail("setup");
	for (i = 0; i < LEN; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	src_mr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	dst_mr = ibv_reg_mr(pd, dst, LEN + 1, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE);
	if (!src_mr || !dst_mr)
		return fail("reg_mr");

	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_send_sge = 1;
	qp = ibv_create_qp(pd, &ia);	/* max_recv_wr 0, as NCCL's flush QP */
	if (!qp)
		return fail("create_qp");
	if (ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, gidx, &gid))
		return fail("query port/gid");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return fail("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port.active_mtu;
	a.dest_qp_num = qp->qp_num;		/* itself */
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;		/* its own GID */
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 255;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fail("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123456;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		return fail("RTS");

	/* NWR signaled WRITEs into a CQ of 4: resize before polling */
	for (i = 0; i < NWR; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)src + i * (LEN / NWR),
			.length = LEN / NWR,
			.lkey = src_mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 100 + i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma.remote_addr = (uintptr_t)dst + i * (LEN / NWR),
			.wr.rdma.rkey = dst_mr->rkey,
		};
		struct ibv_send_wr *bad;

		if (i == 3) {
			/* wait for a few CQEs, then grow the CQ under them */
			struct ibv_wc wc;
			int spins = 0;

			while (ibv_poll_cq(cq, 0, &wc) == 0 && ++spins < 1000)
				;
			if (ibv_resize_cq(cq, 64))
				return fail("resize_cq to 64");
		}
		if (ibv_post_send(qp, &wr, &bad))
			return fail("post WRITE");
	}
	if (poll_n(cq, NWR, 100))
		return 1;
	if (memcmp(src, dst, LEN - LEN % NWR))
		return fail("WRITE data differs");
	if (dst[LEN])
		return fail("byte after the target was written");

	/* shrink while empty, then the 1-byte READ of NCCL's flush */
	if (ibv_resize_cq(cq, 8))
		return fail("resize_cq to 8");
	{
		unsigned char one = 0;
		struct ibv_mr *one_mr = ibv_reg_mr(pd, &one, 1,
						   IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sge = {
			.addr = (uintptr_t)&one, .length = 1,
			.lkey = one_mr ? one_mr->lkey : 0,
		};
		struct ibv_send_wr wr = {
			.wr_id = 500, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma.remote_addr = (uintptr_t)src + 5,
			.wr.rdma.rkey = src_mr->rkey,
		};
		struct ibv_send_wr *bad;

		if (!one_mr || ibv_post_send(qp, &wr, &bad))
			return fail("post READ");
		if (poll_n(cq, 1, 500))
			return 1;
		if (one != src[5])
			return fail("READ data differs");
		ibv_dereg_mr(one_mr);
	}
	if (sqd_phase(ctx, qp, cq, src, src_mr, dst, dst_mr))
		return 1;
	ibv_destroy_qp(qp);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("selfqp: ok (%d WRITEs of %d B through a QP connected to itself, CQ resized 4->64->8, 1-byte READ, SQD drain with SQ_DRAINED and back to RTS)\n",
	       NWR, LEN / NWR);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit check of the metaroce provider data path without a device: the
 * provider source is included, rings live in ordinary memory, and the send
 * doorbell is intercepted: -Wl,--wrap=write (the provider's only write: the
 * doorbell) checks the command the kernel would get, and
 * -Wl,--wrap=ibv_cmd_post_send takes the ioctl fallback.
 * scripts/build-rdma-core builds and runs it after every build.
 */
#include "../metaroce.c"

#undef NDEBUG
#include <assert.h>

static int doorbells, refusals, ioctl_doorbells;

ssize_t __wrap_write(int fd, const void *buf, size_t count);
ssize_t __wrap_write(int fd, const void *buf, size_t count)
{
	const struct ibv_post_send *cmd = buf;

	/* an empty POST_SEND, sized as its header says, with a response */
	assert(fd == -1 && count == sizeof(*cmd));
	assert(cmd->hdr.command == IB_USER_VERBS_CMD_POST_SEND);
	assert(cmd->hdr.in_words * 4 == count);
	assert(cmd->hdr.out_words * 4 == sizeof(struct ib_uverbs_post_send_resp));
	assert(cmd->response && cmd->qp_handle == 0x5a5a);
	assert(cmd->wr_count == 0 && cmd->sge_count == 0);
	assert(cmd->wqe_size == sizeof(struct ib_uverbs_send_wr));
	doorbells++;
	if (refusals) {
		refusals--;
		errno = EACCES;		/* as after a setuid */
		return -1;
	}
	return count;
}

int __wrap_ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad_wr);
int __wrap_ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad_wr)
{
	assert(wr == NULL && ibqp->handle == 0x5a5a);
	ioctl_doorbells++;
	return 0;
}

/* the QP's command fd and handle, as the doorbell check expects them */
static struct metaroce_context fake_mctx = { .ibv_ctx.context.cmd_fd = -1 };

static void fake_qp(struct ibv_qp *ibqp)
{
	ibqp->context = &fake_mctx.ibv_ctx.context;
	ibqp->handle = 0x5a5a;
}

static void fake_ring(struct metaroce_queue *q, uint32_t depth,
		      uint32_t stride, uint32_t start)
{
	size_t size = METAROCE_RING_HDR_SIZE + (size_t)depth * stride;

	q->map = aligned_alloc(64, size);
	assert(q->map);
	memset(q->map, 0xa5, size);
	q->map_size = size;
	q->hdr = q->map;
	q->hdr->prod = start;
	q->hdr->cons = start;
	q->slots = (uint8_t *)q->map + METAROCE_RING_HDR_SIZE;
	q->depth = depth;
	q->stride = stride;
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
}

static void test_poll_cq(void)
{
	struct metaroce_cq cq = {};
	struct metaroce_queue *q = &cq.ring;
	struct metaroce_cqe *cqe;
	struct ibv_wc wc[8];
	uint32_t i;

	fake_ring(q, 4, sizeof(struct metaroce_cqe), 0xfffffffe);
	for (i = 0; i < 3; i++) {
		cqe = ring_slot(q, 0xfffffffe + i);
		memset(cqe, 0, sizeof(*cqe));
		cqe->wr_id = 100 + i;
		cqe->byte_len = 1000 + i;
		cqe->imm_data = htobe32(0x11223344 + i);
		cqe->qp_num = 7;
		cqe->src_qp = 9;
		cqe->status = i == 2 ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
		cqe->opcode = i == 0 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RDMA_WRITE;
		/* 0x40: the kernel's IB_WC_WITH_NETWORK_HDR_TYPE, not for us */
		cqe->wc_flags = i == 0 ? (METAROCE_CQE_WITH_IMM | METAROCE_CQE_GRH |
					  0x40) :
			i == 1 ? (METAROCE_CQE_WITH_INV | 0x40) : 0;
		/* IPv4; cqe 1 has a type but no GRH: sl stays */
		cqe->network_hdr_type = i < 2 ? 2 : 0;
		cqe->sl = 3;
		cqe->pkey_index = 1;
	}
	q->hdr->prod = 0xfffffffe + 3;

	assert(metaroce_poll_cq(&cq.vcq.cq, 2, wc) == 2);
	assert(q->hdr->cons == 0);
	assert(wc[0].wr_id == 100 && wc[0].byte_len == 1000);
	assert(wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	assert(wc[0].status == IBV_WC_SUCCESS);
	assert(wc[0].wc_flags == (IBV_WC_WITH_IMM | IBV_WC_GRH));
	assert(be32toh(wc[0].imm_data) == 0x11223344);
	/* the packet type in sl, as mlx5: RoCE v2 (8) over IPv4 (2) */
	assert(wc[0].qp_num == 7 && wc[0].src_qp == 9 && wc[0].sl == 0xa);
	assert(wc[0].pkey_index == 1 && wc[0].vendor_err == 0);
	assert(wc[1].wr_id == 101 && wc[1].wc_flags == IBV_WC_WITH_INV);
	assert(wc[1].sl == 3);

	assert(metaroce_poll_cq(&cq.vcq.cq, 8, wc) == 1);
	assert(wc[0].wr_id == 102 && wc[0].status == IBV_WC_WR_FLUSH_ERR);
	assert(q->hdr->cons == 1);
	assert(metaroce_poll_cq(&cq.vcq.cq, 8, wc) == 0);
	assert(q->hdr->cons == 1);
	free(q->map);
}

static void test_post_send(void)
{
	struct metaroce_qp qp = {};
	struct ibv_qp *ibqp = &qp.vqp.qp;
	struct metaroce_queue *q = &qp.sq;
	struct metaroce_send_wqe *wqe;
	struct metaroce_sge *sge;
	struct ibv_send_wr wr[5], *bad;
	struct ibv_sge sg[3];
	char data[64];
	uint32_t start = 0xfffffffe;
	int i;

	fake_qp(ibqp);
	ibqp->qp_type = IBV_QPT_RC;
	ibqp->state = IBV_QPS_RTS;
	fake_ring(q, 4, 128, start);
	q->max_sge = min_t(uint32_t, 2,
			   ring_sge_room(q, sizeof(struct metaroce_send_wqe)));
	q->max_inline = q->stride - sizeof(struct metaroce_send_wqe);
	assert(q->max_sge == 2 && q->max_inline == 56);

	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = i;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 5; i++) {
		wr[i].wr_id = i;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	/* zero-length WRITE_WITH_IMM, rkey 0, no SGE */
	wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].imm_data = htobe32(0xabcd);
	/* inline SEND gathered from two SGEs */
	sg[0] = (struct ibv_sge){ (uintptr_t)data, 30, 0 };
	sg[1] = (struct ibv_sge){ (uintptr_t)data + 30, 26, 0 };
	wr[1].opcode = IBV_WR_SEND;
	wr[1].send_flags = IBV_SEND_INLINE;
	wr[1].sg_list = sg;
	wr[1].num_sge = 2;
	/* READ with a stray INLINE flag: SGE kept, flag dropped */
	sg[2] = (struct ibv_sge){ 0x1000, 1, 0x77 };
	wr[2].opcode = IBV_WR_RDMA_READ;
	wr[2].send_flags = IBV_SEND_INLINE | IBV_SEND_FENCE;
	wr[2].sg_list = &sg[2];
	wr[2].num_sge = 1;
	wr[2].wr.rdma.remote_addr = 0x2000;
	wr[2].wr.rdma.rkey = 0x55;
	wr[3].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[3].sg_list = &sg[2];
	wr[3].num_sge = 1;
	wr[3].wr.atomic.remote_addr = 0x3000;
	wr[3].wr.atomic.rkey = 0x66;
	wr[3].wr.atomic.compare_add = 5;
	wr[4].opcode = IBV_WR_SEND;

	/* ring of 4: the fifth fails with ENOMEM, one doorbell */
	bad = NULL;
	assert(metaroce_post_send(ibqp, wr, &bad) == ENOMEM);
	assert(bad == &wr[4] && doorbells == 1);
	assert(q->hdr->prod == start + 4);

	wqe = ring_slot(q, start);
	assert(wqe->opcode == METAROCE_WR_RDMA_WRITE_WITH_IMM);
	assert(wqe->num_sge == 0 && wqe->inline_len == 0 && wqe->rkey == 0);
	assert(wqe->send_flags == METAROCE_SEND_SIGNALED);
	assert(wqe->imm_data == (__force uint32_t)htobe32(0xabcd));

	wqe = ring_slot(q, start + 1);
	assert(wqe->wr_id == 1 && wqe->num_sge == 0 && wqe->inline_len == 56);
	assert(wqe->send_flags == METAROCE_SEND_INLINE);
	assert(!memcmp(wqe + 1, data, 56));

	wqe = ring_slot(q, start + 2);
	sge = (struct metaroce_sge *)(wqe + 1);
	assert(wqe->opcode == METAROCE_WR_RDMA_READ);
	assert(wqe->send_flags == METAROCE_SEND_FENCE && wqe->num_sge == 1);
	assert(sge->addr == 0x1000 && sge->length == 1 && sge->lkey == 0x77);
	assert(wqe->remote_addr == 0x2000 && wqe->rkey == 0x55);

	wqe = ring_slot(q, start + 3);
	assert(wqe->remote_addr == 0x3000 && wqe->rkey == 0x66);
	assert(wqe->compare_add == 5 && wqe->swap == 0);

	/* the kernel consumes one slot: the fifth fits now */
	q->hdr->cons = start + 1;
	assert(metaroce_post_send(ibqp, &wr[4], &bad) == 0);
	assert(doorbells == 2 && q->hdr->prod == start + 5);

	/* nothing queued: no doorbell */
	q->hdr->cons = q->hdr->prod;
	sg[1].length = 27;		/* 57 bytes inline > 56 */
	wr[1].next = NULL;
	assert(metaroce_post_send(ibqp, &wr[1], &bad) == EINVAL);
	assert(bad == &wr[1] && doorbells == 2);
	sg[1].length = 26;

	wr[2].next = NULL;
	wr[2].num_sge = 3;		/* more than max_send_sge */
	assert(metaroce_post_send(ibqp, &wr[2], &bad) == EINVAL);
	wr[2].num_sge = 1;

	/* first WR fine, second bad: one posted, one doorbell */
	wr[0].next = &wr[2];
	wr[2].opcode = 42;
	assert(metaroce_post_send(ibqp, &wr[0], &bad) == EINVAL);
	assert(bad == &wr[2] && doorbells == 3);
	wr[2].opcode = IBV_WR_RDMA_READ;

	ibqp->state = IBV_QPS_RTR;
	wr[0].next = NULL;
	assert(metaroce_post_send(ibqp, &wr[0], &bad) == EINVAL);
	ibqp->state = IBV_QPS_ERR;
	assert(metaroce_post_send(ibqp, &wr[0], &bad) == 0);
	assert(doorbells == 4);

	/* UD: only SENDs, and they need an AH */
	ibqp->qp_type = IBV_QPT_UD;
	assert(metaroce_post_send(ibqp, &wr[0], &bad) == EINVAL);
	wr[4].next = NULL;
	assert(metaroce_post_send(ibqp, &wr[4], &bad) == EINVAL);

	/* a UD SEND names the AH by the kernel's number, not the handle */
	{
		struct metaroce_ah ah = { .ah_num = 77 };

		ah.ibv_ah.handle = 5;
		q->hdr->cons = q->hdr->prod;
		wr[4].opcode = IBV_WR_SEND_WITH_IMM;
		wr[4].imm_data = htobe32(0x1234);
		wr[4].wr.ud.ah = &ah.ibv_ah;
		wr[4].wr.ud.remote_qpn = 0xabcdef;
		wr[4].wr.ud.remote_qkey = 0x11111111;
		assert(metaroce_post_send(ibqp, &wr[4], &bad) == 0);
		assert(doorbells == 5);
		wqe = ring_slot(q, q->hdr->prod - 1);
		assert(wqe->opcode == METAROCE_WR_SEND_WITH_IMM);
		assert(wqe->ud.ah == 77 && wqe->ud.remote_qpn == 0xabcdef);
		assert(wqe->ud.remote_qkey == 0x11111111 && !wqe->ud.reserved);
		assert(wqe->rkey == 0 && wqe->remote_addr == 0);
	}
	free(q->map);
}

static void test_post_recv(void)
{
	struct metaroce_qp qp = {};
	struct ibv_qp *ibqp = &qp.vqp.qp;
	struct metaroce_queue *q = &qp.rq;
	struct metaroce_recv_wqe *wqe;
	struct ibv_recv_wr wr[3], *bad;
	struct ibv_sge sg[2] = { { 0x4000, 64, 3 }, { 0x5000, 64, 3 } };
	int i;

	ibqp->qp_type = IBV_QPT_RC;
	ibqp->state = IBV_QPS_INIT;
	fake_ring(q, 2, 32, 0);
	q->max_sge = ring_sge_room(q, sizeof(struct metaroce_recv_wqe));
	assert(q->max_sge == 1);

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 10 + i;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].sg_list = sg;
	wr[1].num_sge = 1;		/* wr[0] and wr[2] have no SGE */

	assert(metaroce_post_recv(ibqp, wr, &bad) == ENOMEM);
	assert(bad == &wr[2] && q->hdr->prod == 2 && doorbells == 5);
	wqe = ring_slot(q, 0);
	assert(wqe->wr_id == 10 && wqe->num_sge == 0 && wqe->reserved == 0);
	wqe = ring_slot(q, 1);
	assert(wqe->wr_id == 11 && wqe->num_sge == 1);
	assert(((struct metaroce_sge *)(wqe + 1))->addr == 0x4000);

	q->hdr->cons = 2;
	wr[2].sg_list = sg;
	wr[2].num_sge = 2;
	assert(metaroce_post_recv(ibqp, &wr[2], &bad) == EINVAL);

	ibqp->state = IBV_QPS_RESET;
	assert(metaroce_post_recv(ibqp, &wr[0], &bad) == EINVAL);
	ibqp->state = IBV_QPS_RTS;
	qp.has_srq = true;
	assert(metaroce_post_recv(ibqp, &wr[0], &bad) == EINVAL);
	qp.has_srq = false;
	free(q->map);

	/* a QP created with max_recv_wr 0 has no ring */
	memset(q, 0, sizeof(*q));
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	wr[0].next = NULL;
	assert(metaroce_post_recv(ibqp, &wr[0], &bad) == ENOMEM);
	assert(bad == &wr[0]);
}

/* ibv_wr_*: all or nothing, one doorbell per wr_complete */
static void test_wr_api(void)
{
	struct metaroce_qp qp = {};
	struct ibv_qp_ex *x = &qp.vqp.qp_ex;
	struct metaroce_queue *q = &qp.sq;
	struct metaroce_send_wqe *wqe;
	struct metaroce_sge *sge;
	struct metaroce_ah ah = { .ah_num = 33 };
	struct ibv_sge sg[3] = { { 0x1000, 8, 1 }, { 0x2000, 16, 2 },
				 { 0x3000, 4, 3 } };
	struct ibv_data_buf buf[2];
	uint32_t start = 0xfffffffe;
	struct ibv_mr mr = { .lkey = 0x4d };
	struct ibv_mw_bind_info bi = {
		.mr = &mr, .addr = 0x5000, .length = 0x100,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_mw mw = {};
	char data[64];
	int db, i;

	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = 0x40 + i;
	fake_qp(&x->qp_base);
	x->qp_base.qp_type = IBV_QPT_RC;
	x->qp_base.state = IBV_QPS_RTS;
	fake_ring(q, 4, 128, start);
	q->max_sge = 2;
	q->max_inline = q->stride - sizeof(struct metaroce_send_wqe);
	qp_set_wr_ops(x);
	db = doorbells;

	/* three WRs, one doorbell, every field where post_send puts it */
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_write_imm(x, 0x55, 0x9000, htobe32(0xbeef));
	ibv_wr_set_sge_list(x, 2, sg);
	x->wr_id = 2;
	x->wr_flags = 0;
	ibv_wr_atomic_cmp_swp(x, 0x66, 0xa000, 7, 8);
	ibv_wr_set_sge(x, 3, 0x3000, 8);
	x->wr_id = 3;
	ibv_wr_send_inv(x, 0x77);
	buf[0] = (struct ibv_data_buf){ data, 40 };
	buf[1] = (struct ibv_data_buf){ data + 40, 16 };
	ibv_wr_set_inline_data_list(x, 2, buf);
	assert(q->hdr->prod == start);		/* nothing published yet */
	assert(ibv_wr_complete(x) == 0);
	assert(q->hdr->prod == start + 3 && doorbells == db + 1);

	wqe = ring_slot(q, start);
	sge = (struct metaroce_sge *)(wqe + 1);
	assert(wqe->wr_id == 1 && wqe->opcode == METAROCE_WR_RDMA_WRITE_WITH_IMM);
	assert(wqe->send_flags == (METAROCE_SEND_SIGNALED | METAROCE_SEND_FENCE));
	assert(wqe->rkey == 0x55 && wqe->remote_addr == 0x9000);
	assert(wqe->imm_data == (__force uint32_t)htobe32(0xbeef));
	assert(wqe->num_sge == 2 && wqe->inline_len == 0);
	assert(sge[1].addr == 0x2000 && sge[1].length == 16 && sge[1].lkey == 2);
	wqe = ring_slot(q, start + 1);
	sge = (struct metaroce_sge *)(wqe + 1);
	assert(wqe->opcode == METAROCE_WR_ATOMIC_CMP_AND_SWP && wqe->send_flags == 0);
	assert(wqe->compare_add == 7 && wqe->swap == 8 && wqe->rkey == 0x66);
	assert(wqe->num_sge == 1 && sge->lkey == 3 && sge->length == 8);
	wqe = ring_slot(q, start + 2);
	assert(wqe->opcode == METAROCE_WR_SEND_WITH_INV && wqe->imm_data == 0x77);
	assert(wqe->send_flags == METAROCE_SEND_INLINE);
	assert(wqe->num_sge == 0 && wqe->inline_len == 56);
	assert(!memcmp(wqe + 1, data, 56));

	/* wr_abort: the slots written are not published, no doorbell */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);
	ibv_wr_abort(x);
	assert(q->hdr->prod == start + 3 && doorbells == db + 1);

	/* an error in the middle: wr_complete reports it, nothing posted */
	q->hdr->cons = start + 3;
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);
	ibv_wr_rdma_read(x, 1, 2);
	ibv_wr_set_inline_data(x, data, 4);	/* inline on a READ */
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);
	assert(ibv_wr_complete(x) == EINVAL);
	assert(q->hdr->prod == start + 3 && doorbells == db + 1);

	/* too many SGEs, too much inline data, a full ring */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 3, sg);
	assert(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, data, 57);
	assert(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	for (i = 0; i < 5; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, 0x1000, 1);
	}
	assert(ibv_wr_complete(x) == ENOMEM);
	/* a data setter without an opcode; an op the device lacks */
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);
	assert(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_send_tso(x, data, 4, 1);
	assert(ibv_wr_complete(x) == EOPNOTSUPP);
	assert(q->hdr->prod == start + 3 && doorbells == db + 1);

	/* the ring's 4 slots fill exactly; an empty batch rings nothing */
	ibv_wr_start(x);
	for (i = 0; i < 4; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, 0x1000, 1);
	}
	assert(ibv_wr_complete(x) == 0);
	assert(q->hdr->prod == start + 7 && doorbells == db + 2);
	ibv_wr_start(x);
	assert(ibv_wr_complete(x) == 0 && doorbells == db + 2);

	/* sends need RTS (or an error state) */
	q->hdr->cons = q->hdr->prod;
	x->qp_base.state = IBV_QPS_RESET;
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);
	assert(ibv_wr_complete(x) == EINVAL && doorbells == db + 2);
	x->qp_base.state = IBV_QPS_RTS;

	/* UD: SENDs with an address only, the AH by the kernel's number */
	x->qp_base.qp_type = IBV_QPT_UD;
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 0x1000, 1);	/* no wr_set_ud_addr */
	assert(ibv_wr_complete(x) == EINVAL);
	ibv_wr_start(x);
	ibv_wr_rdma_write(x, 1, 2);
	assert(ibv_wr_complete(x) == EINVAL);
	assert(doorbells == db + 2 && q->hdr->prod == start + 7);
	ibv_wr_start(x);
	x->wr_id = 9;
	ibv_wr_send_imm(x, htobe32(0x1234));
	ibv_wr_set_ud_addr(x, &ah.ibv_ah, 0xabcdef, 0x11111111);
	ibv_wr_set_sge(x, 1, 0x1000, 0);
	assert(ibv_wr_complete(x) == 0 && doorbells == db + 3);
	wqe = ring_slot(q, start + 7);
	assert(wqe->wr_id == 9 && wqe->opcode == METAROCE_WR_SEND_WITH_IMM);
	assert(wqe->ud.ah == 33 && wqe->ud.remote_qpn == 0xabcdef);
	assert(wqe->ud.remote_qkey == 0x11111111 && wqe->num_sge == 1);

	/* windows: type 2 bound by wr_bind_mw, type 1 refused there */
	x->qp_base.qp_type = IBV_QPT_RC;
	q->hdr->cons = q->hdr->prod;
	mw.pd = x->qp_base.pd;
	mw.type = IBV_MW_TYPE_1;
	ibv_wr_start(x);
	ibv_wr_bind_mw(x, &mw, 0x1202, &bi);
	assert(ibv_wr_complete(x) == EINVAL && q->hdr->prod == start + 8);
	mw.type = IBV_MW_TYPE_2;
	ibv_wr_start(x);
	x->wr_id = 10;
	ibv_wr_bind_mw(x, &mw, 0x1202, &bi);
	x->wr_id = 11;
	ibv_wr_local_inv(x, 0x1202);
	assert(ibv_wr_complete(x) == 0 && q->hdr->prod == start + 10);
	wqe = ring_slot(q, start + 8);
	assert(wqe->wr_id == 10 && wqe->opcode == METAROCE_WR_BIND_MW);
	assert(wqe->rkey == 0x1202 && wqe->imm_data == 0x4d);
	assert(wqe->remote_addr == 0x5000 && wqe->compare_add == 0x100);
	assert(wqe->swap == IBV_ACCESS_REMOTE_WRITE && wqe->num_sge == 0);
	wqe = ring_slot(q, start + 9);
	assert(wqe->wr_id == 11 && wqe->opcode == METAROCE_WR_LOCAL_INV);
	assert(wqe->imm_data == 0x1202);
	free(q->map);
}

static void test_create_flags(void)
{
	struct metaroce_context mctx = { .caps = METAROCE_CAP_UD };
	struct ibv_context *ctx = &mctx.ibv_ctx.context;
	struct ibv_cq_init_attr_ex ca = { .cqe = 4 };
	struct ibv_qp_init_attr_ex a = {};
	struct ibv_pd pd = {};

	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = &pd;
	a.qp_type = IBV_QPT_RC;
	a.send_ops_flags = METAROCE_RC_SEND_OPS;
	assert(check_qp_init_attr_ex(ctx, &a) == 0);
	a.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);
	a.send_ops_flags = IBV_QP_EX_WITH_TSO;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);
	a.qp_type = IBV_QPT_UD;
	a.send_ops_flags = IBV_QP_EX_WITH_BIND_MW;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	assert(check_qp_init_attr_ex(ctx, &a) == 0);
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);
	mctx.caps = 0;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);
	a.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	a.qp_type = IBV_QPT_RC;
	assert(check_qp_init_attr_ex(ctx, &a) == EOPNOTSUPP);

	/* refused before any command reaches the kernel */
	ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	assert(!metaroce_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	assert(!metaroce_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP);
}

/* ibv_start_poll/next_poll/end_poll read what ibv_poll_cq reads */
static void test_cq_ex(void)
{
	struct metaroce_cq cq = {};
	struct ibv_cq_ex *x = &cq.vcq.cq_ex;
	struct metaroce_queue *q = &cq.ring;
	struct ibv_poll_cq_attr attr = {};
	struct metaroce_cqe *cqe;
	struct ibv_wc wc;
	uint32_t i;

	fake_ring(q, 4, sizeof(struct metaroce_cqe), 0xfffffffe);
	cq_set_ex_ops(x, IBV_WC_STANDARD_FLAGS);
	assert(ibv_start_poll(x, &attr) == ENOENT);
	for (i = 0; i < 3; i++) {
		cqe = ring_slot(q, 0xfffffffe + i);
		memset(cqe, 0, sizeof(*cqe));
		cqe->wr_id = 200 + i;
		cqe->byte_len = 64 + i;
		cqe->imm_data = htobe32(0xcafe0000 + i);
		cqe->qp_num = 17;
		cqe->src_qp = 19 + i;
		cqe->status = i == 1 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
		cqe->opcode = i == 0 ? IBV_WC_RECV : IBV_WC_RDMA_READ;
		cqe->wc_flags = i == 0 ? (METAROCE_CQE_WITH_IMM | METAROCE_CQE_GRH |
					  METAROCE_CQE_WITH_NETWORK_HDR_TYPE) : 0;
		cqe->network_hdr_type = i == 0 ? 3 : 0;
		cqe->sl = 2;
	}
	q->hdr->prod = 0xfffffffe + 2;

	assert(ibv_start_poll(x, &attr) == 0);
	assert(x->wr_id == 200 && x->status == IBV_WC_SUCCESS);
	assert(ibv_wc_read_opcode(x) == IBV_WC_RECV);
	assert(ibv_wc_read_byte_len(x) == 64);
	assert(be32toh(ibv_wc_read_imm_data(x)) == 0xcafe0000);
	assert(ibv_wc_read_qp_num(x) == 17 && ibv_wc_read_src_qp(x) == 19);
	assert(ibv_wc_read_wc_flags(x) == (IBV_WC_WITH_IMM | IBV_WC_GRH));
	assert(ibv_wc_read_sl(x) == METAROCE_WC_SL_ROCEV2_IPV6);
	assert(ibv_wc_read_slid(x) == 0 && ibv_wc_read_dlid_path_bits(x) == 0);
	assert(ibv_wc_read_vendor_err(x) == 0);
	assert(ibv_next_poll(x) == 0);
	assert(x->wr_id == 201 && x->status == IBV_WC_REM_ACCESS_ERR);
	assert(ibv_wc_read_sl(x) == 2 && ibv_wc_read_wc_flags(x) == 0);
	assert(q->hdr->cons == 0xfffffffe);	/* published by end_poll */
	assert(ibv_next_poll(x) == ENOENT);
	ibv_end_poll(x);
	assert(q->hdr->cons == 0);

	/* end_poll after a successful start_poll consumes that one */
	q->hdr->prod = 1;
	assert(ibv_start_poll(x, &attr) == 0 && x->wr_id == 202);
	ibv_end_poll(x);
	assert(q->hdr->cons == 1);
	assert(ibv_start_poll(x, &attr) == ENOENT);

	/* the ordinary poll still works on an extended CQ */
	cqe = ring_slot(q, 1);
	cqe->wr_id = 300;
	q->hdr->prod = 2;
	assert(metaroce_poll_cq(&cq.vcq.cq, 1, &wc) == 1 && wc.wr_id == 300);
	assert(q->hdr->cons == 2);
	/* the lock is free again: this would deadlock otherwise */
	assert(ibv_start_poll(x, &attr) == ENOENT);
	free(q->map);
}

/* write() refused after a credential change: the ioctl path from then on */
static void test_doorbell_fallback(void)
{
	struct metaroce_qp qp = {};
	struct ibv_qp *ibqp = &qp.vqp.qp;
	struct metaroce_queue *q = &qp.sq;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;
	int db = doorbells;

	fake_qp(ibqp);
	ibqp->qp_type = IBV_QPT_RC;
	ibqp->state = IBV_QPS_RTS;
	fake_ring(q, 4, 128, 0);
	q->max_sge = 2;
	q->max_inline = q->stride - sizeof(struct metaroce_send_wqe);
	refusals = 1;
	assert(metaroce_post_send(ibqp, &wr, &bad) == 0);
	assert(doorbells == db + 1 && ioctl_doorbells == 1);
	assert(fake_mctx.db_ioctl && q->hdr->prod == 1);
	assert(metaroce_post_send(ibqp, &wr, &bad) == 0);
	assert(doorbells == db + 1 && ioctl_doorbells == 2);
	fake_mctx.db_ioctl = false;
	free(q->map);
}

int main(void)
{
	test_poll_cq();
	test_post_send();
	test_post_recv();
	test_wr_api();
	test_create_flags();
	test_cq_ex();
	test_doorbell_fallback();
	printf("metaroce ring_test: ok\n");
	return 0;
}

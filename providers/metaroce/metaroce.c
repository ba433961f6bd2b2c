// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce userspace verbs provider.
 *
 * Control operations are plain uverbs commands.  The data path uses rings
 * shared with the kernel (see rdma/metaroce-abi.h): post_send and post_recv
 * write slots and publish a producer index, poll_cq reads completion slots
 * and publishes a consumer index.  The only system call on the data path is
 * the send doorbell, an IB_USER_VERBS_CMD_POST_SEND without work requests,
 * issued once per post_send call that queued something.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ccan/minmax.h>
#include <util/compiler.h>

#include "metaroce.h"

/* The rings carry the verbs values unchanged; make sure they agree. */
#define METAROCE_SAME(a, b) static_assert((int)(a) == (int)(b), #a " != " #b)
METAROCE_SAME(IBV_WR_RDMA_WRITE, METAROCE_WR_RDMA_WRITE);
METAROCE_SAME(IBV_WR_RDMA_WRITE_WITH_IMM, METAROCE_WR_RDMA_WRITE_WITH_IMM);
METAROCE_SAME(IBV_WR_SEND, METAROCE_WR_SEND);
METAROCE_SAME(IBV_WR_SEND_WITH_IMM, METAROCE_WR_SEND_WITH_IMM);
METAROCE_SAME(IBV_WR_RDMA_READ, METAROCE_WR_RDMA_READ);
METAROCE_SAME(IBV_WR_ATOMIC_CMP_AND_SWP, METAROCE_WR_ATOMIC_CMP_AND_SWP);
METAROCE_SAME(IBV_WR_ATOMIC_FETCH_AND_ADD, METAROCE_WR_ATOMIC_FETCH_AND_ADD);
METAROCE_SAME(IBV_WR_SEND_WITH_INV, METAROCE_WR_SEND_WITH_INV);
METAROCE_SAME(IBV_WR_LOCAL_INV, METAROCE_WR_LOCAL_INV);
METAROCE_SAME(IBV_WR_BIND_MW, METAROCE_WR_BIND_MW);
METAROCE_SAME(IBV_WC_BIND_MW, METAROCE_WC_BIND_MW);
METAROCE_SAME(IBV_WC_LOCAL_INV, METAROCE_WC_LOCAL_INV);
METAROCE_SAME(IBV_SEND_FENCE, METAROCE_SEND_FENCE);
METAROCE_SAME(IBV_SEND_SIGNALED, METAROCE_SEND_SIGNALED);
METAROCE_SAME(IBV_SEND_SOLICITED, METAROCE_SEND_SOLICITED);
METAROCE_SAME(IBV_SEND_INLINE, METAROCE_SEND_INLINE);
static_assert(sizeof(struct metaroce_ring) <= METAROCE_RING_HDR_SIZE,
	      "ring header");
static_assert(sizeof(struct metaroce_cqe) == 32, "cqe size");
static_assert(sizeof(struct metaroce_sge) == sizeof(struct ibv_sge), "sge");

#define METAROCE_SEND_FLAGS                                                    \
	(METAROCE_SEND_FENCE | METAROCE_SEND_SIGNALED |                        \
	 METAROCE_SEND_SOLICITED | METAROCE_SEND_INLINE)

/* wc_flags bits of struct metaroce_cqe (the kernel's IB_WC_* values) */
enum {
	METAROCE_CQE_GRH = 1 << 0,
	METAROCE_CQE_WITH_IMM = 1 << 1,
	METAROCE_CQE_WITH_INV = 1 << 2,
	METAROCE_CQE_WITH_NETWORK_HDR_TYPE = 1 << 6,
};

/* network_hdr_type of struct metaroce_cqe (the kernel's rdma_network_type) */
enum {
	METAROCE_NETWORK_IPV4 = 2,
	METAROCE_NETWORK_IPV6 = 3,
};

/*
 * ibv_wc.sl of a RoCE v2 UD receive: RoCE carries no service level, so
 * report the packet type there as mlx5 does (bit 3: UDP-encapsulated,
 * bits 2:0: 1 IPv6, 2 IPv4).  UCX before 1.19 reads it to find the
 * destination address in the 40-byte GRH area and drops the datagram when
 * it does not match one of its GIDs (ud_verbs, uct_ud_iface_check_grh()).
 */
enum {
	METAROCE_WC_SL_ROCEV2_IPV6 = 0x8 | 0x1,
	METAROCE_WC_SL_ROCEV2_IPV4 = 0x8 | 0x2,
};

/* --- rings ---------------------------------------------------------------- */

/*
 * Map a ring described by the kernel.  A size of 0 means the object has no
 * such ring: the queue is left empty (depth 0) and every post to it finds
 * it full.  The geometry is checked so that a provider/kernel mismatch
 * fails at create time instead of corrupting memory later.
 */
static int ring_map(struct ibv_context *ctx, struct metaroce_queue *q,
		    uint64_t offset, uint32_t size, uint32_t depth,
		    uint32_t stride, size_t min_stride)
{
	void *map;

	q->map = NULL;
	q->map_size = 0;
	q->hdr = NULL;
	q->slots = NULL;
	q->depth = 0;
	q->stride = 0;

	if (!size)
		return 0;

	if (!depth || (depth & (depth - 1)) || stride < min_stride ||
	    stride % 8 ||
	    size < METAROCE_RING_HDR_SIZE + (uint64_t)depth * stride) {
		verbs_err(verbs_get_ctx(ctx),
			  "metaroce: bad ring geometry: size %u depth %u stride %u\n",
			  size, depth, stride);
		return EINVAL;
	}

	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		   offset);
	if (map == MAP_FAILED)
		return errno;

	q->map = map;
	q->map_size = size;
	q->hdr = map;
	q->slots = (uint8_t *)map + METAROCE_RING_HDR_SIZE;
	q->depth = depth;
	q->stride = stride;
	return 0;
}

static void ring_unmap(struct metaroce_queue *q)
{
	if (q->map)
		munmap(q->map, q->map_size);
	q->map = NULL;
	q->hdr = NULL;
	q->slots = NULL;
	q->depth = 0;
}

/* Number of scatter entries that fit in a slot after a header of hdr_size. */
static uint32_t ring_sge_room(struct metaroce_queue *q, size_t hdr_size)
{
	if (!q->depth)
		return 0;
	return (q->stride - hdr_size) / sizeof(struct metaroce_sge);
}

/*
 * Reserve the next producer slot.  *cons caches the consumer index; it is
 * re-read (acquire, so the kernel is done with the slot) only when the
 * cached value says the ring is full.
 */
static void *ring_next_slot(struct metaroce_queue *q, uint32_t prod,
			    uint32_t *cons)
{
	if (!q->depth)
		return NULL;
	if (prod - *cons >= q->depth) {
		*cons = ring_load_acquire(&q->hdr->cons);
		if (prod - *cons >= q->depth)
			return NULL;
	}
	return ring_slot(q, prod);
}

/* --- device and context --------------------------------------------------- */

static int metaroce_query_device(struct ibv_context *context,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int metaroce_query_port(struct ibv_context *context, uint8_t port,
			       struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

/* --- protection domains, memory regions, address handles ------------------ */

static struct ibv_pd *metaroce_alloc_pd(struct ibv_context *context)
{
	struct mrc_alloc_pd_resp resp = {};
	struct mrc_alloc_pd cmd = {};
	struct metaroce_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, &cmd.ibv_cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	pd->pdn = resp.pdn;
	return &pd->ibv_pd;
}

static int metaroce_dealloc_pd(struct ibv_pd *ibpd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	free(to_mpd(ibpd));
	return 0;
}

/*
 * Access flags go to the kernel as given.  libibverbs already drops the
 * optional ones (IBV_ACCESS_RELAXED_ORDERING, ...) unless the kernel says
 * it accepts them, and the kernel ignores optional flags it does not use.
 */
static struct ibv_mr *metaroce_reg_mr(struct ibv_pd *pd, void *addr,
				      size_t length, uint64_t hca_va,
				      int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int metaroce_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/* --- memory windows ------------------------------------------------------- */

static struct ibv_mw *metaroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int metaroce_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

static int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr, bool type1);

/*
 * ibv_bind_mw(): a type 1 window is bound by a BIND_MW work request with
 * the next key; the window takes it once the request is posted.
 */
static int metaroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			    struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = post_send(qp, &wr, &bad, true);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * UD send WQEs name the AH by the number the kernel returns here (the
 * uverbs handle means nothing to the kernel's send engine).
 */
static struct ibv_ah *metaroce_create_ah(struct ibv_pd *pd,
					 struct ibv_ah_attr *attr)
{
	struct mrc_create_ah_resp resp = {};
	struct metaroce_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.ah_num;
	return &ah->ibv_ah;
}

static int metaroce_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_mah(ibah));
	return 0;
}

/* --- completion queues ---------------------------------------------------- */

/* Shared by create_cq and create_cq_ex. */
static struct metaroce_cq *cq_create(struct ibv_context *context, int cqe,
				     struct ibv_comp_channel *channel,
				     int comp_vector)
{
	struct mrc_create_cq_resp resp = {};
	struct mrc_create_cq cmd = {};
	struct metaroce_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_free;

	ret = ring_map(context, &cq->ring, resp.mmap_offset, resp.mmap_size,
		       resp.depth, sizeof(struct metaroce_cqe),
		       sizeof(struct metaroce_cqe));
	if (!ret && !cq->ring.map)
		ret = EINVAL;
	if (ret)
		goto err_destroy;

	pthread_spin_init(&cq->ring.lock, PTHREAD_PROCESS_PRIVATE);
	cq->cqn = resp.cqn;
	return cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

static struct ibv_cq *metaroce_create_cq(struct ibv_context *context, int cqe,
					 struct ibv_comp_channel *channel,
					 int comp_vector)
{
	struct metaroce_cq *cq;

	cq = cq_create(context, cqe, channel, comp_vector);
	return cq ? &cq->vcq.cq : NULL;
}

static int metaroce_destroy_cq(struct ibv_cq *ibcq)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	ring_unmap(&cq->ring);
	pthread_spin_destroy(&cq->ring.lock);
	free(cq);
	return 0;
}

/*
 * The kernel builds a new ring holding the unconsumed completions; swap the
 * mappings while holding the CQ lock so no poller sees the old ring after
 * the kernel has left it.
 */
static int metaroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct metaroce_cq *cq = to_mcq(ibcq);
	struct mrc_resize_cq_resp resp = {};
	struct mrc_resize_cq cmd = {};
	struct metaroce_queue nq;
	int ret;

	pthread_spin_lock(&cq->ring.lock);

	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto out;

	ret = ring_map(ibcq->context, &nq, resp.mmap_offset, resp.mmap_size,
		       resp.depth, sizeof(struct metaroce_cqe),
		       sizeof(struct metaroce_cqe));
	if (!ret && !nq.map)
		ret = EINVAL;
	if (ret)
		goto out;

	ring_unmap(&cq->ring);
	cq->ring.map = nq.map;
	cq->ring.map_size = nq.map_size;
	cq->ring.hdr = nq.hdr;
	cq->ring.slots = nq.slots;
	cq->ring.depth = nq.depth;
	cq->ring.stride = nq.stride;
	cq->cqn = resp.cqn;
out:
	pthread_spin_unlock(&cq->ring.lock);
	return ret;
}

static unsigned int cqe_wc_flags(const struct metaroce_cqe *cqe)
{
	uint8_t flags = cqe->wc_flags;

	return ((flags & METAROCE_CQE_GRH) ? IBV_WC_GRH : 0) |
	       ((flags & METAROCE_CQE_WITH_IMM) ? IBV_WC_WITH_IMM : 0) |
	       ((flags & METAROCE_CQE_WITH_INV) ? IBV_WC_WITH_INV : 0);
}

static uint8_t cqe_sl(const struct metaroce_cqe *cqe)
{
	uint8_t flags = cqe->wc_flags;

	if ((flags & METAROCE_CQE_GRH) &&
	    (flags & METAROCE_CQE_WITH_NETWORK_HDR_TYPE)) {
		if (cqe->network_hdr_type == METAROCE_NETWORK_IPV4)
			return METAROCE_WC_SL_ROCEV2_IPV4;
		if (cqe->network_hdr_type == METAROCE_NETWORK_IPV6)
			return METAROCE_WC_SL_ROCEV2_IPV6;
	}
	return cqe->sl;
}

static inline void metaroce_cqe_to_wc(const struct metaroce_cqe *cqe,
				      struct ibv_wc *wc)
{
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = 0;
	wc->byte_len = cqe->byte_len;
	/* network order in both; also the invalidated rkey (union) */
	wc->imm_data = (__force __be32)cqe->imm_data;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = cqe_wc_flags(cqe);
	wc->pkey_index = cqe->pkey_index;
	wc->slid = 0;
	wc->sl = cqe_sl(cqe);
	wc->dlid_path_bits = 0;
}

static int metaroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct metaroce_queue *q = &to_mcq(ibcq)->ring;
	uint32_t cons, prod;
	int n = 0;

	pthread_spin_lock(&q->lock);

	cons = ring_load_relaxed(&q->hdr->cons);
	prod = ring_load_acquire(&q->hdr->prod);
	while (n < ne && cons != prod) {
		metaroce_cqe_to_wc(ring_slot(q, cons), &wc[n]);
		cons++;
		n++;
	}
	/* the slots are read before the kernel may reuse them */
	if (n)
		ring_store_release(&q->hdr->cons, cons);

	pthread_spin_unlock(&q->lock);
	return n;
}

static int metaroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/*
 * --- extended CQ (ibv_start_poll) -----------------------------------------
 *
 * start_poll takes the CQ lock and end_poll drops it (not taken when
 * start_poll finds the CQ empty: the caller must not call end_poll then).
 * The consumer index is published by end_poll, so the kernel may reuse a
 * slot only after the caller is done with it.
 */
static inline struct metaroce_cq *to_mcq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct metaroce_cq, vcq.cq_ex);
}

/* Make slot @cons current if the kernel has produced it. */
static int cq_ex_load(struct metaroce_cq *cq, uint32_t cons)
{
	struct metaroce_queue *q = &cq->ring;

	cq->poll_cons = cons;
	if (cons == ring_load_acquire(&q->hdr->prod)) {
		cq->cur = NULL;
		return ENOENT;
	}
	cq->cur = ring_slot(q, cons);
	cq->vcq.cq_ex.wr_id = cq->cur->wr_id;
	cq->vcq.cq_ex.status = cq->cur->status;
	return 0;
}

static int mrc_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->ring.lock);
	ret = cq_ex_load(cq, ring_load_relaxed(&cq->ring.hdr->cons));
	if (ret)
		pthread_spin_unlock(&cq->ring.lock);
	return ret;
}

static int mrc_next_poll(struct ibv_cq_ex *ibcq)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);

	if (!cq->cur)
		return ENOENT;
	return cq_ex_load(cq, cq->poll_cons + 1);
}

static void mrc_end_poll(struct ibv_cq_ex *ibcq)
{
	struct metaroce_cq *cq = to_mcq_ex(ibcq);
	uint32_t cons = cq->poll_cons + (cq->cur ? 1 : 0);

	/* the slots are read before the kernel may reuse them */
	ring_store_release(&cq->ring.hdr->cons, cons);
	cq->cur = NULL;
	pthread_spin_unlock(&cq->ring.lock);
}

static enum ibv_wc_opcode mrc_read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->opcode;
}

static uint32_t mrc_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint32_t mrc_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->byte_len;
}

static __be32 mrc_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return (__force __be32)to_mcq_ex(ibcq)->cur->imm_data;
}

static uint32_t mrc_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->qp_num;
}

static uint32_t mrc_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_mcq_ex(ibcq)->cur->src_qp;
}

static unsigned int mrc_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return cqe_wc_flags(to_mcq_ex(ibcq)->cur);
}

static uint32_t mrc_read_slid(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint8_t mrc_read_sl(struct ibv_cq_ex *ibcq)
{
	return cqe_sl(to_mcq_ex(ibcq)->cur);
}

static uint8_t mrc_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static void cq_set_ex_ops(struct ibv_cq_ex *x, uint64_t wc_flags)
{
	x->start_poll = mrc_start_poll;
	x->next_poll = mrc_next_poll;
	x->end_poll = mrc_end_poll;
	x->read_opcode = mrc_read_opcode;
	x->read_vendor_err = mrc_read_vendor_err;
	x->read_wc_flags = mrc_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = mrc_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = mrc_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = mrc_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = mrc_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = mrc_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = mrc_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = mrc_read_dlid_path_bits;
}

/*
 * Only the standard fields: no timestamps, VLAN, flow tag or tag
 * matching.  SINGLE_THREADED is a hint (the lock stays); a parent domain
 * and IGNORE_OVERRUN are not supported.
 */
static struct ibv_cq_ex *metaroce_create_cq_ex(struct ibv_context *context,
					       struct ibv_cq_init_attr_ex *attr)
{
	struct metaroce_cq *cq;

	if ((attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = cq_create(context, attr->cqe, attr->channel, attr->comp_vector);
	if (!cq)
		return NULL;
	cq_set_ex_ops(&cq->vcq.cq_ex, attr->wc_flags);
	return &cq->vcq.cq_ex;
}

/* --- queue pairs ---------------------------------------------------------- */

/* a kernel without UD support would never send the datagrams */
static int check_qp_type(struct ibv_context *ctx, enum ibv_qp_type type)
{
	if (type == IBV_QPT_UD && !(to_mctx(ctx)->caps & METAROCE_CAP_UD))
		return EOPNOTSUPP;
	return 0;
}

/* Map the rings create_qp described; cap holds what the kernel granted. */
static int qp_map_rings(struct ibv_context *ctx, struct metaroce_qp *qp,
			const struct metaroce_create_qp_resp *resp,
			const struct ibv_qp_cap *cap, bool has_srq)
{
	int ret;

	ret = ring_map(ctx, &qp->sq, resp->sq_mmap_offset, resp->sq_mmap_size,
		       resp->sq_depth, resp->sq_stride,
		       sizeof(struct metaroce_send_wqe));
	if (ret)
		return ret;
	ret = ring_map(ctx, &qp->rq, resp->rq_mmap_offset, resp->rq_mmap_size,
		       resp->rq_depth, resp->rq_stride,
		       sizeof(struct metaroce_recv_wqe));
	if (ret) {
		ring_unmap(&qp->sq);
		return ret;
	}

	qp->sq.max_sge = min_t(uint32_t, cap->max_send_sge,
			       ring_sge_room(&qp->sq,
					     sizeof(struct metaroce_send_wqe)));
	qp->sq.max_inline = qp->sq.depth ?
		qp->sq.stride - sizeof(struct metaroce_send_wqe) : 0;
	qp->rq.max_sge = min_t(uint32_t, cap->max_recv_sge,
			       ring_sge_room(&qp->rq,
					     sizeof(struct metaroce_recv_wqe)));
	qp->has_srq = has_srq;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static struct ibv_qp *metaroce_create_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *attr)
{
	struct mrc_create_qp_resp resp = {};
	struct mrc_create_qp cmd = {};
	struct metaroce_qp *qp;
	int ret;

	ret = check_qp_type(pd->context, attr->qp_type);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	ret = qp_map_rings(pd->context, qp, &resp.drv_payload, &attr->cap,
			   attr->srq != NULL);
	if (ret)
		goto err_destroy;
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

static int metaroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			      int attr_mask)
{
	struct ibv_modify_qp cmd = {};

	return ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
}

static int metaroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int metaroce_destroy_qp(struct ibv_qp *ibqp)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;

	ring_unmap(&qp->sq);
	ring_unmap(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}

/* Check that the QP type allows the opcode. */
static int check_send_opcode(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return (type == IBV_QPT_RC || type == IBV_QPT_UC ||
			type == IBV_QPT_UD) ? 0 : EINVAL;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return (type == IBV_QPT_RC || type == IBV_QPT_UC) ? 0 : EINVAL;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return type == IBV_QPT_RC ? 0 : EINVAL;
	default:
		return EINVAL;
	}
}

/* Sends are only accepted from RTS on (and in the error states). */
static bool sq_state_ok(const struct ibv_qp *ibqp)
{
	switch (ibqp->state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		return true;
	}
}

/*
 * Send WQE builder, shared by ibv_post_send and the ibv_wr_* API: wqe_init
 * starts a slot, the wqe_set_* helpers fill in what the opcode needs.
 * Nothing is published here: a slot only reaches the kernel when the
 * caller moves the producer index past it.
 */
static int wqe_init(struct metaroce_qp *qp, struct metaroce_send_wqe *wqe,
		    uint64_t wr_id, enum ibv_wr_opcode opcode,
		    unsigned int send_flags)
{
	int ret;

	ret = check_send_opcode(qp->vqp.qp.qp_type, opcode);
	if (ret)
		return ret;

	wqe->wr_id = wr_id;
	wqe->opcode = opcode;
	/* set again by wqe_set_inline() */
	wqe->send_flags = send_flags & METAROCE_SEND_FLAGS &
			  ~METAROCE_SEND_INLINE;
	wqe->num_sge = 0;
	wqe->inline_len = 0;
	wqe->imm_data = 0;
	wqe->rkey = 0;
	wqe->remote_addr = 0;
	wqe->compare_add = 0;
	wqe->swap = 0;
	memset(&wqe->ud, 0, sizeof(wqe->ud));
	return 0;
}

static void wqe_set_remote(struct metaroce_send_wqe *wqe, uint32_t rkey,
			   uint64_t remote_addr)
{
	wqe->rkey = rkey;
	wqe->remote_addr = remote_addr;
}

static void wqe_set_atomic(struct metaroce_send_wqe *wqe, uint32_t rkey,
			   uint64_t remote_addr, uint64_t compare_add,
			   uint64_t swap)
{
	wqe_set_remote(wqe, rkey, remote_addr);
	wqe->compare_add = compare_add;
	wqe->swap = swap;
}

static void wqe_set_ud(struct metaroce_send_wqe *wqe, struct ibv_ah *ah,
		       uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->ud.ah = to_mah(ah)->ah_num;
	wqe->ud.remote_qpn = remote_qpn;
	wqe->ud.remote_qkey = remote_qkey;
}

static int wqe_set_sges(struct metaroce_queue *q,
			struct metaroce_send_wqe *wqe,
			const struct ibv_sge *sg_list, size_t num_sge)
{
	struct metaroce_sge *sge = (struct metaroce_sge *)(wqe + 1);
	size_t i;

	if (num_sge > q->max_sge)
		return EINVAL;
	for (i = 0; i < num_sge; i++) {
		sge[i].addr = sg_list[i].addr;
		sge[i].length = sg_list[i].length;
		sge[i].lkey = sg_list[i].lkey;
	}
	wqe->send_flags &= ~METAROCE_SEND_INLINE;
	wqe->num_sge = num_sge;
	wqe->inline_len = 0;
	return 0;
}

/* Inline data only makes sense for data that goes out. */
static bool wqe_sends_data(const struct metaroce_send_wqe *wqe)
{
	return wqe->opcode != IBV_WR_RDMA_READ &&
	       wqe->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	       wqe->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD &&
	       wqe->opcode != IBV_WR_LOCAL_INV &&
	       wqe->opcode != IBV_WR_BIND_MW;
}

/* Start the slot's inline data (empty); wqe_add_inline() appends. */
static int wqe_set_inline(struct metaroce_send_wqe *wqe)
{
	if (!wqe_sends_data(wqe))
		return EINVAL;
	wqe->send_flags |= METAROCE_SEND_INLINE;
	wqe->num_sge = 0;
	wqe->inline_len = 0;
	return 0;
}

static int wqe_add_inline(struct metaroce_queue *q,
			  struct metaroce_send_wqe *wqe, const void *addr,
			  size_t length)
{
	if (length > q->max_inline - wqe->inline_len)
		return EINVAL;
	memcpy((uint8_t *)(wqe + 1) + wqe->inline_len, addr, length);
	wqe->inline_len += length;
	return 0;
}

/* A window's binding: see struct metaroce_send_wqe. */
static void wqe_set_bind(struct metaroce_send_wqe *wqe, uint32_t rkey,
			 const struct ibv_mw_bind_info *info)
{
	wqe->rkey = rkey;
	wqe->imm_data = info->mr ? info->mr->lkey : 0;
	wqe->remote_addr = info->addr;
	wqe->compare_add = info->length;
	wqe->swap = info->mw_access_flags;
}

/* The opcode's own fields of an ibv_send_wr. */
static void wqe_set_from_wr(struct metaroce_qp *qp,
			    struct metaroce_send_wqe *wqe,
			    const struct ibv_send_wr *wr)
{
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->imm_data = (__force uint32_t)wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wqe->imm_data = wr->invalidate_rkey;
		break;
	case IBV_WR_BIND_MW:
		wqe_set_bind(wqe, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}

	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		wqe_set_ud(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
			   wr->wr.ud.remote_qkey);
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe_set_remote(wqe, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe_set_atomic(wqe, wr->wr.atomic.rkey,
			       wr->wr.atomic.remote_addr,
			       wr->wr.atomic.compare_add, wr->wr.atomic.swap);
		break;
	default:
		break;
	}
}

/* Fill one send slot from a work request; nothing is published here. */
static int write_send_wqe(struct metaroce_qp *qp, struct metaroce_send_wqe *wqe,
			  const struct ibv_send_wr *wr, bool type1)
{
	struct metaroce_queue *q = &qp->sq;
	int ret, i;

	if (wr->num_sge < 0)
		return EINVAL;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	/* ibv_post_send binds type 2 windows, ibv_bind_mw() type 1 */
	if (wr->opcode == IBV_WR_BIND_MW &&
	    (!wr->bind_mw.mw || wr->bind_mw.mw->pd != qp->vqp.qp.pd ||
	     wr->bind_mw.mw->type != (type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2)))
		return EINVAL;
	ret = wqe_init(qp, wqe, wr->wr_id, wr->opcode, wr->send_flags);
	if (ret)
		return ret;
	wqe_set_from_wr(qp, wqe, wr);

	/* a stray INLINE flag on a READ or an atomic is ignored */
	if (!(wr->send_flags & IBV_SEND_INLINE) || !wqe_sends_data(wqe))
		return wqe_set_sges(q, wqe, wr->sg_list, wr->num_sge);

	if ((uint32_t)wr->num_sge > q->max_sge)
		return EINVAL;
	ret = wqe_set_inline(wqe);
	for (i = 0; !ret && i < wr->num_sge; i++)
		ret = wqe_add_inline(q, wqe,
				     (void *)(uintptr_t)wr->sg_list[i].addr,
				     wr->sg_list[i].length);
	return ret;
}

/*
 * Tell the kernel the send ring has new work: a POST_SEND without work
 * requests, written to the command fd.  ibv_cmd_post_send() would take
 * the ioctl path (INVOKE_WRITE) where the kernel has it: 1,250 guest
 * instructions more per doorbell (5 % of a lone READ's round trip, counted
 * in the test bed), for nothing this empty command needs.  The kernel
 * refuses write() (EACCES) once the process's credentials differ from
 * the opener's (setuid after open); then the ioctl path, from then on.
 */
static int metaroce_ring_doorbell(struct ibv_qp *ibqp)
{
	struct metaroce_context *ctx = to_mctx(ibqp->context);
	struct ib_uverbs_post_send_resp resp;
	struct ibv_post_send cmd = {};
	struct ibv_send_wr *bad;

	if (!ctx->db_ioctl) {
		cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
		cmd.hdr.in_words = sizeof(cmd) / 4;
		cmd.hdr.out_words = sizeof(resp) / 4;
		cmd.response = (uintptr_t)&resp;
		cmd.qp_handle = ibqp->handle;
		cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
		if (write(ibqp->context->cmd_fd, &cmd, sizeof(cmd)) ==
		    sizeof(cmd))
			return 0;
		if (errno != EACCES)
			return errno;
		ctx->db_ioctl = true;
	}
	return ibv_cmd_post_send(ibqp, NULL, &bad);
}

/* @type1: the type 1 window bind of ibv_bind_mw(), not ibv_post_send() */
static int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr, bool type1)
{
	struct metaroce_qp *qp = to_mqp(ibqp);
	struct metaroce_queue *q = &qp->sq;
	struct metaroce_send_wqe *wqe;
	uint32_t prod, cons;
	unsigned int posted = 0;
	int ret = 0, db;

	if (!sq_state_ok(ibqp)) {
		*bad_wr = wr;
		return EINVAL;
	}

	pthread_spin_lock(&q->lock);
	if (q->depth) {
		prod = ring_load_relaxed(&q->hdr->prod);
		cons = ring_load_acquire(&q->hdr->cons);
	} else {
		prod = cons = 0;
	}

	for (; wr; wr = wr->next) {
		wqe = ring_next_slot(q, prod, &cons);
		if (!wqe) {
			ret = ENOMEM;
			break;
		}
		ret = write_send_wqe(qp, wqe, wr, type1);
		if (ret)
			break;
		prod++;
		ring_store_release(&q->hdr->prod, prod);
		posted++;
	}
	if (ret)
		*bad_wr = wr;

	pthread_spin_unlock(&q->lock);

	/*
	 * The work requests already in the ring stay there even if the
	 * doorbell fails; the kernel picks them up with the next one.
	 */
	if (posted) {
		db = metaroce_ring_doorbell(ibqp);
		if (db && !ret)
			ret = db;
	}
	return ret;
}

static int metaroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			      struct ibv_send_wr **bad_wr)
{
	return post_send(ibqp, wr, bad_wr, false);
}

/*
 * --- ibv_wr_* (extended QP) ---------------------------------------------
 *
 * wr_start takes the send ring lock and wr_complete or wr_abort drops it.
 * Each opcode call fills the next free slot with the WQE builder above;
 * the producer index is only published by wr_complete, so the batch is
 * all or nothing: the first error is kept in qp->wr.err, later calls do
 * nothing, and wr_complete reports it with nothing posted.  wr_abort
 * forgets the slots by not publishing them.
 */

/* The WQE being built, or NULL after an error (or before an opcode). */
static struct metaroce_send_wqe *wr_cur(struct metaroce_qp *qp)
{
	if (qp->wr.err)
		return NULL;
	if (!qp->wr.cur)
		qp->wr.err = EINVAL;
	return qp->wr.cur;
}

static void wr_fail(struct metaroce_qp *qp, int err)
{
	if (!qp->wr.err)
		qp->wr.err = err;
	qp->wr.cur = NULL;
}

/* The previous WQE is complete: a UD one must have an address. */
static void wr_check_prev(struct metaroce_qp *qp)
{
	if (qp->wr.cur && qp->wr.need_ud)
		wr_fail(qp, EINVAL);
}

/* Start the next WQE of the batch with the opcode and ibv_qp_ex fields. */
static struct metaroce_send_wqe *wr_begin(struct ibv_qp_ex *ibqpx,
					  enum ibv_wr_opcode opcode)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_send_wqe *wqe;
	int ret;

	wr_check_prev(qp);
	qp->wr.cur = NULL;
	if (qp->wr.err)
		return NULL;
	wqe = ring_next_slot(&qp->sq, qp->wr.prod, &qp->wr.cons);
	if (!wqe) {
		wr_fail(qp, ENOMEM);
		return NULL;
	}
	ret = wqe_init(qp, wqe, ibqpx->wr_id, opcode, ibqpx->wr_flags);
	if (ret) {
		wr_fail(qp, ret);
		return NULL;
	}
	qp->wr.prod++;
	qp->wr.cur = wqe;
	qp->wr.need_ud = ibqpx->qp_base.qp_type == IBV_QPT_UD;
	return wqe;
}

static void mrc_wr_send(struct ibv_qp_ex *ibqpx)
{
	wr_begin(ibqpx, IBV_WR_SEND);
}

static void mrc_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct metaroce_send_wqe *wqe = wr_begin(ibqpx, IBV_WR_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = (__force uint32_t)imm_data;
}

static void mrc_wr_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct metaroce_send_wqe *wqe = wr_begin(ibqpx, IBV_WR_SEND_WITH_INV);

	if (wqe)
		wqe->imm_data = invalidate_rkey;
}

static void mrc_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct metaroce_send_wqe *wqe = wr_begin(ibqpx, IBV_WR_RDMA_WRITE);

	if (wqe)
		wqe_set_remote(wqe, rkey, remote_addr);
}

static void mrc_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct metaroce_send_wqe *wqe;

	wqe = wr_begin(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM);
	if (wqe) {
		wqe_set_remote(wqe, rkey, remote_addr);
		wqe->imm_data = (__force uint32_t)imm_data;
	}
}

static void mrc_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	struct metaroce_send_wqe *wqe = wr_begin(ibqpx, IBV_WR_RDMA_READ);

	if (wqe)
		wqe_set_remote(wqe, rkey, remote_addr);
}

static void mrc_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	struct metaroce_send_wqe *wqe;

	wqe = wr_begin(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP);
	if (wqe)
		wqe_set_atomic(wqe, rkey, remote_addr, compare, swap);
}

static void mrc_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	struct metaroce_send_wqe *wqe;

	wqe = wr_begin(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD);
	if (wqe)
		wqe_set_atomic(wqe, rkey, remote_addr, add, 0);
}

static void mrc_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_send_wqe *wqe = wr_cur(qp);

	if (!wqe)
		return;
	if (!ah || ibqpx->qp_base.qp_type != IBV_QPT_UD) {
		wr_fail(qp, EINVAL);
		return;
	}
	wqe_set_ud(wqe, ah, remote_qpn, remote_qkey);
	qp->wr.need_ud = false;
}

static void mrc_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_send_wqe *wqe = wr_cur(qp);
	int ret;

	if (!wqe)
		return;
	ret = wqe_set_sges(&qp->sq, wqe, sg_list, num_sge);
	if (ret)
		wr_fail(qp, ret);
}

static void mrc_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	mrc_wr_set_sge_list(ibqpx, 1, &sge);
}

static void mrc_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx,
					size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_send_wqe *wqe = wr_cur(qp);
	size_t i;
	int ret;

	if (!wqe)
		return;
	ret = wqe_set_inline(wqe);
	for (i = 0; !ret && i < num_buf; i++)
		ret = wqe_add_inline(&qp->sq, wqe, buf_list[i].addr,
				     buf_list[i].length);
	if (ret)
		wr_fail(qp, ret);
}

static void mrc_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				   size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	mrc_wr_set_inline_data_list(ibqpx, 1, &buf);
}

static void mrc_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			   uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_send_wqe *wqe;

	if (!mw || mw->type != IBV_MW_TYPE_2 || mw->pd != ibqpx->qp_base.pd) {
		wr_check_prev(qp);
		wr_fail(qp, EINVAL);
		return;
	}
	wqe = wr_begin(ibqpx, IBV_WR_BIND_MW);
	if (wqe)
		wqe_set_bind(wqe, rkey, info);
}

static void mrc_wr_local_inv(struct ibv_qp_ex *ibqpx, uint32_t rkey)
{
	struct metaroce_send_wqe *wqe = wr_begin(ibqpx, IBV_WR_LOCAL_INV);

	if (wqe)
		wqe->imm_data = rkey;
}

/*
 * Operations the device does not have.  create_qp_ex refuses their flags;
 * a caller that uses them anyway gets EOPNOTSUPP from wr_complete.
 */
static void mrc_wr_send_tso(struct ibv_qp_ex *ibqpx, void *hdr,
			    uint16_t hdr_sz, uint16_t mss)
{
	wr_fail(to_mqp(&ibqpx->qp_base), EOPNOTSUPP);
}

static void mrc_wr_set_xrc_srqn(struct ibv_qp_ex *ibqpx, uint32_t srqn)
{
	wr_fail(to_mqp(&ibqpx->qp_base), EOPNOTSUPP);
}

static void mrc_wr_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	wr_fail(to_mqp(&ibqpx->qp_base), EOPNOTSUPP);
}

static void mrc_wr_flush(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			 uint64_t remote_addr, size_t len, uint8_t type,
			 uint8_t level)
{
	wr_fail(to_mqp(&ibqpx->qp_base), EOPNOTSUPP);
}

static void mrc_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_queue *q = &qp->sq;

	pthread_spin_lock(&q->lock);
	if (q->depth) {
		qp->wr.prod = ring_load_relaxed(&q->hdr->prod);
		qp->wr.cons = ring_load_acquire(&q->hdr->cons);
	} else {
		qp->wr.prod = 0;
		qp->wr.cons = 0;
	}
	qp->wr.start = qp->wr.prod;
	qp->wr.cur = NULL;
	qp->wr.need_ud = false;
	qp->wr.err = sq_state_ok(&ibqpx->qp_base) ? 0 : EINVAL;
}

/* Publish the whole batch and ring the doorbell once, or nothing. */
static int mrc_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);
	struct metaroce_queue *q = &qp->sq;
	bool posted = false;
	int ret;

	wr_check_prev(qp);
	ret = qp->wr.err;
	if (!ret && qp->wr.prod != qp->wr.start) {
		ring_store_release(&q->hdr->prod, qp->wr.prod);
		posted = true;
	}
	qp->wr.cur = NULL;
	pthread_spin_unlock(&q->lock);

	/* as in post_send: published WQEs stay even if the doorbell fails */
	if (posted)
		ret = metaroce_ring_doorbell(&ibqpx->qp_base);
	return ret;
}

static void mrc_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct metaroce_qp *qp = to_mqp(&ibqpx->qp_base);

	/* the slots written since wr_start were never published */
	qp->wr.cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

static void qp_set_wr_ops(struct ibv_qp_ex *x)
{
	x->wr_send = mrc_wr_send;
	x->wr_send_imm = mrc_wr_send_imm;
	x->wr_send_inv = mrc_wr_send_inv;
	x->wr_rdma_write = mrc_wr_rdma_write;
	x->wr_rdma_write_imm = mrc_wr_rdma_write_imm;
	x->wr_rdma_read = mrc_wr_rdma_read;
	x->wr_atomic_cmp_swp = mrc_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = mrc_wr_atomic_fetch_add;
	x->wr_set_ud_addr = mrc_wr_set_ud_addr;
	x->wr_set_sge = mrc_wr_set_sge;
	x->wr_set_sge_list = mrc_wr_set_sge_list;
	x->wr_set_inline_data = mrc_wr_set_inline_data;
	x->wr_set_inline_data_list = mrc_wr_set_inline_data_list;
	x->wr_bind_mw = mrc_wr_bind_mw;
	x->wr_local_inv = mrc_wr_local_inv;
	x->wr_send_tso = mrc_wr_send_tso;
	x->wr_set_xrc_srqn = mrc_wr_set_xrc_srqn;
	x->wr_atomic_write = mrc_wr_atomic_write;
	x->wr_flush = mrc_wr_flush;
	x->wr_start = mrc_wr_start;
	x->wr_complete = mrc_wr_complete;
	x->wr_abort = mrc_wr_abort;
}

/* ibv_wr_* operations per QP type (see check_send_opcode()) */
#define METAROCE_UD_SEND_OPS                                                   \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define METAROCE_RC_SEND_OPS                                                   \
	(METAROCE_UD_SEND_OPS | IBV_QP_EX_WITH_SEND_WITH_INV |                 \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |      \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |        \
	 IBV_QP_EX_WITH_LOCAL_INV)

static int check_qp_init_attr_ex(struct ibv_context *ctx,
				 const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	/* create flags reach the kernel, which refuses any it lacks */
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return check_qp_type(ctx, attr->qp_type);

	switch (attr->qp_type) {
	case IBV_QPT_RC:
		ops = METAROCE_RC_SEND_OPS;
		break;
	case IBV_QPT_UD:
		ops = METAROCE_UD_SEND_OPS;
		break;
	default:
		return EOPNOTSUPP;
	}
	/* ATOMIC_WRITE, TSO, FLUSH, ... */
	if (attr->send_ops_flags & ~ops)
		return EOPNOTSUPP;
	return check_qp_type(ctx, attr->qp_type);
}

static struct ibv_qp *metaroce_create_qp_ex(struct ibv_context *context,
					    struct ibv_qp_init_attr_ex *attr)
{
	struct mrc_create_qp_ex_resp resp = {};
	struct mrc_create_qp_ex cmd = {};
	struct metaroce_qp *qp;
	int ret;

	ret = check_qp_init_attr_ex(context, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_qp_ex2(context, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	ret = qp_map_rings(context, qp, &resp.drv_payload, &attr->cap,
			   attr->srq != NULL);
	if (ret)
		goto err_destroy;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp_set_wr_ops(&qp->vqp.qp_ex);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

/* Shared by the receive queue of a QP and by an SRQ. */
static int post_recv_ring(struct metaroce_queue *q, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct metaroce_recv_wqe *wqe;
	struct metaroce_sge *sge;
	uint32_t prod, cons;
	int ret = 0, i;

	pthread_spin_lock(&q->lock);
	if (q->depth) {
		prod = ring_load_relaxed(&q->hdr->prod);
		cons = ring_load_acquire(&q->hdr->cons);
	} else {
		prod = cons = 0;
	}

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge) {
			ret = EINVAL;
			break;
		}
		wqe = ring_next_slot(q, prod, &cons);
		if (!wqe) {
			ret = ENOMEM;
			break;
		}
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		sge = (struct metaroce_sge *)(wqe + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		prod++;
		ring_store_release(&q->hdr->prod, prod);
	}
	if (ret)
		*bad_wr = wr;

	pthread_spin_unlock(&q->lock);
	return ret;
}

static int metaroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr)
{
	struct metaroce_qp *qp = to_mqp(ibqp);

	if (qp->has_srq || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	return post_recv_ring(&qp->rq, wr, bad_wr);
}

/* --- shared receive queues ------------------------------------------------ */

static struct ibv_srq *metaroce_create_srq(struct ibv_pd *pd,
					   struct ibv_srq_init_attr *attr)
{
	struct mrc_create_srq_resp resp = {};
	struct mrc_create_srq cmd = {};
	struct metaroce_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;

	ret = ring_map(pd->context, &srq->rq, resp.mmap_offset, resp.mmap_size,
		       resp.depth, resp.stride,
		       sizeof(struct metaroce_recv_wqe));
	if (!ret && !srq->rq.map)
		ret = EINVAL;
	if (ret)
		goto err_destroy;

	/* attr->attr now holds what the kernel granted */
	srq->rq.max_sge = min_t(uint32_t, attr->attr.max_sge,
				ring_sge_room(&srq->rq,
					      sizeof(struct metaroce_recv_wqe)));
	srq->srq_num = resp.srq_num;
	pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * A resize (IBV_SRQ_MAX_WR) gets a new ring from the kernel, which moves
 * the WQEs not yet taken into it; posting waits on the ring lock until
 * the new ring is mapped.
 */
static int metaroce_resize_srq(struct metaroce_srq *srq,
			       struct ibv_srq_attr *attr, int attr_mask)
{
	struct ibv_context *ctx = srq->vsrq.srq.context;
	struct metaroce_create_srq_resp map = {};
	struct mrc_modify_srq cmd = {};
	struct metaroce_queue nq;
	int ret;

	cmd.map_addr = (uintptr_t)&map;
	pthread_spin_lock(&srq->rq.lock);
	/*
	 * ibv_modify_srq(3) calls max_sge irrelevant: a larger one grows the
	 * slots (up to max_srq_sge), anything else keeps them.
	 */
	if (attr->max_sge > srq->rq.max_sge)
		cmd.max_sge = attr->max_sge;
	ret = ibv_cmd_modify_srq(&srq->vsrq.srq, attr, attr_mask,
				 &cmd.ibv_cmd, sizeof(cmd));
	if (ret)
		goto out;
	ret = ring_map(ctx, &nq, map.mmap_offset, map.mmap_size, map.depth,
		       map.stride, sizeof(struct metaroce_recv_wqe));
	if (!ret && !nq.map)
		ret = EINVAL;
	ring_unmap(&srq->rq);
	if (ret)
		goto out;	/* the kernel moved on: posting now fails */
	srq->rq.map = nq.map;
	srq->rq.map_size = nq.map_size;
	srq->rq.hdr = nq.hdr;
	srq->rq.slots = nq.slots;
	srq->rq.depth = nq.depth;
	srq->rq.stride = nq.stride;
	if (cmd.max_sge)
		srq->rq.max_sge = min_t(uint32_t, cmd.max_sge,
					ring_sge_room(&srq->rq,
						      sizeof(struct metaroce_recv_wqe)));
out:
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}

static int metaroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			       int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	if (attr_mask & IBV_SRQ_MAX_WR)
		return metaroce_resize_srq(to_msrq(ibsrq), attr, attr_mask);
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

static int metaroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

static int metaroce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct metaroce_srq *srq = to_msrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	ring_unmap(&srq->rq);
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}

static int metaroce_post_srq_recv(struct ibv_srq *ibsrq,
				  struct ibv_recv_wr *wr,
				  struct ibv_recv_wr **bad_wr)
{
	return post_recv_ring(&to_msrq(ibsrq)->rq, wr, bad_wr);
}

/* --- provider glue -------------------------------------------------------- */

static void metaroce_free_context(struct ibv_context *ibctx)
{
	struct metaroce_context *ctx = to_mctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops metaroce_ctx_ops = {
	.alloc_mw = metaroce_alloc_mw,
	.alloc_pd = metaroce_alloc_pd,
	.bind_mw = metaroce_bind_mw,
	.create_ah = metaroce_create_ah,
	.create_cq = metaroce_create_cq,
	.create_cq_ex = metaroce_create_cq_ex,
	.create_qp = metaroce_create_qp,
	.create_qp_ex = metaroce_create_qp_ex,
	.create_srq = metaroce_create_srq,
	.dealloc_mw = metaroce_dealloc_mw,
	.dealloc_pd = metaroce_dealloc_pd,
	.dereg_mr = metaroce_dereg_mr,
	.destroy_ah = metaroce_destroy_ah,
	.destroy_cq = metaroce_destroy_cq,
	.destroy_qp = metaroce_destroy_qp,
	.destroy_srq = metaroce_destroy_srq,
	.free_context = metaroce_free_context,
	.modify_qp = metaroce_modify_qp,
	.modify_srq = metaroce_modify_srq,
	.poll_cq = metaroce_poll_cq,
	.post_recv = metaroce_post_recv,
	.post_send = metaroce_post_send,
	.post_srq_recv = metaroce_post_srq_recv,
	.query_device_ex = metaroce_query_device,
	.query_port = metaroce_query_port,
	.query_qp = metaroce_query_qp,
	.query_srq = metaroce_query_srq,
	.reg_mr = metaroce_reg_mr,
	.req_notify_cq = metaroce_req_notify_cq,
	.resize_cq = metaroce_resize_cq,
};

static struct verbs_context *metaroce_alloc_context(struct ibv_device *ibdev,
						    int cmd_fd,
						    void *private_data)
{
	struct verbs_device *vdev = verbs_get_device(ibdev);
	struct mrc_get_context_resp resp = {};
	struct mrc_get_context cmd = {
		.flags = METAROCE_UCTX_UD_AH_NUM,
	};
	struct metaroce_context *ctx;
	uint32_t driver_id;
	int err;

	/*
	 * The ioctl header must carry the driver id the kernel registered.
	 * Use the one netlink reported for this device (0, "unknown", if it
	 * reported none), not a constant: a device found by its name may
	 * not use METAROCE_DRIVER_ID.
	 */
	driver_id = vdev->sysfs ? vdev->sysfs->driver_id : METAROCE_DRIVER_ID;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   driver_id);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err;

	if (resp.abi_version != METAROCE_ABI_VERSION) {
		verbs_err(&ctx->ibv_ctx,
			  "metaroce: kernel reports provider ABI %u, expected %u\n",
			  resp.abi_version, METAROCE_ABI_VERSION);
		err = EPROTO;
		goto err;
	}

	/* a kernel without UD support leaves caps (formerly reserved) 0 */
	ctx->caps = resp.caps;
	verbs_set_ops(&ctx->ibv_ctx, &metaroce_ctx_ops);
	return &ctx->ibv_ctx;

err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = err;
	return NULL;
}

static struct verbs_device *
metaroce_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct metaroce_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void metaroce_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct metaroce_device, ibv_dev));
}

/*
 * A device is ours if the kernel reports METAROCE_DRIVER_ID through netlink
 * (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID; libibverbs tries this first), or else
 * if its name starts with "mrc".  The driver id is outside the upstream
 * enum rdma_driver_id; libibverbs compares it as a plain integer.
 */
static const struct verbs_match_ent metaroce_match_table[] = {
	VERBS_DRIVER_ID(METAROCE_DRIVER_ID),
	VERBS_NAME_MATCH("mrc", NULL),
	{},
};

static const struct verbs_device_ops metaroce_dev_ops = {
	.name = "metaroce",
	.match_min_abi_version = METAROCE_ABI_VERSION,
	.match_max_abi_version = METAROCE_ABI_VERSION,
	.match_table = metaroce_match_table,
	.alloc_device = metaroce_alloc_device,
	.uninit_device = metaroce_uninit_device,
	.alloc_context = metaroce_alloc_context,
};

PROVIDER_DRIVER(metaroce, metaroce_dev_ops);

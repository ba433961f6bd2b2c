/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metaroce userspace provider: private types.
 */
#ifndef METAROCE_H
#define METAROCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <infiniband/kern-abi.h>
#include <rdma/metaroce-abi.h>
#include <kernel-abi/metaroce-abi.h>

/*
 * Command wrappers: struct mrc_<verb> is the request (driver input only for
 * GET_CONTEXT), struct mrc_<verb>_resp the core response followed by the
 * metaroce one.
 */
DECLARE_DRV_CMD(mrc_get_context, IB_USER_VERBS_CMD_GET_CONTEXT,
		metaroce_alloc_ucontext_req, metaroce_alloc_ucontext_resp);
DECLARE_DRV_CMD(mrc_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, metaroce_create_ah_resp);
DECLARE_DRV_CMD(mrc_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD,
		empty, metaroce_alloc_pd_resp);
DECLARE_DRV_CMD(mrc_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, metaroce_create_cq_resp);
DECLARE_DRV_CMD(mrc_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, metaroce_create_cq_resp);
DECLARE_DRV_CMD(mrc_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, metaroce_create_qp_resp);
DECLARE_DRV_CMD(mrc_create_qp_ex, IB_USER_VERBS_EX_CMD_CREATE_QP,
		empty, metaroce_create_qp_resp);
DECLARE_DRV_CMD(mrc_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, metaroce_create_srq_resp);
DECLARE_DRV_CMD(mrc_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		metaroce_modify_srq, empty);

struct metaroce_device {
	struct verbs_device ibv_dev;
};

struct metaroce_context {
	struct verbs_context ibv_ctx;
	uint32_t caps;			/* METAROCE_CAP_* the kernel granted */
	bool db_ioctl;			/* write() refused: doorbell by ioctl */
};

struct metaroce_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
};

struct metaroce_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;		/* what UD send WQEs carry */
};

/*
 * One mmap'd ring shared with the kernel.  The indices live only in the
 * shared header (struct metaroce_ring); the provider writes the index it
 * owns (prod for SQ/RQ/SRQ, cons for a CQ) and reads the other one with
 * acquire semantics.
 */
struct metaroce_queue {
	void *map;			/* NULL when the queue has no ring */
	size_t map_size;
	struct metaroce_ring *hdr;
	uint8_t *slots;
	uint32_t depth;			/* power of two, 0 when absent */
	uint32_t stride;		/* bytes per slot */
	uint32_t max_sge;		/* scatter entries accepted per WR */
	uint32_t max_inline;		/* inline bytes that fit a send slot */
	pthread_spinlock_t lock;
};

struct metaroce_cq {
	struct verbs_cq vcq;
	struct metaroce_queue ring;
	uint32_t cqn;
	/* ibv_start_poll .. ibv_end_poll, under ring.lock */
	const struct metaroce_cqe *cur;	/* the completion being read */
	uint32_t poll_cons;		/* cons of @cur */
};

/*
 * An ibv_wr_* batch, between wr_start and wr_complete/wr_abort (under the
 * send ring lock).  Slots from @start to @prod are written but not yet
 * published.
 */
struct metaroce_wr_batch {
	uint32_t start;			/* producer index at wr_start */
	uint32_t prod;			/* next slot to fill */
	uint32_t cons;			/* cached consumer index */
	struct metaroce_send_wqe *cur;	/* the WQE being built */
	bool need_ud;			/* UD WQE without wr_set_ud_addr yet */
	int err;			/* first error, reported by wr_complete */
};

struct metaroce_qp {
	struct verbs_qp vqp;
	struct metaroce_queue sq;
	struct metaroce_queue rq;
	bool has_srq;
	struct metaroce_wr_batch wr;
};

struct metaroce_srq {
	struct verbs_srq vsrq;
	struct metaroce_queue rq;
	uint32_t srq_num;
};

static inline struct metaroce_context *to_mctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct metaroce_context, ibv_ctx.context);
}

static inline struct metaroce_pd *to_mpd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct metaroce_pd, ibv_pd);
}

static inline struct metaroce_ah *to_mah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct metaroce_ah, ibv_ah);
}

static inline struct metaroce_cq *to_mcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct metaroce_cq, vcq.cq);
}

static inline struct metaroce_qp *to_mqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct metaroce_qp, vqp.qp);
}

static inline struct metaroce_srq *to_msrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct metaroce_srq, vsrq.srq);
}

/*
 * Ring index accessors.  The field a side owns is only ever written by that
 * side, so reading it back needs no ordering; the other side's index is
 * loaded with acquire (slot contents are visible after it), and an own index
 * is published with release (slot contents are written before it).
 */
static inline uint32_t ring_load_acquire(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint32_t ring_load_relaxed(uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void ring_store_release(uint32_t *p, uint32_t val)
{
	__atomic_store_n(p, val, __ATOMIC_RELEASE);
}

static inline void *ring_slot(struct metaroce_queue *q, uint32_t idx)
{
	return q->slots + (size_t)(idx & (q->depth - 1)) * q->stride;
}

#endif /* METAROCE_H */

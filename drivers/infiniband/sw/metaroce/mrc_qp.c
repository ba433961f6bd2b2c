// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: queue pairs and shared receive queues: creation, the IB state
 * machine, posting work requests, flushing.
 */
#include <linux/capability.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>

#include "mrc.h"

#define MRC_SWQE_HDR	sizeof(struct metaroce_send_wqe)
#define MRC_RWQE_HDR	sizeof(struct metaroce_recv_wqe)
#define MRC_SGE_SZ	sizeof(struct metaroce_sge)

struct mrc_qp *mrc_qp_get(struct mrc_dev *mdev, u32 qpn)
{
	struct mrc_qp_handle *h;
	struct mrc_qp *qp = NULL;

	rcu_read_lock();
	h = xa_load(&mdev->qpn_xa, qpn);
	if (h && refcount_inc_not_zero(&h->ref))
		qp = h->qp;
	rcu_read_unlock();
	return qp;
}

void mrc_qp_put(struct mrc_qp *qp)
{
	if (refcount_dec_and_test(&qp->h->ref))
		complete(&qp->h->done);
}

static int mrc_qp_sizes(struct mrc_qp *qp, struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 need, sq_depth;

	if (cap->max_send_wr > MRC_MAX_QP_WR ||
	    cap->max_recv_wr > MRC_MAX_QP_WR ||
	    cap->max_send_sge > MRC_MAX_SGE ||
	    cap->max_recv_sge > MRC_MAX_SGE ||
	    cap->max_inline_data > MRC_MAX_INLINE)
		return -EINVAL;

	sq_depth = roundup_pow_of_two(max_t(u32, cap->max_send_wr, 1));
	need = max_t(u32, max_t(u32, cap->max_send_sge, 1) * MRC_SGE_SZ,
		     cap->max_inline_data);
	qp->sq.depth = sq_depth;
	qp->sq.stride = roundup_pow_of_two(MRC_SWQE_HDR + need);
	qp->max_send_sge = min_t(u32, MRC_MAX_SGE,
				 (qp->sq.stride - MRC_SWQE_HDR) / MRC_SGE_SZ);
	qp->max_inline = min_t(u32, MRC_MAX_INLINE,
			       qp->sq.stride - MRC_SWQE_HDR);

	qp->has_rq = !init->srq && cap->max_recv_wr;
	if (qp->has_rq) {
		qp->rq.depth = roundup_pow_of_two(cap->max_recv_wr);
		qp->rq.stride = roundup_pow_of_two(MRC_RWQE_HDR +
				max_t(u32, cap->max_recv_sge, 1) * MRC_SGE_SZ);
		qp->max_recv_sge = min_t(u32, MRC_MAX_SGE,
					 (qp->rq.stride - MRC_RWQE_HDR) /
					 MRC_SGE_SZ);
	}
	if (init->srq)
		qp->rmsg_n = MRC_SRQ_CLAIM;
	else if (qp->has_rq)
		qp->rmsg_n = min_t(u32, qp->rq.depth, 256);
	else
		qp->rmsg_n = 1;

	cap->max_send_wr = qp->sq.depth;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;
	cap->max_recv_wr = qp->has_rq ? qp->rq.depth : 0;
	cap->max_recv_sge = qp->has_rq ? qp->max_recv_sge : 0;
	return 0;
}

/* no new lookups of @qp, and no lookup or packet still using it */
static void mrc_qp_unpublish(struct mrc_qp *qp, u32 qpn)
{
	struct mrc_qp_handle *h = qp->h;

	xa_erase_irq(&qp->mdev->qpn_xa, qpn);
	/*
	 * A lookup that loaded the handle before the erase either holds a
	 * reference now, which we wait for, or will find none: the handle,
	 * not the QP, is what it may still read, so destroy needs no grace
	 * period of its own.
	 */
	mrc_qp_put(qp);
	wait_for_completion(&h->done);
	qp->h = NULL;
	kfree_rcu(h, rcu);
}

static void mrc_qp_free_bufs(struct mrc_qp *qp)
{
	struct mrc_ring sq, rq;

	/* restrack may read the ring headers until the core's restrack_del */
	spin_lock_bh(&qp->lock);
	mrc_ring_detach(&qp->sq, &sq);
	mrc_ring_detach(&qp->rq, &rq);
	spin_unlock_bh(&qp->lock);
	mrc_ring_free(&sq);
	mrc_ring_free(&rq);
	kvfree(qp->swqe);
	kvfree(qp->sq_shadow);
	kvfree(qp->tx_slots);
	kfree(qp->rx_map);
	kvfree(qp->wlog_ents);
	kvfree(qp->rmsg);
	kvfree(qp->rd);
	kvfree(qp->aresp);
	kfree(qp->path_ents);
	dst_cache_destroy(&qp->dst_cache);
	qp->path_ents = NULL;
	qp->swqe = NULL;
	qp->sq_shadow = NULL;
	qp->tx_slots = NULL;
	qp->rx_map = NULL;
	qp->wlog_ents = NULL;
	qp->rmsg = NULL;
	qp->rd = NULL;
	qp->aresp = NULL;
}

static void mrc_rq_flush_work(struct work_struct *work)
{
	mrc_flush_rq(container_of(work, struct mrc_qp, rq_flush_work));
}

/*
 * An RC packet is let in on its source address and QPNs alone (see
 * metaroce-protocol.rst, source checks): take the first free number at or
 * after a random one, so that a QPN says nothing about the next.  Still
 * one xarray walk, and it finds a free number whenever there is one.
 */
static int mrc_qpn_alloc(struct mrc_dev *mdev, struct mrc_qp *qp, u32 *qpn)
{
	u32 next = get_random_u32() & MRC_QPN_MAX;
	int err;

	err = xa_alloc_cyclic_irq(&mdev->qpn_xa, qpn, qp->h,
				  XA_LIMIT(MRC_QPN_MIN, MRC_QPN_MAX), &next,
				  GFP_KERNEL_ACCOUNT);
	return err < 0 ? err : 0;
}

int mrc_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibqp->device);
	struct mrc_qp *qp = to_mqp(ibqp);
	struct metaroce_create_qp_resp resp = {};
	u32 qpn, nent;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
		break;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		if (!mrc_ud_qp_allowed(init->qp_type, udata))
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&mdev->n_qp) > MRC_MAX_QP) {
		atomic_dec(&mdev->n_qp);
		return -ENOMEM;
	}

	qp->h = kmalloc(sizeof(*qp->h), GFP_KERNEL_ACCOUNT);
	if (!qp->h) {
		err = -ENOMEM;
		goto err_count;
	}
	refcount_set(&qp->h->ref, 1);
	init_completion(&qp->h->done);
	qp->h->qp = qp;
	qp->mdev = mdev;
	spin_lock_init(&qp->lock);
	mutex_init(&qp->state_mutex);
	skb_queue_head_init(&qp->txq);
	skb_queue_head_init(&qp->ackq);
	INIT_WORK(&qp->send_work, mrc_send_work);
	INIT_WORK(&qp->rq_flush_work, mrc_rq_flush_work);
	hrtimer_init(&qp->tx_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	qp->tx_timer.function = mrc_tx_timer_fn;
	hrtimer_init(&qp->ack_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	qp->ack_timer.function = mrc_ack_timer_fn;
	spin_lock_init(&qp->post_lock);
	qp->state = IB_QPS_RESET;
	qp->is_user = !!udata;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->pd = to_mpd(ibqp->pd);
	qp->scq = to_mcq(init->send_cq);
	qp->rcq = to_mcq(init->recv_cq);
	qp->srq = init->srq ? to_msrq(init->srq) : NULL;
	qp->pmtu_shift = 10;
	qp->retry_cnt = 7;
	qp->rnr_retry = 7;
	qp->timeout = 14;

	err = mrc_qp_sizes(qp, init);
	if (err)
		goto err_handle;
	err = mrc_ring_alloc(mdev, &qp->sq, qp->sq.depth, qp->sq.stride, udata);
	if (err)
		goto err_handle;
	if (qp->has_rq) {
		err = mrc_ring_alloc(mdev, &qp->rq, qp->rq.depth, qp->rq.stride,
				     udata);
		if (err)
			goto err_bufs;
	}
	err = -ENOMEM;
	/* all charged to the caller's memcg: a user sizes them */
	qp->swqe = kvcalloc(qp->sq.depth, sizeof(*qp->swqe),
			    GFP_KERNEL_ACCOUNT);
	qp->sq_shadow = kvmalloc_array(qp->sq.depth, qp->sq.stride,
				       GFP_KERNEL_ACCOUNT);
	qp->tx_slots = kvcalloc(MRC_TX_SLOTS, sizeof(*qp->tx_slots),
				GFP_KERNEL_ACCOUNT);
	qp->rx_map = kcalloc(MRC_RX_BITS / 64, sizeof(u64),
			     GFP_KERNEL_ACCOUNT);
	if (init->qp_type == IB_QPT_RC)
		qp->wlog_ents = kvcalloc(MRC_RX_BITS, sizeof(*qp->wlog_ents),
					 GFP_KERNEL_ACCOUNT);
	qp->rmsg = kvcalloc(qp->rmsg_n, sizeof(*qp->rmsg), GFP_KERNEL_ACCOUNT);
	qp->ordered = mdev->ordered;
	nent = qp->ordered ? 1 : mdev->entropies;
	qp->path_ents = kcalloc(nent, sizeof(*qp->path_ents),
				GFP_KERNEL_ACCOUNT);
	if (!qp->swqe || !qp->sq_shadow || !qp->tx_slots || !qp->rx_map ||
	    !qp->rmsg || !qp->path_ents ||
	    (init->qp_type == IB_QPT_RC && !qp->wlog_ents))
		goto err_bufs;
	/* an RC QP sends to one peer: one route lookup, not one per packet */
	if (init->qp_type == IB_QPT_RC &&
	    dst_cache_init(&qp->dst_cache, GFP_KERNEL_ACCOUNT))
		goto err_bufs;
	mrc_path_init(&qp->path, qp->path_ents, nent, get_random_u32(),
		      mrc_path_aware);

	if (init->qp_type == IB_QPT_GSI) {
		qpn = 1;
		err = xa_insert_irq(&mdev->qpn_xa, qpn, qp->h,
				    GFP_KERNEL_ACCOUNT);
	} else {
		err = mrc_qpn_alloc(mdev, qp, &qpn);
	}
	if (err)
		goto err_bufs;
	ibqp->qp_num = qpn;

	if (udata) {
		resp.sq_mmap_offset = mrc_ring_mmap_offset(&qp->sq);
		resp.sq_mmap_size = qp->sq.size;
		resp.sq_depth = qp->sq.depth;
		resp.sq_stride = qp->sq.stride;
		if (qp->has_rq) {
			resp.rq_mmap_offset = mrc_ring_mmap_offset(&qp->rq);
			resp.rq_mmap_size = qp->rq.size;
			resp.rq_depth = qp->rq.depth;
			resp.rq_stride = qp->rq.stride;
		}
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	mrc_qp_unpublish(qp, qpn);
err_bufs:
	mrc_qp_free_bufs(qp);
err_handle:
	kfree(qp->h);	/* NULL if published: unpublish freed it */
err_count:
	atomic_dec(&mdev->n_qp);
	return err;
}

static u8 mrc_mtu_shift(enum ib_mtu mtu)
{
	return 7 + (u8)mtu;	/* IB_MTU_256 is 1 */
}

static int mrc_qp_set_av(struct mrc_qp *qp, struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sattr;

	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	sattr = grh->sgid_attr;
	if (!sattr || sattr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	if (ipv6_addr_v4mapped((struct in6_addr *)sattr->gid.raw) !=
	    ipv6_addr_v4mapped((struct in6_addr *)grh->dgid.raw))
		return -EINVAL;
	qp->is_ipv6 = !ipv6_addr_v4mapped((struct in6_addr *)grh->dgid.raw);
	if (qp->is_ipv6 && !IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	memcpy(&qp->saddr6, sattr->gid.raw, sizeof(qp->saddr6));
	memcpy(&qp->daddr6, grh->dgid.raw, sizeof(qp->daddr6));
	qp->saddr4 = qp->saddr6.s6_addr32[3];
	qp->daddr4 = qp->daddr6.s6_addr32[3];
	qp->tos = grh->traffic_class;
	qp->ttl = grh->hop_limit;
	qp->av = *ah;
	if (qp->ibqp.qp_type == IB_QPT_RC)
		dst_cache_reset(&qp->dst_cache);
	qp->av.grh.sgid_attr = NULL;
	return 0;
}

/*
 * SRQ WQEs this QP took for messages that never completed (say RTS ->
 * RESET): the SRQ cannot take them back, so flush them instead of losing
 * the buffers.  From ERR, mrc_flush_rq() already did.
 */
static void mrc_qp_flush_srq_held(struct mrc_qp *qp)
{
	struct metaroce_cqe c = {
		.qp_num = qp->ibqp.qp_num,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = METAROCE_WC_RECV,
	};
	u32 i;

	if (!qp->srq)
		return;
	for (i = 0; i < qp->rmsg_n; i++) {
		const struct mrc_rmsg *m = &qp->rmsg[(qp->rmsn_base + i) &
						     (qp->rmsg_n - 1)];

		if (!m->have_wqe)
			continue;
		c.wr_id = m->wqe.wr_id;
		mrc_cq_post(qp->rcq, &c, false);
	}
}

/*
 * A QP going away gives the SRQ WQEs it took and did not complete back
 * to the SRQ, oldest first, for the SRQ's other QPs: it has nobody left to
 * complete them to.  Called once nothing can take more (qp->dead, its work
 * cancelled).  From ERR, mrc_flush_rq() may have flushed them already;
 * if memory is short they are flushed too.
 */
static void mrc_qp_give_back_srq(struct mrc_qp *qp)
{
	struct mrc_srq_back *b;
	u32 i, n = 0;

	if (!qp->srq)
		return;
	for (i = 0; i < qp->rmsg_n; i++)
		n += qp->rmsg[i].have_wqe;
	if (!n)
		return;
	b = kmalloc(struct_size(b, w, n), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!b) {
		mrc_qp_flush_srq_held(qp);
		return;
	}
	b->n = n;
	b->next = 0;
	n = 0;
	for (i = 0; i < qp->rmsg_n; i++) {
		struct mrc_rmsg *m = &qp->rmsg[(qp->rmsn_base + i) &
					       (qp->rmsg_n - 1)];

		if (m->have_wqe)
			b->w[n++] = m->wqe;
		m->have_wqe = false;
	}
	mrc_srq_give_back(qp->srq, b);
}

/*
 * State reset: queues emptied, engines idle; the READ/atomic tables go
 * to @t, freed by the caller once unlocked (an idle QP holds none).
 */
static void mrc_qp_reset(struct mrc_qp *qp, struct mrc_rd_tables *t)
{
	mrc_qp_flush_srq_held(qp);
	qp->sq_cons = 0;
	qp->sq_next = 0;
	qp->rq_cons = 0;
	qp->rmsn_base = 0;
	qp->smsn = 0;
	qp->rd_outstanding = 0;
	mrc_rd_tables_detach(qp, t);
	qp->resp_fail = false;
	qp->nak_pending = false;
	qp->err_pending = false;
	qp->err_has_rmsn = false;
	qp->rnr_wait = false;
	qp->ack_now = false;
	memset(qp->rmsg, 0, qp->rmsg_n * sizeof(*qp->rmsg));
	if (!qp->is_user) {
		unsigned long flags;

		/* a kernel poster racing a reset is the caller's bug: no tear */
		spin_lock_irqsave(&qp->post_lock, flags);
		qp->sq.hdr->prod = 0;
		qp->sq.hdr->cons = 0;
		if (qp->has_rq) {
			qp->rq.hdr->prod = 0;
			qp->rq.hdr->cons = 0;
		}
		spin_unlock_irqrestore(&qp->post_lock, flags);
	} else {
		/* the provider's producer index stays where it was */
		qp->sq_cons = READ_ONCE(qp->sq.hdr->prod);
		qp->sq_next = qp->sq_cons;
		WRITE_ONCE(qp->sq.hdr->cons, qp->sq_cons);
		if (qp->has_rq) {
			qp->rq_cons = READ_ONCE(qp->rq.hdr->prod);
			WRITE_ONCE(qp->rq.hdr->cons, qp->rq_cons);
		}
	}
}

/* IBTA field widths: larger values cannot go on the wire (RNR NAK) */
static bool mrc_qp_attr_ranges_ok(const struct ib_qp_attr *attr, int mask)
{
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return false;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return false;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return false;
	return !((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7);
}

/*
 * The responder's READ/atomic tables are sized from max_dest_rd_atomic
 * when the QP moves to RTR, and grow if SQD raises it: allocate them
 * here, before the lock; they are installed once the change is valid.
 * Called under state_mutex, which every writer of rd_n holds.
 */
static int mrc_qp_rd_prepare(struct mrc_qp *qp, const struct ib_qp_attr *attr,
			     int mask, struct mrc_rd_tables *t)
{
	u32 mdra = (mask & IB_QP_MAX_DEST_RD_ATOMIC) ?
		   attr->max_dest_rd_atomic : qp->max_dest_rd_atomic;
	bool to_rtr = (mask & IB_QP_STATE) && attr->qp_state == IB_QPS_RTR;

	memset(t, 0, sizeof(*t));
	if (qp->ibqp.qp_type != IB_QPT_RC || mdra > MRC_MAX_RD_ATOM)
		return 0;	/* no responder, or refused below */
	if (!to_rtr && (!(mask & IB_QP_MAX_DEST_RD_ATOMIC) ||
			mrc_rd_slots(mdra) <= qp->rd_n))
		return 0;
	return mrc_rd_tables_alloc(t, mdra);
}

int mrc_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	struct mrc_rd_tables rdt;
	enum ib_qp_state cur, new;
	u32 steps;
	int err = 0;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EOPNOTSUPP;

	mutex_lock(&qp->state_mutex);
	err = mrc_qp_rd_prepare(qp, attr, mask, &rdt);
	if (err) {
		mutex_unlock(&qp->state_mutex);
		return err;
	}
	spin_lock_bh(&qp->lock);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_PORT) && attr->port_num != 1) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > MRC_MAX_RD_ATOM) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > MRC_MAX_RD_ATOM) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096)) {
		err = -EINVAL;
		goto out;
	}
	if (!mrc_qp_attr_ranges_ok(attr, mask)) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & IB_QP_AV) && ibqp->qp_type == IB_QPT_RC) {
		err = mrc_qp_set_av(qp, &attr->ah_attr);
		if (err)
			goto out;
	}

	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_PATH_MTU)
		qp->pmtu_shift = mrc_seg_shift_fit(qp->mdev,
						   mrc_mtu_shift(attr->path_mtu));
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num & 0xffffff;
	if (mask & IB_QP_RQ_PSN)
		qp->rq_psn_attr = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn_attr = attr->sq_psn & 0xffffff;
	if (mask & IB_QP_TIMEOUT) {
		qp->timeout = attr->timeout;
		if (cur == IB_QPS_RTS || cur == IB_QPS_SQD)
			mrc_req_set_rto_max(qp);
	}
	if (mask & IB_QP_RETRY_CNT)
		qp->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	/* every check passed: the change happens (the old tables in rdt) */
	if (rdt.rd)
		mrc_rd_tables_install(qp, &rdt);

	if (!(mask & IB_QP_STATE) || new == cur)
		goto out_state;

	switch (new) {
	case IB_QPS_RESET:
		mrc_qp_reset(qp, &rdt);
		break;
	case IB_QPS_INIT:
		if (cur == IB_QPS_RESET)
			mrc_qp_reset(qp, &rdt);
		break;
	case IB_QPS_RTR:
		/* never build packets the netdev cannot carry (MTU changed?) */
		qp->pmtu_shift = mrc_seg_shift_fit(qp->mdev, qp->pmtu_shift);
		/* PSNs are 24 bits in the verbs API: start inside that space */
		mrc_rx_init(&qp->rx, qp->rx_map, MRC_RX_BITS, qp->rq_psn_attr);
		if (qp->wlog_ents)
			mrc_wlog_init(&qp->wlog, qp->wlog_ents, MRC_RX_BITS,
				      qp->rq_psn_attr);
		mrc_ackc_init(&qp->ackc, mrc_ack_every ? mrc_ack_every : 1,
			      mrc_ack_delay_us);
		qp->ooo_nak = false;
		spin_lock(&qp->mdev->credit_lock);
		mrc_credit_unhold(&qp->mdev->credit, &qp->crflow);
		mrc_credit_flow_init(&qp->crflow);
		spin_unlock(&qp->mdev->credit_lock);
		qp->ack_held = false;
		break;
	case IB_QPS_RTS:
		if (cur == IB_QPS_RTR) {
			qp->win_max = clamp_val(mrc_window, 16, MRC_TX_SLOTS);
			mrc_tx_init(&qp->tx, qp->tx_slots, MRC_TX_SLOTS,
				    qp->sq_psn_attr, qp->win_max);
			/* off: the window stays at its maximum */
			mrc_cc_init(&qp->cc, mrc_cc_enable ? 16 : qp->win_max,
				    mrc_cc_enable ? 1 : qp->win_max,
				    qp->win_max, mrc_cc_target_us);
			qp->tx.wnd = mrc_cc_wnd(&qp->cc);
			mrc_pace_init(&qp->pace, mrc_pacing_burst,
				      MRC_PACE_MIN_GAP_US);
			qp->pacing = mrc_pacing;
			qp->credit = 0;
			qp->credit_seg = 0;
			qp->peer_seg_shift = 0;
			qp->peer_dgram = 0;
			qp->spurious_rtos = 0;
			qp->spurious_tmos = 0;
			qp->spurious = 0;
			qp->gbn_valid = false;
			qp->retx_charged_valid = false;
			mrc_rtt_init(&qp->tx.rtt, mrc_rto_init_us,
				     mrc_rto_min_us, MRC_RTO_CEIL_US);
			mrc_req_set_rto_max(qp);
			steps = clamp_val(mrc_reo_steps, 1, MRC_REO_STEPS_MAX);
			qp->tx.reo_steps_min = rounddown_pow_of_two(steps);
			qp->tx.reo_steps = qp->tx.reo_steps_min;
			qp->tx.reo_cap_var = min(mrc_reo_cap_var, 16U);
			steps = clamp_val(mrc_tmo_steps, 1, MRC_TMO_STEPS_MAX);
			qp->tx.tmo_steps_max = rounddown_pow_of_two(steps);
			qp->rnr_left = qp->rnr_retry;
		}
		break;
	case IB_QPS_SQD:
		/* started messages finish, nothing new starts */
		qp->sqd_notify = (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
				 attr->en_sqd_async_notify;
		qp->sqd_drained = false;
		break;
	default:
		break;
	}
	mrc_qp_set_state(qp, new);
	if (new == IB_QPS_ERR) {
		spin_unlock_bh(&qp->lock);
		mrc_qp_error(qp);
		mutex_unlock(&qp->state_mutex);
		mrc_rd_tables_free(&rdt);
		return 0;
	}
out_state:
out:
	spin_unlock_bh(&qp->lock);
	mutex_unlock(&qp->state_mutex);
	mrc_rd_tables_free(&rdt);
	if (!err && (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD))
		mrc_send_kick(qp);
	return err;
}

/**
 * mrc_live_seq_visible() - may the caller see the QP's live PSNs and MSNs?
 * @ibqp: QP.
 *
 * They are what a forged RC packet needs, and RDMA netlink shows every QP
 * (through query_qp and the restrack callback) to any user, so they are
 * kept to the QP's own process and to CAP_NET_ADMIN, as nldev does for
 * memory keys.
 *
 * Return: true if the current task may see them.
 */
bool mrc_live_seq_visible(struct ib_qp *ibqp)
{
	struct task_struct *owner = ibqp->res.task;	/* NULL: kernel QP */

	if (owner && same_thread_group(owner, current))
		return true;
	return ns_capable_noaudit(&init_user_ns, CAP_NET_ADMIN);
}

int mrc_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	/* nldev asks with mask 0; a uverbs caller holds the QP's handle */
	bool psn = (mask & (IB_QP_SQ_PSN | IB_QP_RQ_PSN)) ||
		   mrc_live_seq_visible(ibqp);

	memset(attr, 0, sizeof(*attr));
	spin_lock_bh(&qp->lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = (enum ib_mtu)(qp->pmtu_shift - 7);
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = qp->qkey;
	if (psn) {
		attr->rq_psn = (qp->state >= IB_QPS_RTR &&
				qp->state != IB_QPS_ERR) ?
			       qp->rx.nxt & 0xffffff : qp->rq_psn_attr;
		attr->sq_psn = (qp->state >= IB_QPS_RTS &&
				qp->state != IB_QPS_ERR) ?
			       qp->tx.nxt & 0xffffff : qp->sq_psn_attr;
	}
	attr->dest_qp_num = qp->dest_qpn;
	attr->qp_access_flags = qp->access;
	attr->cap.max_send_wr = qp->sq.depth;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_inline_data = qp->max_inline;
	attr->cap.max_recv_wr = qp->has_rq ? qp->rq.depth : 0;
	attr->cap.max_recv_sge = qp->has_rq ? qp->max_recv_sge : 0;
	attr->ah_attr = qp->av;
	attr->pkey_index = 0;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	attr->sq_draining = qp->state == IB_QPS_SQD && !qp->sqd_drained;
	spin_unlock_bh(&qp->lock);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	return 0;
}

int mrc_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	struct mrc_dev *mdev = qp->mdev;

	mutex_lock(&qp->state_mutex);
	spin_lock_bh(&qp->lock);
	qp->dead = true;
	/* off the hold list before the last reference can go */
	mrc_resp_unhold(qp);
	/* READs being answered let go of their memory regions */
	mrc_rd_flush(qp);
	spin_unlock_bh(&qp->lock);
	mutex_unlock(&qp->state_mutex);

	mrc_qp_unpublish(qp, ibqp->qp_num);
	/* no request reaches it now: its type 2 windows go */
	mrc_mw_qp_gone(mdev, ibqp->qp_num);
	hrtimer_cancel(&qp->tx_timer);
	hrtimer_cancel(&qp->ack_timer);
	cancel_work_sync(&qp->send_work);
	cancel_work_sync(&qp->rq_flush_work);
	skb_queue_purge(&qp->txq);
	skb_queue_purge(&qp->ackq);
	mrc_qp_give_back_srq(qp);
	mrc_qp_free_bufs(qp);
	atomic_dec(&mdev->n_qp);
	return 0;
}

/**
 * mrc_wqe_put_data() - a kernel work request's data into its SQ WQE.
 * @qp: the QP (limits: max_inline, max_send_sge already checked).
 * @w: the WQE, zeroed.
 * @wr: the work request.
 *
 * Inline data is copied behind the WQE, else the SGEs are.
 *
 * Return: 0, or -EINVAL if the inline data exceeds max_inline.
 */
int mrc_wqe_put_data(struct mrc_qp *qp, struct metaroce_send_wqe *w,
		     const struct ib_send_wr *wr)
{
	struct metaroce_sge *sge;
	u32 len = 0;
	int i;

	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *d = (u8 *)(w + 1);

		for (i = 0; i < wr->num_sge; i++) {
			/* len <= max_inline: the difference cannot wrap */
			if (wr->sg_list[i].length > qp->max_inline - len)
				return -EINVAL;
			memcpy(d + len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		w->inline_len = len;
		w->num_sge = 0;
		return 0;
	}
	sge = (struct metaroce_sge *)(w + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	w->num_sge = wr->num_sge;
	return 0;
}

/* kernel ULPs: translate ib_send_wr into ring slots */
static int mrc_post_one_send(struct mrc_qp *qp, const struct ib_send_wr *wr)
{
	struct metaroce_send_wqe *w;
	u32 prod = qp->sq.hdr->prod;
	int err;

	/* sq_cons only grows (outside a reset): a stale one is safe */
	if (prod - READ_ONCE(qp->sq_cons) >= qp->sq.depth)
		return -ENOMEM;
	if (wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	w = mrc_ring_slot(&qp->sq, prod);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_data = (__force u32)wr->ex.imm_data;
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		w->remote_addr = rdma_wr(wr)->remote_addr;
		w->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = atomic_wr(wr)->remote_addr;
		w->rkey = atomic_wr(wr)->rkey;
		w->compare_add = atomic_wr(wr)->compare_add;
		w->swap = atomic_wr(wr)->swap;
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		w->imm_data = wr->ex.invalidate_rkey;
		break;
	case IB_WR_REG_MR:
		/* the MR is found by the key; the pointer is only compared */
		if (!reg_wr(wr)->mr)
			return -EINVAL;
		w->remote_addr = (uintptr_t)reg_wr(wr)->mr;
		w->rkey = reg_wr(wr)->key;
		w->compare_add = (u32)reg_wr(wr)->access;
		break;
	default:
		return -EINVAL;
	}
	if (qp->ibqp.qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;

	err = mrc_wqe_put_data(qp, w, wr);
	if (err)
		return err;
	mrc_ring_store(&qp->sq.hdr->prod, prod + 1);
	return 0;
}

int mrc_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	unsigned long flags;
	int err = 0;

	if (qp->is_user) {
		/* the doorbell: work requests are already in the ring */
		if (wr) {
			*bad = wr;
			return -EINVAL;
		}
		mrc_send_kick(qp);
		return 0;
	}
	if (qp->ibqp.qp_type != IB_QPT_RC)
		return mrc_ud_post_send(qp, wr, bad);
	/* kernel callers may be in any context, hard IRQs included */
	spin_lock_irqsave(&qp->post_lock, flags);
	if (qp->state < IB_QPS_RTS && qp->state != IB_QPS_ERR) {
		spin_unlock_irqrestore(&qp->post_lock, flags);
		*bad = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		err = mrc_post_one_send(qp, wr);
		if (err) {
			*bad = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->post_lock, flags);
	/* the send engine enables BH on its way out: not with IRQs off */
	if (irqs_disabled())
		queue_work(mrc_wq, &qp->send_work);
	else
		mrc_send_kick(qp);
	return err;
}

static int mrc_post_one_recv(struct mrc_ring *ring, u32 cons, u32 max_sge,
			     const struct ib_recv_wr *wr)
{
	struct metaroce_recv_wqe *w;
	struct metaroce_sge *sge;
	u32 prod = ring->hdr->prod;
	int i;

	if (prod - cons >= ring->depth)
		return -ENOMEM;
	if (wr->num_sge > max_sge)
		return -EINVAL;
	w = mrc_ring_slot(ring, prod);
	w->wr_id = wr->wr_id;
	w->num_sge = wr->num_sge;
	w->reserved = 0;
	sge = (struct metaroce_sge *)(w + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	mrc_ring_store(&ring->hdr->prod, prod + 1);
	return 0;
}

int mrc_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	unsigned long flags;
	bool flush;
	int err = 0;

	if (qp->is_user || !qp->has_rq) {
		*bad = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = mrc_post_one_recv(&qp->rq, READ_ONCE(qp->rq_cons),
					qp->max_recv_sge, wr);
		if (err) {
			*bad = wr;
			break;
		}
	}
	/* a move to ERR after this finds these WQEs and flushes them */
	flush = qp->state == IB_QPS_ERR;
	spin_unlock_irqrestore(&qp->post_lock, flags);
	if (flush && irqs_disabled())
		queue_work(mrc_wq, &qp->rq_flush_work);
	else if (flush)
		mrc_flush_rq(qp);
	return err;
}

/**
 * mrc_rq_peek() - copy and validate RQ WQE @idx (rq_cons <= idx < prod).
 * @qp: the QP.
 * @idx: ring index.
 * @out: the validated copy.
 *
 * Return: 0, -EAGAIN if not posted yet, -EINVAL if the WQE is malformed.
 */
int mrc_rq_peek(struct mrc_qp *qp, u32 idx, struct mrc_rwqe *out)
{
	const struct metaroce_recv_wqe *w;
	const struct metaroce_sge *sge;
	u32 prod = mrc_ring_load(&qp->rq.hdr->prod);
	u32 avail = prod - qp->rq_cons;
	u32 i, n;
	u64 len = 0;

	if (!qp->has_rq)
		return -EAGAIN;
	if (avail > qp->rq.depth)
		return -EINVAL;
	if (idx - qp->rq_cons >= avail)
		return -EAGAIN;
	w = mrc_ring_slot(&qp->rq, idx);
	out->wr_id = READ_ONCE(w->wr_id);
	n = READ_ONCE(w->num_sge);
	if (n > qp->max_recv_sge)
		return -EINVAL;
	sge = (const struct metaroce_sge *)(w + 1);
	memcpy(out->sge, sge, n * sizeof(*sge));
	for (i = 0; i < n; i++)
		len += out->sge[i].length;
	if (len > MRC_MAX_MSG_LEN)
		return -EINVAL;
	out->num_sge = n;
	out->length = len;
	return 0;
}

/* ---- shared receive queues ---- */

/* slots and slot size of an SRQ ring for @max_wr WQEs of @max_sge */
static void mrc_srq_geometry(u32 max_wr, u32 max_sge, u32 *depth,
			     u32 *stride)
{
	*depth = roundup_pow_of_two(max_wr + 1);
	*stride = roundup_pow_of_two(MRC_RWQE_HDR +
				     max_t(u32, max_sge, 1) * MRC_SGE_SZ);
}

int mrc_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibsrq->device);
	struct mrc_srq *srq = to_msrq(ibsrq);
	struct metaroce_create_srq_resp resp = {};
	u32 depth, stride, idx;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!init->attr.max_wr || init->attr.max_wr > MRC_MAX_SRQ_WR ||
	    init->attr.max_sge > MRC_MAX_SGE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&mdev->n_srq) > MRC_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	INIT_LIST_HEAD(&srq->back);
	srq->is_user = !!udata;
	srq->pd = to_mpd(ibsrq->pd);
	mrc_srq_geometry(init->attr.max_wr, init->attr.max_sge, &depth,
			 &stride);
	srq->max_sge = min_t(u32, MRC_MAX_SGE,
			     (stride - MRC_RWQE_HDR) / MRC_SGE_SZ);
	srq->max_wr = depth - 1;
	srq->limit = init->attr.srq_limit;
	err = mrc_ring_alloc(mdev, &srq->ring, depth, stride, udata);
	if (err)
		goto err_count;
	err = xa_alloc_cyclic(&mdev->srq_xa, &idx, srq, XA_LIMIT(1, 0xffffff),
			      &mdev->next_srq, GFP_KERNEL_ACCOUNT);
	if (err < 0)
		goto err_ring;
	srq->srq_num = idx;
	init->attr.max_wr = depth - 1;
	init->attr.max_sge = srq->max_sge;
	if (udata) {
		resp.mmap_offset = mrc_ring_mmap_offset(&srq->ring);
		resp.mmap_size = srq->ring.size;
		resp.depth = depth;
		resp.stride = stride;
		resp.srq_num = idx;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase(&mdev->srq_xa, idx);
err_ring:
	mrc_ring_free(&srq->ring);
err_count:
	atomic_dec(&mdev->n_srq);
	return err;
}

/*
 * Move the WQEs posted and not yet taken to the start of @nr and make it
 * the SRQ's ring (srq->lock held).  A WQE with more entries than the new
 * @max_sge fails the resize; one that was malformed already stays so.
 */
static int mrc_srq_swap(struct mrc_srq *srq, struct mrc_ring *nr,
			struct mrc_ring *old, u32 max_wr, u32 max_sge)
{
	const struct metaroce_recv_wqe *w;
	struct metaroce_recv_wqe *d;
	u32 prod, n, i, k;

	if (!srq->ring.buf)
		return -EINVAL;
	prod = mrc_ring_load(&srq->ring.hdr->prod);
	n = prod - srq->cons;
	/* a bad producer index, or more posted than the new size */
	if (n > srq->ring.depth || n > max_wr)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		w = mrc_ring_slot(&srq->ring, srq->cons + i);
		d = mrc_ring_slot(nr, i);
		k = READ_ONCE(w->num_sge);
		d->wr_id = READ_ONCE(w->wr_id);
		d->num_sge = k > srq->max_sge ? U32_MAX : k;
		if (k > srq->max_sge)
			continue;
		if (k > max_sge)
			return -EINVAL;
		memcpy(d + 1, w + 1, k * MRC_SGE_SZ);
	}
	nr->hdr->prod = n;
	nr->hdr->cons = 0;
	*old = srq->ring;
	srq->ring = *nr;
	srq->cons = 0;
	srq->max_wr = max_wr;
	srq->max_sge = max_sge;
	return 0;
}

/*
 * Tell the provider where the new ring is, before it is used: modify_srq
 * has no response buffer, so the driver data names a user address.
 */
static int mrc_srq_resize_map(struct mrc_srq *srq, struct mrc_ring *nr,
			      u64 addr)
{
	struct metaroce_create_srq_resp map = {
		.mmap_offset = mrc_ring_mmap_offset(nr),
		.mmap_size = nr->size,
		.depth = nr->depth,
		.stride = nr->stride,
		.srq_num = srq->srq_num,
	};

	return copy_to_user(u64_to_user_ptr(addr), &map, sizeof(map)) ?
	       -EFAULT : 0;
}

/* IB_SRQ_MAX_WR: a new ring; what is posted moves over */
static int mrc_srq_resize(struct mrc_srq *srq, u32 max_wr,
			  struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(srq->ibsrq.device);
	struct metaroce_modify_srq cmd = {};
	u32 max_sge = srq->max_sge, depth, stride;
	struct mrc_ring nr, old;
	int err;

	/*
	 * Kernel SRQs are posted to from any context: moving their WQEs
	 * would need IRQs off for a long copy.  No kernel ULP resizes.
	 */
	if (!udata || !srq->is_user)
		return -EOPNOTSUPP;
	if (!max_wr || max_wr > MRC_MAX_SRQ_WR)
		return -EINVAL;
	/* a provider that cannot map a new ring sends no address */
	if (udata->inlen < sizeof(cmd) ||
	    !ib_is_udata_cleared(udata, sizeof(cmd), udata->inlen - sizeof(cmd)))
		return -EOPNOTSUPP;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (cmd.reserved || !cmd.map_addr || cmd.max_sge > MRC_MAX_SGE)
		return -EINVAL;
	if (cmd.max_sge)
		max_sge = cmd.max_sge;
	mrc_srq_geometry(max_wr, max_sge, &depth, &stride);
	err = mrc_ring_alloc(mdev, &nr, depth, stride, udata);
	if (err)
		return err;
	err = mrc_srq_resize_map(srq, &nr, cmd.map_addr);
	if (err)
		goto err_ring;
	/* the provider does not post meanwhile: it holds its ring lock */
	spin_lock_bh(&srq->lock);
	err = mrc_srq_swap(srq, &nr, &old, max_wr, max_sge);
	spin_unlock_bh(&srq->lock);
	if (err)
		goto err_ring;
	/* the provider unmaps the old ring; its pages live until then */
	mrc_ring_free(&old);
	return 0;

err_ring:
	mrc_ring_free(&nr);
	return err;
}

int mrc_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct mrc_srq *srq = to_msrq(ibsrq);
	u32 max_wr = (mask & IB_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
	u32 limit = (mask & IB_SRQ_LIMIT) ? attr->srq_limit : srq->limit;
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EOPNOTSUPP;
	/* the limit counts WQEs: never above what the SRQ holds */
	if (limit > max_wr)
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		err = mrc_srq_resize(srq, max_wr, udata);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		spin_lock_bh(&srq->lock);
		srq->limit = attr->srq_limit;
		spin_unlock_bh(&srq->lock);
	}
	return 0;
}

int mrc_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct mrc_srq *srq = to_msrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int mrc_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct mrc_srq *srq = to_msrq(ibsrq);
	struct mrc_dev *mdev = to_mdev(ibsrq->device);

	struct mrc_srq_back *b, *tmp;
	struct mrc_ring ring;
	LIST_HEAD(back);

	xa_erase(&mdev->srq_xa, srq->srq_num);
	spin_lock_bh(&srq->lock);
	mrc_ring_detach(&srq->ring, &ring);
	list_splice_init(&srq->back, &back);
	spin_unlock_bh(&srq->lock);
	/* an unmapped user ring is vfree()d here: not under the lock */
	mrc_ring_free(&ring);
	list_for_each_entry_safe(b, tmp, &back, node)
		kfree(b);
	atomic_dec(&mdev->n_srq);
	return 0;
}

int mrc_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad)
{
	struct mrc_srq *srq = to_msrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->is_user) {
		*bad = wr;
		return -EINVAL;
	}
	/* not srq->lock: that one is taken with IRQs on */
	spin_lock_irqsave(&srq->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = mrc_post_one_recv(&srq->ring, READ_ONCE(srq->cons),
					srq->max_sge, wr);
		if (err) {
			*bad = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}

/* the oldest WQE given back (srq->lock held, the list not empty) */
static void mrc_srq_take_back(struct mrc_srq *srq, struct mrc_rwqe *out)
{
	struct mrc_srq_back *b = list_first_entry(&srq->back,
						  struct mrc_srq_back, node);

	*out = b->w[b->next++];
	srq->back_n--;
	if (b->next == b->n) {
		list_del(&b->node);
		kfree(b);
	}
}

/**
 * mrc_srq_give_back() - return WQEs taken from @srq but not used.
 * @srq: the SRQ.
 * @b: the WQEs, validated when they were taken; @srq owns @b from now.
 *
 * They are taken again, oldest first, before the ring's.
 */
void mrc_srq_give_back(struct mrc_srq *srq, struct mrc_srq_back *b)
{
	spin_lock_bh(&srq->lock);
	list_add_tail(&b->node, &srq->back);
	srq->back_n += b->n - b->next;
	spin_unlock_bh(&srq->lock);
}

/*
 * The limit event counts every WQE the SRQ can still hand out: the ring's
 * and those given back (srq->lock held).  Fires once, then disarms.
 */
static bool mrc_srq_below_limit(struct mrc_srq *srq, u32 prod)
{
	u32 ring = prod - srq->cons;

	if (ring > srq->ring.depth)	/* a user's bad producer index */
		ring = 0;
	if (!srq->limit || ring + srq->back_n >= srq->limit)
		return false;
	srq->limit = 0;
	return true;
}

/**
 * mrc_srq_take() - take the next SRQ WQE.
 * @srq: the SRQ.
 * @out: the validated copy.
 *
 * WQEs given back by destroyed QPs come first, then the ring's.
 *
 * Return: true with @out filled; false if the SRQ is empty or the WQE was
 * malformed (then it is skipped).
 */
bool mrc_srq_take(struct mrc_srq *srq, struct mrc_rwqe *out)
{
	const struct metaroce_recv_wqe *w;
	struct ib_event ev;
	bool fire = false, ok = false;
	u32 prod, n, i;
	u64 len = 0;

	spin_lock_bh(&srq->lock);
	if (!srq->ring.buf)
		goto out;
	prod = mrc_ring_load(&srq->ring.hdr->prod);
	if (!list_empty(&srq->back)) {
		mrc_srq_take_back(srq, out);
		ok = true;
		fire = mrc_srq_below_limit(srq, prod);
		goto out;
	}
	if (prod == srq->cons || prod - srq->cons > srq->ring.depth)
		goto out;
	w = mrc_ring_slot(&srq->ring, srq->cons);
	out->wr_id = READ_ONCE(w->wr_id);
	n = READ_ONCE(w->num_sge);
	if (n <= srq->max_sge) {
		memcpy(out->sge, w + 1, n * sizeof(struct metaroce_sge));
		for (i = 0; i < n; i++)
			len += out->sge[i].length;
		out->num_sge = n;
		out->length = len;
		ok = len <= MRC_MAX_MSG_LEN;
	}
	srq->cons++;
	mrc_ring_store(&srq->ring.hdr->cons, srq->cons);
	fire = mrc_srq_below_limit(srq, prod);
out:
	spin_unlock_bh(&srq->lock);
	if (fire && srq->ibsrq.event_handler) {
		ev.device = srq->ibsrq.device;
		ev.element.srq = &srq->ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return ok;
}

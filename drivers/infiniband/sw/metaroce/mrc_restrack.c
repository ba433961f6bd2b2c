// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: transport state of each QP and CQ for `rdma resource show qp -dd`
 * and `rdma resource show cq -dd`.  A stalled QP can then be read off a
 * live system: which ring index stopped, whether the window, the peer's
 * credit or an RNR wait holds the sender, and which timers are armed.
 */
#include <rdma/restrack.h>

#include "mrc.h"

struct mrc_res_u32 {
	const char *name;
	u32 val;
};

static int mrc_res_put(struct sk_buff *msg, const struct mrc_res_u32 *v,
		       unsigned int n)
{
	struct nlattr *table;
	unsigned int i;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	for (i = 0; i < n; i++) {
		if (rdma_nl_put_driver_u32(msg, v[i].name, v[i].val)) {
			nla_nest_cancel(msg, table);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, table);
	return 0;
}

#define MRC_RES_MAX	40

struct mrc_res_list {
	struct mrc_res_u32 v[MRC_RES_MAX];
	unsigned int n;
};

static void mrc_res_add(struct mrc_res_list *l, const char *name, u32 val)
{
	if (!WARN_ON_ONCE(l->n >= MRC_RES_MAX))
		l->v[l->n++] = (struct mrc_res_u32){ name, val };
}

int mrc_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	struct mrc_res_list l = { .n = 0 };
	bool live = mrc_live_seq_visible(ibqp);

	spin_lock_bh(&qp->lock);
	/*
	 * The core lists a QP until after destroy_qp returned, so its rings
	 * may be gone: free_bufs clears the headers under qp->lock.
	 */
	if (!qp->sq.hdr) {
		spin_unlock_bh(&qp->lock);
		return 0;
	}
	/* SQ: what userspace published, what was started, what is done */
	mrc_res_add(&l, "sq_depth", qp->sq.depth);
	mrc_res_add(&l, "sq_user_prod", mrc_ring_load(&qp->sq.hdr->prod));
	mrc_res_add(&l, "sq_next", qp->sq_next);
	mrc_res_add(&l, "sq_cons", qp->sq_cons);
	if (qp->has_rq && qp->rq.hdr) {
		mrc_res_add(&l, "rq_depth", qp->rq.depth);
		mrc_res_add(&l, "rq_user_prod", mrc_ring_load(&qp->rq.hdr->prod));
		mrc_res_add(&l, "rq_cons", qp->rq_cons);
	}
	/* the RC transport state; UD and GSI QPs only have their rings */
	if (ibqp->qp_type == IB_QPT_RC) {
		/* requester: PSN window, its limits and timers */
		if (live) {
			mrc_res_add(&l, "snd_una", qp->tx.una);
			mrc_res_add(&l, "snd_nxt", qp->tx.nxt);
		}
		mrc_res_add(&l, "inflight", mrc_tx_inflight(&qp->tx));
		mrc_res_add(&l, "sacked", qp->tx.sacked);
		mrc_res_add(&l, "lost", qp->tx.lost);
		mrc_res_add(&l, "cwnd", qp->cc.cwnd >> 8);	/* packets */
		mrc_res_add(&l, "win_max", qp->win_max);
		mrc_res_add(&l, "peer_credit", qp->credit);
		/*
		 * the path MTU's segment, the peer's largest READ segment and
		 * largest datagram (SEND and WRITE segments fill it), in bytes
		 */
		mrc_res_add(&l, "seg_path", 1u << qp->pmtu_shift);
		mrc_res_add(&l, "seg_peer_max",
			    qp->peer_seg_shift ? 1u << qp->peer_seg_shift : 0);
		mrc_res_add(&l, "peer_dgram", qp->peer_dgram);
		mrc_res_add(&l, "srtt_us", qp->tx.rtt.srtt);
		mrc_res_add(&l, "rto_us", qp->tx.rtt.rto);
		mrc_res_add(&l, "rto_backoff", qp->tx.rtt.backoff);
		mrc_res_add(&l, "tmo_steps", qp->tx.tmo_steps);
		mrc_res_add(&l, "pace_gap_us", qp->pace.gap);
		mrc_res_add(&l, "tx_timer_armed", qp->tx_timer_armed);
		mrc_res_add(&l, "rnr_wait", qp->rnr_wait);
		mrc_res_add(&l, "rd_outstanding", qp->rd_outstanding);
		/* responder: cumulative PSN, receive messages, ACK state */
		if (live) {
			mrc_res_add(&l, "rcv_nxt", qp->rx.nxt);
			mrc_res_add(&l, "rmsn_base", qp->rmsn_base);
		}
		mrc_res_add(&l, "ack_pending", qp->ackc.pending);
		mrc_res_add(&l, "ack_timer_armed", qp->ack_timer_armed);
		mrc_res_add(&l, "rd_res", qp->rd_res);
		mrc_res_add(&l, "entropies", qp->path.n);
		mrc_res_add(&l, "ordered", qp->ordered);
	}
	mrc_res_add(&l, "txq_len",
		    skb_queue_len(&qp->txq) + skb_queue_len(&qp->ackq));
	spin_unlock_bh(&qp->lock);
	return mrc_res_put(msg, l.v, l.n);
}

int mrc_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct mrc_cq *cq = to_mcq(ibcq);
	struct mrc_res_list l = { .n = 0 };
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	/* as for QPs: destroy_cq detached the ring under cq->lock */
	if (!cq->ring.hdr) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return 0;
	}
	mrc_res_add(&l, "depth", cq->ring.depth);
	mrc_res_add(&l, "prod", cq->prod);
	mrc_res_add(&l, "cons", cq->is_user ?
		    mrc_ring_load(&cq->ring.hdr->cons) : cq->kcons);
	mrc_res_add(&l, "overflow", cq->overflow);
	spin_unlock_irqrestore(&cq->lock, flags);
	return mrc_res_put(msg, l.v, l.n);
}

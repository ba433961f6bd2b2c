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

#define MRC_RES_ENTS	16	/* entropies listed, with their RTT */
#define MRC_RES_MAX	(48 + 2 * MRC_RES_ENTS)

/* attribute names must outlive the netlink message: literals */
#define MRC_ENT_NAMES(i) "ent" #i, "ent" #i "_rtt_us"
static const char * const mrc_ent_names[2 * MRC_RES_ENTS] = {
	MRC_ENT_NAMES(0), MRC_ENT_NAMES(1), MRC_ENT_NAMES(2),
	MRC_ENT_NAMES(3), MRC_ENT_NAMES(4), MRC_ENT_NAMES(5),
	MRC_ENT_NAMES(6), MRC_ENT_NAMES(7), MRC_ENT_NAMES(8),
	MRC_ENT_NAMES(9), MRC_ENT_NAMES(10), MRC_ENT_NAMES(11),
	MRC_ENT_NAMES(12), MRC_ENT_NAMES(13), MRC_ENT_NAMES(14),
	MRC_ENT_NAMES(15),
};

struct mrc_res_list {
	struct mrc_res_u32 *v;
	unsigned int n, max;
};

static void mrc_res_add(struct mrc_res_list *l, const char *name, u32 val)
{
	if (!WARN_ON_ONCE(l->n >= l->max))
		l->v[l->n++] = (struct mrc_res_u32){ name, val };
}

/*
 * Loss and path history of an RC QP: what it resent and why, what its
 * receive side saw out of order, and its entropies (UDP source ports)
 * with the smoothed RTT of each (0: no sample yet).
 */
static void mrc_res_qp_history(struct mrc_res_list *l, struct mrc_qp *qp)
{
	u32 i;

	mrc_res_add(l, "wnd", qp->tx.wnd);
	mrc_res_add(l, "retx_pkts", qp->retx_pkts);
	mrc_res_add(l, "rack_losses", qp->tx.rack_marked);
	mrc_res_add(l, "tlps", qp->tx.tlps);
	mrc_res_add(l, "rtos", qp->tx.rtos);
	mrc_res_add(l, "sack_holes", (u32)qp->rx.holes);
	mrc_res_add(l, "ooo_pkts", (u32)qp->rx.ooo);
	mrc_res_add(l, "path_switches", (u32)qp->path.switches);
	mrc_res_add(l, "path_retired", (u32)qp->path.retired);
	mrc_res_add(l, "path_delay_skips", (u32)qp->path.delay_skips);
	mrc_res_add(l, "path_rebalanced", (u32)qp->path.rebalanced);
	mrc_res_add(l, "path_losses", (u32)qp->path.losses);
	for (i = 0; i < qp->path.n && i < MRC_RES_ENTS; i++) {
		mrc_res_add(l, mrc_ent_names[2 * i], qp->path.ents[i].port);
		mrc_res_add(l, mrc_ent_names[2 * i + 1], qp->path.ents[i].rtt);
	}
}

int mrc_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct mrc_qp *qp = to_mqp(ibqp);
	struct mrc_res_list l = { .max = MRC_RES_MAX };
	bool live = mrc_live_seq_visible(ibqp);
	int ret;

	/* about 1.3 KiB: off the stack */
	l.v = kcalloc(MRC_RES_MAX, sizeof(*l.v), GFP_KERNEL);
	if (!l.v)
		return -ENOMEM;

	spin_lock_bh(&qp->lock);
	/*
	 * The core lists a QP until after destroy_qp returned, so its rings
	 * may be gone: free_bufs clears the headers under qp->lock.
	 */
	if (!qp->sq.hdr) {
		spin_unlock_bh(&qp->lock);
		kfree(l.v);
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
		mrc_res_qp_history(&l, qp);
	}
	mrc_res_add(&l, "txq_len",
		    skb_queue_len(&qp->txq) + skb_queue_len(&qp->ackq));
	spin_unlock_bh(&qp->lock);
	ret = mrc_res_put(msg, l.v, l.n);
	kfree(l.v);
	return ret;
}

int mrc_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct mrc_cq *cq = to_mcq(ibcq);
	struct mrc_res_u32 v[4];
	struct mrc_res_list l = { .v = v, .max = ARRAY_SIZE(v) };
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

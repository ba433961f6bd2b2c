// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: unreliable datagrams.  Address handles, and the data path of
 * UD QPs and of the GSI QP (QP1, which carries the MADs of the RDMA
 * connection manager): one UD_SEND packet per message, no PSNs, no ACKs,
 * no retransmission.  A datagram that finds no receive WQE is dropped.
 */
#include <linux/ip.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_mad.h>

#include "mrc.h"

#define MRC_GRH_LEN	sizeof(union rdma_network_hdr)	/* 40 */

/*
 * Where an AH sends to, resolved once at create_ah.  Send engines find it
 * by AH number under RCU, so it is freed after a grace period and outlives
 * a destroy_ah that races with a send.
 */
struct mrc_ah_addr {
	struct rcu_head rcu;
	struct mrc_pd *pd;		/* compared, never dereferenced */
	struct in6_addr saddr, daddr;	/* IPv4: v4-mapped */
	bool ipv6;
	u8 tos;
	u8 ttl;
};

/* AH number -> struct mrc_ah_addr, for every device (the PD check decides) */
static DEFINE_XARRAY_FLAGS(mrc_ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
static u32 mrc_ah_next;

/* a datagram's destination while it waits in a private queue */
struct mrc_ud_cb {
	struct in6_addr saddr, daddr;
	u16 sport;
	u8 tos;
	u8 ttl;
	bool ipv6;
};

#define MRC_UD_CB(skb)	((struct mrc_ud_cb *)(skb)->cb)

static struct mrc_ah *to_mah(struct ib_ah *ibah)
{
	return container_of(ibah, struct mrc_ah, ibah);
}

/* ---- address handles ---- */

int mrc_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibah->device);
	struct mrc_ah *ah = to_mah(ibah);
	bool sleep = init->flags & RDMA_CREATE_AH_SLEEPABLE;
	gfp_t gfp = sleep ? GFP_KERNEL : GFP_ATOMIC;
	struct metaroce_create_ah_resp resp = {};
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sattr;
	struct mrc_ah_addr *a;
	unsigned long flags;
	int err;

	if (!(rdma_ah_get_ah_flags(init->ah_attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(init->ah_attr);
	sattr = grh->sgid_attr;
	if (!sattr || sattr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	/* both ends IPv4 (v4-mapped GIDs) or both IPv6 */
	if (ipv6_addr_v4mapped((const struct in6_addr *)sattr->gid.raw) !=
	    ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw))
		return -EINVAL;
	if (!ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw) &&
	    !IS_ENABLED(CONFIG_IPV6))
		return -EAFNOSUPPORT;
	if (udata && udata->outlen && udata->outlen < sizeof(resp))
		return -EINVAL;

	if (atomic_inc_return(&mdev->n_ah) > MRC_MAX_AH) {
		err = -ENOMEM;
		goto err_count;
	}
	a = kzalloc(sizeof(*a), gfp);
	if (!a) {
		err = -ENOMEM;
		goto err_count;
	}
	a->pd = to_mpd(ibah->pd);
	memcpy(&a->saddr, sattr->gid.raw, sizeof(a->saddr));
	memcpy(&a->daddr, grh->dgid.raw, sizeof(a->daddr));
	a->ipv6 = !ipv6_addr_v4mapped(&a->daddr);
	a->tos = grh->traffic_class;
	a->ttl = grh->hop_limit;

	/* kernel AHs are created in atomic context too (ib_cm) */
	xa_lock_irqsave(&mrc_ah_xa, flags);
	err = __xa_alloc_cyclic(&mrc_ah_xa, &ah->ah_num, a, xa_limit_31b,
				&mrc_ah_next, GFP_ATOMIC);
	xa_unlock_irqrestore(&mrc_ah_xa, flags);
	if (err < 0)
		goto err_free;
	ah->addr = a;
	ah->attr = *init->ah_attr;
	ah->attr.grh.sgid_attr = NULL;

	if (udata && udata->outlen) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_lock_irqsave(&mrc_ah_xa, flags);
	__xa_erase(&mrc_ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&mrc_ah_xa, flags);
err_free:
	kfree_rcu(a, rcu);
err_count:
	atomic_dec(&mdev->n_ah);
	return err;
}

int mrc_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_mah(ibah)->attr;
	return 0;
}

int mrc_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct mrc_ah *ah = to_mah(ibah);
	unsigned long irqf;

	/* may run in atomic context (ib_cm frees AHs under its locks) */
	xa_lock_irqsave(&mrc_ah_xa, irqf);
	__xa_erase(&mrc_ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&mrc_ah_xa, irqf);
	kfree_rcu(ah->addr, rcu);
	ah->addr = NULL;
	atomic_dec(&to_mdev(ibah->device)->n_ah);
	return 0;
}

/* copy what AH @ah_num sends to, if it belongs to @qp's PD */
static bool mrc_ud_resolve(struct mrc_qp *qp, u32 ah_num,
			   struct mrc_ud_cb *cb)
{
	const struct mrc_ah_addr *a;
	bool ok = false;

	rcu_read_lock();
	a = xa_load(&mrc_ah_xa, ah_num);
	if (a && a->pd == qp->pd) {
		cb->saddr = a->saddr;
		cb->daddr = a->daddr;
		cb->ipv6 = a->ipv6;
		cb->tos = a->tos;
		cb->ttl = a->ttl;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}

/* ---- QP setup and kernel posting ---- */

/**
 * mrc_ud_qp_allowed() - may this UD or GSI QP be created?
 * @type: IB_QPT_UD or IB_QPT_GSI.
 * @udata: the user's data, NULL for a kernel QP.
 *
 * The GSI QP belongs to the kernel.  A user UD QP needs a provider that
 * names AHs by the numbers create_ah returns (METAROCE_UCTX_UD_AH_NUM);
 * an older provider puts uverbs handles there.
 *
 * Return: true if the QP may be created.
 */
bool mrc_ud_qp_allowed(enum ib_qp_type type, struct ib_udata *udata)
{
	struct mrc_ucontext *uc;

	if (!udata)
		return true;
	if (type != IB_QPT_UD)
		return false;
	uc = rdma_udata_to_drv_context(udata, struct mrc_ucontext, ibuc);
	return uc && (uc->caps & METAROCE_CAP_UD);
}

/* one kernel work request into the SQ ring (qp locked) */
static int mrc_ud_post_one(struct mrc_qp *qp, const struct ib_send_wr *wr)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	u32 prod = qp->sq.hdr->prod;
	struct metaroce_send_wqe *w;
	int err;

	if (prod - READ_ONCE(qp->sq_cons) >= qp->sq.depth)
		return -ENOMEM;
	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	if (!ud->ah || wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	w = mrc_ring_slot(&qp->sq, prod);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags & (IB_SEND_SIGNALED | IB_SEND_SOLICITED |
					  IB_SEND_INLINE);
	if (wr->opcode == IB_WR_SEND_WITH_IMM)
		w->imm_data = (__force u32)wr->ex.imm_data;
	w->ud.ah = to_mah(ud->ah)->ah_num;
	w->ud.remote_qpn = ud->remote_qpn;
	w->ud.remote_qkey = ud->remote_qkey;
	err = mrc_wqe_put_data(qp, w, wr);
	if (err)
		return err;
	mrc_ring_store(&qp->sq.hdr->prod, prod + 1);
	return 0;
}

/**
 * mrc_ud_post_send() - kernel post_send on a UD or GSI QP.
 * @qp: the QP (not a user QP).
 * @wr: the work requests (struct ib_ud_wr).
 * @bad: set to the first one not posted.
 *
 * The MAD layer posts with its send queue lock held and interrupts off
 * (ib_send_mad()), so nothing is sent from here: the WQEs go into the
 * ring and the send work sends them.
 *
 * Return: 0, -EINVAL (state, opcode, AH or SGEs) or -ENOMEM (ring full).
 */
int mrc_ud_post_send(struct mrc_qp *qp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad)
{
	unsigned long flags;
	int err = 0;

	/* post_lock, not qp->lock: callers may be in a hard IRQ */
	spin_lock_irqsave(&qp->post_lock, flags);
	if (qp->state < IB_QPS_RTS && qp->state != IB_QPS_ERR) {
		err = -EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		err = mrc_ud_post_one(qp, wr);
		if (err) {
			*bad = wr;
			break;
		}
	}
out:
	spin_unlock_irqrestore(&qp->post_lock, flags);
	queue_work(mrc_wq, &qp->send_work);
	return err;
}

/* ---- send ---- */

static void mrc_ud_xmit(struct mrc_dev *mdev, struct sk_buff *skb)
{
	/* the IP layer reuses skb->cb: take the destination out first */
	struct mrc_ud_cb cb = *MRC_UD_CB(skb);
	/*
	 * Datagrams leave Not-ECT: nothing would react to a CE mark (UD has
	 * no congestion control), so they must not claim ECN capability.
	 */
	u8 tos = cb.tos & ~INET_ECN_MASK;

	if (cb.ipv6)
		mrc_udp_xmit6(mdev, skb, &cb.saddr, &cb.daddr, cb.sport, tos,
			      cb.ttl, NULL);
	else
		mrc_udp_xmit4(mdev, skb, cb.saddr.s6_addr32[3],
			      cb.daddr.s6_addr32[3], cb.sport, tos, cb.ttl, NULL);
}

static void mrc_ud_cqe_send(struct mrc_qp *qp, u64 wr_id, u32 len, u8 status)
{
	struct metaroce_cqe c = {
		.wr_id = wr_id,
		.byte_len = len,
		.qp_num = qp->ibqp.qp_num,
		.status = status,
		.opcode = METAROCE_WC_SEND,
	};

	mrc_cq_post(qp->scq, &c, false);
}

/*
 * Build the datagram of SQ WQE @idx into @q (qp locked).
 * Return: IB_WC_SUCCESS, -ENOMEM to try again later, or the IB_WC_* status
 * the WQE fails with.
 */
static int mrc_ud_build(struct mrc_qp *qp, u32 idx, struct sk_buff_head *q,
			u32 *len_out)
{
	struct mrc_dev *mdev = qp->mdev;
	u8 *shadow = qp->sq_shadow + (size_t)(idx & (qp->sq.depth - 1)) *
		     qp->sq.stride;
	const struct metaroce_send_wqe *w = (const void *)shadow;
	const u8 *data = shadow + sizeof(*w);
	/* the largest datagram: the port's active MTU */
	u8 shift = mrc_seg_shift_fit(mdev, MRC_PMTU_IB_SHIFT);
	u32 hlen = mrc_wire_hdr_len(MRC_OP_UD_SEND, 0, 0);
	struct mrc_ud_cb cb = {};
	struct sk_buff *skb;
	struct mrc_pkt p;
	u64 len = 0;
	u32 i, qkey;

	memcpy(shadow, mrc_ring_slot(&qp->sq, idx), qp->sq.stride);
	if (w->opcode != METAROCE_WR_SEND &&
	    w->opcode != METAROCE_WR_SEND_WITH_IMM)
		return IB_WC_LOC_QP_OP_ERR;
	if (w->send_flags & METAROCE_SEND_INLINE) {
		if (w->inline_len > qp->max_inline)
			return IB_WC_LOC_LEN_ERR;
		len = w->inline_len;
	} else {
		const struct metaroce_sge *sge = (const void *)data;

		if (w->num_sge > qp->max_send_sge)
			return IB_WC_LOC_LEN_ERR;
		for (i = 0; i < w->num_sge; i++)
			len += sge[i].length;
	}
	/* a datagram is one packet */
	if (len > 1u << shift)
		return IB_WC_LOC_LEN_ERR;
	if (!mrc_ud_resolve(qp, w->ud.ah, &cb))
		return IB_WC_LOC_QP_OP_ERR;

	/* IBTA: a Q_Key with the high bit set means "use the QP's own" */
	qkey = w->ud.remote_qkey;
	if (qkey & IB_QP_SET_QKEY)
		qkey = qp->qkey;

	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_UD_SEND;
	p.dqpn = w->ud.remote_qpn & IB_QPN_MASK;
	p.sqpn = qp->ibqp.qp_num;
	p.tsval = mrc_now();
	p.pmtu_shift = shift;
	p.pay_len = len;
	p.hdr_len = hlen;
	p.ud.qkey = qkey;
	if (w->send_flags & METAROCE_SEND_SOLICITED)
		p.flags |= MRC_F_SOLICITED;
	if (w->opcode == METAROCE_WR_SEND_WITH_IMM) {
		p.flags |= MRC_F_IMM;
		/* four opaque bytes, as for RC (see mrc_build_req) */
		p.ud.imm = be32_to_cpu((__force __be32)w->imm_data);
	}

	skb = mrc_skb_alloc(qp, hlen, len);
	if (!skb)
		return -ENOMEM;
	mrc_wire_build(skb->data, &p);
	if (w->send_flags & METAROCE_SEND_INLINE) {
		memcpy(skb->data + hlen, data, len);
	} else if (len &&
		   mrc_sge_copy(mdev, qp->pd, (const void *)data, w->num_sge, 0,
				skb->data + hlen, len, false, 0)) {
		kfree_skb(skb);
		return IB_WC_LOC_PROT_ERR;
	}
	cb.sport = mrc_pick_entropy(qp, 0, false, p.tsval);
	trace_mrc_xmit(qp->ibqp.qp_num, p.dqpn, p.psn, p.opcode, p.flags,
		       cb.sport, len);
	BUILD_BUG_ON(sizeof(cb) > sizeof(skb->cb));
	*MRC_UD_CB(skb) = cb;
	__skb_queue_tail(q, skb);
	*len_out = len;
	return IB_WC_SUCCESS;
}

/* a WQE failed: it completes with @status, the QP goes to error (locked) */
static void mrc_ud_fail(struct mrc_qp *qp, u8 status)
{
	mrc_qp_set_state(qp, IB_QPS_ERR);
	mrc_flush_sq(qp, status);
}

/**
 * mrc_ud_send_run() - send the posted datagrams of a UD or GSI QP.
 * @qp: the QP; must not hold qp->lock.
 *
 * Every WQE becomes one packet and completes as soon as the packet is
 * built: there is nothing to wait for.  Runs from the doorbell, from
 * kernel post_send and, when a run had to stop, from the send work.
 */
void mrc_ud_send_run(struct mrc_qp *qp)
{
	struct mrc_dev *mdev = qp->mdev;
	u32 budget = MRC_TX_BUDGET, prod;
	struct sk_buff_head q;
	struct sk_buff *skb;
	bool more = false;

	__skb_queue_head_init(&q);
	spin_lock_bh(&qp->lock);
	if (qp->dead)
		goto unlock;
	if (qp->state == IB_QPS_ERR) {
		mrc_flush_sq(qp, IB_WC_WR_FLUSH_ERR);
		goto unlock;
	}
	/* SQD: nothing new starts; nothing is outstanding either */
	if (qp->state != IB_QPS_RTS)
		goto unlock;
	prod = mrc_ring_load(&qp->sq.hdr->prod);
	if (prod - qp->sq_cons > qp->sq.depth) {
		/* a corrupt producer index: a local QP error */
		mrc_ud_fail(qp, IB_WC_LOC_QP_OP_ERR);
		goto unlock;
	}
	while (qp->sq_cons != prod) {
		const struct metaroce_send_wqe *w;
		u32 len = 0;
		int st;

		if (!budget--) {
			more = true;
			break;
		}
		st = mrc_ud_build(qp, qp->sq_cons, &q, &len);
		if (st == -ENOMEM) {
			more = true;
			break;
		}
		/*
		 * A failed WQE moves a UD QP to the error state (IBTA); the
		 * GSI QP only fails the WQE, so that one bad MAD does not
		 * silence the connection manager until the device goes.
		 */
		if (st != IB_WC_SUCCESS && qp->ibqp.qp_type != IB_QPT_GSI) {
			mrc_ud_fail(qp, st);
			break;
		}
		w = (const void *)(qp->sq_shadow +
				   (size_t)(qp->sq_cons & (qp->sq.depth - 1)) *
				   qp->sq.stride);
		/* free the slot first: a poller may post again at once */
		qp->sq_cons++;
		qp->sq_next = qp->sq_cons;
		mrc_ring_store(&qp->sq.hdr->cons, qp->sq_cons);
		if (st != IB_WC_SUCCESS)
			mrc_ud_cqe_send(qp, w->wr_id, 0, st);
		else if (qp->sq_sig_all ||
			 (w->send_flags & METAROCE_SEND_SIGNALED))
			mrc_ud_cqe_send(qp, w->wr_id, len, IB_WC_SUCCESS);
	}
unlock:
	spin_unlock_bh(&qp->lock);
	while ((skb = __skb_dequeue(&q)))
		mrc_ud_xmit(mdev, skb);
	if (more)
		queue_work(mrc_wq, &qp->send_work);
}

/* ---- receive ---- */

/*
 * The 40 bytes in front of a UD payload: the RoCE v2 convention, 20 zero
 * bytes and the IPv4 header, or the IPv6 header.  ib_core and libibverbs
 * find the sender's GID there (ib_init_ah_attr_from_wc()), and tell IPv4
 * from IPv6 by the IPv4 header checksum, so an IPv4 header with options
 * is shortened to 20 bytes with a new checksum.
 */
static u8 mrc_ud_grh(struct sk_buff *skb, union rdma_network_hdr *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *ih = ip_hdr(skb);
		struct iphdr *g = &hdr->roce4grh;

		memcpy(g, ih, sizeof(*g));
		if (ih->ihl != 5) {
			g->ihl = 5;
			g->tot_len = htons(ntohs(ih->tot_len) -
					   (ih->ihl - 5) * 4);
			g->check = 0;
			g->check = ip_fast_csum(g, 5);
		}
		return RDMA_NETWORK_IPV4;
	}
	memcpy(&hdr->ibgrh, ipv6_hdr(skb), sizeof(hdr->ibgrh));
	/* extension headers are not part of the GRH */
	hdr->ibgrh.next_hdr = IPPROTO_UDP;
	return RDMA_NETWORK_IPV6;
}

/**
 * mrc_ud_rcv() - a UD_SEND datagram arrived.
 * @mdev: the receiving device.
 * @skb: the datagram; skb->data at the metaroce header, the IP header in
 *	place.  Not consumed.
 * @p: its parsed header.
 *
 * The destination must be a UD or GSI QP in RTR or later whose Q_Key
 * matches; the datagram takes the next receive WQE, which gets the GRH
 * and the payload.  Anything else drops it, counted by reason.
 */
void mrc_ud_rcv(struct mrc_dev *mdev, struct sk_buff *skb,
		const struct mrc_pkt *p)
{
	struct metaroce_cqe c = {};
	union rdma_network_hdr grh;
	struct mrc_rwqe wqe;
	bool fatal = false;
	struct mrc_qp *qp;
	u32 qkey;
	u8 nht;
	int err;

	qp = mrc_qp_get(mdev, p->dqpn);
	if (!qp) {
		mrc_count_drop(mdev, MRC_DROP_NO_QP);
		return;
	}
	if (qp->ibqp.qp_type != IB_QPT_UD && qp->ibqp.qp_type != IB_QPT_GSI) {
		mrc_count_drop(mdev, MRC_DROP_BAD_SRC);
		goto put;
	}
	nht = mrc_ud_grh(skb, &grh);

	spin_lock_bh(&qp->lock);
	if (qp->dead || qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR) {
		mrc_count_drop(mdev, MRC_DROP_BAD_STATE);
		goto unlock;
	}
	qkey = qp->ibqp.qp_type == IB_QPT_GSI ? IB_QP1_QKEY : qp->qkey;
	if (p->ud.qkey != qkey) {
		atomic_inc(&mdev->qkey_viol);
		mrc_count_drop(mdev, MRC_DROP_BAD_SRC);
		goto unlock;
	}

	/* unreliable: no receive WQE, no delivery (and no RNR) */
	if (qp->srq) {
		if (!mrc_srq_take(qp->srq, &wqe)) {
			mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			goto unlock;
		}
	} else {
		err = mrc_rq_peek(qp, qp->rq_cons, &wqe);
		if (err == -EAGAIN) {
			mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			goto unlock;
		}
		if (err) {
			/* a malformed WQE of our own consumer */
			mrc_count_drop(mdev, MRC_DROP_BAD_STATE);
			fatal = true;
			goto unlock;
		}
		qp->rq_cons++;
		mrc_ring_store(&qp->rq.hdr->cons, qp->rq_cons);
	}

	c.wr_id = wqe.wr_id;
	c.qp_num = qp->ibqp.qp_num;
	c.src_qp = p->sqpn;
	c.opcode = METAROCE_WC_RECV;
	if (wqe.length < MRC_GRH_LEN + p->pay_len) {
		/* the WQE completes in error, the QP carries on (as rxe) */
		c.status = IB_WC_LOC_LEN_ERR;
		mrc_count_drop(mdev, MRC_DROP_BAD_LENGTH);
		goto post;
	}
	err = mrc_sge_copy(mdev, mrc_recv_pd(qp), wqe.sge, wqe.num_sge, 0,
			   &grh, MRC_GRH_LEN, true, MRC_ACC_LOCAL_WRITE);
	if (!err && p->pay_len)
		err = mrc_sge_copy_skb(mdev, mrc_recv_pd(qp), wqe.sge,
				       wqe.num_sge, MRC_GRH_LEN, skb,
				       p->hdr_len, p->pay_len);
	if (err) {
		c.status = IB_WC_LOC_PROT_ERR;
		fatal = true;
		goto post;
	}
	c.status = IB_WC_SUCCESS;
	c.byte_len = MRC_GRH_LEN + p->pay_len;
	c.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
	c.network_hdr_type = nht;
	if (p->flags & MRC_F_IMM) {
		c.wc_flags |= IB_WC_WITH_IMM;
		/* back to the opaque network-order bytes */
		c.imm_data = (__force u32)cpu_to_be32(p->ud.imm);
	}
post:
	mrc_cq_post(qp->rcq, &c, p->flags & MRC_F_SOLICITED);
unlock:
	spin_unlock_bh(&qp->lock);
	if (fatal)
		mrc_qp_error(qp);
put:
	mrc_qp_put(qp);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: the responder.  Places every request packet on arrival,
 * tracks arrivals in the receive scoreboard, acknowledges with SACK,
 * completes receives in order and serves READs and atomics in PSN order.
 */
#include "mrc.h"

static struct mrc_rmsg *mrc_rmsg(struct mrc_qp *qp, u32 rmsn)
{
	return &qp->rmsg[rmsn & (qp->rmsg_n - 1)];
}

/* deliberate errors in an ACK's echo fields (mrc_fault()) */
static void mrc_fault_ack(struct mrc_qp *qp, struct mrc_pkt *p)
{
	if (mrc_fault(MRC_FI_TS_ECHO))
		p->ack.ts_echo++;
	if (mrc_fault(MRC_FI_RNR_TIMER) && p->ack.syndrome == MRC_SYN_RNR)
		p->ack.rnr_timer = (p->ack.rnr_timer + 1) & 31;
	if (mrc_fault(MRC_FI_NAK_CODE) && p->ack.syndrome == MRC_SYN_REM_ACCESS)
		p->ack.syndrome = MRC_SYN_REM_OP;
}

/* build an ACK (or NAK) for the current receive state (locked) */
void mrc_send_ack(struct mrc_qp *qp, u8 syndrome, u32 nak_psn)
{
	mrc_send_ack_flags(qp, syndrome, nak_psn, 0);
}

/*
 * An ACK or NAK with cumulative PSN @cum and, if @sack, the SACK words of
 * the receive state (locked).
 */
static void mrc_send_ack_at(struct mrc_qp *qp, u32 cum, bool sack,
			    u8 syndrome, u32 nak_psn, u8 flags)
{
	u32 now = mrc_now(), hlen;
	struct sk_buff *skb;
	struct mrc_pkt p;
	u16 sport;

	mrc_pkt_init(qp, &p, MRC_OP_ACK, cum, now);
	p.pmtu_shift = mrc_seg_shift_max(qp->mdev);
	p.ack.max_dgram = mrc_qp_dgram_max(qp);
	p.ack.syndrome = syndrome;
	/* an ACK names only a duplicate's PSN there */
	p.ack.nak_psn = syndrome != MRC_SYN_ACK || (flags & MRC_ACKF_DUP) ?
			nak_psn : 0;
	p.ack.rnr_timer = syndrome == MRC_SYN_RNR ? qp->min_rnr_timer : 0;
	p.ack.ts_echo = qp->last_tsval;
	mrc_fault_ack(qp, &p);
	p.ack.delay = now - qp->last_arrival;
	if (qp->ack_held) {
		/* a rotation hold is the sender's wait, as queueing would be */
		if (!mrc_time_before(qp->ack_held_at, qp->last_arrival))
			p.ack.delay = qp->ack_held_at - qp->last_arrival;
		/* only a held ACK is on the list: off it, credits on or not */
		mrc_resp_unhold(qp);
	}
	p.ack.ce_count = min_t(u32, qp->ackc.ce, U16_MAX);
	p.ack.entropy = qp->last_entropy + mrc_fault(MRC_FI_ENTROPY_ECHO);
	p.ack.flags = flags | (qp->last_ce ? MRC_ACKF_CE : 0);
	if (mrc_fault(MRC_FI_NO_CE_ECHO))
		p.ack.flags &= ~MRC_ACKF_CE;
	if (mrc_credits) {
		spin_lock(&qp->mdev->credit_lock);
		p.ack.credit = mrc_credit_grant(&qp->mdev->credit);
		spin_unlock(&qp->mdev->credit_lock);
		mrc_stat_inc(qp->mdev, MRC_ST_CREDIT_GRANTS);
	}
	if (sack)
		p.ack.sack_words = mrc_rx_sack(&qp->rx, p.ack.sack,
					       MRC_ACK_MAX_SACKW);
	if (sack && mrc_fault(MRC_FI_SACK_SHIFT))
		p.ack.sack[0] <<= 1;
	hlen = mrc_wire_hdr_len(MRC_OP_ACK, 0, p.ack.sack_words);
	p.hdr_len = hlen;
	mrc_ackc_sent(&qp->ackc);
	qp->ack_now = false;
	if (qp->ack_timer_armed) {
		hrtimer_try_to_cancel(&qp->ack_timer);
		qp->ack_timer_armed = false;
	}
	skb = mrc_skb_alloc(qp, hlen, 0);
	if (!skb) {
		qp->ack_now = true;	/* try again from the send engine */
		return;
	}
	mrc_wire_build(skb->data, &p);
	trace_mrc_ack(qp->ibqp.qp_num, cum, syndrome, p.ack.sack_words,
		      p.ack.credit, p.ack.ce_count, p.ack.flags);
	mrc_stat_inc(qp->mdev, MRC_ST_TX_ACKS);
	if (syndrome == MRC_SYN_RNR)
		mrc_stat_inc(qp->mdev, MRC_ST_RNR_NAK_TX);
	else if (syndrome != MRC_SYN_ACK)
		mrc_stat_inc(qp->mdev, MRC_ST_NAK_TX);
	/*
	 * Back on the trigger's port: ACKs spread as the requests do, and a
	 * ping-pong stays on one path (and receive CPU) both ways.
	 */
	sport = qp->last_entropy ? qp->last_entropy :
				   mrc_pick_entropy(qp, 0, false, now);
	trace_mrc_xmit(qp->ibqp.qp_num, qp->dest_qpn, cum, MRC_OP_ACK, 0, sport,
		       0);
	mrc_queue_ack(qp, skb, sport);
}

void mrc_send_ack_flags(struct mrc_qp *qp, u8 syndrome, u32 nak_psn,
			u8 flags)
{
	mrc_send_ack_at(qp, qp->rx.nxt + mrc_fault(MRC_FI_CUM_AHEAD), true,
			syndrome, nak_psn, flags);
}

/*
 * A fatal NAK for @psn, which was received and placed, with cum = @psn
 * (MRC-NAK-13): the requester must not take it, nor anything after it,
 * as acknowledged (locked).
 */
static void mrc_send_nak_at(struct mrc_qp *qp, u8 syndrome, u32 psn)
{
	mrc_send_ack_at(qp, psn, false, syndrome, psn, 0);
}

static void mrc_ack_timer_arm(struct mrc_qp *qp)
{
	u32 at, now = mrc_now();

	if (qp->ack_timer_armed || !mrc_ackc_deadline(&qp->ackc, &at))
		return;
	qp->ack_timer_armed = true;
	hrtimer_start(&qp->ack_timer,
		      ns_to_ktime((u64)max_t(s32, (s32)(at - now), 0) *
				  NSEC_PER_USEC), HRTIMER_MODE_REL_SOFT);
}

/*
 * A coalesced ACK is due (locked): send it, or hold it while other QPs
 * take their turn (mrc_credit_hold()).  Returns a QP, referenced, whose
 * held ACK the caller sends with mrc_resp_ack_release() once unlocked.
 */
static struct mrc_qp *mrc_resp_ack_due(struct mrc_qp *qp, u32 now)
{
	struct mrc_dev *mdev = qp->mdev;
	struct mrc_credit_flow *f = NULL;
	struct mrc_qp *rel = NULL;
	bool hold = false;
	u32 left = 0;

	if (mrc_credits && mdev->credit.hold_max_us) {
		u64 tmo;

		spin_lock(&mdev->credit_lock);
		tmo = mdev->credit.hold_timeouts;
		hold = mrc_credit_hold(&mdev->credit, &qp->crflow, now, &f);
		if (mdev->credit.hold_timeouts != tmo)
			mrc_stat_inc(mdev, MRC_ST_CREDIT_HOLD_TIMEOUTS);
		if (hold)
			left = qp->crflow.hold_since + qp->crflow.hold_for -
			       now;
		/* a QP being destroyed leaves the list before its last put */
		if (f) {
			rel = container_of(f, struct mrc_qp, crflow);
			if (!refcount_inc_not_zero(&rel->h->ref))
				rel = NULL;
		}
		spin_unlock(&mdev->credit_lock);
	}
	if (!hold) {
		mrc_send_ack(qp, MRC_SYN_ACK, 0);
		return rel;
	}
	if (!qp->ack_held) {
		qp->ack_held = true;
		qp->ack_held_at = now;
		mrc_stat_inc(mdev, MRC_ST_CREDIT_HOLDS);
	}
	/* due at the latest when the hold runs out */
	qp->ack_timer_armed = true;
	hrtimer_start(&qp->ack_timer, ns_to_ktime((u64)left * NSEC_PER_USEC),
		      HRTIMER_MODE_REL_SOFT);
	return rel;
}

/*
 * @qp's held or coalesced ACK may be due (locked): send it if the QP
 * still answers requests, else only take it off the hold list.
 */
static struct mrc_qp *mrc_resp_ack_pending(struct mrc_qp *qp)
{
	if (!qp->dead && qp->state >= IB_QPS_RTR && qp->state != IB_QPS_ERR &&
	    qp->ackc.pending)
		return mrc_resp_ack_due(qp, mrc_now());
	mrc_resp_unhold(qp);
	return NULL;
}

/**
 * mrc_resp_ack_release() - a held ACK's turn came: send it.
 * @qp: the QP, referenced by mrc_resp_ack_due(); the reference is put.
 *
 * Called with no QP locked: another QP's packet released this one.
 */
void mrc_resp_ack_release(struct mrc_qp *qp)
{
	struct mrc_qp *next;

	/* a released ACK may hand a packet on in turn: a loop, no recursion */
	while (qp) {
		spin_lock_bh(&qp->lock);
		next = mrc_resp_ack_pending(qp);
		spin_unlock_bh(&qp->lock);
		mrc_flush_txq(qp);
		mrc_qp_put(qp);
		qp = next;
	}
}

/* take @qp off the device's hold list (its ACK, if any, is not sent) */
void mrc_resp_unhold(struct mrc_qp *qp)
{
	spin_lock(&qp->mdev->credit_lock);
	mrc_credit_unhold(&qp->mdev->credit, &qp->crflow);
	spin_unlock(&qp->mdev->credit_lock);
	qp->ack_held = false;
}

enum hrtimer_restart mrc_ack_timer_fn(struct hrtimer *t)
{
	struct mrc_qp *qp = container_of(t, struct mrc_qp, ack_timer);
	struct mrc_qp *rel;

	spin_lock(&qp->lock);
	qp->ack_timer_armed = false;
	rel = mrc_resp_ack_pending(qp);
	spin_unlock(&qp->lock);
	mrc_flush_txq(qp);
	mrc_resp_ack_release(rel);
	return HRTIMER_NORESTART;
}

/* a receive WQE for @rmsn: 0, -EAGAIN (none posted: RNR), -EINVAL */
static int mrc_rmsg_wqe(struct mrc_qp *qp, u32 rmsn, struct mrc_rmsg **out)
{
	u32 d = rmsn - qp->rmsn_base, r;
	struct mrc_rmsg *m;
	int err;

	if (d >= 0x80000000u)
		return -EINVAL;	/* a message that already completed */
	if (d >= qp->rmsg_n)
		return -EAGAIN;
	m = mrc_rmsg(qp, rmsn);
	if (m->have_wqe) {
		*out = m;
		return 0;
	}
	if (qp->srq) {
		/* SRQ WQEs are taken in message order */
		for (r = qp->rmsn_base; r != rmsn + 1; r++) {
			struct mrc_rmsg *mm = mrc_rmsg(qp, r);

			if (mm->have_wqe)
				continue;
			if (!mrc_srq_take(qp->srq, &mm->wqe))
				return -EAGAIN;
			mm->have_wqe = true;
		}
	} else {
		err = mrc_rq_peek(qp, qp->rq_cons + d, &m->wqe);
		if (err)
			return err;
		m->have_wqe = true;
	}
	*out = m;
	return 0;
}

/* the oldest receive WQE is done: give its RQ slot back (SRQ: taken) */
static void mrc_rq_retire(struct mrc_qp *qp)
{
	if (qp->srq)
		return;
	qp->rq_cons++;
	mrc_ring_store(&qp->rq.hdr->cons, qp->rq_cons);
}

/*
 * A SEND_WITH_INV ending at @last invalidated @rkey.  A WRITE packet with a
 * higher PSN through that key that arrived before it was placed while the
 * MR was still valid, but comes after the invalidation in message order:
 * it fails (MRC-ORD-11).  Only PSNs within the write log's reach of @last
 * can have arrived.  Return: true, with the lowest such PSN in *@bad.
 */
static bool mrc_resp_inv_later(struct mrc_qp *qp, u32 last, u32 rkey,
			       u32 *bad)
{
	const struct mrc_wlog *w = &qp->wlog;
	u32 q;

	for (q = last + 1; mrc_psn_lt(q, w->high) && q - last < w->n; q++) {
		const struct mrc_wlog_ent *e = &w->ents[q & (w->n - 1)];

		if (e->len && !(e->len & MRC_WLOG_READ) && e->rkey == rkey &&
		    mrc_rx_has(&qp->rx, q)) {
			*bad = q;
			return true;
		}
	}
	return false;
}

/*
 * The R_Key of a SEND_WITH_INV names no MR this QP may invalidate
 * (MRC-MSG-39): its receive WQE fails, the requester gets INV_REQ and the
 * QP its error state (locked).
 */
static void mrc_resp_inv_fail(struct mrc_qp *qp, struct mrc_rmsg *m)
{
	struct metaroce_cqe c = {
		.wr_id = m->wqe.wr_id,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = qp->dest_qpn,
		.status = IB_WC_REM_INV_REQ_ERR,
		.opcode = METAROCE_WC_RECV,
	};

	mrc_send_nak_at(qp, MRC_SYN_INV_REQ, m->last_psn);
	mrc_rq_retire(qp);
	mrc_cq_post(qp->rcq, &c, false);
	memset(m, 0, sizeof(*m));
	qp->rmsn_base++;
	mrc_qp_set_state(qp, IB_QPS_ERR);
}

/*
 * Complete, in order, every receive whose message fully arrived; a
 * SEND_WITH_INV invalidates its R_Key first (MRC-MSG-38).  Return: true if
 * the QP must go to the error state.
 */
static bool mrc_resp_complete(struct mrc_qp *qp)
{
	bool stopping = false;
	u32 stop = 0, q;

	for (;;) {
		struct mrc_rmsg *m = mrc_rmsg(qp, qp->rmsn_base);
		struct metaroce_cqe c = {};

		if (!m->have_wqe || !m->last_seen ||
		    !mrc_psn_lt(m->last_psn, qp->rx.nxt))
			break;
		if (stopping && !mrc_psn_lt(m->last_psn, stop))
			break;	/* after a WRITE that fails: never completes */
		if (m->has_inv) {
			if (mrc_mr_invalidate(qp->mdev, qp->pd, m->imm,
					      qp->ibqp.qp_num)) {
				mrc_resp_inv_fail(qp, m);
				return true;
			}
			if (mrc_resp_inv_later(qp, m->last_psn, m->imm, &q) &&
			    (!stopping || mrc_psn_lt(q, stop))) {
				stopping = true;
				stop = q;
			}
		}
		c.wr_id = m->wqe.wr_id;
		c.byte_len = m->byte_len;
		c.qp_num = qp->ibqp.qp_num;
		c.src_qp = qp->dest_qpn;
		c.status = IB_WC_SUCCESS;
		c.opcode = m->is_send ? METAROCE_WC_RECV :
					METAROCE_WC_RECV_RDMA_WITH_IMM;
		if (m->has_imm)
			c.wc_flags |= IB_WC_WITH_IMM;
		if (m->has_inv)
			c.wc_flags |= IB_WC_WITH_INVALIDATE;
		/* back to the opaque network-order bytes (see mrc_build_req) */
		c.imm_data = m->has_inv ? m->imm :
			     (__force u32)cpu_to_be32(m->imm);
		mrc_rq_retire(qp);
		mrc_cq_post(qp->rcq, &c, m->solicited);
		memset(m, 0, sizeof(*m));
		qp->rmsn_base++;
	}
	if (!stopping)
		return false;
	mrc_send_nak_at(qp, MRC_SYN_REM_ACCESS, stop);
	mrc_qp_set_state(qp, IB_QPS_ERR);
	return true;
}

static void mrc_resp_set_err(struct mrc_qp *qp, u32 psn, u8 syn)
{
	if (!qp->err_pending || mrc_psn_lt(psn, qp->err_psn)) {
		qp->err_pending = true;
		qp->err_psn = psn;
		qp->err_syndrome = syn;
		qp->err_has_rmsn = false;
	}
}

/* the receive WQE of the failing message completes with @status too */
static void mrc_resp_set_err_recv(struct mrc_qp *qp, u32 psn, u8 syn,
				  u32 rmsn, u8 status)
{
	mrc_resp_set_err(qp, psn, syn);
	if (qp->err_psn == psn) {
		qp->err_has_rmsn = true;
		qp->err_rmsn = rmsn;
		qp->err_status = status;
	}
}

/*
 * NAK and go to the error state once every PSN before the failing one has
 * arrived, so the requester sees all earlier messages succeed.
 * Return: true if the QP must be moved to the error state.
 */
static bool mrc_resp_check_err(struct mrc_qp *qp)
{
	if (!qp->err_pending || qp->rx.nxt != qp->err_psn)
		return false;
	mrc_send_ack(qp, qp->err_syndrome, qp->err_psn);
	if (qp->err_has_rmsn && qp->rmsn_base == qp->err_rmsn) {
		struct mrc_rmsg *m = mrc_rmsg(qp, qp->err_rmsn);
		struct metaroce_cqe c = {
			.wr_id = m->wqe.wr_id,
			.qp_num = qp->ibqp.qp_num,
			.src_qp = qp->dest_qpn,
			.status = qp->err_status,
			.opcode = METAROCE_WC_RECV,
		};

		mrc_cq_post(qp->rcq, &c, false);
		mrc_rq_retire(qp);
		memset(m, 0, sizeof(*m));
		qp->rmsn_base++;
	}
	qp->err_pending = false;
	mrc_qp_set_state(qp, IB_QPS_ERR);
	return true;
}

/*
 * The MR of an RDMA target, referenced, if the QP has the access right
 * and the key names an MR of its PD; the range and the MR's rights are
 * checked when it is used (mrc_mr_access()).
 */
static struct mrc_mr *mrc_target_mr(struct mrc_qp *qp, u32 rkey, int qp_acc)
{
	struct mrc_mr *mr;

	if (!(qp->access & qp_acc))
		return NULL;
	mr = mrc_mr_get(qp->mdev, rkey);
	/*
	 * A type 2 window answers only through the QP it was bound through;
	 * rebinding it takes a new key, which mrc_mr_access() checks.
	 */
	if (mr && (mr->pd != qp->pd ||
		   (mr->type == MRC_MR_MW && READ_ONCE(mr->mw_qpn) &&
		    READ_ONCE(mr->mw_qpn) != qp->ibqp.qp_num))) {
		mrc_mr_put(mr);
		return NULL;
	}
	return mr;
}

/* a WRITE packet's placement, run by mrc_mr_access() */
struct mrc_write_place {
	struct mrc_qp *qp;
	const struct mrc_pkt *p;
	const struct sk_buff *skb;
};

static int mrc_write_place(struct mrc_mr *mr, void *arg)
{
	const struct mrc_write_place *w = arg;
	const struct mrc_pkt *p = w->p;
	struct mrc_piece pc[MRC_WLOG_PIECES];
	int err, n, i;

	/* a newer WRITE may have placed some of these bytes already */
	n = mrc_wlog_pieces(&w->qp->wlog, &w->qp->rx, p->psn, p->req.va,
			    p->req.rkey, p->pay_len, pc, ARRAY_SIZE(pc));
	if (n < 0)
		return -ENOSPC;	/* not placed, not marked: resent */
	if (n != 1 || pc[0].len != p->pay_len)
		mrc_stat_inc(w->qp->mdev, MRC_ST_WRITE_OVERLAP_CUTS);
	for (i = 0, err = 0; i < n && !err; i++)
		err = mrc_mr_copy_skb(mr, p->req.va + pc[i].off, w->skb,
				      p->hdr_len + pc[i].off, pc[i].len);
	return err;
}

static int mrc_place_write(struct mrc_qp *qp, const struct mrc_pkt *p,
			   const struct sk_buff *skb)
{
	struct mrc_write_place w = { .qp = qp, .p = p, .skb = skb };
	struct mrc_mr *mr;
	int err;

	/* zero-length WRITEs touch no memory: no rkey check (IBTA C9-88) */
	if (!p->pay_len)
		return 0;
	mr = mrc_target_mr(qp, p->req.rkey, IB_ACCESS_REMOTE_WRITE);
	if (!mr)
		return -EACCES;
	err = mrc_mr_access(mr, p->req.rkey, p->req.va, p->pay_len,
			    MRC_ACC_REMOTE_WRITE, mrc_write_place, &w);
	mrc_mr_put(mr);
	return err;
}

/* responder output for the send engine: an ACK to retry, responses, a NAK */
bool mrc_resp_pending(const struct mrc_qp *qp)
{
	return qp->ack_now || qp->rd_viol || qp->rd_exec;
}

/*
 * Note what the PSNs of a new packet wrote, for later late arrivals, or
 * asked to read, for checking a re-request.  Called before the packet is
 * accepted: a PSN received before keeps its record.
 */
static void mrc_resp_wlog(struct mrc_qp *qp, const struct mrc_pkt *p, u32 n)
{
	switch (p->opcode) {
	case MRC_OP_WRITE:
		mrc_wlog_record(&qp->wlog, p->psn, p->req.va, p->req.rkey,
				p->pay_len);
		break;
	case MRC_OP_READ_REQ:
		mrc_wlog_record_read(&qp->wlog, &qp->rx, p->psn, n,
				     p->req.va, p->req.rkey, p->req.msg_len,
				     p->pmtu_shift);
		break;
	default:
		mrc_wlog_record(&qp->wlog, p->psn, 0, 0, 0);
		break;
	}
}

/*
 * Place one SEND or WRITE packet.  Return: 0 placed; 1 RNR (do not mark);
 * 2 dropped for now (do not mark); -1 error recorded (do not mark).
 */
static int mrc_place_data(struct mrc_qp *qp, const struct mrc_pkt *p,
			  const struct sk_buff *skb)
{
	bool last = p->flags & MRC_F_LAST;
	bool needs_wqe = p->opcode == MRC_OP_SEND || (p->flags & MRC_F_IMM);
	struct mrc_rmsg *m = NULL;
	int err;

	if (needs_wqe && (p->opcode == MRC_OP_SEND || last)) {
		err = mrc_rmsg_wqe(qp, p->req.rmsn, &m);
		if (err == -EAGAIN)
			return 1;
		if (err) {
			mrc_resp_set_err(qp, p->psn, MRC_SYN_INV_REQ);
			return -1;
		}
	}
	if (p->opcode == MRC_OP_WRITE) {
		err = mrc_place_write(qp, p, skb);
		if (err == -ENOSPC)
			return 2;
		if (err) {
			mrc_resp_set_err(qp, p->psn, MRC_SYN_REM_ACCESS);
			return -1;
		}
	} else {
		if (p->req.msg_len > m->wqe.length) {
			mrc_resp_set_err_recv(qp, p->psn, MRC_SYN_INV_REQ,
					      p->req.rmsn, IB_WC_LOC_LEN_ERR);
			return -1;
		}
		err = mrc_sge_copy_skb(qp->mdev, mrc_recv_pd(qp), m->wqe.sge,
				       m->wqe.num_sge, p->req.offset, skb,
				       p->hdr_len, p->pay_len);
		if (err) {
			mrc_resp_set_err_recv(qp, p->psn, MRC_SYN_REM_OP,
					      p->req.rmsn, IB_WC_LOC_PROT_ERR);
			return -1;
		}
	}
	if (m && last) {
		m->last_seen = true;
		m->last_psn = p->psn;
		m->byte_len = p->req.msg_len;
		m->is_send = p->opcode == MRC_OP_SEND;
		m->has_imm = p->flags & MRC_F_IMM;
		m->has_inv = p->flags & MRC_F_INV;
		m->solicited = p->flags & MRC_F_SOLICITED;
		m->imm = p->req.imm;
	}
	return 0;
}

static struct mrc_rd *mrc_rd_alloc(struct mrc_qp *qp)
{
	u32 i;

	if (qp->rd_used >= qp->rd_n)
		return NULL;
	for (i = 0; i < qp->rd_n; i++)
		if (!qp->rd[i].used) {
			memset(&qp->rd[i], 0, sizeof(qp->rd[i]));
			qp->rd[i].used = true;
			qp->rd_used++;
			return &qp->rd[i];
		}
	return NULL;
}

/* the send engine answers it from now on */
static void mrc_rd_start(struct mrc_qp *qp, struct mrc_rd *e)
{
	e->executing = true;
	qp->rd_exec++;
}

static void mrc_rd_free(struct mrc_qp *qp, struct mrc_rd *e)
{
	if (e->mr)
		mrc_mr_put(e->mr);
	e->mr = NULL;
	if (e->executing)
		qp->rd_exec--;
	e->executing = false;
	e->used = false;
	qp->rd_used--;
}

/*
 * The slot in use with the lowest PSN that is executing (@exec), or that
 * waits and whose PSNs, and all before them, arrived (!@exec).  The scan
 * stops once it has seen every slot of its kind: the table holds up to
 * 2 x max_dest_rd_atomic + MRC_RD_SLACK slots, mostly free.
 */
static struct mrc_rd *mrc_rd_first(struct mrc_qp *qp, bool exec)
{
	u32 want = exec ? qp->rd_exec : qp->rd_used - qp->rd_exec;
	struct mrc_rd *e = NULL;
	u32 i, seen = 0;

	for (i = 0; i < qp->rd_n && seen < want; i++) {
		struct mrc_rd *c = &qp->rd[i];

		if (!c->used || c->executing != exec)
			continue;
		seen++;
		if (!exec && !mrc_psn_le(c->psn + c->npsn, qp->rx.nxt))
			continue;
		if (!e || mrc_psn_lt(c->psn, e->psn))
			e = c;
	}
	return e;
}

/**
 * mrc_rd_flush() - drop every queued or running READ/atomic (locked).
 * @qp: the QP, going to the error or reset state, or being destroyed.
 *
 * A READ being answered holds its memory region: let go of it, or the
 * region's deregistration waits for ever.
 */
void mrc_rd_flush(struct mrc_qp *qp)
{
	u32 i;

	for (i = 0; i < qp->rd_n && qp->rd_used; i++)
		if (qp->rd[i].used)
			mrc_rd_free(qp, &qp->rd[i]);
	qp->rd_res = 0;
	qp->rd_viol = false;
}

/**
 * mrc_rd_slots() - READ/atomic queue slots of a responder.
 * @max_dest_rd_atomic: READ/atomic messages it answers at once.
 *
 * One slot for each message it may hold, one more for each (the later
 * requests of a long READ, re-requests, atomic replays), and some slack,
 * so that a peer beyond the limit gets its Invalid Request NAK
 * (MRC-MSG-31) rather than drops.
 *
 * Return: the number of slots.
 */
u32 mrc_rd_slots(u32 max_dest_rd_atomic)
{
	return 2 * max_dest_rd_atomic + MRC_RD_SLACK;
}

/**
 * mrc_rd_tables_alloc() - allocate a responder's READ/atomic tables.
 * @t: filled in.
 * @max_dest_rd_atomic: the QP's limit.
 *
 * The atomic cache keeps the last max_dest_rd_atomic results, enough for
 * every atomic a requester within the limit can ask for again
 * (MRC-MSG-37).  Sleeps: call outside the QP lock.
 *
 * Return: 0 or -ENOMEM.
 */
int mrc_rd_tables_alloc(struct mrc_rd_tables *t, u32 max_dest_rd_atomic)
{
	t->rd_n = mrc_rd_slots(max_dest_rd_atomic);
	t->aresp_n = max(max_dest_rd_atomic, 1U);
	t->rd = kvcalloc(t->rd_n, sizeof(*t->rd), GFP_KERNEL_ACCOUNT);
	t->aresp = kvcalloc(t->aresp_n, sizeof(*t->aresp), GFP_KERNEL_ACCOUNT);
	if (!t->rd || !t->aresp) {
		mrc_rd_tables_free(t);
		return -ENOMEM;
	}
	return 0;
}

/**
 * mrc_rd_tables_free() - free tables that no QP uses.
 * @t: the tables; emptied.  Must not be called under a spinlock.
 */
void mrc_rd_tables_free(struct mrc_rd_tables *t)
{
	kvfree(t->rd);
	kvfree(t->aresp);
	memset(t, 0, sizeof(*t));
}

/**
 * mrc_rd_tables_install() - give the responder larger tables (locked).
 * @qp: the QP.
 * @t: the new tables; on return, the old ones, to free once unlocked.
 *
 * Requests queued or being served move over, and so do the atomic
 * results, oldest first.  Tables never shrink (a smaller
 * max_dest_rd_atomic in SQD): then @t is left as it was.
 */
void mrc_rd_tables_install(struct mrc_qp *qp, struct mrc_rd_tables *t)
{
	struct mrc_rd_tables old = {
		.rd = qp->rd, .rd_n = qp->rd_n,
		.aresp = qp->aresp, .aresp_n = qp->aresp_n,
	};
	u32 i, j = 0;

	if (t->rd_n <= qp->rd_n || t->aresp_n < qp->aresp_n)
		return;
	for (i = 0; i < old.rd_n; i++)
		if (old.rd[i].used)
			t->rd[j++] = old.rd[i];
	for (i = 0; i < old.aresp_n; i++)
		t->aresp[i] = old.aresp[(qp->aresp_next + i) % old.aresp_n];
	qp->aresp_next = old.aresp_n % t->aresp_n;
	qp->rd = t->rd;
	qp->rd_n = t->rd_n;
	qp->aresp = t->aresp;
	qp->aresp_n = t->aresp_n;
	*t = old;
}

/**
 * mrc_rd_tables_detach() - take the responder's tables away (locked).
 * @qp: the QP, going to the reset state.
 * @t: the tables, to free once unlocked.
 */
void mrc_rd_tables_detach(struct mrc_qp *qp, struct mrc_rd_tables *t)
{
	mrc_rd_flush(qp);
	t->rd = qp->rd;
	t->rd_n = qp->rd_n;
	t->aresp = qp->aresp;
	t->aresp_n = qp->aresp_n;
	qp->rd = NULL;
	qp->rd_n = 0;
	qp->aresp = NULL;
	qp->aresp_n = 0;
	qp->aresp_next = 0;
}

/*
 * A READ asked again whose segments a queued or running READ will still
 * send: nothing to add.
 */
static bool mrc_rd_covered(struct mrc_qp *qp, u32 psn, u32 n)
{
	u32 i, seen = 0;

	for (i = 0; i < qp->rd_n && seen < qp->rd_used; i++) {
		const struct mrc_rd *e = &qp->rd[i];
		u32 next;

		if (!e->used)
			continue;
		seen++;
		if (e->op != MRC_OP_READ_REQ)
			continue;
		next = e->psn + (e->done >> e->shift);	/* first unsent */
		if (mrc_psn_le(next, psn) &&
		    mrc_psn_le(psn + n, e->psn + e->npsn))
			return true;
	}
	return false;
}

/*
 * Responder resources (max_dest_rd_atomic): a READ or atomic message holds
 * one from the start of its first request packet to the last response of
 * its last one (a READ may come as several request packets).  Only packets
 * that arrived new count, so a re-request never takes one.
 */
static bool mrc_rd_takes(const struct mrc_pkt *p)
{
	return p->opcode != MRC_OP_READ_REQ || !p->req.offset;
}

static bool mrc_rd_gives(const struct mrc_pkt *p)
{
	return p->opcode != MRC_OP_READ_REQ || (p->flags & MRC_F_LAST);
}

/* an answered request leaves the queue */
static void mrc_rd_done(struct mrc_qp *qp, struct mrc_rd *e)
{
	if (e->res_give && qp->rd_res)
		qp->rd_res--;
	mrc_rd_free(qp, e);
}

/* queue a READ or atomic request; false if the queue is full */
static bool mrc_rd_queue(struct mrc_qp *qp, const struct mrc_pkt *p, u32 n,
			 bool fresh)
{
	struct mrc_rd *e;

	if (p->opcode == MRC_OP_READ_REQ && mrc_rd_covered(qp, p->psn, n))
		return true;
	e = mrc_rd_alloc(qp);

	if (!e)
		return false;
	e->psn = p->psn;
	e->npsn = n;
	e->op = p->opcode;
	e->shift = p->pmtu_shift;
	e->res_take = fresh && mrc_rd_takes(p);
	e->res_give = fresh && mrc_rd_gives(p);
	e->dup = !fresh;
	e->entropy = qp->last_entropy;
	if (p->opcode == MRC_OP_READ_REQ) {
		e->va = p->req.va;
		e->rkey = p->req.rkey;
		e->len = p->req.msg_len;
		e->offset = p->req.offset;
	} else {
		e->va = p->atomic.va;
		e->rkey = p->atomic.rkey;
		e->swap_add = p->atomic.swap_add;
		e->compare = p->atomic.compare;
	}
	return true;
}

/*
 * An atomic asked again that still waits to execute, or whose answer is
 * still queued: that answer serves the re-ask too, so re-asks of one
 * request never fill the table.
 */
static bool mrc_rd_atomic_queued(struct mrc_qp *qp, u32 psn)
{
	u32 i, seen = 0;

	for (i = 0; i < qp->rd_n && seen < qp->rd_used; i++) {
		const struct mrc_rd *e = &qp->rd[i];

		if (!e->used)
			continue;
		seen++;
		if (e->op != MRC_OP_READ_REQ && e->psn == psn)
			return true;
	}
	return false;
}

/* a replayed atomic: answer from the response cache */
static bool mrc_rd_replay_atomic(struct mrc_qp *qp, u32 psn)
{
	struct mrc_rd *e;
	u32 i;

	if (mrc_rd_atomic_queued(qp, psn))
		return true;
	for (i = 0; i < qp->aresp_n; i++) {
		if (!qp->aresp[i].valid || qp->aresp[i].psn != psn)
			continue;
		e = mrc_rd_alloc(qp);
		if (!e)
			return false;
		e->psn = psn;
		e->npsn = 1;
		e->op = MRC_OP_ATOMIC_RESP;
		e->orig = qp->aresp[i].orig;
		e->entropy = qp->last_entropy;
		mrc_rd_start(qp, e);
		return true;
	}
	return false;
}

/* execute the atomic @arg (a struct mrc_rd) under mrc_mr_access() */
static int mrc_rd_atomic(struct mrc_mr *mr, void *arg)
{
	struct mrc_rd *e = arg;

	return mrc_mr_atomic(mr, e->va, e->op == MRC_OP_ATOMIC_CS,
			     e->swap_add, e->compare, &e->orig);
}

/*
 * Can each response of the READ @e leave in one datagram (MRC-SEG-11)?
 * The requester picks the segment from its own path MTU, which may be
 * larger than this netdev carries; such responses could never arrive.
 */
static bool mrc_rd_fits(const struct mrc_qp *qp, const struct mrc_rd *e)
{
	u32 pay = min_t(u32, e->len, 1u << e->shift);

	if (mrc_fault(MRC_FI_READ_SEG_UNCHECKED))
		return true;
	return pay + mrc_wire_hdr_len(MRC_OP_READ_RESP, 0, 0) <=
	       mrc_qp_dgram_max(qp);
}

/*
 * A duplicate READ whose region went (invalidated, deregistered, keyed
 * anew) after the READ was first served: a stale re-request that the
 * requester's later work overtook on another path.  Discarded and
 * counted; a NAK would fail a connection that lost nothing (MRC-MSG-40).
 */
static void mrc_resp_read_stale(struct mrc_qp *qp, struct mrc_rd *e)
{
	mrc_count_drop(qp->mdev, MRC_DROP_STALE_READ);
	mrc_rd_free(qp, e);
}

/*
 * Start every queued READ/atomic whose PSNs and all before them arrived,
 * lowest PSN first.  Return: true if the QP must go to the error state.
 */
static bool mrc_rd_schedule(struct mrc_qp *qp)
{
	for (;;) {
		struct mrc_rd *e = qp->rd_viol ? NULL : mrc_rd_first(qp, false);
		struct mrc_mr *mr;
		int err;

		if (!e)
			return false;

		if (e->op == MRC_OP_READ_REQ && !mrc_rd_fits(qp, e)) {
			/* Invalid Request NAK after the earlier answers */
			qp->rd_viol = true;
			qp->rd_viol_psn = e->psn;
			mrc_rd_free(qp, e);
			return false;
		}
		if (e->res_take) {
			/*
			 * Beyond the resources given: IBTA's Invalid Request
			 * NAK, sent by mrc_resp_emit() after the responses of
			 * every earlier request; nothing later starts.
			 */
			if (qp->rd_res >= qp->max_dest_rd_atomic) {
				qp->rd_viol = true;
				qp->rd_viol_psn = e->psn;
				mrc_rd_free(qp, e);
				return false;
			}
			qp->rd_res++;
		}
		if (e->op == MRC_OP_READ_REQ) {
			if (e->len) {
				/* checked again for each segment it answers */
				mr = mrc_target_mr(qp, e->rkey,
						   IB_ACCESS_REMOTE_READ);
				if (!mr)
					goto access_err;
				e->mr = mr;
				if (mrc_mr_access(mr, e->rkey, e->va, e->len,
						  MRC_ACC_REMOTE_READ, NULL,
						  NULL))
					goto access_err;
			}
			mrc_rd_start(qp, e);
			continue;
		}

		/* atomics execute once, here, in PSN order */
		mr = mrc_target_mr(qp, e->rkey, IB_ACCESS_REMOTE_ATOMIC);
		if (!mr)
			goto access_err;
		err = mrc_mr_access(mr, e->rkey, e->va, 8,
				    MRC_ACC_REMOTE_ATOMIC, mrc_rd_atomic, e);
		mrc_mr_put(mr);
		if (err)
			goto access_err;
		qp->aresp[qp->aresp_next].psn = e->psn;
		qp->aresp[qp->aresp_next].orig = e->orig;
		qp->aresp[qp->aresp_next].valid = true;
		qp->aresp_next = (qp->aresp_next + 1) % qp->aresp_n;
		e->op = MRC_OP_ATOMIC_RESP;
		mrc_rd_start(qp, e);
		continue;

access_err:
		if (e->op == MRC_OP_READ_REQ && e->dup) {
			mrc_resp_read_stale(qp, e);
			continue;
		}
		mrc_send_ack(qp, MRC_SYN_REM_ACCESS, e->psn);
		mrc_rd_free(qp, e);
		mrc_qp_set_state(qp, IB_QPS_ERR);
		return true;
	}
}

/*
 * The port of a response: a one-packet answer goes back on its request's
 * port, as ACKs do, so that a ping-pong stays on one path and, at the
 * requester, on the receive CPU that took its request's ACKs (sprayed,
 * each response of a ping-pong crossed CPUs with an IPI in the test
 * bed).  Longer READ answers are sprayed like any other stream.
 */
static u16 mrc_resp_entropy(struct mrc_qp *qp, const struct mrc_rd *e,
			    bool single, u32 now)
{
	if (single && e->entropy)
		return e->entropy;
	return mrc_pick_entropy(qp, 0, false, now);
}

/* a READ response segment's payload, filled under mrc_mr_access() */
struct mrc_read_fill {
	struct sk_buff *skb;
	u64 va;
	u32 off;		/* where the payload goes in a copy */
	u32 len;
	bool attach;
};

static int mrc_read_fill(struct mrc_mr *mr, void *arg)
{
	struct mrc_read_fill *f = arg;

	if (f->attach)
		return mrc_mr_attach_skb(mr, f->va, f->skb, f->len);
	return mrc_mr_copy(mr, f->va, f->skb->data + f->off, f->len, false);
}

/*
 * Fill a READ response's payload from the MR, whose key, range and right
 * are checked again: an invalidation or a new registration since the READ
 * started ends it (MRC-ORD-10).  Return: 0, -EMSGSIZE (copy instead of
 * attaching), -EACCES.
 */
static int mrc_read_payload(struct mrc_rd *e, struct mrc_read_fill *f)
{
	int err = mrc_mr_access(e->mr, e->rkey, f->va, f->len,
				MRC_ACC_REMOTE_READ, mrc_read_fill, f);

	return err == -EMSGSIZE ? err : err ? -EACCES : 0;
}

/* emit one READ response segment: 0, -ENOMEM, or -EACCES */
static int mrc_emit_read(struct mrc_qp *qp, struct mrc_rd *e, u32 now)
{
	u32 seg = 1u << e->shift;
	u32 pay = min(e->len - e->done, seg);
	u32 hlen = mrc_wire_hdr_len(MRC_OP_READ_RESP, 0, 0);
	struct mrc_read_fill f = {
		.va = e->va + e->done, .off = hlen, .len = pay,
	};
	struct sk_buff *skb;
	struct mrc_pkt p;
	u16 sport;
	int err;

	mrc_pkt_init(qp, &p, MRC_OP_READ_RESP,
		     e->psn + (e->done >> e->shift), now);
	p.pmtu_shift = e->shift;
	p.pay_len = pay;
	p.hdr_len = hlen;
	p.rresp.offset = e->offset + e->done;
	p.rresp.msg_len = e->offset + e->len;
	if (mrc_fault(MRC_FI_READ_MSGLEN))
		p.rresp.msg_len = p.rresp.offset + pay;
	skb = NULL;
	if (pay && mrc_skb_zcopy(pay)) {
		skb = mrc_skb_alloc(qp, hlen, 0);
		if (!skb)
			return -ENOMEM;
		f.skb = skb;
		f.attach = true;
		err = mrc_read_payload(e, &f);
		if (err) {
			kfree_skb(skb);
			skb = NULL;
			/* a DMA or FRWR MR, or too many pieces: copy below */
			if (err != -EMSGSIZE)
				return err;
		} else {
			mrc_stat_inc(qp->mdev, MRC_ST_TX_ZCOPY);
		}
	}
	if (!skb) {
		skb = mrc_skb_alloc(qp, hlen, pay);
		if (!skb)
			return -ENOMEM;
		f.skb = skb;
		f.attach = false;
		err = pay ? mrc_read_payload(e, &f) : 0;
		if (err) {
			kfree_skb(skb);
			return -EACCES;
		}
	}
	mrc_wire_build(skb->data, &p);
	sport = mrc_resp_entropy(qp, e, e->len <= seg, now);
	trace_mrc_xmit(qp->ibqp.qp_num, qp->dest_qpn, p.psn, p.opcode, p.flags,
		       sport, pay);
	mrc_queue_pkt(qp, skb, sport);
	e->done += pay;
	return 0;
}

static bool mrc_emit_atomic(struct mrc_qp *qp, struct mrc_rd *e, u32 now)
{
	u32 hlen = mrc_wire_hdr_len(MRC_OP_ATOMIC_RESP, 0, 0);
	struct sk_buff *skb;
	struct mrc_pkt p;
	u16 sport;

	mrc_pkt_init(qp, &p, MRC_OP_ATOMIC_RESP, e->psn, now);
	p.pmtu_shift = qp->pmtu_shift;
	p.hdr_len = hlen;
	p.aresp.orig = e->orig;
	skb = mrc_skb_alloc(qp, hlen, 0);
	if (!skb)
		return false;
	mrc_wire_build(skb->data, &p);
	sport = mrc_resp_entropy(qp, e, true, now);
	trace_mrc_xmit(qp->ibqp.qp_num, qp->dest_qpn, p.psn, p.opcode, p.flags,
		       sport, 8);
	mrc_queue_pkt(qp, skb, sport);
	return true;
}

/*
 * A READ's MR was invalidated or registered anew after the READ started:
 * a REM_ACCESS NAK for its first segment not sent, and the QP fails
 * (locked; mrc_send_run() flushes it).
 */
static void mrc_resp_read_fail(struct mrc_qp *qp, struct mrc_rd *e)
{
	mrc_send_ack(qp, MRC_SYN_REM_ACCESS, e->psn + (e->done >> e->shift));
	mrc_rd_free(qp, e);
	mrc_qp_set_state(qp, IB_QPS_ERR);
	qp->resp_fail = true;
}

/**
 * mrc_resp_emit() - responder output from the send engine (locked).
 * @qp: the QP.
 * @budget: packets that may still be built; decremented.
 * @now: current time.
 * Return: false if work is left for a later run.
 */
bool mrc_resp_emit(struct mrc_qp *qp, u32 *budget, u32 now)
{
	if (qp->ack_now && *budget) {
		mrc_send_ack(qp, MRC_SYN_ACK, 0);
		(*budget)--;
	}
	while (*budget) {
		struct mrc_rd *e = mrc_rd_first(qp, true);

		if (!e) {
			if (qp->rd_viol) {
				/* every earlier request answered: now the NAK */
				mrc_send_ack(qp, MRC_SYN_INV_REQ, qp->rd_viol_psn);
				qp->rd_viol = false;
				mrc_qp_set_state(qp, IB_QPS_ERR);
				qp->resp_fail = true;
			}
			return true;
		}
		if (e->op == MRC_OP_ATOMIC_RESP) {
			if (!mrc_emit_atomic(qp, e, now))
				return false;
			mrc_rd_done(qp, e);
			(*budget)--;
			continue;
		}
		do {
			int err = mrc_emit_read(qp, e, now);

			if (err == -ENOMEM)
				return false;
			if (err && e->dup) {
				mrc_resp_read_stale(qp, e);
				e = NULL;
				break;
			}
			if (err) {
				mrc_resp_read_fail(qp, e);
				return true;
			}
			(*budget)--;
		} while (*budget && e->done < e->len);
		if (e && e->done >= e->len)
			mrc_rd_done(qp, e);
	}
	/* out of budget; a pending Invalid Request NAK goes in the next run */
	return !qp->rd_exec && !qp->ack_now && !qp->rd_viol;
}

/*
 * The PSNs of a READ_REQ that arrived before must ask for the segments
 * they asked for then: a resend is served from the request's own fields,
 * so anything else would read memory nobody asked for, or fail the QP.
 * PSNs not yet received are checked as any new request is.
 */
static bool mrc_resp_read_known(struct mrc_qp *qp, const struct mrc_pkt *p,
				u32 n, enum mrc_rx_verdict v)
{
	u32 k = n;

	if (v == MRC_RX_NEW) {
		if (!mrc_psn_lt(p->psn, qp->rx.nxt))
			return true;
		k = min(n, qp->rx.nxt - p->psn);
	}
	return mrc_wlog_read_match(&qp->wlog, &qp->rx, p->psn, k, p->req.va,
				   p->req.rkey, p->req.msg_len, p->pmtu_shift);
}

/*
 * May the response to the READ/atomic request @p stand for its ACK?  Only
 * if that ACK would say nothing else: the request is the one packet not
 * yet acknowledged, it arrived in order, without CE (nor after CE) and
 * without CREDIT, and covers one PSN; and its response is the first the
 * send engine builds, right after this (locked).  A ping-pong then costs
 * two packets a round trip, as RoCE's does, not three.
 */
static bool mrc_resp_ack_implied(struct mrc_qp *qp, const struct mrc_pkt *p,
				 u32 n, u32 old_nxt, u32 flags)
{
	struct mrc_rd *first;

	if (p->opcode == MRC_OP_SEND || p->opcode == MRC_OP_WRITE || n != 1)
		return false;
	if (p->psn != old_nxt || qp->rx.nxt != old_nxt + 1 ||
	    (flags & (MRC_ACKC_CE | MRC_ACKC_CREDIT)) || qp->ackc.ce_last ||
	    qp->ackc.pending || qp->ack_now || qp->ack_held || qp->rd_viol ||
	    qp->err_pending)
		return false;
	first = mrc_rd_first(qp, true);
	return first && first->psn == p->psn;
}

/* a request arrived: feed the device's credit pool (qp locked) */
static void mrc_resp_credit(struct mrc_qp *qp, const struct mrc_pkt *p,
			    u32 now, bool ce)
{
	struct mrc_dev *mdev = qp->mdev;
	bool full = p->flags & MRC_F_CREDIT;
	u64 cuts, ce_cuts;

	if (full)
		mrc_stat_inc(mdev, MRC_ST_CREDIT_FULL);
	spin_lock(&mdev->credit_lock);
	cuts = mdev->credit.cuts;
	ce_cuts = mdev->credit.ce_cuts;
	mrc_credit_on_data(&mdev->credit, &qp->crflow, now, p->tsval,
			   ce && mrc_credit_ecn, full);
	if (mdev->credit.cuts != cuts)
		mrc_stat_inc(mdev, MRC_ST_CREDIT_CUTS);
	if (mdev->credit.ce_cuts != ce_cuts)
		mrc_stat_inc(mdev, MRC_ST_CREDIT_CE_CUTS);
	mrc_stat_set(mdev, MRC_ST_CREDIT_POOL, mdev->credit.pool >> 8);
	mrc_stat_set(mdev, MRC_ST_CREDIT_CEIL,
		     mrc_credit_ceiling(&mdev->credit) >> 8);
	mrc_stat_set(mdev, MRC_ST_CREDIT_GAP, mdev->credit.gap_us);
	mrc_stat_set(mdev, MRC_ST_CREDIT_ACTIVE, mdev->credit.active);
	spin_unlock(&mdev->credit_lock);
}

/*
 * The flags of a duplicate's ACK (locked): HELD when an ACK was still owed
 * (held for the credit rotation, or coalesced), so that the requester
 * takes a timer's resend for early, not for the repair of a lost ACK.
 */
static u8 mrc_resp_dup_flags(const struct mrc_qp *qp)
{
	if (qp->ack_held || qp->ackc.pending || mrc_fault(MRC_FI_HELD_ALWAYS))
		return MRC_ACKF_DUP | MRC_ACKF_HELD;
	return MRC_ACKF_DUP;
}

/*
 * The answer to the READ or atomic that just arrived goes out under the
 * lock already held, in the same flush: a second pass of the send engine
 * would cost a lock round trip, a clock read and an empty flush per
 * operation.  True if the send engine must still run (out of budget or
 * memory); a responder failure sets *fatal (qp locked).
 */
static bool mrc_resp_emit_now(struct mrc_qp *qp, u32 now, bool *fatal)
{
	u32 budget = MRC_TX_BUDGET;
	bool more = !mrc_resp_emit(qp, &budget, now);

	if (qp->resp_fail) {
		qp->resp_fail = false;
		*fatal = true;
		return false;
	}
	return more;
}

/**
 * mrc_resp_rcv() - a request packet (SEND, WRITE, READ_REQ, atomic).
 * @qp: the destination QP (source already checked).
 * @p: the parsed header.
 * @skb: the packet: p->hdr_len bytes of header, then p->pay_len of
 *	payload, which may sit in page fragments.
 * @sport: the packet's UDP source port (entropy), echoed in the ACK.
 * @ce: the packet was CE marked.
 */
void mrc_resp_rcv(struct mrc_qp *qp, const struct mrc_pkt *p,
		  const struct sk_buff *skb, u16 sport, bool ce)
{
	struct mrc_dev *mdev = qp->mdev;
	u32 n = 1, now = mrc_now(), old_nxt;
	u32 flags = ce ? MRC_ACKC_CE : 0;
	struct mrc_qp *rel = NULL;
	enum mrc_rx_verdict v;
	bool fatal = false, run = false;
	u8 ackf;
	u64 ooo, holes;
	int r;

	/* larger than this device advertises: its netdev cannot answer it */
	if (p->pmtu_shift > MRC_PMTU_IB_SHIFT &&
	    p->pmtu_shift > mrc_seg_shift_max(mdev)) {
		mrc_count_drop(mdev, MRC_DROP_BAD_PMTU);
		return;
	}
	if (p->opcode == MRC_OP_READ_REQ)
		n = mrc_seg_count(p->req.msg_len, p->pmtu_shift);

	spin_lock_bh(&qp->lock);
	if (qp->dead || qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR) {
		spin_unlock_bh(&qp->lock);
		mrc_count_drop(mdev, MRC_DROP_BAD_STATE);
		return;
	}
	v = mrc_rx_classify(&qp->rx, p->psn, n);
	if (v == MRC_RX_BEYOND) {
		bool ack = mrc_fault(MRC_FI_ACK_BEYOND);

		if (ack)
			mrc_send_ack(qp, MRC_SYN_ACK, 0);
		spin_unlock_bh(&qp->lock);
		if (ack)
			mrc_flush_txq(qp);
		mrc_count_drop(mdev, MRC_DROP_OUT_OF_WINDOW);
		return;
	}
	if (p->opcode == MRC_OP_READ_REQ && !mrc_resp_read_known(qp, p, n, v)) {
		spin_unlock_bh(&qp->lock);
		mrc_count_drop(mdev, MRC_DROP_BAD_DUP);
		return;
	}
	/* only a request inside the window speaks for the peer from here */
	qp->last_tsval = p->tsval;
	qp->last_arrival = now;
	qp->last_entropy = sport;
	qp->last_ce = ce;
	if (ce)
		mrc_stat_inc(mdev, MRC_ST_ECN_RX);
	if (p->flags & MRC_F_ACKREQ)
		flags |= MRC_ACKC_ACKREQ;
	if (p->flags & MRC_F_CREDIT)
		flags |= MRC_ACKC_CREDIT;
	if (mrc_credits)
		mrc_resp_credit(qp, p, now, ce);

	if (v == MRC_RX_DUP) {
		mrc_stat_inc(mdev, MRC_ST_DUP_PKTS);
		if (p->opcode == MRC_OP_READ_REQ) {
			/* READs are served again; re-requests are dups */
			if (!mrc_rd_queue(qp, p, n, false))
				mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			else
				fatal = mrc_rd_schedule(qp);
			run = true;
		} else if ((p->opcode == MRC_OP_ATOMIC_CS ||
			    p->opcode == MRC_OP_ATOMIC_FA) &&
			   mrc_fault(MRC_FI_ATOMIC_TWICE)) {
			if (mrc_rd_queue(qp, p, n, true))
				fatal = mrc_rd_schedule(qp);
			run = true;
		} else if (p->opcode == MRC_OP_ATOMIC_CS ||
			   p->opcode == MRC_OP_ATOMIC_FA) {
			if (!mrc_rd_replay_atomic(qp, p->psn))
				mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			run = true;
		}
		ackf = mrc_resp_dup_flags(qp);
		mrc_ackc_rx(&qp->ackc, now, flags | MRC_ACKC_DUP);
		mrc_send_ack_flags(qp, MRC_SYN_ACK, p->psn,
				   mrc_fault(MRC_FI_NO_DUP_FLAG) ? 0 : ackf);
		goto out;
	}
	if ((p->flags & MRC_F_ORDERED) && p->psn != qp->rx.nxt) {
		/* ordered: nothing is placed past a hole; ask for a go-back */
		mrc_stat_inc(mdev, MRC_ST_ORDERED_DISCARDS);
		if (!qp->ooo_nak || qp->ooo_nak_psn != qp->rx.nxt) {
			qp->ooo_nak = true;
			qp->ooo_nak_psn = qp->rx.nxt;
			mrc_send_ack_flags(qp, MRC_SYN_ACK, 0, MRC_ACKF_OOO);
		}
		goto out;
	}
	if (qp->err_pending && mrc_psn_le(qp->err_psn, p->psn)) {
		/* the QP fails at err_psn: nothing after it is taken */
		spin_unlock_bh(&qp->lock);
		mrc_count_drop(mdev, MRC_DROP_BAD_STATE);
		return;
	}

	switch (p->opcode) {
	case MRC_OP_SEND:
	case MRC_OP_WRITE:
		r = mrc_place_data(qp, p, skb);
		if (r == 2) {
			/* too many newer WRITEs inside it: the resend decides */
			mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			goto out;
		}
		if (r > 0) {
			mrc_send_ack(qp, MRC_SYN_RNR, p->psn);
			goto out;
		}
		if (r < 0)
			goto check;
		break;
	default:
		if (!mrc_rd_queue(qp, p, n, true)) {
			mrc_count_drop(mdev, MRC_DROP_NO_RESOURCE);
			goto out;
		}
		break;
	}

	old_nxt = qp->rx.nxt;
	ooo = qp->rx.ooo;
	holes = qp->rx.holes;
	mrc_resp_wlog(qp, p, n);
	/* NEW from mrc_rx_classify(): the range fits, never BEYOND here */
	mrc_rx_accept(&qp->rx, p->psn, n);
	if (qp->rx.ooo != ooo)
		mrc_stat_add(mdev, MRC_ST_OOO_PKTS, qp->rx.ooo - ooo);
	if (qp->rx.holes != holes)
		mrc_stat_add(mdev, MRC_ST_SACK_HOLES, qp->rx.holes - holes);
	/*
	 * Filling the hole at nxt moves the cumulative ACK: tell the sender
	 * at once.  An arrival beyond a hole is coalesced like any other:
	 * the sender's loss detection is timed (RACK), and sprayed packets
	 * arrive a little out of order all the time (an immediate ACK for
	 * each doubled the ACK rate of a single unshaped QP).
	 */
	if (p->psn == old_nxt && qp->rx.nxt - old_nxt != n)
		flags |= MRC_ACKC_FILL;

	if (mrc_resp_complete(qp) || mrc_rd_schedule(qp))
		fatal = true;
	/*
	 * A request gives the send engine work only as responder output;
	 * a needless pass costs a ping-pong about 3 us in the test bed.
	 */
	run = mrc_resp_pending(qp);
	if (!fatal && mrc_resp_ack_implied(qp, p, n, old_nxt, flags)) {
		mrc_stat_inc(qp->mdev, MRC_ST_ACK_IMPLIED);
		if (run)
			run = mrc_resp_emit_now(qp, now, &fatal);
		goto out;
	}
check:
	if (!fatal && mrc_resp_check_err(qp))
		fatal = true;
	if (!fatal) {
		if (mrc_ackc_rx(&qp->ackc, now, flags))
			rel = mrc_resp_ack_due(qp, now);
		else if (!qp->ack_held)
			mrc_ack_timer_arm(qp);
	}
out:
	spin_unlock_bh(&qp->lock);
	mrc_flush_txq(qp);
	mrc_resp_ack_release(rel);
	if (fatal)
		mrc_qp_error(qp);
	else if (run)
		mrc_send_run(qp);
}

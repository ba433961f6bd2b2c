// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sender scoreboard: per-PSN state, SACK processing, RACK-TLP loss
 * detection and the retransmission timeout.
 *
 * Loss detection follows RACK (RFC 8985) with time instead of duplicate
 * ACK counting.  A PSN is lost when it is not delivered, was (re)sent
 * before the most recently sent PSN known delivered (earlier xmit_ts, or
 * the same xmit_ts and a lower PSN: one READ request covers several PSNs
 * sent at once, and the responder answers them in order) and has waited
 * rack_rtt + reo_wnd since that transmission.  Reordering shorter than
 * reo_wnd therefore costs no retransmission, and a lost retransmission is
 * found the same way as a lost original.
 *
 * Sprayed paths differ in delay, so each entropy also has its own
 * reference (tx->paths[]).  A PSN overtaken on its own entropy is judged
 * against that path's reference and RTT; one overtaken only on other
 * entropies waits at least its own path's last RTT plus reo_wnd.
 *
 * reo_wnd = max(max(min_rtt / 4, srtt / 64) x reo_steps, reo_wnd_min), at most
 * max(srtt + reo_cap_var x rttvar, reo_wnd_min).  A delivery of a retransmitted PSN less than
 * min_rtt after the retransmission means the original arrived: the
 * retransmission was spurious; so was one the receiver reports as a
 * duplicate (ACK flag DUP naming a resent PSN, once per resend).  Then
 * reo_steps doubles (up to
 * MRC_REO_STEPS_MAX) and halves after MRC_REO_PERSIST recoveries without
 * a spurious one.  Such
 * a delivery is not used for RACK either (its timing is ambiguous).
 *
 * READ and atomic requests (NEED_RESP) are delivered by their responses.
 * An ACK newly showing such a request (sent once) arrived makes it a RACK
 * reference all the same, a time reference only: the responder serves in
 * PSN order, so a lost request behind others is not left to the RTO.
 * Once an ACK shows the request arrived (REQ_SEEN) such a PSN is judged
 * against the latest response only, because a large READ streams its
 * responses for longer than one RTT after later requests were ACKed.
 *
 * Timers, all on the caller's u32 microsecond clock:
 * - RACK reordering timer: when a PSN sent before the RACK reference has
 *   waited rack_rtt + reo_wnd.
 * - Tail-loss probe: max(2 srtt, tlp_min) x tmo_steps after the later of
 *   the last send and the last progress, while no probe is out, no PSN
 *   awaits a retransmission, no RTO has expired since the last progress
 *   and an RTT sample exists.  The caller resends tx->probe_psn, the
 *   highest PSN not yet delivered, or una if that is a READ/atomic; una's
 *   request not yet ACKed brings along the rest of its packet.
 * - RTO: mrc_rtt_rto() with its margin over srtt x tmo_steps, after the
 *   later of the oldest outstanding PSN's transmission and the last
 *   progress (responses to a long READ keep it from expiring while they
 *   stream in).
 * A PSN resent by either timer whose ACK comes back sooner than min_rtt
 * after the resend, or that the receiver reports twice (ACK flag DUP)
 * after an earlier ACK delivered it or while it still owed that ACK (ACK
 * flag HELD), was only late: the path's delay varies more than srtt and
 * rttvar tell (a receiver holding ACKs for its credit rotation, a stalled
 * host).  A DUP report that is the first news of the PSN means its ACK
 * was lost: the resend was needed.
 * Then tmo_steps doubles, up to tmo_steps_max; it halves after
 * MRC_REO_PERSIST timer resends that were not spurious.  A spurious
 * resend costs a packet of the bottleneck's queue and of its capacity.
 * Progress is an ACK or response that delivers a PSN; it resets the
 * consecutive timeout count and the backoff.
 *
 * ACK acceptance (RFC 5961 style): cum must lie in
 * [una - MRC_ACK_LAG_MAX, nxt].  One behind una (stale: overtaken by a
 * later ACK, normal with spraying) contributes its SACK bits only.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

/* a delivered PSN that may become the RACK reference */
struct mrc_rack_cand {
	u32 ts;
	u32 psn;
	bool valid;
	bool fresh;	/* an original transmission was delivered */
	bool req_once;	/* a request sent once newly shown to have arrived */
};

static struct mrc_tx_slot *mrc_tx_slot_rw(struct mrc_tx *tx, u32 psn)
{
	return &tx->slots[psn & (tx->nslots - 1)];
}

static u32 mrc_time_later(u32 a, u32 b)
{
	return mrc_time_before(a, b) ? b : a;
}

/* (ts, psn) was sent after (rts, rpsn) */
static bool mrc_rack_after(u32 ts, u32 psn, u32 rts, u32 rpsn)
{
	return mrc_time_before(rts, ts) || (ts == rts && mrc_psn_lt(rpsn, psn));
}

static void mrc_tx_update_reo_wnd(struct mrc_tx *tx)
{
	/*
	 * One step is min_rtt / 4, or srtt / 64 when the RTT varies far more
	 * than that (a busy receiver, queues on sprayed paths): then the
	 * window can still reach srtt after a few spurious retransmissions.
	 */
	u32 step = tx->rtt.min_rtt / 4 > tx->rtt.srtt / 64 ?
		   tx->rtt.min_rtt / 4 : tx->rtt.srtt / 64;
	u64 w = (u64)step * tx->reo_steps;
	u64 cap = tx->rtt.srtt + (u64)tx->rtt.rttvar * tx->reo_cap_var;

	if (cap < tx->reo_wnd_min)
		cap = tx->reo_wnd_min;
	if (cap > MRC_S32_MAX)
		cap = MRC_S32_MAX;

	if (w < tx->reo_wnd_min)
		w = tx->reo_wnd_min;
	if (w > cap)
		w = cap;
	tx->reo_wnd = (u32)w;
}

void mrc_tx_init(struct mrc_tx *tx, struct mrc_tx_slot *slots, u32 nslots,
		 u32 isn, u32 wnd)
{
	memset(tx, 0, sizeof(*tx));
	memset(slots, 0, nslots * sizeof(*slots));
	tx->slots = slots;
	tx->nslots = nslots;
	tx->una = isn;
	tx->nxt = isn;
	tx->ack_cum = isn;
	tx->range = wnd < nslots ? wnd : nslots;
	tx->wnd = tx->range;
	tx->reo_wnd_min = MRC_REO_WND_MIN_US;
	tx->reo_wnd = MRC_REO_WND_MIN_US;
	tx->reo_steps = 1;
	tx->reo_steps_min = 1;
	tx->tlp_min = MRC_TLP_MIN_US;
	tx->tmo_steps = 1;
	tx->tmo_steps_max = MRC_TMO_STEPS_MAX;
	mrc_rtt_init(&tx->rtt, MRC_RTO_INIT_US, MRC_RTO_MIN_US, MRC_RTO_MAX_US);
}

int mrc_tx_sent(struct mrc_tx *tx, u32 psn, u32 n, u32 now, u16 entropy,
		u8 flags)
{
	u32 out = mrc_tx_outstanding(tx);
	struct mrc_tx_slot *s;
	u32 i;

	if (!n || n > tx->nslots)
		return -EINVAL;

	if (psn == tx->nxt) {
		if (flags & ~MRC_TXS_NEED_RESP)
			return -EINVAL;
		if (out + n > tx->nslots)
			return -EINVAL;
		if (!out)
			tx->progress_ts = now;	/* first send after idle */
		if (!out && (flags & MRC_TXS_NEED_RESP)) {
			tx->lone_ts = now;
			tx->lone = true;
		}
		for (i = 0; i < n; i++) {
			s = mrc_tx_slot_rw(tx, psn + i);
			s->xmit_ts = now;
			s->entropy = entropy;
			s->prev_entropy = entropy;
			s->flags = flags;
			s->xmits = 1;
			s->pkt_first = !i;
		}
		tx->nxt += n;
	} else {
		if (!mrc_psn_in(psn, tx->una, tx->nxt) ||
		    (u64)(psn - tx->una) + n > out)
			return -EINVAL;
		for (i = 0; i < n; i++) {
			s = mrc_tx_slot_rw(tx, psn + i);
			if (s->flags & MRC_TXS_ACKED)
				continue;
			if (s->flags & MRC_TXS_LOST) {
				s->flags &= ~MRC_TXS_LOST;
				tx->lost--;
			} else {
				/* a probe, not a RACK repair */
				s->flags &= ~MRC_TXS_RACK;
			}
			/* the caller charges a resend's first PSN only */
			if (!i && mrc_tx_slot_charges(s))
				s->flags |= MRC_TXS_CHARGED;
			else
				s->flags &= ~MRC_TXS_CHARGED;
			s->flags &= ~MRC_TXS_DUP;
			s->xmit_ts = now;
			s->prev_entropy = s->entropy;
			s->entropy = entropy;
			s->pkt_first = !i;
			if (s->xmits < 255)
				s->xmits++;
		}
		tx->resend_ts = now;
		tx->resent = true;
	}
	tx->last_send_ts = now;
	return 0;
}

/*
 * A PSN the RTO or a probe resent arrived twice (@spurious) or was
 * delivered: widen the timers' margin, or narrow it again after
 * MRC_REO_PERSIST resends that were needed.  Judged once per resend.
 */
static void mrc_tx_timer_judge(struct mrc_tx *tx, struct mrc_tx_slot *s,
			       bool spurious)
{
	if (!(s->flags & MRC_TXS_TIMER) || s->xmits < 2)
		return;
	if (!spurious) {
		/* delivered; a DUP report may still follow: the mark stays */
		if (++tx->tmo_recov >= MRC_REO_PERSIST && tx->tmo_steps > 1) {
			tx->tmo_steps /= 2;
			tx->tmo_recov = 0;
		}
		return;
	}
	s->flags &= ~MRC_TXS_TIMER;
	tx->spurious_tmos++;
	tx->tmo_recov = 0;
	if (tx->tmo_steps < tx->tmo_steps_max)
		tx->tmo_steps *= 2;
}

/* @psn, sent once in @s, arrived: keep it if sent after @c's */
static void mrc_rack_cand_offer(struct mrc_rack_cand *c,
				const struct mrc_tx_slot *s, u32 psn)
{
	if (!c->valid || mrc_rack_after(s->xmit_ts, psn, c->ts, c->psn)) {
		c->ts = s->xmit_ts;
		c->psn = psn;
		c->valid = true;
	}
}

/*
 * Mark @psn delivered and offer it as RACK reference.  A retransmitted PSN
 * delivered sooner than min_rtt after its retransmission was delivered by
 * an earlier copy: its timing is ambiguous (no candidate) and the
 * retransmission was spurious.  Return: true if that retransmission came
 * from RACK, i.e. the reordering window was too small.
 */
static bool mrc_tx_deliver(struct mrc_tx *tx, u32 psn, u32 now,
			   struct mrc_rack_cand *c)
{
	struct mrc_tx_slot *s = mrc_tx_slot_rw(tx, psn);

	if (s->flags & MRC_TXS_LOST) {
		s->flags &= ~MRC_TXS_LOST;
		tx->lost--;
	}
	s->flags |= MRC_TXS_ACKED;
	tx->sacked++;

	if (s->xmits > 1 && tx->rtt.min_rtt &&
	    now - s->xmit_ts < tx->rtt.min_rtt) {
		tx->spurious++;
		/* an earlier copy got through: for F-RTO the path is alive */
		c->fresh = true;
		mrc_tx_timer_judge(tx, s, true);
		return s->flags & MRC_TXS_RACK;
	}
	mrc_tx_timer_judge(tx, s, false);
	/*
	 * Karn: which copy of a retransmitted PSN arrived is unknown, so its
	 * send time says nothing about how long delivery takes.  Using it
	 * would shrink rack_rtt and mark packets still in flight as lost.
	 */
	if (s->xmits > 1)
		return false;
	c->fresh = true;
	mrc_rack_cand_offer(c, s, psn);
	return false;
}

static struct mrc_tx_path *mrc_tx_path_of(struct mrc_tx *tx, u16 port)
{
	return &tx->paths[port & (MRC_TX_PATHS - 1)];
}

/* (ts, psn) was delivered at @now: keep it if sent after @r's */
static void mrc_rack_ref_offer(struct mrc_rack_ref *r, u32 ts, u32 psn,
			       u32 now)
{
	if (r->valid && !mrc_rack_after(ts, psn, r->ts, r->psn))
		return;
	r->ts = ts;
	r->psn = psn;
	r->rtt = now - ts;
	r->valid = true;
}

/* a PSN sent once on @s->entropy was delivered: the path's reference */
static void mrc_tx_path_update(struct mrc_tx *tx,
			       const struct mrc_tx_slot *s, u32 psn, u32 now)
{
	struct mrc_tx_path *pp = mrc_tx_path_of(tx, s->entropy);

	if (pp->port != s->entropy) {
		/* the entry held another port: it is this one's now */
		pp->port = s->entropy;
		pp->ref.valid = false;
	}
	mrc_rack_ref_offer(&pp->ref, s->xmit_ts, psn, now);
}

/* a RACK retransmission of @s proved spurious: its loss charge goes back */
static void mrc_tx_uncharge(struct mrc_ack_result *r, struct mrc_tx_slot *s)
{
	if (!(s->flags & MRC_TXS_CHARGED))
		return;
	s->flags &= ~MRC_TXS_CHARGED;
	if (r->n_uncharge < MRC_ACK_UNCHARGE)
		r->uncharge[r->n_uncharge++] = s->prev_entropy;
}

/*
 * The receiver got @psn twice: if it was resent for a RACK loss, the loss
 * was not one (an earlier copy arrived, only later than RACK allowed).
 * Its slot still holds @psn while @psn is among the last nslots sent.
 * Only a report naming a resend counts, once per resend: a peer must not
 * widen the reordering window at will.  A READ/atomic request whose
 * response has not arrived was resent for that response: the responder
 * always sees such a resend as a duplicate.
 *
 * A timer's resend was early only if the earlier copy's ACK was on its
 * way: it arrived before this report (@late), or the receiver says it
 * still owed it.  When this report is the first news of @psn and the
 * receiver owed nothing, that ACK was lost: waking the receiver for a
 * new one is what the probe is for (issue 44: at 1 % loss, lost ACKs
 * kept the timer factor at its ceiling).  Return: true if it counted.
 */
static bool mrc_tx_dup(struct mrc_tx *tx, u32 psn, bool late,
		       struct mrc_ack_result *r)
{
	struct mrc_tx_slot *s;

	if ((u32)(tx->nxt - psn) - 1 >= tx->nslots)
		return false;
	s = mrc_tx_slot_rw(tx, psn);
	if (s->xmits < 2 || (s->flags & MRC_TXS_DUP))
		return false;
	/* a request re-asked because its response was lost: needed */
	if ((s->flags & (MRC_TXS_NEED_RESP | MRC_TXS_ACKED)) ==
	    MRC_TXS_NEED_RESP)
		return false;
	s->flags |= MRC_TXS_DUP;
	tx->spurious++;
	mrc_tx_uncharge(r, s);
	if (late)
		mrc_tx_timer_judge(tx, s, true);
	else
		s->flags &= ~MRC_TXS_TIMER;	/* judged needed on delivery */
	return true;
}

/* @psn was delivered before this ACK (its slot still holds it) */
static bool mrc_tx_was_acked(const struct mrc_tx *tx, u32 psn)
{
	if ((u32)(tx->nxt - psn) - 1 >= tx->nslots)
		return false;
	return mrc_tx_slot(tx, psn)->flags & MRC_TXS_ACKED;
}

/* an ACK covers @psn; Return: true if a retransmission proved spurious */
static bool mrc_tx_ack_one(struct mrc_tx *tx, u32 psn, u32 now,
			   struct mrc_ack_result *r, struct mrc_rack_cand *c)
{
	struct mrc_tx_slot *s = mrc_tx_slot_rw(tx, psn);
	bool spurious;

	if (s->flags & MRC_TXS_ACKED)
		return false;
	if (s->flags & MRC_TXS_NEED_RESP) {
		if (s->flags & MRC_TXS_REQ_SEEN)
			return false;
		s->flags |= MRC_TXS_REQ_SEEN;
		r->newly_seen++;
		/*
		 * The ACK times it: a READ/atomic QP gets RTT samples too,
		 * and a time reference (not a delivery) that finds a lost
		 * request behind later ones without waiting for the RTO.
		 */
		if (s->xmits == 1) {
			c->req_once = true;
			mrc_rack_cand_offer(c, s, psn);
		}
		return false;
	}
	r->newly_acked++;
	spurious = mrc_tx_deliver(tx, psn, now, c);
	if (spurious)
		mrc_tx_uncharge(r, s);
	if (s->xmits == 1)
		mrc_tx_path_update(tx, s, psn, now);
	return spurious;
}

static void mrc_tx_rack_update(struct mrc_tx *tx, const struct mrc_rack_cand *c,
			       u32 now)
{
	if (c->valid)
		mrc_rack_ref_offer(&tx->rack, c->ts, c->psn, now);
}

static void mrc_tx_spurious(struct mrc_tx *tx)
{
	/* doubling: sprayed paths can reorder by far more than min_rtt / 4 */
	if (tx->reo_steps < MRC_REO_STEPS_MAX)
		tx->reo_steps *= 2;
	tx->reo_recov = 0;
	mrc_tx_update_reo_wnd(tx);
}

bool mrc_tx_mark_lost(struct mrc_tx *tx, u32 psn)
{
	struct mrc_tx_slot *s;

	if (!mrc_psn_in(psn, tx->una, tx->nxt))
		return false;
	s = mrc_tx_slot_rw(tx, psn);
	if (s->flags & (MRC_TXS_ACKED | MRC_TXS_LOST))
		return false;
	s->flags |= MRC_TXS_LOST;
	s->flags &= ~(MRC_TXS_RACK | MRC_TXS_TIMER);
	tx->lost++;
	return true;
}

/* the RTO or a probe resends @psn: judged by mrc_tx_timer_judge() */
static void mrc_tx_mark_timer(struct mrc_tx *tx, u32 psn)
{
	if (mrc_tx_mark_lost(tx, psn))
		mrc_tx_slot_rw(tx, psn)->flags |= MRC_TXS_TIMER;
}

static void mrc_tx_mark_all_lost(struct mrc_tx *tx)
{
	u32 psn;

	for (psn = tx->una; psn != tx->nxt; psn++)
		mrc_tx_mark_timer(tx, psn);
}

/*
 * F-RTO (RFC 5682 in spirit): an ACK after an RTO that delivers a PSN
 * never sent twice shows the path was only slow, not empty; then the rest
 * of the window is left to RACK.  An ACK that delivers only the resent
 * PSN decides nothing: behind a long queue the head's original arrives
 * first.  If no PSN sent once arrives, the next RTO resends everything.
 */
static void mrc_tx_frto(struct mrc_tx *tx, const struct mrc_rack_cand *c,
			u32 newly)
{
	if (!tx->frto || !newly || !c->fresh)
		return;
	tx->frto = false;
	tx->spurious_rtos++;
}

/* move una over delivered PSNs and account progress */
static void mrc_tx_finish(struct mrc_tx *tx, u32 una0, u32 now,
			  struct mrc_ack_result *r)
{
	while (tx->una != tx->nxt &&
	       (mrc_tx_slot(tx, tx->una)->flags & MRC_TXS_ACKED)) {
		tx->una++;
		tx->sacked--;
	}
	if (mrc_psn_lt(tx->ack_cum, tx->una))
		tx->ack_cum = tx->una;
	r->una_advanced = tx->una != una0;
	if (r->newly_acked || r->una_advanced) {
		tx->timeouts = 0;
		tx->rtt.backoff = 0;
		tx->progress_ts = now;
		tx->tlp_out = false;
	}
	if (tx->una == tx->nxt) {
		tx->reo_armed = false;
		tx->tlp_out = false;
		tx->frto = false;
		/* no request left that a resend may have held */
		tx->resent = false;
	}
}

/* an RTT sample from @a, which newly delivered something */
static void mrc_tx_ack_rtt(struct mrc_tx *tx, const struct mrc_ack_info *a,
			   u32 now, struct mrc_ack_result *r)
{
	u32 elapsed = now - a->ts_echo;

	if ((s32)elapsed < 0 || elapsed < a->delay)
		return;
	/* clamped: a forged ts_echo must not inflate srtt without bound */
	r->rtt_sample = mrc_rtt_sample(&tx->rtt, elapsed - a->delay);
	mrc_tx_update_reo_wnd(tx);
}

/*
 * Work per ACK: the PSNs the cumulative ACK newly covers (tx->ack_cum
 * remembers how far earlier ACKs got) plus one step per SACK bit set.
 */
int mrc_tx_ack(struct mrc_tx *tx, const struct mrc_ack_info *a, u32 now,
	       struct mrc_ack_result *r)
{
	struct mrc_rack_cand c = { 0 };
	u32 una0 = tx->una;
	bool spurious = false, late;
	u32 psn, w, first;
	u64 bits;

	memset(r, 0, sizeof(*r));
	if (!mrc_psn_in(a->cum, tx->una - MRC_ACK_LAG_MAX, tx->nxt + 1))
		return -EINVAL;
	r->stale = mrc_psn_lt(a->cum, tx->una);
	late = a->dup && (a->held || mrc_tx_was_acked(tx, a->dup_psn));

	for (psn = tx->ack_cum; mrc_psn_lt(psn, a->cum); psn++)
		spurious |= mrc_tx_ack_one(tx, psn, now, r, &c);
	if (mrc_psn_lt(tx->ack_cum, a->cum))
		tx->ack_cum = a->cum;

	for (w = 0; w < a->sack_words; w++) {
		first = a->cum + 1 + 64 * w;
		/* words wholly at or beyond nxt carry nothing we sent */
		if (!mrc_psn_lt(first, tx->nxt))
			break;
		bits = a->sack[w];
		while (bits) {
			psn = first + mrc_ctz64(bits);
			bits &= bits - 1;
			if (mrc_psn_in(psn, tx->una, tx->nxt))
				spurious |= mrc_tx_ack_one(tx, psn, now, r, &c);
		}
	}

	/* a stale ACK's timestamp and DUP report are older news */
	if ((r->newly_acked || c.req_once) && a->ts_valid && !r->stale)
		mrc_tx_ack_rtt(tx, a, now, r);
	r->cc_rtt = r->rtt_sample;
	if (a->dup && !r->stale && mrc_tx_dup(tx, a->dup_psn, late, r))
		spurious = true;
	if (spurious)
		mrc_tx_spurious(tx);
	mrc_tx_frto(tx, &c, r->newly_acked);
	mrc_tx_rack_update(tx, &c, now);
	mrc_tx_finish(tx, una0, now, r);
	return 0;
}

/*
 * Can the response to @s time its request?  Only if no ACK did, the
 * request went once, no resend since could have filled a hole it waited
 * behind, and no other response of the same request timed it.
 */
static bool mrc_tx_resp_times(const struct mrc_tx *tx,
			      const struct mrc_tx_slot *s)
{
	if ((s->flags & MRC_TXS_REQ_SEEN) || s->xmits != 1)
		return false;
	/* behind other requests, it waited for their responses too */
	if (!tx->lone || tx->lone_ts != s->xmit_ts)
		return false;
	if (tx->resent && !mrc_time_before(tx->resend_ts, s->xmit_ts))
		return false;
	return !tx->resp_rtt_done || tx->resp_rtt_ts != s->xmit_ts;
}

int mrc_tx_resp(struct mrc_tx *tx, u32 psn, u32 now, struct mrc_ack_result *r)
{
	struct mrc_rack_cand c = { 0 };
	struct mrc_tx_slot *s;
	u32 una0 = tx->una;

	memset(r, 0, sizeof(*r));
	if (mrc_psn_lt(psn, tx->una))
		return 1;
	if (!mrc_psn_in(psn, tx->una, tx->nxt))
		return -EINVAL;
	s = mrc_tx_slot_rw(tx, psn);
	if (!(s->flags & MRC_TXS_NEED_RESP))
		return -EINVAL;
	if (s->flags & MRC_TXS_ACKED)
		return 1;

	/*
	 * Otherwise the response's own timing is no sample: one held behind
	 * a lost request would inflate srtt.  The window grows on the
	 * latest one.
	 */
	if (mrc_tx_resp_times(tx, s)) {
		tx->resp_rtt_ts = s->xmit_ts;
		tx->resp_rtt_done = true;
		if ((s32)(now - s->xmit_ts) >= 0) {
			r->rtt_sample = mrc_rtt_sample(&tx->rtt,
						       now - s->xmit_ts);
			mrc_tx_update_reo_wnd(tx);
		}
	}
	s->flags |= MRC_TXS_REQ_SEEN;
	r->newly_acked = 1;
	if (s->xmits == 1)
		r->cc_rtt = r->rtt_sample ? r->rtt_sample : tx->rtt.srtt;
	if (mrc_tx_deliver(tx, psn, now, &c)) {
		mrc_tx_uncharge(r, s);
		mrc_tx_spurious(tx);
	}
	mrc_tx_frto(tx, &c, 1);
	if (c.valid)
		mrc_rack_ref_offer(&tx->rresp, c.ts, c.psn, now);
	mrc_tx_rack_update(tx, &c, now);
	mrc_tx_finish(tx, una0, now, r);
	return 0;
}

/* O(outstanding): every undelivered PSN is compared with its reference */
u32 mrc_tx_detect_loss(struct mrc_tx *tx, u32 now)
{
	u32 psn, rrtt, elapsed, due, deadline = 0;
	const struct mrc_tx_path *pp = NULL;
	const struct mrc_rack_ref *ref;
	struct mrc_tx_slot *s;
	bool armed = false, own;
	u32 n = 0;
	u64 wait;

	tx->reo_armed = false;
	if (!tx->rack.valid && !tx->rresp.valid)
		return 0;

	for (psn = tx->una; psn != tx->nxt; psn++) {
		s = mrc_tx_slot_rw(tx, psn);
		if (s->flags & (MRC_TXS_ACKED | MRC_TXS_LOST))
			continue;
		own = false;
		if ((s->flags & MRC_TXS_REQ_SEEN) &&
		    (s->flags & MRC_TXS_NEED_RESP)) {
			ref = &tx->rresp;
		} else {
			pp = mrc_tx_path_of(tx, s->entropy);
			own = pp->ref.valid && pp->port == s->entropy;
			/* a later packet on the same path arrived? */
			if (own && mrc_rack_after(pp->ref.ts, pp->ref.psn,
						  s->xmit_ts, psn))
				ref = &pp->ref;
			else
				ref = &tx->rack;
		}
		if (!ref->valid ||
		    !mrc_rack_after(ref->ts, ref->psn, s->xmit_ts, psn))
			continue;
		rrtt = ref->rtt;
		/*
		 * Only another path delivered later packets: that one may
		 * just be quicker, so wait for this path's own latest RTT too.
		 */
		if (ref == &tx->rack && own && pp->ref.rtt > rrtt)
			rrtt = pp->ref.rtt;

		wait = (u64)rrtt + tx->reo_wnd;
		if (wait > MRC_S32_MAX)
			wait = MRC_S32_MAX;
		elapsed = now - s->xmit_ts;
		if ((s32)elapsed >= 0 && elapsed >= wait) {
			s->flags |= MRC_TXS_LOST | MRC_TXS_RACK;
			s->flags &= ~MRC_TXS_TIMER;
			tx->lost++;
			n++;
			continue;
		}
		due = s->xmit_ts + (u32)wait;
		if (!armed || mrc_time_before(due, deadline)) {
			deadline = due;
			armed = true;
		}
	}
	tx->reo_armed = armed;
	tx->reo_deadline = deadline;

	if (n) {
		tx->rack_marked += n;
		if (++tx->reo_recov >= MRC_REO_PERSIST &&
		    tx->reo_steps > tx->reo_steps_min) {
			tx->reo_steps /= 2;
			tx->reo_recov = 0;
			mrc_tx_update_reo_wnd(tx);
		}
	}
	return n;
}

bool mrc_tx_next_lost(const struct mrc_tx *tx, u32 *psn)
{
	u32 p = *psn;

	if (!tx->lost)
		return false;
	if (!mrc_psn_in(p, tx->una, tx->nxt)) {
		if (!mrc_psn_lt(p, tx->una))
			return false;
		p = tx->una;
	}
	for (; p != tx->nxt; p++) {
		if (mrc_tx_slot(tx, p)->flags & MRC_TXS_LOST) {
			*psn = p;
			return true;
		}
	}
	return false;
}

/* the RTO, its margin over srtt widened by tmo_steps */
static u32 mrc_tx_rto(const struct mrc_tx *tx)
{
	u32 rto = mrc_rtt_rto(&tx->rtt);
	u64 v;

	if (tx->tmo_steps <= 1 || rto <= tx->rtt.srtt)
		return rto;
	v = tx->rtt.srtt + (u64)(rto - tx->rtt.srtt) * tx->tmo_steps;
	return v > tx->rtt.rto_max ? tx->rtt.rto_max : (u32)v;
}

static u32 mrc_tx_rto_due(const struct mrc_tx *tx)
{
	u32 base = mrc_time_later(mrc_tx_slot(tx, tx->una)->xmit_ts,
				  tx->progress_ts);

	return base + mrc_tx_rto(tx);
}

/* Return: true and the due time if a tail-loss probe is armed */
static bool mrc_tx_tlp_due(const struct mrc_tx *tx, u32 *due)
{
	u64 pto;

	if (tx->tlp_out || tx->tlp_off || tx->lost || tx->timeouts ||
	    !tx->rtt.srtt)
		return false;
	pto = 2ull * tx->rtt.srtt;
	if (pto < tx->tlp_min)
		pto = tx->tlp_min;
	pto *= tx->tmo_steps;
	if (pto > MRC_S32_MAX)
		pto = MRC_S32_MAX;
	*due = mrc_time_later(tx->last_send_ts, tx->progress_ts) + (u32)pto;
	return true;
}

bool mrc_tx_deadline(const struct mrc_tx *tx, u32 *deadline)
{
	u32 d, t;

	if (tx->una == tx->nxt)
		return false;
	d = mrc_tx_rto_due(tx);
	if (tx->reo_armed && mrc_time_before(tx->reo_deadline, d))
		d = tx->reo_deadline;
	if (mrc_tx_tlp_due(tx, &t) && mrc_time_before(t, d))
		d = t;
	*deadline = d;
	return true;
}

static bool mrc_tx_failed(const struct mrc_tx *tx, u32 now, u32 retry_cnt,
			  u32 fail_after)
{
	return fail_after && tx->timeouts > retry_cnt &&
	       now - tx->progress_ts >= fail_after;
}

/*
 * The highest undelivered PSN, whose loss nothing later would reveal; but
 * READ/atomic requests are served in PSN order, so when una is one, it
 * holds the others back and is the one worth probing.
 */
static u32 mrc_tx_probe_psn(const struct mrc_tx *tx)
{
	u32 psn = tx->nxt - 1;

	if (mrc_tx_slot(tx, tx->una)->flags & MRC_TXS_NEED_RESP)
		return tx->una;
	while (psn != tx->una &&
	       (mrc_tx_slot(tx, psn)->flags & MRC_TXS_ACKED))
		psn--;
	return psn;
}

/*
 * A probed READ/atomic PSN whose request no ACK has shown arrived: the
 * other PSNs of the packet that carried it (the rest of one READ request)
 * were lost with it; ask for them in the same probe, not one probe each.
 * Another request sent in the same microsecond, on its own path, may well
 * have arrived: it is left to its own timers.
 */
static void mrc_tx_probe_run(struct mrc_tx *tx, u32 psn)
{
	const u8 unseen = MRC_TXS_NEED_RESP | MRC_TXS_REQ_SEEN | MRC_TXS_ACKED;
	const struct mrc_tx_slot *s = mrc_tx_slot(tx, psn);
	u32 ts = s->xmit_ts;
	u16 entropy = s->entropy;

	if ((s->flags & unseen) != MRC_TXS_NEED_RESP)
		return;
	for (psn++; psn != tx->nxt; psn++) {
		s = mrc_tx_slot(tx, psn);
		if ((s->flags & unseen) != MRC_TXS_NEED_RESP ||
		    s->pkt_first || s->xmit_ts != ts || s->entropy != entropy)
			break;
		mrc_tx_mark_timer(tx, psn);
	}
}

enum mrc_tx_timer_action mrc_tx_on_timer(struct mrc_tx *tx, u32 now,
					 u32 retry_cnt, u32 fail_after)
{
	u32 psn, due;

	if (tx->una == tx->nxt)
		return MRC_TXT_NONE;
	if (mrc_tx_failed(tx, now, retry_cnt, fail_after))
		return MRC_TXT_FAIL;

	if (!mrc_time_before(now, mrc_tx_rto_due(tx))) {
		tx->timeouts++;
		tx->rtos++;
		if (tx->rtt.backoff < MRC_RTO_MAX_BACKOFF)
			tx->rtt.backoff++;
		if (mrc_tx_failed(tx, now, retry_cnt, fail_after))
			return MRC_TXT_FAIL;
		if (tx->frto) {
			/* no PSN sent once came back since the first RTO */
			tx->frto = false;
			mrc_tx_mark_all_lost(tx);
		} else {
			/* resend the oldest PSN only, see mrc_tx_frto() */
			for (psn = tx->una; psn != tx->nxt; psn++) {
				if (!(mrc_tx_slot(tx, psn)->flags & MRC_TXS_ACKED)) {
					mrc_tx_mark_timer(tx, psn);
					break;
				}
			}
			tx->frto = true;
		}
		tx->tlp_out = false;
		tx->reo_armed = false;
		return MRC_TXT_RTO;
	}

	if (mrc_tx_detect_loss(tx, now))
		return MRC_TXT_RETX;

	if (mrc_tx_tlp_due(tx, &due) && !mrc_time_before(now, due)) {
		psn = mrc_tx_probe_psn(tx);
		tx->probe_psn = psn;
		mrc_tx_mark_timer(tx, psn);
		mrc_tx_probe_run(tx, psn);
		tx->tlp_out = true;
		tx->tlps++;
		return MRC_TXT_PROBE;
	}
	return MRC_TXT_NONE;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_tx_test.c"
#endif

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receiver credits: the receiving half of congestion control.
 *
 * Incast converges on the receiver's own access link, and only the
 * receiver sees every sender at once.  It keeps one pool of packets that
 * all senders together may have in flight towards it and gives each
 * active sender an equal share in every ACK (the ACK's credit field).
 *
 * The pool follows the queue in front of the receiver: every data packet
 * carries the sender's timestamp, so arrival minus timestamp is the
 * one-way delay up to an unknown clock offset; minus the smallest such
 * delay of the same flow it is the queueing delay.  Once per epoch the
 * smallest queueing delay seen in the epoch (robust to scheduling noise)
 * is compared with the target: above it the pool shrinks in proportion,
 * below it grows by an eighth, if a sender said (MRC_F_CREDIT) that its
 * grant was what held it back.
 * CE-marked arrivals shrink it too, by half the marked share: the
 * switch's marking threshold then bounds the queue even where the
 * hosts' scheduling noise hides it in the delay.
 * Growth stops a quarter above the size at which the pool was last cut
 * (smoothed), and probes beyond that only slowly: while the hosts are
 * slow the queue stays empty whatever the pool, and a pool grown then
 * lands in the switch queue all at once when they speed up.
 * An epoch lasts until it has seen enough packets to judge (a slow
 * link), for up to MRC_CREDIT_EPOCH_MAX times its nominal length.
 * A single sender is left to its own congestion window (its grant is the
 * ceiling; the pool keeps its size), but only once it has been alone for
 * MRC_CREDIT_SOLO_EPOCHS epochs: a sender whose host stalled for a few
 * milliseconds drops out of the count, and the other's whole window
 * landed in the queue at once.  Equal shares make the
 * senders fair; a pool sized by delay keeps the queue short.  Loss plays
 * no part.
 *
 * A grant cannot go below one packet, so N senders would keep N packets
 * in flight however small the pool.  With holds on, the pool may be
 * smaller than that and its packets rotate: a flow whose packet arrived
 * gets its ACK only when another flow's packet arrives (mrc_credit_hold()).
 * The arrivals clock the rotation; no timer paces it.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

#define MRC_CR_ONE		256u	/* one packet, fixed point */

void mrc_credit_init(struct mrc_credit *c, u32 pool_min, u32 pool_max,
		     u32 target_us, u32 epoch_us)
{
	memset(c, 0, sizeof(*c));
	c->pool_min = pool_min ? pool_min : MRC_CREDIT_MIN_FLOW;
	c->pool_max = pool_max > c->pool_min ? pool_max : c->pool_min;
	c->target_us = target_us;
	c->epoch_us = epoch_us ? epoch_us : 1;
	c->pool = c->pool_max * MRC_CR_ONE;
	c->active = 1;
}

void mrc_credit_flow_init(struct mrc_credit_flow *f)
{
	memset(f, 0, sizeof(*f));
}

static void mrc_credit_clamp(struct mrc_credit *c)
{
	u32 lo = c->pool_min;

	/* with holds the pool rotates: it need not cover every flow */
	if (!c->hold_max_us && lo < c->active * MRC_CREDIT_MIN_FLOW)
		lo = c->active * MRC_CREDIT_MIN_FLOW;
	if (lo > c->pool_max)
		lo = c->pool_max;
	if (c->pool < lo * MRC_CR_ONE)
		c->pool = lo * MRC_CR_ONE;
	if (c->pool > c->pool_max * MRC_CR_ONE)
		c->pool = c->pool_max * MRC_CR_ONE;
}

u32 mrc_credit_ceiling(const struct mrc_credit *c)
{
	return c->cut_level + (c->cut_level >> MRC_CREDIT_CEIL_SHIFT);
}

/* moving average, gain 1/2^@shift; a first sample (@avg 0) is taken whole */
static u32 mrc_credit_smooth(u32 avg, u32 sample, u32 shift)
{
	return avg ? avg - (avg >> shift) + (sample >> shift) : sample;
}

/*
 * Grow the pool by @up (fixed point), but not past the ceiling.  At the
 * ceiling the cut level rises by 1/MRC_CREDIT_CREEP, and the pool with
 * it: a path that now needs a larger pool (a longer RTT, a faster link)
 * gets it, only more slowly.
 */
static void mrc_credit_grow(struct mrc_credit *c, u32 up)
{
	u32 ceil = mrc_credit_ceiling(c);

	if (c->cut_level && c->pool + up > ceil) {
		/* not past pool_max: the level would grow without end */
		if (c->pool >= ceil && ceil < c->pool_max * MRC_CR_ONE) {
			u32 d = c->cut_level / MRC_CREDIT_CREEP;

			c->cut_level += d ? d : 1;
			ceil = mrc_credit_ceiling(c);
		}
		up = c->pool < ceil ? ceil - c->pool : 0;
	}
	c->pool += up;
}

/* close the epoch: count flows, resize the pool */
static void mrc_credit_epoch(struct mrc_credit *c, u32 now)
{
	struct mrc_credit_flow *h;

	/*
	 * Active: seen in this epoch or the previous one, or held (a held
	 * flow waits for its turn, it is active without arrivals).  An
	 * epoch lasts at least MRC_CREDIT_MIN_SAMPLES packets, so that on a
	 * slow link too the two span a turn of every flow.
	 */
	c->active = c->seen + c->seen_prev - c->seen_both;
	for (h = c->hold_head; h; h = h->hold_next)
		if (!h->counted || c->epoch_id - h->epoch_id > 1)
			c->active++;
	if (!c->active)
		c->active = 1;
	if (c->active > 1)
		c->solo = 0;
	else if (c->solo < MRC_CREDIT_SOLO_EPOCHS)
		c->solo++;
	c->seen_prev = c->seen;
	c->seen = 0;
	c->seen_both = 0;
	/*
	 * One sender is left to its own window (mrc_credit_grant() gives it
	 * pool_max once it has been alone a while), and the pool keeps its
	 * size for when others come back: refilled, it would need many
	 * epochs of cuts.
	 */
	if (c->active > 1 && c->q_valid) {
		u32 cut = 0;

		/* a few late packets of an idle spell are no standing queue */
		if (c->qmin > c->target_us &&
		    c->samples >= MRC_CREDIT_MIN_SAMPLES)
			cut = (u32)mrc_div_u64((u64)(c->qmin - c->target_us) *
					       MRC_CR_ONE, 2 * c->qmin);
		/*
		 * CE marks: a switch queue past its marking threshold.  Cut by
		 * half the marked share, as the senders' windows do; delay
		 * alone also rises with the hosts' scheduling noise.
		 */
		if (c->ce_samples) {
			u32 ce = (u32)mrc_div_u64((u64)c->ce_samples *
						  MRC_CR_ONE, 2 * c->samples);

			if (ce && ce >= cut) {
				cut = ce;
				c->ce_cuts++;
			}
		}
		if (cut) {
			if (cut > MRC_CR_ONE / 2)
				cut = MRC_CR_ONE / 2;
			c->cut_level = mrc_credit_smooth(c->cut_level, c->pool,
							 2);
			c->pool = (u32)(((u64)c->pool * (MRC_CR_ONE - cut)) /
					MRC_CR_ONE);
			c->cuts++;
		} else if (c->qmin <= c->target_us) {
			/*
			 * An eighth, and only if a sender had used its grant
			 * up: a pool nobody fills would grow unseen, to be
			 * filled at once when the senders' windows open.
			 * No step of a whole packet: in a pool of a few
			 * packets that is most of the queue.
			 */
			u32 up = c->pool / 8;

			if (c->full_samples)
				mrc_credit_grow(c, up ? up : 1);
		}
	}
	mrc_credit_clamp(c);
	c->q_valid = false;
	c->samples = 0;
	c->ce_samples = 0;
	c->full_samples = 0;
	c->epoch_start = now;
	c->epoch_id++;
}

/* smallest one-way delay over the current and the previous window */
static u32 mrc_credit_base(const struct mrc_credit_flow *f)
{
	return mrc_psn_lt(f->owd_prev, f->owd_min) ? f->owd_prev : f->owd_min;
}

void mrc_credit_on_data(struct mrc_credit *c, struct mrc_credit_flow *f,
			u32 now, u32 tsval, bool ce, bool full)
{
	u32 owd = now - tsval, win, q;

	if (!c->started) {
		c->started = true;
		c->epoch_start = now;
	} else {
		if (c->hold_max_us) {
			/* turns come at the arrival rate; idle spells are none */
			u32 gap = now - c->last_rx;

			if ((s32)gap < 0)
				gap = 0;	/* stamped on another CPU */
			else if (gap > c->hold_max_us)
				gap = c->hold_max_us;
			c->gap_us = mrc_credit_smooth(c->gap_us, gap, 3);
		}
		if (now - c->epoch_start >= c->epoch_us &&
		    (c->samples >= MRC_CREDIT_MIN_SAMPLES ||
		     now - c->epoch_start >=
		     MRC_CREDIT_EPOCH_MAX * c->epoch_us))
			mrc_credit_epoch(c, now);
	}
	c->last_rx = now;
	if (!f->counted || f->epoch_id != c->epoch_id) {
		if (f->counted && f->epoch_id == c->epoch_id - 1)
			c->seen_both++;
		f->counted = true;
		f->epoch_id = c->epoch_id;
		c->seen++;
	}

	/* serial comparisons: the clocks' offset may be anything */
	win = c->epoch_id / MRC_CREDIT_OWD_EPOCHS;
	if (!f->valid) {
		f->valid = true;
		f->owd_min = owd;
		f->owd_prev = owd;
		f->win = win;
	} else if (f->win != win) {
		/* forget old minima slowly: clocks drift */
		f->owd_prev = f->owd_min;
		f->owd_min = owd;
		f->win = win;
	} else if (mrc_psn_lt(owd, f->owd_min)) {
		f->owd_min = owd;
	}
	q = owd - mrc_credit_base(f);
	if ((s32)q < 0)
		q = 0;
	c->samples++;
	if (ce)
		c->ce_samples++;
	if (full)
		c->full_samples++;
	if (!c->q_valid || q < c->qmin) {
		c->qmin = q;
		c->q_valid = true;
	}
}

u32 mrc_credit_grant(struct mrc_credit *c)
{
	u32 share;

	/* alone for a few epochs only: a paused sender, the whole pool */
	if (c->active <= 1 && c->solo >= MRC_CREDIT_SOLO_EPOCHS)
		return c->pool_max;
	share = c->pool / c->active;
	if (share < MRC_CR_ONE)
		return MRC_CREDIT_MIN_FLOW;
	/*
	 * The share's fraction is given out too, one packet on every so
	 * many grants, so that the senders together can fill the whole
	 * pool: a pool between one and two packets a flow that nobody can
	 * use would grow, untested by the queue, until every share doubles
	 * at once.
	 */
	c->dither += share % MRC_CR_ONE;
	share /= MRC_CR_ONE;
	if (c->dither >= MRC_CR_ONE) {
		c->dither -= MRC_CR_ONE;
		share++;
	}
	return share;
}

u32 mrc_credit_wnd(u32 credit, u32 path, u32 seg)
{
	u64 w;

	if (seg <= path)
		return credit ? credit : 1;
	w = mrc_div_u64((u64)credit * path, seg);
	if (!w)
		return 1;
	return w > MRC_U32_MAX ? MRC_U32_MAX : (u32)w;
}

void mrc_credit_set_hold(struct mrc_credit *c, u32 hold_max_us)
{
	/* a hold and its cap must stay comparable on the 32-bit clock */
	if (hold_max_us > MRC_CREDIT_HOLD_MAX_US)
		hold_max_us = MRC_CREDIT_HOLD_MAX_US;
	c->hold_max_us = hold_max_us;
	mrc_credit_clamp(c);
}

void mrc_credit_unhold(struct mrc_credit *c, struct mrc_credit_flow *f)
{
	f->released = false;
	if (!f->held)
		return;
	if (f->hold_prev)
		f->hold_prev->hold_next = f->hold_next;
	else
		c->hold_head = f->hold_next;
	if (f->hold_next)
		f->hold_next->hold_prev = f->hold_prev;
	else
		c->hold_tail = f->hold_prev;
	f->hold_prev = NULL;
	f->hold_next = NULL;
	f->held = false;
	c->held--;
}

/* the oldest held flow gets its ACK: its turn */
static struct mrc_credit_flow *mrc_credit_pop(struct mrc_credit *c)
{
	struct mrc_credit_flow *h = c->hold_head;

	if (!h)
		return NULL;
	mrc_credit_unhold(c, h);
	h->released = true;
	return h;
}

/*
 * How long a flow joining the hold list may wait: the @over arrivals
 * that must come before the turns start again (moving flows beyond the
 * pool), one per flow ahead of it and its own, each about one arrival
 * gap.
 */
static u32 mrc_credit_hold_for(const struct mrc_credit *c, u32 over)
{
	u64 t = (u64)MRC_CREDIT_HOLD_TURNS * (c->held + 1 + over) * c->gap_us;
	u64 cap = (u64)MRC_CREDIT_HOLD_CAP * c->hold_max_us;

	if (t > cap)
		t = cap;
	return t > c->hold_max_us ? (u32)t : c->hold_max_us;
}

bool mrc_credit_hold(struct mrc_credit *c, struct mrc_credit_flow *f,
		     u32 now, struct mrc_credit_flow **release)
{
	u32 pool = c->pool / MRC_CR_ONE, moving;

	*release = NULL;
	if (f->released) {
		f->released = false;
		return false;
	}
	if (f->held) {
		u32 since;

		if (now - f->hold_since < f->hold_for)
			return true;
		since = now - c->last_expiry;
		/*
		 * After a stall of the host every hold runs out at once, and
		 * the ACKs would let a packet of each flow into the queue
		 * together: they go one arrival gap apart instead.
		 */
		if (c->expired && since < c->gap_us) {
			f->hold_for = now - f->hold_since + c->gap_us - since;
			return true;
		}
		c->expired = true;
		c->last_expiry = now;
		mrc_credit_unhold(c, f);
		c->hold_timeouts++;
		return false;
	}
	if (!c->hold_max_us || c->active < 2)
		return false;
	/* flows that hold a packet of the pool: the active ones not held */
	moving = c->active > c->held ? c->active - c->held : 0;
	if (moving < pool || (moving == pool && !c->held)) {
		/* room: send, and let a waiting flow go too */
		if (moving < pool)
			*release = mrc_credit_pop(c);
		return false;
	}
	/* full: wait at the tail; an arrival hands its packet on */
	f->hold_prev = c->hold_tail;
	f->hold_next = NULL;
	if (c->hold_tail)
		c->hold_tail->hold_next = f;
	else
		c->hold_head = f;
	c->hold_tail = f;
	f->held = true;
	f->hold_since = now;
	f->hold_for = mrc_credit_hold_for(c, moving - pool);
	c->held++;
	c->holds++;
	if (moving == pool)
		*release = mrc_credit_pop(c);
	return true;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_credit_test.c"
#endif

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sender congestion window driven by delay, not by loss.
 *
 * The window (in packets, 8 fractional bits) grows while the RTT stays
 * within target_us of the smallest RTT seen, by one packet per window
 * (additive increase; doubling per RTT while in slow start) while the
 * sender uses it (RFC 7661: in the last two delay windows it had the window
 * in flight, to within a packet, or half of it in slow start), and shrinks
 * at most once per smoothed RTT in proportion to how far the smallest RTT
 * sample of the last smoothed RTT is over the target (one late sample is
 * scheduling noise, a standing queue delays them all):
 *
 *	cwnd *= max(1 - beta * (rtt - target) / rtt, 1 - max_mdf)
 *
 * with beta = 0.8 and max_mdf = 0.5.  A lost packet costs nothing: random
 * loss is repaired by selective retransmission and must not shrink the
 * window (Mathis).  Only an RTO, which means the path delivered nothing
 * for a while, cuts the window by max_mdf; when F-RTO finds the RTO was
 * spurious (the path was only slow) mrc_cc_undo_rto() restores it.
 *
 * ECN marks (CE on the way in, echoed in ACKs) are the switches' own word
 * on their queues and are taken as in DCTCP: alpha follows the marked
 * fraction per RTT with gain 1/16, and a window that saw marks is cut by
 * alpha / 2 at its end.  A delay cut and an ECN cut share the once per
 * RTT limit.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

#define MRC_CC_ONE		256u	/* one packet, fixed point */
#define MRC_CC_BETA		205u	/* 0.8 in 1/256 */
#define MRC_CC_MAX_MDF		128u	/* 0.5 in 1/256 */

void mrc_cc_init(struct mrc_cc *cc, u32 init, u32 min, u32 max, u32 target_us)
{
	memset(cc, 0, sizeof(*cc));
	cc->min = min ? min : 1;
	cc->max = max > cc->min ? max : cc->min;
	if (init < cc->min)
		init = cc->min;
	if (init > cc->max)
		init = cc->max;
	cc->cwnd = init * MRC_CC_ONE;
	cc->target_us = target_us;
	cc->slow_start = true;
	/* no history yet: the first marks count in full */
	cc->alpha = MRC_CC_ALPHA_ONE;
}

static void mrc_cc_clamp(struct mrc_cc *cc)
{
	if (cc->cwnd < cc->min * MRC_CC_ONE)
		cc->cwnd = cc->min * MRC_CC_ONE;
	if (cc->cwnd > cc->max * MRC_CC_ONE)
		cc->cwnd = cc->max * MRC_CC_ONE;
}

void mrc_cc_sent(struct mrc_cc *cc, u32 inflight)
{
	if (inflight > cc->used)
		cc->used = inflight;
}

/*
 * Did the window hold the sender back?  A window that a receiver's credit,
 * or the application, keeps from being used would otherwise grow without
 * a test of the path, and be sent in one burst once the credit goes up.
 */
static bool mrc_cc_limited(const struct mrc_cc *cc)
{
	u32 peak = cc->used > cc->used_prev ? cc->used : cc->used_prev;
	u64 used = (u64)peak * MRC_CC_ONE;

	if (cc->slow_start)
		return 2 * used >= cc->cwnd;
	return used + MRC_CC_ONE >= cc->cwnd;
}

static void mrc_cc_decrease(struct mrc_cc *cc, u32 factor, u32 now)
{
	cc->cwnd = (u32)(((u64)cc->cwnd * factor) / MRC_CC_ONE);
	mrc_cc_clamp(cc);
	cc->slow_start = false;
	cc->last_dec = now;
	cc->dec_valid = true;
	cc->decreases++;
}

void mrc_cc_on_ack(struct mrc_cc *cc, u32 now, u32 newly_acked, u32 rtt,
		   u32 srtt)
{
	u32 target, over, cut, min;

	if (newly_acked)
		cc->rto_saved = false;	/* progress: that RTO is history */
	if (!rtt)
		return;
	if (!cc->base_rtt || rtt < cc->base_rtt)
		cc->base_rtt = rtt;
	target = cc->base_rtt + cc->target_us;

	/*
	 * Delay is judged on the smallest sample of each smoothed RTT: a
	 * standing queue delays every packet, scheduling noise only some.
	 */
	if (!cc->dwin_valid) {
		cc->dwin_valid = true;
		cc->dwin_min = rtt;
		cc->dwin_end = now + (srtt ? srtt : rtt);
	} else if (rtt < cc->dwin_min) {
		cc->dwin_min = rtt;
	}

	if (rtt <= target && newly_acked && mrc_cc_limited(cc)) {
		if (cc->slow_start)
			cc->cwnd += newly_acked * MRC_CC_ONE;
		else
			cc->cwnd += (u32)mrc_div_u64((u64)newly_acked *
					MRC_CC_ONE * MRC_CC_ONE, cc->cwnd);
		mrc_cc_clamp(cc);
	}
	if (mrc_time_before(now, cc->dwin_end))
		return;
	min = cc->dwin_min;
	cc->dwin_valid = false;
	cc->used_prev = cc->used;
	cc->used = 0;
	if (min <= target)
		return;
	/* over the target all window long: at most one cut per RTT */
	if (cc->dec_valid && now - cc->last_dec < srtt)
		return;
	over = min - target;
	cut = (u32)mrc_div_u64((u64)MRC_CC_BETA * over, min);
	if (cut > MRC_CC_MAX_MDF)
		cut = MRC_CC_MAX_MDF;
	mrc_cc_decrease(cc, MRC_CC_ONE - cut, now);
}

void mrc_cc_on_ecn(struct mrc_cc *cc, u32 now, u32 acked, u32 ce, u32 srtt)
{
	u32 frac, cut;

	if (ce > acked)
		acked = ce;	/* marks on packets a lost ACK covered */
	if (!cc->win_valid) {
		cc->win_valid = true;
		cc->win_end = now + (srtt ? srtt : 1);
	}
	cc->win_acked += acked;
	cc->win_ce += ce;
	if (mrc_time_before(now, cc->win_end) || !cc->win_acked)
		return;

	frac = (u32)mrc_div_u64((u64)cc->win_ce * MRC_CC_ALPHA_ONE,
				cc->win_acked);
	cc->alpha = cc->alpha - (cc->alpha >> 4) + (frac >> 4);
	if (cc->win_ce &&
	    !(cc->dec_valid && now - cc->last_dec < srtt)) {
		cut = cc->alpha * MRC_CC_ONE / (2 * MRC_CC_ALPHA_ONE);
		if (cut > MRC_CC_MAX_MDF)
			cut = MRC_CC_MAX_MDF;
		if (cut) {
			mrc_cc_decrease(cc, MRC_CC_ONE - cut, now);
			cc->ecn_decreases++;
		}
	}
	cc->win_acked = 0;
	cc->win_ce = 0;
	cc->win_end = now + (srtt ? srtt : 1);
}

void mrc_cc_on_rto(struct mrc_cc *cc, u32 now)
{
	/* remember the window before the first RTO of a run */
	if (!cc->rto_saved) {
		cc->rto_saved = true;
		cc->rto_cwnd = cc->cwnd;
	}
	mrc_cc_decrease(cc, MRC_CC_ONE - MRC_CC_MAX_MDF, now);
}

void mrc_cc_undo_rto(struct mrc_cc *cc)
{
	if (!cc->rto_saved)
		return;
	cc->rto_saved = false;
	if (cc->cwnd < cc->rto_cwnd)
		cc->cwnd = cc->rto_cwnd;
	cc->undos++;
}

/*
 * Pacing: an ACK that frees part of the window, or a credit grant, would
 * otherwise release the freed packets in one burst into the queue in
 * front of the bottleneck.  Spread over the RTT, packets arrive there at
 * about the rate the window allows.  Short gaps (fast links, large
 * windows) are left to the ACK clock.
 */
void mrc_pace_init(struct mrc_pace *p, u32 burst, u32 min_gap)
{
	memset(p, 0, sizeof(*p));
	if (!burst)
		burst = 1;
	p->burst = burst > MRC_PACE_BURST_MAX ? MRC_PACE_BURST_MAX : burst;
	p->min_gap = min_gap;
}

void mrc_pace_rate(struct mrc_pace *p, u32 wnd, u32 srtt, bool slow_start)
{
	u32 gain = slow_start ? MRC_PACE_GAIN_SS : MRC_PACE_GAIN;
	u64 gap;

	/* a window of millions of packets is not paced either */
	if (!wnd || !srtt || wnd > MRC_U32_MAX / gain) {
		p->gap = 0;
		return;
	}
	gap = mrc_div_u64((u64)srtt * MRC_CC_ONE, wnd * gain);
	if (gap < p->min_gap)
		p->gap = 0;
	else
		p->gap = gap > MRC_PACE_GAP_MAX_US ? MRC_PACE_GAP_MAX_US : (u32)gap;
}

/* not paced, or the gap since the last packet has passed */
static bool mrc_pace_due(const struct mrc_pace *p, u32 now)
{
	return !p->gap || now - p->last >= p->gap;
}

bool mrc_pace_ok(struct mrc_pace *p, u32 now)
{
	if (mrc_pace_due(p, now)) {
		p->held = false;
		return true;
	}
	if (!p->held) {
		p->held = true;
		p->waits++;
	}
	return false;
}

void mrc_pace_sent(struct mrc_pace *p, u32 now)
{
	u32 lag = (p->burst - 1) * p->gap;

	p->held = false;
	/* after a pause only the burst allowance is owed, not the pause */
	if (now - p->last >= p->gap + lag)
		p->last = now - lag;
	else
		p->last += p->gap;
}

bool mrc_pace_deadline(const struct mrc_pace *p, u32 *at)
{
	if (!p->held || !p->gap)
		return false;
	*at = p->last + p->gap;
	return true;
}

void mrc_pace_expire(struct mrc_pace *p, u32 now)
{
	if (mrc_pace_due(p, now))
		p->held = false;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_cc_test.c"
#endif

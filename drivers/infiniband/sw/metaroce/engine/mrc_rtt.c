// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RTT estimation and retransmission timeout, RFC 6298 in microseconds:
 *
 *   first sample R:  srtt = R, rttvar = R / 2
 *   later samples:   rttvar = 3/4 rttvar + 1/4 |srtt - R|
 *                    srtt   = 7/8 srtt   + 1/8 R
 *   rto = srtt + max(rto_min, 4 rttvar), at most rto_max
 *
 * rto_min bounds the margin above srtt, not the timeout itself (as Linux
 * TCP does): where queueing makes srtt approach rto_min (incast behind a
 * marking port), a floor on the sum would leave next to no margin and
 * every late ACK would fire a spurious RTO.
 *
 * Integer arithmetic rounds to nearest: a long run of equal samples R
 * leaves srtt in [R - 3, R + 4] us, where truncation would leave it up to
 * 7 us low, and rttvar settles at a few us rather than 0.  A sample of 0
 * counts as 1 us, and one above rto_max as rto_max: the timeout never
 * waits longer (the driver sets rto_max to the QP's IB local ACK timeout,
 * at most 4 s), so an ACK later than that is broken or forged, and an
 * unbounded sample (a forged timestamp echo) would push srtt, and with it
 * the pacing gap and the RACK window, to their limits.  min_rtt is the
 * smallest sample since init (0: none yet).  Exponential backoff is kept
 * apart from the base RTO and applied by mrc_rtt_rto().
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

static u32 mrc_rtt_clamp(const struct mrc_rtt *r, u64 v)
{
	if (v < r->rto_min)
		return r->rto_min;
	if (v > r->rto_max)
		return r->rto_max;
	return (u32)v;
}

void mrc_rtt_init(struct mrc_rtt *r, u32 rto_init, u32 rto_min, u32 rto_max)
{
	memset(r, 0, sizeof(*r));
	r->rto_min = rto_min ? rto_min : 1;
	r->rto_max = rto_max < r->rto_min ? r->rto_min : rto_max;
	r->rto = mrc_rtt_clamp(r, rto_init);
}

/*
 * The IB local ACK timeout caps each retransmission timeout, backoff
 * included: retry_cnt + 1 expiries then fit in timeout x (retry_cnt + 1).
 */
void mrc_rtt_set_max(struct mrc_rtt *r, u32 rto_max)
{
	r->rto_max = rto_max < r->rto_min ? r->rto_min : rto_max;
	if (r->rto > r->rto_max)
		r->rto = r->rto_max;
}

u32 mrc_rtt_sample(struct mrc_rtt *r, u32 sample_us)
{
	u32 s = sample_us ? sample_us : 1;
	u64 var4;

	if (s > r->rto_max)
		s = r->rto_max;

	r->latest = s;
	if (!r->min_rtt || s < r->min_rtt)
		r->min_rtt = s;
	if (!r->srtt) {
		r->srtt = s;
		r->rttvar = s / 2;
	} else {
		u32 delta = r->srtt > s ? r->srtt - s : s - r->srtt;

		r->rttvar = (u32)((3ull * r->rttvar + delta + 2) >> 2);
		r->srtt = (u32)((7ull * r->srtt + s + 4) >> 3);
	}
	var4 = 4ull * r->rttvar;
	if (var4 < r->rto_min)
		var4 = r->rto_min;
	r->rto = mrc_rtt_clamp(r, r->srtt + var4);
	return s;
}

u32 mrc_rtt_rto(const struct mrc_rtt *r)
{
	u32 shift = r->backoff < MRC_RTO_MAX_BACKOFF ?
		    r->backoff : MRC_RTO_MAX_BACKOFF;

	return mrc_rtt_clamp(r, (u64)r->rto << shift);
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_rtt_test.c"
#endif

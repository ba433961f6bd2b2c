// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: delay-based congestion window.  Included at the end of mrc_cc.c.
 */
#include <kunit/test.h>

static void mrc_cc_grows_below_target(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 16, 2, 512, 500);
	mrc_cc_sent(&cc, 16);
	/* slow start: one packet per packet ACKed */
	mrc_cc_on_ack(&cc, 1000, 16, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 32u);
	KUNIT_EXPECT_EQ(test, cc.base_rtt, 100u);
	/* no RTT sample: no decision */
	mrc_cc_on_ack(&cc, 1100, 16, 0, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 32u);
	/* capped at max */
	mrc_cc_on_ack(&cc, 1200, 10000, 120, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 512u);
}

static void mrc_cc_cuts_in_proportion_once_per_rtt(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 100, 2, 512, 500);
	mrc_cc_sent(&cc, 100);
	mrc_cc_on_ack(&cc, 0, 1, 1000, 1000);		/* base 1000 */
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 101u);
	/* the window that held the base sample ends: no cut */
	mrc_cc_on_ack(&cc, 5000, 1, 2000, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 0u);
	/* a whole smoothed RTT at 2000, target 1500: cut 0.8 * 500 / 2000 */
	mrc_cc_on_ack(&cc, 6000, 1, 2000, 1000);
	mrc_cc_on_ack(&cc, 6500, 1, 2100, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 0u);
	mrc_cc_on_ack(&cc, 7000, 1, 2000, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 1u);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 101u * 205 / 256);
	KUNIT_EXPECT_FALSE(test, cc.slow_start);
	/* a huge RTT all window long cuts by at most half */
	mrc_cc_on_ack(&cc, 8000, 1, 100000, 1000);
	mrc_cc_on_ack(&cc, 9000, 1, 100000, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 2u);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 101u * 205 / 256 / 2);
	/* congestion avoidance: about one packet per window ACKed */
	{
		u32 w = mrc_cc_wnd(&cc);

		mrc_cc_sent(&cc, w);
		mrc_cc_on_ack(&cc, 12000, w, 1000, 1000);
		KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), w + 1);
	}
}

/* one late sample in a window is noise: only a standing queue cuts */
static void mrc_cc_ignores_delay_spikes(struct kunit *test)
{
	struct mrc_cc cc;
	u32 t;

	mrc_cc_init(&cc, 100, 2, 512, 500);
	mrc_cc_sent(&cc, 100);
	mrc_cc_on_ack(&cc, 0, 1, 1000, 1000);
	for (t = 1; t < 100; t++)
		/* every third sample 20 ms late */
		mrc_cc_on_ack(&cc, t * 300, 1, t % 3 ? 1100 : 20000, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 0u);
	KUNIT_EXPECT_GT(test, mrc_cc_wnd(&cc), 100u);
}

/*
 * The window grows only while the sender fills it: one held back by a
 * receiver's credit or by the application does not grow unseen.
 */
static void mrc_cc_grows_only_when_used(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 16, 2, 512, 500);
	/* slow start: half the window in flight is enough */
	mrc_cc_sent(&cc, 7);
	mrc_cc_on_ack(&cc, 0, 4, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 16u);
	mrc_cc_sent(&cc, 8);
	mrc_cc_on_ack(&cc, 10, 4, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 20u);
	/* after slow start: the window to within one packet */
	mrc_cc_on_rto(&cc, 20);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 10u);
	mrc_cc_on_ack(&cc, 30, 10, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 10u);
	mrc_cc_sent(&cc, 9);
	mrc_cc_on_ack(&cc, 40, 10, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 11u);
	/* the use of the previous delay window still counts ... */
	mrc_cc_sent(&cc, 10);
	mrc_cc_on_ack(&cc, 100, 0, 100, 100);		/* window ends */
	KUNIT_EXPECT_EQ(test, cc.used, 0u);
	KUNIT_EXPECT_EQ(test, cc.used_prev, 10u);
	mrc_cc_on_ack(&cc, 150, 11, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 12u);
	/* ... but not that of the one before */
	mrc_cc_on_ack(&cc, 250, 0, 100, 100);
	mrc_cc_on_ack(&cc, 260, 12, 100, 100);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 12u);
	KUNIT_EXPECT_EQ(test, cc.decreases, 1u);	/* the RTO's only */
}

/* a spurious RTO gives the window back; a real one keeps the cut */
static void mrc_cc_undo_spurious_rto(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 64, 4, 512, 500);
	mrc_cc_on_rto(&cc, 100);
	mrc_cc_on_rto(&cc, 200);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 16u);
	mrc_cc_undo_rto(&cc);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 64u);
	KUNIT_EXPECT_EQ(test, cc.undos, 1u);
	/* nothing saved any more: a second undo changes nothing */
	mrc_cc_undo_rto(&cc);
	KUNIT_EXPECT_EQ(test, cc.undos, 1u);
	/* progress after a real RTO forgets the old window */
	mrc_cc_on_rto(&cc, 300);
	mrc_cc_on_ack(&cc, 400, 1, 0, 0);
	mrc_cc_undo_rto(&cc);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 32u);
}

static void mrc_cc_ignores_loss_cuts_on_rto(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 64, 4, 512, 500);
	/* nothing in this API reacts to a lost packet: only delay and RTO */
	mrc_cc_on_rto(&cc, 5000);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 32u);
	mrc_cc_on_rto(&cc, 6000);
	mrc_cc_on_rto(&cc, 7000);
	mrc_cc_on_rto(&cc, 8000);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 4u);	/* floor */
	mrc_cc_init(&cc, 1, 0, 0, 500);			/* silly limits */
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 1u);
}

/* DCTCP-style: the cut follows the marked fraction, once per RTT */
static void mrc_cc_ecn_fraction(struct kunit *test)
{
	struct mrc_cc cc;
	u32 w;

	mrc_cc_init(&cc, 100, 2, 512, 500);
	/* no marks: alpha decays, nothing is cut */
	mrc_cc_on_ecn(&cc, 0, 10, 0, 1000);
	mrc_cc_on_ecn(&cc, 1000, 10, 0, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 0u);
	KUNIT_EXPECT_EQ(test, cc.alpha, 1024u - 64);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 100u);

	/* every packet marked for a window: cut by about alpha / 2 */
	mrc_cc_on_ecn(&cc, 1500, 10, 10, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 0u);	/* window still open */
	mrc_cc_on_ecn(&cc, 2000, 10, 10, 1000);
	KUNIT_EXPECT_EQ(test, cc.ecn_decreases, 1u);
	KUNIT_EXPECT_EQ(test, cc.alpha, 960u - 60 + 64);
	KUNIT_EXPECT_EQ(test, mrc_cc_wnd(&cc), 100u * (256 - 120) / 256);
	KUNIT_EXPECT_FALSE(test, cc.slow_start);

	/* a low fraction: alpha falls, later cuts are smaller */
	w = mrc_cc_wnd(&cc);
	mrc_cc_init(&cc, 100, 2, 512, 500);
	cc.alpha = 64;				/* about 6 % marked lately */
	mrc_cc_on_ecn(&cc, 0, 99, 1, 1000);
	mrc_cc_on_ecn(&cc, 1000, 1, 0, 1000);
	KUNIT_EXPECT_EQ(test, cc.ecn_decreases, 1u);
	KUNIT_EXPECT_GT(test, mrc_cc_wnd(&cc), w);
	KUNIT_EXPECT_GE(test, mrc_cc_wnd(&cc), 96u);
}

/* a delay cut and an ECN cut in the same RTT: only one */
static void mrc_cc_ecn_shares_rtt_limit(struct kunit *test)
{
	struct mrc_cc cc;

	mrc_cc_init(&cc, 100, 2, 512, 500);
	mrc_cc_on_ack(&cc, 0, 1, 1000, 1000);		/* base 1000 */
	mrc_cc_on_ack(&cc, 1000, 1, 3000, 1000);	/* window ends */
	mrc_cc_on_ack(&cc, 4000, 1, 3000, 1000);
	mrc_cc_on_ack(&cc, 5000, 1, 3000, 1000);	/* delay cut */
	KUNIT_EXPECT_EQ(test, cc.decreases, 1u);
	mrc_cc_on_ecn(&cc, 5100, 10, 10, 50);
	mrc_cc_on_ecn(&cc, 5200, 10, 10, 1000);	/* window over, RTT not */
	KUNIT_EXPECT_EQ(test, cc.decreases, 1u);
	mrc_cc_on_ecn(&cc, 6200, 10, 10, 1000);
	KUNIT_EXPECT_EQ(test, cc.decreases, 2u);
	KUNIT_EXPECT_EQ(test, cc.ecn_decreases, 1u);
	/* marks reported for packets a lost ACK covered still count */
	mrc_cc_init(&cc, 100, 2, 512, 500);
	mrc_cc_on_ecn(&cc, 0, 0, 3, 1000);
	mrc_cc_on_ecn(&cc, 1000, 0, 0, 1000);
	KUNIT_EXPECT_EQ(test, cc.ecn_decreases, 1u);
}

/* the gap mrc_pace_rate() sets for @wnd packets over @srtt */
static u32 mrc_pt_gap(struct mrc_pace *p, u32 wnd, u32 srtt, bool ss)
{
	mrc_pace_rate(p, wnd, srtt, ss);
	return p->gap;
}

static void mrc_pace_rate_from_window(struct kunit *test)
{
	struct mrc_pace p;

	mrc_pace_init(&p, 2, 50);
	/* 10 packets over 1000 us at 1.25 times: 80 us apart */
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 10, 1000, false), 80u);
	/* slow start paces at twice the window's rate */
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 10, 1000, true), 50u);
	/* gaps under min_gap, no RTT sample or no window: not paced */
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 100, 1000, false), 0u);
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 10, 0, false), 0u);
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 0, 1000, false), 0u);
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 0xffffffff, 1000, false), 0u);
	/* a huge RTT is capped */
	KUNIT_EXPECT_EQ(test, mrc_pt_gap(&p, 1, 0x7fffffff, false),
			(u32)MRC_PACE_GAP_MAX_US);
	/* burst bounds */
	mrc_pace_init(&p, 0, 0);
	KUNIT_EXPECT_EQ(test, p.burst, 1u);
	mrc_pace_init(&p, 1000, 0);
	KUNIT_EXPECT_EQ(test, p.burst, (u32)MRC_PACE_BURST_MAX);
}

/* sends @n packets at @now that pacing lets go; Return: how many went */
static u32 mrc_pt_send(struct mrc_pace *p, u32 now, u32 n)
{
	u32 i;

	for (i = 0; i < n && mrc_pace_ok(p, now); i++)
		mrc_pace_sent(p, now);
	return i;
}

static void mrc_pace_spaces_packets(struct kunit *test)
{
	struct mrc_pace p;
	u32 at, t = 0xfffff000;	/* the clock wraps on the way */

	mrc_pace_init(&p, 2, 50);
	KUNIT_EXPECT_FALSE(test, mrc_pace_deadline(&p, &at));
	p.gap = 100;
	/* after a pause: the burst allowance, then one gap apart */
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t, 8), 2u);
	KUNIT_EXPECT_TRUE(test, p.held);
	KUNIT_EXPECT_EQ(test, p.waits, 1u);
	KUNIT_ASSERT_TRUE(test, mrc_pace_deadline(&p, &at));
	KUNIT_EXPECT_EQ(test, at, t + 100);
	/* asking again early is the same wait */
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 99, 8), 0u);
	KUNIT_EXPECT_EQ(test, p.waits, 1u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 100, 8), 1u);
	KUNIT_ASSERT_TRUE(test, mrc_pace_deadline(&p, &at));
	KUNIT_EXPECT_EQ(test, at, t + 200);
	KUNIT_EXPECT_EQ(test, p.waits, 2u);
	/*
	 * The caller's timer: early, the wait goes on; once the time has
	 * passed, the wait ends even if nothing went (say the window closed),
	 * and no deadline is left to wake up for.
	 */
	mrc_pace_expire(&p, t + 199);
	KUNIT_EXPECT_TRUE(test, mrc_pace_deadline(&p, &at));
	mrc_pace_expire(&p, t + 200);
	KUNIT_EXPECT_FALSE(test, mrc_pace_deadline(&p, &at));
	KUNIT_EXPECT_TRUE(test, mrc_pace_ok(&p, t + 300));
	KUNIT_EXPECT_FALSE(test, p.held);
	/* a late wake-up catches up by the burst allowance only */
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 450, 8), 2u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 10000, 8), 2u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 10050, 8), 0u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 10100, 8), 1u);
	/* no longer paced: everything goes, nothing waits */
	p.gap = 0;
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, t + 10101, 8), 8u);
	KUNIT_EXPECT_FALSE(test, p.held);
	KUNIT_EXPECT_FALSE(test, mrc_pace_deadline(&p, &at));
	/* one packet at a time with a burst of one */
	mrc_pace_init(&p, 1, 50);
	p.gap = 300;
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, 5000, 8), 1u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, 5299, 8), 0u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, 5300, 8), 1u);
	KUNIT_EXPECT_EQ(test, mrc_pt_send(&p, 9000, 8), 1u);
}

static struct kunit_case mrc_cc_cases[] = {
	KUNIT_CASE(mrc_pace_rate_from_window),
	KUNIT_CASE(mrc_pace_spaces_packets),
	KUNIT_CASE(mrc_cc_ecn_fraction),
	KUNIT_CASE(mrc_cc_ecn_shares_rtt_limit),
	KUNIT_CASE(mrc_cc_grows_below_target),
	KUNIT_CASE(mrc_cc_grows_only_when_used),
	KUNIT_CASE(mrc_cc_cuts_in_proportion_once_per_rtt),
	KUNIT_CASE(mrc_cc_ignores_delay_spikes),
	KUNIT_CASE(mrc_cc_undo_spurious_rto),
	KUNIT_CASE(mrc_cc_ignores_loss_cuts_on_rto),
	{}
};

static struct kunit_suite mrc_cc_suite = {
	.name = "metaroce_cc",
	.test_cases = mrc_cc_cases,
};

kunit_test_suite(mrc_cc_suite);

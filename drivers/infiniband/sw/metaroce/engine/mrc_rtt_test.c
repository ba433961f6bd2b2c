// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suite for the RTT estimator; included at the end of mrc_rtt.c.
 * Expected values are computed by hand from RFC 6298 with round-to-nearest.
 */
#include <kunit/test.h>

static void mrc_rtt_init_clamps(struct kunit *test)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r, 5000, 1000, 60000);
	KUNIT_EXPECT_EQ(test, r.rto, 5000u);
	KUNIT_EXPECT_EQ(test, r.srtt, 0u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 0u);
	KUNIT_EXPECT_EQ(test, r.backoff, 0u);
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 5000u);

	mrc_rtt_init(&r, 10, 1000, 60000);
	KUNIT_EXPECT_EQ(test, r.rto, 1000u);
	mrc_rtt_init(&r, 1000000, 1000, 60000);
	KUNIT_EXPECT_EQ(test, r.rto, 60000u);
	/* rto_min 0 would allow a zero timeout */
	mrc_rtt_init(&r, 0, 0, 100);
	KUNIT_EXPECT_EQ(test, r.rto_min, 1u);
	KUNIT_EXPECT_EQ(test, r.rto, 1u);
	/* inverted limits: max follows min */
	mrc_rtt_init(&r, 50, 200, 100);
	KUNIT_EXPECT_EQ(test, r.rto_max, 200u);
	KUNIT_EXPECT_EQ(test, r.rto, 200u);
}

static void mrc_rtt_hand_computed(struct kunit *test)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r, 3000, 1, 1000000);

	/* first sample: srtt = R, rttvar = R/2, rto = 100 + 4 * 50 */
	mrc_rtt_sample(&r, 100);
	KUNIT_EXPECT_EQ(test, r.srtt, 100u);
	KUNIT_EXPECT_EQ(test, r.rttvar, 50u);
	KUNIT_EXPECT_EQ(test, r.rto, 300u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 100u);
	KUNIT_EXPECT_EQ(test, r.latest, 100u);

	/* rttvar = (3 * 50 + |100 - 200|) / 4 = 62.5 -> 63
	 * srtt = (7 * 100 + 200) / 8 = 112.5 -> 113; rto = 113 + 252
	 */
	mrc_rtt_sample(&r, 200);
	KUNIT_EXPECT_EQ(test, r.rttvar, 63u);
	KUNIT_EXPECT_EQ(test, r.srtt, 113u);
	KUNIT_EXPECT_EQ(test, r.rto, 365u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 100u);
	KUNIT_EXPECT_EQ(test, r.latest, 200u);

	/* rttvar = (189 + 63) / 4 = 63; srtt = (791 + 50) / 8 = 105.1 -> 105 */
	mrc_rtt_sample(&r, 50);
	KUNIT_EXPECT_EQ(test, r.rttvar, 63u);
	KUNIT_EXPECT_EQ(test, r.srtt, 105u);
	KUNIT_EXPECT_EQ(test, r.rto, 357u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 50u);

	/* rttvar = (189 + 0) / 4 = 47.25 -> 47; srtt stays 105 */
	mrc_rtt_sample(&r, 105);
	KUNIT_EXPECT_EQ(test, r.rttvar, 47u);
	KUNIT_EXPECT_EQ(test, r.srtt, 105u);
	KUNIT_EXPECT_EQ(test, r.rto, 293u);
}

static void mrc_rtt_converges(struct kunit *test)
{
	struct mrc_rtt r;
	int i;

	mrc_rtt_init(&r, 3000, 1, 1000000);
	mrc_rtt_sample(&r, 5000);
	for (i = 0; i < 200; i++)
		mrc_rtt_sample(&r, 100);
	/* rounding leaves srtt in [R - 3, R + 4] for a constant RTT R */
	KUNIT_EXPECT_GE(test, r.srtt, 97u);
	KUNIT_EXPECT_LE(test, r.srtt, 104u);
	KUNIT_EXPECT_LE(test, r.rttvar, 6u);
	KUNIT_EXPECT_LE(test, r.rto, 128u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 100u);

	/* a jump up is followed within a few dozen samples */
	for (i = 0; i < 60; i++)
		mrc_rtt_sample(&r, 1000);
	KUNIT_EXPECT_GE(test, r.srtt, 997u);
	KUNIT_EXPECT_LE(test, r.srtt, 1003u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 100u);
}

static void mrc_rtt_zero_and_huge(struct kunit *test)
{
	struct mrc_rtt r;

	/* a zero sample counts as 1 us; rto_min (>= 1 us) keeps rto > srtt */
	mrc_rtt_init(&r, 3000, 1, 1000000);
	mrc_rtt_sample(&r, 0);
	KUNIT_EXPECT_EQ(test, r.srtt, 1u);
	KUNIT_EXPECT_EQ(test, r.rttvar, 0u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 1u);
	KUNIT_EXPECT_EQ(test, r.rto, 2u);

	/* nothing overflows at the top of the u32 range */
	mrc_rtt_init(&r, 3000, 1000, 0xffffffff);
	mrc_rtt_sample(&r, 0xffffffff);
	KUNIT_EXPECT_EQ(test, r.srtt, 0xffffffffu);
	KUNIT_EXPECT_EQ(test, r.rttvar, 0x7fffffffu);
	KUNIT_EXPECT_EQ(test, r.rto, 0xffffffffu);
	mrc_rtt_sample(&r, 0xffffffff);
	KUNIT_EXPECT_EQ(test, r.srtt, 0xffffffffu);
	KUNIT_EXPECT_EQ(test, r.rto, 0xffffffffu);
	mrc_rtt_sample(&r, 1);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 1u);
	KUNIT_EXPECT_LT(test, r.srtt, 0xffffffffu);
}

static void mrc_rtt_clamp_and_backoff(struct kunit *test)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r, 3000, 1000, 60000);
	mrc_rtt_sample(&r, 100);		/* 100 + max(200, rto_min) */
	KUNIT_EXPECT_EQ(test, r.rto, 1100u);
	r.backoff = 1;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 2200u);
	r.backoff = 5;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 35200u);
	r.backoff = 6;				/* 70400 -> rto_max */
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 60000u);
	r.backoff = 16;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 60000u);
	/* a backoff beyond the cap shifts no further (and not by >= 32) */
	r.backoff = 40;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 60000u);

	mrc_rtt_init(&r, 3000, 1, 0xffffffff);
	r.rto = 1;
	r.backoff = 40;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 1u << MRC_RTO_MAX_BACKOFF);

	/* a sample never touches the backoff: the scoreboard owns it */
	r.backoff = 3;
	mrc_rtt_sample(&r, 10);
	KUNIT_EXPECT_EQ(test, r.backoff, 3u);

	mrc_rtt_init(&r, 3000, 1000, 60000);
	mrc_rtt_sample(&r, 1000000);		/* -> rto_max */
	KUNIT_EXPECT_EQ(test, r.rto, 60000u);
}

static void mrc_rtt_set_max_caps(struct kunit *test)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r, 3000, 1000, 4000000);
	mrc_rtt_sample(&r, 200000);		/* 200000 + 4 x 100000 */
	KUNIT_EXPECT_EQ(test, r.rto, 600000u);
	mrc_rtt_set_max(&r, 67108);		/* IB timeout 14 */
	KUNIT_EXPECT_EQ(test, r.rto_max, 67108u);
	KUNIT_EXPECT_EQ(test, r.rto, 67108u);
	r.backoff = 3;
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 67108u);
	/* later samples stay under the cap too */
	mrc_rtt_sample(&r, 500000);
	KUNIT_EXPECT_EQ(test, r.rto, 67108u);
	/* never below rto_min: IB timeout 8 is 1048 us */
	mrc_rtt_set_max(&r, 500);
	KUNIT_EXPECT_EQ(test, r.rto_max, 1000u);
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&r), 1000u);
	/* raising the cap leaves the base RTO until the next sample */
	mrc_rtt_set_max(&r, 4000000);
	KUNIT_EXPECT_EQ(test, r.rto, 1000u);
	r.backoff = 0;
	mrc_rtt_sample(&r, 1000);
	KUNIT_EXPECT_GT(test, r.rto, 1000u);
}

/*
 * A standing queue (incast) brings srtt up to rto_min: the timeout keeps
 * rto_min of margin above srtt, so an ACK one queue length late does not
 * expire it.  A floor on the sum would have left 4 rttvar, a few us.
 */
static void mrc_rtt_margin_over_queue(struct kunit *test)
{
	struct mrc_rtt r;
	int i;

	mrc_rtt_init(&r, 10000, 5000, 4000000);
	for (i = 0; i < 64; i++)
		mrc_rtt_sample(&r, 5000);
	KUNIT_EXPECT_GE(test, r.srtt, 4997u);
	KUNIT_EXPECT_LE(test, r.srtt, 5004u);
	KUNIT_EXPECT_LE(test, r.rttvar, 4u);
	KUNIT_EXPECT_EQ(test, r.rto, r.srtt + 5000);
	KUNIT_EXPECT_GT(test, mrc_rtt_rto(&r), 9500u);
	/* a large variation still widens it beyond rto_min */
	mrc_rtt_sample(&r, 20000);
	KUNIT_EXPECT_EQ(test, r.rto, r.srtt + 4 * r.rttvar);
	KUNIT_EXPECT_GT(test, 4 * r.rttvar, 5000u);
}

/*
 * A sample above rto_max (a forged timestamp echo) counts as rto_max: the
 * timer never waits longer, and srtt drives pacing and the RACK window.
 */
static void mrc_rtt_sample_clamped(struct kunit *test)
{
	struct mrc_rtt r;

	mrc_rtt_init(&r, 3000, 1000, 60000);
	KUNIT_EXPECT_EQ(test, mrc_rtt_sample(&r, 0x7fffffff), 60000u);
	KUNIT_EXPECT_EQ(test, r.srtt, 60000u);
	KUNIT_EXPECT_EQ(test, r.rttvar, 30000u);
	KUNIT_EXPECT_EQ(test, r.latest, 60000u);
	KUNIT_EXPECT_EQ(test, r.min_rtt, 60000u);
	KUNIT_EXPECT_EQ(test, r.rto, 60000u);

	mrc_rtt_init(&r, 3000, 1000, 60000);
	KUNIT_EXPECT_EQ(test, mrc_rtt_sample(&r, 100), 100u);
	KUNIT_EXPECT_EQ(test, mrc_rtt_sample(&r, 0xffffffff), 60000u);
	KUNIT_EXPECT_EQ(test, r.srtt, 7588u);		/* (700 + 60000) / 8 */
	KUNIT_EXPECT_EQ(test, r.min_rtt, 100u);
	KUNIT_EXPECT_EQ(test, mrc_rtt_sample(&r, 0), 1u);

	/* the bound follows rto_max (the driver's IB ACK timeout) */
	mrc_rtt_set_max(&r, 67108);
	KUNIT_EXPECT_EQ(test, mrc_rtt_sample(&r, 1000000), 67108u);
	KUNIT_EXPECT_EQ(test, r.latest, 67108u);
}

static struct kunit_case mrc_rtt_cases[] = {
	KUNIT_CASE(mrc_rtt_init_clamps),
	KUNIT_CASE(mrc_rtt_hand_computed),
	KUNIT_CASE(mrc_rtt_converges),
	KUNIT_CASE(mrc_rtt_zero_and_huge),
	KUNIT_CASE(mrc_rtt_clamp_and_backoff),
	KUNIT_CASE(mrc_rtt_set_max_caps),
	KUNIT_CASE(mrc_rtt_margin_over_queue),
	KUNIT_CASE(mrc_rtt_sample_clamped),
	{}
};

static struct kunit_suite mrc_rtt_suite = {
	.name = "metaroce_rtt",
	.test_cases = mrc_rtt_cases,
};

kunit_test_suite(mrc_rtt_suite);

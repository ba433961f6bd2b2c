// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: receiver credits.  Included at the end of mrc_credit.c.
 */
#include <kunit/test.h>

/* a pool and @n fresh flow records */
static void cr_start(struct mrc_credit *c, struct mrc_credit_flow *f, u32 n,
		     u32 pool_min, u32 pool_max, u32 target_us, u32 epoch_us)
{
	u32 i;

	mrc_credit_init(c, pool_min, pool_max, target_us, epoch_us);
	for (i = 0; i < n; i++)
		mrc_credit_flow_init(&f[i]);
}

/*
 * n flows each deliver one packet per tick with queueing delay q; @full:
 * they say their grants hold them back (MRC_F_CREDIT)
 */
static void cr_run_full(struct mrc_credit *c, struct mrc_credit_flow *f,
			u32 n, u32 *now, u32 ticks, u32 tick_us, u32 q,
			bool full)
{
	u32 t, i;

	for (t = 0; t < ticks; t++) {
		*now += tick_us;
		for (i = 0; i < n; i++)
			/* flow i's clock is offset by i * 1e6: only differences count */
			mrc_credit_on_data(c, &f[i], *now,
					   *now - 100 - q + i * 1000000u, false,
					   full);
	}
}

/* as cr_run_full(), senders that use up their grants */
static void cr_run(struct mrc_credit *c, struct mrc_credit_flow *f, u32 n,
		   u32 *now, u32 ticks, u32 tick_us, u32 q)
{
	cr_run_full(c, f, n, now, ticks, tick_us, q, true);
}

static void mrc_credit_starts_full_one_flow(struct kunit *test)
{
	struct mrc_credit_flow f[1];
	struct mrc_credit c;
	u32 now = 0;

	mrc_credit_init(&c, 4, 256, 500, 1000);
	mrc_credit_flow_init(&f[0]);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 256u);
	cr_run(&c, f, 1, &now, 100, 100, 0);
	KUNIT_EXPECT_EQ(test, c.active, 1u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 256u);
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
}

/* shares are equal and the pool shrinks while the queue is over target */
static void mrc_credit_fair_and_shrinks(struct kunit *test)
{
	struct mrc_credit_flow f[8];
	struct mrc_credit c;
	u32 now = 0, g;

	cr_start(&c, f, 8, 4, 256, 500, 1000);
	cr_run(&c, f, 8, &now, 20, 100, 0);		/* base delays */
	KUNIT_EXPECT_EQ(test, c.active, 8u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 256u / 8);
	/* a 3 ms standing queue: the pool shrinks, at most by half per epoch */
	cr_run(&c, f, 8, &now, 11, 100, 3000);
	KUNIT_EXPECT_GE(test, c.pool, 128u * 256);
	cr_run(&c, f, 8, &now, 200, 100, 3000);
	KUNIT_EXPECT_GT(test, c.cuts, 5u);
	g = mrc_credit_grant(&c);
	/* the floor: MRC_CREDIT_MIN_FLOW packets a flow */
	KUNIT_EXPECT_EQ(test, g, (u32)MRC_CREDIT_MIN_FLOW);
	KUNIT_EXPECT_EQ(test, c.pool, 8u * MRC_CREDIT_MIN_FLOW * 256);
	/* queue gone: grows again, an eighth per epoch */
	cr_run(&c, f, 8, &now, 11, 100, 0);
	KUNIT_EXPECT_EQ(test, c.pool, 9u * 256);
	cr_run(&c, f, 8, &now, 50, 100, 0);
	KUNIT_EXPECT_GT(test, c.pool, 9u * 256);
	KUNIT_EXPECT_LE(test, c.pool, mrc_credit_ceiling(&c));
}

/* a share's fraction is handed out too: the grants add up to the pool */
static void mrc_credit_grant_dithers(struct kunit *test)
{
	struct mrc_credit_flow f[8];
	struct mrc_credit c;
	u32 now = 0, i, sum = 0, g;

	cr_start(&c, f, 8, 4, 256, 500, 1000);
	cr_run(&c, f, 8, &now, 20, 100, 0);
	KUNIT_EXPECT_EQ(test, c.active, 8u);
	c.pool = 10 * 256 + 128;		/* 10.5 packets */
	for (i = 0; i < 16; i++) {
		g = mrc_credit_grant(&c);
		KUNIT_EXPECT_TRUE(test, g == 1 || g == 2);
		sum += g;
	}
	KUNIT_EXPECT_EQ(test, sum, 21u);
	/* under a packet a flow: one packet each, no dither */
	c.pool = 6 * 256;
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 1u);
}

/*
 * The pool grows only while a sender says its grant holds it back: one
 * that nobody fills would otherwise grow unseen and be filled at once
 * when the senders' own windows open.
 */
static void mrc_credit_grows_only_when_used(struct kunit *test)
{
	struct mrc_credit_flow f[4];
	struct mrc_credit c;
	u32 now = 0, pool;
	u64 cuts;

	cr_start(&c, f, 4, 4, 256, 500, 1000);
	cr_run(&c, f, 4, &now, 20, 100, 0);		/* base delays */
	cr_run(&c, f, 4, &now, 300, 100, 3000);		/* down to the floor */
	pool = c.pool;
	KUNIT_EXPECT_EQ(test, pool, 4u * 256);
	/* queue gone, but no sender at its grant: the pool stays */
	cr_run_full(&c, f, 4, &now, 200, 100, 0, false);
	KUNIT_EXPECT_EQ(test, c.pool, pool);
	KUNIT_EXPECT_EQ(test, c.full_samples, 0u);
	/* one packet of an epoch that says so is enough */
	cr_run_full(&c, f, 4, &now, 10, 100, 0, false);
	mrc_credit_on_data(&c, &f[0], now + 50, now + 50 - 100, false, true);
	cr_run_full(&c, f, 4, &now, 10, 100, 0, false);
	KUNIT_EXPECT_EQ(test, c.pool, pool + pool / 8);
	/* cuts need no such word */
	cuts = c.cuts;
	cr_run_full(&c, f, 4, &now, 30, 100, 3000, false);
	KUNIT_EXPECT_GT(test, c.cuts, cuts);
	KUNIT_EXPECT_LT(test, c.pool, pool + pool / 8);
}

/* the smallest delay of the epoch decides: one slow packet is noise */
static void mrc_credit_ignores_jitter(struct kunit *test)
{
	struct mrc_credit_flow f[2];
	struct mrc_credit c;
	u32 now = 0, t, i;

	cr_start(&c, f, 2, 4, 64, 500, 1000);
	for (t = 0; t < 200; t++) {
		now += 100;
		for (i = 0; i < 2; i++)
			mrc_credit_on_data(&c, &f[i], now, now - 100 -
					   (t % 10 == 5 ? 20000 : 0), false,
					   true);
	}
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 32u);
}

/* as cr_run, no queueing delay, every @every-th packet CE marked */
static void cr_run_ce(struct mrc_credit *c, struct mrc_credit_flow *f, u32 n,
		      u32 *now, u32 ticks, u32 every)
{
	u32 t, i, k = 0;

	for (t = 0; t < ticks; t++) {
		*now += 100;
		for (i = 0; i < n; i++)
			mrc_credit_on_data(c, &f[i], *now,
					   *now - 100 + i * 1000000u,
					   every && ++k % every == 0, true);
	}
}

/* unmarked ticks until an epoch has just begun */
static void cr_epoch_start(struct mrc_credit *c, struct mrc_credit_flow *f,
			   u32 n, u32 *now)
{
	u32 epoch = c->epoch_id, t;

	/* bounded: an epoch that never ends fails the caller, not hangs */
	for (t = 0; t < 1000 && c->epoch_id == epoch; t++)
		cr_run_ce(c, f, n, now, 1, 0);
}

/* all-marked ticks until the pool is cut (bounded); true if it was */
static bool cr_until_cut(struct mrc_credit *c, struct mrc_credit_flow *f,
			 u32 n, u32 *now)
{
	u64 cuts = c->cuts;
	u32 t;

	for (t = 0; t < 1000 && c->cuts == cuts; t++)
		cr_run_ce(c, f, n, now, 1, 1);
	return c->cuts != cuts;
}

/* CE marks shrink the pool by half the marked share, with no delay */
static void mrc_credit_ce_cuts(struct kunit *test)
{
	struct mrc_credit_flow f[8];
	struct mrc_credit c;
	u32 now = 0, quarter, all;

	cr_start(&c, f, 8, 4, 256, 500, 1000);
	cr_run_ce(&c, f, 8, &now, 30, 0);
	KUNIT_EXPECT_EQ(test, c.pool, 256u * 256);
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
	/* a quarter marked: an eighth off per epoch */
	cr_run_ce(&c, f, 8, &now, 30, 4);
	quarter = c.pool;
	KUNIT_EXPECT_GT(test, c.cuts, 0u);
	KUNIT_EXPECT_EQ(test, c.ce_cuts, c.cuts);
	KUNIT_EXPECT_LT(test, quarter, 256u * 256 * 7 / 8);
	KUNIT_EXPECT_GE(test, quarter, 256u * 256 * 7 / 8 * 7 / 8 * 7 / 8 - 256);

	/* all marked: half off per epoch, no more */
	cr_start(&c, f, 8, 4, 256, 500, 1000);
	now = 0;
	cr_run_ce(&c, f, 8, &now, 30, 0);
	cr_run_ce(&c, f, 8, &now, 30, 1);
	all = c.pool;
	KUNIT_EXPECT_LT(test, all, quarter);
	KUNIT_EXPECT_GE(test, all, 256u * 256 / 8 - 256);
	/* down to the floor of a packet per flow, and never below */
	cr_run_ce(&c, f, 8, &now, 200, 1);
	KUNIT_EXPECT_EQ(test, c.pool, 8u * MRC_CREDIT_MIN_FLOW * 256);
	/* marks gone: the pool grows back */
	cr_run_ce(&c, f, 8, &now, 30, 0);
	KUNIT_EXPECT_GT(test, c.pool, 8u * MRC_CREDIT_MIN_FLOW * 256);
	KUNIT_EXPECT_EQ(test, c.ce_samples, 0u);
}

/*
 * Growth stops a quarter above the size the pool had when it was cut, and
 * from there only creeps: while the hosts are slow nothing queues however
 * large the pool, and what it grew to then lands in the queue at once.
 */
static void mrc_credit_growth_ceiling(struct kunit *test)
{
	struct mrc_credit_flow f[8];
	struct mrc_credit c;
	u32 now = 0, i, level, ceil0, pool;

	cr_start(&c, f, 8, 2, 1024, 500, 1000);
	cr_run_ce(&c, f, 8, &now, 20, 0);
	KUNIT_EXPECT_EQ(test, c.cut_level, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_ceiling(&c), 0u);
	/* 16 packets when an epoch begins, then marks: cut at a level of 16 */
	cr_epoch_start(&c, f, 8, &now);
	c.pool = 16 * 256;
	KUNIT_ASSERT_TRUE(test, cr_until_cut(&c, f, 8, &now));
	KUNIT_EXPECT_EQ(test, c.cut_level, 16u * 256);
	KUNIT_EXPECT_LT(test, c.pool, 16u * 256);
	ceil0 = mrc_credit_ceiling(&c);
	KUNIT_EXPECT_EQ(test, ceil0, 20u * 256);
	/* no queue: an eighth per epoch up to the ceiling, never past it */
	level = c.cut_level;
	for (i = 0; i < 300; i++) {
		cr_run_ce(&c, f, 8, &now, 1, 0);
		KUNIT_EXPECT_LE(test, c.pool, mrc_credit_ceiling(&c));
	}
	/* there the ceiling creeps, a 128th an epoch, and the pool with it */
	KUNIT_EXPECT_EQ(test, c.pool, mrc_credit_ceiling(&c));
	KUNIT_EXPECT_GT(test, c.cut_level, level);
	KUNIT_EXPECT_GT(test, c.pool, ceil0);
	KUNIT_EXPECT_LT(test, c.pool, 2 * ceil0);
	/* a new cut pulls the level a quarter of the way to the pool it cut */
	cr_epoch_start(&c, f, 8, &now);
	level = c.cut_level;
	pool = c.pool;
	KUNIT_ASSERT_TRUE(test, cr_until_cut(&c, f, 8, &now));
	KUNIT_EXPECT_EQ(test, c.cut_level, level - level / 4 + pool / 4);
}

/*
 * A handful of late packets before a silence is no evidence of a queue;
 * sparse packets that keep coming late are (on a slow link an epoch
 * waits for MRC_CREDIT_MIN_SAMPLES of them).
 */
static void mrc_credit_needs_samples(struct kunit *test)
{
	struct mrc_credit_flow f[2];
	struct mrc_credit c;
	u32 now = 0;

	cr_start(&c, f, 2, 4, 64, 500, 1000);
	cr_run(&c, f, 2, &now, 10, 100, 0);		/* base delays */
	/* four packets 5 ms late, 20 ms of silence, then punctual ones */
	cr_run(&c, f, 2, &now, 2, 1000, 5000);
	now += 20000;
	cr_run(&c, f, 2, &now, 30, 100, 0);
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
	/* two packets per epoch, all 5 ms late */
	cr_run(&c, f, 2, &now, 20, 1000, 5000);
	KUNIT_EXPECT_GT(test, c.cuts, 0u);
}

/* flows that stop sending stop counting; the pool never leaks below the floor */
static void mrc_credit_flows_leave(struct kunit *test)
{
	struct mrc_credit_flow f[4];
	struct mrc_credit c;
	u32 now = 0, pool;

	cr_start(&c, f, 4, 4, 400, 500, 1000);
	cr_run(&c, f, 4, &now, 30, 100, 0);
	KUNIT_EXPECT_EQ(test, c.active, 4u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 100u);
	cr_run(&c, f, 2, &now, 30, 100, 0);
	KUNIT_EXPECT_EQ(test, c.active, 2u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 200u);
	/* a huge queue: pool never under max(pool_min, 2 per flow) */
	cr_run(&c, f, 2, &now, 1000, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.pool, 4u * 256);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 2u);
	/*
	 * and never over pool_max, whatever the time (past the ceiling of
	 * the cuts at the floor it creeps: 1/128 an epoch of 1 ms here)
	 */
	cr_run(&c, f, 2, &now, 10000, 100, 0);
	KUNIT_EXPECT_EQ(test, c.pool, 400u * 256);
	/* where the ceiling stops creeping */
	cr_run(&c, f, 2, &now, 10000, 100, 0);
	KUNIT_EXPECT_EQ(test, c.pool, 400u * 256);
	KUNIT_EXPECT_GE(test, mrc_credit_ceiling(&c), 400u * 256);
	KUNIT_EXPECT_LT(test, mrc_credit_ceiling(&c), 400u * 256 * 2);
	/* one sender alone is not limited, queue or not, once alone a while */
	cr_run(&c, f, 2, &now, 50, 100, 100000);
	KUNIT_EXPECT_LT(test, c.pool, 400u * 256);
	cr_run(&c, f, 1, &now, 30, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.active, 1u);
	KUNIT_EXPECT_LT(test, c.solo, (u32)MRC_CREDIT_SOLO_EPOCHS);
	KUNIT_EXPECT_LE(test, mrc_credit_grant(&c), c.pool / 256 + 1);
	cr_run(&c, f, 1, &now, 10 * MRC_CREDIT_SOLO_EPOCHS, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.solo, (u32)MRC_CREDIT_SOLO_EPOCHS);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 400u);
	/* but the pool keeps its size: the second flow is back at its share */
	pool = c.pool;
	KUNIT_EXPECT_LT(test, pool, 400u * 256);
	cr_run(&c, f, 1, &now, 30, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.pool, pool);
	cr_run(&c, f, 2, &now, 30, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.active, 2u);
	KUNIT_EXPECT_LE(test, mrc_credit_grant(&c), pool / 256 / 2);
}

/*
 * A sender that pauses for a few epochs (its host descheduled) leaves the
 * other alone in the count; it still gets only the pool, not pool_max,
 * which would let its whole window into the queue.
 */
static void mrc_credit_pause_not_alone(struct kunit *test)
{
	struct mrc_credit_flow f[2];
	struct mrc_credit c;
	u32 now = 0, pool;

	cr_start(&c, f, 2, 2, 400, 500, 1000);
	cr_run(&c, f, 2, &now, 30, 100, 0);		/* base delays */
	cr_run(&c, f, 2, &now, 300, 100, 100000);	/* cut to the floor */
	KUNIT_EXPECT_EQ(test, c.active, 2u);
	KUNIT_EXPECT_EQ(test, c.pool, 2u * 256);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 1u);
	pool = c.pool;
	/* flow 1 is silent for 5 epochs: flow 0 alone in the count */
	cr_run_full(&c, f, 1, &now, 50, 100, 0, false);
	KUNIT_EXPECT_EQ(test, c.active, 1u);
	KUNIT_EXPECT_GT(test, c.solo, 0u);
	KUNIT_EXPECT_EQ(test, c.pool, pool);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 2u);
	/* it is back: shares again, and the count of epochs alone restarts */
	cr_run_full(&c, f, 2, &now, 25, 100, 0, false);
	KUNIT_EXPECT_EQ(test, c.active, 2u);
	KUNIT_EXPECT_EQ(test, c.solo, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 1u);
	/* gone for good: after MRC_CREDIT_SOLO_EPOCHS epochs, pool_max */
	cr_run_full(&c, f, 1, &now, 10 * (MRC_CREDIT_SOLO_EPOCHS + 2), 100, 0,
		    false);
	KUNIT_EXPECT_EQ(test, c.solo, (u32)MRC_CREDIT_SOLO_EPOCHS);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 400u);
	KUNIT_EXPECT_EQ(test, c.pool, pool);
}

/* the base delay follows clock drift: old minima are forgotten */
static void mrc_credit_base_window(struct kunit *test)
{
	struct mrc_credit_flow f[1];
	struct mrc_credit c;
	u32 now = 0, t;

	mrc_credit_init(&c, 4, 64, 500, 100);
	mrc_credit_flow_init(&f[0]);
	/* early on a very small delay, later a steady one 2 ms larger */
	mrc_credit_on_data(&c, &f[0], 0, 0, false, true);
	/* an epoch lasts MRC_CREDIT_MIN_SAMPLES packets */
	for (t = 0; t < 3 * MRC_CREDIT_OWD_EPOCHS * MRC_CREDIT_MIN_SAMPLES;
	     t++) {
		now += 100;
		mrc_credit_on_data(&c, &f[0], now, now - 2000, false, true);
	}
	/* the old minimum aged out: no standing queue is seen any more */
	KUNIT_EXPECT_EQ(test, c.qmin, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 64u);
}

/*
 * A hold never wraps: with a huge hold_max_us (the module parameter is
 * the caller's) the limit stays within [hold_max_us, 16 * hold_max_us]
 * and the ACK is held for at least hold_max_us.
 */
static void mrc_credit_hold_huge(struct kunit *test)
{
	static const u32 huge[] = { 1u << 28, 1u << 31, 0xffffffffu };
	struct mrc_credit_flow f[4], *rel;
	struct mrc_credit c;
	u32 i, now = 1000;

	for (i = 0; i < ARRAY_SIZE(huge); i++) {
		cr_start(&c, f, 4, 2, 64, 500, 1000);
		mrc_credit_set_hold(&c, huge[i]);
		KUNIT_EXPECT_GT(test, c.hold_max_us, 0u);
		/* four flows, a pool of two, arrivals as slow as allowed */
		c.active = 4;
		c.pool = 2 * 256;
		c.gap_us = c.hold_max_us;
		KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[0], now, &rel));
		KUNIT_EXPECT_GE(test, f[0].hold_for, c.hold_max_us);
		KUNIT_EXPECT_LE(test, (u64)f[0].hold_for,
				(u64)MRC_CREDIT_HOLD_CAP * c.hold_max_us);
		KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[0],
							now + c.hold_max_us - 1,
							&rel));
	}
}

/* more flows than the pool: ACKs are held and the pool's packets rotate */
static void mrc_credit_hold_rotates(struct kunit *test)
{
	struct mrc_credit_flow f[4], *rel;
	struct mrc_credit c;
	u32 now = 0;

	cr_start(&c, f, 4, 2, 64, 500, 1000);
	mrc_credit_set_hold(&c, 4000);
	cr_run(&c, f, 4, &now, 20, 100, 0);
	/* a pool with room: nothing is held */
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[0], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, (struct mrc_credit_flow *)NULL);
	/* a standing queue cuts the pool below one packet per flow */
	cr_run(&c, f, 4, &now, 300, 100, 3000);
	KUNIT_EXPECT_EQ(test, c.active, 4u);
	KUNIT_EXPECT_EQ(test, c.pool, 2u * 256);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 1u);

	/* four flows hold two packets' worth: two ACKs wait */
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[0], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, (struct mrc_credit_flow *)NULL);
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[1], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, (struct mrc_credit_flow *)NULL);
	KUNIT_EXPECT_EQ(test, c.held, 2u);
	/* from now on each arrival hands its packet to the oldest waiter */
	now += 100;
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[2], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, &f[0]);
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[0], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, (struct mrc_credit_flow *)NULL);
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[3], now, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, &f[1]);
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[1], now, &rel));
	KUNIT_EXPECT_EQ(test, c.held, 2u);
	KUNIT_EXPECT_EQ(test, c.holds, 4u);
	/* a flow still waiting stays held */
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[2], now + 10, &rel));
	KUNIT_EXPECT_PTR_EQ(test, rel, (struct mrc_credit_flow *)NULL);

	/* held flows count as active in epochs without their packets */
	cr_run(&c, f, 2, &now, 30, 100, 3000);
	KUNIT_EXPECT_EQ(test, c.active, 4u);

	/* an ACK sent anyway takes the flow off the list, from the middle too */
	mrc_credit_unhold(&c, &f[2]);
	KUNIT_EXPECT_EQ(test, c.held, 1u);
	KUNIT_EXPECT_PTR_EQ(test, c.hold_head, &f[3]);
	KUNIT_EXPECT_PTR_EQ(test, c.hold_tail, &f[3]);
	mrc_credit_unhold(&c, &f[2]);
	KUNIT_EXPECT_EQ(test, c.held, 1u);
	/* no ACK waits longer than hold_max_us */
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[3], now + 4000, &rel));
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 1u);
	KUNIT_EXPECT_EQ(test, c.held, 0u);
	KUNIT_EXPECT_PTR_EQ(test, c.hold_head, (struct mrc_credit_flow *)NULL);
	KUNIT_EXPECT_PTR_EQ(test, c.hold_tail, (struct mrc_credit_flow *)NULL);

	/* holds off: never held, and the pool covers a packet per flow again */
	mrc_credit_set_hold(&c, 0);
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[0], now, &rel));
	KUNIT_EXPECT_EQ(test, c.pool, 4u * 256);
}

/*
 * A bottleneck serving one packet per tick of @tick_us, zero-delay ACKs,
 * flows with a one-packet window: returns the largest queue (packets)
 * and the fewest packets any flow delivered over the second half of
 * @ticks.
 */
static void cr_bottleneck(struct kunit *test, struct mrc_credit *c,
			  struct mrc_credit_flow *f, u32 n, u32 ticks,
			  u32 tick_us, u32 *qmax, u32 *least, u32 *sent)
{
	u32 q[8], ts[8], got[8] = {}, head = 0, len = 0, now = 0, t, i, j;
	struct mrc_credit_flow *rel;

	for (i = 0; i < n; i++) {
		q[i] = i;
		ts[i] = now;
	}
	len = n;
	/* each flow's first packet found the queue empty: its base delay */
	for (i = 0; i < n; i++)
		mrc_credit_on_data(c, &f[i], now, now, false, true);
	*qmax = 0;
	*sent = 0;
	for (t = 0; t < ticks; t++) {
		now += tick_us;
		if (t >= ticks / 2 && len > *qmax)
			*qmax = len;
		if (!len)
			continue;
		i = q[head];
		head = (head + 1) % 8;
		len--;
		mrc_credit_on_data(c, &f[i], now, ts[i], false, true);
		if (t >= ticks / 2) {
			got[i]++;
			(*sent)++;
		}
		/* an ACK lets the flow send its next packet at once */
		if (!mrc_credit_hold(c, &f[i], now, &rel)) {
			q[(head + len++) % 8] = i;
			ts[i] = now;
		}
		if (rel) {
			j = rel - f;
			/* released: its ACK goes now */
			KUNIT_ASSERT_FALSE(test, mrc_credit_hold(c, rel, now,
								 &rel));
			q[(head + len++) % 8] = j;
			ts[j] = now;
		}
		/* the responder's timer: a hold runs out */
		for (j = 0; j < n; j++) {
			if (!f[j].held || now - f[j].hold_since < f[j].hold_for)
				continue;
			if (!mrc_credit_hold(c, &f[j], now, &rel)) {
				q[(head + len++) % 8] = j;
				ts[j] = now;
			}
		}
	}
	*least = U32_MAX;
	for (i = 0; i < n; i++)
		if (got[i] < *least)
			*least = got[i];
}

/* eight senders, one packet each: holds shorten the queue, fairly */
static void mrc_credit_hold_incast(struct kunit *test)
{
	struct mrc_credit_flow f[8];
	u32 qmax, least, sent;
	struct mrc_credit c;

	/* without holds every flow keeps its packet queued */
	cr_start(&c, f, 8, 2, 64, 1000, 2000);
	cr_bottleneck(test, &c, f, 8, 4000, 660, &qmax, &least, &sent);
	KUNIT_EXPECT_GE(test, qmax, 7u);
	KUNIT_EXPECT_EQ(test, c.holds, 0u);

	cr_start(&c, f, 8, 2, 64, 1000, 2000);
	mrc_credit_set_hold(&c, 4000);
	cr_bottleneck(test, &c, f, 8, 4000, 660, &qmax, &least, &sent);
	KUNIT_EXPECT_LE(test, qmax, 3u);
	/* the link never idles, and every flow gets its turns */
	KUNIT_EXPECT_EQ(test, sent, 2000u);
	KUNIT_EXPECT_GE(test, least, 2000u / 8 * 9 / 10);
	KUNIT_EXPECT_GT(test, c.holds, 1000u);
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 0u);
	KUNIT_EXPECT_LE(test, c.held, 8u);
}

/*
 * 8 KiB at 20 Mbit/s: a turn of eight flows takes about 20 ms, five
 * times hold_max_us.  The holds last as long as the turns take.
 */
static void mrc_credit_hold_slow_link(struct kunit *test)
{
	struct mrc_credit_flow f[8], *rel;
	u32 qmax, least, sent;
	struct mrc_credit c;

	/* epochs long enough for 8 packets: the delay cuts the pool */
	cr_start(&c, f, 8, 2, 64, 1000, 8000);
	mrc_credit_set_hold(&c, 4000);
	cr_bottleneck(test, &c, f, 8, 4000, 3300, &qmax, &least, &sent);
	KUNIT_EXPECT_EQ(test, c.gap_us, 3300u);
	KUNIT_EXPECT_LE(test, qmax, 3u);
	KUNIT_EXPECT_EQ(test, sent, 2000u);
	KUNIT_EXPECT_GE(test, least, 2000u / 8 * 9 / 10);
	KUNIT_EXPECT_GT(test, c.holds, 1000u);
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 0u);

	/* a hold's limit: twice the predicted wait, within 1 and 16 limits */
	cr_start(&c, f, 8, 2, 64, 1000, 2000);
	mrc_credit_set_hold(&c, 4000);
	c.gap_us = 500;
	KUNIT_EXPECT_EQ(test, mrc_credit_hold_for(&c, 0), 4000u);
	c.gap_us = 3000;
	KUNIT_EXPECT_EQ(test, mrc_credit_hold_for(&c, 0), 6000u);
	c.held = 3;
	KUNIT_EXPECT_EQ(test, mrc_credit_hold_for(&c, 0), 24000u);
	KUNIT_EXPECT_EQ(test, mrc_credit_hold_for(&c, 2), 36000u);
	c.held = 20;
	KUNIT_EXPECT_EQ(test, mrc_credit_hold_for(&c, 0), 64000u);
	c.held = 0;
	/*
	 * Four flows, a pool of two: the first held waits for the two
	 * moving beyond the pool and its own turn, the second for one
	 * beyond, the first and its own.
	 */
	c.active = 4;
	c.pool = 2 * 256;
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[0], 100, &rel));
	KUNIT_EXPECT_EQ(test, f[0].hold_for, 18000u);
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[1], 100, &rel));
	KUNIT_EXPECT_EQ(test, f[1].hold_for, 18000u);
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[0], 18099, &rel));
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[1], 18099, &rel));
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 0u);
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[0], 18100, &rel));
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 1u);
	KUNIT_EXPECT_EQ(test, c.held, 1u);
	/* holds that ran out together end one arrival gap (3 ms) apart */
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[1], 18100, &rel));
	KUNIT_EXPECT_EQ(test, f[1].hold_for, 21000u);
	KUNIT_EXPECT_TRUE(test, mrc_credit_hold(&c, &f[1], 21099, &rel));
	KUNIT_EXPECT_FALSE(test, mrc_credit_hold(&c, &f[1], 21100, &rel));
	KUNIT_EXPECT_EQ(test, c.hold_timeouts, 2u);
	KUNIT_EXPECT_EQ(test, c.held, 0u);
}

static struct kunit_case mrc_credit_cases[] = {
	KUNIT_CASE(mrc_credit_starts_full_one_flow),
	KUNIT_CASE(mrc_credit_fair_and_shrinks),
	KUNIT_CASE(mrc_credit_grows_only_when_used),
	KUNIT_CASE(mrc_credit_grant_dithers),
	KUNIT_CASE(mrc_credit_growth_ceiling),
	KUNIT_CASE(mrc_credit_ignores_jitter),
	KUNIT_CASE(mrc_credit_ce_cuts),
	KUNIT_CASE(mrc_credit_needs_samples),
	KUNIT_CASE(mrc_credit_flows_leave),
	KUNIT_CASE(mrc_credit_pause_not_alone),
	KUNIT_CASE(mrc_credit_base_window),
	KUNIT_CASE(mrc_credit_hold_rotates),
	KUNIT_CASE(mrc_credit_hold_huge),
	KUNIT_CASE(mrc_credit_hold_incast),
	KUNIT_CASE(mrc_credit_hold_slow_link),
	{}
};

static struct kunit_suite mrc_credit_suite = {
	.name = "metaroce_credit",
	.test_cases = mrc_credit_cases,
};

kunit_test_suite(mrc_credit_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: receiver credits.  Included at the end of mrc_credit.c.
 */
#include <kunit/test.h>

/* n flows each deliver one packet per tick with queueing delay q */
static void cr_run(struct mrc_credit *c, struct mrc_credit_flow *f, u32 n,
		   u32 *now, u32 ticks, u32 tick_us, u32 q)
{
	u32 t, i;

	for (t = 0; t < ticks; t++) {
		*now += tick_us;
		for (i = 0; i < n; i++)
			/* flow i's clock is offset by i * 1e6: only differences count */
			mrc_credit_on_data(c, &f[i], *now,
					   *now - 100 - q + i * 1000000u);
	}
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
	u32 now = 0, i, g;

	mrc_credit_init(&c, 4, 256, 500, 1000);
	for (i = 0; i < 8; i++)
		mrc_credit_flow_init(&f[i]);
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
	/* queue gone: grows again, an eighth (at least a packet a flow) */
	cr_run(&c, f, 8, &now, 10, 100, 0);
	cr_run(&c, f, 8, &now, 10, 100, 0);
	KUNIT_EXPECT_GT(test, mrc_credit_grant(&c), g);
}

/* the smallest delay of the epoch decides: one slow packet is noise */
static void mrc_credit_ignores_jitter(struct kunit *test)
{
	struct mrc_credit_flow f[2];
	struct mrc_credit c;
	u32 now = 0, t, i;

	mrc_credit_init(&c, 4, 64, 500, 1000);
	for (i = 0; i < 2; i++)
		mrc_credit_flow_init(&f[i]);
	for (t = 0; t < 200; t++) {
		now += 100;
		for (i = 0; i < 2; i++)
			mrc_credit_on_data(&c, &f[i], now, now - 100 -
					   (t % 10 == 5 ? 20000 : 0));
	}
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 32u);
}

/* an epoch with a handful of late packets is no evidence of a queue */
static void mrc_credit_needs_samples(struct kunit *test)
{
	struct mrc_credit_flow f[2];
	struct mrc_credit c;
	u32 now = 0, i;

	mrc_credit_init(&c, 4, 64, 500, 1000);
	for (i = 0; i < 2; i++)
		mrc_credit_flow_init(&f[i]);
	cr_run(&c, f, 2, &now, 10, 100, 0);		/* base delays */
	/* two packets per epoch, both 5 ms late */
	cr_run(&c, f, 2, &now, 20, 1000, 5000);
	KUNIT_EXPECT_EQ(test, c.cuts, 0u);
	/* the same delay with enough packets is a queue */
	cr_run(&c, f, 2, &now, 40, 100, 5000);
	KUNIT_EXPECT_GT(test, c.cuts, 0u);
}

/* flows that stop sending stop counting; the pool never leaks below the floor */
static void mrc_credit_flows_leave(struct kunit *test)
{
	struct mrc_credit_flow f[4];
	struct mrc_credit c;
	u32 now = 0, i;

	mrc_credit_init(&c, 4, 400, 500, 1000);
	for (i = 0; i < 4; i++)
		mrc_credit_flow_init(&f[i]);
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
	/* and never over pool_max, whatever the time */
	cr_run(&c, f, 2, &now, 5000, 100, 0);
	KUNIT_EXPECT_EQ(test, c.pool, 400u * 256);
	/* one sender alone is never limited, queue or not */
	cr_run(&c, f, 2, &now, 50, 100, 100000);
	KUNIT_EXPECT_LT(test, c.pool, 400u * 256);
	cr_run(&c, f, 1, &now, 30, 100, 100000);
	KUNIT_EXPECT_EQ(test, c.active, 1u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 400u);
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
	mrc_credit_on_data(&c, &f[0], 0, 0);
	for (t = 0; t < 3 * MRC_CREDIT_OWD_EPOCHS; t++) {
		now += 100;
		mrc_credit_on_data(&c, &f[0], now, now - 2000);
	}
	/* the old minimum aged out: no standing queue is seen any more */
	KUNIT_EXPECT_EQ(test, c.qmin, 0u);
	KUNIT_EXPECT_EQ(test, mrc_credit_grant(&c), 64u);
}

static struct kunit_case mrc_credit_cases[] = {
	KUNIT_CASE(mrc_credit_starts_full_one_flow),
	KUNIT_CASE(mrc_credit_fair_and_shrinks),
	KUNIT_CASE(mrc_credit_ignores_jitter),
	KUNIT_CASE(mrc_credit_needs_samples),
	KUNIT_CASE(mrc_credit_flows_leave),
	KUNIT_CASE(mrc_credit_base_window),
	{}
};

static struct kunit_suite mrc_credit_suite = {
	.name = "metaroce_credit",
	.test_cases = mrc_credit_cases,
};

kunit_test_suite(mrc_credit_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* KUnit suite for ACK coalescing; included at the end of mrc_ack.c. */
#include <kunit/test.h>

static void mrc_ackc_every_and_delay(struct kunit *test)
{
	struct mrc_ackc c;
	u32 d;

	mrc_ackc_init(&c, 4, 100);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_deadline(&c, &d));
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 10, 0));
	KUNIT_ASSERT_TRUE(test, mrc_ackc_deadline(&c, &d));
	KUNIT_EXPECT_EQ(test, d, 110u);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 20, 0));
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 30, 0));
	KUNIT_ASSERT_TRUE(test, mrc_ackc_deadline(&c, &d));
	KUNIT_EXPECT_EQ(test, d, 110u);		/* from the first one */
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 40, 0));	/* 4th */
	KUNIT_EXPECT_EQ(test, c.pending, 4u);
	mrc_ackc_sent(&c);
	KUNIT_EXPECT_EQ(test, c.pending, 0u);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_deadline(&c, &d));

	/* the delay runs out before the count: ACK with the next arrival */
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 1000, 0));
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 1099, 0));
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 1100, 0));
	mrc_ackc_sent(&c);

	/* the clock wraps */
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 0xffffffc0, 0));
	KUNIT_ASSERT_TRUE(test, mrc_ackc_deadline(&c, &d));
	KUNIT_EXPECT_EQ(test, d, 0x24u);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 0x10, 0));
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 0x24, 0));
}

static void mrc_ackc_immediate(struct kunit *test)
{
	static const u32 now_flags[] = {
		MRC_ACKC_FILL, MRC_ACKC_ACKREQ, MRC_ACKC_DUP, MRC_ACKC_CREDIT,
		MRC_ACKC_FILL | MRC_ACKC_DUP,
	};
	struct mrc_ackc c;
	u32 i;

	mrc_ackc_init(&c, 64, 1000);
	for (i = 0; i < ARRAY_SIZE(now_flags); i++) {
		KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, i * 10, 0));
		KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, i * 10 + 1,
						    now_flags[i]));
		KUNIT_EXPECT_EQ(test, c.pending, 2u);
		mrc_ackc_sent(&c);
	}

	/* every 0 counts as 1; delay 0 means no delayed ACKs */
	mrc_ackc_init(&c, 0, 1000);
	KUNIT_EXPECT_EQ(test, c.every, 1u);
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 5, 0));
	mrc_ackc_init(&c, 16, 0);
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 5, 0));
}

/* CE: counted for the sender, ACKed at once when the state flips */
static void mrc_ackc_ce(struct kunit *test)
{
	struct mrc_ackc c;

	mrc_ackc_init(&c, 8, 1000);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 0, 0));
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 1, MRC_ACKC_CE));
	KUNIT_EXPECT_EQ(test, c.ce, 1u);
	mrc_ackc_sent(&c);
	KUNIT_EXPECT_EQ(test, c.ce, 0u);
	/* still marked: ordinary coalescing, the count grows */
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 2, MRC_ACKC_CE));
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 3, MRC_ACKC_CE));
	KUNIT_EXPECT_EQ(test, c.ce, 2u);
	/* marking stops */
	KUNIT_EXPECT_TRUE(test, mrc_ackc_rx(&c, 4, 0));
	KUNIT_EXPECT_EQ(test, c.ce, 2u);
	KUNIT_EXPECT_EQ(test, c.pending, 3u);
	mrc_ackc_sent(&c);
	KUNIT_EXPECT_FALSE(test, mrc_ackc_rx(&c, 5, 0));
}

static struct kunit_case mrc_ackc_cases[] = {
	KUNIT_CASE(mrc_ackc_every_and_delay),
	KUNIT_CASE(mrc_ackc_immediate),
	KUNIT_CASE(mrc_ackc_ce),
	{}
};

static struct kunit_suite mrc_ackc_suite = {
	.name = "metaroce_ack_coalescing",
	.test_cases = mrc_ackc_cases,
};

kunit_test_suite(mrc_ackc_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suites for PSN arithmetic and the receiver scoreboard; included
 * at the end of mrc_rx.c.
 */
#include <kunit/test.h>

#include <metaroce/mrc_wire.h>

/* ---- PSN and time arithmetic (mrc_engine.h inlines) ---- */

static void mrc_psn_wrap(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mrc_psn_diff(0, 0xffffffff), 1);
	KUNIT_EXPECT_EQ(test, mrc_psn_diff(0xffffffff, 0), -1);
	KUNIT_EXPECT_EQ(test, mrc_psn_diff(5, 0xfffffffb), 10);
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0xffffffff, 0));
	KUNIT_EXPECT_FALSE(test, mrc_psn_lt(0, 0xffffffff));
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0xfffffff0, 0x10));
	KUNIT_EXPECT_FALSE(test, mrc_psn_lt(7, 7));
	KUNIT_EXPECT_TRUE(test, mrc_psn_le(7, 7));
	KUNIT_EXPECT_TRUE(test, mrc_psn_le(0xffffffff, 0));
	KUNIT_EXPECT_FALSE(test, mrc_psn_le(1, 0));
	/* half the space ahead is "after", beyond that "before" */
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0, 0x7fffffff));
	KUNIT_EXPECT_FALSE(test, mrc_psn_lt(0, 0x80000001));
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0x80000001, 0));
	/* exactly half way is ambiguous; s32 arithmetic calls it before */
	KUNIT_EXPECT_EQ(test, mrc_psn_diff(0x80000000, 0), (s32)0x80000000);
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0x80000000, 0));
	KUNIT_EXPECT_TRUE(test, mrc_psn_lt(0, 0x80000000));
}

static void mrc_psn_window(struct kunit *test)
{
	/* [lo, hi) across the wrap */
	KUNIT_EXPECT_TRUE(test, mrc_psn_in(0xfffffff0, 0xfffffff0, 0x10));
	KUNIT_EXPECT_TRUE(test, mrc_psn_in(0xffffffff, 0xfffffff0, 0x10));
	KUNIT_EXPECT_TRUE(test, mrc_psn_in(0, 0xfffffff0, 0x10));
	KUNIT_EXPECT_TRUE(test, mrc_psn_in(0xf, 0xfffffff0, 0x10));
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(0x10, 0xfffffff0, 0x10));
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(0xffffffef, 0xfffffff0, 0x10));
	/* empty window */
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(5, 5, 5));
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(4, 5, 5));
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(4, 5, 20));
	KUNIT_EXPECT_FALSE(test, mrc_psn_in(20, 5, 20));
	KUNIT_EXPECT_TRUE(test, mrc_psn_in(19, 5, 20));
	/* the time clock wraps the same way */
	KUNIT_EXPECT_TRUE(test, mrc_time_before(0xfffffff0, 0x10));
	KUNIT_EXPECT_FALSE(test, mrc_time_before(0x10, 0xfffffff0));
	KUNIT_EXPECT_FALSE(test, mrc_time_before(3, 3));
}

static void mrc_psn_seg_count(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mrc_seg_count(0, 12), 1u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(1, 12), 1u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(4096, 12), 1u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(4097, 12), 2u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(256, 8), 1u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(MRC_MAX_MSG_LEN, 12), 0x80000u);
	KUNIT_EXPECT_EQ(test, mrc_seg_count(0xffffffff, 8), 0x1000000u);
}

static struct kunit_case mrc_psn_cases[] = {
	KUNIT_CASE(mrc_psn_wrap),
	KUNIT_CASE(mrc_psn_window),
	KUNIT_CASE(mrc_psn_seg_count),
	{}
};

static struct kunit_suite mrc_psn_suite = {
	.name = "metaroce_psn",
	.test_cases = mrc_psn_cases,
};

kunit_test_suite(mrc_psn_suite);

/* ---- receiver scoreboard ---- */

static struct mrc_rx *mrc_rt_new(struct kunit *test, u32 nbits, u32 epsn)
{
	struct mrc_rx *rx = kunit_kzalloc(test, sizeof(*rx), GFP_KERNEL);
	u64 *map = kunit_kcalloc(test, (nbits + 63) / 64, sizeof(u64),
				 GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, rx);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, map);
	memset(map, 0xa5, (nbits + 63) / 64 * sizeof(u64));	/* init clears */
	mrc_rx_init(rx, map, nbits, epsn);
	return rx;
}

static void mrc_rx_in_order_and_dups(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 64, 1000);
	u64 w[MRC_ACK_MAX_SACKW];
	u32 i;

	KUNIT_EXPECT_TRUE(test, mrc_rx_has(rx, 999));
	KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, 1000));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1000 + i, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->nxt, 1003u);
	KUNIT_EXPECT_EQ(test, rx->ooo, 0ull);
	KUNIT_EXPECT_EQ(test, rx->holes, 0ull);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, MRC_ACK_MAX_SACKW), 0u);

	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1001, 1), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1000, 3), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 3, 1), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1003, 0), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, rx->nxt, 1003u);
	KUNIT_EXPECT_EQ(test, rx->ooo, 0ull);

	/* a multi-PSN range (READ request) and one overlapping nxt */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1003, 4), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->nxt, 1007u);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1005, 4), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->nxt, 1009u);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1011, 2), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1010, 3), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 1011, 2), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, rx->nxt, 1009u);
}

static void mrc_rx_holes(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 64, 0);

	mrc_rx_accept(rx, 0, 3);				/* nxt 3 */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 5, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->ooo, 1ull);
	KUNIT_EXPECT_EQ(test, rx->holes, 1ull);		/* 3-4 */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 7, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 2ull);		/* 6 */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 8, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 2ull);		/* run grows */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 6, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 2ull);		/* fills one */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 4, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 2ull);		/* shrinks one */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 6, 1), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, rx->ooo, 5ull);
	KUNIT_EXPECT_EQ(test, rx->nxt, 3u);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 3, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->nxt, 9u);
	KUNIT_EXPECT_EQ(test, rx->ooo, 5ull);

	/* splitting a gap opens one more */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 20, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 3ull);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 15, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->holes, 4ull);
	KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, 14));
	KUNIT_EXPECT_TRUE(test, mrc_rx_has(rx, 15));
	KUNIT_EXPECT_TRUE(test, mrc_rx_has(rx, 8));
}

static void mrc_rx_beyond_window(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 64, 100);

	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 164, 1), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 160, 6), MRC_RX_BEYOND);
	KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, 160));	/* nothing marked */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 99, 66), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 100, 65), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 0x70000000, 1), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, rx->ooo, 0ull);
	KUNIT_EXPECT_EQ(test, rx->holes, 0ull);
	/* the last PSN of the window is fine */
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 163, 1), MRC_RX_NEW);
	KUNIT_EXPECT_TRUE(test, mrc_rx_has(rx, 163));
	KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, 164));
	/* a whole window at once */
	rx = mrc_rt_new(test, 64, 100);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 100, 64), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, rx->nxt, 164u);
}

/* what a request is, before anything is marked */
static void mrc_rx_classify_ranges(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 64, 0xffffffe0);
	u32 nxt, psn;

	mrc_rx_accept(rx, 0xffffffe0, 64);		/* nxt 0x20, across 0 */
	nxt = rx->nxt;
	KUNIT_EXPECT_EQ(test, nxt, 0x20u);
	mrc_rx_accept(rx, nxt + 5, 2);			/* SACKed 0x25, 0x26 */
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 5, 2), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 4, 2), MRC_RX_NEW);
	/* the nbits PSNs below nxt are duplicates, older ones are not */
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 1, 1), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 64, 64), MRC_RX_DUP);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 65, 1), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 65, 10), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 0x40000000, 1),
			MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 0x80000000, 1),
			MRC_RX_BEYOND);
	/* far ahead, its end half the space round to "before" nxt */
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 0x7ffffff9, 20),
			MRC_RX_BEYOND);
	/* a range from below nxt into the window is new if a PSN is */
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 3, 4), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 3, 3), MRC_RX_DUP);
	/* the end of the window, and past it; empty and oversized ranges */
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 63, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 64, 1), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt + 60, 5), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt, 0), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt, 65), MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_classify(rx, nxt - 1, 0x800000),
			MRC_RX_BEYOND);
	/* NEW is always a range mrc_rx_accept() takes */
	for (psn = nxt - 70; psn != nxt + 70; psn++)
		if (mrc_rx_classify(rx, psn, 3) == MRC_RX_NEW)
			KUNIT_EXPECT_NE(test, mrc_rx_accept(rx, psn, 3),
					MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, rx->nxt, nxt + 72);	/* every PSN up to it taken */
}

/* nxt clears what it passes, so bits serve PSN + nbits later */
static void mrc_rx_window_slides(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 64, 0xffffffc0);
	u32 i, round;

	for (round = 0; round < 4; round++) {
		u32 base = rx->nxt;

		/* a window's worth in reverse order: all but the last ooo */
		for (i = 64; i-- > 0;)
			KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, base + i, 1),
					MRC_RX_NEW);
		KUNIT_EXPECT_EQ(test, rx->nxt, base + 64);
		KUNIT_EXPECT_EQ(test, rx->map[0], 0ull);
		KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, base + 64));
		KUNIT_EXPECT_FALSE(test, mrc_rx_has(rx, base + 127));
	}
	KUNIT_EXPECT_EQ(test, rx->nxt, 0xc0u);
	KUNIT_EXPECT_EQ(test, rx->ooo, 4 * 63ull);
	KUNIT_EXPECT_EQ(test, rx->holes, 4ull);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 0xc0 + 63, 1), MRC_RX_NEW);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 0xc0 + 64, 1), MRC_RX_BEYOND);
}

static void mrc_rx_sack_encode(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 512, 0);
	u64 w[MRC_ACK_MAX_SACKW];

	mrc_rx_accept(rx, 2, 1);	/* bit 1 of word 0 */
	mrc_rx_accept(rx, 64, 1);	/* bit 63 of word 0 */
	mrc_rx_accept(rx, 65, 1);	/* bit 0 of word 1 */
	mrc_rx_accept(rx, 130, 1);	/* bit 1 of word 2 */
	mrc_rx_accept(rx, 300, 1);	/* beyond 256 bits: not reported */
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 3u);
	KUNIT_EXPECT_EQ(test, w[0], 0x8000000000000002ull);
	KUNIT_EXPECT_EQ(test, w[1], 0x1ull);
	KUNIT_EXPECT_EQ(test, w[2], 0x2ull);
	KUNIT_EXPECT_EQ(test, w[3], 0ull);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 2), 2u);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 0), 0u);

	/* trailing zero words are dropped; the last reportable PSN */
	mrc_rx_accept(rx, 0, 2);			/* nxt 3 */
	KUNIT_EXPECT_EQ(test, rx->nxt, 3u);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 2u);
	KUNIT_EXPECT_EQ(test, w[0], 0x8000000000000000ull >> 2 |
			0x8000000000000000ull >> 3);	/* 64, 65 */
	mrc_rx_accept(rx, 3 + 256, 1);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 4u);
	KUNIT_EXPECT_EQ(test, w[3], 0x8000000000000000ull);
	KUNIT_EXPECT_EQ(test, w[2], 0ull);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 3), 2u);
}

/* the bitmap ring wraps inside a word and at the map's end */
static void mrc_rx_sack_ring(struct kunit *test)
{
	struct mrc_rx *rx = mrc_rt_new(test, 128, 0);
	u64 w[MRC_ACK_MAX_SACKW];

	mrc_rx_accept(rx, 0, 100);			/* nxt 100 */
	mrc_rx_accept(rx, 101, 1);			/* bit 0 */
	mrc_rx_accept(rx, 164, 1);			/* bit 63 */
	mrc_rx_accept(rx, 200, 1);			/* word 1 bit 35 */
	mrc_rx_accept(rx, 227, 1);			/* window end */
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 2u);
	KUNIT_EXPECT_EQ(test, w[0], 0x8000000000000001ull);
	KUNIT_EXPECT_EQ(test, w[1], 1ull << 35 | 1ull << 62);
	KUNIT_EXPECT_EQ(test, w[2], 0ull);

	/* a map smaller than one word */
	rx = mrc_rt_new(test, 16, 0xfffffff8);
	mrc_rx_accept(rx, 0xfffffff8 + 3, 1);
	mrc_rx_accept(rx, 0xfffffff8 + 15, 1);
	KUNIT_EXPECT_EQ(test, mrc_rx_accept(rx, 0xfffffff8 + 16, 1),
			MRC_RX_BEYOND);
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 1u);
	KUNIT_EXPECT_EQ(test, w[0], 1ull << 2 | 1ull << 14);
	mrc_rx_accept(rx, 0xfffffff8, 3);		/* nxt 0xfffffffc */
	KUNIT_EXPECT_EQ(test, rx->nxt, 0xfffffffcu);
	mrc_rx_accept(rx, 6, 1);			/* next to 7 (+15) */
	KUNIT_EXPECT_EQ(test, mrc_rx_sack(rx, w, 4), 1u);
	KUNIT_EXPECT_EQ(test, w[0], 1ull << 9 | 1ull << 10);
}

static struct kunit_case mrc_rx_cases[] = {
	KUNIT_CASE(mrc_rx_in_order_and_dups),
	KUNIT_CASE(mrc_rx_holes),
	KUNIT_CASE(mrc_rx_beyond_window),
	KUNIT_CASE(mrc_rx_classify_ranges),
	KUNIT_CASE(mrc_rx_window_slides),
	KUNIT_CASE(mrc_rx_sack_encode),
	KUNIT_CASE(mrc_rx_sack_ring),
	{}
};

static struct kunit_suite mrc_rx_suite = {
	.name = "metaroce_rx",
	.test_cases = mrc_rx_cases,
};

kunit_test_suite(mrc_rx_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* KUnit suite for write-after-write order; included at the end of mrc_wlog.c. */
#include <kunit/test.h>

#define WT_BITS	64

struct wlog_t {
	struct mrc_wlog w;
	struct mrc_wlog_ent ents[WT_BITS];
	struct mrc_rx rx;
	u64 map[WT_BITS / 64];
	struct mrc_piece out[4];
};

static void wt_init(struct wlog_t *t, u32 epsn)
{
	mrc_rx_init(&t->rx, t->map, WT_BITS, epsn);
	mrc_wlog_init(&t->w, t->ents, WT_BITS, epsn);
}

/* a packet arrives: marked received and logged, as the responder does */
static void wt_arrive(struct wlog_t *t, u32 psn, u64 va, u32 rkey, u32 len)
{
	mrc_rx_accept(&t->rx, psn, 1);
	mrc_wlog_record(&t->w, psn, va, rkey, len);
}

/* total bytes of the pieces, and that each lies inside [0, len) */
static u32 wt_sum(struct kunit *test, const struct wlog_t *t, int n, u32 len)
{
	u32 sum = 0;
	int i;

	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_LE(test, t->out[i].off + t->out[i].len, len);
		KUNIT_EXPECT_GT(test, t->out[i].len, 0u);
		sum += t->out[i].len;
	}
	return sum;
}

static void mrc_wlog_in_order(struct kunit *test)
{
	struct wlog_t t;
	int n;

	wt_init(&t, 100);
	/* nothing above 100 yet: the whole payload */
	n = mrc_wlog_pieces(&t.w, &t.rx, 100, 0x1000, 7, 4096, t.out, 4);
	KUNIT_ASSERT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, t.out[0].off, 0u);
	KUNIT_EXPECT_EQ(test, t.out[0].len, 4096u);
	wt_arrive(&t, 100, 0x1000, 7, 4096);
	/* the next WRITE to the same bytes overwrites: it is the newer one */
	n = mrc_wlog_pieces(&t.w, &t.rx, 101, 0x1000, 7, 4096, t.out, 4);
	KUNIT_EXPECT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, t.w.high, 101u);
	/* zero bytes: no pieces */
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 101, 0x1000, 7, 0,
					      t.out, 4), 0);
}

static void mrc_wlog_late_covered(struct kunit *test)
{
	struct wlog_t t;

	wt_init(&t, 10);
	/* PSN 12 (a later WRITE of the same buffer) lands before 10 */
	wt_arrive(&t, 12, 0x2000, 7, 4096);
	KUNIT_EXPECT_EQ(test, t.w.high, 13u);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 10, 0x2000, 7, 4096,
					      t.out, 4), 0);
	/* a larger later write also covers it */
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 11, 0x2800, 7, 1024,
					      t.out, 4), 0);
}

static void mrc_wlog_late_partial(struct kunit *test)
{
	struct wlog_t t;
	int n;

	wt_init(&t, 0);
	/* later writes: the middle, then the head of [0x1000, 0x2000) */
	wt_arrive(&t, 5, 0x1400, 7, 0x100);
	n = mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 0x1000, t.out, 4);
	KUNIT_ASSERT_EQ(test, n, 2);
	KUNIT_EXPECT_EQ(test, wt_sum(test, &t, n, 0x1000), 0xf00u);
	KUNIT_EXPECT_EQ(test, t.out[0].off, 0u);
	KUNIT_EXPECT_EQ(test, t.out[0].len, 0x400u);
	KUNIT_EXPECT_EQ(test, t.out[1].off, 0x500u);
	KUNIT_EXPECT_EQ(test, t.out[1].len, 0xb00u);

	wt_arrive(&t, 3, 0x0f00, 7, 0x200);	/* overlaps the head */
	n = mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 0x1000, t.out, 4);
	KUNIT_ASSERT_EQ(test, n, 2);
	KUNIT_EXPECT_EQ(test, wt_sum(test, &t, n, 0x1000), 0xe00u);
	KUNIT_EXPECT_EQ(test, t.out[0].off, 0x100u);
	KUNIT_EXPECT_EQ(test, t.out[0].len, 0x300u);

	wt_arrive(&t, 4, 0x1f00, 7, 0x400);	/* overlaps the tail */
	n = mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 0x1000, t.out, 4);
	KUNIT_ASSERT_EQ(test, n, 2);
	KUNIT_EXPECT_EQ(test, wt_sum(test, &t, n, 0x1000), 0xd00u);
	KUNIT_EXPECT_EQ(test, t.out[1].off, 0x500u);
	KUNIT_EXPECT_EQ(test, t.out[1].len, 0xa00u);

	/* PSN 4 is newer than 3: only PSN 5's bytes are cut from it */
	n = mrc_wlog_pieces(&t.w, &t.rx, 4, 0x1f00, 7, 0x400, t.out, 4);
	KUNIT_EXPECT_EQ(test, n, 1);
	KUNIT_EXPECT_EQ(test, wt_sum(test, &t, n, 0x400), 0x400u);
}

static void mrc_wlog_ignores(struct kunit *test)
{
	struct wlog_t t;

	wt_init(&t, 0);
	/* another key, a SEND (len 0), a PSN logged but not received */
	wt_arrive(&t, 2, 0x1000, 8, 4096);
	wt_arrive(&t, 3, 0, 0, 0);
	mrc_wlog_record(&t.w, 4, 0x1000, 7, 4096);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 4096,
					      t.out, 4), 1);
	KUNIT_EXPECT_EQ(test, t.out[0].len, 4096u);
	/* disjoint ranges of the same key, just below and just above */
	wt_arrive(&t, 5, 0x0800, 7, 0x800);
	wt_arrive(&t, 6, 0x2000, 7, 0x800);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 4096,
					      t.out, 4), 1);
	KUNIT_EXPECT_EQ(test, t.out[0].len, 4096u);
}

static void mrc_wlog_too_many(struct kunit *test)
{
	struct wlog_t t;
	int i;

	wt_init(&t, 0);
	/* four small later writes inside one packet need five pieces */
	for (i = 0; i < 4; i++)
		wt_arrive(&t, 10 + i, 0x1100 + i * 0x200, 7, 0x10);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 4096,
					      t.out, 4), -1);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 1, 0x1000, 7, 0x500,
					      t.out, 4), 3);
}

static void mrc_wlog_psn_wrap(struct kunit *test)
{
	struct wlog_t t;

	wt_init(&t, 0xfffffffe);
	wt_arrive(&t, 0x00000001, 0x4000, 3, 4096);	/* after the wrap */
	KUNIT_EXPECT_EQ(test, t.w.high, 2u);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 0xfffffffe, 0x4000,
					      3, 4096, t.out, 4), 0);
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 0xffffffff, 0x4000,
					      3, 4096, t.out, 4), 0);
	/* an older arrival does not move high back */
	wt_arrive(&t, 0xffffffff, 0x4000, 3, 4096);
	KUNIT_EXPECT_EQ(test, t.w.high, 2u);
}

/* a READ_REQ arrives: its PSNs marked received, its segments logged */
static void wt_read(struct wlog_t *t, u32 psn, u64 va, u32 rkey, u32 len,
		    u8 shift)
{
	u32 n = mrc_seg_count(len, shift);

	mrc_wlog_record_read(&t->w, &t->rx, psn, n, va, rkey, len, shift);
	mrc_rx_accept(&t->rx, psn, n);
}

/* a resend of READ PSNs matches only what those PSNs first asked for */
static void mrc_wlog_read_resend(struct kunit *test)
{
	struct wlog_t t;

	wt_init(&t, 0xfffffff0);
	/* 10 segments of 1 KiB and a 100-byte tail, PSNs 0xfffffff0..+10 */
	wt_read(&t, 0xfffffff0, 0x10000, 7, 10 * 1024 + 100, 10);
	KUNIT_EXPECT_EQ(test, t.rx.nxt, 0xfffffffbu);
	/* the whole READ again, and any run of its segments */
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff0,
						    11, 0x10000, 7,
						    10 * 1024 + 100, 10));
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff3,
						    8, 0x10c00, 7,
						    7 * 1024 + 100, 10));
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff2,
						    2, 0x10800, 7, 2048, 10));
	/* another key, address, length or segment size */
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff2,
						     2, 0x10800, 8, 2048, 10));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff2,
						     2, 0x10000, 7, 2048, 10));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff3,
						     8, 0x10c00, 7,
						     8 * 1024, 10));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff0,
						     6, 0x10000, 7,
						     6 * 1024, 9));
	/* the tail alone; more PSNs than the length has; past the READ */
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffffa,
						    1, 0x12800, 7, 100, 10));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffff2,
						     3, 0x10800, 7, 2048, 10));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffffb,
						     1, 0x12c00, 7, 100, 10));
	/* PSNs of a WRITE are no READ's */
	wt_arrive(&t, 0xfffffffb, 0x10000, 7, 1024);
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffffb,
						     1, 0x10000, 7, 1024, 10));
	/* a READ PSN's record never cuts a WRITE: only PSN 0xfffffffb does */
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 0xffffffef, 0x10000,
					      7, 4096, t.out, 4), 1);
	/* a zero-length READ */
	wt_read(&t, 0xfffffffc, 0x20000, 9, 0, 12);
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffffc,
						    1, 0x20000, 9, 0, 12));
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 0xfffffffc,
						     1, 0x20000, 9, 1, 12));
}

/* a record lasts until a PSN WT_BITS above it arrives, and no longer */
static void mrc_wlog_read_overwritten(struct kunit *test)
{
	struct wlog_t t;
	u32 psn;

	wt_init(&t, 100);
	wt_read(&t, 100, 0x4000, 3, 4096, 12);
	for (psn = 101; psn != 100 + WT_BITS; psn++)
		wt_arrive(&t, psn, 0, 0, 0);
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 100, 1,
						    0x4000, 3, 4096, 12));
	/* PSN 164 takes PSN 100's entry, with the same fields */
	wt_read(&t, 100 + WT_BITS, 0x4000, 3, 4096, 12);
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 100, 1,
						     0x4000, 3, 4096, 12));
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 164, 1,
						    0x4000, 3, 4096, 12));
	/* not received yet: nothing to match */
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 165, 1,
						     0x4000, 3, 4096, 12));
}

/* a READ range over a WRITE that arrived early keeps the WRITE's record */
static void mrc_wlog_read_keeps_write(struct kunit *test)
{
	struct wlog_t t;

	wt_init(&t, 100);
	wt_arrive(&t, 105, 0x8000, 5, 1024);
	wt_read(&t, 100, 0x4000, 3, 8 * 4096, 12);	/* PSNs 100..107 */
	/* a late WRITE at 99 would have been cut by PSN 105's bytes */
	KUNIT_EXPECT_EQ(test, mrc_wlog_pieces(&t.w, &t.rx, 99, 0x8000, 5, 2048,
					      t.out, 4), 1);
	KUNIT_EXPECT_EQ(test, t.out[0].off, 1024u);
	/* and PSN 105 is no READ PSN to match */
	KUNIT_EXPECT_FALSE(test, mrc_wlog_read_match(&t.w, &t.rx, 100, 8,
						     0x4000, 3, 8 * 4096, 12));
	KUNIT_EXPECT_TRUE(test, mrc_wlog_read_match(&t.w, &t.rx, 100, 5,
						    0x4000, 3, 8 * 4096, 12));
}

static struct kunit_case mrc_wlog_cases[] = {
	KUNIT_CASE(mrc_wlog_in_order),
	KUNIT_CASE(mrc_wlog_late_covered),
	KUNIT_CASE(mrc_wlog_late_partial),
	KUNIT_CASE(mrc_wlog_ignores),
	KUNIT_CASE(mrc_wlog_too_many),
	KUNIT_CASE(mrc_wlog_psn_wrap),
	KUNIT_CASE(mrc_wlog_read_resend),
	KUNIT_CASE(mrc_wlog_read_overwritten),
	KUNIT_CASE(mrc_wlog_read_keeps_write),
	{}
};

static struct kunit_suite mrc_wlog_suite = {
	.name = "metaroce_write_order",
	.test_cases = mrc_wlog_cases,
};

kunit_test_suite(mrc_wlog_suite);

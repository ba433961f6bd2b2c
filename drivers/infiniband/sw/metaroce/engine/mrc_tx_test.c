// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suite for the sender scoreboard; included at the end of mrc_tx.c.
 *
 * Every scoreboard gets fixed tunables (RTO 1000 us initial and minimum,
 * 64000 us maximum, reo_wnd_min 50 us, tlp_min 200 us) so the expected
 * times below can be computed by hand; times are explicit, never the
 * wall clock.
 */
#include <kunit/test.h>

#include <metaroce/mrc_wire.h>

#define NOTS	0xffffffffu	/* ACK without a usable timestamp */

static struct mrc_tx *mrc_tt_new(struct kunit *test, u32 nslots, u32 isn)
{
	struct mrc_tx *tx = kunit_kzalloc(test, sizeof(*tx), GFP_KERNEL);
	struct mrc_tx_slot *slots = kunit_kcalloc(test, nslots, sizeof(*slots),
						  GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, tx);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, slots);
	mrc_tx_init(tx, slots, nslots, isn, nslots);
	mrc_rtt_init(&tx->rtt, 1000, 1000, 64000);
	tx->reo_wnd_min = 50;
	tx->reo_wnd = 50;
	tx->tlp_min = 200;
	return tx;
}

/* send @n single-PSN packets, the first at @t0, @step us apart */
static void mrc_tt_send(struct kunit *test, struct mrc_tx *tx, u32 n, u32 t0,
			u32 step)
{
	u32 i;

	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->nxt, 1, t0 + i * step,
						  (u16)i, 0), 0);
}

/* an ACK for cum plus the listed PSNs as SACK bits */
static int mrc_tt_ack(struct mrc_tx *tx, u32 now, u32 cum, u32 ts_echo,
		      const u32 *sacked, u32 nsacked, struct mrc_ack_result *r)
{
	u64 words[MRC_ACK_MAX_SACKW] = { 0 };
	struct mrc_ack_info a = {
		.cum = cum,
		.sack = words,
		.ts_echo = ts_echo == NOTS ? 0 : ts_echo,
		.ts_valid = ts_echo != NOTS,
	};
	u32 i, off;

	for (i = 0; i < nsacked; i++) {
		off = sacked[i] - cum - 1;
		if (off >= 64 * MRC_ACK_MAX_SACKW)
			continue;
		words[off / 64] |= 1ull << (off % 64);
		if (off / 64 + 1 > a.sack_words)
			a.sack_words = off / 64 + 1;
	}
	return mrc_tx_ack(tx, &a, now, r);
}

/* one PSN sent at 0 and ACKed at @rtt: srtt = min_rtt = @rtt */
static void mrc_tt_warm(struct kunit *test, struct mrc_tx *tx, u32 rtt)
{
	struct mrc_ack_result r;

	mrc_tt_send(test, tx, 1, 0, 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, rtt, tx->nxt, 0, NULL, 0, &r), 0);
	KUNIT_ASSERT_EQ(test, tx->rtt.srtt, rtt);
	KUNIT_ASSERT_EQ(test, mrc_tx_outstanding(tx), 0u);
}

static bool mrc_tt_acked(const struct mrc_tx *tx, u32 psn)
{
	return mrc_psn_lt(psn, tx->una) ||
	       (mrc_tx_slot(tx, psn)->flags & MRC_TXS_ACKED);
}

static void mrc_tx_send_rules(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 8, 100);
	u32 d;

	KUNIT_EXPECT_EQ(test, tx->una, 100u);
	KUNIT_EXPECT_EQ(test, tx->nxt, 100u);
	KUNIT_EXPECT_EQ(test, tx->wnd, 8u);
	KUNIT_EXPECT_FALSE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 5000, 7, 1), MRC_TXT_NONE);

	/* new data starts at nxt, covers >= 1 PSN, takes only NEED_RESP */
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 101, 1, 5, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 100, 0, 5, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 100, 1, 5, 0, MRC_TXS_LOST),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 100, 9, 5, 0, MRC_TXS_NEED_RESP),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, tx->nxt, 100u);

	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 100, 1, 5, 7, 0), 0);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 5u);	/* first after idle */
	KUNIT_EXPECT_EQ(test, tx->last_send_ts, 5u);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 100)->entropy, 7);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 100)->xmits, 1);
	mrc_tt_send(test, tx, 5, 6, 1);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 5u);
	/* a READ of 2 fills the last slots; nothing more fits */
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 106, 3, 20, 0, MRC_TXS_NEED_RESP),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 106, 2, 20, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 8u);
	KUNIT_EXPECT_FALSE(test, mrc_tx_can_send(tx, 1));
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 108, 1, 21, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 8u);

	/* retransmissions: only outstanding ranges */
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 103, 1, 30, 9, 0), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 103)->xmits, 2);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 103)->xmit_ts, 30u);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 103)->entropy, 9);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 103)->flags, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 106, 2, 31, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 107)->flags, MRC_TXS_NEED_RESP);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 99, 1, 32, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 107, 2, 32, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 100, 9, 32, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 0x80000000u, 1, 32, 0, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, tx->last_send_ts, 31u);

	/* xmits saturates */
	for (d = 0; d < 300; d++)
		mrc_tx_sent(tx, 100, 1, 40, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 100)->xmits, 255);

	/* the window is clamped to the slots */
	mrc_tx_init(tx, tx->slots, 8, 0, 1000);
	KUNIT_EXPECT_EQ(test, tx->wnd, 8u);
}

static void mrc_tx_ack_everything(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;
	u32 d;

	mrc_tt_send(test, tx, 10, 0, 1);
	tx->timeouts = 2;
	tx->rtt.backoff = 2;
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 100, 10, 9, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 10u);
	KUNIT_EXPECT_TRUE(test, r.una_advanced);
	KUNIT_EXPECT_FALSE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 91u);
	KUNIT_EXPECT_EQ(test, tx->una, 10u);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, 0u);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 100u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 91u);
	KUNIT_EXPECT_TRUE(test, tx->rack.valid);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 9u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 91u);
	KUNIT_EXPECT_FALSE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 100000), 0u);

	/* the same ACK again is a no-op */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 200, 10, 9, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_FALSE(test, r.una_advanced);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 100u);

	/* idle, then new data: progress restarts at the first send */
	mrc_tt_send(test, tx, 1, 5000, 0);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 5000u);
}

static void mrc_tx_ack_beyond_nxt(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0xfffffffe);
	struct mrc_ack_result r;

	mrc_tt_send(test, tx, 4, 0, 1);		/* 0xfffffffe .. 1 */
	r.newly_acked = 77;
	KUNIT_EXPECT_EQ(test, mrc_tt_ack(tx, 100, 3, 0, NULL, 0, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 0xfffffffeu);
	KUNIT_EXPECT_FALSE(test, mrc_tt_acked(tx, 0xfffffffe));
	KUNIT_EXPECT_FALSE(test, tx->rack.valid);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 0u);
	KUNIT_EXPECT_EQ(test, mrc_tt_ack(tx, 100, 2, 0, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 4u);
	KUNIT_EXPECT_EQ(test, tx->una, 2u);
}

static void mrc_tx_stale_ack(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;
	static const u32 s8[] = { 8 };
	static const u32 s4[] = { 4 };

	mrc_tt_send(test, tx, 10, 0, 1);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 100, 6, 5, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->una, 6u);

	/* an older ACK overtaken by the one above still carries a SACK */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 110, 3, 8, s8, 1, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	/* but no RTT sample: only its SACK bits are used */
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 95u);
	KUNIT_EXPECT_FALSE(test, r.una_advanced);
	KUNIT_EXPECT_EQ(test, tx->una, 6u);
	KUNIT_EXPECT_TRUE(test, mrc_tt_acked(tx, 8));
	KUNIT_EXPECT_FALSE(test, mrc_tt_acked(tx, 7));
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 110u);

	/* nothing new: no progress, no sample, no reset */
	tx->timeouts = 2;
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 120, 3, 8, s8, 1, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 2u);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 110u);
	/* SACK bits below una are old news */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 130, 2, 8, s4, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 6u);
}

static void mrc_tx_sack_decode(struct kunit *test)
{
	static const u32 sacked[] = { 1, 64, 65, 128, 200, 256 };
	struct mrc_tx *tx = mrc_tt_new(test, 512, 0);
	u64 words[MRC_ACK_MAX_SACKW];
	struct mrc_ack_info a = { .sack = words };
	struct mrc_ack_result r;
	u32 psn, i;
	bool want;

	mrc_tt_send(test, tx, 300, 0, 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 100, 0, NOTS, sacked,
					 ARRAY_SIZE(sacked), &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, (u32)ARRAY_SIZE(sacked));
	KUNIT_EXPECT_EQ(test, tx->una, 0u);
	for (psn = 0; psn < 300; psn++) {
		want = false;
		for (i = 0; i < ARRAY_SIZE(sacked); i++)
			want |= sacked[i] == psn;
		KUNIT_EXPECT_EQ_MSG(test, mrc_tt_acked(tx, psn), want,
				    "psn %u", psn);
	}

	/* SACK bits past nxt are ignored, not marked */
	tx = mrc_tt_new(test, 8, 0);
	mrc_tt_send(test, tx, 5, 0, 0);
	memset(words, 0xff, sizeof(words));
	a.cum = 0;
	a.sack_words = MRC_ACK_MAX_SACKW;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 100, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 4u);
	KUNIT_EXPECT_EQ(test, tx->una, 0u);
	for (psn = 5; psn < 8; psn++)		/* slots never used */
		KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, psn)->flags, 0);
	a.cum = 5;
	a.sack_words = 0;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 101, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_EQ(test, tx->una, 5u);
	/* slots are reused cleanly */
	mrc_tt_send(test, tx, 8, 200, 1);
	for (psn = 5; psn < 13; psn++)
		KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, psn)->flags, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_sent(tx, 13, 1, 300, 0, 0), -EINVAL);
}

/* receiver bitmap -> SACK words -> sender scoreboard, several windows */
static void mrc_tx_sack_roundtrip(struct kunit *test)
{
	u64 *map = kunit_kcalloc(test, 4, sizeof(u64), GFP_KERNEL);
	struct mrc_rx *rx = kunit_kzalloc(test, sizeof(*rx), GFP_KERNEL);
	const u32 isn = 0xffffff00;
	struct mrc_tx *tx = mrc_tt_new(test, 512, isn);
	u64 words[MRC_ACK_MAX_SACKW];
	struct mrc_ack_info a = { .sack = words };
	struct mrc_ack_result r;
	u32 seed = 12345, round, psn, base, i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, map);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, rx);
	mrc_rx_init(rx, map, 256, isn);
	for (round = 0; round < 8; round++) {
		/* fill the send window */
		while (mrc_tx_outstanding(tx) < 300)
			mrc_tt_send(test, tx, 1, round * 1000, 0);
		/* a random 60 % of the receive window arrives */
		base = rx->nxt;
		for (i = 0; i < 256; i++) {
			seed = seed * 1103515245 + 12345;
			if ((seed >> 16) % 10 < 6)
				mrc_rx_accept(rx, base + i, 1);
		}
		a.cum = rx->nxt;
		a.sack_words = mrc_rx_sack(rx, words, MRC_ACK_MAX_SACKW);
		KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, round * 1000 + 500,
						 &r), 0);
		KUNIT_EXPECT_EQ(test, tx->una, rx->nxt);
		for (psn = tx->una; psn != tx->nxt; psn++)
			KUNIT_EXPECT_EQ_MSG(test, mrc_tt_acked(tx, psn),
					    mrc_rx_has(rx, psn),
					    "round %u psn %#x", round, psn);
	}
	KUNIT_EXPECT_NE(test, rx->nxt, isn);
}

static void mrc_tx_need_resp(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;
	u32 psn;

	mrc_tt_send(test, tx, 1, 0, 0);				/* WRITE 0 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 4, 1, 0, MRC_TXS_NEED_RESP),
			0);					/* READ 1-4 */
	mrc_tt_send(test, tx, 1, 2, 0);				/* WRITE 5 */

	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 100, 6, 2, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 2u);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 4u);
	KUNIT_EXPECT_EQ(test, tx->una, 1u);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 101, 6, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 0u);
	for (psn = 1; psn <= 4; psn++)
		KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, psn)->flags,
				MRC_TXS_NEED_RESP | MRC_TXS_REQ_SEEN);

	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 1, 110, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_TRUE(test, r.una_advanced);
	KUNIT_EXPECT_EQ(test, tx->una, 2u);
	KUNIT_EXPECT_TRUE(test, tx->rresp.valid);
	KUNIT_EXPECT_EQ(test, tx->rresp.rtt, 109u);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 1, 111, &r), 1);	/* below una */
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 5, 111, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 6, 111, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 3, 120, &r), 0);
	KUNIT_EXPECT_FALSE(test, r.una_advanced);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 3, 121, &r), 1);	/* duplicate */
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 2, 130, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->una, 4u);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 4, 140, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->una, 6u);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);

	/* a response may come before the ACK of its request */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 6, 1, 200, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 6, 300, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->una, 7u);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 301, 7, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
}

/* reordering shorter than rack_rtt + reo_wnd costs nothing */
static void mrc_tx_reordering_tolerated(struct kunit *test)
{
	static const u32 s6[] = { 6 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d;

	mrc_tt_warm(test, tx, 100);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 50u);	/* max(100 / 4, 50) */
	mrc_tt_send(test, tx, 10, 1000, 1);		/* PSN 1-10 */

	/* 6 overtakes 1-5 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1110, 1, 1005, s6, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 105u);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 6u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 105u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1110), 0u);
	KUNIT_EXPECT_TRUE(test, tx->reo_armed);
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 1000u + 105 + 50);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1155u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1154, 7, 0), MRC_TXT_NONE);

	/* the rest arrives inside the window */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1154, 11, 1009, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 9u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1154), 0u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1155, 7, 0), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);
	KUNIT_EXPECT_EQ(test, tx->rack_marked, 0u);
	KUNIT_EXPECT_FALSE(test, mrc_tx_deadline(tx, &d));
}

/*
 * PSN 3 is lost: found exactly rack_rtt + reo_wnd after it was sent, never
 * counted as a timeout; then its retransmission is lost too.
 */
static void mrc_tx_loss_and_lost_retransmission(struct kunit *test)
{
	static const u32 s4_10[] = { 4, 5, 6, 7, 8, 9, 10 };
	static const u32 s4_12[] = { 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d, psn;

	mrc_tt_warm(test, tx, 100);
	mrc_tt_send(test, tx, 10, 1000, 1);		/* PSN 1-10 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1110, 3, 1009, s4_10,
					 ARRAY_SIZE(s4_10), &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 9u);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 10u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 101u);
	/* srtt (7 * 100 + 101) / 8 = 100, so TLP would be due at 1310 */
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1110), 0u);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1002u + 101 + 50);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1152, 0, 1), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1153, 0, 1), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
	KUNIT_EXPECT_EQ(test, tx->rack_marked, 1u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);	/* not a timeout */
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, 0u);
	psn = tx->una;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 3u);
	psn = 4;
	KUNIT_EXPECT_FALSE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 3)->flags,
			MRC_TXS_LOST | MRC_TXS_RACK);

	/* retransmit 3, send 11 and 12; only 11 and 12 arrive */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 3, 1, 1153, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);
	mrc_tt_send(test, tx, 2, 1160, 1);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1265, 3, 1161, s4_12,
					 ARRAY_SIZE(s4_12), &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 2u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 104u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1265), 0u);
	/* the copy of 3 went on entropy 0, as did 11: 11's RTT is the wait */
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 1153u + 105 + 50);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1307, 0, 1), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1308, 0, 1), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 3)->xmits, 2);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);

	/* third copy arrives one RTT later: genuine, not spurious */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 3, 1, 1307, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1410, 13, 1307, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_EQ(test, tx->una, 13u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u);
}

/* with probes off (the peer may hold ACKs) the tail waits for the RTO */
static void mrc_tx_tlp_off(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d;

	mrc_tt_warm(test, tx, 100);
	mrc_tt_send(test, tx, 5, 1000, 1);		/* PSN 1-5 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1104, 4, 1002, NULL, 0, &r), 0);
	tx->tlp_off = true;
	/* no probe at 1304: the RTO, 1104 + 100 + max(4 rttvar, 1000) */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 2204u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1304, 7, 0), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, tx->tlps, 0u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2204, 7, 0), MRC_TXT_RTO);
	KUNIT_EXPECT_EQ(test, tx->tlps, 0u);
}

/* the last packets are lost: a tail-loss probe, then the RTO */
static void mrc_tx_tail_loss(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d, psn;

	mrc_tt_warm(test, tx, 100);
	mrc_tt_send(test, tx, 5, 1000, 1);		/* PSN 1-5 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1104, 4, 1002, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1104), 0u);
	KUNIT_EXPECT_FALSE(test, tx->reo_armed);	/* nothing sent before 3 */
	/* TLP: 1104 + max(2 * 100, 200); RTO: 1104 + 100 + max(4 rttvar, 1000) */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1304u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1303, 7, 0), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1304, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 5u);
	KUNIT_EXPECT_TRUE(test, tx->tlp_out);
	KUNIT_EXPECT_EQ(test, tx->tlps, 1u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 5, 1, 1304, 0, 0), 0);

	/* one probe only; the RTO counts from the head's transmission */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 2204u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2203, 7, 0), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2204, 7, 0), MRC_TXT_RTO);
	/* F-RTO: only the oldest PSN is resent at first */
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
	KUNIT_EXPECT_TRUE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 1u);
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, 1u);
	KUNIT_EXPECT_EQ(test, tx->rtos, 1u);
	KUNIT_EXPECT_FALSE(test, tx->tlp_out);
	psn = 0;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 4u);
	psn++;
	KUNIT_EXPECT_FALSE(test, mrc_tx_next_lost(tx, &psn));
	/* not lost; still the probe's copy, for a DUP report to judge */
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 5)->flags, MRC_TXS_TIMER);

	/* after an RTO no probe until progress; the next RTO is doubled */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 2, 2204, 0, 0), 0);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 2204u + 2200);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 2310, 6, 2204, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 2u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, 0u);
	KUNIT_EXPECT_FALSE(test, mrc_tx_deadline(tx, &d));
}

static void mrc_tx_retry_accounting(struct kunit *test)
{
	static const u32 rto_at[] = { 1000, 3000, 7000, 15000, 31000, 63000 };
	struct mrc_tx *tx = mrc_tt_new(test, 8, 0);
	struct mrc_ack_result r;
	u32 i, d;

	/* retry_cnt 2 and 5 ms: the third RTO at 7 ms passes both */
	mrc_tt_send(test, tx, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 999, 2, 5000), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1000, 2, 5000), MRC_TXT_RTO);
	mrc_tx_sent(tx, 0, 1, 1000, 0, 0);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 3000u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3000, 2, 5000), MRC_TXT_RTO);
	mrc_tx_sent(tx, 0, 1, 3000, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 7000, 2, 5000), MRC_TXT_FAIL);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 3u);

	/* retry count passed but not the time: keep going until both are */
	tx = mrc_tt_new(test, 8, 0);
	mrc_tt_send(test, tx, 1, 0, 0);
	for (i = 0; i < ARRAY_SIZE(rto_at); i++) {
		KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
		KUNIT_EXPECT_EQ(test, d, rto_at[i]);
		KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, d, 2, 100000),
				MRC_TXT_RTO);
		KUNIT_EXPECT_EQ(test, tx->timeouts, i + 1);
		mrc_tx_sent(tx, 0, 1, d, 0, 0);
	}
	/* rto << 6 = 64000 = rto_max */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 63000u + 64000);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, d, 2, 100000), MRC_TXT_FAIL);

	/* time passed but not the retry count */
	tx = mrc_tt_new(test, 8, 0);
	mrc_tt_send(test, tx, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1000, 7, 100), MRC_TXT_RTO);

	/* fail_after 0: never fail; the backoff stops at its cap */
	tx = mrc_tt_new(test, 8, 0);
	mrc_tt_send(test, tx, 1, 0, 0);
	for (i = 0; i < 40; i++) {
		KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
		KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, d, 0, 0), MRC_TXT_RTO);
		mrc_tx_sent(tx, 0, 1, d, 0, 0);
	}
	KUNIT_EXPECT_EQ(test, tx->timeouts, 40u);
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, (u32)MRC_RTO_MAX_BACKOFF);
	KUNIT_EXPECT_EQ(test, mrc_rtt_rto(&tx->rtt), 64000u);

	/* only consecutive timeouts count: progress resets the count */
	tx = mrc_tt_new(test, 8, 0);
	mrc_tt_send(test, tx, 2, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1000, 1, 1), MRC_TXT_RTO);
	mrc_tx_sent(tx, 0, 2, 1000, 0, 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1100, 1, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.backoff, 0u);
	KUNIT_EXPECT_EQ(test, tx->progress_ts, 1100u);
	/* RTO from the progress: 1100 + 1000 */
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2099, 1, 1), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2100, 1, 1), MRC_TXT_RTO);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 1u);
	mrc_tx_sent(tx, 1, 1, 2100, 0, 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 4100, 1, 1), MRC_TXT_FAIL);
}

/*
 * A slow first RTT sample gives a large RTO; capped at the IB timeout
 * (4 ms here), retry_cnt 3 fails after 4 expiries, 16 ms of silence,
 * not after 15 x the RTO.
 */
static void mrc_tx_fail_within_ib_timeout(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 8, 0);
	enum mrc_tx_timer_action a;
	u32 i, d, t = 0;

	mrc_rtt_init(&tx->rtt, 1000, 1000, 4000000);
	mrc_rtt_sample(&tx->rtt, 100000);	/* rto 300 ms */
	mrc_rtt_set_max(&tx->rtt, 4000);
	mrc_tt_send(test, tx, 1, 0, 0);
	for (i = 0; i < 8; i++) {
		KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
		KUNIT_EXPECT_EQ(test, d, t + 4000);
		t = d;
		a = mrc_tx_on_timer(tx, t, 3, 4 * 4000);
		if (a == MRC_TXT_FAIL)
			break;
		KUNIT_EXPECT_EQ(test, a, MRC_TXT_RTO);
		mrc_tx_sent(tx, 0, 1, t, 0, 0);
	}
	KUNIT_EXPECT_EQ(test, a, MRC_TXT_FAIL);
	KUNIT_EXPECT_EQ(test, t, 16000u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 4u);
}

/*
 * A long READ: its PSNs wait for responses, which stream in for longer
 * than an RTO; later requests being ACKed must not mark them lost.
 */
static void mrc_tx_long_read(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 k, psn;

	mrc_tt_warm(test, tx, 100);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 30, 1000, 0,
					  MRC_TXS_NEED_RESP), 0);
	mrc_tt_send(test, tx, 1, 1001, 0);		/* WRITE 31 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1101, 32, 1001, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_EQ(test, tx->una, 1u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1101), 0u);
	KUNIT_EXPECT_FALSE(test, tx->reo_armed);

	/* responses every 80 us for 2.3 ms, PSN 10 missing */
	for (k = 1; k <= 30; k++) {
		u32 now = 1100 + 80 * k;

		KUNIT_EXPECT_EQ_MSG(test, mrc_tx_on_timer(tx, now - 1, 7, 0),
				    MRC_TXT_NONE, "before response %u", k);
		if (k == 10)
			continue;
		KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, k, now, &r), 0);
		if (k == 11) {
			/* 10 is judged against responses only */
			KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, now), 0u);
			KUNIT_EXPECT_TRUE(test, tx->reo_armed);
			KUNIT_EXPECT_EQ(test, tx->reo_deadline, now + 50);
			KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, now + 50),
					1u);
			psn = 0;
			KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
			KUNIT_EXPECT_EQ(test, psn, 10u);
			/* the caller asks for segment 10 again */
			KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 10, 1, now + 50,
							  0, 0), 0);
		}
	}
	KUNIT_EXPECT_EQ(test, tx->rtos, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 10u);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 10, 3600, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);
	KUNIT_EXPECT_EQ(test, tx->rack_marked, 1u);
}

/* the window counts PSNs in flight: a hole does not hold the sender back */
static void mrc_tx_inflight_window(struct kunit *test)
{
	static const u32 s123[] = { 1, 2, 3 }, s567[] = { 5, 6, 7 };
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;

	KUNIT_EXPECT_EQ(test, tx->range, 16u);
	tx->wnd = 4;
	mrc_tt_send(test, tx, 4, 100, 1);		/* PSN 0-3 */
	KUNIT_EXPECT_FALSE(test, mrc_tx_can_send(tx, 1));
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 200, 0, NOTS, s123, 3, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->sacked, 3u);
	KUNIT_EXPECT_EQ(test, mrc_tx_inflight(tx), 1u);
	KUNIT_EXPECT_TRUE(test, mrc_tx_can_send(tx, 3));
	KUNIT_EXPECT_FALSE(test, mrc_tx_can_send(tx, 4));
	/* a PSN marked lost has left the network until it is resent */
	KUNIT_EXPECT_TRUE(test, mrc_tx_mark_lost(tx, 0));
	KUNIT_EXPECT_EQ(test, mrc_tx_inflight(tx), 0u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 0, 1, 300, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_inflight(tx), 1u);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 400, 4, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->sacked, 0u);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);

	/* the range still bounds how far past a hole the sender goes */
	tx->range = 6;
	mrc_tt_send(test, tx, 4, 500, 1);		/* PSN 4-7 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 600, 4, NOTS, s567, 3, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_inflight(tx), 1u);
	KUNIT_EXPECT_TRUE(test, mrc_tx_can_send(tx, 2));
	KUNIT_EXPECT_FALSE(test, mrc_tx_can_send(tx, 3));
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 700, 8, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->sacked, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 8u);
}

/*
 * Per-path RACK: a PSN whose path is slower than the one that delivered
 * a later PSN waits for its own path's RTT; a later PSN delivered on its
 * own path judges it with that path's RTT.
 */
static void mrc_tx_rack_per_path(struct kunit *test)
{
	static const u32 s3[] = { 3 }, s34[] = { 3, 4 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;

	mrc_tt_warm(test, tx, 100);			/* reo_wnd 50 */
	tx->tlp_min = 5000;				/* keep probes out */
	/* entropy 5 is slow: 800 us */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 1000, 5, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1800, 2, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->paths[5].ref.rtt, 800u);
	KUNIT_EXPECT_EQ(test, tx->paths[5].port, 5);

	/* 2 on entropy 5, 3 on entropy 6; 3 arrives after 100 us */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, 3000, 5, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 3, 1, 3010, 6, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3110, 2, NOTS, s3, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 100u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 3110), 0u);
	/* not rack_rtt + reo_wnd (3150): entropy 5's 800 us + 50 */
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 3000u + 800 + 50);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3150, 0, 1), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);

	/* 4, sent after 2 on entropy 5, arrives in 110 us: 2 is lost */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 3020, 5, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3130, 2, NOTS, s34, 2, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->paths[5].ref.psn, 4u);
	KUNIT_EXPECT_EQ(test, tx->paths[5].ref.rtt, 110u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 3130), 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 3000u + 110 + 50);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3159, 0, 1), MRC_TXT_NONE);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3160, 0, 1), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 2)->flags,
			MRC_TXS_LOST | MRC_TXS_RACK);
}

/* a port that shares a table entry with another is judged as before */
static void mrc_tx_rack_path_tag(struct kunit *test)
{
	static const u32 s3[] = { 3 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;

	mrc_tt_warm(test, tx, 100);
	tx->tlp_min = 5000;
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 1000, 5, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1800, 2, NOTS, NULL, 0, &r), 0);
	/* 2 on 5 + MRC_TX_PATHS: entropy 5's slow RTT is not its own */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, 2000, 5 + MRC_TX_PATHS, 0),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 3, 1, 2010, 6, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 2110, 2, NOTS, s3, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 2110), 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 2000u + 100 + 50);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2150, 0, 1), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
}

/* reo_wnd's cap: srtt, plus reo_cap_var x rttvar when asked */
static void mrc_tx_reo_cap(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);

	mrc_tt_warm(test, tx, 1000);		/* srtt 1000, rttvar 500 */
	KUNIT_ASSERT_EQ(test, tx->rtt.rttvar, 500u);
	tx->reo_steps = MRC_REO_STEPS_MAX;
	mrc_tx_update_reo_wnd(tx);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 1000u);
	tx->reo_cap_var = 4;
	mrc_tx_update_reo_wnd(tx);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 3000u);
	/* below the cap the steps decide: 250 us each */
	tx->reo_steps = 8;
	mrc_tx_update_reo_wnd(tx);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 2000u);
}

/* a retransmission the original beat: reo_wnd grows, later decays */
static void mrc_tx_spurious_adapts(struct kunit *test)
{
	static const u32 s3[] = { 3 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 k, t, due, a;

	mrc_tt_warm(test, tx, 1000);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 250u);	/* 1000 / 4 */
	mrc_tt_send(test, tx, 3, 2000, 1);		/* PSN 1-3 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3002, 1, 2002, s3, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 3002), 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 2000u + 1000 + 250);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3251, 7, 0), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, tx->lost, 2u);		/* 1 and 2 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 2, 3251, 9, 0), 0);
	/* the originals arrive 49 us after the retransmission */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3300, 4, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 2u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 2u);
	/*
	 * The path the loss was charged to, not the resend's: the first PSN
	 * of the repair only (a READ repair resends a run, charged once).
	 */
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 1u);
	KUNIT_EXPECT_EQ(test, r.uncharge[0], 0);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 2u);	/* once per ACK */
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 500u);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 3u);	/* ambiguous: unused */

	/* a probe that turns out unneeded says nothing about reordering */
	mrc_tt_send(test, tx, 1, 4000, 0);		/* PSN 4 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 5000, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 5010, 5, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->spurious, 3u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 2u);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 0u);	/* nothing was charged */

	/* MRC_REO_PERSIST genuine recoveries bring it back */
	for (k = 0; k < MRC_REO_PERSIST; k++) {
		t = 10000 + 10000 * k;
		a = tx->nxt;
		mrc_tt_send(test, tx, 2, t, 1);
		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, t + 1001, a, NOTS,
						 (u32[]){ a + 1 }, 1, &r), 0);
		KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, t + 1001), 0u);
		due = t + 1000 + tx->reo_wnd;
		KUNIT_EXPECT_EQ(test, tx->reo_deadline, due);
		KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, due, 7, 0),
				MRC_TXT_RETX);
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, a, 1, due, 0, 0), 0);
		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, due + 1000, a + 2, NOTS,
						 NULL, 0, &r), 0);
		KUNIT_EXPECT_EQ(test, tx->reo_steps, k + 1 < MRC_REO_PERSIST ?
				2u : 1u);
	}
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 250u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 3u);
}

/*
 * Resends for RACK losses whose originals arrive too late for the timing
 * test: the receiver's DUP ACKs name the PSNs, and each loss charge is
 * reported back once, for the path the original went out on.
 */
static void mrc_tx_dup_uncharges(struct kunit *test)
{
	static const u32 s3[] = { 3 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_info a = { .cum = 4, .dup = true };
	struct mrc_ack_result r;

	mrc_tt_warm(test, tx, 1000);
	mrc_tt_send(test, tx, 3, 2000, 1);		/* PSN 1-3 on 0, 1, 2 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3002, 1, 2002, s3, 1, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 3251, 7, 0), MRC_TXT_RETX);
	KUNIT_ASSERT_EQ(test, tx->lost, 2u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 3251, 9, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, 3251, 9, 0), 0);
	/* the originals arrive 2 ms after the resends: not judged spurious */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 5300, 4, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 2u);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 0u);
	/* then the resends, duplicates now */
	a.dup_psn = 2;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 5400, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 1u);
	KUNIT_EXPECT_EQ(test, r.uncharge[0], 1);
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 5410, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 0u);	/* once only */
	a.dup_psn = 1;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 5420, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 1u);
	KUNIT_EXPECT_EQ(test, r.uncharge[0], 0);
	/* PSN 3 was never resent; 40 was never sent */
	a.dup_psn = 3;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 5430, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 0u);
	a.dup_psn = 40;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 5440, &r), 0);
	KUNIT_EXPECT_EQ(test, r.n_uncharge, 0u);
	/* one per resend reported: the repeat, 3 and 40 name none */
	KUNIT_EXPECT_EQ(test, tx->spurious, 2u);
}

/*
 * F-RTO set-up: @n PSNs from 1 after a 100 us warm-up, the probe skipped,
 * the RTO fired and PSN 1 resent; *@d is the RTO's time.
 */
static struct mrc_tx *mrc_tt_rto(struct kunit *test, u32 n, u32 *d)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);

	mrc_tt_warm(test, tx, 100);
	mrc_tt_send(test, tx, n, 1000, 0);
	tx->tlp_out = true;
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, d));
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, *d, 7, 0), MRC_TXT_RTO);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, *d, 0, 0), 0);
	return tx;
}

/* F-RTO: a slow path is not an empty one */
static void mrc_tx_frto_spurious_and_real(struct kunit *test)
{
	struct mrc_ack_result r;
	struct mrc_tx *tx;
	u32 psn, d, t;

	/* the originals of 2 and 3 arrive: the RTO was spurious */
	tx = mrc_tt_rto(test, 8, &d);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 50, 0, NOTS,
					 (u32[]){ 2, 3 }, 2, &r), 0);
	KUNIT_EXPECT_FALSE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->spurious_rtos, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);		/* 4-8 not resent */

	/*
	 * Only the resent PSN comes back.  That is a real outage, or a
	 * queue whose head was 1's original: nothing is resent until a PSN
	 * sent once arrives or the RTO expires again.
	 */
	tx = mrc_tt_rto(test, 8, &d);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 150, 2, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_TRUE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->spurious_rtos, 0u);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);
	/* progress re-arms the probe, then the RTO: 2-8 resent */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &t));
	KUNIT_EXPECT_EQ(test, t, d + 150 + 200);
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, t, 7, 0), MRC_TXT_PROBE);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->probe_psn, 1, t, 0, 0), 0);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &t));
	KUNIT_EXPECT_EQ(test, t, d + 150 + 100 + 1000);	/* srtt + rto_min */
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, t, 7, 0), MRC_TXT_RTO);
	KUNIT_EXPECT_FALSE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->lost, 7u);		/* 2-8 resent now */
	psn = 0;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 2u);

	/* the head's original came first, then the rest: spurious */
	tx = mrc_tt_rto(test, 8, &d);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 150, 2, NOTS, NULL, 0, &r), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 160, 5, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_FALSE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->spurious_rtos, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);

	/*
	 * Only the resent PSN is ACKed, but sooner than min_rtt after the
	 * resend: its original arrived (the ACKs were held up, say by a
	 * stalled CPU), so the RTO was spurious and 2-8 are not resent.
	 */
	tx = mrc_tt_rto(test, 8, &d);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 50, 2, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_FALSE(test, tx->frto);
	KUNIT_EXPECT_EQ(test, tx->spurious, 1u);
	KUNIT_EXPECT_EQ(test, tx->spurious_rtos, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);

	/* no ACK at all after the first RTO: the second resends everything */
	tx = mrc_tt_rto(test, 4, &d);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_RTO);
	KUNIT_EXPECT_EQ(test, tx->lost, 4u);
	KUNIT_EXPECT_EQ(test, tx->timeouts, 2u);
}

/*
 * The receiver's duplicate report widens the reordering window, once per
 * resend it names; one naming no resend (a forged or stray DUP flag, a
 * packet the network duplicated) changes nothing.
 */
static void mrc_tx_dup_report_adapts(struct kunit *test)
{
	static const u32 never[] = { 1, 0, 40, 0x80000001 };
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	struct mrc_ack_info a = { .dup = true };
	u32 k, psn, t;

	mrc_tt_warm(test, tx, 1000);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 250u);
	mrc_tt_send(test, tx, 1, 2000, 0);		/* PSN 1, sent once */
	a.cum = tx->nxt;
	for (k = 0; k < ARRAY_SIZE(never); k++) {
		a.dup_psn = never[k];
		KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 3000 + k, &r), 0);
	}
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u);
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 250u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);

	for (k = 1; k <= 3; k++) {
		t = 4000 * k;
		psn = tx->nxt;
		mrc_tt_send(test, tx, 1, t, 0);
		/* resent; delivered min_rtt after the resend: not by timing */
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, psn, 1, t + 100, 1, 0), 0);
		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, t + 1100, tx->nxt, NOTS,
						 NULL, 0, &r), 0);
		KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u << (k - 1));
		a.cum = tx->nxt;
		a.dup_psn = psn;
		KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, t + 1200, &r), 0);
		KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u << k);
		/* the same resend reported again */
		KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, t + 1300, &r), 0);
		KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u << k);
	}
	KUNIT_EXPECT_EQ(test, tx->spurious, 3u);
	/* 250 x 8 = 2000, but never beyond srtt (1000) */
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 1000u);
	/* an ordinary ACK leaves it alone */
	mrc_tt_send(test, tx, 1, 9000, 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 10000, tx->nxt, NOTS, NULL, 0, &r),
			0);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 8u);
}

/*
 * RFC 5961 style ACK window: cum must lie in [una - MRC_ACK_LAG_MAX, nxt].
 * Outside it the ACK is refused and changes nothing; behind una (stale)
 * only its SACK bits count, not its timestamp nor its DUP report.
 */
static void mrc_tx_ack_window(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	u64 sack = 1ull << 2;				/* cum + 3 */
	struct mrc_ack_info a = {
		.sack = &sack, .sack_words = 1, .ts_valid = true,
		.dup = true, .dup_psn = 1,
	};
	struct mrc_ack_result r;

	mrc_tt_warm(test, tx, 100);			/* una = nxt = 1 */
	mrc_tt_send(test, tx, 4, 1000, 1);		/* PSN 1-4 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 1100, 9, 0), 0);

	/* one PSN too far behind una, then far behind: refused */
	a.cum = 1 - MRC_ACK_LAG_MAX - 1;
	a.sack_words = 0;
	KUNIT_EXPECT_EQ(test, mrc_tx_ack(tx, &a, 1200, &r), -EINVAL);
	a.cum = 1 - 0x40000000;
	KUNIT_EXPECT_EQ(test, mrc_tx_ack(tx, &a, 1210, &r), -EINVAL);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u);
	KUNIT_EXPECT_EQ(test, tx->una, 1u);

	/* at the bound: accepted, stale, its DUP report ignored */
	a.cum = 1 - MRC_ACK_LAG_MAX;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 1220, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);

	/* stale, in reach: the SACK bit delivers PSN 3, nothing else counts */
	a.cum = 0;
	a.sack_words = 1;
	a.ts_echo = 1000;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 1300, &r), 0);
	KUNIT_EXPECT_TRUE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_TRUE(test, mrc_tt_acked(tx, 3));
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u);

	/* the same fields in an ACK that is not stale do count */
	a.cum = 5;
	a.sack_words = 0;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 1300, &r), 0);
	KUNIT_EXPECT_FALSE(test, r.stale);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 3u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 300u);
	KUNIT_EXPECT_EQ(test, tx->spurious, 1u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 2u);
	/* cum == nxt is the top of the window; nxt + 1 is beyond */
	a.cum = 6;
	KUNIT_EXPECT_EQ(test, mrc_tx_ack(tx, &a, 1400, &r), -EINVAL);
}

/* a forged timestamp echo yields a sample of rto_max at most */
static void mrc_tx_rtt_clamped(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);	/* rto_max 64000 */
	struct mrc_ack_result r;
	u32 i, t;

	mrc_tt_warm(test, tx, 1000);
	mrc_tt_send(test, tx, 1, 2000, 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 3000, 2, 3000 - 0x70000000, NULL,
					 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 64000u);
	KUNIT_EXPECT_EQ(test, tx->rtt.latest, 64000u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 8875u);	/* (7000 + 64000) / 8 */
	KUNIT_EXPECT_EQ(test, tx->rtt.min_rtt, 1000u);
	KUNIT_EXPECT_EQ(test, tx->rtt.rto, 64000u);
	KUNIT_EXPECT_LE(test, tx->reo_wnd, tx->rtt.srtt);
	/* repeated forgeries take srtt to rto_max, not beyond */
	for (i = 0; i < 200; i++) {
		t = 10000 + 100 * i;
		mrc_tt_send(test, tx, 1, t, 0);
		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, t + 50, tx->nxt,
						 t - 0x7fff0000, NULL, 0, &r),
				0);
		KUNIT_ASSERT_EQ(test, r.rtt_sample, 64000u);
	}
	KUNIT_EXPECT_LE(test, tx->rtt.srtt, 64000u + 4);
	KUNIT_EXPECT_GE(test, tx->rtt.srtt, 64000u - 3);
	KUNIT_EXPECT_LE(test, tx->reo_wnd, 64000u + 4);
}

/* the whole story across the 32-bit PSN wrap */
static void mrc_tx_psn_wrap(struct kunit *test)
{
	static const u32 sacked[] = { 0xffffffff, 0, 3 };
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0xfffffffa);
	struct mrc_ack_result r;
	u32 psn;

	mrc_tt_send(test, tx, 12, 1000, 1);		/* ...fa to 5 */
	KUNIT_EXPECT_EQ(test, tx->nxt, 6u);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1100, 0xfffffffd, NOTS, sacked,
					 ARRAY_SIZE(sacked), &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 6u);
	KUNIT_EXPECT_EQ(test, tx->una, 0xfffffffdu);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 3u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 91u);
	/* fd, fe, 1, 2 were sent before 3: lost after 91 + 50 us */
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1143), 0u);
	KUNIT_EXPECT_EQ(test, tx->reo_deadline, 1144u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 1149), 4u);
	KUNIT_EXPECT_EQ(test, tx->lost, 4u);
	psn = tx->una;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 0xfffffffdu);
	psn++;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 0xfffffffeu);
	psn++;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 1u);
	psn++;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 2u);
	psn++;
	KUNIT_EXPECT_FALSE(test, mrc_tx_next_lost(tx, &psn));
	/* 4 and 5 were sent after 3: not lost */
	KUNIT_EXPECT_EQ(test, mrc_tx_slot(tx, 4)->flags, 0);

	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1200, 6, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 6u);
	KUNIT_EXPECT_EQ(test, tx->lost, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 6u);
}

static void mrc_tx_timestamps(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_info a = { .ts_valid = true };
	struct mrc_ack_result r;

	mrc_tt_send(test, tx, 4, 0, 0);
	/* the receiver held the ACK 50 us */
	a.cum = 1;
	a.ts_echo = 0;
	a.delay = 50;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 150, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 100u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	/* a delay longer than the round trip is bogus: no sample */
	a.cum = 2;
	a.delay = 500;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 160, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	/* an echo from the future: no sample */
	a.cum = 3;
	a.delay = 0;
	a.ts_echo = 1000;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 170, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	/* delay equal to the round trip: 0 counts as 1 us */
	a.cum = 4;
	a.delay = 180;
	a.ts_echo = 0;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 180, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 1u);
	KUNIT_EXPECT_EQ(test, tx->rtt.min_rtt, 1u);
	KUNIT_EXPECT_EQ(test, tx->rtt.latest, 1u);
	/* reo_wnd follows min_rtt but keeps its floor */
	KUNIT_EXPECT_EQ(test, tx->reo_wnd, 50u);
}

/*
 * @psn is resent at @t; the ACK of its original comes 200 us later and
 * covers everything sent, then the responder reports the resend as a
 * duplicate.
 */
static void mrc_tt_late_dup(struct kunit *test, struct mrc_tx *tx, u32 psn,
			    u32 t)
{
	struct mrc_ack_info a = { .cum = tx->nxt, .dup = true, .dup_psn = psn };
	struct mrc_ack_result r;

	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, psn, 1, t, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, t + 200, tx->nxt, NOTS, NULL, 0,
					 &r), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, t + 250, &r), 0);
}

/*
 * Timer resends that prove spurious (a DUP report, or an ACK sooner than
 * min_rtt after the resend) widen the probe timeout and the RTO's margin;
 * MRC_REO_PERSIST needed ones narrow them again.
 */
static void mrc_tx_timer_margin_adapts(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_info a = { .dup = true };
	struct mrc_ack_result r;
	u32 d, i, t;

	mrc_tt_warm(test, tx, 100);			/* RTO 100 + 1000 */
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 1u);

	/* a probe; the original arrives, then the probe as a duplicate */
	mrc_tt_send(test, tx, 1, 1000, 1);		/* PSN 1 */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1200u);
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, 1200, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);		/* marked by the engine */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 1200, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1400, 2, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 1u);	/* not judged by timing */
	KUNIT_EXPECT_EQ(test, tx->tmo_recov, 1u);
	a.cum = 2;
	a.dup_psn = 1;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 1450, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 2u);
	KUNIT_EXPECT_EQ(test, tx->tmo_recov, 0u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 1u);
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, 1460, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 2u);	/* once per resend */

	/* probe 2 x 200, RTO 100 + 2 x 1000 */
	mrc_tt_send(test, tx, 1, 2000, 1);		/* PSN 2 */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 2400u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 2399, 7, 0), MRC_TXT_NONE);
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, 2400, 7, 0), MRC_TXT_PROBE);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, 2400, 0, 0), 0);
	/* delivered 20 us after the probe: the original did it */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 2420, 3, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 4u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 2u);

	/* no probes (a grant of one packet): the RTO, 100 + 4 x 1000 */
	tx->tlp_off = true;
	mrc_tt_send(test, tx, 1, 3000, 1);		/* PSN 3 */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 7100u);
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, 7100, 7, 0), MRC_TXT_RTO);
	mrc_tt_late_dup(test, tx, 3, 7100);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 8u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 3u);

	/* a RACK resend reported twice is no timer's doing */
	tx->tlp_off = false;
	mrc_tt_send(test, tx, 2, 8000, 1);		/* PSN 4, 5 */
	mrc_tt_send(test, tx, 1, 8200, 1);		/* PSN 6 */
	{
		static const u32 s6[] = { 6 };

		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 8300, 4, NOTS, s6, 1,
						 &r), 0);
	}
	KUNIT_ASSERT_EQ(test, mrc_tx_detect_loss(tx, 8300), 2u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 5, 1, 8300, 0, 0), 0);
	mrc_tt_late_dup(test, tx, 4, 8300);
	/*
	 * A spurious resend, not a timer's: four so far (the second report
	 * of PSN 1's probe did not count).
	 */
	KUNIT_EXPECT_EQ(test, tx->spurious, 4u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 3u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 8u);	/* at most */

	/* needed probes: after MRC_REO_PERSIST of them, half the margin */
	for (i = 0; i < MRC_REO_PERSIST; i++) {
		t = 10000 + i * 10000;
		mrc_tt_send(test, tx, 1, t, 1);
		KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
		KUNIT_EXPECT_EQ(test, d, t + 8 * 200);
		KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0),
				MRC_TXT_PROBE);
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->probe_psn, 1, d, 0,
						  0), 0);
		KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 300, tx->nxt, NOTS,
						 NULL, 0, &r), 0);
	}
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 4u);
	KUNIT_EXPECT_EQ(test, tx->tmo_recov, 0u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 3u);

	/* the caller's ceiling: a spurious probe no longer widens them */
	tx->tmo_steps_max = 4;
	t = 200000;
	mrc_tt_send(test, tx, 1, t, 1);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, t + 4 * 200);
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_PROBE);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->probe_psn, 1, d, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, d + 10, tx->nxt, NOTS, NULL, 0,
					 &r), 0);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 4u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 4u);
}

/*
 * Issue 44: a probe whose DUP report is the first news of its PSN found an
 * ACK the network lost; it was needed and leaves the timer factor alone,
 * so that the next tail loss is probed as soon as before.  With HELD the
 * receiver still owed that ACK: the probe was early and widens it.
 */
static void mrc_tx_lost_ack_probe_needed(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_info a = { .dup = true };
	struct mrc_ack_result r;
	u32 d, i, t;

	mrc_tt_warm(test, tx, 100);
	for (i = 0; i < 4; i++) {
		t = 1000 + i * 1000;
		/* a tail packet arrives, its ACK is lost; the probe resends it */
		mrc_tt_send(test, tx, 1, t, 1);
		KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
		KUNIT_EXPECT_EQ(test, d, t + 200);
		KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0),
				MRC_TXT_PROBE);
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->probe_psn, 1, d, 0, 0),
				0);
		/* one RTT later: the duplicate's ACK delivers it */
		a.cum = tx->nxt;
		a.dup_psn = tx->probe_psn;
		KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, d + 100, &r), 0);
		KUNIT_EXPECT_EQ(test, r.newly_acked, 1u);
		KUNIT_EXPECT_EQ(test, tx->una, tx->nxt);
	}
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 0u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 1u);
	KUNIT_EXPECT_EQ(test, tx->tmo_recov, 4u);
	/* a DUP report counted once per resend all the same */
	KUNIT_EXPECT_EQ(test, tx->spurious, 4u);

	/* the receiver held the ACK (credit rotation): the probe was early */
	t = 10000;
	mrc_tt_send(test, tx, 1, t, 1);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_PROBE);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, tx->probe_psn, 1, d, 0, 0), 0);
	a.cum = tx->nxt;
	a.dup_psn = tx->probe_psn;
	a.held = true;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, d + 100, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 1u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 2u);
	KUNIT_EXPECT_EQ(test, tx->tmo_recov, 0u);
}

/* issue 50: a READ/atomic QP times its requests' ACKs, not responses */
static void mrc_tx_req_rtt(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;

	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 0, 4, 10, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 20, 0, MRC_TXS_NEED_RESP),
			0);
	/* the requests' ACK: sample 110 - 10 - 0 */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 110, 4, 10, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 4u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 100u);
	KUNIT_EXPECT_EQ(test, r.cc_rtt, 100u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	/* responses: the latest srtt, whatever their own timing */
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 1, 900, &r), 0);
	KUNIT_EXPECT_EQ(test, r.cc_rtt, 100u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);

	/* a resent request's ACK is ambiguous (Karn): no sample */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 1000, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1300, 5, 1000, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 1u);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	/* nor does its response feed the window */
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 4, 1400, &r), 0);
	KUNIT_EXPECT_EQ(test, r.cc_rtt, 0u);
	/* an ACK showing nothing new yields nothing */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1500, 5, 1400, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
}

/*
 * issue 50: a response whose request no ACK showed (the responder let the
 * response stand for it) times the request, once per request, and not
 * after a resend that may have held it
 */
static void mrc_tx_resp_rtt(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;

	/* a lone atomic, answered at 110 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 0, 1, 10, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 0, 110, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 100u);
	KUNIT_EXPECT_EQ(test, r.cc_rtt, 100u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 100u);
	KUNIT_EXPECT_EQ(test, tx->una, 1u);

	/* a READ of 3 PSNs: its first response times it, the others not */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 3, 200, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 2, 330, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 130u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 104u);	/* (7 x 100 + 130) / 8 */
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 1, 340, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, r.cc_rtt, 104u);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 3, 350, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->una, 4u);

	/* 5 waits behind 4, lost and resent at 700: neither response times */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 400, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 5, 1, 410, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 700, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 4, 800, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 5, 805, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
	KUNIT_EXPECT_EQ(test, tx->rtt.srtt, 104u);
	/* nothing left outstanding that the resend may have held */
	KUNIT_EXPECT_FALSE(test, tx->resent);

	/* a request sent after the resend is timed again */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 6, 1, 900, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 6, 1004, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 104u);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);

	/* an ACK timed the request first: its response does not */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 7, 1, 1100, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1200, 8, 1100, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 100u);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 7, 1900, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);

	/*
	 * 9 sent behind 8: its response waited for 8's at the responder,
	 * which is no path delay; only the lone 8 is timed
	 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 8, 1, 2000, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 9, 1, 2010, 0, MRC_TXS_NEED_RESP),
			0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 8, 2100, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 100u);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 9, 2300, &r), 0);
	KUNIT_EXPECT_EQ(test, r.rtt_sample, 0u);
}

/* issue 50: a lost request behind ACKed ones is found by RACK, not the RTO */
static void mrc_tx_req_rack(struct kunit *test)
{
	static const u32 s123[] = { 1, 2, 3 };
	struct mrc_tx *tx = mrc_tt_new(test, 16, 0);
	struct mrc_ack_result r;
	u32 d, i, psn;

	for (i = 0; i < 4; i++)		/* atomics 0-3, 10 us apart */
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, i, 1, 10 + 10 * i, (u16)i,
						  MRC_TXS_NEED_RESP), 0);
	/* 0 lost: the responder serves in order, 1-3 are only ACKed */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 140, 0, 40, s123, 3, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 3u);
	KUNIT_EXPECT_EQ(test, r.newly_acked, 0u);
	/* a time reference, not a delivery */
	KUNIT_EXPECT_FALSE(test, r.una_advanced);
	KUNIT_EXPECT_TRUE(test, tx->rack.valid);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 3u);
	KUNIT_EXPECT_EQ(test, tx->rack.rtt, 100u);
	/* 0 waits rack_rtt + reo_wnd = 100 + 50 from its send at 10 */
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 140), 0u);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 160u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 160, 7, 0), MRC_TXT_RETX);
	KUNIT_EXPECT_EQ(test, tx->rtos, 0u);
	psn = 0;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 0u);
	psn++;
	KUNIT_EXPECT_FALSE(test, mrc_tx_next_lost(tx, &psn));

	/* a resent request's ACK is no reference (Karn) */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 0, 1, 160, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 170, 4,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 400, 4, 160, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->rack.psn, 3u);
	KUNIT_EXPECT_EQ(test, mrc_tx_detect_loss(tx, 400), 0u);
}

/* issue 50: re-asking for a lost response is no spurious resend */
static void mrc_tx_req_dup(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_info a = { .dup = true };
	struct mrc_ack_result r;
	u32 d;

	mrc_tt_warm(test, tx, 100);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, 1000, 0,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1100, 2, 1000, NULL, 0, &r), 0);
	/* the response is lost: the RTO asks again */
	tx->tlp_out = true;
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_RTO);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 1, d, 0, 0), 0);
	/* the responder reports the request as a duplicate */
	a.cum = tx->nxt;
	a.dup_psn = 1;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, d + 100, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->spurious, 0u);
	KUNIT_EXPECT_EQ(test, tx->spurious_tmos, 0u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 1u);
	KUNIT_EXPECT_EQ(test, tx->reo_steps, 1u);
	KUNIT_EXPECT_EQ(test, mrc_tx_resp(tx, 1, d + 110, &r), 0);
	KUNIT_EXPECT_EQ(test, mrc_tx_outstanding(tx), 0u);

	/* once the response came, a DUP for the resend still counts */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, 9000, 0,
					  MRC_TXS_NEED_RESP), 0);
	tx->tlp_out = true;
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_ASSERT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_RTO);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 2, 1, d, 0, 0), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 2, d + 150, &r), 0);
	a.cum = tx->nxt;
	a.dup_psn = 2;
	KUNIT_ASSERT_EQ(test, mrc_tx_ack(tx, &a, d + 160, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->spurious, 1u);
	KUNIT_EXPECT_EQ(test, tx->tmo_steps, 2u);
}

/* issue 50: requests are served in order, so the probe asks for una */
static void mrc_tx_req_probe(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d, i, psn;

	mrc_tt_warm(test, tx, 100);
	for (i = 1; i <= 4; i++)		/* atomics 1-4 */
		KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, i, 1, 1000, (u16)i,
						  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1100, 5, 1000, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 4u);
	/* 1's response is lost, the others wait for it: probe at 1200 */
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1200u);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1200, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 1u);
	psn = 0;
	KUNIT_ASSERT_TRUE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, psn, 1u);
	psn++;
	KUNIT_EXPECT_FALSE(test, mrc_tx_next_lost(tx, &psn));
	KUNIT_EXPECT_EQ(test, tx->rtos, 0u);
}

/*
 * A probe for a READ no ACK has shown arrived asks for the segments sent
 * with it too; once the request is known received, only una.
 */
static void mrc_tx_req_probe_run(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	struct mrc_ack_result r;
	u32 d, psn, n;

	mrc_tt_warm(test, tx, 100);
	/* a READ of segments 1-4, then an atomic 5 sent later */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 4, 1000, 1,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 5, 1, 1001, 2,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1201u);	/* after the last send */
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1201, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 4u);
	for (psn = 0, n = 0; mrc_tx_next_lost(tx, &psn); psn++, n++)
		KUNIT_EXPECT_EQ(test, psn, n + 1);
	KUNIT_EXPECT_EQ(test, n, 4u);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 4, 1201, 3, 0), 0);

	/* this time the request arrived, segments 1-2 came, 3-4 did not */
	KUNIT_ASSERT_EQ(test, mrc_tt_ack(tx, 1351, 6, NOTS, NULL, 0, &r), 0);
	KUNIT_EXPECT_EQ(test, r.newly_seen, 5u);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 1, 1360, &r), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_resp(tx, 2, 1370, &r), 0);
	KUNIT_EXPECT_EQ(test, tx->una, 3u);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, d, 1370u + 200);
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, 1570, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 3u);
	KUNIT_EXPECT_EQ(test, tx->lost, 1u);
	KUNIT_EXPECT_EQ(test, tx->rtos, 0u);
}

/*
 * A probe asks again for the PSNs of the probed request's own packet only:
 * not for another request sent in the same microsecond, on the same
 * entropy or another (that one may well have arrived on its path).
 */
static void mrc_tx_probe_run_one_packet(struct kunit *test)
{
	struct mrc_tx *tx = mrc_tt_new(test, 64, 0);
	u32 d, psn, n;

	mrc_tt_warm(test, tx, 100);
	/* READ 1-3 on port 1; atomic 4 on port 2 and READ 5-6 on port 1 */
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 1, 3, 1000, 1,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 4, 1, 1000, 2,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_EQ(test, mrc_tx_sent(tx, 5, 2, 1000, 1,
					  MRC_TXS_NEED_RESP), 0);
	KUNIT_ASSERT_TRUE(test, mrc_tx_deadline(tx, &d));
	KUNIT_EXPECT_EQ(test, mrc_tx_on_timer(tx, d, 7, 0), MRC_TXT_PROBE);
	KUNIT_EXPECT_EQ(test, tx->probe_psn, 1u);
	KUNIT_EXPECT_EQ(test, tx->lost, 3u);
	for (psn = 0, n = 0; mrc_tx_next_lost(tx, &psn); psn++, n++)
		KUNIT_EXPECT_EQ(test, psn, n + 1);
	KUNIT_EXPECT_EQ(test, n, 3u);
	KUNIT_EXPECT_EQ(test, tx->tlps, 1u);
}

static struct kunit_case mrc_tx_cases[] = {
	KUNIT_CASE(mrc_tx_send_rules),
	KUNIT_CASE(mrc_tx_ack_everything),
	KUNIT_CASE(mrc_tx_ack_beyond_nxt),
	KUNIT_CASE(mrc_tx_stale_ack),
	KUNIT_CASE(mrc_tx_ack_window),
	KUNIT_CASE(mrc_tx_rtt_clamped),
	KUNIT_CASE(mrc_tx_sack_decode),
	KUNIT_CASE(mrc_tx_sack_roundtrip),
	KUNIT_CASE(mrc_tx_need_resp),
	KUNIT_CASE(mrc_tx_reordering_tolerated),
	KUNIT_CASE(mrc_tx_loss_and_lost_retransmission),
	KUNIT_CASE(mrc_tx_tail_loss),
	KUNIT_CASE(mrc_tx_tlp_off),
	KUNIT_CASE(mrc_tx_retry_accounting),
	KUNIT_CASE(mrc_tx_fail_within_ib_timeout),
	KUNIT_CASE(mrc_tx_long_read),
	KUNIT_CASE(mrc_tx_inflight_window),
	KUNIT_CASE(mrc_tx_rack_per_path),
	KUNIT_CASE(mrc_tx_rack_path_tag),
	KUNIT_CASE(mrc_tx_reo_cap),
	KUNIT_CASE(mrc_tx_spurious_adapts),
	KUNIT_CASE(mrc_tx_dup_uncharges),
	KUNIT_CASE(mrc_tx_dup_report_adapts),
	KUNIT_CASE(mrc_tx_lost_ack_probe_needed),
	KUNIT_CASE(mrc_tx_frto_spurious_and_real),
	KUNIT_CASE(mrc_tx_timer_margin_adapts),
	KUNIT_CASE(mrc_tx_psn_wrap),
	KUNIT_CASE(mrc_tx_timestamps),
	KUNIT_CASE(mrc_tx_req_rtt),
	KUNIT_CASE(mrc_tx_resp_rtt),
	KUNIT_CASE(mrc_tx_req_rack),
	KUNIT_CASE(mrc_tx_req_dup),
	KUNIT_CASE(mrc_tx_req_probe),
	KUNIT_CASE(mrc_tx_req_probe_run),
	KUNIT_CASE(mrc_tx_probe_run_one_packet),
	{}
};

static struct kunit_suite mrc_tx_suite = {
	.name = "metaroce_tx",
	.test_cases = mrc_tx_cases,
};

kunit_test_suite(mrc_tx_suite);

#undef NOTS

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit: path selection over entropies.  Included at the end of mrc_path.c.
 */
#include <kunit/test.h>

#define PT_N	16

static void mrc_path_init_distinct_ports(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 i, j;

	mrc_path_init(&p, ents, PT_N, 12345, true);
	KUNIT_EXPECT_EQ(test, p.n, (u32)PT_N);
	for (i = 0; i < PT_N; i++) {
		KUNIT_EXPECT_EQ(test, ents[i].port & ~MRC_PATH_PORT_MASK,
				MRC_PATH_PORT_BASE);
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_NE(test, ents[i].port, ents[j].port);
	}
	/*
	 * A set smaller than the sender's per-path table gets one table
	 * entry per port, also after replacements.
	 */
	for (i = 0; i < PT_N; i += 3)
		mrc_path_replace(&p, ents[i].port);
	for (i = 0; i < PT_N; i++)
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_NE(test, ents[i].port & (MRC_TX_PATHS - 1),
					ents[j].port & (MRC_TX_PATHS - 1));
	/* out-of-range sizes are clamped, never zero */
	mrc_path_init(&p, ents, 0, 1, true);
	KUNIT_EXPECT_EQ(test, p.n, 1u);
}

/* every round uses each entropy exactly once */
static void mrc_path_round_robin_even(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 i, round;

	mrc_path_init(&p, ents, PT_N, 99, true);
	for (round = 0; round < 8; round++)
		for (i = 0; i < PT_N; i++)
			mrc_path_pick(&p, 0, 0);
	for (i = 0; i < PT_N; i++)
		KUNIT_EXPECT_EQ(test, ents[i].pkts, 8u);
	KUNIT_EXPECT_EQ(test, p.switches, 0u);
}

/*
 * One ACK per 4 packets must still sample every entropy over time: the
 * rounds start at random offsets.
 */
static void mrc_path_acks_sample_all(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 i, k;

	mrc_path_init(&p, ents, PT_N, 7, false);
	for (k = 0; k < 4 * PT_N * 16; k++) {
		u16 port = mrc_path_pick(&p, 0, 0);

		if (k % 4 == 3)
			mrc_path_on_ack(&p, port, false, 100, 0);
	}
	for (i = 0; i < PT_N; i++)
		KUNIT_EXPECT_NE(test, ents[i].rtt, 0u);
}

static void mrc_path_avoid(struct kunit *test)
{
	struct mrc_path_ent ents[2];
	struct mrc_path p;
	u32 k;

	mrc_path_init(&p, ents, 2, 5, true);
	for (k = 0; k < 10; k++)
		KUNIT_EXPECT_EQ(test, mrc_path_pick(&p, 0, ents[0].port),
				ents[1].port);
	/* a single path cannot avoid anything */
	mrc_path_init(&p, ents, 1, 5, true);
	KUNIT_EXPECT_EQ(test, mrc_path_pick(&p, 0, ents[0].port), ents[0].port);
}

static u32 pt_count(struct mrc_path *p, u16 port, u32 npick, u32 now)
{
	u32 k, hits = 0;

	for (k = 0; k < npick; k++)
		if (mrc_path_pick(p, now, 0) == port)
			hits++;
	return hits;
}

/* the avoided port is passed over also when a pick crosses into a new round */
static void mrc_path_avoid_round_edge(struct kunit *test)
{
	struct mrc_path_ent ents[3];
	struct mrc_path p;
	u32 k, seed, bad = 0, missed = 0;

	for (seed = 1; seed <= 20; seed++) {
		mrc_path_init(&p, ents, 2, seed, false);
		for (k = 0; k < 50; k++)
			bad += mrc_path_pick(&p, 0, ents[0].port) ==
			       ents[0].port;
		/* one of three skipped: the other two take every turn */
		mrc_path_init(&p, ents, 3, seed, true);
		p.balance_rounds = 0;
		mrc_path_on_ack(&p, ents[2].port, true, 0, 0);
		for (k = 0; k < 50; k++)
			missed += mrc_path_pick(&p, 1, ents[0].port) !=
				  ents[1].port;
	}
	KUNIT_EXPECT_EQ(test, bad, 0u);
	KUNIT_EXPECT_EQ(test, missed, 0u);
}

/* a skip that ended long ago stays ended, also 2^31 us later */
static void mrc_path_skip_ends_for_good(struct kunit *test)
{
	struct mrc_path_ent ents[3];
	struct mrc_path p;
	u32 now;

	mrc_path_init(&p, ents, 3, 3, true);
	p.balance_rounds = 0;
	mrc_path_on_ack(&p, ents[0].port, true, 0, 0);
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[0].port, 6, 10), 0u);
	/* idle, then traffic again: every entropy takes turns */
	now = ents[0].skip_until + 0x80000000u + 500;
	KUNIT_EXPECT_GE(test, pt_count(&p, ents[0].port, 6, now), 1u);
	/* and a skip of the maximal length still runs near its end */
	mrc_path_on_ack(&p, ents[1].port, false, 100, now);
	mrc_path_on_ack(&p, ents[0].port, false, 100 + MRC_PATH_SKIP_MAX_US * 2,
			now);
	KUNIT_EXPECT_TRUE(test, ents[0].skipping);
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[0].port, 6,
				       now + MRC_PATH_SKIP_MAX_US - 1), 0u);
	KUNIT_EXPECT_GE(test, pt_count(&p, ents[0].port, 6,
				       now + MRC_PATH_SKIP_MAX_US), 1u);
}

/* @p's ports that repeat one another, or a table entry while it is small */
static u32 pt_clashes(const struct mrc_path *p)
{
	u32 i, j, n = 0;

	for (i = 0; i < p->n; i++)
		for (j = 0; j < i; j++)
			if (p->ents[i].port == p->ents[j].port ||
			    (p->n < MRC_TX_PATHS &&
			     !((p->ents[i].port ^ p->ents[j].port) &
			       (MRC_TX_PATHS - 1))))
				n++;
	return n;
}

/* large sets too get distinct ports, at creation and after redraws */
static void mrc_path_large_sets_distinct(struct kunit *test)
{
	static const u32 sizes[] = { 33, 48, MRC_TX_PATHS - 1, MRC_PATH_MAX };
	struct mrc_path_ent *ents;
	struct mrc_path p;
	u32 seed, i, k, clashes = 0;

	ents = kunit_kcalloc(test, MRC_PATH_MAX, sizeof(*ents), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ents);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (seed = 1; seed <= 100; seed++) {
			mrc_path_init(&p, ents, sizes[i], seed, true);
			clashes += pt_clashes(&p);
			for (k = 0; k < p.n; k += 2)
				mrc_path_replace(&p, ents[k].port);
			clashes += pt_clashes(&p);
		}
	}
	KUNIT_EXPECT_EQ(test, clashes, 0u);
}

/* a CE echo skips the entropy for skip_us, then it is used again */
static void mrc_path_ce_skips_then_returns(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 marked;
	u32 i;

	mrc_path_init(&p, ents, 4, 11, true);
	p.skip_us = 1000;
	/* skips alone: 40 picks at one instant would end a balance window */
	p.balance_rounds = 0;
	marked = ents[2].port;
	mrc_path_on_ack(&p, marked, true, 0, 100);
	KUNIT_EXPECT_EQ(test, p.ce_echoes, 1u);
	KUNIT_EXPECT_EQ(test, pt_count(&p, marked, 40, 500), 0u);
	KUNIT_EXPECT_GT(test, p.switches, 0u);
	/* after the skip it carries its share again */
	i = pt_count(&p, marked, 40, 1100);
	KUNIT_EXPECT_GE(test, i, 9u);
	KUNIT_EXPECT_LE(test, i, 11u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
}

/* unaware: feedback is counted but changes nothing */
static void mrc_path_unaware_ignores(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 port;
	int k;

	mrc_path_init(&p, ents, 4, 11, false);
	port = ents[1].port;
	for (k = 0; k < 10; k++) {
		mrc_path_on_ack(&p, port, true, 0, 0);
		mrc_path_on_loss(&p, port, 0);
	}
	KUNIT_EXPECT_EQ(test, p.ce_echoes, 10u);
	KUNIT_EXPECT_EQ(test, p.losses, 10u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	KUNIT_EXPECT_EQ(test, pt_count(&p, port, 40, 0), 10u);
}

/*
 * Losses in a row with nothing through the entropy between make it look
 * dead: it is skipped for its probation, then gets a fresh port; the
 * others stay.
 */
static void mrc_path_loss_retires(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	u16 before[4];
	struct mrc_path p;
	u32 i;

	mrc_path_init(&p, ents, 4, 3, true);
	for (i = 0; i < 4; i++)
		before[i] = ents[i].port;
	for (i = 1; i < MRC_PATH_LOSS_RETIRE; i++) {
		mrc_path_on_loss(&p, before[1], 0);
		KUNIT_EXPECT_EQ(test, p.retired, 0u);
		KUNIT_EXPECT_TRUE(test, ents[1].skipping);
	}
	KUNIT_EXPECT_EQ(test, p.loss_sum, MRC_PATH_LOSS_RETIRE - 1);
	mrc_path_on_loss(&p, before[1], 0);
	KUNIT_EXPECT_TRUE(test, ents[1].suspect);
	/* more losses of packets sent before do not extend the probation */
	mrc_path_on_loss(&p, before[1], 1000);
	/* skipped throughout the probation, still the same port */
	KUNIT_EXPECT_EQ(test, pt_count(&p, before[1], 40,
				       MRC_PATH_PROBATION_US - 1), 0u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	KUNIT_EXPECT_EQ(test, ents[1].port, before[1]);
	/*
	 * its end with no proof of life retires it when a round reaches it
	 * (a round visits every entry)
	 */
	pt_count(&p, 0, 4, MRC_PATH_PROBATION_US);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, p.retired_port, before[1]);
	KUNIT_EXPECT_EQ(test, p.retired_why, MRC_PATH_WHY_DEAD);
	KUNIT_EXPECT_FALSE(test, ents[1].suspect);
	KUNIT_EXPECT_EQ(test, p.loss_sum, 0u);
	KUNIT_EXPECT_NE(test, ents[1].port, before[1]);
	KUNIT_EXPECT_FALSE(test, ents[1].skipping);
	KUNIT_EXPECT_EQ(test, ents[1].losses, 0u);
	KUNIT_EXPECT_EQ(test, mrc_path_index(&p, before[1]), -1);
	for (i = 0; i < 4; i++) {
		if (i != 1)
			KUNIT_EXPECT_EQ(test, ents[i].port, before[i]);
	}
	/* feedback for the retired port is ignored */
	mrc_path_on_loss(&p, before[1], 0);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	/* the fresh port is used at once */
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[1].port, 40,
				       MRC_PATH_PROBATION_US), 10u);
}

/*
 * A stall that held one path's packets (a busy host, a queue that paused)
 * looks dead until they arrive: a loss shown spurious during the
 * probation, or an ACK through the entropy, keeps its port and ends the
 * skip at once.
 */
static void mrc_path_stall_survives(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 a, b;
	u32 i;

	mrc_path_init(&p, ents, 4, 5, true);
	a = ents[0].port;
	b = ents[2].port;
	for (i = 0; i < MRC_PATH_LOSS_RETIRE; i++) {
		mrc_path_on_loss(&p, a, 0);
		mrc_path_on_loss(&p, b, 0);
	}
	KUNIT_EXPECT_TRUE(test, ents[0].suspect);
	KUNIT_EXPECT_TRUE(test, ents[2].suspect);
	/* a's held packet arrives: the charge is taken back */
	mrc_path_on_loss_undo(&p, a);
	KUNIT_EXPECT_FALSE(test, ents[0].suspect);
	KUNIT_EXPECT_FALSE(test, ents[0].skipping);
	/* an ACK comes back through b */
	mrc_path_on_ack(&p, b, false, 0, 10);
	KUNIT_EXPECT_FALSE(test, ents[2].suspect);
	KUNIT_EXPECT_FALSE(test, ents[2].skipping);
	/* long after the probation: both kept, both picked again */
	KUNIT_EXPECT_EQ(test, pt_count(&p, a, 40,
				       2 * MRC_PATH_PROBATION_US), 10u);
	KUNIT_EXPECT_EQ(test, pt_count(&p, b, 40,
				       2 * MRC_PATH_PROBATION_US), 10u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	KUNIT_EXPECT_EQ(test, ents[0].port, a);
	KUNIT_EXPECT_EQ(test, ents[2].port, b);
}

/* isolated losses spread over epochs fade instead of retiring */
static void mrc_path_isolated_losses_fade(struct kunit *test)
{
	struct mrc_path_ent ents[1];
	struct mrc_path p;
	u16 port;
	int e;

	mrc_path_init(&p, ents, 1, 3, true);
	port = ents[0].port;
	/* a set of one is never retired by losses: nothing to compare */
	mrc_path_on_loss(&p, port, 0);
	mrc_path_on_loss(&p, port, 0);
	mrc_path_on_loss(&p, port, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	mrc_path_replace(&p, port);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_NE(test, ents[0].port, port);
	port = ents[0].port;
	for (e = 0; e < 5; e++) {
		mrc_path_on_loss(&p, port, 0);
		pt_count(&p, port, MRC_PATH_EPOCH_PKTS, 0);
	}
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, ents[0].port, port);
}

/* persistent marks retire an entropy as losses do */
static void mrc_path_ce_retires(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 port;
	u32 k;

	mrc_path_init(&p, ents, 4, 21, true);
	port = ents[3].port;
	for (k = 0; k < MRC_PATH_CE_RETIRE; k++)
		mrc_path_on_ack(&p, port, true, 0, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, mrc_path_index(&p, port), -1);
}

/* a path whose RTT stands above its peers' is skipped */
static void mrc_path_delay_skip(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u32 i, k;

	mrc_path_init(&p, ents, 4, 8, true);
	p.delay_min_us = 200;
	for (k = 0; k < 8; k++)
		for (i = 0; i < 3; i++)
			mrc_path_on_ack(&p, ents[i].port, false, 1000, 0);
	KUNIT_EXPECT_EQ(test, p.delay_skips, 0u);
	/* 1100 is within min + min/4 */
	mrc_path_on_ack(&p, ents[3].port, false, 1100, 0);
	KUNIT_EXPECT_EQ(test, p.delay_skips, 0u);
	KUNIT_EXPECT_FALSE(test, ents[3].skipping);
	for (k = 0; k < 8; k++)
		mrc_path_on_ack(&p, ents[3].port, false, 5000, 0);
	KUNIT_EXPECT_GT(test, p.delay_skips, 0u);
	KUNIT_EXPECT_TRUE(test, ents[3].skipping);
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[3].port, 30, 10), 0u);
	/* RTT bookkeeping survives a retire (after the probation) */
	for (k = 0; k < MRC_PATH_LOSS_RETIRE; k++)
		mrc_path_on_loss(&p, ents[3].port, 0);
	pt_count(&p, 0, 4, MRC_PATH_PROBATION_US);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, p.rtt_n, 3u);
	KUNIT_EXPECT_EQ(test, ents[3].rtt, 0u);
}

/* a delay skip lasts as long as the excess delay, within its bounds */
static void mrc_path_delay_skip_length(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u32 i;

	mrc_path_init(&p, ents, 4, 8, true);
	p.skip_us = 1000;
	for (i = 0; i < 3; i++)
		mrc_path_on_ack(&p, ents[i].port, false, 1000, 0);
	/* 6000 over a least delayed 1000: skipped for 5000 us */
	mrc_path_on_ack(&p, ents[3].port, false, 6000, 100);
	KUNIT_EXPECT_TRUE(test, ents[3].skipping);
	KUNIT_EXPECT_EQ(test, ents[3].skip_until, 5100u);
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[3].port, 12, 5099), 0u);
	KUNIT_EXPECT_EQ(test, pt_count(&p, ents[3].port, 4, 5100), 1u);
	/* a small excess skips for skip_us, a huge one for the cap */
	mrc_path_on_ack(&p, ents[2].port, false, 3000, 200);	/* -> 1500 */
	KUNIT_EXPECT_EQ(test, ents[2].skip_until, 1200u);
	mrc_path_on_ack(&p, ents[1].port, false, 10000000, 300);
	KUNIT_EXPECT_EQ(test, ents[1].skip_until, 300u + MRC_PATH_SKIP_MAX_US);
}

/*
 * Balance windows: the entropy that sent under half the set's average
 * (skipped most of the window) is redrawn, one per window; an even set
 * is left alone, and a fresh entropy is not judged on a partial window.
 */
static void mrc_path_balance_redraws(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 starved, old[4];
	u32 k, i;

	mrc_path_init(&p, ents, 4, 21, true);
	KUNIT_EXPECT_EQ(test, p.balance_rounds, (u32)MRC_PATH_BALANCE_ROUNDS);
	for (i = 0; i < 4; i++)
		old[i] = ents[i].port;
	/* even use for three windows: nothing is redrawn */
	for (k = 0; k < 3 * 4 * MRC_PATH_BALANCE_ROUNDS; k++)
		mrc_path_pick(&p, 0, 0);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 0u);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ents[i].port, old[i]);

	/* entropy 1 skipped (CE) for all of one window */
	starved = ents[1].port;
	p.skip_us = 1000000;
	mrc_path_on_ack(&p, starved, true, 0, 0);
	for (k = 0; k < 4 * MRC_PATH_BALANCE_ROUNDS; k++)
		KUNIT_EXPECT_NE(test, mrc_path_pick(&p, 10, 0), starved);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 1u);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, p.retired_port, starved);
	KUNIT_EXPECT_EQ(test, p.retired_why, MRC_PATH_WHY_STARVED);
	KUNIT_EXPECT_NE(test, ents[1].port, starved);
	KUNIT_EXPECT_FALSE(test, ents[1].skipping);
	KUNIT_EXPECT_TRUE(test, ents[1].wfresh);
	for (i = 0; i < 4; i++)
		if (i != 1)
			KUNIT_EXPECT_EQ(test, ents[i].port, old[i]);

	/*
	 * Even use with entropy 3 the most delayed: after
	 * MRC_PATH_EXPLORE_WINDOWS quiet windows it is redrawn, to look
	 * for links that carry none of the set.
	 */
	for (i = 0; i < 4; i++) {
		mrc_path_on_ack(&p, ents[i].port, false, i == 3 ? 1100 : 1000,
				20);
		old[i] = ents[i].port;
	}
	for (k = 0; k < (MRC_PATH_EXPLORE_WINDOWS - 1) * 4 *
			MRC_PATH_BALANCE_ROUNDS; k++)
		mrc_path_pick(&p, 2000000, 0);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 1u);
	for (k = 0; k < 4 * MRC_PATH_BALANCE_ROUNDS; k++)
		mrc_path_pick(&p, 2000000, 0);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 2u);
	KUNIT_EXPECT_EQ(test, p.retired_port, old[3]);
	KUNIT_EXPECT_EQ(test, p.retired_why, MRC_PATH_WHY_EXPLORE);
	KUNIT_EXPECT_NE(test, ents[3].port, old[3]);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, ents[i].port, old[i]);

	/* path_aware off: plain round robin, never rebalanced */
	mrc_path_init(&p, ents, 4, 21, false);
	KUNIT_EXPECT_EQ(test, p.balance_rounds, 0u);
}

/*
 * A model fabric: 4 equal links, a hash of the port picks the link, a
 * fixed window of packets in flight.  A draw of 16 ports that puts 7, 4,
 * 2 and 3 of them on the links gives the links 7/16 .. 2/16 of the
 * packets with plain round robin; skips for the excess delay and
 * rebalancing must bring every link within 25 % of an even share.
 */
#define PM_LINKS	4
#define PM_WND		24
#define PM_TPKT		1330	/* us a packet takes on a link */
#define PM_BASE		400	/* us of propagation and ACK return */

static u32 pm_link(u16 port, u32 salt)
{
	u32 h = (port ^ salt) * 0x9e3779b1u;

	h ^= h >> 15;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	return h % PM_LINKS;
}

struct pm_pkt {
	u32 sent;
	u32 done;
	u16 port;
	u8 link;
};

static void pm_run(struct mrc_path *p, u32 salt, u32 dur, u64 *pkts)
{
	struct pm_pkt f[PM_WND];
	u32 link_free[PM_LINKS] = {}, now, n = 0, acks = 0, i;

	for (now = 0; now < dur; now += 10) {
		for (i = 0; i < n; ) {
			if (f[i].done > now) {
				i++;
				continue;
			}
			if (now >= dur / 2)
				pkts[f[i].link]++;
			if (++acks % 4 == 0)
				mrc_path_on_ack(p, f[i].port, false,
						now - f[i].sent, now);
			f[i] = f[--n];
		}
		while (n < PM_WND) {
			u16 port = mrc_path_pick(p, now, 0);
			u8 l = pm_link(port, salt);
			u32 start = link_free[l] > now ? link_free[l] : now;

			link_free[l] = start + PM_TPKT;
			f[n].sent = now;
			f[n].done = link_free[l] + PM_BASE;
			f[n].port = port;
			f[n].link = l;
			n++;
		}
	}
}

static void mrc_path_balances_uneven_draw(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 cnt[PM_LINKS] = {}, salt = 7 * 2654435761u, i;
	u64 pkts[PM_LINKS] = {}, sum = 0;

	mrc_path_init(&p, ents, PT_N, 7 * 7919 + 1, true);
	for (i = 0; i < PT_N; i++)
		cnt[pm_link(ents[i].port, salt)]++;
	/* the draw this test is about */
	KUNIT_ASSERT_EQ(test, cnt[0], 7u);
	KUNIT_ASSERT_EQ(test, cnt[2], 2u);
	pm_run(&p, salt, 6000000, pkts);
	for (i = 0; i < PM_LINKS; i++)
		sum += pkts[i];
	KUNIT_ASSERT_GT(test, sum, 0ull);
	for (i = 0; i < PM_LINKS; i++) {
		KUNIT_EXPECT_GE(test, pkts[i] * 4 * 4, sum * 3);
		KUNIT_EXPECT_LE(test, pkts[i] * 4 * 4, sum * 5);
	}
	/* the second half ran the links at 85 % or more */
	KUNIT_EXPECT_GE(test, sum * PM_TPKT * 100,
			(u64)PM_LINKS * 3000000 * 85);
	KUNIT_EXPECT_GT(test, p.rebalanced, 0u);
	KUNIT_EXPECT_GT(test, p.delay_skips, 0u);
}

/*
 * Most entropies hash onto a busy link: they are the ones skipped, the
 * least delayed one keeps its traffic (an average would have sided with
 * the majority).
 */
static void mrc_path_delay_majority(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u32 i, k;

	mrc_path_init(&p, ents, 4, 8, true);
	p.delay_min_us = 200;
	for (k = 0; k < 8; k++)
		mrc_path_on_ack(&p, ents[3].port, false, 1000, 0);
	for (k = 0; k < 8; k++)
		for (i = 0; i < 3; i++)
			mrc_path_on_ack(&p, ents[i].port, false, 5000, 0);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_TRUE(test, ents[i].skipping);
	KUNIT_EXPECT_FALSE(test, ents[3].skipping);
	KUNIT_EXPECT_GE(test, p.delay_skips, 3u);
}

/* one balance window of 4 entries' picks at @now, after fresh RTTs */
static void pt_skew_window(struct mrc_path *p, const u32 *rtt, u32 now)
{
	u32 i, k;

	/* enough samples that the smoothed RTTs stand near @rtt */
	for (k = 0; k < 16; k++)
		for (i = 0; i < 4; i++)
			mrc_path_on_ack(p, p->ents[i].port, false, rtt[i],
					now);
	for (i = 0; i < 4 * MRC_PATH_BALANCE_ROUNDS; i++)
		mrc_path_pick(p, now + 100000, 0);
}

/*
 * Windows with delay skips whose most delayed entropy stands at twice the
 * least delayed or more: after MRC_PATH_SKEW_WINDOWS of them in a row the
 * most delayed one is redrawn (skips alone leave an idle link a small
 * share).  Delay skips with a narrower spread redraw nothing, nor does a
 * skewed window between even ones.
 */
static void mrc_path_delay_redraw(struct kunit *test)
{
	static const u32 even[4] = { 1000, 1300, 1500, 1900 };
	static const u32 skew[4] = { 2000, 3000, 5000, 1000 };
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 old[4];
	u32 i, k;

	mrc_path_init(&p, ents, 4, 9, true);
	p.delay_min_us = 200;
	/* one window first: fresh entries are not judged */
	for (k = 0; k < 4 * MRC_PATH_BALANCE_ROUNDS; k++)
		mrc_path_pick(&p, 0, 0);
	KUNIT_ASSERT_EQ(test, p.retired, 0u);
	/* skips for delay, but 1900 is under twice 1000: no skew */
	for (k = 0; k < 4; k++)
		pt_skew_window(&p, even, 200000 * k);
	KUNIT_EXPECT_GE(test, p.delay_skips, 4u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	/*
	 * skewed and even by turns: never two in a row (and fewer windows
	 * than MRC_PATH_EXPLORE_WINDOWS, which redraw to explore)
	 */
	mrc_path_init(&p, ents, 4, 9, true);
	p.delay_min_us = 200;
	for (k = 0; k < 4 * MRC_PATH_BALANCE_ROUNDS; k++)
		mrc_path_pick(&p, 0, 0);
	for (i = 0; i < 4; i++)
		old[i] = ents[i].port;
	for (k = 0; k < 4; k++)
		pt_skew_window(&p, k & 1 ? even : skew, 200000 * k);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	KUNIT_EXPECT_EQ(test, p.skew_windows, 0u);
	/* two skewed windows in a row: the most delayed is redrawn */
	pt_skew_window(&p, skew, 2000000);
	KUNIT_EXPECT_EQ(test, p.skew_windows, 1u);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	pt_skew_window(&p, skew, 2200000);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 1u);
	KUNIT_EXPECT_EQ(test, p.retired_port, old[2]);
	KUNIT_EXPECT_EQ(test, p.retired_why, MRC_PATH_WHY_DELAYED);
	KUNIT_EXPECT_NE(test, ents[2].port, old[2]);
	for (i = 0; i < 4; i++)
		if (i != 2)
			KUNIT_EXPECT_EQ(test, ents[i].port, old[i]);
	KUNIT_EXPECT_EQ(test, p.skew_windows, 0u);
	KUNIT_EXPECT_FALSE(test, p.wdelayed);
}

/* everything skipped: still sends, round robin */
static void mrc_path_all_skipped(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u32 i;

	mrc_path_init(&p, ents, 4, 13, true);
	for (i = 0; i < 4; i++)
		mrc_path_on_ack(&p, ents[i].port, true, 0, 0);
	for (i = 0; i < 40; i++)
		mrc_path_pick(&p, 1, 0);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ents[i].pkts, 10u);
}

/*
 * A blackholed path in a 4-path fabric: whatever hashes onto it loses
 * every packet.  Losses retire those entropies and fresh draws land on
 * the good paths three times out of four, so the set drains off it.
 */
static void mrc_path_drains_dead_path(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 k, dead = 0, now = 0;

	mrc_path_init(&p, ents, PT_N, 4242, true);
	for (k = 0; k < 20000; k++) {
		u16 port = mrc_path_pick(&p, now, 0);

		now += 10;
		if ((port & 3) == 2) {		/* the "hash" of path 2 */
			dead++;
			mrc_path_on_loss(&p, port, now);
		} else {
			mrc_path_on_ack(&p, port, false, 100, now);
		}
	}
	/* from here on at most a sliver reaches the dead path */
	dead = 0;
	for (k = 0; k < 4000; k++) {
		u16 port = mrc_path_pick(&p, now, 0);

		now += 10;
		if ((port & 3) == 2) {
			dead++;
			mrc_path_on_loss(&p, port, now);
		}
	}
	KUNIT_EXPECT_LT(test, dead, 4000u / 20);
	KUNIT_EXPECT_GT(test, p.retired, 0u);
}

/*
 * A packet sent with nothing in flight takes the usable entropy with the
 * smallest RTT; every MRC_PATH_LONE_EXPLORE-th follows the rounds, and
 * only those count in the balance window.
 */
static void mrc_path_lone_takes_fastest(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 i, k, plain = 0;
	u16 port;

	mrc_path_init(&p, ents, PT_N, 4242, true);
	for (i = 0; i < PT_N; i++)
		mrc_path_on_ack(&p, ents[i].port, false,
				i == 5 ? 50 : i == 3 ? 60 : 100, 0);
	KUNIT_EXPECT_EQ(test, p.delay_skips, 0u);
	for (k = 0; k < 8 * MRC_PATH_LONE_EXPLORE; k++) {
		port = mrc_path_pick_lone(&p, 0);
		if ((k + 1) % MRC_PATH_LONE_EXPLORE)
			KUNIT_EXPECT_EQ(test, port, ents[5].port);
		else
			plain++;
	}
	KUNIT_EXPECT_EQ(test, plain, 8u);
	KUNIT_EXPECT_EQ(test, p.wpicks, plain);
	KUNIT_EXPECT_GE(test, ents[5].pkts, (u64)(8 * MRC_PATH_LONE_EXPLORE - 8));

	/* a CE mark on the fastest: the next fastest instead ... */
	mrc_path_on_ack(&p, ents[5].port, true, 0, 10);
	KUNIT_EXPECT_EQ(test, mrc_path_pick_lone(&p, 20), ents[3].port);
	/* ... also after the skip, while the mark counts against it */
	KUNIT_EXPECT_EQ(test, mrc_path_pick_lone(&p, 20 + MRC_PATH_SKIP_US),
			ents[3].port);
	/* a loss likewise */
	mrc_path_on_loss(&p, ents[3].port, 30);
	KUNIT_EXPECT_EQ(test, mrc_path_pick_lone(&p, 40 + MRC_PATH_SKIP_US),
			ents[0].port);
}

/*
 * A suspect whose losses faded (it carried packets while every entropy
 * was skipped) is still not a lone packet's fastest: only a round judges
 * it, and the skip of a suspect never ends without that (fuzz F5).
 */
static void mrc_path_lone_passes_suspect(struct kunit *test)
{
	struct mrc_path_ent ents[2];
	struct mrc_path p;
	u16 dead;
	u32 i;

	mrc_path_init(&p, ents, 2, 11, true);
	p.epoch_pkts = 2;
	dead = ents[0].port;
	mrc_path_on_ack(&p, dead, false, 50, 0);
	mrc_path_on_ack(&p, ents[1].port, false, 100, 0);
	for (i = 0; i < MRC_PATH_LOSS_RETIRE; i++)
		mrc_path_on_loss(&p, dead, 0);
	KUNIT_ASSERT_TRUE(test, ents[0].suspect);
	/* a mark skips the other: the rounds fall back to both */
	mrc_path_on_ack(&p, ents[1].port, true, 0, 0);
	for (i = 0; i < 8; i++)
		mrc_path_pick(&p, 1, 0);
	KUNIT_ASSERT_EQ(test, ents[0].losses, 0u);
	KUNIT_ASSERT_EQ(test, ents[0].port, dead);
	for (i = 0; i < MRC_PATH_LONE_EXPLORE - 1; i++) {
		if (p.lone + 1 >= MRC_PATH_LONE_EXPLORE)
			break;
		KUNIT_EXPECT_NE(test, mrc_path_pick_lone(&p,
							 MRC_PATH_PROBATION_US),
				dead);
		KUNIT_EXPECT_TRUE(test, !ents[0].suspect || ents[0].skipping);
	}
	/* the next round judges it: retired, a fresh port in its place */
	mrc_path_pick(&p, MRC_PATH_PROBATION_US, 0);
	mrc_path_pick(&p, MRC_PATH_PROBATION_US, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
	KUNIT_EXPECT_EQ(test, p.retired_why, MRC_PATH_WHY_DEAD);
	KUNIT_EXPECT_EQ(test, mrc_path_index(&p, dead), -1);
}

/*
 * One-response requests stay on their lane: the same port, whatever its
 * RTT against the others, never an explore pick, through a random loss,
 * a CE mark and a skip; a suspect, or a port no longer in the set, hands
 * over to the lone choice.
 */
static void mrc_path_keep_lane(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u16 lane;
	u32 i, k;

	mrc_path_init(&p, ents, PT_N, 515, true);
	for (i = 0; i < PT_N; i++)
		mrc_path_on_ack(&p, ents[i].port, false, i == 5 ? 50 : 100, 0);
	lane = ents[2].port;
	for (k = 0; k < 4 * MRC_PATH_LONE_EXPLORE; k++)
		KUNIT_EXPECT_EQ(test, mrc_path_pick_keep(&p, lane, 1), lane);
	KUNIT_EXPECT_EQ(test, p.wpicks, 0u);
	KUNIT_EXPECT_EQ(test, p.ents[p.last].port, lane);
	KUNIT_EXPECT_EQ(test, ents[2].pkts, (u64)(4 * MRC_PATH_LONE_EXPLORE));

	/* a loss and a mark (each skips it) do not move the lane */
	mrc_path_on_loss(&p, lane, 2);
	mrc_path_on_ack(&p, lane, true, 0, 3);
	KUNIT_EXPECT_TRUE(test, ents[2].skipping);
	KUNIT_EXPECT_EQ(test, mrc_path_pick_keep(&p, lane, 4), lane);

	/* a run of losses with nothing back: a suspect, the fastest instead */
	for (i = 0; i < MRC_PATH_LOSS_RETIRE; i++)
		mrc_path_on_loss(&p, lane, 5);
	KUNIT_ASSERT_TRUE(test, ents[2].suspect);
	KUNIT_EXPECT_EQ(test, mrc_path_pick_keep(&p, lane, 6), ents[5].port);
	/* a port not in the set (retired since) is no lane */
	KUNIT_EXPECT_GE(test, mrc_path_index(&p, mrc_path_pick_keep(&p, 1, 7)),
			0);
}

/* without path awareness a lone packet keeps the previous packet's port */
static void mrc_path_lone_unaware_stays(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u16 port, prev;
	u32 k;

	mrc_path_init(&p, ents, PT_N, 77, false);
	mrc_path_on_ack(&p, ents[2].port, false, 10, 0);
	prev = mrc_path_pick(&p, 0, 0);
	for (k = 1; k < 4 * MRC_PATH_LONE_EXPLORE; k++) {
		port = mrc_path_pick_lone(&p, 0);
		if (k % MRC_PATH_LONE_EXPLORE)
			KUNIT_EXPECT_EQ(test, port, prev);
		else
			KUNIT_EXPECT_NE(test, port, prev);	/* next in the round */
		prev = port;
	}
	/* a set of one never explores */
	mrc_path_init(&p, ents, 1, 5, true);
	for (k = 0; k < 2 * MRC_PATH_LONE_EXPLORE; k++)
		KUNIT_EXPECT_EQ(test, mrc_path_pick_lone(&p, 0), ents[0].port);
	KUNIT_EXPECT_EQ(test, p.wpicks, 0u);
}

/* the sum of the entries' loss counts, as the set keeps it */
static u32 pt_loss_sum(const struct mrc_path *p)
{
	u32 i, sum = 0;

	for (i = 0; i < p->n; i++)
		sum += p->ents[i].losses;
	return sum;
}

/*
 * 40000 picks, 10 us apart, over a set whose entries 0..3 are a path
 * that loses 1 packet in 16 and delivers the rest (every delivery ACKed);
 * @dry: the sender runs dry after each packet.  The path is not retired
 * for it (ACKs come through it between the losses).  Return: the share,
 * in percent, of the second half's picks that went to it.
 */
static u32 pt_lossy_share(struct kunit *test, bool dry)
{
	struct mrc_path_ent ents[PT_N];
	u32 i, k, now = 0, nl[4] = {}, on_lossy = 0, picks = 0;
	u16 lossy[4];
	struct mrc_path p;

	mrc_path_init(&p, ents, PT_N, 31337, true);
	p.balance_rounds = 0;		/* the shares come from the shedding */
	for (i = 0; i < 4; i++)
		lossy[i] = ents[i].port;
	for (k = 0; k < 40000; k++) {
		u16 port = mrc_path_pick(&p, now, 0);
		bool bad = false, lost = false;

		if (dry)
			mrc_path_note_dry(&p);
		now += 10;
		for (i = 0; i < 4; i++) {
			if (port == lossy[i]) {
				bad = true;
				lost = ++nl[i] % 16 == 0;
			}
		}
		if (k >= 20000) {
			picks++;
			on_lossy += bad;
		}
		if (lost)
			mrc_path_on_loss(&p, port, now);
		else
			mrc_path_on_ack(&p, port, false, 100, now);
	}
	KUNIT_EXPECT_EQ(test, p.loss_sum, pt_loss_sum(&p));
	KUNIT_EXPECT_GT(test, p.losses, 0ull);
	/* not retired: still the same four ports */
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ents[i].port, lossy[i]);
	KUNIT_EXPECT_EQ(test, p.retired, 0ull);
	return on_lossy * 100 / picks;
}

/*
 * While the other paths have room (the sender runs dry), the lossy
 * path's turns are shed in proportion to its excess over the set, so it
 * keeps a smaller share: 4 of 16 entries, 25 % even; shed to well under,
 * not to nothing.
 */
static void mrc_path_lossy_keeps_share(struct kunit *test)
{
	u32 share = pt_lossy_share(test, true);

	KUNIT_EXPECT_LT(test, share, 21u);
	KUNIT_EXPECT_GT(test, share, 8u);
}

/*
 * A sender that never runs dry wants more than the paths carry: a turn
 * the lossy path passed over would wait for a full one.  It keeps its
 * even share (less the turns that its skips after each loss pass on).
 */
static void mrc_path_lossy_full_keeps(struct kunit *test)
{
	u32 share = pt_lossy_share(test, false);

	/*
	 * Each loss skips the entry for skip_us (1 ms, 100 picks here):
	 * about 6 rounds after every 16 it sends, 25 % x 16 / 22 = 18 %
	 * (shedding too, with room: 11 %).
	 */
	KUNIT_EXPECT_GE(test, share, 16u);
	KUNIT_EXPECT_LE(test, share, 25u);
	KUNIT_EXPECT_GT(test, share, pt_lossy_share(test, true) + 3);
}

/* the entries at index 0..5 share the lossy link */
static bool pt_first_six(const struct mrc_path *p, u16 port)
{
	int idx = mrc_path_index(p, port);

	return idx >= 0 && idx < 6;
}

/* ports whose low bits are 2 hash onto the lossy link */
static bool pt_link_two(const struct mrc_path *p, u16 port)
{
	return (port & 3) == 2;
}

/*
 * 40000 picks, 10 us apart; every 20th packet sent on the lossy link (as
 * @bad tells) is lost, every other one ACKed at once.  @dry: the sender
 * runs dry after each packet.  Return: picks of the second half that went
 * to the lossy link (of 20000).
 */
static u32 pt_run_lossy(struct mrc_path *p,
			bool (*bad)(const struct mrc_path *p, u16 port),
			bool dry)
{
	u32 k, now = 0, nl = 0, on_lossy = 0;

	for (k = 0; k < 40000; k++) {
		u16 port = mrc_path_pick(p, now, 0);
		bool lossy = bad(p, port);

		if (dry)
			mrc_path_note_dry(p);
		now += 10;
		if (k >= 20000)
			on_lossy += lossy;
		if (lossy && ++nl % 20 == 0)
			mrc_path_on_loss(p, port, now);
		else
			mrc_path_on_ack(p, port, false, 100, now);
	}
	return on_lossy;
}

/*
 * Six of 16 entries share a link that loses 1 packet in 20 (ports rarely
 * spread evenly over links), the sender runs dry.  Their losses lift the
 * set's average, the yardstick of the excess, and still they pass over a
 * third of their turns or more.
 */
static void mrc_path_lossy_many_shed(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 on_lossy;

	mrc_path_init(&p, ents, PT_N, 4242, true);
	p.balance_rounds = 0;		/* the shares come from the shedding */
	on_lossy = pt_run_lossy(&p, pt_first_six, true);
	KUNIT_EXPECT_EQ(test, p.loss_sum, pt_loss_sum(&p));
	/* 6 of 16: 37.5 % even; at most two thirds of that */
	KUNIT_EXPECT_LT(test, on_lossy * 100, 20000u * 25);
	KUNIT_EXPECT_GT(test, on_lossy, 0u);
}

/*
 * A fabric of 4 links with room to spare (the sender runs dry after each
 * packet), one of which loses 1 packet in 20.  The entropies hashed onto
 * it lose more than the others and send no more than their share:
 * balance windows redraw them one by one, and three fresh draws in four
 * land elsewhere.  The link keeps a sliver.
 */
static void mrc_path_lossy_link_drains(struct kunit *test)
{
	struct mrc_path_ent ents[PT_N];
	struct mrc_path p;
	u32 on_lossy;

	mrc_path_init(&p, ents, PT_N, 99, true);
	on_lossy = pt_run_lossy(&p, pt_link_two, true);
	KUNIT_EXPECT_EQ(test, p.loss_sum, pt_loss_sum(&p));
	KUNIT_EXPECT_GT(test, p.retired, 0ull);
	/* even would be 25 % */
	KUNIT_EXPECT_LT(test, on_lossy * 100, 20000u * 8);
}

/* close a balance window in which entry 0 sent @first, the others @rest */
static void pt_window(struct mrc_path *p, u32 first, u32 rest, bool dry)
{
	u32 i;

	for (i = 0; i < p->n; i++)
		p->ents[i].wsent = i ? rest : first;
	if (dry)
		mrc_path_note_dry(p);
	mrc_path_balance(p, false);
}

/*
 * The redraw for loss at the end of a balance window in which the sender
 * ran dry takes an entropy with MRC_PATH_LOSS_REDRAW losses or more,
 * twice the set's average, that sent at most 1.5 times the average.  One
 * that sent more (the delay skips sent the others' packets to it: their
 * links are full) stays, and so do all while the sender never runs dry
 * (it wants more than the paths carry).
 */
static void mrc_path_lossy_busy_stays(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 old;
	u32 i, k;

	mrc_path_init(&p, ents, 4, 5, true);
	old = ents[0].port;
	/* three losses with ACKs through it between: not dead */
	for (k = 0; k < 3; k++) {
		mrc_path_on_loss(&p, old, 0);
		mrc_path_on_ack(&p, old, false, 100, 0);
	}
	KUNIT_ASSERT_EQ(test, p.retired, 0ull);
	KUNIT_ASSERT_EQ(test, ents[0].losses, 3u);

	/* a sender that never ran dry keeps it */
	pt_window(&p, 8, 8, false);
	KUNIT_EXPECT_EQ(test, ents[0].port, old);
	KUNIT_EXPECT_EQ(test, p.retired, 0ull);

	/* so does one that did, while it sends over 1.5 times the average */
	pt_window(&p, 14, 6, true);
	KUNIT_EXPECT_EQ(test, ents[0].port, old);
	KUNIT_EXPECT_EQ(test, p.retired, 0ull);

	/* as lossy, at most 1.5 times the average: redrawn, not for balance */
	pt_window(&p, 11, 7, true);
	KUNIT_EXPECT_NE(test, ents[0].port, old);
	KUNIT_EXPECT_EQ(test, p.retired, 1ull);
	KUNIT_EXPECT_EQ(test, p.rebalanced, 0ull);
	KUNIT_EXPECT_EQ(test, p.loss_sum, 0u);

	/* the same losses on every entry: none stands out, none goes */
	for (k = 0; k < 3; k++) {
		for (i = 0; i < 4; i++) {
			mrc_path_on_loss(&p, ents[i].port, 0);
			mrc_path_on_ack(&p, ents[i].port, false, 100, 0);
		}
	}
	pt_window(&p, 8, 8, true);
	KUNIT_EXPECT_EQ(test, p.retired, 1ull);

	/* one loss in a clean set: under MRC_PATH_LOSS_REDRAW, it stays */
	mrc_path_init(&p, ents, 4, 6, true);
	old = ents[3].port;
	mrc_path_on_loss(&p, old, 0);
	pt_window(&p, 0, 0, true);
	KUNIT_EXPECT_EQ(test, ents[3].port, old);
	KUNIT_EXPECT_EQ(test, p.retired, 0ull);
}

/* a spurious loss is taken back: the count is as if it never happened */
static void mrc_path_loss_undo(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u16 port;

	mrc_path_init(&p, ents, 4, 23, true);
	port = ents[1].port;
	mrc_path_on_loss(&p, port, 0);
	mrc_path_on_loss(&p, port, 0);
	KUNIT_EXPECT_EQ(test, ents[1].losses, 2u);
	KUNIT_EXPECT_EQ(test, ents[1].run, 2u);
	mrc_path_on_loss_undo(&p, port);
	KUNIT_EXPECT_EQ(test, ents[1].losses, 1u);
	KUNIT_EXPECT_EQ(test, ents[1].run, 0u);	/* the packet got through */
	KUNIT_EXPECT_EQ(test, p.loss_sum, 1u);
	KUNIT_EXPECT_EQ(test, p.losses_undone, 1ull);
	/* the run starts again: two more do not make three in a row */
	mrc_path_on_loss(&p, port, 0);
	mrc_path_on_loss(&p, port, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 0ull);
	/* nothing left to take back, or not a port of the set: no change */
	mrc_path_on_loss_undo(&p, ents[2].port);
	mrc_path_on_loss_undo(&p, 1);
	KUNIT_EXPECT_EQ(test, p.loss_sum, 3u);
	KUNIT_EXPECT_EQ(test, p.losses_undone, 1ull);
	KUNIT_EXPECT_EQ(test, p.loss_sum, pt_loss_sum(&p));
}

/* losses spread evenly (reordering, random loss) retire nothing */
static void mrc_path_even_losses_keep(struct kunit *test)
{
	struct mrc_path_ent ents[4];
	struct mrc_path p;
	u32 i, k;

	mrc_path_init(&p, ents, 4, 17, true);
	for (k = 0; k < 3; k++)
		for (i = 0; i < 4; i++)
			mrc_path_on_loss(&p, ents[i].port, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);
	/* one of them loses on: it goes once at twice the average */
	for (k = 0; k < 5; k++)
		mrc_path_on_loss(&p, ents[2].port, 0);
	KUNIT_EXPECT_EQ(test, p.retired, 0u);		/* 8 of 17 */
	mrc_path_on_loss(&p, ents[2].port, 0);		/* 9 of 18 */
	KUNIT_EXPECT_TRUE(test, ents[2].suspect);
	for (i = 0; i < 4; i++)
		if (i != 2)
			KUNIT_EXPECT_FALSE(test, ents[i].suspect);
	pt_count(&p, 0, 4, MRC_PATH_PROBATION_US);
	KUNIT_EXPECT_EQ(test, p.retired, 1u);
}

static struct kunit_case mrc_path_cases[] = {
	KUNIT_CASE(mrc_path_even_losses_keep),
	KUNIT_CASE(mrc_path_lossy_keeps_share),
	KUNIT_CASE(mrc_path_lossy_full_keeps),
	KUNIT_CASE(mrc_path_lossy_many_shed),
	KUNIT_CASE(mrc_path_loss_undo),
	KUNIT_CASE(mrc_path_lossy_link_drains),
	KUNIT_CASE(mrc_path_lossy_busy_stays),
	KUNIT_CASE(mrc_path_init_distinct_ports),
	KUNIT_CASE(mrc_path_round_robin_even),
	KUNIT_CASE(mrc_path_acks_sample_all),
	KUNIT_CASE(mrc_path_avoid),
	KUNIT_CASE(mrc_path_avoid_round_edge),
	KUNIT_CASE(mrc_path_skip_ends_for_good),
	KUNIT_CASE(mrc_path_large_sets_distinct),
	KUNIT_CASE(mrc_path_ce_skips_then_returns),
	KUNIT_CASE(mrc_path_unaware_ignores),
	KUNIT_CASE(mrc_path_loss_retires),
	KUNIT_CASE(mrc_path_stall_survives),
	KUNIT_CASE(mrc_path_isolated_losses_fade),
	KUNIT_CASE(mrc_path_ce_retires),
	KUNIT_CASE(mrc_path_delay_skip),
	KUNIT_CASE(mrc_path_delay_majority),
	KUNIT_CASE(mrc_path_delay_redraw),
	KUNIT_CASE(mrc_path_delay_skip_length),
	KUNIT_CASE(mrc_path_balance_redraws),
	KUNIT_CASE(mrc_path_balances_uneven_draw),
	KUNIT_CASE(mrc_path_all_skipped),
	KUNIT_CASE(mrc_path_drains_dead_path),
	KUNIT_CASE(mrc_path_lone_takes_fastest),
	KUNIT_CASE(mrc_path_lone_passes_suspect),
	KUNIT_CASE(mrc_path_lone_unaware_stays),
	KUNIT_CASE(mrc_path_keep_lane),
	{}
};

static struct kunit_suite mrc_path_suite = {
	.name = "metaroce_path",
	.test_cases = mrc_path_cases,
};

kunit_test_suite(mrc_path_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Path selection: which UDP source port (entropy) the next packet of a QP
 * uses.  ECMP switches hash the port, so each entropy is a path the
 * sender cannot see but can judge from what comes back on it:
 *
 * - ACKs name the entropy of the packet that triggered them and carry its
 *   CE mark and an RTT sample.  A CE-marked entropy, or one whose
 *   smoothed RTT stands well above the least delayed one's, is skipped
 *   for a while (skip_us); the others keep carrying traffic ("mining"
 *   the clean ones).
 * - Losses are charged to the entropy the lost packet went out on.  One
 *   with more than the set's average (reordering and random loss hit all
 *   alike) loses a share of its turns in proportion to the excess, and
 *   balance windows redraw its entropies, while the others have room
 *   (the sender ran dry of late).  Without room a lossy path keeps its
 *   turns: it still carries most of what it is given.  An
 *   entropy that looks dead (loss_retire losses in a row with no ACK
 *   through it, at least MRC_PATH_OUTLIER times the set's average), or
 *   whose excess sheds every turn, or with ce_retire marks within its
 *   last epoch_pkts packets, is retired: it gets a fresh random port,
 *   i.e. a fresh draw of the ECMP hash.  That fresh draw is also how a
 *   failed path is probed again later: a new port that hashes onto it is
 *   judged like any other and kept only if it stays clean.
 *
 * Rounds visit every usable entropy once, starting at a random offset so
 * that coalesced ACKs (one per ack_every packets) sample every entropy,
 * not the same few.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

/* xorshift32: the only randomness the engine needs, seeded by the caller */
static u32 mrc_path_rand(struct mrc_path *p)
{
	u32 x = p->rng ? p->rng : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	p->rng = x;
	return x;
}

/*
 * @port is in use by this set, or shares its low bits with a port in use
 * while the set fits the sender's per-path table (struct mrc_tx_path):
 * two ports in one table entry would evict each other's reference.
 */
static bool mrc_path_port_clash(const struct mrc_path *p, u16 port)
{
	bool small = p->n < MRC_TX_PATHS;
	u32 i;

	for (i = 0; i < p->n; i++) {
		if (p->ents[i].port == port)
			return true;
		if (small && !((p->ents[i].port ^ port) & (MRC_TX_PATHS - 1)))
			return true;
	}
	return false;
}

/*
 * A port in MRC_PATH_PORT_BASE.., not clashing with this set: a random
 * draw, or if a few draws clash (a set that fills most of the sender's
 * table), the next free port after the last draw.  Consecutive ports
 * cover every table entry, and the set has fewer ports than the range.
 */
static u16 mrc_path_fresh_port(struct mrc_path *p)
{
	u32 r = 0, k;
	int tries;

	for (tries = 0; tries < 32; tries++) {
		r = mrc_path_rand(p);
		if (!mrc_path_port_clash(p, MRC_PATH_PORT_BASE |
					 (r & MRC_PATH_PORT_MASK)))
			return MRC_PATH_PORT_BASE | (r & MRC_PATH_PORT_MASK);
	}
	for (k = 1; k <= MRC_PATH_PORT_MASK; k++) {
		u16 port = MRC_PATH_PORT_BASE | ((r + k) & MRC_PATH_PORT_MASK);

		if (!mrc_path_port_clash(p, port))
			return port;
	}
	return MRC_PATH_PORT_BASE | (r & MRC_PATH_PORT_MASK);
}

static void mrc_path_ent_reset(struct mrc_path_ent *e, u16 port)
{
	memset(e, 0, sizeof(*e));
	e->port = port;
}

void mrc_path_init(struct mrc_path *p, struct mrc_path_ent *ents, u32 n,
		   u32 seed, bool aware)
{
	u32 i;

	memset(p, 0, sizeof(*p));
	p->ents = ents;
	p->rng = seed;
	p->aware = aware;
	p->skip_us = MRC_PATH_SKIP_US;
	p->delay_min_us = MRC_PATH_DELAY_MIN_US;
	p->loss_retire = MRC_PATH_LOSS_RETIRE;
	p->loss_shed = MRC_PATH_LOSS_SHED;
	p->ce_retire = MRC_PATH_CE_RETIRE;
	p->epoch_pkts = MRC_PATH_EPOCH_PKTS;
	p->balance_rounds = aware ? MRC_PATH_BALANCE_ROUNDS : 0;
	if (n < 1)
		n = 1;
	if (n > MRC_PATH_MAX)
		n = MRC_PATH_MAX;
	for (i = 0; i < n; i++) {
		/* p->n grows with the loop, so fresh_port sees the set so far */
		mrc_path_ent_reset(&ents[i], 0);
		p->n = i;
		ents[i].port = mrc_path_fresh_port(p);
	}
	p->n = n;
	p->round_left = n;
	p->cursor = mrc_path_rand(p) % n;
}

static struct mrc_path_ent *mrc_path_find(struct mrc_path *p, u16 port)
{
	u32 i;

	for (i = 0; i < p->n; i++)
		if (p->ents[i].port == port)
			return &p->ents[i];
	return NULL;
}

static void mrc_path_retire(struct mrc_path *p, struct mrc_path_ent *e,
			    enum mrc_path_why why)
{
	if (e->rtt && p->rtt_n)
		p->rtt_n--;
	p->loss_sum -= e->losses;
	p->retired_port = e->port;
	p->retired_why = why;
	mrc_path_ent_reset(e, mrc_path_fresh_port(p));
	e->wfresh = true;	/* not judged on a partial balance window */
	p->retired++;
}

/*
 * @e's skip still runs at @now.  No skip is longer than the longest one
 * mrc_path_skip() sets: more time left than that is a skip that ended
 * so long ago that the clock wrapped (after an idle spell of 2^31 us).
 */
static bool mrc_path_skip_runs(const struct mrc_path *p,
			       const struct mrc_path_ent *e, u32 now)
{
	u32 longest = p->skip_us > MRC_PATH_SKIP_MAX_US ? p->skip_us :
		      MRC_PATH_SKIP_MAX_US;

	return e->skipping && e->skip_until - now - 1 < longest;
}

static bool mrc_path_usable(const struct mrc_path *p,
			    const struct mrc_path_ent *e, u32 now)
{
	return !p->aware || !mrc_path_skip_runs(p, e, now);
}

/*
 * A suspect whose probation ended with no proof of life is retired; its
 * slot comes back with a fresh port, usable at once.
 */
static void mrc_path_judge(struct mrc_path *p, struct mrc_path_ent *e,
			   u32 now)
{
	if (e->suspect && !mrc_path_skip_runs(p, e, now))
		mrc_path_retire(p, e, MRC_PATH_WHY_DEAD);
}

/* something got through @e: its run of losses ends, and a probation */
static void mrc_path_alive(struct mrc_path_ent *e)
{
	e->run = 0;
	if (e->suspect) {
		e->suspect = false;
		e->skipping = false;
	}
}

/* the next entry of the current round; a new round starts at random */
static struct mrc_path_ent *mrc_path_step(struct mrc_path *p)
{
	struct mrc_path_ent *c;

	if (!p->round_left) {
		p->round_left = p->n;
		p->cursor = mrc_path_rand(p) % p->n;
	}
	c = &p->ents[p->cursor];
	p->cursor = p->cursor + 1 == p->n ? 0 : p->cursor + 1;
	p->round_left--;
	return c;
}

/*
 * Is @e's count (losses or marks) an outlier of the set?  Reordering and
 * random loss hit every entropy alike; a bad path stands out.  A single
 * entropy never does: it has nothing to be compared with.
 */
static bool mrc_path_outlier(const struct mrc_path *p,
			     const struct mrc_path_ent *e, bool ce)
{
	u64 sum = 0;
	u32 i, mine = ce ? e->ce : e->losses;

	if (ce) {
		for (i = 0; i < p->n; i++)
			sum += p->ents[i].ce;
	} else {
		sum = p->loss_sum;
	}
	return (u64)mine * p->n >= MRC_PATH_OUTLIER * sum;
}

/*
 * The entropy to redraw for loss at the end of a balance window (@sum
 * packets sent by @cnt entries), if any.  Only in a window in which the
 * sender ran dry: it had nothing more to send, so the paths had room.  A
 * sender that never runs dry wants more than the paths carry, and a lossy
 * path still adds what it delivers.  The candidates have at least
 * MRC_PATH_LOSS_REDRAW losses, twice the set's average, and sent at most
 * 1.5 times the window's average (shedding alone thins their turns
 * little while delay skips keep much of the set waiting).  One that sent
 * more got the turns of entropies skipped for delay, whose links are
 * full: it stays.  Of the candidates, the one with the most losses.
 */
static struct mrc_path_ent *
mrc_path_lossy_redraw(struct mrc_path *p, u64 sum, u32 cnt)
{
	struct mrc_path_ent *w = NULL;
	u32 i;

	if (!p->wdry)
		return NULL;
	for (i = 0; i < p->n; i++) {
		struct mrc_path_ent *e = &p->ents[i];

		if (e->wfresh || e->suspect ||
		    e->losses < MRC_PATH_LOSS_REDRAW ||
		    (u64)e->wsent * cnt * 2 > sum * 3 ||
		    !mrc_path_outlier(p, e, false))
			continue;
		if (!w || e->losses > w->losses)
			w = e;
	}
	return w;
}

/*
 * Skips for delay cannot even out an uneven draw alone: a skipped entropy
 * is usable again when its skip ends and takes turns for a whole RTT
 * until its next ACK, so a link holding one entropy of sixteen gets about
 * a tenth of the load however idle it is.  A window is skewed when
 * entropies were skipped for delay in it and the most delayed one stands
 * at MRC_PATH_SKEW times the least delayed or more: one link queues while
 * another has room.  After MRC_PATH_SKEW_WINDOWS such windows in a row
 * the most delayed entropy is redrawn (a fair share of the draws land on
 * the idle link and stay there); an even spread, whose queues are alike,
 * redraws nothing for delay.
 */
static bool mrc_path_skewed(const struct mrc_path *p,
			    const struct mrc_path_ent *fast,
			    const struct mrc_path_ent *slow)
{
	return p->wdelayed && fast && slow != fast &&
	       slow->rtt / MRC_PATH_SKEW >= fast->rtt;
}

/*
 * Skips for delay leave the entropies on a crowded link fewer turns.  At
 * the end of each balance window the entropy that sent least, if under
 * half the average and in the set for the whole window, gets a fresh
 * port: a new draw of the ECMP hash.  Failing that, so may a lossy one
 * (a quarter of the fresh draws land on the same link again, so a lossy
 * link drains over a few windows while the sender has room to spare).
 * Once the set's ports are spread evenly over the links and none stands
 * out for loss, only the rare exploring redraw remains.  @spent: the pick
 * that ends the window retired a suspect, which stands for the window's
 * redraw (a pick retires at most one entropy, so each is counted and
 * traced).
 */
static void mrc_path_balance(struct mrc_path *p, bool spent)
{
	struct mrc_path_ent *lo = NULL, *slow = NULL, *out = NULL, *bad = NULL;
	struct mrc_path_ent *fast = NULL;
	enum mrc_path_why why = MRC_PATH_WHY_LOSSY;
	u64 sum = 0;
	u32 i, cnt = 0;

	for (i = 0; i < p->n; i++) {
		struct mrc_path_ent *e = &p->ents[i];

		/* a suspect sends nothing: its probation judges it */
		if (e->wfresh || e->suspect)
			continue;
		sum += e->wsent;
		cnt++;
		if (!lo || e->wsent < lo->wsent)
			lo = e;
		if (e->rtt && (!slow || e->rtt > slow->rtt))
			slow = e;
		if (e->rtt && (!fast || e->rtt < fast->rtt))
			fast = e;
	}
	p->skew_windows = mrc_path_skewed(p, fast, slow) ?
			  p->skew_windows + 1 : 0;
	if (lo && cnt > 1 && (u64)lo->wsent * 2 * cnt < sum) {
		out = lo;
		why = MRC_PATH_WHY_STARVED;
	} else {
		if (cnt > 1)
			bad = mrc_path_lossy_redraw(p, sum, cnt);
		out = bad;
		if (!out && p->skew_windows >= MRC_PATH_SKEW_WINDOWS) {
			out = slow;
			why = MRC_PATH_WHY_DELAYED;
		}
		/*
		 * Even use says nothing of links that carry none of the set
		 * (a path that came back after a failure): now and then the
		 * most delayed entropy is redrawn anyway, to look for them.
		 */
		if (!out && ++p->quiet_windows >= MRC_PATH_EXPLORE_WINDOWS) {
			out = slow;
			why = MRC_PATH_WHY_EXPLORE;
		}
	}
	/* the pick that ends the window retired a suspect: that was its one */
	if (spent) {
		out = NULL;
		p->quiet_windows = 0;
	}
	if (out) {
		mrc_path_retire(p, out, why);
		if (out != bad)
			p->rebalanced++;
		p->quiet_windows = 0;
		p->skew_windows = 0;
	}
	for (i = 0; i < p->n; i++) {
		if (&p->ents[i] != out)
			p->ents[i].wfresh = false;
		p->ents[i].wsent = 0;
	}
	p->wpicks = 0;
	p->wdry_last = p->wdry;
	p->wdry = false;
	p->wdelayed = false;
}

/* @e carries the next packet */
static void mrc_path_count(struct mrc_path *p, struct mrc_path_ent *e,
			   u32 now)
{
	if (e->skipping && !mrc_path_skip_runs(p, e, now))
		e->skipping = false;
	if (++e->sent >= p->epoch_pkts) {
		/* an epoch of this entropy's packets: old evidence fades */
		e->sent = 0;
		p->loss_sum -= e->losses - (e->losses >> 1);
		e->losses >>= 1;
		e->ce >>= 1;
	}
	e->pkts++;
	p->last = (u32)(e - p->ents);
}

/*
 * @e's losses over the set's average, times n (0: none).  Random loss and
 * reordering charge every entropy alike; only a worse path has an excess.
 */
static u32 mrc_path_loss_excess(const struct mrc_path *p,
				const struct mrc_path_ent *e)
{
	u64 mine = (u64)e->losses * p->n;

	if (mine <= p->loss_sum)
		return 0;
	mine -= p->loss_sum;
	return mine > MRC_U32_MAX ? MRC_U32_MAX : (u32)mine;
}

/*
 * Do the other paths have room for a lossy path's turns?  Only if the
 * sender ran dry of late.  One that never does wants more than the paths
 * carry: a turn passed over would wait for a full path, where the lossy
 * one still delivers most of what it is given.
 */
static bool mrc_path_room(const struct mrc_path *p)
{
	return p->wdry || p->wdry_last;
}

/* pass over @e's turn this time, in proportion to its excess losses */
static bool mrc_path_shed(struct mrc_path *p, const struct mrc_path_ent *e)
{
	u32 x;

	if (!p->aware || !e->losses || !p->loss_shed || !mrc_path_room(p))
		return false;
	x = mrc_path_loss_excess(p, e);
	return x && mrc_path_rand(p) % (p->loss_shed * p->n) < x;
}

u16 mrc_path_pick(struct mrc_path *p, u32 now, u16 avoid)
{
	u32 cursor = p->cursor, round_left = p->round_left, rng = p->rng;
	u64 retired = p->retired;
	struct mrc_path_ent *e = NULL;
	u32 i, limit = p->n;

	for (i = 0; i < limit; i++) {
		struct mrc_path_ent *c;

		/*
		 * A round that begins mid-search starts at random and may
		 * revisit what the old one offered: search all of it.
		 */
		if (i && !p->round_left)
			limit = i + p->n;
		c = mrc_path_step(p);
		mrc_path_judge(p, c, now);

		if ((c->port == avoid && p->n > 1) ||
		    !mrc_path_usable(p, c, now) || mrc_path_shed(p, c))
			continue;
		e = c;
		break;
	}
	if (e && i)
		p->switches++;
	if (!e) {
		/* all skipped: plain round robin, the window slows down */
		p->cursor = cursor;
		p->round_left = round_left;
		p->rng = rng;
		e = mrc_path_step(p);
		/* a new round may start on @avoid again */
		for (i = 0; i < p->n && e->port == avoid && p->n > 1; i++)
			e = mrc_path_step(p);
	}
	mrc_path_count(p, e, now);
	e->wsent++;
	if (p->balance_rounds && p->n > 1 &&
	    ++p->wpicks >= p->n * p->balance_rounds)
		mrc_path_balance(p, p->retired != retired);
	return e->port;
}

u16 mrc_path_pick_lone(struct mrc_path *p, u32 now)
{
	struct mrc_path_ent *e = NULL;
	u32 i;

	/* now and then a lone packet samples the other entropies */
	if (p->n > 1 && ++p->lone >= MRC_PATH_LONE_EXPLORE) {
		p->lone = 0;
		return mrc_path_pick(p, now, 0);
	}
	if (p->aware) {
		for (i = 0; i < p->n; i++) {
			struct mrc_path_ent *c = &p->ents[i];

			/*
			 * Not one with losses or marks, nor a suspect: its
			 * losses may have faded, and only a round judges it.
			 */
			if (c->rtt && !c->losses && !c->ce && !c->suspect &&
			    mrc_path_usable(p, c, now) &&
			    (!e || c->rtt < e->rtt))
				e = c;
		}
	}
	if (!e) {
		e = &p->ents[p->last];
		/* a suspect's probation is judged by the rounds */
		if (e->suspect || !mrc_path_usable(p, e, now))
			return mrc_path_pick(p, now, 0);
	}
	mrc_path_count(p, e, now);
	return e->port;
}

u16 mrc_path_pick_keep(struct mrc_path *p, u16 port, u32 now)
{
	int i = mrc_path_index(p, port);
	struct mrc_path_ent *e;

	if (i < 0)
		return mrc_path_pick_lone(p, now);
	e = &p->ents[i];
	/*
	 * Only a suspect (a run of losses with nothing back) ends a lane:
	 * moving after a random loss, a mark or a delay skip reorders the
	 * responses still due on the old port behind those on the new one.
	 */
	if (e->suspect)
		return mrc_path_pick_lone(p, now);
	mrc_path_count(p, e, now);
	return e->port;
}

int mrc_path_index(const struct mrc_path *p, u16 port)
{
	u32 i;

	for (i = 0; i < p->n; i++)
		if (p->ents[i].port == port)
			return (int)i;
	return -1;
}

/* skip @e for @us, at least skip_us */
static void mrc_path_skip(struct mrc_path *p, struct mrc_path_ent *e, u32 now,
			  u32 us)
{
	e->skipping = true;
	e->skip_until = now + (us > p->skip_us ? us : p->skip_us);
}

/* the smallest smoothed RTT of the set (entries with a sample) */
static u32 mrc_path_rtt_min(const struct mrc_path *p)
{
	u32 i, m = 0;

	for (i = 0; i < p->n; i++)
		if (p->ents[i].rtt && (!m || p->ents[i].rtt < m))
			m = p->ents[i].rtt;
	return m;
}

void mrc_path_on_ack(struct mrc_path *p, u16 port, bool ce, u32 rtt, u32 now)
{
	struct mrc_path_ent *e = mrc_path_find(p, port);
	u32 ref, d;

	if (!e)
		return;		/* retired since, or not ours */
	mrc_path_alive(e);
	if (ce) {
		p->ce_echoes++;
		if (!p->aware)
			return;
		if (++e->ce >= p->ce_retire && mrc_path_outlier(p, e, true)) {
			mrc_path_retire(p, e, MRC_PATH_WHY_CE);
			return;
		}
		mrc_path_skip(p, e, now, 0);
		return;
	}
	if (!rtt)
		return;
	/* smoothed per-entropy RTT, gain 1/4; how many have one beside it */
	if (e->rtt) {
		e->rtt = e->rtt - (e->rtt >> 2) + (rtt >> 2);
		if (!e->rtt)
			e->rtt = 1;
	} else {
		e->rtt = rtt;
		p->rtt_n++;
	}
	if (!p->aware || p->rtt_n < 2)
		return;
	/*
	 * Standing well above the least delayed entropy: a longer queue on
	 * that path.  Not the set's average: when most entropies hash onto
	 * the busy links, the average is their delay and nothing would move
	 * to the idle one.
	 */
	ref = mrc_path_rtt_min(p);
	if (e->rtt > ref + ref / 4 && e->rtt - ref > p->delay_min_us) {
		/*
		 * Skipped for as long as it stands above: about the time the
		 * longer queue takes to drain.  A fixed short skip barely
		 * shifts load when each entropy's turn comes only every few
		 * milliseconds.
		 */
		p->delay_skips++;
		p->wdelayed = true;
		d = e->rtt - ref;
		mrc_path_skip(p, e, now,
			      d < MRC_PATH_SKIP_MAX_US ? d : MRC_PATH_SKIP_MAX_US);
	}
}

void mrc_path_on_loss(struct mrc_path *p, u16 port, u32 now)
{
	struct mrc_path_ent *e = mrc_path_find(p, port);

	if (!e)
		return;
	p->losses++;
	if (!p->aware)
		return;
	e->losses++;
	p->loss_sum++;
	if (e->suspect)
		return;		/* already skipped for its probation */
	/*
	 * Dead: losses in a row and nothing through it between.  A stall
	 * that holds a path's packets looks the same until they arrive, so
	 * it is skipped for a probation first and retired when that ends
	 * with no ACK through it and no loss shown spurious
	 * (mrc_path_judge()).  Skipped, it takes no more traffic meanwhile.
	 */
	if (++e->run >= p->loss_retire && mrc_path_outlier(p, e, false)) {
		e->suspect = true;
		mrc_path_skip(p, e, now, MRC_PATH_PROBATION_US);
		return;
	}
	/*
	 * Shed on every turn: it would never send again, so its record
	 * would never fade.  A fresh draw replaces it.
	 */
	if (p->loss_shed && mrc_path_room(p) &&
	    mrc_path_loss_excess(p, e) >= p->loss_shed * p->n) {
		mrc_path_retire(p, e, MRC_PATH_WHY_SHED);
		return;
	}
	mrc_path_skip(p, e, now, 0);
}

/*
 * The packet charged to @port arrived after all (its retransmission was
 * spurious): reordering, not the path, made it look lost.  Charges that
 * faded or went with a retired port are gone already.
 */
void mrc_path_on_loss_undo(struct mrc_path *p, u16 port)
{
	struct mrc_path_ent *e = mrc_path_find(p, port);

	if (!e || !p->aware)
		return;
	mrc_path_alive(e);	/* it did get through */
	if (!e->losses)
		return;
	e->losses--;
	p->loss_sum--;
	p->losses_undone++;
}

void mrc_path_note_dry(struct mrc_path *p)
{
	p->wdry = true;
}

void mrc_path_replace(struct mrc_path *p, u16 port)
{
	struct mrc_path_ent *e = mrc_path_find(p, port);

	if (e)
		mrc_path_retire(p, e, MRC_PATH_WHY_REPLACED);
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_path_test.c"
#endif

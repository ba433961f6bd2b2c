// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: path selection (mrc_path_*) driven by picks, ACK
 * feedback (CE marks, RTT samples), losses and their undoing,
 * replacements and dry spells, on ports of the set or any other.
 *
 * Checked after every operation: the set keeps its clamped size, every
 * index (cursor, last) is in range, every port is a fresh-port draw, the
 * ports are distinct (and one per table entry of the sender while the
 * set is smaller than the table), a pick returns a port of the set (not
 * the one to avoid, when another exists and nothing was redrawn), and
 * the round's next entry when that is usable by a 64-bit model clock,
 * the loss and RTT bookkeeping equals the entries' sum, skips end within
 * their documented length and the counters only grow.  The entries are a
 * heap array of exactly the clamped size, so AddressSanitizer sees any
 * access past them.
 */
#include <stdlib.h>

#include <metaroce/mrc_engine.h>

#include "fuzz.h"

struct model {
	u32 now;
	u64 now64;			/* the same clock, never wrapping */
	u32 n;
	u32 until[MRC_PATH_MAX];	/* skip_until last seen per entry */
	u64 end64[MRC_PATH_MAX];	/* when that skip ends, on now64 */
	u64 switches, retired, ce_echoes, delay_skips, rebalanced, losses;
	u64 undone;
};

static struct model m;

static void advance(u32 us)
{
	m.now += us;
	m.now64 += us;
}

/* distinct ports, and distinct table entries while the set is small */
static bool distinct(const struct mrc_path *p)
{
	u32 i, j, mask = p->n < MRC_TX_PATHS ? MRC_TX_PATHS - 1 : 0xffff;

	for (i = 0; i < p->n; i++)
		for (j = 0; j < i; j++)
			if (!((p->ents[i].port ^ p->ents[j].port) & mask))
				return false;
	return true;
}

static void check_state(const struct mrc_path *p)
{
	u64 loss_sum = 0;
	u32 i, rtt_n = 0;

	FZ_CHECK(p->n == m.n);
	FZ_CHECK(p->cursor < p->n && p->round_left <= p->n && p->last < p->n);
	if (p->balance_rounds && p->n > 1)
		FZ_CHECK(p->wpicks < p->n * p->balance_rounds);
	for (i = 0; i < p->n; i++) {
		const struct mrc_path_ent *e = &p->ents[i];

		FZ_CHECK((e->port & ~MRC_PATH_PORT_MASK) == MRC_PATH_PORT_BASE);
		loss_sum += e->losses;
		rtt_n += !!e->rtt;
		FZ_CHECK(e->sent < p->epoch_pkts);
		/* a suspect is skipped until its probation judges it */
		FZ_CHECK(!e->suspect || e->skipping);
		/*
		 * A new skip lasts skip_us, or up to MRC_PATH_SKIP_MAX_US for
		 * delay; op_pick() checks on the model clock that it ends.
		 */
		if (e->skipping && e->skip_until != m.until[i]) {
			FZ_CHECK(e->skip_until - m.now >= p->skip_us);
			FZ_CHECK(e->skip_until - m.now <= MRC_PATH_SKIP_MAX_US);
			m.end64[i] = m.now64 + (e->skip_until - m.now);
		}
		m.until[i] = e->skip_until;
	}
	FZ_CHECK(p->loss_sum == loss_sum && p->rtt_n == rtt_n);
	FZ_CHECK(p->switches >= m.switches && p->retired >= m.retired &&
		 p->ce_echoes >= m.ce_echoes &&
		 p->delay_skips >= m.delay_skips &&
		 p->rebalanced >= m.rebalanced && p->losses >= m.losses &&
		 p->losses_undone >= m.undone);
	FZ_CHECK(p->rebalanced <= p->retired);
	m.switches = p->switches;
	m.retired = p->retired;
	m.ce_echoes = p->ce_echoes;
	m.delay_skips = p->delay_skips;
	m.rebalanced = p->rebalanced;
	m.losses = p->losses;
	m.undone = p->losses_undone;
}

/* a port of the set, mostly; sometimes 0 or any other */
static u16 pick_port(struct fz *f, const struct mrc_path *p)
{
	u8 k = fz_u8(f);

	if (k < 0xf0)
		return p->ents[k % p->n].port;
	return k == 0xf0 ? 0 : fz_u16(f);
}

/*
 * The round's next entry, if a pick must take it: the round goes on, the
 * entry is not to be avoided, has no losses to shed turns for, and no
 * skip runs by the model's clock (a stale one must not look current
 * after the 32-bit clock wrapped).  NULL: no such claim.
 */
static const struct mrc_path_ent *next_due(const struct mrc_path *p,
					   u16 avoid)
{
	const struct mrc_path_ent *c = &p->ents[p->cursor];
	u64 end = m.end64[p->cursor];

	if (!p->round_left || (c->port == avoid && p->n > 1) || c->losses)
		return NULL;
	if (!p->aware || !c->skipping)
		return c;
	/*
	 * Not while it runs, and not once the clock nears its next wrap
	 * after the end: a 32-bit clock cannot tell it from a new skip.
	 */
	if (m.now64 < end || m.now64 - end >= (1ull << 32) -
	    MRC_PATH_SKIP_MAX_US - p->skip_us)
		return NULL;
	return c;
}

/*
 * The port to avoid is passed over when the set has another, also when
 * the pick crosses into a new round.
 */
static void op_pick(struct fz *f, struct mrc_path *p)
{
	u16 avoid = fz_bool(f) ? pick_port(f, p) : 0, port;
	bool avoidable = p->n > 1 && mrc_path_index(p, avoid) >= 0;
	const struct mrc_path_ent *due = next_due(p, avoid);
	u16 due_port = due ? due->port : 0;
	u64 retired = p->retired;
	int idx;

	port = mrc_path_pick(p, m.now, avoid);
	idx = mrc_path_index(p, port);
	FZ_CHECK(idx >= 0 && (u32)idx < p->n);
	/* the last entry used is the one picked (unless it was redrawn) */
	if (p->retired == retired) {
		FZ_CHECK(p->ents[p->last].port == port);
		if (avoidable)
			FZ_CHECK(port != avoid);
		if (due)
			FZ_CHECK(port == due_port);
	}
}

static void op_lone(struct mrc_path *p)
{
	u64 retired = p->retired;
	u16 port = mrc_path_pick_lone(p, m.now);

	FZ_CHECK(mrc_path_index(p, port) >= 0);
	if (p->retired == retired)
		FZ_CHECK(p->ents[p->last].port == port);
}

/* an earlier packet's port again: kept while nothing speaks against it */
static void op_keep(struct fz *f, struct mrc_path *p)
{
	u16 keep = pick_port(f, p), port;
	int i = mrc_path_index(p, keep);
	const struct mrc_path_ent *e = i >= 0 ? &p->ents[i] : NULL;
	bool good = e && !e->suspect;
	u64 retired = p->retired;

	port = mrc_path_pick_keep(p, keep, m.now);
	FZ_CHECK(mrc_path_index(p, port) >= 0);
	if (good)
		FZ_CHECK(port == keep && p->retired == retired);
	if (p->retired == retired)
		FZ_CHECK(p->ents[p->last].port == port);
}

static void op_ack(struct fz *f, struct mrc_path *p)
{
	u16 port = pick_port(f, p);
	u8 k = fz_u8(f);
	u32 rtt = k & 0x80 ? fz_u32(f) >> (k & 31) : (k & 0x3f) * 50u;

	mrc_path_on_ack(p, port, k & 0x40 && !(k & 0x80), rtt, m.now);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct fz f = { data, size };
	struct mrc_path_ent *ents;
	struct mrc_path p;
	u32 n_in;
	bool aware;
	u8 k;

	memset(&m, 0, sizeof(m));
	k = fz_u8(&f);
	/* 0 and more than MRC_PATH_MAX are clamped; small sets are common */
	n_in = k < 0xe0 ? k % 17 : fz_u16(&f) % (MRC_PATH_MAX + 8);
	m.n = n_in < 1 ? 1 : n_in > MRC_PATH_MAX ? MRC_PATH_MAX : n_in;
	aware = fz_bool(&f);
	m.now = fz_start(&f);
	m.now64 = m.now;
	ents = malloc(m.n * sizeof(*ents));
	FZ_CHECK(ents);
	mrc_path_init(&p, ents, n_in, fz_u32(&f), aware);
	FZ_CHECK(distinct(&p));
	check_state(&p);

	while (fz_left(&f)) {
		u64 retired = p.retired;

		switch (fz_u8(&f) % 10) {
		case 0:
		case 1:
		case 2:
			op_pick(&f, &p);
			break;
		case 3:
			if (fz_u8(&f) & 1)
				op_keep(&f, &p);
			else
				op_lone(&p);
			break;
		case 4:
		case 5:
			op_ack(&f, &p);
			break;
		case 6:
			mrc_path_on_loss(&p, pick_port(&f, &p), m.now);
			break;
		case 7:
			k = fz_u8(&f);
			if (k < 0x80)
				mrc_path_on_loss_undo(&p, pick_port(&f, &p));
			else if (k < 0xc0)
				mrc_path_note_dry(&p);
			else
				mrc_path_replace(&p, pick_port(&f, &p));
			break;
		default:
			k = fz_u8(&f);
			advance(k < 0xf0 ? k * 16u : fz_u32(&f) >> 4);
			break;
		}
		check_state(&p);
		/* one retirement a call: the driver counts and traces each */
		FZ_CHECK(p.retired - retired <= 1);
		/* redrawn ports are distinct too (quadratic: only then) */
		if (p.retired != retired)
			FZ_CHECK(distinct(&p));
	}
	free(ents);
	return 0;
}

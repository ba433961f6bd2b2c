// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the receiver credit pool (mrc_credit_*) driven by
 * data arrivals, grants, ACK holds and releases of up to 16 flows, with
 * fuzzer-chosen clocks, delays, marks and tunables.
 *
 * Checked after every operation: the pool stays within [pool_min,
 * pool_max], every grant within [1, pool_max], the hold list is a sound
 * doubly linked list of exactly the held flows, a hold lasts the bounds
 * mrc_credit_hold() documents, a released flow is never the caller, and
 * mrc_credit_wnd() converts grants as it says.
 */
#include <stdlib.h>

#include <metaroce/mrc_engine.h>

#include "fuzz.h"

#define FLOWS		16
#define ONE		256u	/* a packet of the pool, fixed point */

struct model {
	u32 now;
	u32 nflows;
	u32 hold_hi;		/* largest hold_max_us set so far */
	u64 cuts, holds, hold_timeouts;
};

static struct model m;

static void check_list(const struct mrc_credit *c,
		       const struct mrc_credit_flow *fl)
{
	const struct mrc_credit_flow *h, *prev = NULL;
	u32 n = 0, i, held = 0;

	for (h = c->hold_head; h; prev = h, h = h->hold_next) {
		FZ_CHECK(h >= fl && h < fl + m.nflows);
		FZ_CHECK(h->held && !h->released && h->hold_prev == prev);
		FZ_CHECK(++n <= m.nflows);	/* no cycle */
	}
	FZ_CHECK(c->hold_tail == prev && c->held == n);
	for (i = 0; i < m.nflows; i++)
		held += fl[i].held;
	FZ_CHECK(held == n);
}

static void check_state(const struct mrc_credit *c,
			const struct mrc_credit_flow *fl)
{
	FZ_CHECK(c->pool_min >= 1 && c->pool_min <= c->pool_max);
	FZ_CHECK(c->pool >= c->pool_min * ONE && c->pool <= c->pool_max * ONE);
	FZ_CHECK(c->active >= 1);
	FZ_CHECK(c->solo <= MRC_CREDIT_SOLO_EPOCHS);
	FZ_CHECK(c->seen_both <= c->seen);
	FZ_CHECK(c->hold_max_us <= MRC_CREDIT_HOLD_MAX_US &&
		 c->hold_max_us <= m.hold_hi);
	FZ_CHECK(c->gap_us <= m.hold_hi);
	FZ_CHECK(c->cuts >= m.cuts && c->holds >= m.holds &&
		 c->hold_timeouts >= m.hold_timeouts);
	FZ_CHECK(c->ce_cuts <= c->cuts);
	m.cuts = c->cuts;
	m.holds = c->holds;
	m.hold_timeouts = c->hold_timeouts;
	check_list(c, fl);
}

static void op_data(struct fz *f, struct mrc_credit *c,
		    struct mrc_credit_flow *fl)
{
	struct mrc_credit_flow *fw = &fl[fz_u8(f) % m.nflows];
	u8 k = fz_u8(f);
	/* each flow's clock has its own offset; only differences count */
	u32 owd = (u32)(fw - fl) * 1000003u + (k & 0x80 ? fz_u16(f) : k);

	m.now += k & 0x40 ? fz_u16(f) : k & 0x0f;
	mrc_credit_on_data(c, fw, m.now, m.now - owd, k & 0x10, k & 0x20);
}

static void op_grant(struct mrc_credit *c)
{
	u32 g = mrc_credit_grant(c);

	FZ_CHECK(g >= MRC_CREDIT_MIN_FLOW && g <= c->pool_max);
	if (c->active <= 1 && c->solo >= MRC_CREDIT_SOLO_EPOCHS)
		FZ_CHECK(g == c->pool_max);
}

static void op_hold(struct fz *f, struct mrc_credit *c,
		    struct mrc_credit_flow *fl)
{
	struct mrc_credit_flow *fw = &fl[fz_u8(f) % m.nflows], *rel;
	bool was_held = fw->held, was_released = fw->released, wait;

	m.now += fz_u8(f);
	wait = mrc_credit_hold(c, fw, m.now, &rel);
	FZ_CHECK(wait == fw->held);
	if (!wait)
		FZ_CHECK(!fw->released);
	if (was_released)
		FZ_CHECK(!wait && !rel);	/* its turn came: send */
	if (wait && !was_held)
		/* a new hold: at least hold_max_us, at most the cap */
		FZ_CHECK(fw->hold_for >= c->hold_max_us &&
			 (u64)fw->hold_for <=
			 (u64)MRC_CREDIT_HOLD_CAP * c->hold_max_us);
	if (rel) {
		FZ_CHECK(rel != fw && rel >= fl && rel < fl + m.nflows);
		FZ_CHECK(rel->released && !rel->held);
	}
}

static void op_wnd(struct fz *f)
{
	u32 credit = fz_u8(f) & 1 ? fz_u32(f) : fz_u16(f);
	u32 path = fz_u16(f), seg = fz_u16(f);
	u32 w = mrc_credit_wnd(credit, path, seg);
	u64 exact;

	FZ_CHECK(w >= 1);
	if (seg <= path) {
		FZ_CHECK(w == (credit ? credit : 1));
		return;
	}
	/* packets of @seg bytes carrying no more than credit x path */
	exact = (u64)credit * path / seg;
	FZ_CHECK(w == (exact ? (exact > 0xffffffffull ? 0xffffffffu : exact) :
		       1));
}

/*
 * credit_hold_us: 0 (no holds) or anything up to 2^32 - 1: the engine
 * clamps it to MRC_CREDIT_HOLD_MAX_US, so that 16 times it fits the
 * 32-bit clock (op_hold checks the hold's bounds).
 */
static u32 pick_hold(struct fz *f)
{
	if (!fz_bool(f))
		return 0;
	return fz_bool(f) ? fz_u32(f) : fz_u32(f) % (MRC_CREDIT_HOLD_MAX_US + 1);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct fz f = { data, size };
	struct mrc_credit_flow *fl;
	struct mrc_credit c;
	u32 i, hold, pmin, pmax;
	u8 k;

	memset(&m, 0, sizeof(m));
	m.nflows = 1 + fz_u8(&f) % FLOWS;
	m.now = fz_start(&f);
	/* the driver: pool_min 2 or 4, pool_max 16 .. 1024; wider here */
	pmin = fz_u8(&f) % 8;
	pmax = fz_u16(&f) % 4097;
	mrc_credit_init(&c, pmin, pmax, fz_u16(&f), fz_u16(&f));
	hold = pick_hold(&f);
	m.hold_hi = hold;
	mrc_credit_set_hold(&c, hold);
	fl = malloc(m.nflows * sizeof(*fl));
	FZ_CHECK(fl);
	for (i = 0; i < m.nflows; i++)
		mrc_credit_flow_init(&fl[i]);
	check_state(&c, fl);

	while (fz_left(&f)) {
		switch (fz_u8(&f) % 8) {
		case 0:
		case 1:
		case 2:
			op_data(&f, &c, fl);
			break;
		case 3:
			op_grant(&c);
			break;
		case 4:
		case 5:
			op_hold(&f, &c, fl);
			break;
		case 6:
			/* an ACK went anyway, or the QP is reset */
			mrc_credit_unhold(&c, &fl[fz_u8(&f) % m.nflows]);
			break;
		default:
			k = fz_u8(&f) % 3;
			if (k == 0) {
				op_wnd(&f);
				break;
			}
			if (k == 1) {
				/* a stall: the host or the link went quiet */
				m.now += fz_u32(&f);
				break;
			}
			hold = pick_hold(&f);
			if (hold > m.hold_hi)
				m.hold_hi = hold;
			mrc_credit_set_hold(&c, hold);
			break;
		}
		check_state(&c, fl);
	}
	free(fl);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receiver credits: the receiving half of congestion control.
 *
 * Incast converges on the receiver's own access link, and only the
 * receiver sees every sender at once.  It keeps one pool of packets that
 * all senders together may have in flight towards it and gives each
 * active sender an equal share in every ACK (the ACK's credit field).
 *
 * The pool follows the queue in front of the receiver: every data packet
 * carries the sender's timestamp, so arrival minus timestamp is the
 * one-way delay up to an unknown clock offset; minus the smallest such
 * delay of the same flow it is the queueing delay.  Once per epoch the
 * smallest queueing delay seen in the epoch (robust to scheduling noise)
 * is compared with the target: above it the pool shrinks in proportion,
 * below it grows by an eighth (at least one packet per active flow).
 * A single sender is left to its own congestion window.  Equal shares make the
 * senders fair; a pool sized by delay keeps the queue short.  Loss plays
 * no part.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

#define MRC_CR_ONE		256u	/* one packet, fixed point */

void mrc_credit_init(struct mrc_credit *c, u32 pool_min, u32 pool_max,
		     u32 target_us, u32 epoch_us)
{
	memset(c, 0, sizeof(*c));
	c->pool_min = pool_min ? pool_min : MRC_CREDIT_MIN_FLOW;
	c->pool_max = pool_max > c->pool_min ? pool_max : c->pool_min;
	c->target_us = target_us;
	c->epoch_us = epoch_us ? epoch_us : 1;
	c->pool = c->pool_max * MRC_CR_ONE;
	c->active = 1;
}

void mrc_credit_flow_init(struct mrc_credit_flow *f)
{
	memset(f, 0, sizeof(*f));
}

static void mrc_credit_clamp(struct mrc_credit *c)
{
	u32 lo = c->pool_min;

	if (lo < c->active * MRC_CREDIT_MIN_FLOW)
		lo = c->active * MRC_CREDIT_MIN_FLOW;
	if (lo > c->pool_max)
		lo = c->pool_max;
	if (c->pool < lo * MRC_CR_ONE)
		c->pool = lo * MRC_CR_ONE;
	if (c->pool > c->pool_max * MRC_CR_ONE)
		c->pool = c->pool_max * MRC_CR_ONE;
}

/* close the epoch: count flows, resize the pool */
static void mrc_credit_epoch(struct mrc_credit *c, u32 now)
{
	c->active = c->seen ? c->seen : 1;
	c->seen = 0;
	if (c->active == 1) {
		/* one sender: its own window handles its queue */
		c->pool = c->pool_max * MRC_CR_ONE;
	} else if (c->q_valid) {
		/* a few late packets of an idle epoch are no standing queue */
		if (c->qmin > c->target_us &&
		    c->samples >= MRC_CREDIT_MIN_SAMPLES) {
			u32 over = c->qmin - c->target_us;
			u32 cut = (u32)mrc_div_u64((u64)over * MRC_CR_ONE,
						   2 * c->qmin);

			if (cut > MRC_CR_ONE / 2)
				cut = MRC_CR_ONE / 2;
			c->pool = (u32)(((u64)c->pool * (MRC_CR_ONE - cut)) /
					MRC_CR_ONE);
			c->cuts++;
		} else if (c->qmin <= c->target_us) {
			/* back quickly after a cut: an eighth, at least one each */
			u32 up = c->pool / 8;

			if (up < c->active * MRC_CR_ONE)
				up = c->active * MRC_CR_ONE;
			c->pool += up;
		}
	}
	mrc_credit_clamp(c);
	c->q_valid = false;
	c->samples = 0;
	c->epoch_start = now;
	c->epoch_id++;
}

/* smallest one-way delay over the current and the previous window */
static u32 mrc_credit_base(const struct mrc_credit_flow *f)
{
	return mrc_psn_lt(f->owd_prev, f->owd_min) ? f->owd_prev : f->owd_min;
}

void mrc_credit_on_data(struct mrc_credit *c, struct mrc_credit_flow *f,
			u32 now, u32 tsval)
{
	u32 owd = now - tsval, win, q;

	if (!c->started) {
		c->started = true;
		c->epoch_start = now;
	} else if (now - c->epoch_start >= c->epoch_us) {
		mrc_credit_epoch(c, now);
	}
	if (!f->counted || f->epoch_id != c->epoch_id) {
		f->counted = true;
		f->epoch_id = c->epoch_id;
		c->seen++;
	}

	/* serial comparisons: the clocks' offset may be anything */
	win = c->epoch_id / MRC_CREDIT_OWD_EPOCHS;
	if (!f->valid) {
		f->valid = true;
		f->owd_min = owd;
		f->owd_prev = owd;
		f->win = win;
	} else if (f->win != win) {
		/* forget old minima slowly: clocks drift */
		f->owd_prev = f->owd_min;
		f->owd_min = owd;
		f->win = win;
	} else if (mrc_psn_lt(owd, f->owd_min)) {
		f->owd_min = owd;
	}
	q = owd - mrc_credit_base(f);
	if ((s32)q < 0)
		q = 0;
	c->samples++;
	if (!c->q_valid || q < c->qmin) {
		c->qmin = q;
		c->q_valid = true;
	}
}

u32 mrc_credit_grant(const struct mrc_credit *c)
{
	u32 share = (c->pool / MRC_CR_ONE) / (c->active ? c->active : 1);

	return share < MRC_CREDIT_MIN_FLOW ? MRC_CREDIT_MIN_FLOW : share;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_credit_test.c"
#endif

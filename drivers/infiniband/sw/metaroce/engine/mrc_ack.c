// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ACK coalescing.  An ACK goes out at once for an arrival that fills the
 * hole at the cumulative ACK, a duplicate, a packet with ACKREQ, a packet
 * that filled its sender's credit window (the sender waits for this ACK:
 * delaying it idles a share of the receiver's pool), when the CE
 * state of arrivals flips (as DCTCP does: the CE count then reaches the
 * sender within one RTT), after @every unacknowledged packets, or when the
 * oldest unacknowledged one has waited @delay us; otherwise the caller
 * arms a timer at mrc_ackc_deadline().  @every 0 counts as 1; @delay 0
 * acknowledges every packet at once.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

void mrc_ackc_init(struct mrc_ackc *c, u32 every, u32 delay_us)
{
	memset(c, 0, sizeof(*c));
	c->every = every ? every : 1;
	c->delay = delay_us;
}

bool mrc_ackc_rx(struct mrc_ackc *c, u32 now, u32 flags)
{
	bool ce = flags & MRC_ACKC_CE;
	bool flip = ce != c->ce_last;

	if (!c->pending++)
		c->first_ts = now;
	if (ce)
		c->ce++;
	c->ce_last = ce;

	if (flags & (MRC_ACKC_FILL | MRC_ACKC_ACKREQ | MRC_ACKC_DUP |
		     MRC_ACKC_CREDIT))
		return true;
	if (flip || c->pending >= c->every || !c->delay)
		return true;
	return now - c->first_ts >= c->delay;
}

bool mrc_ackc_deadline(const struct mrc_ackc *c, u32 *deadline)
{
	if (!c->pending)
		return false;
	*deadline = c->first_ts + c->delay;
	return true;
}

void mrc_ackc_sent(struct mrc_ackc *c)
{
	c->pending = 0;
	c->ce = 0;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_ack_test.c"
#endif

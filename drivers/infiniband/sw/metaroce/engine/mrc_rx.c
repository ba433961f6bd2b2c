// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receiver scoreboard: which PSNs of the window [nxt, nxt + nbits) arrived,
 * and the SACK words an ACK carries.
 *
 * The bitmap is a ring indexed by PSN & (nbits - 1).  Bits of PSNs before
 * nxt are always clear: advancing nxt clears each bit it passes, so the
 * same bit serves PSN + nbits later.  A range is accepted only if it ends
 * inside the window; PSNs before nxt are duplicates.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

static u32 mrc_rx_nwords(u32 nbits)
{
	return (nbits + 63) / 64;
}

static bool mrc_rx_test(const struct mrc_rx *rx, u32 psn)
{
	u32 i = psn & (rx->nbits - 1);

	return (rx->map[i / 64] >> (i % 64)) & 1;
}

static void mrc_rx_set(struct mrc_rx *rx, u32 psn)
{
	u32 i = psn & (rx->nbits - 1);

	rx->map[i / 64] |= 1ull << (i % 64);
}

static void mrc_rx_clear(struct mrc_rx *rx, u32 psn)
{
	u32 i = psn & (rx->nbits - 1);

	rx->map[i / 64] &= ~(1ull << (i % 64));
}

void mrc_rx_init(struct mrc_rx *rx, u64 *map, u32 nbits, u32 epsn)
{
	memset(rx, 0, sizeof(*rx));
	rx->map = map;
	rx->nbits = nbits;
	rx->nxt = epsn;
	memset(map, 0, mrc_rx_nwords(nbits) * sizeof(*map));
}

bool mrc_rx_has(const struct mrc_rx *rx, u32 psn)
{
	if (mrc_psn_lt(psn, rx->nxt))
		return true;
	if (psn - rx->nxt >= rx->nbits)
		return false;
	return mrc_rx_test(rx, psn);
}

/*
 * Duplicates are taken only from the nbits PSNs below nxt: a requester
 * keeps at most that many outstanding, so anything older is no resend of
 * its, and a blind sender cannot hit it by guessing half the PSN space.
 */
enum mrc_rx_verdict mrc_rx_classify(const struct mrc_rx *rx, u32 psn, u32 n)
{
	u32 lo = rx->nxt - rx->nbits, i;

	if (!n || n > rx->nbits)
		return MRC_RX_BEYOND;
	/* all of it in [nxt - nbits, nxt + nbits), wherever the wrap is */
	if (psn - lo >= 2 * rx->nbits || psn - lo + n > 2 * rx->nbits)
		return MRC_RX_BEYOND;
	for (i = 0; i < n; i++)
		if (!mrc_rx_has(rx, psn + i))
			return MRC_RX_NEW;
	return MRC_RX_DUP;
}

/*
 * A zero-length range records nothing (DUP).  The hole counter grows when
 * the new range has a missing PSN right below and right above it: it
 * opened a gap (arrival beyond the highest PSN so far with one missing
 * below it, or a split of an existing gap).
 */
enum mrc_rx_verdict mrc_rx_accept(struct mrc_rx *rx, u32 psn, u32 n)
{
	u32 end = psn + n;
	u32 start, p, added = 0;
	bool gap_below, gap_above;

	if (!n)
		return MRC_RX_DUP;
	if (n > rx->nbits)
		return MRC_RX_BEYOND;
	if (mrc_psn_le(end, rx->nxt))
		return MRC_RX_DUP;
	if (end - rx->nxt > rx->nbits)
		return MRC_RX_BEYOND;

	start = mrc_psn_lt(psn, rx->nxt) ? rx->nxt : psn;
	gap_below = !mrc_rx_has(rx, start - 1);
	gap_above = !mrc_rx_has(rx, end);

	for (p = start; p != end; p++) {
		if (!mrc_rx_test(rx, p)) {
			mrc_rx_set(rx, p);
			added++;
		}
	}
	if (!added)
		return MRC_RX_DUP;
	if (psn != rx->nxt)
		rx->ooo++;
	if (gap_below && gap_above)
		rx->holes++;

	while (mrc_rx_test(rx, rx->nxt)) {
		mrc_rx_clear(rx, rx->nxt);
		rx->nxt++;
	}
	return MRC_RX_NEW;
}

/* 64 window bits for PSNs from @first on (zero beyond the window) */
static u64 mrc_rx_word(const struct mrc_rx *rx, u32 first)
{
	u32 avail = rx->nxt + rx->nbits - first;
	u32 i, wi, off, nw;
	u64 v = 0;

	if (first - rx->nxt >= rx->nbits)
		return 0;
	if (rx->nbits >= 64) {
		nw = mrc_rx_nwords(rx->nbits);
		i = first & (rx->nbits - 1);
		wi = i / 64;
		off = i % 64;
		v = rx->map[wi] >> off;
		if (off)
			v |= rx->map[(wi + 1) % nw] << (64 - off);
	} else {
		for (i = 0; i < avail; i++)
			if (mrc_rx_test(rx, first + i))
				v |= 1ull << i;
	}
	if (avail < 64)
		v &= (1ull << avail) - 1;
	return v;
}

u32 mrc_rx_sack(const struct mrc_rx *rx, u64 *words, u32 max)
{
	u32 w, used = 0;

	for (w = 0; w < max; w++) {
		words[w] = mrc_rx_word(rx, rx->nxt + 1 + 64 * w);
		if (words[w])
			used = w + 1;
	}
	return used;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_rx_test.c"
#endif

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Write-after-write order for out-of-order placement.  The receiver places
 * each packet as it arrives; when an older packet arrives after a newer
 * one that wrote the same bytes, the older one must not overwrite them.
 * The log keeps, per PSN of the receive window, what the packet wrote; a
 * late packet's payload is cut down to the bytes no newer PSN has written.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

void mrc_wlog_init(struct mrc_wlog *w, struct mrc_wlog_ent *ents, u32 n,
		   u32 epsn)
{
	w->ents = ents;
	w->n = n;
	w->high = epsn;
	memset(ents, 0, sizeof(*ents) * n);
}

void mrc_wlog_record(struct mrc_wlog *w, u32 psn, u64 va, u32 rkey, u32 len)
{
	struct mrc_wlog_ent *e = &w->ents[psn & (w->n - 1)];

	e->va = va;
	e->rkey = rkey;
	e->len = len;
	if (!mrc_psn_lt(psn, w->high))
		w->high = psn + 1;
}

/* bytes of segment @i of a READ of @len bytes; 0 past its end */
static u32 mrc_wlog_seg_len(u32 len, u32 i, u8 shift)
{
	u64 off = (u64)i << shift;

	if (off >= len)
		return 0;
	return len - off < (1u << shift) ? len - (u32)off : 1u << shift;
}

void mrc_wlog_record_read(struct mrc_wlog *w, const struct mrc_rx *rx,
			  u32 psn, u32 n, u64 va, u32 rkey, u32 len, u8 shift)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (!mrc_rx_has(rx, psn + i))
			mrc_wlog_record(w, psn + i, va + ((u64)i << shift),
					rkey, MRC_WLOG_READ |
					mrc_wlog_seg_len(len, i, shift));
}

/* the entry of received PSN @q still describes @q, not a newer PSN */
static bool mrc_wlog_holds(const struct mrc_wlog *w, const struct mrc_rx *rx,
			   u32 q)
{
	if (!mrc_rx_has(rx, q))
		return false;
	if (!mrc_psn_lt(q, rx->nxt))
		return true;
	return rx->nxt - q <= w->n && !mrc_rx_has(rx, q + w->n);
}

bool mrc_wlog_read_match(const struct mrc_wlog *w, const struct mrc_rx *rx,
			 u32 psn, u32 n, u64 va, u32 rkey, u32 len, u8 shift)
{
	u32 i;

	for (i = 0; i < n; i++) {
		const struct mrc_wlog_ent *e = &w->ents[(psn + i) & (w->n - 1)];
		u32 seg = mrc_wlog_seg_len(len, i, shift);

		if (len && !seg)
			return false;	/* more PSNs than the length has */
		if (!mrc_wlog_holds(w, rx, psn + i) ||
		    e->len != (MRC_WLOG_READ | seg) || e->rkey != rkey ||
		    e->va != va + ((u64)i << shift))
			return false;
	}
	return true;
}

/* remove [a, b) from the pieces; false if a split found no room */
static bool mrc_wlog_cut(struct mrc_piece *out, int *n, int max, u32 a, u32 b)
{
	int i;

	for (i = 0; i < *n; i++) {
		u32 s = out[i].off, t = out[i].off + out[i].len;

		if (b <= s || a >= t)
			continue;
		if (a <= s && b >= t) {
			/* covered: the last piece takes its place */
			out[i--] = out[--(*n)];
		} else if (a > s && b < t) {
			if (*n == max)
				return false;
			out[(*n)++] = (struct mrc_piece){ b, t - b };
			out[i].len = a - s;
		} else if (a <= s) {
			out[i].off = b;
			out[i].len = t - b;
		} else {
			out[i].len = a - s;
		}
	}
	return true;
}

int mrc_wlog_pieces(const struct mrc_wlog *w, const struct mrc_rx *rx,
		    u32 psn, u64 va, u32 rkey, u32 len, struct mrc_piece *out,
		    int max)
{
	int n = 1;
	u32 q;

	if (!len)
		return 0;
	out[0] = (struct mrc_piece){ 0, len };
	/* nothing newer has arrived: the usual case, no scan */
	for (q = psn + 1; mrc_psn_lt(q, w->high) && n; q++) {
		const struct mrc_wlog_ent *e = &w->ents[q & (w->n - 1)];
		u64 a, b, end;

		if (!e->len || (e->len & MRC_WLOG_READ) || e->rkey != rkey ||
		    !mrc_rx_has(rx, q))
			continue;
		/* offsets from va; no sum can wrap (both ranges were checked) */
		if (e->va >= va + len || e->va + e->len <= va)
			continue;
		a = e->va > va ? e->va - va : 0;
		end = e->va + e->len - va;
		b = end < len ? end : len;
		if (!mrc_wlog_cut(out, &n, max, (u32)a, (u32)b))
			return -1;
	}
	return n;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_wlog_test.c"
#endif

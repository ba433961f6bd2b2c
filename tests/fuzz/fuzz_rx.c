// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the receiver scoreboard (mrc_rx_*) and the write log
 * (mrc_wlog_*) driven by a stream of operations, each checked against a
 * plain reference model: a bool per PSN received and, per PSN, what it
 * wrote.  The model PSNs are offsets from the initial PSN.
 *
 * Input: window size, initial PSN, then operations (classify and accept a range,
 * encode SACK words, ask whether a PSN arrived, place a WRITE packet
 * through the write log) until the bytes run out.  The bitmap, the log
 * and the SACK words are heap buffers of exact size, so AddressSanitizer
 * catches any access past them.
 */
#include <stdlib.h>

#include <metaroce/mrc_engine.h>
#include <metaroce/mrc_wire.h>

#include "fuzz.h"

#define MODEL_PSNS	65536u		/* PSN offsets the model follows */
#define MAX_PIECES	16		/* the driver's MRC_WLOG_PIECES */
#define PAY_MAX		512		/* WRITE payloads in the model, bytes */

struct rec {
	u64 va;
	u32 rkey;
	u32 len;
};

struct model {
	u32 base;		/* the initial PSN */
	u32 nxt;		/* offset of the next expected PSN */
	u32 high;		/* one past the highest PSN recorded (serial) */
	u32 nbits;
	u64 ooo;
	u64 holes;
	u32 dirty;		/* offsets the last run may have touched */
	bool got[MODEL_PSNS];
	struct rec rec[MODEL_PSNS];
};

static struct model m;

/* offset of @psn from the initial PSN, or -1 outside what the model follows */
static s64 m_off(u32 psn)
{
	u32 o = psn - m.base;

	return o < MODEL_PSNS ? (s64)o : -1;
}

static bool m_has(u32 psn)
{
	s64 o;

	if (mrc_psn_lt(psn, m.base + m.nxt))
		return true;
	if (psn - (m.base + m.nxt) >= m.nbits)
		return false;
	o = m_off(psn);
	return o >= 0 && m.got[o];
}

/* the model's verdict for [psn, psn + n); marks it when NEW */
static enum mrc_rx_verdict m_accept(u32 psn, u32 n)
{
	u32 nxt = m.base + m.nxt, end = psn + n, start, p;
	bool added = false, below, above;

	/* longer than the window: never fits, even wholly before nxt */
	if (n > m.nbits)
		return MRC_RX_BEYOND;
	if (!n || mrc_psn_le(end, nxt))
		return MRC_RX_DUP;
	if (end - nxt > m.nbits)
		return MRC_RX_BEYOND;
	start = mrc_psn_lt(psn, nxt) ? nxt : psn;
	below = !m_has(start - 1);
	above = !m_has(end);
	for (p = start; p != end; p++) {
		s64 o = m_off(p);

		FZ_CHECK(o >= 0);
		if (!m.got[o])
			added = true;
		m.got[o] = true;
	}
	if (!added)
		return MRC_RX_DUP;
	if (psn != nxt)
		m.ooo++;
	if (below && above)
		m.holes++;
	while (m.nxt < MODEL_PSNS && m.got[m.nxt])
		m.nxt++;
	return MRC_RX_NEW;
}

/*
 * The engine's whole state against the model: one bit per PSN of the
 * window, nothing else set.  Built word by word, a run is dominated by
 * this otherwise.
 */
static void check_state(const struct mrc_rx *rx)
{
	u32 i, nwords = (rx->nbits + 63) / 64;
	u64 want[1024 / 64] = { 0 };

	FZ_CHECK(rx->nxt == m.base + m.nxt);
	FZ_CHECK(rx->ooo == m.ooo && rx->holes == m.holes);
	for (i = 0; i < rx->nbits; i++) {
		u32 psn = rx->nxt + i, b = psn & (rx->nbits - 1);

		if (m.got[m_off(psn)])
			want[b / 64] |= 1ull << (b % 64);
	}
	for (i = 0; i < nwords; i++)
		FZ_CHECK(rx->map[i] == want[i]);
}

/* a PSN near the window (both sides), sometimes anywhere */
static u32 pick_psn(struct fz *f, const struct mrc_rx *rx)
{
	u8 k = fz_u8(f);

	if (k == 0xff)
		return fz_u32(f);
	return rx->nxt + (u32)((s32)(int16_t)fz_u16(f) % (s32)(2 * rx->nbits + 2));
}

/*
 * Note what a newly received PSN wrote.  The log's contract: only PSNs
 * received for the first time; an older PSN's entry is that of a PSN of
 * the window.  (mrc_resp_wlog() records every PSN of a new range, also
 * those that had arrived before: reported.)
 */
static void record(struct mrc_wlog *w, u32 psn, u64 va, u32 rkey, u32 len)
{
	s64 o = m_off(psn);

	mrc_wlog_record(w, psn, va, rkey, len);
	FZ_CHECK(o >= 0);
	m.rec[o] = (struct rec){ va, rkey, len };
	if (mrc_psn_le(m.high, psn))
		m.high = psn + 1;
	FZ_CHECK(w->high == m.high);
}

/* the model's mrc_rx_classify(): what the responder makes of a request */
static enum mrc_rx_verdict m_classify(u32 psn, u32 n)
{
	u32 nxt = m.base + m.nxt, i;
	u64 first = (u32)(psn - nxt + m.nbits);	/* from nxt - nbits */

	/* empty, longer than the window, or not within nbits of nxt */
	if (!n || n > m.nbits || first + n > 2ull * m.nbits)
		return MRC_RX_BEYOND;
	for (i = 0; i < n; i++)
		if (!m_has(psn + i))
			return MRC_RX_NEW;
	return MRC_RX_DUP;
}

/* a request packet covering [psn, psn + n) */
static void op_accept(struct fz *f, struct mrc_rx *rx, struct mrc_wlog *w)
{
	u32 psn = pick_psn(f, rx);
	u8 k = fz_u8(f);
	u32 n = k < 0xf0 ? k % 9 : fz_u16(f) % (2 * rx->nbits + 2);
	enum mrc_rx_verdict want, got, cls;
	static bool fresh[1024];
	u32 i;

	for (i = 0; i < n && i < m.nbits; i++)
		fresh[i] = !m_has(psn + i);
	cls = mrc_rx_classify(rx, psn, n);
	FZ_CHECK(cls == m_classify(psn, n));
	want = m_accept(psn, n);
	got = mrc_rx_accept(rx, psn, n);
	FZ_CHECK(got == want);
	/* what the responder takes as new, the scoreboard takes */
	FZ_CHECK(cls != MRC_RX_NEW || got == MRC_RX_NEW);
	if (got != MRC_RX_NEW)
		return;
	for (i = 0; i < n; i++)
		if (fresh[i])
			record(w, psn + i, 0, 0, 0);
}

static void op_sack(struct fz *f, const struct mrc_rx *rx)
{
	u32 max = fz_u8(f) % (MRC_ACK_MAX_SACKW + 3);
	u64 *words = malloc((max ? max : 1) * sizeof(*words));
	u32 used, w, b, last = 0;

	FZ_CHECK(words);
	used = mrc_rx_sack(rx, words, max);
	FZ_CHECK(used <= max);
	for (w = 0; w < max; w++) {
		for (b = 0; b < 64; b++) {
			u32 psn = rx->nxt + 1 + 64 * w + b;
			bool want = psn - rx->nxt < rx->nbits && m_has(psn);

			FZ_CHECK(((words[w] >> b) & 1) == want);
		}
		if (words[w])
			last = w + 1;
	}
	FZ_CHECK(used == last);
	free(words);
}

/* the model's pieces of a late WRITE: bytes no newer received PSN wrote */
static int m_pieces(u32 psn, u64 va, u32 rkey, u32 len, int max, u8 *keep)
{
	u32 q, i, runs = 0;

	memset(keep, 1, len);
	for (q = psn + 1; mrc_psn_lt(q, m.high); q++) {
		const struct rec *r = &m.rec[m_off(q)];

		if (!r->len || r->rkey != rkey || !m_has(q))
			continue;
		for (i = 0; i < len; i++)
			if (va + i >= r->va && va + i < r->va + r->len)
				keep[i] = 0;
		/* a split beyond @max pieces fails at once */
		for (i = 0, runs = 0; i < len; i++)
			if (keep[i] && (!i || !keep[i - 1]))
				runs++;
		if ((int)runs > max)
			return -1;
		if (!runs)
			return 0;
	}
	for (i = 0, runs = 0; i < len; i++)
		if (keep[i] && (!i || !keep[i - 1]))
			runs++;
	return (int)runs;
}

static void op_write(struct fz *f, struct mrc_rx *rx, struct mrc_wlog *w)
{
	u32 psn = rx->nxt + fz_u16(f) % rx->nbits;
	u64 va = 0x10000 + fz_u16(f) % 2048;
	u32 rkey = 1 + fz_u8(f) % 3;
	u32 len = fz_u16(f) % (PAY_MAX + 1);
	int max = 1 + fz_u8(f) % MAX_PIECES;
	struct mrc_piece *out = malloc(max * sizeof(*out));
	u8 keep[PAY_MAX], cover[PAY_MAX] = { 0 };
	int n, want, i;
	u32 j;

	FZ_CHECK(out);
	if (m_off(psn) < 0 || mrc_rx_has(rx, psn))
		goto out;	/* the responder asks only for new PSNs */
	want = len ? m_pieces(psn, va, rkey, len, max, keep) : 0;
	n = mrc_wlog_pieces(w, rx, psn, va, rkey, len, out, max);
	FZ_CHECK(n == want);
	for (i = 0; i < n; i++) {
		FZ_CHECK(out[i].len && out[i].off + out[i].len <= len);
		for (j = out[i].off; j < out[i].off + out[i].len; j++) {
			FZ_CHECK(!cover[j] && keep[j]);
			cover[j] = 1;
		}
	}
	if (n >= 0)
		for (j = 0; j < len; j++)
			FZ_CHECK(cover[j] == keep[j]);
	/* placed: received and logged, as the responder does */
	if (n >= 0 && fz_bool(f)) {
		FZ_CHECK(m_accept(psn, 1) == MRC_RX_NEW);
		FZ_CHECK(mrc_rx_accept(rx, psn, 1) == MRC_RX_NEW);
		record(w, psn, va, rkey, len);
	}
out:
	free(out);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct fz f = { data, size };
	struct mrc_wlog_ent *ents;
	struct mrc_wlog w;
	struct mrc_rx rx;
	u64 *map;

	m.nbits = 1u << (fz_u8(&f) % 11);	/* 1 .. 1024 */
	m.base = fz_start(&f);
	m.nxt = 0;
	m.high = m.base;
	m.ooo = 0;
	m.holes = 0;
	/* clear only what the last run used: a whole clear costs most of a run */
	memset(m.got, 0, m.dirty * sizeof(m.got[0]));
	memset(m.rec, 0, m.dirty * sizeof(m.rec[0]));
	map = malloc((m.nbits + 63) / 64 * sizeof(*map));
	ents = malloc(m.nbits * sizeof(*ents));
	FZ_CHECK(map && ents);
	mrc_rx_init(&rx, map, m.nbits, m.base);
	mrc_wlog_init(&w, ents, m.nbits, m.base);

	while (fz_left(&f) && m.nxt + m.nbits < MODEL_PSNS) {
		switch (fz_u8(&f) % 5) {
		case 0:
		case 1:
			op_accept(&f, &rx, &w);
			break;
		case 2:
			op_sack(&f, &rx);
			break;
		case 3: {
			u32 psn = pick_psn(&f, &rx);

			FZ_CHECK(mrc_rx_has(&rx, psn) == m_has(psn));
			break;
		}
		default:
			op_write(&f, &rx, &w);
			break;
		}
		check_state(&rx);
	}
	m.dirty = m.nxt + m.nbits < MODEL_PSNS ? m.nxt + m.nbits : MODEL_PSNS;
	free(map);
	free(ents);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the sender scoreboard (mrc_tx_*) fed with sends,
 * retransmissions and fuzzer-chosen ACKs, responses and timer expiries.
 *
 * A reference model keeps, per PSN sent, whether it is a request that
 * only a response delivers and whether it was delivered.  Every ACK and
 * response must deliver exactly what the model says (each PSN once, the
 * delivered set only grows); after every operation una, nxt and the
 * counters must agree with the model and the slots, and the timer state
 * must stay in its documented bounds.
 */
#include <stdlib.h>

#include <metaroce/mrc_engine.h>
#include <metaroce/mrc_wire.h>

#include "fuzz.h"

#define MODEL_PSNS	65536u
#define ENTROPIES	16		/* ports 0xc000 .. 0xc00f */

struct model {
	u32 isn;
	u32 nxt;		/* PSNs sent (offset of the next new one) */
	u32 una;		/* offset of the oldest undelivered */
	u32 now;
	u32 nslots;
	/* counters that only grow */
	u32 spurious, rtos, tlps, rack_marked, spurious_rtos, spurious_tmos;
	/* per PSN sent; set when it is sent, so never cleared */
	bool need_resp[MODEL_PSNS];
	bool done[MODEL_PSNS];	/* delivered */
};

static struct model m;

static bool in_flight(const struct mrc_tx *tx, u32 psn)
{
	return mrc_psn_in(psn, tx->una, tx->nxt);
}

static u32 off(u32 psn)
{
	return psn - m.isn;
}

static void check_state(const struct mrc_tx *tx)
{
	u32 out = mrc_tx_outstanding(tx), sacked = 0, lost = 0, psn;
	const struct mrc_rtt *r = &tx->rtt;

	while (m.una < m.nxt && m.done[m.una])
		m.una++;
	FZ_CHECK(tx->nxt == m.isn + m.nxt && tx->una == m.isn + m.una);
	FZ_CHECK(out <= tx->nslots);
	FZ_CHECK(mrc_psn_le(tx->una, tx->ack_cum) &&
		 mrc_psn_le(tx->ack_cum, tx->nxt));
	for (psn = tx->una; psn != tx->nxt; psn++) {
		const struct mrc_tx_slot *s = mrc_tx_slot(tx, psn);

		FZ_CHECK(!!(s->flags & MRC_TXS_ACKED) == m.done[off(psn)]);
		FZ_CHECK(!!(s->flags & MRC_TXS_NEED_RESP) ==
			 m.need_resp[off(psn)]);
		FZ_CHECK(!((s->flags & MRC_TXS_ACKED) &&
			   (s->flags & MRC_TXS_LOST)));
		/* below the cumulative ACK only a response is missing */
		if (mrc_psn_lt(psn, tx->ack_cum) && !m.done[off(psn)])
			FZ_CHECK(m.need_resp[off(psn)]);
		FZ_CHECK(s->xmits >= 1);
		sacked += !!(s->flags & MRC_TXS_ACKED);
		lost += !!(s->flags & MRC_TXS_LOST);
	}
	FZ_CHECK(tx->sacked == sacked && tx->lost == lost);
	FZ_CHECK(sacked + lost <= out);

	/* timers and their margins */
	FZ_CHECK(r->rto >= r->rto_min && r->rto <= r->rto_max);
	FZ_CHECK(mrc_rtt_rto(r) >= r->rto_min && mrc_rtt_rto(r) <= r->rto_max);
	FZ_CHECK(r->backoff <= MRC_RTO_MAX_BACKOFF);
	FZ_CHECK(tx->reo_wnd >= tx->reo_wnd_min && tx->reo_wnd <= 0x7fffffffu);
	FZ_CHECK(tx->reo_steps >= tx->reo_steps_min &&
		 tx->reo_steps <= MRC_REO_STEPS_MAX);
	FZ_CHECK(tx->tmo_steps >= 1 && tx->tmo_steps <= tx->tmo_steps_max);
	FZ_CHECK(tx->timeouts <= tx->rtos);

	/* counters only grow */
	FZ_CHECK(tx->spurious >= m.spurious && tx->rtos >= m.rtos &&
		 tx->tlps >= m.tlps && tx->rack_marked >= m.rack_marked &&
		 tx->spurious_rtos >= m.spurious_rtos &&
		 tx->spurious_tmos >= m.spurious_tmos);
	m.spurious = tx->spurious;
	m.rtos = tx->rtos;
	m.tlps = tx->tlps;
	m.rack_marked = tx->rack_marked;
	m.spurious_rtos = tx->spurious_rtos;
	m.spurious_tmos = tx->spurious_tmos;
}

static u16 pick_entropy(struct fz *f)
{
	return 0xc000 + fz_u8(f) % ENTROPIES;
}

/* a PSN around the outstanding range, sometimes anywhere */
static u32 pick_psn(struct fz *f, const struct mrc_tx *tx)
{
	u8 k = fz_u8(f);
	u32 out = mrc_tx_outstanding(tx);

	if (k == 0xff)
		return fz_u32(f);
	if (k >= 0xf0)
		return tx->nxt + (k & 7);
	return tx->una - 4 + k % (out + 8);
}

static void op_send(struct fz *f, struct mrc_tx *tx)
{
	u8 k = fz_u8(f);
	u32 n = k & 0x80 ? 1 + (k & 0x7f) : 1 + k % 4;
	u8 kf = fz_u8(f);
	/* new data takes no flag but NEED_RESP */
	u8 flags = kf == 0xff ? fz_u8(f) : kf % 5 ? 0 : MRC_TXS_NEED_RESP;
	u32 out = mrc_tx_outstanding(tx);
	bool ok = n <= tx->nslots && out + n <= tx->nslots &&
		  !(flags & ~MRC_TXS_NEED_RESP);
	u32 i;

	if (m.nxt + n >= MODEL_PSNS)
		return;
	/* the requester only sends what fits; the engine must refuse more */
	FZ_CHECK(mrc_tx_sent(tx, tx->nxt, n, m.now, pick_entropy(f), flags) ==
		 (ok ? 0 : -EINVAL));
	if (!ok)
		return;
	for (i = 0; i < n; i++) {
		m.need_resp[m.nxt + i] = flags;
		m.done[m.nxt + i] = false;
	}
	m.nxt += n;
}

static void op_resend(struct fz *f, struct mrc_tx *tx)
{
	u32 psn = pick_psn(f, tx), n = 1 + fz_u8(f) % 4;
	u32 out = mrc_tx_outstanding(tx);
	bool ok;
	int ret;

	if (psn == tx->nxt)
		return;		/* new data, op_send */
	ok = in_flight(tx, psn) && (psn - tx->una) + n <= out;
	ret = mrc_tx_sent(tx, psn, n, m.now, pick_entropy(f), 0);
	FZ_CHECK(ret == (ok ? 0 : -EINVAL));
}

/* what the model says an ACK delivers, checked against the result */
static void op_ack(struct fz *f, struct mrc_tx *tx)
{
	u64 sack[MRC_ACK_MAX_SACKW] = { 0 };
	struct mrc_ack_info a = { .sack = sack };
	static bool want[MODEL_PSNS];
	struct mrc_tx_slot *before;
	struct mrc_ack_result r;
	u32 psn, w, newly = 0, una0 = tx->una;
	struct mrc_tx copy = *tx;
	u8 k = fz_u8(f);
	int ret, i;

	if (k < 0xe0)
		a.cum = tx->una - 8 + k % (mrc_tx_outstanding(tx) + 16);
	else
		a.cum = k < 0xf0 ? tx->nxt : fz_u32(f);
	a.sack_words = fz_u8(f) % (MRC_ACK_MAX_SACKW + 1);
	for (w = 0; w < a.sack_words; w++) {
		k = fz_u8(f);
		sack[w] = k < 0x80 ? fz_u64(f) : k < 0xc0 ? ~0ull : 0;
	}
	k = fz_u8(f);
	a.ts_valid = k & 1;
	/* RTT samples up to a second, or anything (a peer's garbage) */
	a.ts_echo = k & 0x20 ? fz_u32(f) : m.now - fz_u16(f) * (k & 2 ? 16 : 1);
	a.delay = k & 4 ? fz_u16(f) : 0;
	a.dup = k & 8;
	a.dup_psn = k & 16 ? pick_psn(f, tx) : 0;
	if (k & 0x40)
		a.delay = fz_u32(f);

	/* the model: every PSN before cum, and the SACK bits, in flight */
	for (psn = tx->una; psn != tx->nxt; psn++) {
		u32 o = off(psn), b = psn - a.cum - 1;
		bool hit = mrc_psn_lt(psn, a.cum);

		if (b < 64 * a.sack_words)
			hit |= (sack[b / 64] >> (b % 64)) & 1;
		want[o] = hit && !m.done[o] && !m.need_resp[o];
	}
	before = malloc(tx->nslots * sizeof(*before));
	FZ_CHECK(before);
	memcpy(before, tx->slots, tx->nslots * sizeof(*before));
	ret = mrc_tx_ack(tx, &a, m.now, &r);
	/* an ACK for PSNs never sent is refused; one for [una, nxt] taken */
	if (mrc_psn_lt(copy.nxt, a.cum))
		FZ_CHECK(ret == -EINVAL);
	else if (!mrc_psn_lt(a.cum, una0))
		FZ_CHECK(ret == 0);
	if (ret) {
		/* refused (also stale, beyond a window): nothing changed */
		FZ_CHECK(ret == -EINVAL);
		FZ_CHECK(!memcmp(&copy, tx, sizeof(copy)));
		FZ_CHECK(!memcmp(before, tx->slots,
				 tx->nslots * sizeof(*before)));
		free(before);
		return;
	}
	free(before);
	for (psn = una0; psn != copy.nxt; psn++) {
		if (!want[off(psn)])
			continue;
		m.done[off(psn)] = true;
		newly++;
	}
	FZ_CHECK(r.newly_acked == newly);
	FZ_CHECK(r.stale == mrc_psn_lt(a.cum, una0));
	FZ_CHECK(r.n_uncharge <= MRC_ACK_UNCHARGE);
	for (i = 0; i < (int)r.n_uncharge; i++)
		FZ_CHECK(r.uncharge[i] >= 0xc000 &&
			 r.uncharge[i] < 0xc000 + ENTROPIES);
	check_state(tx);
	FZ_CHECK(r.una_advanced == (tx->una != una0));
}

static void op_resp(struct fz *f, struct mrc_tx *tx)
{
	u32 psn = pick_psn(f, tx), una0 = tx->una;
	struct mrc_ack_result r;
	int want, ret;

	if (mrc_psn_lt(psn, tx->una))
		want = 1;
	else if (!in_flight(tx, psn) || !m.need_resp[off(psn)])
		want = -EINVAL;
	else
		want = m.done[off(psn)] ? 1 : 0;
	ret = mrc_tx_resp(tx, psn, m.now, &r);
	FZ_CHECK(ret == want);
	if (ret)
		return;
	FZ_CHECK(r.newly_acked == 1);
	m.done[off(psn)] = true;
	check_state(tx);
	FZ_CHECK(r.una_advanced == (tx->una != una0));
}

static u32 count_lost(const struct mrc_tx *tx)
{
	u32 psn, n = 0;

	for (psn = tx->una; psn != tx->nxt; psn++)
		n += !!(mrc_tx_slot(tx, psn)->flags & MRC_TXS_LOST);
	return n;
}

/* a timer expiry at m.now, checked */
static enum mrc_tx_timer_action timer(struct mrc_tx *tx, u32 retry,
				      u32 fail_after)
{
	bool idle = tx->una == tx->nxt;
	u32 base, rtos = tx->rtos, timeouts = tx->timeouts;
	enum mrc_tx_timer_action act;
	u32 deadline, psn;

	FZ_CHECK(mrc_tx_deadline(tx, &deadline) == !idle);
	if (!idle) {
		/* never later than the RTO after the oldest transmission */
		base = mrc_tx_slot(tx, tx->una)->xmit_ts;
		if (mrc_time_before(base, tx->progress_ts))
			base = tx->progress_ts;
		FZ_CHECK((s32)(deadline - base) <= (s32)tx->rtt.rto_max);
	}
	act = mrc_tx_on_timer(tx, m.now, retry, fail_after);
	FZ_CHECK(act <= MRC_TXT_FAIL);
	if (idle)
		FZ_CHECK(act == MRC_TXT_NONE);
	/* both limits passed: retries and the QP's own timeout */
	if (act == MRC_TXT_FAIL)
		FZ_CHECK(fail_after && tx->timeouts > retry &&
			 m.now - tx->progress_ts >= fail_after);
	if (act == MRC_TXT_RTO)
		FZ_CHECK(tx->rtos == rtos + 1 && tx->timeouts == timeouts + 1);
	if (act == MRC_TXT_PROBE) {
		psn = tx->probe_psn;
		FZ_CHECK(in_flight(tx, psn) && !m.done[off(psn)]);
		FZ_CHECK(mrc_tx_slot(tx, psn)->flags & MRC_TXS_LOST);
	}
	if (act == MRC_TXT_RETX)
		FZ_CHECK(tx->lost > 0);
	return act;
}

static void op_timer(struct fz *f, struct mrc_tx *tx)
{
	u32 retry = fz_u8(f) % 8;

	timer(tx, retry, fz_u8(f) * 1000u);
}

static void op_lost(struct fz *f, struct mrc_tx *tx)
{
	u32 psn = pick_psn(f, tx), start, n0;
	bool want, found;

	switch (fz_u8(f) % 3) {
	case 0:
		want = in_flight(tx, psn) && !m.done[off(psn)] &&
		       !(mrc_tx_slot(tx, psn)->flags & MRC_TXS_LOST);
		FZ_CHECK(mrc_tx_mark_lost(tx, psn) == want);
		break;
	case 1:
		n0 = count_lost(tx);
		FZ_CHECK(mrc_tx_detect_loss(tx, m.now) == count_lost(tx) - n0);
		break;
	default:
		/* the lowest PSN marked lost at or after psn */
		start = mrc_psn_lt(psn, tx->una) ? tx->una : psn;
		found = mrc_tx_next_lost(tx, &psn);
		if (!found) {
			for (; in_flight(tx, start); start++)
				FZ_CHECK(!(mrc_tx_slot(tx, start)->flags &
					   MRC_TXS_LOST));
			break;
		}
		FZ_CHECK(in_flight(tx, psn) && mrc_psn_le(start, psn));
		FZ_CHECK(mrc_tx_slot(tx, psn)->flags & MRC_TXS_LOST);
		for (; start != psn; start++)
			FZ_CHECK(!(mrc_tx_slot(tx, start)->flags &
				   MRC_TXS_LOST));
	}
}

/* the requester resends what a timer marked lost */
static void resend_lost(struct mrc_tx *tx, u16 entropy)
{
	u32 psn = tx->una;

	while (mrc_tx_next_lost(tx, &psn)) {
		FZ_CHECK(mrc_tx_sent(tx, psn, 1, m.now, entropy, 0) == 0);
		FZ_CHECK(!(mrc_tx_slot(tx, psn)->flags & MRC_TXS_LOST));
		psn++;
	}
}

/*
 * Time passes.  The caller's timer fires when due, as the driver's
 * hrtimer does (late by a stall at most), and what it marks lost is
 * resent: the engine's serial clock comparisons assume that nothing
 * waits 2^31 us.
 */
static void op_clock(struct fz *f, struct mrc_tx *tx)
{
	u8 k = fz_u8(f);
	u32 dt, target, d;
	int i;

	if (k < 0xc0)
		dt = k * 7;
	else if (k < 0xfe)
		dt = fz_u16(f) * 16;
	else
		dt = fz_u32(f) >> 6;	/* a stall, up to 67 s */
	target = m.now + dt;
	for (i = 0; mrc_tx_deadline(tx, &d) && !mrc_time_before(target, d);
	     i++) {
		if (i == 16)
			return;		/* time stops at the last expiry */
		if (mrc_time_before(m.now, d))
			m.now = d;
		if (timer(tx, 7, 0) == MRC_TXT_NONE)
			break;
		resend_lost(tx, (u16)(0xc000 + i % ENTROPIES));
	}
	m.now = target;
}

/* tunables in the ranges the driver sets (mrc_qp.c) */
static void setup(struct fz *f, struct mrc_tx *tx, struct mrc_tx_slot *slots)
{
	u32 rto_min = 1 + fz_u16(f), rto_max;

	mrc_tx_init(tx, slots, m.nslots, m.isn, 1 + fz_u16(f));
	rto_max = rto_min + fz_u32(f) % 2000000;
	mrc_rtt_init(&tx->rtt, fz_u32(f) % 1000000, rto_min, rto_max);
	tx->reo_steps_min = 1u << (fz_u8(f) % 9);
	tx->reo_steps = tx->reo_steps_min;
	tx->reo_cap_var = fz_u8(f) % 17;
	tx->tmo_steps_max = 1u << (fz_u8(f) % 4);
	tx->tlp_off = fz_bool(f);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	struct fz f = { data, size };
	struct mrc_tx_slot *slots;
	static struct mrc_tx tx;

	memset(&m, 0, offsetof(struct model, need_resp));
	m.nslots = 1u << (1 + fz_u8(&f) % 10);	/* 2 .. 1024 */
	m.isn = fz_start(&f);
	m.now = fz_start(&f);
	slots = malloc(m.nslots * sizeof(*slots));
	FZ_CHECK(slots);
	setup(&f, &tx, slots);
	check_state(&tx);

	while (fz_left(&f)) {
		switch (fz_u8(&f) % 8) {
		case 0:
		case 1:
			op_send(&f, &tx);
			break;
		case 2:
			op_resend(&f, &tx);
			break;
		case 3:
			op_ack(&f, &tx);
			break;
		case 4:
			op_resp(&f, &tx);
			break;
		case 5:
			if (fz_u8(&f) < 0xf0) {
				op_timer(&f, &tx);
				break;
			}
			/* the QP's local ACK timeout caps the RTO */
			mrc_rtt_set_max(&tx.rtt, fz_u32(&f) % 4000000);
			break;
		case 6:
			op_lost(&f, &tx);
			break;
		default:
			op_clock(&f, &tx);
			break;
		}
		check_state(&tx);
	}
	free(slots);
	return 0;
}

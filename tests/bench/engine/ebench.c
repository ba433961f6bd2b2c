// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Engine cost per packet, measured natively (issue 46, deliverable 6).
 *
 * The transport engine (drivers/infiniband/sw/metaroce/engine, its
 * sources linked unchanged) runs one RC WRITE stream between a sender and
 * a receiver on the host CPU, outside the test bed's emulated guest.  The calls per
 * packet, per ACK and per timer are those of the driver's glue
 * (mrc_req.c, mrc_resp.c, mrc_net.c) with the module's default
 * parameters; what the glue does around them (skbs, locks, counters,
 * copies) is not here.  A small network model between the two carries
 * the encoded headers with a one-way delay per entropy, random loss and
 * reordering.
 *
 * Time is simulated: a u32 microsecond clock that the model advances in
 * ticks, the sender putting up to --rate packets per microsecond on the
 * link (3: 98 Gbit/s of 4 KiB segments).  Each tick runs three phases,
 * each timed on its own with clock_gettime(CLOCK_MONOTONIC), the cost of
 * a clock read taken off:
 *   receiver  the data packets that arrived: parse, classify, credit,
 *             placement checks (region, write log), accept, ACK
 *             coalescing, and the ACKs that are due: credit grant, SACK
 *             bitmap, header build; the delayed-ACK timer;
 *   ACK       the ACKs that arrived at the sender: parse, SACK and RACK
 *             processing (mrc_tx_ack), path feedback, congestion window,
 *             credit, pacing rate, loss detection, the timer deadline;
 *             the retransmission timer when due;
 *   send      retransmissions, then new packets while the window allows:
 *             pacing, path pick, header build, scoreboard, window use.
 * The network model runs between the phases, untimed.  An interval that
 * took a hundred times the usual (50 us plus 5 us per packet or ACK) was
 * interrupted by the scheduler or the hypervisor: it is left out, with
 * its packets, and counted.  The scenarios take turns run by run, each
 * run of a scenario does the same work (same seed), and the report gives
 * the median of the runs and the lowest.
 *
 * Scenarios: lossless and in order; 1 % random loss of data packets;
 * reordering across the 16 entropies (each entropy's path has its own
 * delay, so packets of one entropy stay in order and others pass them).
 * Every run checks that the engine did the work: every PSN delivered
 * exactly once, the sender's scoreboard empty at the end, no engine call
 * refused, no placement cut, the packet and ACK counts conserved, and per
 * scenario no retransmission without loss, every drop repaired, losses
 * found by RACK rather than by timeouts.  A run whose checks fail makes
 * the exit status non-zero.  --check runs them on short runs (make
 * check), and two runs with a deliberately broken receiver that must
 * fail them (--sabotage).
 *
 *   mrc_ebench [--packets N] [--repeats K] [--scenarios a,b] [--json FILE]
 *   mrc_ebench --check          short runs, the checks only (make check)
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metaroce/mrc_engine.h>
#include <metaroce/mrc_wire.h>

/* the driver's sizes (mrc.h) and module defaults (mrc_main.c) */
#define TX_SLOTS	1024	/* MRC_TX_SLOTS */
#define RX_BITS		1024	/* MRC_RX_BITS */
#define WINDOW		512	/* window */
#define ENTROPIES	16	/* entropies */
#define ACK_EVERY	4	/* ack_every */
#define ACK_DELAY_US	50	/* ack_delay_us */
#define CC_TARGET_US	4000	/* cc_target_us */
#define RTO_MIN_US	5000	/* rto_min_us */
#define RTO_INIT_US	10000	/* rto_init_us */
#define REO_STEPS	16	/* reo_steps */
#define REO_CAP_VAR	4	/* reo_cap_var */
#define TMO_STEPS	8	/* tmo_steps */
#define CREDIT_TARGET_US 250	/* credit_target_us */
#define CREDIT_EPOCH_US	2000	/* credit_epoch_us */
#define CREDIT_HOLD_US	4000	/* credit_hold_us */
#define QP_TIMEOUT	14	/* perftest's QP timeout: 4.096 us << 14 */
#define RETRY_CNT	7
#define SEG_SHIFT	12	/* 4096-byte segments (RDMA MTU 4096) */
#define SEG		(1u << SEG_SHIFT)
#define MSG_PKTS	16	/* 64 KiB WRITEs */
#define REGION_PKTS	16384	/* the target region: 64 MiB, written round */
#define VA_BASE		0x7f0000000000ull
#define RKEY		0x1234
#define LKEY		0x5678
#define SQPN		0x11
#define RQPN		0x12
#define PAGE_SHIFT_	12

#define POOL		8192	/* packets in the network at once, at most */

typedef unsigned long long ull;

/* ---- parameters ---- */

struct scen {
	const char *name;
	const char *desc;
	double loss;		/* drop probability of a data packet */
	u32 skew_us;		/* per-entropy path delay spread, 0: none */
};

static const struct scen scens[] = {
	{ "lossless", "lossless, in order", 0, 0 },
	{ "loss1", "1 % random loss of data packets", 0.01, 0 },
	{ "reorder", "reordering across 16 entropies (paths 0-12 us apart)",
	  0, 12 },
};

#define NSCEN (sizeof(scens) / sizeof(scens[0]))

enum sabotage {
	SAB_NONE,
	SAB_SKIP_ACCEPT,	/* the receiver never accepts one PSN */
	SAB_NO_SACK,		/* ACKs carry no SACK words */
};

static struct {
	u64 packets;		/* new PSNs per run */
	u32 repeats;
	u32 rate;		/* packets per microsecond on the link */
	u32 tick_us;
	u32 owd_us;		/* base one-way delay */
	u64 seed;
	bool check;
	bool verbose;
	enum sabotage sabotage;
	const char *json;
	const char *label;
	bool want[NSCEN];
} opt = {
	.packets = 2000000,
	.repeats = 7,
	.rate = 3,		/* 4 KiB segments at 98 Gbit/s */
	.tick_us = 8,
	.owd_us = 8,
	.seed = 0x6d726365ull,
};

/* ---- small helpers ---- */

static u64 rng_state;

static u64 rng_next(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static double rng_unit(void)
{
	return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static u32 umin(u32 a, u32 b)
{
	return a < b ? a : b;
}

static ull now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ull)ts.tv_sec * 1000000000ull + (ull)ts.tv_nsec;
}

static int cmp_ull(const void *a, const void *b)
{
	ull x = *(const ull *)a, y = *(const ull *)b;

	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* cost of one clock read as it shows in an interval: median of many */
static ull clock_overhead_ns(void)
{
	enum { N = 20001 };
	static ull d[N];
	ull t0, t1;
	int i;

	for (i = 0; i < N; i++) {
		t0 = now_ns();
		t1 = now_ns();
		d[i] = t1 - t0;
	}
	qsort(d, N, sizeof(d[0]), cmp_ull);
	return d[N / 2];
}

/* ---- the network: packets in flight, ordered by arrival ---- */

struct wpkt {
	u32 at;			/* arrival time */
	u64 seq;		/* FIFO among equal arrival times */
	u16 sport;		/* entropy */
	u16 hlen;
	u32 len;		/* datagram length: header and payload */
	u8 hdr[MRC_HDR_MAX_LEN];
};

struct heap {
	u32 n;
	u32 idx[POOL];
};

struct net {
	struct wpkt pool[POOL];
	u32 free[POOL];
	u32 nfree;
	u64 seq;
	struct heap data;	/* sender -> receiver */
	struct heap acks;	/* receiver -> sender */
	u32 out[POOL];		/* built in a timed phase, queued after it */
	u32 nout;
	u32 in[POOL];		/* arrived, for the next timed phase */
	u32 nin;
};

static struct net net;

static bool heap_less(u32 a, u32 b)
{
	const struct wpkt *x = &net.pool[a], *y = &net.pool[b];

	if (x->at != y->at)
		return mrc_time_before(x->at, y->at);
	return x->seq < y->seq;
}

static void heap_push(struct heap *h, u32 i)
{
	u32 k = h->n++, p;

	while (k) {
		p = (k - 1) / 2;
		if (!heap_less(i, h->idx[p]))
			break;
		h->idx[k] = h->idx[p];
		k = p;
	}
	h->idx[k] = i;
}

static u32 heap_pop(struct heap *h)
{
	u32 top = h->idx[0], last = h->idx[--h->n], k = 0, c;

	for (;;) {
		c = 2 * k + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && heap_less(h->idx[c + 1], h->idx[c]))
			c++;
		if (!heap_less(h->idx[c], last))
			break;
		h->idx[k] = h->idx[c];
		k = c;
	}
	if (h->n)
		h->idx[k] = last;
	return top;
}

static void net_init(void)
{
	u32 i;

	memset(&net, 0, sizeof(net));
	for (i = 0; i < POOL; i++)
		net.free[i] = POOL - 1 - i;
	net.nfree = POOL;
}

/* ---- failures: a run whose checks fail ---- */

static int run_fail;
static char fail_msg[4][200];

static void failf(const char *fmt, ...)
{
	va_list ap;

	if (run_fail < 4) {
		va_start(ap, fmt);
		vsnprintf(fail_msg[run_fail], sizeof(fail_msg[0]), fmt, ap);
		va_end(ap);
	}
	run_fail++;
}

/* a packet for the output queue of a timed phase; NULL: none left */
static struct wpkt *net_get(u32 *idx)
{
	if (!net.nfree) {
		failf("network pool exhausted");
		return NULL;
	}
	*idx = net.free[--net.nfree];
	return &net.pool[*idx];
}

static void net_put(u32 idx)
{
	net.free[net.nfree++] = idx;
}

/* ---- sender: the requester's side of the glue (mrc_req.c) ---- */

struct snd {
	struct mrc_tx tx;
	struct mrc_tx_slot slots[TX_SLOTS];
	struct mrc_cc cc;
	struct mrc_pace pace;
	struct mrc_path path;
	struct mrc_path_ent ents[ENTROPIES];
	struct mrc_region lmr;	/* the source buffer, sent zero-copy */
	u32 isn, win_max, credit, credit_seg, spurious_rtos;
	u32 retx_charged;
	bool retx_charged_valid;
	u32 now;		/* the sender's clock, never going back */
	bool tmr_armed;
	u32 tmr_at;
	bool failed;
	/* counters */
	u64 sent_new, sent_retx, acks, bad_acks, stale_acks, sack_acks;
	u64 timer_runs, rtos, tlps, timer_retx;
};

/* ---- receiver: the responder's side (mrc_resp.c) ---- */

struct rcv {
	struct mrc_rx rx;
	u64 map[RX_BITS / 64];
	struct mrc_wlog wlog;
	struct mrc_wlog_ent wents[RX_BITS];
	struct mrc_ackc ackc;
	struct mrc_credit credit;
	struct mrc_credit_flow flow;
	struct mrc_region mr;	/* the WRITE target */
	u32 last_tsval, last_arrival;
	u16 last_entropy;
	bool ack_held;
	u32 ack_held_at;
	bool ack_timer_armed;
	u32 ack_timer_at;
	u32 now;
	u32 sab_psn;		/* SAB_SKIP_ACCEPT: the PSN never accepted */
	/* counters */
	u64 pkts, new_pkts, dup_pkts, ooo, acks_sent, ack_timer_acks;
	u64 sack_acks, sack_words, holds, errors, cut;
	u64 bytes;
};

static struct snd S;
static struct rcv R;

/* the scenario of the current run */
static u32 cur_skew;
static double cur_loss;

/* per-entropy one-way delay: a fixed path per port and direction */
static u32 path_delay(u16 port, bool back)
{
	u32 h;

	if (!cur_skew)
		return opt.owd_us;
	h = (u32)port * 2654435761u ^ (back ? 0x9e3779b9u : 0);
	h ^= h >> 16;
	return opt.owd_us + h % (cur_skew + 1);
}

/* mrc_req_credit_wnd() */
static u32 snd_credit_wnd(void)
{
	return mrc_credit_wnd(S.credit, SEG, S.credit_seg);
}

/* mrc_req_apply_wnd(): congestion window, module limit, peer's credit */
static void snd_apply_wnd(void)
{
	u32 w = umin(mrc_cc_wnd(&S.cc), S.win_max);

	if (S.credit)
		w = umin(w, snd_credit_wnd());
	S.tx.wnd = w;
	mrc_pace_rate(&S.pace, w, S.tx.rtt.srtt, S.cc.slow_start);
	S.tx.tlp_off = S.credit == 1;
}

/* mrc_req_credit_full() */
static bool snd_credit_full(u32 n)
{
	return S.credit && S.tx.wnd == snd_credit_wnd() &&
	       mrc_tx_inflight(&S.tx) + n >= S.tx.wnd;
}

static u64 psn_va(u32 psn)
{
	return VA_BASE + ((u64)((psn - S.isn) % REGION_PKTS) << SEG_SHIFT);
}

/* mrc_build_req() for one WRITE packet, and the zero-copy attach */
static void snd_build(u32 psn, bool retx, u16 sport)
{
	u32 k = psn - S.isn, idx, in_page;
	struct wpkt *w;
	struct mrc_pkt p;
	u64 va = psn_va(psn), page;

	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_WRITE;
	p.dqpn = RQPN;
	p.sqpn = SQPN;
	p.psn = psn;
	p.tsval = S.now;
	p.pmtu_shift = SEG_SHIFT;
	if (retx)
		p.flags |= MRC_F_RETX;
	if (snd_credit_full(1))
		p.flags |= MRC_F_CREDIT;
	if (k % MSG_PKTS == MSG_PKTS - 1)
		p.flags |= MRC_F_LAST | MRC_F_ACKREQ;
	p.req.va = va;
	p.req.rkey = RKEY;
	p.req.msg_len = MSG_PKTS * SEG;
	p.req.offset = (k % MSG_PKTS) * SEG;
	/* the payload leaves as a reference to the source buffer's page */
	if (mrc_region_check(&S.lmr, va, SEG, 0) ||
	    mrc_region_chunk(&S.lmr, 0, PAGE_SHIFT_, va, SEG, &page,
			     &in_page) != SEG)
		failf("sender: source buffer check refused PSN %u", psn);
	w = net_get(&idx);
	if (!w)
		return;
	w->hlen = (u16)mrc_wire_build(w->hdr, &p);
	w->len = w->hlen + SEG;
	w->sport = sport;
	net.out[net.nout++] = idx;
}

/* mrc_req_sent() */
static void snd_sent(u32 psn, u16 sport)
{
	if (mrc_tx_sent(&S.tx, psn, 1, S.now, sport, 0))
		failf("mrc_tx_sent refused PSN %u", psn);
	mrc_pace_sent(&S.pace, S.now);
	mrc_cc_sent(&S.cc, mrc_tx_inflight(&S.tx));
}

/* mrc_tx_timer_update(): the transmit timer's next deadline */
static void snd_timer_update(void)
{
	u32 at, t;
	bool have = mrc_tx_deadline(&S.tx, &at);

	if (mrc_pace_deadline(&S.pace, &t) &&
	    (!have || mrc_time_before(t, at))) {
		at = t;
		have = true;
	}
	S.tmr_armed = have;
	S.tmr_at = at;
}

static bool snd_all_sent(void)
{
	return S.tx.nxt - S.isn >= opt.packets;
}

static bool snd_has_work(void)
{
	return !S.failed && (S.tx.lost ||
			     (!snd_all_sent() && mrc_tx_can_send(&S.tx, 1)));
}

/*
 * mrc_send_retx() and mrc_send_new(): up to @budget packets, the i-th at
 * @t0 + i / rate on the sender's clock
 */
static void snd_run(u32 t0, u32 budget)
{
	u32 psn = S.tx.una, i = 0;
	u16 sport;

	if (mrc_time_before(S.now, t0))
		S.now = t0;
	while (S.tx.lost && i < budget) {
		const struct mrc_tx_slot *sl;

		if (!mrc_tx_next_lost(&S.tx, &psn))
			break;
		S.now = t0 + i / opt.rate;
		if (!mrc_pace_ok(&S.pace, S.now))
			break;
		sl = mrc_tx_slot(&S.tx, psn);
		if (mrc_tx_slot_charges(sl) &&
		    !(S.retx_charged_valid && S.retx_charged == psn)) {
			mrc_path_on_loss(&S.path, sl->entropy, S.now);
			S.retx_charged = psn;
			S.retx_charged_valid = true;
		}
		sport = mrc_path_pick(&S.path, S.now, sl->entropy);
		snd_build(psn, true, sport);
		S.retx_charged_valid = false;
		snd_sent(psn, sport);
		S.sent_retx++;
		i++;
		psn++;
	}
	while (i < budget && !snd_all_sent()) {
		if (!mrc_tx_can_send(&S.tx, 1))
			break;
		S.now = t0 + i / opt.rate;
		if (!mrc_pace_ok(&S.pace, S.now))
			break;
		psn = S.tx.nxt;
		/* mrc_req_entropy(): a lone packet takes the fastest path */
		if (mrc_tx_outstanding(&S.tx))
			sport = mrc_path_pick(&S.path, S.now, 0);
		else
			sport = mrc_path_pick_lone(&S.path, S.now);
		snd_build(psn, false, sport);
		snd_sent(psn, sport);
		S.sent_new++;
		i++;
	}
	if (snd_all_sent())
		mrc_path_note_dry(&S.path);
	snd_timer_update();
}

/* mrc_req_rcv_ack() for one ACK (every ACK here is MRC_SYN_ACK) */
static void snd_ack(const struct wpkt *w)
{
	struct mrc_ack_result r;
	struct mrc_ack_info a;
	struct mrc_pkt p;
	u32 i, ce = 0;

	if (mrc_time_before(S.now, w->at))
		S.now = w->at;
	if (mrc_wire_parse(w->hdr, w->len, &p) || p.opcode != MRC_OP_ACK) {
		failf("sender: an ACK did not parse");
		return;
	}
	S.acks++;
	a = (struct mrc_ack_info){
		.cum = p.psn,
		.sack = p.ack.sack,
		.sack_words = p.ack.sack_words,
		.ts_echo = p.ack.ts_echo,
		.delay = p.ack.delay,
		.ts_valid = true,
		.dup = p.ack.flags & MRC_ACKF_DUP,
		.held = p.ack.flags & MRC_ACKF_HELD,
		.dup_psn = p.ack.nak_psn,
	};
	if (p.ack.sack_words)
		S.sack_acks++;
	if (mrc_tx_ack(&S.tx, &a, S.now, &r)) {
		S.bad_acks++;
		return;
	}
	/* mrc_req_path_uncharge() */
	for (i = 0; i < r.n_uncharge; i++)
		mrc_path_on_loss_undo(&S.path, r.uncharge[i]);
	/* mrc_req_ack_apply(): path feedback and credit from a fresh ACK */
	if (r.stale) {
		S.stale_acks++;
	} else {
		mrc_path_on_ack(&S.path, p.ack.entropy,
				p.ack.flags & MRC_ACKF_CE, r.rtt_sample, S.now);
		S.credit = p.ack.credit;
		ce = umin(p.ack.ce_count, r.newly_acked + r.newly_seen);
	}
	/* mrc_req_cc() */
	if (S.tx.spurious_rtos != S.spurious_rtos) {
		S.spurious_rtos = S.tx.spurious_rtos;
		mrc_cc_undo_rto(&S.cc);
	}
	mrc_cc_on_ack(&S.cc, S.now, r.newly_acked, r.cc_rtt, S.tx.rtt.srtt);
	if (S.cc.min < S.cc.max)
		mrc_cc_on_ecn(&S.cc, S.now, r.newly_acked, ce, S.tx.rtt.srtt);
	snd_apply_wnd();
	/* mrc_req_progress() */
	mrc_tx_detect_loss(&S.tx, S.now);
	/* nothing to send: only the timer is re-armed */
	if (!snd_has_work())
		snd_timer_update();
}

/* mrc_tx_timer_fn() */
static void snd_timer(u32 now)
{
	enum mrc_tx_timer_action act;
	u32 fail_after = (u32)(((4096ull << QP_TIMEOUT) / 1000) *
			       (RETRY_CNT + 1));

	if (mrc_time_before(S.now, now))
		S.now = now;
	S.tmr_armed = false;
	S.timer_runs++;
	mrc_pace_expire(&S.pace, S.now);
	act = mrc_tx_on_timer(&S.tx, S.now, RETRY_CNT, fail_after);
	switch (act) {
	case MRC_TXT_RETX:
		S.timer_retx++;
		break;
	case MRC_TXT_PROBE:
		S.tlps++;
		break;
	case MRC_TXT_RTO:
		S.rtos++;
		mrc_path_on_loss(&S.path,
				 mrc_tx_slot(&S.tx, S.tx.una)->entropy, S.now);
		mrc_cc_on_rto(&S.cc, S.now);
		snd_apply_wnd();
		break;
	case MRC_TXT_FAIL:
		S.failed = true;
		failf("the QP failed: retries exceeded at PSN %u",
		      S.tx.una);
		return;
	default:
		break;
	}
	if (!snd_has_work())
		snd_timer_update();
}

/* mrc_send_ack_at(): an ACK with SACK for rx.nxt */
static void rcv_send_ack(u8 flags, u32 nak_psn)
{
	struct wpkt *w;
	struct mrc_pkt p;
	u32 idx;

	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_ACK;
	p.dqpn = SQPN;
	p.sqpn = RQPN;
	p.psn = R.rx.nxt;
	p.tsval = R.now;
	p.pmtu_shift = 13;
	p.ack.max_dgram = 9000 - 48;
	p.ack.syndrome = MRC_SYN_ACK;
	p.ack.nak_psn = flags & MRC_ACKF_DUP ? nak_psn : 0;
	p.ack.ts_echo = R.last_tsval;
	p.ack.delay = R.now - R.last_arrival;
	if (R.ack_held) {
		if (!mrc_time_before(R.ack_held_at, R.last_arrival))
			p.ack.delay = R.ack_held_at - R.last_arrival;
		mrc_credit_unhold(&R.credit, &R.flow);
		R.ack_held = false;
	}
	p.ack.ce_count = (u16)umin(R.ackc.ce, 0xffff);
	p.ack.entropy = R.last_entropy;
	p.ack.flags = flags;
	p.ack.credit = mrc_credit_grant(&R.credit);
	p.ack.sack_words = (u8)mrc_rx_sack(&R.rx, p.ack.sack,
					   MRC_ACK_MAX_SACKW);
	if (opt.sabotage == SAB_NO_SACK)
		p.ack.sack_words = 0;
	p.hdr_len = (u16)mrc_wire_hdr_len(MRC_OP_ACK, 0, p.ack.sack_words);
	mrc_ackc_sent(&R.ackc);
	R.ack_timer_armed = false;
	R.acks_sent++;
	if (p.ack.sack_words) {
		R.sack_acks++;
		R.sack_words += p.ack.sack_words;
	}
	w = net_get(&idx);
	if (!w)
		return;
	w->hlen = (u16)mrc_wire_build(w->hdr, &p);
	w->len = w->hlen;
	/* back on the trigger's port */
	w->sport = R.last_entropy;
	net.out[net.nout++] = idx;
}

/* mrc_resp_ack_due(): send the coalesced ACK, or hold it */
static void rcv_ack_due(void)
{
	struct mrc_credit_flow *f = NULL;

	if (mrc_credit_hold(&R.credit, &R.flow, R.now, &f)) {
		if (!R.ack_held) {
			R.ack_held = true;
			R.ack_held_at = R.now;
			R.holds++;
		}
		R.ack_timer_armed = true;
		R.ack_timer_at = R.flow.hold_since + R.flow.hold_for;
		return;
	}
	rcv_send_ack(0, 0);
}

/* mrc_ack_timer_fn() */
static void rcv_ack_timer(void)
{
	if (mrc_time_before(R.now, R.ack_timer_at))
		R.now = R.ack_timer_at;
	R.ack_timer_armed = false;
	R.ack_timer_acks++;
	if (R.ackc.pending)
		rcv_ack_due();
	else
		mrc_credit_unhold(&R.credit, &R.flow);
}

/* mrc_resp_rcv() for one WRITE packet */
static void rcv_data(const struct wpkt *w)
{
	struct mrc_piece pc[16];
	enum mrc_rx_verdict v;
	struct mrc_pkt p;
	u32 flags = 0, old_nxt, in_page, off;
	u64 page;
	int n, i;

	if (mrc_time_before(R.now, w->at))
		R.now = w->at;
	R.pkts++;
	if (mrc_wire_parse(w->hdr, w->len, &p) || p.opcode != MRC_OP_WRITE ||
	    p.dqpn != RQPN || p.pay_len != SEG) {
		R.errors++;
		return;
	}
	v = mrc_rx_classify(&R.rx, p.psn, 1);
	if (v == MRC_RX_BEYOND) {
		R.errors++;
		return;
	}
	R.last_tsval = p.tsval;
	R.last_arrival = R.now;
	R.last_entropy = w->sport;
	if (p.flags & MRC_F_ACKREQ)
		flags |= MRC_ACKC_ACKREQ;
	if (p.flags & MRC_F_CREDIT)
		flags |= MRC_ACKC_CREDIT;
	/* mrc_resp_credit() */
	mrc_credit_on_data(&R.credit, &R.flow, R.now, p.tsval, false,
			   p.flags & MRC_F_CREDIT);
	if (v == MRC_RX_DUP) {
		u8 ackf = MRC_ACKF_DUP;

		R.dup_pkts++;
		if (R.ack_held || R.ackc.pending)
			ackf |= MRC_ACKF_HELD;
		mrc_ackc_rx(&R.ackc, R.now, flags | MRC_ACKC_DUP);
		rcv_send_ack(ackf, p.psn);
		return;
	}
	/* mrc_place_write(): the key's region, then the write log */
	if (mrc_region_check(&R.mr, p.req.va, p.pay_len,
			     MRC_ACC_REMOTE_WRITE)) {
		R.errors++;
		return;
	}
	n = mrc_wlog_pieces(&R.wlog, &R.rx, p.psn, p.req.va, p.req.rkey,
			    p.pay_len, pc, 16);
	if (n != 1 || pc[0].len != p.pay_len)
		R.cut++;
	for (i = 0; i < n; i++) {
		/* mrc_mr_xfer(): where each piece lands, page by page */
		for (off = 0; off < pc[i].len;)
			off += mrc_region_chunk(&R.mr, 0, PAGE_SHIFT_,
						p.req.va + pc[i].off + off,
						pc[i].len - off, &page,
						&in_page);
		R.bytes += pc[i].len;
	}
	old_nxt = R.rx.nxt;
	mrc_wlog_record(&R.wlog, p.psn, p.req.va, p.req.rkey, p.pay_len);
	if (opt.sabotage == SAB_SKIP_ACCEPT && p.psn == R.sab_psn) {
		/* placed but never recorded: the harness's checks must see it */
	} else if (mrc_rx_accept(&R.rx, p.psn, 1) != MRC_RX_NEW) {
		R.errors++;
		return;
	} else {
		R.new_pkts++;
	}
	if (p.psn != old_nxt)
		R.ooo++;
	if (p.psn == old_nxt && R.rx.nxt - old_nxt != 1)
		flags |= MRC_ACKC_FILL;
	if (mrc_ackc_rx(&R.ackc, R.now, flags)) {
		rcv_ack_due();
	} else if (!R.ack_held && !R.ack_timer_armed) {
		/* mrc_ack_timer_arm() */
		u32 at;

		if (mrc_ackc_deadline(&R.ackc, &at)) {
			R.ack_timer_armed = true;
			R.ack_timer_at = at;
		}
	}
}

/* ---- one run ---- */

/* the timed work of one phase */
struct phase {
	ull ns;			/* time of the timed intervals, clock cost off */
	u64 units;		/* packets or ACKs handled, all of them */
	u64 timed;		/* those in the intervals timed */
	u64 intervals;
	u64 interrupted;	/* intervals left out, see phase_add() */
};

struct result {
	struct phase tx, ack, rx;
	u64 drops, retx_drops, ack_drops, ticks, sim_us;
	ull wall_ns;
};

/*
 * An interval of @units packets or ACKs took @dt ns.  One that took over
 * 50 us plus 5 us per unit (a hundred times the usual) was interrupted,
 * by the scheduler or the hypervisor: it is left out, with its units,
 * and counted.
 */
static void phase_add(struct phase *ph, ull dt, ull clk, u64 units)
{
	ull d = dt > clk ? dt - clk : 0;

	ph->units += units;
	ph->intervals++;
	if (d > 50000 + 5000 * units) {
		ph->interrupted++;
		return;
	}
	ph->ns += d;
	ph->timed += units;
}

/* ns per unit */
static double phase_per(const struct phase *ph)
{
	return ph->timed ? (double)ph->ns / ph->timed : 0;
}

static void setup(const struct scen *sc, u32 isn, u32 t0)
{
	u32 steps;

	cur_skew = sc->skew_us;
	cur_loss = sc->loss;
	net_init();
	memset(&S, 0, sizeof(S));
	memset(&R, 0, sizeof(R));

	/* mrc_qp_modify() at RTS (sender) */
	S.isn = isn;
	S.now = t0;
	S.win_max = WINDOW;
	mrc_tx_init(&S.tx, S.slots, TX_SLOTS, isn, S.win_max);
	mrc_cc_init(&S.cc, 16, 1, S.win_max, CC_TARGET_US);
	S.tx.wnd = mrc_cc_wnd(&S.cc);
	mrc_pace_init(&S.pace, MRC_PACE_BURST, MRC_PACE_MIN_GAP_US);
	mrc_rtt_init(&S.tx.rtt, RTO_INIT_US, RTO_MIN_US, 4000000);
	mrc_rtt_set_max(&S.tx.rtt, (u32)((4096ull << QP_TIMEOUT) / 1000));
	steps = REO_STEPS;
	S.tx.reo_steps_min = steps;
	S.tx.reo_steps = steps;
	S.tx.reo_cap_var = REO_CAP_VAR;
	S.tx.tmo_steps_max = TMO_STEPS;
	S.credit_seg = SEG;
	mrc_path_init(&S.path, S.ents, ENTROPIES, (u32)rng_next(), true);
	S.lmr = (struct mrc_region){ VA_BASE, (u64)REGION_PKTS * SEG,
				     MRC_ACC_LOCAL_WRITE };

	/* at RTR (receiver), and the device's credit pool */
	R.now = t0;
	mrc_rx_init(&R.rx, R.map, RX_BITS, isn);
	mrc_wlog_init(&R.wlog, R.wents, RX_BITS, isn);
	mrc_ackc_init(&R.ackc, ACK_EVERY, ACK_DELAY_US);
	mrc_credit_init(&R.credit, 2, WINDOW, CREDIT_TARGET_US,
			CREDIT_EPOCH_US);
	mrc_credit_set_hold(&R.credit, CREDIT_HOLD_US);
	mrc_credit_flow_init(&R.flow);
	R.mr = (struct mrc_region){ VA_BASE, (u64)REGION_PKTS * SEG,
				    MRC_ACC_LOCAL_WRITE | MRC_ACC_REMOTE_WRITE };
	R.sab_psn = isn + (u32)(opt.packets / 2);
}

/* the built packets of a phase into the network, untimed */
static void net_queue(bool back)
{
	u32 i, idx;

	for (i = 0; i < net.nout; i++) {
		struct wpkt *w = &net.pool[idx = net.out[i]];
		u32 sent = back ? R.now : S.now;

		w->at = sent + path_delay(w->sport, back);
		w->seq = net.seq++;
		heap_push(back ? &net.acks : &net.data, idx);
	}
	net.nout = 0;
}

/* what arrived by @now, into net.in; data packets may be dropped */
static void net_arrive(struct heap *h, u32 now, double loss, u64 *drops,
		       u64 *retx_drops)
{
	u32 idx;

	net.nin = 0;
	while (h->n && !mrc_time_before(now, net.pool[h->idx[0]].at)) {
		idx = heap_pop(h);
		if (loss > 0 && rng_unit() < loss) {
			(*drops)++;
			if (net.pool[idx].hdr[MRC_BTH_OFF_FLAGS] & MRC_F_RETX)
				(*retx_drops)++;
			net_put(idx);
			continue;
		}
		net.in[net.nin++] = idx;
	}
}

static u32 next_event(u32 now)
{
	u32 t = now + 1000000;

	if (net.data.n && mrc_time_before(net.pool[net.data.idx[0]].at, t))
		t = net.pool[net.data.idx[0]].at;
	if (net.acks.n && mrc_time_before(net.pool[net.acks.idx[0]].at, t))
		t = net.pool[net.acks.idx[0]].at;
	if (S.tmr_armed && mrc_time_before(S.tmr_at, t))
		t = S.tmr_at;
	if (R.ack_timer_armed && mrc_time_before(R.ack_timer_at, t))
		t = R.ack_timer_at;
	return t;
}

static void run_once(const struct scen *sc, u64 seed, ull clk,
		     struct result *res)
{
	const u32 isn = 0xfff000, t_start = 0xfffc0000u;
	u32 now = t_start, i, budget = opt.rate * opt.tick_us;
	/* time limit: the run at the link's rate, five times over, + 2 s */
	u64 limit_us = opt.packets / opt.rate * 5 + 2000000;
	ull t0, t1, wall0 = now_ns();

	memset(res, 0, sizeof(*res));
	/* splitmix64 of the seed: any seed, never the zero state */
	rng_state = (seed + 1) * 0x9e3779b97f4a7c15ull;
	rng_state = (rng_state ^ (rng_state >> 30)) * 0xbf58476d1ce4e5b9ull;
	rng_state = (rng_state ^ (rng_state >> 27)) * 0x94d049bb133111ebull;
	rng_state ^= rng_state >> 31;
	if (!rng_state)
		rng_state = 1;
	setup(sc, isn, now);
	snd_apply_wnd();

	for (;;) {
		bool any = false;

		/* receiver: the data packets that arrived, the ACK timer */
		net_arrive(&net.data, now, cur_loss, &res->drops,
			   &res->retx_drops);
		if (net.nin || (R.ack_timer_armed &&
				!mrc_time_before(now, R.ack_timer_at))) {
			t0 = now_ns();
			for (i = 0; i < net.nin; i++)
				rcv_data(&net.pool[net.in[i]]);
			if (R.ack_timer_armed &&
			    !mrc_time_before(now, R.ack_timer_at))
				rcv_ack_timer();
			t1 = now_ns();
			phase_add(&res->rx, t1 - t0, clk, net.nin);
			for (i = 0; i < net.nin; i++)
				net_put(net.in[i]);
			net_queue(true);
			any = true;
		}
		/* sender: the ACKs that arrived, the transmit timer */
		net_arrive(&net.acks, now, 0, &res->ack_drops, &res->ack_drops);
		if (net.nin || (S.tmr_armed && !mrc_time_before(now, S.tmr_at))) {
			t0 = now_ns();
			for (i = 0; i < net.nin; i++)
				snd_ack(&net.pool[net.in[i]]);
			if (S.tmr_armed && !mrc_time_before(now, S.tmr_at))
				snd_timer(now);
			t1 = now_ns();
			phase_add(&res->ack, t1 - t0, clk, net.nin);
			for (i = 0; i < net.nin; i++)
				net_put(net.in[i]);
			any = true;
		}
		/* sender: retransmissions and new packets */
		if (snd_has_work()) {
			u64 before = S.sent_new + S.sent_retx;

			t0 = now_ns();
			snd_run(now, budget);
			t1 = now_ns();
			phase_add(&res->tx, t1 - t0, clk,
				  S.sent_new + S.sent_retx - before);
			net_queue(false);
			any = true;
		}
		if (run_fail || S.failed)
			break;
		if (snd_all_sent() && S.tx.una == S.tx.nxt && !net.data.n &&
		    !net.acks.n && !R.ackc.pending)
			break;
		if ((u32)(now - t_start) > limit_us) {
			failf("not done after %llu us of simulated time (una %u, nxt %u, rx.nxt %u)",
			      limit_us, S.tx.una - isn, S.tx.nxt - isn,
			      R.rx.nxt - isn);
			break;
		}
		res->ticks++;
		if (any || snd_has_work()) {
			now += opt.tick_us;
		} else {
			/* idle: on to the tick of the next event */
			u32 t = next_event(now);

			now += opt.tick_us;
			if (mrc_time_before(now, t))
				now += (t - now + opt.tick_us - 1) /
				       opt.tick_us * opt.tick_us;
		}
	}
	res->sim_us = now - t_start;
	res->wall_ns = now_ns() - wall0;
}

/* ---- checks: the run did the work it claims ---- */

static void check_run(const struct scen *sc, const struct result *res)
{
	u64 n = opt.packets, sent = S.sent_new + S.sent_retx;
	u32 isn = S.isn;

	if (run_fail)
		return;
	if (S.sent_new != n || S.tx.nxt - isn != n)
		failf("sent %llu new PSNs, not %llu", S.sent_new, n);
	if (S.tx.una != S.tx.nxt || S.tx.sacked || S.tx.lost)
		failf("sender not drained: una %u nxt %u sacked %u lost %u",
		      S.tx.una - isn, S.tx.nxt - isn, S.tx.sacked, S.tx.lost);
	if (R.rx.nxt != S.tx.nxt)
		failf("receiver's cumulative PSN %u, sender's %u",
		      R.rx.nxt - isn, S.tx.nxt - isn);
	if (R.new_pkts != n)
		failf("%llu PSNs accepted as new, not %llu",
		      R.new_pkts, n);
	if (R.bytes != n * SEG)
		failf("%llu bytes placed, not %llu", R.bytes,
		      n * SEG);
	if (R.errors || R.cut)
		failf("receiver: %llu refused, %llu placements cut",
		      R.errors, R.cut);
	if (S.bad_acks)
		failf("mrc_tx_ack refused %llu ACKs", S.bad_acks);
	/* conservation: every copy sent arrived once or was dropped */
	if (sent != R.pkts + res->drops || res->tx.units != sent ||
	    res->rx.units != R.pkts)
		failf("packets: %llu sent, %llu arrived, %llu dropped",
		      sent, R.pkts, res->drops);
	if (R.acks_sent != S.acks + res->ack_drops || res->ack.units != S.acks)
		failf("ACKs: %llu sent, %llu processed",
		      R.acks_sent, S.acks);
	if (R.new_pkts + R.dup_pkts != R.pkts)
		failf("arrivals: %llu new + %llu duplicate != %llu",
		      R.new_pkts, R.dup_pkts, R.pkts);
	/* ACK coalescing: one ACK per ack_every packets, more under loss */
	if (R.acks_sent * ACK_EVERY < R.pkts / 2 || R.acks_sent > R.pkts)
		failf("%llu ACKs for %llu packets", R.acks_sent,
		      R.pkts);
	if (net.nfree != POOL)
		failf("%u packets still in the network", POOL - net.nfree);

	if (sc->loss == 0) {
		/* nothing lost: nothing resent, nothing timed out */
		if (S.sent_retx || S.tx.rack_marked || S.rtos || S.tlps ||
		    R.dup_pkts || S.tx.spurious)
			failf("no loss, yet %llu resent, %u RACK marks, %llu RTOs, %llu probes, %llu duplicates",
			      S.sent_retx, S.tx.rack_marked, S.rtos, S.tlps,
			      R.dup_pkts);
		if (sc->skew_us && !R.ooo)
			failf("reordering scenario, yet everything in order");
		if (!sc->skew_us && R.ooo)
			failf("%llu packets out of order without reordering",
			      R.ooo);
	} else {
		double exp = sent * sc->loss, sd = 0;

		/* drops near the loss rate: within 6 standard deviations */
		sd = exp * (1 - sc->loss);
		sd = sd > 0 ? sqrt(sd) : 0;
		if (res->drops < exp - 6 * sd - 1 || res->drops > exp + 6 * sd + 1)
			failf("%llu drops of %llu sent at %.2f %%",
			      res->drops, sent, 100 * sc->loss);
		/* every drop repaired, and few resends beyond that */
		if (S.sent_retx < res->drops)
			failf("%llu drops but %llu resends",
			      res->drops, S.sent_retx);
		if (S.sent_retx > res->drops + res->drops / 20 + 4)
			failf("%llu resends for %llu drops",
			      S.sent_retx, res->drops);
		/* found by RACK, not left to the timers */
		if (S.tx.rack_marked < res->drops * 9 / 10)
			failf("RACK marked %u of %llu drops",
			      S.tx.rack_marked, res->drops);
		if (S.rtos > 2 + res->drops / 100)
			failf("%llu RTOs for %llu drops", S.rtos,
			      res->drops);
		if (!S.sack_acks)
			failf("loss, yet no ACK carried SACK words");
	}
}

/* ---- report ---- */

static double med(double *v, u32 n)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void cpu_model(char *buf, size_t len, char *mhz, size_t mlen,
		      char *fam, size_t flen)
{
	char line[512], fam_s[32] = "?", mod_s[32] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	snprintf(mhz, mlen, "?");
	if (!f)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		if (!strncmp(line, "model name", 10))
			snprintf(buf, len, "%s", v);
		else if (!strncmp(line, "cpu MHz", 7))
			snprintf(mhz, mlen, "%s", v);
		else if (!strncmp(line, "cpu family", 10))
			snprintf(fam_s, sizeof(fam_s), "%s", v);
		else if (!strncmp(line, "model\t", 6))
			snprintf(mod_s, sizeof(mod_s), "%s", v);
		else if (line[0] == '\n')
			break;
	}
	fclose(f);
out:
	snprintf(fam, flen, "family %s model %s", fam_s, mod_s);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mrc_ebench [options]\n"
		"  --packets N     new PSNs per run (default 2000000)\n"
		"  --repeats K     runs per scenario, the median reported (7)\n"
		"  --scenarios L   comma-separated subset of lossless,loss1,reorder\n"
		"  --json FILE     append one JSON record per scenario\n"
		"  --label S       name of the machine in the records (default: /proc/cpuinfo)\n"
		"  --rate R        packets per simulated microsecond (3: 98 Gbit/s of 4 KiB)\n"
		"  --tick US       simulated microseconds per phase round (8)\n"
		"  --owd US        base one-way delay in simulated us (8)\n"
		"  --seed N        randomness of loss and paths\n"
		"  --check         short runs, checks only, TAP lines (make check)\n"
		"  --sabotage skip-accept|no-sack  break the receiver: it never accepts one\n"
		"                  PSN, or sends no SACK (the checks must fail)\n"
		"  -v              one line per run\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "packets", 1, NULL, 'n' }, { "repeats", 1, NULL, 'r' },
		{ "scenarios", 1, NULL, 's' }, { "json", 1, NULL, 'j' },
		{ "label", 1, NULL, 'l' }, { "rate", 1, NULL, 'R' },
		{ "tick", 1, NULL, 'T' }, { "owd", 1, NULL, 'D' },
		{ "seed", 1, NULL, 'S' }, { "check", 0, NULL, 'c' },
		{ "sabotage", 1, NULL, 'X' }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool any = false;
	char *list, *tok;
	u32 k;
	int c;

	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt.packets = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			opt.repeats = (u32)strtoul(optarg, NULL, 0);
			break;
		case 's':
			list = strdup(optarg);
			for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
				for (k = 0; k < NSCEN; k++)
					if (!strcmp(tok, scens[k].name))
						break;
				if (k == NSCEN) {
					fprintf(stderr, "mrc_ebench: unknown scenario %s\n", tok);
					return -1;
				}
				opt.want[k] = true;
				any = true;
			}
			free(list);
			break;
		case 'j':
			opt.json = optarg;
			break;
		case 'l':
			opt.label = optarg;
			break;
		case 'R':
			opt.rate = (u32)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			opt.tick_us = (u32)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			opt.owd_us = (u32)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			opt.check = true;
			break;
		case 'X':
			if (!strcmp(optarg, "skip-accept")) {
				opt.sabotage = SAB_SKIP_ACCEPT;
			} else if (!strcmp(optarg, "no-sack")) {
				opt.sabotage = SAB_NO_SACK;
			} else {
				fprintf(stderr, "mrc_ebench: unknown sabotage %s\n", optarg);
				return -1;
			}
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return -1;
	}
	if (!any)
		for (k = 0; k < NSCEN; k++)
			opt.want[k] = true;
	if (!opt.packets || !opt.repeats || !opt.rate || !opt.tick_us ||
	    opt.rate * opt.tick_us > POOL / 4 || opt.owd_us > 1000000) {
		fprintf(stderr, "mrc_ebench: bad parameters\n");
		return -1;
	}
	return 0;
}

static void print_fail(const char *what)
{
	int i;

	for (i = 0; i < run_fail && i < 4; i++)
		fprintf(stderr, "mrc_ebench: %s: %s\n", what, fail_msg[i]);
	if (run_fail > 4)
		fprintf(stderr, "mrc_ebench: %s: and %d more\n", what,
			run_fail - 4);
}

/* make check: the checks of short runs, and that a broken run fails them */
static int check_mode(void)
{
	struct result res;
	u32 k, pass = 0, fail = 0, n = 0;
	u64 pk = opt.packets;

	for (k = 0; k < NSCEN; k++) {
		if (!opt.want[k])
			continue;
		run_fail = 0;
		run_once(&scens[k], opt.seed + k, 0, &res);
		check_run(&scens[k], &res);
		n++;
		if (!run_fail) {
			pass++;
			printf("ok %u - %s: %llu PSNs delivered once each, %llu sent, %llu dropped (%llu resends), %llu ACKs (%llu with SACK), %u RACK marks, %llu probes, %llu RTOs\n",
			       n, scens[k].name, R.new_pkts,
			       S.sent_new + S.sent_retx, res.drops,
			       res.retx_drops, S.acks, S.sack_acks,
			       S.tx.rack_marked, S.tlps, S.rtos);
		} else {
			fail++;
			printf("not ok %u - %s\n", n, scens[k].name);
			print_fail(scens[k].name);
		}
	}
	/* the checks have teeth: a broken receiver fails them */
	static const struct {
		enum sabotage sab;
		u32 scen;
		const char *what;
	} teeth[] = {
		{ SAB_SKIP_ACCEPT, 0, "a receiver that never accepts one PSN" },
		{ SAB_NO_SACK, 1, "a receiver that sends no SACK, at 1 % loss" },
	};
	for (k = 0; k < sizeof(teeth) / sizeof(teeth[0]); k++) {
		opt.sabotage = teeth[k].sab;
		opt.packets = pk < 20000 ? pk : 20000;
		run_fail = 0;
		run_once(&scens[teeth[k].scen], opt.seed, 0, &res);
		check_run(&scens[teeth[k].scen], &res);
		n++;
		if (run_fail) {
			pass++;
			printf("ok %u - %s fails the checks (%s)\n", n,
			       teeth[k].what, fail_msg[0]);
		} else {
			fail++;
			printf("not ok %u - %s passed the checks\n", n,
			       teeth[k].what);
		}
	}
	opt.packets = pk;
	opt.sabotage = SAB_NONE;
	printf("ebench: %u passed, %u failed\n", pass, fail);
	return fail ? 1 : 0;
}

/* per-run figures; the report gives the median over the runs of each */
enum {
	F_TX,		/* send path per packet sent (new and resent) */
	F_ACK,		/* ACK and timer work per ACK */
	F_RX,		/* receive path per packet arrived, ACKs built included */
	F_SND,		/* sender per PSN delivered: send path and ACK work */
	F_RCV,		/* receiver per PSN delivered */
	F_BOTH,		/* both ends per PSN delivered */
	F_WALL,		/* the whole run, network model included, per PSN */
	F_NR
};

static const char *const f_name[F_NR] = {
	"tx_ns_pkt", "ack_ns", "rx_ns_pkt", "sender_ns_pkt", "receiver_ns_pkt",
	"both_ns_pkt", "wall_ns_pkt",
};

static void figures(const struct result *x, double *f)
{
	double n = (double)opt.packets;

	f[F_TX] = phase_per(&x->tx);
	f[F_ACK] = phase_per(&x->ack);
	f[F_RX] = phase_per(&x->rx);
	/* every packet and ACK at its phase's cost per unit */
	f[F_SND] = (f[F_TX] * x->tx.units + f[F_ACK] * x->ack.units) / n;
	f[F_RCV] = f[F_RX] * x->rx.units / n;
	f[F_BOTH] = f[F_SND] + f[F_RCV];
	f[F_WALL] = (double)x->wall_ns / n;
}

/* what the report says of one scenario */
struct outcome {
	double *v[F_NR];	/* per run */
	double med[F_NR], min[F_NR], max[F_NR];
	double mpps;
	struct result res;	/* of the last run: every run does the same work */
	u64 sent, retx, acks, sack_acks, rtos, tlps, dups, ooo;
	u32 rack_marked, spurious;
	bool bad;
};

static void outcome_note(struct outcome *o, const struct result *res)
{
	o->res = *res;
	o->sent = S.sent_new + S.sent_retx;
	o->retx = S.sent_retx;
	o->acks = S.acks;
	o->sack_acks = S.sack_acks;
	o->rtos = S.rtos;
	o->tlps = S.tlps;
	o->dups = R.dup_pkts;
	o->ooo = R.ooo;
	o->rack_marked = S.tx.rack_marked;
	o->spurious = S.tx.spurious;
}

static void json_record(FILE *jf, const struct scen *sc, const char *cpu,
			const char *fam, const char *mhz, ull clk,
			const struct outcome *o)
{
	const struct result *x = &o->res;
	u32 i;

	fprintf(jf, "{\"type\":\"engine\",\"scen\":\"engine\",\"case\":\"%s\",\"desc\":",
		sc->name);
	json_str(jf, sc->desc);
	fprintf(jf, ",\"cpu\":");
	json_str(jf, cpu);
	fprintf(jf, ",\"cpu_id\":");
	json_str(jf, fam);
	fprintf(jf, ",\"cpu_mhz\":");
	json_str(jf, mhz);
	fprintf(jf, ",\"packets\":%llu,\"repeats\":%u,\"clock_ns\":%llu",
		opt.packets, opt.repeats, clk);
	for (i = 0; i < F_NR; i++)
		fprintf(jf, ",\"%s\":%.2f,\"%s_min\":%.2f,\"%s_max\":%.2f",
			f_name[i], o->med[i], f_name[i], o->min[i], f_name[i],
			o->max[i]);
	fprintf(jf, ",\"mpps_core\":%.3f,\"mpps_both\":%.3f,\"acks_per_pkt\":%.4f,"
		"\"sent\":%llu,\"retx\":%llu,\"drops\":%llu,\"retx_drops\":%llu,"
		"\"rack_marked\":%u,\"rtos\":%llu,\"tlps\":%llu,\"spurious\":%u,"
		"\"dups\":%llu,\"ooo\":%llu,\"acks\":%llu,\"sack_acks\":%llu,"
		"\"sim_us\":%llu,\"rate_pkt_us\":%u,\"tick_us\":%u,\"owd_us\":%u,"
		"\"skew_us\":%u,\"loss\":%g,\"intervals\":%llu,\"interrupted\":%llu,"
		"\"checks\":\"%s\"}\n",
		o->mpps, 1000.0 / o->med[F_BOTH], (double)o->acks / opt.packets,
		o->sent, o->retx, x->drops, x->retx_drops, o->rack_marked,
		o->rtos, o->tlps, o->spurious, o->dups, o->ooo, o->acks,
		o->sack_acks, x->sim_us, opt.rate, opt.tick_us, opt.owd_us,
		sc->skew_us, sc->loss,
		x->tx.intervals + x->ack.intervals + x->rx.intervals,
		x->tx.interrupted + x->ack.interrupted + x->rx.interrupted,
		o->bad ? "failed" : "ok");
}

int main(int argc, char **argv)
{
	char cpu[128], mhz[32], fam[128];
	struct outcome out[NSCEN];
	double f[F_NR];
	struct result res;
	FILE *jf = NULL;
	int status = 0;
	u32 k, r, i;
	ull clk;

	if (parse_args(argc, argv))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (opt.check)
		return check_mode();

	cpu_model(cpu, sizeof(cpu), mhz, sizeof(mhz), fam, sizeof(fam));
	if (opt.label)
		snprintf(cpu, sizeof(cpu), "%s", opt.label);
	if (opt.json) {
		jf = fopen(opt.json, "a");
		if (!jf) {
			perror(opt.json);
			return 2;
		}
	}
	memset(out, 0, sizeof(out));
	for (k = 0; k < NSCEN; k++)
		for (i = 0; i < F_NR; i++) {
			out[k].v[i] = calloc(opt.repeats, sizeof(double));
			if (!out[k].v[i])
				return 2;
		}
	clk = clock_overhead_ns();

	printf("engine cost per packet, native: %s (%s, %s MHz), gcc -O2\n",
	       cpu, fam, mhz);
	printf("%llu PSNs per run, median of %u runs; %u packets/us, RTT >= %u us; clock read %llu ns (taken off each phase)\n",
	       opt.packets, opt.repeats, opt.rate, 2 * opt.owd_us, clk);

	/*
	 * The scenarios take turns, run by run, so that a slow spell of a
	 * shared machine falls on all of them alike.  Each scenario's runs
	 * use the same seed: the same work, timed again.
	 */
	for (r = 0; r < opt.repeats; r++) {
		for (k = 0; k < NSCEN; k++) {
			const struct scen *sc = &scens[k];

			if (!opt.want[k])
				continue;
			run_fail = 0;
			run_once(sc, opt.seed + k, clk, &res);
			check_run(sc, &res);
			if (run_fail) {
				print_fail(sc->name);
				out[k].bad = true;
				status = 1;
			}
			figures(&res, f);
			for (i = 0; i < F_NR; i++)
				out[k].v[i][r] = f[i];
			outcome_note(&out[k], &res);
			if (opt.verbose)
				printf("  %s run %u: send %.1f, %.1f per ACK, receive %.1f, both ends %.1f ns; %.2f s, %llu of %llu intervals interrupted\n",
				       sc->name, r + 1, f[F_TX], f[F_ACK],
				       f[F_RX], f[F_BOTH], res.wall_ns / 1e9,
				       res.tx.interrupted + res.ack.interrupted +
				       res.rx.interrupted,
				       res.tx.intervals + res.ack.intervals +
				       res.rx.intervals);
		}
	}

	printf("%-9s %7s %7s %7s %7s %7s %7s %7s  %s\n", "", "send",
	       "per", "ACKs", "sender", "receive", "both", "Mpkt/s", "");
	printf("%-9s %7s %7s %7s %7s %7s %7s %7s  %s\n", "scenario",
	       "ns/pkt", "ACK ns", "/pkt", "ns/pkt", "ns/pkt", "ends", "/core",
	       "resent / dropped / RACK / probes / RTOs");
	for (k = 0; k < NSCEN; k++) {
		struct outcome *o = &out[k];

		if (!opt.want[k])
			continue;
		for (i = 0; i < F_NR; i++) {
			o->med[i] = med(o->v[i], opt.repeats);
			/* med() sorted them */
			o->min[i] = o->v[i][0];
			o->max[i] = o->v[i][opt.repeats - 1];
		}
		/* a core running one end of the flow: the busier end */
		o->mpps = 1000.0 / (o->med[F_SND] > o->med[F_RCV] ?
				    o->med[F_SND] : o->med[F_RCV]);
		printf("%-9s %7.1f %7.1f %7.3f %7.1f %7.1f %7.1f %7.2f  %llu / %llu / %u / %llu / %llu%s\n",
		       scens[k].name, o->med[F_TX], o->med[F_ACK],
		       (double)o->acks / opt.packets, o->med[F_SND],
		       o->med[F_RX], o->med[F_BOTH], o->mpps, o->retx,
		       o->res.drops, o->rack_marked, o->tlps, o->rtos,
		       o->bad ? "  CHECKS FAILED" : "");
		printf("%-9s %7.1f %7.1f %7s %7.1f %7.1f %7.1f   (lowest of the runs)\n",
		       "", o->min[F_TX], o->min[F_ACK], "", o->min[F_SND],
		       o->min[F_RX], o->min[F_BOTH]);
		if (jf)
			json_record(jf, &scens[k], cpu, fam, mhz, clk, o);
	}
	printf("send: send path per packet sent (new and resent); per ACK: ACK and timer work per\n"
	       "ACK received; receive: receive path per packet arrived, ACKs built included;\n"
	       "sender: send path and ACK work per PSN delivered; both ends: sender and receiver\n"
	       "per PSN delivered; Mpkt/s per core: 1000 / the busier end (sender or receiver)\n");
	if (jf)
		fclose(jf);
	for (k = 0; k < NSCEN; k++)
		for (i = 0; i < F_NR; i++)
			free(out[k].v[i]);
	if (status)
		fprintf(stderr, "mrc_ebench: checks failed\n");
	return status;
}

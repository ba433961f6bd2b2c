/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MetaRoCE transport engine: PSN space, SACK scoreboards, loss detection,
 * RTT/RTO, ACK coalescing, placement checks.
 *
 * Plain C: no skbs, no locks, no allocation.  The caller owns every
 * structure (and the slot arrays), serialises calls per QP and passes the
 * current time in microseconds (a free-running u32 clock).
 */
#ifndef MRC_ENGINE_H
#define MRC_ENGINE_H

#include "mrc_types.h"

/* ---- PSN arithmetic: 32-bit serial numbers (RFC 1982 style) ---- */

static inline s32 mrc_psn_diff(u32 a, u32 b)
{
	return (s32)(a - b);
}

static inline bool mrc_psn_lt(u32 a, u32 b)
{
	return mrc_psn_diff(a, b) < 0;
}

static inline bool mrc_psn_le(u32 a, u32 b)
{
	return mrc_psn_diff(a, b) <= 0;
}

/* true when lo <= psn < hi in serial order */
static inline bool mrc_psn_in(u32 psn, u32 lo, u32 hi)
{
	return (u32)(psn - lo) < (u32)(hi - lo);
}

/* time comparisons on the u32 microsecond clock */
static inline bool mrc_time_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

/* ---- RTT estimation and RTO ---- */

/**
 * struct mrc_rtt - smoothed RTT (RFC 6298) and the retransmission timeout.
 * @srtt: smoothed RTT in us (0 until the first sample).
 * @rttvar: RTT variation in us.
 * @min_rtt: smallest sample seen.
 * @latest: last sample.
 * @rto: current base RTO in us, srtt + max(@rto_min, 4 rttvar) at most
 *	  @rto_max.
 * @rto_min: least margin above srtt (and so the lower clamp).
 * @rto_max: upper clamp.
 * @backoff: exponent applied to @rto after consecutive timeouts (<= 16).
 */
struct mrc_rtt {
	u32 srtt;
	u32 rttvar;
	u32 min_rtt;
	u32 latest;
	u32 rto;
	u32 rto_min;
	u32 rto_max;
	u32 backoff;
};

void mrc_rtt_init(struct mrc_rtt *r, u32 rto_init, u32 rto_min, u32 rto_max);
/* feed a sample, clamped to [1, rto_max]; Return: the sample as used */
u32 mrc_rtt_sample(struct mrc_rtt *r, u32 sample_us);
/* new upper clamp (not below rto_min); the base RTO is clamped to it */
void mrc_rtt_set_max(struct mrc_rtt *r, u32 rto_max);
/* current timeout including backoff, clamped to rto_max */
u32 mrc_rtt_rto(const struct mrc_rtt *r);

/* defaults mrc_tx_init() applies; the caller may override them afterwards */
#define MRC_RTO_INIT_US		10000	/* before the first RTT sample */
#define MRC_RTO_MIN_US		1000
#define MRC_RTO_MAX_US		1000000
#define MRC_RTO_MAX_BACKOFF	16	/* cap of mrc_rtt.backoff */
#define MRC_REO_WND_MIN_US	50	/* floor of the RACK reordering window */
#define MRC_REO_STEPS_MAX	256	/* reo_wnd grows to min_rtt/4 x steps, power of 2 */
#define MRC_REO_PERSIST		16	/* recoveries without a spurious retx */
#define MRC_TMO_STEPS_MAX	8	/* timer margins grow up to this factor, power of 2 */
#define MRC_TLP_MIN_US		1000	/* floor of the tail-loss probe timeout */
/*
 * An ACK's cumulative PSN may lag una by at most this many PSNs (the
 * largest send window, MRC_TX_SLOTS in the driver): RFC 5961 style, an
 * older or forged one is refused.
 */
#define MRC_ACK_LAG_MAX		1024

/* ---- sender scoreboard ---- */

/* slot flags */
#define MRC_TXS_ACKED		0x01	/* delivered (ACK, SACK or response) */
#define MRC_TXS_LOST		0x02	/* declared lost, awaiting retransmit */
#define MRC_TXS_NEED_RESP	0x04	/* only a response delivers it (READ, atomic) */
#define MRC_TXS_REQ_SEEN	0x08	/* NEED_RESP slot whose request was ACKed */
#define MRC_TXS_RACK		0x10	/* the latest loss mark came from RACK */
#define MRC_TXS_CHARGED		0x20	/* the copy before was charged to its path */
#define MRC_TXS_TIMER		0x40	/* the latest loss mark came from the RTO or a probe */
#define MRC_TXS_DUP		0x80	/* a DUP report named the latest resend */

/**
 * struct mrc_tx_slot - per-PSN sender state.
 * @xmit_ts: time of the latest transmission.
 * @entropy: UDP source port of the latest transmission.
 * @flags: MRC_TXS_*.
 * @xmits: transmissions so far (saturates at 255).
 * @prev_entropy: UDP source port of the transmission before the latest
 *	(with MRC_TXS_CHARGED: the path a RACK loss was charged to).
 * @pkt_first: the PSN began the packet of its latest transmission (a READ
 *	request packet covers several PSNs); padding otherwise.
 */
struct mrc_tx_slot {
	u32 xmit_ts;
	u16 entropy;
	u8 flags;
	u8 xmits;
	u16 prev_entropy;
	u8 pkt_first;
};

/*
 * Is a resend of @s charged to the path of its last copy?  Only when RACK
 * declared that copy lost (RNR waits, probes and go-back-N charge
 * nothing).  The requester charges the first PSN of a resend by this
 * rule, and mrc_tx_sent() marks that PSN MRC_TXS_CHARGED by the same
 * rule, so that a spurious loss can be taken back.
 */
static inline bool mrc_tx_slot_charges(const struct mrc_tx_slot *s)
{
	return s->flags & MRC_TXS_RACK;
}

/**
 * struct mrc_rack_ref - a RACK reference: the most recently sent PSN known
 * delivered (among some kind of deliveries) and the RTT measured on it.
 * @ts: its transmission time.
 * @psn: its PSN (tie break for equal timestamps).
 * @rtt: time from that transmission to its delivery.
 * @valid: the fields hold a delivery.
 */
struct mrc_rack_ref {
	u32 ts;
	u32 psn;
	u32 rtt;
	bool valid;
};

/* per-path RACK references per QP, direct-mapped by port */
#define MRC_TX_PATHS		64	/* power of 2 */

/**
 * struct mrc_tx_path - per-path RACK reference: the most recently sent
 * PSN that an ACK delivered on one entropy (UDP source port).  Packets of
 * one entropy share a path and arrive in order; across entropies they do
 * not.  &struct mrc_tx holds MRC_TX_PATHS of them, direct-mapped by the
 * low bits of the port.
 * @ref: that PSN.
 * @port: the entropy (tag).
 */
struct mrc_tx_path {
	struct mrc_rack_ref ref;
	u16 port;
};

/**
 * struct mrc_tx - sender side of one QP's PSN space.
 * @una: oldest PSN not yet delivered.
 * @nxt: next new PSN.
 * @wnd: maximum PSNs in flight (mrc_tx_inflight()): the congestion
 *	window or the peer's credit, set by the caller.
 * @range: maximum outstanding PSNs (nxt - una), <= @nslots: how far past
 *	a hole the sender may go; the receiver's window must cover it.
 * @sacked: PSNs in (una, nxt) already delivered.
 * @nslots: size of @slots, a power of two.
 * @slots: caller-provided array; PSN p uses slots[p & (nslots - 1)].
 * @rack: the most recently sent packet known delivered, by any ACK or
 *	response, and its RTT.
 * @reo_wnd: reordering window in us added to rack.rtt before declaring loss.
 * @lost: PSNs currently marked lost and not yet retransmitted.
 * @last_send_ts: time of the latest transmission of any PSN.
 * @timeouts: consecutive RTO expiries without forward progress.
 * @progress_ts: time of the last forward progress (or of the first
 *	transmission after an idle period).
 * @tlp_out: a tail-loss probe is outstanding.
 * @reo_steps_min: floor (and start) of reo_steps, 1 by default; a caller
 *	expecting reordering (sprayed paths) may start wider.
 * @frto: the last RTO resent only the oldest PSN; a delivery of a PSN
 *	sent once clears it, else the next RTO resends the whole window
 *	(see mrc_tx_on_timer()).
 * @rtt: RTT estimator fed by this scoreboard.
 * @ack_cum: highest cumulative ACK applied so far, in [una, nxt]; PSNs
 *	before it need no more work when the next ACK arrives.
 * @rresp: like @rack, for READ/atomic responses only (the RTT is from
 *	request to response).  A NEED_RESP slot whose request was ACKed is
 *	judged against responses, never against later requests: a long READ
 *	streams its responses for much longer than one RTT.
 * @reo_wnd_min: floor of @reo_wnd (MRC_REO_WND_MIN_US), caller tunable.
 * @reo_steps: @reo_wnd is max(min_rtt / 4 x steps, @reo_wnd_min), capped
 *	at srtt + @reo_cap_var x rttvar; spurious retransmissions raise it.
 * @reo_cap_var: rttvar multiples the cap of @reo_wnd adds to srtt (0: the
 *	cap is srtt, as RFC 8985), caller tunable.
 * @reo_recov: loss recoveries since the last spurious retransmission.
 * @reo_deadline: when the RACK reordering timer expires, if @reo_armed.
 * @reo_armed: some PSN waits for the reordering window to pass.
 * @tlp_min: floor of the tail-loss probe timeout (MRC_TLP_MIN_US).
 * @tlp_off: send no tail-loss probe (set by the caller: the peer's
 *	grant of one packet means it may hold ACKs, mrc_credit_hold()).
 * @probe_psn: the PSN to resend after MRC_TXT_PROBE (mrc_tx_on_timer()
 *	has marked it lost): the highest undelivered one, or una if that
 *	is a READ/atomic (served in PSN order, it holds the others back).
 * @tmo_steps: the probe timeout and the RTO's margin over srtt are
 *	multiplied by this (1 .. @tmo_steps_max): a retransmission sent by
 *	either timer that proves spurious doubles it, MRC_REO_PERSIST timer
 *	retransmissions that were not halve it.
 * @tmo_steps_max: ceiling of @tmo_steps, a power of two (MRC_TMO_STEPS_MAX
 *	by default; 1: the timers never widen), caller tunable.
 * @tmo_recov: timer retransmissions delivered since the last spurious one.
 * @spurious_tmos: timer retransmissions found spurious, total.
 * @spurious: retransmissions found unnecessary (the original arrived).
 * @rtos: RTO expiries, total.
 * @spurious_rtos: RTOs after which the path turned out only slow.
 * @tlps: tail-loss probes, total.
 * @rack_marked: PSNs declared lost by RACK, total.
 * @paths: per-entropy RACK references, see &struct mrc_tx_path.
 * @resend_ts: when a PSN was last resent, if @resent.
 * @resent: some PSN was resent since the send queue last ran empty
 *	(una == nxt): a request sent before it may have waited for it.
 * @resp_rtt_ts: transmission time of the request last timed by its
 *	response (mrc_tx_resp()), if @resp_rtt_done: the PSNs of one READ
 *	request share it, and only its first response times it.
 * @resp_rtt_done: @resp_rtt_ts is set.
 * @lone_ts: transmission time of the last READ/atomic request sent while
 *	nothing else was outstanding, if @lone: only such a request's
 *	response can stand for its ACK, and only its wait is the path's.
 * @lone: @lone_ts is set.
 */
struct mrc_tx {
	u32 una;
	u32 nxt;
	u32 wnd;
	u32 range;
	u32 sacked;
	u32 nslots;
	struct mrc_tx_slot *slots;
	struct mrc_rack_ref rack;
	u32 reo_wnd;
	u32 lost;
	u32 last_send_ts;
	u32 timeouts;
	u32 progress_ts;
	bool tlp_out;
	bool frto;			/* an RTO resent only the oldest PSN */
	struct mrc_rtt rtt;
	u32 ack_cum;
	struct mrc_rack_ref rresp;
	u32 reo_wnd_min;
	u32 reo_steps;
	u32 reo_steps_min;
	u32 reo_cap_var;
	u32 reo_recov;
	u32 reo_deadline;
	bool reo_armed;
	u32 tlp_min;
	bool tlp_off;
	u32 probe_psn;
	u32 tmo_steps;
	u32 tmo_steps_max;
	u32 tmo_recov;
	u32 spurious_tmos;
	u32 spurious;
	u32 rtos;
	u32 spurious_rtos;
	u32 tlps;
	u32 rack_marked;
	struct mrc_tx_path paths[MRC_TX_PATHS];
	u32 resend_ts;
	bool resent;
	u32 resp_rtt_ts;
	bool resp_rtt_done;
	u32 lone_ts;
	bool lone;
};

void mrc_tx_init(struct mrc_tx *tx, struct mrc_tx_slot *slots, u32 nslots,
		 u32 isn, u32 wnd);

static inline u32 mrc_tx_outstanding(const struct mrc_tx *tx)
{
	return tx->nxt - tx->una;
}

/*
 * PSNs in the network: outstanding ones neither delivered (SACKed) nor
 * marked lost.  The window limits these, as TCP's pipe, so a hole waiting
 * for the reordering window does not stop the sender.
 */
static inline u32 mrc_tx_inflight(const struct mrc_tx *tx)
{
	return mrc_tx_outstanding(tx) - tx->sacked - tx->lost;
}

/* room for @n new PSNs */
static inline bool mrc_tx_can_send(const struct mrc_tx *tx, u32 n)
{
	return mrc_tx_outstanding(tx) + n <= tx->range &&
	       mrc_tx_inflight(tx) + n <= tx->wnd;
}

/**
 * mrc_tx_sent() - record a transmission of [@psn, @psn + @n).
 * @tx: scoreboard.
 * @psn: first PSN; for new data it must equal tx->nxt (nxt then advances).
 * @n: PSNs covered by the one packet (> 1 only for a READ request).
 * @now: current time.
 * @entropy: UDP source port used.
 * @flags: MRC_TXS_NEED_RESP for READ and atomic requests (new data only).
 *
 * A retransmission clears MRC_TXS_LOST and updates xmit_ts/xmits.
 * Return: 0, or -EINVAL if the range is neither new nor outstanding.
 */
int mrc_tx_sent(struct mrc_tx *tx, u32 psn, u32 n, u32 now, u16 entropy,
		u8 flags);

/**
 * struct mrc_ack_info - an ACK as seen by the sender.
 * @cum: cumulative ACK (every PSN before it was received).
 * @sack: SACK words; bit b of word w means PSN cum + 1 + 64 w + b.
 * @sack_words: number of words (<= MRC_ACK_MAX_SACKW).
 * @ts_echo: the echoed tsval, used for an RTT sample when @ts_valid.
 * @delay: microseconds the receiver held the ACK.
 * @ts_valid: @ts_echo can be used.
 * @dup: the receiver got a duplicate (a retransmission was not needed,
 *	or the network duplicated a packet).
 * @dup_psn: with @dup, the duplicate's (first) PSN.  @dup counts only
 *	if this PSN was resent, is among the last nslots sent and its
 *	latest resend was not reported before.
 * @held: with @dup, the receiver still owed an ACK (held or coalesced)
 *	when the duplicate came: the ACK of the earlier copy was late, not
 *	lost.
 */
struct mrc_ack_info {
	u32 cum;
	const u64 *sack;
	u32 sack_words;
	u32 ts_echo;
	u32 delay;
	bool ts_valid;
	bool dup;
	bool held;
	u32 dup_psn;
};

#define MRC_ACK_UNCHARGE	8	/* spurious RACK losses reported per ACK */

/**
 * struct mrc_ack_result - what an ACK or response changed.
 * @newly_acked: PSNs newly delivered.
 * @newly_seen: READ/atomic PSNs the ACK newly showed to have arrived
 *	(MRC_TXS_REQ_SEEN set now); they are not in @newly_acked.
 * @una_advanced: tx->una moved forward.
 * @rtt_sample: RTT sample taken (0 when none), at most tx->rtt.rto_max.
 *	An ACK newly showing a READ/atomic request sent once arrived
 *	yields one too.
 * @cc_rtt: RTT for the congestion window (0: none): @rtt_sample, or for
 *	a response to a request sent once the latest srtt.
 * @stale: the ACK's cumulative PSN was behind tx->una: only its SACK bits
 *	were used (no RTT sample, DUP ignored); the caller should ignore
 *	the rest of it too (credit, ECN, path feedback, OOO).
 * @n_uncharge: entries of @uncharge used.
 * @uncharge: entropies of RACK losses that proved spurious (an earlier
 *	copy arrived), to be taken back with mrc_path_on_loss_undo(); at
 *	most MRC_ACK_UNCHARGE per ACK, the rest stay charged.  The caller
 *	charges the first PSN of each resend, by mrc_tx_slot_charges().
 */
struct mrc_ack_result {
	u32 newly_acked;
	u32 newly_seen;
	bool una_advanced;
	u32 rtt_sample;
	u32 cc_rtt;
	bool stale;
	u32 n_uncharge;
	u16 uncharge[MRC_ACK_UNCHARGE];
};

/**
 * mrc_tx_ack() - apply an ACK.
 * @tx: scoreboard.
 * @a: the ACK.
 * @now: current time.
 * @r: filled with the outcome.
 *
 * NEED_RESP slots covered by the ACK only get MRC_TXS_REQ_SEEN: they are
 * delivered by mrc_tx_resp().  Progress resets tx->timeouts and the RTO
 * backoff.  Return: 0, or -EINVAL if @a->cum is beyond tx->nxt or more
 * than MRC_ACK_LAG_MAX PSNs behind tx->una (nothing changed).
 */
int mrc_tx_ack(struct mrc_tx *tx, const struct mrc_ack_info *a, u32 now,
	       struct mrc_ack_result *r);

/**
 * mrc_tx_resp() - a READ response segment or atomic response for @psn.
 * @tx: the sender.
 * @psn: the request PSN the response answers.
 * @now: time in microseconds.
 * @r: out: what the response delivered.
 *
 * A response to a request sent once that no ACK showed arrived stands for
 * that ACK (a responder answers a lone in-order request without one): it
 * gives an RTT sample (@r->rtt_sample) if the request went out while
 * nothing else was outstanding (otherwise the responder's queue of earlier
 * responses would be in it), unless a PSN was resent since the request (a
 * repair may have held it) or the request was already timed by another
 * of its responses.
 *
 * Return: 0, 1 if it was a duplicate, -EINVAL if @psn is not outstanding
 * or not a NEED_RESP slot.
 */
int mrc_tx_resp(struct mrc_tx *tx, u32 psn, u32 now, struct mrc_ack_result *r);

/**
 * mrc_tx_detect_loss() - RACK: mark outstanding PSNs lost that were sent
 * before the latest delivered one and have waited rack_rtt + reo_wnd.
 * @tx: the sender.
 * @now: time in microseconds.
 *
 * Reordering within that window is tolerated; duplicate ACKs are not
 * counted.  Return: number of PSNs newly marked lost.
 */
u32 mrc_tx_detect_loss(struct mrc_tx *tx, u32 now);

/**
 * mrc_tx_mark_lost() - declare @psn lost (RNR wait over, go-back-N), so
 * the next retransmission pass resends it.  The timers mark their own.
 * @tx: the sender.
 * @psn: the PSN.
 *
 * Return: true if it was outstanding, undelivered and not yet marked.
 */
bool mrc_tx_mark_lost(struct mrc_tx *tx, u32 psn);

/**
 * mrc_tx_next_lost() - lowest PSN marked lost at or after *@psn.
 * @tx: scoreboard.
 * @psn: in: where to start (use tx->una for a full scan); out: the PSN.
 * Return: true if one was found.
 */
bool mrc_tx_next_lost(const struct mrc_tx *tx, u32 *psn);

static inline const struct mrc_tx_slot *mrc_tx_slot(const struct mrc_tx *tx,
						    u32 psn)
{
	return &tx->slots[psn & (tx->nslots - 1)];
}

/* what a timer expiry asks the caller to do */
enum mrc_tx_timer_action {
	MRC_TXT_NONE = 0,	/* nothing due */
	MRC_TXT_RETX,		/* PSNs were marked lost: retransmit them */
	MRC_TXT_PROBE,		/* tail-loss probe: resend the highest outstanding PSN */
	MRC_TXT_RTO,		/* RTO: the oldest PSN, or all, marked lost */
	MRC_TXT_FAIL,		/* timeouts exceeded the retry limit */
};

/**
 * mrc_tx_deadline() - when the caller's timer should next fire.
 * @tx: scoreboard.
 * @deadline: out: absolute time.
 * Return: false when nothing is outstanding (no timer needed).
 *
 * The earliest of: the RACK reordering timer, the tail-loss probe
 * (max(2 srtt, tlp_min) x tmo_steps after the last send, while no probe
 * is out) and the RTO (srtt plus the RTO's margin x tmo_steps, << backoff,
 * after the oldest outstanding transmission).
 */
bool mrc_tx_deadline(const struct mrc_tx *tx, u32 *deadline);

/**
 * mrc_tx_on_timer() - handle timer expiry at @now.
 * @tx: scoreboard.
 * @now: current time.
 * @retry_cnt: RTO expiries allowed in a row without progress.
 * @fail_after: also fail once nothing progressed for this many us while
 *	data was outstanding (the QP's timeout x (retry_cnt + 1)); 0: never.
 *
 * An RTO increments tx->timeouts and the backoff.  Only RTOs without
 * progress count against @retry_cnt, never selective retransmissions, and
 * MRC_TXT_FAIL needs both limits passed, so a short RTT-based RTO cannot
 * declare a peer dead before the QP's own timeout has run out.
 */
enum mrc_tx_timer_action mrc_tx_on_timer(struct mrc_tx *tx, u32 now,
					 u32 retry_cnt, u32 fail_after);

/* ---- receiver scoreboard ---- */

/**
 * struct mrc_rx - receiver side of one QP's PSN space.
 * @nxt: next expected PSN: everything before it has arrived.
 * @nbits: size of @map in bits, a power of two; the window is
 *	[nxt, nxt + nbits).
 * @map: caller-provided bitmap (u64 words); PSN p uses bit p & (nbits - 1).
 * @ooo: packets that arrived beyond nxt (out of order), a counter.
 * @holes: gaps opened (a packet arrived beyond a missing one), a counter.
 */
struct mrc_rx {
	u32 nxt;
	u32 nbits;
	u64 *map;
	u64 ooo;
	u64 holes;
};

enum mrc_rx_verdict {
	MRC_RX_NEW = 0,		/* at least one PSN of the range is new */
	MRC_RX_DUP,		/* every PSN already received */
	MRC_RX_BEYOND,		/* outside the window: drop, do not ACK as received */
};

void mrc_rx_init(struct mrc_rx *rx, u64 *map, u32 nbits, u32 epsn);

/**
 * mrc_rx_accept() - record arrival of [@psn, @psn + @n).
 * @rx: the receiver's PSN space.
 * @psn: first PSN of the packet.
 * @n: PSNs it covers (1 for a request packet).
 *
 * Return: the verdict; on MRC_RX_NEW the range is marked and rx->nxt moved
 * over every contiguous received PSN.
 */
enum mrc_rx_verdict mrc_rx_accept(struct mrc_rx *rx, u32 psn, u32 n);

/**
 * mrc_rx_classify() - what a request for [@psn, @psn + @n) is, unchanged.
 * @rx: the receiver's PSN space.
 * @psn: first PSN of the request.
 * @n: PSNs it covers.
 *
 * Return: MRC_RX_BEYOND if @n is 0 or above @rx->nbits, if the range ends
 * past the window, or if it starts more than @rx->nbits PSNs before nxt
 * (older than anything a requester may resend); MRC_RX_DUP if every PSN
 * was received; else MRC_RX_NEW, for which mrc_rx_accept() of the same
 * range never returns MRC_RX_BEYOND.
 */
enum mrc_rx_verdict mrc_rx_classify(const struct mrc_rx *rx, u32 psn, u32 n);

/* true if @psn was received (before nxt, or marked in the window) */
bool mrc_rx_has(const struct mrc_rx *rx, u32 psn);

/**
 * mrc_rx_sack() - encode the SACK words for an ACK whose cumulative PSN is
 * rx->nxt.
 * @rx: the receiver's PSN space.
 * @words: out: the SACK words.
 * @max: room in @words.
 *
 * Return: words used (trailing zero words dropped), <= @max.
 */
u32 mrc_rx_sack(const struct mrc_rx *rx, u64 *words, u32 max);

/* ---- write-after-write order of out-of-order placement ---- */

/**
 * struct mrc_wlog_ent - what one received PSN wrote, or asked to read.
 * @va: first byte written (the packet's target address); for a READ PSN,
 *	the first byte of its response segment.
 * @rkey: the key it was written (or is read) through.
 * @len: bytes written; 0 for a PSN that wrote no WRITE target; for a READ
 *	PSN, MRC_WLOG_READ plus the bytes of its response segment.
 */
struct mrc_wlog_ent {
	u64 va;
	u32 rkey;
	u32 len;
};

/**
 * struct mrc_wlog - the WRITE targets of the PSNs in the receive window.
 * @ents: caller-provided, @n entries; PSN p uses entry p & (@n - 1).
 * @n: a power of two, at least the receive window (mrc_rx.nbits).
 * @high: one past the highest PSN recorded.
 *
 * Packets are placed as they arrive, so a late packet of an earlier WRITE
 * could overwrite bytes that a later WRITE to the same memory has already
 * placed.  RC requires the later one to win: a late packet writes only the
 * bytes that no higher PSN has written yet.  Higher PSNs that arrive
 * afterwards overwrite as usual.
 */
struct mrc_wlog {
	struct mrc_wlog_ent *ents;
	u32 n;
	u32 high;
};

#define MRC_WLOG_READ	0x80000000u	/* mrc_wlog_ent.len: a READ PSN */

/**
 * struct mrc_piece - part of a packet's payload: [@off, @off + @len).
 * @off: offset in the payload.
 * @len: bytes.
 */
struct mrc_piece {
	u32 off;
	u32 len;
};

void mrc_wlog_init(struct mrc_wlog *w, struct mrc_wlog_ent *ents, u32 n,
		   u32 epsn);

/**
 * mrc_wlog_record() - note what a newly received PSN wrote.
 * @w: the log.
 * @psn: the PSN (received for the first time).
 * @va: its target address, if a WRITE.
 * @rkey: its key.
 * @len: bytes it wrote to a WRITE target, 0 for any other packet.
 */
void mrc_wlog_record(struct mrc_wlog *w, u32 psn, u64 va, u32 rkey, u32 len);

/**
 * mrc_wlog_record_read() - note the segments a newly received READ_REQ
 * asks for, one per PSN not received before.
 * @w: the log.
 * @rx: the receiver's PSN space, before the request is accepted: PSNs
 *	already received keep their record (a WRITE's, or the same READ's).
 * @psn: the request's first PSN.
 * @n: PSNs it covers (mrc_seg_count(@len, @shift)).
 * @va: address of its first byte.
 * @rkey: its key.
 * @len: its message length.
 * @shift: log2 of its segment size.
 */
void mrc_wlog_record_read(struct mrc_wlog *w, const struct mrc_rx *rx,
			  u32 psn, u32 n, u64 va, u32 rkey, u32 len, u8 shift);

/**
 * mrc_wlog_read_match() - whether a READ_REQ for PSNs already received
 * asks again for what those PSNs first asked for.
 * @w: the log.
 * @rx: the receiver's PSN space.
 * @psn: the request's first PSN.
 * @n: how many of its PSNs to check, from @psn on.
 * @va: address of its first byte.
 * @rkey: its key.
 * @len: its message length.
 * @shift: log2 of its segment size.
 *
 * A PSN before rx->nxt still has its record while no PSN @w->n above it
 * has arrived, which a requester keeping at most @w->n PSNs outstanding
 * never sends before the resend.
 *
 * Return: true if each of the @n PSNs was received as a READ PSN with
 * this key, this segment address and this segment length.
 */
bool mrc_wlog_read_match(const struct mrc_wlog *w, const struct mrc_rx *rx,
			 u32 psn, u32 n, u64 va, u32 rkey, u32 len, u8 shift);

/**
 * mrc_wlog_pieces() - the parts of a new WRITE packet that it may write.
 * @w: the log.
 * @rx: the receiver's PSN space (which PSNs have arrived).
 * @psn: the packet's PSN, not yet received.
 * @va: its target address.
 * @rkey: its key.
 * @len: its payload length.
 * @out: out: the pieces, ascending offsets not guaranteed.
 * @max: room in @out (at least 1).
 *
 * Removes from [0, @len) every byte that a received PSN above @psn wrote
 * through the same key.  Whatever remains is the newest data for those
 * bytes so far.
 *
 * Return: the number of pieces (0: a later WRITE covered it all), or -1 if
 * more than @max pieces would be needed.
 */
int mrc_wlog_pieces(const struct mrc_wlog *w, const struct mrc_rx *rx,
		    u32 psn, u64 va, u32 rkey, u32 len, struct mrc_piece *out,
		    int max);

/* ---- ACK coalescing ---- */

#define MRC_ACKC_FILL		0x01	/* arrival filling the hole at nxt */
#define MRC_ACKC_ACKREQ		0x02	/* sender asked for an ACK */
#define MRC_ACKC_DUP		0x04	/* duplicate: ACK soon so the sender stops */
#define MRC_ACKC_CE		0x08	/* CE marked */
#define MRC_ACKC_CREDIT		0x10	/* the sender's credit window is full */

/**
 * struct mrc_ackc - when to send an ACK.
 * @every: ACK at once after this many unacknowledged packets.
 * @delay: otherwise ACK this many us after the first unacknowledged one.
 * @pending: packets not yet acknowledged.
 * @first_ts: arrival time of the first of them.
 * @ce: CE-marked packets since the last ACK.
 * @ce_last: the latest arrival was CE marked (an ACK goes out at once when
 *	this flips, as in DCTCP).
 */
struct mrc_ackc {
	u32 every;
	u32 delay;
	u32 pending;
	u32 first_ts;
	u32 ce;
	bool ce_last;
};

void mrc_ackc_init(struct mrc_ackc *c, u32 every, u32 delay_us);
/* record an arrival; true when an ACK should go out now */
bool mrc_ackc_rx(struct mrc_ackc *c, u32 now, u32 flags);
/* absolute time a delayed ACK is due; false if none pending */
bool mrc_ackc_deadline(const struct mrc_ackc *c, u32 *deadline);
/* an ACK was sent: reset */
void mrc_ackc_sent(struct mrc_ackc *c);

/* ---- sender congestion window (delay based) ---- */

/**
 * struct mrc_cc - delay-based congestion window of one QP.
 * @cwnd: window in packets, 8 fractional bits.
 * @min: smallest window in packets.
 * @max: largest window in packets.
 * @target_us: queueing delay allowed above @base_rtt.
 * @base_rtt: smallest RTT seen.
 * @last_dec: time of the last decrease.
 * @dec_valid: @last_dec holds a time.
 * @slow_start: grow by one packet per packet ACKed until the first cut.
 * @decreases: window reductions, a counter.
 * @ecn_decreases: those of them caused by ECN marks.
 * @alpha: moving marked fraction, MRC_CC_ALPHA_ONE = all packets marked.
 * @win_acked: packets ACKed in the current ECN observation window.
 * @win_ce: CE marks reported in it.
 * @win_end: when it ends (valid with @win_valid).
 * @win_valid: an observation window is open.
 * @dwin_min: smallest RTT sample of the current delay window.
 * @dwin_end: when the delay window ends (valid with @dwin_valid).
 * @dwin_valid: a delay window is open.
 * @rto_cwnd: the window before the current run of RTOs.
 * @rto_saved: @rto_cwnd is valid (no progress since the first RTO).
 * @undos: RTO cuts undone because the RTO was spurious.
 * @used: most packets in flight after a send in the current delay window
 *	(mrc_cc_sent()).
 * @used_prev: the same for the previous delay window.
 */
struct mrc_cc {
	u32 cwnd;
	u32 min;
	u32 max;
	u32 target_us;
	u32 base_rtt;
	u32 last_dec;
	bool dec_valid;
	bool slow_start;
	u64 decreases;
	u64 ecn_decreases;
	u32 alpha;
	u32 win_acked;
	u32 win_ce;
	u32 win_end;
	bool win_valid;
	u32 dwin_min;
	u32 dwin_end;
	bool dwin_valid;
	u32 rto_cwnd;
	bool rto_saved;
	u64 undos;
	u32 used;
	u32 used_prev;
};

#define MRC_CC_ALPHA_ONE	1024u

void mrc_cc_init(struct mrc_cc *cc, u32 init, u32 min, u32 max,
		 u32 target_us);
/*
 * a packet left and @inflight PSNs are in flight: the window grows only
 * while the sender uses it (mrc_cc_on_ack())
 */
void mrc_cc_sent(struct mrc_cc *cc, u32 inflight);
/* an ACK delivered @newly_acked PSNs with RTT sample @rtt (0: none) */
void mrc_cc_on_ack(struct mrc_cc *cc, u32 now, u32 newly_acked, u32 rtt,
		   u32 srtt);
/**
 * mrc_cc_on_ecn() - ECN feedback of one ACK (DCTCP style).
 * @cc: window.
 * @now: current time.
 * @acked: packets the ACK covers (newly delivered).
 * @ce: how many of them the receiver saw CE marked.
 * @srtt: smoothed RTT; the marked fraction is taken once per @srtt.
 *
 * alpha tracks the marked fraction (gain 1/16); at the end of an
 * observation window that saw marks the window shrinks by alpha / 2,
 * at most once per @srtt (shared with the delay cut).
 */
void mrc_cc_on_ecn(struct mrc_cc *cc, u32 now, u32 acked, u32 ce, u32 srtt);
void mrc_cc_on_rto(struct mrc_cc *cc, u32 now);
/* the last RTO was spurious (F-RTO): restore the window it cut */
void mrc_cc_undo_rto(struct mrc_cc *cc);

/* the window in whole packets */
static inline u32 mrc_cc_wnd(const struct mrc_cc *cc)
{
	return cc->cwnd >> 8;
}

/* ---- sender pacing ---- */

#define MRC_PACE_GAIN_SS	512u	/* 2.0 in 1/256: slow start */
#define MRC_PACE_GAIN		320u	/* 1.25 in 1/256 */
#define MRC_PACE_BURST		2	/* default packets back to back */
#define MRC_PACE_BURST_MAX	64
#define MRC_PACE_MIN_GAP_US	50	/* shorter gaps are not paced */
#define MRC_PACE_GAP_MAX_US	100000

/**
 * struct mrc_pace - spacing of one QP's packets.
 * @gap: microseconds between packets; 0: not paced.
 * @last: when the latest packet went, as paced: a packet may go once
 *	@gap has passed since.  Sending after a pause moves it back at most
 *	(@burst - 1) x @gap, so that up to @burst packets go back to back.
 * @burst: packets that may go back to back after a pause (>= 1).
 * @min_gap: a rate whose gap is shorter is not paced (the host's timers
 *	would cost more than the spacing gives).
 * @held: a packet waits for its time (mrc_pace_deadline()); cleared when
 *	one goes, or by mrc_pace_expire() once the time has passed.
 * @waits: packets that had to wait, a counter.
 */
struct mrc_pace {
	u32 gap;
	u32 last;
	u32 burst;
	u32 min_gap;
	bool held;
	u64 waits;
};

void mrc_pace_init(struct mrc_pace *p, u32 burst, u32 min_gap);
/**
 * mrc_pace_rate() - pace a window of @wnd packets over @srtt.
 * @p: pacing state.
 * @wnd: the sender's window in packets (congestion window, credit).
 * @srtt: smoothed RTT in us; 0: no sample yet, not paced.
 * @slow_start: the window still doubles per RTT: pace at twice the rate,
 *	else at 1.25 times, so that the window, not the pacing, is the limit.
 */
void mrc_pace_rate(struct mrc_pace *p, u32 wnd, u32 srtt, bool slow_start);
/* may a packet go at @now?  false: it waits, see mrc_pace_deadline() */
bool mrc_pace_ok(struct mrc_pace *p, u32 now);
/* a packet went at @now (after mrc_pace_ok() said it may) */
void mrc_pace_sent(struct mrc_pace *p, u32 now);
/* Return: true and when the waiting packet may go, if one waits */
bool mrc_pace_deadline(const struct mrc_pace *p, u32 *at);
/*
 * The caller's timer fired at @now: a wait that is over ends here, so that
 * a packet held back since by something else (a closed window) arms no
 * timer of its own
 */
void mrc_pace_expire(struct mrc_pace *p, u32 now);

/* ---- path selection (entropies) ---- */

#define MRC_PATH_MAX		256	/* entropies per QP */
#define MRC_PATH_PORT_BASE	0xc000	/* fresh ports: 0xc000..0xffff */
#define MRC_PATH_PORT_MASK	0x3fff
#define MRC_PATH_SKIP_US	1000	/* default skip after ECN, delay or loss */
#define MRC_PATH_DELAY_MIN_US	200	/* RTT excess over the average that counts */
#define MRC_PATH_LOSS_RETIRE	3	/* losses in a row, no ACK between, retire one */
#define MRC_PATH_LOSS_SHED	8	/* losses over the average that shed every turn */
#define MRC_PATH_CE_RETIRE	4	/* CE echoes per epoch that retire one */
#define MRC_PATH_EPOCH_PKTS	64	/* an entropy's own packets per epoch */
#define MRC_PATH_OUTLIER	2	/* retire at this many times the average */
#define MRC_PATH_LOSS_REDRAW	2	/* losses that let a balance window redraw */
#define MRC_PATH_SKIP_MAX_US	100000	/* longest skip for delay */
#define MRC_PATH_BALANCE_ROUNDS	8	/* rounds per balance window */
#define MRC_PATH_EXPLORE_WINDOWS 8	/* quiet windows before an exploring redraw */
#define MRC_PATH_SKEW		2	/* most/least delayed RTT of a skewed window */
#define MRC_PATH_SKEW_WINDOWS	2	/* skewed windows in a row redraw the slowest */
#define MRC_PATH_LONE_EXPLORE	8	/* one lone packet in 8 is sprayed */
#define MRC_PATH_PROBATION_US	50000	/* a dead-looking one waits this long */

/**
 * enum mrc_path_why - why an entropy was given a fresh port.
 * @MRC_PATH_WHY_STARVED: a balance window found it sending under half the
 *	average (skips for delay kept it waiting).
 * @MRC_PATH_WHY_EXPLORE: the most delayed one, redrawn after quiet windows.
 * @MRC_PATH_WHY_LOSSY: a balance window found it an outlier for loss.
 * @MRC_PATH_WHY_DEAD: losses in a row with nothing through it between,
 *	and no proof of life during its probation.
 * @MRC_PATH_WHY_SHED: its excess losses shed every turn.
 * @MRC_PATH_WHY_CE: CE marks in its epoch, an outlier of the set.
 * @MRC_PATH_WHY_REPLACED: the caller asked (mrc_path_replace()).
 * @MRC_PATH_WHY_DELAYED: the most delayed one, redrawn after
 *	MRC_PATH_SKEW_WINDOWS balance windows in a row skewed by delay
 *	(skips for delay, the highest RTT MRC_PATH_SKEW times the lowest).
 */
enum mrc_path_why {
	MRC_PATH_WHY_STARVED,
	MRC_PATH_WHY_EXPLORE,
	MRC_PATH_WHY_LOSSY,
	MRC_PATH_WHY_DEAD,
	MRC_PATH_WHY_SHED,
	MRC_PATH_WHY_CE,
	MRC_PATH_WHY_REPLACED,
	MRC_PATH_WHY_DELAYED,
};

/**
 * struct mrc_path_ent - one entropy (UDP source port) and its record.
 * @port: the UDP source port.
 * @skipping: not to be used before @skip_until.
 * @skip_until: end of the skip.
 * @sent: packets sent in the current epoch.
 * @losses: losses charged in the current epoch (halved each epoch).
 * @run: losses charged since the last ACK triggered through it.
 * @suspect: looks dead: skipped for its probation, then retired unless an
 *	ACK through it or a spurious loss showed it alive meanwhile.
 * @ce: CE echoes in the current epoch (halved each epoch).
 * @wsent: packets sent in the current balance window.
 * @wfresh: (re)drawn during the current window, not judged at its end.
 * @rtt: smoothed RTT of ACKs triggered through it (0: no sample yet).
 * @pkts: packets sent since it was (re)drawn.
 */
struct mrc_path_ent {
	u16 port;
	bool skipping;
	u32 skip_until;
	u32 sent;
	u32 losses;
	u32 run;
	bool suspect;
	u32 ce;
	u32 wsent;
	bool wfresh;
	u32 rtt;
	u64 pkts;
};

/**
 * struct mrc_path - a QP's set of entropies.
 * @ents: caller-provided array of @n entries.
 * @n: set size, 1..MRC_PATH_MAX (1: a single path).
 * @cursor: next entry of the current round.
 * @round_left: entries left in the current round.
 * @rng: xorshift state (seeded by the caller).
 * @aware: judge entropies (skip and retire); false: plain round robin.
 * @skip_us: how long a marked, slow or lossy entropy is skipped.
 * @delay_min_us: smallest RTT excess over the set's lowest that skips.
 * @loss_retire: losses in a row, with no ACK triggered through the entropy
 *	between them, that retire it (it looks dead).
 * @loss_shed: losses above the set's average at which an entropy's every
 *	turn is passed over; below, a turn is passed over with probability
 *	excess / @loss_shed (a lossy path keeps a share that shrinks with its
 *	loss rate).  At or above, the entropy is retired.  Only while the
 *	sender has run dry in this or the previous balance window (@wdry,
 *	@wdry_last): the other paths have room.  0: no shedding (and no
 *	retirement for excess).
 * @loss_sum: sum of the entries' @losses.
 * @ce_retire: CE echoes within an epoch that retire an entropy.
 * @epoch_pkts: an entropy's packets per epoch (its evidence halves after).
 * @balance_rounds: rounds (of @n picks) per balance window; 0: no
 *	rebalancing.
 * @wpicks: picks in the current balance window.
 * @quiet_windows: balance windows since the last redraw (for balance or
 *	loss).
 * @wdry: the sender ran out of packets to send in this balance window
 *	(mrc_path_note_dry()): it was not held back by the network.
 * @wdry_last: @wdry of the previous balance window.
 * @wdelayed: an entropy was skipped for delay in this balance window.
 * @skew_windows: skewed balance windows in a row (mrc_path_balance()).
 * @rtt_n: how many have one.
 * @switches: picks that passed over an entropy being skipped or shed.
 * @retired: entropies replaced with a fresh port.
 * @retired_port: the port the last of them gave up.
 * @retired_why: why (enum mrc_path_why).
 * @ce_echoes: CE-marked ACK triggers seen.
 * @delay_skips: entropies skipped for standing above the lowest RTT.
 * @rebalanced: entropies redrawn for sending under half the average, for
 *	delay after skewed windows, or to explore after quiet windows.
 * @losses: losses charged.
 * @losses_undone: charges taken back because the loss proved spurious.
 * @last: index of the entry that carried the last packet.
 * @lone: lone packets since the last one that was sprayed.
 */
struct mrc_path {
	struct mrc_path_ent *ents;
	u32 n;
	u32 cursor;
	u32 round_left;
	u32 rng;
	bool aware;
	u32 skip_us;
	u32 delay_min_us;
	u32 loss_retire;
	u32 loss_shed;
	u32 loss_sum;
	u32 ce_retire;
	u32 epoch_pkts;
	u32 balance_rounds;
	u32 wpicks;
	u32 quiet_windows;
	bool wdry;
	bool wdry_last;
	bool wdelayed;
	u32 skew_windows;
	u32 rtt_n;
	u64 switches;
	u64 retired;
	u16 retired_port;
	u8 retired_why;
	u64 ce_echoes;
	u64 delay_skips;
	u64 rebalanced;
	u64 losses;
	u64 losses_undone;
	u32 last;
	u32 lone;
};

/**
 * mrc_path_init() - draw @n distinct random ports from @seed.
 * @p: the set.
 * @ents: @n entries (clamped to 1..MRC_PATH_MAX).
 * @n: set size.
 * @seed: randomness; two QPs should get different seeds.
 * @aware: judge entropies from feedback (path_aware).
 */
void mrc_path_init(struct mrc_path *p, struct mrc_path_ent *ents, u32 n,
		   u32 seed, bool aware);
/**
 * mrc_path_pick() - the port for the next packet.
 * @p: the set.
 * @now: current time.
 * @avoid: a port not to use if there is another (a lost packet's), or 0.
 *
 * Round robin over the entropies not being skipped; when all are skipped,
 * round robin over all of them.
 */
u16 mrc_path_pick(struct mrc_path *p, u32 now, u16 avoid);
/**
 * mrc_path_pick_lone() - the port for a packet sent with nothing in flight.
 * @p: the set.
 * @now: current time.
 *
 * Such a packet cannot overtake another, so spreading it gains nothing:
 * it takes the usable entropy with the smallest smoothed RTT among those
 * with no loss or CE mark in their current epoch (path_aware; otherwise,
 * or with no such entropy, the previous packet's).  A sparse
 * exchange (a ping-pong) then stays on one path and, at the receiver,
 * on one RSS/RPS queue and CPU, while that path's RTT stays the lowest
 * (with RTTs within noise of each other it moves among them).  Every
 * MRC_PATH_LONE_EXPLORE-th lone packet, or one whose entropy is being
 * skipped, is a plain mrc_path_pick() so that the others keep being
 * sampled.  Only those count in the balance windows.
 */
u16 mrc_path_pick_lone(struct mrc_path *p, u32 now);
/**
 * mrc_path_pick_keep() - the port of an earlier packet again, if still good.
 * @p: the set.
 * @port: that packet's port.
 * @now: current time.
 *
 * For a request answered by one response packet (an atomic, a one-segment
 * READ) sent while an earlier one is outstanding: responses come back on
 * their request's port, and on one port the requests reach the responder
 * and the responses the requester in order (one RSS/RPS queue, one CPU),
 * so that host reordering between queues cannot pass for a loss.  Returns
 * @port unless it left the set or is a suspect (a loss, mark or skip does
 * not move it: the responses still due would be reordered behind the new
 * port's); then mrc_path_pick_lone()'s choice.  Not counted in the
 * balance windows.
 */
u16 mrc_path_pick_keep(struct mrc_path *p, u16 port, u32 now);
/**
 * mrc_path_on_ack() - feedback of an ACK triggered by a packet on @port.
 * @p: the set.
 * @port: the ACK's entropy field.
 * @ce: that packet was CE marked.
 * @rtt: RTT sample from it (0: none).
 * @now: current time.
 */
void mrc_path_on_ack(struct mrc_path *p, u16 port, bool ce, u32 rtt, u32 now);
/*
 * a packet sent on @port was declared lost; the entropy is retired when
 * its losses reach loss_retire and MRC_PATH_OUTLIER times the set's
 * average (never in a set of one)
 */
void mrc_path_on_loss(struct mrc_path *p, u16 port, u32 now);
/* a loss charged to @port proved spurious: take the charge back */
void mrc_path_on_loss_undo(struct mrc_path *p, u16 port);
/* replace @port with a fresh one at once (a single path that timed out) */
void mrc_path_replace(struct mrc_path *p, u16 port);
/*
 * the sender has sent all it had (application-limited): within this
 * balance window, lossy entropies may be redrawn, the others had room
 */
void mrc_path_note_dry(struct mrc_path *p);
/* index of @port in the set, or -1 */
int mrc_path_index(const struct mrc_path *p, u16 port);

/* ---- receiver credits ---- */

/**
 * struct mrc_credit - receiver-side credit pool of one device.
 * @pool: packets all active senders together may have outstanding
 *	towards this receiver, 8 fractional bits.
 * @pool_min: floor of the pool in packets (and, unless holds are on,
 *	MRC_CREDIT_MIN_FLOW per active flow).
 * @pool_max: ceiling of the pool in packets.
 * @target_us: queueing delay the pool allows in front of the receiver.
 * @epoch_us: how often the pool and the active-flow count are updated
 *	(at the least; an epoch also waits for MRC_CREDIT_MIN_SAMPLES
 *	packets).
 * @epoch_start: start of the current epoch.
 * @epoch_id: number of the current epoch.
 * @started: @epoch_start is valid.
 * @active: flows that delivered data in the last two epochs, or wait
 *	on the hold list (>= 1).
 * @solo: epochs in a row that ended with one active flow (at most
 *	MRC_CREDIT_SOLO_EPOCHS): a flow gets pool_max only once it has
 *	been alone that long.
 * @seen: flows seen so far in this epoch.
 * @seen_prev: flows seen in the previous epoch.
 * @seen_both: flows seen in this epoch that were seen in the previous.
 * @qmin: smallest queueing delay in this epoch (valid if @q_valid).
 * @q_valid: @qmin holds a sample.
 * @samples: packets seen in this epoch.
 * @ce_samples: those of them that arrived CE marked.
 * @full_samples: those of them whose sender had used up its grant.
 * @cut_level: smoothed size of the pool when it was cut (gain 1/4, 8
 *	fractional bits; 0: never cut): where the queue pushed back.
 *	Growth stops at it plus its 2^MRC_CREDIT_CEIL_SHIFT-th part, and
 *	there raises it by 1/MRC_CREDIT_CREEP per epoch instead.
 * @cuts: pool reductions, a counter.
 * @ce_cuts: those of them CE marks sized, a counter.
 * @hold_max_us: how long a held ACK waits at the least before it is sent
 *	anyway (longer behind many held flows on a slow link, see
 *	mrc_credit_hold()); 0: no holds.
 * @gap_us: smoothed time between data arrivals (gain 1/8, each sample at
 *	most @hold_max_us; 0: none yet): how fast turns come.
 * @last_rx: arrival time of the last data packet.
 * @hold_head: oldest flow whose ACK is held (see mrc_credit_hold()).
 * @hold_tail: newest such flow.
 * @held: flows on that list.
 * @holds: ACKs held, a counter.
 * @hold_timeouts: held ACKs sent because their hold ran out, a counter.
 * @last_expiry: when the last of them was sent.
 * @expired: @last_expiry holds a time.
 * @dither: fractions of a packet of the shares given so far, fixed point
 *	(see mrc_credit_grant()).
 */
struct mrc_credit {
	u32 pool;
	u32 pool_min;
	u32 pool_max;
	u32 target_us;
	u32 epoch_us;
	u32 epoch_start;
	u32 epoch_id;
	bool started;
	u32 active;
	u32 solo;
	u32 seen;
	u32 seen_prev;
	u32 seen_both;
	u32 qmin;
	bool q_valid;
	u32 samples;
	u32 ce_samples;
	u32 full_samples;
	u32 cut_level;
	u64 cuts;
	u64 ce_cuts;
	u32 hold_max_us;
	u32 gap_us;
	u32 last_rx;
	struct mrc_credit_flow *hold_head;
	struct mrc_credit_flow *hold_tail;
	u32 held;
	u64 holds;
	u64 hold_timeouts;
	u32 last_expiry;
	bool expired;
	u32 dither;
};

/**
 * struct mrc_credit_flow - receiver-side record of one sending QP.
 * @owd_min: smallest one-way delay (arrival - sender timestamp, on two
 *	unsynchronised clocks: only differences matter) in this window.
 * @owd_prev: the smallest of the previous window.
 * @win: window number of @owd_min (windows of MRC_CREDIT_OWD_EPOCHS).
 * @valid: @owd_min holds a sample.
 * @epoch_id: last epoch this flow was counted in.
 * @counted: @epoch_id is valid.
 * @hold_prev: previous flow on the pool's hold list.
 * @hold_next: next flow on it.
 * @hold_since: when this flow's ACK was held.
 * @hold_for: how long it may be held.
 * @held: the flow is on the hold list.
 * @released: taken off the list for its turn: its ACK is due.
 */
struct mrc_credit_flow {
	u32 owd_min;
	u32 owd_prev;
	u32 win;
	bool valid;
	u32 epoch_id;
	bool counted;
	struct mrc_credit_flow *hold_prev;
	struct mrc_credit_flow *hold_next;
	u32 hold_since;
	u32 hold_for;
	bool held;
	bool released;
};

#define MRC_CREDIT_OWD_EPOCHS	2048	/* base delay forgotten after 2 windows */
#define MRC_CREDIT_MIN_FLOW	1	/* packets a flow always gets */
#define MRC_CREDIT_MIN_SAMPLES	8	/* packets an epoch waits for, and needs to cut on delay */
#define MRC_CREDIT_EPOCH_MAX	8	/* an epoch waits for them this many epoch_us */
#define MRC_CREDIT_HOLD_TURNS	2	/* a hold lasts up to twice its expected wait */
#define MRC_CREDIT_HOLD_CAP	16	/* but at most this many hold_max_us */
#define MRC_CREDIT_HOLD_MAX_US	1000000	/* largest hold_max_us: the cap fits 2^31 */
#define MRC_CREDIT_CEIL_SHIFT	2	/* growth stops at level + level / 4 */
#define MRC_CREDIT_SOLO_EPOCHS	8	/* alone this many epochs: pool_max */
#define MRC_CREDIT_CREEP	128	/* there the level rises 1/128 an epoch */

void mrc_credit_init(struct mrc_credit *c, u32 pool_min, u32 pool_max,
		     u32 target_us, u32 epoch_us);
void mrc_credit_flow_init(struct mrc_credit_flow *f);
/* largest pool growth may reach, in packets (8 fractional bits); 0: none */
u32 mrc_credit_ceiling(const struct mrc_credit *c);
/**
 * mrc_credit_on_data() - a data packet of @f arrived.
 * @c: the device's pool.
 * @f: the sending QP's record.
 * @now: arrival time.
 * @tsval: the packet's sender timestamp.
 * @ce: the packet arrived CE marked.
 * @full: the packet said its sender had used up its grant (MRC_F_CREDIT).
 *
 * Queueing delay is this packet's one-way delay minus the flow's
 * smallest.  An epoch ends at the first packet after @epoch_us once
 * it has seen MRC_CREDIT_MIN_SAMPLES packets, or after
 * MRC_CREDIT_EPOCH_MAX times @epoch_us.  Then, with one active flow the
 * pool keeps its size; otherwise it shrinks in proportion to how far the
 * epoch's smallest queueing delay is over @target_us (if it had
 * MRC_CREDIT_MIN_SAMPLES packets), or by half the share of its packets
 * that was CE marked, whichever cut is larger (at most by half); with
 * neither it grows by an eighth if one of its packets was @full.
 */
void mrc_credit_on_data(struct mrc_credit *c, struct mrc_credit_flow *f,
			u32 now, u32 tsval, bool ce, bool full);
/*
 * packets the flow may have outstanding: its fair share of the pool, the
 * share's fraction given out as a whole packet on every so many grants;
 * pool_max once it has been the only active flow for
 * MRC_CREDIT_SOLO_EPOCHS epochs
 */
u32 mrc_credit_grant(struct mrc_credit *c);
/*
 * The requester's side of a grant: @credit counts packets of the path
 * MTU's payload (@path bytes), so it allows @credit x @path bytes of
 * payload in flight.  Returns how many data packets of @seg bytes that
 * is, at least one.
 */
u32 mrc_credit_wnd(u32 credit, u32 path, u32 seg);
/*
 * Hold ACKs for rotation, each for at least @hold_max_us before it is
 * sent anyway (0: never hold), at most MRC_CREDIT_HOLD_MAX_US (larger
 * values are clamped).  With holds on, the pool may shrink below one
 * packet per active flow.
 */
void mrc_credit_set_hold(struct mrc_credit *c, u32 hold_max_us);
/**
 * mrc_credit_hold() - may the responder send @f's ACK now?
 * @c: the device's pool.
 * @f: the flow with a coalesced ACK due.
 * @now: the time.
 * @release: set to a held flow whose ACK is due now, or NULL.
 *
 * When more flows are active than the pool has packets, each flow is
 * granted one packet and the pool's packets rotate among the flows: a
 * flow whose packet arrived waits for its ACK (so, with a window of one
 * packet, sends nothing more) until another flow's packet arrives, in
 * arrival order.  The flows that hold a packet of the pool are those
 * not held; as long as more of them are active than the pool has
 * packets, ACKs are held without a release.  A held ACK is due at the
 * latest @f->hold_for after it was held: MRC_CREDIT_HOLD_TURNS times the
 * wait its place in the list predicts (one smoothed arrival gap for each
 * moving flow beyond the pool, each flow ahead of it, and its own), at
 * least @hold_max_us and at most
 * MRC_CREDIT_HOLD_CAP times that.  On a slow link a turn takes longer,
 * and a hold that ran out would only let one packet more into the queue.
 *
 * Return: true if the ACK must wait (call again when the caller's timer
 * for @f->hold_for or a release fires), false to send it.
 */
bool mrc_credit_hold(struct mrc_credit *c, struct mrc_credit_flow *f,
		     u32 now, struct mrc_credit_flow **release);
/* @f got an ACK anyway, or is reset or going away: off the hold list */
void mrc_credit_unhold(struct mrc_credit *c, struct mrc_credit_flow *f);

/* ---- receive-side placement checks ---- */

#define MRC_ACC_LOCAL_WRITE	0x01	/* IB_ACCESS_LOCAL_WRITE */
#define MRC_ACC_REMOTE_WRITE	0x02	/* IB_ACCESS_REMOTE_WRITE */
#define MRC_ACC_REMOTE_READ	0x04	/* IB_ACCESS_REMOTE_READ */
#define MRC_ACC_REMOTE_ATOMIC	0x08	/* IB_ACCESS_REMOTE_ATOMIC */

/**
 * struct mrc_region - what a key grants: [iova, iova + length) with access.
 * @iova: first address.
 * @length: bytes.
 * @access: MRC_ACC_* rights.
 */
struct mrc_region {
	u64 iova;
	u64 length;
	u32 access;
};

/**
 * mrc_region_check() - may [@va, @va + @len) be accessed with @need?
 * @r: the region.
 * @va: first address.
 * @len: bytes.
 * @need: MRC_ACC_* rights wanted.
 *
 * Return: 0; -EACCES if @need is not granted; -ERANGE if the range is
 * outside the region or @va + @len overflows.  @len == 0 is always 0.
 */
int mrc_region_check(const struct mrc_region *r, u64 va, u64 len, u32 need);

/**
 * mrc_region_chunk() - where byte @va of a region lies in its pages.
 * @r: the region; its first byte sits @page_off bytes into page 0.
 * @page_off: offset of r->iova in the first page.
 * @shift: log2 of the page size.
 * @va: address inside the region (checked by mrc_region_check()).
 * @len: bytes wanted from @va on.
 * @page: out: page index.
 * @in_page: out: offset inside that page.
 *
 * Return: bytes that can be copied before the page ends (<= @len).
 */
u32 mrc_region_chunk(const struct mrc_region *r, u32 page_off, u32 shift,
		     u64 va, u64 len, u64 *page, u32 *in_page);

/**
 * mrc_seg_count() - packets for @len bytes at segment size 1 << @shift
 * (a zero-length message still takes one packet).
 * @len: message length in bytes.
 * @shift: log2 of the segment size.
 *
 * Return: the packet count.
 */
static inline u32 mrc_seg_count(u32 len, u8 shift)
{
	return len ? (u32)(((u64)len + (1u << shift) - 1) >> shift) : 1;
}

#endif /* MRC_ENGINE_H */

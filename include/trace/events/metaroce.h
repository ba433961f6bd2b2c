/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of the metaroce RDMA transport (rdma_metaroce.ko): what a
 * QP sends and receives, how it finds and repairs losses, what ACKs and
 * credits say, and its window, paths, state and error completions.
 * QPNs are the local QP's; PSNs are the local requester's (or, for
 * packets of the peer's requests, the peer's).  Documentation:
 * Documentation/infiniband/metaroce.rst, "Tracepoints".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM metaroce

#if !defined(_TRACE_METAROCE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_METAROCE_H

#include <linux/tracepoint.h>
#include <metaroce/mrc_engine.h>

/* why a PSN was declared lost */
#define MRC_TRACE_LOSS_RACK	0
#define MRC_TRACE_LOSS_TLP	1
#define MRC_TRACE_LOSS_RTO	2

/* path engine events */
#define MRC_TRACE_PATH_SWITCH	0
#define MRC_TRACE_PATH_REBALANCE 1
#define MRC_TRACE_PATH_RETIRE	2
#define MRC_TRACE_PATH_DELAY_SKIP 3

#define show_mrc_opcode(op)						\
	__print_symbolic(op, { 0x01, "SEND" }, { 0x02, "WRITE" },	\
			 { 0x03, "READ_REQ" }, { 0x04, "ATOMIC_CS" },	\
			 { 0x05, "ATOMIC_FA" }, { 0x06, "UD_SEND" },	\
			 { 0x10, "READ_RESP" }, { 0x11, "ATOMIC_RESP" },	\
			 { 0x20, "ACK" })

#define show_mrc_loss(c)						\
	__print_symbolic(c, { MRC_TRACE_LOSS_RACK, "RACK" },		\
			 { MRC_TRACE_LOSS_TLP, "TLP" },			\
			 { MRC_TRACE_LOSS_RTO, "RTO" })

/* why an entropy got a fresh port (enum mrc_path_why); NONE: no retire */
#define MRC_TRACE_WHY_NONE	0xff
TRACE_DEFINE_ENUM(MRC_PATH_WHY_STARVED);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_EXPLORE);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_LOSSY);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_DEAD);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_SHED);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_CE);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_REPLACED);
TRACE_DEFINE_ENUM(MRC_PATH_WHY_DELAYED);

#define show_mrc_path_why(w)						\
	__print_symbolic(w, { MRC_PATH_WHY_STARVED, "starved" },	\
			 { MRC_PATH_WHY_EXPLORE, "explore" },		\
			 { MRC_PATH_WHY_LOSSY, "lossy" },		\
			 { MRC_PATH_WHY_DEAD, "dead" },			\
			 { MRC_PATH_WHY_SHED, "shed" },			\
			 { MRC_PATH_WHY_CE, "ce" },			\
			 { MRC_PATH_WHY_REPLACED, "replaced" },		\
			 { MRC_PATH_WHY_DELAYED, "delayed" },		\
			 { MRC_TRACE_WHY_NONE, "-" })

#define show_mrc_path(e)						\
	__print_symbolic(e, { MRC_TRACE_PATH_SWITCH, "switch" },	\
			 { MRC_TRACE_PATH_REBALANCE, "rebalance" },	\
			 { MRC_TRACE_PATH_RETIRE, "retire" },		\
			 { MRC_TRACE_PATH_DELAY_SKIP, "delay_skip" })

DECLARE_EVENT_CLASS(mrc_packet,
	TP_PROTO(u32 qpn, u32 peer_qpn, u32 psn, u8 opcode, u8 flags,
		 u16 entropy, u32 len),
	TP_ARGS(qpn, peer_qpn, psn, opcode, flags, entropy, len),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, peer_qpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u16, entropy)
		__field(u8, opcode)
		__field(u8, flags)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->peer_qpn = peer_qpn;
		__entry->psn = psn;
		__entry->len = len;
		__entry->entropy = entropy;
		__entry->opcode = opcode;
		__entry->flags = flags;
	),
	TP_printk("qpn=%u peer=%u psn=%u op=%s flags=0x%02x entropy=%u len=%u",
		  __entry->qpn, __entry->peer_qpn, __entry->psn,
		  show_mrc_opcode(__entry->opcode), __entry->flags,
		  __entry->entropy, __entry->len)
);

/* a packet built and queued for transmission (@entropy: UDP source port) */
DEFINE_EVENT(mrc_packet, mrc_xmit,
	TP_PROTO(u32 qpn, u32 peer_qpn, u32 psn, u8 opcode, u8 flags,
		 u16 entropy, u32 len),
	TP_ARGS(qpn, peer_qpn, psn, opcode, flags, entropy, len));

/* a packet that parsed; @qpn is its destination QPN, not yet looked up */
DEFINE_EVENT(mrc_packet, mrc_recv,
	TP_PROTO(u32 qpn, u32 peer_qpn, u32 psn, u8 opcode, u8 flags,
		 u16 entropy, u32 len),
	TP_ARGS(qpn, peer_qpn, psn, opcode, flags, entropy, len));

/* PSNs declared lost: @count from @psn on (RACK: una at the time) */
TRACE_EVENT(mrc_loss,
	TP_PROTO(u32 qpn, u8 cause, u32 psn, u32 count),
	TP_ARGS(qpn, cause, psn, count),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, count)
		__field(u8, cause)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->count = count;
		__entry->cause = cause;
	),
	TP_printk("qpn=%u cause=%s psn=%u count=%u", __entry->qpn,
		  show_mrc_loss(__entry->cause), __entry->psn, __entry->count)
);

/* one packet resent: @npsn PSNs from @psn (a READ re-request may ask for more) */
TRACE_EVENT(mrc_retransmit,
	TP_PROTO(u32 qpn, u32 psn, u32 npsn, u8 opcode, u16 entropy),
	TP_ARGS(qpn, psn, npsn, opcode, entropy),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, npsn)
		__field(u16, entropy)
		__field(u8, opcode)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->npsn = npsn;
		__entry->entropy = entropy;
		__entry->opcode = opcode;
	),
	TP_printk("qpn=%u psn=%u npsn=%u op=%s entropy=%u", __entry->qpn,
		  __entry->psn, __entry->npsn, show_mrc_opcode(__entry->opcode),
		  __entry->entropy)
);

/*
 * An ACK the requester took: cumulative PSN, SACK words and the first
 * word's bitmap (bit i: cum + 1 + i arrived), what it delivered.
 */
TRACE_EVENT(mrc_sack,
	TP_PROTO(u32 qpn, u32 cum, u8 sack_words, u64 sack0, u32 una,
		 u32 newly_acked, u32 credit),
	TP_ARGS(qpn, cum, sack_words, sack0, una, newly_acked, credit),
	TP_STRUCT__entry(
		__field(u64, sack0)
		__field(u32, qpn)
		__field(u32, cum)
		__field(u32, una)
		__field(u32, newly_acked)
		__field(u32, credit)
		__field(u8, sack_words)
	),
	TP_fast_assign(
		__entry->sack0 = sack0;
		__entry->qpn = qpn;
		__entry->cum = cum;
		__entry->una = una;
		__entry->newly_acked = newly_acked;
		__entry->credit = credit;
		__entry->sack_words = sack_words;
	),
	TP_printk("qpn=%u cum=%u sack_words=%u sack0=0x%016llx una=%u newly_acked=%u credit=%u",
		  __entry->qpn, __entry->cum, __entry->sack_words,
		  (unsigned long long)__entry->sack0, __entry->una,
		  __entry->newly_acked, __entry->credit)
);

/* an ACK or NAK the responder built */
TRACE_EVENT(mrc_ack,
	TP_PROTO(u32 qpn, u32 cum, u8 syndrome, u8 sack_words, u32 credit,
		 u16 ce, u8 flags),
	TP_ARGS(qpn, cum, syndrome, sack_words, credit, ce, flags),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, cum)
		__field(u32, credit)
		__field(u16, ce)
		__field(u8, syndrome)
		__field(u8, sack_words)
		__field(u8, flags)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->cum = cum;
		__entry->credit = credit;
		__entry->ce = ce;
		__entry->syndrome = syndrome;
		__entry->sack_words = sack_words;
		__entry->flags = flags;
	),
	TP_printk("qpn=%u cum=%u syndrome=%u sack_words=%u credit=%u ce=%u flags=0x%02x",
		  __entry->qpn, __entry->cum, __entry->syndrome,
		  __entry->sack_words, __entry->credit, __entry->ce,
		  __entry->flags)
);

/*
 * The send window changed: the least of the congestion window, the
 * module's limit and the peer's credit grant (0: no grant in force).
 */
TRACE_EVENT(mrc_wnd,
	TP_PROTO(u32 qpn, u32 old_wnd, u32 wnd, u32 cwnd, u32 limit,
		 u32 credit),
	TP_ARGS(qpn, old_wnd, wnd, cwnd, limit, credit),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, old_wnd)
		__field(u32, wnd)
		__field(u32, cwnd)
		__field(u32, limit)
		__field(u32, credit)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->old_wnd = old_wnd;
		__entry->wnd = wnd;
		__entry->cwnd = cwnd;
		__entry->limit = limit;
		__entry->credit = credit;
	),
	TP_printk("qpn=%u wnd=%u->%u cwnd=%u limit=%u credit=%u",
		  __entry->qpn, __entry->old_wnd, __entry->wnd, __entry->cwnd,
		  __entry->limit, __entry->credit)
);

/*
 * the path engine moved: @entropy is the port picked or judged, or the
 * one given up (rebalance, retire), @why the reason for that
 */
TRACE_EVENT(mrc_path,
	TP_PROTO(u32 qpn, u8 event, u16 entropy, u8 why),
	TP_ARGS(qpn, event, entropy, why),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u16, entropy)
		__field(u8, event)
		__field(u8, why)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->entropy = entropy;
		__entry->event = event;
		__entry->why = why;
	),
	TP_printk("qpn=%u event=%s entropy=%u why=%s", __entry->qpn,
		  show_mrc_path(__entry->event), __entry->entropy,
		  show_mrc_path_why(__entry->why))
);

/* a QP state change (enum ib_qp_state) */
TRACE_EVENT(mrc_qp_state,
	TP_PROTO(u32 qpn, u8 old_state, u8 state),
	TP_ARGS(qpn, old_state, state),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, old_state)
		__field(u8, state)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->old_state = old_state;
		__entry->state = state;
	),
	TP_printk("qpn=%u state=%u->%u", __entry->qpn, __entry->old_state,
		  __entry->state)
);

/* a send completion with an error status (enum ib_wc_status) */
TRACE_EVENT(mrc_cqe_err,
	TP_PROTO(u32 qpn, u64 wr_id, u8 status, u8 wc_opcode),
	TP_ARGS(qpn, wr_id, status, wc_opcode),
	TP_STRUCT__entry(
		__field(u64, wr_id)
		__field(u32, qpn)
		__field(u8, status)
		__field(u8, wc_opcode)
	),
	TP_fast_assign(
		__entry->wr_id = wr_id;
		__entry->qpn = qpn;
		__entry->status = status;
		__entry->wc_opcode = wc_opcode;
	),
	TP_printk("qpn=%u wr_id=0x%llx status=%u wc_opcode=%u", __entry->qpn,
		  (unsigned long long)__entry->wr_id, __entry->status,
		  __entry->wc_opcode)
);

#endif /* _TRACE_METAROCE_H */

#include <trace/define_trace.h>

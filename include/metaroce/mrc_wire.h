/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * MetaRoCE wire format, version 2.
 *
 * A packet is one UDP datagram: a header, then payload.  SEND and WRITE
 * carry the short data header; every other packet the base header and an
 * opcode-specific extension.  Every multi-byte field is big endian.  The
 * normative description is Documentation/infiniband/metaroce-protocol.rst;
 * keep the two in step.
 */
#ifndef MRC_WIRE_H
#define MRC_WIRE_H

#include "mrc_types.h"

#define MRC_WIRE_VERSION	2
#define MRC_DEFAULT_UDP_PORT	4792	/* not 4791: coexists with RoCEv2 */

/* Base header, 24 bytes. */
#define MRC_BTH_LEN		24
#define MRC_BTH_OFF_VER		0	/* u8: version << 4, low nibble 0 */
#define MRC_BTH_OFF_OPCODE	1	/* u8: enum mrc_opcode */
#define MRC_BTH_OFF_FLAGS	2	/* u8: MRC_F_* */
#define MRC_BTH_OFF_HDRW	3	/* u8: header length (base + ext) in 4-byte words */
#define MRC_BTH_OFF_DQPN	4	/* be32: destination QPN, 24 bits used */
#define MRC_BTH_OFF_SQPN	8	/* be32: source QPN, 24 bits used */
#define MRC_BTH_OFF_PSN		12	/* be32: packet sequence number (ACK: cumulative) */
#define MRC_BTH_OFF_TSVAL	16	/* be32: sender clock, microseconds */
#define MRC_BTH_OFF_PAYLEN	20	/* be16: payload bytes after the header */
#define MRC_BTH_OFF_PMTU	22	/* u8: log2 of the message's segment size */
#define MRC_BTH_OFF_RSVD	23	/* u8: zero */

/**
 * enum mrc_opcode - packet types.
 * @MRC_OP_SEND: SEND / SEND_WITH_IMM / SEND_WITH_INV data packet.
 * @MRC_OP_WRITE: RDMA WRITE (and WRITE_WITH_IMM) data packet.
 * @MRC_OP_READ_REQ: RDMA READ request for a run of response segments.
 * @MRC_OP_ATOMIC_CS: atomic compare and swap request.
 * @MRC_OP_ATOMIC_FA: atomic fetch and add request.
 * @MRC_OP_UD_SEND: one unreliable datagram (UD and GSI QPs): the whole
 *	message in one packet, no PSN, never acknowledged.
 * @MRC_OP_READ_RESP: one RDMA READ response segment.
 * @MRC_OP_ATOMIC_RESP: atomic response (the original value).
 * @MRC_OP_ACK: cumulative ACK with SACK, or a NAK.
 */
enum mrc_opcode {
	MRC_OP_SEND		= 0x01,
	MRC_OP_WRITE		= 0x02,
	MRC_OP_READ_REQ		= 0x03,
	MRC_OP_ATOMIC_CS	= 0x04,
	MRC_OP_ATOMIC_FA	= 0x05,
	MRC_OP_UD_SEND		= 0x06,
	MRC_OP_READ_RESP	= 0x10,
	MRC_OP_ATOMIC_RESP	= 0x11,
	MRC_OP_ACK		= 0x20,
};

/*
 * Data header (SEND, WRITE): the base header's first 20 bytes, then the
 * fields below.  No payload length (the datagram gives it) and no segment
 * size: every packet is placed by its own address or offset, so a sender
 * may cut a message into segments of any size that fills its MTU.
 */
#define MRC_DATA_COMMON_LEN	20	/* bytes 0..19 as in the base header */
#define MRC_SEND_OFF_RMSN	20	/* be32: receive message sequence number */
#define MRC_SEND_OFF_OFFSET	24	/* be32: byte offset in the message */
#define MRC_SEND_OFF_IMM	28	/* be32: with IMM or INV only */
#define MRC_SEND_LEN		28	/* 32 with IMM or INV */
#define MRC_WRITE_OFF_RKEY	20	/* be32 */
#define MRC_WRITE_OFF_VA	24	/* be64: where this packet's payload goes */
#define MRC_WRITE_OFF_RMSN	32	/* be32: with IMM only */
#define MRC_WRITE_OFF_MSGLEN	36	/* be32: with IMM only, the WRITE's length */
#define MRC_WRITE_OFF_IMM	40	/* be32: with IMM only */
#define MRC_WRITE_LEN		32	/* 44 with IMM */
#define MRC_DATA_MAX_LEN	44

/* Flags (base header byte 2). */
#define MRC_F_ACKREQ		0x01	/* receiver should ACK at once */
#define MRC_F_SOLICITED		0x02	/* solicited event (SEND, WRITE_IMM) */
#define MRC_F_RETX		0x04	/* retransmission */
#define MRC_F_LAST		0x08	/* last packet of the message */
#define MRC_F_IMM		0x10	/* imm field valid */
#define MRC_F_INV		0x20	/* imm field is an rkey to invalidate */
#define MRC_F_ORDERED		0x40	/* SEND/WRITE: place only in PSN order */
#define MRC_F_CREDIT		0x80	/* request: the grant, used up, holds it */
#define MRC_F_ALL		0xff

/* Request extension (READ_REQ), 32 bytes. */
#define MRC_REQ_LEN		32
#define MRC_REQ_OFF_VA		0	/* be64 */
#define MRC_REQ_OFF_RKEY	8	/* be32 */
#define MRC_REQ_OFF_MSGLEN	12	/* be32 */
#define MRC_REQ_OFF_OFFSET	16	/* be32 */
#define MRC_REQ_OFF_RMSN	20	/* be32 */
#define MRC_REQ_OFF_IMM		24	/* be32 */
#define MRC_REQ_OFF_RSVD	28	/* be32, zero */

/* Atomic extension (ATOMIC_CS, ATOMIC_FA), 32 bytes. */
#define MRC_ATOMIC_LEN		32
#define MRC_ATOMIC_OFF_VA	0	/* be64 */
#define MRC_ATOMIC_OFF_RKEY	8	/* be32 */
#define MRC_ATOMIC_OFF_RSVD	12	/* be32, zero */
#define MRC_ATOMIC_OFF_SWAPADD	16	/* be64: swap value (CS) or addend (FA) */
#define MRC_ATOMIC_OFF_COMPARE	24	/* be64: compare value (CS), zero (FA) */

/* READ response extension, 8 bytes. */
#define MRC_RRESP_LEN		8
#define MRC_RRESP_OFF_OFFSET	0	/* be32: byte offset in the READ message */
#define MRC_RRESP_OFF_MSGLEN	4	/* be32: total READ length */

/* UD datagram extension (UD_SEND), 8 bytes. */
#define MRC_UD_LEN		8
#define MRC_UD_OFF_QKEY		0	/* be32: Q_Key the destination QP must have */
#define MRC_UD_OFF_IMM		4	/* be32: immediate data with MRC_F_IMM, else zero */

/* Atomic response extension, 8 bytes. */
#define MRC_ARESP_LEN		8
#define MRC_ARESP_OFF_ORIG	0	/* be64: value before the operation */

/* ACK extension, 32 bytes + 8 per SACK word. */
#define MRC_ACK_LEN		32
#define MRC_ACK_OFF_SYNDROME	0	/* u8: enum mrc_syndrome */
#define MRC_ACK_OFF_SACKW	1	/* u8: number of 64-bit SACK words */
#define MRC_ACK_OFF_RNRT	2	/* u8: RNR timer code (IBTA encoding) */
#define MRC_ACK_OFF_FLAGS	3	/* u8: MRC_ACKF_* */
#define MRC_ACK_OFF_NAKPSN	4	/* be32: PSN a NAK refers to */
#define MRC_ACK_OFF_TSECHO	8	/* be32: tsval of the packet that triggered the ACK */
#define MRC_ACK_OFF_DELAY	12	/* be32: microseconds the ACK was held */
#define MRC_ACK_OFF_CECNT	16	/* be16: CE-marked packets since the last ACK */
#define MRC_ACK_OFF_ENTROPY	18	/* be16: UDP source port of the trigger */
#define MRC_ACK_OFF_CREDIT	20	/* be32: PSNs the sender may have out, 0: no limit */
#define MRC_ACK_OFF_DGRAM	24	/* be16: largest datagram the sender takes, 0: unsaid */
#define MRC_ACK_OFF_RSVD	26	/* 6 bytes, zero */
#define MRC_ACK_OFF_SACK	32	/* be64 words */
#define MRC_ACK_MAX_SACKW	4	/* 256 PSNs beyond the cumulative ACK */
/* the longest header of any packet: an ACK with every SACK word */
#define MRC_HDR_MAX_LEN		(MRC_BTH_LEN + MRC_ACK_LEN + 8 * MRC_ACK_MAX_SACKW)

#define MRC_ACKF_CE		0x01	/* the trigger packet was CE marked */
#define MRC_ACKF_DUP		0x02	/* the trigger packet was a duplicate */
#define MRC_ACKF_OOO		0x04	/* an ordered packet beyond cum was discarded */
#define MRC_ACKF_HELD		0x08	/* with DUP: an ACK was still owed then */
#define MRC_ACKF_ALL		0x0f

/**
 * enum mrc_syndrome - ACK kinds.
 * @MRC_SYN_ACK: positive ACK.
 * @MRC_SYN_RNR: receiver not ready for the message at nak_psn.
 * @MRC_SYN_INV_REQ: invalid request at nak_psn (fatal to the QP).
 * @MRC_SYN_REM_ACCESS: rkey, bounds or access failure at nak_psn (fatal).
 * @MRC_SYN_REM_OP: remote operational error at nak_psn (fatal).
 */
enum mrc_syndrome {
	MRC_SYN_ACK		= 0,
	MRC_SYN_RNR		= 1,
	MRC_SYN_INV_REQ		= 2,
	MRC_SYN_REM_ACCESS	= 3,
	MRC_SYN_REM_OP		= 4,
};

#define MRC_PMTU_MIN_SHIFT	8	/* 256 bytes */
#define MRC_PMTU_IB_SHIFT	12	/* 4096 bytes, the largest IB path MTU */
#define MRC_PMTU_MAX_SHIFT	13	/* 8192 bytes, jumbo segments */
#define MRC_MAX_MSG_LEN		0x80000000u	/* 2 GiB */
#define MRC_READ_CHUNK		256	/* most PSNs one READ_REQ may ask for */

/**
 * struct mrc_pkt - a decoded header (host order).
 * @opcode: the packet type, enum mrc_opcode.
 * @flags: MRC_F_* bits of the base header.
 * @pmtu_shift: log2 of the message's segment size (READ_REQ, READ_RESP,
 *	UD_SEND; the atomics carry the requester's); in an ACK, log2 of the
 *	largest READ response segment the ACK's sender takes (0: not said);
 *	0 in SEND and WRITE, whose header has no such field.
 * @hdr_len: header length in bytes, extension included.
 * @pay_len: payload bytes after the header.
 * @dqpn: destination QP number (24 bits).
 * @sqpn: source QP number (24 bits).
 * @psn: packet sequence number; for an ACK the cumulative ACK.
 * @tsval: sender's timestamp in microseconds, echoed in ACKs.
 * @req: SEND, WRITE and READ_REQ fields: remote address and key (WRITE:
 *	where this packet goes), message length, offset of this packet in
 *	the message, receive message sequence number (RMSN) and immediate
 *	data.  A SEND's header has no length: parse sets @req.msg_len to
 *	the end of this packet's payload, which is the message length in
 *	the LAST packet.  A WRITE's header has no offset (parse gives 0),
 *	and carries RMSN and length only with IMM (else parse gives 0).
 * @atomic: atomic request extension: address, key and operands.
 * @rresp: READ response extension: offset and message length.
 * @aresp: atomic response extension: the original value.
 * @ud: UD extension: Q_Key and immediate data.
 * @ack: ACK extension: syndrome, SACK word count, RNR timer, ACK flags,
 *	NAK PSN, echoed timestamp, time the ACK was held, CE count, entropy
 *	echo, credit, the largest datagram (UDP payload) the ACK's sender
 *	takes and the SACK words.
 *
 * Only the extension that belongs to @opcode is valid.  For an ACK, @psn
 * is the cumulative ACK: every PSN before it was received.  SACK bit b of
 * word w (bit 0 = least significant) reports PSN psn + 1 + 64 * w + b.
 */
struct mrc_pkt {
	u8 opcode;
	u8 flags;
	u8 pmtu_shift;
	u16 hdr_len;
	u16 pay_len;
	u32 dqpn;
	u32 sqpn;
	u32 psn;
	u32 tsval;
	union {
		struct {
			u64 va;
			u32 rkey;
			u32 msg_len;
			u32 offset;
			u32 rmsn;
			u32 imm;
		} req;
		struct {
			u64 va;
			u32 rkey;
			u64 swap_add;
			u64 compare;
		} atomic;
		struct {
			u32 offset;
			u32 msg_len;
		} rresp;
		struct {
			u64 orig;
		} aresp;
		struct {
			u32 qkey;
			u32 imm;
		} ud;
		struct {
			u8 syndrome;
			u8 sack_words;
			u8 rnr_timer;
			u8 flags;
			u32 nak_psn;
			u32 ts_echo;
			u32 delay;
			u16 ce_count;
			u16 entropy;
			u32 credit;
			u16 max_dgram;
			u64 sack[MRC_ACK_MAX_SACKW];
		} ack;
	};
};

/**
 * enum mrc_drop - why a received packet was dropped.  Wire-level reasons
 * come from mrc_wire_parse(); the rest from the receive engine.
 * @MRC_DROP_NONE: not dropped.
 * @MRC_DROP_TRUNCATED: shorter than its headers.
 * @MRC_DROP_BAD_VERSION: unknown protocol version.
 * @MRC_DROP_BAD_OPCODE: unknown opcode.
 * @MRC_DROP_BAD_HDR_LEN: hdr_words disagrees with the opcode and flags.
 * @MRC_DROP_BAD_PAY_LEN: pay_len disagrees with the datagram or opcode.
 * @MRC_DROP_BAD_FIELD: reserved bits set, bad flags, QPN over 24 bits.
 * @MRC_DROP_BAD_PMTU: segment size out of range.
 * @MRC_DROP_BAD_LENGTH: offset or length out of range, or overflowing.
 * @MRC_DROP_BAD_SACK: SACK word count out of range.
 * @MRC_DROP_NO_QP: unknown destination QPN.
 * @MRC_DROP_BAD_SRC: source address or QPN not the QP's peer.
 * @MRC_DROP_BAD_STATE: QP not in a state to take this packet.
 * @MRC_DROP_OUT_OF_WINDOW: PSN beyond the receive window.
 * @MRC_DROP_BAD_ACK: ACK for PSNs never sent.
 * @MRC_DROP_NO_RESOURCE: a resource ran out (response queue).
 * @MRC_DROP_BAD_DUP: a duplicate READ_REQ that asks for other than what
 *	the same PSNs asked for when they first arrived.
 * @MRC_DROP_STALE_READ: a duplicate READ_REQ whose region has lost its
 *	remote read access since the READ was first served: a stale
 *	re-request that the requester's later work overtook.
 * @MRC_DROP_NR: number of reasons.
 */
enum mrc_drop {
	MRC_DROP_NONE = 0,
	MRC_DROP_TRUNCATED,	/* shorter than its headers */
	MRC_DROP_BAD_VERSION,
	MRC_DROP_BAD_OPCODE,
	MRC_DROP_BAD_HDR_LEN,	/* hdr_words disagrees with opcode and flags */
	MRC_DROP_BAD_PAY_LEN,	/* pay_len disagrees with the datagram or opcode */
	MRC_DROP_BAD_FIELD,	/* reserved bits set, bad flags, QPN > 24 bits */
	MRC_DROP_BAD_PMTU,
	MRC_DROP_BAD_LENGTH,	/* offset/length out of range or overflow */
	MRC_DROP_BAD_SACK,
	MRC_DROP_NO_QP,		/* unknown destination QPN */
	MRC_DROP_BAD_SRC,	/* source address or QPN not the QP's peer */
	MRC_DROP_BAD_STATE,	/* QP not in a state to take this packet */
	MRC_DROP_OUT_OF_WINDOW,	/* PSN beyond the receive window */
	MRC_DROP_BAD_ACK,	/* ACK for PSNs never sent */
	MRC_DROP_NO_RESOURCE,	/* resource exhausted (response queue) */
	MRC_DROP_BAD_DUP,	/* duplicate READ_REQ unlike the original */
	MRC_DROP_STALE_READ,	/* duplicate READ_REQ of a region gone since */
	MRC_DROP_NR
};

int mrc_wire_parse(const void *buf, u32 len, struct mrc_pkt *p);
u32 mrc_wire_hdr_len(u8 opcode, u8 flags, u8 sack_words);
u32 mrc_wire_build(void *buf, const struct mrc_pkt *p);

#endif /* MRC_WIRE_H */

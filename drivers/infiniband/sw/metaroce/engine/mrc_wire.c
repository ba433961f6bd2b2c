// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MetaRoCE wire format: header parsing and building.
 *
 * mrc_wire_parse() is where a received header becomes trusted, so it checks
 * every field and the rest of the driver relies on that.  Rules not spelt
 * out in mrc_wire.h:
 *
 * - Byte 0: the high nibble is the version (not 2: BAD_VERSION); the low
 *   nibble is reserved (not 0: BAD_FIELD).
 * - pmtu_shift: every packet but SEND and WRITE (which have no such
 *   field) names its message's segment size, 8..13 (13: jumbo segments;
 *   a UD_SEND 8..12).  An ACK belongs to no message: it advertises the
 *   largest READ response segment its sender takes, 8..13, or 0 for none
 *   said.  Anything else is BAD_PMTU.
 * - Flags: SEND takes ACKREQ, SOLICITED, RETX, LAST, IMM, INV, ORDERED;
 *   WRITE the same without INV, and SOLICITED only together with IMM;
 *   READ_REQ ACKREQ, RETX and LAST; the atomics ACKREQ and RETX;
 *   responses RETX only; an ACK none; UD_SEND SOLICITED and IMM.  IMM and
 *   INV exclude each other.  They are checked before the header length,
 *   which depends on them.  READ_REQ's imm field is reserved; a SEND or
 *   WRITE has one only with IMM (or INV).
 * - SEND and WRITE: the header length follows from the opcode and the
 *   IMM and INV flags.  The payload is the rest of the datagram; only the
 *   LAST packet may be empty (else BAD_PAY_LEN), and a SEND must end
 *   within MRC_MAX_MSG_LEN, a WRITE with IMM be no longer (BAD_LENGTH).
 *   Segment sizes are the sender's choice: each packet says where it goes.
 * - READ_RESP: a packet starts on a segment boundary of the READ; every
 *   packet but the one that ends it carries exactly one full segment
 *   (else BAD_PAY_LEN).
 * - READ_REQ asks for msg_len bytes from offset (a segment boundary) of a
 *   READ no longer than MRC_MAX_MSG_LEN: offset + msg_len <= that limit;
 *   and for at most MRC_READ_CHUNK segments, so that one packet cannot
 *   make the responder walk or answer more than that.
 * - Atomics: va 8-byte aligned, the compare field of FETCH_ADD zero.
 * - UD_SEND: a whole message in one packet, so no more payload than the
 *   segment size pmtu_shift names (the sender's MTU); PSN zero (datagrams
 *   are not sequenced).  The Q_Key is carried as is: the receiving QP
 *   decides whether it matches.
 * - ACK: known syndrome, RNR timer code < 32, ACK flags in MRC_ACKF_ALL,
 *   the 6 reserved bytes zero.  The credit and datagram size fields are
 *   carried as is: any credit is a valid grant, and the requester never
 *   sends less than its path MTU's segments whatever the size says.
 *
 * Length and offset problems return BAD_LENGTH; a payload length that
 * disagrees with the datagram, the opcode or the segment size BAD_PAY_LEN.
 */
#include <metaroce/mrc_wire.h>

#include "mrc_engine_int.h"

#define MRC_QPN_MASK	0x00ffffffu
#define MRC_RNRT_MAX	31

/**
 * mrc_wire_hdr_len() - header length of a packet.
 * @opcode: enum mrc_opcode.
 * @flags: MRC_F_* (SEND and WRITE headers grow with IMM or INV).
 * @sack_words: an ACK's SACK word count.
 *
 * Return: bytes, or 0 for an unknown opcode or too many SACK words.
 */
u32 mrc_wire_hdr_len(u8 opcode, u8 flags, u8 sack_words)
{
	switch (opcode) {
	case MRC_OP_SEND:
		return MRC_SEND_LEN +
		       (flags & (MRC_F_IMM | MRC_F_INV) ? 4 : 0);
	case MRC_OP_WRITE:
		return MRC_WRITE_LEN + (flags & MRC_F_IMM ? 12 : 0);
	case MRC_OP_READ_REQ:
		return MRC_BTH_LEN + MRC_REQ_LEN;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		return MRC_BTH_LEN + MRC_ATOMIC_LEN;
	case MRC_OP_READ_RESP:
		return MRC_BTH_LEN + MRC_RRESP_LEN;
	case MRC_OP_UD_SEND:
		return MRC_BTH_LEN + MRC_UD_LEN;
	case MRC_OP_ATOMIC_RESP:
		return MRC_BTH_LEN + MRC_ARESP_LEN;
	case MRC_OP_ACK:
		if (sack_words > MRC_ACK_MAX_SACKW)
			return 0;
		return MRC_BTH_LEN + MRC_ACK_LEN + 8 * sack_words;
	default:
		return 0;
	}
}

static u8 mrc_wire_flags_allowed(u8 opcode)
{
	switch (opcode) {
	case MRC_OP_SEND:
		return MRC_F_ACKREQ | MRC_F_SOLICITED | MRC_F_RETX |
		       MRC_F_LAST | MRC_F_IMM | MRC_F_INV | MRC_F_ORDERED |
		       MRC_F_CREDIT;
	case MRC_OP_WRITE:
		return MRC_F_ACKREQ | MRC_F_SOLICITED | MRC_F_RETX |
		       MRC_F_LAST | MRC_F_IMM | MRC_F_ORDERED | MRC_F_CREDIT;
	case MRC_OP_READ_REQ:
		return MRC_F_ACKREQ | MRC_F_RETX | MRC_F_LAST | MRC_F_CREDIT;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		return MRC_F_ACKREQ | MRC_F_RETX | MRC_F_CREDIT;
	case MRC_OP_READ_RESP:
	case MRC_OP_ATOMIC_RESP:
		return MRC_F_RETX;
	case MRC_OP_UD_SEND:
		return MRC_F_SOLICITED | MRC_F_IMM;
	default:
		return 0;
	}
}

static int mrc_wire_check_flags(u8 opcode, u8 flags)
{
	if (flags & ~mrc_wire_flags_allowed(opcode))
		return -MRC_DROP_BAD_FIELD;
	if ((flags & MRC_F_IMM) && (flags & MRC_F_INV))
		return -MRC_DROP_BAD_FIELD;
	if (opcode == MRC_OP_WRITE && (flags & MRC_F_SOLICITED) &&
	    !(flags & MRC_F_IMM))
		return -MRC_DROP_BAD_FIELD;
	return 0;
}

/* segment rules of READ_RESP packets */
static int mrc_wire_check_seg(u32 offset, u32 pay_len, u32 msg_len, u8 shift)
{
	u32 seg = 1u << shift;
	u64 end = (u64)offset + pay_len;

	if (msg_len > MRC_MAX_MSG_LEN)
		return -MRC_DROP_BAD_LENGTH;
	if (offset & (seg - 1))
		return -MRC_DROP_BAD_LENGTH;
	if (end > msg_len)
		return -MRC_DROP_BAD_LENGTH;
	if (end < msg_len && pay_len != seg)
		return -MRC_DROP_BAD_PAY_LEN;
	return 0;
}

static int mrc_wire_parse_read_req(const u8 *e, struct mrc_pkt *p)
{
	u32 seg = 1u << p->pmtu_shift;

	p->req.va = mrc_get_be64(e + MRC_REQ_OFF_VA);
	p->req.rkey = mrc_get_be32(e + MRC_REQ_OFF_RKEY);
	p->req.msg_len = mrc_get_be32(e + MRC_REQ_OFF_MSGLEN);
	p->req.offset = mrc_get_be32(e + MRC_REQ_OFF_OFFSET);
	p->req.rmsn = mrc_get_be32(e + MRC_REQ_OFF_RMSN);
	p->req.imm = mrc_get_be32(e + MRC_REQ_OFF_IMM);

	if (mrc_get_be32(e + MRC_REQ_OFF_RSVD))
		return -MRC_DROP_BAD_FIELD;
	if (p->req.imm)		/* READ_REQ takes neither IMM nor INV */
		return -MRC_DROP_BAD_FIELD;
	if (p->pay_len)
		return -MRC_DROP_BAD_PAY_LEN;
	if (p->req.offset & (seg - 1))
		return -MRC_DROP_BAD_LENGTH;
	if ((u64)p->req.offset + p->req.msg_len > MRC_MAX_MSG_LEN)
		return -MRC_DROP_BAD_LENGTH;
	if (p->req.msg_len > (u32)MRC_READ_CHUNK << p->pmtu_shift)
		return -MRC_DROP_BAD_LENGTH;
	return 0;
}

/* SEND and WRITE: the data header after the common 20 bytes */
static int mrc_wire_parse_data(const u8 *b, struct mrc_pkt *p)
{
	if (!p->pay_len && !(p->flags & MRC_F_LAST))
		return -MRC_DROP_BAD_PAY_LEN;
	if (p->opcode == MRC_OP_SEND) {
		p->req.rmsn = mrc_get_be32(b + MRC_SEND_OFF_RMSN);
		p->req.offset = mrc_get_be32(b + MRC_SEND_OFF_OFFSET);
		if (p->flags & (MRC_F_IMM | MRC_F_INV))
			p->req.imm = mrc_get_be32(b + MRC_SEND_OFF_IMM);
		if ((u64)p->req.offset + p->pay_len > MRC_MAX_MSG_LEN)
			return -MRC_DROP_BAD_LENGTH;
		p->req.msg_len = p->req.offset + p->pay_len;
		return 0;
	}
	p->req.rkey = mrc_get_be32(b + MRC_WRITE_OFF_RKEY);
	p->req.va = mrc_get_be64(b + MRC_WRITE_OFF_VA);
	if (!(p->flags & MRC_F_IMM))
		return 0;
	p->req.rmsn = mrc_get_be32(b + MRC_WRITE_OFF_RMSN);
	p->req.msg_len = mrc_get_be32(b + MRC_WRITE_OFF_MSGLEN);
	p->req.imm = mrc_get_be32(b + MRC_WRITE_OFF_IMM);
	if (p->req.msg_len > MRC_MAX_MSG_LEN || p->pay_len > p->req.msg_len)
		return -MRC_DROP_BAD_LENGTH;
	return 0;
}

static int mrc_wire_parse_atomic(const u8 *e, struct mrc_pkt *p)
{
	p->atomic.va = mrc_get_be64(e + MRC_ATOMIC_OFF_VA);
	p->atomic.rkey = mrc_get_be32(e + MRC_ATOMIC_OFF_RKEY);
	p->atomic.swap_add = mrc_get_be64(e + MRC_ATOMIC_OFF_SWAPADD);
	p->atomic.compare = mrc_get_be64(e + MRC_ATOMIC_OFF_COMPARE);

	if (p->pay_len)
		return -MRC_DROP_BAD_PAY_LEN;
	if (mrc_get_be32(e + MRC_ATOMIC_OFF_RSVD))
		return -MRC_DROP_BAD_FIELD;
	if (p->atomic.va & 7)
		return -MRC_DROP_BAD_FIELD;
	if (p->opcode == MRC_OP_ATOMIC_FA && p->atomic.compare)
		return -MRC_DROP_BAD_FIELD;
	return 0;
}

static int mrc_wire_parse_rresp(const u8 *e, struct mrc_pkt *p)
{
	p->rresp.offset = mrc_get_be32(e + MRC_RRESP_OFF_OFFSET);
	p->rresp.msg_len = mrc_get_be32(e + MRC_RRESP_OFF_MSGLEN);

	if (p->pay_len > 1u << p->pmtu_shift)
		return -MRC_DROP_BAD_PAY_LEN;
	return mrc_wire_check_seg(p->rresp.offset, p->pay_len,
				  p->rresp.msg_len, p->pmtu_shift);
}

static int mrc_wire_parse_ud(const u8 *e, struct mrc_pkt *p)
{
	p->ud.qkey = mrc_get_be32(e + MRC_UD_OFF_QKEY);
	p->ud.imm = mrc_get_be32(e + MRC_UD_OFF_IMM);

	if (p->pay_len > 1u << p->pmtu_shift)
		return -MRC_DROP_BAD_PAY_LEN;
	if (p->psn)
		return -MRC_DROP_BAD_FIELD;
	if (!(p->flags & MRC_F_IMM) && p->ud.imm)
		return -MRC_DROP_BAD_FIELD;
	return 0;
}

static int mrc_wire_parse_ack(const u8 *e, struct mrc_pkt *p)
{
	u32 i;

	p->ack.syndrome = e[MRC_ACK_OFF_SYNDROME];
	p->ack.sack_words = e[MRC_ACK_OFF_SACKW];
	p->ack.rnr_timer = e[MRC_ACK_OFF_RNRT];
	p->ack.flags = e[MRC_ACK_OFF_FLAGS];
	p->ack.nak_psn = mrc_get_be32(e + MRC_ACK_OFF_NAKPSN);
	p->ack.ts_echo = mrc_get_be32(e + MRC_ACK_OFF_TSECHO);
	p->ack.delay = mrc_get_be32(e + MRC_ACK_OFF_DELAY);
	p->ack.ce_count = mrc_get_be16(e + MRC_ACK_OFF_CECNT);
	p->ack.entropy = mrc_get_be16(e + MRC_ACK_OFF_ENTROPY);
	p->ack.credit = mrc_get_be32(e + MRC_ACK_OFF_CREDIT);
	p->ack.max_dgram = mrc_get_be16(e + MRC_ACK_OFF_DGRAM);
	for (i = 0; i < p->ack.sack_words; i++)
		p->ack.sack[i] = mrc_get_be64(e + MRC_ACK_OFF_SACK + 8 * i);

	if (p->pay_len)
		return -MRC_DROP_BAD_PAY_LEN;
	if (p->ack.syndrome > MRC_SYN_REM_OP)
		return -MRC_DROP_BAD_FIELD;
	if (p->ack.rnr_timer > MRC_RNRT_MAX)
		return -MRC_DROP_BAD_FIELD;
	if (p->ack.flags & ~MRC_ACKF_ALL)
		return -MRC_DROP_BAD_FIELD;
	if (mrc_get_be16(e + MRC_ACK_OFF_RSVD) ||
	    mrc_get_be32(e + MRC_ACK_OFF_RSVD + 2))
		return -MRC_DROP_BAD_FIELD;
	return 0;
}

/**
 * mrc_wire_parse() - decode and validate one datagram's headers.
 * @buf: the UDP payload.
 * @len: its length.
 * @p: filled with the decoded header (undefined on error).
 *
 * Return: 0, or -(enum mrc_drop) naming the first problem found.
 */
int mrc_wire_parse(const void *buf, u32 len, struct mrc_pkt *p)
{
	const u8 *b = buf;
	const u8 *e = b + MRC_BTH_LEN;
	u8 sack_words = 0;
	bool data;
	u32 hdr_len;
	int err;

	memset(p, 0, sizeof(*p));
	if (len < MRC_DATA_COMMON_LEN)
		return -MRC_DROP_TRUNCATED;
	if (b[MRC_BTH_OFF_VER] >> 4 != MRC_WIRE_VERSION)
		return -MRC_DROP_BAD_VERSION;
	if (b[MRC_BTH_OFF_VER] & 0x0f)
		return -MRC_DROP_BAD_FIELD;

	p->opcode = b[MRC_BTH_OFF_OPCODE];
	p->flags = b[MRC_BTH_OFF_FLAGS];
	if (!mrc_wire_hdr_len(p->opcode, 0, 0))
		return -MRC_DROP_BAD_OPCODE;
	data = p->opcode == MRC_OP_SEND || p->opcode == MRC_OP_WRITE;
	if (!data && len < MRC_BTH_LEN)
		return -MRC_DROP_TRUNCATED;
	/* the header length depends on the flags: check them first */
	err = mrc_wire_check_flags(p->opcode, p->flags);
	if (err)
		return err;
	if (p->opcode == MRC_OP_ACK) {
		if (len < MRC_BTH_LEN + MRC_ACK_OFF_SACKW + 1)
			return -MRC_DROP_TRUNCATED;
		sack_words = e[MRC_ACK_OFF_SACKW];
		if (sack_words > MRC_ACK_MAX_SACKW)
			return -MRC_DROP_BAD_SACK;
	}
	hdr_len = mrc_wire_hdr_len(p->opcode, p->flags, sack_words);
	if (b[MRC_BTH_OFF_HDRW] * 4u != hdr_len)
		return -MRC_DROP_BAD_HDR_LEN;
	if (hdr_len > len)
		return -MRC_DROP_TRUNCATED;

	p->hdr_len = hdr_len;
	p->dqpn = mrc_get_be32(b + MRC_BTH_OFF_DQPN);
	p->sqpn = mrc_get_be32(b + MRC_BTH_OFF_SQPN);
	p->psn = mrc_get_be32(b + MRC_BTH_OFF_PSN);
	p->tsval = mrc_get_be32(b + MRC_BTH_OFF_TSVAL);
	if ((p->dqpn | p->sqpn) & ~MRC_QPN_MASK)
		return -MRC_DROP_BAD_FIELD;
	if (data) {
		/* a UDP datagram is under 64 KiB, so is its payload */
		if (len - hdr_len > MRC_U16_MAX)
			return -MRC_DROP_BAD_PAY_LEN;
		p->pay_len = len - hdr_len;
		return mrc_wire_parse_data(b, p);
	}
	p->pay_len = mrc_get_be16(b + MRC_BTH_OFF_PAYLEN);
	p->pmtu_shift = b[MRC_BTH_OFF_PMTU];

	if (p->pay_len != len - hdr_len)
		return -MRC_DROP_BAD_PAY_LEN;
	if (b[MRC_BTH_OFF_RSVD])
		return -MRC_DROP_BAD_FIELD;
	/* an ACK may leave its segment advertisement out; datagrams are IB-sized */
	if ((p->pmtu_shift || p->opcode != MRC_OP_ACK) &&
	    (p->pmtu_shift < MRC_PMTU_MIN_SHIFT ||
	     p->pmtu_shift > (p->opcode == MRC_OP_UD_SEND ?
			      MRC_PMTU_IB_SHIFT : MRC_PMTU_MAX_SHIFT)))
		return -MRC_DROP_BAD_PMTU;

	switch (p->opcode) {
	case MRC_OP_READ_REQ:
		return mrc_wire_parse_read_req(e, p);
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		return mrc_wire_parse_atomic(e, p);
	case MRC_OP_READ_RESP:
		return mrc_wire_parse_rresp(e, p);
	case MRC_OP_UD_SEND:
		return mrc_wire_parse_ud(e, p);
	case MRC_OP_ATOMIC_RESP:
		p->aresp.orig = mrc_get_be64(e + MRC_ARESP_OFF_ORIG);
		return p->pay_len ? -MRC_DROP_BAD_PAY_LEN : 0;
	default:
		return mrc_wire_parse_ack(e, p);
	}
}

/**
 * mrc_wire_build() - write the headers for @p.
 * @buf: room for mrc_wire_hdr_len() bytes (at most 88).
 * @p: the header; @p->hdr_len is ignored (it follows from the opcode and
 *	flags).
 *
 * Reserved fields are written as zero, so are the imm field of a packet
 * without IMM or INV (UD_SEND: without IMM) and the compare field of
 * FETCH_ADD.  A SEND or WRITE header leaves out the fields its flags do
 * not call for, and the payload length (the datagram gives it).  Nothing
 * else is checked: the caller builds valid headers.
 *
 * Return: header bytes written, 0 for an unknown opcode or too many SACK
 * words (nothing written).
 */
u32 mrc_wire_build(void *buf, const struct mrc_pkt *p)
{
	u8 sack_words = p->opcode == MRC_OP_ACK ? p->ack.sack_words : 0;
	u32 hdr_len = mrc_wire_hdr_len(p->opcode, p->flags, sack_words);
	u8 *b = buf;
	u8 *e = b + MRC_BTH_LEN;
	u32 i;

	if (!hdr_len)
		return 0;
	memset(b, 0, hdr_len);
	b[MRC_BTH_OFF_VER] = MRC_WIRE_VERSION << 4;
	b[MRC_BTH_OFF_OPCODE] = p->opcode;
	b[MRC_BTH_OFF_FLAGS] = p->flags;
	b[MRC_BTH_OFF_HDRW] = hdr_len / 4;
	mrc_put_be32(b + MRC_BTH_OFF_DQPN, p->dqpn);
	mrc_put_be32(b + MRC_BTH_OFF_SQPN, p->sqpn);
	mrc_put_be32(b + MRC_BTH_OFF_PSN, p->psn);
	mrc_put_be32(b + MRC_BTH_OFF_TSVAL, p->tsval);

	switch (p->opcode) {
	case MRC_OP_SEND:
		mrc_put_be32(b + MRC_SEND_OFF_RMSN, p->req.rmsn);
		mrc_put_be32(b + MRC_SEND_OFF_OFFSET, p->req.offset);
		if (p->flags & (MRC_F_IMM | MRC_F_INV))
			mrc_put_be32(b + MRC_SEND_OFF_IMM, p->req.imm);
		return hdr_len;
	case MRC_OP_WRITE:
		mrc_put_be32(b + MRC_WRITE_OFF_RKEY, p->req.rkey);
		mrc_put_be64(b + MRC_WRITE_OFF_VA, p->req.va);
		if (p->flags & MRC_F_IMM) {
			mrc_put_be32(b + MRC_WRITE_OFF_RMSN, p->req.rmsn);
			mrc_put_be32(b + MRC_WRITE_OFF_MSGLEN, p->req.msg_len);
			mrc_put_be32(b + MRC_WRITE_OFF_IMM, p->req.imm);
		}
		return hdr_len;
	default:
		break;
	}
	mrc_put_be16(b + MRC_BTH_OFF_PAYLEN, p->pay_len);
	b[MRC_BTH_OFF_PMTU] = p->pmtu_shift;

	switch (p->opcode) {
	case MRC_OP_READ_REQ:
		mrc_put_be64(e + MRC_REQ_OFF_VA, p->req.va);
		mrc_put_be32(e + MRC_REQ_OFF_RKEY, p->req.rkey);
		mrc_put_be32(e + MRC_REQ_OFF_MSGLEN, p->req.msg_len);
		mrc_put_be32(e + MRC_REQ_OFF_OFFSET, p->req.offset);
		mrc_put_be32(e + MRC_REQ_OFF_RMSN, p->req.rmsn);
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		mrc_put_be64(e + MRC_ATOMIC_OFF_VA, p->atomic.va);
		mrc_put_be32(e + MRC_ATOMIC_OFF_RKEY, p->atomic.rkey);
		mrc_put_be64(e + MRC_ATOMIC_OFF_SWAPADD, p->atomic.swap_add);
		if (p->opcode == MRC_OP_ATOMIC_CS)
			mrc_put_be64(e + MRC_ATOMIC_OFF_COMPARE,
				     p->atomic.compare);
		break;
	case MRC_OP_READ_RESP:
		mrc_put_be32(e + MRC_RRESP_OFF_OFFSET, p->rresp.offset);
		mrc_put_be32(e + MRC_RRESP_OFF_MSGLEN, p->rresp.msg_len);
		break;
	case MRC_OP_ATOMIC_RESP:
		mrc_put_be64(e + MRC_ARESP_OFF_ORIG, p->aresp.orig);
		break;
	case MRC_OP_UD_SEND:
		mrc_put_be32(e + MRC_UD_OFF_QKEY, p->ud.qkey);
		if (p->flags & MRC_F_IMM)
			mrc_put_be32(e + MRC_UD_OFF_IMM, p->ud.imm);
		break;
	default:
		e[MRC_ACK_OFF_SYNDROME] = p->ack.syndrome;
		e[MRC_ACK_OFF_SACKW] = sack_words;
		e[MRC_ACK_OFF_RNRT] = p->ack.rnr_timer;
		e[MRC_ACK_OFF_FLAGS] = p->ack.flags;
		mrc_put_be32(e + MRC_ACK_OFF_NAKPSN, p->ack.nak_psn);
		mrc_put_be32(e + MRC_ACK_OFF_TSECHO, p->ack.ts_echo);
		mrc_put_be32(e + MRC_ACK_OFF_DELAY, p->ack.delay);
		mrc_put_be16(e + MRC_ACK_OFF_CECNT, p->ack.ce_count);
		mrc_put_be16(e + MRC_ACK_OFF_ENTROPY, p->ack.entropy);
		mrc_put_be32(e + MRC_ACK_OFF_CREDIT, p->ack.credit);
		mrc_put_be16(e + MRC_ACK_OFF_DGRAM, p->ack.max_dgram);
		for (i = 0; i < sack_words; i++)
			mrc_put_be64(e + MRC_ACK_OFF_SACK + 8 * i,
				     p->ack.sack[i]);
		break;
	}
	return hdr_len;
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_wire_test.c"
#endif

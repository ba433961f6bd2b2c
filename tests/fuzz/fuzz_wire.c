// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: mrc_wire_parse() on arbitrary datagrams.
 *
 * Every accepted packet must satisfy the rules of metaroce-protocol.rst
 * (checked here independently of the parser), mrc_wire_build() of the
 * parsed header must give back the header bytes, and header plus payload
 * must be the whole datagram.  No shorter prefix of an accepted header
 * may parse.  Each input is checked as it is, and (without its first
 * byte) once more with its length fields fixed up to agree with the rest.
 * The parser always reads from an exact-size copy, so that
 * AddressSanitizer sees any read past the datagram.
 */
#include <stdlib.h>

#include <metaroce/mrc_wire.h>

#include "fuzz.h"

#define QPN_MASK	0x00ffffffu

static u8 flags_allowed(u8 opcode)
{
	switch (opcode) {
	case MRC_OP_SEND:
		return MRC_F_ALL;
	case MRC_OP_WRITE:
		return MRC_F_ALL & ~MRC_F_INV;
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

static void check_data(const struct mrc_pkt *p)
{
	FZ_CHECK(p->pmtu_shift == 0);
	FZ_CHECK(p->pay_len || (p->flags & MRC_F_LAST));
	if (p->opcode == MRC_OP_SEND) {
		FZ_CHECK((u64)p->req.offset + p->pay_len <= MRC_MAX_MSG_LEN);
		FZ_CHECK(p->req.msg_len == p->req.offset + p->pay_len);
		FZ_CHECK(p->hdr_len == ((p->flags & (MRC_F_IMM | MRC_F_INV)) ?
					32 : 28));
		return;
	}
	FZ_CHECK(!(p->flags & MRC_F_SOLICITED) || (p->flags & MRC_F_IMM));
	FZ_CHECK(p->hdr_len == ((p->flags & MRC_F_IMM) ? 44 : 32));
	if (p->flags & MRC_F_IMM)
		FZ_CHECK(p->req.msg_len <= MRC_MAX_MSG_LEN &&
			 p->pay_len <= p->req.msg_len);
}

static void check_ext(const struct mrc_pkt *p)
{
	u32 seg = 1u << p->pmtu_shift;
	u64 end;

	switch (p->opcode) {
	case MRC_OP_READ_REQ:
		FZ_CHECK(!p->pay_len && !p->req.imm);
		FZ_CHECK(!(p->req.offset & (seg - 1)));
		FZ_CHECK((u64)p->req.offset + p->req.msg_len <= MRC_MAX_MSG_LEN);
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		FZ_CHECK(!p->pay_len && !(p->atomic.va & 7));
		FZ_CHECK(p->opcode == MRC_OP_ATOMIC_CS || !p->atomic.compare);
		break;
	case MRC_OP_READ_RESP:
		end = (u64)p->rresp.offset + p->pay_len;
		FZ_CHECK(p->pay_len <= seg && !(p->rresp.offset & (seg - 1)));
		FZ_CHECK(p->rresp.msg_len <= MRC_MAX_MSG_LEN);
		FZ_CHECK(end <= p->rresp.msg_len);
		FZ_CHECK(end == p->rresp.msg_len || p->pay_len == seg);
		break;
	case MRC_OP_UD_SEND:
		FZ_CHECK(p->pmtu_shift <= MRC_PMTU_IB_SHIFT);
		FZ_CHECK(p->pay_len <= seg && !p->psn);
		FZ_CHECK((p->flags & MRC_F_IMM) || !p->ud.imm);
		break;
	case MRC_OP_ATOMIC_RESP:
		FZ_CHECK(!p->pay_len);
		break;
	case MRC_OP_ACK:
		FZ_CHECK(!p->pay_len && p->ack.sack_words <= MRC_ACK_MAX_SACKW);
		FZ_CHECK(p->ack.syndrome <= MRC_SYN_REM_OP);
		FZ_CHECK(p->ack.rnr_timer < 32);
		FZ_CHECK(!(p->ack.flags & ~MRC_ACKF_ALL));
		FZ_CHECK(p->hdr_len == MRC_BTH_LEN + MRC_ACK_LEN +
			 8 * p->ack.sack_words);
		break;
	default:
		FZ_CHECK(0);
	}
}

/* what the protocol says of every packet it lets through */
static void check_rules(const struct mrc_pkt *p, u32 len)
{
	bool data = p->opcode == MRC_OP_SEND || p->opcode == MRC_OP_WRITE;

	FZ_CHECK(!(p->flags & ~flags_allowed(p->opcode)));
	FZ_CHECK(!((p->flags & MRC_F_IMM) && (p->flags & MRC_F_INV)));
	FZ_CHECK(!((p->dqpn | p->sqpn) & ~QPN_MASK));
	FZ_CHECK(p->hdr_len % 4 == 0 && p->hdr_len <= MRC_HDR_MAX_LEN);
	FZ_CHECK((u32)p->hdr_len + p->pay_len == len);
	if (data) {
		check_data(p);
		return;
	}
	FZ_CHECK(p->hdr_len >= MRC_BTH_LEN);
	if (p->opcode == MRC_OP_ACK)
		FZ_CHECK(!p->pmtu_shift ||
			 (p->pmtu_shift >= MRC_PMTU_MIN_SHIFT &&
			  p->pmtu_shift <= MRC_PMTU_MAX_SHIFT));
	else
		FZ_CHECK(p->pmtu_shift >= MRC_PMTU_MIN_SHIFT &&
			 p->pmtu_shift <= MRC_PMTU_MAX_SHIFT);
	check_ext(p);
}

/* parse @len bytes from a buffer of exactly that size */
static int parse_exact(const u8 *data, u32 len, struct mrc_pkt *p)
{
	u8 *copy = malloc(len ? len : 1);
	int err;

	FZ_CHECK(copy);
	memcpy(copy, data, len);
	err = mrc_wire_parse(copy, len, p);
	free(copy);
	return err;
}

/* every check of one datagram */
static void check_one(const u8 *data, u32 len)
{
	u8 hdr[MRC_HDR_MAX_LEN + 8];
	struct mrc_pkt p, q;
	u32 i, n;
	int err;

	err = parse_exact(data, len, &p);
	if (err) {
		/* one of the wire-level drop reasons */
		FZ_CHECK(err <= -MRC_DROP_TRUNCATED && err >= -MRC_DROP_BAD_SACK);
		return;
	}
	check_rules(&p, len);
	FZ_CHECK(p.hdr_len == mrc_wire_hdr_len(p.opcode, p.flags,
					       p.opcode == MRC_OP_ACK ?
					       p.ack.sack_words : 0));
	FZ_CHECK(data[3] * 4u == p.hdr_len);

	/* round trip: the parsed header builds back into the same bytes */
	memset(hdr, 0xa5, sizeof(hdr));
	n = mrc_wire_build(hdr, &p);
	FZ_CHECK(n == p.hdr_len);
	FZ_CHECK(!memcmp(hdr, data, n));
	for (i = n; i < sizeof(hdr); i++)
		FZ_CHECK(hdr[i] == 0xa5);

	/* every truncation inside the header is dropped */
	for (i = 0; i < p.hdr_len; i++)
		FZ_CHECK(parse_exact(data, i, &q) != 0);
}

/*
 * The same datagram with its length fields made to agree with the rest
 * (as @mode asks): the header words with the opcode, flags and SACK word
 * count, the payload length with the datagram.  A mutation of one field
 * then gets past the length checks to the checks behind them.
 */
static void check_fixed(u8 mode, const u8 *data, u32 len)
{
	u8 *b = malloc(len ? len : 1);
	u32 hdr;

	FZ_CHECK(b);
	memcpy(b, data, len);
	if (len > MRC_BTH_OFF_HDRW && (mode & 1)) {
		hdr = mrc_wire_hdr_len(b[MRC_BTH_OFF_OPCODE],
				       b[MRC_BTH_OFF_FLAGS],
				       len > MRC_BTH_LEN + MRC_ACK_OFF_SACKW ?
				       b[MRC_BTH_LEN + MRC_ACK_OFF_SACKW] : 0);
		b[MRC_BTH_OFF_HDRW] = hdr / 4;
	}
	if (len > MRC_BTH_OFF_PAYLEN + 1 && (mode & 2)) {
		hdr = b[MRC_BTH_OFF_HDRW] * 4u;
		b[MRC_BTH_OFF_PAYLEN] = (len - hdr) >> 8;
		b[MRC_BTH_OFF_PAYLEN + 1] = len - hdr;
	}
	check_one(b, len);
	free(b);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	/* a UDP payload is under 64 KiB; libFuzzer's inputs are smaller */
	if (size > 0xffff)
		return 0;
	check_one(data, (u32)size);
	if (size)
		check_fixed(data[0], data + 1, (u32)size - 1);
	return 0;
}

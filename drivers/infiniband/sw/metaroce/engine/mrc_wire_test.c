// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suite for the wire format; included at the end of mrc_wire.c.
 *
 * Every case starts from a valid packet of one opcode, applies up to
 * four mutations (a struct field before building, a raw byte after, or
 * the datagram length) and expects parse to return 0 with an exact round
 * trip, or one specific drop reason.
 */
#include <kunit/test.h>

#define MRC_WT_BUF	(MRC_BTH_LEN + MRC_ACK_LEN + 8 * MRC_ACK_MAX_SACKW + 70000)

enum mrc_wt_kind {
	MW_END = 0,
	MW_FLAGS,	/* p.flags = val */
	MW_DQPN,
	MW_SQPN,
	MW_PSN,
	MW_PMTU,
	MW_PAY,		/* p.pay_len = val: datagram length follows */
	MW_MSGLEN,	/* req.msg_len or rresp.msg_len */
	MW_OFFSET,	/* req.offset or rresp.offset */
	MW_IMM,		/* req.imm or ud.imm */
	MW_QKEY,	/* ud.qkey */
	MW_VA,		/* atomic.va */
	MW_CMP,		/* atomic.compare */
	MW_SYN,
	MW_ACKF,
	MW_RNRT,
	MW_SACKW,	/* ack.sack_words (valid counts only: build refuses > 4) */
	MW_DGRAM,	/* ack.max_dgram */
	MW_BYTE,	/* after build: buf[off] = val */
	MW_LEN,		/* after build: datagram length = val */
	MW_LENADD,	/* after build: datagram length += (s32)val */
};

struct mrc_wt_mut {
	u8 kind;
	u16 off;
	u64 val;
};

struct mrc_wt_case {
	const char *name;
	u8 op;
	struct mrc_wt_mut m[4];
	int err;
};

/* a valid packet of each opcode */
static void mrc_wt_base(struct mrc_pkt *p, u8 op)
{
	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->dqpn = 0x123456;
	p->sqpn = 0xabcdef;
	p->psn = 0xfffffffe;
	p->tsval = 0x89abcdef;
	p->pmtu_shift = 12;
	switch (op) {
	case MRC_OP_SEND:	/* last packet, with immediate */
		p->flags = MRC_F_LAST | MRC_F_IMM | MRC_F_SOLICITED |
			   MRC_F_ACKREQ;
		p->pmtu_shift = 0;
		p->pay_len = 1808;
		p->req.msg_len = 10000;
		p->req.offset = 8192;
		p->req.rmsn = 7;
		p->req.imm = 0xcafef00d;
		break;
	case MRC_OP_WRITE:	/* a middle packet */
		p->pmtu_shift = 0;
		p->pay_len = 1440;
		p->req.va = 0x1122334455667788ull;
		p->req.rkey = 0xdeadbeef;
		p->req.msg_len = 5000;
		p->req.offset = 1440;
		p->req.rmsn = 0xffffffff;
		break;
	case MRC_OP_READ_REQ:
		p->flags = MRC_F_ACKREQ;
		p->req.va = 0x7f0000001000ull;
		p->req.rkey = 0x1234;
		p->req.msg_len = 65536;
		p->req.offset = 4096;
		p->req.rmsn = 3;
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		p->flags = MRC_F_RETX;
		p->atomic.va = 0x10000008ull;
		p->atomic.rkey = 0x77;
		p->atomic.swap_add = 0x0102030405060708ull;
		if (op == MRC_OP_ATOMIC_CS)
			p->atomic.compare = 0xfffffffffffffff0ull;
		break;
	case MRC_OP_READ_RESP:	/* final short segment */
		p->flags = MRC_F_RETX;
		p->pmtu_shift = 9;
		p->pay_len = 464;
		p->rresp.offset = 1536;
		p->rresp.msg_len = 2000;
		break;
	case MRC_OP_ATOMIC_RESP:
		p->aresp.orig = 0x8000000000000001ull;
		break;
	case MRC_OP_UD_SEND:	/* a MAD-sized datagram to QP1, with immediate */
		p->flags = MRC_F_IMM | MRC_F_SOLICITED;
		p->dqpn = 1;
		p->psn = 0;
		p->pmtu_shift = 10;
		p->pay_len = 256;
		p->ud.qkey = 0x80010000;
		p->ud.imm = 0x01020304;
		break;
	case MRC_OP_ACK:
		p->pmtu_shift = 0;
		p->ack.syndrome = MRC_SYN_ACK;
		p->ack.sack_words = 2;
		p->ack.flags = MRC_ACKF_CE | MRC_ACKF_DUP;
		p->ack.nak_psn = 0;
		p->ack.ts_echo = 0xfedcba98;
		p->ack.delay = 17;
		p->ack.ce_count = 0xffff;
		p->ack.entropy = 49152;
		p->ack.max_dgram = 1472;
		p->ack.sack[0] = 0x8000000000000001ull;
		p->ack.sack[1] = 0x5;
		break;
	}
}

static void mrc_wt_apply(struct mrc_pkt *p, const struct mrc_wt_mut *m)
{
	bool rresp = p->opcode == MRC_OP_READ_RESP;
	bool ud = p->opcode == MRC_OP_UD_SEND;

	switch (m->kind) {
	case MW_FLAGS:
		p->flags = m->val;
		break;
	case MW_DQPN:
		p->dqpn = m->val;
		break;
	case MW_SQPN:
		p->sqpn = m->val;
		break;
	case MW_PSN:
		p->psn = m->val;
		break;
	case MW_PMTU:
		p->pmtu_shift = m->val;
		break;
	case MW_PAY:
		p->pay_len = m->val;
		break;
	case MW_MSGLEN:
		if (rresp)
			p->rresp.msg_len = m->val;
		else
			p->req.msg_len = m->val;
		break;
	case MW_OFFSET:
		if (rresp)
			p->rresp.offset = m->val;
		else
			p->req.offset = m->val;
		break;
	case MW_IMM:
		if (ud)
			p->ud.imm = m->val;
		else
			p->req.imm = m->val;
		break;
	case MW_QKEY:
		p->ud.qkey = m->val;
		break;
	case MW_VA:
		p->atomic.va = m->val;
		break;
	case MW_CMP:
		p->atomic.compare = m->val;
		break;
	case MW_SYN:
		p->ack.syndrome = m->val;
		break;
	case MW_ACKF:
		p->ack.flags = m->val;
		break;
	case MW_RNRT:
		p->ack.rnr_timer = m->val;
		break;
	case MW_SACKW:
		p->ack.sack_words = m->val;
		break;
	case MW_DGRAM:
		p->ack.max_dgram = m->val;
		break;
	}
}

/* build @c's packet into @buf; Return: datagram length */
static u32 mrc_wt_make(struct kunit *test, const struct mrc_wt_case *c,
		       struct mrc_pkt *p, u8 *buf)
{
	u32 hl, len, i;

	mrc_wt_base(p, c->op);
	for (i = 0; i < ARRAY_SIZE(c->m); i++)
		mrc_wt_apply(p, &c->m[i]);
	/* what build writes as zero */
	if (p->opcode <= MRC_OP_READ_REQ && !(p->flags & (MRC_F_IMM | MRC_F_INV)))
		p->req.imm = 0;
	if (p->opcode == MRC_OP_UD_SEND && !(p->flags & MRC_F_IMM))
		p->ud.imm = 0;
	/* what the data header does not carry, as parse fills it in */
	if (p->opcode == MRC_OP_SEND) {
		p->pmtu_shift = 0;
		p->req.va = 0;
		p->req.rkey = 0;
		p->req.msg_len = p->req.offset + p->pay_len;
	}
	if (p->opcode == MRC_OP_WRITE) {
		p->pmtu_shift = 0;
		p->req.offset = 0;
		if (!(p->flags & MRC_F_IMM)) {
			p->req.rmsn = 0;
			p->req.msg_len = 0;
		}
	}
	hl = mrc_wire_build(buf, p);
	KUNIT_ASSERT_NE(test, hl, 0);
	i = p->opcode == MRC_OP_ACK ? p->ack.sack_words : 0;
	KUNIT_ASSERT_EQ(test, hl, mrc_wire_hdr_len(p->opcode, p->flags, i));
	p->hdr_len = hl;
	for (i = 0; i < p->pay_len; i++)
		buf[hl + i] = (u8)(i * 7 + 1);
	len = hl + p->pay_len;
	for (i = 0; i < ARRAY_SIZE(c->m); i++) {
		const struct mrc_wt_mut *m = &c->m[i];

		if (m->kind == MW_BYTE)
			buf[m->off] = m->val;
		else if (m->kind == MW_LEN)
			len = m->val;
		else if (m->kind == MW_LENADD)
			len += (s32)m->val;
	}
	return len;
}

static void mrc_wt_expect_same(struct kunit *test, const struct mrc_pkt *a,
			       const struct mrc_pkt *b)
{
	u32 i;

	KUNIT_EXPECT_EQ(test, a->opcode, b->opcode);
	KUNIT_EXPECT_EQ(test, a->flags, b->flags);
	KUNIT_EXPECT_EQ(test, a->pmtu_shift, b->pmtu_shift);
	KUNIT_EXPECT_EQ(test, a->hdr_len, b->hdr_len);
	KUNIT_EXPECT_EQ(test, a->pay_len, b->pay_len);
	KUNIT_EXPECT_EQ(test, a->dqpn, b->dqpn);
	KUNIT_EXPECT_EQ(test, a->sqpn, b->sqpn);
	KUNIT_EXPECT_EQ(test, a->psn, b->psn);
	KUNIT_EXPECT_EQ(test, a->tsval, b->tsval);
	switch (a->opcode) {
	case MRC_OP_SEND:
	case MRC_OP_WRITE:
	case MRC_OP_READ_REQ:
		KUNIT_EXPECT_EQ(test, a->req.va, b->req.va);
		KUNIT_EXPECT_EQ(test, a->req.rkey, b->req.rkey);
		KUNIT_EXPECT_EQ(test, a->req.msg_len, b->req.msg_len);
		KUNIT_EXPECT_EQ(test, a->req.offset, b->req.offset);
		KUNIT_EXPECT_EQ(test, a->req.rmsn, b->req.rmsn);
		KUNIT_EXPECT_EQ(test, a->req.imm, b->req.imm);
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		KUNIT_EXPECT_EQ(test, a->atomic.va, b->atomic.va);
		KUNIT_EXPECT_EQ(test, a->atomic.rkey, b->atomic.rkey);
		KUNIT_EXPECT_EQ(test, a->atomic.swap_add, b->atomic.swap_add);
		KUNIT_EXPECT_EQ(test, a->atomic.compare, b->atomic.compare);
		break;
	case MRC_OP_READ_RESP:
		KUNIT_EXPECT_EQ(test, a->rresp.offset, b->rresp.offset);
		KUNIT_EXPECT_EQ(test, a->rresp.msg_len, b->rresp.msg_len);
		break;
	case MRC_OP_ATOMIC_RESP:
		KUNIT_EXPECT_EQ(test, a->aresp.orig, b->aresp.orig);
		break;
	case MRC_OP_UD_SEND:
		KUNIT_EXPECT_EQ(test, a->ud.qkey, b->ud.qkey);
		KUNIT_EXPECT_EQ(test, a->ud.imm, b->ud.imm);
		break;
	case MRC_OP_ACK:
		KUNIT_EXPECT_EQ(test, a->ack.syndrome, b->ack.syndrome);
		KUNIT_EXPECT_EQ(test, a->ack.sack_words, b->ack.sack_words);
		KUNIT_EXPECT_EQ(test, a->ack.rnr_timer, b->ack.rnr_timer);
		KUNIT_EXPECT_EQ(test, a->ack.flags, b->ack.flags);
		KUNIT_EXPECT_EQ(test, a->ack.nak_psn, b->ack.nak_psn);
		KUNIT_EXPECT_EQ(test, a->ack.ts_echo, b->ack.ts_echo);
		KUNIT_EXPECT_EQ(test, a->ack.delay, b->ack.delay);
		KUNIT_EXPECT_EQ(test, a->ack.ce_count, b->ack.ce_count);
		KUNIT_EXPECT_EQ(test, a->ack.entropy, b->ack.entropy);
		KUNIT_EXPECT_EQ(test, a->ack.credit, b->ack.credit);
		KUNIT_EXPECT_EQ(test, a->ack.max_dgram, b->ack.max_dgram);
		for (i = 0; i < a->ack.sack_words; i++)
			KUNIT_EXPECT_EQ(test, a->ack.sack[i], b->ack.sack[i]);
		break;
	}
}

#define M(k, v)		{ .kind = (k), .val = (v) }
#define MB(o, v)	{ .kind = MW_BYTE, .off = (o), .val = (v) }

/* ---- valid packets: exact round trips ---- */

static const struct mrc_wt_case mrc_wt_good[] = {
	{ "send_last_imm", MRC_OP_SEND },
	{ "write_middle", MRC_OP_WRITE },
	{ "read_req", MRC_OP_READ_REQ },
	{ "atomic_cs", MRC_OP_ATOMIC_CS },
	{ "atomic_fa", MRC_OP_ATOMIC_FA },
	{ "read_resp_final", MRC_OP_READ_RESP },
	{ "atomic_resp", MRC_OP_ATOMIC_RESP },
	{ "ack_2_sack_words", MRC_OP_ACK },
	{ "ack_0_sack_words", MRC_OP_ACK, { M(MW_SACKW, 0) } },
	{ "ack_1_sack_word", MRC_OP_ACK, { M(MW_SACKW, 1) } },
	{ "ack_4_sack_words", MRC_OP_ACK, { M(MW_SACKW, 4) } },
	{ "nak_rnr", MRC_OP_ACK, { M(MW_SYN, MRC_SYN_RNR), M(MW_RNRT, 31) } },
	{ "nak_rem_op", MRC_OP_ACK, { M(MW_SYN, MRC_SYN_REM_OP) } },
	{ "send_inv", MRC_OP_SEND,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_INV | MRC_F_SOLICITED) } },
	{ "send_zero_length", MRC_OP_SEND, { M(MW_OFFSET, 0), M(MW_PAY, 0) } },
	{ "send_first_of_many", MRC_OP_SEND,
	  { M(MW_FLAGS, MRC_F_ACKREQ), M(MW_OFFSET, 0), M(MW_PAY, 4096) } },
	{ "send_middle_no_imm", MRC_OP_SEND,
	  { M(MW_FLAGS, 0), M(MW_OFFSET, 3 * 1444), M(MW_PAY, 1444) } },
	{ "send_ordered_retx", MRC_OP_SEND,
	  { M(MW_FLAGS, MRC_F_ORDERED | MRC_F_RETX | MRC_F_LAST) } },
	{ "send_credit", MRC_OP_SEND,
	  { M(MW_FLAGS, MRC_F_CREDIT | MRC_F_LAST) } },
	{ "write_credit", MRC_OP_WRITE, { M(MW_FLAGS, MRC_F_CREDIT) } },
	{ "read_credit", MRC_OP_READ_REQ,
	  { M(MW_FLAGS, MRC_F_CREDIT | MRC_F_ACKREQ) } },
	{ "atomic_credit", MRC_OP_ATOMIC_FA,
	  { M(MW_FLAGS, MRC_F_CREDIT | MRC_F_ACKREQ) } },
	{ "send_end_at_max", MRC_OP_SEND,
	  { M(MW_OFFSET, MRC_MAX_MSG_LEN - 1808) } },
	{ "send_pay_65000", MRC_OP_SEND, { M(MW_PAY, 65000) } },
	{ "write_last_imm_solicited", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM | MRC_F_SOLICITED),
	    M(MW_PAY, 904) } },
	{ "write_imm_middle", MRC_OP_WRITE, { M(MW_FLAGS, MRC_F_IMM) } },
	{ "write_imm_max_length", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM),
	    M(MW_MSGLEN, MRC_MAX_MSG_LEN) } },
	{ "write_imm_zero_length", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM), M(MW_MSGLEN, 0),
	    M(MW_PAY, 0) } },
	{ "write_zero_length", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_ACKREQ), M(MW_PAY, 0) } },
	{ "write_8192", MRC_OP_WRITE, { M(MW_PAY, 8192) } },
	{ "write_odd_segment", MRC_OP_WRITE, { M(MW_PAY, 1437) } },
	{ "ack_seg_advert_13", MRC_OP_ACK, { M(MW_PMTU, 13) } },
	{ "ack_seg_advert_8", MRC_OP_ACK, { M(MW_PMTU, 8) } },
	{ "ack_dgram_unsaid", MRC_OP_ACK, { M(MW_DGRAM, 0) } },
	{ "ack_dgram_max", MRC_OP_ACK, { M(MW_DGRAM, 0xffff) } },
	{ "read_req_to_max", MRC_OP_READ_REQ,
	  { M(MW_OFFSET, MRC_MAX_MSG_LEN - 4096), M(MW_MSGLEN, 4096) } },
	{ "read_req_zero_length", MRC_OP_READ_REQ,
	  { M(MW_OFFSET, 0), M(MW_MSGLEN, 0) } },
	{ "read_req_last", MRC_OP_READ_REQ,
	  { M(MW_FLAGS, MRC_F_ACKREQ | MRC_F_LAST) } },
	{ "read_req_chunk_max", MRC_OP_READ_REQ,
	  { M(MW_MSGLEN, MRC_READ_CHUNK << 12) } },
	{ "read_req_chunk_max_jumbo", MRC_OP_READ_REQ,
	  { M(MW_PMTU, 13), M(MW_OFFSET, 8192),
	    M(MW_MSGLEN, MRC_READ_CHUNK << 13) } },
	{ "read_resp_middle", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 512), M(MW_PAY, 512) } },
	{ "read_resp_zero_length", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 0), M(MW_MSGLEN, 0), M(MW_PAY, 0) } },
	{ "qpn_24_bits_max", MRC_OP_ATOMIC_RESP,
	  { M(MW_DQPN, 0xffffff), M(MW_SQPN, 0xffffff), M(MW_PSN, 0) } },
	{ "atomic_va_aligned_top", MRC_OP_ATOMIC_CS,
	  { M(MW_VA, 0xfffffffffffffff8ull) } },
	{ "ud_send_imm_solicited", MRC_OP_UD_SEND },
	{ "ud_send_plain", MRC_OP_UD_SEND, { M(MW_FLAGS, 0) } },
	{ "ud_send_solicited", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_SOLICITED) } },
	{ "ud_send_zero_length", MRC_OP_UD_SEND, { M(MW_PAY, 0) } },
	{ "ud_send_full_4096", MRC_OP_UD_SEND,
	  { M(MW_PMTU, 12), M(MW_PAY, 4096) } },
	{ "ud_send_full_256", MRC_OP_UD_SEND,
	  { M(MW_PMTU, 8), M(MW_PAY, 256) } },
	{ "ud_send_qkey_zero", MRC_OP_UD_SEND, { M(MW_QKEY, 0) } },
	{ "ud_send_qkey_all_ones", MRC_OP_UD_SEND,
	  { M(MW_QKEY, 0xffffffff), M(MW_IMM, 0xffffffff) } },
	{ "ud_send_qpn_24_bits_max", MRC_OP_UD_SEND,
	  { M(MW_DQPN, 0xffffff), M(MW_SQPN, 0xffffff) } },
};

static void mrc_wt_desc(const struct mrc_wt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mrc_wt_good, mrc_wt_good, mrc_wt_desc);

static void mrc_wire_roundtrip(struct kunit *test)
{
	const struct mrc_wt_case *c = test->param_value;
	struct mrc_pkt *ref = kunit_kzalloc(test, sizeof(*ref), GFP_KERNEL);
	struct mrc_pkt *got = kunit_kzalloc(test, sizeof(*got), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);
	u8 *again = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);
	u32 len;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ref);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, got);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, again);
	len = mrc_wt_make(test, c, ref, buf);
	KUNIT_ASSERT_EQ(test, mrc_wire_parse(buf, len, got), 0);
	mrc_wt_expect_same(test, ref, got);
	/* building the decoded header gives the same bytes */
	KUNIT_ASSERT_EQ(test, mrc_wire_build(again, got), (u32)ref->hdr_len);
	KUNIT_EXPECT_EQ(test, memcmp(buf, again, ref->hdr_len), 0);
}

/* ---- malformed headers: one drop reason each ---- */

#define E(r)	(-MRC_DROP_##r)
#define ACKX	(MRC_BTH_LEN)		/* ACK extension offset */
#define REQX	(MRC_BTH_LEN)

static const struct mrc_wt_case mrc_wt_bad[] = {
	/* truncated */
	{ "empty", MRC_OP_SEND, { M(MW_LEN, 0) }, E(TRUNCATED) },
	{ "base_minus_1", MRC_OP_ATOMIC_RESP, { M(MW_LEN, 23) }, E(TRUNCATED) },
	{ "ack_no_sack_count", MRC_OP_ACK, { M(MW_LEN, 25) }, E(TRUNCATED) },
	{ "ack_ext_cut", MRC_OP_ACK, { M(MW_LEN, 60) }, E(TRUNCATED) },
	{ "req_ext_cut", MRC_OP_READ_REQ, { M(MW_LENADD, -1) }, E(TRUNCATED) },
	{ "resp_ext_cut", MRC_OP_ATOMIC_RESP, { M(MW_LEN, 31) }, E(TRUNCATED) },
	/* version byte */
	{ "version_0", MRC_OP_SEND, { MB(0, 0x00) }, E(BAD_VERSION) },
	{ "version_1", MRC_OP_SEND, { MB(0, 0x10) }, E(BAD_VERSION) },
	{ "version_1_ack", MRC_OP_ACK, { MB(0, 0x10) }, E(BAD_VERSION) },
	{ "version_3", MRC_OP_WRITE, { MB(0, 0x30) }, E(BAD_VERSION) },
	{ "version_15", MRC_OP_ACK, { MB(0, 0xf0) }, E(BAD_VERSION) },
	{ "version_low_nibble", MRC_OP_SEND, { MB(0, 0x21) }, E(BAD_FIELD) },
	{ "data_common_cut", MRC_OP_WRITE, { M(MW_LEN, 19) }, E(TRUNCATED) },
	{ "send_ext_cut", MRC_OP_SEND, { M(MW_FLAGS, 0), M(MW_PAY, 0),
	  M(MW_LEN, 27) }, E(TRUNCATED) },
	{ "write_imm_ext_cut", MRC_OP_WRITE, { M(MW_FLAGS, MRC_F_IMM),
	  M(MW_LEN, 43) }, E(TRUNCATED) },
	/* opcode */
	{ "opcode_0", MRC_OP_SEND, { MB(1, 0x00) }, E(BAD_OPCODE) },
	{ "opcode_7", MRC_OP_SEND, { MB(1, 0x07) }, E(BAD_OPCODE) },
	{ "opcode_0x12", MRC_OP_READ_RESP, { MB(1, 0x12) }, E(BAD_OPCODE) },
	{ "opcode_0xff", MRC_OP_ACK, { MB(1, 0xff) }, E(BAD_OPCODE) },
	/* header length */
	{ "hdrw_0", MRC_OP_SEND, { MB(3, 0) }, E(BAD_HDR_LEN) },
	{ "hdrw_short", MRC_OP_SEND, { MB(3, 7) }, E(BAD_HDR_LEN) },
	{ "hdrw_long", MRC_OP_SEND, { MB(3, 9) }, E(BAD_HDR_LEN) },
	{ "hdrw_v1_request", MRC_OP_WRITE, { MB(3, 14) }, E(BAD_HDR_LEN) },
	{ "hdrw_write_imm_unflagged", MRC_OP_WRITE, { MB(3, 11) },
	  E(BAD_HDR_LEN) },
	{ "hdrw_send_inv_unflagged", MRC_OP_SEND, { M(MW_FLAGS, MRC_F_LAST),
	  MB(3, 8) }, E(BAD_HDR_LEN) },
	{ "hdrw_255", MRC_OP_READ_RESP, { MB(3, 255) }, E(BAD_HDR_LEN) },
	{ "hdrw_other_opcode", MRC_OP_ATOMIC_RESP, { MB(3, 14) }, E(BAD_HDR_LEN) },
	{ "ack_hdrw_vs_sack_count", MRC_OP_ACK, { MB(ACKX + 1, 1) },
	  E(BAD_HDR_LEN) },
	/* SACK word count */
	{ "ack_5_sack_words", MRC_OP_ACK, { MB(ACKX + 1, 5) }, E(BAD_SACK) },
	{ "ack_255_sack_words", MRC_OP_ACK, { MB(ACKX + 1, 255) }, E(BAD_SACK) },
	/* payload length */
	{ "pay_len_field_small", MRC_OP_READ_RESP, { M(MW_LENADD, 1) },
	  E(BAD_PAY_LEN) },
	{ "pay_len_field_large", MRC_OP_READ_RESP, { MB(21, 0x01) },
	  E(BAD_PAY_LEN) },
	{ "datagram_beyond_64k", MRC_OP_READ_RESP,
	  { M(MW_PAY, 70000 & 0xffff), M(MW_LEN, 32 + 70000) }, E(BAD_PAY_LEN) },
	{ "data_beyond_64k", MRC_OP_WRITE, { M(MW_LEN, 32 + 65536) },
	  E(BAD_PAY_LEN) },
	{ "ack_with_payload", MRC_OP_ACK, { M(MW_PAY, 4) }, E(BAD_PAY_LEN) },
	{ "read_req_with_payload", MRC_OP_READ_REQ, { M(MW_PAY, 8) },
	  E(BAD_PAY_LEN) },
	{ "atomic_with_payload", MRC_OP_ATOMIC_FA, { M(MW_PAY, 8) },
	  E(BAD_PAY_LEN) },
	{ "atomic_resp_with_payload", MRC_OP_ATOMIC_RESP, { M(MW_PAY, 1) },
	  E(BAD_PAY_LEN) },
	{ "write_middle_empty", MRC_OP_WRITE, { M(MW_PAY, 0) },
	  E(BAD_PAY_LEN) },
	{ "send_middle_empty", MRC_OP_SEND, { M(MW_FLAGS, MRC_F_IMM),
	  M(MW_PAY, 0) }, E(BAD_PAY_LEN) },
	{ "read_resp_above_segment", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 0), M(MW_PAY, 513) }, E(BAD_PAY_LEN) },
	{ "read_resp_middle_short", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 512), M(MW_PAY, 500) }, E(BAD_PAY_LEN) },
	/* flags */
	{ "ud_credit", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_CREDIT) },
	  E(BAD_FIELD) },
	{ "resp_credit", MRC_OP_ATOMIC_RESP, { M(MW_FLAGS, MRC_F_CREDIT) },
	  E(BAD_FIELD) },
	{ "read_resp_credit", MRC_OP_READ_RESP, { M(MW_FLAGS, MRC_F_CREDIT) },
	  E(BAD_FIELD) },
	{ "read_ordered", MRC_OP_READ_REQ, { M(MW_FLAGS, MRC_F_ORDERED) },
	  E(BAD_FIELD) },
	{ "resp_ordered", MRC_OP_READ_RESP, { M(MW_FLAGS, MRC_F_ORDERED) },
	  E(BAD_FIELD) },
	{ "imm_and_inv", MRC_OP_SEND,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM | MRC_F_INV) }, E(BAD_FIELD) },
	{ "write_inv", MRC_OP_WRITE, { M(MW_FLAGS, MRC_F_INV), M(MW_IMM, 5) },
	  E(BAD_FIELD) },
	{ "write_solicited_no_imm", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_SOLICITED) }, E(BAD_FIELD) },
	{ "read_req_imm", MRC_OP_READ_REQ, { M(MW_FLAGS, MRC_F_IMM) },
	  E(BAD_FIELD) },
	{ "read_req_solicited", MRC_OP_READ_REQ,
	  { M(MW_FLAGS, MRC_F_SOLICITED) }, E(BAD_FIELD) },
	{ "atomic_inv", MRC_OP_ATOMIC_CS, { M(MW_FLAGS, MRC_F_INV) },
	  E(BAD_FIELD) },
	{ "atomic_last", MRC_OP_ATOMIC_FA, { M(MW_FLAGS, MRC_F_LAST) },
	  E(BAD_FIELD) },
	{ "read_resp_last", MRC_OP_READ_RESP, { M(MW_FLAGS, MRC_F_LAST) },
	  E(BAD_FIELD) },
	{ "read_resp_ackreq", MRC_OP_READ_RESP, { M(MW_FLAGS, MRC_F_ACKREQ) },
	  E(BAD_FIELD) },
	{ "atomic_resp_imm", MRC_OP_ATOMIC_RESP, { M(MW_FLAGS, MRC_F_IMM) },
	  E(BAD_FIELD) },
	{ "ack_retx", MRC_OP_ACK, { M(MW_FLAGS, MRC_F_RETX) }, E(BAD_FIELD) },
	{ "ack_ackreq", MRC_OP_ACK, { M(MW_FLAGS, MRC_F_ACKREQ) }, E(BAD_FIELD) },
	{ "imm_without_flag", MRC_OP_READ_REQ,
	  { MB(REQX + MRC_REQ_OFF_IMM + 3, 1) }, E(BAD_FIELD) },
	/* QPNs */
	{ "dqpn_25_bits", MRC_OP_SEND, { M(MW_DQPN, 0x1000000) }, E(BAD_FIELD) },
	{ "sqpn_top_bit", MRC_OP_ACK, { M(MW_SQPN, 0x80000000) }, E(BAD_FIELD) },
	{ "write_sqpn_top_byte", MRC_OP_WRITE, { MB(8, 0x01) }, E(BAD_FIELD) },
	{ "send_dqpn_top_byte", MRC_OP_SEND, { MB(4, 0x80) }, E(BAD_FIELD) },
	/* reserved */
	{ "base_reserved", MRC_OP_READ_REQ, { MB(23, 1) }, E(BAD_FIELD) },
	{ "req_reserved", MRC_OP_READ_REQ, { MB(REQX + MRC_REQ_OFF_RSVD, 0x80) },
	  E(BAD_FIELD) },
	{ "req_reserved_low", MRC_OP_READ_REQ,
	  { MB(REQX + MRC_REQ_OFF_RSVD + 3, 1) }, E(BAD_FIELD) },
	{ "atomic_reserved", MRC_OP_ATOMIC_CS,
	  { MB(MRC_BTH_LEN + MRC_ATOMIC_OFF_RSVD + 2, 4) }, E(BAD_FIELD) },
	{ "ack_reserved_first", MRC_OP_ACK, { MB(ACKX + MRC_ACK_OFF_RSVD, 1) },
	  E(BAD_FIELD) },
	{ "ack_reserved_last", MRC_OP_ACK,
	  { MB(ACKX + MRC_ACK_OFF_RSVD + 5, 0x80) }, E(BAD_FIELD) },
	{ "ack_reserved_second", MRC_OP_ACK,
	  { MB(ACKX + MRC_ACK_OFF_RSVD + 1, 0x01) }, E(BAD_FIELD) },
	/* pmtu */
	{ "pmtu_0", MRC_OP_READ_RESP, { M(MW_PMTU, 0) }, E(BAD_PMTU) },
	{ "pmtu_7", MRC_OP_READ_REQ, { M(MW_PMTU, 7) }, E(BAD_PMTU) },
	{ "pmtu_14", MRC_OP_READ_REQ, { M(MW_PMTU, 14) }, E(BAD_PMTU) },
	{ "pmtu_atomic_0", MRC_OP_ATOMIC_FA, { M(MW_PMTU, 0) }, E(BAD_PMTU) },
	{ "pmtu_ack_7", MRC_OP_ACK, { M(MW_PMTU, 7) }, E(BAD_PMTU) },
	{ "pmtu_ack_14", MRC_OP_ACK, { M(MW_PMTU, 14) }, E(BAD_PMTU) },
	{ "pmtu_jumbo_above_seg", MRC_OP_READ_RESP,
	  { M(MW_PMTU, 13), M(MW_MSGLEN, 16384), M(MW_OFFSET, 0),
	    M(MW_PAY, 8193) }, E(BAD_PAY_LEN) },
	/* offsets and lengths */
	{ "write_imm_above_max", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM),
	    M(MW_MSGLEN, MRC_MAX_MSG_LEN + 1) }, E(BAD_LENGTH) },
	{ "write_imm_pay_above_length", MRC_OP_WRITE,
	  { M(MW_FLAGS, MRC_F_LAST | MRC_F_IMM), M(MW_MSGLEN, 100),
	    M(MW_PAY, 101) }, E(BAD_LENGTH) },
	{ "send_end_past_max", MRC_OP_SEND,
	  { M(MW_OFFSET, MRC_MAX_MSG_LEN - 1807) }, E(BAD_LENGTH) },
	{ "offset_u32_wrap", MRC_OP_SEND,
	  { M(MW_OFFSET, 0xfffff000), M(MW_PAY, 4096) }, E(BAD_LENGTH) },
	{ "zero_length_without_last", MRC_OP_SEND,
	  { M(MW_FLAGS, 0), M(MW_OFFSET, 0), M(MW_PAY, 0) },
	  E(BAD_PAY_LEN) },
	{ "read_req_above_max", MRC_OP_READ_REQ,
	  { M(MW_OFFSET, 0), M(MW_MSGLEN, MRC_MAX_MSG_LEN + 1) }, E(BAD_LENGTH) },
	{ "read_req_end_above_max", MRC_OP_READ_REQ,
	  { M(MW_OFFSET, MRC_MAX_MSG_LEN), M(MW_MSGLEN, 1) }, E(BAD_LENGTH) },
	{ "read_req_u32_wrap", MRC_OP_READ_REQ,
	  { M(MW_OFFSET, 0xfffff000), M(MW_MSGLEN, 0x2000) }, E(BAD_LENGTH) },
	{ "read_req_misaligned", MRC_OP_READ_REQ, { M(MW_OFFSET, 100) },
	  E(BAD_LENGTH) },
	/* one request asks for at most MRC_READ_CHUNK segments */
	{ "read_req_above_chunk", MRC_OP_READ_REQ,
	  { M(MW_MSGLEN, (MRC_READ_CHUNK << 12) + 1) }, E(BAD_LENGTH) },
	{ "read_req_2p23_segments", MRC_OP_READ_REQ,
	  { M(MW_PMTU, 8), M(MW_OFFSET, 0), M(MW_MSGLEN, MRC_MAX_MSG_LEN - 256) },
	  E(BAD_LENGTH) },
	{ "read_resp_past_end", MRC_OP_READ_RESP, { M(MW_MSGLEN, 1999) },
	  E(BAD_LENGTH) },
	{ "read_resp_misaligned", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 1537), M(MW_PAY, 463) }, E(BAD_LENGTH) },
	{ "read_resp_above_max", MRC_OP_READ_RESP,
	  { M(MW_MSGLEN, MRC_MAX_MSG_LEN + 1) }, E(BAD_LENGTH) },
	{ "read_resp_u32_wrap", MRC_OP_READ_RESP,
	  { M(MW_OFFSET, 0xfffffe00), M(MW_PAY, 512),
	    M(MW_MSGLEN, MRC_MAX_MSG_LEN) }, E(BAD_LENGTH) },
	/* atomics */
	{ "atomic_va_misaligned", MRC_OP_ATOMIC_CS, { M(MW_VA, 0x10000004) },
	  E(BAD_FIELD) },
	{ "atomic_va_odd", MRC_OP_ATOMIC_FA, { M(MW_VA, 0x10000009) },
	  E(BAD_FIELD) },
	{ "fetch_add_compare", MRC_OP_ATOMIC_FA,
	  { MB(MRC_BTH_LEN + MRC_ATOMIC_OFF_COMPARE + 7, 1) }, E(BAD_FIELD) },
	/* ACK fields */
	{ "ack_syndrome_5", MRC_OP_ACK, { M(MW_SYN, 5) }, E(BAD_FIELD) },
	{ "ack_syndrome_255", MRC_OP_ACK, { M(MW_SYN, 255) }, E(BAD_FIELD) },
	{ "ack_flag_0x10", MRC_OP_ACK, { M(MW_ACKF, 0x10) }, E(BAD_FIELD) },
	{ "ack_rnr_timer_32", MRC_OP_ACK, { M(MW_RNRT, 32) }, E(BAD_FIELD) },
	/* UD datagrams */
	{ "ud_ext_cut", MRC_OP_UD_SEND, { M(MW_LEN, 31) }, E(TRUNCATED) },
	{ "ud_hdrw_long", MRC_OP_UD_SEND, { MB(3, 9) }, E(BAD_HDR_LEN) },
	{ "ud_hdrw_as_request", MRC_OP_UD_SEND, { MB(3, 14) }, E(BAD_HDR_LEN) },
	{ "ud_read_req_as_ud", MRC_OP_READ_REQ,
	  { M(MW_FLAGS, 0), MB(1, MRC_OP_UD_SEND) },
	  E(BAD_HDR_LEN) },
	{ "ud_write_as_ud", MRC_OP_WRITE, { MB(1, MRC_OP_UD_SEND) },
	  E(BAD_PAY_LEN) },
	{ "ud_pay_len_field", MRC_OP_UD_SEND, { M(MW_LENADD, 1) },
	  E(BAD_PAY_LEN) },
	{ "ud_above_mtu", MRC_OP_UD_SEND, { M(MW_PMTU, 8), M(MW_PAY, 257) },
	  E(BAD_PAY_LEN) },
	{ "ud_above_4096", MRC_OP_UD_SEND, { M(MW_PMTU, 12), M(MW_PAY, 4097) },
	  E(BAD_PAY_LEN) },
	{ "ud_pmtu_13", MRC_OP_UD_SEND, { M(MW_PMTU, 13), M(MW_PAY, 4097) },
	  E(BAD_PMTU) },
	{ "ud_pmtu_0", MRC_OP_UD_SEND, { M(MW_PMTU, 0), M(MW_PAY, 0) },
	  E(BAD_PMTU) },
	{ "ud_pmtu_7", MRC_OP_UD_SEND, { M(MW_PMTU, 7), M(MW_PAY, 0) },
	  E(BAD_PMTU) },
	{ "ud_pmtu_13", MRC_OP_UD_SEND, { M(MW_PMTU, 13) }, E(BAD_PMTU) },
	{ "ud_psn_nonzero", MRC_OP_UD_SEND, { M(MW_PSN, 1) }, E(BAD_FIELD) },
	{ "ud_psn_top_bit", MRC_OP_UD_SEND, { M(MW_PSN, 0x80000000) },
	  E(BAD_FIELD) },
	{ "ud_imm_without_flag", MRC_OP_UD_SEND,
	  { M(MW_FLAGS, 0), MB(MRC_BTH_LEN + MRC_UD_OFF_IMM + 3, 1) },
	  E(BAD_FIELD) },
	{ "ud_ackreq", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_ACKREQ) },
	  E(BAD_FIELD) },
	{ "ud_retx", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_RETX) }, E(BAD_FIELD) },
	{ "ud_last", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_LAST) }, E(BAD_FIELD) },
	{ "ud_inv", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_INV) }, E(BAD_FIELD) },
	{ "ud_ordered", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_ORDERED) },
	  E(BAD_FIELD) },
	{ "ud_flag_0x80", MRC_OP_UD_SEND, { M(MW_FLAGS, MRC_F_IMM | 0x80) },
	  E(BAD_FIELD) },
	{ "ud_dqpn_25_bits", MRC_OP_UD_SEND, { M(MW_DQPN, 0x1000000) },
	  E(BAD_FIELD) },
	{ "ud_sqpn_top_byte", MRC_OP_UD_SEND, { MB(8, 0x01) }, E(BAD_FIELD) },
	{ "ud_base_reserved", MRC_OP_UD_SEND, { MB(23, 0x40) }, E(BAD_FIELD) },
};

KUNIT_ARRAY_PARAM(mrc_wt_bad, mrc_wt_bad, mrc_wt_desc);

static void mrc_wire_reject(struct kunit *test)
{
	const struct mrc_wt_case *c = test->param_value;
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	struct mrc_pkt *got = kunit_kzalloc(test, sizeof(*got), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);
	u32 len;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, got);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	len = mrc_wt_make(test, c, p, buf);
	KUNIT_EXPECT_EQ(test, mrc_wire_parse(buf, len, got), c->err);
}

/*
 * every prefix of a valid packet is refused, never read past; except that
 * a SEND or WRITE header followed by less payload is a shorter packet
 */
static void mrc_wire_every_truncation(struct kunit *test)
{
	static const u8 ops[] = {
		MRC_OP_SEND, MRC_OP_WRITE, MRC_OP_READ_REQ, MRC_OP_ATOMIC_CS,
		MRC_OP_ATOMIC_FA, MRC_OP_READ_RESP, MRC_OP_ATOMIC_RESP,
		MRC_OP_ACK, MRC_OP_UD_SEND,
	};
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);
	u32 i, len, hl, total;
	int err;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		mrc_wt_base(p, ops[i]);
		hl = mrc_wire_build(buf, p);
		total = hl + p->pay_len;
		for (len = 0; len < total; len++) {
			bool data = ops[i] == MRC_OP_SEND || ops[i] == MRC_OP_WRITE;
			bool last = buf[MRC_BTH_OFF_FLAGS] & MRC_F_LAST;

			err = mrc_wire_parse(buf, len, p);
			if (len < hl)
				KUNIT_EXPECT_EQ(test, err, E(TRUNCATED));
			else if (!data || (len == hl && !last))
				KUNIT_EXPECT_EQ(test, err, E(BAD_PAY_LEN));
			else
				KUNIT_EXPECT_EQ(test, err, 0);
			if (!err)
				KUNIT_EXPECT_EQ(test, (u32)p->pay_len, len - hl);
		}
	}
}

static void mrc_wire_hdr_lengths(struct kunit *test)
{
	u32 op, w;

	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_SEND, 0, 0), 28u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_SEND, MRC_F_LAST, 0), 28u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_SEND, MRC_F_IMM, 0), 32u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_SEND, MRC_F_INV, 0), 32u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_WRITE, 0, 3), 32u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_WRITE, MRC_F_IMM, 0), 44u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_READ_REQ, MRC_F_IMM, 0),
			56u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_ATOMIC_CS, 0, 0), 56u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_ATOMIC_FA, 0, 0), 56u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_READ_RESP, 0, 0), 32u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_ATOMIC_RESP, 0, 0), 32u);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_UD_SEND, MRC_F_IMM, 0),
			32u);
	for (w = 0; w <= MRC_ACK_MAX_SACKW; w++)
		KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_ACK, 0, w),
				56 + 8 * w);
	KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(MRC_OP_ACK, 0, 5), 0u);
	KUNIT_EXPECT_LE(test, mrc_wire_hdr_len(MRC_OP_WRITE, MRC_F_IMM, 0),
			(u32)MRC_DATA_MAX_LEN);
	/* unknown opcodes */
	for (op = 0; op < 256; op++) {
		switch (op) {
		case MRC_OP_SEND ... MRC_OP_UD_SEND:
		case MRC_OP_READ_RESP:
		case MRC_OP_ATOMIC_RESP:
		case MRC_OP_ACK:
			KUNIT_EXPECT_NE(test, mrc_wire_hdr_len(op, 0, 0), 0u);
			break;
		default:
			KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(op, 0, 0), 0u);
		}
		/* every header is a whole number of words */
		KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(op, 0, 1) % 4, 0u);
		KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(op, MRC_F_IMM, 1) % 4, 0u);
		KUNIT_EXPECT_EQ(test, mrc_wire_hdr_len(op, MRC_F_INV, 1) % 4, 0u);
	}
}

/* build zeroes what it does not own, and refuses what it cannot encode */
static void mrc_wire_build_zeroes(struct kunit *test)
{
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);
	u32 hl, i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);

	/* a WRITE without IMM: no RMSN, length or imm; nothing past 32 */
	mrc_wt_base(p, MRC_OP_WRITE);
	p->req.imm = 0xffffffff;
	memset(buf, 0xff, 128);
	hl = mrc_wire_build(buf, p);
	KUNIT_ASSERT_EQ(test, hl, 32u);
	KUNIT_EXPECT_EQ(test, buf[0], 0x20);
	KUNIT_EXPECT_EQ(test, buf[3], 8);
	KUNIT_EXPECT_EQ(test, buf[32], 0xff);	/* nothing past the header */
	KUNIT_EXPECT_EQ(test, mrc_wire_parse(buf, hl + p->pay_len, p), 0);
	KUNIT_EXPECT_EQ(test, p->req.rmsn, 0u);
	KUNIT_EXPECT_EQ(test, p->req.imm, 0u);

	/* READ_REQ: imm and reserved words zero */
	mrc_wt_base(p, MRC_OP_READ_REQ);
	p->req.imm = 0xffffffff;
	memset(buf, 0xff, 128);
	hl = mrc_wire_build(buf, p);
	KUNIT_ASSERT_EQ(test, hl, 56u);
	KUNIT_EXPECT_EQ(test, buf[23], 0);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, buf[REQX + MRC_REQ_OFF_IMM + i], 0);
	KUNIT_EXPECT_EQ(test, buf[56], 0xff);
	KUNIT_EXPECT_EQ(test, mrc_wire_parse(buf, hl, p), 0);

	/* FETCH_ADD's compare is written as zero */
	mrc_wt_base(p, MRC_OP_ATOMIC_FA);
	p->atomic.compare = 42;
	memset(buf, 0xff, 128);
	hl = mrc_wire_build(buf, p);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, buf[MRC_BTH_LEN + MRC_ATOMIC_OFF_COMPARE + i],
				0);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, buf[MRC_BTH_LEN + MRC_ATOMIC_OFF_RSVD + i],
				0);
	KUNIT_EXPECT_EQ(test, mrc_wire_parse(buf, hl, p), 0);

	/* ACK reserved bytes and unused SACK words */
	mrc_wt_base(p, MRC_OP_ACK);
	p->ack.sack[2] = ~0ull;		/* beyond sack_words: not written */
	memset(buf, 0xff, 128);
	hl = mrc_wire_build(buf, p);
	KUNIT_ASSERT_EQ(test, hl, 72u);
	for (i = 0; i < 6; i++)
		KUNIT_EXPECT_EQ(test, buf[ACKX + MRC_ACK_OFF_RSVD + i], 0);
	KUNIT_EXPECT_EQ(test, buf[ACKX + MRC_ACK_OFF_DGRAM], 1472 >> 8);
	KUNIT_EXPECT_EQ(test, buf[ACKX + MRC_ACK_OFF_DGRAM + 1], 1472 & 0xff);
	KUNIT_EXPECT_EQ(test, buf[72], 0xff);
	KUNIT_EXPECT_EQ(test, buf[ACKX + MRC_ACK_OFF_SACK + 7], 0x01);
	KUNIT_EXPECT_EQ(test, buf[ACKX + MRC_ACK_OFF_SACK], 0x80);

	/* refusals write nothing */
	memset(buf, 0xab, 128);
	p->ack.sack_words = MRC_ACK_MAX_SACKW + 1;
	KUNIT_EXPECT_EQ(test, mrc_wire_build(buf, p), 0u);
	p->opcode = 0x42;
	KUNIT_EXPECT_EQ(test, mrc_wire_build(buf, p), 0u);
	KUNIT_EXPECT_EQ(test, buf[0], 0xab);
}

/* big-endian layout of the base header, byte by byte */
static void mrc_wire_byte_order(struct kunit *test)
{
	static const u8 want[MRC_BTH_LEN] = {
		0x20, MRC_OP_ATOMIC_RESP, MRC_F_RETX, 8,
		0x00, 0x12, 0x34, 0x56,  0x00, 0xab, 0xcd, 0xef,
		0xfe, 0xdc, 0xba, 0x98,  0x01, 0x02, 0x03, 0x04,
		0x00, 0x00, 12, 0x00,
	};
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	mrc_wt_base(p, MRC_OP_ATOMIC_RESP);
	p->flags = MRC_F_RETX;
	p->psn = 0xfedcba98;
	p->tsval = 0x01020304;
	p->aresp.orig = 0x1122334455667788ull;
	KUNIT_ASSERT_EQ(test, mrc_wire_build(buf, p), 32u);
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, sizeof(want)), 0);
	KUNIT_EXPECT_EQ(test, buf[24], 0x11);
	KUNIT_EXPECT_EQ(test, buf[31], 0x88);
}

/* the UD datagram header, byte by byte (as in the protocol document) */
static void mrc_wire_ud_layout(struct kunit *test)
{
	static const u8 want[MRC_BTH_LEN + MRC_UD_LEN] = {
		0x20, MRC_OP_UD_SEND, MRC_F_SOLICITED | MRC_F_IMM, 8,
		0x00, 0x00, 0x00, 0x01,  0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x00, 0x00,  0x0a, 0x0b, 0x0c, 0x0d,
		0x01, 0x00, 10, 0x00,
		0x80, 0x01, 0x00, 0x00,  0xde, 0xad, 0xbe, 0xef,
	};
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	mrc_wt_base(p, MRC_OP_UD_SEND);
	p->sqpn = 0x1234;
	p->tsval = 0x0a0b0c0d;
	p->ud.imm = 0xdeadbeef;
	KUNIT_ASSERT_EQ(test, mrc_wire_build(buf, p), 32u);
	KUNIT_EXPECT_EQ(test, memcmp(buf, want, sizeof(want)), 0);
	KUNIT_EXPECT_EQ(test, mrc_wire_parse(buf, 32 + 256, p), 0);
	KUNIT_EXPECT_EQ(test, p->ud.qkey, 0x80010000u);

	/* without IMM the immediate field is written as zero */
	p->flags = 0;
	memset(buf, 0xff, 64);
	KUNIT_ASSERT_EQ(test, mrc_wire_build(buf, p), 32u);
	KUNIT_EXPECT_EQ(test, memcmp(buf + 28, "\0\0\0\0", 4), 0);
	KUNIT_EXPECT_EQ(test, buf[32], 0xff);
}

/* the data headers, byte by byte (as in the protocol document) */
static void mrc_wire_data_layout(struct kunit *test)
{
	static const u8 send[32] = {
		0x20, MRC_OP_SEND, MRC_F_LAST | MRC_F_INV, 8,
		0x00, 0x12, 0x34, 0x56,  0x00, 0xab, 0xcd, 0xef,
		0x00, 0x00, 0x10, 0x00,  0x0a, 0x0b, 0x0c, 0x0d,
		0x00, 0x00, 0x00, 0x07,  0x00, 0x00, 0x2d, 0x28,
		0x00, 0x00, 0x05, 0x43,
	};
	static const u8 write[44] = {
		0x20, MRC_OP_WRITE, MRC_F_LAST | MRC_F_IMM | MRC_F_ACKREQ, 11,
		0x00, 0x12, 0x34, 0x56,  0x00, 0xab, 0xcd, 0xef,
		0x00, 0x00, 0x10, 0x00,  0x0a, 0x0b, 0x0c, 0x0d,
		0xde, 0xad, 0xbe, 0xef,
		0x11, 0x22, 0x33, 0x44,  0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x00, 0x09,  0x00, 0x01, 0x00, 0x00,
		0xca, 0xfe, 0xf0, 0x0d,
	};
	struct mrc_pkt *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, MRC_WT_BUF, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	/* the last 100 bytes of an 11660-byte SEND, invalidating key 0x543 */
	mrc_wt_base(p, MRC_OP_SEND);
	p->flags = MRC_F_LAST | MRC_F_INV;
	p->psn = 0x1000;
	p->tsval = 0x0a0b0c0d;
	p->req.offset = 11560;
	p->req.imm = 0x543;
	memset(buf, 0xff, 64);
	KUNIT_ASSERT_EQ(test, mrc_wire_build(buf, p), 32u);
	KUNIT_EXPECT_EQ(test, memcmp(buf, send, sizeof(send)), 0);
	KUNIT_EXPECT_EQ(test, buf[32], 0xff);
	KUNIT_ASSERT_EQ(test, mrc_wire_parse(buf, 32 + 100, p), 0);
	KUNIT_EXPECT_EQ(test, p->pay_len, 100);
	KUNIT_EXPECT_EQ(test, p->req.msg_len, 11660u);
	KUNIT_EXPECT_EQ(test, p->req.rmsn, 7u);

	/* the last packet of a 65536-byte WRITE with immediate */
	mrc_wt_base(p, MRC_OP_WRITE);
	p->flags = MRC_F_LAST | MRC_F_IMM | MRC_F_ACKREQ;
	p->psn = 0x1000;
	p->tsval = 0x0a0b0c0d;
	p->req.rmsn = 9;
	p->req.msg_len = 65536;
	p->req.imm = 0xcafef00d;
	memset(buf, 0xff, 64);
	KUNIT_ASSERT_EQ(test, mrc_wire_build(buf, p), 44u);
	KUNIT_EXPECT_EQ(test, memcmp(buf, write, sizeof(write)), 0);
	KUNIT_EXPECT_EQ(test, buf[44], 0xff);
	KUNIT_ASSERT_EQ(test, mrc_wire_parse(buf, 44 + 736, p), 0);
	KUNIT_EXPECT_EQ(test, p->pay_len, 736);
	KUNIT_EXPECT_EQ(test, p->req.va, 0x1122334455667788ull);
	KUNIT_EXPECT_EQ(test, p->req.offset, 0u);
	KUNIT_EXPECT_EQ(test, p->pmtu_shift, 0);
}

static struct kunit_case mrc_wire_cases[] = {
	KUNIT_CASE_PARAM(mrc_wire_roundtrip, mrc_wt_good_gen_params),
	KUNIT_CASE_PARAM(mrc_wire_reject, mrc_wt_bad_gen_params),
	KUNIT_CASE(mrc_wire_every_truncation),
	KUNIT_CASE(mrc_wire_hdr_lengths),
	KUNIT_CASE(mrc_wire_build_zeroes),
	KUNIT_CASE(mrc_wire_byte_order),
	KUNIT_CASE(mrc_wire_ud_layout),
	KUNIT_CASE(mrc_wire_data_layout),
	{}
};

static struct kunit_suite mrc_wire_suite = {
	.name = "metaroce_wire",
	.test_cases = mrc_wire_cases,
};

kunit_test_suite(mrc_wire_suite);

#undef M
#undef MB
#undef E
#undef ACKX
#undef REQX

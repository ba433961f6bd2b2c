// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce codec of the conformance tester, from the spec's tables only
 * (metaroce-protocol.rst: Packet layout, Opcodes and flags, Validation).
 * Every check of mct_parse() is one numbered rule of "Validation", in the
 * spec's order; the rule string names it.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "codec.h"

static const struct { uint8_t op; const char *name; } op_names[] = {
	{ MCT_OP_SEND, "SEND" }, { MCT_OP_WRITE, "WRITE" },
	{ MCT_OP_READ_REQ, "READ_REQ" }, { MCT_OP_ATOMIC_CS, "ATOMIC_CS" },
	{ MCT_OP_ATOMIC_FA, "ATOMIC_FA" }, { MCT_OP_UD_SEND, "UD_SEND" },
	{ MCT_OP_READ_RESP, "READ_RESP" },
	{ MCT_OP_ATOMIC_RESP, "ATOMIC_RESP" }, { MCT_OP_ACK, "ACK" },
};

static const char *const reason_names[MCT_REASON_NR] = {
	"accept", "truncated", "bad_version", "bad_opcode", "bad_hdr_len",
	"bad_pay_len", "bad_field", "bad_pmtu", "bad_length", "bad_sack",
};

const char *mct_op_name(uint8_t opcode)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_names); i++)
		if (op_names[i].op == opcode)
			return op_names[i].name;
	return "?";
}

int mct_op_by_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_names); i++)
		if (!strcasecmp(op_names[i].name, name))
			return op_names[i].op;
	return -1;
}

const char *mct_reason_name(enum mct_reason r)
{
	return r < MCT_REASON_NR ? reason_names[r] : "?";
}

int mct_known_op(uint8_t opcode)
{
	return strcmp(mct_op_name(opcode), "?") != 0;
}

/* "Allowed flags" table */
uint8_t mct_allowed_flags(uint8_t opcode)
{
	const uint8_t req = MCT_F_ACKREQ | MCT_F_RETX | MCT_F_CREDIT;

	switch (opcode) {
	case MCT_OP_SEND:
		return 0xff;
	case MCT_OP_WRITE:
		return 0xff & ~MCT_F_INV;
	case MCT_OP_READ_REQ:
		return req | MCT_F_LAST;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		return req;
	case MCT_OP_READ_RESP:
	case MCT_OP_ATOMIC_RESP:
		return MCT_F_RETX;
	case MCT_OP_UD_SEND:
		return MCT_F_SOLICITED | MCT_F_IMM;
	default:
		return 0;
	}
}

/* the header length table of "General structure" */
uint32_t mct_hdr_len(uint8_t opcode, uint8_t flags, uint8_t sack_words)
{
	switch (opcode) {
	case MCT_OP_SEND:
		return flags & (MCT_F_IMM | MCT_F_INV) ? 32 : 28;
	case MCT_OP_WRITE:
		return flags & MCT_F_IMM ? 44 : 32;
	case MCT_OP_READ_REQ:
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		return 56;
	case MCT_OP_READ_RESP:
	case MCT_OP_ATOMIC_RESP:
	case MCT_OP_UD_SEND:
		return 32;
	case MCT_OP_ACK:
		return 56 + 8 * sack_words;
	default:
		return 0;
	}
}

static int is_data(uint8_t opcode)
{
	return opcode == MCT_OP_SEND || opcode == MCT_OP_WRITE;
}

void mct_fixup(struct mct_pkt *p)
{
	p->hdr_words = mct_hdr_len(p->opcode, p->flags, p->sack_words) / 4;
	p->pay_len = p->payload_len;
}

void mct_template(struct mct_pkt *p, uint8_t opcode)
{
	memset(p, 0, sizeof(*p));
	p->version = 2;
	p->opcode = opcode;
	p->pmtu = 10;
	p->dqpn = 0x12;
	p->sqpn = 0x34;
	if (is_data(opcode) || opcode == MCT_OP_READ_REQ)
		p->flags = MCT_F_LAST | MCT_F_ACKREQ;
	if (opcode == MCT_OP_ATOMIC_CS || opcode == MCT_OP_ATOMIC_FA)
		p->flags = MCT_F_ACKREQ;
	if (opcode == MCT_OP_READ_REQ)
		p->msg_len = 1024;
	if (opcode == MCT_OP_ACK)
		p->pmtu = 0;
	mct_fixup(p);
}

uint64_t mct_xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

uint64_t mct_random_value(uint64_t (*rnd)(void))
{
	static const uint64_t special[] = {
		0, 1, 4, 7, 8, 12, 13, 14, 31, 32, 0xff, 0x100, 0xffff,
		0xffffff, 0x1000000, 0x7fffffff, 0x80000000, 0x80000001,
		0xffffffff,
	};
	uint64_t v;

	if (rnd() & 1)
		return special[rnd() % (sizeof(special) / sizeof(special[0]))];
	v = rnd();
	return v >> (rnd() % 64);
}

void mct_random_fields(struct mct_pkt *p, uint64_t (*rnd)(void))
{
	p->dqpn = rnd() & 0xffffff;
	p->sqpn = rnd() & 0xffffff;
	p->psn = rnd();
	p->tsval = rnd();
	p->rmsn = rnd();
	p->imm = rnd();
	p->rkey = rnd();
	p->va = rnd();
	p->swap_add = rnd();
	p->compare = rnd();
	p->orig = rnd();
	p->qkey = rnd();
	p->nak_psn = rnd();
	p->ts_echo = rnd();
	p->delay = rnd();
	p->credit = rnd();
	p->ce_count = rnd();
	p->entropy = rnd();
	p->max_dgram = rnd();
	for (int w = 0; w < MCT_MAX_SACKW; w++)
		p->sack[w] = rnd();
}

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b + 2, v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, v >> 32);
	put32(b + 4, v);
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)get16(b) << 16 | get16(b + 2);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

static void build_ext(const struct mct_pkt *p, uint8_t *b)
{
	switch (p->opcode) {
	case MCT_OP_SEND:
		put32(b + 20, p->rmsn);
		put32(b + 24, p->offset);
		put32(b + 28, p->imm);
		break;
	case MCT_OP_WRITE:
		put32(b + 20, p->rkey);
		put64(b + 24, p->va);
		put32(b + 32, p->rmsn);
		put32(b + 36, p->msg_len);
		put32(b + 40, p->imm);
		break;
	case MCT_OP_READ_REQ:
		put64(b + 24, p->va);
		put32(b + 32, p->rkey);
		put32(b + 36, p->msg_len);
		put32(b + 40, p->offset);
		put32(b + 44, p->rmsn);
		put32(b + 48, p->rsvd1);
		put32(b + 52, p->rsvd2);
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		put64(b + 24, p->va);
		put32(b + 32, p->rkey);
		put32(b + 36, p->rsvd1);
		put64(b + 40, p->swap_add);
		put64(b + 48, p->compare);
		break;
	case MCT_OP_READ_RESP:
		put32(b + 24, p->offset);
		put32(b + 28, p->msg_len);
		break;
	case MCT_OP_ATOMIC_RESP:
		put64(b + 24, p->orig);
		break;
	case MCT_OP_UD_SEND:
		put32(b + 24, p->qkey);
		put32(b + 28, p->imm);
		break;
	case MCT_OP_ACK:
		b[24] = p->syndrome;
		b[25] = p->sack_words;
		b[26] = p->rnr_timer;
		b[27] = p->ack_flags;
		put32(b + 28, p->nak_psn);
		put32(b + 32, p->ts_echo);
		put32(b + 36, p->delay);
		put16(b + 40, p->ce_count);
		put16(b + 42, p->entropy);
		put32(b + 44, p->credit);
		put16(b + 48, p->max_dgram);
		put16(b + 50, p->ack_rsvd >> 32);
		put32(b + 52, p->ack_rsvd);
		for (int w = 0; w < MCT_MAX_SACKW && w < p->sack_words; w++)
			put64(b + 56 + 8 * w, p->sack[w]);
		break;
	}
}

size_t mct_build(const struct mct_pkt *p, uint8_t *buf, size_t cap)
{
	uint8_t sw = p->sack_words > MCT_MAX_SACKW ? MCT_MAX_SACKW : p->sack_words;
	uint32_t hl = mct_hdr_len(p->opcode, p->flags, sw);
	uint8_t hdr[MCT_MAX_HDR + 8];

	if (!hl)
		hl = 24;	/* unknown opcode: the base header alone */
	if (hl + (size_t)p->payload_len > cap)
		return 0;
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = (uint8_t)(p->version << 4 | (p->rsvd0 & 0x0f));
	hdr[1] = p->opcode;
	hdr[2] = p->flags;
	hdr[3] = p->hdr_words;
	put32(hdr + 4, p->dqpn);
	put32(hdr + 8, p->sqpn);
	put32(hdr + 12, p->psn);
	put32(hdr + 16, p->tsval);
	if (!is_data(p->opcode)) {
		put16(hdr + 20, p->pay_len);
		hdr[22] = p->pmtu;
		hdr[23] = p->rsvd23;
	}
	build_ext(p, hdr);
	memcpy(buf, hdr, hl);
	if (p->payload_len)
		memcpy(buf + hl, p->payload, p->payload_len);
	return hl + p->payload_len;
}

static void parse_ext(const uint8_t *b, struct mct_pkt *p)
{
	switch (p->opcode) {
	case MCT_OP_SEND:
		p->rmsn = get32(b + 20);
		p->offset = get32(b + 24);
		if (p->flags & (MCT_F_IMM | MCT_F_INV))
			p->imm = get32(b + 28);
		break;
	case MCT_OP_WRITE:
		p->rkey = get32(b + 20);
		p->va = get64(b + 24);
		if (p->flags & MCT_F_IMM) {
			p->rmsn = get32(b + 32);
			p->msg_len = get32(b + 36);
			p->imm = get32(b + 40);
		}
		break;
	case MCT_OP_READ_REQ:
		p->va = get64(b + 24);
		p->rkey = get32(b + 32);
		p->msg_len = get32(b + 36);
		p->offset = get32(b + 40);
		p->rmsn = get32(b + 44);
		p->rsvd1 = get32(b + 48);
		p->rsvd2 = get32(b + 52);
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		p->va = get64(b + 24);
		p->rkey = get32(b + 32);
		p->rsvd1 = get32(b + 36);
		p->swap_add = get64(b + 40);
		p->compare = get64(b + 48);
		break;
	case MCT_OP_READ_RESP:
		p->offset = get32(b + 24);
		p->msg_len = get32(b + 28);
		break;
	case MCT_OP_ATOMIC_RESP:
		p->orig = get64(b + 24);
		break;
	case MCT_OP_UD_SEND:
		p->qkey = get32(b + 24);
		p->imm = get32(b + 28);
		break;
	case MCT_OP_ACK:
		p->syndrome = b[24];
		p->rnr_timer = b[26];
		p->ack_flags = b[27];
		p->nak_psn = get32(b + 28);
		p->ts_echo = get32(b + 32);
		p->delay = get32(b + 36);
		p->ce_count = get16(b + 40);
		p->entropy = get16(b + 42);
		p->credit = get32(b + 44);
		p->max_dgram = get16(b + 48);
		p->ack_rsvd = (uint64_t)get16(b + 50) << 32 | get32(b + 52);
		for (int w = 0; w < p->sack_words; w++)
			p->sack[w] = get64(b + 56 + 8 * w);
		break;
	}
}

static struct mct_verdict reject(enum mct_reason r, const char *rule)
{
	struct mct_verdict v = { r, rule };

	return v;
}

/* rules 11.a..d: the data header of SEND and WRITE */
static struct mct_verdict check_data(const struct mct_pkt *p, size_t len,
				     uint32_t hl)
{
	struct mct_verdict v = { MCT_ACCEPT, NULL };
	uint64_t pay = len - hl;

	if (pay > 65535)
		return reject(MCT_BAD_PAY_LEN, "11.a");
	if (!pay && !(p->flags & MCT_F_LAST))
		return reject(MCT_BAD_PAY_LEN, "11.b");
	if (p->opcode == MCT_OP_SEND && (uint64_t)p->offset + pay > MCT_MSG_MAX)
		return reject(MCT_BAD_LENGTH, "11.c");
	if (p->opcode == MCT_OP_WRITE && (p->flags & MCT_F_IMM) &&
	    (p->msg_len > MCT_MSG_MAX || pay > p->msg_len))
		return reject(MCT_BAD_LENGTH, "11.d");
	return v;
}

/* rule 15: the extension of every opcode but SEND and WRITE */
static struct mct_verdict check_ext(const struct mct_pkt *p)
{
	struct mct_verdict v = { MCT_ACCEPT, NULL };
	uint64_t seg = 1ull << p->pmtu;
	uint64_t end = (uint64_t)p->offset + p->pay_len;

	switch (p->opcode) {
	case MCT_OP_READ_REQ:
		if (p->rsvd2)
			return reject(MCT_BAD_FIELD, "15.READ_REQ.a");
		if (p->rsvd1)
			return reject(MCT_BAD_FIELD, "15.READ_REQ.b");
		if (p->pay_len)
			return reject(MCT_BAD_PAY_LEN, "15.READ_REQ.c");
		if (p->offset % seg)
			return reject(MCT_BAD_LENGTH, "15.READ_REQ.d");
		if ((uint64_t)p->offset + p->msg_len > MCT_MSG_MAX)
			return reject(MCT_BAD_LENGTH, "15.READ_REQ.e");
		if (p->msg_len > 256 * seg)
			return reject(MCT_BAD_LENGTH, "15.READ_REQ.f");
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		if (p->pay_len)
			return reject(MCT_BAD_PAY_LEN, "15.ATOMIC.a");
		if (p->rsvd1)
			return reject(MCT_BAD_FIELD, "15.ATOMIC.b");
		if (p->va % 8)
			return reject(MCT_BAD_FIELD, "15.ATOMIC.c");
		if (p->opcode == MCT_OP_ATOMIC_FA && p->compare)
			return reject(MCT_BAD_FIELD, "15.ATOMIC.d");
		break;
	case MCT_OP_READ_RESP:
		if (p->pay_len > seg)
			return reject(MCT_BAD_PAY_LEN, "15.READ_RESP.a");
		if (p->msg_len > MCT_MSG_MAX)
			return reject(MCT_BAD_LENGTH, "15.READ_RESP.b");
		if (p->offset % seg)
			return reject(MCT_BAD_LENGTH, "15.READ_RESP.c");
		if (end > p->msg_len)
			return reject(MCT_BAD_LENGTH, "15.READ_RESP.d");
		if (end < p->msg_len && p->pay_len != seg)
			return reject(MCT_BAD_PAY_LEN, "15.READ_RESP.e");
		break;
	case MCT_OP_ATOMIC_RESP:
		if (p->pay_len)
			return reject(MCT_BAD_PAY_LEN, "15.ATOMIC_RESP.a");
		break;
	case MCT_OP_UD_SEND:
		if (p->pay_len > seg)
			return reject(MCT_BAD_PAY_LEN, "15.UD_SEND.a");
		if (p->psn)
			return reject(MCT_BAD_FIELD, "15.UD_SEND.b");
		if (!(p->flags & MCT_F_IMM) && p->imm)
			return reject(MCT_BAD_FIELD, "15.UD_SEND.c");
		break;
	case MCT_OP_ACK:
		if (p->pay_len)
			return reject(MCT_BAD_PAY_LEN, "15.ACK.a");
		if (p->syndrome > 4)
			return reject(MCT_BAD_FIELD, "15.ACK.b");
		if (p->rnr_timer > 31)
			return reject(MCT_BAD_FIELD, "15.ACK.c");
		if (p->ack_flags & ~0xf)
			return reject(MCT_BAD_FIELD, "15.ACK.d");
		if (p->ack_rsvd)
			return reject(MCT_BAD_FIELD, "15.ACK.e");
		break;
	}
	return v;
}

/* rules 1..10: what every packet shares */
static struct mct_verdict check_common(const uint8_t *b, size_t len,
				       struct mct_pkt *p)
{
	struct mct_verdict v = { MCT_ACCEPT, NULL };
	uint8_t f;

	if (len < 20)
		return reject(MCT_TRUNCATED, "1");
	p->version = b[0] >> 4;
	p->rsvd0 = b[0] & 0x0f;
	p->opcode = b[1];
	f = b[2];
	p->flags = f;
	p->hdr_words = b[3];
	p->dqpn = get32(b + 4);
	p->sqpn = get32(b + 8);
	p->psn = get32(b + 12);
	p->tsval = get32(b + 16);
	if (p->version != 2)
		return reject(MCT_BAD_VERSION, "2");
	if (p->rsvd0)
		return reject(MCT_BAD_FIELD, "3");
	if (!mct_known_op(p->opcode))
		return reject(MCT_BAD_OPCODE, "4");
	if (!is_data(p->opcode) && len < 24)
		return reject(MCT_TRUNCATED, "5");
	if ((f & ~mct_allowed_flags(p->opcode)) ||
	    ((f & MCT_F_IMM) && (f & MCT_F_INV)) ||
	    (p->opcode == MCT_OP_WRITE && (f & MCT_F_SOLICITED) &&
	     !(f & MCT_F_IMM)))
		return reject(MCT_BAD_FIELD, "6");
	if (p->opcode == MCT_OP_ACK) {
		if (len < 26)
			return reject(MCT_TRUNCATED, "7");
		p->sack_words = b[25];
		if (p->sack_words > MCT_MAX_SACKW)
			return reject(MCT_BAD_SACK, "7");
	}
	if (p->hdr_words * 4u != mct_hdr_len(p->opcode, f, p->sack_words))
		return reject(MCT_BAD_HDR_LEN, "8");
	if (p->hdr_words * 4u > len)
		return reject(MCT_TRUNCATED, "9");
	if (p->dqpn > 0xffffff || p->sqpn > 0xffffff)
		return reject(MCT_BAD_FIELD, "10");
	return v;
}

struct mct_verdict mct_parse(const uint8_t *b, size_t len, struct mct_pkt *p)
{
	struct mct_verdict v;
	uint32_t hl;

	memset(p, 0, sizeof(*p));
	v = check_common(b, len, p);
	if (v.reason)
		return v;
	hl = p->hdr_words * 4u;
	parse_ext(b, p);
	p->payload = b + hl;
	p->payload_len = (uint32_t)(len - hl);
	if (is_data(p->opcode)) {
		p->pay_len = (uint16_t)p->payload_len;
		return check_data(p, len, hl);
	}
	p->pay_len = get16(b + 20);
	p->pmtu = b[22];
	p->rsvd23 = b[23];
	if (p->pay_len != len - hl)
		return reject(MCT_BAD_PAY_LEN, "12");
	if (p->rsvd23)
		return reject(MCT_BAD_FIELD, "13");
	if (!(p->opcode == MCT_OP_ACK && !p->pmtu) &&
	    (p->pmtu < 8 || p->pmtu > 13 ||
	     (p->opcode == MCT_OP_UD_SEND && p->pmtu == 13)))
		return reject(MCT_BAD_PMTU, "14");
	return check_ext(p);
}

#define F(n, m) { n, offsetof(struct mct_pkt, m), sizeof(((struct mct_pkt *)0)->m) }

static const struct field { const char *name; size_t off, size; } fields[] = {
	F("version", version), F("rsvd0", rsvd0), F("opcode", opcode),
	F("flags", flags), F("hdrw", hdr_words), F("dqpn", dqpn),
	F("sqpn", sqpn), F("psn", psn), F("tsval", tsval),
	F("paylen", pay_len), F("pmtu", pmtu), F("rsvd23", rsvd23),
	F("rmsn", rmsn), F("offset", offset), F("imm", imm), F("rkey", rkey),
	F("msglen", msg_len), F("rsvd1", rsvd1), F("rsvd2", rsvd2),
	F("va", va), F("swap", swap_add), F("add", swap_add),
	F("compare", compare), F("orig", orig), F("qkey", qkey),
	F("syndrome", syndrome), F("sackw", sack_words),
	F("rnrt", rnr_timer), F("ackflags", ack_flags),
	F("nakpsn", nak_psn), F("tsecho", ts_echo), F("delay", delay),
	F("credit", credit), F("cecnt", ce_count), F("entropy", entropy),
	F("maxdgram", max_dgram), F("ackrsvd", ack_rsvd),
	F("sack0", sack[0]), F("sack1", sack[1]), F("sack2", sack[2]),
	F("sack3", sack[3]), F("len", payload_len),
};

static const struct field *field_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (!strcmp(fields[i].name, name))
			return &fields[i];
	return NULL;
}

int mct_field_set(struct mct_pkt *p, const char *name, uint64_t v)
{
	const struct field *f = field_find(name);
	uint8_t *m;

	if (!f)
		return -1;
	m = (uint8_t *)p + f->off;
	switch (f->size) {
	case 1:
		*m = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)m = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)m = (uint32_t)v;
		break;
	default:
		*(uint64_t *)m = v;
		break;
	}
	return 0;
}

int mct_field_get(const struct mct_pkt *p, const char *name, uint64_t *v)
{
	const struct field *f = field_find(name);
	const uint8_t *m;

	if (!f)
		return -1;
	m = (const uint8_t *)p + f->off;
	switch (f->size) {
	case 1:
		*v = *m;
		break;
	case 2:
		*v = *(const uint16_t *)m;
		break;
	case 4:
		*v = *(const uint32_t *)m;
		break;
	default:
		*v = *(const uint64_t *)m;
		break;
	}
	return 0;
}

int mct_format(const struct mct_pkt *p, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s flags=0x%02x dqpn=0x%x sqpn=0x%x psn=0x%x len=%u",
			 mct_op_name(p->opcode), p->flags, p->dqpn, p->sqpn,
			 p->psn, p->payload_len);

	if (p->opcode == MCT_OP_ACK && n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - n,
			      " syn=%u ackflags=0x%x nakpsn=0x%x sackw=%u sack0=0x%llx tsecho=0x%x entropy=%u credit=%u",
			      p->syndrome, p->ack_flags, p->nak_psn,
			      p->sack_words, (unsigned long long)p->sack[0],
			      p->ts_echo, p->entropy, p->credit);
	return n;
}

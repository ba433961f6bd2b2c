// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Differential test: the tester's codec (from the spec) against the
 * driver's mrc_wire_parse() (the engine, built in userspace unchanged).
 * Both get the same corpus from a seeded PRNG: valid packets of every
 * opcode built by the codec, their truncations, every header byte
 * mutated, and struct fields mutated with the lengths fixed up so that
 * the later rules are reached.  Accept/reject, the drop reason and, for
 * accepted packets, every parsed field must agree.
 *
 *   codec-diff [-n BASE_PACKETS] [-s SEED] [-v]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metaroce/mrc_wire.h>

#include "codec.h"

static uint64_t rng_state;
static unsigned long n_pkts, n_accept, n_diff, by_reason[MCT_REASON_NR];
static int verbose;

/* how often each Validation rule rejected: every rule must be reached */
static struct { const char *rule; unsigned long n; } rules[64];

static void count_rule(const char *rule)
{
	int i;

	for (i = 0; i < 64 && rules[i].rule; i++)
		if (!strcmp(rules[i].rule, rule))
			break;
	if (i < 64) {
		rules[i].rule = rule;
		rules[i].n++;
	}
}

static uint64_t rnd(void)
{
	return mct_xorshift(&rng_state);
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static const uint8_t ops[] = {
	MCT_OP_SEND, MCT_OP_WRITE, MCT_OP_READ_REQ, MCT_OP_ATOMIC_CS,
	MCT_OP_ATOMIC_FA, MCT_OP_UD_SEND, MCT_OP_READ_RESP,
	MCT_OP_ATOMIC_RESP, MCT_OP_ACK,
};

static uint8_t payload_buf[8192];

static uint8_t rnd_flags(uint8_t op)
{
	uint8_t f = rnd() & mct_allowed_flags(op);

	if ((f & MCT_F_IMM) && (f & MCT_F_INV))
		f &= ~(rnd() & 1 ? MCT_F_IMM : MCT_F_INV);
	if (op == MCT_OP_WRITE && !(f & MCT_F_IMM))
		f &= ~MCT_F_SOLICITED;
	return f;
}

static void valid_ext(struct mct_pkt *p)
{
	uint64_t seg = 1ull << p->pmtu, end;

	switch (p->opcode) {
	case MCT_OP_SEND:
		p->offset = rnd_below(MCT_MSG_MAX - p->payload_len + 1);
		break;
	case MCT_OP_WRITE:
		if (p->flags & MCT_F_IMM)
			p->msg_len = p->payload_len +
				rnd_below(MCT_MSG_MAX - p->payload_len + 1);
		break;
	case MCT_OP_READ_REQ:
		p->msg_len = rnd_below(256 * seg + 1);
		p->offset = rnd_below((MCT_MSG_MAX - p->msg_len) / seg + 1) * seg;
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		p->va &= ~7ull;
		if (p->opcode == MCT_OP_ATOMIC_FA)
			p->compare = 0;
		break;
	case MCT_OP_READ_RESP:
		p->offset = rnd_below(1000) * seg;
		if (p->payload_len == seg && (rnd() & 1))
			p->msg_len = p->offset + seg + rnd_below(1 << 20);
		else
			p->msg_len = p->offset + p->payload_len;
		end = p->offset + p->payload_len;
		if (end > p->msg_len)
			p->msg_len = end;
		break;
	case MCT_OP_UD_SEND:
		p->psn = 0;
		if (!(p->flags & MCT_F_IMM))
			p->imm = 0;
		break;
	case MCT_OP_ACK:
		p->syndrome = rnd_below(5);
		p->sack_words = rnd_below(5);
		p->rnr_timer = rnd_below(32);
		p->ack_flags = rnd_below(16);
		p->pmtu = rnd() & 1 ? 0 : 8 + rnd_below(6);
		break;
	}
}

static void random_valid(struct mct_pkt *p, uint8_t op)
{
	uint64_t seg;

	mct_template(p, op);
	p->flags = rnd_flags(op);
	mct_random_fields(p, rnd);
	p->pmtu = 8 + rnd_below(op == MCT_OP_UD_SEND ? 5 : 6);
	seg = 1ull << p->pmtu;
	p->payload = payload_buf;
	switch (op) {
	case MCT_OP_SEND:
	case MCT_OP_WRITE:
		p->payload_len = rnd_below(1500);
		if (!p->payload_len)
			p->flags |= MCT_F_LAST;
		break;
	case MCT_OP_READ_RESP:
		p->payload_len = rnd() & 1 ? seg : rnd_below(seg + 1);
		break;
	case MCT_OP_UD_SEND:
		p->payload_len = rnd_below(seg + 1);
		break;
	default:
		p->payload_len = 0;
	}
	valid_ext(p);
	mct_fixup(p);
}

/* a field that differs: why says which, with both values */
static int differs(uint64_t a, uint64_t b, const char *what, char *why)
{
	if (a == b)
		return 0;
	snprintf(why, 128, "%s codec 0x%llx driver 0x%llx", what,
		 (unsigned long long)a, (unsigned long long)b);
	return 1;
}

static const char *cmp_ext(const struct mct_pkt *c, const struct mrc_pkt *d)
{
	static char why[128];

	switch (c->opcode) {
	case MCT_OP_SEND:
		if (differs(c->rmsn, d->req.rmsn, "rmsn", why))
			return why;
		if (differs(c->offset, d->req.offset, "offset", why))
			return why;
		if (differs(c->imm, d->req.imm, "imm", why))
			return why;
		break;
	case MCT_OP_WRITE:
		if (differs(c->rkey, d->req.rkey, "rkey", why))
			return why;
		if (differs(c->va, d->req.va, "va", why))
			return why;
		if (differs(c->rmsn, d->req.rmsn, "rmsn", why))
			return why;
		if (differs(c->msg_len, d->req.msg_len, "msglen", why))
			return why;
		if (differs(c->imm, d->req.imm, "imm", why))
			return why;
		break;
	case MCT_OP_READ_REQ:
		if (differs(c->va, d->req.va, "va", why))
			return why;
		if (differs(c->rkey, d->req.rkey, "rkey", why))
			return why;
		if (differs(c->msg_len, d->req.msg_len, "msglen", why))
			return why;
		if (differs(c->offset, d->req.offset, "offset", why))
			return why;
		if (differs(c->rmsn, d->req.rmsn, "rmsn", why))
			return why;
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		if (differs(c->va, d->atomic.va, "va", why))
			return why;
		if (differs(c->rkey, d->atomic.rkey, "rkey", why))
			return why;
		if (differs(c->swap_add, d->atomic.swap_add, "swap_add", why))
			return why;
		if (differs(c->compare, d->atomic.compare, "compare", why))
			return why;
		break;
	case MCT_OP_READ_RESP:
		if (differs(c->offset, d->rresp.offset, "offset", why))
			return why;
		if (differs(c->msg_len, d->rresp.msg_len, "msglen", why))
			return why;
		break;
	case MCT_OP_ATOMIC_RESP:
		if (differs(c->orig, d->aresp.orig, "orig", why))
			return why;
		break;
	case MCT_OP_UD_SEND:
		if (differs(c->qkey, d->ud.qkey, "qkey", why))
			return why;
		if (differs(c->imm, d->ud.imm, "imm", why))
			return why;
		break;
	case MCT_OP_ACK:
		if (differs(c->syndrome, d->ack.syndrome, "syndrome", why))
			return why;
		if (differs(c->sack_words, d->ack.sack_words, "sackw", why))
			return why;
		if (differs(c->rnr_timer, d->ack.rnr_timer, "rnrt", why))
			return why;
		if (differs(c->ack_flags, d->ack.flags, "ackflags", why))
			return why;
		if (differs(c->nak_psn, d->ack.nak_psn, "nakpsn", why))
			return why;
		if (differs(c->ts_echo, d->ack.ts_echo, "tsecho", why))
			return why;
		if (differs(c->delay, d->ack.delay, "delay", why))
			return why;
		if (differs(c->ce_count, d->ack.ce_count, "cecnt", why))
			return why;
		if (differs(c->entropy, d->ack.entropy, "entropy", why))
			return why;
		if (differs(c->credit, d->ack.credit, "credit", why))
			return why;
		if (differs(c->max_dgram, d->ack.max_dgram, "maxdgram", why))
			return why;
		for (int w = 0; w < c->sack_words; w++)
			if (differs(c->sack[w], d->ack.sack[w], "sack", why))
				return why;
		break;
	}
	return NULL;
}

static const char *cmp_fields(const struct mct_pkt *c, const struct mrc_pkt *d)
{
	static char why[128];
	int data = c->opcode == MCT_OP_SEND || c->opcode == MCT_OP_WRITE;

	if (differs(c->opcode, d->opcode, "opcode", why))
		return why;
	if (differs(c->flags, d->flags, "flags", why))
		return why;
	if (differs(c->hdr_words * 4u, d->hdr_len, "hdr_len", why))
		return why;
	if (differs(c->payload_len, d->pay_len, "pay_len", why))
		return why;
	if (differs(data ? 0 : c->pmtu, d->pmtu_shift, "pmtu", why))
		return why;
	if (differs(c->dqpn, d->dqpn, "dqpn", why))
		return why;
	if (differs(c->sqpn, d->sqpn, "sqpn", why))
		return why;
	if (differs(c->psn, d->psn, "psn", why))
		return why;
	if (differs(c->tsval, d->tsval, "tsval", why))
		return why;
	return cmp_ext(c, d);
}

static void dump(const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len && i < 64; i++)
		fprintf(stderr, "%02x%s", b[i], i % 4 == 3 ? " " : "");
	fprintf(stderr, "%s\n", len > 64 ? "..." : "");
}

static void check(const uint8_t *dg, size_t len, const char *how)
{
	uint8_t *copy = malloc(len ? len : 1);	/* exact size, as a datagram */
	struct mct_pkt c;
	struct mrc_pkt d;
	struct mct_verdict v;
	const char *why = NULL;
	int dr;

	memcpy(copy, dg, len);
	v = mct_parse(copy, len, &c);
	dr = -mrc_wire_parse(copy, len, &d);
	n_pkts++;
	by_reason[v.reason]++;
	if (!v.reason)
		n_accept++;
	else
		count_rule(v.rule);
	if ((int)v.reason != dr)
		why = "verdict";
	else if (!dr)
		why = cmp_fields(&c, &d);
	if (why) {
		if (n_diff++ < 20 || verbose) {
			fprintf(stderr, "DIFF %s (%s, %zu B): codec %s rule %s, driver %d: %s\n",
				mct_op_name(dg[1 % (len ? len : 1)]), how, len,
				mct_reason_name(v.reason), v.rule ? v.rule : "-",
				dr, why);
			dump(copy, len);
		}
	}
	free(copy);
}

static const char *const mut_fields[] = {
	"version", "rsvd0", "opcode", "flags", "hdrw", "dqpn", "sqpn", "psn",
	"paylen", "pmtu", "rsvd23", "offset", "imm", "msglen", "rsvd1",
	"rsvd2", "va", "compare", "syndrome", "sackw", "rnrt", "ackflags",
	"ackrsvd", "len",
};

/* a struct field set to a random value, lengths fixed up or not */
static void mutate_field(const struct mct_pkt *base, uint8_t *buf)
{
	const char *name = mut_fields[rnd_below(ARRAY_SIZE(mut_fields))];
	struct mct_pkt p = *base;
	size_t len;

	mct_field_set(&p, name, mct_random_value(rnd));
	if (p.payload_len > sizeof(payload_buf))
		p.payload_len = rnd_below(sizeof(payload_buf));
	if (p.sack_words > MCT_MAX_SACKW && (rnd() & 1))
		p.sack_words = rnd_below(MCT_MAX_SACKW + 1);
	if (strcmp(name, "hdrw") && strcmp(name, "paylen") && (rnd() & 3))
		mct_fixup(&p);
	len = mct_build(&p, buf, 9000);
	if (len)
		check(buf, len, name);
}

static void one_base(uint8_t op, uint8_t *buf)
{
	struct mct_pkt p;
	size_t len, hl;
	uint8_t b;

	random_valid(&p, op);
	len = mct_build(&p, buf, 9000);
	hl = p.hdr_words * 4u;
	check(buf, len, "valid");
	/* truncations: every length through the header, some beyond */
	for (size_t l = 0; l < hl && l < len; l++)
		check(buf, l, "truncated");
	for (int i = 0; i < 3 && len > hl; i++)
		check(buf, hl + rnd_below(len - hl), "short payload");
	check(buf, len + 1 + rnd_below(64), "extended");	/* tail of buf */
	/* every header byte replaced */
	for (size_t i = 0; i < hl; i++) {
		b = buf[i];
		buf[i] = rnd() & 1 ? (uint8_t)rnd() : b ^ (1u << rnd_below(8));
		check(buf, len, "byte");
		buf[i] = b;
	}
	for (int i = 0; i < 24; i++)
		mutate_field(&p, buf + 9100);
}

/* rule 11.a: a data packet whose payload exceeds 65535 bytes */
static void big_payload(void)
{
	static uint8_t big[70000];
	struct mct_pkt p;
	size_t len;

	for (int op = MCT_OP_SEND; op <= MCT_OP_WRITE; op++) {
		mct_template(&p, op);
		len = mct_build(&p, big, sizeof(big));
		check(big, len + 65535, "payload 65535");
		check(big, len + 65536, "payload 65536");
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[20000];
	unsigned long base = 2000;
	int opt;

	rng_state = 0x9e3779b97f4a7c15ull;
	while ((opt = getopt(argc, argv, "n:s:v")) != -1) {
		switch (opt) {
		case 'n':
			base = strtoul(optarg, NULL, 0);
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-s SEED] [-v]\n", argv[0]);
			return 2;
		}
	}
	for (size_t i = 0; i < sizeof(payload_buf); i++)
		payload_buf[i] = (uint8_t)(i * 7 + 3);
	for (unsigned long i = 0; i < base; i++)
		for (size_t o = 0; o < sizeof(ops); o++)
			one_base(ops[o], buf);
	big_payload();
	printf("codec-diff: %lu packets, %lu accepted, %lu disagreements\n",
	       n_pkts, n_accept, n_diff);
	for (int r = 0; r < MCT_REASON_NR; r++)
		printf("  %-12s %lu\n", mct_reason_name(r), by_reason[r]);
	for (int i = 0; i < 64 && rules[i].rule; i++)
		printf("  rule %-16s %lu\n", rules[i].rule, rules[i].n);
	return n_diff ? 1 : 0;
}

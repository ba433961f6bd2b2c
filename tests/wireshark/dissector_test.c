// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host test of the Wireshark dissector tools/wireshark/metaroce.lua: writes
 * a capture of metaroce packets, has tshark dissect it with the dissector
 * and compares what it decoded with what was encoded.
 *
 * Valid packets of every opcode, flag and extension come from the driver's
 * encoder, mrc_wire_build(); a malformed packet for each Validation rule
 * and a seeded random corpus (mutated fields and bytes, truncations) from
 * the conformance tester's codec, which sets any field, reserved ones too.
 * The driver's parser mrc_wire_parse() is the oracle: a packet it accepts
 * must decode to the fields it parsed, without Malformed expert info; one
 * it rejects must carry Malformed expert info and metaroce.drop must name
 * the drop reason the parser returned.
 *
 *   dissector-test [-l LUA] [-o DIR] [-n RANDOM] [-s SEED] [-t TSHARK] [-v]
 *
 * One TAP line per check, then "dissector: N passed, N failed".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <metaroce/mrc_wire.h>

#include "codec.h"

#define MAX_FRAMES	6000
#define MAX_DGRAM	9000
#define MAX_VALS	260	/* 128 SACK blocks at most */
#define HEUR_SPORT	47001	/* ports no dissector of tshark claims */
#define HEUR_DPORT	47002
#define GROUP_MALFORMED	0x07000000ull	/* PI_MALFORMED */
#define GROUP_PROTOCOL	0x09000000ull	/* PI_PROTOCOL */

enum kind {
	K_VALID,	/* hand-made valid packets (mrc_wire_build) */
	K_RULE,		/* one per Validation rule */
	K_RANDOM,	/* seeded random corpus */
	K_HEUR,		/* valid packets on other UDP ports */
	K_FOREIGN,	/* not metaroce, on other UDP ports */
	K_EDGE,		/* cut by the snap length, or over IPv6 */
	K_NR
};

struct frame {
	u8 *dg;			/* the UDP payload */
	u32 len;		/* its length */
	u32 snap;		/* bytes of it in the capture */
	u16 sport, dport;
	bool ipv6;
	enum kind kind;
	const char *what;	/* the case, for messages */
	int val;		/* K_RULE: the MRC-VAL rule number */
	bool warn;		/* K_VALID: a sender rule is broken */
	int drop;		/* the oracle's verdict: enum mrc_drop */
	struct mrc_pkt p;	/* what it parsed */
};

static struct frame frames[MAX_FRAMES];
static unsigned int n_frames;
static int verbose;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static u8 pattern[MAX_DGRAM];

static const char *const drop_names[] = {
	"", "truncated", "bad_version", "bad_opcode", "bad_hdr_len",
	"bad_pay_len", "bad_field", "bad_pmtu", "bad_length", "bad_sack",
};

static const u8 opcodes[] = {
	MRC_OP_SEND, MRC_OP_WRITE, MRC_OP_READ_REQ, MRC_OP_ATOMIC_CS,
	MRC_OP_ATOMIC_FA, MRC_OP_UD_SEND, MRC_OP_READ_RESP,
	MRC_OP_ATOMIC_RESP, MRC_OP_ACK,
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("dissector-test: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	printf("dissector: 0 passed, 1 failed\n");
	exit(1);
}

/* --- results ----------------------------------------------------------- */

static int t_n, t_pass, t_fail;

static void t_result(bool ok, const char *desc, const char *detail)
{
	t_n++;
	if (ok) {
		t_pass++;
		printf("ok %d - %s\n", t_n, desc);
		return;
	}
	t_fail++;
	printf("not ok %d - %s\n", t_n, desc);
	if (detail && *detail)
		printf("%s", detail);
}

/* failure details of one check, at most 10 lines kept */
struct notes {
	unsigned int n;
	char text[4096];
};

static void note(struct notes *nt, const char *fmt, ...)
{
	size_t used = strlen(nt->text);
	va_list ap;

	if (nt->n++ >= 10 && !verbose)
		return;
	if (used + 8 >= sizeof(nt->text))
		return;
	used += snprintf(nt->text + used, sizeof(nt->text) - used, "#   ");
	va_start(ap, fmt);
	vsnprintf(nt->text + used, sizeof(nt->text) - used - 1, fmt, ap);
	va_end(ap);
	used = strlen(nt->text);
	snprintf(nt->text + used, sizeof(nt->text) - used, "\n");
}

/* --- the corpus -------------------------------------------------------- */

static uint64_t rnd(void)
{
	return mct_xorshift(&rng_state);
}

static u64 rnd_below(u64 n)
{
	return n ? rnd() % n : 0;
}

static struct frame *add_frame(enum kind kind, const char *what,
			       const void *dg, u32 len)
{
	struct frame *fr;

	if (n_frames == MAX_FRAMES)
		die("more than %d frames", MAX_FRAMES);
	if (len > MAX_DGRAM)
		die("%s: datagram of %u bytes", what, len);
	fr = &frames[n_frames++];
	memset(fr, 0, sizeof(*fr));
	fr->dg = malloc(len ? len : 1);
	if (!fr->dg)
		die("out of memory");
	memcpy(fr->dg, dg, len);
	fr->len = len;
	fr->snap = len;
	fr->kind = kind;
	fr->what = what;
	fr->sport = 49152 + rnd_below(16384);
	fr->dport = MRC_DEFAULT_UDP_PORT;
	fr->drop = -mrc_wire_parse(fr->dg, len, &fr->p);
	return fr;
}

static struct mrc_pkt pkt(u8 opcode, u8 flags)
{
	struct mrc_pkt p;

	memset(&p, 0, sizeof(p));
	p.opcode = opcode;
	p.flags = flags;
	p.dqpn = 0x123456;
	p.sqpn = 0xabcdef;
	p.psn = 0x1000;
	p.tsval = 0x0a0b0c0d;
	return p;
}

/* a valid packet from the driver's encoder: header of @p, @pay bytes after */
static struct frame *valid(enum kind kind, const char *what,
			   struct mrc_pkt *p, u32 pay)
{
	u8 buf[MAX_DGRAM];
	struct frame *fr;
	u32 n;

	p->pay_len = pay;
	n = mrc_wire_build(buf, p);
	if (!n || n + pay > sizeof(buf))
		die("%s: mrc_wire_build failed", what);
	memcpy(buf + n, pattern, pay);
	fr = add_frame(kind, what, buf, n + pay);
	if (fr->drop)
		die("%s: mrc_wire_parse rejects it (%s)", what,
		    drop_names[fr->drop]);
	return fr;
}

static void valid_data(void)
{
	struct mrc_pkt p;

	p = pkt(MRC_OP_SEND, 0);
	p.req.rmsn = 5;
	valid(K_VALID, "SEND first segment", &p, 1000);
	p.flags = MRC_F_LAST | MRC_F_ACKREQ | MRC_F_SOLICITED | MRC_F_IMM;
	p.req.offset = 1000;
	p.req.imm = 0xcafef00d;
	valid(K_VALID, "SEND_WITH_IMM last segment, solicited", &p, 24);
	p.flags = MRC_F_LAST | MRC_F_ACKREQ | MRC_F_INV;
	p.req.offset = 0;
	p.req.imm = 0xdeadbeef;
	valid(K_VALID, "SEND_WITH_INV of zero bytes", &p, 0);
	p.flags = MRC_F_RETX | MRC_F_ORDERED | MRC_F_CREDIT;
	p.req.offset = 4096;
	valid(K_VALID, "SEND resent, ordered, credit", &p, 512);
	p.flags = MRC_F_LAST | MRC_F_ACKREQ;
	p.req.offset = MRC_MAX_MSG_LEN - 100;
	valid(K_VALID, "SEND ending at 2^31", &p, 100);

	/* the WRITE_WITH_IMM packet of the spec's byte table */
	p = pkt(MRC_OP_WRITE, MRC_F_ACKREQ | MRC_F_LAST | MRC_F_IMM);
	p.req.rkey = 0xdeadbeef;
	p.req.va = 0x1122334455667788ull;
	p.req.rmsn = 9;
	p.req.msg_len = 65536;
	p.req.imm = 0xcafef00d;
	valid(K_VALID, "WRITE_WITH_IMM last segment (spec example)", &p, 736);
	p.flags |= MRC_F_SOLICITED;
	p.req.msg_len = 736;
	valid(K_VALID, "WRITE_WITH_IMM of one packet, solicited", &p, 736);
	p = pkt(MRC_OP_WRITE, 0);
	p.req.rkey = 0x1234;
	p.req.va = 0x7f0000001000ull;
	valid(K_VALID, "WRITE segment", &p, 1024);
	p.flags = MRC_F_RETX | MRC_F_ORDERED | MRC_F_CREDIT | MRC_F_LAST;
	valid(K_VALID, "WRITE empty last packet, resent, ordered", &p, 0);
}

static void valid_read_atomic(void)
{
	struct mrc_pkt p;

	p = pkt(MRC_OP_READ_REQ, MRC_F_ACKREQ | MRC_F_LAST);
	p.pmtu_shift = 12;
	p.req.va = 0x10000;
	p.req.rkey = 77;
	p.req.msg_len = 10000;
	p.req.offset = 8192;
	valid(K_VALID, "READ_REQ", &p, 0);
	p.flags = MRC_F_ACKREQ | MRC_F_RETX | MRC_F_CREDIT;
	p.pmtu_shift = 13;
	p.req.offset = 0;
	p.req.msg_len = MRC_READ_CHUNK << 13;
	valid(K_VALID, "READ_REQ of 256 jumbo segments, resent", &p, 0);
	p.flags = MRC_F_ACKREQ | MRC_F_LAST;
	p.pmtu_shift = 8;
	p.req.msg_len = 0;
	valid(K_VALID, "READ_REQ of zero bytes", &p, 0);

	p = pkt(MRC_OP_ATOMIC_CS, MRC_F_ACKREQ);
	p.pmtu_shift = 10;
	p.atomic.va = 0x2008;
	p.atomic.rkey = 5;
	p.atomic.swap_add = 0x1111222233334444ull;
	p.atomic.compare = 0x5555666677778888ull;
	valid(K_VALID, "ATOMIC_CS", &p, 0);
	p.flags = MRC_F_ACKREQ | MRC_F_RETX | MRC_F_CREDIT;
	valid(K_VALID, "ATOMIC_CS resent, credit", &p, 0);
	p.opcode = MRC_OP_ATOMIC_FA;
	p.pmtu_shift = 12;
	p.atomic.swap_add = ~0ull;
	p.atomic.compare = 0;
	valid(K_VALID, "ATOMIC_FA resent, credit", &p, 0);

	p = pkt(MRC_OP_READ_RESP, 0);
	p.pmtu_shift = 10;
	p.rresp.offset = 1024;
	p.rresp.msg_len = 4096;
	valid(K_VALID, "READ_RESP full segment", &p, 1024);
	p.flags = MRC_F_RETX;
	p.rresp.offset = 3072;
	p.rresp.msg_len = 3500;
	valid(K_VALID, "READ_RESP last, short, RETX", &p, 428);
	p.flags = 0;
	p.pmtu_shift = 13;
	p.rresp.offset = 0;
	p.rresp.msg_len = 8192;
	valid(K_VALID, "READ_RESP jumbo segment", &p, 8192);

	p = pkt(MRC_OP_ATOMIC_RESP, 0);
	p.pmtu_shift = 12;
	p.aresp.orig = 0x0102030405060708ull;
	valid(K_VALID, "ATOMIC_RESP", &p, 0);
	p.flags = MRC_F_RETX;
	valid(K_VALID, "ATOMIC_RESP with RETX", &p, 0);
}

static void valid_ud(void)
{
	struct mrc_pkt p;

	/* the spec's UD_SEND example: a MAD to the GSI QP */
	p = pkt(MRC_OP_UD_SEND, 0);
	p.dqpn = 1;
	p.sqpn = 0x42;
	p.psn = 0;
	p.pmtu_shift = 10;
	p.ud.qkey = 0x80010000;
	valid(K_VALID, "UD_SEND to the GSI QP (spec example)", &p, 256);
	p.flags = MRC_F_SOLICITED | MRC_F_IMM;
	p.dqpn = 0x77;
	p.pmtu_shift = 12;
	p.ud.qkey = 0x11111111;
	p.ud.imm = 7;
	valid(K_VALID, "UD_SEND with immediate data, solicited", &p, 4096);
}

static struct mrc_pkt ack(u32 cum, u8 sack_words)
{
	struct mrc_pkt p = pkt(MRC_OP_ACK, 0);

	p.psn = cum;
	p.ack.sack_words = sack_words;
	p.ack.ts_echo = 0x0a0b0000;
	p.ack.delay = 37;
	p.ack.entropy = 0xc123;
	p.ack.credit = 16;
	p.ack.max_dgram = 8972;
	p.pmtu_shift = 12;
	return p;
}

static void valid_ack(void)
{
	static const char *const what[] = {
		"ACK, CE, no SACK", "ACK, DUP, one SACK word",
		"ACK, OOO, two SACK words", "ACK, DUP and HELD, three SACK words",
		"ACK, CE and DUP, four SACK words",
	};
	static const u8 aflags[] = {
		MRC_ACKF_CE, MRC_ACKF_DUP, MRC_ACKF_OOO,
		MRC_ACKF_DUP | MRC_ACKF_HELD, MRC_ACKF_CE | MRC_ACKF_DUP,
	};
	static const u64 sack[] = {
		0x1, 0xff00ff00ff00ff00ull, 0xaaaaaaaaaaaaaaaaull,
		0x8000000000000001ull,
	};
	static const char *const nak_what[] = {
		"", "RNR NAK", "INV_REQ NAK", "REM_ACCESS NAK", "REM_OP NAK",
	};
	struct mrc_pkt p;
	int w, i;

	for (w = 0; w <= MRC_ACK_MAX_SACKW; w++) {
		p = ack(0x2000 + w, w);
		p.ack.flags = aflags[w];
		if (aflags[w] & MRC_ACKF_DUP)
			p.ack.nak_psn = 0x1ff0;
		p.ack.ce_count = w;
		p.pmtu_shift = w ? 7 + w : 0;
		p.ack.credit = w & 1 ? 0 : 16;
		p.ack.max_dgram = w & 1 ? 0 : 1472;
		for (i = 0; i < w; i++)
			p.ack.sack[i] = sack[i];
		valid(K_VALID, what[w], &p, 0);
	}
	p.pmtu_shift = 13;
	valid(K_VALID, "ACK advertising jumbo READ segments", &p, 0);
	for (i = MRC_SYN_RNR; i <= MRC_SYN_REM_OP; i++) {
		p = ack(0x3000, 1);
		p.ack.syndrome = i;
		p.ack.nak_psn = 0x3000 + i;
		p.ack.rnr_timer = i == MRC_SYN_RNR ? 14 : 0;
		p.ack.sack[0] = 0x6;
		valid(K_VALID, nak_what[i], &p, 0);
	}
	/* blocks that cross the end of the PSN space */
	p = ack(0xfffffff0, 1);
	p.ack.sack[0] = 0xfffffULL << 10;
	valid(K_VALID, "ACK with a SACK block across 2^32", &p, 0);
	p = ack(0x100, 4);
	for (i = 0; i < 4; i++)
		p.ack.sack[i] = ~0ull;
	valid(K_VALID, "ACK with 256 PSNs SACKed in one block", &p, 0);
}

/* valid for a receiver, but the sender broke a rule only the spec states */
static void valid_warn(void)
{
	struct mrc_pkt p;

	p = ack(0x4000, 0);
	p.ack.nak_psn = 77;
	valid(K_VALID, "ACK without DUP with a NAK PSN (MRC-HDR-17)", &p, 0)->warn = true;
	p = ack(0x4000, 2);
	p.ack.sack[0] = 1;
	valid(K_VALID, "ACK with a trailing zero SACK word (MRC-ACK-3)", &p, 0)->warn = true;
	p = ack(0x4000, 0);
	p.ack.flags = MRC_ACKF_HELD;
	valid(K_VALID, "ACK with HELD but not DUP", &p, 0)->warn = true;
	p = pkt(MRC_OP_SEND, MRC_F_SOLICITED);
	valid(K_VALID, "SEND with SOLICITED but not LAST (MRC-OPC-5)", &p, 64)->warn = true;
}

static void heur_edge(void)
{
	static const char foreign[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";
	struct frame *fr;
	struct mrc_pkt p;

	p = pkt(MRC_OP_WRITE, MRC_F_LAST | MRC_F_ACKREQ);
	p.req.va = 0x1000;
	p.req.rkey = 0x99;
	valid(K_HEUR, "WRITE on other ports", &p, 100);
	p = pkt(MRC_OP_READ_REQ, MRC_F_ACKREQ);
	p.pmtu_shift = 10;
	p.req.msg_len = 2048;
	valid(K_HEUR, "READ_REQ on other ports", &p, 0);
	p = ack(0x5000, 2);
	p.ack.sack[0] = 0xf0;
	p.ack.sack[1] = 0x1;
	valid(K_HEUR, "ACK on other ports", &p, 0);
	add_frame(K_FOREIGN, "HTTP request on other ports", foreign,
		  sizeof(foreign) - 1);
	for (fr = &frames[n_frames - 4]; fr < &frames[n_frames]; fr++) {
		fr->sport = HEUR_SPORT;
		fr->dport = HEUR_DPORT;
	}

	p = pkt(MRC_OP_SEND, MRC_F_LAST | MRC_F_ACKREQ | MRC_F_IMM);
	p.req.imm = 3;
	valid(K_EDGE, "SEND cut by the snap length after its header", &p, 1400)->snap = 32;
	p = pkt(MRC_OP_READ_RESP, 0);
	p.pmtu_shift = 10;
	p.rresp.msg_len = 4096;
	valid(K_EDGE, "READ_RESP cut 10 bytes into its payload", &p, 1024)->snap = 42;
	p = ack(0x6000, 4);
	p.ack.sack[3] = 0x8000;
	valid(K_EDGE, "ACK of four SACK words, captured to its last byte", &p, 0)->snap = 88;
	p = pkt(MRC_OP_WRITE, MRC_F_LAST | MRC_F_ACKREQ | MRC_F_IMM);
	p.req.msg_len = 500;
	valid(K_EDGE, "WRITE_WITH_IMM over IPv6", &p, 500)->ipv6 = true;
	p = ack(0x6000, 1);
	p.ack.sack[0] = 0x3;
	valid(K_EDGE, "ACK over IPv6", &p, 0)->ipv6 = true;
}

/* --- one packet for each Validation rule (the codec sets any field) ---- */

static struct mct_pkt tmpl(u8 opcode, u32 payload)
{
	struct mct_pkt p;

	mct_template(&p, opcode);
	p.payload = pattern;
	p.payload_len = payload;
	mct_fixup(&p);
	return p;
}

/* @p as built, or its first @cut bytes (cut < 0: all) */
static void rule(int val, int reason, const struct mct_pkt *p, int cut,
		 const char *what)
{
	u8 buf[MAX_DGRAM];
	struct frame *fr;
	size_t len = mct_build(p, buf, sizeof(buf));

	if (!len)
		die("MRC-VAL-%d %s: cannot build", val, what);
	if (cut >= 0)
		len = cut;
	fr = add_frame(K_RULE, what, buf, len);
	fr->val = val;
	if (fr->drop != reason)
		die("MRC-VAL-%d %s: the driver's parser says %s, the case %s",
		    val, what, drop_names[fr->drop], drop_names[reason]);
}

static void rules_head(void)
{
	static const u8 bad_ops[] = { 0x00, 0x07, 0x12, 0x21, 0xff };
	static const struct { u8 op, flags; } bad_flags[] = {
		{ MCT_OP_ACK, MCT_F_ACKREQ }, { MCT_OP_READ_RESP, MCT_F_LAST },
		{ MCT_OP_UD_SEND, MCT_F_ACKREQ }, { MCT_OP_ATOMIC_CS, MCT_F_LAST },
		{ MCT_OP_READ_REQ, MCT_F_IMM }, { MCT_OP_WRITE, MCT_F_INV },
		{ MCT_OP_ATOMIC_RESP, MCT_F_CREDIT }, { MCT_OP_UD_SEND, MCT_F_RETX },
	};
	struct mct_pkt p;
	size_t i;

	p = tmpl(MCT_OP_SEND, 64);
	rule(2, MRC_DROP_TRUNCATED, &p, 19, "19 bytes");
	rule(2, MRC_DROP_TRUNCATED, &p, 0, "empty datagram");
	p.version = 1;
	rule(3, MRC_DROP_BAD_VERSION, &p, -1, "version 1");
	p = tmpl(MCT_OP_ACK, 0);
	p.version = 3;
	rule(3, MRC_DROP_BAD_VERSION, &p, -1, "version 3");
	p = tmpl(MCT_OP_READ_RESP, 0);
	p.rsvd0 = 1;
	rule(4, MRC_DROP_BAD_FIELD, &p, -1, "reserved nibble");
	for (i = 0; i < ARRAY_SIZE(bad_ops); i++) {
		p = tmpl(MCT_OP_READ_RESP, 0);
		p.opcode = bad_ops[i];
		rule(5, MRC_DROP_BAD_OPCODE, &p, -1, "unknown opcode");
	}
	p = tmpl(MCT_OP_READ_RESP, 0);
	rule(6, MRC_DROP_TRUNCATED, &p, 23, "READ_RESP of 23 bytes");
	for (i = 0; i < ARRAY_SIZE(bad_flags); i++) {
		p = tmpl(bad_flags[i].op, 0);
		p.flags |= bad_flags[i].flags;
		mct_fixup(&p);
		rule(7, MRC_DROP_BAD_FIELD, &p, -1, "flag not allowed");
	}
	p = tmpl(MCT_OP_SEND, 8);
	p.flags |= MCT_F_IMM | MCT_F_INV;
	mct_fixup(&p);
	rule(8, MRC_DROP_BAD_FIELD, &p, -1, "SEND with IMM and INV");
	p = tmpl(MCT_OP_WRITE, 8);
	p.flags |= MCT_F_SOLICITED;
	rule(9, MRC_DROP_BAD_FIELD, &p, -1, "WRITE solicited without IMM");
	p = tmpl(MCT_OP_ACK, 0);
	rule(10, MRC_DROP_TRUNCATED, &p, 25, "ACK of 25 bytes");
	p.sack_words = 5;
	mct_fixup(&p);
	rule(11, MRC_DROP_BAD_SACK, &p, -1, "5 SACK words");
	p = tmpl(MCT_OP_SEND, 8);
	p.hdr_words = 8;
	rule(12, MRC_DROP_BAD_HDR_LEN, &p, -1, "SEND of 8 header words");
	p = tmpl(MCT_OP_ACK, 0);
	p.sack_words = 2;
	p.sack[1] = 1;
	p.hdr_words = 16;
	rule(12, MRC_DROP_BAD_HDR_LEN, &p, -1, "ACK with 2 SACK words in 16 words");
	p = tmpl(MCT_OP_WRITE, 0);
	p.flags |= MCT_F_IMM;
	mct_fixup(&p);
	rule(13, MRC_DROP_TRUNCATED, &p, 40, "WRITE_WITH_IMM of 40 bytes");
	p = tmpl(MCT_OP_ACK, 0);
	p.sack_words = 3;
	mct_fixup(&p);
	rule(13, MRC_DROP_TRUNCATED, &p, 70, "ACK with 3 SACK words in 70 bytes");
	p = tmpl(MCT_OP_READ_REQ, 0);
	p.dqpn = 0x01000012;
	rule(14, MRC_DROP_BAD_FIELD, &p, -1, "destination QPN above 24 bits");
	p = tmpl(MCT_OP_WRITE, 16);
	p.sqpn = 0x80000034;
	rule(14, MRC_DROP_BAD_FIELD, &p, -1, "source QPN above 24 bits");
}

static void rules_data(void)
{
	struct mct_pkt p;

	p = tmpl(MCT_OP_SEND, 0);
	p.flags = MCT_F_ACKREQ;
	rule(15, MRC_DROP_BAD_PAY_LEN, &p, -1, "empty SEND without LAST");
	p = tmpl(MCT_OP_SEND, 64);
	p.offset = 0x7fffffc1;
	rule(16, MRC_DROP_BAD_LENGTH, &p, -1, "SEND ending beyond 2^31");
	p = tmpl(MCT_OP_WRITE, 64);
	p.flags |= MCT_F_IMM;
	p.msg_len = 0x80000001;
	mct_fixup(&p);
	rule(17, MRC_DROP_BAD_LENGTH, &p, -1, "WRITE_WITH_IMM longer than 2^31");
	p.msg_len = 50;
	rule(18, MRC_DROP_BAD_LENGTH, &p, -1, "WRITE_WITH_IMM payload beyond its length");
}

static void rules_base(void)
{
	struct mct_pkt p;

	p = tmpl(MCT_OP_READ_RESP, 0);
	p.pay_len = 5;
	rule(19, MRC_DROP_BAD_PAY_LEN, &p, -1, "Payload length not the datagram's");
	p = tmpl(MCT_OP_ATOMIC_RESP, 0);
	p.rsvd23 = 1;
	rule(20, MRC_DROP_BAD_FIELD, &p, -1, "reserved byte 23");
	p = tmpl(MCT_OP_READ_REQ, 0);
	p.pmtu = 7;
	rule(21, MRC_DROP_BAD_PMTU, &p, -1, "READ_REQ PMTU shift 7");
	p = tmpl(MCT_OP_READ_RESP, 0);
	p.pmtu = 14;
	rule(21, MRC_DROP_BAD_PMTU, &p, -1, "READ_RESP PMTU shift 14");
	p = tmpl(MCT_OP_ACK, 0);
	p.pmtu = 5;
	rule(21, MRC_DROP_BAD_PMTU, &p, -1, "ACK PMTU shift 5");
	p = tmpl(MCT_OP_UD_SEND, 0);
	p.pmtu = 13;
	rule(22, MRC_DROP_BAD_PMTU, &p, -1, "UD_SEND PMTU shift 13");
}

static void rules_read_atomic(void)
{
	struct mct_pkt p;

	p = tmpl(MCT_OP_READ_REQ, 0);
	p.rsvd2 = 1;
	rule(23, MRC_DROP_BAD_FIELD, &p, -1, "READ_REQ reserved word 52");
	p = tmpl(MCT_OP_READ_REQ, 0);
	p.rsvd1 = 1;
	rule(24, MRC_DROP_BAD_FIELD, &p, -1, "READ_REQ reserved word 48");
	p = tmpl(MCT_OP_READ_REQ, 4);
	rule(25, MRC_DROP_BAD_PAY_LEN, &p, -1, "READ_REQ with payload");
	p = tmpl(MCT_OP_READ_REQ, 0);
	p.offset = 100;
	rule(26, MRC_DROP_BAD_LENGTH, &p, -1, "READ_REQ offset off a segment");
	p.offset = 0x7ffffc00;
	p.msg_len = 0x800;
	rule(27, MRC_DROP_BAD_LENGTH, &p, -1, "READ_REQ beyond 2^31");
	p.offset = 0;
	p.msg_len = 256 * 1024 + 1;
	rule(28, MRC_DROP_BAD_LENGTH, &p, -1, "READ_REQ of more than 256 segments");
	p = tmpl(MCT_OP_ATOMIC_CS, 8);
	rule(29, MRC_DROP_BAD_PAY_LEN, &p, -1, "atomic with payload");
	p = tmpl(MCT_OP_ATOMIC_FA, 0);
	p.rsvd1 = 1;
	rule(30, MRC_DROP_BAD_FIELD, &p, -1, "atomic reserved word");
	p = tmpl(MCT_OP_ATOMIC_CS, 0);
	p.va = 0x1004;
	rule(31, MRC_DROP_BAD_FIELD, &p, -1, "atomic VA not aligned");
	p = tmpl(MCT_OP_ATOMIC_FA, 0);
	p.compare = 1ull << 40;
	rule(32, MRC_DROP_BAD_FIELD, &p, -1, "ATOMIC_FA with Compare");
}

static void rules_resp_ud(void)
{
	struct mct_pkt p;

	p = tmpl(MCT_OP_READ_RESP, 1025);
	p.msg_len = 1025;
	rule(33, MRC_DROP_BAD_PAY_LEN, &p, -1, "READ_RESP above a segment");
	p = tmpl(MCT_OP_READ_RESP, 0);
	p.msg_len = 0x80000400;
	rule(34, MRC_DROP_BAD_LENGTH, &p, -1, "READ_RESP length above 2^31");
	p = tmpl(MCT_OP_READ_RESP, 0);
	p.offset = 512;
	p.msg_len = 512;
	rule(35, MRC_DROP_BAD_LENGTH, &p, -1, "READ_RESP offset off a segment");
	p = tmpl(MCT_OP_READ_RESP, 1024);
	p.msg_len = 512;
	rule(36, MRC_DROP_BAD_LENGTH, &p, -1, "READ_RESP ending beyond its length");
	p = tmpl(MCT_OP_READ_RESP, 500);
	p.msg_len = 4096;
	rule(37, MRC_DROP_BAD_PAY_LEN, &p, -1, "READ_RESP short before the end");
	p = tmpl(MCT_OP_ATOMIC_RESP, 8);
	rule(38, MRC_DROP_BAD_PAY_LEN, &p, -1, "ATOMIC_RESP with payload");
	p = tmpl(MCT_OP_UD_SEND, 257);
	p.pmtu = 8;
	rule(39, MRC_DROP_BAD_PAY_LEN, &p, -1, "UD_SEND above its MTU");
	p = tmpl(MCT_OP_UD_SEND, 0);
	p.psn = 5;
	rule(40, MRC_DROP_BAD_FIELD, &p, -1, "UD_SEND with a PSN");
	p = tmpl(MCT_OP_UD_SEND, 0);
	p.imm = 7;
	rule(41, MRC_DROP_BAD_FIELD, &p, -1, "UD_SEND immediate field without IMM");
}

static void rules_ack(void)
{
	struct mct_pkt p;

	p = tmpl(MCT_OP_ACK, 4);
	rule(42, MRC_DROP_BAD_PAY_LEN, &p, -1, "ACK with payload");
	p = tmpl(MCT_OP_ACK, 0);
	p.syndrome = 5;
	rule(43, MRC_DROP_BAD_FIELD, &p, -1, "syndrome 5");
	p = tmpl(MCT_OP_ACK, 0);
	p.rnr_timer = 32;
	rule(44, MRC_DROP_BAD_FIELD, &p, -1, "RNR timer 32");
	p = tmpl(MCT_OP_ACK, 0);
	p.ack_flags = 0x10;
	rule(45, MRC_DROP_BAD_FIELD, &p, -1, "ACK flag 0x10");
	p.ack_flags = 0x80 | MCT_ACKF_DUP;
	rule(45, MRC_DROP_BAD_FIELD, &p, -1, "ACK flag 0x80");
	p = tmpl(MCT_OP_ACK, 0);
	p.ack_rsvd = 1;
	rule(46, MRC_DROP_BAD_FIELD, &p, -1, "ACK reserved byte 55");
	p.ack_rsvd = 1ull << 40;
	rule(46, MRC_DROP_BAD_FIELD, &p, -1, "ACK reserved byte 50");
}

/* --- the random corpus ------------------------------------------------- */

/* a random packet of @op that the spec accepts, payloads of 1200 at most */
static void random_valid(struct mct_pkt *p, u8 op)
{
	u64 seg;

	mct_template(p, op);
	p->flags = rnd() & mct_allowed_flags(op);
	if ((p->flags & MCT_F_IMM) && (p->flags & MCT_F_INV))
		p->flags &= ~(rnd() & 1 ? MCT_F_IMM : MCT_F_INV);
	if (op == MCT_OP_WRITE && !(p->flags & MCT_F_IMM))
		p->flags &= ~MCT_F_SOLICITED;
	mct_random_fields(p, rnd);
	if (op == MCT_OP_UD_SEND)
		p->psn = 0;
	p->syndrome = rnd_below(5);
	p->sack_words = rnd_below(5);
	p->rnr_timer = rnd_below(32);
	p->ack_flags = rnd_below(16);
	for (int w = 0; w < MCT_MAX_SACKW; w++)
		p->sack[w] = rnd() >> rnd_below(64);
	p->pmtu = 8 + rnd_below(op == MCT_OP_UD_SEND ? 5 : 6);
	if (op == MCT_OP_ACK && (rnd() & 1))
		p->pmtu = 0;
	if (op == MCT_OP_UD_SEND || op == MCT_OP_READ_RESP)
		p->pmtu = 8 + rnd_below(3);	/* segments within 1200 bytes */
	seg = 1ull << p->pmtu;
	p->payload = pattern;
	p->payload_len = 0;
	switch (op) {
	case MCT_OP_SEND:
	case MCT_OP_WRITE:
		p->payload_len = rnd_below(1200);
		if (!p->payload_len)
			p->flags |= MCT_F_LAST;
		if (op == MCT_OP_SEND)
			p->offset = rnd_below(MCT_MSG_MAX - p->payload_len + 1);
		else if (p->flags & MCT_F_IMM)
			p->msg_len = p->payload_len +
				rnd_below(MCT_MSG_MAX - p->payload_len + 1);
		break;
	case MCT_OP_READ_REQ:
		p->msg_len = rnd_below(256 * seg + 1);
		p->offset = rnd_below((MCT_MSG_MAX - p->msg_len) / seg + 1) * seg;
		p->rsvd1 = 0;
		p->rsvd2 = 0;
		break;
	case MCT_OP_ATOMIC_CS:
	case MCT_OP_ATOMIC_FA:
		p->va &= ~7ull;
		if (op == MCT_OP_ATOMIC_FA)
			p->compare = 0;
		break;
	case MCT_OP_READ_RESP:
		p->payload_len = rnd() & 1 ? seg : rnd_below(seg + 1);
		p->offset = rnd_below(1000) * seg;
		p->msg_len = p->offset + p->payload_len;
		if (p->payload_len == seg && (rnd() & 1))
			p->msg_len += rnd_below(1 << 20);
		break;
	case MCT_OP_UD_SEND:
		p->payload_len = rnd_below(seg + 1);
		if (!(p->flags & MCT_F_IMM))
			p->imm = 0;
		break;
	}
	mct_fixup(p);
}

static const char *const mut_fields[] = {
	"version", "rsvd0", "opcode", "flags", "hdrw", "dqpn", "sqpn", "psn",
	"paylen", "pmtu", "rsvd23", "offset", "imm", "msglen", "rsvd1",
	"rsvd2", "va", "compare", "syndrome", "sackw", "rnrt", "ackflags",
	"ackrsvd", "len",
};

static void random_corpus(unsigned int n)
{
	u8 buf[MAX_DGRAM + 64];
	struct mct_pkt p;
	unsigned int i;
	size_t len;
	u64 r;

	for (i = 0; i < n; i++) {
		random_valid(&p, opcodes[i % ARRAY_SIZE(opcodes)]);
		r = rnd_below(100);
		if (r >= 60 && r < 75) {
			mct_field_set(&p, mut_fields[rnd_below(ARRAY_SIZE(mut_fields))],
				      mct_random_value(rnd));
			if (p.payload_len > 1200)
				p.payload_len = rnd_below(1200);
			if (p.sack_words > MCT_MAX_SACKW && (rnd() & 1))
				p.sack_words = rnd_below(MCT_MAX_SACKW + 1);
			if (rnd() & 3)
				mct_fixup(&p);
		}
		len = mct_build(&p, buf, MAX_DGRAM);
		if (!len)
			continue;
		if (r >= 40 && r < 60) {	/* one header byte changed */
			size_t k = rnd_below(p.hdr_words ? p.hdr_words * 4u : 24);

			if (k < len)
				buf[k] = rnd() & 1 ? (u8)rnd() : buf[k] ^ (1u << rnd_below(8));
		} else if (r >= 75 && r < 90) {	/* truncated */
			len = rnd_below(len);
		} else if (r >= 90) {		/* extended */
			size_t more = 1 + rnd_below(64);

			for (size_t k = 0; k < more; k++)
				buf[len + k] = (u8)rnd();
			len += more;
		}
		add_frame(K_RANDOM, "random", buf, len);
	}
}

/* --- the capture ------------------------------------------------------- */

static void put16(u8 *b, u16 v)
{
	b[0] = v >> 8;
	b[1] = (u8)v;
}

static void put32le(u8 *b, u32 v)
{
	b[0] = (u8)v;
	b[1] = (u8)(v >> 8);
	b[2] = (u8)(v >> 16);
	b[3] = (u8)(v >> 24);
}

static u32 csum_add(u32 sum, const u8 *b, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (u32)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (u32)b[len - 1] << 8;
	return sum;
}

static u16 csum_fold(u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/* Ethernet, IPv4 or IPv6, UDP with a valid checksum, then the datagram */
static size_t frame_bytes(const struct frame *fr, u8 *out)
{
	static const u8 mac[12] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	u32 ulen = 8 + fr->len, sum;
	size_t ip = fr->ipv6 ? 40 : 20;
	u8 *l3 = out + 14, *udp = l3 + ip;

	memcpy(out, mac, sizeof(mac));
	put16(out + 12, fr->ipv6 ? 0x86dd : 0x0800);
	memset(l3, 0, ip);
	if (fr->ipv6) {
		l3[0] = 0x60;
		put16(l3 + 4, ulen);
		l3[6] = 17;
		l3[7] = 64;
		l3[8] = 0xfd;
		l3[23] = 1;
		l3[24] = 0xfd;
		l3[39] = 2;
		sum = csum_add(17 + ulen, l3 + 8, 32);
	} else {
		l3[0] = 0x45;
		l3[1] = 0x02;		/* ECT(0) */
		put16(l3 + 2, 20 + ulen);
		put16(l3 + 6, 0x4000);	/* DF */
		l3[8] = 64;
		l3[9] = 17;
		l3[12] = 10;
		l3[15] = 1;
		l3[16] = 10;
		l3[19] = 2;
		put16(l3 + 10, csum_fold(csum_add(0, l3, 20)));
		sum = csum_add(17 + ulen, l3 + 12, 8);
	}
	put16(udp, fr->sport);
	put16(udp + 2, fr->dport);
	put16(udp + 4, ulen);
	put16(udp + 6, 0);
	memcpy(udp + 8, fr->dg, fr->len);
	sum = csum_fold(csum_add(sum, udp, ulen));
	put16(udp + 6, sum ? sum : 0xffff);
	return 14 + ip + ulen;
}

static void write_pcap(const char *path)
{
	static u8 out[MAX_DGRAM + 128];
	u8 hdr[24] = { 0 }, rec[16];
	FILE *fp = fopen(path, "wb");
	unsigned int i;

	if (!fp)
		die("%s: %s", path, strerror(errno));
	put32le(hdr, 0xa1b2c3d4);
	hdr[4] = 2;		/* version 2.4 */
	hdr[6] = 4;
	put32le(hdr + 16, 65535);
	put32le(hdr + 20, 1);	/* LINKTYPE_ETHERNET */
	fwrite(hdr, sizeof(hdr), 1, fp);
	for (i = 0; i < n_frames; i++) {
		const struct frame *fr = &frames[i];
		size_t n = frame_bytes(fr, out);
		size_t cap = n - (fr->len - fr->snap);

		put32le(rec, 1700000000 + i);
		put32le(rec + 4, 0);
		put32le(rec + 8, cap);
		put32le(rec + 12, n);
		fwrite(rec, sizeof(rec), 1, fp);
		fwrite(out, cap, 1, fp);
	}
	if (fclose(fp))
		die("%s: %s", path, strerror(errno));
}

/* --- what tshark decoded ------------------------------------------------ */

enum col {
	C_FRAME, C_DROP, C_OPCODE, C_FLAGS, C_F0, C_F1, C_F2, C_F3, C_F4, C_F5,
	C_F6, C_F7, C_HDRW, C_DQPN, C_SQPN, C_QPN, C_PSN, C_TSVAL, C_PAYLEN,
	C_PMTU, C_DATALEN, C_RMSN, C_OFFSET, C_IMM, C_INV_RKEY, C_RKEY, C_VA,
	C_MSGLEN, C_SWAP, C_ADD, C_COMPARE, C_ORIG, C_QKEY, C_CUM, C_SYNDROME,
	C_SACKW, C_RNR, C_AFLAGS, C_AF0, C_AF1, C_AF2, C_AF3, C_NAKPSN,
	C_TSECHO, C_DELAY, C_CE, C_ENTROPY, C_CREDIT, C_MAXDGRAM, C_SACK_WORD,
	C_SACK_LE, C_SACK_RE, C_EXP_GROUP, C_EXP_MSG, C_NR
};

static const char *const col_name[C_NR] = {
	"frame.number", "metaroce.drop", "metaroce.opcode", "metaroce.flags",
	"metaroce.flags.ackreq", "metaroce.flags.solicited",
	"metaroce.flags.retx", "metaroce.flags.last", "metaroce.flags.imm",
	"metaroce.flags.inv", "metaroce.flags.ordered", "metaroce.flags.credit",
	"metaroce.hdr_words", "metaroce.dqpn", "metaroce.sqpn", "metaroce.qpn",
	"metaroce.psn", "metaroce.tsval", "metaroce.paylen", "metaroce.pmtu",
	"metaroce.data_len", "metaroce.rmsn", "metaroce.offset", "metaroce.imm",
	"metaroce.inv_rkey", "metaroce.rkey", "metaroce.va", "metaroce.msglen",
	"metaroce.atomic.swap", "metaroce.atomic.add", "metaroce.atomic.compare",
	"metaroce.atomic.orig", "metaroce.ud.qkey", "metaroce.ack.cum",
	"metaroce.ack.syndrome", "metaroce.ack.sack_words",
	"metaroce.ack.rnr_timer", "metaroce.ack.flags", "metaroce.ack.flags.ce",
	"metaroce.ack.flags.dup", "metaroce.ack.flags.ooo",
	"metaroce.ack.flags.held", "metaroce.ack.nak_psn",
	"metaroce.ack.ts_echo", "metaroce.ack.delay", "metaroce.ce",
	"metaroce.ack.entropy", "metaroce.credit", "metaroce.ack.max_dgram",
	"metaroce.sack.word", "metaroce.sack.le", "metaroce.sack.re",
	"_ws.expert.group", "_ws.expert.message",
};

/* values of each numeric column, in the order of the tree */
struct vals {
	unsigned int n[C_NR];
	u64 v[C_NR][MAX_VALS];
};

static void put(struct vals *e, enum col c, u64 v)
{
	if (e->n[c] < MAX_VALS)
		e->v[c][e->n[c]++] = v;
}

static bool sack_bit(const struct mrc_pkt *p, u32 i)
{
	return p->ack.sack[i / 64] >> (i % 64) & 1;
}

static void expect_ack(const struct mrc_pkt *p, struct vals *e)
{
	u32 n = 64 * p->ack.sack_words, i = 0, j;
	int b;

	put(e, C_CUM, p->psn);
	put(e, C_SYNDROME, p->ack.syndrome);
	put(e, C_SACKW, p->ack.sack_words);
	put(e, C_RNR, p->ack.rnr_timer);
	put(e, C_AFLAGS, p->ack.flags);
	for (b = 0; b < 4; b++)
		put(e, C_AF0 + b, p->ack.flags >> b & 1);
	put(e, C_NAKPSN, p->ack.nak_psn);
	put(e, C_TSECHO, p->ack.ts_echo);
	put(e, C_DELAY, p->ack.delay);
	put(e, C_CE, p->ack.ce_count);
	put(e, C_ENTROPY, p->ack.entropy);
	put(e, C_CREDIT, p->ack.credit);
	put(e, C_MAXDGRAM, p->ack.max_dgram);
	for (b = 0; b < p->ack.sack_words; b++)
		put(e, C_SACK_WORD, p->ack.sack[b]);
	/* runs of SACKed PSNs: [le, re) */
	while (i < n) {
		if (!sack_bit(p, i)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < n && sack_bit(p, j + 1); j++)
			;
		put(e, C_SACK_LE, (u32)(p->psn + 1 + i));
		put(e, C_SACK_RE, (u32)(p->psn + 2 + j));
		i = j + 1;
	}
}

static void expect_ext(const struct mrc_pkt *p, struct vals *e)
{
	switch (p->opcode) {
	case MRC_OP_SEND:
		put(e, C_RMSN, p->req.rmsn);
		put(e, C_OFFSET, p->req.offset);
		if (p->flags & MRC_F_INV)
			put(e, C_INV_RKEY, p->req.imm);
		else if (p->flags & MRC_F_IMM)
			put(e, C_IMM, p->req.imm);
		break;
	case MRC_OP_WRITE:
		put(e, C_RKEY, p->req.rkey);
		put(e, C_VA, p->req.va);
		if (p->flags & MRC_F_IMM) {
			put(e, C_RMSN, p->req.rmsn);
			put(e, C_MSGLEN, p->req.msg_len);
			put(e, C_IMM, p->req.imm);
		}
		break;
	case MRC_OP_READ_REQ:
		put(e, C_VA, p->req.va);
		put(e, C_RKEY, p->req.rkey);
		put(e, C_MSGLEN, p->req.msg_len);
		put(e, C_OFFSET, p->req.offset);
		put(e, C_RMSN, p->req.rmsn);
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		put(e, C_VA, p->atomic.va);
		put(e, C_RKEY, p->atomic.rkey);
		put(e, p->opcode == MRC_OP_ATOMIC_CS ? C_SWAP : C_ADD,
		    p->atomic.swap_add);
		put(e, C_COMPARE, p->atomic.compare);
		break;
	case MRC_OP_READ_RESP:
		put(e, C_OFFSET, p->rresp.offset);
		put(e, C_MSGLEN, p->rresp.msg_len);
		break;
	case MRC_OP_ATOMIC_RESP:
		put(e, C_ORIG, p->aresp.orig);
		break;
	case MRC_OP_UD_SEND:
		put(e, C_QKEY, p->ud.qkey);
		if (p->flags & MRC_F_IMM)
			put(e, C_IMM, p->ud.imm);
		break;
	default:
		expect_ack(p, e);
		break;
	}
}

/* every metaroce column of an accepted packet, from the parser's decode */
static void expect(const struct mrc_pkt *p, struct vals *e)
{
	bool data = p->opcode == MRC_OP_SEND || p->opcode == MRC_OP_WRITE;
	int b;

	memset(e->n, 0, sizeof(e->n));
	put(e, C_OPCODE, p->opcode);
	put(e, C_FLAGS, p->flags);
	for (b = 0; b < 8; b++)
		put(e, C_F0 + b, p->flags >> b & 1);
	put(e, C_HDRW, p->hdr_len / 4);
	put(e, C_DQPN, p->dqpn);
	put(e, C_SQPN, p->sqpn);
	put(e, C_QPN, p->dqpn);
	put(e, C_QPN, p->sqpn);
	put(e, C_PSN, p->psn);
	put(e, C_TSVAL, p->tsval);
	if (data) {
		put(e, C_DATALEN, p->pay_len);
	} else {
		put(e, C_PAYLEN, p->pay_len);
		put(e, C_PMTU, p->pmtu_shift);
	}
	expect_ext(p, e);
}

/* one value as tshark prints it: decimal, 0x hex or a boolean */
static bool parse_val(const char *s, u64 *v)
{
	char *end;

	if (!strcmp(s, "True")) {
		*v = 1;
		return true;
	}
	if (!strcmp(s, "False")) {
		*v = 0;
		return true;
	}
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && end != s && !*end;
}

/* a row of tshark's output: the columns, split at tabs */
struct row {
	char *col[C_NR];
};

static bool split_row(char *line, struct row *r)
{
	int c;

	for (c = 0; c < C_NR; c++)
		r->col[c] = "";
	line[strcspn(line, "\n")] = 0;
	for (c = 0; c < C_NR; c++) {
		r->col[c] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = 0;
	}
	return c >= C_NR - 1;
}

/* a comma-separated column against the expected values */
static bool cmp_col(const struct row *r, const struct vals *e, enum col c,
		    char *why, size_t cap)
{
	char buf[8192], *s, *tok, *save = NULL;
	unsigned int k = 0;
	u64 v;

	snprintf(buf, sizeof(buf), "%s", r->col[c] ? r->col[c] : "");
	for (s = buf; (tok = strtok_r(s, ",", &save)); s = NULL) {
		if (!parse_val(tok, &v) || k >= e->n[c] || v != e->v[c][k]) {
			snprintf(why, cap, "%s is \"%.60s\", expected %u value(s), #%u 0x%llx",
				 col_name[c], r->col[c], e->n[c], k,
				 k < e->n[c] ? (unsigned long long)e->v[c][k] : 0ull);
			return false;
		}
		k++;
	}
	if (k != e->n[c]) {
		snprintf(why, cap, "%s is \"%.60s\", expected %u value(s)",
			 col_name[c], r->col[c], e->n[c]);
		return false;
	}
	return true;
}

static bool has_group(const struct row *r, u64 group)
{
	char buf[4096], *s, *tok, *save = NULL;
	u64 v;

	snprintf(buf, sizeof(buf), "%s", r->col[C_EXP_GROUP]);
	for (s = buf; (tok = strtok_r(s, ",", &save)); s = NULL)
		if (parse_val(tok, &v) && v == group)
			return true;
	return false;
}

static bool cmp_fields(const struct frame *fr, const struct row *r,
		       char *why, size_t cap)
{
	static struct vals e;
	int c;

	expect(&fr->p, &e);
	for (c = C_OPCODE; c < C_EXP_GROUP; c++)
		if (!cmp_col(r, &e, c, why, cap))
			return false;
	return true;
}

/* --- the checks ---------------------------------------------------------- */

struct check {
	unsigned int frames;
	struct notes nt;
};

enum { CK_VALID, CK_WARN, CK_RULE, CK_RANDOM, CK_HEUR, CK_EDGE, CK_LUA, CK_NR };
static struct check checks[CK_NR];

static void fail(int ck, const struct frame *fr, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	note(&checks[ck].nt, "frame %u (%s%s%s): %s", (unsigned int)(fr - frames) + 1,
	     fr->what, fr->kind == K_RULE ? ", expected " : "",
	     fr->kind == K_RULE ? drop_names[fr->drop] : "", msg);
}

/* accepted packets decode as parsed, rejected ones carry the mark */
static void judge(int ck, const struct frame *fr, const struct row *r)
{
	bool malformed = has_group(r, GROUP_MALFORMED);
	char why[256];

	checks[ck].frames++;
	/* UDP hands no empty payload to a dissector: nothing to mark */
	if (!fr->len) {
		if (*r->col[C_OPCODE] || *r->col[C_DROP])
			fail(ck, fr, "an empty datagram decoded");
		return;
	}
	if (!fr->drop) {
		if (*r->col[C_DROP] || malformed)
			fail(ck, fr, "marked malformed (metaroce.drop \"%s\")", r->col[C_DROP]);
		else if (!cmp_fields(fr, r, why, sizeof(why)))
			fail(ck, fr, "%s", why);
		return;
	}
	if (strcmp(r->col[C_DROP], drop_names[fr->drop]))
		fail(ck, fr, "metaroce.drop is \"%s\", the driver's parser: %s",
		     r->col[C_DROP], drop_names[fr->drop]);
	else if (!malformed)
		fail(ck, fr, "no Malformed expert info");
}

static void judge_frame(const struct frame *fr, const struct row *r)
{
	const char *msg = r->col[C_EXP_MSG];

	checks[CK_LUA].frames++;
	if (strstr(msg, "Lua Error") || strstr(msg, "Exception") ||
	    strstr(msg, "Malformed Packet"))
		fail(CK_LUA, fr, "%.200s", msg);
	switch (fr->kind) {
	case K_VALID:
		judge(CK_VALID, fr, r);
		checks[CK_WARN].frames++;
		if (has_group(r, GROUP_PROTOCOL) != fr->warn)
			fail(CK_WARN, fr, "Protocol warning %s",
			     fr->warn ? "missing" : "unexpected");
		break;
	case K_RULE:
		judge(CK_RULE, fr, r);
		break;
	case K_RANDOM:
		judge(CK_RANDOM, fr, r);
		break;
	case K_HEUR:
		judge(CK_HEUR, fr, r);
		break;
	case K_FOREIGN:
		checks[CK_HEUR].frames++;
		if (*r->col[C_OPCODE])
			fail(CK_HEUR, fr, "taken for metaroce");
		break;
	default:
		judge(CK_EDGE, fr, r);
		break;
	}
}

/*
 * The corpus covers every opcode, allowed flag, ACK flag, syndrome, SACK
 * word count, drop reason and Validation rule (a check of this test).
 */
static void coverage(void)
{
	u8 flags[256] = { 0 };
	bool seen[256] = { false };
	unsigned int aflags = 0, syn = 0, sackw = 0, reasons = 0, i, o;
	bool rules[47] = { false };
	struct notes nt = { 0 };

	for (i = 0; i < n_frames; i++) {
		const struct frame *fr = &frames[i];

		if (fr->kind == K_RULE) {
			reasons |= 1u << fr->drop;
			rules[fr->val] = true;
		}
		if (fr->kind != K_VALID)
			continue;
		flags[fr->p.opcode] |= fr->p.flags;
		seen[fr->p.opcode] = true;
		if (fr->p.opcode == MRC_OP_ACK) {
			aflags |= fr->p.ack.flags;
			syn |= 1u << fr->p.ack.syndrome;
			sackw |= 1u << fr->p.ack.sack_words;
		}
	}
	for (o = 0; o < ARRAY_SIZE(opcodes); o++) {
		u8 want = mct_allowed_flags(opcodes[o]);

		if ((flags[opcodes[o]] & want) != want)
			note(&nt, "%s: flags 0x%02x of 0x%02x set in a valid packet",
			     mct_op_name(opcodes[o]), flags[opcodes[o]] & want, want);
		if (!seen[opcodes[o]])
			note(&nt, "%s: no valid packet", mct_op_name(opcodes[o]));
	}
	if (aflags != MRC_ACKF_ALL || syn != 0x1f || sackw != 0x1f)
		note(&nt, "ACK flags 0x%x, syndromes 0x%x, SACK word counts 0x%x",
		     aflags, syn, sackw);
	if (reasons != 0x3fe)
		note(&nt, "drop reasons 0x%x of 0x3fe", reasons);
	for (i = 2; i <= 46; i++)
		if (!rules[i])
			note(&nt, "no packet for MRC-VAL-%u", i);
	t_result(!nt.n,
		 "the corpus covers every opcode, allowed flag, ACK flag, syndrome, SACK word count, drop reason and rule MRC-VAL-2..46",
		 nt.text);
}

/* run tshark over the capture; every row judged against its frame */
static void run_tshark(const char *tshark, const char *lua, const char *dir)
{
	char cmd[8192], *line = NULL, err[4096] = "";
	size_t cap = 0, used;
	unsigned int rows = 0, stray = 0;
	struct row r;
	FILE *fp;
	int c, st;

	used = snprintf(cmd, sizeof(cmd),
			"'%s' -n -r '%s/dissector-test.pcap' -X 'lua_script:%s' -T fields",
			tshark, dir, lua);
	used += snprintf(cmd + used, sizeof(cmd) - used, "%s",
			 " -E separator=/t -E occurrence=a -E aggregator=, -E quote=n");
	for (c = 0; c < C_NR; c++)
		used += snprintf(cmd + used, sizeof(cmd) - used, " -e %s", col_name[c]);
	snprintf(cmd + used, sizeof(cmd) - used, " 2>'%s/tshark.err'", dir);
	fp = popen(cmd, "r");
	if (!fp)
		die("popen: %s", strerror(errno));
	while (getline(&line, &cap, fp) > 0) {
		u64 num;

		if (!split_row(line, &r) || !parse_val(r.col[C_FRAME], &num) ||
		    num != rows + 1 || rows >= n_frames) {
			stray++;
			continue;
		}
		judge_frame(&frames[rows++], &r);
	}
	free(line);
	st = pclose(fp);
	/* stderr: nothing but tshark's warning about running as root */
	snprintf(cmd, sizeof(cmd),
		 "grep -v -e 'Running as user' -e 'could be dangerous' '%s/tshark.err' | head -n 5",
		 dir);
	fp = popen(cmd, "r");
	if (fp) {
		used = fread(err, 1, sizeof(err) - 1, fp);
		err[used] = 0;
		pclose(fp);
	}
	snprintf(cmd, sizeof(cmd),
		 "#   exit status %d, %u of %u frames decoded, %u stray lines\n#   %s\n",
		 st, rows, n_frames, stray, err);
	t_result(!st && rows == n_frames && !stray && !*err,
		 "tshark loads the dissector and decodes every frame, nothing on stderr", cmd);
}

static void report(void)
{
	static const char *const desc[CK_NR] = {
		"valid packets of every opcode, flag and extension (mrc_wire_build): every field as encoded, no Malformed mark",
		"a Protocol warning on exactly the valid packets that break a sender rule",
		"a packet for each Validation rule MRC-VAL-2..46: Malformed mark, metaroce.drop = the driver parser's reason",
		"random corpus: the driver parser's verdict on every packet, its fields on the accepted ones",
		"heuristic dissector: metaroce on other UDP ports, a foreign datagram left alone",
		"headers cut by the snap length, IPv6: decoded, no Malformed mark",
		"no Lua error or dissector exception in any frame",
	};
	char title[256];
	int ck;

	for (ck = 0; ck < CK_NR; ck++) {
		snprintf(title, sizeof(title), "%s (%u frames)", desc[ck], checks[ck].frames);
		t_result(checks[ck].frames && !checks[ck].nt.n, title, checks[ck].nt.text);
	}
}

int main(int argc, char **argv)
{
	const char *lua = "tools/wireshark/metaroce.lua", *dir = "tests/wireshark/build";
	const char *tshark = "tshark";
	unsigned long n_random = 2500;
	char path[4096], lua_abs[4096];
	unsigned int i;
	u64 seed;
	int opt;

	while ((opt = getopt(argc, argv, "l:o:n:s:t:v")) != -1) {
		switch (opt) {
		case 'l':
			lua = optarg;
			break;
		case 'o':
			dir = optarg;
			break;
		case 'n':
			n_random = strtoul(optarg, NULL, 0);
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 't':
			tshark = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-l LUA] [-o DIR] [-n RANDOM] [-s SEED] [-t TSHARK] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	seed = rng_state;
	if (!realpath(lua, lua_abs))
		die("%s: %s", lua, strerror(errno));
	mkdir(dir, 0755);
	for (i = 0; i < sizeof(pattern); i++)
		pattern[i] = (u8)(i * 7 + 3);
	valid_data();
	valid_read_atomic();
	valid_ud();
	valid_ack();
	valid_warn();
	heur_edge();
	rules_head();
	rules_data();
	rules_base();
	rules_read_atomic();
	rules_resp_ud();
	rules_ack();
	random_corpus(n_random);
	printf("# %u frames (%lu random, seed 0x%llx) in %s/dissector-test.pcap\n",
	       n_frames, n_random, (unsigned long long)seed, dir);
	coverage();
	snprintf(path, sizeof(path), "%s/dissector-test.pcap", dir);
	write_pcap(path);
	run_tshark(tshark, lua_abs, dir);
	report();
	printf("dissector: %d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}

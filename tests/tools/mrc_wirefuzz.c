// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_wirefuzz: a wire fuzzer against a live MetaRoCE RC QP.
 *
 *   mrc_wirefuzz --dst IP --dqpn N --sqpn N --learn IFACE [options]
 *
 * Run in the namespace of the victim's peer (the host at the other end of
 * the victim QP --dqpn, whose own QP is --sqpn).  Sends a stream of
 * mutated MetaRoCE packets, deterministic for a --seed apart from the live
 * PSNs, from a raw IPv4 socket with sendmmsg():
 *
 *   templates  every opcode of mrc_wire.h (SEND, WRITE with and without
 *              IMM/INV, READ_REQ, both atomics, UD_SEND, READ_RESP,
 *              ATOMIC_RESP, ACK with 0..4 SACK words), fields random but
 *              well formed, built with the engine's mrc_wire_build();
 *   mutations  valid (none), field (a header field set to a random or
 *              boundary value), flip (1-4 random bits of the header),
 *              trunc (cut at a field boundary or inside the payload),
 *              junk (random bytes appended), random (random bytes, half
 *              of them with a right version byte);
 *   identity   true (the peer's address and QPNs), dqpn (a QPN the victim
 *              does not have), sqpn (not the peer's QPN), spoof (another
 *              source address, --spoof); any source port.
 *
 * PSNs: near and far from the live window, which the fuzzer learns by
 * sniffing IFACE for the connection's ACKs (a packet socket with a BPF
 * filter): the victim's ACKs give its receive PSN (base for requests),
 * the peer's ACKs its oldest unacknowledged PSN (base for ACKs and
 * responses).  Fuzzed packets carry TTL >= 128, so the sniffer skips them.
 *
 * Safety: a well-formed packet with the true identity and a PSN inside
 * the window is indistinguishable from the peer's own (the protocol has
 * no per-connection secret): it would really write, read or NAK.  Such a
 * packet gets its PSN moved to a zone where the victim must drop it or
 * take it as a harmless duplicate: requests far below or beyond the
 * receive window or just below it (duplicates; a READ_REQ ends below
 * it), ACKs far from the send window or 300..900 PSNs below it (stale:
 * SACK bits below the window, a NAK PSN not outstanding), responses far
 * below or beyond it.  Without a learned base for its kind it gets a
 * wrong identity instead.
 *
 * Each datagram is run through mrc_wire_parse() and its fate predicted:
 * the parse reason, drop_no_qp, drop_bad_source, or "window" (dropped as
 * out of window or bad ACK, or taken as a duplicate or stale ACK).  Last
 * line:
 *   MRC_WIREFUZZ_RESULT sent=N errors=E elapsed_us=T pps=P
 *     learned_req=L learned_ack=M op_NAME=.. mut_NAME=.. id_NAME=..
 *     expect_drop_REASON=.. expect_window=W zone_NAME=..
 * Exit status 0 if every packet was sent, 3 if no ACK was seen.
 *
 * It sends to --dst only, needs CAP_NET_RAW, and refuses the initial
 * network namespace unless --allow-init-netns is given.
 */
#define _GNU_SOURCE
#include <getopt.h>

#define MRC_TOOL "mrc_wirefuzz"
#include "mrc_raw.h"

#define MAX_PAY		896		/* payload of a template: frames fit MTU 1500 */
#define MAX_JUNK	400
#define MAX_DG		(MRC_HDR_MAX_LEN + MAX_PAY + MAX_JUNK)
#define FRAME_HDR	MRC_FRAME_HDR
#define MAX_BATCH	256
#define RX_WIN		1024		/* the victim's receive window */
#define FAR_MARGIN	16384		/* beyond: the window may move meanwhile */
#define MAX_AVOID	64
#define FUZZ_TTL	200		/* >= 128: the sniffer skips our packets */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum mut { M_VALID, M_FIELD, M_FLIP, M_TRUNC, M_JUNK, M_RANDOM, M_NR };
static const char *const mut_name[M_NR] = {
	"valid", "field", "flip", "trunc", "junk", "random",
};

/* weights, out of 100 */
static const unsigned int mut_weight[M_NR] = { 15, 30, 20, 15, 10, 10 };

enum ident { I_TRUE, I_DQPN, I_SQPN, I_SPOOF, I_NR };
static const char *const id_name[I_NR] = { "true", "dqpn", "sqpn", "spoof" };
static const unsigned int id_weight[I_NR] = { 55, 15, 15, 15 };

enum zone {
	Z_REQ_BELOW, Z_REQ_DUP, Z_REQ_BEYOND, Z_ACK_BELOW, Z_ACK_STALE,
	Z_ACK_BEYOND, Z_RESP_BELOW, Z_RESP_BEYOND, Z_NR
};

static const char *const zone_name[Z_NR] = {
	"req_below", "req_dup", "req_beyond", "ack_below", "ack_stale",
	"ack_beyond", "resp_below", "resp_beyond",
};

/* the opcodes a template is drawn from; index into the op_* tallies */
static const u8 ops[] = {
	MRC_OP_SEND, MRC_OP_WRITE, MRC_OP_READ_REQ, MRC_OP_ATOMIC_CS,
	MRC_OP_ATOMIC_FA, MRC_OP_UD_SEND, MRC_OP_READ_RESP,
	MRC_OP_ATOMIC_RESP, MRC_OP_ACK,
};

#define NOPS	ARRAY_SIZE(ops)
static const char *const op_name[NOPS] = {
	"send", "write", "read_req", "atomic_cs", "atomic_fa", "ud_send",
	"read_resp", "atomic_resp", "ack",
};

static struct {
	struct in_addr dst, src, spoof;
	u32 dqpn, sqpn, avoid[MAX_AVOID], rkeys[8];
	unsigned int navoid, nrkeys, batch, learn_wait_ms;
	u64 count, seed, rate;
	const char *learn_if;
	bool allow_init_ns, verbose, dry_run;
} O = {
	.count = 100000, .seed = 1, .batch = 64, .learn_wait_ms = 3000,
};

static u64 T_op[NOPS], T_mut[M_NR], T_id[I_NR], T_zone[Z_NR];
static u64 T_drop[MRC_DROP_NR], T_window, T_defang;

/* the stream follows from --seed */
static u64 rnd(void)
{
	return mrc_splitmix64(&O.seed);
}

static u32 rndn(u32 n)
{
	return n ? rnd() % n : 0;
}

static unsigned int pick(const unsigned int *w, unsigned int n)
{
	unsigned int r = rndn(100), i;

	for (i = 0; i + 1 < n; i++) {
		if (r < w[i])
			return i;
		r -= w[i];
	}
	return n - 1;
}

/* --- learning the live PSNs ------------------------------------------------ */

static int learn_fd = -1;
static u32 base_req, base_ack;	/* victim's rcv_nxt; its snd_una */
static u64 learned_req, learned_ack;

static void open_learn(void)
{
	/*
	 * Cooked frames start at the IP header: UDP, TTL below 128 (not
	 * ours), to port 4792 (options-less header), opcode ACK.
	 */
	static struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x45, 0, 9),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 7),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 8),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 128, 5, 0),
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 22),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MRC_DEFAULT_UDP_PORT, 0, 3),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 29),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MRC_OP_ACK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(code),
				   .filter = code };

	learn_fd = mrc_open_learn(O.learn_if, SOCK_NONBLOCK, &prog);
}

static void learn_frame(const u8 *f, size_t len)
{
	const struct iphdr *ip = (const void *)f;
	struct mrc_pkt a;

	if (len < FRAME_HDR || !mrc_parse_ack(f + FRAME_HDR, len - FRAME_HDR, &a))
		return;
	if (mrc_ack_of(ip, &a, O.dst, O.dqpn, O.sqpn, true))
		mrc_learn_psn(&base_req, &learned_req, a.psn);
	else if (mrc_ack_of(ip, &a, O.dst, O.dqpn, O.sqpn, false))
		mrc_learn_psn(&base_ack, &learned_ack, a.psn);
}

static void learn_poll(void)
{
	static u8 buf[MAX_DG + 64];
	unsigned int n;
	ssize_t r;

	for (n = 0; n < 4096; n++) {
		r = recv(learn_fd, buf, sizeof(buf), MSG_TRUNC);
		if (r < 0)
			break;
		learn_frame(buf, (size_t)r < sizeof(buf) ? (size_t)r : sizeof(buf));
	}
}

/* --- templates ----------------------------------------------------------- */

static u32 rnd_rkey(void)
{
	if (O.nrkeys && rndn(2))
		return O.rkeys[rndn(O.nrkeys)];
	return rnd();
}

static void tmpl_req(struct mrc_pkt *p, u32 *pay)
{
	static const u8 send_f[] = { MRC_F_ACKREQ, MRC_F_SOLICITED, MRC_F_RETX,
				     MRC_F_LAST, MRC_F_ORDERED, MRC_F_CREDIT };
	unsigned int i;

	for (i = 0; i < sizeof(send_f); i++)
		if (rndn(3) == 0)
			p->flags |= send_f[i];
	if (rndn(3) == 0)
		p->flags |= (p->opcode == MRC_OP_SEND && rndn(2)) ?
			    MRC_F_INV : MRC_F_IMM;
	if (p->opcode == MRC_OP_WRITE && !(p->flags & MRC_F_IMM))
		p->flags &= ~MRC_F_SOLICITED;
	*pay = rndn(4) ? 1 + rndn(MAX_PAY) : 0;
	if (!*pay)
		p->flags |= MRC_F_LAST;
	p->req.va = rnd();
	p->req.rkey = rnd_rkey();
	p->req.offset = rndn(64) << 12;
	p->req.rmsn = rnd();
	p->req.imm = rnd();
	p->req.msg_len = p->req.offset + *pay;
}

/* a well-formed packet of ops[k] with random fields; returns payload bytes */
static u32 tmpl(struct mrc_pkt *p, unsigned int k)
{
	u32 pay = 0, shift = MRC_PMTU_MIN_SHIFT + rndn(6), segs;
	unsigned int w;

	memset(p, 0, sizeof(*p));
	p->opcode = ops[k];
	p->tsval = mrc_clock() - rndn(2) * (u32)rnd();
	switch (p->opcode) {
	case MRC_OP_SEND:
	case MRC_OP_WRITE:
		tmpl_req(p, &pay);
		break;
	case MRC_OP_READ_REQ:
		p->flags = MRC_F_LAST | (rndn(2) ? MRC_F_ACKREQ : 0) |
			   (rndn(4) ? 0 : MRC_F_RETX);
		p->pmtu_shift = shift;
		segs = 1 + rndn(rndn(4) ? 16 : MRC_READ_CHUNK);
		p->req.msg_len = rndn(8) ? (segs << shift) - rndn(1u << shift) : 0;
		p->req.offset = rndn(4) ? 0 : rndn(16) << shift;
		p->req.va = rnd();
		p->req.rkey = rnd_rkey();
		p->req.rmsn = rnd();
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		p->flags = rndn(2) ? MRC_F_ACKREQ : 0;
		p->pmtu_shift = shift;
		p->atomic.va = rnd() & ~7ull;
		p->atomic.rkey = rnd_rkey();
		p->atomic.swap_add = rnd();
		p->atomic.compare = p->opcode == MRC_OP_ATOMIC_CS ? rnd() : 0;
		break;
	case MRC_OP_UD_SEND:
		p->flags = (rndn(2) ? MRC_F_IMM : 0) | (rndn(2) ? MRC_F_SOLICITED : 0);
		p->pmtu_shift = MRC_PMTU_MIN_SHIFT + rndn(5);
		pay = rndn(((1u << p->pmtu_shift) > MAX_PAY ? MAX_PAY :
			    1u << p->pmtu_shift) + 1);
		p->ud.qkey = rndn(2) ? 0x80010000u : (u32)rnd();
		p->ud.imm = p->flags & MRC_F_IMM ? (u32)rnd() : 0;
		break;
	case MRC_OP_READ_RESP:
		p->flags = rndn(4) ? 0 : MRC_F_RETX;
		p->pmtu_shift = shift;
		pay = (1u << shift) > MAX_PAY ? MAX_PAY : 1u << shift;
		pay = rndn(2) ? pay : rndn(pay + 1);
		p->rresp.offset = rndn(8) << shift;
		p->rresp.msg_len = p->rresp.offset + pay;
		break;
	case MRC_OP_ATOMIC_RESP:
		p->flags = rndn(4) ? 0 : MRC_F_RETX;
		p->pmtu_shift = shift;
		p->aresp.orig = rnd();
		break;
	default:	/* MRC_OP_ACK */
		p->pmtu_shift = rndn(2) ? 0 : shift;
		p->ack.syndrome = rndn(5);
		p->ack.sack_words = rndn(MRC_ACK_MAX_SACKW + 1);
		p->ack.rnr_timer = rndn(32);
		p->ack.flags = rndn(MRC_ACKF_ALL + 1);
		p->ack.nak_psn = rnd();
		p->ack.ts_echo = rndn(2) ? mrc_clock() : (u32)rnd();
		p->ack.delay = rndn(2) ? rndn(1000) : (u32)rnd();
		p->ack.ce_count = rnd();
		p->ack.entropy = rnd();
		p->ack.credit = rndn(2) ? rndn(64) : (u32)rnd();
		p->ack.max_dgram = rnd();
		for (w = 0; w < p->ack.sack_words; w++)
			p->ack.sack[w] = rnd() & rnd();
		break;
	}
	p->pay_len = pay;
	return pay;
}

/* --- mutations ------------------------------------------------------------ */

struct field {
	u8 off, size;
};

/* header fields by offset; those past the header are skipped */
static unsigned int fields_of(u8 op, struct field *f)
{
	static const struct field base[] = {
		{ 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 4 }, { 8, 4 },
		{ 12, 4 }, { 16, 4 }, { 20, 2 }, { 22, 1 }, { 23, 1 },
	};
	static const struct field send[] = { { 20, 4 }, { 24, 4 }, { 28, 4 } };
	static const struct field write[] = {
		{ 20, 4 }, { 24, 8 }, { 32, 4 }, { 36, 4 }, { 40, 4 },
	};
	static const struct field req[] = {
		{ 24, 8 }, { 32, 4 }, { 36, 4 }, { 40, 4 }, { 44, 4 }, { 48, 4 },
		{ 52, 4 },
	};
	static const struct field atomic[] = {
		{ 24, 8 }, { 32, 4 }, { 36, 4 }, { 40, 8 }, { 48, 8 },
	};
	static const struct field ack[] = {
		{ 24, 1 }, { 25, 1 }, { 26, 1 }, { 27, 1 }, { 28, 4 }, { 32, 4 },
		{ 36, 4 }, { 40, 2 }, { 42, 2 }, { 44, 4 }, { 48, 2 }, { 50, 6 },
		{ 56, 8 }, { 64, 8 }, { 72, 8 }, { 80, 8 },
	};
	static const struct field ext8[] = { { 24, 4 }, { 28, 4 } };
	const struct field *e;
	unsigned int n = 0, ne, i;
	bool data = op == MRC_OP_SEND || op == MRC_OP_WRITE;

	for (i = 0; i < ARRAY_SIZE(base); i++)
		if (!data || base[i].off < MRC_DATA_COMMON_LEN)
			f[n++] = base[i];
	switch (op) {
	case MRC_OP_SEND:
		e = send, ne = 3;
		break;
	case MRC_OP_WRITE:
		e = write, ne = 5;
		break;
	case MRC_OP_READ_REQ:
		e = req, ne = 7;
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		e = atomic, ne = 5;
		break;
	case MRC_OP_ACK:
		e = ack, ne = 16;
		break;
	default:	/* UD, READ_RESP: two words; ATOMIC_RESP: one */
		e = ext8, ne = op == MRC_OP_ATOMIC_RESP ? 1 : 2;
		if (op == MRC_OP_ATOMIC_RESP)
			f[n++] = (struct field){ 24, 8 };
		break;
	}
	if (op != MRC_OP_ATOMIC_RESP)
		for (i = 0; i < ne; i++)
			f[n++] = e[i];
	return n;
}

static u64 interesting(unsigned int size)
{
	u64 top = size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;

	switch (rndn(8)) {
	case 0:
		return 0;
	case 1:
		return top;
	case 2:
		return 1;
	case 3:
		return (top >> 1) + 1;	/* sign bit */
	case 4:
		return rndn(256);
	case 5:
		return top - rndn(256);
	default:
		return rnd() & top;
	}
}

static void put_be(u8 *b, u64 v, unsigned int size)
{
	while (size--) {
		b[size] = v;
		v >>= 8;
	}
}

/* mutate the datagram in @dg (header @hl bytes, @len in all) */
static size_t mutate(enum mut m, u8 *dg, size_t len, u32 hl)
{
	struct field f[40];
	unsigned int nf, i, n;
	size_t cut;

	switch (m) {
	case M_FIELD:
		nf = fields_of(dg[MRC_BTH_OFF_OPCODE], f);
		n = 1 + rndn(3);
		for (i = 0; i < n; i++) {
			struct field x = f[rndn(nf)];

			if (x.off + x.size <= len)
				put_be(dg + x.off, interesting(x.size), x.size);
		}
		return len;
	case M_FLIP:
		n = 1 + rndn(4);
		for (i = 0; i < n; i++)
			dg[rndn(hl)] ^= 1u << rndn(8);
		return len;
	case M_TRUNC:
		nf = fields_of(dg[MRC_BTH_OFF_OPCODE], f);
		i = rndn(nf + 3);
		if (i < nf)	/* at a field's start or end */
			cut = f[i].off + (rndn(2) ? f[i].size : 0);
		else if (i == nf)
			cut = hl + rndn(len - hl + 1);
		else
			cut = rndn(hl);
		return cut < len ? cut : len - (len > 0);
	case M_JUNK:
		n = 1 + rndn(MAX_JUNK);
		for (i = 0; i < n; i++)
			dg[len + i] = rnd();
		return len + n;
	case M_RANDOM:
		n = rndn(MRC_HDR_MAX_LEN + 256);
		for (i = 0; i < n; i++)
			dg[i] = rnd();
		if (n && rndn(2))
			dg[0] = MRC_WIRE_VERSION << 4;
		return n;
	default:
		return len;
	}
}

/* --- identity and the PSN safety zones ------------------------------------ */

static bool avoided(u32 qpn)
{
	unsigned int i;

	if (qpn <= 1 || qpn == O.dqpn)
		return true;
	for (i = 0; i < O.navoid; i++)
		if (O.avoid[i] == qpn)
			return true;
	return false;
}

static u32 wrong_qpn(u32 not)
{
	u32 q;

	do {
		q = rnd() & 0xffffff;
	} while (q == not || avoided(q));
	return q;
}

static void set_be32(u8 *dg, unsigned int off, u32 v)
{
	put_be(dg + off, v, 4);
}

static bool is_req(u8 op)
{
	return op == MRC_OP_SEND || op == MRC_OP_WRITE ||
	       op == MRC_OP_READ_REQ || op == MRC_OP_ATOMIC_CS ||
	       op == MRC_OP_ATOMIC_FA;
}

/*
 * A well-formed packet of the peer's: move its PSN where the victim drops
 * it or takes it as a harmless duplicate (see the top of the file).
 * Returns the zone, or -1 if there is no base to place it by.
 */
static int defang(u8 *dg, const struct mrc_pkt *p)
{
	u32 far = FAR_MARGIN + rndn(1u << 30), psn, k, lim, w, b;
	int z;

	if (is_req(p->opcode)) {
		if (!learned_req)
			return -1;
		z = Z_REQ_BELOW + rndn(3);
		if (z == Z_REQ_BELOW)
			psn = base_req - RX_WIN - MRC_READ_CHUNK - far;
		else if (z == Z_REQ_BEYOND)
			psn = base_req + RX_WIN + far;
		else if (p->opcode == MRC_OP_READ_REQ)	/* ends below base */
			psn = base_req - MRC_READ_CHUNK - 1 - rndn(RX_WIN - 2 * MRC_READ_CHUNK);
		else
			psn = base_req - 1 - rndn(RX_WIN - MRC_READ_CHUNK);
		set_be32(dg, MRC_BTH_OFF_PSN, psn);
		return z;
	}
	if (!learned_ack)
		return -1;
	if (p->opcode != MRC_OP_ACK) {
		z = rndn(2) ? Z_RESP_BELOW : Z_RESP_BEYOND;
		psn = z == Z_RESP_BELOW ? base_ack - 8192 - rndn(1u << 30) :
					  base_ack + (1u << 20) + rndn(1u << 30);
		set_be32(dg, MRC_BTH_OFF_PSN, psn);
		return z;
	}
	z = Z_ACK_BELOW + rndn(3);
	if (z == Z_ACK_BELOW) {
		psn = base_ack - 2 * RX_WIN - far;
	} else if (z == Z_ACK_BEYOND) {
		psn = base_ack + (1u << 24) + rndn(1u << 30);
	} else {
		/* stale: cum 300..900 below, every SACK bit below base - 200 */
		psn = base_ack - 300 - rndn(601);
		lim = base_ack - 200 - psn - 1;	/* bits allowed: index < lim */
		for (w = 0; w < p->ack.sack_words; w++) {
			u64 sack = p->ack.sack[w];

			for (b = 0; b < 64; b++)
				if (64 * w + b >= lim)
					sack &= ~(1ull << b);
			put_be(dg + MRC_BTH_LEN + MRC_ACK_OFF_SACK + 8 * w, sack, 8);
		}
		/* a NAK or DUP PSN that names nothing outstanding */
		k = base_ack - 2 * RX_WIN - rndn(1u << 30);
		set_be32(dg, MRC_BTH_LEN + MRC_ACK_OFF_NAKPSN, k);
	}
	set_be32(dg, MRC_BTH_OFF_PSN, psn);
	return z;
}

/*
 * Give the datagram its identity and predict its fate; returns whether
 * it goes out from the spoofed address.
 */
static bool finish(u8 *dg, size_t len, enum ident id)
{
	struct mrc_pkt p;
	int err, z;

	if (len >= MRC_BTH_OFF_SQPN + 4 && id != I_TRUE && id != I_SPOOF) {
		/* keep bits 24..31 as mutated: a QPN over 24 bits is a parse drop */
		if (id == I_DQPN)
			set_be32(dg, MRC_BTH_OFF_DQPN,
				 (dg[MRC_BTH_OFF_DQPN] << 24) | wrong_qpn(O.dqpn));
		else
			set_be32(dg, MRC_BTH_OFF_SQPN,
				 (dg[MRC_BTH_OFF_SQPN] << 24) | wrong_qpn(O.sqpn));
	}
	err = mrc_wire_parse(dg, len, &p);
	if (err) {
		T_drop[-err]++;
		return id == I_SPOOF;
	}
	/* a mutated QPN that names another live QP (QP1: the MAD layer) */
	if (p.dqpn != O.dqpn && avoided(p.dqpn)) {
		p.dqpn = wrong_qpn(O.dqpn);
		set_be32(dg, MRC_BTH_OFF_DQPN, p.dqpn);
	}
	if (p.opcode == MRC_OP_UD_SEND) {
		T_drop[p.dqpn == O.dqpn ? MRC_DROP_BAD_SRC : MRC_DROP_NO_QP]++;
		return id == I_SPOOF;
	}
	if (p.dqpn != O.dqpn) {
		T_drop[MRC_DROP_NO_QP]++;
		return id == I_SPOOF;
	}
	if (p.sqpn != O.sqpn || id == I_SPOOF) {
		T_drop[MRC_DROP_BAD_SRC]++;
		return id == I_SPOOF;
	}
	/* the peer's own packet, as far as the victim can tell */
	z = defang(dg, &p);
	if (z < 0) {
		T_drop[MRC_DROP_BAD_SRC]++;
		T_id[I_SPOOF]++;
		T_id[I_TRUE]--;
		return true;
	}
	T_defang++;
	T_zone[z]++;
	T_window++;
	return false;
}

/* --- sending ---------------------------------------------------------------- */

/* IPv4 + UDP around the datagram at f + FRAME_HDR; returns the length */
static size_t frame(u8 *f, size_t len, bool spoof)
{
	struct mrc_raw_hdr h = {
		.src = spoof ? O.spoof : O.src, .dst = O.dst,
		.dport = MRC_DEFAULT_UDP_PORT, .ttl = FUZZ_TTL,
	};

	h.id = rnd();
	h.sport = 1024 + rndn(64512);
	return mrc_raw_frame(f, len, &h);
}

/* one fuzzed frame into @f; returns its length */
static size_t one(u8 *f)
{
	u8 *dg = f + FRAME_HDR;
	struct mrc_pkt p;
	unsigned int k = rndn(NOPS);
	enum mut m = pick(mut_weight, M_NR);
	enum ident id = pick(id_weight, I_NR);
	u32 pay, hl, i;
	size_t len;
	bool spoof;

	pay = tmpl(&p, k);
	/* near the window (in it, too) or anywhere; UD_SEND takes PSN 0 */
	if (p.opcode != MRC_OP_UD_SEND)
		p.psn = (is_req(p.opcode) ? base_req : base_ack) +
			(rndn(2) ? rndn(2 * RX_WIN) - RX_WIN : (u32)rnd());
	p.dqpn = O.dqpn;
	p.sqpn = O.sqpn;
	hl = mrc_wire_build(dg, &p);
	if (!hl)
		die("mrc_wire_build failed for opcode %u", p.opcode);
	for (i = 0; i < pay; i++)
		dg[hl + i] = rnd();
	len = mutate(m, dg, hl + pay, hl);
	T_op[k]++;
	T_mut[m]++;
	T_id[id]++;
	spoof = finish(dg, len, id);
	return frame(f, len, spoof);
}

static const char help_text[] =
"usage: mrc_wirefuzz --dst IP --dqpn N --sqpn N --learn IFACE [options]\n"
"  --dst IP          the victim's address\n"
"  --dqpn N          the victim's QP; --sqpn N: its peer's (ours)\n"
"  --learn IFACE     sniff the connection's ACKs here for the live PSNs\n"
"  --learn-wait MS   for the first ACK (3000)\n"
"  --spoof IP        source of the spoofed packets (10.0.0.77)\n"
"  --avoid-qpn N     a live QPN on the victim never to pick as a wrong one\n"
"                    (repeat; 0, 1 and --dqpn always avoided)\n"
"  --rkey N          a live rkey to use in templates (repeat, up to 8)\n"
"  --count N         packets (100000)\n"
"  --seed N          (1)\n"
"  --batch N         packets a sendmmsg() (64, at most 256)\n"
"  --rate PPS        at most this many packets a second (0: no limit)\n"
"  --dry-run         generate and tally, send nothing, learn nothing\n"
"                    (bases 2^31 and 2^31 - 100)\n"
"  --allow-init-netns  -v: every packet's length on stderr\n";

enum {
	O_DST = 256, O_DQPN, O_SQPN, O_LEARN, O_LWAIT, O_SPOOF, O_AVOID,
	O_RKEY, O_COUNT, O_SEED, O_BATCH, O_RATE, O_INITNS, O_DRY
};

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dst", 1, 0, O_DST }, { "dqpn", 1, 0, O_DQPN },
		{ "sqpn", 1, 0, O_SQPN }, { "learn", 1, 0, O_LEARN },
		{ "learn-wait", 1, 0, O_LWAIT }, { "spoof", 1, 0, O_SPOOF },
		{ "avoid-qpn", 1, 0, O_AVOID }, { "rkey", 1, 0, O_RKEY },
		{ "count", 1, 0, O_COUNT }, { "seed", 1, 0, O_SEED },
		{ "batch", 1, 0, O_BATCH }, { "rate", 1, 0, O_RATE },
		{ "allow-init-netns", 0, 0, O_INITNS }, { "dry-run", 0, 0, O_DRY },
		{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' }, { NULL, 0, 0, 0 }
	};
	bool dst = false;
	int c;

	inet_pton(AF_INET, "10.0.0.77", &O.spoof);
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case O_DST:
			if (inet_pton(AF_INET, optarg, &O.dst) != 1)
				die("bad --dst: %s", optarg);
			dst = true;
			break;
		case O_SPOOF:
			if (inet_pton(AF_INET, optarg, &O.spoof) != 1)
				die("bad --spoof: %s", optarg);
			break;
		case O_DQPN:
			O.dqpn = num(optarg, 0xffffff, "--dqpn");
			break;
		case O_SQPN:
			O.sqpn = num(optarg, 0xffffff, "--sqpn");
			break;
		case O_LEARN:
			O.learn_if = optarg;
			break;
		case O_LWAIT:
			O.learn_wait_ms = num(optarg, 600000, "--learn-wait");
			break;
		case O_AVOID:
			if (O.navoid == MAX_AVOID)
				die("at most %d --avoid-qpn", MAX_AVOID);
			O.avoid[O.navoid++] = num(optarg, 0xffffff, "--avoid-qpn");
			break;
		case O_RKEY:
			if (O.nrkeys == 8)
				die("at most 8 --rkey");
			O.rkeys[O.nrkeys++] = num(optarg, UINT32_MAX, "--rkey");
			break;
		case O_COUNT:
			O.count = num(optarg, 1ull << 40, "--count");
			break;
		case O_SEED:
			O.seed = num(optarg, UINT64_MAX, "--seed");
			break;
		case O_BATCH:
			O.batch = num(optarg, MAX_BATCH, "--batch");
			break;
		case O_RATE:
			O.rate = num(optarg, 100000000, "--rate");
			break;
		case O_INITNS:
			O.allow_init_ns = true;
			break;
		case O_DRY:
			O.dry_run = true;
			break;
		case 'v':
			O.verbose = true;
			break;
		case 'h':
			fputs(help_text, stdout);
			exit(0);
		default:
			fputs(help_text, stderr);
			exit(2);
		}
	}
	if (optind < argc || !dst || !O.dqpn || !O.sqpn || !O.learn_if ||
	    !O.batch)
		die("--dst, --dqpn, --sqpn and --learn are required (--help)");
}

static void print_result(u64 sent, u64 errors, u64 us)
{
	unsigned int k;

	printf("MRC_WIREFUZZ_RESULT sent=%llu errors=%llu elapsed_us=%llu pps=%llu",
	       sent, errors, us, us ? sent * 1000000 / us : 0);
	printf(" learned_req=%llu learned_ack=%llu base_req=%u base_ack=%u",
	       learned_req, learned_ack, base_req, base_ack);
	for (k = 0; k < NOPS; k++)
		printf(" op_%s=%llu", op_name[k], T_op[k]);
	for (k = 0; k < M_NR; k++)
		printf(" mut_%s=%llu", mut_name[k], T_mut[k]);
	for (k = 0; k < I_NR; k++)
		printf(" id_%s=%llu", id_name[k], T_id[k]);
	for (k = 1; k < MRC_DROP_NR; k++)
		printf(" expect_drop_%s=%llu", mrc_drop_name[k], T_drop[k]);
	printf(" expect_window=%llu", T_window);
	for (k = 0; k < Z_NR; k++)
		printf(" zone_%s=%llu", zone_name[k], T_zone[k]);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static u8 frames[MAX_BATCH][FRAME_HDR + MAX_DG];
	static struct mmsghdr mm[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	struct sockaddr_in to = { .sin_family = AF_INET };
	u64 sent = 0, errors = 0, t0, end, now;
	unsigned int n, i;
	int fd, r, one_ = 1;

	parse_args(argc, argv);
	if (O.dry_run) {
		learned_req = 1;
		learned_ack = 1;
		base_req = 1u << 31;
		base_ack = base_req - 100;
		t0 = now_us();
		for (; sent < O.count; sent++)
			one(frames[0]);
		print_result(sent, 0, now_us() - t0);
		return 0;
	}
	mrc_check_netns(O.allow_init_ns);
	mrc_check_dst(O.dst);
	O.src = mrc_route_src(O.dst, MRC_DEFAULT_UDP_PORT);
	to.sin_addr = O.dst;
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one_, sizeof(one_)))
		die("raw socket: %s (needs CAP_NET_RAW)", strerror(errno));
	open_learn();
	end = now_us() + (u64)O.learn_wait_ms * 1000;
	do {
		learn_poll();
		if (learned_req && learned_ack)
			break;
		usleep(1000);
	} while (now_us() < end);
	if (!learned_req && !learned_ack) {
		mrc_no_ack(O.dqpn, O.sqpn, O.learn_if, O.learn_wait_ms);
		print_result(0, 0, 0);
		return 3;
	}
	t0 = now_us();
	while (sent + errors < O.count) {
		learn_poll();
		n = O.count - sent - errors < O.batch ? O.count - sent - errors : O.batch;
		for (i = 0; i < n; i++) {
			iov[i].iov_base = frames[i];
			iov[i].iov_len = one(frames[i]);
			mm[i].msg_hdr = (struct msghdr){ .msg_name = &to,
				.msg_namelen = sizeof(to), .msg_iov = &iov[i],
				.msg_iovlen = 1 };
			if (O.verbose)
				fprintf(stderr, "#%llu len %zu\n", sent + errors + i,
					iov[i].iov_len - FRAME_HDR);
		}
		for (i = 0; i < n; i += r) {
			r = sendmmsg(fd, mm + i, n - i, 0);
			if (r <= 0) {
				/* count the one that failed, go on with the rest */
				if (errno != EINTR) {
					if (O.verbose || errors < 3)
						fprintf(stderr, "mrc_wirefuzz: send: %s\n",
							strerror(errno));
					errors++;
					r = 1;
				} else {
					r = 0;
				}
				continue;
			}
			sent += r;
		}
		if (O.rate) {
			now = now_us();
			end = t0 + (sent + errors) * 1000000 / O.rate;
			if (end > now)
				usleep(end - now);
		}
	}
	print_result(sent, errors, now_us() - t0);
	return errors ? 1 : 0;
}

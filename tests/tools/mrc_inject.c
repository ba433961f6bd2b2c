// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_inject: a hostile MetaRoCE peer for the test bed.
 *
 *   mrc_inject --dst IP --op OP --dqpn N --sqpn N [options]
 *
 * Builds MetaRoCE packets with the engine's own mrc_wire_build() (so they
 * are well formed unless asked otherwise), checks each with
 * mrc_wire_parse(), and sends them to IP:4792, either from an ordinary UDP
 * socket (any source port, the host's own address: a peer-host user) or,
 * with --raw, from a raw IPv4 or IPv6 socket that writes the IP and UDP
 * headers itself (a spoofed source address and port, TTL or hop limit,
 * DSCP/ECN or traffic class, a zero or wrong UDP checksum).  --dst picks
 * the family: an IPv6 address sends over IPv6, where a zero UDP checksum
 * is not allowed (RFC 8200; spec MRC-TRN-6) and so is what --udp-csum zero
 * tests.
 *
 * PSNs: --psn N, or --psn-rel R from a base: --base N, or --learn IFACE,
 * which sniffs IFACE for the ACKs of the connection (over --dst's IP
 * version) and takes the cumulative PSN of the newest one as the base,
 * again before every packet (with --base too, that is the base until an
 * ACK is seen; alone, no ACK within --learn-wait is an error, exit
 * status 3):
 *   - for a request (any --op but ack), the ACKs the victim (--dst,
 *     QP --dqpn) sends to its peer (QP --sqpn): base = the victim's
 *     receive PSN (rcv_nxt), so --psn-rel -1 is just below it;
 *   - for an ACK, the ACKs the peer sends to the victim: base = the
 *     victim's oldest unacknowledged PSN (snd_una), as far as the peer
 *     knows.
 * Packet i gets PSN base + rel + step * (i mod span).
 *
 * Malformed datagrams: --truncate, --corrupt, --garbage.  Every datagram
 * sent is run through mrc_wire_parse() first and its verdict tallied, so
 * the receiver's drop_* counters can be checked against the tally.
 *
 * Last line:
 *   MRC_INJECT_RESULT sent=N errors=E bytes=B elapsed_us=T max_send_us=S
 *                     base=P learned=L first_psn=F last_psn=G parse_ok=K
 *                     [reject_REASON=M ...]
 * (max_send_us: the longest send call, which includes the receiver's
 * softirq when the victim is on this host; learned: ACKs the base was
 * learned from; reject_REASON: datagrams mrc_wire_parse rejects so).  Exit status 0 if every
 * datagram was sent.
 *
 * Safety: it sends to --dst only, never to a broadcast or multicast
 * address, and refuses to run in the initial network namespace (the test
 * bed's hosts are namespaces) unless --allow-init-netns is given.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdint.h>

#define MRC_TOOL "mrc_inject"
#include "mrc_raw.h"

#define MAX_DGRAM	9000
#define MAX_CORRUPT	16
#define LEARN_BUF	(MAX_DGRAM + 64)

struct name_val {
	const char *name;
	unsigned int val;
};

static const struct name_val op_names[] = {
	{ "send", MRC_OP_SEND }, { "write", MRC_OP_WRITE },
	{ "read_req", MRC_OP_READ_REQ }, { "atomic_cs", MRC_OP_ATOMIC_CS },
	{ "atomic_fa", MRC_OP_ATOMIC_FA }, { "ud_send", MRC_OP_UD_SEND },
	{ "read_resp", MRC_OP_READ_RESP }, { "atomic_resp", MRC_OP_ATOMIC_RESP },
	{ "ack", MRC_OP_ACK }, { NULL, 0 }
};

static const struct name_val flag_names[] = {
	{ "ackreq", MRC_F_ACKREQ }, { "solicited", MRC_F_SOLICITED },
	{ "retx", MRC_F_RETX }, { "last", MRC_F_LAST }, { "imm", MRC_F_IMM },
	{ "inv", MRC_F_INV }, { "ordered", MRC_F_ORDERED },
	{ "credit", MRC_F_CREDIT }, { NULL, 0 }
};

static const struct name_val ackf_names[] = {
	{ "ce", MRC_ACKF_CE }, { "dup", MRC_ACKF_DUP }, { "ooo", MRC_ACKF_OOO },
	{ "held", MRC_ACKF_HELD },
	{ NULL, 0 }
};

static const struct name_val syn_names[] = {
	{ "ack", MRC_SYN_ACK }, { "rnr", MRC_SYN_RNR },
	{ "inv_req", MRC_SYN_INV_REQ }, { "rem_access", MRC_SYN_REM_ACCESS },
	{ "rem_op", MRC_SYN_REM_OP }, { NULL, 0 }
};

static struct {
	struct in_addr dst, src;
	struct in6_addr dst6, src6;	/* if v6 */
	bool have_dst, have_src, raw, allow_init_ns, force, garbage;
	bool v6, src_v6;
	unsigned int dport, sport, sport_span, ttl, dscp, ecn;
	enum { CSUM_OK, CSUM_ZERO, CSUM_BAD } csum;
	const char *learn_if;
	unsigned int learn_wait_ms;
	bool have_psn, have_base, have_tsval, have_flags;
	u32 psn, base;
	s64 psn_rel, psn_step;
	u64 psn_span, count, interval_us;
	s64 tsval_ago;
	u32 tsval;
	unsigned int flags, add_flags;
	bool have_ts_echo, have_nak_rel;
	s64 ts_echo_ago, nak_rel;
	u32 len;
	bool have_msg_len;
	u32 msg_len;
	u8 fill;
	int truncate;
	unsigned int ncorrupt;
	struct { unsigned int off; u8 val; } corrupt[MAX_CORRUPT];
	u64 seed;
	int verbose;
} O = {
	.dport = MRC_DEFAULT_UDP_PORT, .ttl = 64, .count = 1, .psn_span = 0,
	.learn_wait_ms = 3000, .truncate = -1, .fill = 0x5c, .tsval_ago = 0,
	.seed = 1,
};

static struct mrc_pkt P;	/* the header template, host order */

/* reproducible with --seed */
static u64 rnd(void)
{
	return mrc_splitmix64(&O.seed);
}

/* a comma list of names from @tab, or a number */
static unsigned int names(const char *s, const struct name_val *tab,
			  unsigned int max, const char *what)
{
	char *dup, *tok, *save = NULL;
	unsigned int v = 0, i;

	if (!*s || (*s >= '0' && *s <= '9'))
		return num(s, max, what);
	dup = strdup(s);
	if (!dup)
		die("out of memory");
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; tab[i].name; i++)
			if (!strcmp(tok, tab[i].name))
				break;
		if (!tab[i].name)
			die("unknown %s: %s", what, tok);
		v |= tab[i].val;
	}
	free(dup);
	return v;
}

static unsigned int one_name(const char *s, const struct name_val *tab,
			     unsigned int max, const char *what)
{
	unsigned int i;

	for (i = 0; tab[i].name; i++)
		if (!strcmp(s, tab[i].name))
			return tab[i].val;
	return num(s, max, what);
}

/* the flags a real sender puts on a lone packet of @op */
static unsigned int default_flags(unsigned int op)
{
	switch (op) {
	case MRC_OP_SEND:
	case MRC_OP_WRITE:
		return MRC_F_LAST | MRC_F_ACKREQ;
	case MRC_OP_READ_REQ:
		return MRC_F_LAST | MRC_F_ACKREQ;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		return MRC_F_ACKREQ;
	default:
		return 0;
	}
}

static const char help_text[] =
"usage: mrc_inject --dst IP --op OP --dqpn N --sqpn N [options]\n"
"target:\n"
"  --dst IP             victim IPv4 or IPv6 address (required)\n"
"  --dport N            UDP port (%u)\n"
"  --src IP             UDP: local address to bind; --raw: source to write\n"
"                       (of --dst's family)\n"
"  --sport N            source port (UDP: bind; raw: header; default: any)\n"
"  --sport-span N       raw: source port cycles over N values from --sport\n"
"  --raw                raw IPv4/IPv6 socket (IPPROTO_RAW: the headers are\n"
"                       ours): spoofing, --udp-csum\n"
"  --ttl N  --dscp N  --ecn N  --ce (ECN CE = --ecn 3)  (IPv6: hop limit,\n"
"                       traffic class)\n"
"  --udp-csum ok|zero|bad   raw only (ok)\n"
"header:\n"
"  --op OP              send|write|read_req|atomic_cs|atomic_fa|ud_send|\n"
"                       read_resp|atomic_resp|ack\n"
"  --dqpn N  --sqpn N   QP numbers (required)\n"
"  --psn N | --ack-cum N           PSN (an ACK's cumulative PSN)\n"
"  --base N | --learn IFACE        base for --psn-rel (see the source)\n"
"  --learn-wait MS      wait this long for the first ACK to learn from (3000)\n"
"  --psn-rel R  --psn-step S  --psn-span K\n"
"                       packet i: PSN base + R + S * (i mod K) (K: --count)\n"
"  --tsval N | --tsval-ago US      sender timestamp (default: now)\n"
"  --flags LIST         replace the op's usual flags (names: ackreq,\n"
"                       solicited,retx,last,imm,inv,ordered,credit; or N)\n"
"  --add-flags LIST     add to them\n"
"  --pmtu-shift N       segment size log2 (12; an ACK: 0)\n"
"  --va N --rkey N --offset N --rmsn N --imm N --qkey N\n"
"  --len N              READ_REQ: msg_len; others: payload bytes (0)\n"
"  --msg-len N          READ_RESP: total READ length (--offset + --len)\n"
"  --swap N --compare N --orig N     atomics\n"
"  --ack-syndrome S     ack|rnr|inv_req|rem_access|rem_op|N\n"
"  --ack-credit N --ack-ce N --ack-dgram N --ack-delay N --ack-rnr N\n"
"  --ack-entropy N\n"
"  --ack-nak-psn N | --ack-nak-rel R   NAK PSN (DUP: the duplicate PSN);\n"
"                       R: relative to the packet's cumulative PSN\n"
"  --ack-flags LIST     ce,dup,ooo or N\n"
"  --ack-ts-echo N | --ack-ts-echo-ago US\n"
"  --sack HEX           a SACK word (repeat, up to %d)\n"
"malformed datagrams (each still tallied by mrc_wire_parse):\n"
"  --truncate N         send only the first N bytes\n"
"  --corrupt OFF:VAL    set byte OFF of the datagram to VAL (repeat)\n"
"  --garbage            random mutations of the packet, drawn again until\n"
"                       mrc_wire_parse rejects the result\n"
"  --force              send a packet that would not parse without asking\n"
"  --seed N             for --garbage (1)\n"
"sending:\n"
"  --count N (1)  --interval US (0)  --rate PPS\n"
"  --allow-init-netns   run in the initial network namespace\n"
"  -v, --verbose        print every packet\n";

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout, help_text, MRC_DEFAULT_UDP_PORT,
		MRC_ACK_MAX_SACKW);
	exit(rc);
}

enum {
	O_DST = 256, O_DPORT, O_SRC, O_SPORT, O_SPAN, O_RAW, O_TTL, O_DSCP,
	O_ECN, O_CE, O_CSUM, O_OP, O_DQPN, O_SQPN, O_PSN, O_BASE, O_LEARN,
	O_LWAIT, O_REL, O_STEP, O_PSPAN, O_TSVAL, O_TSAGO, O_FLAGS, O_ADDF,
	O_PMTU, O_VA, O_RKEY, O_OFFSET, O_RMSN, O_IMM, O_QKEY, O_LEN, O_MSGLEN,
	O_SWAP, O_CMP, O_ORIG, O_SYN, O_CREDIT, O_ACKCE, O_DGRAM, O_DELAY,
	O_RNR, O_ENTROPY, O_NAKPSN, O_ACKF, O_TSECHO, O_TSEAGO, O_SACK,
	O_TRUNC, O_CORRUPT, O_GARBAGE, O_FORCE, O_SEED, O_COUNT, O_IVAL,
	O_RATE, O_INITNS, O_NAKREL,
};

static const struct option lopts[] = {
	{ "dst", 1, 0, O_DST }, { "dport", 1, 0, O_DPORT },
	{ "src", 1, 0, O_SRC }, { "sport", 1, 0, O_SPORT },
	{ "sport-span", 1, 0, O_SPAN }, { "raw", 0, 0, O_RAW },
	{ "ttl", 1, 0, O_TTL }, { "dscp", 1, 0, O_DSCP },
	{ "ecn", 1, 0, O_ECN }, { "ce", 0, 0, O_CE },
	{ "udp-csum", 1, 0, O_CSUM }, { "op", 1, 0, O_OP },
	{ "dqpn", 1, 0, O_DQPN }, { "sqpn", 1, 0, O_SQPN },
	{ "psn", 1, 0, O_PSN }, { "ack-cum", 1, 0, O_PSN },
	{ "base", 1, 0, O_BASE }, { "learn", 1, 0, O_LEARN },
	{ "learn-wait", 1, 0, O_LWAIT }, { "psn-rel", 1, 0, O_REL },
	{ "psn-step", 1, 0, O_STEP }, { "psn-span", 1, 0, O_PSPAN },
	{ "tsval", 1, 0, O_TSVAL }, { "tsval-ago", 1, 0, O_TSAGO },
	{ "flags", 1, 0, O_FLAGS }, { "add-flags", 1, 0, O_ADDF },
	{ "pmtu-shift", 1, 0, O_PMTU }, { "va", 1, 0, O_VA },
	{ "rkey", 1, 0, O_RKEY }, { "offset", 1, 0, O_OFFSET },
	{ "rmsn", 1, 0, O_RMSN }, { "imm", 1, 0, O_IMM },
	{ "qkey", 1, 0, O_QKEY }, { "len", 1, 0, O_LEN },
	{ "msg-len", 1, 0, O_MSGLEN }, { "swap", 1, 0, O_SWAP },
	{ "compare", 1, 0, O_CMP }, { "orig", 1, 0, O_ORIG },
	{ "ack-syndrome", 1, 0, O_SYN }, { "ack-credit", 1, 0, O_CREDIT },
	{ "ack-ce", 1, 0, O_ACKCE }, { "ack-dgram", 1, 0, O_DGRAM },
	{ "ack-delay", 1, 0, O_DELAY }, { "ack-rnr", 1, 0, O_RNR },
	{ "ack-entropy", 1, 0, O_ENTROPY }, { "ack-nak-psn", 1, 0, O_NAKPSN },
	{ "ack-nak-rel", 1, 0, O_NAKREL },
	{ "ack-flags", 1, 0, O_ACKF }, { "ack-ts-echo", 1, 0, O_TSECHO },
	{ "ack-ts-echo-ago", 1, 0, O_TSEAGO }, { "sack", 1, 0, O_SACK },
	{ "truncate", 1, 0, O_TRUNC }, { "corrupt", 1, 0, O_CORRUPT },
	{ "garbage", 0, 0, O_GARBAGE }, { "force", 0, 0, O_FORCE },
	{ "seed", 1, 0, O_SEED }, { "count", 1, 0, O_COUNT },
	{ "interval", 1, 0, O_IVAL }, { "rate", 1, 0, O_RATE },
	{ "allow-init-netns", 0, 0, O_INITNS },
	{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' },
	{ NULL, 0, 0, 0 }
};

/* an IPv4 address into @a or an IPv6 one into @a6; *@v6 says which */
static void parse_addr(const char *s, struct in_addr *a, struct in6_addr *a6,
		       bool *v6, const char *what)
{
	*v6 = false;
	if (inet_pton(AF_INET, s, a) == 1)
		return;
	*v6 = true;
	if (inet_pton(AF_INET6, s, a6) != 1)
		die("bad %s (an IPv4 or IPv6 address): %s", what, s);
}

static void parse_corrupt(const char *s)
{
	char *colon = strchr(s, ':');
	char off[32];

	if (!colon || colon - s >= (long)sizeof(off))
		die("bad --corrupt (OFF:VAL): %s", s);
	if (O.ncorrupt == MAX_CORRUPT)
		die("at most %d --corrupt", MAX_CORRUPT);
	memcpy(off, s, colon - s);
	off[colon - s] = 0;
	O.corrupt[O.ncorrupt].off = num(off, MAX_DGRAM - 1, "--corrupt offset");
	O.corrupt[O.ncorrupt].val = num(colon + 1, 255, "--corrupt value");
	O.ncorrupt++;
}

/* header fields as given; build_template() puts them where the op wants */
static struct {
	unsigned int op, syndrome, ack_flags, rnr, sack_words;
	u32 dqpn, sqpn, rkey, offset, rmsn, imm, qkey, credit, delay;
	u32 nak_psn, ts_echo;
	u64 va, swap, compare, orig, sack[MRC_ACK_MAX_SACKW];
	u16 ce_count, max_dgram, entropy;
	int pmtu_shift;
} H = { .pmtu_shift = -1 };

/* a header field option; returns true if it took @c */
static bool parse_hdr_opt(int c, const char *a)
{
	switch (c) {
	case O_OP:
		H.op = one_name(a, op_names, 255, "--op");
		break;
	case O_DQPN:
		H.dqpn = num(a, UINT32_MAX, "--dqpn");
		break;
	case O_SQPN:
		H.sqpn = num(a, UINT32_MAX, "--sqpn");
		break;
	case O_PMTU:
		H.pmtu_shift = num(a, 255, "--pmtu-shift");
		break;
	case O_VA:
		H.va = num(a, UINT64_MAX, "--va");
		break;
	case O_RKEY:
		H.rkey = num(a, UINT32_MAX, "--rkey");
		break;
	case O_OFFSET:
		H.offset = num(a, UINT32_MAX, "--offset");
		break;
	case O_RMSN:
		H.rmsn = num(a, UINT32_MAX, "--rmsn");
		break;
	case O_IMM:
		H.imm = num(a, UINT32_MAX, "--imm");
		break;
	case O_QKEY:
		H.qkey = num(a, UINT32_MAX, "--qkey");
		break;
	case O_SWAP:
		H.swap = num(a, UINT64_MAX, "--swap");
		break;
	case O_CMP:
		H.compare = num(a, UINT64_MAX, "--compare");
		break;
	case O_ORIG:
		H.orig = num(a, UINT64_MAX, "--orig");
		break;
	case O_SYN:
		H.syndrome = one_name(a, syn_names, 255, "--ack-syndrome");
		break;
	case O_CREDIT:
		H.credit = num(a, UINT32_MAX, "--ack-credit");
		break;
	case O_ACKCE:
		H.ce_count = num(a, 0xffff, "--ack-ce");
		break;
	case O_DGRAM:
		H.max_dgram = num(a, 0xffff, "--ack-dgram");
		break;
	case O_DELAY:
		H.delay = num(a, UINT32_MAX, "--ack-delay");
		break;
	case O_RNR:
		H.rnr = num(a, 255, "--ack-rnr");
		break;
	case O_ENTROPY:
		H.entropy = num(a, 0xffff, "--ack-entropy");
		break;
	case O_NAKPSN:
		H.nak_psn = num(a, UINT32_MAX, "--ack-nak-psn");
		break;
	case O_TSECHO:
		H.ts_echo = num(a, UINT32_MAX, "--ack-ts-echo");
		break;
	case O_ACKF:
		H.ack_flags = names(a, ackf_names, 255, "--ack-flags");
		break;
	case O_SACK:
		if (H.sack_words == MRC_ACK_MAX_SACKW)
			die("at most %d --sack", MRC_ACK_MAX_SACKW);
		H.sack[H.sack_words++] = num(a, UINT64_MAX, "--sack");
		break;
	default:
		return false;
	}
	return true;
}

static void parse_args(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "vh", lopts, NULL)) != -1) {
		if (parse_hdr_opt(c, optarg))
			continue;
		switch (c) {
		case O_DST:
			parse_addr(optarg, &O.dst, &O.dst6, &O.v6, "--dst");
			O.have_dst = true;
			break;
		case O_DPORT:
			O.dport = num(optarg, 65535, "--dport");
			break;
		case O_SRC:
			parse_addr(optarg, &O.src, &O.src6, &O.src_v6, "--src");
			O.have_src = true;
			break;
		case O_SPORT:
			O.sport = num(optarg, 65535, "--sport");
			break;
		case O_SPAN:
			O.sport_span = num(optarg, 65535, "--sport-span");
			break;
		case O_RAW:
			O.raw = true;
			break;
		case O_TTL:
			O.ttl = num(optarg, 255, "--ttl");
			break;
		case O_DSCP:
			O.dscp = num(optarg, 63, "--dscp");
			break;
		case O_ECN:
			O.ecn = num(optarg, 3, "--ecn");
			break;
		case O_CE:
			O.ecn = 3;
			break;
		case O_CSUM:
			if (!strcmp(optarg, "ok"))
				O.csum = CSUM_OK;
			else if (!strcmp(optarg, "zero"))
				O.csum = CSUM_ZERO;
			else if (!strcmp(optarg, "bad"))
				O.csum = CSUM_BAD;
			else
				die("bad --udp-csum: %s", optarg);
			break;
		case O_PSN:
			O.psn = num(optarg, UINT32_MAX, "--psn");
			O.have_psn = true;
			break;
		case O_BASE:
			O.base = num(optarg, UINT32_MAX, "--base");
			O.have_base = true;
			break;
		case O_LEARN:
			O.learn_if = optarg;
			break;
		case O_LWAIT:
			O.learn_wait_ms = num(optarg, 600000, "--learn-wait");
			break;
		case O_REL:
			O.psn_rel = snum(optarg, "--psn-rel");
			break;
		case O_STEP:
			O.psn_step = snum(optarg, "--psn-step");
			break;
		case O_PSPAN:
			O.psn_span = num(optarg, UINT32_MAX, "--psn-span");
			break;
		case O_TSVAL:
			O.tsval = num(optarg, UINT32_MAX, "--tsval");
			O.have_tsval = true;
			break;
		case O_TSAGO:
			O.tsval_ago = snum(optarg, "--tsval-ago");
			break;
		case O_FLAGS:
			O.flags = names(optarg, flag_names, 255, "--flags");
			O.have_flags = true;
			break;
		case O_ADDF:
			O.add_flags |= names(optarg, flag_names, 255, "--add-flags");
			break;
		case O_LEN:
			O.len = num(optarg, UINT32_MAX, "--len");
			break;
		case O_MSGLEN:
			O.msg_len = num(optarg, UINT32_MAX, "--msg-len");
			O.have_msg_len = true;
			break;
		case O_TSEAGO:
			O.ts_echo_ago = snum(optarg, "--ack-ts-echo-ago");
			O.have_ts_echo = true;
			break;
		case O_NAKREL:
			O.nak_rel = snum(optarg, "--ack-nak-rel");
			O.have_nak_rel = true;
			break;
		case O_TRUNC:
			O.truncate = num(optarg, MAX_DGRAM, "--truncate");
			break;
		case O_CORRUPT:
			parse_corrupt(optarg);
			break;
		case O_GARBAGE:
			O.garbage = true;
			break;
		case O_FORCE:
			O.force = true;
			break;
		case O_SEED:
			O.seed = num(optarg, UINT64_MAX, "--seed");
			break;
		case O_COUNT:
			O.count = num(optarg, UINT64_MAX, "--count");
			break;
		case O_IVAL:
			O.interval_us = num(optarg, UINT32_MAX, "--interval");
			break;
		case O_RATE:
			O.interval_us = 1000000 / num(optarg, 1000000, "--rate");
			break;
		case O_INITNS:
			O.allow_init_ns = true;
			break;
		case 'v':
			O.verbose++;
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind < argc)
		usage(2);
	if (!O.have_dst || !H.op)
		die("--dst and --op are required (--help)");
	if (O.have_src && O.src_v6 != O.v6)
		die("--src and --dst: not of one IP version");
}

/* the header of every packet; PSN and timestamps are set per packet */
static u32 build_template(void)
{
	u32 pay = 0;

	memset(&P, 0, sizeof(P));
	P.opcode = H.op;
	P.dqpn = H.dqpn;
	P.sqpn = H.sqpn;
	P.flags = (O.have_flags ? O.flags : default_flags(H.op)) | O.add_flags;
	if (H.pmtu_shift >= 0)
		P.pmtu_shift = H.pmtu_shift;
	else
		P.pmtu_shift = H.op == MRC_OP_ACK ? 0 : MRC_PMTU_IB_SHIFT;

	switch (H.op) {
	case MRC_OP_SEND:
	case MRC_OP_WRITE:
		P.req.va = H.va;
		P.req.rkey = H.rkey;
		P.req.offset = H.offset;
		P.req.rmsn = H.rmsn;
		P.req.imm = H.imm;
		P.req.msg_len = O.have_msg_len ? O.msg_len : O.len;
		pay = O.len;
		break;
	case MRC_OP_READ_REQ:
		P.req.va = H.va;
		P.req.rkey = H.rkey;
		P.req.msg_len = O.len;
		P.req.offset = H.offset;
		P.req.rmsn = H.rmsn;
		break;
	case MRC_OP_ATOMIC_CS:
	case MRC_OP_ATOMIC_FA:
		P.atomic.va = H.va;
		P.atomic.rkey = H.rkey;
		P.atomic.swap_add = H.swap;
		P.atomic.compare = H.compare;
		break;
	case MRC_OP_UD_SEND:
		P.ud.qkey = H.qkey;
		P.ud.imm = H.imm;
		pay = O.len;
		break;
	case MRC_OP_READ_RESP:
		P.rresp.offset = H.offset;
		P.rresp.msg_len = O.have_msg_len ? O.msg_len : H.offset + O.len;
		pay = O.len;
		break;
	case MRC_OP_ATOMIC_RESP:
		P.aresp.orig = H.orig;
		break;
	case MRC_OP_ACK:
		P.ack.syndrome = H.syndrome;
		P.ack.sack_words = H.sack_words;
		P.ack.rnr_timer = H.rnr;
		P.ack.flags = H.ack_flags;
		P.ack.nak_psn = H.nak_psn;
		P.ack.ts_echo = H.ts_echo;
		P.ack.delay = H.delay;
		P.ack.ce_count = H.ce_count;
		P.ack.entropy = H.entropy;
		P.ack.credit = H.credit;
		P.ack.max_dgram = H.max_dgram;
		memcpy(P.ack.sack, H.sack, sizeof(H.sack));
		break;
	default:
		/* unknown opcodes only as --corrupt of a known one */
		die("--op %u: unknown opcode", H.op);
	}
	if (!mrc_wire_hdr_len(P.opcode, P.flags, P.ack.sack_words))
		die("no header for opcode %u", P.opcode);
	if (pay + mrc_wire_hdr_len(P.opcode, P.flags, P.ack.sack_words) >
	    MAX_DGRAM)
		die("--len %u: more than a %d-byte datagram", pay, MAX_DGRAM);
	P.pay_len = pay;
	return pay;
}

/* --- sockets ------------------------------------------------------------ */

static int tx_fd = -1;
static u16 own_sport;	/* our UDP socket's port (ignored by --learn) */
static union {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
} to;			/* where every packet goes */
static socklen_t to_len;

/* a raw socket; IPPROTO_RAW: we write the IP header (IP_HDRINCL) */
static void open_raw(void)
{
	tx_fd = socket(O.v6 ? AF_INET6 : AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (tx_fd < 0)
		die("raw socket: %s (needs CAP_NET_RAW)", strerror(errno));
	/* without --src: the address the route to --dst would use */
	if (!O.have_src && O.v6)
		O.src6 = mrc_route_src6(&O.dst6, O.dport);
	else if (!O.have_src)
		O.src = mrc_route_src(O.dst, O.dport);
	if (!O.sport)
		O.sport = 49152 + rnd() % 16384;
	own_sport = O.sport;
}

/* an ordinary UDP socket: the kernel writes the headers */
static void open_udp(void)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} me = { 0 };
	socklen_t sl = O.v6 ? sizeof(me.v6) : sizeof(me.v4);
	int tos = O.dscp << 2 | O.ecn, ttl = O.ttl, err;
	char s[INET6_ADDRSTRLEN] = "";

	tx_fd = socket(O.v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (tx_fd < 0)
		die("socket: %s", strerror(errno));
	if (O.v6) {
		err = setsockopt(tx_fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl,
				 sizeof(ttl)) ||
		      setsockopt(tx_fd, IPPROTO_IPV6, IPV6_TCLASS, &tos,
				 sizeof(tos));
		me.v6.sin6_family = AF_INET6;
		me.v6.sin6_addr = O.have_src ? O.src6 : in6addr_any;
		me.v6.sin6_port = htons(O.sport);
	} else {
		err = setsockopt(tx_fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) ||
		      setsockopt(tx_fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
		me.v4.sin_family = AF_INET;
		if (O.have_src)
			me.v4.sin_addr = O.src;
		me.v4.sin_port = htons(O.sport);
	}
	if (err)
		die("setsockopt: %s", strerror(errno));
	if (bind(tx_fd, &me.sa, sl) || getsockname(tx_fd, &me.sa, &sl)) {
		if (O.have_src)
			inet_ntop(O.v6 ? AF_INET6 : AF_INET,
				  O.v6 ? (void *)&O.src6 : (void *)&O.src, s,
				  sizeof(s));
		die("bind %s port %u: %s", s, O.sport, strerror(errno));
	}
	own_sport = ntohs(O.v6 ? me.v6.sin6_port : me.v4.sin_port);
}

static void open_tx(void)
{
	/* a raw socket's "port" is the protocol: 0 for the socket's own */
	if (O.v6) {
		to.v6.sin6_family = AF_INET6;
		to.v6.sin6_addr = O.dst6;
		to.v6.sin6_port = O.raw ? 0 : htons(O.dport);
		to_len = sizeof(to.v6);
	} else {
		to.v4.sin_family = AF_INET;
		to.v4.sin_addr = O.dst;
		to.v4.sin_port = O.raw ? 0 : htons(O.dport);
		to_len = sizeof(to.v4);
	}
	if (O.raw)
		open_raw();
	else
		open_udp();
}

/*
 * IP + UDP headers in front of the datagram, the UDP checksum as --udp-csum
 * asks; returns the frame length
 */
static size_t raw_frame(u8 *frame, const u8 *dg, size_t len,
			u16 sport)
{
	size_t hlen = O.v6 ? MRC_FRAME6_HDR : MRC_FRAME_HDR;
	struct udphdr *uh = (struct udphdr *)(frame + hlen - sizeof(*uh));
	struct mrc_raw_hdr h = {
		.src = O.src, .dst = O.dst, .sport = sport, .dport = O.dport,
		.tos = O.dscp << 2 | O.ecn, .ttl = O.ttl,
	};
	struct mrc_raw6_hdr h6 = {
		.src = O.src6, .dst = O.dst6, .sport = sport, .dport = O.dport,
		.tclass = O.dscp << 2 | O.ecn, .hlim = O.ttl,
	};
	size_t flen;
	u16 sum;

	memcpy(frame + hlen, dg, len);
	if (O.v6) {
		flen = mrc_raw_frame6(frame, len, &h6);
	} else {
		h.id = rnd();
		flen = mrc_raw_frame(frame, len, &h);
	}
	sum = ntohs(uh->check);
	if (O.csum == CSUM_ZERO)
		sum = 0;
	else if (O.csum == CSUM_BAD)
		sum = sum == 0x5555 ? 0x1234 : sum ^ 0x5555;
	uh->check = htons(sum);
	return flen;
}

static int send_one(const u8 *dg, size_t len, u64 i)
{
	static u8 frame[MAX_DGRAM + 64];
	u16 sport = O.sport;
	ssize_t r;

	if (!O.raw) {
		r = sendto(tx_fd, dg, len, 0, &to.sa, to_len);
	} else {
		if (O.sport_span)
			sport = O.sport + i % O.sport_span;
		r = sendto(tx_fd, frame, raw_frame(frame, dg, len, sport), 0,
			   &to.sa, to_len);
	}
	if (r < 0) {
		if (O.verbose)
			fprintf(stderr, "mrc_inject: send: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* --- learning the live PSN from the connection's ACKs -------------------- */

static int learn_fd = -1;
static u32 learned_base;
static u64 learned;

/*
 * The UDP datagram @uh (@len bytes from it) as an ACK to learn from into
 * @a: to --dport, not from our own port
 */
static bool learn_udp(const struct udphdr *uh, size_t len, struct mrc_pkt *a)
{
	if (len < sizeof(*uh) || ntohs(uh->dest) != O.dport ||
	    ntohs(uh->source) == own_sport)
		return false;
	len -= sizeof(*uh);
	if (ntohs(uh->len) >= sizeof(*uh) && ntohs(uh->len) - sizeof(*uh) < len)
		len = ntohs(uh->len) - sizeof(*uh);
	return mrc_parse_ack(uh + 1, len, a);
}

/* one sniffed IPv4 frame: an ACK of this connection moves the base */
static void learn_frame(const u8 *f, size_t len)
{
	const struct iphdr *ip = (const struct iphdr *)f;
	struct mrc_pkt a;
	size_t ihl;

	if (O.v6 || len < sizeof(*ip) || ip->version != 4 ||
	    ip->protocol != IPPROTO_UDP)
		return;
	ihl = ip->ihl * 4u;
	if (ihl < sizeof(*ip) || len < ihl ||
	    (ntohs(ip->frag_off) & (IP_MF | IP_OFFMASK)))
		return;
	/* an ACK op: the peer's ACKs to the victim; else the victim's */
	if (!learn_udp((const struct udphdr *)(f + ihl), len - ihl, &a) ||
	    !mrc_ack_of(ip, &a, O.dst, H.dqpn, H.sqpn, H.op != MRC_OP_ACK))
		return;
	mrc_learn_psn(&learned_base, &learned, a.psn);
}

/* the same for IPv6: UDP right after the fixed header (no extensions) */
static void learn_frame6(const u8 *f, size_t len)
{
	const struct ip6_hdr *ip6 = (const struct ip6_hdr *)f;
	struct mrc_pkt a;

	if (!O.v6 || len < sizeof(*ip6) || (ip6->ip6_vfc >> 4) != 6 ||
	    ip6->ip6_nxt != IPPROTO_UDP)
		return;
	if (!learn_udp((const struct udphdr *)(ip6 + 1), len - sizeof(*ip6),
		       &a) ||
	    !mrc_ack_of6(ip6, &a, &O.dst6, H.dqpn, H.sqpn,
			 H.op != MRC_OP_ACK))
		return;
	mrc_learn_psn(&learned_base, &learned, a.psn);
}

/* read what was sniffed; wait up to @wait_ms for the first ACK */
static void learn_poll(unsigned int wait_ms)
{
	static u8 buf[LEARN_BUF];
	u64 end = now_us() + (u64)wait_ms * 1000;
	struct sockaddr_ll from;
	socklen_t fl;
	unsigned int n = 0;
	ssize_t r;

	for (;;) {
		fl = sizeof(from);
		r = recvfrom(learn_fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &fl);
		if (r >= 0) {
			if ((size_t)r > sizeof(buf))
				r = sizeof(buf);
			if (from.sll_protocol == htons(ETH_P_IP))
				learn_frame(buf, r);
			else if (from.sll_protocol == htons(ETH_P_IPV6))
				learn_frame6(buf, r);
			/* a busy link: do not starve the sending */
			if (++n < 100000)
				continue;
		} else if (errno != EAGAIN && errno != EINTR) {
			die("--learn recv: %s", strerror(errno));
		}
		if (learned || now_us() >= end)
			return;
		usleep(1000);
	}
}

/* --- malformed datagrams -------------------------------------------------- */

static size_t malform(u8 *dg, size_t len)
{
	unsigned int i;

	for (i = 0; i < O.ncorrupt; i++)
		if (O.corrupt[i].off < len)
			dg[O.corrupt[i].off] = O.corrupt[i].val;
	if (O.truncate >= 0 && (size_t)O.truncate < len)
		len = O.truncate;
	return len;
}

/* random damage that mrc_wire_parse() rejects */
static size_t mutate(u8 *dg, size_t len, u32 hdr_len)
{
	static u8 orig[MAX_DGRAM];
	struct mrc_pkt q;
	unsigned int tries, k, n;
	size_t l;

	memcpy(orig, dg, len);
	for (tries = 0; tries < 10000; tries++) {
		memcpy(dg, orig, len);
		l = len;
		n = 1 + rnd() % 4;
		for (k = 0; k < n; k++)
			dg[rnd() % hdr_len] = rnd();
		if (rnd() % 4 == 0)
			l = rnd() % (len + 1);
		if (mrc_wire_parse(dg, l, &q))
			return l;
	}
	die("--garbage: no rejected mutation found");
	return 0;
}

/* --- main ----------------------------------------------------------------- */

static u64 tally[MRC_DROP_NR];

static u32 psn_of(u64 i, u32 base)
{
	u64 span = O.psn_span ? O.psn_span : O.count;

	return base + (u32)O.psn_rel + (u32)(O.psn_step * (s64)(i % span));
}

static void pause_until(u64 t)
{
	u64 now = now_us();

	if (t > now)
		usleep(t - now);
}

static void print_result(u64 sent, u64 errors, u64 bytes, u64 elapsed,
			 u64 max_us, u32 base, u32 first_psn, u32 last_psn)
{
	unsigned int k;

	printf("MRC_INJECT_RESULT sent=%llu errors=%llu bytes=%llu", sent,
	       errors, bytes);
	printf(" elapsed_us=%llu max_send_us=%llu base=%u learned=%llu",
	       elapsed, max_us, base, learned);
	printf(" first_psn=%u last_psn=%u parse_ok=%llu", first_psn, last_psn,
	       tally[MRC_DROP_NONE]);
	for (k = 1; k < MRC_DROP_NR; k++)
		if (tally[k])
			printf(" reject_%s=%llu", mrc_drop_name[k], tally[k]);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static u8 dg[MAX_DGRAM];
	u64 i, sent = 0, errors = 0, bytes = 0, t0, t1, ts, max_us = 0;
	u32 pay, hdr_len, psn = 0, first_psn = 0, base = 0;
	bool malformed;
	struct mrc_pkt q;
	size_t len;
	int err;
	unsigned int k;

	parse_args(argc, argv);
	mrc_check_netns(O.allow_init_ns);
	if (O.v6)
		mrc_check_dst6(&O.dst6);
	else
		mrc_check_dst(O.dst);
	pay = build_template();
	hdr_len = mrc_wire_hdr_len(P.opcode, P.flags, P.ack.sack_words);
	malformed = O.garbage || O.ncorrupt || O.truncate >= 0;
	open_tx();
	if (O.learn_if) {
		learn_fd = mrc_open_learn(O.learn_if, 0, NULL);
		learn_poll(O.learn_wait_ms);
		if (!learned) {
			mrc_no_ack(H.dqpn, H.sqpn, O.learn_if, O.learn_wait_ms);
			if (!O.have_base) {
				print_result(0, 0, 0, 0, 0, 0, 0, 0);
				return 3;
			}
		}
	}
	if (O.have_psn)
		base = O.psn;
	else if (O.have_base)
		base = O.base;

	t0 = now_us();
	for (i = 0; i < O.count; i++) {
		pause_until(t0 + i * O.interval_us);
		if (O.learn_if) {
			learn_poll(0);
			if (learned)
				base = learned_base;
		}
		psn = psn_of(i, base);
		if (!i)
			first_psn = psn;
		P.psn = psn;
		P.tsval = O.have_tsval ? O.tsval : mrc_clock() - (u32)O.tsval_ago;
		if (O.have_nak_rel)
			P.ack.nak_psn = psn + (u32)O.nak_rel;
		if (O.have_ts_echo)
			P.ack.ts_echo = mrc_clock() - (u32)O.ts_echo_ago;
		if (mrc_wire_build(dg, &P) != hdr_len)
			die("mrc_wire_build failed");
		for (k = 0; k < pay; k++)
			dg[hdr_len + k] = O.fill + k;
		len = hdr_len + pay;
		if (O.garbage)
			len = mutate(dg, len, hdr_len);
		len = malform(dg, len);
		err = mrc_wire_parse(dg, len, &q);
		if (err && !malformed && !O.force)
			die("packet %llu would be dropped as %s (--force sends it anyway)",
			    i, mrc_drop_name[-err]);
		if (O.verbose)
			fprintf(stderr, "mrc_inject: #%llu op 0x%02x psn %u len %zu parse %s\n",
				i, P.opcode, psn, len, err ? mrc_drop_name[-err] : "ok");
		ts = now_us();
		if (send_one(dg, len, i)) {
			errors++;
			continue;
		}
		/* the receive path may run in this syscall's softirq */
		ts = now_us() - ts;
		if (ts > max_us)
			max_us = ts;
		sent++;
		bytes += len;
		tally[-err]++;
	}
	t1 = now_us();

	print_result(sent, errors, bytes, t1 - t0, max_us, base, first_psn, psn);
	return errors || sent != O.count ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writes the seed corpus of the harnesses (make -C tests/fuzz corpus):
 * a valid packet of every opcode and flag variant, built with
 * mrc_wire_build(), and for the state-machine targets a few operation
 * streams in the harnesses' input format.
 *
 *   gen_corpus DIR      writes DIR/<target>/<name>
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <metaroce/mrc_wire.h>

static const char *dir;

static void put(const char *target, const char *name, const void *b,
		size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* header of @p plus @pay bytes of payload (a pattern) */
static void pkt(const char *name, struct mrc_pkt *p, u32 pay)
{
	u8 buf[MRC_HDR_MAX_LEN + 4096];
	struct mrc_pkt q;
	u32 n, i;

	p->pay_len = pay;
	n = mrc_wire_build(buf, p);
	if (!n || pay > 4096) {
		fprintf(stderr, "%s: cannot build\n", name);
		exit(1);
	}
	for (i = 0; i < pay; i++)
		buf[n + i] = (u8)(i * 7 + 1);
	/* seeds of accepted packets: the parser must take each */
	if (mrc_wire_parse(buf, n + pay, &q)) {
		fprintf(stderr, "%s: rejected (%d)\n", name,
			mrc_wire_parse(buf, n + pay, &q));
		exit(1);
	}
	put("wire", name, buf, n + pay);
}

static struct mrc_pkt base(u8 opcode, u8 flags)
{
	struct mrc_pkt p;

	memset(&p, 0, sizeof(p));
	p.opcode = opcode;
	p.flags = flags;
	p.dqpn = 0x000011;
	p.sqpn = 0x000012;
	p.psn = 0x00abcdef;
	p.tsval = 123456;
	return p;
}

static void wire(void)
{
	struct mrc_pkt p;
	int w;

	p = base(MRC_OP_SEND, MRC_F_ACKREQ);
	p.req.rmsn = 5;
	pkt("send", &p, 256);
	p.flags = MRC_F_LAST | MRC_F_IMM | MRC_F_SOLICITED;
	p.req.offset = 256;
	p.req.imm = 0xdeadbeef;
	pkt("send-last-imm", &p, 100);
	p.flags = MRC_F_LAST | MRC_F_INV | MRC_F_ORDERED;
	p.req.offset = 0;
	pkt("send-inv-empty", &p, 0);

	p = base(MRC_OP_WRITE, MRC_F_CREDIT);
	p.req.rkey = 0x1234;
	p.req.va = 0x7f0000001000ull;
	pkt("write", &p, 512);
	p.flags = MRC_F_LAST | MRC_F_IMM | MRC_F_SOLICITED | MRC_F_RETX;
	p.req.rmsn = 9;
	p.req.msg_len = 4096;
	p.req.imm = 42;
	pkt("write-last-imm", &p, 64);

	p = base(MRC_OP_READ_REQ, MRC_F_ACKREQ | MRC_F_LAST);
	p.pmtu_shift = 12;
	p.req.va = 0x10000;
	p.req.rkey = 77;
	p.req.msg_len = 10000;
	p.req.offset = 8192;
	p.req.rmsn = 3;
	pkt("read-req", &p, 0);

	p = base(MRC_OP_ATOMIC_CS, MRC_F_ACKREQ);
	p.pmtu_shift = 10;
	p.atomic.va = 0x2008;
	p.atomic.rkey = 5;
	p.atomic.swap_add = 1;
	p.atomic.compare = 2;
	pkt("atomic-cs", &p, 0);
	p.opcode = MRC_OP_ATOMIC_FA;
	p.atomic.compare = 0;
	pkt("atomic-fa", &p, 0);

	p = base(MRC_OP_READ_RESP, 0);
	p.pmtu_shift = 8;
	p.rresp.offset = 256;
	p.rresp.msg_len = 1024;
	pkt("read-resp", &p, 256);
	p.flags = MRC_F_RETX;
	p.rresp.offset = 768;
	p.rresp.msg_len = 1000;
	pkt("read-resp-last", &p, 232);

	p = base(MRC_OP_ATOMIC_RESP, 0);
	p.pmtu_shift = 12;
	p.aresp.orig = 0x0102030405060708ull;
	pkt("atomic-resp", &p, 0);

	p = base(MRC_OP_UD_SEND, MRC_F_IMM | MRC_F_SOLICITED);
	p.psn = 0;
	p.pmtu_shift = 12;
	p.ud.qkey = 0x80010000;
	p.ud.imm = 7;
	pkt("ud-imm", &p, 300);
	p.flags = 0;
	p.ud.imm = 0;
	pkt("ud", &p, 0);

	for (w = 0; w <= MRC_ACK_MAX_SACKW; w++) {
		char name[32];

		p = base(MRC_OP_ACK, 0);
		p.pmtu_shift = w ? 12 : 0;
		p.ack.sack_words = w;
		p.ack.flags = w & 1 ? MRC_ACKF_CE : MRC_ACKF_DUP;
		p.ack.ts_echo = 123000;
		p.ack.delay = 20;
		p.ack.ce_count = w;
		p.ack.entropy = 0xc123;
		p.ack.credit = 16;
		p.ack.max_dgram = 9000;
		for (int i = 0; i < w; i++)
			p.ack.sack[i] = 0x00ff00ff00ff00ffull << i;
		snprintf(name, sizeof(name), "ack-sack%d", w);
		pkt(name, &p, 0);
	}
	p = base(MRC_OP_ACK, 0);
	p.ack.syndrome = MRC_SYN_RNR;
	p.ack.rnr_timer = 14;
	p.ack.nak_psn = p.psn;
	pkt("nak-rnr", &p, 0);
	p.ack.syndrome = MRC_SYN_REM_ACCESS;
	p.ack.rnr_timer = 0;
	pkt("nak-access", &p, 0);
}

#define SEED(target, name, ...)						\
	do {								\
		static const u8 b[] = { __VA_ARGS__ };			\
		put(target, name, b, sizeof(b));			\
	} while (0)

/*
 * Streams in the harnesses' formats (see each fuzz_*.c): set-up bytes,
 * then one operation byte and its arguments at a time.
 */
static void streams(void)
{
	/* rx: window 64, PSN 1000; in order, a hole, SACK, a late WRITE */
	SEED("rx", "in-order", 6, 0xff, 0, 0, 3, 0xe8, 0,
	     0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 2, 8, 2, 3, 0, 0);
	SEED("rx", "holes-sack", 6, 0xff, 0, 0, 3, 0xe8,
	     0, 0, 0, 5, 1, 0, 0, 0, 9, 2, 2, 4, 3, 0, 0, 7,
	     1, 0, 0, 0, 4, 2, 4, 0, 0, 0, 0, 2);
	SEED("rx", "late-write", 10, 0xff, 0, 0, 0, 0,
	     4, 0, 3, 0, 0x10, 0, 0, 1, 0, 1,
	     4, 0, 1, 0, 0x08, 0, 0, 1, 0, 0x40, 0, 1,
	     4, 0, 0, 0, 0, 0, 0, 1, 0xff, 2, 1, 2, 3);
	SEED("rx", "wrap", 5, 0x01, 0, 0, 0, 0, 4, 1, 0, 0, 0, 2, 5, 2);
	/* tx: 16 slots, ISN at the wrap; send, ACK with SACK, timers */
	SEED("tx", "send-ack", 3, 0, 0, 0, 0, 16, 0, 100, 0, 0, 0, 1, 0,
	     0, 0, 0, 0, 0, 3, 0, 1, 0, 3, 0, 3, 0, 3,
	     0xf0, 1, 0x80, 3, 4, 0xe1, 0, 3, 1, 0x20, 7, 50, 3, 0xf0, 0, 0);
	SEED("tx", "loss-rto", 4, 0, 0, 0, 0, 32, 0, 0, 0, 0, 0, 1, 0, 0,
	     0, 0, 0, 0, 0, 0x83, 1, 7, 100, 3, 2, 1, 0x80, 1, 0, 7, 0xbf,
	     6, 0, 1, 5, 3, 0, 7, 0xfe, 0, 1, 0, 0, 5, 1, 0, 2, 0, 1, 1);
	SEED("tx", "read-resp", 4, 0x80, 0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0,
	     0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 0, 0, 4, 0, 4, 1, 4, 2,
	     4, 3, 3, 0xf0, 0, 0);
	/* credit: 4 flows with holds, data, grants, holds */
	SEED("credit", "holds", 3, 0x80, 0, 0, 0, 0, 2, 0, 16, 0, 250, 0x07,
	     0xd0, 1, 0, 0, 0x0f, 0xa0, 0, 0, 0x31, 0, 1, 0x32, 0, 2, 0x33,
	     0, 3, 0x34, 3, 4, 1, 5, 4, 2, 6, 2, 4, 3, 9, 5, 0, 7, 0);
	SEED("credit", "epochs", 1, 0x80, 0, 0, 0, 0, 4, 0, 64, 0, 100,
	     0, 50, 0, 0, 0x50, 0, 0x20, 0, 1, 0x55, 0, 0x30, 3, 0, 2, 0xd0,
	     0x10, 0, 0, 0x41, 0, 0x22, 3, 7, 0, 1, 0, 0, 1, 0, 0x10, 0, 0x11);
	/* path: 4 and 16 entropies, aware; picks, feedback, losses */
	SEED("path", "aware4", 4, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 7, 0, 1, 1,
	     3, 4, 1, 0x40, 5, 2, 0x85, 0, 0x10, 0, 0, 6, 3, 6, 3, 6, 3, 0,
	     1, 3, 7, 0x90, 7, 0xc0, 2, 8, 100, 1, 0, 7, 0x10, 1);
	SEED("path", "plain16", 16, 0, 0x80, 0, 0, 0, 0, 0x12, 0x34, 0x56,
	     0x78, 0, 0, 0, 0, 1, 0, 2, 0, 3, 6, 5, 9, 0xf5, 0x10, 0, 0, 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);
	wire();
	streams();
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host-side test of the invariant monitors: each monitor passes a packet
 * that keeps its rule and names the packet that breaks it.
 */
#include <stdio.h>
#include <string.h>

#include "monitor.h"

static int failures;

static struct mct_monitor mon;
static uint8_t dg[256];

/* the tester sent request PSNs 100..109, TSval 7, source port 50000 */
static void start(void)
{
	struct mct_ipmeta ip = { .sport = 50000 };
	struct mct_pkt p;

	mct_mon_reset(&mon);
	mct_template(&p, MCT_OP_WRITE);
	p.tsval = 7;
	for (int i = 0; i < 10; i++) {
		p.psn = 100 + i;
		mct_mon_sent(&mon, &p, &ip);
	}
}

static void ack(struct mct_pkt *p, uint32_t cum)
{
	mct_template(p, MCT_OP_ACK);
	p->psn = cum;
	p->ts_echo = 7;
	p->entropy = 50000;
}

/* feed p as a DUT packet; want 0 (fine) or -1 (violation) */
static void feed(const char *what, struct mct_pkt *p, int want,
		 const struct mct_ipmeta *ipm)
{
	struct mct_ipmeta ip = { .ecn = 2, .df = 1, .dport = MCT_PORT };
	struct mct_frame f = { 0 };
	int got;

	if (ipm)
		ip = *ipm;
	mct_fixup(p);
	f.udp_len = (uint32_t)mct_build(p, dg, sizeof(dg));
	f.udp_pay = dg;
	f.ip = ip;
	got = mct_mon_dut(&mon, &f);
	if (got != want) {
		failures++;
		printf("not ok %s: monitor said %d (%s), expected %d\n", what,
		       got, mon.err, want);
	} else {
		printf("ok %s%s%s\n", what, got ? ": " : "", got ? mon.err : "");
	}
}

static void acks(void)
{
	struct mct_pkt p;

	start();
	ack(&p, 103);
	p.sack_words = 1;
	p.sack[0] = 0x2;	/* PSN 105 */
	feed("ACK cum 103 SACK 105", &p, 0, NULL);
	ack(&p, 104);
	feed("ACK cum 104 drops the SACK of 105", &p, -1, NULL);
	start();
	ack(&p, 106);
	feed("ACK cum 106", &p, 0, NULL);
	ack(&p, 105);
	feed("ACK cum back to 105", &p, -1, NULL);
	start();
	ack(&p, 111);
	feed("ACK cum beyond the PSNs sent", &p, -1, NULL);
	start();
	ack(&p, 101);
	p.ts_echo = 8;
	feed("ACK echoes a TSval never sent", &p, -1, NULL);
	start();
	ack(&p, 101);
	p.entropy = 50001;
	feed("ACK echoes a source port never used", &p, -1, NULL);
	start();
	ack(&p, 101);
	p.ack_rsvd = 1;
	feed("ACK with a reserved byte set", &p, -1, NULL);
	start();
	ack(&p, 101);
	p.ack_flags = MCT_ACKF_DUP | MCT_ACKF_HELD;
	p.nak_psn = 100;
	feed("a duplicate's ACK with HELD", &p, 0, NULL);
	ack(&p, 101);
	p.ack_flags = MCT_ACKF_HELD;
	feed("ACK with HELD without DUP", &p, -1, NULL);
}

static void headers(void)
{
	struct mct_ipmeta ip = { .ecn = 2, .df = 1, .dport = MCT_PORT };
	struct mct_pkt p;

	start();
	ack(&p, 101);
	ip.ecn = 0;
	feed("Not-ECT", &p, -1, &ip);
	start();
	ip.ecn = 2;
	ip.df = 0;
	feed("DF clear", &p, -1, &ip);
	start();
	ip.df = 1;
	ip.bad_csum = 1;
	feed("bad UDP checksum", &p, -1, &ip);
	start();
	ip.bad_csum = 0;
	ip.dport = 4791;
	feed("to port 4791", &p, -1, &ip);
	start();
	ip.dport = MCT_PORT;
	ip.frag = 1;
	feed("an IP fragment", &p, -1, &ip);
	ip.frag = 0;
	start();
	mct_template(&p, MCT_OP_UD_SEND);
	p.pmtu = 10;
	ip.ecn = 0;
	feed("UD_SEND Not-ECT", &p, 0, &ip);
	ip.ecn = 2;
	feed("UD_SEND ECT(0)", &p, -1, &ip);
}

static void resends(void)
{
	struct mct_pkt p;

	start();
	mct_template(&p, MCT_OP_WRITE);
	p.psn = 5;
	p.tsval = 1;
	p.rkey = 0x77;
	feed("WRITE PSN 5", &p, 0, NULL);
	p.tsval = 2;
	p.flags |= MCT_F_RETX;
	feed("its resend with another TSval and RETX", &p, 0, NULL);
	p.rkey = 0x78;
	feed("a resend with another R_Key", &p, -1, NULL);
}

int main(void)
{
	acks();
	headers();
	resends();
	printf("monitor-test: %d failures\n", failures);
	return !!failures;
}

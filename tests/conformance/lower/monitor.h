/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariant monitors: checks on every captured packet of every test, so
 * that test files need not predict one implementation's ACK coalescing.
 */
#ifndef MCT_MONITOR_H
#define MCT_MONITOR_H

#include "codec.h"
#include "rawio.h"

#define MCT_MON_SENT	512

struct mct_monitor {
	/* what the tester sent: TSvals and source ports it may see echoed */
	uint32_t tsval[MCT_MON_SENT];
	uint16_t sport[MCT_MON_SENT];
	unsigned int n_ts, n_sport;
	uint32_t tst_next;	/* one past the highest request PSN sent */
	int tst_sent;
	/* ACKs from the DUT */
	int have_cum;
	uint32_t cum;
	uint32_t sacked[256];	/* PSNs SACKed and not yet below cum */
	unsigned int n_sacked;
	/* first copy of each DUT request, for the resend rule */
	struct { uint32_t psn; uint16_t len; uint8_t b[96]; } req[128];
	unsigned int n_req;
	unsigned int n_pkts;	/* DUT packets seen */
	char err[512];		/* the first violation, "" if none */
};

void mct_mon_reset(struct mct_monitor *m);
/* the tester sent this request or response (after mct_build) */
void mct_mon_sent(struct mct_monitor *m, const struct mct_pkt *p,
		  const struct mct_ipmeta *ip);
/* a captured DUT packet; 0 if fine, else -1 and m->err says why */
int mct_mon_dut(struct mct_monitor *m, const struct mct_frame *f);

#endif /* MCT_MONITOR_H */

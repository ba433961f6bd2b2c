// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Invariant monitors (conformance-design.md, "Shape of the suite"): every
 * packet the device under test sends must be valid by the spec's rules
 * (reserved fields zero), carry ECT(0) (UD_SEND: Not-ECT), DF and a
 * valid checksum, be no IP fragment (MRC-TRN-9), go to
 * the metaroce port; an ACK's cumulative PSN never goes back nor beyond
 * what was sent, a SACKed PSN is never un-SACKed, TS and entropy echoes
 * are values the tester sent, HELD comes only with DUP (MRC-ACK-31); a
 * resent request is identical to the first copy but for TSval, RETX and
 * CREDIT (MRC-REQ-1).  "Never un-SACKed" is MRC-ACK-4.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "monitor.h"

void mct_mon_reset(struct mct_monitor *m)
{
	memset(m, 0, sizeof(*m));
}

static int is_req(uint8_t op)
{
	return op >= MCT_OP_SEND && op <= MCT_OP_ATOMIC_FA;
}

static int before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

void mct_mon_sent(struct mct_monitor *m, const struct mct_pkt *p,
		  const struct mct_ipmeta *ip)
{
	uint32_t n = 1, end;

	if (m->n_ts < MCT_MON_SENT)
		m->tsval[m->n_ts++] = p->tsval;
	if (m->n_sport < MCT_MON_SENT)
		m->sport[m->n_sport++] = ip->sport;
	if (!is_req(p->opcode))
		return;
	if (p->opcode == MCT_OP_READ_REQ && p->pmtu < 32)
		n = p->msg_len ? (uint32_t)((p->msg_len + (1ull << p->pmtu) - 1) >> p->pmtu) : 1;
	end = p->psn + n;
	if (!m->tst_sent || before(m->tst_next, end))
		m->tst_next = end;
	m->tst_sent = 1;
}

static int fail(struct mct_monitor *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->err[0])
		return -1;
	n = snprintf(m->err, sizeof(m->err), "DUT packet %u: ", m->n_pkts);
	va_start(ap, fmt);
	vsnprintf(m->err + n, sizeof(m->err) - n, fmt, ap);
	va_end(ap);
	return -1;
}

static int seen32(const uint32_t *v, unsigned int n, uint32_t x)
{
	for (unsigned int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static int seen16(const uint16_t *v, unsigned int n, uint16_t x)
{
	for (unsigned int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static int sack_bit(const struct mct_pkt *p, uint32_t psn)
{
	uint32_t d = psn - p->psn - 1;

	if (d >= 64u * p->sack_words)
		return 0;
	return (p->sack[d / 64] >> (d % 64)) & 1;
}

static int check_ack(struct mct_monitor *m, const struct mct_pkt *p)
{
	unsigned int i, k = 0;

	if (m->have_cum && before(p->psn, m->cum))
		return fail(m, "MON cum went back: 0x%x after 0x%x", p->psn, m->cum);
	if (m->tst_sent && before(m->tst_next, p->psn))
		return fail(m, "MON cum 0x%x beyond the PSNs sent (next 0x%x)",
			    p->psn, m->tst_next);
	if (!m->n_ts || !seen32(m->tsval, m->n_ts, p->ts_echo))
		return fail(m, "MON TS echo 0x%x is no TSval the tester sent", p->ts_echo);
	if (!seen16(m->sport, m->n_sport, p->entropy))
		return fail(m, "MON entropy echo %u is no source port the tester sent",
			    p->entropy);
	if ((p->ack_flags & (MCT_ACKF_HELD | MCT_ACKF_DUP)) == MCT_ACKF_HELD)
		return fail(m, "MON HELD without DUP (MRC-ACK-31)");
	m->have_cum = 1;
	m->cum = p->psn;
	if (p->syndrome)
		return 0;
	/* earlier SACKs: still set unless now below cum or beyond reach */
	for (i = 0; i < m->n_sacked; i++) {
		uint32_t s = m->sacked[i];

		if (before(s, p->psn))
			continue;
		if (s - p->psn - 1 < 256 && !sack_bit(p, s))
			return fail(m, "MON PSN 0x%x was SACKed, now is not (cum 0x%x)",
				    s, p->psn);
		m->sacked[k++] = s;
	}
	m->n_sacked = k;
	for (uint32_t d = 0; d < 64u * p->sack_words; d++) {
		uint32_t s = p->psn + 1 + d;

		if (sack_bit(p, s) && !seen32(m->sacked, m->n_sacked, s) &&
		    m->n_sacked < 256)
			m->sacked[m->n_sacked++] = s;
	}
	return 0;
}

/* a resent request equals its first copy but for TSval, RETX, CREDIT */
static int check_resend(struct mct_monitor *m, const struct mct_frame *f,
			const struct mct_pkt *p)
{
	uint32_t len = f->udp_len < 96 ? f->udp_len : 96;
	uint8_t a[96], b[96];
	unsigned int i;

	if (p->opcode == MCT_OP_READ_REQ)
		return 0;	/* a re-request may ask for less */
	for (i = 0; i < m->n_req; i++)
		if (m->req[i].psn == p->psn)
			break;
	if (i == m->n_req) {
		if (m->n_req < 128) {
			m->req[i].psn = p->psn;
			m->req[i].len = (uint16_t)f->udp_len;
			memcpy(m->req[i].b, f->udp_pay, len);
			m->n_req++;
		}
		return 0;
	}
	if (m->req[i].len != f->udp_len)
		return fail(m, "MON resend of PSN 0x%x: %u bytes, first copy %u",
			    p->psn, f->udp_len, m->req[i].len);
	memcpy(a, m->req[i].b, len);
	memcpy(b, f->udp_pay, len);
	a[2] &= ~(MCT_F_RETX | MCT_F_CREDIT);
	b[2] &= ~(MCT_F_RETX | MCT_F_CREDIT);
	memset(a + 16, 0, 4);
	memset(b + 16, 0, 4);
	if (memcmp(a, b, len))
		return fail(m, "MON resend of PSN 0x%x differs from its first copy",
			    p->psn);
	return 0;
}

int mct_mon_dut(struct mct_monitor *m, const struct mct_frame *f)
{
	struct mct_verdict v;
	struct mct_pkt p;

	m->n_pkts++;
	if (f->ip.frag)
		return fail(m, "MON IP fragment (MRC-TRN-9: no fragmenting)");
	v = mct_parse(f->udp_pay, f->udp_len, &p);
	if (v.reason)
		return fail(m, "MON invalid packet: %s (Validation rule %s)",
			    mct_reason_name(v.reason), v.rule);
	if (f->ip.dport != MCT_PORT)
		return fail(m, "MON destination port %u", f->ip.dport);
	/* RC packets ECT(0) (MRC-TRN-11), datagrams Not-ECT */
	if (p.opcode == MCT_OP_UD_SEND ? f->ip.ecn != 0 : f->ip.ecn != 2)
		return fail(m, "MON ECN %u on %s", f->ip.ecn, mct_op_name(p.opcode));
	if (!f->ip.df)
		return fail(m, "MON DF clear");
	if (f->ip.bad_csum)
		return fail(m, "MON bad UDP checksum");
	if (f->ip.csum_zero)
		return fail(m, "MON UDP checksum 0 (none)");
	if (p.opcode == MCT_OP_ACK)
		return check_ack(m, &p);
	if (is_req(p.opcode))
		return check_resend(m, f, &p);
	return 0;
}

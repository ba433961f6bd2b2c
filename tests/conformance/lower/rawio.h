/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Raw I/O of the lower tester: UDP datagrams sent through raw IP sockets
 * (the tester writes the IP and UDP headers, so it controls ECN, DSCP,
 * TTL/hop limit, DF, the source port and the checksum), captured with
 * AF_PACKET on one interface with kernel timestamps.  A bound UDP socket
 * on the metaroce port keeps the tester's own kernel from answering
 * (no ICMP port unreachable).
 */
#ifndef MCT_RAWIO_H
#define MCT_RAWIO_H

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>

#define MCT_PORT	4792

struct mct_addr {
	int family;		/* AF_INET or AF_INET6 */
	struct in6_addr a;	/* IPv4 in the first 4 bytes */
};

/* IP and UDP fields of one datagram, sent or captured */
struct mct_ipmeta {
	uint8_t ecn, dscp, ttl, df;	/* df: IPv4 only */
	uint16_t sport, dport;
	int bad_csum;		/* send: corrupt it; capture: it was wrong */
	int csum_zero;		/* send: checksum 0; capture: it was 0 */
	int frag;		/* capture: an IP fragment (no UDP payload) */
	uint32_t flowlabel;
	int src_set;		/* send: from src, not from the tester */
	struct mct_addr src;
};

struct mct_frame {
	int out;		/* sent by the tester */
	struct mct_addr src, dst;
	struct mct_ipmeta ip;
	uint64_t t_ns;		/* capture time, CLOCK_REALTIME */
	uint8_t *l3;		/* the IP packet */
	uint32_t l3_len;
	uint8_t *udp_pay;	/* the UDP payload (the metaroce packet) */
	uint32_t udp_len;
};

struct mct_io {
	int raw4, raw6, cap, quiet4, quiet6;
	int ifindex;
	struct mct_addr self, peer;	/* of the test's address family */
	FILE *pcap;			/* every frame of the test, or NULL */
};

int mct_addr_parse(const char *s, struct mct_addr *a);
const char *mct_addr_str(const struct mct_addr *a, char *buf, size_t cap);
int mct_io_open(struct mct_io *io, const char *ifname);
void mct_io_close(struct mct_io *io);
/* frames the capture socket dropped since the last call */
unsigned int mct_io_drops(struct mct_io *io);
/* send one metaroce packet from io->self to io->peer */
int mct_io_send(struct mct_io *io, const struct mct_ipmeta *m,
		const uint8_t *pay, size_t len);
/*
 * Next captured UDP datagram to or from the metaroce port between self
 * and peer, within timeout_ms (-1: none left).  Returns 1 with *f filled
 * (its buffers valid until the next call), 0 on timeout, -1 on error.
 */
int mct_io_recv(struct mct_io *io, struct mct_frame *f, int timeout_ms);
/* drop what is queued (before a test starts) */
void mct_io_flush(struct mct_io *io);
int mct_pcap_open(struct mct_io *io, const char *path);
void mct_pcap_close(struct mct_io *io);
uint64_t mct_now_ns(void);

#endif /* MCT_RAWIO_H */

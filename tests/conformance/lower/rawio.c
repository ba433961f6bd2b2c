// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Raw sockets for sending, AF_PACKET for capturing, a pcap writer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rawio.h"

#ifndef IPV6_HDRINCL
#define IPV6_HDRINCL 36
#endif

uint64_t mct_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int mct_addr_parse(const char *s, struct mct_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, &a->a) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a->a) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -1;
}

const char *mct_addr_str(const struct mct_addr *a, char *buf, size_t cap)
{
	return inet_ntop(a->family, &a->a, buf, cap) ? buf : "?";
}

static uint32_t sum16(const void *p, size_t len, uint32_t s)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += b[i] << 8 | b[i + 1];
	if (len & 1)
		s += b[len - 1] << 8;
	return s;
}

/* UDP checksum over the pseudo-header and udp (header + payload) */
static uint16_t udp_csum(const struct mct_addr *src, const struct mct_addr *dst,
			 const uint8_t *udp, size_t len)
{
	size_t alen = src->family == AF_INET ? 4 : 16;
	uint32_t s = 0;

	s = sum16(&src->a, alen, s);
	s = sum16(&dst->a, alen, s);
	s += IPPROTO_UDP + (uint32_t)len;
	if (alen == 16)
		s += (uint32_t)len >> 16;
	s = sum16(udp, len, s);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	s = ~s & 0xffff;
	return s ? s : 0xffff;
}

int mct_io_open(struct mct_io *io, const char *ifname)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET };
	struct sockaddr_in6 q6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(MCT_PORT) };
	struct sockaddr_in q4 = { .sin_family = AF_INET,
				  .sin_port = htons(MCT_PORT) };
	int one = 1;

	io->raw4 = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	io->raw6 = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	io->cap = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
	io->quiet4 = socket(AF_INET, SOCK_DGRAM, 0);
	io->quiet6 = socket(AF_INET6, SOCK_DGRAM, 0);
	io->ifindex = if_nametoindex(ifname);
	if (io->raw4 < 0 || io->raw6 < 0 || io->cap < 0 || io->quiet4 < 0 ||
	    io->quiet6 < 0 || !io->ifindex)
		return -1;
	if (setsockopt(io->raw6, IPPROTO_IPV6, IPV6_HDRINCL, &one, sizeof(one)) ||
	    setsockopt(io->cap, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) ||
	    setsockopt(io->cap, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) ||
	    setsockopt(io->quiet6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		return -1;
	ll.sll_protocol = htons(ETH_P_ALL);
	ll.sll_ifindex = io->ifindex;
	if (bind(io->cap, (struct sockaddr *)&ll, sizeof(ll)))
		return -1;
	/* the tester's kernel must not answer 4792 with ICMP: a bound socket */
	if (bind(io->quiet4, (struct sockaddr *)&q4, sizeof(q4)) ||
	    bind(io->quiet6, (struct sockaddr *)&q6, sizeof(q6)))
		return -1;
	io->pcap = NULL;
	return 0;
}

unsigned int mct_io_drops(struct mct_io *io)
{
	struct tpacket_stats st = { 0 };
	socklen_t len = sizeof(st);

	if (getsockopt(io->cap, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		return 0;
	return st.tp_drops;
}

void mct_io_close(struct mct_io *io)
{
	close(io->raw4);
	close(io->raw6);
	close(io->cap);
	close(io->quiet4);
	close(io->quiet6);
	mct_pcap_close(io);
}

static size_t build_ip4(struct mct_io *io, const struct mct_ipmeta *m,
			uint8_t *b, size_t udp_len)
{
	struct iphdr *ip = (struct iphdr *)b;

	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = (uint8_t)(m->dscp << 2 | (m->ecn & 3));
	ip->tot_len = htons(sizeof(*ip) + udp_len);
	ip->frag_off = htons(m->df ? IP_DF : 0);
	ip->ttl = m->ttl;
	ip->protocol = IPPROTO_UDP;
	memcpy(&ip->saddr, m->src_set ? &m->src.a : &io->self.a, 4);
	memcpy(&ip->daddr, &io->peer.a, 4);
	return sizeof(*ip);
}

static size_t build_ip6(struct mct_io *io, const struct mct_ipmeta *m,
			uint8_t *b, size_t udp_len)
{
	struct ip6_hdr *ip = (struct ip6_hdr *)b;
	uint32_t tc = (uint32_t)(m->dscp << 2 | (m->ecn & 3));

	memset(ip, 0, sizeof(*ip));
	ip->ip6_flow = htonl(6u << 28 | tc << 20 | (m->flowlabel & 0xfffff));
	ip->ip6_plen = htons(udp_len);
	ip->ip6_nxt = IPPROTO_UDP;
	ip->ip6_hlim = m->ttl;
	ip->ip6_src = m->src_set ? m->src.a : io->self.a;
	ip->ip6_dst = io->peer.a;
	return sizeof(*ip);
}

int mct_io_send(struct mct_io *io, const struct mct_ipmeta *m,
		const uint8_t *pay, size_t len)
{
	static uint8_t b[65600];
	struct sockaddr_in6 d6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in d4 = { .sin_family = AF_INET };
	size_t udp_len = sizeof(struct udphdr) + len, hl;
	struct udphdr *udp;
	uint16_t cs;

	if (len > sizeof(b) - 48 - sizeof(*udp))
		return -1;
	if (io->self.family == AF_INET)
		hl = build_ip4(io, m, b, udp_len);
	else
		hl = build_ip6(io, m, b, udp_len);
	udp = (struct udphdr *)(b + hl);
	udp->source = htons(m->sport);
	udp->dest = htons(m->dport ? m->dport : MCT_PORT);
	udp->len = htons(udp_len);
	udp->check = 0;
	memcpy(udp + 1, pay, len);
	cs = udp_csum(m->src_set ? &m->src : &io->self, &io->peer,
		      (uint8_t *)udp, udp_len);
	if (m->bad_csum)
		cs ^= 0x5a5a;
	udp->check = m->csum_zero ? 0 : htons(cs);
	if (io->self.family == AF_INET) {
		memcpy(&d4.sin_addr, &io->peer.a, 4);
		return sendto(io->raw4, b, hl + udp_len, 0,
			      (struct sockaddr *)&d4, sizeof(d4)) < 0 ? -1 : 0;
	}
	d6.sin6_addr = io->peer.a;
	return sendto(io->raw6, b, hl + udp_len, 0,
		      (struct sockaddr *)&d6, sizeof(d6)) < 0 ? -1 : 0;
}

static int same(const struct mct_addr *a, const void *raw, int family)
{
	return a->family == family &&
	       !memcmp(&a->a, raw, family == AF_INET ? 4 : 16);
}

/* fill f from the IP packet in f->l3; 0 if it is ours to look at */
static int decode(struct mct_io *io, struct mct_frame *f, int csum_ready)
{
	const uint8_t *b = f->l3;
	struct udphdr *udp;
	struct mct_addr s = { 0 }, d = { 0 };
	size_t hl, ulen;

	if (f->l3_len >= 20 && b[0] >> 4 == 4) {
		hl = (b[0] & 15) * 4u;
		if (b[9] != IPPROTO_UDP || hl < 20 || f->l3_len < hl + 8)
			return -1;
		s.family = AF_INET;
		d.family = AF_INET;
		memcpy(&s.a, b + 12, 4);
		memcpy(&d.a, b + 16, 4);
		f->ip.dscp = b[1] >> 2;
		f->ip.ecn = b[1] & 3;
		f->ip.ttl = b[8];
		f->ip.df = !!(b[6] & 0x40);
		/* MF or an offset: a fragment (MRC-TRN-9), no UDP to read */
		f->ip.frag = (b[6] & 0x3f) || b[7];
	} else if (f->l3_len >= 48 && b[0] >> 4 == 6) {
		hl = 40;
		f->ip.frag = b[6] == IPPROTO_FRAGMENT;
		if (b[6] != IPPROTO_UDP && !f->ip.frag)
			return -1;
		s.family = AF_INET6;
		d.family = AF_INET6;
		memcpy(&s.a, b + 8, 16);
		memcpy(&d.a, b + 24, 16);
		f->ip.dscp = (uint8_t)(((b[0] & 15) << 4 | b[1] >> 4) >> 2);
		f->ip.ecn = (b[1] >> 4) & 3;
		f->ip.ttl = b[7];
		f->ip.df = 1;
		f->ip.flowlabel = (b[1] & 15u) << 16 | b[2] << 8 | b[3];
	} else {
		return -1;
	}
	if (!((same(&io->self, &s.a, s.family) && same(&io->peer, &d.a, d.family)) ||
	      (same(&io->peer, &s.a, s.family) && same(&io->self, &d.a, d.family))))
		return -1;
	if (f->ip.frag) {
		f->out = same(&io->self, &s.a, s.family);
		f->src = s;
		f->dst = d;
		return 0;
	}
	udp = (struct udphdr *)(b + hl);
	f->ip.sport = ntohs(udp->source);
	f->ip.dport = ntohs(udp->dest);
	if (f->ip.sport != MCT_PORT && f->ip.dport != MCT_PORT)
		return -1;
	ulen = ntohs(udp->len);
	if (ulen < 8 || hl + ulen > f->l3_len)
		return -1;
	f->out = same(&io->self, &s.a, s.family);
	f->src = s;
	f->dst = d;
	f->udp_pay = (uint8_t *)(udp + 1);
	f->udp_len = (uint32_t)(ulen - 8);
	f->ip.csum_zero = s.family == AF_INET && !udp->check;
	f->ip.bad_csum = 0;
	if (csum_ready && !f->ip.csum_zero) {
		uint16_t got = ntohs(udp->check);

		udp->check = 0;
		f->ip.bad_csum = udp_csum(&s, &d, (uint8_t *)udp, ulen) != got;
		udp->check = htons(got);
	}
	return 0;
}

static void pcap_write(struct mct_io *io, const struct mct_frame *f)
{
	uint32_t rec[4] = {
		(uint32_t)(f->t_ns / 1000000000), (uint32_t)(f->t_ns % 1000000000 / 1000),
		f->l3_len, f->l3_len,
	};

	if (!io->pcap)
		return;
	fwrite(rec, sizeof(rec), 1, io->pcap);
	fwrite(f->l3, f->l3_len, 1, io->pcap);
}

int mct_io_recv(struct mct_io *io, struct mct_frame *f, int timeout_ms)
{
	static uint8_t b[70000];
	union { struct cmsghdr h; char c[256]; } ctl;
	uint64_t end = mct_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000;
	struct iovec iov = { b, sizeof(b) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct pollfd pf = { .fd = io->cap, .events = POLLIN };
	struct cmsghdr *c;
	int64_t left;
	ssize_t n;
	int ready;

	for (;;) {
		left = (int64_t)(end - mct_now_ns());
		if (poll(&pf, 1, left > 0 ? (int)(left / 1000000 + 1) : 0) <= 0)
			return 0;
		mh.msg_control = ctl.c;
		mh.msg_controllen = sizeof(ctl.c);
		n = recvmsg(io->cap, &mh, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		memset(f, 0, sizeof(*f));
		f->t_ns = mct_now_ns();
		ready = 1;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
				struct timespec ts;

				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				f->t_ns = ts.tv_sec * 1000000000ull + ts.tv_nsec;
			} else if (c->cmsg_level == SOL_PACKET &&
				   c->cmsg_type == PACKET_AUXDATA) {
				struct tpacket_auxdata aux;

				memcpy(&aux, CMSG_DATA(c), sizeof(aux));
				/* a checksum offloaded, not yet written */
				ready = !(aux.tp_status & TP_STATUS_CSUMNOTREADY);
			}
		}
		f->l3 = b;
		f->l3_len = (uint32_t)n;
		if (decode(io, f, ready))
			continue;
		pcap_write(io, f);
		return 1;
	}
}

void mct_io_flush(struct mct_io *io)
{
	static uint8_t b[70000];

	while (recv(io->cap, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	while (recv(io->quiet4, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	while (recv(io->quiet6, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

int mct_pcap_open(struct mct_io *io, const char *path)
{
	/* classic pcap, microseconds, LINKTYPE_RAW (101): bare IP packets */
	uint32_t gh[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 101 };

	io->pcap = fopen(path, "wb");
	if (!io->pcap)
		return -1;
	fwrite(gh, sizeof(gh), 1, io->pcap);
	return 0;
}

void mct_pcap_close(struct mct_io *io)
{
	if (io->pcap)
		fclose(io->pcap);
	io->pcap = NULL;
}

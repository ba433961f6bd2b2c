/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mrc_raw.h: what mrc_inject and mrc_wirefuzz share, the two test tools
 * that put MetaRoCE packets on the wire by hand: error exit, clocks, the
 * splitmix64 stream, number options, the network namespace and --dst
 * checks, IPv4 or IPv6 + UDP headers for a raw socket, and the packet
 * socket and ACK matching that learn the live PSNs.  Static inline, header
 * only.
 *
 * Define MRC_TOOL (the tool's name, a string literal: the prefix of its
 * messages) before including it.
 */
#ifndef MRC_RAW_H
#define MRC_RAW_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/mrc_wire.h>

#ifndef MRC_TOOL
#error "define MRC_TOOL before including mrc_raw.h"
#endif

#define MRC_FRAME_HDR	(sizeof(struct iphdr) + sizeof(struct udphdr))
#define MRC_FRAME6_HDR	(sizeof(struct ip6_hdr) + sizeof(struct udphdr))

/* mrc_wire_parse() and receiver drop reasons, by enum mrc_drop */
static const char *const mrc_drop_name[MRC_DROP_NR] = {
	[MRC_DROP_NONE] = "none",
	[MRC_DROP_TRUNCATED] = "truncated",
	[MRC_DROP_BAD_VERSION] = "bad_version",
	[MRC_DROP_BAD_OPCODE] = "bad_opcode",
	[MRC_DROP_BAD_HDR_LEN] = "bad_hdr_len",
	[MRC_DROP_BAD_PAY_LEN] = "bad_pay_len",
	[MRC_DROP_BAD_FIELD] = "bad_field",
	[MRC_DROP_BAD_PMTU] = "bad_pmtu",
	[MRC_DROP_BAD_LENGTH] = "bad_length",
	[MRC_DROP_BAD_SACK] = "bad_sack",
	[MRC_DROP_NO_QP] = "no_qp",
	[MRC_DROP_BAD_SRC] = "bad_source",
	[MRC_DROP_BAD_STATE] = "bad_state",
	[MRC_DROP_OUT_OF_WINDOW] = "out_of_window",
	[MRC_DROP_BAD_ACK] = "bad_ack",
	[MRC_DROP_NO_RESOURCE] = "no_resource",
	[MRC_DROP_BAD_DUP] = "bad_duplicate",
	[MRC_DROP_STALE_READ] = "stale_read",
};

static inline void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(MRC_TOOL ": ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static inline u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* the driver's clock: CLOCK_MONOTONIC microseconds, truncated to 32 bits */
static inline u32 mrc_clock(void)
{
	return (u32)now_us();
}

/* splitmix64: the stream follows from the seed in *@state */
static inline u64 mrc_splitmix64(u64 *state)
{
	u64 z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* an unsigned option value up to @max; @what names it in the error */
static inline u64 num(const char *s, u64 max, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max || *s == '-')
		die("bad %s: %s", what, s);
	return v;
}

static inline s64 snum(const char *s, const char *what)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || end == s || *end)
		die("bad %s: %s", what, s);
	return v;
}

/* the test bed's hosts are namespaces: refuse the initial one */
static inline void mrc_check_netns(bool allow_init_ns)
{
	struct stat self, init;

	if (allow_init_ns)
		return;
	if (stat("/proc/self/ns/net", &self) || stat("/proc/1/ns/net", &init))
		die("cannot tell the network namespace (--allow-init-netns)");
	if (self.st_ino == init.st_ino && self.st_dev == init.st_dev)
		die("refusing the initial network namespace (--allow-init-netns)");
}

/* never a broadcast or multicast --dst */
static inline void mrc_check_dst(struct in_addr dst)
{
	u32 d = ntohl(dst.s_addr);

	if (!d || d == INADDR_BROADCAST || IN_MULTICAST(d))
		die("--dst %s: not a unicast address", inet_ntoa(dst));
}

/* the source address the route to @dst:@port would use */
static inline struct in_addr mrc_route_src(struct in_addr dst, u16 port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = dst,
				  .sin_port = htons(port) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl))
		die("no route to %s: %s", inet_ntoa(dst), strerror(errno));
	close(fd);
	return sa.sin_addr;
}

/* never an unspecified or multicast IPv6 --dst */
static inline void mrc_check_dst6(const struct in6_addr *dst)
{
	char s[INET6_ADDRSTRLEN];

	if (IN6_IS_ADDR_UNSPECIFIED(dst) || IN6_IS_ADDR_MULTICAST(dst))
		die("--dst %s: not a unicast address",
		    inet_ntop(AF_INET6, dst, s, sizeof(s)));
}

/* the source address the route to [@dst]:@port would use */
static inline struct in6_addr mrc_route_src6(const struct in6_addr *dst,
					     u16 port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = *dst,
				   .sin6_port = htons(port) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	char s[INET6_ADDRSTRLEN];

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl))
		die("no route to %s: %s",
		    inet_ntop(AF_INET6, dst, s, sizeof(s)), strerror(errno));
	close(fd);
	return sa.sin6_addr;
}

static inline u32 mrc_csum_add(u32 sum, const void *buf, size_t len)
{
	const u8 *b = buf;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (u32)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (u32)b[len - 1] << 8;
	return sum;
}

static inline u16 mrc_csum_fold(u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/* the IPv4 and UDP header fields of a raw frame */
struct mrc_raw_hdr {
	struct in_addr src, dst;
	u16 sport, dport, id;
	u8 tos, ttl;
};

/*
 * IPv4 + UDP headers in front of the datagram already at
 * @f + MRC_FRAME_HDR (@len bytes), with a right UDP checksum (never 0,
 * which means "none"); the kernel fills in the IP checksum.  Returns the
 * frame length.
 */
static inline size_t mrc_raw_frame(u8 *f, size_t len,
				   const struct mrc_raw_hdr *h)
{
	struct iphdr *ip = (struct iphdr *)f;
	struct udphdr *uh = (struct udphdr *)(f + sizeof(*ip));
	u16 ulen = sizeof(*uh) + len;
	u8 pseudo[12];
	u16 sum;

	memset(f, 0, MRC_FRAME_HDR);
	ip->version = 4;
	ip->ihl = sizeof(*ip) / 4;
	ip->tos = h->tos;
	ip->tot_len = htons(sizeof(*ip) + ulen);
	ip->id = htons(h->id);
	ip->frag_off = htons(IP_DF);
	ip->ttl = h->ttl;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = h->src.s_addr;
	ip->daddr = h->dst.s_addr;
	uh->source = htons(h->sport);
	uh->dest = htons(h->dport);
	uh->len = htons(ulen);

	memcpy(pseudo, &ip->saddr, 4);
	memcpy(pseudo + 4, &ip->daddr, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP;
	pseudo[10] = ulen >> 8;
	pseudo[11] = ulen;
	sum = mrc_csum_fold(mrc_csum_add(mrc_csum_add(0, pseudo, 12), uh, ulen));
	uh->check = htons(sum ? sum : 0xffff);
	return sizeof(*ip) + ulen;
}

/* the IPv6 and UDP header fields of a raw frame */
struct mrc_raw6_hdr {
	struct in6_addr src, dst;
	u32 flow;	/* flow label, 20 bits */
	u16 sport, dport;
	u8 tclass, hlim;
};

/*
 * IPv6 + UDP headers in front of the datagram already at
 * @f + MRC_FRAME6_HDR (@len bytes), with a right UDP checksum over the
 * IPv6 pseudo-header (RFC 8200, section 8.1; 0 is sent as 0xffff).
 * Returns the frame length.
 */
static inline size_t mrc_raw_frame6(u8 *f, size_t len,
				    const struct mrc_raw6_hdr *h)
{
	struct ip6_hdr *ip6 = (struct ip6_hdr *)f;
	struct udphdr *uh = (struct udphdr *)(f + sizeof(*ip6));
	u16 ulen = sizeof(*uh) + len;
	u8 pseudo[40];
	u16 sum;

	memset(f, 0, MRC_FRAME6_HDR);
	ip6->ip6_flow = htonl(6u << 28 | (u32)h->tclass << 20 |
			      (h->flow & 0xfffff));
	ip6->ip6_plen = htons(ulen);
	ip6->ip6_nxt = IPPROTO_UDP;
	ip6->ip6_hlim = h->hlim;
	ip6->ip6_src = h->src;
	ip6->ip6_dst = h->dst;
	uh->source = htons(h->sport);
	uh->dest = htons(h->dport);
	uh->len = htons(ulen);

	/* source, destination, 32-bit length, 3 zero bytes, next header */
	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, &h->src, 16);
	memcpy(pseudo + 16, &h->dst, 16);
	pseudo[34] = ulen >> 8;
	pseudo[35] = ulen;
	pseudo[39] = IPPROTO_UDP;
	sum = mrc_csum_fold(mrc_csum_add(mrc_csum_add(0, pseudo, 40), uh, ulen));
	uh->check = htons(sum ? sum : 0xffff);
	return sizeof(*ip6) + ulen;
}

/*
 * A packet socket on @ifname for learning PSNs from the connection's
 * ACKs: ETH_P_ALL, as only such sockets see what this host sends too;
 * cooked (SOCK_DGRAM), so frames start at the IP header.  @type_flags:
 * more socket type flags (SOCK_NONBLOCK); @prog: a filter, or NULL.
 */
static inline int mrc_open_learn(const char *ifname, int type_flags,
				 const struct sock_fprog *prog)
{
	struct sockaddr_ll sl = { .sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_ALL) };
	int fd;

	sl.sll_ifindex = if_nametoindex(ifname);
	if (!sl.sll_ifindex)
		die("--learn %s: no such interface", ifname);
	fd = socket(AF_PACKET, SOCK_DGRAM | type_flags, htons(ETH_P_ALL));
	if (fd < 0 ||
	    (prog && setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, prog,
				sizeof(*prog))) ||
	    bind(fd, (struct sockaddr *)&sl, sizeof(sl)))
		die("packet socket on %s: %s", ifname, strerror(errno));
	return fd;
}

/* the UDP payload @dg (@len bytes) as an ACK (syndrome ACK) into @a */
static inline bool mrc_parse_ack(const void *dg, size_t len, struct mrc_pkt *a)
{
	return !mrc_wire_parse(dg, len, a) && a->opcode == MRC_OP_ACK &&
	       a->ack.syndrome == MRC_SYN_ACK;
}

/*
 * Whether ACK @a in the IP packet @ip is of the connection between the
 * victim (address @victim, QP @victim_qpn) and its peer (QP @peer_qpn),
 * the victim's to its peer if @from_victim, else the peer's to the victim.
 */
static inline bool mrc_ack_of(const struct iphdr *ip, const struct mrc_pkt *a,
			      struct in_addr victim, u32 victim_qpn,
			      u32 peer_qpn, bool from_victim)
{
	if (from_victim)
		return ip->saddr == victim.s_addr && a->sqpn == victim_qpn &&
		       a->dqpn == peer_qpn;
	return ip->daddr == victim.s_addr && a->sqpn == peer_qpn &&
	       a->dqpn == victim_qpn;
}

/* mrc_ack_of() for an ACK @a in the IPv6 packet @ip6 */
static inline bool mrc_ack_of6(const struct ip6_hdr *ip6,
			       const struct mrc_pkt *a,
			       const struct in6_addr *victim, u32 victim_qpn,
			       u32 peer_qpn, bool from_victim)
{
	if (from_victim)
		return IN6_ARE_ADDR_EQUAL(&ip6->ip6_src, victim) &&
		       a->sqpn == victim_qpn && a->dqpn == peer_qpn;
	return IN6_ARE_ADDR_EQUAL(&ip6->ip6_dst, victim) &&
	       a->sqpn == peer_qpn && a->dqpn == victim_qpn;
}

/* the newest cumulative PSN: ACKs can arrive out of order */
static inline void mrc_learn_psn(u32 *base, u64 *n, u32 psn)
{
	if (!*n || (s32)(psn - *base) > 0)
		*base = psn;
	(*n)++;
}

/* no ACK to learn from on @ifname within @wait_ms */
static inline void mrc_no_ack(u32 dqpn, u32 sqpn, const char *ifname,
			      unsigned int wait_ms)
{
	fprintf(stderr, MRC_TOOL ": no ACK of QPs %u/%u on %s in %u ms\n",
		dqpn, sqpn, ifname, wait_ms);
}

#endif /* MRC_RAW_H */

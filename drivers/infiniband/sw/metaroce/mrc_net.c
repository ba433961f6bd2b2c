// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: network glue.  One UDP tunnel socket per network namespace
 * that has a metaroce device; packets are built and parsed here and
 * handed to the QP engines.
 */
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/inet_ecn.h>
#include <net/ip6_route.h>
#include <net/ipv6_stubs.h>
#include <net/ip.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include "mrc.h"

/*
 * Sockets of one netns.  Freed when no device uses it and the netns no
 * longer points to it; the socket itself is closed as soon as either the
 * last device goes or the netns exits, whichever comes first.
 */
struct mrc_net_socks {
	struct socket __rcu *sock4;
	struct socket __rcu *sock6;
	unsigned int users;		/* devices */
	bool linked;			/* still reachable from the netns */
};

struct mrc_pernet {
	struct mrc_net_socks *socks;
};

static unsigned int mrc_net_id;
static DEFINE_MUTEX(mrc_net_mutex);

static int mrc_udp_rcv(struct sock *sk, struct sk_buff *skb);

static struct socket *mrc_sock_open(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = mrc_udp_rcv,
	};
	struct udp_port_cfg ucfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.local_udp_port = htons(mrc_udp_port),
		.ipv6_v6only = 1,
		/* the checksum is all the integrity a packet has: no zero */
		.use_udp6_rx_checksums = 1,
	};
	struct socket *sock;
	int err;

	if (!ipv6)
		ucfg.local_ip.s_addr = htonl(INADDR_ANY);
	err = udp_sock_create(net, &ucfg, &sock);
	if (err) {
		pr_err("metaroce: cannot bind UDP%s port %u (%d)\n",
		       ipv6 ? "/IPv6" : "", mrc_udp_port, err);
		return ERR_PTR(err);
	}
	setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

static void mrc_sock_release(struct socket __rcu **slot)
{
	struct socket *sock = rcu_dereference_protected(*slot,
				lockdep_is_held(&mrc_net_mutex));

	if (!sock)
		return;
	RCU_INIT_POINTER(*slot, NULL);
	synchronize_rcu();
	udp_tunnel_sock_release(sock);
}

/* caller holds mrc_net_mutex */
static void mrc_socks_close(struct mrc_net_socks *s)
{
	mrc_sock_release(&s->sock4);
	mrc_sock_release(&s->sock6);
}

/*
 * Without IPv6 in the kernel only IPv4 GIDs exist.  With it, failing to
 * bind (say, another socket holds [::]:port) fails the device: half bound,
 * that socket would receive and could answer all metaroce IPv6 traffic.
 */
static int mrc_sock6_open(struct net *net, struct mrc_net_socks *s)
{
	struct socket *sock;

	if (!IS_ENABLED(CONFIG_IPV6) || !ipv6_mod_enabled())
		return 0;
	sock = mrc_sock_open(net, true);
	if (IS_ERR(sock))
		return PTR_ERR(sock);
	rcu_assign_pointer(s->sock6, sock);
	return 0;
}

int mrc_net_attach(struct mrc_dev *mdev)
{
	struct net *net = dev_net(mdev->ndev);
	struct mrc_pernet *pn = net_generic(net, mrc_net_id);
	struct mrc_net_socks *s;
	struct socket *sock;
	int err = 0;

	mutex_lock(&mrc_net_mutex);
	s = pn->socks;
	if (!s) {
		s = kzalloc(sizeof(*s), GFP_KERNEL);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		s->linked = true;
		pn->socks = s;
	}
	if (!rcu_access_pointer(s->sock4)) {
		sock = mrc_sock_open(net, false);
		if (IS_ERR(sock)) {
			err = PTR_ERR(sock);
			if (!s->users) {
				pn->socks = NULL;
				kfree(s);
			}
			goto out;
		}
		rcu_assign_pointer(s->sock4, sock);
		err = mrc_sock6_open(net, s);
		if (err) {
			mrc_sock_release(&s->sock4);
			if (!s->users) {
				pn->socks = NULL;
				kfree(s);
			}
			goto out;
		}
	}
	s->users++;
	mdev->socks = s;
out:
	mutex_unlock(&mrc_net_mutex);
	return err;
}

void mrc_net_detach(struct mrc_dev *mdev)
{
	struct mrc_net_socks *s = mdev->socks;

	if (!s)
		return;
	mutex_lock(&mrc_net_mutex);
	mdev->socks = NULL;
	if (!--s->users) {
		mrc_socks_close(s);
		if (!s->linked)
			kfree(s);
	}
	mutex_unlock(&mrc_net_mutex);
}

static void __net_exit mrc_net_exit_net(struct net *net)
{
	struct mrc_pernet *pn = net_generic(net, mrc_net_id);
	struct mrc_net_socks *s;

	mutex_lock(&mrc_net_mutex);
	s = pn->socks;
	pn->socks = NULL;
	if (s) {
		mrc_socks_close(s);
		s->linked = false;
		if (!s->users)
			kfree(s);
	}
	mutex_unlock(&mrc_net_mutex);
}

static struct pernet_operations mrc_net_ops = {
	.exit = mrc_net_exit_net,
	.id = &mrc_net_id,
	.size = sizeof(struct mrc_pernet),
};

int mrc_net_init(void)
{
	return register_pernet_subsys(&mrc_net_ops);
}

void mrc_net_exit(void)
{
	unregister_pernet_subsys(&mrc_net_ops);
}

/**
 * mrc_note_path_retired() - count and trace an entropy the path engine
 * retired since @retired (one a call at most), with its port and reason.
 * @qp: the QP, its lock held.
 * @retired: qp->path.retired before the engine call.
 */
void mrc_note_path_retired(struct mrc_qp *qp, u64 retired)
{
	if (qp->path.retired == retired)
		return;
	mrc_stat_inc(qp->mdev, MRC_ST_PATH_RETIRED);
	trace_mrc_path(qp->ibqp.qp_num, MRC_TRACE_PATH_RETIRE,
		       qp->path.retired_port, qp->path.retired_why);
}

/* count and trace what a pick did to the path set */
static void mrc_note_pick(struct mrc_qp *qp, u16 port, u64 sw, u64 rb, u64 rt)
{
	struct mrc_path *p = &qp->path;

	if (p->switches != sw) {
		mrc_stat_inc(qp->mdev, MRC_ST_PATH_SWITCHES);
		trace_mrc_path(qp->ibqp.qp_num, MRC_TRACE_PATH_SWITCH, port,
			       MRC_TRACE_WHY_NONE);
	}
	/* a balance window redraws for starvation or for loss */
	if (p->rebalanced != rb) {
		mrc_stat_inc(qp->mdev, MRC_ST_PATH_REBALANCED);
		trace_mrc_path(qp->ibqp.qp_num, MRC_TRACE_PATH_REBALANCE,
			       p->retired_port, p->retired_why);
	}
	mrc_note_path_retired(qp, rt);
	mrc_stat_inc(qp->mdev, MRC_ST_PATH_SLOT0 + p->last % MRC_PATH_SLOTS);
}

/**
 * mrc_pick_entropy() - UDP source port for the next packet.
 * @qp: the QP (locked).
 * @avoid: a port not to use (the one a lost packet went out on), or 0.
 * @lone: nothing is in flight: mrc_path_pick_lone(), which has no @avoid.
 * @now: current time.
 *
 * Packets are sprayed over the QP's set of source ports so that ECMP
 * spreads one QP over many paths; the path engine skips and replaces
 * ports whose feedback is bad (engine/mrc_path.c).
 */
u16 mrc_pick_entropy(struct mrc_qp *qp, u16 avoid, bool lone, u32 now)
{
	struct mrc_path *p = &qp->path;
	u64 sw = p->switches, rb = p->rebalanced, rt = p->retired;
	u16 port;

	if (lone)
		port = mrc_path_pick_lone(p, now);
	else
		port = mrc_path_pick(p, now, avoid);
	mrc_note_pick(qp, port, sw, rb, rt);
	return port;
}

/**
 * mrc_pick_entropy_keep() - @port again for a one-response request.
 * @qp: the QP (locked).
 * @port: the port of the QP's previous such request.
 * @now: current time.
 *
 * See mrc_path_pick_keep(): atomics and one-segment READs in flight
 * together stay on one port while it is good, so that their responses
 * are not reordered between receive queues.
 */
u16 mrc_pick_entropy_keep(struct mrc_qp *qp, u16 port, u32 now)
{
	struct mrc_path *p = &qp->path;
	u64 sw = p->switches, rb = p->rebalanced, rt = p->retired;

	port = mrc_path_pick_keep(p, port, now);
	mrc_note_pick(qp, port, sw, rb, rt);
	return port;
}

/* room for IP + UDP + link-layer headers in front of ours */
static u32 mrc_headroom(struct net_device *ndev)
{
	return LL_RESERVED_SPACE(ndev) + sizeof(struct ipv6hdr) +
	       sizeof(struct udphdr);
}

struct sk_buff *mrc_skb_alloc(struct mrc_qp *qp, u32 hdr_len, u32 pay_len)
{
	struct net_device *ndev = qp->mdev->ndev;
	u32 room = mrc_headroom(ndev);
	struct sk_buff *skb;

	skb = alloc_skb(room + hdr_len + pay_len, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_reserve(skb, room);
	skb_put(skb, hdr_len + pay_len);
	return skb;
}

/*
 * Reference user pages rather than copy them: from this size on.  Below
 * it a copy costs less than the page references, and the packet stays
 * linear for whoever reads it.
 */
#define MRC_ZCOPY_MIN	1024

/* should a payload of @pay_len bytes from a user MR be attached, not copied? */
bool mrc_skb_zcopy(u32 pay_len)
{
	return READ_ONCE(mrc_tx_zcopy) && pay_len >= MRC_ZCOPY_MIN;
}

static void mrc_xmit_drop(struct mrc_dev *mdev, struct sk_buff *skb)
{
	mrc_stat_inc(mdev, MRC_ST_TX_DROP);
	kfree_skb(skb);
}

/**
 * mrc_udp_xmit4() - send a built packet in a UDP/IPv4 datagram from the
 * socket of the device's namespace, routed in that namespace.
 * @mdev: the device.
 * @skb: the packet (headers and payload at skb->data); consumed.
 * @saddr: source address.
 * @daddr: destination address.
 * @sport: UDP source port (the entropy).
 * @tos: the whole TOS byte, ECN bits included.
 * @ttl: time to live (0: 64).
 * @dc: the sender's route cache, or NULL to look the route up.
 *
 * A packet that cannot be routed or sent is dropped and counted.  With
 * @dc, every entropy takes the route found for the first one: the fabric
 * sprays by the UDP source port, a multipath route on the host itself
 * picks one next hop per QP.
 */
void mrc_udp_xmit4(struct mrc_dev *mdev, struct sk_buff *skb, __be32 saddr,
		   __be32 daddr, u16 sport, u8 tos, u8 ttl,
		   struct dst_cache *dc)
{
	struct net_device *ndev = mdev->ndev;
	struct flowi4 fl4 = {
		.flowi4_oif = ndev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.daddr = daddr,
		.saddr = saddr,
		.fl4_sport = htons(sport),
		.fl4_dport = htons(mrc_udp_port),
	};
	struct socket *sock;
	struct rtable *rt = NULL;
	__be32 csaddr;

	if (dc) {
		rt = dst_cache_get_ip4(dc, &csaddr);
		if (rt && csaddr != saddr) {
			ip_rt_put(rt);
			rt = NULL;
		}
	}
	if (!rt) {
		rt = ip_route_output_key(dev_net(ndev), &fl4);
		if (IS_ERR(rt)) {
			mrc_xmit_drop(mdev, skb);
			return;
		}
		if (dc)
			dst_cache_set_ip4(dc, &rt->dst, saddr);
	}
	rcu_read_lock();
	sock = rcu_dereference(mdev->socks->sock4);
	if (!sock) {
		rcu_read_unlock();
		ip_rt_put(rt);
		mrc_xmit_drop(mdev, skb);
		return;
	}
	mrc_stat_inc(mdev, MRC_ST_TX_PKTS);
	mrc_stat_add(mdev, MRC_ST_TX_BYTES, skb->len);
	skb_scrub_packet(skb, false);
	skb->protocol = htons(ETH_P_IP);
	skb->ignore_df = 0;
	udp_tunnel_xmit_skb(rt, sock->sk, skb, fl4.saddr, fl4.daddr, tos,
			    ttl ? ttl : 64, htons(IP_DF), htons(sport),
			    htons(mrc_udp_port), false, false);
	rcu_read_unlock();
}

/**
 * mrc_udp_xmit6() - mrc_udp_xmit4() over IPv6.
 * @mdev: the device.
 * @skb: the packet; consumed.
 * @saddr: source address.
 * @daddr: destination address.
 * @sport: UDP source port (the entropy).
 * @tos: the whole traffic class, ECN bits included.
 * @ttl: hop limit (0: 64).
 * @dc: the sender's route cache, or NULL to look the route up.
 *
 * Without IPv6 in the kernel the packet is dropped and counted.
 */
void mrc_udp_xmit6(struct mrc_dev *mdev, struct sk_buff *skb,
		   const struct in6_addr *saddr, const struct in6_addr *daddr,
		   u16 sport, u8 tos, u8 ttl, struct dst_cache *dc)
{
#if IS_ENABLED(CONFIG_IPV6)
	struct net_device *ndev = mdev->ndev;
	struct flowi6 fl6 = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
		.daddr = *daddr,
		.saddr = *saddr,
		.fl6_sport = htons(sport),
		.fl6_dport = htons(mrc_udp_port),
	};
	struct dst_entry *dst = NULL;
	struct in6_addr csaddr;
	struct socket *sock;

	rcu_read_lock();
	sock = rcu_dereference(mdev->socks->sock6);
	if (!sock) {
		rcu_read_unlock();
		mrc_xmit_drop(mdev, skb);
		return;
	}
	if (dc) {
		dst = dst_cache_get_ip6(dc, &csaddr);
		if (dst && !ipv6_addr_equal(&csaddr, saddr)) {
			dst_release(dst);
			dst = NULL;
		}
	}
	if (!dst) {
		dst = ipv6_stub->ipv6_dst_lookup_flow(dev_net(ndev), sock->sk,
						      &fl6, NULL);
		if (IS_ERR(dst)) {
			rcu_read_unlock();
			mrc_xmit_drop(mdev, skb);
			return;
		}
		if (dc)
			dst_cache_set_ip6(dc, dst, saddr);
	}
	mrc_stat_inc(mdev, MRC_ST_TX_PKTS);
	mrc_stat_add(mdev, MRC_ST_TX_BYTES, skb->len);
	skb_scrub_packet(skb, false);
	skb->protocol = htons(ETH_P_IPV6);
	udp_tunnel6_xmit_skb(dst, sock->sk, skb, dst->dev, &fl6.saddr,
			     &fl6.daddr, tos, ttl ? ttl : 64, 0, htons(sport),
			     htons(mrc_udp_port), false);
	rcu_read_unlock();
#else
	mrc_xmit_drop(mdev, skb);
#endif
}

/**
 * mrc_xmit() - send one built packet (headers and payload at skb->data).
 * @qp: the QP (its addresses and the device's socket are used).
 * @skb: the packet; consumed.
 * @sport: UDP source port (the entropy).
 */
void mrc_xmit(struct mrc_qp *qp, struct sk_buff *skb, u16 sport)
{
	/* RC data and ACKs are ECN-capable: the sender reacts to CE */
	u8 tos = (qp->tos & ~INET_ECN_MASK) | INET_ECN_ECT_0;

	if (mrc_fault(MRC_FI_NOT_ECT))
		tos &= ~INET_ECN_MASK;

	if (qp->is_ipv6)
		mrc_udp_xmit6(qp->mdev, skb, &qp->saddr6, &qp->daddr6, sport,
			      tos, qp->ttl, &qp->dst_cache);
	else
		mrc_udp_xmit4(qp->mdev, skb, qp->saddr4, qp->daddr4, sport,
			      tos, qp->ttl, &qp->dst_cache);
}

/* a header to the QP's peer: everything but the base fields zeroed */
void mrc_pkt_init(struct mrc_qp *qp, struct mrc_pkt *p, u8 op, u32 psn,
		  u32 now)
{
	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->dqpn = qp->dest_qpn;
	p->sqpn = qp->ibqp.qp_num;
	p->psn = psn;
	p->tsval = now;
}

/* queue a built packet; sent by mrc_flush_txq() once qp->lock is dropped */
void mrc_queue_pkt(struct mrc_qp *qp, struct sk_buff *skb, u16 sport)
{
	MRC_CB(skb)->sport = sport;
	skb_queue_tail(&qp->txq, skb);
}

/*
 * ACKs and NAKs have a queue of their own.  They answer the peer's
 * requests, so the CPU that sends one is the one taking the peer's
 * packets (RPS, the NIC's RSS); a request posted meanwhile on the
 * application's CPU would otherwise wait in a shared queue for that CPU
 * to send it, and start its way through the receive path there instead
 * of on the poster's CPU.  In the test bed's ping-pong a round trip that
 * crossed to the other CPU took about three times as long, and with one
 * queue for both more of them did.  Sprayed packets are reordered in the
 * network all the same: an ACK passing a READ response built before it
 * is nothing new to the requester.
 */
void mrc_queue_ack(struct mrc_qp *qp, struct sk_buff *skb, u16 sport)
{
	MRC_CB(skb)->sport = sport;
	skb_queue_tail(&qp->ackq, skb);
}

/*
 * One CPU at a time sends a queue, so its packets leave in the order they
 * were built.  Two CPUs each sending what they dequeued would reorder
 * them, by as much as one of them is delayed (a guest vCPU can lose its
 * host CPU for milliseconds), and reordering beyond the RACK window costs
 * spurious retransmissions.  A CPU that finds another one sending leaves
 * its packets to it; the sender looks again after letting go, so none is
 * stranded.
 */
static void mrc_flush_q(struct mrc_qp *qp, struct sk_buff_head *q,
			unsigned long *busy)
{
	struct sk_buff *skb;

	for (;;) {
		/* our enqueue before the test; the sender's clear before its look */
		smp_mb();
		if (skb_queue_empty_lockless(q) || test_and_set_bit_lock(0, busy))
			break;
		while ((skb = skb_dequeue(q)))
			mrc_xmit(qp, skb, MRC_CB(skb)->sport);
		clear_bit_unlock(0, busy);
	}
}

/**
 * mrc_flush_txq() - send what the QP's engines queued: ACKs first, then
 * requests and responses.
 * @qp: the QP; must not hold qp->lock.
 */
void mrc_flush_txq(struct mrc_qp *qp)
{
	local_bh_disable();
	mrc_flush_q(qp, &qp->ackq, &qp->ackq_busy);
	mrc_flush_q(qp, &qp->txq, &qp->txq_busy);
	local_bh_enable();
}

/* parse, find the QP, check the source, hand over to the engines */
/* does the packet come from the QP's peer address? */
static bool mrc_src_ok(struct mrc_qp *qp, struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return !qp->is_ipv6 && ip_hdr(skb)->saddr == qp->daddr4;
#if IS_ENABLED(CONFIG_IPV6)
	if (skb->protocol == htons(ETH_P_IPV6))
		return qp->is_ipv6 &&
		       ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &qp->daddr6);
#endif
	return false;
}

static void mrc_rcv_skb(struct mrc_dev *mdev, struct sk_buff *skb,
			u16 sport, bool ce)
{
	struct mrc_pkt p;
	struct mrc_qp *qp;
	int err;

	mrc_stat_inc(mdev, MRC_ST_RX_PKTS);
	mrc_stat_add(mdev, MRC_ST_RX_BYTES, skb->len);
	if (mrc_fault(MRC_FI_RSVD_IGNORED) && !skb_ensure_writable(skb, 1))
		skb->data[0] &= 0xf0;
	err = mrc_wire_parse(skb->data, skb->len, &p);
	if (err) {
		mrc_count_drop(mdev, -err);
		goto free;
	}
	trace_mrc_recv(p.dqpn, p.sqpn, p.psn, p.opcode, p.flags, sport,
		       p.pay_len);
	/* datagrams have no peer to check: mrc_ud.c */
	if (p.opcode == MRC_OP_UD_SEND) {
		mrc_ud_rcv(mdev, skb, &p);
		goto free;
	}
	qp = mrc_qp_get(mdev, p.dqpn);
	if (!qp) {
		mrc_count_drop(mdev, MRC_DROP_NO_QP);
		goto free;
	}
	if (qp->ibqp.qp_type != IB_QPT_RC ||
	    (p.sqpn != qp->dest_qpn && !mrc_fault(MRC_FI_SQPN_IGNORED)) ||
	    !mrc_src_ok(qp, skb)) {
		mrc_count_drop(mdev, MRC_DROP_BAD_SRC);
		mrc_qp_put(qp);
		goto free;
	}
	if (p.opcode == MRC_OP_ACK && (p.ack.flags & MRC_ACKF_HELD) &&
	    mrc_fault(MRC_FI_HELD_DROPPED)) {
		mrc_count_drop(mdev, MRC_DROP_BAD_FIELD);
		mrc_qp_put(qp);
		goto free;
	}
	if (p.opcode == MRC_OP_ACK)
		mrc_req_rcv_ack(qp, &p);
	else if (p.opcode == MRC_OP_READ_RESP || p.opcode == MRC_OP_ATOMIC_RESP)
		mrc_req_rcv_resp(qp, &p, skb);
	else
		mrc_resp_rcv(qp, &p, skb, sport, ce);
	mrc_qp_put(qp);
free:
	consume_skb(skb);
}

/* the metaroce device that owns local address of @skb (loopback traffic) */
static struct mrc_dev *mrc_dev_by_daddr(struct sk_buff *skb)
{
	struct net *net = dev_net(skb->dev);
	struct net_device *owner = NULL;
	struct mrc_dev *mdev;

	rcu_read_lock();
	if (skb->protocol == htons(ETH_P_IP))
		owner = __ip_dev_find(net, ip_hdr(skb)->daddr, false);
#if IS_ENABLED(CONFIG_IPV6)
	else if (skb->protocol == htons(ETH_P_IPV6))
		owner = ipv6_dev_find(net, &ipv6_hdr(skb)->daddr, NULL);
#endif
	mdev = owner ? mrc_dev_from_netdev(owner) : NULL;
	rcu_read_unlock();
	return mdev;
}

static int mrc_udp_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;
	struct mrc_dev *mdev;
	u16 sport;
	u8 dsf;

	mdev = mrc_dev_from_netdev(ndev);
	/* to an address of this host: the device that owns it */
	if (!mdev && (ndev->flags & IFF_LOOPBACK))
		mdev = mrc_dev_by_daddr(skb);
	if (!mdev)
		goto drop;
	/*
	 * Only the headers need to be linear: payloads are copied out of
	 * the fragments where they sit, so a large packet costs one copy.
	 */
	if (!pskb_may_pull(skb, sizeof(struct udphdr) +
			   min_t(u32, skb->len - sizeof(struct udphdr),
				 MRC_HDR_MAX_LEN))) {
		ib_device_put(&mdev->ibdev);
		goto drop;
	}
	if (skb->protocol == htons(ETH_P_IP))
		dsf = ip_hdr(skb)->tos;
	else
		dsf = ipv6_get_dsfield(ipv6_hdr(skb));
	sport = ntohs(udp_hdr(skb)->source);
	skb_pull(skb, sizeof(struct udphdr));
	mrc_rcv_skb(mdev, skb, sport, INET_ECN_is_ce(dsf));
	ib_device_put(&mdev->ibdev);
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

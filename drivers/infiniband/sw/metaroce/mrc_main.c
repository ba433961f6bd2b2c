// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: module setup, rdma link type, netdev events.
 */
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "mrc.h"

#define CREATE_TRACE_POINTS
#include <trace/events/metaroce.h>

unsigned int mrc_udp_port = MRC_DEFAULT_UDP_PORT;
module_param_named(udp_port, mrc_udp_port, uint, 0444);
MODULE_PARM_DESC(udp_port, "UDP destination port of MetaRoCE packets (default 4792; RoCEv2 uses 4791)");

unsigned int mrc_default_speed = 10000;
module_param_named(default_speed_mbps, mrc_default_speed, uint, 0644);
MODULE_PARM_DESC(default_speed_mbps, "Port speed reported when the netdev reports none, in Mbit/s (default 10000)");

unsigned int mrc_entropies = 16;
module_param_named(entropies, mrc_entropies, uint, 0644);
MODULE_PARM_DESC(entropies, "UDP source ports (paths) each QP sprays over, 1..256, read at link add (default 16)");

unsigned int mrc_ack_every = 4;
module_param_named(ack_every, mrc_ack_every, uint, 0644);
MODULE_PARM_DESC(ack_every, "Send an ACK at least every N in-order packets (default 4)");

unsigned int mrc_ack_delay_us = 50;
module_param_named(ack_delay_us, mrc_ack_delay_us, uint, 0644);
MODULE_PARM_DESC(ack_delay_us, "Longest time an ACK is held back, in microseconds (default 50)");

unsigned int mrc_read_pulls = MRC_READ_PULLS;
module_param_named(read_pulls, mrc_read_pulls, uint, 0644);
MODULE_PARM_DESC(read_pulls, "READ requests a send window holds: each asks for at most window / N segments, 1..16 (default 2)");

unsigned int mrc_rto_min_us = 5000;
module_param_named(rto_min_us, mrc_rto_min_us, uint, 0644);
MODULE_PARM_DESC(rto_min_us, "Least margin of the retransmission timeout above the smoothed RTT, in microseconds (default 5000)");

unsigned int mrc_rto_init_us = 10000;
module_param_named(rto_init_us, mrc_rto_init_us, uint, 0644);
MODULE_PARM_DESC(rto_init_us, "Retransmission timeout before the first RTT sample, in microseconds (default 10000)");

unsigned int mrc_window = 512;
module_param_named(window, mrc_window, uint, 0644);
MODULE_PARM_DESC(window, "Packets a QP may have in flight, 16..1024 (default 512)");

bool mrc_cc_enable = true;
module_param_named(cc, mrc_cc_enable, bool, 0644);
MODULE_PARM_DESC(cc, "Delay-based sender congestion window, read at QP RTS (default on; off: a fixed window)");

unsigned int mrc_cc_target_us = 4000;
module_param_named(cc_target_us, mrc_cc_target_us, uint, 0644);
MODULE_PARM_DESC(cc_target_us, "Queueing delay the congestion window allows above the lowest RTT, in microseconds (default 4000)");

unsigned int mrc_reo_steps = 16;
module_param_named(reo_steps, mrc_reo_steps, uint, 0644);
MODULE_PARM_DESC(reo_steps, "Starting and smallest RACK reordering window, in steps of max(min_rtt/4, srtt/64), 1..256 (default 16): spraying reorders packets");

unsigned int mrc_reo_cap_var = 4;
module_param_named(reo_cap_var, mrc_reo_cap_var, uint, 0644);
MODULE_PARM_DESC(reo_cap_var, "Cap of the RACK reordering window: srtt plus this many rttvar, 0..16 (default 4)");

unsigned int mrc_tmo_steps = 8;
module_param_named(tmo_steps, mrc_tmo_steps, uint, 0644);
MODULE_PARM_DESC(tmo_steps, "Largest factor, 1..8, by which the tail-loss probe timeout and the RTO's margin over srtt widen while the retransmissions they send prove spurious (default 8; 1: never)");

bool mrc_pacing = true;
module_param_named(pacing, mrc_pacing, bool, 0644);
MODULE_PARM_DESC(pacing, "Pace each QP's packets at 1.25 times its window per smoothed RTT (twice in slow start) where that puts 50 us or more between them, read at QP RTS (default on)");

unsigned int mrc_pacing_burst = MRC_PACE_BURST;
module_param_named(pacing_burst, mrc_pacing_burst, uint, 0644);
MODULE_PARM_DESC(pacing_burst, "Packets a paced QP may send back to back after a pause, 1..64, read at QP RTS (default 2)");

bool mrc_path_aware = true;
module_param_named(path_aware, mrc_path_aware, bool, 0644);
MODULE_PARM_DESC(path_aware, "Judge each entropy from ECN, RTT and loss feedback: skip congested ones, replace lossy ones (default on; off: plain round robin), read at QP creation");

bool mrc_ordered;
module_param_named(ordered, mrc_ordered, bool, 0644);
MODULE_PARM_DESC(ordered, "Ordered mode: one path per QP and data placed only in PSN order (go-back-N on loss), for applications that poll the last byte of a WRITE; read at link add (default off)");

bool mrc_cc_ecn = true;
module_param_named(cc_ecn, mrc_cc_ecn, bool, 0644);
MODULE_PARM_DESC(cc_ecn, "The sender window also reacts to ECN marks echoed in ACKs, DCTCP style (default on; needs cc)");

bool mrc_jumbo = true;
module_param_named(jumbo, mrc_jumbo, bool, 0644);
MODULE_PARM_DESC(jumbo, "RC QPs at the largest path MTU of their netdev fill their packets once the peer's ACKs give its datagram size: SEND/WRITE segments up to 8192 bytes (1440 at MTU 1500), READ segments of 8192 when both netdevs take them; read at each work request (default on)");

unsigned int mrc_jumbo_credit_min = 3;
module_param_named(jumbo_credit_min, mrc_jumbo_credit_min, uint, 0644);
MODULE_PARM_DESC(jumbo_credit_min, "With jumbo on, a SEND or WRITE whose jumbo segments would be at least twice the path MTU's uses the path MTU's while the peer grants the QP fewer than this many packets of credit: in an incast the receiver's queue holds half the bytes (default 3; 0: jumbo segments whatever the grant); read at each work request");

bool mrc_credits = true;
module_param_named(credits, mrc_credits, bool, 0644);
MODULE_PARM_DESC(credits, "Receiver credits: ACKs grant each sending QP an equal share of a pool sized by the queueing delay in front of this receiver (default on)");

unsigned int mrc_credit_target_us = 250;
module_param_named(credit_target_us, mrc_credit_target_us, uint, 0644);
MODULE_PARM_DESC(credit_target_us, "Queueing delay in front of the receiver that the credit pool allows, in microseconds (default 250), read at link add");

/*
 * Beyond MRC_CREDIT_HOLD_MAX_US, 16 times credit_hold_us would not fit the
 * engine's 32-bit clock: such a value is refused when written.
 */
static int mrc_credit_hold_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, MRC_CREDIT_HOLD_MAX_US);
}

static const struct kernel_param_ops mrc_credit_hold_ops = {
	.set = mrc_credit_hold_set,
	.get = param_get_uint,
};

unsigned int mrc_credit_hold_us = 4000;
module_param_cb(credit_hold_us, &mrc_credit_hold_ops, &mrc_credit_hold_us,
		0644);
MODULE_PARM_DESC(credit_hold_us, "Receiver credits rotate among more senders than the pool has packets by holding ACKs; a held ACK goes anyway after this many microseconds, or after twice its expected wait if longer, up to 16 times this (default 4000, at most 1000000, larger values are refused; 0: no rotation, every sender keeps a packet), read at link add");

bool mrc_credit_ecn = true;
module_param_named(credit_ecn, mrc_credit_ecn, bool, 0644);
MODULE_PARM_DESC(credit_ecn, "CE-marked arrivals shrink the receiver's credit pool by half the marked share, as they do a sender's window (default on)");

unsigned int mrc_credit_epoch_us = 2000;
module_param_named(credit_epoch_us, mrc_credit_epoch_us, uint, 0644);
MODULE_PARM_DESC(credit_epoch_us, "How often the credit pool and the count of active senders are updated, in microseconds (default 2000), read at link add");

bool mrc_tx_zcopy = true;
module_param_named(tx_zcopy, mrc_tx_zcopy, bool, 0644);
MODULE_PARM_DESC(tx_zcopy, "SEND, WRITE and READ response packets of 1024 bytes or more reference the pages of user MRs instead of copying them (default on; off: every payload is copied into the packet)");

#ifdef MRC_FAULT_INJECT
unsigned long mrc_fault_inject;

static int mrc_fault_set(const char *val, const struct kernel_param *kp)
{
	unsigned long v;
	int err = kstrtoul(val, 0, &v);

	if (err)
		return err;
	if (v >= BIT(MRC_FI_NR))
		return -EINVAL;
	if (v)
		pr_warn("metaroce: fault_inject=%#lx: this host breaks the protocol on purpose\n",
			v);
	WRITE_ONCE(mrc_fault_inject, v);
	return 0;
}

static const struct kernel_param_ops mrc_fault_ops = {
	.set = mrc_fault_set,
	.get = param_get_ulong,
};
module_param_cb(fault_inject, &mrc_fault_ops, &mrc_fault_inject, 0644);
MODULE_PARM_DESC(fault_inject, "Conformance testing only: a bit mask of deliberate protocol deviations (enum mrc_fault in mrc.h; default 0, none)");

#endif

struct workqueue_struct *mrc_wq;

struct mrc_dev *mrc_dev_from_netdev(struct net_device *ndev)
{
	struct ib_device *ibdev = ib_device_get_by_netdev(ndev, MRC_DRIVER_ID);

	return ibdev ? to_mdev(ibdev) : NULL;
}

static u64 mrc_make_guid(struct net_device *ndev)
{
	const u8 *mac = ndev->dev_addr;
	u8 g[8];

	/* modified EUI-64 from the MAC, as for an IPv6 interface ID */
	g[0] = mac[0] ^ 2;
	g[1] = mac[1];
	g[2] = mac[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = mac[3];
	g[6] = mac[4];
	g[7] = mac[5];
	return get_unaligned_be64(g);
}

static int mrc_newlink(const char *name, struct net_device *ndev)
{
	u32 hold;
	struct mrc_dev *mdev;
	int err;

	if (ndev->type != ARPHRD_ETHER || (ndev->flags & IFF_LOOPBACK)) {
		pr_err("metaroce: %s: not an Ethernet device\n", ndev->name);
		return -EINVAL;
	}
	if (is_vlan_dev(ndev)) {
		pr_err("metaroce: %s: VLAN devices are not supported, use the real device\n",
		       ndev->name);
		return -EINVAL;
	}
	mdev = mrc_dev_from_netdev(ndev);
	if (mdev) {
		pr_err("metaroce: %s already has device %s\n", ndev->name,
		       dev_name(&mdev->ibdev.dev));
		ib_device_put(&mdev->ibdev);
		return -EEXIST;
	}

	mdev = ib_alloc_device(mrc_dev, ibdev);
	if (!mdev)
		return -ENOMEM;
	mdev->pstats = alloc_percpu(struct mrc_pcpu_stats);
	if (!mdev->pstats) {
		ib_dealloc_device(&mdev->ibdev);
		return -ENOMEM;
	}
	mdev->ndev = ndev;
	netdev_hold(ndev, &mdev->ndev_tracker, GFP_KERNEL);
	mdev->guid = mrc_make_guid(ndev);
	mdev->entropies = clamp_val(mrc_entropies, 1, MRC_PATH_MAX);
	mdev->ordered = mrc_ordered;
	spin_lock_init(&mdev->credit_lock);
	hold = READ_ONCE(mrc_credit_hold_us);
	/* one QP alone gets the largest window: credits only bite when shared */
	mrc_credit_init(&mdev->credit, hold ? 2 : 4,
			clamp_val(mrc_window, 16, MRC_TX_SLOTS),
			mrc_credit_target_us, max(mrc_credit_epoch_us, 100u));
	mrc_credit_set_hold(&mdev->credit, hold);
	xa_init_flags(&mdev->qpn_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&mdev->mr_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&mdev->srq_xa, XA_FLAGS_ALLOC1);
	spin_lock_init(&mdev->key_lock);
	spin_lock_init(&mdev->mw_lock);

	err = mrc_net_attach(mdev);
	if (err)
		goto err_free;

	/* on failure the core does not call dealloc_driver: undo here */
	err = mrc_register_device(mdev, name);
	if (err)
		goto err_free;
	pr_info("metaroce: %s: created on %s (netns %u, UDP port %u)\n",
		dev_name(&mdev->ibdev.dev), ndev->name,
		dev_net(ndev)->ns.inum, mrc_udp_port);
	return 0;

err_free:
	mrc_net_detach(mdev);
	netdev_put(ndev, &mdev->ndev_tracker);
	free_percpu(mdev->pstats);
	ib_dealloc_device(&mdev->ibdev);
	return err;
}

static struct rdma_link_ops mrc_link_ops = {
	.type = "metaroce",
	.newlink = mrc_newlink,
};

static void mrc_port_event(struct mrc_dev *mdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &mdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

static int mrc_notify(struct notifier_block *nb, unsigned long event,
		      void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct mrc_dev *mdev = mrc_dev_from_netdev(ndev);

	if (!mdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		pr_info("metaroce: %s: netdev %s going away, removing device\n",
			dev_name(&mdev->ibdev.dev), ndev->name);
		ib_unregister_device_queued(&mdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		mrc_port_event(mdev, mrc_port_state(mdev) == IB_PORT_ACTIVE ?
				     IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	default:
		break;
	}
	ib_device_put(&mdev->ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block mrc_notifier = {
	.notifier_call = mrc_notify,
};

static int __init mrc_init(void)
{
	int err;

	mrc_wq = alloc_workqueue("metaroce", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!mrc_wq)
		return -ENOMEM;
	err = mrc_net_init();
	if (err)
		goto err_wq;
	err = register_netdevice_notifier(&mrc_notifier);
	if (err)
		goto err_net;
	rdma_link_register(&mrc_link_ops);
	pr_info("metaroce: loaded, UDP port %u\n", mrc_udp_port);
	return 0;

err_net:
	mrc_net_exit();
err_wq:
	destroy_workqueue(mrc_wq);
	return err;
}

static void __exit mrc_exit(void)
{
	rdma_link_unregister(&mrc_link_ops);
	unregister_netdevice_notifier(&mrc_notifier);
	ib_unregister_driver(MRC_DRIVER_ID);
	mrc_net_exit();
	destroy_workqueue(mrc_wq);
	pr_info("metaroce: unloaded\n");
}

module_init(mrc_init);
module_exit(mrc_exit);

MODULE_AUTHOR("metaroce developers");
MODULE_DESCRIPTION("MetaRoCE-style RDMA transport over UDP (software)");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("metaroce");

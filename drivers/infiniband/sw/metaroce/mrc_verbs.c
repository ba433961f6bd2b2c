// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: device, port, context, PD and AH verbs; device registration.
 */
#include <linux/ethtool.h>
#include <linux/utsname.h>
#include <net/addrconf.h>
#include <rdma/ib_mad.h>

#include "mrc.h"

/* bytes of RDMA payload one packet can carry on this netdev */
int mrc_mtu_payload(struct mrc_dev *mdev)
{
	return (int)READ_ONCE(mdev->ndev->mtu) - MRC_NET_OVERHEAD -
	       MRC_BTH_LEN - MRC_REQ_LEN;
}

/*
 * @shift lowered until a segment of 2^shift bytes fits in one packet on
 * the netdev, but not below MRC_PMTU_MIN_SHIFT: never build packets the
 * netdev cannot carry.
 */
u8 mrc_seg_shift_fit(struct mrc_dev *mdev, u8 shift)
{
	int pay = mrc_mtu_payload(mdev);

	while (shift > MRC_PMTU_MIN_SHIFT && (1 << shift) > pay)
		shift--;
	return shift;
}

/*
 * log2 of the largest segment this device sends and takes on RC QPs: what
 * one packet carries on the netdev, up to 8192 bytes with jumbo segments
 * on (else the IB limit, 4096).  ACKs advertise it to the requester.
 */
u8 mrc_seg_shift_max(struct mrc_dev *mdev)
{
	return mrc_seg_shift_fit(mdev, READ_ONCE(mrc_jumbo) ?
				 MRC_PMTU_MAX_SHIFT : MRC_PMTU_IB_SHIFT);
}

/* the largest datagram (UDP payload) a QP's packets may be on the netdev */
u32 mrc_qp_dgram_max(const struct mrc_qp *qp)
{
	int room = (int)READ_ONCE(qp->mdev->ndev->mtu) - 8 -
		   (qp->is_ipv6 ? 40 : 20);

	return clamp(room, 0, (int)U16_MAX);
}

static enum ib_mtu mrc_active_mtu(struct mrc_dev *mdev)
{
	int pay = mrc_mtu_payload(mdev);

	if (pay >= 4096)
		return IB_MTU_4096;
	if (pay >= 2048)
		return IB_MTU_2048;
	if (pay >= 1024)
		return IB_MTU_1024;
	if (pay >= 512)
		return IB_MTU_512;
	return IB_MTU_256;
}

enum ib_port_state mrc_port_state(struct mrc_dev *mdev)
{
	struct net_device *ndev = mdev->ndev;

	if (netif_running(ndev) && netif_oper_up(ndev))
		return IB_PORT_ACTIVE;
	return IB_PORT_DOWN;
}

/*
 * Map the netdev's ethtool speed to an IB speed and width.  veth and other
 * virtual devices report none: then default_speed_mbps is used.
 */
static void mrc_port_speed(struct mrc_dev *mdev, u16 *speed, u8 *width)
{
	static const struct {
		u32 mbps;
		u16 speed;
		u8 width;
	} map[] = {
		{ 2500, IB_SPEED_SDR, IB_WIDTH_1X },
		{ 5000, IB_SPEED_DDR, IB_WIDTH_1X },
		{ 10000, IB_SPEED_FDR10, IB_WIDTH_1X },
		{ 20000, IB_SPEED_DDR, IB_WIDTH_4X },
		{ 25000, IB_SPEED_EDR, IB_WIDTH_1X },
		{ 40000, IB_SPEED_FDR10, IB_WIDTH_4X },
		{ 50000, IB_SPEED_HDR, IB_WIDTH_1X },
		{ 100000, IB_SPEED_EDR, IB_WIDTH_4X },
		{ 200000, IB_SPEED_HDR, IB_WIDTH_4X },
		{ 400000, IB_SPEED_NDR, IB_WIDTH_4X },
	};
	struct ethtool_link_ksettings ks = {};
	u32 mbps = 0;
	int i;

	rtnl_lock();
	if (!__ethtool_get_link_ksettings(mdev->ndev, &ks) &&
	    ks.base.speed != (u32)SPEED_UNKNOWN)
		mbps = ks.base.speed;
	rtnl_unlock();
	if (!mbps)
		mbps = mrc_default_speed ? mrc_default_speed : 10000;

	for (i = 0; i < ARRAY_SIZE(map) - 1; i++)
		if (mbps <= map[i].mbps)
			break;
	*speed = map[i].speed;
	*width = map[i].width;
}

static int mrc_query_device(struct ib_device *ibdev,
			    struct ib_device_attr *a, struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibdev);

	if (udata->inlen || udata->outlen)
		return -EINVAL;

	memset(a, 0, sizeof(*a));
	a->fw_ver = 1;
	a->sys_image_guid = cpu_to_be64(mdev->guid);
	a->max_mr_size = MRC_MAX_MR_SIZE;
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = MRC_VENDOR_ID;
	a->vendor_part_id = MRC_VENDOR_PART;
	a->hw_ver = 0;
	a->max_qp = MRC_MAX_QP;
	a->max_qp_wr = MRC_MAX_QP_WR;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_PORT_ACTIVE_EVENT |
			      IB_DEVICE_SRQ_RESIZE |
			      IB_DEVICE_MEM_WINDOW |
			      IB_DEVICE_MEM_WINDOW_TYPE_2B |
			      IB_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_fast_reg_page_list_len = MRC_MAX_FRWR_PAGES;
	a->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	a->max_send_sge = MRC_MAX_SGE;
	a->max_recv_sge = MRC_MAX_SGE;
	a->max_sge_rd = MRC_MAX_SGE;
	a->max_cq = MRC_MAX_CQ;
	a->max_cqe = MRC_MAX_CQE;
	a->max_mr = MRC_MAX_MR;
	a->max_mw = MRC_MAX_MR;	/* windows and MRs share the key space */
	a->max_pd = MRC_MAX_PD;
	a->max_qp_rd_atom = MRC_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = MRC_MAX_RD_ATOM;
	a->max_res_rd_atom = MRC_MAX_RD_ATOM * MRC_MAX_QP;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_ah = MRC_MAX_AH;
	a->max_srq = MRC_MAX_SRQ;
	a->max_srq_wr = MRC_MAX_SRQ_WR;
	a->max_srq_sge = MRC_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	return 0;
}

static int mrc_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *a)
{
	struct mrc_dev *mdev = to_mdev(ibdev);

	/* the core zeroes *a */
	a->state = mrc_port_state(mdev);
	a->phys_state = a->state == IB_PORT_ACTIVE ?
			IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = mrc_active_mtu(mdev);
	a->gid_tbl_len = MRC_GID_TBL_LEN;
	a->port_cap_flags = IB_PORT_CM_SUP;
	a->max_msg_sz = MRC_MAX_MSG_LEN;
	a->bad_pkey_cntr = 0;
	a->qkey_viol_cntr = atomic_read(&mdev->qkey_viol);
	a->pkey_tbl_len = 1;
	a->max_vl_num = 1;
	mrc_port_speed(mdev, &a->active_speed, &a->active_width);
	return 0;
}

static int mrc_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *im)
{
	struct ib_port_attr attr = {};
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->gid_tbl_len = attr.gid_tbl_len;
	im->pkey_tbl_len = attr.pkey_tbl_len;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer mrc_get_link_layer(struct ib_device *ibdev,
					       u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int mrc_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int mrc_modify_device(struct ib_device *ibdev, int mask,
			     struct ib_device_modify *attr)
{
	if (mask & ~(IB_DEVICE_MODIFY_SYS_IMAGE_GUID |
		     IB_DEVICE_MODIFY_NODE_DESC))
		return -EOPNOTSUPP;
	if (mask & IB_DEVICE_MODIFY_NODE_DESC)
		memcpy(ibdev->node_desc, attr->node_desc,
		       sizeof(ibdev->node_desc));
	return 0;
}

static int mrc_modify_port(struct ib_device *ibdev, u32 port, int mask,
			   struct ib_port_modify *attr)
{
	return 0;
}

/*
 * The provider may announce features (struct metaroce_alloc_ucontext_req);
 * the kernel grants those it knows and reports them in caps.  Without
 * driver input (an older provider) the context gets none.
 */
static int mrc_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct mrc_ucontext *uc = container_of(ibuc, struct mrc_ucontext, ibuc);
	struct metaroce_alloc_ucontext_req req = {};
	struct metaroce_alloc_ucontext_resp resp = {
		.abi_version = METAROCE_ABI_VERSION,
	};
	int err;

	if (udata->inlen) {
		err = ib_copy_from_udata(&req, udata,
					 min_t(size_t, udata->inlen,
					       sizeof(req)));
		if (err)
			return err;
	}
	uc->caps = 0;
	if (req.flags & METAROCE_UCTX_UD_AH_NUM)
		uc->caps |= METAROCE_CAP_UD;
	resp.caps = uc->caps;
	if (udata->outlen < sizeof(resp))
		return udata->outlen ? -EINVAL : 0;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void mrc_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

/*
 * The device is going away while a process still has it open.  Nothing to
 * revoke: the core destroys the process's objects, and ring pages it still
 * has mapped stay valid (each mapped page holds its own reference) until
 * it unmaps them.  Without this op, removal would wait for the process.
 */
static void mrc_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int mrc_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibpd->device);
	struct mrc_pd *pd = to_mpd(ibpd);
	struct metaroce_alloc_pd_resp resp = {};

	if (atomic_inc_return(&mdev->n_pd) > MRC_MAX_PD) {
		atomic_dec(&mdev->n_pd);
		return -ENOMEM;
	}
	spin_lock(&mdev->key_lock);
	pd->pdn = ++mdev->next_pdn;
	spin_unlock(&mdev->key_lock);
	if (udata && udata->outlen >= sizeof(resp)) {
		resp.pdn = pd->pdn;
		if (ib_copy_to_udata(udata, &resp, sizeof(resp))) {
			atomic_dec(&mdev->n_pd);
			return -EFAULT;
		}
	}
	return 0;
}

static int mrc_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_mdev(ibpd->device)->n_pd);
	return 0;
}

static struct net_device *mrc_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct mrc_dev *mdev = to_mdev(ibdev);

	dev_hold(mdev->ndev);
	return mdev->ndev;
}

static void mrc_dealloc_driver(struct ib_device *ibdev)
{
	struct mrc_dev *mdev = to_mdev(ibdev);

	mrc_net_detach(mdev);
	WARN_ON(!xa_empty(&mdev->qpn_xa));
	WARN_ON(!xa_empty(&mdev->mr_xa));
	xa_destroy(&mdev->qpn_xa);
	xa_destroy(&mdev->mr_xa);
	xa_destroy(&mdev->srq_xa);
	pr_info("metaroce: %s: removed\n", dev_name(&ibdev->dev));
	netdev_put(mdev->ndev, &mdev->ndev_tracker);
	free_percpu(mdev->pstats);
}

#ifdef MRC_CREATE_CQ_ATTRS
/* 6.11+: the bundle, or NULL for a kernel CQ */
static int mrc_create_cq_op(struct ib_cq *ibcq,
			    const struct ib_cq_init_attr *attr,
			    struct uverbs_attr_bundle *attrs)
{
	return mrc_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}
#else
#define mrc_create_cq_op mrc_create_cq
#endif

static const struct ib_device_ops mrc_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = MRC_DRIVER_ID,
	.uverbs_abi_ver = METAROCE_ABI_VERSION,

	.alloc_hw_port_stats = mrc_alloc_hw_port_stats,
	.alloc_mr = mrc_alloc_mr,
	.alloc_mw = mrc_alloc_mw,
	.alloc_pd = mrc_alloc_pd,
	.alloc_ucontext = mrc_alloc_ucontext,
	.create_ah = mrc_create_ah,
	.create_cq = mrc_create_cq_op,
	.create_qp = mrc_create_qp,
	.create_srq = mrc_create_srq,
	.create_user_ah = mrc_create_ah,
	.dealloc_driver = mrc_dealloc_driver,
	.dealloc_mw = mrc_dealloc_mw,
	.dealloc_pd = mrc_dealloc_pd,
	.dealloc_ucontext = mrc_dealloc_ucontext,
	.dereg_mr = mrc_dereg_mr,
	.fill_res_cq_entry = mrc_fill_res_cq_entry,
	.fill_res_qp_entry = mrc_fill_res_qp_entry,
	.destroy_ah = mrc_destroy_ah,
	.destroy_cq = mrc_destroy_cq,
	.destroy_qp = mrc_destroy_qp,
	.destroy_srq = mrc_destroy_srq,
	.disassociate_ucontext = mrc_disassociate_ucontext,
	.get_dma_mr = mrc_get_dma_mr,
	.get_hw_stats = mrc_get_hw_stats,
	.get_link_layer = mrc_get_link_layer,
	.get_netdev = mrc_get_netdev,
	.get_port_immutable = mrc_get_port_immutable,
	.map_mr_sg = mrc_map_mr_sg,
	.mmap = mrc_mmap,
	.mmap_free = mrc_mmap_free,
	.modify_device = mrc_modify_device,
	.modify_port = mrc_modify_port,
	.modify_qp = mrc_modify_qp,
	.modify_srq = mrc_modify_srq,
	.poll_cq = mrc_poll_cq,
	.post_recv = mrc_post_recv,
	.post_send = mrc_post_send,
	.post_srq_recv = mrc_post_srq_recv,
	.query_ah = mrc_query_ah,
	.query_device = mrc_query_device,
	.query_pkey = mrc_query_pkey,
	.query_port = mrc_query_port,
	.query_qp = mrc_query_qp,
	.query_srq = mrc_query_srq,
	.reg_user_mr = mrc_reg_user_mr,
	.req_notify_cq = mrc_req_notify_cq,
	.resize_cq = mrc_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, mrc_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, mrc_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, mrc_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, mrc_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_mw, mrc_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_srq, mrc_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, mrc_ucontext, ibuc),
};

int mrc_register_device(struct mrc_dev *mdev, const char *name)
{
	struct ib_device *ibdev = &mdev->ibdev;
	int err;

	strscpy(ibdev->node_desc, "metaroce", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	ibdev->node_guid = cpu_to_be64(mdev->guid);
	/* not in the core's default set: the SQ doorbell and CQ arming */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ib_set_device_ops(ibdev, &mrc_dev_ops);

	err = ib_device_set_netdev(ibdev, mdev->ndev, 1);
	if (err)
		return err;
	return ib_register_device(ibdev, name, NULL);
}

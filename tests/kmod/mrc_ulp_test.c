// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_ulp_test: a kernel ULP that checks what a metaroce device does for
 * kernel consumers (review findings L3, L5 and C4 of issue 42).
 *
 * It is an ib_client.  Writing a check name to
 * /sys/kernel/debug/mrc_ulp_test/run runs that check on the device named
 * by the "dev" module parameter, in the writer's context; the write fails
 * with EIO if the check failed.  Every result is a kernel log line
 * "mrc_ulp_test: <check>: ok|FAIL ..." for the test script to parse.
 *
 *   dma     (L3) get_dma_mr with a remote access flag fails, a local one
 *           works, and the core then refuses IB_PD_UNSAFE_GLOBAL_RKEY
 *   irq     (C4) sends and receives posted with IRQs off, from a timer
 *           (softirq) and from a hard-IRQ hrtimer (not on PREEMPT_RT,
 *           where no driver may be called so); the CQ handler runs in
 *           task context with IRQs on and reposts a receive inline;
 *           every message arrives intact
 *   inline  (L5) an inline send just over max_inline, and one whose SGE
 *           lengths wrap a u32, are refused with EINVAL; the QP still
 *           carries a verified message afterwards
 *   frwr    (issue 45) fast registration: alloc_mr refuses other types;
 *           map_mr_sg over three separate pages, REG_MR with an updated
 *           key byte, a WRITE and a READ through the key verified byte
 *           for byte; LOCAL_INV makes the key fail remotely (remote
 *           access error, both QPs in ERR) and locally (local protection
 *           error); a new registration with a new key byte works and the
 *           stale key is refused, as is REG_MR of a valid MR;
 *           SEND_WITH_INV invalidates (IB_WC_WITH_INVALIDATE with the
 *           key, then the key fails) and one naming a DMA MR's key or a
 *           stale key fails with IB_WC_REM_INV_REQ_ERR at both ends; a
 *           WRITE posted after a SEND_WITH_INV of its key and placed
 *           first (the SEND waits out an RNR NAK) fails (MRC-ORD-11)
 *
 * The QPs are RC QPs of the one device, connected to each other through
 * the device's first IPv4 RoCE v2 GID.  This is a test module: it is built
 * by "make kmod" and loaded only by tests/vm/13-local-abuse.sh.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timer.h>
#ifdef MRC_HAVE_LINUX_UNALIGNED	/* 6.12 moved it out of asm/ (Kbuild) */
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#define ULP_MSG		64	/* bytes per message */
#define ULP_PER_CTX	16	/* messages posted from each context */
#define ULP_NCTX	3	/* IRQs off, softirq timer, hard-IRQ hrtimer */
#define ULP_NMSG	(ULP_PER_CTX * ULP_NCTX)
#define ULP_DEPTH	128
#define ULP_INLINE	64	/* inline bytes asked for at QP creation */

static char *dev_name_param;
module_param_named(dev, dev_name_param, charp, 0644);
MODULE_PARM_DESC(dev, "name of the metaroce device to test");

static DEFINE_MUTEX(ulp_mutex);	/* serialises runs against device removal */
static u8 ulp_min_rnr_timer = 1;	/* RNR timer code QPs connect with */
static struct ib_device *ulp_devs[8];
static struct dentry *ulp_dir;

/* one pair of connected RC QPs with their CQs and buffers */
struct ulp_pair {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *qa, *qb;		/* qa sends, qb receives */
	u8 *sbuf, *rbuf;		/* ULP_NMSG slots of ULP_MSG bytes */
	u64 sdma, rdma;
	u32 max_inline;

	spinlock_t lock;		/* everything below */
	unsigned int sends_ok, recvs_ok, bad_wc;
	unsigned int handler_calls, handler_bad_ctx, repost_err;
	unsigned int post_err, irqs_lost;
	DECLARE_BITMAP(seen, ULP_NMSG);
	unsigned int corrupt;
	struct timer_list timer;	/* posts from softirq context */
	struct hrtimer hrt;		/* posts from hard-IRQ context */
	struct completion posted;
	bool manual;			/* the check polls; the handler does not */
};

static bool ulp_fill_msg(u8 *p, u32 seq, bool check)
{
	int i;

	for (i = 0; i < ULP_MSG; i++) {
		u8 v = i < 4 ? (u8)(seq >> (8 * i)) : (u8)(seq * 31 + i);

		if (!check)
			p[i] = v;
		else if (p[i] != v)
			return false;
	}
	return true;
}

static int ulp_post_recv(struct ulp_pair *p, u32 slot)
{
	struct ib_sge sge = {
		.addr = p->rdma + (u64)(slot % ULP_NMSG) * ULP_MSG,
		.length = ULP_MSG,
		.lkey = p->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = slot % ULP_NMSG,
		.sg_list = &sge,
		.num_sge = 1,
	};
	const struct ib_recv_wr *bad;

	return ib_post_recv(p->qb, &wr, &bad);
}

static int ulp_post_send(struct ulp_pair *p, u32 seq)
{
	struct ib_sge sge = {
		.addr = p->sdma + (u64)seq * ULP_MSG,
		.length = ULP_MSG,
		.lkey = p->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = seq,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *bad;

	return ib_post_send(p->qa, &wr, &bad);
}

/* a receive completion: check the message it names */
static void ulp_recv_wc(struct ulp_pair *p, struct ib_wc *wc)
{
	u8 *msg = p->rbuf + wc->wr_id * ULP_MSG;
	u32 seq = get_unaligned_le32(msg);

	if (wc->byte_len != ULP_MSG || seq >= ULP_NMSG ||
	    !ulp_fill_msg(msg, seq, true) || test_and_set_bit(seq, p->seen))
		p->corrupt++;
	p->recvs_ok++;
}

static void ulp_poll(struct ulp_pair *p, struct ib_cq *cq)
{
	struct ib_wc wc;
	unsigned long flags;

	while (ib_poll_cq(cq, 1, &wc) > 0) {
		spin_lock_irqsave(&p->lock, flags);
		if (wc.status != IB_WC_SUCCESS)
			p->bad_wc++;
		else if (cq == p->rcq)
			ulp_recv_wc(p, &wc);
		else
			p->sends_ok++;
		spin_unlock_irqrestore(&p->lock, flags);
	}
}

/*
 * The legacy ULP pattern: poll, repost a receive to the QP at once, rearm.
 * That is only safe if the driver does not call us with the QP's lock
 * held, i.e. in task context; otherwise it is counted and not done (it
 * would deadlock).
 */
static void ulp_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct ulp_pair *p = ctx;
	bool task_ok = in_task() && !irqs_disabled();
	unsigned long flags;
	int err = 0;

	if (READ_ONCE(p->manual))
		return;
	spin_lock_irqsave(&p->lock, flags);
	p->handler_calls++;
	if (!task_ok)
		p->handler_bad_ctx++;
	spin_unlock_irqrestore(&p->lock, flags);

	do {
		ulp_poll(p, cq);
	} while (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
				  IB_CQ_REPORT_MISSED_EVENTS) > 0);

	/* extra receives beyond the messages sent: harmless */
	if (task_ok && cq == p->rcq)
		err = ulp_post_recv(p, 0);
	if (err) {
		spin_lock_irqsave(&p->lock, flags);
		p->repost_err++;
		spin_unlock_irqrestore(&p->lock, flags);
	}
}

static void ulp_cq_event(struct ib_event *ev, void *ctx)
{
	pr_info("mrc_ulp_test: CQ event %d\n", ev->event);
}

/* the first IPv4 RoCE v2 GID of port 1, or NULL */
static const struct ib_gid_attr *ulp_find_gid(struct ib_device *dev)
{
	const struct ib_gid_attr *attr;
	int i;

	for (i = 0; i < 32; i++) {
		attr = rdma_get_gid_attr(dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw))
			return attr;
		rdma_put_gid_attr(attr);
	}
	return NULL;
}

static int ulp_modify(struct ib_qp *qp, struct ib_qp_attr *a, int mask,
		      const char *what)
{
	int err = ib_modify_qp(qp, a, mask);

	if (err)
		pr_info("mrc_ulp_test: modify_qp to %s: %d\n", what, err);
	return err;
}

/* INIT -> RTR -> RTS towards @dqpn at the GID the QP itself uses */
static int ulp_connect(struct ib_qp *qp, u32 dqpn,
		       const struct ib_gid_attr *gid)
{
	union ib_gid dgid = gid->gid;	/* loopback: to the QP's own GID */
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			    IB_ACCESS_REMOTE_READ;
	err = ulp_modify(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			 IB_QP_PORT | IB_QP_ACCESS_FLAGS, "INIT");
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.min_rnr_timer = ulp_min_rnr_timer;
	a.max_dest_rd_atomic = 4;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &dgid, 0, gid->index, 64, 0);
	err = rdma_read_gid_l2_fields(gid, NULL, a.ah_attr.roce.dmac);
	if (err)
		return err;
	err = ulp_modify(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			 IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER, "RTR");
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ulp_modify(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT |
			  IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			  IB_QP_MAX_QP_RD_ATOMIC, "RTS");
}

static struct ib_qp *ulp_create_qp(struct ulp_pair *p)
{
	struct ib_qp_init_attr ia = {
		.send_cq = p->scq,
		.recv_cq = p->rcq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = ULP_DEPTH,
			.max_recv_wr = ULP_DEPTH,
			.max_send_sge = 2,
			.max_recv_sge = 1,
			.max_inline_data = ULP_INLINE,
		},
	};

	return ib_create_qp(p->pd, &ia);
}

static struct ib_cq *ulp_create_cq(struct ulp_pair *p)
{
	struct ib_cq_init_attr ca = { .cqe = 2 * ULP_DEPTH };

	return ib_create_cq(p->dev, ulp_comp_handler, ulp_cq_event, p, &ca);
}

static void ulp_pair_free(struct ulp_pair *p)
{
	if (!IS_ERR_OR_NULL(p->qa))
		ib_destroy_qp(p->qa);
	if (!IS_ERR_OR_NULL(p->qb))
		ib_destroy_qp(p->qb);
	if (!IS_ERR_OR_NULL(p->scq))
		ib_destroy_cq(p->scq);
	if (!IS_ERR_OR_NULL(p->rcq))
		ib_destroy_cq(p->rcq);
	if (p->sdma)
		ib_dma_unmap_single(p->dev, p->sdma, ULP_NMSG * ULP_MSG,
				    DMA_TO_DEVICE);
	if (p->rdma)
		ib_dma_unmap_single(p->dev, p->rdma, ULP_NMSG * ULP_MSG,
				    DMA_FROM_DEVICE);
	if (!IS_ERR_OR_NULL(p->pd))
		ib_dealloc_pd(p->pd);
	kfree(p->sbuf);
	kfree(p->rbuf);
	kfree(p);
}

static int ulp_pair_bufs(struct ulp_pair *p)
{
	u64 a;

	p->sbuf = kzalloc(ULP_NMSG * ULP_MSG, GFP_KERNEL);
	p->rbuf = kzalloc(ULP_NMSG * ULP_MSG, GFP_KERNEL);
	if (!p->sbuf || !p->rbuf)
		return -ENOMEM;
	a = ib_dma_map_single(p->dev, p->sbuf, ULP_NMSG * ULP_MSG,
			      DMA_TO_DEVICE);
	if (ib_dma_mapping_error(p->dev, a))
		return -ENOMEM;
	p->sdma = a;
	a = ib_dma_map_single(p->dev, p->rbuf, ULP_NMSG * ULP_MSG,
			      DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(p->dev, a))
		return -ENOMEM;
	p->rdma = a;
	return 0;
}

static int ulp_pair_objs(struct ulp_pair *p)
{
	p->pd = ib_alloc_pd(p->dev, 0);
	if (IS_ERR(p->pd))
		return PTR_ERR(p->pd);
	p->scq = ulp_create_cq(p);
	if (IS_ERR(p->scq))
		return PTR_ERR(p->scq);
	p->rcq = ulp_create_cq(p);
	if (IS_ERR(p->rcq))
		return PTR_ERR(p->rcq);
	p->qa = ulp_create_qp(p);
	if (IS_ERR(p->qa))
		return PTR_ERR(p->qa);
	p->qb = ulp_create_qp(p);
	if (IS_ERR(p->qb))
		return PTR_ERR(p->qb);
	return ulp_pair_bufs(p);
}

static int ulp_pair_connect(struct ulp_pair *p)
{
	const struct ib_gid_attr *gid = ulp_find_gid(p->dev);
	struct ib_qp_init_attr ia;
	struct ib_qp_attr qa;
	int err;

	if (!gid) {
		pr_info("mrc_ulp_test: %s has no IPv4 RoCE v2 GID\n",
			dev_name(&p->dev->dev));
		return -ENODEV;
	}
	err = ulp_connect(p->qa, p->qb->qp_num, gid) ?:
	      ulp_connect(p->qb, p->qa->qp_num, gid);
	rdma_put_gid_attr(gid);
	if (err)
		return err;
	err = ib_query_qp(p->qa, &qa, IB_QP_CAP, &ia);
	if (err)
		return err;
	p->max_inline = qa.cap.max_inline_data;
	ib_req_notify_cq(p->scq, IB_CQ_NEXT_COMP);
	ib_req_notify_cq(p->rcq, IB_CQ_NEXT_COMP);
	return 0;
}

static struct ulp_pair *ulp_pair_new(struct ib_device *dev)
{
	struct ulp_pair *p = kzalloc(sizeof(*p), GFP_KERNEL);
	int err;

	if (!p)
		return ERR_PTR(-ENOMEM);
	p->dev = dev;
	spin_lock_init(&p->lock);
	init_completion(&p->posted);
	err = ulp_pair_objs(p) ?: ulp_pair_connect(p);
	if (err) {
		pr_info("mrc_ulp_test: setting up two QPs failed: %d\n", err);
		ulp_pair_free(p);
		return ERR_PTR(err);
	}
	return p;
}

/* wait until @sends and @recvs completed without error, or 20 s */
static bool ulp_wait(struct ulp_pair *p, unsigned int sends,
		     unsigned int recvs)
{
	unsigned long end = jiffies + 20 * HZ;
	unsigned long flags;
	bool done;

	do {
		spin_lock_irqsave(&p->lock, flags);
		done = p->sends_ok >= sends && p->recvs_ok >= recvs;
		spin_unlock_irqrestore(&p->lock, flags);
		if (done)
			return true;
		usleep_range(5000, 10000);
	} while (time_before(jiffies, end));
	return false;
}

/* ULP_PER_CTX sends from the current context, starting with @seq */
static void ulp_post_range(struct ulp_pair *p, u32 seq)
{
	bool irqs_off = irqs_disabled();
	unsigned int errs = 0, lost = 0;
	unsigned long flags;
	u32 i;

	for (i = seq; i < seq + ULP_PER_CTX; i++) {
		if (ulp_post_send(p, i))
			errs++;
		/* a post must not turn interrupts back on behind our back */
		if (irqs_off && !irqs_disabled())
			lost++;
	}
	spin_lock_irqsave(&p->lock, flags);
	p->post_err += errs;
	p->irqs_lost += lost;
	spin_unlock_irqrestore(&p->lock, flags);
}

static void ulp_timer_fn(struct timer_list *t)
{
	struct ulp_pair *p = from_timer(p, t, timer);

	ulp_post_range(p, ULP_PER_CTX);
	complete(&p->posted);
}

static enum hrtimer_restart ulp_hrtimer_fn(struct hrtimer *t)
{
	struct ulp_pair *p = container_of(t, struct ulp_pair, hrt);

	ulp_post_range(p, 2 * ULP_PER_CTX);
	complete(&p->posted);
	return HRTIMER_NORESTART;
}

/*
 * On PREEMPT_RT a spinlock_t sleeps: no driver can be called with IRQs
 * off or from hard-IRQ context there, so those contexts become task
 * context and a soft hrtimer.
 */
#define ULP_HRT_MODE	(IS_ENABLED(CONFIG_PREEMPT_RT) ? HRTIMER_MODE_REL_SOFT \
						     : HRTIMER_MODE_REL_HARD)

static void ulp_irq_save(unsigned long *flags)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		local_irq_save(*flags);
}

static void ulp_irq_restore(unsigned long flags)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		local_irq_restore(flags);
}

/* all receives, then the sends of the three contexts one after another */
static bool ulp_irq_traffic(struct ulp_pair *p)
{
	unsigned int errs = 0;
	unsigned long flags;
	bool ok, lost;
	u32 i;

	for (i = 0; i < ULP_NMSG; i++)
		ulp_fill_msg(p->sbuf + i * ULP_MSG, i, false);
	ulp_irq_save(&flags);
	for (i = 0; i < ULP_NMSG; i++)
		errs += !!ulp_post_recv(p, i);
	lost = !IS_ENABLED(CONFIG_PREEMPT_RT) && !irqs_disabled();
	ulp_post_range(p, 0);
	ulp_irq_restore(flags);
	spin_lock_irqsave(&p->lock, flags);
	p->post_err += errs;
	p->irqs_lost += lost;
	spin_unlock_irqrestore(&p->lock, flags);
	ok = ulp_wait(p, ULP_PER_CTX, ULP_PER_CTX);

	timer_setup(&p->timer, ulp_timer_fn, 0);
	mod_timer(&p->timer, jiffies + 1);
	wait_for_completion(&p->posted);
	del_timer_sync(&p->timer);
	ok = ulp_wait(p, 2 * ULP_PER_CTX, 2 * ULP_PER_CTX) && ok;

	reinit_completion(&p->posted);
	hrtimer_init(&p->hrt, CLOCK_MONOTONIC, ULP_HRT_MODE);
	p->hrt.function = ulp_hrtimer_fn;
	hrtimer_start(&p->hrt, ms_to_ktime(1), ULP_HRT_MODE);
	wait_for_completion(&p->posted);
	hrtimer_cancel(&p->hrt);
	return ulp_wait(p, ULP_NMSG, ULP_NMSG) && ok;
}

static int ulp_check_irq(struct ib_device *dev)
{
	struct ulp_pair *p = ulp_pair_new(dev);
	unsigned long flags;
	bool ok;

	if (IS_ERR(p))
		return PTR_ERR(p);
	ok = ulp_irq_traffic(p);
	/* let late handler calls (reposts) finish before judging */
	msleep(50);
	spin_lock_irqsave(&p->lock, flags);
	ok = ok && p->sends_ok == ULP_NMSG && p->recvs_ok == ULP_NMSG &&
	     bitmap_full(p->seen, ULP_NMSG) && !p->corrupt && !p->bad_wc &&
	     !p->post_err && !p->irqs_lost && p->handler_calls &&
	     !p->handler_bad_ctx && !p->repost_err;
	pr_info("mrc_ulp_test: irq: %s sends=%u recvs=%u distinct=%u corrupt=%u bad_wc=%u post_err=%u irqs_lost=%u handler_calls=%u handler_bad_ctx=%u repost_err=%u\n",
		ok ? "ok" : "FAIL", p->sends_ok, p->recvs_ok,
		bitmap_weight(p->seen, ULP_NMSG), p->corrupt, p->bad_wc,
		p->post_err, p->irqs_lost, p->handler_calls,
		p->handler_bad_ctx, p->repost_err);
	spin_unlock_irqrestore(&p->lock, flags);
	ulp_pair_free(p);
	return ok ? 0 : -EIO;
}

/* what the core does with an internal MR, so the driver can free it */
static void ulp_put_dma_mr(struct ib_pd *pd, struct ib_mr *mr)
{
	mr->device = pd->device;
	mr->pd = pd;
	mr->type = IB_MR_TYPE_DMA;
	mr->uobject = NULL;
	pd->device->ops.dereg_mr(mr, NULL);
}

static bool ulp_dma_mr_refused(struct ib_pd *pd, int access, const char *name)
{
	struct ib_mr *mr = pd->device->ops.get_dma_mr(pd, access);

	if (!IS_ERR(mr)) {
		pr_info("mrc_ulp_test: dma: FAIL get_dma_mr(%s) succeeded, rkey %#x\n",
			name, mr->rkey);
		ulp_put_dma_mr(pd, mr);
		return false;
	}
	pr_info("mrc_ulp_test: dma: get_dma_mr(%s) = %ld%s\n", name,
		PTR_ERR(mr), PTR_ERR(mr) == -EOPNOTSUPP ? "" : " (want -EOPNOTSUPP)");
	return PTR_ERR(mr) == -EOPNOTSUPP;
}

static bool ulp_dma_mr_local(struct ib_pd *pd)
{
	struct ib_mr *mr = pd->device->ops.get_dma_mr(pd, IB_ACCESS_LOCAL_WRITE);

	pr_info("mrc_ulp_test: dma: get_dma_mr(LOCAL_WRITE) = %d\n",
		PTR_ERR_OR_ZERO(mr));
	if (IS_ERR(mr))
		return false;
	ulp_put_dma_mr(pd, mr);
	return true;
}

/* L3: no remote rights on an MR that covers all kernel memory */
static int ulp_check_dma(struct ib_device *dev)
{
	struct ib_pd *pd = ib_alloc_pd(dev, 0);
	bool ok = true;

	if (IS_ERR(pd)) {
		pr_info("mrc_ulp_test: dma: FAIL ib_alloc_pd: %ld\n", PTR_ERR(pd));
		return PTR_ERR(pd);
	}
	ok &= ulp_dma_mr_refused(pd, IB_ACCESS_LOCAL_WRITE |
				 IB_ACCESS_REMOTE_READ, "REMOTE_READ");
	ok &= ulp_dma_mr_refused(pd, IB_ACCESS_LOCAL_WRITE |
				 IB_ACCESS_REMOTE_WRITE, "REMOTE_WRITE");
	ok &= ulp_dma_mr_refused(pd, IB_ACCESS_LOCAL_WRITE |
				 IB_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC");
	ok &= ulp_dma_mr_local(pd);
	ib_dealloc_pd(pd);

	pd = ib_alloc_pd(dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (!IS_ERR(pd)) {
		pr_info("mrc_ulp_test: dma: FAIL IB_PD_UNSAFE_GLOBAL_RKEY granted, rkey %#x\n",
			pd->unsafe_global_rkey);
		ib_dealloc_pd(pd);
		ok = false;
	} else {
		pr_info("mrc_ulp_test: dma: ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY) = %ld\n",
			PTR_ERR(pd));
	}
	pr_info("mrc_ulp_test: dma: %s\n", ok ? "ok" : "FAIL");
	return ok ? 0 : -EIO;
}

static int ulp_post_inline(struct ulp_pair *p, struct ib_sge *sge, int n)
{
	struct ib_send_wr wr = {
		.wr_id = 1000,
		.sg_list = sge,
		.num_sge = n,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
	};
	const struct ib_send_wr *bad = NULL;
	int err = ib_post_send(p->qa, &wr, &bad);

	return err && bad != &wr ? -EFAULT : err;
}

/* after the refusals: one plain and one inline message still arrive */
static bool ulp_inline_usable(struct ulp_pair *p)
{
	struct ib_sge sge = {
		.addr = (uintptr_t)(p->sbuf + ULP_MSG),
		.length = ULP_MSG,
	};
	bool ok;

	ulp_fill_msg(p->sbuf, 0, false);
	ulp_fill_msg(p->sbuf + ULP_MSG, 1, false);
	ok = !ulp_post_recv(p, 0) && !ulp_post_recv(p, 1) &&
	     !ulp_post_send(p, 0);
	if (p->max_inline >= ULP_MSG)
		ok = ok && !ulp_post_inline(p, &sge, 1);
	else
		ok = ok && !ulp_post_send(p, 1);
	ok = ok && ulp_wait(p, 2, 2) && !p->bad_wc && !p->corrupt &&
	     bitmap_weight(p->seen, ULP_NMSG) == 2;
	pr_info("mrc_ulp_test: inline: messages after the refusals: sends=%u recvs=%u distinct=%u corrupt=%u bad_wc=%u\n",
		p->sends_ok, p->recvs_ok, bitmap_weight(p->seen, ULP_NMSG),
		p->corrupt, p->bad_wc);
	return ok;
}

/* L5: inline lengths over max_inline are refused, even when the sum wraps */
static int ulp_check_inline(struct ib_device *dev)
{
	struct ulp_pair *p = ulp_pair_new(dev);
	struct ib_sge sge[2];
	int e1, e2;
	bool ok;

	if (IS_ERR(p))
		return PTR_ERR(p);
	if (p->max_inline + 1 > ULP_NMSG * ULP_MSG) {
		pr_info("mrc_ulp_test: inline: FAIL max_inline %u too big for the test\n",
			p->max_inline);
		ulp_pair_free(p);
		return -EIO;
	}
	sge[0].addr = (uintptr_t)p->sbuf;
	sge[0].length = p->max_inline + 1;
	e1 = ulp_post_inline(p, sge, 1);
	pr_info("mrc_ulp_test: inline: %u bytes over max_inline %u: %d\n",
		sge[0].length, p->max_inline, e1);
	/* 16 + (2^32 - 8) wraps to 8 in u32 */
	sge[0].length = 16;
	sge[1].addr = (uintptr_t)p->sbuf;
	sge[1].length = 0U - 8;
	pr_info("mrc_ulp_test: inline: posting SGE lengths 16 + %u\n",
		sge[1].length);
	e2 = ulp_post_inline(p, sge, 2);
	pr_info("mrc_ulp_test: inline: wrapping SGE lengths: %d\n", e2);
	ok = e1 == -EINVAL && e2 == -EINVAL && ulp_inline_usable(p);
	pr_info("mrc_ulp_test: inline: %s\n", ok ? "ok" : "FAIL");
	ulp_pair_free(p);
	return ok ? 0 : -EIO;
}

/* ---- frwr: fast registration and invalidation ---- */

#define FR_OFF		100		/* the MR starts this far into page 0 */
#define FR_LEN0		(PAGE_SIZE - FR_OFF)
#define FR_LEN2		400		/* bytes of page 2 in the MR */
#define FR_LEN		(FR_LEN0 + PAGE_SIZE + FR_LEN2)
#define FR_UNTOUCHED	0xee		/* page bytes outside the MR */
#define FR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

/* an FRWR MR over three separate pages, and local buffers (qa's side) */
struct ulp_frwr {
	struct ulp_pair *p;
	struct page *pg[3];
	struct scatterlist sg[3];
	int nmapped;
	struct ib_mr *mr;
	u8 *lbuf;			/* FR_LEN: WRITE source, READ target */
	u64 ldma;
	unsigned int fails;
};

static u8 fr_byte(u32 seed, u32 off)
{
	return (u8)(seed * 131 + off * 7 + (off >> 8));
}

/* the page byte at offset @off of the MR */
static u8 *fr_at(struct ulp_frwr *f, u32 off)
{
	if (off < FR_LEN0)
		return (u8 *)page_address(f->pg[0]) + FR_OFF + off;
	off -= FR_LEN0;
	if (off < PAGE_SIZE)
		return (u8 *)page_address(f->pg[1]) + off;
	return (u8 *)page_address(f->pg[2]) + off - PAGE_SIZE;
}

static void fr_fill_mr(struct ulp_frwr *f, u32 seed)
{
	u32 i;

	for (i = 0; i < FR_LEN; i++)
		*fr_at(f, i) = fr_byte(seed, i);
}

/* the MR holds pattern @seed, and the page bytes around it are untouched */
static bool fr_mr_holds(struct ulp_frwr *f, u32 seed)
{
	u8 *p0 = page_address(f->pg[0]), *p2 = page_address(f->pg[2]);
	u32 i;

	for (i = 0; i < FR_LEN; i++)
		if (*fr_at(f, i) != fr_byte(seed, i))
			return false;
	for (i = 0; i < FR_OFF; i++)
		if (p0[i] != FR_UNTOUCHED)
			return false;
	for (i = FR_LEN2; i < PAGE_SIZE; i++)
		if (p2[i] != FR_UNTOUCHED)
			return false;
	return true;
}

static void fr_result(struct ulp_frwr *f, bool ok, const char *what)
{
	pr_info("mrc_ulp_test: frwr: %s: %s\n", what, ok ? "ok" : "FAIL");
	if (!ok)
		f->fails++;
}

/* the next completion of @cq, waiting up to 10 s; false if none came */
static bool fr_wc(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + 10 * HZ;

	do {
		if (ib_poll_cq(cq, 1, wc) > 0)
			return true;
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
	memset(wc, 0, sizeof(*wc));
	wc->status = IB_WC_GENERAL_ERR;	/* stands for "none" */
	return false;
}

/* post @wr on @qp and take its completion: ok if status and opcode fit */
static bool fr_do(struct ulp_frwr *f, struct ib_qp *qp, struct ib_send_wr *wr,
		  enum ib_wc_status want, enum ib_wc_opcode op,
		  const char *what)
{
	const struct ib_send_wr *bad;
	struct ib_wc wc;
	int err;
	bool ok;

	wr->send_flags |= IB_SEND_SIGNALED;
	err = ib_post_send(qp, wr, &bad);
	if (err) {
		pr_info("mrc_ulp_test: frwr: %s: post_send %d\n", what, err);
		fr_result(f, false, what);
		return false;
	}
	fr_wc(f->p->scq, &wc);
	ok = wc.status == want && wc.wr_id == wr->wr_id &&
	     (want != IB_WC_SUCCESS || wc.opcode == op);
	pr_info("mrc_ulp_test: frwr: %s: status %d (want %d) opcode %d wr_id %llu\n",
		what, wc.status, want, wc.opcode, wc.wr_id);
	fr_result(f, ok, what);
	return ok;
}

static bool fr_reg(struct ulp_frwr *f, struct ib_qp *qp, u8 key,
		   enum ib_wc_status want, const char *what)
{
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 1 },
		.mr = f->mr,
		.access = FR_ACCESS,
	};

	ib_update_fast_reg_key(f->mr, key);
	wr.key = f->mr->rkey;
	return fr_do(f, qp, &wr.wr, want, IB_WC_REG_MR, what);
}

static bool fr_local_inv(struct ulp_frwr *f, u32 rkey, const char *what)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV, .wr_id = 2,
		.ex.invalidate_rkey = rkey,
	};

	return fr_do(f, f->p->qb, &wr, IB_WC_SUCCESS, IB_WC_LOCAL_INV, what);
}

/* a WRITE (@read false) or READ of the whole MR from qa through @rkey */
static bool fr_rdma(struct ulp_frwr *f, bool read, u32 rkey, u32 lkey,
		    enum ib_wc_status want, const char *what)
{
	struct ib_sge sge = {
		.addr = lkey == f->p->pd->local_dma_lkey ? f->ldma :
			f->mr->iova,
		.length = FR_LEN,
		.lkey = lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = read ? IB_WR_RDMA_READ : IB_WR_RDMA_WRITE,
			.wr_id = read ? 4 : 3,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = f->mr->iova,
		.rkey = rkey,
	};

	return fr_do(f, f->p->qa, &wr.wr, want,
		     read ? IB_WC_RDMA_READ : IB_WC_RDMA_WRITE, what);
}

/* both QPs in @state (what an access error must leave, MRC-NAK-9/10) */
static bool fr_qps_in(struct ulp_frwr *f, enum ib_qp_state state)
{
	struct ib_qp_init_attr ia;
	struct ib_qp_attr a, b;

	return !ib_query_qp(f->p->qa, &a, IB_QP_STATE, &ia) &&
	       !ib_query_qp(f->p->qb, &b, IB_QP_STATE, &ia) &&
	       a.qp_state == state && b.qp_state == state;
}

/* after an error: both QPs to ERR, flushed, then RESET and RTS again */
static bool fr_reset(struct ulp_frwr *f, const char *what)
{
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	const struct ib_gid_attr *gid;
	struct ib_wc wc;
	int err;

	err = ib_modify_qp(f->p->qa, &a, IB_QP_STATE) ?:
	      ib_modify_qp(f->p->qb, &a, IB_QP_STATE);
	msleep(20);
	while (ib_poll_cq(f->p->scq, 1, &wc) > 0 ||
	       ib_poll_cq(f->p->rcq, 1, &wc) > 0)
		;
	a.qp_state = IB_QPS_RESET;
	err = err ?: ib_modify_qp(f->p->qa, &a, IB_QP_STATE) ?:
	      ib_modify_qp(f->p->qb, &a, IB_QP_STATE);
	gid = ulp_find_gid(f->p->dev);
	if (!err && gid)
		err = ulp_connect(f->p->qa, f->p->qb->qp_num, gid) ?:
		      ulp_connect(f->p->qb, f->p->qa->qp_num, gid);
	if (gid)
		rdma_put_gid_attr(gid);
	if (err || !gid)
		pr_info("mrc_ulp_test: frwr: reset after %s: %d\n", what, err);
	return !err && gid;
}

static bool fr_map(struct ulp_frwr *f, const char *what)
{
	int n = ib_map_mr_sg(f->mr, f->sg, f->nmapped, NULL, PAGE_SIZE);
	bool ok = n == f->nmapped && f->mr->length == FR_LEN &&
		  f->mr->iova == sg_dma_address(&f->sg[0]);

	pr_info("mrc_ulp_test: frwr: %s: ib_map_mr_sg = %d of %d, length %llu\n",
		what, n, f->nmapped, f->mr->length);
	fr_result(f, ok, what);
	return ok;
}

/* device attributes; alloc_mr refuses other types and too many pages */
static void fr_check_alloc(struct ulp_frwr *f)
{
	struct ib_device *dev = f->p->dev;
	struct ib_pd *pd = f->p->pd;
	u32 max = dev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *mr;

	fr_result(f, (dev->attrs.device_cap_flags &
		      IB_DEVICE_MEM_MGT_EXTENSIONS) && max >= 3,
		  "IB_DEVICE_MEM_MGT_EXTENSIONS, max_fast_reg_page_list_len >= 3");
	/* the driver's own answer: the core refuses SG_GAPS itself */
	mr = dev->ops.alloc_mr ? dev->ops.alloc_mr(pd, IB_MR_TYPE_SG_GAPS, 3) :
				 ERR_PTR(-ENODEV);
	pr_info("mrc_ulp_test: frwr: alloc_mr(SG_GAPS) = %d\n",
		PTR_ERR_OR_ZERO(mr));
	if (!IS_ERR(mr))
		ulp_put_dma_mr(pd, mr);
	fr_result(f, PTR_ERR_OR_ZERO(mr) == -EOPNOTSUPP,
		  "alloc_mr of another type refused with EOPNOTSUPP");
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max + 1);
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	fr_result(f, IS_ERR(mr), "alloc_mr beyond max_fast_reg_page_list_len refused");
}

static int fr_setup(struct ulp_frwr *f)
{
	struct ib_device *dev = f->p->dev;
	int i;

	sg_init_table(f->sg, 3);
	for (i = 0; i < 3; i++) {
		f->pg[i] = alloc_page(GFP_KERNEL);
		if (!f->pg[i])
			return -ENOMEM;
		memset(page_address(f->pg[i]), FR_UNTOUCHED, PAGE_SIZE);
	}
	sg_set_page(&f->sg[0], f->pg[0], FR_LEN0, FR_OFF);
	sg_set_page(&f->sg[1], f->pg[1], PAGE_SIZE, 0);
	sg_set_page(&f->sg[2], f->pg[2], FR_LEN2, 0);
	f->nmapped = ib_dma_map_sg(dev, f->sg, 3, DMA_BIDIRECTIONAL);
	if (f->nmapped <= 0)
		return -EIO;
	f->lbuf = kzalloc(FR_LEN, GFP_KERNEL);
	if (!f->lbuf)
		return -ENOMEM;
	f->ldma = ib_dma_map_single(dev, f->lbuf, FR_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, f->ldma)) {
		f->ldma = 0;
		return -EIO;
	}
	f->mr = ib_alloc_mr(f->p->pd, IB_MR_TYPE_MEM_REG, 3);
	if (IS_ERR(f->mr)) {
		pr_info("mrc_ulp_test: frwr: FAIL ib_alloc_mr(MEM_REG, 3) = %ld\n",
			PTR_ERR(f->mr));
		return PTR_ERR(f->mr);
	}
	return 0;
}

static void fr_free(struct ulp_frwr *f)
{
	struct ib_device *dev = f->p->dev;
	int i;

	if (!IS_ERR_OR_NULL(f->mr))
		ib_dereg_mr(f->mr);
	if (f->ldma)
		ib_dma_unmap_single(dev, f->ldma, FR_LEN, DMA_BIDIRECTIONAL);
	kfree(f->lbuf);
	if (f->nmapped > 0)
		ib_dma_unmap_sg(dev, f->sg, 3, DMA_BIDIRECTIONAL);
	for (i = 0; i < 3; i++)
		if (f->pg[i])
			__free_page(f->pg[i]);
}

static void fr_fill_local(struct ulp_frwr *f, u32 seed)
{
	u32 i;

	for (i = 0; i < FR_LEN; i++)
		f->lbuf[i] = fr_byte(seed, i);
}

static bool fr_local_holds(struct ulp_frwr *f, u32 seed)
{
	u32 i;

	for (i = 0; i < FR_LEN; i++)
		if (f->lbuf[i] != fr_byte(seed, i))
			return false;
	return true;
}

/* REG_MR, then a WRITE and a READ through the key, verified */
static void fr_check_data(struct ulp_frwr *f)
{
	u32 lkey = f->p->pd->local_dma_lkey;

	fr_rdma(f, false, f->mr->rkey, lkey, IB_WC_REM_ACCESS_ERR,
		"a WRITE before REG_MR is refused");
	fr_result(f, fr_qps_in(f, IB_QPS_ERR) && fr_reset(f, "unregistered"),
		  "both QPs in ERR after it, reset");
	fr_map(f, "map three pages");
	fr_reg(f, f->p->qb, (u8)(f->mr->rkey + 1), IB_WC_SUCCESS,
	       "REG_MR with an updated key byte");
	fr_fill_local(f, 1);
	fr_rdma(f, false, f->mr->rkey, lkey, IB_WC_SUCCESS, "WRITE through it");
	fr_result(f, fr_mr_holds(f, 1), "WRITE data verified in the pages");
	fr_fill_mr(f, 2);
	memset(f->lbuf, 0, FR_LEN);
	fr_rdma(f, true, f->mr->rkey, lkey, IB_WC_SUCCESS, "READ through it");
	fr_result(f, fr_local_holds(f, 2), "READ data verified");
}

/* LOCAL_INV: the key reaches nothing, remotely or locally */
static void fr_check_local_inv(struct ulp_frwr *f)
{
	u32 lkey = f->p->pd->local_dma_lkey, old = f->mr->rkey;
	struct ib_send_wr wr = { .opcode = IB_WR_SEND, .wr_id = 5 };
	struct ib_sge sge = {
		.addr = f->mr->iova, .length = 64, .lkey = f->mr->lkey,
	};

	fr_local_inv(f, old, "LOCAL_INV");
	fr_fill_local(f, 3);
	fr_rdma(f, false, old, lkey, IB_WC_REM_ACCESS_ERR,
		"WRITE with the invalidated rkey: remote access error");
	fr_result(f, fr_mr_holds(f, 2), "pages unchanged");
	fr_result(f, fr_qps_in(f, IB_QPS_ERR) && fr_reset(f, "LOCAL_INV"),
		  "both QPs in ERR after it, reset");
	wr.sg_list = &sge;
	wr.num_sge = 1;
	fr_do(f, f->p->qa, &wr, IB_WC_LOC_PROT_ERR, IB_WC_SEND,
	      "SEND from the invalidated lkey: local protection error");
	fr_reset(f, "local use");
}

/* a new key byte: the new key works, the stale one is refused */
static void fr_check_rereg(struct ulp_frwr *f)
{
	u32 lkey = f->p->pd->local_dma_lkey, stale = f->mr->rkey;

	fr_map(f, "map again");
	fr_reg(f, f->p->qb, (u8)(stale + 1), IB_WC_SUCCESS,
	       "REG_MR again with a new key byte");
	fr_fill_local(f, 4);
	fr_rdma(f, false, f->mr->rkey, lkey, IB_WC_SUCCESS,
		"WRITE through the new key");
	fr_result(f, fr_mr_holds(f, 4), "WRITE data verified");
	memset(f->lbuf, 0, FR_LEN);
	fr_rdma(f, true, stale, lkey, IB_WC_REM_ACCESS_ERR,
		"READ with the stale key: remote access error");
	fr_result(f, !memchr_inv(f->lbuf, 0, FR_LEN),
		  "nothing read through the stale key");
	fr_reset(f, "stale key");
	fr_reg(f, f->p->qb, (u8)(f->mr->rkey + 1), IB_WC_LOC_PROT_ERR,
	       "REG_MR of a valid MR refused");
	fr_reset(f, "REG_MR of a valid MR");
	/* the refused REG_MR changed nothing: the key before it still works */
	ib_update_fast_reg_key(f->mr, (u8)(f->mr->rkey - 1));
	fr_fill_local(f, 5);
	fr_rdma(f, false, f->mr->rkey, lkey, IB_WC_SUCCESS,
		"WRITE through the key before the refused REG_MR");
	fr_result(f, fr_mr_holds(f, 5), "WRITE data verified");
}

/* qa sends a SEND_WITH_INV of @rkey; qb's receive completion is returned */
static bool fr_send_inv(struct ulp_frwr *f, u32 rkey, enum ib_wc_status want,
			struct ib_wc *rwc, const char *what)
{
	struct ulp_pair *p = f->p;
	struct ib_sge sge = {
		.addr = p->sdma, .length = ULP_MSG, .lkey = p->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.opcode = IB_WR_SEND_WITH_INV, .wr_id = 6,
		.sg_list = &sge, .num_sge = 1,
		.ex.invalidate_rkey = rkey,
	};

	ulp_fill_msg(p->sbuf, 7, false);
	memset(p->rbuf, 0, ULP_MSG);
	if (ulp_post_recv(p, 0)) {
		fr_result(f, false, what);
		return false;
	}
	fr_do(f, p->qa, &wr, want, IB_WC_SEND, what);
	fr_wc(p->rcq, rwc);
	pr_info("mrc_ulp_test: frwr: %s: receive status %d opcode %d flags %#x invalidate_rkey %#x byte_len %u\n",
		what, rwc->status, rwc->opcode, rwc->wc_flags,
		rwc->ex.invalidate_rkey, rwc->byte_len);
	return rwc->status == want;
}

/* SEND_WITH_INV invalidates the MR it names; bad names fail cleanly */
static void fr_check_send_inv(struct ulp_frwr *f)
{
	u32 lkey = f->p->pd->local_dma_lkey, key = f->mr->rkey;
	struct ib_wc rwc;

	fr_send_inv(f, key, IB_WC_SUCCESS, &rwc, "SEND_WITH_INV");
	fr_result(f, rwc.status == IB_WC_SUCCESS && rwc.opcode == IB_WC_RECV &&
		  (rwc.wc_flags & IB_WC_WITH_INVALIDATE) &&
		  !(rwc.wc_flags & IB_WC_WITH_IMM) &&
		  rwc.ex.invalidate_rkey == key && rwc.byte_len == ULP_MSG &&
		  ulp_fill_msg(f->p->rbuf, 7, true),
		  "receive: WITH_INVALIDATE, invalidate_rkey, data verified");
	fr_fill_local(f, 6);
	fr_rdma(f, false, key, lkey, IB_WC_REM_ACCESS_ERR,
		"WRITE with the remotely invalidated rkey: remote access error");
	fr_result(f, fr_mr_holds(f, 5), "pages unchanged");
	fr_reset(f, "remote invalidation");

	fr_send_inv(f, lkey, IB_WC_REM_INV_REQ_ERR, &rwc,
		    "SEND_WITH_INV of a DMA MR's key");
	fr_result(f, rwc.status == IB_WC_REM_INV_REQ_ERR,
		  "both ends fail with IB_WC_REM_INV_REQ_ERR");
	fr_reset(f, "SEND_WITH_INV of a DMA MR");

	fr_map(f, "map a third time");
	fr_reg(f, f->p->qb, (u8)(key + 1), IB_WC_SUCCESS, "REG_MR a third time");
	fr_send_inv(f, key, IB_WC_REM_INV_REQ_ERR, &rwc,
		    "SEND_WITH_INV of the stale key");
	fr_result(f, rwc.status == IB_WC_REM_INV_REQ_ERR,
		  "both ends fail with IB_WC_REM_INV_REQ_ERR");
	fr_reset(f, "SEND_WITH_INV of a stale key");
	fr_fill_local(f, 8);
	fr_rdma(f, false, f->mr->rkey, lkey, IB_WC_SUCCESS,
		"WRITE through the current key: still valid");
	fr_result(f, fr_mr_holds(f, 8), "WRITE data verified");
}

/*
 * MRC-ORD-11: a WRITE posted after a SEND_WITH_INV of its key fails, even
 * when it is placed first.  With no receive posted, the SEND_WITH_INV gets
 * an RNR NAK (163.84 ms) while the WRITE behind it is placed; the receive
 * comes then, and the resent SEND_WITH_INV invalidates the key.
 */
static void fr_check_inv_order(struct ulp_frwr *f)
{
	struct ulp_pair *p = f->p;
	struct ib_sge ssge = {
		.addr = p->sdma, .length = ULP_MSG, .lkey = p->pd->local_dma_lkey,
	};
	struct ib_sge wsge = {
		.addr = f->ldma, .length = FR_LEN, .lkey = p->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = IB_WR_RDMA_WRITE, .wr_id = 3,
			.sg_list = &wsge, .num_sge = 1,
			.send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = f->mr->iova,
		.rkey = f->mr->rkey,
	};
	struct ib_send_wr inv = {
		.opcode = IB_WR_SEND_WITH_INV, .wr_id = 6,
		.sg_list = &ssge, .num_sge = 1,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = f->mr->rkey,
		.next = &wr.wr,
	};
	const struct ib_send_wr *bad;
	struct ib_wc w1, w2, rwc;
	bool placed;

	ulp_min_rnr_timer = 28;
	if (!fr_reset(f, "RNR timer")) {
		ulp_min_rnr_timer = 1;
		fr_result(f, false, "QPs with a long RNR timer");
		return;
	}
	ulp_fill_msg(p->sbuf, 9, false);
	fr_fill_local(f, 9);
	if (ib_post_send(p->qa, &inv, &bad)) {
		fr_result(f, false, "post SEND_WITH_INV and a WRITE with its key");
		goto out;
	}
	msleep(30);
	placed = fr_mr_holds(f, 9);
	fr_result(f, placed, "the WRITE is placed while the SEND_WITH_INV waits");
	if (ulp_post_recv(p, 0))
		fr_result(f, false, "post the receive");
	fr_wc(p->scq, &w1);
	fr_wc(p->scq, &w2);
	fr_wc(p->rcq, &rwc);
	pr_info("mrc_ulp_test: frwr: order: send wr_id %llu status %d, write wr_id %llu status %d, receive status %d flags %#x\n",
		w1.wr_id, w1.status, w2.wr_id, w2.status, rwc.status,
		rwc.wc_flags);
	fr_result(f, w1.wr_id == 6 && w1.status == IB_WC_SUCCESS &&
		  rwc.status == IB_WC_SUCCESS &&
		  (rwc.wc_flags & IB_WC_WITH_INVALIDATE),
		  "the SEND_WITH_INV completes at both ends");
	fr_result(f, w2.wr_id == 3 && w2.status == IB_WC_REM_ACCESS_ERR,
		  "the WRITE placed before it fails with a remote access error");
out:
	ulp_min_rnr_timer = 1;
	fr_reset(f, "the WRITE after SEND_WITH_INV");
}

static int ulp_check_frwr(struct ib_device *dev)
{
	struct ulp_frwr f = {};
	int err;

	f.p = ulp_pair_new(dev);
	if (IS_ERR(f.p))
		return PTR_ERR(f.p);
	/* this check polls its CQs itself */
	WRITE_ONCE(f.p->manual, true);
	err = fr_setup(&f);
	if (!err) {
		fr_check_alloc(&f);
		fr_check_data(&f);
		fr_check_local_inv(&f);
		fr_check_rereg(&f);
		fr_check_send_inv(&f);
		fr_check_inv_order(&f);
	}
	fr_free(&f);
	ulp_pair_free(f.p);
	pr_info("mrc_ulp_test: frwr: %s (%u failed)\n",
		!err && !f.fails ? "ok" : "FAIL", f.fails);
	return err ?: f.fails ? -EIO : 0;
}

static struct ib_device *ulp_find_dev(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(ulp_devs); i++)
		if (ulp_devs[i] && !strcmp(dev_name(&ulp_devs[i]->dev), name))
			return ulp_devs[i];
	return NULL;
}

static int ulp_run(const char *check)
{
	struct ib_device *dev;

	dev = dev_name_param ? ulp_find_dev(dev_name_param) : NULL;
	if (!dev) {
		pr_info("mrc_ulp_test: no RDMA device \"%s\"\n",
			dev_name_param ?: "");
		return -ENODEV;
	}
	pr_info("mrc_ulp_test: %s: start on %s\n", check, dev_name(&dev->dev));
	if (!strcmp(check, "dma"))
		return ulp_check_dma(dev);
	if (!strcmp(check, "irq"))
		return ulp_check_irq(dev);
	if (!strcmp(check, "inline"))
		return ulp_check_inline(dev);
	if (!strcmp(check, "frwr"))
		return ulp_check_frwr(dev);
	return -EINVAL;
}

static ssize_t ulp_run_write(struct file *f, const char __user *ubuf,
			     size_t len, loff_t *pos)
{
	char check[16];
	int err;

	if (len >= sizeof(check))
		return -EINVAL;
	if (copy_from_user(check, ubuf, len))
		return -EFAULT;
	check[len] = 0;
	mutex_lock(&ulp_mutex);
	err = ulp_run(strim(check));
	mutex_unlock(&ulp_mutex);
	return err ? err : len;
}

static const struct file_operations ulp_run_fops = {
	.owner = THIS_MODULE,
	.write = ulp_run_write,
};

static int ulp_add(struct ib_device *dev)
{
	int i, err = -ENOSPC;

	mutex_lock(&ulp_mutex);
	for (i = 0; i < ARRAY_SIZE(ulp_devs); i++) {
		if (!ulp_devs[i]) {
			ulp_devs[i] = dev;
			err = 0;
			break;
		}
	}
	mutex_unlock(&ulp_mutex);
	return err;
}

/* a run in progress holds the mutex: the device goes after it */
static void ulp_remove(struct ib_device *dev, void *data)
{
	int i;

	mutex_lock(&ulp_mutex);
	for (i = 0; i < ARRAY_SIZE(ulp_devs); i++)
		if (ulp_devs[i] == dev)
			ulp_devs[i] = NULL;
	mutex_unlock(&ulp_mutex);
}

static struct ib_client ulp_client = {
	.name = "mrc_ulp_test",
	.add = ulp_add,
	.remove = ulp_remove,
};

static int __init ulp_init(void)
{
	int err = ib_register_client(&ulp_client);

	if (err)
		return err;
	ulp_dir = debugfs_create_dir("mrc_ulp_test", NULL);
	debugfs_create_file("run", 0200, ulp_dir, NULL, &ulp_run_fops);
	return 0;
}

static void __exit ulp_exit(void)
{
	debugfs_remove_recursive(ulp_dir);
	ib_unregister_client(&ulp_client);
}

module_init(ulp_init);
module_exit(ulp_exit);
MODULE_DESCRIPTION("metaroce test: a kernel ULP's view of the device");
MODULE_LICENSE("Dual BSD/GPL");

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
#include <asm/unaligned.h>
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
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE;
	err = ulp_modify(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			 IB_QP_PORT | IB_QP_ACCESS_FLAGS, "INIT");
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.min_rnr_timer = 1;
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

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: completion queues.  The kernel produces CQEs into a ring that
 * a user CQ's provider polls without a system call.
 */
#include "mrc.h"

static int mrc_cq_depth(int cqe, u32 *depth)
{
	if (cqe < 1 || cqe > MRC_MAX_CQE)
		return -EINVAL;
	*depth = roundup_pow_of_two((u32)cqe + 1);
	return 0;
}

static int mrc_cq_resp(struct mrc_cq *cq, struct ib_udata *udata)
{
	struct metaroce_create_cq_resp resp = {
		.mmap_offset = mrc_ring_mmap_offset(&cq->ring),
		.mmap_size = cq->ring.size,
		.depth = cq->ring.depth,
		.cqn = cq->cqn,
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/*
 * Completions are posted with the QP's lock held.  A kernel consumer's
 * handler may post to that QP at once (legacy ULPs do), so it runs from
 * here instead; a user CQ's handler (uverbs) only queues an event.
 */
static void mrc_cq_comp_work(struct work_struct *work)
{
	struct mrc_cq *cq = container_of(work, struct mrc_cq, comp_work);

	cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

int mrc_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibcq->device);
	struct mrc_cq *cq = to_mcq(ibcq);
	u32 depth;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	err = mrc_cq_depth(attr->cqe, &depth);
	if (err)
		return err;
	if (atomic_inc_return(&mdev->n_cq) > MRC_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}
	spin_lock_init(&cq->lock);
	INIT_WORK(&cq->comp_work, mrc_cq_comp_work);
	cq->is_user = !!udata;
	err = mrc_ring_alloc(mdev, &cq->ring, depth, sizeof(struct metaroce_cqe),
			     udata);
	if (err)
		goto err_count;
	spin_lock(&mdev->key_lock);
	cq->cqn = ++mdev->next_cqn;
	spin_unlock(&mdev->key_lock);
	ibcq->cqe = depth - 1;
	if (udata) {
		err = mrc_cq_resp(cq, udata);
		if (err)
			goto err_ring;
	}
	return 0;

err_ring:
	mrc_ring_free(&cq->ring);
err_count:
	atomic_dec(&mdev->n_cq);
	return err;
}

int mrc_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct mrc_cq *cq = to_mcq(ibcq);
	struct mrc_ring ring;
	unsigned long flags;

	/* no QP is left to post, so no handler gets queued again */
	cancel_work_sync(&cq->comp_work);
	/* restrack may still read the header: it checks under cq->lock */
	spin_lock_irqsave(&cq->lock, flags);
	mrc_ring_detach(&cq->ring, &ring);
	spin_unlock_irqrestore(&cq->lock, flags);
	mrc_ring_free(&ring);
	atomic_dec(&to_mdev(ibcq->device)->n_cq);
	return 0;
}

/* consumer index: userspace's for a user CQ (untrusted), ours otherwise */
static u32 mrc_cq_cons(struct mrc_cq *cq)
{
	return cq->is_user ? mrc_ring_load(&cq->ring.hdr->cons) : cq->kcons;
}

int mrc_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct mrc_dev *mdev = to_mdev(ibcq->device);
	struct mrc_cq *cq = to_mcq(ibcq);
	struct mrc_ring nr, old;
	unsigned long flags;
	u32 depth, cons, n, i;
	int err;

	err = mrc_cq_depth(cqe, &depth);
	if (err)
		return err;
	err = mrc_ring_alloc(mdev, &nr, depth, sizeof(struct metaroce_cqe),
			     udata);
	if (err)
		return err;

	spin_lock_irqsave(&cq->lock, flags);
	cons = mrc_cq_cons(cq);
	n = cq->prod - cons;
	if (n > cq->ring.depth || n > depth - 1) {
		spin_unlock_irqrestore(&cq->lock, flags);
		mrc_ring_free(&nr);
		/* ibv_resize_cq(3): cqe below the unpolled count is invalid */
		return -EINVAL;
	}
	/* unconsumed CQEs move to the start of the new ring */
	for (i = 0; i < n; i++)
		memcpy(mrc_ring_slot(&nr, i), mrc_ring_slot(&cq->ring, cons + i),
		       sizeof(struct metaroce_cqe));
	nr.hdr->prod = n;
	nr.hdr->cons = 0;
	old = cq->ring;
	cq->ring = nr;
	cq->prod = n;
	cq->kcons = 0;
	ibcq->cqe = depth - 1;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (udata) {
		err = mrc_cq_resp(cq, udata);
		if (err) {
			/* the old mapping stays valid for the provider */
			spin_lock_irqsave(&cq->lock, flags);
			cq->ring = old;
			cq->prod = cons + n;
			spin_unlock_irqrestore(&cq->lock, flags);
			mrc_ring_free(&nr);
			return err;
		}
	}
	mrc_ring_free(&old);
	return 0;
}

/**
 * mrc_cq_post() - add one completion.
 * @cq: the CQ.
 * @cqe: the completion.
 * @solicited: the completion is for a solicited event.
 *
 * Return: 0, or -ENOSPC when the CQ overflowed (an async CQ error is
 * raised and the CQE is lost, as on hardware).
 */
int mrc_cq_post(struct mrc_cq *cq, const struct metaroce_cqe *cqe,
		bool solicited)
{
	struct ib_cq *ibcq = &cq->ibcq;
	unsigned long flags;
	bool fire = false;
	u32 used;

	spin_lock_irqsave(&cq->lock, flags);
	if (!cq->ring.buf) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	used = cq->prod - mrc_cq_cons(cq);
	if (used >= cq->ring.depth) {
		bool first = !cq->overflow;

		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (first && ibcq->event_handler) {
			struct ib_event ev = {
				.device = ibcq->device,
				.element.cq = ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			ibcq->event_handler(&ev, ibcq->cq_context);
		}
		return -ENOSPC;
	}
	memcpy(mrc_ring_slot(&cq->ring, cq->prod), cqe, sizeof(*cqe));
	cq->prod++;
	mrc_ring_store(&cq->ring.hdr->prod, cq->prod);
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED && (solicited || cqe->status))) {
		cq->notify = 0;
		fire = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (fire && ibcq->comp_handler) {
		if (cq->is_user)
			ibcq->comp_handler(ibcq, ibcq->cq_context);
		else
			queue_work(mrc_wq, &cq->comp_work);
	}
	return 0;
}

static void mrc_cqe_to_wc(const struct metaroce_cqe *c, struct ib_wc *wc,
			  struct ib_cq *ibcq)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = c->wr_id;
	wc->status = c->status;
	wc->byte_len = c->byte_len;
	wc->ex.imm_data = (__force __be32)c->imm_data;
	wc->src_qp = c->src_qp;
	wc->wc_flags = c->wc_flags;
	wc->pkey_index = c->pkey_index;
	wc->network_hdr_type = c->network_hdr_type;
	wc->sl = c->sl;
	wc->port_num = 1;
	switch (c->opcode) {
	case METAROCE_WC_SEND:
		wc->opcode = IB_WC_SEND;
		break;
	case METAROCE_WC_RDMA_WRITE:
		wc->opcode = IB_WC_RDMA_WRITE;
		break;
	case METAROCE_WC_RDMA_READ:
		wc->opcode = IB_WC_RDMA_READ;
		break;
	case METAROCE_WC_COMP_SWAP:
		wc->opcode = IB_WC_COMP_SWAP;
		break;
	case METAROCE_WC_FETCH_ADD:
		wc->opcode = IB_WC_FETCH_ADD;
		break;
	case METAROCE_WC_RECV_RDMA_WITH_IMM:
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		break;
	case MRC_WC_LOCAL_INV:
		wc->opcode = IB_WC_LOCAL_INV;
		break;
	case MRC_WC_REG_MR:
		wc->opcode = IB_WC_REG_MR;
		break;
	default:
		wc->opcode = IB_WC_RECV;
		break;
	}
	/* kernel consumers get the ib_qp pointer */
	wc->qp = NULL;
}

/* kernel CQs only: user CQs are polled by the provider */
int mrc_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct mrc_cq *cq = to_mcq(ibcq);
	struct mrc_dev *mdev = to_mdev(ibcq->device);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < n && cq->kcons != cq->prod; i++) {
		const struct metaroce_cqe *c = mrc_ring_slot(&cq->ring,
							     cq->kcons);
		struct mrc_qp_handle *h;

		mrc_cqe_to_wc(c, &wc[i], ibcq);
		h = xa_load(&mdev->qpn_xa, c->qp_num);
		wc[i].qp = h ? &h->qp->ibqp : NULL;
		cq->kcons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

int mrc_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct mrc_cq *cq = to_mcq(ibcq);
	unsigned long irqf;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqf);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    cq->prod != mrc_cq_cons(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqf);
	return ret;
}

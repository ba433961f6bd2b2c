// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: memory regions, key lookup and data copies into and out of
 * registered memory.
 */
#include <linux/highmem.h>
#include <linux/sizes.h>
#include <linux/vmalloc.h>

#include "mrc.h"

u32 mrc_access_to_mrc(int ib_access)
{
	u32 a = 0;

	if (ib_access & IB_ACCESS_LOCAL_WRITE)
		a |= MRC_ACC_LOCAL_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_WRITE)
		a |= MRC_ACC_REMOTE_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_READ)
		a |= MRC_ACC_REMOTE_READ;
	if (ib_access & IB_ACCESS_REMOTE_ATOMIC)
		a |= MRC_ACC_REMOTE_ATOMIC;
	return a;
}

static struct mrc_mr *mrc_mr_new(struct ib_pd *ibpd, int access)
{
	struct mrc_dev *mdev = to_mdev(ibpd->device);
	struct mrc_mr *mr;

	if (atomic_inc_return(&mdev->n_mr) > MRC_MAX_MR) {
		atomic_dec(&mdev->n_mr);
		return ERR_PTR(-ENOMEM);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		atomic_dec(&mdev->n_mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->mdev = mdev;
	mr->pd = to_mpd(ibpd);
	mr->region.access = mrc_access_to_mrc(access);
	mr->valid = true;
	mr->page_shift = PAGE_SHIFT;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->ref, 1);
	init_completion(&mr->done);
	return mr;
}

/*
 * Publish the MR under a fresh key, (index << 8) | key.  A key is what a
 * peer needs to reach the MR, so both parts are random: the first free
 * index at or after a random one, and a random 8-bit key.  Lookup stays
 * one xa_load() of the index; the index is never 0, nor is the key.
 */
static int mrc_mr_publish(struct mrc_mr *mr)
{
	struct mrc_dev *mdev = mr->mdev;
	u32 rnd = get_random_u32();
	u32 next = rnd & MRC_MR_IDX_MAX;
	u32 idx, key;
	int err;

	err = xa_alloc_cyclic(&mdev->mr_xa, &idx, NULL,
			      XA_LIMIT(1, MRC_MR_IDX_MAX), &next,
			      GFP_KERNEL_ACCOUNT);
	if (err < 0)
		return err;
	key = (idx << 8) | (rnd >> 24);
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	mr->key = key;
	xa_store(&mdev->mr_xa, idx, mr, GFP_KERNEL_ACCOUNT);
	return 0;
}

static void mrc_mr_release(struct mrc_mr *mr)
{
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kfree(mr->frwr.pl);
	kfree(mr->frwr.next);
	atomic_dec(&mr->mdev->n_mr);
	/* mrc_mr_get() may have loaded the pointer just before xa_erase */
	kfree_rcu(mr, rcu);
}

struct ib_mr *mrc_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct mrc_mr *mr;
	int err;

	/*
	 * It spans all kernel memory: a remote right would hand the peer
	 * every kernel address.  Refusing makes the core refuse
	 * IB_PD_UNSAFE_GLOBAL_RKEY as well.
	 */
	if (access & (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
		      IB_ACCESS_REMOTE_ATOMIC))
		return ERR_PTR(-EOPNOTSUPP);
	mr = mrc_mr_new(ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = MRC_MR_DMA;
	mr->region.iova = 0;
	mr->region.length = U64_MAX;
	err = mrc_mr_publish(mr);
	if (err) {
		mrc_mr_release(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *mrc_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct mrc_mr *mr;
	struct sg_page_iter it;
	unsigned long i = 0;
	int err;

	if (access & ~IB_ACCESS_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (!length || length > MRC_MAX_MR_SIZE || iova + length < iova)
		return ERR_PTR(-EINVAL);
	mr = mrc_mr_new(ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = MRC_MR_USER;
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		mr->umem = NULL;
		goto err;
	}
	mr->page_off = start & ~PAGE_MASK;
	mr->npages = ib_umem_num_pages(mr->umem);
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err;
	}
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &it, 0) {
		if (i >= mr->npages)
			break;
		mr->pages[i++] = sg_page_iter_page(&it);
	}
	if (i != mr->npages) {
		err = -EFAULT;
		goto err;
	}
	mr->region.iova = iova;
	mr->region.length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->mw_bind = !!(access & IB_ACCESS_MW_BIND);
	err = mrc_mr_publish(mr);
	if (err)
		goto err;
	return &mr->ibmr;

err:
	mrc_mr_release(mr);
	return ERR_PTR(err);
}

int mrc_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct mrc_mr *mr = to_mmr(ibmr);
	struct mrc_dev *mdev = mr->mdev;
	unsigned long flags;

	/* a window bound to it holds a reference: unbind them first */
	spin_lock_irqsave(&mdev->mw_lock, flags);
	if (mr->mw_binds) {
		spin_unlock_irqrestore(&mdev->mw_lock, flags);
		return -EBUSY;
	}
	mr->dead = true;
	spin_unlock_irqrestore(&mdev->mw_lock, flags);
	xa_erase(&mr->mdev->mr_xa, ibmr->lkey >> 8);
	/* wait for packets that are copying into or out of it */
	mrc_mr_put(mr);
	wait_for_completion(&mr->done);
	mrc_mr_release(mr);
	return 0;
}

/* the MR at @key's index, referenced, whatever the rest of @key */
static struct mrc_mr *mrc_mr_get_idx(struct mrc_dev *mdev, u32 key)
{
	struct mrc_mr *mr;

	rcu_read_lock();
	mr = xa_load(&mdev->mr_xa, key >> 8);
	if (mr && !refcount_inc_not_zero(&mr->ref))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * mrc_mr_get() - look up a key and take a reference.
 * @mdev: device.
 * @key: lkey or rkey.
 *
 * Return: the MR, or NULL if @key names no live MR.
 */
struct mrc_mr *mrc_mr_get(struct mrc_dev *mdev, u32 key)
{
	struct mrc_mr *mr = mrc_mr_get_idx(mdev, key);

	/*
	 * The whole key must match, not only its index: a key whose low
	 * byte a ULP changed since (ib_update_fast_reg_key()) is stale.
	 * Read only while the reference keeps the MR alive; an FRWR MR's
	 * key is checked again under its lock (mrc_mr_access()).
	 */
	if (mr && READ_ONCE(mr->key) != key) {
		mrc_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

void mrc_mr_put(struct mrc_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->done);
}

/**
 * mrc_alloc_mr() - allocate a fast-registration MR (IB_MR_TYPE_MEM_REG).
 * @ibpd: its PD.
 * @type: the MR type; only IB_MR_TYPE_MEM_REG is supported.
 * @max_num_sg: pages the MR can map, at most MRC_MAX_FRWR_PAGES.
 *
 * The MR starts invalid: no key reaches it until an IB_WR_REG_MR binds the
 * pages mrc_map_mr_sg() mapped.
 *
 * Return: the MR; ERR_PTR(-EOPNOTSUPP) for another type, -EINVAL for a
 * page count out of range, -ENOMEM.
 */
struct ib_mr *mrc_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg)
{
	struct mrc_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG) {
		ibdev_dbg(ibpd->device, "alloc_mr: type %d unsupported\n",
			  type);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!max_num_sg || max_num_sg > MRC_MAX_FRWR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = mrc_mr_new(ibpd, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->type = MRC_MR_FRWR;
	mr->valid = false;
	mr->frwr.max = max_num_sg;
	mr->frwr.pl = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL_ACCOUNT);
	mr->frwr.next = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL_ACCOUNT);
	err = -ENOMEM;
	if (mr->frwr.pl && mr->frwr.next)
		err = mrc_mr_publish(mr);
	if (err) {
		mrc_mr_release(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int mrc_frwr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct mrc_frwr *f = &to_mmr(ibmr)->frwr;

	if (f->nnext >= f->max)
		return -ENOMEM;
	f->next[f->nnext++] = addr;
	return 0;
}

/**
 * mrc_map_mr_sg() - map a DMA-mapped scatter list into an FRWR MR.
 * @ibmr: the MR.
 * @sg: the list; its DMA addresses are kernel virtual addresses (the
 *	device has no DMA device, ib_uses_virt_dma()).
 * @sg_nents: entries.
 * @sg_offset: offset into the first entry, or NULL.
 *
 * The pages go to a list of their own: a registration still in use keeps
 * its pages until IB_WR_REG_MR binds the new ones.
 *
 * Return: the number of entries mapped (ib_sg_to_pages()), or -EINVAL.
 */
int mrc_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset)
{
	struct mrc_mr *mr = to_mmr(ibmr);
	unsigned long flags;
	int n;

	if (mr->type != MRC_MR_FRWR || !is_power_of_2(ibmr->page_size) ||
	    ibmr->page_size < SZ_4K)
		return -EINVAL;
	spin_lock_irqsave(&mr->lock, flags);
	mr->frwr.nnext = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, mrc_frwr_set_page);
	mr->frwr.next_shift = ilog2(ibmr->page_size);
	mr->frwr.next_off = ibmr->iova & (ibmr->page_size - 1);
	spin_unlock_irqrestore(&mr->lock, flags);
	return n;
}

/* REG_MR (locked): bind the mapped list, if any, with the MR's fields now */
static int mrc_frwr_bind(struct mrc_mr *mr, u32 key, int access)
{
	struct mrc_frwr *f = &mr->frwr;
	u64 room;

	if (mr->valid)
		return -EBUSY;	/* invalidate first, as IBTA requires */
	if (f->nnext) {
		swap(f->pl, f->next);
		f->npl = f->nnext;
		f->nnext = 0;
		mr->page_off = f->next_off;
		mr->page_shift = f->next_shift;
	}
	room = ((u64)f->npl << mr->page_shift) - mr->page_off;
	if (!f->npl || !mr->ibmr.length || mr->ibmr.length > room)
		return -EINVAL;
	mr->region.iova = mr->ibmr.iova;
	mr->region.length = mr->ibmr.length;
	mr->region.access = mrc_access_to_mrc(access);
	WRITE_ONCE(mr->key, key);
	mr->valid = true;
	return 0;
}

/**
 * mrc_mr_reg() - execute an IB_WR_REG_MR work request.
 * @mdev: device.
 * @pd: the posting QP's PD.
 * @cookie: the work request's ib_mr pointer, only compared.
 * @key: the new key; its index bits must be the MR's.
 * @access: IB_ACCESS_* the registration grants.
 *
 * Binds the page list the last mrc_map_mr_sg() mapped (else the one bound
 * before), with the MR's iova and length as they are now; the MR becomes
 * valid under @key.
 *
 * Return: 0; -EINVAL if @key names no FRWR MR of @pd that is @cookie, or
 * nothing is mapped; -EBUSY if the MR is still valid.
 */
int mrc_mr_reg(struct mrc_dev *mdev, struct mrc_pd *pd, u64 cookie, u32 key,
	       int access)
{
	struct mrc_mr *mr = mrc_mr_get_idx(mdev, key);
	unsigned long flags;
	int err;

	if (!mr)
		return -EINVAL;
	if (mr->type != MRC_MR_FRWR || mr->pd != pd ||
	    (uintptr_t)&mr->ibmr != cookie || (access & ~IB_ACCESS_SUPPORTED)) {
		mrc_mr_put(mr);
		return -EINVAL;
	}
	spin_lock_irqsave(&mr->lock, flags);
	err = mrc_frwr_bind(mr, key, access);
	spin_unlock_irqrestore(&mr->lock, flags);
	mrc_mr_put(mr);
	return err;
}

/* drop a window's binding (@win->lock held) */
static void mrc_mw_unbind(struct mrc_mr *win)
{
	struct mrc_dev *mdev = win->mdev;
	struct mrc_mr *mr = win->mw_mr;

	if (win->mw_qpn)
		atomic_dec(&win->mdev->mw2_bound);
	win->valid = false;
	win->mw_qpn = 0;
	if (!mr)
		return;
	win->mw_mr = NULL;
	win->pages = NULL;
	win->npages = 0;
	spin_lock(&mdev->mw_lock);
	mr->mw_binds--;
	spin_unlock(&mdev->mw_lock);
	mrc_mr_put(mr);
}

/**
 * mrc_mr_invalidate() - invalidate an FRWR MR or a type 2 memory window
 * (IB_WR_LOCAL_INV, or the R_Key of a received SEND_WITH_INV).
 * @mdev: device.
 * @pd: the PD of the QP that invalidates.
 * @key: the key, which must be the MR's or window's current one.
 * @qpn: the QP that invalidates: a window only through the QP it was
 *	bound through.
 *
 * On return no access through the key is in progress, and none starts.
 * Invalidating an MR already invalid under the same key succeeds.
 *
 * Return: 0, or -EINVAL if @key names no FRWR MR or type 2 window of @pd
 * (other MRs are never invalidated), or a window of another QP.
 */
int mrc_mr_invalidate(struct mrc_dev *mdev, struct mrc_pd *pd, u32 key,
		      u32 qpn)
{
	struct mrc_mr *mr = mrc_mr_get(mdev, key);
	unsigned long flags;
	bool mw;
	int err = 0;

	if (!mr)
		return -EINVAL;
	mw = mr->type == MRC_MR_MW && mr->mw_type == IB_MW_TYPE_2;
	if ((mr->type != MRC_MR_FRWR && !mw) || mr->pd != pd) {
		mrc_mr_put(mr);
		return -EINVAL;
	}
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->key != key)
		err = -EINVAL;
	else if (!mw)
		mr->valid = false;
	else if (mr->valid && mr->mw_qpn != qpn)
		err = -EINVAL;
	else
		mrc_mw_unbind(mr);
	spin_unlock_irqrestore(&mr->lock, flags);
	mrc_mr_put(mr);
	return err;
}

/* IB_ACCESS_* a bind may name (a window grants only the remote ones) */
#define MRC_MW_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)

/*
 * The MR a window is bound to, referenced and counted: a user MR of @pd
 * registered with IB_ACCESS_MW_BIND that holds the whole range and the
 * local write right that remote writes and atomics need.
 */
static struct mrc_mr *mrc_mw_target(struct mrc_dev *mdev, struct mrc_pd *pd,
				    u32 lkey, u64 addr, u64 len, int access)
{
	struct mrc_mr *mr = mrc_mr_get(mdev, lkey);
	unsigned long flags;
	bool ok;

	if (!mr)
		return NULL;
	ok = mr->type == MRC_MR_USER && mr->pd == pd && mr->mw_bind &&
	     addr >= mr->region.iova && addr + len >= addr &&
	     addr + len <= mr->region.iova + mr->region.length &&
	     (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	      (mr->region.access & MRC_ACC_LOCAL_WRITE));
	if (ok) {
		spin_lock_irqsave(&mdev->mw_lock, flags);
		ok = !mr->dead;
		if (ok)
			mr->mw_binds++;
		spin_unlock_irqrestore(&mdev->mw_lock, flags);
	}
	if (!ok) {
		mrc_mr_put(mr);
		return NULL;
	}
	return mr;
}

/* the window @win shows [@addr, @addr + @len) of @mr (@win->lock held) */
static void mrc_mw_set(struct mrc_mr *win, struct mrc_mr *mr, u64 addr,
		       u64 len, int access, u32 key, u32 qpn)
{
	u64 off = mr->page_off + (addr - mr->region.iova);

	win->mw_mr = mr;
	win->pages = mr->pages + (off >> PAGE_SHIFT);
	win->npages = mr->npages - (off >> PAGE_SHIFT);
	win->page_off = off & ~PAGE_MASK;
	win->page_shift = PAGE_SHIFT;
	win->region.iova = addr;
	win->region.length = len;
	win->region.access = mrc_access_to_mrc(access) & ~MRC_ACC_LOCAL_WRITE;
	win->mw_qpn = win->mw_type == IB_MW_TYPE_2 ? qpn : 0;
	if (win->mw_qpn)
		atomic_inc(&win->mdev->mw2_bound);
	WRITE_ONCE(win->key, key);
	win->valid = true;
}

/**
 * mrc_mw_bind() - execute a BIND_MW work request.
 * @mdev: device.
 * @pd: the posting QP's PD.
 * @qpn: the posting QP; a type 2 window answers only through it.
 * @w: the request: @w->rkey the window's new key (its index bits name
 *	the window), @w->imm_data the MR's lkey, @w->remote_addr and
 *	@w->compare_add the range, @w->swap the IB_ACCESS_* rights.
 *
 * A type 1 window is rebound (a zero length unbinds it); a type 2 window
 * must be unbound (invalidated) first.  Zero-based windows are refused.
 *
 * Return: 0, or -EINVAL for any bad part of the request.
 */
int mrc_mw_bind(struct mrc_dev *mdev, struct mrc_pd *pd, u32 qpn,
		const struct metaroce_send_wqe *w)
{
	struct mrc_mr *win = mrc_mr_get_idx(mdev, w->rkey), *mr = NULL;
	u64 len = w->compare_add;
	unsigned long flags;
	int err = 0;

	if (!win)
		return -EINVAL;
	if (win->type != MRC_MR_MW || win->pd != pd ||
	    (w->swap & ~(u64)MRC_MW_ACCESS) ||
	    (!len && win->mw_type == IB_MW_TYPE_2)) {
		err = -EINVAL;
		goto out;
	}
	if (len) {
		mr = mrc_mw_target(mdev, pd, w->imm_data, w->remote_addr, len,
				   (int)w->swap);
		if (!mr) {
			err = -EINVAL;
			goto out;
		}
	}
	spin_lock_irqsave(&win->lock, flags);
	/*
	 * A new key for every binding: an access that started under the
	 * old one fails its key check (under this lock) instead of reaching
	 * the new range, or a type 2 window's new QP.
	 */
	if (win->dead || w->rkey == win->key ||
	    (win->mw_type == IB_MW_TYPE_2 && win->valid)) {
		err = -EINVAL;	/* freed, same key, or not invalidated */
	} else {
		mrc_mw_unbind(win);
		if (mr)
			mrc_mw_set(win, mr, w->remote_addr, len, (int)w->swap,
				   w->rkey, qpn);
		else
			WRITE_ONCE(win->key, w->rkey);
		mr = NULL;
	}
	spin_unlock_irqrestore(&win->lock, flags);
	if (mr) {
		spin_lock_irqsave(&mdev->mw_lock, flags);
		mr->mw_binds--;
		spin_unlock_irqrestore(&mdev->mw_lock, flags);
		mrc_mr_put(mr);
	}
out:
	mrc_mr_put(win);
	return err;
}

/**
 * mrc_mw_qp_gone() - unbind the type 2 windows bound through a QP.
 * @mdev: device.
 * @qpn: the QP, being destroyed: no invalidation can come through it any
 *	more, and its number may be reused.
 */
void mrc_mw_qp_gone(struct mrc_dev *mdev, u32 qpn)
{
	struct mrc_mr *win;
	unsigned long idx, flags;

	if (!atomic_read(&mdev->mw2_bound))
		return;
	/* entries are freed after a grace period (kfree_rcu) */
	rcu_read_lock();
	xa_for_each(&mdev->mr_xa, idx, win) {
		if (win->type != MRC_MR_MW || READ_ONCE(win->mw_qpn) != qpn ||
		    !refcount_inc_not_zero(&win->ref))
			continue;
		spin_lock_irqsave(&win->lock, flags);
		if (win->mw_qpn == qpn)
			mrc_mw_unbind(win);
		spin_unlock_irqrestore(&win->lock, flags);
		mrc_mr_put(win);
	}
	rcu_read_unlock();
}

/**
 * mrc_alloc_mw() - a memory window of type 1 or 2, unbound.
 * @ibmw: the window (type and PD set by the core).
 * @udata: user data (unused).
 *
 * Return: 0; -EINVAL for another type; -ENOMEM.
 */
int mrc_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct mrc_mw *mw = to_mmw(ibmw);
	struct mrc_mr *win;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	win = mrc_mr_new(ibmw->pd, 0);
	if (IS_ERR(win))
		return PTR_ERR(win);
	win->type = MRC_MR_MW;
	win->mw_type = ibmw->type;
	win->valid = false;
	err = mrc_mr_publish(win);
	if (err) {
		mrc_mr_release(win);
		return err;
	}
	ibmw->rkey = win->key;
	mw->win = win;
	return 0;
}

/**
 * mrc_dealloc_mw() - free a window; its binding goes first.
 * @ibmw: the window.
 *
 * Return: 0.
 */
int mrc_dealloc_mw(struct ib_mw *ibmw)
{
	struct mrc_mr *win = to_mmw(ibmw)->win;
	unsigned long flags;

	/* a bind already past its lookup must not bind it again */
	spin_lock_irqsave(&win->lock, flags);
	win->dead = true;
	mrc_mw_unbind(win);
	spin_unlock_irqrestore(&win->lock, flags);
	xa_erase(&win->mdev->mr_xa, win->key >> 8);
	/* wait for packets that are copying through it */
	mrc_mr_put(win);
	wait_for_completion(&win->done);
	mrc_mr_release(win);
	return 0;
}

/* may @key reach [@va, @va + @len) of @mr with @need (FRWR: locked)? */
static int mrc_mr_check(struct mrc_mr *mr, u32 key, u64 va, u64 len,
			u32 need)
{
	if (!mr->valid || mr->key != key)
		return -EACCES;
	return mrc_region_check(&mr->region, va, len, need);
}

/**
 * mrc_mr_access() - check a key and range of an MR, then use them.
 * @mr: the MR, referenced.
 * @key: the lkey or rkey the access came with.
 * @va: first byte.
 * @len: bytes.
 * @need: MRC_ACC_* rights wanted.
 * @fn: what to do with the range once checked, or NULL; its return value
 *	is returned.
 * @arg: for @fn.
 *
 * An FRWR MR stays locked from the check to the end of @fn, so an
 * invalidation or REG_MR happens before or after the whole access; other
 * MRs never change while referenced.  @fn must not sleep.
 *
 * Return: 0, -EACCES (key stale or invalid, right missing), -ERANGE, or
 * what @fn returned.
 */
int mrc_mr_access(struct mrc_mr *mr, u32 key, u64 va, u64 len, u32 need,
		  int (*fn)(struct mrc_mr *mr, void *arg), void *arg)
{
	unsigned long flags;
	int err;

	if (mr->type != MRC_MR_FRWR && mr->type != MRC_MR_MW) {
		err = mrc_mr_check(mr, key, va, len, need);
		return err || !fn ? err : fn(mr, arg);
	}
	spin_lock_irqsave(&mr->lock, flags);
	err = mrc_mr_check(mr, key, va, len, need);
	if (!err && fn)
		err = fn(mr, arg);
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/**
 * struct mrc_buf - the other end of a copy into or out of registered
 * memory.
 * @p: a kernel buffer, when @skb is NULL; advanced as bytes move.
 * @skb: a received packet, read from @off on (copies into MRs only).
 * @off: offset in @skb, advanced likewise.
 */
struct mrc_buf {
	void *p;
	const struct sk_buff *skb;
	u32 off;
};

/* move @n bytes between @b and @k, and advance @b; 0 or -EFAULT */
static int mrc_buf_xfer(struct mrc_buf *b, void *k, u32 n, bool to_mr)
{
	if (b->skb) {
		/* parsing checked the range; short packets fail, not overrun */
		if (!to_mr || skb_copy_bits(b->skb, b->off, k, n))
			return -EFAULT;
		b->off += n;
		return 0;
	}
	if (to_mr)
		memcpy(k, b->p, n);
	else
		memcpy(b->p, k, n);
	b->p += n;
	return 0;
}

/* move @n bytes at offset @in of page @pg of @mr (FRWR: locked) */
static int mrc_mr_page_xfer(struct mrc_mr *mr, u64 pg, u32 in,
			    struct mrc_buf *b, u32 n, bool to_mr)
{
	void *k;
	int err;

	if (mr->type == MRC_MR_FRWR) {
		if (pg >= mr->frwr.npl)
			return -ERANGE;
		/* kernel virtual addresses: the device does no DMA mapping */
		k = (void *)(uintptr_t)(mr->frwr.pl[pg] + in);
		return mrc_buf_xfer(b, k, n, to_mr);
	}
	if (pg >= mr->npages)
		return -ERANGE;
	k = kmap_local_page(mr->pages[pg]);
	err = mrc_buf_xfer(b, k + in, n, to_mr);
	kunmap_local(k);
	return err;
}

/*
 * Copy between @b and [@va, @va + @len) of @mr.  The caller checked the
 * range against mr->region (FRWR: under the lock it still holds).
 */
static int mrc_mr_xfer(struct mrc_mr *mr, u64 va, struct mrc_buf *b, u32 len,
		       bool to_mr)
{
	int err;

	if (!len)
		return 0;
	if (b->skb && !to_mr)
		return -EINVAL;	/* a received packet is only read */
	if (mr->type == MRC_MR_DMA)
		return mrc_buf_xfer(b, (void *)(uintptr_t)va, len, to_mr);

	while (len) {
		u64 pg;
		u32 in, n;

		n = mrc_region_chunk(&mr->region, mr->page_off, mr->page_shift,
				     va, len, &pg, &in);
		err = mrc_mr_page_xfer(mr, pg, in, b, n, to_mr);
		if (err)
			return err;
		va += n;
		len -= n;
	}
	return 0;
}

int mrc_mr_copy(struct mrc_mr *mr, u64 va, void *buf, u32 len, bool to_mr)
{
	struct mrc_buf b = { .p = buf };

	return mrc_mr_xfer(mr, va, &b, len, to_mr);
}

/**
 * mrc_mr_copy_skb() - copy part of a received packet into an MR.
 * @mr: the MR; [@va, @va + @len) was checked against its region.
 * @va: where the bytes go.
 * @skb: the packet, linear or not.
 * @off: offset of the first byte in @skb; @off + @len <= @skb->len.
 * @len: bytes to copy.
 *
 * Reading the packet's fragments in place spares the copy that
 * linearizing a large packet would cost.
 *
 * Return: 0, -ERANGE for a range outside the MR's pages, -EFAULT if the
 * packet is shorter than @off + @len.
 */
int mrc_mr_copy_skb(struct mrc_mr *mr, u64 va, const struct sk_buff *skb,
		    u32 off, u32 len)
{
	struct mrc_buf b = { .skb = skb, .off = off };

	return mrc_mr_xfer(mr, va, &b, len, true);
}

/*
 * Attach [@va, @va + @len) of @mr to @skb as page fragments, from fragment
 * *@nfrag on, marked shared (see mrc_mr_attach_skb()).  Return: 0;
 * -EMSGSIZE if the MR has no pages (DMA MR) or the range needs more
 * fragments than an skb takes: copy instead.
 */
static int mrc_mr_attach(struct mrc_mr *mr, u64 va, struct sk_buff *skb,
			 u32 len, u32 *nfrag)
{
	if (mr->type != MRC_MR_USER)
		return -EMSGSIZE;
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	while (len) {
		struct page *page;
		u64 pg;
		u32 in, n;

		n = mrc_region_chunk(&mr->region, mr->page_off, PAGE_SHIFT, va,
				     len, &pg, &in);
		if (pg >= mr->npages)
			return -ERANGE;
		if (*nfrag >= MAX_SKB_FRAGS)
			return -EMSGSIZE;
		page = mr->pages[pg];
		/* the packet may outlive the MR's pinning of the page */
		get_page(page);
		skb_fill_page_desc(skb, (*nfrag)++, page, in, n);
		skb->len += n;
		skb->data_len += n;
		skb->truesize += n;
		va += n;
		len -= n;
	}
	return 0;
}

/**
 * mrc_mr_attach_skb() - append a range of an MR to a packet without
 * copying it.
 * @mr: the MR; [@va, @va + @len) was checked against its region.
 * @va: first byte.
 * @skb: a packet built so far (its header linear, no fragments yet).
 * @len: bytes.
 *
 * The packet takes a reference on each page, so it may outlive the MR.
 * Its fragments are marked shared: the application may write the pages
 * while the packet is queued, and whoever must read stable bytes (a
 * software checksum) copies them first.
 *
 * Return: 0; -EMSGSIZE (copy instead: a DMA MR, or too many fragments);
 * -ERANGE.  On error @skb holds whatever was attached; free it.
 */
int mrc_mr_attach_skb(struct mrc_mr *mr, u64 va, struct sk_buff *skb,
		      u32 len)
{
	u32 nfrag = skb_shinfo(skb)->nr_frags;

	return mrc_mr_attach(mr, va, skb, len, &nfrag);
}

/*
 * 8-byte atomic at @va (8-byte aligned, checked by the caller; FRWR: under
 * mrc_mr_access())
 */
int mrc_mr_atomic(struct mrc_mr *mr, u64 va, bool cas, u64 swap_add,
		  u64 compare, u64 *orig)
{
	u64 *p;
	void *k = NULL;

	if (mr->type == MRC_MR_DMA) {
		p = (u64 *)(uintptr_t)va;
	} else {
		u64 pg;
		u32 in;

		/* an iova aligned unlike the user address can split the word */
		if (mrc_region_chunk(&mr->region, mr->page_off, mr->page_shift,
				     va, 8, &pg, &in) < 8 || (in & 7))
			return -ERANGE;
		if (mr->type == MRC_MR_FRWR) {
			if (pg >= mr->frwr.npl)
				return -ERANGE;
			p = (u64 *)(uintptr_t)(mr->frwr.pl[pg] + in);
		} else {
			if (pg >= mr->npages)
				return -ERANGE;
			k = kmap_local_page(mr->pages[pg]);
			p = k + in;
		}
	}
	if (cas)
		*orig = cmpxchg64(p, compare, swap_add);
	else
		*orig = atomic64_fetch_add(swap_add, (atomic64_t *)p);
	if (k)
		kunmap_local(k);
	return 0;
}

/* one range of a scatter list walk, for mrc_mr_access() */
struct mrc_sge_move {
	u64 va;
	u32 len;
	bool to_mr;
	struct mrc_buf *b;	/* copy to or from it, or attach to @skb */
	struct sk_buff *skb;
	u32 *nfrag;
};

static int mrc_sge_move(struct mrc_mr *mr, void *arg)
{
	struct mrc_sge_move *m = arg;

	if (m->b)
		return mrc_mr_xfer(mr, m->va, m->b, m->len, m->to_mr);
	return mrc_mr_attach(mr, m->va, m->skb, m->len, m->nfrag);
}

/*
 * Resolve the bytes [@offset, @offset + @len) of a local scatter list to
 * ranges of MRs, each checked for @pd and @need, and move each range: a
 * copy to or from @b, or (@b NULL) a page attach to @skb.
 */
static int mrc_sge_walk(struct mrc_dev *mdev, struct mrc_pd *pd,
			const struct metaroce_sge *sge, u32 nsge, u32 offset,
			struct mrc_buf *b, struct sk_buff *skb, u32 len,
			bool to_mr, u32 need)
{
	u32 i, nfrag = skb ? skb_shinfo(skb)->nr_frags : 0;
	struct mrc_sge_move m = {
		.to_mr = to_mr, .b = b, .skb = skb, .nfrag = &nfrag,
	};
	int err;

	for (i = 0; i < nsge && len; i++) {
		u32 l = sge[i].length;
		struct mrc_mr *mr;

		if (offset >= l) {
			offset -= l;
			continue;
		}
		m.len = min(len, l - offset);
		m.va = sge[i].addr + offset;
		mr = mrc_mr_get(mdev, sge[i].lkey);
		if (!mr)
			return -EACCES;
		/* a window's key is an R_Key only */
		if (mr->pd != pd || mr->type == MRC_MR_MW) {
			mrc_mr_put(mr);
			return -EACCES;
		}
		err = mrc_mr_access(mr, sge[i].lkey, m.va, m.len, need,
				    mrc_sge_move, &m);
		mrc_mr_put(mr);
		if (err)
			return err;
		len -= m.len;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

/**
 * mrc_sge_copy() - copy between @buf and a local scatter list.
 * @mdev: device.
 * @pd: PD every lkey must belong to.
 * @sge: scatter list (already copied out of userspace memory).
 * @nsge: entries.
 * @offset: bytes of the list to skip first.
 * @buf: kernel buffer.
 * @len: bytes to copy.
 * @to_mr: direction.
 * @need: MRC_ACC_* the MRs must grant (MRC_ACC_LOCAL_WRITE to write).
 *
 * Return: 0, -EINVAL if the list is too short, -EACCES for a bad lkey, PD
 * or access right, -ERANGE for a range outside its MR.
 */
int mrc_sge_copy(struct mrc_dev *mdev, struct mrc_pd *pd,
		 const struct metaroce_sge *sge, u32 nsge, u32 offset,
		 void *buf, u32 len, bool to_mr, u32 need)
{
	struct mrc_buf b = { .p = buf };

	return mrc_sge_walk(mdev, pd, sge, nsge, offset, &b, NULL, len, to_mr,
			    need);
}

/**
 * mrc_sge_copy_skb() - mrc_sge_copy() into the list, from a received
 * packet's bytes [@off, @off + @len), which may sit in page fragments.
 * @mdev: device.
 * @pd: PD every lkey must belong to.
 * @sge: scatter list.
 * @nsge: entries.
 * @offset: bytes of the list to skip first.
 * @skb: the packet; @off + @len <= @skb->len.
 * @off: offset of the first byte in @skb.
 * @len: bytes to copy.
 *
 * Return: as mrc_sge_copy(), with MRC_ACC_LOCAL_WRITE required.
 */
int mrc_sge_copy_skb(struct mrc_dev *mdev, struct mrc_pd *pd,
		     const struct metaroce_sge *sge, u32 nsge, u32 offset,
		     const struct sk_buff *skb, u32 off, u32 len)
{
	struct mrc_buf b = { .skb = skb, .off = off };

	return mrc_sge_walk(mdev, pd, sge, nsge, offset, &b, NULL, len, true,
			    MRC_ACC_LOCAL_WRITE);
}

/**
 * mrc_sge_attach_skb() - append bytes of a local scatter list to a packet
 * as page fragments, as mrc_mr_attach_skb() does for one MR.
 * @mdev: device.
 * @pd: PD every lkey must belong to.
 * @sge: scatter list.
 * @nsge: entries.
 * @offset: bytes of the list to skip first.
 * @skb: the packet built so far, no fragments yet.
 * @len: bytes.
 *
 * Return: as mrc_sge_copy(), or -EMSGSIZE where the bytes must be copied
 * (a DMA MR, more pieces than fragments).  On error @skb holds whatever
 * was attached; free it.
 */
int mrc_sge_attach_skb(struct mrc_dev *mdev, struct mrc_pd *pd,
		       const struct metaroce_sge *sge, u32 nsge, u32 offset,
		       struct sk_buff *skb, u32 len)
{
	return mrc_sge_walk(mdev, pd, sge, nsge, offset, NULL, skb, len,
			    false, 0);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: memory regions, key lookup and data copies into and out of
 * registered memory.
 */
#include <linux/highmem.h>
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
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&mdev->n_mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->mdev = mdev;
	mr->pd = to_mpd(ibpd);
	mr->region.access = mrc_access_to_mrc(access);
	refcount_set(&mr->ref, 1);
	init_completion(&mr->done);
	return mr;
}

/* publish the MR under a fresh key; keys are never 0 */
static int mrc_mr_publish(struct mrc_mr *mr)
{
	struct mrc_dev *mdev = mr->mdev;
	u32 idx, key;
	int err;

	err = xa_alloc_cyclic(&mdev->mr_xa, &idx, NULL,
			      XA_LIMIT(1, 0xffffff), &mdev->next_mr,
			      GFP_KERNEL);
	if (err < 0)
		return err;
	spin_lock(&mdev->key_lock);
	key = (idx << 8) | mdev->next_key++;
	spin_unlock(&mdev->key_lock);
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	xa_store(&mdev->mr_xa, idx, mr, GFP_KERNEL);
	return 0;
}

static void mrc_mr_release(struct mrc_mr *mr)
{
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	atomic_dec(&mr->mdev->n_mr);
	kfree(mr);
}

struct ib_mr *mrc_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct mrc_mr *mr = mrc_mr_new(ibpd, access);
	int err;

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
	mr->pages = kvcalloc(mr->npages, sizeof(*mr->pages), GFP_KERNEL);
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

	xa_erase(&mr->mdev->mr_xa, ibmr->lkey >> 8);
	/* wait for packets that are copying into or out of it */
	mrc_mr_put(mr);
	wait_for_completion(&mr->done);
	mrc_mr_release(mr);
	return 0;
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
	struct mrc_mr *mr;

	rcu_read_lock();
	mr = xa_load(&mdev->mr_xa, key >> 8);
	if (mr && (mr->ibmr.lkey != key || !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void mrc_mr_put(struct mrc_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->done);
}

/*
 * Copy between @buf and [@va, @va + @len) of @mr.  The caller checked the
 * range against mr->region.
 */
int mrc_mr_copy(struct mrc_mr *mr, u64 va, void *buf, u32 len, bool to_mr)
{
	if (!len)
		return 0;
	if (mr->type == MRC_MR_DMA) {
		void *p = (void *)(uintptr_t)va;

		if (to_mr)
			memcpy(p, buf, len);
		else
			memcpy(buf, p, len);
		return 0;
	}

	while (len) {
		u64 pg;
		u32 in, n;
		void *k;

		n = mrc_region_chunk(&mr->region, mr->page_off, PAGE_SHIFT, va,
				     len, &pg, &in);
		if (pg >= mr->npages)
			return -ERANGE;
		k = kmap_local_page(mr->pages[pg]);
		if (to_mr)
			memcpy(k + in, buf, n);
		else
			memcpy(buf, k + in, n);
		kunmap_local(k);
		buf += n;
		va += n;
		len -= n;
	}
	return 0;
}

/* 8-byte atomic at @va (8-byte aligned, checked by the caller) */
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
		if (mrc_region_chunk(&mr->region, mr->page_off, PAGE_SHIFT, va,
				     8, &pg, &in) < 8 || (in & 7) ||
		    pg >= mr->npages)
			return -ERANGE;
		k = kmap_local_page(mr->pages[pg]);
		p = k + in;
	}
	if (cas)
		*orig = cmpxchg64(p, compare, swap_add);
	else
		*orig = atomic64_fetch_add(swap_add, (atomic64_t *)p);
	if (k)
		kunmap_local(k);
	return 0;
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
	u32 i;
	int err;

	for (i = 0; i < nsge && len; i++) {
		u32 n, l = sge[i].length;
		struct mrc_mr *mr;

		if (offset >= l) {
			offset -= l;
			continue;
		}
		n = min(len, l - offset);
		mr = mrc_mr_get(mdev, sge[i].lkey);
		if (!mr)
			return -EACCES;
		if (mr->pd != pd) {
			mrc_mr_put(mr);
			return -EACCES;
		}
		err = mrc_region_check(&mr->region, sge[i].addr + offset, n,
				       need);
		if (!err)
			err = mrc_mr_copy(mr, sge[i].addr + offset, buf, n,
					  to_mr);
		mrc_mr_put(mr);
		if (err)
			return err;
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

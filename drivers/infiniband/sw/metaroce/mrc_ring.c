// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: shared rings and their mmap entries.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "mrc.h"

static struct mrc_mmap_entry *to_mentry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct mrc_mmap_entry, rdma_entry);
}

/**
 * mrc_ring_alloc() - allocate a ring of @depth slots of @stride bytes.
 * @mdev: device.
 * @r: ring to fill.
 * @depth: slots, a power of two.
 * @stride: bytes per slot.
 * @udata: user context of the owning object, or NULL for a kernel object.
 *
 * For a user object the ring gets an mmap entry; the buffer is then freed
 * by mrc_mmap_free() once the object and every mapping are gone.
 */
int mrc_ring_alloc(struct mrc_dev *mdev, struct mrc_ring *r, u32 depth,
		   u32 stride, struct ib_udata *udata)
{
	struct mrc_ucontext *uc;
	struct mrc_mmap_entry *e;
	size_t size;
	int err;

	if (!is_power_of_2(depth))
		return -EINVAL;
	size = PAGE_ALIGN(METAROCE_RING_HDR_SIZE + (size_t)depth * stride);
	/* vmalloc_user() cannot charge the caller's memcg; mrc_mmap() maps it */
	r->buf = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!r->buf)
		return -ENOMEM;
	r->hdr = r->buf;
	r->size = size;
	r->depth = depth;
	r->stride = stride;
	r->mmap_entry = NULL;
	uc = rdma_udata_to_drv_context(udata, struct mrc_ucontext, ibuc);
	if (!uc)
		return 0;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e) {
		err = -ENOMEM;
		goto err_buf;
	}
	e->buf = r->buf;
	e->size = size;
	err = rdma_user_mmap_entry_insert(&uc->ibuc, &e->rdma_entry, size);
	if (err) {
		kfree(e);
		goto err_buf;
	}
	r->mmap_entry = &e->rdma_entry;
	return 0;

err_buf:
	vfree(r->buf);
	r->buf = NULL;
	return err;
}

/*
 * Drop the object's hold on the ring.  Pages still mapped by a process keep
 * their own reference (vm_insert_page), so freeing here is safe.
 */
void mrc_ring_free(struct mrc_ring *r)
{
	if (!r->buf)
		return;
	if (r->mmap_entry)
		rdma_user_mmap_entry_remove(r->mmap_entry);
	else
		vfree(r->buf);
	r->buf = NULL;
	r->hdr = NULL;
	r->mmap_entry = NULL;
}

/**
 * mrc_ring_detach() - move a ring out of its object.
 * @r: the object's ring; left without a buffer (@r->hdr NULL).
 * @out: takes the buffer, for mrc_ring_free() outside the object's lock.
 *
 * Detach under the lock that readers of @r->hdr hold, then free unlocked:
 * freeing may vfree(), which must not run with interrupts off.
 */
void mrc_ring_detach(struct mrc_ring *r, struct mrc_ring *out)
{
	*out = *r;
	r->buf = NULL;
	r->hdr = NULL;
	r->mmap_entry = NULL;
}

u64 mrc_ring_mmap_offset(struct mrc_ring *r)
{
	return r->mmap_entry ? rdma_user_mmap_get_offset(r->mmap_entry) : 0;
}

/*
 * remap_vmalloc_range() without its VM_USERMAP check: the ring comes from
 * __vmalloc(), zeroed and whole pages.  vm_insert_page() takes a reference
 * on each page, so they outlive the ring for as long as they are mapped.
 */
static int mrc_mmap_pages(struct vm_area_struct *vma, void *buf)
{
	unsigned long addr, off = 0;
	int err;

	for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		err = vm_insert_page(vma, addr, vmalloc_to_page(buf + off));
		if (err)
			return err;
		off += PAGE_SIZE;
	}
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

int mrc_mmap(struct ib_ucontext *ctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *re;
	struct mrc_mmap_entry *e;
	unsigned long size = vma->vm_end - vma->vm_start;
	int err;

	re = rdma_user_mmap_entry_get(ctx, vma);
	if (!re)
		return -EINVAL;
	e = to_mentry(re);
	if (size > e->size) {
		err = -EINVAL;
		goto out;
	}
	err = mrc_mmap_pages(vma, e->buf);
out:
	rdma_user_mmap_entry_put(re);
	return err;
}

void mrc_mmap_free(struct rdma_user_mmap_entry *re)
{
	struct mrc_mmap_entry *e = to_mentry(re);

	vfree(e->buf);
	kfree(e);
}

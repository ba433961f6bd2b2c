/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metaroce: the kernel interfaces that differ between the kernels the
 * module builds for (6.1 to 6.12 so far).  Kbuild tells them apart by
 * their declarations in the kernel's headers, not by version numbers,
 * so that backports are followed.
 */
#ifndef MRC_COMPAT_H
#define MRC_COMPAT_H

/* 6.12 moved the unaligned accessors out of asm/ */
#ifdef MRC_HAVE_LINUX_UNALIGNED
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* 6.3 made vm_flags read-only outside these helpers */
#ifndef MRC_HAVE_VM_FLAGS_SET
#include <linux/mm.h>

static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

#endif /* MRC_COMPAT_H */

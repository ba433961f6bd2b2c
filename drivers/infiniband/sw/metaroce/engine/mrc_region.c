// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Placement checks: may a remote access touch [va, va + len) of a region?
 * Written with offsets from the region start so that no sum can wrap; a
 * range whose own end wraps past 2^64 is rejected even if the region
 * reaches the top of the address space.
 */
#include <metaroce/mrc_engine.h>

#include "mrc_engine_int.h"

int mrc_region_check(const struct mrc_region *r, u64 va, u64 len, u32 need)
{
	u64 off;

	if (!len)
		return 0;
	if ((r->access & need) != need)
		return -EACCES;
	if (va + len < va)
		return -ERANGE;
	if (va < r->iova)
		return -ERANGE;
	off = va - r->iova;
	if (off > r->length || len > r->length - off)
		return -ERANGE;
	return 0;
}

u32 mrc_region_chunk(const struct mrc_region *r, u32 page_off, u32 shift,
		     u64 va, u64 len, u64 *page, u32 *in_page)
{
	u64 off = va - r->iova + page_off;
	u64 room;

	*page = off >> shift;
	*in_page = (u32)(off & ((1ULL << shift) - 1));
	room = (1ULL << shift) - *in_page;
	return (u32)(len < room ? len : room);
}

#ifdef MRC_ENGINE_KUNIT
#include "mrc_region_test.c"
#endif

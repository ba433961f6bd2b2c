// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* KUnit suite for placement checks; included at the end of mrc_region.c. */
#include <kunit/test.h>

#define ACC_ALL	(MRC_ACC_LOCAL_WRITE | MRC_ACC_REMOTE_WRITE | \
		 MRC_ACC_REMOTE_READ | MRC_ACC_REMOTE_ATOMIC)

/* only the access bits matter, whatever key the region came from */
static void mrc_region_access(struct kunit *test)
{
	struct mrc_region r = { .iova = 0x1000, .length = 0x1000 };
	u32 grant, need;

	for (grant = 0; grant <= ACC_ALL; grant++) {
		r.access = grant;
		for (need = 0; need <= ACC_ALL; need++) {
			int want = (grant & need) == need ? 0 : -EACCES;

			KUNIT_EXPECT_EQ_MSG(test, mrc_region_check(&r, 0x1800, 8,
								   need),
					    want, "grant %#x need %#x", grant,
					    need);
		}
	}
	/* bits outside the known ones are not granted by accident */
	r.access = ACC_ALL;
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1800, 8, 0x100), -EACCES);
	/* access is checked before bounds */
	r.access = MRC_ACC_REMOTE_READ;
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0, 8, MRC_ACC_REMOTE_WRITE),
			-EACCES);
}

static void mrc_region_bounds(struct kunit *test)
{
	struct mrc_region r = {
		.iova = 0x1000, .length = 0x1000, .access = ACC_ALL,
	};
	const u32 w = MRC_ACC_REMOTE_WRITE;

	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 0x1000, w), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 1, w), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1fff, 1, w), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1fff, 2, w), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x0fff, 1, w), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x0fff, 2, w), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x2000, 1, w), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 0x1001, w), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0, 0x3000, w), -ERANGE);

	/* an empty region holds nothing */
	r.length = 0;
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 1, w), -ERANGE);
}

static void mrc_region_overflow(struct kunit *test)
{
	struct mrc_region r = {
		.iova = 0xffffffffffff0000ull, .length = 0x10000,
		.access = ACC_ALL,
	};
	const u32 rd = MRC_ACC_REMOTE_READ;

	/* a region up to the top of the address space */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0xffffffffffff0000ull,
					       0xffff, rd), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0xfffffffffffffff0ull,
					       0xf, rd), 0);
	/* va + len wrapping past 2^64 */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0xfffffffffffffff0ull,
					       0x10, rd), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0xffffffffffffff00ull,
					       0x200, rd), -ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0xffffffffffff0000ull,
					       ~0ull, rd), -ERANGE);
	/* a huge length from a small va, against a huge region */
	r.iova = 0x1000;
	r.length = 0xfffffffffffff000ull;
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x2000, ~0ull - 0x1000, rd),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x2000,
					       0xffffffffffffdfffull, rd), 0);
	/* an end of exactly 2^64 wraps to 0: refused as well */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x2000,
					       0xffffffffffffe000ull, rd),
			-ERANGE);
}

static void mrc_region_zero_length(struct kunit *test)
{
	struct mrc_region r = { .iova = 0x1000, .length = 0x1000 };

	/* zero bytes touch nothing: allowed anywhere, with any access */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 0,
					       MRC_ACC_REMOTE_WRITE), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0, 0, ACC_ALL), 0);
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, ~0ull, 0,
					       MRC_ACC_REMOTE_ATOMIC), 0);
	r.length = 0;
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x1000, 0, 0), 0);
}

/* page walk: offsets at page and region boundaries */
static void mrc_region_pages(struct kunit *test)
{
	/* 3 pages of 4 KiB; the region starts 0xff0 into the first one */
	struct mrc_region r = { .iova = 0x10000ff0, .length = 0x1010 };
	u64 pg;
	u32 in, n;

	n = mrc_region_chunk(&r, 0xff0, 12, 0x10000ff0, 0x1010, &pg, &in);
	KUNIT_EXPECT_EQ(test, pg, 0ull);
	KUNIT_EXPECT_EQ(test, in, 0xff0u);
	KUNIT_EXPECT_EQ(test, n, 16u);			/* up to the page end */
	n = mrc_region_chunk(&r, 0xff0, 12, 0x10001000, 0x1000, &pg, &in);
	KUNIT_EXPECT_EQ(test, pg, 1ull);
	KUNIT_EXPECT_EQ(test, in, 0u);
	KUNIT_EXPECT_EQ(test, n, 0x1000u);		/* a whole page */
	/* the last byte of the region */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x10001fff, 1, 0), 0);
	n = mrc_region_chunk(&r, 0xff0, 12, 0x10001fff, 1, &pg, &in);
	KUNIT_EXPECT_EQ(test, pg, 1ull);
	KUNIT_EXPECT_EQ(test, in, 0xfffu);
	KUNIT_EXPECT_EQ(test, n, 1u);
	/* one past it is refused before any page is computed */
	KUNIT_EXPECT_EQ(test, mrc_region_check(&r, 0x10002000, 1, 0), -ERANGE);
	/* an iova unrelated to the user address: only offsets matter */
	r.iova = 0xfffffffffffff000ull;
	r.length = 0x1000;
	n = mrc_region_chunk(&r, 0x80, 12, 0xfffffffffffffff8ull, 8, &pg, &in);
	KUNIT_EXPECT_EQ(test, pg, 1ull);
	KUNIT_EXPECT_EQ(test, in, 0x78u);
	KUNIT_EXPECT_EQ(test, n, 8u);
	/* large pages */
	r.iova = 0;
	r.length = 1ull << 32;
	n = mrc_region_chunk(&r, 0, 21, (3ull << 21) - 4, 64, &pg, &in);
	KUNIT_EXPECT_EQ(test, pg, 2ull);
	KUNIT_EXPECT_EQ(test, in, (1u << 21) - 4);
	KUNIT_EXPECT_EQ(test, n, 4u);
}

static struct kunit_case mrc_region_cases[] = {
	KUNIT_CASE(mrc_region_access),
	KUNIT_CASE(mrc_region_bounds),
	KUNIT_CASE(mrc_region_overflow),
	KUNIT_CASE(mrc_region_zero_length),
	KUNIT_CASE(mrc_region_pages),
	{}
};

static struct kunit_suite mrc_region_suite = {
	.name = "metaroce_region",
	.test_cases = mrc_region_cases,
};

kunit_test_suite(mrc_region_suite);

#undef ACC_ALL

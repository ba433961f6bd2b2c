// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placeholder */
#include <kunit/test.h>

static void mrc_region_placeholder(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static struct kunit_case mrc_region_cases[] = {
	KUNIT_CASE(mrc_region_placeholder),
	{}
};

static struct kunit_suite mrc_region_suite = {
	.name = "metaroce_region",
	.test_cases = mrc_region_cases,
};
kunit_test_suite(mrc_region_suite);

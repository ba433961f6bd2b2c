// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placeholder */
#include <kunit/test.h>

static void mrc_rtt_placeholder(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static struct kunit_case mrc_rtt_cases[] = {
	KUNIT_CASE(mrc_rtt_placeholder),
	{}
};

static struct kunit_suite mrc_rtt_suite = {
	.name = "metaroce_rtt",
	.test_cases = mrc_rtt_cases,
};
kunit_test_suite(mrc_rtt_suite);

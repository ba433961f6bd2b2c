// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placeholder */
#include <kunit/test.h>

static void mrc_rx_placeholder(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static struct kunit_case mrc_rx_cases[] = {
	KUNIT_CASE(mrc_rx_placeholder),
	{}
};

static struct kunit_suite mrc_rx_suite = {
	.name = "metaroce_rx",
	.test_cases = mrc_rx_cases,
};
kunit_test_suite(mrc_rx_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placeholder */
#include <kunit/test.h>

static void mrc_tx_placeholder(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static struct kunit_case mrc_tx_cases[] = {
	KUNIT_CASE(mrc_tx_placeholder),
	{}
};

static struct kunit_suite mrc_tx_suite = {
	.name = "metaroce_tx",
	.test_cases = mrc_tx_cases,
};
kunit_test_suite(mrc_tx_suite);

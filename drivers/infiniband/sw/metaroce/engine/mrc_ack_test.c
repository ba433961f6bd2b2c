// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* placeholder */
#include <kunit/test.h>

static void mrc_ack_placeholder(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static struct kunit_case mrc_ack_cases[] = {
	KUNIT_CASE(mrc_ack_placeholder),
	{}
};

static struct kunit_suite mrc_ack_suite = {
	.name = "metaroce_ack",
	.test_cases = mrc_ack_cases,
};
kunit_test_suite(mrc_ack_suite);

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Module information for metaroce_engine_test, the transport engine built
 * standalone with its KUnit suites (no ib_core).  The suites themselves
 * sit at the end of each engine file.
 */
#include <linux/module.h>

MODULE_DESCRIPTION("KUnit tests for the metaroce transport engine");
MODULE_LICENSE("Dual BSD/GPL");

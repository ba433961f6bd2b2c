/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The run's reports besides KTAP: JUnit XML, the requirement x verdict
 * matrix and the conformance claim per profile (tests/conformance/README.md).
 */
#ifndef MCT_REPORT_H
#define MCT_REPORT_H

#include "script.h"

/* remember one variant's verdict; @reruns: extra runs it took */
void mct_report_add(const struct mct_case *tc, const char *variant,
		    enum mct_result res, int reruns, double secs,
		    const char *why);
/* DIR/junit.xml, DIR/matrix.md, DIR/claims.md; claims also as "# " lines */
int mct_report_write(const char *dir, const struct mct_env *env);

#endif /* MCT_REPORT_H */

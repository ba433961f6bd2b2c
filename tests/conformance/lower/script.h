/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Test files of the conformance suite and their interpreter; the language
 * is described in tests/conformance/lower/LANGUAGE.md.
 */
#ifndef MCT_SCRIPT_H
#define MCT_SCRIPT_H

#include "monitor.h"
#include "rawio.h"

enum mct_result {
	MCT_PASS, MCT_FAIL, MCT_INCONCLUSIVE, MCT_NOT_APPLICABLE, MCT_ERROR,
	MCT_WAIVED,
};

#define MCT_MAX_LINES	256
#define MCT_MAX_VARS	128

struct mct_case {
	char path[512];
	char id[96], reqs[256], level[16], needs[256], timing[16];
	int v4, v6, psn0, psnwrap;	/* variants */
	int n_lines;
	int lineno[MCT_MAX_LINES];
	char *line[MCT_MAX_LINES];
};

/* the run's environment: addresses, agent, PICS, where results go */
struct mct_env {
	struct mct_io io;
	struct mct_addr self4, peer4, self6, peer6;
	int agent;			/* connected agent socket */
	char agent_path[256];
	char pics[64][2][64];		/* key = value */
	int n_pics;
	int turnaround_ms;		/* "prompt" bound (PIXIT) */
	int verbose;
};

struct mct_run {
	struct mct_env *env;
	const struct mct_case *tc;
	int family, psnwrap;
	char vars[MCT_MAX_VARS][2][96];
	int n_vars;
	struct mct_monitor mon;
	struct mct_pkt last;		/* the packet the last expect matched */
	struct mct_ipmeta last_ip;
	uint64_t last_ns;		/* its capture time; 0 after a wait */
	uint64_t lag_ns;		/* longest from it to the next send */
	char why[512];
};

int mct_case_load(struct mct_case *tc, const char *path);
void mct_case_free(struct mct_case *tc);
const char *mct_pics_get(const struct mct_env *env, const char *key);
/* run one variant; r->why explains a verdict other than PASS */
enum mct_result mct_case_run(struct mct_run *r);
const char *mct_result_name(enum mct_result res);

#endif /* MCT_SCRIPT_H */

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrct, the lower tester of the metaroce conformance suite: runs test
 * files (LANGUAGE.md) against a device under test driven by an agent
 * (agent protocol v1), on the wire from another namespace or host.
 *
 *   mrct --if IFNAME --agent SOCKET [--self4 A --peer4 A] [--self6 A
 *        --peer6 A] [--pics FILE] [--waivers FILE] [--out DIR]
 *        [--turnaround MS] [-v] CASE...
 *
 * KTAP on stdout, one result per test variant; a pcap of every variant
 * that did not pass in --out.  Exit status 0 when nothing failed
 * (FAIL or ERROR), 1 otherwise.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "script.h"

static char waivers[64][2][128];
static int n_waivers;

static int load_kv(const char *path, char (*kv)[2][64], int max)
{
	FILE *f = fopen(path, "r");
	char buf[512], k[64], v[64];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f) && n < max) {
		*strchrnul(buf, '#') = 0;
		if (sscanf(buf, " %63[^= \t] = %63s", k, v) != 2)
			continue;
		memcpy(kv[n][0], k, sizeof(k));
		memcpy(kv[n][1], v, sizeof(v));
		n++;
	}
	fclose(f);
	return n;
}

/* waivers.txt: "<test id or id.variant> <reason...>" per line */
static void load_waivers(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[512];

	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f) && n_waivers < 64) {
		*strchrnul(buf, '#') = 0;
		*strchrnul(buf, '\n') = 0;
		if (sscanf(buf, "%127s %127[^\n]", waivers[n_waivers][0],
			   waivers[n_waivers][1]) >= 1)
			n_waivers++;
	}
	fclose(f);
}

static const char *waived(const char *id, const char *name)
{
	for (int i = 0; i < n_waivers; i++)
		if (!strcmp(waivers[i][0], id) || !strcmp(waivers[i][0], name))
			return waivers[i][1];
	return NULL;
}

static int agent_open(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(path);
		return -1;
	}
	return fd;
}

static void help(void)
{
	fprintf(stderr, "usage: mrct --if IFNAME --agent SOCKET [--self4 A --peer4 A]\n"
		"            [--self6 A --peer6 A] [--pics FILE] [--waivers FILE]\n"
		"            [--out DIR] [--turnaround MS] [-v] CASE...\n");
	exit(2);
}

static int opts(int argc, char **argv, struct mct_env *env, const char **out,
		const char **ifname)
{
	static const struct option lo[] = {
		{ "if", 1, NULL, 'i' }, { "agent", 1, NULL, 'a' },
		{ "self4", 1, NULL, '4' }, { "peer4", 1, NULL, '5' },
		{ "self6", 1, NULL, '6' }, { "peer6", 1, NULL, '7' },
		{ "pics", 1, NULL, 'p' }, { "waivers", 1, NULL, 'w' },
		{ "out", 1, NULL, 'o' }, { "turnaround", 1, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			*ifname = optarg;
			break;
		case 'a':
			snprintf(env->agent_path, sizeof(env->agent_path), "%s", optarg);
			break;
		case '4':
			bad |= mct_addr_parse(optarg, &env->self4);
			break;
		case '5':
			bad |= mct_addr_parse(optarg, &env->peer4);
			break;
		case '6':
			bad |= mct_addr_parse(optarg, &env->self6);
			break;
		case '7':
			bad |= mct_addr_parse(optarg, &env->peer6);
			break;
		case 'p':
			env->n_pics = load_kv(optarg, env->pics, 64);
			bad |= env->n_pics < 0;
			break;
		case 'w':
			load_waivers(optarg);
			break;
		case 'o':
			*out = optarg;
			break;
		case 't':
			env->turnaround_ms = atoi(optarg);
			break;
		case 'v':
			env->verbose = 1;
			break;
		default:
			help();
		}
	}
	if (bad || !*ifname || !env->agent_path[0] || optind == argc)
		help();
	return optind;
}

static int n_tests, counts[6];

/* one variant: run, print its KTAP line, keep its pcap unless it passed */
static void run_variant(struct mct_env *env, struct mct_case *tc, int fam,
			int wrap, const char *out)
{
	struct mct_run *r = calloc(1, sizeof(*r));
	char name[160], pcap[600];
	enum mct_result res;
	const char *w;

	snprintf(name, sizeof(name), "%s.ipv%d.%s", tc->id, fam, wrap ? "psnwrap" : "psn0");
	snprintf(pcap, sizeof(pcap), "%s/%s.pcap", out, name);
	r->env = env;
	r->tc = tc;
	r->family = fam;
	r->psnwrap = wrap;
	mct_pcap_open(&env->io, pcap);
	res = mct_case_run(r);
	mct_pcap_close(&env->io);
	w = waived(tc->id, name);
	if (res == MCT_FAIL && w) {
		res = MCT_WAIVED;
		snprintf(r->why + strlen(r->why), sizeof(r->why) - strlen(r->why),
			 "; waived: %s", w);
	}
	if (res == MCT_PASS || res == MCT_NOT_APPLICABLE)
		unlink(pcap);
	counts[res]++;
	n_tests++;
	if (res != MCT_PASS)
		printf("# %s: %s %s: %s\n", name, tc->level, mct_result_name(res), r->why);
	switch (res) {
	case MCT_PASS:
		printf("ok %d %s\n", n_tests, name);
		break;
	case MCT_NOT_APPLICABLE:
		printf("ok %d %s # SKIP NOT_APPLICABLE\n", n_tests, name);
		break;
	case MCT_WAIVED:
		printf("not ok %d %s # TODO WAIVED\n", n_tests, name);
		break;
	default:
		printf("not ok %d %s # %s\n", n_tests, name, mct_result_name(res));
	}
	fflush(stdout);
	free(r);
}

int main(int argc, char **argv)
{
	static struct mct_env env = { .turnaround_ms = 500 };
	static struct mct_case tc;
	const char *out = ".", *ifname = NULL;
	int first = opts(argc, argv, &env, &out, &ifname), planned = 0;

	if (mct_io_open(&env.io, ifname)) {
		perror("mrct: raw sockets / capture");
		return 2;
	}
	env.agent = agent_open(env.agent_path);
	if (env.agent < 0)
		return 2;
	for (int i = first; i < argc; i++)
		if (!mct_case_load(&tc, argv[i])) {
			planned += (tc.v4 + tc.v6) * (tc.psn0 + tc.psnwrap);
			mct_case_free(&tc);
		}
	printf("KTAP version 1\n1..%d\n", planned);
	for (int i = first; i < argc; i++) {
		if (mct_case_load(&tc, argv[i])) {
			printf("# %s: cannot load (needs id, level and reqs lines of MRC-<AREA>-<N> IDs, and variants naming a family and a PSN base)\n", argv[i]);
			counts[MCT_ERROR]++;
			continue;
		}
		for (int fam = 4; fam <= 6; fam += 2)
			for (int wrap = 0; wrap <= 1; wrap++)
				if ((fam == 4 ? tc.v4 : tc.v6) && (wrap ? tc.psnwrap : tc.psn0))
					run_variant(&env, &tc, fam, wrap, out);
		mct_case_free(&tc);
	}
	printf("# mrct: %d PASS, %d FAIL, %d INCONCLUSIVE, %d NOT_APPLICABLE, %d ERROR,"
	       " %d WAIVED\n",
	       counts[MCT_PASS], counts[MCT_FAIL], counts[MCT_INCONCLUSIVE],
	       counts[MCT_NOT_APPLICABLE], counts[MCT_ERROR], counts[MCT_WAIVED]);
	mct_io_close(&env.io);
	return counts[MCT_FAIL] || counts[MCT_ERROR] ? 1 : 0;
}

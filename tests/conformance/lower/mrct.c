// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrct, the lower tester of the metaroce conformance suite: runs test
 * files (LANGUAGE.md) against a device under test driven by an agent
 * (agent protocol v1), on the wire from another namespace or host.
 *
 *   mrct --if IFNAME --agent SOCKET [--self4 A --peer4 A] [--self6 A
 *        --peer6 A] [--pics FILE] [--waivers FILE] [--out DIR]
 *        [--turnaround MS] [--variants LIST] [-v] CASE...
 *
 * --agent: the agent's UNIX socket, or tcp:HOST:PORT for an agent
 * listening on TCP (mrct-agent --tcp) on another host; HOST may be a
 * name, an IPv4 address or an [IPv6] address.
 *
 * --variants: a comma list of ipv4 ipv6 psn0 psnwrap; a case runs only
 * the variants it has and the list names (a family or PSN base the list
 * does not mention at all is not restricted).
 *
 * KTAP on stdout, one result per test variant; a pcap of every variant
 * that did not pass, junit.xml, matrix.md (requirement x verdict) and
 * claims.md (one conformance claim per profile) in --out.  A variant
 * found INCONCLUSIVE runs once more before its verdict counts.  Exit status 0 when nothing failed
 * (FAIL or ERROR), 1 otherwise.
 */
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "script.h"

static char waivers[64][2][128];
static int n_waivers;
/* --variants: which of a case's variants run (default all) */
static int want_v4 = 1, want_v6 = 1, want_psn0 = 1, want_psnwrap = 1;

static void pick_variants(const char *list)
{
	int fam = strstr(list, "ipv4") || strstr(list, "ipv6");
	int psn = strstr(list, "psn0") || strstr(list, "psnwrap");

	want_v4 = !fam || strstr(list, "ipv4");
	want_v6 = !fam || strstr(list, "ipv6");
	want_psn0 = !psn || strstr(list, "psn0");
	want_psnwrap = !psn || strstr(list, "psnwrap");
}

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

static int load_case(struct mct_case *tc, const char *path)
{
	int err = mct_case_load(tc, path);

	if (!err) {
		tc->v4 &= want_v4;
		tc->v6 &= want_v6;
		tc->psn0 &= want_psn0;
		tc->psnwrap &= want_psnwrap;
	}
	return err;
}

/* tcp:HOST:PORT (an agent on another host; HOST may be [IPv6]) */
static int agent_open_tcp(const char *spec)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	char host[256];
	const char *port = strrchr(spec, ':');
	size_t n;
	int fd = -1, err;

	if (!port || port == spec)
		return -1;
	n = port - spec;
	if (spec[0] == '[' && n >= 2 && spec[n - 1] == ']') {
		spec++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return -1;
	memcpy(host, spec, n);
	host[n] = 0;
	err = getaddrinfo(host, port + 1, &hints, &ai);
	if (err) {
		fprintf(stderr, "mrct: agent %s: %s\n", host, gai_strerror(err));
		return -1;
	}
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
		if (fd >= 0 && !connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		fprintf(stderr, "mrct: cannot connect to the agent at %s:%s\n", host, port + 1);
	return fd;
}

/* --agent: a UNIX socket path, or tcp:HOST:PORT */
static int agent_open(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (!strncmp(path, "tcp:", 4))
		return agent_open_tcp(path + 4);
	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void help(void)
{
	fprintf(stderr, "usage: mrct --if IFNAME --agent SOCKET|tcp:HOST:PORT\n"
		"            [--self4 A --peer4 A]\n"
		"            [--self6 A --peer6 A] [--pics FILE] [--waivers FILE]\n"
		"            [--out DIR] [--turnaround MS] [--variants LIST] [-v]\n"
		"            CASE...\n");
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
		{ "variants", 1, NULL, 'V' },
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
		case 'V':
			pick_variants(optarg);
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
	struct timespec t0, t1;
	enum mct_result res;
	int reruns = 0;
	const char *w;

	snprintf(name, sizeof(name), "%s.ipv%d.%s", tc->id, fam, wrap ? "psnwrap" : "psn0");
	snprintf(pcap, sizeof(pcap), "%s/%s.pcap", out, name);
	r->env = env;
	r->tc = tc;
	r->family = fam;
	r->psnwrap = wrap;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mct_pcap_open(&env->io, pcap);
	res = mct_case_run(r);
	mct_pcap_close(&env->io);
	if (res == MCT_INCONCLUSIVE) {
		/* once more before it counts: timing may have been unlucky */
		printf("# %s: INCONCLUSIVE (%s), run again\n", name, r->why);
		reruns++;
		mct_pcap_open(&env->io, pcap);
		res = mct_case_run(r);
		mct_pcap_close(&env->io);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
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
	mct_report_add(tc, name + strlen(tc->id) + 1, res, reruns,
		       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9, r->why);
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
		if (!load_case(&tc, argv[i])) {
			planned += (tc.v4 + tc.v6) * (tc.psn0 + tc.psnwrap);
			mct_case_free(&tc);
		}
	printf("KTAP version 1\n1..%d\n", planned);
	for (int i = first; i < argc; i++) {
		if (load_case(&tc, argv[i])) {
			static struct mct_case bad;
			const char *why = "cannot load (needs id, level and reqs lines of MRC-<AREA>-<N> IDs, and variants naming a family and a PSN base)";

			printf("# %s: %s\n", argv[i], why);
			counts[MCT_ERROR]++;
			snprintf(bad.id, sizeof(bad.id), "%s", argv[i]);
			mct_report_add(&bad, "load", MCT_ERROR, 0, 0, why);
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
	if (mct_report_write(out, &env))
		perror("mrct: reports");
	return counts[MCT_FAIL] || counts[MCT_ERROR] ? 1 : 0;
}

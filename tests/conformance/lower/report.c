// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrct's reports besides KTAP: JUnit XML (one testcase per case and
 * variant), the requirement x verdict matrix and a conformance claim per
 * profile (a profile is a PICS feature that cases need).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

struct rec {
	char id[96], variant[24], level[16], reqs[256], needs[256];
	enum mct_result res;
	int reruns;
	double secs;
	char why[512];
};

static struct rec *recs;
static int n_recs, cap_recs;

static const char *const variants[] = {
	"ipv4.psn0", "ipv4.psnwrap", "ipv6.psn0", "ipv6.psnwrap",
};

void mct_report_add(const struct mct_case *tc, const char *variant,
		    enum mct_result res, int reruns, double secs,
		    const char *why)
{
	struct rec *r;

	if (n_recs == cap_recs) {
		cap_recs = cap_recs ? 2 * cap_recs : 256;
		recs = realloc(recs, cap_recs * sizeof(*recs));
		if (!recs) {
			perror("mrct");
			exit(2);
		}
	}
	r = &recs[n_recs++];
	snprintf(r->id, sizeof(r->id), "%s", tc->id);
	snprintf(r->variant, sizeof(r->variant), "%s", variant);
	snprintf(r->level, sizeof(r->level), "%s", tc->level);
	snprintf(r->reqs, sizeof(r->reqs), "%s", tc->reqs);
	snprintf(r->needs, sizeof(r->needs), "%s", tc->needs);
	snprintf(r->why, sizeof(r->why), "%s", why);
	r->res = res;
	r->reruns = reruns;
	r->secs = secs;
}

/* is @word one of the blank/comma separated words of @list? */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || strchr(" ,\t", p[-1])) && strchr(" ,\t", p[n]))
			return 1;
		p += n;
	}
	return 0;
}

static void xml_attr(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
		}
	}
}

static void junit_case(FILE *f, const struct rec *r)
{
	static const char *const tag[] = {
		[MCT_FAIL] = "failure", [MCT_ERROR] = "error",
		[MCT_INCONCLUSIVE] = "skipped", [MCT_NOT_APPLICABLE] = "skipped",
		[MCT_WAIVED] = "skipped",
	};

	fprintf(f, "    <testcase classname=\"conformance.%s\" name=\"%s.%s\" time=\"%.3f\">\n",
		r->id, r->id, r->variant, r->secs);
	fprintf(f, "      <properties><property name=\"reqs\" value=\"%s\"/>"
		"<property name=\"level\" value=\"%s\"/>"
		"<property name=\"reruns\" value=\"%d\"/></properties>\n",
		r->reqs, r->level, r->reruns);
	if (r->res != MCT_PASS) {
		fprintf(f, "      <%s type=\"%s\" message=\"%s %s: ", tag[r->res],
			mct_result_name(r->res), r->level, mct_result_name(r->res));
		xml_attr(f, r->why);
		fputs("\"/>\n", f);
	}
	fputs("    </testcase>\n", f);
}

static int write_junit(const char *path)
{
	int n[6] = { 0 };
	double t = 0;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (int i = 0; i < n_recs; i++) {
		n[recs[i].res]++;
		t += recs[i].secs;
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<testsuites name=\"metaroce-conformance\" tests=\"%d\" failures=\"%d\""
		" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n", n_recs, n[MCT_FAIL],
		n[MCT_ERROR], n[MCT_INCONCLUSIVE] + n[MCT_NOT_APPLICABLE] + n[MCT_WAIVED], t);
	fprintf(f, "  <testsuite name=\"metaroce-conformance\" tests=\"%d\" failures=\"%d\""
		" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n", n_recs, n[MCT_FAIL],
		n[MCT_ERROR], n[MCT_INCONCLUSIVE] + n[MCT_NOT_APPLICABLE] + n[MCT_WAIVED], t);
	for (int i = 0; i < n_recs; i++)
		junit_case(f, &recs[i]);
	fputs("  </testsuite>\n</testsuites>\n", f);
	return fclose(f);
}

/* how bad a verdict is, for combining several into one cell */
static int rank(enum mct_result res)
{
	static const int r[] = {
		[MCT_NOT_APPLICABLE] = 1, [MCT_PASS] = 2, [MCT_WAIVED] = 3,
		[MCT_INCONCLUSIVE] = 4, [MCT_ERROR] = 5, [MCT_FAIL] = 6,
	};
	return r[res];
}

/* MRC-<AREA>-<N>: by area, then numerically */
static int req_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	const char *dx = strrchr(x, '-'), *dy = strrchr(y, '-');
	char ax[64], ay[64];
	int c;

	if (!dx || !dy)
		return strcmp(x, y);
	snprintf(ax, sizeof(ax), "%.*s", (int)(dx - x), x);
	snprintf(ay, sizeof(ay), "%.*s", (int)(dy - y), y);
	c = strcmp(ax, ay);
	return c ? c : atoi(dx + 1) - atoi(dy + 1);
}

/* every requirement ID the recorded cases name, sorted, unique */
static int collect_reqs(char ***out)
{
	char **ids = NULL, buf[256], *save, *tok;
	int n = 0, j;

	for (int i = 0; i < n_recs; i++) {
		snprintf(buf, sizeof(buf), "%s", recs[i].reqs);
		for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
			for (j = 0; j < n && strcmp(ids[j], tok); j++)
				;
			if (j < n)
				continue;
			ids = realloc(ids, (n + 1) * sizeof(*ids));
			if (!ids)
				exit(2);
			ids[n++] = strdup(tok);
		}
	}
	if (n)
		qsort(ids, n, sizeof(*ids), req_cmp);
	*out = ids;
	return n;
}

static void matrix_row(FILE *f, const char *req)
{
	char cases[1024] = "";
	int must = 0;

	fprintf(f, "| %s |", req);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		int worst = 0;
		enum mct_result w = MCT_PASS;

		for (int i = 0; i < n_recs; i++) {
			const struct rec *r = &recs[i];

			if (!has_word(r->reqs, req) || strcmp(r->variant, variants[v]))
				continue;
			if (rank(r->res) > worst) {
				worst = rank(r->res);
				w = r->res;
			}
			must |= !strcmp(r->level, "MUST");
			if (!has_word(cases, r->id) && strlen(cases) + strlen(r->id) + 3 < sizeof(cases))
				snprintf(cases + strlen(cases), sizeof(cases) - strlen(cases),
					 "%s%s", cases[0] ? ", " : "", r->id);
		}
		fprintf(f, " %s |", !worst ? "-" : w == MCT_NOT_APPLICABLE ? "N/A" :
			mct_result_name(w));
	}
	fprintf(f, " %s | %s |\n", must ? "MUST" : "SHOULD/MAY", cases);
}

static int write_matrix(const char *path)
{
	FILE *f = fopen(path, "w");
	char **ids;
	int n = collect_reqs(&ids);

	if (!f)
		return -1;
	fputs("# Requirement x verdict\n\nA cell is the worst verdict of the cases that name the "
	      "requirement (FAIL, ERROR, INCONCLUSIVE, WAIVED, PASS, N/A); - : not run.\n\n", f);
	fputs("| requirement | ipv4.psn0 | ipv4.psnwrap | ipv6.psn0 | ipv6.psnwrap "
	      "| case level | cases |\n|---|---|---|---|---|---|---|\n", f);
	for (int i = 0; i < n; i++) {
		matrix_row(f, ids[i]);
		free(ids[i]);
	}
	free(ids);
	return fclose(f);
}

static int pics_has(const struct mct_env *env, const char *key)
{
	const char *v = mct_pics_get(env, key);

	return v && strcmp(v, "no") && strcmp(v, "0");
}

/* one profile's claim: every MUST case that needs @prof passed */
static void claim(FILE *f, const struct mct_env *env, const char *prof)
{
	int pass = 0, waived = 0, bad = 0, na = 0, inc = 0;
	char failing[512] = "";

	for (int i = 0; i < n_recs; i++) {
		const struct rec *r = &recs[i];

		if (strcmp(r->level, "MUST") || !has_word(r->needs, prof))
			continue;
		if (r->res == MCT_PASS) {
			pass++;
		} else if (r->res == MCT_WAIVED) {
			waived++;
		} else if (r->res == MCT_NOT_APPLICABLE) {
			na++;
		} else if (r->res == MCT_INCONCLUSIVE) {
			inc++;
		} else {
			bad++;
			if (!has_word(failing, r->id) && strlen(failing) + strlen(r->id) + 3 < sizeof(failing))
				snprintf(failing + strlen(failing), sizeof(failing) - strlen(failing),
					 "%s%s", failing[0] ? ", " : "", r->id);
		}
	}
	if (!pics_has(env, prof))
		fprintf(f, "- %s: not declared in the PICS, no claim (%d MUST variants not applicable)\n",
			prof, na);
	else if (bad)
		fprintf(f, "- %s: does NOT conform: %d MUST variants did not pass (%s)\n",
			prof, bad, failing);
	else if (inc)
		fprintf(f, "- %s: no claim: %d MUST variants INCONCLUSIVE (run again)\n",
			prof, inc);
	else if (!pass)
		fprintf(f, "- %s: no claim: no MUST case of it ran\n", prof);
	else if (waived)
		fprintf(f, "- %s: conforms: all %d MUST variants passed (%d of them waived)\n",
			prof, pass + waived, waived);
	else
		fprintf(f, "- %s: conforms: all %d MUST variants passed\n", prof, pass);
}

static int write_claims(const char *path, const struct mct_env *env)
{
	char profs[64][64], buf[256], *save, *tok;
	int n = 0, j, bad = 0, musts = 0;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (int i = 0; i < n_recs; i++) {
		snprintf(buf, sizeof(buf), "%s", recs[i].needs);
		for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
			for (j = 0; j < n && strcmp(profs[j], tok); j++)
				;
			if (j == n && n < 64)
				snprintf(profs[n++], sizeof(profs[0]), "%s", tok);
		}
		/* a case file that did not load has no level: not a pass */
		bad |= (!strcmp(recs[i].level, "MUST") || !recs[i].level[0]) &&
		       rank(recs[i].res) > rank(MCT_WAIVED);
		musts += !strcmp(recs[i].level, "MUST");
	}
	qsort(profs, n, sizeof(profs[0]), (int (*)(const void *, const void *))strcmp);
	fputs("# Conformance claims\n\nA profile is a PICS feature that cases need; it is "
	      "claimed only if every MUST case variant that needs it passed (WAIVED shown).\n\n", f);
	for (j = 0; j < n; j++)
		claim(f, env, profs[j]);
	fprintf(f, "\nEvery MUST case variant run: %s\n", bad ? "NOT all passed" :
		musts ? "all passed" : "none ran");
	return fclose(f);
}

int mct_report_write(const char *dir, const struct mct_env *env)
{
	char path[600], line[1024];
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/junit.xml", dir);
	err |= write_junit(path);
	snprintf(path, sizeof(path), "%s/matrix.md", dir);
	err |= write_matrix(path);
	snprintf(path, sizeof(path), "%s/claims.md", dir);
	err |= write_claims(path, env);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (line[0] == '-' || line[0] == 'E')
			printf("# %s%s", line[0] == '-' ? "claim " : "",
			       line[0] == '-' ? line + 2 : line);
	if (f)
		fclose(f);
	return err;
}

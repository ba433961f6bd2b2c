// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The interpreter of the conformance test files (LANGUAGE.md).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "script.h"

#define TST_QPN		0x00c0de
#define PSNWRAP_TST	0xfffff0u	/* the tester's requests cross 2^24 */
#define PSNWRAP_DUT	0xfffffau

static const char *const result_names[] = {
	"PASS", "FAIL", "INCONCLUSIVE", "NOT_APPLICABLE", "ERROR", "WAIVED",
};

const char *mct_result_name(enum mct_result res)
{
	return result_names[res];
}

/* ---- test files ---- */

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int header_line(struct mct_case *tc, const char *line)
{
	char buf[1024], *s = buf, *val;
	static const struct { const char *key; size_t off, size; } keys[] = {
#define K(k) { #k, offsetof(struct mct_case, k), sizeof(((struct mct_case *)0)->k) }
		K(id), K(reqs), K(level), K(needs), K(timing),
#undef K
	};

	snprintf(buf, sizeof(buf), "%s", line);
	val = s + strcspn(s, " \t");
	if (*val)
		*val++ = 0;
	val = trim(val);
	if (!strcmp(s, "variants")) {
		tc->v4 = !!strstr(val, "ipv4");
		tc->v6 = !!strstr(val, "ipv6");
		tc->psn0 = !!strstr(val, "psn0");
		tc->psnwrap = !!strstr(val, "psnwrap");
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strcmp(s, keys[i].key))
			continue;
		snprintf((char *)tc + keys[i].off, keys[i].size, "%s", val);
		return 1;
	}
	return 0;
}

/* the lines of path, "include FILE" (relative to path's directory) inlined */
static int load_lines(struct mct_case *tc, const char *path, int depth, int *body)
{
	FILE *f = fopen(path, "r");
	char buf[1024], inc[1024], *s, *hash;
	int no = 0, err = 0;

	if (!f || depth > 4)
		return -1;
	while (!err && fgets(buf, sizeof(buf), f)) {
		no++;
		hash = strchr(buf, '#');
		if (hash)
			*hash = 0;
		s = trim(buf);
		if (!*s)
			continue;
		if (!*body && header_line(tc, s))
			continue;
		*body = 1;
		if (!strncmp(s, "include ", 8)) {
			snprintf(inc, sizeof(inc), "%.*s%s",
				 (int)(strrchr(path, '/') ? strrchr(path, '/') - path + 1 : 0),
				 path, trim(s + 8));
			err = load_lines(tc, inc, depth + 1, body);
			continue;
		}
		if (tc->n_lines == MCT_MAX_LINES)
			break;
		/* lines of an included file count negative: "line -3" */
		tc->lineno[tc->n_lines] = depth ? -no : no;
		tc->line[tc->n_lines++] = strdup(s);
	}
	fclose(f);
	return err;
}

/*
 * reqs: requirement IDs of the spec, MRC-<AREA>-<N>, separated by blanks,
 * commas or semicolons (scripts/spec-reqs --check knows which exist)
 */
static int reqs_valid(const char *reqs)
{
	char buf[256], *save, *tok;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", reqs);
	for (tok = strtok_r(buf, " \t,;", &save); tok; tok = strtok_r(NULL, " \t,;", &save)) {
		const char *s = tok + 4;

		if (strncmp(tok, "MRC-", 4))
			return 0;
		while (isupper((unsigned char)*s))
			s++;
		if (s == tok + 4 || *s++ != '-' || *s < '1' || *s > '9')
			return 0;
		while (isdigit((unsigned char)*s))
			s++;
		if (*s)
			return 0;
		n++;
	}
	return n > 0;
}

int mct_case_load(struct mct_case *tc, const char *path)
{
	int body = 0;

	memset(tc, 0, sizeof(*tc));
	tc->v4 = 1;
	tc->v6 = 1;
	tc->psn0 = 1;
	tc->psnwrap = 1;
	snprintf(tc->path, sizeof(tc->path), "%s", path);
	if (load_lines(tc, path, 0, &body))
		return -1;
	/* a case with no variant would run nothing and pass silently */
	if (!(tc->v4 || tc->v6) || !(tc->psn0 || tc->psnwrap))
		return -1;
	/* the tester's own self-tests (lower/selftest) check no requirement */
	if (!strncmp(tc->id, "selftest-", 9) && !strcmp(tc->reqs, "none"))
		return tc->level[0] ? 0 : -1;
	return tc->id[0] && tc->level[0] && reqs_valid(tc->reqs) ? 0 : -1;
}

void mct_case_free(struct mct_case *tc)
{
	for (int i = 0; i < tc->n_lines; i++)
		free(tc->line[i]);
	tc->n_lines = 0;
}

const char *mct_pics_get(const struct mct_env *env, const char *key)
{
	for (int i = 0; i < env->n_pics; i++)
		if (!strcmp(env->pics[i][0], key))
			return env->pics[i][1];
	return NULL;
}

/* ---- variables and expressions ---- */

static void var_set(struct mct_run *r, const char *name, const char *fmt, ...)
{
	va_list ap;
	int i;

	for (i = 0; i < r->n_vars; i++)
		if (!strcmp(r->vars[i][0], name))
			break;
	if (i == MCT_MAX_VARS)
		return;
	if (i == r->n_vars)
		snprintf(r->vars[r->n_vars++][0], sizeof(r->vars[0][0]), "%s", name);
	va_start(ap, fmt);
	vsnprintf(r->vars[i][1], sizeof(r->vars[i][1]), fmt, ap);
	va_end(ap);
}

/* a variable, or $pics.KEY: the PICS/PIXIT statement's value for KEY */
static const char *var_get(struct mct_run *r, const char *name)
{
	for (int i = 0; i < r->n_vars; i++)
		if (!strcmp(r->vars[i][0], name))
			return r->vars[i][1];
	if (!strncmp(name, "pics.", 5))
		return mct_pics_get(r->env, name + 5);
	return NULL;
}

static int verdict(struct mct_run *r, int res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return res;
}

/* replace $name and ${name}; an unknown name is an error */
static int subst(struct mct_run *r, const char *in, char *out, size_t cap)
{
	size_t o = 0;

	while (*in && o + 1 < cap) {
		char name[96];
		const char *v;
		size_t n = 0;
		int brace;

		if (*in != '$') {
			out[o++] = *in++;
			continue;
		}
		brace = *++in == '{';
		in += brace;
		while ((isalnum((unsigned char)*in) || *in == '_' || *in == '.') &&
		       n + 1 < sizeof(name))
			name[n++] = *in++;
		name[n] = 0;
		if (n && name[n - 1] == '.') {	/* "$x." ends a sentence */
			name[--n] = 0;
			in--;
		}
		in += brace && *in == '}';
		v = var_get(r, name);
		if (!v)
			return verdict(r, -1, "unknown variable $%s", name);
		o += snprintf(out + o, cap - o, "%s", v);
	}
	out[o < cap ? o : cap - 1] = 0;
	return 0;
}

static const struct { const char *name; uint64_t v; } names[] = {
	{ "ACKREQ", MCT_F_ACKREQ }, { "SOLICITED", MCT_F_SOLICITED },
	{ "RETX", MCT_F_RETX }, { "LAST", MCT_F_LAST }, { "IMM", MCT_F_IMM },
	{ "INV", MCT_F_INV }, { "ORDERED", MCT_F_ORDERED },
	{ "CREDIT", MCT_F_CREDIT }, { "ACKF_CE", MCT_ACKF_CE },
	{ "ACKF_DUP", MCT_ACKF_DUP }, { "ACKF_OOO", MCT_ACKF_OOO },
	{ "ACKF_HELD", MCT_ACKF_HELD },
	{ "notect", 0 }, { "ect1", 1 }, { "ect0", 2 }, { "ce", 3 },
	{ "RNR", 1 }, { "INV_REQ", 2 }, { "REM_ACCESS", 3 }, { "REM_OP", 4 },
};

static int term(const char *s, size_t n, uint64_t *v)
{
	char buf[64], *end;

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(buf, names[i].name)) {
			*v = names[i].v;
			return 0;
		}
	errno = 0;
	*v = strtoull(buf, &end, 0);
	return *end || errno ? -1 : 0;
}

/* terms joined by + - | & (left to right), after substitution */
static int eval(struct mct_run *r, const char *expr, uint64_t *v)
{
	char buf[256];
	const char *s = buf;
	char op = '+';
	uint64_t t, acc = 0;

	if (subst(r, expr, buf, sizeof(buf)))
		return -1;
	for (;;) {
		size_t n = strcspn(s + (*s == '-'), "+-|&") + (*s == '-');

		if (term(s, n, &t))
			return verdict(r, -1, "bad value '%s'", expr);
		acc = op == '+' ? acc + t : op == '-' ? acc - t :
		      op == '|' ? acc | t : acc & t;
		s += n;
		if (!*s)
			break;
		op = *s++;
	}
	*v = acc;
	return 0;
}

/* ---- the agent ---- */

static int agent_cmd(struct mct_run *r, const char *cmd, char *reply, size_t cap)
{
	int fd = r->env->agent;
	size_t n = 0;
	char c;

	if (r->env->verbose)
		fprintf(stderr, "  agent> %s\n", cmd);
	if (dprintf(fd, "%s\n", cmd) < 0)
		return -1;
	while (n + 1 < cap) {
		if (read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n')
			break;
		reply[n++] = c;
	}
	reply[n] = 0;
	if (r->env->verbose)
		fprintf(stderr, "  agent< %s\n", reply);
	return 0;
}

/* store the key=value pairs of an OK reply as NAME.key */
static void reply_vars(struct mct_run *r, const char *name, const char *reply)
{
	char buf[1024], *save, *tok, *eq, key[96];

	snprintf(buf, sizeof(buf), "%s", reply);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = 0;
		snprintf(key, sizeof(key), "%s.%s", name, tok);
		var_set(r, key, "%s", eq + 1);
	}
}

/*
 * [NAME =] CMD ARGS: NAME into @name (left as is without one), CMD ARGS
 * substituted into @cmd (1024 bytes) and sent; the agent's reply in
 * @reply.  Returns MCT_PASS or the ERROR verdict.
 */
static int agent_call(struct mct_run *r, char *args, char *name, size_t name_len,
		      char *cmd, char *reply, size_t reply_len)
{
	char *eq = strstr(args, " = ");

	if (eq && strcspn(args, " ") == (size_t)(eq - args)) {
		snprintf(name, name_len, "%.*s", (int)(eq - args), args);
		args = eq + 3;
	}
	if (subst(r, args, cmd, 1024))
		return MCT_ERROR;
	if (agent_cmd(r, cmd, reply, reply_len))
		return verdict(r, MCT_ERROR, "agent connection lost at '%s'", cmd);
	return MCT_PASS;
}

/* agent [NAME =] CMD ... | check CMD ...: non-OK is ERROR or FAIL */
static int do_agent(struct mct_run *r, char *args, int fail_res)
{
	char cmd[1024], reply[2048], name[64] = "";

	if (agent_call(r, args, name, sizeof(name), cmd, reply, sizeof(reply)))
		return MCT_ERROR;
	if (!strncmp(reply, "UNSUPPORTED", 11))
		return verdict(r, MCT_NOT_APPLICABLE, "agent: %s: %s", cmd, reply);
	if (strncmp(reply, "OK", 2))
		return verdict(r, fail_res, "agent: %s: %s", cmd, reply);
	if (name[0])
		reply_vars(r, name, reply);
	reply_vars(r, "reply", reply);
	return MCT_PASS;
}

/*
 * try [NAME =] CMD ARGS: an agent command whose refusal is an outcome,
 * not an error: NAME.status is the reply's first word (OK, ERR,
 * UNSUPPORTED), NAME.errno the ERR's errno name
 */
static int do_try(struct mct_run *r, char *args)
{
	char cmd[1024], reply[2048], name[64] = "try", key[96], word[48] = "";

	if (agent_call(r, args, name, sizeof(name), cmd, reply, sizeof(reply)))
		return MCT_ERROR;
	snprintf(key, sizeof(key), "%s.status", name);
	var_set(r, key, "%.*s", (int)strcspn(reply, " "), reply);
	if (!strncmp(reply, "ERR ", 4))
		sscanf(reply + 4, "%47s", word);
	snprintf(key, sizeof(key), "%s.errno", name);
	var_set(r, key, "%s", word[0] ? word : "-");
	if (!strncmp(reply, "OK", 2))
		reply_vars(r, name, reply);
	return MCT_PASS;
}

/* connect Q [args]: CONNECT Q's QP to the tester's QPN and PSNs */
static int do_connect(struct mct_run *r, char *args)
{
	char q[64], line[512], self[64];
	const char *qp, *qpn;
	int n = 0, res;

	if (sscanf(args, "%63s%n", q, &n) != 1)
		return verdict(r, MCT_ERROR, "connect: which QP?");
	snprintf(line, sizeof(line), "%s.qp", q);
	qp = var_get(r, line);
	snprintf(line, sizeof(line), "%s.qpn", q);
	qpn = var_get(r, line);
	if (!qp || !qpn)
		return verdict(r, MCT_ERROR, "connect: no QP named %s", q);
	var_set(r, "DQPN", "%s", qpn);
	snprintf(line, sizeof(line),
		 "CONNECT %s dgid=%s dqpn=%s rq_psn=$TPSN sq_psn=$DPSN pmtu=$PMTU %s",
		 qp, mct_addr_str(&r->env->io.self, self, sizeof(self)),
		 var_get(r, "TQPN"), args + n);
	res = do_agent(r, line, MCT_ERROR);
	return res;
}

static const char *const wc_fields[] = { "wr_id", "status", "opcode", "byte_len", "imm", "qpn" };

/* poll CQ TIMEOUT_MS STATUS [OPCODE]: one completion, of that status */
static int do_poll(struct mct_run *r, char *args)
{
	char cq[64], want[48], op[48] = "", line[256], reply[1024];
	char *wc, *f[6], *save;
	int ms = 0, res;

	if (sscanf(args, "%63s %d %47s %47s", cq, &ms, want, op) < 3)
		return verdict(r, MCT_ERROR, "poll: CQ TIMEOUT_MS STATUS [OPCODE]");
	snprintf(line, sizeof(line), "agent POLL %s 1 %d", cq, ms);
	res = do_agent(r, line + 6, MCT_ERROR);
	if (res != MCT_PASS)
		return res;
	snprintf(reply, sizeof(reply), "%s", var_get(r, "reply.wc") ?: "");
	if (!strcmp(var_get(r, "reply.n") ?: "0", "0"))
		return verdict(r, MCT_FAIL, "poll %s: no completion in %d ms", cq, ms);
	wc = reply;
	for (int i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : wc, ":", &save);
		if (!f[i])
			return verdict(r, MCT_ERROR, "poll: bad wc '%s'", reply);
		snprintf(line, sizeof(line), "wc.%s", wc_fields[i]);
		var_set(r, line, "%s", f[i]);
	}
	if (strcmp(f[1], want) || (op[0] && strcmp(f[2], op)))
		return verdict(r, MCT_FAIL, "poll %s: got %s %s, expected %s %s",
			       cq, f[1], f[2], want, op);
	return MCT_PASS;
}

/* ---- packets ---- */

static int is_req(uint8_t op)
{
	return op >= MCT_OP_SEND && op <= MCT_OP_ATOMIC_FA;
}

/* PSNs are the requester's: tester requests and DUT responses use TPSN */
static uint32_t psn_base(struct mct_run *r, uint8_t op, int from_tester)
{
	uint64_t v = 0;

	if (op == MCT_OP_UD_SEND)
		return 0;
	eval(r, is_req(op) == from_tester ? "$TPSN" : "$DPSN", &v);
	return (uint32_t)v;
}

static void pattern(uint8_t *b, uint32_t len, uint64_t seed)
{
	for (uint64_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static const char *const ip_keys[] = {
	"ecn", "dscp", "ttl", "df", "sport", "badcsum", "zerocsum",
};

static int ip_field(struct mct_ipmeta *m, const char *k, uint64_t v, int set,
		    uint64_t *got)
{
	uint64_t cur[] = {
		m->ecn, m->dscp, m->ttl, m->df, m->sport, m->bad_csum, m->csum_zero,
	};

	for (size_t i = 0; i < ARRAY_SIZE(ip_keys); i++) {
		if (strcmp(k, ip_keys[i]))
			continue;
		if (!set) {
			*got = cur[i];
			return 0;
		}
		switch (i) {
		case 0:
			m->ecn = v & 3;
			break;
		case 1:
			m->dscp = v & 63;
			break;
		case 2:
			m->ttl = (uint8_t)v;
			break;
		case 3:
			m->df = !!v;
			break;
		case 4:
			m->sport = (uint16_t)v;
			break;
		case 5:
			m->bad_csum = !!v;
			break;
		default:
			m->csum_zero = !!v;
			break;
		}
		return 0;
	}
	return -1;
}

/* send OPCODE field=value ...: one packet from the tester */
static int do_send(struct mct_run *r, char *args)
{
	static uint8_t pay[9000], dg[9200];
	char sval[96];
	struct mct_ipmeta ip = { .ecn = 2, .ttl = 64, .df = 1, .sport = 50000 };
	char *save, *tok, *eq;
	uint64_t v, seed = 0, len = 0, pmtu = 10, trunc = ~0ull;
	int hdrw = -1, paylen = -1;
	struct mct_pkt p;
	size_t n;
	int op;

	/* how long the DUT's packet waited for this answer (mct_late()) */
	if (r->last_ns && mct_now_ns() - r->last_ns > r->lag_ns)
		r->lag_ns = mct_now_ns() - r->last_ns;
	tok = strtok_r(args, " ", &save);
	op = tok ? mct_op_by_name(tok) : -1;
	if (op < 0)
		return verdict(r, MCT_ERROR, "send: unknown opcode");
	mct_template(&p, (uint8_t)op);
	eval(r, "$DQPN", &v);
	p.dqpn = (uint32_t)v;
	eval(r, "$TQPN", &v);
	p.sqpn = (uint32_t)v;
	if (op != MCT_OP_ACK && op != MCT_OP_UD_SEND && !eval(r, "$PMTU_SHIFT", &pmtu))
		p.pmtu = (uint8_t)pmtu;
	p.psn = psn_base(r, (uint8_t)op, 1);
	p.tsval = (uint32_t)(mct_now_ns() / 1000);
	p.payload = pay;
	/* first pass: the payload, so that the fixup sees its length */
	for (char *s = save; s && (s = strstr(s, "len=")); s++) {
		char val[96];

		if ((s == save || s[-1] == ' ') &&
		    sscanf(s + 4, "%95s", val) == 1 && eval(r, val, &len))
			return MCT_ERROR;
	}
	for (char *s = save; s && (s = strstr(s, "fill=")); s++) {
		char val[96];

		if ((s == save || s[-1] == ' ') &&
		    sscanf(s + 5, "%95s", val) == 1 && eval(r, val, &seed))
			return MCT_ERROR;
	}
	if (len > sizeof(pay))
		return verdict(r, MCT_ERROR, "send: len %llu too long", (unsigned long long)len);
	p.payload_len = (uint32_t)len;
	pattern(pay, (uint32_t)len, seed);
	while ((tok = strtok_r(NULL, " ", &save))) {
		eq = strchr(tok, '=');
		if (!eq)
			return verdict(r, MCT_ERROR, "send: '%s' is no field=value", tok);
		*eq = 0;
		if (!strcmp(tok, "len") || !strcmp(tok, "fill"))
			continue;
		if (!strcmp(tok, "src")) {	/* another source address */
			if (subst(r, eq + 1, sval, sizeof(sval)) ||
			    mct_addr_parse(sval, &ip.src) ||
			    ip.src.family != r->env->io.self.family)
				return verdict(r, MCT_ERROR, "send: bad src '%s'", eq + 1);
			ip.src_set = 1;
			continue;
		}
		if (eval(r, eq + 1, &v))
			return MCT_ERROR;
		if (!strcmp(tok, "trunc")) {
			trunc = v;
			continue;
		}
		if ((!strcmp(tok, "psn") || !strcmp(tok, "nakpsn")))
			v += psn_base(r, (uint8_t)op, 1);
		if (!strcmp(tok, "rawpsn"))
			tok = "psn";
		if (!strcmp(tok, "rawnakpsn"))
			tok = "nakpsn";
		if (mct_field_set(&p, tok, v) && ip_field(&ip, tok, v, 1, NULL))
			return verdict(r, MCT_ERROR, "send: unknown field '%s'", tok);
		if (!strcmp(tok, "hdrw"))
			hdrw = (int)(v & 0xff);
		if (!strcmp(tok, "paylen"))
			paylen = (int)(v & 0xffff);
	}
	/* lengths follow the fields, unless the test set them itself */
	mct_fixup(&p);
	if (hdrw >= 0)
		p.hdr_words = (uint8_t)hdrw;
	if (paylen >= 0)
		p.pay_len = (uint16_t)paylen;
	n = mct_build(&p, dg, sizeof(dg));
	if (trunc < n)
		n = trunc;
	if (!n || mct_io_send(&r->env->io, &ip, dg, n))
		return verdict(r, MCT_ERROR, "send: %s", strerror(errno));
	mct_mon_sent(&r->mon, &p, &ip);
	return MCT_PASS;
}

struct want {
	int op;
	int n;
	char key[24][16];
	uint64_t val[24];
};

static int match(const struct want *w, const struct mct_pkt *p,
		 const struct mct_ipmeta *ip)
{
	uint64_t v;

	if (p->opcode != w->op)
		return 0;
	for (int i = 0; i < w->n; i++) {
		if (!strcmp(w->key[i], "fill")) {
			uint8_t want[9000];

			if (p->payload_len > sizeof(want))
				return 0;
			pattern(want, p->payload_len, w->val[i]);
			if (memcmp(want, p->payload, p->payload_len))
				return 0;
			continue;
		}
		if (mct_field_get(p, w->key[i], &v) &&
		    ip_field((struct mct_ipmeta *)ip, w->key[i], 0, 0, &v))
			return 0;
		if (v != w->val[i])
			return 0;
	}
	return 1;
}

static void remember(struct mct_run *r, const struct mct_pkt *p,
		     const struct mct_ipmeta *ip)
{
	static const char *const keep[] = {
		"psn", "tsval", "flags", "dqpn", "sqpn", "rkey", "va", "msglen",
		"offset", "len", "imm", "rmsn", "nakpsn", "syndrome", "credit",
		"pmtu", "swap", "compare", "maxdgram", "tsecho", "delay", "ackflags",
		"cecnt", "qkey", "sackw", "sack0", "entropy", "orig",
	};
	char name[32];
	uint64_t v;

	r->last = *p;
	r->last_ip = *ip;
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		v = 0;
		mct_field_get(p, keep[i], &v);
		snprintf(name, sizeof(name), "last.%s", keep[i]);
		var_set(r, name, "0x%llx", (unsigned long long)v);
	}
	var_set(r, "last.sport", "%u", ip->sport);
	var_set(r, "last.ecn", "%u", ip->ecn);
}

/* feed one captured DUT frame to the monitors; 1 if it matches w */
static int take(struct mct_run *r, const struct mct_frame *f,
		const struct want *w, int *bad)
{
	struct mct_pkt p;

	if (mct_mon_dut(&r->mon, f)) {
		*bad = 1;
		return 0;
	}
	if (!w || mct_parse(f->udp_pay, f->udp_len, &p).reason)
		return 0;
	if (!match(w, &p, &f->ip))
		return 0;
	remember(r, &p, &f->ip);
	r->last_ns = f->t_ns;
	return 1;
}

/* OPCODE field=value ... [within MS]: what expect and none look for */
static int want_parse(struct mct_run *r, char *args, struct want *w, uint64_t *ms)
{
	char *save, *tok, *eq;
	uint64_t v;

	tok = strtok_r(args, " ", &save);
	w->op = tok ? mct_op_by_name(tok) : -1;
	if (w->op < 0)
		return verdict(r, MCT_ERROR, "unknown opcode '%s'", tok ? tok : "");
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (!strcmp(tok, "within") && ms) {
			tok = strtok_r(NULL, " ", &save);
			if (!tok || eval(r, tok, ms))
				return verdict(r, MCT_ERROR, "expect: within MS");
			continue;
		}
		eq = strchr(tok, '=');
		if (!eq || w->n == 24)
			return verdict(r, MCT_ERROR, "'%s' is no field=value", tok);
		*eq = 0;
		if (eval(r, eq + 1, &v))
			return MCT_ERROR;
		if (!strcmp(tok, "psn") || !strcmp(tok, "nakpsn"))
			v = (uint32_t)(v + psn_base(r, (uint8_t)w->op, 0));
		if (!strncmp(tok, "raw", 3) &&
		    (!strcmp(tok + 3, "psn") || !strcmp(tok + 3, "nakpsn")))
			tok += 3;	/* absolute */
		snprintf(w->key[w->n], sizeof(w->key[0]), "%s", tok);
		w->val[w->n++] = v;
	}
	return MCT_PASS;
}

/* expect OPCODE field=value ... [within MS] */
static int do_expect(struct mct_run *r, char *args)
{
	uint64_t t_end, ms = r->env->turnaround_ms;
	struct mct_frame f;
	struct want w = { 0 };
	char desc[256];
	int bad = 0;

	snprintf(desc, sizeof(desc), "%s", args);
	if (want_parse(r, args, &w, &ms))
		return MCT_ERROR;
	t_end = mct_now_ns() + ms * 1000000;
	for (;;) {
		int64_t left = (int64_t)(t_end - mct_now_ns()) / 1000000;
		int got = mct_io_recv(&r->env->io, &f, left > 0 ? (int)left : 0);

		if (got <= 0)
			return verdict(r, MCT_FAIL, "expected %s: nothing matching in %llu ms",
				       desc, (unsigned long long)ms);
		if (f.out)
			continue;
		if (take(r, &f, &w, &bad))
			return MCT_PASS;
		if (bad)
			return verdict(r, MCT_FAIL, "%s", r->mon.err);
	}
}

/*
 * none MS [OPCODE field=value ...]: the DUT sends nothing (or nothing
 * that matches) for MS milliseconds; other packets pass the monitors
 */
static int do_none(struct mct_run *r, char *args)
{
	struct want w = { 0 }, *wp = NULL;
	struct mct_frame f;
	struct mct_pkt p;
	uint64_t ms, t_end;
	char *rest, desc[256];
	int bad = 0;

	while (*args == ' ')
		args++;
	rest = args + strcspn(args, " ");
	if (*rest) {
		*rest++ = 0;
		wp = &w;
		if (want_parse(r, rest, wp, NULL))
			return MCT_ERROR;
	}
	if (eval(r, args, &ms))
		return MCT_ERROR;
	t_end = mct_now_ns() + ms * 1000000;
	for (;;) {
		int64_t left = (int64_t)(t_end - mct_now_ns()) / 1000000;

		if (left <= 0 || mct_io_recv(&r->env->io, &f, (int)left) <= 0)
			return MCT_PASS;
		if (f.out)
			continue;
		if (!take(r, &f, wp, &bad) && !bad && wp)
			continue;
		if (bad)
			return verdict(r, MCT_FAIL, "%s", r->mon.err);
		mct_parse(f.udp_pay, f.udp_len, &p);
		mct_format(&p, desc, sizeof(desc));
		return verdict(r, MCT_FAIL, "expected nothing for %llu ms, got %s",
			       (unsigned long long)ms, desc);
	}
}

/* after the body: whatever else arrives still goes past the monitors */
static int drain(struct mct_run *r, int ms)
{
	struct mct_frame f;
	int bad = 0;

	while (mct_io_recv(&r->env->io, &f, ms) > 0) {
		if (!f.out)
			take(r, &f, NULL, &bad);
		if (bad)
			return verdict(r, MCT_FAIL, "%s", r->mon.err);
	}
	return MCT_PASS;
}

/*
 * assert A OP B, OP one of == != < <= > >=: after substitution, as
 * numbers (both must be for the orderings) or, for == and !=, as words
 */
static int do_assert(struct mct_run *r, char *args)
{
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
	char a[256], b[256], op[4], sa[512], sb[512];
	uint64_t va, vb;
	int num, ok, k;

	if (sscanf(args, "%255s %3s %255s", a, op, b) != 3)
		return verdict(r, MCT_ERROR, "assert A OP B");
	for (k = 0; k < (int)ARRAY_SIZE(ops) && strcmp(op, ops[k]); k++)
		;
	if (k == (int)ARRAY_SIZE(ops))
		return verdict(r, MCT_ERROR, "assert: no operator '%s'", op);
	if (subst(r, a, sa, sizeof(sa)) || subst(r, b, sb, sizeof(sb)))
		return MCT_ERROR;
	/* numbers (or names of numbers, LAST, RNR...) when both evaluate */
	num = !eval(r, sa, &va) && !eval(r, sb, &vb);
	if (!num && k > 1)
		return verdict(r, MCT_ERROR, "assert %s %s %s: not numbers", a, op, b);
	switch (k) {
	case 0:
	case 1:
		ok = (num ? va == vb : !strcmp(sa, sb)) == (k == 0);
		break;
	case 2:
		ok = va < vb;
		break;
	case 3:
		ok = va <= vb;
		break;
	case 4:
		ok = va > vb;
		break;
	default:
		ok = va >= vb;
		break;
	}
	if (!ok)
		return verdict(r, MCT_FAIL, "assert %s %s %s: %s, %s", a, op, b, sa, sb);
	return MCT_PASS;
}

static int do_line(struct mct_run *r, char *s);

/*
 * "pre STATEMENT": a precondition that only timing can break (the DUT had
 * to do something first within a bound); its failure makes the variant
 * INCONCLUSIVE, not FAIL.
 */
static int do_pre(struct mct_run *r, char *args)
{
	char why[sizeof(r->why)];
	int res = do_line(r, args);

	if (res != MCT_FAIL)
		return res;
	snprintf(why, sizeof(why), "%s", r->why);
	return verdict(r, MCT_INCONCLUSIVE, "precondition not met: %s", why);
}

static int do_line(struct mct_run *r, char *s)
{
	char *args = s + strcspn(s, " ");
	char name[96], expr[512];
	uint64_t v;

	if (*args)
		*args++ = 0;
	while (*args == ' ' || *args == '\t')	/* "agent  x = ..." aligned */
		args++;
	if (!strcmp(s, "agent"))
		return do_agent(r, args, MCT_ERROR);
	if (!strcmp(s, "check"))
		return do_agent(r, args, MCT_FAIL);
	if (!strcmp(s, "try"))
		return do_try(r, args);
	if (!strcmp(s, "connect"))
		return do_connect(r, args);
	if (!strcmp(s, "poll"))
		return do_poll(r, args);
	if (!strcmp(s, "send"))
		return do_send(r, args);
	if (!strcmp(s, "expect"))
		return do_expect(r, args);
	if (!strcmp(s, "none")) {
		r->last_ns = 0;		/* a wait the case asks for */
		return do_none(r, args);
	}
	if (!strcmp(s, "sleep")) {
		if (eval(r, args, &v))
			return MCT_ERROR;
		usleep(v * 1000);
		r->last_ns = 0;
		return MCT_PASS;
	}
	if (!strcmp(s, "assert"))
		return do_assert(r, args);
	if (!strcmp(s, "pre"))
		return do_pre(r, args);
	if (!strcmp(s, "set")) {
		if (sscanf(args, "%95s = %511[^\n]", name, expr) != 2 ||
		    eval(r, expr, &v))
			return verdict(r, MCT_ERROR, "set NAME = EXPR");
		var_set(r, name, "0x%llx", (unsigned long long)v);
		return MCT_PASS;
	}
	return verdict(r, MCT_ERROR, "unknown statement '%s'", s);
}

static int needs_met(struct mct_run *r)
{
	char buf[256], *save, *tok;
	const char *v;

	snprintf(buf, sizeof(buf), "%s", r->tc->needs);
	for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
		int not = tok[0] == '!';	/* !key: needs the feature absent */
		int has;

		v = mct_pics_get(r->env, tok + not);
		has = v && strcmp(v, "no") && strcmp(v, "0");
		if (has == not)
			return verdict(r, 0, "PICS: %s is %s", tok + not,
				       v ? v : "not declared");
	}
	return 1;
}

/*
 * Was the tester too slow for the FAIL to count?  A DUT whose packet
 * waited longer than half its shortest timeout (PICS rto_min_us and
 * rto_init_us, 5 ms without them) for the tester's answer may have
 * resent it, rightly.  Waits the case asks for (sleep, none) do not count.
 */
static int mct_late(struct mct_run *r)
{
	static const char *const keys[] = { "rto_min_us", "rto_init_us" };
	uint64_t bound = 0, v;
	const char *s;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		s = mct_pics_get(r->env, keys[i]);
		if (s && sscanf(s, "%" SCNu64, &v) == 1 && v &&
		    (!bound || v < bound))
			bound = v;
	}
	bound = (bound ? bound : 10000) * 1000 / 2;
	if (r->lag_ns <= bound)
		return 0;
	snprintf(r->why + strlen(r->why), sizeof(r->why) - strlen(r->why),
		 "; the tester answered a DUT packet after %llu us (bound %llu us)",
		 (unsigned long long)(r->lag_ns / 1000),
		 (unsigned long long)(bound / 1000));
	return 1;
}

enum mct_result mct_case_run(struct mct_run *r)
{
	struct mct_env *env = r->env;
	char line[1024], reply[256], a[64];
	struct mct_addr other;
	int res = MCT_PASS;
	unsigned int drops;

	r->n_vars = 0;
	r->why[0] = 0;
	r->last_ns = 0;
	r->lag_ns = 0;
	mct_mon_reset(&r->mon);
	if (!needs_met(r))
		return MCT_NOT_APPLICABLE;
	env->io.self = r->family == 4 ? env->self4 : env->self6;
	env->io.peer = r->family == 4 ? env->peer4 : env->peer6;
	if (!env->io.self.family || !env->io.peer.family)
		return verdict(r, MCT_NOT_APPLICABLE, "no IPv%d addresses", r->family);
	var_set(r, "TQPN", "0x%x", TST_QPN);
	var_set(r, "DQPN", "0");
	var_set(r, "TPSN", "0x%x", r->psnwrap ? PSNWRAP_TST : 0);
	var_set(r, "DPSN", "0x%x", r->psnwrap ? PSNWRAP_DUT : 0);
	var_set(r, "PMTU", "1024");
	var_set(r, "PMTU_SHIFT", "10");
	var_set(r, "TST_IP", "%s", mct_addr_str(&env->io.self, a, sizeof(a)));
	var_set(r, "DUT_IP", "%s", mct_addr_str(&env->io.peer, a, sizeof(a)));
	/* another address on the tester's subnet, for spoofed sources */
	other = env->io.self;
	other.a.s6_addr[other.family == AF_INET ? 3 : 15] ^= 0x80;
	var_set(r, "TST_IP2", "%s", mct_addr_str(&other, a, sizeof(a)));
	if (agent_cmd(r, "RESET", reply, sizeof(reply)) || strncmp(reply, "OK", 2))
		return verdict(r, MCT_ERROR, "agent RESET: %s", reply);
	mct_io_flush(&env->io);
	mct_io_drops(&env->io);
	for (int i = 0; i < r->tc->n_lines && res == MCT_PASS; i++) {
		snprintf(line, sizeof(line), "%s", r->tc->line[i]);
		if (env->verbose)
			fprintf(stderr, " %s:%d: %s\n", r->tc->id, r->tc->lineno[i], line);
		res = do_line(r, line);
		if (res != MCT_PASS) {
			size_t n = strlen(r->why);

			snprintf(r->why + n, sizeof(r->why) - n, " (line %d)",
				 r->tc->lineno[i]);
		}
	}
	if (res == MCT_PASS)
		res = drain(r, 50);
	drops = mct_io_drops(&env->io);
	if (res == MCT_FAIL && drops) {
		size_t n = strlen(r->why);

		snprintf(r->why + n, sizeof(r->why) - n,
			 "; the capture lost %u frames", drops);
		res = MCT_INCONCLUSIVE;
	}
	if (res == MCT_FAIL && mct_late(r))
		res = MCT_INCONCLUSIVE;
	agent_cmd(r, "RESET", reply, sizeof(reply));
	return res;
}

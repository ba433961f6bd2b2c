// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrct-agent: the upper tester of the metaroce conformance suite.
 *
 * It drives the device under test through standard Verbs on behalf of the
 * lower tester (mrct), which plays the remote peer on the wire.  The two
 * speak agent protocol v1: one ASCII command line in, one reply line out
 * ("OK key=value...", "ERR <ERRNO> text" or "UNSUPPORTED text"), over a
 * UNIX stream socket or TCP.  See tests/conformance/README.md.
 *
 * Every line comes from the network: each argument is range-checked before
 * it reaches Verbs, and a bad line gets "ERR EINVAL ...", never a crash.
 * One client at a time; when it leaves, everything it created is freed.
 *
 *   mrct-agent --dev IBDEV (--unix PATH | --tcp [ADDR:]PORT | --stdio)
 *              [--once] [--port N]
 *   mrct-agent --no-dev --stdio    parser self-test: no device, MRs are
 *                                  plain memory, other objects ENODEV
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define AGENT_NAME	"mrct-agent"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#define PROTO_VERSION	1
#define MAX_OBJ		256
#define MAX_AH		64
#define MAX_LINE	16384
#define MAX_ARGS	48
#define MAX_PEEK	4096
#define MAX_MR_LEN	(1ull << 30)
#define MAX_MR_TOTAL	(1ull << 30)	/* all MRs together: a client cannot exhaust the host */
#define MAX_WR		16384
#define MAX_CQE		65536
#define MAX_POLL	64
#define MAX_POLL_MS	120000
#define UD_QKEY		0x11111111u

enum otype { T_PD, T_MR, T_CQ, T_QP, T_SRQ, T_NTYPES };
static const char *const tname[T_NTYPES] = { "pd", "mr", "cq", "qp", "srq" };

struct obj {
	bool live;
	enum otype type;
	unsigned int id;
	struct obj *pd, *cq, *srq;	/* what this object depends on */
	union {
		struct ibv_pd *pd;
		struct ibv_mr *mr;
		struct ibv_cq *cq;
		struct ibv_qp *qp;
		struct ibv_srq *srq;
	} v;
	uint8_t *buf;			/* MR memory */
	size_t len;
	enum ibv_qp_type qpt;
};

struct ah_ent {
	struct obj *pd;
	union ibv_gid dgid;
	uint8_t sgid_index;
	struct ibv_ah *ah;
};

static struct {
	const char *dev;
	int port;
	bool nodev;
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct obj obj[MAX_OBJ];
	unsigned int next_id[T_NTYPES];
	struct ah_ent ah[MAX_AH];
	uint64_t mr_total;
	char out[MAX_LINE + 256];
	size_t outlen;
	bool bye;
} A = { .port = 1 };

/* --- replies ------------------------------------------------------------ */

static void put(const char *fmt, ...) __printf(1, 2);
static void put(const char *fmt, ...)
{
	size_t room = sizeof(A.out) - A.outlen;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(A.out + A.outlen, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		A.outlen += (size_t)n < room ? (size_t)n : room - 1;
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "EIO";
}

/* Replace whatever was written so far by an error reply; returns -1. */
static int fail(int e, const char *fmt, ...) __printf(2, 3);
static int fail(int e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e == EOPNOTSUPP)
		n = snprintf(A.out, sizeof(A.out), "UNSUPPORTED ");
	else
		n = snprintf(A.out, sizeof(A.out), "ERR %s ", errname(e));
	va_start(ap, fmt);
	vsnprintf(A.out + n, sizeof(A.out) - n, fmt, ap);
	va_end(ap);
	A.outlen = strlen(A.out);
	return -1;
}

static int unsupported(const char *what)
{
	A.outlen = (size_t)snprintf(A.out, sizeof(A.out), "UNSUPPORTED %s", what);
	return -1;
}

/* --- argument parsing --------------------------------------------------- */

/* Decimal or 0x-hex, no sign, no trailing junk, at most max. */
static int num(const char *s, uint64_t max, uint64_t *v)
{
	int base = 10;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (base == 10 ? !isdigit((unsigned char)s[0]) : !isxdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, base);
	if (errno || *end || *v > max)
		return -1;
	return 0;
}

static int arg_num(const char *what, const char *s, uint64_t max, uint64_t *v)
{
	if (num(s, max, v))
		return fail(EINVAL, "bad %s '%.64s' (a number up to %llu)", what, s,
			    (unsigned long long)max);
	return 0;
}

/* An IPv4 or IPv6 address as a GID (IPv4 mapped into ::ffff:0:0/96). */
static int parse_gid(const char *s, union ibv_gid *g)
{
	struct in_addr a4;

	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET, s, &a4) == 1) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, g->raw) == 1 ? 0 : -1;
}

static bool gid_is_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

static bool gid_is_ll(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

static const char *gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	if (gid_is_v4(g))
		return inet_ntop(AF_INET, &g->raw[12], buf, len);
	return inet_ntop(AF_INET6, g->raw, buf, len);
}

/* Find a live object from its handle ("qp3"), of one of the types in mask. */
static struct obj *lookup(const char *s, unsigned int mask)
{
	uint64_t id;
	int t;

	for (t = 0; t < T_NTYPES; t++) {
		size_t n = strlen(tname[t]);
		int i;

		/* ids count from 1 and are written in plain decimal */
		if (!(mask & (1u << t)) || strncmp(s, tname[t], n) || s[n] < '1' || s[n] > '9' ||
		    num(s + n, UINT_MAX, &id))
			continue;
		for (i = 0; i < MAX_OBJ; i++)
			if (A.obj[i].live && A.obj[i].type == (enum otype)t && A.obj[i].id == id)
				return &A.obj[i];
	}
	fail(EINVAL, "no such handle '%.64s'", s);
	return NULL;
}

static struct obj *new_obj(enum otype t)
{
	int i;

	for (i = 0; i < MAX_OBJ; i++) {
		if (A.obj[i].live)
			continue;
		memset(&A.obj[i], 0, sizeof(A.obj[i]));
		A.obj[i].type = t;
		A.obj[i].id = ++A.next_id[t];
		return &A.obj[i];
	}
	fail(ENOSPC, "too many objects (%d)", MAX_OBJ);
	return NULL;
}

/*
 * key=value options.  Each key may appear once; an unknown key, a repeated
 * one or a value out of range makes the whole line an error.
 */
struct opt {
	const char *key;
	uint64_t max;		/* 0: the value is an IP address (a GID) */
	bool set;
	uint64_t v;
	union ibv_gid gid;
};

#define OPT(k, m) { .key = (k), .max = (m) }

static struct opt *opt_find(struct opt *o, const char *key)
{
	for (; o->key; o++)
		if (!strcmp(o->key, key))
			return o;
	return NULL;
}

static int parse_opts(int argc, char **argv, struct opt *tab)
{
	int i;

	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		struct opt *o;

		if (!eq)
			return fail(EINVAL, "expected key=value, got '%.64s'", argv[i]);
		*eq = 0;
		o = opt_find(tab, argv[i]);
		if (!o)
			return fail(EINVAL, "unknown option '%.64s'", argv[i]);
		if (o->set)
			return fail(EINVAL, "option %s given twice", o->key);
		o->set = true;
		if (!o->max) {
			if (parse_gid(eq + 1, &o->gid))
				return fail(EINVAL, "bad address %s='%.64s'", o->key, eq + 1);
		} else if (arg_num(o->key, eq + 1, o->max, &o->v)) {
			return -1;
		}
	}
	return 0;
}

static uint64_t opt_or(struct opt *tab, const char *key, uint64_t dflt)
{
	struct opt *o = opt_find(tab, key);

	return o && o->set ? o->v : dflt;
}

/* A byte range [off, off + len) that must lie inside the MR. */
static int mr_range(struct obj *mr, const char *off_s, const char *len_s, uint64_t maxlen,
		    uint64_t *off, uint64_t *len)
{
	if (arg_num("offset", off_s, UINT64_MAX, off) || arg_num("length", len_s, maxlen, len))
		return -1;
	if (*off > mr->len || *len > mr->len - *off)
		return fail(EINVAL, "range %llu+%llu is outside mr%u (%zu bytes)",
			    (unsigned long long)*off, (unsigned long long)*len, mr->id, mr->len);
	return 0;
}

static int need_dev(void)
{
	if (!A.ctx)
		return fail(ENODEV, "no device open");
	return 0;
}

/* --- GIDs --------------------------------------------------------------- */

enum gid_kind { G_V4, G_V6, G_LL, G_NKINDS };

/*
 * The RoCE v2 GID of each kind (IPv4, global IPv6, link-local IPv6) on our
 * port, read afresh each time: addresses come and go.  Returns how many
 * kinds were found; idx[k] is -1 for a missing one.
 */
static int scan_gids(int idx[G_NKINDS], union ibv_gid gid[G_NKINDS])
{
	struct ibv_gid_entry *e;
	struct ibv_port_attr pa;
	ssize_t n, i;
	int found = 0;

	for (i = 0; i < G_NKINDS; i++)
		idx[i] = -1;
	if (ibv_query_port(A.ctx, A.port, &pa) || pa.gid_tbl_len <= 0)
		return 0;
	e = calloc(pa.gid_tbl_len, sizeof(*e));
	if (!e)
		return 0;
	n = ibv_query_gid_table(A.ctx, e, pa.gid_tbl_len, 0);
	for (i = 0; i < n; i++) {
		int k;

		if (e[i].port_num != (uint32_t)A.port || e[i].gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		k = gid_is_v4(&e[i].gid) ? G_V4 : gid_is_ll(&e[i].gid) ? G_LL : G_V6;
		if (idx[k] >= 0 || (k == G_V6 && !e[i].gid.global.subnet_prefix))
			continue;
		idx[k] = (int)e[i].gid_index;
		gid[k] = e[i].gid;
		found++;
	}
	free(e);
	return found;
}

/* The source GID index to reach dgid: one of the same kind. */
static int sgid_for(const union ibv_gid *dgid)
{
	union ibv_gid g[G_NKINDS];
	int idx[G_NKINDS], k;

	k = gid_is_v4(dgid) ? G_V4 : gid_is_ll(dgid) ? G_LL : G_V6;
	scan_gids(idx, g);
	if (idx[k] < 0)
		return fail(EADDRNOTAVAIL, "no local RoCE v2 GID of the destination's family");
	return idx[k];
}

/* --- session commands ----------------------------------------------------- */

static int cmd_hello(int argc, char **argv)
{
	union ibv_gid g[G_NKINDS];
	int idx[G_NKINDS];
	char b[INET6_ADDRSTRLEN];
	uint64_t v;

	(void)argc;
	if (arg_num("version", argv[1], UINT_MAX, &v))
		return -1;
	if (v != PROTO_VERSION)
		return fail(EPROTONOSUPPORT, "this agent speaks version %d", PROTO_VERSION);
	put("OK agent=%s version=%d dev=%s", AGENT_NAME, PROTO_VERSION, A.dev ? A.dev : "-");
	if (A.ctx) {
		scan_gids(idx, g);
		if (idx[G_V4] >= 0)
			put(" gid=%s", gid_str(&g[G_V4], b, sizeof(b)));
		else if (idx[G_V6] >= 0)
			put(" gid=%s", gid_str(&g[G_V6], b, sizeof(b)));
		if (idx[G_V6] >= 0)
			put(" gid6=%s", gid_str(&g[G_V6], b, sizeof(b)));
	}
	put(" port=%d", A.port);
	return 0;
}

static bool dev_ud_ok(void)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd = ibv_alloc_pd(A.ctx);
	struct ibv_cq *cq = ibv_create_cq(A.ctx, 2, NULL, NULL, 0);
	struct ibv_qp *qp = NULL;

	if (pd && cq) {
		ia.send_cq = cq;
		ia.recv_cq = cq;
		qp = ibv_create_qp(pd, &ia);
	}
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return qp;
}

static int cmd_device(int argc, char **argv)
{
	struct ibv_device_attr *d = &A.attr;

	(void)argc;
	(void)argv;
	if (need_dev())
		return -1;
	put("OK max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_mr_size=%llu atomic=%d ud=%d srq=%d",
	    d->max_qp_rd_atom, d->max_qp_init_rd_atom, (unsigned long long)d->max_mr_size,
	    d->atomic_cap != IBV_ATOMIC_NONE, dev_ud_ok(), d->max_srq > 0);
	put(" max_sge=%d max_qp_wr=%d max_cqe=%d max_srq_wr=%d", d->max_sge, d->max_qp_wr,
	    d->max_cqe, d->max_srq_wr);
	return 0;
}

/* --- objects ------------------------------------------------------------ */

static int cmd_pd(int argc, char **argv)
{
	struct obj *o = new_obj(T_PD);

	(void)argc;
	(void)argv;
	if (!o)
		return -1;
	if (A.ctx) {
		o->v.pd = ibv_alloc_pd(A.ctx);
		if (!o->v.pd)
			return fail(errno ? errno : ENOMEM, "ibv_alloc_pd failed");
	} else if (!A.nodev) {
		return need_dev();
	}
	o->live = true;
	put("OK pd=pd%u", o->id);
	return 0;
}

static int parse_access(const char *s, int *acc)
{
	char buf[64], *tok, *save;

	*acc = 0;
	if (!strcmp(s, "-") || !strcmp(s, "0"))
		return 0;
	if (strlen(s) >= sizeof(buf))
		return fail(EINVAL, "access list too long");
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "LW"))
			*acc |= IBV_ACCESS_LOCAL_WRITE;
		else if (!strcmp(tok, "RW"))
			*acc |= IBV_ACCESS_REMOTE_WRITE;
		else if (!strcmp(tok, "RR"))
			*acc |= IBV_ACCESS_REMOTE_READ;
		else if (!strcmp(tok, "RA"))
			*acc |= IBV_ACCESS_REMOTE_ATOMIC;
		else
			return fail(EINVAL, "bad access '%.16s' (LW,RW,RR,RA)", tok);
	}
	return 0;
}

/* MR <pd> <len> <access>: a zeroed, page-aligned buffer, registered */
static int cmd_mr(int argc, char **argv)
{
	struct obj *pd = lookup(argv[1], 1u << T_PD), *o;
	uint64_t len;
	int acc;
	void *buf;

	(void)argc;
	if (!pd || arg_num("length", argv[2], MAX_MR_LEN, &len) || parse_access(argv[3], &acc))
		return -1;
	if (!len)
		return fail(EINVAL, "length 0");
	if (len > MAX_MR_TOTAL - A.mr_total)
		return fail(ENOMEM, "MRs would exceed %llu bytes together",
			    (unsigned long long)MAX_MR_TOTAL);
	o = new_obj(T_MR);
	if (!o)
		return -1;
	if (posix_memalign(&buf, 4096, (len + 4095) & ~4095ull))
		return fail(ENOMEM, "no memory for %llu bytes", (unsigned long long)len);
	memset(buf, 0, len);
	if (pd->v.pd) {
		o->v.mr = ibv_reg_mr(pd->v.pd, buf, len, acc);
		if (!o->v.mr) {
			int e = errno ? errno : EINVAL;

			free(buf);
			return fail(e, "ibv_reg_mr failed");
		}
	}
	o->buf = buf;
	o->len = len;
	A.mr_total += len;
	o->pd = pd;
	o->live = true;
	put("OK mr=mr%u addr=0x%llx lkey=0x%x rkey=0x%x", o->id,
	    (unsigned long long)(uintptr_t)buf, o->v.mr ? o->v.mr->lkey : 0,
	    o->v.mr ? o->v.mr->rkey : 0);
	return 0;
}

static int cmd_cq(int argc, char **argv)
{
	struct obj *o;
	uint64_t depth;

	(void)argc;
	if (arg_num("depth", argv[1], MAX_CQE, &depth))
		return -1;
	if (!depth)
		return fail(EINVAL, "depth 0");
	if (need_dev())
		return -1;
	o = new_obj(T_CQ);
	if (!o)
		return -1;
	o->v.cq = ibv_create_cq(A.ctx, (int)depth, NULL, NULL, 0);
	if (!o->v.cq)
		return fail(errno ? errno : ENOMEM, "ibv_create_cq failed");
	o->live = true;
	put("OK cq=cq%u", o->id);
	return 0;
}

/* SRQ <pd> <max_wr> */
static int cmd_srq(int argc, char **argv)
{
	struct obj *pd = lookup(argv[1], 1u << T_PD), *o;
	struct ibv_srq_init_attr ia = { .attr = { .max_sge = 1 } };
	uint64_t wr;

	(void)argc;
	if (!pd || arg_num("max_wr", argv[2], MAX_WR, &wr))
		return -1;
	if (!wr)
		return fail(EINVAL, "max_wr 0");
	if (need_dev())
		return -1;
	if (!A.attr.max_srq)
		return unsupported("the device has no SRQ");
	o = new_obj(T_SRQ);
	if (!o)
		return -1;
	ia.attr.max_wr = (uint32_t)wr;
	o->v.srq = ibv_create_srq(pd->v.pd, &ia);
	if (!o->v.srq)
		return fail(errno ? errno : ENOMEM, "ibv_create_srq failed");
	o->pd = pd;
	o->live = true;
	put("OK srq=srq%u", o->id);
	return 0;
}

/* QP <pd> <cq> RC|UD <max_send_wr> <max_recv_wr> [srq=<h>] */
static int cmd_qp(int argc, char **argv)
{
	struct obj *pd = lookup(argv[1], 1u << T_PD), *cq, *srq = NULL, *o;
	struct ibv_qp_init_attr ia = { .cap = { .max_send_sge = 1, .max_recv_sge = 1 } };
	uint64_t sw, rw;

	if (!pd)
		return -1;
	cq = lookup(argv[2], 1u << T_CQ);
	if (!cq)
		return -1;
	if (!strcmp(argv[3], "RC"))
		ia.qp_type = IBV_QPT_RC;
	else if (!strcmp(argv[3], "UD"))
		ia.qp_type = IBV_QPT_UD;
	else
		return fail(EINVAL, "bad QP type '%.16s' (RC or UD)", argv[3]);
	if (arg_num("max_send_wr", argv[4], MAX_WR, &sw) ||
	    arg_num("max_recv_wr", argv[5], MAX_WR, &rw))
		return -1;
	if (argc > 6) {
		if (argc > 7 || strncmp(argv[6], "srq=", 4))
			return fail(EINVAL, "the only option is srq=<handle>");
		srq = lookup(argv[6] + 4, 1u << T_SRQ);
		if (!srq)
			return -1;
	}
	if (!sw || (!rw && !srq))
		return fail(EINVAL, "a queue of 0 work requests");
	o = new_obj(T_QP);
	if (!o)
		return -1;
	ia.send_cq = cq->v.cq;
	ia.recv_cq = cq->v.cq;
	ia.srq = srq ? srq->v.srq : NULL;
	ia.cap.max_send_wr = (uint32_t)sw;
	ia.cap.max_recv_wr = srq ? 0 : (uint32_t)rw;
	o->v.qp = ibv_create_qp(pd->v.pd, &ia);
	if (!o->v.qp)
		return fail(errno ? errno : ENOMEM, "ibv_create_qp failed");
	o->pd = pd;
	o->cq = cq;
	o->srq = srq;
	o->qpt = ia.qp_type;
	o->live = true;
	put("OK qp=qp%u qpn=0x%x", o->id, o->v.qp->qp_num);
	return 0;
}

static void ah_drop(struct obj *pd)
{
	int i;

	for (i = 0; i < MAX_AH; i++) {
		if (!A.ah[i].ah || (pd && A.ah[i].pd != pd))
			continue;
		ibv_destroy_ah(A.ah[i].ah);
		A.ah[i].ah = NULL;
	}
}

static bool in_use(struct obj *o)
{
	int i;

	for (i = 0; i < MAX_OBJ; i++) {
		struct obj *u = &A.obj[i];

		if (u->live && (u->pd == o || u->cq == o || u->srq == o))
			return true;
	}
	return false;
}

static int destroy(struct obj *o)
{
	int e = 0;

	switch (o->type) {
	case T_PD:
		ah_drop(o);
		e = o->v.pd ? ibv_dealloc_pd(o->v.pd) : 0;
		break;
	case T_MR:
		e = o->v.mr ? ibv_dereg_mr(o->v.mr) : 0;
		if (!e) {
			free(o->buf);
			A.mr_total -= o->len;
		}
		break;
	case T_CQ:
		e = ibv_destroy_cq(o->v.cq);
		break;
	case T_QP:
		e = ibv_destroy_qp(o->v.qp);
		break;
	case T_SRQ:
		e = ibv_destroy_srq(o->v.srq);
		break;
	default:
		break;
	}
	if (e)
		return fail(e, "destroying %s%u failed", tname[o->type], o->id);
	o->live = false;
	return 0;
}

static int cmd_destroy(int argc, char **argv)
{
	struct obj *o = lookup(argv[1], (1u << T_NTYPES) - 1);

	(void)argc;
	if (!o)
		return -1;
	if (in_use(o))
		return fail(EBUSY, "%s%u is still in use", tname[o->type], o->id);
	if (destroy(o))
		return -1;
	put("OK");
	return 0;
}

/* Everything, dependents first; the handle numbers start again at 1. */
static int reset_all(void)
{
	static const enum otype order[] = { T_QP, T_SRQ, T_MR, T_CQ, T_PD };
	int bad = 0;
	size_t k;
	int i;

	ah_drop(NULL);
	for (k = 0; k < ARRAY_SIZE(order); k++)
		for (i = 0; i < MAX_OBJ; i++)
			if (A.obj[i].live && A.obj[i].type == order[k] && destroy(&A.obj[i])) {
				A.obj[i].live = false;	/* leaked, but never reused */
				bad++;
			}
	memset(A.next_id, 0, sizeof(A.next_id));
	if (bad)
		return fail(EIO, "%d objects could not be destroyed", bad);
	return 0;
}

static int cmd_reset(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (reset_all())
		return -1;
	put("OK");
	return 0;
}

static int cmd_bye(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	A.bye = true;
	put("OK");
	return 0;
}

/* --- QP state ----------------------------------------------------------- */

static int mtu_enum(uint64_t bytes)
{
	static const uint64_t sz[] = { 256, 512, 1024, 2048, 4096 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sz); i++)
		if (bytes == sz[i])
			return IBV_MTU_256 + (int)i;
	return -1;
}

static int modify(struct obj *qp, struct ibv_qp_attr *a, int mask, const char *to)
{
	int e = ibv_modify_qp(qp->v.qp, a, mask);

	if (e)
		return fail(e, "qp%u to %s failed", qp->id, to);
	return 0;
}

static int to_init(struct obj *qp, struct opt *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	/* a QP that was used before starts again from RESET */
	if (!ibv_query_qp(qp->v.qp, &q, IBV_QP_STATE, &qi) && q.qp_state != IBV_QPS_RESET &&
	    modify(qp, &a, IBV_QP_STATE, "RESET"))
		return -1;
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)A.port;
	if (qp->qpt == IBV_QPT_UD) {
		a.qkey = (uint32_t)opt_or(o, "qkey", UD_QKEY);
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return modify(qp, &a, mask, "INIT");
}

static int rc_rtr(struct obj *qp, struct opt *o)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct opt *dgid = opt_find(o, "dgid");
	int sgid, mtu, rd, mask, tries, e = 0;

	if (ibv_query_port(A.ctx, A.port, &pa))
		return fail(errno ? errno : EIO, "ibv_query_port failed");
	mtu = opt_find(o, "pmtu")->set ? mtu_enum(opt_find(o, "pmtu")->v) : (int)pa.active_mtu;
	if (mtu < 0)
		return fail(EINVAL, "pmtu must be 256, 512, 1024, 2048 or 4096");
	sgid = sgid_for(&dgid->gid);
	if (sgid < 0)
		return -1;
	a.path_mtu = mtu;
	a.dest_qp_num = (uint32_t)opt_find(o, "dqpn")->v;
	a.rq_psn = (uint32_t)opt_find(o, "rq_psn")->v;
	rd = A.attr.max_qp_rd_atom < 16 ? A.attr.max_qp_rd_atom : 16;
	a.max_dest_rd_atomic = (uint8_t)opt_or(o, "max_dest_rd_atomic", rd);
	a.min_rnr_timer = (uint8_t)opt_or(o, "min_rnr", 12);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = (uint8_t)A.port;
	a.ah_attr.grh.dgid = dgid->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)sgid;
	a.ah_attr.grh.hop_limit = (uint8_t)opt_or(o, "hop_limit", 64);
	a.ah_attr.grh.traffic_class = (uint8_t)opt_or(o, "tclass", 0);
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	/*
	 * RTR resolves the peer's MAC: the first time (IPv6 neighbour
	 * discovery especially) that can time out while the answer is on
	 * its way.  Ask again for a while before giving up.
	 */
	for (tries = 0; tries < 20; tries++) {
		e = ibv_modify_qp(qp->v.qp, &a, mask);
		if (e != ETIMEDOUT)
			break;
	}
	if (e)
		return fail(e, "qp%u to RTR failed", qp->id);
	return 0;
}

static int rc_rts(struct obj *qp, struct opt *o)
{
	int rd = A.attr.max_qp_init_rd_atom < 16 ? A.attr.max_qp_init_rd_atom : 16;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = (uint32_t)opt_find(o, "sq_psn")->v,
		.timeout = (uint8_t)opt_or(o, "timeout", 14),
		.retry_cnt = (uint8_t)opt_or(o, "retry", 7),
		.rnr_retry = (uint8_t)opt_or(o, "rnr_retry", 7),
		.max_rd_atomic = (uint8_t)opt_or(o, "max_rd_atomic", rd),
	};

	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

static int ud_rtr_rts(struct obj *qp, struct opt *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	if (modify(qp, &a, IBV_QP_STATE, "RTR"))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = (uint32_t)opt_find(o, "sq_psn")->v;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
}

/*
 * CONNECT <qp> dgid=<ip> dqpn=<n> rq_psn=<n> sq_psn=<n> [pmtu= timeout= retry=
 * rnr_retry= min_rnr= max_rd_atomic= max_dest_rd_atomic= hop_limit= tclass=
 * qkey= upto=INIT|RTR]: RESET -> INIT -> RTR -> RTS, or only as far as upto=
 * (a QP left in INIT or RTR, for the state tests).  UD needs only sq_psn.
 */
static int cmd_connect(int argc, char **argv)
{
	struct opt o[] = {
		OPT("dgid", 0), OPT("dqpn", 0xffffff), OPT("rq_psn", 0xffffff),
		OPT("sq_psn", 0xffffff), OPT("pmtu", 4096), OPT("timeout", 31), OPT("retry", 7),
		OPT("rnr_retry", 7), OPT("min_rnr", 31), OPT("max_rd_atomic", 255),
		OPT("max_dest_rd_atomic", 255), OPT("hop_limit", 255), OPT("tclass", 255),
		OPT("qkey", UINT32_MAX), OPT("upto", 4), { .key = NULL }
	};
	struct obj *qp = lookup(argv[1], 1u << T_QP);
	static const char *const rc_need[] = { "dgid", "dqpn", "rq_psn", "sq_psn" };
	uint64_t upto;
	size_t i;

	if (!qp || parse_opts(argc - 2, argv + 2, o))
		return -1;
	/* upto=1 (INIT), 2 (RTR); the ibv_qp_state numbers */
	upto = opt_or(o, "upto", IBV_QPS_RTS);
	if (upto < IBV_QPS_INIT)
		return fail(EINVAL, "upto= is 1 (INIT), 2 (RTR) or 3 (RTS)");
	for (i = 0; i < ARRAY_SIZE(rc_need); i++)
		if ((qp->qpt == IBV_QPT_RC || i == 3) && !opt_find(o, rc_need[i])->set)
			return fail(EINVAL, "%s= is required", rc_need[i]);
	if (to_init(qp, o))
		return -1;
	if (upto == IBV_QPS_INIT)
		goto done;
	if (qp->qpt == IBV_QPT_UD ? ud_rtr_rts(qp, o) : rc_rtr(qp, o))
		return -1;
	if (qp->qpt == IBV_QPT_RC && upto == IBV_QPS_RTS && rc_rts(qp, o))
		return -1;
done:
	put("OK");
	return 0;
}

static const char *state_str(enum ibv_qp_state s)
{
	static const char *const n[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned int)s < ARRAY_SIZE(n) && n[s] ? n[s] : "UNKNOWN";
}

/* MODIFY <qp> state=ERR|RESET|SQD|RTS (SQD and RTS: between RTS and SQD) */
static int cmd_modify(int argc, char **argv)
{
	struct obj *qp = lookup(argv[1], 1u << T_QP);
	struct ibv_qp_attr a = { 0 };

	(void)argc;
	if (!qp)
		return -1;
	if (!strcmp(argv[2], "state=ERR"))
		a.qp_state = IBV_QPS_ERR;
	else if (!strcmp(argv[2], "state=RESET"))
		a.qp_state = IBV_QPS_RESET;
	else if (!strcmp(argv[2], "state=SQD"))
		a.qp_state = IBV_QPS_SQD;
	else if (!strcmp(argv[2], "state=RTS"))
		a.qp_state = IBV_QPS_RTS;
	else
		return fail(EINVAL, "only state=ERR, RESET, SQD or RTS");
	if (modify(qp, &a, IBV_QP_STATE, state_str(a.qp_state)))
		return -1;
	put("OK");
	return 0;
}

static int cmd_query(int argc, char **argv)
{
	struct obj *qp = lookup(argv[1], 1u << T_QP);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int e;

	(void)argc;
	if (!qp)
		return -1;
	e = ibv_query_qp(qp->v.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
			 IBV_QP_DEST_QPN, &ia);
	if (e)
		return fail(e, "ibv_query_qp failed");
	put("OK state=%s sq_psn=0x%x rq_psn=0x%x dqpn=0x%x", state_str(a.qp_state), a.sq_psn,
	    a.rq_psn, a.dest_qp_num);
	return 0;
}

/* --- memory ------------------------------------------------------------- */

/* The suite's data pattern: byte i of a range (i from its start). */
static uint8_t pat(uint64_t seed, uint64_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* FILL|CHECK <mr> <off> <len> <seed> */
static int cmd_fill_check(int argc, char **argv)
{
	struct obj *mr = lookup(argv[1], 1u << T_MR);
	uint64_t off, len, seed, i;

	(void)argc;
	if (!mr || mr_range(mr, argv[2], argv[3], MAX_MR_LEN, &off, &len) ||
	    arg_num("seed", argv[4], UINT64_MAX, &seed))
		return -1;
	for (i = 0; i < len; i++) {
		uint8_t want = pat(seed, i);

		if (argv[0][0] == 'F')
			mr->buf[off + i] = want;
		else if (mr->buf[off + i] != want)
			return fail(EBADMSG, "first mismatch at %llu (want 0x%02x got 0x%02x)",
				    (unsigned long long)i, want, mr->buf[off + i]);
	}
	put("OK");
	return 0;
}

static int cmd_peek(int argc, char **argv)
{
	struct obj *mr = lookup(argv[1], 1u << T_MR);
	uint64_t off, len, i;

	(void)argc;
	if (!mr || mr_range(mr, argv[2], argv[3], MAX_PEEK, &off, &len))
		return -1;
	put("OK hex=");
	for (i = 0; i < len; i++)
		put("%02x", mr->buf[off + i]);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* POKE <mr> <off> <hex> */
static int cmd_poke(int argc, char **argv)
{
	struct obj *mr = lookup(argv[1], 1u << T_MR);
	size_t n = strlen(argv[3]), i;
	uint64_t off;
	char len[24];

	(void)argc;
	if (!mr)
		return -1;
	if (n % 2 || n / 2 > MAX_PEEK)
		return fail(EINVAL, "hex must have an even number of digits, at most %d bytes",
			    MAX_PEEK);
	snprintf(len, sizeof(len), "%zu", n / 2);
	if (mr_range(mr, argv[2], len, MAX_PEEK, &off, &(uint64_t){ 0 }))
		return -1;
	for (i = 0; i < n; i++)
		if (hexval(argv[3][i]) < 0)
			return fail(EINVAL, "bad hex digit at %zu", i);
	for (i = 0; i < n / 2; i++)
		mr->buf[off + i] = (uint8_t)(hexval(argv[3][2 * i]) << 4 |
					     hexval(argv[3][2 * i + 1]));
	put("OK");
	return 0;
}

/* --- work requests ------------------------------------------------------ */

enum { F_REMOTE = 1, F_ATOMIC = 2, F_IMM = 4, F_INV = 8, F_UD = 16 };

static const struct sop {
	const char *name;
	enum ibv_wr_opcode op;
	unsigned int flags;
} sops[] = {
	{ "SEND", IBV_WR_SEND, F_UD },
	{ "SEND_IMM", IBV_WR_SEND_WITH_IMM, F_IMM | F_UD },
	{ "SEND_INV", IBV_WR_SEND_WITH_INV, F_INV },
	{ "WRITE", IBV_WR_RDMA_WRITE, F_REMOTE },
	{ "WRITE_IMM", IBV_WR_RDMA_WRITE_WITH_IMM, F_REMOTE | F_IMM },
	{ "READ", IBV_WR_RDMA_READ, F_REMOTE },
	{ "CMP_SWP", IBV_WR_ATOMIC_CMP_AND_SWP, F_REMOTE | F_ATOMIC },
	{ "FETCH_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, F_REMOTE | F_ATOMIC },
};

static struct ibv_ah *get_ah(struct obj *qp, const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = (uint8_t)A.port };
	struct ah_ent *free_slot = NULL;
	int i, sgid = sgid_for(dgid);

	if (sgid < 0)
		return NULL;
	for (i = 0; i < MAX_AH; i++) {
		struct ah_ent *e = &A.ah[i];

		if (!e->ah) {
			free_slot = free_slot ? free_slot : e;
			continue;
		}
		if (e->pd == qp->pd && e->sgid_index == sgid && !memcmp(&e->dgid, dgid, 16))
			return e->ah;
	}
	if (!free_slot) {
		fail(ENOSPC, "too many address handles (%d)", MAX_AH);
		return NULL;
	}
	aa.grh.dgid = *dgid;
	aa.grh.sgid_index = (uint8_t)sgid;
	aa.grh.hop_limit = 64;
	free_slot->ah = ibv_create_ah(qp->pd->v.pd, &aa);
	if (!free_slot->ah) {
		fail(errno ? errno : EINVAL, "ibv_create_ah failed");
		return NULL;
	}
	free_slot->pd = qp->pd;
	free_slot->dgid = *dgid;
	free_slot->sgid_index = (uint8_t)sgid;
	return free_slot->ah;
}

static int wr_opts(struct obj *qp, const struct sop *op, struct opt *o, struct ibv_send_wr *wr,
		   struct ibv_sge *sge)
{
	if ((op->flags & F_REMOTE) && (!opt_find(o, "raddr")->set || !opt_find(o, "rkey")->set))
		return fail(EINVAL, "%s needs raddr= and rkey=", op->name);
	if ((op->flags & F_IMM) && !opt_find(o, "imm")->set)
		return fail(EINVAL, "%s needs imm=", op->name);
	if ((op->flags & F_INV) && !opt_find(o, "inv")->set)
		return fail(EINVAL, "%s needs inv=", op->name);
	if (op->flags & F_ATOMIC) {
		if (sge->length != 8 || sge->addr % 8)
			return fail(EINVAL, "an atomic needs an 8-byte, 8-aligned local range");
		if (!A.attr.atomic_cap)
			return unsupported("the device has no atomics");
		wr->wr.atomic.remote_addr = opt_or(o, "raddr", 0);
		wr->wr.atomic.rkey = (uint32_t)opt_or(o, "rkey", 0);
		wr->wr.atomic.compare_add = opt_or(o, op->op == IBV_WR_ATOMIC_CMP_AND_SWP ?
						   "compare" : "add", 0);
		wr->wr.atomic.swap = opt_or(o, "swap", 0);
	} else if (op->flags & F_REMOTE) {
		wr->wr.rdma.remote_addr = opt_or(o, "raddr", 0);
		wr->wr.rdma.rkey = (uint32_t)opt_or(o, "rkey", 0);
	}
	if (op->flags & F_IMM)
		wr->imm_data = htonl((uint32_t)opt_or(o, "imm", 0));
	if (op->flags & F_INV)
		wr->invalidate_rkey = (uint32_t)opt_or(o, "inv", 0);
	if (qp->qpt == IBV_QPT_UD) {
		if (!(op->flags & F_UD))
			return fail(EINVAL, "%s is not a UD operation", op->name);
		if (!opt_find(o, "ah_dgid")->set || !opt_find(o, "ah_dqpn")->set)
			return fail(EINVAL, "UD needs ah_dgid= and ah_dqpn=");
		wr->wr.ud.ah = get_ah(qp, &opt_find(o, "ah_dgid")->gid);
		if (!wr->wr.ud.ah)
			return -1;
		wr->wr.ud.remote_qpn = (uint32_t)opt_or(o, "ah_dqpn", 0);
		wr->wr.ud.remote_qkey = (uint32_t)opt_or(o, "qkey", UD_QKEY);
	}
	if (opt_or(o, "signaled", 1))
		wr->send_flags |= IBV_SEND_SIGNALED;
	if (opt_or(o, "solicited", 0))
		wr->send_flags |= IBV_SEND_SOLICITED;
	if (opt_or(o, "fence", 0))
		wr->send_flags |= IBV_SEND_FENCE;
	return 0;
}

/* POST_SEND <qp> <wr_id> <op> <mr> <off> <len> [key=value...] */
static int cmd_post_send(int argc, char **argv)
{
	struct opt o[] = {
		OPT("raddr", UINT64_MAX), OPT("rkey", UINT32_MAX), OPT("imm", UINT32_MAX),
		OPT("inv", UINT32_MAX), OPT("compare", UINT64_MAX), OPT("swap", UINT64_MAX),
		OPT("add", UINT64_MAX), OPT("signaled", 1), OPT("solicited", 1), OPT("fence", 1),
		OPT("ah_dgid", 0), OPT("ah_dqpn", 0xffffff), OPT("qkey", UINT32_MAX),
		{ .key = NULL }
	};
	struct obj *qp = lookup(argv[1], 1u << T_QP), *mr;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	const struct sop *op = NULL;
	uint64_t off, len;
	size_t i;
	int e;

	if (!qp || arg_num("wr_id", argv[2], UINT64_MAX, &wr.wr_id))
		return -1;
	for (i = 0; i < ARRAY_SIZE(sops); i++)
		if (!strcmp(argv[3], sops[i].name))
			op = &sops[i];
	if (!op)
		return fail(EINVAL, "bad operation '%.16s'", argv[3]);
	mr = lookup(argv[4], 1u << T_MR);
	if (!mr || mr_range(mr, argv[5], argv[6], UINT32_MAX, &off, &len) ||
	    parse_opts(argc - 7, argv + 7, o))
		return -1;
	sge.addr = (uintptr_t)mr->buf + off;
	sge.length = (uint32_t)len;
	sge.lkey = mr->v.mr->lkey;
	wr.opcode = op->op;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	if (wr_opts(qp, op, o, &wr, &sge))
		return -1;
	e = ibv_post_send(qp->v.qp, &wr, &bad);
	if (e)
		return fail(e, "ibv_post_send failed");
	put("OK");
	return 0;
}

/* POST_RECV <qp|srq> <wr_id> <mr> <off> <len> */
static int cmd_post_recv(int argc, char **argv)
{
	struct obj *q = lookup(argv[1], 1u << T_QP | 1u << T_SRQ), *mr;
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	uint64_t off, len;
	int e;

	(void)argc;
	if (!q || arg_num("wr_id", argv[2], UINT64_MAX, &wr.wr_id))
		return -1;
	mr = lookup(argv[3], 1u << T_MR);
	if (!mr || mr_range(mr, argv[4], argv[5], UINT32_MAX, &off, &len))
		return -1;
	if (q->type == T_QP && q->srq)
		return fail(EINVAL, "qp%u receives from srq%u", q->id, q->srq->id);
	sge.addr = (uintptr_t)mr->buf + off;
	sge.length = (uint32_t)len;
	sge.lkey = mr->v.mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	if (q->type == T_SRQ)
		e = ibv_post_srq_recv(q->v.srq, &wr, &bad);
	else
		e = ibv_post_recv(q->v.qp, &wr, &bad);
	if (e)
		return fail(e, "posting the receive failed");
	put("OK");
	return 0;
}

/* --- completions -------------------------------------------------------- */

static const char *wc_status(enum ibv_wc_status s)
{
	static const char *const n[] = {
		[IBV_WC_SUCCESS] = "SUCCESS", [IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
		[IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
		[IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
		[IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR", [IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
		[IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR", [IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
		[IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
		[IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
		[IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR", [IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
		[IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
		[IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR", [IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
		[IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR", [IBV_WC_FATAL_ERR] = "FATAL_ERR",
		[IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
		[IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
		[IBV_WC_TM_ERR] = "TM_ERR", [IBV_WC_TM_RNDV_INCOMPLETE] = "TM_RNDV_INCOMPLETE",
	};

	return (unsigned int)s < ARRAY_SIZE(n) && n[s] ? n[s] : "UNKNOWN";
}

static const char *wc_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "UNKNOWN";
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * POLL <cq> <max> <timeout_ms>: collect completions until there are max of
 * them or timeout_ms has passed (0: look once), then report them all.
 */
static int cmd_poll(int argc, char **argv)
{
	struct obj *cq = lookup(argv[1], 1u << T_CQ);
	struct ibv_wc wc[MAX_POLL];
	uint64_t max, to, end;
	int n = 0, i;

	(void)argc;
	if (!cq || arg_num("max", argv[2], MAX_POLL, &max) ||
	    arg_num("timeout_ms", argv[3], MAX_POLL_MS, &to))
		return -1;
	end = now_ms() + to;
	while ((uint64_t)n < max) {
		int k = ibv_poll_cq(cq->v.cq, (int)max - n, wc + n);

		if (k < 0)
			return fail(EIO, "ibv_poll_cq failed");
		n += k;
		if ((uint64_t)n >= max || now_ms() >= end)
			break;
		if (!k)
			nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	put("OK n=%d", n);
	for (i = 0; i < n; i++) {
		put(" wc=%llu:%s:%s:%u:", (unsigned long long)wc[i].wr_id, wc_status(wc[i].status),
		    wc[i].status == IBV_WC_SUCCESS ? wc_opcode(wc[i].opcode) : "-",
		    wc[i].byte_len);
		if (wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_WITH_IMM))
			put("0x%x", ntohl(wc[i].imm_data));
		else if (wc[i].status == IBV_WC_SUCCESS && (wc[i].wc_flags & IBV_WC_WITH_INV))
			put("0x%x", wc[i].invalidated_rkey);
		else
			put("-");
		put(":0x%x", wc[i].qp_num);
	}
	return 0;
}

/* --- dispatch ----------------------------------------------------------- */

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	int min, max;		/* argument counts, the command word included */
} cmds[] = {
	{ "HELLO", cmd_hello, 2, 2 },
	{ "DEVICE", cmd_device, 1, 1 },
	{ "PD", cmd_pd, 1, 1 },
	{ "MR", cmd_mr, 4, 4 },
	{ "CQ", cmd_cq, 2, 2 },
	{ "SRQ", cmd_srq, 3, 3 },
	{ "QP", cmd_qp, 6, 7 },
	{ "CONNECT", cmd_connect, 2, 18 },
	{ "MODIFY", cmd_modify, 3, 3 },
	{ "QUERY", cmd_query, 2, 2 },
	{ "FILL", cmd_fill_check, 5, 5 },
	{ "CHECK", cmd_fill_check, 5, 5 },
	{ "PEEK", cmd_peek, 4, 4 },
	{ "POKE", cmd_poke, 4, 4 },
	{ "POST_SEND", cmd_post_send, 7, 7 + 16 },
	{ "POST_RECV", cmd_post_recv, 6, 6 },
	{ "POLL", cmd_poll, 4, 4 },
	{ "DESTROY", cmd_destroy, 2, 2 },
	{ "RESET", cmd_reset, 1, 1 },
	{ "BYE", cmd_bye, 1, 1 },
};

/* One command line (NUL-terminated, no newline) into A.out. */
static void run_line(char *line)
{
	char *argv[MAX_ARGS + 1], *save, *tok;
	int argc = 0;
	size_t i;

	A.outlen = 0;
	A.out[0] = 0;
	for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (argc == MAX_ARGS) {
			fail(EINVAL, "too many arguments");
			return;
		}
		argv[argc++] = tok;
	}
	if (!argc) {
		fail(EINVAL, "empty line");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[0], cmds[i].name))
			continue;
		if (argc < cmds[i].min || argc > cmds[i].max) {
			fail(EINVAL, "%s takes %d to %d arguments", cmds[i].name, cmds[i].min - 1,
			     cmds[i].max - 1);
			return;
		}
		errno = 0;
		cmds[i].fn(argc, argv);
		return;
	}
	fail(EINVAL, "unknown command");
}

/* --- transport ---------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int reply(int fd)
{
	if (A.outlen >= sizeof(A.out) - 1)
		A.outlen = sizeof(A.out) - 2;
	A.out[A.outlen++] = '\n';
	return write_all(fd, A.out, A.outlen);
}

/*
 * Serve one client until BYE or EOF; a line longer than MAX_LINE is
 * answered once and skipped up to its newline.
 */
static void serve(int in, int out)
{
	static char buf[MAX_LINE + 1];
	size_t have = 0;
	bool skipping = false;

	A.bye = false;
	while (!A.bye) {
		char *nl;
		ssize_t k = read(in, buf + have, MAX_LINE - have);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		have += (size_t)k;
		while (!A.bye && (nl = memchr(buf, '\n', have))) {
			size_t used = (size_t)(nl - buf) + 1;

			*nl = 0;
			A.outlen = 0;
			if (skipping)
				skipping = false;
			else if (strlen(buf) != used - 1)
				fail(EINVAL, "NUL byte in line");
			else
				run_line(buf);
			if (A.outlen && reply(out))
				goto out;
			A.outlen = 0;
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (have == MAX_LINE) {
			if (!skipping) {
				fail(EINVAL, "line longer than %d bytes", MAX_LINE);
				if (reply(out))
					break;
				A.outlen = 0;
			}
			skipping = true;
			have = 0;
		}
	}
out:
	reset_all();
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, AGENT_NAME ": socket path too long\n");
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
		perror(AGENT_NAME ": unix socket");
		return -1;
	}
	return fd;
}

/* [ADDR:]PORT, ADDR an IPv4 address, [IPv6] or a name; default any */
static int listen_tcp(const char *spec)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	char host[256] = "", *port, *h = host;
	int fd, one = 1, e;

	snprintf(host, sizeof(host), "%s", spec);
	port = strrchr(host, ':');
	if (port) {
		*port++ = 0;
		if (*h == '[' && h[strlen(h) - 1] == ']') {
			h[strlen(h) - 1] = 0;
			h++;
		}
	} else {
		port = host;
		h = NULL;
	}
	e = getaddrinfo(h && *h ? h : NULL, port, &hints, &ai);
	if (e) {
		fprintf(stderr, AGENT_NAME ": %s: %s\n", spec, gai_strerror(e));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1)) {
		perror(AGENT_NAME ": tcp socket");
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int open_dev(const char *name)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list) {
		perror(AGENT_NAME ": ibv_get_device_list");
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i < n)
		A.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!A.ctx || ibv_query_device(A.ctx, &A.attr)) {
		fprintf(stderr, AGENT_NAME ": cannot open device %s\n", name);
		return -1;
	}
	return 0;
}

static void help_exit(void)
{
	fprintf(stderr,
		"usage: " AGENT_NAME " --dev IBDEV [--port N] (--unix PATH | --tcp [ADDR:]PORT |\n"
		"                  --stdio) [--once]\n"
		"       " AGENT_NAME " --no-dev --stdio     (parser self-test, no device)\n"
		"Agent protocol v1: see tests/conformance/README.md.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' }, { "port", 1, 0, 'p' }, { "unix", 1, 0, 'u' },
		{ "tcp", 1, 0, 't' }, { "stdio", 0, 0, 's' }, { "once", 0, 0, 'o' },
		{ "no-dev", 0, 0, 'n' }, { "help", 0, 0, 'h' }, { 0 }
	};
	const char *unix_path = NULL, *tcp = NULL;
	bool stdio = false, once = false;
	int c, lfd;

	while ((c = getopt_long(argc, argv, "d:p:u:t:sonh", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			A.dev = optarg;
			break;
		case 'p':
			A.port = atoi(optarg);
			break;
		case 'u':
			unix_path = optarg;
			break;
		case 't':
			tcp = optarg;
			break;
		case 's':
			stdio = true;
			break;
		case 'o':
			once = true;
			break;
		case 'n':
			A.nodev = true;
			break;
		default:
			help_exit();
		}
	}
	if (optind != argc || (!A.dev == !A.nodev) || (!!unix_path + !!tcp + stdio) != 1 ||
	    A.port < 1 || A.port > 255)
		help_exit();
	signal(SIGPIPE, SIG_IGN);
	if (A.dev && open_dev(A.dev))
		return 1;
	if (stdio) {
		serve(0, 1);
		return 0;
	}
	lfd = unix_path ? listen_unix(unix_path) : listen_tcp(tcp);
	if (lfd < 0)
		return 1;
	fprintf(stderr, AGENT_NAME ": %s listening on %s\n", A.dev ? A.dev : "-",
		unix_path ? unix_path : tcp);
	do {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror(AGENT_NAME ": accept");
			return 1;
		}
		serve(fd, fd);
		close(fd);
	} while (!once);
	close(lfd);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_verify: data-integrity test for RC queue pairs over libibverbs.
 *
 *   server: mrc_verify -d DEV -g GIDX [-p PORT]
 *   client: mrc_verify -d DEV -g GIDX [-p PORT] [options] SERVER-ADDR
 *
 * The two processes meet over a TCP control connection (the client sends
 * the shared parameters), connect --qps RC QPs, and then both act as
 * requester and responder at once.  Each direction of each QP runs a
 * random but deterministic stream of operations (SEND, SEND_WITH_IMM,
 * RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, CMP_AND_SWP, FETCH_AND_ADD)
 * derived from (seed, direction, qp): both sides generate the same stream,
 * so the responder knows what every message must contain and the
 * requester knows what every READ and atomic must return.  Every byte and
 * every completion field is checked.  See usage() for the options.
 *
 * Flow control: the responder reports over TCP how far it has verified
 * the stream; the requester never overruns the responder's write-target
 * slots or receive buffers, so the test needs no RNR retries.
 *
 * Other modes (--mode) provoke error completions for the error tests:
 * badrkey, retry, rnr, rdlimit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "mrc_ctl.h"

#define NSGE_MAX	16		/* --max-sge at most */
#define GUARD		64		/* poisoned bytes checked around targets */
#define POISON		0xa5
#define INL_POISON	0x5a		/* overwrites an inline source after posting */
#define NCNT		64		/* atomic counters per QP and direction */
#define RING		(1u << 16)	/* ops kept per stream */
#define FORCE_NOTIFY	32		/* a receive-consuming op at least this often */
#define SLACK		8192		/* room for offsets and SGE gaps in a slot */
#define RECV_BIT	(1ull << 63)
#define IDX_MASK	((1ull << 40) - 1)
#define CTL_MAGIC	0x4d524356u	/* "MRCV" */
#define CTL_VERSION	6

enum optype {
	OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS, OP_FAA,
	OP_NR
};

static const char *const op_name[OP_NR] = {
	"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
	"RDMA_READ", "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD",
};

static const char *const op_short[OP_NR] = {
	"send", "send_imm", "write", "write_imm", "read", "cas", "faa",
};

enum mode { MODE_VERIFY, MODE_BADRKEY, MODE_RETRY, MODE_RNR, MODE_RDLIMIT };
static const char *const mode_name[] = { "verify", "badrkey", "retry", "rnr", "rdlimit" };

/* ------------------------------------------------------------------------ */
/* options                                                                   */

/* shared parameters: the client's values are sent to the server */
struct params {
	uint32_t magic, version;
	uint32_t mode;
	uint32_t qps;
	uint32_t max_size;
	uint32_t window;
	uint32_t ops_mask;
	uint32_t mtu;			/* bytes, 0: the ports' active MTU */
	uint32_t inline_size;
	uint32_t timeout;		/* QP local ACK timeout exponent */
	uint32_t retry_cnt;
	uint32_t rnr_retry;
	uint32_t min_rnr_timer;
	uint32_t rnr_delay_ms;
	uint32_t max_rd_atomic;
	uint32_t dirs;			/* bit 0: client requests, bit 1: server */
	uint32_t max_sge;		/* SGEs per work request, at most */
	uint32_t min_size;		/* messages drawn below it grow to it */
	uint64_t seed;
	uint64_t iters;
	uint64_t duration_ms;
};

static struct params P = {
	.magic = CTL_MAGIC, .version = CTL_VERSION,
	.mode = MODE_VERIFY, .qps = 2, .max_size = 1u << 20, .window = 8,
	.ops_mask = (1u << OP_NR) - 1, .inline_size = 128,
	.timeout = 17, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 12,
	.rnr_delay_ms = 300, .max_rd_atomic = 16, .dirs = 3, .max_sge = 4,
	.iters = 0,
};

static struct {
	const char *dev;
	int ib_port;
	int gid_idx;
	const char *server;
	int tcp_port;
	bool seed_set;
	bool busy;
	bool lax_sq_len;
	double stall_s;
	unsigned max_errors;
	const char *go_file;
	double start_at;		/* CLOCK_REALTIME second to start at */
	const char *start_file;		/* or: start once this file exists */
	int64_t corrupt;		/* self-test: damage this op of ours */
	double rate_bps;		/* per QP, requests' payload; 0: no limit */
	int verbose;
	const char *role;
} O = {
	.ib_port = 1, .gid_idx = -1, .tcp_port = 18600, .stall_s = 60, .corrupt = -1,
	.max_errors = 1,
};

/* ------------------------------------------------------------------------ */
/* utilities                                                                  */

static double t_start;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "mrc_verify[%s %.3f]: ", O.role, mrc_now_s() - t_start);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mrc_verify[%s]: FATAL: ", O.role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	printf("MRC_VERIFY_RESULT role=%s mode=%s status=FAIL reason=fatal\n",
	       O.role, mode_name[P.mode]);
	fflush(stdout);
	exit(2);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s);
}

static uint32_t rnd_below(uint64_t *s, uint64_t n)
{
	uint64_t r = rnd(s);

	return n ? (uint32_t)(r % n) : 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

/* the largest gap between SGE pieces: all of them fit the slot's slack */
static uint32_t sge_gap(void)
{
	return 4096 / P.max_sge;
}

/* ------------------------------------------------------------------------ */
/* data patterns                                                              */

/* key of message IDX of direction DIR on QP: every byte depends on it */
static uint64_t msg_key(int dir, unsigned qp, uint64_t idx)
{
	return mix64(P.seed ^ mix64(0x100000000ull + ((uint64_t)dir << 20) + qp) ^
		     mix64(idx + 0x1234567ull));
}

/* key of the static READ source of direction DIR on QP */
static uint64_t read_key(int dir, unsigned qp)
{
	return mix64(P.seed ^ mix64(0x200000000ull + ((uint64_t)dir << 20) + qp));
}

static uint64_t counter_init(int dir, unsigned qp, unsigned c)
{
	return mix64(P.seed ^ mix64(0x300000000ull + ((uint64_t)dir << 20) +
				    ((uint64_t)qp << 8) + c));
}

static uint64_t pat_word(uint64_t key, uint64_t w)
{
	return mix64(key + (w + 1) * 0x9e3779b97f4a7c15ull);
}

static uint8_t pat_byte(uint64_t key, uint64_t off)
{
	return (uint8_t)(pat_word(key, off >> 3) >> ((off & 7) * 8));
}

/*
 * The pattern's bytes are each word's bytes, least significant first: a
 * little-endian 64-bit store.  The helpers below move whole words (the
 * test bed's guest is emulated, where a byte loop costs as much CPU as
 * the transport under test); bytes off the word grid go one by one.
 */
static uint64_t pat_le(uint64_t w)
{
	return htole64(w);
}

static void pat_fill(uint8_t *p, uint64_t key, uint64_t off, size_t len)
{
	while (len && (off & 7)) {
		*p++ = pat_byte(key, off++);
		len--;
	}
	while (len >= 8) {
		uint64_t w = pat_le(pat_word(key, off >> 3));

		memcpy(p, &w, 8);
		p += 8;
		off += 8;
		len -= 8;
	}
	while (len--)
		*p++ = pat_byte(key, off++);
}

/* wrong bytes of the pattern word W (little-endian) against P[b..e) */
static size_t pat_check_word(const uint8_t *p, uint64_t w, unsigned b,
			     unsigned e, size_t at, size_t *first, size_t bad)
{
	for (; b < e; b++, p++, at++) {
		if (*p != (uint8_t)(w >> (8 * b))) {
			if (!bad)
				*first = at;
			bad++;
		}
	}
	return bad;
}

/*
 * Compare P[0..len) with the pattern at offset OFF.  Returns the number of
 * wrong bytes; *first gets the index of the first one.
 */
static size_t pat_check(const uint8_t *p, uint64_t key, uint64_t off, size_t len,
			size_t *first)
{
	size_t i = 0, bad = 0;
	unsigned b = off & 7;

	if (b && len) {
		unsigned e = len < 8 - b ? b + (unsigned)len : 8;

		bad = pat_check_word(p, pat_word(key, off >> 3), b, e, 0, first,
				     bad);
		i = e - b;
	}
	while (len - i >= 8) {
		uint64_t w = pat_word(key, (off + i) >> 3), v;

		memcpy(&v, p + i, 8);
		if (v != pat_le(w))
			bad = pat_check_word(p + i, w, 0, 8, i, first, bad);
		i += 8;
	}
	if (i < len)
		bad = pat_check_word(p + i, pat_word(key, (off + i) >> 3), 0,
				     (unsigned)(len - i), i, first, bad);
	return bad;
}

/* index of the first byte of P[0..len) that is not VAL, or -1 */
static long not_byte(const uint8_t *p, size_t len, uint8_t val)
{
	uint64_t all = 0x0101010101010101ull * val, v;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&v, p + i, 8);
		if (v != all)
			break;
	}
	for (; i < len; i++)
		if (p[i] != val)
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* the deterministic operation stream of one direction of one QP              */

struct op {
	uint64_t idx;
	uint64_t widx;			/* write index (WRITE, WRITE_IMM) */
	uint64_t nidx;			/* receive index (SEND*, WRITE_IMM) */
	uint64_t cmp, val, oldv, newv;	/* atomics */
	uint32_t len;
	uint32_t roff;			/* offset in write slot / read source */
	uint32_t imm;
	uint32_t loff[NSGE_MAX], llen[NSGE_MAX];	/* requester's SGEs */
	uint16_t cnt;			/* atomic counter */
	uint8_t type, nsge;
	bool inl, sig, rkey0, notify, is_write;
	bool end_ok;			/* no unannounced WRITE before the next op */
	bool forced;
};

struct stream {
	uint64_t rng;
	uint64_t gen;			/* ops generated */
	uint64_t nwrites, nnotify;
	unsigned since_notify, writes_since;
	uint64_t model[NCNT];
	struct op *ring;
	int dir;
	unsigned qp;
	uint32_t slot;			/* slot size */
	uint32_t pmtu;
	uint64_t forced;
};

static uint32_t slot_size;
static uint32_t path_mtu_bytes;

static const bool op_notifies[OP_NR] = {
	[OP_SEND] = true, [OP_SEND_IMM] = true, [OP_WRITE_IMM] = true,
};

static void stream_init(struct stream *s, int dir, unsigned qp)
{
	unsigned c;

	memset(s, 0, sizeof(*s));
	s->ring = calloc(RING, sizeof(*s->ring));
	if (!s->ring)
		die("out of memory");
	s->rng = mix64(P.seed ^ mix64(0x400000000ull + ((uint64_t)dir << 20) + qp));
	s->dir = dir;
	s->qp = qp;
	s->slot = slot_size;
	s->pmtu = path_mtu_bytes;
	for (c = 0; c < NCNT; c++)
		s->model[c] = counter_init(dir, qp, c);
}

static uint32_t draw_len(struct stream *s)
{
	uint32_t max = P.max_size, x = rnd_below(&s->rng, 100);
	uint32_t r1 = rnd_below(&s->rng, 1u << 30), r2 = rnd_below(&s->rng, 1u << 30);
	unsigned bits = 0, b;
	uint32_t hi, lo;

	if (x < 6)
		return 0;
	if (x < 10)
		return max;
	if (x < 20 && s->pmtu) {	/* around a multiple of the path MTU */
		uint64_t v = (uint64_t)s->pmtu * (1 + r1 % 8) + (r2 % 3) - 1;

		return v > max ? max : (uint32_t)v;
	}
	while (bits < 31 && (1u << bits) < max)
		bits++;
	b = r1 % (bits + 1);
	hi = b >= 31 ? max : min_u32(max, 1u << b);
	lo = hi / 2;
	return lo + r2 % (hi - lo + 1);
}

/* a drawn size, raised to --min-size (tests that need whole segments) */
static uint32_t pick_len(struct stream *s)
{
	uint32_t len = draw_len(s);

	return len < P.min_size ? P.min_size : len;
}

/* ops per signaled completion and per forced notify, at least one */
static uint32_t half_window(void)
{
	return P.window > 1 ? P.window / 2 : 1;
}

static void gen_next(struct stream *s)
{
	struct op *o = &s->ring[s->gen & (RING - 1)];
	unsigned allowed[OP_NR], nallowed = 0, notif[3], nnotif = 0, t, k;
	uint32_t rem, cursor;
	uint64_t r;
	bool force;

	memset(o, 0, sizeof(*o));
	o->idx = s->gen++;
	for (t = 0; t < OP_NR; t++) {
		if (!(P.ops_mask & (1u << t)))
			continue;
		allowed[nallowed++] = t;
		if (op_notifies[t])
			notif[nnotif++] = t;
	}
	force = s->writes_since >= half_window() ||
		s->since_notify >= FORCE_NOTIFY - 1;
	r = rnd(&s->rng);
	if (force) {
		o->type = nnotif ? notif[r % nnotif] : OP_SEND;
		o->forced = true;
		s->forced++;
	} else {
		o->type = allowed[r % nallowed];
	}
	o->notify = op_notifies[o->type];
	o->is_write = o->type == OP_WRITE || o->type == OP_WRITE_IMM;

	if (o->type == OP_CAS || o->type == OP_FAA) {
		o->len = 8;
		o->cnt = rnd_below(&s->rng, NCNT);
		o->oldv = s->model[o->cnt];
		r = rnd(&s->rng);
		o->val = rnd(&s->rng);
		if (o->type == OP_CAS) {
			o->cmp = (r & 1) ? o->oldv : o->oldv ^ (r | 2);
			o->newv = o->cmp == o->oldv ? o->val : o->oldv;
		} else {
			if (r & 1)	/* small increments too */
				o->val &= 0xffff;
			o->newv = o->oldv + o->val;
		}
		s->model[o->cnt] = o->newv;
		o->nsge = 1;
		o->loff[0] = GUARD + 8 * rnd_below(&s->rng, 4096 / 8);
		o->llen[0] = 8;
	} else {
		o->len = pick_len(s);
	}

	r = rnd(&s->rng);
	if (o->is_write) {
		o->widx = s->nwrites++;
		/* zero-length WRITEs may carry rkey 0 and address 0 (C9-88) */
		o->rkey0 = o->len == 0 &&
			   (o->type == OP_WRITE_IMM ? (r & 3) != 0 : (r & 1) != 0);
		o->roff = GUARD + rnd_below(&s->rng, s->slot - 2 * GUARD - o->len + 1);
	} else if (o->type == OP_READ) {
		o->roff = rnd_below(&s->rng, s->slot - o->len + 1);
	}
	if (o->notify)
		o->nidx = s->nnotify++;
	if (o->type == OP_SEND_IMM || o->type == OP_WRITE_IMM)
		o->imm = (uint32_t)rnd(&s->rng);

	/* the requester's gather (or READ scatter) list inside its slot */
	if (o->type != OP_CAS && o->type != OP_FAA && o->len) {
		o->nsge = 1 + rnd_below(&s->rng, min_u32(P.max_sge, o->len));
		cursor = GUARD + rnd_below(&s->rng, 4096);
		rem = o->len;
		for (k = 0; k < o->nsge; k++) {
			uint32_t left = o->nsge - k - 1, piece;

			piece = left ? 1 + rnd_below(&s->rng, rem - left) : rem;
			o->loff[k] = cursor;
			o->llen[k] = piece;
			rem -= piece;
			cursor += piece + (left ? rnd_below(&s->rng, sge_gap()) : 0);
		}
	}

	r = rnd(&s->rng);
	o->inl = o->len && o->len <= P.inline_size && (r & 1) &&
		 o->type <= OP_WRITE_IMM;
	o->sig = (o->idx % half_window()) == half_window() - 1 || ((r >> 8) & 3) == 0;

	if (o->notify) {
		s->since_notify = 0;
		s->writes_since = 0;
	} else {
		s->since_notify++;
		if (o->is_write)
			s->writes_since++;
	}
	o->end_ok = s->writes_since == 0;
}

static struct op *op_at(struct stream *s, uint64_t i)
{
	while (s->gen <= i)
		gen_next(s);
	if (i + RING <= s->gen)
		die("internal: op %" PRIu64 " of stream dir %d qp %u fell out of the ring (gen %" PRIu64 ")",
		    i, s->dir, s->qp, s->gen);
	return &s->ring[i & (RING - 1)];
}

/* ------------------------------------------------------------------------ */
/* control connection                                                         */

enum ctl_type {
	CTL_READY = 1,		/* QPs are at RTS, receives posted */
	CTL_CREDIT,		/* qp, a = ops verified, b = writes, c = recvs */
	CTL_END,		/* qp, a = number of ops in the stream */
	CTL_DONE,		/* a = ops, b = bytes, c = errors, d = cqes */
	CTL_ERR,		/* the sender failed */
	CTL_POSTED,		/* rnr mode: the client posted on qp */
	CTL_WARM,		/* special modes: warm-up finished */
	CTL_RTS,		/* special modes: QPs are at RTS */
};

struct ctl {
	uint32_t magic;
	uint32_t type;
	uint32_t qp;
	uint32_t pad;
	uint64_t a, b, c, d;
};

static int ctl_fd = -1;
static uint8_t ctl_buf[sizeof(struct ctl) * 64];
static size_t ctl_have;
static bool ctl_eof;

static void write_all(int fd, const void *buf, size_t len)
{
	if (mrc_xfer(fd, (void *)buf, len, true))
		die("control connection: write: %s", strerror(errno));
}

static void read_all(int fd, void *buf, size_t len)
{
	if (mrc_xfer(fd, buf, len, false))
		die("control connection: read: %s", strerror(errno));
}

static void ctl_send(uint32_t type, uint32_t qp, uint64_t a, uint64_t b,
		     uint64_t c, uint64_t d)
{
	struct ctl m = { .magic = CTL_MAGIC, .type = type, .qp = qp,
			 .a = a, .b = b, .c = c, .d = d };

	if (ctl_eof)
		return;
	write_all(ctl_fd, &m, sizeof(m));
}

/*
 * Read what is there without blocking; returns the next message in *m if a
 * whole one arrived.  Sets ctl_eof when the peer closed the connection.
 */
static bool ctl_next(struct ctl *m)
{
	if (ctl_have < sizeof(*m) && !ctl_eof) {
		ssize_t n = recv(ctl_fd, ctl_buf + ctl_have,
				 sizeof(ctl_buf) - ctl_have, MSG_DONTWAIT);

		if (n == 0)
			ctl_eof = true;
		else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			ctl_eof = true;
		else if (n > 0)
			ctl_have += n;
	}
	if (ctl_have < sizeof(*m))
		return false;
	memcpy(m, ctl_buf, sizeof(*m));
	memmove(ctl_buf, ctl_buf + sizeof(*m), ctl_have - sizeof(*m));
	ctl_have -= sizeof(*m);
	if (m->magic != CTL_MAGIC)
		die("control connection: bad message magic 0x%x", m->magic);
	return true;
}

static void ctl_connect(void)
{
	const char *why;

	if (!O.server)
		msg("listening on TCP port %d", O.tcp_port);
	ctl_fd = mrc_ctl_open(O.server, O.tcp_port, 20, &why);
	if (ctl_fd < 0)
		die("control connection, %s port %d: %s", O.server ? O.server : "listening on",
		    O.tcp_port, why);
}

/* ------------------------------------------------------------------------ */
/* verbs resources                                                            */

struct wire_side {
	uint8_t gid[16];
	uint32_t lid;
	uint32_t active_mtu;		/* bytes */
	uint32_t max_inline;
	uint32_t pad;
};

struct wire_qp {
	uint32_t qpn, psn;
	uint64_t wtgt_addr, rsrc_addr, atom_addr;
	uint32_t wtgt_rkey, rsrc_rkey, atom_rkey, pad;
};

struct rlayout {			/* one posted receive */
	uint8_t nsge;
	uint32_t off[NSGE_MAX], len[NSGE_MAX];
	uint32_t start, end;		/* extent of the pieces in the slot */
	uint32_t total;
};

struct qpc {
	unsigned idx;
	struct ibv_qp *qp;
	uint32_t psn;
	uint8_t *src, *wtgt, *rbuf, *rsrc;
	uint64_t *atom;
	struct ibv_mr *src_mr, *wtgt_mr, *rbuf_mr, *rsrc_mr, *atom_mr;
	struct wire_qp rem;
	uint64_t lrng;			/* local choices (receive layouts) */

	/* requester side: our stream */
	struct stream req;
	uint64_t posted, completed;
	uint64_t posted_bytes;		/* payload of the requests posted */
	uint64_t *sigq;			/* signaled ops in flight, in order */
	unsigned sig_head, sig_n;
	uint64_t end;			/* ops in our stream, once decided */
	bool end_sent;
	uint64_t cr_ops, cr_writes, cr_recvs;	/* credits from the peer */

	/* responder side: the peer's stream */
	struct stream rsp;
	uint64_t vops, vwrites, vrecvs;	/* verified */
	uint64_t rpost_next;		/* next receive index to post */
	uint64_t rpost_cursor;		/* op scan cursor for receives */
	struct rlayout *rl;		/* per receive slot */
	uint64_t peer_end;
	bool peer_end_known;
	bool credit_dirty;
	bool atom_checked;
	uint64_t vmodel[NCNT];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *chan;
static struct ibv_cq *cq;
static struct qpc *Q;
static struct ibv_port_attr port_attr;
static union ibv_gid my_gid;
static struct wire_side peer_side;
static uint32_t max_inline_got;
static int my_dir;			/* 0: client, 1: server */

static struct {
	uint64_t ops[OP_NR];		/* our ops completed */
	uint64_t forced;
	uint64_t bytes_req;		/* payload of our ops */
	uint64_t ops_rsp;		/* peer ops verified by us */
	uint64_t bytes_rsp;
	uint64_t cqes;
	uint64_t errors;
	uint64_t zero_sge_recvs;
	uint64_t inline_ops;
	uint64_t rkey0_ops;
} S;

static bool g_abort;
static uint64_t q_total_ops(void);

static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "mrc_verify[%s %.3f]: ERROR: ", O.role, mrc_now_s() - t_start);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	S.errors++;
	if (S.errors >= O.max_errors)
		g_abort = true;
}

static enum ibv_mtu mtu_enum(uint32_t b)
{
	switch (b) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	die("bad MTU %u", b);
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;
}

static void *alloc_region(size_t len, uint8_t fill)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	memset(p, fill, len);
	return p;
}

static struct ibv_mr *reg(void *addr, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		die("ibv_reg_mr %s (%zu bytes): %s", what, len, strerror(errno));
	if (!mr->rkey && (access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_ATOMIC)))
		error("MR %s got rkey 0 (rkeys must never be 0)", what);
	return mr;
}

static void open_device(void)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!O.dev || !strcmp(ibv_get_device_name(list[i]), O.dev))
			break;
	if (i == n)
		die("device %s not found", O.dev ? O.dev : "(any)");
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device %s: %s", ibv_get_device_name(list[i]), strerror(errno));
	O.dev = strdup(ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	if (ibv_query_port(ctx, O.ib_port, &port_attr))
		die("ibv_query_port: %s", strerror(errno));
	if (port_attr.state != IBV_PORT_ACTIVE)
		die("port %d of %s is not ACTIVE (%s)", O.ib_port, O.dev,
		    ibv_port_state_str(port_attr.state));
	if (O.gid_idx < 0)
		die("-g GID-INDEX is required");
	if (ibv_query_gid(ctx, O.ib_port, O.gid_idx, &my_gid))
		die("ibv_query_gid %d: %s", O.gid_idx, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	chan = ibv_create_comp_channel(ctx);
	if (!chan)
		die("ibv_create_comp_channel: %s", strerror(errno));
	fcntl(chan->fd, F_SETFL, fcntl(chan->fd, F_GETFL) | O_NONBLOCK);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	cq = ibv_create_cq(ctx, P.qps * (2 * P.window + 4) + 16, NULL, chan, 0);
	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
}

static void create_qp(struct qpc *q, unsigned idx)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
		.cap = { .max_send_wr = P.window + 1, .max_recv_wr = P.window + 1,
			 .max_send_sge = P.max_sge, .max_recv_sge = P.max_sge,
			 .max_inline_data = P.inline_size },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = O.ib_port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	size_t region = (size_t)P.window * slot_size;
	unsigned c;

	memset(q, 0, sizeof(*q));
	q->idx = idx;
	q->qp = ibv_create_qp(pd, &ia);
	if (!q->qp)
		die("ibv_create_qp: %s", strerror(errno));
	if (ia.cap.max_inline_data < P.inline_size)
		die("QP granted max_inline_data %u < %u requested", ia.cap.max_inline_data,
		    P.inline_size);
	max_inline_got = ia.cap.max_inline_data;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify QP %u to INIT: %s", idx, strerror(errno));

	q->lrng = mix64(P.seed ^ (0x500000000ull + ((uint64_t)my_dir << 20) + idx));
	/* half of the QPs start just below the 24-bit PSN wrap */
	q->psn = (idx & 1) ? 0xffffff - rnd_below(&q->lrng, 300)
			   : rnd_below(&q->lrng, 0x1000000);

	q->src = alloc_region(region, POISON);
	q->wtgt = alloc_region(region, POISON);
	q->rbuf = alloc_region(region, POISON);
	q->rsrc = alloc_region(slot_size, 0);
	q->atom = alloc_region(4096, 0);
	pat_fill(q->rsrc, read_key(!my_dir, idx), 0, slot_size);
	for (c = 0; c < NCNT; c++) {
		q->atom[c] = counter_init(!my_dir, idx, c);
		q->vmodel[c] = q->atom[c];
	}
	q->src_mr = reg(q->src, region, IBV_ACCESS_LOCAL_WRITE, "src");
	q->wtgt_mr = reg(q->wtgt, region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			 "write target");
	q->rbuf_mr = reg(q->rbuf, region, IBV_ACCESS_LOCAL_WRITE, "recv");
	q->rsrc_mr = reg(q->rsrc, slot_size, IBV_ACCESS_REMOTE_READ, "read source");
	q->atom_mr = reg(q->atom, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
			 "atomic");
	q->sigq = calloc(P.window + 1, sizeof(*q->sigq));
	q->rl = calloc(P.window, sizeof(*q->rl));
	if (!q->sigq || !q->rl)
		die("out of memory");
	q->end = UINT64_MAX;
}

static void connect_qp(struct qpc *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu_enum(path_mtu_bytes),
		.dest_qp_num = q->rem.qpn,
		.rq_psn = q->rem.psn,
		.max_dest_rd_atomic = P.max_rd_atomic,
		.min_rnr_timer = P.min_rnr_timer,
		.ah_attr = {
			.is_global = 1,
			.port_num = O.ib_port,
			.grh = { .sgid_index = O.gid_idx, .hop_limit = 64 },
		},
	};
	int tries;

	memcpy(a.ah_attr.grh.dgid.raw, peer_side.gid, 16);
	a.ah_attr.dlid = peer_side.lid;
	/* rdlimit: the server's responders get 1 and 0 READ/atomic resources */
	if (P.mode == MODE_RDLIMIT && !O.server)
		a.max_dest_rd_atomic = q->idx == 0 ? 1 : 0;
	for (tries = 0;; tries++) {
		if (!ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			break;
		if (errno != ETIMEDOUT || tries > 10)
			die("modify QP %u to RTR: %s", q->idx, strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->psn;
	a.timeout = P.timeout;
	a.retry_cnt = P.retry_cnt;
	a.rnr_retry = P.rnr_retry;
	a.max_rd_atomic = P.max_rd_atomic;
	/* rnr mode: the second QP retries RNR forever */
	if (P.mode == MODE_RNR && q->idx == 1)
		a.rnr_retry = 7;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify QP %u to RTS: %s", q->idx, strerror(errno));
}

static void setup(void)
{
	struct wire_side me = { .lid = port_attr.lid };
	struct wire_qp *wq;
	uint32_t act;
	unsigned i;

	ctl_connect();
	if (O.server) {
		write_all(ctl_fd, &P, sizeof(P));
	} else {
		struct params p;

		read_all(ctl_fd, &p, sizeof(p));
		if (p.magic != CTL_MAGIC || p.version != CTL_VERSION)
			die("peer speaks another protocol (magic 0x%x version %u)", p.magic,
			    p.version);
		P = p;
	}
	if (P.window < 1 || P.window > 1024 || P.qps < 1 || P.qps > 4096 ||
	    P.max_sge < 1 || P.max_sge > NSGE_MAX ||
	    P.max_rd_atomic < 1 || P.max_rd_atomic > 255)
		die("bad window/qps/max_sge/rd-atomic");
	slot_size = ((P.max_size + SLACK) + 4095) & ~4095u;

	open_device();
	act = mtu_bytes(port_attr.active_mtu);
	memcpy(me.gid, my_gid.raw, 16);
	me.active_mtu = act;
	write_all(ctl_fd, &me, sizeof(me));
	read_all(ctl_fd, &peer_side, sizeof(peer_side));
	path_mtu_bytes = min_u32(act, peer_side.active_mtu);
	if (P.mtu)
		path_mtu_bytes = min_u32(path_mtu_bytes, P.mtu);
	mtu_enum(path_mtu_bytes);

	Q = calloc(P.qps, sizeof(*Q));
	wq = calloc(P.qps, sizeof(*wq));
	if (!Q || !wq)
		die("out of memory");
	for (i = 0; i < P.qps; i++) {
		struct qpc *q = &Q[i];

		create_qp(q, i);
		wq[i] = (struct wire_qp){
			.qpn = q->qp->qp_num, .psn = q->psn,
			.wtgt_addr = (uintptr_t)q->wtgt, .wtgt_rkey = q->wtgt_mr->rkey,
			.rsrc_addr = (uintptr_t)q->rsrc, .rsrc_rkey = q->rsrc_mr->rkey,
			.atom_addr = (uintptr_t)q->atom, .atom_rkey = q->atom_mr->rkey,
		};
	}
	write_all(ctl_fd, wq, P.qps * sizeof(*wq));
	read_all(ctl_fd, wq, P.qps * sizeof(*wq));
	for (i = 0; i < P.qps; i++) {
		Q[i].rem = wq[i];
		stream_init(&Q[i].req, my_dir, i);
		stream_init(&Q[i].rsp, !my_dir, i);
		connect_qp(&Q[i]);
	}
	free(wq);
	msg("%s port %d gid %d: %u QPs (first qpn %u -> peer %u), path MTU %u, slot %u bytes, max_inline %u",
	    O.dev, O.ib_port, O.gid_idx, P.qps, Q[0].qp->qp_num, Q[0].rem.qpn,
	    path_mtu_bytes, slot_size, max_inline_got);
}

/* wait for one control message of TYPE (blocking), skipping nothing else */
static void ctl_wait(uint32_t type, struct ctl *out)
{
	struct ctl m;

	for (;;) {
		if (ctl_next(&m)) {
			if (m.type == CTL_ERR)
				die("the peer reported a failure");
			if (m.type != type)
				die("control: expected message %u, got %u", type, m.type);
			if (out)
				*out = m;
			return;
		}
		if (ctl_eof)
			die("control connection closed by the peer");
		{
			struct pollfd pf = { .fd = ctl_fd, .events = POLLIN };

			poll(&pf, 1, 1000);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* async events                                                               */

static void check_async(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		switch (ev.event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			msg("async event %s", ibv_event_type_str(ev.event_type));
			break;
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			break;
		default:
			if (P.mode == MODE_VERIFY)
				error("async event %s", ibv_event_type_str(ev.event_type));
			else
				msg("async event %s", ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
}

/* ------------------------------------------------------------------------ */
/* verify mode: requester                                                     */

static uint8_t *src_slot(struct qpc *q, uint64_t i)
{
	return q->src + (size_t)(i % P.window) * slot_size;
}

static uint8_t *wtgt_slot(struct qpc *q, uint64_t widx)
{
	return q->wtgt + (size_t)(widx % P.window) * slot_size;
}

static uint8_t *rbuf_slot(struct qpc *q, uint64_t j)
{
	return q->rbuf + (size_t)(j % P.window) * slot_size;
}

static void op_desc(char *buf, size_t len, const char *side, struct qpc *q,
		    const struct op *o)
{
	snprintf(buf, len, "%s qp %u op %" PRIu64 " (%s len %u nsge %u roff %u%s%s%s)",
		 side, q->idx, o->idx, op_name[o->type], o->len, o->nsge, o->roff,
		 o->inl ? " inline" : "", o->rkey0 ? " rkey0" : "",
		 o->forced ? " forced" : "");
}

static bool may_post(struct qpc *q, struct op *o)
{
	if (o->idx >= q->completed + P.window)
		return false;
	if (o->is_write && o->widx >= q->cr_writes + P.window)
		return false;
	if (o->notify && o->nidx >= q->cr_recvs + P.window)
		return false;
	return true;
}

/* post what the window and the peer's credits allow; returns ops posted */
static int requester_post(struct qpc *q, double now)
{
	struct ibv_send_wr wrs[64], *bad = NULL;
	struct ibv_sge sges[64][NSGE_MAX];
	struct op *ops[64];
	unsigned n = 0, k, i;
	int ret;

	if (!(P.dirs & (1u << my_dir)) && q->end == UINT64_MAX)
		q->end = 0;	/* this side only responds */
	while (q->end == UINT64_MAX && n < 64 && !g_abort) {
		struct op *o = op_at(&q->req, q->posted + n);
		struct ibv_send_wr *wr = &wrs[n];
		uint8_t *slot;
		bool stop;
		uint64_t off = 0;

		if (!may_post(q, o))
			break;
		/* --rate: post no faster than the rate, counted from the start */
		if (O.rate_bps &&
		    (double)q->posted_bytes * 8 > O.rate_bps * (now - t_start))
			break;
		q->posted_bytes += o->len;
		memset(wr, 0, sizeof(*wr));
		slot = src_slot(q, o->idx);
		for (k = 0; k < o->nsge; k++) {
			sges[n][k].addr = (uintptr_t)(slot + o->loff[k]);
			sges[n][k].length = o->llen[k];
			sges[n][k].lkey = q->src_mr->lkey;
		}
		wr->wr_id = ((uint64_t)q->idx << 40) | o->idx;
		wr->sg_list = o->nsge ? sges[n] : NULL;
		wr->num_sge = o->nsge;
		switch (o->type) {
		case OP_SEND:
		case OP_SEND_IMM:
		case OP_WRITE:
		case OP_WRITE_IMM:
			for (k = 0; k < o->nsge; k++) {
				pat_fill(slot + o->loff[k], msg_key(my_dir, q->idx, o->idx), off,
					 o->llen[k]);
				off += o->llen[k];
			}
			break;
		case OP_READ:
		case OP_CAS:
		case OP_FAA:
			if (o->nsge) {
				uint32_t end = o->loff[o->nsge - 1] + o->llen[o->nsge - 1];

				memset(slot + o->loff[0] - GUARD, POISON,
				       end + GUARD - (o->loff[0] - GUARD));
			}
			break;
		}
		if ((int64_t)o->idx == O.corrupt) {
			/*
			 * Self-test: one wrong byte or a wrong immediate on the
			 * way out; READ/atomic results are damaged on arrival.
			 * Nothing to damage: try the next op.
			 */
			bool imm = o->type == OP_SEND_IMM || o->type == OP_WRITE_IMM;

			if (o->type <= OP_WRITE_IMM && (o->nsge || imm)) {
				if (o->nsge)
					slot[o->loff[0] + o->llen[0] / 2] ^= 0x10;
				msg("self-test: corrupting op %" PRIu64 " (%s len %u)", o->idx,
				    op_name[o->type], o->len);
			} else if (!o->nsge) {
				O.corrupt++;
			}
		}
		switch (o->type) {
		case OP_SEND:
			wr->opcode = IBV_WR_SEND;
			break;
		case OP_SEND_IMM:
			wr->opcode = IBV_WR_SEND_WITH_IMM;
			wr->imm_data = htonl(o->imm ^ ((int64_t)o->idx == O.corrupt && !o->len));
			break;
		case OP_WRITE:
		case OP_WRITE_IMM:
			wr->opcode = o->type == OP_WRITE ? IBV_WR_RDMA_WRITE
							 : IBV_WR_RDMA_WRITE_WITH_IMM;
			if (o->type == OP_WRITE_IMM)
				wr->imm_data = htonl(o->imm ^ ((int64_t)o->idx == O.corrupt && !o->len));
			if (o->rkey0) {
				wr->wr.rdma.remote_addr = 0;
				wr->wr.rdma.rkey = 0;
			} else {
				wr->wr.rdma.remote_addr = q->rem.wtgt_addr +
					(o->widx % P.window) * (uint64_t)slot_size + o->roff;
				wr->wr.rdma.rkey = q->rem.wtgt_rkey;
			}
			break;
		case OP_READ:
			wr->opcode = IBV_WR_RDMA_READ;
			wr->wr.rdma.remote_addr = q->rem.rsrc_addr + o->roff;
			wr->wr.rdma.rkey = q->rem.rsrc_rkey;
			break;
		case OP_CAS:
		case OP_FAA:
			wr->opcode = o->type == OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
						       : IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr->wr.atomic.remote_addr = q->rem.atom_addr + 8ull * o->cnt;
			wr->wr.atomic.rkey = q->rem.atom_rkey;
			wr->wr.atomic.compare_add = o->type == OP_CAS ? o->cmp : o->val;
			wr->wr.atomic.swap = o->type == OP_CAS ? o->val : 0;
			break;
		}
		stop = (P.iters && o->idx + 1 >= P.iters) ||
		       (P.duration_ms && now - t_start >= P.duration_ms / 1000.0);
		if (stop && o->end_ok) {
			o->sig = true;
			q->end = o->idx + 1;
		}
		wr->send_flags = (o->sig ? IBV_SEND_SIGNALED : 0) |
				 (o->inl ? IBV_SEND_INLINE : 0);
		if (n)
			wrs[n - 1].next = wr;
		ops[n++] = o;
	}
	if (!n)
		return 0;
	ret = ibv_post_send(q->qp, wrs, &bad);
	if (ret) {
		char d[160];

		op_desc(d, sizeof(d), "requester", q, ops[bad ? bad - wrs : 0]);
		error("ibv_post_send failed: %s, bad_wr = %s", strerror(ret), d);
		g_abort = true;
		return 0;
	}
	for (i = 0; i < n; i++) {
		struct op *o = ops[i];

		if (o->inl) {	/* inline data was copied: the buffer is free */
			for (k = 0; k < o->nsge; k++)
				memset(src_slot(q, o->idx) + o->loff[k], INL_POISON, o->llen[k]);
			S.inline_ops++;
		}
		if (o->rkey0)
			S.rkey0_ops++;
		if (o->sig)
			q->sigq[(q->sig_head + q->sig_n++) % (P.window + 1)] = o->idx;
	}
	q->posted += n;
	if (O.verbose > 1)
		msg("qp %u posted %u, now %" PRIu64, q->idx, n, q->posted);
	return (int)n;
}

/* an op of ours is complete: check what came back (READ, atomics) */
static void requester_retire(struct qpc *q, struct op *o)
{
	uint8_t *slot = src_slot(q, o->idx);
	char d[160];
	size_t first = 0, bad, off = 0;
	long g;
	unsigned k;

	if ((int64_t)o->idx == O.corrupt && o->nsge && o->type >= OP_READ) {
		slot[o->loff[0]] ^= 0x01;	/* self-test: damaged result */
		msg("self-test: corrupting the result of op %" PRIu64 " (%s)", o->idx,
		    op_name[o->type]);
	}
	if (o->type == OP_READ && o->nsge) {
		uint32_t end = o->loff[o->nsge - 1] + o->llen[o->nsge - 1];

		for (k = 0; k < o->nsge; k++) {
			bad = pat_check(slot + o->loff[k], read_key(my_dir, q->idx),
					o->roff + off, o->llen[k], &first);
			if (bad) {
				op_desc(d, sizeof(d), "requester", q, o);
				error("%s: READ data wrong: %zu of %u bytes in SGE %u, first at message byte %zu: expected 0x%02x got 0x%02x",
				      d, bad, o->llen[k], k, off + first,
				      pat_byte(read_key(my_dir, q->idx), o->roff + off + first),
				      slot[o->loff[k] + first]);
				return;
			}
			off += o->llen[k];
			/* the gap after the piece must be untouched */
			if (k + 1 < o->nsge) {
				g = not_byte(slot + o->loff[k] + o->llen[k],
					     o->loff[k + 1] - o->loff[k] - o->llen[k], POISON);
				if (g >= 0) {
					op_desc(d, sizeof(d), "requester", q, o);
					error("%s: READ wrote into the gap after SGE %u (byte %ld)", d, k, g);
				}
			}
		}
		if (not_byte(slot + o->loff[0] - GUARD, GUARD, POISON) >= 0 ||
		    not_byte(slot + end, GUARD, POISON) >= 0) {
			op_desc(d, sizeof(d), "requester", q, o);
			error("%s: READ wrote outside its scatter list", d);
		}
	} else if (o->type == OP_CAS || o->type == OP_FAA) {
		uint64_t got;

		memcpy(&got, slot + o->loff[0], 8);
		if (got != o->oldv) {
			op_desc(d, sizeof(d), "requester", q, o);
			error("%s: counter %u: original value 0x%016" PRIx64 ", expected 0x%016" PRIx64
			      " (compare 0x%016" PRIx64 " value 0x%016" PRIx64 ")",
			      d, o->cnt, got, o->oldv, o->cmp, o->val);
		}
		if (not_byte(slot + o->loff[0] - GUARD, GUARD, POISON) >= 0 ||
		    not_byte(slot + o->loff[0] + 8, GUARD, POISON) >= 0) {
			op_desc(d, sizeof(d), "requester", q, o);
			error("%s: atomic result written outside its 8 bytes", d);
		}
	}
	S.ops[o->type]++;
	S.bytes_req += o->len;
	if (o->forced)
		S.forced++;
}

static const enum ibv_wc_opcode send_wc_opcode[OP_NR] = {
	[OP_SEND] = IBV_WC_SEND, [OP_SEND_IMM] = IBV_WC_SEND,
	[OP_WRITE] = IBV_WC_RDMA_WRITE, [OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
	[OP_READ] = IBV_WC_RDMA_READ, [OP_CAS] = IBV_WC_COMP_SWAP,
	[OP_FAA] = IBV_WC_FETCH_ADD,
};

static void requester_cqe(struct qpc *q, const struct ibv_wc *wc)
{
	uint64_t i = wc->wr_id & IDX_MASK, want, j;
	struct op *o;
	char d[160];

	if (!q->sig_n) {
		error("qp %u: send completion wr_id 0x%" PRIx64 " with no signaled WR outstanding",
		      q->idx, wc->wr_id);
		return;
	}
	want = q->sigq[q->sig_head];
	if (i != want) {
		error("qp %u: send completion out of order or wrong wr_id: got op %" PRIu64
		      ", expected op %" PRIu64 " (wr_id 0x%" PRIx64 ")", q->idx, i, want, wc->wr_id);
		g_abort = true;
		return;
	}
	q->sig_head = (q->sig_head + 1) % (P.window + 1);
	q->sig_n--;
	o = op_at(&q->req, i);
	op_desc(d, sizeof(d), "requester", q, o);
	if (wc->opcode != send_wc_opcode[o->type])
		error("%s: completion opcode %d, expected %d", d, wc->opcode,
		      send_wc_opcode[o->type]);
	if (!O.lax_sq_len && wc->byte_len != o->len)
		error("%s: completion byte_len %u, expected %u", d, wc->byte_len, o->len);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		error("%s: send completion has IBV_WC_WITH_IMM set", d);
	for (j = q->completed; j <= i; j++)
		requester_retire(q, op_at(&q->req, j));
	q->completed = i + 1;
}

/* ------------------------------------------------------------------------ */
/* verify mode: responder                                                     */

/* post receives up to the credit window */
static int responder_post_recvs(struct qpc *q)
{
	struct ibv_recv_wr wrs[64], *bad = NULL;
	struct ibv_sge sges[64][NSGE_MAX];
	unsigned n = 0, k;
	int ret;

	while (q->rpost_next < q->vrecvs + P.window && n < 64) {
		struct op *o;
		struct rlayout *l = &q->rl[q->rpost_next % P.window];
		uint8_t *slot = rbuf_slot(q, q->rpost_next);
		struct ibv_recv_wr *wr = &wrs[n];
		uint32_t rem, cursor, r = rnd_below(&q->lrng, 1u << 30);

		do {
			o = op_at(&q->rsp, q->rpost_cursor++);
		} while (!o->notify);
		if (o->nidx != q->rpost_next)
			die("internal: receive %" PRIu64 " matched op with nidx %" PRIu64,
			    q->rpost_next, o->nidx);
		memset(l, 0, sizeof(*l));
		memset(wr, 0, sizeof(*wr));
		if ((o->type == OP_WRITE_IMM && (r & 3)) || (o->len == 0 && (r & 1))) {
			l->nsge = 0;	/* zero-SGE receive */
			S.zero_sge_recvs++;
		} else {
			l->total = o->len + (o->type == OP_WRITE_IMM ? 0 : (r >> 2) % 257);
			if (!l->total)
				l->total = 1 + (r >> 12) % 64;
			l->nsge = 1 + rnd_below(&q->lrng, min_u32(P.max_sge, l->total));
			cursor = GUARD + rnd_below(&q->lrng, 4096);
			l->start = cursor;
			rem = l->total;
			for (k = 0; k < l->nsge; k++) {
				uint32_t left = l->nsge - k - 1, piece;

				piece = left ? 1 + rnd_below(&q->lrng, rem - left) : rem;
				l->off[k] = cursor;
				l->len[k] = piece;
				sges[n][k].addr = (uintptr_t)(slot + cursor);
				sges[n][k].length = piece;
				sges[n][k].lkey = q->rbuf_mr->lkey;
				rem -= piece;
				cursor += piece + (left ? rnd_below(&q->lrng, sge_gap()) : 0);
			}
			l->end = cursor;
		}
		wr->wr_id = RECV_BIT | ((uint64_t)q->idx << 40) | q->rpost_next;
		wr->sg_list = l->nsge ? sges[n] : NULL;
		wr->num_sge = l->nsge;
		if (n)
			wrs[n - 1].next = wr;
		n++;
		q->rpost_next++;
	}
	if (!n)
		return 0;
	ret = ibv_post_recv(q->qp, wrs, &bad);
	if (ret) {
		error("qp %u: ibv_post_recv failed: %s", q->idx, strerror(ret));
		g_abort = true;
	}
	return (int)n;
}

/* check a WRITE's bytes in the write-target slot, then poison them again */
static void verify_write(struct qpc *q, struct op *o)
{
	uint8_t *slot = wtgt_slot(q, o->widx);
	size_t first = 0, bad;
	char d[160];
	long g;

	if (o->len) {
		bad = pat_check(slot + o->roff, msg_key(!my_dir, q->idx, o->idx), 0, o->len,
				&first);
		if (bad) {
			op_desc(d, sizeof(d), "responder", q, o);
			error("%s: WRITE data wrong: %zu of %u bytes, first at byte %zu: expected 0x%02x got 0x%02x%s",
			      d, bad, o->len, first,
			      pat_byte(msg_key(!my_dir, q->idx, o->idx), first), slot[o->roff + first],
			      slot[o->roff + first] == POISON ? " (never written)" : "");
		}
	}
	g = not_byte(slot + o->roff - GUARD, GUARD, POISON);
	if (g < 0)
		g = not_byte(slot + o->roff + o->len, GUARD, POISON);
	if (g >= 0) {
		op_desc(d, sizeof(d), "responder", q, o);
		error("%s: bytes around the WRITE target were modified", d);
	}
	memset(slot + o->roff, POISON, o->len);
	q->vwrites++;
}

static const enum ibv_wc_opcode recv_wc_opcode[OP_NR] = {
	[OP_SEND] = IBV_WC_RECV, [OP_SEND_IMM] = IBV_WC_RECV,
	[OP_WRITE_IMM] = IBV_WC_RECV_RDMA_WITH_IMM,
};

static void verify_recv(struct qpc *q, struct op *o, const struct ibv_wc *wc)
{
	struct rlayout *l = &q->rl[o->nidx % P.window];
	uint8_t *slot = rbuf_slot(q, o->nidx);
	bool imm = o->type != OP_SEND;
	uint64_t key = msg_key(!my_dir, q->idx, o->idx);
	size_t first = 0, bad, off = 0;
	char d[160];
	unsigned k;

	op_desc(d, sizeof(d), "responder", q, o);
	if (wc->opcode != recv_wc_opcode[o->type])
		error("%s: receive completion opcode %d, expected %d", d, wc->opcode,
		      recv_wc_opcode[o->type]);
	if (wc->byte_len != o->len)
		error("%s: receive byte_len %u, expected %u", d, wc->byte_len, o->len);
	if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != imm)
		error("%s: IBV_WC_WITH_IMM is %s", d, imm ? "missing" : "set");
	else if (imm && ntohl(wc->imm_data) != o->imm)
		error("%s: imm_data 0x%08x, expected 0x%08x", d, ntohl(wc->imm_data), o->imm);

	if (o->type == OP_WRITE_IMM) {
		verify_write(q, o);
		/* nothing may land in the receive buffer */
		for (k = 0; k < l->nsge; k++)
			if (not_byte(slot + l->off[k], l->len[k], POISON) >= 0) {
				error("%s: WRITE_WITH_IMM wrote into the receive buffer", d);
				break;
			}
		return;
	}
	/* SEND: the payload spans the receive's scatter list */
	for (k = 0; k < l->nsge && off < o->len; k++) {
		uint32_t n = min_u32(l->len[k], o->len - off);

		bad = pat_check(slot + l->off[k], key, off, n, &first);
		if (bad) {
			error("%s: SEND payload wrong: %zu of %u bytes in receive SGE %u, first at message byte %zu: expected 0x%02x got 0x%02x%s",
			      d, bad, n, k, off + first, pat_byte(key, off + first),
			      slot[l->off[k] + first],
			      slot[l->off[k] + first] == POISON ? " (never written)" : "");
			break;
		}
		off += n;
	}
	/* after the payload: the rest of the scatter list, the gaps and guards */
	if (l->nsge) {
		off = 0;
		for (k = 0; k < l->nsge; k++) {
			uint32_t used = off >= o->len ? 0 : min_u32(l->len[k], o->len - off);
			long g = not_byte(slot + l->off[k] + used, l->len[k] - used, POISON);

			if (g >= 0) {
				error("%s: receive SGE %u modified beyond the payload (byte %ld)", d, k,
				      (long)used + g);
				break;
			}
			if (k + 1 < l->nsge &&
			    not_byte(slot + l->off[k] + l->len[k],
				     l->off[k + 1] - l->off[k] - l->len[k], POISON) >= 0) {
				error("%s: bytes between receive SGEs %u and %u modified", d, k, k + 1);
				break;
			}
			off += l->len[k];
		}
		if (not_byte(slot + l->start - GUARD, GUARD, POISON) >= 0 ||
		    not_byte(slot + l->end, GUARD, POISON) >= 0)
			error("%s: bytes around the receive buffer modified", d);
		memset(slot + l->start, POISON, l->end - l->start);
	}
}

static void responder_cqe(struct qpc *q, const struct ibv_wc *wc)
{
	uint64_t j = wc->wr_id & IDX_MASK;
	struct op *o;

	if (j != q->vrecvs) {
		error("qp %u: receive completion out of order: got receive %" PRIu64
		      ", expected %" PRIu64, q->idx, j, q->vrecvs);
		g_abort = true;
		return;
	}
	/* everything the peer did before this message is complete */
	for (;;) {
		o = op_at(&q->rsp, q->vops);
		if (o->notify)
			break;
		if (q->peer_end_known && q->vops >= q->peer_end) {
			error("qp %u: receive completion beyond the end of the peer's stream", q->idx);
			g_abort = true;
			return;
		}
		if (o->is_write)
			verify_write(q, o);
		else if (o->type == OP_CAS || o->type == OP_FAA)
			q->vmodel[o->cnt] = o->newv;
		S.ops_rsp++;
		S.bytes_rsp += o->len;
		q->vops++;
	}
	if (o->nidx != j)
		die("internal: receive %" PRIu64 " vs op nidx %" PRIu64, j, o->nidx);
	verify_recv(q, o, wc);
	S.ops_rsp++;
	S.bytes_rsp += o->len;
	q->vops++;
	q->vrecvs++;
	responder_post_recvs(q);
	q->credit_dirty = true;
}

/* after the peer's last op: the counters must equal the model */
static void responder_final(struct qpc *q)
{
	unsigned c;

	/* ops after the last receive are only possible without writes */
	while (q->vops < q->peer_end) {
		struct op *o = op_at(&q->rsp, q->vops);

		if (o->notify || o->is_write)
			break;	/* cannot happen: checked by end_ok */
		if (o->type == OP_CAS || o->type == OP_FAA)
			q->vmodel[o->cnt] = o->newv;
		S.ops_rsp++;
		S.bytes_rsp += o->len;
		q->vops++;
	}
	for (c = 0; c < NCNT; c++) {
		uint64_t v = __atomic_load_n(&q->atom[c], __ATOMIC_ACQUIRE);

		if (v != q->vmodel[c])
			error("responder qp %u: atomic counter %u is 0x%016" PRIx64
			      ", expected 0x%016" PRIx64, q->idx, c, v, q->vmodel[c]);
	}
	q->atom_checked = true;
}

/* ------------------------------------------------------------------------ */
/* verify mode: completion queue and main loop                                */

static const char *wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static struct qpc *wc_qp(const struct ibv_wc *wc)
{
	uint64_t qi = (wc->wr_id & ~RECV_BIT) >> 40;

	if (qi >= P.qps) {
		error("completion with unknown wr_id 0x%" PRIx64 " (qp_num %u, status %s)",
		      wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status));
		g_abort = true;
		return NULL;
	}
	if (wc->qp_num != Q[qi].qp->qp_num) {
		error("completion wr_id 0x%" PRIx64 " has qp_num %u, expected %u", wc->wr_id,
		      wc->qp_num, Q[qi].qp->qp_num);
		return NULL;
	}
	return &Q[qi];
}

static int drain_cq(void)
{
	struct ibv_wc wc[32];
	int n, i, total = 0;

	while (!g_abort) {
		n = ibv_poll_cq(cq, 32, wc);
		if (n < 0) {
			error("ibv_poll_cq: %d", n);
			g_abort = true;
			break;
		}
		if (!n)
			break;
		for (i = 0; i < n && !g_abort; i++) {
			struct qpc *q = wc_qp(&wc[i]);
			uint64_t idx = wc[i].wr_id & IDX_MASK;

			S.cqes++;
			if (!q)
				continue;
			if (wc[i].status != IBV_WC_SUCCESS) {
				char d[160] = "";

				if (wc[i].wr_id & RECV_BIT) {
					snprintf(d, sizeof(d), "responder qp %u receive %" PRIu64, q->idx, idx);
				} else if (idx < q->req.gen && idx + RING > q->req.gen) {
					op_desc(d, sizeof(d), "requester", q, op_at(&q->req, idx));
				}
				error("%s: error completion %s (%d), vendor_err 0x%x, opcode %s, after %" PRIu64
				      " of our ops completed",
				      d, ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err,
				      wc_opcode_str(wc[i].opcode), q->completed);
				g_abort = true;
				break;
			}
			if (wc[i].wr_id & RECV_BIT)
				responder_cqe(q, &wc[i]);
			else
				requester_cqe(q, &wc[i]);
		}
		total += n;
	}
	return total;
}

static int handle_ctl(bool *peer_done, struct ctl *peer_stats)
{
	struct ctl m;
	int n = 0;

	while (ctl_next(&m)) {
		struct qpc *q = m.qp < P.qps ? &Q[m.qp] : NULL;

		n++;
		switch (m.type) {
		case CTL_CREDIT:
			if (!q)
				die("control: credit for qp %u", m.qp);
			q->cr_ops = m.a;
			q->cr_writes = m.b;
			q->cr_recvs = m.c;
			break;
		case CTL_END:
			if (!q)
				die("control: end for qp %u", m.qp);
			q->peer_end = m.a;
			q->peer_end_known = true;
			break;
		case CTL_DONE:
			*peer_done = true;
			*peer_stats = m;
			break;
		case CTL_ERR:
			error("the peer reported a failure (see its output)");
			g_abort = true;
			break;
		default:
			die("control: unexpected message %u", m.type);
		}
	}
	return n;
}

static void dump_state(void)
{
	unsigned i;

	for (i = 0; i < P.qps; i++) {
		struct qpc *q = &Q[i];
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		const char *st = "?";

		if (!ibv_query_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia))
			st = a.qp_state == IBV_QPS_RTS ? "RTS" : a.qp_state == IBV_QPS_ERR ? "ERR" :
			     a.qp_state == IBV_QPS_SQE ? "SQE" : "other";
		msg("qp %u (qpn %u, state %s): requester posted %" PRIu64 " completed %" PRIu64
		    " signaled-in-flight %u end %" PRId64 " credits ops/writes/recvs %" PRIu64 "/%" PRIu64
		    "/%" PRIu64 "; responder verified ops %" PRIu64 " writes %" PRIu64 " recvs %" PRIu64
		    " posted recvs %" PRIu64 " peer end %" PRId64,
		    i, q->qp->qp_num, st, q->posted, q->completed, q->sig_n,
		    q->end == UINT64_MAX ? -1 : (int64_t)q->end, q->cr_ops, q->cr_writes,
		    q->cr_recvs, q->vops, q->vwrites, q->vrecvs, q->rpost_next,
		    q->peer_end_known ? (int64_t)q->peer_end : -1);
	}
}

/*
 * The responder side of Q is finished once the peer announced the end of
 * its stream (it sends END only when all its ops have completed, so every
 * READ and atomic has been executed here) and no receive is outstanding.
 */
static bool responder_done(struct qpc *q)
{
	uint64_t t;

	if (!q->peer_end_known)
		return false;
	if (q->atom_checked)
		return true;
	for (t = q->vops; t < q->peer_end; t++)
		if (op_at(&q->rsp, t)->notify)
			return false;
	responder_final(q);
	return true;
}

static bool all_done(void)
{
	unsigned i;

	for (i = 0; i < P.qps; i++) {
		struct qpc *q = &Q[i];

		if (!q->end_sent || !responder_done(q))
			return false;
	}
	return true;
}

/*
 * --start-at / --start-file: hold our READY until the given wall-clock
 * second, or until a file exists, so that several client processes (a
 * fairness or incast test) start their streams together; the peer waits
 * for READY.
 */
static void wait_start_at(void)
{
	double d;

	if (O.start_file) {
		struct timespec ts = { .tv_nsec = 5 * 1000 * 1000 };
		struct stat st;
		double t0 = mrc_now_s();

		msg("waiting for %s", O.start_file);
		while (stat(O.start_file, &st)) {
			if (mrc_now_s() - t0 > 600)
				die("--start-file %s: not there after 600 s", O.start_file);
			nanosleep(&ts, NULL);
		}
	}
	if (O.start_at <= 0)
		return;
	d = O.start_at - mrc_wall_s();
	if (d < 0) {
		msg("--start-at: ready %.3f s late", -d);
		return;
	}
	if (d > 3600)
		die("--start-at is %.0f s away", d);
	{
		struct timespec ts = { .tv_sec = (time_t)d,
				       .tv_nsec = (long)((d - (time_t)d) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

static int run_verify(void)
{
	struct ctl peer_stats = { 0 };
	bool peer_done = false, done_sent = false;
	double last_progress, t_run, secs, wall_run;
	unsigned i;

	for (i = 0; i < P.qps; i++)
		responder_post_recvs(&Q[i]);
	wait_start_at();
	ctl_send(CTL_READY, 0, 0, 0, 0, 0);
	ctl_wait(CTL_READY, NULL);
	t_start = mrc_now_s();
	t_run = t_start;
	wall_run = mrc_wall_s();
	last_progress = t_run;
	msg("running: seed 0x%" PRIx64 " qps %u max-size %u window %u ops 0x%x dirs %u %s %" PRIu64,
	    P.seed, P.qps, P.max_size, P.window, P.ops_mask, P.dirs,
	    P.iters ? "iters" : "duration-ms", P.iters ? P.iters : P.duration_ms);

	while (!g_abort) {
		double now = mrc_now_s();
		int prog = 0;

		for (i = 0; i < P.qps && !g_abort; i++)
			prog += requester_post(&Q[i], now);
		prog += drain_cq();
		prog += handle_ctl(&peer_done, &peer_stats);
		if (g_abort)
			break;
		for (i = 0; i < P.qps; i++) {
			struct qpc *q = &Q[i];

			if (q->credit_dirty) {
				ctl_send(CTL_CREDIT, i, q->vops, q->vwrites, q->vrecvs, 0);
				q->credit_dirty = false;
			}
			if (q->end != UINT64_MAX && q->completed >= q->end && !q->end_sent) {
				ctl_send(CTL_END, i, q->end, 0, 0, 0);
				q->end_sent = true;
			}
		}
		if (!done_sent && all_done()) {
			ctl_send(CTL_DONE, 0, q_total_ops(), S.bytes_req, S.errors, S.cqes);
			done_sent = true;
		}
		if (done_sent && peer_done)
			break;
		if (ctl_eof) {
			error("control connection closed by the peer before the end");
			break;
		}
		if (prog) {
			last_progress = mrc_now_s();
			continue;
		}
		if (now - last_progress > O.stall_s) {
			error("no progress for %.0f s", O.stall_s);
			dump_state();
			break;
		}
		if (O.busy)
			continue;
		if (ibv_req_notify_cq(cq, 0)) {
			error("ibv_req_notify_cq failed");
			break;
		}
		if (drain_cq())
			continue;
		{
			struct pollfd pf[3] = {
				{ .fd = chan->fd, .events = POLLIN },
				{ .fd = ctl_fd, .events = POLLIN },
				{ .fd = ctx->async_fd, .events = POLLIN },
			};
			struct ibv_cq *ecq;
			void *ectx;

			/* a rate-limited poster wakes up to post again */
			poll(pf, 3, O.rate_bps ? 2 : 100);
			if ((pf[0].revents & POLLIN) && !ibv_get_cq_event(chan, &ecq, &ectx))
				ibv_ack_cq_events(ecq, 1);
			if (pf[2].revents & POLLIN)
				check_async();
		}
	}
	check_async();
	secs = mrc_now_s() - t_run;
	if (g_abort || S.errors) {
		ctl_send(CTL_ERR, 0, 0, 0, 0, 0);
		dump_state();
	}
	{
		uint64_t ops = q_total_ops();
		char per[256];
		int p = 0;
		unsigned t;

		for (t = 0; t < OP_NR; t++)
			p += snprintf(per + p, sizeof(per) - p, "%s%s=%" PRIu64, t ? "," : "",
				      op_short[t], S.ops[t]);
		printf("MRC_VERIFY_RESULT role=%s mode=verify status=%s seed=0x%" PRIx64
		       " qps=%u ops=%" PRIu64 " bytes=%" PRIu64 " peer_ops_verified=%" PRIu64
		       " peer_bytes_verified=%" PRIu64 " cqes=%" PRIu64 " errors=%" PRIu64
		       " secs=%.3f goodput_mbps=%.2f total_mbps=%.2f per_op=%s forced=%" PRIu64
		       " inline=%" PRIu64 " rkey0=%" PRIu64 " zero_sge_recvs=%" PRIu64
		       " peer_status=%s start_epoch=%.3f end_epoch=%.3f\n",
		       O.role, (S.errors || g_abort) ? "FAIL" : "PASS", P.seed, P.qps, ops,
		       S.bytes_req, S.ops_rsp, S.bytes_rsp, S.cqes, S.errors, secs,
		       S.bytes_req * 8 / secs / 1e6, (S.bytes_req + S.bytes_rsp) * 8 / secs / 1e6,
		       per, S.forced, S.inline_ops, S.rkey0_ops, S.zero_sge_recvs,
		       peer_done ? (peer_stats.c ? "FAIL" : "PASS") : "unknown",
		       wall_run, wall_run + secs);
		fflush(stdout);
	}
	return (S.errors || g_abort || (peer_done && peer_stats.c)) ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* special modes                                                              */

/* wait for one completion (blocking with events), bounded by LIMIT seconds */
static bool wait_wc(struct ibv_wc *wc, double limit)
{
	double until = mrc_now_s() + limit;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			die("ibv_poll_cq: %d", n);
		if (n)
			return true;
		if (mrc_now_s() > until)
			return false;
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq");
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n > 0;
		{
			struct pollfd pf = { .fd = chan->fd, .events = POLLIN };
			struct ibv_cq *ecq;
			void *ectx;

			poll(&pf, 1, 20);
			if ((pf.revents & POLLIN) && !ibv_get_cq_event(chan, &ecq, &ectx))
				ibv_ack_cq_events(ecq, 1);
		}
		check_async();
	}
}

/* one signaled work request with at most one SGE (@sge, filled here) */
static void wr_fill(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode opc,
		    uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey, uint64_t raddr,
		    uint32_t rkey)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = wr_id, .sg_list = len ? sge : NULL, .num_sge = len ? 1 : 0,
		.opcode = opc, .send_flags = IBV_SEND_SIGNALED,
	};
	if (opc == IBV_WR_ATOMIC_CMP_AND_SWP || opc == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = 1;
		wr->wr.atomic.swap = 2;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
	}
}

static void post1(struct qpc *q, enum ibv_wr_opcode opc, uint64_t wr_id, void *buf,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int ret;

	wr_fill(&wr, &sge, opc, wr_id, buf, len, lkey, raddr, rkey);
	ret = ibv_post_send(q->qp, &wr, &bad);
	if (ret)
		die("qp %u: ibv_post_send: %s", q->idx, strerror(ret));
}

/*
 * One 8-byte WRITE per QP that must succeed: the path works.  Both sides
 * reach RTS first: a WRITE that arrives before the peer's QP is at RTR is
 * dropped, and with a short ACK timeout the retries can run out before it
 * gets there.
 */
static void warm_up(void)
{
	unsigned i;
	struct ibv_wc wc;

	ctl_send(CTL_RTS, 0, 0, 0, 0, 0);
	ctl_wait(CTL_RTS, NULL);
	for (i = 0; i < P.qps; i++) {
		struct qpc *q = &Q[i];

		pat_fill(q->src, msg_key(my_dir, i, 0), 0, 8);
		post1(q, IBV_WR_RDMA_WRITE, 1000 + i, q->src, 8, q->src_mr->lkey,
		      q->rem.wtgt_addr + (size_t)P.window * slot_size - 64, q->rem.wtgt_rkey);
		if (!wait_wc(&wc, 30))
			die("warm-up WRITE on qp %u: no completion in 30 s", i);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 1000 + i)
			die("warm-up WRITE on qp %u: %s wr_id %" PRIu64, i,
			    ibv_wc_status_str(wc.status), wc.wr_id);
	}
}

/* bad rkeys, missing permissions, out of bounds: remote access errors */
static int run_badrkey(void)
{
	struct {
		const char *what;
		enum ibv_wr_opcode opc;
		uint32_t len;
	} t[5] = {
		{ "RDMA_WRITE with a wrong rkey", IBV_WR_RDMA_WRITE, 4096 },
		{ "RDMA_READ with the rkey of a write-only MR", IBV_WR_RDMA_READ, 4096 },
		{ "ATOMIC_FETCH_AND_ADD with the rkey of a read-only MR", IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },
		{ "RDMA_WRITE beyond the end of the MR", IBV_WR_RDMA_WRITE, 4096 },
		{ "RDMA_WRITE of 4096 bytes with rkey 0", IBV_WR_RDMA_WRITE, 4096 },
	};
	unsigned i, fails = 0;
	struct ibv_wc wc;

	if (P.qps < 5)
		die("badrkey mode needs --qps 5");
	warm_up();
	ctl_send(CTL_WARM, 0, 0, 0, 0, 0);
	ctl_wait(CTL_WARM, NULL);
	if (!O.server) {	/* server: passive, checks its memory at the end */
		struct ctl m;

		ctl_wait(CTL_DONE, &m);
		for (i = 0; i < P.qps; i++) {
			long g = not_byte(Q[i].wtgt, (size_t)P.window * slot_size - 64, POISON);
			unsigned c;

			if (g >= 0) {
				error("qp %u: write target modified at byte %ld by a rejected WRITE", i, g);
				fails++;
			}
			for (c = 0; c < NCNT; c++)
				if (Q[i].atom[c] != counter_init(!my_dir, i, c)) {
					error("qp %u: counter %u modified by a rejected atomic", i, c);
					fails++;
					break;
				}
		}
		printf("MRC_VERIFY_RESULT role=server mode=badrkey status=%s\n",
		       fails ? "FAIL" : "PASS");
		return fails ? 1 : 0;
	}
	for (i = 0; i < 5; i++) {
		struct qpc *q = &Q[i];
		uint64_t raddr = q->rem.wtgt_addr;
		uint32_t rkey = q->rem.wtgt_rkey;
		double t0;
		bool got;

		switch (i) {
		case 0: rkey ^= 0x5a; if (!rkey) rkey = 1; break;
		case 1: break;
		case 2: raddr = q->rem.rsrc_addr; rkey = q->rem.rsrc_rkey; break;
		case 3: raddr += (size_t)P.window * slot_size - 1024; break;
		case 4: rkey = 0; break;
		}
		t0 = mrc_now_s();
		post1(q, t[i].opc, 1, q->src + 64, t[i].len, q->src_mr->lkey, raddr, rkey);
		post1(q, IBV_WR_RDMA_WRITE, 2, q->src + 64, 64, q->src_mr->lkey,
		      q->rem.wtgt_addr + (size_t)P.window * slot_size - 64, q->rem.wtgt_rkey);
		got = wait_wc(&wc, 60);
		printf("BADRKEY case=%u what=\"%s\" status=%s elapsed_ms=%.1f\n", i, t[i].what,
		       got ? ibv_wc_status_str(wc.status) : "none", (mrc_now_s() - t0) * 1e3);
		if (!got || wc.status != IBV_WC_REM_ACCESS_ERR || wc.wr_id != 1 ||
		    wc.qp_num != q->qp->qp_num) {
			error("%s: expected IBV_WC_REM_ACCESS_ERR for wr_id 1, got %s wr_id %" PRIu64,
			      t[i].what, got ? ibv_wc_status_str(wc.status) : "no completion in 60 s",
			      got ? wc.wr_id : 0);
			fails++;
			continue;
		}
		got = wait_wc(&wc, 10);
		if (!got || wc.status != IBV_WC_WR_FLUSH_ERR || wc.wr_id != 2) {
			error("%s: the next WR must be flushed (IBV_WC_WR_FLUSH_ERR), got %s", t[i].what,
			      got ? ibv_wc_status_str(wc.status) : "no completion in 10 s");
			fails++;
		}
	}
	ctl_send(CTL_DONE, 0, 0, 0, fails, 0);
	printf("MRC_VERIFY_RESULT role=client mode=badrkey status=%s errors=%u\n",
	       fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}

/*
 * Responder resources: the server's QP 1 has max_dest_rd_atomic 0, QP 0
 * has 1, while the client allows itself many.  A READ on QP 1 must fail
 * with IBV_WC_REM_INV_REQ_ERR; of READs posted back to back on QP 0 the
 * first succeeds, one fails the same way and the rest are flushed.
 */
static int run_rdlimit(void)
{
	enum { n = 8 };
	/*
	 * Large enough that the first READ is still being answered when the
	 * next request arrives (with a window that sends each in one packet)
	 */
	uint32_t len = slot_size < (1u << 20) ? slot_size : 1u << 20;
	unsigned i, fails = 0, ok = 0, inv = 0, flushed = 0;
	struct qpc *q;
	struct ibv_wc wc;
	bool got;

	if (P.qps < 2)
		die("rdlimit mode needs --qps 2");
	warm_up();
	ctl_send(CTL_WARM, 0, 0, 0, 0, 0);
	ctl_wait(CTL_WARM, NULL);
	if (!O.server) {	/* the server: passive */
		ctl_wait(CTL_DONE, NULL);
		printf("MRC_VERIFY_RESULT role=server mode=rdlimit status=PASS\n");
		return 0;
	}
	q = &Q[1];
	post1(q, IBV_WR_RDMA_READ, 1, q->rbuf, 8, q->rbuf_mr->lkey, q->rem.rsrc_addr,
	      q->rem.rsrc_rkey);
	got = wait_wc(&wc, 60);
	printf("RDLIMIT case=0 what=\"READ, max_dest_rd_atomic 0\" status=%s\n",
	       got ? ibv_wc_status_str(wc.status) : "none");
	if (!got || wc.status != IBV_WC_REM_INV_REQ_ERR || wc.wr_id != 1) {
		error("READ without responder resources: expected IBV_WC_REM_INV_REQ_ERR, got %s",
		      got ? ibv_wc_status_str(wc.status) : "no completion in 60 s");
		fails++;
	}

	/*
	 * One list, one doorbell: the second request leaves right behind the
	 * first even if this process loses its CPU between two posts.
	 */
	q = &Q[0];
	{
		struct ibv_send_wr wr[n], *bad;
		struct ibv_sge sge[n];
		int ret;

		for (i = 0; i < n; i++) {
			wr_fill(&wr[i], &sge[i], IBV_WR_RDMA_READ, 10 + i, q->rbuf, len,
				q->rbuf_mr->lkey, q->rem.rsrc_addr, q->rem.rsrc_rkey);
			wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		}
		ret = ibv_post_send(q->qp, wr, &bad);
		if (ret)
			die("qp %u: ibv_post_send of %u READs: %s", q->idx, n, strerror(ret));
	}
	for (i = 0; i < n; i++) {
		if (!wait_wc(&wc, 60)) {
			error("READ %u of %u: no completion in 60 s", i + 1, n);
			fails++;
			break;
		}
		if (wc.wr_id != 10 + i || wc.qp_num != q->qp->qp_num) {
			error("completion out of order: wr_id %" PRIu64 " for READ %u", wc.wr_id, i + 1);
			fails++;
		}
		if (wc.status == IBV_WC_SUCCESS && !inv && !flushed) {
			ok++;
		} else if (wc.status == IBV_WC_REM_INV_REQ_ERR && !inv && !flushed) {
			inv++;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR && inv) {
			flushed++;
		} else {
			error("READ %u of %u: unexpected %s", i + 1, n, ibv_wc_status_str(wc.status));
			fails++;
		}
	}
	if (ok) {
		size_t first = 0, bad = pat_check(q->rbuf, read_key(my_dir, q->idx), 0, len, &first);

		if (bad) {
			error("READ data wrong: %zu of %u bytes, first at byte %zu", bad, len, first);
			fails++;
		}
	}
	printf("RDLIMIT case=1 what=\"%u READs of %u bytes, max_dest_rd_atomic 1\" ok=%u inv_req=%u flushed=%u\n",
	       n, len, ok, inv, flushed);
	if (!ok || inv != 1 || ok + inv + flushed != n) {
		error("expected the first READs to succeed, then one IBV_WC_REM_INV_REQ_ERR, then flushes");
		fails++;
	}
	ctl_send(CTL_DONE, 0, 0, 0, fails, 0);
	printf("MRC_VERIFY_RESULT role=client mode=rdlimit status=%s errors=%u\n",
	       fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}

/* the peer disappears: RETRY_EXC_ERR after timeout x (retry_cnt + 1) */
static int run_retry(void)
{
	struct ibv_wc wc;
	double t0, el, nominal;
	bool got;
	struct ctl m;

	warm_up();
	ctl_send(CTL_WARM, 0, 0, 0, 0, 0);
	ctl_wait(CTL_WARM, NULL);
	if (!O.server) {
		/* stay until the client finishes (or we are killed) */
		while (!ctl_eof) {
			struct pollfd pf = { .fd = ctl_fd, .events = POLLIN };

			poll(&pf, 1, 1000);
			while (ctl_next(&m))
				;
		}
		printf("MRC_VERIFY_RESULT role=server mode=retry status=PASS\n");
		return 0;
	}
	printf("READY\n");
	fflush(stdout);
	/*
	 * Go when the go-file appears, or without one when the server's
	 * control socket closes.  (A killed server closes its TCP socket
	 * before its verbs file: the script should reap it, then create the
	 * go-file, so that the QP is really gone.)
	 */
	for (;;) {
		struct pollfd pf = { .fd = ctl_fd, .events = POLLIN };
		struct stat st;

		if (O.go_file) {
			if (!stat(O.go_file, &st))
				break;
		} else if (ctl_eof) {
			break;
		}
		while (ctl_next(&m))
			;
		poll(&pf, 1, 10);
		if (ctl_eof)
			usleep(10000);
	}
	msg("going: %s", ctl_eof ? "the server is gone" : "go-file appeared");
	t0 = mrc_now_s();
	pat_fill(Q[0].src, 1, 0, 4096);
	post1(&Q[0], IBV_WR_RDMA_WRITE, 7, Q[0].src, 4096, Q[0].src_mr->lkey,
	      Q[0].rem.wtgt_addr, Q[0].rem.wtgt_rkey);
	got = wait_wc(&wc, 600);
	el = mrc_now_s() - t0;
	nominal = 4.096e-6 * (double)(1ull << P.timeout) * (P.retry_cnt + 1);
	printf("RETRY status=%s wr_id=%" PRIu64 " elapsed_ms=%.1f nominal_ms=%.1f timeout=%u retry_cnt=%u\n",
	       got ? ibv_wc_status_str(wc.status) : "none", got ? wc.wr_id : 0, el * 1e3,
	       nominal * 1e3, P.timeout, P.retry_cnt);
	if (!got || wc.status != IBV_WC_RETRY_EXC_ERR || wc.wr_id != 7) {
		error("expected IBV_WC_RETRY_EXC_ERR for wr_id 7, got %s",
		      got ? ibv_wc_status_str(wc.status) : "no completion in 600 s");
		printf("MRC_VERIFY_RESULT role=client mode=retry status=FAIL\n");
		return 1;
	}
	printf("MRC_VERIFY_RESULT role=client mode=retry status=PASS elapsed_ms=%.1f nominal_ms=%.1f\n",
	       el * 1e3, nominal * 1e3);
	return 0;
}

/* receiver not ready: RNR_RETRY_EXC_ERR with a finite rnr_retry, success with 7 */
static int run_rnr(void)
{
	struct ibv_wc wc;
	struct ctl m;
	unsigned fails = 0;
	bool got;
	double t0;

	if (P.qps < 2)
		die("rnr mode needs --qps 2");
	warm_up();
	ctl_send(CTL_WARM, 0, 0, 0, 0, 0);
	ctl_wait(CTL_WARM, NULL);
	if (!O.server) {
		struct ibv_sge sge = { .addr = (uintptr_t)Q[1].rbuf + 64, .length = 4096,
				       .lkey = Q[1].rbuf_mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;
		size_t first = 0;

		ctl_wait(CTL_POSTED, &m);
		usleep(P.rnr_delay_ms * 1000);
		t0 = mrc_now_s();
		if (ibv_post_recv(Q[1].qp, &wr, &bad))
			die("ibv_post_recv: %s", strerror(errno));
		got = wait_wc(&wc, 60);
		if (!got || wc.status != IBV_WC_SUCCESS || wc.wr_id != 77 ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != 1024) {
			error("late receive: expected a 1024-byte IBV_WC_RECV wr_id 77, got %s wr_id %" PRIu64 " len %u",
			      got ? ibv_wc_status_str(wc.status) : "nothing in 60 s",
			      got ? wc.wr_id : 0, got ? wc.byte_len : 0);
			fails++;
		} else if (pat_check(Q[1].rbuf + 64, msg_key(!my_dir, 1, 1), 0, 1024, &first)) {
			error("late receive: payload wrong at byte %zu", first);
			fails++;
		} else {
			printf("RNR-RECV status=success after_post_ms=%.1f\n", (mrc_now_s() - t0) * 1e3);
		}
		ctl_send(CTL_DONE, 0, 0, 0, fails, 0);
		ctl_wait(CTL_DONE, &m);
		printf("MRC_VERIFY_RESULT role=server mode=rnr status=%s\n", fails ? "FAIL" : "PASS");
		return fails ? 1 : 0;
	}
	/* qp 0: no receive ever, finite rnr_retry */
	pat_fill(Q[0].src, msg_key(my_dir, 0, 1), 0, 1024);
	t0 = mrc_now_s();
	post1(&Q[0], IBV_WR_SEND, 5, Q[0].src, 1024, Q[0].src_mr->lkey, 0, 0);
	got = wait_wc(&wc, 120);
	printf("RNR qp=0 rnr_retry=%u min_rnr_timer=%u status=%s elapsed_ms=%.1f\n", P.rnr_retry,
	       P.min_rnr_timer, got ? ibv_wc_status_str(wc.status) : "none",
	       (mrc_now_s() - t0) * 1e3);
	if (!got || wc.status != IBV_WC_RNR_RETRY_EXC_ERR || wc.wr_id != 5) {
		error("expected IBV_WC_RNR_RETRY_EXC_ERR, got %s",
		      got ? ibv_wc_status_str(wc.status) : "no completion in 120 s");
		fails++;
	}
	/* qp 1: rnr_retry 7, the receive comes late */
	pat_fill(Q[1].src, msg_key(my_dir, 1, 1), 0, 1024);
	ctl_send(CTL_POSTED, 1, 0, 0, 0, 0);
	t0 = mrc_now_s();
	post1(&Q[1], IBV_WR_SEND, 6, Q[1].src, 1024, Q[1].src_mr->lkey, 0, 0);
	got = wait_wc(&wc, 120);
	printf("RNR qp=1 rnr_retry=7 receive_delay_ms=%u status=%s elapsed_ms=%.1f\n",
	       P.rnr_delay_ms, got ? ibv_wc_status_str(wc.status) : "none", (mrc_now_s() - t0) * 1e3);
	if (!got || wc.status != IBV_WC_SUCCESS || wc.wr_id != 6 || wc.opcode != IBV_WC_SEND) {
		error("rnr_retry 7 with a late receive: expected success, got %s",
		      got ? ibv_wc_status_str(wc.status) : "no completion in 120 s");
		fails++;
	}
	ctl_send(CTL_DONE, 0, 0, 0, fails, 0);
	ctl_wait(CTL_DONE, &m);
	if (m.c)
		fails++;
	printf("MRC_VERIFY_RESULT role=client mode=rnr status=%s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

/* orderly teardown after a clean run: every destroy must succeed */
static int teardown(void)
{
	int bad = 0, r;
	unsigned i;

#define TRY(call, what)							\
	do {								\
		r = (call);						\
		if (r) {						\
			printf("mrc_verify[%s]: ERROR: %s failed: %s\n", O.role, what, \
			       strerror(r > 0 ? r : errno));		\
			bad++;						\
		}							\
	} while (0)
	for (i = 0; i < P.qps; i++) {
		struct qpc *q = &Q[i];

		TRY(ibv_destroy_qp(q->qp), "ibv_destroy_qp");
		TRY(ibv_dereg_mr(q->src_mr), "ibv_dereg_mr");
		TRY(ibv_dereg_mr(q->wtgt_mr), "ibv_dereg_mr");
		TRY(ibv_dereg_mr(q->rbuf_mr), "ibv_dereg_mr");
		TRY(ibv_dereg_mr(q->rsrc_mr), "ibv_dereg_mr");
		TRY(ibv_dereg_mr(q->atom_mr), "ibv_dereg_mr");
	}
	TRY(ibv_destroy_cq(cq), "ibv_destroy_cq");
	TRY(ibv_destroy_comp_channel(chan), "ibv_destroy_comp_channel");
	TRY(ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	TRY(ibv_close_device(ctx), "ibv_close_device");
#undef TRY
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* main                                                                       */

static uint64_t q_total_ops(void)
{
	uint64_t n = 0;
	unsigned t;

	for (t = 0; t < OP_NR; t++)
		n += S.ops[t];
	return n;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
"usage: mrc_verify -d DEV -g GID-INDEX [options]              (server)\n"
"       mrc_verify -d DEV -g GID-INDEX [options] SERVER-ADDR  (client)\n"
"  -d, --dev DEV          RDMA device\n"
"  -i, --ib-port N        port (1)\n"
"  -g, --gid-idx N        GID index (required)\n"
"  -p, --port N           TCP control port (18600)\n"
"client options (the server takes them from the client):\n"
"  -n, --iters N          ops per QP and direction (default 2000 without -D)\n"
"  -D, --duration SEC     post ops for SEC seconds instead\n"
"  -q, --qps N            QPs (2)\n"
"  -s, --max-size BYTES   largest message (1048576); K/M suffixes\n"
"      --min-size BYTES   smallest message (0; sizes drawn below it grow to it)\n"
"  -S, --seed N           seed (random, printed)\n"
"  -m, --mtu BYTES        path MTU (default: the ports' active MTU)\n"
"  -o, --ops LIST         comma list of send,send_imm,write,write_imm,read,\n"
"                         cas,faa (or all, atomic, or a hex mask)\n"
"  -w, --window N         ops in flight per QP and direction (8; odd: one more,\n"
"                         except 1)\n"
"      --inline N         max_inline_data to request and use (128)\n"
"      --timeout N        QP local ACK timeout exponent (17)\n"
"      --retry-cnt N      (7)\n"
"      --rnr-retry N      (7)\n"
"      --min-rnr-timer N  (12)\n"
"      --rnr-delay MS     rnr mode: delay of the late receive (300)\n"
"      --mode MODE        verify | badrkey | retry | rnr | rdlimit\n"
"      --dir DIR          both | c2s | s2c: who sends requests (both)\n"
"      --max-sge N        SGEs per request and receive, 1..%d (4): many\n"
"                         small pieces test gathers past the fragments of\n"
"                         one packet\n"
"      --rd-atomic N      max_rd_atomic and max_dest_rd_atomic, 1..255 (16)\n"
"local options:\n"
"      --busy             busy-poll the CQ instead of sleeping on events\n"
"      --rate MBIT        post requests no faster than MBIT Mbit/s of payload\n"
"                         per QP (default: as fast as the window allows)\n"
"      --stall SEC        fail after SEC seconds without progress (60)\n"
"      --max-errors N     stop after N errors (1)\n"
"      --lax-sq-len       do not check byte_len of send-side completions\n"
"      --go-file PATH     retry mode: post when PATH exists\n"
"      --start-at EPOCH   verify mode: start the streams at this wall-clock\n"
"                         second (date +%%s.%%N), e.g. several clients at once\n"
"      --start-file PATH  verify mode: start the streams once PATH exists\n"
"      --corrupt N        self-test: damage op N of this side's stream (its data,\n"
"                         immediate or result); the run must then fail\n"
"  -v, --verbose\n", NSGE_MAX);
	exit(rc);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end)
		die("bad size %s", s);
	return v;
}

static uint32_t parse_ops(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	uint32_t mask = 0;
	unsigned t;

	if (s[0] == '0' && s[1] == 'x')
		return strtoul(s, NULL, 16);
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			mask |= (1u << OP_NR) - 1;
			continue;
		}
		if (!strcmp(tok, "atomic")) {
			mask |= 1u << OP_CAS | 1u << OP_FAA;
			continue;
		}
		for (t = 0; t < OP_NR; t++)
			if (!strcmp(tok, op_short[t]))
				break;
		if (t == OP_NR)
			die("unknown op %s", tok);
		mask |= 1u << t;
	}
	free(dup);
	if (!mask)
		die("empty --ops");
	return mask;
}

int main(int argc, char **argv)
{
	enum { O_INLINE = 256, O_TIMEOUT, O_RETRY, O_RNR, O_RNRT, O_RNRD, O_MODE, O_BUSY,
	       O_STALL, O_MAXERR, O_LAX, O_GO, O_DIR, O_CORRUPT, O_START, O_STARTF,
	       O_RATE, O_MAXSGE, O_RDATOM, O_MINSIZE };
	static const struct option lo[] = {
		{ "dev", 1, 0, 'd' }, { "ib-port", 1, 0, 'i' }, { "gid-idx", 1, 0, 'g' },
		{ "port", 1, 0, 'p' }, { "iters", 1, 0, 'n' }, { "duration", 1, 0, 'D' },
		{ "qps", 1, 0, 'q' }, { "max-size", 1, 0, 's' }, { "seed", 1, 0, 'S' },
		{ "mtu", 1, 0, 'm' }, { "ops", 1, 0, 'o' }, { "window", 1, 0, 'w' },
		{ "inline", 1, 0, O_INLINE }, { "timeout", 1, 0, O_TIMEOUT },
		{ "retry-cnt", 1, 0, O_RETRY }, { "rnr-retry", 1, 0, O_RNR },
		{ "min-rnr-timer", 1, 0, O_RNRT }, { "rnr-delay", 1, 0, O_RNRD },
		{ "mode", 1, 0, O_MODE }, { "busy", 0, 0, O_BUSY }, { "stall", 1, 0, O_STALL },
		{ "max-errors", 1, 0, O_MAXERR }, { "lax-sq-len", 0, 0, O_LAX },
		{ "go-file", 1, 0, O_GO }, { "dir", 1, 0, O_DIR },
		{ "corrupt", 1, 0, O_CORRUPT }, { "start-at", 1, 0, O_START },
		{ "start-file", 1, 0, O_STARTF }, { "rate", 1, 0, O_RATE },
		{ "max-sge", 1, 0, O_MAXSGE }, { "rd-atomic", 1, 0, O_RDATOM },
		{ "min-size", 1, 0, O_MINSIZE },
		{ "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' },
		{ 0 }
	};
	int c, rc;
	unsigned m;

	t_start = mrc_now_s();
	O.role = "?";
	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "d:i:g:p:n:D:q:s:S:m:o:w:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'd': O.dev = optarg; break;
		case 'i': O.ib_port = atoi(optarg); break;
		case 'g': O.gid_idx = atoi(optarg); break;
		case 'p': O.tcp_port = atoi(optarg); break;
		case 'n': P.iters = strtoull(optarg, NULL, 0); break;
		case 'D': P.duration_ms = (uint64_t)(atof(optarg) * 1000); break;
		case 'q': P.qps = atoi(optarg); break;
		case 's': P.max_size = (uint32_t)parse_size(optarg); break;
		case 'S': P.seed = strtoull(optarg, NULL, 0); O.seed_set = true; break;
		case 'm': P.mtu = atoi(optarg); break;
		case 'o': P.ops_mask = parse_ops(optarg); break;
		case 'w': P.window = atoi(optarg); break;
		case O_INLINE: P.inline_size = atoi(optarg); break;
		case O_TIMEOUT: P.timeout = atoi(optarg); break;
		case O_RETRY: P.retry_cnt = atoi(optarg); break;
		case O_RNR: P.rnr_retry = atoi(optarg); break;
		case O_RNRT: P.min_rnr_timer = atoi(optarg); break;
		case O_RNRD: P.rnr_delay_ms = atoi(optarg); break;
		case O_MODE:
			for (m = 0; m < sizeof(mode_name) / sizeof(mode_name[0]); m++)
				if (!strcmp(optarg, mode_name[m]))
					break;
			if (m == sizeof(mode_name) / sizeof(mode_name[0]))
				die("unknown mode %s", optarg);
			P.mode = m;
			break;
		case O_BUSY: O.busy = true; break;
		case O_RATE: O.rate_bps = atof(optarg) * 1e6; break;
		case O_MAXSGE: P.max_sge = atoi(optarg); break;
		case O_MINSIZE: P.min_size = (uint32_t)parse_size(optarg); break;
		case O_RDATOM: P.max_rd_atomic = atoi(optarg); break;
		case O_STALL: O.stall_s = atof(optarg); break;
		case O_MAXERR: O.max_errors = atoi(optarg); break;
		case O_LAX: O.lax_sq_len = true; break;
		case O_GO: O.go_file = optarg; break;
		case O_CORRUPT: O.corrupt = strtoll(optarg, NULL, 0); break;
		case O_START: O.start_at = atof(optarg); break;
		case O_STARTF: O.start_file = optarg; break;
		case O_DIR:
			if (!strcmp(optarg, "both"))
				P.dirs = 3;
			else if (!strcmp(optarg, "c2s"))
				P.dirs = 1;
			else if (!strcmp(optarg, "s2c"))
				P.dirs = 2;
			else
				die("bad --dir %s", optarg);
			break;
		case 'v': O.verbose++; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind < argc)
		O.server = argv[optind++];
	if (optind < argc)
		usage(2);
	O.role = O.server ? "client" : "server";
	my_dir = O.server ? 0 : 1;
	if (O.server) {
		if (!O.seed_set) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			P.seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
				       (uint64_t)getpid());
		}
		if (!P.iters && !P.duration_ms)
			P.iters = 2000;
		if (P.max_size > (1u << 30))
			die("--max-size too large");
		if (P.min_size > P.max_size)
			die("--min-size above --max-size");
		if (P.mode == MODE_BADRKEY && P.qps < 5)
			P.qps = 5;
		if ((P.mode == MODE_RNR || P.mode == MODE_RDLIMIT) && P.qps < 2)
			P.qps = 2;
		if (P.mode == MODE_RETRY)
			P.qps = 1;
		/* 1: one op at a time (the lone-operation recovery tests) */
		if (P.window > 1 && (P.window & 1))
			P.window++;
		if (P.mode == MODE_VERIFY)
			msg("seed 0x%" PRIx64 " (rerun with --seed 0x%" PRIx64 ")", P.seed, P.seed);
	}
	setup();
	switch (P.mode) {
	case MODE_VERIFY: rc = run_verify(); break;
	case MODE_BADRKEY: rc = run_badrkey(); break;
	case MODE_RETRY: rc = run_retry(); break;
	case MODE_RNR: rc = run_rnr(); break;
	case MODE_RDLIMIT: rc = run_rdlimit(); break;
	default: rc = 2;
	}
	/* no orderly teardown after errors: the process exit releases it all */
	if (!rc)
		rc = teardown();
	fflush(stdout);
	return rc;
}

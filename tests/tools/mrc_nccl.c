// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_nccl: the verbs usage of NCCL's IB/RoCE network transport (net_ib),
 * CPU only, between two hosts.  Written from a reading of NCCL's
 * src/transport/net_ib and src/misc/ibvwrap.cc; no NCCL code is used.
 *
 *   receiver (server): mrc_nccl -d DEV [options]
 *   sender (client):   mrc_nccl -d DEV [options] SERVER-ADDR
 *
 * The two processes meet over TCP (the sender sends the shared parameters),
 * then run NCCL's protocol for --iters requests:
 *
 *  - discovery as NCCL does it: every device of ibv_get_device_list is
 *    opened and queried (sys_image_guid non-zero and unique, port ACTIVE,
 *    Ethernet link layer, speed); the GID is chosen with NCCL's default
 *    search (IPv4-mapped RoCE v2, type read from sysfs gid_attrs/types),
 *    cross-checked with ibv_query_gid_ex;
 *  - one PD and one CQ per side; sender QPs with max_recv_wr 0, receiver QPs
 *    with max_recv_wr 256, a loopback "flush" QP connected to itself; data
 *    buffers registered with ibv_reg_mr_iova2(IBV_ACCESS_RELAXED_ORDERING),
 *    the receive pool also through a second, overlapping MR;
 *    ibv_reg_dmabuf_mr(fd -1), ibv_query_ece and ibv_set_ece must say
 *    "not supported" the way NCCL expects;
 *  - the receiver writes 64-byte clear-to-send (CTS) entries into the
 *    sender's FIFO with RDMA WRITE (signaled only for slot 0); the sender
 *    polls them in plain memory;
 *  - the sender writes each request with RDMA_WRITE_WITH_IMM carrying the
 *    data, or (above the adaptive-routing threshold) RDMA_WRITE followed by
 *    a zero-length WRITE_WITH_IMM with rkey 0 and address 0, or (several
 *    receive buffers in one request) up to 8 WRITEs and a WITH_IMM that
 *    writes sizes[] into the receiver's completion record;
 *  - with --qps N the request is striped over the QPs (--split 1,
 *    NCCL_IB_SPLIT_DATA_ON_QPS) or the QPs are used round robin;
 *  - --match index (NCCL's default): one zero-SGE receive posted per request
 *    and QP, wr_id = slot, imm = size; --match id (NCCL's pre-posting mode):
 *    256 zero-SGE receives pre-posted per QP and re-posted on completion,
 *    imm = request id;
 *  - after a request completes, the receiver verifies every byte, then
 *    flushes with a 1-byte RDMA_READ through the loopback QP.
 *
 * Every payload byte, every CTS entry, every sizes[] record and every field
 * of every completion is checked.  Feature checks print
 *   MRC_NCCL_CHECK ROLE NAME PASS|FAIL TEXT
 * and the run ends with
 *   MRC_NCCL_RESULT role=ROLE status=PASS|FAIL key=value...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "mrc_ctl.h"

#define MAX_REQUESTS	256	/* FIFO slots (NCCL: 32 requests x 8 receives) */
#define MAX_WINDOW	32	/* requests in flight (NCCL_NET_MAX_REQUESTS) */
#define MAX_RECVS	8	/* receive buffers per request */
#define MAX_DEVS	8	/* rkeys per CTS entry */
#define MAX_QPS		16
#define WR_ALIGN	128	/* per-QP chunks are multiples of this */
#define GUARD		64	/* poisoned bytes checked after each payload */
#define POISON		0xa5
#define FLUSH_POISON	0x5a
#define RECV_WRID_DUMMY	UINT64_MAX
#define FLUSH_WRID	(1ull << 62)
#define COMM_OFF	192	/* FIFOs and records start mid-page, as in NCCL */
#define CTL_MAGIC	0x4e43434cu	/* "NCCL" */
#define CTL_VERSION	1

/* one clear-to-send entry: 64 bytes, idx last (offset 56) */
struct cts_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t rkeys[MAX_DEVS];
	uint32_t nreqs;
	uint32_t tag;
	uint64_t idx;
};
_Static_assert(sizeof(struct cts_entry) == 64, "CTS entry is 64 bytes");
_Static_assert(offsetof(struct cts_entry, idx) == 56, "idx at offset 56");

/* the receiver's record of one request; the sender writes sizes[] */
struct cmpl_record {
	int32_t sizes[MAX_RECVS];
	uint8_t completions[128];
};

enum match { MATCH_INDEX, MATCH_ID };
enum corrupt { CORRUPT_NONE, CORRUPT_DATA, CORRUPT_SIZES, CORRUPT_IMM };
static const char *const corrupt_name[] = { "none", "data", "sizes", "imm" };

/* parameters shared by both sides: the sender's values win */
struct params {
	uint32_t magic, version;
	uint32_t qps;
	uint32_t split;
	uint32_t match;
	uint32_t window;
	uint32_t max_size;
	uint32_t multi_pct;
	int32_t ar_threshold;		/* -1: no adaptive-routing pattern */
	uint32_t flush_every;		/* 0: no flush */
	uint32_t psn;
	uint32_t timeout, retry_cnt;
	uint32_t corrupt;
	uint64_t corrupt_id;
	uint64_t seed;
	uint64_t iters;
};

static struct params P = {
	.magic = CTL_MAGIC, .version = CTL_VERSION,
	.qps = 1, .split = 1, .match = MATCH_INDEX, .window = 32,
	.max_size = 65536, .multi_pct = 25, .ar_threshold = 8192,
	.flush_every = 1, .psn = 0, .timeout = 20, .retry_cnt = 7,
	.iters = 10000,
};

static struct {
	const char *dev;
	const char *server;
	int port;
	int gid_idx;
	int tcp_port;
	double stall_s;
	bool lax_len;
	bool seed_set;
	int idle;		/* IDLE_* */
	unsigned int sleep_us;
	const char *role;
	bool sender;
} O = {
	.port = 1, .gid_idx = -1, .tcp_port = 18700, .stall_s = 60, .idle = 2,
	.sleep_us = 20,
	.role = "receiver",
};

/* ------------------------------------------------------------------------ */
/* messages                                                                   */

static double t0;
static unsigned int n_errors;
static unsigned int n_check_fail;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	printf("mrc_nccl[%s %.3f]: ", O.role, mrc_now_s() - t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("mrc_nccl[%s %.3f]: FATAL: ", O.role, mrc_now_s() - t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nMRC_NCCL_RESULT role=%s status=FAIL reason=fatal\n", O.role);
	fflush(stdout);
	exit(2);
}

/* a data-path error: reported, then the run stops */
static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	printf("mrc_nccl[%s %.3f]: ERROR: ", O.role, mrc_now_s() - t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	n_errors++;
}

static void check(const char *name, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("MRC_NCCL_CHECK %s %s %s ", O.role, name, ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		n_check_fail++;
}

enum { IDLE_SPIN, IDLE_YIELD, IDLE_SLEEP };

/*
 * Called on every empty pass of a poll loop.  NCCL spins; on a 2-vCPU TCG
 * guest two spinning processes starve the kernel's packet processing, so
 * by default a loop sleeps briefly after 64 empty passes (no verbs call
 * either way).
 */
static void idle(unsigned long spins)
{
	struct timespec ts = { 0, 0 };

	if (O.idle == IDLE_SPIN || spins % 64)
		return;
	if (O.idle == IDLE_YIELD) {
		sched_yield();
		return;
	}
	ts.tv_nsec = O.sleep_us * 1000L;
	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------ */
/* deterministic plan and patterns                                            */

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

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t divup(uint32_t a, uint32_t b)
{
	return (a + b - 1) / b;
}

/* what request ID looks like: both sides compute the same plan */
struct plan {
	uint32_t n;
	uint32_t posted[MAX_RECVS];	/* receive sizes in the CTS */
	uint32_t size[MAX_RECVS];	/* what the sender sends: min(want, posted) */
	uint32_t off[MAX_RECVS];	/* buffer offset inside its stride */
	uint32_t tag[MAX_RECVS];
	bool truncated;
	bool ar;			/* WRITE + zero-length WRITE_WITH_IMM */
	uint32_t nq;			/* QPs the request uses */
	uint32_t qp[MAX_QPS];		/* their indices */
	uint32_t len[MAX_QPS][MAX_RECVS];	/* bytes per QP and buffer */
	uint32_t imm_len[MAX_QPS];	/* byte_len of each QP's WITH_IMM */
};

static uint32_t pick_size(uint64_t *s)
{
	uint32_t x = rnd(s) % 100, max = P.max_size, r = (uint32_t)rnd(s);

	if (x < 5)
		return 0;
	if (x < 30)
		return 1 + r % min_u32(256, max);
	if (x < 70)
		return min_u32(max, 257 + r % 8192);
	return min_u32(max, 8193 + r % (max > 8193 ? max - 8192 : 1));
}

static void make_plan(uint64_t id, struct plan *p)
{
	uint64_t s = mix64(P.seed ^ mix64(id + 0x5eedull));
	uint32_t r, i, chunk[MAX_RECVS], done[MAX_RECVS];

	memset(p, 0, sizeof(*p));
	p->n = 1;
	if (rnd(&s) % 100 < P.multi_pct)
		p->n = 2 + rnd(&s) % (MAX_RECVS - 1);
	for (r = 0; r < p->n; r++) {
		uint32_t want = pick_size(&s), x = rnd(&s);

		p->posted[r] = want;
		if (x % 16 == 0 && want) {		/* receiver posts less */
			p->posted[r] = (uint32_t)(rnd(&s) % want);
			p->truncated = true;
		} else if (x % 16 < 8) {		/* or more */
			p->posted[r] = min_u32(P.max_size, want + (uint32_t)(rnd(&s) % 4096));
		}
		p->size[r] = min_u32(want, p->posted[r]);
		p->off[r] = (x >> 8) % 8 == 0 ? 8 * (uint32_t)(rnd(&s) % 8) : 0;
		p->tag[r] = (uint32_t)rnd(&s);
	}
	p->ar = p->n == 1 && P.ar_threshold >= 0 &&
		p->size[0] > (uint32_t)P.ar_threshold;

	/* QPs: all of them striped (split), or one, round robin */
	p->nq = P.split ? P.qps : 1;
	for (i = 0; i < p->nq; i++)
		p->qp[i] = (uint32_t)((id * p->nq + i) % P.qps);
	for (r = 0; r < p->n; r++) {
		chunk[r] = divup(divup(p->size[r], p->nq), WR_ALIGN) * WR_ALIGN;
		done[r] = 0;
	}
	for (i = 0; i < p->nq; i++) {
		for (r = 0; r < p->n; r++) {
			p->len[i][r] = min_u32(p->size[r] - done[r], chunk[r]);
			done[r] += p->len[i][r];
		}
		if (p->n > 1)
			p->imm_len[i] = p->n * sizeof(int32_t);
		else if (p->ar)
			p->imm_len[i] = 0;
		else
			p->imm_len[i] = p->len[i][0];
	}
}

static uint64_t data_key(uint64_t id, uint32_t r)
{
	return mix64(P.seed ^ mix64((id << 4) + r + 0x1000ull));
}

static uint64_t pat_word(uint64_t key, uint64_t w)
{
	return mix64(key + (w + 1) * 0x9e3779b97f4a7c15ull);
}

static void pat_fill(uint8_t *p, uint64_t key, size_t len)
{
	size_t w;

	for (w = 0; w + 8 <= len; w += 8) {
		uint64_t v = pat_word(key, w >> 3);

		memcpy(p + w, &v, 8);
	}
	if (w < len) {
		uint64_t v = pat_word(key, w >> 3);

		memcpy(p + w, &v, len - w);
	}
}

/* index of the first byte that differs from the pattern, or -1 */
static long pat_check(const uint8_t *p, uint64_t key, size_t len)
{
	size_t w, i;

	for (w = 0; w < len; w += 8) {
		uint64_t v = pat_word(key, w >> 3);
		size_t n = len - w < 8 ? len - w : 8;

		if (memcmp(p + w, &v, n)) {
			for (i = 0; i < n; i++)
				if (p[w + i] != (uint8_t)(v >> (8 * i)))
					return (long)(w + i);
		}
	}
	return -1;
}

static long not_byte(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* control connection                                                         */

static int ctl_fd = -1;

static void write_all(const void *buf, size_t len)
{
	if (mrc_xfer(ctl_fd, (void *)buf, len, true))
		die("control connection: write: %s", strerror(errno));
}

static void read_all(void *buf, size_t len)
{
	if (mrc_xfer(ctl_fd, buf, len, false))
		die("control connection: read: %s", strerror(errno));
}

/* what each side sends the other at the end */
struct wire_stats {
	uint64_t reqs, bytes, errors;
};

/*
 * True if the peer closed the connection or already reported a failed run
 * (its final statistics arrive while this side still works).
 */
static bool ctl_peer_gone(void)
{
	struct wire_stats ws;
	ssize_t n = recv(ctl_fd, &ws, sizeof(ws), MSG_DONTWAIT | MSG_PEEK);

	if (n == (ssize_t)sizeof(ws))
		return ws.errors != 0;
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			  errno != EINTR);
}

static void ctl_connect(void)
{
	const char *why;

	if (!O.sender)
		msg("listening on TCP port %d", O.tcp_port);
	ctl_fd = mrc_ctl_open(O.sender ? O.server : NULL, O.tcp_port, 20, &why);
	if (ctl_fd < 0)
		die("control connection, %s port %d: %s", O.sender ? O.server : "listening on",
		    O.tcp_port, why);
}

/* ------------------------------------------------------------------------ */
/* discovery and GID selection                                                */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_port_attr port_attr;
static struct ibv_device_attr dev_attr;
static int gid_idx;
static union ibv_gid my_gid;

static double lane_gbps(uint32_t speed)
{
	switch (speed) {
	case 1: return 2.5;
	case 2: return 5;
	case 4: return 10;
	case 8: return 10.3125;
	case 16: return 14.0625;
	case 32: return 25.78125;
	case 64: return 53.125;
	case 128: return 106.25;
	case 256: return 212.5;
	}
	return 0;
}

static int width_lanes(uint8_t w)
{
	switch (w) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	}
	return 0;
}

static void discover(void)
{
	struct ibv_device **list;
	struct ibv_context *c;
	uint64_t guids[64];
	int n, i, found = -1, ng = 0;
	bool ok = true, dup = false;
	char why[256] = "";
	double gbps;
	uint32_t speed;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		struct ibv_device_attr a;
		int k;

		c = ibv_open_device(list[i]);
		if (!c) {
			snprintf(why, sizeof(why), "cannot open %s: %s",
				 ibv_get_device_name(list[i]), strerror(errno));
			ok = false;
			continue;
		}
		if (ibv_query_device(c, &a)) {
			snprintf(why, sizeof(why), "ibv_query_device %s: %s",
				 ibv_get_device_name(list[i]), strerror(errno));
			ok = false;
			ibv_close_device(c);
			continue;
		}
		for (k = 0; k < ng; k++)
			if (guids[k] == a.sys_image_guid)
				dup = true;
		if (ng < 64)
			guids[ng++] = a.sys_image_guid;
		if (!strcmp(ibv_get_device_name(list[i]), O.dev)) {
			found = i;
			ctx = c;
			dev_attr = a;
		} else {
			ibv_close_device(c);
		}
	}
	if (found < 0)
		die("device %s not among the %d devices of ibv_get_device_list", O.dev, n);
	ibv_free_device_list(list);
	if (ibv_query_port(ctx, O.port, &port_attr))
		die("ibv_query_port: %s", strerror(errno));
	if (!dev_attr.sys_image_guid) {
		ok = false;
		snprintf(why, sizeof(why), "sys_image_guid is 0");
	} else if (dup) {
		ok = false;
		snprintf(why, sizeof(why), "sys_image_guid not unique among the devices (NCCL would merge them)");
	} else if (dev_attr.phys_port_cnt < 1) {
		ok = false;
		snprintf(why, sizeof(why), "phys_port_cnt 0");
	} else if (dev_attr.max_qp < 2 * MAX_QPS + 1) {
		ok = false;
		snprintf(why, sizeof(why), "max_qp %d", dev_attr.max_qp);
	} else if (port_attr.state != IBV_PORT_ACTIVE) {
		ok = false;
		snprintf(why, sizeof(why), "port %d is %s", O.port,
			 ibv_port_state_str(port_attr.state));
	} else if (port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		ok = false;
		snprintf(why, sizeof(why), "link_layer %u, not Ethernet",
			 port_attr.link_layer);
	}
	check("discovery", ok, "%d devices listed (sys_image_guids distinct: %s); %s: sys_image_guid 0x%016" PRIx64
	      " phys_port_cnt %u max_qp %d; port %d %s link_layer %s active_mtu %d%s%s",
	      n, dup ? "no" : "yes", O.dev, be64toh(dev_attr.sys_image_guid),
	      dev_attr.phys_port_cnt, dev_attr.max_qp, O.port,
	      ibv_port_state_str(port_attr.state),
	      port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "not-Ethernet",
	      128 << port_attr.active_mtu, *why ? "; " : "", why);

	/* port speed as NCCL computes it (without ibv_query_port_speed) */
	speed = port_attr.active_speed_ex ? port_attr.active_speed_ex : port_attr.active_speed;
	gbps = lane_gbps(speed) * width_lanes(port_attr.active_width);
	check("port_speed", gbps > 0,
	      "active_speed %u active_speed_ex %u active_width %u: %.1f Gb/s%s",
	      port_attr.active_speed, port_attr.active_speed_ex,
	      port_attr.active_width, gbps,
	      gbps > 0 ? "" : " (NCCL would assume 400 Gb/s)");
}

static bool gid_zero(const union ibv_gid *g)
{
	static const uint8_t z[16];

	return !memcmp(g->raw, z, 16);
}

static bool gid_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t mc[12] = { 0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pre, 12) || !memcmp(g->raw, mc, 12);
}

/* configured and not link local (fe80::/64) */
static bool gid_usable(const union ibv_gid *g)
{
	static const uint8_t ll[8] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0 };

	return !gid_zero(g) && memcmp(g->raw, ll, 8);
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, g->raw, buf, len))
		snprintf(buf, len, "?");
}

/* RoCE version of a GID from sysfs: 2, 1, or 0 (unknown); -1 no file */
static int roce_version(int idx)
{
	char path[256], buf[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
		 O.dev, O.port, idx);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;	/* EINVAL for an empty entry: skip it */
	if (!strncmp(buf, "RoCE v2", 7))
		return 2;
	if (!strncmp(buf, "RoCE v1", 7) || !strncmp(buf, "IB/RoCE v1", 10))
		return 1;
	return 0;
}

/*
 * NCCL's default choice (NCCL_IB_GID_INDEX unset, address family AF_INET,
 * RoCE version 2, no address range): start at index 0; a later entry
 * replaces the current one if it switches to the wanted family, or if it
 * is a usable AF_INET GID of RoCE v2 while the current one is not.
 */
static void select_gid(void)
{
	union ibv_gid *tbl;
	struct ibv_gid_entry ge;
	int len = port_attr.gid_tbl_len, i, bad_query = -1, nvalid = 0;
	int ver_err = -1, cur_ver = 0, ret;
	char s[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE] = "?";
	bool ok;

	tbl = calloc(len ? len : 1, sizeof(*tbl));
	if (!tbl)
		die("out of memory");
	for (i = 0; i < len; i++) {
		if (ibv_query_gid(ctx, O.port, i, &tbl[i]) && bad_query < 0)
			bad_query = i;
		if (gid_usable(&tbl[i]))
			nvalid++;
	}
	check("query_gid_all", len > 0 && bad_query < 0,
	      "ibv_query_gid succeeded for all %d indices below gid_tbl_len%s (%d usable GIDs)",
	      len, bad_query < 0 ? "" : ", failed at one", nvalid);
	if (bad_query >= 0)
		msg("ibv_query_gid failed at index %d", bad_query);

	if (O.gid_idx >= 0) {
		gid_idx = O.gid_idx;
	} else {
		gid_idx = 0;
		cur_ver = roce_version(0);
		for (i = 1; i < len; i++) {
			bool cur_v4 = gid_v4mapped(&tbl[gid_idx]);
			bool cand_v4 = gid_v4mapped(&tbl[i]);
			int v;

			if (cand_v4 != cur_v4 && cand_v4) {
				gid_idx = i;
				cur_ver = roce_version(i);
				continue;
			}
			if (!cand_v4 || !gid_usable(&tbl[i]))
				continue;
			v = roce_version(i);
			if (v < 0 && ver_err < 0)
				ver_err = i;
			if ((cur_ver != v || !gid_usable(&tbl[gid_idx])) && v == 2) {
				gid_idx = i;
				cur_ver = v;
			}
		}
	}
	my_gid = tbl[gid_idx];
	gid_str(&my_gid, s, sizeof(s));
	cur_ver = roce_version(gid_idx);

	memset(&ge, 0, sizeof(ge));
	ret = ibv_query_gid_ex(ctx, O.port, gid_idx, &ge, 0);
	if (!ret && ge.ndev_ifindex)
		if_indextoname(ge.ndev_ifindex, ifname);
	ok = gid_usable(&my_gid) && gid_v4mapped(&my_gid) && cur_ver == 2 &&
	     ver_err < 0 && !ret && ge.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	     !memcmp(ge.gid.raw, my_gid.raw, 16) && ge.gid_index == (uint32_t)gid_idx;
	check("gid_select", ok,
	      "index %d %s (IPv4-mapped %s, sysfs type %s); ibv_query_gid_ex: %s, type %s, same GID %s, netdev %s; gid_tbl_len %d%s",
	      gid_idx, s, gid_v4mapped(&my_gid) ? "yes" : "no",
	      cur_ver == 2 ? "RoCE v2" : cur_ver == 1 ? "RoCE v1" : "unknown",
	      ret ? strerror(ret) : "ok",
	      ge.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
	      ge.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB",
	      !memcmp(ge.gid.raw, my_gid.raw, 16) ? "yes" : "no", ifname, len,
	      ver_err >= 0 ? "; a gid_attrs/types file could not be opened" : "");
	msg("GID_SELECTED index=%d gid=%s", gid_idx, s);
	free(tbl);
}

/* ------------------------------------------------------------------------ */
/* verbs resources                                                            */

static struct ibv_qp *qps[MAX_QPS];
static struct ibv_qp *flush_qp;
static uint32_t peer_qpn[MAX_QPS];
static union ibv_gid peer_gid;
static enum ibv_mtu path_mtu;

struct side_info {
	uint8_t gid[16];
	uint32_t lid;
	uint32_t mtu;			/* enum ibv_mtu */
	uint32_t link_layer;
	uint32_t nqps;
	uint32_t qpn[MAX_QPS];
	uint64_t addr;			/* sender: CTS FIFO; receiver: records */
	uint32_t rkey;
	uint32_t pad;
};

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
		die("ibv_reg_mr %s: %s", what, strerror(errno));
	if (!mr->rkey && (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		check("rkey_nonzero", false, "MR %s got rkey 0 (NCCL rejects rkey 0)", what);
	return mr;
}

/* NCCL's data registration: page rounded, iova = address, relaxed ordering */
static struct ibv_mr *reg_data(void *addr, size_t len, const char *what)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		     IBV_ACCESS_RELAXED_ORDERING;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
	size_t l = (((uintptr_t)addr + len + pg - 1) & ~(uintptr_t)(pg - 1)) - a;
	struct ibv_mr *mr = ibv_reg_mr_iova2(pd, (void *)a, l, a, access);

	check("reg_mr_iova2", mr && mr->rkey && mr->lkey,
	      "%s: ibv_reg_mr_iova2(%zu bytes, iova = address, LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC|RELAXED_ORDERING): %s%s",
	      what, l, mr ? "ok" : strerror(errno),
	      mr && !mr->rkey ? ", rkey 0" : "");
	if (!mr)
		die("cannot register %s", what);
	return mr;
}

static void probe_dmabuf(void)
{
	struct ibv_mr *mr;
	int e;

	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
	e = errno;
	check("dmabuf", !mr && (e == EOPNOTSUPP || e == EPROTONOSUPPORT),
	      "ibv_reg_dmabuf_mr(fd -1) %s, errno %d (%s): NCCL %s",
	      mr ? "succeeded" : "failed", e, strerror(e),
	      !mr && (e == EOPNOTSUPP || e == EPROTONOSUPPORT) ?
	      "treats DMA-BUF as not supported" :
	      "would believe DMA-BUF works (it only accepts EOPNOTSUPP/EPROTONOSUPPORT as 'not supported')");
	if (mr)
		ibv_dereg_mr(mr);
}

static void probe_ece(struct ibv_qp *qp, bool set)
{
	struct ibv_ece ece;
	int ret;

	memset(&ece, 0, sizeof(ece));
	ret = set ? ibv_set_ece(qp, &ece) : ibv_query_ece(qp, &ece);
	check(set ? "ece_set" : "ece_query", ret == EOPNOTSUPP,
	      "%s returned %d (%s): %s", set ? "ibv_set_ece" : "ibv_query_ece",
	      ret, ret ? strerror(ret) : "success",
	      ret == EOPNOTSUPP ? "NCCL treats ECE as unsupported" :
	      ret ? "NCCL fails the connection on this error" :
	      "ECE claimed supported (NCCL would exchange it)");
}

static struct ibv_qp *create_qp(uint32_t send_wr, uint32_t recv_wr, int access,
				const char *what)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 0 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = O.port,
		.qp_access_flags = access,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp %s (send_wr %u recv_wr %u): %s", what, send_wr,
		    recv_wr, strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify %s QP to INIT: %s", what, strerror(errno));
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
		       enum ibv_mtu mtu, uint32_t psn)
{
	struct ibv_qp_attr a;
	int tries;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.grh.sgid_index = gid_idx;
	a.ah_attr.grh.hop_limit = 255;
	a.ah_attr.grh.traffic_class = 0;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = O.port;
	for (tries = 0;; tries++) {
		if (!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			break;
		/* NCCL retries ETIMEDOUT (slow neighbour resolution) */
		if (errno != ETIMEDOUT || tries > 10)
			die("modify QP %u to RTR: %s", qp->qp_num, strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = P.timeout;
	a.retry_cnt = P.retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	a.sq_psn = psn;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify QP %u to RTS: %s", qp->qp_num, strerror(errno));
}

/* first PSN of QP I, both directions: --psn, the QPs 0x101 apart */
static uint32_t qp_psn(uint32_t i)
{
	return (P.psn + i * 0x101) & 0xffffff;
}

static int qp_index(uint32_t qpn)
{
	uint32_t i;

	for (i = 0; i < P.qps; i++)
		if (qps[i]->qp_num == qpn)
			return (int)i;
	return -1;
}

/* async events: NCCL treats the fatal ones as fatal */
static void check_async(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		if (t == IBV_EVENT_DEVICE_FATAL || t == IBV_EVENT_CQ_ERR ||
		    t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR ||
		    t == IBV_EVENT_QP_ACCESS_ERR)
			error("fatal async event %s", ibv_event_type_str(t));
		else
			msg("async event %s", ibv_event_type_str(t));
	}
}

/* ------------------------------------------------------------------------ */
/* statistics                                                                 */

static struct {
	uint64_t reqs, bufs, bytes;
	uint64_t multi, multi_bufs;	/* requests with n > 1 */
	uint64_t imm_data;		/* WRITE_WITH_IMM carrying payload */
	uint64_t ar;			/* WRITE + zero-length WITH_IMM, rkey 0 */
	uint64_t zero_len;		/* zero-length WRITE/WITH_IMM with an rkey */
	uint64_t sizes_recs;		/* WITH_IMM carrying sizes[] */
	uint64_t truncated;
	uint64_t flushes;
	uint64_t cts;			/* CTS entries written / consumed */
	uint64_t cts_signaled;
	uint64_t cts_spin;		/* CTS that appeared during a verbs-free spin */
	uint64_t cts_spin_calls;	/* verbs calls during those spins (must be 0) */
	uint64_t cqes;
	uint64_t reposts;
	uint64_t wrs;
	uint64_t slot_wraps;
	double max_gap;			/* longest time without a completed request */
} S;

/* ------------------------------------------------------------------------ */
/* the sender                                                                 */

struct sreq {
	uint64_t id;
	bool busy;
	uint32_t pending;		/* bitmask of QP indices still to complete */
	uint64_t wr_id;
	uint32_t qp_len[MAX_QPS];	/* byte_len of each QP's signaled WR */
};

static volatile struct cts_entry *fifo;	/* [MAX_REQUESTS][MAX_RECVS] */
static struct ibv_mr *fifo_mr;
static int32_t *sizes_src;		/* [MAX_REQUESTS][MAX_RECVS] */
static struct ibv_mr *sizes_mr;
static uint8_t *pool;			/* window x MAX_RECVS buffers */
static struct ibv_mr *pool_mr, *pool_mr2;
static size_t stride;
static uint64_t peer_addr;		/* sender: receiver's records */
static uint32_t peer_rkey;
static uint32_t peer_pool_rkeys[2];	/* sender: the receiver's two MRs */
static uint64_t peer_pool_addr;

static uint8_t *buf_at(uint64_t id, uint32_t r, const struct plan *p)
{
	return pool + ((id % P.window) * MAX_RECVS + r) * stride + p->off[r];
}

static bool poll_sender_cq(struct sreq *reqs, uint64_t next, uint64_t *oldest,
			   uint64_t *ndone)
{
	struct ibv_wc wc[16];
	int n, k;

	n = ibv_poll_cq(cq, 16, wc);
	if (n < 0) {
		error("ibv_poll_cq: %d", n);
		return false;
	}
	for (k = 0; k < n; k++) {
		struct ibv_wc *w = &wc[k];
		uint32_t slot = w->wr_id & 0xff;
		struct sreq *q = &reqs[slot];
		int qi = qp_index(w->qp_num);

		S.cqes++;
		if (w->status != IBV_WC_SUCCESS) {
			error("completion with error: %s (wr_id 0x%" PRIx64 " qp %u vendor_err %u)",
			      ibv_wc_status_str(w->status), w->wr_id, w->qp_num,
			      w->vendor_err);
			return false;
		}
		if (w->opcode != IBV_WC_RDMA_WRITE) {
			error("sender completion opcode %d, expected IBV_WC_RDMA_WRITE", w->opcode);
			return false;
		}
		if (!q->busy || w->wr_id != q->wr_id) {
			error("sender completion wr_id 0x%" PRIx64 " matches no outstanding request (slot %u %s, expected wr_id 0x%" PRIx64 ")",
			      w->wr_id, slot, q->busy ? "busy" : "idle", q->wr_id);
			return false;
		}
		if (qi < 0 || !(q->pending & (1u << qi))) {
			error("request %" PRIu64 ": completion on qp %u which has no WR of it pending",
			      q->id, w->qp_num);
			return false;
		}
		if (!O.lax_len && w->byte_len != q->qp_len[qi]) {
			error("request %" PRIu64 " qp %d: send completion byte_len %u, WR length %u",
			      q->id, qi, w->byte_len, q->qp_len[qi]);
			return false;
		}
		q->pending &= ~(1u << qi);
		if (!q->pending) {
			q->busy = false;
			(*ndone)++;
		}
	}
	/* requests complete in any order across QPs; the window follows the oldest */
	while (*oldest < next && !reqs[*oldest % MAX_REQUESTS].busy)
		(*oldest)++;
	return true;
}

/* check the CTS entries of request ID; returns false on a mismatch */
static bool check_cts(uint64_t id, const struct plan *p, volatile struct cts_entry *e)
{
	uint32_t r;

	for (r = 0; r < p->n; r++) {
		uint64_t want_addr = peer_pool_addr +
			((id % P.window) * MAX_RECVS + r) * stride + p->off[r];
		uint32_t want_rkey = peer_pool_rkeys[(id & 1) && (id % P.window) >= P.window / 2];
		uint32_t k;

		if (e[r].idx != id + 1 || e[r].nreqs != p->n || e[r].addr != want_addr ||
		    e[r].size != p->posted[r] || e[r].tag != p->tag[r] ||
		    e[r].rkeys[0] != want_rkey || !e[r].rkeys[0]) {
			error("request %" PRIu64 " CTS entry %u: idx %" PRIu64 " nreqs %u addr 0x%" PRIx64
			      " size %" PRIu64 " tag 0x%x rkey 0x%x; expected idx %" PRIu64
			      " nreqs %u addr 0x%" PRIx64 " size %u tag 0x%x rkey 0x%x",
			      id, r, e[r].idx, e[r].nreqs, e[r].addr, e[r].size, e[r].tag,
			      e[r].rkeys[0], id + 1, p->n, want_addr, p->posted[r],
			      p->tag[r], want_rkey);
			return false;
		}
		for (k = 1; k < MAX_DEVS; k++)
			if (e[r].rkeys[k]) {
				error("request %" PRIu64 " CTS entry %u: rkeys[%u] 0x%x, expected 0",
				      id, r, k, e[r].rkeys[k]);
				return false;
			}
	}
	return true;
}

/* NCCL's multi-send: per QP up to n WRITEs and one signaled WITH_IMM */
static bool sender_post(struct sreq *q, uint64_t id, const struct plan *p,
			volatile struct cts_entry *e)
{
	struct ibv_send_wr wrs[MAX_RECVS + 1], *last, *bad;
	struct ibv_sge sges[MAX_RECVS], szsge;
	uint32_t slot = id % MAX_REQUESTS, r, i;
	uint64_t wr_id = 0;
	bool extra = p->n > 1 || p->ar;
	uint32_t imm;

	memset(wrs, 0, sizeof(wrs));
	for (r = 0; r < p->n; r++) {
		wr_id += (uint64_t)(slot & 0xff) << (r * 8);
		wrs[r].wr_id = wr_id;
		wrs[r].opcode = IBV_WR_RDMA_WRITE;
		wrs[r].next = &wrs[r + 1];
		wrs[r].sg_list = &sges[r];
		wrs[r].wr.rdma.remote_addr = e[r].addr;
		sges[r].addr = (uintptr_t)buf_at(id, r, p);
		sges[r].lkey = pool_mr->lkey;
	}
	last = extra ? &wrs[p->n] : &wrs[p->n - 1];
	if (extra) {
		memset(last, 0, sizeof(*last));	/* AR: no SGE, address 0, rkey 0 */
		if (p->n > 1) {
			last->wr.rdma.remote_addr = peer_addr +
				slot * sizeof(struct cmpl_record);
			last->num_sge = 1;
		}
	}
	imm = P.match == MATCH_ID ? (uint32_t)id : p->size[0];
	if (P.corrupt == CORRUPT_IMM && id == P.corrupt_id)
		imm ^= 0x100;
	last->wr_id = wr_id;
	last->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	last->imm_data = htobe32(imm);
	last->next = NULL;
	last->send_flags = IBV_SEND_SIGNALED;

	for (r = 0; r < p->n; r++)
		sizes_src[slot * MAX_RECVS + r] = (int32_t)p->size[r];
	if (P.corrupt == CORRUPT_SIZES && id == P.corrupt_id && p->n > 1)
		sizes_src[slot * MAX_RECVS + 1] ^= 0x10;

	q->id = id;
	q->busy = true;
	q->wr_id = wr_id;
	q->pending = 0;
	for (i = 0; i < p->nq; i++) {
		uint32_t qi = p->qp[i];

		for (r = 0; r < p->n; r++) {
			wrs[r].wr.rdma.rkey = e[r].rkeys[0];
			sges[r].length = p->len[i][r];
			wrs[r].num_sge = sges[r].length ? 1 : 0;
			if (!sges[r].length)
				S.zero_len++;
		}
		if (p->n > 1) {
			szsge.addr = (uintptr_t)&sizes_src[slot * MAX_RECVS];
			szsge.length = p->n * sizeof(int32_t);
			szsge.lkey = sizes_mr->lkey;
			last->sg_list = &szsge;
			last->wr.rdma.rkey = peer_rkey;
			S.sizes_recs++;
		} else if (p->ar) {
			S.ar++;
		} else if (p->len[i][0]) {
			S.imm_data++;
		}
		q->pending |= 1u << qi;
		q->qp_len[qi] = p->imm_len[i];
		if (ibv_post_send(qps[qi], wrs, &bad)) {
			error("ibv_post_send request %" PRIu64 " qp %u: %s", id, qi,
			      strerror(errno));
			return false;
		}
		S.wrs += p->n + extra;
		for (r = 0; r < p->n; r++) {
			sges[r].addr += sges[r].length;
			wrs[r].wr.rdma.remote_addr += sges[r].length;
		}
	}
	return true;
}

static bool cts_ready(volatile struct cts_entry *e, uint64_t id)
{
	return __atomic_load_n(&e->idx, __ATOMIC_ACQUIRE) == id + 1;
}

/*
 * Nothing in flight: wait for the CTS of request ID in plain memory with
 * no verbs call (a pause, a clock read and now and then a look at the TCP
 * connection only).  Returns true if it arrived during the wait.
 */
static bool wait_cts_memory(volatile struct cts_entry *e, uint64_t id)
{
	double until = mrc_now_s() + O.stall_s;
	unsigned long k = 0;

	if (cts_ready(e, id))
		return false;
	while (!cts_ready(e, id)) {
		idle(++k);
		if (k % 64)
			continue;
		if (mrc_now_s() > until)
			return false;
		if (k % 65536 == 0 && ctl_peer_gone()) {
			error("the receiver went away");
			return false;
		}
	}
	return true;
}

/* the CTS of request ID is there: check it, fill the buffers, post */
static bool sender_start(struct sreq *reqs, uint64_t id)
{
	uint32_t slot = id % MAX_REQUESTS, r;
	volatile struct cts_entry *e = &fifo[slot * MAX_RECVS];
	struct plan p;

	make_plan(id, &p);
	/* the other entries of a multi-receive follow */
	for (r = 1; r < p.n; r++) {
		double until = mrc_now_s() + 5;

		while (!cts_ready(&e[r], id) && mrc_now_s() < until)
			;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!check_cts(id, &p, e))
		return false;
	S.cts++;
	for (r = 0; r < p.n; r++) {
		uint8_t *b = buf_at(id, r, &p);

		pat_fill(b, data_key(id, r), p.size[r]);
		if (P.corrupt == CORRUPT_DATA && id == P.corrupt_id && r == 0)
			b[p.size[r] / 2] ^= 0x01;
		S.bytes += p.size[r];
	}
	if (!sender_post(&reqs[slot], id, &p, e))
		return false;
	S.bufs += p.n;
	if (p.n > 1) {
		S.multi++;
		S.multi_bufs += p.n;
	}
	S.truncated += p.truncated;
	if (slot == MAX_REQUESTS - 1)
		S.slot_wraps++;
	return true;
}

static void run_sender(void)
{
	struct sreq *reqs = calloc(MAX_REQUESTS, sizeof(*reqs));
	uint64_t next = 0, oldest = 0, ndone = 0;
	unsigned long spins = 0;
	double last_progress = mrc_now_s(), tstart = mrc_now_s(), last_done = mrc_now_s();

	if (!reqs)
		die("out of memory");
	while (ndone < P.iters && !n_errors) {
		bool progress = false;

		/* the next request, once its source buffer is free */
		if (next < P.iters && next < oldest + P.window) {
			volatile struct cts_entry *e = &fifo[(next % MAX_REQUESTS) * MAX_RECVS];

			if (oldest == next && wait_cts_memory(e, next))
				S.cts_spin++;
			if (!n_errors && cts_ready(e, next)) {
				if (!sender_start(reqs, next))
					break;
				next++;
				progress = true;
			}
		}
		if (oldest < next) {
			uint64_t before = ndone;

			if (!poll_sender_cq(reqs, next, &oldest, &ndone))
				break;
			if (ndone != before) {
				double t = mrc_now_s();

				if (t - last_done > S.max_gap)
					S.max_gap = t - last_done;
				last_done = t;
				progress = true;
			}
		}
		if (progress) {
			last_progress = mrc_now_s();
			spins = 0;
			continue;
		}
		idle(++spins);
		if (spins % 256)
			continue;
		if (spins % 16384 == 0) {
			check_async();
			if (ctl_peer_gone()) {
				error("the receiver went away");
				break;
			}
		}
		if (mrc_now_s() - last_progress > O.stall_s) {
			error("no progress for %.0f s: posted %" PRIu64 ", completed %" PRIu64
			      ", oldest incomplete %" PRIu64 " (pending qp mask 0x%x), CTS idx of slot %" PRIu64
			      " is %" PRIu64, O.stall_s, next, ndone, oldest,
			      reqs[oldest % MAX_REQUESTS].pending, next % MAX_REQUESTS,
			      fifo[(next % MAX_REQUESTS) * MAX_RECVS].idx);
			break;
		}
	}
	S.reqs = ndone;
	msg("sent %" PRIu64 " requests in %.2f s", ndone, mrc_now_s() - tstart);
}

/* ------------------------------------------------------------------------ */
/* the receiver                                                               */

struct rreq {
	uint64_t id;
	bool busy;
	bool flushing;
	uint32_t pending;		/* QP indices whose WITH_IMM is missing */
	uint32_t imm_len[MAX_QPS];
	uint32_t agg;			/* sum of byte_len (id matching) */
	int32_t imm_size;		/* imm data (index matching) */
	struct plan p;
};

static struct cts_entry *cts_src;	/* [MAX_REQUESTS][MAX_RECVS] */
static struct ibv_mr *cts_src_mr;
static struct cmpl_record *recs;	/* [MAX_REQUESTS] */
static struct ibv_mr *recs_mr;
/*
 * NCCL flushes into one int shared by all requests and never looks at it;
 * here every request in flight gets its own byte, so that each READ result
 * can be checked while several flushes are outstanding.
 */
static uint8_t *flush_mem;
static struct ibv_mr *flush_mr;
static uint64_t peer_fifo_addr;
static uint32_t peer_fifo_rkey;
static uint32_t cts_pending_len;	/* byte_len of the signaled CTS */

static bool post_zero_sge_recv(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = NULL, .num_sge = 0 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad)) {
		error("ibv_post_recv (zero SGE): %s", strerror(errno));
		return false;
	}
	return true;
}

static uint32_t pool_rkey(uint64_t id)
{
	/* the second, overlapping MR covers the upper half of the pool */
	return ((id & 1) && (id % P.window) >= P.window / 2) ?
		pool_mr2->rkey : pool_mr->rkey;
}

/* irecv: post the receives (index matching), then the CTS */
static bool receiver_irecv(struct rreq *q, uint64_t id)
{
	uint32_t slot = id % MAX_REQUESTS, r, i;
	struct cts_entry *c = &cts_src[slot * MAX_RECVS];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	memset(q, 0, sizeof(*q));
	q->id = id;
	q->busy = true;
	make_plan(id, &q->p);
	for (i = 0; i < q->p.nq; i++) {
		uint32_t qi = q->p.qp[i];

		q->pending |= 1u << qi;
		q->imm_len[qi] = q->p.imm_len[i];
		if (P.match == MATCH_INDEX && !post_zero_sge_recv(qps[qi], slot))
			return false;
	}
	memset(recs[slot].sizes, 0, sizeof(recs[slot].sizes));
	for (r = 0; r < q->p.n; r++) {
		uint8_t *b = buf_at(id, r, &q->p);

		memset(b, POISON, min_u32(q->p.posted[r] + GUARD,
					  stride - q->p.off[r]));
		memset(&c[r], 0, sizeof(c[r]));
		c[r].addr = (uintptr_t)b;
		c[r].size = q->p.posted[r];
		c[r].rkeys[0] = pool_rkey(id);
		c[r].nreqs = q->p.n;
		c[r].tag = q->p.tag[r];
		c[r].idx = id + 1;
	}

	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)c;
	sge.length = q->p.n * sizeof(struct cts_entry);
	sge.lkey = cts_src_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = peer_fifo_addr + (uint64_t)slot * MAX_RECVS *
				 sizeof(struct cts_entry);
	wr.wr.rdma.rkey = peer_fifo_rkey;
	/* one in 256 signaled, so that the send queue drains */
	if (slot == 0) {
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr_id = slot;
		cts_pending_len = sge.length;
		S.cts_signaled++;
	}
	if (ibv_post_send(qps[0], &wr, &bad)) {
		error("post CTS for request %" PRIu64 ": %s", id, strerror(errno));
		return false;
	}
	S.cts++;
	return true;
}

static bool receiver_flush(struct rreq *q)
{
	uint8_t *dst = &flush_mem[q->id % P.window];
	struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = 1,
			       .lkey = flush_mr->lkey };
	struct ibv_send_wr wr, *bad;
	int last = -1;
	uint32_t r;

	for (r = 0; r < q->p.n; r++)
		if (q->p.size[r])
			last = (int)r;
	if (last < 0 || !P.flush_every || q->id % P.flush_every)
		return true;
	*dst = FLUSH_POISON;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = FLUSH_WRID | q->id;
	wr.wr.rdma.remote_addr = (uintptr_t)buf_at(q->id, last, &q->p);
	wr.wr.rdma.rkey = pool_rkey(q->id);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(flush_qp, &wr, &bad)) {
		error("post flush READ: %s", strerror(errno));
		return false;
	}
	q->flushing = true;
	return true;
}

/* all WITH_IMM completions of Q are in: check sizes and every byte */
static bool receiver_verify(struct rreq *q)
{
	uint32_t slot = q->id % MAX_REQUESTS, r;
	const struct plan *p = &q->p;

	if (p->n > 1) {
		for (r = 0; r < p->n; r++)
			if (recs[slot].sizes[r] != (int32_t)p->size[r]) {
				error("request %" PRIu64 ": sizes[%u] in the completion record is %d, expected %u",
				      q->id, r, recs[slot].sizes[r], p->size[r]);
				return false;
			}
		for (; r < MAX_RECVS; r++)
			if (recs[slot].sizes[r]) {
				error("request %" PRIu64 ": sizes[%u] written beyond nreqs %u",
				      q->id, r, p->n);
				return false;
			}
	} else if (P.match == MATCH_INDEX) {
		if (q->imm_size != (int32_t)p->size[0]) {
			error("request %" PRIu64 ": imm_data (size) %d, expected %u",
			      q->id, q->imm_size, p->size[0]);
			return false;
		}
	} else if (!p->ar && q->agg != p->size[0]) {
		error("request %" PRIu64 ": byte_len adds up to %u, expected %u",
		      q->id, q->agg, p->size[0]);
		return false;
	}
	if (p->n > 1 && P.match == MATCH_INDEX && q->imm_size != (int32_t)p->size[0]) {
		error("request %" PRIu64 ": imm_data %d, expected size[0] %u",
		      q->id, q->imm_size, p->size[0]);
		return false;
	}
	for (r = 0; r < p->n; r++) {
		uint8_t *b = buf_at(q->id, r, p);
		uint32_t g = min_u32(GUARD, stride - p->off[r] - p->size[r]);
		long bad = pat_check(b, data_key(q->id, r), p->size[r]);

		if (bad >= 0) {
			uint32_t k, nbad = 0;

			for (k = 0; k < p->size[r]; k += 8) {
				uint64_t v = pat_word(data_key(q->id, r), k >> 3);
				uint32_t n = p->size[r] - k < 8 ? p->size[r] - k : 8;

				nbad += memcmp(b + k, &v, n) != 0;
			}
			error("request %" PRIu64 " buffer %u/%u: payload data wrong at byte %ld of %u (0x%02x, %u of %u words differ); %s, qps %u",
			      q->id, r, p->n, bad, p->size[r], b[bad], nbad,
			      divup(p->size[r], 8),
			      p->n > 1 ? "multi-receive" : p->ar ? "WRITE + zero-length WITH_IMM" :
			      "WRITE_WITH_IMM", p->nq);
			return false;
		}
		bad = not_byte(b + p->size[r], g, POISON);
		if (bad >= 0) {
			error("request %" PRIu64 " buffer %u: byte %ld after the %u-byte payload was written",
			      q->id, r, bad, p->size[r]);
			return false;
		}
		S.bytes += p->size[r];
	}
	S.bufs += p->n;
	if (p->n > 1) {
		S.multi++;
		S.multi_bufs += p->n;
	} else if (p->ar) {
		S.ar++;
	}
	S.truncated += p->truncated;
	return true;
}

static bool poll_receiver_cq(struct rreq *reqs, uint64_t *ndone)
{
	struct ibv_wc wc[16];
	int n, k;

	n = ibv_poll_cq(cq, 16, wc);
	if (n < 0) {
		error("ibv_poll_cq: %d", n);
		return false;
	}
	for (k = 0; k < n; k++) {
		struct ibv_wc *w = &wc[k];
		struct rreq *q;
		int qi;

		S.cqes++;
		if (w->status != IBV_WC_SUCCESS) {
			error("completion with error: %s (opcode %d wr_id 0x%" PRIx64 " qp %u vendor_err %u)",
			      ibv_wc_status_str(w->status), w->opcode, w->wr_id,
			      w->qp_num, w->vendor_err);
			return false;
		}
		switch (w->opcode) {
		case IBV_WC_RECV_RDMA_WITH_IMM: {
			uint32_t imm = be32toh(w->imm_data);

			qi = qp_index(w->qp_num);
			if (qi < 0) {
				error("WITH_IMM completion on unknown qp %u", w->qp_num);
				return false;
			}
			if (!(w->wc_flags & IBV_WC_WITH_IMM)) {
				error("WITH_IMM completion without IBV_WC_WITH_IMM in wc_flags (0x%x)",
				      w->wc_flags);
				return false;
			}
			if (P.match == MATCH_ID) {
				if (w->wr_id != RECV_WRID_DUMMY) {
					error("receive completion wr_id 0x%" PRIx64 ", posted 0x%" PRIx64,
					      w->wr_id, (uint64_t)RECV_WRID_DUMMY);
					return false;
				}
				q = &reqs[imm % MAX_REQUESTS];
				if (!q->busy || (uint32_t)q->id != imm) {
					error("imm_data %u (request id) matches no outstanding request (slot holds %" PRIu64 ", %s)",
					      imm, q->id, q->busy ? "busy" : "idle");
					return false;
				}
				/* NCCL re-posts right away */
				if (!post_zero_sge_recv(qps[qi], RECV_WRID_DUMMY))
					return false;
				S.reposts++;
			} else {
				if (w->wr_id >= MAX_REQUESTS) {
					error("receive completion wr_id 0x%" PRIx64 " is no slot", w->wr_id);
					return false;
				}
				q = &reqs[w->wr_id];
				if (!q->busy) {
					error("receive completion for idle slot %" PRIu64, w->wr_id);
					return false;
				}
				q->imm_size = (int32_t)imm;
			}
			if (!(q->pending & (1u << qi))) {
				error("request %" PRIu64 ": unexpected WITH_IMM on qp index %d (pending 0x%x)",
				      q->id, qi, q->pending);
				return false;
			}
			if (w->byte_len != q->imm_len[qi]) {
				error("request %" PRIu64 " qp index %d: WITH_IMM byte_len %u, expected %u (%s)",
				      q->id, qi, w->byte_len, q->imm_len[qi],
				      q->p.n > 1 ? "sizes[] record" : q->p.ar ? "zero-length, rkey 0" : "payload");
				return false;
			}
			if (P.match == MATCH_INDEX && q->p.n == 1 &&
			    imm != q->p.size[0]) {
				error("request %" PRIu64 ": imm_data %u, expected size %u",
				      q->id, imm, q->p.size[0]);
				return false;
			}
			if (q->p.n > 1)
				S.sizes_recs++;
			else if (w->byte_len)
				S.imm_data++;
			else if (!q->p.ar)
				S.zero_len++;
			q->agg += w->byte_len;
			q->pending &= ~(1u << qi);
			if (!q->pending) {
				if (!receiver_verify(q))
					return false;
				if (!receiver_flush(q))
					return false;
				if (!q->flushing) {
					q->busy = false;
					(*ndone)++;
				}
			}
			break;
		}
		case IBV_WC_RDMA_READ: {
			uint64_t id = w->wr_id & ~FLUSH_WRID;
			uint8_t want;
			int last = -1;
			uint32_t r;

			q = &reqs[id % MAX_REQUESTS];
			if (!(w->wr_id & FLUSH_WRID) || !q->busy || !q->flushing || q->id != id ||
			    w->qp_num != flush_qp->qp_num) {
				error("unexpected READ completion wr_id 0x%" PRIx64 " qp %u", w->wr_id,
				      w->qp_num);
				return false;
			}
			if (!O.lax_len && w->byte_len != 1) {
				error("flush READ completion byte_len %u, expected 1", w->byte_len);
				return false;
			}
			for (r = 0; r < q->p.n; r++)
				if (q->p.size[r])
					last = (int)r;
			pat_fill(&want, data_key(id, last), 1);
			if (flush_mem[id % P.window] != want) {
				error("request %" PRIu64 ": flush READ returned 0x%02x, the buffer holds 0x%02x",
				      id, flush_mem[id % P.window], want);
				return false;
			}
			S.flushes++;
			q->flushing = false;
			q->busy = false;
			(*ndone)++;
			break;
		}
		case IBV_WC_RDMA_WRITE:
			/* the signaled CTS of slot 0 */
			if (w->wr_id != 0 || w->qp_num != qps[0]->qp_num) {
				error("unexpected RDMA_WRITE completion wr_id 0x%" PRIx64 " qp %u",
				      w->wr_id, w->qp_num);
				return false;
			}
			if (!O.lax_len && w->byte_len != cts_pending_len) {
				error("CTS completion byte_len %u, expected %u", w->byte_len,
				      cts_pending_len);
				return false;
			}
			break;
		default:
			error("receiver completion with opcode %d (NCCL accepts only RECV_RDMA_WITH_IMM, RDMA_WRITE, RDMA_READ)",
			      w->opcode);
			return false;
		}
	}
	return true;
}

static void run_receiver(void)
{
	struct rreq *reqs = calloc(MAX_REQUESTS, sizeof(*reqs));
	uint64_t next = 0, oldest = 0, ndone = 0, spins = 0;
	double last_progress = mrc_now_s(), tstart = mrc_now_s(), last_done = mrc_now_s();
	double report = tstart + 10;

	if (!reqs)
		die("out of memory");
	while (ndone < P.iters && !n_errors) {
		bool progress = false;

		if (last_done > report) {
			msg("progress: %" PRIu64 " requests verified, %.0f/s", ndone,
			    ndone / (last_done - tstart));
			report += 10;
		}
		while (next < P.iters && next < oldest + P.window) {
			if (!receiver_irecv(&reqs[next % MAX_REQUESTS], next))
				break;
			if (next % MAX_REQUESTS == MAX_REQUESTS - 1)
				S.slot_wraps++;
			next++;
			progress = true;
		}
		if (n_errors)
			break;
		{
			uint64_t before = ndone;

			if (!poll_receiver_cq(reqs, &ndone))
				break;
			if (ndone != before) {
				double t = mrc_now_s();

				if (t - last_done > S.max_gap)
					S.max_gap = t - last_done;
				last_done = t;
				progress = true;
			}
		}
		while (oldest < next && !reqs[oldest % MAX_REQUESTS].busy)
			oldest++;
		if (progress) {
			last_progress = mrc_now_s();
			spins = 0;
			continue;
		}
		idle(++spins);
		if (spins % 256 == 0) {
			if (spins % 16384 == 0) {
				check_async();
				if (ctl_peer_gone()) {
					error("the sender went away");
					break;
				}
			}
			if (mrc_now_s() - last_progress > O.stall_s) {
				struct rreq *q = &reqs[oldest % MAX_REQUESTS];

				error("no progress for %.0f s: CTS posted for %" PRIu64 ", completed %" PRIu64
				      ", oldest incomplete %" PRIu64 " waits for qp mask 0x%x%s",
				      O.stall_s, next, ndone, oldest, q->pending,
				      q->flushing ? " and its flush" : "");
				break;
			}
		}
	}
	S.reqs = ndone;
	msg("received %" PRIu64 " requests in %.2f s", ndone, mrc_now_s() - tstart);
}

/* ------------------------------------------------------------------------ */
/* setup, teardown                                                            */

static void setup(void)
{
	struct side_info me, peer;
	size_t fifo_len = MAX_REQUESTS * MAX_RECVS * sizeof(struct cts_entry);
	size_t sizes_len = MAX_REQUESTS * MAX_RECVS * sizeof(int32_t);
	size_t recs_len = MAX_REQUESTS * sizeof(struct cmpl_record);
	uint8_t *comm;
	size_t pool_len;
	int cqe;
	uint32_t i;

	ctl_connect();
	if (O.sender) {
		write_all(&P, sizeof(P));
	} else {
		struct params p;

		read_all(&p, sizeof(p));
		if (p.magic != CTL_MAGIC || p.version != CTL_VERSION)
			die("peer speaks another protocol");
		P = p;
	}
	/*
	 * NCCL has at most 32 requests of up to 8 receives in flight: 256
	 * WRITEs plus 256 WITH_IMMs fit the 512 send WRs of a QP.
	 */
	if (P.qps < 1 || P.qps > MAX_QPS || P.window < 1 || P.window > MAX_WINDOW ||
	    P.max_size < 1 || P.max_size > (64u << 20))
		die("bad parameters (qps 1..%d, window 1..%d)", MAX_QPS, MAX_WINDOW);
	msg("seed 0x%" PRIx64 " iters %" PRIu64 " qps %u split %u match %s window %u max_size %u multi %u%% ar_threshold %d flush_every %u psn 0x%x timeout %u retry_cnt %u%s%s",
	    P.seed, P.iters, P.qps, P.split, P.match == MATCH_ID ? "id" : "index",
	    P.window, P.max_size, P.multi_pct, P.ar_threshold, P.flush_every, P.psn,
	    P.timeout, P.retry_cnt, P.corrupt ? " corrupt " : "",
	    P.corrupt ? corrupt_name[P.corrupt] : "");

	discover();
	select_gid();
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	probe_dmabuf();

	/* NCCL: send CQ 256 x QPs, receive CQ 512 x QPs; no channel */
	cqe = (O.sender ? 1 : 2) * MAX_REQUESTS * P.qps;
	cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq %d: %s", cqe, strerror(errno));

	stride = ((size_t)P.max_size + 64 + GUARD + 63) & ~(size_t)63;
	pool_len = (size_t)P.window * MAX_RECVS * stride;
	pool = alloc_region(pool_len, POISON);
	memset(&me, 0, sizeof(me));
	if (O.sender) {
		for (i = 0; i < P.qps; i++) {
			qps[i] = create_qp(2 * MAX_REQUESTS, 0, IBV_ACCESS_REMOTE_WRITE, "sender");
			if (i == 0)
				probe_ece(qps[i], false);
		}
		/* inside one structure, as in NCCL's send comm: MRs share pages */
		comm = alloc_region(COMM_OFF + fifo_len + sizes_len + 4096, 0);
		fifo = (void *)(comm + COMM_OFF);
		sizes_src = (void *)(comm + COMM_OFF + fifo_len);
		fifo_mr = reg((void *)fifo, fifo_len, IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "CTS FIFO");
		sizes_mr = reg(sizes_src, sizes_len, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "sizes");
		pool_mr = reg_data(pool, pool_len, "send buffers");
		me.addr = (uintptr_t)fifo;
		me.rkey = fifo_mr->rkey;
		check("sender_qp", true, "%u QPs, max_send_wr %u, max_recv_wr 0, access REMOTE_WRITE",
		      P.qps, 2 * MAX_REQUESTS);
	} else {
		for (i = 0; i < P.qps; i++) {
			qps[i] = create_qp(2 * MAX_REQUESTS, MAX_REQUESTS,
					   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
					   IBV_ACCESS_REMOTE_READ, "receiver");
			if (i == 0)
				probe_ece(qps[i], true);
		}
		flush_qp = create_qp(MAX_REQUESTS, 0, IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_READ, "flush");
		/* inside one structure, as in NCCL's receive comm */
		comm = alloc_region(COMM_OFF + fifo_len + recs_len + MAX_WINDOW + 4096, 0);
		cts_src = (void *)(comm + COMM_OFF);
		recs = (void *)(comm + COMM_OFF + fifo_len);
		flush_mem = comm + COMM_OFF + fifo_len + recs_len;
		memset(flush_mem, FLUSH_POISON, MAX_WINDOW);
		cts_src_mr = reg(cts_src, fifo_len, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "CTS source");
		recs_mr = reg(recs, recs_len, IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			      "completion records");
		flush_mr = reg(flush_mem, P.window, IBV_ACCESS_LOCAL_WRITE, "flush");
		pool_mr = reg_data(pool, pool_len, "receive buffers");
		{
			/* the upper half again: overlapping registrations */
			size_t half = (P.window / 2) * MAX_RECVS * stride;
			long pg = sysconf(_SC_PAGESIZE);

			half &= ~(size_t)(pg - 1);
			pool_mr2 = reg_data(pool + half, pool_len - half,
					    "receive buffers, upper half again");
		}
		me.addr = (uintptr_t)recs;
		me.rkey = recs_mr->rkey;
	}

	memcpy(me.gid, my_gid.raw, 16);
	me.lid = port_attr.lid;
	me.mtu = port_attr.active_mtu;
	me.link_layer = port_attr.link_layer;
	me.nqps = P.qps;
	for (i = 0; i < P.qps; i++)
		me.qpn[i] = qps[i]->qp_num;
	write_all(&me, sizeof(me));
	read_all(&peer, sizeof(peer));
	{
		/* the receiver also tells where its pool is and its two rkeys */
		uint64_t w[2];

		if (O.sender) {
			read_all(w, sizeof(w));
			peer_pool_addr = w[0];
			peer_pool_rkeys[0] = (uint32_t)w[1];
			peer_pool_rkeys[1] = (uint32_t)(w[1] >> 32);
		} else {
			w[0] = (uintptr_t)pool;
			w[1] = pool_mr->rkey | (uint64_t)pool_mr2->rkey << 32;
			write_all(w, sizeof(w));
		}
	}
	if (peer.nqps != P.qps)
		die("peer has %u QPs", peer.nqps);
	memcpy(peer_gid.raw, peer.gid, 16);
	path_mtu = peer.mtu < port_attr.active_mtu ? (enum ibv_mtu)peer.mtu :
		   port_attr.active_mtu;
	for (i = 0; i < P.qps; i++) {
		peer_qpn[i] = peer.qpn[i];
		connect_qp(qps[i], peer_qpn[i], &peer_gid, path_mtu, qp_psn(i));
	}
	if (O.sender) {
		peer_addr = peer.addr;
		peer_rkey = peer.rkey;
	} else {
		peer_fifo_addr = peer.addr;
		peer_fifo_rkey = peer.rkey;
		/* the flush QP: connected to itself, its own GID */
		connect_qp(flush_qp, flush_qp->qp_num, &my_gid, port_attr.active_mtu, 0);
		if (P.match == MATCH_ID) {
			uint32_t k;

			for (i = 0; i < P.qps; i++)
				for (k = 0; k < MAX_REQUESTS; k++)
					if (!post_zero_sge_recv(qps[i], RECV_WRID_DUMMY))
						die("pre-posting receives");
		}
		check("receiver_qp", !n_errors,
		      "%u QPs, max_send_wr %u, max_recv_wr %u, access REMOTE_WRITE|REMOTE_ATOMIC|REMOTE_READ%s; flush QP %u connected to itself",
		      P.qps, 2 * MAX_REQUESTS, MAX_REQUESTS,
		      P.match == MATCH_ID ? ", 256 zero-SGE receives pre-posted per QP" : "",
		      flush_qp->qp_num);
	}
	msg("%s gid %d, path MTU %d, qpn %u -> %u, ready", O.dev, gid_idx,
	    128 << path_mtu, qps[0]->qp_num, peer_qpn[0]);
	{
		char c = 'R';

		write_all(&c, 1);
		read_all(&c, 1);
	}
}

/*
 * The QPs after the run: NCCL queries STATE|SQ_PSN|RQ_PSN.  Counts the QPs
 * whose send and receive PSNs went past 0xffffff (one wrap at most).
 */
static unsigned int sq_wrapped, rq_wrapped;

static void query_qps(char *buf, size_t len)
{
	uint32_t i;
	size_t o = 0;
	bool ok = true;

	buf[0] = 0;
	for (i = 0; i < P.qps; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (ibv_query_qp(qps[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia)) {
			error("ibv_query_qp: %s", strerror(errno));
			ok = false;
			break;
		}
		if (a.qp_state != IBV_QPS_RTS) {
			error("QP %u is in state %d after the run", i, a.qp_state);
			ok = false;
		}
		sq_wrapped += a.sq_psn < qp_psn(i);
		rq_wrapped += a.rq_psn < qp_psn(i);
		if (o < len)
			o += snprintf(buf + o, len - o, "%s%x/%x", i ? "," : "",
				      a.sq_psn, a.rq_psn);
	}
	(void)ok;
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
"usage: mrc_nccl -d DEV [options]               (receiver, server)\n"
"       mrc_nccl -d DEV [options] SERVER-ADDR   (sender, client)\n"
"  -d, --dev DEV          RDMA device (as NCCL_IB_HCA)\n"
"  -i, --ib-port N        port (1)\n"
"  -g, --gid-idx N        GID index (as NCCL_IB_GID_INDEX; default: NCCL's search)\n"
"  -p, --port N           TCP control port (18700)\n"
"sender options (the receiver takes them from the sender):\n"
"  -n, --iters N          requests (10000)\n"
"  -q, --qps N            QPs per connection (1, as NCCL_IB_QPS_PER_CONNECTION)\n"
"      --split 0|1        stripe each request over all QPs (1) or round robin (0)\n"
"      --match index|id   index: receives posted per request (NCCL's default);\n"
"                         id: 256 pre-posted receives per QP, imm = request id\n"
"  -w, --window N         requests in flight (32, at most 32 as in NCCL)\n"
"  -s, --max-size BYTES   largest buffer (65536); K/M suffixes\n"
"      --multi PCT        requests with several receive buffers (25)\n"
"      --ar-threshold N   WRITE + zero-length WITH_IMM above N bytes (8192, -1 never)\n"
"      --flush-every N    flush READ after every Nth request (1, 0 never)\n"
"      --psn N            first PSN of every QP (0 as NCCL; near 0xffffff to wrap)\n"
"      --timeout N        QP timeout exponent (20)\n"
"      --retry-cnt N      (7)\n"
"  -S, --seed N           seed (random, printed)\n"
"      --corrupt WHAT:ID  self-test: damage request ID (data, sizes, imm)\n"
"local options:\n"
"      --stall SEC        fail after SEC seconds without progress (60)\n"
"      --idle MODE        after 64 empty polls: spin, yield, or sleep[:US]\n"
"                         (default sleep:20; NCCL spins)\n"
"      --lax-len          do not check byte_len of send-side completions\n");
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
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", 1, NULL, 'd' }, { "ib-port", 1, NULL, 'i' },
		{ "gid-idx", 1, NULL, 'g' }, { "port", 1, NULL, 'p' },
		{ "iters", 1, NULL, 'n' }, { "qps", 1, NULL, 'q' },
		{ "window", 1, NULL, 'w' }, { "max-size", 1, NULL, 's' },
		{ "seed", 1, NULL, 'S' }, { "split", 1, NULL, 1 },
		{ "match", 1, NULL, 2 }, { "multi", 1, NULL, 3 },
		{ "ar-threshold", 1, NULL, 4 }, { "flush-every", 1, NULL, 5 },
		{ "psn", 1, NULL, 6 }, { "timeout", 1, NULL, 7 },
		{ "retry-cnt", 1, NULL, 8 }, { "corrupt", 1, NULL, 9 },
		{ "stall", 1, NULL, 10 }, { "idle", 1, NULL, 11 },
		{ "lax-len", 0, NULL, 12 }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct wire_stats mine, theirs;
	char psns[256];
	bool pass;
	double tstart, el;
	int c;

	t0 = mrc_now_s();
	while ((c = getopt_long(argc, argv, "d:i:g:p:n:q:w:s:S:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			O.dev = optarg;
			break;
		case 'i':
			O.port = atoi(optarg);
			break;
		case 'g':
			O.gid_idx = atoi(optarg);
			break;
		case 'p':
			O.tcp_port = atoi(optarg);
			break;
		case 'n':
			P.iters = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			P.qps = atoi(optarg);
			break;
		case 'w':
			P.window = atoi(optarg);
			break;
		case 's':
			P.max_size = (uint32_t)parse_size(optarg);
			break;
		case 'S':
			P.seed = strtoull(optarg, NULL, 0);
			O.seed_set = true;
			break;
		case 1:
			P.split = atoi(optarg);
			break;
		case 2:
			if (!strcmp(optarg, "index"))
				P.match = MATCH_INDEX;
			else if (!strcmp(optarg, "id"))
				P.match = MATCH_ID;
			else
				usage(2);
			break;
		case 3:
			P.multi_pct = atoi(optarg);
			break;
		case 4:
			P.ar_threshold = atoi(optarg);
			break;
		case 5:
			P.flush_every = atoi(optarg);
			break;
		case 6:
			P.psn = strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 7:
			P.timeout = atoi(optarg);
			break;
		case 8:
			P.retry_cnt = atoi(optarg);
			break;
		case 9: {
			char *colon = strchr(optarg, ':');

			if (!colon)
				usage(2);
			*colon = 0;
			for (P.corrupt = 1; P.corrupt <= CORRUPT_IMM; P.corrupt++)
				if (!strcmp(optarg, corrupt_name[P.corrupt]))
					break;
			if (P.corrupt > CORRUPT_IMM)
				usage(2);
			P.corrupt_id = strtoull(colon + 1, NULL, 0);
			break;
		}
		case 10:
			O.stall_s = atof(optarg);
			break;
		case 11:
			if (!strcmp(optarg, "spin")) {
				O.idle = IDLE_SPIN;
			} else if (!strcmp(optarg, "yield")) {
				O.idle = IDLE_YIELD;
			} else if (!strncmp(optarg, "sleep", 5)) {
				O.idle = IDLE_SLEEP;
				if (optarg[5] == ':')
					O.sleep_us = atoi(optarg + 6);
			} else {
				usage(2);
			}
			break;
		case 12:
			O.lax_len = true;
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind < argc) {
		O.server = argv[optind];
		O.sender = true;
		O.role = "sender";
	}
	if (!O.dev)
		usage(2);
	if (!O.seed_set) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		P.seed = mix64(ts.tv_nsec ^ ((uint64_t)getpid() << 32));
	}
	/* damage the first request at or after ID that has something to damage */
	for (; P.corrupt; P.corrupt_id++) {
		struct plan p;

		make_plan(P.corrupt_id, &p);
		if (P.corrupt == CORRUPT_SIZES ? p.n > 1 : p.size[0] > 0)
			break;
	}

	setup();
	tstart = mrc_now_s();
	if (O.sender)
		run_sender();
	else
		run_receiver();
	el = mrc_now_s() - tstart;
	check_async();

	/* nothing more may complete */
	if (!n_errors) {
		struct ibv_wc wc;
		double until = mrc_now_s() + 0.2;

		while (mrc_now_s() < until)
			if (ibv_poll_cq(cq, 1, &wc) > 0) {
				error("extra completion after the run: opcode %d wr_id 0x%" PRIx64 " status %s",
				      wc.opcode, wc.wr_id, ibv_wc_status_str(wc.status));
				break;
			}
	}
	query_qps(psns, sizeof(psns));

	/* exchange the outcome */
	mine = (struct wire_stats){ .reqs = S.reqs, .bytes = S.bytes, .errors = n_errors };
	write_all(&mine, sizeof(mine));
	read_all(&theirs, sizeof(theirs));
	if (!n_errors && (theirs.errors || theirs.reqs != S.reqs || theirs.bytes != S.bytes)) {
		error("the peer reports %" PRIu64 " requests, %" PRIu64 " bytes, %" PRIu64 " errors; here %" PRIu64 " / %" PRIu64,
		      theirs.reqs, theirs.bytes, theirs.errors, S.reqs, S.bytes);
	}

	if (O.sender) {
		check("cts_plain_memory", S.cts_spin > 0 && !n_errors,
		      "%" PRIu64 " CTS entries read from plain memory, %" PRIu64
		      " of them appeared while the sender spun on memory with no verbs call",
		      S.cts, S.cts_spin);
	}
	pass = !n_errors && !n_check_fail && S.reqs == P.iters;
	printf("MRC_NCCL_RESULT role=%s status=%s seed=0x%" PRIx64 " match=%s qps=%u split=%u iters=%" PRIu64
	       " reqs=%" PRIu64 " bufs=%" PRIu64 " bytes=%" PRIu64 " multi=%" PRIu64 " multi_bufs=%" PRIu64
	       " imm_data=%" PRIu64 " ar=%" PRIu64 " sizes_recs=%" PRIu64 " zero_len=%" PRIu64
	       " truncated=%" PRIu64 " flushes=%" PRIu64 " cts=%" PRIu64 " cts_signaled=%" PRIu64
	       " cts_spin=%" PRIu64 " reposts=%" PRIu64 " cqes=%" PRIu64 " wrs=%" PRIu64
	       " slot_wraps=%" PRIu64 " psn_start=0x%x psns=%s sq_psn_wrapped=%u rq_psn_wrapped=%u elapsed_s=%.2f mbps=%.1f max_gap_ms=%.0f errors=%u check_fails=%u\n",
	       O.role, pass ? "PASS" : "FAIL", P.seed, P.match == MATCH_ID ? "id" : "index",
	       P.qps, P.split, P.iters, S.reqs, S.bufs, S.bytes, S.multi, S.multi_bufs,
	       S.imm_data, S.ar, S.sizes_recs, S.zero_len, S.truncated, S.flushes, S.cts,
	       S.cts_signaled, S.cts_spin, S.reposts, S.cqes, S.wrs, S.slot_wraps, P.psn,
	       psns, sq_wrapped, rq_wrapped, el, el > 0 ? S.bytes * 8 / el / 1e6 : 0, S.max_gap * 1000,
	       n_errors, n_check_fail);
	fflush(stdout);
	return pass ? 0 : 1;
}

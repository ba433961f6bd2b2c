// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_step: the step time of a ring all-reduce over verbs, as NCCL's ring
 * algorithm drives its IB/RoCE transport (net_ib), CPU only.  Written from
 * a reading of NCCL's ring all-reduce and net_ib; no NCCL code is used.
 *
 *   rank 0:  mrc_step -d DEV -N RANKS -r 0 [options]
 *   rank R:  mrc_step -d DEV -N RANKS -r R [options] RANK0-ADDR
 *
 * The ranks meet over TCP at rank 0, which also runs the per-step barrier.
 * Each rank has two RC QPs: one sends to its right neighbour, one receives
 * from its left.  A step all-reduces SIZE bytes (uint32 sums, wrapping) the
 * ring way: SIZE is cut into N chunks, and each rank moves 2(N-1) chunks,
 * N-1 of reduce-scatter (the received chunk is added into its own) and N-1
 * of all-gather (copied).  A chunk travels in slices; a slice is one
 * transfer as in net_ib: the receiver owns SLOTS staging buffers and, for
 * every free one, posts a zero-SGE receive and RDMA-writes a 64-byte
 * clear-to-send (CTS: address, rkey, size, index last) into the sender's
 * FIFO; the sender polls the FIFO in plain memory and answers with one
 * RDMA_WRITE_WITH_IMM (imm = transfer index) into that buffer.  A slice is
 * forwarded as soon as it was reduced, so the ring pipelines; the staging
 * slots are the credits.
 *
 * Every step every rank fills its input from (rank, element, step); after
 * the ring, every K steps (-k), each rank checks every element of the
 * result against the sum computed from the formula.  Each completion's
 * status, opcode, wr_id, imm_data and byte_len is checked too.  A step's
 * time runs from the earliest rank's start (after the barrier) to the
 * latest rank's end of its ring work: the slowest rank sets it.  The ranks
 * must share CLOCK_MONOTONIC (one machine, e.g. network namespaces).
 *
 * -w W runs W warm-up steps first (connection start-up, first touches of
 * the buffers), verified but left out of the times.
 *
 * --max-time S: rank 0 ends the run after the step that passes S seconds
 * (capped=1 in the result; the steps done count).
 *
 * --skip STEP (a self-test): rank 1 does not add the first slice it
 * receives in that step, so the reduced data is wrong and the check must
 * fail.
 *
 * Output: rank 0 prints MRC_STEP_RESULT rank=0 status=PASS|FAIL steps=...
 * timed=... p50_us= p99_us= max_us= ... t0_real=, and with -C FILE writes
 * one CSV line per timed step: step,us,slowest_rank,verified,bad,t_s (t_s:
 * the step's start in seconds after timed step 0's, whose CLOCK_REALTIME
 * is t0_real).  With --counters FILE every rank writes one line per step
 * (warm-up steps numbered below 0): its own ring time, its longest wait
 * without progress and the event that ended it (data_ack: its WRITE
 * completed, data_recv: its left neighbour's data, cts_ack, cts_in: its
 * right neighbour's credit), and how far its device's loss-recovery
 * counters moved (read from sysfs at the step's end; a step's slowness
 * can then be laid on a hop).  Exit
 * status 0 only if every step completed and every check passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "mrc_ctl.h"

#define MAX_RANKS	16
#define FIFO_SLOTS	256
#define MAX_SLOTS	64
#define CTL_MAGIC	0x53544550u	/* "STEP" */
#define K1		0x9e3779b1u
#define K2		0x85ebca6bu

#define WR_SEND		(1ull << 60)
#define WR_CTS		(2ull << 60)
#define WR_RECV		(3ull << 60)
#define WR_KIND		(15ull << 60)

/* one clear-to-send entry, idx last (written by the receiver) */
struct cts {
	uint64_t addr;
	uint32_t rkey;
	uint32_t size;
	uint64_t pad[5];
	volatile uint64_t idx;		/* transfer index + 1; 0: empty */
};
_Static_assert(sizeof(struct cts) == 64, "CTS entry is 64 bytes");

/* what each rank tells rank 0, and rank 0 everyone */
struct info {
	uint32_t magic, rank, nranks, slots;
	uint64_t size, slice, steps;
	uint32_t qpn_send, qpn_recv, psn_send, psn_recv;
	uint32_t mtu, fifo_rkey;
	uint64_t fifo_addr;
	uint8_t gid[16];
};

/* rank -> rank 0 after a step (step -1: ready to start) */
struct report {
	int64_t step;
	double t_start, t_done;
	uint64_t bad, first_bad;
};

/* rank 0 -> ranks: go (step), or stop (step < 0; GO_CAPPED: time is up) */
#define GO_CAPPED	(-2)
struct go {
	int64_t step;
};

static struct {
	const char *dev, *server, *csv, *ctr, *sysfs;
	int port, gid_idx, tcp_port, rank, nranks;
	uint64_t size, slice, steps, verify_every, warmup;
	uint32_t slots, timeout, retry;
	double stall_s, max_s;
	unsigned int sleep_us;
	int64_t skip_step;
} O = {
	.port = 1, .gid_idx = -1, .tcp_port = 18800, .rank = -1, .nranks = 4,
	.size = 8 << 20, .slice = 512 << 10, .steps = 500, .verify_every = 1,
	.slots = 8, .timeout = 20, .retry = 7, .stall_s = 60, .sleep_us = 20,
	.skip_step = -1, .sysfs = "/sys",
};

static double t0;
static uint64_t steps_done;	/* for the result line of a failed run */

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	printf("mrc_step[%d %.3f]: ", O.rank, mrc_now_s() - t0);
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

	printf("mrc_step[%d %.3f]: ERROR: ", O.rank, mrc_now_s() - t0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nMRC_STEP_RESULT rank=%d status=FAIL reason=error steps=%" PRIu64 "\n",
	       O.rank, steps_done);
	fflush(stdout);
	exit(1);
}

/* ------------------------------------------------------------------------ */
/* control connections: rank 0 holds one per other rank                      */

static int ctl[MAX_RANKS];

static void xfer(int fd, void *buf, size_t len, bool out)
{
	if (mrc_xfer(fd, buf, len, out))
		die("control connection: %s", strerror(errno));
}

static void ctl_listen_all(void)
{
	int ls = mrc_tcp_listen(O.tcp_port, MAX_RANKS), i;

	if (ls < 0)
		die("listen on port %d: %s", O.tcp_port, strerror(errno));
	msg("listening on TCP port %d for %d ranks", O.tcp_port, O.nranks - 1);
	for (i = 1; i < O.nranks; i++) {
		ctl[i] = mrc_tcp_accept(ls);	/* reordered by rank once the infos arrive */
		if (ctl[i] < 0)
			die("accept: %s", strerror(errno));
	}
	close(ls);
}

static int ctl_connect(void)
{
	const char *why;
	int fd = mrc_tcp_connect(O.server, O.tcp_port, 30, &why);

	if (fd < 0)
		die("cannot connect to rank 0 at %s port %d: %s", O.server, O.tcp_port, why);
	return fd;
}

/* ------------------------------------------------------------------------ */
/* verbs resources                                                            */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp_send, *qp_recv;
static int gid_idx;
static union ibv_gid my_gid;
static enum ibv_mtu my_mtu;

static uint32_t *buf;			/* SIZE bytes: input, then result */
static uint8_t *stage;			/* SLOTS x SLICE receive buffers */
static struct cts *fifo;		/* sender: CTS entries from the right */
static struct cts *cts_src;		/* receiver: CTS entries being written */
static struct ibv_mr *buf_mr, *stage_mr, *fifo_mr, *cts_mr;
static uint64_t peer_fifo;		/* receiver: the left rank's FIFO */
static uint32_t peer_fifo_rkey;

static int roce_v2(int idx)
{
	char path[256], t[16] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
		 O.dev, O.port, idx);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, t, sizeof(t) - 1);
	close(fd);
	return n > 0 && !strncmp(t, "RoCE v2", 7);
}

/* -x, or the first IPv4-mapped RoCE v2 GID */
static void pick_gid(int tbl_len)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int i;

	gid_idx = O.gid_idx;
	for (i = 0; gid_idx < 0 && i < tbl_len; i++)
		if (!ibv_query_gid(ctx, O.port, i, &my_gid) &&
		    !memcmp(my_gid.raw, v4, 12) && roce_v2(i))
			gid_idx = i;
	if (gid_idx < 0)
		die("%s has no IPv4 RoCE v2 GID (give -x)", O.dev);
	if (ibv_query_gid(ctx, O.port, gid_idx, &my_gid))
		die("ibv_query_gid %d: %s", gid_idx, strerror(errno));
}

static void open_dev(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int i;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), O.dev))
			break;
	if (!list[i])
		die("no device %s", O.dev);
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device %s: %s", O.dev, strerror(errno));
	if (ibv_query_port(ctx, O.port, &pa))
		die("ibv_query_port: %s", strerror(errno));
	if (pa.state != IBV_PORT_ACTIVE)
		die("%s port %d is not active", O.dev, O.port);
	my_mtu = pa.active_mtu;
	pick_gid(pa.gid_tbl_len);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4096, NULL, NULL, 0) : NULL;
	if (!cq)
		die("PD/CQ: %s", strerror(errno));
}

static void *region(size_t len, struct ibv_mr **mr, int access)
{
	void *p;

	if (posix_memalign(&p, 4096, len))
		die("out of memory (%zu bytes)", len);
	memset(p, 0, len);
	*mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | access);
	if (!*mr)
		die("ibv_reg_mr %zu bytes: %s", len, strerror(errno));
	return p;
}

static struct ibv_qp *make_qp(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * MAX_SLOTS + 8, .max_recv_wr = MAX_SLOTS + 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = O.port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify QP to INIT: %s", strerror(errno));
	return qp;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dqpn, const uint8_t *dgid,
		       enum ibv_mtu mtu, uint32_t rq_psn, uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	a.ah_attr.grh.sgid_index = gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = O.port;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify QP %u to RTR: %s", qp->qp_num, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = O.timeout;
	a.retry_cnt = O.retry;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	a.sq_psn = sq_psn;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify QP %u to RTS: %s", qp->qp_num, strerror(errno));
}

static void my_info(struct info *in)
{
	memset(in, 0, sizeof(*in));
	in->magic = CTL_MAGIC;
	in->rank = O.rank;
	in->nranks = O.nranks;
	in->slots = O.slots;
	in->size = O.size;
	in->slice = O.slice;
	in->steps = O.warmup + O.steps;
	in->qpn_send = qp_send->qp_num;
	in->qpn_recv = qp_recv->qp_num;
	in->psn_send = (0x1000u * O.rank + 0x100) & 0xffffff;
	in->psn_recv = (0x1000u * O.rank + 0x800) & 0xffffff;
	in->mtu = my_mtu;
	in->fifo_addr = (uintptr_t)fifo;
	in->fifo_rkey = fifo_mr->rkey;
	memcpy(in->gid, my_gid.raw, 16);
}

static bool same_params(const struct info *a, const struct info *b)
{
	return a->magic == b->magic && a->nranks == b->nranks && a->slots == b->slots &&
	       a->size == b->size && a->slice == b->slice && a->steps == b->steps;
}

/* everyone's info everywhere; rank 0's ctl[] ends up indexed by rank */
static void exchange(struct info *all)
{
	struct info me;
	int i, fds[MAX_RANKS] = { 0 };

	my_info(&me);
	if (O.rank) {
		ctl[0] = ctl_connect();
		xfer(ctl[0], &me, sizeof(me), true);
		xfer(ctl[0], all, sizeof(*all) * O.nranks, false);
		if (!same_params(&me, &all[O.rank]))
			die("rank 0 sent a table that does not match this rank");
		return;
	}
	ctl_listen_all();
	all[0] = me;
	for (i = 1; i < O.nranks; i++) {
		struct info in;

		xfer(ctl[i], &in, sizeof(in), false);
		if (!same_params(&me, &in) || !in.rank || in.rank >= (uint32_t)O.nranks ||
		    fds[in.rank])
			die("rank %u: parameters or rank do not match rank 0's", in.rank);
		fds[in.rank] = ctl[i];
		all[in.rank] = in;
	}
	for (i = 1; i < O.nranks; i++) {
		ctl[i] = fds[i];
		xfer(ctl[i], all, sizeof(*all) * O.nranks, true);
	}
}

static void setup(void)
{
	struct info all[MAX_RANKS];
	const struct info *l, *r;
	enum ibv_mtu mtu;

	open_dev();
	buf = region(O.size, &buf_mr, 0);
	stage = region(O.slots * O.slice, &stage_mr, IBV_ACCESS_REMOTE_WRITE);
	fifo = region(FIFO_SLOTS * sizeof(*fifo), &fifo_mr, IBV_ACCESS_REMOTE_WRITE);
	cts_src = region(FIFO_SLOTS * sizeof(*cts_src), &cts_mr, 0);
	qp_send = make_qp();
	qp_recv = make_qp();
	exchange(all);
	r = &all[(O.rank + 1) % O.nranks];
	l = &all[(O.rank + O.nranks - 1) % O.nranks];
	mtu = my_mtu < r->mtu ? my_mtu : r->mtu;
	connect_qp(qp_send, r->qpn_recv, r->gid, mtu, r->psn_recv, all[O.rank].psn_send);
	mtu = my_mtu < l->mtu ? my_mtu : l->mtu;
	connect_qp(qp_recv, l->qpn_send, l->gid, mtu, l->psn_send, all[O.rank].psn_recv);
	peer_fifo = l->fifo_addr;
	peer_fifo_rkey = l->fifo_rkey;
	msg("device %s GID index %d, sends to rank %d (QP %u), receives from rank %d (QP %u)",
	    O.dev, gid_idx, (O.rank + 1) % O.nranks, r->qpn_recv,
	    (O.rank + O.nranks - 1) % O.nranks, l->qpn_send);
}

/* ------------------------------------------------------------------------ */
/* the data: input of (rank, element, step), the sum in closed form          */

static uint32_t val(uint32_t r, uint32_t i, uint32_t s)
{
	return i * K1 + (r + 1) * (s + 1) * K2 + r * i;
}

static uint32_t expect(uint32_t i, uint32_t s)
{
	uint32_t n = O.nranks;

	return n * i * K1 + (s + 1) * K2 * (n * (n + 1) / 2) + i * (n * (n - 1) / 2);
}

static void fill(uint32_t s)
{
	uint32_t i, n = O.size / 4;

	for (i = 0; i < n; i++)
		buf[i] = val(O.rank, i, s);
}

/* wrong elements; the first one's index in *first */
static uint64_t verify(uint32_t s, uint64_t *first)
{
	uint32_t i, n = O.size / 4;
	uint64_t bad = 0;

	for (i = 0; i < n; i++) {
		if (buf[i] == expect(i, s))
			continue;
		if (!bad++) {
			*first = i;
			msg("step %u: element %u is 0x%08x, expected 0x%08x", s, i,
			    buf[i], expect(i, s));
		}
	}
	return bad;
}

/* ------------------------------------------------------------------------ */
/* one step of the ring                                                       */

static uint32_t M;		/* slices per chunk */
static uint32_t T;		/* transfers per step each way: 2(N-1)M */
static uint64_t chunk;		/* SIZE / N */

struct ring {
	uint64_t base;		/* global index of transfer 0 of this step */
	uint32_t cts;		/* CTS written (receives posted) */
	uint32_t recvd;		/* receives completed and checked */
	uint32_t done;		/* received slices reduced or copied */
	uint32_t sent;		/* WRITE_WITH_IMM posted */
	uint32_t acked;		/* ... and completed */
	uint32_t cts_acked;
	bool skip;
	double gap;		/* longest wait without progress, s */
	int gap_why;		/* what ended it: GAP_* */
};

/* what ended a step's longest wait: the event that moved first */
enum { GAP_NONE, GAP_ACK, GAP_RECV, GAP_CTS_ACK, GAP_CTS_IN, GAP_NR };

static const char *const gap_name[GAP_NR] = {
	"none", "data_ack", "data_recv", "cts_ack", "cts_in",
};

/* transfer J: offset and length of its slice of chunk C */
static uint64_t slice_off(uint32_t j, uint32_t c, uint32_t *len)
{
	uint64_t off = (uint64_t)(j % M) * O.slice;

	*len = off + O.slice > chunk ? chunk - off : O.slice;
	return c * chunk + off;
}

/* chunk rank r sends in transfer step k, and receives */
static uint32_t chunk_send(uint32_t k)
{
	return (O.rank + (uint64_t)O.nranks * T - k) % O.nranks;
}

static uint32_t chunk_recv(uint32_t k)
{
	return (O.rank + (uint64_t)O.nranks * T - k - 1) % O.nranks;
}

static void post_cts(struct ring *g)
{
	uint64_t gi = g->base + g->cts;
	struct cts *c = &cts_src[gi % FIFO_SLOTS];
	struct ibv_recv_wr rw = { .wr_id = WR_RECV | gi }, *brw;
	struct ibv_sge sge = { (uintptr_t)c, sizeof(*c), cts_mr->lkey };
	struct ibv_send_wr sw = { .wr_id = WR_CTS | gi, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bsw;
	uint32_t len;

	slice_off(g->cts, 0, &len);
	if (ibv_post_recv(qp_recv, &rw, &brw))
		die("ibv_post_recv: %s", strerror(errno));
	c->addr = (uintptr_t)(stage + (gi % O.slots) * O.slice);
	c->rkey = stage_mr->rkey;
	c->size = len;
	c->idx = gi + 1;
	sw.wr.rdma.remote_addr = peer_fifo + (gi % FIFO_SLOTS) * sizeof(*c);
	sw.wr.rdma.rkey = peer_fifo_rkey;
	if (ibv_post_send(qp_recv, &sw, &bsw))
		die("ibv_post_send (CTS): %s", strerror(errno));
	g->cts++;
}

/* the next send, if its data is ready and the receiver cleared it */
static bool try_send(struct ring *g)
{
	uint32_t j = g->sent, k = j / M, len;
	uint64_t gi = g->base + j, off;
	volatile struct cts *c = &fifo[gi % FIFO_SLOTS];
	struct ibv_sge sge;
	struct ibv_send_wr sw = { .wr_id = WR_SEND | gi, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED }, *bsw;

	if (j >= T || (k && g->done < j - M + 1) || c->idx != gi + 1 ||
	    j - g->acked >= 2 * MAX_SLOTS)
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	off = slice_off(j, chunk_send(k), &len);
	if (c->size != len || !c->rkey)
		die("CTS %" PRIu64 ": size %u rkey 0x%x, expected size %u", gi, c->size,
		    c->rkey, len);
	sge.addr = (uintptr_t)buf + off;
	sge.length = len;
	sge.lkey = buf_mr->lkey;
	sw.imm_data = htonl((uint32_t)gi);
	sw.wr.rdma.remote_addr = c->addr;
	sw.wr.rdma.rkey = c->rkey;
	if (ibv_post_send(qp_send, &sw, &bsw))
		die("ibv_post_send (data): %s", strerror(errno));
	g->sent++;
	return true;
}

/* reduce or copy the next received slice, once its region is free */
static bool try_process(struct ring *g)
{
	uint32_t j = g->done, k = j / M, len, n, i;
	uint64_t gi = g->base + j;
	const uint32_t *src;
	uint32_t *dst;

	if (j >= g->recvd)
		return false;
	/* all-gather overwrites a slice this rank sent in reduce-scatter */
	if (k >= (uint32_t)O.nranks - 1 && g->acked < j - (O.nranks - 1) * M + 1)
		return false;
	dst = buf + slice_off(j, chunk_recv(k), &len) / 4;
	src = (const uint32_t *)(stage + (gi % O.slots) * O.slice);
	n = len / 4;
	if (k >= (uint32_t)O.nranks - 1)
		memcpy(dst, src, len);
	else if (g->skip && !j)
		msg("--skip: not adding the first slice of this step");
	else
		for (i = 0; i < n; i++)
			dst[i] += src[i];
	g->done++;
	return true;
}

static void on_wc(struct ring *g, const struct ibv_wc *wc)
{
	uint64_t kind = wc->wr_id & WR_KIND, gi = wc->wr_id & ~WR_KIND;
	uint32_t len;

	if (wc->status != IBV_WC_SUCCESS)
		die("completion of %s %" PRIu64 ": %s (vendor_err 0x%x)",
		    kind == WR_SEND ? "data write" : kind == WR_CTS ? "CTS write" : "receive",
		    gi, ibv_wc_status_str(wc->status), wc->vendor_err);
	if (kind == WR_SEND && gi == g->base + g->acked &&
	    wc->opcode == IBV_WC_RDMA_WRITE) {
		g->acked++;
	} else if (kind == WR_CTS && gi == g->base + g->cts_acked &&
		   wc->opcode == IBV_WC_RDMA_WRITE) {
		g->cts_acked++;
	} else if (kind == WR_RECV && gi == g->base + g->recvd) {
		slice_off(g->recvd, 0, &len);
		if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    !(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != (uint32_t)gi ||
		    wc->byte_len != len || wc->qp_num != qp_recv->qp_num)
			die("receive %" PRIu64 ": opcode %d flags 0x%x imm %u byte_len %u qp %u, expected WITH_IMM imm %u byte_len %u qp %u",
			    gi, wc->opcode, wc->wc_flags, ntohl(wc->imm_data), wc->byte_len,
			    wc->qp_num, (uint32_t)gi, len, qp_recv->qp_num);
		g->recvd++;
	} else {
		die("unexpected completion: wr_id 0x%" PRIx64 " opcode %d (sent %u acked %u cts %u/%u recvd %u)",
		    wc->wr_id, wc->opcode, g->sent, g->acked, g->cts_acked, g->cts, g->recvd);
	}
}

static void ring_step(struct ring *g)
{
	struct ibv_wc wc[32];
	double last = mrc_now_s();
	unsigned long idle = 0;
	int n, i;

	while (g->done < T || g->acked < T || g->cts_acked < T) {
		uint32_t a0 = g->acked, r0 = g->recvd, c0 = g->cts_acked, s0 = g->sent;
		bool moved = false;

		/* credits: a free staging slot; and room in the send queue */
		while (g->cts < T && g->cts < g->done + O.slots &&
		       g->cts - g->cts_acked < 2 * MAX_SLOTS) {
			post_cts(g);
			moved = true;
		}
		while (try_send(g))
			moved = true;
		n = ibv_poll_cq(cq, 32, wc);
		if (n < 0)
			die("ibv_poll_cq: %d", n);
		for (i = 0; i < n; i++)
			on_wc(g, &wc[i]);
		while (try_process(g))
			moved = true;
		if (moved || n) {
			double t = mrc_now_s();

			if (t - last > g->gap) {
				g->gap = t - last;
				g->gap_why = g->acked != a0 ? GAP_ACK :
					     g->recvd != r0 ? GAP_RECV :
					     g->cts_acked != c0 ? GAP_CTS_ACK :
					     g->sent != s0 ? GAP_CTS_IN : GAP_NONE;
			}
			last = t;
			idle = 0;
			continue;
		}
		if (++idle % 64 == 0) {
			struct timespec ts = { 0, O.sleep_us * 1000L };

			if (mrc_now_s() - last > O.stall_s)
				die("no progress for %.0f s: cts %u/%u recvd %u done %u sent %u acked %u of %u",
				    O.stall_s, g->cts, g->cts_acked, g->recvd, g->done, g->sent,
				    g->acked, T);
			nanosleep(&ts, NULL);
		}
	}
}

/* ------------------------------------------------------------------------ */
/* per-rank trace (--counters): the device's counters moved in each step     */

static const char *const ctr_names[] = {
	"retransmitted_packets", "rack_losses", "tail_loss_probes", "rto_events",
	"spurious_retransmits", "spurious_rtos", "spurious_timer_retx",
	"rnr_naks_sent", "rnr_naks_received", "naks_received", "cc_window_cuts",
	"credit_waits", "credit_hold_timeouts", "sack_holes", "duplicate_packets",
	"tx_dropped",
};
#define NCTR (sizeof(ctr_names) / sizeof(ctr_names[0]))
static int ctr_fd[NCTR];
static uint64_t ctr_last[NCTR];
static FILE *ctr_out;

static uint64_t ctr_read(int fd)
{
	char b[32];
	ssize_t n = fd < 0 ? 0 : pread(fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return 0;
	b[n] = 0;
	return strtoull(b, NULL, 10);
}

static void ctr_open(void)
{
	char path[256];
	size_t i;

	ctr_out = fopen(O.ctr, "w");
	if (!ctr_out)
		die("%s: %s", O.ctr, strerror(errno));
	fprintf(ctr_out, "step,us,gap_us,gap_end");
	for (i = 0; i < NCTR; i++) {
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/hw_counters/%s",
			 O.sysfs, O.dev, O.port, ctr_names[i]);
		ctr_fd[i] = open(path, O_RDONLY);
		if (ctr_fd[i] < 0)
			msg("%s: %s (counted as 0)", path, strerror(errno));
		ctr_last[i] = ctr_read(ctr_fd[i]);
		fprintf(ctr_out, ",%s", ctr_names[i]);
	}
	fputc('\n', ctr_out);
}

/* one line: this rank's ring time, its longest wait, the counters' deltas */
static void ctr_step(int64_t s, const struct report *rep, const struct ring *g)
{
	uint64_t v;
	size_t i;

	fprintf(ctr_out, "%" PRId64 ",%.1f,%.1f,%s", s, (rep->t_done - rep->t_start) * 1e6,
		g->gap * 1e6, gap_name[g->gap_why]);
	for (i = 0; i < NCTR; i++) {
		v = ctr_read(ctr_fd[i]);
		fprintf(ctr_out, ",%" PRIu64, v - ctr_last[i]);
		ctr_last[i] = v;
	}
	fputc('\n', ctr_out);
}

/* ------------------------------------------------------------------------ */
/* steps, barrier and statistics (rank 0)                                     */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of sorted V[N] */
static double pct(const double *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p / 100 * n + 0.999999);

	return v[i ? i - 1 : 0];
}

static FILE *csv;
static double *step_us;
static double start_mono, start_real;	/* step 0's start (rank 0) */
static double run_start;
static bool capped;
static uint64_t total_bad, verified;

/* rank 0: gather every report of step S, then start step S+1 or stop */
static bool barrier0(const struct report *mine, int64_t s, bool more)
{
	struct report rep[MAX_RANKS];
	double t_start = mine->t_start, t_done = mine->t_done;
	uint64_t bad = mine->bad;
	int i, slow = 0;
	struct go go = { more ? s + 1 : -1 };

	rep[0] = *mine;
	for (i = 1; i < O.nranks; i++) {
		xfer(ctl[i], &rep[i], sizeof(rep[i]), false);
		if (rep[i].step != s)
			die("rank %d reported step %" PRId64 ", expected %" PRId64, i,
			    rep[i].step, s);
		if (rep[i].t_start < t_start)
			t_start = rep[i].t_start;
		if (rep[i].t_done > rep[slow].t_done)
			slow = i;
		bad += rep[i].bad;
		if (rep[i].bad)
			msg("rank %d: step %" PRId64 ": %" PRIu64 " wrong elements, first %" PRIu64,
			    i, s, rep[i].bad, rep[i].first_bad);
	}
	t_done = rep[slow].t_done;
	if (s >= 0) {
		bool ver = (uint64_t)s % O.verify_every == 0 || (uint64_t)s == O.warmup + O.steps - 1;
		int64_t ts = s - O.warmup;	/* timed step */

		verified += ver;
		total_bad += bad;
		if (ts >= 0)
			step_us[ts] = (t_done - t_start) * 1e6;
		if (ts >= 0 && csv)
			fprintf(csv, "%" PRId64 ",%.1f,%d,%d,%" PRIu64 ",%.6f\n", ts, step_us[ts],
				slow, ver, bad, t_start - start_mono);
	}
	if (more && O.max_s > 0 && mrc_now_s() - run_start > O.max_s) {
		msg("--max-time %.0f s reached after %" PRId64 " steps", O.max_s, s + 1);
		capped = true;
		go.step = GO_CAPPED;
	}
	if (bad)
		go.step = -1;
	for (i = 1; i < O.nranks; i++)
		xfer(ctl[i], &go, sizeof(go), true);
	return go.step >= 0;
}

/* ranks 1..N-1: report step S, wait for the next go */
static bool barrier(const struct report *mine, int64_t s, bool more)
{
	struct go go;

	if (!O.rank)
		return barrier0(mine, s, more);
	xfer(ctl[0], (void *)mine, sizeof(*mine), true);
	xfer(ctl[0], &go, sizeof(go), false);
	capped = go.step == GO_CAPPED;
	if (go.step >= 0 && go.step != s + 1)
		die("rank 0 started step %" PRId64 ", expected %" PRId64, go.step, s + 1);
	return go.step >= 0;
}

/* STEPS: steps completed, warm-up included */
static void summary(uint64_t steps, double elapsed)
{
	double *v, sum = 0;
	uint64_t i, all = steps;
	bool ok = (steps == O.warmup + O.steps || capped) && !total_bad;

	if (O.rank) {
		printf("MRC_STEP_RESULT rank=%d status=%s steps=%" PRIu64 " capped=%d bad=%" PRIu64 "\n",
		       O.rank, ok ? "PASS" : "FAIL", steps, capped, total_bad);
		return;
	}
	steps = steps > O.warmup ? steps - O.warmup : 0;
	v = malloc(sizeof(*v) * (steps ? steps : 1));
	if (!v)
		die("out of memory");
	for (i = 0; i < steps; i++)
		sum += (v[i] = step_us[i]);
	qsort(v, steps, sizeof(*v), cmp_d);
	printf("MRC_STEP_RESULT rank=0 status=%s ranks=%d size=%" PRIu64 " slice=%" PRIu64
	       " slots=%u warmup=%" PRIu64 " steps=%" PRIu64 " timed=%" PRIu64 " capped=%d"
	       " verified=%" PRIu64 " bad=%" PRIu64,
	       ok ? "PASS" : "FAIL", O.nranks, O.size, O.slice, O.slots, O.warmup, all,
	       steps, capped, verified, total_bad);
	if (steps)
		printf(" min_us=%.0f p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f mean_us=%.0f algbw_mbps=%.1f",
		       v[0], pct(v, steps, 50), pct(v, steps, 90), pct(v, steps, 99),
		       v[steps - 1], sum / steps, O.size * 8.0 * steps / sum);
	printf(" elapsed_s=%.2f t0_real=%.6f\n", elapsed, start_real);
	free(v);
}

static int run(void)
{
	struct ring g = { 0 };
	struct report rep = { .step = -1 };
	uint64_t s = 0, n = O.warmup + O.steps;
	double start = mrc_now_s();
	bool more;

	fill(0);
	run_start = start;
	more = barrier(&rep, -1, true);
	for (s = 0; more && s < n; s++) {
		memset(&g, 0, sizeof(g));
		g.base = s * T;
		g.skip = (int64_t)s == O.skip_step && O.rank == 1;
		rep.step = s;
		rep.t_start = mrc_now_s();
		if (s == O.warmup && !O.rank) {
			start = start_mono = rep.t_start;
			start_real = mrc_wall_s();
			msg("step 0 starts (after %" PRIu64 " warm-up steps)", O.warmup);
		}
		ring_step(&g);
		steps_done = s + 1;
		rep.t_done = mrc_now_s();
		if (ctr_out)
			ctr_step((int64_t)s - (int64_t)O.warmup, &rep, &g);
		rep.bad = 0;
		if (s % O.verify_every == 0 || s == n - 1)
			rep.bad = verify(s, &rep.first_bad);
		if (O.rank)
			total_bad += rep.bad;
		if (s + 1 < n)
			fill(s + 1);
		more = barrier(&rep, s, s + 1 < n);
	}
	summary(s, mrc_now_s() - start);
	if (ctr_out)
		fclose(ctr_out);
	fflush(stdout);
	return (s == n || capped) && !total_bad ? 0 : 1;
}

/* ------------------------------------------------------------------------ */

static uint64_t num(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end == 'K' || *end == 'k') {
		v <<= 10;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		v <<= 20;
		end++;
	}
	if (errno || end == s || *end)
		die("bad %s: %s", what, s);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mrc_step -d DEV -N RANKS -r RANK [options] [RANK0-ADDR]\n"
		"  -x GID-INDEX   (default: first IPv4 RoCE v2 GID)\n"
		"  -p TCP-PORT    rank 0's control port (18800)\n"
		"  -s BYTES       all-reduce size per step (8M)\n"
		"  -n STEPS       timed steps (500)\n"
		"  -w STEPS       warm-up steps before them, verified, not timed (0)\n"
		"  -S BYTES       slice, one transfer (512K)\n"
		"  -b SLOTS       staging buffers = credits per connection (8)\n"
		"  -k K           check the result every K steps (1; the last always)\n"
		"  -C FILE        rank 0: per-step CSV\n"
		"  -t TIMEOUT -R RETRY   QP timeout exponent (20) and retry_cnt (7)\n"
		"  --stall S      give up after S s without progress (60)\n"
		"  --sleep-us US  pause of an idle poll loop (20)\n"
		"  --max-time S   rank 0 ends the run after the step that passes S s (0: off)\n"
		"  --skip STEP    self-test: rank 1 drops one slice's reduction\n"
		"  --counters FILE  per step: this rank's ring time, its longest wait\n"
		"                 without progress and what ended it, and the deltas of\n"
		"                 the device's loss-recovery counters (sysfs)\n"
		"  --sysfs DIR    where sysfs is mounted (/sys; `ip netns exec` mounts\n"
		"                 one without the RDMA devices)\n");
	exit(2);
}

static void options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "stall", 1, NULL, 1 }, { "sleep-us", 1, NULL, 2 },
		{ "skip", 1, NULL, 3 }, { "max-time", 1, NULL, 4 },
		{ "counters", 1, NULL, 5 }, { "sysfs", 1, NULL, 6 }, { NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:x:p:s:n:w:S:b:k:C:t:R:r:N:", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			O.dev = optarg;
			break;
		case 'x':
			O.gid_idx = num(optarg, "GID index");
			break;
		case 'p':
			O.tcp_port = num(optarg, "port");
			break;
		case 's':
			O.size = num(optarg, "size");
			break;
		case 'n':
			O.steps = num(optarg, "steps");
			break;
		case 'w':
			O.warmup = num(optarg, "warm-up steps");
			break;
		case 'S':
			O.slice = num(optarg, "slice");
			break;
		case 'b':
			O.slots = num(optarg, "slots");
			break;
		case 'k':
			O.verify_every = num(optarg, "K");
			break;
		case 'C':
			O.csv = optarg;
			break;
		case 't':
			O.timeout = num(optarg, "timeout");
			break;
		case 'R':
			O.retry = num(optarg, "retry");
			break;
		case 'r':
			O.rank = num(optarg, "rank");
			break;
		case 'N':
			O.nranks = num(optarg, "ranks");
			break;
		case 1:
			O.stall_s = num(optarg, "stall");
			break;
		case 2:
			O.sleep_us = num(optarg, "sleep");
			break;
		case 3:
			O.skip_step = num(optarg, "step");
			break;
		case 4:
			O.max_s = num(optarg, "seconds");
			break;
		case 5:
			O.ctr = optarg;
			break;
		case 6:
			O.sysfs = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind < argc)
		O.server = argv[optind];
	if (!O.dev || O.nranks < 2 || O.nranks > MAX_RANKS || O.rank < 0 ||
	    O.rank >= O.nranks || (O.rank && !O.server) || !O.steps || !O.verify_every)
		usage();
	if (O.size % (4ull * O.nranks) || O.size / O.nranks % 4 || !O.slice ||
	    O.slice % 4 || O.slots < 1 || O.slots > MAX_SLOTS || O.size > (1ull << 31))
		die("size must be a multiple of 4 x ranks (at most 2 GiB), slice of 4, slots 1..%d",
		    MAX_SLOTS);
	chunk = O.size / O.nranks;
	if (O.slice > chunk)
		O.slice = chunk;
	M = (chunk + O.slice - 1) / O.slice;
	T = 2 * (O.nranks - 1) * M;
}

int main(int argc, char **argv)
{
	t0 = mrc_now_s();
	options(argc, argv);
	setup();
	if (!O.rank) {
		step_us = calloc(O.steps, sizeof(*step_us));
		if (!step_us)
			die("out of memory");
		if (O.csv) {
			csv = fopen(O.csv, "w");
			if (!csv)
				die("%s: %s", O.csv, strerror(errno));
			fprintf(csv, "step,us,slowest_rank,verified,bad,t_s\n");
		}
	}
	if (O.ctr)
		ctr_open();
	msg("%d ranks, %" PRIu64 " bytes per step in %u transfers of up to %" PRIu64
	    " bytes each way, %u slots, %" PRIu64 " steps",
	    O.nranks, O.size, T, O.slice, O.slots, O.steps);
	return run();
}

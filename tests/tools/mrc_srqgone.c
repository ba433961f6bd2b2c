// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_srqgone: SRQ receive WQEs survive the destruction of a QP that
 * had taken them.
 *
 *   mrc_srqgone DEVICE GID_INDEX [ROUNDS]
 *
 * Posts N receives (wr_id 0..N-1) to an SRQ.  SENDs send from slot i of
 * a buffer for the i-th SEND of a batch; a batch ends before the next.  Each round connects a
 * requester QP to a new responder QP on the SRQ (through the device's
 * own GID), streams multi-packet SENDs and destroys the responder, not in
 * the error state, while messages are still arriving: it holds WQEs for
 * them.  Then a last responder on the SRQ gets exactly as many SENDs as
 * receives were not completed yet; each must complete with data (payload
 * checked) on a WQE not completed before, and one SEND more must find
 * the SRQ empty (RNR, rnr_retry 0): every receive completes exactly once.
 * Before that last responder takes any, the SRQ limit is armed at the
 * number of receives left: the first one taken, given back or not, must
 * raise IBV_EVENT_SRQ_LIMIT_REACHED.
 * Prints "srqgone: ok ..." and exits 0, or says what went wrong and
 * exits 1.
 */
#include <infiniband/verbs.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrc_loop.h"

#define N	256		/* receives posted to the SRQ */
#define MSG	(64 * 1024)	/* bytes a SEND: 64 packets at MTU 1024 */
#define PER	40		/* SENDs a round */

struct ctx {
	struct mrc_loop l;	/* device, GID, MTU */
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_mr *rmr, *smr;
	unsigned char *rbuf, *sbuf;
	unsigned char seen[N];	/* receive completed: 1 ok, 2 flushed */
	unsigned int ok, flushed;
	unsigned int cut;	/* rounds whose responder went mid-stream */
};

static int fail(const char *what)
{
	fprintf(stderr, "srqgone: %s\n", what);
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* message @id's payload */
static void fill(unsigned char *p, unsigned int id)
{
	unsigned int i;

	for (i = 0; i < MSG; i++)
		p[i] = (unsigned char)(id * 131 + i * 7 + (i >> 8));
}

static struct ibv_qp *make_qp(struct ctx *c, bool on_srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->scq, .recv_cq = c->rcq, .qp_type = IBV_QPT_RC,
		.srq = on_srq ? c->srq : NULL,
		.cap = { .max_send_wr = 2 * PER + N, .max_send_sge = 1 },
	};

	return mrc_loop_qp(c->pd, &ia, IBV_ACCESS_REMOTE_WRITE);
}

/* @qp to RTS towards @peer; @rnr_retry 0: an empty SRQ fails the SEND */
static int connect_qp(struct ctx *c, struct ibv_qp *qp, uint32_t peer,
		      int rnr_retry)
{
	const char *err = mrc_loop_rts(&c->l, qp, peer, 0x4242, rnr_retry);

	return err ? fail(err) : 0;
}

static int post_sends(struct ctx *c, struct ibv_qp *qp, unsigned int first,
		      unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned int id = first + i;
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->sbuf + (size_t)i * MSG,
			.length = MSG, .lkey = c->smr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = id, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.imm_data = htobe32(id),
			.send_flags = IBV_SEND_SIGNALED,
		};
		struct ibv_send_wr *bad;

		fill(c->sbuf + (size_t)i * MSG, id);
		if (ibv_post_send(qp, &wr, &bad))
			return fail("post SEND");
	}
	return 0;
}

/* a receive completion: a WQE completes once, with its message's data */
static int take_recv(struct ctx *c, const struct ibv_wc *wc)
{
	unsigned char want[MSG];

	if (wc->wr_id >= N || c->seen[wc->wr_id]) {
		fprintf(stderr, "srqgone: receive wr_id %llu completed twice or unknown\n",
			(unsigned long long)wc->wr_id);
		return 1;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		c->seen[wc->wr_id] = 2;
		c->flushed++;
		return 0;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "srqgone: receive %llu: %s\n",
			(unsigned long long)wc->wr_id,
			ibv_wc_status_str(wc->status));
		return 1;
	}
	fill(want, be32toh(wc->imm_data));
	if (wc->byte_len != MSG ||
	    memcmp(c->rbuf + (size_t)wc->wr_id * MSG, want, MSG)) {
		fprintf(stderr, "srqgone: receive %llu: data of message %u differs\n",
			(unsigned long long)wc->wr_id, be32toh(wc->imm_data));
		return 1;
	}
	c->seen[wc->wr_id] = 1;
	c->ok++;
	return 0;
}

/* poll the receive CQ until @want receives are accounted or @secs pass */
static int poll_recvs(struct ctx *c, unsigned int want, double secs)
{
	double end = now_s() + secs;
	struct ibv_wc wc[16];
	int i, r;

	do {
		r = ibv_poll_cq(c->rcq, 16, wc);
		if (r < 0)
			return fail("poll recv CQ");
		for (i = 0; i < r; i++)
			if (take_recv(c, &wc[i]))
				return -1;
		if (c->ok + c->flushed >= want)
			return 0;
	} while (r || now_s() < end);
	return 1;
}

/* one round: a responder on the SRQ destroyed while SENDs arrive */
static int round_gone(struct ctx *c, unsigned int r)
{
	unsigned int base = c->ok + c->flushed;
	struct ibv_qp *req = make_qp(c, false), *resp = make_qp(c, true);
	struct ibv_wc wc;

	if (!req || !resp)
		return fail("create QPs");
	if (connect_qp(c, req, resp->qp_num, 7) ||
	    connect_qp(c, resp, req->qp_num, 7))
		return 1;
	if (post_sends(c, req, 1000 * (r + 1), PER))
		return 1;
	/* the first message in: the others are under way */
	if (poll_recvs(c, base + 1, 20) < 0)
		return 1;
	if (ibv_destroy_qp(resp))
		return fail("destroy responder");
	if (ibv_destroy_qp(req))
		return fail("destroy requester");
	while (ibv_poll_cq(c->scq, 1, &wc) > 0)
		;
	/* what completed before the destroy is in the CQ by now */
	if (poll_recvs(c, N, 0.2) < 0)
		return 1;
	c->cut += c->ok + c->flushed - base < PER;
	return 0;
}

/* @n SENDs of @left for the receives left complete, @done before them */
static int wait_sends(struct ctx *c, unsigned int done, unsigned int n,
		      unsigned int left)
{
	double end = now_s() + 30;
	struct ibv_wc wc;
	unsigned int i;
	int r;

	for (i = 0; i < n && now_s() < end;) {
		r = ibv_poll_cq(c->scq, 1, &wc);
		if (r < 0)
			return fail("poll send CQ");
		if (!r)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "srqgone: SEND %u of %u for the receives left: %s (%u receives lost)\n",
				done + i + 1, left, ibv_wc_status_str(wc.status),
				left - done - i);
			return 1;
		}
		i++;
	}
	return i < n ? fail("SENDs for the receives left did not complete") : 0;
}

/* arm the SRQ limit at @limit; 1 if an event came before */
static int arm_limit(struct ctx *c, unsigned int limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };
	struct ibv_async_event ev;
	int fl = fcntl(c->l.ctx->async_fd, F_GETFL);

	if (fl < 0 || fcntl(c->l.ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		return fail("async_fd non-blocking");
	while (!ibv_get_async_event(c->l.ctx, &ev)) {
		bool lim = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED;

		ibv_ack_async_event(&ev);
		if (lim)
			return fail("SRQ limit event before the limit was armed");
	}
	if (ibv_modify_srq(c->srq, &a, IBV_SRQ_LIMIT))
		return fail("modify_srq limit");
	return 0;
}

/* wait up to @secs for the SRQ limit event: 1 if it came */
static int limit_event(struct ctx *c, double secs)
{
	struct pollfd p = { .fd = c->l.ctx->async_fd, .events = POLLIN };
	double end = now_s() + secs;
	struct ibv_async_event ev;

	while (now_s() < end) {
		bool lim;

		if (poll(&p, 1, 100) <= 0 || ibv_get_async_event(c->l.ctx, &ev))
			continue;
		lim = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
		      ev.element.srq == c->srq;
		ibv_ack_async_event(&ev);
		if (lim)
			return 1;
	}
	return 0;
}

/* the receives left must all arrive through a last responder */
static int drain(struct ctx *c)
{
	unsigned int left = N - c->ok - c->flushed;
	struct ibv_qp *req = make_qp(c, false), *resp = make_qp(c, true);
	double end;
	struct ibv_wc wc;
	int r;

	if (!req || !resp)
		return fail("create QPs");
	if (connect_qp(c, req, resp->qp_num, 0) ||
	    connect_qp(c, resp, req->qp_num, 0))
		return 1;
	/* every receive left is in the ring or given back: armed at all */
	if (left && (arm_limit(c, left) || post_sends(c, req, 100000, 1) ||
		     wait_sends(c, 0, 1, left)))
		return 1;
	if (left && !limit_event(c, 5)) {
		fprintf(stderr, "srqgone: no SRQ limit event after 1 of %u receives left was taken\n",
			left);
		return 1;
	}
	if (left > 1 && (post_sends(c, req, 100001, left - 1) ||
			 wait_sends(c, 1, left - 1, left)))
		return 1;
	if (poll_recvs(c, N, 10))
		return fail("receives left did not all complete");
	/* one more: the SRQ must be empty */
	if (post_sends(c, req, 200000, 1))
		return 1;
	for (end = now_s() + 10; (r = ibv_poll_cq(c->scq, 1, &wc)) == 0 &&
	     now_s() < end;)
		;
	if (r <= 0)
		return fail("the SEND beyond the receives did not complete");
	if (wc.status != IBV_WC_RNR_RETRY_EXC_ERR) {
		fprintf(stderr, "srqgone: the SEND beyond the receives: %s, expected RNR (a receive completed twice?)\n",
			ibv_wc_status_str(wc.status));
		return 1;
	}
	ibv_destroy_qp(resp);
	ibv_destroy_qp(req);
	return 0;
}

static int setup(struct ctx *c, const char *dev, int gidx)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = N, .max_sge = 1 } };
	const char *err = mrc_loop_open(&c->l, dev, gidx, 0);
	unsigned int i;

	if (err)
		return fail(err);
	c->pd = ibv_alloc_pd(c->l.ctx);
	c->scq = ibv_create_cq(c->l.ctx, 4 * N, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->l.ctx, 4 * N, NULL, NULL, 0);
	c->srq = c->pd ? ibv_create_srq(c->pd, &sa) : NULL;
	c->rbuf = calloc(N, MSG);
	c->sbuf = calloc(N, MSG);
	if (!c->pd || !c->scq || !c->rcq || !c->srq || !c->rbuf || !c->sbuf)
		return fail("setup");
	c->rmr = ibv_reg_mr(c->pd, c->rbuf, (size_t)N * MSG,
			    IBV_ACCESS_LOCAL_WRITE);
	c->smr = ibv_reg_mr(c->pd, c->sbuf, (size_t)N * MSG, 0);
	if (!c->rmr || !c->smr)
		return fail("reg_mr");
	for (i = 0; i < N; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)c->rbuf + (size_t)i * MSG,
			.length = MSG, .lkey = c->rmr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		if (ibv_post_srq_recv(c->srq, &wr, &bad))
			return fail("post_srq_recv");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct ctx c;
	unsigned int rounds, r, in_rounds;

	if (argc < 3 || argc > 4)
		return fail("usage: mrc_srqgone DEVICE GID_INDEX [ROUNDS]");
	rounds = argc > 3 ? (unsigned int)atoi(argv[3]) : 4;
	if (rounds * PER >= N)
		return fail("too many rounds for the SRQ");
	if (setup(&c, argv[1], atoi(argv[2])))
		return 1;
	for (r = 0; r < rounds; r++)
		if (round_gone(&c, r))
			return 1;
	in_rounds = c.ok + c.flushed;
	if (!c.cut)
		return fail("every round completed before its responder was destroyed: nothing tested");
	if (drain(&c))
		return 1;
	printf("srqgone: ok (%u receives: %u completed before %u of %u responders were destroyed mid-stream (%u flushed), %u through the last one, the limit event at the first; then RNR)\n",
	       N, in_rounds, c.cut, rounds, c.flushed,
	       c.ok + c.flushed - in_rounds);
	return 0;
}

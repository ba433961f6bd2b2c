// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_srqresize: an SRQ grows and shrinks with receives posted, and a
 * resize command a provider did not write is refused without harm.
 *
 *   mrc_srqresize DEVICE GID_INDEX
 *
 * One device talks to itself through its own GID: a requester QP sends
 * to a responder QP on an SRQ created for 16 WQEs of 1 entry.
 *  1. 10 receives are posted, the SRQ is resized to 200 WQEs of 2 entries
 *     (ibv_modify_srq, IBV_SRQ_MAX_WR) and ibv_query_srq must say so; 150
 *     more receives follow, some split over 2 entries, 160 in all, more
 *     than the old ring held.  160 SENDs of 3000 bytes must complete on
 *     the receives in the order they were posted (the 10 moved ones
 *     first), each once, with the payload byte for byte.
 *  2. With 20 receives posted, a resize to 5 and, after IBV_SRQ_LIMIT 8,
 *     a resize to 4 must fail with EINVAL and change nothing.
 *  3. Hand-made modify_srq commands (the uverbs write ABI): no driver
 *     data (EOPNOTSUPP), map address 0, reserved bits, 17 entries,
 *     max_wr 0 and 16385 (EINVAL), a map address nothing is mapped at
 *     (EFAULT).  The SRQ keeps its size, and the 20 receives of step 2
 *     then complete in order with their data.
 * Prints "srqresize: ok ..." and exits 0, or says what failed and exits 1.
 */
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/metaroce-abi.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrc_loop.h"

#define MSG	3000	/* bytes a SEND: 3 packets at MTU 1024 */
#define NBUF	200	/* receive slots */

struct ctx {
	struct mrc_loop l;	/* device, GID, MTU */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *req, *resp;
	struct ibv_mr *rmr, *smr;
	unsigned char *rbuf, *sbuf;
	unsigned int next_id;	/* wr_id of the next receive posted */
	unsigned int done_id;	/* wr_id the next receive must complete */
};

static int fail(const char *what)
{
	fprintf(stderr, "srqresize: %s\n", what);
	return 1;
}

static unsigned char pat(unsigned int id, unsigned int i)
{
	return (unsigned char)(id * 29 + i * 13 + (i >> 7));
}

static struct ibv_qp *make_qp(struct ctx *c, bool on_srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
		.srq = on_srq ? c->srq : NULL,
		.cap = { .max_send_wr = NBUF, .max_send_sge = 1,
			 .max_recv_wr = on_srq ? 0 : 1, .max_recv_sge = 1 },
	};

	return mrc_loop_qp(c->pd, &ia, 0);
}

static int connect_qp(struct ctx *c, struct ibv_qp *qp, uint32_t peer)
{
	const char *err = mrc_loop_rts(&c->l, qp, peer, 0x77, 0);

	return err ? fail(err) : 0;
}

/* @n receives; every third one split over two entries if @two */
static int post_recvs(struct ctx *c, unsigned int n, bool two)
{
	unsigned int k;

	for (k = 0; k < n; k++, c->next_id++) {
		unsigned char *p = c->rbuf + (size_t)(c->next_id % NBUF) * MSG;
		struct ibv_sge sge[2] = {
			{ .addr = (uintptr_t)p, .length = MSG,
			  .lkey = c->rmr->lkey },
			{ .addr = (uintptr_t)p + 1000, .length = MSG - 1000,
			  .lkey = c->rmr->lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = c->next_id, .sg_list = sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		if (two && c->next_id % 3 == 0) {
			sge[0].length = 1000;
			wr.num_sge = 2;
		}
		memset(p, 0, MSG);
		if (ibv_post_srq_recv(c->srq, &wr, &bad))
			return fail("post_srq_recv");
	}
	return 0;
}

/* @n SENDs; each must complete on the next receive, with its payload */
static int exchange(struct ctx *c, unsigned int n)
{
	unsigned int sent, got = 0, sdone = 0, i, id;
	struct ibv_wc wc[16];
	time_t end = time(NULL) + 60;
	int k, j;

	for (sent = 0; sent < n; sent++) {
		unsigned char *p = c->sbuf + (size_t)sent * MSG;
		struct ibv_sge sge = { .addr = (uintptr_t)p, .length = MSG,
				       .lkey = c->smr->lkey };
		struct ibv_send_wr wr = { .wr_id = sent, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;

		for (i = 0; i < MSG; i++)
			p[i] = pat(c->done_id + sent, i);
		if (ibv_post_send(c->req, &wr, &bad))
			return fail("post_send");
	}
	while (got < n || sdone < n) {
		if (time(NULL) > end)
			return fail("timed out waiting for completions");
		k = ibv_poll_cq(c->cq, 16, wc);
		if (k < 0)
			return fail("poll_cq");
		for (j = 0; j < k; j++) {
			if (wc[j].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "srqresize: %s completion %s\n",
					wc[j].opcode & IBV_WC_RECV ? "receive" : "send",
					ibv_wc_status_str(wc[j].status));
				return 1;
			}
			if (!(wc[j].opcode & IBV_WC_RECV)) {
				sdone++;
				continue;
			}
			id = (unsigned int)wc[j].wr_id;
			if (id != c->done_id || wc[j].byte_len != MSG) {
				fprintf(stderr, "srqresize: receive wr_id %u (%u bytes), expected %u\n",
					id, wc[j].byte_len, c->done_id);
				return 1;
			}
			for (i = 0; i < MSG; i++)
				if (c->rbuf[(size_t)(id % NBUF) * MSG + i] !=
				    pat(id, i)) {
					fprintf(stderr, "srqresize: receive %u: byte %u differs\n",
						id, i);
					return 1;
				}
			c->done_id++;
			got++;
		}
	}
	return 0;
}

static int expect_attr(struct ctx *c, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_attr a;

	if (ibv_query_srq(c->srq, &a))
		return fail("query_srq");
	if (a.max_wr != max_wr || a.max_sge != max_sge) {
		fprintf(stderr, "srqresize: query says %u WQEs of %u, expected %u of %u\n",
			a.max_wr, a.max_sge, max_wr, max_sge);
		return 1;
	}
	return 0;
}

/* modify_srq as the uverbs write ABI takes it, with our driver data */
static int raw_resize(struct ctx *c, uint32_t max_wr, bool drv,
		      const struct metaroce_modify_srq *d)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_modify_srq cmd;
		struct metaroce_modify_srq drv;
	} m = {};
	size_t len = drv ? sizeof(m) : sizeof(m) - sizeof(m.drv);

	m.hdr.command = IB_USER_VERBS_CMD_MODIFY_SRQ;
	m.hdr.in_words = len / 4;
	m.cmd.srq_handle = c->srq->handle;
	m.cmd.attr_mask = IBV_SRQ_MAX_WR;
	m.cmd.max_wr = max_wr;
	if (drv)
		m.drv = *d;
	if (write(c->l.ctx->cmd_fd, &m, len) == (ssize_t)len)
		return 0;
	return errno;
}

static int hostile(struct ctx *c)
{
	struct metaroce_create_srq_resp map;
	static const struct {
		const char *what;
		uint32_t max_wr;
		bool drv;
		struct metaroce_modify_srq d;
		int err;
	} t[] = {
		{ "no driver data", 64, false, {}, EOPNOTSUPP },
		{ "map address 0", 64, true, { .map_addr = 0 }, EINVAL },
		{ "reserved bits", 64, true, { .reserved = 1 }, EINVAL },
		{ "17 entries", 64, true, { .max_sge = 17 }, EINVAL },
		{ "max_wr 0", 0, true, {}, EINVAL },
		{ "max_wr 16385", 16385, true, {}, EINVAL },
		{ "unmapped map address", 64, true, { .map_addr = 8 }, EFAULT },
	};
	unsigned int i;
	int err;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct metaroce_modify_srq d = t[i].d;

		if (d.map_addr == 0 && strcmp(t[i].what, "map address 0"))
			d.map_addr = (uintptr_t)&map;
		err = raw_resize(c, t[i].max_wr, t[i].drv, &d);
		if (err != t[i].err) {
			fprintf(stderr, "srqresize: resize with %s: %s, expected %s\n",
				t[i].what, strerror(err), strerror(t[i].err));
			return 1;
		}
	}
	return 0;
}

static int setup(struct ctx *c, const char *dev, int gidx)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	const char *err = mrc_loop_open(&c->l, dev, gidx, IBV_MTU_1024);

	if (err)
		return fail(err);
	c->pd = ibv_alloc_pd(c->l.ctx);
	c->cq = ibv_create_cq(c->l.ctx, 4 * NBUF, NULL, NULL, 0);
	c->srq = c->pd ? ibv_create_srq(c->pd, &sa) : NULL;
	c->rbuf = calloc(NBUF, MSG);
	c->sbuf = calloc(NBUF, MSG);
	if (!c->pd || !c->cq || !c->srq || !c->rbuf || !c->sbuf)
		return fail("setup");
	c->rmr = ibv_reg_mr(c->pd, c->rbuf, (size_t)NBUF * MSG,
			    IBV_ACCESS_LOCAL_WRITE);
	c->smr = ibv_reg_mr(c->pd, c->sbuf, (size_t)NBUF * MSG, 0);
	c->req = make_qp(c, false);
	c->resp = make_qp(c, true);
	if (!c->rmr || !c->smr || !c->req || !c->resp)
		return fail("setup: MRs and QPs");
	if (connect_qp(c, c->req, c->resp->qp_num) ||
	    connect_qp(c, c->resp, c->req->qp_num))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_srq_attr a = {};
	static struct ctx c;
	uint32_t was_wr, was_sge;
	int err;

	if (argc != 3)
		return fail("usage: mrc_srqresize DEVICE GID_INDEX");
	if (setup(&c, argv[1], atoi(argv[2])))
		return 1;
	if (ibv_query_srq(c.srq, &a))
		return fail("query_srq");
	was_wr = a.max_wr;
	was_sge = a.max_sge;

	/* 1: grow with 10 posted, then use the room */
	if (post_recvs(&c, 10, false))
		return 1;
	a.max_wr = 200;
	a.max_sge = 2;
	err = ibv_modify_srq(c.srq, &a, IBV_SRQ_MAX_WR);
	if (err) {
		fprintf(stderr, "srqresize: resize to 200 x 2: %s\n", strerror(err));
		return 1;
	}
	if (expect_attr(&c, 200, 2) || post_recvs(&c, 150, true) ||
	    exchange(&c, 160))
		return 1;

	/* 2: refused shrinks leave the SRQ as it was */
	if (post_recvs(&c, 20, true))
		return 1;
	a.max_wr = 5;
	if (ibv_modify_srq(c.srq, &a, IBV_SRQ_MAX_WR) != EINVAL)
		return fail("a resize below the receives posted was not refused with EINVAL");
	a.srq_limit = 8;
	if (ibv_modify_srq(c.srq, &a, IBV_SRQ_LIMIT))
		return fail("setting the limit failed");
	a.max_wr = 4;
	if (ibv_modify_srq(c.srq, &a, IBV_SRQ_MAX_WR) != EINVAL)
		return fail("a resize below the limit was not refused with EINVAL");

	/* 3: commands no provider would send */
	if (hostile(&c) || expect_attr(&c, 200, 2) || exchange(&c, 20))
		return 1;
	printf("srqresize: ok (%u x %u -> 200 x 2 with 10 posted, 160 then 20 receives completed in order with their data; shrinks below the posted count and the limit refused; 7 malformed resize commands refused, the SRQ unchanged)\n",
	       was_wr, was_sge);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_mw: memory windows, what they grant and everything a bind or an
 * access through one may get wrong.
 *
 *   mrc_mw DEVICE GID_INDEX
 *
 * One device talks to itself through its own GID: requester QP A sends
 * to responder QP B; each numbered step below that breaks a QP uses a
 * fresh pair.  The target MR (IBV_ACCESS_MW_BIND | LOCAL_WRITE, no remote
 * right of its own) is 16 KiB; windows show [4 KiB, 8 KiB) of it.
 *  1. A type 2 window bound through B (completion IBV_WC_BIND_MW): A's
 *     WRITE lands byte for byte, A's READ returns it; the MR cannot be
 *     deregistered while the window is bound (EBUSY); a WRITE one byte
 *     past the window fails with a remote access error.
 *  2. That window through another pair's responder: remote access error;
 *     destroying the QP a window was bound through unbinds it (its MR
 *     deregisters).
 *  3. A second bind of a bound type 2 window: IBV_WC_MW_BIND_ERR.
 *  4. LOCAL_INV through B, then A's WRITE: remote access error.
 *  5. SEND_WITH_INV of the window's key from A: B's receive reports the
 *     key invalidated, then A's WRITE: remote access error.
 *  6. Binds that must fail with IBV_WC_MW_BIND_ERR: an MR without
 *     IBV_ACCESS_MW_BIND, a range past the MR's end, a remote write on
 *     an MR without local write, a zero-based window, a bind that keeps
 *     the window's key.
 *  7. A type 1 window (ibv_bind_mw): A's WRITE lands; bound again with
 *     length 0 it grants nothing.
 *  8. A window's key as a local SGE key: local protection error.
 *  9. ibv_alloc_mw of type 3 fails; with every window freed the MR
 *     deregisters.
 * Prints "mw: ok ..." and exits 0, or says what failed and exits 1.
 */
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrc_loop.h"

#define MRLEN	16384
#define WOFF	4096	/* the window: [WOFF, WOFF + WLEN) of the MR */
#define WLEN	4096
#define HELD	8	/* completions kept for a later wait_wc() */

struct ctx {
	struct mrc_loop l;	/* device, GID, MTU */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *nobind, *ro, *smr;
	unsigned char *buf, *nbuf, *sbuf;
	struct ibv_qp *a, *b;	/* the current pair */
	struct ibv_wc held[HELD];
	unsigned int nheld;
	unsigned int pairs, steps;
};

static int fail(const char *what)
{
	fprintf(stderr, "mw: %s\n", what);
	return 1;
}

static struct ibv_qp *make_qp(struct ctx *c)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1,
			 .max_recv_wr = 4, .max_recv_sge = 1 },
	};

	return mrc_loop_qp(c->pd, &ia,
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

static int connect_qp(struct ctx *c, struct ibv_qp *qp, uint32_t peer)
{
	const char *err = mrc_loop_rts(&c->l, qp, peer, 0x99, 7);

	return err ? fail(err) : 0;
}

/* a fresh pair A -> B; the old one is destroyed */
static int new_pair(struct ctx *c)
{
	struct ibv_wc wc[8];

	if (c->a)
		ibv_destroy_qp(c->a);
	if (c->b)
		ibv_destroy_qp(c->b);
	while (ibv_poll_cq(c->cq, 8, wc) > 0)
		;	/* flushes of the old pair */
	c->nheld = 0;
	c->a = make_qp(c);
	c->b = make_qp(c);
	if (!c->a || !c->b)
		return fail("create_qp");
	c->pairs++;
	return connect_qp(c, c->a, c->b->qp_num) ||
	       connect_qp(c, c->b, c->a->qp_num);
}

/*
 * The next completion of @qp, whatever its status.  Those of the other
 * QP of the pair wait in c->held (the receive of a SEND can complete
 * before the SEND itself).
 */
static int wait_wc(struct ctx *c, struct ibv_qp *qp, struct ibv_wc *out)
{
	time_t end = time(NULL) + 30;
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < c->nheld; i++) {
		if (c->held[i].qp_num != qp->qp_num)
			continue;
		*out = c->held[i];
		c->held[i] = c->held[--c->nheld];
		return 0;
	}
	while (time(NULL) <= end) {
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0)
			return fail("poll_cq");
		if (n && wc.qp_num == qp->qp_num) {
			*out = wc;
			return 0;
		}
		if (n && c->nheld < HELD)
			c->held[c->nheld++] = wc;
	}
	fprintf(stderr, "mw: no completion of QP %u in 30 s (after %u checks)\n",
		qp->qp_num, c->steps);
	return 1;
}

static int post(struct ctx *c, struct ibv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_wc *wc)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		return fail("post_send");
	return wait_wc(c, qp, wc);
}

/* A's WRITE (or READ) of @len bytes at window offset @off; its status */
static int rdma(struct ctx *c, enum ibv_wr_opcode op, uint32_t rkey,
		uint64_t off, uint32_t len, enum ibv_wc_status *st)
{
	bool rd = op == IBV_WR_RDMA_READ;
	/* a READ lands in the target MR, outside the window */
	struct ibv_sge sge = {
		.addr = rd ? (uintptr_t)c->buf + 3 * WLEN : (uintptr_t)c->sbuf,
		.length = len, .lkey = rd ? c->mr->lkey : c->smr->lkey,
	};
	struct ibv_send_wr wr = { .opcode = op, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_wc wc;

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)c->buf + WOFF + off;
	if (post(c, c->a, &wr, &wc))
		return 1;
	*st = wc.status;
	return 0;
}

/* a type 2 bind through @qp; the completion's status (opcode checked) */
static int bind2k(struct ctx *c, struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mr *mr, uint64_t addr, uint64_t len,
		  unsigned int access, bool same_key, enum ibv_wc_status *st)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = same_key ? mw->rkey : ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = addr, .length = len,
		.mw_access_flags = access,
	};
	if (post(c, qp, &wr, &wc))
		return 1;
	*st = wc.status;
	if (wc.status == IBV_WC_SUCCESS) {
		if (wc.opcode != IBV_WC_BIND_MW)
			return fail("a bind completed with another opcode");
		mw->rkey = wr.bind_mw.rkey;
	}
	return 0;
}

static int bind2(struct ctx *c, struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mr *mr, uint64_t addr, uint64_t len,
		 unsigned int access, enum ibv_wc_status *st)
{
	return bind2k(c, qp, mw, mr, addr, len, access, false, st);
}

static int expect(enum ibv_wc_status got, enum ibv_wc_status want,
		  const char *what)
{
	if (got == want)
		return 0;
	fprintf(stderr, "mw: %s: %s, expected %s\n", what,
		ibv_wc_status_str(got), ibv_wc_status_str(want));
	return 1;
}

#define STEP(c, x)	do { if (x) return 1; (c)->steps++; } while (0)

/* 1-3: a type 2 window through B; through another QP; bound twice */
static int type2_basics(struct ctx *c)
{
	struct ibv_mr *tmp;
	enum ibv_wc_status st;
	struct ibv_mw *mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	uint32_t i;

	if (!mw)
		return fail("alloc_mw type 2");
	STEP(c, new_pair(c));
	STEP(c, bind2(c, c->b, mw, c->mr, (uintptr_t)c->buf + WOFF, WLEN,
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &st) ||
		expect(st, IBV_WC_SUCCESS, "1: bind type 2"));
	for (i = 0; i < WLEN; i++)
		c->sbuf[i] = (unsigned char)(i * 7 + 3);
	STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 0, WLEN, &st) ||
		expect(st, IBV_WC_SUCCESS, "1: WRITE through the window"));
	if (memcmp(c->buf + WOFF, c->sbuf, WLEN))
		return fail("1: the WRITE's bytes are not in the window");
	STEP(c, rdma(c, IBV_WR_RDMA_READ, mw->rkey, 0, WLEN, &st) ||
		expect(st, IBV_WC_SUCCESS, "1: READ through the window"));
	if (memcmp(c->buf + 3 * WLEN, c->sbuf, WLEN))
		return fail("1: the READ returned other bytes");
	if (ibv_dereg_mr(c->mr) != EBUSY)
		return fail("1: an MR with a window bound deregistered");
	STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 1, WLEN, &st) ||
		expect(st, IBV_WC_REM_ACCESS_ERR, "1: WRITE one byte past the window"));

	STEP(c, new_pair(c));	/* 2: B is gone, so is the window's QP */
	STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 0, 8, &st) ||
		expect(st, IBV_WC_REM_ACCESS_ERR, "2: WRITE through another QP"));
	if (ibv_dealloc_mw(mw))
		return fail("dealloc_mw of a bound window");

	/* 2: destroying the QP a window was bound through unbinds it */
	mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	tmp = ibv_reg_mr(c->pd, c->nbuf, MRLEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_MW_BIND);
	if (!mw || !tmp)
		return fail("alloc_mw, reg_mr");
	STEP(c, new_pair(c));	/* the access error took the last one down */
	STEP(c, bind2(c, c->b, mw, tmp, (uintptr_t)c->nbuf, WLEN,
		      IBV_ACCESS_REMOTE_WRITE, &st) ||
		expect(st, IBV_WC_SUCCESS, "2: bind"));
	STEP(c, new_pair(c));
	if (ibv_dereg_mr(tmp))
		return fail("2: the window's QP is gone, yet its MR is busy");
	c->steps++;
	if (ibv_dealloc_mw(mw))
		return fail("dealloc_mw");

	mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	if (!mw)
		return fail("alloc_mw type 2");
	STEP(c, new_pair(c));	/* 3 */
	STEP(c, bind2(c, c->b, mw, c->mr, (uintptr_t)c->buf + WOFF, WLEN,
		      IBV_ACCESS_REMOTE_WRITE, &st) ||
		expect(st, IBV_WC_SUCCESS, "3: bind"));
	STEP(c, bind2(c, c->b, mw, c->mr, (uintptr_t)c->buf + WOFF, WLEN,
		      IBV_ACCESS_REMOTE_WRITE, &st) ||
		expect(st, IBV_WC_MW_BIND_ERR, "3: a second bind of a bound type 2 window"));
	return ibv_dealloc_mw(mw) ? fail("dealloc_mw") : 0;
}

/* 4-5: invalidation, local and remote */
static int type2_invalidate(struct ctx *c)
{
	struct ibv_sge rsge = { .addr = (uintptr_t)c->buf + 3 * WLEN,
				.length = 64, .lkey = c->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = {};
	enum ibv_wc_status st;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	int k;

	for (k = 4; k <= 5; k++) {
		mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
		if (!mw)
			return fail("alloc_mw type 2");
		STEP(c, new_pair(c));
		STEP(c, bind2(c, c->b, mw, c->mr, (uintptr_t)c->buf + WOFF,
			      WLEN, IBV_ACCESS_REMOTE_WRITE, &st) ||
			expect(st, IBV_WC_SUCCESS, "4/5: bind"));
		STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 0, 64, &st) ||
			expect(st, IBV_WC_SUCCESS, "4/5: WRITE before the invalidation"));
		memset(&wr, 0, sizeof(wr));
		wr.invalidate_rkey = mw->rkey;
		if (k == 4) {
			wr.opcode = IBV_WR_LOCAL_INV;
			STEP(c, post(c, c->b, &wr, &wc) ||
				expect(wc.status, IBV_WC_SUCCESS, "4: LOCAL_INV"));
		} else {
			if (ibv_post_recv(c->b, &rwr, &rbad))
				return fail("post_recv");
			wr.opcode = IBV_WR_SEND_WITH_INV;
			STEP(c, post(c, c->a, &wr, &wc) ||
				expect(wc.status, IBV_WC_SUCCESS, "5: SEND_WITH_INV"));
			STEP(c, wait_wc(c, c->b, &wc) ||
				expect(wc.status, IBV_WC_SUCCESS, "5: its receive"));
			if (!(wc.wc_flags & IBV_WC_WITH_INV) ||
			    wc.invalidated_rkey != mw->rkey)
				return fail("5: the receive does not report the key invalidated");
		}
		STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 0, 64, &st) ||
			expect(st, IBV_WC_REM_ACCESS_ERR, "4/5: WRITE after the invalidation"));
		if (ibv_dealloc_mw(mw))
			return fail("dealloc_mw");
	}
	return 0;
}

/* 6: binds that must fail */
static int bad_binds(struct ctx *c)
{
	static const struct {
		const char *what;
		int mr;		/* 0 target, 1 no MW_BIND, 2 no LOCAL_WRITE,
				 * 3 target with the key unchanged */
		uint64_t off, len;
		unsigned int access;
	} t[] = {
		{ "an MR without IBV_ACCESS_MW_BIND", 1, 0, WLEN, IBV_ACCESS_REMOTE_READ },
		{ "a range past the MR's end", 0, MRLEN - 8, 16, IBV_ACCESS_REMOTE_READ },
		{ "a remote write on an MR without local write", 2, 0, WLEN, IBV_ACCESS_REMOTE_WRITE },
		{ "a zero-based window", 0, 0, WLEN, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED },
		{ "the window's own key", 3, 0, WLEN, IBV_ACCESS_REMOTE_READ },
	};
	struct ibv_mr *mrs[4] = { c->mr, c->nobind, c->ro, c->mr };
	unsigned char *bufs[4] = { c->buf, c->nbuf, c->nbuf + MRLEN, c->buf };
	enum ibv_wc_status st;
	struct ibv_mw *mw;
	unsigned int i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
		if (!mw)
			return fail("alloc_mw type 2");
		STEP(c, new_pair(c));
		if (bind2k(c, c->b, mw, mrs[t[i].mr],
			   (uintptr_t)bufs[t[i].mr] + t[i].off, t[i].len,
			   t[i].access, t[i].mr == 3, &st))
			return 1;
		if (st != IBV_WC_MW_BIND_ERR) {
			fprintf(stderr, "mw: 6: a bind on %s: %s\n", t[i].what,
				ibv_wc_status_str(st));
			return 1;
		}
		c->steps++;
		if (ibv_dealloc_mw(mw))
			return fail("dealloc_mw");
	}
	return 0;
}

/* 7-8: a type 1 window; a window's key as a local key */
static int type1(struct ctx *c)
{
	struct ibv_mw *mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind mb = { .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf + WOFF, .length = 8 };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge,
				  .num_sge = 1 };
	enum ibv_wc_status st;
	struct ibv_wc wc;
	uint32_t key0;

	if (!mw)
		return fail("alloc_mw type 1");
	STEP(c, new_pair(c));
	key0 = mw->rkey;
	mb.bind_info = (struct ibv_mw_bind_info){
		.mr = c->mr, .addr = (uintptr_t)c->buf + WOFF, .length = WLEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	if (ibv_bind_mw(c->b, mw, &mb))
		return fail("7: ibv_bind_mw");
	if (mw->rkey == key0)
		return fail("7: ibv_bind_mw kept the key");
	STEP(c, wait_wc(c, c->b, &wc) ||
		expect(wc.status, IBV_WC_SUCCESS, "7: type 1 bind"));
	memset(c->sbuf, 0x5c, 64);
	STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 64, 64, &st) ||
		expect(st, IBV_WC_SUCCESS, "7: WRITE through a type 1 window"));
	if (memcmp(c->buf + WOFF + 64, c->sbuf, 64))
		return fail("7: the WRITE's bytes are not in the window");
	mb.bind_info.length = 0;
	mb.bind_info.mw_access_flags = 0;
	if (ibv_bind_mw(c->b, mw, &mb))
		return fail("7: ibv_bind_mw, length 0");
	STEP(c, wait_wc(c, c->b, &wc) ||
		expect(wc.status, IBV_WC_SUCCESS, "7: unbind"));
	STEP(c, rdma(c, IBV_WR_RDMA_WRITE, mw->rkey, 0, 8, &st) ||
		expect(st, IBV_WC_REM_ACCESS_ERR, "7: WRITE after a zero-length bind"));

	STEP(c, new_pair(c));	/* 8 */
	sge.lkey = mw->rkey;
	STEP(c, post(c, c->a, &wr, &wc) ||
		expect(wc.status, IBV_WC_LOC_PROT_ERR, "8: a window's key as a local key"));
	return ibv_dealloc_mw(mw) ? fail("dealloc_mw") : 0;
}

static int setup(struct ctx *c, const char *dev, int gidx)
{
	const char *err = mrc_loop_open(&c->l, dev, gidx, IBV_MTU_1024);

	if (err)
		return fail(err);
	c->pd = ibv_alloc_pd(c->l.ctx);
	c->cq = ibv_create_cq(c->l.ctx, 64, NULL, NULL, 0);
	c->buf = aligned_alloc(4096, MRLEN);
	c->nbuf = aligned_alloc(4096, 2 * MRLEN);
	c->sbuf = calloc(1, WLEN);
	if (!c->pd || !c->cq || !c->buf || !c->nbuf || !c->sbuf)
		return fail("setup");
	memset(c->buf, 0, MRLEN);
	c->mr = ibv_reg_mr(c->pd, c->buf, MRLEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_MW_BIND);
	c->nobind = ibv_reg_mr(c->pd, c->nbuf, MRLEN, IBV_ACCESS_LOCAL_WRITE);
	c->ro = ibv_reg_mr(c->pd, c->nbuf + MRLEN, MRLEN, IBV_ACCESS_MW_BIND);
	c->smr = ibv_reg_mr(c->pd, c->sbuf, WLEN, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr || !c->nobind || !c->ro || !c->smr)
		return fail("reg_mr");
	return 0;
}

int main(int argc, char **argv)
{
	static struct ctx c;

	if (argc != 3)
		return fail("usage: mrc_mw DEVICE GID_INDEX");
	if (setup(&c, argv[1], atoi(argv[2])) || type2_basics(&c) || type2_invalidate(&c) ||
	    bad_binds(&c) || type1(&c))
		return 1;
	errno = 0;
	if (ibv_alloc_mw(c.pd, (enum ibv_mw_type)3) || errno == EOPNOTSUPP)
		return fail("9: a window of type 3 was not refused (or EOPNOTSUPP)");
	ibv_destroy_qp(c.a);
	ibv_destroy_qp(c.b);
	if (ibv_dereg_mr(c.mr))
		return fail("9: the MR does not deregister once its windows are gone");
	printf("mw: ok (%u checks over %u QP pairs: windows carry WRITEs (type 2 also a READ) byte for byte; past the window, through another QP, after LOCAL_INV, SEND_WITH_INV or a zero-length bind: remote access error; 6 bad binds MW_BIND_ERR, a window unbound with its QP; a window key as lkey: local protection error; MR busy while bound)\n",
	       c.steps, c.pairs);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_ident: create QPs and MRs and print the numbers and keys the device
 * gave them, for tests of identity and resource limits.
 *
 *   mrc_ident -d DEV [-g GIDX] [-q NQP] [-m NMR] [-r NREREG] [-w DEPTH]
 *             [-s SGES] [-i INLINE] [-f] [-H] [-P]
 *
 *   -q NQP     RC QPs to create (default 0), each printed as "qp QPN PSN";
 *              with -g they are connected to themselves (RTS) with send
 *              and receive PSN PSN, else they stay in RESET (PSN 0)
 *   -m NMR     MRs on one buffer, each printed as "mr KEY" (lkey = rkey)
 *   -r NREREG  register and deregister one page NREREG times: "rereg KEY"
 *   -w -s -i   send and receive depth, SGEs and inline bytes of each QP
 *   -f         a failed create ends the series, printed as
 *              "fail qp|mr ERRNO"; without -f it is an error
 *   -H         print "ready" and hold everything until SIGTERM/SIGINT
 *   -P         (with -g) a SEND through a QP whose receive WQE comes from
 *              an SRQ of another PD, its buffer registered in the SRQ's
 *              PD: prints "srq_pd ok" if it arrives intact, else
 *              "srq_pd fail STATUS"
 *
 * Ends with "created pd 1 cq 1 qp N mr M" and exits 0, or says what went
 * wrong and exits 1.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_LEN	4096

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(const char *what)
{
	fprintf(stderr, "mrc_ident: %s: %s\n", what, strerror(errno));
	return 1;
}

/* RESET -> RTS, destination the QP itself, both PSNs @psn */
static int connect_self(struct ibv_qp *qp, int gidx, uint32_t psn)
{
	struct ibv_port_attr port;
	struct ibv_qp_attr a;
	union ibv_gid gid;

	if (ibv_query_port(qp->context, 1, &port) ||
	    ibv_query_gid(qp->context, 1, gidx, &gid))
		return fail("query port/gid");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return fail("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port.active_mtu;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fail("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		return fail("RTS");
	return 0;
}

struct opts {
	const char *dev;
	int gidx, nqp, nmr, nrereg, depth, sges, inl;
	int until_fail, hold, srq_pd;
};

/* wait for one completion */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long spins = 0;
	int r;

	while (!(r = ibv_poll_cq(cq, 1, wc)))
		if (++spins > 200000000L)
			return -1;
	return r < 0 ? -1 : 0;
}

/*
 * The receive WQE of an SRQ names buffers of the SRQ's PD, which need not
 * be the QP's: a SEND must land there.
 */
static int srq_pd_check(struct ibv_context *ctx, struct ibv_pd *qp_pd,
			int gidx)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	char src[64], dst[64] = { 0 };
	struct ibv_recv_wr rwr = { .wr_id = 2, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 1, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_sge rsge, ssge;
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_srq *srq = pd2 ? ibv_create_srq(pd2, &sa) : NULL;
	struct ibv_mr *smr = ibv_reg_mr(qp_pd, src, sizeof(src), 0);
	struct ibv_mr *rmr = pd2 ? ibv_reg_mr(pd2, dst, sizeof(dst),
					      IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int i, st = -1;

	if (!cq || !srq || !smr || !rmr)
		return fail("SRQ setup");
	qp = ibv_create_qp(qp_pd, &ia);
	if (!qp || connect_self(qp, gidx, 0x4242))
		return fail("SRQ QP");
	memset(src, 0x5c, sizeof(src));
	rsge = (struct ibv_sge){ (uintptr_t)dst, sizeof(dst), rmr->lkey };
	ssge = (struct ibv_sge){ (uintptr_t)src, sizeof(src), smr->lkey };
	rwr.sg_list = &rsge;
	swr.sg_list = &ssge;
	if (ibv_post_srq_recv(srq, &rwr, &rbad) ||
	    ibv_post_send(qp, &swr, &sbad))
		return fail("SRQ post");
	/* the receive's status; the send's may be a retry error after it */
	for (i = 0; i < 2; i++) {
		if (poll_one(cq, &wc))
			return fail("SRQ poll");
		if (wc.wr_id == 2)
			st = wc.status;
	}
	if (st == IBV_WC_SUCCESS && !memcmp(src, dst, sizeof(dst)))
		printf("srq_pd ok\n");
	else
		printf("srq_pd fail %d\n", st);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd2);
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ .gidx = -1, .depth = 16, .sges = 1 };
	while ((c = getopt(argc, argv, "d:g:q:m:r:w:s:i:fHP")) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'g': o->gidx = atoi(optarg); break;
		case 'q': o->nqp = atoi(optarg); break;
		case 'm': o->nmr = atoi(optarg); break;
		case 'r': o->nrereg = atoi(optarg); break;
		case 'w': o->depth = atoi(optarg); break;
		case 's': o->sges = atoi(optarg); break;
		case 'i': o->inl = atoi(optarg); break;
		case 'f': o->until_fail = 1; break;
		case 'H': o->hold = 1; break;
		case 'P': o->srq_pd = 1; break;
		default: return -1;
		}
	}
	return o->dev && o->nqp >= 0 && o->nmr >= 0 ? 0 : -1;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

int main(int argc, char **argv)
{
	struct ibv_qp **qps;
	struct ibv_mr **mrs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct opts o;
	int nq = 0, nm = 0, i, rc = 0;
	void *buf;

	if (parse(argc, argv, &o)) {
		fprintf(stderr, "usage: mrc_ident -d DEV [-g GIDX] [-q NQP] [-m NMR] [-r NREREG] [-w DEPTH] [-s SGES] [-i INLINE] [-f] [-H] [-P]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev(o.dev);
	if (!ctx)
		return fail("open device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = calloc(1, BUF_LEN);
	qps = calloc(o.nqp + 1, sizeof(*qps));
	mrs = calloc(o.nmr + 1, sizeof(*mrs));
	if (!pd || !cq || !buf || !qps || !mrs)
		return fail("setup");

	for (i = 0; i < o.nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = {
				.max_send_wr = o.depth, .max_recv_wr = o.depth,
				.max_send_sge = o.sges, .max_recv_sge = o.sges,
				.max_inline_data = o.inl,
			},
		};
		/* distinct, non-zero, 24 bits */
		uint32_t psn = (0x5a0000 + 0x101 * (i + 1)) & 0xffffff;

		qps[nq] = ibv_create_qp(pd, &ia);
		if (!qps[nq]) {
			if (!o.until_fail)
				return fail("create_qp");
			printf("fail qp %d\n", errno);
			break;
		}
		if (o.gidx >= 0 && connect_self(qps[nq], o.gidx, psn))
			return 1;
		printf("qp %u %u\n", qps[nq]->qp_num, o.gidx >= 0 ? psn : 0);
		nq++;
	}
	for (i = 0; i < o.nmr; i++) {
		mrs[nm] = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_WRITE);
		if (!mrs[nm]) {
			if (!o.until_fail)
				return fail("reg_mr");
			printf("fail mr %d\n", errno);
			break;
		}
		if (mrs[nm]->lkey != mrs[nm]->rkey) {
			fprintf(stderr, "mrc_ident: lkey 0x%x != rkey 0x%x\n",
				mrs[nm]->lkey, mrs[nm]->rkey);
			return 1;
		}
		printf("mr %u\n", mrs[nm]->rkey);
		nm++;
	}
	for (i = 0; i < o.nrereg; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_LEN,
					       IBV_ACCESS_LOCAL_WRITE);

		if (!mr)
			return fail("reg_mr (rereg)");
		printf("rereg %u\n", mr->rkey);
		if (ibv_dereg_mr(mr))
			return fail("dereg_mr (rereg)");
	}
	if (o.srq_pd && o.gidx >= 0 && srq_pd_check(ctx, pd, o.gidx))
		return 1;
	printf("created pd 1 cq 1 qp %d mr %d\n", nq, nm);

	if (o.hold) {
		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		printf("ready\n");
		while (!stop)
			sleep(1);	/* a signal ends it early */
	}
	for (i = 0; i < nm; i++)
		if (ibv_dereg_mr(mrs[i]))
			rc = fail("dereg_mr");
	for (i = 0; i < nq; i++)
		if (ibv_destroy_qp(qps[i]))
			rc = fail("destroy_qp");
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		rc = fail("teardown");
	free(qps);
	free(mrs);
	free(buf);
	return rc;
}

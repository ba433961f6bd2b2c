// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_ud: UD datagram checks through libibverbs.
 *
 *   sink:   mrc_ud -d DEV -g GIDX [-k QKEY] [-r RECVS] [-l LEN] [-n COUNT]
 *                  [-t SECS] [-e]
 *   sender: mrc_ud -d DEV -g GIDX -c DEST_IP -q QPN [-k QKEY]
 *                  [-s SIZE[,SIZE...]] [-n COUNT] [-t SECS] [-e]
 *
 * The sink creates a UD QP with Q_Key QKEY (default 0x11111111), posts
 * RECVS receives of LEN bytes (default COUNT and 40 + 4096), prints
 * "MRC_UD_QPN qpn=N" and reports every receive completion until COUNT
 * arrived or SECS passed:
 *
 *   MRC_UD_WC i=I status=S byte_len=B wc_flags=F src_qp=Q imm=X
 *             grh=ok|bad data=ok|bad sgid=GID
 *
 * grh checks the 40 bytes in front of the payload (IPv4: 20 zero bytes and
 * an IPv4 header with a valid checksum, protocol UDP; IPv6: version 6,
 * next header UDP), sgid is what ibv_init_ah_from_wc() makes of them.
 * Datagram i carries imm = i and the bytes (i * 7 + j) & 0xff.  With -e the
 * sink answers each datagram through an AH made from the completion
 * (ibv_create_ah_from_wc), to its source QP, with remote_qkey 0x80000000:
 * the high bit means "the QP's own Q_Key".
 *
 * The sender sends COUNT datagrams with immediate data to QPN at DEST_IP
 * (IPv4 or IPv6, the GID family of GIDX), of SIZE bytes (default 256;
 * with a list, datagram i has the (i mod n)-th size) and, with -e, waits
 * for as many answers and checks them.
 *
 * Both end with "MRC_UD_RESULT ok=N bad=M" and exit 0 when every expected
 * completion arrived intact.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GRH	40

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	unsigned char *buf;
	size_t slot;		/* bytes per slot */
	int nslots;		/* receive slots; as many send slots follow */
	int port;
	int gidx;
	uint32_t qkey;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "mrc_ud: %s\n", what);
	return 1;
}

static unsigned char pattern(uint32_t i, size_t j)
{
	return (unsigned char)(i * 7 + j);
}

static int setup(struct ud *u, const char *dev, int nslots, size_t slot)
{
	struct ibv_qp_init_attr ia = {};
	struct ibv_qp_attr a = {};
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			u->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!u->ctx)
		return die("cannot open the device");
	u->pd = ibv_alloc_pd(u->ctx);
	u->cq = ibv_create_cq(u->ctx, 2 * nslots + 2, NULL, NULL, 0);
	u->slot = slot;
	u->nslots = nslots;
	u->buf = calloc(2 * nslots, slot);
	if (!u->pd || !u->cq || !u->buf)
		return die("pd/cq/buffer");
	u->mr = ibv_reg_mr(u->pd, u->buf, 2 * nslots * slot,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		return die("reg_mr");
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = u->cq;
	ia.recv_cq = u->cq;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = nslots;
	ia.cap.max_recv_wr = nslots;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	u->qp = ibv_create_qp(u->pd, &ia);
	if (!u->qp)
		return die("create_qp (UD)");
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = u->port;
	a.qkey = u->qkey;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return die("modify_qp INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE))
		return die("modify_qp RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return die("modify_qp RTS");
	return 0;
}

static int post_recv(struct ud *u, int i, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(u->buf + (size_t)i * u->slot),
		.length = len,
		.lkey = u->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(u->qp, &wr, &bad);
}

/* send slot @slot follows the receive slots */
static int post_send(struct ud *u, struct ibv_ah *ah, uint32_t qpn,
		     uint32_t qkey, int slot, uint32_t idx, size_t size)
{
	unsigned char *p = u->buf + (size_t)(u->nslots + slot) * u->slot;
	struct ibv_sge sge = {
		.addr = (uintptr_t)p,
		.length = size,
		.lkey = u->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1000000 + idx,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
		.imm_data = htobe32(idx),
	};
	struct ibv_send_wr *bad;
	size_t j;

	for (j = 0; j < size; j++)
		p[j] = pattern(idx, j);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(u->qp, &wr, &bad);
}

/* the 40 bytes in front of the payload, as ib_core/libibverbs read them */
static int grh_ok(const unsigned char *g)
{
	unsigned int sum = 0, i;

	if ((g[0] >> 4) == 6)
		return g[6] == IPPROTO_UDP;
	for (i = 0; i < 20; i++)
		if (g[i])
			return 0;
	if (g[20] != 0x45 || g[29] != IPPROTO_UDP)
		return 0;
	for (i = 20; i < 40; i += 2)
		sum += g[i] << 8 | g[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static const char *gid_str(const union ibv_gid *gid, char *s, size_t n)
{
	return inet_ntop(AF_INET6, gid->raw, s, n) ? s : "?";
}

/* wait for one completion (or the deadline) */
static int poll_one(struct ud *u, struct ibv_wc *wc, double end)
{
	int r;

	while ((r = ibv_poll_cq(u->cq, 1, wc)) == 0)
		if (now() > end)
			return 0;
	return r;
}

static int run_sink(struct ud *u, int recvs, size_t len, int count,
		    double secs, int echo)
{
	double end = now() + secs;
	int i, ok = 0, bad = 0, got = 0, sends = 0;

	for (i = 0; i < recvs; i++)
		if (post_recv(u, i, len))
			return die("post_recv");
	printf("MRC_UD_QPN qpn=%u\n", u->qp->qp_num);
	fflush(stdout);

	/* COUNT 0: listen until the deadline, expecting nothing */
	while (got < count || sends || !count) {
		struct ibv_wc wc;
		unsigned char *p;
		char gs[INET6_ADDRSTRLEN];
		struct ibv_ah_attr aa;
		int data = 1, grh;
		uint32_t idx;
		size_t j;

		if (poll_one(u, &wc, end) <= 0)
			break;
		if (wc.opcode == IBV_WC_SEND) {
			sends--;
			if (wc.status != IBV_WC_SUCCESS)
				bad++;
			continue;
		}
		got++;
		p = u->buf + wc.wr_id * u->slot;
		idx = be32toh(wc.imm_data);
		grh = wc.status == IBV_WC_SUCCESS && grh_ok(p);
		if (wc.status == IBV_WC_SUCCESS)
			for (j = GRH; j < wc.byte_len; j++)
				if (p[j] != pattern(idx, j - GRH))
					data = 0;
		strcpy(gs, "-");
		if (wc.status == IBV_WC_SUCCESS &&
		    !ibv_init_ah_from_wc(u->ctx, u->port, &wc, (void *)p, &aa))
			gid_str(&aa.grh.dgid, gs, sizeof(gs));
		printf("MRC_UD_WC i=%u status=%s byte_len=%u wc_flags=0x%x src_qp=%u imm=0x%x grh=%s data=%s sgid=%s\n",
		       idx, ibv_wc_status_str(wc.status), wc.byte_len,
		       wc.wc_flags, wc.src_qp, idx, grh ? "ok" : "bad",
		       data ? "ok" : "bad", gs);
		if (wc.status == IBV_WC_SUCCESS && grh && data &&
		    (wc.wc_flags & IBV_WC_GRH) && (wc.wc_flags & IBV_WC_WITH_IMM))
			ok++;
		else
			bad++;
		if (echo && wc.status == IBV_WC_SUCCESS) {
			struct ibv_ah *ah = ibv_create_ah_from_wc(u->pd, &wc,
						(void *)p, u->port);

			/* the high bit of remote_qkey: use our own Q_Key */
			if (!ah || post_send(u, ah, wc.src_qp, 0x80000000,
					     wc.wr_id, idx, wc.byte_len - GRH))
				bad++;
			else
				sends++;
			/* the datagram is copied out when the send is posted */
			if (ah)
				ibv_destroy_ah(ah);
		}
		/* the receive slot is free again (its answer has its own) */
		if (got < count && post_recv(u, wc.wr_id, len))
			bad++;
	}
	if (got < count)
		bad += count - got;
	printf("MRC_UD_RESULT ok=%d bad=%d\n", ok, bad);
	return ok == count && !bad ? 0 : 1;
}

#define MAX_SIZES	8
static size_t sizes[MAX_SIZES] = { 256 };
static int nsizes = 1;

static size_t size_of(uint32_t i)
{
	return sizes[i % nsizes];
}

/* an answer of the sink: everything as sent */
static int answer_ok(struct ud *u, const struct ibv_wc *wc)
{
	const unsigned char *p = u->buf + wc->wr_id * u->slot;
	uint32_t idx = be32toh(wc->imm_data);
	size_t size = size_of(idx), j;

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len != GRH + size ||
	    !(wc->wc_flags & IBV_WC_WITH_IMM) || !grh_ok(p))
		return 0;
	for (j = 0; j < size; j++)
		if (p[GRH + j] != pattern(idx, j))
			return 0;
	return 1;
}

static int run_sender(struct ud *u, const char *dest, uint32_t qpn,
		      int count, double secs, int echo)
{
	struct ibv_ah_attr aa = {};
	double end = now() + secs;
	struct in6_addr a6;
	struct in_addr a4;
	struct ibv_ah *ah;
	int i, ok = 0, bad = 0, answers = 0, sent = 0;

	memset(&aa.grh.dgid, 0, sizeof(aa.grh.dgid));
	if (inet_pton(AF_INET, dest, &a4) == 1) {
		aa.grh.dgid.raw[10] = 0xff;
		aa.grh.dgid.raw[11] = 0xff;
		memcpy(&aa.grh.dgid.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, dest, &a6) == 1) {
		memcpy(aa.grh.dgid.raw, &a6, 16);
	} else {
		return die("bad destination address");
	}
	aa.is_global = 1;
	aa.grh.sgid_index = u->gidx;
	aa.grh.hop_limit = 64;
	aa.port_num = u->port;
	ah = ibv_create_ah(u->pd, &aa);
	if (!ah)
		return die("create_ah");

	/* a receive slot for every answer, a send slot for every datagram */
	if (echo)
		for (i = 0; i < count; i++)
			if (post_recv(u, i, u->slot))
				return die("post_recv");
	for (i = 0; i < count; i++) {
		struct ibv_wc wc;

		if (post_send(u, ah, qpn, u->qkey, i, i, size_of(i)))
			return die("post_send");
		/* one at a time, so the sink keeps up without RNR */
		while (poll_one(u, &wc, end) > 0) {
			if (wc.opcode == IBV_WC_SEND) {
				if (wc.status == IBV_WC_SUCCESS)
					sent++;
				else
					bad++;
				break;
			}
			answers++;
			if (answer_ok(u, &wc))
				ok++;
			else
				bad++;
		}
	}
	while (echo && answers < count) {
		struct ibv_wc wc;

		if (poll_one(u, &wc, end) <= 0)
			break;
		if (wc.opcode == IBV_WC_SEND)
			continue;
		answers++;
		if (answer_ok(u, &wc))
			ok++;
		else
			bad++;
	}
	ibv_destroy_ah(ah);
	printf("MRC_UD_RESULT ok=%d bad=%d sent=%d answers=%d\n",
	       echo ? ok : sent, bad, sent, answers);
	if (sent != count || bad)
		return 1;
	return echo && ok != count ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct ud u = { .port = 1, .qkey = 0x11111111 };
	const char *dev = NULL, *dest = NULL;
	int c, recvs = -1, count = 10, echo = 0;
	size_t len = GRH + 4096;
	char *tok;
	uint32_t qpn = 0;
	double secs = 20;
	int slots;

	while ((c = getopt(argc, argv, "d:g:k:r:l:n:t:ec:q:s:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': u.gidx = atoi(optarg); break;
		case 'k': u.qkey = strtoul(optarg, NULL, 0); break;
		case 'r': recvs = atoi(optarg); break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'n': count = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'e': echo = 1; break;
		case 'c': dest = optarg; break;
		case 'q': qpn = strtoul(optarg, NULL, 0); break;
		case 's':
			nsizes = 0;
			for (tok = strtok(optarg, ","); tok && nsizes < MAX_SIZES;
			     tok = strtok(NULL, ","))
				sizes[nsizes++] = strtoul(tok, NULL, 0);
			if (!nsizes)
				return die("-s needs a size");
			break;
		default: return die("bad option (see the comment at the top)");
		}
	}
	if (!dev)
		return die("-d DEV is required");
	if (recvs < 0)
		recvs = count;
	slots = recvs > count ? recvs : count;
	if (!slots)
		slots = 1;
	for (c = 0; c < nsizes; c++)
		if (sizes[c] > 4096)
			return die("sizes above 4096");
	if (len > GRH + 4096)
		return die("receive length above 4096 + 40");
	if (setup(&u, dev, slots, GRH + 4096))
		return 1;
	if (dest)
		return run_sender(&u, dest, qpn, count, secs, echo);
	return run_sink(&u, recvs, len, count, secs, echo);
}

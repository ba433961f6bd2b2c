// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mrc_waw: overlapping RDMA WRITEs on one RC QP must leave the data of the
 * last one (write-after-write order), however the packets were reordered,
 * lost and resent on the way.
 *
 *   server: mrc_waw -s [-p PORT] [-r ROUNDS] [-w WRITES] [-l LEN] ADDR
 *   client: mrc_waw [-p PORT] [-r ROUNDS] [-w WRITES] [-l LEN] ADDR
 *
 * Both sides take the same -r, -w and -l.  The connection comes from the
 * RDMA connection manager.  The server registers one LEN-byte buffer and
 * sends its address and rkey.  In each round the client posts WRITES RDMA WRITEs of LEN bytes, all to that
 * buffer and each with its own byte pattern, then a SEND with the round
 * number.  When the SEND arrives every WRITE before it is complete, so the
 * server checks each byte of the buffer against the last WRITE's pattern
 * and answers with a SEND: 0, or the first bad offset plus one and the
 * WRITE of the round whose pattern the byte has.  The client waits for the
 * answer before the next round.  At the end the server disconnects once
 * its last answer is acknowledged, and the client waits for that.  Both
 * print "waw: ok, ..." and exit 0, or say what went wrong and exit 1.
 */
#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

struct waw_msg {
	uint64_t addr;		/* server's hello: buffer address */
	uint32_t rkey;		/* ... and rkey */
	uint32_t round;		/* client: round done; server: round checked */
	uint64_t bad;		/* server's answer: first bad offset + 1, or 0 */
	int32_t from;		/* WRITE of the round whose byte is there, -1 */
	uint32_t pad;
};

static uint32_t rounds = 200, writes = 4, len = 65536;
static const char *port = "7471";

static uint8_t pat(uint32_t k, uint64_t i)
{
	return (uint8_t)(k * 151u + i * 7u + (i >> 8) * 13u + 1u);
}

static int die(const char *what)
{
	perror(what);
	return 1;
}

/* one completion of the send (or receive) queue, which must be a success */
static int wait_comp(struct rdma_cm_id *id, int recv)
{
	struct ibv_wc wc;
	int r;

	r = recv ? rdma_get_recv_comp(id, &wc) : rdma_get_send_comp(id, &wc);
	if (r <= 0)
		return die(recv ? "rdma_get_recv_comp" : "rdma_get_send_comp");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "waw: %s completion %s\n",
			recv ? "receive" : "send", ibv_wc_status_str(wc.status));
		return 1;
	}
	return 0;
}

/*
 * The client leaves only when the server disconnects, which it does once
 * its last answer is acknowledged: leaving earlier could strand that
 * answer's ACK (lost on a lossy link) and fail the server's SEND.
 */
static int wait_disconnect(struct rdma_cm_id *id)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct pollfd pfd;
	int type;

	if (!ch || rdma_migrate_id(id, ch))
		return die("rdma_migrate_id");
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	do {
		if (poll(&pfd, 1, 60000) <= 0) {
			fprintf(stderr, "waw: no disconnect from the server in 60 s\n");
			return 1;
		}
		if (rdma_get_cm_event(ch, &ev))
			return die("rdma_get_cm_event");
		type = ev->event;
		rdma_ack_cm_event(ev);
	} while (type != RDMA_CM_EVENT_DISCONNECTED);
	return 0;
}

/* the message buffers of one side, registered; one receive posted */
struct waw_msgs {
	struct waw_msg *in, *out;
	struct ibv_mr *inmr, *outmr;
};

static int msgs_setup(struct rdma_cm_id *id, struct waw_msgs *m)
{
	m->in = calloc(1, sizeof(*m->in));
	m->out = calloc(1, sizeof(*m->out));
	if (!m->in || !m->out)
		return die("malloc");
	m->inmr = rdma_reg_msgs(id, m->in, sizeof(*m->in));
	m->outmr = rdma_reg_msgs(id, m->out, sizeof(*m->out));
	if (!m->inmr || !m->outmr)
		return die("rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, m->in, sizeof(*m->in), m->inmr))
		return die("rdma_post_recv");
	return 0;
}

static int server(struct rdma_addrinfo *res, struct ibv_qp_init_attr *attr)
{
	struct rdma_cm_id *lid, *id;
	struct waw_msgs m;
	struct waw_msg *in, *out;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t r;
	uint64_t i;
	int j;

	if (rdma_create_ep(&lid, res, NULL, attr))
		return die("rdma_create_ep");
	if (rdma_listen(lid, 1))
		return die("rdma_listen");
	if (rdma_get_request(lid, &id))
		return die("rdma_get_request");
	buf = aligned_alloc(4096, len);
	if (!buf)
		return die("malloc");
	memset(buf, 0, len);
	mr = rdma_reg_write(id, buf, len);
	if (!mr)
		return die("rdma_reg_write");
	if (msgs_setup(id, &m))
		return 1;
	in = m.in;
	out = m.out;
	if (rdma_accept(id, NULL))
		return die("rdma_accept");
	out->addr = htobe64((uintptr_t)buf);
	out->rkey = htobe32(mr->rkey);
	if (rdma_post_send(id, NULL, out, sizeof(*out), m.outmr, IBV_SEND_SIGNALED))
		return die("rdma_post_send");
	if (wait_comp(id, 0))
		return 1;
	for (r = 0; r < rounds; r++) {
		uint32_t last;

		if (wait_comp(id, 1))
			return 1;
		if (be32toh(in->round) != r) {
			fprintf(stderr, "waw: round %u announced as %u\n", r,
				be32toh(in->round));
			return 1;
		}
		if (rdma_post_recv(id, NULL, in, sizeof(*in), m.inmr))
			return die("rdma_post_recv");
		last = r * writes + writes - 1;
		out->round = htobe32(r);
		out->bad = 0;
		out->from = htobe32(-1);
		for (i = 0; i < len; i++) {
			if (buf[i] == pat(last, i))
				continue;
			out->bad = htobe64(i + 1);
			for (j = writes - 1; j >= 0; j--)
				if (buf[i] == pat(r * writes + j, i))
					break;
			out->from = htobe32(j);
			fprintf(stderr,
				"waw: round %u: byte %" PRIu64 " is 0x%02x, want 0x%02x (WRITE %u of the round); it matches WRITE %d\n",
				r, i, buf[i], pat(last, i), writes - 1, j);
			break;
		}
		if (rdma_post_send(id, NULL, out, sizeof(*out), m.outmr,
				   IBV_SEND_SIGNALED))
			return die("rdma_post_send");
		if (wait_comp(id, 0))
			return 1;
		if (out->bad)
			return 1;
	}
	printf("waw: ok, %u rounds of %u overlapping %u-byte WRITEs checked\n",
	       rounds, writes, len);
	rdma_disconnect(id);
	return 0;
}

static int client(struct rdma_addrinfo *res, struct ibv_qp_init_attr *attr)
{
	struct waw_msgs m;
	struct waw_msg *in, *out;
	struct ibv_mr *src_mr;
	struct rdma_cm_id *id;
	uint64_t raddr, i;
	uint32_t rkey, r, j;
	uint8_t *src;

	if (rdma_create_ep(&id, res, NULL, attr))
		return die("rdma_create_ep");
	src = aligned_alloc(4096, (size_t)writes * len);
	if (!src)
		return die("malloc");
	src_mr = ibv_reg_mr(id->pd, src, (size_t)writes * len, 0);
	if (!src_mr)
		return die("ibv_reg_mr");
	if (msgs_setup(id, &m))
		return 1;
	in = m.in;
	out = m.out;
	if (rdma_connect(id, NULL))
		return die("rdma_connect");
	if (wait_comp(id, 1))
		return 1;
	raddr = be64toh(in->addr);
	rkey = be32toh(in->rkey);
	for (r = 0; r < rounds; r++) {
		for (j = 0; j < writes; j++)
			for (i = 0; i < len; i++)
				src[(size_t)j * len + i] = pat(r * writes + j, i);
		if (rdma_post_recv(id, NULL, in, sizeof(*in), m.inmr))
			return die("rdma_post_recv");
		for (j = 0; j < writes; j++)
			if (rdma_post_write(id, NULL, src + (size_t)j * len, len,
					    src_mr, IBV_SEND_SIGNALED, raddr,
					    rkey))
				return die("rdma_post_write");
		out->round = htobe32(r);
		if (rdma_post_send(id, NULL, out, sizeof(*out), m.outmr,
				   IBV_SEND_SIGNALED))
			return die("rdma_post_send");
		for (j = 0; j <= writes; j++)
			if (wait_comp(id, 0))
				return 1;
		if (wait_comp(id, 1))
			return 1;
		if (be32toh(in->round) != r) {
			fprintf(stderr, "waw: answer for round %u, want %u\n",
				be32toh(in->round), r);
			return 1;
		}
		if (in->bad) {
			fprintf(stderr,
				"waw: round %u: the server found byte %" PRIu64 " from WRITE %d of %u, not the last\n",
				r, be64toh(in->bad) - 1, (int)be32toh(in->from),
				writes);
			return 1;
		}
	}
	if (wait_disconnect(id))
		return 1;
	printf("waw: ok, %u rounds of %u overlapping %u-byte WRITEs checked\n",
	       rounds, writes, len);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int c, srv = 0;

	while ((c = getopt(argc, argv, "sp:r:w:l:")) != -1) {
		switch (c) {
		case 's': srv = 1; hints.ai_flags = RAI_PASSIVE; break;
		case 'p': port = optarg; break;
		case 'r': rounds = strtoul(optarg, NULL, 0); break;
		case 'w': writes = strtoul(optarg, NULL, 0); break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || !writes || writes > 32 || !len)
		goto usage;
	if (rdma_getaddrinfo(argv[optind], port, &hints, &res))
		return die("rdma_getaddrinfo");
	return srv ? server(res, &attr) : client(res, &attr);
usage:
	fprintf(stderr,
		"usage: mrc_waw -s [-p PORT] ADDR\n"
		"       mrc_waw [-p PORT] [-r ROUNDS] [-w WRITES<=32] [-l LEN] ADDR\n");
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the verbs test tools whose QPs talk to each other on one device,
 * through its own GID, share (mrc_srqgone, mrc_srqresize, mrc_mw): opening
 * the device by name with its GID and path MTU, and moving an RC QP to
 * RTS towards a peer QP of the same device.  Failures are returned as the
 * name of the step; each tool reports them in its own words.
 */
#ifndef MRC_LOOP_H
#define MRC_LOOP_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>

struct mrc_loop {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gidx;
	enum ibv_mtu mtu;
};

/* open @dev, read port 1's GID @gidx and MTU (at most @max_mtu, 0: any) */
static inline const char *mrc_loop_open(struct mrc_loop *l, const char *dev,
					int gidx, enum ibv_mtu max_mtu)
{
	struct ibv_device **list;
	struct ibv_port_attr port;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !l->ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			l->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!l->ctx)
		return "no such device";
	l->gidx = gidx;
	if (ibv_query_port(l->ctx, 1, &port) ||
	    ibv_query_gid(l->ctx, 1, gidx, &l->gid))
		return "query port/gid";
	l->mtu = port.active_mtu;
	if (max_mtu && l->mtu > max_mtu)
		l->mtu = max_mtu;
	return NULL;
}

/* an RC QP of @ia in INIT on port 1, granting @access (IBV_ACCESS_*) */
static inline struct ibv_qp *mrc_loop_qp(struct ibv_pd *pd,
					 struct ibv_qp_init_attr *ia,
					 unsigned int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = access,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, ia);

	if (qp && ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/*
 * @qp (in INIT) to RTS towards QP @peer of the same device, both PSNs
 * @psn; one READ or atomic each way; @rnr_retry 0 fails a SEND that
 * finds no receive.
 */
static inline const char *mrc_loop_rts(const struct mrc_loop *l,
				       struct ibv_qp *qp, uint32_t peer,
				       uint32_t psn, int rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = l->mtu,
		.dest_qp_num = peer, .rq_psn = psn, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = l->gid, .sgid_index = l->gidx,
				 .hop_limit = 64 },
		},
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return "RTR";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return "RTS";
	return NULL;
}

#endif /* MRC_LOOP_H */

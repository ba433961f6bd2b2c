// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metaroce: port counters, shown by `rdma statistic show link DEV/1`.
 */
#include "mrc.h"

static const struct rdma_stat_desc mrc_stat_desc[MRC_ST_NR] = {
	[MRC_ST_TX_PKTS].name = "tx_packets",
	[MRC_ST_TX_BYTES].name = "tx_bytes",
	[MRC_ST_RX_PKTS].name = "rx_packets",
	[MRC_ST_RX_BYTES].name = "rx_bytes",
	[MRC_ST_TX_ACKS].name = "tx_acks",
	[MRC_ST_RX_ACKS].name = "rx_acks",
	[MRC_ST_STALE_ACKS].name = "stale_acks",
	[MRC_ST_ACK_IMPLIED].name = "acks_implied",
	[MRC_ST_RESP_RTT].name = "response_rtt_samples",
	[MRC_ST_RETX_PKTS].name = "retransmitted_packets",
	[MRC_ST_RETX_RACK].name = "rack_losses",
	[MRC_ST_TLP].name = "tail_loss_probes",
	[MRC_ST_RTO].name = "rto_events",
	[MRC_ST_SACK_HOLES].name = "sack_holes",
	[MRC_ST_OOO_PKTS].name = "out_of_order_packets",
	[MRC_ST_DUP_PKTS].name = "duplicate_packets",
	[MRC_ST_RNR_NAK_TX].name = "rnr_naks_sent",
	[MRC_ST_RNR_NAK_RX].name = "rnr_naks_received",
	[MRC_ST_NAK_TX].name = "naks_sent",
	[MRC_ST_NAK_RX].name = "naks_received",
	[MRC_ST_RETRY_EXC].name = "retry_exceeded",
	[MRC_ST_CC_CUTS].name = "cc_window_cuts",
	[MRC_ST_SPURIOUS_RETX].name = "spurious_retransmits",
	[MRC_ST_SPURIOUS_RTO].name = "spurious_rtos",
	[MRC_ST_SPURIOUS_TMO].name = "spurious_timer_retx",
	[MRC_ST_REO_WND].name = "rack_reo_wnd_us",
	[MRC_ST_TX_DROP].name = "tx_dropped",
	[MRC_ST_RTT_LAST].name = "rtt_last_us",
	[MRC_ST_RTT_MIN].name = "rtt_min_us",
	[MRC_ST_RTT_SRTT].name = "rtt_smoothed_us",
	[MRC_ST_PATH_SWITCHES].name = "path_switches",
	[MRC_ST_PATH_RETIRED].name = "entropies_retired",
	[MRC_ST_PATH_DELAY_SKIPS].name = "path_delay_skips",
	[MRC_ST_PATH_REBALANCED].name = "entropies_rebalanced",
	[MRC_ST_PATH_UNCHARGED].name = "path_losses_undone",
	[MRC_ST_ECN_RX].name = "ecn_marks_received",
	[MRC_ST_ECN_ECHO].name = "ecn_echoes_received",
	[MRC_ST_CC_ECN_CUTS].name = "window_cuts_ecn",
	[MRC_ST_CC_UNDOS].name = "window_cut_undos",
	[MRC_ST_CREDIT_GRANTS].name = "credits_granted",
	[MRC_ST_CREDIT_WAITS].name = "credit_waits",
	[MRC_ST_PACE_WAITS].name = "paced_waits",
	[MRC_ST_SMALL_GRANT_SEGS].name = "small_grant_segments",
	[MRC_ST_CREDIT_POOL].name = "credit_pool",
	[MRC_ST_CREDIT_CUTS].name = "credit_pool_cuts",
	[MRC_ST_CREDIT_CE_CUTS].name = "credit_pool_ce_cuts",
	[MRC_ST_CREDIT_HOLDS].name = "credit_ack_holds",
	[MRC_ST_CREDIT_HOLD_TIMEOUTS].name = "credit_hold_timeouts",
	[MRC_ST_CREDIT_GAP].name = "credit_arrival_gap_us",
	[MRC_ST_CREDIT_FULL].name = "credit_full_packets",
	[MRC_ST_CREDIT_CEIL].name = "credit_pool_ceiling",
	[MRC_ST_CREDIT_ACTIVE].name = "credit_active_flows",
	[MRC_ST_ORDERED_DISCARDS].name = "ordered_discards",
	[MRC_ST_WRITE_OVERLAP_CUTS].name = "write_overlap_cuts",
	[MRC_ST_TX_ZCOPY].name = "tx_zcopy_packets",
	[MRC_ST_PATH_SLOT0 + 0].name = "tx_path_slot0",
	[MRC_ST_PATH_SLOT0 + 1].name = "tx_path_slot1",
	[MRC_ST_PATH_SLOT0 + 2].name = "tx_path_slot2",
	[MRC_ST_PATH_SLOT0 + 3].name = "tx_path_slot3",
	[MRC_ST_PATH_SLOT0 + 4].name = "tx_path_slot4",
	[MRC_ST_PATH_SLOT0 + 5].name = "tx_path_slot5",
	[MRC_ST_PATH_SLOT0 + 6].name = "tx_path_slot6",
	[MRC_ST_PATH_SLOT0 + 7].name = "tx_path_slot7",
	[MRC_ST_DROP_BASE + MRC_DROP_TRUNCATED - 1].name = "drop_truncated",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_VERSION - 1].name = "drop_bad_version",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_OPCODE - 1].name = "drop_bad_opcode",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_HDR_LEN - 1].name = "drop_bad_hdr_len",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_PAY_LEN - 1].name = "drop_bad_pay_len",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_FIELD - 1].name = "drop_bad_field",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_PMTU - 1].name = "drop_bad_pmtu",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_LENGTH - 1].name = "drop_bad_length",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_SACK - 1].name = "drop_bad_sack",
	[MRC_ST_DROP_BASE + MRC_DROP_NO_QP - 1].name = "drop_no_qp",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_SRC - 1].name = "drop_bad_source",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_STATE - 1].name = "drop_bad_state",
	[MRC_ST_DROP_BASE + MRC_DROP_OUT_OF_WINDOW - 1].name = "drop_out_of_window",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_ACK - 1].name = "drop_bad_ack",
	[MRC_ST_DROP_BASE + MRC_DROP_NO_RESOURCE - 1].name = "drop_no_resource",
	[MRC_ST_DROP_BASE + MRC_DROP_BAD_DUP - 1].name = "drop_bad_duplicate",
	[MRC_ST_DROP_BASE + MRC_DROP_STALE_READ - 1].name = "drop_stale_read",
};

struct rdma_hw_stats *mrc_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port)
{
	return rdma_alloc_hw_stats_struct(mrc_stat_desc, MRC_ST_NR,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int mrc_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index)
{
	struct mrc_dev *mdev = to_mdev(ibdev);
	int i, cpu;

	for (i = 0; i < MRC_ST_NR; i++)
		stats->value[i] = atomic64_read(&mdev->gauges[i]);
	for_each_possible_cpu(cpu) {
		const struct mrc_pcpu_stats *c = per_cpu_ptr(mdev->pstats, cpu);

		for (i = 0; i < MRC_ST_NR; i++)
			stats->value[i] += READ_ONCE(c->v[i]);
	}
	return MRC_ST_NR;
}

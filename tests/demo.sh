#!/bin/bash
# make demo: two "hosts" (network namespaces) behind a switch, a metaroce
# device in each, RDMA across a link that loses 1 % of the packets.
# Runs inside the test-bed guest (scripts/vm-run tests/demo.sh).
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/lib/guest.sh"
trap topo_cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "Two hosts in their own network namespaces, joined by a switch (MTU 9000)"
topo_two_hosts --mtu 9000 || exit 1
topo_mgmt || exit 1
echo "hostA eth0 $TOPO_A_IP  <->  switch  <->  hostB eth0 $TOPO_B_IP"

say "Create a metaroce device on each host's eth0 (the module loads by itself)"
run ip netns exec "$TOPO_A" rdma link add mrcA type metaroce netdev "$TOPO_DEV" || exit 1
run ip netns exec "$TOPO_B" rdma link add mrcB type metaroce netdev "$TOPO_DEV" || exit 1
run ibv_devices
ibv_devinfo -d mrcA | sed -n '1,30p'
gidA=$(rxe_gid_index mrcA "$TOPO_A_IP") gidB=$(rxe_gid_index mrcB "$TOPO_B_IP")
echo "RoCE v2 GIDs: mrcA index $gidA, mrcB index $gidB"

say "Make the switch drop 1 % of the packets in both directions"
link_shape "$TOPO_SW" "$TOPO_PORT_A" loss 1%
link_shape "$TOPO_SW" "$TOPO_PORT_B" loss 1%
tc -n "$TOPO_SW" qdisc show | grep netem

say "ibv_rc_pingpong: 500 round trips of 64 KiB, every byte checked (-c)"
if srv_cli --timeout 300 --log /tmp/demo_pp \
	ip netns exec "$TOPO_B" ibv_rc_pingpong -d mrcB -g "$gidB" -s 65536 -n 500 -c -- \
	ip netns exec "$TOPO_A" ibv_rc_pingpong -d mrcA -g "$gidA" -s 65536 -n 500 -c "$TOPO_B_IP"; then
	cat /tmp/demo_pp.cli
else
	cat /tmp/demo_pp.srv /tmp/demo_pp.cli
	echo "demo: ibv_rc_pingpong failed"
	exit 1
fi

say "ib_write_bw for 10 s across the lossy link (control traffic on a separate link)"
if srv_cli --timeout 120 --log /tmp/demo_bw \
	ip netns exec "$TOPO_B" ib_write_bw -d mrcB -x "$gidB" -F -s 65536 -D 10 -- \
	ip netns exec "$TOPO_A" ib_write_bw -d mrcA -x "$gidA" -F -s 65536 -D 10 "$MGMT_B_IP"; then
	sed -n '/#bytes/,$p' /tmp/demo_bw.cli
else
	cat /tmp/demo_bw.srv /tmp/demo_bw.cli
	echo "demo: ib_write_bw failed"
	exit 1
fi

say "What the switch dropped, and what metaroce resent"
tc -s -n "$TOPO_SW" qdisc show dev "$TOPO_PORT_B" | sed -n '1,3p'
for d in mrcA mrcB; do
	rdma statistic show link "$d/1" | awk -v d="$d" '{
		for (i = 3; i < NF; i += 2)
			if ($i ~ /^(tx_packets|retransmitted_packets|sack_holes|out_of_order_packets|duplicate_packets|rto_events|rtt_smoothed_us)$/)
				printf "%s  %-24s %s\n", d, $i, $(i + 1)
	}'
done
echo
echo "Lost packets are resent one by one (selective retransmission, no go-back-N)."
echo "retransmitted_packets also counts resends that reordering made look necessary;"
echo "the peer's duplicate_packets counts those that were not (a known weakness in"
echo "this emulated test bed). out_of_order_packets counts packets placed before an"
echo "earlier one arrived."

#!/bin/bash
# Test bed self-check (guest): namespaces + switch, shaping, management
# link, and the rxe baseline between two "hosts" across the switch.
# No -e: a failed check is reported, not fatal.
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
trap topo_cleanup EXIT

ping_ok() { in_host "$TOPO_A" ping -c1 -W2 "$@" >/dev/null 2>&1; }

# --- two hosts behind a bridge -------------------------------------------------
if t_check "two hosts behind a switch (MTU 9000)" topo_two_hosts --mtu 9000; then
	t_check "IPv6 across the switch" in_host "$TOPO_A" ping -c1 -W2 "$TOPO_B_IP6"
	t_check "9000-byte frames cross unfragmented" in_host "$TOPO_A" ping -c1 -W2 -M "do" -s 8972 "$TOPO_B_IP"

	link_shape "$TOPO_SW" "$TOPO_PORT_B" loss 100%
	if ping_ok "$TOPO_B_IP"; then t_fail "netem loss 100% blocks the link"; else t_ok "netem loss 100% blocks the link"; fi
	link_clear "$TOPO_SW" "$TOPO_PORT_B"
	t_check "link works again after link_clear" ping_ok "$TOPO_B_IP"

	link_shape "$TOPO_SW" "$TOPO_PORT_B" delay 100ms rate 100mbit
	out=$(in_host "$TOPO_A" ping -c1 -W3 "$TOPO_B_IP" 2>&1)
	if [[ $out =~ time=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 100 ]; then
		t_ok "netem delay 100ms shows in the RTT (${BASH_REMATCH[1]} ms)"
	else
		t_fail "netem delay 100ms shows in the RTT" "$out"
	fi

	# outage restores the previous shaping afterwards
	link_outage "$TOPO_SW" "$TOPO_PORT_B" 1500
	if ping_ok "$TOPO_B_IP"; then t_fail "link_outage drops traffic"; else t_ok "link_outage drops traffic"; fi
	wait "$LINK_OUTAGE_PID"
	qd=$(tc -n "$TOPO_SW" qdisc show dev "$TOPO_PORT_B")
	if [[ $qd == *"delay 100ms"* && $qd != *loss* ]]; then
		t_ok "link_outage restores the previous shaping"
	else
		t_fail "link_outage restores the previous shaping" "$qd"
	fi
	link_clear "$TOPO_SW" "$TOPO_PORT_B"
	t_check "management link" topo_mgmt
else
	t_skip "rest of the two-host checks" "no topology"
fi

# --- testbed install paths ---------------------------------------------------
# the module vm-run installed (a debug or RT kernel's is not in the tree)
if [ -f "${METAROCE_GUEST_KO:-drivers/infiniband/sw/metaroce/rdma_metaroce.ko}" ]; then
	t_check "rdma_metaroce.ko installed for modprobe (modinfo)" modinfo -n rdma_metaroce
else
	t_skip "rdma_metaroce.ko installed for modprobe" "module not built"
fi
if [ -n "${METAROCE_RDMA_CORE_LIBDIR:-}" ]; then
	out=$(ldd "$(command -v ib_write_bw)" 2>&1)
	if [[ $out == *"libibverbs.so.1 => $METAROCE_RDMA_CORE_LIBDIR/"* ]]; then
		t_ok "perftest uses rdma-core 56.1's libibverbs"
	else
		t_fail "perftest uses rdma-core 56.1's libibverbs" "$out"
	fi
else
	t_skip "perftest uses rdma-core 56.1's libibverbs" "rdma-core 56.1 not built"
fi

# --- rxe baseline ----------------------------------------------------------------
rxe_tests() {
	t_check "rxe wiring: init_net rxa/rxb over the switch (MTU 9000)" topo_rxe_two_hosts --mtu 9000 || return
	local a0 a1 gid_a gid_b out rc
	a0=$(sw_port_bytes "$TOPO_SW" "$RXE_PORT_A" rx)
	ping -c3 -i0.2 -W2 -I "$RXE_A_IP" "$RXE_B_IP" >/dev/null 2>&1
	a1=$(sw_port_bytes "$TOPO_SW" "$RXE_PORT_A" rx)
	if [ $((a1 - a0)) -ge $((3 * 98)) ]; then
		t_ok "A->B ping crosses the switch ($((a1 - a0)) bytes)"
	else
		t_fail "A->B ping crosses the switch" "switch port $RXE_PORT_A rx bytes $a0 -> $a1"
	fi

	add_both() { rxe_add rxe0 "$RXE_A_DEV" && rxe_add rxe1 "$RXE_B_DEV"; }
	t_check "rdma link add rxe0 (rxa), rxe1 (rxb)" add_both || return
	out=$(ibv_devices 2>&1)
	if [[ $out == *rxe0* && $out == *rxe1* ]]; then t_ok "ibv_devices lists rxe0 and rxe1"; else t_fail "ibv_devices lists rxe0 and rxe1" "$out"; fi

	# The GID table fills asynchronously after link add.
	wait_for 10 rxe_gid_index rxe0 "$RXE_A_IP"
	gid_a=$(rxe_gid_index rxe0 "$RXE_A_IP") gid_b=$(rxe_gid_index rxe1 "$RXE_B_IP")
	if [ -n "$gid_a" ] && [ -n "$gid_b" ]; then
		t_ok "RoCE v2 IPv4 GIDs found (rxe0 index $gid_a, rxe1 index $gid_b)"
	else
		t_fail "RoCE v2 IPv4 GIDs found" "$(grep -H . /sys/class/infiniband/rxe*/ports/1/gids/[0-3] 2>&1)"
		return 1
	fi

	# ibv_rc_pingpong: control over TCP (local, via lo), data over the wire.
	local n=500 size=4096 log=/tmp/00-testbed
	a0=$(sw_port_bytes "$TOPO_SW" "$RXE_PORT_A" rx)
	rc=0
	srv_cli --timeout 60 --log $log.pp ibv_rc_pingpong -d rxe1 -g "$gid_b" -n $n -s $size -- \
		ibv_rc_pingpong -d rxe0 -g "$gid_a" -n $n -s $size "$RXE_B_IP" || rc=$?
	a1=$(sw_port_bytes "$TOPO_SW" "$RXE_PORT_A" rx)
	if [ "$rc" -eq 0 ]; then
		t_ok "ibv_rc_pingpong rxe0 -> rxe1 ($(grep -m1 'bytes in' $log.pp.cli))"
	else
		t_fail "ibv_rc_pingpong rxe0 -> rxe1 (rc $rc)" "client: $(<$log.pp.cli)" "server: $(<$log.pp.srv)"
	fi
	if [ $((a1 - a0)) -ge $((n * size)) ]; then
		t_ok "RDMA traffic crossed the switch ($((a1 - a0)) bytes A->B)"
	else
		t_fail "RDMA traffic crossed the switch" "switch port $RXE_PORT_A rx bytes $a0 -> $a1, expected >= $((n * size))"
	fi

	# retransmission/ordering trouble shows here (veth reordering without RPS)
	t_diag "rxe counters (nonzero): $(grep -H -v '^0$' /sys/class/infiniband/rxe[01]/ports/1/hw_counters/{rcvd_seq_err,duplicate_request,out_of_seq_request,completer_retry_err,retry_exceeded_err,send_rnr_err,rcvd_rnr_err} 2>/dev/null |
		sed 's|/sys/class/infiniband/||; s|/ports/1/hw_counters/|.|' | tr '\n' ' ')"

	# perftest (what the benchmarks use) on the same path
	rc=0
	srv_cli --timeout 60 --log $log.bw ib_write_bw -d rxe1 -x "$gid_b" -s 65536 -n 200 -F -- \
		ib_write_bw -d rxe0 -x "$gid_a" -s 65536 -n 200 -F "$RXE_B_IP" || rc=$?
	if [ "$rc" -eq 0 ]; then
		t_ok "ib_write_bw rxe0 -> rxe1, 200 x 64 KiB"
	else
		t_fail "ib_write_bw rxe0 -> rxe1 (rc $rc)" "client: $(<$log.bw.cli)" "server: $(<$log.bw.srv)"
	fi
}
rxe_tests

t_summary

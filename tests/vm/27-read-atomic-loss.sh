#!/bin/bash
# READ and atomics with one operation outstanding (issue 50): the loss of
# a lone operation's request or response is repaired by the tail-loss
# probe (or RACK), not by the RTO, and every result stays right.
# mrc_verify --window 1 issues one operation at a time, hostA requests
# only; a tc u32 filter on a switch port drops every Nth packet of one
# MetaRoCE opcode (gact determ), so each drop hits a lone operation.
# No speed check: the counters show which mechanism repaired each loss.
# vm-test-timeout: 600
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
# shellcheck source=tests/lib/hostile.sh
. "${BASH_SOURCE[0]%/*}/../lib/hostile.sh"
trap topo_cleanup EXIT

rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000

SW=$TOPO_SW PA=$TOPO_PORT_A PB=$TOPO_PORT_B
# egress of PB carries hostA's requests, egress of PA the responses
tc -n "$SW" qdisc add dev "$PA" clsact
tc -n "$SW" qdisc add dev "$PB" clsact
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1
DROPS=0

# drop_nth DEV OPCODE MASK N: drop every Nth MetaRoCE packet whose opcode
# (UDP payload byte 1, IPv4 without options) matches, leaving the others
drop_nth() {
	tc -n "$SW" filter del dev "$PA" egress 2>/dev/null
	tc -n "$SW" filter del dev "$PB" egress 2>/dev/null
	tc -n "$SW" filter add dev "$1" egress protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 4792 0xffff \
		match u8 "$2" "$3" at 29 action gact ok random determ drop "$4"
}

# dropped DEV: packets the filter on DEV dropped
dropped() {
	local out
	out=$(tc -n "$SW" -s filter show dev "$1" egress)
	[[ $out =~ dropped\ ([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}

in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

# run DESC DEV -- MRC_VERIFY-ARGS: one lone-operation stream; sets DROPS
# and the A/B counter deltas below
run() {
	local desc=$1 dev=$2 rc=0
	shift 3
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	rc_verify --timeout 120 --log /tmp/lone --dir c2s -q 1 -w 1 -n 200 "$@" || rc=$?
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	DROPS=$(dropped "$dev")
	RETX=$(rc_delta a0 a1 retransmitted_packets)
	RACK=$(rc_delta a0 a1 rack_losses)
	TLP=$(rc_delta a0 a1 tail_loss_probes)
	RTO=$(rc_delta a0 a1 rto_events)
	DUPB=$(rc_delta b0 b1 duplicate_packets)
	SLACK=$((5 + DROPS / 5))
	t_diag "$desc: dropped $DROPS in $(rc_result /tmp/lone.cli secs) s; A: retx $RETX (rack $RACK tlp $TLP rto $RTO) spurious $(rc_delta a0 a1 spurious_retransmits) srtt ${a1[rtt_smoothed_us]:-?} us reo_wnd ${a1[rack_reo_wnd_us]:-?} us; B: duplicate_packets $DUPB"
	rc_verified "$desc: data and results verified" "$rc" /tmp/lone \
		"$(rc_result /tmp/lone.cli per_op)"
	t_check "$desc: the filter dropped some ($DROPS)" [ "$DROPS" -ge 10 ]
	# RTO as the repair would be one a drop; a vCPU of the emulated host
	# stalling past srtt + rto_min_us (5 ms) costs one now and then
	t_check "$desc: no loss left to the RTO ($RTO rto_events, 4 x $RTO < $DROPS)" \
		[ $((4 * RTO)) -lt "$DROPS" ]
	t_check "$desc: every drop repaired by RACK or a probe ($RACK + $TLP >= $DROPS)" \
		[ $((RACK + TLP)) -ge "$DROPS" ]
}

# a) one response segment of READs of up to 8 segments: RACK finds it
#    when a later segment came, the tail-loss probe when it was the last
drop_nth "$PA" 0x10 0xff 7
run "lone READ, a response segment dropped" "$PA" -- -o read -s 64K -S 27
# a READ of up to 8 segments loses at most 2 to a 1-in-7 filter, and one
# re-request may ask for both (a probe asks for the rest of the READ)
half=$(((DROPS + 1) / 2))
t_check "READ response: the lost segments re-requested ($RETX retransmitted for $DROPS, at least $half, at most 2 x + $SLACK)" \
	in_range "$RETX" "$half" $((2 * DROPS + SLACK))
t_check "READ response: hostB served them again ($DUPB duplicate requests >= $half)" \
	[ "$DUPB" -ge "$half" ]

# b) atomic responses: the re-asked atomic is a duplicate at hostB,
#    answered from the replay cache (executed once: mrc_verify checks
#    every returned value and the counters' final contents)
drop_nth "$PA" 0x11 0xff 5
run "lone atomic, its response dropped" "$PA" -- -o atomic -S 28
t_check "atomic response: hostB answered each re-ask as a duplicate ($DUPB >= $DROPS)" \
	[ "$DUPB" -ge "$DROPS" ]
t_check "atomic response: each re-asked ($RETX retransmitted for $DROPS, at most 2 x + $SLACK)" \
	in_range "$RETX" "$DROPS" $((2 * DROPS + SLACK))

# c) READ requests of up to 8 segments: one probe asks for the whole READ
drop_nth "$PB" 0x03 0xff 5
run "lone READ, its request dropped" "$PB" -- -o read -s 64K -S 29
t_check "READ request: one probe per lost request ($TLP for $DROPS, slack $SLACK)" \
	[ "$TLP" -le $((DROPS + SLACK)) ]
t_check "READ request: one re-request per lost request ($RETX retransmitted for $DROPS, slack $SLACK)" \
	[ "$RETX" -le $((DROPS + SLACK)) ]

# c2) READs of up to 128 KiB (16 segments) in a fixed send window of 16
#     PSNs (window at its least, congestion window and receiver credits
#     off): one of more than 8 segments goes as read_pulls (2) requests,
#     so a lost first request is reported missing by the ACK for the
#     second and RACK asks again, if the probe has not already.  With
#     read_pulls 1 every such READ is one request: RACK found 9 of 49
#     lost requests, against 27 and 56 of about 50 in two runs with 2.
saved=$(for p in window cc credits; do echo "$p=$(rc_param $p)"; done)
pulls=$(rc_param read_pulls)
rc_param window 16
rc_param cc N
rc_param credits N
drop_nth "$PB" 0x03 0xff 5
run "lone READ of up to 128 KiB in a window of 16, its request dropped" "$PB" -- -o read -s 128K -S 31
for p in $saved; do rc_param "${p%%=*}" "${p#*=}"; done
t_diag "READ request, window 16, read_pulls $pulls: hostA sent $(rc_delta a0 a1 tx_packets) packets for 200 operations"
t_check "READ request, window 16: RACK found at least a quarter of the lost requests ($RACK of $DROPS)" \
	[ "$RACK" -ge $((DROPS / 4)) ]

# d) atomic requests (compare-and-swap 0x04, fetch-and-add 0x05)
drop_nth "$PB" 0x04 0xfe 5
run "lone atomic, its request dropped" "$PB" -- -o atomic -S 30
t_check "atomic request: each re-sent ($RETX retransmitted for $DROPS, at most 2 x + $SLACK)" \
	in_range "$RETX" "$DROPS" $((2 * DROPS + SLACK))

# e) 128 READs or atomics outstanding (max_qp_rd_atom 128): every
#    response is dropped until hostA has 128 in flight on a QP with
#    max_dest_rd_atomic 128, then let through.  Each is asked again and
#    answered: READs served again, atomics from the replay cache, which
#    must hold all 128 (MRC-MSG-37); none is refused for room.  Each such
#    lone request is acknowledged by its response only (MRC-ACK-14), so
#    nothing opens the congestion window while responses are held: these
#    QPs start with CC off (window 512).  The ACK timeout is 4 s (x 8
#    attempts) so that the hold cannot exhaust the retries.  mrc_verify
#    puts a SEND among every 32 operations: 136 of them hold at least 131
#    READs or atomics, of which max_rd_atomic lets 128, never more, start.
rd_atom=$(ibv_devinfo -v -d "$RC_DEV_B" 2>/dev/null |
	awk '$1 == "max_qp_rd_atom:" { print $2 }')
t_check "ibv_query_device: max_qp_rd_atom 128 (${rd_atom:-none})" \
	[ "${rd_atom:-0}" = 128 ]

# held DESC OPCODE -- MRC_VERIFY-ARGS: 128 operations, responses held back
held() {
	local desc=$1 op=$2 rc=0 peak=0 t pid nores
	shift 3
	declare -A q=()
	tc -n "$SW" filter del dev "$PA" egress 2>/dev/null
	tc -n "$SW" filter del dev "$PB" egress 2>/dev/null
	tc -n "$SW" filter add dev "$PA" egress protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 4792 0xffff \
		match u8 "$op" 0xff at 29 action drop
	rc_snap b0 "$RC_DEV_B"
	echo 0 >"$CC"
	rc_verify --timeout 120 --log /tmp/held --dir c2s -q 1 -w 136 -n 136 \
		--rd-atomic 128 --timeout 20 "$@" &
	pid=$!
	for ((t = SECONDS + 20; SECONDS < t && peak < 128;)); do
		if qp_live q "$RC_DEV_A" && [ "${q[rd_outstanding]:-0}" -gt "$peak" ]; then
			peak=${q[rd_outstanding]}
		fi
		sleep 0.1
	done
	DROPS=$(dropped "$PA")
	tc -n "$SW" filter del dev "$PA" egress
	wait "$pid" || rc=$?
	echo "$cc_old" >"$CC"
	rc_snap b1 "$RC_DEV_B"
	DUPB=$(rc_delta b0 b1 duplicate_packets)
	nores=$(rc_delta b0 b1 drop_no_resource)
	t_diag "$desc: $DROPS responses dropped, peak rd_outstanding $peak; B: duplicate_packets $DUPB drop_no_resource $nores"
	rc_verified "$desc: data and results verified" "$rc" /tmp/held \
		"$(rc_result /tmp/held.cli per_op)"
	t_check "$desc: hostA had 128 in flight, not more (peak rd_outstanding $peak)" \
		[ "$peak" -eq 128 ]
	t_check "$desc: hostB answered each re-ask ($DUPB duplicates >= 128)" \
		[ "$DUPB" -ge 128 ]
	t_check "$desc: hostB refused none for room ($nores drop_no_resource)" \
		[ "$nores" -eq 0 ]
}

CC=/sys/module/rdma_metaroce/parameters/cc
cc_old=$(cat "$CC")
held "128 atomics outstanding" 0x11 -- -o atomic -S 31
held "128 READs outstanding" 0x10 -- -o read -s 4K -S 32

tc -n "$SW" qdisc del dev "$PA" clsact
tc -n "$SW" qdisc del dev "$PB" clsact
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then
	t_ok "no kernel warnings"
else
	t_fail "no kernel warnings" "$bad"
fi
t_summary

#!/bin/bash
# The metaroce tracepoints (include/trace/events/metaroce.h) against the
# counters: a verified transfer, all ops in both directions, with loss
# both ways on the switch ports, while a tracefs instance records every
# metaroce:* event.  Both devices' counter deltas, summed, must match:
#  a) mrc_retransmit events = retransmitted_packets;
#  b) mrc_loss events: the counts of cause RACK add up to rack_losses,
#     TLP events = tail_loss_probes, RTO events = rto_events;
#  c) mrc_xmit events = tx_packets + tx_dropped (a packet built is sent
#     or counted dropped), mrc_recv events = rx_packets (nothing here
#     fails to parse), mrc_ack events = tx_acks;
#  d) the QPs' state changes were traced (INIT, RTR, RTS at least), the
#     path engine's events appear, and no event was lost (overrun 0);
#  e) the per-QP view: `rdma -j -dd res show qp` of hostA's QP during a
#     second lossy transfer has the loss and path fields (wnd, retx_pkts,
#     rack_losses, tlps, rtos, sack_holes, ooo_pkts, path_*) and one
#     distinct non-zero port per entropy (ent0..), with retransmissions
#     counted and at most the device's.
# The trace goes to $METAROCE_OUT/trace when it fails.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
# shellcheck source=tests/lib/hostile.sh
. "${BASH_SOURCE[0]%/*}/../lib/hostile.sh"

TR=/sys/kernel/tracing
INST=$TR/instances/mrc41
OUT=/dev/shm/mrc41	# the guest's /tmp is small
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1
trap 'echo 0 >"$INST/tracing_on" 2>/dev/null; rmdir "$INST" 2>/dev/null; rm -rf "$OUT"; topo_cleanup' EXIT

rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000
[ -d "$TR/events" ] || mount -t tracefs nodev "$TR" 2>/dev/null
want="mrc_xmit mrc_recv mrc_loss mrc_retransmit mrc_sack mrc_ack mrc_wnd mrc_path mrc_qp_state mrc_cqe_err"
missing=''
for e in $want; do [ -d "$TR/events/metaroce/$e" ] || missing+=" $e"; done
if [ -z "$missing" ]; then
	t_ok "the module declares the tracepoints metaroce:{${want// /,}}"
else
	t_fail "the module declares every metaroce tracepoint" "missing:$missing"
	t_summary
	exit 1
fi
rm -rf "$OUT" "$INST" 2>/dev/null
if ! mkdir -p "$OUT" || ! mkdir "$INST"; then
	t_fail "a tracefs instance" "mkdir $INST failed"
	t_summary
	exit 1
fi
echo 0 >"$INST/tracing_on"
echo 65536 >"$INST/buffer_size_kb"	# per CPU: no event may be overwritten
echo 1 >"$INST/events/metaroce/enable"
echo 1 >"$INST/tracing_on"

rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
rc_loss_both 3
rc=0
rc_verify --timeout 240 --log /tmp/trace41 -q 2 -s 64K -n 300 || rc=$?
rc_loss_clear
bsleep 1	# the QPs are gone: their last packets were counted
echo 0 >"$INST/tracing_on"
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
rc_verified "3 % loss both ways, all ops, both directions: data verified" "$rc" /tmp/trace41 \
	"$(rc_result /tmp/trace41.cli ops) + $(rc_result /tmp/trace41.srv ops) ops"

cat "$INST/trace" >"$OUT/trace"
overrun=$(cat "$INST"/per_cpu/cpu*/stats 2>/dev/null | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
# event counts: "name" -> lines; for mrc_loss the sum of count= per cause
read -r xmit recv ack retx rack tlp rto st path <<<"$(awk '
	/ mrc_xmit: / { x++ } / mrc_recv: / { r++ } / mrc_ack: / { a++ }
	/ mrc_retransmit: / { t++ } / mrc_qp_state: / { s++ } / mrc_path: / { p++ }
	/ mrc_loss: / {
		c = 0
		for (i = 1; i <= NF; i++) if ($i ~ /^count=/) c = substr($i, 7) + 0
		if ($0 ~ /cause=RACK/) rk += c
		else if ($0 ~ /cause=TLP/) tl++
		else if ($0 ~ /cause=RTO/) ro++
	}
	END { printf "%d %d %d %d %d %d %d %d %d\n", x, r, a, t, rk, tl, ro, s, p }' "$OUT/trace")"
sum() { echo $(($(rc_delta a0 a1 "$1") + $(rc_delta b0 b1 "$1"))); }
c_retx=$(sum retransmitted_packets) c_rack=$(sum rack_losses) c_tlp=$(sum tail_loss_probes)
c_rto=$(sum rto_events) c_tx=$(sum tx_packets) c_txd=$(sum tx_dropped) c_rx=$(sum rx_packets)
c_ack=$(sum tx_acks)
t_diag "events: xmit $xmit recv $recv ack $ack retransmit $retx loss RACK $rack TLP $tlp RTO $rto qp_state $st path $path; overrun $overrun; $(wc -l <"$OUT/trace") lines"
t_diag "counters (A + B): tx_packets $c_tx tx_dropped $c_txd rx_packets $c_rx tx_acks $c_ack retransmitted_packets $c_retx rack_losses $c_rack tail_loss_probes $c_tlp rto_events $c_rto"
fails=0
check() { t_check "$@" || fails=$((fails + 1)); }
check "no trace event lost (overrun $overrun)" [ "$overrun" -eq 0 ]
check "the transfer retransmitted (retransmitted_packets $c_retx >= 10)" [ "$c_retx" -ge 10 ]
check "a) one mrc_retransmit event per retransmitted packet ($retx = $c_retx)" [ "$retx" -eq "$c_retx" ]
check "b) mrc_loss RACK counts add up to rack_losses ($rack = $c_rack)" [ "$rack" -eq "$c_rack" ]
check "b) one mrc_loss TLP event per tail-loss probe ($tlp = $c_tlp)" [ "$tlp" -eq "$c_tlp" ]
check "b) one mrc_loss RTO event per RTO ($rto = $c_rto)" [ "$rto" -eq "$c_rto" ]
check "c) mrc_xmit events = tx_packets + tx_dropped ($xmit = $c_tx + $c_txd)" [ "$xmit" -eq $((c_tx + c_txd)) ]
check "c) mrc_recv events = rx_packets ($recv = $c_rx)" [ "$recv" -eq "$c_rx" ]
check "c) mrc_ack events = tx_acks ($ack = $c_ack)" [ "$ack" -eq "$c_ack" ]
check "d) QP state changes traced (INIT, RTR, RTS for 4 QPs: $st >= 12)" [ "$st" -ge 12 ]
check "d) path engine events traced ($path)" [ "$path" -gt 0 ]
# e) the per-QP view, sampled 4 s into a 10 s transfer at 3 % loss
declare -A q=()
rc_snap a0 "$RC_DEV_A"
rc_loss_both 3
rc_verify --timeout 120 --log /tmp/view41 --dir c2s -q 1 -s 64K -D 10 &
vpid=$!
bsleep 4
qp_live q "$RC_DEV_A"
rc_snap a1 "$RC_DEV_A"
wait "$vpid"
vrc=$?
rc_loss_clear
rc_verified "e) 3 % loss, one QP hostA -> hostB: data verified" "$vrc" /tmp/view41 "$(rc_result /tmp/view41.cli ops) ops"
fields="wnd retx_pkts rack_losses tlps rtos sack_holes ooo_pkts path_switches path_retired path_delay_skips path_rebalanced path_losses srtt_us entropies"
missing='' entl=''
declare -A seen=()
for f in $fields; do [ -n "${q[$f]:-}" ] || missing+=" $f"; done
n=${q[entropies]:-0}
for ((i = 0; i < n && i < 16; i++)); do
	p=${q[ent$i]:-0}
	entl+=" $p/${q[ent${i}_rtt_us]:-?}"
	if [ "$p" -gt 0 ] && [ -z "${seen[$p]:-}" ]; then seen[$p]=1; else missing+=" ent$i($p)"; fi
done
t_diag "e) hostA's QP: wnd ${q[wnd]:-?} retx_pkts ${q[retx_pkts]:-?} rack_losses ${q[rack_losses]:-?} tlps ${q[tlps]:-?} rtos ${q[rtos]:-?} sack_holes ${q[sack_holes]:-?} ooo_pkts ${q[ooo_pkts]:-?} path_losses ${q[path_losses]:-?} srtt_us ${q[srtt_us]:-?}; entropies (port/rtt_us):$entl"
[ "$n" -gt 0 ] || missing+=" (no entropies)"
check "e) the per-QP view lists the loss and path fields and each entropy's port" [ -z "$missing" ]
dretx=$(rc_delta a0 a1 retransmitted_packets)
check "e) the QP counted retransmissions (${q[retx_pkts]:-?} >= 1)" [ "${q[retx_pkts]:-0}" -ge 1 ]
check "e) at most the device's (${q[retx_pkts]:-?} <= $dretx)" [ "${q[retx_pkts]:-0}" -le "$dretx" ]

if [ "$fails" -gt 0 ] && [ -n "${METAROCE_OUT:-}" ]; then
	mkdir -p "$METAROCE_OUT/trace" && gzip -c "$OUT/trace" >"$METAROCE_OUT/trace/trace.gz"
fi
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

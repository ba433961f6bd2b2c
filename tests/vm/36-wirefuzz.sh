#!/bin/bash
# Wire fuzzing at live QPs (issue 42 item 4). mrc_verify runs a verified
# transfer in both directions (each host requests SENDs, WRITEs, READs and
# atomics and answers the other's) while one mrc_wirefuzz in each host's
# namespace sends mutated packets of every opcode at the other host's live
# QP: the requester and the responder side of both QPs get garbage. Total
# packets: METAROCE_WIREFUZZ_PACKETS (200000), half from each host; the
# transfer runs METAROCE_WIREFUZZ_XFER_SECS (30 s, 165 s at the debug
# kernel's timeout factor 4) and must outlast them.
# Checks, per victim host:
#  - the transfer verified every byte, no error completion, both QPs RTS
#    when the fuzzers end, no fatal NAK sent, no retry_exceeded;
#  - every fuzzed packet reached the driver: rx_packets(victim) -
#    tx_packets(peer) over the whole transfer == packets the fuzzer sent;
#  - the reasons the fuzzer predicted with the engine's own
#    mrc_wire_parse(), and drop_no_qp and drop_bad_source (wrong QPN,
#    spoofed source), rose by exactly the predicted counts (the transfer
#    itself causes none);
#  - the well-formed packets with the peer's identity, placed out of or
#    just below the window: drop_out_of_window, drop_bad_ack,
#    drop_bad_duplicate, drop_no_resource, drop_bad_state,
#    duplicate_packets and stale_acks together rose by at least as many,
#    and those placed far from it drop_out_of_window and drop_bad_ack;
#  - so every drop counter together with duplicate_packets and stale_acks
#    rose by at least the packets sent: none went uncounted;
#  - no kernel warning.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
# shellcheck source=tests/lib/hostile.sh
. "${BASH_SOURCE[0]%/*}/../lib/hostile.sh"
trap topo_cleanup EXIT

PACKETS=${METAROCE_WIREFUZZ_PACKETS:-200000}
# the debug kernel (factor 4) fuzzes at about 800 packets/s a host: its
# 100000 each took 123-128 s, longer than 30 s x 4
F=${METAROCE_VM_TIMEOUT_FACTOR:-1}
XFER_S=${METAROCE_WIREFUZZ_XFER_SECS:-$((30 * F + 15 * (F - 1)))}
WIREFUZZ=$RC_REPO/tests/tools/mrc_wirefuzz
PARSE_DROPS=(truncated bad_version bad_opcode bad_hdr_len bad_pay_len bad_field bad_pmtu bad_length bad_sack)
WINDOW_CNT=(drop_out_of_window drop_bad_ack drop_bad_duplicate drop_no_resource drop_bad_state duplicate_packets stale_acks)
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1 QA QB FA FB

build() {
	hs_build_tools || return
	[ -x "$WIREFUZZ" ] && ! [ "$WIREFUZZ.c" -nt "$WIREFUZZ" ] && return 0
	make -s -C "$RC_REPO/tests/tools" mrc_wirefuzz 2>&1
}

# fz_parse FILE ARRAY: the MRC_WIREFUZZ_RESULT line's KEY=value pairs
fz_parse() {
	local -n _f=$2
	local l w res=''
	_f=()
	while IFS= read -r l; do
		[[ $l != MRC_WIREFUZZ_RESULT* ]] || res=$l
	done <"$1"
	for w in $res; do
		case $w in *=*) _f[${w%%=*}]=${w#*=} ;; esac
	done
}

# dsum S0 S1 NAME...: sum of the counters' deltas
dsum() {
	local -n _d0=$1 _d1=$2
	local n s=0
	shift 2
	for n in "$@"; do s=$((s + ${_d1[$n]:-0} - ${_d0[$n]:-0})); done
	echo "$s"
}

# check_victim WHO F V0 V1 P0 P1: the counters of the victim (V0 -> V1)
# and its peer (P0 -> P1) against the fuzzer's result F
check_victim() {
	local who=$1 r exp got bad='' all='' sent win drops far
	local -n _fz=$2
	sent=${_fz[sent]:-0}
	got=$(($(dsum "$3" "$4" rx_packets) - $(dsum "$5" "$6" tx_packets)))
	if [ "$got" = "$sent" ]; then
		t_ok "$who: every fuzzed packet reached the driver (rx_packets - peer's tx_packets = $got = sent)"
	else
		t_fail "$who: every fuzzed packet reached the driver" \
			"rx_packets - peer's tx_packets = $got, fuzzer sent $sent"
	fi
	for r in "${PARSE_DROPS[@]}" no_qp bad_source; do
		exp=${_fz[expect_drop_$r]:-0} got=$(dsum "$3" "$4" "drop_$r")
		all+=" $r $exp/$got"
		# bad_pmtu: also a request of a segment the device cannot answer
		if [ "$got" != "$exp" ] && ! { [ "$r" = bad_pmtu ] && [ "$got" -gt "$exp" ]; }; then
			bad+=" $r"
		fi
	done
	if [ -z "$bad" ]; then
		t_ok "$who: parse, no-QP and bad-source drops exactly as predicted (predicted/counted:$all)"
	else
		t_fail "$who: parse, no-QP and bad-source drops exactly as predicted" \
			"wrong:$bad; predicted/counted:$all"
	fi
	win=$(dsum "$3" "$4" "${WINDOW_CNT[@]}")
	win=$((win + $(dsum "$3" "$4" drop_bad_pmtu) - ${_fz[expect_drop_bad_pmtu]:-0}))
	if [ "$win" -ge "${_fz[expect_window]:-0}" ]; then
		t_ok "$who: the peer's-identity packets out of or below the window all counted ($win >= ${_fz[expect_window]:-0})"
	else
		t_fail "$who: the peer's-identity packets out of or below the window all counted" \
			"${WINDOW_CNT[*]}: $win < ${_fz[expect_window]:-0}" \
			"zones: $(for z in "${!_fz[@]}"; do [[ $z != zone_* ]] || printf '%s=%s ' "$z" "${_fz[$z]}"; done)"
	fi
	# the far zones are certain drops (a near one may become one too)
	far=$((${_fz[zone_req_below]:-0} + ${_fz[zone_req_beyond]:-0} + ${_fz[zone_ack_below]:-0} +
		${_fz[zone_ack_beyond]:-0} + ${_fz[zone_resp_beyond]:-0}))
	got=$(($(dsum "$3" "$4" drop_out_of_window drop_bad_ack drop_bad_pmtu) - ${_fz[expect_drop_bad_pmtu]:-0}))
	if [ "$got" -ge "$far" ]; then
		t_ok "$who: those far from the window dropped as out of window or bad ACK ($got >= $far)"
	else
		t_fail "$who: those far from the window dropped as out of window or bad ACK" "$got < $far"
	fi
	t_diag "$who: $(for r in "${WINDOW_CNT[@]}"; do printf '%s +%s ' "$r" "$(dsum "$3" "$4" "$r")"; done)"
	drops=0
	local -n _v1=$4
	for r in "${!_v1[@]}"; do
		[[ $r != drop_* ]] || drops=$((drops + $(dsum "$3" "$4" "$r")))
	done
	drops=$((drops + $(dsum "$3" "$4" duplicate_packets stale_acks)))
	if [ "$drops" -ge "$sent" ]; then
		t_ok "$who: drop_* + duplicate_packets + stale_acks rose by at least the packets sent ($drops >= $sent)"
	else
		t_fail "$who: drop_* + duplicate_packets + stale_acks rose by at least the packets sent" "$drops < $sent"
	fi
	t_diag "$who: naks_sent +$(dsum "$3" "$4" naks_sent) naks_received +$(dsum "$3" "$4" naks_received) rnr_naks_received +$(dsum "$3" "$4" rnr_naks_received) retry_exceeded +$(dsum "$3" "$4" retry_exceeded)"
	if [ "$(dsum "$3" "$4" naks_sent retry_exceeded)" = 0 ]; then
		t_ok "$who: sent no fatal NAK, no retry_exceeded"
	else
		t_fail "$who: sent no fatal NAK, no retry_exceeded" \
			"naks_sent +$(dsum "$3" "$4" naks_sent) retry_exceeded +$(dsum "$3" "$4" retry_exceeded)"
	fi
}

fz_diag() {
	local -n _g=$2
	local k out=''
	for k in $(printf '%s\n' "${!_g[@]}" | sort); do
		[ "${_g[$k]}" = 0 ] || out+="$k=${_g[$k]} "
	done
	t_diag "$1: $out"
}

rc_dmesg_mark
if ! t_check "build mrc_verify and mrc_wirefuzz" build; then t_summary; exit 1; fi
rc_hosts --mtu 9000

rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
rm -f /tmp/wf.cli /tmp/wf.srv
rc_verify --timeout $((XFER_S + 120)) --log /tmp/wf --dir both -q 1 -s 64K --ops all -D "$XFER_S" &
X_PID=$!
if ! wait_for 60 grep -q running /tmp/wf.cli || ! qp_live QA "$RC_DEV_A" || ! qp_live QB "$RC_DEV_B"; then
	t_fail "the transfer runs, both RC QPs in rdma res show qp" "$(tail -n 5 /tmp/wf.cli /tmp/wf.srv 2>&1)"
	wait "$X_PID"
	t_summary
	exit 1
fi
t_diag "hostA QP ${QA[lqpn]} <-> hostB QP ${QB[lqpn]}; $PACKETS packets, transfer $XFER_S s"

half=$((PACKETS / 2))
avoid_a=() avoid_b=()
for q in $(qp_numbers "$RC_DEV_A"); do avoid_a+=(--avoid-qpn "$q"); done
for q in $(qp_numbers "$RC_DEV_B"); do avoid_b+=(--avoid-qpn "$q"); done
t0=$(date +%s%N)
# from hostA at hostB's QP, and from hostB at hostA's QP
ip netns exec "$TOPO_A" "$WIREFUZZ" --dst "$TOPO_B_IP" --dqpn "${QB[lqpn]}" --sqpn "${QA[lqpn]}" \
	--learn "$TOPO_DEV" "${avoid_b[@]}" --seed 1 --count "$half" >/tmp/wf.a 2>&1 &
FA_PID=$!
ip netns exec "$TOPO_B" "$WIREFUZZ" --dst "$TOPO_A_IP" --dqpn "${QA[lqpn]}" --sqpn "${QB[lqpn]}" \
	--learn "$TOPO_DEV" "${avoid_a[@]}" --seed 2 --count $((PACKETS - half)) >/tmp/wf.b 2>&1 &
FB_PID=$!
rca=0 rcb=0
wait "$FA_PID" || rca=$?
wait "$FB_PID" || rcb=$?
wall_ms=$((($(date +%s%N) - t0) / 1000000))
fz_parse /tmp/wf.a FA
fz_parse /tmp/wf.b FB
if [ "$rca" = 0 ] && [ "$rcb" = 0 ] && [ "$((${FA[sent]:-0} + ${FB[sent]:-0}))" = "$PACKETS" ]; then
	t_ok "both fuzzers sent everything ($PACKETS packets in $wall_ms ms, $((PACKETS * 1000 / (wall_ms + 1))) packets/s; hostA's ${FA[pps]} pps, hostB's ${FB[pps]} pps)"
else
	t_fail "both fuzzers sent everything" "exit $rca/$rcb, sent ${FA[sent]:-0}+${FB[sent]:-0} of $PACKETS" \
		"$(tail -n 3 /tmp/wf.a /tmp/wf.b)"
fi
fz_diag "fuzzer in hostA (at hostB)" FA
fz_diag "fuzzer in hostB (at hostA)" FB
if kill -0 "$X_PID" 2>/dev/null; then
	t_ok "the transfer still runs when the fuzzers end"
else
	t_fail "the transfer still runs when the fuzzers end (raise METAROCE_WIREFUZZ_XFER_SECS)"
fi
for h in A B; do
	# shellcheck disable=SC2034 # filled through a nameref
	declare -A q=()
	dev=RC_DEV_$h
	if qp_live q "${!dev}" && [ "${q[state]:-}" = RTS ]; then
		t_ok "host$h's QP is RTS after the fuzzing"
	else
		t_fail "host$h's QP is RTS after the fuzzing" "state ${q[state]:-gone}"
	fi
done

rc=0
wait "$X_PID" || rc=$?
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
rc_verified "transfer both ways: data verified, no error completion" "$rc" /tmp/wf \
	"$(rc_result /tmp/wf.cli ops) + $(rc_result /tmp/wf.srv ops) ops, $(rc_result /tmp/wf.cli bytes) + $(rc_result /tmp/wf.srv bytes) bytes"
t_diag "ops: hostA $(rc_result /tmp/wf.cli per_op), peer bytes verified $(rc_result /tmp/wf.cli peer_bytes_verified); hostB $(rc_result /tmp/wf.srv per_op), peer bytes verified $(rc_result /tmp/wf.srv peer_bytes_verified)"
check_victim hostB FA b0 b1 a0 a1
check_victim hostA FB a0 a1 b0 b1
softnet=0 d=0
while read -r _ d _; do softnet=$((softnet + 16#$d)); done </proc/net/softnet_stat
t_diag "softnet backlog drops (all CPUs, since boot): $softnet"
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

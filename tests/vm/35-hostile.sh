#!/bin/bash
# A hostile peer against live RC connections (security review R1-R7).
# mrc_verify runs a verified transfer (hostA requests SENDs, WRITEs, READs
# and atomics; hostB answers) while mrc_inject, in a peer's namespace,
# plays that peer host's unprivileged user (its real address, any UDP
# port) or, with a raw socket, a spoofer. The QP numbers come from
# `rdma res show qp`; PSNs from the connection's own ACKs (mrc_inject
# --learn), so "just below rcv_nxt" is exact even at full speed.
#  a) duplicate READ_REQs with a bad rkey (and 2 GiB lengths) just below
#     hostB's rcv_nxt and 2^30 below it: dropped (drop_bad_duplicate,
#     drop_out_of_window, drop_bad_length), none served, no NAK;
#  b) READ_REQs of 2^23 PSNs at, across and below the window:
#     drop_bad_length, no softirq stall (the injector's own time, the
#     transfer's time against the baseline);
#  c) stale ACKs to hostA with every field poisoned: counted as
#     stale_acks, no go-back-N per ACK (retransmitted_packets against the
#     baseline); ACKs 2^30 below snd_una: drop_bad_ack;
#  d) CE-marked and MRC_F_CREDIT requests beyond the window:
#     drop_out_of_window, the credit pool untouched;
#  e) wrong QPNs, a spoofed source, truncated and garbage datagrams: each
#     counted by its reason (parse reasons as mrc_wire_parse tallied them
#     in the injector); a bad UDP checksum never reaches the driver.
# After every case: the transfer verified every byte with no error
# completion, the attacked QP is still RTS, no kernel warning.
# vm-test-timeout: 420
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
# shellcheck source=tests/lib/hostile.sh
. "${BASH_SOURCE[0]%/*}/../lib/hostile.sh"
trap topo_cleanup EXIT

rc_dmesg_mark
if ! t_check "build mrc_verify and mrc_inject" hs_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000

# long enough to outlast every case's injections (checked); e) has many.
# A slower guest (debug kernel: METAROCE_VM_TIMEOUT_FACTOR) injects slower.
XFER=(--dir c2s -q 1 -s 64K --ops all)
XFER_S=$((15 * ${METAROCE_VM_TIMEOUT_FACTOR:-1}))
BAD_RKEY=0xffffff00
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1 s0 s1 QA QB
CASE='' X_PID='' X_US=0 X_MS=0 LV=() LP=()
BASE_MS=0 BASE_RETX=0 BASE_FULL=0 BASE_CECUT=0 BASE_ECNCUT=0

us() { local now=${EPOCHREALTIME/./}; echo "$((10#$now))"; }

# dsum S0 S1 NAME...: the sum of the counters' deltas (a counter the
# driver does not have counts 0; deltas names it)
dsum() {
	local -n _d0=$1 _d1=$2
	local n s=0
	shift 2
	for n in "$@"; do
		s=$((s + ${_d1[$n]:-0} - ${_d0[$n]:-0}))
	done
	echo "$s"
}
# deltas S0 S1 NAME...: "name +N" for each, or "name (no such counter)"
deltas() {
	local -n _e0=$1 _e1=$2
	local n out=''
	shift 2
	for n in "$@"; do
		if [ -z "${_e1[$n]+x}" ]; then
			out+="$n (no such counter), "
		else
			out+="$n +$((${_e1[$n]} - ${_e0[$n]:-0})), "
		fi
	done
	echo "${out%, }"
}
# expect DESC VALUE OP BOUND [DETAILS...]: OP is -ge or -le
expect() {
	local desc=$1 v=$2 op=$3 b=$4 sym='>=' ok
	shift 4
	if [ "$op" = -ge ]; then
		ok=$((v >= b))
	else
		ok=$((v <= b)) sym='<='
	fi
	if [ "$ok" = 1 ]; then
		t_ok "$CASE $desc ($v $sym $b)"
	else
		t_fail "$CASE $desc ($v, not $sym $b)" "$@"
	fi
}

# xfer_start [SECS]: the transfer in the background; once it runs, both
# QPs' live state into QA (hostA, the requester) and QB (hostB, the
# responder)
xfer_start() {
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	rm -f /tmp/hx.cli /tmp/hx.srv
	X_US=$(us)
	rc_verify --timeout $((150 * ${METAROCE_VM_TIMEOUT_FACTOR:-1})) --log /tmp/hx "${XFER[@]}" -D "${1:-$XFER_S}" &
	X_PID=$!
	if ! wait_for 60 grep -q running /tmp/hx.cli; then
		t_fail "$CASE the transfer starts" "$(tail -n 5 /tmp/hx.cli /tmp/hx.srv 2>&1)"
		return 1
	fi
	if ! qp_live QA "$RC_DEV_A" || ! qp_live QB "$RC_DEV_B"; then
		t_fail "$CASE both RC QPs in rdma res show qp" "$(rdma -j -dd res show qp 2>&1 | head -c 1500)"
		return 1
	fi
	# PSNs from the ACKs on the wire (mrc_inject --learn), the live state
	# rdma res show qp gave as the fallback: hostB's rcv_nxt (LV, for
	# requests to hostB) and hostA's snd_una (LP, for ACKs to hostA)
	LV=(--learn "$TOPO_DEV" --learn-wait 1500 --base "${QB[rcv_nxt]:-${QB[rq-psn]:-0}}")
	LP=(--learn "$TOPO_DEV" --learn-wait 1500 --base "${QA[snd_una]:-${QA[sq-psn]:-0}}")
	t_diag "$CASE hostA QP ${QA[lqpn]} -> ${QA[rqpn]}: sq-psn ${QA[sq-psn]:-?} snd_una ${QA[snd_una]:-?} snd_nxt ${QA[snd_nxt]:-?}; hostB QP ${QB[lqpn]}: rq-psn ${QB[rq-psn]:-?} rcv_nxt ${QB[rcv_nxt]:-?}"
}

# snap DEV: the counters since the last snap (s0 -> s1); snap_first DEV
# starts the chain
snap_first() { rc_snap s1 "$1"; }
snap() {
	cnt_copy s1 s0
	rc_snap s1 "$1"
}

# qp_alive DEV WHO: the attacked QP is still RTS (checked right after the
# injections, while the transfer runs)
qp_alive() {
	# shellcheck disable=SC2034 # filled through a nameref
	local -A q=()
	if ! kill -0 "$X_PID" 2>/dev/null; then
		t_fail "$CASE the transfer still runs when the injections end (make -D longer)"
	fi
	if qp_live q "$1" && [ "${q[state]:-}" = RTS ]; then
		t_ok "$CASE $2's QP is still RTS after the injections"
	else
		t_fail "$CASE $2's QP is still RTS after the injections" "state ${q[state]:-gone}" \
			"$(rdma -dd res show qp link "$1/1" 2>&1 | head -n 8)"
	fi
	Q_AFTER=$(declare -p q)
}

# xfer_end: wait for the transfer; data verified, no error completion, no
# NAK either way, no kernel warning
xfer_end() {
	local rc=0 bad
	[ -n "$X_PID" ] && { wait "$X_PID" || rc=$?; }
	X_PID=''
	X_US=$(($(us) - X_US))
	X_MS=$(awk -v s="$(rc_result /tmp/hx.cli secs)" 'BEGIN { printf "%d", s * 1000 }')
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	rc_verified "$CASE transfer: data verified, no error completion" "$rc" /tmp/hx \
		"$(rc_result /tmp/hx.cli ops) ops in $X_MS ms"
	expect "no NAK sent by hostB, none received by hostA" \
		"$(($(dsum b0 b1 naks_sent) + $(dsum a0 a1 naks_received)))" -le 0 \
		"$(deltas b0 b1 naks_sent) $(deltas a0 a1 naks_received retry_exceeded)"
	bad=$(rc_dmesg_bad)
	if [ -z "$bad" ]; then t_ok "$CASE no kernel warnings"; else t_fail "$CASE no kernel warnings" "$bad"; fi
	rc_dmesg_mark
}

# inj_ok WHAT: the injector ran and sent everything (else a failure)
inj_ok() {
	if [ "${INJ[rc]}" = 0 ] && [ "${INJ[sent]:-0}" -gt 0 ]; then return 0; fi
	t_fail "$CASE $1: mrc_inject sent its packets" "exit ${INJ[rc]}" "$(tail -n 5 "$INJ_LOG")"
	return 1
}
inj_diag() {
	t_diag "$CASE $1: sent ${INJ[sent]:-0} PSNs ${INJ[first_psn]:-?}..${INJ[last_psn]:-?} (base ${INJ[base]:-?}, from ${INJ[learned]:-0} ACKs) in $((${INJ[elapsed_us]:-0} / 1000)) ms, longest send $((${INJ[max_send_us]:-0} / 1000)) ms"
}

# --- baseline: the same transfer, nobody attacking --------------------------------------
CASE="baseline:"
if xfer_start; then
	xfer_end
	BASE_MS=$X_MS
	BASE_RETX=$(dsum a0 a1 retransmitted_packets)
	BASE_FULL=$(dsum b0 b1 credit_full_packets)
	BASE_CECUT=$(dsum b0 b1 credit_pool_ce_cuts)
	BASE_ECNCUT=$(dsum a0 a1 window_cuts_ecn)
	t_diag "baseline: $BASE_MS ms, hostA retransmitted $BASE_RETX of $(dsum a0 a1 tx_packets); hostB credit_full_packets $BASE_FULL credit_pool_ce_cuts $BASE_CECUT; hostA window_cuts_ecn $BASE_ECNCUT; drops A $(dsum a0 a1 drop_out_of_window drop_bad_ack drop_bad_source) B $(dsum b0 b1 drop_out_of_window drop_bad_length drop_bad_source)"
else
	xfer_end
fi

# --- a) duplicate READ_REQs: bad rkey, huge lengths, far below -------------------------
# a_variant DESC MRC_INJECT-ARGS...: 20 READ_REQs from hostA's address to
# hostB's QP, each dropped by one of the three reasons
a_variant() {
	local desc=$1 sum
	shift
	inject "$TOPO_A" --dst "$TOPO_B_IP" --op read_req --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" \
		--rkey "$BAD_RKEY" --va 0x10000 --count 20 --interval 2000 "${LV[@]}" "$@"
	snap "$RC_DEV_B"
	inj_ok "$desc" || return
	inj_diag "$desc"
	sum=$(dsum s0 s1 drop_bad_duplicate drop_out_of_window drop_bad_length)
	expect "READ_REQ $desc: every one dropped as duplicate, out of window or bad length" \
		"$sum" -ge "${INJ[sent]}" \
		"$(deltas s0 s1 drop_bad_duplicate drop_out_of_window drop_bad_length)" "changed: $(cnt_changed s0 s1)"
}
CASE="a)"
if xfer_start; then
	snap_first "$RC_DEV_B"
	a_variant "4 KiB just below rcv_nxt (PSNs rcv_nxt-16..rcv_nxt-1)" --len 4096 --pmtu-shift 12 \
		--psn-rel -1 --psn-step -1 --psn-span 16
	# beyond 256 segments: the parser's bad_length, so sent with --force
	a_variant "2 GiB - 4 KiB ending just below rcv_nxt" --len $((2 ** 31 - 4096)) --pmtu-shift 12 \
		--psn-rel -$((2 ** 19 + 1)) --force
	a_variant "2 GiB - 4 KiB from rcv_nxt-2" --len $((2 ** 31 - 4096)) --pmtu-shift 12 --psn-rel -2 \
		--force
	a_variant "4 KiB at rcv_nxt - 2^30" --len 4096 --pmtu-shift 12 --psn-rel -$((2 ** 30))
	qp_alive "$RC_DEV_B" hostB
	xfer_end
	expect "drop_bad_duplicate counts the duplicates nobody asked for" \
		"$(dsum b0 b1 drop_bad_duplicate)" -ge 1 "$(deltas b0 b1 drop_bad_duplicate)"
else
	xfer_end
fi

# --- b) READ_REQ of 2^23 PSNs ------------------------------------------------------------
# b_variant DESC PSN-REL: 10 READ_REQs of 2^31 - 256 bytes in 256-byte
# segments, at once; each must cost the receiver next to nothing
B_STALL_MS=150
b_variant() {
	local desc=$1
	inject "$TOPO_A" --dst "$TOPO_B_IP" --op read_req --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" \
		--rkey "$BAD_RKEY" --va 0x10000 --len $((2 ** 31 - 256)) --pmtu-shift 8 --count 10 \
		--force "${LV[@]}" --psn-rel "$2"
	snap "$RC_DEV_B"
	inj_ok "$desc" || return
	inj_diag "$desc"
	expect "2^23-PSN READ_REQ $desc: every one dropped as bad length" \
		"$(dsum s0 s1 drop_bad_length)" -ge "${INJ[sent]}" \
		"$(deltas s0 s1 drop_bad_length)" "changed: $(cnt_changed s0 s1)"
	# the receive path runs in the sending syscall's softirq (veth): a
	# long loop there shows in the injector's own send time
	expect "2^23-PSN READ_REQ $desc: no softirq stall, the longest send in ms" \
		"$((${INJ[max_send_us]:-0} / 1000))" -le "$B_STALL_MS"
	# shellcheck disable=SC2034 # filled through a nameref
	local -A q=()
	qp_live q "$RC_DEV_B"
	t_diag "b) hostB's QP after: state ${q[state]:-gone} rcv_nxt ${q[rcv_nxt]:-?} rd_res ${q[rd_res]:-?} txq_len ${q[txq_len]:-?}"
}
CASE="b)"
if xfer_start; then
	snap_first "$RC_DEV_B"
	b_variant "starting at rcv_nxt" 0
	b_variant "ending inside the window" -$((2 ** 23 - 512))
	b_variant "wholly below the window" -$((2 ** 24))
	qp_alive "$RC_DEV_B" hostB
	xfer_end
	expect "the transfer took no longer than the baseline + 50 % + 5 s (ms)" \
		"$X_MS" -le $((BASE_MS * 3 / 2 + 5000))
else
	xfer_end
fi

# --- c) stale and far ACKs to the requester ------------------------------------------------
CASE="c)"
if xfer_start; then
	# from hostB's address to hostA's QP, cumulative PSN 1..64 below the
	# newest ACK hostB sent (so below hostA's snd_una, within 1024)
	snap_first "$RC_DEV_A"
	inject "$TOPO_B" --dst "$TOPO_A_IP" --op ack --dqpn "${QA[lqpn]}" --sqpn "${QA[rqpn]}" \
		"${LP[@]}" --psn-rel -1 --psn-step -1 --psn-span 64 \
		--ack-credit 1 --ack-ce 65535 --ack-dgram 64 --pmtu-shift 13 --ack-flags ce,dup,ooo \
		--ack-ts-echo-ago 1000000000 --ack-nak-rel 1 --count 200 --interval 5000
	snap "$RC_DEV_A"
	if inj_ok "poisoned stale ACKs"; then
		inj_diag "poisoned stale ACKs"
		expect "poisoned stale ACKs: counted as stale_acks (at least 90 %)" \
			"$(dsum s0 s1 stale_acks)" -ge $((INJ[sent] * 9 / 10)) \
			"$(deltas s0 s1 stale_acks)" "changed: $(cnt_changed s0 s1)"
		# their CE count of 65535 must not cut hostA's window.  On a slow
		# guest hostA may not yet have taken the ACK the injector learnt
		# from: a "stale" ACK then acks new PSNs and is rightly taken
		# (ecn_echoes_received moves by 65535 for each).  Those may cut
		# once, and once more per 16 (the old code cut on 128 of 200).
		acc=$(($(dsum s0 s1 ecn_echoes_received) / 65535))
		expect "poisoned stale ACKs: window_cuts_ecn no more than the whole baseline's (+ $acc taken as new)" \
			"$(dsum s0 s1 window_cuts_ecn)" -le "$((BASE_ECNCUT + (acc > 0 ? 1 + acc / 16 : 0)))" \
			"$(deltas s0 s1 window_cuts_ecn ecn_echoes_received cc_window_cuts)"
	fi
	# OOO alone: poisoned credit and CE counts would throttle the resends
	inject "$TOPO_B" --dst "$TOPO_A_IP" --op ack --dqpn "${QA[lqpn]}" --sqpn "${QA[rqpn]}" \
		"${LP[@]}" --psn-rel -1 --psn-step -1 --psn-span 64 --pmtu-shift 13 \
		--ack-dgram 8972 --ack-flags ooo --count 200 --interval 5000
	snap "$RC_DEV_A"
	if inj_ok "stale ACKs with OOO"; then
		inj_diag "stale ACKs with OOO"
		expect "stale ACKs with OOO: counted as stale_acks (at least 90 %)" \
			"$(dsum s0 s1 stale_acks)" -ge $((INJ[sent] * 9 / 10)) "$(deltas s0 s1 stale_acks)"
		# go-back-N per ACK resends the window (tens of packets) each time
		expect "stale ACKs with OOO: hostA resent no window per ACK: retransmitted_packets <= 50 + 1/4 per ACK + a fifth of the baseline's" \
			"$(dsum s0 s1 retransmitted_packets)" -le $((50 + INJ[sent] / 4 + BASE_RETX / 5)) \
			"changed: $(cnt_changed s0 s1)"
	fi
	inject "$TOPO_B" --dst "$TOPO_A_IP" --op ack --dqpn "${QA[lqpn]}" --sqpn "${QA[rqpn]}" \
		"${LP[@]}" --psn-rel -$((2 ** 30)) --count 50 --interval 1000
	snap "$RC_DEV_A"
	if inj_ok "ACKs at snd_una - 2^30"; then
		inj_diag "ACKs at snd_una - 2^30"
		expect "ACKs at snd_una - 2^30: every one dropped as bad_ack" \
			"$(dsum s0 s1 drop_bad_ack)" -ge "${INJ[sent]}" "changed: $(cnt_changed s0 s1)"
	fi
	qp_alive "$RC_DEV_A" hostA
	eval "$Q_AFTER"
	# shellcheck disable=SC2154 # q comes from Q_AFTER
	t_diag "c) hostA after: peer_credit ${q[peer_credit]:-?} cwnd ${q[cwnd]:-?} srtt_us ${q[srtt_us]:-?} pace_gap_us ${q[pace_gap_us]:-?} seg_peer_max ${q[seg_peer_max]:-?} peer_dgram ${q[peer_dgram]:-?}"
	xfer_end
	expect "hostA's retransmitted_packets over the transfer <= 2 x baseline + 50 + 1/4 per injected ACK" \
		"$(dsum a0 a1 retransmitted_packets)" -le $((2 * BASE_RETX + 50 + 100)) \
		"$(deltas a0 a1 retransmitted_packets rack_losses tail_loss_probes rto_events spurious_retransmits tx_packets)"
else
	xfer_end
fi

# --- d) CE and MRC_F_CREDIT beyond the window ----------------------------------------------
CASE="d)"
if xfer_start; then
	snap_first "$RC_DEV_B"
	inject "$TOPO_A" --raw --src "$TOPO_A_IP" --ce --dst "$TOPO_B_IP" --op write \
		--dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" --rkey "$BAD_RKEY" --va 0x10000 --len 64 \
		"${LV[@]}" --psn-rel 100000 --count 400 --interval 500
	snap "$RC_DEV_B"
	if inj_ok "CE-marked WRITEs beyond the window"; then
		inj_diag "CE-marked WRITEs beyond the window"
		expect "CE-marked WRITEs beyond the window: dropped as out of window" \
			"$(dsum s0 s1 drop_out_of_window)" -ge "${INJ[sent]}" \
			"changed: $(cnt_changed s0 s1)"
		expect "CE-marked WRITEs beyond the window: credit_pool_ce_cuts no more than the baseline's" \
			"$(dsum s0 s1 credit_pool_ce_cuts)" -le "$BASE_CECUT" \
			"changed: $(cnt_changed s0 s1)"
		t_diag "d) CE-marked: $(deltas s0 s1 ecn_marks_received credit_pool_ce_cuts credit_pool_cuts)"
	fi
	inject "$TOPO_A" --dst "$TOPO_B_IP" --op write --add-flags credit \
		--dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" --rkey "$BAD_RKEY" --va 0x10000 --len 64 \
		"${LV[@]}" --psn-rel 100000 --count 200 --interval 2000
	snap "$RC_DEV_B"
	if inj_ok "MRC_F_CREDIT WRITEs beyond the window"; then
		inj_diag "MRC_F_CREDIT WRITEs beyond the window"
		expect "MRC_F_CREDIT WRITEs beyond the window: dropped as out of window" \
			"$(dsum s0 s1 drop_out_of_window)" -ge "${INJ[sent]}" "changed: $(cnt_changed s0 s1)"
		expect "MRC_F_CREDIT WRITEs beyond the window: credit_full_packets within the baseline's + half of them" \
			"$(dsum s0 s1 credit_full_packets)" -le $((BASE_FULL + ${INJ[sent]} / 2)) \
			"changed: $(cnt_changed s0 s1)"
	fi
	qp_alive "$RC_DEV_B" hostB
	xfer_end
else
	xfer_end
fi

# --- e) wrong QPNs, spoofed source, truncated and garbage datagrams ------------------------
# e_variant DESC COUNTERS -- MRC_INJECT-ARGS...: the sum of COUNTERS
# (comma list) rises by at least what was sent
e_variant() {
	local desc=$1 cnts=$2
	shift 3
	inject "$TOPO_A" --dst "$TOPO_B_IP" "$@"
	snap "$RC_DEV_B"
	inj_ok "$desc" || return 1
	inj_diag "$desc"
	# shellcheck disable=SC2086 # a list of counter names
	expect "$desc: dropped as ${cnts//,/ or }" "$(dsum s0 s1 ${cnts//,/ })" -ge "${INJ[sent]}" \
		"$(deltas s0 s1 ${cnts//,/ })" "changed: $(cnt_changed s0 s1)"
}
# e_parse DESC MRC_INJECT-ARGS...: every reason mrc_wire_parse gave in the
# injector rises by as much in hostB's drop_* counters
PARSE_DROPS=(truncated bad_version bad_opcode bad_hdr_len bad_pay_len bad_field bad_pmtu bad_length bad_sack)
e_parse() {
	local desc=$1 r bad='' all=''
	shift
	inject "$TOPO_A" --dst "$TOPO_B_IP" "$@"
	snap "$RC_DEV_B"
	inj_ok "$desc" || return 1
	inj_diag "$desc"
	for r in "${PARSE_DROPS[@]}"; do
		[ -n "${INJ[reject_$r]:-}" ] || continue
		all+=" $r ${INJ[reject_$r]}/$(dsum s0 s1 "drop_$r")"
		[ "$(dsum s0 s1 "drop_$r")" -ge "${INJ[reject_$r]}" ] || bad+=" $r"
	done
	if [ -z "$bad" ] && [ "${INJ[parse_ok]:-1}" = 0 ]; then
		t_ok "$CASE $desc: each counted by the reason mrc_wire_parse gives (sent/counted:$all)"
	else
		t_fail "$CASE $desc: each counted by the reason mrc_wire_parse gives" \
			"short:$bad; sent/counted:$all; parsed fine ${INJ[parse_ok]:-?}"
	fi
}
CASE="e)"
if xfer_start $((30 * ${METAROCE_VM_TIMEOUT_FACTOR:-1})); then
	snap_first "$RC_DEV_B"
	used=" $(qp_numbers "$RC_DEV_B") "
	noqp=$(((QB[lqpn] + 0x1357) % 0xfff000 + 2))
	while [[ $used == *" $noqp "* ]]; do noqp=$((noqp + 1)); done
	BAD_SQPN=$(((QB[rqpn] ^ 0x5a5a5) & 0xffffff))
	WR=(--op write --rkey "$BAD_RKEY" --va 0x10000 --len 64 --count 50 --interval 1000)
	e_variant "WRITEs to QPN $noqp (none)" drop_no_qp -- \
		"${WR[@]}" --dqpn "$noqp" --sqpn "${QB[rqpn]}" --psn "${QB[rcv_nxt]:-${QB[rq-psn]:-0}}"
	e_variant "WRITEs from the wrong source QPN $BAD_SQPN" drop_bad_source -- \
		"${WR[@]}" --dqpn "${QB[lqpn]}" --sqpn "$BAD_SQPN" --psn "${QB[rcv_nxt]:-${QB[rq-psn]:-0}}"
	e_variant "WRITEs at rcv_nxt from a spoofed 10.0.0.77" drop_bad_source -- \
		"${WR[@]}" --raw --src 10.0.0.77 --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" \
		"${LV[@]}" --psn-rel 0
	e_variant "READ_REQs cut to 40 bytes" drop_truncated -- \
		--op read_req --rkey "$BAD_RKEY" --len 4096 --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" \
		"${LV[@]}" --psn-rel 0 --truncate 40 --count 20
	e_variant "WRITEs cut to 12 bytes" drop_truncated -- \
		"${WR[@]}" --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" "${LV[@]}" --psn-rel 0 --truncate 12
	e_parse "garbage READ_REQs (random damage)" --op read_req --rkey "$BAD_RKEY" --len 4096 \
		--dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" "${LV[@]}" --psn-rel 0 \
		--garbage --seed 7 --count 150 --interval 500
	e_parse "garbage ACKs (random damage)" --op ack --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" \
		--psn "${QB[snd_nxt]:-0}" --sack 0x5 --garbage --seed 8 --count 150 --interval 500
	inject "$TOPO_A" --dst "$TOPO_B_IP" --raw --udp-csum bad "${WR[@]}" --dqpn "$noqp" --sqpn 1 --psn 0
	snap "$RC_DEV_B"
	if inj_ok "bad UDP checksum"; then
		expect "WRITEs with a bad UDP checksum never reach the driver: drop_no_qp" \
			"$(dsum s0 s1 drop_no_qp)" -le 0 "changed: $(cnt_changed s0 s1)"
	fi
	qp_alive "$RC_DEV_B" hostB
	xfer_end
else
	xfer_end
fi

for c in drop_bad_duplicate stale_acks; do
	cnt_has b1 "$c" || t_diag "this driver has no counter $c"
done
t_summary

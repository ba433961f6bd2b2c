#!/bin/bash
# Multipath (issue 6): one RC QP across an ECMP fabric of 4 parallel links,
# 25 Mbit/s each, drop-tail (topo_ecmp: hostA -> rA == l1..l4 == rB ->
# hostB, L4-hash ECMP both ways). mrc_verify (every byte and completion
# checked) runs hostA -> hostB (--dir c2s, one QP) with its control
# connection on the management link.
#
# Per-link shares are rA's tx bytes on l1..l4 (the data direction), from a
# sampler in rA. Each case also captures the QP's first UDP source ports
# at rA and asks rA's FIB which link each hashes to ("ports at the start"):
# with 16 ports over 4 links the hash alone is rarely even (3-5 ports per
# link in only ~21 % of draws), so even shares need the path engine.
#  1a. path_aware=0: round robin, link shares follow the ports (+-25 %)
#  1b. default: all 4 links used, each within +-25 % of even from 3 s
#      in (a draw that gives a link none of the ports takes a moment to
#      even out); rA pings rB across each link meanwhile, so a miss shows
#      whether the sender avoided a link that was slower.  Skipped when
#      the sender fills under 40 % of the fabric (a debug kernel's guest
#      sends ~9 Mbit/s): without queues each entropy sends alike and the
#      links' shares follow the port hash, nothing to even out
#  2a. the busiest link blackholed (100 % loss, both ways) mid-transfer:
#      completes verified; <= 20 % (even: 25 %) of the bytes on it from
#      1 s after
#  2b. the busiest link down (both ends) mid-transfer: completes verified,
#      the routers stop using it
#  3. the busiest link at 5 % loss mid-transfer, the QP sending 40 Mbit/s
#     (the other links have room, the sender runs dry between messages):
#     its share of the bytes from 1 s after is at most 85 % of its share
#     before.  A sender that never runs dry (every link full) keeps the
#     lossy link (it still delivers 95 %); make bench measures that
#     goodput.  Skipped if the link had carried nothing before the loss.
#  4. ordered mode (module parameter `ordered`, read at link add): exactly
#     one link carries the data (others <= 1 %)
#  rxe. rxe attached to the same fabric (ecmp_rxe_attach, for benchmarks):
#     ib_write_bw crosses rA
# Checks that need path_aware / ordered are TAP TODO while the module has
# no such parameter; 4 is TAP TODO when it misses.
# vm-test-timeout: 420
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap 'ecmp_fast_stop; topo_cleanup' EXIT

# Knobs (vm-run passes MRC_* into the guest): MRC_MP_CASES (default all:
# "1a 1b 2a 2b 3 4 rxe"),
# MRC_MP_ECN (a CE threshold for the links, e.g. 2ms; default none:
# drop-tail), MRC_MP_RATE (25mbit).
NL=4 DPORT=4792
CASES=${MRC_MP_CASES:-1a 1b 2a 2b 3 4 rxe}
ECN=${MRC_MP_ECN:-none} RATE=${MRC_MP_RATE:-25mbit}
RATE_MBIT=${RATE%mbit}
[[ $RATE_MBIT =~ ^[0-9]+$ ]] || RATE_MBIT=0 # other units: no load check
ECN_OPT=(--ecn "$ECN")
[ "$ECN" != none ] || ECN_OPT=()
rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools; then t_summary; exit 1; fi
modprobe rdma_metaroce
HAVE_PATH_AWARE=0 HAVE_ORDERED=0
rc_param path_aware >/dev/null && HAVE_PATH_AWARE=1
rc_param ordered >/dev/null && HAVE_ORDERED=1
t_diag "module parameters: path_aware $(rc_param path_aware || echo absent), ordered $(rc_param ordered || echo absent), entropies $(rc_param entropies)"
if ! rc_ecmp_setup --mtu 9000 --links $NL --rate "$RATE" --limit 100 "${ECN_OPT[@]}" >/tmp/mp_setup.log 2>&1; then
	t_fail "ECMP fabric ($NL x $RATE) with metaroce devices" "$(cat /tmp/mp_setup.log)"
	t_summary
	exit 1
fi
t_ok "ECMP fabric ($NL x $RATE, ECN marking: $ECN) with metaroce devices (GID $GID_A / $GID_B)"

tcpdump --version >/dev/null 2>&1 # warm the 9p cache: the capture must start fast
# mid-transfer link changes through running tc/ip batches (no exec)
if ecmp_fast_start; then t_ok "tc and ip batches run in the routers"; else t_fail "tc and ip batches run in the routers"; fi
# The fabric hashes on the UDP source port: 64 ports spread over all links.
mapfile -t probe < <(ecmp_port_links "$DPORT" $(seq 49152 97 55400))
declare -A seen=()
for l in "${probe[@]}"; do seen[$l]=1; done
if [ "${#seen[@]}" -eq $NL ]; then
	t_ok "rA's ECMP hash spreads UDP source ports over all $NL links"
else
	t_fail "rA's ECMP hash spreads UDP source ports over all $NL links" "links seen: ${!seen[*]}"
fi

# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1
NEWCTR="path_switches entropies_retired entropies_rebalanced path_delay_skips path_losses_undone ecn_marks_received ecn_echoes_received window_cuts_ecn credits_granted credit_waits"
MP_OPS=--ops=write,write_imm,send,send_imm
MP_ARGS=(--dir c2s "$MP_OPS" -q 1 -s 256K)
MP_XARGS=() # a case's own mrc_verify options

# mp_run LOG DUR AT HOOK: one transfer of DUR seconds, its streams started
# at a set wall-clock time (mrc_verify --start-at, MP_LEAD_US ahead for the
# QP setup). AT seconds after that start HOOK runs with the link that
# carried the most bytes so far as $1; byte shares count from 1 s after the
# hook (time to react) to the end (AT 0: no hook, the whole transfer).
# A background sampler in rA times the counters, the port capture runs in
# the background and the waits are builtins: execs are slow and late on a
# busy guest.
# Sets MP_RC, MP_OK, MP_PORTS (distinct source ports seen at the start),
# MP_NP (ports per link; MP_NPORTS in all), MP_BY (bytes per link), MP_TOT,
# MP_CPU (guest CPU busy %), MP_WIN (measured seconds), MP_MEAS (1: at
# least 2 MB measured), MP_THOOK (when the hook ran), MP_PRE (the hooked
# link's share of the bytes before the hook, basis points).
MP_SETTLE_US=1000000 MP_LEAD_US=5000000
MP_LOSSY_MAX=85 # % of the lossy link's share before the loss
MP_LOADED=40    # % of the fabric 1b's sender must fill for its evenness check
exec {MP_SLEEPFD}<> <(:)
sleep_until() { # EPOCH-MICROSECONDS, with a builtin (read -t on a silent pipe)
	local d=$(($1 - ${EPOCHREALTIME/./}))
	[ "$d" -gt 0 ] || return 0
	read -r -t "$((d / 1000000)).$(printf '%06d' $((d % 1000000)))" -u "$MP_SLEEPFD"
	return 0
}
us2epoch() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }

mp_run() {
	local log=$1 dur=$2 at=$3 hook=$4 pid cpid start i l from to dl hot
	MP_MEAS=0 MP_THOOK='' MP_THOOK_END='' MP_PRE=0 MP_RC=0 MP_OK=0 MP_PORTS='' MP_NPORTS=0 MP_NP=() MP_BY=() MP_TOT=0 MP_CPU=0 MP_WIN=0
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	ecmp_sample_start "$log.samples"
	start=$((${EPOCHREALTIME/./} + MP_LEAD_US))
	rc_verify --timeout 150 --log "$log" "${MP_ARGS[@]}" "${MP_XARGS[@]}" -D "$dur" --start-at "$(us2epoch "$start")" &
	pid=$!
	from=$start
	sleep_until "$start"
	# the QP's source ports, from its first packets at rA
	in_host "$ECMP_RA" timeout 20 tcpdump -l -i ha -nn -c 100 \
		"udp and dst port $DPORT and src host $ECMP_A_IP" >"$log.pcap" 2>/dev/null &
	cpid=$!
	if [ "$at" != 0 ]; then
		sleep_until $((start + at * 1000000))
		if kill -0 "$pid" 2>/dev/null; then
			read -ra dl <<<"$(ecmp_sample_delta "$log.samples" "$start" "$EPOCHREALTIME")"
			hot=1
			for ((i = 2; i <= NL; i++)); do [ "${dl[i - 1]:-0}" -le "${dl[hot - 1]:-0}" ] || hot=$i; done
			local pt=0
			for ((i = 1; i <= NL; i++)); do pt=$((pt + ${dl[i - 1]:-0})); done
			MP_PRE=$(bp "${dl[hot - 1]:-0}" "$pt")
			MP_THOOK=$EPOCHREALTIME
			$hook "$hot"
			MP_THOOK_END=$EPOCHREALTIME
			from=$((${MP_THOOK_END/./} + MP_SETTLE_US))
		else
			t_diag "$log: transfer ended before the hook at ${at}s"
		fi
	fi
	wait "$pid" || MP_RC=$?
	to=${EPOCHREALTIME/./}
	ecmp_sample_stop
	kill "$cpid" 2>/dev/null
	wait "$cpid" 2>/dev/null
	MP_WIN=$(((to - from) / 1000000))
	read -ra dl <<<"$(ecmp_sample_delta "$log.samples" "$from" "$to")"
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	for ((i = 1; i <= NL; i++)); do
		MP_BY[i]=${dl[i - 1]:-0}
		MP_TOT=$((MP_TOT + MP_BY[i]))
	done
	MP_CPU=${dl[NL]:-?}
	declare -A ps=()
	while read -r l; do
		[[ $l =~ IP\ [0-9.]+\.([0-9]+)\ \> ]] && ps[${BASH_REMATCH[1]}]=1
	done <"$log.pcap"
	MP_PORTS="${!ps[*]}" MP_NPORTS=${#ps[@]}
	for ((i = 1; i <= NL; i++)); do MP_NP[i]=0; done
	if [ -n "$MP_PORTS" ]; then
		# shellcheck disable=SC2086 # a list of ports
		for l in $(ecmp_port_links "$DPORT" $MP_PORTS); do MP_NP[l]=$((MP_NP[l] + 1)); done
	fi
	if [ "$MP_RC" -eq 0 ] && [ "$(rc_result "$log.cli" status)" = PASS ] &&
		[ "$(rc_result "$log.srv" status)" = PASS ] &&
		[ "$(rc_delta a0 a1 retry_exceeded)" -eq 0 ]; then
		MP_OK=1
	fi
	# a share needs something to share: >= 2 MB measured
	if [ "$MP_TOT" -ge 2000000 ]; then
		MP_MEAS=1
	else
		t_fail "$log: a measurement window (>= 2 MB after the event)" "$MP_TOT bytes in ${MP_WIN}s" "$(grep -h -E 'late|running|ERROR' "$log.cli" | head -n 4)"
		MP_TOT=1
	fi
}

# Shares in basis points (1/100 %), integer shell arithmetic (an awk per
# number costs ~0.3 s under TCG). bp A B: A / B; sbp I: link I's share of
# the bytes; epb I: its share of the ports; pc BP: "12.3%"
bp() { echo $(($2 ? (10000 * $1 + $2 / 2) / $2 : 0)); }
sbp() { bp "${MP_BY[$1]}" "$MP_TOT"; }
ebp() { bp "${MP_NP[$1]}" "$MP_NPORTS"; }
pc() { printf '%d.%d%%' $(($1 / 100)) $(($1 % 100 / 10)); }
ds() { # tenths -> "1.2"
	local v=$1 sg=''
	[ "$v" -ge 0 ] || sg=- v=$((-v))
	printf '%s%d.%d' "$sg" $((v / 10)) $((v % 10))
}

# mp_report DESC: diagnostics of the last run, and its verified-data check
mp_report() {
	local desc=$1 i s='' n='' c k
	for ((i = 1; i <= NL; i++)); do
		s+=" l$i $(pc "$(sbp "$i")")"
		n+=" ${MP_NP[i]}"
	done
	local t0 t1 at=''
	if t0=$(rc_result /tmp/mp.cli start_epoch) && t1=$(rc_result /tmp/mp.cli end_epoch); then
		t0=${t0/./}000 t1=${t1/./}000
		at=" (streams $(ds $(((t1 - t0) / 100000))) s"
		[ -z "$MP_THOOK" ] || at+=", event at $(ds $(((${MP_THOOK/./} - t0) / 100000)))-$(ds $(((${MP_THOOK_END/./} - t0) / 100000))) s"
		at+=")"
	fi
	t_diag "$desc$at: $(rc_result /tmp/mp.cli goodput_mbps) Mbit/s verified; bytes per link:$s (of $((MP_TOT / 1000)) kB in ${MP_WIN}s); ports per link at the start:$n (of $MP_NPORTS); guest CPU busy $MP_CPU %"
	c="A: tx $(rc_delta a0 a1 tx_packets) retx $(rc_delta a0 a1 retransmitted_packets) rto $(rc_delta a0 a1 rto_events) B: ooo $(rc_delta b0 b1 out_of_order_packets) dup $(rc_delta b0 b1 duplicate_packets)"
	for k in $NEWCTR; do
		[ -z "${a1[$k]:-}" ] || c+=" $k A $(rc_delta a0 a1 "$k") B $(rc_delta b0 b1 "$k")"
	done
	t_diag "$desc: $c"
	if [ "$MP_OK" = 1 ]; then
		t_ok "$desc: data verified, no error completion ($(rc_result /tmp/mp.cli ops) ops)"
	else
		t_fail "$desc: data verified, no error completion" \
			"exit $MP_RC, client $(rc_result /tmp/mp.cli status || echo none), server $(rc_result /tmp/mp.srv status || echo none), retry_exceeded $(rc_delta a0 a1 retry_exceeded)" \
			"$(grep -h -E 'ERROR|FATAL' /tmp/mp.cli /tmp/mp.srv | head -n 8)" "$(tail -n 3 /tmp/mp.cli)"
	fi
}

# todo_or_fail HAVE DESC WHY DETAILS: a check that needs a missing feature
todo_or_fail() {
	if [ "$1" = 1 ]; then t_fail "$2" "$4"; else t_todo "$2" "$3" "$4"; fi
}

# --- 1. one QP, clean fabric ----------------------------------------------------------
# 1a. Plain round robin (path_aware=0, read at QP creation): the QP keeps
# its ports, so each link's share must follow its share of the ports.
case_1a() {
	local PA bad i s e d
	[ "$HAVE_PATH_AWARE" = 1 ] || return 0
	PA=$(rc_param path_aware)
	rc_param path_aware 0
	mp_run /tmp/mp 6 0 :
	rc_param path_aware "$PA"
	mp_report "1a. clean fabric, path_aware=0 (round robin)"
	bad=''
	[ "$MP_NPORTS" -gt 0 ] || bad="no ports captured"
	[ "$MP_MEAS" = 1 ] || bad="no measurement"
	for ((i = 1; i <= NL; i++)); do
		s=$(sbp "$i") e=$(ebp "$i") d=$(($(sbp "$i") - $(ebp "$i")))
		if [ "${MP_NP[i]}" -eq 0 ]; then
			[ "$s" -le 200 ] || bad+=" l$i $(pc "$s") (no ports)"
		elif [ $((${d#-} * 100)) -gt $((25 * e)) ]; then
			bad+=" l$i $(pc "$s") vs ports $(pc "$e")"
		fi
	done
	if [ -z "$bad" ]; then
		t_ok "1a. round robin sprays evenly over the QP's $MP_NPORTS ports: each link's share within +-25 % of its share of the ports"
	else
		t_fail "1a. round robin sprays evenly over the QP's ports (link shares within +-25 % of port shares)" "$bad"
	fi
}

# 1b. Default (path-aware): all links, evenly. Without path awareness the
# ECMP hash of 16 ports decides, rarely evenly (see the top).
# mp_ping_start: from the hook on, rA pings rB across each link (the same
# queues as the data), 5 a second; mp_ping_report prints min/avg/max ms.
MP_PING_PIDS=()
mp_ping_start() {
	local i
	MP_PING_PIDS=()
	for ((i = 1; i <= NL; i++)); do
		in_host "$ECMP_RA" ping -q -n -i 0.2 -w 12 "10.3.$i.2" >"/tmp/mp.ping$i" 2>&1 &
		MP_PING_PIDS+=($!)
	done
}
mp_ping_report() {
	local i r out=''
	wait "${MP_PING_PIDS[@]}"
	for ((i = 1; i <= NL; i++)); do
		r=$(sed -n 's|^rtt min/avg/max/mdev = \([0-9.]*\)/\([0-9.]*\)/\([0-9.]*\)/.*|\1/\2/\3|p' "/tmp/mp.ping$i")
		out+=" l$i ${r:-none}"
	done
	t_diag "$1: ping rA -> rB per link, ms min/avg/max:$out"
}

# mp_retire_start / mp_retire_report WHAT: the QP's retired entropies
# (tracepoint metaroce:mrc_path, in a tracefs instance of its own) per
# link and reason, so that an uneven share shows which rule took a
# link's ports away.
MP_TR=/sys/kernel/tracing
MP_TRI=$MP_TR/instances/mrc40
mp_retire_start() {
	[ -d "$MP_TR/events" ] || mount -t tracefs nodev "$MP_TR" 2>/dev/null
	rmdir "$MP_TRI" 2>/dev/null
	mkdir "$MP_TRI" 2>/dev/null || return 0
	echo 'event == 2' >"$MP_TRI/events/metaroce/mrc_path/filter"
	echo 1 >"$MP_TRI/events/metaroce/mrc_path/enable"
}
mp_retire_report() {
	local ports=() whys=() links l i out=''
	[ -d "$MP_TRI" ] || return 0
	echo 0 >"$MP_TRI/events/metaroce/mrc_path/enable"
	# The consuming reader, from a child: three runs of several 1b cases
	# in one guest hung for minutes in the kernel (soft lockup, task
	# bash) right where the test's shell read the instance's "trace".
	timeout 3 cat "$MP_TRI/trace_pipe" >/tmp/mp_retired 2>/dev/null
	while read -r l; do
		[[ $l =~ entropy=([0-9]+)\ why=([a-z]+) ]] || continue
		ports+=("${BASH_REMATCH[1]}") whys+=("${BASH_REMATCH[2]}")
	done </tmp/mp_retired
	rmdir "$MP_TRI" 2>/dev/null
	[ "${#ports[@]}" -gt 0 ] || { t_diag "$1: no entropy retired"; return 0; }
	declare -A cnt=()
	mapfile -t links < <(ecmp_port_links "$DPORT" "${ports[@]}")
	for i in "${!ports[@]}"; do
		l="l${links[i]:-?} ${whys[i]}"
		cnt[$l]=$((${cnt[$l]:-0} + 1))
	done
	for l in $(printf '%s\n' "${!cnt[@]}" | sort | tr ' ' :); do out+=" ${l/:/ } ${cnt[${l/:/ }]},"; done
	t_diag "$1: entropies retired per link and reason:${out%,}"
}

case_1b() {
	local uneven_ports=0 uneven='' used=0 empty=0 i s e gp
	# shares from 3 s in (a no-op "event" at 2 s, then the settle time):
	# from a draw of 8 4 4 0 ports one run had l4 at 17.2 % over all 14 s
	mp_retire_start
	mp_run /tmp/mp 17 2 mp_ping_start
	mp_report "1b. clean fabric (shares from 3 s in)"
	mp_retire_report "1b"
	mp_ping_report "1b"
	[ "$MP_MEAS" = 1 ] || return 0
	for ((i = 1; i <= NL; i++)); do
		s=$(sbp "$i") e=$(ebp "$i")
		[ "${MP_NP[i]}" -gt 0 ] || empty=1
		[ "$e" -ge 1875 ] && [ "$e" -le 3125 ] || uneven_ports=1
		[ "$s" -ge 1875 ] && [ "$s" -le 3125 ] || uneven+=" l$i $(pc "$s")"
		[ "$s" -lt 500 ] || used=$((used + 1))
	done
	# An uneven draw (a link with few or none of the QP's ports) must be
	# evened out by the sender: delay skips and balance redraws.
	[ "$uneven_ports" = 0 ] || t_diag "1b. the ECMP hash gave the links ${MP_NP[*]} of the QP's ports at the start"
	if [ "$used" -eq $NL ]; then
		t_ok "1b. a single QP uses all $NL links (each >= 5 % of the bytes)"
	elif [ "$empty" = 1 ]; then
		todo_or_fail "$HAVE_PATH_AWARE" "1b. a single QP uses all $NL links" \
			"the ECMP hash put none of the QP's ports on a link; needs path-aware steering (issue 6)" "$used links >= 5 %"
	else
		t_fail "1b. a single QP uses all $NL links" "$used links >= 5 %"
	fi
	gp=$(rc_result /tmp/mp.cli goodput_mbps) gp=${gp%.*}
	if [ -z "$uneven" ]; then
		t_ok "1b. per-link bytes within +-25 % of even (18.75-31.25 %)"
	elif [ "${gp:-0}" -lt $((MP_LOADED * NL * RATE_MBIT / 100)) ]; then
		# links without queues give the sender nothing to even out
		# (a debug kernel's guest sends ~9 Mbit/s): each entropy sends
		# alike and the links' shares follow the port hash
		t_skip "1b. per-link bytes within +-25 % of even" \
			"the sender did not load the links (${gp:-?} Mbit/s of $((NL * RATE_MBIT)), guest CPU busy $MP_CPU %; bytes:$uneven)"
	else
		todo_or_fail "$HAVE_PATH_AWARE" "1b. per-link bytes within +-25 % of even" \
			"spraying ignores path state until path_aware (issue 6)" "ports at the start ${MP_NP[*]}, bytes:$uneven"
	fi
}

# --- 2. a link fails mid-transfer -------------------------------------------------------
# The busiest link so far fails 3 s into a 12 s (10 s) transfer. A blackhole is
# invisible to the routers: only the sender can move away (fresh ports
# that land on the dead link again must be dropped quickly too).
blackhole() { BH=$1; ecmp_link_loss "$1" 100; }
case_2a() {
	local drops s
	mp_run /tmp/mp 12 3 blackhole
	drops=$(ecmp_link_drops "$BH" ab)
	ecmp_link_loss "$BH" 0
	mp_report "2a. l$BH blackholed (100 % loss both ways)"
	t_diag "2a. l$BH dropped $drops packets towards hostB"
	[ "$MP_MEAS" = 1 ] || return 0
	s=$(sbp "$BH")
	# fresh ports keep landing on the dead link (1 in 4) until their
	# losses retire them: measured 1-15 %; round robin keeps >= 25 % on
	# the busiest link
	if [ "$s" -le 2000 ]; then
		t_ok "2a. traffic leaves the blackholed link (l$BH $(pc "$s") <= 20 % of the bytes from 1 s after)"
	else
		todo_or_fail "$HAVE_PATH_AWARE" "2a. traffic leaves the blackholed link (<= 20 % of the bytes from 1 s after)" \
			"spraying ignores path state until path_aware (issue 6)" "l$BH $(pc "$s")"
	fi
}

# A link that goes down is seen by the routers: ECMP rehashes around it.
linkdown() { LD=$1; ecmp_link_down "$1"; }
case_2b() {
	mp_run /tmp/mp 10 3 linkdown
	ecmp_link_up "$LD"
	mp_report "2b. l$LD down (both ends)"
	[ "$MP_MEAS" = 1 ] || return 0
	if [ "$(sbp "$LD")" -le 100 ]; then
		t_ok "2b. the routers stop using l$LD ($(pc "$(sbp "$LD")") of the bytes after it went down)"
	else
		t_fail "2b. the routers stop using l$LD" "${MP_BY[LD]} bytes ($(pc "$(sbp "$LD")")) after the link went down"
	fi
}

# --- 3. one lossy link -----------------------------------------------------------
lossy() { LS=$1; ecmp_link_loss "$1" 5; }
case_3() {
	local drops s
	MP_XARGS=(--rate 40)
	mp_run /tmp/mp 16 2 lossy
	MP_XARGS=()
	drops=$(ecmp_link_drops "$LS" ab)
	ecmp_link_loss "$LS" 0
	mp_report "3. l$LS at 5 % loss (both ways)"
	t_diag "3. l$LS dropped $drops packets towards hostB"
	[ "$MP_MEAS" = 1 ] || return 0
	s=$(sbp "$LS")
	if [ "$MP_PRE" -eq 0 ]; then
		# the hook came before any byte crossed (a slow guest's start)
		t_skip "3. traffic shifts away from the lossy link" \
			"l$LS carried nothing before the loss began ($(pc "$s") after): no share to compare"
	elif [ $((s * 100)) -le $((MP_PRE * MP_LOSSY_MAX)) ]; then
		t_ok "3. traffic shifts away from the lossy link (l$LS $(pc "$s") of the bytes from 1 s after, <= $MP_LOSSY_MAX % of its $(pc "$MP_PRE") before)"
	else
		t_fail "3. traffic shifts away from the lossy link (<= $MP_LOSSY_MAX % of its share before the loss)" \
			"l$LS $(pc "$s") of the bytes from 1 s after, $(pc "$MP_PRE") before"
	fi
}

# --- 4. ordered mode: one path -----------------------------------------------------------
case_4() {
	local top=1 rest=10000 i
	if [ "$HAVE_ORDERED" = 1 ]; then
		rc_param ordered 1 && rc_ecmp_relink >/tmp/mp_relink.log 2>&1 ||
			t_fail "4. ordered=1 and re-created devices" "$(cat /tmp/mp_relink.log)"
	fi
	mp_run /tmp/mp 10 0 :
	if [ "$HAVE_ORDERED" = 1 ]; then
		rc_param ordered 0
		rc_ecmp_relink >/dev/null 2>&1
	fi
	mp_report "4. ordered mode$([ "$HAVE_ORDERED" = 1 ] || echo ' (parameter absent: sprayed)')"
	[ "$MP_MEAS" = 1 ] || return 0
	for ((i = 2; i <= NL; i++)); do [ "${MP_BY[i]}" -le "${MP_BY[top]}" ] || top=$i; done
	rest=0
	for ((i = 1; i <= NL; i++)); do [ "$i" = "$top" ] || rest=$((rest + MP_BY[i])); done
	rest=$(bp "$rest" "$MP_TOT")
	if [ "$rest" -le 100 ]; then
		t_ok "4. ordered mode uses exactly one link (l$top $(pc "$(sbp "$top")"), others $(pc "$rest"))"
	else
		t_todo "4. ordered mode uses exactly one link (others <= 1 % of the bytes)" \
			"the single path fails over after two RTOs in a row, which a loaded guest can produce without loss (issue 6 open)" \
			"l$top $(pc "$(sbp "$top")"), others $(pc "$rest")"
	fi
}

# --- rxe on the same fabric (the benchmark's baseline) --------------------------------
# ecmp_rxe_attach: rxe's ends stay in init_net (rxa -> rA, rxb -> rB). A
# single rxe QP has one UDP source port, so ECMP puts it on one link.
case_rxe() {
	local ga gb rc=0 dl i top=1 tot=0 t0
	if ! ecmp_rxe_attach >/tmp/mp_rxe.log 2>&1 || ! rxe_add rxe0 "$RXE_A_DEV" >>/tmp/mp_rxe.log 2>&1 ||
		! rxe_add rxe1 "$RXE_B_DEV" >>/tmp/mp_rxe.log 2>&1; then
		t_fail "rxe attached to the ECMP fabric" "$(cat /tmp/mp_rxe.log)"
		return
	fi
	ga=$(rxe_gid_index rxe0 "$ECMP_RXE_A_IP") gb=$(rxe_gid_index rxe1 "$ECMP_RXE_B_IP")
	ecmp_sample_start /tmp/mp_rxe.samples
	t0=$EPOCHREALTIME
	srv_cli --timeout 60 --log /tmp/mp_rxe ib_write_bw -d rxe1 -x "$gb" -s 65536 -n 100 -F -- \
		ib_write_bw -d rxe0 -x "$ga" -s 65536 -n 100 -F "$ECMP_RXE_B_IP" || rc=$?
	ecmp_sample_stop
	read -ra dl <<<"$(ecmp_sample_delta /tmp/mp_rxe.samples "$t0" "$EPOCHREALTIME")"
	for ((i = 1; i <= NL; i++)); do
		MP_BY[i]=${dl[i - 1]:-0}
		tot=$((tot + MP_BY[i]))
		[ "${MP_BY[i]}" -le "${MP_BY[top]}" ] || top=$i
	done
	MP_TOT=$((tot > 0 ? tot : 1))
	t_diag "rxe: bytes per link: ${MP_BY[*]}"
	if [ "$rc" -eq 0 ] && [ "$tot" -ge $((100 * 65536)) ]; then
		t_ok "rxe over the ECMP fabric: ib_write_bw 100 x 64 KiB crosses rA ($((tot / 1000)) kB, l$top $(pc "$(sbp "$top")"): one QP, one link)"
	else
		t_fail "rxe over the ECMP fabric: ib_write_bw 100 x 64 KiB crosses rA" "exit $rc, $tot bytes on the links" \
			"$(tail -n 5 /tmp/mp_rxe.cli /tmp/mp_rxe.srv 2>/dev/null)"
	fi
	rdma link delete rxe0 >/dev/null 2>&1
	rdma link delete rxe1 >/dev/null 2>&1
}

for c in $CASES; do
	"case_$c"
done

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

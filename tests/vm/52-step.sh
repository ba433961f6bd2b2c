#!/bin/bash
# The ring all-reduce of the step benchmark (make bench, scenario step):
# tests/tools/mrc_step over four hosts on one switch (the incast bed:
# snd1..snd3 and rcv, control over the management bridge), each rank
# writing WITH_IMM into its right neighbour's staging buffers against
# clear-to-send credits, every element of the reduced result checked.
#
#   self-test   rank 1 leaves one slice out of its reduction (--skip):
#               the check must report wrong elements and the run fail
#   loss        20 steps of 1 MiB, every step checked, 1 % random loss
#               on every host's switch port (netem), so each of the four
#               ring hops loses packets: all steps pass, metaroce
#               retransmitted, nothing ended in an error completion
#   rxe         the same binary over rxe (init_net, same bridge), lossless
# vm-test-timeout: 600
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

STEP=$RC_REPO/tests/tools/mrc_step
NR=4

build_step() {
	if [ -x "$STEP" ] && ! [ "$RC_REPO/tests/tools/mrc_step.c" -nt "$STEP" ]; then
		return 0
	fi
	make -s -C "$RC_REPO/tests/tools" mrc_step
}

# step_run NAME TIMEOUT metaroce|rxe ARGS...: rank 0 in rcv (rxer), ranks
# 1..3 in snd1..3 (rxes1..3); output in /tmp/step_NAME.R; exit status of
# rank 0, else the first failing rank's
step_run() {
	local name=$1 to=$2 prov=$3 r pids=() rc=0 st cmd
	shift 3
	for ((r = 0; r < NR; r++)); do
		if [ "$prov" = rxe ]; then
			if [ "$r" = 0 ]; then cmd=("$STEP" -d "$RC_RXE_R" -x "$INCAST_RXE_GID_R")
			else cmd=("$STEP" -d "$RC_RXE_S$r" -x "${INCAST_RXE_GID[r]}"); fi
			[ "$r" = 0 ] || cmd+=(127.0.0.1)
		elif [ "$r" = 0 ]; then
			cmd=(ip netns exec "$INCAST_RCV" "$STEP" -d "$RC_DEV_R" -x "$INCAST_GID_R")
		else
			cmd=(ip netns exec "$INCAST_SND$r" "$STEP" -d "$RC_DEV_S$r" -x "${INCAST_GID[r]}" "$INCAST_RCV_MGMT_IP")
		fi
		timeout "$to" "${cmd[@]}" -N $NR -r "$r" "$@" >"/tmp/step_$name.$r" 2>&1 &
		pids[r]=$!
		[ "$r" != 0 ] || bsleep 0.3
	done
	for ((r = 0; r < NR; r++)); do
		st=0
		wait "${pids[r]}" || st=$?
		[ "$rc" != 0 ] || rc=$st
	done
	return "$rc"
}

# res NAME KEY: KEY=value from rank 0's MRC_STEP_RESULT line
res() {
	local line w
	line=$(grep -h '^MRC_STEP_RESULT' "/tmp/step_$1.0" 2>/dev/null | tail -n 1)
	for w in $line; do
		case $w in "$2"=*) echo "${w#*=}"; return 0 ;; esac
	done
	echo 0
	return 1
}

# every rank printed status=PASS
all_pass() {
	local r
	for ((r = 0; r < NR; r++)); do
		grep -q '^MRC_STEP_RESULT .*status=PASS' "/tmp/step_$1.$r" || return 1
	done
}

logs() { grep -h -E 'ERROR|FAIL|element' /tmp/step_"$1".* 2>/dev/null | head -n 12; }

rc_dmesg_mark
if ! t_check "build mrc_step" build_step; then t_summary; exit 1; fi
if ! rc_incast_setup 3 --mtu 9000 --rate 10gbit --limit 1000 >/tmp/step_setup.log 2>&1; then
	t_fail "four hosts with metaroce devices" "$(cat /tmp/step_setup.log)"
	t_summary
	exit 1
fi
t_ok "four hosts with metaroce devices on one switch (GIDs $INCAST_GID_R ${INCAST_GID[*]})"

# --- self-test: a slice left out of the reduction is caught -----------------------
rc=0
step_run skip 120 metaroce -s 256K -S 16K -n 6 --skip 2 --stall 30 || rc=$?
if [ "$rc" -ne 0 ] && [ "$(res skip bad)" -gt 0 ] && [ "$(res skip steps)" -eq 3 ] &&
	grep -q 'element .* expected' /tmp/step_skip.0; then
	t_ok "self-test: a slice missing from rank 1's reduction in step 2 fails the check ($(res skip bad) wrong elements over all ranks; $(grep -h -m 1 -o 'element .*' /tmp/step_skip.0))"
else
	t_fail "self-test: a slice missing from the reduction fails the check" "exit $rc, bad $(res skip bad), steps $(res skip steps)" "$(logs skip)"
fi

# --- 20 steps at 1 % loss on every hop ----------------------------------------------
ports=(p1 p2 p3 "$INCAST_PORT")
for p in "${ports[@]}"; do
	tc -n "$INCAST_SW" qdisc replace dev "$p" root netem loss 1% limit 1000
done
# shellcheck disable=SC2034 # filled through namerefs
declare -A c0 c1
rc_snap_all c0
rc=0
step_run loss 300 metaroce -s 1M -S 64K -b 8 -n 20 -k 1 -C /tmp/step_loss.csv --stall 60 || rc=$?
rc_snap_all c1
drops=0
for p in "${ports[@]}"; do
	drops=$((drops + $(netem_stat "$INCAST_SW" "$p" dropped)))
	tc -n "$INCAST_SW" qdisc del dev "$p" root 2>/dev/null
done
retx=0 rto=0 rexc=0 tlp=0 stmo=0
for k in "${!c1[@]}"; do
	case ${k#*:} in
	retransmitted_packets) retx=$((retx + c1[$k] - ${c0[$k]:-0})) ;;
	rto_events) rto=$((rto + c1[$k] - ${c0[$k]:-0})) ;;
	tail_loss_probes) tlp=$((tlp + c1[$k] - ${c0[$k]:-0})) ;;
	spurious_timer_retx) stmo=$((stmo + c1[$k] - ${c0[$k]:-0})) ;;
	retry_exceeded) rexc=$((rexc + c1[$k] - ${c0[$k]:-0})) ;;
	esac
done
t_diag "loss run: netem dropped $drops packets, metaroce retransmitted $retx (rto $rto, probes $tlp, timer resends judged early $stmo); steps p50 $(res loss p50_us) us p99 $(res loss p99_us) us max $(res loss max_us) us"
if [ "$rc" -eq 0 ] && all_pass loss && [ "$(res loss steps)" -eq 20 ] &&
	[ "$(res loss verified)" -eq 20 ] && [ "$(res loss bad)" -eq 0 ]; then
	t_ok "20 all-reduce steps of 1 MiB over 4 ranks at 1 % loss on every hop: every step's result verified on every rank ($(res loss verified) checked, 0 wrong elements)"
else
	t_fail "20 steps at 1 % loss, every step verified" "exit $rc, steps $(res loss steps) verified $(res loss verified) bad $(res loss bad)" "$(logs loss)"
fi
nlines=$(($(wc -l </tmp/step_loss.csv 2>/dev/null || echo 1) - 1))
if [ "$nlines" -eq 20 ] && ! awk -F, 'NR > 1 && ($2 <= 0 || $4 != 1 || $5 != 0) { exit 1 }' /tmp/step_loss.csv; then
	t_fail "per-step CSV: one line per step, each verified" "$(head -n 5 /tmp/step_loss.csv)"
elif [ "$nlines" -eq 20 ]; then
	t_ok "per-step CSV: 20 lines, each step timed, verified and clean"
else
	t_fail "per-step CSV: one line per step" "$nlines lines"
fi
if [ "$drops" -gt 0 ] && [ "$retx" -gt 0 ] && [ "$rexc" -eq 0 ]; then
	t_ok "loss recovered by the transport: $drops packets dropped, $retx retransmitted, no retry_exceeded"
else
	t_fail "loss recovered by the transport" "dropped $drops retransmitted $retx retry_exceeded $rexc"
fi

# --- the same binary over rxe ---------------------------------------------------------
if rc_incast_rxe_setup 3 --mtu 9000 --rate 10gbit --limit 1000 >/tmp/step_rxe.log 2>&1; then
	rc=0
	step_run rxe 180 rxe -s 1M -S 64K -n 10 --stall 60 || rc=$?
	if [ "$rc" -eq 0 ] && all_pass rxe && [ "$(res rxe verified)" -eq 10 ]; then
		t_ok "rxe: 10 steps of 1 MiB over 4 ranks, every step verified (p50 $(res rxe p50_us) us)"
	else
		t_fail "rxe: 10 verified steps" "exit $rc" "$(logs rxe)"
	fi
else
	t_fail "rxe on the four-host bed" "$(cat /tmp/step_rxe.log)"
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

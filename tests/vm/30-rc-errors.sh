#!/bin/bash
# RC error paths over metaroce (mrc_verify --mode ...):
#  - bad rkey / missing remote permission / out of bounds / rkey 0 with
#    data: IBV_WC_REM_ACCESS_ERR at the requester, the next WR flushed, the
#    responder's memory untouched;
#  - receiver not ready: IBV_WC_RNR_RETRY_EXC_ERR with rnr_retry 2, and
#    success with rnr_retry 7 when the receive is posted late;
#  - the peer is gone (process killed, or link blackholed):
#    IBV_WC_RETRY_EXC_ERR after about 4.096 us x 2^timeout x (retry_cnt+1);
#  - a process killed mid-transfer, a device deleted under live traffic,
#    then rdma link del and rmmod: no hang, no oops.
# vm-test-timeout: 420
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1

# mrc_verify server in hostB / client in hostA as background processes
# whose PIDs are the verify processes themselves (ip netns exec execs).
SPID='' CPID=''
start_srv() { # LOG ARGS...
	local log=$1
	shift
	ip netns exec "$TOPO_B" "$MRC_VERIFY" -d "$RC_DEV_B" -g "$GID_B" "$@" >"$log" 2>&1 &
	SPID=$!
}
start_cli() { # LOG ARGS...
	local log=$1
	shift
	ip netns exec "$TOPO_A" "$MRC_VERIFY" -d "$RC_DEV_A" -g "$GID_A" "$@" "$MGMT_B_IP" >"$log" 2>&1 &
	CPID=$!
}
# wait_pid PID SECS: wait for a child; status 124 if it is still running
wait_pid() {
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null; do
		[ "$SECONDS" -lt "$end" ] || return 124
		sleep 0.2
	done
	wait "$1"
}
# field LINE KEY: value of KEY=value in LINE
field() {
	local w
	for w in $1; do
		case $w in "$2"=*) echo "${w#*=}"; return 0 ;; esac
	done
	return 1
}
# QPs of mrc_verify processes still known to the kernel on DEV
qps_of() { rdma resource show qp link "$1/1" 2>/dev/null | grep -c 'comm mrc_verify'; }

# --- remote access errors -------------------------------------------------------------
rc=0
rc_verify --timeout 120 --log /tmp/acc --mode badrkey || rc=$?
if [ "$rc" -eq 0 ] && [ "$(rc_result /tmp/acc.cli status)" = PASS ]; then
	t_ok "remote access violations complete with IBV_WC_REM_ACCESS_ERR, the next WR with IBV_WC_WR_FLUSH_ERR"
else
	t_fail "remote access violations complete with IBV_WC_REM_ACCESS_ERR, the next WR with IBV_WC_WR_FLUSH_ERR" \
		"exit $rc" "$(cat /tmp/acc.cli)"
fi
while IFS= read -r l; do
	what=${l#*what=\"} what=${what%%\"*}
	st=${l#*status=} st=${st% elapsed_ms=*}
	ms=$(field "$l" elapsed_ms)
	if [ "$st" = "remote access error" ] && awk -v m="$ms" 'BEGIN { exit !(m < 2000) }'; then
		t_ok "$what: remote access error after $ms ms"
	else
		t_fail "$what: remote access error within 2 s" "$l"
	fi
done < <(grep '^BADRKEY' /tmp/acc.cli)
if [ "$(rc_result /tmp/acc.srv status)" = PASS ]; then
	t_ok "rejected WRITEs and atomics left the responder's memory untouched"
else
	t_fail "rejected WRITEs and atomics left the responder's memory untouched" "$(cat /tmp/acc.srv)"
fi

# --- responder resources (max_dest_rd_atomic) ------------------------------------------
# cc and credits off: the full window lets the first two 1 MiB READs go as
# one request packet each, so the second arrives while the first is still
# being answered (a credit share of 256 PSNs held the second one back)
rc=0
cc0=$(rc_param cc) cr0=$(rc_param credits)
rc_param cc N
rc_param credits N
rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
rc_verify --timeout 120 --log /tmp/rdl --mode rdlimit -s 1M || rc=$?
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
rc_param cc "$cc0"
rc_param credits "$cr0"
l0=$(grep '^RDLIMIT case=0' /tmp/rdl.cli)
l1=$(grep '^RDLIMIT case=1' /tmp/rdl.cli)
if [ "$rc" -eq 0 ] && [ "$(rc_result /tmp/rdl.cli status)" = PASS ]; then
	t_ok "READs beyond max_dest_rd_atomic complete with IBV_WC_REM_INV_REQ_ERR (${l0#*what=}; ${l1#*what=})"
else
	t_fail "READs beyond max_dest_rd_atomic complete with IBV_WC_REM_INV_REQ_ERR" \
		"exit $rc" "$(cat /tmp/rdl.cli)"
fi
# one Invalid Request NAK per case, counted on both sides
sent=$(rc_delta b0 b1 naks_sent) recv=$(rc_delta a0 a1 naks_received)
t_check "the Invalid Request NAKs are counted: naks_sent $sent at B, naks_received $recv at A (both >= 2)" \
	test "$sent" -ge 2 -a "$recv" -ge 2

# --- receiver not ready ------------------------------------------------------------------
rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
rc=0
# min_rnr_timer 18 = 5.12 ms
rc_verify --timeout 120 --log /tmp/rnr --mode rnr --rnr-retry 2 --min-rnr-timer 18 --rnr-delay 300 || rc=$?
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
l=$(grep '^RNR qp=0' /tmp/rnr.cli)
ms=$(field "$l" elapsed_ms)
if [[ $l == *"status=RNR retry counter exceeded"* ]] && awk -v m="$ms" 'BEGIN { exit !(m < 3 * 3 * 5.12 + 1000) }'; then
	t_ok "no receive posted, rnr_retry 2: IBV_WC_RNR_RETRY_EXC_ERR after $ms ms"
else
	t_fail "no receive posted, rnr_retry 2: IBV_WC_RNR_RETRY_EXC_ERR within ~3 x 5.12 ms" "$l" "$(tail -n 5 /tmp/rnr.cli)"
fi
l=$(grep '^RNR qp=1' /tmp/rnr.cli)
ms=$(field "$l" elapsed_ms)
if [[ $l == *status=success* ]] && [ "$(rc_result /tmp/rnr.srv status)" = PASS ] &&
	awk -v m="$ms" 'BEGIN { exit !(m >= 300 && m < 5000) }'; then
	t_ok "rnr_retry 7, receive posted 300 ms late: SEND succeeds after $ms ms, payload verified"
else
	t_fail "rnr_retry 7, receive posted 300 ms late: SEND succeeds, payload verified" "$l" \
		"$(tail -n 4 /tmp/rnr.cli /tmp/rnr.srv)"
fi
if [ "$rc" -ne 0 ]; then t_fail "mrc_verify --mode rnr exits 0" "exit $rc"; fi
sent=$(rc_delta b0 b1 rnr_naks_sent) recv=$(rc_delta a0 a1 rnr_naks_received)
if [ "$sent" -ge 3 ] && [ "$recv" -ge 3 ]; then
	t_ok "RNR NAKs counted: $sent sent by hostB, $recv received by hostA"
else
	t_fail "RNR NAKs counted (>= 3 each)" "sent $sent received $recv"
fi

# --- the peer is gone -----------------------------------------------------------------------
# retry_case DESC TIMEOUT RETRY HOW [NETEM...]: HOW kill (server process
# killed and reaped) or blackhole (netem loss 100% towards hostB); NETEM
# shapes the link towards hostB while the QPs connect and warm up.
retry_case() {
	local desc=$1 to=$2 rt=$3 how=$4 rc=0 l st ms nom
	shift 4
	rm -f /tmp/go
	rc_snap a0 "$RC_DEV_A"
	[ $# -eq 0 ] || link_shape "$TOPO_SW" "$TOPO_PORT_B" "$@"
	start_srv /tmp/rt.srv
	start_cli /tmp/rt.cli --mode retry --timeout "$to" --retry-cnt "$rt" --go-file /tmp/go
	if ! wait_for 60 grep -q '^READY' /tmp/rt.cli; then
		t_fail "$desc: set-up" "$(cat /tmp/rt.cli /tmp/rt.srv)"
		kill -9 "$SPID" "$CPID" 2>/dev/null
		wait "$SPID" "$CPID" 2>/dev/null
		link_clear "$TOPO_SW" "$TOPO_PORT_B"
		return
	fi
	if [ "$how" = kill ]; then
		local n0
		n0=$(qps_of "$RC_DEV_B")
		kill -9 "$SPID"
		wait "$SPID" 2>/dev/null
		# the killed process's QP must be destroyed
		if [ "$n0" -lt 1 ]; then
			t_fail "$desc: the server's QP is listed by rdma resource show before the kill" \
				"$(rdma resource show qp 2>&1 | head)"
		elif wait_for 10 test "$(qps_of "$RC_DEV_B")" -eq 0; then
			t_ok "$desc: the killed process's QP is destroyed ($n0 listed before)"
		else
			t_fail "$desc: the killed process's QP is destroyed" "$(rdma resource show qp link "$RC_DEV_B/1")"
		fi
	else
		link_shape "$TOPO_SW" "$TOPO_PORT_B" loss 100%
	fi
	touch /tmp/go
	wait_pid "$CPID" 120 || rc=$?
	[ "$rc" -ne 124 ] || { kill -9 "$CPID"; wait "$CPID" 2>/dev/null; }
	link_clear "$TOPO_SW" "$TOPO_PORT_B"
	[ "$how" = kill ] || wait_pid "$SPID" 30 >/dev/null || { kill -9 "$SPID"; wait "$SPID" 2>/dev/null; }
	rc_snap a1 "$RC_DEV_A"
	l=$(grep '^RETRY ' /tmp/rt.cli)
	st=${l#*status=} st=${st%% wr_id=*}
	ms=$(field "$l" elapsed_ms) nom=$(field "$l" nominal_ms)
	if [ "$st" != "transport retry counter exceeded" ]; then
		t_fail "$desc: IBV_WC_RETRY_EXC_ERR" "exit $rc" "$(cat /tmp/rt.cli)"
		return
	fi
	# at least half the nominal time (the peer is not declared gone early),
	# at most 3 x nominal + 1 s
	if awk -v m="$ms" -v n="$nom" 'BEGIN { exit !(m >= n / 2 && m <= 3 * n + 1000) }'; then
		t_ok "$desc: IBV_WC_RETRY_EXC_ERR after $ms ms (nominal 4.096us x 2^$to x $((rt + 1)) = $nom ms)"
	else
		t_fail "$desc: IBV_WC_RETRY_EXC_ERR after $ms ms, outside [nominal/2, 3 x nominal + 1 s] (nominal $nom ms)" "$l"
	fi
	if [ "$(rc_delta a0 a1 retry_exceeded)" -ge 1 ]; then
		t_ok "$desc: retry_exceeded counted"
	else
		t_fail "$desc: retry_exceeded counted" "$(rc_delta a0 a1 retry_exceeded)"
	fi
}
retry_case "peer process killed (timeout 14, retry_cnt 3)" 14 3 kill
retry_case "link blackholed (timeout 10, retry_cnt 3)" 10 3 blackhole
retry_case "link blackholed (timeout 16, retry_cnt 2)" 16 2 blackhole
# A slow first RTT sample (200 ms: RTO 600 ms) must not stretch the time
# to fail: every RTO is capped at the ACK timeout (268 ms).
retry_case "link blackholed after a 200 ms RTT sample (timeout 16, retry_cnt 3)" \
	16 3 blackhole delay 200ms

# --- killed mid-transfer, then link del and rmmod ---------------------------------------------
# live_run SECS: start a long mrc_verify, wait until both run for SECS
live_run() {
	start_srv /tmp/live.srv --stall 20
	start_cli /tmp/live.cli --stall 20 -q 4 -s 1M -D 120
	wait_for 60 grep -q running /tmp/live.cli && wait_for 10 grep -q running /tmp/live.srv &&
		sleep "$1" && kill -0 "$SPID" 2>/dev/null && kill -0 "$CPID" 2>/dev/null
}
# timed DESC SECS CMD...: CMD must succeed within SECS
timed() {
	local desc=$1 secs=$2 rc=0 t0=$SECONDS out
	shift 2
	out=$(timeout "$secs" "$@" 2>&1) || rc=$?
	if [ "$rc" -eq 0 ]; then
		t_ok "$desc ($((SECONDS - t0)) s)"
	elif [ "$rc" -eq 124 ]; then
		t_fail "$desc: still running after $secs s" "$out"
	else
		t_fail "$desc: exit $rc" "$out"
	fi
	return "$rc"
}

if live_run 3; then
	nq=$(($(qps_of "$RC_DEV_A") + $(qps_of "$RC_DEV_B")))
	t_ok "long transfer running (4 QPs, up to 1 MiB; $nq QPs listed)"
	kill -9 "$CPID"
	wait "$CPID" 2>/dev/null
	rc=0
	wait_pid "$SPID" 60 || rc=$?
	if [ "$rc" -ne 124 ]; then
		t_ok "the server exits by itself after the client was killed mid-transfer (exit $rc)"
	else
		t_fail "the server exits by itself after the client was killed mid-transfer" "$(tail -n 5 /tmp/live.srv)"
		kill -9 "$SPID"
		wait "$SPID" 2>/dev/null
	fi
	if [ "$nq" -ne 8 ]; then
		t_fail "rdma resource show lists the 8 QPs of the transfer" "$nq"
	elif wait_for 10 test "$(($(qps_of "$RC_DEV_A") + $(qps_of "$RC_DEV_B")))" -eq 0; then
		t_ok "no QPs left behind"
	else
		t_fail "no QPs left behind" "$(rdma resource show qp 2>&1 | head)"
	fi
else
	t_fail "long transfer running" "$(tail -n 5 /tmp/live.cli /tmp/live.srv)"
	kill -9 "$SPID" "$CPID" 2>/dev/null
	wait "$SPID" "$CPID" 2>/dev/null
fi
timed "rdma link del $RC_DEV_A" 30 rdma link del "$RC_DEV_A"
timed "rdma link del $RC_DEV_B" 30 rdma link del "$RC_DEV_B"
timed "rmmod rdma_metaroce" 60 rmmod rdma_metaroce
if [ -e /sys/module/rdma_metaroce ]; then t_fail "module gone after rmmod"; else t_ok "module gone after rmmod"; fi

# --- a device deleted under live traffic -----------------------------------------------------
# (netns deletion is asynchronous: remove the old switch ports synchronously
# or topo_two_hosts finds them still there)
ip -n "$TOPO_SW" link del "$TOPO_PORT_A" 2>/dev/null
ip -n "$TOPO_SW" link del "$TOPO_PORT_B" 2>/dev/null
if ! rc_setup --mtu 9000 >/tmp/rc_setup.log 2>&1; then
	t_fail "devices again after rmmod" "$(cat /tmp/rc_setup.log)"
elif live_run 3; then
	t_ok "devices again after rmmod; long transfer running"
	timed "rdma link del $RC_DEV_B while its QPs carry traffic" 30 rdma link del "$RC_DEV_B"
	rc=0 rc2=0
	wait_pid "$SPID" 60 || rc=$?
	wait_pid "$CPID" 60 || rc2=$?
	if [ "$rc" -ne 124 ] && [ "$rc2" -ne 124 ]; then
		t_ok "both processes end by themselves after the device is deleted (exit $rc/$rc2)"
	else
		t_fail "both processes end by themselves after the device is deleted" \
			"server $rc client $rc2" "$(tail -n 5 /tmp/live.srv /tmp/live.cli)"
		kill -9 "$SPID" "$CPID" 2>/dev/null
	fi
	t_diag "server: $(grep -h -E 'ERROR|FATAL' /tmp/live.srv | head -n 2)"
	t_diag "client: $(grep -h -E 'ERROR|FATAL' /tmp/live.cli | head -n 2)"
	wait_pid "$SPID" 10 >/dev/null
	wait_pid "$CPID" 10 >/dev/null
	timed "rdma link del $RC_DEV_A after the peer device vanished" 30 rdma link del "$RC_DEV_A"
	timed "rmmod rdma_metaroce" 60 rmmod rdma_metaroce
else
	t_fail "long transfer running on the new devices" "$(tail -n 5 /tmp/live.cli /tmp/live.srv)"
	kill -9 "$SPID" "$CPID" 2>/dev/null
	wait "$SPID" "$CPID" 2>/dev/null
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

#!/bin/bash
# Object lifetime races over metaroce:
#  b) `rdma resource show qp/cq -dd` in a tight loop while a process
#     creates and destroys QPs, CQs and MRs (review C3: the restrack
#     callbacks read ring headers that destroy freed): no oops, and the
#     device still carries verified traffic afterwards;
#  c) the peer's network namespace deleted under a live transfer (its
#     process runs elsewhere, so the namespace really goes): the device
#     goes, both processes end, rmmod works;
#  a) the READ responder (ib_read_bw server, 8 MiB READs) killed while it
#     answers (review C1: an MR reference held by a READ being answered
#     was never dropped, so dereg_mr, process exit and rdma link del hung
#     in D state): the process is gone within 10 s, none of its MRs or QPs
#     is left, rdma link del completes.  Runs last: on a kernel with the
#     bug the device stays wedged.
# Every wait is bounded without waiting on the process itself (a task in
# D state cannot be killed): a hang is reported, not waited for.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
WEDGED=0
CTL_A=10.9.9.2 CTL_I=10.9.9.1
cleanup() {
	ip link del rctl0 >/dev/null 2>&1
	# a wedged device cannot be deleted: leave it to the guest's power-off
	[ "$WEDGED" = 1 ] || topo_cleanup
}
trap cleanup EXIT
CHURN=$RC_REPO/tests/tools/mrc_churn
# MRC_RACES: the parts to run (default all: "bca")
: "${MRC_RACES:=bca}" "${RD_RATE:=}" "${RD_QPS:=4}" "${RD_TRIES:=3}"

# state PID: the task's state letter from /proc/PID/stat, "-" if it is gone
state() {
	local s
	{ read -r s <"/proc/$1/stat"; } 2>/dev/null || { echo -; return; }
	s=${s##*) }
	echo "${s%% *}"
}
# gone PID SECS: the task exits (a zombie counts) within SECS
gone() {
	local end=$((SECONDS + $2)) s
	while :; do
		s=$(state "$1")
		[ "$s" = - ] || [ "$s" = Z ] && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		bsleep 0.2
	done
}
# bounded DESC SECS CMD...: CMD must succeed within SECS; it runs in the
# background, so a CMD stuck in the kernel is reported, not waited for
BOUNDED_PID=''
bounded() {
	local desc=$1 secs=$2 t0=$SECONDS rc=0
	shift 2
	"$@" >/tmp/bounded.out 2>&1 &
	BOUNDED_PID=$!
	if ! gone "$BOUNDED_PID" "$secs"; then
		t_fail "$desc: still running after $secs s (state $(state "$BOUNDED_PID"))" \
			"$(cat "/proc/$BOUNDED_PID/stack" 2>/dev/null)"
		return 124
	fi
	wait "$BOUNDED_PID" || rc=$?
	if [ "$rc" -eq 0 ]; then
		t_ok "$desc ($((SECONDS - t0)) s)"
	else
		t_fail "$desc: exit $rc" "$(cat /tmp/bounded.out)"
	fi
	return "$rc"
}
# objects of processes named COMM on DEV: res_of qp|mr DEV COMM
res_of() { rdma resource show "$1" link "$2" 2>/dev/null | grep -c "comm $3"; }
dmesg_check() {
	local bad
	bad=$(rc_dmesg_bad)
	if [ -z "$bad" ]; then t_ok "$1: no kernel warnings"; else t_fail "$1: no kernel warnings" "$bad"; fi
	rc_dmesg_mark
}
# fresh two hosts (the switch ports of the old ones removed synchronously)
setup() {
	ip -n "$TOPO_SW" link del "$TOPO_PORT_A" >/dev/null 2>&1
	ip -n "$TOPO_SW" link del "$TOPO_PORT_B" >/dev/null 2>&1
	rc_setup --mtu 9000 >/tmp/rc_setup.log 2>&1 && return
	t_fail "$1: two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
	return 1
}

rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools ||
	! t_check "build mrc_churn" make -s -C "$RC_REPO/tests/tools" mrc_churn; then
	t_summary
	exit 1
fi

# --- b) restrack dumps against create/destroy -------------------------------------
if [[ $MRC_RACES == *b* ]] && setup "restrack race"; then
	ip netns exec "$TOPO_A" "$CHURN" "$RC_DEV_A" 20 8 >/tmp/churn.1 2>&1 &
	c1=$!
	ip netns exec "$TOPO_A" "$CHURN" "$RC_DEV_A" 20 3 >/tmp/churn.2 2>&1 &
	c2=$!
	# one exec per 200 dumps: an exec costs more than a dump under TCG
	for ((i = 0; i < 100; i++)); do
		echo "resource show qp link $RC_DEV_A/1"
		echo "resource show cq link $RC_DEV_A/1"
	done >/tmp/dump.batch
	rdma -d -d -b /tmp/dump.batch 2>&1 | head -n 4 >/tmp/dump.first
	if grep -q 'lqpn 1 ' /tmp/dump.first; then
		t_ok "a batch of dumps lists the QPs"
	else
		t_fail "a batch of dumps lists the QPs" "$(cat /tmp/dump.first)"
	fi
	dumps=0
	while [ "$(state "$c1")" != Z ] && [ "$(state "$c1")" != - ]; do
		rdma -d -d -b /tmp/dump.batch >/dev/null 2>&1
		dumps=$((dumps + 100))
	done
	rc=0 rc2=0
	if gone "$c2" 30; then wait "$c2" || rc2=$?; else rc2=124; fi
	wait "$c1" || rc=$?
	r1=$(grep -o '[0-9]* rounds' /tmp/churn.1) r2=$(grep -o '[0-9]* rounds' /tmp/churn.2)
	if [ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ]; then
		t_ok "create/destroy churn ($r1 of 8 QPs, $r2 of 3 QPs) against $dumps qp+cq -dd dumps"
	else
		t_fail "create/destroy churn against $dumps qp+cq -dd dumps: exit $rc/$rc2" \
			"$(cat /tmp/churn.1 /tmp/churn.2)"
	fi
	dmesg_check "restrack race"
	n=$(res_of qp "$RC_DEV_A" mrc_churn)
	if [ "$n" -eq 0 ]; then t_ok "no churn QPs left"; else t_fail "no churn QPs left" "$n"; fi
	rc=0
	rc_verify --timeout 120 --log /tmp/after_churn -q 2 -n 200 -s 64K || rc=$?
	if [ "$rc" -eq 0 ] && [ "$(rc_result /tmp/after_churn.cli status)" = PASS ]; then
		t_ok "verified traffic on the device afterwards"
	else
		t_fail "verified traffic on the device afterwards" "exit $rc" \
			"$(tail -n 5 /tmp/after_churn.cli /tmp/after_churn.srv)"
	fi
fi

# --- c) the peer's namespace deleted under traffic ---------------------------------
# The server runs in init_net (control over rctl0 <-> hostA), so deleting
# hostB really removes its netdev, and with it device B, under the QPs.
if [[ $MRC_RACES == *c* ]] && setup "netns removal"; then
	_ipb - <<-EOF
		link add rctl0 type veth peer name rctl1 netns $TOPO_A
		addr add $CTL_I/24 dev rctl0
		link set rctl0 up
	EOF
	_ipb "$TOPO_A" <<-EOF
		addr add $CTL_A/24 dev rctl1
		link set rctl1 up
	EOF
	"$MRC_VERIFY" -d "$RC_DEV_B" -g "$GID_B" --stall 20 >/tmp/ns.srv 2>&1 &
	spid=$!
	ip netns exec "$TOPO_A" "$MRC_VERIFY" -d "$RC_DEV_A" -g "$GID_A" --stall 20 \
		-q 4 -s 1M -D 120 "$CTL_I" >/tmp/ns.cli 2>&1 &
	cpid=$!
	if wait_for 60 grep -q running /tmp/ns.cli && wait_for 10 grep -q running /tmp/ns.srv &&
		bsleep 2 && [ "$(state "$spid")" != Z ] && [ "$(state "$cpid")" != Z ]; then
		t_ok "transfer running, server outside the peer's namespace"
		ip netns del "$TOPO_B"
		if wait_for 30 bash -c "! rdma link show $RC_DEV_B/1"; then
			t_ok "device $RC_DEV_B gone with its namespace"
		else
			t_fail "device $RC_DEV_B gone with its namespace" "$(rdma link show)"
		fi
		for p in "$spid:server" "$cpid:client"; do
			if gone "${p%%:*}" 60; then
				t_ok "the ${p#*:} ends by itself"
			else
				t_fail "the ${p#*:} ends by itself" "state $(state "${p%%:*}")" \
					"$(tail -n 3 "/tmp/ns.${p#*:}" 2>/dev/null)"
				kill -9 "${p%%:*}" 2>/dev/null
				gone "${p%%:*}" 10 || WEDGED=1
			fi
		done
		t_diag "server: $(grep -h -E 'ERROR|FATAL' /tmp/ns.srv | head -n 1)"
		t_diag "client: $(grep -h -E 'ERROR|FATAL' /tmp/ns.cli | head -n 1)"
	else
		t_fail "transfer running, server outside the peer's namespace" \
			"$(tail -n 5 /tmp/ns.cli /tmp/ns.srv)"
		kill -9 "$spid" "$cpid" 2>/dev/null
	fi
	wait "$spid" "$cpid" 2>/dev/null
	ip link del rctl0 >/dev/null 2>&1
	if [ "$WEDGED" = 0 ]; then
		bounded "rdma link del $RC_DEV_A" 30 rdma link del "$RC_DEV_A" || WEDGED=1
	fi
	l=$(rdma link show 2>/dev/null)
	if [ -z "$l" ]; then t_ok "no RDMA device left"; else t_fail "no RDMA device left" "$l"; fi
	if [ "$WEDGED" = 0 ]; then
		bounded "rmmod rdma_metaroce" 60 rmmod rdma_metaroce || WEDGED=1
	fi
	dmesg_check "netns removal"
fi

# --- a) READ responder killed while it answers ------------------------------------
# 8 MiB READs on RD_QPS QPs (RD_RATE, if set, shapes the switch port the
# responses cross); the responder is killed while the work queue that
# sends the rest of each response is starved.
# The responder sends the first 64 packets of a READ request as it
# arrives and the rest from the device's work queue.  starve_on confines
# unbound work to CPU 1 and runs a nice -19 hog there: the rest waits, so
# the responder is killed while its READs are being answered.
WQ_MASK=/sys/devices/virtual/workqueue/cpumask
HOG='' WQ_OLD=''
starve_on() {
	[ -w "$WQ_MASK" ] && [ -d /sys/devices/system/cpu/cpu1 ] || return 0
	read -r WQ_OLD <"$WQ_MASK"
	echo 2 >"$WQ_MASK"
	taskset -c 1 nice -n -19 bash -c 'while :; do :; done' &
	HOG=$!
}
starve_off() {
	[ -z "$HOG" ] || { kill -9 "$HOG"; wait "$HOG"; } 2>/dev/null
	[ -z "$WQ_OLD" ] || echo "$WQ_OLD" >"$WQ_MASK"
	HOG='' WQ_OLD=''
}
# tx_past B0 N: the switch port towards hostA sent more than N bytes since B0
tx_past() { [ $(($(sw_port_bytes "$TOPO_SW" "$TOPO_PORT_A" tx) - $1)) -gt "$2" ]; }
read_kill() { # TRY
	local try=$1 spid cpid b0 b1 st
	ip netns exec "$TOPO_B" ib_read_bw -d "$RC_DEV_B" -x "$GID_B" -s 8388608 -n 100000 -F \
		-q "$RD_QPS" >"/tmp/rd$try.srv" 2>&1 &
	spid=$!
	b0=$(sw_port_bytes "$TOPO_SW" "$TOPO_PORT_A" tx)
	cpid=''
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		bsleep 1
		ip netns exec "$TOPO_A" ib_read_bw -d "$RC_DEV_A" -x "$GID_A" -s 8388608 -n 100000 -F \
			-q "$RD_QPS" "$MGMT_B_IP" >"/tmp/rd$try.cli" 2>&1 &
		cpid=$!
		bsleep 2
		[ "$(state "$cpid")" != Z ] && [ "$(state "$cpid")" != - ] && break
		wait "$cpid"
		cpid=''
		grep -q "Couldn't connect" "/tmp/rd$try.cli" || break
	done
	# READ responses flowing: 2 MiB through the shaped port
	if [ -z "$cpid" ] || ! wait_for 60 tx_past "$b0" 2097152; then
		t_fail "try $try: ib_read_bw 8 MiB READs running" \
			"$(tail -n 5 "/tmp/rd$try.cli" "/tmp/rd$try.srv")"
		kill -9 "$spid" ${cpid:+"$cpid"} 2>/dev/null
		gone "$spid" 10 || WEDGED=1
		return 1
	fi
	starve_on
	bsleep 1
	b1=$(sw_port_bytes "$TOPO_SW" "$TOPO_PORT_A" tx)
	kill -9 "$spid"
	starve_off
	if gone "$spid" 10; then
		t_ok "try $try: READ responder killed after $(((b1 - b0) >> 20)) MiB: gone within 10 s"
	else
		st=$(state "$spid")
		t_fail "try $try: READ responder killed after $(((b1 - b0) >> 20)) MiB: gone within 10 s" \
			"state $st" "$(cat "/proc/$spid/stack" 2>/dev/null)"
		WEDGED=1
	fi
	kill -9 "$cpid" 2>/dev/null
	gone "$cpid" 10 || WEDGED=1
	[ "$WEDGED" = 0 ] || return 1
	wait "$spid" "$cpid" 2>/dev/null
	local nm nq
	nm=$(res_of mr "$RC_DEV_B" ib_read_bw) nq=$(res_of qp "$RC_DEV_B" ib_read_bw)
	if [ "$nm" -eq 0 ] && [ "$nq" -eq 0 ]; then
		t_ok "try $try: no MR or QP of the killed responder left"
	else
		t_fail "try $try: no MR or QP of the killed responder left" "$nm MRs, $nq QPs" \
			"$(rdma resource show qp link "$RC_DEV_B/1")"
	fi
}

if [[ $MRC_RACES != *a* ]]; then
	:
elif [ "$WEDGED" = 1 ]; then
	t_skip "READ responder killed mid-response" "a device is wedged"
elif setup "READ responder killed"; then
	[ -z "$RD_RATE" ] || link_shape "$TOPO_SW" "$TOPO_PORT_A" rate "$RD_RATE" limit 4000
	# whole windows: READ requests of 256 segments, 192 sent from the
	# work queue (with cc, a small window fits one softirq pass)
	declare -A saved=()
	for p in cc credits pacing; do
		saved[$p]=$(rc_param "$p") && rc_param "$p" 0
	done
	for ((try = 1; try <= RD_TRIES; try++)); do
		read_kill "$try" || break
	done
	for p in "${!saved[@]}"; do rc_param "$p" "${saved[$p]}"; done
	link_clear "$TOPO_SW" "$TOPO_PORT_A"
	if [ "$WEDGED" = 0 ]; then
		bounded "rdma link del $RC_DEV_B after the killed READs" 30 \
			rdma link del "$RC_DEV_B" || WEDGED=1
	else
		t_fail "rdma link del $RC_DEV_B after the killed READs" "not tried: the responder is stuck"
	fi
	dmesg_check "READ responder killed"
fi
t_summary

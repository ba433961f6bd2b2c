#!/bin/bash
# UD datagrams, the GSI QP and the RDMA connection manager over metaroce:
# two hosts behind the switch (MTU 9000, UD MTU 4096).
#  - how rdma_cm users find the netdev (rdma link, no device/ link);
#  - user UD through the provider (tests/tools/mrc_ud): immediate data,
#    the GRH in front of the payload (IPv4 and IPv6) as libibverbs parses
#    it, answers through an AH made from the completion with the Q_Key
#    high-bit rule, a receive buffer too short, no receive posted, a wrong
#    Q_Key; ibv_ud_pingpong;
#  - crafted datagrams: every malformed one counted by its drop reason, a
#    junk MAD to QP1 does no harm;
#  - rdma_cm over the kernel's GSI QP: rping, ucmatose, udaddy, perftest
#    with -R (RC and UD), each checked against the switch's port counters;
#    rdma-core 56.1's own RDMA-CM tests (test_rdmacm, if pyverbs is built).
# vm-test-timeout: 900
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

MRC_UD=$RC_REPO/tests/tools/mrc_ud

rc_dmesg_mark
if ! rc_setup --mtu 9000 >/tmp/rc_setup.log 2>&1; then
	t_fail "two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
	t_summary
	exit 1
fi
t_ok "two hosts with metaroce devices (GID index $GID_A / $GID_B)"
if [ ! -x "$MRC_UD" ] || [ "$MRC_UD.c" -nt "$MRC_UD" ]; then
	make -s -C "$RC_REPO/tests/tools" mrc_ud >/tmp/mrc_ud_build.log 2>&1 ||
		t_diag "building mrc_ud: $(cat /tmp/mrc_ud_build.log)"
fi
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1

logs() { tail -n 20 "/tmp/$1.srv" "/tmp/$1.cli" 2>/dev/null; }

# gid6_index DEV IPV6: index of the RoCE v2 GID of a (fully written) address
gid6_index() {
	local dev=$1 want=$2 line idx type
	while IFS= read -r line; do
		[ "${line#*:}" = "$want" ] || continue
		idx=${line%%:*}
		idx=${idx##*/}
		read -r type <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$idx" 2>/dev/null || continue
		if [ "$type" = "RoCE v2" ]; then echo "$idx"; return 0; fi
	done < <(grep -H . /sys/class/infiniband/"$dev"/ports/1/gids/* 2>/dev/null)
	return 1
}
GID6_A=$(gid6_index "$RC_DEV_A" fd00:0000:0000:0000:0000:0000:0000:0001)
GID6_B=$(gid6_index "$RC_DEV_B" fd00:0000:0000:0000:0000:0000:0000:0002)

# changed BEFORE AFTER: the counters that moved, "name +delta ..."
changed() {
	local -n _c0=$1 _c1=$2
	local k out=''
	for k in "${!_c1[@]}"; do
		[ "${_c1[$k]}" = "${_c0[$k]:-0}" ] || out+=" $k +$((${_c1[$k]} - ${_c0[$k]:-0}))"
	done
	echo "${out# }"
}

# wire_bytes PORT: bytes the switch sent out of PORT (towards its host)
wire_bytes() { sw_port_bytes "$TOPO_SW" "$1" tx; }

# --- how rdma_cm users find the netdev -------------------------------------------
# rdma-core 56.1's test suite asks `rdma link show -j` for the port's netdev
# first and only then looks for /sys/class/infiniband/DEV/device/net; the
# device has no parent device (like rxe), which NCCL's topology code
# handles (see Documentation/infiniband/metaroce.rst).
out=$(in_host "$TOPO_A" rdma link show -j 2>&1)
if [[ $out == *"\"ifname\":\"$RC_DEV_A\""* && $out == *"\"netdev\":\"$TOPO_DEV\""* ]] &&
	[ ! -e "/sys/class/infiniband/$RC_DEV_A/device" ]; then
	t_ok "rdma link show -j names $TOPO_DEV as the netdev of $RC_DEV_A/1; no device/ link"
else
	t_fail "rdma link show -j names the netdev; no device/ link" "$out" \
		"$(ls -l "/sys/class/infiniband/$RC_DEV_A/" 2>&1)"
fi
out=$(rdma res show qp type GSI 2>&1)
if [[ $out == *"$RC_DEV_A"*"lqpn 1 "* && $out == *"$RC_DEV_B"*"lqpn 1 "* ]]; then
	t_ok "each device has the GSI QP (QP1) of the MAD layer"
else
	t_fail "each device has the GSI QP (QP1)" "$out"
fi

# --- user UD through the provider (mrc_ud) ------------------------------------------
# ud_pair NAME SINK-ARGS -- SENDER-ARGS: sink in hostB, sender in hostA to the
# sink's QPN; sets SINK_RC, SEND_RC and prints nothing.  Logs /tmp/NAME.*
# With UD_STOP=1 the sink (expecting nothing) is stopped a second after the
# sender is done, instead of running out its time.
ud_pair() {
	local name=$1 sargs=() cargs=() spid qpn
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	: >"/tmp/$name.srv"
	ip netns exec "$TOPO_B" timeout 60 "$MRC_UD" -d "$RC_DEV_B" "${sargs[@]}" >"/tmp/$name.srv" 2>&1 &
	spid=$!
	wait_for 20 grep -q MRC_UD_QPN "/tmp/$name.srv"
	qpn=$(sed -n 's/^MRC_UD_QPN qpn=//p' "/tmp/$name.srv")
	SEND_RC=0
	ip netns exec "$TOPO_A" timeout 60 "$MRC_UD" -d "$RC_DEV_A" -q "${qpn:-0}" "${cargs[@]}" >"/tmp/$name.cli" 2>&1 || SEND_RC=$?
	SINK_RC=0
	if [ "${UD_STOP:-0}" = 1 ]; then
		sleep 1
		kill "$spid" 2>/dev/null
	fi
	wait "$spid" || SINK_RC=$?
}
wcs() { grep -c '^MRC_UD_WC .*status=success .*grh=ok data=ok' "/tmp/$1.srv"; }

rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
before=$(wire_bytes "$TOPO_PORT_B")
ud_pair ud4 -g "$GID_B" -n 20 -e -- -g "$GID_A" -c "$TOPO_B_IP" -s 1000 -n 20 -e
wire=$(($(wire_bytes "$TOPO_PORT_B") - before))
sgids=$(grep -c "sgid=::ffff:$TOPO_A_IP\$" /tmp/ud4.srv)
if [ "$SINK_RC" -eq 0 ] && [ "$SEND_RC" -eq 0 ] && [ "$(wcs ud4)" -eq 20 ] &&
	[ "$sgids" -eq 20 ] && [ "$wire" -ge $((20 * 1000)) ] &&
	grep -q 'MRC_UD_RESULT ok=20 bad=0 sent=20 answers=20' /tmp/ud4.cli; then
	t_ok "UD over IPv4: 20 x 1000 B with immediate, GRH and source GID ::ffff:$TOPO_A_IP, 20 answers via create_ah_from_wc and Q_Key 0x80000000 ($wire wire bytes)"
else
	t_fail "UD over IPv4 with immediate data, GRH, answers (sink $SINK_RC, sender $SEND_RC, $wire wire bytes)" "$(logs ud4)"
fi

if [ -n "$GID6_A" ] && [ -n "$GID6_B" ]; then
	ud_pair ud6 -g "$GID6_B" -n 10 -e -- -g "$GID6_A" -c "$TOPO_B_IP6" -s 4096 -n 10 -e
	if [ "$SINK_RC" -eq 0 ] && [ "$SEND_RC" -eq 0 ] && [ "$(wcs ud6)" -eq 10 ] &&
		[ "$(grep -c "sgid=$TOPO_A_IP6\$" /tmp/ud6.srv)" -eq 10 ]; then
		t_ok "UD over IPv6: 10 x 4096 B (a full MTU), IPv6 header as GRH, source GID $TOPO_A_IP6, answers"
	else
		t_fail "UD over IPv6 (sink $SINK_RC, sender $SEND_RC)" "$(logs ud6)"
	fi
else
	t_fail "UD over IPv6: IPv6 GIDs" "A: '$GID6_A' B: '$GID6_B'"
fi

# a receive buffer too short: that WQE completes in error, the QP goes on
rc_snap b0 "$RC_DEV_B"
ud_pair udlen -g "$GID_B" -n 2 -l 100 -t 15 -- -g "$GID_A" -c "$TOPO_B_IP" -s 200,60 -n 2
rc_snap b1 "$RC_DEV_B"
if grep -q '^MRC_UD_WC .*status=local length error' /tmp/udlen.srv &&
	grep -q '^MRC_UD_WC .*status=success byte_len=100 .*grh=ok data=ok' /tmp/udlen.srv &&
	[ "$(rc_delta b0 b1 drop_bad_length)" -eq 1 ]; then
	t_ok "a datagram longer than the receive buffer: IBV_WC_LOC_LEN_ERR (drop_bad_length 1), the next one arrives"
else
	t_fail "datagram longer than the receive buffer (drop_bad_length $(rc_delta b0 b1 drop_bad_length))" "$(logs udlen)"
fi

# nothing posted: dropped and counted, no RNR (the sender completes)
rc_snap b0 "$RC_DEV_B"
UD_STOP=1 ud_pair udnorecv -g "$GID_B" -r 0 -n 0 -t 50 -- -g "$GID_A" -c "$TOPO_B_IP" -s 64 -n 5
rc_snap b1 "$RC_DEV_B"
if [ "$SEND_RC" -eq 0 ] && ! grep -q MRC_UD_WC /tmp/udnorecv.srv &&
	[ "$(rc_delta b0 b1 drop_no_resource)" -eq 5 ]; then
	t_ok "no receive posted: 5 datagrams dropped (drop_no_resource 5), sends complete"
else
	t_fail "no receive posted: drop_no_resource $(rc_delta b0 b1 drop_no_resource), expected 5" "$(logs udnorecv)" "$(changed b0 b1)"
fi

# a wrong Q_Key: dropped as not from an allowed source
rc_snap b0 "$RC_DEV_B"
UD_STOP=1 ud_pair udqkey -g "$GID_B" -n 0 -t 50 -- -g "$GID_A" -c "$TOPO_B_IP" -k 0x22222222 -s 64 -n 3
rc_snap b1 "$RC_DEV_B"
if [ "$SEND_RC" -eq 0 ] && ! grep -q MRC_UD_WC /tmp/udqkey.srv &&
	[ "$(rc_delta b0 b1 drop_bad_source)" -eq 3 ]; then
	t_ok "wrong Q_Key: 3 datagrams dropped (drop_bad_source 3), nothing delivered"
else
	t_fail "wrong Q_Key: drop_bad_source $(rc_delta b0 b1 drop_bad_source), expected 3" "$(logs udqkey)" "$(changed b0 b1)"
fi

# ibv_ud_pingpong (TCP exchange over the management link)
for size in 2048 4096; do
	name=udpp_$size
	rc=0
	before=$(wire_bytes "$TOPO_PORT_B")
	srv_cli --timeout 90 --log "/tmp/$name" \
		in_host "$TOPO_B" ibv_ud_pingpong -d "$RC_DEV_B" -g "$GID_B" -s "$size" -n 300 -- \
		in_host "$TOPO_A" ibv_ud_pingpong -d "$RC_DEV_A" -g "$GID_A" -s "$size" -n 300 "$MGMT_B_IP" || rc=$?
	wire=$(($(wire_bytes "$TOPO_PORT_B") - before))
	oc=$(cat "/tmp/$name.cli" 2>/dev/null)
	if [ "$rc" -eq 0 ] && [[ $oc =~ ([0-9]+)\ bytes\ in\ ([0-9.]+)\ seconds\ =\ ([0-9.]+)\ Mbit/sec ]] &&
		[ "${BASH_REMATCH[1]}" -eq $((2 * size * 300)) ] && [ "$wire" -ge $((size * 300)) ]; then
		t_ok "ibv_ud_pingpong -s $size -n 300: ${BASH_REMATCH[3]} Mbit/s, $wire bytes towards hostB"
	else
		t_fail "ibv_ud_pingpong -s $size -n 300 (exit $rc, $wire wire bytes)" "$(logs "$name")"
	fi
done

# --- crafted datagrams: each malformed one counted by its reason ------------------------
# send_raw HEXHEADER PAYLEN: one UDP datagram to hostB's metaroce port.
# printf writes binary data in pieces (each would be a datagram): build
# the datagram in a file, cat writes it at once.
send_raw() {
	local hex=$1 n=$2 esc='' i pad
	for ((i = 0; i < ${#hex}; i += 2)); do esc+="\\x${hex:i:2}"; done
	pad=$(printf '%*s' "$n" '')
	printf '%b' "$esc${pad// /A}" >/tmp/raw.bin
	cat /tmp/raw.bin >"/dev/udp/$TOPO_B_IP/4792"
}
# base header: ver opcode flags hdrw | dqpn | sqpn | psn | tsval | paylen pmtu 0
ud_hdr() { # DQPN FLAGS PSN PAYLEN PMTU HDRW QKEY IMM
	printf '2006%02x%02x%08x%08x%08x00000000%04x%02x00%08x%08x' \
		"$2" "$6" "$1" 66 "$3" "$4" "$5" "$7" "$8"
}
rc_snap b0 "$RC_DEV_B"
# shellcheck disable=SC2016 # expanded by the inner bash
in_host "$TOPO_A" bash -c "$(declare -f send_raw); TOPO_B_IP=$TOPO_B_IP
	send_raw $(ud_hdr 1 0 0 256 10 8 0x11111111 0) 256     # QP1, wrong Q_Key
	send_raw $(ud_hdr 0xabcdef 0 0 16 10 8 0x11111111 0) 16 # no such QP
	send_raw $(ud_hdr 1 0 7 16 10 8 0x80010000 0) 16       # PSN not 0
	send_raw $(ud_hdr 1 1 0 16 10 8 0x80010000 0) 16       # ACKREQ
	send_raw $(ud_hdr 1 0 0 1025 10 8 0x80010000 0) 1025   # above the MTU
	send_raw $(ud_hdr 1 0 0 16 10 9 0x80010000 0) 12       # header length
	send_raw 2006000800000001 12                           # truncated
	send_raw $(ud_hdr 1 0 0 256 10 8 0x80010000 0) 256     # a junk MAD
" >/tmp/raw.log 2>&1
sleep 1
rc_snap b1 "$RC_DEV_B"
bad=''
for k in bad_source:1 no_qp:1 bad_field:2 bad_pay_len:1 bad_hdr_len:1 truncated:1; do
	d=$(rc_delta b0 b1 "drop_${k%:*}")
	[ "$d" -eq "${k#*:}" ] || bad+=" drop_${k%:*}=$d (want ${k#*:})"
done
if [ -z "$bad" ] && [ "$(rc_delta b0 b1 rx_packets)" -ge 8 ]; then
	t_ok "8 crafted datagrams: 7 dropped by reason (bad_source, no_qp, bad_field x2, bad_pay_len, bad_hdr_len, truncated), a junk MAD to QP1 taken"
else
	t_fail "crafted datagrams counted by drop reason:$bad (rx_packets $(rc_delta b0 b1 rx_packets))" "$(cat /tmp/raw.log)" "$(changed b0 b1)"
fi

# --- rdma_cm: the connection manager's MADs over the GSI QP -------------------------------
# cm_pair NAME PORT-TO-WATCH MIN-BYTES SERVER-NS SERVER... -- CLIENT-NS
# CLIENT...: the server in the background, the client once the server's
# rdma_cm ID listens; both must exit 0 and at least MIN-BYTES must cross
# the switch towards PORT.  Logs /tmp/NAME.srv and .cli.
listening() { rdma res show cm_id 2>/dev/null | grep -q 'state LISTEN'; }
cm_pair() {
	local name=$1 port=$2 min=$3 sns=$4 srv=() cns cli=() desc rc=0 src=0 before wire pid
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	cns=$2
	shift 2
	cli=("$@")
	desc=$CM_DESC
	before=$(wire_bytes "$port")
	ip netns exec "$sns" timeout 120 "${srv[@]}" >"/tmp/$name.srv" 2>&1 &
	pid=$!
	wait_for 20 listening || t_diag "$name: no listening rdma_cm ID after 20 s"
	ip netns exec "$cns" timeout 120 "${cli[@]}" >"/tmp/$name.cli" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || kill "$pid" 2>/dev/null
	wait "$pid" || src=$?
	[ "$rc" -ne 0 ] || rc=$src
	wire=$(($(wire_bytes "$port") - before))
	if [ "$rc" -ne 0 ]; then
		t_fail "$desc (exit $rc)" "$(logs "$name")"
		return 1
	fi
	if [ "$wire" -lt "$min" ]; then
		t_fail "$desc: only $wire bytes crossed the switch towards ${port}, expected >= $min" "$(logs "$name")"
		return 1
	fi
	CM_WIRE=$wire
	return 0
}
rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"

CM_DESC="rping -C 50 -S 4096 -V"
if cm_pair rping "$TOPO_PORT_A" $((50 * 4096)) \
	"$TOPO_B" rping -s -a "$TOPO_B_IP" -C 50 -S 4096 -V -v -- \
	"$TOPO_A" rping -c -a "$TOPO_B_IP" -C 50 -S 4096 -V -v; then
	n=$(grep -c '^ping data: rdma-ping-' /tmp/rping.cli)
	if [ "$n" -eq 50 ]; then
		t_ok "$CM_DESC: 50 verified pings, $CM_WIRE bytes towards hostA"
	else
		t_fail "$CM_DESC: $n of 50 pings printed" "$(logs rping)"
	fi
fi

CM_DESC="ucmatose -c 2 -C 100 -S 4096"
if cm_pair ucma "$TOPO_PORT_B" $((2 * 100 * 4096)) \
	"$TOPO_B" ucmatose -b "$TOPO_B_IP" -c 2 -C 100 -S 4096 -- \
	"$TOPO_A" ucmatose -s "$TOPO_B_IP" -c 2 -C 100 -S 4096; then
	if grep -q 'return status 0' /tmp/ucma.cli && grep -q 'return status 0' /tmp/ucma.srv; then
		t_ok "$CM_DESC: 2 connections, return status 0 on both sides, $CM_WIRE bytes towards hostB"
	else
		t_fail "$CM_DESC: test complete" "$(logs ucma)"
	fi
fi

CM_DESC="udaddy -c 2 -C 100 -S 2048 (UD through rdma_cm)"
if cm_pair udaddy "$TOPO_PORT_B" $((2 * 100 * 2048)) \
	"$TOPO_B" udaddy -b "$TOPO_B_IP" -c 2 -C 100 -S 2048 -- \
	"$TOPO_A" udaddy -s "$TOPO_B_IP" -c 2 -C 100 -S 2048; then
	if grep -q 'return status 0' /tmp/udaddy.cli && grep -q 'return status 0' /tmp/udaddy.srv; then
		t_ok "$CM_DESC: return status 0 on both sides, $CM_WIRE bytes towards hostB"
	else
		t_fail "$CM_DESC: test complete" "$(logs udaddy)"
	fi
fi

# perftest with the rdma_cm connection (-R): RC bandwidth and latency, UD
perf_line() {
	awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print; exit }' "$1"
}
perf_cm() { # NAME PORT MIN TOOL ARGS...
	local name=$1 port=$2 min=$3 tool=$4 line bytes iters
	shift 4
	CM_DESC="$tool -R $*"
	cm_pair "$name" "$port" "$min" \
		"$TOPO_B" "$tool" -R -d "$RC_DEV_B" -F "$@" -- \
		"$TOPO_A" "$tool" -R -d "$RC_DEV_A" -F "$@" "$TOPO_B_IP" || return
	line=$(perf_line "/tmp/$name.cli")
	read -r bytes iters _ <<<"$line"
	if [ -n "$line" ] && [ "${iters:-0}" -gt 0 ]; then
		t_ok "$CM_DESC: $iters x $bytes B, $CM_WIRE bytes crossed the switch"
	else
		t_fail "$CM_DESC: result line" "$(logs "$name")"
	fi
}
perf_cm send_bw "$TOPO_PORT_B" $((200 * 65536)) ib_send_bw -s 65536 -n 200
perf_cm write_bw "$TOPO_PORT_B" $((200 * 65536)) ib_write_bw -s 65536 -n 200
perf_cm read_lat "$TOPO_PORT_A" $((200 * 64)) ib_read_lat -s 64 -n 200
perf_cm ud_send_bw "$TOPO_PORT_B" $((200 * 2048)) ib_send_bw -c UD -s 2048 -n 200

# rdma-core 56.1's own RDMA-CM tests (pyverbs): they find the netdev through
# `rdma link show -j`; client and server both on mrcA (through loopback)
suite=${METAROCE_CACHE:-/var/cache/metaroce}/rdma-core-56.1/build/bin/run_tests.py
if [ -x "$suite" ]; then
	(cd /tmp && in_host "$TOPO_A" timeout 300 "$suite" --dev "$RC_DEV_A" -v test_rdmacm) >/tmp/suite.log 2>&1
	ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' /tmp/suite.log)
	if grep -q '^OK' /tmp/suite.log && [ "${ran:-0}" -ge 10 ]; then
		t_ok "rdma-core 56.1 test_rdmacm on $RC_DEV_A: $ran tests, $(grep '^OK' /tmp/suite.log) (multicast is not supported)"
	else
		t_fail "rdma-core 56.1 test_rdmacm on $RC_DEV_A" "$(tail -n 40 /tmp/suite.log)"
	fi
else
	t_skip "rdma-core 56.1 test_rdmacm" "no $suite (pyverbs not built)"
fi

rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
t_diag "$RC_DEV_A during rdma_cm: tx_packets $(rc_delta a0 a1 tx_packets), rx_packets $(rc_delta a0 a1 rx_packets); $RC_DEV_B drops: no_qp $(rc_delta b0 b1 drop_no_qp), bad_source $(rc_delta b0 b1 drop_bad_source), bad_state $(rc_delta b0 b1 drop_bad_state), no_resource $(rc_delta b0 b1 drop_no_resource)"

# --- afterwards --------------------------------------------------------------------
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

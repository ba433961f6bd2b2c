#!/bin/bash
# RC data integrity under loss, reordering, duplication and outages:
# mrc_verify (every byte and every completion checked) across netem on the
# switch ports. netem on pb shapes traffic towards hostB, on pa towards
# hostA; mrc_verify's client runs in hostA, so with --dir c2s (only hostA
# issues requests) pb carries the data and pa the ACKs.
#
# Every case must finish with all data verified and no error completion.
# mrc_waw checks that overlapping WRITEs leave the last one's data.
# Jumbo segments: 8 KiB packets by default, 4 KiB with jumbo=N.
# Selective retransmission: hostA's retransmitted_packets must stay close
# to what netem dropped: retransmitted <= 3 x lost + (50 + 1 % of tx).
# vm-test-timeout: 420
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

rc_dmesg_mark
if ! t_check "build mrc_verify and mrc_waw" rc_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000

SW=$TOPO_SW PA=$TOPO_PORT_A PB=$TOPO_PORT_B
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1
TOTAL_RETX=0 TOTAL_LOST=0

shape() { # shape DEV NETEM-ARGS|-
	local dev=$1
	shift
	link_clear "$SW" "$dev"
	# shellcheck disable=SC2068 # netem words
	[ "$1" = - ] || link_shape "$SW" "$dev" $@
}

# lcase DESC PB-SHAPE PA-SHAPE CHECK [--bg CMD] -- MRC_VERIFY-ARGS...
# CHECK: data (lost = drops on pb), ack (lost = drops on pa), zero (no
# loss), report (no ratio assertion). With --bg, CMD runs 1 s into the
# transfer (e.g. an outage).
lcase() {
	local desc=$1 spb=$2 spa=$3 check=$4 bg='' rc=0 t0 el pid
	shift 4
	if [ "$1" = --bg ]; then bg=$2; shift 2; fi
	[ "$1" = -- ] && shift
	shape "$PB" "$spb"
	shape "$PA" "$spa"
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	t0=$SECONDS
	rc_verify --timeout 240 --log /tmp/loss "$@" &
	pid=$!
	if [ -n "$bg" ]; then
		# mid-run: one second after both sides started the transfer
		wait_for 60 grep -q running /tmp/loss.cli
		sleep 1
		if kill -0 "$pid" 2>/dev/null; then
			eval "$bg"
		else
			t_fail "$desc: still running when the disturbance starts"
		fi
	fi
	wait "$pid" || rc=$?
	el=$((SECONDS - t0))
	[ -z "${LINK_OUTAGE_PID:-}" ] || wait "$LINK_OUTAGE_PID" 2>/dev/null
	LINK_OUTAGE_PID=''
	local dpb dpa spb_n spa_n
	dpb=$(netem_stat "$SW" "$PB" dropped) dpa=$(netem_stat "$SW" "$PA" dropped)
	spb_n=$(netem_stat "$SW" "$PB" sent) spa_n=$(netem_stat "$SW" "$PA" sent)
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	link_clear "$SW" "$PB"
	link_clear "$SW" "$PA"

	local gp txA retxA retxB rackA tlpA rtoA dupB dupA oooB lost C
	gp=$(rc_result /tmp/loss.cli total_mbps)
	txA=$(rc_delta a0 a1 tx_packets) retxA=$(rc_delta a0 a1 retransmitted_packets)
	retxB=$(rc_delta b0 b1 retransmitted_packets)
	rackA=$(rc_delta a0 a1 rack_losses) tlpA=$(rc_delta a0 a1 tail_loss_probes)
	rtoA=$(rc_delta a0 a1 rto_events)
	dupB=$(rc_delta b0 b1 duplicate_packets) dupA=$(rc_delta a0 a1 duplicate_packets)
	oooB=$(rc_delta b0 b1 out_of_order_packets)
	t_diag "$desc: ${el}s, ${gp:-?} Mbit/s verified; netem dropped pb $dpb pa $dpa (sent pb $spb_n pa $spa_n); A: tx $txA retx $retxA (rack $rackA tlp $tlpA rto $rtoA) dup $dupA; B: retx $retxB dup $dupB ooo $oooB"

	rc_verified "$desc: data verified, no error completion" "$rc" /tmp/loss \
		"$(rc_result /tmp/loss.cli ops) + $(rc_result /tmp/loss.srv ops) ops"
	if [ "$(rc_delta a0 a1 retry_exceeded)" -ne 0 ] || [ "$(rc_delta b0 b1 retry_exceeded)" -ne 0 ]; then
		t_fail "$desc: no retry_exceeded" "A $(rc_delta a0 a1 retry_exceeded) B $(rc_delta b0 b1 retry_exceeded)"
	fi

	C=$((50 + txA / 100))
	case $check in
	data) lost=$dpb ;;
	ack) lost=$dpa ;;
	zero) lost=0 ;;
	*) return 0 ;;
	esac
	TOTAL_RETX=$((TOTAL_RETX + retxA)) TOTAL_LOST=$((TOTAL_LOST + lost))
	local ratio
	ratio=$(awk -v r="$retxA" -v l="$lost" 'BEGIN { if (l) printf "%.2f", r / l; else printf "n/a" }')
	if [ "$check" = data ] && [ "$lost" -gt 0 ]; then
		if [ "$retxA" -gt 0 ]; then
			t_ok "$desc: retransmitted_packets > 0 ($retxA for $lost lost)"
		else
			t_fail "$desc: retransmitted_packets > 0" "netem dropped $lost, retransmitted 0"
		fi
	fi
	# Gate: far from go-back-N, which resends a window per loss.
	G=$((3 * lost + 50 + txA * 15 / 100))
	if [ "$retxA" -le "$G" ]; then
		t_ok "$desc: no go-back-N: $retxA retransmitted for $lost lost (ratio $ratio, bound $G)"
	else
		t_fail "$desc: no go-back-N: $retxA retransmitted for $lost lost (ratio $ratio) exceeds 3 x lost + 50 + 15 % of tx ($G)" \
			"tx $txA rack_losses $rackA tail_loss_probes $tlpA rto_events $rtoA; hostB duplicate_packets $dupB out_of_order $oooB"
	fi
	# Target: retransmissions close to losses.  The guest reorders by
	# milliseconds (spraying over per-CPU backlogs, vCPUs that lose the
	# host CPU); the RACK window adapts to it (srtt + 4 rttvar).  A host
	# busy with other guests can still push reordering past it.
	if [ "$retxA" -le $((3 * lost + C)) ]; then
		t_ok "$desc: selective retransmission: $retxA retransmitted for $lost lost (ratio $ratio, bound $((3 * lost + C)))"
	else
		t_fail "$desc: selective retransmission: $retxA retransmitted for $lost lost (ratio $ratio) exceeds 3 x lost + $C" \
			"tx $txA rack_losses $rackA tail_loss_probes $tlpA rto_events $rtoA spurious_retransmits $(rc_delta a0 a1 spurious_retransmits); hostB duplicate_packets $dupB out_of_order $oooB"
	fi
	# duplicates at B come from A's retransmissions (no netem duplication here)
	if [ "$dupB" -le $((retxA + C)) ]; then
		t_ok "$desc: duplicate_packets at hostB modest ($dupB <= retransmitted $retxA + $C)"
	else
		t_fail "$desc: duplicate_packets at hostB modest" "$dupB duplicates for $retxA retransmissions"
	fi
}

DATA_OPS=--ops=send,send_imm,write,write_imm

# --- self-test: the checker catches damage ------------------------------------------
# --corrupt N damages op N of the client's stream (payload byte, immediate,
# or the READ/atomic result as it lands): the run must fail, naming it.
selftest() { # DESC PATTERN ARGS...
	local desc=$1 pat=$2 rc=0
	shift 2
	rc_verify --timeout 60 --log /tmp/self --corrupt 25 -S 7 -q 1 -n 60 "$@" || rc=$?
	if [ "$rc" -ne 0 ] && grep -q -E "ERROR: .*$pat" /tmp/self.cli /tmp/self.srv; then
		t_ok "self-test: $desc is detected ($(grep -h -o -E "ERROR: .*$pat" /tmp/self.cli /tmp/self.srv | head -n 1 | cut -c1-90)...)"
	else
		t_fail "self-test: $desc is detected" "exit $rc" "$(grep -h -E 'ERROR|self-test|RESULT' /tmp/self.cli /tmp/self.srv)"
	fi
}
selftest "a damaged SEND/WRITE payload" "(payload|data) wrong" --ops=send,write -s 64K
selftest "a wrong immediate" "imm_data" --ops=write_imm,send_imm -s 0
selftest "a damaged READ result" "READ data wrong" --ops=read -s 64K
selftest "a damaged atomic result" "original value" --ops=atomic

# --- lossless baselines ------------------------------------------------------------
lcase "0 % loss, hostA->hostB sends/writes" - - zero -- \
	--dir c2s "$DATA_OPS" -q 2 -s 256K -n 300
lcase "0 % loss, both directions, all ops, 1 MiB" - - report -- \
	-q 4 -s 1M -n 120

# --- segment sizes ------------------------------------------------------------------
# IP fragments host $1 has created so far
frags() { in_host "$1" awk '$1 == "Ip:" && !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
	$1 == "Ip:" { print $c["FragCreates"] }' /proc/net/snmp; }
# seg_case VAL LO HI LOG WHAT RC_VERIFY_ARGS...: one mrc_verify run with the
# module parameter jumbo at VAL; the data must verify and hostA's mean
# packet (metaroce header + payload) lie within LO..HI; IP must create
# no fragments.
seg_case() {
	local val=$1 lo=$2 hi=$3 log=$4 what=$5 rc=0 tx txb mean f0 f1
	shift 5
	rc_param jumbo "$val"
	rc_snap a0 "$RC_DEV_A"
	f0=$(frags "$TOPO_A")
	rc_verify --timeout 120 --log "$log" "$@" || rc=$?
	f1=$(frags "$TOPO_A")
	rc_snap a1 "$RC_DEV_A"
	rc_param jumbo Y
	tx=$(rc_delta a0 a1 tx_packets) txb=$(rc_delta a0 a1 tx_bytes)
	mean=$((txb / (tx ? tx : 1)))
	rc_verified "$what: data verified" "$rc" "$log" \
		"$(rc_result "$log.cli" ops) ops"
	if [ "$mean" -ge "$lo" ] && [ "$mean" -le "$hi" ] && [ "$f1" -eq "$f0" ]; then
		t_ok "$what: hostA's mean packet $mean B ($tx packets), within $lo..$hi; no IP fragments"
	else
		t_fail "$what: hostA's mean packet within $lo..$hi, no IP fragments" \
			"$mean B ($txb bytes in $tx packets), fragments created $((f1 - f0))"
	fi
}

# Jumbo segments: on 9000-byte netdevs a QP at path MTU 4096 sends 8 KiB
# segments once the peer's ACKs advertise them (module parameter jumbo,
# default Y); jumbo=N keeps the 4 KiB segments of the path MTU.  WRITEs
# and SENDs of 64-256 KiB, so full segments outweigh each message's short
# last one (a message of 64 KiB + 1 B still averages over 7300 B).
jumbo_case() { # VAL MIN MAX
	seg_case "$1" "$2" "$3" /tmp/jumbo "jumbo=$1" --dir c2s --ops=send,write -q 1 \
		--min-size 64K -s 256K -n 100
}
jumbo_case Y 7000 8248
jumbo_case N 3500 4152

# Segments that fill a 1500-byte MTU: the path MTU is 1024 there; a QP
# fills its 1472-byte datagrams (1440-byte WRITE and 1444-byte SEND
# segments, 1428 and 1440 with immediate data) once the peer's ACKs give
# its datagram limit.  jumbo=N keeps the path MTU's 1024-byte segments,
# so hostA's mean packet is at most 1068 B; with jumbo=Y it is well above
# (the first messages go before an ACK, and message ends are short).
fill_case() { # VAL MIN MAX
	seg_case "$1" "$2" "$3" /tmp/fill "MTU 1500, jumbo=$1: send, send_imm, write, write_imm of 100000 B" \
		"$DATA_OPS" --dir c2s -q 1 -s 100000 -n 100
}
for h in "$TOPO_A" "$TOPO_B"; do in_host "$h" ip link set dev "$TOPO_DEV" mtu 1500; done
fill_case Y 1150 1472
fill_case N 900 1068
for h in "$TOPO_A" "$TOPO_B"; do in_host "$h" ip link set dev "$TOPO_DEV" mtu 9000; done

# --- payloads by page reference -------------------------------------------------------
# With tx_zcopy (default Y) SEND, WRITE and READ response packets of 1 KiB
# or more carry the user MR's pages as fragments and the receiver copies
# out of the fragments; with N every payload is copied into the packet.
# All ops in both directions under 1 % loss both ways (resent packets are
# built again from the MR); --max-sge 16 adds gathers and scatters whose
# packets need more pieces than an skb has fragments, which are copied.
zc_case() { # VAL WHAT MRC_VERIFY-ARGS...
	local val=$1 what=$2 rc=0 za zb
	shift 2
	rc_param tx_zcopy "$val"
	shape "$PB" "loss 1%"
	shape "$PA" "loss 1%"
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	rc_verify --timeout 180 --log /tmp/zc "$@" || rc=$?
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	link_clear "$SW" "$PB"
	link_clear "$SW" "$PA"
	rc_param tx_zcopy Y
	za=$(rc_delta a0 a1 tx_zcopy_packets) zb=$(rc_delta b0 b1 tx_zcopy_packets)
	rc_verified "$what: data verified" "$rc" /tmp/zc \
		"$(rc_result /tmp/zc.cli ops) + $(rc_result /tmp/zc.srv ops) ops"
	if [ "$val" = Y ] && [ "$za" -gt 0 ] && [ "$zb" -gt 0 ]; then
		t_ok "$what: both hosts sent packets by page reference (tx_zcopy_packets A $za, B $zb)"
	elif [ "$val" = N ] && [ "$za" -eq 0 ] && [ "$zb" -eq 0 ]; then
		t_ok "$what: no packet by page reference with tx_zcopy=N"
	else
		t_fail "$what: tx_zcopy_packets as tx_zcopy=$val asks" "A $za, B $zb"
	fi
}
zc_case Y "tx_zcopy=Y, 1 % loss both ways, all ops" -q 2 -s 64K -n 200
zc_case N "tx_zcopy=N, 1 % loss both ways, all ops" -q 2 -s 64K -n 200
zc_case Y "tx_zcopy=Y, 16 SGEs per request and receive" --max-sge 16 -q 2 -s 8K -n 400

# --- loss on the data direction (towards hostB) -------------------------------------
lcase "1 % loss on the data direction" "loss 1%" - data -- \
	--dir c2s "$DATA_OPS" -q 2 -s 256K -n 300
lcase "10 % loss on the data direction" "loss 10%" - data -- \
	--dir c2s "$DATA_OPS" -q 2 -s 16K -n 300

# --- loss on the ACK direction (towards hostA) --------------------------------------
lcase "1 % loss on the ACK direction" - "loss 1%" ack -- \
	--dir c2s "$DATA_OPS" -q 2 -s 256K -n 300
lcase "10 % loss on the ACK direction" - "loss 10%" ack -- \
	--dir c2s "$DATA_OPS" -q 2 -s 16K -n 300

# --- READ and atomics under loss, both directions at once ---------------------------
lcase "1 % loss both ways, all ops, both directions" "loss 1%" "loss 1%" report -- \
	-q 2 -s 64K -n 300
lcase "10 % loss both ways, all ops, both directions" "loss 10%" "loss 10%" report -- \
	-q 2 -s 8K -n 200

# --- reordering and duplication -------------------------------------------------------
lcase "reordering (delay 1ms reorder 30% 50%) both ways, all ops" \
	"delay 1ms reorder 30% 50%" "delay 1ms reorder 30% 50%" report -- \
	-q 2 -s 64K -n 300
lcase "duplication 5 % both ways, all ops" "duplicate 5%" "duplicate 5%" report -- \
	-q 2 -s 64K -n 300
dupB=$(rc_delta b0 b1 duplicate_packets)
if [ "$dupB" -gt 0 ]; then
	t_ok "netem duplicates are counted as duplicate_packets ($dupB at hostB)"
else
	t_fail "netem duplicates are counted as duplicate_packets" "0 at hostB"
fi

# --- write-after-write order -----------------------------------------------------------
# Packets are placed as they arrive, so a late or resent packet of one WRITE
# can land after a later WRITE to the same bytes. mrc_waw posts 4 WRITEs to
# one buffer per round, then a SEND; the server checks every byte holds the
# last WRITE's pattern. write_overlap_cuts counts the late packets whose
# bytes a newer WRITE had already written (so the check had something to
# catch).
waw() { # waw DESC PB-SHAPE
	local desc=$1 rc=0 cuts
	shape "$PB" "$2"
	shape "$PA" -
	rc_snap b0 "$RC_DEV_B"
	srv_cli --timeout 120 --log /tmp/waw \
		in_host "$TOPO_B" "$MRC_WAW" -s -r 100 -w 4 -l 65536 "$TOPO_B_IP" -- \
		in_host "$TOPO_A" "$MRC_WAW" -r 100 -w 4 -l 65536 "$TOPO_B_IP" || rc=$?
	rc_snap b1 "$RC_DEV_B"
	cuts=$(rc_delta b0 b1 write_overlap_cuts)
	if [ "$rc" -eq 0 ] && grep -q '^waw: ok' /tmp/waw.srv && grep -q '^waw: ok' /tmp/waw.cli &&
		[ "$cuts" -gt 0 ]; then
		t_ok "$desc: 100 rounds of 4 overlapping 64 KiB WRITEs, the last one's data every time; $cuts late packets cut short at hostB"
	else
		t_fail "$desc: overlapping WRITEs keep the last one's data (exit $rc, write_overlap_cuts $cuts)" \
			"$(tail -n 5 /tmp/waw.cli)" "$(tail -n 5 /tmp/waw.srv)"
	fi
}
waw "2 % loss on the data direction" "loss 2%"
waw "reordering (delay 1ms reorder 30% 50%) on the data direction" "delay 1ms reorder 30% 50%"
shape "$PB" -

# --- outages mid-run ------------------------------------------------------------------
lcase "50 ms outage towards hostB mid-run" - - report \
	--bg "link_outage $SW $PB 50" -- -q 2 -s 64K -D 5
lcase "1 s outage towards hostA mid-run" - - report \
	--bg "link_outage $SW $PA 1000" -- -q 2 -s 64K -D 5
t_diag "over the ratio-checked cases: $TOTAL_RETX retransmitted for $TOTAL_LOST lost"

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

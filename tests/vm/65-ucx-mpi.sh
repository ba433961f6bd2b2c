#!/bin/bash
# UCX and Open MPI over metaroce (Debian 12: UCX 1.13, Open MPI 4.1).
# Two hosts behind the switch (rc_setup, MTU 9000, RDMA MTU 4096), devices
# mrcA in hostA and mrcB in hostB, control traffic on the management link.
#
#   ucx_info -d      lists rc_verbs and ud_verbs on mrcA:1
#   ucx_perftest     server in hostB, client in hostA (TCP exchange over the
#                    management link); UCX_NET_DEVICES=<dev>:1 and UCX_TLS
#                    limited to the verbs transports, so UCX cannot fall
#                    back to tcp or shared memory. Each run must name the
#                    expected transport on the metaroce device in its
#                    ep_cfg line (UCX_LOG_LEVEL=info), and the bytes must
#                    show up in both devices' counters and on the switch.
#                    ucx_perftest does not check data; the MPI runs do.
#                    ucp_put_bw does depend on it: every put writes the
#                    same buffer and the receiver waits for an end marker
#                    in its last byte, so a late packet of an earlier put
#                    landing after the last one hangs the run (it did, 1
#                    run in 12, until the responder kept write-after-write
#                    order; tests/tools/mrc_waw checks that directly).
#   Open MPI         tests/tools/mrc_allreduce (MPI_Allreduce from 8 B to
#                    16 MiB, every element checked on every rank), one
#                    rank per host:
#
#     mpirun --mca plm_rsh_agent tests/lib/netns-rsh   hosts are netns
#            --mca oob_tcp_if_include mg0    daemons call back over mg0
#            --mca pml ucx --mca btl self    MPI traffic only through UCX
#            -np 1 --host hostA env UCX_TLS=rc_verbs,ud_verbs,self
#                                   UCX_NET_DEVICES=mrcA:1 mrc_allreduce :
#            -np 1 --host hostB env UCX_TLS=rc_verbs,ud_verbs,self
#                                   UCX_NET_DEVICES=mrcB:1 mrc_allreduce
#
#     mpirun runs in hostA; netns-rsh starts each orted with `ip netns exec
#     HOST` in a UTS namespace named HOST (distinct node names). Both
#     devices are visible in every namespace (ib_core's shared netns mode),
#     so each rank gets its own device in an MPMD command line. The UCX
#     variables go through `env` in each application context: mpirun's -x
#     applies only to the context it is written in (measured: a -x before
#     the first context did not reach the rank on hostB). As root Open MPI
#     needs OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
#     Without --mca pml ucx, Open MPI 4.1 chose its ob1 PML (measured, also
#     with pml_ucx_devices set to mrc*).
#
# UCX 1.13's ud_verbs takes the IP version of a RoCE datagram from
# ibv_wc.sl (mlx5's convention; UCX 1.19 reads the GRH instead) and drops
# datagrams whose destination is not one of its GIDs; the metaroce provider
# reports the packet type there (providers/metaroce, metaroce_cqe_to_wc()).
# Measured on the 2-core host: 295 s in all, of which tag_bw over ud_verbs
# 51 s (UCX's own UD reliability, slow in the emulated guest) and the
# 16 MiB allreduce run 64 s with the launch.
# vm-test-timeout: 600
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

ALLREDUCE=$RC_REPO/tests/tools/mrc_allreduce
RSH=$RC_REPO/tests/lib/netns-rsh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1

build_allreduce() {
	if [ -x "$ALLREDUCE" ] && ! [ "$ALLREDUCE.c" -nt "$ALLREDUCE" ]; then
		return 0
	fi
	make -s -C "$RC_REPO/tests/tools" mrc_allreduce
}

missing=''
for p in ucx_info ucx_perftest mpirun mpicc; do
	command -v "$p" >/dev/null || missing+=" $p"
done
if [ -n "$missing" ]; then
	t_fail "UCX and Open MPI installed (scripts/deps mpi)" "missing:$missing"
	t_summary
	exit 1
fi
rc_dmesg_mark
if ! t_check "build mrc_allreduce (mpicc)" build_allreduce; then t_summary; exit 1; fi
if ! rc_setup --mtu 9000 >/tmp/rc_setup.log 2>&1; then
	t_fail "two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
	t_summary
	exit 1
fi
t_ok "two hosts with metaroce devices (RoCE v2 IPv4 GID index $GID_A / $GID_B)"

# wire_bytes PORT: bytes the switch sent out of PORT (towards its host)
wire_bytes() { sw_port_bytes "$TOPO_SW" "$1" tx; }
# mgmt_bytes: bytes hostA sent on the management link
mgmt_bytes() { sw_port_bytes "$TOPO_A" "$MGMT_DEV" tx; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# --- ucx_info -d ------------------------------------------------------------------
# transports TL on DEVICE: "Transport: TL" followed by "Device: DEVICE"
in_host "$TOPO_A" timeout 60 ucx_info -d >/tmp/ucx_info.log 2>&1
tls_on() {
	awk -v dev="$1" '/# *Transport:/ { tl = $3 } /# *Device:/ && $3 == dev { print tl }' /tmp/ucx_info.log |
		sort -u | tr '\n' ' '
}
found=$(tls_on "$RC_DEV_A:1")
if [[ " $found" == *" rc_verbs "* && " $found" == *" ud_verbs "* ]] &&
	grep -q "Memory domain: $RC_DEV_A\$" /tmp/ucx_info.log; then
	t_ok "ucx_info -d: memory domain $RC_DEV_A, transports on $RC_DEV_A:1: $found"
else
	t_fail "ucx_info -d lists rc_verbs and ud_verbs on $RC_DEV_A:1 (found: '$found')" \
		"$(grep -E 'Memory domain|Transport|Device|rror' /tmp/ucx_info.log | head -n 40)"
fi

# --- ucx_perftest -----------------------------------------------------------------
# perf NAME TLS TEST SIZE ITERS LANE: server in hostB, client in hostA;
# LANE is what the client's ep_cfg line must show, e.g. "tag(rc_verbs".
# Checks: both exit 0, the lane is on the metaroce device, nothing else in
# any ep_cfg line, at least SIZE x ITERS bytes sent by mrcA, received by
# mrcB and carried by the switch towards hostB.
# moved BEFORE AFTER: " name delta" for every counter that changed (a
# failed run's transport story: retransmissions, RTOs, NAKs, drops)
moved() {
	local -n _mb=$1 _ma=$2
	local k out=''
	for k in "${!_ma[@]}"; do
		case $k in rtt_* | lifespan) continue ;; esac
		[ "${_ma[$k]}" = "${_mb[$k]:-0}" ] || out+=" $k $((_ma[$k] - ${_mb[$k]:-0}))"
	done
	echo "${out:- none}"
}
perf() {
	local name=$1 tls=$2 test=$3 size=$4 iters=$5 lane=$6 rc=0 w0 t0 secs
	local want=$(($4 * $5)) wire txa rxb cfg bad final bw
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	w0=$(wire_bytes "$TOPO_PORT_B")
	t0=$EPOCHREALTIME
	srv_cli --timeout 120 --log "/tmp/$name" \
		in_host "$TOPO_B" env UCX_NET_DEVICES="$RC_DEV_B:1" UCX_TLS="$tls" ucx_perftest -- \
		in_host "$TOPO_A" env UCX_NET_DEVICES="$RC_DEV_A:1" UCX_TLS="$tls" UCX_LOG_LEVEL=info \
		ucx_perftest -t "$test" -s "$size" -n "$iters" "$MGMT_B_IP" || rc=$?
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	wire=$(($(wire_bytes "$TOPO_PORT_B") - w0))
	txa=$(rc_delta a0 a1 tx_bytes) rxb=$(rc_delta b0 b1 rx_bytes)
	cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "/tmp/$name.cli")
	bad=$(grep -E 'tcp|posix|sysv|cma|knem|xpmem' <<<"$cfg")
	final=$(grep '^Final:' "/tmp/$name.cli")
	bw=$(awk '{ print $7 }' <<<"$final")
	if [ "$rc" -eq 0 ] && [ -n "$final" ] && [[ $cfg == *"$lane/$RC_DEV_A:1"* ]] && [ -z "$bad" ] &&
		[ "$txa" -ge "$want" ] && [ "$rxb" -ge "$want" ] && [ "$wire" -ge "$want" ]; then
		t_ok "ucx_perftest -t $test -s $size -n $iters, UCX_TLS=$tls: ${cfg//$'\n'/, }; $bw MB/s by its clock, $secs s in all; $RC_DEV_A sent $(mib "$txa") MiB, $RC_DEV_B received $(mib "$rxb") MiB, $(mib "$wire") MiB through the switch"
	else
		t_fail "ucx_perftest -t $test over $lane/$RC_DEV_A:1 (exit $rc; ep_cfg '$cfg'; $RC_DEV_A tx $txa, $RC_DEV_B rx $rxb, switch $wire bytes, want >= $want)" \
			"$(grep -v -E '^ *[0-9]+  ' "/tmp/$name.cli" | tail -n 15)" \
			"$(grep -v -E '^ *[0-9]+  ' "/tmp/$name.srv" | tail -n 8)" \
			"counters that moved: $RC_DEV_A:$(moved a0 a1) $RC_DEV_B:$(moved b0 b1)"
	fi
}
perf tag_rc rc_verbs,ud_verbs tag_bw 1048576 40 "tag(rc_verbs"
perf put_rc rc_verbs,ud_verbs ucp_put_bw 262144 100 "rma(rc_verbs"
perf tag_ud ud_verbs tag_bw 65536 100 "tag(ud_verbs"
t_diag "ud_verbs run: $RC_DEV_A sent $(rc_delta a0 a1 tx_packets) packets, $RC_DEV_B received $(rc_delta b0 b1 rx_packets) and dropped $(rc_delta b0 b1 drop_no_resource) for want of a receive buffer (UCX resends them)"

# atomics: UCP 1.13 uses device atomics only on a transport with the whole
# set (ADD, AND, OR, XOR, SWAP, CSWAP and their fetching forms); rc_verbs has
# the verbs ones (ADD, FADD, CSWAP), so UCP carries atomics as active
# messages ("amo_am") over rc_verbs, on any verbs device
rc_snap a0 "$RC_DEV_A"
rc=0
srv_cli --timeout 120 --log /tmp/fadd_rc \
	in_host "$TOPO_B" env UCX_NET_DEVICES="$RC_DEV_B:1" UCX_TLS=rc_verbs,ud_verbs ucx_perftest -- \
	in_host "$TOPO_A" env UCX_NET_DEVICES="$RC_DEV_A:1" UCX_TLS=rc_verbs,ud_verbs UCX_LOG_LEVEL=info \
	ucx_perftest -t ucp_fadd -n 500 "$MGMT_B_IP" || rc=$?
rc_snap a1 "$RC_DEV_A"
cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' /tmp/fadd_rc.cli)
final=$(grep '^Final:' /tmp/fadd_rc.cli)
if [ "$rc" -eq 0 ] && [ -n "$final" ] && [[ $cfg == *"amo_am(rc_verbs/$RC_DEV_A:1"* ]] &&
	[ "$(rc_delta a0 a1 tx_packets)" -ge 500 ]; then
	t_ok "ucx_perftest -t ucp_fadd -n 500: $cfg (atomics as active messages over rc_verbs); median $(awk '{ print $3 }' <<<"$final") us per fetch-and-add; $RC_DEV_A sent $(rc_delta a0 a1 tx_packets) packets"
else
	t_fail "ucx_perftest -t ucp_fadd over amo_am(rc_verbs/$RC_DEV_A:1) (exit $rc; ep_cfg '$cfg'; $(rc_delta a0 a1 tx_packets) packets)" \
		"$(grep -v -E '^ *[0-9]+  ' /tmp/fadd_rc.cli | tail -n 15)"
fi

# --- Open MPI over UCX -------------------------------------------------------------------
# mpi NAME TLS ARGS...: mrc_allreduce with ARGS, one rank per host; output
# (both ranks, UCX's info lines) in /tmp/NAME.log; sets MPI_RC, MPI_SECS
mpi() {
	local name=$1 tls=$2 t0
	shift 2
	t0=$EPOCHREALTIME
	MPI_RC=0
	in_host "$TOPO_A" timeout 300 mpirun \
		--mca plm_rsh_agent "$RSH" --mca oob_tcp_if_include "$MGMT_DEV" \
		--mca pml ucx --mca btl self \
		-np 1 --host "$TOPO_A" env UCX_TLS="$tls" UCX_NET_DEVICES="$RC_DEV_A:1" UCX_LOG_LEVEL=info \
		"$ALLREDUCE" "$@" : \
		-np 1 --host "$TOPO_B" env UCX_TLS="$tls" UCX_NET_DEVICES="$RC_DEV_B:1" UCX_LOG_LEVEL=info \
		"$ALLREDUCE" "$@" \
		>"/tmp/$name.log" 2>&1 || MPI_RC=$?
	MPI_SECS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
}
mpi_logs() { grep -v -E '^\[[^]]*\] \[ *[0-9]+\]|^ *[0-9]+  ' "/tmp/$1.log" | tail -n 25; }
# lanes NAME HOST: the ep_cfg lines of the rank on HOST
lanes() { grep -o "\[$2:[^]]*\].*ep_cfg\[[0-9]*\]: .*" "/tmp/$1.log" | sed 's/.*ep_cfg/ep_cfg/' | sort -u | tr '\n' ' '; }

# self-test: rank 1 damages one element of every input; every check fails
mpi mpi_self rc_verbs,ud_verbs,self -c -s 8,64K -i 1
res=$(grep -h '^MRC_ALLREDUCE_RESULT' /tmp/mpi_self.log)
if [ "$MPI_RC" -ne 0 ] && [[ $res == *" checks=12 bad=12 "* ]]; then
	t_ok "self-test: a damaged input element is detected ($res; mpirun exit $MPI_RC)"
else
	t_fail "self-test: mrc_allreduce -c fails every check (exit $MPI_RC)" "$(mpi_logs mpi_self)"
fi

# the real run: 6 sizes up to 16 MiB, 2 iterations, 3 reductions each
rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
w0=$(wire_bytes "$TOPO_PORT_B") w1=$(wire_bytes "$TOPO_PORT_A") m0=$(mgmt_bytes)
mpi mpi_rc rc_verbs,ud_verbs,self
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
wb=$(($(wire_bytes "$TOPO_PORT_B") - w0)) wa=$(($(wire_bytes "$TOPO_PORT_A") - w1))
mg=$(($(mgmt_bytes) - m0))
res=$(grep -h '^MRC_ALLREDUCE_RESULT' /tmp/mpi_rc.log)
bytes=0
[[ $res =~ bytes=([0-9]+) ]] && bytes=${BASH_REMATCH[1]}
half=$((bytes / 4)) # per rank: bytes/2 reduced; at least half of that each way
txa=$(rc_delta a0 a1 tx_bytes) txb=$(rc_delta b0 b1 tx_bytes)
if [ "$MPI_RC" -eq 0 ] && [[ $res == *"ranks=2 checks=72 bad=0 "* ]]; then
	t_ok "MPI_Allreduce over UCX, 2 hosts: 8 B, 4 KiB, 64 KiB, 1 MiB, 4 MiB, 16 MiB x 2 iterations x (int64 sum, double sum, int32 max in place), every element verified on both ranks: $res ($MPI_SECS s with launch)"
else
	t_fail "MPI_Allreduce over UCX, every element verified (mpirun exit $MPI_RC)" "$(mpi_logs mpi_rc)"
fi
la=$(lanes mpi_rc "$TOPO_A") lb=$(lanes mpi_rc "$TOPO_B")
if [[ $la == *"tag(rc_verbs/$RC_DEV_A:1"* && $lb == *"tag(rc_verbs/$RC_DEV_B:1"* ]] &&
	! grep -E 'tcp|posix|sysv|cma|knem|xpmem' <<<"$la$lb" >/dev/null; then
	t_ok "MPI ranks used rc_verbs on the metaroce devices: $TOPO_A: $la; $TOPO_B: $lb"
else
	t_fail "MPI ranks used rc_verbs on $RC_DEV_A:1 / $RC_DEV_B:1" "$TOPO_A: '$la'" "$TOPO_B: '$lb'"
fi
if [ "$bytes" -gt 0 ] && [ "$txa" -ge "$half" ] && [ "$txb" -ge "$half" ] &&
	[ "$wb" -ge "$half" ] && [ "$wa" -ge "$half" ] && [ "$mg" -lt $((bytes / 100)) ]; then
	t_ok "MPI traffic crossed the metaroce devices: $RC_DEV_A sent $(mib "$txa") MiB, $RC_DEV_B $(mib "$txb") MiB ($(mib "$wb") / $(mib "$wa") MiB through the switch), management link $(mib "$mg") MiB, for $(mib "$bytes") MiB reduced in all"
else
	t_fail "MPI traffic on the metaroce devices" \
		"$RC_DEV_A tx $txa, $RC_DEV_B tx $txb, switch $wb/$wa, mgmt $mg bytes; reduced $bytes (want >= $half each, mgmt < 1 %)"
fi
t_diag "during MPI: $RC_DEV_A retransmitted $(rc_delta a0 a1 retransmitted_packets), $RC_DEV_B $(rc_delta b0 b1 retransmitted_packets); rnr_naks $(rc_delta a0 a1 rnr_naks_received)/$(rc_delta b0 b1 rnr_naks_received)"

# UD only: UCX's own reliability over metaroce datagrams
mpi mpi_ud ud_verbs,self -s 8,64K,1M -i 1
res=$(grep -h '^MRC_ALLREDUCE_RESULT' /tmp/mpi_ud.log)
la=$(lanes mpi_ud "$TOPO_A") lb=$(lanes mpi_ud "$TOPO_B")
if [ "$MPI_RC" -eq 0 ] && [[ $res == *"ranks=2 checks=18 bad=0 "* ]] &&
	[[ $la == *"tag(ud_verbs/$RC_DEV_A:1"* && $lb == *"tag(ud_verbs/$RC_DEV_B:1"* ]]; then
	t_ok "MPI_Allreduce with UCX_TLS=ud_verbs,self (8 B, 64 KiB, 1 MiB): $res; $TOPO_A: $la ($MPI_SECS s)"
else
	t_fail "MPI_Allreduce over ud_verbs only (exit $MPI_RC; $TOPO_A '$la', $TOPO_B '$lb')" "$(mpi_logs mpi_ud)"
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

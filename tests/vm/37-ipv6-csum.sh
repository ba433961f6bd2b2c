#!/bin/bash
# IPv6 datagrams with a zero UDP checksum never reach the driver (spec
# MRC-TRN-6; RFC 8200, section 8.1: the checksum is all the integrity a
# metaroce packet has). The driver's IPv6 socket asks the kernel for it
# (use_udp6_rx_checksums in mrc_sock_open()); without that, udp_tunnel
# sockets accept a zero IPv6 checksum (RFC 6936).
# mrc_inject in hostA sends WRITEs to hostB over IPv6 from a raw socket
# that writes the UDP checksum itself, the same packets with a right, a
# zero and a bad checksum:
#  a) no connection, to a QPN hostB does not have: a right checksum (raw,
#     and from an ordinary UDP socket) is counted as drop_no_qp by the
#     driver; a zero or bad one is not: the kernel's Udp6InCsumErrors
#     counts it instead. Over IPv4 a zero checksum means "none" and is
#     accepted (MRC-TRN-7): drop_no_qp counts those.
#  b) a verified transfer over the IPv6 GIDs (its packets counted in hostB's
#     Udp6InDatagrams, not as IPv4 UDP): WRITEs at the live QP, 100000 PSNs beyond its
#     window: with a right checksum drop_out_of_window counts them, with a
#     zero or bad one nothing in the driver does (Udp6InCsumErrors does);
#     the data verified, no error completion, the QP still RTS.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
# shellcheck source=tests/lib/hostile.sh
. "${BASH_SOURCE[0]%/*}/../lib/hostile.sh"
trap topo_cleanup EXIT

N=20
# shellcheck disable=SC2034 # filled through namerefs
declare -A s0 s1 u0 u1 x0 x1 QB

rc_dmesg_mark
if ! t_check "build mrc_verify and mrc_inject" hs_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000

# udp6 ARRAY: hostB's Udp6* counters from /proc/net/snmp6, and its IPv4
# UDP ones from /proc/net/snmp as Udp4*
udp6() {
	local -n _u=$1
	local k v names=() i
	_u=()
	while read -r k v; do
		if [[ $k == Udp6* ]]; then
			_u["$k"]=$v
		elif [ "$k" = Udp: ] && [ "${#names[@]}" = 0 ]; then
			read -ra names <<<"$v"
		elif [ "$k" = Udp: ]; then
			read -ra v <<<"$v"
			for i in "${!names[@]}"; do _u["Udp4${names[i]}"]=${v[i]:-0}; done
		fi
	done < <(ip netns exec "$TOPO_B" cat /proc/net/snmp6 /proc/net/snmp)
}
# both ARRAY-PREFIX: rc_snap of hostB's device and udp6, before (0) or after (1)
both() {
	rc_snap "s$1" "$RC_DEV_B"
	udp6 "u$1"
}
dlt() { local -n _a0=$1 _a1=$2; echo $((${_a1[$3]:-0} - ${_a0[$3]:-0})); }

# check DESC REACHES CNT -- MRC_INJECT-ARGS...: N WRITEs from hostA; if
# REACHES (1), hostB's counter CNT rises by N and Udp6InCsumErrors stays;
# if 0, CNT stays and Udp6InCsumErrors rises by N
check() {
	local desc=$1 reaches=$2 cnt=$3 dc dcs
	shift 4
	both 0
	inject "$TOPO_A" --count "$N" "$@"
	bsleep 0.3
	both 1
	if [ "${INJ[rc]}" != 0 ] || [ "${INJ[sent]:-0}" != "$N" ]; then
		t_fail "$desc: mrc_inject sent $N" "exit ${INJ[rc]}" "$(tail -n 5 "$INJ_LOG")"
		return
	fi
	dc=$(dlt s0 s1 "$cnt") dcs=$(dlt u0 u1 Udp6InCsumErrors)
	if [ "$reaches" = 1 ] && [ "$dc" -ge "$N" ] && [ "$dcs" = 0 ]; then
		t_ok "$desc: reach the driver ($cnt +$dc, Udp6InCsumErrors +$dcs)"
	elif [ "$reaches" = 0 ] && [ "$dc" = 0 ] && [ "$dcs" -ge "$N" ]; then
		t_ok "$desc: never reach the driver ($cnt +$dc, Udp6InCsumErrors +$dcs)"
	else
		t_fail "$desc: $([ "$reaches" = 1 ] || echo never) reach the driver" \
			"$cnt +$dc, Udp6InCsumErrors +$dcs (sent $N)" "changed: $(cnt_changed s0 s1)"
	fi
}

gid6() { grep -l -x "$2" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | head -n 1 | sed 's|.*/||'; }
G6A=$(gid6 "$RC_DEV_A" fd00:0000:0000:0000:0000:0000:0000:0001)
G6B=$(gid6 "$RC_DEV_B" fd00:0000:0000:0000:0000:0000:0000:0002)
if [ -z "$G6A" ] || [ -z "$G6B" ] || [ "$TOPO_A_IP6" != fd00::1 ] || [ "$TOPO_B_IP6" != fd00::2 ]; then
	t_fail "IPv6 GIDs of hostA and hostB" "'$G6A' '$G6B' $TOPO_A_IP6 $TOPO_B_IP6"
	t_summary
	exit 1
fi
# raw IPv6 frames need hostB's link address already known
if ! in_host "$TOPO_A" ping -6 -c 1 -W 2 "$TOPO_B_IP6" >/dev/null; then
	t_fail "hostA pings $TOPO_B_IP6"
fi

# --- a) to a QPN hostB does not have ----------------------------------------------------
used=" $(qp_numbers "$RC_DEV_B") "
noqp=$((0x2468 + RANDOM))
while [[ $used == *" $noqp "* ]]; do noqp=$((noqp + 1)); done
W=(--op write --dqpn "$noqp" --sqpn 7 --psn 0 --rkey 0xffffff00 --va 0x10000 --len 64 --interval 1000)
check "a) IPv6 WRITEs to no QP, right checksum (raw)" 1 drop_no_qp -- \
	--dst "$TOPO_B_IP6" --raw --udp-csum ok "${W[@]}"
check "a) IPv6 WRITEs to no QP, from a UDP socket" 1 drop_no_qp -- --dst "$TOPO_B_IP6" "${W[@]}"
check "a) IPv6 WRITEs to no QP, checksum 0" 0 drop_no_qp -- \
	--dst "$TOPO_B_IP6" --raw --udp-csum zero "${W[@]}"
check "a) IPv6 WRITEs to no QP, bad checksum" 0 drop_no_qp -- \
	--dst "$TOPO_B_IP6" --raw --udp-csum bad "${W[@]}"
check "a) IPv4 WRITEs to no QP, checksum 0 (none, MRC-TRN-7)" 1 drop_no_qp -- \
	--dst "$TOPO_B_IP" --raw --udp-csum zero "${W[@]}"

# --- b) at a live IPv6 connection ---------------------------------------------------------
GID_A=$G6A GID_B=$G6B
# the checks' own snapshots are u0/u1: the transfer's are x0/x1.  On a slow
# guest the three checks take most of a minute, and the transfer must
# outlast them
F=${METAROCE_VM_TIMEOUT_FACTOR:-1}
udp6 x0
rc_verify --timeout $((120 * F)) --log /tmp/v6x \
	--dir c2s -q 1 -s 64K --ops all -D $((10 + 50 * (F - 1))) &
xpid=$!
if wait_for 60 grep -q running /tmp/v6x.cli && qp_live QB "$RC_DEV_B"; then
	t_diag "b) hostB QP ${QB[lqpn]} <- ${QB[rqpn]}: rcv_nxt ${QB[rcv_nxt]:-?} rq-psn ${QB[rq-psn]:-?}"
	B=(--op write --dqpn "${QB[lqpn]}" --sqpn "${QB[rqpn]}" --rkey 0xffffff00 --va 0x10000 --len 64
		--psn $((${QB[rcv_nxt]:-${QB[rq-psn]:-0}} + 100000)) --interval 2000)
	check "b) IPv6 WRITEs beyond the live QP's window, checksum 0" 0 drop_out_of_window -- \
		--dst "$TOPO_B_IP6" --raw --src "$TOPO_A_IP6" --udp-csum zero "${B[@]}"
	check "b) IPv6 WRITEs beyond the live QP's window, bad checksum" 0 drop_out_of_window -- \
		--dst "$TOPO_B_IP6" --raw --src "$TOPO_A_IP6" --udp-csum bad "${B[@]}"
	check "b) IPv6 WRITEs beyond the live QP's window, right checksum" 1 drop_out_of_window -- \
		--dst "$TOPO_B_IP6" --raw --src "$TOPO_A_IP6" --udp-csum ok "${B[@]}"
	# shellcheck disable=SC2034 # filled through a nameref
	declare -A q=()
	if kill -0 "$xpid" 2>/dev/null && qp_live q "$RC_DEV_B" && [ "${q[state]:-}" = RTS ]; then
		t_ok "b) the transfer still runs, hostB's QP RTS after the injections"
	else
		t_fail "b) the transfer still runs, hostB's QP RTS after the injections" "state ${q[state]:-gone}"
	fi
else
	t_fail "b) the transfer over IPv6 GIDs starts" "$(tail -n 5 /tmp/v6x.cli /tmp/v6x.srv 2>&1)"
fi
rc=0
wait "$xpid" || rc=$?
udp6 x1
ops=$(rc_result /tmp/v6x.cli ops)
rc_verified "b) transfer over IPv6 GIDs $G6A/$G6B: data verified, no error completion" "$rc" /tmp/v6x \
	"$ops ops"
# it ran over IPv6: hostB's driver socket took its packets as UDP6 (GRO
# may merge them), next to none as IPv4 UDP
v6=$(dlt x0 x1 Udp6InDatagrams) v4=$(dlt x0 x1 Udp4InDatagrams)
if [ "$v6" -ge 1000 ] && [ "$v4" -le $((v6 / 100)) ]; then
	t_ok "b) the transfer came in over IPv6 (Udp6InDatagrams +$v6, IPv4 UDP InDatagrams +$v4)"
else
	t_fail "b) the transfer came in over IPv6: Udp6InDatagrams >= 1000, IPv4 UDP under 1 % of it" \
		"Udp6InDatagrams +$v6, IPv4 UDP InDatagrams +$v4 for ${ops:-?} ops"
fi
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

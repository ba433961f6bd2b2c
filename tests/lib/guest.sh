# shellcheck shell=bash
# Library for guest-side tests (run inside the scripts/vm-run guest).
#   . "$METAROCE_REPO/tests/lib/guest.sh"      (or relative to the test)
#
# Results (TAP-like):  t_ok DESC | t_fail DESC [DETAILS...] |
#                      t_check DESC CMD... | t_skip DESC REASON | t_diag MSG |
#                      t_summary  (prints the plan and totals, returns 1 on
#                      failures)
# Topologies (network namespaces; names/addresses in the TOPO_*, MGMT_*,
# RXE_* variables below, override before calling):
#   topo_two_hosts [--mtu M]   hostA eth0 <-> sw:pa [br0] sw:pb <-> hostB eth0
#   topo_mgmt                  hostA mg0 <-> hostB mg0 (control traffic)
#   topo_rxe_two_hosts [--mtu M]
#                              init_net rxa <-> sw:rpa [rbr0] sw:rpb <-> rxb,
#                              policy routing forces A<->B over the wire
#   topo_ecmp [--mtu M] [--links N] [--rate R] [--limit P] [--ecn T]
#                              hostA eth0 <-> rA ==N shaped links== rB <->
#                              hostB eth0, L4-hash ECMP both ways (ECMP_*)
#   ecmp_rxe_attach            init_net rxa <-> rA, rxb <-> rB (rxe over the
#                              same ECMP fabric; policy routing as below)
#   topo_incast N [--mtu M] [--rate R] [--limit P] [--ce T] [--burst B]
#                              N senders + receiver on a bridge whose port
#                              towards the receiver is shaped and marks CE;
#                              management bridge for control (INCAST_*)
#   incast_rxe_attach N [--mtu M] [--rate R] [--limit P] [--ce T] [--burst B]
#                              rxe senders and receiver (init_net) on the
#                              incast bridge, the receiver's port shaped
#                              and marking like $INCAST_PORT (INCAST_RXE_*)
#   topo_cleanup               remove everything the above created
# Links:  link_shape NS DEV [netem args: rate R loss P delay D reorder ...
#         dup P limit N ...] | link_clear NS DEV | link_outage NS DEV MS
# Misc:   in_host NS CMD... | rxe_add NAME NETDEV | rxe_gid_index DEV IPV4 |
#         sw_port_bytes NS DEV [rx|tx] | wait_for SECS CMD... |
#         ecmp_link_loss IDX PCT [ab|ba|both] | ecmp_link_down IDX |
#         ecmp_link_up IDX | ecmp_link_bytes IDX [ab|ba] |
#         ecmp_bytes [ab|ba] | ecmp_port_links DPORT SPORT... |
#         ecmp_sample_start FILE [IVAL] | ecmp_sample_stop |
#         ecmp_sample_delta FILE FROM TO | port_sample_start FILE NS DEV... |
#         port_sample_stop | port_sample_delta FILE FROM TO |
#         ecmp_link_drops IDX [ab|ba] | ecmp_fast_start | ecmp_fast_stop |
#         qdisc_stat NS DEV KIND KEY | incast_qdisc_stat KEY |
#         incast_rate RATE [CE] |
#         srv_cli [--timeout S] [--log PREFIX] SERVER... -- CLIENT... |
#         bsleep SECS (a sleep without an exec)
#
# Every exec from the 9p root costs 0.1-0.5 s under TCG: the helpers batch
# ip commands (ip -batch) and use shell builtins for /proc and /sys.

: "${TOPO_A:=hostA}" "${TOPO_B:=hostB}" "${TOPO_SW:=sw}"
: "${TOPO_DEV:=eth0}" "${TOPO_PORT_A:=pa}" "${TOPO_PORT_B:=pb}" "${TOPO_BR:=br0}"
: "${TOPO_A_IP:=10.0.0.1}" "${TOPO_B_IP:=10.0.0.2}"
: "${TOPO_A_IP6:=fd00::1}" "${TOPO_B_IP6:=fd00::2}"
: "${MGMT_DEV:=mg0}" "${MGMT_A_IP:=10.9.0.1}" "${MGMT_B_IP:=10.9.0.2}"
: "${RXE_A_DEV:=rxa}" "${RXE_B_DEV:=rxb}" "${RXE_PORT_A:=rpa}" "${RXE_PORT_B:=rpb}" "${RXE_BR:=rbr0}"
: "${RXE_A_IP:=10.1.0.1}" "${RXE_B_IP:=10.1.0.2}"
: "${RXE_TABLE_A:=101}" "${RXE_TABLE_B:=102}"

T_N=0 T_PASS=0 T_FAIL=0 T_SKIP=0 T_TODO=0

# --- results ---------------------------------------------------------------
_t_details() {
	local l
	while IFS= read -r l; do printf '#   %s\n' "$l"; done <<<"$*"
}
t_diag() { printf '# %s\n' "$*"; }
t_ok() {
	T_N=$((T_N + 1)) T_PASS=$((T_PASS + 1))
	printf 'ok %d - %s\n' "$T_N" "$1"
}
t_fail() {
	T_N=$((T_N + 1)) T_FAIL=$((T_FAIL + 1))
	printf 'not ok %d - %s\n' "$T_N" "$1"
	shift
	[ $# -eq 0 ] || _t_details "$*"
	return 0
}
# t_todo DESC REASON: a check that fails because of a known, open bug.
# TAP "not ok ... # TODO": shown in every run, not counted as a failure.
t_todo() {
	T_N=$((T_N + 1)) T_TODO=$((T_TODO + 1))
	printf 'not ok %d - %s # TODO %s\n' "$T_N" "$1" "$2"
	shift 2
	[ $# -eq 0 ] || _t_details "$*"
	return 0
}
t_skip() {
	T_N=$((T_N + 1)) T_SKIP=$((T_SKIP + 1))
	printf 'ok %d - %s # SKIP %s\n' "$T_N" "$1" "${2:-}"
}
# t_check DESC CMD...: ok if CMD exits 0; else shows its output. Returns
# CMD's status so callers can bail out early (`t_check ... || return`).
t_check() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" -eq 0 ]; then
		t_ok "$desc"
	else
		t_fail "$desc" "\$ $* (exit $rc)" "$out"
	fi
	return "$rc"
}
t_summary() {
	printf '1..%d\n' "$T_N"
	printf '# %d passed, %d failed, %d skipped, %d known failures\n' "$T_PASS" "$T_FAIL" "$T_SKIP" "$T_TODO"
	[ "$T_FAIL" -eq 0 ]
}

# --- small helpers -----------------------------------------------------------
in_host() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# wait_for SECS CMD...: retry CMD every 0.2 s until it succeeds or SECS pass.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# srv_cli [--timeout S] [--log PREFIX] SERVER-CMD... -- CLIENT-CMD...
# Runs the server in the background, then the client, retried while the
# server is not listening yet (perftest/pingpong style), and waits for both.
# Each side is bounded by `timeout S` (default 120); a command may start
# with in_host NS. Output goes to PREFIX.srv and PREFIX.cli (default
# /tmp/srv_cli). Returns the client's status, else the server's.
srv_cli() {
	local to=120 log=/tmp/srv_cli srv=() cli=() pid rc=0 src=0 try
	while [ $# -gt 0 ]; do
		case $1 in
		--timeout) to=$2; shift 2 ;;
		--log) log=$2; shift 2 ;;
		*) break ;;
		esac
	done
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	[ $# -gt 1 ] || { echo "srv_cli: missing -- CLIENT" >&2; return 2; }
	shift
	cli=("$@")
	# `timeout` needs a program, not our shell function
	[ "${srv[0]}" != in_host ] || srv=(ip netns exec "${srv[@]:1}")
	[ "${cli[0]}" != in_host ] || cli=(ip netns exec "${cli[@]:1}")
	timeout "$to" "${srv[@]}" >"$log.srv" 2>&1 &
	pid=$!
	for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
		rc=0
		timeout "$to" "${cli[@]}" >"$log.cli" 2>&1 || rc=$?
		# retry only a refused connection while the server still runs
		if [ "$rc" -eq 0 ] || [ "$try" -eq 15 ] || ! kill -0 "$pid" 2>/dev/null ||
			[[ $(<"$log.cli") != *"onnect"* ]]; then
			break
		fi
		sleep 0.3
	done
	[ "$rc" -eq 0 ] || kill "$pid" 2>/dev/null
	wait "$pid" || src=$?
	[ "$rc" -ne 0 ] && return "$rc"
	return "$src"
}

# bsleep SECS: sleep without an exec (read -t on a pipe nobody writes).
bsleep() {
	[ -n "${_BSLEEP_FD:-}" ] || exec {_BSLEEP_FD}<> <(:)
	read -r -t "$1" -u "$_BSLEEP_FD"
	return 0
}

# Hex mask of all CPUs, for RPS (without exec: glob over sysfs).
_cpu_mask() {
	local c n=0
	for c in /sys/devices/system/cpu/cpu[0-9]*; do n=$((n + 1)); done
	printf '%x' $(((1 << n) - 1))
}

# _rxe_sysctls DEV...: init_net devices that carry rxe between two of our
# own addresses: accept them as source on input, no reverse-path check,
# ARP only for the receiving interface's address, RPS on every CPU.
_rxe_sysctls() {
	local d f mask
	mask=$(_cpu_mask)
	echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
	for d in "$@"; do
		echo 1 >"/proc/sys/net/ipv4/conf/$d/accept_local"
		echo 0 >"/proc/sys/net/ipv4/conf/$d/rp_filter"
		echo 1 >"/proc/sys/net/ipv4/conf/$d/arp_ignore"
		echo 2 >"/proc/sys/net/ipv4/conf/$d/arp_announce"
		for f in /sys/class/net/"$d"/queues/rx-*/rps_cpus; do echo "$mask" >"$f"; done
	done
}

# Run ip commands (stdin, one per line) in NS (or init_net if NS is "-").
_ipb() {
	if [ "$1" = - ]; then ip -force -batch -; else ip -force -n "$1" -batch -; fi
}

# _ns_setup NS SHELL-SNIPPET: one exec into NS that enables RPS with a full
# CPU mask on every veth/bridge port (veth reorders a flow on an SMP guest
# otherwise; see testbed facts) and runs extra builtin-only commands.
_ns_setup() {
	local ns=$1 extra=${2:-}
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$ns" bash -c '
		for f in /sys/class/net/*/queues/rx-*/rps_cpus; do
			case $f in */lo/*) continue ;; esac
			echo '"$(_cpu_mask)"' >"$f"
		done
		'"$extra"
}

_parse_mtu() {
	MTU=1500
	while [ $# -gt 0 ]; do
		case $1 in
		--mtu) MTU=$2; shift 2 ;;
		*) echo "unknown option $1" >&2; return 2 ;;
		esac
	done
}

# --- two hosts behind a switch -----------------------------------------------
topo_two_hosts() {
	local MTU
	_parse_mtu "$@" || return
	# deleting the host namespaces also deletes the veths into the switch
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		netns del $TOPO_A
		netns del $TOPO_B
	EOF
	_topo_sw_ns || return
	_ipb - <<-EOF || return
		netns add $TOPO_A
		netns add $TOPO_B
		link add $TOPO_DEV netns $TOPO_A mtu $MTU type veth peer name $TOPO_PORT_A netns $TOPO_SW mtu $MTU
		link add $TOPO_DEV netns $TOPO_B mtu $MTU type veth peer name $TOPO_PORT_B netns $TOPO_SW mtu $MTU
	EOF
	[ "$_SW_FRESH" = 1 ] || ip -n "$TOPO_SW" link del "$TOPO_BR" >/dev/null 2>&1
	_ipb "$TOPO_SW" <<-EOF || return
		link add $TOPO_BR mtu $MTU type bridge stp_state 0 mcast_snooping 0
		link set $TOPO_PORT_A master $TOPO_BR up
		link set $TOPO_PORT_B master $TOPO_BR up
		link set $TOPO_BR up
	EOF
	local h ip ip6
	for h in A B; do
		if [ $h = A ]; then h=$TOPO_A ip=$TOPO_A_IP ip6=$TOPO_A_IP6; else h=$TOPO_B ip=$TOPO_B_IP ip6=$TOPO_B_IP6; fi
		_ipb "$h" <<-EOF || return
			link set lo up
			link set $TOPO_DEV up
			addr add $ip/24 dev $TOPO_DEV
			addr add $ip6/64 dev $TOPO_DEV nodad
		EOF
		_ns_setup "$h" || return
	done
	_ns_setup "$TOPO_SW" || return
	wait_for 10 in_host "$TOPO_A" ping -c1 -W1 "$TOPO_B_IP" ||
		{ echo "topo_two_hosts: $TOPO_A cannot ping $TOPO_B_IP" >&2; return 1; }
}

# The switch namespace is shared by the topologies: create it if missing.
# Sets _SW_FRESH=1 if it was just created (nothing to remove in it).
_topo_sw_ns() {
	_SW_FRESH=0
	[ -e "/run/netns/$TOPO_SW" ] && return 0
	ip netns add "$TOPO_SW" || return
	_SW_FRESH=1
	ip -n "$TOPO_SW" link set lo up
}

# Management link hostA <-> hostB for control connections (perftest's TCP
# exchange), off the links that tests shape or break.
topo_mgmt() {
	ip -n "$TOPO_A" link del "$MGMT_DEV" >/dev/null 2>&1
	ip link add "$MGMT_DEV" netns "$TOPO_A" type veth peer name "$MGMT_DEV" netns "$TOPO_B" || return
	_ipb "$TOPO_A" <<-EOF || return
		addr add $MGMT_A_IP/24 dev $MGMT_DEV
		link set $MGMT_DEV up
	EOF
	_ipb "$TOPO_B" <<-EOF || return
		addr add $MGMT_B_IP/24 dev $MGMT_DEV
		link set $MGMT_DEV up
	EOF
	wait_for 10 in_host "$TOPO_A" ping -c1 -W1 "$MGMT_B_IP" ||
		{ echo "topo_mgmt: $TOPO_A cannot ping $MGMT_B_IP" >&2; return 1; }
}

# --- rxe between two "hosts" -------------------------------------------------
# rxe (6.1) only works in init_net, so both ends stay there; the wire is in
# the switch namespace, and policy routing sends locally generated A->B
# traffic out of rxa (and B->A out of rxb) instead of through lo.
topo_rxe_two_hosts() {
	local MTU
	_parse_mtu "$@" || return
	_rxe_unroute
	ip link del "$RXE_A_DEV" >/dev/null 2>&1
	ip link del "$RXE_B_DEV" >/dev/null 2>&1
	_topo_sw_ns || return
	_ipb - <<-EOF || return
		link add $RXE_A_DEV mtu $MTU type veth peer name $RXE_PORT_A netns $TOPO_SW mtu $MTU
		link add $RXE_B_DEV mtu $MTU type veth peer name $RXE_PORT_B netns $TOPO_SW mtu $MTU
	EOF
	[ "$_SW_FRESH" = 1 ] || ip -n "$TOPO_SW" link del "$RXE_BR" >/dev/null 2>&1
	_ipb "$TOPO_SW" <<-EOF || return
		link add $RXE_BR mtu $MTU type bridge stp_state 0 mcast_snooping 0
		link set $RXE_PORT_A master $RXE_BR up
		link set $RXE_PORT_B master $RXE_BR up
		link set $RXE_BR up
	EOF
	# sysctls before the addresses exist
	_rxe_sysctls "$RXE_A_DEV" "$RXE_B_DEV"
	_ipb - <<-EOF || return
		addr add $RXE_A_IP/24 dev $RXE_A_DEV
		addr add $RXE_B_IP/24 dev $RXE_B_DEV
		link set $RXE_A_DEV up
		link set $RXE_B_DEV up
		route add $RXE_B_IP/32 dev $RXE_A_DEV src $RXE_A_IP table $RXE_TABLE_A
		route add $RXE_A_IP/32 dev $RXE_B_DEV src $RXE_B_IP table $RXE_TABLE_B
		rule add pref 100 iif lo from $RXE_A_IP to $RXE_B_IP lookup $RXE_TABLE_A
		rule add pref 101 iif lo from $RXE_B_IP to $RXE_A_IP lookup $RXE_TABLE_B
		rule add pref 500 lookup local
		rule del pref 0 lookup local
	EOF
	_ns_setup "$TOPO_SW" || return
	wait_for 10 ping -c1 -W1 -I "$RXE_A_IP" "$RXE_B_IP" ||
		{ echo "topo_rxe_two_hosts: $RXE_A_IP cannot ping $RXE_B_IP" >&2; return 1; }
}

# Undo the policy routing (restores the local rule at pref 0).
_rxe_unroute() {
	# `rule add` happily duplicates a rule: only restore pref 0 if moved.
	if [ -n "$(ip rule show pref 500 2>/dev/null)" ]; then
		ip rule add pref 0 lookup local
		ip rule del pref 500 lookup local
	fi
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		rule del pref 100
		rule del pref 101
		route flush table $RXE_TABLE_A
		route flush table $RXE_TABLE_B
	EOF
	_incast_rxe_unroute
}

rxe_add() { rdma link add "$1" type rxe netdev "$2"; }

# rxe_gid_index DEV IPV4 [PORT]: print the index of the RoCE v2 GID for IPV4
# (one grep over the whole GID table instead of one read per entry).
rxe_gid_index() {
	local dev=$1 ip=$2 port=${3:-1} a b c d want line idx type
	IFS=. read -r a b c d <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	while IFS= read -r line; do
		[ "${line#*:}" = "$want" ] || continue
		idx=${line%%:*}
		idx=${idx##*/}
		read -r type <"/sys/class/infiniband/$dev/ports/$port/gid_attrs/types/$idx" 2>/dev/null || continue
		if [ "$type" = "RoCE v2" ]; then echo "$idx"; return 0; fi
	done < <(grep -H -v '^0000:0000:0000:0000:0000:0000:0000:0000$' /sys/class/infiniband/"$dev"/ports/"$port"/gids/* 2>/dev/null)
	return 1
}

# sw_port_bytes NS DEV [rx|tx]: byte counters of a (switch) port; prints
# "RX TX", or one of them.
sw_port_bytes() {
	local ns=$1 dev=$2 which=${3:-} line seg next=0 rx='' tx=''
	line=$(ip -n "$ns" -s -o link show dev "$dev") || return
	# `ip -o` joins the lines of its output with backslashes
	# shellcheck disable=SC2141 # yes, a backslash
	local IFS=$'\\'
	for seg in $line; do
		case $next in
		rx) IFS=" " read -r rx _ <<<"$seg"; next=0; continue ;;
		tx) IFS=" " read -r tx _ <<<"$seg"; next=0; continue ;;
		esac
		case $seg in
		*RX:*) next=rx ;;
		*TX:*) next=tx ;;
		esac
	done
	case $which in
	rx) echo "$rx" ;;
	tx) echo "$tx" ;;
	*) echo "$rx $tx" ;;
	esac
}

# --- link shaping (tc netem on a switch port, egress) -------------------------
# link_shape NS DEV [rate R] [loss P] [delay D [J]] [reorder P [C]] [dup P]
#            [limit N] ...: any netem arguments; replaces the port's shaping.
# Shapes the egress of DEV, i.e. on a switch port the traffic towards the
# host behind it. Remembered so that link_outage can restore it.
declare -gA _LINK_SHAPE=()
link_shape() {
	local ns=$1 dev=$2
	shift 2
	tc -n "$ns" qdisc replace dev "$dev" root netem "$@" || return
	_LINK_SHAPE[$ns/$dev]="$*"
}
link_clear() {
	tc -n "$1" qdisc del dev "$2" root >/dev/null 2>&1
	unset "_LINK_SHAPE[$1/$2]"
	return 0
}
# link_outage NS DEV MS: drop everything for MS milliseconds (background),
# then restore the previous shaping. $LINK_OUTAGE_PID is the background job.
link_outage() {
	local ns=$1 dev=$2 ms=$3 prev=${_LINK_SHAPE[$1/$2]:-}
	tc -n "$ns" qdisc replace dev "$dev" root netem loss 100% || return
	(
		sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
		if [ -n "$prev" ]; then
			# shellcheck disable=SC2086 # prev holds netem words
			tc -n "$ns" qdisc replace dev "$dev" root netem $prev
		else
			tc -n "$ns" qdisc del dev "$dev" root
		fi
	) &
	# shellcheck disable=SC2034 # for the caller
	LINK_OUTAGE_PID=$!
}

# --- ECMP fabric: hostA -> rA == N parallel links == rB -> hostB ------------------
# Two router namespaces joined by N veth links, each shaped in both
# directions (htb at --rate; leaf pfifo, or with --ecn T a single-queue
# fq_codel that marks CE above T of queueing delay); a multipath route over
# all links in both routers. The hosts keep the names $TOPO_A / $TOPO_B and
# their $TOPO_DEV, so rc.sh and topo_mgmt work unchanged on top.
# Link IDX (1..N) is l<IDX> in both routers, 10.3.IDX.1 (rA) / .2 (rB).
# Per-link loss is a tc matchall + gact filter on the receiving router's
# ingress, i.e. on the wire after the shaper: the sending router's tx
# counter still counts what the sender put onto that link.
: "${ECMP_RA:=rA}" "${ECMP_RB:=rB}" "${ECMP_LINKS:=4}" "${ECMP_MTU:=1500}"
: "${ECMP_A_IP:=10.2.1.1}" "${ECMP_B_IP:=10.2.2.1}"
: "${ECMP_RA_IP:=10.2.1.254}" "${ECMP_RB_IP:=10.2.2.254}"
: "${ECMP_RXE_A_IP:=10.2.3.1}" "${ECMP_RXE_B_IP:=10.2.4.1}"
: "${ECMP_RXE_RA_IP:=10.2.3.254}" "${ECMP_RXE_RB_IP:=10.2.4.254}"

# _ecmp_nexthops PEER-OCTET: "nexthop via 10.3.i.PEER dev li onlink" for all links
_ecmp_nexthops() {
	local i nh=''
	for ((i = 1; i <= ECMP_LINKS; i++)); do
		nh+=" nexthop via 10.3.$i.$1 dev l$i onlink"
	done
	echo "$nh"
}

# (Re)install the multipath routes in both routers (nets behind the other
# router: its host, and its rxe end if attached).
_ecmp_routes() {
	local nhA nhB
	nhA=$(_ecmp_nexthops 2) nhB=$(_ecmp_nexthops 1)
	_ipb "$ECMP_RA" <<-EOF || return
		route replace ${ECMP_B_IP%.*}.0/24 $nhA
		route replace ${ECMP_RXE_B_IP%.*}.0/24 $nhA
	EOF
	_ipb "$ECMP_RB" <<-EOF
		route replace ${ECMP_A_IP%.*}.0/24 $nhB
		route replace ${ECMP_RXE_A_IP%.*}.0/24 $nhB
	EOF
}

# Router sysctls (builtins, run by _ns_setup). Hash policy 3 with fields
# 0x37 (src/dst IP, protocol, src/dst port) hashes the packet headers as a
# switch does; policy 1 would reuse skb->hash, which veth carries over from
# the sender (a UDP tunnel socket's hash ignores the source port: testbed
# facts).
_ECMP_ROUTER_SYSCTL='
	echo 1 >/proc/sys/net/ipv4/ip_forward
	echo 3 >/proc/sys/net/ipv4/fib_multipath_hash_policy
	echo 55 >/proc/sys/net/ipv4/fib_multipath_hash_fields
	echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
	echo 0 >/proc/sys/net/ipv4/conf/default/rp_filter
'

topo_ecmp() {
	local mtu=1500 n=4 rate=25mbit limit=100 ecn='' i r leaf q burst
	while [ $# -gt 0 ]; do
		case $1 in
		--mtu) mtu=$2; shift 2 ;;
		--links) n=$2; shift 2 ;;
		--rate) rate=$2; shift 2 ;;
		--limit) limit=$2; shift 2 ;;
		--ecn) ecn=$2; shift 2 ;;
		*) echo "topo_ecmp: unknown option $1" >&2; return 2 ;;
		esac
	done
	ECMP_LINKS=$n ECMP_MTU=$mtu
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		netns del $TOPO_A
		netns del $TOPO_B
		netns del $ECMP_RA
		netns del $ECMP_RB
	EOF
	{
		echo "netns add $TOPO_A"
		echo "netns add $TOPO_B"
		echo "netns add $ECMP_RA"
		echo "netns add $ECMP_RB"
		echo "link add $TOPO_DEV netns $TOPO_A mtu $mtu type veth peer name ha netns $ECMP_RA mtu $mtu"
		echo "link add $TOPO_DEV netns $TOPO_B mtu $mtu type veth peer name hb netns $ECMP_RB mtu $mtu"
		for ((i = 1; i <= n; i++)); do
			echo "link add l$i netns $ECMP_RA mtu $mtu type veth peer name l$i netns $ECMP_RB mtu $mtu"
		done
	} | _ipb - || return
	_ns_setup "$ECMP_RA" "$_ECMP_ROUTER_SYSCTL" || return
	_ns_setup "$ECMP_RB" "$_ECMP_ROUTER_SYSCTL" || return
	for r in A B; do
		{
			echo "link set lo up"
			if [ $r = A ]; then
				echo "link set ha up"
				echo "addr add $ECMP_RA_IP/24 dev ha"
			else
				echo "link set hb up"
				echo "addr add $ECMP_RB_IP/24 dev hb"
			fi
			for ((i = 1; i <= n; i++)); do
				echo "addr add 10.3.$i.$([ $r = A ] && echo 1 || echo 2)/24 dev l$i"
				echo "link set l$i up"
			done
		} | if [ $r = A ]; then _ipb "$ECMP_RA"; else _ipb "$ECMP_RB"; fi || return
	done
	_ecmp_routes || return
	_ipb "$TOPO_A" <<-EOF || return
		link set lo up
		link set $TOPO_DEV up
		addr add $ECMP_A_IP/24 dev $TOPO_DEV
		route add 10.2.0.0/16 via $ECMP_RA_IP
	EOF
	_ipb "$TOPO_B" <<-EOF || return
		link set lo up
		link set $TOPO_DEV up
		addr add $ECMP_B_IP/24 dev $TOPO_DEV
		route add 10.2.0.0/16 via $ECMP_RB_IP
	EOF
	_ns_setup "$TOPO_A" || return
	_ns_setup "$TOPO_B" || return
	# Shaping, both directions of every link. A small htb burst keeps the
	# line-rate bursts of veth short; quantum = one frame.
	q=$((mtu + 14)) burst=$((2 * (mtu + 14)))
	if [ -n "$ecn" ]; then
		leaf="fq_codel flows 1 limit $limit ce_threshold $ecn ecn"
	else
		leaf="pfifo limit $limit"
	fi
	for r in "$ECMP_RA" "$ECMP_RB"; do
		for ((i = 1; i <= n; i++)); do
			echo "qdisc replace dev l$i root handle 1: htb default 1"
			echo "class replace dev l$i parent 1: classid 1:1 htb rate $rate ceil $rate burst $burst cburst $burst quantum $q"
			echo "qdisc replace dev l$i parent 1:1 handle 10: $leaf"
			echo "qdisc replace dev l$i ingress"
		done | tc -n "$r" -batch - || return
	done
	wait_for 10 in_host "$TOPO_A" ping -c1 -W1 "$ECMP_B_IP" ||
		{ echo "topo_ecmp: $TOPO_A cannot ping $ECMP_B_IP" >&2; return 1; }
}

# _ecmp_ends IDX ab|ba: prints "SENDING-ROUTER RECEIVING-ROUTER" for that
# direction of link IDX (ab: hostA -> hostB traffic).
_ecmp_ends() {
	case $1 in
	ab) echo "$ECMP_RA $ECMP_RB" ;;
	ba) echo "$ECMP_RB $ECMP_RA" ;;
	*) echo "ecmp: direction must be ab or ba, not $1" >&2; return 2 ;;
	esac
}

# ecmp_fast_start / ecmp_fast_stop: keep a `tc -batch` and an `ip -batch`
# running in each router, fed through FIFOs: ecmp_link_loss, _down and _up
# then cost a write instead of an exec (seconds on a busy TCG guest, which
# would blur when a mid-transfer change happens). Without it, they exec.
declare -gA _ECMP_FD=() _ECMP_PID=()
ecmp_fast_start() {
	local ns tool f fd
	ecmp_fast_stop
	for ns in "$ECMP_RA" "$ECMP_RB"; do
		for tool in tc ip; do
			f=/tmp/.ecmp-$tool-$ns
			rm -f "$f"
			mkfifo "$f" || return
			# without the write ends opened so far: each batch must see
			# EOF when ecmp_fast_stop closes its FIFO
			(
				for fd in "${_ECMP_FD[@]}"; do exec {fd}>&-; done
				exec "$tool" -n "$ns" -force -batch - <"$f" >/dev/null 2>&1
			) &
			_ECMP_PID[$tool/$ns]=$!
			exec {fd}>"$f"
			_ECMP_FD[$tool/$ns]=$fd
		done
	done
}
ecmp_fast_stop() {
	local k fd
	for k in "${!_ECMP_FD[@]}"; do
		fd=${_ECMP_FD[$k]}
		exec {fd}>&-
	done
	# children started since (servers, samplers) may still hold a write end
	for k in "${!_ECMP_PID[@]}"; do
		kill "${_ECMP_PID[$k]}" 2>/dev/null
		wait "${_ECMP_PID[$k]}" 2>/dev/null
	done
	_ECMP_FD=() _ECMP_PID=()
	return 0
}
# _ecmp_cmd tc|ip NS ARGS...: through the running batch if there is one
_ecmp_cmd() {
	local tool=$1 ns=$2 fd
	shift 2
	fd=${_ECMP_FD[$tool/$ns]:-}
	if [ -n "$fd" ]; then
		echo "$*" >&"$fd"
	else
		"$tool" -n "$ns" "$@"
	fi
}

# ecmp_link_loss IDX PCT [ab|ba|both]: drop PCT % of the packets on link
# IDX (default both directions); 100 blackholes it, 0 heals it. Random
# drops are gact netrand "1 in round(100/PCT)" (5 % -> 1 in 20).
ecmp_link_loss() {
	local idx=$1 pct=$2 dirs=${3:-both} d ends rx n act
	[ "$dirs" = both ] && dirs="ab ba"
	if [ "$pct" = 100 ]; then
		act="gact drop"
	elif [[ $pct =~ ^[1-9][0-9]?$ ]]; then
		# integer arithmetic: no exec (this often runs mid-transfer)
		act="gact pass random netrand drop $(((200 / pct + 1) / 2))"
	elif [ "$pct" != 0 ]; then
		n=$(awk -v p="$pct" 'BEGIN { if (p <= 0 || p > 100) exit 1; printf "%d", 100 / p + 0.5 }') ||
			{ echo "ecmp_link_loss: bad percentage $pct" >&2; return 2; }
		act="gact pass random netrand drop $n"
	fi
	for d in $dirs; do
		ends=$(_ecmp_ends "$d") || return
		rx=${ends#* }
		if [ "$pct" = 0 ]; then
			_ecmp_cmd tc "$rx" filter del dev "l$idx" ingress pref 10 >/dev/null 2>&1
		else
			# shellcheck disable=SC2086 # act holds words
			_ecmp_cmd tc "$rx" filter replace dev "l$idx" ingress pref 10 protocol all handle 1 matchall action $act || return
		fi
	done
	return 0
}

# ecmp_link_drops IDX [ab|ba]: packets the loss filter of link IDX dropped.
ecmp_link_drops() {
	local ends out
	ends=$(_ecmp_ends "${2:-ab}") || return
	out=$(tc -n "${ends#* }" -s filter show dev "l$1" ingress 2>/dev/null)
	[[ $out =~ dropped\ ([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0
}

# ecmp_link_down IDX / ecmp_link_up IDX: take both ends of link IDX down
# (the routers see it: its nexthops go dead and ECMP rehashes over the
# rest) / bring them back and reinstall the multipath routes.
ecmp_link_down() {
	_ecmp_cmd ip "$ECMP_RA" link set "l$1" down || return
	_ecmp_cmd ip "$ECMP_RB" link set "l$1" down
}
ecmp_link_up() {
	ip -n "$ECMP_RA" link set "l$1" up || return
	ip -n "$ECMP_RB" link set "l$1" up || return
	_ecmp_routes
}

# ecmp_bytes [ab|ba]: tx bytes of every link in that direction (default
# ab: what rA put onto l1..lN), space-separated, from one `ip` exec.
ecmp_bytes() {
	local ends line name i out=()
	ends=$(_ecmp_ends "${1:-ab}") || return
	# `ip -o` joins the lines of a device with backslashes: "... TX: bytes
	# packets ... \   BYTES PACKETS ..."
	local re='TX:[^\\]*\\ *([0-9]+)'
	while IFS= read -r line; do
		read -r _ name _ <<<"$line"
		name=${name%%@*}
		[[ $name =~ ^l([0-9]+):?$ ]] || continue
		i=${BASH_REMATCH[1]}
		[[ $line =~ $re ]] && out[i]=${BASH_REMATCH[1]}
	done < <(ip -n "${ends%% *}" -s -o link show)
	line=''
	for ((i = 1; i <= ECMP_LINKS; i++)); do line+=" ${out[i]:-0}"; done
	echo "${line# }"
}

# ecmp_link_bytes IDX [ab|ba]: tx bytes of one link in that direction.
ecmp_link_bytes() {
	local ends
	ends=$(_ecmp_ends "${2:-ab}") || return
	sw_port_bytes "${ends%% *}" "l$1" tx
}

# port_sample_start FILE NS DEV... [-i IVAL]: sample the tx bytes of the
# DEVs in NS and the guest's CPU time every IVAL s (default 0.25) into
# FILE, one line "EPOCHREALTIME TX1..TXn CPU-BUSY CPU-TOTAL" (jiffies of
# all CPUs), from ONE background bash in NS that uses builtins only: execs
# under TCG are slow and late when the guest is busy. port_sample_stop ends
# it. port_sample_delta FILE FROM TO: "TX1..TXn BUSY%" between the first
# sample at or after FROM and the last at or before TO (EPOCHREALTIME
# values, or integer microseconds).
# ecmp_sample_start FILE [IVAL] / ecmp_sample_stop / ecmp_sample_delta:
# the same for rA's l1..lN (hostA -> hostB).
port_sample_start() {
	local file=$1 ns=$2 ival=0.25 sdevs=()
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		-i) ival=$2; shift 2 ;;
		*) sdevs+=("$1"); shift ;;
		esac
	done
	port_sample_stop
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$ns" bash -c '
		ival=$1
		shift
		exec {fd}<> <(:)	# read -t on a silent pipe: a builtin sleep
		while :; do
			l=$EPOCHREALTIME
			for d in "$@"; do
				read -r b </sys/class/net/$d/statistics/tx_bytes
				l+=" $b"
			done
			read -r _ u ni sy id io irq sirq st _ </proc/stat
			echo "$l $((u + ni + sy + irq + sirq + st)) $((u + ni + sy + id + io + irq + sirq + st))"
			read -r -t "$ival" -u "$fd"
		done' _ "$ival" "${sdevs[@]}" >"$file" 2>/dev/null &
	_PORT_SAMPLE_PID=$!
}
port_sample_stop() {
	[ -n "${_PORT_SAMPLE_PID:-}" ] || return 0
	kill "$_PORT_SAMPLE_PID" 2>/dev/null
	wait "$_PORT_SAMPLE_PID" 2>/dev/null
	_PORT_SAMPLE_PID=''
	return 0
}
port_sample_delta() {
	local from=${2/./} to=${3/./} w t first=() last=() i n res=''
	while read -ra w; do
		[ "${#w[@]}" -ge 3 ] || continue
		t=${w[0]/./}
		[ "$t" -ge "$from" ] || continue
		[ "$t" -le "$to" ] || break
		[ "${#first[@]}" -gt 0 ] || first=("${w[@]}")
		[ "${#w[@]}" -eq "${#first[@]}" ] && last=("${w[@]}")
	done <"$1"
	[ "${#first[@]}" -gt 0 ] || { echo "port_sample_delta: no samples" >&2; return 1; }
	n=$((${#first[@]} - 3))
	for ((i = 1; i <= n; i++)); do res+="$((last[i] - first[i])) "; done
	local busy=$((last[i] - first[i])) total=$((last[i + 1] - first[i + 1]))
	echo "$res$((total ? 100 * busy / total : 0))"
}
ecmp_sample_start() {
	local i ldevs=()
	for ((i = 1; i <= ECMP_LINKS; i++)); do ldevs+=("l$i"); done
	port_sample_start "$1" "$ECMP_RA" "${ldevs[@]}" -i "${2:-0.25}"
}
ecmp_sample_stop() { port_sample_stop; }
ecmp_sample_delta() { port_sample_delta "$@"; }

# ecmp_port_links DPORT SPORT...: the link index rA's ECMP hash picks for a
# UDP packet hostA:SPORT -> hostB:DPORT, one line per SPORT (one exec).
ecmp_port_links() {
	local dport=$1 s out w
	shift
	out=$(for s in "$@"; do
		echo "route get $ECMP_B_IP from $ECMP_A_IP iif ha ipproto udp sport $s dport $dport"
	done | ip -n "$ECMP_RA" -batch - 2>&1) || return
	for w in $out; do
		case $w in l[0-9]*) echo "${w#l}" ;; esac
	done
}

# ecmp_rxe_attach: rxe over the same fabric. rxe (6.1) works in init_net
# only, so its ends stay there: rxa ($ECMP_RXE_A_IP) <-> rA and rxb
# ($ECMP_RXE_B_IP) <-> rB; policy routing (as in topo_rxe_two_hosts, same
# devices, rules and tables, so topo_cleanup removes it) sends A->B out of
# rxa to rA and B->A out of rxb to rB, instead of through lo. Then
# `rxe_add NAME $RXE_A_DEV` etc. Call after topo_ecmp; not together with
# topo_rxe_two_hosts.
ecmp_rxe_attach() {
	local mtu=$ECMP_MTU
	_rxe_unroute
	ip link del "$RXE_A_DEV" >/dev/null 2>&1
	ip link del "$RXE_B_DEV" >/dev/null 2>&1
	_ipb - <<-EOF || return
		link add $RXE_A_DEV mtu $mtu type veth peer name rxha netns $ECMP_RA mtu $mtu
		link add $RXE_B_DEV mtu $mtu type veth peer name rxhb netns $ECMP_RB mtu $mtu
	EOF
	_rxe_sysctls "$RXE_A_DEV" "$RXE_B_DEV"
	_ipb - <<-EOF || return
		addr add $ECMP_RXE_A_IP/24 dev $RXE_A_DEV
		addr add $ECMP_RXE_B_IP/24 dev $RXE_B_DEV
		link set $RXE_A_DEV up
		link set $RXE_B_DEV up
		route add $ECMP_RXE_B_IP/32 via $ECMP_RXE_RA_IP dev $RXE_A_DEV src $ECMP_RXE_A_IP onlink table $RXE_TABLE_A
		route add $ECMP_RXE_A_IP/32 via $ECMP_RXE_RB_IP dev $RXE_B_DEV src $ECMP_RXE_B_IP onlink table $RXE_TABLE_B
		rule add pref 100 iif lo from $ECMP_RXE_A_IP to $ECMP_RXE_B_IP lookup $RXE_TABLE_A
		rule add pref 101 iif lo from $ECMP_RXE_B_IP to $ECMP_RXE_A_IP lookup $RXE_TABLE_B
		rule add pref 500 lookup local
		rule del pref 0 lookup local
	EOF
	_ipb "$ECMP_RA" <<-EOF || return
		addr add $ECMP_RXE_RA_IP/24 dev rxha
		link set rxha up
	EOF
	_ipb "$ECMP_RB" <<-EOF || return
		addr add $ECMP_RXE_RB_IP/24 dev rxhb
		link set rxhb up
	EOF
	_ns_setup "$ECMP_RA" || return
	_ns_setup "$ECMP_RB" || return
	wait_for 10 ping -c1 -W1 -I "$ECMP_RXE_A_IP" "$ECMP_RXE_B_IP" ||
		{ echo "ecmp_rxe_attach: $ECMP_RXE_A_IP cannot ping $ECMP_RXE_B_IP" >&2; return 1; }
}

# --- incast: N senders and a receiver on one switch ---------------------------------
# Senders ${INCAST_SND}1..N (10.4.0.I) and $INCAST_RCV (10.4.0.200) on bridge
# ibr0 in $INCAST_SW; the switch port towards the receiver ($INCAST_PORT) is
# the bottleneck: htb at --rate (100mbit), token bucket --burst bytes
# (default two frames), with a marking leaf. Control
# traffic goes over a second bridge (mbr0: mg0 in every host, 10.5.0.I /
# 10.5.0.200), never through the bottleneck.
#
# The marking leaf is fq_codel with ONE flow queue (flows 1) and
# ce_threshold T (--ce, default 2ms): a single FIFO that sets CE on every
# ECT(0)/ECT(1) packet whose queueing delay exceeds T (DCTCP-style step
# marking, in time), and drops only non-ECT packets (codel) or at the
# limit. Chosen over RED because the marks are immediate and deterministic
# (RED marks on an averaged queue, randomly) and the count is explicit
# ("ce_mark N" in `tc -s qdisc`); one queue instead of fq_codel's default
# 1024, because per-flow queues would enforce fairness in the switch and
# hide the senders' congestion control.
: "${INCAST_SW:=isw}" "${INCAST_SND:=snd}" "${INCAST_RCV:=rcv}" "${INCAST_PORT:=prcv}"
: "${INCAST_NET:=10.4.0}" "${INCAST_MGMT_NET:=10.5.0}"
INCAST_N=0 INCAST_BURST=0
INCAST_RCV_IP=$INCAST_NET.200 INCAST_RCV_MGMT_IP=$INCAST_MGMT_NET.200

# _incast_shape DEV RATE BURST MTU LIMIT CE: DEV (a port of $INCAST_SW)
# as a bottleneck: htb at RATE with a token bucket of BURST bytes, one
# frame per round, over the single-queue marking leaf.
_incast_shape() {
	local q=$(($4 + 14))
	tc -n "$INCAST_SW" -batch - <<-EOF
		qdisc replace dev $1 root handle 1: htb default 1
		class replace dev $1 parent 1: classid 1:1 htb rate $2 ceil $2 burst $3 cburst $3 quantum $q
		qdisc replace dev $1 parent 1:1 handle 10: fq_codel flows 1 limit $5 ce_threshold $6 ecn
	EOF
}

topo_incast() {
	local n=${1:-} mtu=1500 rate=100mbit limit=1000 ce=2ms i h ip mip burst=''
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "topo_incast: need N senders" >&2; return 2; }
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--mtu) mtu=$2; shift 2 ;;
		--rate) rate=$2; shift 2 ;;
		--limit) limit=$2; shift 2 ;;
		--ce) ce=$2; shift 2 ;;
		--burst) burst=$2; shift 2 ;;
		*) echo "topo_incast: unknown option $1" >&2; return 2 ;;
		esac
	done
	{
		echo "netns del $INCAST_SW"
		echo "netns del $INCAST_RCV"
		for ((i = 1; i <= (n > INCAST_N ? n : INCAST_N); i++)); do echo "netns del $INCAST_SND$i"; done
	} | ip -force -batch - >/dev/null 2>&1
	INCAST_N=$n INCAST_RCV_IP=$INCAST_NET.200 INCAST_RCV_MGMT_IP=$INCAST_MGMT_NET.200
	{
		echo "netns add $INCAST_SW"
		echo "netns add $INCAST_RCV"
		echo "link add $TOPO_DEV netns $INCAST_RCV mtu $mtu type veth peer name $INCAST_PORT netns $INCAST_SW mtu $mtu"
		echo "link add $MGMT_DEV netns $INCAST_RCV type veth peer name m$INCAST_PORT netns $INCAST_SW"
		for ((i = 1; i <= n; i++)); do
			echo "netns add $INCAST_SND$i"
			echo "link add $TOPO_DEV netns $INCAST_SND$i mtu $mtu type veth peer name p$i netns $INCAST_SW mtu $mtu"
			echo "link add $MGMT_DEV netns $INCAST_SND$i type veth peer name m$i netns $INCAST_SW"
		done
	} | _ipb - || return
	{
		echo "link set lo up"
		echo "link add ibr0 mtu $mtu type bridge stp_state 0 mcast_snooping 0"
		echo "link add mbr0 type bridge stp_state 0 mcast_snooping 0"
		echo "link set $INCAST_PORT master ibr0 up"
		echo "link set m$INCAST_PORT master mbr0 up"
		for ((i = 1; i <= n; i++)); do
			echo "link set p$i master ibr0 up"
			echo "link set m$i master mbr0 up"
		done
		echo "link set ibr0 up"
		echo "link set mbr0 up"
	} | _ipb "$INCAST_SW" || return
	for ((i = 0; i <= n; i++)); do
		if [ "$i" = 0 ]; then
			h=$INCAST_RCV ip=$INCAST_RCV_IP mip=$INCAST_RCV_MGMT_IP
		else
			h=$INCAST_SND$i ip=$INCAST_NET.$i mip=$INCAST_MGMT_NET.$i
		fi
		_ipb "$h" <<-EOF || return
			link set lo up
			link set $TOPO_DEV up
			link set $MGMT_DEV up
			addr add $ip/24 dev $TOPO_DEV
			addr add $mip/24 dev $MGMT_DEV
		EOF
		_ns_setup "$h" || return
	done
	_ns_setup "$INCAST_SW" || return
	INCAST_BURST=${burst:-$((2 * (mtu + 14)))}
	_incast_shape "$INCAST_PORT" "$rate" "$INCAST_BURST" "$mtu" "$limit" "$ce" || return
	for ((i = 1; i <= n; i++)); do
		wait_for 10 in_host "$INCAST_SND$i" ping -c1 -W1 "$INCAST_RCV_IP" ||
			{ echo "topo_incast: $INCAST_SND$i cannot ping $INCAST_RCV_IP" >&2; return 1; }
	done
	wait_for 10 in_host "${INCAST_SND}1" ping -c1 -W1 "$INCAST_RCV_MGMT_IP" ||
		{ echo "topo_incast: no management path to $INCAST_RCV_MGMT_IP" >&2; return 1; }
}

# qdisc_stat NS DEV KIND KEY: a counter of the first qdisc of KIND (e.g.
# fq_codel, htb) on DEV: KEY bytes | pkts | dropped | overlimits |
# ce_mark | marked | ... (any "KEY N" pair in `tc -s` output).
qdisc_stat() {
	local out blk
	out=$(tc -n "$1" -s qdisc show dev "$2" 2>/dev/null)
	blk=${out#*"qdisc $3 "}
	[ "$blk" != "$out" ] || { echo 0; return 1; }
	blk=${blk%%$'\n'qdisc *}
	case $4 in
	bytes) [[ $blk =~ Sent\ ([0-9]+)\ bytes ]] ;;
	pkts) [[ $blk =~ bytes\ ([0-9]+)\ pkt ]] ;;
	*) [[ $blk =~ [\ \(]$4\ ([0-9]+) ]] ;;
	esac && echo "${BASH_REMATCH[1]}" || echo 0
}

# incast_qdisc_stat KEY: qdisc_stat of the marking leaf at the bottleneck.
incast_qdisc_stat() { qdisc_stat "$INCAST_SW" "$INCAST_PORT" fq_codel "$1"; }
# incast_rate RATE [CE]: change the bottleneck's rate (htb class, the
# token bucket topo_incast gave it) and marking threshold.
incast_rate() {
	local mtu p ports=("$INCAST_PORT")
	mtu=$(ip -n "$INCAST_SW" -o link show "$INCAST_PORT") && [[ $mtu =~ mtu\ ([0-9]+) ]] || return
	mtu=${BASH_REMATCH[1]}
	[ "$INCAST_RXE_N" = 0 ] || ports+=("$INCAST_RXE_PORT")
	for p in "${ports[@]}"; do
		echo "class change dev $p parent 1: classid 1:1 htb rate $1 ceil $1 burst $INCAST_BURST cburst $INCAST_BURST quantum $((mtu + 14))"
		[ -z "${2:-}" ] || echo "qdisc change dev $p parent 1:1 handle 10: fq_codel ce_threshold $2"
	done | tc -n "$INCAST_SW" -batch -
}

# incast_rxe_attach N [--mtu M] [--rate R] [--limit P] [--ce T] [--burst B]:
# rxe on the incast switch (call after topo_incast, same options). rxe (6.1) works in
# init_net only, so its hosts are init_net veths on the same bridge:
# senders ${INCAST_RXE_S}I ($INCAST_RXE_NET.I) and the receiver
# $INCAST_RXE_R ($INCAST_RXE_NET.200), whose switch port $INCAST_RXE_PORT
# gets the same htb and marking leaf as $INCAST_PORT. Policy routing (as
# topo_rxe_two_hosts; rules pref 110..110+N, tables $INCAST_RXE_TABLE+I)
# sends each sender's traffic to the receiver out of its own veth and the
# receiver's out of its veth, instead of through lo. Then `rxe_add` a
# device on each veth; topo_cleanup removes it all.
: "${INCAST_RXE_NET:=10.6.0}" "${INCAST_RXE_S:=rxs}" "${INCAST_RXE_R:=rxr}"
: "${INCAST_RXE_PORT:=prxr}" "${INCAST_RXE_TABLE:=110}"
INCAST_RXE_N=0
incast_rxe_attach() {
	local n=${1:-} mtu=1500 rate=100mbit limit=1000 ce=2ms i burst='' r=$INCAST_RXE_NET.200
	[[ $n =~ ^[1-9][0-9]?$ ]] || { echo "incast_rxe_attach: need N senders" >&2; return 2; }
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--mtu) mtu=$2; shift 2 ;;
		--rate) rate=$2; shift 2 ;;
		--limit) limit=$2; shift 2 ;;
		--ce) ce=$2; shift 2 ;;
		--burst) burst=$2; shift 2 ;;
		*) echo "incast_rxe_attach: unknown option $1" >&2; return 2 ;;
		esac
	done
	_incast_rxe_unroute
	{
		echo "link del $INCAST_RXE_R"
		for ((i = 1; i <= 16; i++)); do echo "link del $INCAST_RXE_S$i"; done
	} | ip -force -batch - >/dev/null 2>&1
	{
		echo "link add $INCAST_RXE_R mtu $mtu type veth peer name $INCAST_RXE_PORT netns $INCAST_SW mtu $mtu"
		for ((i = 1; i <= n; i++)); do
			echo "link add $INCAST_RXE_S$i mtu $mtu type veth peer name rp$i netns $INCAST_SW mtu $mtu"
		done
	} | _ipb - || return
	{
		echo "link set $INCAST_RXE_PORT master ibr0 up"
		for ((i = 1; i <= n; i++)); do echo "link set rp$i master ibr0 up"; done
	} | _ipb "$INCAST_SW" || return
	INCAST_RXE_N=$n
	local rxdevs=("$INCAST_RXE_R")
	for ((i = 1; i <= n; i++)); do rxdevs+=("$INCAST_RXE_S$i"); done
	_rxe_sysctls "${rxdevs[@]}"
	{
		echo "addr add $r/24 dev $INCAST_RXE_R"
		echo "link set $INCAST_RXE_R up"
		echo "route add $INCAST_RXE_NET.0/24 dev $INCAST_RXE_R src $r table $INCAST_RXE_TABLE"
		echo "rule add pref 110 iif lo from $r to $INCAST_RXE_NET.0/24 lookup $INCAST_RXE_TABLE"
		for ((i = 1; i <= n; i++)); do
			echo "addr add $INCAST_RXE_NET.$i/24 dev $INCAST_RXE_S$i"
			echo "link set $INCAST_RXE_S$i up"
			echo "route add $r/32 dev $INCAST_RXE_S$i src $INCAST_RXE_NET.$i table $((INCAST_RXE_TABLE + i))"
			echo "rule add pref $((110 + i)) iif lo from $INCAST_RXE_NET.$i to $r lookup $((INCAST_RXE_TABLE + i))"
		done
		if [ -z "$(ip rule show pref 500 2>/dev/null)" ]; then
			echo "rule add pref 500 lookup local"
			echo "rule del pref 0 lookup local"
		fi
	} | _ipb - || return
	_ns_setup "$INCAST_SW" || return
	_incast_shape "$INCAST_RXE_PORT" "$rate" "${burst:-$((2 * (mtu + 14)))}" "$mtu" "$limit" "$ce" ||
		return
	for ((i = 1; i <= n; i++)); do
		wait_for 10 ping -c1 -W1 -I "$INCAST_RXE_NET.$i" "$r" ||
			{ echo "incast_rxe_attach: $INCAST_RXE_NET.$i cannot ping $r" >&2; return 1; }
	done
}

# the policy routing of incast_rxe_attach (called by _rxe_unroute)
_incast_rxe_unroute() {
	local i
	for ((i = 0; i <= 16; i++)); do
		echo "rule del pref $((110 + i))"
		echo "route flush table $((INCAST_RXE_TABLE + i))"
	done | ip -force -batch - >/dev/null 2>&1
	INCAST_RXE_N=0
	return 0
}

# --- cleanup -------------------------------------------------------------------
# Remove every namespace, rdma link, and the rxe wiring (between tests).
topo_cleanup() {
	local w l p pids=() end=$((SECONDS + 60))
	_LINK_SHAPE=()
	while read -r w l _; do
		[ "$w" = link ] || continue
		rdma link delete "${l%%/*}" >/dev/null 2>&1 &
		pids+=("$!")
	done < <(rdma link show 2>/dev/null)
	# a device stuck in removal (a driver bug) must not hang the run:
	# bounded, and never `wait` (a task in D state cannot be killed)
	for p in "${pids[@]}"; do
		while kill -0 "$p" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
			bsleep 0.2
		done
	done
	_rxe_unroute
	{
		echo "link del $RXE_A_DEV"
		echo "link del $RXE_B_DEV"
		echo "link del $INCAST_RXE_R"
		for ((w = 1; w <= 16; w++)); do echo "link del $INCAST_RXE_S$w"; done
	} | ip -force -batch - >/dev/null 2>&1
	ip -all netns delete >/dev/null 2>&1
	return 0
}

# dmesg_drop_known: stdin (dmesg) to stdout without the kernel reports
# listed in tests/lib/known-kernel-reports for the running kernel (rt on
# PREEMPT_RT, debug on any other), from each one's first line to its last.
dmesg_drop_known() {
	local kern=debug
	case $(uname -v) in *PREEMPT_RT*) kern=rt ;; esac
	awk -F '\t' -v kern="$kern" '
	FILENAME != "-" {
		if ($1 == kern) { start[++n] = $2; end[n] = $3 }
		next
	}
	{
		m = $0
		sub(/^\[ *[0-9]+\.[0-9]+\] /, "", m)
		if (!skip)
			for (i = 1; i <= n; i++)
				if (m ~ start[i]) { skip = i; break }
		if (!skip) print
		else if (m ~ end[skip]) skip = 0
	}' "${BASH_SOURCE[0]%/*}/known-kernel-reports" -
}

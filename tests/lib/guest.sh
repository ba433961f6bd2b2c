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
#   topo_cleanup               remove everything the above created
# Links:  link_shape NS DEV [netem args: rate R loss P delay D reorder ...
#         dup P limit N ...] | link_clear NS DEV | link_outage NS DEV MS
# Misc:   in_host NS CMD... | rxe_add NAME NETDEV | rxe_gid_index DEV IPV4 |
#         sw_port_bytes NS DEV [rx|tx] | wait_for SECS CMD... |
#         srv_cli [--timeout S] [--log PREFIX] SERVER... -- CLIENT...
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

# Hex mask of all CPUs, for RPS (without exec: glob over sysfs).
_cpu_mask() {
	local c n=0
	for c in /sys/devices/system/cpu/cpu[0-9]*; do n=$((n + 1)); done
	printf '%x' $(((1 << n) - 1))
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
	# Sysctls before the addresses exist: accept our own addresses as
	# source on input, no reverse-path check, ARP only for the address of
	# the receiving interface.
	local d f mask
	mask=$(_cpu_mask)
	echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter
	for d in "$RXE_A_DEV" "$RXE_B_DEV"; do
		echo 1 >"/proc/sys/net/ipv4/conf/$d/accept_local"
		echo 0 >"/proc/sys/net/ipv4/conf/$d/rp_filter"
		echo 1 >"/proc/sys/net/ipv4/conf/$d/arp_ignore"
		echo 2 >"/proc/sys/net/ipv4/conf/$d/arp_announce"
		for f in /sys/class/net/"$d"/queues/rx-*/rps_cpus; do echo "$mask" >"$f"; done
	done
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

# --- cleanup -------------------------------------------------------------------
# Remove every namespace, rdma link, and the rxe wiring (between tests).
topo_cleanup() {
	local w l
	_LINK_SHAPE=()
	while read -r w l _; do
		[ "$w" = link ] || continue
		rdma link delete "${l%%/*}" >/dev/null 2>&1
	done < <(rdma link show 2>/dev/null)
	_rxe_unroute
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		link del $RXE_A_DEV
		link del $RXE_B_DEV
	EOF
	ip -all netns delete >/dev/null 2>&1
	return 0
}

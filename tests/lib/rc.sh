# shellcheck shell=bash
# Helpers for the RC tests (tests/vm/20-rc.sh, 25-rc-loss.sh, 30-rc-errors.sh),
# on top of guest.sh (source that first).
#
#   rc_setup [--mtu M]       two hosts behind the switch + management link,
#                            metaroce devices $RC_DEV_A (hostA) and $RC_DEV_B
#                            (hostB); sets GID_A, GID_B
#   rc_build_tools           build tests/tools/mrc_verify if missing/stale
#   rc_verify [--timeout S] [--log P] [--srv-args "..."] ARGS...
#                            mrc_verify server in hostB, client in hostA with
#                            ARGS (control over the management link);
#                            output in P.srv / P.cli (default /tmp/rc_verify)
#   rc_result FILE KEY       KEY=value from the MRC_VERIFY_RESULT line
#   rc_snap ARRAY DEV        port counters of DEV into an associative array
#   rc_delta BEFORE AFTER NAME
#   netem_stat NS DEV dropped|sent  packets counted by the root qdisc
#   rc_dmesg_mark / rc_dmesg_bad    kernel messages since the mark that
#                            look like BUG/WARNING/Oops (printed, status 0)

RC_REPO=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd -P)
MRC_VERIFY=$RC_REPO/tests/tools/mrc_verify
: "${RC_DEV_A:=mrcA}" "${RC_DEV_B:=mrcB}"
GID_A='' GID_B=''

rc_build_tools() {
	local src=$RC_REPO/tests/tools/mrc_verify.c
	if [ -x "$MRC_VERIFY" ] && ! [ "$src" -nt "$MRC_VERIFY" ]; then
		return 0
	fi
	make -s -C "$RC_REPO/tests/tools" >/tmp/rc_build.log 2>&1 || {
		cat /tmp/rc_build.log
		return 1
	}
}

rc_setup() {
	topo_two_hosts "$@" || return
	topo_mgmt || return
	in_host "$TOPO_A" rdma link add "$RC_DEV_A" type metaroce netdev "$TOPO_DEV" || return
	in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV" || return
	GID_A=$(rxe_gid_index "$RC_DEV_A" "$TOPO_A_IP") || return
	GID_B=$(rxe_gid_index "$RC_DEV_B" "$TOPO_B_IP") || return
}

rc_verify() {
	local to=180 log=/tmp/rc_verify srv_args=''
	while [ $# -gt 0 ]; do
		case $1 in
		--timeout) to=$2; shift 2 ;;
		--log) log=$2; shift 2 ;;
		--srv-args) srv_args=$2; shift 2 ;;
		*) break ;;
		esac
	done
	# shellcheck disable=SC2086 # srv_args holds words
	srv_cli --timeout "$to" --log "$log" \
		in_host "$TOPO_B" "$MRC_VERIFY" -d "$RC_DEV_B" -g "$GID_B" $srv_args -- \
		in_host "$TOPO_A" "$MRC_VERIFY" -d "$RC_DEV_A" -g "$GID_A" "$@" "$MGMT_B_IP"
}

rc_result() {
	local line w
	line=$(grep -h '^MRC_VERIFY_RESULT' "$1" 2>/dev/null | tail -n 1)
	for w in $line; do
		case $w in "$2"=*) echo "${w#*=}"; return 0 ;; esac
	done
	return 1
}

rc_snap() {
	local -n _rc_s=$1
	local w k
	_rc_s=()
	read -ra w <<<"$(rdma statistic show link "$2/1" 2>/dev/null)"
	for ((k = 2; k + 1 < ${#w[@]}; k += 2)); do
		_rc_s[${w[$k]}]=${w[k + 1]}
	done
}

rc_delta() {
	local -n _rc_b=$1 _rc_a=$2
	echo $((${_rc_a[$3]:-0} - ${_rc_b[$3]:-0}))
}

# netem_stat NS DEV dropped|sent: from "Sent B bytes P pkt (dropped D, ..."
netem_stat() {
	local out
	out=$(tc -n "$1" -s qdisc show dev "$2" 2>/dev/null)
	case $3 in
	dropped) [[ $out =~ dropped\ ([0-9]+) ]] ;;
	sent) [[ $out =~ bytes\ ([0-9]+)\ pkt ]] ;;
	esac && echo "${BASH_REMATCH[1]}" || echo 0
}

RC_DMESG_MARK=0
rc_dmesg_mark() {
	RC_DMESG_MARK=$(dmesg | wc -l)
}
rc_dmesg_bad() {
	dmesg | tail -n +$((RC_DMESG_MARK + 1)) |
		grep -E -A12 'BUG|WARNING|Oops|refcount_t|general protection|hung task|soft lockup|RCU stall|list_(add|del) corruption' |
		head -n 60
}

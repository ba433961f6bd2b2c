# shellcheck shell=bash
# Helpers for the hostile-peer test (tests/vm/35-hostile.sh), on top of
# guest.sh and rc.sh (source those first).
#
#   hs_build_tools           build mrc_inject (and rc_build_tools' tools) if
#                            missing or older than their sources
#   qp_live ARRAY DEV        the first RC QP of an mrc_verify process on DEV,
#                            from `rdma -j -dd res show qp`: every "key":value
#                            of its JSON object (lqpn, rqpn, state, sq-psn,
#                            rq-psn and the driver's drv_snd_una, ...; those
#                            also without "drv_": snd_una, snd_nxt, rcv_nxt)
#                            into an associative array; status 1 if none
#   qp_numbers DEV           lqpn of every QP on DEV, one line
#   inject NS ARGS...        mrc_inject ARGS in namespace NS; its result
#                            line's KEY=value pairs into the associative
#                            array INJ (INJ[rc] its exit status), its output
#                            in $INJ_LOG
#   cnt_has ARRAY NAME       is NAME a counter in an rc_snap ARRAY?
#   cnt_changed S0 S1        "name +delta" of every counter (not gauge)
#                            that changed between two rc_snap arrays
#   cnt_copy FROM TO         copy an rc_snap array

MRC_INJECT=$RC_REPO/tests/tools/mrc_inject
INJ_LOG=/tmp/mrc_inject.log
# shellcheck disable=SC2034 # for the caller
declare -gA INJ=()

hs_build_tools() {
	rc_build_tools || return
	[ -x "$MRC_INJECT" ] && ! [ "$MRC_INJECT.c" -nt "$MRC_INJECT" ] && return 0
	make -s -C "$RC_REPO/tests/tools" mrc_inject >/tmp/hs_build.log 2>&1 || {
		cat /tmp/hs_build.log
		return 1
	}
}

# _json_pairs JSON: "key value" lines for every "key":scalar, in order
_json_pairs() {
	local s=$1 re='"([A-Za-z0-9_-]+)":("[^"]*"|-?[0-9]+|true|false)'
	while [[ $s =~ $re ]]; do
		local v=${BASH_REMATCH[2]}
		v=${v#\"} v=${v%\"}
		printf '%s %s\n' "${BASH_REMATCH[1]}" "$v"
		s=${s#*"${BASH_REMATCH[0]}"}
	done
}

qp_live() {
	local -n _ql=$1
	local out k v cur=() found=0
	_ql=()
	out=$(rdma -j -dd res show qp link "$2/1" 2>/dev/null) || return 1
	# a QP's object starts with its ifindex
	while read -r k v; do
		if [ "$k" = ifindex ] && [ "${#cur[@]}" -gt 0 ]; then
			_qp_pick && { found=1; break; }
			cur=()
		fi
		cur+=("$k" "$v")
	done < <(_json_pairs "$out")
	[ "$found" = 1 ] || _qp_pick || return 1
}

# the QP in cur[] (key, value, ...) if it is mrc_verify's RC QP: into _ql
_qp_pick() {
	local i
	declare -A t=()
	for ((i = 0; i + 1 < ${#cur[@]}; i += 2)); do t[${cur[i]}]=${cur[i + 1]}; done
	[ "${t[type]:-}" = RC ] && [ "${t[comm]:-}" = mrc_verify ] || return 1
	for i in "${!t[@]}"; do
		_ql[$i]=${t[$i]}
		[[ $i != drv_* ]] || _ql[${i#drv_}]=${t[$i]}
	done
}

qp_numbers() {
	local k v line=''
	while read -r k v; do
		[ "$k" != lqpn ] || line+="$v "
	done < <(_json_pairs "$(rdma -j res show qp link "$1/1" 2>/dev/null)")
	echo "$line"
}

inject() {
	local ns=$1 w rc=0 l res=''
	shift
	INJ=()
	ip netns exec "$ns" "$MRC_INJECT" "$@" >"$INJ_LOG" 2>&1 || rc=$?
	INJ[rc]=$rc
	while IFS= read -r l; do
		[[ $l != MRC_INJECT_RESULT* ]] || res=$l
	done <"$INJ_LOG"
	for w in $res; do
		# shellcheck disable=SC2034 # for the caller
		case $w in *=*) INJ[${w%%=*}]=${w#*=} ;; esac
	done
	[ "$rc" -eq 0 ]
}

cnt_has() {
	local -n _ch=$1
	[ -n "${_ch[$2]+x}" ]
}

cnt_changed() {
	local -n _c0=$1 _c1=$2
	local n out=''
	for n in "${!_c1[@]}"; do
		case $n in	# gauges, not counts
		credit_pool | credit_pool_ceiling | credit_arrival_gap_us | credit_active_flows | \
			rtt_*_us | rack_reo_wnd_us) continue ;;
		esac
		[ "${_c1[$n]}" = "${_c0[$n]:-0}" ] || out+="$n +$((_c1[$n] - ${_c0[$n]:-0})) "
	done
	echo "${out% }"
}

cnt_copy() {
	local -n _f=$1 _t=$2
	local n
	_t=()
	for n in "${!_f[@]}"; do _t[$n]=${_f[$n]}; done
}

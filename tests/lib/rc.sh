# shellcheck shell=bash
# Helpers for the RC tests (tests/vm/20-rc.sh, 25-rc-loss.sh, 30-rc-errors.sh),
# on top of guest.sh (source that first).
#
#   rc_setup [--mtu M]       two hosts behind the switch + management link,
#                            metaroce devices $RC_DEV_A (hostA) and $RC_DEV_B
#                            (hostB); sets GID_A, GID_B
#   rc_hosts [--mtu M]       rc_setup with its TAP line; ends the test file
#                            (summary printed) if it fails
#   rc_loss_both PCT / rc_loss_clear   PCT % random loss each way on both
#                            switch ports, and none again
#   rc_build_tools           build tests/tools/mrc_verify if missing/stale
#   rc_verify [--timeout S] [--log P] [--srv-args "..."] ARGS...
#                            mrc_verify server in hostB, client in hostA with
#                            ARGS (control over the management link);
#                            output in P.srv / P.cli (default /tmp/rc_verify)
#   rc_result FILE KEY       KEY=value from the MRC_VERIFY_RESULT line
#   rc_snap ARRAY DEV        port counters of DEV into an associative array
#   rc_delta BEFORE AFTER NAME
#   rc_snap_all ARRAY        counters of every RDMA device (one exec) into an
#                            associative array, keys "DEV:COUNTER"
#   netem_stat NS DEV dropped|sent  packets counted by the root qdisc
#   rc_dmesg_mark / rc_dmesg_bad    kernel messages since the mark that
#                            look like BUG/WARNING/Oops (printed, status 0)
#   rc_dmesg_new             every kernel message since the mark
#   rc_ecmp_setup [topo_ecmp options]
#                            topo_ecmp + management link + metaroce devices
#                            $RC_DEV_A / $RC_DEV_B; sets GID_A, GID_B
#   rc_ecmp_relink           delete and re-add both devices (link-add-time
#                            module parameters take effect)
#   rc_incast_setup N [topo_incast options]
#                            topo_incast + a metaroce device per host:
#                            ${RC_DEV_S}I in sender I, $RC_DEV_R in the
#                            receiver; GIDs in INCAST_GID[I], INCAST_GID_R
#   rc_incast_rxe_setup N [incast_rxe_attach options]
#                            incast_rxe_attach + an rxe device per host:
#                            ${RC_RXE_S}I on sender I, $RC_RXE_R on the
#                            receiver; GIDs in INCAST_RXE_GID[I],
#                            INCAST_RXE_GID_R (after rc_incast_setup)
#   rc_incast_run [--timeout S] [--log P] [--sync] [--rxe] "I..." ARGS...
#                            one mrc_verify pair per sender I (server in the
#                            receiver on TCP port 18600+I), all at once;
#                            --rxe: between the rxe devices instead;
#                            --sync: the clients start their streams
#                            together, once all have connected their QPs
#                            (--start-file); logs P.I.srv/.cli; returns the
#                            number of failed pairs; sets RC_INCAST_START
#                            (the start, EPOCHREALTIME form)
#   rc_param NAME [VALUE]    print / set a rdma_metaroce module parameter
#                            (status 1 if the module has no such parameter)
#   jain X...                Jain's fairness index of the numbers

RC_REPO=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd -P)
MRC_VERIFY=$RC_REPO/tests/tools/mrc_verify
MRC_WAW=$RC_REPO/tests/tools/mrc_waw
: "${RC_DEV_A:=mrcA}" "${RC_DEV_B:=mrcB}"
GID_A='' GID_B=''

rc_build_tools() {
	local p stale=0
	for p in "$MRC_VERIFY" "$MRC_WAW"; do
		[ -x "$p" ] && ! [ "$p.c" -nt "$p" ] || stale=1
	done
	[ "$stale" = 1 ] || return 0
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

# rc_verified DESC RC LOG [DETAIL]: the TAP line for one rc_verify run
# whose exit status was RC and whose logs are LOG.cli and LOG.srv: ok
# ("DESC (DETAIL)") only if it exited 0 and both sides reported PASS;
# otherwise the exit status, each side's result and the logs' error lines.
rc_verified() {
	local desc=$1 rc=$2 log=$3 detail=${4:-} cs ss
	cs=$(rc_result "$log.cli" status) ss=$(rc_result "$log.srv" status)
	if [ "$rc" -eq 0 ] && [ "$cs" = PASS ] && [ "$ss" = PASS ]; then
		t_ok "$desc${detail:+ ($detail)}"
		return 0
	fi
	t_fail "$desc" "exit $rc, client ${cs:-no result}, server ${ss:-no result}" \
		"$(grep -h -E 'ERROR|FATAL|seed|status|error|modify' "$log.cli" "$log.srv" | head -n 12)" \
		"$(tail -n 4 "$log.cli")"
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

rc_snap_all() {
	local -n _rc_sa=$1
	local w k line
	_rc_sa=()
	while IFS= read -r line; do
		read -ra w <<<"$line"
		[ "${w[0]:-}" = link ] || continue
		for ((k = 2; k + 1 < ${#w[@]}; k += 2)); do
			_rc_sa[${w[1]%/*}:${w[$k]}]=${w[k + 1]}
		done
	done < <(rdma statistic show 2>/dev/null)
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
# the kernel log since rc_dmesg_mark
rc_dmesg_new() {
	dmesg | tail -n +$((RC_DMESG_MARK + 1))
}
rc_dmesg_bad() {
	rc_dmesg_new | dmesg_drop_known |
		grep -E -A12 'BUG|WARNING|Oops|refcount_t|general protection|hung task|soft lockup|RCU stall|list_(add|del) corruption' |
		head -n 60
}

# rc_loss_both PCT / rc_loss_clear: PCT % random loss on both switch ports
# of rc_setup's topology (each way), and none again
rc_loss_both() {
	link_shape "$TOPO_SW" "$TOPO_PORT_A" loss "$1%"
	link_shape "$TOPO_SW" "$TOPO_PORT_B" loss "$1%"
}
rc_loss_clear() {
	link_clear "$TOPO_SW" "$TOPO_PORT_A"
	link_clear "$TOPO_SW" "$TOPO_PORT_B"
}

# rc_hosts [rc_setup options]: rc_setup and its TAP line; if it fails the
# test file ends there (summary printed).  Call it directly, not in $(...)
rc_hosts() {
	if ! rc_setup "$@" >/tmp/rc_setup.log 2>&1; then
		t_fail "two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
		t_summary
		exit 1
	fi
	t_ok "two hosts with metaroce devices"
}

# --- ECMP fabric and incast (tests/vm/40-multipath.sh, 45-cc.sh) ---------------
rc_ecmp_setup() {
	topo_ecmp "$@" || return
	topo_mgmt || return
	_rc_ecmp_devs
}

_rc_ecmp_devs() {
	in_host "$TOPO_A" rdma link add "$RC_DEV_A" type metaroce netdev "$TOPO_DEV" || return
	in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV" || return
	GID_A=$(rxe_gid_index "$RC_DEV_A" "$ECMP_A_IP") || return
	GID_B=$(rxe_gid_index "$RC_DEV_B" "$ECMP_B_IP") || return
}

rc_ecmp_relink() {
	rdma link delete "$RC_DEV_A" >/dev/null 2>&1
	rdma link delete "$RC_DEV_B" >/dev/null 2>&1
	_rc_ecmp_devs
}

rc_param() {
	local f=/sys/module/rdma_metaroce/parameters/$1
	[ -e "$f" ] || return 1
	if [ $# -gt 1 ]; then echo "$2" >"$f"; else cat "$f"; fi
}

: "${RC_DEV_S:=mrcS}" "${RC_DEV_R:=mrcR}"
declare -ga INCAST_GID=()
INCAST_GID_R=''
rc_incast_setup() {
	local n=$1 i
	topo_incast "$@" || return
	in_host "$INCAST_RCV" rdma link add "$RC_DEV_R" type metaroce netdev "$TOPO_DEV" || return
	INCAST_GID_R=$(rxe_gid_index "$RC_DEV_R" "$INCAST_RCV_IP") || return
	INCAST_GID=()
	for ((i = 1; i <= n; i++)); do
		in_host "$INCAST_SND$i" rdma link add "$RC_DEV_S$i" type metaroce netdev "$TOPO_DEV" || return
		INCAST_GID[i]=$(rxe_gid_index "$RC_DEV_S$i" "$INCAST_NET.$i") || return
	done
}

: "${RC_RXE_S:=rxes}" "${RC_RXE_R:=rxer}"
declare -ga INCAST_RXE_GID=()
INCAST_RXE_GID_R=''
rc_incast_rxe_setup() {
	local n=$1 i
	incast_rxe_attach "$@" || return
	rxe_add "$RC_RXE_R" "$INCAST_RXE_R" || return
	for ((i = 1; i <= n; i++)); do rxe_add "$RC_RXE_S$i" "$INCAST_RXE_S$i" || return; done
	# the GID table fills asynchronously after link add
	wait_for 10 rxe_gid_index "$RC_RXE_R" "$INCAST_RXE_NET.200"
	INCAST_RXE_GID_R=$(rxe_gid_index "$RC_RXE_R" "$INCAST_RXE_NET.200") || return
	INCAST_RXE_GID=()
	for ((i = 1; i <= n; i++)); do
		wait_for 10 rxe_gid_index "$RC_RXE_S$i" "$INCAST_RXE_NET.$i"
		INCAST_RXE_GID[i]=$(rxe_gid_index "$RC_RXE_S$i" "$INCAST_RXE_NET.$i") || return
	done
}

rc_incast_run() {
	local to=180 log=/tmp/incast sync=0 rxe=0 i pids=() fails=0 startopt=() go='' end ready lines n=0
	while [ $# -gt 0 ]; do
		case $1 in
		--timeout) to=$2; shift 2 ;;
		--log) log=$2; shift 2 ;;
		--sync) sync=1; shift ;;
		--rxe) rxe=1; shift ;;
		*) break ;;
		esac
	done
	local flows=$1
	shift
	if [ "$sync" = 1 ]; then
		go=/tmp/.incast-go.$BASHPID
		rm -f "$go"
		startopt=(--start-file "$go")
	fi
	for i in $flows; do
		rm -f "$log.$i.cli" "$log.$i.srv"
		if [ "$rxe" = 1 ]; then
			# all in init_net: control over lo
			srv_cli --timeout "$to" --log "$log.$i" \
				"$MRC_VERIFY" -d "$RC_RXE_R" -g "$INCAST_RXE_GID_R" -p $((18600 + i)) -- \
				"$MRC_VERIFY" -d "$RC_RXE_S$i" -g "${INCAST_RXE_GID[i]}" -p $((18600 + i)) \
				"${startopt[@]}" "$@" 127.0.0.1 &
		else
			srv_cli --timeout "$to" --log "$log.$i" \
				in_host "$INCAST_RCV" "$MRC_VERIFY" -d "$RC_DEV_R" -g "$INCAST_GID_R" -p $((18600 + i)) -- \
				in_host "$INCAST_SND$i" "$MRC_VERIFY" -d "$RC_DEV_S$i" -g "${INCAST_GID[i]}" -p $((18600 + i)) \
				"${startopt[@]}" "$@" "$INCAST_RCV_MGMT_IP" &
		fi
		pids[i]=$!
		n=$((n + 1))
	done
	# shellcheck disable=SC2034 # RC_INCAST_START is for the caller
	if [ "$sync" = 1 ]; then
		# go once every client waits (its QP is connected) or has died
		end=$((SECONDS + to))
		while [ "$SECONDS" -lt "$end" ]; do
			ready=0
			for i in $flows; do
				if ! kill -0 "${pids[i]}" 2>/dev/null; then
					ready=$((ready + 1))
				elif [ -f "$log.$i.cli" ]; then
					mapfile -t lines <"$log.$i.cli"
					[[ ${lines[*]} != *"waiting for $go"* ]] || ready=$((ready + 1))
				fi
			done
			[ "$ready" -lt "$n" ] || break
			bsleep 0.1
		done
		RC_INCAST_START=$EPOCHREALTIME
		: >"$go"
	else
		RC_INCAST_START=$EPOCHREALTIME
	fi
	for i in $flows; do
		wait "${pids[i]}" || fails=$((fails + 1))
	done
	[ -z "$go" ] || rm -f "$go"
	return "$fails"
}

jain() {
	awk 'BEGIN { s = 0; q = 0; for (i = 1; i < ARGC; i++) { s += ARGV[i]; q += ARGV[i] * ARGV[i] }
		if (q > 0) printf "%.3f\n", s * s / ((ARGC - 1) * q); else print "0" }' "$@"
}

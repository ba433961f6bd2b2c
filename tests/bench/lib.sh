# shellcheck shell=bash
# Helpers of the benchmark guest script (tests/bench/bench.sh), on top of
# tests/lib/guest.sh and tests/lib/rc.sh (source those first).
#
#   bench_topo MTU            metaroce (hostA/hostB, mrcA/mrcB) and rxe
#                             (init_net rxa/rxb, rxe0/rxe1) behind the same
#                             switch namespace, both at MTU; no-op if the
#                             bed already runs at MTU
#   bench_prov PROV           select a provider (metaroce|rxe): sets the
#                             B_* variables below
#   bench_shape RATE_MBIT QBYTES DATA-NETEM ACK-NETEM
#                             shape both directions of the selected
#                             provider's wire: netem (loss only) with a tbf
#                             child (rate, byte-limited queue); a NETEM of
#                             "-" means no loss; RATE_MBIT 0 removes all
#                             shaping
#   bench_perf LOG TIMEOUT [--pin] TOOL ARGS...
#                             perftest server on B, client on A (-d/-x
#                             filled in, control connection off the wire);
#                             --pin: client on CPU 0, server on CPU 1
#   bench_perf_line FILE      the result line of a perftest output
#   bench_snap / bench_cdelta counter snapshots of both devices -> JSON
#   bench_qstats              netem/tbf counters of the selected wire -> JSON
#   bench_poll_start DEV IVAL_US [TRIGGER_BYTES OUTAGE_MS PORT...]
#   bench_poll_stop           sample a switch port's tx bytes and /proc/stat
#                             every IVAL_US (< 1 s) in the switch namespace; with a
#                             trigger, take PORTs down for OUTAGE_MS once
#                             TRIGGER_BYTES crossed; samples as JSON in
#                             $BENCH_POLL_JSON, events in $BENCH_POLL_EVENTS
#   bench_record JSON-FIELDS  append one result record to $BENCH_RECORDS
#   jstr S / jnum N           JSON string / number (null if not a number)
#
# Every exec from the 9p root costs 0.1-0.5 s under TCG: counters and
# /proc/stat are read with shell builtins, tc runs as one batch.

: "${BENCH_RECORDS:=${METAROCE_OUT:-/tmp}/records.jsonl}"
_BENCH_LIB_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd -P)
BENCH_MTU='' BENCH_RXE_GID_A='' BENCH_RXE_GID_B=''
# selected provider
# shellcheck disable=SC2034 # for the scenarios
B_PROV='' B_NS_A='' B_NS_B='' B_DEV_A='' B_DEV_B='' B_GID_A='' B_GID_B=''
B_CTRL='' B_DATA_PORT='' B_ACK_PORT=''
# a command (array) put in front of every perftest client, or none
B_CLI_WRAP=()

jstr() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\n'/\\n}
	s=${s//$'\t'/ }
	printf '"%s"' "$s"
}
jnum() {
	if [[ ${1:-} =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then printf '%s' "$1"; else printf null; fi
}
bench_record() {
	printf '{%s}\n' "$1" >>"$BENCH_RECORDS"
}

# --- topology -------------------------------------------------------------------
bench_topo() {
	local mtu=$1
	[ "$BENCH_MTU" = "$mtu" ] && return 0
	topo_cleanup
	BENCH_MTU=''
	rc_setup --mtu "$mtu" || { echo "bench: metaroce topology at MTU $mtu failed" >&2; return 1; }
	topo_rxe_two_hosts --mtu "$mtu" || { echo "bench: rxe topology at MTU $mtu failed" >&2; return 1; }
	rxe_add rxe0 "$RXE_A_DEV" && rxe_add rxe1 "$RXE_B_DEV" || return
	# the GID table fills asynchronously after link add
	wait_for 10 rxe_gid_index rxe0 "$RXE_A_IP"
	wait_for 10 rxe_gid_index rxe1 "$RXE_B_IP"
	BENCH_RXE_GID_A=$(rxe_gid_index rxe0 "$RXE_A_IP") || return
	BENCH_RXE_GID_B=$(rxe_gid_index rxe1 "$RXE_B_IP") || return
	_bench_static_neigh || return
	BENCH_MTU=$mtu
}

# Permanent ARP entries on both wires: a QP's move to RTR resolves the
# peer's MAC, and on a lossy link or a starved guest that resolution can
# time out (perftest then fails "Unable to Connect the HCA's"); address
# resolution is not what the benchmark measures.
_bench_static_neigh() {
	local ma mb ra rb
	ma=$(ip -n "$TOPO_A" -br link show dev "$TOPO_DEV") || return
	mb=$(ip -n "$TOPO_B" -br link show dev "$TOPO_DEV") || return
	read -r _ _ ma _ <<<"$ma"
	read -r _ _ mb _ <<<"$mb"
	read -r ra <"/sys/class/net/$RXE_A_DEV/address" || return
	read -r rb <"/sys/class/net/$RXE_B_DEV/address" || return
	ip -n "$TOPO_A" neigh replace "$TOPO_B_IP" lladdr "$mb" dev "$TOPO_DEV" nud permanent || return
	ip -n "$TOPO_B" neigh replace "$TOPO_A_IP" lladdr "$ma" dev "$TOPO_DEV" nud permanent || return
	ip -batch - <<-EOF
		neigh replace $RXE_B_IP lladdr $rb dev $RXE_A_DEV nud permanent
		neigh replace $RXE_A_IP lladdr $ra dev $RXE_B_DEV nud permanent
	EOF
}

bench_prov() {
	# shellcheck disable=SC2034 # for the scenarios
	B_PROV=$1
	case $1 in
	metaroce)
		B_NS_A=$TOPO_A B_NS_B=$TOPO_B B_DEV_A=$RC_DEV_A B_DEV_B=$RC_DEV_B
		B_GID_A=$GID_A B_GID_B=$GID_B
		# control connection over the management veth
		B_CTRL=$MGMT_B_IP B_DATA_PORT=$TOPO_PORT_B B_ACK_PORT=$TOPO_PORT_A
		;;
	rxe)
		B_NS_A='' B_NS_B='' B_DEV_A=rxe0 B_DEV_B=rxe1
		B_GID_A=$BENCH_RXE_GID_A B_GID_B=$BENCH_RXE_GID_B
		# both ends live in init_net: control over lo, data over the wire
		B_CTRL=127.0.0.1 B_DATA_PORT=$RXE_PORT_B B_ACK_PORT=$RXE_PORT_A
		;;
	*) echo "bench: unknown provider $1" >&2; return 2 ;;
	esac
}

# --- shaping -----------------------------------------------------------------------
# netem drops at enqueue (the random loss), then hands every packet at once
# to its tbf child, which sets the rate and owns the queue: tbf's drops are
# queue overflow, netem's drops are loss + overflow. netem's own packet
# limit is set far above the tbf queue so that it never binds. tbf's
# bucket is 64 KiB (5.2 ms at 100 Mbit/s, 10.5 ms at 50): a busy guest
# runs its timer late, and a bucket of a few frames loses that time (as
# the incast port's htb did; see scenario 6 in bench.sh).
bench_shape() {
	local rate=$1 qbytes=$2 dnet=$3 anet=$4 p net burst=65536
	{
		for p in "$B_DATA_PORT" "$B_ACK_PORT"; do
			echo "qdisc del dev $p root"
			[ "$rate" -gt 0 ] || continue
			if [ "$p" = "$B_DATA_PORT" ]; then net=$dnet; else net=$anet; fi
			[ "$net" != - ] || net=''
			echo "qdisc add dev $p root handle 1: netem limit 100000 $net"
			echo "qdisc add dev $p parent 1:1 handle 10: tbf rate ${rate}mbit burst $burst limit $qbytes"
		done
	} | tc -n "$TOPO_SW" -force -batch - 2>&1 | grep -v -E 'No such file|Cannot delete qdisc with handle of zero|Cannot find specified qdisc|^Command failed' >&2
	return 0
}

# bench_qstats: {"data":{netem sent/dropped, tbf dropped},"ack":{...}}
# (one tc exec for all ports of the switch)
bench_qstats() {
	local line dev='' kind='' role out='' sp sb dr
	declare -A st=()
	while IFS= read -r line; do
		if [[ $line =~ ^qdisc\ ([a-z_]+)\ [0-9a-f]+:\ dev\ ([^ ]+) ]]; then
			kind=${BASH_REMATCH[1]} dev=${BASH_REMATCH[2]}
		elif [[ $line =~ Sent\ ([0-9]+)\ bytes\ ([0-9]+)\ pkt\ \(dropped\ ([0-9]+) ]]; then
			st[$dev.$kind]="${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
		fi
	done < <(tc -s -n "$TOPO_SW" qdisc show 2>/dev/null)
	for role in data ack; do
		if [ $role = data ]; then dev=$B_DATA_PORT; else dev=$B_ACK_PORT; fi
		read -r sb sp dr <<<"${st[$dev.netem]:-x x x}"
		out+="${out:+,}\"$role\":{\"sent_pkts\":$(jnum "$sp"),\"sent_bytes\":$(jnum "$sb"),\"dropped\":$(jnum "$dr")"
		read -r _ _ dr <<<"${st[$dev.tbf]:-x x x}"
		out+=",\"overflow\":$(jnum "$dr")}"
	done
	printf '{%s}' "$out"
}

# --- perftest ----------------------------------------------------------------------
bench_perf() {
	local log=$1 to=$2 pin=0 srv=() cli=()
	shift 2
	if [ "$1" = --pin ]; then pin=1; shift; fi
	local tool=$1
	shift
	[ -z "$B_NS_B" ] || srv=(ip netns exec "$B_NS_B")
	[ -z "$B_NS_A" ] || cli=(ip netns exec "$B_NS_A")
	# pinned: the client's timestamps come from one CPU's TSC (the guest's
	# TSCs are not synchronised under TCG)
	[ "$pin" = 0 ] || { srv+=(taskset -c 1); cli+=(taskset -c 0); }
	srv+=("$tool" -d "$B_DEV_B" -x "$B_GID_B" "$@")
	cli+=("$tool" -d "$B_DEV_A" -x "$B_GID_A" "$@" "$B_CTRL")
	# a command that wraps the client (the perf scenario's sampler)
	[ "${#B_CLI_WRAP[@]}" = 0 ] || cli=("${B_CLI_WRAP[@]}" "${cli[@]}")
	bench_srv_cli "$to" "$log" "${srv[@]}" -- "${cli[@]}"
}

# bench_srv_cli TIMEOUT LOG SERVER... -- CLIENT...: like srv_cli (guest.sh),
# but retries the client only while the server is not listening yet
# ("Couldn't connect to": perftest's other errors also say "connect"), and
# keeps the output of every try in LOG.cli.
bench_srv_cli() {
	local to=$1 log=$2 srv=() cli=() pid rc=0 src=0 try out
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout "$to" "${srv[@]}" >"$log.srv" 2>&1 &
	pid=$!
	: >"$log.cli"
	for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		rc=0
		out=$(timeout "$to" "${cli[@]}" 2>&1) || rc=$?
		printf '%s\n' "$out" >>"$log.cli"
		if [ "$rc" -eq 0 ] || ! kill -0 "$pid" 2>/dev/null || [[ $out != *"Couldn't connect to"* ]]; then
			break
		fi
		echo "--- bench_srv_cli: try $try: server not listening yet" >>"$log.cli"
		read -r -t 0.3 <> <(:)
	done
	[ "$rc" -eq 0 ] || kill "$pid" 2>/dev/null
	wait "$pid" || src=$?
	[ "$rc" -ne 0 ] && return "$rc"
	return "$src"
}

# The result line: first line after the "#bytes" header that starts with a
# number.
bench_perf_line() {
	local l hdr=0
	while IFS= read -r l; do
		if [[ $l == *'#bytes'* ]]; then hdr=1; continue; fi
		if [ $hdr = 1 ] && [[ $l =~ ^[[:space:]]*[0-9] ]]; then
			echo "$l"
			return 0
		fi
	done <"$1"
	return 1
}

# --- counters ------------------------------------------------------------------------
# bench_snap ARRAY: hw_counters of both devices of the selected provider,
# keys "a.NAME" / "b.NAME" (sysfs, read with builtins).
bench_snap() {
	local -n _bs=$1
	local f v side dev
	_bs=()
	for side in a b; do
		if [ $side = a ]; then dev=$B_DEV_A; else dev=$B_DEV_B; fi
		for f in /sys/class/infiniband/"$dev"/ports/1/hw_counters/*; do
			[ -r "$f" ] || continue
			read -r v <"$f" 2>/dev/null || continue
			_bs[$side.${f##*/}]=$v
		done
	done
}

# bench_cdelta BEFORE AFTER: {"a":{name:delta,...},"b":{...}}; gauges
# (rtt_*, lifespan) as their value after the run; zero deltas left out.
bench_cdelta() {
	local -n _b0=$1 _b1=$2
	local k side name v a='' b=''
	for k in $(printf '%s\n' "${!_b1[@]}" | sort); do
		side=${k%%.*} name=${k#*.}
		case $name in
		rtt_* | lifespan) v=${_b1[$k]} ;;
		*) v=$((${_b1[$k]} - ${_b0[$k]:-0})) ;;
		esac
		[ "$v" != 0 ] || continue
		if [ "$side" = a ]; then a+="${a:+,}\"$name\":$(jnum "$v")"; else b+="${b:+,}\"$name\":$(jnum "$v")"; fi
	done
	printf '{"a":{%s},"b":{%s}}' "$a" "$b"
}

# --- poller in the switch namespace -------------------------------------------------
# Runs as its own bash inside the switch namespace (so /sys/class/net shows
# the switch ports), builtins only: "S time tx_bytes cpu_busy cpu_idle" per
# sample, "E down|up time" around an outage. Sleeping is a read with a
# timeout on a pipe nobody writes to (sleep(1) would be an exec).
# The outage: tc runs as one long-lived batch process, and each change is
# followed by a "qdisc show" whose answer confirms it took effect; the
# events carry the confirmation times and the outage lasts OUTAGE_MS from
# the confirmed start. The poller and tc run SCHED_FIFO (bench_poll_start):
# a guest busy with the transfer otherwise delayed them by up to ~100 ms,
# and an outage now and then did not happen at all.
_bench_poller() {
	local dev=$1 ivus=$2 trig=$3 oms=$4 stop=$5 fd b b0 u n s i w q sq st p
	local now down=0 up=0 rem
	shift 5
	exec {fd}<> <(:)
	if [ "$trig" -gt 0 ]; then
		coproc TCB { exec tc -force -batch - 2>&1; }
	fi
	read -r b0 <"/sys/class/net/$dev/statistics/tx_bytes"
	echo "R $EPOCHREALTIME"
	while [ ! -e "$stop" ]; do
		read -r b <"/sys/class/net/$dev/statistics/tx_bytes"
		read -r _ u n s i w q sq st _ </proc/stat
		now=$EPOCHREALTIME
		echo "S $now $((b - b0)) $((u + n + s + q + sq + st)) $((i + w))"
		now=${now/./}
		if [ "$trig" -gt 0 ] && [ $down = 0 ] && [ $((b - b0)) -ge "$trig" ]; then
			_bench_tc_set "loss 100%" "$@"
			now=$EPOCHREALTIME
			echo "E down $now"
			now=${now/./} down=${now/./}
		fi
		if [ $down != 0 ] && [ $up = 0 ] && [ $((now - down)) -ge $((oms * 1000)) ]; then
			_bench_tc_set "" "$@"
			now=$EPOCHREALTIME
			echo "E up $now"
			now=${now/./} up=${now/./}
		fi
		rem=$ivus
		# wake up in time to end the outage
		if [ $down != 0 ] && [ $up = 0 ]; then
			now=${EPOCHREALTIME/./}
			rem=$((down + oms * 1000 - now))
			[ $rem -le "$ivus" ] || rem=$ivus
			[ $rem -gt 0 ] || rem=1
		fi
		printf -v rem '0.%06d' "$rem"
		read -r -t "$rem" -u "$fd"
	done
	# never leave the link down
	if [ $down != 0 ] && [ $up = 0 ]; then
		_bench_tc_set "" "$@"
		echo "E up $EPOCHREALTIME"
	fi
	return 0
}

# _bench_tc_set NETEM-ARGS PORT...: change the root netem of every PORT
# through the tc coprocess, then wait (at most 2 s) until tc shows the last
# port's new netem line.
_bench_tc_set() {
	local args=$1 p last='' line
	shift
	for p; do
		echo "qdisc change dev $p root handle 1: netem limit 100000 $args" >&"${TCB[1]}"
		last=$p
	done
	echo "qdisc show dev $last" >&"${TCB[1]}"
	while read -r -t 2 -u "${TCB[0]}" line; do
		[[ $line == "qdisc netem 1:"* ]] || continue
		if [ -n "$args" ]; then [[ $line == *"$args"* ]] && return 0; else [[ $line != *loss* ]] && return 0; fi
	done
	echo "W tc did not confirm '$args' on $last"
	return 1
}

BENCH_POLL_PID='' BENCH_POLL_OUT=/tmp/bench_poll.out BENCH_POLL_STOP=/tmp/bench_poll.stop
BENCH_POLL_JSON='[]' BENCH_POLL_EVENTS='{}'
bench_poll_start() {
	local dev=$1 iv=$2 trig=${3:-0} oms=${4:-0}
	[ "$iv" -lt 1000000 ] || iv=999999
	shift 4 2>/dev/null || shift $#
	rm -f "$BENCH_POLL_STOP"
	: >"$BENCH_POLL_OUT"
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$TOPO_SW" chrt -f 10 bash -c "$(declare -f _bench_poller _bench_tc_set)"'; _bench_poller "$@"' _ \
		"$dev" "$iv" "$trig" "$oms" "$BENCH_POLL_STOP" "$@" >"$BENCH_POLL_OUT" 2>/dev/null &
	BENCH_POLL_PID=$!
	# running (its first line) before the traffic starts
	wait_for 20 grep -q '^R ' "$BENCH_POLL_OUT"
}

# Stops the poller; samples relative to the first one: [[t_s, bytes,
# cpu_busy, cpu_idle], ...] in BENCH_POLL_JSON, events {"down": t, "up": t}.
bench_poll_stop() {
	local k t b cb ci t0='' s='' e=''
	: >"$BENCH_POLL_STOP"
	wait "$BENCH_POLL_PID" 2>/dev/null
	BENCH_POLL_PID=''
	while read -r k t b cb ci; do
		case $k in
		S)
			[ -n "$t0" ] || t0=$t
			s+="${s:+,}[$(_bench_tdiff "$t" "$t0"),$b,$cb,$ci]"
			;;
		E)
			[ -n "$t0" ] || continue
			e+="${e:+,}\"$t\":$(_bench_tdiff "$b" "$t0")"
			;;
		W) e+="${e:+,}\"tc_unconfirmed\":true" ;;
		esac
	done <"$BENCH_POLL_OUT"
	# shellcheck disable=SC2034 # for the caller
	BENCH_POLL_JSON="[$s]" BENCH_POLL_EVENTS="{$e}"
}

# _bench_tdiff T1 T0: T1 - T0 (EPOCHREALTIME values) in seconds, 4 decimals
_bench_tdiff() {
	local a=${1/./} b=${2/./} d
	d=$(((10#$a - 10#$b) / 100))
	printf '%d.%04d' $((d / 10000)) $((d % 10000))
}

# --- sampler: byte counters and a queue, in one namespace -------------------------
# bench_samp_start NS IVAL_US [-q QDEV] FILE...: tests/bench/sampler.py in NS
# reads every FILE (a counter under /sys/class/net/DEV/statistics/, seen
# from inside NS) and /proc/stat every IVAL_US; with -q, also the marking
# leaf (fq_codel) of QDEV's qdisc tree through a long-lived `tc -s -batch`.
# Lines: "S time v1..vn cpu_busy cpu_idle [backlog_bytes backlog_pkts
# sent_bytes dropped ce_mark]". It runs at normal priority and reads tc's
# answers in blocks: the bash loop it replaced (byte-wise reads, SCHED_FIFO)
# took so much of the guest's CPU from the switch's softirq work that an
# 8 -> 1 incast lost a sixth of its goodput (96 -> 80 Mbit/s).
# bench_samp_stop: samples relative to the first one in BENCH_SAMP_JSON
# ([[t_s, v1, ..., busy, idle, ...], ...]) and the first sample's
# EPOCHREALTIME in BENCH_SAMP_T0.
BENCH_SAMP_PID='' BENCH_SAMP_OUT=/tmp/bench_samp.out BENCH_SAMP_STOP=/tmp/bench_samp.stop
BENCH_SAMP_JSON='[]' BENCH_SAMP_T0=''
bench_samp_start() {
	local ns=$1 iv=$2 qdev=''
	shift 2
	if [ "${1:-}" = -q ]; then qdev=$2; shift 2; fi
	rm -f "$BENCH_SAMP_STOP"
	: >"$BENCH_SAMP_OUT"
	ip netns exec "$ns" python3 "$_BENCH_LIB_DIR/sampler.py" \
		"$iv" "$BENCH_SAMP_STOP" "$qdev" "$@" >"$BENCH_SAMP_OUT" 2>/dev/null &
	BENCH_SAMP_PID=$!
	wait_for 20 grep -q '^S ' "$BENCH_SAMP_OUT"
}
bench_samp_stop() {
	local w t0='' s='' i l
	[ -n "$BENCH_SAMP_PID" ] || return 0
	: >"$BENCH_SAMP_STOP"
	wait "$BENCH_SAMP_PID" 2>/dev/null
	BENCH_SAMP_PID=''
	while read -ra w; do
		[ "${w[0]:-}" = S ] || continue
		[[ ${w[*]} != *x* ]] || continue
		[ -n "$t0" ] || t0=${w[1]}
		l=$(_bench_tdiff "${w[1]}" "$t0")
		for ((i = 2; i < ${#w[@]}; i++)); do l+=",${w[i]}"; done
		s+="${s:+,}[$l]"
	done <"$BENCH_SAMP_OUT"
	# shellcheck disable=SC2034 # for the caller
	BENCH_SAMP_JSON="[$s]" BENCH_SAMP_T0=$t0
}

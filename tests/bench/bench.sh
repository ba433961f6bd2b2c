#!/bin/bash
# make bench, guest side: metaroce and rxe side by side in ONE guest run,
# on the same switch namespace, shaping and tools. Started by scripts/bench
# through scripts/vm-run; writes one JSON record per run to
# $METAROCE_OUT/records.jsonl (tests/bench/report.py turns them into the
# table and the plots on the host).
#
# Scenarios (METAROCE_BENCH, comma-separated, in this order by default):
#   loss   ib_write_bw 64 KiB, 1 QP, for DUR s (perftest -D DUR -f MARGIN);
#          goodput = completed iterations x 64 KiB / (DUR - 2 MARGIN), the
#          wall-clock window perftest counts completions in (its own Gb/s
#          figure is TSC-based, unreliable under TCG). Every run is
#          bounded by DUR, so rxe at 10 % loss takes no longer than any
#          other run. Link shaped both ways; random loss on the data
#          direction, on both directions, and bursty (Gilbert-Elliott)
#          loss on the data direction; lossless runs at the start, in the
#          middle and at the end of each configuration (the ratio's
#          denominator is their mean, their spread shows the noise).
#   eff    unshaped ib_write_bw (CPU-bound): goodput, and guest CPU seconds
#          per GB from /proc/stat sampled in the switch namespace while the
#          traffic runs (report.py takes the steady part of the samples).
#   lat    ib_write_lat / ib_send_lat (2 bytes) unshaped: median
#          (t_typical) and 99th percentile. Client pinned to CPU 0, server
#          to CPU 1; perftest reports TSC cycles (-C), converted with the
#          guest kernel's TSC frequency.
#   recov  64 MiB ib_write_bw (-n 1024) across 100 Mbit/s; once a quarter
#          of it crossed the switch, both directions drop everything for
#          50 ms. Switch port bytes sampled every 10 ms give the completion
#          time and the longest delivery stall; runs without the outage
#          are the baseline.
#
# Queue: each shaped direction is netem (loss) with a tbf child (rate and
# queue). rxe has no congestion control and keeps up to 128 packets
# (RXE_MAX_UNACKED_PSNS) in flight: a queue shorter than that overflows at
# 0 % loss and the benchmark would measure rxe's self-inflicted drops, not
# the random loss. The queue holds METAROCE_BENCH_QUEUE_PKTS (default 192 =
# 1.5 x that window) full-size packets: ~800 KB at RDMA MTU 4096 (64 ms at
# 100 Mbit/s), ~215 KB at RDMA MTU 1024 (35 ms at 50 Mbit/s), far below
# netem's default of 1000 packets. Queue overflow (tbf drops) is recorded
# apart from the random loss.
#
# Environment (only METAROCE_* / MRC_* reach the guest):
#   METAROCE_BENCH             scenarios (default loss,eff,lat,recov)
#   METAROCE_BENCH_QUICK=1     fewer loss points and repetitions, shorter runs
#   METAROCE_BENCH_PROVIDERS   default metaroce,rxe
#   METAROCE_BENCH_CONFIGS     loss configurations MTU:MBIT (default
#                              9000:100,1500:50; quick 9000:100)
#   METAROCE_BENCH_LOSS        loss points in % (default 0.1,1,5,10; quick
#                              1,10); METAROCE_BENCH_LOSS_BOTH likewise
#                              for both directions (quick 1); set but
#                              empty: no such points
#   METAROCE_BENCH_GEMODEL     bursty loss "P,R" (netem loss gemodel P% R%;
#                              default 0.2,20: ~1 % loss in bursts of ~5)
#   METAROCE_BENCH_QUEUE_PKTS  queue size, see above
#   METAROCE_BENCH_LAT_PIN=0   latency tools not pinned to CPUs
#   MRC_PARAMS                 rdma_metaroce module parameters (modprobe)
set -uo pipefail
BENCH_DIR=$(cd "${BASH_SOURCE[0]%/*}" && pwd -P)
# shellcheck source=tests/lib/guest.sh
. "$BENCH_DIR/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "$BENCH_DIR/../lib/rc.sh"
# shellcheck source=tests/bench/lib.sh
. "$BENCH_DIR/lib.sh"
trap topo_cleanup EXIT

QUICK=${METAROCE_BENCH_QUICK:-0}
[ "$QUICK" = 1 ] || QUICK=0
SCENARIOS=${METAROCE_BENCH:-loss,eff,lat,recov}
IFS=, read -ra PROVS <<<"${METAROCE_BENCH_PROVIDERS:-metaroce,rxe}"
QPKTS=${METAROCE_BENCH_QUEUE_PKTS:-192}
if [ "$QUICK" = 1 ]; then
	DUR=7 MARGIN=1 REPS=1 LAT_REPS=1 LAT_N=500 RECOV_MB=16
	CONFIGS=${METAROCE_BENCH_CONFIGS:-9000:100}
	LOSS=${METAROCE_BENCH_LOSS-1,10} LOSS_BOTH=${METAROCE_BENCH_LOSS_BOTH-1}
else
	# latency runs are short and the noisiest: more of them
	DUR=12 MARGIN=2 REPS=3 LAT_REPS=5 LAT_N=2000 RECOV_MB=64
	CONFIGS=${METAROCE_BENCH_CONFIGS:-9000:100,1500:50}
	LOSS=${METAROCE_BENCH_LOSS-0.1,1,5,10} LOSS_BOTH=${METAROCE_BENCH_LOSS_BOTH-$LOSS}
fi
GEMODEL=${METAROCE_BENCH_GEMODEL:-0.2,20}
LAT_PIN=--pin
[ "${METAROCE_BENCH_LAT_PIN:-1}" = 1 ] || LAT_PIN=''

WINDOW=$((DUR - 2 * MARGIN))
SIZE=65536
TSC_MHZ=''

say() { printf '\n== %s (%s)\n' "$*" "$(printf '%(%T)T' -1)"; }

# elapsed seconds since an EPOCHREALTIME value
since() { _bench_tdiff "$EPOCHREALTIME" "$1"; }

# Providers in alternating order from one measurement point to the next,
# so that a drift of the host's load hits both alike.
# Sets ORDER (not a subshell: the flip must persist).
ORDER_FLIP=0 ORDER=()
prov_order() {
	local i
	ORDER_FLIP=$((1 - ORDER_FLIP)) ORDER=()
	for ((i = 0; i < ${#PROVS[@]}; i++)); do
		if [ "$ORDER_FLIP" = 1 ]; then ORDER+=("${PROVS[i]}"); else ORDER=("${PROVS[i]}" "${ORDER[@]}"); fi
	done
}

# Mbit/s with 3 decimals from iterations of SIZE bytes in WIN seconds
mbps() { local m=$(($1 * SIZE * 8 / $2 / 1000)); printf '%d.%03d' $((m / 1000)) $((m % 1000)); }

# perf_try LOG TIMEOUT PERFTEST-ARGS...: bench_perf, once more if no result
# line came back (under a loaded host a run occasionally fails at start-up;
# a capped run, exit 124, is not repeated). Runs $PRE_HOOK / $POST_HOOK
# around every attempt. Sets P_RC P_LINE P_WALL P_TRIES P_ERR and P_CTRS
# (counter deltas as JSON); keeps the output of failed attempts in
# $METAROCE_OUT/failed/.
PRE_HOOK='' POST_HOOK='' FAILN=0
P_RC=0 P_LINE='' P_WALL=0 P_TRIES=0 P_ERR='' P_CTRS='{}'
perf_try() {
	local log=$1 to=$2 t0 keep
	shift 2
	# shellcheck disable=SC2034 # filled through namerefs
	local -A c0 c1
	P_TRIES=0 P_ERR=''
	while [ "$P_TRIES" -lt 2 ]; do
		P_TRIES=$((P_TRIES + 1))
		bench_snap c0
		[ -z "$PRE_HOOK" ] || "$PRE_HOOK"
		t0=$EPOCHREALTIME P_RC=0
		bench_perf "$log" "$to" "$@" || P_RC=$?
		P_WALL=$(since "$t0")
		[ -z "$POST_HOOK" ] || "$POST_HOOK"
		bench_snap c1
		P_CTRS=$(bench_cdelta c0 c1)
		P_LINE=$(bench_perf_line "$log.cli") && return 0
		FAILN=$((FAILN + 1))
		keep=${METAROCE_OUT:-/tmp}/failed/$FAILN-$B_PROV
		mkdir -p "${keep%/*}"
		cp "$log.cli" "$keep.cli" 2>/dev/null
		cp "$log.srv" "$keep.srv" 2>/dev/null
		P_ERR+="${P_ERR:+; }attempt $P_TRIES exit $P_RC: $(grep -h -i -E 'error|fail|couldn|unable|exceed|timeout' "$log.cli" "$log.srv" 2>/dev/null | head -n 4 | tr -s '\n\t' '  ')(failed/${keep##*/}.*)"
		echo "  $B_PROV: attempt $P_TRIES failed (exit $P_RC), output in failed/${keep##*/}.cli/.srv"
		[ "$P_RC" != 124 ] || break
	done
	P_LINE=''
	return 1
}

# common JSON fields of a perftest run
run_fields() {
	printf '"rc":%s,"wall_s":%s,"attempts":%s,"counters":%s' "$P_RC" "$P_WALL" "$P_TRIES" "$P_CTRS"
	[ -z "$P_ERR" ] || printf ',"error":%s' "$(jstr "$P_ERR")"
}

# --- guest setup ------------------------------------------------------------------
setup() {
	local f v params=''
	# shellcheck disable=SC2086 # MRC_PARAMS holds words
	modprobe rdma_metaroce ${MRC_PARAMS:-} || { echo "bench: modprobe rdma_metaroce ${MRC_PARAMS:-} failed" >&2; return 1; }
	for f in /sys/module/rdma_metaroce/parameters/*; do
		read -r v <"$f" 2>/dev/null || continue
		params+="${params:+,}$(jstr "${f##*/}"):$(jstr "$v")"
	done
	while read -r f; do
		[[ $f == "cpu MHz"* ]] && { TSC_MHZ=${f##*: }; break; }
	done </proc/cpuinfo
	local ncpu=0 kver perf
	for f in /sys/devices/system/cpu/cpu[0-9]*; do ncpu=$((ncpu + 1)); done
	kver=$(</proc/sys/kernel/osrelease)
	perf=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)
	bench_record "\"type\":\"meta\",\"guest_kernel\":$(jstr "$kver"),\"guest_cpus\":$ncpu,\"tsc_mhz\":$(jnum "$TSC_MHZ"),\"perftest\":$(jstr "$perf"),\"quick\":$QUICK,\"scenarios\":$(jstr "$SCENARIOS"),\"providers\":$(jstr "${PROVS[*]}"),\"queue_pkts\":$QPKTS,\"dur_s\":$DUR,\"margin_s\":$MARGIN,\"window_s\":$WINDOW,\"mrc_params\":$(jstr "${MRC_PARAMS:-}"),\"module_params\":{$params}"
	echo "bench: guest $kver, $ncpu CPUs, TSC $TSC_MHZ MHz, perftest $perf, module parameters: ${MRC_PARAMS:-defaults}"
}

# queue bytes: QPKTS full-size packets (RDMA MTU payload + headers)
qbytes() {
	local rdma_mtu=1024
	[ "$BENCH_MTU" -lt 4200 ] || rdma_mtu=4096
	echo $((QPKTS * (rdma_mtu + 104)))
}

# --- scenario 1: goodput under loss ---------------------------------------------------
loss_pre() { bench_poll_start "$B_DATA_PORT" 200000 0 0; }
# loss_point MTU RATE DIR MODEL PCT REP DATA-NETEM ACK-NETEM
loss_point() {
	local mtu=$1 rate=$2 dir=$3 model=$4 pct=$5 rep=$6 dnet=$7 anet=$8 prov iters gp qb
	qb=$(qbytes)
	prov_order
	for prov in "${ORDER[@]}"; do
		bench_prov "$prov" || continue
		bench_shape "$rate" "$qb" "$dnet" "$anet"
		# guest CPU and wire bytes alongside: is the link, not the CPU, the bottleneck?
		PRE_HOOK=loss_pre POST_HOOK=bench_poll_stop
		perf_try /tmp/bench_bw $((DUR + 90)) ib_write_bw -F -s $SIZE -Q 1 -D $DUR -f $MARGIN
		PRE_HOOK='' POST_HOOK=''
		iters='' gp=''
		read -r _ iters _ <<<"$P_LINE"
		[[ $iters =~ ^[0-9]+$ ]] && gp=$(mbps "$iters" "$WINDOW")
		bench_record "\"scen\":\"loss\",\"prov\":\"$prov\",\"mtu\":$mtu,\"rate_mbit\":$rate,\"dir\":\"$dir\",\"model\":\"$model\",\"loss_pct\":$(jnum "$pct"),\"rep\":$rep,\"size\":$SIZE,\"dur_s\":$DUR,\"margin_s\":$MARGIN,\"window_s\":$WINDOW,\"iters\":$(jnum "$iters"),\"goodput_mbps\":$(jnum "$gp"),\"queue_bytes\":$qb,\"user_hz\":100,\"samples\":$BENCH_POLL_JSON,\"netem_data\":$(jstr "$dnet"),\"netem_ack\":$(jstr "$anet"),\"qdisc\":$(bench_qstats),$(run_fields)"
		printf '  %-8s %8s Mbit/s (%s iterations in %ss, exit %s, %ss)\n' "$prov" "${gp:-FAILED}" "${iters:-?}" "$WINDOW" "$P_RC" "$P_WALL"
	done
}

scen_loss() {
	local cfg mtu rate p rep gp gr gpct nl
	IFS=, read -r gp gr <<<"$GEMODEL"
	gpct=$(awk -v p="$gp" -v r="$gr" 'BEGIN { printf "%.3g", 100 * p / (p + r) }')
	# lossless runs at the start, (full mode) in the middle and at the end:
	# their mean is the ratio's denominator, their spread shows the noise
	nl=3
	[ "$QUICK" = 0 ] || nl=2
	for cfg in ${CONFIGS//,/ }; do
		mtu=${cfg%%:*} rate=${cfg#*:}
		bench_topo "$mtu" || return
		rep=1
		say "loss: MTU $mtu, $rate Mbit/s, lossless (run $rep of $nl)"
		loss_point "$mtu" "$rate" none none 0 $rep - -
		for p in ${LOSS//,/ }; do
			say "loss: MTU $mtu, $rate Mbit/s, $p % random loss on the data direction"
			loss_point "$mtu" "$rate" data random "$p" 1 "loss random $p%" -
		done
		if [ "$nl" = 3 ]; then
			rep=$((rep + 1))
			say "loss: MTU $mtu, $rate Mbit/s, lossless (run $rep of $nl)"
			loss_point "$mtu" "$rate" none none 0 $rep - -
		fi
		for p in ${LOSS_BOTH//,/ }; do
			say "loss: MTU $mtu, $rate Mbit/s, $p % random loss on both directions"
			loss_point "$mtu" "$rate" both random "$p" 1 "loss random $p%" "loss random $p%"
		done
		say "loss: MTU $mtu, $rate Mbit/s, bursty loss (gemodel p $gp % r $gr %, mean $gpct %) on the data direction"
		loss_point "$mtu" "$rate" data gemodel "$gpct" 1 "loss gemodel $gp% $gr%" -
		rep=$((rep + 1))
		say "loss: MTU $mtu, $rate Mbit/s, lossless (run $rep of $nl)"
		loss_point "$mtu" "$rate" none none 0 $rep - -
	done
}

# --- scenario 2: efficiency (unshaped) ---------------------------------------------------
eff_pre() { bench_poll_start "$B_DATA_PORT" 100000 0 0; }
scen_eff() {
	local rep prov iters gp
	bench_topo 9000 || return
	for ((rep = 1; rep <= REPS; rep++)); do
		say "eff: unshaped ib_write_bw, MTU 9000 (run $rep of $REPS)"
		prov_order
		for prov in "${ORDER[@]}"; do
			bench_prov "$prov" || continue
			bench_shape 0 0 - -
			PRE_HOOK=eff_pre POST_HOOK=bench_poll_stop
			perf_try /tmp/bench_eff $((DUR + 90)) ib_write_bw -F -s $SIZE -Q 1 -D $DUR -f $MARGIN
			PRE_HOOK='' POST_HOOK=''
			iters='' gp=''
			read -r _ iters _ <<<"$P_LINE"
			[[ $iters =~ ^[0-9]+$ ]] && gp=$(mbps "$iters" "$WINDOW")
			bench_record "\"scen\":\"eff\",\"prov\":\"$prov\",\"mtu\":9000,\"rep\":$rep,\"size\":$SIZE,\"dur_s\":$DUR,\"margin_s\":$MARGIN,\"window_s\":$WINDOW,\"iters\":$(jnum "$iters"),\"goodput_mbps\":$(jnum "$gp"),\"user_hz\":100,\"samples\":$BENCH_POLL_JSON,$(run_fields)"
			printf '  %-8s %8s Mbit/s (%s iterations in %ss, exit %s)\n' "$prov" "${gp:-FAILED}" "${iters:-?}" "$WINDOW" "$P_RC"
		done
	done
}

# --- scenario 3: latency ---------------------------------------------------------------------
scen_lat() {
	local tool rep prov f
	bench_topo 9000 || return
	for tool in ib_write_lat ib_send_lat; do
		for ((rep = 1; rep <= LAT_REPS; rep++)); do
			say "lat: $tool, 2 bytes, $LAT_N iterations (run $rep of $LAT_REPS)"
			prov_order
			for prov in "${ORDER[@]}"; do
				bench_prov "$prov" || continue
				bench_shape 0 0 - -
				perf_try /tmp/bench_lat 120 $LAT_PIN "$tool" -F -C -n "$LAT_N"
				read -ra f <<<"$P_LINE"
				# bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9 (cycles)
				bench_record "\"scen\":\"lat\",\"prov\":\"$prov\",\"tool\":\"$tool\",\"rep\":$rep,\"size\":2,\"iters\":$(jnum "${f[1]:-}"),\"unit\":\"cycles\",\"tsc_mhz\":$(jnum "$TSC_MHZ"),\"min\":$(jnum "${f[2]:-}"),\"max\":$(jnum "${f[3]:-}"),\"median\":$(jnum "${f[4]:-}"),\"avg\":$(jnum "${f[5]:-}"),\"p99\":$(jnum "${f[7]:-}"),\"p999\":$(jnum "${f[8]:-}"),$(run_fields)"
				printf '  %-8s median %s p99 %s us (exit %s)\n' "$prov" "$(cyc_us "${f[4]:-}")" "$(cyc_us "${f[7]:-}")" "$P_RC"
			done
		done
	done
}

# cycles -> microseconds, for the progress lines only
cyc_us() {
	[[ ${1:-} =~ ^[0-9]+ ]] && [ -n "$TSC_MHZ" ] || { echo '?'; return; }
	echo $((${BASH_REMATCH[0]} / ${TSC_MHZ%%.*}))
}

# --- scenario 4: recovery after an outage --------------------------------------------------
# the poller takes both directions down once TRIG bytes crossed (R_OUT ms)
R_OUT=0 R_TRIG=0
recov_pre() {
	bench_poll_start "$B_DATA_PORT" 10000 "$([ "$R_OUT" = 0 ] && echo 0 || echo "$R_TRIG")" "$R_OUT" "$B_DATA_PORT" "$B_ACK_PORT"
}
scen_recov() {
	local rep prov n cap qb
	n=$((RECOV_MB * 1048576 / SIZE)) R_TRIG=$((RECOV_MB * 1048576 / 4))
	# 64 MiB takes ~6 s at 100 Mbit/s; rxe may crawl after the outage
	cap=$((RECOV_MB * 2 + 60))
	bench_topo 9000 || return
	qb=$(qbytes)
	for ((rep = 1; rep <= REPS; rep++)); do
		say "recov: $RECOV_MB MiB across 100 Mbit/s, with and without a 50 ms outage (run $rep of $REPS)"
		prov_order
		for prov in "${ORDER[@]}"; do
			bench_prov "$prov" || continue
			for R_OUT in 0 50; do
				bench_shape 100 "$qb" - -
				PRE_HOOK=recov_pre POST_HOOK=bench_poll_stop
				perf_try /tmp/bench_recov "$cap" ib_write_bw -F -s $SIZE -n "$n"
				PRE_HOOK='' POST_HOOK=''
				bench_record "\"scen\":\"recov\",\"prov\":\"$prov\",\"rep\":$rep,\"outage_ms\":$R_OUT,\"mtu\":9000,\"rate_mbit\":100,\"bytes\":$((n * SIZE)),\"iters\":$n,\"capped\":$([ "$P_RC" = 124 ] && echo true || echo false),\"cap_s\":$cap,\"trigger_bytes\":$R_TRIG,\"events\":$BENCH_POLL_EVENTS,\"samples\":$BENCH_POLL_JSON,\"qdisc\":$(bench_qstats),$(run_fields)"
				printf '  %-8s outage %2s ms: exit %s, %ss wall\n' "$prov" "$R_OUT" "$P_RC" "$P_WALL"
			done
		done
	done
}

# --- main --------------------------------------------------------------------------------------
T_START=$EPOCHREALTIME
: >"$BENCH_RECORDS"
rc_dmesg_mark
setup || exit 1
status=0
for s in ${SCENARIOS//,/ }; do
	if ! declare -F "scen_$s" >/dev/null; then
		echo "bench: unknown scenario '$s'" >&2
		status=2
		continue
	fi
	ts=$EPOCHREALTIME
	"scen_$s" || { echo "bench: scenario $s failed" >&2; status=1; }
	echo "bench: scenario $s took $(since "$ts")s"
	bench_record "\"type\":\"scenario_time\",\"scen\":\"$s\",\"seconds\":$(since "$ts")"
done
bench_record "\"type\":\"end\",\"seconds\":$(since "$T_START"),\"kernel_warnings\":$(jstr "$(rc_dmesg_bad)")"
echo "bench: done in $(since "$T_START")s, $(wc -l <"$BENCH_RECORDS") records in $BENCH_RECORDS"
exit $status

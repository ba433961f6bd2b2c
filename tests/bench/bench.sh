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
#   ops    READ, atomics and SEND under loss (issue 50): ib_read_bw and
#          ib_send_bw 64 KiB, ib_atomic_bw (fetch-and-add, 8 bytes), 1
#          QP, perftest -D DUR -f MARGIN as in loss; rate = completed
#          iterations / (DUR - 2 MARGIN), goodput for READ and SEND =
#          rate x 64 KiB. One configuration by default (MTU 9000, 100
#          Mbit/s), shaped as in loss, the providers alternating per
#          point; per tool: lossless at the start, (full mode) in the
#          middle and at the end (their mean is the denominator), random
#          loss on the data direction and on both directions. The data direction is the one the
#          payload takes: requester (A, perftest client) -> responder (B)
#          for SEND and for atomics (whose responses carry 8 bytes), but
#          responder -> requester for READ: for ib_read_bw the netem of
#          the switch port towards A (pa / rpa) drops, and that port's
#          bytes and counters are the record's "data" (data_port). Then
#          ib_read_lat (2 bytes) and ib_atomic_lat, pinned as in lat,
#          unshaped and lossless, and at 1 % random loss on both
#          directions shaped as in loss: median and 99th percentile.
#          perftest's default outstanding READ/atomic depth is kept (-o:
#          the device's max_qp_rd_atom, 128 for both metaroce and rxe;
#          16 for metaroce before 2026-12-06).
#          Quick mode: 1 and 10 % only, one latency run per point.
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
#   mp     multipath (issue 6): ib_write_bw 64 KiB, 1 QP, across the ECMP
#          fabric of tests/vm/40-multipath.sh (topo_ecmp: 4 x 25 Mbit/s,
#          L4 hash, QPKTS packets of queue per link); rxe attached to the
#          same routers (ecmp_rxe_attach). Three runs per provider: clean;
#          the busiest link so far fails (METAROCE_BENCH_MP_FAIL: blackhole
#          = 100 % loss both ways, or down = both ends down, which the
#          routers see) a quarter of MP_DUR into a 1.5 x MP_DUR transfer
#          and stays dead; the busiest link at MP_LOSS % loss (both ways)
#          from 0.5 s on. A sampler in the receiving router reads every
#          link's bytes and the bytes delivered to the receiver every 50 ms
#          (goodput timeline, time to recover >= 70 % of the aggregate,
#          per-link shares). The failure run is not repeated when it fails:
#          rxe's fate on a dead link is a result.
#   incast congestion control (issue 7): N = 2, 4, 8 senders, each one QP
#          streaming 64 KiB WRITEs (mrc_verify, every byte checked) into
#          one receiver through one 100 Mbit/s switch port that marks CE
#          above 0.5 ms of queueing, about one BDP (topo_incast, as
#          tests/vm/45-cc.sh, which marks above 2 ms); rxe's hosts hang
#          off the same bridge (incast_rxe_attach) behind an identical
#          port. Per N: metaroce (full), metaroce with the sender half off
#          (cc=N cc_ecn=N), metaroce with the receiver credits off
#          (credits=N; module parameters set through sysfs between runs),
#          rxe. Aggregate and per-flow goodput (Jain's index), the
#          bottleneck's backlog every 50 ms from `tc -s qdisc` (p50/p99 in
#          the steady part; the report compares p99 with 2 x BDP from the
#          measured base RTT), drops and CE marks. The clients sleep on
#          completion events: the bed's nine hosts share two vCPUs, and
#          busy-polling ib_write_bw clients (METAROCE_BENCH_INCAST_TOOL=
#          perftest, at nice 10) keep them 100 % busy, so that the guest's
#          CPU rather than the port limits the flows (measured: 0.72-0.81
#          of the link for metaroce against 0.94-0.95 with the event-driven
#          clients, same boot). Goodput at 1 % loss, uncongested: see the
#          loss scenario.
#   step   (opt-in for now) collective step time (issue 44):
#          tests/tools/mrc_step, a verified ring all-reduce of STEP_SIZE
#          per step over 4 ranks on 4 hosts, two behind each router of
#          mp's ECMP fabric (4 x STEP_MBIT links), the ring crossing the
#          fabric on every hop; metaroce and rxe (four init_net ends on
#          the same routers). Per condition and provider one run of
#          STEP_STEPS steps: lossless; 0.1 and 1 % random loss and bursty
#          (METAROCE_BENCH_GEMODEL) loss on every host's incoming router
#          port; the busiest link blackholed (both ways) a quarter of the
#          provider's lossless run in; 8 mrc_verify WRITE streams from the
#          other three hosts into rank 0's host throughout (8 -> 1 incast
#          background: 4 hosts have 3 senders, not 8). Records the per-step
#          times (p50/p99/max, CDF in report.py).
#   nvme   NVMe over Fabrics (issue 45): an nvmet-rdma target (file
#          namespace in /dev/shm) and the kernel's nvme-rdma host in
#          init_net on the rxe topology's wires, one provider's devices at
#          a time; fio 128 KiB sequential writes, then reads (libaio,
#          O_DIRECT, iodepth 16) for NVME_DUR s each, shaped to 100
#          Mbit/s as in loss: lossless and at NVME_LOSS % random loss on
#          both directions. Bandwidth and p99 completion latency.
#   perf   (opt-in) ib_write_lat / ib_send_lat as in lat (or the tools
#          of METAROCE_BENCH_PERF_TOOLS), the client
#          under `perf record -a -e cpu-clock` (the guest has no PMU; the
#          software clock samples both vCPUs, connection set-up
#          included): the symbols with the largest share of all
#          samples, kernel and user.
#
# Queue: each shaped direction is netem (loss) with a tbf child (rate and
# queue). rxe has no congestion control and keeps up to 128 packets
# (RXE_MAX_UNACKED_PSNS) in flight: a queue shorter than that overflows at
# 0 % loss and the benchmark would measure rxe's self-inflicted drops, not
# the random loss. The queue holds METAROCE_BENCH_QUEUE_PKTS (default 192 =
# 1.5 x that window) full-size packets: ~800 KB at RDMA MTU 4096 (64 ms at
# 100 Mbit/s), ~215 KB at RDMA MTU 1024 (35 ms at 50 Mbit/s), far below
# netem's default of 1000 packets. Queue overflow (tbf drops) is recorded
# apart from the random loss. tbf's token bucket is 64 KiB (bench_shape;
# runs before 2026-12-02 had 4 frames, at least 16 KiB, and on a busy
# guest could lose port time: wire 95.5 Mbit/s in a 0.1 % run with 6 spurious
# RTOs). With 64 KiB metaroce's loss runs put 99.4-100 % of the rate on
# the wire, except bursty loss at MTU 9000 (89 %, 28 RTOs; with tmo_steps,
# in the bench of faf0fcb, 12 RTOs and 0.993 of lossless).
#
# Environment (only METAROCE_* / MRC_* reach the guest):
#   METAROCE_BENCH             scenarios (default loss,ops,eff,lat,recov,mp,
#                              incast,nvme)
#   METAROCE_BENCH_QUICK=1     fewer loss points and repetitions, shorter runs
#   METAROCE_BENCH_PROVIDERS   default metaroce,rxe
#   METAROCE_BENCH_CONFIGS     loss configurations MTU:MBIT (default
#                              9000:100,1500:50; quick 9000:100)
#   METAROCE_BENCH_LOSS        loss points in % (default 0.1,1,5,10; quick
#                              1,10); METAROCE_BENCH_LOSS_BOTH likewise
#                              for both directions (quick 1); set but
#                              empty: no such points
#   METAROCE_BENCH_OPS_CONFIGS  ops configurations MTU:MBIT (default
#                              9000:100, also in quick mode)
#   METAROCE_BENCH_OPS_LOSS    ops loss points in % (default 0.1,1,5,10;
#                              quick 1,10); METAROCE_BENCH_OPS_LOSS_BOTH
#                              likewise for both directions (default: the
#                              same points)
#   METAROCE_BENCH_OPS_TOOLS   default ib_read_bw,ib_atomic_bw,ib_send_bw
#                              (empty: none, only the latency tools)
#   METAROCE_BENCH_OPS_LAT_TOOLS  ops latency tools (default
#                              ib_read_lat,ib_atomic_lat; empty: none)
#   METAROCE_BENCH_OPS_PCAP=1  ops bandwidth runs of metaroce capture the
#                              first 128 bytes of every metaroce packet at
#                              both hosts (what each sent before the loss,
#                              what it received after) into
#                              $METAROCE_OUT/pcap/TOOL-DIR-PCT-REP-{a,b}.pcap
#   METAROCE_BENCH_GEMODEL     bursty loss "P,R" (netem loss gemodel P% R%;
#                              default 0.2,20: ~1 % loss in bursts of ~5)
#   METAROCE_BENCH_QUEUE_PKTS  queue size, see above
#   METAROCE_BENCH_LAT_PIN=0   latency tools not pinned to CPUs
#   METAROCE_BENCH_LAT_N       iterations of each latency run (default 2000,
#                              quick 500; lat, ops and perf)
#   METAROCE_BENCH_LAT_REPS    runs per latency tool and provider (lat:
#                              default 5, quick 1); _OPS_LAT_REPS for the
#                              ops scenario's latency tools (default: as
#                              many as lat)
#   METAROCE_BENCH_MP_DUR      mp run length in s (default 14, quick 8; the
#                              failure run lasts 1.5 x; 2 repetitions, quick 1)
#   METAROCE_BENCH_MP_FAIL     blackhole (default) or down
#   METAROCE_BENCH_MP_LOSS     loss of the lossy link in % (default 5)
#   METAROCE_BENCH_INCAST_DUR  incast run length in s (default 20, quick 12;
#                              a third at each end is left out)
#   METAROCE_BENCH_INCAST_N    sender counts (default 2,4,8)
#   METAROCE_BENCH_INCAST_IVAL_US  the bottleneck's sampling interval in us
#                              (default 50000)
#   METAROCE_BENCH_INCAST_CE_US  the port's CE threshold in us (default 500:
#                              about one BDP, below the 2 x BDP target; runs
#                              before 2026-11-30 used 2000)
#   METAROCE_BENCH_INCAST_BURST  token bucket of the bottleneck's htb in bytes
#                              (default 65536: 5.2 ms at 100 Mbit/s; see
#                              scenario 6; runs before 2026-12-02 used two
#                              frames, 18 KB)
#   METAROCE_BENCH_INCAST_VARGS  extra mrc_verify options for the incast
#                              flows, e.g. "-m 2048" (path MTU)
#   METAROCE_BENCH_INCAST_VARIANTS  subset of full,nocc,nocred,rxe (default
#                              all; rxe also needs it in the providers)
#   METAROCE_BENCH_INCAST_NICE perftest clients' nice level (default 10)
#   METAROCE_BENCH_INCAST_PIN=1  perftest client i pinned to CPU i % 2
#   METAROCE_BENCH_INCAST_TOOL verify (default: mrc_verify WRITE streams
#                              whose clients sleep on completion events) or
#                              perftest (ib_write_bw, busy-polling clients)
#   METAROCE_BENCH_INCAST_VSIZE  message size of the verify streams (64K)
#   METAROCE_BENCH_INCAST_CTRS  comma-separated hw_counters of metaroce's
#                              receiver (e.g. credit_pool,credit_hold_timeouts)
#                              sampled with the queue, as columns ctr_NAME of
#                              the incast records (off by default: each costs
#                              the guest a sysfs read per sample)
#   METAROCE_BENCH_STEP_STEPS  step scenario: steps per run (default 500,
#                              quick 30); _SIZE bytes per all-reduce (8M,
#                              quick 1M); _SLICE bytes per transfer (512K);
#                              _MBIT rate of each ECMP link (100); _CONDS
#                              conditions (lossless,loss0.1,loss1,bursty,
#                              fail,incast); _VERIFY check every K steps
#                              (1); _WARMUP untimed steps first (2);
#                              _QP_TIMEOUT QP timeout exponent (20,
#                              NCCL's); _MAX_S a run ends after the step
#                              that passes it (1800, quick 120); _TIMEOUT
#                              per run in s (300 + 20/step)
#   METAROCE_BENCH_NVME_DUR    nvme: seconds per fio run (default 15, quick 8)
#   METAROCE_BENCH_NVME_LOSS   nvme: the lossy condition's loss in % (1)
#   METAROCE_BENCH_PROF_TOP / _DUR  prof scenario: functions kept (40),
#                              ib_write_bw seconds (3)
#   METAROCE_BENCH_PERF_HZ / _TOP  perf scenario: sampling rate (2000 Hz),
#                              symbols kept (40)
#   METAROCE_BENCH_PERF_TOOLS  perf scenario: tools sampled (ib_write_lat,
#                              ib_send_lat; also ib_read_lat, ib_atomic_lat)
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
SCENARIOS=${METAROCE_BENCH:-loss,ops,eff,lat,recov,mp,incast,nvme}
IFS=, read -ra PROVS <<<"${METAROCE_BENCH_PROVIDERS:-metaroce,rxe}"
QPKTS=${METAROCE_BENCH_QUEUE_PKTS:-192}
if [ "$QUICK" = 1 ]; then
	DUR=7 MARGIN=1 REPS=1 LAT_REPS=1 LAT_N=500 RECOV_MB=16
	CONFIGS=${METAROCE_BENCH_CONFIGS:-9000:100}
	LOSS=${METAROCE_BENCH_LOSS-1,10} LOSS_BOTH=${METAROCE_BENCH_LOSS_BOTH-1}
	OPS_LOSS=${METAROCE_BENCH_OPS_LOSS-1,10}
else
	# latency runs are short and the noisiest: more of them
	DUR=12 MARGIN=2 REPS=3 LAT_REPS=5 LAT_N=2000 RECOV_MB=64
	CONFIGS=${METAROCE_BENCH_CONFIGS:-9000:100,1500:50}
	LOSS=${METAROCE_BENCH_LOSS-0.1,1,5,10} LOSS_BOTH=${METAROCE_BENCH_LOSS_BOTH-$LOSS}
	OPS_LOSS=${METAROCE_BENCH_OPS_LOSS-0.1,1,5,10}
fi
LAT_REPS=${METAROCE_BENCH_LAT_REPS:-$LAT_REPS}
LAT_N=${METAROCE_BENCH_LAT_N:-$LAT_N}
OPS_LAT_REPS=${METAROCE_BENCH_OPS_LAT_REPS:-$LAT_REPS}
OPS_CONFIGS=${METAROCE_BENCH_OPS_CONFIGS:-9000:100}
OPS_LOSS_BOTH=${METAROCE_BENCH_OPS_LOSS_BOTH-$OPS_LOSS}
OPS_TOOLS=${METAROCE_BENCH_OPS_TOOLS-ib_read_bw,ib_atomic_bw,ib_send_bw}
OPS_LAT_TOOLS=${METAROCE_BENCH_OPS_LAT_TOOLS-ib_read_lat,ib_atomic_lat}
OPS_PCAP=${METAROCE_BENCH_OPS_PCAP:-0}
OPS_LAT_N=$LAT_N
if [ "$QUICK" = 1 ]; then
	MP_DUR=${METAROCE_BENCH_MP_DUR:-8} MP_MARGIN=1 MP_REPS=1
	INC_DUR=${METAROCE_BENCH_INCAST_DUR:-12}
else
	MP_DUR=${METAROCE_BENCH_MP_DUR:-14} MP_MARGIN=2 MP_REPS=2
	INC_DUR=${METAROCE_BENCH_INCAST_DUR:-20}
fi
MP_FAIL=${METAROCE_BENCH_MP_FAIL:-blackhole} MP_LOSS=${METAROCE_BENCH_MP_LOSS:-5} MP_IVAL_US=50000
# the incast pairs connect one after the other on a busy guest (seconds
# apart): a third of the run at each end is left out, so that every flow's
# window sees all flows running (report.py checks the start spread)
INC_MARGIN=$((INC_DUR / 3)) INC_NS=${METAROCE_BENCH_INCAST_N:-2,4,8}
INC_IVAL_US=${METAROCE_BENCH_INCAST_IVAL_US:-50000}
INC_VARIANTS=${METAROCE_BENCH_INCAST_VARIANTS:-full,nocc,nocred,rxe}
INC_CE_US=${METAROCE_BENCH_INCAST_CE_US:-500}
INC_BURST=${METAROCE_BENCH_INCAST_BURST:-65536}
INC_NICE=${METAROCE_BENCH_INCAST_NICE:-10}
INC_TOOL=${METAROCE_BENCH_INCAST_TOOL:-verify}
INC_WIN=$((INC_DUR - 2 * INC_MARGIN))
GEMODEL=${METAROCE_BENCH_GEMODEL:-0.2,20}
LAT_PIN=--pin
[ "${METAROCE_BENCH_LAT_PIN:-1}" = 1 ] || LAT_PIN=''

WINDOW=$((DUR - 2 * MARGIN))
SIZE=65536
INC_VSIZE=${METAROCE_BENCH_INCAST_VSIZE:-$SIZE}
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
# a capped run, exit 124, is not repeated; PERF_MAX_TRIES=1: never). Runs $PRE_HOOK / $POST_HOOK
# around every attempt. Sets P_RC P_LINE P_WALL P_TRIES P_ERR and P_CTRS
# (counter deltas as JSON); keeps the output of failed attempts in
# $METAROCE_OUT/failed/.
PRE_HOOK='' POST_HOOK='' FAILN=0 PERF_MAX_TRIES=2
P_RC=0 P_LINE='' P_WALL=0 P_TRIES=0 P_ERR='' P_CTRS='{}'
perf_try() {
	local log=$1 to=$2 t0 keep
	shift 2
	# shellcheck disable=SC2034 # filled through namerefs
	local -A c0 c1
	P_TRIES=0 P_ERR=''
	while [ "$P_TRIES" -lt "$PERF_MAX_TRIES" ]; do
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
	local ncpu=0 kver perf clk=''
	for f in /sys/devices/system/cpu/cpu[0-9]*; do ncpu=$((ncpu + 1)); done
	read -r clk </sys/devices/system/clocksource/clocksource0/current_clocksource
	kver=$(</proc/sys/kernel/osrelease)
	perf=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)
	bench_record "\"type\":\"meta\",\"guest_kernel\":$(jstr "$kver"),\"guest_cpus\":$ncpu,\"tsc_mhz\":$(jnum "$TSC_MHZ"),\"clocksource\":$(jstr "$clk"),\"perftest\":$(jstr "$perf"),\"quick\":$QUICK,\"scenarios\":$(jstr "$SCENARIOS"),\"providers\":$(jstr "${PROVS[*]}"),\"queue_pkts\":$QPKTS,\"dur_s\":$DUR,\"margin_s\":$MARGIN,\"window_s\":$WINDOW,\"mrc_params\":$(jstr "${MRC_PARAMS:-}"),\"module_params\":{$params}"
	echo "bench: guest $kver, $ncpu CPUs, TSC $TSC_MHZ MHz, clocksource $clk, perftest $perf, module parameters: ${MRC_PARAMS:-defaults}"
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

# --- scenario 1b: READ, atomics and SEND under loss (issue 50) -------------------------------
# ops_ports: the data of READ flows responder (B, the perftest server) ->
# requester (A, the client), so for ib_read_bw the switch port towards A
# carries the data: swap the selected provider's ports, and bench_shape,
# bench_qstats and the poller all see the responses as "data".
ops_ports() {
	[ "$1" = ib_read_bw ] || return 0
	local p=$B_DATA_PORT
	B_DATA_PORT=$B_ACK_PORT B_ACK_PORT=$p
}

# ops/s with 1 decimal from iterations in WIN seconds
ops_rate() { local r=$(($1 * 10 / $2)); printf '%d.%d' $((r / 10)) $((r % 10)); }

# ops_pcap start|stop PROV NAME: METAROCE_BENCH_OPS_PCAP's captures; in
# /dev/shm while they run (the shared results folder is slow). TERM stops
# them: a background job ignores SIGINT.
OPS_PCAP_PIDS=()
ops_pcap() {
	local h
	[ "$OPS_PCAP" = 1 ] && [ "$2" = metaroce ] || return 0
	if [ "$1" = start ]; then
		OPS_PCAP_PIDS=()
		for h in a b; do
			# not in_host: $! must be tcpdump (ip netns exec execs it)
			ip netns exec "$([ $h = a ] && echo "$TOPO_A" || echo "$TOPO_B")" \
				tcpdump -i "$TOPO_DEV" -s 128 -U -w "/dev/shm/ops-$h.pcap" \
				udp port 4792 2>/dev/null &
			OPS_PCAP_PIDS+=($!)
		done
		sleep 1 # tcpdump is listening
		return 0
	fi
	kill -TERM "${OPS_PCAP_PIDS[@]}" 2>/dev/null
	wait "${OPS_PCAP_PIDS[@]}" 2>/dev/null
	mkdir -p "$METAROCE_OUT/pcap"
	for h in a b; do mv "/dev/shm/ops-$h.pcap" "$METAROCE_OUT/pcap/$3-$h.pcap"; done
}

# ops_point TOOL MTU RATE DIR PCT REP DATA-NETEM REVERSE-NETEM
ops_point() {
	local tool=$1 mtu=$2 rate=$3 dir=$4 pct=$5 rep=$6 dnet=$7 rnet=$8 prov iters gp ops qb args
	qb=$(qbytes)
	args=(-F -Q 1 -D "$DUR" -f "$MARGIN")
	# atomics are 8 bytes by definition
	[ "$tool" = ib_atomic_bw ] || args+=(-s "$SIZE")
	prov_order
	for prov in "${ORDER[@]}"; do
		bench_prov "$prov" || continue
		ops_ports "$tool"
		bench_shape "$rate" "$qb" "$dnet" "$rnet"
		PRE_HOOK=loss_pre POST_HOOK=bench_poll_stop
		ops_pcap start "$prov"
		perf_try /tmp/bench_ops $((DUR + 90)) "$tool" "${args[@]}"
		ops_pcap stop "$prov" "$tool-$dir-$pct-$rep"
		PRE_HOOK='' POST_HOOK=''
		iters='' gp='' ops=''
		read -r _ iters _ <<<"$P_LINE"
		if [[ $iters =~ ^[0-9]+$ ]]; then
			ops=$(ops_rate "$iters" "$WINDOW")
			[ "$tool" = ib_atomic_bw ] || gp=$(mbps "$iters" "$WINDOW")
		fi
		bench_record "\"scen\":\"ops\",\"tool\":\"$tool\",\"prov\":\"$prov\",\"mtu\":$mtu,\"rate_mbit\":$rate,\"dir\":\"$dir\",\"loss_pct\":$(jnum "$pct"),\"rep\":$rep,\"size\":$([ "$tool" = ib_atomic_bw ] && echo 8 || echo $SIZE),\"dur_s\":$DUR,\"margin_s\":$MARGIN,\"window_s\":$WINDOW,\"iters\":$(jnum "$iters"),\"ops_per_s\":$(jnum "$ops"),\"goodput_mbps\":$(jnum "$gp"),\"data_port\":\"$B_DATA_PORT\",\"queue_bytes\":$qb,\"user_hz\":100,\"samples\":$BENCH_POLL_JSON,\"netem_data\":$(jstr "$dnet"),\"netem_ack\":$(jstr "$rnet"),\"qdisc\":$(bench_qstats),$(run_fields)"
		printf '  %-8s %10s ops/s %8s Mbit/s (%s iterations in %ss, exit %s, %ss)\n' "$prov" "${ops:-FAILED}" "${gp:--}" "${iters:-?}" "$WINDOW" "$P_RC" "$P_WALL"
	done
}

# lat_args TOOL N: LAT_ARGS = perftest's arguments for a latency run of
# TOOL (2 bytes, or an atomic's 8; N iterations; TSC cycles); 1 if the
# bench has no latency run of TOOL
lat_args() {
	LAT_ARGS=(-F -C -n "$2")
	case $1 in
	ib_write_lat | ib_send_lat | ib_atomic_lat) ;;
	ib_read_lat) LAT_ARGS+=(-s 2) ;;
	*) return 1 ;;
	esac
}

# ops_lat TOOL RATE PCT REP: a latency run per provider; PCT 0: unshaped,
# as the lat scenario; else shaped at RATE with PCT % loss both ways
ops_lat() {
	local tool=$1 rate=$2 pct=$3 rep=$4 prov f size=2 net=- dir=none
	lat_args "$tool" "$OPS_LAT_N" || return
	[ "$tool" != ib_atomic_lat ] || size=8
	[ "$pct" = 0 ] || { net="loss random $pct%" dir=both; }
	prov_order
	for prov in "${ORDER[@]}"; do
		bench_prov "$prov" || continue
		if [ "$pct" = 0 ]; then bench_shape 0 0 - -; else bench_shape "$rate" "$(qbytes)" "$net" "$net"; fi
		perf_try /tmp/bench_olat 120 $LAT_PIN "$tool" "${LAT_ARGS[@]}"
		read -ra f <<<"$P_LINE"
		bench_record "\"scen\":\"ops_lat\",\"prov\":\"$prov\",\"tool\":\"$tool\",\"rep\":$rep,\"size\":$size,\"dir\":\"$dir\",\"loss_pct\":$(jnum "$pct"),\"rate_mbit\":$([ "$pct" = 0 ] && echo 0 || echo "$rate"),\"iters\":$(jnum "${f[1]:-}"),\"unit\":\"cycles\",\"tsc_mhz\":$(jnum "$TSC_MHZ"),\"min\":$(jnum "${f[2]:-}"),\"max\":$(jnum "${f[3]:-}"),\"median\":$(jnum "${f[4]:-}"),\"avg\":$(jnum "${f[5]:-}"),\"p99\":$(jnum "${f[7]:-}"),\"p999\":$(jnum "${f[8]:-}"),\"qdisc\":$(bench_qstats),$(run_fields)"
		printf '  %-8s median %s p99 %s us (exit %s)\n' "$prov" "$(cyc_us "${f[4]:-}")" "$(cyc_us "${f[7]:-}")" "$P_RC"
	done
}

# ops_lossless TOOL MTU RATE REP NL
ops_lossless() {
	say "ops: $1, MTU $2, $3 Mbit/s, lossless (run $4 of $5)"
	ops_point "$1" "$2" "$3" none 0 "$4" - -
}

scen_ops() {
	local cfg mtu rate p tool rep nl=3
	# lossless at the start, (full mode) in the middle and at the end
	[ "$QUICK" = 0 ] || nl=2
	for cfg in ${OPS_CONFIGS//,/ }; do
		mtu=${cfg%%:*} rate=${cfg#*:}
		bench_topo "$mtu" || return
		for tool in ${OPS_TOOLS//,/ }; do
			rep=1
			ops_lossless "$tool" "$mtu" "$rate" $rep $nl
			for p in ${OPS_LOSS//,/ }; do
				say "ops: $tool, MTU $mtu, $rate Mbit/s, $p % random loss on the data direction"
				ops_point "$tool" "$mtu" "$rate" data "$p" 1 "loss random $p%" -
			done
			[ "$nl" = 2 ] || { rep=$((rep + 1)); ops_lossless "$tool" "$mtu" "$rate" $rep $nl; }
			for p in ${OPS_LOSS_BOTH//,/ }; do
				say "ops: $tool, MTU $mtu, $rate Mbit/s, $p % random loss on both directions"
				ops_point "$tool" "$mtu" "$rate" both "$p" 1 "loss random $p%" "loss random $p%"
			done
			rep=$((rep + 1))
			ops_lossless "$tool" "$mtu" "$rate" $rep $nl
		done
	done
	# latency: the first configuration's MTU and rate
	[ -n "$OPS_LAT_TOOLS" ] || return 0
	cfg=${OPS_CONFIGS%%,*}
	mtu=${cfg%%:*} rate=${cfg#*:}
	bench_topo "$mtu" || return
	for tool in ${OPS_LAT_TOOLS//,/ }; do
		for p in 0 1; do
			for ((rep = 1; rep <= OPS_LAT_REPS; rep++)); do
				say "ops: $tool, $OPS_LAT_N iterations, $p % loss on both directions (run $rep of $OPS_LAT_REPS)"
				ops_lat "$tool" "$rate" "$p" "$rep"
			done
		done
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
				lat_args "$tool" "$LAT_N"
				perf_try /tmp/bench_lat 120 $LAT_PIN "$tool" "${LAT_ARGS[@]}"
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

# --- opt-in scenario: where the guest kernel's time goes -----------------------------------
# Not in the default list (tracing slows everything it watches). Per
# provider: an unshaped ib_write_bw (PROF_DUR s) and an ib_write_lat, each
# under the function_graph tracer restricted to the provider's module and
# the network and timer functions both use (Debian's kernel has no
# function profiler; perf's cpu-clock sampling works in the guest too, but
# gives no call counts). funcgraph-tail names every closing brace, so each traced
# function's duration (its callees included) is summed per name. The
# record keeps the PROF_TOP functions by total time, with their hits, and
# the events the ring buffer lost (overrun).
PROF_TOP=${METAROCE_BENCH_PROF_TOP:-40}
PROF_DUR=${METAROCE_BENCH_PROF_DUR:-3}
PROF_NET='udp_tunnel_xmit_skb ip_route_output_key_hash ip_local_out __alloc_skb kfree_skb_reason consume_skb skb_copy_bits __udp4_lib_rcv udp_queue_rcv_one_skb netif_rx __netif_receive_skb veth_xmit process_backlog hrtimer_start_range_ns hrtimer_try_to_cancel ib_uverbs_write ib_uverbs_post_send ib_uverbs_poll_cq memcpy'
TRACEFS=/sys/kernel/tracing
prof_start() {
	local mod=$1 f
	[ -e "$TRACEFS/current_tracer" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
	echo nop >"$TRACEFS/current_tracer" || return 1
	: >"$TRACEFS/set_ftrace_filter"
	echo ":mod:$mod" >>"$TRACEFS/set_ftrace_filter" || return 1
	for f in $PROF_NET; do echo "$f" >>"$TRACEFS/set_ftrace_filter" 2>/dev/null; done
	echo 32768 >"$TRACEFS/buffer_size_kb"
	echo 1 >"$TRACEFS/options/funcgraph-tail"
	echo 0 >"$TRACEFS/options/funcgraph-irqs" 2>/dev/null
	: >"$TRACEFS/trace"
	echo function_graph >"$TRACEFS/current_tracer"
	echo 1 >"$TRACEFS/tracing_on"
}
# prof_stop: JSON {"overrun":N,"top":[[name, hits, total us, us per hit]...]}
prof_stop() {
	local over=0 f v
	echo 0 >"$TRACEFS/tracing_on"
	while read -r f v; do
		[ "$f" = overrun: ] && over=$((over + v))
	done < <(cat "$TRACEFS"/per_cpu/cpu*/stats 2>/dev/null)
	printf '{"overrun":%d,"top":' "$over"
	awk -v top="$PROF_TOP" '
		# " 1)   2.345 us    |  mrc_x();"  or  " 1) + 12.3 us | } /* mrc_x */"
		{
			if (!match($0, /[0-9.]+ us +\|/)) next
			gsub(/ \[[A-Za-z0-9_]+\]/, "")	# drop the [module] suffix
			d = substr($0, RSTART, RLENGTH); sub(/ us.*/, "", d)
			name = ""
			if (match($0, /\/\* [A-Za-z0-9_.]+ \*\//)) name = substr($0, RSTART + 3, RLENGTH - 6)
			else if (match($0, /[A-Za-z0-9_.]+\(\);/)) name = substr($0, RSTART, RLENGTH - 3)
			if (name == "") next
			hit[name]++; t[name] += d
		}
		END {
			n = 0
			for (f in t) { o[++n] = f }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (t[o[j]] > t[o[i]]) { x = o[i]; o[i] = o[j]; o[j] = x }
			printf "["
			for (i = 1; i <= n && i <= top; i++)
				printf "%s[\"%s\",%d,%.1f,%.2f]", (i > 1 ? "," : ""), o[i], hit[o[i]], t[o[i]], t[o[i]] / hit[o[i]]
			printf "]"
		}' "$TRACEFS/trace"
	printf '}'
	echo nop >"$TRACEFS/current_tracer"
	: >"$TRACEFS/set_ftrace_filter"
	: >"$TRACEFS/trace"
}
scen_prof() {
	local prov mod tool iters top
	bench_topo 9000 || return
	for prov in "${PROVS[@]}"; do
		bench_prov "$prov" || continue
		bench_shape 0 0 - -
		mod=rdma_metaroce
		[ "$prov" = rxe ] && mod=rdma_rxe
		for tool in ib_write_bw ib_write_lat; do
			say "prof: $tool under the function_graph tracer, $prov"
			prof_start "$mod" || { echo "bench: cannot set up the function_graph tracer" >&2; return 1; }
			if [ "$tool" = ib_write_bw ]; then
				perf_try /tmp/bench_prof $((PROF_DUR + 90)) ib_write_bw -F -s $SIZE -Q 1 -D "$PROF_DUR" -f 1
			else
				perf_try /tmp/bench_prof 120 $LAT_PIN ib_write_lat -F -C -n "$LAT_N"
			fi
			top=$(prof_stop)
			iters=''
			read -r _ iters _ <<<"$P_LINE"
			bench_record "\"scen\":\"prof\",\"prov\":\"$prov\",\"tool\":\"$tool\",\"iters\":$(jnum "$iters"),\"dur_s\":$PROF_DUR,\"profile\":${top:-null},$(run_fields)"
			printf '  %-8s %s: %s iterations\n' "$prov" "$tool" "${iters:-?}"
		done
	done
}

# --- opt-in scenario: sampled profile of the latency tools ----------------------------------
# Not in the default list. Unlike prof, nothing is traced, so the run
# keeps close to its normal speed; what it gives is where the CPUs spend
# their time (shares of samples), not call counts.
PERF_HZ=${METAROCE_BENCH_PERF_HZ:-2000} PERF_TOP=${METAROCE_BENCH_PERF_TOP:-40}
PERF_TOOLS=${METAROCE_BENCH_PERF_TOOLS:-ib_write_lat,ib_send_lat}
scen_perf() {
	local prov tool f top n pct sym rest tot cnt where fl
	command -v perf >/dev/null || { echo "bench: perf is not installed (linux-perf)" >&2; return 1; }
	bench_topo 9000 || return
	f=/tmp/bench_perf.data
	for tool in ${PERF_TOOLS//,/ }; do
		lat_args "$tool" "$LAT_N" || { echo "bench: perf cannot sample $tool" >&2; continue; }
		for prov in "${PROVS[@]}"; do
			say "perf: $tool sampled at $PERF_HZ Hz, $prov"
			bench_prov "$prov" || continue
			bench_shape 0 0 - -
			B_CLI_WRAP=(perf record -q -a -e cpu-clock -F "$PERF_HZ" -o "$f" --)
			perf_try /tmp/bench_perf 180 $LAT_PIN "$tool" "${LAT_ARGS[@]}"
			B_CLI_WRAP=()
			# "  12.43%  1650  [k] symbol": share, samples, kernel/user, symbol
			top='' n=0 tot=0
			while read -r pct rest; do
				[[ $pct =~ ^[0-9.]+%$ ]] || continue
				read -r cnt where sym <<<"$rest"
				tot=$((tot + cnt))
				[ "$n" -lt "$PERF_TOP" ] || continue
				n=$((n + 1))
				top+="${top:+,}[$(jstr "$sym"),$(jstr "${where//[][]/}"),$cnt]"
			done < <(perf report -i "$f" --stdio -n --no-children --sort sym -g none --percent-limit 0 2>/dev/null)
			read -ra fl <<<"$P_LINE"
			bench_record "\"scen\":\"perf\",\"prov\":\"$prov\",\"tool\":\"$tool\",\"hz\":$PERF_HZ,\"iters\":$(jnum "${fl[1]:-}"),\"tsc_mhz\":$(jnum "$TSC_MHZ"),\"median\":$(jnum "${fl[4]:-}"),\"samples\":$tot,\"top\":[$top],$(run_fields)"
			printf '  %-8s %s samples, median %s us\n' "$prov" "$tot" "$(cyc_us "${fl[4]:-}")"
		done
	done
	rm -f "$f"
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

# --- scenario 5: multipath (issue 6) ----------------------------------------------------
# ECMP fabric of MP_LINKS x MP_RATE Mbit/s (topo_ecmp, L4 hash) with
# metaroce on hostA/hostB and rxe attached in init_net (ecmp_rxe_attach).
# A sampler in rB reads each link's rx bytes (what rA put onto it: the
# offered share, loss filters sit behind the counter) and the tx bytes
# towards the receiver (hb for metaroce, rxhb for rxe: what was delivered).
MP_LINKS=4 MP_RATE=25 MP_EV=/tmp/bench_mp.events MP_WPID=''
mp_topo() {
	topo_cleanup
	BENCH_MTU=''
	# per-link queue: QPKTS packets, as the loss scenario (rxe keeps up to
	# 128 packets in flight and would otherwise overflow its one link)
	rc_ecmp_setup --mtu 9000 --links "$MP_LINKS" --rate "${MP_RATE}mbit" --limit "$QPKTS" ||
		{ echo "bench: ECMP fabric failed" >&2; return 1; }
	ecmp_rxe_attach || { echo "bench: rxe on the ECMP fabric failed" >&2; return 1; }
	rxe_add rxe0 "$RXE_A_DEV" && rxe_add rxe1 "$RXE_B_DEV" || return
	wait_for 10 rxe_gid_index rxe0 "$ECMP_RXE_A_IP"
	wait_for 10 rxe_gid_index rxe1 "$ECMP_RXE_B_IP"
	BENCH_RXE_GID_A=$(rxe_gid_index rxe0 "$ECMP_RXE_A_IP") || return
	BENCH_RXE_GID_B=$(rxe_gid_index rxe1 "$ECMP_RXE_B_IP") || return
	# mid-transfer link changes cost a write, not an exec
	ecmp_fast_start
}

# mp_watch KIND AT_US DCOL: in the background while a run goes on. Once the
# delivered counter (sample column DCOL) moved 64 KiB (the transfer
# started), waits AT_US more, then hits the link that carried the most
# bytes so far: blackhole (100 % loss both ways), down (both ends down:
# the routers see it) or lossy (MP_LOSS % both ways). Writes
# "E KIND EPOCHREALTIME LINK CONFIRMED" to $MP_EV. The loss filter of the
# data direction (rB's ingress) goes through a tc batch of the watcher's
# own whose "filter show" answer confirms it; the event time is that
# confirmation (on a busy guest a change can take effect seconds after it
# was written: measured 3.6 s once).
mp_watch() {
	local kind=$1 at=$2 dcol=$3 lines w first=() ts='' hot i line conf=0
	coproc TCW { exec ip netns exec "$ECMP_RB" tc -force -batch - 2>&1; }
	while :; do
		bsleep 0.03
		mapfile -t lines <"$BENCH_SAMP_OUT"
		[ "${#lines[@]}" -ge 2 ] || continue
		read -ra w <<<"${lines[-1]}"
		[ "${w[0]}" = S ] || continue
		[ "${#first[@]}" -gt 0 ] || read -ra first <<<"${lines[1]}"
		if [ -z "$ts" ]; then
			[ $((w[dcol] - first[dcol])) -lt 65536 ] || ts=${w[1]/./}
			continue
		fi
		[ $((${EPOCHREALTIME/./} - ts)) -ge "$at" ] || continue
		hot=1
		for ((i = 2; i <= MP_LINKS; i++)); do
			[ $((w[i + 1] - first[i + 1])) -le $((w[hot + 1] - first[hot + 1])) ] || hot=$i
		done
		case $kind in
		down) ecmp_link_down "$hot" ;;
		*)
			# rA's side through the running batch, rB's through ours
			_ECMP_FD[tc/$ECMP_RB]=${TCW[1]}
			if [ "$kind" = lossy ]; then ecmp_link_loss "$hot" "$MP_LOSS"; else ecmp_link_loss "$hot" 100; fi
			echo "filter show dev l$hot ingress" >&"${TCW[1]}"
			while read -r -t 3 -u "${TCW[0]}" line; do
				[[ $line != *gact* ]] || { conf=1; break; }
			done
			;;
		esac
		echo "E $kind $EPOCHREALTIME $hot $conf" >>"$MP_EV"
		return 0
	done
}

MP_KIND='' MP_AT=0 MP_DCOL=0
mp_pre() {
	local i f=()
	for ((i = 1; i <= MP_LINKS; i++)); do f+=("/sys/class/net/l$i/statistics/rx_bytes"); done
	f+=(/sys/class/net/hb/statistics/tx_bytes /sys/class/net/rxhb/statistics/tx_bytes)
	: >"$MP_EV"
	bench_samp_start "$ECMP_RB" "$MP_IVAL_US" "${f[@]}"
	MP_WPID=''
	if [ -n "$MP_KIND" ]; then
		mp_watch "$MP_KIND" "$MP_AT" "$MP_DCOL" &
		MP_WPID=$!
	fi
}
# the event as JSON; heals the link
MP_EVJSON='{}'
mp_post() {
	local k kind t l c
	if [ -n "$MP_WPID" ]; then
		kill "$MP_WPID" 2>/dev/null
		wait "$MP_WPID" 2>/dev/null
	fi
	bench_samp_stop
	MP_EVJSON='{}'
	while read -r k kind t l c; do
		[ "$k" = E ] || continue
		case $kind in
		down) ecmp_link_up "$l" ;;
		*) ecmp_link_loss "$l" 0 ;;
		esac
		MP_EVJSON="{\"kind\":\"$kind\",\"t\":$(_bench_tdiff "$t" "$BENCH_SAMP_T0"),\"link\":$l,\"tc_confirmed\":$([ "$c" = 1 ] && echo true || echo false)}"
	done <"$MP_EV"
	return 0
}

# mp_case CASE DUR KIND AT_US: one ib_write_bw run per provider
mp_case() {
	local case=$1 dur=$2 kind=$3 at=$4 rep=$5 prov iters gp win dcol cols i
	win=$((dur - 2 * MP_MARGIN))
	cols='['
	for ((i = 1; i <= MP_LINKS; i++)); do cols+="\"l$i\","; done
	cols+='"deliv_metaroce","deliv_rxe","cpu_busy","cpu_idle"]'
	prov_order
	for prov in "${ORDER[@]}"; do
		bench_prov "$prov" || continue
		# sample columns after the time: l1..lN, hb, rxhb
		if [ "$prov" = rxe ]; then dcol=$((MP_LINKS + 3)); else dcol=$((MP_LINKS + 2)); fi
		MP_KIND=$kind MP_AT=$at MP_DCOL=$dcol
		PRE_HOOK=mp_pre POST_HOOK=mp_post
		# a run across a failure is not repeated: its failure is the result
		[ "$case" != fail ] || PERF_MAX_TRIES=1
		perf_try /tmp/bench_mp $((dur + 60)) ib_write_bw -F -s $SIZE -Q 1 -D "$dur" -f "$MP_MARGIN"
		PRE_HOOK='' POST_HOOK='' PERF_MAX_TRIES=2''
		iters='' gp=''
		read -r _ iters _ <<<"$P_LINE"
		[[ $iters =~ ^[0-9]+$ ]] && gp=$(mbps "$iters" "$win")
		bench_record "\"scen\":\"mp\",\"case\":\"$case\",\"prov\":\"$prov\",\"rep\":$rep,\"links\":$MP_LINKS,\"link_mbit\":$MP_RATE,\"mtu\":9000,\"size\":$SIZE,\"dur_s\":$dur,\"margin_s\":$MP_MARGIN,\"window_s\":$win,\"iters\":$(jnum "$iters"),\"goodput_mbps\":$(jnum "$gp"),\"loss_pct\":$([ "$kind" = lossy ] && echo "$MP_LOSS" || echo 0),\"event_after_s\":$((at / 1000)).$(printf '%03d' $((at % 1000))),\"event\":$MP_EVJSON,\"capped\":$([ "$P_RC" = 124 ] && echo true || echo false),\"cols\":$cols,\"samples\":$BENCH_SAMP_JSON,$(run_fields)"
		printf '  %-8s %8s Mbit/s (%s iterations in %ss, exit %s, %ss; event %s)\n' "$prov" "${gp:-FAILED}" "${iters:-?}" "$win" "$P_RC" "$P_WALL" "$MP_EVJSON"
	done
}

scen_mp() {
	local rep fdur
	mp_topo || return
	fdur=$((MP_DUR + MP_DUR / 2))
	for ((rep = 1; rep <= MP_REPS; rep++)); do
		say "mp: one QP over $MP_LINKS x $MP_RATE Mbit/s ECMP, clean (run $rep of $MP_REPS)"
		mp_case clean "$MP_DUR" '' 0 "$rep"
		say "mp: the busiest link fails ($MP_FAIL) $((MP_DUR / 4)) s into a ${fdur} s transfer (run $rep of $MP_REPS)"
		mp_case fail "$fdur" "$MP_FAIL" $((MP_DUR * 1000000 / 4)) "$rep"
		say "mp: the busiest link at $MP_LOSS % loss from 0.5 s on (run $rep of $MP_REPS)"
		mp_case lossy "$MP_DUR" lossy 500000 "$rep"
	done
	ecmp_fast_stop
	topo_cleanup
}

# --- scenario 6: incast (issue 7) -------------------------------------------------------
# topo_incast: INC_MAX senders and a receiver on one bridge; the port towards
# the receiver is a 100 Mbit/s htb with a single-queue fq_codel leaf that
# marks CE above INC_CE_US of queueing delay. rxe's senders and receiver
# (init_net, incast_rxe_attach) hang off the same bridge; its receiver's
# port is shaped and marks alike. N flows of one QP each (servers in the
# receiver on TCP ports 18600+I) start at once: mrc_verify WRITE streams
# of INC_VSIZE for INC_DUR s (inc_verify, the default), or ib_write_bw
# pairs (inc_perftest). A sampler in the switch reads the bottleneck's
# leaf qdisc (backlog, sent, drops, CE marks) every INC_IVAL_US.
# The htb's token bucket holds INC_BURST bytes (64 KiB, 5.2 ms at the
# rate), not topo_incast's two frames: the guest runs htb's watchdog late
# when its vCPUs are busy, and a two-frame bucket loses the time it was
# late. Measured with two frames: 50 ms intervals whose queue stayed above
# 20 kB throughout carried 87-96 Mbit/s on average (as little as 9), for
# rxe and metaroce alike; with 64 KiB, 99.6-100. The average rate stays
# the htb rate; only the catching up after a late timer is new.
INC_MAX=8
inc_topo() {
	topo_cleanup
	BENCH_MTU=''
	rc_incast_setup "$INC_MAX" --mtu 9000 --rate 100mbit --ce "${INC_CE_US}us" --limit 200 \
		${INC_BURST:+--burst "$INC_BURST"} ||
		{ echo "bench: incast bed failed" >&2; return 1; }
	rc_incast_rxe_setup "$INC_MAX" --mtu 9000 --rate 100mbit --ce "${INC_CE_US}us" --limit 200 \
		${INC_BURST:+--burst "$INC_BURST"} ||
		{ echo "bench: rxe on the incast bed failed" >&2; return 1; }
}

# inc_variant VARIANT: module parameters for the metaroce variants
# (cc is read at QP RTS, cc_ecn and credits at run time)
inc_variant() {
	local cc=Y ecn=Y cr=Y
	case $1 in
	nocc) cc=N ecn=N ;;
	nocred) cr=N ;;
	esac
	rc_param cc "$cc" && rc_param cc_ecn "$ecn" && rc_param credits "$cr"
}

# inc_verify N PROV: the flows as mrc_verify WRITE streams of INC_VSIZE bytes,
# started together once every QP is connected, for INC_DUR seconds; the
# clients sleep on completion events (METAROCE_BENCH_INCAST_TOOL=verify).
# Goodput per flow is mrc_verify's verified bytes over its run. Appends
# to flows and sets rcvdev, ok and vsum (Mbit/s in all) of inc_run.
inc_verify() {
	local n=$1 prov=$2 i list='' gp st log=/tmp/bench_incv opt=()
	for ((i = 1; i <= n; i++)); do list+="${list:+ }$i"; done
	if [ "$prov" = rxe ]; then rcvdev=$RC_RXE_R opt=(--rxe); else rcvdev=$RC_DEV_R; fi
	# shellcheck disable=SC2086 # VARGS: options, split on purpose
	rc_incast_run --timeout $((INC_DUR + 120)) --log "$log" --sync "${opt[@]}" "$list" \
		--dir c2s --ops=write -q 1 -s "$INC_VSIZE" -D "$INC_DUR" ${METAROCE_BENCH_INCAST_VARGS:-}
	vsum=0
	for ((i = 1; i <= n; i++)); do
		gp=$(rc_result "$log.$i.cli" goodput_mbps) || gp=''
		st=$(rc_result "$log.$i.cli" status) || st=none
		flows+="${flows:+,}{\"flow\":$i,\"rc\":$([ "$st" = PASS ] && echo 0 || echo 1),\"iters\":null,\"goodput_mbps\":$(jnum "$gp"),\"status\":$(jstr "$st")"
		[ "$st" = PASS ] || flows+=",\"error\":$(jstr "$(grep -h -E 'ERROR|FATAL' "$log.$i.cli" "$log.$i.srv" 2>/dev/null | head -n 3 | tr -s '\n\t' '  ')")"
		flows+='}'
		[ -z "$gp" ] || { ok=$((ok + 1)); vsum=$(awk -v a="$vsum" -v b="$gp" 'BEGIN { printf "%.1f", a + b }'); }
	done
}

# inc_perftest N PROV: the flows as ib_write_bw pairs (busy-polling clients
# at nice INC_NICE), the clients started together once every server
# listens; goodput per flow is iterations x SIZE over the window. Reads
# ns_r and ctrl, appends to flows and sets rcvdev, ok and vsum (Mbit/s in
# all) of inc_run.
inc_perftest() {
	local n=$1 prov=$2 i pids=() spids=() dev gp its rc line sum=0
	for ((i = 1; i <= n; i++)); do
		local srv=() cli=()
		if [ "$prov" = rxe ]; then
			rcvdev=$RC_RXE_R dev=$RC_RXE_S$i
			srv=(ib_write_bw -d "$rcvdev" -x "$INCAST_RXE_GID_R")
			cli=(nice -n "$INC_NICE" ib_write_bw -d "$dev" -x "${INCAST_RXE_GID[i]}")
		else
			rcvdev=$RC_DEV_R dev=$RC_DEV_S$i
			srv=(ip netns exec "$ns_r" ib_write_bw -d "$rcvdev" -x "$INCAST_GID_R")
			cli=(ip netns exec "$INCAST_SND$i" nice -n "$INC_NICE" ib_write_bw -d "$dev" -x "${INCAST_GID[i]}")
		fi
		[ "${METAROCE_BENCH_INCAST_PIN:-0}" = 1 ] && cli=(taskset -c $((i % 2)) "${cli[@]}")
		srv+=(-F -s "$SIZE" -Q 1 -D "$INC_DUR" -f "$INC_MARGIN" -p $((18600 + i)))
		cli+=(-F -s "$SIZE" -Q 1 -D "$INC_DUR" -f "$INC_MARGIN" -p $((18600 + i)) "$ctrl")
		INC_CLI[i]=$(printf '%q ' "${cli[@]}")
		timeout $((INC_DUR + 120)) "${srv[@]}" >"/tmp/bench_inc.$i.srv" 2>&1 &
		spids[i]=$!
	done
	# the clients start together, once every server listens
	inc_listening "$ns_r" "$n" || echo "bench: not every server listens after 60 s" >&2
	for ((i = 1; i <= n; i++)); do
		eval "timeout $((INC_DUR + 90)) ${INC_CLI[i]}" >"/tmp/bench_inc.$i.cli" 2>&1 &
		pids[i]=$!
	done
	for ((i = 1; i <= n; i++)); do
		rc=0
		wait "${pids[i]}" || rc=$?
		[ "$rc" = 0 ] || kill "${spids[i]}" 2>/dev/null
		wait "${spids[i]}" 2>/dev/null
		its=''
		if line=$(bench_perf_line "/tmp/bench_inc.$i.cli"); then
			read -r _ its _ <<<"$line"
		fi
		gp=''
		[[ $its =~ ^[0-9]+$ ]] && gp=$(mbps "$its" "$INC_WIN") && ok=$((ok + 1))
		flows+="${flows:+,}{\"flow\":$i,\"rc\":$rc,\"iters\":$(jnum "$its"),\"goodput_mbps\":$(jnum "$gp")"
		if [ "$rc" != 0 ] || [ -z "$gp" ]; then
			flows+=",\"error\":$(jstr "$(grep -h -i -E 'error|fail|couldn|unable|exceed' "/tmp/bench_inc.$i.cli" "/tmp/bench_inc.$i.srv" 2>/dev/null | head -n 3 | tr -s '\n\t' '  ')")"
		fi
		flows+='}'
		[ -z "$gp" ] || sum=$((sum + its))
	done
	vsum=$(mbps "$sum" "$INC_WIN")
}

# inc_run N VARIANT: N flows at once
inc_run() {
	local n=$1 v=$2 i port rcvdev='' dev flows='' ok=0 vsum='' ts
	local prov=metaroce ns_r=$INCAST_RCV ctrl=$INCAST_RCV_MGMT_IP
	# shellcheck disable=SC2034 # filled through namerefs
	local -A c0 c1
	if [ "$v" = rxe ]; then
		prov=rxe ns_r='' ctrl=127.0.0.1 port=$INCAST_RXE_PORT
	else
		port=$INCAST_PORT
		inc_variant "$v" || echo "bench: module parameters for $v not set" >&2
	fi
	rc_snap_all c0
	# the bottleneck's tx bytes, and what each sender put onto the switch
	local sf=("/sys/class/net/$port/statistics/tx_bytes") scols=''
	for ((i = 1; i <= n; i++)); do
		if [ "$prov" = rxe ]; then sf+=("/sys/class/net/rp$i/statistics/rx_bytes"); else sf+=("/sys/class/net/p$i/statistics/rx_bytes"); fi
		scols+=",\"sender$i\""
	done
	# the receiver's counters: its sysfs is the initial namespace's, which
	# the sampler in the switch's namespace reaches through init's root
	if [ "$prov" = metaroce ] && [ -n "${METAROCE_BENCH_INCAST_CTRS:-}" ]; then
		local ctr
		for ctr in ${METAROCE_BENCH_INCAST_CTRS//,/ }; do
			sf+=("/proc/1/root/sys/class/infiniband/$RC_DEV_R/ports/1/hw_counters/$ctr")
			scols+=",\"ctr_$ctr\""
		done
	fi
	bench_samp_start "$INCAST_SW" "$INC_IVAL_US" -q "$port" "${sf[@]}"
	ts=$EPOCHREALTIME
	if [ "$INC_TOOL" = verify ]; then
		inc_verify "$n" "$prov"
	else
		inc_perftest "$n" "$prov"
	fi
	bench_samp_stop
	rc_snap_all c1
	inc_variant full
	# counters of the devices that took part: senders summed, receiver
	local k name d cs='' cr=''
	local -A sa=() sdev=()
	for ((i = 1; i <= n; i++)); do
		if [ "$prov" = rxe ]; then sdev[$RC_RXE_S$i]=1; else sdev[$RC_DEV_S$i]=1; fi
	done
	for k in "${!c1[@]}"; do
		dev=${k%%:*} name=${k#*:}
		case $name in rtt_* | lifespan) continue ;; esac
		d=$((${c1[$k]} - ${c0[$k]:-0}))
		[ "$d" != 0 ] || continue
		if [ "$dev" = "$rcvdev" ]; then
			cr+="${cr:+,}\"$name\":$d"
		elif [ -n "${sdev[$dev]:-}" ]; then
			sa[$name]=$((${sa[$name]:-0} + d))
		fi
	done
	for k in "${!sa[@]}"; do cs+="${cs:+,}\"$k\":${sa[$k]}"; done
	# each sender's own figures, to tell which one ran ahead and why
	local each='' one
	if [ "$prov" = metaroce ]; then
		for ((i = 1; i <= n; i++)); do
			one=''
			for name in tx_packets retransmitted_packets rto_events spurious_rtos \
				tail_loss_probes rack_losses cc_window_cuts window_cuts_ecn \
				window_cut_undos ecn_echoes_received credit_waits paced_waits small_grant_segments path_switches \
				path_delay_skips entropies_retired; do
				k=$RC_DEV_S$i:$name
				one+="${one:+,}\"$name\":$((${c1[$k]:-0} - ${c0[$k]:-0}))"
			done
			for name in rtt_min_us rtt_smoothed_us; do
				one+=",\"$name\":$(jnum "${c1[$RC_DEV_S$i:$name]:-}")"
			done
			each+="${each:+,}{$one}"
		done
	fi
	# the senders' lowest RTT sample (metaroce gauge, microseconds)
	local rmin=''
	if [ "$prov" = metaroce ]; then
		for ((i = 1; i <= n; i++)); do
			k=${c1[$RC_DEV_S$i:rtt_min_us]:-}
			[[ $k =~ ^[1-9][0-9]*$ ]] || continue
			[ -n "$rmin" ] && [ "$rmin" -le "$k" ] || rmin=$k
		done
	fi
	bench_record "\"scen\":\"incast\",\"prov\":\"$prov\",\"variant\":\"$v\",\"n\":$n,\"tool\":\"$INC_TOOL\",\"verify_size\":$(jstr "$([ "$INC_TOOL" = verify ] && echo "$INC_VSIZE")"),\"rate_mbit\":100,\"ce_ms\":$(awk "BEGIN {print $INC_CE_US / 1000}"),\"burst_bytes\":$(jnum "$INC_BURST"),\"mtu\":9000,\"size\":$SIZE,\"dur_s\":$INC_DUR,\"margin_s\":$INC_MARGIN,\"window_s\":$INC_WIN,\"ok_flows\":$ok,\"flows\":[$flows],\"rtt_min_us\":$(jnum "$rmin"),\"counters\":{\"senders\":{$cs},\"receiver\":{$cr},\"each_sender\":[$each]},\"cols\":[\"port_tx\"$scols,\"cpu_busy\",\"cpu_idle\",\"backlog_bytes\",\"backlog_pkts\",\"sent_bytes\",\"dropped\",\"ce_mark\"],\"samples\":$BENCH_SAMP_JSON,\"wall_s\":$(since "$ts")"
	printf '  %-8s %-7s N=%d: %s Mbit/s in all (%d of %d flows with a result, %ss)\n' "$prov" "$v" "$n" "$vsum" "$ok" "$n" "$(since "$ts")"
}

# inc_listening NS N: wait (at most 60 s) until TCP ports 18600+1..N listen
# in NS (init_net if empty); one exec per look
INC_CLI=()
inc_listening() {
	local ns=$1 n=$2 end=$((SECONDS + 60)) out i ok hex
	while [ "$SECONDS" -lt "$end" ]; do
		if [ -n "$ns" ]; then
			out=$(ip netns exec "$ns" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
		else
			out=$(</proc/net/tcp)$(</proc/net/tcp6)
		fi
		ok=1
		for ((i = 1; i <= n; i++)); do
			printf -v hex '%04X' $((18600 + i))
			[[ $out =~ :$hex\ [0-9A-F]+:0000\ 0A ]] || { ok=0; break; }
		done
		[ "$ok" = 0 ] || return 0
		bsleep 0.3
	done
	return 1
}

# base RTT through the idle bottleneck (ICMP), for the report's BDP
inc_ping() {
	local out
	out=$(in_host "${INCAST_SND}1" ping -c 20 -i 0.05 -q "$INCAST_RCV_IP" 2>&1)
	[[ $out =~ =\ ([0-9.]+)/([0-9.]+)/ ]] || return 0
	bench_record "\"scen\":\"incast_ping\",\"prov\":\"-\",\"rtt_min_ms\":${BASH_REMATCH[1]},\"rtt_avg_ms\":${BASH_REMATCH[2]}"
	echo "  ping through the idle bottleneck: min ${BASH_REMATCH[1]} ms, avg ${BASH_REMATCH[2]} ms"
}

scen_incast() {
	local n v
	inc_topo || return
	inc_ping
	for n in ${INC_NS//,/ }; do
		for v in ${INC_VARIANTS//,/ }; do
			say "incast: $n -> 1 through 100 Mbit/s (CE above $INC_CE_US us), $v"
			inc_run "$n" "$v"
		done
	done
	topo_cleanup
}

# --- scenario 7: collective step time (issue 44) -----------------------------------------
# Four hosts over the ECMP fabric of mp: hostA and hostC behind rA, hostB
# and hostD behind rB, 4 x STEP_MBIT links between the routers (QPKTS
# packets of queue per link). The ring A -> B -> C -> D -> A puts every hop
# across the fabric (two flows each way). rxe: rxa/rxc behind rA, rxb/rxd
# behind rB (init_net, per-source policy routing, prefs and tables 112-115,
# which topo_cleanup removes), ring rxe0 -> rxe1 -> rxe2 -> rxe3. Control:
# veths hostA <-> hostB/C/D (mg0, mc0, md0); rxe over lo.
STEP_HOSTS=(hostA hostB hostC hostD) STEP_MRC=(mrcA mrcB mrcC mrcD) STEP_RXE=(rxe0 rxe1 rxe2 rxe3)
STEP_CTRL=('' 10.9.0.1 10.9.2.1 10.9.3.1)
STEP_GID=() STEP_RXE_GID=()
# host ports of each router, metaroce and rxe, where the loss conditions drop
STEP_PORTS_A='ha hc rxha rxhc' STEP_PORTS_B='hb hd rxhb rxhd'
if [ "$QUICK" = 1 ]; then
	STEP_STEPS=${METAROCE_BENCH_STEP_STEPS:-30} STEP_SIZE=${METAROCE_BENCH_STEP_SIZE:-1M}
	STEP_MAX_S=${METAROCE_BENCH_STEP_MAX_S:-120}
else
	STEP_STEPS=${METAROCE_BENCH_STEP_STEPS:-500} STEP_SIZE=${METAROCE_BENCH_STEP_SIZE:-8M}
	STEP_MAX_S=${METAROCE_BENCH_STEP_MAX_S:-1800}
fi
STEP_MBIT=${METAROCE_BENCH_STEP_MBIT:-100} STEP_SLICE=${METAROCE_BENCH_STEP_SLICE:-512K}
STEP_CONDS=${METAROCE_BENCH_STEP_CONDS:-lossless,loss0.1,loss1,bursty,fail,incast}
STEP_VERIFY=${METAROCE_BENCH_STEP_VERIFY:-1} STEP_WARMUP=${METAROCE_BENCH_STEP_WARMUP:-2}
# QP timeout exponent: NCCL's default (NCCL_IB_TIMEOUT 20, 4.3 s); rxe
# waits that long for a lost tail (metaroce runs its own timers): at 1 %
# loss a median 13.9 s per 1 MiB step in a quick run. With perftest's 14
# (67 ms) the busy guest's rxe retransmitted ten times what it delivered and
# failed at 0.1 % loss (remote invalid request), so 20 it is, and a run
# ends after the step that passes STEP_MAX_S (capped: the steps done count)
STEP_QP_TIMEOUT=${METAROCE_BENCH_STEP_QP_TIMEOUT:-20}
STEP_INC_FLOWS=8 STEP_EV=/tmp/bench_stepev

step_topo() {
	local i
	topo_cleanup
	BENCH_MTU=''
	rc_ecmp_setup --mtu 9000 --links "$MP_LINKS" --rate "${STEP_MBIT}mbit" --limit "$QPKTS" ||
		{ echo "bench: ECMP fabric failed" >&2; return 1; }
	_ipb - <<-EOF || return
		netns add hostC
		netns add hostD
		link add $TOPO_DEV netns hostC mtu 9000 type veth peer name hc netns $ECMP_RA mtu 9000
		link add $TOPO_DEV netns hostD mtu 9000 type veth peer name hd netns $ECMP_RB mtu 9000
		link add mc0 netns $TOPO_A type veth peer name mc0 netns hostC
		link add md0 netns $TOPO_A type veth peer name md0 netns hostD
	EOF
	_ipb "$TOPO_A" <<-EOF || return
		addr add 10.9.2.1/24 dev mc0
		addr add 10.9.3.1/24 dev md0
		link set mc0 up
		link set md0 up
	EOF
	for i in C D; do
		local net=10.2.5 m=mc0 mip=10.9.2.2 r=$ECMP_RA
		[ "$i" = C ] || net=10.2.6 m=md0 mip=10.9.3.2 r=$ECMP_RB
		_ipb "host$i" <<-EOF || return
			link set lo up
			link set $TOPO_DEV up
			link set $m up
			addr add $net.1/24 dev $TOPO_DEV
			addr add $mip/24 dev $m
			route add 10.2.0.0/16 via $net.254
		EOF
		_ipb "$r" <<-EOF || return
			addr add $net.254/24 dev h${i,}
			link set h${i,} up
		EOF
		_ns_setup "host$i" || return
	done
	_ipb "$ECMP_RA" <<-EOF || return
		route replace 10.2.6.0/24 $(_ecmp_nexthops 2)
		route replace 10.2.8.0/24 $(_ecmp_nexthops 2)
	EOF
	_ipb "$ECMP_RB" <<-EOF || return
		route replace 10.2.5.0/24 $(_ecmp_nexthops 1)
		route replace 10.2.7.0/24 $(_ecmp_nexthops 1)
	EOF
	in_host hostC rdma link add mrcC type metaroce netdev "$TOPO_DEV" || return
	in_host hostD rdma link add mrcD type metaroce netdev "$TOPO_DEV" || return
	STEP_GID=("$GID_A" "$GID_B" '' '')
	STEP_GID[2]=$(rxe_gid_index mrcC 10.2.5.1) && STEP_GID[3]=$(rxe_gid_index mrcD 10.2.6.1) || return
	step_rxe || return
	ecmp_fast_start
}

# rxe's four ends: ecmp_rxe_attach's rxa/rxb, then rxc/rxd and a routing
# table per source address
step_rxe() {
	local i ip rip dev
	ecmp_rxe_attach || { echo "bench: rxe on the ECMP fabric failed" >&2; return 1; }
	_ipb - <<-EOF || return
		link add rxc mtu 9000 type veth peer name rxhc netns $ECMP_RA mtu 9000
		link add rxd mtu 9000 type veth peer name rxhd netns $ECMP_RB mtu 9000
	EOF
	_rxe_sysctls rxc rxd
	_ipb "$ECMP_RA" <<-EOF || return
		addr add 10.2.7.254/24 dev rxhc
		link set rxhc up
	EOF
	_ipb "$ECMP_RB" <<-EOF || return
		addr add 10.2.8.254/24 dev rxhd
		link set rxhd up
	EOF
	_ns_setup "$ECMP_RA" && _ns_setup "$ECMP_RB" || return
	for i in 0 1 2 3; do
		ip=10.2.$((i + 3 + (i > 1) * 2)).1 dev=${RXE_A_DEV}
		case $i in 1) dev=$RXE_B_DEV ;; 2) dev=rxc ;; 3) dev=rxd ;; esac
		rip=${ip%.1}.254
		echo "addr add $ip/24 dev $dev"
		echo "link set $dev up"
		echo "route add 10.2.0.0/16 via $rip dev $dev src $ip onlink table $((112 + i))"
		echo "rule add pref $((112 + i)) iif lo from $ip lookup $((112 + i))"
	done | grep -v -E 'dev rx[ab]$' | _ipb - || return
	for i in 0 1 2 3; do
		dev=$RXE_A_DEV
		case $i in 1) dev=$RXE_B_DEV ;; 2) dev=rxc ;; 3) dev=rxd ;; esac
		rxe_add "${STEP_RXE[i]}" "$dev" || return
	done
	STEP_RXE_GID=()
	for i in 0 1 2 3; do
		ip=10.2.$((i + 3 + (i > 1) * 2)).1
		wait_for 10 rxe_gid_index "${STEP_RXE[i]}" "$ip"
		STEP_RXE_GID[i]=$(rxe_gid_index "${STEP_RXE[i]}" "$ip") || return
	done
	wait_for 10 ping -c1 -W1 -I 10.2.8.1 10.2.3.1 ||
		{ echo "bench: rxd cannot reach rxa" >&2; return 1; }
}

# step_netem NETEM: on every host port of both routers ("" clears)
step_netem() {
	local p
	for p in $STEP_PORTS_A; do
		echo "qdisc del dev $p root"
		[ -z "$1" ] || echo "qdisc add dev $p root netem limit 100000 $1"
	done | tc -n "$ECMP_RA" -force -batch - >/dev/null 2>&1
	for p in $STEP_PORTS_B; do
		echo "qdisc del dev $p root"
		[ -z "$1" ] || echo "qdisc add dev $p root netem limit 100000 $1"
	done | tc -n "$ECMP_RB" -force -batch - >/dev/null 2>&1
	return 0
}
step_netem_drops() {
	local p n=0
	for p in $STEP_PORTS_A; do n=$((n + $(netem_stat "$ECMP_RA" "$p" dropped))); done
	for p in $STEP_PORTS_B; do n=$((n + $(netem_stat "$ECMP_RB" "$p" dropped))); done
	echo "$n"
}

# step_cmd PROV RANK: the command line of one rank (array STEP_C)
step_cmd() {
	local prov=$1 r=$2
	if [ "$prov" = rxe ]; then
		STEP_C=("$RC_REPO/tests/tools/mrc_step" -d "${STEP_RXE[r]}" -x "${STEP_RXE_GID[r]}")
		[ "$r" = 0 ] || STEP_C+=(127.0.0.1)
	else
		STEP_C=(ip netns exec "${STEP_HOSTS[r]}" "$RC_REPO/tests/tools/mrc_step"
			-d "${STEP_MRC[r]}" -x "${STEP_GID[r]}")
		[ "$r" = 0 ] || STEP_C+=("${STEP_CTRL[r]}")
	fi
}

# step_bg_start PROV / step_bg_stop: 8 -> 1 background, mrc_verify WRITE
# streams of 64 KiB from hosts B, C, D (3 + 3 + 2 QPs) into host A
STEP_BG=()
step_bg_start() {
	local prov=$1 i s src
	STEP_BG=()
	for ((i = 1; i <= STEP_INC_FLOWS; i++)); do
		s=$((i % 3 + 1))
		if [ "$prov" = rxe ]; then
			timeout 3600 "$MRC_VERIFY" -d rxe0 -g "${STEP_RXE_GID[0]}" -p $((18600 + i)) \
				>"/tmp/bench_stepbg.$i.srv" 2>&1 &
			STEP_BG+=($!)
			src=("$MRC_VERIFY" -d "${STEP_RXE[s]}" -g "${STEP_RXE_GID[s]}" -p $((18600 + i)))
			src+=(--dir c2s --ops=write -q 1 -s 65536 -D 3000 127.0.0.1)
		else
			timeout 3600 ip netns exec "$TOPO_A" "$MRC_VERIFY" -d mrcA -g "${STEP_GID[0]}" \
				-p $((18600 + i)) >"/tmp/bench_stepbg.$i.srv" 2>&1 &
			STEP_BG+=($!)
			src=(ip netns exec "${STEP_HOSTS[s]}" "$MRC_VERIFY" -d "${STEP_MRC[s]}" -g "${STEP_GID[s]}"
				-p $((18600 + i)) --dir c2s --ops=write -q 1 -s 65536 -D 3000 "${STEP_CTRL[s]}")
		fi
		timeout 3600 "${src[@]}" >"/tmp/bench_stepbg.$i.cli" 2>&1 &
		STEP_BG+=($!)
	done
	# the streams run before the ring starts
	bsleep 3
}
step_bg_stop() {
	local p
	for p in "${STEP_BG[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${STEP_BG[@]}"; do wait "$p" 2>/dev/null; done
	STEP_BG=()
}

# step_watch LOG AT_S: once rank 0 logged step 0's start, wait AT_S s, then
# blackhole the link that carried the most bytes (both directions so far)
step_watch() {
	local log=$1 at=$2 b0 b1 a0 a1 i hot=1 best=-1 d t
	until grep -q 'step 0 starts' "$log" 2>/dev/null; do bsleep 0.1; done
	read -ra a0 <<<"$(ecmp_bytes ab) $(ecmp_bytes ba)"
	bsleep "$at"
	read -ra a1 <<<"$(ecmp_bytes ab) $(ecmp_bytes ba)"
	for ((i = 0; i < MP_LINKS; i++)); do
		b0=$((a1[i] - a0[i])) b1=$((a1[i + MP_LINKS] - a0[i + MP_LINKS]))
		d=$((b0 + b1))
		[ "$d" -le "$best" ] || { best=$d hot=$((i + 1)); }
	done
	t=$EPOCHREALTIME
	ecmp_link_loss "$hot" 100
	echo "E blackhole $t $hot" >>"$STEP_EV"
}

# step_run PROV LOG ARGS...: the 4 ranks; exit status of rank 0, else the
# first failing rank's
STEP_C=()
step_run() {
	local prov=$1 log=$2 r pids=() rc=0 st
	shift 2
	for ((r = 0; r < 4; r++)); do
		step_cmd "$prov" "$r"
		timeout "$STEP_TO" "${STEP_C[@]}" -N 4 -r "$r" "$@" >"$log.$r" 2>&1 &
		pids[r]=$!
		[ "$r" != 0 ] || bsleep 0.3
	done
	for ((r = 0; r < 4; r++)); do
		st=0
		wait "${pids[r]}" || st=$?
		[ "$rc" != 0 ] || rc=$st
	done
	return "$rc"
}

# step_res FILE KEY: from rank 0's MRC_STEP_RESULT line
step_res() {
	local line w
	line=$(grep -h '^MRC_STEP_RESULT' "$1" 2>/dev/null | tail -n 1)
	for w in $line; do
		case $w in "$2"=*) echo "${w#*=}"; return 0 ;; esac
	done
	return 1
}

# step_case COND PROV
declare -gA STEP_LOSSLESS_S=()
step_case() {
	local cond=$1 prov=$2 net='' log=/tmp/bench_step wpid='' ev='{}' k kind t l rc=0 ts
	local d i name us='' tss='' bg='' ok=0 line
	# shellcheck disable=SC2034 # filled through namerefs
	local -A c0 c1 sum=()
	case $cond in
	lossless | fail | incast) ;;
	loss*) net="loss ${cond#loss}%" ;;
	bursty) net="loss gemodel ${GEMODEL%,*}% ${GEMODEL#*,}%" ;;
	*) echo "bench: unknown step condition $cond" >&2; return 1 ;;
	esac
	step_netem "$net"
	rm -f "$log".* /tmp/bench_step.csv
	: >"$STEP_EV"
	[ "$cond" != incast ] || step_bg_start "$prov"
	if [ "$cond" = fail ]; then
		# a quarter into the run (the provider's lossless run's length)
		t=${STEP_LOSSLESS_S[$prov]:-20}
		t=$(awk -v t="$t" 'BEGIN { printf "%.1f", t / 4 < 1 ? 1 : t / 4 }')
		step_watch "$log.0" "$t" &
		wpid=$!
	fi
	rc_snap_all c0
	ts=$EPOCHREALTIME
	step_run "$prov" "$log" -s "$STEP_SIZE" -S "$STEP_SLICE" -n "$STEP_STEPS" -w "$STEP_WARMUP" \
		-k "$STEP_VERIFY" -t "$STEP_QP_TIMEOUT" --max-time "$STEP_MAX_S" -C /tmp/bench_step.csv \
		--stall 60 || rc=$?
	rc_snap_all c1
	if [ -n "$wpid" ]; then
		kill "$wpid" 2>/dev/null
		wait "$wpid" 2>/dev/null
	fi
	while read -r k kind t l; do
		[ "$k" = E ] || continue
		ecmp_link_loss "$l" 0
		ev="{\"kind\":\"$kind\",\"t_real\":$t,\"link\":$l}"
	done <"$STEP_EV"
	if [ "$cond" = incast ]; then
		step_bg_stop
		for ((i = 1; i <= STEP_INC_FLOWS; i++)); do
			line=$(grep -c -E 'ERROR|FATAL' "/tmp/bench_stepbg.$i.cli" "/tmp/bench_stepbg.$i.srv" 2>/dev/null | awk -F: '{ s += $2 } END { print s + 0 }')
			[ "$line" != 0 ] || ok=$((ok + 1))
		done
		bg="\"background\":{\"flows\":$STEP_INC_FLOWS,\"without_errors\":$ok},"
	fi
	local drops
	drops=$(step_netem_drops)
	step_netem ''
	# counters of the provider's four devices, summed
	for k in "${!c1[@]}"; do
		d=${k%%:*} name=${k#*:}
		case $name in rtt_* | lifespan) continue ;; esac
		case " ${STEP_MRC[*]} ${STEP_RXE[*]} " in *" $d "*) ;; *) continue ;; esac
		if [ "$prov" = rxe ]; then [[ $d == rxe* ]] || continue; else [[ $d == mrc* ]] || continue; fi
		sum[$name]=$((${sum[$name]:-0} + ${c1[$k]} - ${c0[$k]:-0}))
	done
	local cs=''
	for k in "${!sum[@]}"; do [ "${sum[$k]}" = 0 ] || cs+="${cs:+,}\"$k\":${sum[$k]}"; done
	if [ -f /tmp/bench_step.csv ]; then
		us=$(awk -F, 'NR > 1 { printf "%s%s", (NR > 2 ? "," : ""), $2 }' /tmp/bench_step.csv)
		tss=$(awk -F, 'NR > 1 { printf "%s%s", (NR > 2 ? "," : ""), $6 }' /tmp/bench_step.csv)
	fi
	local rf=$log.0 st fields=''
	st=$(step_res "$rf" status) || st=none
	[ "$cond" != lossless ] || [ "$st" != PASS ] || STEP_LOSSLESS_S[$prov]=$(step_res "$rf" elapsed_s)
	for k in warmup steps timed capped verified bad min_us p50_us p90_us p99_us max_us mean_us algbw_mbps elapsed_s t0_real; do
		fields+=",\"$k\":$(jnum "$(step_res "$rf" "$k")")"
	done
	[ "$st" = PASS ] ||
		fields+=",\"error\":$(jstr "$(grep -h -E 'ERROR' "$log".[0-3] 2>/dev/null | head -n 4 | tr -s '\n\t' '  ')")"
	bench_record "\"scen\":\"step\",\"cond\":\"$cond\",\"prov\":\"$prov\",\"ranks\":4,\"size\":$(jstr "$STEP_SIZE"),\"slice\":$(jstr "$STEP_SLICE"),\"steps_req\":$STEP_STEPS,\"links\":$MP_LINKS,\"link_mbit\":$STEP_MBIT,\"mtu\":9000,\"netem\":$(jstr "$net"),\"netem_dropped\":$drops,\"event\":$ev,$bg\"rc\":$rc,\"status\":$(jstr "$st")$fields,\"counters\":{$cs},\"step_us\":[$us],\"step_t_s\":[$tss],\"wall_s\":$(since "$ts")"
	printf '  %-8s %-8s %s: p50 %s us, p99 %s us, max %s us (%s steps, %s verified, exit %s, %ss)\n' "$prov" "$cond" "$st" \
		"$(step_res "$rf" p50_us)" "$(step_res "$rf" p99_us)" "$(step_res "$rf" max_us)" "$(step_res "$rf" timed)" \
		"$(step_res "$rf" verified)" "$rc" "$(since "$ts")"
}

scen_step() {
	local c prov
	STEP_TO=${METAROCE_BENCH_STEP_TIMEOUT:-$((300 + STEP_STEPS * 20))}
	step_topo || return
	for c in ${STEP_CONDS//,/ }; do
		say "step: ring all-reduce of $STEP_SIZE, 4 ranks over $MP_LINKS x $STEP_MBIT Mbit/s ECMP, $STEP_STEPS steps: $c"
		prov_order
		for prov in "${ORDER[@]}"; do
			step_case "$c" "$prov"
		done
	done
	ecmp_fast_stop
	topo_cleanup
}

# --- main --------------------------------------------------------------------------------------
T_START=$EPOCHREALTIME
: >"$BENCH_RECORDS"
rc_dmesg_mark
setup || exit 1
status=0
# --- scenario: NVMe over Fabrics (issue 45) -----------------------------------
# An nvmet-rdma target (a file namespace in /dev/shm, buffered) on B's
# init_net end and the kernel's nvme-rdma host on A's, as in
# tests/vm/39-nvme-of.sh; kernel ULPs live in init_net, so both providers
# use the rxe topology's wires, one at a time (the other's links are
# removed: rdma_cm would pick either device for the address). Per
# provider and condition (lossless, NVME_LOSS % random loss on both
# directions; shaped as in loss): fio sequential 128 KiB writes, then
# reads, libaio, O_DIRECT, iodepth 16, NVME_DUR s each.
NVME_NQN=mrc-nvme-bench NVME_CFG=/sys/kernel/config/nvmet NVME_IMG=/dev/shm/mrc-nvme-bench.img
NVME_CTRL='' NVME_DEV=''
nvme_links() {
	local want=$1 d
	for d in rxe0 rxe1 mrcA mrcB; do rdma link del "$d" >/dev/null 2>&1; done
	if [ "$want" = rxe ]; then
		rxe_add rxe0 "$RXE_A_DEV" && rxe_add rxe1 "$RXE_B_DEV" || return
		# rdma_cm finds a device by its GIDs, which fill after link add
		wait_for 10 rxe_gid_index rxe0 "$RXE_A_IP" &&
			wait_for 10 rxe_gid_index rxe1 "$RXE_B_IP"
	else
		rdma link add mrcA type metaroce netdev "$RXE_A_DEV" &&
			rdma link add mrcB type metaroce netdev "$RXE_B_DEV"
	fi
}
nvme_target() {
	local c=$NVME_CFG
	for m in nvmet nvmet-rdma nvme-rdma; do modprobe "$m" || return; done
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	truncate -s 272M "$NVME_IMG" || return
	mkdir "$c/subsystems/$NVME_NQN" "$c/subsystems/$NVME_NQN/namespaces/1" || return
	echo 1 >"$c/subsystems/$NVME_NQN/attr_allow_any_host"
	echo "$NVME_IMG" >"$c/subsystems/$NVME_NQN/namespaces/1/device_path"
	echo 1 >"$c/subsystems/$NVME_NQN/namespaces/1/buffered_io"
	echo 1 >"$c/subsystems/$NVME_NQN/namespaces/1/enable"
}
# the port listens on whichever device has the address now: after the
# links change (a listener's device went away), so a new one
nvme_port_up() {
	local c=$NVME_CFG
	mkdir "$c/ports/2" || return
	echo rdma >"$c/ports/2/addr_trtype"
	echo ipv4 >"$c/ports/2/addr_adrfam"
	echo "$RXE_B_IP" >"$c/ports/2/addr_traddr"
	echo 4420 >"$c/ports/2/addr_trsvcid"
	ln -s "$c/subsystems/$NVME_NQN" "$c/ports/2/subsystems/$NVME_NQN"
}
nvme_port_down() {
	rm -f "$NVME_CFG/ports/2/subsystems/$NVME_NQN" 2>/dev/null
	rmdir "$NVME_CFG/ports/2" 2>/dev/null
}
nvme_untarget() {
	local c=$NVME_CFG
	nvme_port_down
	echo 0 >"$c/subsystems/$NVME_NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$c/subsystems/$NVME_NQN/namespaces/1" "$c/subsystems/$NVME_NQN" 2>/dev/null
	rm -f "$NVME_IMG"
}
# connect; sets NVME_CTRL and NVME_DEV (the namespace's block device)
nvme_connect() {
	local c b i
	NVME_DEV=''
	echo "transport=rdma,traddr=$RXE_B_IP,trsvcid=4420,nqn=$NVME_NQN,host_traddr=$RXE_A_IP" \
		>/dev/nvme-fabrics || return
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NVME_NQN" ] && NVME_CTRL=${c##*/}
	done
	[ -n "$NVME_CTRL" ] || return 1
	for i in $(seq 50); do
		for b in /dev/"$NVME_CTRL"n1 /sys/class/nvme/"$NVME_CTRL"/nvme*n1; do
			b=/dev/${b##*/}
			[ -b "$b" ] && { NVME_DEV=$b; return 0; }
		done
		bsleep 0.2
	done
	return 1
}
nvme_disconnect() {
	[ -z "$NVME_CTRL" ] || echo 1 >"/sys/class/nvme/$NVME_CTRL/delete_controller" 2>/dev/null
	NVME_CTRL=''
}
# nvme_fio DEV RW: one fio run; sets N_BW (bytes/s), N_LAT_P99 (us), N_ERR
nvme_fio() {
	local rc=0
	N_BW='' N_LAT_P99='' N_ERR=''
	timeout $((NVME_DUR + 60)) fio --name=bench --filename="$1" --rw="$2" --bs=128k \
		--ioengine=libaio --iodepth=16 --direct=1 --size=256M --runtime="$NVME_DUR" \
		--time_based --output-format=json --output=/tmp/bench_fio.json \
		>/tmp/bench_fio.err 2>&1 || rc=$?
	[ "$rc" = 0 ] || N_ERR="fio exit $rc: $(head -c 300 /tmp/bench_fio.err | tr -s '\n' ' ')"
	read -r N_BW N_LAT_P99 < <(python3 - "$2" <<-'PY' 2>/dev/null
		import json, sys
		t = open("/tmp/bench_fio.json").read()
		d = json.loads(t[t.find("{"):])["jobs"][0][sys.argv[1]]
		p = d.get("clat_ns", {}).get("percentile", {}).get("99.000000")
		print(d["bw_bytes"], round(p / 1000, 1) if p else "")
	PY
	)
}
scen_nvme() {
	local prov cond rw qb pct c0 c1 errs
	NVME_DUR=${METAROCE_BENCH_NVME_DUR:-$([ "$QUICK" = 1 ] && echo 8 || echo 15)}
	pct=${METAROCE_BENCH_NVME_LOSS:-1}
	command -v fio >/dev/null || { echo "bench: nvme needs fio (scripts/deps bench)" >&2; return 1; }
	bench_topo 9000 || return
	qb=$(qbytes)
	nvme_target || { echo "bench: nvmet target set-up failed" >&2; nvme_untarget; return 1; }
	for prov in "${PROVS[@]}"; do
		say "nvme: fio over nvme-rdma on $prov, lossless and at $pct % loss both ways"
		nvme_links "$prov" || { echo "bench: nvme: $prov links failed" >&2; continue; }
		nvme_port_up || { echo "bench: nvme: the target port on $prov failed" >&2; continue; }
		bench_prov rxe	# the init_net wires and their switch ports
		for cond in 0 "$pct"; do
			if [ "$cond" = 0 ]; then
				bench_shape 100 "$qb" - -
			else
				bench_shape 100 "$qb" "loss ${cond}%" "loss ${cond}%"
			fi
			rc_dmesg_mark
			nvme_connect || { echo "  $prov: connect failed"; nvme_disconnect; continue; }
			for rw in write read; do
				c0=$(bench_qstats)
				nvme_fio "$NVME_DEV" "$rw"
				c1=$(bench_qstats)
				printf '  %-8s loss %s %%: %-5s %s MB/s, p99 %s us %s\n' "$prov" "$cond" "$rw" \
					"$(python3 -c "print(round(${N_BW:-0} / 1e6, 2))")" "$N_LAT_P99" "$N_ERR"
				bench_record "\"scen\":\"nvme\",\"prov\":\"$prov\",\"rw\":\"$rw\",\"loss_pct\":$(jnum "$cond"),\"mtu\":9000,\"rate_mbit\":100,\"bs\":131072,\"iodepth\":16,\"dur_s\":$NVME_DUR,\"bw_bytes\":$(jnum "$N_BW"),\"clat_p99_us\":$(jnum "$N_LAT_P99"),\"error\":$(jstr "$N_ERR"),\"qdisc_before\":$c0,\"qdisc\":$c1"
			done
			nvme_disconnect
			errs=$(rc_dmesg_new | grep -a -i "nvme.*\(error\|reconnect\|timeout\|reset\)\|I/O error" | head -n 3)
			[ -z "$errs" ] || echo "  $prov: kernel: $errs"
		done
		nvme_port_down
	done
	nvme_untarget
	# the other scenarios expect rxe0/rxe1 on the init_net wires
	nvme_links rxe
	wait_for 10 rxe_gid_index rxe0 "$RXE_A_IP"
	wait_for 10 rxe_gid_index rxe1 "$RXE_B_IP"
	BENCH_RXE_GID_A=$(rxe_gid_index rxe0 "$RXE_A_IP")
	BENCH_RXE_GID_B=$(rxe_gid_index rxe1 "$RXE_B_IP")
}

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

#!/bin/bash
# rdma-core 56.1's own test suite (tests/run_tests.py, with the pyverbs built
# from the same tree by scripts/build-rdma-core) on a metaroce device, and on
# rxe in the same guest as the baseline.
# vm-test-timeout: 1100
#
# Setup: the suite runs in one process and connects QPs of ONE device to
# each other (client and server share the device, port and GID), so each
# provider gets a single device: metaroce mrcA on eth0 in namespace hostA
# (the suite runs inside hostA; the QPs talk through the namespace's
# loopback), rxe rxe0 on a veth in init_net (rxe's internal loopback). Both
# use the RoCE v2 GID of their IPv4 address (--gid), MTU 1500. The devices
# exist one after the other, never together.
#
# Tests run one at a time (tests/lib/rdma_core_suite.py): a test that hangs
# is killed after MRC_SUITE_TIMEOUT s (default 90) and counts as "timeout",
# one that kills the process as "crash"; the run carries on after it.
#
# metaroce's outcomes are compared with tests/vm/rdma-core-suite.expected
# (one line per test: TEST-ID OUTCOME [MESSAGE] [## NOTE]); a test that
# fails, errors, times out or skips when the file expects otherwise is a
# failure. A known failure (in the file as fail/error with a "BUG" note)
# is shown as a TAP TODO line. A test that now does better than the file
# says (a known failure or a skip now passes) is reported as a "# NOTE"
# line: update the file.
# rxe's outcomes are reported, not graded: a diag line gives the counts of
# both, and "metaroce passes at least as many tests as rxe" is a TAP TODO
# (listing what rxe passes and metaroce does not) until it holds.
# Runtime on the loaded 2-CPU test machine: metaroce and rxe ~100 s each
# plus ~30 s of setup (each of the 7 rdma_cm tests takes 17 s when it skips,
# 35 s when it hangs); each provider is cut off after MRC_SUITE_DEADLINE.
#
# Results of a run (under the run's output directory, $METAROCE_OUT):
#   rdma-core-suite.metaroce.results / .log   one line per test / tracebacks
#   rdma-core-suite.rxe.results / .log
# Regenerate the expected file from a run (keeps the "## NOTE"s of tests
# whose outcome did not change; a new failure gets "## BUG: not analysed
# yet" -- replace that with the bug's description):
#   tests/run-vm-tests --out /tmp/rcs 55-rdma-core-suite
#   tests/lib/rdma_core_suite.py regen /tmp/rcs/rdma-core-suite.metaroce.results \
#       --expected tests/vm/rdma-core-suite.expected >/tmp/new.expected &&
#       mv /tmp/new.expected tests/vm/rdma-core-suite.expected
#
# Environment (passed into the guest):
#   MRC_SUITE_ONLY="PAT..."     only tests whose id contains a PAT (quick
#                               runs; the comparison then covers those only)
#   MRC_SUITE_PROVIDERS="metaroce rxe"   which providers to run
#   MRC_SUITE_TIMEOUT=S         per-test limit (default 90)
#   MRC_SUITE_DEADLINE=S        per-provider limit for the whole suite
#                               (default 480); tests not reached: "notrun"
#   MRC_SUITE_PROGRESS=1        a "# OUTCOME SECS TEST" line per test
#   MRC_SUITE_SEED=S            seed of the suite's random attributes, per
#                               test (default 0; "none" for unseeded runs:
#                               some outcomes then vary, see the .expected)
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
trap topo_cleanup EXIT

REPO=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd -P)
RUNNER=$REPO/tests/lib/rdma_core_suite.py
EXPECTED=$REPO/tests/vm/rdma-core-suite.expected
RC_BASE=${METAROCE_CACHE:-/var/cache/metaroce}/rdma-core-56.1
SRC=$RC_BASE/src
PYV=$RC_BASE/build/python
OUT=${METAROCE_OUT:-/tmp}
PY=/usr/bin/python3
: "${MRC_SUITE_PROVIDERS:=metaroce rxe}" "${MRC_SUITE_TIMEOUT:=90}" "${MRC_SUITE_DEADLINE:=480}"
read -ra ONLY <<<"${MRC_SUITE_ONLY:-}"
only_args=()
for p in "${ONLY[@]}"; do only_args+=(--only "$p"); done
[ "${MRC_SUITE_PROGRESS:-0}" = 0 ] || only_args+=(--progress)
only_args+=(--seed "${MRC_SUITE_SEED:-0}")

runner() { PYTHONPATH=$PYV "$PY" "$RUNNER" "$@"; }

if [ ! -f "$SRC/tests/run_tests.py" ] || ! compgen -G "$PYV/pyverbs/device.*.so" >/dev/null; then
	t_skip "rdma-core 56.1 test suite" "no $SRC/tests or no pyverbs in $PYV (scripts/build-rdma-core)"
	t_summary
	exit
fi

# The prefix must hold this checkout's provider (a stale one would be
# graded against an expected file written for another): scripts/build-rdma-core
# records the digest of the sources it built (same formula as its
# provider_hash).
provider_current() {
	local want have
	have=$(cat "$RC_BASE/prefix/share/metaroce/provider.sha256" 2>/dev/null)
	want=$(cd "$REPO" && find providers/metaroce uapi/rdma/metaroce-abi.h -type f \
		! -name '*~' ! -name '.*' -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
	[ -n "$have" ] && [ "$have" = "$want" ]
}
if ! t_check "the provider in $RC_BASE/prefix is this checkout's" provider_current; then
	t_diag "rebuild it: METAROCE_CACHE=${RC_BASE%/rdma-core-56.1} scripts/build-rdma-core"
fi

# run_suite NAME DEV GID [in_host NS]: run the suite, results in
# $OUT/rdma-core-suite.NAME.results; sets COUNTS_<NAME>
run_suite() {
	local name=$1 dev=$2 gid=$3 res=$OUT/rdma-core-suite.$1.results start n
	shift 3
	start=$SECONDS
	"$@" env PYTHONPATH="$PYV" "$PY" "$RUNNER" run --src "$SRC" --dev "$dev" --gid "$gid" \
		--timeout "$MRC_SUITE_TIMEOUT" --deadline "$MRC_SUITE_DEADLINE" \
		--results "$res" --log "$OUT/rdma-core-suite.$name.log" "${only_args[@]}"
	n=0
	[ -f "$res" ] && n=$(grep -c . "$res")
	local c
	c=$(runner counts "$res" 2>&1)
	printf -v "COUNTS_$name" '%s' "$c"
	if [ "$n" -gt 0 ] && ! grep -q $'\tnotrun\t' "$res"; then
		t_ok "$name: the suite ran to completion ($n tests in $((SECONDS - start)) s)"
	else
		t_fail "$name: the suite ran to completion ($n tests in $((SECONDS - start)) s)" \
			"$c" "$(tail -n 20 "$OUT/rdma-core-suite.$name.log" 2>/dev/null)"
	fi
}

COUNTS_metaroce='not run' COUNTS_rxe='not run'
# no results of an earlier run in the same directory
rm -f "$OUT"/rdma-core-suite.*.results "$OUT"/rdma-core-suite.*.log

# --- metaroce -------------------------------------------------------------------
metaroce_suite() {
	t_check "metaroce: hostA with eth0 ($TOPO_A_IP)" topo_two_hosts || return
	t_check "metaroce: rdma link add mrcA (hostA eth0)" \
		in_host "$TOPO_A" rdma link add mrcA type metaroce netdev "$TOPO_DEV" || return
	wait_for 10 rxe_gid_index mrcA "$TOPO_A_IP"
	local gid out
	gid=$(rxe_gid_index mrcA "$TOPO_A_IP") || { t_fail "metaroce: RoCE v2 GID of $TOPO_A_IP"; return; }
	run_suite metaroce mrcA "$gid" in_host "$TOPO_A"
	if [ ! -f "$EXPECTED" ]; then
		t_fail "metaroce: no unexpected outcomes" "no $EXPECTED (regenerate it, see the header)"
	else
		local rc=0
		out=$(runner compare "$EXPECTED" "$OUT/rdma-core-suite.metaroce.results" 2>&1) || rc=$?
		if [ ${#ONLY[@]} -gt 0 ]; then
			# a partial run: tests outside the selection did not run
			out=$(grep -v 'did not run (missing from the results)' <<<"$out")
			grep -q '^UNEXPECTED' <<<"$out" || rc=0
		fi
		if [ "$rc" -eq 0 ]; then
			t_ok "metaroce: no unexpected outcomes (vs ${EXPECTED#"$REPO"/})"
		else
			t_fail "metaroce: no unexpected outcomes (vs ${EXPECTED#"$REPO"/})" \
				"$(grep '^UNEXPECTED' <<<"$out" || echo "$out")"
		fi
		# known bugs (expected failures): shown in every run as TAP TODO
		local l tid
		while IFS= read -r l; do
			tid=${l#KNOWN } tid=${tid%%: *}
			t_todo "metaroce: ${tid#tests.} fails as expected" "known bug, see ${EXPECTED#"$REPO"/}" "${l#KNOWN "$tid": }"
		done < <(grep '^KNOWN' <<<"$out")
		grep '^NOTE' <<<"$out" | while IFS= read -r l; do t_diag "$l"; done
	fi
	rdma link delete mrcA
}

# --- rxe ---------------------------------------------------------------------------
rxe_suite() {
	_topo_sw_ns
	ip link del "$RXE_A_DEV" >/dev/null 2>&1
	# shellcheck disable=SC2317 # called through t_check
	rxe_net() {
		_ipb - <<-EOF || return
			link add $RXE_A_DEV type veth peer name $RXE_PORT_A netns $TOPO_SW
			addr add $RXE_A_IP/24 dev $RXE_A_DEV
			link set $RXE_A_DEV up
		EOF
		ip -n "$TOPO_SW" link set "$RXE_PORT_A" up
	}
	t_check "rxe: $RXE_A_DEV in init_net ($RXE_A_IP)" rxe_net || return
	t_check "rxe: rdma link add rxe0 ($RXE_A_DEV)" rxe_add rxe0 "$RXE_A_DEV" || return
	wait_for 10 rxe_gid_index rxe0 "$RXE_A_IP"
	local gid
	gid=$(rxe_gid_index rxe0 "$RXE_A_IP") || { t_fail "rxe: RoCE v2 GID of $RXE_A_IP"; return; }
	run_suite rxe rxe0 "$gid"
	rdma link delete rxe0
}

for p in $MRC_SUITE_PROVIDERS; do
	case $p in
	metaroce) metaroce_suite ;;
	rxe) rxe_suite ;;
	*) t_fail "unknown provider $p in MRC_SUITE_PROVIDERS" ;;
	esac
done

t_diag "metaroce: $COUNTS_metaroce; rxe: $COUNTS_rxe"
# the issue's goal: metaroce passes at least what rxe passes
mres=$OUT/rdma-core-suite.metaroce.results rres=$OUT/rdma-core-suite.rxe.results
if [ -f "$mres" ] && [ -f "$rres" ]; then
	passes() { awk -F'\t' '$2 == "pass" || $2 == "xfail" { n++ } END { print n + 0 }' "$1"; }
	mp=$(passes "$mres") rp=$(passes "$rres")
	gap=$(runner gap "$mres" "$rres")
	if [ "$mp" -ge "$rp" ]; then
		t_ok "metaroce passes at least as many tests as rxe ($mp, rxe $rp)"
	else
		t_todo "metaroce passes at least as many tests as rxe ($mp, rxe $rp)" \
			"missing features, see rdma-core-suite.expected" \
			"$(printf '%s\n' "rxe passes, metaroce does not (count, metaroce's outcome and message):" "$gap")"
	fi
fi
t_summary

#!/bin/bash
# Guest smoke run of the lower tester (until tests/conformance/run takes
# over): dut and tst namespaces on a veth pair, the agent on the DUT's
# metaroce device, mrct on the tester side.  Run through the VM lock:
#   flock /tmp/metaroce-vm.lock scripts/vm-run --timeout 600 \
#       tests/conformance/lower/smoke.sh [CASE...]
set -u
cd "$(dirname "$0")/.." || exit 1
out=${METAROCE_OUT:-/tmp}/conf
mkdir -p "$out"
ip netns add dut && ip netns add tst || exit 1
ip link add veth-dut netns dut type veth peer name veth-tst netns tst
ip -n dut addr add 10.77.0.1/24 dev veth-dut
ip -n dut addr add fd77::1/64 dev veth-dut nodad
ip -n tst addr add 10.77.0.2/24 dev veth-tst
ip -n tst addr add fd77::2/64 dev veth-tst nodad
for ns in dut tst; do
	ip -n $ns link set lo up
	ip -n $ns link set veth-$ns up
done
# checksums written before the capture sees them (monitor: valid checksum)
ip netns exec dut ethtool -K veth-dut tx off >/dev/null 2>&1
ip netns exec dut rdma link add mrcD type metaroce netdev veth-dut || exit 1
sock=/run/mrct-agent.sock
rm -f $sock
ip netns exec dut agent/mrct-agent --dev mrcD --unix $sock &
apid=$!
for _ in $(seq 50); do [ -S $sock ] && break; sleep 0.1; done
[ -n "${1:-}" ] || set -- 'cases/*.mrct'
# patterns are expanded here, relative to tests/conformance
# shellcheck disable=SC2048,SC2086
set -- $*
ip netns exec tst lower/mrct --if veth-tst --agent $sock \
	--self4 10.77.0.2 --peer4 10.77.0.1 --self6 fd77::2 --peer6 fd77::1 \
	--pics pics/metaroce-reference.conf --waivers waivers.txt --out "$out" \
	${MRCT_ARGS:-} "$@"
rc=$?
kill $apid
ls "$out"
exit $rc

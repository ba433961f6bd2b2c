#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# In the guest: two mrct-agents on two metaroce devices in two namespaces
# (tests/lib/rc.sh rc_setup), driven through their UNIX sockets by
# agent-selftest loopback, which connects them to each other and moves
# CHECKed data both ways.  TAP on stdout; status 0 only if all passed.
#
#   tests/conformance/agent/agent-loopback.sh [OUTDIR]
set -uo pipefail
here=$(cd "${BASH_SOURCE[0]%/*}" && pwd -P)
# shellcheck source=tests/lib/guest.sh
. "$here/../../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "$here/../../lib/rc.sh"
out=${1:-/tmp/agent-loopback}
mkdir -p "$out"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	topo_cleanup
}
trap cleanup EXIT

agent=$here/mrct-agent
if ! [ -x "$agent" ] || [ "$agent.c" -nt "$agent" ]; then
	make -s -C "$here" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
fi
rc_setup >"$out/setup.log" 2>&1 || { echo "not ok 1 - two metaroce hosts"; cat "$out/setup.log"; exit 1; }
for h in A B; do
	if [ $h = A ]; then ns=$TOPO_A dev=$RC_DEV_A; else ns=$TOPO_B dev=$RC_DEV_B; fi
	rm -f "$out/agent$h.sock"
	ip netns exec "$ns" "$agent" --dev "$dev" --unix "$out/agent$h.sock" \
		>"$out/agent$h.log" 2>&1 &
	pids+=($!)
done
wait_for 10 test -S "$out/agentA.sock" -a -S "$out/agentB.sock"
"$here/agent-selftest" loopback "$out/agentA.sock" "$out/agentB.sock"
rc=$?
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null || { echo "# an agent died:"; cat "$out"/agent?.log; rc=1; }
done
exit $rc

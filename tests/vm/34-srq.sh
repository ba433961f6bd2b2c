#!/bin/bash
# SRQ receive WQEs when a QP that took them goes away, and module parameters
# that are clamped where they are read.
# a) mrc_srqgone: N receives on an SRQ; responders on it are destroyed (not
#    in the error state) while multi-packet SENDs arrive; a last responder
#    must then get every receive not completed yet (data checked), each
#    once, and then find the SRQ empty (RNR).  The tool talks to itself
#    through lo, delayed and lossy here so that messages are under way.
# b) credit_hold_us above its limit is clamped, with a warning, at rdma
#    link add.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

rc_dmesg_mark
if ! rc_setup >/tmp/rc_setup.log 2>&1; then
	t_fail "two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
	t_summary
	exit 1
fi
t_ok "two hosts with metaroce devices (GID index $GID_A / $GID_B)"

# --- a) SRQ WQEs held by a destroyed QP ----------------------------------------
srqgone=$RC_REPO/tests/tools/mrc_srqgone
[ -x "$srqgone" ] && ! [ "$srqgone.c" -nt "$srqgone" ] ||
	make -s -C "$RC_REPO/tests/tools" mrc_srqgone >/dev/null 2>&1
# loopback through the device's own GID: delay and loss on lo keep messages
# under way when a responder is destroyed (without, all have arrived)
in_host "$TOPO_A" tc qdisc add dev lo root netem delay 5ms loss 2%
for run in 1 2; do
	if out=$(in_host "$TOPO_A" timeout 120 "$srqgone" "$RC_DEV_A" "$GID_A" 4 2>&1); then
		t_ok "run $run: every SRQ receive completes once after responders were destroyed mid-stream: ${out#srqgone: ok }"
	else
		t_fail "run $run: every SRQ receive completes once after responders were destroyed mid-stream" "$out"
	fi
done
in_host "$TOPO_A" tc qdisc del dev lo root
qps=$(in_host "$TOPO_A" rdma res show qp 2>/dev/null | grep -c "type RC" || true)
t_check "no QP of the tool left ($qps)" [ "$qps" -eq 0 ]

# --- b) credit_hold_us clamped -------------------------------------------------
P=/sys/module/rdma_metaroce/parameters/credit_hold_us
old=$(cat "$P")
in_host "$TOPO_B" rdma link del "$RC_DEV_B"
echo 4294967295 >"$P"
in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV"
now=$(cat "$P")
echo "$old" >"$P"
t_check "credit_hold_us 4294967295 is clamped to 1000000 at link add (reads $now)" \
	[ "$now" = 1000000 ]
if dmesg | tail -n +$((RC_DMESG_MARK + 1)) | grep -q "credit_hold_us 4294967295 is above the limit 1000000"; then
	t_ok "the clamp is logged"
else
	t_fail "the clamp is logged" "$(dmesg | tail -n 5)"
fi

t_diag "at ${SECONDS}s"
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

#!/bin/bash
# SRQ receive WQEs when a QP that took them goes away, SRQ resize with
# receives posted, and a module parameter that refuses values above its limit.
# a) mrc_srqgone: N receives on an SRQ; responders on it are destroyed (not
#    in the error state) while multi-packet SENDs arrive; a last responder
#    must then get every receive not completed yet (data checked), each
#    once, and then find the SRQ empty (RNR).  The SRQ limit, armed at the
#    receives left, fires at the first one taken even if it was given
#    back by a destroyed responder.  The tool talks to itself
#    through lo, delayed and lossy here so that messages are under way.
# b) mrc_srqresize: an SRQ resized with receives posted keeps them in
#    order and uses its new room; resizes below the posted count or the
#    limit, and hand-made commands with bad driver data, are refused.
# c) credit_hold_us above its limit is refused when written; the limit
#    itself is taken.
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
		t_ok "run $run: every SRQ receive completes once after responders were destroyed mid-stream, the limit event counts given-back ones: ${out#srqgone: ok }"
	else
		t_fail "run $run: every SRQ receive completes once after responders were destroyed mid-stream, the limit event counts given-back ones" "$out"
	fi
done
in_host "$TOPO_A" tc qdisc del dev lo root
qps=$(in_host "$TOPO_A" rdma res show qp 2>/dev/null | grep -c "type RC" || true)
t_check "no QP of the tool left ($qps)" [ "$qps" -eq 0 ]

# --- b) SRQ resize with receives posted ----------------------------------------
resize=$RC_REPO/tests/tools/mrc_srqresize
[ -x "$resize" ] && ! [ "$resize.c" -nt "$resize" ] ||
	make -s -C "$RC_REPO/tests/tools" mrc_srqresize >/dev/null 2>&1
if out=$(in_host "$TOPO_A" timeout 120 "$resize" "$RC_DEV_A" "$GID_A" 2>&1); then
	t_ok "SRQ resized with receives posted: they move in order, the new room is used, bad resizes refused: ${out#srqresize: ok }"
else
	t_fail "SRQ resized with receives posted: they move in order, the new room is used, bad resizes refused" "$out"
fi
qps=$(in_host "$TOPO_A" rdma res show qp 2>/dev/null | grep -c "type RC" || true)
t_check "no QP of mrc_srqresize left ($qps)" [ "$qps" -eq 0 ]

# --- c) credit_hold_us refused above its limit ---------------------------------
P=/sys/module/rdma_metaroce/parameters/credit_hold_us
old=$(cat "$P")
if (echo 4294967295 >"$P") 2>/dev/null; then wrc=0; else wrc=1; fi
now=$(cat "$P")
t_check "credit_hold_us 4294967295 is refused (write failed: $wrc, reads $now, was $old)" \
	[ "$wrc:$now" = "1:$old" ]
if (echo 1000001 >"$P") 2>/dev/null; then wrc=0; else wrc=1; fi
t_check "credit_hold_us 1000001 is refused (write failed: $wrc)" [ "$wrc" = 1 ]
echo 1000000 >"$P"
now=$(cat "$P")
in_host "$TOPO_B" rdma link del "$RC_DEV_B"
in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV"
lrc=$?
echo "$old" >"$P"
t_check "credit_hold_us 1000000 is taken, and a link added with it (reads $now, link add $lrc)" \
	[ "$now:$lrc" = 1000000:0 ]

t_diag "at ${SECONDS}s"
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

#!/bin/bash
# Memory windows (issue 45): tests/tools/mrc_mw binds type 1 and type 2
# windows and moves data through them, checks that an access past a
# window, through another QP, or after LOCAL_INV, SEND_WITH_INV or a
# zero-length bind is refused with a remote access error, that bad binds
# complete with IBV_WC_MW_BIND_ERR, that a window's key is no local key
# and that an MR with a window bound cannot be deregistered.  The tool
# talks to itself through the device's own GID.
# vm-test-timeout: 180
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

caps=$(in_host "$TOPO_A" ibv_devinfo -v -d "$RC_DEV_A" 2>/dev/null)
t_check "the device says it has type 1 and 2B windows ($(grep -o 'max_mw:[[:space:]]*[0-9]*' <<<"$caps" | tr -s ' \t' ' '))" \
	grep -q 'MEM_WINDOW_TYPE_2B' <<<"$caps"

mw=$RC_REPO/tests/tools/mrc_mw
[ -x "$mw" ] && ! [ "$mw.c" -nt "$mw" ] ||
	make -s -C "$RC_REPO/tests/tools" mrc_mw >/dev/null 2>&1
for run in 1 2; do
	if out=$(in_host "$TOPO_A" timeout 120 "$mw" "$RC_DEV_A" "$GID_A" 2>&1); then
		t_ok "run $run: windows grant what they were bound for and nothing else: ${out#mw: ok }"
	else
		t_fail "run $run: windows grant what they were bound for and nothing else" "$out"
	fi
done
qps=$(in_host "$TOPO_A" rdma res show qp 2>/dev/null | grep -c "type RC" || true)
t_check "no QP of the tool left ($qps)" [ "$qps" -eq 0 ]
mrs=$(in_host "$TOPO_A" rdma res show mr 2>/dev/null | grep -c "$RC_DEV_A" || true)
t_check "no MR or window of the tool left ($mrs)" [ "$mrs" -eq 0 ]

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

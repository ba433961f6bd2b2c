#!/bin/bash
# Local misuse of a metaroce device, by a provider and by kernel ULPs
# (review findings L3, L4, L5 and C4 of issue 42):
#  - L4: a provider that writes the SQ producer index backwards (below what
#    the kernel already took) gets IBV_WC_LOC_QP_OP_ERR at once and its QP
#    in ERR (tests/tools/mrc_sqback); the device still works (mrc_selfqp);
#  - with the test ULP module tests/kmod/mrc_ulp_test.ko (make kmod; built
#    here against the running kernel if it was not built for it, the
#    checks skip if it cannot be built):
#    - L3 "dma": get_dma_mr with a remote access flag fails with
#      EOPNOTSUPP, a local one works, IB_PD_UNSAFE_GLOBAL_RKEY is refused;
#    - C4 "irq": sends and receives posted with IRQs off, from a timer and
#      from a hard-IRQ hrtimer all arrive intact; posting leaves IRQs off;
#      the CQ handler runs in task context with IRQs on and may post to
#      the QP at once; no kernel warning;
#    - L5 "inline": an inline send one byte over max_inline and one whose
#      SGE lengths wrap a u32 are refused with EINVAL (no oops), and the QP
#      still carries verified messages;
#    - issue 45 "frwr": fast registration for kernel ULPs: alloc_mr (other
#      types refused), map_mr_sg over three separate pages, REG_MR with an
#      updated key byte, a WRITE and a READ through it verified byte for
#      byte; after LOCAL_INV the key fails remotely (REM_ACCESS_ERR, pages
#      unchanged, both QPs in ERR) and locally (LOC_PROT_ERR); a new
#      registration works and the stale key is refused; REG_MR of a valid
#      MR is refused; SEND_WITH_INV invalidates (IB_WC_WITH_INVALIDATE,
#      invalidate_rkey, then the key fails) and one naming a DMA MR's key
#      or a stale key fails with IB_WC_REM_INV_REQ_ERR at both ends;
#  - no kernel warnings after each part.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT
TOOLS=$RC_REPO/tests/tools
KMOD_SRC=$RC_REPO/tests/kmod
RUN=/sys/kernel/debug/mrc_ulp_test/run

rc_dmesg_mark
rc_hosts --mtu 9000

dmesg_check() {
	local bad
	bad=$(rc_dmesg_bad)
	if [ -z "$bad" ]; then t_ok "$1: no kernel warnings"; else t_fail "$1: no kernel warnings" "$bad"; fi
	rc_dmesg_mark
}

# --- L4: SQ producer index moved backwards ----------------------------------------
for p in mrc_sqback mrc_selfqp; do
	[ -x "$TOOLS/$p" ] && ! [ "$TOOLS/$p.c" -nt "$TOOLS/$p" ] ||
		make -s -C "$TOOLS" "$p" >/tmp/sqback_build.log 2>&1
done
if [ ! -x "$TOOLS/mrc_sqback" ]; then
	t_fail "mrc_sqback built" "$(cat /tmp/sqback_build.log)"
else
	rc=0
	out=$(in_host "$TOPO_A" timeout 60 "$TOOLS/mrc_sqback" "$RC_DEV_A" "$GID_A" 2>&1) || rc=$?
	if [ "$rc" -eq 0 ] && [[ $out == *"sqback: ok"* ]]; then
		t_ok "SQ producer index moved backwards: a local QP error at once"
		t_diag "$(grep 'first completion' <<<"$out")"
	else
		t_fail "SQ producer index moved backwards: a local QP error at once" "exit $rc" "$out"
	fi
	t_check "the device still works (mrc_selfqp)" \
		in_host "$TOPO_A" timeout 60 "$TOOLS/mrc_selfqp" "$RC_DEV_A" "$GID_A"
fi
dmesg_check "L4"

# --- the test ULP module ---------------------------------------------------------------
# the prebuilt module if it is for this kernel; else build it here against
# this kernel's tree (Debian's headers, or the debug/RT kernel's build tree)
ulp_module() {
	local ko=$KMOD_SRC/mrc_ulp_test.ko kver kdir d
	kver=$(uname -r)
	if [ -f "$ko" ] && [ "$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)" = "$kver" ]; then
		echo "$ko"
		return 0
	fi
	# the debug kernel's build tree, or the RT kernel's unpacked headers
	for kdir in "/lib/modules/$kver/build" "${METAROCE_GUEST_KO%/module/*}/build" \
		"${METAROCE_GUEST_KO%/module/*}/root/usr/src/linux-headers-$kver"; do
		[ -f "$kdir/Makefile" ] || continue
		d=$(mktemp -d /tmp/ulpkmod.XXXXXX)
		cp "$KMOD_SRC/mrc_ulp_test.c" "$KMOD_SRC/Kbuild" "$d/"
		if make -s -C "$kdir" M="$d" modules >"$d/build.log" 2>&1 &&
			[ "$(modinfo -F vermagic "$d/mrc_ulp_test.ko" | cut -d' ' -f1)" = "$kver" ]; then
			echo "$d/mrc_ulp_test.ko"
			return 0
		fi
		cat "$d/build.log" >&2
	done
	return 1
}

# ulp_run CHECK DESC: one check of the module; its log lines as details
ulp_run() {
	local mark rc=0 lines
	mark=$(dmesg | wc -l)
	timeout 120 bash -c "echo $1 >$RUN" 2>/dev/null || rc=$?
	lines=$(dmesg | tail -n +$((mark + 1)) | grep -a "mrc_ulp_test: $1:")
	if [ "$rc" -eq 0 ] && grep -q "mrc_ulp_test: $1: ok" <<<"$lines"; then
		t_ok "$2"
		grep -v ': start on\|: ok$' <<<"$lines" | sed 's/.*mrc_ulp_test: //' |
			while IFS= read -r l; do t_diag "$l"; done
	else
		t_fail "$2" "write exit $rc" "$lines"
	fi
	return "$rc"
}

if ! ko=$(ulp_module 2>/tmp/ulpkmod.log); then
	for c in L3 C4 FRWR L5; do
		t_skip "$c (test ULP module)" "mrc_ulp_test.ko cannot be built for $(uname -r): $(tail -n 3 /tmp/ulpkmod.log)"
	done
elif ! insmod "$ko" dev="$RC_DEV_A"; then
	t_fail "test ULP module loads ($ko)"
else
	t_ok "test ULP module loads"
	[ -e "$RUN" ] || mount -t debugfs none /sys/kernel/debug
	ulp_run dma "L3: no remote rights on the DMA MR, no unsafe global rkey"
	dmesg_check "L3"
	ulp_run irq "C4: posting with IRQs off and from timers; CQ handler in task context"
	dmesg_check "C4"
	ulp_run frwr "FRWR: REG_MR, LOCAL_INV and SEND_WITH_INV invalidate; stale keys refused"
	dmesg_check "FRWR"
	# last: without the fix, this one oopses with the QP's lock held
	if ulp_run inline "L5: inline lengths over max_inline refused, even when they wrap"; then
		t_check "test ULP module unloads" rmmod mrc_ulp_test
	fi
	dmesg_check "L5"
fi
t_summary

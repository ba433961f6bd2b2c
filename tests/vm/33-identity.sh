#!/bin/bash
# Identity and resource limits (tests/tools/mrc_ident):
#  - QP numbers are not sequential, never reused while alive, never 0/1;
#  - an SRQ's receive WQEs are checked against the SRQ's PD;
#  - memory keys: the index and the 8-bit key are not counters, no key is
#    handed out twice, re-registration gives a fresh key;
#  - RDMA netlink shows live PSNs (sq-psn, rq-psn, drv snd_una/snd_nxt/
#    rcv_nxt/rmsn_base) to root but not to an unprivileged user;
#  - the rdma cgroup's hca_object limit makes creation fail cleanly;
#  - a QP's rings and arrays are charged to its creator's memory cgroup.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"

IDENT=$RC_REPO/tests/tools/mrc_ident
DEV=$RC_DEV_A
CG='' HOLD_PID=''
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

cleanup() {
	[ -z "$HOLD_PID" ] || { kill "$HOLD_PID"; wait "$HOLD_PID"; } 2>/dev/null
	if [ -n "$CG" ]; then
		rmdir "$CG"/mrc_* 2>/dev/null
		umount "$CG" 2>/dev/null && rmdir "$CG"
	fi
	topo_cleanup
}
trap cleanup EXIT

# fraction test: "$1 of $2 pairs" below 10 %
under_10pct() { [ $(($1 * 10)) -lt "$2" ]; }

# consecutive differences of a column of decimal numbers equal to 1,
# modulo $2 (0: none); prints "HITS PAIRS"
count_steps() {
	awk -v m="$1" 'NR > 1 { d = $1 - p; if (m) d = (d % m + m) % m;
		if (d == 1) h++; n++ } { p = $1 }
		END { printf "%d %d\n", h, n }'
}

# hold: start mrc_ident ARGS in the background (in hostA), wait for "ready"
hold() {
	local out=$1
	shift
	# not through a function: $! must be the tool (ip netns exec execs it)
	ip netns exec "$TOPO_A" "$IDENT" -d "$DEV" "$@" -H >"$out" 2>&1 &
	HOLD_PID=$!
	wait_for 60 grep -qx ready "$out"
}
unhold() {
	kill "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID"
	local rc=$?
	HOLD_PID=''
	return "$rc"
}

rc_build_tools || { t_fail "build test tools"; t_summary; exit; }
[ -x "$IDENT" ] && ! [ "$IDENT.c" -nt "$IDENT" ] ||
	make -s -C "$RC_REPO/tests/tools" mrc_ident >/dev/null 2>&1 ||
	{ t_fail "build mrc_ident"; t_summary; exit; }
topo_two_hosts || { t_fail "two-host topology"; t_summary; exit; }
in_host "$TOPO_A" rdma link add "$DEV" type metaroce netdev "$TOPO_DEV" ||
	{ t_fail "rdma link add"; t_summary; exit; }
GID=$(rxe_gid_index "$DEV" "$TOPO_A_IP") || { t_fail "GID of $DEV"; t_summary; exit; }
rc_dmesg_mark

# --- QP numbers and memory keys -------------------------------------------------
NQ=64 NM=64 NR=32
if out=$(in_host "$TOPO_A" timeout 120 "$IDENT" -d "$DEV" -q $NQ -m $NM -r $NR 2>&1); then
	t_ok "$NQ QPs, $NM MRs and $NR re-registrations"
else
	t_fail "$NQ QPs, $NM MRs and $NR re-registrations" "$out"
fi
qpns=$(awk '$1 == "qp" { print $2 }' <<<"$out")
keys=$(awk '$1 == "mr" { print $2 }' <<<"$out")
rekeys=$(awk '$1 == "rereg" { print $2 }' <<<"$out")
t_diag "QPNs: $(head -n 8 <<<"$qpns" | tr '\n' ' ')..."
t_diag "keys: $(head -n 8 <<<"$keys" | awk '{ printf "0x%x ", $1 }')..."

read -r h n < <(count_steps 0 <<<"$qpns")
if [ "$n" -eq $((NQ - 1)) ] && under_10pct "$h" "$n"; then
	t_ok "QPNs are not sequential ($h of $n consecutive creations differ by 1)"
else
	t_fail "QPNs are not sequential" "$h of $n consecutive creations differ by 1"
fi
if [ "$(sort -u <<<"$qpns" | wc -l)" -eq "$NQ" ] &&
	awk '$1 < 16 || $1 > 16777215 { bad = 1 } END { exit bad }' <<<"$qpns"; then
	t_ok "QPNs of live QPs are distinct, 16..0xffffff"
else
	t_fail "QPNs of live QPs are distinct, 16..0xffffff" "$qpns"
fi

read -r h n < <(awk '{ print $1 % 256 }' <<<"$keys" | count_steps 256)
if [ "$n" -eq $((NM - 1)) ] && under_10pct "$h" "$n"; then
	t_ok "key bytes are not a counter ($h of $n steps of +1)"
else
	t_fail "key bytes are not a counter" "$h of $n steps of +1"
fi
read -r h n < <(awk '{ print int($1 / 256) }' <<<"$keys" | count_steps 0)
if [ "$n" -eq $((NM - 1)) ] && under_10pct "$h" "$n"; then
	t_ok "key indexes are not sequential ($h of $n steps of +1)"
else
	t_fail "key indexes are not sequential" "$h of $n steps of +1"
fi
if [ "$(sort -u <<<"$keys" | wc -l)" -eq "$NM" ] && ! grep -qx 0 <<<"$keys"; then
	t_ok "keys of live MRs are distinct and non-zero"
else
	t_fail "keys of live MRs are distinct and non-zero" "$keys"
fi
read -r h n < <(awk '{ print $1 % 256 }' <<<"$rekeys" | count_steps 256)
same=$(awk 'NR > 1 && $1 == p { s++ } { p = $1 } END { print s + 0 }' <<<"$rekeys")
if [ "$n" -eq $((NR - 1)) ] && [ "$same" -eq 0 ] && under_10pct "$h" "$n"; then
	t_ok "re-registration: a fresh key each time, bytes not a counter ($h of $n)"
else
	t_fail "re-registration: a fresh key each time, bytes not a counter" \
		"$same repeats, $h of $n steps of +1"
fi

# --- an SRQ's receive buffers belong to the SRQ's PD ----------------------------
out=$(in_host "$TOPO_A" timeout 60 "$IDENT" -d "$DEV" -g "$GID" -P 2>&1)
if grep -qx "srq_pd ok" <<<"$out"; then
	t_ok "a SEND lands in an SRQ buffer registered in the SRQ's PD, not the QP's"
else
	t_fail "a SEND lands in an SRQ buffer registered in the SRQ's PD, not the QP's" "$out"
fi

t_diag "at ${SECONDS}s"
# --- live PSNs in RDMA netlink --------------------------------------------------
# prints "LQPN SQ_PSN RQ_PSN LIVE" per QP, LIVE = driver PSN/MSN fields shown
res_qps() {
	"$@" rdma -j -dd res show qp 2>/dev/null | jq -r '.. | objects | select(has("lqpn")) |
		"\(.lqpn) \(.["sq-psn"] // 0) \(.["rq-psn"] // 0) \([keys[] |
		select(test("snd_una|snd_nxt|rcv_nxt|rmsn_base"))] | length)"'
}
if hold /tmp/ident.hold -q 4 -g "$GID"; then
	mine=$(awk '$1 == "qp" { print $2, $3 }' /tmp/ident.hold)
	root=$(res_qps in_host "$TOPO_A")
	user=$(res_qps in_host "$TOPO_A" "${NOBODY[@]}")
	t_diag "QP PSN: $(tr '\n' ' ' <<<"$mine")"
	t_diag "root sees: $(tr '\n' ' ' <<<"$root")"
	t_diag "nobody sees: $(tr '\n' ' ' <<<"$user")"
	r_ok=0 u_ok=0 u_seen=0
	while read -r q psn; do
		# root: the PSNs as set, and the driver's 4 live fields
		grep -qx "$q $psn $psn 4" <<<"$root" && r_ok=$((r_ok + 1))
		grep -q "^$q " <<<"$user" && u_seen=$((u_seen + 1))
		grep -qx "$q 0 0 0" <<<"$user" && u_ok=$((u_ok + 1))
	done <<<"$mine"
	if [ "$r_ok" -eq 4 ]; then
		t_ok "root sees sq-psn, rq-psn and snd_una/snd_nxt/rcv_nxt/rmsn_base"
	else
		t_fail "root sees sq-psn, rq-psn and snd_una/snd_nxt/rcv_nxt/rmsn_base" "$r_ok of 4" \
			"$(in_host "$TOPO_A" rdma -j -dd res show qp | head -c 1500)"
	fi
	if [ "$u_seen" -eq 4 ] && [ "$u_ok" -eq 4 ]; then
		t_ok "an unprivileged user sees the QPs but no live PSN"
	else
		t_fail "an unprivileged user sees the QPs but no live PSN" \
			"listed $u_seen of 4, without PSNs $u_ok of 4"
	fi
	unhold
else
	t_fail "hold 4 connected QPs" "$(cat /tmp/ident.hold)"
	unhold
fi

t_diag "at ${SECONDS}s"
# --- cgroups: rdma objects and memory ---------------------------------------------
CG=/tmp/mrc-cg
mkdir -p "$CG"
if ! mount -t cgroup2 none "$CG" 2>/dev/null; then
	rmdir "$CG"
	CG=''
fi
ctrl=$( [ -n "$CG" ] && cat "$CG/cgroup.controllers")
# run_in_cg GROUP CMD...: CMD in cgroup GROUP
run_in_cg() {
	local g=$CG/$1
	shift
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$g" "$@"
}
if [[ " $ctrl " == *" rdma "* ]]; then
	echo +rdma >"$CG/cgroup.subtree_control"
	mkdir "$CG/mrc_rdma"
	N=10
	echo "$DEV hca_handle=2 hca_object=$N" >"$CG/mrc_rdma/rdma.max"
	out=$(run_in_cg mrc_rdma ip netns exec "$TOPO_A" timeout 60 "$IDENT" -d "$DEV" -q 50 -f 2>&1)
	rc=$?
	nq=$(awk '$1 == "created" { print $7 }' <<<"$out")
	err=$(awk '$1 == "fail" { print $3 }' <<<"$out")
	if [ "$rc" -eq 0 ] && [ "${nq:-x}" = $((N - 2)) ] && [[ $err == 11 || $err == 12 ]]; then
		t_ok "rdma.max hca_object=$N: PD, CQ and $nq QPs, then errno $err"
	else
		t_fail "rdma.max hca_object=$N: PD, CQ and $((N - 2)) QPs, then an error" "rc $rc: $out"
	fi
	out=$(run_in_cg mrc_rdma ip netns exec "$TOPO_A" timeout 60 "$IDENT" -d "$DEV" -m 50 -f 2>&1)
	rc=$?
	nm=$(awk '$1 == "created" { print $9 }' <<<"$out")
	if [ "$rc" -eq 0 ] && [ "${nm:-x}" = $((N - 2)) ] && grep -q '^fail mr' <<<"$out"; then
		t_ok "rdma.max hca_object=$N: $nm MRs, then an error"
	else
		t_fail "rdma.max hca_object=$N: $((N - 2)) MRs, then an error" "rc $rc: $out"
	fi
	cur=$(grep "^$DEV " "$CG/mrc_rdma/rdma.current")
	cur=${cur%% }	# the file has a trailing blank
	if [[ -z $cur || $cur == "$DEV hca_handle=0 hca_object=0" ]]; then
		t_ok "rdma.current back to 0 after exit"
	else
		t_fail "rdma.current back to 0 after exit" "$cur"
	fi
	# Lift the limits before the group goes: Linux (6.1, and upstream
	# as read in 2026-12) frees a cgroup whose unused rdma pool still has a limit
	# without unlinking the pool, and the device's removal then walks
	# freed memory (KASAN use-after-free in free_cg_rpool_locked() on
	# the debug kernel, from rdmacg_css_offline() leaving the pool).
	echo "$DEV hca_handle=max hca_object=max" >"$CG/mrc_rdma/rdma.max"
else
	t_skip "rdma cgroup limits" "no cgroup2 rdma controller ($ctrl)"
fi

# memory.current with one small QP, then with one of the largest
mem_held() {
	local cur
	HOLD_PID=''
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG/mrc_mem" \
		ip netns exec "$TOPO_A" "$IDENT" -d "$DEV" -q 1 "$@" -H \
		>/tmp/ident.mem 2>&1 &
	HOLD_PID=$!
	wait_for 60 grep -qx ready /tmp/ident.mem || { unhold; return 1; }
	read -r cur <"$CG/mrc_mem/memory.current"
	unhold
	echo "$cur"
}
if [[ " $ctrl " == *" memory "* ]]; then
	echo +memory >"$CG/cgroup.subtree_control"
	mkdir "$CG/mrc_mem"
	if small=$(mem_held -w 1) && big=$(mem_held -w 16384 -s 16 -i 1024); then
		d=$(((big - small) >> 20))
		# SQ ring 32 MiB + its kernel copy 32 + RQ ring 8 + swqe 6
		if [ "$d" -ge 48 ]; then
			t_ok "a 16384-deep QP is charged to its memcg (+$d MiB)"
		else
			t_fail "a 16384-deep QP is charged to its memcg" "+$d MiB ($small -> $big)"
		fi
	else
		t_fail "hold a QP in a memory cgroup" "$(cat /tmp/ident.mem)"
	fi
else
	t_skip "memcg charge" "no cgroup2 memory controller ($ctrl)"
fi

t_diag "at ${SECONDS}s"
bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

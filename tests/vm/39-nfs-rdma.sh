#!/bin/bash
# NFS over RDMA across metaroce (issue 45): the kernel's NFS server (nfsd,
# its RDMA listener on port 20049) exporting a tmpfs directory, and the
# kernel's NFS client mounting it with -o rdma (NFSv4.2), both xprtrdma/
# svcrdma kernel ULPs using fast registration, across a link with 1 %
# random loss each way.  Same topology as 39-nvme-of: the metaroce devices
# sit on the init_net ends of the rxe topology (kernel ULPs open their
# rdma_cm IDs in init_net) and policy routing sends A <-> B through the
# switch namespace, where netem drops.  The client resolves the server's
# address without a source address: one more rule sends that, too, out of
# A's end.  NFSv4 only, so the one daemon is rpc.mountd (no rpcbind, no
# lockd/statd); the grace period is ended at once.  Files of mixed sizes,
# 260 MiB in all, are copied onto the mount and read back after a remount
# with caches dropped: sha256 equal; the mount is proto=rdma with metaroce
# QPs at both ends; metaroce sent twice the data and netem dropped packets
# both ways; each mount connected once and sent each RPC once (xprtrdma
# logs no reconnect: /proc/self/mountstats); no rpcrdma/svcrdma or nfs
# error, timeout or "not responding" and no kernel warning is logged.
# The debug kernel has no NFS: the file skips there.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
LOSS=1% PORT=20049 RULE_PREF=102
EXP=/dev/shm/mrc-nfs-export SRC=/dev/shm/mrc-nfs-src MNT=/tmp/mrc-nfs-mnt
LOG=/tmp/mrc-nfs-mountd.log
mountd_pid='' nfsd_fs=0 nfsd_up=0 exported=0 rule=0
cleanup() {
	if mountpoint -q "$MNT" 2>/dev/null; then
		timeout 60 umount "$MNT" 2>/dev/null || umount -f -l "$MNT" 2>/dev/null
	fi
	[ "$nfsd_up" = 1 ] && timeout 60 rpc.nfsd 0 2>/dev/null
	[ "$exported" = 1 ] && exportfs -ua 2>/dev/null
	if [ -n "$mountd_pid" ]; then
		kill "$mountd_pid" 2>/dev/null
		wait "$mountd_pid" 2>/dev/null
	fi
	[ "$nfsd_fs" = 1 ] && umount /proc/fs/nfsd 2>/dev/null
	[ "$rule" = 1 ] && ip rule del pref "$RULE_PREF" 2>/dev/null
	rm -rf "$EXP" "$SRC" "$LOG"
	rmdir "$MNT" 2>/dev/null
	topo_cleanup
}
trap cleanup EXIT
# fail WHAT: the step that failed, the kernel's last lines, and stop
fail() {
	t_fail "$1" "$(dmesg | tail -n 20)" "${2:-}"
	t_summary
	exit 1
}

# a kernel without them (the debug kernel is built without NFS) has
# nothing to test here
if ! modinfo -n nfsd nfsv4 rpcrdma >/dev/null 2>&1; then
	t_skip "NFS over RDMA" "kernel $(uname -r) has no nfsd, nfsv4 or rpcrdma"
	t_summary
	exit 0
fi
topo_rxe_two_hosts --mtu 9000 || fail "topology"
# rpcrdma resolves the server's address with no source address: from A's end
ip rule add pref "$RULE_PREF" iif lo to "$RXE_B_IP" lookup "$RXE_TABLE_A" || fail "route to B via A"
rule=1
rdma link add mrcA type metaroce netdev "$RXE_A_DEV" || fail "mrcA"
rdma link add mrcB type metaroce netdev "$RXE_B_DEV" || fail "mrcB"
link_shape "$TOPO_SW" "$RXE_PORT_A" loss "$LOSS" || fail "netem A"
link_shape "$TOPO_SW" "$RXE_PORT_B" loss "$LOSS" || fail "netem B"
modprobe -a nfsd nfsv4 rpcrdma || fail "modprobe nfsd nfsv4 rpcrdma"

# --- server: nfsd, v4 only, on tmpfs; mountd answers the export upcalls ----
rc_dmesg_mark
if ! mountpoint -q /proc/fs/nfsd; then
	mount -t nfsd nfsd /proc/fs/nfsd || fail "mount nfsd fs"
	nfsd_fs=1
fi
mkdir -p "$EXP" "$SRC" "$MNT" || fail "directories"
# tmpfs has no UUID: fsid=0 makes it the NFSv4 pseudo root as well
exportfs -o rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0 \
	"$RXE_A_IP:$EXP" || fail "exportfs"
exported=1
rpc.mountd -F -N 2 -N 3 >"$LOG" 2>&1 &
mountd_pid=$!
# the grace period (NFSv4 state reclaim) is ended below; 10 s is its
# minimum, should that fail
echo 10 >/proc/fs/nfsd/nfsv4gracetime
nfsd_up=1
rpc.nfsd -N 3 -H "$RXE_B_IP" 4 || fail "rpc.nfsd" "$(<"$LOG")"
echo "rdma $PORT" >/proc/fs/nfsd/portlist || fail "nfsd RDMA listener on port $PORT"
echo Y >/proc/fs/nfsd/v4_end_grace 2>/dev/null ||
	t_diag "grace period not ended early (no client tracking?): waiting it out"
kill -0 "$mountd_pid" 2>/dev/null || fail "rpc.mountd runs" "$(<"$LOG")"
plist=$(</proc/fs/nfsd/portlist)
[[ $plist == *"rdma $PORT"* ]] || fail "nfsd RDMA listener on port $PORT" "$plist"
t_ok "nfsd (versions $(</proc/fs/nfsd/versions), $(</proc/fs/nfsd/threads) threads) exports $EXP, listening on ${plist//$'\n'/, }; 1 % loss each way on the switch"

# --- client -------------------------------------------------------------------
b0=$(($(cat /sys/class/infiniband/mrcA/ports/1/hw_counters/tx_bytes) +
	$(cat /sys/class/infiniband/mrcB/ports/1/hw_counters/tx_bytes)))
read -r na0 </sys/class/infiniband/mrcA/ports/1/hw_counters/naks_sent
read -r nb0 </sys/class/infiniband/mrcB/ports/1/hw_counters/naks_sent
OPTS=rdma,port=$PORT,vers=4.2
mount_it() { timeout 120 mount -t nfs -o "$OPTS" "$RXE_B_IP:/" "$MNT"; }
# rpc_stats: add the mount's RPC transport connects, RPCs, transmissions
# and timeouts (/proc/self/mountstats) to CONNS, OPS, NTRANS, TMO: an RPC
# sent more than once, or a second connect, is a retransmission or a
# reconnect that xprtrdma does not log
CONNS=0 OPS=0 NTRANS=0 TMO=0
rpc_stats() {
	local l in=0 a
	while IFS= read -r l; do
		case $l in
		"device "*) [[ $l == *" mounted on $MNT with "* ]] && in=1 || in=0; continue ;;
		*"per-op statistics"*) [ "$in" = 0 ] || in=2; continue ;;
		esac
		[ "$in" != 0 ] || continue
		read -ra a <<<"$l"
		[ ${#a[@]} -ge 4 ] || continue
		if [ "${a[0]}" = xprt: ] && [ "${a[1]}" = rdma ]; then
			CONNS=$((CONNS + a[4]))
		elif [ "$in" = 2 ]; then
			OPS=$((OPS + a[1])) NTRANS=$((NTRANS + a[2])) TMO=$((TMO + a[3]))
		fi
	done </proc/self/mountstats
}
mount_it || fail "mount -o $OPTS $RXE_B_IP:/"
mnt=''
while read -r dev m fs opts _; do
	[ "$m" = "$MNT" ] && mnt="$dev $fs $opts"
done </proc/mounts
qps=$(rdma resource show qp 2>/dev/null)
qa=$(grep -c 'link mrcA/.* type RC' <<<"$qps") qb=$(grep -c 'link mrcB/.* type RC' <<<"$qps")
desc="mounted over RDMA: proto=rdma, port=$PORT in /proc/mounts, metaroce RC QPs on both ends (mrcA $qa, mrcB $qb)"
if [[ $mnt == *proto=rdma,* && $mnt == *port=$PORT,* ]] && [ "$qa" -gt 0 ] && [ "$qb" -gt 0 ]; then
	t_ok "$desc"
	t_diag "$mnt"
else
	t_fail "$desc" "mount: $mnt" "$qps"
fi

# --- data: mixed sizes, a few large, many small --------------------------------
# MiB:bytes more
for f in 100:1 64:-1 48:4097 24:0 12:333 8:0; do
	n=$(((${f%:*} << 20) + ${f#*:}))
	head -c "$n" /dev/urandom >"$SRC/f$n" || fail "source file of $n bytes"
done
# 4 MiB in 33 files of 127 KiB + 1 byte (the last one shorter)
head -c 4M /dev/urandom | split -b 130049 - "$SRC/small." || fail "small source files"
total=0 nf=0
for n in $(stat -c %s "$SRC"/*); do
	total=$((total + n)) nf=$((nf + 1))
done
want=$(cd "$SRC" && sha256sum -- *) || fail "sha256 of the sources"
t0=$SECONDS
cp "$SRC"/* "$MNT"/ && sync || fail "copy $nf files to the mount"
tw=$((SECONDS - t0))
rpc_stats
# read back what the server holds: a fresh mount, no page cache
timeout 120 umount "$MNT" || fail "umount after writing"
echo 3 >/proc/sys/vm/drop_caches
mount_it || fail "mount again"
t0=$SECONDS
got=$(cd "$MNT" && sha256sum -- *) || fail "read the files back"
tr=$((SECONDS - t0))
rpc_stats
desc="$nf files, $((total >> 20)) MiB copied ($tw s) and read back after a remount ($tr s): sha256 equal"
if [ "$want" = "$got" ]; then
	t_ok "$desc"
else
	t_fail "$desc" "$(diff <(echo "$want") <(echo "$got"))"
fi
b1=$(($(cat /sys/class/infiniband/mrcA/ports/1/hw_counters/tx_bytes) +
	$(cat /sys/class/infiniband/mrcB/ports/1/hw_counters/tx_bytes)))
da=$(netem_stat "$TOPO_SW" "$RXE_PORT_A" dropped) db=$(netem_stat "$TOPO_SW" "$RXE_PORT_B" dropped)
for d in mrcA mrcB; do
	t_diag "$d: $(cd /sys/class/infiniband/$d/ports/1/hw_counters &&
		grep -H . tx_packets retransmitted_packets rack_losses tail_loss_probes rto_events \
			out_of_order_packets rnr_naks_received | tr '\n' ' ')"
done
# the data crossed metaroce (written and read back: twice), and was lost on the way
desc="metaroce carried it ($(((b1 - b0) >> 20)) MiB sent) and the link dropped packets (A $da, B $db)"
if [ $((b1 - b0)) -ge $((2 * total)) ] && [ "${da:-0}" -gt 0 ] && [ "${db:-0}" -gt 0 ]; then
	t_ok "$desc"
else
	t_fail "$desc" "need >= $((2 * total >> 20)) MiB and drops both ways"
fi
read -r na1 </sys/class/infiniband/mrcA/ports/1/hw_counters/naks_sent
read -r nb1 </sys/class/infiniband/mrcB/ports/1/hw_counters/naks_sent
# a READ resend that arrives after the SEND_WITH_INV or LOCAL_INV that
# ended its READ is dropped (MRC-MSG-40), never NAKed: with the NAK the
# client's QP failed and xprtrdma reconnected in 7 of 19 runs
t_diag "stale READ resends discarded: mrcA $(cat /sys/class/infiniband/mrcA/ports/1/hw_counters/drop_stale_read), mrcB $(cat /sys/class/infiniband/mrcB/ports/1/hw_counters/drop_stale_read)"
desc="each mount connected once, $OPS RPCs sent once each, no RPC timeout"
got="connects $CONNS (want 2), RPCs $OPS, transmissions $NTRANS, timeouts $TMO, fatal NAKs sent: mrcA $((na1 - na0)), mrcB $((nb1 - nb0))"
if [ "$CONNS" -eq 2 ] && [ "$OPS" -gt 0 ] && [ "$NTRANS" -eq "$OPS" ] && [ "$TMO" -eq 0 ]; then
	t_ok "$desc"
else
	t_fail "$desc" "$got"
fi
errs=$(rc_dmesg_new |
	grep -a -i "rpcrdma\|svcrdma\|rpc-rdma\|nfs.*\(error\|fail\|reconnect\|timeout\|timed out\)\|not responding\|WARNING\|BUG")
if [ -z "$errs" ]; then
	t_ok "no rpcrdma/svcrdma or nfs error, reconnect, timeout or \"not responding\", no kernel warning"
else
	t_fail "no rpcrdma/svcrdma or nfs error, reconnect, timeout or \"not responding\", no kernel warning" "$errs"
fi
t_summary

#!/bin/bash
# NVMe over Fabrics over metaroce (issue 45): an nvmet-rdma target on a file
# namespace and the kernel's nvme-rdma host, both kernel ULPs using fast
# registration (FRWR), across a link with 1 % random loss each way.
# Kernel ULPs open their rdma_cm IDs in init_net: the metaroce devices sit
# on the init_net ends of the rxe topology (policy routing sends A <-> B
# through the switch namespace, where netem drops).  No nvme-cli: the
# fabrics connect string goes to /dev/nvme-fabrics, the target is set up in
# configfs.  256 MiB are written with O_DIRECT and read back, sha256 equal;
# no nvme error, reset, reconnect or timeout may be logged.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
LOSS=1% MB=256
NQN=mrc-nvme-test CFG=/sys/kernel/config/nvmet IMG=/dev/shm/mrc-nvme.img
ctrl=''
cleanup() {
	[ -n "$ctrl" ] && echo 1 >"/sys/class/nvme/$ctrl/delete_controller" 2>/dev/null
	rm -f "$CFG/ports/1/subsystems/$NQN" 2>/dev/null
	rmdir "$CFG/ports/1" 2>/dev/null
	echo 0 >"$CFG/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$CFG/subsystems/$NQN/namespaces/1" "$CFG/subsystems/$NQN" 2>/dev/null
	rm -f "$IMG" /dev/shm/mrc-nvme.src
	topo_cleanup
}
trap cleanup EXIT
# fail WHAT: the step that failed, the kernel's last lines, and stop
fail() {
	t_fail "$1" "$(dmesg | tail -n 20)"
	t_summary
	exit 1
}

topo_rxe_two_hosts --mtu 9000 || fail "topology"
rdma link add mrcA type metaroce netdev "$RXE_A_DEV" || fail "mrcA"
rdma link add mrcB type metaroce netdev "$RXE_B_DEV" || fail "mrcB"
link_shape "$TOPO_SW" "$RXE_PORT_A" loss "$LOSS" || fail "netem A"
link_shape "$TOPO_SW" "$RXE_PORT_B" loss "$LOSS" || fail "netem B"
for m in nvmet nvmet-rdma nvme-rdma; do modprobe "$m" || fail "modprobe $m"; done
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
truncate -s $((MB + 16))M "$IMG" || fail "image"
mkdir "$CFG/subsystems/$NQN" || fail "configfs subsystem"
echo 1 >"$CFG/subsystems/$NQN/attr_allow_any_host"
mkdir "$CFG/subsystems/$NQN/namespaces/1"
echo "$IMG" >"$CFG/subsystems/$NQN/namespaces/1/device_path"
echo 1 >"$CFG/subsystems/$NQN/namespaces/1/buffered_io" || fail "buffered_io"
echo 1 >"$CFG/subsystems/$NQN/namespaces/1/enable" || fail "namespace enable"
mkdir "$CFG/ports/1"
echo rdma >"$CFG/ports/1/addr_trtype"
echo ipv4 >"$CFG/ports/1/addr_adrfam"
echo "$RXE_B_IP" >"$CFG/ports/1/addr_traddr"
echo 4420 >"$CFG/ports/1/addr_trsvcid"
ln -s "$CFG/subsystems/$NQN" "$CFG/ports/1/subsystems/$NQN" || fail "port enable"
t_ok "nvmet-rdma target on $RXE_B_IP:4420 over mrcB, 1 % loss each way on the switch"
rc_dmesg_mark
b0=$(($(cat /sys/class/infiniband/mrcA/ports/1/hw_counters/tx_bytes) +
	$(cat /sys/class/infiniband/mrcB/ports/1/hw_counters/tx_bytes)))
echo "transport=rdma,traddr=$RXE_B_IP,trsvcid=4420,nqn=$NQN,host_traddr=$RXE_A_IP" \
	>/dev/nvme-fabrics || fail "nvme-rdma host connects"
for c in /sys/class/nvme/nvme*; do
	[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] && ctrl=${c##*/}
done
[ -n "$ctrl" ] || fail "nvme-rdma host connects (no controller for $NQN)"
dev=''
for _ in $(seq 50); do
	for b in /dev/nvme*n1; do
		[ -b "$b" ] && dev=$b
	done
	[ -n "$dev" ] && break
	bsleep 0.2
done
[ -n "$dev" ] || fail "nvme-rdma host connects (no namespace block device)"
nqp=$(rdma resource show qp 2>/dev/null | grep -c 'mrc[AB]')
t_ok "nvme-rdma host connected: $ctrl, $dev, $(cat "/sys/class/nvme/$ctrl/address"), $nqp metaroce QPs"
dd if=/dev/urandom of=/dev/shm/mrc-nvme.src bs=1M count="$MB" status=none
want=$(sha256sum </dev/shm/mrc-nvme.src | cut -d' ' -f1)
t0=$SECONDS
dd if=/dev/shm/mrc-nvme.src of="$dev" bs=1M oflag=direct conv=fsync status=none || fail "write $MB MiB"
tw=$((SECONDS - t0)) t0=$SECONDS
# hashed as it is read: a third copy in /dev/shm did not fit on the debug
# kernel, which reserves about 700 MB of the guest's 2 GiB at boot (KASAN
# shadow and more), and tmpfs gets half of the rest
got=$(dd if="$dev" bs=1M count="$MB" iflag=direct status=none | sha256sum) ||
	fail "read $MB MiB back"
got=${got%% *}
tr=$((SECONDS - t0))
if [ "$want" = "$got" ]; then
	t_ok "$MB MiB written ($tw s) and read back ($tr s) through nvme-rdma: sha256 equal"
else
	t_fail "$MB MiB written and read back through nvme-rdma: sha256 equal" "wrote $want, read $got"
fi
b1=$(($(cat /sys/class/infiniband/mrcA/ports/1/hw_counters/tx_bytes) +
	$(cat /sys/class/infiniband/mrcB/ports/1/hw_counters/tx_bytes)))
da=$(netem_stat "$TOPO_SW" "$RXE_PORT_A" dropped) db=$(netem_stat "$TOPO_SW" "$RXE_PORT_B" dropped)
for d in mrcA mrcB; do
	t_diag "$d: $(cd /sys/class/infiniband/$d/ports/1/hw_counters &&
		grep -H . tx_packets retransmitted_packets rto_events out_of_order_packets | tr '\n' ' ')"
done
# the data crossed metaroce (write and read back: twice MB), and was lost on the way
desc="metaroce carried it ($(((b1 - b0) >> 20)) MiB sent) and the link dropped packets (A $da, B $db)"
if [ $((b1 - b0)) -ge $((2 * MB << 20)) ] && [ "${da:-0}" -gt 0 ] && [ "${db:-0}" -gt 0 ]; then
	t_ok "$desc"
else
	t_fail "$desc" "need >= $((2 * MB)) MiB and drops both ways"
fi
errs=$(rc_dmesg_new |
	grep -a -i "nvme.*\(error\|reconnect\|timeout\|reset\)\|I/O error\|WARNING\|BUG")
if [ -z "$errs" ]; then
	t_ok "no nvme error, reset, reconnect or timeout, no kernel warning"
else
	t_fail "no nvme error, reset, reconnect or timeout, no kernel warning" "$errs"
fi
t_summary

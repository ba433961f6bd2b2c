#!/bin/bash
# metaroce devices: module load/unload, rdma link add/del in two network
# namespaces, what ibv_devinfo reports, port state following the netdev,
# removal with the netdev or the module, and bad input.
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
trap topo_cleanup EXIT

dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
no_dev() { ! dev_exists "$1"; }
mod_loaded() { [ -e /sys/module/rdma_metaroce ]; }

# --- module ---------------------------------------------------------------
t_check "modprobe rdma_metaroce" modprobe rdma_metaroce
t_check "module parameters are exposed" test -r /sys/module/rdma_metaroce/parameters/udp_port
read -r port </sys/module/rdma_metaroce/parameters/udp_port
if [ "$port" = 4792 ]; then t_ok "default UDP port is 4792 (not RoCEv2's 4791)"; else t_fail "default UDP port is 4792" "$port"; fi
t_check "rmmod with no devices" rmmod rdma_metaroce
if mod_loaded; then t_fail "module is gone after rmmod"; else t_ok "module is gone after rmmod"; fi

# --- two hosts, a device in each namespace ----------------------------------
topo_two_hosts --mtu 9000 || { t_fail "two-host topology"; t_summary; exit; }
t_check "rdma link add in hostA autoloads the module" in_host "$TOPO_A" rdma link add mrcA type metaroce netdev "$TOPO_DEV"
t_check "rdma link add in hostB" in_host "$TOPO_B" rdma link add mrcB type metaroce netdev "$TOPO_DEV"
# the netdev is shown to callers in the netdev's own namespace
links=$(rdma link show 2>&1; in_host "$TOPO_A" rdma link show mrcA/1 2>&1)
if [[ $links == *"mrcA/1"*"netdev $TOPO_DEV"* && $links == *"mrcB/1"* ]]; then
	t_ok "rdma link show lists both devices with their netdev"
else
	t_fail "rdma link show lists both devices with their netdev" "$links"
fi
devs=$(ibv_devices 2>&1)
if [[ $devs == *mrcA* && $devs == *mrcB* ]]; then t_ok "ibv_devices lists both"; else t_fail "ibv_devices lists both" "$devs"; fi

infoA=$(ibv_devinfo -v -d mrcA 2>&1)
infoB=$(ibv_devinfo -v -d mrcB 2>&1)
field() { sed -n "s/^[[:space:]]*$1:[[:space:]]*//p" <<<"$2" | head -n 1; }
[[ $(field link_layer "$infoA") == Ethernet ]] && t_ok "link_layer is Ethernet" || t_fail "link_layer is Ethernet" "$infoA"
[[ $(field state "$infoA") == PORT_ACTIVE* ]] && t_ok "port is ACTIVE" || t_fail "port is ACTIVE" "$infoA"
[[ $(field active_mtu "$infoA") == 4096* ]] && t_ok "active_mtu 4096 on a 9000-byte netdev" || t_fail "active_mtu 4096 on a 9000-byte netdev" "$(field active_mtu "$infoA")"
speed=$(field active_speed "$infoA")
if [[ $speed =~ ^[0-9.]+\ Gbps ]] && [[ ! $speed =~ ^0(\.0)?\  ]]; then
	t_ok "active_speed is non-zero ($speed, width $(field active_width "$infoA"))"
else
	t_fail "active_speed is non-zero" "$speed"
fi
gA=$(field sys_image_guid "$infoA") gB=$(field sys_image_guid "$infoB")
if [[ -n $gA && $gA != 0000:0000:0000:0000 && $gA != "$gB" ]]; then
	t_ok "sys_image_guid non-zero and unique ($gA vs $gB)"
else
	t_fail "sys_image_guid non-zero and unique" "A=$gA B=$gB"
fi
[[ $(field transport "$infoA") == InfiniBand* ]] && t_ok "transport reported" || t_fail "transport reported" "$infoA"
[[ $(field max_qp "$infoA") -ge 1024 ]] && t_ok "query_device limits reported (max_qp $(field max_qp "$infoA"))" || t_fail "query_device limits" "$infoA"

# RoCE v2 GID for hostA's IPv4 address, with its sysfs type
if idx=$(rxe_gid_index mrcA "$TOPO_A_IP"); then
	t_ok "RoCE v2 GID for $TOPO_A_IP at index $idx"
	if [[ $infoA == *"GID[  $idx]:"*"::ffff:$TOPO_A_IP, RoCE v2"* ]]; then
		t_ok "ibv_devinfo shows the IPv4 GID as RoCE v2"
	else
		t_fail "ibv_devinfo shows the IPv4 GID as RoCE v2" "$infoA"
	fi
else
	t_fail "RoCE v2 GID for $TOPO_A_IP" "$(grep -H . /sys/class/infiniband/mrcA/ports/1/gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$')"
fi
if grep -qx 'fd00:0000:0000:0000:0000:0000:0000:0001' /sys/class/infiniband/mrcA/ports/1/gids/*; then
	t_ok "IPv6 address listed as a GID"
else
	t_fail "IPv6 address listed as a GID"
fi
# a GID of hostB's namespace never shows up on hostA's device
if grep -q "0000:0000:0000:0000:0000:ffff:0a00:0002" /sys/class/infiniband/mrcA/ports/1/gids/*; then
	t_fail "devices in different namespaces keep separate GID tables"
else
	t_ok "devices in different namespaces keep separate GID tables"
fi
# the UDP socket lives in the netdev's namespace, not in init_net
if in_host "$TOPO_A" ss -uln | grep -q ":$port "; then t_ok "hostA listens on UDP $port in its own namespace"; else t_fail "hostA listens on UDP $port"; fi
if ss -uln | grep -q ":$port "; then t_fail "init_net has no metaroce socket"; else t_ok "init_net has no metaroce socket"; fi

# --- traffic between the namespaces -------------------------------------------
gidA=$(rxe_gid_index mrcA "$TOPO_A_IP") gidB=$(rxe_gid_index mrcB "$TOPO_B_IP")
if srv_cli --timeout 60 --log /tmp/dev_pp \
	in_host "$TOPO_B" ibv_rc_pingpong -d mrcB -g "$gidB" -n 20 -- \
	in_host "$TOPO_A" ibv_rc_pingpong -d mrcA -g "$gidA" -n 20 "$TOPO_B_IP"; then
	t_ok "ibv_rc_pingpong between the two namespaces"
else
	t_fail "ibv_rc_pingpong between the two namespaces" "$(cat /tmp/dev_pp.srv /tmp/dev_pp.cli 2>/dev/null)"
fi

# IPv6 GIDs carry traffic too
gid6() { grep -l -x "$2" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | head -n 1 | sed 's|.*/||'; }
g6A=$(gid6 mrcA fd00:0000:0000:0000:0000:0000:0000:0001) g6B=$(gid6 mrcB fd00:0000:0000:0000:0000:0000:0000:0002)
if [ -n "$g6A" ] && [ -n "$g6B" ] && srv_cli --timeout 60 --log /tmp/dev_pp6 \
	in_host "$TOPO_B" ibv_rc_pingpong -d mrcB -g "$g6B" -n 20 -c -- \
	in_host "$TOPO_A" ibv_rc_pingpong -d mrcA -g "$g6A" -n 20 -c "$TOPO_B_IP"; then
	t_ok "ibv_rc_pingpong over IPv6 GIDs (index $g6A/$g6B)"
else
	t_fail "ibv_rc_pingpong over IPv6 GIDs" "gids $g6A $g6B" "$(cat /tmp/dev_pp6.srv /tmp/dev_pp6.cli 2>/dev/null)"
fi

# two QPs of one device talk through the host's loopback
if srv_cli --timeout 60 --log /tmp/dev_lo \
	in_host "$TOPO_A" ibv_rc_pingpong -d mrcA -g "$gidA" -n 20 -s 100000 -c -- \
	in_host "$TOPO_A" ibv_rc_pingpong -d mrcA -g "$gidA" -n 20 -s 100000 -c "$TOPO_A_IP"; then
	t_ok "ibv_rc_pingpong between two QPs of the same device (loopback)"
else
	t_fail "ibv_rc_pingpong between two QPs of the same device (loopback)" "$(cat /tmp/dev_lo.srv /tmp/dev_lo.cli 2>/dev/null)"
fi

# --- port state follows the netdev, with async events ---------------------------
ip netns exec "$TOPO_A" ibv_asyncwatch -d mrcA >/tmp/async.log 2>&1 &
aw=$!
sleep 1
in_host "$TOPO_A" ip link set "$TOPO_DEV" down
st=$(ibv_devinfo -d mrcA | sed -n 's/^[[:space:]]*state:[[:space:]]*//p')
[[ $st == PORT_DOWN* ]] && t_ok "port goes DOWN with the netdev" || t_fail "port goes DOWN with the netdev" "$st"
in_host "$TOPO_A" ip link set "$TOPO_DEV" up
wait_for 10 bash -c 'ibv_devinfo -d mrcA | grep -q PORT_ACTIVE'
st=$(ibv_devinfo -d mrcA | sed -n 's/^[[:space:]]*state:[[:space:]]*//p')
[[ $st == PORT_ACTIVE* ]] && t_ok "port comes back ACTIVE" || t_fail "port comes back ACTIVE" "$st"
sleep 1
kill "$aw" 2>/dev/null
wait "$aw" 2>/dev/null
ev=$(cat /tmp/async.log)
if [[ $ev == *IBV_EVENT_PORT_ERR* && $ev == *IBV_EVENT_PORT_ACTIVE* ]]; then
	t_ok "async events PORT_ERR and PORT_ACTIVE delivered"
else
	t_fail "async events PORT_ERR and PORT_ACTIVE delivered" "$ev"
fi

# --- bad input gets an error and leaves nothing behind ---------------------------
if in_host "$TOPO_A" rdma link add bad0 type metaroce netdev nosuchdev 2>/tmp/err; then
	t_fail "a netdev that does not exist is refused"
else
	no_dev bad0 && t_ok "a netdev that does not exist is refused ($(head -c 80 /tmp/err))" || t_fail "a netdev that does not exist leaves no device"
fi
if in_host "$TOPO_A" rdma link add mrcA2 type metaroce netdev "$TOPO_DEV" 2>/tmp/err; then
	t_fail "the same netdev twice is refused"
else
	no_dev mrcA2 && t_ok "the same netdev twice is refused ($(head -c 80 /tmp/err))" || t_fail "the same netdev twice leaves no device"
fi
if in_host "$TOPO_A" rdma link add lo0 type metaroce netdev lo 2>/tmp/err; then
	t_fail "a loopback netdev is refused"
else
	no_dev lo0 && t_ok "a loopback netdev is refused ($(head -c 80 /tmp/err))" || t_fail "a loopback netdev leaves no device"
fi
in_host "$TOPO_A" ip link add link "$TOPO_DEV" name vl5 type vlan id 5
if in_host "$TOPO_A" rdma link add vl0 type metaroce netdev vl5 2>/tmp/err; then
	t_fail "a VLAN netdev is refused"
else
	no_dev vl0 && t_ok "a VLAN netdev is refused ($(head -c 80 /tmp/err))" || t_fail "a VLAN netdev leaves no device"
fi
in_host "$TOPO_A" ip link del vl5
if dmesg | grep -q "metaroce: lo: not an Ethernet device"; then t_ok "dmesg explains the refusal"; else t_fail "dmesg explains the refusal" "$(dmesg | tail -5)"; fi

# --- removal --------------------------------------------------------------------
t_check "rdma link del" rdma link del mrcB
if no_dev mrcB; then t_ok "device gone after rdma link del"; else t_fail "device gone after rdma link del"; fi
if in_host "$TOPO_B" ss -uln | grep -q ":$port "; then t_fail "UDP socket closed with the last device of the namespace"; else t_ok "UDP socket closed with the last device of the namespace"; fi
t_check "re-add after del" in_host "$TOPO_B" rdma link add mrcB type metaroce netdev "$TOPO_DEV"
# a process that keeps the device open must not block its removal
ip netns exec "$TOPO_B" ibv_asyncwatch -d mrcB >/dev/null 2>&1 &
holder=$!
sleep 1
in_host "$TOPO_B" ip link del "$TOPO_DEV"
if wait_for 10 no_dev mrcB; then t_ok "device removed when its netdev is unregistered, even while open"; else t_fail "device removed when its netdev is unregistered, even while open"; fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
ip netns del "$TOPO_A"
if wait_for 10 no_dev mrcA; then t_ok "device removed when its namespace is deleted"; else t_fail "device removed when its namespace is deleted"; fi

# unload while devices exist
topo_two_hosts --mtu 1500 >/dev/null 2>&1
in_host "$TOPO_A" rdma link add mrcA type metaroce netdev "$TOPO_DEV"
in_host "$TOPO_B" rdma link add mrcB type metaroce netdev "$TOPO_DEV"
mtu=$(ibv_devinfo -d mrcA | sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*//p')
[[ $mtu == 1024* ]] && t_ok "active_mtu 1024 on a 1500-byte netdev" || t_fail "active_mtu 1024 on a 1500-byte netdev" "$mtu"
t_check "rmmod while two devices exist" rmmod rdma_metaroce
if no_dev mrcA && no_dev mrcB && ! mod_loaded; then t_ok "devices and module gone after rmmod"; else t_fail "devices and module gone after rmmod"; fi
if dmesg | dmesg_drop_known | grep -qE "BUG|WARNING|Oops|refcount"; then
	t_fail "no kernel warnings" "$(dmesg | dmesg_drop_known | grep -E -A5 'BUG|WARNING|Oops|refcount' | head -40)"
else
	t_ok "no kernel warnings"
fi
t_summary

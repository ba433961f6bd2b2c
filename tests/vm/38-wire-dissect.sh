#!/bin/bash
# The Wireshark dissector (tools/wireshark/metaroce.lua) on real traffic:
# a verified transfer, all ops in both directions, with loss both ways on
# the switch ports, captured on each host's own port (tcpdump, outgoing
# only: every packet the host sent, before the switch's netem drops any).
# tshark with the dissector then checks each capture:
#  a) every packet dissects as metaroce, with no Malformed mark and no
#     Lua error;
#  b) the packets a host sent with the RETX flag number exactly its
#     retransmitted_packets delta.  That counter counts request packets
#     sent again (SEND/WRITE segments, READ re-requests, atomics), each
#     built with RETX, whatever resent it: RACK, the tail-loss probe
#     (lost-ACK probes included), the RTO, the end of an RNR wait.  A READ
#     re-request that asks again for several lost segments is one packet
#     and counts once.  READ and atomic responses never carry RETX, also
#     when a READ is served again, and no counter counts them as resent:
#     checked as such;
#  c) the capture missed nothing: a host's packets are its tx_packets
#     delta (requests, responses, ACKs and NAKs), tcpdump dropped none.
# The captures and tshark's output are copied to $METAROCE_OUT/wire-dissect.
# vm-test-timeout: 300
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"

LUA=$RC_REPO/tools/wireshark/metaroce.lua
OUT=/tmp/wire-dissect
declare -A CAP_PID=()
# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1

cap_stop() {
	local h
	for h in "${!CAP_PID[@]}"; do
		kill -TERM "${CAP_PID[$h]}" 2>/dev/null
		wait "${CAP_PID[$h]}" 2>/dev/null
	done
	CAP_PID=()
}
trap 'cap_stop; topo_cleanup' EXIT

if ! command -v tshark >/dev/null 2>&1; then
	t_skip "the dissector on a lossy transfer" "tshark is not installed (scripts/deps wireshark)"
	t_summary
	exit 0
fi
rc_dmesg_mark
if ! t_check "build mrc_verify" rc_build_tools; then t_summary; exit 1; fi
rc_hosts --mtu 9000
rm -rf "$OUT"
mkdir -p "$OUT"

# cap_start: tcpdump on each host's port, what the host sends; headers only
cap_start() {
	local h ns
	tcpdump --version >/dev/null 2>&1	# warm the 9p cache
	for h in A B; do
		if [ $h = A ]; then ns=$TOPO_A; else ns=$TOPO_B; fi
		# ip execs tcpdump: $! is tcpdump's pid
		ip netns exec "$ns" tcpdump -i "$TOPO_DEV" -Q out -nn -s 192 -B 16384 -U \
			-w "$OUT/$h.pcap" "udp dst port 4792" >/dev/null 2>"$OUT/$h.tcpdump" &
		CAP_PID[$h]=$!
	done
	wait_for 30 grep -q 'listening on' "$OUT/A.tcpdump" &&
		wait_for 30 grep -q 'listening on' "$OUT/B.tcpdump"
}

# dissect H: tshark with the dissector over H's capture, one line a packet
dissect() {
	tshark -n -r "$OUT/$1.pcap" -X "lua_script:$LUA" -T fields -E separator=/t \
		-E occurrence=a -E aggregator=, -e frame.number -e metaroce.opcode \
		-e metaroce.flags.retx -e metaroce.drop -e _ws.expert.group \
		-e _ws.expert.message >"$OUT/$1.tsv" 2>"$OUT/$1.tshark"
}

# counts H: "packets not-metaroce malformed lua-errors retx retx-responses";
# expert group 117440512 is 0x07000000, PI_MALFORMED
counts() {
	awk -F '\t' '
		{ n++ }
		$2 == "" { other++ }
		$4 != "" || $5 ~ /(^|,)(117440512|0x07000000)(,|$)/ { bad++ }
		$6 ~ /Lua Error|Exception/ { lua++ }
		$3 == "1" || $3 == "True" { retx++; if ($2 == "0x10" || $2 == "0x11") resp++ }
		END { printf "%d %d %d %d %d %d\n", n, other, bad, lua, retx, resp }' "$OUT/$1.tsv"
}

# not through t_check: its subshell would own the captures
if cap_start; then
	t_ok "tcpdump captures on both hosts"
	rc_snap a0 "$RC_DEV_A"
	rc_snap b0 "$RC_DEV_B"
	rc_loss_both 3
	rc=0
	rc_verify --timeout 240 --log /tmp/dissect -q 2 -s 64K -n 300 || rc=$?
	rc_loss_clear
	rc_snap a1 "$RC_DEV_A"
	rc_snap b1 "$RC_DEV_B"
	bsleep 1
	cap_stop
	cs=$(rc_result /tmp/dissect.cli status) ss=$(rc_result /tmp/dissect.srv status)
	if [ "$rc" -eq 0 ] && [ "$cs" = PASS ] && [ "$ss" = PASS ]; then
		t_ok "3 % loss both ways, all ops, both directions: data verified ($(rc_result /tmp/dissect.cli ops) + $(rc_result /tmp/dissect.srv ops) ops)"
	else
		t_fail "3 % loss both ways: data verified" "exit $rc, client ${cs:-no result}, server ${ss:-no result}" \
			"$(grep -h -E 'ERROR|FATAL' /tmp/dissect.cli /tmp/dissect.srv | head -n 8)"
	fi
	for h in A B; do
		if [ $h = A ]; then dev=$RC_DEV_A; s0=a0 s1=a1; else dev=$RC_DEV_B; s0=b0 s1=b1; fi
		t0=$SECONDS
		dissect $h
		st=$?
		read -r n other bad lua retx resp <<<"$(counts $h)"
		tx=$(rc_delta "$s0" "$s1" tx_packets) rtx=$(rc_delta "$s0" "$s1" retransmitted_packets)
		kdrop=$(sed -n 's/^\([0-9]*\) packets* dropped by kernel.*/\1/p' "$OUT/$h.tcpdump")
		t_diag "host$h ($dev): $n packets captured in $(stat -c %s "$OUT/$h.pcap") bytes, tshark $((SECONDS - t0)) s;" \
			"tx_packets $tx, retransmitted_packets $rtx (rack_losses $(rc_delta "$s0" "$s1" rack_losses)," \
			"tail_loss_probes $(rc_delta "$s0" "$s1" tail_loss_probes), rto_events $(rc_delta "$s0" "$s1" rto_events))," \
			"tx_dropped $(rc_delta "$s0" "$s1" tx_dropped); RETX on the wire $retx"
		if [ "$st" -eq 0 ] && [ "$n" -gt 0 ] && [ "$other" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$lua" -eq 0 ]; then
			t_ok "host$h: all $n packets dissect as metaroce, none malformed, no Lua error"
		else
			t_fail "host$h: every packet dissects as metaroce, none malformed" \
				"tshark exit $st; $n packets: $other not metaroce, $bad malformed, $lua Lua errors" \
				"$(head -n 5 "$OUT/$h.tshark")" \
				"$(awk -F '\t' '$2 == "" || $4 != "" || $5 ~ /117440512|0x07000000/' "$OUT/$h.tsv" | head -n 5)"
		fi
		if [ "${kdrop:-x}" = 0 ] && [ "$n" -eq "$tx" ]; then
			t_ok "host$h: the capture holds every packet sent ($n = tx_packets delta, tcpdump dropped none)"
		else
			t_fail "host$h: the capture holds every packet sent" \
				"$n captured, tx_packets delta $tx; tcpdump: $(tr '\n' ' ' <"$OUT/$h.tcpdump")"
		fi
		if [ "$retx" -eq "$rtx" ] && [ "$rtx" -gt 0 ]; then
			t_ok "host$h: $retx packets with RETX on the wire = retransmitted_packets delta $rtx"
		else
			t_fail "host$h: packets with RETX on the wire = retransmitted_packets delta (> 0)" \
				"RETX on the wire $retx, retransmitted_packets delta $rtx"
		fi
		if [ "$resp" -eq 0 ]; then
			t_ok "host$h: no READ or atomic response carries RETX"
		else
			t_fail "host$h: no READ or atomic response carries RETX" "$resp do"
		fi
	done
else
	t_fail "tcpdump captures on both hosts" "$(cat "$OUT"/*.tcpdump 2>/dev/null)"
fi

# the captures and tshark's view of them, for a look with Wireshark
if [ -n "${METAROCE_OUT:-}" ] && [ -d "$METAROCE_OUT" ]; then
	mkdir -p "$METAROCE_OUT/wire-dissect" && cp "$OUT"/* "$METAROCE_OUT/wire-dissect/" 2>/dev/null
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

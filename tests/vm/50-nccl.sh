#!/bin/bash
# NCCL's verbs usage over metaroce, CPU only: tests/tools/mrc_nccl runs the
# protocol of NCCL's net_ib transport between hostA (sender) and hostB
# (receiver), control over the management link, MTU 9000 (RDMA MTU 4096).
# Every payload byte, CTS entry, sizes[] record and completion field is
# checked by the tool; this file turns its MRC_NCCL_CHECK and
# MRC_NCCL_RESULT lines into one TAP line per NCCL requirement:
#
#   self-tests   a damaged payload, sizes[] record or immediate must fail
#   run A        NCCL's defaults: 1 QP, one zero-SGE receive posted per
#                request (index matching), adaptive-routing threshold 8192,
#                multi-receive, a flush READ after every request
#   run B        256 zero-SGE receives pre-posted per QP (id matching),
#                4 QPs per connection, each request striped over all four
#   run R        2 QPs per connection used round robin (no split)
#   run C        100k requests (1 KiB at most, a flush every 32nd, still
#                every pattern), starting 0x800 PSNs below the wrap, 1 %
#                loss on the data direction (netem on the switch port
#                towards hostB)
# Run C takes most of the time: the guest is CPU-bound (about 3 packets
# per request each way); measured 245 s for run C and 454 s in all with
# the host at load average 10 on 2 cores.
# vm-test-timeout: 720
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT

NCCL=$RC_REPO/tests/tools/mrc_nccl
LONG_ITERS=${NCCL_LONG_ITERS:-100000}

build_nccl() {
	if [ -x "$NCCL" ] && ! [ "$RC_REPO/tests/tools/mrc_nccl.c" -nt "$NCCL" ]; then
		return 0
	fi
	make -s -C "$RC_REPO/tests/tools" mrc_nccl
}

rc_dmesg_mark
if ! t_check "build mrc_nccl" build_nccl; then t_summary; exit 1; fi
if ! rc_setup --mtu 9000 >/tmp/rc_setup.log 2>&1; then
	t_fail "two hosts with metaroce devices" "$(cat /tmp/rc_setup.log)"
	t_summary
	exit 1
fi
t_ok "two hosts with metaroce devices (RoCE v2 IPv4 GID index $GID_A / $GID_B)"

# shellcheck disable=SC2034 # filled through namerefs
declare -A a0 a1 b0 b1

# nccl NAME TIMEOUT SENDER-ARGS...: receiver in hostB, sender in hostA;
# output in /tmp/nccl_NAME.srv and .cli
nccl() {
	local name=$1 to=$2
	shift 2
	srv_cli --timeout "$to" --log "/tmp/nccl_$name" \
		in_host "$TOPO_B" "$NCCL" -d "$RC_DEV_B" -- \
		in_host "$TOPO_A" "$NCCL" -d "$RC_DEV_A" "$@" "$MGMT_B_IP"
}

# res NAME cli|srv KEY: KEY=value from the MRC_NCCL_RESULT line
res() {
	local line w
	line=$(grep -h '^MRC_NCCL_RESULT' "/tmp/nccl_$1.$2" 2>/dev/null | tail -n 1)
	for w in $line; do
		case $w in "$3"=*) echo "${w#*=}"; return 0 ;; esac
	done
	echo 0
	return 1
}

# chk NAME cli|srv CHECK: "PASS TEXT" or "FAIL TEXT" of every such line
chk() {
	local side=sender
	[ "$2" = srv ] && side=receiver
	grep -h "^MRC_NCCL_CHECK $side $3 " "/tmp/nccl_$1.$2" 2>/dev/null |
		cut -d' ' -f4-
}

# all_pass NAME CHECK: every line of CHECK on both sides says PASS
all_pass() {
	local out
	out=$(chk "$1" cli "$2"; chk "$1" srv "$2")
	[ -n "$out" ] && ! grep -q '^FAIL' <<<"$out"
}

passed() { # NAME: both sides printed status=PASS
	[ "$(res "$1" cli status)" = PASS ] && [ "$(res "$1" srv status)" = PASS ]
}

logs() {
	grep -h -E 'ERROR|FATAL|FAIL' "/tmp/nccl_$1.cli" "/tmp/nccl_$1.srv" 2>/dev/null | head -n 12
	tail -n 3 "/tmp/nccl_$1.cli" "/tmp/nccl_$1.srv" 2>/dev/null
}

# why NAME: one line for checks that depend on a run (its own line has the logs)
why() {
	echo "run $1: sender $(res "$1" cli status), receiver $(res "$1" srv status)" \
		"$(grep -h -m 1 -E 'ERROR|FATAL' "/tmp/nccl_$1.srv" "/tmp/nccl_$1.cli" 2>/dev/null | head -n 1)"
}

# --- self-tests: the checker catches damage ---------------------------------------
selftest() { # DESC WHAT PATTERN
	local rc=0
	nccl "self_$2" 60 -S 7 -n 200 --multi 50 --corrupt "$2:40" --stall 15 || rc=$?
	if [ "$rc" -ne 0 ] && grep -q -E "ERROR: .*$3" "/tmp/nccl_self_$2.srv"; then
		t_ok "self-test: $1 is detected ($(grep -h -o -E "ERROR: .*$3.{0,40}" "/tmp/nccl_self_$2.srv" | head -n 1))"
	else
		t_fail "self-test: $1 is detected" "exit $rc" "$(logs "self_$2")"
	fi
}
selftest "a damaged payload byte" data "payload data wrong"
selftest "a damaged sizes[] record of a multi-receive" sizes "sizes\\[[0-9]\\] in the completion record"
selftest "a wrong immediate" imm "imm_data"

# --- run A: NCCL's defaults ------------------------------------------------------------
rcA=0
NA=1000
nccl A 120 -n $NA -q 1 --match index -s 64K --multi 25 --ar-threshold 8192 --flush-every 1 || rcA=$?
nA=$(res A srv reqs)
if [ "$rcA" -eq 0 ] && passed A && [ "$nA" -eq $NA ]; then
	t_ok "run A (NCCL defaults, 1 QP, receives posted per request): $nA requests, $(res A srv bytes) bytes and every completion verified in $(res A srv elapsed_s) s ($(res A srv mbps) Mbit/s)"
else
	t_fail "run A (NCCL defaults): all requests verified" "exit $rcA" "$(logs A)"
fi

if all_pass A discovery && all_pass A port_speed; then
	t_ok "discovery: $(chk A cli discovery | cut -c6- | cut -d';' -f1-2); $(chk A cli port_speed | cut -c6-)"
else
	t_fail "discovery (ibv_get_device_list, query_device, query_port as NCCL)" "$(chk A cli discovery; chk A srv discovery; chk A cli port_speed)"
fi

gA=$(grep -h -o 'GID_SELECTED index=[0-9]*' /tmp/nccl_A.cli | head -n 1)
gB=$(grep -h -o 'GID_SELECTED index=[0-9]*' /tmp/nccl_A.srv | head -n 1)
if all_pass A gid_select && all_pass A query_gid_all &&
	[ "${gA#*=}" = "$GID_A" ] && [ "${gB#*=}" = "$GID_B" ]; then
	t_ok "GID selection as NCCL (IPv4-mapped RoCE v2 via sysfs gid_attrs/types, cross-checked with ibv_query_gid_ex): $(chk A cli gid_select | cut -c6- | cut -d';' -f1)"
else
	t_fail "GID selection as NCCL picks the RoCE v2 IPv4 GID ($GID_A / $GID_B)" \
		"picked ${gA#*=} / ${gB#*=}" "$(chk A cli gid_select; chk A srv gid_select; chk A cli query_gid_all)"
fi

if all_pass A reg_mr_iova2 && passed A; then
	t_ok "ibv_reg_mr_iova2 with IBV_ACCESS_RELAXED_ORDERING: $(chk A cli reg_mr_iova2 | wc -l) + $(chk A srv reg_mr_iova2 | wc -l) registrations (two overlapping), all data verified through them"
else
	t_fail "ibv_reg_mr_iova2 with IBV_ACCESS_RELAXED_ORDERING" "$(chk A cli reg_mr_iova2; chk A srv reg_mr_iova2)"
fi

if all_pass A dmabuf; then
	t_ok "ibv_reg_dmabuf_mr(fd -1) says 'not supported' as NCCL expects: $(chk A cli dmabuf | cut -c6- | cut -d: -f1)"
else
	t_fail "ibv_reg_dmabuf_mr(fd -1) fails with EOPNOTSUPP or EPROTONOSUPPORT" "$(chk A cli dmabuf; chk A srv dmabuf)"
fi

if all_pass A ece_query && all_pass A ece_set; then
	t_ok "ECE: ibv_query_ece and ibv_set_ece return EOPNOTSUPP (NCCL: unsupported)"
else
	t_fail "ECE: ibv_query_ece/ibv_set_ece return EOPNOTSUPP" "$(chk A cli ece_query; chk A srv ece_set)"
fi

if all_pass A sender_qp && all_pass A receiver_qp && passed A; then
	t_ok "QPs as NCCL: sender $(chk A cli sender_qp | cut -c6-); receiver $(chk A srv receiver_qp | cut -c6-)"
else
	t_fail "QPs as NCCL (sender max_recv_wr 0, receiver 256, loopback flush QP)" "$(chk A cli sender_qp; chk A srv receiver_qp)"
fi

cts=$(res A cli cts) spin=$(res A cli cts_spin) sig=$(res A srv cts_signaled)
if passed A && all_pass A cts_plain_memory && [ "$cts" -eq $NA ] && [ "$sig" -eq $(((NA + 255) / 256)) ]; then
	t_ok "CTS: $cts 64-byte entries RDMA-written into the sender's FIFO ($sig signaled, 1 per 256 slots), read and checked in plain memory; $spin arrived while the sender spun with no verbs call"
else
	t_fail "CTS entries written by RDMA_WRITE, polled in plain memory" "cts $cts spin $spin signaled $sig" "$(chk A cli cts_plain_memory)"
fi

imm=$(res A srv imm_data)
if passed A && [ "$imm" -gt 0 ]; then
	t_ok "WRITE_WITH_IMM carrying data: $imm completions with imm_data = size and byte_len = payload, data verified"
else
	t_fail "WRITE_WITH_IMM carrying data" "$imm completions" "$(why A)"
fi

ar=$(res A srv ar) arc=$(res A cli ar)
if passed A && [ "$ar" -gt 0 ] && [ "$ar" -eq "$arc" ]; then
	t_ok "RDMA_WRITE + zero-length WRITE_WITH_IMM (no SGE, remote_addr 0, rkey 0) above 8192 bytes: $ar requests, byte_len 0, data placed before the completion"
else
	t_fail "RDMA_WRITE + zero-length WRITE_WITH_IMM with rkey 0" "receiver $ar, sender $arc" "$(why A)"
fi

mu=$(res A srv multi) mb=$(res A srv multi_bufs) tr=$(res A srv truncated)
if passed A && [ "$mu" -gt 0 ] && [ "$(res A srv sizes_recs)" -gt 0 ]; then
	t_ok "multi-receive: $mu requests with $mb buffers (up to 8 WRITEs + a WITH_IMM writing sizes[] into the receiver's completion record), sizes[] and data verified; $tr requests truncated to the posted size"
else
	t_fail "multi-receive with a sizes[] record" "multi $mu" "$(why A)"
fi

fl=$(res A srv flushes)
if passed A && [ "$fl" -gt $((NA / 2)) ]; then
	t_ok "flush: $fl 1-byte RDMA_READs through the QP connected to itself after the receives completed, each result checked"
else
	t_fail "flush READ over the loopback QP" "$fl flushes" "$(why A)"
fi

# --- run B: pre-posted receives, 4 QPs striped -----------------------------------------------
rcB=0
NB=800
nccl B 150 -n $NB -q 4 --split 1 --match id -s 64K --multi 25 --ar-threshold 8192 --flush-every 4 || rcB=$?
nB=$(res B srv reqs) rp=$(res B srv reposts)
if [ "$rcB" -eq 0 ] && passed B && [ "$nB" -eq $NB ] && all_pass B receiver_qp &&
	[ "$rp" -eq $((4 * NB)) ]; then
	t_ok "256 zero-SGE receives pre-posted per QP, imm_data = request id: $nB requests, $rp receives consumed and re-posted, wr_id/imm/byte_len checked, in $(res B srv elapsed_s) s"
else
	t_fail "256 pre-posted zero-SGE receives (id matching)" "exit $rcB, $nB requests, $rp re-posts" "$(logs B)"
fi
wq=$(res B cli cqes)
if passed B && [ "$wq" -eq $((4 * nB)) ]; then
	t_ok "4 QPs per connection, every request striped over all 4 (NCCL_IB_SPLIT_DATA_ON_QPS): $wq WITH_IMM completions (one per QP and request), $(res B cli zero_len) zero-length chunks, $(res B srv bytes) bytes verified ($(res B srv mbps) Mbit/s)"
else
	t_fail "several QPs per connection, one message striped" "$wq sender completions for $nB requests" "$(why B)"
fi

# --- run R: QPs used round robin ---------------------------------------------------------------
rcR=0
nccl R 120 -n 600 -q 2 --split 0 --match index -s 16K --multi 25 --ar-threshold 8192 --flush-every 4 || rcR=$?
nR=$(res R srv reqs)
if [ "$rcR" -eq 0 ] && passed R && [ "$nR" -eq 600 ] && [ "$(res R cli cqes)" -eq 600 ]; then
	t_ok "2 QPs per connection used round robin (NCCL_IB_QPS_PER_CONNECTION=2, no split): $nR requests, one WITH_IMM completion each, verified in $(res R srv elapsed_s) s"
else
	t_fail "2 QPs per connection used round robin" "exit $rcR, $nR requests" "$(logs R)"
fi

# --- run C: 100k requests across PSN and slot wrap, 1 % loss ------------------------------------
link_shape "$TOPO_SW" "$TOPO_PORT_B" loss 1%
rc_snap a0 "$RC_DEV_A"
rc_snap b0 "$RC_DEV_B"
rcC=0
nccl C 560 -n "$LONG_ITERS" -q 1 --match id -s 1K --multi 5 --ar-threshold 512 \
	--flush-every 32 --psn 0xfff800 || rcC=$?
rc_snap a1 "$RC_DEV_A"
rc_snap b1 "$RC_DEV_B"
drops=$(netem_stat "$TOPO_SW" "$TOPO_PORT_B" dropped) sent=$(netem_stat "$TOPO_SW" "$TOPO_PORT_B" sent)
link_clear "$TOPO_SW" "$TOPO_PORT_B"
nC=$(res C srv reqs)
retx=$(rc_delta a0 a1 retransmitted_packets) retxB=$(rc_delta b0 b1 retransmitted_packets)
t_diag "run C: $(res C srv elapsed_s) s; netem dropped $drops of $sent packets towards hostB; hostA tx $(rc_delta a0 a1 tx_packets) retransmitted $retx (rack $(rc_delta a0 a1 rack_losses) tlp $(rc_delta a0 a1 tail_loss_probes) rto $(rc_delta a0 a1 rto_events)); hostB retransmitted $retxB (rto $(rc_delta b0 b1 rto_events)) duplicates $(rc_delta b0 b1 duplicate_packets); longest gap between completed requests $(res C srv max_gap_ms) ms"
if [ "$rcC" -eq 0 ] && passed C && [ "$nC" -eq "$LONG_ITERS" ]; then
	t_ok "run C, 1 % loss towards the receiver: $nC requests ($(res C srv imm_data) WITH_IMM with data, $(res C srv ar) WRITE + zero-length WITH_IMM, $(res C srv multi) multi-receive, $(res C srv flushes) flushes), $(res C srv bufs) buffers, $(res C srv bytes) bytes, every byte and completion verified in $(res C srv elapsed_s) s"
else
	t_fail "run C: $LONG_ITERS requests under 1 % loss, all verified" "exit $rcC, $nC requests" "$(logs C)"
fi
sw=$(res C srv slot_wraps)
if passed C && [ "$sw" -ge $((LONG_ITERS / 256)) ]; then
	t_ok "FIFO slots wrapped $sw times (256 slots, CTS idx checked on every reuse)"
else
	t_fail "FIFO slot wrap" "$sw wraps" "$(why C)"
fi
sq=$(res C cli sq_psn_wrapped) rq=$(res C srv rq_psn_wrapped) cq=$(res C srv sq_psn_wrapped)
if passed C && [ "$sq" -eq 1 ] && [ "$rq" -eq 1 ] && [ "$cq" -eq 1 ]; then
	t_ok "PSNs wrapped in both directions: data and CTS (start 0xfff800; sender sq/rq PSNs from ibv_query_qp after the run: $(res C cli psns))"
else
	t_fail "PSN wrap on every QP" "sender sq wrapped $sq, receiver rq $rq, receiver sq $cq; PSNs $(res C cli psns)"
fi
if [ "$drops" -gt 0 ] && [ "$retx" -gt 0 ] && [ "$(rc_delta a0 a1 retry_exceeded)" -eq 0 ] &&
	[ "$(rc_delta b0 b1 retry_exceeded)" -eq 0 ]; then
	t_ok "loss recovered without an error completion: $drops packets dropped, $retx retransmitted by hostA, no retry_exceeded"
else
	t_fail "loss recovered without an error completion" "dropped $drops retransmitted $retx retry_exceeded $(rc_delta a0 a1 retry_exceeded)/$(rc_delta b0 b1 retry_exceeded)"
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

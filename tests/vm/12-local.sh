#!/bin/bash
# What a local user can do to a metaroce device:
#  - another socket holds [::]:udp_port (IPv6 only) when the device is
#    created: `rdma link add` fails and says why, instead of a device bound
#    for IPv4 only whose IPv6 traffic goes to that socket (review L2);
#    once the port is free, the device comes up;
#  - ibv_modify_qp refuses retry attributes beyond their IBTA widths
#    (min_rnr_timer, timeout > 31; retry_cnt, rnr_retry > 7) with EINVAL
#    and takes the largest valid ones (review L6).
# vm-test-timeout: 180
set -uo pipefail
# shellcheck source=tests/lib/guest.sh
. "${BASH_SOURCE[0]%/*}/../lib/guest.sh"
# shellcheck source=tests/lib/rc.sh
. "${BASH_SOURCE[0]%/*}/../lib/rc.sh"
trap topo_cleanup EXIT
PYV=${METAROCE_CACHE:-/var/cache/metaroce}/rdma-core-56.1/build/python

rc_dmesg_mark
rc_hosts --mtu 9000
PORT=$(rc_param udp_port)

# --- IPv6 port taken ---------------------------------------------------------------
rdma link del "$RC_DEV_B"
ip netns exec "$TOPO_B" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::", int(sys.argv[1])))
print("bound", flush=True)
time.sleep(120)' "$PORT" >/tmp/v6sock.out 2>&1 &
hog=$!
if wait_for 20 grep -q bound /tmp/v6sock.out; then
	t_ok "a user socket holds [::]:$PORT in $TOPO_B"
	mark=$(dmesg | wc -l)
	rc=0
	out=$(in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] && ! rdma link show "$RC_DEV_B/1" >/dev/null 2>&1; then
		t_ok "rdma link add fails while [::]:$PORT is taken ($out)"
	else
		t_fail "rdma link add fails while [::]:$PORT is taken" "exit $rc" "$(rdma link show)"
		rdma link del "$RC_DEV_B" >/dev/null 2>&1
	fi
	msg=$(dmesg | tail -n +$((mark + 1)) | grep "cannot bind UDP/IPv6 port $PORT")
	if [ -n "$msg" ]; then
		t_ok "the kernel log says why: ${msg#*] }"
	else
		t_fail "the kernel log says why" "$(dmesg | tail -n +$((mark + 1)))"
	fi
else
	t_fail "a user socket holds [::]:$PORT in $TOPO_B" "$(cat /tmp/v6sock.out)"
fi
kill "$hog" 2>/dev/null
wait "$hog" 2>/dev/null
t_check "rdma link add once the port is free" \
	in_host "$TOPO_B" rdma link add "$RC_DEV_B" type metaroce netdev "$TOPO_DEV"
GID_B=$(wait_for 10 rxe_gid_index "$RC_DEV_B" "$TOPO_B_IP" && rxe_gid_index "$RC_DEV_B" "$TOPO_B_IP")
rc=0
rc_verify --timeout 120 --log /tmp/local_v -q 1 -n 100 -s 16K || rc=$?
if [ "$rc" -eq 0 ] && [ "$(rc_result /tmp/local_v.cli status)" = PASS ]; then
	t_ok "verified traffic on the new device"
else
	t_fail "verified traffic on the new device" "exit $rc" "$(tail -n 5 /tmp/local_v.cli /tmp/local_v.srv)"
fi

# --- QP attribute ranges ------------------------------------------------------------
if ! compgen -G "$PYV/pyverbs/device.*.so" >/dev/null; then
	t_skip "QP retry attributes range-checked" "no pyverbs in $PYV"
else
	PYTHONPATH=$PYV python3 - "$RC_DEV_A" "$GID_A" >/tmp/ranges.out 2>&1 <<-'EOF'
		import errno, sys
		import pyverbs.enums as e
		from pyverbs.addr import AHAttr, GlobalRoute
		from pyverbs.cq import CQ
		from pyverbs.device import Context
		from pyverbs.pd import PD
		from pyverbs.pyverbs_error import PyverbsRDMAError
		from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

		dev, gidx = sys.argv[1], int(sys.argv[2])
		ctx = Context(name=dev)
		pd = PD(ctx)
		cq = CQ(ctx, 16)
		qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
		                       cap=QPCap(max_send_wr=4, max_recv_wr=4)))
		a = QPAttr(qp_state=e.IBV_QPS_INIT)
		a.pkey_index = 0
		a.qp_access_flags = 0
		qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
		          e.IBV_QP_ACCESS_FLAGS)
		gr = GlobalRoute(dgid=ctx.query_gid(1, gidx), sgid_index=gidx)

		def attempt(state, field, val):
		    a = QPAttr(qp_state=state, path_mtu=e.IBV_MTU_1024)
		    a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
		    a.dest_qp_num = qp.qp_num
		    a.rq_psn = a.sq_psn = 0
		    a.max_dest_rd_atomic = a.max_rd_atomic = 1
		    a.min_rnr_timer, a.timeout, a.retry_cnt, a.rnr_retry = 12, 14, 7, 7
		    setattr(a, field, val)
		    if state == e.IBV_QPS_RTR:
		        mask = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
		                e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
		                e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
		    else:
		        mask = (e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT |
		                e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
		                e.IBV_QP_MAX_QP_RD_ATOMIC)
		    try:
		        qp.modify(a, mask)
		        return 0
		    except PyverbsRDMAError as err:
		        return abs(err.error_code)

		bad = 0
		for state, field, hi in ((e.IBV_QPS_RTR, "min_rnr_timer", 31),
		                         (e.IBV_QPS_RTS, "timeout", 31),
		                         (e.IBV_QPS_RTS, "retry_cnt", 7),
		                         (e.IBV_QPS_RTS, "rnr_retry", 7)):
		    rc = attempt(state, field, hi + 1)
		    ok = rc == errno.EINVAL
		    print("%s %s=%d: %s" % ("ok" if ok else "BAD", field, hi + 1,
		                            "EINVAL" if ok else "errno %d" % rc))
		    bad += not ok
		    if field in ("min_rnr_timer", "rnr_retry"):
		        rc = attempt(state, field, hi)
		        print("%s %s=%d: errno %d" % ("ok" if rc == 0 else "BAD",
		                                       field, hi, rc))
		        bad += rc != 0
		att, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_MIN_RNR_TIMER |
		                  e.IBV_QP_RNR_RETRY)
		print("state %d min_rnr_timer %d rnr_retry %d" %
		      (att.qp_state, att.min_rnr_timer, att.rnr_retry))
		if (att.qp_state, att.min_rnr_timer, att.rnr_retry) != \
		        (e.IBV_QPS_RTS, 31, 7):
		    bad += 1
		sys.exit(1 if bad else 0)
	EOF
	rc=$?
	if [ "$rc" -eq 0 ]; then
		t_ok "QP retry attributes beyond their widths fail with EINVAL, the largest valid ones are taken"
	else
		t_fail "QP retry attributes beyond their widths fail with EINVAL, the largest valid ones are taken" \
			"exit $rc" "$(cat /tmp/ranges.out)"
	fi
fi

bad=$(rc_dmesg_bad)
if [ -z "$bad" ]; then t_ok "no kernel warnings"; else t_fail "no kernel warnings" "$bad"; fi
t_summary

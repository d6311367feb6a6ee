#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# isolation.sh: tenants (virtual networks) are isolated from each other.
#
# A vRNIC reaches only vRNICs of its own tenant: traffic to another tenant's
# QPs is dropped and the requester sees what real RC hardware shows for an
# unreachable peer (IBV_WC_RETRY_EXC_ERR), with or without a GRH, whatever QPN
# or rkey it guesses (DESIGN.md section 5, engine/route.c).
#
# Every case runs a victim (build/tools/isoprobe victim) in a container of vr0
# (tenant t1): a buffer with a known pattern registered with remote read,
# write and atomic access, an RC and a UD QP, receives posted. An attacker
# (isoprobe attack) in a container of another vRNIC gets the victim's QPNs,
# rkey, address, Q_Key and GID (a file in the case's scratch directory), and
# the victim connects its RC QP to the attacker's (so that only tenant
# isolation stands between them, not the RC rule that a responder answers its
# connected peer only). The attacker tries RDMA WRITE, WRITE_WITH_IMM, READ,
# SEND, SEND_WITH_IMM and both atomics over one route:
#   same_tenant   vr1 (t1): the control case, everything works, data checked
#   rc_grh        vr2 (t2): RC with a GRH to the victim's GID
#   rc_own_gid    vr3 (t2, the victim's IP in t2's address space): RC with a
#                 GRH to its own GID (numerically the victim's) and to vr2's
#   rc_nogrh      vr2 (t2): RC without a GRH (is_global 0, dlid 0)
#   ud            vr2 (t2): UD SENDs with the victim's Q_Key, with a GRH to the
#                 victim, without one, and to t2 addresses
#   guess_qpns    vr2 (t2) and vr4 (t3, --blind: the victim is not connected
#                 to it) at once: every QPN within 64 of the victim's, RC and
#                 UD (the other attacker's QPNs too), and (vr2) the victim's
#                 rkey replayed inside t2 (as rkey, lkey)
#   mcast         a QP of vr2 (t2) in t1's multicast group gets none of it
#   region_files  vr2 (t2): the victim's pages live in vr0's region file; a
#                 container of t2 sees only its own vRNIC's directory and no
#                 state dir, admin socket or other region (not by path, not
#                 through /proc)
# In the blocked cases every RC attempt must end in IBV_WC_RETRY_EXC_ERR within
# 1 s (its retry budget is 3 x 262 us) and bring nothing back, the victim's
# memory, receive buffers, CQ and QP states stay unchanged, the attacker's
# vRNIC counts drops_other_tenant > 0 and the victim's vRNIC received nothing
# (rx_ops 0, errors 0).
. "$(dirname "$0")/lib.sh"

TOOLS=$BUILD/tools
ISOPROBE=$TOOLS/isoprobe

admin() { "$UNIRDMA" --json "$@"; }

# vrnic_field VRNIC KEY: a top-level field or a counter of `vrnic show`.
vrnic_field() {
	admin vrnic show "$1" | python3 -c '
import json, sys
v = json.load(sys.stdin)["vrnic"]
k = sys.argv[1]
print(v["counters"][k] if k in v["counters"] else v[k])' "$2"
}

setup_tenants() {
	require_root
	require_prog python3
	start_daemon
	[ -x "$ISOPROBE" ] || die "$ISOPROBE is not built (run make)"
	local n=$SUBNET g=(--grhless-av on)
	IP_V=10.77.$n.1 IP_N=10.77.$n.2 IP_X=10.77.$n.3
	# --grhless-av on: the routes without a GRH (nogrh, UD without one) are
	# the ones found by QPN alone, the widest door a tenant could have;
	# the default (RoCE's rule) refuses them before any packet is sent
	"$UNIRDMA" vrnic create vr0 --tenant t1 --ip "$IP_V/24" "${g[@]}" >/dev/null || die "vrnic create vr0"
	"$UNIRDMA" vrnic create vr1 --tenant t1 --ip "$IP_N/24" "${g[@]}" >/dev/null || die "vrnic create vr1"
	"$UNIRDMA" vrnic create vr2 --tenant t2 --ip "$IP_X/24" "${g[@]}" >/dev/null || die "vrnic create vr2"
	# t2 reuses the victim's address in its own address space
	"$UNIRDMA" vrnic create vr3 --tenant t2 --ip "$IP_V/24" "${g[@]}" >/dev/null || die "vrnic create vr3"
	"$UNIRDMA" vrnic create vr4 --tenant t3 --ip "10.77.$n.4/24" "${g[@]}" >/dev/null || die "vrnic create vr4"
	say "vRNICs: vr0 $IP_V (t1, victim), vr1 $IP_N (t1), vr2 $IP_X (t2), vr3 $IP_V (t2), vr4 10.77.$n.4 (t3)"
}
CASE_SETUP=setup_tenants

VICTIM_PID=
# start_victim intact|touched: the victim in a container of vr0; waits for its line.
start_victim() {
	local i
	rm -f "$WORK"/victim.*
	say "+ victim in container vr0: isoprobe victim --expect $1"
	# (isoprobe line-buffers its output itself)
	in_container vr0 "$ISOPROBE" victim --info "$WORK/victim.info" \
		--go "$WORK/victim.go" --expect "$1" --timeout 60 >"$WORK/victim.out" 2>&1 &
	VICTIM_PID=$!
	SERVER_PIDS+=("$VICTIM_PID")
	for ((i = 0; i < 200; i++)); do
		[ -s "$WORK/victim.info" ] && break
		if ! kill -0 "$VICTIM_PID" 2>/dev/null; then
			sed 's/^/  | /' "$WORK/victim.out"
			die "the victim exited before it was ready"
		fi
		sleep 0.05
	done
	[ -s "$WORK/victim.info" ] || { sed 's/^/  | /' "$WORK/victim.out"; die "the victim was not ready within 10 s"; }
	say "  $(cat "$WORK/victim.info")"
}

# finish_victim: lets the victim check itself; prints its output; its exit code.
finish_victim() {
	local rc
	touch "$WORK/victim.go"
	if wait_for_exit "$VICTIM_PID" 20; then
		wait "$VICTIM_PID"
		rc=$?
	else
		kill -TERM "$VICTIM_PID" 2>/dev/null
		wait "$VICTIM_PID" 2>/dev/null
		rc=timeout
	fi
	say "--- victim (exit code $rc) ---"
	sed 's/^/  | /' "$WORK/victim.out"
	[ "$rc" = 0 ]
}

# start_attack VRNIC EXPECT ARGS...: isoprobe attack in a container of VRNIC,
# in the background (ATTACK_PID; output in $WORK/attack.VRNIC.out).
start_attack() {
	local vr=$1 expect=$2
	shift 2
	say "+ attacker in container $vr: isoprobe attack --expect $expect $*"
	timeout -k 5 60 "$UNIRDMA" exec "$vr" -- "$ISOPROBE" attack \
		--info "$WORK/victim.info" --expect "$expect" "$@" >"$WORK/attack.$vr.out" 2>&1 &
	ATTACK_PID=$!
	SERVER_PIDS+=("$ATTACK_PID")
}

# end_attack VRNIC PID: waits for it, prints its output; 0 if it exited 0.
end_attack() {
	local rc
	wait "$2"
	rc=$?
	say "--- attacker in $1 (exit code $rc) ---"
	sed 's/^/  | /' "$WORK/attack.$1.out"
	[ "$rc" = 0 ]
}

# attack VRNIC EXPECT ARGS...: one attacker, in the foreground.
attack() {
	start_attack "$@"
	end_attack "$1" "$ATTACK_PID"
}

# blocked VRNIC ATTACK-ARGS...: the whole blocked-case protocol.
blocked() {
	local vr=$1 drops rx err
	shift
	start_victim intact
	check "every attempt from $vr was blocked (retry exceeded, nothing read back)" \
		attack "$vr" blocked "$@"
	check "the victim's memory, receive buffers, CQ and QPs are unchanged" finish_victim
	drops=$(vrnic_field "$vr" drops_other_tenant)
	rx=$(vrnic_field vr0 rx_ops)
	err=$(vrnic_field vr0 errors)
	say "counters: $vr drops_other_tenant=$drops; vr0 rx_ops=$rx errors=$err rx_bytes=$(vrnic_field vr0 rx_bytes)"
	check "$vr counted drops_other_tenant > 0 ($drops)" test "${drops:-0}" -gt 0
	check "vr0 received nothing (rx_ops $rx)" test "$rx" = 0
	check "vr0 had no error (errors $err)" test "$err" = 0
	checks_result
}

case_same_tenant() {
	local drops rx
	start_victim touched
	check "same tenant: every operation succeeds and returns the victim's data" \
		attack vr1 ok grh nogrh ud
	check "the victim sees the writes, atomics and receives" finish_victim
	drops=$(vrnic_field vr1 drops_other_tenant)
	rx=$(vrnic_field vr0 rx_ops)
	say "counters: vr1 drops_other_tenant=$drops; vr0 rx_ops=$rx"
	check "no drop counted within a tenant ($drops)" test "$drops" = 0
	check "vr0 received the operations (rx_ops $rx >= 16)" test "$rx" -ge 16
	checks_result
}

case_rc_grh() { blocked vr2 grh; }
case_rc_own_gid() { blocked vr3 --gid "::ffff:$IP_V" --gid "::ffff:$IP_X" own; }
case_rc_nogrh() { blocked vr2 nogrh; }
case_ud() { blocked vr2 --gid "::ffff:$IP_X" ud; }
# Two tenants brute-force at once (vr2 of t2, vr4 of t3: each other's QPNs
# are in range too, and just as unreachable), while the victim waits.
case_guess_qpns() {
	local p2 p4 v drops
	start_victim intact
	start_attack vr2 blocked guess=64 keys
	p2=$ATTACK_PID
	start_attack vr4 blocked --blind guess=64
	p4=$ATTACK_PID
	check "every guess from vr2 was blocked (retry exceeded, nothing read back)" end_attack vr2 "$p2"
	check "every guess from vr4 was blocked (retry exceeded, nothing read back)" end_attack vr4 "$p4"
	check "the victim's memory, receive buffers, CQ and QPs are unchanged" finish_victim
	for v in vr2 vr4; do
		drops=$(vrnic_field "$v" drops_other_tenant)
		check "$v counted drops_other_tenant > 0 ($drops)" test "${drops:-0}" -gt 0
	done
	check "vr0 received nothing (rx_ops $(vrnic_field vr0 rx_ops))" test "$(vrnic_field vr0 rx_ops)" = 0
	check "vr0 had no error (errors $(vrnic_field vr0 errors))" test "$(vrnic_field vr0 errors)" = 0
	checks_result
}

# The victim's registered pages live in vr0's region file (its memory window):
# a container of another tenant must not be able to reach that file at all.
case_region_files() {
	local dir rc
	dir=$(vrnic_field vr0 dir)
	start_victim intact
	say "+ in a container of vr2: look for vr0's region ($dir/region) and the admin socket"
	in_container vr2 bash -c '
		ls -A /run/unirdma/dev | tr "\n" " "; echo
		for f in "$1/region" "$2/admin.sock" "$2/vrnics"; do
			if [ -e "$f" ]; then echo "REACHABLE $f"; else echo "absent $f"; fi
		done
		ls -A "$2" | sed "s/^/state dir entry: /"
		for l in /proc/[0-9]*/fd/* /proc/[0-9]*/map_files/*; do
			t=$(readlink "$l" 2>/dev/null) || continue
			case $t in *"/$3/region"*) echo "REACHABLE via $l -> $t" ;; esac
		done
		{ exec 9<"$1/region"; } 2>/dev/null && echo "REACHABLE: opened $1/region"
		true' _ "$dir" "$STATE" vr0 >"$WORK/fs.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$WORK/fs.out"
	check "the container ran (exit code $rc)" test "$rc" = 0
	check "its device directory holds only vr2" test "$(head -n 1 "$WORK/fs.out")" = "vr2 "
	check "vr0's region file, the admin socket and the state dir are out of reach" \
		bash -c "! grep -q REACHABLE '$WORK/fs.out' && ! grep -q 'state dir entry' '$WORK/fs.out'"
	check "the victim is unchanged" finish_victim
	checks_result
}

# mcast: t_mcast between vr0 and vr1 (t1) with a QP of vr2 (t2) in the same
# group: t2's QP never receives t1's multicast.
case_mcast() {
	local dev=$WORK/mdev v
	mkdir -p "$dev"
	for v in vr0 vr1 vr2; do
		ln -s "$(vrnic_field "$v" dir)" "$dev/$v" || die "no dir of $v"
	done
	UNIRDMA_DEVDIR=$dev UNIRDMA_TEST_DEV0=vr0 UNIRDMA_TEST_DEV1=vr1 UNIRDMA_TEST_MCAST_OTHER=vr2 \
		LD_LIBRARY_PATH=$UNIRDMA_LIBDIR timeout 60 "$BUILD/tests/t_mcast" >"$WORK/mcast.out" 2>&1
	check "t_mcast passes" test $? -eq 0
	sed 's/^/  | /' "$WORK/mcast.out"
	check "vr2's QP (tenant t2) in the group received nothing" \
		grep -q "other tenant's QP in the group received nothing" "$WORK/mcast.out"
	checks_result
}

add_case same_tenant case_same_tenant
add_case rc_grh case_rc_grh
add_case rc_own_gid case_rc_own_gid
add_case rc_nogrh case_rc_nogrh
add_case ud case_ud
add_case guess_qpns case_guess_qpns
add_case region_files case_region_files
add_case mcast case_mcast
run_cases "$@"

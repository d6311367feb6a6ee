#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ibverbs_utils.sh: rdma-core's example programs (package ibverbs-utils),
# unmodified, in containers of two vRNICs through our libibverbs.
. "$(dirname "$0")/lib.sh"

# devices_in VRNIC [--no-container]: ibv_devices there lists exactly VRNIC.
devices_in() {
	local vr=$1 rows
	shift
	say "+ unirdma exec ${*:+$* }$vr -- ibv_devices"
	"$UNIRDMA" exec "$@" "$vr" -- ibv_devices >"$WORK/out" 2>&1 || { sed 's/^/  | /' "$WORK/out"; return 1; }
	sed 's/^/  | /' "$WORK/out"
	rows=$(device_lines "$WORK/out")
	[ "$(printf '%s\n' "$rows" | grep -c .)" = 1 ] || { say "  expected exactly one device"; return 1; }
	printf '%s\n' "$rows" | grep -q "$vr" || { say "  the device is not named after $vr"; return 1; }
}

case_devices() {
	require_prog ibv_devices
	check "a container of $VR_A sees one device, $VR_A" devices_in "$VR_A"
	check "a container of $VR_B sees one device, $VR_B" devices_in "$VR_B"
	check "--no-container sees one device, $VR_A" devices_in "$VR_A" --no-container
	checks_result
}

case_devinfo() {
	require_prog ibv_devinfo
	local out=$WORK/devinfo
	say "+ unirdma exec $VR_A -- ibv_devinfo -v"
	"$UNIRDMA" exec "$VR_A" -- ibv_devinfo -v >"$out" 2>&1
	check "ibv_devinfo -v exits 0" test $? = 0
	sed 's/^/  | /' "$out"
	check "exactly one device" test "$(grep -c 'hca_id:' "$out")" = 1
	check "it is $VR_A" grep -Eq "hca_id:[[:space:]]+.*$VR_A" "$out"
	check "its port is active" grep -q PORT_ACTIVE "$out"
	check "link layer Ethernet (RoCE)" grep -Eq "link_layer:[[:space:]]+Ethernet" "$out"
	check "GID 0 is ::ffff:$IP_A" grep -Eiq "GID\[ *0\]:[[:space:]]+::ffff:$IP_A" "$out"
	say "+ unirdma exec $VR_B -- ibv_devinfo"
	"$UNIRDMA" exec "$VR_B" -- ibv_devinfo >"$out" 2>&1
	check "$VR_B's container sees only $VR_B" eval 'grep -c "hca_id:" "$out" | grep -qx 1 && grep -q "$VR_B" "$out" && ! grep -q "$VR_A\b" "$out"'
	checks_result
}

# pingpong PROGRAM OPTIONS...: server PROGRAM OPTIONS, client PROGRAM OPTIONS IP_A.
pingpong() {
	local prog=$1
	shift
	require_prog "$prog"
	run_pair "$prog${*:+ $*}" "$prog${*:+ $*} $IP_A" || return 1
	check "the client reports its transfer" grep -q "iters in" "$PAIR_CLIENT_OUT"
	check "the server reports its transfer" grep -q "iters in" "$PAIR_SERVER_OUT"
	checks_result
}

# nogid PROGRAM: without -g the program gives no GRH.  A RoCE port refuses
# such an address vector (EINVAL from the kernel's rdma_check_ah_attr: RTR or
# ibv_create_ah fails), and so does a vRNIC, unless its operator allows
# InfiniBand-style AVs (`vrnic set --grhless-av on`): then it runs.
nogid() {
	local prog=$1 rc
	require_prog "$prog"
	run_pair "$prog" "$prog $IP_A"
	rc=$?
	check "without -g, $prog fails as it does on a RoCE port" test "$rc" -ne 0
	check "it says why: the address vector was refused" \
		grep -Eq "Failed to modify QP to RTR|Failed to create AH" "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"
	say "+ unirdma vrnic set $VR_A|$VR_B --grhless-av on"
	"$UNIRDMA" vrnic set "$VR_A" --grhless-av on >/dev/null && "$UNIRDMA" vrnic set "$VR_B" --grhless-av on >/dev/null
	check "vrnic set --grhless-av on works" test $? -eq 0
	check "then $prog runs without -g" run_pair "$prog" "$prog $IP_A"
	check "vrnic show says so" sh -c "'$UNIRDMA' vrnic show '$VR_A' | grep -q 'grhless_av: *true'"
	"$UNIRDMA" vrnic set "$VR_A" --grhless-av off >/dev/null
	"$UNIRDMA" vrnic set "$VR_B" --grhless-av off >/dev/null
	checks_result
}

add_case devices case_devices
add_case devinfo case_devinfo
add_case rc_pingpong nogid ibv_rc_pingpong
add_case rc_pingpong-g0 pingpong ibv_rc_pingpong -g 0
add_case rc_pingpong-g1 pingpong ibv_rc_pingpong -g 1 -c     # rxe's index
add_case rc_pingpong-g3 pingpong ibv_rc_pingpong -g 3 -c     # ConnectX's
add_case ud_pingpong-g3 pingpong ibv_ud_pingpong -g 3 -c
add_case rc_pingpong-e pingpong ibv_rc_pingpong -g 0 -e
add_case rc_pingpong-s1 pingpong ibv_rc_pingpong -g 0 -s 1
add_case rc_pingpong-s4096 pingpong ibv_rc_pingpong -g 0 -s 4096
add_case rc_pingpong-s65536 pingpong ibv_rc_pingpong -g 0 -s 65536
add_case rc_pingpong-s1048576 pingpong ibv_rc_pingpong -g 0 -s 1048576
add_case rc_pingpong-n10000 pingpong ibv_rc_pingpong -g 0 -n 10000
add_case rc_pingpong-chk pingpong ibv_rc_pingpong -g 0 -c -s 8192
add_case srq_pingpong pingpong ibv_srq_pingpong -g 0
add_case uc_pingpong pingpong ibv_uc_pingpong -g 0
add_case uc_pingpong-chk pingpong ibv_uc_pingpong -c -g 0 -s 8192
add_case ud_pingpong nogid ibv_ud_pingpong
add_case ud_pingpong-g0 pingpong ibv_ud_pingpong -g 0
add_case ud_pingpong-chk pingpong ibv_ud_pingpong -c -g 0
run_cases "$@"

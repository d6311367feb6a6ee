#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# demo.sh: unirdma end to end. Starts a private unirdmad, creates two vRNICs
# of one tenant, and runs unmodified RDMA programs (ibv_rc_pingpong, then
# ib_write_bw) between two containers through unirdma's libibverbs.
# Everything it creates is removed at the end, also on Ctrl-C or an error.
# Needs root (namespaces) and a build (make).
set -uo pipefail

. "$(dirname "$0")/../tests/integration/lib.sh"

TENANT=demo
VR_A=demo-a IP_A=10.88.0.1
VR_B=demo-b IP_B=10.88.0.2
STEP=0

bold() { if [ -t 1 ]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
step() {
	STEP=$((STEP + 1))
	echo
	bold "== Step $STEP: $*"
}
run() {
	printf '$ %s\n' "$*"
	"$@"
}
# Failure anywhere: say where, and let the EXIT trap clean up.
fail() {
	echo
	bold "demo FAILED at step $STEP: $*"
	exit 1
}

[ "$(id -u)" -eq 0 ] || { echo "demo.sh needs root (it creates namespaces)"; exit 1; }
for p in ibv_rc_pingpong ib_write_bw ip; do
	command -v "$p" >/dev/null || { echo "demo.sh needs $p: run scripts/install-deps.sh"; exit 1; }
done

bold "unirdma demo: two containers, two vRNICs, unmodified verbs programs"

step "start unirdmad, the host daemon that implements the vRNICs"
start_daemon # from tests/integration/lib.sh; its EXIT trap removes everything
echo "unirdmad runs as PID $DAEMON_PID with the private state directory $STATE"
run "$UNIRDMA" daemon ping || fail "the daemon does not answer"

step "create two vRNICs of tenant '$TENANT'"
run "$UNIRDMA" vrnic create "$VR_A" --tenant "$TENANT" --ip "$IP_A/24" || fail "vrnic create"
run "$UNIRDMA" vrnic create "$VR_B" --tenant "$TENANT" --ip "$IP_B/24" || fail "vrnic create"
run "$UNIRDMA" vrnic list

step "what a container sees (unirdma exec VRNIC -- PROGRAM)"
echo "Each 'unirdma exec' starts a fresh container: new mount, network, PID, IPC and UTS"
echo "namespaces. Its eth0 is one end of a veth pair whose other end is a port of a"
echo "bridge in a network namespace of its own, one per tenant, so the containers of a"
echo "tenant reach each other over TCP (which the programs use to exchange QP numbers),"
echo "while the RDMA traffic goes through the vRNICs. Inside, the program has a root"
echo "file system of its own (the host's /usr, /etc, ... read-only) and no capabilities."
echo "The host's namespaces, for comparison:"
echo "  host: net $(readlink /proc/self/ns/net)  pid $(readlink /proc/self/ns/pid)  mnt $(readlink /proc/self/ns/mnt)"
# shellcheck disable=SC2016 # expanded inside the container
view='echo "  hostname $(hostname), PID $$ (PID 1 is $(cat /proc/1/comm))"
echo "  net $(readlink /proc/self/ns/net)  pid $(readlink /proc/self/ns/pid)  mnt $(readlink /proc/self/ns/mnt)"
echo "  addresses: $(ip -o -4 addr show | awk "{ printf \"%s %s  \", \$2, \$4 }")"
echo "  /run/unirdma/dev holds: $(ls /run/unirdma/dev)"
echo "  libibverbs.so.1 comes from: $(ldd "$(command -v ibv_devices)" | awk "/libibverbs/ { print \$3 }")"
echo "  ibv_devices lists:"
ibv_devices | sed "s/^/      /"'
for vr in "$VR_A" "$VR_B"; do
	echo
	echo "container of $vr:"
	"$UNIRDMA" exec "$vr" -- sh -c "$view" || fail "exec in $vr"
done
echo
echo "(a namespace's number can come back once the container that had it is gone)"
echo "the containers' bridge: br0 in the network namespace $(bridge_ns "$STATE" "$TENANT") (ip netns list)"

step "ibv_rc_pingpong: RC send/receive ping-pong between the two containers"
run_pair "ibv_rc_pingpong -g 0" "ibv_rc_pingpong -g 0 $IP_A" || fail "ibv_rc_pingpong"
PP=$(grep -h "iters in" "$PAIR_CLIENT_OUT")

step "ib_write_bw: RDMA WRITE bandwidth from $VR_B's container into $VR_A's"
run_pair "ib_write_bw -F" "ib_write_bw -F $IP_A" || fail "ib_write_bw"
BW=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4 { print }' "$PAIR_CLIENT_OUT" | tail -n 1)

step "the vRNICs afterwards: the programs' objects are released, the traffic is counted"
run "$UNIRDMA" vrnic list
run "$UNIRDMA" vrnic show "$VR_B"

step "summary"
echo "ibv_rc_pingpong ($VR_B -> $VR_A): $PP"
if [ -n "$BW" ]; then
	read -r bytes iters peak avg rate _ <<<"$BW"
	echo "ib_write_bw     ($VR_B -> $VR_A): $bytes-byte messages x $iters: average $avg MB/s (peak $peak MB/s, $rate Mpps)"
fi
echo
echo "cleaning up: stopping unirdmad, removing the bridge namespace and $WORK"
bold "demo done"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# podman_hosts.sh: podman containers with CDI vRNICs on two simulated hosts
# (tests/integration/mhlib.sh: network namespaces on one underlay, each with
# its own unirdmad, etcd as the directory).
#   two_hosts  a podman container with --device unirdma.io/vrnic=h1v1 runs in
#              host 1's network namespace, one with h2v1 in host 2's; Debian's
#              unmodified ib_write_bw -x 0 -F, ibv_rc_pingpong -g 0 and ib_read_lat run
#              between them over RoCEv2 on the underlay
# Podman as in podman.sh: runc, no registry (an image made with `podman
# import`, the host's /usr bound read-only), --network none (the spec's hook
# puts eth0 on the tenant's bridge of its host; mh_tenant_lan links the two
# hosts' bridges for the programs' TCP exchange). Podman 4.3 reads CDI specs
# only from /etc/cdi and /var/run/cdi (containers.conf has no cdi_spec_dirs
# before podman 4.5), so both daemons write there, each into a file named
# after its state dir; the daemons remove their files when they stop, the
# case removes its containers and image.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podlib.sh"
. "$(dirname "$0")/mhlib.sh"

CASE_SETUP=:
CDI_DIR=/var/run/cdi
IMAGE=localhost/unirdma-test:hosts
LABEL=unirdma-test=podman-hosts-$$
PODMAN=(podman --runtime runc)
RUN_OPTS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 --network none
	-v /usr:/usr:ro --label "$LABEL")
[ -n "${UNIRDMA_EXEC_PRELOAD:-}" ] && RUN_OPTS+=(-e "LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD")
[ -n "${ASAN_OPTIONS:-}" ] && RUN_OPTS+=(-e "ASAN_OPTIONS=$ASAN_OPTIONS")
[ -d "$CDI_DIR" ] && CDI_DIR_WAS_THERE=1 || CDI_DIR_WAS_THERE=0

# before mh_cleanup (which stops the daemons: their specs go with them)
ph_cleanup() {
	"${PODMAN[@]}" rm -f --filter "label=$LABEL" >/dev/null 2>&1
	"${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
}
ph_cdi_dir_cleanup() { [ "$CDI_DIR_WAS_THERE" = 1 ] || rmdir "$CDI_DIR" 2>/dev/null; }

# on_host K PODMAN-ARGS...: podman in host K's network namespace. nsenter,
# as mh_daemon: `ip netns exec` would also give podman a mount namespace
# with a fresh /sys, without the cgroup file system runc needs.
on_host() {
	local k=$1
	shift
	nsenter --net="/run/netns/$(mh_ns "$k")" "${PODMAN[@]}" "$@"
}

# hpair DESC SERVER_CMD... -- CLIENT_CMD...: the server in a podman container
# of h1v1 on host 1, the client in one of h2v1 on host 2.
hpair() {
	local desc=$1 scmd=() ccmd=() name=srv$$-$RANDOM rc src
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	say "+ host 1, podman h1v1: ${scmd[*]}; host 2, podman h2v1: ${ccmd[*]}"
	on_host 1 run -d --name "$name" "${RUN_OPTS[@]}" --device unirdma.io/vrnic=h1v1 "$IMAGE" \
		"${scmd[@]}" >/dev/null 2>"$WORK/$name.err" || { say "  podman run: $(cat "$WORK/$name.err")"; return 1; }
	if ! server_up "$name" 18515; then
		say "  the server did not listen; its log:"
		"${PODMAN[@]}" logs "$name" 2>&1 | tail -n 5 | sed 's/^/  | /'
		return 1
	fi
	timeout 60 nsenter --net="/run/netns/$(mh_ns 2)" "${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" \
		--device unirdma.io/vrnic=h2v1 "$IMAGE" "${ccmd[@]}" >"$WORK/client.out" 2>&1
	rc=$?
	src=$(timeout 30 "${PODMAN[@]}" wait "$name" 2>/dev/null)
	"${PODMAN[@]}" logs "$name" >"$WORK/server.out" 2>&1
	"${PODMAN[@]}" rm -f "$name" >/dev/null 2>&1
	tail -n 3 "$WORK/client.out" | sed 's/^/  client | /'
	tail -n 2 "$WORK/server.out" | sed 's/^/  server | /'
	check "$desc: client exit 0 ($rc), server exit 0 (${src:-none})" test "$rc/$src" = 0/0
}

# wait_gid K IP: host K's directory knows the GID of IP (5 s at most)
wait_gid() {
	local i
	for ((i = 0; i < 50; i++)); do
		mh_cli "$1" cluster gids 2>/dev/null | grep -qw "$2" && return 0
		sleep 0.1
	done
	say "host $1 does not know $2's GID after 5 s"
	return 1
}

# wire_both K PEER: host K's daemon counted packets to and from host PEER
wire_both() {
	mh_cli "$1" --json hosts | python3 -c '
import json, sys
c = [h["counters"] for h in json.load(sys.stdin)["hosts"] if h["name"] == sys.argv[1]][0]
print("  host %s: %d packets (%d bytes) to %s, %d from it" % (sys.argv[2], c["tx_packets"], c["tx_bytes"],
      sys.argv[1], c["rx_packets"]))
sys.exit(not (c["tx_packets"] > 0 and c["rx_packets"] > 0))' "$2" "$1"
}

case_two_hosts() {
	require_root
	require_prog podman runc ib_write_bw ibv_rc_pingpong ib_read_lat
	mh_need_wire
	mh_setup 2 --etcd
	# ours first, then mhlib's (which stops the daemons, whose specs go with
	# them), with the case's code; mh_cleanup ends in `exit`, so it runs in a
	# subshell and the CDI directory goes after it (it was left behind)
	trap 'rc=$?; ph_cleanup; (exit $rc); (mh_cleanup); rc=$?; ph_cdi_dir_cleanup; exit $rc' EXIT
	mh_daemon 1 --cdi-dir "$CDI_DIR" || return 1
	mh_daemon 2 --cdi-dir "$CDI_DIR" || return 1
	mh_vrnic 1 1
	mh_vrnic 2 1
	mh_tenant_lan t1
	wait_gid 1 "$(mh_ip 2 1)" || return 1
	wait_gid 2 "$(mh_ip 1 1)" || return 1
	make_image
	local srv
	srv=$(mh_ip 1 1)
	hpair "ib_write_bw across hosts" ib_write_bw -x 0 -F -n 2000 -- ib_write_bw -x 0 -F -n 2000 "$srv"
	check "  a bandwidth row with a non-zero figure" \
		awk '$1 == 65536 && $2 == 2000 && $4 > 0 { ok = 1 } END { exit !ok }' "$WORK/client.out"
	hpair "ibv_rc_pingpong across hosts" ibv_rc_pingpong -g 0 -n 200 -- ibv_rc_pingpong -g 0 -n 200 "$srv"
	check "  the pingpong's iterations" grep -q '200 iters in' "$WORK/client.out"
	hpair "ib_read_lat across hosts" ib_read_lat -x 0 -F -n 200 -- ib_read_lat -x 0 -F -n 200 "$srv"
	check "  a latency row with a non-zero figure" \
		awk '$1 == 2 && $2 == 200 && $3 > 0 { ok = 1 } END { exit !ok }' "$WORK/client.out"
	check "host 2 sent to host 1 and received from it over the underlay (unirdma hosts)" wire_both 2 h1
	check "and host 1 to and from host 2" wire_both 1 h2
	checks_result
}

add_case two_hosts case_two_hosts
run_cases "$@"

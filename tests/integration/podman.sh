#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# podman.sh: vRNICs in podman containers through the CDI spec unirdmad keeps
# (daemon/cdi.c, kind unirdma.io/vrnic).
#   spec         the spec follows vRNIC create/delete/set, is valid CDI 0.5.0,
#                goes when the daemon stops; a killed daemon's is removed by
#                the next one; a relative --cdi-dir is refused
#   two_podman   Debian's unmodified ibv_rc_pingpong, ib_write_bw and
#                ib_read_lat between two podman containers
#   podman_exec  the same programs between a podman container and a
#                `unirdma exec` container
#   ucx          ucx_info -d lists the vRNIC with rc_verbs and ud_verbs in a
#                podman container (the hook gives it /sys/class/infiniband);
#                ucx_perftest tag_lat and tag_bw between two podman
#                containers over UCX_TLS=rc_verbs,ud_verbs,self
#   restart      a container started again with the vRNIC of one whose
#                network namespace the kernel has not freed yet (held here
#                by a bind mount, in life by a closed TCP socket that still
#                retransmits): the old namespace's port leaves the bridge,
#                and the new container is reachable
# Podman runs with runc (podman --runtime runc), no registry: the image is
# made here with `podman import` (merged-/usr symlinks; the host's /usr
# bound read-only supplies the programs). The containers have --network none:
# the spec's createRuntime hook (`unirdma cdi-hook`) gives them eth0 with
# the vRNIC's address on the tenant's bridge. Podman 4.3 reads specs only
# from /etc/cdi and /var/run/cdi, so the daemon writes there (a file named
# after its state dir); everything a case makes (containers, the image, the
# spec) is removed at its end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podlib.sh"

CASE_SETUP=: # each case starts its daemon (podman_setup, case_spec)
CDI_DIR=/var/run/cdi
IMAGE=localhost/unirdma-test:cdi
LABEL=unirdma-test=podman-$$
DAEMON_ARGS=(--cdi-dir "$CDI_DIR")
PODMAN=(podman --runtime runc)
RUN_OPTS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 --network none
	-v /usr:/usr:ro --label "$LABEL")
# sanitizer runs: unmodified programs that load an ASan build of our library
# need the ASan runtime first (as `unirdma exec` gives them, cmd-exec.c), and
# the run's ASAN_OPTIONS (the programs' own leaks are not ours)
[ -n "${UNIRDMA_EXEC_PRELOAD:-}" ] && RUN_OPTS+=(-e "LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD")
[ -n "${ASAN_OPTIONS:-}" ] && RUN_OPTS+=(-e "ASAN_OPTIONS=$ASAN_OPTIONS")

# The daemon makes CDI_DIR if it is missing; then the cases take it away again.
[ -d "$CDI_DIR" ] && CDI_DIR_WAS_THERE=1 || CDI_DIR_WAS_THERE=0

# The file this case's daemon writes: unirdma-<FNV-1a 32 of its state dir>.json
spec_file() { printf '%s/unirdma-%s.json\n' "$CDI_DIR" "$(fnv1a 32 "$STATE")"; }

podman_cleanup() {
	"${PODMAN[@]}" rm -f --filter "label=$LABEL" >/dev/null 2>&1
	"${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
	[ -n "${STATE:-}" ] && rm -f "$(spec_file)"
	[ "$CDI_DIR_WAS_THERE" = 1 ] || rmdir "$CDI_DIR" 2>/dev/null
}

podman_setup() {
	require_root
	require_prog podman runc
	CLEANUP_HOOKS+=(podman_cleanup)
	start_daemon
	make_image
}

# spec_devices: the spec's device names, sorted, space separated ("none" without a file)
spec_devices() {
	[ -f "$(spec_file)" ] || { echo none; return; }
	python3 -c 'import json,sys; print(" ".join(sorted(d["name"] for d in json.load(open(sys.argv[1]))["devices"])))' "$(spec_file)"
}

# spec_valid: what podman 4.3 needs: cdiVersion 0.5.0, the kind, each device
# with its region file mount (the vRNIC's real one), the library, the hook.
spec_valid() {
	local dirs
	dirs=$(for v in $(spec_devices); do
		printf '%s=%s ' "$v" "$("$UNIRDMA" --json vrnic show "$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vrnic"]["dir"])')"
	done)
	python3 - "$(spec_file)" "$UNIRDMA_LIBDIR" $dirs <<'EOF'
import json, os, sys
spec = json.load(open(sys.argv[1]))
libdir = os.path.realpath(sys.argv[2])
dirs = dict(a.split("=", 1) for a in sys.argv[3:])
assert spec["cdiVersion"] == "0.5.0", spec["cdiVersion"]
assert spec["kind"] == "unirdma.io/vrnic", spec["kind"]
top = spec["containerEdits"]
assert "LD_LIBRARY_PATH=/opt/unirdma/lib" in top["env"]
assert any(m["hostPath"] == libdir and m["containerPath"] == "/opt/unirdma/lib" and "ro" in m["options"]
           for m in top["mounts"]), top["mounts"]
for d in spec["devices"]:
    e = d["containerEdits"]
    want = dirs[d["name"]] + "/region"
    assert any(m["hostPath"] == want and m["containerPath"] == "/run/unirdma/dev/%s/region" % d["name"]
               for m in e["mounts"]), (want, e["mounts"])
    assert os.path.exists(want), want
    h = e["hooks"][0]
    assert h["hookName"] == "createRuntime" and h["args"][-2:] == ["cdi-hook", d["name"]], h
    assert os.access(h["path"], os.X_OK), h["path"]
print("  spec ok:", " ".join(d["name"] for d in spec["devices"]))
EOF
}

case_spec() {
	require_root
	CLEANUP_HOOKS+=(podman_cleanup)
	start_daemon
	check "no vRNIC, no spec" test "$(spec_devices)" = none
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pv --tenant t1 --ip "10.77.$SUBNET.3/24" --vm --vm-ram 64M >/dev/null || return 1
	check "two container vRNICs: both in $(spec_file), the VM's not" test "$(spec_devices)" = "pa pb"
	# a vRNIC name that is no CDI device name would make runtimes refuse
	# the whole file: it is left out, the others stay usable
	"$UNIRDMA" vrnic create pc- --tenant t1 --ip "10.77.$SUBNET.4/24" >/dev/null || return 1
	check "vRNIC pc- (no CDI device name) is left out" test "$(spec_devices)" = "pa pb"
	check "and the spec stays valid" spec_valid
	"$UNIRDMA" vrnic delete pc- >/dev/null
	check "the spec is valid CDI 0.5.0 with each vRNIC's region, the library and the hook" spec_valid
	"$UNIRDMA" vrnic delete pb >/dev/null
	check "after delete: pa alone" test "$(spec_devices)" = pa
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null
	check "recreated: its new region is in the spec" spec_valid
	check "no temporary file is left beside it" bash -c "! ls '$CDI_DIR' | grep -q '\.tmp\$'"
	"$UNIRDMA" daemon stop >/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	check "the daemon stopped: its spec is gone" test ! -e "$(spec_file)"
	# a killed daemon cannot clean up; the next one on its state dir does
	"$UNIRDMAD" --state-dir "$STATE" --foreground --metrics off --cdi-dir "$CDI_DIR" >>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do "$UNIRDMA" daemon ping >/dev/null 2>&1 && break; sleep 0.05; done
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	check "SIGKILL leaves the spec" test -e "$(spec_file)"
	umount -l "$STATE"/vrnics/*/ 2>/dev/null
	umount -l "$STATE/vrnics" 2>/dev/null
	"$UNIRDMAD" --state-dir "$STATE" --foreground --metrics off --cdi-dir "$CDI_DIR" >>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	for ((i = 0; i < 100; i++)); do "$UNIRDMA" daemon ping >/dev/null 2>&1 && break; sleep 0.05; done
	check "the next daemon removed the stale spec" test ! -e "$(spec_file)"
	local out rc
	out=$("$UNIRDMAD" --state-dir "$WORK/st2" --foreground --metrics off --cdi-dir relative/dir 2>&1)
	rc=$?
	say "  --cdi-dir relative/dir: exit $rc: $(tail -n 1 <<<"$out")"
	check "a relative --cdi-dir is a usage error, with a reason" bash -c "[ $rc = 2 ] && grep -q 'absolute path' <<<\"\$1\"" _ "$out"
	check "refused before the daemon touched anything" test ! -e "$WORK/st2"
	checks_result
}

# ppair [-p PORT] [-e VAR=VALUE]... CLIENT_KIND DESC SERVER_CMD... -- CLIENT_CMD...:
# the server (listening on PORT, default 18515) in a podman container of pa;
# the client in a podman container of pb (CLIENT_KIND podman) or in `unirdma
# exec pb` (exec); both with the -e variables. Prints both ends.
ppair() {
	local port=18515 env=() envx=()
	while :; do
		case $1 in
		-p) port=$2; shift 2 ;;
		-e) env+=(-e "$2"); envx+=("$2"); shift 2 ;;
		*) break ;;
		esac
	done
	local ckind=$1 desc=$2 scmd=() ccmd=() name=srv$$-$RANDOM rc src
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	say "+ podman pa: ${scmd[*]}; $ckind pb: ${ccmd[*]}"
	"${PODMAN[@]}" run -d --name "$name" "${RUN_OPTS[@]}" ${env[@]+"${env[@]}"} --device unirdma.io/vrnic=pa \
		"$IMAGE" "${scmd[@]}" >/dev/null 2>"$WORK/$name.err" || { say "  podman run: $(cat "$WORK/$name.err")"; return 1; }
	if ! server_up "$name" "$port"; then
		say "  the server did not listen; its log:"
		"${PODMAN[@]}" logs "$name" 2>&1 | tail -n 5 | sed 's/^/  | /'
		return 1
	fi
	if [ "$ckind" = podman ]; then
		timeout 60 "${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" ${env[@]+"${env[@]}"} --device unirdma.io/vrnic=pb \
			"$IMAGE" "${ccmd[@]}" >"$WORK/client.out" 2>&1
	else
		timeout 60 env ${envx[@]+"${envx[@]}"} "$UNIRDMA" exec pb -- "${ccmd[@]}" >"$WORK/client.out" 2>&1
	fi
	rc=$?
	src=$(timeout 30 "${PODMAN[@]}" wait "$name" 2>/dev/null)
	"${PODMAN[@]}" logs "$name" >"$WORK/server.out" 2>&1
	"${PODMAN[@]}" rm -f "$name" >/dev/null 2>&1
	tail -n 3 "$WORK/client.out" | sed 's/^/  client | /'
	tail -n 2 "$WORK/server.out" | sed 's/^/  server | /'
	check "$desc: client exit 0 ($rc), server exit 0 (${src:-none})" test "$rc/$src" = 0/0
}

# The three programs of the issue, each checked on its figures.
three_programs() {
	local ckind=$1 ip=10.77.$SUBNET.1
	ppair "$ckind" ibv_rc_pingpong ibv_rc_pingpong -g 0 -n 200 -- ibv_rc_pingpong -g 0 -n 200 "$ip"
	check "  the pingpong's iterations" grep -q '200 iters in' "$WORK/client.out"
	ppair "$ckind" ib_write_bw ib_write_bw -F -x 0 -n 2000 -- ib_write_bw -F -x 0 -n 2000 "$ip"
	check "  a bandwidth row with a non-zero figure" awk '$1 == 65536 && $2 == 2000 && $4 > 0 { ok = 1 } END { exit !ok }' "$WORK/client.out"
	ppair "$ckind" ib_read_lat ib_read_lat -F -x 0 -n 2000 -- ib_read_lat -F -x 0 -n 2000 "$ip"
	check "  a latency row" awk '$1 == 2 && $2 == 2000 && $3 > 0 { ok = 1 } END { exit !ok }' "$WORK/client.out"
	check "both vRNICs counted the traffic" bash -c \
		"for v in pa pb; do '$UNIRDMA' --json vrnic show \$v | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)[\"vrnic\"][\"counters\"][\"tx_bytes\"] <= 0)' || exit 1; done"
}

case_two_podman() {
	podman_setup
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	local out
	out=$("${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --device unirdma.io/vrnic=pa "$IMAGE" \
		sh -c 'ibv_devices; ip -4 -o addr show eth0; ls /dev/infiniband' 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "the container lists vRNIC pa through our library" grep -Eq '^[[:space:]]+pa[[:space:]]+[0-9a-f]{16}' <<<"$out"
	check "its eth0 has pa's address" grep -q "inet 10.77.$SUBNET.1/24" <<<"$out"
	check "it has /dev/infiniband/uverbs0" grep -qx uverbs0 <<<"$out"
	three_programs podman
	checks_result
}

case_podman_exec() {
	podman_setup
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	three_programs exec
	checks_result
}

# ucx_perf TEST SIZE ITERS: ucx_perftest between podman containers of pa
# and pb over rc_verbs,ud_verbs,self, checked on its final figures and on
# the bytes the vRNICs counted (not UCX's tcp or shm).
ucx_perf() {
	local t=$1 size=$2 n=$3 before after
	before=$(tx_bytes_of pa pb)
	ppair -p 13337 -e UCX_TLS=rc_verbs,ud_verbs,self podman "ucx_perftest $t" ucx_perftest -- \
		ucx_perftest "10.77.$SUBNET.1" -t "$t" -s "$size" -n "$n"
	after=$(tx_bytes_of pa pb)
	check "  $t: final figures, all positive" awk '
		$1 == "Final:" && NF == 9 { ok = 1; for (i = 2; i <= NF; i++) if ($i + 0 <= 0) ok = 0 }
		END { exit !ok }' "$WORK/client.out"
	say "  pa and pb sent $((after - before)) bytes"
	check "  the traffic went through the vRNICs (>= $((size * n)) bytes)" test $((after - before)) -ge $((size * n))
}

# UCX with its defaults but the transports: the hook gave the containers
# /sys/class/infiniband/<vRNIC> (read-only, beside sysfs's own classes).
case_ucx() {
	require_prog ucx_info ucx_perftest
	podman_setup
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	local out ib=/sys/class/infiniband/pa/ports/1
	out=$("${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --device unirdma.io/vrnic=pa "$IMAGE" ucx_info -d 2>&1)
	check "ucx_info -d lists pa as a memory domain" grep -q '# Memory domain: pa$' <<<"$out" ||
		sed 's/^/  | /' <<<"$out" | tail -n 20
	check "with rc_verbs on pa:1" bash -c "grep -A2 'Transport: rc_verbs' <<<\"\$1\" | grep -q 'Device: pa:1'" _ "$out"
	check "and ud_verbs on pa:1" bash -c "grep -A2 'Transport: ud_verbs' <<<\"\$1\" | grep -q 'Device: pa:1'" _ "$out"
	out=$("${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --device unirdma.io/vrnic=pa "$IMAGE" sh -c "
		cat $ib/gid_attrs/types/0 $ib/gid_attrs/ndevs/0 $ib/gids/0 /sys/class/infiniband_verbs/uverbs0/ibdev
		ls /sys/class/net; touch /sys/class/infiniband/x 2>/dev/null && echo writable" 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "GID 0 of pa is RoCE v2 on eth0, ::ffff:10.77.$SUBNET.1; uverbs0 is pa" bash -c \
		"grep -qx 'RoCE v2' <<<\"\$1\" && grep -qx eth0 <<<\"\$1\" && grep -qx pa <<<\"\$1\" &&
		 grep -qx \"0000:0000:0000:0000:0000:ffff:\$(printf '%02x%02x:%02x%02x' 10 77 $SUBNET 1)\" <<<\"\$1\"" _ "$out"
	check "sysfs's classes are still there (net: lo, eth0)" bash -c "grep -qx lo <<<\"\$1\" && grep -qx eth0 <<<\"\$1\"" _ "$out"
	check "and /sys/class is read-only" bash -c "! grep -qx writable <<<\"\$1\"" _ "$out"
	# what the hook cannot give, the container does not start without
	out=$("${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --mount type=tmpfs,destination=/sys \
		--device unirdma.io/vrnic=pa "$IMAGE" echo started 2>&1)
	say "  /sys a tmpfs: $(grep -m1 'cdi-hook' <<<"$out")"
	check "a container whose /sys is no sysfs does not start; the hook says why" bash -c \
		"! grep -qx started <<<\"\$1\" && grep -q 'cdi-hook: /sys in the container is not a sysfs' <<<\"\$1\"" _ "$out"
	ucx_perf tag_lat 8 2000
	ucx_perf tag_bw 65536 500
	checks_result
}

case_restart() {
	podman_setup
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "10.77.$SUBNET.1/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	local ns pid ino port held=$WORK/held-netns out
	ns=unirdma-$(fnv1a 32 "$STATE")-$(fnv1a 64 t1)
	"${PODMAN[@]}" run -d --name "old$$" "${RUN_OPTS[@]}" --device unirdma.io/vrnic=pa "$IMAGE" sleep 600 \
		>/dev/null || return 1
	pid=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "old$$")
	ino=$(stat -L -c %i "/proc/$pid/ns/net") || return 1
	port=$(printf 'ux%08xeth0' "$ino")
	touch "$held" && mount --bind "/proc/$pid/ns/net" "$held" || return 1
	CLEANUP_HOOKS+=("umount $held")
	"${PODMAN[@]}" rm -f "old$$" >/dev/null 2>&1
	check "the old container is gone, its namespace (held) still has pa's address on $port" bash -c \
		"ip -n '$ns' link show '$port' >/dev/null && nsenter --net='$held' ip -o -4 addr show | grep -q ' 10\.77\.$SUBNET\.1/'"
	ppair podman ibv_rc_pingpong ibv_rc_pingpong -g 0 -n 100 -- ibv_rc_pingpong -g 0 -n 100 "10.77.$SUBNET.1"
	check "  the pingpong's iterations" grep -q '100 iters in' "$WORK/client.out"
	out=$(nsenter --net="$held" ip -o -4 addr show 2>&1)
	check "the new pa container removed the old namespace's port: $port is gone" \
		bash -c "! ip -n '$ns' link show '$port' >/dev/null 2>&1"
	check "and the old namespace no longer has pa's address" bash -c "! grep -q ' 10\.77\.' <<<\"\$1\"" _ "$out"
	checks_result
}

add_case spec case_spec
add_case two_podman case_two_podman
add_case podman_exec case_podman_exec
add_case ucx case_ucx
add_case restart case_restart
run_cases "$@"

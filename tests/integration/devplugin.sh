#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# devplugin.sh: the kubelet device plugin unirdma-device-plugin (k8s/)
# against a fake kubelet (tests/tools/fake_kubelet.py: Debian's python3-grpcio,
# stubs compiled from tests/tools/deviceplugin.proto by python3-grpc-tools).
#   register_list  vRNICs of two tenants, a VM vRNIC, a CNI pod's vRNIC and
#                  names that are no CDI device; three plugins (all tenants; only
#                  t2 under its own resource, under valgrind when there is no
#                  sanitizer build; --cni-pool 3 under unirdma.io/vrnic-cni,
#                  whose Allocate gives the daemon's device unirdma.io/vrnic=cni
#                  for any of cni-0..cni-2): each registers as kubelet wants it and
#                  lists exactly its vRNICs; a vRNIC created or deleted shows
#                  within 2 s; Allocate gives the CDI names (devices of the
#                  daemon's spec file) in cdi_devices and the CDI annotation,
#                  INVALID_ARGUMENT for IDs it does not offer;
#                  GetPreferredAllocation, PreStartContainer; hostile bytes on
#                  the socket (fake_kubelet.py abuse); a kubelet restart
#                  (sockets removed, kubelet.sock anew): all register again;
#                  the daemon stops: all Unhealthy within 2 s, and back;
#                  SIGTERM: exit 0, socket gone
#   podman         as a CDI runtime applies the names: the fake kubelet
#                  allocates two vRNICs, podman runs two containers with
#                  --device <the names Allocate gave> and Debian's
#                  ibv_rc_pingpong between them
#   pod            the same in namespaces that have a cluster network's eth0
#                  (a podman CNI network of the bridge plugin alone, as pods
#                  have): the hook gives the vRNIC rdma0 (eth0 stays the
#                  CNI's; the GID's netdev in /sys/class/infiniband is
#                  rdma0), ibv_rc_pingpong between two such containers;
#                  a second container in the first one's namespace (a pod's
#                  second container) with the same vRNIC adds nothing and
#                  uses rdma0, one with another vRNIC gets rdma1; the hook
#                  run on the host's namespace (a hostNetwork pod) fails
#                  and adds nothing
#   fuzz           the libFuzzer target k8s/fuzz/fuzz_devplugin (HTTP/2, gRPC
#                  framing, each method's protobuf; make devplugin-fuzz, clang)
#                  on its seeds, then for $UNIRDMA_FUZZ_TIME s (default 3)
# Each case's kubelet directory is in its scratch dir; the plugins' logs are
# there too (the end of each is printed when a check failed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podlib.sh"

CASE_SETUP=: # each case starts its daemon (dp_setup)
PY=/usr/bin/python3  # Debian's, where python3-grpcio lives (not a pyenv's)
FAKE=$TOP/tests/tools/fake_kubelet.py
PLUGIN=$BINDIR/unirdma-device-plugin
KUBELET_PID=
SANITIZER_RE='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'

# dp_report: the end of each plugin's log when a check failed (every line
# with DEVPLUGIN_SHOW_LOGS=1)
dp_report() {
	local f
	[ "$FAILED_CHECKS" -gt 0 ] || [ "${DEVPLUGIN_SHOW_LOGS:-0}" = 1 ] || return 0
	for f in "$WORK"/*.plugin.log; do
		[ -f "$f" ] || continue
		say "--- end of $(basename "$f") ---"
		tail -n "$([ "${DEVPLUGIN_SHOW_LOGS:-0}" = 1 ] && echo 1000 || echo 25)" "$f" | sed 's/^/  | /'
	done
}

dp_cleanup() {
	[ -n "${CDI_TMP:-}" ] && rm -rf "$CDI_TMP"
	return 0
}

# dp_setup [DAEMON ARGS...]: root, the programs, a daemon, the kubelet dir
dp_setup() {
	require_root
	[ -x "$PLUGIN" ] || die "$PLUGIN is not built (run make)"
	[ -x "$PY" ] && "$PY" -c 'import grpc, grpc_tools, h2' 2>/dev/null ||
		skip "python3-grpcio, python3-grpc-tools or python3-h2 is not installed (scripts/install-deps.sh)"
	DAEMON_ARGS=("$@")
	start_daemon
	CLEANUP_HOOKS+=(dp_cleanup)
	KDIR=$WORK/kubelet
	EVENTS=$WORK/kubelet.events
	export FAKE_KUBELET_GEN=$WORK/gen
	mkdir -p "$KDIR" "$FAKE_KUBELET_GEN" || die "mkdir failed"
}

# start_kubelet [N]: a fake kubelet on $KDIR (it removes the sockets there
# first); waits for its start, the Nth of the case (default 1)
start_kubelet() {
	local i
	"$PY" "$FAKE" serve "$KDIR" "$EVENTS" >>"$WORK/kubelet.log" 2>&1 &
	KUBELET_PID=$!
	SERVER_PIDS+=("$KUBELET_PID")
	for ((i = 0; i < 200; i++)); do
		grep -q kubelet_started "$EVENTS" 2>/dev/null &&
			[ "$(grep -c kubelet_started "$EVENTS")" -ge "${1:-1}" ] && return 0
		kill -0 "$KUBELET_PID" 2>/dev/null || break
		sleep 0.05
	done
	tail -n 20 "$WORK/kubelet.log"
	die "the fake kubelet did not start"
}

# start_plugin NAME [WRAPPER...] -- [OPTIONS...]: the plugin in the
# background, its log $WORK/NAME.plugin.log; PLUGIN_PID is its pid
start_plugin() {
	local name=$1 wrap=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do wrap+=("$1"); shift; done
	shift
	# like the daemon: the sanitizer run checks it for leaks at exit
	ASAN_OPTIONS=${UNIRDMA_DAEMON_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
		${wrap[@]+"${wrap[@]}"} "$PLUGIN" --state-dir "$STATE" --kubelet-dir "$KDIR" "$@" \
		>"$WORK/$name.plugin.log" 2>&1 &
	PLUGIN_PID=$!
	SERVER_PIDS+=("$PLUGIN_PID")  # cleanup stops it
}

# stop_plugin PID: SIGTERM; its exit code
stop_plugin() {
	kill -TERM "$1" 2>/dev/null
	wait_for_exit "$1" 10 || { say "  plugin $1 still running 10 s after SIGTERM"; kill -KILL "$1"; }
	wait "$1"
}

fk() { "$PY" "$FAKE" "$@"; }
now() { printf '%s\n' "$EPOCHREALTIME"; }

# spec_names: the qualified names of the devices in this daemon's CDI spec
spec_names() {
	"$PY" -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(" ".join(sorted(s["kind"] + "=" + d["name"] for d in s["devices"])))' "$1" 2>/dev/null
}

# in_spec FILE NAME...: every NAME is a device of the spec FILE
in_spec() {
	local file=$1 have n
	shift
	have=" $(spec_names "$file") "
	for n in "$@"; do
		[[ $have == *" $n "* ]] || { say "    $n is not in $file (it has:$have)"; return 1; }
	done
}

# alloc_out SOCKET IDS...: runs Allocate, its output in $WORK/alloc.out, echoed
alloc_out() {
	local sock=$1
	shift
	fk call "$sock" allocate "$@" >"$WORK/alloc.out" 2>&1
	sed 's/^/    | /' "$WORK/alloc.out"
}
out_is() { grep -qxF -- "$1" "$WORK/alloc.out"; }

no_sanitizer_report() {
	! grep -qE "$SANITIZER_RE" "$WORK"/*.plugin.log
}

case_register_list() {
	CDI_TMP=$(mktemp -d /tmp/unirdma-cdi.XXXXXX) || die "mktemp failed"
	dp_setup --cdi-dir "$CDI_TMP/cdi"
	local spec
	spec=$CDI_TMP/cdi/unirdma-$(fnv1a 32 "$STATE").json
	local all=$KDIR/unirdma.io-vrnic.sock t2=$KDIR/unirdma.io-vrnic-t2.sock
	local n=10.77.$SUBNET t0 rc vg=() vr
	for vr in a1:t1:1 a2:t1:2 b1:t2:1 bad-:t1:5 cni:t1:6 cnix:t1:7; do
		"$UNIRDMA" vrnic create "${vr%%:*}" --tenant "$(cut -d: -f2 <<<"$vr")" --ip "$n.${vr##*:}/24" >/dev/null ||
			die "vrnic create ${vr%%:*} failed"
	done
	"$UNIRDMA" vrnic create pv --tenant t1 --ip "$n.8/24" --vm --vm-ram 64M >/dev/null || die "vrnic create pv failed"
	# what unirdma-cni records for a pod's vRNIC (cli/cni.c)
	mkdir -p "$STATE/cni" && echo '{}' >"$STATE/cni/cnix.json"
	say "  vRNICs: a1 a2 (t1), b1 (t2); not to be offered: bad- (no CDI device name), cni, cnix (a pod's), pv (a VM)"

	"$PLUGIN" --state-dir "$STATE" --tenant-x t1 >"$WORK/usage.out" 2>&1
	rc=$?
	say "  --tenant-x: exit $rc: $(head -n 1 "$WORK/usage.out")"
	check "an unknown option: exit 2 and a message" bash -c "[ $rc = 2 ] && grep -q 'unknown option --tenant-x' '$WORK/usage.out'"
	"$PLUGIN" --state-dir "$STATE" --cni-pool 257 >"$WORK/usage.out" 2>&1
	rc=$?
	"$PLUGIN" --state-dir "$STATE" --cni-pool 2 --tenant t1 >>"$WORK/usage.out" 2>&1
	rc=$rc/$?
	sed 's/^/  /' "$WORK/usage.out"
	check "--cni-pool 257, --cni-pool with --tenant: exit 2 ($rc)" bash -c "[ $rc = 2/2 ] &&
		grep -q 'not a number from 0 to 256' '$WORK/usage.out' && grep -q 'cni-pool and --tenant' '$WORK/usage.out'"
	start_kubelet
	t0=$(now)
	start_plugin all --
	local pid_all=$PLUGIN_PID pid_t2 pid_cni cni=$KDIR/unirdma.io-vrnic-cni.sock
	if command -v valgrind >/dev/null && ! ldd "$PLUGIN" | grep -q libasan; then
		vg=(valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite
			--show-leak-kinds=definite --log-file="$WORK/t2.valgrind")
		say "  the t2 plugin runs under valgrind"
	fi
	start_plugin t2 ${vg[@]+"${vg[@]}"} -- --tenant t2 --resource unirdma.io/vrnic-t2
	pid_t2=$PLUGIN_PID
	start_plugin cni -- --cni-pool 3
	pid_cni=$PLUGIN_PID

	check "registers: v1beta1, its socket's name, the resource, GetPreferredAllocation" bash -c \
		"out=\$('$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic --since $t0 --within 5) && echo \"  \$out\" &&
		 grep -q 'version=v1beta1 endpoint=unirdma.io-vrnic.sock resource=unirdma.io/vrnic preferred=True' <<<\"\$out\""
	check "the endpoint is a socket in the kubelet dir" test -S "$all"
	check "the t2 plugin registers its resource and socket" bash -c \
		"out=\$('$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic-t2 --since $t0 --within 10) && echo \"  \$out\" &&
		 grep -q 'endpoint=unirdma.io-vrnic-t2.sock resource=unirdma.io/vrnic-t2' <<<\"\$out\""
	check "kubelet got the options during Register" grep -Eq '^\{"ev": "options", "t": [0-9.]+, "resource": "unirdma.io/vrnic", "pre_start_required": false, "get_preferred_allocation_available": true' "$EVENTS"
	check "ListAndWatch: exactly a1 a2 b1" fk wait "$EVENTS" unirdma.io/vrnic "a1:Healthy a2:Healthy b1:Healthy" --since "$t0" --within 5
	check "--tenant t2: exactly b1" fk wait "$EVENTS" unirdma.io/vrnic-t2 "b1:Healthy" --since "$t0" --within 10
	check "--cni-pool 3 registers unirdma.io/vrnic-cni on its own socket" bash -c \
		"out=\$('$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic-cni --since $t0 --within 5) && echo \"  \$out\" &&
		 grep -q 'endpoint=unirdma.io-vrnic-cni.sock resource=unirdma.io/vrnic-cni' <<<\"\$out\""
	check "--cni-pool 3: exactly cni-0 cni-1 cni-2" fk wait "$EVENTS" unirdma.io/vrnic-cni \
		"cni-0:Healthy cni-1:Healthy cni-2:Healthy" --since "$t0" --within 5

	t0=$(now)
	"$UNIRDMA" vrnic create a3 --tenant t1 --ip "$n.3/24" >/dev/null
	check "vrnic create a3: listed within 2 s" fk wait "$EVENTS" unirdma.io/vrnic "a1:Healthy a2:Healthy a3:Healthy b1:Healthy" --since "$t0"
	t0=$(now)
	"$UNIRDMA" vrnic delete a3 >/dev/null
	check "vrnic delete a3: gone within 2 s" fk wait "$EVENTS" unirdma.io/vrnic "a1:Healthy a2:Healthy b1:Healthy" --since "$t0"

	check "GetDevicePluginOptions" bash -c "'$PY' '$FAKE' call '$all' options | grep -qx 'pre_start_required=False get_preferred_allocation_available=True'"
	say "  Allocate [a1,a2] [b1]:"
	alloc_out "$all" a1,a2 b1
	check "container 0: cdi_devices a1, a2" out_is "container 0 cdi unirdma.io/vrnic=a1 unirdma.io/vrnic=a2"
	check "container 0: the CDI annotation" out_is "container 0 annotation cdi.k8s.io/unirdma_a1=unirdma.io/vrnic=a1,unirdma.io/vrnic=a2"
	check "container 1: cdi_devices b1 and its annotation" bash -c \
		"grep -qxF 'container 1 cdi unirdma.io/vrnic=b1' '$WORK/alloc.out' &&
		 grep -qxF 'container 1 annotation cdi.k8s.io/unirdma_b1=unirdma.io/vrnic=b1' '$WORK/alloc.out'"
	check "no envs, mounts or device nodes: the spec brings them" out_is "container 0 envs 0 mounts 0 devices 0"
	check "the names are devices of the daemon's spec $(basename "$spec")" in_spec "$spec" \
		unirdma.io/vrnic=a1 unirdma.io/vrnic=a2 unirdma.io/vrnic=b1
	for vr in nope bad- cnix pv cni; do
		alloc_out "$all" "$vr"
		check "Allocate $vr: INVALID_ARGUMENT" grep -q '^error INVALID_ARGUMENT' "$WORK/alloc.out"
	done
	alloc_out "$t2" a1
	check "Allocate a1 from the t2 plugin: INVALID_ARGUMENT" grep -q '^error INVALID_ARGUMENT' "$WORK/alloc.out"
	alloc_out "$t2" b1
	check "Allocate b1 from the t2 plugin" out_is "container 0 cdi unirdma.io/vrnic=b1"
	alloc_out "$all" a1,a1
	check "Allocate a1 twice in one container: INVALID_ARGUMENT" grep -q '^error INVALID_ARGUMENT' "$WORK/alloc.out"
	say "  Allocate [cni-1] [cni-0,cni-2] from the --cni-pool plugin:"
	alloc_out "$cni" cni-1 cni-0,cni-2
	check "container 0: cdi_devices unirdma.io/vrnic=cni, its annotation" bash -c \
		"grep -qxF 'container 0 cdi unirdma.io/vrnic=cni' '$WORK/alloc.out' &&
		 grep -qxF 'container 0 annotation cdi.k8s.io/unirdma_cni-1=unirdma.io/vrnic=cni' '$WORK/alloc.out'"
	check "container 1 (two IDs): the device once" bash -c \
		"grep -qxF 'container 1 cdi unirdma.io/vrnic=cni' '$WORK/alloc.out' &&
		 grep -qxF 'container 1 annotation cdi.k8s.io/unirdma_cni-0=unirdma.io/vrnic=cni' '$WORK/alloc.out'"
	check "unirdma.io/vrnic=cni is the device of the daemon's cni spec" \
		in_spec "$CDI_TMP/cdi/unirdma-$(fnv1a 32 "$STATE")-cni.json" unirdma.io/vrnic=cni
	for vr in a1 cni-3 cni; do
		alloc_out "$cni" "$vr"
		check "Allocate $vr from the --cni-pool plugin: INVALID_ARGUMENT" grep -q '^error INVALID_ARGUMENT' "$WORK/alloc.out"
	done
	check "GetPreferredAllocation: must_include first, then the available ones" bash -c \
		"'$PY' '$FAKE' call '$all' preferred a1,a2,b1 b1 2 | grep -qx 'preferred b1,a1'"
	check "PreStartContainer" bash -c "'$PY' '$FAKE' call '$all' prestart a1 | grep -qx 'prestart ok'"
	say "  hostile requests on $(basename "$all"):"
	check "hostile bytes: error statuses, the plugin lives" fk abuse "$all"
	fk abuse "$t2" >"$WORK/abuse-t2.out" 2>&1
	rc=$?
	grep FAIL "$WORK/abuse-t2.out"
	check "the same on $(basename "$t2")${vg[*]:+ (under valgrind)}" test "$rc" = 0

	say "  kubelet restarts (it removes the plugins' sockets, serves kubelet.sock anew):"
	t0=$(now)
	kill -TERM "$KUBELET_PID"
	wait "$KUBELET_PID" 2>/dev/null
	start_kubelet 2
	check "the three plugins register again" bash -c \
		"'$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic --since $t0 --within 5 &&
		 '$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic-t2 --since $t0 --within 10 &&
		 '$PY' '$FAKE' wait-register '$EVENTS' unirdma.io/vrnic-cni --since $t0 --within 5"
	check "and serve their sockets again" bash -c "[ -S '$all' ] && [ -S '$t2' ] && [ -S '$cni' ]"
	check "the new kubelet gets the lists" bash -c \
		"'$PY' '$FAKE' wait '$EVENTS' unirdma.io/vrnic 'a1:Healthy a2:Healthy b1:Healthy' --since $t0 --within 5 &&
		 '$PY' '$FAKE' wait '$EVENTS' unirdma.io/vrnic-t2 b1:Healthy --since $t0 --within 10"

	t0=$(now)
	"$UNIRDMA" daemon stop >/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	check "the daemon stops: all Unhealthy within 2 s" fk wait "$EVENTS" unirdma.io/vrnic "a1:Unhealthy a2:Unhealthy b1:Unhealthy" --since "$t0"
	check "the t2 plugin's too" fk wait "$EVENTS" unirdma.io/vrnic-t2 "b1:Unhealthy" --since "$t0" --within 3
	check "and the --cni-pool plugin's" fk wait "$EVENTS" unirdma.io/vrnic-cni \
		"cni-0:Unhealthy cni-1:Unhealthy cni-2:Unhealthy" --since "$t0" --within 3
	alloc_out "$all" a1
	check "Allocate while the daemon is down: UNAVAILABLE" grep -q '^error UNAVAILABLE' "$WORK/alloc.out"
	alloc_out "$cni" cni-0
	check "  from the --cni-pool plugin too" grep -q '^error UNAVAILABLE' "$WORK/alloc.out"
	umount -l "$STATE"/vrnics/*/ 2>/dev/null
	umount -l "$STATE/vrnics" 2>/dev/null
	t0=$(now)
	"$UNIRDMAD" --state-dir "$STATE" --foreground --metrics off --cdi-dir "$CDI_TMP/cdi" >>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	for ((rc = 0; rc < 100; rc++)); do "$UNIRDMA" daemon ping >/dev/null 2>&1 && break; sleep 0.05; done
	"$UNIRDMA" vrnic create a1 --tenant t1 --ip "$n.1/24" >/dev/null
	check "a new daemon with a1: a1 alone, Healthy" fk wait "$EVENTS" unirdma.io/vrnic "a1:Healthy" --since "$t0" --within 3
	check "  the pool Healthy again" fk wait "$EVENTS" unirdma.io/vrnic-cni \
		"cni-0:Healthy cni-1:Healthy cni-2:Healthy" --since "$t0" --within 3

	stop_plugin "$pid_all"
	rc=$?
	check "SIGTERM: exit 0 ($rc)" test "$rc" = 0
	check "its socket is gone" test ! -e "$all"
	stop_plugin "$pid_t2"
	rc=$?
	check "the t2 plugin: exit 0 ($rc)${vg[*]:+, valgrind found nothing}" test "$rc" = 0
	[ -s "$WORK/t2.valgrind" ] && sed 's/^/  valgrind | /' "$WORK/t2.valgrind" | head -n 40
	stop_plugin "$pid_cni"
	rc=$?
	check "the --cni-pool plugin: exit 0 ($rc), its socket gone" bash -c "[ $rc = 0 ] && [ ! -e '$cni' ]"
	check "the kubelet saw the three streams end" bash -c "[ \$(grep -c '\"ev\": \"stream_end\"' '$EVENTS') -ge 3 ]"
	check "the plugins logged each event" bash -c "grep -q 'vRNIC a3 is offered' '$WORK/all.plugin.log' &&
		grep -q 'vRNIC a3 is gone' '$WORK/all.plugin.log' && grep -q 'is gone (kubelet restarted?)' '$WORK/all.plugin.log' &&
		grep -q 'vRNIC bad- is not offered' '$WORK/all.plugin.log'"
	check "no sanitizer report in the plugins' logs" no_sanitizer_report
	dp_report
	checks_result
}

# ---- podman -------------------------------------------------------------------

IMAGE=localhost/unirdma-test:devplugin
LABEL=unirdma-test=devplugin-$$
PODMAN=(podman --runtime runc)
BASE_OPTS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 -v /usr:/usr:ro --label "$LABEL")
[ -n "${UNIRDMA_EXEC_PRELOAD:-}" ] && BASE_OPTS+=(-e "LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD")
[ -n "${ASAN_OPTIONS:-}" ] && BASE_OPTS+=(-e "ASAN_OPTIONS=$ASAN_OPTIONS")
RUN_OPTS=("${BASE_OPTS[@]}" --network none)
SYS_CDI=/var/run/cdi  # podman 4.3 reads specs only there and in /etc/cdi
[ -d "$SYS_CDI" ] && SYS_CDI_WAS_THERE=1 || SYS_CDI_WAS_THERE=0

devplugin_podman_cleanup() {
	"${PODMAN[@]}" rm -f --filter "label=$LABEL" >/dev/null 2>&1
	"${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
	[ -n "${STATE:-}" ] && rm -f "$SYS_CDI/unirdma-$(fnv1a 32 "$STATE").json" "$SYS_CDI/unirdma-$(fnv1a 32 "$STATE")-cni.json"
	[ "$SYS_CDI_WAS_THERE" = 1 ] || rmdir "$SYS_CDI" 2>/dev/null
	return 0
}

# cdi_of SOCKET ID: the CDI names Allocate gives for one container of ID
cdi_of() {
	fk call "$1" allocate "$2" | sed -n 's/^container 0 cdi //p'
}

case_podman() {
	require_prog podman runc ibv_rc_pingpong
	dp_setup --cdi-dir "$SYS_CDI"
	CLEANUP_HOOKS+=(devplugin_podman_cleanup)
	make_image
	local ip=10.77.$SUBNET.1 sock=$KDIR/unirdma.io-vrnic.sock t0 name_a name_b rc src
	"$UNIRDMA" vrnic create pa --tenant t1 --ip "$ip/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create pb --tenant t1 --ip "10.77.$SUBNET.2/24" >/dev/null || return 1
	start_kubelet
	t0=$(now)
	start_plugin all --
	local pid=$PLUGIN_PID
	check "the plugin lists pa and pb" fk wait "$EVENTS" unirdma.io/vrnic "pa:Healthy pb:Healthy" --since "$t0" --within 5
	# kubelet calls Allocate once per container
	name_a=$(cdi_of "$sock" pa)
	name_b=$(cdi_of "$sock" pb)
	say "  Allocate pa -> '$name_a', pb -> '$name_b'"
	check "the names are devices of the daemon's spec in $SYS_CDI" in_spec "$SYS_CDI/unirdma-$(fnv1a 32 "$STATE").json" \
		"${name_a:-none}" "${name_b:-none}"
	say "+ podman --device $name_a: ibv_rc_pingpong -g 0 -n 200; podman --device $name_b: the client"
	"${PODMAN[@]}" run -d --name srv$$ "${RUN_OPTS[@]}" --device "$name_a" "$IMAGE" \
		ibv_rc_pingpong -g 0 -n 200 >/dev/null 2>"$WORK/srv.err" || { say "  podman run: $(cat "$WORK/srv.err")"; return 1; }
	if server_up srv$$ 18515; then
		timeout 60 "${PODMAN[@]}" run --rm "${RUN_OPTS[@]}" --device "$name_b" "$IMAGE" \
			ibv_rc_pingpong -g 0 -n 200 "$ip" >"$WORK/client.out" 2>&1
		rc=$?
	else
		say "  the server did not listen"
		rc=none
	fi
	src=$(timeout 30 "${PODMAN[@]}" wait srv$$ 2>/dev/null)
	"${PODMAN[@]}" logs srv$$ >"$WORK/server.out" 2>&1
	"${PODMAN[@]}" rm -f srv$$ >/dev/null 2>&1
	tail -n 3 "$WORK/client.out" | sed 's/^/  client | /'
	tail -n 2 "$WORK/server.out" | sed 's/^/  server | /'
	check "ibv_rc_pingpong: client exit 0 ($rc), server exit 0 (${src:-none})" test "$rc/$src" = 0/0
	check "  200 iterations" grep -q '200 iters in' "$WORK/client.out"
	check "pa and pb counted the traffic" bash -c "[ \$(for v in pa pb; do '$UNIRDMA' --json vrnic show \$v; done |
		'$PY' -c 'import json,sys; print(min(json.loads(l)[\"vrnic\"][\"counters\"][\"tx_bytes\"] for l in sys.stdin))') -gt 0 ]"
	stop_plugin "$pid"
	rc=$?
	check "SIGTERM: exit 0 ($rc)" test "$rc" = 0
	check "no sanitizer report in the plugin's log" no_sanitizer_report
	dp_report
	checks_result
}

# ---- pod ----------------------------------------------------------------------


# the pod network: a CNI network of the bridge plugin alone (no gateway, no
# masquerading: no iptables rule), named to podman by a private
# containers.conf (cni.sh does the same with unirdma-cni chained)
pod_net_setup() {
	NET=urdpod$SUBNET BRIDGE=urdpod$SUBNET
	PODMAN=(env CONTAINERS_CONF="$WORK/containers.conf" podman --runtime runc)
	CLEANUP_HOOKS+=(pod_net_cleanup)
	cni_net "$NET" "$BRIDGE" "10.78.$SUBNET.0/24" '["/usr/lib/cni"]'
}

pod_net_cleanup() {
	"${PODMAN[@]}" rm -f --filter "label=$LABEL" >/dev/null 2>&1
	cni_net_cleanup "$NET" "$BRIDGE"
}

# hook_marks IP [BRIDGE-NETNS]: what the hook would add: the host's
# interfaces named eth0 or rdma0..7, any with the address IP, and the ports
# of the tenant's bridge (its namespace when there is one)
hook_marks() {
	ip -o link show | awk -F': ' '{ sub("@.*", "", $2) } $2 ~ /^(eth0|rdma[0-7])$/ { print $2 }'
	ip -o -4 addr show | grep -F " inet $1/"
	[ -z "${2:-}" ] || ip -n "$2" -o link show | awk -F': ' '{ print $2 }'
}

# pod_ifs FILE: "IF ADDR/PREFIX" of each IPv4 address in the output of `ip -4 -o addr show`
pod_ifs() { awk '$3 == "inet" { print $2, $4 }' "$1"; }

# ip_of_pod NAME: the container's address on the pod network
ip_of_pod() { "${PODMAN[@]}" inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$1" 2>/dev/null; }

case_pod() {
	require_prog podman runc ibv_rc_pingpong
	[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] ||
		skip "containernetworking-plugins is not installed (scripts/install-deps.sh)"
	dp_setup --cdi-dir "$SYS_CDI"
	CLEANUP_HOOKS+=(devplugin_podman_cleanup)
	pod_net_setup
	make_image
	local n=10.77.$SUBNET sock=$KDIR/unirdma.io-vrnic.sock t0 name_a name_b name_c rc src brns before after out vr
	local opts=("${BASE_OPTS[@]}" --network "$NET") sys=/sys/class/infiniband
	for vr in pa:1 pb:2 pc:3; do
		"$UNIRDMA" vrnic create "${vr%:*}" --tenant t1 --ip "$n.${vr#*:}/24" >/dev/null || return 1
	done
	start_kubelet
	t0=$(now)
	start_plugin all --
	local pid=$PLUGIN_PID
	check "the plugin lists pa, pb and pc" fk wait "$EVENTS" unirdma.io/vrnic "pa:Healthy pb:Healthy pc:Healthy" \
		--since "$t0" --within 5
	name_a=$(cdi_of "$sock" pa) name_b=$(cdi_of "$sock" pb) name_c=$(cdi_of "$sock" pc)
	say "  Allocate: pa -> '$name_a', pb -> '$name_b', pc -> '$name_c'"

	# a hostNetwork pod: the hook is given a process of the host's namespace
	brns=$(ip netns list | awk -v p="unirdma-$(fnv1a 32 "$STATE")-" 'index($1, p) == 1 { print $1 }')
	before=$(hook_marks "$n.1" "$brns")
	out=$(echo '{"pid": '$$', "bundle": "/tmp/x"}' | "$UNIRDMA" --state-dir "$STATE" cdi-hook pa 2>&1)
	rc=$?
	after=$(hook_marks "$n.1" "$brns")
	say "  cdi-hook pa on the host's namespace: exit $rc: $out"
	check "the hook refuses the host's network namespace (exit $rc)" \
		bash -c "[ $rc != 0 ] && grep -q \"the container has the host's network namespace\" <<<\"\$1\"" _ "$out"
	check "  and adds nothing, to the host or a bridge namespace" test "$before" = "$after"

	say "+ pod s ($NET, --device $name_a): ibv_rc_pingpong -g 0 -n 200"
	"${PODMAN[@]}" run -d --name s$$ "${opts[@]}" --device "$name_a" "$IMAGE" sh -c \
		"ip -4 -o addr show; echo ndev \$(cat $sys/pa/ports/1/gid_attrs/ndevs/0); exec ibv_rc_pingpong -g 0 -n 200" \
		>/dev/null 2>"$WORK/s.err" || { say "  podman run: $(cat "$WORK/s.err")"; return 1; }
	server_up s$$ 18515 || { say "  the server did not listen: $("${PODMAN[@]}" logs s$$ 2>&1 | tail -n 3)"; return 1; }
	"${PODMAN[@]}" logs s$$ >"$WORK/s.head" 2>&1
	pod_ifs "$WORK/s.head" | sed 's/^/  s | /'
	check "s: eth0 is the CNI network's ($(ip_of_pod s$$)), rdma0 has pa's address" \
		test "$(pod_ifs "$WORK/s.head" | grep -v '^lo ' | sort)" = "$(printf 'eth0 %s/24\nrdma0 %s/24' "$(ip_of_pod s$$)" "$n.1")"
	check "s: the GID's netdev is rdma0" grep -qx 'ndev rdma0' "$WORK/s.head"

	# the pod's other containers join s's namespace
	out=$(timeout 60 "${PODMAN[@]}" run --rm "${BASE_OPTS[@]}" --network container:s$$ --device "$name_a" "$IMAGE" \
		sh -c "ip -o link show | cut -d: -f2 | cut -d@ -f1; echo ndev \$(cat $sys/pa/ports/1/gid_attrs/ndevs/0)" 2>&1)
	rc=$?
	sed 's/^/  s2 | /' <<<"$out"
	check "a second container of the pod with pa: starts ($rc), adds nothing, its GID's netdev is rdma0" \
		test "$rc $(tr -d ' ' <<<"$out" | tr '\n' ' ')" = "0 lo eth0 rdma0 ndevrdma0 "
	out=$(timeout 60 "${PODMAN[@]}" run --rm "${BASE_OPTS[@]}" --network container:s$$ --device "$name_c" "$IMAGE" \
		sh -c "ip -4 -o addr show; echo ndev \$(cat $sys/pc/ports/1/gid_attrs/ndevs/0)" 2>&1)
	rc=$?
	sed 's/^/  s3 | /' <<<"$out"
	check "a third one with pc: starts ($rc), pc's address on rdma1, its GID's netdev is rdma1" bash -c \
		"[ $rc = 0 ] && grep -Eq '^[0-9]+: rdma1 +inet $n.3/24 ' <<<\"\$1\" && grep -qx 'ndev rdma1' <<<\"\$1\"" _ "$out"

	say "+ pod c ($NET, --device $name_b): ibv_rc_pingpong -g 0 -n 200 $n.1"
	timeout 60 "${PODMAN[@]}" run --rm "${opts[@]}" --device "$name_b" "$IMAGE" \
		ibv_rc_pingpong -g 0 -n 200 "$n.1" >"$WORK/client.out" 2>&1
	rc=$?
	src=$(timeout 30 "${PODMAN[@]}" wait s$$ 2>/dev/null)
	"${PODMAN[@]}" logs s$$ >"$WORK/server.out" 2>&1
	"${PODMAN[@]}" rm -f s$$ >/dev/null 2>&1
	tail -n 3 "$WORK/client.out" | sed 's/^/  client | /'
	tail -n 2 "$WORK/server.out" | sed 's/^/  server | /'
	check "ibv_rc_pingpong over rdma0: client exit 0 ($rc), server exit 0 (${src:-none})" test "$rc/$src" = 0/0
	check "  200 iterations" grep -q '200 iters in' "$WORK/client.out"
	stop_plugin "$pid"
	rc=$?
	check "the plugin: exit 0 ($rc)" test "$rc" = 0
	dp_report
	checks_result
}

# ---- fuzz ---------------------------------------------------------------------

case_fuzz() {
	local bin=$BUILD/fuzz/fuzz_devplugin f rc bad=0
	# not local: the EXIT trap runs after this function returned
	fw=$(mktemp -d /tmp/unirdma-dpfuzz.XXXXXX) || die "mktemp failed"
	trap 'rm -rf "$fw"' EXIT
	require_prog clang
	[ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] ||
		skip "clang has no libFuzzer runtime (libclang-rt-14-dev, scripts/install-deps.sh)"
	"$PY" -c 'import grpc, grpc_tools' 2>/dev/null || skip "python3-grpcio or python3-grpc-tools is not installed"
	say "+ make devplugin-fuzz"
	make -s -C "$TOP" BUILD="$BUILD" devplugin-fuzz >"$fw/build.log" 2>&1 || { tail -n 20 "$fw/build.log"; return 1; }
	FAKE_KUBELET_GEN=$fw/gen fk seeds "$fw/corpus" || return 1
	for f in "$fw/corpus"/*; do
		if ! ASAN_OPTIONS=detect_leaks=1 timeout 60 "$bin" "$f" >"$fw/one.log" 2>&1; then
			say "  FAIL: seed $(basename "$f"): $(grep -m1 -E 'invariant|ERROR:|runtime error:' "$fw/one.log")"
			bad=1
		fi
	done
	check "each seed runs clean (answered, no sanitizer report)" test "$bad" = 0
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$bin" -max_total_time="${UNIRDMA_FUZZ_TIME:-3}" \
		-max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$fw/" \
		"$fw/corpus" >"$fw/fuzz.log" 2>&1
	rc=$?
	grep -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units' "$fw/fuzz.log" | sed 's/^/  | /'
	if [ "$rc" != 0 ]; then
		grep -m1 -B2 -A30 -E 'invariant|ERROR:|runtime error:' "$fw/fuzz.log" | sed 's/^/  | /'
		mkdir -p "$BUILD/fuzz/crashes"
		cp "$fw"/crash-* "$fw"/leak-* "$fw"/timeout-* "$BUILD/fuzz/crashes/" 2>/dev/null &&
			say "  kept in $BUILD/fuzz/crashes/; replay: $bin FILE"
	fi
	check "fuzz_devplugin for ${UNIRDMA_FUZZ_TIME:-3} s: no crash, leak or unanswered request (exit $rc)" test "$rc" = 0
	checks_result
}

add_case register_list case_register_list
add_case podman case_podman
add_case pod case_pod
add_case fuzz case_fuzz
run_cases "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# cni.sh: the CNI plugin unirdma-cni (cli/cni.c) driven by podman's CNI
# backend, and the CDI device unirdma.io/vrnic=cni that brings the vRNIC
# it made into the container (`unirdma cdi-hook --cni`).
#   two        Debian's unmodified ibv_rc_pingpong, ib_write_bw and
#              ib_read_lat between two podman containers of the network;
#              `vrnic list` shows both containers' vRNICs with their IPs
#   lifecycle  create, use, rm (the vRNIC goes), the same name again; the
#              container has the vRNIC's /sys/class/infiniband tree (the hook)
#   kill       `podman kill` of the server in the middle of ib_write_bw:
#              the client fails instead of hanging, no vRNIC is left
#   errors     the plugin run as a runtime runs it: ADD without an IPv4
#              address is a CNI error object, DEL twice succeeds, VERSION;
#              a container with the device but no unirdma-cni network does
#              not start
# The network is the case's own: a conflist (bridge + host-local +
# unirdma-cni, written from the README's example) in a private directory,
# named to podman by a private containers.conf (CONTAINERS_CONF: CNI
# backend, that directory, a plugin directory holding a link to
# unirdma-cni, then /usr/lib/cni). /etc/cni/net.d and the system's podman
# configuration are not touched. Removed at the end: the containers, the
# image, the bridge, host-local's leases (a dataDir in the case's scratch
# dir), libcni's cached results, the CDI files, and ip_forward is put back
# (the bridge plugin turns it on; the bridge has no address and no
# masquerading, so no iptables rule is made).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podlib.sh"

CASE_SETUP=: # each case starts its daemon (cni_setup)
CDI_DIR=/var/run/cdi
IMAGE=localhost/unirdma-test:cni
LABEL=unirdma-test=cni-$$
DAEMON_ARGS=(--cdi-dir "$CDI_DIR")
RUN_OPTS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768 -v /usr:/usr:ro --label "$LABEL")
[ -n "${UNIRDMA_EXEC_PRELOAD:-}" ] && RUN_OPTS+=(-e "LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD")
[ -n "${ASAN_OPTIONS:-}" ] && RUN_OPTS+=(-e "ASAN_OPTIONS=$ASAN_OPTIONS")
[ -d "$CDI_DIR" ] && CDI_DIR_WAS_THERE=1 || CDI_DIR_WAS_THERE=0

cni_cleanup() {
	[ -n "${WORK:-}" ] || return 0
	"${PODMAN[@]}" rm -f --filter "label=$LABEL" >/dev/null 2>&1
	"${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
	cni_net_cleanup "$NET" "$BRIDGE"
	rm -f "$CDI_DIR/unirdma-$(fnv1a 32 "$STATE")-cni.json"
	[ "$CDI_DIR_WAS_THERE" = 1 ] || rmdir "$CDI_DIR" 2>/dev/null
	return 0
}

cni_setup() {
	require_root
	require_prog podman runc
	[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] ||
		skip "containernetworking-plugins is not installed (scripts/install-deps.sh)"
	[ -x "$BINDIR/unirdma-cni" ] || die "$BINDIR/unirdma-cni is not built (run make)"
	start_daemon
	NET=urdcni$SUBNET BRIDGE=urdcni$SUBNET SUBNET_CIDR=10.78.$SUBNET.0/24
	PODMAN=(env CONTAINERS_CONF="$WORK/containers.conf" podman --runtime runc)
	CLEANUP_HOOKS+=(cni_cleanup)
	mkdir -p "$WORK/plugins" || die "mkdir failed"
	ln -s "$BINDIR/unirdma-cni" "$WORK/plugins/unirdma-cni"
	cni_net "$NET" "$BRIDGE" "$SUBNET_CIDR" "[\"$WORK/plugins\", \"/usr/lib/cni\"]" "$STATE"
	RUN_OPTS+=(--network "$NET")
	make_image
}

# cni_vrnics: "NAME IP/PREFIX" of each vRNIC unirdma-cni made, sorted
cni_vrnics() { "$UNIRDMA" vrnic list | awk '$1 ~ /^cni-/ { print $1, $3 }' | sort; }

# prun NAME CMD...: a detached container of the network with the device
prun() {
	local name=$1
	shift
	"${PODMAN[@]}" run -d --name "$name" "${RUN_OPTS[@]}" --device unirdma.io/vrnic=cni "$IMAGE" "$@" \
		>/dev/null 2>"$WORK/$name.err" || { say "  podman run $name: $(cat "$WORK/$name.err")"; return 1; }
}

# ip_of NAME: the container's address on the network
ip_of() { "${PODMAN[@]}" inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$1" 2>/dev/null; }

# id_vrnic NAME: the vRNIC unirdma-cni names for the container
id_vrnic() { printf 'cni-%.28s\n' "$("${PODMAN[@]}" inspect -f '{{.Id}}' "$1")"; }

# finish NAME: waits for the container (at most 60 s), keeps its log in
# $WORK/NAME.out, removes it; prints its exit code
finish() {
	local rc
	rc=$(timeout 60 "${PODMAN[@]}" wait "$1" 2>/dev/null)
	"${PODMAN[@]}" logs "$1" >"$WORK/$1.out" 2>&1
	"${PODMAN[@]}" rm -f "$1" >/dev/null 2>&1
	echo "${rc:-none}"
}

# pair DESC SERVER_CMD... -- CLIENT_CMD...: the server in container s, the
# client in container c, given the server's address as its last argument
pair() {
	local desc=$1 scmd=() ccmd=() sip src crc
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	prun s "${scmd[@]}" || return 1
	if ! server_up s 18515; then
		say "  the server did not listen; its log:"
		"${PODMAN[@]}" logs s 2>&1 | tail -n 5 | sed 's/^/  | /'
		"${PODMAN[@]}" rm -f s >/dev/null 2>&1
		return 1
	fi
	sip=$(ip_of s)
	say "+ s ($sip): ${scmd[*]}; c: ${ccmd[*]} $sip"
	prun c "${ccmd[@]}" "$sip" || return 1
	[ -n "${PAIR_DURING:-}" ] && $PAIR_DURING
	crc=$(finish c)
	src=$(finish s)
	tail -n 3 "$WORK/c.out" | sed 's/^/  client | /'
	tail -n 2 "$WORK/s.out" | sed 's/^/  server | /'
	check "$desc: client exit 0 ($crc), server exit 0 ($src)" test "$crc/$src" = 0/0
}

# while the pingpong's client waits: both containers' vRNICs are listed
# with the containers' addresses
both_listed() {
	local want
	want=$(for n in s c; do printf '%s %s/24\n' "$(id_vrnic $n)" "$(ip_of $n)"; done | sort)
	cni_vrnics | sed 's/^/  vrnic list | /'
	check "vrnic list: the two containers' vRNICs with their addresses" test "$(cni_vrnics)" = "$want"
}

case_two() {
	cni_setup
	PAIR_DURING=both_listed pair ibv_rc_pingpong ibv_rc_pingpong -g 0 -n 200 -- \
		sh -c 'sleep 1; exec ibv_rc_pingpong -g 0 -n 200 "$0"'
	check "  the pingpong's iterations" grep -q '200 iters in' "$WORK/c.out"
	pair ib_write_bw ib_write_bw -x 0 -F -n 200 -- ib_write_bw -x 0 -F -n 200
	check "  a bandwidth row with a non-zero figure" awk '$1 == 65536 && $2 == 200 && $4 > 0 { ok = 1 } END { exit !ok }' "$WORK/c.out"
	pair ib_read_lat ib_read_lat -x 0 -F -n 100 -- ib_read_lat -x 0 -F -n 100
	check "  a latency row" awk '$1 == 2 && $2 == 100 && $3 > 0 { ok = 1 } END { exit !ok }' "$WORK/c.out"
	check "no vRNIC of the plugin is left" test -z "$(cni_vrnics)"
	checks_result
}

case_lifecycle() {
	cni_setup
	local round out vr ip
	for round in 1 2; do
		"${PODMAN[@]}" create --name lc "${RUN_OPTS[@]}" --device unirdma.io/vrnic=cni "$IMAGE" \
			sh -c 'ibv_devices; ip -4 -o addr show eth0; ls /run/unirdma/dev
				echo "ibdev $(cat /sys/class/infiniband_verbs/uverbs0/ibdev)"
				for f in gid_attrs/types/0 gid_attrs/ndevs/0 gids/0; do
					echo "$f $(cat /sys/class/infiniband/*/ports/1/$f)"; done' \
			>/dev/null 2>"$WORK/create.err" ||
			{ say "  podman create: $(cat "$WORK/create.err")"; return 1; }
		vr=$(id_vrnic lc)
		check "round $round: created, not started: no vRNIC yet" test -z "$(cni_vrnics)"
		out=$(timeout 60 "${PODMAN[@]}" start -a lc 2>&1)
		sed 's/^/  | /' <<<"$out"
		ip=$(awk '$2 == "eth0" && $3 == "inet" { sub("/.*", "", $4); print $4 }' <<<"$out")
		check "round $round: the container lists its vRNIC $vr through our library" \
			grep -Eq "^[[:space:]]+${vr}[[:space:]]+[0-9a-f]{16}" <<<"$out"
		check "round $round: its region is at /run/unirdma/dev/$vr" grep -qx "$vr" <<<"$out"
		check "round $round: eth0 has an address of the network ($ip)" grep -q "^10\.78\.$SUBNET\." <<<"$ip"
		check "round $round: /sys/class/infiniband has $vr (uverbs0), GID 0 RoCE v2 on eth0, ::ffff:$ip" bash -c \
			"grep -qx 'ibdev $vr' <<<\"\$1\" && grep -qx 'gid_attrs/types/0 RoCE v2' <<<\"\$1\" &&
			 grep -qx 'gid_attrs/ndevs/0 eth0' <<<\"\$1\" &&
			 grep -qx \"gids/0 0000:0000:0000:0000:0000:ffff:\$(printf '%02x%02x:%02x%02x' \${2//./ })\" <<<\"\$1\"" _ "$out" "$ip"
		"${PODMAN[@]}" rm lc >/dev/null 2>&1
		check "round $round: after podman rm the vRNIC is gone" test -z "$(cni_vrnics)"
		check "round $round: and its record" test -z "$(ls "$STATE/cni" 2>/dev/null)"
	done
	checks_result
}

case_kill() {
	cni_setup
	local crc t0 t1
	prun s ib_write_bw -x 0 -F -D 30 || return 1
	server_up s 18515 || { say "  the server did not listen"; return 1; }
	prun c ib_write_bw -x 0 -F -D 30 "$(ip_of s)" || return 1
	# traffic flows: the client's vRNIC has sent
	local i vr svr
	vr=$(id_vrnic c) svr=$(id_vrnic s)
	for ((i = 0; i < 100; i++)); do
		[ "$(tx_bytes_of "$vr" 2>/dev/null || echo 0)" -gt 1000000 ] 2>/dev/null && break
		sleep 0.1
	done
	say "  client's vRNIC sent $(tx_bytes_of "$vr") bytes; podman kill s"
	t0=$(date +%s)
	"${PODMAN[@]}" kill s >/dev/null
	crc=$(finish c)
	t1=$(date +%s)
	tail -n 3 "$WORK/c.out" | sed 's/^/  client | /'
	check "the peer fails (exit $crc) rather than hangs ($((t1 - t0)) s)" \
		bash -c "[ '$crc' != 0 ] && [ '$crc' != none ] && [ $((t1 - t0)) -lt 30 ]"
	# podman tears the killed container's network down (CNI DEL) before rm
	for ((i = 0; i < 100; i++)); do
		cni_vrnics | grep -q "^$svr " || break
		sleep 0.1
	done
	check "the killed container's vRNIC went with its network (before podman rm)" \
		bash -c "! '$UNIRDMA' vrnic list | grep -q '^$svr '"
	"${PODMAN[@]}" rm -f s >/dev/null 2>&1
	check "no vRNIC is left" test -z "$(cni_vrnics)"
	check "no record is left" test -z "$(ls "$STATE/cni" 2>/dev/null)"
	checks_result
}

# plugin COMMAND CONFIG: runs unirdma-cni as a runtime does
plugin() {
	printf '%s' "$2" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin CNI_COMMAND="$1" CNI_CONTAINERID=cnitest$$ \
		CNI_NETNS=/proc/self/ns/net CNI_IFNAME=eth0 CNI_PATH="$WORK/plugins:/usr/lib/cni" \
		"$WORK/plugins/unirdma-cni"
}

plugin_ok() { plugin "$@" >/dev/null; }

# is_cni_error JSON CODE: a CNI error object with that code and a message
is_cni_error() {
	python3 -c 'import json,sys; e = json.loads(sys.argv[1]); sys.exit(not (e["cniVersion"] == "1.0.0" and e["code"] == int(sys.argv[2]) and e["msg"] and "details" in e))' "$1" "$2"
}

case_errors() {
	cni_setup
	local conf out rc
	conf='{"cniVersion":"1.0.0","name":"'$NET'","type":"unirdma-cni","stateDir":"'$STATE'",
	       "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/proc/self/ns/net"}],
	                     "ips":[{"address":"fd00::5/64","interface":0}]}}'
	out=$(plugin ADD "$conf")
	rc=$?
	say "  ADD without IPv4: exit $rc: $out"
	check "ADD with no IPv4 in prevResult: a CNI error (code 7) on stdout, non-zero exit" \
		bash -c "[ $rc != 0 ] && $(declare -f is_cni_error); is_cni_error \"\$1\" 7" _ "$out"
	check "  and no vRNIC" test -z "$(cni_vrnics)"
	conf=${conf/fd00::5\/64/10.78.$SUBNET.200/24}
	out=$(plugin ADD "$conf")
	check "ADD with 10.78.$SUBNET.200/24: exit 0, prevResult passed through" \
		python3 -c 'import json,sys; r = json.loads(sys.argv[1]); sys.exit(r["ips"][0]["address"] != sys.argv[2])' \
		"$out" "10.78.$SUBNET.200/24"
	check "  its vRNIC" test "$(cni_vrnics)" = "cni-cnitest$$ 10.78.$SUBNET.200/24"
	check "ADD again (the same container): exit 0" plugin_ok ADD "$conf"
	check "CHECK: exit 0" plugin_ok CHECK "$conf"
	check "DEL: exit 0" plugin_ok DEL "$conf"
	check "  the vRNIC is gone" test -z "$(cni_vrnics)"
	check "DEL again: exit 0" plugin_ok DEL "$conf"
	out=$(plugin CHECK "$conf")
	check "CHECK after DEL: a CNI error (code 101)" bash -c "$(declare -f is_cni_error); is_cni_error \"\$1\" 101" _ "$out"
	conf='{"cniVersion":"0.4.0","name":"'$NET'","type":"unirdma-cni","stateDir":"'$STATE'",
	       "prevResult":{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"/proc/self/ns/net"}],
	                     "ips":[{"version":"4","address":"10.78.'$SUBNET'.201/24","interface":0}]}}'
	check "cniVersion 0.4.0: ADD" plugin_ok ADD "$conf"
	check "  its vRNIC" test "$(cni_vrnics)" = "cni-cnitest$$ 10.78.$SUBNET.201/24"
	check "  CHECK" plugin_ok CHECK "$conf"
	check "  DEL" plugin_ok DEL "$conf"
	check "  the vRNIC is gone" test -z "$(cni_vrnics)"
	out=$(plugin VERSION '{"cniVersion":"1.0.0"}')
	say "  VERSION: $out"
	check "VERSION: 0.4.0 and 1.0.0" python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["supportedVersions"] != ["0.4.0", "1.0.0"])' "$out"
	# the device without a unirdma-cni network: the hook finds no vRNIC
	out=$(timeout 60 "${PODMAN[@]}" run --rm --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \
		-v /usr:/usr:ro --label "$LABEL" --network none --device unirdma.io/vrnic=cni "$IMAGE" true 2>&1)
	rc=$?
	say "  --network none --device unirdma.io/vrnic=cni: exit $rc: $(grep -o 'cdi-hook --cni: [^"]*' <<<"$out" | head -n 1 | cut -c1-150)"
	check "a container with the device and no unirdma-cni network does not start" \
		bash -c "[ $rc != 0 ] && grep -q 'unirdma-cni made no vRNIC' <<<\"\$1\"" _ "$out"
	checks_result
}

add_case two case_two
add_case lifecycle case_lifecycle
add_case kill case_kill
add_case errors case_errors
run_cases "$@"

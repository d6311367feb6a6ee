# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# mhlib.sh: several unirdma hosts on one machine, for the multi-host tests
# (sourced after lib.sh; used by multihost.sh and rxe_interop.sh).
#
# Topology (fixed names: one multi-host test at a time on a machine, a lock
# file says so):
#
#   netns urdmh-br     br0 (the underlay, MTU 1500 or 9000), one port hK per
#                      host, e0 to etcd, the rxe guest's tap
#   netns urdmh-hK     host K (1..9): ul0 = 10.78.0.K/24, veth into br0; its
#                      unirdmad runs here: --underlay ul0 --state-dir S_K
#                      [--cluster http://10.78.0.250:2379 --host-name hK]
#                      and adds each vRNIC's address as /32 on ul0
#   netns urdmh-etcd   (mh_setup --etcd) etcd on 10.78.0.250:2379
#   vRNIC i of host K  address 10.78.0.(10K+i) (mh_vrnic K I): host 1 has
#                      .11 .12 ..., host 2 .21 ...
#   netns urdmh-tl-T   tenant T's LAN (mh_tenant_lan T): br0 with one veth
#                      into each host's tenant bridge namespace (the one
#                      `unirdma exec` attaches that tenant's containers to,
#                      cli/net.c), so containers of T on different hosts
#                      reach each other's eth0 (their vRNIC address) by TCP:
#                      the out-of-band exchange of perftest and the pingpongs
#   the rxe guest      (rxe_interop.sh) QEMU with kernel rxe: NIC 1 on br0 at
#                      10.78.0.200 (RoCE), NIC 2 on a tenant LAN at
#                      10.78.1.200 with /32 routes to the containers (TCP)
#
# The underlay and each tenant LAN are separate L2 segments: the same
# address is on a host's ul0 (RoCE to the daemon) and a container's eth0
# (TCP to the program) without conflict.
#
#   mh_setup N [MTU] [--etcd]    the underlay with N hosts (no daemons yet)
#   mh_daemon K [ARGS...]        start host K's unirdmad (extra daemon args)
#   mh_has_wire                  0 when unirdmad takes --underlay (the wire)
#   mh_has_cluster               0 when unirdmad takes --cluster (the directory)
#   mh_cli K ARGS...             the CLI against host K's daemon
#   mh_vrnic K I [TENANT]        create vRNIC hKvI with address 10.78.0.(10K+I)/24
#   mh_container K VRNIC CMD...  `unirdma exec` on host K
#   mh_tenant_lan TENANT         link the hosts' tenant bridges (TCP between hosts)
#   mh_pair [-p PORT] A VRA SCMD B VRB CCMD
#                                server in a container on host A, client on B
#   mh_loss PCT [MBYTES]         drop PCT % of UDP 4791 on br0 (0 = off), of the first MBYTES MiB only
#   mh_link K down|up            host K's port on br0
#   mh_etcd stop|start
#   mh_kill K                    SIGKILL host K's daemon
#   mh_relay ARGS...             tests/tools/roce_relay on host 1's egress
#   mh_cleanup                   everything (the EXIT trap of mh_setup)
#   mh_capture start|stop        tshark on br0 (UDP 4791) into $MH_TMP/underlay.pcap
#                                (the first $MH_CAPTURE_MAX frames, default 2000)
#   mh_pcap_check FILE           no malformed frame; ICRCs checked where a checker is
#   kernel-rxe guests (tests/vm/build-rxe-image.sh):
#   mh_rxe_prepare               build/find the image, or skip
#   mh_rxe_boot NAME ADDR SCRIPT [TENANT LAN_ADDR ROUTES...]
#                                boot a guest: NIC 1 on br0 at ADDR/24 with rxe0
#                                on it, NIC 2 (when TENANT) on TENANT's LAN at
#                                LAN_ADDR/32 with /32 routes to ROUTES
#   mh_rxe_wait NAME TEXT SECS   wait for a console line with TEXT
#   mh_rxe_finish NAME SECS      wait for power-off, print the console, return
#                                the code of the guest's script
#
# Everything lives under one tmp dir ($MH_TMP); mh_setup sets the traps that
# remove it all, also on failure or interrupt.  UNIRDMA_MH_KEEP=DIR keeps a
# failed case's captures, daemon logs and guest consoles in DIR;
# MH_DAEMON_EXTRA adds options to every unirdmad (--debug: the wire's
# go-backs, timeouts and read responses in the daemons' logs).

MH_BR=urdmh-br
MH_ETCD_NS=urdmh-etcd
MH_NET=10.78.0
MH_ETCD_URL=http://$MH_NET.250:2379
MH_LOCK=/run/unirdma-mh.lock
MH_N=0
MH_MTU=1500
MH_ETCD=0
MH_ETCD_PID=
MH_RELAY_PID=
MH_TENANTS=()
declare -A MH_STATE MH_DPID MH_DLOG

mh_ns() { printf 'urdmh-h%s\n' "$1"; }

# mh_stale_cleanup: namespaces a killed earlier run left (under the lock, so
# never those of a run that is still going).
mh_stale_cleanup() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep '^urdmh-'); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
}

# mh_setup N [MTU] [--etcd]
mh_setup() {
	local n=$1 k a
	shift
	for a in "$@"; do
		case $a in
		--etcd) MH_ETCD=1 ;;
		[0-9]*) MH_MTU=$a ;;
		*) die "mh_setup: unknown argument $a" ;;
		esac
	done
	require_root
	require_build
	require_prog ip nft flock
	[ "$n" -ge 0 ] && [ "$n" -le 9 ] || die "mh_setup: 0 to 9 hosts"
	MH_TMP=$(mktemp -d /tmp/unirdma-mh.XXXXXX) || die "mktemp failed"
	trap mh_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	# One multi-host test at a time: the names are fixed.  The lock is held
	# by a helper that lives as long as this shell, not by an fd of this
	# shell: every program it starts would inherit that fd (bash cannot set
	# close-on-exec), and a leftover server would hold the lock.
	local me=$BASHPID i
	flock -w 90 "$MH_LOCK" sh -c 'echo locked >"$1"; while [ -e "$1" ] && kill -0 "$2" 2>/dev/null; do sleep 0.2; done' \
		mh-lock "$MH_TMP/locked" "$me" </dev/null >/dev/null 2>&1 &
	MH_LOCK_PID=$!
	for ((i = 0; i < 1000; i++)); do
		[ -s "$MH_TMP/locked" ] && break
		kill -0 "$MH_LOCK_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$MH_TMP/locked" ]; then
		kill "$MH_LOCK_PID" 2>/dev/null
		rm -rf "$MH_TMP"
		die "another multi-host test holds $MH_LOCK"
	fi
	# what containers may write (lib.sh's convention), apart from the state dirs
	WORK=$MH_TMP/work
	mkdir -p "$WORK"
	export UNIRDMA_EXEC_RW=$WORK
	mh_stale_cleanup
	MH_N=$n
	ip netns add "$MH_BR" || die "ip netns add $MH_BR failed"
	ip -n "$MH_BR" link set lo up
	ip -n "$MH_BR" link add br0 mtu "$MH_MTU" up type bridge || die "no bridge in $MH_BR"
	for ((k = 1; k <= n; k++)); do
		ip netns add "$(mh_ns "$k")" || die "ip netns add $(mh_ns "$k") failed"
		ip -n "$(mh_ns "$k")" link set lo up
		ip -n "$MH_BR" link add "h$k" mtu "$MH_MTU" type veth peer name ul0 mtu "$MH_MTU" netns "$(mh_ns "$k")" ||
			die "veth for host $k failed"
		ip -n "$MH_BR" link set "h$k" master br0 up
		ip -n "$(mh_ns "$k")" addr add "$MH_NET.$k/24" dev ul0
		# The daemons send trains of packets with UDP GSO (engine/wire.h).
		# A NIC cuts them before the wire; a veth passes them whole, and a
		# capture on br0 would see 64 KiB trains.  ul0 takes one segment
		# per packet, so the kernel cuts the trains at the host's edge, as
		# a NIC without USO would (IP IDs counted up): the captures show
		# the packets an rxe peer checks.  MH_GSO_TRAINS=1 keeps them
		# whole to the receiving daemon (its UDP GRO path).
		[ "${MH_GSO_TRAINS:-0}" = 1 ] || ip -n "$(mh_ns "$k")" link set ul0 gso_max_segs 1 ||
			die "ip link set ul0 gso_max_segs 1 failed"
		ip -n "$(mh_ns "$k")" link set ul0 up
	done
	say "underlay: br0 in $MH_BR, MTU $MH_MTU, hosts 1..$n at $MH_NET.K/24 (ul0 in urdmh-hK)"
	if [ "$MH_ETCD" = 1 ]; then
		require_prog etcd
		ip netns add "$MH_ETCD_NS" || die "ip netns add $MH_ETCD_NS failed"
		ip -n "$MH_ETCD_NS" link set lo up
		ip -n "$MH_BR" link add e0 type veth peer name ul0 netns "$MH_ETCD_NS" || die "veth for etcd failed"
		ip -n "$MH_BR" link set e0 master br0 up
		ip -n "$MH_ETCD_NS" addr add "$MH_NET.250/24" dev ul0
		ip -n "$MH_ETCD_NS" link set ul0 up
		mh_etcd start
	fi
}

mh_etcd() {
	local i
	case $1 in
	start)
		[ -n "$MH_ETCD_PID" ] && kill -0 "$MH_ETCD_PID" 2>/dev/null && return 0
		ip netns exec "$MH_ETCD_NS" etcd --name urdmh --data-dir "$MH_TMP/etcd" \
			--listen-client-urls "$MH_ETCD_URL" --advertise-client-urls "$MH_ETCD_URL" \
			--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
			--initial-cluster urdmh=http://127.0.0.1:2380 >>"$MH_TMP/etcd.log" 2>&1 &
		MH_ETCD_PID=$!
		for ((i = 0; i < 200; i++)); do
			ip netns exec "$MH_ETCD_NS" etcdctl --endpoints "$MH_ETCD_URL" --command-timeout=1s \
				endpoint health >/dev/null 2>&1 && { say "etcd up at $MH_ETCD_URL"; return 0; }
			kill -0 "$MH_ETCD_PID" 2>/dev/null || break
			sleep 0.1
		done
		tail -n 20 "$MH_TMP/etcd.log"
		die "etcd did not come up"
		;;
	stop)
		[ -n "$MH_ETCD_PID" ] || return 0
		kill -TERM "$MH_ETCD_PID" 2>/dev/null
		wait_for_exit "$MH_ETCD_PID" 10 || kill -KILL "$MH_ETCD_PID" 2>/dev/null
		wait "$MH_ETCD_PID" 2>/dev/null
		MH_ETCD_PID=
		say "etcd stopped"
		;;
	*) die "mh_etcd start|stop" ;;
	esac
}

mh_help_has() { "$UNIRDMAD" --help 2>&1 | grep -q -- "$1"; }
mh_has_wire() { mh_help_has --underlay; }
mh_has_cluster() { mh_help_has --cluster; }
# mh_need_wire: skip unless daemons can reach each other (the wire, and a
# directory to tell them where the GIDs are).
mh_need_wire() {
	mh_has_wire || skip "unirdmad has no --underlay yet (the wire, issue 11)"
	mh_has_cluster || skip "unirdmad has no --cluster yet (the directory, issue 11): daemons cannot find each other's GIDs"
}

# mh_daemon K [ARGS...]: starts host K's unirdmad in urdmh-hK.
mh_daemon() {
	local k=$1 s i args=(--underlay ul0)
	shift
	s=${MH_STATE[$k]:-}
	if [ -z "$s" ]; then
		s=$(mktemp -d "/tmp/unirdma-mh-state$k.XXXXXX") || die "mktemp failed"
		MH_STATE[$k]=$s
		MH_DLOG[$k]=$MH_TMP/unirdmad-h$k.log
	fi
	if [ "$MH_ETCD" = 1 ] && mh_has_cluster; then
		args+=(--cluster "$MH_ETCD_URL" --host-name "h$k")
	fi
	ASAN_OPTIONS=${UNIRDMA_DAEMON_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
		nsenter --net="/run/netns/$(mh_ns "$k")" "$UNIRDMAD" --state-dir "$s" --foreground ${MH_DAEMON_EXTRA:-} \
		--metrics 127.0.0.1:0 "${args[@]}" "$@" >>"${MH_DLOG[$k]}" 2>&1 &
	MH_DPID[$k]=$!
	for ((i = 0; i < 500; i++)); do
		mh_cli "$k" daemon ping >/dev/null 2>&1 && return 0
		kill -0 "${MH_DPID[$k]}" 2>/dev/null || break
		sleep 0.02
	done
	say "host $k's unirdmad did not come up; its log:"
	tail -n 30 "${MH_DLOG[$k]}" | sed 's/^/  | /'
	return 1
}

mh_cli() {
	local k=$1
	shift
	"$UNIRDMA" --state-dir "${MH_STATE[$k]:?host $k has no daemon}" "$@"
}

mh_daemon_alive() {
	local p=${MH_DPID[$1]:-}
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" != Z ]
}

mh_kill() {
	local p=${MH_DPID[$1]:-}
	[ -n "$p" ] || return 1
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	say "host $1's unirdmad (pid $p) killed"
}

mh_ip() { printf '%s.%s\n' "$MH_NET" "$((10 * $1 + $2))"; }

# mh_vrnic K I [TENANT]: vRNIC hKvI of TENANT (default t1) on host K.
mh_vrnic() {
	local k=$1 i=$2 t=${3:-t1}
	mh_cli "$k" vrnic create "h${k}v$i" --tenant "$t" --ip "$(mh_ip "$k" "$i")/24" >/dev/null ||
		die "vrnic create h${k}v$i on host $k failed"
}

# (Started in the background, a function is a subshell of its own: $! would
# not be `unirdma exec`, and stopping it would leave the container. Background
# starts use mh_exec_cmd: "${MH_EXEC[@]}" ... &.)
mh_container() {
	local k=$1
	shift
	UNIRDMA_STATE_DIR=${MH_STATE[$k]} "$UNIRDMA" exec "$@"
}
# mh_exec_cmd K: MH_EXEC = the command line of `unirdma exec` on host K
mh_exec_cmd() { MH_EXEC=(env "UNIRDMA_STATE_DIR=${MH_STATE[$1]}" "$UNIRDMA" exec); }

# mh_tenant_ns K TENANT: creates host K's bridge namespace of TENANT the way
# cli/net.c does (same lock file, same names), so that it can be linked to
# the tenant LAN before the first container.
mh_tenant_ns() {
	local k=$1 t=$2 ns
	ns=$(bridge_ns "${MH_STATE[$k]}" "$t") || return 1
	(
		flock -w 10 9 || exit 1
		if [ ! -e "/run/netns/$ns" ]; then
			ip netns add "$ns" || exit 1
		fi
		ip -n "$ns" link show br0 >/dev/null 2>&1 || ip -n "$ns" link add br0 up type bridge || exit 1
		ip -n "$ns" link set lo up
	) 9>"${MH_STATE[$k]}/net.lock" || return 1
	printf '%s\n' "$ns"
}

# mh_tenant_lan TENANT: netns urdmh-tl-TENANT with br0, and a veth from it
# into each running host's bridge namespace of TENANT.
mh_tenant_lan() {
	local t=$1 lan=urdmh-tl-$1 k ns
	[ ${#lan} -le 15 ] || lan=urdmh-tl-$(fnv1a 32 "$t")
	if [ ! -e "/run/netns/$lan" ]; then
		ip netns add "$lan" || die "ip netns add $lan failed"
		ip -n "$lan" link set lo up
		ip -n "$lan" link add br0 up type bridge || die "no bridge in $lan"
		MH_TENANTS+=("$lan")
	fi
	for ((k = 1; k <= MH_N; k++)); do
		[ -n "${MH_STATE[$k]:-}" ] || continue
		ip -n "$lan" link show "h$k" >/dev/null 2>&1 && continue
		ns=$(mh_tenant_ns "$k" "$t") || die "no bridge namespace of tenant $t on host $k"
		ip -n "$lan" link add "h$k" type veth peer name "tl-$k" netns "$ns" ||
			die "veth from $lan to $ns failed"
		ip -n "$lan" link set "h$k" master br0 up
		ip -n "$ns" link set "tl-$k" master br0 up || die "tl-$k into br0 of $ns failed"
	done
	MH_LAN=$lan
	say "tenant $t's LAN: $lan linking hosts' bridge namespaces"
}

# mh_loss PCT [MBYTES]: drops PCT % of the UDP 4791 frames crossing br0
# (nftables numgen random in the bridge family); 0 removes the rule.  With
# MBYTES, only the first MBYTES MiB of RoCE traffic see loss (a named nft
# quota): a test can end loss-free at a point fixed in bytes, not in time.
mh_loss() {
	local pct=$1 quota=${2:-} q=''
	ip netns exec "$MH_BR" nft delete table bridge urdmh_loss 2>/dev/null
	[ "$pct" -gt 0 ] || { say "underlay loss off"; return 0; }
	[ -z "$quota" ] || q="quota name lossy"
	ip netns exec "$MH_BR" nft -f - <<EOF || die "nft loss rule failed"
table bridge urdmh_loss {
	counter dropped { }
	quota lossy { until ${quota:-0} mbytes }
	chain drop_roce {
		type filter hook forward priority 0; policy accept;
		udp dport 4791 $q numgen random mod 100 < $pct counter name dropped drop
	}
}
EOF
	say "underlay loss: $pct % of UDP 4791${quota:+ for its first $quota MiB}"
}

# mh_loss_dropped: frames the loss rule dropped so far.
mh_loss_dropped() {
	ip netns exec "$MH_BR" nft list counter bridge urdmh_loss dropped 2>/dev/null |
		awk '/packets/ { for (i = 1; i < NF; i++) if ($i == "packets") print $(i + 1) }'
}

mh_link() {
	ip -n "$MH_BR" link set "h$1" "$2" || die "link h$1 $2 failed"
	say "host $1's underlay port $2"
}

# mh_relay ARGS...: roce_relay on host 1's egress (iptables NFQUEUE in urdmh-h1's
# OUTPUT for UDP 4791): reorders and duplicates what host 1 sends.
MH_RELAY=$BUILD/tools/roce_relay
MH_RELAY_MARK=0x7e1a
mh_relay() {
	local i
	[ -x "$MH_RELAY" ] || die "$MH_RELAY is not built (run make)"
	require_prog iptables
	ip netns exec "$(mh_ns 1)" iptables -t mangle -A OUTPUT -p udp --dport 4791 \
		-m mark ! --mark "$MH_RELAY_MARK" -j NFQUEUE --queue-num 7 ||
		skip "iptables NFQUEUE is not available in this kernel"
	ip netns exec "$(mh_ns 1)" "$MH_RELAY" --queue 7 --mark "$MH_RELAY_MARK" \
		--stats "$MH_TMP/relay.stats" "$@" >"$MH_TMP/relay.log" 2>&1 &
	MH_RELAY_PID=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^ready' "$MH_TMP/relay.log" 2>/dev/null && return 0
		kill -0 "$MH_RELAY_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$MH_TMP/relay.log"
	die "roce_relay did not start"
}

# field FILE WORD: the number after WORD in FILE's last line that has it
# (the relay's counts in $MH_TMP/relay.stats, a probe's result lines)
field() { awk -v w="$2" '{ for (i = 1; i < NF; i++) if ($i == w) v = $(i + 1) } END { print v + 0 }' "$1"; }

# mh_relay_stop: stops the relay (it writes its counts to $MH_TMP/relay.stats).
mh_relay_stop() {
	[ -n "$MH_RELAY_PID" ] || return 0
	ip netns exec "$(mh_ns 1)" iptables -t mangle -F OUTPUT 2>/dev/null
	kill -TERM "$MH_RELAY_PID" 2>/dev/null
	wait_for_exit "$MH_RELAY_PID" 5 || kill -KILL "$MH_RELAY_PID" 2>/dev/null
	wait "$MH_RELAY_PID" 2>/dev/null
	MH_RELAY_PID=
}

# ---- capture ------------------------------------------------------------------

MH_TSHARK_PID=
mh_capture() {
	local i
	case $1 in
	start)
		require_prog tshark dumpcap
		MH_PCAP=$MH_TMP/underlay.pcap
		: >"$MH_TMP/tshark.log"
		# the first MH_CAPTURE_MAX frames: checking a capture costs time in
		# proportion (perftest -a sends hundreds of thousands).  dumpcap
		# (tshark's capture engine, pcapng as tshark writes) is ready in
		# ~0.1 s, tshark itself in ~1 s: it loads every dissector first.
		ip netns exec "$MH_BR" dumpcap -q -i br0 -c "${MH_CAPTURE_MAX:-2000}" -w "$MH_PCAP" \
			-f 'udp port 4791' >"$MH_TMP/tshark.log" 2>&1 &
		MH_TSHARK_PID=$!
		for ((i = 0; i < 100; i++)); do
			grep -q 'Capturing on' "$MH_TMP/tshark.log" && return 0
			kill -0 "$MH_TSHARK_PID" 2>/dev/null || break
			sleep 0.1
		done
		cat "$MH_TMP/tshark.log"
		die "dumpcap did not start capturing"
		;;
	stop)
		[ -n "$MH_TSHARK_PID" ] || return 0
		sleep 0.5
		kill -INT "$MH_TSHARK_PID" 2>/dev/null
		wait_for_exit "$MH_TSHARK_PID" 10 || kill -KILL "$MH_TSHARK_PID" 2>/dev/null
		wait "$MH_TSHARK_PID" 2>/dev/null
		MH_TSHARK_PID=
		[ -z "${MH_KEEP_PCAP:-}" ] || cp "$MH_PCAP" "$MH_KEEP_PCAP"
		;;
	esac
}

# mh_pcap_check FILE: tshark dissects every UDP 4791 frame as RoCE without a
# malformed one (rpcordma off: it calls short SEND payloads malformed); the
# ICRC of every frame is right, by tests/tools/roce_pcapcheck when built and by
# the shared Lua postdissector when it is there (../shared/tools/roce_icrc.lua
# or $UNIRDMA_ICRC_LUA; optional). Prints what it found; 0 when all is well.
MH_MALFORMED='(_ws.malformed || _ws.expert.severity == error)'
MH_PAYLOAD_GUESS='frame.protocols contains "infiniband:ethertype"'
mh_pcap_check() {
	local f=$1 lua n roce bad guess ok wrong rc=0 icrc=()
	lua=${UNIRDMA_ICRC_LUA:-$TOP/../shared/tools/roce_icrc.lua}
	[ -r "$lua" ] && icrc=(-X "lua_script:$lua" -e roce_icrc.ok)
	# One pass of tshark (its start alone takes ~0.5 s) gives every frame's
	# UDP ports, whether it dissected as InfiniBand, its malformed mark and
	# expert severities (error: 8388608), its protocol stack and, with the
	# Lua script, its roce_icrc.ok (the script's ICRC takes ~2 s for 2000
	# full frames). tshark hands an RDMA payload it cannot name to the
	# ethertype table (as if it were IPoIB): a 2-byte RDMA WRITE then "is" a
	# malformed CRTP packet. Those guesses about the payload are counted
	# apart, not failed.
	read -r n roce bad guess ok wrong < <(tshark -r "$f" --disable-protocol rpcordma -T fields -E occurrence=a \
		-e udp.dstport -e infiniband -e _ws.malformed -e _ws.expert.severity -e frame.protocols "${icrc[@]}" 2>/dev/null |
		awk -F'\t' '
			{
				if (("," $1 ",") ~ /,4791,/) n++
				if ($2 != "") roce++
				mal = $3 != "" || ("," $4 ",") ~ /,8388608,/
				if (mal && index($5, "infiniband:ethertype")) guess++
				else if (mal) bad++
				k = split($6, v, ",")
				for (i = 1; i <= k; i++) { if (v[i] == "1") ok++; else if (v[i] == "0") wrong++ }
			}
			END { print n + 0, roce + 0, bad + 0, guess + 0, ok + 0, wrong + 0 }')
	say "  capture: $n UDP 4791 frames, $roce dissected as InfiniBand (RoCEv2), $bad malformed ($guess payloads tshark misread as an ethertype)"
	[ "${n:-0}" -gt 0 ] && [ "$roce" -eq "$n" ] && [ "$bad" -eq 0 ] || rc=1
	if [ "${bad:-0}" -gt 0 ]; then
		tshark -r "$f" --disable-protocol rpcordma -Y "$MH_MALFORMED && !($MH_PAYLOAD_GUESS)" 2>/dev/null |
			head -n 5 | sed 's/^/    /'
	fi
	if [ -x "$BUILD/tools/roce_pcapcheck" ]; then
		"$BUILD/tools/roce_pcapcheck" "$f" >"$f.check" 2>&1 || rc=1
		say "  roce_pcapcheck: $(head -n 1 "$f.check")"
	fi
	if [ ${#icrc[@]} -gt 0 ]; then
		say "  roce_icrc.lua: $ok frames with a right ICRC, $wrong wrong"
		[ "$wrong" -eq 0 ] && [ "$ok" -gt 0 ] || rc=1
	fi
	return "$rc"
}

# ---- kernel-rxe guests --------------------------------------------------------

MH_QEMU=${UNIRDMA_QEMU:-qemu-system-x86_64}
MH_RXE_APPEND="console=ttyS0 quiet panic=-1 tsc=reliable mitigations=off transparent_hugepage=never"
MH_RXE_SEQ=0
declare -A MH_RXE_DIR MH_RXE_PID

mh_rxe_prepare() {
	local out rc
	command -v "$MH_QEMU" >/dev/null || skip "$MH_QEMU is not installed (qemu-system-x86)"
	out=$("$TOP/tests/vm/build-rxe-image.sh" --build "$BUILD" --quiet 2>&1)
	rc=$?
	case $rc in
	0) MH_RXE_IMAGE=$(printf '%s\n' "$out" | tail -n 1) ;;
	77) skip "no rxe guest image: $(printf '%s\n' "$out" | tail -n 1)" ;;
	*) printf '%s\n' "$out"; die "tests/vm/build-rxe-image.sh failed" ;;
	esac
}

# mh_rxe_boot NAME ADDR SCRIPT [TENANT LAN_ADDR ROUTES...]
mh_rxe_boot() {
	local name=$1 addr=$2 script=$3 d n=$((MH_RXE_SEQ++)) lan=() tl
	shift 3
	d=$MH_TMP/rxe-$name
	mkdir -p "$d/root/urd"
	printf '#!/bin/sh\n%s\n' "$script" >"$d/root/urd/run.sh"
	chmod 755 "$d/root/urd/run.sh"
	printf 'UL_ADDR=%s/24\nUL_MTU=%s\n' "$addr" "$MH_MTU" >"$d/root/urd/env"
	ip -n "$MH_BR" tuntap add dev "rxu$n" mode tap || die "tap for guest $name failed"
	ip -n "$MH_BR" link set "rxu$n" mtu "$MH_MTU" master br0 up
	if [ $# -ge 2 ]; then
		tl=urdmh-tl-$1
		[ -e "/run/netns/$tl" ] || die "mh_rxe_boot: no LAN of tenant $1 (mh_tenant_lan first)"
		printf 'LAN_ADDR=%s\nLAN_ROUTES="%s"\n' "$2" "${*:3}" >>"$d/root/urd/env"
		# NIC 2's tap sits on a bridge of its own in $MH_BR, linked to the LAN
		ip -n "$MH_BR" link add "brl$n" up type bridge
		ip -n "$MH_BR" tuntap add dev "rxl$n" mode tap
		ip -n "$MH_BR" link set "rxl$n" master "brl$n" up
		ip -n "$MH_BR" link add "lnk$n" type veth peer name "g$n" netns "$tl"
		ip -n "$MH_BR" link set "lnk$n" master "brl$n" up
		ip -n "$tl" link set "g$n" master br0 up
		lan=(-netdev "tap,id=n1,ifname=rxl$n,script=no,downscript=no"
			-device "virtio-net-pci,netdev=n1,romfile=,mac=52:54:00:78:01:$(printf '%02x' "$n")")
	fi
	(cd "$d/root" && printf 'urd\nurd/run.sh\nurd/env\n' | cpio -o -H newc -R 0:0 --quiet) >"$d/run.cpio"
	cat "$MH_RXE_IMAGE/base.cpio" "$d/run.cpio" >"$d/initrd"
	: >"$d/console"
	MH_RXE_DIR[$name]=$d
	say "+ rxe guest $name at $addr$([ ${#lan[@]} -gt 0 ] && echo ", LAN $2"); its script:"
	sed 's/^/  > /' "$d/root/urd/run.sh" | tail -n +2
	ip netns exec "$MH_BR" "$MH_QEMU" -nodefaults -no-user-config -display none -no-reboot -smp 1 \
		-accel tcg -m 512M -kernel "$MH_RXE_IMAGE/vmlinux" -initrd "$d/initrd" -append "$MH_RXE_APPEND" \
		-netdev "tap,id=n0,ifname=rxu$n,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:78:00:$(printf '%02x' "$n")" \
		"${lan[@]}" -serial "file:$d/console" >"$d/qemu.out" 2>&1 &
	MH_RXE_PID[$name]=$!
	SERVER_PIDS+=("$!")
}

mh_rxe_wait() {
	local name=$1 text=$2 i d=${MH_RXE_DIR[$1]}
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$text" "$d/console" 2>/dev/null && return 0
		kill -0 "${MH_RXE_PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	grep -q -- "$text" "$d/console" 2>/dev/null
}

mh_rxe_finish() {
	local name=$1 d=${MH_RXE_DIR[$1]} p=${MH_RXE_PID[$1]} rc
	if ! wait_for_exit "$p" "$2"; then
		say "guest $name still running after $2 s: killed"
		kill -KILL "$p" 2>/dev/null
	fi
	wait "$p" 2>/dev/null
	say "--- guest $name's console ---"
	tr -d '\r' <"$d/console" | sed 's/^/  | /'
	[ -s "$d/qemu.out" ] && sed 's/^/  qemu| /' "$d/qemu.out"
	rc=$(tr -d '\r' <"$d/console" | sed -n 's/^URD-EXIT \([0-9]*\)$/\1/p' | tail -n 1)
	[ -n "$rc" ] || { say "guest $name never reported its script's exit code"; return 1; }
	return "$rc"
}

# mh_hosts_count K KEY: host K's wire counter KEY summed over its peer hosts
# (unirdma hosts --json)
mh_hosts_count() {
	mh_cli "$1" --json hosts 2>/dev/null | python3 -c 'import json, sys
print(sum(h.get("counters", {}).get(sys.argv[1], 0) for h in json.load(sys.stdin).get("hosts", [])))' "$2" 2>/dev/null ||
		echo 0
}

# mh_wire_report: where every connected QP of every host stands on the wire
# (vrnic show's "wire": PSNs, the send queue, the timers), for a hang.
mh_wire_report() {
	local k v
	for ((k = 1; k <= MH_N; k++)); do
		[ -n "${MH_STATE[$k]:-}" ] || continue
		for v in $(mh_cli "$k" --json vrnic list 2>/dev/null |
			python3 -c 'import json,sys; [print(v["name"]) for v in json.load(sys.stdin).get("vrnics", [])]' 2>/dev/null); do
			mh_cli "$k" --json vrnic show "$v" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
for q in d.get("vrnic", {}).get("qp_list", []):
    w = q.get("wire")
    if w:
        print("  host %s %s qp %#x %s: %s" % (sys.argv[1], sys.argv[2], q["qpn"], q["state"],
              " ".join("%s=%s" % (k, v) for k, v in w.items())))
        c = q.get("counters", {})
        print("    counters: " + " ".join("%s=%s" % (k, v) for k, v in c.items() if not isinstance(v, (dict, list)) and v))' "$k" "$v"
		done
		say "  host $k: unirdma hosts"
		mh_cli "$k" hosts 2>&1 | sed 's/^/    /'
	done
}

# mh_pair [-p PORT | -w ERE | --udp PORT] [--persistent] A VRA SCMD B VRB CCMD:
# run_pair across hosts: the server in a container of VRA on host A, the
# client of VRB on host B.
mh_pair() {
	local port=18515 persistent=0 ready= udp=
	while :; do
		case $1 in
		-p) port=$2; shift 2 ;;
		-w) ready=$2; shift 2 ;;   # ready when the server prints this (ERE), not a TCP port
		--udp) udp=$2; shift 2 ;;  # ready when the server has this UDP port
		--persistent) persistent=1; shift ;;
		*) break ;;
		esac
	done
	local ha=$1 vra=$2 scmd=$3 hb=$4 vrb=$5 ccmd=$6 n=$((PAIR_SEQ++))
	local pidf=$WORK/pair$n.pid spid cpid crc src=0 i init
	PAIR_SERVER_OUT=$WORK/pair$n.server.out
	PAIR_CLIENT_OUT=$WORK/pair$n.client.out

	say "+ server on host $ha in container $vra: $scmd"
	# shellcheck disable=SC2086 # the commands are word lists
	mh_exec_cmd "$ha"
	"${MH_EXEC[@]}" --pidfile "$pidf" "$vra" -- $LINEBUF $scmd >"$PAIR_SERVER_OUT" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 300; i++)); do
		init=$(cat "$pidf" 2>/dev/null)
		if [ -n "$ready" ]; then
			grep -Eq "$ready" "$PAIR_SERVER_OUT" 2>/dev/null && break
		elif [ -n "$udp" ]; then
			[ -n "$init" ] && udp_bound "$init" "$udp" && break
		elif [ -n "$init" ] && listening "$init" "$port"; then
			break
		fi
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"
			say "server exited (code $?) before listening on port $port; its output:"
			sed 's/^/  | /' "$PAIR_SERVER_OUT"
			return 1
		fi
		sleep 0.05
	done
	if [ "$i" -ge 300 ]; then
		say "server did not listen on TCP port $port within 15 s; its output:"
		sed 's/^/  | /' "$PAIR_SERVER_OUT"
		hang_report "$(cat "$pidf" 2>/dev/null)"
		kill -TERM "$spid" 2>/dev/null
		return 1
	fi
	say "+ client on host $hb in container $vrb: $ccmd"
	# shellcheck disable=SC2086
	timeout -k 5 "$((CLIENT_TIMEOUT + 60))" env UNIRDMA_STATE_DIR="${MH_STATE[$hb]}" \
		"$UNIRDMA" exec --pidfile "$pidf.client" "$vrb" -- $LINEBUF $ccmd >"$PAIR_CLIENT_OUT" 2>&1 &
	cpid=$!
	SERVER_PIDS+=("$cpid")
	if ! wait_for_exit "$cpid" "$CLIENT_TIMEOUT"; then
		say "client still running after ${CLIENT_TIMEOUT}s; where the client is:"
		hang_report "$(cat "$pidf.client" 2>/dev/null)"
		say "and the server:"
		hang_report "$(cat "$pidf" 2>/dev/null)"
		mh_wire_report
		kill -TERM "$cpid" 2>/dev/null
		wait "$cpid"
		crc=124
	else
		wait "$cpid"
		crc=$?
	fi
	if [ "$persistent" = 1 ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	elif wait_for_exit "$spid" "$([ "$crc" = 0 ] && echo "$SERVER_TIMEOUT" || echo 3)"; then
		wait "$spid"
		src=$?
	else
		say "server still running; where it is:"
		hang_report "$(cat "$pidf" 2>/dev/null)"
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		src=timeout
	fi
	PAIR_CLIENT_RC=$crc PAIR_SERVER_RC=$src
	say "--- client output (exit code $crc) ---"
	sed 's/^/  | /' "$PAIR_CLIENT_OUT"
	say "--- server output (exit code $src) ---"
	sed 's/^/  | /' "$PAIR_SERVER_OUT"
	[ "$crc" = 0 ] && [ "$src" = 0 ]
}

# mh_daemons_report: the end of each daemon's log (a failed case).
mh_daemons_report() {
	local k
	for ((k = 1; k <= MH_N; k++)); do
		[ -s "${MH_DLOG[$k]:-}" ] || continue
		say "--- end of host $k's unirdmad log ---"
		tail -n 15 "${MH_DLOG[$k]}" | sed 's/^/  | /'
	done
}

mh_stop_daemon() {
	local k=$1 p=${MH_DPID[$1]:-} s=${MH_STATE[$1]:-} m
	if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
		mh_cli "$k" daemon stop >/dev/null 2>&1
		wait_for_exit "$p" 5 || kill -KILL "$p" 2>/dev/null
	fi
	[ -n "$p" ] && wait "$p" 2>/dev/null
	[ -n "$s" ] || return 0
	"$UNIRDMA" --state-dir "$s" net-down >/dev/null 2>&1
	for m in "$s"/vrnics/*/; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	mountpoint -q "$s/vrnics" 2>/dev/null && umount -l "$s/vrnics"
	if [ -s "${MH_DLOG[$k]:-}" ] && grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "${MH_DLOG[$k]}"; then
		say "host $k's unirdmad sanitizer report:"
		grep -A 30 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "${MH_DLOG[$k]}" | head -n 60 | sed 's/^/  | /'
		MH_SAN_FAIL=1
	fi
	rm -rf "$s"
}

mh_cleanup() {
	local rc=$? pid k ns
	trap - EXIT INT TERM
	MH_SAN_FAIL=0
	for pid in "${SERVER_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${SERVER_PIDS[@]}"; do
		wait_for_exit "$pid" 5 || kill -KILL "$pid" 2>/dev/null
	done
	# containers a background subshell started (their --pidfile is in WORK):
	# SIGKILL to a container's init ends the whole container
	for pid in $(cat "${WORK:-/nonexistent}"/*.pid "${WORK:-/nonexistent}"/*.pid.client 2>/dev/null); do
		[ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
	done
	mh_relay_stop
	mh_capture stop
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		mh_daemons_report
		# UNIRDMA_MH_KEEP=DIR: a failed case's captures, logs and consoles are kept there
		if [ -n "${UNIRDMA_MH_KEEP:-}" ] && [ -n "${MH_TMP:-}" ]; then
			local keep=$UNIRDMA_MH_KEEP/$(basename "$0" .sh)-$$
			mkdir -p "$keep" && cp -r "$MH_TMP"/*.pcap "$MH_TMP"/*.log "$MH_TMP"/rxe-* "$keep"/ 2>/dev/null
			cp "$WORK"/*.out "$keep"/ 2>/dev/null
			say "kept the captures and logs in $keep"
		fi
	fi
	for ((k = 1; k <= MH_N; k++)); do
		mh_stop_daemon "$k"
	done
	[ "$MH_SAN_FAIL" = 1 ] && [ "$rc" = 0 ] && rc=1
	[ -n "$MH_ETCD_PID" ] && mh_etcd stop >/dev/null
	# whatever still runs in our namespaces (a guest's QEMU, a UDP sender)
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep '^urdmh-'); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	# removing MH_TMP (its "locked" file) lets the lock holder go: wait
	# (for every child) would otherwise wait for it
	[ -n "${MH_TMP:-}" ] && rm -rf "$MH_TMP"
	wait 2>/dev/null
	exit "$rc"
}

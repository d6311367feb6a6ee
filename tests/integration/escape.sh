#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# escape.sh: a tenant program inside `unirdma exec` tries to get out (issue 9,
# findings 1, 7 and the --pidfile part of 11). Each case runs the attack and
# asserts that nothing outside the container changed.
#
#   filesystem       the host's tree, the daemon's state dir and admin socket,
#                    other vRNICs' regions, /run/netns, host devices: absent or
#                    read-only; mount, umount, new namespaces, BPF, keyrings,
#                    raw sockets, ... refused; no capabilities, no_new_privs,
#                    seccomp; nothing can be planted beside the region
#   tenant_networks  two tenants use the same IP: each client reaches its own
#                    tenant's server N of N times, never the other's; another
#                    tenant's container is unreachable; spoofing fails;
#                    net-down removes every tenant's network
#   pidfile_symlink  a symlink planted at the old predictable temporary name of
#                    --pidfile is not written through
#   inherited_fds    fds 3+ of the caller (a host directory, a file) do not
#                    reach PROGRAM; --keep-fd passes the one named (not a
#                    directory: refused)
#   symlink_paths    --rw/--ro on a path that a tenant made a symlink to a host
#                    secret (at the end or in the middle) is refused; a path
#                    inside a --rw path is refused
#   setuid           PROGRAM (host uid 0) cannot leave a setuid/setgid file in
#                    a --rw directory: chmod, open(O_CREAT), mknod refused
#   net_lock         the network lock is in the state dir (root's), a symlink
#                    planted there is not followed, and a holder that never
#                    lets go makes the CLI give up after 10 s, not hang
#   verbs            verbs traffic still works inside the sandbox
. "$(dirname "$0")/lib.sh"

ESCPROBE=$BUILD/tools/escprobe

# vr0 (t1) X.1, vr1 (t1) X.2, vr4 (t1) X.4; vr2 (t2) X.1 (the same address as
# vr0, in t2's own network), vr3 (t2) X.3.
setup_tenants() {
	require_root
	start_daemon
	local n=$SUBNET
	NET=10.77.$n
	"$UNIRDMA" vrnic create vr0 --tenant t1 --ip "$NET.1/24" >/dev/null || die "vrnic create vr0"
	"$UNIRDMA" vrnic create vr1 --tenant t1 --ip "$NET.2/24" >/dev/null || die "vrnic create vr1"
	"$UNIRDMA" vrnic create vr4 --tenant t1 --ip "$NET.4/24" >/dev/null || die "vrnic create vr4"
	"$UNIRDMA" vrnic create vr2 --tenant t2 --ip "$NET.1/24" >/dev/null || die "vrnic create vr2"
	"$UNIRDMA" vrnic create vr3 --tenant t2 --ip "$NET.3/24" >/dev/null || die "vrnic create vr3"
	VR_A=vr0 VR_B=vr1 IP_A=$NET.1 IP_B=$NET.2
	say "vRNICs: t1: vr0 $NET.1, vr1 $NET.2, vr4 $NET.4; t2: vr2 $NET.1, vr3 $NET.3"
}
CASE_SETUP=setup_tenants

vrnic_dir() { "$UNIRDMA" --json vrnic show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vrnic"]["dir"])'; }

case_filesystem() {
	local dir0 dir2 canary rc f
	[ -x "$ESCPROBE" ] || die "$ESCPROBE is not built"
	dir0=$(vrnic_dir vr0) dir2=$(vrnic_dir vr2)
	canary=$(mktemp -d /tmp/unirdma-canary.XXXXXX)
	echo secret >"$canary/file"
	say "+ escprobe in a container of vr0 (t1); vr2's directory is $dir2"
	in_container vr0 "$ESCPROBE" \
		--absent "$STATE/admin.sock" --absent "$STATE/vrnics" --absent "$dir0" \
		--absent "$dir2/region" --absent /run/netns --absent "$canary/file" \
		--absent /root --absent /home --absent /var --absent /dev/sda --absent /dev/mem \
		--absent /dev/kmsg --absent /dev/net/tun --ro "$TOP" --ro "$BUILD/tools" --ro /etc \
		--ro /usr/bin --ro /dev >"$WORK/probe.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$WORK/probe.out"
	check "escprobe ran to the end and found no way out (exit code $rc)" \
		eval '[ "$rc" = 0 ] && grep -q "^0 escape(s)$" "$WORK/probe.out"'

	say "+ a shell in a container of vr0: what it sees of unirdma, /dev and other regions"
	in_container vr0 bash -c '
		echo "devs=$(ls -A /run/unirdma/dev | tr "\n" " ")"
		echo "vrdir=$(ls -A /run/unirdma/dev/vr0 | tr "\n" " ")"
		echo "dev=$(ls -A /dev | tr "\n" " ")"
		echo "ib=$(ls -A /dev/infiniband | tr "\n" " ") $(stat -c %t:%T /dev/infiniband/uverbs0)"
		touch /run/unirdma/dev/vr0/planted 2>/dev/null && echo "PLANTED beside the region"
		mkdir /run/unirdma/dev/vr2 2>/dev/null && echo "PLANTED a device directory"
		{ exec 9<>/run/unirdma/dev/vr0/region; } 2>/dev/null && echo "own region opens read-write"
		for l in /proc/[0-9]*/fd/* /proc/[0-9]*/map_files/*; do
			t=$(readlink "$l" 2>/dev/null) || continue
			case $t in *"/vr2/region"*|*admin.sock*) echo "REACHABLE via $l -> $t" ;; esac
		done
		ibv_devices | awk "NR > 2 && NF { print \"ibv_devices: \" \$1 }"
		grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\t"
		true' >"$WORK/view.out" 2>&1
	sed 's/^/  | /' "$WORK/view.out"
	check "only its own vRNIC in /run/unirdma/dev" grep -qx "devs=vr0 " "$WORK/view.out"
	check "only the region file in its directory" grep -qx "vrdir=region " "$WORK/view.out"
	check "the region opens read-write (the library needs it)" grep -q "own region opens read-write" "$WORK/view.out"
	check "nothing can be planted beside it" bash -c "! grep -q PLANTED '$WORK/view.out' && [ ! -e '$dir0/planted' ]"
	check "no other region or the admin socket through /proc" bash -c "! grep -q REACHABLE '$WORK/view.out'"
	check "/dev holds only the minimal nodes" \
		grep -qx "dev=fd full infiniband null ptmx pts random shm stderr stdin stdout tty urandom zero " "$WORK/view.out"
	check "/dev/infiniband: uverbs0 alone, a null node (1:3) for tools that look for one" \
		grep -qx "ib=uverbs0  1:3" "$WORK/view.out"
	check "/proc/self/status: every capability set empty" \
		bash -c "[ \"\$(grep -cE '^Cap(Inh|Prm|Eff|Bnd|Amb):0{16}$' '$WORK/view.out')\" = 5 ]"
	check "/proc/self/status: NoNewPrivs 1, Seccomp 2 (filter)" \
		bash -c "grep -qx 'NoNewPrivs:1' '$WORK/view.out' && grep -qx 'Seccomp:2' '$WORK/view.out'"
	check "verbs see exactly vr0" bash -c "[ \"\$(grep -c '^ibv_devices:' '$WORK/view.out')\" = 1 ] && grep -qx 'ibv_devices: vr0' '$WORK/view.out'"

	# what the attempts would have left on the host
	for f in /escprobe /etc/escprobe /usr/escprobe "$dir0/planted"; do
		check "no $f on the host" test ! -e "$f"
	done
	check "no escprobe.* files in the exposed trees" \
		bash -c "[ -z \"\$(find '$TOP' '$BUILD/tools' /usr/bin /etc -maxdepth 1 -name 'escprobe.*' 2>/dev/null)\" ]"
	check "the daemon's directory of vr0 holds only the region" test "$(ls -A "$dir0")" = region
	rm -rf "$canary"
	checks_result
}

# A TCP server that answers every connection with its tag, until stopped.
write_net_scripts() {
	cat >"$WORK/tag_srv.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[2]))); s.listen(16)
while True:
    c, a = s.accept()
    c.sendall(sys.argv[1].encode()); c.close()
PY
	# dial IP PORT N times; print what answered each time
	cat >"$WORK/tag_cli.py" <<'PY'
import socket, sys
for i in range(int(sys.argv[3])):
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
        print("answer %s" % c.recv(64).decode()); c.close()
    except OSError as e:
        print("unreachable %s" % e)
PY
}

# start_tag_server VRNIC TAG: in the background; waits until it listens.
start_tag_server() {
	local vr=$1 tag=$2 pidf=$WORK/srv.$1.pid pid i init
	"$UNIRDMA" exec --pidfile "$pidf" "$vr" -- python3 "$WORK/tag_srv.py" "$tag" 18600 \
		>"$WORK/srv.$vr.out" 2>&1 &
	pid=$!
	SERVER_PIDS+=("$pid")
	for ((i = 0; i < 200; i++)); do
		init=$(cat "$pidf" 2>/dev/null)
		[ -n "$init" ] && listening "$init" 18600 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	sed 's/^/  | /' "$WORK/srv.$vr.out"
	die "the server in $vr did not listen"
}

case_tenant_networks() {
	local n=10 out ns_prefix
	write_net_scripts
	start_tag_server vr0 t1-vr0
	start_tag_server vr2 t2-vr2
	start_tag_server vr4 t1-vr4

	say "+ t1's client (vr1) dials $NET.1 $n times"
	in_container vr1 python3 "$WORK/tag_cli.py" "$NET.1" 18600 "$n" >"$WORK/c1.out" 2>&1
	sed 's/^/  | /' "$WORK/c1.out"
	check "t1 reached t1's server $n of $n times" test "$(grep -c '^answer t1-vr0$' "$WORK/c1.out")" = "$n"
	say "+ t2's client (vr3) dials $NET.1 $n times"
	in_container vr3 python3 "$WORK/tag_cli.py" "$NET.1" 18600 "$n" >"$WORK/c2.out" 2>&1
	sed 's/^/  | /' "$WORK/c2.out"
	check "t2 reached t2's server $n of $n times" test "$(grep -c '^answer t2-vr2$' "$WORK/c2.out")" = "$n"

	say "+ t2's client (vr3) dials t1's vr4 ($NET.4), directly and after trying to take that address"
	in_container vr3 bash -c '
		python3 "$1" "$2" 18600 2
		ip addr add "$2/24" dev eth0 2>/dev/null && echo "SPOOF: took $2"
		ip link set dev eth0 address 02:00:00:00:00:04 2>/dev/null && echo "SPOOF: changed the MAC"
		ip link add dummy0 type dummy 2>/dev/null && echo "SPOOF: made a link"
		python3 "$1" "$2" 18600 1' _ "$WORK/tag_cli.py" "$NET.4" >"$WORK/c3.out" 2>&1
	sed 's/^/  | /' "$WORK/c3.out"
	check "another tenant's container is unreachable" bash -c "! grep -q '^answer' '$WORK/c3.out' && [ \"\$(grep -c '^unreachable' '$WORK/c3.out')\" = 3 ]"
	check "address, MAC and link changes are refused" bash -c "! grep -q SPOOF '$WORK/c3.out'"
	say "+ t1's client (vr1) dials vr4 ($NET.4): same tenant, reachable"
	in_container vr1 python3 "$WORK/tag_cli.py" "$NET.4" 18600 2 >"$WORK/c4.out" 2>&1
	sed 's/^/  | /' "$WORK/c4.out"
	check "t1 reaches t1's vr4" test "$(grep -c '^answer t1-vr4$' "$WORK/c4.out")" = 2

	ns_prefix=$(bridge_ns "$STATE" t1)
	ns_prefix=${ns_prefix%-*} # unirdma-<hash of the state dir>
	say "  bridge namespaces: $(ip netns list | awk -v p="$ns_prefix" 'index($1, p) == 1 { printf "%s ", $1 }')"
	check "one bridge namespace per tenant" eval 'ip netns list | grep -q "^$(bridge_ns "$STATE" t1)\b" && ip netns list | grep -q "^$(bridge_ns "$STATE" t2)\b"'
	for pid in "${SERVER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	SERVER_PIDS=()
	check "net-down" expect_net_down
	check "net-down removed every tenant's network" \
		eval '! ip netns list | grep -q "^$ns_prefix"'
	checks_result
}

expect_net_down() {
	"$UNIRDMA" net-down >"$WORK/netdown.out" 2>&1
	local rc=$?
	sed 's/^/    | /' "$WORK/netdown.out"
	[ "$rc" = 0 ] && [ "$(grep -c '^removed network namespace' "$WORK/netdown.out")" = 2 ]
}

case_pidfile_symlink() {
	local pidf=$WORK/run/exec.pid target=$WORK/victim-file rc
	mkdir -p "$WORK/run"
	# The CLI is the bash below after its exec, so $$ is the PID in the old
	# predictable temporary name "$pidf.tmp<PID>".
	bash -c 'ln -s "$2" "$1.tmp$$" && exec "$3" exec --pidfile "$1" vr0 -- sleep 0.5' \
		_ "$pidf" "$target" "$UNIRDMA" >"$WORK/pidf.out" 2>&1 &
	local pid=$! i ok=0
	for ((i = 0; i < 100; i++)); do
		[ -s "$pidf" ] && { ok=1; break; }
		sleep 0.02
	done
	say "  while it ran: $(ls -l "$WORK/run" | tail -n +2 | tr '\n' ';')"
	check "the pid file was written (a regular file)" eval '[ "$ok" = 1 ] && [ -f "$pidf" ] && [ ! -L "$pidf" ]'
	wait "$pid"
	rc=$?
	sed 's/^/  | /' "$WORK/pidf.out"
	check "the container ran (exit code $rc)" test "$rc" = 0
	check "nothing was written through the planted symlink" test ! -e "$target"
	check "the pid file is removed afterwards" test ! -e "$pidf"
	checks_result
}

# Issue 9 finding 1 (review round two): the caller's fds 7 (the state dir)
# and 9 (an ordinary file) must not reach PROGRAM.
case_inherited_fds() {
	echo canary >"$WORK/fd9-file"
	say "+ exec with fd 7 on $STATE and fd 9 on a file: PROGRAM lists its fds and writes through fd 7"
	(
		exec 7<"$STATE" 9<"$WORK/fd9-file"
		in_container vr0 bash -c '
			echo "fds=$(ls /proc/$$/fd | sort -n | tr "\n" " ")"
			ls /proc/self/fd/7/ 2>/dev/null | sed "s/^/SEEN in fd 7: /"
			cat /proc/self/fd/9 2>/dev/null | sed "s/^/READ fd 9: /"
			{ echo hi >/proc/self/fd/7/planted; } 2>/dev/null && echo "PLANTED through fd 7"
			true'
	) >"$WORK/fds.out" 2>&1
	sed 's/^/  | /' "$WORK/fds.out"
	check "PROGRAM has neither fd 7 nor fd 9" \
		bash -c "grep -q '^fds=' '$WORK/fds.out' && ! grep -qE '^fds=.*\\b(7|9)\\b' '$WORK/fds.out'"
	check "nothing seen, read or planted through them" bash -c "! grep -qE '^(SEEN|READ|PLANTED)' '$WORK/fds.out'"
	check "no planted file in the state dir" test ! -e "$STATE/planted"
	say "+ the same with --keep-fd 9: PROGRAM reads fd 9, still has no fd 7"
	(
		exec 7<"$STATE" 9<"$WORK/fd9-file"
		"$UNIRDMA" exec --keep-fd 9 vr0 -- bash -c '
			echo "fds=$(ls /proc/$$/fd | sort -n | tr "\n" " ")"
			cat <&9 | sed "s/^/READ fd 9: /"
			true'
	) >"$WORK/keep.out" 2>&1
	sed 's/^/  | /' "$WORK/keep.out"
	check "fd 9 passed and read" grep -q '^READ fd 9: canary' "$WORK/keep.out"
	check "fd 7 still closed" bash -c "grep -q '^fds=' '$WORK/keep.out' && ! grep -qE '^fds=.*\\b7\\b' '$WORK/keep.out'"
	say "+ --keep-fd 7 (a directory) is refused before PROGRAM runs"
	(
		exec 7<"$STATE"
		"$UNIRDMA" exec --keep-fd 7 vr0 -- echo RAN
	) >"$WORK/keepdir.out" 2>&1
	sed 's/^/  | /' "$WORK/keepdir.out"
	check "a directory fd is refused" bash -c "grep -q 'directory' '$WORK/keepdir.out' && ! grep -q RAN '$WORK/keepdir.out'"
	checks_result
}

# expect_refused NAME ARGS...: unirdma exec ARGS must fail before PROGRAM runs
# and must not show the secret.
expect_refused() {
	local name=$1 rc
	shift
	"$UNIRDMA" exec "$@" >"$WORK/$name.out" 2>&1
	rc=$?
	sed 's/^/    | /' "$WORK/$name.out"
	[ "$rc" != 0 ] && ! grep -q topsecret "$WORK/$name.out" && ! grep -q RAN "$WORK/$name.out"
}

case_symlink_paths() {
	local secret t=$WORK/t1
	secret=$(mktemp -d /tmp/unirdma-secret.XXXXXX)
	chmod 700 "$secret"
	echo topsecret >"$secret/file"
	mkdir -p "$t/real"
	# what a tenant with --rw $WORK plants for the operator's next command
	ln -s "$secret" "$t/out"
	ln -s "$secret" "$t/mid"
	say "+ $t/out and $t/mid -> $secret (root-only); the operator exposes them"
	check "--rw on a planted symlink is refused" \
		expect_refused rw_link --rw "$t/out" vr0 -- sh -c "echo RAN; cat '$secret/file' '$t/out/file'"
	check "--ro on a planted symlink is refused" \
		expect_refused ro_link --ro "$t/out" vr0 -- sh -c "echo RAN; cat '$secret/file' '$t/out/file'"
	check "--ro through a symlink in the middle is refused" \
		expect_refused mid_link --ro "$t/mid/file" vr0 -- sh -c "echo RAN; cat '$secret/file'"
	check "--ro inside the --rw $WORK is refused" \
		expect_refused nested --ro "$t/real" vr0 -- sh -c "echo RAN"
	check "--rw inside the --rw $WORK is refused" \
		expect_refused nested_rw --rw "$t/real" vr0 -- sh -c "echo RAN"
	check "a real --rw path still works" \
		bash -c "UNIRDMA_EXEC_RW= '$UNIRDMA' exec --rw '$t/real' vr0 -- sh -c 'echo ok >\"$t/real/f\"' && grep -qx ok '$t/real/f'"
	rm -rf "$secret"
	checks_result
}

# The state directory is hidden by a mount placed by path. Inside a --rw
# path the tenant could rename it aside and put a decoy in its place first,
# so a --rw path that holds it (or /run/netns) is refused.
case_rw_holds_state() {
	local holder pid i ok=0
	holder=$(mktemp -d /tmp/unirdma-holder.XXXXXX)
	"$UNIRDMAD" --state-dir "$holder/state" --foreground --metrics 127.0.0.1:0 >"$WORK/d2.log" 2>&1 &
	pid=$!
	SERVER_PIDS+=("$pid")
	for ((i = 0; i < 250; i++)); do
		"$UNIRDMA" --state-dir "$holder/state" daemon ping >/dev/null 2>&1 && { ok=1; break; }
		sleep 0.02
	done
	check "a second daemon with its state in $holder/state" test "$ok" = 1
	"$UNIRDMA" --state-dir "$holder/state" vrnic create hv --tenant th --ip 10.91.$SUBNET.1/24 >/dev/null
	check "--rw on the directory that holds the state directory is refused" \
		bash -c "UNIRDMA_EXEC_RW= UNIRDMA_STATE_DIR='$holder/state' '$UNIRDMA' exec --rw '$holder' hv -- sh -c 'echo RAN' >'$WORK/holder.out' 2>&1; rc=\$?; sed 's/^/    | /' '$WORK/holder.out'; [ \$rc != 0 ] && ! grep -q RAN '$WORK/holder.out' && grep -q 'state directory' '$WORK/holder.out'"
	check "--rw on a sibling of it still works" \
		bash -c "mkdir -p '$holder/data' && UNIRDMA_EXEC_RW= UNIRDMA_STATE_DIR='$holder/state' '$UNIRDMA' exec --rw '$holder/data' hv -- sh -c 'echo ok >$holder/data/f' && grep -qx ok '$holder/data/f'"
	"$UNIRDMA" --state-dir "$holder/state" daemon stop >/dev/null 2>&1
	wait_for_exit "$pid" 5 || kill -KILL "$pid" 2>/dev/null
	"$UNIRDMA" --state-dir "$holder/state" net-down >/dev/null 2>&1
	for m in "$holder"/state/vrnics/*/ "$holder/state/vrnics"; do
		mountpoint -q "$m" 2>/dev/null && umount -l "$m"
	done
	rm -rf "$holder"
	checks_result
}

# Issue 9 finding 1 (setuid): PROGRAM is host uid 0; a setuid-root file it
# leaves in a --rw directory would be a root shell for any host user.
case_setuid() {
	local d=$WORK/suid
	mkdir -p "$d"
	say "+ PROGRAM tries to leave setuid/setgid files in $d"
	in_container vr0 python3 -c '
import os, shutil, stat, sys
d = sys.argv[1]
shutil.copy("/bin/sh", d + "/rootsh")
def t(what, f):
    try:
        f(); print("DONE " + what)
    except OSError as e:
        print("refused %s: %s" % (what, e.strerror))
t("chmod 4755", lambda: os.chmod(d + "/rootsh", 0o4755))
t("chmod 2755", lambda: os.chmod(d + "/rootsh", 0o2755))
t("fchmod 4755", lambda: os.fchmod(os.open(d + "/rootsh", os.O_RDONLY), 0o4755))
t("open(O_CREAT, 04755)", lambda: os.close(os.open(d + "/created", os.O_CREAT | os.O_WRONLY, 0o4755)))
t("mknod S_IFREG|02755", lambda: os.mknod(d + "/node", stat.S_IFREG | 0o2755))
t("chmod 0755", lambda: os.chmod(d + "/rootsh", 0o755))
' "$d" >"$WORK/suid.out" 2>&1
	sed 's/^/  | /' "$WORK/suid.out"
	say "  on the host: $(ls -l "$d" | tail -n +2 | tr '\n' ';')"
	check "setuid/setgid modes were refused (5 of 5)" \
		bash -c "[ \"\$(grep -c '^refused' '$WORK/suid.out')\" = 5 ] && ! grep -q '^DONE ch.*[24]755\|^DONE open\|^DONE mknod\|^DONE fchmod' '$WORK/suid.out'"
	check "an ordinary chmod still works" grep -qx "DONE chmod 0755" "$WORK/suid.out"
	check "no setuid/setgid file on the host" test -z "$(find "$d" -perm /6000)"
	checks_result
}

case_net_lock() {
	local lock=$STATE/net.lock holder rc t0 t1
	say "+ another process holds $lock; net-down must give up, not hang"
	: >"$lock"
	flock "$lock" sleep 30 &
	holder=$!
	sleep 0.3
	# a shorter wait than the default 10 s, set in the environment
	t0=$(date +%s%N)
	UNIRDMA_NET_LOCK_TIMEOUT_MS=1500 "$UNIRDMA" net-down >"$WORK/lock.out" 2>&1
	rc=$?
	t1=$(date +%s%N)
	sed 's/^/  | /' "$WORK/lock.out"
	check "UNIRDMA_NET_LOCK_TIMEOUT_MS=1500: it gave up after 1.5 s (exit code $rc, $(((t1 - t0) / 1000000)) ms)" \
		bash -c "[ '$rc' != 0 ] && grep -q 'after 1500 ms, giving up' '$WORK/lock.out' && [ $(((t1 - t0) / 1000000)) -ge 1450 ] && [ $(((t1 - t0) / 1000000)) -le 9000 ]"
	# flock's child (sleep) holds the lock too
	pkill -KILL -P "$holder" 2>/dev/null
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	UNIRDMA_NET_LOCK_TIMEOUT_MS=0x5 "$UNIRDMA" net-down >"$WORK/lock.out" 2>&1
	check "a bad UNIRDMA_NET_LOCK_TIMEOUT_MS is said (the default is used)" grep -q 'is not 1..600000' "$WORK/lock.out"
	say "+ a symlink at $lock is not followed"
	rm -f "$lock"
	ln -s "$WORK/lock-victim" "$lock"
	"$UNIRDMA" net-down >"$WORK/lock2.out" 2>&1
	sed 's/^/  | /' "$WORK/lock2.out"
	check "nothing was created through it" test ! -e "$WORK/lock-victim"
	rm -f "$lock"
	check "net-down works once the lock is free" "$UNIRDMA" net-down
	checks_result
}

case_verbs() {
	run_pair "ibv_rc_pingpong -g 0 -n 200" "ibv_rc_pingpong -g 0 -n 200 $IP_A"
}

add_case filesystem case_filesystem
add_case tenant_networks case_tenant_networks
add_case pidfile_symlink case_pidfile_symlink
add_case inherited_fds case_inherited_fds
add_case symlink_paths case_symlink_paths
add_case rw_holds_state case_rw_holds_state
add_case setuid case_setuid
add_case net_lock case_net_lock
add_case verbs case_verbs
run_cases "$@"

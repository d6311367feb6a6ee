# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
# vmlib.sh: QEMU guests for the integration tests (sourced after
# tests/integration/lib.sh; used by tests/integration/vm.sh).
#
# A guest boots Debian's kernel with the initramfs of tests/vm/build-image.sh
# under TCG, one vCPU, and runs a shell script given by the test as
# /urd/run.sh; its console is a file.  QEMU runs in a container of the VM's
# vRNIC (`unirdma exec VRNIC -- qemu-system-x86_64 $(unirdma vm-args
# --container VRNIC) ...`), so that QEMU's user networking (slirp) lives in
# that container's network namespace: the guest (10.0.2.15) reaches the
# containers' bridge through NAT as the vRNIC's address, and TCP port 18515
# of the vRNIC's address is forwarded to the guest (hostfwd).  Nothing
# touches the host's network.
#
#   vm_prepare                 install/build what guests need, or skip
#   vm_boot NAME VRNIC SCRIPT  boot a guest in the background
#   vm_wait NAME TEXT SECONDS  wait for a console line containing TEXT
#   vm_finish NAME SECONDS     wait for the guest to power off; print its
#                              console; return the code of /urd/run.sh
#   vm_kill NAME               SIGKILL the guest's QEMU
#   vm_serves                  a guest's server, a container's client
#   vm_serves_each             several servers in one guest, a container's
#                              client for each
#   container_serves_each      a container's servers, one guest's clients

VM_QEMU=${UNIRDMA_QEMU:-qemu-system-x86_64}
VM_APPEND="console=ttyS0 quiet panic=-1 tsc=reliable mitigations=off transparent_hugepage=never"
declare -A VM_DIR VM_PID

vm_prepare() {
	local need=() p out rc
	require_root
	command -v "$VM_QEMU" >/dev/null || need+=(qemu-system-x86)
	command -v busybox >/dev/null || need+=(busybox-static)
	command -v cpio >/dev/null || need+=(cpio)
	if [ ${#need[@]} -gt 0 ]; then
		say "missing ${need[*]}: running scripts/install-deps.sh"
		"$TOP/scripts/install-deps.sh" 2>&1 | tail -n 3 | sed 's/^/  | /'
		hash -r
	fi
	command -v "$VM_QEMU" >/dev/null || skip "$VM_QEMU is not installed and scripts/install-deps.sh could not install qemu-system-x86"
	command -v busybox >/dev/null || skip "busybox is not installed and scripts/install-deps.sh could not install busybox-static"
	command -v cpio >/dev/null || skip "cpio is not installed and scripts/install-deps.sh could not install it"
	[ -x "$BUILD/vm/urd_vmtool" ] || die "$BUILD/vm/urd_vmtool is not built (run make)"
	out=$("$TOP/tests/vm/build-image.sh" --build "$BUILD" --quiet 2>&1)
	rc=$?
	case $rc in
	0) VM_IMAGE=$(printf '%s\n' "$out" | tail -n 1) ;;
	77) skip "no guest image: $(printf '%s\n' "$out" | tail -n 1)" ;;
	*) printf '%s\n' "$out"; die "tests/vm/build-image.sh failed" ;;
	esac
	VM_KERNEL=$VM_IMAGE/vmlinux
	[ -s "$VM_KERNEL" ] || VM_KERNEL=$VM_IMAGE/vmlinuz
}

# vm_boot NAME VRNIC SCRIPT: boots guest NAME with SCRIPT as /urd/run.sh.
vm_boot() {
	local name=$1 vr=$2 script=$3 d args
	d=$WORK/vm-$name
	rm -rf "$d"
	mkdir -p "$d/root/urd"
	printf '%s\n' "$script" >"$d/root/urd/run.sh"
	(cd "$d/root" && printf 'urd\nurd/run.sh\n' | cpio -o -H newc -R 0:0 --quiet) >"$d/run.cpio"
	cat "$VM_IMAGE/base.cpio" "$d/run.cpio" >"$d/initrd"
	: >"$d/console"
	args=$("$UNIRDMA" vm-args --container "$vr") || die "unirdma vm-args $vr failed"
	VM_DIR[$name]=$d
	say "+ guest $name on vRNIC $vr boots; its /urd/run.sh:"
	sed 's/^/  > /' "$d/root/urd/run.sh"
	# shellcheck disable=SC2086 # args is a word list (vm-args prints shell-safe words)
	"$UNIRDMA" exec --pidfile "$d/init.pid" "$vr" -- env -u LD_LIBRARY_PATH -u LD_PRELOAD \
		"$VM_QEMU" $args -nodefaults -no-user-config -display none -no-reboot -smp 1 -accel tcg \
		-kernel "$VM_KERNEL" -initrd "$d/initrd" -append "$VM_APPEND" \
		-netdev user,id=n0,hostfwd=tcp::18515-:18515 -device e1000,netdev=n0,romfile= \
		-serial "file:$d/console" >"$d/qemu.out" 2>&1 &
	VM_PID[$name]=$!
	SERVER_PIDS+=("$!")
}

# vm_wait NAME TEXT SECONDS: 0 once the console has a line with TEXT.
vm_wait() {
	local name=$1 text=$2 i d=${VM_DIR[$1]}
	for ((i = 0; i < $3 * 10; i++)); do
		grep -qF -- "$text" "$d/console" 2>/dev/null && return 0
		if ! kill -0 "${VM_PID[$name]}" 2>/dev/null; then
			grep -qF -- "$text" "$d/console" 2>/dev/null && return 0
			say "guest $name ended before printing '$text'"
			return 1
		fi
		sleep 0.1
	done
	say "guest $name did not print '$text' within $3 s"
	return 1
}

# vm_finish NAME SECONDS: waits for the guest to power off (at most SECONDS,
# then kills it); prints the console; returns what /urd/run.sh returned.
vm_finish() {
	local name=$1 d=${VM_DIR[$1]} rc qrc
	if wait_for_exit "${VM_PID[$name]}" "$2"; then
		wait "${VM_PID[$name]}"
		qrc=$?
	else
		say "guest $name still runs after $2 s: killed"
		vm_kill "$name"
		wait "${VM_PID[$name]}" 2>/dev/null
		qrc=timeout
	fi
	say "--- console of guest $name (QEMU exit code $qrc) ---"
	grep -v '^\[ *[0-9.]*\] reboot: Power down' "$d/console" | sed 's/^/  | /'
	[ -s "$d/qemu.out" ] && sed 's/^/  qemu| /' "$d/qemu.out"
	rc=$(sed -n 's/^URD-EXIT \([0-9]*\).*/\1/p' "$d/console" | tail -n 1)
	[ -n "$rc" ] || { say "guest $name did not finish /urd/run.sh"; return 1; }
	return "$rc"
}

# vm_qemu_pid NAME: QEMU's PID (the child of the container's init).
vm_qemu_pid() {
	local init
	init=$(cat "${VM_DIR[$1]}/init.pid" 2>/dev/null) || return 1
	awk '{ print $1 }' "/proc/$init/task/$init/children" 2>/dev/null
}

vm_kill() {
	local q
	q=$(vm_qemu_pid "$1")
	[ -n "$q" ] && kill -KILL "$q" 2>/dev/null
	[ -n "$q" ]
}

# vm_serves VM_VRNIC "GUEST SERVER" C_VRNIC "CONTAINER CLIENT": the server
# in a guest (it must listen on TCP 18515), the client in a container.
# Outputs in $WORK/vm-s/console and $PAIR_CLIENT_OUT.
vm_serves() {
	local vr=$1 scmd=$2 cvr=$3 ccmd=$4 crc src
	PAIR_CLIENT_OUT=$WORK/client.out
	vm_boot s "$vr" ". /etc/urd-lib.sh
urd_serve 18515 $scmd"
	if ! vm_wait s URD-LISTENING 100; then
		vm_finish s 5
		return 1
	fi
	say "+ client in container $cvr: $ccmd"
	# shellcheck disable=SC2086
	timeout -k 5 "$CLIENT_TIMEOUT" "$UNIRDMA" exec "$cvr" -- $LINEBUF $ccmd >"$PAIR_CLIENT_OUT" 2>&1 &
	SERVER_PIDS+=("$!")
	wait "$!"
	crc=$?
	say "--- client output (exit code $crc) ---"
	sed 's/^/  | /' "$PAIR_CLIENT_OUT"
	vm_finish s "$([ "$crc" = 0 ] && echo "$SERVER_TIMEOUT" || echo 5)"
	src=$?
	[ "$crc" = 0 ] || { say "the client in the container failed ($crc)"; return 1; }
	[ "$src" = 0 ] || { say "the server in the guest failed ($src)"; return 1; }
	return 0
}

# vm_serves_each VM_VRNIC C_VRNIC "GUEST SERVER" "CONTAINER CLIENT" ...:
# one guest on VM_VRNIC runs each pair's server in turn (TCP 18515), and for
# each, a container of C_VRNIC runs the client against it: several programs
# on one boot (a boot is ~4 s of TCG).  Pair K's client output is
# $WORK/client$K.out, its server's console lines `vm_part s K`.  When
# VM_EACH_HOOK names a function, it is called as HOOK K after pair K.  A
# failed pair ends the guest and the run there: its server may be waiting.
vm_serves_each() {
	local vr=$1 cvr=$2 script n=0 k crc r
	shift 2
	[ $(($# % 2)) = 0 ] || die "vm_serves_each: pairs of server and client"
	script=". /etc/urd-lib.sh"$'\n'"rc=0"$'\n'
	for ((k = 1; k <= $#; k += 2)); do
		script+="echo URD-BEGIN $n; urd_serve 18515 ${!k}; r=\$?; echo \"URD-SERVER-EXIT $n \$r\"; [ \$r -eq 0 ] || rc=\$r"$'\n'
		n=$((n + 1))
	done
	script+='exit $rc'
	vm_boot s "$vr" "$script"
	for ((k = 0; k < n; k++)); do
		# the guest boots before its first server: 100 s; 60 s for the others
		if ! vm_wait_count s URD-LISTENING $((k + 1)) "$([ $k = 0 ] && echo 100 || echo 60)"; then
			vm_finish s 5
			return 1
		fi
		local c=$((2 * k + 2))
		PAIR_CLIENT_OUT=$WORK/client$k.out
		say "+ client $k in container $cvr: ${!c}"
		# shellcheck disable=SC2086
		timeout -k 5 "$CLIENT_TIMEOUT" "$UNIRDMA" exec "$cvr" -- $LINEBUF ${!c} >"$PAIR_CLIENT_OUT" 2>&1 &
		SERVER_PIDS+=("$!")
		wait "$!"
		crc=$?
		say "--- client $k's output (exit code $crc) ---"
		sed 's/^/  | /' "$PAIR_CLIENT_OUT"
		r=$(vm_exit_code s SERVER "$k" "$([ "$crc" = 0 ] && echo "$SERVER_TIMEOUT" || echo 5)")
		if [ "$crc" != 0 ] || [ "${r:-x}" != 0 ]; then
			say "pair $k failed: the container's client $crc, the guest's server ${r:-did not end}"
			vm_finish s 5
			return 1
		fi
		[ -z "${VM_EACH_HOOK:-}" ] || "$VM_EACH_HOOK" "$k"
	done
	vm_finish s "$SERVER_TIMEOUT"
}

# container_serves_each C_VRNIC VM_VRNIC "CONTAINER SERVER" "GUEST CLIENT" ...:
# the other way round: one container of C_VRNIC runs every pair's server at
# once, pair K's on TCP port 18515+K (-p), and one guest on VM_VRNIC, booted
# once, runs the clients in turn.  (The servers could not take turns on one
# port: a guest client that reached the port before its server listened
# hung in connect through QEMU's user networking.)  Pair K's server output
# is $WORK/server$K.out, its client's console lines `vm_part c K`;
# VM_EACH_HOOK as vm_serves_each's.
container_serves_each() {
	local cvr=$1 vr=$2 script=rc=0$'\n' servers=() n=0 k c spid init i crc src=0
	shift 2
	[ $(($# % 2)) = 0 ] || die "container_serves_each: pairs of server and client"
	for ((k = 1; k <= $#; k += 2)); do
		c=$((k + 1))
		servers+=("${!k} -p $((18515 + n))")
		script+="echo URD-BEGIN $n; ${!c} -p $((18515 + n)); r=\$?; echo \"URD-CLIENT-EXIT $n \$r\"; [ \$r -eq 0 ] || rc=\$r"$'\n'
		n=$((n + 1))
	done
	script+='exit $rc'
	say "+ servers in container $cvr: $(printf '[%s] ' "${servers[@]}")"
	rm -f "$WORK"/server*.out "$WORK"/server*.rc "$WORK/servers.pid"
	# shellcheck disable=SC2016 # the container's shell expands it
	"$UNIRDMA" exec --pidfile "$WORK/servers.pid" "$cvr" -- sh -c '
		w=$1; shift; k=0
		for c in "$@"; do
			(stdbuf -oL -eL $c >"$w/server$k.out" 2>&1; echo $? >"$w/server$k.rc") &
			k=$((k + 1))
		done
		wait' sh "$WORK" "${servers[@]}" &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((k = 0; k < n; k++)); do
		for ((i = 0; i < 300; i++)); do
			init=$(cat "$WORK/servers.pid" 2>/dev/null)
			[ -n "$init" ] && listening "$init" $((18515 + k)) && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.05
		done
	done
	vm_boot c "$vr" "$script"
	for ((k = 0; k < n; k++)); do
		crc=$(vm_exit_code c CLIENT "$k" "$([ "$k" = 0 ] && echo "$CLIENT_TIMEOUT" || echo 60)")
		for ((i = 0; i < 100; i++)); do
			[ -s "$WORK/server$k.rc" ] && break
			sleep 0.1
		done
		say "--- server $k's output (exit code $(cat "$WORK/server$k.rc" 2>/dev/null)) ---"
		sed 's/^/  | /' "$WORK/server$k.out" 2>/dev/null
		if [ "${crc:-x}" != 0 ] || [ "$(cat "$WORK/server$k.rc" 2>/dev/null)" != 0 ]; then
			say "pair $k failed: the guest's client ${crc:-did not end}, the container's server $(cat "$WORK/server$k.rc" 2>/dev/null || echo "did not end")"
			src=1
			break
		fi
		[ -z "${VM_EACH_HOOK:-}" ] || "$VM_EACH_HOOK" "$k"
	done
	if [ "$src" != 0 ]; then
		vm_finish c 5
		kill -KILL "$(cat "$WORK/servers.pid" 2>/dev/null)" 2>/dev/null
		wait "$spid" 2>/dev/null
		return 1
	fi
	wait_for_exit "$spid" 10 || kill -KILL "$(cat "$WORK/servers.pid" 2>/dev/null)" 2>/dev/null
	wait "$spid" 2>/dev/null
	vm_finish c "$SERVER_TIMEOUT"
}

# vm_wait_count NAME TEXT N SECONDS: 0 once N console lines contain TEXT.
vm_wait_count() {
	local name=$1 text=$2 want=$3 i d=${VM_DIR[$1]}
	for ((i = 0; i < $4 * 10; i++)); do
		[ "$(grep -cF -- "$text" "$d/console" 2>/dev/null)" -ge "$want" ] && return 0
		if ! kill -0 "${VM_PID[$name]}" 2>/dev/null; then
			[ "$(grep -cF -- "$text" "$d/console" 2>/dev/null)" -ge "$want" ] && return 0
			say "guest $name ended before printing '$text' $want times"
			return 1
		fi
		sleep 0.1
	done
	say "guest $name did not print '$text' $want times within $4 s"
	return 1
}

# vm_exit_code NAME SERVER|CLIENT K SECONDS: the exit code the guest's
# console gives for the *_serves_each program K (URD-<WHAT>-EXIT K CODE),
# waiting SECONDS for it; nothing when it does not come.
vm_exit_code() {
	vm_wait_count "$1" "URD-$2-EXIT $3 " 1 "$4" >&2 || return 0
	tr -d '\r' <"${VM_DIR[$1]}/console" | sed -n "s/^URD-$2-EXIT $3 \([0-9]*\)$/\1/p"
}

# vm_part NAME K: the console lines of vm_serves_each's server K (or
# container_serves_each's client K).
vm_part() {
	tr -d '\r' <"${VM_DIR[$1]}/console" |
		awk -v k="$2" '$0 == "URD-BEGIN " k { on = 1; next }
			index($0, "URD-SERVER-EXIT " k " ") == 1 || index($0, "URD-CLIENT-EXIT " k " ") == 1 { on = 0 }
			on'
}


#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# mpi.sh: Open MPI (Debian's openmpi-bin 4.1) over UCX on vRNICs, ranks in
# `unirdma exec` containers, launched the way the README shows:
#   unirdma exec --no-container --net LAUNCHER -- mpirun --host vr0,vr1 \
#       --mca plm_rsh_agent "unirdma rsh" ...
# mpirun runs on the host in the tenant's network (LAUNCHER, a vRNIC of its
# own); `unirdma rsh` starts each orted, and so each rank, in a container of
# vr0 and vr1.
#   launcher    exec --no-container --net: eth0 with the launcher's address,
#               and the tenant's containers reachable
#   hostname    one rank in each container (their hostnames are the vRNICs')
#   netpipe_check  NPopenmpi -i (NetPIPE's integrity check of every message)
#               over --mca pml ucx, UCX_TLS=rc_verbs,ud_verbs,self
#   netpipe     NPopenmpi up to 1 MiB: figures for every size, and the bytes
#               went through the vRNICs
. "$(dirname "$0")/lib.sh"

mpi_setup() {
	require_prog mpirun orted NPopenmpi
	setup_two_vrnics
	VR_L=vl IP_L=10.77.$SUBNET.9
	"$UNIRDMA" vrnic create "$VR_L" --tenant t1 --ip "$IP_L/24" >/dev/null || die "vrnic create $VR_L failed"
}

# mpi OUT PROGRAM...: two ranks, in containers of vr0 and vr1, over UCX on the vRNICs.
mpi() {
	local out=$1
	shift
	say "+ unirdma exec --no-container --net $VR_L -- mpirun -np 2 --host $VR_A,$VR_B ... $*"
	(cd "$WORK" && timeout 120 "$UNIRDMA" exec --no-container --net "$VR_L" -- \
		mpirun --allow-run-as-root --leave-session-attached -np 2 --host "$VR_A,$VR_B" --bind-to none \
		--mca plm_rsh_agent "$UNIRDMA rsh" --mca plm_rsh_no_tree_spawn 1 --mca routed direct \
		--mca oob_tcp_if_include eth0 --mca pml ucx --mca btl self \
		-x UCX_TLS=rc_verbs,ud_verbs,self -x OMPI_ALLOW_RUN_AS_ROOT=1 -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		"$@") >"$out" 2>&1
	local rc=$?
	[ $rc = 0 ] && tail -n 4 "$out" | sed "s/^/  | /"
	[ $rc = 0 ] || grep -v "^ *$" "$out" | tail -n 40 | sed "s/^/  | /"
	return $rc
}

case_launcher() {
	require_prog ip
	setup_two_vrnics
	VR_L=vl IP_L=10.77.$SUBNET.9
	"$UNIRDMA" vrnic create "$VR_L" --tenant t1 --ip "$IP_L/24" >/dev/null || return 1
	local out
	out=$("$UNIRDMA" exec --no-container --net "$VR_L" -- ip -4 -o addr show 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "eth0 has the launcher's address" grep -q "eth0 *inet $IP_L/24" <<<"$out"
	check "and nothing of the host's network" bash -c "[ \$(grep -c inet <<<\"\$1\") = 2 ]" _ "$out"
	local spid i
	"$UNIRDMA" exec --pidfile "$WORK/s.pid" "$VR_A" -- python3 -c \
		'import socket; s = socket.socket(); s.bind(("", 18600)); s.listen(); c, a = s.accept(); print(c.recv(16).decode(), a[0])' \
		>"$WORK/s.out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 200; i++)); do
		[ -s "$WORK/s.pid" ] && listening "$(cat "$WORK/s.pid")" 18600 && break
		sleep 0.05
	done
	"$UNIRDMA" exec --no-container --net "$VR_L" -- python3 -c \
		"import socket; socket.create_connection(('$IP_A', 18600), timeout=5).send(b'hello')"
	wait_for_exit "$spid" 10
	say "  the container's server got: $(cat "$WORK/s.out")"
	check "the launcher reaches a container of the tenant, from its own address" grep -qx "hello $IP_L" "$WORK/s.out"
	check "--net without --no-container is a usage error" bash -c \
		"'$UNIRDMA' exec --net '$VR_L' -- true 2>/dev/null; [ \$? = 2 ]"
	check "the host got no interface or address of the tenant's" bash -c "! ip -4 -o addr | grep -q ' $IP_L/'"
	checks_result
}

case_hostname() {
	mpi_setup
	mpi "$WORK/host.out" hostname || return 1
	check "one rank in each vRNIC's container" test "$(grep -xE "$VR_A|$VR_B" "$WORK/host.out" | sort | tr '\n' ' ')" = "$VR_A $VR_B "
	checks_result
}

case_netpipe_check() {
	mpi_setup
	mpi "$WORK/np.out" NPopenmpi -i -p 0 -u 1048576 -n 5 -o /dev/stdout || return 1
	local ok
	ok=$(grep -c 'Integrity check passed' "$WORK/np.out")
	say "  $ok sizes checked"
	check "every size from 1 B to 1 MiB passed NetPIPE's integrity check (>= 35 sizes)" test "$ok" -ge 35
	check "no size failed it" bash -c "! grep -qi 'integrity check fail' '$WORK/np.out'"
	checks_result
}

case_netpipe() {
	mpi_setup
	local before after
	before=$(tx_bytes_of "$VR_A" "$VR_B")
	# rank 0 writes its table (bytes, Mbit/s, seconds) into WORK, which the
	# containers show writable
	mpi "$WORK/np.out" NPopenmpi -p 0 -u 1048576 -n 20 -o "$WORK/np.dat" || return 1
	after=$(tx_bytes_of "$VR_A" "$VR_B")
	sed 's/^/  np.dat | /' "$WORK/np.dat" | tail -n 3
	check "NetPIPE's table has every size up to 1 MiB, each with a throughput" awk '
		NF == 3 && $2 + 0 > 0 && $3 + 0 > 0 { n++; if ($1 == 1048576) top = 1 }
		END { exit !(n >= 35 && top) }' "$WORK/np.dat"
	say "  the vRNICs sent $((after - before)) bytes"
	check "the messages went through the vRNICs (>= 40 MiB)" test $((after - before)) -ge $((40 << 20))
	checks_result
}

CASE_SETUP=:
add_case launcher case_launcher
add_case hostname case_hostname
add_case netpipe_check case_netpipe_check
add_case netpipe case_netpipe
run_cases "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.sh: the same vRNIC served to QEMU guests (ivshmem BAR + shared guest
# RAM), between guests and containers, through one unirdmad.
#
# Each case boots one or two small guests under TCG (Debian's kernel, an
# initramfs with busybox, Debian's verbs programs and our libibverbs.so.1:
# tests/vm/build-image.sh) with QEMU in a container of the guest's vRNIC
# (tests/vm/vmlib.sh).  vRNICs of tenant t1: vma (guest, .1), vmb (guest,
# .3), ca (container, .2), cb (container, .4), subnet 10.77.N.0/24.
#
#   attach            vm-args; the guest finds the vRNIC by its PCI device
#   guest_serves_verbs  one guest serves, in turn, to a container's clients:
#                     ibv_rc_pingpong -c, ib_write_bw and ib_send_bw (perftest)
#   guest_serves_tools  the same with urd_vmtool's checks, data checked both ways:
#                     opcodes  every opcode
#                     uc       SEND and WRITE over UC QPs
#                     mw       memory windows: type 2 bind, WRITE and READ
#                              through the window, SEND_WITH_INV, rebind,
#                              LOCAL_INV, a WRITE through the dead key refused
#                     mcast    UD multicast: guest and container QPs join
#                              ::ffff:239.1.2.3, each one's SENDs reach both
#                              (GRH, payload, src_qp checked); after the
#                              container's detach, the guest's SEND reaches the
#                              guest alone
#   guest_clients     a container serves, in turn, to one guest's clients:
#                     ibv_rc_pingpong -e -c (completion events), ib_read_lat and
#                     ib_atomic_bw (perftest)
#   opcodes_vm_vm            every opcode between two guests
#   verbs_in_guest           t_resize_cq, t_rereg and t_mw run inside a guest
#   ram_above_4g      a 4 GiB guest: MRs in RAM above the PCI hole (GPA >= 4 GiB)
#   big_mr            an MR of 8192 scattered guest frames (segment table in guest RAM)
#   kill_vm           SIGKILL of QEMU: the peer's QP fails, everything is released
#   poweroff_vm       the guest powers off under a live QP: the same
#   daemon_killed     SIGKILL of unirdmad: the guest sees it (heartbeat) and
#                     completes its work in error
#   hostile           registrations outside guest RAM are refused; a guest
#                     scribbling over its BAR does not disturb the daemon or
#                     two containers working meanwhile
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/vm/vmlib.sh"

CASE_SETUP=vm_setup
# the daemon's VM heartbeat timeout: 1 s by default; a 2-core machine under
# the load of a TCG guest and a test suite gets some slack
export UNIRDMA_VM_DEAD_MS=${UNIRDMA_VM_DEAD_MS:-2000}
# seconds a guest may take, boot included
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-90}

vm_setup() {
	vm_prepare
	start_daemon
	local n=$SUBNET
	VR_A=ca VR_B=cb IP_A=10.77.$n.2 IP_B=10.77.$n.4
	VM_A=vma VM_B=vmb IPV_A=10.77.$n.1 IPV_B=10.77.$n.3
	"$UNIRDMA" vrnic create "$VM_A" --tenant t1 --ip "$IPV_A/24" --vm --vm-ram 512M >/dev/null || die "vrnic create $VM_A --vm failed"
	"$UNIRDMA" vrnic create "$VM_B" --tenant t1 --ip "$IPV_B/24" --vm --vm-ram 512M >/dev/null || die "vrnic create $VM_B --vm failed"
	"$UNIRDMA" vrnic create "$VR_A" --tenant t1 --ip "$IP_A/24" >/dev/null || die "vrnic create $VR_A failed"
	"$UNIRDMA" vrnic create "$VR_B" --tenant t1 --ip "$IP_B/24" >/dev/null || die "vrnic create $VR_B failed"
	say "vRNICs: guests $VM_A $IPV_A, $VM_B $IPV_B; containers $VR_A $IP_A, $VR_B $IP_B (tenant t1)"
}

jq_vrnic() { "$UNIRDMA" --json vrnic show "$1" | python3 -c "import json,sys; v=json.load(sys.stdin)['vrnic']; print($2)"; }

# objects VRNIC: "contexts pds mrs cqs qps srqs" of a vRNIC.
objects() { jq_vrnic "$1" "v['contexts'], v['pds'], v['mrs'], v['cqs'], v['qps'], v['srqs']"; }

# released VRNIC SECONDS: every object of VRNIC is gone within SECONDS.
released() {
	local i o
	for ((i = 0; i < $2 * 10; i++)); do
		o=$(objects "$1")
		[ "$o" = "0 0 0 0 0 0" ] && { say "  $1 holds nothing after $((i / 10)).$((i % 10)) s"; return 0; }
		sleep 0.1
	done
	say "  $1 still holds contexts pds mrs cqs qps srqs = $o"
	return 1
}

case_attach() {
	local args dir
	args=$("$UNIRDMA" vm-args "$VM_A")
	dir=$(jq_vrnic "$VM_A" "v['dir']")     # STATE/vrnics/NAME.<random>: one per incarnation
	say "unirdma vm-args $VM_A: $args"
	check "the region is an ivshmem-plain device on a shared backend" \
		grep -q "memory-backend-file,id=urd-bar,share=on,mem-path=$dir/region,size=256M -device ivshmem-plain,memdev=urd-bar" <<<"$args"
	check "guest RAM is the daemon's shared file, its layout pinned" \
		grep -q -- "-machine pc,memory-backend=urd-ram,max-ram-below-4g=3G -m 512M -object memory-backend-file,id=urd-ram,share=on,mem-path=$dir/guest-ram,size=512M" <<<"$args"
	check "the daemon created guest-ram with the guest's size" \
		test "$(stat -c %s "$dir/guest-ram")" = $((512 << 20))
	check "the region file is exactly the BAR" test "$(stat -c %s "$dir/region")" = $((256 << 20))
	check "a VM vRNIC's 'vm' object says what the guest RAM is" \
		test "$(jq_vrnic "$VM_A" "v['vm']['ram_bytes'], v['vm']['lowmem_bytes'], v['vm']['highmem_bytes']")" = "536870912 536870912 0"
	check "vm-args refuses a container vRNIC" bash -c "! '$UNIRDMA' vm-args '$VR_A' 2>/dev/null"
	"$UNIRDMA" vrnic create big --tenant t1 --ip "10.77.$SUBNET.9/24" --vm-ram 4G >/dev/null
	check "4 GiB of guest RAM: 3 GiB below the PCI hole, 1 GiB from 4 GiB" \
		test "$(jq_vrnic big "v['vm']['lowmem_bytes'], v['vm']['highmem_bytes']")" = "3221225472 1073741824"
	dir=$(jq_vrnic big "v['dir']")
	"$UNIRDMA" vrnic delete big >/dev/null
	check "deleting a VM vRNIC removes its guest RAM" test ! -e "$dir/guest-ram" -a ! -e "$dir"

	vm_boot a "$VM_A" "grep -l 0x1110 /sys/bus/pci/devices/*/device
ibv_devices
UNIRDMA_DEBUG=1 ibv_devinfo -v 2>&1 | grep -E 'unirdma|hca_id|GID|max_mr_size|state|link_layer'"
	vm_finish a 90 || return 1
	local con=${VM_DIR[a]}/console
	check "the guest lists the vRNIC by its name from the region header" grep -qE "^[[:space:]]*${VM_A}[[:space:]]+0200" "$con"
	check "found as an ivshmem PCI device" grep -q "1 ivshmem device(s) under /sys/bus/pci/devices" "$con"
	check "GID 0 is ::ffff:$IPV_A" grep -q "GID\[ *0\]:.*::ffff:$IPV_A" "$con"
	check "max_mr_size is the guest's RAM" grep -q "max_mr_size:.*0x20000000" "$con"
	check "the port is active, Ethernet (RoCE)" grep -q "PORT_ACTIVE" "$con"
	check "the guest's contexts are gone after it closed them" released "$VM_A" 5
	checks_result
}



# results_ok FILE bw|lat: perftest's result rows have non-zero figures
# (as in perftest.sh).
results_ok() {
	awk -v kind="$2" '
		{ sub(/^  \| /, "") }
		$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4 && $3 ~ /^[0-9.]+$/ {
			rows++
			v = (kind == "bw") ? $NF : (NF >= 6 ? $6 : $3)
			if (v + 0 <= 0) { bad++; print "  zero figure in: " $0 }
		}
		END { if (!rows) print "  no result rows"; exit !(rows && !bad) }' "$1"
}

# op_bytes VRNIC rx|tx OPCODE: bytes of OPCODE the vRNIC served / sent.
op_bytes() { jq_vrnic "$1" "v['counters']['by_opcode']['$3']['$2_bytes']"; }

# part_has K TEXT [GUEST]: the console of GUEST (s) for vm_serves_each's
# server K (container_serves_each's client K: guest c) has TEXT.
part_has() { vm_part "${3:-s}" "$1" | grep -qF -- "$2"; }

# ops_hook K (VM_EACH_HOOK of the cases below): the guest's vRNIC's bytes of
# each opcode in EACH_OPS ("DIR:OPCODE ...") once program K is done;
# op_delta A B DIR:OPCODE: the bytes moved between those readings after
# programs A and B.  (A guest running the clients goes on to the next one
# at once, so a reading may already count some of the next program's.)
declare -A OPS_AT
ops_hook() {
	local o
	for o in $EACH_OPS; do
		OPS_AT[$1,$o]=$(op_bytes "$VM_A" "${o%%:*}" "${o#*:}")
	done
}
op_delta() { echo $((${OPS_AT[$2,$3]:-0} - ${OPS_AT[$1,$3]:-0})); }

# guest_clients: the other way round, on one boot: the container serves
# ibv_rc_pingpong -e -c (completion events), ib_read_lat and ib_atomic_bw in
# turn, the guest runs the clients.
case_guest_clients() {
	local reads atomics
	EACH_OPS="tx:rdma_read tx:atomic_fetch_add" VM_EACH_HOOK=ops_hook container_serves_each "$VR_A" "$VM_A" \
		"ibv_rc_pingpong -g 0 -n 100 -e -c" "ibv_rc_pingpong -g 0 -n 100 -e -c $IP_A" \
		"ib_read_lat -F -n 200" "ib_read_lat -F -n 200 $IP_A" \
		"ib_atomic_bw -F -n 1000" "ib_atomic_bw -F -n 1000 $IP_A"
	check "the guest ran all three clients" test $? = 0
	reads=$(op_delta 0 1 tx:rdma_read) atomics=$(op_delta 0 2 tx:atomic_fetch_add)
	check "ibv_rc_pingpong -e: the guest's client finished 100 iterations" part_has 0 "100 iters" c
	check "so did the container's server" grep -q "100 iters" "$WORK/server0.out"
	vm_part c 1 >"$WORK/client1.out"
	check "ib_read_lat: the guest's client reports non-zero figures" results_ok "$WORK/client1.out" lat
	check "the guest's vRNIC sent its RDMA READs ($reads bytes)" test "$reads" -gt 0
	vm_part c 2 >"$WORK/client2.out"
	check "ib_atomic_bw: the guest's client reports non-zero figures" results_ok "$WORK/client2.out" bw
	check "the guest's vRNIC sent its atomics ($atomics bytes)" test "$atomics" -gt 0
	checks_result
}

# guest_serves_verbs: one guest serves ibv_rc_pingpong -c, ib_write_bw and
# ib_send_bw in turn; the container's clients.  The guest's vRNIC's
# counters are read after each, so each program's bytes are its own.
case_guest_serves_verbs() {
	local writes sends
	EACH_OPS="rx:rdma_write rx:send" VM_EACH_HOOK=ops_hook vm_serves_each "$VM_A" "$VR_A" \
		"ibv_rc_pingpong -g 0 -n 200 -c" "ibv_rc_pingpong -g 0 -n 200 -c $IPV_A" \
		"ib_write_bw -F -n 1000" "ib_write_bw -F -n 1000 $IPV_A" \
		"ib_send_bw -F -n 1000" "ib_send_bw -F -n 1000 $IPV_A"
	check "the guest served all three" test $? = 0
	writes=$(op_delta 0 1 rx:rdma_write) sends=$(op_delta 0 2 rx:send)
	check "ibv_rc_pingpong: the container's client finished 200 iterations" grep -q "200 iters" "$WORK/client0.out"
	check "so did the guest's server" part_has 0 "200 iters"
	check "ib_write_bw: the container's client reports non-zero figures" results_ok "$WORK/client1.out" bw
	check "the guest's vRNIC received its RDMA WRITEs ($writes bytes)" test "$writes" -gt 0
	check "ib_send_bw: the container's client reports non-zero figures" results_ok "$WORK/client2.out" bw
	check "the guest's vRNIC received its SENDs ($sends bytes)" test "$sends" -ge $((1000 * 65536))
	checks_result
}

# guest_serves_tools: urd_vmtool opcodes, uc, mw and mcast, each checking
# its data on both sides, served in turn by one guest.
case_guest_serves_tools() {
	local k t
	vm_serves_each "$VM_A" "$VR_A" \
		"urd_vmtool opcodes" "$BUILD/vm/urd_vmtool opcodes $IPV_A" \
		"urd_vmtool uc" "$BUILD/vm/urd_vmtool uc $IPV_A" \
		"urd_vmtool mw" "$BUILD/vm/urd_vmtool mw $IPV_A" \
		"urd_vmtool mcast" "$BUILD/vm/urd_vmtool mcast $IPV_A"
	check "the guest served all four" test $? = 0
	k=0
	for t in opcodes uc mw mcast; do
		check "$t: every check passed in the container" grep -q "PASSED" "$WORK/client$k.out"
		check "$t: every check passed in the guest" part_has "$k" PASSED
		k=$((k + 1))
	done
	checks_result
}

case_opcodes_vm_vm() {
	vm_boot s "$VM_A" ". /etc/urd-lib.sh
urd_serve 18515 urd_vmtool opcodes"
	vm_boot c "$VM_B" "urd_vmtool opcodes $IPV_A"
	local crc src
	vm_finish c "$CLIENT_TIMEOUT"
	crc=$?
	vm_finish s 30
	src=$?
	[ "$crc" = 0 ] && [ "$src" = 0 ] || { say "client $crc, server $src"; return 1; }
	check "every check passed in guest $VM_B" grep -q "PASSED" "${VM_DIR[c]}/console"
	check "every check passed in guest $VM_A" grep -q "PASSED" "${VM_DIR[s]}/console"
	checks_result
}

case_ram_above_4g() {
	"$UNIRDMA" vrnic create vmc --tenant t1 --ip "10.77.$SUBNET.5/24" --vm --vm-ram 4G >/dev/null || return 1
	check "4 GiB: 3 GiB below the PCI hole, 1 GiB above 4 GiB" \
		test "$(jq_vrnic vmc "v['vm']['lowmem_bytes'], v['vm']['highmem_bytes']")" = "3221225472 1073741824"
	vm_serves vmc "env UNIRDMA_DEBUG=1 urd_vmtool opcodes" "$VR_A" "$BUILD/vm/urd_vmtool opcodes 10.77.$SUBNET.5" || return 1
	grep "reg_mr" "${VM_DIR[s]}/console" | sed 's/^/  /'
	check "the guest's MR lies above 4 GiB" grep -qE "GPAs 0x1[0-9a-f]{8}-" "${VM_DIR[s]}/console"
	check "every check passed in the guest and in the container" \
		eval 'grep -q PASSED "${VM_DIR[s]}/console" && grep -q PASSED "$PAIR_CLIENT_OUT"'
	checks_result
}

case_big_mr() {
	vm_boot b "$VM_A" "UNIRDMA_DEBUG=1 urd_vmtool bigmr 32 2>/tmp/debug
rc=\$?
grep 'reg_mr' /tmp/debug
exit \$rc"
	vm_finish b 90 || return 1
	check "the 32 MiB MR needed a segment table in guest RAM" grep -q "segment(s) in a table in guest RAM" "${VM_DIR[b]}/console"
	check "every RDMA WRITE and READ through it was right" grep -q PASSED "${VM_DIR[b]}/console"
	checks_result
}

# The container holds an RC QP to a guest, which then goes away ($1: how).
guest_goes_away() {
	local how=$1 hpid init i t0 t1
	say "+ server in container $VR_A: urd_vmtool hold"
	# shellcheck disable=SC2086 # LINEBUF is a word list
	"$UNIRDMA" exec --pidfile "$WORK/hold.pid" "$VR_A" -- $LINEBUF "$BUILD/vm/urd_vmtool" hold >"$WORK/hold.out" 2>&1 &
	hpid=$!
	SERVER_PIDS+=("$hpid")
	for ((i = 0; i < 300; i++)); do
		init=$(cat "$WORK/hold.pid" 2>/dev/null)
		[ -n "$init" ] && listening "$init" 18515 && break
		sleep 0.05
	done
	if [ "$how" = kill ]; then
		vm_boot h "$VM_A" "urd_vmtool hold $IP_A"
	else
		vm_boot h "$VM_A" "urd_vmtool hold $IP_A >/tmp/hold.out 2>&1 &
i=0
while ! grep -q URD-HOLDING /tmp/hold.out && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
cat /tmp/hold.out
sleep 1
echo URD-POWEROFF
poweroff -f"
	fi
	vm_wait h "$([ "$how" = kill ] && echo URD-HOLDING || echo URD-POWEROFF)" 100 || { vm_finish h 5; return 1; }
	check "the guest holds contexts, a PD, an MR, a CQ and 2 QPs" test "$(objects "$VM_A")" = "1 1 1 1 2 0"
	t0=$EPOCHREALTIME
	if [ "$how" = kill ]; then
		check "QEMU killed with SIGKILL" vm_kill h
	fi
	check "the container's QP fails" wait_for_exit "$hpid" 20
	wait "$hpid"
	say "--- the container's program (exit code $?) ---"
	sed 's/^/  | /' "$WORK/hold.out"
	t1=$EPOCHREALTIME
	check "it saw a completion in error, the peer gone" grep -q URD-PEER-GONE "$WORK/hold.out"
	check "everything the guest held is released" released "$VM_A" 10
	say "the container learned of it $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after the guest went"
	check "the daemon says why" grep -q "VM context .* silent for" "$WORK/unirdmad.log"
	grep "silent for" "$WORK/unirdmad.log" | sed 's/^/  log| /'
	wait_for_exit "${VM_PID[h]}" 10
	vm_finish h 5 >/dev/null
	[ "$how" = kill ] || { checks_result; return; }
	# the vRNIC serves the next guest
	vm_serves "$VM_A" "ibv_rc_pingpong -g 0 -n 50 -c" "$VR_A" "ibv_rc_pingpong -g 0 -n 50 -c $IPV_A" >"$WORK/again.out" 2>&1
	check "a new guest on the same vRNIC works (ibv_rc_pingpong)" test $? = 0 || sed 's/^/  | /' "$WORK/again.out"
	checks_result
}

case_daemon_killed() {
	local t0 t1
	vm_boot h "$VM_A" "UNIRDMA_DEBUG=1 urd_vmtool hold 2>&1 | grep -v 'ivshmem\|no devices'"
	vm_wait h "listening on TCP port" 100 || { vm_finish h 5; return 1; }
	say "+ client in container $VR_A: urd_vmtool hold $IPV_A"
	# shellcheck disable=SC2086 # LINEBUF is a word list
	"$UNIRDMA" exec "$VR_A" -- $LINEBUF "$BUILD/vm/urd_vmtool" hold "$IPV_A" >"$WORK/hold.out" 2>&1 &
	SERVER_PIDS+=("$!")
	vm_wait h URD-HOLDING 60 || { vm_finish h 5; return 1; }
	say "+ kill -KILL unirdmad ($DAEMON_PID)"
	{
		kill -KILL "$DAEMON_PID"
		t0=$EPOCHREALTIME
		wait "$DAEMON_PID"
	} 2>/dev/null
	DAEMON_PID=
	vm_wait h URD-PEER-GONE 30
	t1=$EPOCHREALTIME
	check "the guest saw the daemon gone and its work completed in error" grep -q URD-PEER-GONE "${VM_DIR[h]}/console"
	check "it said why" grep -q "unirdmad stopped or died; the device is gone" "${VM_DIR[h]}/console"
	say "  after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (the daemon's heartbeat stopped)"
	vm_finish h 30
	check "the guest's program ended" test $? = 0
	check "so did the container's" grep -q URD-PEER-GONE "$WORK/hold.out"
	mountpoint -q "$STATE/vrnics" && umount -l "$STATE/vrnics"
	checks_result
}

# The verbs tests of issue 13 whose library side differs in a guest (CQ
# rings and MRs in guest RAM and the BAR): t_resize_cq, t_rereg and t_mw
# inside one guest, both ends on its vRNIC (two contexts of one device).
case_verbs_in_guest() {
	vm_boot v "$VM_A" "export UNIRDMA_TEST_TIME_SCALE=8
t_resize_cq && t_rereg && t_mw"
	vm_finish v 150
	check "t_resize_cq, t_rereg and t_mw pass in a guest" test $? = 0
	check "each said so" sh -c "grep -q 'PASS t_resize_cq' '${VM_DIR[v]}/console' &&
		grep -q 'PASS t_rereg' '${VM_DIR[v]}/console' && grep -q 'PASS t_mw' '${VM_DIR[v]}/console'"
	checks_result
}

case_hostile() {
	local ppid
	vm_boot b "$VM_A" "urd_vmtool badmr"
	vm_finish b 90
	check "registrations outside guest RAM are refused, its own page is accepted" test $? = 0
	check "the raw context is gone" released "$VM_A" 5

	# a well-behaved pair of containers works while a guest scribbles
	vm_boot w "$VM_A" "urd_vmtool scribble 80 $RANDOM"
	vm_wait w URD-SCRIBBLING 90 || { vm_finish w 5; return 1; }
	run_pair "ibv_rc_pingpong -g 0 -n 1000 -c" "ibv_rc_pingpong -g 0 -n 1000 -c $IP_A" >"$WORK/pair.out" 2>&1
	check "two containers' ibv_rc_pingpong -c ran undisturbed meanwhile" test $? = 0 || sed 's/^/  | /' "$WORK/pair.out"
	check "... while the guest was still scribbling" bash -c "! grep -q URD-EXIT '${VM_DIR[w]}/console'"
	say "  contexts the scribbler's garbage requests opened: $(jq_vrnic "$VM_A" "v['contexts']")"
	check "the scribbling guest is killed" vm_kill w
	wait_for_exit "${VM_PID[w]}" 10
	vm_finish w 5 >/dev/null
	check "unirdmad is alive" daemon_alive
	check "contexts the scribbler opened are released once it is gone" released "$VM_A" 10
	check "another guest still works with the containers (opcodes on $VM_B)" \
		vm_serves "$VM_B" "urd_vmtool opcodes" "$VR_B" "$BUILD/vm/urd_vmtool opcodes $IPV_B"
	checks_result
}

add_case attach case_attach
add_case guest_serves_verbs case_guest_serves_verbs
add_case guest_serves_tools case_guest_serves_tools
add_case guest_clients case_guest_clients
add_case opcodes_vm_vm case_opcodes_vm_vm
add_case verbs_in_guest case_verbs_in_guest
add_case big_mr case_big_mr
add_case ram_above_4g case_ram_above_4g
add_case kill_vm guest_goes_away kill
add_case poweroff_vm guest_goes_away poweroff
add_case daemon_killed case_daemon_killed
add_case hostile case_hostile
run_cases "$@"

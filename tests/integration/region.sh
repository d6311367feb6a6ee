#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# region.sh: what a tenant can do with its vRNIC's region file and directory
# (issue 9, findings 2 and 5). tests/tools/region_probe does the attacks.
#   name_reuse  tenant A's container plants a file in its vRNIC's directory
#               and stays alive with the old directory mounted; the name is
#               deleted and created again for tenant B, who registers a buffer
#               of a secret pattern. A, through what it kept, must not find
#               B's region or the pattern (which B's region does hold), and the
#               new incarnation lives in a new, empty directory.
#   growth      a tenant with a 64 MiB memory quota truncates its region to
#               1 TiB and writes until a write fails: it must stop within its
#               file system (control part + quota) with ENOSPC; the file
#               system follows `vrnic set --max-mem`; other tenants' verified
#               traffic runs meanwhile, a vRNIC created afterwards carries
#               traffic, the attacker's own vRNIC still works (its control
#               pages were allocated up front) and the daemon's RSS stays put.
#   shrink      a tenant truncates its region to 0 while its loopback QPs move
#               data: the daemon survives, logs the failure naming the vRNIC,
#               `vrnic show` says state "failed", the other tenant's verified
#               traffic works, and the failed vRNIC can be deleted and its
#               name used again.
#   punch       a tenant punches a hole into pages only the daemon touches
#               (unused context slots' mailboxes) and fills its file system: the
#               daemon's next touch faults; its vRNIC fails as above, and the
#               tenant's other application gets IBV_EVENT_DEVICE_FATAL, its
#               work completes in error and its control verbs fail.
#   vm_growth   the same growth through a VM vRNIC's guest-ram file (QEMU's,
#               on the host): bounded by control part + guest RAM.
. "$(dirname "$0")/lib.sh"

PROBE=$BUILD/tools/region_probe
CTRL_BYTES=$((256 << 20)) # URD_REGION_CTRL_SIZE

# jq_vrnic NAME EXPR: a Python expression over the daemon's vrnic object v.
jq_vrnic() { "$UNIRDMA" --json vrnic show "$1" | python3 -c "import json,sys; v=json.load(sys.stdin)['vrnic']; print($2)"; }

# wait_line FILE REGEX SECONDS
wait_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

daemon_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status"; }

# victim_traffic LABEL: ibv_rc_pingpong -c between $VR_A and $VR_B, then t_opcodes on them from the host.
victim_traffic() {
	local dev=$WORK/victim-devs v rc
	say "--- victim traffic: $1"
	run_pair "ibv_rc_pingpong -g 0 -c -n 2000" "ibv_rc_pingpong -g 0 -c -n 2000 $IP_A" >"$WORK/pp.$1" 2>&1 ||
		{ cat "$WORK/pp.$1"; return 1; }
	grep -E '^\s*\|.*(bytes in|iters in)' "$WORK/pp.$1" | head -n 2
	mkdir -p "$dev"
	for v in "$VR_A" "$VR_B"; do
		ln -sfn "$(jq_vrnic "$v" "v['dir']")" "$dev/$v"
	done
	UNIRDMA_DEVDIR=$dev UNIRDMA_TEST_DEV0=$VR_A UNIRDMA_TEST_DEV1=$VR_B UNIRDMA_TEST_TIME_SCALE=4 \
		LD_LIBRARY_PATH="$UNIRDMA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout -k 5 60 "$BUILD/tests/t_opcodes" >"$WORK/op.$1" 2>&1
	rc=$?
	tail -n 2 "$WORK/op.$1" | sed 's/^/  | /'
	return $rc
}

require_probe() {
	[ -x "$PROBE" ] || die "$PROBE is not built (run make)"
	require_prog python3
}

case_name_reuse() {
	local marker="URD-SECRET-$RANDOM$RANDOM-" a_in=$WORK/a.in b_in=$WORK/b.in apid bpid old_dir new_dir
	require_probe
	"$UNIRDMA" vrnic create reuse --tenant ta --ip "10.80.$SUBNET.1/24" >/dev/null || die "vrnic create reuse (ta) failed"
	old_dir=$(jq_vrnic reuse "v['dir']")
	mkfifo "$a_in" "$b_in"

	# Tenant A: plants a file, then waits with its container (and its view
	# of the vRNIC) alive; after the name changed hands it looks again.
	# shellcheck disable=SC2016 # expanded inside the container
	"$UNIRDMA" exec reuse -- sh -c '"$0" plant "$UNIRDMA_DEVDIR/$UNIRDMA_VRNIC"; echo WAITING; read -r go;
		"$0" spy "$UNIRDMA_DEVDIR/$UNIRDMA_VRNIC/region" "$1"' "$PROBE" "$marker" <"$a_in" >"$WORK/a.out" 2>&1 &
	apid=$!
	SERVER_PIDS+=("$apid")
	exec 7>"$a_in"
	wait_line "$WORK/a.out" '^WAITING' 20 || { cat "$WORK/a.out"; die "tenant A did not start"; }
	sed 's/^/  A | /' "$WORK/a.out"

	check "the vRNIC is deleted while tenant A holds on to it" "$UNIRDMA" vrnic delete reuse
	check "its directory is gone" test ! -e "$old_dir"
	check "the name can be created again, for tenant B" "$UNIRDMA" vrnic create reuse --tenant tb --ip "10.81.$SUBNET.1/24"
	new_dir=$(jq_vrnic reuse "v['dir']")
	say "old incarnation: $old_dir; new: $new_dir"
	check "the new incarnation lives in another directory" test "$new_dir" != "$old_dir"
	check "nothing tenant A planted is in it" test ! -e "$new_dir/planted"

	# Tenant B registers a buffer of the secret pattern and keeps it.
	"$UNIRDMA" exec reuse -- "$PROBE" hold "$marker" $((1 << 20)) <"$b_in" >"$WORK/b.out" 2>&1 &
	bpid=$!
	SERVER_PIDS+=("$bpid")
	exec 8>"$b_in"
	wait_line "$WORK/b.out" '^READY' 30 || { cat "$WORK/b.out"; die "tenant B did not register its buffer"; }
	# The control: the pattern is in B's region, so a spy that can see it finds it.
	"$PROBE" spy "$new_dir/region" "$marker" >"$WORK/control.out" 2>&1
	sed 's/^/  host | /' "$WORK/control.out"
	check "the host finds B's pattern in B's region (the spy works)" grep -q '^FOUND' "$WORK/control.out"

	echo go >&7
	exec 7>&-
	wait "$apid"
	say "--- tenant A, after the name went to tenant B:"
	sed 's/^/  A | /' "$WORK/a.out"
	check "tenant A looked (its spy ran)" grep -qE '^(HEADER|OPEN-FAILED)' "$WORK/a.out"
	check "tenant A does not find B's pattern" bash -c "! grep -q '^FOUND' '$WORK/a.out'"
	check "tenant A does not see B's region header" bash -c "! grep -q '^HEADER magic=1 name=reuse tenant=tb' '$WORK/a.out'"
	exec 8>&-
	wait "$bpid"
	check "tenant B ran to the end" test $? = 0
	checks_result
}

case_growth() {
	local quota=$((64 << 20)) limit hdir out wrote err used rss0 rss1 size hpid
	require_probe
	require_prog ibv_rc_pingpong
	limit=$((CTRL_BYTES + quota + (256 << 20)))
	"$UNIRDMA" vrnic create hog --tenant th --ip "10.82.$SUBNET.1/24" --max-mem 64M >/dev/null ||
		die "vrnic create hog failed"
	hdir=$(jq_vrnic hog "v['dir']")
	rss0=$(daemon_rss_kb)

	# shellcheck disable=SC2016
	"$UNIRDMA" exec hog -- sh -c '"$0" grow "$UNIRDMA_DEVDIR/$UNIRDMA_VRNIC/region" "$1"' "$PROBE" "$limit" \
		>"$WORK/grow.out" 2>&1 &
	hpid=$!
	SERVER_PIDS+=("$hpid")
	victim_traffic during
	check "the other tenant's verified traffic passes during the attack" test $? = 0
	wait "$hpid"
	sed 's/^/  hog | /' "$WORK/grow.out"
	out=$(grep '^WROTE' "$WORK/grow.out")
	wrote=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$out")
	err=$(sed -n 's/.*errno=\([0-9]*\).*/\1/p' <<<"$out")
	say "the attacker wrote $wrote bytes (its quota: $quota + control part $CTRL_BYTES; it tried $limit)"
	check "the attacker's writes stopped with ENOSPC" test "${err:-0}" = 28
	check "the attacker stored at most control part + quota" test "${wrote:-$limit}" -le $((CTRL_BYTES + quota))
	used=$(df -B1 --output=used "$hdir" | tail -n 1 | tr -d ' ')
	say "the attacker's file system: $used bytes used"
	check "its file system holds at most control part + quota" test "${used:-$limit}" -le $((CTRL_BYTES + quota))

	victim_traffic after
	check "the other tenant's verified traffic passes after the attack" test $? = 0
	check "the attacker's vRNIC still answers (state running)" test "$(jq_vrnic hog "v['state']")" = running
	# Its file system is full: what needs new pages fails cleanly (ENOMEM),
	# nothing the daemon already uses faults.
	"$UNIRDMA" exec hog -- "$PROBE" traffic 1 >"$WORK/hog-full.out" 2>&1
	sed 's/^/  hog | /' "$WORK/hog-full.out"
	check "with its file system full, the attacker's new rings fail with ENOMEM" grep -q 'errno 12' "$WORK/hog-full.out"
	check "and its vRNIC was not failed for it" test "$(jq_vrnic hog "v['state']")" = running

	"$UNIRDMA" vrnic create late --tenant t1 --ip "10.77.$SUBNET.3/24" >/dev/null
	check "a vRNIC created after the attack exists" test "$(jq_vrnic late "v['state']")" = running
	VR_B=late IP_B=10.77.$SUBNET.3
	victim_traffic late
	check "it carries verified traffic" test $? = 0

	# below what it stores, the file system keeps what is stored
	check "the quota can be lowered below what the attacker stores" "$UNIRDMA" vrnic set hog --max-mem 32M
	size=$(df -B1 --output=size "$hdir" | tail -n 1 | tr -d ' ')
	check "its file system stays at control part + old quota ($size bytes)" test "$size" = $((CTRL_BYTES + quota))
	"$UNIRDMA" vrnic set hog --max-mem 128M >/dev/null
	size=$(df -B1 --output=size "$hdir" | tail -n 1 | tr -d ' ')
	check "raising the quota grows the file system ($size bytes)" test "$size" = $((CTRL_BYTES + (128 << 20)))
	check "then the attacker's device moves data again" "$UNIRDMA" exec hog -- "$PROBE" traffic 1
	rss1=$(daemon_rss_kb)
	say "daemon VmRSS: $rss0 kB before, $rss1 kB after"
	check "the daemon's RSS grew less than 64 MiB" test $((rss1 - rss0)) -lt 65536
	checks_result
}

case_shrink() {
	local i state spid
	require_probe
	"$UNIRDMA" vrnic create shrinker --tenant ts --ip "10.83.$SUBNET.1/24" >/dev/null ||
		die "vrnic create shrinker failed"
	# shellcheck disable=SC2016
	"$UNIRDMA" exec shrinker -- sh -c '"$0" traffic 20 & p=$!; sleep 2;
		"$0" shrink "$UNIRDMA_DEVDIR/$UNIRDMA_VRNIC/region"; wait $p; echo "TRAFFIC-EXIT $?"' "$PROBE" \
		>"$WORK/shrink.out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 100; i++)); do
		state=$(jq_vrnic shrinker "v.get('state')" 2>/dev/null)
		[ "$state" = failed ] && break
		sleep 0.1
	done
	wait "$spid"
	sed 's/^/  shrinker | /' "$WORK/shrink.out"
	check "the attacker's traffic ran before it truncated" grep -q '^TRAFFIC$' "$WORK/shrink.out"
	# not anchored: the attacker's own traffic process dies of SIGBUS on its
	# truncated region, and a sanitizer's report of that can begin on the
	# same line ("AddressSanitizerSHRUNK", seen in a clean-clone ASan run)
	check "it truncated its region" grep -q 'SHRUNK' "$WORK/shrink.out"
	check "the daemon is alive" daemon_alive
	check "the daemon answers ping" "$UNIRDMA" daemon ping
	check "vrnic show says the attacker's vRNIC failed (state: $state)" test "$state" = failed
	grep -E 'vrnic shrinker .*FAILED' "$WORK/unirdmad.log" | sed 's/^/  log | /'
	check "the daemon logged the failure, naming the vRNIC" grep -qE 'vrnic shrinker \(tenant ts\) FAILED' "$WORK/unirdmad.log"
	check "the victims' vRNICs run" test "$(jq_vrnic "$VR_A" "v['state']") $(jq_vrnic "$VR_B" "v['state']")" = "running running"
	victim_traffic after
	check "the other tenant's verified traffic passes" test $? = 0
	check "the failed vRNIC can be deleted" "$UNIRDMA" vrnic delete shrinker
	check "and its name created again" "$UNIRDMA" vrnic create shrinker --tenant ts --ip "10.83.$SUBNET.1/24"
	check "the new one moves data" "$UNIRDMA" exec shrinker -- "$PROBE" traffic 1
	checks_result
}

# Holes punched into pages the daemon writes, then the file system filled:
# the daemon's next touch of such a page cannot get memory and faults.
case_punch() {
	# Slots 31..62 are [2 MiB, 4 MiB): a whole huge page (a hole inside one
	# that cannot be split is only zeroed), and no application uses them.
	local quota=$((64 << 20)) hole_off=$((2 << 20)) hole_len=$((2 << 20)) i state hpid
	require_probe
	"$UNIRDMA" vrnic create puncher --tenant tp --ip "10.85.$SUBNET.1/24" --max-mem 64M >/dev/null ||
		die "vrnic create puncher failed"
	# An application of the tenant that does not touch those pages: it must
	# get IBV_EVENT_DEVICE_FATAL, its work must complete in error, its
	# control verbs must fail, nothing may hang (lifeprobe hold checks that).
	"$UNIRDMA" exec puncher -- "$BUILD/tools/lifeprobe" hold --timeout 15 >"$WORK/hold.out" 2>&1 &
	hpid=$!
	SERVER_PIDS+=("$hpid")
	wait_line "$WORK/hold.out" '^READY' 20 || { cat "$WORK/hold.out"; die "lifeprobe hold did not start"; }
	# The attacker fills its file system, then punches out mailboxes of
	# unused context slots (only the daemon's control thread reads them,
	# every 100 ms) and takes the freed pages at once.  The daemon may
	# refault the hole in between: try a few times.
	# shellcheck disable=SC2016
	"$UNIRDMA" exec --no-container puncher -- sh -c 'r=$UNIRDMA_DEVDIR/$UNIRDMA_VRNIC/region;
		"$0" grow "$r" "$1"; for k in 1 2 3 4 5 6 7 8 9 10; do
			"$0" punch "$r" "$2" "$3" $(((64 + k) << 30)); sleep 0.5; done' \
		"$PROBE" $((CTRL_BYTES + quota + (256 << 20))) "$hole_off" "$hole_len" >"$WORK/punch.out" 2>&1 &
	SERVER_PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		state=$(jq_vrnic puncher "v.get('state')" 2>/dev/null)
		[ "$state" = failed ] && break
		sleep 0.1
	done
	sed 's/^/  attacker | /' "$WORK/punch.out"
	wait "$hpid"
	check "the tenant's application saw DEVICE_FATAL, errors for its work and control verbs, no hang (exit $?)" \
		grep -q '^FATAL' "$WORK/hold.out"
	sed 's/^/  application | /' "$WORK/hold.out"
	check "and all its checks passed" bash -c "! grep -q 'FAIL' '$WORK/hold.out'"
	check "vrnic show says the vRNIC failed (state: $state)" test "$state" = failed
	check "the daemon logged the failure, naming the vRNIC" grep -qE 'vrnic puncher \(tenant tp\) FAILED' "$WORK/unirdmad.log"
	check "the daemon is alive" daemon_alive
	victim_traffic after
	check "the other tenant's verified traffic passes" test $? = 0
	check "the failed vRNIC can be deleted" "$UNIRDMA" vrnic delete puncher
	checks_result
}

# A VM's guest RAM is in the same bounded place: QEMU (the tenant's process on
# the host) grows guest-ram and writes until ENOSPC.
case_vm_growth() {
	local ram=$((16 << 20)) limit dir out wrote err
	require_probe
	"$UNIRDMA" vrnic create vmhog --tenant tv --ip "10.84.$SUBNET.1/24" --vm --vm-ram 16M >/dev/null ||
		die "vrnic create vmhog failed"
	dir=$(jq_vrnic vmhog "v['dir']")
	limit=$((CTRL_BYTES + ram + (256 << 20)))
	"$PROBE" grow "$dir/guest-ram" "$limit" >"$WORK/vmgrow.out" 2>&1
	sed 's/^/  qemu | /' "$WORK/vmgrow.out"
	out=$(grep '^WROTE' "$WORK/vmgrow.out")
	wrote=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$out")
	err=$(sed -n 's/.*errno=\([0-9]*\).*/\1/p' <<<"$out")
	check "writes into the grown guest RAM stop with ENOSPC" test "${err:-0}" = 28
	check "at most control part + guest RAM went in ($wrote bytes)" test "${wrote:-$limit}" -le $((CTRL_BYTES + ram))
	check "the daemon is alive" daemon_alive
	check "the VM vRNIC can be deleted" "$UNIRDMA" vrnic delete vmhog
	checks_result
}

add_case name_reuse case_name_reuse
add_case growth case_growth
add_case shrink case_shrink
add_case punch case_punch
add_case vm_growth case_vm_growth
run_cases "$@"

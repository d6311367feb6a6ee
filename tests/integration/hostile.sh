#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# hostile.sh: a hostile tenant cannot hurt the daemon or another tenant.
#
# tests/tools/hostile runs in a container of its own vRNIC for
# $UNIRDMA_HOSTILE_TIME seconds (default 9): it checks that garbage gets
# errors, then writes random and adversarial bytes into every part of its
# region (mailboxes, sequence numbers, ring indices, WQEs, SGEs, keys,
# lengths, doorbells, header attributes) while making verbs calls and raw
# control requests, in child processes that may crash, and at the end
# truncates its region file. Meanwhile two containers of a victim tenant
# (vRNICs v2a, v2b of tenant t2) run verified traffic, round after round:
# ibv_rc_pingpong -c (validates every buffer), ib_write_bw, ib_send_bw, and
# t_opcodes (every opcode, both sides' memory checked byte for byte) on the
# host against the same two vRNICs.
#   other_tenant  the hostile vRNIC is in another tenant; it also sprays
#                 SENDs (no GRH) at every QPN near its own (--spray
#                 --isolated), and a second hostile program, on the host, of
#                 a second vRNIC of the same tenant (vs: vh's region is
#                 being scribbled on, so a program sharing it fails at
#                 random), sprays the victims' real QPNs, which this
#                 script reads from `unirdma vrnic show --json` as the
#                 operator every 0.2 s (QPNs are random: none are near its
#                 own): none may be acknowledged (--spray-qpns FILE --isolated)
#   same_tenant   the hostile vRNIC is a third vRNIC of the victims' tenant:
#                 it may only hurt its own vRNIC. No spray here: within a
#                 tenant a QP reaches any QP by its QPN (isolation.sh's
#                 same_tenant case relies on that), so SENDs to the victims'
#                 QPNs would be delivered by design
#                 (`hostile --spray-only` shows that on its own).
# Passes when the hostile tenant saw errors for its garbage (its exit code),
# every victim run succeeded, the daemon is alive and answers `unirdma daemon
# ping`, a last clean run between the victims passes, and the daemon's log
# has no sanitizer report (a sanitizer build of the daemon makes them: make
# asan-test, or UNIRDMA_BINDIR=build-asan/bin for the daemon alone).
. "$(dirname "$0")/lib.sh"

HOSTILE_TIME=${UNIRDMA_HOSTILE_TIME:-9}
CASE_SETUP=setup_victims

setup_victims() {
	require_root
	start_daemon
	VR_A=v2a VR_B=v2b IP_A=10.78.$SUBNET.1 IP_B=10.78.$SUBNET.2
	"$UNIRDMA" vrnic create "$VR_A" --tenant t2 --ip "$IP_A/24" >/dev/null || die "vrnic create $VR_A failed"
	"$UNIRDMA" vrnic create "$VR_B" --tenant t2 --ip "$IP_B/24" >/dev/null || die "vrnic create $VR_B failed"
	say "victims: $VR_A $IP_A/24, $VR_B $IP_B/24 (tenant t2, state dir $STATE)"
}

# t_opcodes against the two victim vRNICs, from the host.
victim_opcodes() {
	local dev=$WORK/victim-devs v
	mkdir -p "$dev"
	for v in "$VR_A" "$VR_B"; do
		ln -sfn "$("$UNIRDMA" vrnic show "$v" | awk '/^dir:/ { print $2 }')" "$dev/$v"
	done
	say "+ t_opcodes on $VR_A and $VR_B (host)"
	UNIRDMA_DEVDIR=$dev UNIRDMA_TEST_DEV0=$VR_A UNIRDMA_TEST_DEV1=$VR_B UNIRDMA_TEST_TIME_SCALE=4 \
		LD_LIBRARY_PATH="$UNIRDMA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout -k 5 60 "$BUILD/tests/t_opcodes" >"$WORK/opcodes.out" 2>&1
	local rc=$?
	sed 's/^/  | /' "$WORK/opcodes.out" | tail -n 5
	return $rc
}

# One round of the victims' verified traffic; returns nonzero on any failure.
victim_round() {
	local n=$1 fails=0
	say "--- victim round $n"
	run_pair "ibv_rc_pingpong -g 0 -c -n 3000" "ibv_rc_pingpong -g 0 -c -n 3000 $IP_A" >"$WORK/v$n.pp" 2>&1 ||
		{ fails=$((fails + 1)); cat "$WORK/v$n.pp"; }
	grep -E '^\s*\|.*(bytes in|iters in)' "$WORK/v$n.pp" | head -n 2
	run_pair "ib_write_bw -F -n 2000" "ib_write_bw -F -n 2000 $IP_A" >"$WORK/v$n.wbw" 2>&1 ||
		{ fails=$((fails + 1)); cat "$WORK/v$n.wbw"; }
	run_pair "ib_send_bw -F -n 2000" "ib_send_bw -F -n 2000 $IP_A" >"$WORK/v$n.sbw" 2>&1 ||
		{ fails=$((fails + 1)); cat "$WORK/v$n.sbw"; }
	victim_opcodes || fails=$((fails + 1))
	say "victim round $n: $([ "$fails" = 0 ] && echo ok || echo "$fails FAILED")"
	[ "$fails" = 0 ]
}

# sanitizer_reports LOG: lines of sanitizer reports in a log.
sanitizer_reports() {
	grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:|SUMMARY: .*Sanitizer' "$1"
}

# victim_qpns: the QPNs of the victims' QPs now, one per line.
victim_qpns() {
	local v
	for v in "$VR_A" "$VR_B"; do
		"$UNIRDMA" --json vrnic show "$v" | jq -r '.vrnic.qp_list[]?.qpn'
	done
}

# spray_victims TENANT IP: a host-side hostile --spray-only of a new vRNIC vs of
# TENANT aimed at the victims' QPNs (file refreshed by the case's loop); sets SPID.
spray_victims() {
	local dev=$WORK/hostile-devs
	mkdir -p "$dev"
	# (it sprays without a GRH, by QPN alone: allowed with --grhless-av on)
	"$UNIRDMA" vrnic create vs --tenant "$1" --ip "$2/24" --grhless-av on >/dev/null || die "vrnic create vs failed"
	ln -sfn "$("$UNIRDMA" vrnic show vs | awk '/^dir:/ { print $2 }')" "$dev/vs"
	victim_qpns >"$WORK/victim-qpns"
	UNIRDMA_DEVDIR=$dev LD_LIBRARY_PATH="$UNIRDMA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$BUILD/tools/hostile" -t $((HOSTILE_TIME > 8 ? HOSTILE_TIME - 4 : 4)) --spray-only --isolated \
		--spray-qpns "$WORK/victim-qpns" >"$WORK/spray.out" 2>&1 &
	SPID=$!
	SERVER_PIDS+=("$SPID")
	(
		while kill -0 "$SPID" 2>/dev/null; do
			victim_qpns >"$WORK/victim-qpns.new" && mv "$WORK/victim-qpns.new" "$WORK/victim-qpns"
			sleep 0.2
		done
	) &
	SERVER_PIDS+=("$!")
}

case_hostile() {
	local tenant=$1 hip=$2.$SUBNET.9 flags=$3 spray=${4:-} hpid hrc vr=0 vfail=0 r src SPID=
	require_prog ibv_rc_pingpong ib_write_bw ib_send_bw
	[ -x "$BUILD/tools/hostile" ] || die "$BUILD/tools/hostile is not built (run make)"
	[ -x "$BUILD/tests/t_opcodes" ] || die "$BUILD/tests/t_opcodes is not built (run make)"
	# --grhless-av on: the hostile tenant may also aim by QPN alone (no GRH),
	# the widest door an operator can open
	"$UNIRDMA" vrnic create vh --tenant "$tenant" --ip "$hip/24" --grhless-av on >/dev/null ||
		die "vrnic create vh failed"
	say "hostile: vh $hip/24 (tenant $tenant), $HOSTILE_TIME s, flags: $flags"

	# shellcheck disable=SC2086 # flags is a word list
	"$UNIRDMA" exec vh -- $LINEBUF "$BUILD/tools/hostile" -t "$HOSTILE_TIME" $flags >"$WORK/hostile.out" 2>&1 &
	hpid=$!
	SERVER_PIDS+=("$hpid")
	[ -n "$spray" ] && spray_victims "$tenant" "$2.$SUBNET.10"
	while kill -0 "$hpid" 2>/dev/null; do
		vr=$((vr + 1))
		victim_round "$vr" || vfail=$((vfail + 1))
		daemon_alive || break
	done
	wait "$hpid"
	hrc=$?
	say "--- hostile tenant output (exit code $hrc) ---"
	sed 's/^/  | /' "$WORK/hostile.out"

	check "the hostile tenant ran and saw errors for its garbage (exit code $hrc)" test "$hrc" = 0
	if [ -n "$spray" ]; then
		wait "$SPID"
		src=$?
		say "--- the victims' QPNs sprayed from the host (exit code $src) ---"
		grep -v '^spray: 0 SENDs' "$WORK/spray.out" | tail -n 5 | sed 's/^/  | /'
		check "SENDs reached the victims' QPNs ($(grep -c '^spray: [1-9]' "$WORK/spray.out") rounds)" \
			grep -q '^spray: [1-9]' "$WORK/spray.out"
		# its exit code may be a SIGBUS: the hostile tenant in the container
		# truncates the region they share at its end
		check "no SEND to a victim's QPN was acknowledged (exit code $src)" \
			bash -c "grep -q '^sprayed SENDs to QPNs not ours: [0-9]*, acknowledged 0\$' '$WORK/spray.out' &&
				 ! grep -q 'was acknowledged' '$WORK/spray.out'"
	fi
	check "the daemon is alive" daemon_alive
	check "the daemon answers unirdma daemon ping" "$UNIRDMA" daemon ping
	check "the victims ran $vr rounds of verified traffic during the attack" test "$vr" -ge 1
	check "every victim round succeeded ($vfail failed)" test "$vfail" = 0
	if daemon_alive; then
		say "--- after the attack: one more victim round"
		victim_round after
		r=$?
		check "the victims still work after the attack" test "$r" = 0
		check "the hostile vRNIC can still be deleted" "$UNIRDMA" vrnic delete vh
	fi
	if sanitizer_reports "$WORK/unirdmad.log" >/dev/null; then
		say "sanitizer reports in the daemon's log:"
		sanitizer_reports "$WORK/unirdmad.log" | head -n 20 | sed 's/^/  | /'
		grep -A 30 -m 1 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/unirdmad.log" |
			sed 's/^/  | /'
	fi
	check "no sanitizer report in the daemon's log" bash -c "! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:' '$WORK/unirdmad.log'"
	checks_result
}

add_case other_tenant case_hostile th 10.79 "--spray --isolated" spray_victims
add_case same_tenant case_hostile t2 10.78 ""
run_cases "$@"

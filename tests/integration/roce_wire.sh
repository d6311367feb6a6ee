#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# roce_wire.sh: RoCEv2 packets as the codec (common/roce.c) builds them, on a
# real wire: tests/tools/roce_inject sends them on the loopback of a private
# network namespace (unshare -n), tshark captures them, and three checkers
# read the capture:
#   - tshark's InfiniBand dissector: every field as given, no malformed frame;
#   - tests/tools/roce_pcapcheck: the ICRC with the captured IP ID (our code),
#     the headers parse, the receive path's ID solver finds the ID;
#   - ../shared/tools/roce_icrc.lua, an independent ICRC checker (Lua), when
#     it is there ($UNIRDMA_ROCE_ICRC_LUA, or ../shared beside the repo or its
#     main worktree); without it that check alone is skipped.
# Cases:
#   fields      one packet of each header layout; tshark shows what was sent
#   sizes       payloads of 0..9000 bytes, every pad count (ICRC over long
#               packets: the PCLMUL path, checked by the Lua one)
#   bad_icrc    --bad-icrc frames are found, and only they
#   malformed   TVer 1, pad on a MIDDLE, an unknown opcode: malformed
#   ip_id       IP IDs other than 0 (raw socket, as rxe's hashed IDs): the
#               ICRC covers them and roce_icrc_check's solver finds them
#   pcapng_any  a pcapng capture on "any" (Linux cooked frames)
#   all_opcodes one packet of each of the 25 opcodes
#   spoof_scan  --spoof (a source address the namespace does not have) and
#               --count with --dqpn-step/--psn-step (a QPN scan)
# Needs root (namespaces) and tshark (scripts/install-deps.sh); skips without.
. "$(dirname "$0")/lib.sh"

CASE_SETUP=setup_wire
INJECT=$BUILD/tools/roce_inject
PCAPCHECK=$BUILD/tools/roce_pcapcheck

setup_wire() {
	require_root
	require_prog tshark unshare ip
	[ -x "$INJECT" ] && [ -x "$PCAPCHECK" ] || die "$INJECT or $PCAPCHECK is not built (run make)"
	W=$(mktemp -d /tmp/unirdma-roce.XXXXXX) || die "mktemp failed"
	UPID=
	trap 'rc=$?; [ -n "$UPID" ] && kill -TERM "$UPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; exit $rc' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# The independent checker, if any.
find_lua() {
	local c gcd
	gcd=$(git -C "$TOP" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
	for c in "${UNIRDMA_ROCE_ICRC_LUA:-}" "$TOP/../shared/tools/roce_icrc.lua" \
		${gcd:+"$(dirname "$gcd")/../shared/tools/roce_icrc.lua"}; do
		[ -n "$c" ] && [ -f "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}

# capture N IFACE FORMAT: runs the roce_inject command lines of $W/inject
# (arguments after "roce_inject", one packet set per line; DST is 127.0.0.1,
# SRC too unless the line starts with SRC=a.b.c.d) in a fresh network namespace while tshark captures on IFACE, and
# leaves the frames to UDP 4791 in $W/cap (FORMAT pcap or pcapng); there must
# be N.  Start and end are marked by datagrams to port 47999 that the capture
# must show (tshark says "Capturing" before its filter is in place).
capture() {
	local n=$1 ifc=$2 fmt=$3 got
	rm -f "$W/cap" "$W/raw"
	timeout -k 5 60 unshare -n bash -c '
		set -u
		W=$1 IFC=$2 FMT=$3 INJECT=$4
		ip link set lo up || exit 1
		tshark -i "$IFC" -f "udp dst port 4791 or udp dst port 47999" -l -P -F "$FMT" -w "$W/raw" \
			>"$W/tshark.out" 2>"$W/tshark.log" &
		tp=$!
		trap "kill $tp 2>/dev/null" EXIT
		# mark: send to 47999 until the capture has K of them
		mark() {
			local i
			for ((i = 0; i < 200; i++)); do
				echo mark >/dev/udp/127.0.0.1/47999
				sleep 0.05
				[ "$(grep -c 47999 "$W/tshark.out")" -ge "$1" ] && return 0
			done
			echo "capture: tshark did not see the mark"
			exit 1
		}
		mark 1
		while read -r line; do
			[ -n "$line" ] || continue
			src=127.0.0.1
			case $line in SRC=*) src=${line%% *}; src=${src#SRC=}; line=${line#* } ;; esac
			eval "\"\$INJECT\" -q --src $src --dst 127.0.0.1 $line" ||
				{ echo "roce_inject $line: failed"; exit 1; }
		done <"$W/inject"
		mark "$(($(grep -c 47999 "$W/tshark.out") + 1))"
		kill -INT $tp
		wait $tp
		trap - EXIT
	' capture "$W" "$ifc" "$fmt" "$INJECT" &
	UPID=$!
	wait "$UPID"
	local rc=$?
	UPID=
	[ "$rc" = 0 ] || { sed 's/^/  | /' "$W/tshark.log"; return 1; }
	tshark -r "$W/raw" -Y 'udp.dstport == 4791' -F "$fmt" -w "$W/cap" 2>/dev/null || { say "no capture"; return 1; }
	got=$(tshark -r "$W/cap" 2>/dev/null | wc -l)
	say "captured $got RoCE frames"
	[ "$got" = "$n" ] || { say "  want $n"; return 1; }
}

# pcapcheck WANT_RC WANT_FIRST_LINE: roce_pcapcheck's verdict on $W/cap.
pcapcheck() {
	local rc
	"$PCAPCHECK" -v "$W/cap" >"$W/pcapcheck.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$W/pcapcheck.out"
	[ "$rc" = "$1" ] && [ "$(grep "^frames " "$W/pcapcheck.out")" = "$2" ]
}

# fields FIELD...: tshark's fields of each frame of $W/cap, tab separated.
fields() {
	local a=() f
	for f in "$@"; do a+=(-e "$f"); done
	tshark --disable-protocol rpcordma -r "$W/cap" -T fields "${a[@]}" 2>/dev/null
}

# same WANT GOT: compares two texts, shows both when they differ.
same() {
	[ "$1" = "$2" ] && return 0
	say "    want:"
	printf '%s\n' "$1" | sed 's/^/    | /'
	say "    got:"
	printf '%s\n' "$2" | sed 's/^/    | /'
	return 1
}

no_malformed() {
	local n
	n=$(tshark --disable-protocol rpcordma -r "$W/cap" -Y '_ws.malformed || _ws.expert.severity >= "warning"' 2>/dev/null | wc -l)
	[ "$n" = 0 ] || { tshark --disable-protocol rpcordma -r "$W/cap" -Y _ws.malformed 2>/dev/null | sed 's/^/    | /'; return 1; }
}

# lua_icrc WANT: the independent checker's roce_icrc.ok per frame ("1 1 0").
lua_icrc() {
	local lua got
	if ! lua=$(find_lua); then
		say "  (independent check skipped: ../shared/tools/roce_icrc.lua not found; set UNIRDMA_ROCE_ICRC_LUA)"
		return 0
	fi
	got=$(tshark -X lua_script:"$lua" --disable-protocol rpcordma -r "$W/cap" -T fields -e roce_icrc.ok 2>/dev/null | tr '\n' ' ')
	same "$1" "${got% }"
}

case_fields() {
	cat >"$W/inject" <<'EOF'
--opcode RC_WRITE_ONLY_IMM --dqpn 0x123 --psn 77 --va 0x1000 --rkey 0xabc --imm 0xdeadbeef --payload-byte 0x5a --payload-len 37 --ackreq
--opcode UD_SEND_ONLY_IMM --dqpn 0x5 --psn 0xffffff --qkey 0x80010000 --sqpn 0x42 --imm 7 --payload-len 8
--opcode ACK --dqpn 0xabf --psn 0x066c29 --syndrome 0x61 --msn 9
--opcode RC_ATOMIC_ACK --dqpn 0x11 --psn 3 --syndrome 0x1f --msn 0xffffff --orig 0x1122334455667788
--opcode CMP_SWAP --dqpn 0x11 --psn 4 --va 0xfffffffffffffff8 --rkey 9 --swap 10 --cmp 11 --ackreq
--opcode FETCH_ADD --dqpn 0x11 --psn 5 --va 16 --rkey 0x99 --swap 0x8000000000000000
--opcode READ_REQUEST --dqpn 0x11 --psn 6 --va 0x2000 --rkey 0x1234 --len 65536 --ackreq
--opcode SEND_ONLY_INV --dqpn 0x11 --psn 7 --ieth 0xcafe --payload-len 3 --se --ackreq
--opcode SEND_MIDDLE --dqpn 0x11 --psn 8 --payload-len 1024 --pkey 0x8001 --mig
--opcode READ_RESP_FIRST --dqpn 0x11 --psn 9 --syndrome 0x1f --msn 2 --payload-len 256
EOF
	capture 10 lo pcap || return 1
	check "roce_pcapcheck: 10 frames, ICRCs right, all parse" pcapcheck 0 "frames 10 bad_icrc 0 malformed 0"
	check "no malformed frame in tshark" no_malformed
	check "the independent ICRC check" lua_icrc "1 1 1 1 1 1 1 1 1 1"
	check "BTH" same "$(
		cat <<'EOF'
11	0	0	3	0	65535	0x000123	1	77
101	0	0	0	0	65535	0x000005	0	16777215
17	0	0	0	0	65535	0x000abf	0	420905
18	0	0	0	0	65535	0x000011	0	3
19	0	0	0	0	65535	0x000011	1	4
20	0	0	0	0	65535	0x000011	0	5
12	0	0	0	0	65535	0x000011	1	6
23	1	0	1	0	65535	0x000011	1	7
1	0	1	0	0	32769	0x000011	0	8
13	0	0	0	0	65535	0x000011	0	9
EOF
	)" "$(fields infiniband.bth.opcode infiniband.bth.se infiniband.bth.m infiniband.bth.padcnt \
		infiniband.bth.tver infiniband.bth.p_key infiniband.bth.destqp infiniband.bth.a infiniband.bth.psn)"
	# (tshark shows AtomicETH's VA and R_Key in the reth fields)
	check "RETH, DETH, ImmDt, IETH" same "$(
		cat <<'EOF'
0x0000000000001000	0x00000abc	37			deadbeef	
			0x0000000080010000	0x00000042	00000007	
						
						
0xfffffffffffffff8	0x00000009					
0x0000000000000010	0x00000099					
0x0000000000002000	0x00001234	65536				
						0000cafe
						
						
EOF
	)" "$(fields infiniband.reth.va infiniband.reth.r_key infiniband.reth.dmalen infiniband.deth.q_key \
		infiniband.deth.srcqp infiniband.immdt infiniband.ieth | sed -E 's/([0-9a-f]{8}),\1/\1/')"
	check "AETH, AtomicETH, AtomicAckETH" same "$(
		cat <<'EOF'
				
				
97	9			
31	16777215			1234605616436508552
		10	11	
		9223372036854775808	0	
				
				
				
31	2			
EOF
	)" "$(fields infiniband.aeth.syndrome infiniband.aeth.msn infiniband.atomiceth.swapdt \
		infiniband.atomiceth.cmpdt infiniband.atomicacketh.origremdt)"
	check "payload sizes" same "$(printf '%s\n' 76 36 20 28 44 44 32 24 1040 276)" \
		"$(tshark -r "$W/cap" -T fields -e udp.length 2>/dev/null | awk '{ print $1 - 8 }')"
	checks_result
}

case_sizes() {
	local s
	: >"$W/inject"
	for s in 0 1 2 3 4 5 63 64 65 127 128 1023 1024 1025 4093 4096 8999; do
		echo "--opcode SEND_ONLY --dqpn 0x11 --psn $s --payload-len $s --payload-byte 0xa5 --ackreq" >>"$W/inject"
		echo "--opcode WRITE_LAST_IMM --dqpn 0x12 --psn $s --payload-len $s --imm 1" >>"$W/inject"
	done
	capture 34 lo pcap || return 1
	check "roce_pcapcheck: 34 frames, ICRCs right" pcapcheck 0 "frames 34 bad_icrc 0 malformed 0"
	check "no malformed frame in tshark" no_malformed
	check "the independent ICRC check" lua_icrc "$(printf '1 %.0s' {1..34} | sed 's/ $//')"
	check "pad counts" same "$(for s in 0 1 2 3 4 5 63 64 65 127 128 1023 1024 1025 4093 4096 8999; do
		echo "$(((-s) & 3))"
		echo "$(((-s) & 3))"
	done)" "$(fields infiniband.bth.padcnt)"
	checks_result
}

case_bad_icrc() {
	cat >"$W/inject" <<'EOF'
--opcode SEND_ONLY --dqpn 0x11 --psn 1 --payload-len 100
--opcode SEND_ONLY --dqpn 0x11 --psn 2 --payload-len 100 --bad-icrc
--opcode ACK --dqpn 0x11 --psn 3 --syndrome 0x1f
--opcode ACK --dqpn 0x11 --psn 4 --syndrome 0x1f --bad-icrc
--opcode READ_RESP_ONLY --dqpn 0x11 --psn 5 --payload-len 5000
EOF
	capture 5 lo pcap || return 1
	check "roce_pcapcheck: 2 bad ICRCs, exit 1" pcapcheck 1 "frames 5 bad_icrc 2 malformed 0"
	check "roce_pcapcheck names frames 2 and 4" same "frame 2: bad ICRC
frame 4: bad ICRC" "$(grep '^frame ' "$W/pcapcheck.out")"
	check "the independent ICRC check agrees" lua_icrc "1 0 1 0 1"
	checks_result
}

case_malformed() {
	cat >"$W/inject" <<'EOF'
--opcode SEND_ONLY --dqpn 0x11 --psn 1 --payload-len 8 --set 1=0x01
--opcode WRITE_MIDDLE --dqpn 0x11 --psn 2 --payload-len 7 --pad 1
--opcode SEND_ONLY --dqpn 0x11 --psn 3 --payload-len 8 --set 0=0x2a
--opcode ACK --dqpn 0x11 --psn 4 --payload-len 4
--opcode SEND_ONLY --dqpn 0x11 --psn 5 --payload-len 8
EOF
	capture 5 lo pcap || return 1
	check "roce_pcapcheck: 4 malformed, exit 1" pcapcheck 1 "frames 5 bad_icrc 0 malformed 4"
	check "roce_pcapcheck names frames 1 to 4" same "$(printf 'frame %d: RoCE headers do not parse\n' 1 2 3 4)" \
		"$(grep '^frame ' "$W/pcapcheck.out")"
	check "their ICRCs are right all the same (independent check)" lua_icrc "1 1 1 1 1"
	checks_result
}

case_ip_id() {
	cat >"$W/inject" <<'EOF'
--opcode ACK --dqpn 0xabf --psn 0x066c29 --syndrome 0x1f --msn 1 --ip-id 0x5c85 --sport 63149
--opcode SEND_ONLY --dqpn 0x11 --psn 1 --payload-len 64 --ip-id 1
--opcode WRITE_ONLY --dqpn 0x11 --psn 2 --va 0x10 --rkey 5 --payload-len 3000 --ip-id 0xffff
--opcode UD_SEND_ONLY --dqpn 0x11 --psn 3 --qkey 0x80010000 --sqpn 1 --payload-len 9 --ip-id 0x8000
--opcode SEND_ONLY --dqpn 0x11 --psn 4 --payload-len 64 --ip-id 0x1234 --bad-icrc
EOF
	capture 5 lo pcap || return 1
	check "the IP IDs went out as given" same "0x5c85 0x0001 0xffff 0x8000 0x1234" \
		"$(tshark -r "$W/cap" -T fields -e ip.id 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
	check "roce_pcapcheck: ICRCs right with the captured IDs, the solver finds them" \
		pcapcheck 1 "frames 5 bad_icrc 1 malformed 0"
	check "solver_mismatch 0" grep -qx 'solver_mismatch 0' "$W/pcapcheck.out"
	check "the independent ICRC check agrees" lua_icrc "1 1 1 1 0"
	checks_result
}

case_pcapng_any() {
	cat >"$W/inject" <<'EOF'
--opcode SEND_FIRST --dqpn 0x11 --psn 1 --payload-len 1024
--opcode SEND_LAST_IMM --dqpn 0x11 --psn 2 --payload-len 10 --imm 5 --ackreq
EOF
	capture 2 any pcapng || return 1
	check "a pcapng file" same "0a0d0d0a" "$(od -An -tx1 -N4 "$W/cap" | tr -d ' \n')"
	check "Linux cooked frames" grep -q '^sll' <(tshark -r "$W/cap" -T fields -e frame.protocols 2>/dev/null)
	check "roce_pcapcheck reads it" pcapcheck 0 "frames 2 bad_icrc 0 malformed 0"
	check "per-opcode counts" same "opcode RC_SEND_FIRST 1
opcode RC_SEND_LAST_IMM 1" "$(grep '^opcode' "$W/pcapcheck.out")"
	check "the independent ICRC check" lua_icrc "1 1"
	checks_result
}

case_spoof_scan() {
	cat >"$W/inject" <<'EOF'
SRC=10.99.0.7 --spoof --opcode SEND_ONLY --dqpn 0x11 --psn 1 --payload-len 16
--opcode WRITE_ONLY --dqpn 0x20 --psn 100 --va 0x1000 --rkey 7 --payload-len 8 --count 4 --dqpn-step 3 --psn-step 2
EOF
	capture 5 lo pcap || return 1
	check "roce_pcapcheck: ICRCs right (also for the forged source)" pcapcheck 0 "frames 5 bad_icrc 0 malformed 0"
	check "sources, QPNs and PSNs" same "10.99.0.7	0x000011	1
127.0.0.1	0x000020	100
127.0.0.1	0x000023	102
127.0.0.1	0x000026	104
127.0.0.1	0x000029	106" "$(fields ip.src infiniband.bth.destqp infiniband.bth.psn)"
	check "the independent ICRC check" lua_icrc "1 1 1 1 1"
	checks_result
}

# every opcode the codec knows, with the fields its headers carry: tshark
# dissects each as sent, with no malformed frame (pad, lengths, header order)
ALL_OPS="0x00 0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08 0x09 0x0a 0x0b 0x0c 0x0d 0x0e 0x0f 0x10 0x11 0x12 0x13 0x14 0x16 0x17 0x64 0x65"
case_all_opcodes() {
	local op pay
	: >"$W/inject"
	for op in $ALL_OPS; do
		# READ_REQUEST, ACK, ATOMIC_ACK and the atomics carry no payload
		# FIRST and MIDDLE packets carry whole 4-byte words (no pad)
		case $op in
		0x0c | 0x11 | 0x12 | 0x13 | 0x14) pay= ;;
		0x00 | 0x01 | 0x06 | 0x07 | 0x0d | 0x0e) pay="--payload-len 8 --payload-byte 0x61" ;;
		*) pay="--payload-len 5 --payload-byte 0x61" ;;
		esac
		echo "--opcode $op --dqpn 0x33 --psn $((op)) --va 0x4000 --rkey 0x77 --len 4096 --imm 9 --ieth 0x55" \
			"--qkey 0x80010000 --sqpn 0x21 --syndrome 0x1f --msn 3 --swap 1 --cmp 2 --orig 5 $pay" >>"$W/inject"
	done
	capture 25 lo pcap || return 1
	check "roce_pcapcheck: 25 frames, ICRCs right, all parse" pcapcheck 0 "frames 25 bad_icrc 0 malformed 0"
	check "one of each opcode" same "25" "$(grep -c '^opcode .* 1$' "$W/pcapcheck.out")"
	check "no malformed frame in tshark" no_malformed
	check "tshark's opcodes" same "$(for op in $ALL_OPS; do echo $((op)); done)" "$(fields infiniband.bth.opcode)"
	check "tshark's PSNs" same "$(for op in $ALL_OPS; do echo $((op)); done)" "$(fields infiniband.bth.psn)"
	check "the independent ICRC check" lua_icrc "$(printf '1 %.0s' {1..25} | sed 's/ $//')"
	checks_result
}

add_case fields case_fields
add_case sizes case_sizes
add_case bad_icrc case_bad_icrc
add_case malformed case_malformed
add_case ip_id case_ip_id
add_case pcapng_any case_pcapng_any
add_case spoof_scan case_spoof_scan
add_case all_opcodes case_all_opcodes
run_cases "$@"

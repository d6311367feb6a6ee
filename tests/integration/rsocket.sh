#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rsocket.sh: Debian's unmodified rsockets programs (rdmacm-utils: rstream,
# riostream, rcopy, udpong) in containers of two vRNICs through our
# librdmacm.so.1's rsockets (lib/rdmacm/rsocket*.c): streams over RC QPs
# set up by the IB CM, datagrams over UD QPs.
. "$(dirname "$0")/lib.sh"

# rstream verifies the data itself (-T v); its result line names the size.
# Default: nonblocking rsend/rrecv (MSG_DONTWAIT); -T b: blocking with
# MSG_WAITALL; -T a: rpoll before each call; sizes across the send ring's
# wrap, a full 64 KiB transfer and one above the receive buffer's half.
case_rstream() {
	require_prog rstream
	local s
	for s in 64 4096 100000 1000000; do
		check "rstream -S $s -C 20 -T v: both exit 0" \
			cm_pair "rstream -S $s -C 20 -T v" "rstream -s $IP_A -S $s -C 20 -T v"
		check "rstream -S $s: the client's result line" grep -Eq '^custom +[0-9.]+[kmg]? +20 ' "$PAIR_CLIENT_OUT"
	done
	checks_result
}

case_rstream_blocking() {
	require_prog rstream
	check "rstream -T b -T v (blocking): both exit 0" \
		cm_pair "rstream -S 10000 -C 50 -T b -T v" "rstream -s $IP_A -S 10000 -C 50 -T b -T v"
	check "a result line" grep -Eq '^custom +9.7k +50 ' "$PAIR_CLIENT_OUT"
	checks_result
}

case_rstream_async() {
	require_prog rstream
	check "rstream -T a -T v (rpoll): both exit 0" \
		cm_pair "rstream -S 10000 -C 50 -T a -T v" "rstream -s $IP_A -S 10000 -C 50 -T a -T v"
	check "a result line" grep -Eq '^custom +9.7k +50 ' "$PAIR_CLIENT_OUT"
	checks_result
}

# refused: an asynchronous connect (rstream's default) to a port nobody
# listens on fails in rpoll with POLLERR, and errno then says why, as
# SO_ERROR would: rstream prints "rpoll: Connection refused" (errno was
# stale before, e.g. "Resource temporarily unavailable")
case_refused() {
	require_prog rstream
	local out rc
	out=$(timeout 20 "$UNIRDMA" exec "$VR_B" -- rstream -s "$IP_A" -p 7999 -C 1 2>&1)
	rc=$?
	sed 's/^/  | /' <<<"$out"
	check "rstream to a port nobody listens on fails (exit code $rc), at once" test "$rc" -ne 0 -a "$rc" -ne 124
	check "rpoll's errno is the refusal" grep -q '^rpoll: Connection refused' <<<"$out"
	checks_result
}

# riostream: riomap on both sides, riowrite (plain RDMA WRITEs into the
# peer's mapping), rrecv/rsend for the handshake.
case_riostream() {
	require_prog riostream
	check "riostream -S 4096 -C 50 -T v: both exit 0" \
		cm_pair "riostream -S 4096 -C 50 -T v" "riostream -s $IP_A -S 4096 -C 50 -T v"
	check "a result line" grep -Eq '^custom +4k +50 ' "$PAIR_CLIENT_OUT"
	checks_result
}

# rcopy: a 1 MiB random file to the server (which serves until stopped).
case_rcopy() {
	require_prog rcopy sha256sum
	head -c 1048576 /dev/urandom >"$WORK/src.bin"
	check "rcopy: the client exits 0" \
		cm_pair --persistent "rcopy" "rcopy $WORK/src.bin $IP_A:$WORK/dst.bin"
	check "the copy has the source's checksum" \
		test "$(sha256sum <"$WORK/src.bin")" = "$(sha256sum <"$WORK/dst.bin" 2>/dev/null)"
	checks_result
}

# udpong: SOCK_DGRAM rsockets; the first datagrams go over UDP until both
# sides learned the other's UD QP, then UD SENDs.
# The server needs -b: it binds getaddrinfo(NULL) without AI_PASSIVE, loopback.
case_udpong() {
	require_prog udpong
	check "udpong -C 200 -S 1000: both exit 0 (the server is stopped)" \
		cm_pair --persistent --udp 7174 "udpong -b $IP_A" "udpong -s $IP_A -C 200 -S 1000"
	check "a result line" grep -Eq '^custom +1000 +200 ' "$PAIR_CLIENT_OUT"
	checks_result
}

add_case rstream case_rstream
add_case rstream_blocking case_rstream_blocking
add_case rstream_async case_rstream_async
add_case refused case_refused
add_case riostream case_riostream
add_case rcopy case_rcopy
add_case udpong case_udpong
run_cases "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fuzz.sh: bounded runs of the libFuzzer targets for the daemon's parsers of
# untrusted input (tests/fuzz, built by mk/fuzz.mk with clang,
# -fsanitize=fuzzer,address,undefined).
#   ctrl   the control-request decoder (ctrl_dispatch and its handlers), with
#          the tenant rewriting its header, mailboxes and rings in between
#   wqe    the engine's validation of WQEs, SGEs, keys, lengths, ring indices
#          and doorbells, with canaries around registered memory and a tenant
#          next door whose bytes must not change
#   roce   the RoCEv2 codec (common/roce.c) on packets from the wire: parse,
#          build(parse(p)) == p, the ICRC check and its IP ID solver
#   dir    the cluster directory client's parsers of what etcd sends (a range
#          answer and the watch stream, base64 keys and values) and the
#          engine's tables of hosts and GIDs they feed
#   cm     the IB CM message codec (lib/rdmacm/cm_mad.c) on MADs from QP1:
#          decode accepts exactly the valid ones, encode(decode(m)) == m
#          outside the reserved bits, decode(encode(x)) == x
# Each case runs its target for $UNIRDMA_FUZZ_TIME seconds (default 4) from
# a copy of the corpus in tests/fuzz/corpus/<target> (the repo corpus is never
# written) and fails on any crash, sanitizer report, leak, invariant
# violation or input that runs longer than 10 s. A failing input is kept in
# $BUILD/fuzz/crashes/; `$BUILD/fuzz/fuzz_<target> FILE` replays it.
# Longer runs: make fuzz FUZZ_SECONDS=600 (see mk/fuzz.mk).
. "$(dirname "$0")/lib.sh"

CASE_SETUP=: # no daemon: the targets run the daemon's code in-process
FUZZ_TIME=${UNIRDMA_FUZZ_TIME:-4}

# cause LOG: the line of a libFuzzer log that says what went wrong.
cause() {
	grep -m1 -E 'fuzz invariant violated|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY:' "$1" ||
		echo "(no report; see the log)"
}

fuzz_target() {
	local t=$1 bin=$BUILD/fuzz/fuzz_$1 rc crash
	require_prog clang
	[ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] ||
		skip "clang has no libFuzzer runtime (libclang-rt-14-dev, scripts/install-deps.sh)"
	# not local: the EXIT trap runs after this function returned
	fwork=$(mktemp -d /tmp/unirdma-fuzz.XXXXXX) || die "mktemp failed"
	trap 'rm -rf "$fwork"' EXIT
	say "+ make fuzz-build"
	if ! make -s -j"$(nproc)" -C "$TOP" BUILD="$BUILD" fuzz-build >"$fwork/build.log" 2>&1; then
		tail -n 30 "$fwork/build.log"
		return 1
	fi
	cp -r "$TOP/tests/fuzz/corpus/$t" "$fwork/corpus" || return 1
	mkdir -p "$fwork/artifacts"
	# Every corpus input first, in one run (a process start under the
	# sanitizers is ~0.2 s); when that run fails, each input on its own, so
	# that each known bug shows up at once (a run stops at the first).
	say "+ fuzz_$t on each of the $(ls "$fwork/corpus" | wc -l) corpus inputs"
	local f bad=0 each=()
	ASAN_OPTIONS=detect_leaks=1 timeout -k 5 60 "$bin" -timeout=10 "$fwork/corpus/"* >"$fwork/all.log" 2>&1 ||
		each=("$fwork/corpus/"*)
	for f in "${each[@]}"; do
		if ! ASAN_OPTIONS=detect_leaks=1 timeout -k 5 60 "$bin" -timeout=10 "$f" >"$fwork/one.log" 2>&1; then
			bad=$((bad + 1))
			say "  FAIL: $(basename "$f"): $(cause "$fwork/one.log")"
			mkdir -p "$BUILD/fuzz/crashes"
			cp "$f" "$BUILD/fuzz/crashes/$t-$(basename "$f")"
			say "        replay: $bin $BUILD/fuzz/crashes/$t-$(basename "$f")"
		fi
	done
	[ "$bad" = 0 ] || return 1
	say "+ fuzz_$t for ${FUZZ_TIME}s on a copy of tests/fuzz/corpus/$t"
	# detect_leaks on even under `make asan-test` (which turns it off)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$bin" -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$fwork/artifacts/" "$fwork/corpus" >"$fwork/fuzz.log" 2>&1
	rc=$?
	grep -E '^(#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|stat::new_units_added)' "$fwork/fuzz.log" | sed 's/^/  | /'
	if [ "$rc" != 0 ] || ls "$fwork/artifacts/"* >/dev/null 2>&1; then
		say "fuzz_$t failed (exit code $rc); the report:"
		grep -v '^#[0-9]' "$fwork/fuzz.log" | grep -v '^INFO:' | head -n 60 | sed 's/^/  | /'
		mkdir -p "$BUILD/fuzz/crashes"
		for crash in "$fwork/artifacts/"*; do
			[ -e "$crash" ] || continue
			cp "$crash" "$BUILD/fuzz/crashes/$t-$(basename "$crash")"
			say "input kept: $BUILD/fuzz/crashes/$t-$(basename "$crash")"
			say "replay it: $bin $BUILD/fuzz/crashes/$t-$(basename "$crash")"
		done
		say "cause: $(cause "$fwork/fuzz.log")"
		return 1
	fi
	return 0
}

add_case ctrl fuzz_target ctrl
add_case wqe fuzz_target wqe
add_case roce fuzz_target roce
add_case dir fuzz_target dir
add_case cm fuzz_target cm
run_cases "$@"

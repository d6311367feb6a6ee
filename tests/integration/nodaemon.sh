#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# nodaemon.sh: our libibverbs with no daemon and no vRNIC: ibv_devices lists
# nothing and exits cleanly, whatever the device directory looks like.
. "$(dirname "$0")/lib.sh"

setup_nodaemon() {
	require_prog ibv_devices ibv_devinfo
	[ -e "$UNIRDMA_LIBDIR/libibverbs.so.1" ] || die "$UNIRDMA_LIBDIR/libibverbs.so.1 is not built (run make)"
	WORK=$(mktemp -d /tmp/unirdma-it.XXXXXX) || die "mktemp failed"
	trap cleanup EXIT
}
CASE_SETUP=setup_nodaemon

# devices_empty DEVDIR-OR-UNSET [WRAPPER...]: ibv_devices exits 0 with no rows.
devices_empty() {
	local devdir=$1 rc
	shift
	if [ "$devdir" = unset ]; then
		say "+ ${*:+$* }ibv_devices   (UNIRDMA_DEVDIR unset)"
		env -u UNIRDMA_DEVDIR LD_LIBRARY_PATH="$UNIRDMA_LIBDIR" ${UNIRDMA_EXEC_PRELOAD:+LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD} "$@" ibv_devices >"$WORK/out" 2>&1
	else
		say "+ UNIRDMA_DEVDIR=$devdir ibv_devices"
		env UNIRDMA_DEVDIR="$devdir" LD_LIBRARY_PATH="$UNIRDMA_LIBDIR" ${UNIRDMA_EXEC_PRELOAD:+LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD} ibv_devices >"$WORK/out" 2>&1
	fi
	rc=$?
	sed 's/^/  | /' "$WORK/out"
	check "exit code 0 (got $rc)" test "$rc" = 0
	check "the header is printed" grep -q "device" "$WORK/out"
	check "no device is listed" test -z "$(device_lines "$WORK/out")"
	checks_result
}

case_our_library() {
	local p
	for p in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw qperf; do
		command -v "$p" >/dev/null || continue
		check "$p loads our libibverbs.so.1" uses_our_lib "$p"
	done
	checks_result
}

case_empty_devdir() {
	mkdir "$WORK/dev"
	devices_empty "$WORK/dev"
}

case_missing_devdir() { devices_empty "$WORK/does-not-exist"; }

case_devdir_without_regions() {
	mkdir -p "$WORK/dev/notavrnic" "$WORK/dev/.hidden"
	: >"$WORK/dev/region"
	: >"$WORK/dev/strayfile"
	ln -s "$WORK/nowhere" "$WORK/dev/danglinglink"
	devices_empty "$WORK/dev"
}

case_default_devdir() {
	# The default is /run/unirdma/dev: hide whatever the host has there.
	[ "$(id -u)" -eq 0 ] || skip "needs root for a private mount namespace"
	devices_empty unset unshare -m sh -c 'mount -t tmpfs tmpfs /run && exec "$0" "$@"'
}

case_devinfo() {
	local rc
	mkdir "$WORK/dev"
	say "+ UNIRDMA_DEVDIR=$WORK/dev ibv_devinfo"
	env UNIRDMA_DEVDIR="$WORK/dev" LD_LIBRARY_PATH="$UNIRDMA_LIBDIR" ${UNIRDMA_EXEC_PRELOAD:+LD_PRELOAD=$UNIRDMA_EXEC_PRELOAD} ibv_devinfo >"$WORK/out" 2>&1
	rc=$?
	sed 's/^/  | /' "$WORK/out"
	# rdma-core's ibv_devinfo exits 255 when it finds no device; a crash
	# would show as 128+signal.
	check "ibv_devinfo exits without a crash (got $rc)" eval '[ "$rc" -le 128 ] || [ "$rc" -ge 160 ]'
	check "it loaded (no missing symbol or version)" eval '! grep -Eq "not found \(required by|symbol lookup error" "$WORK/out"'
	check "it says there is no device" grep -q "No IB devices found" "$WORK/out"
	check "no device is shown" eval '! grep -q hca_id "$WORK/out"'
	checks_result
}

add_case our_library case_our_library
add_case empty_devdir case_empty_devdir
add_case missing_devdir case_missing_devdir
add_case devdir_without_regions case_devdir_without_regions
add_case default_devdir case_default_devdir
add_case devinfo case_devinfo
run_cases "$@"

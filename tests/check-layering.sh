#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# check-layering.sh - do the parts call only downwards (core/objects.h)?
#
#   daemon/  control plane: mailbox, handlers, vRNICs, VMs, admin, metrics
#   engine/  the RNIC: never calls daemon/; from core/ only the services below
#   core/    the object model's services: never calls engine/ or daemon/
#   lib/     the tenant's library: nothing of the daemon's
# and the engine has no writable global (its state is in the objects).
#
# Calls are read from the objects of a build (nm: each object's undefined
# symbols against the symbols every part defines), includes from the sources.
#
# Usage: tests/check-layering.sh [BUILD_DIR]   (default: build, or $UNIRDMA_BUILD)
# Exit:  0 pass, 1 fail, 77 skip (no build, no nm).

set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=${1:-${UNIRDMA_BUILD:-build}}
case $build in /*) ;; *) build=$top/$build ;; esac

# The services of core/ the engine may call.  Adding one is a design
# decision: say in core/objects.h why the RNIC needs it.
ENGINE_MAY_CALL="
	mr_by_lkey mr_by_rkey qpn_lookup mcast_next mw_by_rkey mw_unbind
	ctx_post_async ctx_notify
"

skip() { echo "SKIP: $*"; exit 77; }
command -v nm >/dev/null 2>&1 || skip "nm not installed"
command -v objdump >/dev/null 2>&1 || skip "objdump not installed"
[ -d "$build/obj/engine" ] || skip "no build in $build (make first)"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# objects PART DIR...: the objects in DIRs of sources of PART that still
# exist (a build keeps those of removed files)
objects() {
	local part=$1 d o
	shift
	for d in "$@"; do
		for o in "$d"/*.o; do
			[ -f "$o" ] && [ -f "$top/$part/$(basename "$o" .o).c" ] && echo "$o"
		done
	done
}
# nm_parts NM-OPTION OBJECT...: "source symbol" for each symbol nm lists
# (one nm for all the objects: a process start per object made this check
# take ~10 s); the source is PART/NAME.c of the object PATH/PART/NAME.o.
nm_parts() {
	local opt=$1
	shift
	[ $# -gt 0 ] || return 0
	nm -A "$opt" "$@" | awk -v want="$opt" '{
		f = $1; sub(/:.*/, "", f); n = split(f, p, "/")
		src = p[n - 1] "/" substr(p[n], 1, length(p[n]) - 2) ".c"
		if (want == "--defined-only") { if ($(NF - 1) ~ /^[TDBR]$/) print $NF, src }
		else print src, $NF
	}'
}

# defined functions and data of each part: "symbol file"
nm_parts --defined-only $(objects common "$build/obj/common") $(objects core "$build/obj/core") \
	$(objects engine "$build/obj/engine") $(objects daemon "$build/obj/daemon") | LC_ALL=C sort >"$tmp/defs"
nm_parts --defined-only $(objects lib "$build/pic/lib") | LC_ALL=C sort >"$tmp/libdefs"

# calls of one part's objects: "caller-file symbol defining-file"
calls() {
	local part=$1 defs=$2
	nm_parts --undefined-only $(objects "$part" "$build/obj/$part" "$build/pic/$part") |
		awk 'NR == FNR { def[$1] = $2; next }
		     ($2 in def) && !seen[$1 " " $2]++ { print $1, $2, def[$2] }' "$defs" - |
		LC_ALL=C sort -k1,1 -k2,2
}

calls engine "$tmp/defs" >"$tmp/engine"
calls core "$tmp/defs" >"$tmp/core"
[ -s "$tmp/engine" ] || fail "the engine's objects call nothing of ours: is $build complete?"

# engine -> daemon: never; engine -> core: only the listed services
may=" $(echo $ENGINE_MAY_CALL) "
while read -r from sym def; do
	case $def in
	daemon/*) fail "$from uses $sym of the control plane ($def)" ;;
	core/*)
		case $may in
		*" $sym "*) ;;
		*) fail "$from calls $sym() ($def), not a listed engine service" ;;
		esac ;;
	esac
done <"$tmp/engine"

# core -> engine or daemon: never
while read -r from sym def; do
	case $def in
	engine/* | daemon/*) fail "$from (core) calls up into $sym() ($def)" ;;
	esac
done <"$tmp/core"

# lib -> anything of the daemon's: never (it is linked alone; a shared name
# would be a copy drifting from the other)
nm_parts --undefined-only $(objects lib "$build/pic/lib") |
	awk 'NR == FNR { if ($2 !~ /^common\//) daemon[$1] = 1; next }
	     ($2 in daemon) && !seen[$1 " " $2]++ { print $1, $2 }' "$tmp/defs" - >"$tmp/lib"
while read -r from sym; do
	fail "$from uses $sym, a name the daemon defines"
done <"$tmp/lib"

# globals: the engine keeps its state in struct engine / engine_vrnic /
# engine_qp, reached through the objects it is given, never in a writable
# global (read-only tables are fine: .rodata, .data.rel.ro)
objs=$(objects engine "$build/obj/engine")
[ -z "$objs" ] || objdump -t $objs | awk '
	/file format/ { f = $1; sub(/:$/, "", f); n = split(f, p, "/"); f = "engine/" substr(p[n], 1, length(p[n]) - 2) ".c"; next }
	$3 == "O" && ($4 ~ /^\.(data|bss)(\.|$)/ && $4 !~ /^\.data\.rel\.ro/) { print f, $NF, $4 }' >"$tmp/globals"
while read -r from sym sec; do
	fail "$from keeps state in the writable global $sym ($sec)"
done <"$tmp/globals"

# includes: engine/ never includes daemon/ headers; daemon/ includes only
# engine.h of the engine's; core/ includes nothing of engine/ but engine.h
# (the types of the state embedded in its objects) and nothing of daemon/.
hdrs() { sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1"; }
for f in "$top"/engine/*.[ch]; do
	for h in $(hdrs "$f"); do
		[ -f "$top/daemon/$h" ] && fail "engine/$(basename "$f") includes daemon/$h"
	done
done
for f in "$top"/core/*.[ch]; do
	for h in $(hdrs "$f"); do
		[ -f "$top/daemon/$h" ] && fail "core/$(basename "$f") includes daemon/$h"
		[ -f "$top/engine/$h" ] && [ "$h" != engine.h ] && fail "core/$(basename "$f") includes engine/$h"
	done
done
for f in "$top"/daemon/*.[ch]; do
	for h in $(hdrs "$f"); do
		[ -f "$top/engine/$h" ] && [ "$h" != engine.h ] &&
			fail "daemon/$(basename "$f") includes engine/$h (the engine's API is engine.h)"
	done
done
for f in "$top"/lib/*.[ch]; do
	for h in $(hdrs "$f"); do
		for d in daemon engine core; do
			[ -f "$top/$d/$h" ] && [ ! -f "$top/lib/$h" ] && fail "lib/$(basename "$f") includes $d/$h"
		done
	done
done

n_engine=$(wc -l <"$tmp/engine")
n_core=$(wc -l <"$tmp/core")
if [ "$fails" -gt 0 ]; then
	echo "$fails layering violation(s)"
	exit 1
fi
echo "ok: engine makes $n_engine calls into our code, none up; core makes $n_core, none up; lib none"
awk '$3 ~ /^core\// { print "  engine service: " $1 " -> " $2 "() (" $3 ")" }' "$tmp/engine" | sort -u
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# check-exports.sh - do our libibverbs.so.1 and librdmacm.so.1 export exactly
# what rdma-core's do?
#
# Unmodified verbs programs and the rdma-core providers they load (libmlx5,
# libefa) are linked with BIND_NOW against versioned symbols, so one missing
# symbol or version node makes them fail at load time; anything extra is a
# leak of our internals into every application's namespace.
#
# Compares the defined, default-version ("name@@VERSION") dynamic symbols of
# the library, as 'VERSION name', with shared/reference/libibverbs-exports.txt,
# and checks that nothing else is defined in the dynamic symbol table, that
# the version nodes and their parent chain match rdma-core 44's, the soname,
# and that it needs no glibc symbol version above 2.28.
#
# librdmacm.so.1 (lib/rdmacm/) is checked the same way against
# shared/reference/librdmacm-exports.txt, with rdma-core's chain
# RDMACM_1.0 <- 1.1 <- 1.2 <- 1.3.  The library is told by its file name.
#
# Usage: tests/check-exports.sh [path/to/libibverbs.so.1 | path/to/librdmacm.so.1]
#        (default: both, in build/lib of the repository)
# Exit:  0 pass, 1 fail, 77 skip (library, list or objdump missing).

set -u

here=$(cd "$(dirname "$0")" && pwd)

if [ $# -eq 0 ]; then
	rc_all=77
	for l in libibverbs.so.1 librdmacm.so.1; do
		echo "== $l"
		bash "$0" "$here/../build/lib/$l"
		rc=$?
		if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
			rc_all=1
		elif [ "$rc" = 0 ] && [ "$rc_all" = 77 ]; then
			rc_all=0
		fi
	done
	exit "$rc_all"
fi

lib=$1
case $(basename "$lib") in
librdmacm.so*)
	libname=librdmacm.so.1
	list=${EXPORTS_LIST:-$here/../../shared/reference/librdmacm-exports.txt}
	chain="RDMACM_1.0 RDMACM_1.1 RDMACM_1.2 RDMACM_1.3"
	private_nodes=""
	;;
*)
	libname=libibverbs.so.1
	list=${EXPORTS_LIST:-$here/../../shared/reference/libibverbs-exports.txt}
	chain="IBVERBS_1.0 IBVERBS_1.1 IBVERBS_1.5 IBVERBS_1.6 IBVERBS_1.7 IBVERBS_1.8 IBVERBS_1.9
	       IBVERBS_1.10 IBVERBS_1.11 IBVERBS_1.12 IBVERBS_1.13 IBVERBS_1.14"
	private_nodes="IBVERBS_PRIVATE_34"
	;;
esac

skip() { echo "SKIP: $*"; exit 77; }

[ -f "$lib" ] || skip "library not found: $lib"
[ -f "$list" ] || skip "export list not found: $list"
command -v objdump >/dev/null 2>&1 || skip "objdump not installed"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! objdump -T "$lib" >"$tmp/objdump" 2>"$tmp/objdump.err"; then
	echo "FAIL: objdump -T $lib:"
	cat "$tmp/objdump.err"
	exit 1
fi

# Our own additions, in a node of our own that no program links against:
# UNIRDMA_PRIVATE_1.0 (include/unirdma/cm.h, for our librdmacm).
own=$here/$(basename "$lib" .so.1)-own-exports.txt
{ grep -v '^#' "$list"; [ ! -f "$own" ] || grep -v '^#' "$own"; } | awk 'NF == 2 { print $1, $2 }' |
	LC_ALL=C sort -u >"$tmp/expected"
awk '{ print $1 }' "$tmp/expected" | LC_ALL=C sort -u >"$tmp/expected-nodes"

# objdump -T lines look like
#   ADDR FLAGS SECTION<TAB>SIZE  VERSION [VISIBILITY] NAME
# where VERSION is "Name" for the default version, "(Name)" for a hidden
# (non-default) one and "Base" for an unversioned symbol. Version definitions
# themselves appear as *ABS* symbols named after their node.
awk -F'\t' -v out="$tmp" '
	NF < 2 { next }
	{
		nsec = split($1, left, " ")
		section = left[nsec]
		n = split($2, right, " ")
		if (n < 3 || section == "*UND*")
			next
		version = right[2]
		name = right[n]
		if (section == "*ABS*" && version == name) {
			print name > (out "/abs-nodes")
			next
		}
		if (version ~ /^\(.*\)$/)
			print substr(version, 2, length(version) - 2), name > (out "/hidden")
		else if (version == "Base")
			print name > (out "/unversioned")
		else
			print version, name > (out "/default")
	}
' "$tmp/objdump"
for f in abs-nodes hidden unversioned default; do
	touch "$tmp/$f"
	LC_ALL=C sort -u -o "$tmp/$f" "$tmp/$f"
done

fail=0
report() { # title file
	if [ -s "$2" ]; then
		echo "$1:"
		sed 's/^/  /' "$2"
		fail=1
	fi
}

LC_ALL=C comm -23 "$tmp/expected" "$tmp/default" >"$tmp/missing"
LC_ALL=C comm -13 "$tmp/expected" "$tmp/default" >"$tmp/extra"
report "missing symbols (VERSION name)" "$tmp/missing"
report "extra symbols (VERSION name)" "$tmp/extra"

# Unversioned definitions (e.g. no version script, or _edata/_end/__bss_start
# left global) are leaks.
report "unversioned symbols leaking" "$tmp/unversioned"

# A non-default version is only legitimate as an old compat alias of a symbol
# we export (rdma-core has e.g. ibv_create_qp@IBVERBS_1.0), in a known node.
: >"$tmp/bad-hidden"
ncompat=0
while read -r ver name; do
	if grep -qx "$ver" "$tmp/expected-nodes" && awk -v n="$name" '$2 == n { f = 1 } END { exit !f }' "$tmp/expected"; then
		ncompat=$((ncompat + 1))
	else
		echo "$ver $name" >>"$tmp/bad-hidden"
	fi
done <"$tmp/hidden"
[ "$ncompat" -eq 0 ] || echo "note: $ncompat compat (non-default) versions of exported symbols"
report "non-default versions leaking (VERSION name)" "$tmp/bad-hidden"

# Version nodes, their parent chain and the soname, as rdma-core defines them.
# The parents have no effect on glibc's loader, and lld does not record
# them, so a library without any parents only gets a note.
if command -v readelf >/dev/null 2>&1; then
	readelf -V -d -W "$lib" >"$tmp/readelf" 2>/dev/null
	soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$tmp/readelf")
	if [ "$soname" != "$libname" ]; then
		echo "soname is '${soname}', want '$libname'"
		fail=1
	fi
	# "NODE PARENT" per version definition, - for none.
	awk '
		/Version definition section/ { in_def = 1; next }
		/Version needs section/ { in_def = 0 }
		!in_def { next }
		/Flags: BASE/ { next }
		/Name: / { if (cur != "") print cur, "-"; cur = $NF; next }
		/Parent 1: / { print cur, $NF; cur = ""; next }
		END { if (cur != "") print cur, "-" }
	' "$tmp/readelf" | LC_ALL=C sort >"$tmp/parents"
	awk '{ print $1 }' "$tmp/parents" >"$tmp/nodes"
else
	echo "note: readelf not installed, soname and node parents not checked"
	: >"$tmp/parents"
	cp "$tmp/abs-nodes" "$tmp/nodes"
fi

LC_ALL=C comm -23 "$tmp/expected-nodes" "$tmp/nodes" >"$tmp/missing-nodes"
LC_ALL=C comm -13 "$tmp/expected-nodes" "$tmp/nodes" >"$tmp/extra-nodes"
report "missing version nodes" "$tmp/missing-nodes"
report "extra version nodes" "$tmp/extra-nodes"

prev=-
for node in $chain; do
	echo "$node $prev"
	prev=$node
done >"$tmp/want-parents"
for node in $private_nodes; do
	echo "$node -"
done >>"$tmp/want-parents"
[ ! -f "$own" ] || grep -v '^#' "$own" | awk 'NF == 2 { print $1, "-" }' | sort -u >>"$tmp/want-parents"
LC_ALL=C sort -o "$tmp/want-parents" "$tmp/want-parents"
if [ ! -s "$tmp/parents" ]; then
	:
elif awk '$2 != "-" { f = 1 } END { exit f }' "$tmp/parents"; then
	echo "note: no version node records a parent (lld?); chain not checked"
elif ! diff -u "$tmp/want-parents" "$tmp/parents" >"$tmp/parents.diff"; then
	echo "version node parents differ ('NODE PARENT', - for none):"
	sed -n '3,$p' "$tmp/parents.diff" | sed 's/^/  /'
	fail=1
fi

# The copy a container runtime injects must load in older images (glibc 2.28:
# Debian 10, RHEL 8; lib/glibc-baseline.h). Sanitizer builds are exempt.
glibc_max=2.28
if objdump -T "$lib" | grep -q '__asan_init\|__tsan_init'; then
	echo "note: a sanitizer build: its glibc symbol versions are not checked"
else
	need=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
	if [ "$(printf '%s\n%s\n' "$need" "$glibc_max" | sort -V | tail -n 1)" != "$glibc_max" ]; then
		echo "the library needs GLIBC_$need, above the baseline $glibc_max; symbols:"
		objdump -T "$lib" | awk -v v="$need" 'index($0, "GLIBC_" v ")") { print "  " $NF }'
		fail=1
	else
		echo "ok: the highest glibc version it needs is $need (baseline $glibc_max)"
	fi
fi

nexp=$(wc -l <"$tmp/expected")
ngot=$(wc -l <"$tmp/default")
if [ "$fail" -ne 0 ]; then
	echo "FAIL: $lib exports $ngot default-version symbols, want exactly the $nexp of $(basename "$list")"
	exit 1
fi
echo "ok: $lib exports exactly the $nexp symbols of $(basename "$list"), nothing else"
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build-image.sh: the guest of the VM tests (tests/integration/vm.sh).
#
#   tests/vm/build-image.sh [--build BUILD_DIR] [--out DIR] [--quiet]
#   tests/vm/build-image.sh --fetch-kernel      only fill the kernel cache
#
# Makes DIR (default BUILD_DIR/vm/image) hold
#   vmlinux     the kernel of Debian's linux-image-amd64, uncompressed (QEMU
#               boots it directly, PVH, faster than the bzImage); `vmlinuz`
#               when it could not be decompressed
#   base.cpio   an initramfs (newc, uncompressed): busybox (busybox-static),
#               tests/vm/init as /init, e1000.ko, Debian's verbs programs
#               (ibverbs-utils, perftest) with every shared library ldd finds,
#               unirdma's libibverbs.so.1 in place of rdma-core's, and
#               BUILD_DIR/vm/urd_vmtool
# A test adds its own /urd/run.sh as a second archive after base.cpio.
#
# The kernel package is fetched with `apt-get download` and unpacked with
# dpkg-deb (installing linux-image-amd64 would run the host's initramfs hook
# for a minute and change the host's /boot).  It is kept in
# $UNIRDMA_VM_CACHE (default /var/cache/unirdma/vm) across builds; so is
# the image, which is rebuilt only when an input is newer.  Needs root (device
# nodes in the archive) and, the first time, apt-get's network.  Exit 77 when
# something it needs is missing and cannot be fetched (the tests then skip).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${UNIRDMA_BUILD:-$TOP/build}
OUT=
QUIET=0
FETCH_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--fetch-kernel) FETCH_ONLY=1; shift ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--quiet) QUIET=1; shift ;;
	*) echo "usage: $0 [--build BUILD_DIR] [--out DIR] [--quiet]" >&2; exit 2 ;;
	esac
done
[[ $BUILD == /* ]] || BUILD=$TOP/$BUILD
OUT=${OUT:-$BUILD/vm/image}
CACHE=${UNIRDMA_VM_CACHE:-/var/cache/unirdma/vm}

# Programs the tests run in the guest (missing ones are left out).
PROGS=(ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong
	ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat)

log() { [ "$QUIET" = 1 ] || echo "build-image: $*" >&2; }
missing() { echo "build-image: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || missing "needs root"
for t in dpkg-deb apt-get flock; do
	command -v "$t" >/dev/null || missing "$t is not installed"
done
LIB=$BUILD/lib/libibverbs.so.1
TOOL=$BUILD/vm/urd_vmtool
# verbs tests that also run inside a guest (vm.sh verbs_in_guest)
VTESTS=(t_resize_cq t_rereg t_mw)

# ---- the kernel ------------------------------------------------------------

# fetch_kernel: $CACHE/vmlinux (or vmlinuz) and $CACHE/e1000.ko.
fetch_kernel() {
	local tmp deb meta pkg img
	mkdir -p "$CACHE"
	exec 8>"$CACHE/.lock"
	flock 8
	if [ -s "$CACHE/e1000.ko" ] && { [ -s "$CACHE/vmlinux" ] || [ -s "$CACHE/vmlinuz" ]; }; then
		flock -u 8
		return 0
	fi
	tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" RETURN
	deb=$(ls "$CACHE"/linux-image-[0-9]*-amd64_*.deb 2>/dev/null | tail -n 1 || true)
	if [ -z "$deb" ]; then
		log "fetching linux-image-amd64 with apt-get download"
		(cd "$tmp" && apt-get download -q linux-image-amd64 >/dev/null 2>&1) ||
			(apt-get update -qq >/dev/null 2>&1 && cd "$tmp" && apt-get download -q linux-image-amd64 >/dev/null 2>&1) ||
			missing "apt-get download linux-image-amd64 failed (no network or no Debian archive)"
		meta=$(ls "$tmp"/linux-image-amd64_*.deb)
		# the metapackage depends on the versioned image package
		pkg=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)
		[ -n "$pkg" ] || missing "cannot tell which kernel linux-image-amd64 stands for"
		(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || missing "apt-get download $pkg failed"
		deb=$(ls "$tmp"/"$pkg"_*.deb)
		mv "$deb" "$CACHE/"
		deb=$CACHE/$(basename "$deb")
	fi
	log "unpacking $(basename "$deb")"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' '*/e1000/e1000.ko*'
	img=$(ls "$tmp"/boot/vmlinuz-* | head -n 1)
	find "$tmp" -name 'e1000.ko*' -exec cp {} "$CACHE/e1000.ko.new" \;
	case $(find "$tmp" -name 'e1000.ko*' | head -n 1) in
	*.xz) xz -dc "$CACHE/e1000.ko.new" >"$CACHE/e1000.ko" && rm "$CACHE/e1000.ko.new" ;;
	*.zst) zstd -qdc "$CACHE/e1000.ko.new" >"$CACHE/e1000.ko" && rm "$CACHE/e1000.ko.new" ;;
	*) mv "$CACHE/e1000.ko.new" "$CACHE/e1000.ko" ;;
	esac
	# vmlinux: the xz stream inside the bzImage (boots in ~2/3 of the time)
	if command -v python3 >/dev/null && python3 - "$img" "$CACHE/vmlinux.new" <<'PY'
import lzma, sys
d = open(sys.argv[1], 'rb').read()
i = d.find(b'\xfd7zXZ\x00')
if i < 0:
    sys.exit(1)
out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[i:])
if out[:4] != b'\x7fELF':
    sys.exit(1)
open(sys.argv[2], 'wb').write(out)
PY
	then
		mv "$CACHE/vmlinux.new" "$CACHE/vmlinux"
	else
		rm -f "$CACHE/vmlinux.new"
		cp "$img" "$CACHE/vmlinuz"
	fi
	basename "$img" | sed 's/^vmlinuz-//' >"$CACHE/kernel-version"
	log "kernel $(cat "$CACHE/kernel-version") cached in $CACHE"
	flock -u 8
}

# ---- the initramfs -----------------------------------------------------------

# add_file STAGE PATH [DEST]: copies PATH (following links) to DEST (default
# the same path) in STAGE.
add_file() {
	local dst=$1${3:-$2}
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	cp -L "$2" "$dst"
}

# add_prog STAGE PATH [DEST]: the program and every library ldd lists for it.
add_prog() {
	local stage=$1 prog=$2 lib
	add_file "$stage" "$prog" "${3:-}"
	while read -r lib; do
		[ -n "$lib" ] && add_file "$stage" "$lib"
	done < <(env -u LD_LIBRARY_PATH ldd "$prog" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
}

build_initramfs() {
	local stage busybox p a ours
	stage=$(mktemp -d "$OUT/stage.XXXXXX")
	# merged /usr, as on Debian 12: ldd's /lib/... paths land in usr/lib
	mkdir -p "$stage"/usr/{bin,sbin,lib,lib64} "$stage"/{dev,proc,sys,tmp,run,etc,root,urd}
	ln -s usr/bin "$stage/bin"
	ln -s usr/sbin "$stage/sbin"
	ln -s usr/lib "$stage/lib"
	ln -s usr/lib64 "$stage/lib64"
	mkdir -p "$stage/usr/lib/modules"

	busybox=$(command -v busybox) || missing "busybox is not installed (busybox-static)"
	add_prog "$stage" "$busybox"
	[ "$busybox" = /usr/bin/busybox ] || cp -L "$busybox" "$stage/usr/bin/busybox"
	for a in $("$busybox" --list-full); do
		a=/$a
		case $a in /bin/*) a=/usr$a ;; /sbin/*) a=/usr$a ;; esac
		[ -e "$stage$a" ] || [ -L "$stage$a" ] || { mkdir -p "$stage$(dirname "$a")"; ln -s /usr/bin/busybox "$stage$a"; }
	done
	for p in "${PROGS[@]}"; do
		if a=$(command -v "$p"); then
			add_prog "$stage" "$a"
		else
			log "$p is not installed; the guest goes without it"
		fi
	done
	add_prog "$stage" "$TOOL" /usr/bin/urd_vmtool
	for p in "${VTESTS[@]}"; do
		[ -x "$BUILD/tests/$p" ] && add_prog "$stage" "$BUILD/tests/$p" "/usr/bin/$p"
	done
	# ours replaces rdma-core's, wherever ldd found that
	ours=0
	while read -r p; do
		cp -L "$LIB" "$stage$p"
		ours=1
	done < <(cd "$stage" && find . -name 'libibverbs.so.1*' -type f | sed 's/^\.//')
	[ "$ours" = 1 ] || cp -L "$LIB" "$stage/usr/lib/x86_64-linux-gnu/libibverbs.so.1"
	# A sanitizer build of ours needs its runtime, and Debian's programs need
	# it preloaded (as `make asan-test` does for containers): /etc/urd-env.
	: >"$stage/etc/urd-env"
	while read -r p; do
		add_file "$stage" "$p"
		case $p in */libasan.so*)
			printf 'export LD_PRELOAD=%s\nexport ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}\n' "$p" >"$stage/etc/urd-env" ;;
		esac
	done < <(env -u LD_LIBRARY_PATH ldd "$LIB" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
	cp "$CACHE/e1000.ko" "$stage/usr/lib/modules/e1000.ko"
	install -m 0755 "$TOP/tests/vm/init" "$stage/init"
	install -m 0644 "$TOP/tests/vm/guest-lib.sh" "$stage/etc/urd-lib.sh"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"
	printf '127.0.0.1 localhost\n' >"$stage/etc/hosts"
	mknod -m 600 "$stage/dev/console" c 5 1
	mknod -m 666 "$stage/dev/null" c 1 3
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$OUT/base.cpio.new"
	mv "$OUT/base.cpio.new" "$OUT/base.cpio"
	rm -rf "$stage"
}

if [ "$FETCH_ONLY" = 1 ]; then
	fetch_kernel
	exit 0
fi
for t in cpio ldd; do
	command -v "$t" >/dev/null || missing "$t is not installed"
done
[ -e "$LIB" ] || { echo "build-image: $LIB is not built (run make)" >&2; exit 1; }
[ -x "$TOOL" ] || { echo "build-image: $TOOL is not built (run make)" >&2; exit 1; }
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
fetch_kernel
K=vmlinux
[ -s "$CACHE/vmlinux" ] || K=vmlinuz
if [ ! -s "$OUT/$K" ] || [ "$CACHE/$K" -nt "$OUT/$K" ]; then
	cp "$CACHE/$K" "$OUT/$K.new"
	mv "$OUT/$K.new" "$OUT/$K"
fi
stale=1
if [ -s "$OUT/base.cpio" ]; then
	stale=0
	for f in "$LIB" "$TOOL" "$TOP/tests/vm/init" "$TOP/tests/vm/guest-lib.sh" "$0" "$CACHE/e1000.ko" \
		"${VTESTS[@]/#/$BUILD/tests/}"; do
		[ "$f" -nt "$OUT/base.cpio" ] && stale=1
	done
fi
if [ "$stale" = 1 ]; then
	log "building $OUT/base.cpio"
	build_initramfs
	log "$(du -h "$OUT/base.cpio" | cut -f1) initramfs"
fi
echo "$OUT"

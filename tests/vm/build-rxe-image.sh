#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build-rxe-image.sh: the kernel-rxe guest of tests/integration/rxe_interop.sh:
# Linux's own SoftRoCE (rdma_rxe) with rdma-core's real libibverbs, the peer
# that unirdma's wire must interoperate with.
#
#   tests/vm/build-rxe-image.sh [--build BUILD_DIR] [--quiet]
#
# Makes BUILD_DIR/vm/rxe/{vmlinux,base.cpio}: the kernel of tests/vm (the same
# cache, build-image.sh --fetch-kernel: nothing else is downloaded), an
# initramfs with busybox, tests/vm/rxe-init as /init, the modules rdma_rxe and
# virtio-net need (from the cached linux-image .deb), rdma, ibv_devinfo, the
# ibv_*_pingpong programs and perftest's ib_{write,read,send,atomic}_{bw,lat}
# with every library ldd finds (rdma-core's, never unirdma's), librxe and its
# driver file.  A test appends /urd/run.sh and /urd/env in a second archive.
# Rebuilt only when an input is newer.  Exit 77 when something is missing.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${UNIRDMA_BUILD:-$TOP/build}
QUIET=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--quiet) QUIET=1; shift ;;
	*) echo "usage: $0 [--build BUILD_DIR] [--quiet]" >&2; exit 2 ;;
	esac
done
[[ $BUILD == /* ]] || BUILD=$TOP/$BUILD
OUT=$BUILD/vm/rxe
CACHE=${UNIRDMA_VM_CACHE:-/var/cache/unirdma/vm}
PROGS=(rdma ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_uc_pingpong
	ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat
	rping udaddy ucmatose rdma_server rdma_client rstream)
MODS=(crypto/crc32_generic net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel
	drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs drivers/infiniband/sw/rxe/rdma_rxe
	fs/configfs/configfs drivers/infiniband/core/ib_cm drivers/infiniband/core/iw_cm
	drivers/infiniband/core/rdma_cm drivers/infiniband/core/rdma_ucm
	drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci net/core/failover
	drivers/net/net_failover drivers/net/virtio_net)
MULTIARCH=/usr/lib/x86_64-linux-gnu

log() { [ "$QUIET" = 1 ] || echo "build-rxe-image: $*" >&2; }
missing() { echo "build-rxe-image: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || missing "needs root"
for t in dpkg-deb cpio ldd busybox flock; do
	command -v "$t" >/dev/null || missing "$t is not installed"
done
for p in rdma ibv_rc_pingpong ib_write_bw; do
	command -v "$p" >/dev/null || missing "$p is not installed (iproute2, ibverbs-utils, perftest)"
done
[ -e "$MULTIARCH/libibverbs/librxe-rdmav34.so" ] && [ -e /etc/libibverbs.d/rxe.driver ] ||
	missing "rdma-core's librxe is not installed (ibverbs-providers)"

# the kernel: tests/vm's cache (downloads only what that one does)
"$TOP/tests/vm/build-image.sh" --fetch-kernel >/dev/null 2>&1 || missing "no guest kernel (tests/vm/build-image.sh --fetch-kernel)"
[ -s "$CACHE/vmlinux" ] || missing "no uncompressed kernel in $CACHE"
DEB=$(ls "$CACHE"/linux-image-[0-9]*-amd64_*.deb 2>/dev/null | tail -n 1 || true)
[ -n "$DEB" ] || missing "no linux-image .deb in $CACHE (remove $CACHE/vmlinux and run tests/vm/build-image.sh --fetch-kernel)"
KVER=$(cat "$CACHE/kernel-version")

mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9

# the modules, once per kernel: $CACHE/rxe-modules-KVER/*.ko
MODDIR=$CACHE/rxe-modules-$KVER
have_mods=1
for m in "${MODS[@]}"; do [ -s "$MODDIR/$(basename "$m").ko" ] || have_mods=0; done
if [ "$have_mods" = 0 ]; then
	log "unpacking the rxe and virtio-net modules of $(basename "$DEB")"
	tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	pats=()
	for m in "${MODS[@]}"; do pats+=("./lib/modules/$KVER/kernel/$m.ko*"); done
	dpkg-deb --fsys-tarfile "$DEB" | tar -x -C "$tmp" --wildcards "${pats[@]}"
	mkdir -p "$MODDIR.new"
	for m in "${MODS[@]}"; do
		f=$(ls "$tmp/lib/modules/$KVER/kernel/$m".ko* | head -n 1)
		case $f in
		*.xz) xz -dc "$f" >"$MODDIR.new/$(basename "$m").ko" ;;
		*.zst) zstd -qdc "$f" >"$MODDIR.new/$(basename "$m").ko" ;;
		*) cp "$f" "$MODDIR.new/$(basename "$m").ko" ;;
		esac
	done
	rm -rf "$MODDIR"
	mv "$MODDIR.new" "$MODDIR"
	rm -rf "$tmp"
	trap - EXIT
fi

add_file() {
	local dst=$1${3:-$2}
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	cp -L "$2" "$dst"
}
# rdma-core's libraries: LD_LIBRARY_PATH may point at unirdma's build
add_prog() {
	local stage=$1 prog=$2 lib
	add_file "$stage" "$prog"
	while read -r lib; do
		[ -n "$lib" ] && add_file "$stage" "$lib"
	done < <(env -u LD_LIBRARY_PATH -u LD_PRELOAD ldd "$prog" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
}

build_initramfs() {
	local stage a p m
	stage=$(mktemp -d "$OUT/stage.XXXXXX")
	mkdir -p "$stage"/usr/{bin,sbin,lib,lib64} "$stage"/{dev,proc,sys,tmp,run,root,urd} \
		"$stage/etc/libibverbs.d" "$stage/usr/lib/modules"
	ln -s usr/bin "$stage/bin"
	ln -s usr/sbin "$stage/sbin"
	ln -s usr/lib "$stage/lib"
	ln -s usr/lib64 "$stage/lib64"
	add_prog "$stage" "$(command -v busybox)"
	[ "$(command -v busybox)" = /usr/bin/busybox ] || cp -L "$(command -v busybox)" "$stage/usr/bin/busybox"
	for a in $(busybox --list-full); do
		a=/$a
		case $a in /bin/*) a=/usr$a ;; /sbin/*) a=/usr$a ;; esac
		[ -e "$stage$a" ] || [ -L "$stage$a" ] || { mkdir -p "$stage$(dirname "$a")"; ln -s /usr/bin/busybox "$stage$a"; }
	done
	for p in "${PROGS[@]}"; do
		if a=$(command -v "$p"); then
			add_prog "$stage" "$(readlink -f "$a")"
		else
			log "$p is not installed; the guest goes without it"
		fi
	done
	add_prog "$stage" "$MULTIARCH/libibverbs/librxe-rdmav34.so"
	# glibc dlopens it for pthread_exit/pthread_cancel (rping's threads)
	add_file "$stage" "$MULTIARCH/libgcc_s.so.1"
	cp /etc/libibverbs.d/rxe.driver "$stage/etc/libibverbs.d/"
	for m in "$MODDIR"/*.ko; do cp "$m" "$stage/usr/lib/modules/"; done
	install -m 0755 "$TOP/tests/vm/rxe-init" "$stage/init"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"
	printf '127.0.0.1 localhost\n' >"$stage/etc/hosts"
	mknod -m 600 "$stage/dev/console" c 5 1
	mknod -m 666 "$stage/dev/null" c 1 3
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$OUT/base.cpio.new"
	mv "$OUT/base.cpio.new" "$OUT/base.cpio"
	rm -rf "$stage"
}

if [ ! -s "$OUT/vmlinux" ] || [ "$CACHE/vmlinux" -nt "$OUT/vmlinux" ]; then
	cp "$CACHE/vmlinux" "$OUT/vmlinux.new"
	mv "$OUT/vmlinux.new" "$OUT/vmlinux"
fi
stale=1
if [ -s "$OUT/base.cpio" ]; then
	stale=0
	for f in "$TOP/tests/vm/rxe-init" "$0" "$MODDIR/rdma_rxe.ko"; do
		[ "$f" -nt "$OUT/base.cpio" ] && stale=1
	done
fi
if [ "$stale" = 1 ]; then
	log "building $OUT/base.cpio"
	build_initramfs
	log "$(du -h "$OUT/base.cpio" | cut -f1) initramfs"
fi
echo "$OUT"

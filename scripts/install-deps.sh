#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# install-deps.sh: install what building unirdma, its tests and its demo need
# (Debian/Ubuntu packages). Idempotent: does nothing when all are installed.
# As root it runs apt-get; otherwise it prints the command to run and fails.
set -euo pipefail

pkgs=(
	build-essential clang pkg-config # compilers, make
	libclang-rt-14-dev               # clang's sanitizer and libFuzzer runtimes (only recommended by clang-14)
	libibverbs-dev libjson-c-dev     # verbs headers (ABI we implement), JSON for the admin protocol
	libbsd-dev                       # <bsd/sys/tree.h>: the daemon's red-black tree macros (header only)
	libmicrohttpd-dev                # the daemon's Prometheus metrics endpoint
	libcurl4-openssl-dev             # the daemon's cluster directory client (etcd's JSON gateway)
	libnghttp2-dev                   # HTTP/2 for the kubelet device plugin's gRPC (k8s/)
	etcd-server etcd-client          # cluster tests: etcd v3 and etcdctl
	ibverbs-utils perftest qperf     # unmodified verbs programs the tests and the demo run
	iproute2 util-linux procps       # ip, unshare/nsenter, ps: containers and their network
	iptables nftables libnetfilter-queue-dev # multi-host tests: roce_relay (NFQUEUE), loss rules (tests/integration/mhlib.sh)
	strace valgrind python3 jq       # test tooling (jq: JSON in the shell tests)
	qemu-system-x86 busybox-static cpio # VM tests: QEMU guests (tests/vm/); the kernel: see below
	gnuplot-nox fonts-dejavu-core ucx-utils # bench/: the report's plots and their font; UCX's ucx_perftest
	tshark                           # RoCEv2 captures dissected and checked (tests/integration/roce_wire.sh)
	podman runc                      # CDI tests (tests/integration/podman.sh); runc: crun fails on this host's cgroups
	containernetworking-plugins      # bridge, host-local: the CNI chain of unirdma-cni (tests/integration/cni.sh)
	python3-grpcio python3-grpc-tools python3-h2 # the fake kubelet of tests/integration/devplugin.sh
	openmpi-bin netpipe-openmpi      # MPI over UCX on vRNICs (tests/integration/mpi.sh)
	libfabric-bin                    # fi_info, fi_pingpong over the verbs provider (tests/integration/libfabric.sh)
	librdmacm-dev rdmacm-utils       # rdma_cma.h (the ABI our librdmacm implements); rping, udaddy, ... (tests/integration/rdmacm.sh)
)

# The VM tests' guest kernel comes from linux-image-amd64, fetched with
# `apt-get download` and unpacked (never installed: that would change the
# host's /boot and run its initramfs hook) into /var/cache/unirdma/vm.
fetch_guest_kernel() {
	[ "$(id -u)" -eq 0 ] || return 0
	"$(dirname "$0")/../tests/vm/build-image.sh" --fetch-kernel ||
		echo "install-deps: warning: no guest kernel for the VM tests (they will skip)" >&2
}

missing=()
for p in "${pkgs[@]}"; do
	# dpkg -s succeeds for removed-but-configured packages too; check the status word.
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages already installed"
	fetch_guest_kernel
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
fetch_guest_kernel
echo "install-deps: done"

# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# podlib.sh: what the podman scripts (podman.sh, cni.sh, podman_hosts.sh,
# devplugin.sh) share.  Needs PODMAN (the podman command line, an array) and lib.sh's
# `listening`.

# make_image: the test image IMAGE, made in WORK with `podman import` (no
# registry): merged-/usr symlinks, the host's passwd and group; the
# containers bind the host's /usr read-only for the programs.
make_image() {
	local root=$WORK/rootfs
	mkdir -p "$root"/{usr,etc,tmp,proc,sys,dev,run,opt,root} || die "mkdir failed"
	ln -s usr/bin "$root/bin" && ln -s usr/lib "$root/lib" && ln -s usr/lib64 "$root/lib64" &&
		ln -s usr/sbin "$root/sbin" || die "ln failed"
	cp /etc/passwd /etc/group "$root/etc/"
	tar -C "$root" -cf "$WORK/rootfs.tar" . || die "tar failed"
	"${PODMAN[@]}" import "$WORK/rootfs.tar" "$IMAGE" >/dev/null 2>"$WORK/import.err" ||
		die "podman import failed: $(cat "$WORK/import.err")"
}

# cni_net NET BRIDGE CIDR PLUGIN_DIRS [STATE]: a CNI network of the case's
# own for podman (CNI backend): WORK/net.d/NET.conflist, the bridge plugin
# (no gateway, no masquerading: no iptables rule) with host-local addresses
# of CIDR, chained with unirdma-cni of the daemon at STATE when given (the
# conflist of README.md's "CNI"), and a private WORK/containers.conf naming
# it (PLUGIN_DIRS: the TOML list of plugin directories).  cni_net_cleanup
# takes away what running containers on it left on the host.
[ -d /var/lib/cni ] && CNI_LIB_WAS_THERE=1 || CNI_LIB_WAS_THERE=0
IP_FORWARD=$(cat /proc/sys/net/ipv4/ip_forward)
cni_net() {
	local net=$1 bridge=$2 cidr=$3 dirs=$4 state=${5:-} chain=
	mkdir -p "$WORK/net.d" "$WORK/ipam" || die "mkdir failed"
	[ -z "$state" ] || chain=$(printf ',\n    {\n      "type": "unirdma-cni",\n      "stateDir": "%s"\n    }' "$state")
	cat >"$WORK/net.d/$net.conflist" <<EOF || die "writing the conflist failed"
{
  "cniVersion": "1.0.0",
  "name": "$net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": false,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$cidr" }]],
        "dataDir": "$WORK/ipam"
      }
    }$chain
  ]
}
EOF
	cat >"$WORK/containers.conf" <<EOF || die "writing containers.conf failed"
[engine]
runtime = "runc"
[network]
network_backend = "cni"
network_config_dir = "$WORK/net.d"
cni_plugin_dirs = $dirs
EOF
}

cni_net_cleanup() { # cni_net_cleanup NET BRIDGE
	ip link del "$2" 2>/dev/null
	echo "$IP_FORWARD" >/proc/sys/net/ipv4/ip_forward
	rm -f /var/lib/cni/results/"$1"-* 2>/dev/null
	[ "$CNI_LIB_WAS_THERE" = 1 ] || { rmdir /var/lib/cni/results 2>/dev/null; rmdir /var/lib/cni 2>/dev/null; }
	return 0
}

# server_up NAME PORT: the podman container NAME listens on PORT (in its
# netns); false once the container has stopped or after 10 s.
server_up() {
	local name=$1 port=$2 i pid
	for ((i = 0; i < 200; i++)); do
		pid=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "$name" 2>/dev/null)
		[ -n "$pid" ] && [ "$pid" != 0 ] && listening "$pid" "$port" && return 0
		[ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || return 1
		sleep 0.05
	done
	return 1
}

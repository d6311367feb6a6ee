# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# podlib.sh: what the podman scripts (podman.sh, cni.sh, podman_hosts.sh)
# share.  Needs PODMAN (the podman command line, an array) and lib.sh's
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

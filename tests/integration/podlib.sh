# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# podlib.sh: what the podman scripts (podman.sh, cni.sh, podman_hosts.sh)
# share.  Needs PODMAN (the podman command line, an array) and lib.sh's
# `listening`.

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

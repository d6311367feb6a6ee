# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=dash
# Helpers for the guest's /urd/run.sh (installed as /etc/urd-lib.sh).

# urd_listening PORT: whether a TCP socket listens on PORT.
urd_listening() {
	local hex
	hex=$(printf ':%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# urd_serve PORT CMD...: runs CMD in the background, prints URD-LISTENING
# once it listens on PORT (the host then starts the client), returns its code.
urd_serve() {
	local port=$1 pid i=0
	shift
	"$@" &
	pid=$!
	while ! urd_listening "$port"; do
		kill -0 "$pid" 2>/dev/null || break
		i=$((i + 1))
		[ $i -gt 600 ] && break
		sleep 0.05
	done
	echo "URD-LISTENING $port"
	wait "$pid"
}

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# perftest.sh: the perftest suite (ib_{write,read,send}_{bw,lat},
# ib_atomic_{bw,lat}), unmodified, between containers of two vRNICs.
# Iteration counts are cut (-n) where the defaults would make the file slow;
# -F only stops perftest from failing on CPU-frequency scaling in a VM.
. "$(dirname "$0")/lib.sh"

# results FILE bw|lat: the result rows of perftest's table (a number of bytes,
# a number of iterations, then figures); every figure checked must be > 0.
results_ok() {
	awk -v kind="$2" '
		$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4 && $3 ~ /^[0-9.]+$/ {
			rows++
			# bw: BW peak, BW average, MsgRate; lat: t_min, t_max, t_typical, t_avg.
			# For bw the message rate (Mpps, 6 decimals) is the figure checked:
			# MB/s has 2 decimals and rounds a slow run of 2-byte messages to 0.
			v = (kind == "bw") ? $NF : (NF >= 6 ? $6 : $3)
			if (v + 0 <= 0) { bad++; print "  zero figure in: " $0 }
		}
		END {
			if (!rows) print "  no result rows"
			exit !(rows && !bad)
		}' "$1"
}

# perf PROGRAM OPTIONS...: server `PROGRAM OPTIONS`, client `PROGRAM OPTIONS IP_A`.
perf() {
	local prog=$1 kind opt
	shift
	require_prog "$prog"
	for opt in "$@"; do
		case $opt in -e | -a | -q) "$prog" -h 2>&1 | grep -Eq "^ +$opt," ||
			skip "$prog of this perftest has no $opt option" ;;
		esac
	done
	case $prog in *_bw) kind=bw ;; *) kind=lat ;; esac
	run_pair "$prog -F $*" "$prog -F $* $IP_A" || return 1
	check "the client reports non-zero $kind figures" results_ok "$PAIR_CLIENT_OUT" "$kind"
	if [ "$1" = -a ]; then
		check "-a ran several message sizes" test "$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$PAIR_CLIENT_OUT" | wc -l)" -ge 2
	fi
	checks_result
}

for prog in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat ib_atomic_lat; do
	case $prog in
	*_bw) n=1000 ;;
	*) n=500 ;;
	esac
	add_case "$prog" perf "$prog"
	# -a: every size, 2 B to 8 MiB; of the latency tests only WRITE's (each
	# -a latency run is ~10 s, most of it perftest's own set-up per size)
	case $prog in ib_atomic_* | ib_read_lat | ib_send_lat) ;; *) add_case "$prog-a" perf "$prog" -a -n 20 ;; esac
	case $prog in
	*_bw)
		add_case "$prog-e" perf "$prog" -e -n "$n"
		add_case "$prog-q4" perf "$prog" -q 4 -n "$n"
		;;
	esac
done
# GID index 3, where programs written for ConnectX find the RoCE v2 GID
add_case ib_write_bw-x3 perf ib_write_bw -x 3 -n 1000
run_cases "$@"

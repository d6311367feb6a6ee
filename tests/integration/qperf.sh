#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# qperf.sh: qperf's RDMA tests, unmodified: `qperf` serving in a container of
# one vRNIC, `qperf IP -t 2 TEST` in a container of the other, one case per
# test. A case fails on an error message or a figure of 0.
. "$(dirname "$0")/lib.sh"

QPERF_PORT=19765
QPERF_TIME=${QPERF_TIME:-1}
# qperf's RDMA tests without -cm1 (rdma_cm: rdmacm.sh runs qperf -cm1) give
# no GRH: as on RoCE hardware, where qperf needs -cm1, a vRNIC refuses
# such an AV unless its operator allows InfiniBand-style AVs
# (roce_rule below shows the refusal).
VRNIC_ARGS=(--grhless-av on)

# figures_ok FILE: at least one "name = value unit" line and no zero value,
# no error message.
figures_ok() {
	if grep -Eiq 'error|fail|unknown|not supported|timed out' "$1"; then
		say "  qperf reported a problem:"
		grep -Ei 'error|fail|unknown|not supported|timed out' "$1" | sed 's/^/    /'
		return 1
	fi
	awk '
		$2 == "=" { rows++; if ($3 + 0 <= 0) { bad++; print "  zero figure: " $0 } }
		END { if (!rows) print "  no figures"; exit !(rows && !bad) }' "$1"
}

qperf_case() {
	require_prog qperf
	run_pair -p "$QPERF_PORT" --persistent "qperf" "qperf $IP_A -t $QPERF_TIME $1" || return 1
	check "qperf $1 reports non-zero figures" figures_ok "$PAIR_CLIENT_OUT"
	checks_result
}

# The default AV rule: rc_bw fails, as on a RoCE port.
roce_rule() {
	require_prog qperf
	local rc
	"$UNIRDMA" vrnic set "$VR_A" --grhless-av off >/dev/null && "$UNIRDMA" vrnic set "$VR_B" --grhless-av off >/dev/null ||
		die "vrnic set --grhless-av off failed"
	run_pair -p "$QPERF_PORT" --persistent "qperf" "qperf $IP_A -t 1 rc_bw"
	rc=$?
	sed 's/^/  | /' "$PAIR_CLIENT_OUT" | head -n 3
	check "qperf rc_bw without a GRH is refused, as on RoCE (exit $rc)" test "$rc" -ne 0
	# whichever side reaches RTR first says it (the client also sees the
	# server's failure as a closed control connection)
	check "it says why: RTR refused" grep -qi "failed to modify QP to RTR" "$PAIR_CLIENT_OUT" "$PAIR_SERVER_OUT"
	checks_result
}
add_case roce_rule roce_rule

for t in rc_bw rc_bi_bw rc_lat rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat \
	rc_rdma_read_bw rc_rdma_read_lat rc_compare_swap_mr rc_fetch_add_mr \
	ver_rc_compare_swap ver_rc_fetch_add ud_bw ud_lat; do
	add_case "$t" qperf_case "$t"
done
run_cases "$@"

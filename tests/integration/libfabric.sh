#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libfabric.sh: libfabric 1.17's verbs provider (Debian's libfabric-bin) on
# vRNICs in `unirdma exec` containers.
#   info      fi_info -p verbs lists the vRNIC for FI_EP_DGRAM (verbs) and for
#             FI_EP_RDM over UD (verbs;ofi_rxd)
#   rxd_pingpong  fi_pingpong -p 'verbs;ofi_rxd' -e rdm between two tenants'
#             containers, every size of its default sweep, and the bytes went
#             through the vRNICs
# Not here yet: FI_EP_MSG and verbs;ofi_rxm (they need librdmacm), and
# fi_pingpong -e dgram on plain verbs (its event queue is an rdma_cm event
# channel: fi_eq_open fails with ENOENT without librdmacm).
. "$(dirname "$0")/lib.sh"

case_info() {
	require_prog fi_info
	local out
	out=$(in_container "$VR_A" fi_info -p verbs 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "verbs lists $VR_A-dgram for FI_EP_DGRAM" python3 - "$out" "$VR_A" <<'PY'
import sys
blocks = sys.argv[1].split("provider: ")[1:]
ok = any(b.startswith("verbs\n") and "domain: %s-dgram" % sys.argv[2] in b and "FI_EP_DGRAM" in b for b in blocks)
sys.exit(not ok)
PY
	check "verbs;ofi_rxd lists it for FI_EP_RDM" python3 - "$out" "$VR_A" <<'PY'
import sys
blocks = sys.argv[1].split("provider: ")[1:]
ok = any(b.startswith("verbs;ofi_rxd\n") and "domain: %s-dgram" % sys.argv[2] in b and "FI_EP_RDM" in b for b in blocks)
sys.exit(not ok)
PY
	checks_result
}

case_rxd_pingpong() {
	require_prog fi_pingpong
	local before after
	before=$(tx_bytes_of "$VR_A" "$VR_B")
	run_pair -p 47592 "fi_pingpong -p verbs;ofi_rxd -e rdm -I 100" \
		"fi_pingpong -p verbs;ofi_rxd -e rdm -I 100 $IP_A" || return 1
	after=$(tx_bytes_of "$VR_A" "$VR_B")
	check "a row for each of its six sizes, 64 B to 1 MiB, 100 iterations each" awk '
		$2 == 100 && $3 == "=100" { n++; if ($1 == "1m") top = 1 }
		END { exit !(n >= 6 && top) }' "$PAIR_CLIENT_OUT"
	say "  the vRNICs sent $((after - before)) bytes"
	check "the messages went through the vRNICs (>= 200 MiB)" test $((after - before)) -ge $((200 << 20))
	checks_result
}

add_case info case_info
add_case rxd_pingpong case_rxd_pingpong
run_cases "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libfabric.sh: libfabric 1.17's verbs provider (Debian's libfabric-bin) on
# vRNICs in `unirdma exec` containers.
#   info      fi_info -p verbs lists the vRNIC for FI_EP_DGRAM (verbs) and for
#             FI_EP_RDM over UD (verbs;ofi_rxd)
#   rxd_pingpong  fi_pingpong -p 'verbs;ofi_rxd' -e rdm between two tenants'
#             containers, every size of its default sweep, and the bytes went
#             through the vRNICs
#   info_msg  ... and, through our librdmacm, for FI_EP_MSG (verbs) and FI_EP_RDM
#             over RC (verbs;ofi_rxm)
#   msg_pingpong, rxm_pingpong  fi_pingpong -p verbs -e msg and -p 'verbs;ofi_rxm'
#             -e rdm between two containers (connections through rdma_cm)
# Not here yet: fi_pingpong -e dgram on plain verbs.
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

# FI_EP_MSG and verbs;ofi_rxm: the verbs provider finds the device with
# rdma_getaddrinfo/rdma_bind_addr on the vRNIC's IP (and "localhost").
case_info_msg() {
	require_prog fi_info
	local out
	out=$(in_container "$VR_A" fi_info -p verbs 2>&1; in_container "$VR_A" fi_info -p 'verbs;ofi_rxm' 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "verbs lists $VR_A for FI_EP_MSG" python3 - "$out" "$VR_A" <<'PY'
import sys
blocks = sys.argv[1].split("provider: ")[1:]
ok = any(b.startswith("verbs\n") and "domain: %s\n" % sys.argv[2] in b and "FI_EP_MSG" in b for b in blocks)
sys.exit(not ok)
PY
	check "verbs;ofi_rxm lists it for FI_EP_RDM" python3 - "$out" "$VR_A" <<'PY'
import sys
blocks = sys.argv[1].split("provider: ")[1:]
ok = any(b.startswith("verbs;ofi_rxm\n") and "domain: %s\n" % sys.argv[2] in b and "FI_EP_RDM" in b for b in blocks)
sys.exit(not ok)
PY
	checks_result
}

# pingpong_rows FILE: a row for each of the six sizes, 64 B to 1 MiB, 100 iterations each
pingpong_rows() {
	awk '$2 == 100 && $3 == "=100" { n++; if ($1 == "1m") top = 1 } END { exit !(n >= 6 && top) }' "$1"
}

case_msg_pingpong() {
	require_prog fi_pingpong
	check "fi_pingpong -p verbs -e msg: both exit 0" run_pair -p 47592 "fi_pingpong -p verbs -e msg -I 100" \
		"fi_pingpong -p verbs -e msg -I 100 $IP_A"
	check "the client printed a row for each of its six sizes" pingpong_rows "$PAIR_CLIENT_OUT"
	check "the server did too" pingpong_rows "$PAIR_SERVER_OUT"
	checks_result
}

# ofi_rxm sizes its MSG CQ as (msg tx + rx size) x FI_UNIVERSE_SIZE: 262144
# entries by default, over a vRNIC's max_cqe (URD_MAX_CQE, 65536; ibv_create_cq
# fails with EINVAL, as it would on rxe's 32767).  A universe of 32 needs 32768.
case_rxm_pingpong() {
	require_prog fi_pingpong
	check "fi_pingpong -p 'verbs;ofi_rxm' -e rdm: both exit 0" run_pair -p 47592 \
		"env FI_UNIVERSE_SIZE=32 fi_pingpong -p verbs;ofi_rxm -e rdm -I 100" \
		"env FI_UNIVERSE_SIZE=32 fi_pingpong -p verbs;ofi_rxm -e rdm -I 100 $IP_A"
	check "the client printed a row for each of its six sizes" pingpong_rows "$PAIR_CLIENT_OUT"
	check "the server did too" pingpong_rows "$PAIR_SERVER_OUT"
	checks_result
}

add_case info case_info
add_case info_msg case_info_msg
add_case msg_pingpong case_msg_pingpong
add_case rxm_pingpong case_rxm_pingpong
add_case rxd_pingpong case_rxd_pingpong
run_cases "$@"

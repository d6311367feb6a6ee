#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# adminsock.sh: local users against the management planes (issue 9, findings 8
# and 11's metrics part).
#
#   slowloris_nobody  user nobody holds slow-loris and idle connections on the
#                     admin socket; root's vrnic create/list/delete each finish
#                     in < 1 s and nobody is refused at once
#   admin_group       a member of --admin-group by a supplementary group only
#                     may manage; one outside may not, nor one that joins the
#                     group after connect() (credentials at connect, not
#                     /proc/PID at request time); a member's own dribbled
#                     or idle requests are cut at the 2 s request deadline while
#                     root is served beside them; more than 16 of the member's
#                     connections at once are told EBUSY, root's are still served;
#                     the metrics token file is the group's (0640) and works
#   metrics_token     the metrics page needs the bearer token of
#                     STATE/metrics.token (401 without or with a wrong one); the
#                     token file is mode 0640 and unreadable to nobody;
#                     --metrics-token-file supplies the token
. "$(dirname "$0")/lib.sh"

LORIS=$BUILD/tools/admin_loris
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# timed NAME CMD...: runs CMD (at most 5 s), prints its time; sets T_MS and RC.
timed() {
	local what=$1 t0
	shift
	t0=$(ms_now)
	timeout 5 "$@" >"$WORK/timed.out" 2>&1
	RC=$?
	T_MS=$(($(ms_now) - t0))
	say "  $what: exit $RC in $T_MS ms"
}

# start_loris USER_PREFIX... -- MODE INTERVAL SECONDS COUNT TAG: COUNT clients
# in the background as the user; their RESULT lines go to $WORK/TAG.N.
LORIS_PIDS=()
start_loris() {
	local pre=() mode interval secs count tag i
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	mode=$1 interval=$2 secs=$3 count=$4 tag=$5
	for ((i = 0; i < count; i++)); do
		"${pre[@]}" "$LORIS" "$STATE/admin.sock" "$mode" "$interval" "$secs" >"$WORK/$tag.$i" 2>&1 &
		LORIS_PIDS+=($!)
		SERVER_PIDS+=($!)
	done
}

wait_loris() {
	local pid
	for pid in "${LORIS_PIDS[@]}"; do wait "$pid"; done
	LORIS_PIDS=()
}

# root_manages N: root's create, list (sees it), delete (gone), each < 1 s.
root_manages() {
	local n=$1
	timed "root: vrnic create vrx (tenant t2)" "$UNIRDMA" vrnic create vrx --tenant t2 --ip "10.78.$n.1/24"
	check "root's vrnic create succeeds in < 1 s ($T_MS ms)" test "$RC" = 0 -a "$T_MS" -lt 1000
	timed "root: vrnic list" "$UNIRDMA" --json vrnic list
	check "root's vrnic list succeeds in < 1 s and shows vrx ($T_MS ms)" \
		bash -c "[ $RC = 0 ] && [ $T_MS -lt 1000 ] && grep -q '\"name\":\"vrx\"' '$WORK/timed.out'"
	timed "root: vrnic delete vrx" "$UNIRDMA" vrnic delete vrx
	check "root's vrnic delete succeeds in < 1 s ($T_MS ms)" test "$RC" = 0 -a "$T_MS" -lt 1000
	check "vrx is gone" bash -c "! '$UNIRDMA' vrnic show vrx >/dev/null 2>&1"
}

# results TAG COUNT: prints the RESULT lines of a group of clients.
results() {
	local i
	for ((i = 0; i < $2; i++)); do say "    $1.$i: $(cat "$WORK/$1.$i")"; done
}

# all_closed TAG COUNT MIN_MS MAX_MS PATTERN: every client was closed by the
# daemon within [MIN_MS, MAX_MS] ms of connecting, with an answer matching PATTERN.
all_closed() {
	local i line ms
	for ((i = 0; i < $2; i++)); do
		line=$(cat "$WORK/$1.$i")
		[[ $line =~ closed_after_ms=([0-9]+) ]] || return 1
		ms=${BASH_REMATCH[1]}
		[ "$ms" -ge "$3" ] && [ "$ms" -le "$4" ] || return 1
		grep -q -- "$5" <<<"$line" || return 1
	done
}

restart_daemon_with() {
	"$UNIRDMA" daemon stop >/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	"$UNIRDMAD" --state-dir "$STATE" --foreground "$@" >>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do "$UNIRDMA" daemon ping >/dev/null 2>&1 && return 0; sleep 0.05; done
	say "unirdmad did not come back; its log:"
	tail -n 20 "$WORK/unirdmad.log"
	return 1
}

case_slowloris_nobody() {
	require_prog setpriv timeout
	chmod 755 "$WORK" "$STATE"
	say "+ as nobody: 4 clients dribbling a byte every 1.5 s, 4 idle connections (8 s each)"
	start_loris "${NOBODY[@]}" -- dribble 1500 8 4 drip
	start_loris "${NOBODY[@]}" -- idle 0 8 4 idle
	sleep 0.5
	root_manages "$SUBNET"
	wait_loris
	results drip 4
	results idle 4
	check "nobody's dribbling clients are refused at once (EPERM, < 1 s)" all_closed drip 4 0 999 '"errno":1,'
	check "nobody's idle connections are refused at once (EPERM, < 1 s)" all_closed idle 4 0 999 '"errno":1,'
	check "nobody's unirdma vrnic list is refused" bash -c \
		"out=\$(${NOBODY[*]} '$UNIRDMA' vrnic list 2>&1); rc=\$?; echo \"  \$out\"; [ \$rc = 1 ] && grep -q 'only root' <<<\"\$out\""
	check "the daemon is alive" daemon_alive
	checks_result
}

case_admin_group() {
	require_prog setpriv timeout groupadd groupdel getent
	local grp=urdadm$$ gid
	groupadd "$grp" || return 1
	trap 'rc=$?; groupdel '"$grp"' 2>/dev/null; (exit $rc); cleanup' EXIT
	gid=$(getent group "$grp" | cut -d: -f3)
	say "+ test group $grp (gid $gid); unirdmad --admin-group $grp"
	chmod 755 "$WORK" "$STATE"
	restart_daemon_with --metrics 127.0.0.1:0 --admin-group "$grp" || return 1
	local member=(setpriv --reuid=nobody --regid=nogroup --groups="$gid")
	metrics_port || return 1
	check "the metrics token file belongs to the group, mode 0640" \
		test "$(stat -c '%a %U %G' "$STATE/metrics.token")" = "640 root $grp"
	check "a member may read the token and scrape with it" bash -c "
		tok=\$(${member[*]} cat '$STATE/metrics.token') &&
		[ \$(curl -s -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer \$tok\" http://127.0.0.1:$PORT/metrics) = 200 ]"
	check "nobody with $grp as a supplementary group only may manage" "${member[@]}" "$UNIRDMA" vrnic list
	check "nobody without it may not" bash -c "! ${NOBODY[*]} '$UNIRDMA' vrnic list >/dev/null 2>&1"
	say "+ a process connects as nobody without groups, then joins $grp and sends vrnic.list"
	say "  (the socket's mode opened to 0666 for this: the daemon's own check must hold)"
	chmod 666 "$STATE/admin.sock"
	"$LORIS" "$STATE/admin.sock" regroup "$gid" >"$WORK/regroup" 2>&1
	chmod 660 "$STATE/admin.sock"
	say "    $(cat "$WORK/regroup")"
	check "the groups at connect count, not the process's later ones (EPERM)" grep -q '"errno":1,' "$WORK/regroup"
	say "+ as the member: 4 clients dribbling a byte every 300 ms, 4 idle connections (6 s each)"
	start_loris "${member[@]}" -- dribble 300 6 4 mdrip
	start_loris "${member[@]}" -- idle 0 6 4 midle
	sleep 0.3
	root_manages "$SUBNET"
	wait_loris
	results mdrip 4
	results midle 4
	check "the member's dribbled requests end at the 2 s deadline (ETIMEDOUT)" all_closed mdrip 4 1500 3000 '"errno":110,'
	check "the member's idle connections end at the 2 s deadline (ETIMEDOUT)" all_closed midle 4 1500 3000 '"errno":110,'
	say "+ as the member: 20 idle connections (more than the 16 served at once; 4 s each)"
	start_loris "${member[@]}" -- idle 0 4 20 mmany
	sleep 0.3
	root_manages "$SUBNET"
	wait_loris
	results mmany 20
	local late busy
	late=$(cat "$WORK"/mmany.* | grep -c '"errno":110,')
	busy=$(cat "$WORK"/mmany.* | grep -c '"errno":16,')
	# exactly 16 and 4 when all 20 connect within the first one's 2 s
	check "16 are served and end at the deadline, the rest are told EBUSY at once ($late, $busy)" \
		test "$late" -ge 16 -a "$busy" -ge 1 -a $((late + busy)) = 20
	check "the daemon is alive" daemon_alive
	groupdel "$grp"
	checks_result
}

# metrics_port: sets PORT once the daemon's metrics endpoint is up.
metrics_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		PORT=$("$UNIRDMA" --json daemon ping | jq_py 'd["metrics_port"]')
		[ "${PORT:-0}" -gt 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# metrics_get [CURL_ARGS...]: the HTTP status of GET /metrics; the body in $WORK/m.body.
metrics_get() {
	curl -s -o "$WORK/m.body" -w '%{http_code}' "$@" "http://127.0.0.1:$PORT/metrics"
}

case_metrics_token() {
	require_prog curl setpriv
	local tok code
	chmod 755 "$WORK" "$STATE"
	metrics_port || return 1
	say "  metrics port $PORT; token file: $(stat -c '%a %U:%G %s bytes' "$STATE/metrics.token" 2>&1)"
	code=$(metrics_get)
	check "GET /metrics without a token: 401 (got $code)" test "$code" = 401
	check "and no metric in the answer" bash -c "! grep -q '^unirdma_' '$WORK/m.body'"
	code=$(metrics_get -H "Authorization: Bearer 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	check "with a wrong token: 401 (got $code)" test "$code" = 401
	code=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")
	check "nobody's plain GET: 401 (got $code)" test "$code" = 401
	check "the token file is root's, mode 0640" test "$(stat -c '%a %u' "$STATE/metrics.token")" = "640 0"
	check "nobody cannot read the token file" bash -c "! ${NOBODY[*]} cat '$STATE/metrics.token' >/dev/null 2>&1"
	tok=$(cat "$STATE/metrics.token")
	code=$(metrics_get -H "Authorization: Bearer $tok")
	check "with the token: 200 (got $code)" test "$code" = 200
	check "and the page names $VR_A" grep -q "^unirdma_tx_bytes_total{vrnic=\"$VR_A\"" "$WORK/m.body"

	say "+ unirdmad --metrics-token-file (a token of the operator's)"
	printf 'operator-token-%s\n' "$$" >"$WORK/op.token"
	chmod 600 "$WORK/op.token"
	restart_daemon_with --metrics 127.0.0.1:0 --metrics-token-file "$WORK/op.token" || return 1
	metrics_port || return 1
	code=$(metrics_get -H "Authorization: Bearer operator-token-$$")
	check "the supplied token is accepted (got $code)" test "$code" = 200
	code=$(metrics_get -H "Authorization: Bearer $tok")
	check "the old generated token is not (got $code)" test "$code" = 401
	code=$(metrics_get)
	check "no token: 401 (got $code)" test "$code" = 401
	check "no generated token file is left in the state dir" test ! -e "$STATE/metrics.token"
	checks_result
}

add_case slowloris_nobody case_slowloris_nobody
add_case admin_group case_admin_group
add_case metrics_token case_metrics_token
run_cases "$@"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xferk(8), the operator's CLI, against known state. tests/helpers/cli_state
# holds one RDMA connection (to 10.99.0.2), a null peer, NOPS WRITEs on it
# that do not complete (qp_window 2 here: 2 posted, the rest queued) and
# their deregistered source region in the quarantine. Checks:
#  - usage errors exit 2, -h exits 0;
#  - every command exits 0 and its --json output is valid JSON (strict
#    UTF-8);
#  - status matches sysfs and the ioctl, and lists rxe0;
#  - with the helper holding: stats ops_submitted +NOPS and quarantined_pages
#    +NOPS; ops shows its NOPS ops (2 IN_PROGRESS, the rest SUBMITTED), as
#    text and JSON; queue its queued ops on device null and 2 chunks in
#    flight there; peers its RDMA connection and one more null peer;
#    quarantine its region; status counts them;
#  - --watch repeats until SIGINT, exits 0, no screen clearing into a pipe;
#  - after the helper exits, its ops and region are gone;
#  - without debugfs (unmounted in a private mount namespace) the table
#    commands exit 1 saying so and stats/status work; as an unprivileged
#    user likewise (debugfs is root's); no module (XFERK_ROOT elsewhere):
#    exit 1 saying so;
#  - stats --format=prometheus is Prometheus's text format, with the values
#    of sysfs, the RDMA connection and the queued ops; the modprobe.d
#    example names real parameters;
#  - a made-up debugfs tree (XFERK_ROOT): a new column appears in text and
#    JSON, quotes, backslashes, control characters and bytes that are not
#    UTF-8 still give valid JSON, a row of 70 fields is cut with a warning.
# Exit 0 pass, 1 fail, 77 skip (no /dev/xferk, no python3, no jq).
# jq filters name their --arg values $like_this:
# shellcheck disable=SC2016
set -u

X=$XFERK_BUILD/bin/xferk
HELPER=$XFERK_BUILD/tests/helpers/cli_state
# The prometheus check needs the standard library only: -I -S skips
# site-packages (and whatever their .pth files import), a second per
# start under TCG. The JSON checks use jq (half a second less each).
PY=(/usr/bin/python3 -I -S)
NOPS=5
WINDOW=2
PEER=10.99.0.2
PORT=$(cat /sys/module/xferk/parameters/listen_port)
SYS=/sys/class/misc/xferk
TMP=$(mktemp -d)
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect WHAT WANT GOT
expect() {
	[ "$2" = "$3" ] || fail "$1: want '$2', got '$3'"
}

# jqr [JQ OPTIONS] FILTER: jq -r FILTER on the JSON on stdin, which must
# be UTF-8 (jq itself would replace bytes that are not) and one value
# (jq itself would take a stream): exit 1 if it is not, or if the
# filter's last output is false or null.
jqr() {
	local filter=${!#}

	cat >"$TMP/jq.in"
	iconv -f UTF-8 -t UTF-8 "$TMP/jq.in" >/dev/null 2>&1 ||
		{ echo "not UTF-8: $(cat -v "$TMP/jq.in")" >&2; return 1; }
	jq -e -r -s "${@:1:$#-1}" \
		"if length == 1 then .[0] | ($filter) else error(\"not one JSON value\") end" \
		"$TMP/jq.in"
}

# jqm [JQ OPTIONS] -- FILTER...: jqr's checks, several filters over one
# JSON value in one jq run (each jq start costs about half a second under
# TCG): prints each filter's last output on a line of its own, strings raw
# (a newline in one as a space), anything else as JSON (null if none).
jqm() {
	local opts=() prog="" f

	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	for f in "$@"; do
		prog+="${prog:+, }([$f] | last |
			if type == \"string\" then gsub(\"\\n\"; \" \") else tojson end)"
	done
	jqr "${opts[@]}" "$prog"
}

[ -e /dev/xferk ] || { echo "no /dev/xferk"; exit 77; }
[ -x "${PY[0]}" ] || { echo "no ${PY[0]}"; exit 77; }
command -v jq >/dev/null || { echo "no jq"; exit 77; }

PARAMS=/sys/module/xferk/parameters
saved_window=$(cat $SYS/queue/qp_window)
saved_exit_drain=$(cat $PARAMS/exit_drain_ms)
saved_flush=$(cat $PARAMS/flush_timeout_ms)
cleanup() {
	[ -n "${HOLD_PID:-}" ] && kill "$HOLD_PID" 2>/dev/null
	echo "$saved_window" >$SYS/queue/qp_window
	echo "$saved_exit_drain" >$PARAMS/exit_drain_ms
	echo "$saved_flush" >$PARAMS/flush_timeout_ms
	rm -rf "$TMP"
}
trap cleanup EXIT

# Usage.
for args in "bogus" "peers ops" "--watch 0" "--watch x" "--watch -1" \
	    "--watch" "--nope" "stats --watch 99999999999999999999"; do
	# shellcheck disable=SC2086
	"$X" $args >/dev/null 2>&1
	expect "xferk $args: exit" 2 $?
done
out=$("$X" -h)
expect "-h: exit" 0 $?
[[ $out == usage:* ]] || fail "-h prints no usage"

# Every command, as text and as JSON.
for c in status peers ops quarantine queue stats; do
	"$X" $c >"$TMP/$c.txt" 2>"$TMP/err"
	expect "$c: exit" 0 $?
	[ -s "$TMP/$c.txt" ] || fail "$c: no output"
	[ -s "$TMP/err" ] && fail "$c: stderr: $(cat "$TMP/err")"
	"$X" $c --json >"$TMP/$c.json"
	expect "$c --json: exit" 0 $?
	jqr 'type == "object"' <"$TMP/$c.json" >/dev/null || fail "$c --json: not one JSON object"
done
# No command is status.
"$X" --json | jqr 'has("abi_version")' >/dev/null || fail "no command: not status"

# status against sysfs and the ioctl.
mapfile -t v <<<"$("$X" status --json | jqm -- '.abi_version' \
	'.ioctl_abi_version' '.features' '.ioctl_features' \
	'any(.feature_names[]; . == "uring")' '.debugfs' \
	'any(.devices[]; . == "rxe0")' '.listen_port')"
expect "status abi_version" "$(cat $SYS/abi_version)" "${v[0]:-}"
expect "status ioctl_abi_version" "$(cat $SYS/abi_version)" "${v[1]:-}"
expect "status features" "$(cat $SYS/features)" "${v[2]:-}"
expect "status ioctl_features" "$(cat $SYS/features)" "${v[3]:-}"
expect "status feature_names has uring" true "${v[4]:-}"
expect "status debugfs" true "${v[5]:-}"
expect "status devices has rxe0" true "${v[6]:-}"
expect "status listen_port" "$PORT" "${v[7]:-}"
grep -q '^abi_version  *[0-9]' "$TMP/status.txt" || fail "status text: no abi_version line"

# stats: every counter file, by name.
# shellcheck disable=SC2012
n_files=$(($(ls $SYS/stats | wc -l) + $(ls $SYS/queue | wc -l)))
mapfile -t v <<<"$(jqm -- '(.stats | length) + (.queue | length)' \
	'.queue.wait_hist_us | type' <"$TMP/stats.json")"
expect "stats: entries" "$n_files" "${v[0]:-}"
expect "stats: wait_hist_us is a list" array "${v[1]:-}"
counter() {
	"$X" stats --json | jqr --arg k "$1" '.stats[$k]'
}

# Polls counter $1 until it is $2, at most 120 s (ops drain in the
# background once their file is closed); 1 if it never was.
wait_counter() {
	for _ in $(seq 240); do
		[ "$(counter "$1")" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

# Known state, on a host where what earlier tests left has drained.
wait_counter ops_live 0 || echo "note: ops_live $(counter ops_live), not 0"
null_up() {
	"$X" peers --json |
		jqr '[.peers[] | select(.transport == "null" and .state == "up")] | length'
}
mapfile -t v <<<"$("$X" stats --json |
	jqm -- '.stats.ops_submitted' '.stats.quarantined_pages' '.stats.ops_live')"
submitted0=${v[0]:-} qpages0=${v[1]:-} live0=${v[2]:-}
expect "stats ops_submitted is sysfs'" "$(cat $SYS/stats/ops_submitted)" "$submitted0"
null0=$(null_up)
echo $WINDOW >$SYS/queue/qp_window || fail "qp_window"
coproc HOLD { exec "$HELPER" $NOPS $PEER; }
# bash unsets HOLD_PID and HOLD once the helper has exited: keep them now.
hp=${HOLD_PID:-} hold_out=${HOLD[0]:-} hold_in=${HOLD[1]:-}
read -r -t 120 -u "$hold_out" line
if [ "${line:-}" != ready ] || [ -z "$hp" ]; then
	echo "FAIL: helper: not ready (said '${line:-}')"
	exit 1
fi
for c in status peers ops queue quarantine; do
	echo "== xferk $c, helper $hp holding"
	"$X" $c
done

mapfile -t v <<<"$("$X" stats --json |
	jqm -- '.stats.ops_submitted' '.stats.quarantined_pages' '.stats.ops_live')"
expect "stats ops_submitted" $((submitted0 + NOPS)) "${v[0]:-}"
expect "stats quarantined_pages" $((qpages0 + NOPS)) "${v[1]:-}"
expect "stats ops_live" $((live0 + NOPS)) "${v[2]:-}"

mapfile -t v <<<"$("$X" ops --json | jqm --argjson p "$hp" -- \
	'[.ops[] | select(.pid == $p)] | length' \
	'[.ops[] | select(.pid == $p and .state == "IN_PROGRESS")] | length' \
	'[.ops[] | select(.pid == $p and .state == "SUBMITTED")] | length' \
	'[.ops[] | select(.pid == $p) | .total_bytes |
		if type == "number" then . else error("total_bytes") end] | add // 0')"
expect "ops: the helper's" $NOPS "${v[0]:-}"
expect "ops: IN_PROGRESS" $WINDOW "${v[1]:-}"
expect "ops: SUBMITTED" $((NOPS - WINDOW)) "${v[2]:-}"
expect "ops: total_bytes" $((NOPS * 4096)) "${v[3]:-}"
expect "ops text: the helper's" $NOPS \
	"$("$X" ops | awk -v p="$hp" 'NR > 1 && $1 == p && $NF == "ioctl"' | wc -l)"
"$X" ops | head -1 | grep -q '^pid  *state' || fail "ops text: no header"

mapfile -t v <<<"$("$X" queue --json | jqm --argjson p "$hp" -- \
	'[.ops[] | select(.pid == $p and .device == "null" and
		.class == "normal" and .state == "queued")] | length' \
	'[.devices[] | select(.device == "null") | .inflight_chunks][0]' \
	'any(.devices[]; .device == "rxe0")')"
expect "queue: the helper's queued ops" $((NOPS - WINDOW)) "${v[0]:-}"
expect "queue: null in flight" $WINDOW "${v[1]:-}"
expect "queue: rxe0 listed" true "${v[2]:-}"
expect "queue text: the helper's" $((NOPS - WINDOW)) \
	"$("$X" queue | awk -v p="$hp" '$1 == "null" && $3 == p' | wc -l)"

mapfile -t v <<<"$("$X" peers --json | jqm --arg peer "$PEER:$PORT" -- \
	'any(.peers[]; .transport == "rdma" and .side == "active" and
		.state == "up" and .peer == $peer and .claimed == 1)' \
	'[.peers[] | select(.transport == "null" and .state == "up")] | length')"
expect "peers: the RDMA connection" true "${v[0]:-}"
expect "peers: null peers up" $((null0 + 1)) "${v[1]:-}"
"$X" peers | grep -q " $PEER:" || fail "peers text: no $PEER"

expect "quarantine: the helper's region" 1 \
	"$("$X" quarantine --json | jqr --argjson p "$hp" --argjson b $((NOPS * 4096)) \
		'[.quarantine[] | select(.kind == "region" and .pid == $p and
		.bytes == $b and .reason == "deregistered-in-use")] | length')"
"$X" quarantine | grep -q "^region  *$hp  *$((NOPS * 4096)) " || fail "quarantine text"

st=$("$X" status --json)
jqr --argjson n $NOPS 'all(.ops, .quarantine_entries, .connections, .ops_live;
	type == "number") and .ops >= $n and .quarantine_entries >= 1 and
	.connections >= 2 and .ops_live >= $n and any(.devices[]; . == "null")' \
	<<<"$st" >/dev/null ||
	fail "status counts: $st"

# stats --format=prometheus: every line a TYPE line or a sample of the
# family the last TYPE line named (text format 0.0.4), each family once;
# counters end in _total; values match sysfs; the RDMA connection and
# the helper's queued ops are there with their labels.
"$X" stats --format=prometheus >"$TMP/prom" 2>"$TMP/err"
expect "prometheus: exit" 0 $?
[ -s "$TMP/err" ] && fail "prometheus: stderr: $(cat "$TMP/err")"
"${PY[@]}" - "$TMP/prom" "$PEER:$PORT" "$(cat $SYS/stats/ops_submitted)" \
	"$(cat $SYS/stats/ops_live)" <<'PY' || fail "prometheus: not what it should be"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
sample = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)'
                    r'(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9]+)$')
families, family, got = set(), None, {}
for line in lines:
    m = re.fullmatch(r"# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)", line)
    if m:
        assert m[1] not in families, f"family twice: {line}"
        assert (m[2] == "counter") == m[1].endswith("_total"), line
        families.add(m[1])
        family = m[1]
        continue
    m = sample.fullmatch(line)
    assert m and m[1] == family, f"not a sample of {family}: {line}"
    got[m[1] + (m[2] or "")] = int(m[3])
assert got["xferk_ops_submitted_total"] == int(sys.argv[3]), "ops_submitted"
assert got["xferk_ops_live"] == int(sys.argv[4]), "ops_live"
assert any(k.startswith("xferk_peer_info{") and 'transport="rdma"' in k and
           f'peer="{sys.argv[2]}"' in k and 'state="up"' in k for k in got), "peer"
assert got['xferk_queue_depth{class="normal"}'] >= 3, "queue depth"
assert any(k.startswith("xferk_queue_wait_us_bucket_total{") for k in got)
PY
# The shipped modprobe.d example names real parameters only.
for kv in $(sed -n 's/^#\?options xferk //p' "$XFERK_SRC/tools/xferk.modprobe.conf"); do
	[ -e "/sys/module/xferk/parameters/${kv%%=*}" ] ||
		fail "xferk.modprobe.conf: no parameter ${kv%%=*}"
done
"$X" peers --format=prometheus >/dev/null 2>&1
expect "peers --format=prometheus: exit" 2 $?
"$X" stats --format=yaml >/dev/null 2>&1
expect "--format=yaml: exit" 2 $?
"$X" stats --format=prometheus --watch 1 >/dev/null 2>&1
expect "--format=prometheus --watch: exit" 2 $?

# --watch: rounds until SIGINT, each one JSON object; exit 0.
timeout --preserve-status -s INT 3 "$X" stats --json --watch 1 >"$TMP/watch" 2>"$TMP/err"
expect "--watch: exit" 0 $?
[ -s "$TMP/err" ] && fail "--watch stderr: $(cat "$TMP/err")"
grep -q $'\033' "$TMP/watch" && fail "--watch clears a pipe"
[ "$(wc -l <"$TMP/watch")" -ge 1 ] || fail "--watch: no round"
while read -r l; do
	jqr 'has("stats")' <<<"$l" >/dev/null || fail "--watch round: $l"
done <"$TMP/watch"

# The helper exits: the kernel drains its ops and frees its region. Their
# fragments take ten minutes: the exit drain kills the null peer's path at
# half its budget, and the teardown need not wait for them (flush timeout).
echo 200 >$PARAMS/exit_drain_ms || fail "exit_drain_ms"
echo 0 >$PARAMS/flush_timeout_ms || fail "flush_timeout_ms"
eval "exec $hold_in>&-"
wait "$hp"
expect "helper exit" 0 $?
HOLD_PID=
wait_counter ops_live "$live0"
expect "ops_live after" "$live0" "$(counter ops_live)"
wait_counter quarantined_pages "$qpages0"
expect "quarantined_pages after" "$qpages0" "$(counter quarantined_pages)"
expect "ops: the helper's after" 0 \
	"$("$X" ops --json | jqr --argjson p "$hp" '[.ops[] | select(.pid == $p)] | length')"
expect "quarantine: the helper's after" 0 \
	"$("$X" quarantine --json |
		jqr --argjson p "$hp" '[.quarantine[] | select(.pid == $p)] | length')"

# Without debugfs: the tables say so and exit 1; stats and status work.
unshare -m bash -c 'umount -l /sys/kernel/debug &&
	{ "$0" ops; echo rc=$?; "$0" stats >/dev/null; echo rc=$?;
	  "$0" status --json; echo rc=$?; }' "$X" >"$TMP/nodebugfs" 2>&1
grep -q 'debugfs is not mounted' "$TMP/nodebugfs" || fail "no debugfs: $(cat "$TMP/nodebugfs")"
expect "no debugfs: exits" "rc=1 rc=0 rc=0" "$(grep -o 'rc=[0-9]*' "$TMP/nodebugfs" | xargs)"
grep '^{' "$TMP/nodebugfs" |
	jqr '.debugfs == false and (.debugfs_error | contains("not mounted"))' >/dev/null ||
	fail "no debugfs: status $(cat "$TMP/nodebugfs")"

# Unprivileged: debugfs is root's.
nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
nobody "$X" peers >/dev/null 2>"$TMP/err"
expect "unprivileged peers: exit" 1 $?
grep -q 'root' "$TMP/err" || fail "unprivileged peers: $(cat "$TMP/err")"
nobody "$X" stats >/dev/null
expect "unprivileged stats: exit" 0 $?
nobody "$X" status --json >"$TMP/status.json"
expect "unprivileged status: exit" 0 $?
jqr '.debugfs == false and has("ioctl_error")' <"$TMP/status.json" >/dev/null ||
	fail "unprivileged status: $(cat "$TMP/status.json")"

# No module.
XFERK_ROOT=$TMP/none "$X" stats >/dev/null 2>"$TMP/err"
expect "no module: exit" 1 $?
grep -q 'not loaded' "$TMP/err" || fail "no module: $(cat "$TMP/err")"

# A made-up tree: columns from the header, hostile values.
R=$TMP/root
mkdir -p "$R"/sys/module/xferk "$R$SYS"/stats "$R$SYS"/queue "$R"/sys/kernel/debug/xferk
printf 'id state newcol\n1 up a"b\\c\n2 down \001\033[2J\n3 up \377\376\n' \
	>"$R"/sys/kernel/debug/xferk/peers
{
	seq -s ' ' 1 70
	seq -s ' ' 1 70
} >"$R"/sys/kernel/debug/xferk/ops
export XFERK_ROOT=$R
expect "fake peers: newcol" 'a"b\c ??[2J' \
	"$("$X" peers --json | jqr '[.peers[:2][].newcol] | join(" ")')"
"$X" peers --json | jqr '.peers[2].newcol == "\ufffd\ufffd"' >/dev/null ||
	fail "fake peers: bytes that are not UTF-8"
"$X" peers | head -1 | grep -q 'newcol$' || fail "fake peers text: no newcol"
"$X" peers | grep -q $'\033' && fail "fake peers text: an escape reaches the terminal"
"$X" ops --json 2>"$TMP/err" | jqr '.ops[0] | length == 64' >/dev/null || fail "fake ops: 70 fields"
grep -q 'first 64 columns' "$TMP/err" || fail "fake ops: no warning"
unset XFERK_ROOT

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "pass"

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
# Exit 0 pass, 1 fail, 77 skip (no /dev/xferk, no python3).
set -u

X=$XFERK_BUILD/bin/xferk
HELPER=$XFERK_BUILD/tests/helpers/cli_state
# The checks need the standard library only: -I -S skips site-packages
# (and whatever their .pth files import), a second per start under TCG.
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

# Runs python code on the JSON object on stdin (d); strict UTF-8.
jpy() {
	"${PY[@]}" -c 'import json, sys
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))
'"$1"
}

[ -e /dev/xferk ] || { echo "no /dev/xferk"; exit 77; }
[ -x "${PY[0]}" ] || { echo "no ${PY[0]}"; exit 77; }

saved_window=$(cat $SYS/queue/qp_window)
cleanup() {
	[ -n "${HOLD_PID:-}" ] && kill "$HOLD_PID" 2>/dev/null
	echo "$saved_window" >$SYS/queue/qp_window
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
	"${PY[@]}" -m json.tool "$TMP/$c.json" >/dev/null || fail "$c --json: not JSON"
	jpy 'assert isinstance(d, dict)' <"$TMP/$c.json" || fail "$c --json: not one object"
done
# No command is status.
"$X" --json | jpy 'assert "abi_version" in d' || fail "no command: not status"

# status against sysfs and the ioctl.
st=$("$X" status --json)
expect "status abi_version" "$(cat $SYS/abi_version)" \
	"$(jpy 'print(d["abi_version"])' <<<"$st")"
expect "status ioctl_abi_version" "$(cat $SYS/abi_version)" \
	"$(jpy 'print(d["ioctl_abi_version"])' <<<"$st")"
expect "status features" "$(cat $SYS/features)" \
	"$(jpy 'print(d["features"])' <<<"$st")"
expect "status ioctl_features" "$(cat $SYS/features)" \
	"$(jpy 'print(d["ioctl_features"])' <<<"$st")"
expect "status feature_names has uring" True \
	"$(jpy 'print("uring" in d["feature_names"])' <<<"$st")"
expect "status debugfs" True "$(jpy 'print(d["debugfs"])' <<<"$st")"
expect "status devices has rxe0" True \
	"$(jpy 'print("rxe0" in d["devices"])' <<<"$st")"
expect "status listen_port" "$PORT" \
	"$(jpy 'print(d["listen_port"])' <<<"$st")"
grep -q '^abi_version  *[0-9]' "$TMP/status.txt" || fail "status text: no abi_version line"

# stats: every counter file, by name.
# shellcheck disable=SC2012
n_files=$(($(ls $SYS/stats | wc -l) + $(ls $SYS/queue | wc -l)))
expect "stats: entries" "$n_files" \
	"$(jpy 'print(len(d["stats"]) + len(d["queue"]))' <"$TMP/stats.json")"
expect "stats: wait_hist_us is a list" True \
	"$(jpy 'print(isinstance(d["queue"]["wait_hist_us"], list))' <"$TMP/stats.json")"
counter() {
	"$X" stats --json | jpy "print(d['stats']['$1'])"
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
	"$X" peers --json | jpy 'print(sum(1 for p in d["peers"]
		if p["transport"] == "null" and p["state"] == "up"))'
}
submitted0=$(counter ops_submitted)
expect "stats ops_submitted is sysfs'" "$(cat $SYS/stats/ops_submitted)" "$submitted0"
qpages0=$(counter quarantined_pages)
live0=$(counter ops_live)
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

expect "stats ops_submitted" $((submitted0 + NOPS)) "$(counter ops_submitted)"
expect "stats quarantined_pages" $((qpages0 + NOPS)) "$(counter quarantined_pages)"
expect "stats ops_live" $((live0 + NOPS)) "$(counter ops_live)"

ops=$("$X" ops --json)
expect "ops: the helper's" $NOPS \
	"$(jpy "print(sum(1 for o in d['ops'] if o['pid'] == $hp))" <<<"$ops")"
expect "ops: IN_PROGRESS" $WINDOW \
	"$(jpy "print(sum(1 for o in d['ops'] if o['pid'] == $hp and o['state'] == 'IN_PROGRESS'))" <<<"$ops")"
expect "ops: SUBMITTED" $((NOPS - WINDOW)) \
	"$(jpy "print(sum(1 for o in d['ops'] if o['pid'] == $hp and o['state'] == 'SUBMITTED'))" <<<"$ops")"
expect "ops: total_bytes" $((NOPS * 4096)) \
	"$(jpy "print(sum(o['total_bytes'] for o in d['ops'] if o['pid'] == $hp))" <<<"$ops")"
expect "ops text: the helper's" $NOPS \
	"$("$X" ops | awk -v p="$hp" 'NR > 1 && $1 == p && $NF == "ioctl"' | wc -l)"
"$X" ops | head -1 | grep -q '^pid  *state' || fail "ops text: no header"

q=$("$X" queue --json)
expect "queue: the helper's queued ops" $((NOPS - WINDOW)) \
	"$(jpy "print(sum(1 for o in d['ops'] if o['pid'] == $hp and o['device'] == 'null'
		and o['class'] == 'normal' and o['state'] == 'queued'))" <<<"$q")"
expect "queue: null in flight" $WINDOW \
	"$(jpy "print([x['inflight_chunks'] for x in d['devices'] if x['device'] == 'null'][0])" <<<"$q")"
expect "queue: rxe0 listed" True \
	"$(jpy "print(any(x['device'] == 'rxe0' for x in d['devices']))" <<<"$q")"
expect "queue text: the helper's" $((NOPS - WINDOW)) \
	"$("$X" queue | awk -v p="$hp" '$1 == "null" && $3 == p' | wc -l)"

p=$("$X" peers --json)
expect "peers: the RDMA connection" True \
	"$(jpy "print(any(c['transport'] == 'rdma' and c['side'] == 'active' and
		c['state'] == 'up' and c['peer'] == '$PEER:$PORT' and c['claimed'] == 1
		for c in d['peers']))" <<<"$p")"
expect "peers: null peers up" $((null0 + 1)) "$(null_up)"
"$X" peers | grep -q " $PEER:" || fail "peers text: no $PEER"

expect "quarantine: the helper's region" 1 \
	"$("$X" quarantine --json | jpy "print(sum(1 for e in d['quarantine'] if e['kind'] == 'region'
		and e['pid'] == $hp and e['bytes'] == $((NOPS * 4096)) and e['reason'] == 'deregistered-in-use'))")"
"$X" quarantine | grep -q "^region  *$hp  *$((NOPS * 4096)) " || fail "quarantine text"

st=$("$X" status --json)
jpy "assert (d['ops'] >= $NOPS and d['quarantine_entries'] >= 1 and
	d['connections'] >= 2 and d['ops_live'] >= $NOPS and 'null' in d['devices'])" <<<"$st" ||
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
	jpy 'assert "stats" in d' <<<"$l" || fail "--watch round: $l"
done <"$TMP/watch"

# The helper exits: the kernel drains its ops and frees its region.
eval "exec $hold_in>&-"
wait "$hp"
expect "helper exit" 0 $?
HOLD_PID=
wait_counter ops_live "$live0"
expect "ops_live after" "$live0" "$(counter ops_live)"
wait_counter quarantined_pages "$qpages0"
expect "quarantined_pages after" "$qpages0" "$(counter quarantined_pages)"
expect "ops: the helper's after" 0 \
	"$("$X" ops --json | jpy "print(sum(1 for o in d['ops'] if o['pid'] == $hp))")"
expect "quarantine: the helper's after" 0 \
	"$("$X" quarantine --json | jpy "print(sum(1 for e in d['quarantine'] if e['pid'] == $hp))")"

# Without debugfs: the tables say so and exit 1; stats and status work.
# shellcheck disable=SC2016
unshare -m bash -c 'umount -l /sys/kernel/debug &&
	{ "$0" ops; echo rc=$?; "$0" stats >/dev/null; echo rc=$?;
	  "$0" status --json; echo rc=$?; }' "$X" >"$TMP/nodebugfs" 2>&1
grep -q 'debugfs is not mounted' "$TMP/nodebugfs" || fail "no debugfs: $(cat "$TMP/nodebugfs")"
expect "no debugfs: exits" "rc=1 rc=0 rc=0" "$(grep -o 'rc=[0-9]*' "$TMP/nodebugfs" | xargs)"
grep '^{' "$TMP/nodebugfs" | jpy 'assert d["debugfs"] is False and "not mounted" in d["debugfs_error"]' ||
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
jpy 'assert d["debugfs"] is False and "ioctl_error" in d' <"$TMP/status.json" ||
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
	"$("$X" peers --json | jpy 'print(" ".join(p["newcol"] for p in d["peers"][:2]))')"
"$X" peers --json | jpy 'assert d["peers"][2]["newcol"] == "\ufffd\ufffd"' ||
	fail "fake peers: bytes that are not UTF-8"
"$X" peers | head -1 | grep -q 'newcol$' || fail "fake peers text: no newcol"
"$X" peers | grep -q $'\033' && fail "fake peers text: an escape reaches the terminal"
"$X" ops --json 2>"$TMP/err" | jpy 'assert len(d["ops"][0]) == 64' || fail "fake ops: 70 fields"
grep -q 'first 64 columns' "$TMP/err" || fail "fake ops: no warning"
unset XFERK_ROOT

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "pass"

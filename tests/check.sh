#!/usr/bin/env bash
# make check: every test xferk has.
#   host   build with -Werror, unit programs, NIXL and its xferk plugin
#          (make nixl); then, while the VMs run, checkpatch, man page lint
#          and a DKMS build of the module
#   stock  Debian's 6.1 kernel in qemu: integration programs over rxe
#   twohost  two VMs on Debian's kernel: tests/twohost/ (tests/vm/twohost.sh)
#   debug  the debug kernel (KASAN, lockdep, kmemleak): KUnit + integration
# The VM runs go in two lanes at the same time: stock then twohost, and
# debug; each run has its own log.
# Ends with "N passed, N failed, N skipped" and exits non-zero on any failure.
# XFERK_KERNELS="stock" (or "twohost", "debug", any subset) limits the VM runs;
# another name is refused (exit 2).
#
# tests/check.sh --quick (make check-quick), for iteration: the host stage
# without the DKMS and NIXL builds, and the stock VM (started once the
# unit programs have run) without NIXL's tests, the Python package's, the
# CLI's and the benchmark rows (QUICK_SKIP).
source "$(dirname "$0")/vm/lib.sh"
cd "$XFERK_SRC"

QUICK_SKIP='nixl*|python*|cli|xferk-bench'
quick=0
case "${1:-}" in
--quick) quick=1 ;;
"") ;;
*) echo "usage: tests/check.sh [--quick]" >&2; exit 2 ;;
esac

# XFERK_KERNELS="stock twohost debug" (the default) or a subset.
stages=${XFERK_KERNELS:-stock twohost debug}
only='*'
if [ $quick -eq 1 ]; then
	stages=stock
	only="!($QUICK_SKIP)"
fi
for stage in $stages; do
	case $stage in
	stock|twohost|debug) ;;
	*) echo "tests/check.sh: unknown stage '$stage' in XFERK_KERNELS (stock, twohost, debug)" >&2
	   exit 2 ;;
	esac
done
selected() { [[ " $stages " == *" $1 "* ]]; }

summary=$XFERK_BUILD/check/results
logs=$XFERK_BUILD/check/logs
rm -rf "$XFERK_BUILD/check"
mkdir -p "$summary" "$logs"
start=$(date +%s)

record() { echo "$1 host/$2" | tee -a "$summary/host"; }

ensure_packages
# A host program: 0 passes, 77 skips (a tool is missing), anything else
# fails.
host_script() {
	local name=$1 rc=0
	shift
	"$@" >"$logs/${name//\//_}.log" 2>&1 || rc=$?
	case $rc in
	0) record PASS "$name" ;;
	77) record SKIP "$name"; sed 's/^/    | /' "$logs/${name//\//_}.log" ;;
	*) record FAIL "$name"; sed 's/^/    | /' "$logs/${name//\//_}.log" ;;
	esac
}
if make -s -j"$(nproc)" lib tools tests EXTRA_CFLAGS=-Werror >"$logs/build.log" 2>&1; then
	record PASS build
	for t in "$XFERK_BUILD"/tests/unit/*; do
		host_script "unit/$(basename "$t")" "$t"
	done
else
	record FAIL build
	sed 's/^/    | /' "$logs/build.log"
fi
# NIXL and the plugin (cached after the first run; 77 without the
# sources): the VMs' NIXL tests use them.
[ $quick -eq 1 ] || host_script nixl libxferk/nixl/build.sh

# The VM runs go in two lanes at the same time: the stock VM, then the
# two-VM suite; and the debug VM. A guest's vCPUs sit idle for about half
# of its run (timers, deadlines, one busy thread of two), and the host's
# two cores take the other lane's work meanwhile. The two-VM suite (two
# guests of its own) overlaps only the end of the debug run: with all
# three at once, the host had no idle time left and every run took about
# twice as long. Each run's output goes to its log, shown when it ends.

# run_stage STAGE: one VM run, its output in its log; then, in turn with
# the other lane (the print lock), the log and the run's summary.
run_stage() {
	local stage=$1 dir=$1 t0
	t0=$(date +%s)
	[ "$stage" = twohost ] && dir=stock-twohost
	# A summary from an earlier run must not count for this one.
	rm -f "$XFERK_BUILD/vm/$dir/summary"
	case "$stage" in
	twohost) tests/vm/run twohost stock ;;
	*) tests/vm/run test "$stage" "$only" ;;
	esac >"$logs/vm-$stage.log" 2>&1 || true
	(
		flock 7
		echo "$stage: took $(( $(date +%s) - t0 ))s, ended $(( $(date +%s) - start ))s into make check"
		cat "$logs/vm-$stage.log"
		cp "$XFERK_BUILD/vm/$dir/summary" "$summary/$stage" 2>/dev/null || true
	) 7>"$logs/print.lock"
}

# Background jobs ignore SIGINT: an interrupted make check ends its runs,
# rather than leave a lane to start its next one unwatched.
trap 'trap - INT TERM; kill -TERM 0' INT TERM
lanes=()
if selected stock || selected twohost; then
	{
		! selected stock || run_stage stock
		! selected twohost || run_stage twohost
	} &
	lanes+=($!)
fi
if selected debug; then
	run_stage debug &
	lanes+=($!)
fi
[ ${#lanes[@]} -eq 0 ] || echo "VM runs started:$(printf ' %s' $stages) (logs: $logs/vm-*.log)"

# The host checks meanwhile, their output in turn with the lanes'.
(
	flock 7
	if tests/lint.sh >"$logs/lint.log" 2>&1; then
		record PASS checkpatch
	else
		record FAIL checkpatch
		sed 's/^/    | /' "$logs/lint.log"
	fi
	host_script manlint tests/manlint.sh
	[ $quick -eq 1 ] || host_script dkms tests/dkms.sh
) 7>"$logs/print.lock"
wait "${lanes[@]}" || true
# No summary means the harness failed before it could judge, or a lane
# ended early: count it.
for stage in $stages; do
	[ -e "$summary/$stage" ] || echo "FAIL $stage/harness" | tee "$summary/$stage"
done

passed=$(cat "$summary"/* 2>/dev/null | grep -c '^PASS ' || true)
failed=$(cat "$summary"/* 2>/dev/null | grep -c '^FAIL ' || true)
skipped=$(cat "$summary"/* 2>/dev/null | grep -c '^SKIP ' || true)
echo "make check took $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

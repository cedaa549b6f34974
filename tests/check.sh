#!/usr/bin/env bash
# make check: every test xferk has, in order of cost.
#   host   build with -Werror, unit programs, checkpatch, man page lint,
#          a DKMS build of the module, NIXL and its xferk plugin (make nixl)
#   stock  Debian's 6.1 kernel in qemu: integration programs over rxe
#   twohost  two VMs on Debian's kernel: tests/twohost/ (tests/vm/twohost.sh)
#   debug  the debug kernel (KASAN, lockdep, kmemleak): KUnit + integration
# Ends with "N passed, N failed, N skipped" and exits non-zero on any failure.
# XFERK_KERNELS="stock" (or "twohost", "debug", any subset) limits the VM runs.
#
# tests/check.sh --quick (make check-quick), for iteration: the host stage
# without the DKMS and NIXL builds, then the stock VM without NIXL's tests,
# the Python package's, the CLI's and the benchmark rows (QUICK_SKIP).
source "$(dirname "$0")/vm/lib.sh"
cd "$XFERK_SRC"

QUICK_SKIP='nixl*|python*|cli|xferk-bench'
quick=0
case "${1:-}" in
--quick) quick=1 ;;
"") ;;
*) echo "usage: tests/check.sh [--quick]" >&2; exit 2 ;;
esac

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
if tests/lint.sh >"$logs/lint.log" 2>&1; then
	record PASS checkpatch
else
	record FAIL checkpatch
	sed 's/^/    | /' "$logs/lint.log"
fi
host_script manlint tests/manlint.sh
if [ $quick -eq 0 ]; then
	host_script dkms tests/dkms.sh
	# NIXL and the plugin (cached after the first run); 77 without the
	# sources.
	host_script nixl libxferk/nixl/build.sh
fi

# XFERK_KERNELS="stock twohost debug" (the default) or a subset.
stages=${XFERK_KERNELS:-stock twohost debug}
only='*'
if [ $quick -eq 1 ]; then
	stages=stock
	only="!($QUICK_SKIP)"
fi
for stage in $stages; do
	case "$stage" in
	twohost) tests/vm/run twohost stock || true; dir=stock-twohost ;;
	*) tests/vm/run test "$stage" "$only" || true; dir=$stage ;;
	esac
	# No summary means the harness failed before it could judge: count it.
	cp "$XFERK_BUILD/vm/$dir/summary" "$summary/$stage" 2>/dev/null ||
		echo "FAIL $stage/harness" | tee "$summary/$stage"
done

passed=$(cat "$summary"/* 2>/dev/null | grep -c '^PASS ' || true)
failed=$(cat "$summary"/* 2>/dev/null | grep -c '^FAIL ' || true)
skipped=$(cat "$summary"/* 2>/dev/null | grep -c '^SKIP ' || true)
echo "make check took $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

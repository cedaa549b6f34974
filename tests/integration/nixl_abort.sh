#!/bin/bash
# The data-integrity check NIXL lacks: transfers aborted through NIXL
# (release_xfer_handle in flight) and their buffers reused at once, with the
# xferk backend (tests/nixl/abort_reuse.py). Fails when xferk lets a late
# access corrupt a reused buffer. UCX's run of the same experiment is a
# comparison, not a test: make bench prints it (tests/nixl/bench.sh).
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
need_python_modules numpy
args=(--size $((8 << 20)) --iterations 20)
# RDMA is ~28x slower on the debug kernel.
[ "${XFERK_KERNEL:-stock}" = debug ] && args=(--size $((1 << 20)) --iterations 3)
prog=$XFERK_SRC/tests/nixl/abort_reuse.py
cd /tmp || exit 1
/usr/bin/python3 "$prog" XFERK "${args[@]}" --expect-clean
rc=$?
# A quarantined op's second release waits (tests/nixl/release_quarantined.py).
/usr/bin/python3 "$XFERK_SRC/tests/nixl/release_quarantined.py" || rc=1
exit $rc

#!/bin/bash
# Runs in a two-VM guest (tests/twohost/97_nixl.sh, 98_nixl_faults.sh): one
# side of tests/nixl/PROGRAM.py over this host's xferk address, in
# /ctl/x/PROGRAM-BACKEND. vllm_shape holds XFERK to a clean abort
# (--expect-clean). XFERK-request is XFERK with every engine fenced per
# request (NIXL_XFERK_FENCE=request).
#   twohost.sh vllm_shape|vllm_faults target|initiator XFERK|XFERK-request|UCX [ARG...]
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
need_python_modules numpy
# UCX warns for each operation a released handle leaves (thousands).
export NIXL_XFERK_IP_ADDR=$XFERK_ADDR UCX_LOG_LEVEL=error
prog=$1 role=$2 variant=$3 backend=${3%-request}
shift 3
[ "$variant" = XFERK-request ] && export NIXL_XFERK_FENCE=request
dir=/ctl/x/$prog-$variant
mkdir -p "$dir"
args=("$@")
[ "$prog" = vllm_shape ] && [ "$backend" = XFERK ] && args+=(--expect-clean)
cd /tmp || exit 1
exec /usr/bin/python3 "$XFERK_SRC/tests/nixl/$prog.py" "$role" "$backend" "$dir" "${args[@]}"

#!/bin/bash
# Runs in a two-VM guest (tests/twohost/97_nixl.sh): one side of
# tests/nixl/vllm_shape.py over this host's xferk address, in
# /ctl/x/vllm-BACKEND. XFERK is held to a clean abort (--expect-clean);
# UCX's numbers are printed beside it.
#   twohost.sh target|initiator XFERK|UCX
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
/usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "SKIP: python3-numpy missing"; exit 77; }
# UCX warns for each operation a released handle leaves (thousands).
export NIXL_XFERK_IP_ADDR=$XFERK_ADDR UCX_LOG_LEVEL=error
dir=/ctl/x/vllm-$2
mkdir -p "$dir"
flags=()
[ "$2" = XFERK ] && flags=(--expect-clean)
cd /tmp || exit 1
exec /usr/bin/python3 "$XFERK_SRC/tests/nixl/vllm_shape.py" "$1" "$2" "$dir" "${flags[@]}"

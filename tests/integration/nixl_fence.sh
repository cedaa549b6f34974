#!/bin/bash
# fence=request through NIXL's Python API (tests/nixl/request_fence.py): a
# peer gets windows over its live requests' blocks only, never an export
# of a whole region; raw control frames (tests/nixl/ctrl_frames.py). Then
# NIXL's own tests, unmodified, with every engine fenced per request
# (NIXL_XFERK_FENCE=request).
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "windows themselves run there in window and window_abort"
need_python_modules numpy
rc=0
(cd /tmp && /usr/bin/python3 "$XFERK_SRC/tests/nixl/request_fence.py") || rc=1
(cd /tmp && /usr/bin/python3 "$XFERK_SRC/tests/nixl/ctrl_frames.py") || rc=1
NIXL_XFERK_FENCE=request nixl_suite || rc=1
exit $rc

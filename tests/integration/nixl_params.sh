#!/bin/bash
# The XFERK backend's parameters through NIXL's Python API
# (tests/nixl/params.py): qps out of range refused, qps 2 used.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "the plugin parses them; sessions of several QPs run there in qps"
need_python_modules numpy
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/params.py"

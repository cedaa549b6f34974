#!/bin/bash
# The target side of an abort through NIXL's Python API
# (tests/nixl/target_revoke.py): remove_remote_agent() revokes what the
# peer may reach, so a buffer reused at once stays intact while the peer's
# WRITE is still in flight.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "revokes themselves run there in window and window_abort"
need_python_modules numpy
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/target_revoke.py"

#!/bin/bash
# The target side of an abort through NIXL's Python API
# (tests/nixl/target_revoke.py): remove_remote_agent() revokes what the
# peer may reach, so a buffer reused at once stays intact while the peer's
# WRITE is still in flight.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "revokes themselves run there in window and window_abort"
/usr/bin/python3 -c "import numpy" 2>/dev/null || { echo "SKIP: python3-numpy missing"; exit 77; }
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/target_revoke.py"

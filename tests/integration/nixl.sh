#!/bin/bash
# NIXL's own Python tests, unmodified, with the xferk backend:
# test/python/test_nixl_api.py and test_nixl_bindings.py --backend XFERK.
# Needs `make nixl` (build/nixl/env); skips (77) without it. Prints
# pytest's summary; passes when pytest does (no test failed).
set -u
if [ "${XFERK_KERNEL:-stock}" = debug ]; then
	echo "SKIP: NIXL's tests run on the stock kernel (importing torch takes minutes on the"
	echo "debug kernel); nixl_abort exercises the plugin there"
	exit 77
fi
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
nixl_suite

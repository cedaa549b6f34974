#!/bin/bash
# Sourced by the NIXL tests and nixlbench's runner: NIXL's environment as
# `make nixl` wrote it (they skip, 77, without it), the address the plugin
# uses, and UCX held to the rxe device (RC for the data, UD for its wire-up)
# so that both backends move bytes over the same device.
env=${XFERK_BUILD:-build}/nixl/env
if [ ! -e "$env" ]; then
	echo "SKIP: $env missing: run 'make nixl' (needs the NIXL sources, see Documentation/nixl.md)"
	exit 77
fi
# shellcheck source=/dev/null
. "$env"
export NIXL_XFERK_IP_ADDR=${XFERK_TEST_PEER:-10.99.0.1} PYTHONDONTWRITEBYTECODE=1
export UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=rxe0:1

# need_python_modules MODULE...: skips (77) unless python3 finds every
# MODULE. It looks them up without importing them (importing torch alone
# takes about 14 s in the test VM), so a module that is installed but
# fails to import is not skipped: the test that imports it fails.
need_python_modules() {
	local missing
	missing=$(/usr/bin/python3 -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@") ||
		{ echo "SKIP: /usr/bin/python3 could not look the modules up"; exit 77; }
	if [ -n "$missing" ]; then
		echo "SKIP: python3 modules missing: $missing (python3-${missing// / python3-})"
		exit 77
	fi
}

# nixl_suite: NIXL's own Python tests, unmodified, with --backend XFERK;
# skips (77) without the Python modules they import. pytest's status.
nixl_suite() {
	need_python_modules pytest torch numpy
	(cd /tmp && /usr/bin/python3 -m pytest -rs -v -p no:cacheprovider \
		--rootdir "$NIXL_SRC/test/python" "$NIXL_SRC/test/python/test_nixl_api.py" \
		"$NIXL_SRC/test/python/test_nixl_bindings.py" --backend XFERK)
}

# stock_only WHY: skips (77) on the debug kernel a test whose subject does
# not differ between kernels (the debug kernel's time budget).
stock_only() {
	if [ "${XFERK_KERNEL:-stock}" = debug ]; then
		echo "SKIP: runs on the stock kernel (the debug kernel's time budget; $1)"
		exit 77
	fi
}

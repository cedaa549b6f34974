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

# nixl_suite: NIXL's own Python tests, unmodified, with --backend XFERK;
# skips (77) without the Python modules they import. pytest's status.
nixl_suite() {
	local m
	for m in pytest torch numpy; do
		/usr/bin/python3 -c "import $m" 2>/dev/null ||
			{ echo "SKIP: python3 module $m missing (python3-$m)"; exit 77; }
	done
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

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

# stock_only WHY: skips (77) on the debug kernel a test whose subject does
# not differ between kernels (the debug kernel's time budget).
stock_only() {
	if [ "${XFERK_KERNEL:-stock}" = debug ]; then
		echo "SKIP: runs on the stock kernel (the debug kernel's time budget; $1)"
		exit 77
	fi
}

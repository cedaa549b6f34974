#!/bin/bash
# The XFERK backend's devices and rails through NIXL's Python API
# (tests/nixl/rails.py), with a second soft-RoCE device: rxe1 on dummy1
# (10.99.1.1/24), added here and removed at the end.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "rails themselves run there in the rails test"
need_python_modules numpy
cleanup() {
	rdma link delete rxe1 2>/dev/null
	ip link del dummy1 2>/dev/null
}
trap cleanup EXIT
cleanup
ip link add dummy1 type dummy && ip addr add 10.99.1.1/24 dev dummy1 &&
	ip link set dummy1 up && rdma link add rxe1 type rxe netdev dummy1 ||
	{ echo "cannot add rxe1 on dummy1"; exit 1; }
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/rails.py"

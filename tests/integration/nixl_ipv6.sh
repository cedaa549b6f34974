#!/bin/bash
# The XFERK backend over IPv6, its control listener on a chosen port,
# through NIXL's Python API (tests/nixl/ipv6.py): fd99::1/64 on rxe0's
# dummy0, and xferk reloaded with listen_addr=:: (IPv6 peers); both are
# undone at the end.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "the plugin's addresses do not differ between kernels"
need_python_modules numpy
[ -n "${XFERK_MODDIR:-}" ] || { echo "SKIP: no XFERK_MODDIR to reload xferk from"; exit 77; }
ADDR=fd99::1
load() { insmod "$XFERK_MODDIR/kmod/xferk.ko" "$@" && chgrp xferk /dev/xferk; }
undo() {
	ip addr del $ADDR/64 dev dummy0 2>/dev/null
	if ! { rmmod xferk && load; }; then
		echo "xferk not reloaded with its defaults"
	fi
}
ip addr add $ADDR/64 dev dummy0 nodad || { echo "cannot add $ADDR to dummy0"; exit 1; }
trap undo EXIT
if ! { rmmod xferk && load listen_addr=::; }; then
	echo "cannot reload xferk with listen_addr=::"
	exit 1
fi
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/ipv6.py" $ADDR

#!/bin/bash
# NIXL requests of more descriptors than one xferk op takes: 8,192, 65,536
# and 262,144 descriptors of 256 bytes (8,192 on the debug kernel), WRITE with
# a notification and READ back, every byte verified, the notification
# only after the data; one released right after posting and its buffer
# reused at once (tests/nixl/many_descs.py); on the stock kernel the same
# again with the target fenced per request (NIXL_XFERK_FENCE=request: each
# request gets windows over its blocks). Then a notification whose
# transfer has one op held (a swallowed completion) is not delivered while
# the other op's data event is in, nor after the release aborted it
# (tests/nixl/notif_held.py); and one the target cannot hold fails its
# transfer (tests/nixl/notif_refused.py).
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
need_python_modules numpy
counts=(8192 65536 262144)
[ "${XFERK_KERNEL:-stock}" = debug ] && counts=(8192)
cd /tmp || exit 1
/usr/bin/python3 "$XFERK_SRC/tests/nixl/many_descs.py" "${counts[@]}"
rc=$?
if [ "${XFERK_KERNEL:-stock}" != debug ]; then
	echo "fenced per request:"
	NIXL_XFERK_FENCE=request /usr/bin/python3 "$XFERK_SRC/tests/nixl/many_descs.py" \
		"${counts[@]}" || rc=1
fi
/usr/bin/python3 "$XFERK_SRC/tests/nixl/notif_held.py" || rc=1
# Plugin logic only: on the stock kernel (the debug kernel's time budget).
[ "${XFERK_KERNEL:-stock}" = debug ] ||
	/usr/bin/python3 "$XFERK_SRC/tests/nixl/notif_refused.py" || rc=1
exit $rc

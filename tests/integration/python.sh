#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Python package libxferk/python (xferk, over ctypes): its pytest suite
# against the loaded module, the example included. Exit 0 pass, 1 fail,
# 77 skip (no Debian python3-pytest, or no /dev/xferk).
#
#   python.sh           every test but tests/test_torch.py
#   python.sh torch     tests/test_torch.py (python_torch.sh): importing
#                       torch alone takes minutes in the TCG VM
set -u
SRC=${XFERK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${XFERK_BUILD:-$SRC/build}
TESTS=$SRC/libxferk/python/tests
PY=/usr/bin/python3

if [ "${1:-}" = torch ] && [ "${XFERK_KERNEL:-stock}" = debug ]; then
	echo "SKIP: test_torch.py runs on the stock kernel (importing torch takes"
	echo "minutes on the debug kernel); python drives the same commands there"
	exit 77
fi
if ! [ -x $PY ] || ! $PY -c 'import pytest' 2>/dev/null; then
	echo "skip: $PY with pytest (Debian python3-pytest) is not installed"
	exit 77
fi
if ! [ -e /dev/xferk ]; then
	echo "skip: no /dev/xferk"
	exit 77
fi
if [ "${1:-}" = torch ]; then
	if ! $PY -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)'; then
		echo "skip: torch is not installed for $PY"
		exit 77
	fi
	set -- "$TESTS/test_torch.py"
else
	set -- --ignore="$TESTS/test_torch.py" "$TESTS"
fi
export XFERK_LIB=$BUILD/lib/libxferk.so.0
if ! [ -e "$XFERK_LIB" ]; then
	echo "no $XFERK_LIB: make lib"
	exit 1
fi
export PYTHONPATH=$SRC/libxferk/python
# tests/test_cuda.py: a test double of the CUDA driver, over vgem.
export XFERK_CUDA_DOUBLE=$BUILD/tests/doubles/libcuda-vgem-double.so
# The VM sees the source tree read-only: no bytecode, no pytest cache.
export PYTHONDONTWRITEBYTECODE=1
cd /tmp || exit 1
$PY -m pytest -q -p no:cacheprovider -rsP --durations=8 "$@"
case $? in
0) exit 0 ;;
5) echo "no tests collected"; exit 1 ;;
*) exit 1 ;;
esac

#!/bin/bash
# VRAM_SEG through the xferk backend, against a TEST DOUBLE of the CUDA
# driver (tests/doubles/cuda_vgem.c: vgem dma-bufs as "device memory"):
# VRAM and DRAM in every combination on both ends, READ and WRITE, every
# byte verified (tests/nixl/vram.py); then, with the double's device
# unable to export dma-bufs, no VRAM_SEG is offered and a VRAM
# registration fails, the backend's warning naming why. Not a GPU:
# tests/gpu/ is for a host with one.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
need_python_modules numpy
export XFERK_CUDA_DOUBLE=${XFERK_BUILD:-$XFERK_SRC/build}/tests/doubles/libcuda-vgem-double.so
[ -e "$XFERK_CUDA_DOUBLE" ] || { echo "no $XFERK_CUDA_DOUBLE: make tests"; exit 1; }
cd /tmp || exit 1
rc=0
/usr/bin/python3 "$XFERK_SRC/tests/nixl/vram.py" || rc=1
# The backend says why it offers no VRAM_SEG (a NIXL warning).
log=$(XFERK_CUDA_DOUBLE_NO_DMABUF=1 /usr/bin/python3 "$XFERK_SRC/tests/nixl/vram.py" \
	--no-dmabuf 2>&1) || rc=1
echo "$log"
echo "$log" | grep -q "VRAM_SEG not offered: CUDA device 0 cannot export dma-bufs" ||
	{ echo "FAIL: no warning naming what is missing"; rc=1; }
exit $rc

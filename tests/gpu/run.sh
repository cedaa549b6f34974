#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU memory through xferk on a host that has what this machine lacks: an
# NVIDIA GPU (open kernel modules, CUDA 11.7 or later), an RDMA NIC that
# reaches it peer to peer, xferk.ko loaded, torch with CUDA. Not part of
# make check (no GPU there); run it by hand after `make lib tests`:
#
#   XFERK_GPU_PEER=ADDR bash tests/gpu/run.sh
#
# ADDR: an address of this host on the RDMA NIC (a loopback session
# through the NIC; default: the first IPv4 address of the first RDMA
# device's netdev). Runs gpu_python.py (a torch CUDA tensor registered
# through the Python package, data both ways against host memory and
# between two GPU regions, verified on the GPU) and, if `make nixl` was
# run, tests/nixl/vram.py with torch tensors instead of the test double.
# Exit 0 pass, 1 fail, 77 skip (what is missing is printed).
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${XFERK_BUILD:-$SRC/build}
PY=${PYTHON:-python3}
skip() { echo "SKIP: $*"; exit 77; }

[ -e /dev/xferk ] || skip "no /dev/xferk (insmod xferk.ko)"
command -v nvidia-smi >/dev/null || skip "no NVIDIA driver (nvidia-smi)"
$PY -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null ||
	skip "torch with CUDA is not importable by $PY"
[ -e "$BUILD/lib/libxferk.so.0" ] || { echo "no $BUILD/lib/libxferk.so.0: make lib"; exit 1; }
if [ -z "${XFERK_GPU_PEER:-}" ]; then
	netdev=$(rdma link show 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") { print $(i + 1); exit } }')
	[ -n "$netdev" ] || skip "no RDMA device with a netdev (rdma link show)"
	XFERK_GPU_PEER=$(ip -4 -o addr show dev "$netdev" |
		awk '{ sub("/.*", "", $4); print $4; exit }')
	[ -n "$XFERK_GPU_PEER" ] || skip "$netdev has no IPv4 address: set XFERK_GPU_PEER"
fi
export XFERK_GPU_PEER XFERK_LIB=$BUILD/lib/libxferk.so.0 PYTHONPATH=$SRC/libxferk/python
unset XFERK_LIBCUDA XFERK_CUDA_DOUBLE
rc=0
$PY "$SRC/tests/gpu/gpu_python.py" || rc=1
if [ -e "$BUILD/nixl/env" ]; then
	(
		# shellcheck source=/dev/null
		. "$BUILD/nixl/env"
		export NIXL_XFERK_IP_ADDR=$XFERK_GPU_PEER
		$PY "$SRC/tests/nixl/vram.py"
	) || rc=1
else
	echo "NIXL: not built (make nixl), its VRAM_SEG run skipped"
fi
exit $rc

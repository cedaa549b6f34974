#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libxferk/python with a CPU torch.Tensor (tests/test_torch.py), apart from
# python.sh because importing torch takes minutes in the TCG VM. 77 without
# torch or python3-pytest.
d=$(dirname "${BASH_SOURCE[0]}")
# Installed as build/tests/integration/python, in the tree as python.sh.
if [ -x "$d/python" ]; then exec "$d/python" torch; fi
exec "$d/python.sh" torch

# SPDX-License-Identifier: GPL-2.0
"""examples/prefill_decode.py end to end, as a user runs it."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "prefill_decode.py")


def test_prefill_decode_example():
    r = subprocess.run([sys.executable, EXAMPLE], capture_output=True,
                       text=True, timeout=900)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "decode: verified" in r.stdout and "PASS" in r.stdout

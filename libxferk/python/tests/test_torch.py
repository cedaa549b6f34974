# SPDX-License-Identifier: GPL-2.0
"""A CPU torch.Tensor as registered memory (skipped without torch). Apart
from the rest: importing torch takes minutes in the TCG test VM, so
tests/integration/python_torch.sh runs this file on its own."""
import pytest

import xferk
from conftest import CONNECT_TIMEOUT, DEBUG, PEER, SLACK


def test_torch_tensor(dev):
    torch = pytest.importorskip("torch")
    n = 1 << 16 if DEBUG else 1 << 20
    t_src = torch.arange(n, dtype=torch.int32)
    t_dst = torch.zeros(n + SLACK // 4, dtype=torch.int32)
    conn = dev.connect(PEER, timeout=CONNECT_TIMEOUT)
    src = dev.register(t_src, xferk.Access.LOCAL_SRC | xferk.Access.LOCAL_DST)
    dst = dev.register(t_dst, xferk.Access.REMOTE_WRITE | xferk.Access.REMOTE_READ)
    assert src.nbytes == n * 4 and src.addr == t_src.data_ptr()
    assert src.obj is t_src
    with conn.import_token(dst.export(conn).token) as remote:
        dev.write(src, remote, [(0, 0, n * 4)]).result()
        assert torch.equal(t_dst[:n], t_src)
        assert int(t_dst[n:].abs().sum()) == 0
        # READ back into a slice (a view with a storage offset) of a tensor.
        base = torch.full((n + 16,), -1, dtype=torch.int32)
        view = base[16:]
        with dev.register(view, xferk.Access.LOCAL_DST) as back:
            assert back.addr == base.data_ptr() + 64 and back.nbytes == n * 4
            dev.read(back, remote, [(0, 0, n * 4)]).result()
        assert torch.equal(view, t_src) and int((base[:16] + 1).abs().sum()) == 0
    with pytest.raises(TypeError):
        dev.register(torch.zeros(64, 64)[:, ::2])

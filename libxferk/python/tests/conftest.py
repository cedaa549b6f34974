# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the xferk Python tests. They need /dev/xferk (the VM harness:
tests/integration/python.sh) and skip without it."""
import mmap
import os

import pytest

import xferk

DEBUG = os.environ.get("XFERK_KERNEL") == "debug"
PEER = os.environ.get("XFERK_TEST_PEER", "10.99.0.1")
CONNECT_TIMEOUT = 60 if DEBUG else 10
# Linux 6.1's rxe reads past its page map when an access ends exactly at the
# end of an MR of a multiple of 256 pages (see two_process.c): every
# buffer here has one page more than the transfers touch.
SLACK = 4096


def pytest_collection_modifyitems(config, items):
    if not os.path.exists("/dev/xferk"):
        skip = pytest.mark.skip(reason="no /dev/xferk (xferk.ko not loaded)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture
def dev():
    d = xferk.Device()
    yield d
    if not d.closed:
        d.close()


def mapping(n):
    """Anonymous page-aligned memory, as the C tests' t_map()."""
    return mmap.mmap(-1, n)


class Loop:
    """The C tests' t_setup(): a connection to PEER, a source region and a
    destination region exported and imported again (loopback)."""

    def __init__(self, dev, src_len, dst_len):
        self.dev = dev
        self.src_buf = mapping(src_len + SLACK)
        self.dst_buf = mapping(dst_len + SLACK)
        self.conn = dev.connect(PEER, timeout=CONNECT_TIMEOUT)
        self.src = dev.register(self.src_buf, xferk.Access.LOCAL_SRC |
                                xferk.Access.LOCAL_DST)
        rw = xferk.Access.REMOTE_READ | xferk.Access.REMOTE_WRITE
        self.dst = dev.register(self.dst_buf, rw)
        self.export = self.dst.export(self.conn)
        self.remote = self.conn.import_token(self.export.token)


@pytest.fixture
def loop(dev):
    n = (256 << 10) if DEBUG else (4 << 20)
    return Loop(dev, n, n)

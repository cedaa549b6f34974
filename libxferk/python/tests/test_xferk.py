# SPDX-License-Identifier: GPL-2.0
"""The xferk package against the running module (see conftest.py)."""
import asyncio
import ctypes
import errno
import gc
import os
import pickle
import weakref

import pytest

import xferk
from conftest import DEBUG, PEER, CONNECT_TIMEOUT, SLACK, mapping

try:
    import numpy as np
except ImportError:
    np = None

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PROT_READ, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 0x20


def pattern(n, seed):
    """n bytes that differ per seed and per position."""
    block = bytes((i * 131 + seed * 7 + (i >> 8)) & 0xff for i in range(4096))
    out = bytearray(block * (n // 4096 + 1))[:n]
    for page in range(0, n, 4096):  # make each page unique
        out[page:page + 8] = (page // 4096 + seed * 1000003).to_bytes(8, "little")
    return bytes(out[:n])


class Weakable(bytearray):
    pass


# --- device --------------------------------------------------------------

def test_device_info(dev):
    info = dev.info()
    assert info["abi_version"] == dev.abi_version >= 1
    assert dev.has(xferk.Feature.INFO) and dev.has(xferk.Feature.DATAPATH)
    assert isinstance(info["features"], xferk.Feature)
    assert info["fd"] >= 0 and os.path.samefile(f"/proc/self/fd/{info['fd']}",
                                                "/dev/xferk")
    assert info["library"]
    dev.close()
    dev.close()  # twice is harmless
    with pytest.raises(xferk.XferkError) as e:
        dev.register(bytearray(4096))
    assert e.value.errno == errno.EBADF


def test_device_context_manager():
    with xferk.Device() as d:
        r = d.register(bytearray(4096))
        fd = d.fd
    assert d.closed and r.closed and r.obj is None
    assert not os.path.exists(f"/proc/self/fd/{fd}") or \
        not os.path.samefile(f"/proc/self/fd/{fd}", "/dev/xferk")


# --- registration --------------------------------------------------------

def test_register_bad_input(dev):
    with pytest.raises(xferk.XferkError) as e:
        dev.register(bytearray(4096), access=0)
    assert e.value.errno == errno.EINVAL and isinstance(e.value, OSError)
    with pytest.raises(xferk.XferkError) as e:
        dev.register(bytearray(4096), access=0x10)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(xferk.XferkError) as e:
        dev.register(bytearray())  # length 0
    assert e.value.errno == errno.EINVAL
    with pytest.raises(xferk.XferkError) as e:
        dev.register_address(ctypes.c_uint64(-4096).value, 8192)
    assert e.value.errno == errno.EOVERFLOW

    # Unmapped memory: EFAULT.
    p = libc.mmap(None, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    assert p not in (None, ctypes.c_void_p(-1).value)
    try:
        # Read-only memory as a destination the NIC writes: EFAULT.
        with pytest.raises(xferk.XferkError) as e:
            dev.register_address(p, 8192, xferk.Access.LOCAL_DST)
        assert e.value.errno == errno.EFAULT
        # ... but a source is fine.
        with dev.register_address(p, 8192, xferk.Access.LOCAL_SRC) as r:
            assert r.handle
    finally:
        libc.munmap(p, 8192)
    with pytest.raises(xferk.XferkError) as e:
        dev.register_address(p, 8192, xferk.Access.LOCAL_SRC)
    assert e.value.errno == errno.EFAULT

    # What Python can tell before the kernel.
    with pytest.raises(TypeError):
        dev.register(b"read-only bytes")
    with pytest.raises(TypeError):
        dev.register(object())
    if np is not None:
        with pytest.raises(TypeError):
            dev.register(np.zeros((64, 64), dtype=np.uint8)[:, ::2])


def test_region_keeps_object_alive(dev):
    buf = Weakable(8192)
    ref = weakref.ref(buf)
    r = dev.register(buf)
    del buf
    gc.collect()
    assert ref() is not None, "registered memory was freed"
    with pytest.raises(BufferError):
        ref().extend(b"x")  # cannot move while registered
    r.close()
    r.close()
    gc.collect()
    assert ref() is None, "the region kept its object after close()"


def test_region_context_manager(dev):
    buf = Weakable(4096)
    ref = weakref.ref(buf)
    with dev.register(buf) as r:
        h = r.handle
        assert r.nbytes == 4096 and r.access == xferk.Access.ALL
    del buf
    gc.collect()
    assert r.closed and ref() is None
    # The kernel no longer knows the handle.
    assert xferk.lib().mr_dereg(dev._x, h) == -errno.ESTALE


# --- tokens --------------------------------------------------------------

def test_token_forms(loop):
    tok = loop.export.token
    assert isinstance(tok, bytes) and len(tok) == xferk.TOKEN_SIZE
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and isinstance(again, xferk.Token)
    assert xferk.Token.parse(str(tok)) == tok and len(str(tok)) == 128
    with pytest.raises(xferk.XferkError) as e:
        xferk.Token.parse("not a token")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(ValueError):
        xferk.Token(b"short")
    # An altered token is refused by the kernel.
    bad = bytearray(tok)
    bad[-1] ^= 1
    with pytest.raises(xferk.XferkError) as e:
        loop.conn.import_token(bytes(bad))
    assert e.value.errno in (errno.EACCES, errno.EINVAL)
    # The unpickled token imports.
    with loop.conn.import_token(again) as imp:
        assert imp.handle


def test_add_rail_errors(loop):
    # A rail through the session the handle uses already.
    with pytest.raises(xferk.XferkError) as e:
        loop.remote.add_rail(loop.conn, loop.export.token)
    assert e.value.errno == errno.EEXIST
    # Same session, but the rail is another range: its length differs.
    with loop.dst.export(loop.conn, 0, 4096) as short:
        with pytest.raises(xferk.XferkError) as e:
            loop.remote.add_rail(loop.conn, short.token)
        assert e.value.errno == errno.EINVAL


# --- transfers ------------------------------------------------------------

def test_loopback_write_read(loop, dev):
    n = loop.src.nbytes - SLACK
    data = pattern(n, 1)
    loop.src_buf[:n] = data
    loop.dst_buf[:] = b"\xee" * len(loop.dst_buf)
    op = dev.write(loop.src, loop.remote, [(0, 0, n // 2),
                                            (n // 2, n // 2, n - n // 2)])
    s = op.result()
    assert s.state == xferk.State.SUCCEEDED and s.succeeded
    assert s.buffer_reusable and s.physical_complete
    assert s.transferred_bytes == s.total_bytes == n
    assert s.total_fragments == s.completed_fragments == 2
    assert op.buffer_reusable
    op.release()
    assert loop.dst_buf[:n] == data, "WRITE: destination differs"
    assert loop.dst_buf[n:] == b"\xee" * SLACK, "WRITE: wrote past the end"

    # READ back into a zeroed source, at an unaligned offset.
    loop.src_buf[:n] = bytes(n)
    with dev.read(loop.src, loop.remote, [(5, 3, n - 8)]) as op:
        s = op.wait(physical=True)
        assert s.state == xferk.State.SUCCEEDED and s.transferred_bytes == n - 8
    assert op.released
    assert loop.src_buf[5:n - 3] == data[3:n - 5], "READ: source differs"
    assert loop.src_buf[:5] == bytes(5)

    # A fragment beyond the export: ERANGE, nothing submitted.
    with pytest.raises(xferk.XferkError) as e:
        dev.write(loop.src, loop.remote, [(0, loop.dst.nbytes - 1, 2)])
    assert e.value.errno == errno.ERANGE
    # A deadline in the past: ETIMEDOUT at submit.
    with pytest.raises(xferk.XferkError) as e:
        dev.write(loop.src, loop.remote, [(0, 0, 1)], deadline_ns=1)
    assert e.value.errno == errno.ETIMEDOUT


def test_general_fragments_and_transfer(loop, dev):
    data = pattern(8192, 2)
    loop.src_buf[:8192] = data
    s = dev.transfer([(loop.src, 0, 4096, loop.remote, 4096, xferk.WRITE),
                      (loop.src, 4096, 4096, loop.remote, 0, xferk.WRITE)],
                     timeout=60)
    assert s.succeeded and s.buffer_reusable
    assert loop.dst_buf[:4096] == data[4096:] and loop.dst_buf[4096:8192] == data[:4096]
    with pytest.raises(TypeError):
        dev.submit([(1234, 0, 1, loop.remote, 0, xferk.WRITE)])


@pytest.mark.skipif(np is None, reason="numpy not importable")
def test_numpy_fragments(loop, dev):
    nfr, ln = 64, 1000
    stride = ln + 24
    data = np.frombuffer(pattern(nfr * stride, 3), dtype=np.uint8)
    src = np.frombuffer(loop.src_buf, dtype=np.uint8)
    dst = np.frombuffer(loop.dst_buf, dtype=np.uint8)
    src[:nfr * stride] = data
    dst[:] = 0
    # Nx3 uint64: fragment i goes to slot nfr-1-i.
    i = np.arange(nfr, dtype=np.uint64)
    frags = np.stack([i * stride, (nfr - 1 - i) * stride + 7,
                      np.full(nfr, ln, dtype=np.uint64)], axis=1)
    s = dev.write(loop.src, loop.remote, frags).result()
    assert s.total_fragments == nfr and s.transferred_bytes == nfr * ln
    for k in range(nfr):
        a = (nfr - 1 - k) * stride + 7
        assert np.array_equal(dst[a:a + ln], data[k * stride:k * stride + ln]), k

    # A structured array, READ back in place.
    st = np.zeros(nfr, dtype=[("local_off", "<u8"), ("remote_off", "<u8"),
                              ("len", "<u8")])
    st["local_off"] = frags[:, 0]
    st["remote_off"] = frags[:, 1]
    st["len"] = ln
    src[:] = 0
    with dev.read(loop.src, loop.remote, st) as op:
        assert op.wait(physical=True).transferred_bytes == nfr * ln
    for k in range(nfr):
        assert np.array_equal(src[k * stride:k * stride + ln],
                              data[k * stride:k * stride + ln]), k

    # The conversion is one struct xferk_frag array in the library's layout.
    from xferk import _lib
    assert xferk.FRAG_DTYPE.itemsize == ctypes.sizeof(_lib.Frag)
    with pytest.raises(ValueError):
        dev.write(loop.src, loop.remote, np.zeros((4, 2), dtype=np.uint64))
    with pytest.raises(ValueError):
        dev.write(loop.src, loop.remote, np.array([[0, 0, -1]], dtype=np.int64))


# --- cancel, snapshots, quarantine ---------------------------------------

MS = 1_000_000


def set_param(name, value):
    path = f"/sys/module/xferk/parameters/{name}"
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(str(value))
    return old


@pytest.fixture
def null_loop(dev):
    """A slow null peer (CAP_SYS_ADMIN): fragments take seconds, no data
    moves; flush_timeout_ms 2000 so a quarantined op ends on its own."""
    if not dev.has(xferk.Feature.NULL_PEER | xferk.Feature.CANCEL):
        pytest.skip("no null peer or cancel")
    old = set_param("flush_timeout_ms", 2000)
    buf = mapping(2 << 20)
    region = dev.register(buf)

    def remote(delay_ms):
        conn = dev.connect_null(delay_ms * MS)
        return conn, conn.import_token(region.export(conn, 0, 2 << 20).token)

    yield region, remote
    set_param("flush_timeout_ms", old)


def test_cancel_and_snapshot(dev, null_loop):
    region, remote = null_loop
    slow = 3000 if DEBUG else 2000
    _, rem = remote(slow)
    op = dev.write(region, rem, [(i * 4096, i * 4096, 4096) for i in range(8)],
                   user_data=77)
    s = op.query()
    assert s.state in (xferk.State.SUBMITTED, xferk.State.IN_PROGRESS)
    assert not s.buffer_reusable and s.user_data == 77 and s.total_bytes == 8 * 4096
    with pytest.raises(xferk.WaitTimeout) as e:
        op.wait(timeout=0.01)
    assert e.value.errno == errno.ETIMEDOUT and isinstance(e.value, TimeoutError)
    assert e.value.snapshot is not None and not e.value.snapshot.settled
    # Not reusable: the region cannot go, the op cannot be released.
    with pytest.raises(xferk.QuarantinedError) as e:
        region.close()
    assert e.value.errno == errno.EBUSY and not region.closed
    with pytest.raises(xferk.QuarantinedError):
        op.release()
    assert not op.released
    s = op.cancel(drain_timeout=(120 if DEBUG else 60))
    assert s.state == xferk.State.DRAINED and s.buffer_reusable
    assert s.first_error == -errno.ECANCELED and s.cancel_requests == 1
    assert s.failure == xferk.Failure.CANCEL
    s = op.cancel(drain_timeout=1)  # twice: harmless
    assert s.state == xferk.State.DRAINED and s.cancel_requests == 2
    op.release()
    op.release()
    region.close()
    assert region.closed


def test_quarantined(dev, null_loop):
    region, remote = null_loop
    slow = 4 * (3000 if DEBUG else 2000)
    _, rem = remote(slow)
    op = dev.write(region, rem, [(0, 0, 8192)])
    with pytest.raises(xferk.QuarantinedError) as e:
        op.cancel(drain_timeout=0.2)
    q = e.value
    assert q.errno == errno.ETIMEDOUT and q.state == xferk.State.QUARANTINED
    assert q.buffer_reusable is False and q.snapshot.quarantined_bytes == 8192
    q2 = pickle.loads(pickle.dumps(q))  # e.g. from a multiprocessing worker
    assert type(q2) is xferk.QuarantinedError and q2.errno == errno.ETIMEDOUT
    assert q2.state == xferk.State.QUARANTINED
    with pytest.raises(xferk.QuarantinedError) as e:
        region.close()
    assert e.value.errno == errno.EBUSY and not region.closed
    assert region.obj is not None
    # The drain ends by itself (the null peer's teardown).
    s = op.wait(timeout=(240 if DEBUG else 120), physical=True)
    assert s.state == xferk.State.DRAINED and s.buffer_reusable
    assert s.late_completions == 1 and s.first_error == -errno.ECANCELED
    region.close()
    op.release()


def test_op_context_manager_cancels(dev, null_loop):
    region, remote = null_loop
    _, rem = remote(3000 if DEBUG else 2000)
    with pytest.raises(RuntimeError):
        with dev.write(region, rem, [(0, 0, 4096)]) as op:
            op.drain_timeout = 120 if DEBUG else 60
            raise RuntimeError("leave the block early")
    assert op.released and op._last.state == xferk.State.DRAINED


def test_device_close_drains(null_loop):
    d = xferk.Device()
    buf = Weakable(8192)
    ref = weakref.ref(buf)
    r = d.register(buf)
    conn = d.connect_null(1000 * MS)
    rem = conn.import_token(r.export(conn).token)
    op = d.write(r, rem, [(0, 0, 4096)])
    del buf
    d.close(drain_timeout=(120 if DEBUG else 60))
    assert d.closed and op.released and op._last.buffer_reusable
    gc.collect()
    assert ref() is None


# --- groups, notifications, windows ----------------------------------------

def test_group_and_events(loop, dev):
    if not dev.has(xferk.Feature.GROUPS | xferk.Feature.NOTIFY):
        pytest.skip("no groups or notifications")
    with dev.group(tag=5) as g:
        assert g.generation
        op1 = dev.write(loop.src, loop.remote, [(0, 0, 4096)], group=g,
                        notify_tag=11)
        op2 = dev.write(loop.src, loop.remote, [(4096, 4096, 4096)], group=g)
        gs = g.wait(timeout=60, physical=True)
        assert gs.ops == 2 and gs.ops_physical == 2 and gs.buffer_reusable
        assert gs.ops_in_state[xferk.State.SUCCEEDED] == 2
        op1.release()
        op2.release()
    loop.remote.notify(12)
    got = []
    for _ in range(20):
        evs, dropped = dev.events(16, timeout=(30 if DEBUG else 10))
        got += evs
        if len(got) >= 2:
            break
    assert [(e.type, e.tag) for e in got[:2]] == [
        (xferk.EventType.DATA, 11), (xferk.EventType.NOTE, 12)]
    assert got[0].bytes == 4096 and not got[0].incomplete
    assert got[0].export == loop.export.handle
    assert dev.events(16, timeout=0) == ([], 0)


def test_asyncio(loop, dev, null_loop):
    """Ops awaited in an asyncio loop through Device.fd (XFERK_FEAT_POLL):
    several at once, each woken when it settles, one by its deadline timer
    alone; a timeout raises WaitTimeout and cancels nothing; a notification
    wakes Device.readable()."""
    if not dev.has(xferk.Feature.POLL):
        pytest.skip("no XFERK_FEAT_POLL")
    region, remote = null_loop
    _, slow = remote(600000)  # a fragment takes ten minutes
    n = 64 << 10
    data = pattern(n, 4)
    loop.src_buf[:n] = data

    async def main():
        writes = [dev.write(loop.src, loop.remote, [(i * 4096, i * 4096, 4096)])
                  for i in range(n // 4096)]
        timed = dev.write(region, slow, [(0, 0, 4096)],
                          deadline_ns=xferk.now_ns() + 200 * MS)
        stuck = dev.write(region, slow, [(4096, 4096, 4096)])
        with pytest.raises(xferk.WaitTimeout) as e:
            await stuck.wait_async(0.05)
        assert not e.value.snapshot.settled
        done = await asyncio.wait_for(asyncio.gather(
            *(w.result_async() for w in writes),
            timed.wait_async()), 120)
        assert all(s.succeeded for s in done[:-1])
        assert done[-1].state == xferk.State.TIMED_OUT
        dev.wakeups()
        loop.remote.notify(13)
        assert await asyncio.wait_for(dev.readable(), 60) >= 1
        return writes, timed, stuck

    writes, timed, stuck = asyncio.run(main())
    assert loop.dst_buf[:n] == data
    assert stuck.query().cancel_requests == 0  # the timeout cancelled nothing
    for op in writes:
        op.release()
    # Their fragments take ten minutes: only the path's death ends them. A
    # cancel waits the first half of its drain budget (0.1 s), then kills
    # the path, which flushes them. With no escalation interval the kill
    # cannot be refused for following the timed op's own too closely; with
    # flush_timeout_ms 0 the teardown does not wait for fragments that are
    # due in ten minutes. The teardown is a work item: an op may still be
    # QUARANTINED at the budget, and ends once the flush is in.
    old = set_param("escalation_interval_ms", 0)
    flush = set_param("flush_timeout_ms", 0)
    try:
        for op in (timed, stuck):
            try:
                op.cancel(drain_timeout=0.2)
            except xferk.QuarantinedError:
                op.wait(timeout=(240 if DEBUG else 120), physical=True)
            op.release()
    finally:
        set_param("flush_timeout_ms", flush)
        set_param("escalation_interval_ms", old)
    evs, _ = dev.events(16, timeout=0)
    assert [(e.type, e.tag) for e in evs] == [(xferk.EventType.NOTE, 13)]


def test_window(loop, dev):
    if not dev.has(xferk.Feature.WINDOWS):
        pytest.skip("no windows")
    w = loop.dst.window(loop.conn, [(8192, 4096), (0, 4096)])
    assert w.length == 8192 and w.generation
    data = pattern(8192, 4)
    loop.src_buf[:8192] = data
    with loop.conn.import_token(w.token) as rem:
        dev.write(loop.src, rem, [(0, 0, 8192)]).result()
    assert loop.dst_buf[8192:12288] == data[:4096]
    assert loop.dst_buf[:4096] == data[4096:]
    how, _ = w.close_safely(timeout=30)
    assert how in (xferk.CLOSE_COOPERATIVE, xferk.CLOSE_FORCED)
    assert w.closed
    # Blocks meet page-aligned: a second block may not start mid-page.
    with pytest.raises(xferk.XferkError) as e:
        loop.dst.window(loop.conn, [(0, 4096), (8193, 4095)])
    assert e.value.errno == errno.EINVAL
    # A window of one block may start and end mid-page.
    if dev.has(xferk.Feature.WINDOW_EDGES):
        w = loop.dst.window(loop.conn, [(1, 100)])
        assert w.length == 100
        w.close_safely(timeout=30)


def test_connection_info(loop):
    info = loop.conn.info()
    assert info["state"] == xferk.ConnState.UP and info["path_gen"] >= 1
    assert 1 <= info["nr_qps"] <= 8
    # A session that exists is shared as it is, whatever QPs one asks for;
    # more than XFERK_MAX_QPS is refused.
    with loop.dev.connect(PEER, timeout=CONNECT_TIMEOUT, qps=2) as c:
        assert c.info()["nr_qps"] == info["nr_qps"]
    with pytest.raises(xferk.XferkError) as e:
        loop.dev.connect(PEER, timeout=CONNECT_TIMEOUT, qps=9)
    assert e.value.errno == errno.EINVAL
    loop.conn.close()
    assert loop.conn.closed
    with pytest.raises(xferk.XferkError) as e:
        loop.dev.connect("not-an-address")
    assert e.value.errno == errno.EINVAL


def test_release_orphan_keeps_object(dev, null_loop):
    buf = Weakable(8192)
    ref = weakref.ref(buf)
    r = dev.register(buf)
    conn = dev.connect_null((3000 if DEBUG else 2000) * MS)
    rem = conn.import_token(r.export(conn).token)
    op = dev.write(r, rem, [(0, 0, 4096)])
    op.release(orphan=True)  # as xferk_release(): the kernel keeps the op
    assert op.released and not op.buffer_reusable
    r.close()  # the kernel keeps the pages pinned while the op runs ...
    del buf
    gc.collect()
    assert ref() is not None, "memory an orphaned op may touch was freed"
    assert any(o[0] is ref() for o in xferk._api._IMMORTAL)


def test_without_numpy(loop):
    """The fallback when numpy is absent: lists of tuples, FRAG_DTYPE None."""
    import subprocess
    import sys
    code = f"""
import sys, mmap
sys.modules["numpy"] = None
import xferk
assert xferk.FRAG_DTYPE is None
with xferk.Device() as dev:
    conn = dev.connect({PEER!r}, timeout={CONNECT_TIMEOUT})
    a, b = mmap.mmap(-1, 3 * 4096), mmap.mmap(-1, 3 * 4096)
    a[:8192] = bytes(range(256)) * 32
    src, dst = dev.register(a), dev.register(b)
    with conn.import_token(dst.export(conn).token) as rem:
        dev.write(src, rem, [(0, 4096, 4096), (4096, 0, 4096)]).result()
    assert b[4096:8192] == a[:4096] and b[:4096] == a[4096:8192]
    try:
        dev.write(src, rem, [(0, 0, 1)])
        raise SystemExit("a write through a closed import was accepted")
    except xferk.XferkError as e:
        assert e.errno == 9, e  # EBADF: the import is closed
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_frag_conversion_matches_fallback(loop):
    if np is None:
        pytest.skip("numpy not importable")
    from xferk import _api
    frags = np.array([[1, 2, 3], [4096, 8192, 100], [7, 0, 1]], dtype=np.uint64)
    p1, n1, keep1 = _api._frags(loop.src, loop.remote, frags, xferk.WRITE)
    p2, n2, keep2 = _api._frags(loop.src, loop.remote,
                                [tuple(int(v) for v in f) for f in frags],
                                xferk.WRITE)
    assert n1 == n2 == 3
    assert ctypes.string_at(p1, 3 * 48) == ctypes.string_at(p2, 3 * 48)
    assert keep1["mr"][0] == loop.src.handle
    assert keep1["remote"][2] == loop.remote.handle

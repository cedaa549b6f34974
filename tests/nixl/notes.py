# SPDX-License-Identifier: GPL-2.0
"""What the NIXL tests of notifications share (imported from the
directory of the script that runs)."""
import time


def notes(target, init, seconds):
    """The messages @target delivers from agent @init within @seconds."""
    got = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        got += target.get_new_notifs().get(init.name, [])
        time.sleep(0.01)
    return got

"""Time-ordered identifiers that sort as text in creation order."""

from __future__ import annotations

import datetime as dt
import secrets
import string
import threading
import time

_ALPHABET = string.ascii_letters + string.digits
STEM = 20
"""An id's prefix (`msg`, `prt`, `ses` and `_`) and its 16 hex digits of time and counter:
what orders it. The rest is random."""
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id(prefix: str) -> str:
    """`prefix_` + 12 hex digits of ms time + 4 hex digits of counter + 8 random chars.

    Within one process ids are strictly increasing even inside the same millisecond.
    """
    global _last_ms, _counter
    with _lock:
        now = int(time.time() * 1000)
        if now <= _last_ms:
            _counter += 1
            if _counter > 0xFFFF:
                _last_ms += 1
                _counter = 0
            now = _last_ms
        else:
            _last_ms = now
            _counter = 0
        counter = _counter
    return f"{prefix}_{now:012x}{counter:04x}{_random(8)}"


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def copy_id(old: str) -> str:
    """Another id that sorts where `old` does: the same stem, a new random tail (a fork's
    copy of a message or part, session/fork.py)."""
    return old[:STEM] + _random(len(old) - STEM)


def session_id() -> str:
    return new_id("ses")


def message_id() -> str:
    return new_id("msg")


def part_id() -> str:
    return new_id("prt")


def now_ms() -> int:
    return int(time.time() * 1000)


def local_time(ms: int) -> str:
    """A stored millisecond time as the person reads it (`?` for none)."""
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M") if ms else "?"

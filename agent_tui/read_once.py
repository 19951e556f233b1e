"""Small files read once while they are unchanged: a memory file is read for the trust's
digest of its imports (at config load) and again for the system prompt, a command or a
skill at each listing. Keyed by the file itself (device, inode, size, modification time),
so a path through a link and the real one share the read, and a changed file is read
anew."""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

KEPT = 256
"""Files whose bytes are kept (memory files, commands, skills: small)."""
LARGEST = 1 << 20
"""A larger file is read each time, never kept."""

_kept: OrderedDict[tuple[int, int, int, int], bytes] = OrderedDict()


def read_bytes(path: Path, info: os.stat_result | None = None) -> bytes:
    """`path`'s bytes; `info` its stat, when the caller has it. OSError as Path's."""
    info = info if info is not None else path.stat()
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if (data := _kept.get(key)) is not None:
        _kept.move_to_end(key)
        return data
    data = path.read_bytes()
    if len(data) == info.st_size <= LARGEST:  # not changed while read
        _kept[key] = data
        if len(_kept) > KEPT:
            _kept.popitem(last=False)
    return data

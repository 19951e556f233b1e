"""Which projects' own hooks may run. A cloned repository's config could otherwise run
anything on the first prompt, so a project's hooks run only after the person trusted them
once: the app asks, `run --trust` says so, or the person's own config sets
`trust_project_hooks`. Trust is kept per project config file and for the hooks it had
then (`<data dir>/trusted-hooks.json`): changed hooks are asked about again."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from agent_tui import paths
from agent_tui.hooks.settings import HookSource

FILE_NAME = "trusted-hooks.json"


def _store() -> Path:
    return paths.data_dir() / FILE_NAME


_cache: tuple[tuple[str, int, int, int], dict[str, str]] | None = None
"""The store as last read, keyed by its path, inode, mtime and size (each write replaces
the file): asked at hook points, it is read again only once it changed."""


def _read() -> dict[str, str]:
    global _cache
    path = _store()
    try:
        stat = path.stat()
        key = (str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    except OSError:
        return {}
    if _cache is not None and _cache[0] == key:
        return _cache[1]
    data: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict):
            data = {str(k): str(v) for k, v in raw.items()}
    _cache = (key, data)
    return data


def is_trusted(source: HookSource) -> bool:
    return _read().get(source.path) == source.digest


def trust(sources: list[HookSource]) -> None:
    """Remember these project hooks as trusted (written atomically)."""
    data = dict(_read())
    data.update({source.path: source.digest for source in sources})
    path = _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(temp, path)


def describe(sources: list[HookSource]) -> str:
    """What a person is asked to trust: each file and its commands."""
    lines: list[str] = []
    for source in sources:
        lines.append(f"{source.path}:")
        for event, matchers in source.hooks.items():
            for matcher in matchers:
                for command in matcher.hooks:
                    where = f" [{matcher.matcher}]" if matcher.matcher not in ("", "*") else ""
                    lines.append(f"  {event}{where}: {command.command}")
    return "\n".join(lines)

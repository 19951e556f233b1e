"""Which projects the person trusts, and against what: `<data dir>/trusted-projects.json`
keeps, per project directory, the digest of every file the trust vouched for
(trust/trusted_files.py). A project whose files changed since is asked about again, with
what changed. The person's own config may trust paths outright (`trusted_projects`).
`refused-projects.json` keeps the projects whose trust the person refused for good (an
editor's "Reject always"), against their files in the same way: not asked again until
those change."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_tui import paths
from agent_tui.worktrees.layout import main_checkout

FILE_NAME = "trusted-projects.json"
REFUSED_FILE_NAME = "refused-projects.json"

TrustStatus = Literal["trusted", "untrusted", "changed", "by-config", "nothing"]
"""trusted: as recorded; changed: recorded, but a vouched file differs; by-config: a
path of the person's `trusted_projects`; nothing: the project ships nothing to trust."""
TRUSTED: tuple[TrustStatus, ...] = ("trusted", "by-config", "nothing")
"""The states in which the project's whole config applies."""


@dataclass
class TrustState:
    status: TrustStatus
    files: dict[str, str] = field(default_factory=dict)
    """The vouched files as they are now (relative name -> digest)."""
    changed: list[str] = field(default_factory=list)
    """What differs from the trusted record: `+name` added, `-name` gone, `~name` changed."""
    named: dict[str, list[str]] = field(default_factory=dict)
    """MCP server -> the trust question's lines naming what of your environment it is
    given (trust/variables.py); only while the files are as recorded."""

    @property
    def trusted(self) -> bool:
        return self.status in TRUSTED


def _read(name: str = FILE_NAME) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        raw = json.loads((paths.data_dir() / name).read_text(encoding="utf-8"))
        if isinstance(raw, dict):
            return raw
    return {}


def _write(data: dict[str, Any], name: str = FILE_NAME) -> None:
    paths.atomic_write(paths.data_dir() / name, json.dumps(data, indent=1, sort_keys=True).encode())


def covered(directory: Path, trusted_paths: Iterable[str]) -> bool:
    """Whether one of the person's `trusted_projects` paths holds the directory."""
    real = directory.resolve()
    roots = (Path(entry).expanduser().resolve() for entry in trusted_paths)
    return any(real == root or root in real.parents for root in roots)


def state(directory: Path, files: dict[str, str], trusted_paths: Iterable[str]) -> TrustState:
    record = _record(directory, files)
    found = None
    if isinstance(record, dict) and isinstance(record.get("files"), dict):
        found = compare(record["files"], files)
        found.named = _named(record) if found.status == "trusted" else {}
    if covered(directory, trusted_paths):  # a trust recorded as well names variables
        return TrustState("by-config", files, named=found.named if found is not None else {})
    if not files:
        return TrustState("nothing", files)
    return found or TrustState("untrusted", files)


def _record(directory: Path, files: dict[str, str]) -> dict[str, Any] | None:
    """The trust recorded for the directory; for a git worktree without one of its own,
    its main checkout's when the worktree's vouched files are the same content (the
    trust carries into `-w` worktrees; with any difference the person is asked)."""
    if not files:
        return None
    recorded = _read()
    record = recorded.get(str(directory.resolve()))
    if record is None and (main := main_checkout(directory)) is not None:
        carried = recorded.get(str(main.resolve()))
        if isinstance(carried, dict) and carried.get("files") == files:
            record = carried
    return record


def _named(record: dict[str, Any]) -> dict[str, list[str]]:
    """The record's named lines (none in a record made before they were listed)."""
    named = record.get("named")
    if not isinstance(named, dict):
        return {}
    return {
        str(server): [str(v) for v in variables]
        for server, variables in named.items()
        if isinstance(variables, list)
    }


def compare(recorded: dict[str, str], files: dict[str, str]) -> TrustState:
    changed = [f"+{n}" for n in files if n not in recorded]
    changed += [f"-{n}" for n in recorded if n not in files]
    changed += [f"~{n}" for n in files if n in recorded and recorded[n] != files[n]]
    return TrustState(
        "changed" if changed else "trusted", files, sorted(changed, key=lambda c: c[1:])
    )


def trust(
    directory: Path, files: dict[str, str], named: dict[str, list[str]] | None = None
) -> None:
    """Record the project as trusted with its files as they are now and what its MCP
    servers were named to receive (`named`: server -> lines; written atomically)."""
    _keep(directory, {"files": files, "named": named or {}})
    revoke(directory, REFUSED_FILE_NAME)  # an earlier refusal is forgotten


def refuse(directory: Path, files: dict[str, str]) -> None:
    """Record that the person refused to trust the project for good, its files as they
    are now (asked again once they change, or when the person asks to trust it)."""
    _keep(directory, {"files": files}, REFUSED_FILE_NAME)


def _keep(directory: Path, record: dict[str, Any], name: str = FILE_NAME) -> None:
    """Record `record` for the directory in the file `name`, with the time it was made."""
    data = _read(name)
    data[str(directory.resolve())] = {**record, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    _write(data, name)


def refused(directory: Path, files: dict[str, str]) -> bool:
    """Whether the person refused the project for good with its files as they are now."""
    record = _read(REFUSED_FILE_NAME).get(str(directory.resolve()))
    return isinstance(record, dict) and record.get("files") == files


def revoke(directory: Path, name: str = FILE_NAME) -> bool:
    """Forget the project's trust (`REFUSED_FILE_NAME`: its refusal); False when there
    was none."""
    data = _read(name)
    if data.pop(str(directory.resolve()), None) is None:
        return False
    _write(data, name)
    return True


def recorded() -> dict[str, dict[str, Any]]:
    """Every trusted project directory and its record."""
    return {k: v for k, v in _read().items() if isinstance(v, dict)}


def describe_change(changed: list[str]) -> str:
    words = {"+": "added", "-": "removed", "~": "changed"}
    return ", ".join(f"{name[1:]} ({words[name[0]]})" for name in changed)

"""Which projects' own hooks may run. A cloned repository's config could otherwise run
anything on the first prompt, so a project's hooks run only after the person trusted them
once: the app asks, `run --trust` says so, or the person's own config sets
`trust_project_hooks`. Trust is kept per project config file and for the hooks it had
then (`<data dir>/trusted-hooks.json`): changed hooks are asked about again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from agent_tui import paths
from agent_tui.hooks.settings import HookSource

FILE_NAME = "trusted-hooks.json"


def _store() -> Path:
    return paths.data_dir() / FILE_NAME


def digest(source: HookSource) -> str:
    hooks = {event: [m.model_dump() for m in matchers] for event, matchers in source.hooks.items()}
    return hashlib.sha256(json.dumps(hooks, sort_keys=True).encode()).hexdigest()


def _read() -> dict[str, str]:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(_store().read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return {str(k): str(v) for k, v in data.items()}
    return {}


def is_trusted(source: HookSource) -> bool:
    return _read().get(source.path) == digest(source)


def trust(sources: list[HookSource]) -> None:
    """Remember these project hooks as trusted (written atomically)."""
    data = _read()
    data.update({source.path: digest(source) for source in sources})
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

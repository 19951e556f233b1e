"""What trusting a project vouches for: its config, everything under `.agent-tui/`,
every file inside the project that a command of its config would run (a hook's script, a
formatter or a server shipped with the project), and each of its memory files that
imports a file from outside it (memory_imports.py). A digest of their contents is what
trust is recorded against, so a change by `git pull`, an edit or a command is seen."""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from agent_tui.trust.memory_imports import importing_files
from agent_tui.trust.variables import resolved

CONFIG_FILE_NAME = "agent-tui.json"
PROJECT_DIR = ".agent-tui"
CLAUDE_MCP = ".mcp.json"
"""Claude Code's MCP servers of a project (config/claude_mcp.py): part of its config."""
CLAUDE_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
"""Claude Code's settings of a project (config/claude_settings.py): part of its config."""
CLAUDE_SKILLS = ".claude/skills"
"""Claude Code's skills of a project (project/skills.py): read at the next start."""
CLAUDE_TREES = (".claude/agents", ".claude/commands", CLAUDE_SKILLS)
"""Claude Code's agents, commands and skills of a project: vouched for like `.agent-tui/`
(an agent's tools, a command's `!` lines apply in full only while they are as trusted)."""
MAX_FILES = 2000
"""Files of `.agent-tui/` hashed at most (a larger tree is cut there)."""
SCRIPT_SUFFIXES = frozenset(
    {".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua"}
)
INTERPRETERS = frozenset(
    {"sh", "bash", "zsh", "dash", "python", "node", "deno", "bun", "ruby", "perl", "php",
     "lua", "uv", "npx", "tsx", "source", "."}
)  # fmt: skip
"""Programs whose next word is the script they run (`python` also as `python3.12`)."""
MAX_HASHED = 64 << 20
"""Bytes of one file hashed at most (a larger one adds its size)."""
PROJECT_VARIABLES = ("$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}", "$AGENT_TUI_PROJECT_DIR")


def command_words(data: dict[str, Any]) -> Iterator[str]:
    """Every word of every command a config (one file's JSON, of any shape: it may not be
    validated yet) would run."""
    for matchers in _values(data.get("hooks")):
        for matcher in matchers if isinstance(matchers, list) else []:
            hooks = matcher.get("hooks") if isinstance(matcher, dict) else None
            for hook in hooks if isinstance(hooks, list) else []:
                if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                    yield from split_words(hook["command"])
    for section in ("lsp", "mcp"):
        entries = data.get(section)
        entries = entries if isinstance(entries, dict) else {}
        if section == "lsp" and isinstance(entries.get("servers"), dict):
            entries = {**entries, **entries["servers"]}
        for entry in entries.values():
            if isinstance(entry, dict) and isinstance(entry.get("command"), list):
                yield from (str(word) for word in entry["command"])
    for command in _values(data.get("format")):
        if isinstance(command, str):
            yield from split_words(command)
        elif isinstance(command, list):
            yield from (str(word) for word in command)


def _values(value: Any) -> Iterable[Any]:
    return value.values() if isinstance(value, dict) else ()


def split_words(command: str) -> list[str]:
    """A command's words as the shell splits them; at the spaces when a quote is unbalanced."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def run_files(directory: Path, data: dict[str, Any]) -> list[Path]:
    """Files inside the project that the config's commands would run: a program or a
    script named by a command (executable, a script by its extension, or the argument of
    an interpreter). A file a command only writes (a log) is not one."""
    root = directory.resolve()
    words = list(command_words(data))
    words += [inner for word in words if " " in word for inner in split_words(word)]  # sh -c "…"
    found: list[Path] = []
    after_interpreter = False
    for word in words:
        for variable in PROJECT_VARIABLES:
            word = word.replace(variable, str(root))
        real = _project_file(root, resolved(word))  # `.mcp.json`'s `${VAR}` as it would run
        runs = real is not None and (
            after_interpreter or real.suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK)
        )
        if runs and real not in found:
            found.append(real)
        after_interpreter = Path(word).name.rstrip("0123456789.") in INTERPRETERS
    return found


def _project_file(root: Path, word: str) -> Path | None:
    if not word or word.startswith("-"):
        return None
    try:
        candidate = Path(word).expanduser()
        candidate = candidate if candidate.is_absolute() else root / candidate
        real = candidate.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop, `~nobody` (an older Python)
        return None
    return real if root in real.parents and real.is_file() else None


def vouched_files(directory: Path, runs: list[Path]) -> list[Path]:
    """The files a trust in this project vouches for, in a stable order: its config and
    Claude Code's, `.agent-tui/`, Claude Code's agents, commands and skills, `runs` (its
    `run_files`), and its memory files that import from outside it."""
    root = directory.resolve()
    names = (CONFIG_FILE_NAME, CLAUDE_MCP, *CLAUDE_SETTINGS)
    files = [root / name for name in names if (root / name).is_file()]
    for tree in (PROJECT_DIR, *CLAUDE_TREES):
        files += islice(_tree(root / tree), MAX_FILES)
    return list(dict.fromkeys([*files, *runs, *importing_files(root)]))


def _tree(folder: Path) -> Iterator[Path]:
    """The files under `folder` in a stable order (none when it is not a folder)."""
    for base, dirs, names in os.walk(folder):
        dirs.sort()
        yield from (Path(base) / name for name in sorted(names))


Seen = dict[Path, tuple[tuple[int, int, int], str]]
"""A file -> (its inode, size and time when hashed, the digest): `digests`' cache."""


def digests(root: Path, files: Iterable[Path], seen: Seen | None = None) -> dict[str, str]:
    """Each file (relative to the project) -> sha256 of its bytes ("" if unreadable or
    not a regular file: a FIFO or /dev/zero behind a link is never read). With `seen`,
    a file is read again only once its inode, size or time changed."""
    result: dict[str, str] = {}
    for path in files:
        name = str(path.relative_to(root)) if root in path.parents else str(path)
        result[name] = _digest(path) if seen is None else _cached(path, seen)
    return result


def _cached(path: Path, seen: Seen) -> str:
    try:
        info = path.stat()
    except OSError:
        return ""
    key = (info.st_ino, info.st_size, info.st_mtime_ns)
    found = seen.get(path)
    if found is None or found[0] != key:
        found = seen[path] = (key, _digest(path))
    return found[1]


def _digest(path: Path) -> str:
    try:
        if not path.is_file():
            return ""
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                if handle.tell() >= MAX_HASHED:  # the rest by its size only
                    digest.update(str(path.stat().st_size).encode())
                    break
        return digest.hexdigest()
    except OSError:
        return ""

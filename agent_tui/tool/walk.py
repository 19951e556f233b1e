"""Walking a folder tree the way the search tools do: skip tooling folders, match globs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from agent_tui.project.memory import expand_braces
from agent_tui.tool.files import SKIP_DIRS


def walk_files(root: Path) -> Iterator[Path]:
    """Every file under `root`, not descending into SKIP_DIRS or symlinked folders."""
    for folder, dirs, files in os.walk(root, onerror=lambda _exc: None):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        base = Path(folder)
        for name in sorted(files):
            yield base / name


def _translate(pattern: str) -> str:
    """One brace-free glob to a regex over `/`-separated paths; `**` spans folders."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 2
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 1
        elif char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    alternatives = [_translate(p) for p in expand_braces(pattern)]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


def glob_matches(pattern: str, rel_path: str) -> bool:
    """Match a `/`-separated relative path. A pattern without `/` matches the file name
    at any depth (as ripgrep and .gitignore do)."""
    pattern = pattern.removeprefix("./")
    if "/" not in pattern:
        rel_path = rel_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).match(rel_path) is not None


def split_glob_base(pattern: str) -> tuple[str, str]:
    """`/src/app/**/*.py` -> (`/src/app`, `**/*.py`): the folder part before any wildcard."""
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not any(c in parts[fixed] for c in "*?[{"):
        fixed += 1
    return "/".join(parts[:fixed]) or "/", "/".join(parts[fixed:])


def mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def newest_first(paths: list[Path]) -> list[Path]:
    """Newest modification time first; ties (e.g. same second) by path for stable output."""
    return sorted(paths, key=lambda p: (-mtime(p), str(p)))


# ---- .gitignore -----------------------------------------------------------------------


class GitIgnore:
    """The patterns of the .gitignore files met on a walk (the common subset of the
    format: `#` comments, `!` negation, a trailing `/` for folders only, a `/` inside the
    pattern anchoring it to its file's folder). The last matching pattern wins."""

    def __init__(self) -> None:
        self._rules: list[tuple[str, re.Pattern[str], bool, bool]] = []
        """(folder of the .gitignore as a prefix, `src/` or "", compiled pattern, negated,
        folders only)."""

    def add_file(self, prefix: str, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line.removeprefix("!").removeprefix("\\")
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            pattern = line if anchored else f"**/{line}"
            self._rules.append((prefix, compile_glob(pattern), negated, dir_only))

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """`rel_path` is `/`-separated and relative to the walk's root."""
        verdict = False
        for prefix, pattern, negated, dir_only in self._rules:
            if dir_only and not is_dir:
                continue
            if rel_path.startswith(prefix) and pattern.match(rel_path[len(prefix) :]):
                verdict = not negated
        return verdict


def walk_project_files(root: Path) -> list[str]:
    """Every file under `root` as a `/`-separated relative path, honouring the
    .gitignore files found on the way (the file picker's index)."""
    found: list[str] = []
    ignore = GitIgnore()
    for folder, dirs, files in os.walk(root, onerror=lambda _exc: None):
        rel_dir = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        if ".gitignore" in files:
            ignore.add_file(prefix, Path(folder) / ".gitignore")
        dirs[:] = sorted(
            d for d in dirs if d not in SKIP_DIRS and not ignore.ignored(prefix + d, True)
        )
        found.extend(
            prefix + name for name in sorted(files) if not ignore.ignored(prefix + name, False)
        )
    return found

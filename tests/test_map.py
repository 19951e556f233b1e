"""AGENTS.md is true to the tree: every repository path it names exists (a module, a
test, a benchmark, a document), so a reader new to the code finds what it points to."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agent_tui"
NAMED = re.compile(r"(?<![\w.~<>/-])((?:[\w-]+/)*[\w-]+\.(?:py|md|tcss|mjs|txt))(?![\w/-])")
"""A file name with the extension of the repository's own files, alone or under folders."""
OUTSIDE = frozenset(
    {"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "CONTEXT.md", "SKILL.md", "NAME.md"}
)
"""Names AGENTS.md gives to the person's and projects' files, not to this repository's."""


def named_paths(text: str) -> list[str]:
    return sorted({m.group(1) for m in NAMED.finditer(text)} - OUTSIDE)


def exists(name: str) -> bool:
    """Under the repository or the package (`session/loop.py`), or, for a bare file
    name (`loop.py` in a package's paragraph), anywhere in the repository's code."""
    if "/" in name:
        return (ROOT / name).exists() or (PACKAGE / name).exists()
    return (
        any(
            "node_modules" not in path.parts
            for folder in (PACKAGE, ROOT / "tests", ROOT / "bench", ROOT / "docs")
            for path in folder.rglob(name)
        )
        or (ROOT / name).exists()
    )


def test_every_path_agents_md_names_exists() -> None:
    text = (ROOT / "AGENTS.md").read_text()
    assert [name for name in named_paths(text) if not exists(name)] == []


def test_the_check_finds_paths_and_misses() -> None:
    text = "`session/loop.py` (see docs/relay.md#x), `nowhere/gone.py`, ~/.claude/CLAUDE.md"
    assert named_paths(text) == ["docs/relay.md", "nowhere/gone.py", "session/loop.py"]
    assert [name for name in named_paths(text) if not exists(name)] == ["nowhere/gone.py"]

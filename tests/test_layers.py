"""The import direction DESIGN.md draws, read from the source: views -> session/ ->
context/ -> step/ -> context's leaves; the engine never imports Textual."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_tui"
CONTEXT_LEAVES = {"tokens", "overflow", "restate", "pins", "ledger", "carry"}
"""What step/ counts and renders with (carry: the pins and file ledger after a summary)."""


def imports_of(path: Path) -> set[str]:
    """Every `agent_tui...` module a file imports, at any depth (lazy imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in (PACKAGE / folder).rglob("*.py")
        for name in imports_of(path)
        if name.startswith(forbidden)
    )


def test_context_and_step_never_import_the_session_package() -> None:
    assert offenders("context", ("agent_tui.session",)) == []
    assert offenders("step", ("agent_tui.session",)) == []


def test_step_uses_only_the_leaves_of_context() -> None:
    leaves = tuple(f"agent_tui.context.{name}" for name in CONTEXT_LEAVES)
    used = {
        name
        for path in (PACKAGE / "step").rglob("*.py")
        for name in imports_of(path)
        if name.startswith("agent_tui.context")
    }
    assert {name for name in used if not name.startswith(leaves)} == set()
    for leaf in CONTEXT_LEAVES:
        found = imports_of(PACKAGE / "context" / f"{leaf}.py")
        above = [n for n in found if n.startswith(("agent_tui.step", "agent_tui.context"))]
        assert not [n for n in above if not n.startswith(leaves)], leaf


def test_the_engine_never_imports_textual() -> None:
    for folder in ("session", "context", "step", "provider", "tool", "storage"):
        assert offenders(folder, ("textual", "agent_tui.tui")) == [], folder
    assert offenders("acp", ("textual",)) == []  # a view, but one without a screen

"""The import direction DESIGN.md draws, read from the source: views -> session/ ->
context/ -> step/ -> budget/ -> provider, tool, storage; no two parts of
agent_tui import each other; the engine never imports Textual."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_tui"
VIEWS = ("tui", "acp", "server", "attach", "cli")


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy and type-checking imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def part_of(module: str) -> str | None:
    """The package of agent_tui (`step`), or the top-level module (`cli`), `module` is in."""
    names = module.split(".")
    if names[0] != "agent_tui" or len(names) < 2:
        return None
    return (
        names[1] if (PACKAGE / names[1]).is_dir() or (PACKAGE / f"{names[1]}.py").exists() else None
    )


def import_graph() -> dict[str, set[str]]:
    """Which parts of agent_tui (packages and top-level modules) each part imports."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        part = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        targets = {part_of(name) for name in imports_of(path)} - {None, part, "__init__"}
        graph.setdefault(part, set()).update(t for t in targets if t is not None)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while (member := stack.pop()) != node:
                members.append(member)
            members.append(node)
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
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


def test_no_two_parts_of_agent_tui_import_each_other() -> None:
    """Packages and top-level modules alike, however indirectly, lazy imports included."""
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_step_never_imports_context_and_the_floors_below_import_neither() -> None:
    assert offenders("step", ("agent_tui.context",)) == []
    for floor in ("budget",):
        assert offenders(floor, ("agent_tui.context", "agent_tui.step")) == [], floor


def test_no_view_imports_another_view() -> None:
    """What two views share lives below them (tool_lines, server_link, command/). The
    server is not a view of its own: it carries the ACP agent over a WebSocket; the CLI's
    start (cli/start.py) only dispatches to the views."""
    graph = import_graph()
    found = {(view, target) for view in VIEWS for target in graph.get(view, ()) & set(VIEWS)}
    assert (
        found
        - {("server", "acp"), ("cli", "tui"), ("cli", "acp"), ("cli", "server"), ("cli", "attach")}
        == set()
    )
    dispatching = {
        str(path.relative_to(PACKAGE))
        for path in (PACKAGE / "cli").rglob("*.py")
        if any(part_of(name) in set(VIEWS) - {"cli"} for name in imports_of(path))
    }
    assert dispatching <= {"cli/start.py"}


def test_the_engine_never_imports_textual() -> None:
    for folder in ("session", "context", "step", "provider", "tool", "storage"):
        assert offenders(folder, ("textual", "agent_tui.tui")) == [], folder
    assert offenders("acp", ("textual",)) == []  # a view, but one without a screen


LONGEST_FUNCTION = 60
"""Lines: a longer function wants to be named steps (the loop reads on one screen)."""


def test_every_function_reads_on_one_screen() -> None:
    """The engine's, the views' and the CLI's (its parser is made from the commands)."""
    long = sorted(
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({length} lines)"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (length := node.end_lineno - node.lineno + 1) > LONGEST_FUNCTION  # type: ignore[operator]
    )
    assert long == []


def test_the_loop_is_a_short_sequence_of_named_steps() -> None:
    tree = ast.parse((PACKAGE / "session" / "loop.py").read_text())
    (run,) = (n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef) and n.name == "_run")
    assert run.end_lineno - run.lineno + 1 <= 20  # type: ignore[operator]


FACADE_ONLY = (*VIEWS, "command")
"""The views and the commands: they reach the engine through its facade alone."""
BEHIND_THE_FACADE = ("agent_tui.storage", "agent_tui.engine_context")
ENGINE_INSIDES = frozenset({"ctx", "db", "hook_points"})
"""The engine's context, storage, and its hooks' bookkeeping."""


def _behind_the_facade(name: str) -> bool:
    return any(name == hidden or name.startswith(f"{hidden}.") for hidden in BEHIND_THE_FACADE)


def _reaches_past_the_facade(node: ast.AST) -> str | None:
    """`x.ctx`, `x.db`, `x.hook_points` (read or written, of anything), `engine.x = …`."""
    if isinstance(node, ast.Attribute) and node.attr in ENGINE_INSIDES:
        return f"reaches .{node.attr}"
    targets = node.targets if isinstance(node, ast.Assign) else []
    for target in targets:
        if isinstance(target, ast.Attribute) and "engine" in ast.unparse(target.value):
            return f"writes {ast.unparse(target)}"
    return None


def facade_offenders(folders: tuple[str, ...]) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            where = str(path.relative_to(PACKAGE))
            hidden = sorted(name for name in imports_of(path) if _behind_the_facade(name))
            if hidden:
                found.append(f"{where} imports {hidden}")
            for node in ast.walk(ast.parse(path.read_text())):
                if (why := _reaches_past_the_facade(node)) is not None:
                    found.append(f"{where}:{getattr(node, 'lineno', 0)} {why}")
    return found


def test_views_and_commands_only_translate() -> None:
    """A view or a command reaches the engine through its facade (commands,
    `engine.queries`, events, `session/opening.py` to open it): never storage nor the
    engine's context, never an engine field (DESIGN.md: views only translate). No file is
    exempt; the data models events carry and views draw are agent_tui/records.py."""
    assert facade_offenders(FACADE_ONLY) == []


def test_the_facade_check_finds_storage_and_the_context() -> None:
    assert _behind_the_facade("agent_tui.storage.db")
    assert _behind_the_facade("agent_tui.storage")
    assert _behind_the_facade("agent_tui.engine_context")
    assert not _behind_the_facade("agent_tui.records")
    assert _behind_the_facade("agent_tui.storage.models")
    assert not _behind_the_facade("agent_tui.storage_extra")
    source = "app.db.close()\nengine.ctx.config\nself.engine.hook_points.asked.add(1)\n"
    found = [_reaches_past_the_facade(n) for n in ast.walk(ast.parse(source))]
    assert {"reaches .db", "reaches .ctx", "reaches .hook_points"} <= set(found)

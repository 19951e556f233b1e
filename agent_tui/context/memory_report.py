"""/context's lines about memory files (project/memory.py): each file and what it
brought, its imports under it, the path-scoped rules with their scope and whether a
matching file brought them in yet, the memory of folders below the working directory
that a file there brought in, and what was not read and why."""

from __future__ import annotations

from pathlib import Path

from agent_tui.budget.tokens import count_tokens
from agent_tui.project.memory import Memory, MemoryFile
from agent_tui.records import MessageWithParts
from agent_tui.step.memory_rules import Triggered, triggered

KINDS = {
    "project": "",
    "local": " (local)",
    "rule": " (rule)",
    "user": " (yours)",
    "import": "",
}


def _size(file: MemoryFile, model: str) -> str:
    lines = len(file.text.splitlines())
    return f"{count_tokens(file.text, model):,} tokens, {lines} line{'' if lines == 1 else 's'}"


def _file_line(file: MemoryFile, model: str, indent: int = 1) -> str:
    spaces = "  " * (indent + file.depth)
    at = "@ " if file.imported_by is not None else ""
    return f"{spaces}{at}{file.path}{KINDS.get(file.kind, '')}: {_size(file, model)}"


def memory_lines(
    memory: Memory, history: list[MessageWithParts], directory: Path, model: str
) -> list[str]:
    """The lines, under headings; none when there is no memory file."""
    hits = triggered(history, memory, directory)  # first: reading a folder may refuse imports
    lines: list[str] = []
    if memory.files:
        lines.append("Memory files (in the system prompt; @ an import):")
        lines += [_file_line(f, model) for f in memory.files]
    if memory.scoped:
        lines.append("Rules for some files (read in once the agent works on a matching file):")
        by_rule = {id(h.files[0]): h for h in hits}
        for group in memory.scoped:
            lines += _scoped_lines(group, by_rule.get(id(group[0])), model)
    nested = [hit for hit in hits if hit.reason == "nested_traversal"]
    nested += [h for h in hits if h.reason == "path_glob_match" and not _top(h, memory)]
    if nested:
        lines.append("Memory of folders below (read in once the agent worked on a file there):")
        for hit in nested:
            lines += _nested_lines(hit, model)
    not_read = [f"  {r.reference} in {r.source}: {r.reason}" for r in memory.refused]
    not_read += [f"  {note}" for note in memory.notes]
    if not_read:
        lines += ["Memory files not read:", *not_read]
    return lines


def _top(hit: Triggered, memory: Memory) -> bool:
    """A scoped rule of the working directory or above (not of a folder below)."""
    return any(group[0] is hit.files[0] for group in memory.scoped)


def _scoped_lines(group: list[MemoryFile], hit: Triggered | None, model: str) -> list[str]:
    rule = group[0]
    state = f"active: {hit.file} brought it in" if hit else "not active yet"
    scope = ", ".join(rule.globs)
    return [
        f"  {rule.path} (paths: {scope}): {_size(rule, model)}; {state}",
        *(_file_line(f, model) for f in group[1:]),
    ]


def _nested_lines(hit: Triggered, model: str) -> list[str]:
    head = hit.files[0]
    scope = f" (paths: {', '.join(head.globs)})" if head.globs else ""
    return [
        f"{_file_line(head, model)}{scope}; {hit.file} brought it in",
        *(_file_line(f, model) for f in hit.files[1:]),
    ]

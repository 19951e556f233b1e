"""/context's lines about memory files (project/memory.py): each file and what it
brought, its imports under it, the path-scoped rules with their scope and whether a
matching file brought them in yet, and what was not read and why."""

from __future__ import annotations

from pathlib import Path

from agent_tui.budget.tokens import count_tokens
from agent_tui.project.memory import Memory, MemoryFile
from agent_tui.step.memory_rules import triggered
from agent_tui.storage.models import MessageWithParts

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


def _file_line(file: MemoryFile, model: str) -> str:
    indent = "  " * (1 + file.depth)
    at = "@ " if file.imported_by is not None else ""
    return f"{indent}{at}{file.path}{KINDS.get(file.kind, '')}: {_size(file, model)}"


def memory_lines(
    memory: Memory, history: list[MessageWithParts], directory: Path, model: str
) -> list[str]:
    """The lines, under headings; none when there is no memory file."""
    lines: list[str] = []
    if memory.files:
        lines.append("Memory files (in the system prompt; @ an import):")
        lines += [_file_line(f, model) for f in memory.files]
    if memory.scoped:
        lines.append("Rules for some files (read in once the agent works on a matching file):")
        hits = {id(h.rule[0]): h for h in triggered(history, memory.scoped, directory)}
        for group in memory.scoped:
            rule, hit = group[0], hits.get(id(group[0]))
            state = f"active: {hit.file} brought it in" if hit else "not active yet"
            scope = ", ".join(rule.globs)
            lines.append(f"  {rule.path} (paths: {scope}): {_size(rule, model)}; {state}")
            lines += [_file_line(f, model) for f in group[1:]]
    not_read = [f"  {r.reference} in {r.source}: {r.reason}" for r in memory.refused]
    not_read += [f"  {note}" for note in memory.notes]
    if not_read:
        lines += ["Memory files not read:", *not_read]
    return lines

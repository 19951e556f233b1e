"""Memory that reaches the model when it first works on a file, as Claude Code loads it
when such a file is read: a path-scoped rule (`.claude/rules/*.md` with `paths:`) once a
matching file is touched, and the memory files of a folder below the working directory
(`sub/CLAUDE.md`, with those of each folder between, their rules and imports) once a file
in it is touched.

Nothing is stored: the text follows the result of the first read, edit or write of such
a file in the history the request is built from, inside a `<system-reminder>`. That
result is new in the request after the call, and every later request rebuilds it with
the same bytes, so the system prompt and the cached prefix never change. After a
compaction it follows the first such call of the kept history, or the next one the model
makes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent_tui.project.memory import (
    Group,
    Memory,
    absolute,
    folders_below,
    nested_memory,
    rule_applies,
)
from agent_tui.records import MessageWithParts, ToolPart, ToolStateCompleted
from agent_tui.step.messages import filter_compacted

RULE_TOOLS = frozenset({"read", "edit", "write"})
"""The calls that work on a file a rule or a folder's memory may be about."""
Reason = Literal["path_glob_match", "nested_traversal"]
"""Why it was loaded, in Claude Code's words (InstructionsLoaded's `load_reason`)."""


@dataclass(frozen=True)
class Triggered:
    """Memory (a file and its imports) and the call that brought it in."""

    files: Group
    part_id: str
    file: Path
    """The file the call worked on (`trigger_file_path`)."""
    reason: Reason
    folder: Path | None = None
    """For a folder's memory: that folder."""


def _name(part: ToolPart) -> str | None:
    """The file a finished read, edit or write worked on, as the model wrote it."""
    if part.tool not in RULE_TOOLS or part.ignored:
        return None
    if not isinstance(part.state, ToolStateCompleted):
        return None
    name = part.state.input.get("file_path")
    return name if isinstance(name, str) and name else None


def triggered(history: list[MessageWithParts], memory: Memory, directory: Path) -> list[Triggered]:
    """Each scoped rule and each folder's memory below the working directory, with the
    first call of the history on a file it is about. A folder's scoped rules wait from
    the call that brought the folder in (that call's file included). A file is looked at
    once, at its first call: a later one brings in nothing the first did not. Run over
    the whole history at every request: names are compared as strings, no file system
    call but for a folder met the first time."""
    waiting = list(memory.scoped)
    folders: set[str] = set()
    names: set[str] = set()
    found: list[Triggered] = []
    for message in filter_compacted(history):
        for part in message.parts:
            name = _name(part) if isinstance(part, ToolPart) else None
            if name is None or name in names:
                continue
            names.add(name)
            file = absolute(name, str(directory))
            for folder in [f for f in folders_below(str(directory), file) if f not in folders]:
                folders.add(folder)
                nested = nested_memory(memory, Path(folder))
                found += [
                    Triggered(g, part.id, Path(file), "nested_traversal", Path(folder))
                    for g in nested.groups
                ]
                waiting += nested.scoped
            for rule in [r for r in waiting if rule_applies(r[0], file)]:
                waiting.remove(rule)
                found.append(Triggered(rule, part.id, Path(file), "path_glob_match"))
    return found


def reminder_text(hit: Triggered) -> str:
    """What the model reads after the call: the file, why it applies, its imports."""
    head = hit.files[0]
    if hit.reason == "path_glob_match":
        scope = f"files matching {', '.join(head.globs)}"
    else:
        scope = f"files in {hit.folder}"
    lines = [
        "<system-reminder>",
        f"Instructions from: {head.path} (they apply to {scope}, such as {hit.file}, which "
        "you just worked on)",
        head.text,
    ]
    for imported in hit.files[1:]:
        lines += [f"Instructions from: {imported.path} (imported by {imported.imported_by})"]
        lines.append(imported.text)
    lines.append("</system-reminder>")
    return "\n".join(line for line in lines if line)


def rule_reminders(
    history: list[MessageWithParts], memory: Memory, directory: Path
) -> dict[str, str]:
    """Tool part id -> the memory its call brought in, as the model reads it after the
    result (messages.to_model_messages' `after_result`)."""
    reminders: dict[str, list[str]] = {}
    for hit in triggered(history, memory, directory):
        reminders.setdefault(hit.part_id, []).append(reminder_text(hit))
    return {part_id: "\n\n".join(texts) for part_id, texts in reminders.items()}

"""Path-scoped rules (`.claude/rules/*.md` with `paths:`) reach the model when it first
works on a matching file, as Claude Code loads them when such a file is read.

Nothing is stored: the rule's text follows the result of the first read, edit or write of
a matching file in the history the request is built from, inside a `<system-reminder>`.
That result is new in the request after the call, and every later request rebuilds it
with the same bytes, so the system prompt and the cached prefix never change. After a
compaction the rule follows the first matching call of the kept history, or the next one
the model makes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_tui.project.memory import MemoryFile, rule_applies
from agent_tui.step.messages import filter_compacted
from agent_tui.storage.models import MessageWithParts, ToolPart, ToolStateCompleted

RULE_TOOLS = frozenset({"read", "edit", "write"})
"""The calls that work on a file a rule may be scoped to."""


@dataclass(frozen=True)
class Triggered:
    """A scoped rule (with its imports) and the call that brought it in."""

    rule: list[MemoryFile]
    part_id: str
    file: Path


def worked_on(part: ToolPart, directory: Path) -> Path | None:
    """The file a finished read, edit or write worked on (absolute), else None."""
    if part.ignored or part.tool not in RULE_TOOLS:
        return None
    if not isinstance(part.state, ToolStateCompleted):
        return None
    name = part.state.input.get("file_path")
    if not isinstance(name, str) or not name:
        return None
    path = Path(name).expanduser()
    return path if path.is_absolute() else directory / path


def triggered(
    history: list[MessageWithParts], scoped: list[list[MemoryFile]], directory: Path
) -> list[Triggered]:
    """Each scoped rule with the first call of the history on a file it applies to."""
    waiting = list(scoped)
    found: list[Triggered] = []
    for message in filter_compacted(history):
        if not waiting:
            break
        for part in message.parts:
            file = worked_on(part, directory) if isinstance(part, ToolPart) else None
            if file is None:
                continue
            for rule in [r for r in waiting if rule_applies(r[0], file)]:
                waiting.remove(rule)
                found.append(Triggered(rule, part.id, file))
    return found


def reminder_text(hit: Triggered) -> str:
    """What the model reads after the call: the rule, its scope, its imports."""
    rule = hit.rule[0]
    scope = ", ".join(rule.globs)
    lines = [
        "<system-reminder>",
        f"Instructions from: {rule.path} (they apply to files matching {scope}, such as "
        f"{hit.file}, which you just worked on)",
        rule.text,
    ]
    for imported in hit.rule[1:]:
        lines += [f"Instructions from: {imported.path} (imported by {imported.imported_by})"]
        lines.append(imported.text)
    lines.append("</system-reminder>")
    return "\n".join(line for line in lines if line)


def rule_reminders(
    history: list[MessageWithParts], scoped: list[list[MemoryFile]], directory: Path
) -> dict[str, str]:
    """Tool part id -> the rules its call brought in, as the model reads them after the
    result (messages.to_model_messages' `after_result`)."""
    if not scoped:
        return {}
    reminders: dict[str, list[str]] = {}
    for hit in triggered(history, scoped, directory):
        reminders.setdefault(hit.part_id, []).append(reminder_text(hit))
    return {part_id: "\n\n".join(texts) for part_id, texts in reminders.items()}

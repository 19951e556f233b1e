"""The file ledger: every file a summarised span read, created, edited or deleted, with
lines added and removed, written by code (not by the summariser) and restated after the
summary (computed here when compacting; step/after_summary.ledger_text renders it).

Sources, per step: the read tool and `@file` mentions (reads); the step's `PatchPart`
changes from the working-tree snapshots (every change, bash's included); where a step has
no snapshot of a file (snapshots off, a file outside the project or ignored by git), the
edit and write tools' own report. A bash command that only reads is not seen. Each
summary stores its ledger merged with the one of the summary it replaces, so the ledger
always covers everything summarised so far.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any, Literal

from agent_tui.records import (
    AssistantMessage,
    FileChange,
    FileRecord,
    MessageWithParts,
    PatchPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    UserMessage,
)

Action = Literal["read", "created", "edited", "deleted"]

READERS = {"read"}
WRITERS = {"edit", "write"}
_MENTION = re.compile(r'<file path="([^"]+)">')
"""How an `@file` mention's synthetic text starts (session/mentions.py)."""
_STATUS_ACTION: dict[str, Action] = {"added": "created", "modified": "edited", "deleted": "deleted"}


class _Book:
    """Records by path while a span is read, oldest first."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.records: dict[str, FileRecord] = {}
        self._names: dict[str, str] = {}

    def path(self, raw: str) -> str:
        """Relative to the session's directory when inside it, else absolute."""
        if (name := self._names.get(raw)) is None:
            name = self._names[raw] = self._name(raw)
        return name

    def _name(self, raw: str) -> str:
        path = Path(os.path.normpath(raw))
        if not path.is_absolute():
            return path.as_posix()
        for root in (self.directory, self.directory.resolve()):
            with contextlib.suppress(ValueError):  # not inside this root
                return path.relative_to(root).as_posix()
        return path.as_posix()

    def act(self, raw: str, action: Action, added: int = 0, removed: int = 0) -> None:
        name = self.path(raw)
        if (record := self.records.get(name)) is None:  # a model built only for a new file
            record = self.records[name] = FileRecord(path=name)
        _add_action(record.actions, action)
        record.added += added
        record.removed += removed

    def merge(self, ledger: list[FileRecord]) -> None:
        """An earlier summary's ledger: it happened before anything read after it."""
        for old in ledger:
            record = self.records.setdefault(old.path, FileRecord(path=old.path))
            for action in old.actions:
                _add_action(record.actions, action)
            record.added += old.added
            record.removed += old.removed

    def step(self, message: MessageWithParts) -> None:
        """One message: its reads and changes in the order its tools ran."""
        patch = {
            self.path(change.path): change
            for part in message.parts
            if isinstance(part, PatchPart)
            for change in part.changes
        }
        applied: set[str] = set()
        for part in message.parts:
            if isinstance(part, TextPart) and part.synthetic and not part.ignored:
                found = _MENTION.match(part.text)
                if found and isinstance(message.info, UserMessage):
                    self.act(found.group(1), "read")
            elif isinstance(part, ToolPart) and not part.ignored:
                self._tool(part, patch, applied)
        for name, change in patch.items():  # what bash (or anything else) changed
            if name not in applied:
                self._change(change)

    def _tool(self, part: ToolPart, patch: dict[str, FileChange], applied: set[str]) -> None:
        state = part.state
        if not isinstance(state, ToolStateCompleted):
            return
        path = _file_of(state.input, state.metadata)
        if path is None:
            return
        if part.tool in READERS:
            self.act(path, "read")
        elif part.tool in WRITERS:
            name = self.path(path)
            if name in patch:  # the snapshot's count covers every change of the step
                if name not in applied:
                    applied.add(name)
                    self._change(patch[name])
                return
            created = state.metadata.get("created") is True or state.output.startswith("Created")
            self.act(
                path,
                "created" if created else "edited",
                _count(state.metadata.get("additions")),
                _count(state.metadata.get("deletions")),
            )

    def _change(self, change: FileChange) -> None:
        self.act(change.path, _STATUS_ACTION[change.status], change.added, change.removed)


def _add_action(actions: list[Action], action: Action) -> None:
    """Each action once, in first-occurrence order; of created and deleted, the one that
    happened last stays last (a file deleted then created again exists)."""
    if action not in actions:
        actions.append(action)
        return
    other = {"created": "deleted", "deleted": "created"}.get(action)
    if other in actions and actions.index(other) > actions.index(action):
        actions.remove(action)
        actions.append(action)


def _file_of(data: dict[str, Any], metadata: dict[str, Any]) -> str | None:
    files = metadata.get("files")
    if isinstance(files, list) and files and isinstance(files[0], str):
        return files[0]
    for key in ("path", "file_path", "filePath"):
        value = metadata.get(key) if key == "path" else data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _count(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def span_ledger(messages: list[MessageWithParts], directory: Path) -> list[FileRecord]:
    """The ledger of a summarised span (oldest first): the summary it starts with (if
    any) contributes its own ledger, every other message its reads and changes. Undone
    turns and failed or reverted summaries add nothing."""
    book = _Book(Path(directory))
    for message in messages:
        if message.info.undone:
            continue
        info = message.info
        if isinstance(info, AssistantMessage) and info.in_force:
            book.merge(info.ledger)
        elif not (isinstance(info, AssistantMessage) and info.summary):
            book.step(message)
    return sorted(book.records.values(), key=lambda r: r.path)

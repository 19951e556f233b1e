"""`@path` in a prompt: the file (as the read tool shows it) or the folder (as the list
tool shows it) is attached to the user message as synthetic text the model reads and
the view does not show. Also the file picker's index and fuzzy filter (no Textual)."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_tui.errors import AgentTuiError
from agent_tui.records import ImageAttachment
from agent_tui.tool.base import ToolContext
from agent_tui.tool.registry import ToolRegistry
from agent_tui.tool.walk import walk_project_files

MENTION_RE = re.compile(r"(?<![\w@])@([^\s@`'\"<>]+)")
"""`@src/app.py` — not an e-mail address (`me@host`), not `@@`."""
TRAILING_PUNCTUATION = ".,;:!?)]}"
MAX_MENTIONS = 10
"""Attachments per message; further mentions stay plain text."""
PICKER_RESULTS = 50
"""Matches the file picker shows."""


@dataclass
class Attachment:
    text: str
    """What the model reads: the tool's output wrapped in a tag naming the path."""
    images: list[ImageAttachment] = field(default_factory=list)
    """An image file's image (the read tool's), attached to the message as a file part."""


def mentioned_paths(text: str) -> list[str]:
    """The `@words` of `text`, in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in MENTION_RE.finditer(text)))


def _existing(directory: Path, word: str) -> tuple[str, Path] | None:
    """The mention (trailing punctuation dropped if need be) and the path inside
    `directory` it names, or None."""
    root = directory.resolve()
    candidates = [word]
    if (stripped := word.rstrip(TRAILING_PUNCTUATION)) and stripped != word:
        candidates.append(stripped)
    for candidate in candidates:
        path = (directory / candidate).resolve()
        if path != root and not path.is_relative_to(root):
            continue  # only the project's own files: outside paths need the tools' permission
        if path.exists():
            return candidate, path
    return None


async def resolve_mentions(
    text: str, base: ToolContext, registry: ToolRegistry
) -> list[Attachment]:
    """Attachments for the `@paths` of `text` that name an existing file or folder in
    `base.directory`; any other `@word` stays plain text. Files go through the read tool
    and folders through the list tool (redaction and truncation included), so the model
    sees exactly what those tools would have shown it."""
    attachments: list[Attachment] = []
    for word in mentioned_paths(text):
        if len(attachments) >= MAX_MENTIONS:
            break
        if (found := _existing(base.directory, word)) is None:
            continue
        mention, path = found
        ctx = replace(base, permissions={**base.permissions, "read": "allow", "list": "allow"})
        if path.is_dir():
            kind, tool, arguments = "directory", "list", {"path": str(path)}
        else:
            kind, tool, arguments = "file", "read", {"file_path": str(path)}
        try:
            result = await registry.run(tool, arguments, ctx)
        except AgentTuiError as exc:  # a binary file, an unreadable folder...: say so
            body, images = f"(Not attached: {exc})", []
        else:
            body, images = result.output, result.attachments
        attachments.append(Attachment(f'<{kind} path="{mention}">\n{body}\n</{kind}>', images))
    return attachments


# ---- the file picker ------------------------------------------------------------------


@dataclass
class FileIndex:
    """The project's files (gitignore honoured), built once per picker opening on a
    thread; `filter` runs per keystroke in memory."""

    paths: list[str]
    _lower: list[str] = field(init=False, repr=False)
    _names: list[str] = field(init=False, repr=False)
    _last: tuple[str, list[int]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._lower = [p.lower() for p in self.paths]
        self._names = [p.rsplit("/", 1)[-1] for p in self._lower]

    @classmethod
    def build(cls, root: Path) -> FileIndex:
        return cls(walk_project_files(root))

    def filter(self, query: str, limit: int = PICKER_RESULTS) -> list[str]:
        """The best `limit` paths containing the query's characters in order (case
        insensitive). Ranked in tiers: the query inside the file name, inside the path,
        spread over the file name, spread over the path; a tight spread and a short path
        first within a tier. Tiers are filled in order, so a query matching thousands of
        files costs a few C-speed passes, not a Python score per file."""
        query = query.lower()
        if not query:
            return self.paths[:limit]
        # `[^r]*r` rather than `.*?r`: no backtracking, so a miss costs one linear scan.
        steps = "".join(f"[^{re.escape(ch)}]*{re.escape(ch)}" for ch in query[1:])
        anchored = re.compile(f"[^{re.escape(query[0])}]*{re.escape(query[0])}{steps}")
        pattern = re.compile(f"{re.escape(query[0])}{steps}")
        lower, names = self._lower, self._names
        # Typing narrows: search only what matched the previous, shorter query.
        if self._last is not None and query.startswith(self._last[0]):
            hits = [i for i in self._last[1] if anchored.match(lower[i])]
        else:
            hits = [i for i, path in enumerate(lower) if anchored.match(path)]
        self._last = (query, hits)
        chosen: list[int] = []
        seen: set[int] = set()

        def take(candidates: list[int], key: Callable[[int], tuple[int, ...]]) -> None:
            fresh = [i for i in candidates if i not in seen]
            best = heapq.nsmallest(limit - len(chosen), fresh, key=key)
            chosen.extend(best)
            seen.update(best)

        def by_length(i: int) -> tuple[int, ...]:
            return (len(lower[i]), i)

        def by_span(i: int) -> tuple[int, ...]:
            match = pattern.search(names[i]) or pattern.search(lower[i])
            span = match.end() - match.start() if match else len(lower[i])
            return (span, len(lower[i]), i)

        take([i for i in hits if query in names[i]], by_length)
        if len(chosen) < limit:
            take([i for i in hits if query in lower[i]], by_length)
        if len(chosen) < limit:
            take([i for i in hits if anchored.match(names[i])], by_span)
        if len(chosen) < limit:
            take(hits, by_span)
        return [self.paths[i] for i in chosen]

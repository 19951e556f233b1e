"""Prune: clear old tool outputs (marked `time.compacted`, never deleted).

The walk goes back from the newest message, skipping the 2 newest user turns, and stops at
a summary or an already-pruned output. Of the outputs it passes, the `prune_protect`
budget keeps the most useful and everything else is cleared. Cleared first to last:

1. outputs superseded by a later read or edit of the same file (never protected);
2. plain successful outputs;
3. successful outputs the assistant quoted later (it relied on them);
4. failed outputs (bash exit code not 0, or error lines): the model needs them most;
5. failed outputs that were quoted later.

The budget is spent in the reverse order, newest first within each rank, so with all
outputs of one rank this is the plain newest-first cut. Calls that ended in an error
(`ToolStateError`), protected tools and pinned results are never cleared.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import CompactionConfig
from agent_tui.engine_context import EngineContext
from agent_tui.events import PartUpdated
from agent_tui.ids import now_ms
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    UserMessage,
)
from agent_tui.step.media import part_image_tokens

PROTECTED_TURNS = 2
FILE_READERS = {"read"}
FILE_WRITERS = {"edit", "write"}
QUOTE_MIN_CHARS = 20
"""Shorter lines (`return None`, `}`) recur by chance, so repeating one is no quote."""
SUPERSEDED = -1
"""Rank of an output a later read or edit shows better; other ranks are 2*failed + quoted."""

# Both are searched in "\n" + text: a leading literal lets `re` skip ahead to candidates.
# Lines that report a failure, at the start of a line as shells and test runners print them.
_ERROR_LINE = re.compile(r"\n(?:Error|ERROR|Traceback|FAILED|error[:\[]|fatal:)")
_LINE_NUMBER = re.compile(r"\n *\d+\t")  # the read tool's cat -n prefix


@dataclass
class _Candidate:
    part: ToolPart
    tokens: int
    rank: int
    kept: bool = False


class _Later:
    """What happens after the point the walk has reached: files touched, lines quoted.

    A quote is a whole line, a `> ` quoted line or a `code span` of a later assistant text
    or tool input, so checking an output is set lookups, not a scan of the conversation.
    """

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.quoted: set[str] = set()

    def touch(self, part: ToolPart, path: str | None, walked: bool) -> None:
        """An edit or write (in any state) supersedes older reads of its file; so does a
        read in the protected turns, and a completed one further back."""
        completed = isinstance(part.state, ToolStateCompleted)
        if path and (
            part.tool in FILE_WRITERS or (part.tool in FILE_READERS and (completed or not walked))
        ):
            self.files.add(path)

    def quote(self, text: str) -> None:
        for raw in text.splitlines():
            line = raw.strip().lstrip(">").strip()
            for piece in [line, *line.split("`")[1::2]]:
                if len(piece := piece.strip()) >= QUOTE_MIN_CHARS:
                    self.quoted.add(piece)

    def quotes_from(self, output: str, numbered: bool) -> bool:
        """Whether a later text repeats a line distinctive of `output` (found once in it)."""
        if not self.quoted:
            return False
        text = _LINE_NUMBER.sub("\n", "\n" + output) if numbered else output
        lines = list(map(str.strip, text.splitlines()))
        hits = self.quoted.intersection(lines)  # usually empty: no need to count lines
        if not hits:
            return False
        counts = Counter(lines)  # a line found twice (or all dashes) is no fingerprint
        return any(counts[line] == 1 and any(c.isalpha() for c in line) for line in hits)


def _file_of(part: ToolPart) -> str | None:
    value = part.state.input.get("file_path") or part.state.input.get("filePath")
    return os.path.normpath(value) if isinstance(value, str) else None


def _strings(value: Any) -> list[str]:
    """Every string in a tool input, however nested (an edit's old_string, a list of edits)."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def _failed(part: ToolPart, state: ToolStateCompleted) -> bool:
    """A call that completed but whose output reports a failure."""
    code = state.metadata.get("exit_code")  # set by the bash tool; None when it never exited
    if part.tool == "bash" and isinstance(code, int) and code != 0:
        return True
    if part.tool in FILE_READERS:  # a file's content is not a report of this call
        return False
    return _ERROR_LINE.search("\n" + state.output) is not None


def _candidate(part: ToolPart, path: str | None, later: _Later, model: str) -> _Candidate:
    state = part.state
    assert isinstance(state, ToolStateCompleted)
    tokens = count_tokens(state.output, model) + part_image_tokens(part, model)
    if part.tool in FILE_READERS and path in later.files:
        return _Candidate(part, tokens, SUPERSEDED)
    quoted = later.quotes_from(state.output, numbered=part.tool in FILE_READERS)
    return _Candidate(part, tokens, 2 * _failed(part, state) + quoted)


def _collect(
    history: list[MessageWithParts], config: CompactionConfig, model: str
) -> list[_Candidate]:
    """Outputs that may be cleared, newest first, each ranked against what came after it."""
    turns = 0
    found: list[_Candidate] = []
    later = _Later()
    for message in reversed(history):
        if isinstance(message.info, UserMessage):
            turns += 1
        elif message.info.summary:
            break
        walked = turns >= PROTECTED_TURNS
        for part in reversed(message.parts):
            if isinstance(part, TextPart) and isinstance(message.info, AssistantMessage):
                later.quote(part.text)
            if not isinstance(part, ToolPart):
                continue
            path = _file_of(part)
            prunable = isinstance(part.state, ToolStateCompleted)
            protected = part.tool in config.protected_tools or part.pinned is not None
            if walked and prunable and not protected:
                if part.state.time.compacted:
                    return found
                found.append(_candidate(part, path, later, model))
            later.touch(part, path, walked)
            for text in _strings(part.state.input):
                later.quote(text)
    return found


def _protect(found: list[_Candidate], budget: int) -> None:
    """Spend the budget on the highest ranks first, newest first within a rank; as in a
    plain newest-first walk, the output that crosses the budget and all after it go."""
    total = 0
    for candidate in sorted(found, key=lambda c: -c.rank):  # stable: newest first per rank
        total += candidate.tokens
        if candidate.rank == SUPERSEDED or total > budget:
            return
        candidate.kept = True


def select_prunable(
    history: list[MessageWithParts], config: CompactionConfig, model: str
) -> tuple[list[ToolPart], int]:
    """(parts to mark, their estimated tokens); empty when below `prune_minimum`."""
    found = _collect(history, config, model)
    _protect(found, config.prune_protect)
    marked = [c for c in found if not c.kept]
    total = sum(c.tokens for c in marked)
    return ([c.part for c in marked], total) if total > config.prune_minimum else ([], 0)


async def prune(ctx: EngineContext, history: list[MessageWithParts], model: str) -> int:
    """Mark prunable outputs; return the estimated tokens freed (0 if nothing applied)."""
    if not ctx.config.compaction.prune:
        return 0
    parts, total = select_prunable(history, ctx.config.compaction, model)
    if not parts:
        return 0
    stamp = now_ms()
    for part in parts:
        assert isinstance(part.state, ToolStateCompleted)
        part.state.time.compacted = stamp
        await ctx.db.upsert_part(part)
        ctx.publish(PartUpdated(part=part))
    await ctx.db.flush()
    return total

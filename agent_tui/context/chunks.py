"""Summarising a span too large for the summariser's window: the fewest chunks it allows.

Only used when the span does not fit in one request. Each chunk goes as a plain
transcript (tool calls and results as text, no tools); a text too large for one chunk is
condensed, keeping the lines that carry paths, commands, errors and numbers, and marked
with the id of the part it came from so the model can get the original back.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from agent_tui.budget.tokens import count_tokens

SALIENT = re.compile(
    r"(error|fail|exception|traceback|warning|denied|not found|\$ |>>> |"
    r"[\w.-]+/[\w./-]+|\.\w{1,5}\b|\d)",
    re.IGNORECASE,
)
HEAD_SHARE = 0.25
TAIL_SHARE = 0.25


def flatten_for_summary(
    messages: list[dict[str, Any]], part_ids: dict[str, str]
) -> list[dict[str, Any]]:
    """Tool calls and results as text, consecutive roles merged: no tools are sent.
    `part_ids` maps tool call ids to part ids, named in each result's header."""
    out: list[dict[str, Any]] = []

    def add(role: str, text: str) -> None:
        if not text:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})

    for message in messages:
        role = message["role"]
        content = message.get("content")
        if isinstance(content, list):
            text = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
        else:
            text = content or ""
        if role == "tool":
            ref = part_ids.get(message.get("tool_call_id", ""), "")
            add("user", f"[Tool result{' ' + ref if ref else ''}]\n{text}")
            continue
        calls = [
            f"[Tool call {c['function']['name']}: {c['function']['arguments']}]"
            for c in message.get("tool_calls") or []
        ]
        add("assistant" if role == "assistant" else "user", "\n".join(filter(None, [text, *calls])))
    return out


def condense(text: str, max_tokens: int, model: str) -> str:
    """`text` cut to about `max_tokens`: its head and tail, and in between the lines that
    carry paths, commands, errors and numbers before plain bulk. Gaps are marked; the
    part id in the text's `[Tool result prt_…]` header names where the original is."""
    total = count_tokens(text, model)
    if total <= max_tokens:
        return text
    lines = text.splitlines()
    ratio = total / max(len(text), 1)  # tokens per character, for cheap line sizes
    sizes = [max(int(len(line) * ratio), 1) + 1 for line in lines]
    budget = max_tokens - 20
    keep = [False] * len(lines)
    used = 0

    def take(indexes: range | list[int], limit: int) -> None:
        nonlocal used
        for index in indexes:
            if keep[index]:
                continue
            if used + sizes[index] > limit:
                return
            keep[index] = True
            used += sizes[index]

    take(range(len(lines)), int(budget * HEAD_SHARE))
    take(range(len(lines) - 1, -1, -1), int(budget * (HEAD_SHARE + TAIL_SHARE)))
    salient = [i for i, line in enumerate(lines) if not keep[i] and SALIENT.search(line)]
    take(salient, budget)
    if not used:  # one enormous line: keep its two ends
        chars = max(int(budget / ratio / 2), 100)
        return f"{text[:chars]}\n[... {total - max_tokens} tokens omitted ...]\n{text[-chars:]}"
    out: list[str] = []
    for kept, run in itertools.groupby(range(len(lines)), key=keep.__getitem__):
        indexes = list(run)
        if kept:
            out += [lines[i] for i in indexes]
        else:
            gap = len(indexes)
            out.append(f"[... {gap} line{'s' if gap != 1 else ''} omitted ...]")
    return "\n".join(out)


def chunk_messages(
    messages: list[dict[str, Any]], budget: int, model: str
) -> list[list[dict[str, Any]]]:
    """Consecutive messages packed into as few chunks of `budget` tokens as they fit."""
    chunks: list[list[dict[str, Any]]] = [[]]
    used = 0
    for message in messages:
        text = condense(message["content"], budget, model)
        size = count_tokens(text, model) + 4
        if chunks[-1] and used + size > budget:
            chunks.append([])
            used = 0
        chunks[-1].append({"role": message["role"], "content": text})
        used += size
    return chunks

"""What the app lays out for a terminal (a line each, items indented two spaces a level,
columns two spaces apart) as Markdown an editor renders the same way and wraps: a
paragraph a line, a list for indented lines, a table for indented columns. A fenced
block kept the lines but was not wrapped: long lines were cut at the edge."""

from __future__ import annotations

import re

from agent_tui.command.core import Result, Row, Rows

INDENT = 2
"""Spaces a level of a laid-out report."""
COLUMN_GAP = re.compile(r" {2,}")
"""What parts two columns of a laid-out line."""
ESCAPED = re.compile(r"[\\`*\[\]<>|~&]|(?<![^\W_])_|_(?![^\W_])")
"""Markdown's own characters, shown as they are (backquotes too: the app shows them); an
underscore inside a word (`msg_01…`, `$OPENAI_API_KEY`) is no emphasis, and stays."""
MARKER = re.compile(r"^[#+=-]")
"""What makes a line a heading, a rule or a list item, at its start."""
ORDERED = re.compile(r"^(\d+)([.)])(?=\s|$)")
"""An ordered list item's number (its punctuation is what is escaped: `1\\. `)."""
NUMBER = re.compile(r"[~≈]?[\d,.]+ ?%?")
"""A cell of figures: right-aligned, as the app aligns them."""


def escape(text: str) -> str:
    """`text` shown as it is, not read as Markdown."""
    text = ORDERED.sub(r"\1\\\2", ESCAPED.sub(r"\\\g<0>", text))
    return MARKER.sub(r"\\\g<0>", text)


def as_markdown(result: Result) -> str:
    """A command's result for an editor: rows as a list, a laid-out report as Markdown
    that keeps its layout (`laid_out` on its class), the rest (sentences, a diff in its
    own fence) as it is."""
    if isinstance(result, Rows) and result.rows:
        return "\n".join(_row(row) for row in result.rows)
    text = result.message()
    return laid_out(text) if text and getattr(result, "laid_out", False) else text


def _row(row: Row) -> str:
    detail = " ".join(row.detail.split())
    said = f"`{row.id}` {escape(row.first_line)}" + (f" — {escape(detail)}" if detail else "")
    return f"{'  ' * row.depth}- {said}"


def laid_out(text: str) -> str:
    """`text` as Markdown blocks: each unindented line a paragraph, each run of indented
    lines a table (when every line of it has columns) or a nested list."""
    blocks: list[str] = []
    run: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.strip() and _depth(line) > 0:
            run.append(line)
            continue
        if run:
            blocks.append(_table(run) if _tabular(run) else _list(run))
            run = []
        if line.strip():
            blocks.append(escape(line.strip()))
    return "\n\n".join(blocks)


def _depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // INDENT


def _columns(line: str) -> list[str]:
    return COLUMN_GAP.split(line.strip())


def _tabular(lines: list[str]) -> bool:
    depths = {_depth(line) for line in lines}
    return len(depths) == 1 and all(len(_columns(line)) > 1 for line in lines)


def _table(lines: list[str]) -> str:
    rows = [_columns(line) for line in lines]
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    numeric = [all(not r[i] or NUMBER.fullmatch(r[i]) for r in rows) for i in range(width)]
    header = "|" + " |" * width  # Markdown tables need one: the app's have none
    rule = "|" + "".join("--:|" if right else "---|" for right in numeric)
    body = ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def _list(lines: list[str]) -> str:
    """Nested as indented: a level deeper than the line above at most."""
    items: list[str] = []
    top, level = _depth(lines[0]), 0
    for line in lines:
        level = min(max(_depth(line) - top, 0), level + 1) if items else 0
        items.append(f"{'  ' * level}- {escape(' '.join(line.split()))}")
    return "\n".join(items)

"""What a Markdown client shows of agent text: rendered by markdown-it (CommonMark with
tables, as editors render), each block's text as shown (runs of spaces are one) — a
paragraph, a list item, a table row (its cells joined by a space) — and each line of a
code block marked PRE (a client shows it as it is and never wraps it)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

PRE = "<pre> "
_RENDERER = MarkdownIt("commonmark").enable("table")


def _plain(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def blocks(markdown: str) -> list[str]:
    found: list[str] = []
    row: list[str] | None = None
    for token in _RENDERER.parse(markdown):
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            found.append(" ".join(cell for cell in row if cell))
            row = None
        elif token.type == "inline":
            (row if row is not None else found).append(_plain(token))
        elif token.type in ("fence", "code_block"):
            found += [PRE + line for line in token.content.splitlines() if line.strip()]
    return [b if b.startswith(PRE) else " ".join(b.split()) for b in found if b.strip()]


def in_code(shown: list[str]) -> list[str]:
    """The lines shown in code blocks."""
    return [block for block in shown if block.startswith(PRE)]

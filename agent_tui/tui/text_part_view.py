"""Assistant text: Markdown drawn as a few `Static`s, never a widget per Markdown block.

Textual's `Markdown` builds a widget tree per paragraph, list item and code block; a
finished reply costs tens of milliseconds to mount and every mounted block is laid out
again on every frame. Here a finished text is one widget. A streaming text is the blocks
finished so far (each rendered once, in chunks) plus the growing last block, the only
thing re-parsed and re-rendered when more text arrives.
"""

from __future__ import annotations

import time

from markdown_it import MarkdownIt
from rich.markdown import Markdown as RichMarkdown
from textual.containers import Vertical
from textual.widgets import Static

CODE_THEME = "monokai"
_parser = MarkdownIt("commonmark").enable(["strikethrough", "table"])


class _Markdown(RichMarkdown):
    """rich's Markdown parsed with one shared parser.

    `rich.markdown.Markdown.__init__` builds a new `MarkdownIt` per instance, and with it
    a `LinkifyIt` that compiles large regular expressions: milliseconds per render, and
    measured to keep ~60 KB alive per instance (12x the memory after 1,000 steps)."""

    def __init__(self, markup: str) -> None:  # the attributes rich's __init__ sets
        self.markup = markup
        self.parsed = _parser.parse(markup)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME


def render_markdown(text: str) -> RichMarkdown:
    return _Markdown(text)


def open_block_start(text: str) -> int:
    """Where the last top-level block of `text` starts (a line start): everything before
    it is finished; the last block may still grow."""
    start_line = 0
    for token in _parser.parse(text):
        if token.level == 0 and token.map is not None and not token.type.endswith("_close"):
            start_line = token.map[0]
    if start_line == 0:
        return 0
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[:start_line])


class TextPartView(Vertical):
    """Shows a text part; `show(full_text)` renders whatever is new since the last call.

    Views pass the part's whole text rather than deltas, so collapsed or repeated
    updates are harmless. `commit_log`, when set to a list, receives
    `(perf_counter(), characters shown)` after every update (used by bench/).
    """

    DEFAULT_CSS = """
    TextPartView { height: auto; margin: 0; padding: 0; background: transparent; }
    TextPartView > Static { margin: 0 0 1 0; }
    TextPartView > Static.-tail { margin: 0; }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        self._text = text
        self._finished = 0
        """Characters of `_text` in the chunks above the tail."""
        self._tail = Static(render_markdown(text), classes="-tail")
        self.commit_log: list[tuple[float, int]] | None = None
        super().__init__(self._tail, id=id)

    @property
    def text(self) -> str:
        """Everything shown so far."""
        return self._text

    async def show(self, text: str) -> None:
        """Render the part of `text` not shown yet."""
        if len(text) <= len(self._text):
            return
        self._text = text
        split = self._finished + open_block_start(text[self._finished :])
        if split > self._finished:
            chunk = text[self._finished : split].rstrip("\n")
            self._finished = split
            await self.mount(Static(render_markdown(chunk)), before=self._tail)
        self._tail.update(render_markdown(text[self._finished :]))
        if self.commit_log is not None:
            self.commit_log.append((time.perf_counter(), len(text)))

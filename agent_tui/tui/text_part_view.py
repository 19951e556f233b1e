"""Assistant text: Markdown drawn by two widgets, never a widget per Markdown block.

Textual's `Markdown` builds a widget tree per paragraph, list item and code block; a
finished reply costs tens of milliseconds to mount and every mounted block is laid out
again on every frame. Here a finished text is one widget. A streaming text is the blocks
finished so far (`MarkdownBlocks`: rendered once each, drawn line by line, mounted when
the first block is finished) plus the growing last block, the only thing re-parsed and
re-rendered when more text arrives, once per update (`RenderedOnce`).
"""

from __future__ import annotations

import time

from textual.containers import Vertical
from textual.widgets import Static

from agent_tui.tui.markdown_blocks import MarkdownBlocks
from agent_tui.tui.markdown_render import RenderedOnce, open_block_start, render_markdown


class TextPartView(Vertical):
    """Shows a text part; `show(full_text)` renders whatever is new since the last call.

    Views pass the part's whole text rather than deltas, so collapsed or repeated
    updates are harmless. `commit_log`, when set to a list, receives
    `(perf_counter(), characters shown)` after every update (used by bench/).
    """

    DEFAULT_CSS = """
    TextPartView { height: auto; margin: 0; padding: 0; background: transparent; }
    TextPartView > Static.-tail { margin: 0; }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        self._text = text
        self._finished = 0
        """Characters of `_text` in the chunks above the tail."""
        self._chunks = MarkdownBlocks()
        self._rendered = RenderedOnce(render_markdown(text))
        self._tail = Static(self._rendered, classes="-tail")
        self.commit_log: list[tuple[float, int]] | None = None
        super().__init__(self._tail, id=id)

    async def show(self, text: str) -> None:
        """Render the part of `text` not shown yet."""
        if len(text) <= len(self._text):
            return
        self._text = text
        split = self._finished + open_block_start(text[self._finished :])
        if split > self._finished:
            if not self._chunks.is_attached:
                await self.mount(self._chunks, before=self._tail)
            self._chunks.add(text[self._finished : split].rstrip("\n"))
            self._finished = split
        tail = render_markdown(text[self._finished :], following=self._finished > 0)
        self._rendered = RenderedOnce(tail)
        self._tail.update(self._rendered)
        if self.commit_log is not None:
            self.commit_log.append((time.perf_counter(), len(text)))

    def rehighlight(self) -> None:
        """Draw again what was drawn with its code plain (`highlighting.py`)."""
        self._chunks.rehighlight()
        if self._rendered.plain:
            self._rendered.forget()
            self._tail.update(self._rendered, layout=False)

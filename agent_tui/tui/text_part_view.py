"""Assistant text: Markdown streamed through `Markdown.get_stream`."""

from __future__ import annotations

import time

from textual.await_complete import AwaitComplete
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownStream


class TextPartView(Markdown):
    """Shows a text part; `show(full_text)` streams whatever is new since the last call.

    Views pass the part's whole text rather than deltas, so collapsed or repeated
    updates are harmless. `commit_log`, when set to a list, receives
    `(perf_counter(), characters committed)` after every append (used by bench/).
    """

    DEFAULT_CSS = """
    TextPartView {
        margin: 0;
        padding: 0;
        background: transparent;
    }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(text, id=id)
        self._text = text
        self._committed = len(text)
        self._stream: MarkdownStream | None = None
        self.commit_log: list[tuple[float, int]] | None = None

    @property
    def text(self) -> str:
        """Everything handed to the stream so far."""
        return self._text

    async def show(self, text: str) -> None:
        """Stream the part of `text` not shown yet."""
        if len(text) <= len(self._text):
            return
        new, self._text = text[len(self._text) :], text
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._stream.write(new)

    async def finish(self) -> None:
        """Stop the stream: everything written so far is appended first."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()

    def append(self, markdown: str) -> AwaitComplete:
        appended = super().append(markdown)

        async def counted() -> None:
            await appended
            self._committed += len(markdown)
            if self.commit_log is not None:
                self.commit_log.append((time.perf_counter(), self._committed))

        return AwaitComplete(counted())

"""The finished blocks of a streaming reply: one widget, its lines rendered once.

A reply of a few hundred Markdown blocks as a `Static` per block made every frame of
the stream lay out and place hundreds of widgets. Here the blocks are rendered to strips
once per width (again only after a resize) and drawn through Textual's line API, so a
frame's cost does not grow with the length of the reply.
"""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from agent_tui.tui.highlighting import HIGHLIGHTING
from agent_tui.tui.markdown_render import render_markdown


class MarkdownBlocks(Widget):
    DEFAULT_CSS = "MarkdownBlocks { height: auto; }"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: list[str] = []
        self._width = 0
        self._lines: list[Strip] = []
        self._style: Style | None = None
        """Its rich style, until its styles change (`notify_style_update`: classes, the
        theme, its ancestors'): working it out walks the ancestors, at every line of
        every frame of a stream."""
        self._plain = False
        """Some of its code was drawn plain (`highlighting.py`)."""

    def add(self, markdown: str) -> None:
        """Append a finished block."""
        self._blocks.append(markdown)
        if self._width:
            self._lines += self._render(len(self._blocks) - 1, self._width)
        self.refresh(layout=True)

    def _render(self, index: int, width: int) -> list[Strip]:
        """Block `index`'s lines, with the gap rich draws before it after the others."""
        renderable = render_markdown(self._blocks[index], following=index > 0)
        console = self.app.console
        options = self.app.console_options.update_width(width).update(highlight=False)
        plain_draws = HIGHLIGHTING.plain_draws
        lines = console.render_lines(renderable, options, pad=True)
        self._plain = self._plain or HIGHLIGHTING.plain_draws != plain_draws
        return [Strip(line, width) for line in lines]

    def rehighlight(self) -> None:
        """Draw again what was drawn with its code plain."""
        if self._plain:
            self._plain = False
            self._width = 0
            self.refresh()

    def _lines_at(self, width: int) -> list[Strip]:
        if width != self._width:
            self._width = width
            self._lines = [
                line for index in range(len(self._blocks)) for line in self._render(index, width)
            ]
        return self._lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines_at(width)) if width > 0 else 0

    def notify_style_update(self) -> None:
        self._style = None
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self._lines_at(width)
        style = self._style
        if style is None:
            style = self._style = self.rich_style
        if y >= len(lines):
            return Strip.blank(width, style)
        return lines[y].apply_style(style)

"""Markdown to rich renderables: one shared parser, and where a streaming text's
finished blocks end."""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.syntax import Syntax

from agent_tui.tui.highlighting import HIGHLIGHTING, ready

CODE_THEME = "monokai"
_parser = MarkdownIt("commonmark").enable(["strikethrough", "table"])


class _CodeBlock(CodeBlock):
    """rich's code block, drawn plain while its language's lexer is not built, and by the
    lexer `highlighting.ready` names (rich looks an unknown name up at every render)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if (lexer := ready(self.lexer_name)) is None:
            HIGHLIGHTING.drawn_plain(self.lexer_name)
        code = str(self.text).rstrip()
        return [Syntax(code, lexer or "text", theme=self.theme, word_wrap=True, padding=1)]


class _Markdown(RichMarkdown):
    """rich's Markdown parsed with one shared parser.

    `rich.markdown.Markdown.__init__` builds a new `MarkdownIt` per instance, and with it
    a `LinkifyIt` that compiles large regular expressions: time on every render, and
    memory kept alive per instance (measured: docs/performance.md)."""

    elements = {**RichMarkdown.elements, "fence": _CodeBlock, "code_block": _CodeBlock}

    def __init__(self, markup: str) -> None:  # the attributes rich's __init__ sets
        self.markup = markup
        self.parsed = _parser.parse(markup)
        self.code_theme = CODE_THEME
        self.justify = None
        self.style = "none"
        self.hyperlinks = True
        self.inline_code_lexer = None
        self.inline_code_theme = CODE_THEME


LEAD = "x\n\n"
"""A one-line paragraph drawn before a block that follows others, then dropped."""


class _Following:
    """A block drawn as it looks after an earlier block in the same text.

    rich decides the gap between two blocks by their kinds and draws it with the second
    (a list brings its own blank line, a heading gets one, a code block's padding is not
    one). Drawing the block behind a one-line paragraph and dropping that line leaves
    exactly that gap: streamed blocks drawn apart look like the whole text drawn at once.
    """

    def __init__(self, text: str) -> None:
        self.markdown = _Markdown(LEAD + text)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = iter(console.render(self.markdown, options))
        for segment in segments:
            if "\n" in segment.text:
                rest = segment.text.split("\n", 1)[1]
                if rest:
                    yield Segment(rest, segment.style)
                break
        yield from segments


RenderableMarkdown = RichMarkdown | _Following


def render_markdown(text: str, *, following: bool = False) -> RenderableMarkdown:
    """`text` as a rich renderable; `following`: it comes after other blocks."""
    return _Following(text) if following and text else _Markdown(text)


class RenderedOnce:
    """A renderable whose segments are kept per width: measuring and drawing it at the
    same width render it once."""

    def __init__(self, renderable: RenderableMarkdown) -> None:
        self.renderable = renderable
        self._width = -1
        self._segments: list[Segment] = []
        self.plain = False
        """Some of its code was drawn plain (`highlighting.py`): `forget` to draw it again."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width != self._width:
            plain_draws = HIGHLIGHTING.plain_draws
            self._segments = list(console.render(self.renderable, options))
            self._width = options.max_width
            self.plain = HIGHLIGHTING.plain_draws != plain_draws
        return self._segments

    def forget(self) -> None:
        self._width = -1


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

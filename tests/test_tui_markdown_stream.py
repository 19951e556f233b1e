"""A streamed reply is drawn exactly as the same text drawn at once, while its finished
blocks live in one line-drawn widget (not a widget per block)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from agent_tui.tui.markdown_blocks import MarkdownBlocks
from agent_tui.tui.text_part_view import TextPartView

REPLY = (
    "I will **refactor** the loader in three steps.\n\n"
    "## Plan\n\n"
    "1. Read `loader.py`.\n2. Cache the parsed files.\n3. Run the tests.\n\n"
    "```python\ndef load(path):\n    return path.read_text()\n```\n\n"
    "> A quote that is long enough to wrap over more than one line of the terminal "
    "at this width, to check wrapping.\n\n"
    "| file | lines |\n|---|---|\n| loader.py | 120 |\n\n"
    "- one\n- two\n\n"
    "Done: the loader now reads each file once."
)


class Pair(App[None]):
    def compose(self) -> ComposeResult:
        yield TextPartView(id="streamed")
        yield TextPartView(REPLY, id="whole")


def lines(widget: Widget) -> list[str]:
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return [strip.text.rstrip() for strip in strips]


def drawn(view: TextPartView) -> list[str]:
    return [line for child in view.children for line in lines(child)]


async def test_a_streamed_reply_draws_like_the_whole_text() -> None:
    app = Pair()
    async with app.run_test(size=(60, 80)) as pilot:
        streamed = app.query_one("#streamed", TextPartView)
        for end in range(7, len(REPLY) + 7, 7):  # a few characters per update
            await streamed.show(REPLY[:end])
        await pilot.pause()
        finished = "\n\n".join(streamed.query_one(MarkdownBlocks)._blocks)
        assert len(streamed.children) == 2  # the finished blocks and the growing tail
        assert finished.startswith("I will **refactor**")
        assert "Done: the loader" not in finished  # the last block is still the tail
        whole = app.query_one("#whole", TextPartView)
        assert len(whole.children) == 1  # a finished text: one widget, no empty blocks
        assert drawn(streamed) == drawn(whole)
        assert any("def load(path):" in line for line in drawn(streamed))

        # After a resize the finished blocks are drawn again at the new width.
        await pilot.resize_terminal(40, 80)
        await pilot.pause()
        assert drawn(streamed) == drawn(whole)
        assert max(len(line) for line in drawn(streamed)) <= 40


async def test_finished_blocks_take_the_colours_of_a_new_theme_and_class() -> None:
    """MarkdownBlocks works its style out once per style change, not per line: a theme
    or a class that recolours it still does."""

    class Styled(Pair):
        CSS = "TextPartView.-warn { color: red; background: blue; }"

    def styles(view: TextPartView) -> set[object]:
        blocks = view.query_one(MarkdownBlocks)
        strips = blocks.render_lines(Region(0, 0, blocks.size.width, blocks.size.height))
        return {seg.style for strip in strips for seg in strip if seg.text.strip()}

    app = Styled()
    async with app.run_test(size=(60, 80)) as pilot:
        streamed = app.query_one("#streamed", TextPartView)
        await streamed.show(REPLY)
        await pilot.pause()
        dark = styles(streamed)
        app.theme = "textual-light"
        await pilot.pause()
        light = styles(streamed)
        assert dark and light != dark
        streamed.add_class("-warn")  # on an ancestor: the blocks' own rules do not change
        await pilot.pause()
        assert styles(streamed) != light

"""A partial frame renders only the widgets and lines it shows (tui/partial_frames.py),
and writes exactly what Textual's own rendering of every widget would have written."""

from __future__ import annotations

from typing import Any

import pytest
from textual._compositor import ChopsUpdate, Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Footer, Static, TextArea

from agent_tui.tui import partial_frames


class Probe(App[None]):
    """The app's shape: a scrolled conversation and a prompt beside a sidebar, a footer."""

    CSS = """
    #side { width: 30; } #view { height: 1fr; } #prompt { height: 3; }
    .row { margin: 0 1; background: $boost; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical():
                rows = [Static(f"line {n} " * 9, classes="row") for n in range(60)]
                yield VerticalScroll(*rows, id="view")
                yield TextArea(id="prompt")
            yield Static("\n".join(f"side {n}" for n in range(40)), id="side")
        yield Footer()


async def test_a_partial_frame_writes_what_rendering_every_widget_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    partial_frames.install()
    frames: list[tuple[str, str]] = []
    drawn: list[tuple[set[Widget], set[Widget]]] = []  # the widgets rendered: ours, Textual's
    real = Compositor.render_partial_update
    render_lines = Widget.render_lines
    rendered: set[Widget] = set()

    def counted(widget: Widget, crop: Region) -> Any:
        rendered.add(widget)
        return render_lines(widget, crop)

    def written(compositor: Compositor, get_renders: Any, crop: Region, spans: list[Any]) -> str:
        monkeypatch.setattr(Compositor, "_get_renders", get_renders)
        rendered.clear()
        rows = {y for y, _, _ in spans}
        chops = compositor._render_chops(crop, rows.__contains__)
        ends = [cuts[1:] for cuts in compositor.cuts]
        return ChopsUpdate(chops, spans, ends).render_segments(app.console)

    def both(compositor: Compositor) -> ChopsUpdate | None:
        regions = list(compositor._dirty_regions)
        if regions:
            crop = Region.from_union(regions).intersection(compositor.size.region)
            spans = list(compositor._regions_to_spans(regions))
            monkeypatch.setattr(Widget, "render_lines", counted)
            ours = written(compositor, partial_frames._get_renders, crop, spans)
            ours_rendered = set(rendered)
            theirs = written(compositor, partial_frames.ORIGINAL, crop, spans)
            drawn.append((ours_rendered, set(rendered)))
            frames.append((ours, theirs))
            monkeypatch.setattr(Widget, "render_lines", render_lines)
            monkeypatch.setattr(Compositor, "_get_renders", partial_frames._get_renders)
        return real(compositor)

    monkeypatch.setattr(Compositor, "render_partial_update", both)
    app = Probe()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.click("#prompt")
        for key in "typed keys":
            await pilot.press(key)
        view = app.query_one("#view", VerticalScroll)
        view.scroll_end(animate=False)
        await pilot.pause()
        app.query("#view Static").last(Static).update("the newest line, changed")
        side, footer = app.query_one("#side", Static), app.query_one(Footer)
        side.update("the sidebar, changed")
        await pilot.pause()
    assert len(frames) >= 12
    assert all(ours == theirs for ours, theirs in frames)
    assert all(ours <= theirs for ours, theirs in drawn)
    # A typed key: the prompt and its containers, not the sidebar, the footer, the view.
    keys = [ours for ours, theirs in drawn if {side, footer} <= theirs - ours]
    assert len(keys) >= len("typed keys")

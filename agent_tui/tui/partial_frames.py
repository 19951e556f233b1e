"""A partial frame (a typed key, a spinner, a streamed line) renders only what it shows.

Textual's compositor draws one by rendering every visible widget whose clip (the area
of its container) meets the changed region, each over its whole height, and then keeps
the changed lines: a key typed in the prompt rendered the sidebar, the footer and the
whole conversation again (from their caches, through the line filters) for the prompt's
few lines, in every key's frame (docs/performance.md). `install()` renders only the
widgets whose visible area meets the changed region, and only the lines of it that region
spans. The same frames (tests/test_partial_frames.py). The Textual version pinned in
pyproject has `Compositor._get_renders(crop)`; should a later one not, it is left alone."""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip

Render = tuple[Region, Region, list[Strip]]
ORIGINAL = getattr(Compositor, "_get_renders", None)


def _get_renders(self: Compositor, crop: Region | None = None) -> Iterable[Render]:
    if crop is None:
        yield from ORIGINAL(self, crop)  # type: ignore[misc]  # a full frame
        return
    lines = Region(0, crop.y, self.size.width, crop.height)
    for widget, (region, clip) in self.visible_widgets.items():
        clip = clip.intersection(lines)
        visible = region.intersection(clip)
        if visible and visible.overlaps(crop):
            shown = visible.translate((-region.x, -region.y))
            yield region, clip, widget.render_lines(shown)


def install() -> None:
    if ORIGINAL is not None:
        Compositor._get_renders = _get_renders  # type: ignore[method-assign]

"""Textual's `Strip` (one line of a frame) caches what `divide` and `crop_extend` return
on the strip itself. When that result is the strip (`[self]` for a line with no cut in
it, `self` for a crop of the whole line), the strip refers to itself: a reference cycle.
Such a strip is freed only by the cyclic garbage collector, not when the frame is done
with it, and most lines of every frame are such strips. While a long reply streams,
that garbage (thousands of strips, with their caches and segments) made long young
collections inside frames: a key typed then waited for them (bench_tui, unthrottled
stream; the figures are in docs/performance.md).

`install()` wraps the two methods so that these results are returned without being
cached in the strip itself; every other result is cached as before. Same results, no
cycles. The Textual version pinned in pyproject (strip.py) has both; should a later one
lack one, it is left alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.style import Style
from textual.strip import Strip

_installed = False


def install() -> None:
    global _installed
    if _installed or not (hasattr(Strip, "divide") and hasattr(Strip, "crop_extend")):
        return
    _installed = True
    divide, crop_extend = Strip.divide, Strip.crop_extend

    def divide_without_cycle(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        length = self.cell_length
        kept = [cut for cut in cuts if cut <= length]  # as Strip.divide filters them
        if kept == [length]:
            return [self]  # what Strip.divide returns (and would cache in self)
        return divide(self, kept)

    def crop_extend_without_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        if start <= 0 and end == self.cell_length:
            return self  # extend_cell_length(end) and crop(0, end) are both self
        return crop_extend(self, start, end, style)

    Strip.divide = divide_without_cycle  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_without_cycle  # type: ignore[method-assign]

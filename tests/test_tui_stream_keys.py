"""Keys win over a stream at any provider speed: a reply that arrives faster than it is
read never holds the event loop, and the app draws a typed key before the stream's next
batch. (How fast, at full stream speed: bench/bench_tui.py's unthrottled sections.)"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest
from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Static

from agent_tui.events import PartUpdated
from agent_tui.ids import part_id
from agent_tui.provider.provider_errors import Received
from agent_tui.provider.stream import _events
from agent_tui.provider.stream_events import StepFinish, TextDelta
from agent_tui.records import TextPart
from agent_tui.tui import strip_cycles
from agent_tui.tui.event_pump import (
    DRAW_SHARE,
    MAX_FRAME,
    TYPING_SHARE,
    TYPING_WINDOW,
    EventPump,
)
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import PumpTarget, open_app, type_and_send, view_text, wait_for

SIZE = (120, 36)


class Buffered:
    """A provider response whose chunks are all there already: reading one never waits
    (as when the server sent the whole reply faster than it is processed)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.read = 0

    def __aiter__(self) -> AsyncIterator[SimpleNamespace]:
        return self

    async def __anext__(self) -> SimpleNamespace:
        if self.read > self.count:
            raise StopAsyncIteration
        self.read += 1
        last = self.read > self.count
        delta = SimpleNamespace(content=None if last else "word ", tool_calls=None)
        choice = SimpleNamespace(delta=delta, finish_reason="stop" if last else None)
        return SimpleNamespace(choices=[choice], usage=None)


async def test_a_buffered_stream_lets_other_tasks_run() -> None:
    response = Buffered(200_000)
    seen_at: list[int] = []

    async def other_task() -> None:  # a key, a frame, another session's stream
        while response.read <= response.count:
            seen_at.append(response.read)
            await asyncio.sleep(0)

    other = asyncio.create_task(other_task())
    await asyncio.sleep(0)
    events = [event async for event in _events(response, Received())]
    await other
    assert isinstance(events[-1], StepFinish)
    assert sum(isinstance(e, TextDelta) for e in events) == response.count
    during = [n for n in seen_at if 0 < n < response.count]
    assert len(during) > 1, "the other task never ran while the stream was read"


def _update(part: TextPart, text: str) -> PartUpdated:
    return PartUpdated(part=part.model_copy(update={"text": part.text + text}), delta=text)


async def test_a_key_holds_the_next_batch_back_and_slow_frames_space_them() -> None:
    target = PumpTarget()
    pump = EventPump(target, frame=0.02)  # type: ignore[arg-type]
    part = TextPart(id=part_id(), session_id="ses", message_id="msg")
    pump.publish(_update(part, "a"))
    assert len(target.posted) == 1  # the first after a quiet spell: at once
    pump.take()
    # A key arrives: a batch already posted waits (deferred), the events stay queued.
    pump.publish(_update(part, "b"))
    pump.hold()
    assert pump.deferred()
    target.arrived.clear()
    await asyncio.wait_for(target.arrived.wait(), timeout=5)  # posted again after the hold
    assert not pump.deferred()
    (event,) = pump.take()
    assert isinstance(event, PartUpdated) and event.part.text == "b"
    # A batch that took long to draw spaces the next ones (at most MAX_FRAME apart).
    pump.drawn(10.0)
    assert pump._interval == MAX_FRAME
    pump.drawn(0.0)
    assert pump._interval == 0.02
    # While the person types, batches take a smaller share of the time.
    pump.drawn(0.012)
    assert pump._interval == pytest.approx(0.012 / TYPING_SHARE)
    pump._typed_at -= TYPING_WINDOW
    pump.drawn(0.012)
    assert pump._interval == pytest.approx(0.012 / DRAW_SHARE)


async def test_keys_typed_while_a_reply_streams_unthrottled_are_shown_before_it_ends(
    configured: FakeOpenAI,
) -> None:
    """The fake server streams a long reply with no delay (all of it is buffered long
    before the app has read it); a key typed meanwhile is in the prompt while the reply is
    still streaming, not after it. The reply is far longer than any machine draws in the
    moment the keys take (~1.4 MB: seconds of drawing however fast the machine), so the
    keys cannot come after its end on a fast machine; Esc then stops it, and what was
    drawn is kept."""
    reply = "The loader reads every file twice. " * 40_000
    configured.script(Text(reply, chunk_size=64))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "write it all")
        await wait_for(pilot, lambda: len(view_text(app)) > 1_000, "the reply streaming")
        await pilot.press("x", "y")
        assert app.prompt.text == "xy"
        shown = len(view_text(app))
        assert app.chat.status == "busy" and shown < len(reply)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.chat.status == "idle", "the interrupted end", timeout=120)
        kept = view_text(app).strip()
        assert len(kept) >= shown - 1 and reply.startswith(kept)
    await app.db.close()


def _strips_left_for_the_collector() -> list[object]:
    """Strips that only the cyclic collector could free, found without freeing them."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return [o for o in gc.garbage if isinstance(o, Strip)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_strip_used_whole_is_freed_when_dropped() -> None:
    """Textual caches a strip's `divide` and `crop_extend` results in the strip; when
    the result is the strip itself that was a cycle (strip_cycles.py). The results are
    unchanged and the strip is freed by its last reference going."""
    strip_cycles.install()
    gc.collect()
    gc.disable()
    try:
        strip = Strip([Segment("hello "), Segment("world")])
        assert strip.divide([11]) == [strip]
        assert strip.crop_extend(0, 11, None) is strip
        assert [s.text for s in strip.divide([5, 11])] == ["hello", " world"]
        assert strip.crop_extend(0, 13, None).cell_length == 13
        del strip
        assert _strips_left_for_the_collector() == []
    finally:
        gc.enable()


async def test_frames_drawn_while_a_reply_streams_leave_no_strips_to_the_collector(
    configured: FakeOpenAI,
) -> None:
    """The lines of every frame drawn while a reply streams into the app are freed as
    they are done with, not by collections that stall a frame (bench_tui measured 20-60 ms
    ones; a key typed then waited for them)."""
    reply = "The loader reads every file twice; **the cache** is `cold`. " * 300
    configured.script(Text(reply, chunk_size=16, delay=0.001))
    app = await open_app()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            gc.collect()
            gc.disable()  # nothing is collected while the reply streams: it is all kept
            try:
                await type_and_send(pilot, "write it all")
                # Only against a hang: under coverage, with 3 workers on 2 cores, these
                # 1,125 chunks took over 120 s (23 s without coverage).
                await wait_for(pilot, lambda: app.chat.status == "idle", "the end", timeout=270)
                await pilot.pause()
                assert view_text(app).strip() == reply.strip()
                assert _strips_left_for_the_collector() == []
            finally:
                gc.enable()
    finally:
        await app.db.close()


async def test_typing_plain_text_does_not_lay_the_screen_out_again(configured: FakeOpenAI) -> None:
    """The command hints under the prompt change only when a `/` command is typed: a
    plain key must not update them, for an update lays out the whole screen (with a long
    conversation on it, that made each key's frame 15-20 ms while a reply streamed)."""
    app = await open_app()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press(*"hello")
            await pilot.pause()
            assert not app.query("#completions")  # none yet: not even mounted
            await pilot.press("ctrl+u", "/", "c", "o")
            await pilot.pause()
            await pilot.press("ctrl+u")
            await pilot.pause()
            hints = app.query_one("#completions", Static)
            assert not hints.has_class("-shown")
            updates: list[object] = []
            original = hints.update
            hints.update = lambda content="", **kw: (
                updates.append(content),
                original(content, **kw),
            )  # type: ignore[method-assign]
            await pilot.press(*"hello there")
            await pilot.pause()
            assert app.prompt.text == "hello there"
            assert updates == []
            await pilot.press("ctrl+u", "/", "c", "o")
            await pilot.pause()
            assert updates and "/compact" in str(updates[-1])  # the hints still follow
    finally:
        await app.db.close()

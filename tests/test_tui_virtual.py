"""The conversation view is virtual: a window of mounted messages over a long history,
bounded while a live session grows, older messages mounted when scrolled to."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from textual.pilot import Pilot
from textual.widget import Widget

from agent_tui.events import MessageUpdated, PartUpdated, SessionStatus
from agent_tui.ids import message_id, part_id
from agent_tui.records import (
    AssistantMessage,
    Session,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolTime,
    UserMessage,
)
from agent_tui.storage.db import Database
from agent_tui.tui import event_pump
from agent_tui.tui.app import AgentApp
from agent_tui.tui.assistant_message_view import AssistantMessageView
from agent_tui.tui.event_pump import EventPump
from agent_tui.tui.session_view import WINDOW_MAX
from agent_tui.tui.text_part_view import TextPartView
from agent_tui.tui.user_message_view import UserMessageView
from tests.tui_helpers import PumpTarget, last_reply, open_app, project_dir, wait_for

SIZE = (100, 30)
STEPS_PER_TURN = 3


def _user(session_id: str, text: str) -> tuple[UserMessage, TextPart]:
    info = UserMessage(id=message_id(), session_id=session_id, model="openai/test-model")
    return info, TextPart(id=part_id(), session_id=session_id, message_id=info.id, text=text)


def _step(session_id: str, parent_id: str, n: int) -> tuple[AssistantMessage, list]:
    info = AssistantMessage(
        id=message_id(),
        session_id=session_id,
        parent_id=parent_id,
        model="openai/test-model",
        finish="stop",
        completed=1,
    )
    ids = {"session_id": session_id, "message_id": info.id}
    tool = ToolPart(
        id=part_id(),
        call_id=f"call_{n}",
        tool="read",
        state=ToolStateCompleted(
            input={"file_path": f"src/file_{n}.py"},
            output="x = 1\n",
            title="read",
            time=ToolTime(start=1, end=2),
        ),
        **ids,
    )
    text = TextPart(id=part_id(), text=f"Reply {n}.\n\nSecond line of reply {n}.", **ids)
    return info, [text, tool]


async def _build(db: Database, steps: int) -> Session:
    """A finished session in the real SQLite file: a user message every few steps."""
    session = await db.create_session(str(project_dir()), title="long")
    parent = ""
    for n in range(steps):
        if n % STEPS_PER_TURN == 0:
            user, part = _user(session.id, f"Task {n}")
            parent = user.id
            await db.upsert_message(user)
            await db.upsert_part(part)
        info, parts = _step(session.id, parent, n)
        await db.upsert_message(info)
        for part in parts:
            await db.upsert_part(part)
    await db.flush()
    return session


def _message_views(app: AgentApp) -> list[Widget]:
    return [
        w for w in app.chat.view.children if isinstance(w, (AssistantMessageView, UserMessageView))
    ]


def _user_texts(app: AgentApp) -> list[str]:
    return [w.text for w in app.chat.view.children if isinstance(w, UserMessageView)]


async def _long_session_app() -> tuple[AgentApp, Session]:
    """The app on a stored session of 150 steps (`_build`), before it runs."""
    app = await open_app()
    app.chat.session = session = await _build(app.db, 150)
    return app, session


async def _opened(app: AgentApp, pilot: Pilot) -> None:
    """Wait until the 200-entry session of `_build(…, 150)` is shown: all its entries
    known, and shortly after the first paint a screen of older messages mounted above."""
    await app.loaded.wait()
    view = app.chat.view
    await wait_for(pilot, lambda: len(view._entries) == 200, "the session's entries")
    await wait_for(pilot, lambda: view.scroll_y > view.size.height, "the margin above")
    await pilot.pause()


async def test_scrolling_to_the_top_mounts_the_oldest_messages() -> None:
    app, _ = await _long_session_app()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(app, pilot)
        view = app.chat.view
        assert len(_message_views(app)) <= WINDOW_MAX
        assert "Task 0" not in _user_texts(app)
        assert last_reply(view) == "Reply 149.\n\nSecond line of reply 149."
        for _ in range(200 // 10 + 1):
            if view._lo == 0:
                break
            first = _message_views(app)[0]
            lo = view._lo
            view.scroll_home(animate=False, immediate=True)
            on_screen = view.content_region.y + first.virtual_region.y
            await wait_for(pilot, lambda lo=lo: view._lo < lo, "older messages mounted")
            await pilot.pause()
            # What was at the top of the screen is still there: prepending kept it in place.
            assert first.is_attached
            assert first.region.y == on_screen
            assert len(_message_views(app)) <= WINDOW_MAX
        assert view._lo == 0
        assert _user_texts(app)[0] == "Task 0"
        assert len(_message_views(app)) <= WINDOW_MAX
        # Back at the bottom, the newest messages mount again.
        while view._hi < len(view._entries):
            view.scroll_end(animate=False, immediate=True)
            hi = view._hi
            await wait_for(pilot, lambda hi=hi: view._hi > hi, "newer messages mounted")
            await pilot.pause()
        await pilot.pause()
        assert _user_texts(app)[-1] == "Task 147"
        assert len(_message_views(app)) <= WINDOW_MAX
    await app.db.close()


async def test_a_reopened_long_session_follows_what_streams_next() -> None:
    """Mounting the margin above after the first paint keeps the view at the bottom and
    anchored: the next reply is on screen, not below it."""
    app, session = await _long_session_app()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(app, pilot)
        view = app.chat.view
        assert view.following
        publish = app.engine.ctx.publish
        user, part = _user(session.id, "Task next")
        publish(MessageUpdated(info=user))
        publish(PartUpdated(part=part))
        info, parts = _step(session.id, user.id, 150)
        publish(MessageUpdated(info=info))
        for part in parts:
            publish(PartUpdated(part=part))
        await wait_for(pilot, lambda: last_reply(view).startswith("Reply 150"))
        await pilot.pause()
        await pilot.pause()
        assert view.following
        assert view.scroll_y == view.max_scroll_y
    await app.db.close()


async def test_a_long_reply_streaming_leaves_the_messages_above_it_unmounted() -> None:
    """While the view follows a reply many screens long, the messages it pushed far
    above the screen are unmounted (each frame lays out every mounted widget); they
    come back when scrolled to."""
    app, session = await _long_session_app()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(app, pilot)
        view = app.chat.view
        lo, hi = view._lo, view._hi
        publish = app.engine.ctx.publish
        user, part = _user(session.id, "Write a long one")
        publish(MessageUpdated(info=user))
        publish(PartUpdated(part=part))
        info, _ = _step(session.id, user.id, 150)
        publish(MessageUpdated(info=info))
        text = TextPart(id=part_id(), session_id=session.id, message_id=info.id)
        for n in range(12):  # a reply growing to ten screens
            text = text.model_copy(update={"text": text.text + f"Paragraph {n}.\n\n" * 12})
            publish(PartUpdated(part=text, delta="…"))
            await pilot.pause()
        await wait_for(pilot, lambda: view._lo >= hi, "the messages above unmounted")
        assert view.following
        assert len(_message_views(app)) <= 3  # the new turn (and what is just above it)
        while view._lo > lo:
            first = view._lo
            view.scroll_home(animate=False, immediate=True)
            await wait_for(pilot, lambda first=first: view._lo < first, "mounted again")
            await pilot.pause()
        assert not view.following
    await app.db.close()


async def test_a_growing_live_session_keeps_a_bounded_number_of_widgets() -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        session = await app.engine.new_session(project_dir())
        await app.chat.show_session(session)
        publish = app.engine.ctx.publish
        counts: list[int] = []
        parent = ""
        for n in range(120):
            if n % STEPS_PER_TURN == 0:
                publish(SessionStatus(session_id=session.id, status="busy"))
                user, part = _user(session.id, f"Task {n}")
                parent = user.id
                publish(MessageUpdated(info=user))
                publish(PartUpdated(part=part))
            info, parts = _step(session.id, parent, n)
            publish(MessageUpdated(info=info))
            for part in parts:
                publish(PartUpdated(part=part))
            if n % STEPS_PER_TURN == STEPS_PER_TURN - 1:
                publish(SessionStatus(session_id=session.id, status="idle"))
            await pilot.pause()
            counts.append(len(app.chat.view.children))
        await wait_for(pilot, lambda: last_reply(app.chat.view).startswith("Reply 119"))
        assert len(app.chat.view._entries) == 160
        assert max(counts) <= WINDOW_MAX
        assert "Task 0" not in _user_texts(app)
        # The unmounted messages kept their data: scrolling up shows them again.
        while app.chat.view._lo > 0:
            lo = app.chat.view._lo
            app.chat.view.scroll_home(animate=False, immediate=True)
            await wait_for(pilot, lambda lo=lo: app.chat.view._lo < lo, "older messages")
            await pilot.pause()  # the scroll position is restored after the next refresh
        assert _user_texts(app)[0] == "Task 0"
        first_step = next(w for w in app.chat.view.children if isinstance(w, AssistantMessageView))
        assert (
            "".join(w._text for w in first_step._parts.values() if isinstance(w, TextPartView))
            == "Reply 0.\n\nSecond line of reply 0."
        )
        assert len(app.chat.view.children) <= WINDOW_MAX
    await app.db.close()


async def test_the_event_pump_posts_at_most_one_batch_per_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]  # the pump's clock, moved by the test: however slow the burst below
    monkeypatch.setattr(event_pump, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    target = PumpTarget()
    pump = EventPump(target, frame=0.05)  # type: ignore[arg-type]
    part = TextPart(id=part_id(), session_id="ses", message_id="msg")
    for _ in range(500):  # a burst: one batch, the part's updates collapsed into one
        part = part.model_copy(update={"text": part.text + "x"})
        pump.publish(PartUpdated(part=part, delta="x"))
    assert len(target.posted) == 1
    (event,) = pump.take()
    assert isinstance(event, PartUpdated) and len(event.part.text) == 500
    target.arrived.clear()
    pump.publish(PartUpdated(part=part, delta="y"))
    assert len(target.posted) == 1  # within the frame of the previous batch: waits
    clock[0] += 0.05  # that frame is over
    await asyncio.wait_for(target.arrived.wait(), timeout=5)
    assert len(target.posted) == 2


async def test_page_up_and_down_scroll_the_conversation_from_the_input() -> None:
    app, _ = await _long_session_app()
    async with app.run_test(size=SIZE) as pilot:
        # Keys are pressed once the margin above is mounted (a key pressed while that
        # mount is in flight can still be moved back by it: see issue 12's closing note).
        await _opened(app, pilot)
        view = app.chat.view
        assert app.prompt.has_focus
        page = view.scrollable_content_region.height

        def from_bottom() -> float:
            # Older messages mounted above move scroll_y, not the distance from the end.
            return view.max_scroll_y - view.scroll_y

        assert from_bottom() == 0
        for n in range(1, 5):
            await pilot.press("pageup")
            await pilot.pause()
            await pilot.pause()
            assert from_bottom() == pytest.approx(n * page, abs=1), f"after {n} PageUp"
            assert not view.following
        assert app.prompt.has_focus  # the keys scrolled the view, the input kept focus
        for n in range(3, -1, -1):
            await pilot.press("pagedown")
            await pilot.pause()
            await pilot.pause()
            assert from_bottom() == pytest.approx(n * page, abs=1), f"back to {n} pages"
        assert view.following  # at the bottom again: new output is followed
    await app.db.close()

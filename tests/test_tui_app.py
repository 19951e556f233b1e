"""The Textual app end to end: Pilot against the fake OpenAI server, real SQLite."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from agent_tui.records import TextPart
from agent_tui.tui.app import AgentApp
from agent_tui.tui.choice_screen import RowsScreen
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.permission_screen import PermissionScreen
from agent_tui.tui.tool_line import ToolLine
from agent_tui.tui.user_message_view import HELD_NOTE, QUEUED_NOTE, UserMessageView
from tests.conftest import write_config
from tests.fake_openai import Call, FakeOpenAI, Gated, Hang, Text, ToolCalls, Usage
from tests.tui_helpers import open_app, sidebar_context, type_and_send, view_text, wait_for

SIZE = (100, 30)


async def test_typed_message_streams_and_sidebar_percent_changes(configured: FakeOpenAI) -> None:
    reply = "Here is **bold** text and code:\n\n```python\nprint('hi')\n```\n"
    configured.script(Text(reply, usage=Usage(prompt_tokens=20_000, completion_tokens=5_000)))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert "0 / 100,000" not in sidebar_context(app)
        await type_and_send(pilot, "hello there")
        await wait_for(pilot, lambda: "25.0%" in sidebar_context(app), "percent")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        assert view_text(app) == reply
        assert app.prompt.text == ""
        assert app.chat.session is not None and app.chat.session.title == "hello there"
    await app.db.close()
    assert configured.requests[-1]["messages"][-1]["content"] == "hello there"


def _last_user_text(request: dict) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def _dividers(app: AgentApp) -> list[CompactionDivider]:
    return list(app.query(CompactionDivider))


@pytest.mark.parametrize("how", ["slash", "leader"])
async def test_compact_by_command_and_leader_key(configured: FakeOpenAI, how: str) -> None:
    configured.script(
        Text("First answer.", usage=Usage(prompt_tokens=30_000, completion_tokens=2_000)),
        Text("SUMMARY: we said hello."),
    )
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "hello")
        await wait_for(pilot, lambda: "32.0%" in sidebar_context(app), "first percent")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        if how == "slash":
            await type_and_send(pilot, "/compact keep the greeting")
        else:
            await pilot.press("ctrl+x", "c")
        await wait_for(pilot, lambda: len(configured.requests) == 2, "summary request")
        await wait_for(
            pilot, lambda: _dividers(app) and _dividers(app)[0].state == "done", "divider"
        )
        await wait_for(pilot, lambda: "32.0%" not in sidebar_context(app), "percent drop")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        divider = _dividers(app)[0]
        assert "manual" in str(divider.query_one(".label", Static).render())
        usage = app.chat.stats.usage()
        assert usage.percent is not None and usage.percent < 32.0
        assert "1 compaction" in str(app.query_one("#sidebar-compactions", Static).render())
        # The older messages stay, dimmed.
        assert app.query(UserMessageView).first().has_class("-compacted")
    await app.db.close()
    summary_request = configured.requests[1]
    assert "Summarise the conversation" in _last_user_text(summary_request)
    assert ("keep the greeting" in _last_user_text(summary_request)) == (how == "slash")
    # The conversation's own tools and system prompt: a prompt cache serves the prefix.
    assert summary_request["tools"] == configured.requests[0]["tools"]
    assert summary_request["messages"][0] == configured.requests[0]["messages"][0]


async def test_escape_interrupts_slow_stream_and_keeps_partial_text(
    configured: FakeOpenAI,
) -> None:
    configured.script(Hang(text="partial", delay=30))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "go slowly")
        await wait_for(pilot, lambda: view_text(app) == "partial", "partial text")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.chat.status == "idle", "idle after abort")
        assert view_text(app) == "partial"
        assert "Interrupted" in str(app.query_one(".error", Static).render())
        assert app.chat.session is not None
        messages = await app.db.all_messages(app.chat.session.id)
    await app.db.close()
    texts = [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]
    assert texts == ["go slowly", "partial"]
    assert messages[-1].info.error is not None


async def test_queued_message_reaches_model_as_reminder(configured: FakeOpenAI) -> None:
    gate = threading.Event()  # the first reply streams until the message is queued
    configured.script(Gated(Text(" and the rest."), gate, text="slow answer"), Text("Noted."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "first task")
        await wait_for(pilot, lambda: view_text(app).startswith("slow"), "streaming")
        await type_and_send(pilot, "also check the docs")
        await wait_for(
            pilot, lambda: any(v.queued for v in app.query(UserMessageView)), "queued mark"
        )
        gate.set()
        await wait_for(pilot, lambda: len(configured.requests) == 2, "second request")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "Noted.")
        assert not any(v.queued for v in app.query(UserMessageView))
        configured.script(Text("third done"))
        await type_and_send(pilot, "third task")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "third done")
    await app.db.close()
    second = json.dumps(configured.requests[1]["messages"])
    assert "<system-reminder>" in second and "also check the docs" in second
    # In the next turn the queued message is sent exactly as before (a stable prefix).
    sent = configured.requests[1]["messages"]
    assert configured.requests[2]["messages"][: len(sent)] == sent


async def test_a_message_queued_when_the_turn_is_interrupted_says_it_waits(
    configured: FakeOpenAI,
) -> None:
    """Esc ends the turn before any step read the queued message: its note says so (not
    "the agent will read it"), and it goes with the next message the person sends."""
    configured.script(Hang("working on it", delay=60), Text("both read"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "first task")
        await wait_for(pilot, lambda: view_text(app) == "working on it", "streaming")
        await type_and_send(pilot, "also check the docs")
        await wait_for(
            pilot, lambda: any(v.queued for v in app.query(UserMessageView)), "queued mark"
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.chat.status == "idle", "idle after Esc")
        (held,) = [v for v in app.query(UserMessageView) if v.queued]
        await wait_for(pilot, lambda: held.held, "the held note")
        assert HELD_NOTE in str(held.render()) and QUEUED_NOTE not in str(held.render())
        await type_and_send(pilot, "go on")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "both read")
        assert not any(v.queued or v.held for v in app.query(UserMessageView))
    await app.db.close()
    sent = json.dumps(configured.requests[-1]["messages"])
    assert "also check the docs" in sent and "go on" in sent


@pytest.mark.parametrize("answer", ["once", "always", "deny"])
async def test_permission_dialog_choices(isolated: Path, fake_llm: FakeOpenAI, answer: str) -> None:
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    fake_llm.script(
        ToolCalls([Call("bash", json.dumps({"command": "echo ran-first"}))]),
        Text("first done"),
        # "always" remembers the command (`echo ran-first` with any arguments after it)
        ToolCalls([Call("bash", json.dumps({"command": "echo ran-first ran-second"}))]),
        Text("second done"),
    )
    key = {"once": "a", "always": "A", "deny": "d"}[answer]
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "run it")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen), "dialog")
        assert "echo ran-first" in str(app.screen.query_one("#title", Static).render())
        await pilot.press(key)
        await wait_for(pilot, lambda: app.chat.status == "idle" and "first done" in view_text(app))
        await type_and_send(pilot, "again")
        if answer == "always":
            await wait_for(pilot, lambda: "second done" in view_text(app), "no second dialog")
            assert not isinstance(app.screen, PermissionScreen)
        else:
            await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen), "dialog 2")
            await pilot.press("a")
            await wait_for(pilot, lambda: "second done" in view_text(app))
        await wait_for(pilot, lambda: app.chat.status == "idle")
        lines = [str(t.title) for t in app.query(ToolLine)]
    await app.db.close()
    first_result = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool")
    if answer == "deny":
        assert "denied" in first_result["content"].lower()
        assert "ran-first" not in first_result["content"].replace("echo ran-first", "")
        assert "error" in lines[0]
    else:
        assert "ran-first" in first_result["content"]
        assert lines[0].startswith("✓ bash echo ran-first")


async def test_switching_sessions_shows_the_right_history(configured: FakeOpenAI) -> None:
    configured.script(Text("answer one"), Text("answer two"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "question one")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "answer one")
        first = app.chat.session
        await type_and_send(pilot, "/new")
        await wait_for(pilot, lambda: app.chat.session is None and not app.query(UserMessageView))
        await type_and_send(pilot, "question two")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "answer two")
        await pilot.press("ctrl+x", "l")
        await wait_for(pilot, lambda: isinstance(app.screen, RowsScreen), "session list")
        options = app.screen.query_one(OptionList)
        assert options.option_count == 2
        index = next(
            i
            for i in range(2)
            if options.get_option_at_index(i).id == first.id  # type: ignore[union-attr]
        )
        options.highlighted = index
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.chat.session is not None and app.chat.session.id == first.id
        )
        await wait_for(pilot, lambda: view_text(app) == "answer one")
        users = [v.text for v in app.query(UserMessageView)]
        assert users == ["question one"]
    await app.db.close()


async def test_escape_cancels_compaction_without_losing_anything(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("first answer"), Hang(text="half a sum", delay=30), Text("later"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "first question")
        await wait_for(
            pilot, lambda: app.chat.status == "idle" and view_text(app) == "first answer"
        )
        await type_and_send(pilot, "/compact")
        await wait_for(pilot, lambda: app.chat.status == "compacting", "compacting status")
        assert "Compacting" in str(app.status_line.render())
        await wait_for(pilot, lambda: len(configured.requests) == 2, "summary request")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.chat.status == "idle", "idle after cancel")
        assert app.chat.session is not None
        session = await app.db.get_session(app.chat.session.id)
        assert session.compaction_id is None  # the boundary did not move
        await type_and_send(pilot, "go on")
        await wait_for(pilot, lambda: len(configured.requests) == 3, "next request")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        messages = await app.db.all_messages(app.chat.session.id)
    await app.db.close()
    sent = json.dumps(configured.requests[2]["messages"])
    assert "first question" in sent and "first answer" in sent  # nothing lost
    assert "half a sum" not in sent  # the cancelled summary is not history
    texts = [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]
    assert "half a sum" in texts  # ...but it is kept in the database

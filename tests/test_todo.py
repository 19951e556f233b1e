"""todowrite / todoread: the session's list in SQLite, in the sidebar, through compaction."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from agent_tui.events import Event, TodosUpdated
from agent_tui.step.after_summary import TODOS_HEADER, TODOS_RESTATED
from agent_tui.tool.todo import render_todos
from agent_tui.tui.app import AgentApp
from agent_tui.tui.sidebar import Sidebar
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    text_of,
    tool_results,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.tui_helpers import close, open_app, type_and_send, wait_for

PLAN = {
    "todos": [
        {"content": "Write the parser", "status": "completed", "priority": "high"},
        {"content": "Wire the tool", "status": "in_progress"},
        {"content": "Update the README", "priority": "low"},
    ]
}
RENDERED = (
    "[x] Write the parser (high, id 1)\n"
    "[~] Wire the tool (medium, id 2)\n"
    "[ ] Update the README (low, id 3)"
)


async def test_todowrite_stores_and_announces_the_list_and_todoread_returns_it(
    configured: FakeOpenAI,
) -> None:
    configured.script(
        ToolCalls([Call("todowrite", json.dumps(PLAN))]),
        ToolCalls([Call("todoread", "{}")]),
        Text("planned"),
    )
    async with open_engine() as engine:
        events: list[Event] = []
        engine.ctx.bus.subscribe(events.append)
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "plan the work")
        assert tool_results(configured.requests[1]) == [RENDERED]
        assert tool_results(configured.requests[2]) == [RENDERED, RENDERED]
        stored = await engine.ctx.db.get_todos(session.id)
        assert render_todos(stored) == RENDERED
        updates = [e for e in events if isinstance(e, TodosUpdated)]
        assert len(updates) == 1 and updates[0].todos == stored
        other = await engine.new_session(Path.cwd())
        assert await engine.ctx.db.get_todos(other.id) == []


async def test_bad_lists_are_refused_and_nothing_is_written(configured: FakeOpenAI) -> None:
    repeated = {"todos": [{"content": "a", "id": "x"}, {"content": "b", "id": "x"}]}
    configured.script(
        ToolCalls([Call("todowrite", json.dumps(repeated))]),
        ToolCalls([Call("todowrite", json.dumps({"todos": [{"content": "a", "status": "??"}]}))]),
        Text("gave up"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "plan")
        first, second = tool_results(configured.requests[2])
        assert "ids must be unique" in first
        assert "Invalid arguments for tool todowrite" in second and "status" in second
        assert await engine.ctx.db.get_todos(session.id) == []


async def test_the_list_survives_compaction(configured: FakeOpenAI) -> None:
    configured.script(
        ToolCalls([Call("todowrite", json.dumps(PLAN))]),
        Text("working on it"),
        Text("THE-SUMMARY"),
        Text("next"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "plan the work")
        await engine.compact(session.id)
        summary_request = configured.requests[2]
        assert is_summary_request(summary_request)
        instruction = text_of(summary_request["messages"][-1])
        assert f"{TODOS_HEADER}\n{RENDERED}" in instruction
        await engine.prompt(session.id, "carry on")
        after = conversation(configured.requests[3])
        texts = [text_of(m) for m in after]
        assert texts[1] == "THE-SUMMARY"
        assert f"{TODOS_RESTATED}\n{RENDERED}" in texts[2]
        assert "plan the work" in texts[2]  # the person's words are restated beside it
        # The list is the one the summary saw, byte for byte on every later step.
        configured.script(Text("again"))
        await engine.prompt(session.id, "once more")
        assert conversation(configured.requests[4])[2] == after[2]


async def test_the_sidebar_shows_the_list_live_and_on_reload(configured: FakeOpenAI) -> None:
    configured.script(ToolCalls([Call("todowrite", json.dumps(PLAN))]), Text("planned"))
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        sidebar = app.query_one(Sidebar)
        assert not sidebar.has_class("-has-todos")
        await type_and_send(pilot, "plan the work")
        await wait_for(pilot, lambda: sidebar.has_class("-has-todos"), "the todo list")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        assert todos_shown(app) == "● Write the parser\n◐ Wire the tool\n○ Update the README"
        session = app.chat.session
        await app.chat.show_session(None)
        assert not sidebar.has_class("-has-todos")
        await app.chat.show_session(session)
        assert sidebar.has_class("-has-todos") and "Wire the tool" in todos_shown(app)
    await close(app)


def todos_shown(app: AgentApp) -> str:
    return str(app.query_one("#sidebar-todos", Static).render())

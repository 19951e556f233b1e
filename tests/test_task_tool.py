"""The task tool: a subagent in a child session, run by the same loop (DESIGN.md)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_tui.records import AssistantMessage, ToolPart, ToolStateCompleted, ToolStateError
from tests.conftest import write_config
from tests.engine_helpers import conversation, open_engine, run_cli, text_of
from tests.fake_openai import Call, FakeOpenAI, Hang, Reply, Text, ToolCalls, Usage

READ_ONLY = {"read", "grep", "glob", "list", "recall"}


def task_call(description: str, prompt: str, **extra: Any) -> Call:
    return Call("task", json.dumps({"description": description, "prompt": prompt, **extra}))


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


def first_user_text(request: dict[str, Any]) -> str:
    return text_of(conversation(request)[0])


async def tool_parts(engine: Any, session_id: str) -> list[ToolPart]:
    messages = await engine.ctx.db.all_messages(session_id)
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart)]


async def test_task_runs_a_child_session_and_returns_its_answer(
    isolated: Path, configured: FakeOpenAI
) -> None:
    (isolated / "notes.txt").write_text("the secret word is pelican\n")
    configured.script(
        ToolCalls([task_call("Find the word", "Read notes.txt and tell me the word.")]),
        ToolCalls([Call("read", json.dumps({"file_path": "notes.txt"}))]),  # the child
        Text("The word is pelican."),  # the child's final answer
        Text("Your word is pelican."),  # the parent again
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        result = await engine.prompt(parent.id, "what is the word?")
        assert result is not None and result.outcome == "stop"
        (part,) = await tool_parts(engine, parent.id)
        children = await engine.ctx.db.descendants([parent.id])
        child_tools = await tool_parts(engine, children[0].id)
        roots = await engine.ctx.db.list_sessions(roots_only=True)

    assert isinstance(part.state, ToolStateCompleted)
    (child,) = children
    assert child.parent_id == parent.id and child.title == "Find the word"
    assert [r.id for r in roots] == [parent.id]
    assert part.state.output == (
        f"<task_result session={child.id}>\nThe word is pelican.\n</task_result>"
    )
    assert part.state.metadata["session_id"] == child.id
    parent_first, child_first, child_second, parent_second = configured.requests
    assert "task" in tool_names(parent_first)
    # The child has its own context: the task's prompt, not the parent's conversation.
    assert "Read notes.txt" in first_user_text(child_first)
    assert "what is the word" not in json.dumps(child_first["messages"])
    assert "pelican" in json.dumps(child_second["messages"])  # its read tool ran
    assert [p.tool for p in child_tools] == ["read"]
    assert "<task_result" in json.dumps(parent_second["messages"][-1])


async def test_child_tools_are_read_only_and_enforced(
    isolated: Path, configured: FakeOpenAI
) -> None:
    configured.script(
        ToolCalls([task_call("Try to write", "Change the files.")]),
        ToolCalls(
            [
                Call("bash", json.dumps({"command": "echo hi > made.txt"})),
                Call("task", json.dumps({"description": "again", "prompt": "recurse"})),
            ]
        ),
        Text("I could not."),
        Text("ok"),
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        await engine.prompt(parent.id, "go")
        (child,) = await engine.ctx.db.descendants([parent.id])
        refused = await tool_parts(engine, child.id)
    child_request = configured.requests[1]
    assert tool_names(child_request) >= READ_ONLY
    assert not tool_names(child_request) & {"edit", "write", "bash", "task"}
    assert [p.tool for p in refused] == ["bash", "task"]
    for part in refused:
        assert isinstance(part.state, ToolStateError)
        assert "Unknown tool" in part.state.error
    assert not (isolated / "made.txt").exists()


async def test_configured_agent_sets_tools_model_and_prompt(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated,
        fake_llm,
        agent={"lister": {"prompt": "ONLY LIST FOLDERS.", "tools": ["list", "task"]}},
    )
    fake_llm.script(
        ToolCalls([task_call("List", "What is here?", agent="lister")]),
        Text("Nothing."),
        ToolCalls([task_call("Unknown", "x", agent="nobody")]),
        Text("done"),
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        await engine.prompt(parent.id, "go")
        first, unknown = await tool_parts(engine, parent.id)
    child_request = fake_llm.requests[1]
    assert tool_names(child_request) == {"list"}  # never `task`, even when configured
    assert "ONLY LIST FOLDERS." in first_user_text(child_request)
    assert isinstance(first.state, ToolStateCompleted)
    assert isinstance(unknown.state, ToolStateError)
    assert "No subagent named 'nobody'" in unknown.state.error


async def test_two_task_calls_in_one_step_run_concurrently(
    isolated: Path, configured: FakeOpenAI
) -> None:
    both_asked = threading.Barrier(2, timeout=10)

    def respond(body: dict[str, Any]) -> Reply:
        first = first_user_text(body)
        for name in ("ALPHA", "BETA"):
            if name in first:
                # Answered only once both children have asked: sequential runs would
                # break the barrier (a timeout) instead of passing it.
                both_asked.wait()
                return Text(f"answer {name}")
        return Text("both done")

    configured.responder = respond
    configured.script(
        ToolCalls([task_call("First", "Look for ALPHA."), task_call("Second", "Look for BETA.")])
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        result = await engine.prompt(parent.id, "search both")
        assert result is not None and result.outcome == "stop"
        first, second = await tool_parts(engine, parent.id)
    assert not both_asked.broken
    assert isinstance(first.state, ToolStateCompleted)
    assert isinstance(second.state, ToolStateCompleted)
    assert "answer ALPHA" in first.state.output  # results stay with their own call
    assert "answer BETA" in second.state.output
    assert first.id < second.id
    tool_results = [m for m in configured.requests[-1]["messages"] if m["role"] == "tool"]
    assert ["answer ALPHA" in text_of(m) for m in tool_results] == [True, False]


@pytest.mark.parametrize("where", ["parent", "child"])
async def test_abort_stops_the_child(isolated: Path, configured: FakeOpenAI, where: str) -> None:
    configured.script(
        ToolCalls([task_call("Slow", "Take your time.")]),
        Hang("thinking", delay=60),
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        run = asyncio.create_task(engine.prompt(parent.id, "go"))
        await asyncio.to_thread(configured.wait_for_requests, 2)
        (running,) = engine.subagents.running
        assert engine.is_busy(running)  # a message typed in the child's view is queued
        assert engine.abort(parent.id if where == "parent" else running)  # Esc in either view
        result = await asyncio.wait_for(run, 10)
        (part,) = await tool_parts(engine, parent.id)
        (child,) = await engine.ctx.db.descendants([parent.id])
        child_messages = await engine.ctx.db.all_messages(child.id)
    await asyncio.to_thread(configured.wait_idle)
    assert result is not None and result.outcome == "aborted"
    assert isinstance(part.state, ToolStateError)
    assert "interrupted" in part.state.error and child.id in part.state.error
    child_step = child_messages[-1].info
    assert isinstance(child_step, AssistantMessage)
    assert child_step.error is not None and child_step.error.kind == "aborted"
    assert len(configured.requests) == 2  # nothing more was asked


async def _costly_task(isolated: Path, fake_llm: FakeOpenAI) -> tuple[str, str]:
    """A priced parent step that runs a task, one priced child step, a priced answer."""
    write_config(isolated, fake_llm, model="openai/gpt-4o-mini", models={})
    million = Usage(prompt_tokens=1_000_000, completion_tokens=0)
    fake_llm.script(
        ToolCalls([task_call("Costly", "Spend.")], usage=million),
        Text("spent", usage=million),
        Text("done", usage=million),
    )
    async with open_engine() as engine:
        parent = await engine.new_session(isolated)
        await engine.prompt(parent.id, "go")
        (child,) = await engine.ctx.db.descendants([parent.id])
    return parent.id, child.id


async def test_parent_cost_includes_the_child(isolated: Path, fake_llm: FakeOpenAI) -> None:
    parent, child = await _costly_task(isolated, fake_llm)
    async with open_engine() as engine:
        summaries = await engine.ctx.db.session_summaries([parent, child])
        (part,) = await tool_parts(engine, parent)
    # gpt-4o-mini: $0.15 per million input tokens; three steps, one in the child.
    assert summaries[child].cost == pytest.approx(0.15)
    assert summaries[parent].cost == pytest.approx(0.45, rel=1e-3)
    assert summaries[parent].subtasks_cost == summaries[child].cost
    assert isinstance(part.state, ToolStateCompleted)
    assert part.state.metadata["cost"] == summaries[child].cost  # the sidebar adds it
    # Context % of the parent is its own last step's, not the child's.
    last = summaries[parent].last_assistant
    assert last is not None and last.session_id == parent


def test_sessions_lists_children_under_their_parent(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    parent, child = asyncio.run(_costly_task(isolated, fake_llm))
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["id"], r["parent_id"], r["depth"]) for r in rows] == [
        (parent, None, 0),
        (child, parent, 1),
    ]
    assert rows[0]["context"]["cost"] == pytest.approx(0.45, rel=1e-3)
    code, out, _ = run_cli(capsys, "sessions")
    lines = out.splitlines()
    assert lines[0].startswith(parent) and lines[1].startswith(f"  {child}")


def test_sessions_screen_indents_children() -> None:
    from agent_tui.command.core import Row
    from agent_tui.records import Session
    from agent_tui.storage.sessions import session_tree
    from agent_tui.tui.choice_screen import row_text

    parent = Session(id="ses_1", directory="/p", title="parent")
    other = Session(id="ses_2", directory="/p", title="other")
    child = Session(id="ses_3", directory="/p", title="child", parent_id="ses_1")
    tree = session_tree([parent, other, child])
    assert [(s.id, depth) for s, depth in tree] == [("ses_1", 0), ("ses_3", 1), ("ses_2", 0)]
    text = row_text(Row(child.id, child.title, "/p", depth=1)).plain
    assert text.startswith("    ") and "child" in text


async def test_tool_line_opens_the_child_session(configured: FakeOpenAI) -> None:
    from textual.widgets._collapsible import CollapsibleTitle

    from agent_tui.tui.message_actions_screen import MessageActionsScreen
    from agent_tui.tui.tool_line import ToolLine
    from tests.tui_helpers import open_app, type_and_send, wait_for

    configured.script(
        ToolCalls([task_call("Look around", "List the files.")]),
        Text("Nothing here."),
        Text("It found nothing."),
    )
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "delegate it")
        await wait_for(pilot, lambda: len(configured.requests) == 3 and app.chat.status == "idle")
        (line,) = app.query(ToolLine)
        assert isinstance(line.part.state, ToolStateCompleted)
        child = line.part.state.metadata["session_id"]
        assert child in str(line.title)
        parent = app.chat.session
        line.query_one(CollapsibleTitle).focus()
        await pilot.press("ctrl+o")  # its actions: expand, pin, open the subagent's session
        await wait_for(pilot, lambda: isinstance(app.screen, MessageActionsScreen), "the menu")
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.chat.session is not None and app.chat.session.id == child)
        assert app.chat.session is not None and app.chat.session.parent_id == parent.id
    await app.db.close()

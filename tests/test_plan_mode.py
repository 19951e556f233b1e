"""Plan mode end to end: the plan agent reads but changes nothing, proposes a plan with
plan_exit, and approval hands the plan to the build agent (fake server, real files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.engine_context import EngineContext
from agent_tui.events import AgentSwitched, PlanProposed
from agent_tui.records import ToolPart, ToolStateCompleted, ToolStateError
from agent_tui.session.engine import Engine
from agent_tui.step.plan import approval_text
from agent_tui.storage.db import Database
from agent_tui.tool.base import PermissionRequest
from tests.conftest import write_config
from tests.engine_helpers import conversation, open_engine, run_cli, text_of
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

PLAN = "## Plan\n\n1. Add `greet()` to app.py.\n2. Test it in tests/test_app.py."


def call(name: str, **arguments: Any) -> Call:
    return Call(name, json.dumps(arguments))


def system_header(request: dict[str, Any]) -> str:
    """The agent's own block: the one system message starts with it, then the <env>."""
    return text_of(request["messages"][0]).split("\n\n<env>")[0]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


async def tool_parts(engine: Engine, session_id: str) -> dict[str, ToolPart]:
    messages = await engine.ctx.db.all_messages(session_id)
    return {p.call_id: p for m in messages for p in m.parts if isinstance(p, ToolPart)}


async def test_plan_mode_refuses_changes_and_runs_reads(
    isolated: Path, configured: FakeOpenAI
) -> None:
    """Config allows edit, write and bash: plan mode refuses them all the same."""
    (isolated / "app.py").write_text("print('hello')\n")
    configured.script(
        ToolCalls(
            [
                Call("write", json.dumps({"file_path": "new.py", "content": "x"}), id="w"),
                Call(
                    "edit",
                    json.dumps({"file_path": "app.py", "old_string": "hello", "new_string": "bye"}),
                    id="e",
                ),
                Call("bash", json.dumps({"command": "rm app.py"}), id="rm"),
                Call("bash", json.dumps({"command": "ls -la > listing.txt"}), id="redirect"),
                Call("bash", json.dumps({"command": "ls && touch x"}), id="chain"),
                Call("bash", json.dumps({"command": "ls"}), id="ls"),
                Call("bash", json.dumps({"command": "cat app.py | grep hello"}), id="pipe"),
                Call("read", json.dumps({"file_path": "app.py"}), id="read"),
                Call("grep", json.dumps({"pattern": "hello"}), id="grep"),
            ]
        ),
        Text("I looked around."),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "look at app.py", agent="plan")
        parts = await tool_parts(engine, session.id)
        messages = await engine.ctx.db.all_messages(session.id)

    assert result is not None and result.outcome == "stop"
    assert (isolated / "app.py").read_text() == "print('hello')\n"
    assert not (isolated / "new.py").exists()
    assert not (isolated / "listing.txt").exists() and not (isolated / "x").exists()
    for refused in ("w", "e", "rm", "redirect", "chain"):
        state = parts[refused].state
        assert isinstance(state, ToolStateError), refused
        assert state.error.startswith("Plan mode is on"), state.error
        assert "plan_exit" in state.error  # an engine no view named its switch for:
        assert state.error.endswith("leaves plan mode by choosing another agent.")
    assert "rm app.py" in parts["rm"].state.error  # type: ignore[union-attr]
    for allowed in ("ls", "pipe", "read", "grep"):
        assert isinstance(parts[allowed].state, ToolStateCompleted), allowed
    assert "app.py" in parts["ls"].state.output  # type: ignore[union-attr]
    assert messages[0].info.agent == "plan"

    first = configured.requests[0]
    assert "# Plan mode" in system_header(first)
    assert system_header(first).startswith(paths.read_prompt("default.txt").strip())
    assert "plan_exit" in tool_names(first)
    assert {"write", "edit", "bash", "read"} <= tool_names(first)
    # The prefix stays byte for byte within the agent (prompt caching).
    second = configured.requests[1]
    assert second["messages"][:2] == first["messages"][:2]
    assert second["tools"] == first["tools"]


async def test_plan_exit_then_approval_switches_to_build(
    isolated: Path, configured: FakeOpenAI
) -> None:
    configured.script(
        ToolCalls([call("read", file_path="app.py"), call("plan_exit", plan=PLAN)]),
        Text("Building it now."),
    )
    (isolated / "app.py").write_text("print('hello')\n")
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        planned = await engine.prompt(session.id, "plan a greet function", agent="plan")
        assert len(configured.requests) == 1  # the turn ends at plan_exit
        built = await engine.prompt(session.id, approval_text(planned.plan or ""), agent="build")
        messages = await engine.ctx.db.all_messages(session.id)

    assert planned is not None and planned.plan == PLAN and planned.outcome == "stop"
    assert built is not None and built.outcome == "stop"
    plan_request, build_request = configured.requests
    assert "# Plan mode" in system_header(plan_request)
    assert system_header(build_request) == paths.read_prompt("default.txt").strip()
    assert "plan_exit" not in tool_names(build_request)
    last = conversation(build_request)[-1]
    assert last["role"] == "user" and PLAN in text_of(last) and "approve" in text_of(last)
    assert [m.info.agent for m in messages if m.info.role == "user"] == ["plan", "build"]


async def test_a_proposed_plan_is_an_event_answered_by_one_engine_call(
    isolated: Path, configured: FakeOpenAI
) -> None:
    """What the app and ACP both do: PlanProposed when the plan agent's turn ends, then
    `answer_plan` — keep sends nothing, reject tells the plan agent, approve hands it to
    the build agent — each announcing the agent the session goes on with."""
    configured.script(
        ToolCalls([call("plan_exit", plan=PLAN)]),
        ToolCalls([call("plan_exit", plan=PLAN + "\n3. Document it.")]),
        Text("Building it now."),
    )
    async with open_engine() as engine:
        seen: list[Any] = []
        engine.ctx.bus.subscribe(
            lambda e: seen.append(e) if isinstance(e, (PlanProposed, AgentSwitched)) else None
        )
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "plan a greet function", agent="plan")
        assert seen == [PlanProposed(session_id=session.id, plan=PLAN)]
        assert await engine.answer_plan(session.id, PLAN, "keep") is None
        assert len(configured.requests) == 1  # keep: nothing sent
        rejected = await engine.answer_plan(session.id, PLAN, "reject", "document it too")
        assert rejected is not None and rejected.plan == PLAN + "\n3. Document it."
        approved = await engine.answer_plan(session.id, rejected.plan, "approve")
        messages = await engine.ctx.db.all_messages(session.id)
    assert approved is not None and approved.outcome == "stop" and approved.plan is None
    switched = [e.agent for e in seen if isinstance(e, AgentSwitched)]
    assert switched == ["plan", "plan", "build"]
    users = [m for m in messages if m.info.role == "user"]
    assert [m.info.agent for m in users] == ["plan", "plan", "build"]
    assert "document it too" in text_of(conversation(configured.requests[1])[-1])
    assert "Document it." in text_of(conversation(configured.requests[2])[-1])


def test_run_agent_plan_prints_the_plan(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(ToolCalls([call("plan_exit", plan=PLAN)], text="Here is my plan."))
    code, out, err = run_cli(capsys, "run", "--agent", "plan", "plan a greet function")
    assert code == 0, err
    assert PLAN in out
    assert len(configured.requests) == 1
    assert "# Plan mode" in system_header(configured.requests[0])


def test_run_with_an_unknown_agent_is_a_usage_error(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "run", "--agent", "nope", "hi")
    assert code != 0
    assert "nope" in err and "build" in err and "plan" in err
    assert configured.requests == []


async def test_the_plan_survives_compaction(isolated: Path, configured: FakeOpenAI) -> None:
    configured.script(
        ToolCalls([call("plan_exit", plan=PLAN)]),
        Text("Summary: we planned a greet function."),
        Text("Carrying on."),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "plan a greet function", agent="plan")
        await engine.compact(session.id)
        await engine.prompt(session.id, "go on", agent="plan")

    _, summary_request, after = configured.requests
    assert PLAN in text_of(summary_request["messages"][-1])
    restated = "\n".join(text_of(m) for m in conversation(after))
    assert PLAN in restated and "newest plan proposed with plan_exit" in restated


async def test_auto_accept_edits_writes_without_asking_and_bash_still_asks(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, permission={"bash": "ask", "edit": "ask", "write": "ask"})
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "deny"

    fake_llm.script(
        ToolCalls(
            [
                call("write", file_path="notes.txt", content="auto\n"),
                call("bash", command="touch made-by-bash"),
            ]
        ),
        Text("Done."),
        ToolCalls([call("write", file_path="second.txt", content="x")]),
        Text("Asked."),
    )
    db = await Database.open(paths.database_path())
    engine = Engine(EngineContext(db=db, config=load_config(), ask=ask))  # type: ignore[arg-type]
    try:
        session = await engine.new_session(isolated)
        assert engine.ctx.permission_modes.get(session.id, "ask") == "ask"
        engine.live(session.id).permission_mode = "auto-edits"
        await engine.prompt(session.id, "write notes")
        assert (isolated / "notes.txt").read_text() == "auto\n"
        assert [r.tool for r in asked] == ["bash"]
        assert not (isolated / "made-by-bash").exists()

        engine.live(session.id).permission_mode = "ask"  # back: writes ask again
        await engine.prompt(session.id, "write another")
        assert [r.tool for r in asked] == ["bash", "write"]
        assert not (isolated / "second.txt").exists()
    finally:
        await engine.close()
        await db.close()


async def test_plan_mode_holds_inside_its_subagents(isolated: Path, fake_llm: FakeOpenAI) -> None:
    """A subagent that may write is still read-only when the plan agent calls it."""
    write_config(
        isolated,
        fake_llm,
        agent={"writer": {"mode": "subagent", "tools": {"write": True, "read": True}}},
    )
    fake_llm.script(
        ToolCalls([call("task", description="Write it", prompt="write x.txt", agent="writer")]),
        ToolCalls([call("write", file_path="x.txt", content="x")]),  # the child
        Text("I could not write."),  # the child's answer
        Text("The subagent could not write."),  # the plan agent again
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "make x.txt", agent="plan")
        (child,) = await engine.ctx.db.descendants([session.id])
        parts = await tool_parts(engine, child.id)

    assert not (isolated / "x.txt").exists()
    (write,) = parts.values()
    assert isinstance(write.state, ToolStateError)
    assert write.state.error.startswith("Plan mode is on")

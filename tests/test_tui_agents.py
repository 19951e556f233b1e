"""The app's agents: Tab cycles them (border and sidebar follow), Shift+Tab the permission
mode (status line), and the plan approval screen (approve / keep planning / reject)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_tui.step.plan import APPROVED, REJECTED
from agent_tui.tui.plan_screen import PlanScreen
from tests.engine_helpers import conversation, text_of
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.tui_helpers import close, open_app, type_and_send, wait_for

SIZE = (100, 30)
PLAN = "1. Add greet() to app.py\n2. Test it"


def sidebar_agent(app: object) -> str:
    return str(app.query_one("#sidebar-agent", Static).render())  # type: ignore[attr-defined]


def plan_source(screen: object) -> str:
    """The plan screen's markdown as far as it has rendered ("" before it mounts)."""
    found = screen.query("#plan")  # type: ignore[attr-defined]
    return str(found.first().source) if found else ""


def plan_exit() -> ToolCalls:
    return ToolCalls([Call("plan_exit", json.dumps({"plan": PLAN}))])


async def test_tab_cycles_agents_and_shift_tab_the_permission_mode(
    isolated: Path, configured: FakeOpenAI
) -> None:
    agents = isolated / ".agent-tui" / "agents"
    agents.mkdir(parents=True)
    (agents / "docs.md").write_text("---\nmode: primary\ndescription: Writes docs\n---\nDocs.")
    configured.script(Text("Planning."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert app.chat.agent_name == "build" and "build" in str(app.prompt.border_title)
        assert sidebar_agent(app).startswith("build")
        await pilot.press("tab")
        assert app.chat.agent_name == "plan" and app.prompt.has_class("-plan")
        assert "plan" in str(app.prompt.border_title) and sidebar_agent(app).startswith("plan")
        await pilot.press("tab")
        assert app.chat.agent_name == "docs" and app.prompt.has_class("-custom-agent")
        assert "Writes docs" in sidebar_agent(app)
        await pilot.press("tab")
        assert app.chat.agent_name == "build" and not app.prompt.has_class("-plan")
        await pilot.press("x", "tab")  # not empty: Tab does not switch
        assert app.chat.agent_name == "build"
        app.prompt.clear()
        app.prompt.focus()

        await pilot.press("ctrl+x", "a")  # the leader key does it too
        assert app.chat.agent_name == "plan"
        await type_and_send(pilot, "look around")
        await wait_for(pilot, lambda: configured.requests, "the request")
        assert "# Plan mode" in text_of(configured.requests[0]["messages"][0])

        assert "auto-accept" not in str(app.status_line.render())
        await pilot.press("shift+tab")
        assert app.chat.permission_mode == "auto-edits"
        assert app.chat.session is not None
        assert app.engine.ctx.permission_modes[app.chat.session.id] == "auto-edits"
        await wait_for(pilot, lambda: "auto-accept edits" in str(app.status_line.render()))
        await pilot.press("shift+tab")
        assert app.engine.ctx.permission_modes[app.chat.session.id] == "ask"
    await close(app)


@pytest.mark.parametrize("key", ["y", "enter"])
async def test_plan_approval_switches_to_build_and_sends_the_plan(
    isolated: Path, configured: FakeOpenAI, key: str
) -> None:
    configured.script(plan_exit(), Text("Building."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("tab")
        await type_and_send(pilot, "plan a greet function")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, PlanScreen)
                and PLAN.splitlines()[0] in plan_source(app.screen)
            ),
            "the plan screen, its markdown rendered",  # Markdown.source is "" until it mounts
        )
        await pilot.press(key)  # Enter: the focused "Approve and build" button
        await wait_for(pilot, lambda: len(configured.requests) == 2, "the build request")
        assert app.chat.agent_name == "build" and not app.prompt.has_class("-plan")
    await close(app)
    build = configured.requests[1]
    assert "# Plan mode" not in text_of(build["messages"][0])
    last = text_of(conversation(build)[-1])
    assert APPROVED in last and PLAN in last


async def test_plan_keep_planning_and_reject_with_a_note(
    isolated: Path, configured: FakeOpenAI
) -> None:
    configured.script(plan_exit(), plan_exit(), Text("Revising."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("tab")
        await type_and_send(pilot, "plan it")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), "the plan screen")
        await pilot.press("k")  # keep planning: nothing is sent
        await wait_for(pilot, lambda: not isinstance(app.screen, PlanScreen))
        assert app.chat.agent_name == "plan" and len(configured.requests) == 1

        await type_and_send(pilot, "also cover errors")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), "the second plan")
        await pilot.press("r")
        await pilot.press(*"use logging")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(configured.requests) == 3, "the revision request")
        assert app.chat.agent_name == "plan"
    await close(app)
    last = text_of(conversation(configured.requests[2])[-1])
    assert REJECTED in last and "use logging" in last
    assert "# Plan mode" in text_of(configured.requests[2]["messages"][0])

"""What an editor shows over ACP is what the app shows (issue 52, item 8), each through
the SDK's real client side against `agent-tui acp`: a failed command is a failed tool
call; steps' texts stay apart; reports and the trust question keep their layout in a
Markdown client and wrap; the plan-mode refusal names the editor's own switch; a trust
refused for good is not asked again at the next start."""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.attach.render import TextRenderer
from agent_tui.cli import headless
from agent_tui.events import PartUpdated
from agent_tui.records import ToolPart
from agent_tui.storage.db import Database
from agent_tui.trust import store
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.tool_line import tool_title
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import cloned_project
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Gated, Text, ToolCalls
from tests.markdown_blocks import blocks, in_code
from tests.tui_helpers import close, open_app, type_and_send, wait_for

POLL = 0.02


def call(name: str, **arguments: Any) -> Call:
    return Call(name, json.dumps(arguments))


async def stored(session_id: str) -> list[Any]:
    async with await Database.open(paths.database_path()) as db:
        return await db.all_messages(session_id)


def finals(client: RecordingClient, session_id: str) -> dict[str, Any]:
    """Each tool call as it ended (its last update)."""
    found: dict[str, Any] = {}
    for update in client.of(session_id, "tool_call") + client.of(session_id, "tool_call_update"):
        found[update.tool_call_id] = update
    return found


async def test_a_command_that_exits_non_zero_is_a_failed_tool_call(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """As the app marks it (✗, not ✓) and `run` prints it: the call ran to its end, the
    command failed; what it printed is the call's content all the same. An exit that is
    an answer (grep's 1: no match, as hooks hear it) is no failure in any view."""
    configured.script(
        ToolCalls(
            [
                call("bash", command="no-such-command-here"),
                call("bash", command="echo half-done; exit 3"),
                call("bash", command="echo fine"),
                call("bash", command="grep zzz-not-there /dev/null"),
            ]
        ),
        Text("ran them"),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("run three"))
    ended = {u.title: u for u in finals(client, sid).values()}
    missing, partial = ended["no-such-command-here"], ended["echo half-done; exit 3"]
    assert (missing.status, partial.status) == ("failed", "failed")
    assert ended["echo fine"].status == "completed"
    no_match = ended["grep zzz-not-there /dev/null"]
    assert no_match.status == "completed" and no_match.raw_output["metadata"]["exit_code"] == 1
    assert "Exit code: 127" in missing.content[0].content.text
    assert "half-done" in partial.content[0].content.text
    assert partial.raw_output["metadata"]["exit_code"] == 3

    replayed = RecordingClient()  # a load shows it as it ended
    async with acp_agent(replayed, isolated) as (conn, _):
        await conn.load_session(cwd=str(isolated), session_id=sid, mcp_servers=[])
    statuses = {u.title: u.status for u in replayed.of(sid, "tool_call")}
    assert statuses["no-such-command-here"] == "failed"
    assert statuses["echo fine"] == "completed"

    parts = [p for m in await stored(sid) for p in m.parts if isinstance(p, ToolPart)]
    lines = {p.state.input["command"]: tool_title(p) for p in parts}
    assert lines["no-such-command-here"].startswith("✗ bash no-such-command-here")
    assert "exit code 127" in lines["no-such-command-here"]
    assert lines["echo fine"].startswith("✓ bash echo fine")
    assert lines["grep zzz-not-there /dev/null"].startswith("✓ bash grep")
    assert "exit code" not in lines["grep zzz-not-there /dev/null"]
    view = headless.TextView()  # `run` prints the engine's events
    view.err = io.StringIO()
    for part in parts:
        view(PartUpdated(part=part))
    printed = view.err.getvalue().splitlines()
    assert "[bash] no-such-command-here — failed (exit code 127)" in printed
    assert "[bash] echo fine — completed" in printed
    assert "[bash] grep zzz-not-there /dev/null — completed" in printed
    attached = io.StringIO()  # `run --attach` prints the ACP call as `run` does
    TextRenderer(io.StringIO(), attached).update(sid, missing.model_dump(by_alias=True))
    assert attached.getvalue().strip() == "[bash] no-such-command-here — failed (exit code 127)"
    attached = io.StringIO()
    TextRenderer(io.StringIO(), attached).update(sid, no_match.model_dump(by_alias=True))
    assert attached.getvalue().strip() == "[bash] grep zzz-not-there /dev/null — completed"


async def test_the_step_after_a_queued_message_starts_a_new_paragraph(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """A message sent mid-turn is answered in the same loop: the next step's text comes
    within the first prompt's reply, so it starts a paragraph of its own instead of being
    glued to the last word (as the app shows two replies)."""
    gate = threading.Event()  # the first reply streams until the second message is queued
    configured.script(
        Gated(Text(" lambda mu"), gate, text="kappa"),
        Text("alpha beta"),
        ToolCalls([call("bash", command="echo between")], text="Checking."),
        Text("Checked."),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        first = asyncio.create_task(conn.prompt(session_id=sid, prompt=prompt("first")))
        await client.wait_for(lambda: "kappa" in client.text(sid))
        second = asyncio.create_task(conn.prompt(session_id=sid, prompt=prompt("also this")))
        await until(lambda: queued(sid), "the second message queued into the turn")
        gate.set()
        await asyncio.gather(first, second)
        assert client.text(sid) == "kappa lambda mu\n\nalpha beta"
        printed = io.StringIO()  # `run --attach` breaks the line, as `run` does
        renderer = TextRenderer(printed, io.StringIO())
        for update in client.of(sid, "agent_message_chunk"):
            renderer.update(sid, update.model_dump(by_alias=True))
        assert printed.getvalue() == "kappa lambda mu\nalpha beta"
        # a tool call between two steps' texts already parts them: nothing is added
        start = len(client.text(sid))
        await conn.prompt(session_id=sid, prompt=prompt("check"))
        assert client.text(sid)[start:] == "Checking.Checked."


async def queued(session_id: str) -> bool:
    users = [m.info for m in await stored(session_id) if m.info.role == "user"]
    return any(getattr(info, "queued", False) for info in users)


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 30) -> None:
    """Poll state only the agent changes (nothing is sent to the client when a message
    is queued)."""
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(POLL)


async def test_context_and_sessions_arrive_as_markdown_that_wraps(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """A fenced block kept the app's lines but a client does not wrap one: long lines were
    cut at the edge. Each line is a paragraph, the breakdown a table, a session a list
    item, unpadded."""
    configured.script(Text("hello there"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("hi"))
        context = await said(client, sid, conn.prompt(session_id=sid, prompt=prompt("/context")))
        listed = await said(client, sid, conn.prompt(session_id=sid, prompt=prompt("/sessions")))
    shown = blocks(context)
    assert in_code(shown) == [] and "```" not in context
    window = next(block for block in shown if block.startswith("Context window: "))
    assert window.endswith("(compaction.threshold).")  # the whole line, one paragraph
    assert any(re.fullmatch(r"System prompt [\d,]+ [\d.]+%", block) for block in shown), shown
    assert "|---|--:|--:|" in context.splitlines()  # the figures right-aligned, as the app
    assert "Project trust: trusted (trusted_projects in your own config)." in shown
    (row,) = blocks(listed)
    assert re.fullmatch(rf"{sid} hi — \d{{4}}-\d\d-\d\d \d\d:\d\d 2 msgs ctx 0% {isolated}", row)
    assert listed.startswith(f"- `{sid}` hi — ") and "  " not in listed  # no padding


async def said(client: RecordingClient, session_id: str, answered: Awaitable[Any]) -> str:
    """The agent text a command's prompt added."""
    start = len(client.text(session_id))
    await answered
    return client.text(session_id)[start:]


async def test_the_trust_question_keeps_its_lines_in_a_markdown_client(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """The app lists what trusting would add a line each, indented under its heading; a
    client that renders Markdown joined it all into one paragraph."""
    cloned_project(
        isolated,
        fake_llm,
        hooks={"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}]},
        mcp={"docs": {"type": "remote", "url": "https://example.com/mcp"}},
    )
    fake_llm.script(Text("one"))
    client = RecordingClient(answer=lambda call, options: "reject_once")
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("first"))
    ((_, asked, _),) = client.permissions
    shown = blocks(asked.content[0].content.text)
    assert shown[:4] == [
        f"Project: {isolated.resolve()} (not trusted)",
        "Programs it would run (in the sandbox, the project writable):",
        "hooks: UserPromptSubmit",
        "mcp: docs",
    ]
    assert "Everything that waits until you trust it:" in shown
    assert shown[-1] == "Without trust the rest of its config applies (limits, compaction, keys)."
    assert in_code(shown) == []


async def test_the_plan_mode_refusal_names_the_editors_own_switch(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """The refusal (what the model reads, and the failed call shows) said the person
    leaves plan mode with Tab: an editor has no such key, it has a mode selector."""
    configured.script(
        ToolCalls([call("write", file_path="plan.txt", content="x")]), Text("I will plan.")
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        await conn.prompt(session_id=sid, prompt=prompt("write it"))
        helped = await said(client, sid, conn.prompt(session_id=sid, prompt=prompt("/help")))
    assert helped.startswith("Commands (type / for completion):"), helped  # no Tab either
    (refused,) = finals(client, sid).values()
    shown = refused.content[0].content.text
    assert refused.status == "failed" and shown == refusal_read(configured.requests[1])
    assert "Tab" not in shown, shown
    assert shown.endswith(
        "leaves plan mode by choosing another mode in the editor's mode selector."
    )
    assert not (isolated / "plan.txt").exists()


def test_run_and_the_app_name_their_own_switch(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same refusal elsewhere names each one's way out of plan mode."""
    write = ToolCalls([call("write", file_path="plan.txt", content="x")])
    configured.script(write, Text("planned"))
    code, _, err = run_cli(capsys, "run", "--agent", "plan", "write it")
    assert code == 0, err
    ran = refusal_read(configured.requests[-1])
    assert ran.endswith("leaves plan mode by running again with --agent build."), ran

    async def in_the_app() -> str:
        configured.script(write, Text("planned"))
        app = await open_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await app.loaded.wait()
            await pilot.press("tab")  # plan
            await type_and_send(pilot, "write it")
            await wait_for(pilot, lambda: len(configured.requests) == 4, "the refusal read")
            await wait_for(pilot, lambda: app.chat.status == "idle", "the turn's end")
        await close(app)
        return refusal_read(configured.requests[-1])

    shown = asyncio.run(in_the_app())
    assert shown.endswith("leaves plan mode with Tab on an empty prompt."), shown


def refusal_read(request: dict[str, Any]) -> str:
    """The tool result the model read: plan mode's refusal."""
    (result,) = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    assert result.startswith("Plan mode is on:"), result
    return result


async def test_reject_always_on_the_trust_question_is_remembered(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """Two `agent-tui acp` processes in turn: "Reject always" in the first is not asked
    again by the next (what waits is said as a notice instead), until the project's
    files change; trusting it later (`/trust`, `agent-tui trust`) still asks."""
    hook = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}]}
    cloned_project(isolated, fake_llm, hooks=hook)
    fake_llm.script(Text("one"), Text("two"), Text("three"))
    answers: list[str] = []

    async def a_session(answer: str) -> RecordingClient:
        client = RecordingClient(answer=lambda call, options: answers.append(answer) or answer)
        async with acp_agent(client, isolated, subprocess=True) as (conn, _):
            session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=prompt("hello"))
            await conn.prompt(session_id=session.session_id, prompt=prompt("/context"))
        return client

    await a_session("reject_always")
    second = await a_session("allow_once")
    assert answers == ["reject_always"], "asked again at the next start"
    notices = [
        u.content.text for _, u in second.updates if u.session_update == "agent_thought_chunk"
    ]
    assert any("This project is not trusted" in text for text in notices), notices
    assert "Project trust: not trusted, refused for good (asked again once its files change)." in (
        blocks(second.text(second.updates[0][0]))
    )
    assert not store.recorded(), "refused is not trusted"
    app = await open_app()  # nor does the app ask at its start
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
    await close(app)

    changed = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true 2"}]}]}
    (isolated / "agent-tui.json").write_text(json.dumps({"hooks": changed}))
    await a_session("reject_once")  # its files changed: asked again
    assert answers == ["reject_always", "reject_once"]

"""The ACP agent driven by the SDK's client side, against the fake OpenAI server through
litellm's real path: the updates an editor gets, permissions, cancel, commands,
compaction, modes and models, load / resume / list / close. It serves in the test's
process over a pair of pipes (what `agent-tui acp` runs on its stdio); the tests of the
process itself (stdio framing, garbage on stdin, the order on the wire, staying up after
a provider error) drive the real `agent-tui acp` subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from agent_tui import paths
from agent_tui.context.stats import SessionStats
from agent_tui.storage.db import Database
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import write_config
from tests.fake_openai import Call, Error, FakeOpenAI, Hang, Text, ToolCalls, Usage
from tests.process_helpers import agent_tui_argv


def call(name: str, **arguments: Any) -> Call:
    return Call(name, json.dumps(arguments))


async def stored(session_id: str) -> list[Any]:
    async with await Database.open(paths.database_path()) as db:
        return await db.all_messages(session_id)


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
        for m in request["messages"]
        if m["role"] == "system"
    )


async def test_initialize_declares_what_is_implemented(configured: FakeOpenAI, isolated: Path):
    client = RecordingClient()
    async with acp_agent(client, isolated, initialize=False) as (conn, _):
        response = await conn.initialize(protocol_version=1)
    caps = response.agent_capabilities
    assert response.protocol_version == 1
    assert caps.load_session is True
    assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
    sessions = caps.session_capabilities
    assert sessions.list is not None and sessions.resume is not None and sessions.close is not None
    assert response.agent_info.name == "agent-tui"


async def test_new_session_advertises_commands_modes_and_models(
    configured: FakeOpenAI, isolated: Path
) -> None:
    commands = isolated / ".agent-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review the diff\n---\nReview $ARGUMENTS\n"
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        advertised = await client.wait_for(lambda: client.of(sid, "available_commands_update"))
        usage = await client.wait_for(lambda: client.of(sid, "usage_update"))
    names = {c.name for c in advertised[0].available_commands}
    assert {"compact", "uncompact", "pin", "unpin", "summary", "undo", "redo", "diff"} <= names
    assert "context" in names
    assert "review" in names
    compact = next(c for c in advertised[0].available_commands if c.name == "compact")
    assert "--dry-run" in compact.input.root.hint
    assert usage[0].used == 0 and usage[0].size == 100_000
    assert session.modes.current_mode_id == "build"
    assert {m.id for m in session.modes.available_modes} >= {"build", "plan"}
    by_id = {o.root.id if hasattr(o, "root") else o.id: o for o in session.config_options}
    mode = by_id["mode"]
    mode = getattr(mode, "root", mode)
    assert mode.category == "mode" and mode.current_value == "build"
    model = by_id["model"]
    model = getattr(model, "root", model)
    assert model.category == "model" and model.current_value == "openai/test-model"


async def test_tool_calls_have_kinds_titles_locations_diffs_and_plan(
    configured: FakeOpenAI, isolated: Path
) -> None:
    (isolated / "notes.txt").write_text("alpha\nbeta\n")
    configured.script(
        ToolCalls(
            [
                call("read", file_path="notes.txt"),
                call("bash", command="echo from-bash"),
                call("edit", file_path="notes.txt", old_string="beta", new_string="gamma"),
                call(
                    "todowrite",
                    todos=[
                        {"content": "Edit notes", "status": "completed"},
                        {"content": "Run the tests", "status": "in_progress", "priority": "high"},
                    ],
                ),
            ]
        ),
        Text("Done."),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        response = await conn.prompt(session_id=sid, prompt=prompt("tidy the notes"))
    assert response.stop_reason == "end_turn"
    starts = {u.tool_call_id: u for u in client.of(sid, "tool_call")}
    finals: dict[str, Any] = {}
    for update in client.of(sid, "tool_call_update"):
        finals[update.tool_call_id] = update
    assert set(starts) == set(finals)
    by_kind = {finals[i].kind: finals[i] for i in finals}
    read, bash, edit = by_kind["read"], by_kind["execute"], by_kind["edit"]
    assert all(u.status == "completed" for u in finals.values())
    assert read.locations[0].path == str(isolated / "notes.txt")
    assert "notes.txt" in read.title
    assert bash.title == "echo from-bash"
    assert "from-bash" in bash.content[0].content.text
    assert bash.raw_input == {"command": "echo from-bash"} or bash.raw_input["command"] == (
        "echo from-bash"
    )
    (diff,) = [c for c in edit.content if c.type == "diff"]
    assert diff.path == str(isolated / "notes.txt")
    assert "beta" in diff.old_text and "gamma" in diff.new_text
    assert (isolated / "notes.txt").read_text() == "alpha\ngamma\n"
    (plan,) = client.of(sid, "plan")
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("Edit notes", "completed", "medium"),
        ("Run the tests", "in_progress", "high"),
    ]
    assert client.text(sid) == "Done."
    assert client.of(sid, "session_info_update")[0].title


@pytest.mark.parametrize(
    ("option", "ran", "asked_again"),
    [
        ("allow_once", True, True),
        ("allow_always", True, False),
        ("reject_once", False, True),
        ("reject_always", False, False),
    ],
)
async def test_permission_answers(
    isolated: Path, fake_llm: FakeOpenAI, option: str, ran: bool, asked_again: bool
) -> None:
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    fake_llm.script(
        ToolCalls([call("bash", command="echo one > one.txt")]),
        ToolCalls([call("bash", command="echo two > two.txt")]),
        Text("ok"),
    )
    client = RecordingClient(answer=lambda tool_call, options: option)
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt("go"))
    assert response.stop_reason == "end_turn"
    first_session, asked, options = client.permissions[0]
    assert first_session == session.session_id
    assert asked.title == "echo one > one.txt" or "echo one > one.txt" in asked.title
    started = [u.tool_call_id for u in client.of(session.session_id, "tool_call")]
    assert asked.kind == "execute" and asked.tool_call_id == started[0]
    assert "echo one > one.txt" in asked.content[0].content.text
    assert [o.kind for o in options] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert (isolated / "one.txt").exists() == ran
    assert (isolated / "two.txt").exists() == ran
    assert len(client.permissions) == (2 if asked_again else 1)


async def test_edit_permission_shows_the_diff(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, permission={"edit": "ask"})
    (isolated / "app.py").write_text("x = 1\n")
    fake_llm.script(
        ToolCalls([call("edit", file_path="app.py", old_string="x = 1", new_string="x = 2")]),
        Text("ok"),
    )
    client = RecordingClient(answer=lambda tool_call, options: "allow_once")
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("bump x"))
    (_, asked, _) = client.permissions[0]
    (diff,) = asked.content
    assert diff.type == "diff" and diff.path == str(isolated / "app.py")
    assert diff.old_text == "x = 1\n" and diff.new_text == "x = 2\n"
    assert asked.kind == "edit"
    assert (isolated / "app.py").read_text() == "x = 2\n"


async def test_write_permission_shows_a_new_file_without_old_text(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, permission={"write": "ask"})
    (isolated / "old.txt").write_text("before\n")
    fake_llm.script(
        ToolCalls(
            [
                call("write", file_path="new.txt", content="line one\nline two\n"),
                call("write", file_path="old.txt", content="after\n"),
            ]
        ),
        Text("ok"),
    )
    client = RecordingClient(answer=lambda tool_call, options: "allow_once")
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("write both"))
    (created,) = client.permissions[0][1].content
    assert created.type == "diff" and created.path == str(isolated / "new.txt")
    assert created.old_text is None and created.new_text == "line one\nline two\n"
    (replaced,) = client.permissions[1][1].content
    assert replaced.old_text == "before\n" and replaced.new_text == "after\n"
    assert (isolated / "new.txt").read_text() == "line one\nline two\n"


async def test_cancel_mid_stream_keeps_the_partial_text(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Hang("Partial answer so far", delay=60))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        running = asyncio.create_task(conn.prompt(session_id=sid, prompt=prompt("long job")))
        await client.wait_for(lambda: "Partial" in client.text(sid))
        await conn.cancel(session_id=sid)
        response = await asyncio.wait_for(running, 20)
    assert response.stop_reason == "cancelled"
    messages = await stored(sid)
    texts = [
        p.text for m in messages if m.info.role == "assistant" for p in m.parts if p.type == "text"
    ]
    assert any("Partial answer so far" in t for t in texts)


async def test_cancel_answers_a_pending_permission(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    fake_llm.script(ToolCalls([call("bash", command="touch never.txt")]), Text("unused"))
    client = RecordingClient(answer=lambda tool_call, options: "wait")
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        running = asyncio.create_task(conn.prompt(session_id=sid, prompt=prompt("go")))
        await client.wait_for(lambda: client.permissions)
        await conn.cancel(session_id=sid)
        response = await asyncio.wait_for(running, 20)
    assert response.stop_reason == "cancelled"
    assert not (isolated / "never.txt").exists()


async def test_usage_matches_the_sidebar_and_compact_drops_it(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    fake_llm.script(
        ToolCalls([call("bash", command="echo step")], usage=Usage(30_000, 200)),
        Text("first done", usage=Usage(31_000, 100)),
        Text("## Summary\nWe ran a step.", usage=Usage(31_100, 50)),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("do a step"))
        after_turn = client.of(sid, "usage_update")
        sidebar = SessionStats.of(await stored(sid)).usage()
        response = await conn.prompt(session_id=sid, prompt=prompt("/compact keep the steps"))
        after_compact = client.of(sid, "usage_update")
        before_summary = len(fake_llm.requests)
        await conn.prompt(session_id=sid, prompt=prompt("/summary"))
        summary_text = client.text(sid)
    assert len(fake_llm.requests) == before_summary, "/summary sends nothing"
    assert "The summary in force: manual compaction" in summary_text
    assert "We ran a step." in summary_text and "“do a step”" in summary_text
    assert response.stop_reason == "end_turn"
    # One after each step (two steps), plus the initial one.
    assert [u.used for u in after_turn[1:]] == [30_200, 31_100]
    assert after_turn[-1].used == sidebar.tokens and after_turn[-1].size == 100_000
    assert after_turn[-1].cost.currency == "USD"
    calls = [u for u in client.of(sid, "tool_call") if u.title == "Compact conversation"]
    assert len(calls) == 1 and calls[0].kind == "think" and calls[0].status == "in_progress"
    done = [
        u for u in client.of(sid, "tool_call_update") if u.tool_call_id == calls[0].tool_call_id
    ]
    assert done[-1].status == "completed"
    assert "31,100 →" in done[-1].content[0].content.text
    assert "We ran a step." in done[-1].content[0].content.text
    assert after_compact[-1].used < 31_100
    assert after_compact[-1].used == SessionStats.of(await stored(sid)).usage().tokens
    assert "keep the steps" in json.dumps(fake_llm.requests[-1]["messages"])


async def test_compact_dry_run_and_context_answer_as_text(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Text("hello there"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("hi"))
        before = len(configured.requests)
        await conn.prompt(session_id=sid, prompt=prompt("/compact --dry-run"))
        dry = client.text(sid)
        await conn.prompt(session_id=sid, prompt=prompt("/context"))
        await conn.prompt(session_id=sid, prompt=prompt("/summary"))
        await conn.prompt(session_id=sid, prompt=prompt("/diff"))
    assert len(configured.requests) == before  # nothing sent to the model
    assert "hello there" in dry and "summar" in dry.lower()
    text = client.text(sid)
    assert "System prompt" in text or "system" in text.lower()
    assert "No compaction yet in this session" in text
    assert text.endswith("No file changed yet.")  # as the app says it
    # Reports laid out in columns arrive as Markdown that keeps their lines and wraps
    # (tests/test_acp_shown.py): a paragraph a line, lists, tables; never a fenced block.
    assert "Compaction dry run — nothing was sent.\n\n- Summarised: " in dry, dry
    assert "\n| System prompt | " in text and "```" not in text, text


async def test_pin_and_unpin_answer_as_text(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(Text("the answer to keep"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("hi"))
        start = len(client.text(sid))
        await conn.prompt(session_id=sid, prompt=prompt("/pin"))
        pinned = client.text(sid)[start:]
        await conn.prompt(session_id=sid, prompt=prompt("/pin --list"))
        listed = client.text(sid)[start + len(pinned) :]
        await conn.prompt(session_id=sid, prompt=prompt("/unpin"))
        unpinned = client.text(sid)[start + len(pinned) + len(listed) :]
    assert len(configured.requests) == 1  # nothing sent to the model
    assert pinned.startswith("Pinned msg_") and '"the answer to keep"' in pinned
    assert listed.startswith("Pinned (1; about ")  # its columns: a Markdown table
    assert "\n| msg_" in listed, listed
    assert unpinned.startswith("Unpinned msg_")


async def test_load_replays_resume_does_not_and_list_and_close(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(ToolCalls([call("bash", command="echo hi")]), Text("First answer."))
    first = RecordingClient()
    async with acp_agent(first, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("my question"))
    loaded = RecordingClient()
    async with acp_agent(loaded, isolated) as (conn, _):
        listed = await conn.list_sessions(cwd=str(isolated))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].cwd == str(isolated) and listed.sessions[0].title
        await conn.load_session(cwd=str(isolated), session_id=sid, mcp_servers=[])
        replayed = list(loaded.updates)
        await conn.close_session(session_id=sid)
        with pytest.raises(RequestError):
            await conn.prompt(session_id=sid, prompt=prompt("closed?"))
    kinds = [u.session_update for _, u in replayed]
    assert kinds[:3] == ["user_message_chunk", "tool_call", "agent_message_chunk"]
    assert replayed[0][1].content.text == "my question"
    assert replayed[1][1].status == "completed" and replayed[1][1].kind == "execute"
    assert replayed[2][1].content.text == "First answer."

    configured.script(Text("Second answer."))
    resumed = RecordingClient()
    async with acp_agent(resumed, isolated) as (conn, _):
        await conn.resume_session(cwd=str(isolated), session_id=sid, mcp_servers=[])
        response = await conn.prompt(session_id=sid, prompt=prompt("and then?"))
    assert response.stop_reason == "end_turn"
    kinds = [u.session_update for _, u in resumed.updates]
    assert "user_message_chunk" not in kinds and "tool_call" not in kinds
    assert resumed.text(sid) == "Second answer."
    assert "First answer." in json.dumps(configured.requests[-1]["messages"])


async def test_plan_mode_and_model_change(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(
        isolated,
        fake_llm,
        models={
            "openai/test-model": {"limit": {"context": 100_000, "output": 4_000}},
            "openai/other-model": {"limit": {"context": 50_000, "output": 4_000}},
        },
    )
    fake_llm.script(
        ToolCalls([call("bash", command="touch planned.txt")]),
        Text("I only looked."),
        Text("Answer from the other model."),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        changed = await conn.set_config_option(config_id="mode", session_id=sid, value="plan")
        await conn.prompt(session_id=sid, prompt=prompt("look around"))
        await conn.set_session_mode(session_id=sid, mode_id="build")
        await conn.set_config_option(config_id="model", session_id=sid, value="openai/other-model")
        await conn.prompt(session_id=sid, prompt=prompt("now answer"))
        with pytest.raises(RequestError):
            await conn.set_config_option(config_id="mode", session_id=sid, value="nope")
    modes = [u.current_mode_id for u in client.of(sid, "current_mode_update")]
    assert modes == ["plan", "build"]
    mode = next(
        getattr(o, "root", o) for o in changed.config_options if getattr(o, "root", o).id == "mode"
    )
    assert mode.current_value == "plan"
    plan_request, _after_refusal, other = fake_llm.requests
    assert "# Plan mode" in system_text(plan_request)
    assert not (isolated / "planned.txt").exists()  # plan mode refused the write
    assert other["model"] == "other-model"
    assert "# Plan mode" not in system_text(other)


async def test_plan_approval_is_a_switch_mode_permission(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    fake_llm.script(
        ToolCalls([call("plan_exit", plan="1. Create hello.txt")]),
        ToolCalls([call("write", file_path="hello.txt", content="hi\n")]),
        Text("Built."),
    )
    client = RecordingClient(answer=lambda tool_call, options: "approve")
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        response = await conn.prompt(session_id=sid, prompt=prompt("plan a hello file"))
    assert response.stop_reason == "end_turn"
    (_, asked, options) = client.permissions[0]
    assert asked.kind == "switch_mode" and "Create hello.txt" in asked.content[0].content.text
    assert [o.option_id for o in options] == ["approve", "keep", "reject"]
    assert (isolated / "hello.txt").read_text() == "hi\n"
    assert [u.current_mode_id for u in client.of(sid, "current_mode_update")] == ["plan", "build"]
    assert client.text(sid).endswith("Built.")


async def test_two_sessions_at_once(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(
        Text("Reply number one.", delay=0.02, chunk_size=2),
        Text("Reply number two.", delay=0.02, chunk_size=2),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        a = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        b = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        ra, rb = await asyncio.gather(
            conn.prompt(session_id=a.session_id, prompt=prompt("first")),
            conn.prompt(session_id=b.session_id, prompt=prompt("second")),
        )
    assert ra.stop_reason == rb.stop_reason == "end_turn"
    assert {client.text(a.session_id), client.text(b.session_id)} == {
        "Reply number one.",
        "Reply number two.",
    }
    assert len(configured.requests) == 2


async def test_provider_error_is_a_json_rpc_error(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, retry={"max_attempts": 1})
    fake_llm.script(Error(401, "Incorrect API key provided: test-key."))
    client = RecordingClient()
    async with acp_agent(client, isolated, subprocess=True) as (conn, process):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        with pytest.raises(RequestError) as raised:
            await conn.prompt(session_id=session.session_id, prompt=prompt("hi"))
        assert process.returncode is None  # the agent is still serving
    assert "key" in str(str(raised.value)).lower()


async def test_malformed_requests_get_errors_and_the_agent_stays_up(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Text("still here"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, process):
        with pytest.raises(RequestError):
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        with pytest.raises(RequestError):
            await conn.prompt(session_id="no-such-session", prompt=prompt("hi"))
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(isolated), session_id="missing", mcp_servers=[])
        raw = conn._conn  # the SDK's JSON-RPC connection: send what no typed call can
        with pytest.raises(RequestError) as unknown:
            await raw.send_request("session/explode", {"x": 1})
        assert unknown.value.code == -32601
        with pytest.raises(RequestError) as invalid:
            await raw.send_request("session/prompt", {"sessionId": 5})
        assert invalid.value.code == -32602
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt("hi"))
        assert response.stop_reason == "end_turn" and process.returncode is None
    assert client.text(session.session_id) == "still here"


async def test_max_steps_stop_reason(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, max_steps=1)
    fake_llm.script(Text("Stopping here as asked."))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt("go"))
    assert response.stop_reason == "max_turn_requests"


async def test_garbage_on_stdin_does_not_stop_the_agent(configured: FakeOpenAI, isolated: Path):
    process = await asyncio.create_subprocess_exec(
        *agent_tui_argv("acp"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=isolated,
    )
    assert process.stdin is not None and process.stdout is not None
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    process.stdin.write(b'this is not json\n{"jsonrpc": "2.0", "id": \n')
    process.stdin.write(json.dumps(request).encode() + b"\n")
    await process.stdin.drain()
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 30)
    answer = json.loads(line)  # stdout holds protocol only
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1


async def test_bad_config_is_an_error_on_each_request(configured: FakeOpenAI, isolated: Path):
    own = paths.config_dir() / "config.json"  # the person's own: a project's is skipped
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text('{"model": "openai/test-model", "bogus": 1}')
    client = RecordingClient()
    async with acp_agent(client, isolated, initialize=False) as (conn, process):
        response = await conn.initialize(protocol_version=1)
        assert response.agent_info.name == "agent-tui"
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd=str(isolated), mcp_servers=[])
        assert "config.json" in str(raised.value) and "bogus" in str(raised.value)
        assert process.returncode is None


async def test_files_go_through_the_editor_when_it_offers(
    configured: FakeOpenAI, isolated: Path
) -> None:
    (isolated / "notes.txt").write_text("saved text\n")
    (isolated / "app.py").write_text("x = 1\n")
    configured.script(
        ToolCalls([call("read", file_path="notes.txt")]),
        ToolCalls([call("edit", file_path="app.py", old_string="x = 2", new_string="x = 3")]),
        ToolCalls([call("write", file_path="new.py", content="print('new')\n")]),
        Text("Edited."),
    )
    client = RecordingClient()
    client.files[str(isolated / "notes.txt")] = "unsaved buffer text\n"
    client.files[str(isolated / "app.py")] = "x = 2\n"  # changed in the editor, not saved
    async with acp_agent(client, isolated, fs=True) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("edit through the editor"))
        await conn.prompt(session_id=sid, prompt=prompt("/undo"))
    read_result = json.dumps(configured.requests[1]["messages"])
    assert "unsaved buffer text" in read_result and "saved text" not in read_result
    assert client.writes == [str(isolated / "app.py"), str(isolated / "new.py")]
    assert client.files[str(isolated / "app.py")] == "x = 3\n"
    assert "Turn undone" in client.text(sid)
    assert not (isolated / "new.py").exists()  # undo restored the disk as it was before


async def test_command_output_streams_into_the_tool_call(
    configured: FakeOpenAI, isolated: Path
) -> None:
    script = "for i in 1 2 3 4; do echo line$i; sleep 0.4; done"
    configured.script(ToolCalls([call("bash", command=script)]), Text("ran"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("run it"))
    updates = client.of(sid, "tool_call_update")
    live = [u for u in updates if u.status == "in_progress" and u.content]
    assert live and "line1" in live[0].content[0].content.text
    assert "line4" not in live[0].content[0].content.text  # seen before the command ended
    assert updates[-1].status == "completed" and "line4" in updates[-1].content[0].content.text


async def test_refusal_and_the_turns_usage(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(
        ToolCalls([call("bash", command="echo x")], usage=Usage(1_000, 20)),
        Text("I can't help with that.", finish_reason="content_filter", usage=Usage(1_100, 10)),
    )
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt("do it"))
    assert response.stop_reason == "refusal"
    assert response.usage.input_tokens == 2_100 and response.usage.output_tokens == 30
    assert response.usage.total_tokens == 2_130


def _position(wire: list[dict[str, Any]], found: Any) -> int:
    return next(i for i, message in enumerate(wire) if found(message))


async def test_updates_come_after_the_response_that_opens_the_session(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """A client routes updates by the session id the response gave it (the TypeScript SDK
    drops the rest): the commands and usage after session/new's and load's response, the
    replayed history before load's."""
    configured.script(Text("An answer."))
    first = RecordingClient()
    wire: list[dict[str, Any]] = []
    async with acp_agent(first, isolated, wire=wire, subprocess=True) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await first.wait_for(lambda: first.of(sid, "usage_update"))
        await conn.prompt(session_id=sid, prompt=prompt("a question"))
    created = _position(wire, lambda m: m.get("result", {}).get("sessionId") == sid)
    updates = [i for i, m in enumerate(wire) if m.get("method") == "session/update"]
    assert updates and min(updates) > created

    loaded = RecordingClient()
    wire.clear()
    async with acp_agent(loaded, isolated, wire=wire) as (conn, _):
        await conn.load_session(cwd=str(isolated), session_id=sid, mcp_servers=[])
        await loaded.wait_for(lambda: loaded.of(sid, "usage_update"))
    answered = _position(wire, lambda m: "result" in m and m.get("id") == 1)
    kinds = [
        (i, m["params"]["update"]["sessionUpdate"])
        for i, m in enumerate(wire)
        if m.get("method") == "session/update"
    ]
    before = [kind for i, kind in kinds if i < answered]
    after = [kind for i, kind in kinds if i > answered]
    assert before[0] == "user_message_chunk" and "agent_message_chunk" in before
    assert "available_commands_update" not in before
    assert after[:2] == ["available_commands_update", "usage_update"]


async def test_session_delete_removes_the_session_and_only_it(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Text("answer one"), Text("answer two"))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities.session_capabilities.delete is not None
        doomed = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        kept = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=doomed.session_id, prompt=prompt("one"))
        await conn.prompt(session_id=kept.session_id, prompt=prompt("two"))
        await conn._conn.send_request("session/delete", {"sessionId": doomed.session_id})
        listed = await conn.list_sessions(cwd=str(isolated))
        with pytest.raises(RequestError):
            await conn._conn.send_request("session/delete", {"sessionId": doomed.session_id})
    assert [s.session_id for s in listed.sessions] == [kept.session_id]
    assert await stored(doomed.session_id) == []
    assert len(await stored(kept.session_id)) == 2

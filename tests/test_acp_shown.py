"""What an editor shows over ACP is what the app shows (issue 52, item 8), each through
the SDK's real client side against `agent-tui acp`: a failed command is a failed tool
call; steps' texts stay apart; reports and the trust question keep their layout in a
Markdown client and wrap; the plan-mode refusal names the editor's own switch; a trust
refused for good is not asked again at the next start."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.attach.render import TextRenderer
from agent_tui.cli import headless
from agent_tui.storage.db import Database
from agent_tui.storage.models import ToolPart
from agent_tui.tui.tool_line import tool_title
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


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
    command failed; what it printed is the call's content all the same."""
    configured.script(
        ToolCalls(
            [
                call("bash", command="no-such-command-here"),
                call("bash", command="echo half-done; exit 3"),
                call("bash", command="echo fine"),
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
    printed = [headless.tool_line(p) for p in parts]  # `run`'s line
    assert "[bash] no-such-command-here — failed (exit code 127)" in printed
    assert "[bash] echo fine — completed" in printed
    attached = io.StringIO()  # `run --attach` prints the ACP call as `run` does
    TextRenderer(io.StringIO(), attached).update(sid, missing.model_dump(by_alias=True))
    assert attached.getvalue().strip() == "[bash] no-such-command-here — failed (exit code 127)"

"""A second ACP client, written with the official TypeScript SDK (`tests/acp_ts/`, its
lockfile committed), runs one scripted editor session against `agent-tui acp`: new
session, commands, a prompt whose tool calls ask permission, `/compact`, then load in a
second agent process. Skipped, with the reason, when Node or the npm install is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_config
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage
from tests.process_helpers import agent_tui_argv

CLIENT_DIR = Path(__file__).parent / "acp_ts"
SCRIPT = CLIENT_DIR / "session.mjs"
SDK = CLIENT_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
NODE = shutil.which("node")
RUN_TIMEOUT = 300  # a safety net for a hung client; the script names what it waited for


def _missing() -> str | None:
    if NODE is None:
        return "node is not installed (Node 20+ runs the TypeScript ACP client)"
    if not SDK.is_dir():
        return "tests/acp_ts/node_modules is not installed: run `npm ci --prefix tests/acp_ts`"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def call(name: str, **arguments: Any) -> Call:
    return Call(name, json.dumps(arguments))


def run_client(project: Path, **env: str) -> dict[str, Any]:
    """`node session.mjs python -m agent_tui acp` in the project: its JSON summary."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(SCRIPT), *agent_tui_argv("acp")],
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"the TypeScript client failed:\n{done.stderr}\n{done.stdout}"
    return json.loads(done.stdout)


def script_session(isolated: Path, fake_llm: FakeOpenAI) -> None:
    """The model's side of the client's session: two tools, an answer, a summary."""
    write_config(isolated, fake_llm, permission={"bash": "ask", "write": "ask"})
    fake_llm.script(
        ToolCalls(
            [
                call("write", file_path="greeting.txt", content="hello from the editor\n"),
                call("bash", command="echo hello-from-ts"),
            ],
            usage=Usage(30_000, 200),
        ),
        Text("The greeting is written.", usage=Usage(31_000, 100)),
        Text("## Summary\nWe wrote greeting.txt and ran echo.", usage=Usage(31_100, 50)),
    )


def test_typescript_sdk_client_runs_a_session(isolated: Path, fake_llm: FakeOpenAI) -> None:
    script_session(isolated, fake_llm)
    summary = run_client(isolated)
    greeting = isolated / "greeting.txt"

    pinned = json.loads((CLIENT_DIR / "package.json").read_text())["dependencies"]
    assert summary["sdk"]["version"] == pinned["@agentclientprotocol/sdk"]

    # initialize, session/new and what comes right after it
    assert summary["protocolVersion"] == 1 and summary["agentInfo"]["name"] == "agent-tui"
    assert summary["agentCapabilities"]["loadSession"] is True
    assert {"compact", "uncompact", "undo", "redo", "diff", "context", "fork"} <= set(
        summary["commands"]
    )
    assert "--dry-run" in summary["compactHint"]
    assert summary["initialUsage"] == {"used": 0, "size": 100_000}
    assert summary["modes"]["currentModeId"] == "build"
    options = {o["id"]: o for o in summary["configOptions"]}
    assert options["model"]["currentValue"] == "openai/test-model"

    # the prompt: both tools asked, were allowed once, ran, and showed as tool cards
    prompt = summary["prompt"]
    assert prompt["stopReason"] == "end_turn"
    assert prompt["text"] == "The greeting is written."
    calls = {c["kind"]: c for c in prompt["toolCalls"]}
    assert set(calls) == {"edit", "execute"}
    write, bash = calls["edit"], calls["execute"]
    assert write["statuses"][-1] == bash["statuses"][-1] == "completed"
    assert "greeting.txt" in write["title"] and write["locations"] == [str(greeting)]
    assert "diff" in write["contentTypes"]
    assert bash["title"] == "echo hello-from-ts" and "hello-from-ts" in bash["text"]
    assert greeting.read_text() == "hello from the editor\n"
    asked = summary["permissions"]
    assert [p["toolCallId"] for p in asked] == [write["toolCallId"], bash["toolCallId"]]
    for permission in asked:
        assert permission["options"] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        assert permission["chosen"] == "allow_once"
    (diff,) = asked[0]["content"]  # a new file: no old text
    assert diff == {
        "type": "diff",
        "path": str(greeting),
        "oldText": None,
        "newText": "hello from the editor\n",
    }
    assert asked[1]["kind"] == "execute" and "echo hello-from-ts" in asked[1]["content"][0]["text"]
    # every chunk names its message, /fork takes that id, /context arrives as Markdown
    # that keeps its lines and wraps: a paragraph a line, the breakdown a table
    (message_id,) = prompt["messageIds"]
    assert message_id and message_id.startswith("msg_"), prompt["messageIds"]
    assert summary["forkText"].startswith("Forked into a new session, ses_"), summary["forkText"]
    context = summary["contextText"]
    assert context.startswith("Context for openai/test-model"), context
    assert "```" not in context and "\n| System prompt | " in context, context
    assert "\n\nContext window: " in context, context
    # usage after each step: input + output of the step, in the client's window
    assert [u["used"] for u in prompt["usage"]] == [30_200, 31_100]
    assert all(u["size"] == 100_000 and u["cost"]["currency"] == "USD" for u in prompt["usage"])

    # /compact: a think tool call from in progress to completed, then a smaller usage
    compact = summary["compact"]
    assert compact["stopReason"] == "end_turn"
    card = compact["toolCall"]
    assert card["title"] == "Compact conversation" and card["kind"] == "think"
    assert card["statuses"][0] == "in_progress" and card["status"] == "completed"
    assert compact["compactionUpdates"] == []  # the client did not declare session.compaction
    assert "31,100 →" in card["text"] and "We wrote greeting.txt" in card["text"]
    assert compact["usageBefore"]["used"] == 31_100
    assert 0 < compact["usageAfter"][-1]["used"] < 31_100

    # a second agent process: list, load (replayed before the response), close
    assert any(s["sessionId"] == summary["sessionId"] for s in summary["listed"])
    load = summary["load"]
    assert load["kinds"] == [
        "user_message_chunk",
        "tool_call",
        "tool_call",
        "agent_message_chunk",
        "tool_call",  # the compaction, with its summary
    ]
    assert load["userText"] == "make the greeting"
    assert load["agentText"] == "The greeting is written."
    replayed = {c["kind"]: c for c in load["toolCalls"]}
    assert replayed["execute"]["title"] == "echo hello-from-ts"
    assert replayed["edit"]["locations"] == [str(greeting)]
    assert replayed["think"]["title"] == "Compact conversation"
    assert all(c["status"] == "completed" for c in load["toolCalls"])
    assert {"available_commands_update", "usage_update"} <= set(load["afterResponse"])
    assert summary["closed"] is True
    assert summary["exits"] == [{"code": 0, "signal": None}] * 2
    assert summary["rejectedUpdates"] == []

    # what the model was sent: the prompt, the tool results, then the request for a summary
    first, after_tools, summarise = fake_llm.requests
    assert first["messages"][-1]["role"] == "user"
    assert "make the greeting" in json.dumps(first["messages"][-1])
    assert {"write", "bash"} <= {t["function"]["name"] for t in first["tools"]}
    results = [m for m in after_tools["messages"] if m["role"] == "tool"]
    assert len(results) == 2 and "hello-from-ts" in json.dumps(results)
    asked_to_summarise = json.dumps(summarise["messages"][-1])
    assert "make the greeting" in asked_to_summarise and "summarising" in asked_to_summarise


def test_a_client_declaring_session_compaction_gets_compaction_updates(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """ACP's draft `compaction_update` (TypeScript SDK 2.4) instead of the tool call, for
    the client that declares `session.compaction`: live and in the replay."""
    script_session(isolated, fake_llm)
    summary = run_client(isolated, ACP_TS_COMPACTION="1")
    compact = summary["compact"]
    assert compact["toolCall"] is None
    started, completed = compact["compactionUpdates"]
    assert started["compactionId"] == completed["compactionId"]
    assert (started["status"], completed["status"]) == ("in_progress", "completed")
    assert completed["summary"].startswith("## Summary\nWe wrote greeting.txt")
    assert 0 < compact["usageAfter"][-1]["used"] < 31_100
    load = summary["load"]
    assert load["kinds"][-1] == "compaction_update"  # the replay, with its summary
    assert "tool_call" in load["kinds"] and len(load["toolCalls"]) == 2  # only the tools
    assert summary["rejectedUpdates"] == []  # the SDK took every update

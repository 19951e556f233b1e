"""MCP servers end to end: a stdio server's tools reach the model through the engine and
the fake OpenAI server, their calls run through the registry (permissions, redaction)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_tui.events import Event, Notice
from agent_tui.project.agents import wildcard_value
from agent_tui.records import ToolPart, ToolStateError
from tests.conftest import person_config, write_config
from tests.engine_helpers import open_engine, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

RAW_SERVER = r"""
import json, os, sys

ECHO = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}

def answer(mid, result):
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)

for line in sys.stdin:
    message = json.loads(line)
    method, mid = message.get("method"), message.get("id")
    if mid is None:  # notifications/initialized and friends
        continue
    if method == "initialize":
        answer(mid, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1.0"},
        })
    elif method == "tools/list":
        answer(mid, {"tools": [ECHO]})
    elif method == "tools/call":
        text = message["params"]["arguments"]["text"]
        if text == "hang":  # never answers: the call is waiting when the person stops it
            open(os.environ["MCP_HANG_MARK"], "w").close()
            continue
        env = f"greeting={os.environ.get('MCP_GREETING')} token={'SERVICE_TOKEN' in os.environ}"
        answer(mid, {"content": [
            {"type": "text", "text": f"echo: {text} ({env})"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        ]})
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": mid,
                          "error": {"code": -32601, "message": "unknown method"}}), flush=True)
"""

SDK_SERVER = r'''
from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


server.run()
'''

FAILING_SERVER = "import sys; sys.stderr.write('cannot start: MISSING_TOKEN\\n'); sys.exit(2)"

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def local(script: Path, **extra: Any) -> dict[str, Any]:
    return {"type": "local", "command": [sys.executable, str(script)], "timeout": 60_000, **extra}


def raw_server(project: Path) -> Path:
    script = project.parent / "raw_server.py"
    script.write_text(RAW_SERVER, encoding="utf-8")
    return script


async def test_raw_stdio_server_round_trip(
    isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "withheld-from-tools")
    server = local(raw_server(isolated), environment={"MCP_GREETING": "hello"})
    write_config(isolated, fake_llm, mcp={"srv": server}, permission={"srv_*": "allow"})
    fake_llm.script(
        ToolCalls([Call("srv_echo", json.dumps({"text": f"ping {GITHUB_TOKEN}"}))]),
        Text("done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "echo through the MCP server")
        assert result is not None and result.outcome == "stop", result
        assert engine.ctx.workspace.mcp.servers["srv"].state == "connected"
        listing = engine.ctx.workspace.mcp.render()
    first, second = fake_llm.requests
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert tools["srv_echo"]["description"] == "Echo the text back."
    assert tools["srv_echo"]["parameters"]["required"] == ["text"]
    assert [t["function"]["name"] for t in second["tools"]] == list(tools)  # a stable prefix
    (output,) = tool_results(second)
    assert output.startswith("echo: ping [REDACTED")  # redacted like every tool's output
    assert GITHUB_TOKEN not in output
    assert "greeting=hello token=False" in output  # tool environment + the server's own
    assert "[image: image/png" in output
    assert "srv  [connected]" in listing and "srv_echo(text)" in listing
    assert engine.ctx.workspace.mcp.servers["srv"].state == "closed"  # closed with the engine


def wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


async def test_stopping_a_waiting_call_says_it_was_interrupted(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    mark = isolated / "call-started"
    server = local(raw_server(isolated), environment={"MCP_HANG_MARK": str(mark)})
    write_config(isolated, fake_llm, mcp={"srv": server}, permission={"srv_*": "allow"})
    fake_llm.script(ToolCalls([Call("srv_echo", json.dumps({"text": "hang"}))]), Text("unused"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        run = asyncio.create_task(engine.prompt(session.id, "echo and wait"))
        await asyncio.to_thread(wait_for_file, mark)
        assert engine.abort(session.id)  # Esc in the app, Ctrl+C in run
        result = await asyncio.wait_for(run, 30)
        messages = await engine.ctx.db.all_messages(session.id)
    assert result is not None and result.outcome == "aborted"
    (part,) = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    assert isinstance(part.state, ToolStateError)
    assert "the call was interrupted" in part.state.error, part.state.error
    assert "InvalidStateError" not in part.state.error


async def test_sdk_server_round_trip(isolated: Path, fake_llm: FakeOpenAI) -> None:
    script = isolated.parent / "calc_server.py"
    script.write_text(SDK_SERVER, encoding="utf-8")
    write_config(isolated, fake_llm, mcp={"calc": local(script)}, permission={"calc_add": "allow"})
    fake_llm.script(ToolCalls([Call("calc_add", json.dumps({"a": 2, "b": 40}))]), Text("42"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "add 2 and 40")
        assert result is not None and result.outcome == "stop", result
    first, second = fake_llm.requests
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(tools["calc_add"]["parameters"]["properties"]) == {"a", "b"}
    (output,) = tool_results(second)
    assert output.strip() == "42"


async def test_failing_server_is_a_warning(isolated: Path, fake_llm: FakeOpenAI) -> None:
    broken = {"type": "local", "command": [sys.executable, "-c", FAILING_SERVER]}
    missing = {"type": "local", "command": [str(isolated / "no-such-server")]}
    write_config(isolated, fake_llm, mcp={"broken": broken, "missing": missing})
    fake_llm.script(Text("still working"))
    events: list[Event] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(events.append)
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "hello")
        assert result is not None and result.outcome == "stop", result
        states = {name: s.state for name, s in engine.ctx.workspace.mcp.servers.items()}
    assert states == {"broken": "failed", "missing": "failed"}
    warnings = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert any("MCP server broken failed" in w and "MISSING_TOKEN" in w for w in warnings)
    assert any("MCP server missing failed" in w and "not found" in w for w in warnings)
    (request,) = fake_llm.requests
    assert not any(t["function"]["name"].startswith("broken_") for t in request["tools"])


async def test_wildcard_permission_denies_a_servers_tools(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated, fake_llm, mcp={"srv": local(raw_server(isolated))}, permission={"srv_*": "deny"}
    )
    fake_llm.script(ToolCalls([Call("srv_echo", json.dumps({"text": "x"}))]), Text("ok"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "try it")
    (output,) = tool_results(fake_llm.requests[1])
    assert "denied by config" in output and "echo:" not in output


def test_permission_keys_match_tools_by_wildcard() -> None:
    permissions: dict[str, Any] = {"srv_*": "deny", "srv_echo_*": "allow", "srv_echo": "ask"}
    assert wildcard_value(permissions, "srv_echo") == "ask"  # own key first
    assert wildcard_value(permissions, "srv_echo_loud") == "allow"  # longest pattern
    assert wildcard_value(permissions, "srv_list") == "deny"
    assert wildcard_value(permissions, "other_tool") is None  # the tool's default
    assert wildcard_value({"srv_*": "allow"}, "SRV_x") is None  # case matters


async def test_mcp_screen_lists_servers_and_tools(isolated: Path, fake_llm: FakeOpenAI) -> None:
    from textual.widgets import Static

    from agent_tui.tui.text_screen import TextScreen
    from tests.tui_helpers import open_app, type_and_send, wait_for

    off = {"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": False}
    write_config(isolated, fake_llm, mcp={"srv": local(raw_server(isolated)), "off": off})
    app = await open_app()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await app.loaded.wait()
            await app.engine.ctx.workspace.mcp.wait_ready()
            await type_and_send(pilot, "/mcp")
            await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "mcp screen")
            text = str(app.screen.query_one("#body Static", Static).render())
            assert "srv  [connected]" in text and "srv_echo(text)" in text
            assert "off  [disabled]  remote: http://127.0.0.1:9/mcp" in text
    finally:
        await app.engine.close()
        await app.db.close()
    assert app.engine.ctx.workspace.mcp.servers["srv"].state == "closed"


HTTP_SERVER = r'''
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("web")


@server.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
'''


async def test_remote_server_round_trip(
    isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = isolated.parent / "http_server.py"
    script.write_text(HTTP_SERVER, encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(port), stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        log = b""
        while b"running on" not in log.lower():  # uvicorn's line once it listens
            line = await asyncio.wait_for(process.stderr.readline(), 60)
            assert line, f"the HTTP server exited: {log.decode()}"
            log += line
        monkeypatch.setenv("WEB_MCP_TOKEN", "t0ken")
        remote = {
            "type": "remote",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"Authorization": "Bearer {env:WEB_MCP_TOKEN}"},
        }
        person_config({"mcp": {"web": remote}})  # your own: `{env:NAME}` expanded as written
        write_config(isolated, fake_llm, permission={"web_*": "allow"})
        fake_llm.script(ToolCalls([Call("web_shout", json.dumps({"text": "hi"}))]), Text("ok"))
        async with open_engine() as engine:
            session = await engine.new_session(isolated)
            result = await engine.prompt(session.id, "shout")
            assert result is not None and result.outcome == "stop", result
            assert engine.ctx.workspace.mcp.servers["web"].state == "connected", (
                engine.ctx.workspace.mcp.render()
            )
        (output,) = tool_results(fake_llm.requests[1])
        assert output.strip() == "HI"
    finally:
        process.terminate()
        await process.wait()

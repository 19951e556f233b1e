"""An ACP client's MCP servers (session/new's `mcpServers`) belong to the sessions it
opened with them: offered in those sessions' requests beside the project's own, never in
another client's sessions of the same project nor in its own other sessions, and stopped
when the client closes the session or goes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, connect_to_agent
from acp.schema import McpServerStdio

from tests.acp_client import RecordingClient, acp_agent, capabilities, prompt
from tests.engine_helpers import tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.serve_helpers import serve

SERVER = r"""
import json, sys

NOTE = {
    "name": "note",
    "description": "Keep a note in the editor.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}

for line in sys.stdin:
    message = json.loads(line)
    method, mid = message.get("method"), message.get("id")
    if mid is None:
        continue
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "editor", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [NOTE]}
    else:
        result = {"content": [{"type": "text", "text": "noted"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"""

EDITOR_TOOL = "editor_note"


def editor_server(project: Path) -> McpServerStdio:
    """The client's own stdio MCP server (a script only this test runs)."""
    script = project.parent / "editor_mcp_server.py"
    script.write_text(SERVER, encoding="utf-8")
    return McpServerStdio(name="editor", command=sys.executable, args=[str(script)], env=[])


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


def running(script: str) -> list[int]:
    """The processes whose command line runs `script` (in a sandbox or not)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if script.encode() in words:
            found.append(int(entry.name))
    return found


def wait_stopped(script: str) -> None:
    deadline = time.monotonic() + 30
    while running(script):
        assert time.monotonic() < deadline, f"{script} still runs: {running(script)}"
        time.sleep(0.05)


async def test_a_clients_servers_are_not_offered_in_another_clients_session(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """Two clients of one `agent-tui serve` (one engine) in the same project: client 1
    gives an MCP server at session/new, client 2 none. Client 2's requests carry no tool
    of it, client 1's do; it stops when client 1 goes, client 2 serving on."""
    server = editor_server(isolated)
    script = server.args[0]
    with serve(isolated) as served:
        from acp.ws import create_websocket_stream

        headers = {"Authorization": f"Bearer {served.token}"}
        endpoint = served.url.replace("http://", "ws://") + "/acp"
        clients = [RecordingClient(), RecordingClient()]
        connections = []
        for client in clients:
            transport = await create_websocket_stream(endpoint, headers=headers)
            conn = connect_to_agent(client, transport, use_unstable_protocol=True)
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()
            )
            connections.append(conn)
        first = await connections[0].new_session(cwd=str(isolated), mcp_servers=[server])
        second = await connections[1].new_session(cwd=str(isolated), mcp_servers=[])
        configured.script(Text("from one"), Text("from two"), Text("two again"))
        await connections[0].prompt(session_id=first.session_id, prompt=prompt("one"))
        assert EDITOR_TOOL in offered(configured.requests[-1])
        await connections[1].prompt(session_id=second.session_id, prompt=prompt("two"))
        assert EDITOR_TOOL not in offered(configured.requests[-1])
        assert "bash" in offered(configured.requests[-1])  # the project's tools stay
        assert running(script)
        await connections[0].close()  # client 1 goes: its server with it
        wait_stopped(script)
        await connections[1].prompt(session_id=second.session_id, prompt=prompt("again"))
        assert clients[1].text(second.session_id) == "from twotwo again"
        await connections[1].close()


async def test_a_sessions_servers_are_its_own_on_one_connection(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """One client, two sessions of one project: only the session opened with the server
    is offered its tools, and they run there; closing that session stops it."""
    server = editor_server(isolated)
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        with_server = await conn.new_session(cwd=str(isolated), mcp_servers=[server])
        without = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        note = ToolCalls([Call(EDITOR_TOOL, json.dumps({"text": "remember"}))])
        configured.script(Text("plain"), note, Text("with tools"))
        await conn.prompt(session_id=without.session_id, prompt=prompt("no tools of it"))
        assert EDITOR_TOOL not in offered(configured.requests[-1])
        await conn.prompt(session_id=with_server.session_id, prompt=prompt("its tools"))
        called, answered = configured.requests[-2:]
        assert EDITOR_TOOL in offered(called)
        assert tool_results(answered) == ["noted"]  # the call ran on the editor's server
        await conn.close_session(session_id=with_server.session_id)
        wait_stopped(server.args[0])

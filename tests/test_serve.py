"""`agent-tui serve` as a real subprocess against the fake OpenAI server, and `agent-tui run
--attach` against it: the token, the same output and exit codes as `run`, `run.attach:
auto`, Ctrl+C, permissions, and standard ACP clients (the SDK's) on the same socket."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agent_tui import paths
from agent_tui.attach.websocket import WebSocket, WebSocketError
from agent_tui.records import TextPart
from agent_tui.server_link import discovery, server_token
from agent_tui.storage.db import Database
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, Error, FakeOpenAI, Hang, Text, ToolCalls
from tests.images import png
from tests.process_helpers import agent_tui_argv, python_argv
from tests.serve_helpers import agent, env, loaded, serve, tool_lines
from tests.test_hooks import Hook, own_config


def bash(command: str) -> Call:
    return Call("bash", json.dumps({"command": command}))


def text_of(message: dict) -> str:
    content = message["content"]
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content)
    return str(content or "")


def test_every_request_needs_the_token_and_asks_follow_allow(
    fake_llm: FakeOpenAI, isolated: Path
) -> None:
    """The token guards every request; a tool set to ask runs only when --allow names it,
    as in headless `run` (the attach client answers the server's permission questions)."""
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    with serve(isolated) as server:
        token_file = server_token.token_path()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        state = discovery.state_path()
        assert stat.S_IMODE(state.stat().st_mode) == 0o600
        for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": "x"}):
            refused = httpx.get(server.url + "/", headers=headers)
            assert refused.status_code == 401
            assert "token" in refused.text
            for path in ("/acp", "/"):
                with pytest.raises(WebSocketError) as caught:
                    WebSocket.connect(server.url + path, headers)
                assert caught.value.status == 401
        good = {"Authorization": f"Bearer {server.token}"}
        info = httpx.get(server.url + "/", headers=good)
        assert info.status_code == 200 and info.json()["protocol"] == "acp"
        with pytest.raises(WebSocketError) as caught:
            WebSocket.connect(server.url + "/elsewhere", good)
        assert caught.value.status == 404
        WebSocket.connect(server.url + "/acp", good).close()

        done = agent(isolated, "run", "--attach", server.url, "--token", "wrong-token", "hi")
        assert done.returncode == 1
        assert "refused the token (HTTP 401)" in done.stderr
        assert fake_llm.requests == []  # nothing reached the model

        fake_llm.script(ToolCalls([bash("echo refused")]), Text("I could not run it."))
        refused = agent(isolated, "run", "--attach", server.url, "run echo")
        assert refused.returncode == 0, refused.stderr
        (line,) = tool_lines(refused.stderr)
        assert line.startswith("[bash] echo refused — error: ")

        fake_llm.script(ToolCalls([bash("echo allowed-output")]), Text("Ran it."))
        allowed = agent(isolated, "run", "--attach", server.url, "--allow", "bash", "run echo")
        assert allowed.returncode == 0, allowed.stderr
        assert tool_lines(allowed.stderr) == ["[bash] echo allowed-output — completed"]
        assert "allowed-output" in text_of(fake_llm.requests[-1]["messages"][-1])

        # --format json says what was asked and how it was answered.
        fake_llm.script(ToolCalls([bash("echo asked")]), Text("ok"))
        as_json = agent(isolated, "run", "--attach", server.url, "--format", "json", "go")
        asked = [json.loads(x) for x in as_json.stdout.splitlines() if "permission.asked" in x]
        assert asked[0]["tool"] == "bash" and asked[0]["reply"] == "reject_once"
        assert asked[0]["input"]["command"] == "echo asked"
    assert not state.exists(), "server.json is removed when the server stops"


def here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`agent-tui ARGS` run in this process: what an attached run is compared with (a
    process of its own would only import litellm again, ~5 s, for the same output)."""
    code, out, err = run_cli(capsys, *args)
    return subprocess.CompletedProcess(list(args), code, out, err)


def test_attach_prints_what_run_prints(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated / "shot.png").write_bytes(png(40, 30))
    # The same hooks fire in the server as here (the attached run's engine is the server's).
    hook = Hook(isolated.parent)
    own_config({"PostToolUse": [hook.entry("ok", matcher="Bash")]})

    def script() -> None:
        configured.script(
            ToolCalls([bash("echo hello-from-bash")], text="Let me check."),
            ToolCalls([Call("read", json.dumps({"file_path": "shot.png"}))]),
            Text("All done: the shell said hello-from-bash."),
        )

    script()
    local = here(capsys, "run", "say hello via the shell")
    assert local.returncode == 0, local.stderr
    with serve(isolated) as server:
        script()
        attached = agent(isolated, "run", "--attach", server.url, "say hello via the shell")
        assert attached.returncode == 0, attached.stderr
        assert attached.stdout == local.stdout
        assert tool_lines(attached.stderr) == tool_lines(local.stderr)
        assert tool_lines(local.stderr) == [
            "[bash] echo hello-from-bash — completed",
            "[read] shot.png — completed (image PNG, 40×30, 100 bytes)",
        ]
        assert attached.stderr.splitlines()[-1].startswith("session ses_")
        local_hook, attached_hook = hook.events()
        assert local_hook["tool_input"] == attached_hook["tool_input"]
        assert attached_hook["session_id"] != local_hook["session_id"]

        # A provider error: exit 1 and the same one-paragraph message.
        configured.script(Error(400, "The request was malformed: no such parameter."))
        failed = agent(isolated, "run", "--attach", server.url, "break please")
        configured.script(Error(400, "The request was malformed: no such parameter."))
        failed_local = here(capsys, "run", "break please")
        assert failed_local.returncode == failed.returncode == 1
        assert failed.stderr.splitlines()[-1] == failed_local.stderr.splitlines()[-1]
        assert failed.stderr.splitlines()[-1].startswith("agent-tui: ")
        assert failed.stdout == failed_local.stdout

        # --format json: one event per line; the text is the same, the end is said.
        script()
        as_json = agent(isolated, "run", "--attach", server.url, "--format", "json", "again")
        assert as_json.returncode == 0, as_json.stderr
        events = [json.loads(line) for line in as_json.stdout.splitlines()]
        updates = [e["update"] for e in events if e["type"] == "session.update"]
        text = "".join(
            u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert text == "Let me check.All done: the shell said hello-from-bash."
        finished = [u for u in updates if u.get("status") == "completed"]
        assert finished[0]["_meta"]["agent-tui"]["tool"] == "bash"
        assert events[-1] == {
            "type": "prompt.finished",
            "session_id": events[0]["session_id"],
            "stop_reason": "end_turn",
        }

        # --continue and --session reach the same session on the server.
        configured.script(Text("Continued."))
        again = agent(isolated, "run", "--attach", server.url, "--continue", "and then?")
        assert again.returncode == 0 and again.stdout == "Continued.\n"
        sid = again.stderr.splitlines()[-1].removeprefix("session ")
        assert sid == events[0]["session_id"]
        configured.script(Text("By id."))
        by_id = agent(isolated, "run", "--attach", server.url, "--session", sid[4:-3], "more")
        assert by_id.returncode == 0 and by_id.stdout == "By id.\n"
        history = configured.requests[-1]["messages"]
        assert [text_of(m) for m in history if m["role"] == "user"][-3:] == [
            "again",
            "and then?",
            "more",
        ]

        # --agent plan: the plan is the answer (the approval question is answered "keep
        # planning", as `run` does); an unknown agent is the same usage error.
        def plan() -> None:
            planned = Call("plan_exit", json.dumps({"plan": "1. Add greet()\n2. Test it"}))
            configured.script(ToolCalls([planned], text="Here is my plan."))

        plan()
        planned = agent(isolated, "run", "--attach", server.url, "--agent", "plan", "plan it")
        plan()
        planned_local = here(capsys, "run", "--agent", "plan", "plan it")
        assert planned.returncode == planned_local.returncode == 0, planned.stderr
        assert planned.stdout == planned_local.stdout
        assert "1. Add greet()\n2. Test it\n" in planned.stdout
        unknown = agent(isolated, "run", "--attach", server.url, "--agent", "nope", "hi")
        unknown_local = here(capsys, "run", "--agent", "nope", "hi")
        assert unknown.returncode == unknown_local.returncode == 2
        assert unknown.stderr.splitlines()[-1] == unknown_local.stderr.splitlines()[-1]

        missing = agent(isolated, "run", "--attach", server.url, "--session", "nope", "x")
        assert missing.returncode == 1 and "No session id starts with 'nope'" in missing.stderr
        assert server.process.poll() is None


def test_run_attach_auto_uses_the_running_server(
    fake_llm: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, run={"attach": "auto"})
    with serve(isolated):
        fake_llm.script(Text("Answered by the server."))
        done = agent(isolated, "run", "hello", probe=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Answered by the server.\n"
        # The client path: neither litellm nor Textual (nor the ACP SDK or pydantic).
        assert loaded(done) == []
        fake_llm.script(Text("Answered here."))
        off = agent(isolated, "run", "--attach", "off", "hello", probe=True)
        assert off.returncode == 0 and off.stdout == "Answered here.\n", off.stderr
        # --attach off: this process ran the engine (pydantic), and litellm ran in its
        # provider process (provider/worker.py), not here.
        assert loaded(off) == ["pydantic"]
    assert not discovery.state_path().exists()

    # A server.json left by a dead server is ignored: run runs here (in this process:
    # what a local run imports was the question of --attach off above).
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    discovery.write_state(
        discovery.RunningServer(url="http://127.0.0.1:9", pid=int(gone.stdout), token="t" * 20)
    )
    fake_llm.script(Text("Answered here."))
    local = here(capsys, "run", "hello")
    assert local.returncode == 0 and local.stdout == "Answered here.\n", local.stderr

    # A live process that serves nothing there (this one): run runs here too.
    discovery.write_state(
        discovery.RunningServer(url="http://127.0.0.1:9", pid=os.getpid(), token="t" * 20)
    )
    fake_llm.script(Text("Here again."))
    local = here(capsys, "run", "hello")
    assert local.returncode == 0 and local.stdout == "Here again.\n", local.stderr


def test_ctrl_c_cancels_the_turn_and_the_server_keeps_it(
    configured: FakeOpenAI, isolated: Path
) -> None:
    with serve(isolated) as server:
        # Frames over 64 KiB each way (the 64-bit length), a prompt read from stdin.
        long_prompt, long_reply = "word " * 40_000, "y" * 70_000
        configured.script(Text(long_reply, chunk_size=len(long_reply)))
        done = agent(isolated, "run", "--attach", server.url, "-", input=long_prompt)
        assert done.returncode == 0, done.stderr
        assert done.stdout == long_reply + "\n"
        assert text_of(configured.requests[-1]["messages"][-1]) == long_prompt

        configured.script(Hang("Partial answer so far", delay=60))
        client = subprocess.Popen(
            agent_tui_argv("run", "--attach", server.url, "tell me"),
            cwd=isolated,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert client.stdout is not None
        seen = b""
        while b"Partial answer so far" not in seen:
            chunk = os.read(client.stdout.fileno(), 4096)
            assert chunk, "the client ended before the text streamed"
            seen += chunk
        client.send_signal(signal.SIGINT)
        _, err = client.communicate(timeout=60)
        assert client.returncode == 130, err
        assert b"interrupted; what was streamed is saved" in err
        configured.wait_idle()  # the server stopped the request to the model
        assert server.process.poll() is None

        # A client killed outright: the server stops its turn too, and keeps serving.
        configured.script(Hang("Killed midway", delay=60))
        killed = subprocess.Popen(
            agent_tui_argv("run", "--attach", server.url, "--continue", "x"),
            cwd=isolated,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert killed.stdout is not None
        seen = b""
        while b"Killed midway" not in seen:
            chunk = os.read(killed.stdout.fileno(), 4096)
            assert chunk, "the client ended before the text streamed"
            seen += chunk
        killed.kill()
        killed.wait()
        killed.stdout.close()
        configured.wait_idle()  # the turn was stopped: the model's stream was dropped

        configured.script(Text("Back again."))
        again = agent(isolated, "run", "--attach", server.url, "--continue", "go on")
        assert again.returncode == 0 and again.stdout == "Back again.\n", again.stderr
        history = configured.requests[-1]["messages"]
        assert any(
            m["role"] == "assistant" and "Partial answer so far" in text_of(m) for m in history
        )
    sid = again.stderr.splitlines()[-1].removeprefix("session ")

    async def texts() -> list[str]:
        async with await Database.open(paths.database_path()) as db:
            messages = await db.all_messages(sid)
        return [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]

    assert "Partial answer so far" in asyncio.run(texts())


async def test_sdk_clients_share_the_server(configured: FakeOpenAI, isolated: Path) -> None:
    """The socket speaks standard ACP: the SDK's own WebSocket client works, two at once."""
    from acp import PROTOCOL_VERSION, connect_to_agent
    from acp.ws import create_websocket_stream

    from tests.acp_client import RecordingClient, capabilities, prompt

    with serve(isolated) as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        endpoint = server.url.replace("http://", "ws://") + "/acp"
        clients = [RecordingClient(), RecordingClient()]
        connections = []
        for client in clients:
            transport = await create_websocket_stream(endpoint, headers=headers)
            conn = connect_to_agent(client, transport, use_unstable_protocol=True)
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()
            )
            connections.append(conn)
        sessions = [
            (await conn.new_session(cwd=str(isolated), mcp_servers=[])).session_id
            for conn in connections
        ]
        configured.script(Hang("first ", delay=60), Text("second answer"))
        first = asyncio.create_task(
            connections[0].prompt(session_id=sessions[0], prompt=prompt("one"))
        )
        await clients[0].wait_for(lambda: clients[0].text(sessions[0]))
        second = await connections[1].prompt(session_id=sessions[1], prompt=prompt("two"))
        assert second.stop_reason == "end_turn"
        assert clients[1].text(sessions[1]) == "second answer"
        assert clients[0].of(sessions[1]) == []  # each connection sees its own sessions
        await connections[0].cancel(session_id=sessions[0])
        assert (await first).stop_reason == "cancelled"
        for conn in connections:
            await conn.close()


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["run", "--help"]])
def test_help_imports_neither_litellm_nor_textual(isolated: Path, argv: list[str]) -> None:
    probe = (
        "import sys\n"
        "from agent_tui.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('litellm', 'textual', 'acp', 'uvicorn') if m in sys.modules)\n"
        "print('LOADED', ','.join(heavy), file=sys.stderr)\n"
    )
    done = subprocess.run(
        python_argv("-c", probe), cwd=isolated, env=env(), capture_output=True, text=True
    )
    assert "--attach" in done.stdout or argv != ["run", "--help"]
    assert "LOADED \n" in done.stderr + "\n", done.stderr

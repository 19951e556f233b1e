"""Secrets a project's MCP servers receive are named (issue 50, item 4): `${VAR}`,
`${VAR:-default}` and `{env:VAR}` in a project's server are listed in the trust question
with where each goes, and a variable withheld from commands is given only when the trust
named it; your own servers expand as written."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.events import Notice
from agent_tui.trust import store
from tests.conftest import cloned_project, person_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import FakeOpenAI, Text
from tests.test_claude_code import mcp_json

GITHUB_TOKEN = "ghp_" + "n4med0nly1fn4medXXXXXXXXXXXXXXXXXXXX"
OPENAI_KEY = "sk-" + "never-shown-in-a-question"

REPORTING_SERVER = r"""
import json, os, sys

def answer(mid, result):
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)

for line in sys.stdin:
    message = json.loads(line)
    method, mid = message.get("method"), message.get("id")
    if mid is None:
        continue
    if method == "initialize":
        answer(mid, {"protocolVersion": message["params"]["protocolVersion"],
                     "capabilities": {"tools": {}},
                     "serverInfo": {"name": "report", "version": "1"}})
    elif method == "tools/list":
        answer(mid, {"tools": [{"name": "report", "description": "What it was started with.",
                                "inputSchema": {"type": "object", "properties": {}}}]})
    elif method == "tools/call":
        names = ("GH_PAT", "PLAIN", "SMUGGLED", "OWN")
        seen = {"argv": sys.argv[1:], "env": {n: os.environ.get(n) for n in names}}
        answer(mid, {"content": [{"type": "text", "text": json.dumps(seen)}]})
"""


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("NOTES_TOKEN", "notes-secret")
    monkeypatch.setenv("PLAIN_SETTING", "plain-value")
    monkeypatch.delenv("UNSET_PART", raising=False)


def reporting_server(project: Path, **entry: Any) -> dict[str, Any]:
    script = project.parent / "report_server.py"
    script.write_text(REPORTING_SERVER, encoding="utf-8")
    return {"command": sys.executable, "args": [str(script)], **entry}


async def started(name: str) -> tuple[dict[str, Any], list[str]]:
    """What the server `name` of this project was started with, and the warnings."""
    notices: list[str] = []
    async with open_engine() as engine:
        engine.subscribe(lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
        engine.ctx.workspace.mcp.start()
        await engine.ctx.workspace.mcp.wait_ready()
        server = engine.ctx.workspace.mcp.servers[name]
        assert server.state == "connected", server.error
        result = await server.call("report", {}, asyncio.Event())
    return json.loads(result.content[0].text), [n for n in notices if "MCP server" in n]


def forget_named(project: Path) -> None:
    """The project's trust as recorded before the question named variables."""
    path = paths.data_dir() / store.FILE_NAME
    data = json.loads(path.read_text())
    del data[str(project.resolve())]["named"]
    path.write_text(json.dumps(data))


def test_the_trust_question_names_each_variable_and_where_it_goes(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], secrets: None
) -> None:
    notes = {
        "type": "remote",
        "url": "https://notes.example/mcp",
        "headers": {"X-Token": "{env:NOTES_TOKEN}"},
    }
    cloned_project(untrusted, fake_llm, mcp={"notes": notes})
    mcp_json(
        untrusted,
        docs={
            "type": "http",
            "url": "https://example.com/mcp",
            "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"},
        },
        github={
            "command": "npx",
            "args": ["server-github", "--user=${USER_NAME:-me}"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
        },
    )
    lines = [
        "mcp server docs: sends $OPENAI_API_KEY to https://example.com/mcp (header Authorization)",
        "mcp server github: gives $USER_NAME to `npx server-github '--user=${USER_NAME:-me}'` "
        "(args)",
        "mcp server github: gives $GITHUB_TOKEN to `npx server-github '--user=${USER_NAME:-me}'` "
        "(env GITHUB_PERSONAL_ACCESS_TOKEN)",
        "mcp server notes: sends $NOTES_TOKEN to https://notes.example/mcp (header X-Token)",
    ]
    code, out, _ = run_cli(capsys, "trust")  # the question (no terminal: it says --yes)
    assert code == 1 and "What of your environment its MCP servers would receive:" in out
    for line in lines:
        assert f"  {line}\n" in out, out
    fake_llm.script(Text("ok"))
    code, _, err = run_cli(capsys, "run", "go")  # run's one line
    assert code == 0
    assert (
        "Its MCP servers would receive $GITHUB_TOKEN (github), $NOTES_TOKEN (notes), "
        "$OPENAI_API_KEY (docs), $USER_NAME (github)." in err
    )
    assert run_cli(capsys, "trust", "--yes")[0] == 0
    project = load_config().project
    assert project is not None
    assert (
        project.named
        == {  # each line as the question said it
            "docs": [lines[0]],
            "github": sorted(lines[1:3]),
            "notes": [lines[3]],
        }
    )
    code, out, _ = run_cli(capsys, "trust")  # trusted: the report still says what goes where
    assert code == 0 and all(line in out for line in lines), out
    assert OPENAI_KEY not in out and GITHUB_TOKEN not in out
    config = load_config()  # kept as written until the server starts
    assert config.mcp["docs"].headers == {"Authorization": "Bearer ${OPENAI_API_KEY}"}  # type: ignore[union-attr]


def test_a_secret_reaches_a_projects_server_only_as_the_trust_named_it(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], secrets: None
) -> None:
    cloned_project(untrusted, fake_llm)
    env = {
        "GH_PAT": "${GITHUB_TOKEN}",
        "PLAIN": "${PLAIN_SETTING}",
        # A default that looks like agent-tui's reference is text, never expanded again.
        "SMUGGLED": "${UNSET_PART:-{env:OPENAI_API_KEY}}",
    }
    server = reporting_server(untrusted, env=env)
    server["args"].append("--token=${GITHUB_TOKEN}")
    mcp_json(untrusted, gh=server)
    assert run_cli(capsys, "trust", "--yes")[0] == 0
    seen, warnings = asyncio.run(started("gh"))
    assert seen["env"]["GH_PAT"] == GITHUB_TOKEN and seen["argv"][-1] == f"--token={GITHUB_TOKEN}"
    assert seen["env"]["PLAIN"] == "plain-value"
    assert seen["env"]["SMUGGLED"] == "{env:OPENAI_API_KEY}"
    assert warnings == []

    forget_named(untrusted)  # trusted, but the question did not name it
    seen, warnings = asyncio.run(started("gh"))
    assert seen["env"]["GH_PAT"] == "" and seen["argv"][-1] == "--token="
    assert seen["env"]["PLAIN"] == "plain-value"  # not withheld from commands: given
    assert len(warnings) == 1 and warnings[0].startswith(
        "MCP server gh: $GITHUB_TOKEN left empty: it is withheld from commands"
    )
    code, out, _ = run_cli(capsys, "trust")  # asks again, naming it
    assert code == 1 and "Secrets your trust has not named yet" in out
    assert "mcp server gh: gives $GITHUB_TOKEN to" in out
    assert run_cli(capsys, "trust", "--yes")[0] == 0
    seen, _ = asyncio.run(started("gh"))
    assert seen["env"]["GH_PAT"] == GITHUB_TOKEN


def test_your_own_entry_under_a_projects_server_is_named_too(
    untrusted: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], secrets: None
) -> None:
    """The project's entry of a name your config also has runs with your fields under its
    own: your `{env:NAME}` would go to its program, so the question names it; one you add
    later is not given until asked."""
    server = reporting_server(untrusted)
    cloned_project(untrusted, fake_llm, mcp={"gh": {"type": "local", "command": ["x"]}})
    project = {"type": "local", "command": [server["command"], *server["args"]]}
    (untrusted / "agent-tui.json").write_text(json.dumps({"mcp": {"gh": project}}))
    own_config(mcp={"gh": {"type": "local", "command": ["own"], "environment": {"OWN": "x"}}})
    assert run_cli(capsys, "trust", "--yes")[0] == 0
    seen, _ = asyncio.run(started("gh"))
    assert seen["env"]["OWN"] == "x"
    own_config(
        mcp={
            "gh": {
                "type": "local",
                "command": ["own"],
                "environment": {"OWN": "{env:GITHUB_TOKEN}"},
            }
        }
    )
    seen, warnings = asyncio.run(started("gh"))
    assert seen["env"]["OWN"] == "" and "MCP server gh: $GITHUB_TOKEN left empty" in warnings[0]
    code, out, _ = run_cli(capsys, "trust")
    assert code == 1 and "gives $GITHUB_TOKEN to" in out and "(env OWN)" in out
    assert run_cli(capsys, "trust", "--yes")[0] == 0
    seen, _ = asyncio.run(started("gh"))
    assert seen["env"]["OWN"] == GITHUB_TOKEN


def test_your_own_servers_expand_as_written(
    untrusted: Path, fake_llm: FakeOpenAI, secrets: None
) -> None:
    """Your own config's server is yours: `{env:NAME}` in its environment is given, in a
    project trusted or not, with no question."""
    server = reporting_server(untrusted)
    own = {
        "type": "local",
        "command": [server["command"], *server["args"]],
        "environment": {"GH_PAT": "{env:GITHUB_TOKEN}", "PLAIN": "${PLAIN_SETTING}"},
    }
    cloned_project(untrusted, fake_llm)
    person_config({"mcp": {"gh": own}, "trusted_projects": []})
    seen, warnings = asyncio.run(started("gh"))
    assert seen["env"]["GH_PAT"] == GITHUB_TOKEN and warnings == []
    assert seen["env"]["PLAIN"] == "${PLAIN_SETTING}"  # agent-tui's own syntax only, as before


@pytest.fixture
def http_headers() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP endpoint recording each request's Authorization header (it answers
    500: the server fails to start, after its first request was seen)."""
    seen: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization", "<none>"))
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", seen
    finally:
        server.shutdown()
        server.server_close()


def test_trusted_projects_in_your_config_name_nothing_until_asked(
    isolated: Path,
    fake_llm: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    secrets: None,
    http_headers: tuple[str, list[str]],
) -> None:
    """A folder of your `trusted_projects` is trusted with no question: its servers get
    no secret until `agent-tui trust` has named it. Checked on the wire: the header the
    remote server is sent."""
    url, seen = http_headers
    headers = {"Authorization": "Bearer ${OPENAI_API_KEY}"}
    mcp_json(isolated, docs={"type": "http", "url": url, "headers": headers})
    person_config({"provider": {"openai": {"api_base": fake_llm.base_url}}})
    assert load_config().project.status == "by-config"  # type: ignore[union-attr]
    warnings = asyncio.run(connect_all())
    assert seen and set(seen) == {"Bearer"}  # "Bearer " less its empty secret
    assert any("MCP server docs: $OPENAI_API_KEY left empty" in w for w in warnings)
    code, out, _ = run_cli(capsys, "trust", "--yes")
    assert code == 0 and "Trusted:" in out
    seen.clear()
    assert asyncio.run(connect_all()) == []
    assert seen and set(seen) == {f"Bearer {OPENAI_KEY}"}


async def connect_all() -> list[str]:
    """Start this project's servers (each connects or fails); the warnings said."""
    notices: list[str] = []
    async with open_engine() as engine:
        engine.subscribe(lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
        engine.ctx.workspace.mcp.start()
        await engine.ctx.workspace.mcp.wait_ready()
    return [n for n in notices if "left empty" in n]


def own_config(**keys: Any) -> None:
    """Your own config, with `keys` set on top of what it says."""
    path = paths.config_dir() / "config.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**data, **keys}))

"""Instruction files as people have them: CONTEXT.md beside AGENTS.md and CLAUDE.md,
Claude Code's ~/.claude/CLAUDE.md, and URLs in config `instructions` (fetched with a
short timeout, cached in the data dir, a failure a one-line warning). Each once, in a
stable order, the same bytes at every step."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.config.settings import Config
from agent_tui.step import instruction_urls
from agent_tui.step.instruction_urls import cache_path
from agent_tui.step.system import build_system
from tests.conftest import write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


class RulesServer:
    """Serves `pages` (path -> text) on 127.0.0.1; counts the requests."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.hits: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                text = server.pages.get(self.path)
                body = (text or "not found").encode()
                self.send_response(200 if text is not None else 404)
                self.send_header("Content-Type", "text/markdown; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def rules() -> Iterator[RulesServer]:
    server = RulesServer({"/team.md": "URL RULES: use tabs."})
    yield server
    server.stop()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in the test's tmp dir, with Claude Code's global CLAUDE.md."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("CLAUDE GLOBAL RULES")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)  # ~/.claude itself
    return home


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


async def test_context_md_claude_global_and_a_url_reach_the_prompt_once_each(
    isolated: Path, fake_llm: FakeOpenAI, home: Path, rules: RulesServer
) -> None:
    (isolated / "CONTEXT.md").write_text("CONTEXT RULES")
    (isolated.parent / "AGENTS.md").write_text("PARENT RULES")
    config_dir = Path(os.environ["AGENT_TUI_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "AGENTS.md").write_text("OWN GLOBAL RULES")
    url = f"{rules.url}/team.md"
    # Listed twice, and CONTEXT.md again by name: each still goes in once.
    write_config(isolated, fake_llm, instructions=[url, "CONTEXT.md", url])
    fake_llm.script(ToolCalls([Call("bash", '{"command": "echo hi"}')]), Text("done"), Text("ok"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "work")
        await engine.prompt(session.id, "again")
    first, second, third = (system_text(r) for r in fake_llm.requests)
    assert first == second == third  # the same bytes at every step and turn
    order = ["CONTEXT RULES", "PARENT RULES", "OWN GLOBAL RULES", "CLAUDE GLOBAL RULES"]
    order.append("URL RULES: use tabs.")
    for text in order:
        assert first.count(text) == 1, text
    assert [first.index(text) for text in order] == sorted(first.index(t) for t in order)
    assert f"Instructions from: {url}\nURL RULES" in first
    assert f"Instructions from: {home / '.claude' / 'CLAUDE.md'}" in first
    assert rules.hits == ["/team.md"]  # fetched once for the whole process
    assert cache_path(url).read_text() == "URL RULES: use tabs."
    assert cache_path(url).parent == paths.data_dir() / "instructions"


def test_one_instruction_file_per_directory_and_one_global(
    isolated: Path, home: Path, tmp_path: Path
) -> None:
    (isolated / "AGENTS.md").write_text("PROJECT AGENTS")
    (isolated / "CONTEXT.md").write_text("PROJECT CONTEXT")  # AGENTS.md wins here
    config_dir = Path(os.environ["AGENT_TUI_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    # agent-tui's global file is the same text as Claude Code's: it goes in once.
    (config_dir / "CLAUDE.md").write_text("CLAUDE GLOBAL RULES")
    (_, rest), notes = build_system("openai/x", isolated, Config())
    assert notes == []
    assert "PROJECT AGENTS" in rest and "PROJECT CONTEXT" not in rest
    assert rest.count("CLAUDE GLOBAL RULES") == 1
    assert f"Instructions from: {config_dir / 'CLAUDE.md'}" in rest


def test_an_unreachable_url_warns_and_the_run_goes_on(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/rules.md"
    write_config(isolated, fake_llm, instructions=[url])
    fake_llm.script(Text("hello"))
    code, out, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    assert out.strip() == "hello"
    warnings = [line for line in err.splitlines() if url in line]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"agent-tui: Instructions from {url} could not be fetched (")
    assert warnings[0].endswith("); left out.")
    (request,) = fake_llm.requests
    assert url not in system_text(request)


async def test_a_url_that_never_answers_is_given_up_after_the_timeout(
    isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(instruction_urls, "FETCH_TIMEOUT", 0.2)
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/rules.md"
        write_config(isolated, fake_llm, instructions=[url])
        fake_llm.script(Text("hello"))
        notices: list[str] = []
        async with open_engine() as engine:
            engine.ctx.bus.subscribe(
                lambda event: notices.append(getattr(event, "message", None) or "")
            )
            session = await engine.new_session(isolated)
            result = await engine.prompt(session.id, "hi")
    assert result is not None and result.outcome == "stop"
    assert [n for n in notices if url in n] == [
        f"Instructions from {url} could not be fetched (no answer within 0.2 s); left out."
    ]


def test_a_later_start_uses_the_cached_copy_when_the_url_is_down(
    isolated: Path,
    fake_llm: FakeOpenAI,
    rules: RulesServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two `agent-tui run`s: the first fetches and caches, the second finds the server gone
    and sends the cached copy, with a warning saying so. The second is a later start: it
    begins with nothing fetched in memory, as a new process does (both run in this process:
    two processes would only pay litellm's import twice, ~5 s each)."""
    url = f"{rules.url}/team.md"
    write_config(isolated, fake_llm, instructions=[url])
    fake_llm.script(Text("first"), Text("second"))
    code, _, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    rules.stop()
    monkeypatch.setattr(instruction_urls, "_fetched", {})  # a new process remembers nothing
    code, out, err = run_cli(capsys, "run", "hi")
    assert code == 0, err
    assert out.strip() == "second"
    assert f"Instructions from {url} could not be fetched (" in err
    assert "using the copy cached" in err
    first, second = fake_llm.requests
    assert system_text(first) == system_text(second)
    assert "URL RULES: use tabs." in system_text(second)

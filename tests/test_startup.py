"""What `agent-tui run` does before its first request: instruction files read once per
loop run, and no heavy module it does not need (timings live in bench/bench_engine.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_tui import paths
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.process_helpers import python_argv

ROOT = Path(__file__).resolve().parent.parent


def system_text(request: dict) -> str:
    parts = []
    for message in request["messages"]:
        if message["role"] == "system":
            content = message["content"]
            if isinstance(content, list):
                content = "".join(block.get("text", "") for block in content)
            parts.append(content)
    return "\n".join(parts)


def test_instruction_files_and_skills_read_once_per_run(
    configured: FakeOpenAI,
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agents = isolated / "AGENTS.md"
    agents.write_text("Always answer in haiku.", encoding="utf-8")
    skill = isolated / ".agent-tui" / "skills" / "review" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Review a change.\n---\nRead the diff.\n", "utf-8")
    reads: list[Path] = []
    read_text, read_bytes = Path.read_text, Path.read_bytes

    def counting_read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self.name in ("AGENTS.md", "SKILL.md"):
            reads.append(self)
        return read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    def counting_read_bytes(self: Path) -> bytes:  # skill files are read as bytes, checked
        if self.name in ("AGENTS.md", "SKILL.md"):
            reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_text", counting_read_text)
    monkeypatch.setattr(Path, "read_bytes", counting_read_bytes)
    configured.script(
        ToolCalls([Call("bash", json.dumps({"command": "echo one"}))]),
        ToolCalls([Call("bash", json.dumps({"command": "echo two"}))]),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "three steps")
    assert code == 0, err
    assert len(configured.requests) == 3
    assert sorted(reads) == sorted([agents, skill]), "read once per run, not once per step"
    systems = {system_text(request) for request in configured.requests}
    assert len(systems) == 1, "the system prompt changed between steps of one run"
    system = systems.pop()
    assert "Always answer in haiku." in system
    assert "- review: Review a change." in system

    # An edit between runs is picked up by the next run.
    agents.write_text("Always answer in limericks.", encoding="utf-8")
    reads.clear()
    configured.script(ToolCalls([Call("bash", '{"command": "echo three"}')]), Text("ok"))
    code, _, err = run_cli(capsys, "run", "--continue", "again")
    assert code == 0, err
    # The skill file is as it was (its time and size): not read again in this process.
    assert reads == [agents]
    first, second = configured.requests[3:]
    assert "Always answer in limericks." in system_text(first)
    assert "haiku" not in system_text(first)
    assert system_text(first) == system_text(second)


def test_run_imports_no_ui_or_mcp_sdk(isolated: Path, fake_llm: FakeOpenAI) -> None:
    """Textual and the mcp SDK (which litellm's MCP gateway check would import with
    `tools=`) stay off the path of a run with no MCP server configured."""
    write_config(isolated, fake_llm)
    fake_llm.script(ToolCalls([Call("bash", '{"command": "echo hi"}')]), Text("done"))
    probe = (
        "import sys\n"
        "from agent_tui.cli import main\n"
        "code = main(['run', 'hello'])\n"
        "heavy = sorted(m for m in ('textual', 'mcp', 'markdownify', 'bs4') if m in sys.modules)\n"
        "print('HEAVY', code, ','.join(heavy), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        python_argv("-c", probe),
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("HEAVY")]
    assert line, done.stderr
    assert line[0].split(" ", 2)[1:] == ["0", ""], line[0]
    assert len(fake_llm.requests) == 2


def test_the_first_request_does_not_wait_for_the_tokenizer(
    configured: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new session's first request fits by its byte count alone, so the tokenizer
    (0.15-0.5 s to load) is loaded after the request has left, not before it."""
    from agent_tui.budget import tokens

    tokens._counter.cache_clear()
    tokens._loaded.clear()
    requests_at_load: list[int] = []
    load = tokens._load_encoding

    def recording_load(name: str) -> object:
        requests_at_load.append(len(configured.requests))
        return load(name)

    monkeypatch.setattr(tokens, "_load_encoding", recording_load)
    configured.script(ToolCalls([Call("bash", '{"command": "echo hi"}')]), Text("done"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert requests_at_load and requests_at_load[0] >= 1, requests_at_load
    assert len(configured.requests) == 2


def test_a_continued_sessions_first_request_does_not_wait_for_the_tokenizer(
    configured: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`run --continue` in a process with no tokenizer loaded: the last step's usage plus
    the bytes of what came after it fit, so its first request leaves before the load, as
    a new session's does (it used to wait for the load, leaving later than a new one)."""
    from agent_tui.budget import tokens

    configured.script(ToolCalls([Call("bash", '{"command": "echo hi"}')]), Text("first turn"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    before = len(configured.requests)
    tokens._counter.cache_clear()  # a new process: no tokenizer loaded
    tokens._loaded.clear()
    requests_at_load: list[int] = []
    load = tokens._load_encoding

    def recording_load(name: str) -> object:
        requests_at_load.append(len(configured.requests))
        return load(name)

    monkeypatch.setattr(tokens, "_load_encoding", recording_load)
    configured.script(Text("second turn"))
    code, out, err = run_cli(capsys, "run", "--continue", "and again")
    assert code == 0 and "second turn" in out, err
    assert requests_at_load and requests_at_load[0] > before, (requests_at_load, before)


def test_the_continued_byte_bound_is_never_below_the_estimate() -> None:
    from agent_tui.ids import message_id
    from agent_tui.provider.stream_events import ModelRequest
    from agent_tui.records import (
        AssistantMessage,
        MessageWithParts,
        TextPart,
        ToolPart,
        ToolStateCompleted,
        UserMessage,
    )
    from agent_tui.step.request import estimate_next, next_size_bound
    from agent_tui.usage import Tokens

    text = "中文的文本没有空格 🙂 def f(x): return x + 1\n" * 40
    user = UserMessage(id=message_id(), session_id="s")
    last = AssistantMessage(
        id=message_id(), session_id="s", parent_id=user.id, tokens=Tokens(input=1000, output=50)
    )
    result = ToolPart(
        id=message_id(),
        message_id=last.id,
        session_id="s",
        tool="bash",
        call_id="c1",
        state=ToolStateCompleted(input={"command": "x"}, output=text),
    )
    newer = UserMessage(id=message_id(), session_id="s")
    history = [
        MessageWithParts(info=user, parts=[]),
        MessageWithParts(info=last, parts=[result]),
        MessageWithParts(
            info=newer,
            parts=[TextPart(id=message_id(), message_id=newer.id, session_id="s", text=text)],
        ),
    ]
    request = ModelRequest(model="openai/gpt-4o", messages=[{"role": "user", "content": text}])
    for scale in (1.0, 2.0):
        bound = next_size_bound(history, request, last, scale)
        assert bound >= estimate_next(history, request, last, scale)


@pytest.mark.parametrize(
    "text",
    [
        "plain words and code: def f(x): return x + 1",
        "中文的文本没有空格" * 20,
        "🙂" * 50,
        "a\n" * 300,
    ],
)
def test_the_byte_bound_is_never_below_the_token_count(text: str) -> None:
    from agent_tui.step.request import estimate_tokens, size_bound

    messages = [
        {"role": "system", "content": text},
        {"role": "user", "content": [{"type": "text", "text": text}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "bash", "arguments": json.dumps({"c": text})}}],
        },
    ]
    tools = [{"type": "function", "function": {"name": "bash", "description": text}}]
    assert size_bound(messages, tools) >= estimate_tokens(messages, tools, "gpt-4o")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, "No model provider is set up"),
        ({"model": "anthropic/claude-sonnet-4-6"}, "ANTHROPIC_API_KEY"),
        ({"model": "openai/x", "bogus": 1}, "bogus"),
    ],
)
def test_errors_that_need_no_provider_never_import_litellm(
    isolated: Path, config: dict | None, expected: str
) -> None:
    """No key, no local server, or a broken config: `run` says so without starting
    litellm's import (seconds, and its thread would starve the message of the GIL)."""
    if config is not None:  # the person's own: a project's broken file is skipped instead
        own = paths.config_dir() / "config.json"
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(json.dumps(config))
    probe = (
        "import sys\n"
        "from agent_tui.cli import main\n"
        "code = main(['run', 'hello'])\n"
        "print('LITELLM', code, 'litellm' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        python_argv("-c", probe),
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert expected in done.stderr
    line = [x for x in done.stderr.splitlines() if x.startswith("LITELLM")]
    assert line == ["LITELLM 1 False"] or line == ["LITELLM 2 False"], done.stderr

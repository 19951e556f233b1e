"""One process, sessions in several projects (issue 40): `agent-tui acp` and `agent-tui
serve` give each session its own project's config, agents, sandbox root and protected
files — a command in project B meets B's agent-tui.json exactly as a local run in B."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import person_config, write_config
from tests.engine_helpers import tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.serve_helpers import agent, serve
from tests.test_sandbox import require_bwrap


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


def two_projects(first: Path, server: FakeOpenAI) -> tuple[Path, Path]:
    """Project A (`first`) with agent alpha; project B beside it with agent beta and tool
    outputs cut at 3 lines. Both the person's own (trusted by the suite's config)."""
    second = first.parent / "b"
    second.mkdir()
    agent_of = lambda name: {name: {"description": f"{name}'s", "mode": "primary"}}  # noqa: E731
    write_config(first, server, agent=agent_of("alpha"))
    write_config(second, server, agent=agent_of("beta"), truncation={"max_lines": 3})
    return first, second


def turn_in(project: Path) -> list[ToolCalls | Text]:
    """Tool output of 40 lines, a write to the project's config, a file of its own."""
    return [
        bash("seq 1 40"),
        bash(f"echo '{{}}' > {project / 'agent-tui.json'}; touch {project / 'made-here'}"),
        Text("done"),
    ]


def check_turn(project: Path, results: list[str], cut: bool) -> None:
    listing, overwrite = results[-2:]
    assert ("lines truncated" in listing) == cut, listing
    assert "40" in listing.split() and ("20" not in listing.split()) == cut, listing
    assert "Read-only file system" in overwrite, overwrite
    assert json.loads((project / "agent-tui.json").read_text()) != {}
    assert (project / "made-here").exists()


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


async def test_one_acp_process_serves_two_projects_each_with_its_own(
    isolated: Path, fake_llm: FakeOpenAI, bwrap: None
) -> None:
    a, b = two_projects(isolated, fake_llm)
    client = RecordingClient(answer=lambda call, options: "allow_once")
    async with acp_agent(client, a) as (conn, _):
        in_a = await conn.new_session(cwd=str(a), mcp_servers=[])
        in_b = await conn.new_session(cwd=str(b), mcp_servers=[])
        modes = {
            name: {m.id for m in s.modes.available_modes} for name, s in (("a", in_a), ("b", in_b))
        }
        assert "alpha" in modes["a"] and "beta" not in modes["a"]
        assert "beta" in modes["b"] and "alpha" not in modes["b"]
        fake_llm.script(*turn_in(b))
        await conn.prompt(session_id=in_b.session_id, prompt=prompt("in b"))
        results_b = tool_results(fake_llm.requests[-1])
        fake_llm.script(*turn_in(a))
        await conn.prompt(session_id=in_a.session_id, prompt=prompt("in a"))
        results_a = tool_results(fake_llm.requests[-1])
    check_turn(b, results_b, cut=True)
    check_turn(a, results_a, cut=False)


def test_one_serve_gives_an_attached_run_its_own_projects_config(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    require_bwrap()
    a, b = two_projects(isolated, fake_llm)
    with serve(a) as server:
        fake_llm.script(*turn_in(b))
        done = agent(b, "run", "--attach", server.url, "--agent", "beta", "in b")
        assert done.returncode == 0, done.stderr
        check_turn(b, tool_results(fake_llm.requests[-1]), cut=True)
        refused = agent(b, "run", "--attach", server.url, "--agent", "alpha", "x")
        assert refused.returncode != 0 and "alpha" in refused.stderr  # A's agent, not B's


def test_serve_asks_an_attached_client_about_an_untrusted_project(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """`run --attach` from a fresh clone: the server's question is refused headless, so
    the clone's hook does not run; `run --attach --trust` trusts it, and the running
    server takes that up at the next prompt."""
    clone = isolated.parent / "clone"
    clone.mkdir()
    person_config(write_config(isolated, fake_llm), trusted=isolated)
    marker = clone / "hook-ran"
    hook = {"type": "command", "command": f"echo ran >> {marker}"}
    (clone / "agent-tui.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}})
    )
    with serve(isolated) as server:
        fake_llm.script(Text("one"), Text("two"))
        first = agent(clone, "run", "--attach", server.url, "first")
        assert first.returncode == 0, first.stderr
        assert not marker.exists()
        second = agent(clone, "run", "--attach", server.url, "--trust", "second")
        assert second.returncode == 0, second.stderr
        assert marker.read_text().count("ran") == 1

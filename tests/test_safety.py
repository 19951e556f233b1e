"""Doom-loop detection (keeping secrets away from the model: test_secrets.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.records import ToolPart, ToolStateError
from agent_tui.tool.base import PermissionReply, PermissionRequest
from tests.conftest import write_config
from tests.engine_helpers import open_engine, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

SAME = ToolCalls([Call("bash", json.dumps({"command": "echo same"}))])


def test_doom_loop_stops_headless_run(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(SAME, SAME, SAME, Text("never reached"))
    code, _, err = run_cli(capsys, "run", "loop please")
    assert code == 1
    assert "called 3 times in a row with the same input" in err
    assert len(configured.requests) == 3
    assert err.count("[bash] echo same — completed") == 2
    assert "[bash] echo same — error" in err


def test_doom_loop_can_be_disabled(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, doom_loop=0)
    fake_llm.script(SAME, SAME, SAME, Text("done"))
    code, out, err = run_cli(capsys, "run", "loop please")
    assert code == 0, err
    assert "done" in out


@pytest.mark.parametrize(("reply", "outcome"), [("once", "stop"), ("deny", "error")])
async def test_doom_loop_asks_the_person(
    configured: FakeOpenAI, reply: PermissionReply, outcome: str
) -> None:
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionReply:
        asked.append(request)
        return reply

    configured.script(SAME, SAME, SAME, Text("done"))
    async with open_engine() as engine:
        engine.ctx.ask = ask
        session = await engine.new_session(Path.cwd())
        result = await engine.prompt(session.id, "loop please")
        assert result is not None and result.outcome == outcome
        assert [r.tool for r in asked] == ["doom_loop"]
        assert "3 times in a row" in asked[0].title
        history = await engine.ctx.db.all_messages(session.id)
        tools = [p for m in history for p in m.parts if isinstance(p, ToolPart)]
        assert isinstance(tools[-1].state, ToolStateError) == (reply == "deny")

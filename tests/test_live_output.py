"""A running command's output reaches the views while it runs (redacted), never the
database or the model until it has finished."""

from __future__ import annotations

import json
from pathlib import Path

from agent_tui.events import PartUpdated
from agent_tui.records import ToolStateRunning
from tests.conftest import write_config
from tests.engine_helpers import open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"


async def test_running_output_is_published_redacted(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm)
    script = f"echo first {TOKEN}; sleep 0.6; echo second; sleep 0.6; echo third"
    fake_llm.script(ToolCalls([Call("bash", json.dumps({"command": script}))]), Text("ok"))
    live: list[str] = []

    def watch(event: object) -> None:
        if isinstance(event, PartUpdated) and event.part.type == "tool":
            state = event.part.state
            output = state.metadata.get("output") if isinstance(state, ToolStateRunning) else None
            if isinstance(output, str):
                live.append(output)

    async with open_engine() as engine:
        engine.ctx.bus.subscribe(watch)
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "run it")
        messages = await engine.ctx.db.all_messages(session.id)
    assert live and live[0].startswith("first [REDACTED")
    assert all(TOKEN not in text for text in live)
    assert any("second" in text and "third" not in text for text in live)
    stored = [p for m in messages for p in m.parts if p.type == "tool"]
    assert "output" not in stored[0].state.metadata  # the live tail is never saved
    assert "third" in stored[0].state.output

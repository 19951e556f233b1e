"""`compaction.threshold` (the share of usable at which automatic compaction fires) and
`compaction.auto: false` holding even when the provider answers with an overflow: in the
engine, `run`, `agent-tui context`, the app and ACP, through litellm's real path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from acp import RequestError
from textual.widgets import Static

from agent_tui import paths
from agent_tui.budget.reminder import budget_reminder_for
from agent_tui.config.settings import CompactionConfig, Config, ModelLimit
from agent_tui.context import prepare_lead
from agent_tui.provider.limits import ModelInfo, Prices
from agent_tui.records import AssistantMessage, Tokens
from agent_tui.storage.db import Database
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import MODEL, SMALL, write_config
from tests.engine_helpers import is_summary_request, open_engine, run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage, context_overflow
from tests.tui_helpers import open_app, type_and_send, wait_for

LIMIT = ModelLimit(context=10_000, output=2_000)


def bash(command: str, usage: Usage) -> ToolCalls:
    return ToolCalls([Call("bash", f'{{"command": "{command}"}}')], usage=usage)


def step(used: int) -> AssistantMessage:
    return AssistantMessage(
        id="msg_1", session_id="ses_1", parent_id="msg_0", model=MODEL, agent="build",
        tokens=Tokens(input=used),
    )  # fmt: skip


@pytest.mark.parametrize(("threshold", "compacted"), [(1.0, False), (0.5, True)])
async def test_automatic_compaction_fires_at_the_threshold(
    isolated: Path, fake_llm: FakeOpenAI, threshold: float, compacted: bool
) -> None:
    """A step that used 5,000 of 8,000 usable: past a threshold of 0.5 (4,000), below 1."""
    write_config(isolated, fake_llm, models=SMALL, compaction={"threshold": threshold})
    fake_llm.script(
        bash("echo one", Usage(4_900, 100)),
        *([Text("SUMMARY")] if compacted else []),
        Text("finished", usage=Usage(2_000, 10)),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
    summaries = [r for r in fake_llm.requests if is_summary_request(r)]
    assert len(summaries) == (1 if compacted else 0)
    assert len(fake_llm.requests) == (3 if compacted else 2)


async def test_prepare_at_and_the_reminder_are_read_relative_to_the_threshold() -> None:
    # prepare_earliest 0.8: the start is prepare_at whatever is measured.
    compaction = CompactionConfig(threshold=0.5, prepare_at=0.8, prepare_earliest=0.8)
    config = Config(compaction=compaction)
    idle = SimpleNamespace(is_preparing=False)
    ctx: Any = SimpleNamespace(config=config, live=lambda _session_id: idle)
    model = ModelInfo(id=MODEL, limit=LIMIT, prices=Prices(), known=True)
    # Prepared past 0.8 of the threshold (3,200 of 4,000), not of usable (6,400).
    assert not await prepare_lead.wanted(ctx, step(3_100), model, [])
    assert await prepare_lead.wanted(ctx, step(3_300), model, [])
    reminder = budget_reminder_for(step(4_100), LIMIT, config.compaction)
    assert reminder is not None and "Automatic compaction at 4000 tokens" in reminder


def test_context_names_the_threshold_and_auto_off(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, compaction={"threshold": 0.75})
    fake_llm.script(Text("hello"))
    assert run_cli(capsys, "run", "hi")[0] == 0
    code, out, _ = run_cli(capsys, "context")
    assert code == 0
    assert "more than 72,000" in out and "75% of usable (compaction.threshold)" in out
    write_config(isolated, fake_llm, compaction={"auto": False})
    out = run_cli(capsys, "context")[1]
    assert "Automatic compaction is off (compaction.auto" in out and "/compact" in out


async def _saved_prompts() -> list[str]:
    async with await Database.open(paths.database_path()) as db:
        session = (await db.list_sessions(limit=1))[0]
        messages = await db.all_messages(session.id)
    return [p.text for m in messages if m.info.role == "user" for p in m.parts if p.type == "text"]


def _auto_off_advice(text: str) -> None:
    assert "Nothing was compacted" in text and "compaction.auto" in text and "/compact" in text
    assert "after compacting" not in text  # it was not compacted


def test_run_with_auto_off_stops_on_an_overflow_and_names_compact(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm, compaction={"auto": False})
    fake_llm.script(Text("hello"), context_overflow())
    assert run_cli(capsys, "run", "small talk")[0] == 0
    code, _, err = run_cli(capsys, "run", "--continue", "the huge question")
    assert code == 1
    _auto_off_advice(err)
    assert len(fake_llm.requests) == 2  # no summary requested, no retry
    assert not any(is_summary_request(r) for r in fake_llm.requests)
    assert asyncio.run(_saved_prompts())[-1] == "the huge question"  # nothing lost


async def test_the_app_shows_the_threshold_and_the_auto_off_advice(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"threshold": 0.6})
    app = await open_app()
    async with app.run_test() as pilot:
        await app.loaded.wait()
        shown = str(app.query_one("#sidebar-compactions", Static).render())
        assert shown == "0 compactions · auto at 60%"
    await app.db.close()

    write_config(isolated, fake_llm, compaction={"auto": False})
    fake_llm.script(context_overflow())
    app = await open_app()
    async with app.run_test() as pilot:
        await app.loaded.wait()
        assert "auto off" in str(app.query_one("#sidebar-compactions", Static).render())
        await type_and_send(pilot, "the huge question")
        await wait_for(pilot, lambda: app.chat.status == "idle" and app.query(".error"), "error")

        # The step's error on the message; why nothing was compacted, in the notice (Textual
        # adds a notification when it handles the message `notify` posts: waited for).
        def notices() -> str:
            return " ".join(str(n.message) for n in app._notifications)

        await wait_for(pilot, lambda: "Nothing was compacted" in notices(), "the notice")
        _auto_off_advice(notices())
    await app.db.close()
    assert not any(is_summary_request(r) for r in fake_llm.requests)


async def test_acp_with_auto_off_answers_an_overflow_with_the_advice(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"auto": False, "threshold": 0.9})
    fake_llm.script(context_overflow())
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        with pytest.raises(RequestError) as raised:
            await conn.prompt(session_id=sid, prompt=prompt("the huge question"))
        await conn.prompt(session_id=sid, prompt=prompt("/context"))
    _auto_off_advice(str(raised.value))
    assert "Automatic compaction is off" in client.text(sid)
    assert not any(is_summary_request(r) for r in fake_llm.requests)

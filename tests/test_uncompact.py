"""Uncompact and the compaction dry run, headless and through the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_tui.context.uncompact import uncompact
from agent_tui.errors import UsageError
from agent_tui.records import AssistantMessage
from agent_tui.step.messages import COMPACTION_QUESTION, CONTINUE_TEXT
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.text_screen import TextScreen
from agent_tui.tui.user_message_view import UserMessageView
from tests.conftest import MODEL, write_config
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    run_cli,
    text_of,
    tool_pairs_ok,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage
from tests.tui_helpers import open_app, type_and_send, wait_for


async def test_uncompact_restores_the_history_and_keeps_the_summary(
    configured: FakeOpenAI,
) -> None:
    configured.script(
        Text("answer one"),
        Text("answer two"),
        Text("FIRST-SUMMARY"),
        Text("answer three"),
        Text("SECOND-SUMMARY"),
        Text("after undo"),
        Text("after second undo"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "question one")
        await engine.prompt(session.id, "question two")
        await engine.compact(session.id)
        await engine.prompt(session.id, "question three")
        await engine.compact(session.id)

        done = await uncompact(await engine.scope(session.id))
        assert done.usable == 96_000 and 0 < done.estimated < done.usable
        await engine.prompt(session.id, "question four")
        back_to_first = conversation(configured.requests[-1])
        # The first compaction holds again; the second is gone from the model's view.
        assert text_of(back_to_first[0]) == COMPACTION_QUESTION
        assert text_of(back_to_first[1]) == "FIRST-SUMMARY"
        assert "SECOND-SUMMARY" not in json.dumps(back_to_first)
        assert "question three" in json.dumps(back_to_first)

        await uncompact(await engine.scope(session.id))
        await engine.prompt(session.id, "question five")
        whole = conversation(configured.requests[-1])
        texts = [text_of(m) for m in whole]
        assert texts[:4] == ["question one", "answer one", "question two", "answer two"]
        assert "FIRST-SUMMARY" not in json.dumps(whole) and COMPACTION_QUESTION not in texts
        assert tool_pairs_ok(configured.requests[-1])

        with pytest.raises(UsageError, match="no compaction to undo"):
            await uncompact(await engine.scope(session.id))
        export = await engine.ctx.db.export_session(session.id)
    summaries = [
        m.info for m in export.messages if isinstance(m.info, AssistantMessage) and m.info.summary
    ]
    assert [s.reverted for s in summaries] == [True, True]
    assert "FIRST-SUMMARY" in export.model_dump_json()


async def test_uncompact_refuses_after_an_automatic_compaction_at_the_limit(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated, fake_llm, models={MODEL: {"limit": {"context": 20_000, "output": 2_000}}}
    )
    fake_llm.script(
        ToolCalls([Call("bash", '{"command": "echo one"}')], usage=Usage(9_000, 100)),
        Text("done", usage=Usage(17_000, 1_100)),  # over usable: compacted after the turn
        Text("AUTO-SUMMARY"),
        Text("continued"),
        Text("next"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "work")
        await engine.prompt(session.id, "more")
        assert any(is_summary_request(r) for r in fake_llm.requests)
        # The restored history is small by the local count, but the provider measured
        # the last step before the compaction over usable: it would not fit, so no.
        with pytest.raises(UsageError, match=r"would need about 18,1\d\d tokens, 1\d\d more"):
            await uncompact(await engine.scope(session.id))
        current = await engine.ctx.db.get_session(session.id)
        assert current.compaction_id is not None, "nothing changed"


async def test_uncompact_refuses_when_the_history_would_not_fit(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated,
        fake_llm,
        models={MODEL: {"limit": {"context": 6_000, "output": 1_000}}},
        compaction={"tail_tokens": 0},
    )
    fake_llm.script(
        ToolCalls([Call("bash", '{"command": "echo big"}')], usage=Usage(2_000, 100)),
        Text("big output read", usage=Usage(4_900, 200)),  # 5,100 > 5,000 usable
        Text("SMALL SUMMARY"),
        Text("ok"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "make something big")
        await engine.compact(session.id)
        with pytest.raises(UsageError) as refused:
            await uncompact(await engine.scope(session.id))
        assert "more than the 5,000 usable" in str(refused.value)
        assert "Nothing was changed" in str(refused.value)
        still = await engine.ctx.db.get_session(session.id)
        assert still.compaction_id is not None
        await engine.prompt(session.id, "go on")
    assert "SMALL SUMMARY" in json.dumps(fake_llm.requests[-1]["messages"])


def test_cli_dry_run_sends_nothing_and_uncompact_prints(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("first answer"), Text("second answer"), Text("THE SUMMARY"))
    assert run_cli(capsys, "run", "first question")[0] == 0
    assert run_cli(capsys, "run", "--continue", "second question")[0] == 0
    sent = len(configured.requests)

    code, out, err = run_cli(capsys, "compact", "--dry-run", "--continue")
    assert code == 0, err
    assert len(configured.requests) == sent, "a dry run sends nothing"
    assert "nothing was sent" in out
    # A fifth of the 96,000 usable keeps both answers and the second question verbatim.
    assert "Summarised: 1 message (1 from you)" in out and "one summariser call" in out
    assert "Kept verbatim: 2 newest steps (3 messages)" in out
    assert "prompt: default (prompts/compaction.txt)" in out
    assert f"Summarising model: {MODEL.split('/', 1)[1]}" in out or MODEL in out

    assert run_cli(capsys, "compact", "--continue")[0] == 0
    code, out, err = run_cli(capsys, "uncompact", "--continue")
    assert code == 0, err
    assert out.startswith("Compaction undone: the model sees the 4 messages before it again")
    code, _, err = run_cli(capsys, "uncompact", "--continue")
    assert code != 0 and "no compaction to undo" in err
    assert CONTINUE_TEXT not in out


async def test_the_app_previews_compacts_and_undoes(configured: FakeOpenAI) -> None:
    configured.script(
        Text("First answer.", usage=Usage(prompt_tokens=30_000, completion_tokens=2_000)),
        Text("Second answer."),
        Text("SUMMARY: we said hello."),
    )
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "hello")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 1)
        await type_and_send(pilot, "and again")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 2)
        await type_and_send(pilot, "/compact --dry-run")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "dry run screen")
        assert "nothing was sent" in app.screen.text  # type: ignore[attr-defined]
        assert len(configured.requests) == 2
        await pilot.press("escape")
        await type_and_send(pilot, "/compact")
        await wait_for(
            pilot, lambda: [d.state for d in app.query(CompactionDivider)] == ["done"], "done"
        )
        await wait_for(pilot, lambda: app.chat.status == "idle")
        assert "1 compaction" in str(app.query_one("#sidebar-compactions", Static).render())
        await pilot.press("ctrl+x", "z")
        await wait_for(
            pilot, lambda: [d.state for d in app.query(CompactionDivider)] == ["undone"], "undo"
        )
        label = app.query_one(CompactionDivider).query_one(".label", Static)
        assert "Compaction undone" in str(label.render())
        await wait_for(
            pilot,
            lambda: "0 compactions" in str(app.query_one("#sidebar-compactions", Static).render()),
        )
        assert not app.query(UserMessageView).first().has_class("-compacted")
    await app.db.close()

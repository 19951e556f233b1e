"""Pins through the real engine, litellm and the fake server: a pinned tool result is
restated verbatim after every compaction, a pin over the budget is named (never dropped
silently), unpinning stops it, and `agent-tui pin` headless."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_tui.errors import NotFoundError, UsageError
from agent_tui.events import Event, Notice
from agent_tui.records import (
    AssistantMessage,
    Session,
    ToolPart,
    ToolStateCompleted,
)
from agent_tui.session import undo as turns
from agent_tui.session.engine import Engine
from agent_tui.session.pin_changes import set_pin
from agent_tui.step.after_summary import PINS_HEADER
from tests.compaction_scenario import WINDOW, Scenario, compactions
from tests.conftest import MODEL, write_config
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    run_cli,
    starts_with_summary,
    text_of,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def table(tag: str, rows: int = 20) -> str:
    """A bash command printing `rows` distinctive lines (~15 tokens each)."""
    line = f"f'{tag} row {{i}}: keep me exactly, value={{i * 7}}'"
    return f"python3 -c \"print('\\n'.join({line} for i in range({rows})))\""


async def run_tool(
    engine: Engine, fake_llm: FakeOpenAI, session: Session, tag: str, rows: int = 20
) -> ToolPart:
    """A turn running one bash call; returns its finished tool part."""
    call_id = f"call_{tag.lower()}"
    fake_llm.script(
        ToolCalls([Call("bash", json.dumps({"command": table(tag, rows)}), id=call_id)]),
        Text(f"printed {tag}"),
    )
    await engine.prompt(session.id, f"print the {tag} table")
    messages = await engine.ctx.db.all_messages(session.id)
    part = next(
        p for m in messages for p in m.parts if isinstance(p, ToolPart) and p.call_id == call_id
    )
    assert isinstance(part.state, ToolStateCompleted) and f"{tag} row 19" in part.state.output
    return part


def pinned_block(part: ToolPart) -> str:
    assert isinstance(part.state, ToolStateCompleted)
    return (
        f'<pinned id="{part.id}" tool="bash">\nCall: {json.dumps(part.state.input)}\n'
        f"Result:\n{part.state.output}\n</pinned>"
    )


def after_summary(request: dict[str, Any]) -> str:
    """The text restated right after the summary (the user message that follows it)."""
    conv = conversation(request)
    assert conv[1]["role"] == "assistant"
    return text_of(conv[2])


async def test_a_pinned_tool_result_survives_three_compactions_verbatim(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models={MODEL: WINDOW}, max_steps=200)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        part = await run_tool(engine, fake_llm, session, "PINNED")
        change = await set_pin(await engine.scope(session.id), part.id, pinned=True)
        assert change.pinned and change.changed and not change.summarised
        assert "restated verbatim after every compaction" in change.message()
        scenario = Scenario(steps=70)
        result = await engine.prompt(session.id, scenario.install(isolated, fake_llm))
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
    found = compactions(fake_llm.requests)
    assert len(found) >= 3, len(found)
    block = pinned_block(part)
    for compaction in found:
        assert compaction.after is not None
        restated = after_summary(compaction.after)
        assert restated.count(block) == 1, restated[:500]
        assert PINS_HEADER in restated
    # Every request after the first compaction carries it: nothing between compactions
    # takes it away (and it is never pruned).
    first_after = fake_llm.requests.index(found[0].after)
    for request in fake_llm.requests[first_after:]:
        if not is_summary_request(request):
            assert block in after_summary(request)
    summaries = [m.info for m in export.messages if isinstance(m.info, AssistantMessage)]
    stored = [s for s in summaries if s.summary and s.finish]
    assert len(stored) >= 3 and all([p.id for p in s.pins] == [part.id] for s in stored)


async def test_a_pin_over_the_budget_is_named_and_announced(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"pin_tokens": 500})
    notices: list[Notice] = []

    def on_event(event: Event) -> None:
        if isinstance(event, Notice):
            notices.append(event)

    async with open_engine() as engine:
        engine.ctx.bus.subscribe(on_event)
        session = await engine.new_session(isolated)
        first = await run_tool(engine, fake_llm, session, "FIRST")  # ~350 tokens: fits
        second = await run_tool(engine, fake_llm, session, "SECOND")  # does not fit after it
        await set_pin(await engine.scope(session.id), first.id, pinned=True)
        change = await set_pin(await engine.scope(session.id), second.id, pinned=True)
        assert change.total_tokens > change.budget == 500
        assert "Over the budget" in change.message()
        fake_llm.script(Text("SUMMARY-A"))
        await engine.compact(session.id)
        fake_llm.script(Text("next"))
        await engine.prompt(session.id, "go on")
    after = fake_llm.requests[-1]
    assert starts_with_summary(after, "SUMMARY-A")
    restated = after_summary(after)
    assert pinned_block(first) in restated
    assert "SECOND row 3" not in restated  # not restated...
    assert f"{second.id} (the result of bash" in restated  # ...but named, with its size
    assert "over the 500 tokens pins may take (compaction.pin_tokens)" in restated
    warned = [n for n in notices if "compaction.pin_tokens" in n.message]
    assert len(warned) == 1 and second.id in warned[0].message
    assert warned[0].level == "warning" and first.id not in warned[0].message


async def test_unpinning_stops_restating_from_the_next_compaction(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        part = await run_tool(engine, fake_llm, session, "KEPT")
        await set_pin(await engine.scope(session.id), part.id, pinned=True)
        fake_llm.script(Text("SUMMARY-1"), Text("answer 1"))
        await engine.compact(session.id)
        await engine.prompt(session.id, "question 1")
        block = pinned_block(part)
        assert block in after_summary(fake_llm.requests[-1])
        change = await set_pin(await engine.scope(session.id), part.id, pinned=False)
        assert not change.pinned and change.changed and change.restated_now
        assert "keeps its copy until the next compaction" in change.message()
        # The summary in force is not rewritten: the prompt prefix stays as it was.
        fake_llm.script(Text("answer 2"))
        await engine.prompt(session.id, "question 2")
        assert block in after_summary(fake_llm.requests[-1])
        fake_llm.script(Text("SUMMARY-2"), Text("answer 3"))
        await engine.compact(session.id)
        await engine.prompt(session.id, "question 3")
        after = fake_llm.requests[-1]
        assert starts_with_summary(after, "SUMMARY-2")
        assert "<pinned" not in json.dumps(after["messages"])
        assert "KEPT row 5" not in json.dumps(after["messages"])
        again = await set_pin(await engine.scope(session.id), part.id, pinned=False)
        assert not again.changed and again.message().endswith("was not pinned.")


async def test_a_pinned_result_is_never_pruned(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 10})
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        pinned = await run_tool(engine, fake_llm, session, "PINNEDOUT")
        await set_pin(await engine.scope(session.id), pinned.id, pinned=True)
        await run_tool(engine, fake_llm, session, "PLAINOUT")
        for turn in (3, 4, 5):  # prune runs after a turn and spares the two newest
            fake_llm.script(Text(f"chat {turn}"))
            await engine.prompt(session.id, f"turn {turn}")
    results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0].startswith("PINNEDOUT row 0")
    assert results[1].startswith("[Old tool result content cleared]")


async def test_pin_errors_name_the_id_and_what_is_valid(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        with pytest.raises(UsageError, match="the agent has not answered yet"):
            await set_pin(await engine.scope(session.id), None, pinned=True)
        part = await run_tool(engine, fake_llm, session, "ERR")
        with pytest.raises(NotFoundError) as missing:
            await set_pin(await engine.scope(session.id), "prt_nope", pinned=True)
        text = str(missing.value)
        assert "'prt_nope'" in text and "msg_ (a message) or prt_ (a tool result)" in text
        assert "The newest you can pin:\n  msg_" in text  # the agent's reply, newest first
        assert f"\n  {part.id}  the result of bash python3 -c" in text
        with pytest.raises(NotFoundError, match="ids start with msg_"):
            await set_pin(await engine.scope(session.id), "hello", pinned=True)
        other = await engine.new_session(isolated)
        with pytest.raises(UsageError, match=f"belongs to session {session.id}"):
            await set_pin(await engine.scope(other.id), part.id, pinned=True)
        messages = await engine.ctx.db.all_messages(session.id)
        step = next(m for m in messages if any(p.id == part.id for p in m.parts))
        patch_or_start = next(p for p in step.parts if p.type == "step-start")
        with pytest.raises(UsageError, match="step-start part: pin its message"):
            await set_pin(await engine.scope(session.id), patch_or_start.id, pinned=True)
        with pytest.raises(UsageError, match=r"has no text to pin\. Its tool results: "):
            # a step of tool calls only
            await set_pin(await engine.scope(session.id), step.info.id, pinned=True)
        with pytest.raises(UsageError, match="Nothing is pinned"):
            await set_pin(await engine.scope(session.id), None, pinned=False)
        # Without an id: the agent's newest message with text.
        change = await set_pin(await engine.scope(session.id), None, pinned=True)
        assert change.item.kind == "agent" and change.item.text == "printed ERR"
        await turns.undo(await engine.scope(session.id))
        with pytest.raises(UsageError, match=r"a turn taken back with /undo \(redo it first\)"):
            await set_pin(await engine.scope(session.id), part.id, pinned=True)


def test_agent_tui_pin_headless(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm)
    fake_llm.script(
        ToolCalls([Call("bash", json.dumps({"command": table("CLI", 3)}), id="call_cli")]),
        Text("The table is printed."),
    )
    code, _, err = run_cli(capsys, "run", "print the table")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "pin", "--continue", "--list")
    assert code == 0 and out.startswith("Nothing is pinned in this session.")
    assert "The newest you can pin:" in out and "the result of bash" in out
    tool_id = next(line.split()[0] for line in out.splitlines() if "the result of bash" in line)

    code, out, _ = run_cli(capsys, "pin", "--continue")
    assert code == 0, out
    assert out.startswith("Pinned msg_") and 'the agent\'s message "The table is printed."' in out
    assert "restated verbatim after every compaction" in out
    code, out, _ = run_cli(capsys, "pin", "-c", tool_id)
    assert code == 0 and out.startswith(f"Pinned {tool_id} (the result of bash")
    code, out, _ = run_cli(capsys, "pin", "-c", "--list")
    assert out.startswith("Pinned (2; about ") and tool_id in out

    code, out, err = run_cli(capsys, "pin", "-c", "prt_missing")
    assert code == 1 and out == ""
    assert "No message or tool result 'prt_missing'" in err and tool_id in err
    code, _, err = run_cli(capsys, "pin", "-c", "--list", tool_id)
    assert code == 2 and "cannot be given together" in err
    code, _, err = run_cli(capsys, "pin", "-c", "--remove")
    assert code == 2 and "Several messages are pinned: name the one to unpin." in err
    assert tool_id in err
    code, out, _ = run_cli(capsys, "pin", "-c", "--remove", tool_id)
    assert code == 0 and out.startswith(f"Unpinned {tool_id}")
    code, out, _ = run_cli(capsys, "pin", "-c", "--remove")  # the only pin left
    assert code == 0 and out.startswith("Unpinned msg_")
    code, out, _ = run_cli(capsys, "pin", "-c", "--list")
    assert out.startswith("Nothing is pinned")


async def test_pins_and_the_ledger_are_carried_by_a_prepared_summary(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """Past compaction.prepare_at a summary is prepared in the background and applied at
    the threshold (context/prepared.py): it restates the pins as they are when it is
    applied, and the ledger of the span it summarised."""
    from tests.test_prepared import Steps, configure

    configure(isolated, fake_llm)
    notes = str(isolated / "notes.txt")
    fake_llm.script(
        ToolCalls(
            [
                Call("bash", json.dumps({"command": table("PREP")}), id="call_prep"),
                Call("write", json.dumps({"file_path": notes, "content": "one\ntwo\n"})),
            ]
        ),
        Text("printed PREP"),
    )
    steps = Steps(40)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "print the PREP table and write notes")
        messages = await engine.ctx.db.all_messages(session.id)
        part = next(
            p
            for m in messages
            for p in m.parts
            if isinstance(p, ToolPart) and p.call_id == "call_prep"
        )
        await set_pin(await engine.scope(session.id), part.id, pinned=True)
        result = await engine.prompt(session.id, "Run gen.py for steps 0 to 39.")
        assert result is not None and result.outcome == "stop", result
        rows = await engine.ctx.db.prepared_summaries(session.id)
    used = [p for p in rows if p.status == "used"]
    assert result.compactions >= 2 and len(used) == result.compactions
    for prepared in used:
        after = next(
            r
            for r in fake_llm.requests
            if not is_summary_request(r) and starts_with_summary(r, prepared.text)
        )
        restated = after_summary(after)
        assert pinned_block(part) in restated
        assert "\n- notes.txt — created (+2 -0)" in restated

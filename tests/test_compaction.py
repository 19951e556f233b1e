"""Context management end to end: real loops past the threshold, asserting on what the
fake provider received."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.records import AssistantMessage, CompactionPart, Session, TextPart
from agent_tui.session.engine import Engine
from agent_tui.step.after_summary import restated_text
from agent_tui.step.messages import CLEARED_OUTPUT, COMPACTION_QUESTION, CONTINUE_TEXT
from tests.conftest import MODEL, SMALL, write_config
from tests.engine_helpers import (
    conversation,
    ends_with_continue,
    is_summary_request,
    open_engine,
    starts_with_summary,
    text_of,
    tool_pairs_ok,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage, context_overflow


def bash(command: str, usage: Usage | None = None) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))], usage=usage)


def words(n: int, tag: str) -> str:
    """A bash command printing ~n tokens, tagged so the output can be recognised."""
    return f"python3 -c \"print('{tag} ' + 'word ' * {n})\""


async def four_turns_with_big_outputs(
    engine: Engine, fake_llm: FakeOpenAI, directory: Path
) -> Session:
    """Turns 1-3 each run bash printing ~2,000 tokens tagged OUT<n>; turn 4 only chats."""
    session = await engine.new_session(directory)
    for turn in (1, 2, 3):
        fake_llm.script(bash(words(2_000, f"OUT{turn}")), Text(f"done {turn}"))
        await engine.prompt(session.id, f"turn {turn}")
    fake_llm.script(Text("ok"))
    await engine.prompt(session.id, "turn 4")
    return session


async def test_fires_on_the_step_that_crosses_usable_and_not_before(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models=SMALL)
    fake_llm.script(
        bash("echo one", Usage(3_000, 100)),  # 3,100 <= 8,000: no compaction
        bash("echo two", Usage(7_000, 1_100)),  # 8,100 > 8,000: compaction before the next call
        Text("SUMMARY-1", usage=Usage(7_500, 200)),
        Text("finished", usage=Usage(1_500, 20)),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "do the work")
        assert result is not None and result.outcome == "stop", result
        first, second, summary, after = fake_llm.requests
        assert not is_summary_request(first) and not is_summary_request(second)
        assert is_summary_request(summary)
        assert "do the work" in json.dumps(summary["messages"])
        assert starts_with_summary(after, "SUMMARY-1")
        assert ends_with_continue(after)
        assert after["tools"], "the loop resumes with tools after automatic compaction"
        assert tool_pairs_ok(after)
        session = await engine.ctx.db.get_session(session.id)
        assert session.compaction_id is not None
        # Nothing is deleted: the whole history stays in the export.
        export = await engine.ctx.db.export_session(session.id)
        texts = json.dumps(export.model_dump())
        assert "do the work" in texts and "echo two" in texts and "SUMMARY-1" in texts


async def test_manual_compaction_has_no_continue_and_carries_instructions(
    configured: FakeOpenAI,
) -> None:
    configured.script(Text("first answer"), Text("MANUAL-SUMMARY"), Text("next answer"))
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "first question")
        result = await engine.compact(session.id, "keep the list of failing tests")
        assert result is not None and result.outcome == "stop"
        assert len(configured.requests) == 2, "manual compaction ends the loop"
        summary_request = configured.requests[1]
        assert is_summary_request(summary_request)
        assert "keep the list of failing tests" in text_of(summary_request["messages"][-1])
        # The question is summarised; the newest step (the answer) is the kept tail.
        assert "first question" in json.dumps(summary_request["messages"])
        assert "first answer" not in json.dumps(summary_request["messages"])
        history = await engine.ctx.db.all_messages(session.id)
        assert not any(
            isinstance(p, TextPart) and p.text == CONTINUE_TEXT for m in history for p in m.parts
        )
        await engine.prompt(session.id, "second question")
        after = configured.requests[2]
        assert starts_with_summary(after, "MANUAL-SUMMARY")
        assert CONTINUE_TEXT not in json.dumps(after["messages"])
        restated, answer, question = conversation(after)[2:]
        assert "<message>\nfirst question\n</message>" in text_of(restated)
        assert (answer["role"], text_of(answer)) == ("assistant", "first answer")
        assert text_of(question) == "second question"


async def test_prune_clears_old_outputs_keeps_pairs_and_two_newest_turns(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 100})
    async with open_engine() as engine:
        session = await four_turns_with_big_outputs(engine, fake_llm, isolated)
        request = fake_llm.requests[-1]
        results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        assert len(results) == 3
        assert results[0].startswith(CLEARED_OUTPUT + " (recall id prt_")  # turn 1: old
        assert results[1].startswith("OUT2") and results[2].startswith("OUT3")
        assert tool_pairs_ok(request)
        calls = [m for m in request["messages"] if m.get("tool_calls")]
        assert "OUT1" in calls[0]["tool_calls"][0]["function"]["arguments"]  # input stays
        # The output is marked, not deleted.
        export = await engine.ctx.db.export_session(session.id)
        assert "OUT1 word" in json.dumps(export.model_dump())


async def test_superseded_reads_are_pruned_first(isolated: Path, fake_llm: FakeOpenAI) -> None:
    # A protect window large enough for everything except the superseded read.
    write_config(isolated, fake_llm, compaction={"prune_protect": 100_000, "prune_minimum": 100})
    big = isolated / "big.txt"
    big.write_text("line of text\n" * 1_500)
    read = ToolCalls([Call("read", json.dumps({"file_path": str(big)}))])
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        fake_llm.script(read, Text("read once"))
        await engine.prompt(session.id, "read it")
        fake_llm.script(read, Text("read twice"))
        await engine.prompt(session.id, "read it again")
        for turn in (3, 4):
            fake_llm.script(Text(f"chat {turn}"))
            await engine.prompt(session.id, f"turn {turn}")
        fake_llm.script(Text("ok"))
        await engine.prompt(session.id, "turn 5")
        results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
        assert results[0].startswith(CLEARED_OUTPUT)
        assert "line of text" in results[1]


async def test_prune_can_be_switched_off(
    isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_TUI_DISABLE_PRUNE", "1")
    write_config(isolated, fake_llm, compaction={"prune_protect": 0, "prune_minimum": 100})
    async with open_engine() as engine:
        await four_turns_with_big_outputs(engine, fake_llm, isolated)
        results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
        assert results[0].startswith("OUT1")


@pytest.mark.parametrize("switch", ["config", "env"])
async def test_auto_compaction_can_be_switched_off(
    isolated: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    extra = {"compaction": {"auto": False}} if switch == "config" else {}
    if switch == "env":
        monkeypatch.setenv("AGENT_TUI_DISABLE_AUTOCOMPACT", "1")
    write_config(isolated, fake_llm, models=SMALL, **extra)
    fake_llm.script(bash("echo two", Usage(7_000, 1_500)), Text("finished", usage=Usage(8_800, 10)))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
    assert len(fake_llm.requests) == 2
    assert not any(is_summary_request(r) for r in fake_llm.requests)


async def test_overflow_error_compacts_and_retries_once(configured: FakeOpenAI) -> None:
    configured.script(
        Text("hello there"),
        context_overflow(),
        Text("OVERFLOW-SUMMARY"),
        Text("answer after retry"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "small talk")
        result = await engine.prompt(session.id, "the big question")
        assert result is not None and result.outcome == "stop", result
        _, rejected, summary, retry = configured.requests
        assert "the big question" in json.dumps(rejected["messages"])
        assert is_summary_request(summary)
        assert "the big question" not in json.dumps(summary["messages"])  # left out...
        assert starts_with_summary(retry, "OVERFLOW-SUMMARY")
        last = text_of(conversation(retry)[-1])
        assert last.endswith("\nthe big question")  # ...and replayed, once
        assert last.count("the big question") == 1
        assert "<message>\nsmall talk\n</message>" in last  # the person's words restated
        assert CONTINUE_TEXT not in json.dumps(retry["messages"])
        history = await engine.ctx.db.all_messages(session.id)
        parts = [p for m in history for p in m.parts if isinstance(p, CompactionPart)]
        assert parts[0].auto and parts[0].overflow


async def test_overflow_twice_stops_instead_of_looping(configured: FakeOpenAI) -> None:
    configured.script(Text("hello"), context_overflow(), Text("S"), context_overflow())
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "small talk")
        result = await engine.prompt(session.id, "too big")
        assert result is not None and result.outcome == "error"
        assert "context window" in (result.error or "")
    assert len(configured.requests) == 4


async def test_recent_tail_is_kept_verbatim(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, compaction={"preserve_recent_tokens": 500})
    fake_llm.script(
        # Beyond the tail budget at any provider scale (the fake's usage leaves the tool
        # definitions out, so the scale moves as tools are added).
        Text("OLD-ANSWER " + "filler " * 2000),
        Text("RECENT-ANSWER"),
        Text("TAIL-SUMMARY"),
        Text("ok"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "old question")
        await engine.prompt(session.id, "recent question")
        await engine.compact(session.id)
        summary_request = fake_llm.requests[2]
        assert "OLD-ANSWER" in json.dumps(summary_request["messages"])
        assert "RECENT-ANSWER" not in json.dumps(summary_request["messages"])
        await engine.prompt(session.id, "new question")
        conv = conversation(fake_llm.requests[3])
        assert [text_of(m) for m in conv] == [
            COMPACTION_QUESTION,
            "TAIL-SUMMARY",
            restated_text(["old question"]) + "\n\nrecent question",
            "RECENT-ANSWER",
            "new question",
        ]


async def test_second_compaction_is_anchored_on_the_first(configured: FakeOpenAI) -> None:
    configured.script(
        Text("a1"), Text("FIRST-SUMMARY"), Text("a2"), Text("SECOND-SUMMARY"), Text("a3")
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "q1")
        await engine.compact(session.id)
        await engine.prompt(session.id, "q2")
        await engine.compact(session.id)
        second = configured.requests[3]
        assert is_summary_request(second)
        instruction = text_of(second["messages"][-1])
        assert "merges it" in instruction and "later conversation wins" in instruction
        body = json.dumps(second["messages"])
        assert "FIRST-SUMMARY" in body and "q2" in body
        # q1 was summarised the first time: it is there only as the person's words.
        assert body.count("q1") == 1 and "<message>\\nq1\\n</message>" in body
        await engine.prompt(session.id, "q3")
        assert starts_with_summary(configured.requests[4], "SECOND-SUMMARY")
        # Both questions survive both compactions, newest first.
        after = conversation(configured.requests[4])
        assert [text_of(m) for m in after[2:]] == [restated_text(["q2", "q1"]), "a2", "q3"]
        session = await engine.ctx.db.get_session(session.id)
        summaries = [
            m
            for m in await engine.ctx.db.all_messages(session.id)
            if isinstance(m.info, AssistantMessage) and m.info.summary
        ]
        assert len(summaries) == 2


async def test_history_too_large_for_the_summariser_is_chunked(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated,
        fake_llm,
        compaction={"model": "openai/small-summariser", "preserve_recent_tokens": 0},
        models={
            MODEL: {"limit": {"context": 100_000, "output": 4_000}},
            "openai/small-summariser": {"limit": {"context": 6_000, "output": 500}},
        },
    )
    for turn in range(4):
        fake_llm.script(Text(f"ANSWER{turn} " + "detail " * 1_500))
    fake_llm.responder = lambda body: Text("CHUNK-SUMMARY")
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        for turn in range(4):
            await engine.prompt(session.id, f"question {turn}")
        result = await engine.compact(session.id)
        assert result is not None and result.outcome == "stop", result
    summary_requests = fake_llm.requests[4:]
    # ~6,000 tokens of history, ~4,300 per chunk at this window: the fewest is two.
    assert len(summary_requests) == 2
    assert all(r["model"] == "small-summariser" for r in summary_requests)
    assert "Earlier summary of this session" in json.dumps(summary_requests[-1]["messages"])
    for request in summary_requests:
        assert len(json.dumps(request["messages"])) < 6_000 * 4


async def test_compaction_that_cannot_fit_stops_clearly(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    # The system prompt and tool definitions alone exceed this window.
    write_config(isolated, fake_llm, models={MODEL: {"limit": {"context": 1_500, "output": 100}}})
    fake_llm.responder = lambda body: Text("S")
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "hello")
        assert result is not None and result.outcome == "error"
        assert "still needs about" in (result.error or "")
        assert "Nothing was lost" in (result.error or "")
    assert len(fake_llm.requests) <= 2
    assert all(is_summary_request(r) for r in fake_llm.requests)

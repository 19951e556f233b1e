"""Compaction inside one long turn keeps the agent's place: 60 tool calls at a 20k window
through the real engine, litellm and the fake server (see tests/compaction_scenario.py)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_tui.records import AssistantMessage, ToolPart, ToolStateCompleted
from agent_tui.step.messages import COMPACTION_QUESTION
from tests.compaction_scenario import (
    USABLE,
    WINDOW,
    Scenario,
    compactions,
    marker_fate,
    prompt_tokens,
)
from tests.conftest import MODEL, write_config
from tests.engine_helpers import (
    conversation,
    is_summary_request,
    open_engine,
    text_of,
    tool_pairs_ok,
    tool_results,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


async def test_sixty_tool_calls_at_a_20k_window(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, models={MODEL: WINDOW}, max_steps=200)
    scenario = Scenario(steps=60)
    request_text = scenario.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, request_text)
        assert result is not None and result.outcome == "stop", result
    assert scenario.calls_made == 60

    found = compactions(fake_llm.requests)
    assert 1 <= len(found) <= 6, len(found)
    for compaction in found:
        assert compaction.summariser_calls == 1, "one summariser call per compaction"
        after = compaction.after
        assert after is not None and after["tools"]
        conv = conversation(after)
        assert text_of(conv[0]) == COMPACTION_QUESTION
        # The person's request, verbatim, right after the summary.
        assert request_text in text_of(conv[2])
        # At least the three newest tool results, verbatim and paired with their calls.
        newest = tool_results(compaction.before)[-3:]
        assert len(newest) == 3
        kept = tool_results(after)
        assert all(result in kept for result in newest)
        assert tool_pairs_ok(after)
        # The prompt after compacting is at most half of usable.
        assert prompt_tokens(after) <= USABLE // 2, prompt_tokens(after)
    # Every marker reached the summariser or a kept tail (or is still in the window).
    fate = marker_fate(fake_llm.requests, 60)
    assert fate["lost"] == 0, fate
    assert fate["summariser"] > 0
    # Summary requests are the conversation with the instruction last, tools and all.
    summary_requests = [r for r in fake_llm.requests if is_summary_request(r)]
    assert all(r["tools"] == fake_llm.requests[0]["tools"] for r in summary_requests)


async def test_a_newest_step_over_the_tail_budget_is_kept_shortened(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """The big output pushes the window over usable mid-turn: the step that made it is
    the newest step when compaction runs, and alone it is larger than the tail budget."""
    write_config(
        isolated,
        fake_llm,
        models={MODEL: {"limit": {"context": 12_000, "output": 2_000}}},
        compaction={"tail_tokens": 1_000},
    )
    big = (
        "python3 -c \"print('\\n'.join(f'BIG line {i} ' + ' '.join(str(i * j + 7) "
        'for j in range(12)) for i in range(550)))"'
    )
    fake_llm.script(
        ToolCalls([Call("bash", json.dumps({"command": "echo small"}))]),
        ToolCalls([Call("bash", json.dumps({"command": big}), id="call_big")]),
        Text("SHORT-SUMMARY"),
        Text("done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "make a big output")
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
    assert is_summary_request(fake_llm.requests[2])
    after = fake_llm.requests[-1]
    assert tool_pairs_ok(after)
    results = {m["tool_call_id"]: m["content"] for m in after["messages"] if m["role"] == "tool"}
    # The big step is the newest step with tool calls: kept, shortened, and pointing at
    # the full output, which the model can read back.
    shortened = results["call_big"]
    assert shortened.startswith("BIG line 0 ") and "Full output saved to: " in shortened
    # About the tail budget (1,000 tokens), counted the way the provider counts.
    assert len(shortened) // 4 <= 1_100
    saved = Path(shortened.split("Full output saved to: ", 1)[1].split("\n", 1)[0])
    assert "BIG line 549 " in saved.read_text(encoding="utf-8")
    # The original stays in the database.
    part = next(
        p
        for m in export.messages
        for p in m.parts
        if isinstance(p, ToolPart) and p.call_id == "call_big"
    )
    assert isinstance(part.state, ToolStateCompleted)
    assert "BIG line 549 " in part.state.output and part.state.shortened == shortened
    summaries = [m.info for m in export.messages if isinstance(m.info, AssistantMessage)]
    assert any(info.summary and info.restated == ["make a big output"] for info in summaries)


async def test_a_summariser_that_calls_a_tool_is_asked_again_without_tools(
    configured: FakeOpenAI,
) -> None:
    configured.script(
        Text("first answer"),
        ToolCalls([Call("bash", '{"command": "ls"}')], text=""),
        Text("REAL-SUMMARY"),
        Text("next answer"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "first question")
        result = await engine.compact(session.id)
        assert result is not None and result.outcome == "stop", result
        assert len(configured.requests) == 3, "the loop stops after the manual compaction"
        first, second = configured.requests[1:]
        assert "tool_choice" not in first and second["tool_choice"] == "none"
        await engine.prompt(session.id, "second question")
    after = conversation(configured.requests[-1])
    assert [text_of(m) for m in after[:2]] == [COMPACTION_QUESTION, "REAL-SUMMARY"]
    assert "ls" not in json.dumps(after)

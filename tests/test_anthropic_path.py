"""The Anthropic Messages path end to end: the real engine, litellm's `anthropic/` route
and the fake Anthropic server with its prefix cache (tests/fake_anthropic.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from agent_tui.config.settings import load_config
from agent_tui.events import SessionStatus
from agent_tui.provider.limits import load_model_info
from agent_tui.records import AssistantMessage, ReasoningPart
from agent_tui.tui.reasoning_part_view import ReasoningPartView
from agent_tui.usage import cost_of
from tests.conftest import write_config
from tests.engine_helpers import is_summary_request, open_engine, run_cli, text_of
from tests.fake_anthropic import (
    Call,
    FakeAnthropic,
    Text,
    ToolUse,
    overloaded,
    prompt_too_long,
    rate_limited,
    request_blocks,
    server_error,
)
from tests.tui_helpers import open_app, type_and_send, wait_for

CLAUDE = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def configure(project: Path, server: FakeAnthropic, **models: Any) -> None:
    write_config(
        project,
        server,  # type: ignore[arg-type]
        model=CLAUDE,
        provider={"anthropic": {"api_base": server.base_url, "api_key": "test-key"}},
        models={CLAUDE: {"limit": {"context": 200_000, "output": 8_000}, **models}},
    )


def bash(command: str, **kwargs: Any) -> ToolUse:
    return ToolUse([Call("bash", json.dumps({"command": command}))], **kwargs)


def lines(tag: str, count: int = 40) -> str:
    """A bash command printing `count` numbered lines tagged `tag` (~10 tokens each)."""
    return f'for i in $(seq 1 {count}); do echo "{tag} line $i of the output"; done'


def breakpoints(body: dict[str, Any]) -> int:
    return sum(block.breakpoint for block in request_blocks(body))


def prompt_of(usage: dict[str, int]) -> int:
    return (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )


def test_breakpoints_cache_share_usage_and_cost(
    isolated: Path, anthropic: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(isolated, anthropic)
    anthropic.script(*(bash(lines(f"STEP{n}")) for n in range(5)), Text("all done"))
    code, _, err = run_cli(capsys, "run", "run the five commands")
    assert code == 0, err

    assert len(anthropic.requests) == 6
    for body in anthropic.requests:
        assert 1 <= breakpoints(body) <= 4
        assert [b.get("cache_control") for b in body["system"]] == [{"type": "ephemeral"}] * 2
    # From the third step on, nearly the whole prompt is read from the cache.
    shares = [u["cache_read_input_tokens"] / prompt_of(u) for u in anthropic.usages]
    assert shares[0] == 0 and anthropic.usages[0]["cache_creation_input_tokens"] > 0
    assert all(share >= 0.8 for share in shares[2:]), shares

    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    row = json.loads(out)[0]
    code, out, _ = run_cli(capsys, "export", row["id"])
    assert code == 0
    steps = [
        AssistantMessage.model_validate(m["info"])
        for m in json.loads(out)["messages"]
        if m["info"]["role"] == "assistant"
    ]
    # What was stored per step is the provider's usage, split the same way, and priced
    # with litellm's cache read and write prices.
    prices = asyncio.run(load_model_info(CLAUDE, load_config())).prices
    assert prices.cache_read == pytest.approx(prices.input / 10)
    assert prices.cache_write == pytest.approx(prices.input * 1.25)
    assert len(steps) == 6
    for step, usage in zip(steps, anthropic.usages, strict=True):
        assert step.tokens.input == usage["input_tokens"]
        assert step.tokens.cache.read == usage["cache_read_input_tokens"]
        assert step.tokens.cache.write == usage["cache_creation_input_tokens"]
        assert step.tokens.output == usage["output_tokens"]
        assert step.cost == pytest.approx(cost_of(step.tokens, prices))
    last = anthropic.usages[-1]
    assert row["context"]["cache_read"] == last["cache_read_input_tokens"]
    assert row["context"]["cache_share"] == pytest.approx(
        round(last["cache_read_input_tokens"] * 100 / prompt_of(last), 1)
    )
    # Context % counts the whole prompt, cached or not, and the output.
    assert row["context"]["tokens"] == prompt_of(last) + last["output_tokens"]
    assert row["context"]["cost"] == pytest.approx(sum(step.cost for step in steps))
    assert row["tokens"]["cache_read"] == sum(
        u["cache_read_input_tokens"] for u in anthropic.usages
    )


async def test_cache_off_for_a_model_sends_no_breakpoints(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    configure(isolated, anthropic, cache=False)
    anthropic.script(bash("echo hi"), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "go")
    assert [breakpoints(body) for body in anthropic.requests] == [0, 0]
    assert all(u["cache_read_input_tokens"] == 0 for u in anthropic.usages)


async def test_compaction_fires_on_the_step_whose_cached_prompt_crosses_usable(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    """usable = 30,000 - 4,000. One step's answer is long enough that the whole prompt
    plus output passes usable only when the tokens written to the cache are counted."""
    configure(isolated, anthropic, limit={"context": 30_000, "output": 4_000})
    usable = 26_000
    state = {"crossed": None}

    def responder(body: dict[str, Any]) -> Any:
        if is_summary_request(body):
            return Text("SUMMARY OF THE WORK")
        prompt = sum(block.tokens for block in request_blocks(body))
        if state["crossed"] is None and prompt > 6_000:
            state["crossed"] = len(anthropic.requests) - 1
            return bash("echo long answer", output_tokens=usable - prompt + 50)
        if state["crossed"] is not None:
            return Text("finished after compaction")
        return bash(lines(f"S{len(anthropic.requests)}"))

    anthropic.responder = responder
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "keep going")
        assert result is not None and result.outcome == "stop", result
    crossed = state["crossed"]
    assert crossed is not None
    kinds = [is_summary_request(body) for body in anthropic.requests]
    assert kinds.index(True) == crossed + 1, "compaction right after the crossing step"
    usage = anthropic.usages[crossed]
    counted = prompt_of(usage) + usage["output_tokens"]
    assert counted > usable
    # Without the cache write the step would not have crossed: the write matters.
    assert counted - usage["cache_creation_input_tokens"] <= usable
    assert usage["cache_read_input_tokens"] > 0.5 * prompt_of(usage)
    # The summary request is the conversation itself plus the instruction: its prefix
    # comes from the cache (a tenth of the price) instead of being paid again.
    summarising = anthropic.usages[crossed + 1]
    assert summarising["cache_read_input_tokens"] >= 0.8 * prompt_of(summarising), summarising


async def test_a_thinking_model_calls_tools_over_three_steps(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    configure(isolated, anthropic, reasoning={"budget_tokens": 2048})
    anthropic.script(
        bash("echo one", thinking="I should list first."),
        bash("echo two", thinking="Now the second command."),
        Text("Both ran.", thinking="Time to answer."),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "think and run two commands")
        assert result is not None and result.outcome == "stop", result
        export = await engine.ctx.db.export_session(session.id)
    assert len(anthropic.requests) == 3
    for body in anthropic.requests:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    # Each earlier thinking block went back first in its assistant message, signed.
    third = anthropic.requests[2]["messages"]
    sent = [m["content"][0] for m in third if m["role"] == "assistant"]
    assert [b["type"] for b in sent] == ["thinking", "thinking"]
    assert [anthropic.signatures[b["signature"]] for b in sent] == [
        "I should list first.",
        "Now the second command.",
    ]
    reasoning = [p for m in export.messages for p in m.parts if isinstance(p, ReasoningPart)]
    assert [p.text for p in reasoning] == [
        "I should list first.",
        "Now the second command.",
        "Time to answer.",
    ]
    assert all(p.signature for p in reasoning)
    steps = [m.info for m in export.messages if isinstance(m.info, AssistantMessage)]
    assert all(step.tokens.reasoning > 0 for step in steps)


@pytest.mark.parametrize("failure", [rate_limited(0.01), overloaded(), server_error()])
async def test_retryable_errors_are_retried(
    isolated: Path, anthropic: FakeAnthropic, failure: Any
) -> None:
    configure(isolated, anthropic)
    anthropic.script(failure, failure, Text("made it"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "hello")
        assert result is not None and result.outcome == "stop", result
    assert len(anthropic.requests) == 3
    assert anthropic.usages and len(anthropic.usages) == 1


async def test_retry_after_from_anthropic_is_honoured(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    configure(isolated, anthropic)
    anthropic.script(rate_limited(0.04), Text("ok"))
    waits: list[float] = []
    async with open_engine() as engine:
        engine.ctx.bus.subscribe(
            lambda e: (
                waits.append(e.wait)
                if isinstance(e, SessionStatus) and e.status == "retrying"
                else None
            )
        )
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "hello")
    assert waits == [pytest.approx(0.04)]


async def test_prompt_too_long_compacts_and_retries_once(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    configure(isolated, anthropic)
    anthropic.script(
        bash(lines("FIRST")),
        Text("first turn done"),
        prompt_too_long(),
        Text("SUMMARY AFTER OVERFLOW"),
        Text("answered after compaction"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "first turn")
        result = await engine.prompt(session.id, "second turn")
        assert result is not None and result.outcome == "stop", result
    kinds = [is_summary_request(body) for body in anthropic.requests]
    assert kinds == [False, False, False, True, False]
    retried = anthropic.requests[4]["messages"]
    assert "SUMMARY AFTER OVERFLOW" in json.dumps(retried)
    assert text_of(retried[-1]).endswith("second turn")
    assert 1 <= breakpoints(anthropic.requests[4]) <= 4


async def test_the_sidebar_shows_the_cache_share_of_the_last_step(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    configure(isolated, anthropic, reasoning={"budget_tokens": 1024})
    anthropic.script(
        bash(lines("A"), thinking="first I look"),
        bash(lines("B")),
        Text("done", thinking="now I answer"),
    )
    app = await open_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "go")
        await wait_for(pilot, lambda: len(anthropic.usages) == 3 and app.chat.status == "idle")
        last = anthropic.usages[-1]
        share = round(last["cache_read_input_tokens"] * 100 / prompt_of(last))
        cost = str(app.query_one("#sidebar-cost", Static).render())
        assert f"cache {share}%" in cost, cost
        assert share >= 80
        # Thinking is shown as collapsed reasoning blocks, one per signed block.
        views = list(app.query(ReasoningPartView))
        assert len(views) == 2 and all(view.collapsed for view in views)
    await app.db.close()


def _without_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_marks(v) for v in value]
    return value


async def test_the_prefix_is_byte_stable_from_step_to_step(
    isolated: Path, anthropic: FakeAnthropic
) -> None:
    """Tools, system and every earlier message are sent again unchanged (breakpoints
    aside) at every step and across turns, so the cache can be read."""
    (isolated / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    configure(isolated, anthropic)
    anthropic.script(
        bash(lines("A")),
        ToolUse([Call("bash", '{"command": "echo x"}'), Call("read", '{"path": "AGENTS.md"}')]),
        Text("first turn done"),
        bash("echo second"),
        Text("second turn done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "first")
        await engine.prompt(session.id, "second")
    bodies = [_without_marks(body) for body in anthropic.requests]
    assert len(bodies) == 5
    for earlier, later in itertools.pairwise(bodies):
        assert later["tools"] == earlier["tools"]
        assert later["system"] == earlier["system"]
        sent = earlier["messages"]
        # The last message of the earlier request may grow (tool results are merged
        # with the next user text); everything before it is identical.
        assert later["messages"][: len(sent) - 1] == sent[:-1]
        last = later["messages"][len(sent) - 1]
        assert last["content"][: len(sent[-1]["content"])] == sent[-1]["content"]

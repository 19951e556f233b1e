"""The context budget the model sees: a <system-reminder> at the very end of each request
once a step has used more than `compaction.budget_reminder` of the usable window."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent_tui.budget.reminder import budget_reminder_text
from agent_tui.config.settings import Config
from agent_tui.ids import message_id, part_id, session_id
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolTime,
    UserMessage,
)
from agent_tui.step.cache import MAX_BREAKPOINTS
from agent_tui.step.request import build_request
from tests.conftest import MODEL, SMALL, write_config
from tests.engine_helpers import (
    anthropic_body,
    count_breakpoints,
    is_summary_request,
    open_engine,
)
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage

CLAUDE = "anthropic/claude-sonnet-4-5"


def bash(command: str, usage: Usage) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))], usage=usage)


REMINDER = re.compile(r"<system-reminder>Context: .*?</system-reminder>")


def reminders(request: dict[str, Any]) -> list[str]:
    """Every budget reminder anywhere in a request body (strings on the OpenAI path)."""
    found = []
    for message in request["messages"]:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"text": content or ""}]
        found += [r for b in blocks for r in REMINDER.findall(b.get("text", ""))]
    return found


def last_text(request: dict[str, Any]) -> str:
    last = request["messages"][-1]
    assert last["role"] == "user" and isinstance(last["content"], str)
    return last["content"]


def test_the_text_gives_used_usable_percent_and_threshold() -> None:
    assert budget_reminder_text(10_432, 18_000, auto=True) == (
        "<system-reminder>Context: 10432 of 18000 usable tokens used (58%). Automatic "
        "compaction at 18000 tokens; prefer offset/limit reads and grep over whole files."
        "</system-reminder>"
    )
    without = budget_reminder_text(10_432, 18_000, auto=False)
    assert "compaction" not in without and "(58%). Prefer offset/limit" in without


async def test_appears_after_a_step_past_half_of_usable_and_not_before(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models=SMALL)
    fake_llm.script(
        bash("echo one", Usage(3_800, 200)),  # 4,000: not more than half of 8,000
        bash("echo two", Usage(4_500, 200)),  # 4,700 > 4,000
        Text("done", usage=Usage(5_000, 100)),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "do the work")
        assert result is not None and result.outcome == "stop", result
        first, second, third = fake_llm.requests
        assert reminders(first) == [] and reminders(second) == []
        expected = budget_reminder_text(4_700, 8_000, auto=True)
        assert "4700 of 8000 usable tokens used (59%)" in expected
        assert "Automatic compaction at 8000 tokens" in expected
        assert reminders(third) == [expected]
        # After tool results it is a user message of its own, the last content sent.
        assert third["messages"][-2]["role"] == "tool"
        assert third["messages"][-1] == {"role": "user", "content": expected}

        # The next turn: joined to the person's message as its last block, numbers of
        # the newest step; the reminder of the earlier request is not in the history.
        fake_llm.script(Text("ok", usage=Usage(5_200, 50)))
        await engine.prompt(session.id, "and now?")
        fourth = fake_llm.requests[-1]
        assert reminders(fourth) == [budget_reminder_text(5_100, 8_000, auto=True)]
        assert last_text(fourth) == "and now?\n\n" + budget_reminder_text(5_100, 8_000, auto=True)
        assert fourth["messages"][: len(third["messages"]) - 1] == third["messages"][:-1]


async def test_not_in_summary_requests_nor_right_after_compaction(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models=SMALL)
    fake_llm.script(
        bash("echo one", Usage(4_500, 200)),
        bash("echo two", Usage(7_000, 1_100)),  # 8,100 > 8,000: compaction
        Text("SUMMARY-1", usage=Usage(7_500, 200)),
        Text("finished", usage=Usage(1_500, 20)),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
        first, second, summary, after = fake_llm.requests
        assert reminders(first) == [] and len(reminders(second)) == 1
        assert is_summary_request(summary) and reminders(summary) == []
        assert reminders(after) == []  # no finished step after the boundary yet


async def test_without_automatic_compaction_no_threshold_is_named(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, models=SMALL, compaction={"auto": False})
    fake_llm.script(bash("echo one", Usage(6_000, 0)), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
        text = last_text(fake_llm.requests[-1])
        assert text == budget_reminder_text(6_000, 8_000, auto=False)
        assert "6000 of 8000 usable tokens used (75%)" in text and "compaction" not in text


async def test_budget_reminder_zero_turns_it_off(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, models=SMALL, compaction={"budget_reminder": 0})
    fake_llm.script(bash("echo one", Usage(7_000, 500)), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
        assert len(fake_llm.requests) == 2
        assert all(reminders(request) == [] for request in fake_llm.requests)


async def test_an_unknown_window_says_nothing(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, models={MODEL: {"limit": {"context": 0}}})
    fake_llm.script(bash("echo one", Usage(70_000, 500)), Text("done"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "do the work")
        assert all(reminders(request) == [] for request in fake_llm.requests)


# -- on a Claude request: after the cache breakpoints, never in the cached prefix


def _claude_config() -> Config:
    return Config(
        model=CLAUDE,
        provider={"anthropic": {"api_base": "http://127.0.0.1:9", "api_key": "x"}},
    )


def _history(*, ends_with_tool_results: bool) -> list[MessageWithParts]:
    sid = session_id()

    def ids(message: str) -> dict[str, str]:
        return {"id": part_id(), "session_id": sid, "message_id": message}

    def user(text: str) -> MessageWithParts:
        info = UserMessage(id=message_id(), session_id=sid, model=CLAUDE)
        return MessageWithParts(info=info, parts=[TextPart(**ids(info.id), text=text)])

    first = user("fix the bug")
    step = AssistantMessage(
        id=message_id(), session_id=sid, parent_id=first.info.id, model=CLAUDE, finish="tool_calls"
    )
    state = ToolStateCompleted(
        input={"command": "ls"}, output="a.py", title="bash", time=ToolTime(start=1, end=2)
    )
    history = [
        first,
        MessageWithParts(
            info=step,
            parts=[
                TextPart(**ids(step.id), text="Looking."),
                ToolPart(**ids(step.id), call_id="toolu_1", tool="bash", state=state),
            ],
        ),
    ]
    if not ends_with_tool_results:
        answer = AssistantMessage(
            id=message_id(), session_id=sid, parent_id=first.info.id, model=CLAUDE, finish="stop"
        )
        history.append(
            MessageWithParts(info=answer, parts=[TextPart(**ids(answer.id), text="Fixed.")])
        )
        history.append(user("thanks, and the tests?"))
    return history


def _marks(body: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(message index, block index, block type) of every cache_control in the messages."""
    return [
        (m, b, block["type"])
        for m, message in enumerate(body["messages"])
        for b, block in enumerate(
            message["content"] if isinstance(message["content"], list) else []
        )
        if "cache_control" in block
    ]


def test_on_a_claude_request_the_reminder_follows_every_breakpoint(isolated: Path) -> None:
    config = _claude_config()
    reminder = budget_reminder_text(5_000, 8_000, auto=True)
    for ends_with_tool_results in (True, False):
        history = _history(ends_with_tool_results=ends_with_tool_results)
        plain, _ = build_request(history, model=CLAUDE, directory=isolated, config=config, tools=[])
        request, _ = build_request(
            history,
            model=CLAUDE,
            directory=isolated,
            config=config,
            tools=[],
            budget_reminder=reminder,
        )
        assert count_breakpoints(request.messages) == count_breakpoints(plain.messages)
        assert count_breakpoints(request.messages) <= MAX_BREAKPOINTS
        assert request.messages[-1]["content"][-1] == {"type": "text", "text": reminder}
        # Everything before the reminder is the request without it, byte for byte.
        if ends_with_tool_results:
            assert request.messages[:-1] == plain.messages
        else:
            last = request.messages[-1]
            assert {**last, "content": last["content"][:-1]} == plain.messages[-1]
            assert request.messages[:-1] == plain.messages[:-1]

        # As Anthropic receives it: the same marked blocks, the reminder last, unmarked.
        body, plain_body = anthropic_body(request.messages), anthropic_body(plain.messages)
        assert _marks(body) == _marks(plain_body) and _marks(body)
        assert len(body["messages"]) == len(plain_body["messages"])  # joined the last turn
        last_block = body["messages"][-1]["content"][-1]
        assert last_block == {"type": "text", "text": reminder}
        marked_last = max(_marks(body))
        assert marked_last[0] == len(body["messages"]) - 1
        assert marked_last[1] == len(body["messages"][-1]["content"]) - 2

"""Property: whatever the stored history looks like (queued messages, tool parts in any
state, pruned outputs, aborted steps, compactions that succeeded, failed, were cut short
or never answered), the request sent to the provider pairs every tool call with exactly
one result and alternates roles the way providers require.

Histories are generated as a sequence of realistic engine actions and materialised with
real time-ordered ids; the session's boundary (compaction_id, tail_start_id) is set the
way compaction.process sets it, and the history is read the way the loop reads it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_tui.config.settings import Config
from agent_tui.ids import message_id, part_id, session_id
from agent_tui.provider.limits import load_model_info
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    ErrorInfo,
    MessageWithParts,
    Part,
    ReasoningPart,
    Session,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.step.messages import (
    CONTINUE_TEXT,
    INTERRUPTED_OUTPUT,
    arrange_after_compaction,
    to_model_messages,
)
from agent_tui.step.request import build_request

MODEL = "openai/test-model"
DIRECTORY = Path("/nonexistent/agent-tui-property")
SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# ---- building histories -------------------------------------------------------------


@dataclass
class Builder:
    """Appends messages in time order and tracks the session boundary like the engine."""

    session: Session = field(
        default_factory=lambda: Session(id=session_id(), directory=str(DIRECTORY))
    )
    messages: list[MessageWithParts] = field(default_factory=list)
    unanswered: MessageWithParts | None = None
    """A compaction request without a summary attempt yet (crash mid-compaction)."""
    call_counter: int = 0

    # -- primitives

    def _ids(self, message: str) -> dict[str, str]:
        return {"id": part_id(), "session_id": self.session.id, "message_id": message}

    def _last_user(self) -> UserMessage:
        for message in reversed(self.messages):
            if isinstance(message.info, UserMessage):
                return message.info
        raise AssertionError("histories start with a user message")

    def user(self, text: str, *, synthetic: bool = False) -> MessageWithParts:
        info = UserMessage(id=message_id(), session_id=self.session.id, model=MODEL)
        part = TextPart(**self._ids(info.id), text=text, synthetic=synthetic)
        message = MessageWithParts(info=info, parts=[part])
        self.messages.append(message)
        return message

    def step(self, draw: st.DrawFn) -> str:
        """One assistant step; returns how it ended: tools, done or error."""
        info = AssistantMessage(
            id=message_id(),
            session_id=self.session.id,
            parent_id=self._last_user().id,
            model=MODEL,
        )
        parts: list[Part] = [StepStartPart(**self._ids(info.id))]
        if draw(st.booleans()):
            parts.append(ReasoningPart(**self._ids(info.id), text="thinking"))
        if draw(st.integers(0, 3)):  # text in 3 of 4 steps, occasionally empty
            parts.append(TextPart(**self._ids(info.id), text=draw(TEXTS)))
        unique_ids = draw(st.booleans())  # some providers number calls call_0, call_1...
        for index in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
            self.call_counter += 1
            call_id = f"call_{self.call_counter}" if unique_ids else f"call_{index}"
            parts.append(
                ToolPart(
                    **self._ids(info.id),
                    call_id=call_id,
                    tool="bash",
                    state=draw(tool_states(self.call_counter)),
                )
            )
        has_tools = any(isinstance(p, ToolPart) for p in parts)
        ending = draw(st.sampled_from(["finished", "finished", "finished", "aborted", "error"]))
        if ending == "finished":
            info.finish = "tool_calls" if has_tools else draw(st.sampled_from(["stop", "length"]))
            info.completed = info.created
            parts.append(StepFinishPart(**self._ids(info.id), reason=info.finish))
        else:
            kind = draw(st.sampled_from(["aborted", "interrupted", "stream", "server"]))
            info.error = ErrorInfo(kind=kind, message="stopped")
            info.completed = info.created if kind != "interrupted" or draw(st.booleans()) else None
        self.messages.append(MessageWithParts(info=info, parts=parts))
        if info.error:
            return "error"
        return "tools" if info.finish == "tool_calls" else "done"

    # -- compaction

    def compaction_request(self, *, auto: bool, overflow: bool) -> MessageWithParts:
        info = UserMessage(id=message_id(), session_id=self.session.id, model=MODEL)
        part = CompactionPart(**self._ids(info.id), auto=auto, overflow=overflow)
        message = MessageWithParts(info=info, parts=[part])
        self.messages.append(message)
        self.unanswered = message
        return message

    def answer_compaction(self, draw: st.DrawFn) -> None:
        """The summary attempt for the unanswered request: success, failure or cut short."""
        request = self.unanswered
        assert request is not None
        self.unanswered = None
        part = request.parts[0]
        assert isinstance(part, CompactionPart)
        info = AssistantMessage(
            id=message_id(),
            session_id=self.session.id,
            parent_id=request.info.id,
            model=MODEL,
            agent="compaction",
            summary=True,
        )
        outcome = draw(st.sampled_from(["success", "success", "failed", "aborted", "record"]))
        parts: list[Part] = [StepStartPart(**self._ids(info.id))]
        if outcome != "record":  # record_failure: a bare summary message with the error
            parts.append(TextPart(**self._ids(info.id), text=draw(SUMMARIES)))
        if outcome == "success":
            info.finish = "stop"
            info.completed = info.created
            parts.append(StepFinishPart(**self._ids(info.id), reason="stop"))
        else:
            kind = {"failed": "server", "aborted": "aborted", "record": "compaction"}[outcome]
            info.error = ErrorInfo(kind=kind, message="no summary")
            info.completed = info.created
        self.messages.append(MessageWithParts(info=info, parts=parts))
        if outcome != "success":
            return
        replay = self._move_boundary(request, part, draw)
        if replay is not None:
            self.user(replay)
        elif part.auto and draw(st.integers(0, 3)):  # the continue text may be lost in a crash
            self.user(CONTINUE_TEXT, synthetic=True)

    def _move_boundary(
        self, request: MessageWithParts, part: CompactionPart, draw: st.DrawFn
    ) -> str | None:
        """Set compaction_id/tail_start_id like compaction.process; returns the text of
        the user message replayed after an overflow compaction."""
        previous = self.session.compaction_id
        active = self._active_summary_id()
        candidates = [
            m
            for m in self.messages
            if m.info.id < request.info.id
            and (previous is None or m.info.id > previous)
            and m.info.id != active
        ]
        replay = None
        tail: list[MessageWithParts] = []
        if part.overflow:
            users = [
                m
                for m in candidates
                if isinstance(m.info, UserMessage)
                and any(isinstance(p, TextPart) and not p.synthetic for p in m.parts)
            ]
            if users:
                replay = "\n".join(
                    p.text for p in users[-1].parts if isinstance(p, TextPart) and not p.synthetic
                )
        else:
            turns: list[list[MessageWithParts]] = []
            for message in candidates:
                if isinstance(message.info, UserMessage) or not turns:
                    turns.append([message])
                else:
                    turns[-1].append(message)
            keep = draw(st.integers(0, max(len(turns) - 1, 0)))
            kept = [t for t in turns[len(turns) - keep :] if isinstance(t[0].info, UserMessage)]
            tail = kept[0] if keep and kept and len(kept) == keep else []
        self.session.compaction_id = request.info.id
        self.session.tail_start_id = tail[0].info.id if tail else None
        self._active = request.info.id
        return replay

    def _active_summary_id(self) -> str | None:
        boundary = self.session.compaction_id
        for message in self.messages:
            info = message.info
            if (
                isinstance(info, AssistantMessage)
                and info.summary
                and info.parent_id == boundary
                and info.finish
                and not info.error
            ):
                return info.id
        return None

    # -- reading it back like the loop

    def loaded(self) -> list[MessageWithParts]:
        start = self.session.history_start
        since = [m for m in self.messages if start is None or m.info.id >= start]
        return arrange_after_compaction(since, self.session)


TEXTS = st.sampled_from(["ok", "Let me look.", "Done: the tests pass.", " ", ""])
SUMMARIES = st.sampled_from(["SUMMARY of the work so far", "half a summ", ""])
PROMPTS = st.sampled_from(["fix the bug", "run the tests", "and the README?", "stop"])


@st.composite
def tool_states(draw: st.DrawFn, n: int) -> Any:
    command = {"command": f"echo {n}"}
    status = draw(st.sampled_from(["completed", "completed", "pruned", "error", "pending", "run"]))
    if status in ("completed", "pruned"):
        time = ToolTime(start=1, end=2, compacted=3 if status == "pruned" else None)
        return ToolStateCompleted(input=command, output=f"output {n}", title="bash", time=time)
    if status == "error":
        error = draw(st.sampled_from(["exit code 1", INTERRUPTED_OUTPUT, "Permission denied"]))
        return ToolStateError(input=command, error=error, time=ToolTime(start=1, end=2))
    if status == "pending":
        return ToolStatePending(input=command, raw=json.dumps(command))
    return ToolStateRunning(input=command, title="bash", time=ToolTime(start=1))


@st.composite
def histories(draw: st.DrawFn) -> Builder:
    """A session as the engine would have written it, action by action."""
    builder = Builder()
    builder.user(draw(PROMPTS))
    state = "user"
    for _ in range(draw(st.integers(0, 14))):
        choices = ["user"]
        if state in ("user", "tools"):
            choices += ["step", "step", "step"]
        if builder.unanswered is not None:
            choices += ["answer", "answer"]
        elif state != "compaction":
            choices += ["compact"]
        action = draw(st.sampled_from(choices))
        if action == "user":
            builder.user(draw(PROMPTS))  # a new prompt, or queued while the loop works
            state = "user"
        elif action == "step":
            state = builder.step(draw)
        elif action == "compact":
            auto = draw(st.booleans())
            overflow = auto and draw(st.booleans())
            if overflow:  # the step the provider refused
                builder.step(draw)
            builder.compaction_request(auto=auto, overflow=overflow)
            state = "compaction"
        else:
            builder.answer_compaction(draw)
            last = builder.messages[-1].info
            state = "user" if isinstance(last, UserMessage) else "done"
    return builder


# ---- what providers require -----------------------------------------------------------


def role_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Everything wrong with a provider message list ([] if nothing)."""
    problems: list[str] = []
    conversation = [m for m in messages if m["role"] != "system"]
    roles = [m["role"] for m in messages]
    if "system" in roles:
        first_other = next((i for i, r in enumerate(roles) if r != "system"), len(roles))
        if "system" in roles[first_other:]:
            problems.append("a system message after the conversation started")
    if not conversation:
        return [*problems, "no conversation at all"]
    if conversation[0]["role"] != "user":
        problems.append(f"first message is {conversation[0]['role']}, not user")
    expected_results: list[str] = []  # call ids still owed a result, in order
    previous: dict[str, Any] | None = None
    for index, message in enumerate(conversation):
        role = message["role"]
        if role == "tool":
            if previous is None or previous["role"] not in ("assistant", "tool"):
                problems.append(f"#{index}: tool result not after a tool call")
            elif message["tool_call_id"] not in expected_results:
                problems.append(f"#{index}: result for {message['tool_call_id']} with no call")
            else:
                expected_results.remove(message["tool_call_id"])
        else:
            if expected_results:
                problems.append(f"#{index}: calls {expected_results} have no result")
                expected_results = []
            if previous is not None and previous["role"] == role:
                problems.append(f"#{index}: two {role} messages in a row")
            if role == "user":
                content = message["content"]
                texts = [b.get("text", "x") for b in content] if isinstance(content, list) else []
                if isinstance(content, str):
                    texts = [content]
                if not texts or not all(t.strip() for t in texts):
                    problems.append(f"#{index}: user message with empty content {content!r}")
            elif role == "assistant":
                calls = [c["id"] for c in message.get("tool_calls") or []]
                if len(set(calls)) != len(calls):
                    problems.append(f"#{index}: duplicate call ids {calls}")
                if not calls and not message.get("content"):
                    problems.append(f"#{index}: assistant message with neither text nor calls")
                expected_results = list(calls)
        previous = message
    if expected_results:
        problems.append(f"end: calls {expected_results} have no result")
    return problems


def describe(builder: Builder, messages: list[dict[str, Any]]) -> str:
    """The history and the request, compactly, for a failing example."""
    lines = [
        f"session.compaction_id={builder.session.compaction_id} "
        f"tail_start_id={builder.session.tail_start_id}"
    ]
    for message in builder.messages:
        info = message.info
        parts = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append(f"text{'(synthetic)' if part.synthetic else ''}={part.text!r}")
            elif isinstance(part, ToolPart):
                pruned = " pruned" if getattr(part.state, "time", ToolTime()).compacted else ""
                parts.append(f"tool {part.call_id} {part.state.status}{pruned}")
            elif isinstance(part, CompactionPart):
                parts.append(f"compaction(auto={part.auto}, overflow={part.overflow})")
        extra = ""
        if isinstance(info, AssistantMessage):
            extra = (
                f" summary={info.summary} finish={info.finish} "
                f"error={info.error.kind if info.error else None} parent={info.parent_id[-12:]}"
            )
        lines.append(f"  {info.id[-12:]} {info.role}{extra}: {', '.join(parts)}")
    lines.append("request:")
    for message in messages:
        calls = [c["id"] for c in message.get("tool_calls") or []]
        call_text = f" calls={calls}" if calls else ""
        tool_id = f" for={message['tool_call_id']}" if message["role"] == "tool" else ""
        content = json.dumps(message.get("content"))[:80]
        lines.append(f"  {message['role']}{call_text}{tool_id}: {content}")
    return "\n".join(lines)


def config() -> Config:
    return Config.model_validate(
        {"model": MODEL, "provider": {"openai": {"api_key": "k", "api_base": "http://127.0.0.1:9"}}}
    )


# ---- the properties -------------------------------------------------------------------


@pytest.fixture(autouse=True)
def model_info_loaded() -> None:
    """The loop loads the model's info before it builds a request (build_request reads
    it without awaiting); so does this file, alone or after other tests."""
    asyncio.run(load_model_info(MODEL, config()))


@SETTINGS
@given(histories())
def test_model_messages_pair_every_call_and_alternate_roles(builder: Builder) -> None:
    messages = to_model_messages(builder.loaded())
    problems = role_problems(messages)
    assert not problems, f"{problems}\n{describe(builder, messages)}"


@SETTINGS
@given(histories(), st.booleans())
def test_the_built_request_is_valid_for_providers(builder: Builder, reminder: bool) -> None:
    history = builder.loaded()
    first_user = next((m.info.id for m in history if isinstance(m.info, UserMessage)), None)
    request, _ = build_request(
        history,
        model=MODEL,
        directory=DIRECTORY,
        config=config(),
        tools=[],
        reminder_after=first_user if reminder else None,
    )
    assert request.messages[0]["role"] == "system"
    problems = role_problems(request.messages)
    assert not problems, f"{problems}\n{describe(builder, request.messages)}"


@SETTINGS
@given(histories())
def test_the_last_step_request_is_valid_for_providers(builder: Builder) -> None:
    """On the last allowed step the loop adds an instruction to stop calling tools."""
    request, _ = build_request(
        builder.loaded(),
        model=MODEL,
        directory=DIRECTORY,
        config=config(),
        tools=[],
        final_instruction="You have reached the maximum number of steps. Summarise.",
    )
    problems = role_problems(request.messages)
    assert not problems, f"{problems}\n{describe(builder, request.messages)}"


def test_the_checker_catches_what_it_should() -> None:
    """The checker itself: each broken shape is reported."""
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "bash"}}],
    }
    result = {"role": "tool", "tool_call_id": "a", "content": "out"}
    text = {"role": "assistant", "content": "done"}
    assert role_problems([user, call, result, text]) == []
    assert role_problems([user, call, text])  # missing result
    assert role_problems([user, result, text])  # result without call
    assert role_problems([user, call, result, result])  # two results
    assert role_problems([user, user])
    assert role_problems([user, text, text])
    assert role_problems([text, user])
    assert role_problems([{"role": "user", "content": [{"type": "text", "text": " "}]}])
    assert role_problems([user, {"role": "assistant", "content": None}])

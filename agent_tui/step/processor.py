"""One model step: stream the answer into parts, run the tool calls, record usage."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Literal

from agent_tui.aborting import unless_aborted
from agent_tui.budget.overflow import threshold_tokens, usable_tokens
from agent_tui.budget.tokens import count_tokens, counter_for
from agent_tui.engine_context import EngineContext
from agent_tui.errors import ContextOverflowError, ProviderError, ToolError
from agent_tui.events import MessageUpdated, Notice, PartUpdated, SessionStatus
from agent_tui.ids import now_ms, part_id
from agent_tui.provider.api import stream_model
from agent_tui.provider.limits import ModelInfo
from agent_tui.provider.stream_events import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    ReasoningSigned,
    StepFinish,
    TextDelta,
    ToolCallReady,
    ToolCallStart,
    ToolInputDelta,
    parse_arguments,
)
from agent_tui.records import (
    AssistantMessage,
    ErrorInfo,
    FileChange,
    Part,
    PatchPart,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    Tokens,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    ToolTime,
)
from agent_tui.step import edits, step_hooks, tool_hooks
from agent_tui.step.doom_loop import repeat_refusal
from agent_tui.step.live_output import LiveOutput
from agent_tui.step.messages import INTERRUPTED_OUTPUT
from agent_tui.step.request import estimate_tokens
from agent_tui.step.retry import retry_delay, sleep_unless
from agent_tui.storage.snapshot import SnapshotError
from agent_tui.tool.base import ToolContext, ToolResult
from agent_tui.usage import cost_of

CONCURRENT_TOOLS = frozenset({"task"})
"""Tools whose consecutive calls in one step run at the same time (subagents)."""


CUT_OFF_OUTPUT = "[The stream broke off before this call was complete; it never ran]"

StepOutcome = Literal["continue", "stop", "overflow", "error", "aborted"]


class _Aborted(Exception):
    pass


def _batches(calls: list[ToolCallReady]) -> list[list[ToolCallReady]]:
    """The step's calls in order, consecutive task calls grouped to run concurrently."""
    batches: list[list[ToolCallReady]] = []
    for call in calls:
        if call.name in CONCURRENT_TOOLS and batches and batches[-1][0].name in CONCURRENT_TOOLS:
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


class StepProcessor:
    """Turns one streamed completion into stored parts and events."""

    def __init__(
        self,
        ctx: EngineContext,
        assistant: AssistantMessage,
        directory: Path,
        abort: asyncio.Event,
        model: ModelInfo,
        *,
        run_tools: bool = True,
        recent_calls: list[str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.assistant = assistant
        self.directory = directory
        self.abort = abort
        self.model = model
        self.run_tools = run_tools
        self.text: TextPart | None = None
        self.reasoning: ReasoningPart | None = None
        self.tools: dict[str, ToolPart] = {}
        self.ready: list[ToolCallReady] = []
        self.error: ProviderError | None = None
        self.recent_calls = list(recent_calls or [])
        """Signatures of the session's latest tool calls, oldest first (doom-loop check)."""
        self.doom: str | None = None
        """Set when a repeated identical call stopped the step."""
        self.halted: str | None = None
        """A hook's `continue: false`: the turn ends after this step's calls (its
        `stopReason` is for the person)."""
        self._attempt_parts: list[TextPart | ReasoningPart | ToolPart] = []
        """Parts the current attempt streamed (set aside if it breaks off and is retried)."""

    # ---- persistence helpers ----------------------------------------------------------

    async def _save(self, part: Part, delta: str | None = None, *, flush: bool = False) -> None:
        await self.ctx.db.upsert_part(part, flush=flush)
        self.ctx.publish(PartUpdated(part=part, delta=delta))

    async def _save_message(self) -> None:
        await self.ctx.db.upsert_message(self.assistant, flush=True)
        self.ctx.publish(MessageUpdated(info=self.assistant))

    def _ids(self) -> dict[str, str]:
        return {
            "id": part_id(),
            "session_id": self.assistant.session_id,
            "message_id": self.assistant.id,
        }

    # ---- the step ---------------------------------------------------------------------

    async def run(self, request: ModelRequest, estimated_input: int = 0) -> StepOutcome:
        await self._save_message()
        await self._save(StepStartPart(**self._ids()), flush=True)
        try:
            finish = await self._stream_with_retries(request)
        except _Aborted:
            await self._interrupt("Interrupted by the person.")
            return "aborted"
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._interrupt("Interrupted."))
            raise
        except ProviderError as exc:
            await self._fail(exc)
            return "overflow" if isinstance(exc, ContextOverflowError) else "error"
        if self.text is not None:
            await step_hooks.message_display(
                self.ctx, self.assistant, self.directory, self.text.text
            )
        if self.run_tools and self.ready:
            await self._run_tools()
        await self._finish(finish, request, estimated_input)
        if self.abort.is_set():
            await self._interrupt("Interrupted by the person.")
            return "aborted"
        if self.doom is not None:
            self.assistant.error = ErrorInfo(kind="doom_loop", message=self.doom)
            await self._save_message()
            return "error"
        if self.halted is not None:
            message = f"A hook stopped the agent: {self.halted}"
            session_id = self.assistant.session_id
            self.ctx.publish(Notice(session_id=session_id, level="warning", message=message))
            return "stop"
        return "continue" if self.tools and self.run_tools else "stop"

    def _halt(self, reason: str) -> None:
        self.halted = reason

    async def _stream_with_retries(self, request: ModelRequest) -> StepFinish:
        retry = self.ctx.config.retry
        attempt = 1
        while True:
            try:
                return await self._stream_abortable(request)
            except ProviderError as exc:
                if not exc.retryable or attempt >= retry.max_attempts:
                    raise
                wait = retry_delay(attempt, retry, exc.retry_after)
                attempt += 1
                kept = ""
                if self._attempt_parts:  # it streamed something
                    await self._set_aside()
                    kept = " (what it streamed is kept, marked as cut off)"
                self.ctx.publish(
                    SessionStatus(
                        session_id=self.assistant.session_id,
                        status="retrying",
                        attempt=attempt,
                        max_attempts=retry.max_attempts,
                        wait=wait,
                        message=self.ctx.redact(
                            f"{exc}{kept} — retrying in {wait:.1f} s, "
                            f"attempt {attempt}/{retry.max_attempts}"
                        ),
                    )
                )
                if await sleep_unless(self.abort, wait):
                    raise _Aborted() from exc
                self.ctx.publish(SessionStatus(session_id=self.assistant.session_id, status="busy"))

    async def _set_aside(self) -> None:
        """An attempt that streamed and then broke off is retried from the start: what it
        streamed stays in the message, marked `ignored` (never sent to the model, shown
        as cut off), and its unfinished tool calls are closed as errors, never run."""
        now = now_ms()
        for part in self._attempt_parts:
            if isinstance(part, ToolPart):
                part.state = ToolStateError(
                    input=part.state.input, error=CUT_OFF_OUTPUT, time=ToolTime(start=now, end=now)
                )
            elif part.end is None:
                part.end = now
            part.ignored = True
            await self._save(part, flush=True)
        self._attempt_parts = []
        self.text = None
        self.reasoning = None
        self.tools = {}
        self.ready = []

    async def _stream_abortable(self, request: ModelRequest) -> StepFinish:
        if (finish := await unless_aborted(self._consume(request), self.abort)) is None:
            raise _Aborted()
        return finish

    async def _consume(self, request: ModelRequest) -> StepFinish:
        async for event in stream_model(request):
            if isinstance(event, StepFinish):
                return event
            await self._handle(event)
        raise ProviderError(
            "The provider stream ended without a finish event.", retryable=True, kind="stream"
        )

    async def _handle(self, event: ProviderEvent) -> None:
        if isinstance(event, TextDelta):
            if self.text is None:
                self.text = TextPart(**self._ids(), start=now_ms())
                self._attempt_parts.append(self.text)
                self._close_reasoning()
            self.text.text += event.text
            await self._save(self.text, event.text)
        elif isinstance(event, ReasoningDelta):
            if self.reasoning is None:
                self.reasoning = ReasoningPart(**self._ids(), start=now_ms())
                self._attempt_parts.append(self.reasoning)
            self.reasoning.text += event.text
            await self._save(self.reasoning, event.text)
        elif isinstance(event, ReasoningSigned):
            await self._sign_reasoning(event)
        elif isinstance(event, ToolCallStart):
            part = ToolPart(**self._ids(), call_id=event.call_id, tool=event.name)
            self.tools[event.call_id] = part
            self._attempt_parts.append(part)
            await self._save(part)
        elif isinstance(event, ToolInputDelta):
            part = self.tools[event.call_id]
            assert isinstance(part.state, ToolStatePending)
            part.state.raw += event.delta
            await self._save(part)
        elif isinstance(event, ToolCallReady):
            part = self.tools[event.call_id]
            part.state = ToolStatePending(
                input=parse_arguments(event.arguments) or {}, raw=event.arguments
            )
            self.ready.append(event)
            await self._save(part, flush=True)

    async def _sign_reasoning(self, event: ReasoningSigned) -> None:
        """A thinking block is complete: keep its signature (or redacted data) so it can
        be sent back exactly; the next thinking text starts a new block."""
        if event.redacted is not None and self.reasoning is not None:
            self._close_reasoning()
            await self._save(self.reasoning)
            self.reasoning = None
        if self.reasoning is None:
            self.reasoning = ReasoningPart(**self._ids(), start=now_ms())
            self._attempt_parts.append(self.reasoning)
        self.reasoning.signature = event.signature or None
        self.reasoning.redacted = event.redacted
        self.reasoning.end = now_ms()
        await self._save(self.reasoning, flush=True)
        self.reasoning = None

    def _close_reasoning(self) -> None:
        if self.reasoning is not None and self.reasoning.end is None:
            self.reasoning.end = now_ms()

    # ---- tools ------------------------------------------------------------------------

    async def _track(self) -> str | None:
        """The working tree's snapshot now; None without git or when it fails (never an
        error in the loop: undo is then unavailable for this step)."""
        snapshots = self.ctx.snapshots(self.directory)
        if snapshots is None or not snapshots.available:
            return None
        try:
            return await snapshots.track()
        except (SnapshotError, OSError) as exc:
            note = f"No snapshot for undo: {exc}"
            self.ctx.publish(
                Notice(session_id=self.assistant.session_id, level="warning", message=note)
            )
            return None

    async def _patch(self, before: str | None, changed: list[str]) -> None:
        """Record what the step's tools changed: the snapshot trees and the changed paths
        (every change, bash included, when snapshots work; else what edit/write reported)."""
        after = await self._track() if before is not None else None
        snapshots = self.ctx.snapshots(self.directory)
        changes: list[FileChange] = []
        if before is not None and after is not None and snapshots is not None:
            with contextlib.suppress(SnapshotError):
                changes = await snapshots.changes(before, after)
                changed = [c.path for c in changes]
        if changed:
            patch = PatchPart(
                **self._ids(), files=changed, changes=changes, before=before, after=after
            )
            await self._save(patch, flush=True)

    async def _run_tools(self) -> None:
        """Run the step's calls in order; consecutive task calls (subagents) run at the
        same time, each saving its own part."""
        self._changed: list[str] = []
        self._redacted = 0
        before = await self._track()
        for batch in _batches(self.ready):
            if self.abort.is_set() or self.doom is not None or self.halted is not None:
                break
            if len(batch) == 1:
                await self._run_call(batch[0])
            else:
                await asyncio.gather(*(self._run_call(call) for call in batch))
        await self._patch(before, self._changed)
        if self._redacted:
            self.ctx.note_redactions(self.assistant.session_id, self._redacted)
        if not (self.abort.is_set() or self.doom is not None or self.halted is not None):
            await self._after_batch()

    async def _after_batch(self) -> None:
        """PostToolBatch, once every call of the step is done: what its hooks say goes
        after the last call's result, and a hook may stop the agent here."""
        parts = [self.tools[call.call_id] for call in self.ready]
        answer = await step_hooks.tool_batch(
            self.ctx, self.assistant.session_id, self.directory, parts
        )
        if answer.note:
            step_hooks.add_note(parts[-1], answer.note)
            await self._save(parts[-1], flush=True)
        if answer.stop is not None:
            self._halt(answer.stop)

    async def _run_call(self, call: ToolCallReady) -> None:
        part = self.tools[call.call_id]
        start = now_ms()
        state_input = part.state.input
        part.state = ToolStateRunning(
            input=state_input, title=call.name, time=ToolTime(start=start)
        )
        await self._save(part, flush=True)
        tool_ctx = self.ctx.tool_context(
            self.assistant.session_id,
            self.assistant.id,
            self.directory,
            call_id=call.call_id,
            abort=self.abort,
        )
        tool_ctx.progress = LiveOutput(part, self.ctx.publish, self.ctx.redact).feed
        if await self._refused_as_repeat(call, part, tool_ctx):
            return
        try:
            call = await tool_hooks.before(
                self.ctx, self.assistant.session_id, self.directory, call, tool_ctx, self._halt
            )
            state_input = parse_arguments(call.arguments) or state_input  # what runs
            result = await self._run_hooked(call, tool_ctx)
        except Exception as exc:  # a ToolError, or a tool bug that must not kill the session
            text = str(exc)
            if not isinstance(exc, ToolError):
                text = f"The {call.name} tool failed: {type(exc).__name__}: {exc}"
            error, count = self.ctx.redact.redact(text)
            self._redacted += count
            part.state = ToolStateError(
                input=state_input, error=error, time=ToolTime(start=start, end=now_ms())
            )
        else:
            self._redacted += result.metadata.get("redacted", 0)
            part.state = ToolStateCompleted(
                input=state_input,
                output=result.output,
                title=result.title,
                metadata=result.metadata,
                time=ToolTime(start=start, end=now_ms()),
                attachments=result.attachments,
            )
            files = result.metadata.get("files") if call.name in edits.FILE_CHANGING_TOOLS else None
            if isinstance(files, list):
                self._changed.extend(f for f in files if f not in self._changed)
        await self._save(part, flush=True)

    async def _refused_as_repeat(
        self, call: ToolCallReady, part: ToolPart, tool_ctx: ToolContext
    ) -> bool:
        """The same call too many times in a row (doom loop): refused, and saved so."""
        state = part.state
        assert isinstance(state, ToolStateRunning)
        doom = await repeat_refusal(
            self.ctx,
            self.assistant.session_id,
            self.recent_calls,
            call.name,
            state.input,
            call.arguments,
            tool_ctx.permissions,
        )
        if doom is None:
            return False
        self.doom = doom
        time = ToolTime(start=state.time.start, end=now_ms())
        part.state = ToolStateError(input=state.input, error=doom, time=time)
        await self._save(part, flush=True)
        return True

    async def _run_hooked(self, call: ToolCallReady, tool_ctx: ToolContext) -> ToolResult:
        """The call, after the person's PreToolUse hooks, and its PostToolUse hooks (or
        PostToolUseFailure ones when it fails as it runs)."""
        session_id = self.assistant.session_id
        watched = await edits.watch(self.ctx, self.directory, call)
        registry = self.ctx.registry
        tool, params = await registry.admit(call.name, call.arguments, tool_ctx)
        before = await tool_hooks.original(self.ctx, self.directory, call)
        start = now_ms()
        try:
            result = await registry.execute(tool, params, tool_ctx)
        except ToolError as exc:  # PostToolUseFailure hooks may add to its error
            error, _ = self.ctx.redact.redact(str(exc))
            failure = (error, self.abort.is_set(), now_ms() - start)
            added = await tool_hooks.failed(
                self.ctx, session_id, self.directory, call, failure, self._halt
            )
            if not added:
                raise
            raise ToolError(f"{exc}\n\n{added}") from exc
        ran = (result, before, now_ms() - start)
        notes = await edits.notes_after(
            self.ctx, session_id, self.directory, call, result, watched, tool_ctx.read_only
        )
        added = await tool_hooks.after(self.ctx, session_id, self.directory, call, ran, self._halt)
        if extra := ([*notes, added] if added else notes):
            result = result.model_copy(update={"output": "\n\n".join([result.output, *extra])})
        return result

    # ---- endings ----------------------------------------------------------------------

    def _estimate_usage(self, request: ModelRequest, estimated_input: int) -> Tokens:
        output = "".join(p.text for p in (self.text, self.reasoning) if p is not None)
        output += "".join(
            p.state.raw if isinstance(p.state, ToolStatePending) else ""
            for p in self.tools.values()
        )
        return Tokens(input=estimated_input, output=count_tokens(output, request.model))

    async def _finish(
        self, finish: StepFinish, request: ModelRequest, estimated_input: int
    ) -> None:
        now = now_ms()
        self._close_reasoning()
        if self.text is not None:
            self.text.end = now
            await self._save(self.text)
        if self.reasoning is not None:
            await self._save(self.reasoning)
        tokens = finish.usage
        if not finish.has_usage:  # counted locally: load the tokenizer off the event loop
            await asyncio.to_thread(counter_for, request.model)
            if not estimated_input:
                estimated_input = estimate_tokens(request.messages, request.tools, request.model)
            tokens = self._estimate_usage(request, estimated_input)
        cost = cost_of(tokens, self.model.prices)
        await self._save(
            StepFinishPart(**self._ids(), reason=finish.reason, tokens=tokens, cost=cost)
        )
        self.assistant.tokens = tokens
        self.assistant.cost = cost
        self.assistant.finish = finish.reason
        self.assistant.completed = now
        self.assistant.context_limit = self.model.limit.context
        compaction = self.ctx.config.compaction
        self.assistant.context_usable = usable_tokens(self.model.limit, compaction)
        self.assistant.context_threshold = threshold_tokens(self.model.limit, compaction)
        await self._save_message()

    async def _interrupt(self, message: str, kind: str = "aborted") -> None:
        """Keep streamed text; tools not finished become 'interrupted' errors."""
        now = now_ms()
        for part in self.tools.values():
            if not isinstance(part.state, (ToolStateCompleted, ToolStateError)):
                part.state = ToolStateError(
                    input=part.state.input,
                    error=INTERRUPTED_OUTPUT,
                    time=ToolTime(
                        start=getattr(getattr(part.state, "time", None), "start", None) or now,
                        end=now,
                    ),
                )
                await self._save(part)
        for part in (self.text, self.reasoning):
            if part is not None and part.end is None:
                part.end = now
                await self._save(part)
        self.assistant.error = ErrorInfo(kind=kind, message=message)
        self.assistant.completed = now
        await self._save_message()

    async def _fail(self, exc: ProviderError) -> None:
        self.error = exc
        message = self.ctx.redact(str(exc))  # providers echo parts of rejected keys
        await self._interrupt(message, exc.kind)

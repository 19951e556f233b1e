"""The session loop: read history after the boundary -> decide -> call or compact -> repeat."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui import paths
from agent_tui.agents import BUILD, AgentInfo
from agent_tui.budget.overflow import fits, is_overflow
from agent_tui.budget.reminder import budget_reminder_for
from agent_tui.budget.tokens import counter_for, counter_ready
from agent_tui.config import ReasoningConfig
from agent_tui.context import compaction, prepared, prune
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError, ContextOverflowError, ProviderError
from agent_tui.events import Notice, PlanProposed, SessionError, SessionStatus
from agent_tui.ids import message_id
from agent_tui.provider import windows
from agent_tui.provider.events import ModelRequest
from agent_tui.provider.limits import ModelInfo, load_model_info
from agent_tui.step.doom_loop import call_signature
from agent_tui.step.history import load_history, model_of
from agent_tui.step.plan import proposed_plan
from agent_tui.step.processor import StepOutcome, StepProcessor
from agent_tui.step.request import (
    SCALE_BOUNDS,
    build_request,
    estimate_next,
    estimate_tokens,
    provider_scale,
    size_bound,
)
from agent_tui.step.system import instructions_read_once
from agent_tui.storage.models import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    ToolPart,
    UserMessage,
)
from agent_tui.storage.recovery import INTERRUPTED_KIND
from agent_tui.tool.registry import ToolRegistry

__all__ = ["LoopResult", "SessionLoop", "load_history", "model_of"]

# Compactions in one loop without a successful model step in between: past this the
# history cannot be made to fit, so stop instead of summarising forever.
MAX_COMPACTIONS_WITHOUT_PROGRESS = 2


@dataclass
class LoopResult:
    outcome: StepOutcome | str = "stop"
    error: str | None = None
    steps: int = 0
    compactions: int = 0
    notes: list[str] = field(default_factory=list)
    plan: str | None = None
    """The plan the plan agent proposed with plan_exit; the loop stopped after it."""
    max_steps_reached: bool = False
    """The last step allowed (agent or config max_steps) ran: told to stop calling tools."""


def _latest(history: list[MessageWithParts], role: str) -> MessageWithParts | None:
    candidates = [m for m in history if m.info.role == role]
    return max(candidates, key=lambda m: m.info.id) if candidates else None


def _finished_after(history: list[MessageWithParts], session: Session) -> AssistantMessage | None:
    """The newest finished normal step after the latest compaction (not the summary)."""
    boundary = session.compaction_id or ""
    best: AssistantMessage | None = None
    for message in history:
        info = message.info
        if (
            isinstance(info, AssistantMessage)
            and info.finish
            and not info.summary
            and info.id > boundary
            and (best is None or info.id > best.id)
        ):
            best = info
    return best


def _pending_compaction(
    history: list[MessageWithParts],
) -> tuple[MessageWithParts, CompactionPart] | None:
    """The newest compaction request with no summary attempt yet. Usually the newest
    user message; after a crash mid-compaction (the half summary is discarded on resume)
    it may be older, and is still processed first."""
    answered = {
        m.info.parent_id for m in history if isinstance(m.info, AssistantMessage) and m.info.summary
    }
    for message in sorted(history, key=lambda m: m.info.id, reverse=True):
        if not isinstance(message.info, UserMessage) or message.info.id in answered:
            continue
        for part in message.parts:
            if isinstance(part, CompactionPart):
                return message, part
    return None


def _recent_calls(history: list[MessageWithParts], limit: int) -> list[str]:
    """Signatures of the newest `limit` tool calls, oldest first."""
    found: list[str] = []
    for message in reversed(history):
        for part in reversed(message.parts):
            if isinstance(part, ToolPart):
                found.append(call_signature(part.tool, part.state.input))
                if len(found) >= limit:
                    return found[::-1]
    return found[::-1]


class SessionLoop:
    def __init__(
        self,
        ctx: EngineContext,
        session_id: str,
        abort: asyncio.Event,
        *,
        agent: AgentInfo | None = None,
    ) -> None:
        self.ctx = ctx
        self.session_id = session_id
        self.abort = abort
        self.agent = agent
        """A subagent's run: this agent for every step, on `ctx.registry` as given (its
        view). None: each user message's own agent, with that agent's tools."""
        self.result = LoopResult()
        self._plan_after: str | None = None
        self._loop_start_user: str | None = None
        self._overflow_retried = False
        self._compactions_since_step = 0
        self._scale = 1.0
        """How the provider counts over the local count, as the last overflow check found."""
        self._noted_unknown: set[str] = set()

    def _status(self, status: str, message: str | None = None) -> None:
        self.ctx.publish(
            SessionStatus(
                session_id=self.session_id,
                status=status,  # type: ignore[arg-type]
                message=message,
            )
        )

    def _stop(self, outcome: str, error: str | None = None) -> None:
        self.result.outcome = outcome
        self.result.error = error
        if error:
            self.ctx.publish(SessionError(session_id=self.session_id, kind=outcome, message=error))

    def _agent(self, name: str, directory: Path) -> tuple[AgentInfo, ToolRegistry]:
        """The agent a user message was sent to, and its registry (tools, permissions)."""
        if self.agent is not None:
            return self.agent, self.ctx.registry
        catalog = self.ctx.agent_catalog(directory)
        agent = catalog.get(name)
        if agent is None or not agent.primary:
            if name not in self._noted_unknown:
                self._noted_unknown.add(name)
                note = f"No primary agent named {name!r} any more: the build agent answers."
                self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))
            agent = catalog.get(BUILD)
            assert agent is not None  # built in, never removed
        registry = self.ctx.agent_registry(agent)
        effort = self.ctx.reasoning_efforts.get(self.session_id)
        if effort is not None:  # the person's choice wins over the agent's and the model's
            agent = dataclasses.replace(agent, reasoning=ReasoningConfig(effort=effort))
        return agent, registry

    async def _model(self, model_id: str) -> ModelInfo:
        """The model's limits; a served model's window is asked from its server first
        (cached: a question only until the server's answer is settled)."""
        served = await windows.discover_window(model_id, self.ctx.config)
        if self.ctx.config.compaction.model:  # the summariser's, for compactions
            await load_model_info(self.ctx.config.compaction.model, self.ctx.config)
        info = await load_model_info(model_id, self.ctx.config)
        note = None
        if served is not None and served.truncates:
            note = windows.ollama_advice(model_id, served)
        elif not info.known:
            note = windows.unknown_window_note(model_id, self.ctx.config)
        if note is not None and note not in self._noted_unknown:
            self._noted_unknown.add(note)
            self.result.notes.append(note)
            self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))
        return info

    async def _learn_window(self, model: ModelInfo, error: ProviderError | None) -> None:
        """An overflow error that names the window teaches it (kept in the data dir for
        the next runs): the compaction that follows, and every later step, use it."""
        window = error.window if isinstance(error, ContextOverflowError) else None
        if window is None or not await windows.learn_window(
            model.id, self.ctx.config, window, str(error)
        ):
            return
        note = (
            f"The server says the context window of {model.id} is {window:,} tokens; "
            f'remembered for the next runs (set models."{model.id}".limit.context to '
            "change it). Compacting to fit."
        )
        self.result.notes.append(note)
        self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))

    async def _estimate(
        self,
        history: list[MessageWithParts],
        request: ModelRequest,
        finished: AssistantMessage | None,
        model: ModelInfo,
        directory: Path,
    ) -> int:
        """The next request's size for the overflow check (the scale it was counted with
        is kept in `_scale`). Loading a tokenizer takes 0.15-0.5 s; on a session's first
        step, when even the byte count of the request fits, the count is left to after the
        reply (0: the processor counts it if the provider reports no usage), so the first
        request leaves without waiting for the load.

        What is counted locally is scaled up by how the provider counted the last step
        (`provider_scale`) when that could decide: a local model's tokenizer can make 1.7x
        the tokens of ours (SmolLM2), and a llama-cpp-python server that gets more than
        its window only ends the stream, without a word of why. Never down: a compaction
        a little early costs less than a request the server cuts."""
        config = self.ctx.config.compaction
        self._scale = 1.0
        if not counter_ready(request.model):
            if finished is None and fits(
                size_bound(request.messages, request.tools), model.limit, config
            ):
                return 0
            await asyncio.to_thread(counter_for, request.model)
        estimate = estimate_next(history, request, finished)
        if finished is None or fits(int(estimate * SCALE_BOUNDS[1]), model.limit, config):
            # No step since the last compaction: the newest step's prompt was the history
            # before it, not a measure of this one. Or it fits however the provider counts.
            return estimate
        scale = provider_scale(
            history,
            model=request.model,
            directory=directory,
            config=self.ctx.config,
            tools=request.tools,
        )
        self._scale = max(scale, 1.0)
        return estimate_next(history, request, finished, self._scale)

    async def run(self) -> LoopResult:
        # Parts left pending/running by a crash become "interrupted"; a half-written
        # summary is discarded so its compaction request is processed again.
        await self.ctx.db.interrupted_parts_cleanup(self.session_id)
        await self.ctx.db.discard_unfinished_summaries(self.session_id)
        self._status("busy")
        try:
            with instructions_read_once():  # AGENTS.md etc.: read once per run, not per step
                await self._run()
            if self.result.plan and self.result.outcome == "stop":
                self.ctx.publish(PlanProposed(session_id=self.session_id, plan=self.result.plan))
        finally:
            if self.ctx.config.compaction.prune and not self.abort.is_set():
                session = await self.ctx.db.get_session(self.session_id)
                history = await load_history(self.ctx, session)
                await prune.prune(self.ctx, history, model_of(history, self.ctx.config.model))
            await self.ctx.db.flush()
            self._status("idle")
        return self.result

    async def _run(self) -> None:
        config = self.ctx.config
        while True:
            if self.abort.is_set():
                return self._stop("aborted")
            session = await self.ctx.db.get_session(self.session_id)
            history = await load_history(self.ctx, session)
            last_user = _latest(history, "user")
            if last_user is None:
                return self._stop("stop")
            last_assistant = _latest(history, "assistant")
            if self._loop_start_user is None:
                self._loop_start_user = last_user.info.id
            if self._plan_after is not None:
                if last_user.info.id == self._plan_after:
                    return self._stop("stop")  # the person answers the plan
                self._plan_after = None  # a message arrived meanwhile: answer it
            if last_assistant is not None and last_assistant.info.id > last_user.info.id:
                info = last_assistant.info
                assert isinstance(info, AssistantMessage)
                # A summary answers its compaction request; it ends the loop only when
                # no newer user message waits (a request left by a crash may be older).
                # A step answers the newest message only if it read it: a message saved
                # after the step started (another process, or mentions still being read)
                # can carry an older id than the step's.
                if info.summary:
                    answered_latest = info.parent_id == last_user.info.id
                else:
                    answered_latest = info.parent_id >= last_user.info.id
                # A step cut off by its process's death is resumed, not taken as the end
                # (a loop of another process that was answering this one's message).
                crashed = info.error is not None and info.error.kind == INTERRUPTED_KIND
                final = (info.error and not crashed) or info.finish not in (None, "tool_calls")
                if answered_latest and final:
                    return self._stop(self.result.outcome if self.result.steps else "stop")
            assert isinstance(last_user.info, UserMessage)
            agent, registry = self._agent(last_user.info.agent, Path(session.directory))
            model_id = last_user.info.model or agent.model or config.model
            model = await self._model(model_id)

            pending = _pending_compaction(history)
            if pending is not None:
                request_msg, request_part = pending
                if not await self._compact(session, history, request_msg, request_part, model):
                    return None
                # The history restarts at the summary: what follows it (a replayed or
                # "continue" message) is the new start of this loop, not a queued message.
                self._loop_start_user = None
                continue

            finished = _finished_after(history, session)
            if (
                config.compaction.auto
                and finished is not None
                and is_overflow(finished.tokens, model.limit, config.compaction)
            ):
                if await self._prune_or_compact(session, history, model, last_user):
                    continue

            self.result.steps += 1
            last_step = self.result.steps >= (agent.max_steps or config.max_steps)
            self.result.max_steps_reached = last_step
            tools = [] if last_step else registry.definitions()
            request, notes = build_request(
                history,
                model=model_id,
                directory=Path(session.directory),
                config=config,
                tools=tools,
                session_id=session.id,
                reminder_after=self._loop_start_user,
                final_instruction=paths.read_prompt("max_steps.txt") if last_step else None,
                budget_reminder=budget_reminder_for(finished, model.limit, config.compaction),
                agent=agent,
            )
            for note in notes:
                self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))
            estimate = await self._estimate(
                history, request, finished, model, Path(session.directory)
            )
            if config.compaction.auto and not fits(estimate, model.limit, config.compaction):
                # Near the threshold: count everything locally before deciding (a prune
                # since the last step makes the quick estimate too high).
                local = estimate_tokens(request.messages, request.tools, model_id)
                estimate = int(local * self._scale)
                if (
                    not fits(estimate, model.limit, config.compaction)
                    and self._compactions_since_step < MAX_COMPACTIONS_WITHOUT_PROGRESS
                ):
                    self.result.steps -= 1
                    if await self._prune_or_compact(session, history, model, last_user):
                        continue

            assistant = AssistantMessage(
                id=message_id(),
                session_id=self.session_id,
                parent_id=last_user.info.id,
                model=model_id,
                agent=agent.name,
            )
            step_ctx = self.ctx
            if registry is not self.ctx.registry:
                step_ctx = copy.copy(self.ctx)  # the same engine; this agent's tools
                step_ctx.registry = registry
            processor = StepProcessor(
                step_ctx,
                assistant,
                Path(session.directory),
                self.abort,
                model,
                recent_calls=_recent_calls(history, config.doom_loop),
            )
            outcome = await processor.run(request, estimate)
            if self._prepare_after(outcome) and prepared.wanted(self.ctx, assistant, model):
                prepared.start(self.ctx, assistant, model, agent.name)
            if not counter_ready(model_id):  # deferred by _estimate: load it now, off the loop
                await asyncio.to_thread(counter_for, model_id)
            self.result.outcome = outcome
            plan = proposed_plan(processor.tools.values()) if outcome == "continue" else None
            if plan:
                self.result.plan = plan
                self._plan_after = last_user.info.id
            if outcome == "overflow":
                await self._learn_window(model, processor.error)
                if self._overflow_retried or not config.compaction.auto:
                    detail = assistant.error.message if assistant.error else "Context overflow."
                    return self._stop("error", f"{detail} {compaction.OVERFLOW_ADVICE}")
                self._overflow_retried = True
                await compaction.create_request(
                    self.ctx,
                    self.session_id,
                    auto=True,
                    overflow=True,
                    model=model_id,
                    agent=agent.name,
                )
                continue
            if outcome == "error":
                return self._stop("error", assistant.error.message if assistant.error else None)
            if outcome == "aborted":
                return self._stop("aborted")
            self._compactions_since_step = 0
            self._overflow_retried = False
            await self.ctx.db.touch_session(self.session_id)

    def _prepare_after(self, outcome: str) -> bool:
        """Prepare a summary while the agent works on (more steps follow), or while the
        person reads the answer in a process that stays (not `run`, which exits)."""
        return outcome == "continue" or (
            outcome == "stop" and self.ctx.front_end != "agent-tui run"
        )

    async def _prune_or_compact(
        self,
        session: Session,
        history: list[MessageWithParts],
        model: ModelInfo,
        last_user: MessageWithParts,
    ) -> bool:
        """Over budget: prune first; if that is not enough, queue an automatic compaction.
        Returns True when the loop should re-read the history."""
        config = self.ctx.config
        if config.compaction.prune:
            freed = await prune.prune(self.ctx, history, model.id)
            if freed:
                fresh = await load_history(self.ctx, await self.ctx.db.get_session(session.id))
                request, _ = build_request(
                    fresh,
                    model=model.id,
                    directory=Path(session.directory),
                    config=config,
                    tools=self.ctx.registry.definitions(),
                    session_id=session.id,
                )
                # The scale the overflow was found with: measured after a prune, the last
                # step's prompt (unpruned) over a pruned count would look like a scale.
                local = estimate_tokens(request.messages, request.tools, model.id)
                if fits(int(local * self._scale), model.limit, config.compaction):
                    return True
        if self._compactions_since_step >= MAX_COMPACTIONS_WITHOUT_PROGRESS:
            self._stop("error", compaction.NO_PROGRESS_MESSAGE)
            return False
        assert isinstance(last_user.info, UserMessage)
        await compaction.create_request(
            self.ctx, self.session_id, auto=True, model=model.id, agent=last_user.info.agent
        )
        return True

    async def _compact(
        self,
        session: Session,
        history: list[MessageWithParts],
        request_msg: MessageWithParts,
        part: CompactionPart,
        model: ModelInfo,
    ) -> bool:
        self._compactions_since_step += 1
        self.result.compactions += 1
        if self._compactions_since_step > MAX_COMPACTIONS_WITHOUT_PROGRESS:
            self._stop("error", compaction.NO_PROGRESS_MESSAGE)
            return False
        self._status("compacting")
        try:
            outcome = await compaction.process(
                self.ctx, session, history, request_msg, part, model, self.abort
            )
        except CompactionError as exc:
            # Recorded as a failed summary, so the request is not retried for ever.
            await compaction.record_failure(self.ctx, request_msg, model.id, str(exc))
            self._stop("error", str(exc))
            return False
        finally:
            self._status("busy")
        if outcome != "stop":
            self._stop(outcome, None if outcome == "aborted" else "Compaction failed.")
            return False
        return True

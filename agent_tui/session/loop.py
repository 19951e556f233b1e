"""The session loop: read history after the boundary -> decide -> call or compact -> repeat."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui import paths
from agent_tui.budget.overflow import is_overflow, under_threshold
from agent_tui.budget.reminder import budget_reminder_for
from agent_tui.budget.tokens import counter_for, counter_ready
from agent_tui.config.settings import ReasoningConfig
from agent_tui.context import compaction, prepare_lead, prepared, prune
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError, ContextOverflowError, ProviderError
from agent_tui.events import Notice, PlanProposed, SessionError, SessionStatus
from agent_tui.ids import message_id
from agent_tui.project.agents import BUILD, AgentInfo
from agent_tui.provider import windows
from agent_tui.provider.limits import ModelInfo, load_with_summariser
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    UserMessage,
)
from agent_tui.session import instructions_loaded, task_notices
from agent_tui.session.decide import (
    Step,
    Stop,
    Turn,
    answered,
    finished_after,
    latest,
    pending_compaction,
    recent_calls,
)
from agent_tui.step.history import load_history, model_of
from agent_tui.step.plan import proposed_plan
from agent_tui.step.processor import StepOutcome, StepProcessor
from agent_tui.step.request import (
    SCALE_BOUNDS,
    build_request,
    estimate_next,
    estimate_tokens,
    history_tokens,
    next_size_bound,
    provider_scale,
)
from agent_tui.step.system import instructions_read_once
from agent_tui.tool.registry import ToolRegistry

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
    failure: str | None = None
    """The kind of the provider error that ended the loop (provider/provider_errors.py),
    which StopFailure hooks hear of; None when none did."""


@dataclass
class SessionLoop:
    ctx: EngineContext
    session_id: str
    abort: asyncio.Event
    agent: AgentInfo | None = field(default=None, kw_only=True)
    """A subagent's run: this agent for every step, on `ctx.registry` as given (its
    view). None: each user message's own agent, with that agent's tools."""
    result: LoopResult = field(default_factory=LoopResult, init=False)
    _plan_after: str | None = field(default=None, init=False)
    _loop_start_user: str | None = field(default=None, init=False)
    _overflow_retried: bool = field(default=False, init=False)
    _compactions_since_step: int = field(default=0, init=False)
    _scale: float = field(default=1.0, init=False)
    """How the provider counts over the local count, as the last overflow check found."""
    _noted_unknown: set[str] = field(default_factory=set, init=False)
    _told: set[str] = field(default_factory=set, init=False)
    """Notes about the request (an instruction file skipped) already shown in this run:
    each step builds the request again, the person is told once."""

    def _status(self, status: str) -> None:
        self.ctx.publish(SessionStatus(session_id=self.session_id, status=status))  # type: ignore[arg-type]

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
        if (agent := catalog.get(name)) is None or not agent.primary:
            if name not in self._noted_unknown:
                self._noted_unknown.add(name)
                note = f"No primary agent named {name!r} any more: the build agent answers."
                self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))
            agent = catalog.get(BUILD)
            assert agent is not None  # built in, never removed
        registry = self.ctx.registry.for_agent(agent, self.ctx.permission_modes)
        effort = self.ctx.live(self.session_id).reasoning_effort
        if effort is not None:  # the person's choice wins over the agent's and the model's
            agent = dataclasses.replace(agent, reasoning=ReasoningConfig(effort=effort))
        return agent, registry

    async def _model(self, model_id: str) -> ModelInfo:
        """The model's limits; a served model's window is asked from its server first
        (cached: a question only until the server's answer is settled)."""
        served = await windows.discover_window(model_id, self.ctx.config)
        info = await load_with_summariser(model_id, self.ctx.config)
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
        is kept in `_scale`). Loading a tokenizer takes a while; while it is not loaded
        and even a byte count fits (the request's in a new session; in a continued one,
        the last step's usage plus the bytes of what came after it, scaled as far as the
        provider's count could be), the count is left to after the reply (0: the
        processor counts it if the provider reports no usage), so a process's first
        request, new session or continued, leaves without waiting for the load.

        What is counted locally is scaled up by how the provider counted the last step
        (`provider_scale`) when that could decide: a local model's tokenizer can make 1.7x
        the tokens of ours (SmolLM2), and a llama-cpp-python server that gets more than
        its window only ends the stream, without a word of why. Never down: a compaction
        a little early costs less than a request the server cuts."""
        config = self.ctx.config.compaction
        self._scale = 1.0
        if not counter_ready(request.model):
            scale = 1.0 if finished is None else SCALE_BOUNDS[1]
            bound = next_size_bound(history, request, finished, scale)
            if under_threshold(bound, model.limit, config):
                return 0
            await asyncio.to_thread(counter_for, request.model)
        estimate = estimate_next(history, request, finished)
        if finished is None or under_threshold(
            int(estimate * SCALE_BOUNDS[1]), model.limit, config
        ):
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
        """Read the session and decide whether to stop, apply a pending compaction, make
        the history fit, take one step, act on its outcome; until something stops it."""
        while True:
            try:
                turn = await self._read()
                agent, registry = self._agent(turn.user.agent, turn.directory)
                model = await self._model(turn.user.model or agent.model or self.ctx.config.model)
                if await self._compact_pending(turn, model) or await self._make_room(turn, model):
                    continue  # the history changed: read it again
                if await task_notices.deliver(self.ctx, turn):
                    continue  # a background command ended: the model reads it this step
                if (step := await self._next_step(turn, agent, registry, model)) is not None:
                    await self._take_step(turn, step)
            except Stop as stop:
                return self._stop(stop.outcome, stop.error)

    async def _read(self) -> Turn:
        """The session as it is now; Stop when the loop is done with it."""
        if self.abort.is_set():
            raise Stop("aborted")
        session = await self.ctx.db.get_session(self.session_id)
        self._follow_into_worktree(session)
        history = await load_history(self.ctx, session)
        if (last_user := latest(history, "user")) is None:
            raise Stop("stop")
        assert isinstance(last_user.info, UserMessage)
        if self._loop_start_user is None:
            self._loop_start_user = last_user.info.id
        if self._plan_after is not None:
            if last_user.info.id == self._plan_after:
                raise Stop("stop")  # the person answers the plan
            self._plan_after = None  # a message arrived meanwhile: answer it
        if answered(latest(history, "assistant"), last_user):
            raise Stop(self.result.outcome if self.result.steps else "stop")
        finished = finished_after(history, session)
        return Turn(session, history, last_user, finished)

    def _follow_into_worktree(self, session: Session) -> None:
        """A session moved into a worktree (the enter_worktree tool) runs in the
        worktree's project from its next step: its config, sandbox root and hooks."""
        directory = Path(session.directory).resolve()
        if session.worktree is not None and directory != self.ctx.workspace.directory:
            self.ctx = self.ctx.in_project(directory).with_session_tools(self.session_id)

    async def _compact_pending(self, turn: Turn, model: ModelInfo) -> bool:
        """A compaction request waiting (the person's, or queued by `_make_room`) is
        processed first. True when one was."""
        if (pending := pending_compaction(turn.history)) is None:
            return False
        await self._compact(turn, *pending, model)
        # The history restarts at the summary: what follows it (a replayed or "continue"
        # message) is the new start of this loop, not a queued message.
        self._loop_start_user = None
        return True

    async def _make_room(self, turn: Turn, model: ModelInfo) -> bool:
        """The last step overflowed the threshold: prune or queue a compaction. True
        when the history changed."""
        finished = turn.finished
        if not self.ctx.config.compaction.auto or finished is None:
            return False
        if not is_overflow(finished.tokens, model.limit, self.ctx.config.compaction):
            return False
        await self._prune_or_compact(turn, model)
        return True

    async def _next_step(
        self, turn: Turn, agent: AgentInfo, registry: ToolRegistry, model: ModelInfo
    ) -> Step | None:
        """The next request and its estimated size; None when it would not fit and the
        history was pruned or compacted instead (read it again)."""
        config = self.ctx.config
        opened_past = self.result.steps == 0 and turn.finished is not None
        if opened_past and await prepare_lead.wanted(self.ctx, turn.finished, model, turn.history):
            # The session was left past the start (by an earlier command): before this
            # command's first step, not after it.
            prepared.start(self.ctx, turn.finished, model, agent.name)
        last_step = self.result.steps + 1 >= (agent.max_steps or config.max_steps)
        request, notes = build_request(
            turn.history,
            model=model.id,
            directory=turn.directory,
            config=config,
            tools=[] if last_step else registry.definitions(),
            session_id=turn.session.id,
            reminder_after=self._loop_start_user,
            final_instruction=paths.read_prompt("max_steps.txt") if last_step else None,
            budget_reminder=budget_reminder_for(turn.finished, model.limit, config.compaction),
            agent=agent,
        )
        self.ctx.live(self.session_id).step_effort = request.options.get("reasoning_effort")
        for note in notes:
            if note not in self._told:
                self._told.add(note)
                self.ctx.publish(Notice(session_id=self.session_id, level="warning", message=note))
        estimate = await self._estimate(turn.history, request, turn.finished, model, turn.directory)
        if (checked := await self._fit(turn, request, estimate, model)) is None:
            return None
        return Step(agent, registry, model, request, checked, last_step)

    async def _fit(
        self, turn: Turn, request: ModelRequest, estimate: int, model: ModelInfo
    ) -> int | None:
        """The overflow pre-check: the estimate to send with, or None when the history
        was pruned or compacted instead. Near the threshold everything is counted locally
        before deciding (a prune since the last step makes the quick estimate too high)."""
        config = self.ctx.config.compaction
        if not config.auto or under_threshold(estimate, model.limit, config):
            return estimate
        estimate = int(estimate_tokens(request.messages, request.tools, model.id) * self._scale)
        if under_threshold(estimate, model.limit, config):
            return estimate
        if self._compactions_since_step >= MAX_COMPACTIONS_WITHOUT_PROGRESS:
            return estimate  # it cannot be made to fit: let the provider answer
        await self._prune_or_compact(turn, model)
        return None

    async def _take_step(self, turn: Turn, step: Step) -> None:
        """One model step and what its outcome means; Stop when the loop ends."""
        self.result.steps += 1
        self.result.max_steps_reached = step.last
        assistant = AssistantMessage(
            id=message_id(),
            session_id=self.session_id,
            parent_id=turn.user.id,
            model=step.model.id,
            agent=step.agent.name,
        )
        step_ctx = self.ctx
        if step.registry is not self.ctx.registry:
            step_ctx = copy.copy(self.ctx)  # the same engine; this agent's tools
            step_ctx.registry = step.registry
        processor = StepProcessor(
            step_ctx,
            assistant,
            turn.directory,
            self.abort,
            step.model,
            recent_calls=recent_calls(turn.history, self.ctx.config.doom_loop),
        )
        outcome = await processor.run(step.request, step.estimate)
        tools = list(processor.tools.values())
        await instructions_loaded.after_step(
            step_ctx, turn.directory, turn.history, assistant, tools
        )
        # Prepare a summary while the agent works on (more steps follow), or while the person
        # reads the answer (`run` exits then: a detached process finishes it, preparing.py).
        if outcome in ("continue", "stop") and await prepare_lead.wanted(
            self.ctx, assistant, step.model, turn.history
        ):
            prepared.start(self.ctx, assistant, step.model, step.agent.name)
        if not counter_ready(step.model.id):  # deferred by _estimate: load it now, off the loop
            await asyncio.to_thread(counter_for, step.model.id)
        self.result.outcome = outcome
        if outcome == "continue" and (plan := proposed_plan(processor.tools.values())):
            self.result.plan = plan
            self._plan_after = turn.user.id
        await self._after_step(outcome, assistant, step, processor.error)
        if processor.halted is not None:
            raise Stop("stop")  # a hook's `continue: false`: the person reads why

    async def _after_step(
        self,
        outcome: StepOutcome,
        assistant: AssistantMessage,
        step: Step,
        error: ProviderError | None,
    ) -> None:
        self.result.failure = error.kind if error is not None else None
        if outcome == "overflow":
            await self._learn_window(step.model, error)
            detail = assistant.error.message if assistant.error else "Context overflow."
            if not self.ctx.config.compaction.auto:
                raise Stop("error", f"{detail} {compaction.AUTO_OFF_ADVICE}")
            if self._overflow_retried:
                raise Stop("error", f"{detail} {compaction.OVERFLOW_ADVICE}")
            self._overflow_retried = True  # compact, then the same step once more
            await compaction.create_request(
                self.ctx,
                self.session_id,
                auto=True,
                overflow=True,
                model=step.model.id,
                agent=step.agent.name,
            )
            return
        if outcome == "error":
            raise Stop("error", assistant.error.message if assistant.error else None)
        if outcome == "aborted":
            raise Stop("aborted")
        self._compactions_since_step = 0
        self._overflow_retried = False
        await self.ctx.db.touch_session(self.session_id)

    async def _prune_or_compact(self, turn: Turn, model: ModelInfo) -> None:
        """Over budget: prune first; if that is not enough, queue an automatic compaction.
        Either way the history changed (the loop reads it again); Stop when compacting
        again would make no progress."""
        config = self.ctx.config
        if config.compaction.prune:
            if await prune.prune(self.ctx, turn.history, model.id):
                fresh = await load_history(self.ctx, await self.ctx.db.get_session(turn.session.id))
                # The scale the overflow was found with: measured after a prune, the last
                # step's prompt (unpruned) over a pruned count would look like a scale.
                local = history_tokens(self.ctx, turn.session, fresh, model.id)
                if under_threshold(int(local * self._scale), model.limit, config.compaction):
                    return
        if self._compactions_since_step >= MAX_COMPACTIONS_WITHOUT_PROGRESS:
            raise Stop("error", compaction.NO_PROGRESS_MESSAGE)
        await compaction.create_request(
            self.ctx, self.session_id, auto=True, model=model.id, agent=turn.user.agent
        )

    async def _compact(
        self, turn: Turn, request_msg: MessageWithParts, part: CompactionPart, model: ModelInfo
    ) -> None:
        """Summarise now; Stop when it fails, is aborted, or makes no progress."""
        self._compactions_since_step += 1
        self.result.compactions += 1
        if self._compactions_since_step > MAX_COMPACTIONS_WITHOUT_PROGRESS:
            raise Stop("error", compaction.NO_PROGRESS_MESSAGE)
        self._status("compacting")
        try:
            outcome = await compaction.process(
                self.ctx, turn.session, turn.history, request_msg, part, model, self.abort
            )
        except CompactionError as exc:
            # Recorded as a failed summary, so the request is not retried for ever.
            await compaction.record_failure(self.ctx, request_msg, model.id, str(exc))
            raise Stop("error", str(exc)) from exc
        finally:
            self._status("busy")
        if outcome != "stop":
            raise Stop(outcome, None if outcome == "aborted" else "Compaction failed.")

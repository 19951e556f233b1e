"""The engine's front door, what every front-end needs: prompt, compact, abort, events;
a command gets a session's `scope` and calls the mechanism itself (command/)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from agent_tui.config.settings import ProjectTrust
from agent_tui.context import compaction, prepared
from agent_tui.context.compaction_plan import preview
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError, UsageError
from agent_tui.events import AgentSwitched, Event, SessionUpdated
from agent_tui.live_session import LiveSession
from agent_tui.project.agents import DEFAULT_AGENT
from agent_tui.provider import windows
from agent_tui.provider.auth import check_credentials
from agent_tui.records import FilePart, Session
from agent_tui.scope import SessionScope
from agent_tui.session import command_lines
from agent_tui.session.expansion import Expansion, ExpansionFailed
from agent_tui.session.follow import Follower, all_read, run_until_read
from agent_tui.session.hook_points import HookPoints, PromptBlocked
from agent_tui.session.idle import IDLE_MESSAGE, IDLE_TITLE, IdleWatch
from agent_tui.session.loop import LoopResult
from agent_tui.session.queries import Queries
from agent_tui.session.sending import continue_for_hook, drop_if_empty, save_prompt
from agent_tui.session.subagent import Subagents
from agent_tui.session.title import generate_title
from agent_tui.session.worktree_sessions import SessionWorktrees
from agent_tui.step.instruction_urls import InstructionUrls
from agent_tui.step.plan import PlanChoice, plan_reply
from agent_tui.step.tool_hooks import notify
from agent_tui.storage.session_lock import SessionLock, SessionLocks
from agent_tui.tool.base import AskPermission
from agent_tui.tool.saved_outputs import start_cleanup
from agent_tui.workspace.workspace import Workspace

Asker = TypeVar("Asker", bound=AskPermission)


class Engine:
    def __init__(
        self, ctx: EngineContext, *, model_titles: bool = False, owns_database: bool = False
    ) -> None:
        self.ctx = ctx
        self._owns_database = owns_database
        """Opened for this engine (`session/opening.py`): `close` closes it too."""
        self.subagents = Subagents(ctx)
        """Runs the task tool's child sessions on this engine's loop."""
        self.worktrees = SessionWorktrees(ctx)
        """Sessions in their own worktrees (`-w`, /new -w, the enter_worktree tool)."""
        ctx.shared.worktrees = self.worktrees
        ctx.subagents = self.subagents
        self.model_titles = model_titles
        """Ask the model for a title on the first message (the app does; `run` does not)."""
        self._background: set[asyncio.Task[object]] = set()
        self.hook_points = HookPoints(ctx)
        """SessionStart, UserPromptSubmit, Stop and SessionEnd (the person's hooks)."""
        self.saved_outputs_cleanup: Future[int] = start_cleanup(
            ctx.output_dir, ctx.config.truncation.retention_days
        )
        """Deleting saved outputs older than truncation.retention_days, in the background."""
        ctx.workspace.mcp.start()  # the home project's MCP servers, in the background
        self.instructions = InstructionUrls(ctx.config.instructions, ctx.workspace.warn)
        """Config `instructions` URLs, fetched in the background."""
        self.instructions.start()
        self.queries = Queries(ctx)
        """What views read of the sessions (they never reach storage)."""
        self.idle = IdleWatch(self.is_busy, lambda: ctx.config.idle_notification, self._tell_idle)
        """The turns whose end the person has not answered yet (`idle.await_person`)."""

    def subscribe(self, handler: Callable[[Event], None]) -> Callable[[], None]:
        """`handler` gets every engine event from now on; the result unsubscribes."""
        return self.ctx.bus.subscribe(handler)

    async def scope(self, session_id: str) -> SessionScope:
        """The session and its project (its own config, agents, sandbox, hooks): what a
        command or view hands to the mechanism (context/, session/undo.py, …)."""
        session = await self.ctx.db.get_session(session_id)
        ctx = self.ctx.in_project(session.directory)
        return SessionScope(ctx, session, functools.partial(self.is_busy, session_id), self.locks)

    def workspace(self, directory: Path) -> Workspace:
        """The project at `directory`: its config, trust, agents and MCP servers (a view
        asks it what waits for trust, and trusts it through `trust_project`)."""
        return self.ctx.in_project(directory).workspace

    def trust_asked(self, directory: Path) -> None:
        """The person is asked here about the trust of the project at `directory` (/trust):
        not again at its first prompt."""
        self.hook_points.asked.add(self.ctx.in_project(directory).workspace.directory)

    async def trust_project(self, directory: Path, *, once: bool = False) -> ProjectTrust:
        """The person trusts the project at `directory`: recorded against its files as
        they are now (`once`: for this process only), its full config in force from the
        next request on."""
        ctx = self.ctx.in_project(directory)
        await ctx.retrust(keep=not once)
        return ctx.workspace.project

    @functools.cached_property
    def locks(self) -> SessionLocks:
        """One loop per session across processes (storage/session_lock.py), beside the
        database."""
        return SessionLocks.beside(self.ctx.db.path, self.ctx.front_end)

    # ---- sessions ---------------------------------------------------------------------

    async def start_afresh(self, session_id: str | None) -> None:
        """The person cleared the conversation (/new): the session left hears SessionEnd
        `clear` and the next session's SessionStart hooks `clear`, as in Claude Code's
        /clear."""
        if session_id is not None:
            await self.hook_points.end("clear", session_id)
        self.hook_points.cleared = True

    async def new_session(self, directory: Path) -> Session:
        session = await self.ctx.db.create_session(str(directory))
        self.ctx.publish(SessionUpdated(session=session))
        return session

    def is_busy(self, session_id: str) -> bool:
        if session_id in self.subagents.running:  # a subagent's session: its parent runs it
            return True
        if (live := self.ctx.shared.sessions.get(session_id)) is None:
            return False
        # Claimed: a prompt's loop starts once its message is saved.
        return live.claimed or (live.run is not None and not live.run.done())

    # ---- what a front-end attaches to a session ------------------------------------------

    def live(self, session_id: str) -> LiveSession:
        """The session's state in this process, which a front-end sets: an editor's files
        (ACP `fs`) and own MCP servers (`attach_servers`), the person's permission mode
        and reasoning effort (in memory only)."""
        return self.ctx.live(session_id)

    def name_mode_switch(self, how: str) -> None:
        """How the person switches agents in this front-end, in its words ("with Tab on
        an empty prompt"): plan mode's refusal names it to the model."""
        self.ctx.shared.mode_switch = how

    def ask_through(self, kind: type[Asker]) -> Asker:
        """The engine's permission questions go to one `kind()`, made on first use and
        kept (a router of the connections that serve them, as `agent-tui serve` has)."""
        if not isinstance(self.ctx.ask, kind):
            self.ctx.ask = kind()
        return self.ctx.ask

    async def answer_plan(
        self,
        session_id: str,
        plan: str,
        choice: PlanChoice,
        note: str = "",
        *,
        model: str | None = None,
        saved: asyncio.Event | None = None,
    ) -> LoopResult | None:
        """The person's answer to a proposed plan (`PlanProposed`): approve hands it to
        the build agent, reject tells the plan agent what to change, keep sends nothing.
        `AgentSwitched` says which agent the session goes on with."""
        reply = plan_reply(plan, choice, note)
        self.ctx.publish(AgentSwitched(session_id=session_id, agent=reply.agent))
        if reply.text is None:
            if saved is not None:
                saved.set()
            return None
        return await self.prompt(
            session_id, reply.text, model=model, agent=reply.agent, saved=saved
        )

    async def _tell_idle(self, session_id: str) -> None:
        scope = await self.scope(session_id)
        await notify(scope.ctx, scope.id, scope.directory, IDLE_MESSAGE, "idle_prompt", IDLE_TITLE)

    # ---- commands ---------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        agent: str | None = None,
        context: Sequence[str] = (),
        files: Sequence[FilePart] = (),
        saved: asyncio.Event | None = None,
        fresh: bool = False,
        expansion: Expansion | None = None,
    ) -> LoopResult | None:
        """Add a user message for `agent` (default build) and run the loop; while the loop
        runs here, the message is queued (it reaches the model as a reminder) and None is
        returned; while it runs in another process, the message is queued for that loop
        and its answer awaited (`run`). The model: `model`, else the agent's own, else
        the session's. `context`: texts the model reads with the message (e.g. files an
        editor attached); `files`: images (their ids and ids of the message are filled in
        here). `saved` is set once the message is stored and the session busy (the app
        keeps what is typed fast in order with it). `fresh`: the session was made for
        this prompt, and is not kept when a hook refuses it (PromptBlocked). `expansion`:
        the custom command the person typed (`/run-tests core`) when `text` is its body,
        whose `!` lines run here once its hooks let it (session/expansion.py)."""
        if not text.strip():
            raise UsageError("The message is empty: type something to send.")
        self.idle.stop(session_id)
        scope = await self.scope(session_id)
        session = scope.session
        ctx = await self.hook_points.trust_question(session)  # before anything of it acts
        chosen = scope.workspace.agent_catalog().chosen(agent)
        model = model or chosen.model or await scope.model()
        # A local server's window is asked while litellm loads (the loop awaits the answer).
        windows.start_probe(model, ctx.config)
        # Fail before saving anything the model can't answer.
        await check_credentials(model, ctx.config)
        try:
            context = [*context, *await self.hook_points.before_prompt(session, text, expansion)]
            if expansion is not None:
                text = await command_lines.fill(ctx, session, text, expansion)
        except (PromptBlocked, ExpansionFailed) as exc:
            exc.session_dropped = fresh and await drop_if_empty(ctx, session)
            raise
        with scope.claim() as (busy, lock):
            await self._save_prompt(session, text, model, chosen.name, lock is None, context, files)
        if saved is not None:
            saved.set()
        return None if busy else await self.run(session_id, lock=lock)

    async def _save_prompt(self, session: Session, text: str, model: str, *saved: Any) -> None:
        """Save the person's message (session/sending.py); the model titles a new session
        where the front-end asks for it (`model_titles`)."""
        ctx = self.ctx.in_project(session.directory)
        if await save_prompt(ctx, session, text, model, *saved) and self.model_titles:
            task = asyncio.create_task(generate_title(ctx, session.id, text, model))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def compact(
        self,
        session_id: str,
        instructions: str | None = None,
        *,
        model: str | None = None,
        up_to: str | None = None,
        agent: str = DEFAULT_AGENT,
    ) -> LoopResult | None:
        """Manual compaction (`/compact [instructions]`): its request saved, the loop
        summarises now, then stops (None: the loop runs already and does it first).
        `up_to`: the summary ends with that message; refused, with nothing changed, when
        what stays after it would not fit. `agent`: the turn's (a reviewed summary's)."""
        scope = await self.scope(session_id)
        config = scope.workspace.config
        model = model or await scope.model()
        if up_to is not None:
            plan = await preview(scope, instructions, model=model, up_to=up_to)
            if (refusal := plan.overflowing()) is not None:
                raise CompactionError(refusal)
        windows.start_probe(model, config)
        await check_credentials(config.compaction.model or model, config)
        request = {"model": model, "instructions": instructions, "up_to": up_to, "agent": agent}
        with scope.claim() as (busy, lock):
            created = await compaction.create_request(self.ctx, session_id, auto=False, **request)
        self.ctx.live(session_id).newest = created.info.id
        return None if busy else await self.run(session_id, lock=lock)

    async def run(self, session_id: str, *, lock: SessionLock | None = None) -> LoopResult:
        """Run the session's loop here, holding its lock (`lock`: taken by the caller).
        While another process runs it, follow that loop until it has answered what was
        sent from here, and run it here if that loop ends first (session/follow.py)."""
        live = self.ctx.live(session_id)
        live.abort = abort = asyncio.Event()
        live.run = task = asyncio.create_task(self._run_or_follow(session_id, abort, lock))
        if lock is not None:
            live.claimed = False  # the run is busy now
        try:
            return await task
        finally:
            live.run = live.abort = None
            if lock is not None:  # also when the task was cancelled before it started
                lock.release()
            self.idle.run_ended(session_id)

    async def _run_or_follow(
        self, session_id: str, abort: asyncio.Event, lock: SessionLock | None
    ) -> LoopResult:
        ctx = (await self.scope(session_id)).ctx
        if lock is None:
            lock = self.locks.try_acquire(session_id)
        if lock is None:
            live = ctx.live(session_id)
            followed = await Follower(ctx, session_id, self.locks, abort, lambda: live.newest).run()
            if followed.lock is None:
                assert followed.result is not None
                return followed.result
            lock = followed.lock
        try:
            ctx = await self._ready(ctx, session_id)
            arrivals = ctx.live(session_id).arrivals
            result = await run_until_read(ctx, session_id, abort)
            continues = 0
            while result.outcome == "stop" and not abort.is_set():
                if (reason := await self.hook_points.after_turn(session_id, continues)) is not None:
                    continues += 1
                    await continue_for_hook(await self.scope(session_id), reason)
                elif await all_read(ctx, session_id, arrivals):
                    break
                else:  # sent while the Stop hooks ran: answered in this turn
                    continues, arrivals = 0, ctx.live(session_id).arrivals
                result = await run_until_read(ctx, session_id, abort)
            if result.outcome == "error" and result.failure is not None:
                await self.hook_points.after_failure(session_id, result.failure, result.error or "")
            ctx.workspace.notice_changes()  # did a command write the project's config?
            return result
        finally:
            lock.release()

    async def _ready(self, ctx: EngineContext, session_id: str) -> EngineContext:
        """What a turn needs before its first request: the MCP servers' tools (the
        project's and the session's own, each within its timeout) and the instruction
        URLs; the context it runs in, with the session's tools."""
        await ctx.workspace.announce_sandbox()
        ctx.workspace.mcp.start()  # the engine may have been made before the event loop ran
        self.instructions.start()  # likewise
        await ctx.workspace.mcp.wait_ready()
        if (own := ctx.live(session_id).mcp) is not None:
            await own.wait_ready()
        await self.instructions.ready()
        return ctx.with_session_tools(session_id)

    async def wait_idle(self, session_id: str) -> None:
        """Until the session's running loop (if any) has finished."""
        live = self.ctx.shared.sessions.get(session_id)
        task = live.run if live is not None else None
        if task is not None and not task.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(task)

    async def close(self, reason: str = "other") -> None:
        """Stop what the engine started outside a run: the MCP servers (their processes),
        a fetch of instruction URLs still under way, and delete the sandbox's temp dirs.
        `reason`: SessionEnd's (HookPoints.end)."""
        self.instructions.cancel()
        prepared.hand_over(self.ctx)  # finished by a detached process, used next time
        self.idle.stop_all()
        await self.hook_points.end(reason)
        for live in self.ctx.shared.sessions:
            await live.detach()
        for project in self.ctx.shared.projects.values():
            await project.workspace.close()
        if self._owns_database:
            await self.ctx.db.close()

    def abort(self, session_id: str) -> bool:
        """Interrupt the running step or compaction; streamed text is kept."""
        prepared.cancel(self.ctx, session_id)
        # A subagent's session shares its parent's event: Esc there stops the whole turn.
        live = self.ctx.shared.sessions.get(session_id)
        event = (live.abort if live else None) or self.subagents.running.get(session_id)
        if event is None:
            return False
        event.set()
        return True

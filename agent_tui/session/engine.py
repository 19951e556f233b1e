"""The engine's front door: views send commands in (prompt, compact, abort) and render
the events that come out of the bus."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from agent_tui.config.settings import McpServerConfig, ProjectTrust, ReasoningEffort
from agent_tui.context import compaction, prepared
from agent_tui.context.compaction_plan import CompactionPlan, plan
from agent_tui.context.summary_view import SummaryEdit, SummaryInForce, save_edit, summary_in_force
from agent_tui.context.uncompact import Uncompacted, uncompact
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError, UsageError
from agent_tui.events import AgentSwitched, Event, Notice, SessionUpdated
from agent_tui.ids import message_id, part_id
from agent_tui.mcp.mcp_servers import McpServers
from agent_tui.project.agents import DEFAULT_AGENT, AgentCatalog, AgentInfo
from agent_tui.provider import remote, windows
from agent_tui.provider.auth import check_credentials
from agent_tui.provider.limits import ModelInfo, load_with_summariser
from agent_tui.records import (
    FilePart,
    MessageWithParts,
    PinnedText,
    PreparedSummary,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.session import command_lines, fork, pin_changes, undo
from agent_tui.session.expansion import Expansion, ExpansionFailed
from agent_tui.session.follow import Follower, all_read, run_until_read
from agent_tui.session.fork import Forked
from agent_tui.session.hook_points import HookPoints, PromptBlocked
from agent_tui.session.idle import IDLE_MESSAGE, IDLE_TITLE, IdleWatch
from agent_tui.session.loop import LoopResult
from agent_tui.session.mentions import resolve_mentions
from agent_tui.session.pin_changes import PinChange, PinList
from agent_tui.session.queries import Queries
from agent_tui.session.shell import run_person_command
from agent_tui.session.subagent import Subagents
from agent_tui.session.title import default_title, generate_title
from agent_tui.session.undo import TurnRestored
from agent_tui.step.history import load_history, model_of
from agent_tui.step.instruction_urls import fetch_all, is_url
from agent_tui.step.plan import PlanChoice, plan_reply
from agent_tui.step.system import memory_of
from agent_tui.step.tool_hooks import notify
from agent_tui.storage.session_lock import LockHolder, SessionLock, SessionLocks
from agent_tui.tool.base import AskPermission, EditorFiles, ToolContext
from agent_tui.tool.escalation import UNSANDBOXED
from agent_tui.tool.registry import PermissionMode
from agent_tui.tool.saved_outputs import start_cleanup
from agent_tui.workspace.describe import trust_lines
from agent_tui.workspace.skipped import context_lines

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
        self.mcp.start()  # the home project's MCP servers, in the background
        self._instruction_urls: asyncio.Task[None] | None = None
        self.fetch_instructions()
        self.queries = Queries(ctx)
        """What views read of the sessions (they never reach storage)."""
        self.idle = IdleWatch()
        """The turns whose end the person has not answered yet (`await_person`)."""

    def subscribe(self, handler: Callable[[Event], None]) -> Callable[[], None]:
        """`handler` gets every engine event from now on; the result unsubscribes."""
        return self.ctx.bus.subscribe(handler)

    @property
    def mcp(self) -> McpServers:
        """The MCP servers of the project the engine was opened in (each project's own:
        `ctx.in_project(directory).workspace.mcp`)."""
        return self.ctx.workspace.mcp

    async def _opened(self, session_id: str) -> tuple[EngineContext, Session]:
        """The session, and the context of its project (its own config, agents, sandbox,
        hooks)."""
        session = await self.ctx.db.get_session(session_id)
        return self.ctx.in_project(session.directory), session

    async def _ctx(self, session_id: str) -> EngineContext:
        return (await self._opened(session_id))[0]

    def project(self, directory: Path) -> EngineContext:
        """The context of the project at `directory`: its config and trust (a view asks
        it what waits for trust, and trusts it through `trust_project`)."""
        return self.ctx.in_project(directory)

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

    async def _fill_lines(self, session: Session, text: str, expansion: Expansion) -> str:
        """A custom command's body with its `` !`command` `` lines run and replaced by
        their output (session/command_lines.py); ExpansionFailed when one does not run."""
        if command_lines.LINE.search(text) is None:
            return text
        directory = Path(session.directory)
        ctx = self.ctx.in_project(directory)
        await self.announce_sandbox(ctx)
        try:
            return await command_lines.fill(ctx, directory, session.id, text, expansion.allowed)
        except UsageError as exc:
            raise ExpansionFailed(f"/{expansion.name}: {exc}") from exc

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

    async def fork(self, session_id: str, message_id: str | None = None) -> Forked:
        """A new session with this one's history up to `message_id` (all of it when None;
        before it when the person typed it: its text comes back as `retype`), its summary,
        pins, ledger, todos and snapshots as they were there."""
        ctx = await self._ctx(session_id)
        return await fork.fork(ctx, session_id, message_id)

    def is_busy(self, session_id: str) -> bool:
        live = self.ctx.shared.sessions.get(session_id)
        if session_id in self.subagents.running:  # a subagent's session: its parent runs it
            return True
        if live is None:
            return False
        if live.claimed:  # a prompt's loop starts once its message is saved
            return True
        return live.run is not None and not live.run.done()

    async def session_model(self, session_id: str) -> str:
        """The model of the session's newest user message, else the configured one;
        messages to an agent with a model of its own don't count (that is the agent's)."""
        ctx, session = await self._opened(session_id)
        catalog = ctx.agent_catalog(Path(session.directory))

        def own_model(message: MessageWithParts) -> bool:
            info = message.info
            agent = catalog.get(info.agent) if isinstance(info, UserMessage) else None
            return agent is None or agent.model is None

        history = [m for m in await load_history(ctx, session) if own_model(m)]
        return model_of(history, ctx.config.model)

    # ---- what a front-end attaches to a session ------------------------------------------

    def agents(self, directory: Path) -> AgentCatalog:
        """The agents a session in `directory` can use (built in, config, its files)."""
        return self.ctx.agent_catalog(directory)

    def attach_editor(self, session_id: str, files: EditorFiles | None) -> None:
        """An editor's buffers serve the session's file reads and writes (ACP `fs`);
        None: the files on disk again."""
        self.ctx.live(session_id).editor = files

    def attach_servers(
        self, session_id: str, directory: Path, servers: dict[str, McpServerConfig]
    ) -> None:
        """An editor's own MCP servers (ACP `mcpServers`) for this session alone: started
        now, their tools offered in its turns beside its project's, never in another
        session's; a name the session has already keeps its server."""
        live = self.ctx.live(session_id)
        if live.mcp is None:
            live.mcp = self.ctx.in_project(directory).session_servers()
        live.mcp.add(servers)

    async def detach_servers(self, session_id: str) -> None:
        """The editor let the session go: its own MCP servers stop."""
        live = self.ctx.shared.sessions.get(session_id)
        if live is not None and live.mcp is not None:
            servers, live.mcp = live.mcp, None
            await servers.close()

    def mcp_report(self, session_id: str | None) -> str:
        """/mcp: the project's servers, then the session's own (an editor's)."""
        text = self.mcp.render()
        live = self.ctx.shared.sessions.get(session_id) if session_id else None
        if live is not None and live.mcp is not None and live.mcp.servers:
            text += "\n\nThis session's own, from the editor:\n" + live.mcp.render()
        return text

    def set_reasoning_effort(self, session_id: str, effort: ReasoningEffort | None) -> None:
        """The person's reasoning effort for the session's next steps (None: the agent's
        or the model's own); in memory only."""
        self.ctx.live(session_id).reasoning_effort = effort

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

    def primary_agent(self, name: str | None, directory: Path) -> AgentInfo:
        """A primary agent by name (default: build); UsageError naming the valid ones."""
        catalog = self.ctx.agent_catalog(directory)
        found = catalog.get(name or DEFAULT_AGENT)
        if found is None or not found.primary:
            valid = ", ".join(a.name for a in catalog.agents.values() if a.primary)
            kind = "a subagent (the task tool runs it)" if found else "not defined"
            raise UsageError(f"Agent {name!r} is {kind}. Primary agents: {valid}.")
        return found

    async def model_window(self, model: str) -> windows.ServerWindow | None:
        """What `model`'s server says its window is (the app asks after its first frame)."""
        return await windows.discover_window(model, self.ctx.config)

    def await_person(self, session_id: str) -> None:
        """A front-end that waits for the person (the app) shows a turn's end: unless
        they type (`person_typed`) or something is sent first, Notification hooks hear
        `idle_prompt` after `idle_notification` seconds, as Claude Code's do. Shown while
        the run still goes on (its Stop hooks), the wait starts when it ends."""
        if self.is_busy(session_id):
            self.idle.after_run(session_id)
            return
        tell = functools.partial(self._tell_idle, session_id)
        self.idle.start(session_id, self.ctx.config.idle_notification, tell)

    async def _tell_idle(self, session_id: str) -> None:
        if self.is_busy(session_id):  # sent from another view or process meanwhile
            return
        ctx, session = await self._opened(session_id)
        directory = Path(session.directory)
        await notify(ctx, session_id, directory, IDLE_MESSAGE, "idle_prompt", IDLE_TITLE)

    def person_typed(self, session_id: str) -> None:
        """The person typed in the session's prompt: they are not away (no
        `idle_prompt` for the turn that ended)."""
        self.idle.stop(session_id)

    def set_permission_mode(self, session_id: str, mode: PermissionMode) -> None:
        """ask, or auto-edits (edit and write run without asking); in memory only."""
        self.ctx.live(session_id).permission_mode = mode

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
        session = await self.ctx.db.get_session(session_id)
        ctx = await self.hook_points.trust_question(session)  # before anything of it acts
        chosen = self.primary_agent(agent, Path(session.directory))
        model = model or chosen.model or await self.session_model(session_id)
        # A local server's window is asked while litellm loads (the loop awaits the answer).
        windows.start_probe(model, ctx.config)
        # Fail before saving anything the model can't answer.
        await check_credentials(model, ctx.config)
        try:
            context = [*context, *await self.hook_points.before_prompt(session, text, expansion)]
            if expansion is not None:
                text = await self._fill_lines(session, text, expansion)
        except (PromptBlocked, ExpansionFailed) as exc:
            exc.session_dropped = fresh and await self._drop_if_empty(session)
            raise
        with self._claim(session_id) as (busy, lock):
            await self._save_prompt(
                session, text, model, chosen.name, queued=lock is None, context=context, files=files
            )
        if saved is not None:
            saved.set()
        if busy:
            return None
        return await self.run(session_id, lock=lock)

    async def _drop_if_empty(self, session: Session) -> bool:
        """A session whose first prompt was refused holds nothing: it is not kept."""
        newest, _ = await self.ctx.db.recent_messages(session.id, 1)
        if newest or session.parent_id is not None:
            return False
        await self.ctx.db.delete_session(session.id)
        return True

    @contextlib.contextmanager
    def _claim(self, session_id: str) -> Iterator[tuple[bool, SessionLock | None]]:
        """(busy here, the session's lock if this command starts the loop), given back when
        the body fails. No await before the body: of two commands, of any processes, only
        one starts the loop."""
        live = self.ctx.live(session_id)
        busy, lock = self.is_busy(session_id), None
        if busy:  # the running loop reads it (session/follow.all_read)
            live.arrivals += 1
            live.arriving += 1
        elif (lock := self.locks.try_acquire(session_id)) is not None:
            live.claimed = True
        try:
            yield busy, lock
        except BaseException:
            if lock is not None:
                live.claimed = False
                lock.release()
            raise
        finally:
            if busy:
                live.arriving -= 1
                live.stored.set()

    async def _save_prompt(
        self,
        session: Session,
        text: str,
        model: str,
        agent: str,
        *,
        queued: bool,
        context: Sequence[str] = (),
        files: Sequence[FilePart] = (),
    ) -> None:
        ctx = self.ctx.in_project(session.directory)
        session_id = session.id
        info = UserMessage(
            id=message_id(), session_id=session_id, model=model, agent=agent, queued=queued
        )
        ids = {"session_id": session_id, "message_id": info.id}
        part = TextPart(id=part_id(), **ids, text=text)
        attachments = await resolve_mentions(
            text, self._tool_context(session, info.id), ctx.registry
        )
        await ctx.add_message(info, part)
        ctx.live(session_id).newest = info.id
        for attachment in attachments:  # the model reads them; the view shows the typed text
            await self._add_synthetic(info, attachment.text)
            for image in attachment.images:  # an image file: the image itself
                url = Path(image.path).as_uri()
                await ctx.save_part(
                    FilePart(id=part_id(), **ids, mime=image.mime, filename=image.name, url=url)
                )
        for text_ in context:  # e.g. files an editor attached, as it has them
            await self._add_synthetic(info, text_)
        for file in files:
            await ctx.save_part(file.model_copy(update={"id": part_id(), **ids}))
        if not session.title:
            session.title = default_title(text)
            await ctx.db.update_session(session)
            ctx.publish(SessionUpdated(session=session))
            if self.model_titles:
                task = asyncio.create_task(generate_title(ctx, session_id, text, model))
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def _add_synthetic(self, info: UserMessage, text: str) -> None:
        ids = {"session_id": info.session_id, "message_id": info.id}
        await self.ctx.save_part(TextPart(id=part_id(), **ids, text=text, synthetic=True))

    async def run_shell(
        self, session_id: str, command: str, saved: asyncio.Event | None = None
    ) -> ToolPart:
        """`!command`: the person runs a shell command in the session's folder (theirs,
        so nobody is asked to allow bash; it runs in the sandbox all the same, and the
        person is offered to run it outside when the sandbox blocks it). It is saved as a
        user message: a bash tool part the view shows as a tool line, and synthetic text
        with the output that the model reads with the next message. The model is not
        called."""
        if not command.strip():
            raise UsageError("The command is empty: type a shell command after the !.")
        ctx, session = await self._opened(session_id)
        model = await self.session_model(session_id)
        # Idle: the session is held while the command runs, so that no loop (of this or
        # another process) starts meanwhile and takes its running part for a crashed one.
        lock = None if self.is_busy(session_id) else self.locks.try_acquire(session_id)
        try:
            info = UserMessage(
                id=message_id(), session_id=session_id, model=model, queued=lock is None
            )
            call_id = f"shell-{info.id}"
            tools = self._tool_context(session, info.id, call_id)
            tools.permissions["bash"] = "allow"
            await self.announce_sandbox(ctx)
            tools.ask = ctx.ask  # only to offer running it outside the sandbox if blocked
            part = await run_person_command(ctx, info, command, tools, saved)
            if tools.permissions.get(UNSANDBOXED) == "allow":  # "always" holds for the session
                ctx.permissions_for(session_id)[UNSANDBOXED] = "allow"
            return part
        finally:
            if lock is not None:
                lock.release()

    def _tool_context(self, session: Session, message: str, call_id: str = "") -> ToolContext:
        """What a tool run on the person's behalf needs (mentions, `!command`): nobody
        is asked, so only what config or 'always' allows runs beyond the given grants."""
        ctx = self.ctx.in_project(session.directory)
        context = ctx.tool_context(
            session.id,
            message,
            Path(session.directory),
            call_id=call_id,
            permissions=dict(ctx.permissions_for(session.id)),
        )
        context.ask = None
        return context

    async def compact(
        self,
        session_id: str,
        instructions: str | None = None,
        *,
        model: str | None = None,
        up_to: str | None = None,
    ) -> LoopResult | None:
        """Manual compaction (`/compact [instructions]`): summarise now, then stop.
        `up_to`: the summary ends with that message; refused, with nothing changed, when
        what stays after it would not fit."""
        ctx = await self._ctx(session_id)
        model = model or await self.session_model(session_id)
        if up_to is not None:
            plan = await self.compaction_plan(session_id, instructions, model=model, up_to=up_to)
            if (refusal := plan.overflowing()) is not None:
                raise CompactionError(refusal)
        windows.start_probe(model, ctx.config)
        await check_credentials(ctx.config.compaction.model or model, ctx.config)
        return await self._request_compaction(
            session_id, model=model, instructions=instructions, up_to=up_to
        )

    async def _request_compaction(self, session_id: str, **request: Any) -> LoopResult | None:
        """Save a manual compaction's request and run the loop (None: it runs already)."""
        with self._claim(session_id) as (busy, lock):
            created = await compaction.create_request(self.ctx, session_id, auto=False, **request)
        self.ctx.live(session_id).newest = created.info.id
        if busy:
            return None
        return await self.run(session_id, lock=lock)

    async def summary_for_review(
        self, session_id: str, instructions: str | None = None, *, model: str | None = None
    ) -> PreparedSummary | None:
        """A manual /compact with `compaction.review`: write the summary the compaction
        would apply, without applying it (the person applies, edits or discards it with
        `apply_reviewed` / `discard_reviewed`). None when it cannot be written in one call
        (a span for chunks): then compact as usual."""
        ctx = await self._ctx(session_id)
        model = model or await self.session_model(session_id)
        await check_credentials(ctx.config.compaction.model or model, ctx.config)
        with self._idle(session_id, "writing a summary to review"):
            info = await load_with_summariser(model, ctx.config)
            history = await load_history(ctx, await ctx.db.get_session(session_id))
            users = [m.info for m in history if isinstance(m.info, UserMessage)]
            agent = max(users, key=lambda u: u.id).agent if users else DEFAULT_AGENT
            return await prepared.prepare(
                ctx, session_id, info, agent, review=True, instructions=instructions
            )

    async def apply_reviewed(
        self, session_id: str, summary: PreparedSummary, text: str | None = None
    ) -> LoopResult | None:
        """Apply a reviewed summary (`text`: the person's edit; the original is kept)."""
        if text is not None and text.strip() and text.strip() != summary.text.strip():
            summary.edited = text.strip()
        prepared.cancel(self.ctx, session_id)  # only this one is applied
        for other in await self.ctx.db.prepared_summaries(session_id, "ready"):
            if other.id != summary.id:
                await prepared.discard(self.ctx, other, "the person applied a reviewed one")
        await self.ctx.db.save_prepared(summary)
        model = await self.session_model(session_id)
        return await self._request_compaction(
            session_id, model=model, agent=summary.agent or DEFAULT_AGENT
        )

    async def discard_reviewed(self, summary: PreparedSummary) -> None:
        await prepared.discard(self.ctx, summary, "the person discarded it in the review")

    async def compaction_plan(
        self,
        session_id: str,
        instructions: str | None = None,
        *,
        model: str | None = None,
        up_to: str | None = None,
    ) -> CompactionPlan:
        """What `compact` would do now (`--dry-run`): nothing is sent or saved."""
        ctx, session = await self._opened(session_id)
        model = model or await self.session_model(session_id)
        history = await load_history(ctx, session)
        if not history:
            raise UsageError("Nothing to compact yet: the session has no messages.")
        info = await _limits(ctx, model)
        return await asyncio.to_thread(plan, ctx, session, history, info, instructions, up_to)

    async def context_report(
        self, session_id: str | None, *, model: str | None = None, directory: Path | None = None
    ) -> str:
        """What fills the context window (`/context`), as text; with no session (before a
        first message), what a first request in `directory` would carry."""
        from agent_tui.context.breakdown import breakdown, render
        from agent_tui.context.memory_report import memory_lines

        if session_id is None:
            assert directory is not None, "no session: the directory of the next one"
            ctx, history, where = self.project(directory), [], directory
        else:
            ctx, session = await self._opened(session_id)
            history, where = await load_history(ctx, session), Path(session.directory)
        model = model or model_of(history, ctx.config.model)
        info = await _limits(ctx, model)
        tools = ctx.registry.definitions()
        # Counting tokens loads a tokenizer the first time: off the event loop.
        result = await asyncio.to_thread(breakdown, history, info, ctx.config, where, tools)
        memory = await asyncio.to_thread(
            lambda: memory_lines(memory_of(where, ctx.config), history, where, model)
        )
        withheld = ctx.tool_env.withheld_line()
        sandbox = await ctx.sandbox.status_line()
        lines = [render(result), *memory, withheld, sandbox, *ctx.lsp.status_lines()]
        lines += ctx.hooks.status_lines()
        lines += trust_lines(ctx.workspace)
        lines += context_lines(ctx.workspace)
        lines.append(remote.describe())
        return "\n".join(lines)

    async def uncompact(self, session_id: str, *, model: str | None = None) -> Uncompacted:
        """Take back the newest compaction (UsageError if there is none or it won't fit)."""
        ctx = await self._ctx(session_id)
        with self._idle(session_id, "undoing a compaction"):
            model = model or await self.session_model(session_id)
            session = await ctx.db.get_session(session_id)
            info = await _limits(ctx, model)
            return await uncompact(ctx, session, info)

    # ---- pins -----------------------------------------------------------------------

    async def pin(self, session_id: str, item_id: str | None = None) -> PinChange:
        """Pin a message or tool result (default: the agent's newest message with text):
        restated verbatim after every compaction. Allowed while the agent works: the
        model sees nothing change until the next compaction."""
        ctx, session = await self._opened(session_id)
        return await pin_changes.set_pin(ctx, session, item_id, pinned=True)

    async def unpin(self, session_id: str, item_id: str | None = None) -> PinChange:
        """Unpin (default: the only pin); compactions from the next one on leave it out."""
        ctx, session = await self._opened(session_id)
        return await pin_changes.set_pin(ctx, session, item_id, pinned=False)

    async def pin_choices(self, session_id: str) -> list[tuple[PinnedText, bool]]:
        """The app's pin list: newest first, each with whether it is pinned."""
        ctx, session = await self._opened(session_id)
        return await pin_changes.pin_choices(ctx, session)

    async def pin_list(self, session_id: str) -> PinList:
        ctx, session = await self._opened(session_id)
        return await pin_changes.pin_list(ctx, session)

    async def summary(self, session_id: str, *, model: str | None = None) -> SummaryInForce:
        """The summary in force and what surrounds it (`/summary`); tokens counted for
        `model`, else the session's."""
        ctx, session = await self._opened(session_id)
        model = model or await self.session_model(session_id)
        return await summary_in_force(ctx, session, model)

    async def edit_summary(self, session_id: str, summary_id: str, text: str | None) -> SummaryEdit:
        """The person's text for the summary in force, which the model sees from its next
        step on (None: back to the summariser's text, which stays in the database either
        way). Allowed while the agent works here; held against an uncompact elsewhere."""
        ctx = await self._ctx(session_id)
        lock = None if self.is_busy(session_id) else self.locks.try_acquire(session_id)
        try:
            session = await ctx.db.get_session(session_id)
            return await save_edit(ctx, session, summary_id, text)
        finally:
            if lock is not None:
                lock.release()

    # ---- undo / redo of turns (files included) --------------------------------------

    @contextlib.contextmanager
    def _idle(self, session_id: str, what: str) -> Iterator[None]:
        """Hold the session (no loop anywhere) while rewriting its history; UsageError
        naming where it is busy otherwise."""
        if self.is_busy(session_id):
            raise UsageError(f"The agent is working: interrupt it (Esc) before {what}.")
        lock = self.locks.try_acquire(session_id)
        if lock is None:
            holder = self.locks.holder(session_id) or LockHolder()
            raise UsageError(
                f"Session {session_id} is busy in {holder.describe()}: wait for its turn to "
                f"end (or interrupt it there) before {what}."
            )
        try:
            yield
        finally:
            lock.release()

    async def undo(self, session_id: str, *, force: bool = False) -> TurnRestored:
        """Undo the newest turn: restore the files it changed and hide it from the model
        (UndoConflict, nothing changed, when the person changed one of them since)."""
        ctx = await self._ctx(session_id)
        with self._idle(session_id, "undoing a turn"):
            session = await ctx.db.get_session(session_id)
            return await undo.undo(ctx, session, force=force)

    async def redo(self, session_id: str, *, force: bool = False) -> TurnRestored:
        """Redo the turn undone last (until a new message is sent)."""
        ctx = await self._ctx(session_id)
        with self._idle(session_id, "redoing a turn"):
            session = await ctx.db.get_session(session_id)
            return await undo.redo(ctx, session, force=force)

    async def session_diff(self, session_id: str) -> str:
        """The unified diff of every file the session's turns changed ("" if none)."""
        ctx, session = await self._opened(session_id)
        return await undo.diff(ctx, session)

    async def session_numstat(self, session_id: str) -> dict[str, tuple[int, int]]:
        """Lines added and removed per file the session's turns changed."""
        ctx, session = await self._opened(session_id)
        return await undo.numstat(ctx, session)

    def fetch_instructions(self) -> None:
        """Fetch config `instructions` URLs in the background (needs a running event loop;
        a no-op without one, or when started already, or with no URLs). A failure is a
        warning notice, never an error (step/instruction_urls.py)."""
        urls = [entry for entry in self.ctx.config.instructions if is_url(entry)]
        if self._instruction_urls is not None or not urls:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return

        async def fetch() -> None:
            for note in await fetch_all(urls):
                self.ctx.publish(Notice(level="warning", message=note))

        self._instruction_urls = asyncio.create_task(fetch(), name="instruction-urls")

    async def announce_sandbox(self, ctx: EngineContext | None = None) -> None:
        """Once per project: a notice when commands cannot be sandboxed here."""
        sandbox = (ctx or self.ctx).sandbox
        if sandbox.announced:
            return
        sandbox.announced = True
        notice = await sandbox.start_notice()
        if notice is not None:
            self.ctx.publish(Notice(level="warning", message=notice))

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
            if self.idle.run_ended(session_id):
                self.await_person(session_id)

    async def _run_or_follow(
        self, session_id: str, abort: asyncio.Event, lock: SessionLock | None
    ) -> LoopResult:
        ctx = await self._ctx(session_id)
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
                reason = await self.hook_points.after_turn(session_id, continues)
                if reason is not None:
                    continues += 1
                    await self._continue_for_hook(session_id, reason)
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
        await self.announce_sandbox(ctx)
        ctx.workspace.mcp.start()  # the engine may have been made before the event loop ran
        self.fetch_instructions()  # likewise
        await ctx.workspace.mcp.wait_ready()
        own = ctx.live(session_id).mcp
        if own is not None:
            await own.wait_ready()
        if self._instruction_urls is not None:  # in the system prompt from the first request
            await asyncio.shield(self._instruction_urls)
        return ctx.with_session_tools(session_id)

    async def _continue_for_hook(self, session_id: str, reason: str) -> None:
        """A Stop hook blocked the stop: its reason is the next message, for the model
        and agent of the last one."""
        ctx, session = await self._opened(session_id)
        newest = ctx.live(session_id).newest
        last = await ctx.db.get_message(newest) if newest else None
        if isinstance(last, UserMessage):
            model, agent = last.model, last.agent
        else:  # a run this engine did not prompt: the session's model, the default agent
            model = await self.session_model(session_id)
            agent = self.primary_agent(None, Path(session.directory)).name
        await self._save_prompt(session, reason, model, agent, queued=False)

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
        if self._instruction_urls is not None and not self._instruction_urls.done():
            self._instruction_urls.cancel()
        prepared.hand_over(self.ctx)  # finished by a detached process, used next time
        self.idle.stop_all()
        await self.hook_points.end(reason)
        for live in self.ctx.shared.sessions:
            await self.detach_servers(live.id)
        for project in self.ctx.projects():
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


async def _limits(ctx: EngineContext, model: str) -> ModelInfo:
    """The model's limits and prices (and the summariser's, when one is set) with the
    project's config, a local server's window asked first: awaited, as litellm may still
    be importing."""
    await windows.discover_window(model, ctx.config)
    return await load_with_summariser(model, ctx.config)

"""The engine's front door: views send commands in (prompt, compact, abort) and render
the events that come out of the bus."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from pathlib import Path

from agent_tui.agents import DEFAULT_AGENT, AgentInfo
from agent_tui.errors import AgentTuiError, UsageError
from agent_tui.events import Notice, PartUpdated, SessionUpdated
from agent_tui.ids import message_id, now_ms, part_id
from agent_tui.mcp.servers import McpServers
from agent_tui.provider.auth import check_credentials
from agent_tui.provider.limits import model_info
from agent_tui.provider.loader import load_litellm
from agent_tui.session import compaction
from agent_tui.session import undo as turns
from agent_tui.session.compaction_plan import CompactionPlan, plan
from agent_tui.session.context import EngineContext
from agent_tui.session.history import load_history, model_of
from agent_tui.session.instruction_urls import fetch_all, is_url
from agent_tui.session.loop import LoopResult, SessionLoop
from agent_tui.session.mentions import resolve_mentions
from agent_tui.session.shell import shell_text
from agent_tui.session.subagent import Subagents
from agent_tui.session.title import default_title, generate_title
from agent_tui.session.uncompact import Uncompacted, uncompact
from agent_tui.session.undo import TurnRestored
from agent_tui.storage.models import (
    FilePart,
    MessageWithParts,
    Part,
    Session,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.tool.base import ToolContext
from agent_tui.tool.registry import PermissionMode
from agent_tui.tool.saved_outputs import start_cleanup


class Engine:
    def __init__(self, ctx: EngineContext, *, model_titles: bool = False) -> None:
        self.ctx = ctx
        self.subagents = Subagents(ctx)
        """Runs the task tool's child sessions on this engine's loop."""
        ctx.subagents = self.subagents
        self.model_titles = model_titles
        """Ask the model for a title on the first message (the app does; `run` does not)."""
        self._background: set[asyncio.Task[object]] = set()
        self._aborts: dict[str, asyncio.Event] = {}
        self._runs: dict[str, asyncio.Task[LoopResult]] = {}
        self.saved_outputs_cleanup: Future[int] = start_cleanup(
            ctx.output_dir, ctx.config.truncation.retention_days
        )
        """Deleting saved outputs older than truncation.retention_days, in the background."""
        self.mcp = McpServers(ctx.config.mcp, ctx.registry, ctx.publish, ctx.tool_env.env)
        """The MCP servers: started now in the background, their tools registered when ready."""
        self.mcp.start()
        self._instruction_urls: asyncio.Task[None] | None = None
        self.fetch_instructions()

    # ---- sessions ---------------------------------------------------------------------

    async def new_session(self, directory: Path) -> Session:
        session = await self.ctx.db.create_session(str(directory))
        self.ctx.publish(SessionUpdated(session=session))
        return session

    def is_busy(self, session_id: str) -> bool:
        task = self._runs.get(session_id)
        if session_id in self.subagents.running:  # a subagent's session: its parent runs it
            return True
        return task is not None and not task.done()

    async def session_model(self, session_id: str) -> str:
        """The model of the session's newest user message, else the configured one;
        messages to an agent with a model of its own don't count (that is the agent's)."""
        session = await self.ctx.db.get_session(session_id)
        catalog = self.ctx.agent_catalog(Path(session.directory))

        def own_model(message: MessageWithParts) -> bool:
            info = message.info
            agent = catalog.get(info.agent) if isinstance(info, UserMessage) else None
            return agent is None or agent.model is None

        history = [m for m in await load_history(self.ctx, session) if own_model(m)]
        return model_of(history, self.ctx.config.model)

    def primary_agent(self, name: str | None, directory: Path) -> AgentInfo:
        """A primary agent by name (default: build); UsageError naming the valid ones."""
        catalog = self.ctx.agent_catalog(directory)
        found = catalog.get(name or DEFAULT_AGENT)
        if found is None or not found.primary:
            valid = ", ".join(a.name for a in catalog.agents.values() if a.primary)
            kind = "a subagent (the task tool runs it)" if found else "not defined"
            raise UsageError(f"Agent {name!r} is {kind}. Primary agents: {valid}.")
        return found

    def permission_mode(self, session_id: str) -> PermissionMode:
        return self.ctx.permission_modes.get(session_id, "ask")

    def set_permission_mode(self, session_id: str, mode: PermissionMode) -> None:
        """ask, or auto-edits (edit and write run without asking); in memory only."""
        self.ctx.permission_modes[session_id] = mode

    # ---- commands ---------------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        agent: str | None = None,
    ) -> LoopResult | None:
        """Add a user message for `agent` (default build) and run the loop; while the loop
        runs, the message is queued (it reaches the model as a reminder) and None is
        returned. The model: `model`, else the agent's own, else the session's."""
        if not text.strip():
            raise UsageError("The message is empty: type something to send.")
        session = await self.ctx.db.get_session(session_id)
        chosen = self.primary_agent(agent, Path(session.directory))
        model = model or chosen.model or await self.session_model(session_id)
        # Fail before saving anything the model can't answer.
        await check_credentials(model, self.ctx.config)
        info = UserMessage(
            id=message_id(),
            session_id=session_id,
            model=model,
            agent=chosen.name,
            queued=self.is_busy(session_id),
        )
        part = TextPart(id=part_id(), session_id=session_id, message_id=info.id, text=text)
        attachments = await resolve_mentions(
            text, self._tool_context(session, info.id), self.ctx.registry
        )
        await self.ctx.add_message(info, part)
        for attachment in attachments:  # the model reads them; the view shows the typed text
            await self._add_part(
                TextPart(
                    id=part_id(),
                    session_id=session_id,
                    message_id=info.id,
                    text=attachment.text,
                    synthetic=True,
                )
            )
            for image in attachment.images:  # an image file: the image itself
                await self._add_part(
                    FilePart(
                        id=part_id(),
                        session_id=session_id,
                        message_id=info.id,
                        mime=image.mime,
                        filename=image.name,
                        url=Path(image.path).as_uri(),
                    )
                )
        if not session.title:
            session.title = default_title(text)
            await self.ctx.db.update_session(session)
            self.ctx.publish(SessionUpdated(session=session))
            if self.model_titles:
                task = asyncio.create_task(generate_title(self.ctx, session_id, text, model))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
        if self.is_busy(session_id):
            return None
        return await self.run(session_id)

    async def run_shell(self, session_id: str, command: str) -> ToolPart:
        """`!command`: the person runs a shell command in the session's folder (theirs,
        so nobody is asked). It is saved as a user message: a bash tool part the view
        shows as a tool line, and synthetic text with the output that the model reads
        with the next message. The model is not called."""
        if not command.strip():
            raise UsageError("The command is empty: type a shell command after the !.")
        session = await self.ctx.db.get_session(session_id)
        info = UserMessage(
            id=message_id(),
            session_id=session_id,
            model=await self.session_model(session_id),
            queued=self.is_busy(session_id),
        )
        arguments = {"command": command}
        start = now_ms()
        part = ToolPart(
            id=part_id(),
            session_id=session_id,
            message_id=info.id,
            call_id=f"shell-{info.id}",
            tool="bash",
            state=ToolStateRunning(input=arguments, title=command, time=ToolTime(start=start)),
        )
        await self.ctx.add_message(info, part)
        ctx = self._tool_context(session, info.id, part.call_id)
        ctx.permissions["bash"] = "allow"
        try:
            result = await self.ctx.registry.run("bash", arguments, ctx)
        except AgentTuiError as exc:
            part.state = ToolStateError(
                input=arguments, error=str(exc), time=ToolTime(start=start, end=now_ms())
            )
            output = str(exc)
        else:
            part.state = ToolStateCompleted(
                input=arguments,
                output=result.output,
                title=command,
                metadata=result.metadata,
                time=ToolTime(start=start, end=now_ms()),
            )
            output = result.output
        await self._add_part(part)
        await self._add_part(
            TextPart(
                id=part_id(),
                session_id=session_id,
                message_id=info.id,
                text=shell_text(command, output),
                synthetic=True,
            )
        )
        return part

    def _tool_context(self, session: Session, message: str, call_id: str = "") -> ToolContext:
        """What a tool run on the person's behalf needs (mentions, `!command`): nobody
        is asked, so only what config or 'always' allows runs beyond the given grants."""
        context = self.ctx.tool_context(
            session.id,
            message,
            Path(session.directory),
            call_id=call_id,
            permissions=dict(self.ctx.permissions_for(session.id)),
        )
        context.ask = None
        return context

    async def _add_part(self, part: Part) -> None:
        await self.ctx.db.upsert_part(part, flush=True)
        self.ctx.publish(PartUpdated(part=part))

    async def compact(
        self, session_id: str, instructions: str | None = None, *, model: str | None = None
    ) -> LoopResult | None:
        """Manual compaction (`/compact [instructions]`): summarise now, then stop."""
        model = model or await self.session_model(session_id)
        await check_credentials(self.ctx.config.compaction.model or model, self.ctx.config)
        await compaction.create_request(
            self.ctx, session_id, auto=False, model=model, instructions=instructions
        )
        if self.is_busy(session_id):
            return None
        return await self.run(session_id)

    async def compaction_plan(
        self, session_id: str, instructions: str | None = None, *, model: str | None = None
    ) -> CompactionPlan:
        """What `compact` would do now (`--dry-run`): nothing is sent or saved."""
        model = model or await self.session_model(session_id)
        session = await self.ctx.db.get_session(session_id)
        history = await load_history(self.ctx, session)
        if not history:
            raise UsageError("Nothing to compact yet: the session has no messages.")
        await load_litellm()
        info = await asyncio.to_thread(model_info, model, self.ctx.config)
        return await asyncio.to_thread(plan, self.ctx, session, history, info, instructions)

    async def uncompact(self, session_id: str, *, model: str | None = None) -> Uncompacted:
        """Take back the newest compaction (UsageError if there is none or it won't fit)."""
        if self.is_busy(session_id):
            raise UsageError(
                "The agent is working: interrupt it (Esc) before undoing a compaction."
            )
        model = model or await self.session_model(session_id)
        session = await self.ctx.db.get_session(session_id)
        await load_litellm()  # credentials and model info need it: never on the event loop
        info = await asyncio.to_thread(model_info, model, self.ctx.config)
        return await uncompact(self.ctx, session, info)

    # ---- undo / redo of turns (files included) --------------------------------------

    def _check_idle(self, session_id: str, what: str) -> None:
        if self.is_busy(session_id):
            raise UsageError(f"The agent is working: interrupt it (Esc) before {what}.")

    async def undo(self, session_id: str, *, force: bool = False) -> TurnRestored:
        """Undo the newest turn: restore the files it changed and hide it from the model
        (UndoConflict, nothing changed, when the person changed one of them since)."""
        self._check_idle(session_id, "undoing a turn")
        return await turns.undo(self.ctx, await self.ctx.db.get_session(session_id), force=force)

    async def redo(self, session_id: str, *, force: bool = False) -> TurnRestored:
        """Redo the turn undone last (until a new message is sent)."""
        self._check_idle(session_id, "redoing a turn")
        return await turns.redo(self.ctx, await self.ctx.db.get_session(session_id), force=force)

    async def session_diff(self, session_id: str) -> str:
        """The unified diff of every file the session's turns changed ("" if none)."""
        return await turns.diff(self.ctx, await self.ctx.db.get_session(session_id))

    async def session_numstat(self, session_id: str) -> dict[str, tuple[int, int]]:
        """Lines added and removed per file the session's turns changed."""
        return await turns.numstat(self.ctx, await self.ctx.db.get_session(session_id))

    def fetch_instructions(self) -> None:
        """Fetch config `instructions` URLs in the background (needs a running event loop;
        a no-op without one, or when started already, or with no URLs). A failure is a
        warning notice, never an error (session/instruction_urls.py)."""
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

    async def run(self, session_id: str) -> LoopResult:
        await load_litellm()
        self.mcp.start()  # the engine may have been made before the event loop ran
        self.fetch_instructions()  # likewise
        await self.mcp.wait_ready()  # their tools in the first request (each within its timeout)
        if self._instruction_urls is not None:  # in the system prompt from the first request
            await asyncio.shield(self._instruction_urls)
        abort = asyncio.Event()
        self._aborts[session_id] = abort
        task = asyncio.create_task(SessionLoop(self.ctx, session_id, abort).run())
        self._runs[session_id] = task
        try:
            return await task
        finally:
            self._runs.pop(session_id, None)
            self._aborts.pop(session_id, None)

    async def close(self) -> None:
        """Stop what the engine started outside a run: the MCP servers (their processes),
        a fetch of instruction URLs still under way."""
        if self._instruction_urls is not None and not self._instruction_urls.done():
            self._instruction_urls.cancel()
        await self.mcp.close()

    def abort(self, session_id: str) -> bool:
        """Interrupt the running step or compaction; streamed text is kept."""
        # A subagent's session shares its parent's event: Esc there stops the whole turn.
        event = self._aborts.get(session_id) or self.subagents.running.get(session_id)
        if event is None:
            return False
        event.set()
        return True

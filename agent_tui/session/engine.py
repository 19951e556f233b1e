"""The engine's front door: views send commands in (prompt, compact, abort) and render
the events that come out of the bus."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from pathlib import Path

from agent_tui.errors import UsageError
from agent_tui.events import SessionUpdated
from agent_tui.ids import message_id, part_id
from agent_tui.provider.auth import check_credentials
from agent_tui.provider.limits import model_info
from agent_tui.provider.loader import load_litellm
from agent_tui.session import compaction
from agent_tui.session.compaction_plan import CompactionPlan, plan
from agent_tui.session.context import EngineContext
from agent_tui.session.history import load_history, model_of
from agent_tui.session.loop import LoopResult, SessionLoop
from agent_tui.session.title import default_title, generate_title
from agent_tui.session.uncompact import Uncompacted, uncompact
from agent_tui.storage.models import Session, TextPart, UserMessage
from agent_tui.tool.saved_outputs import start_cleanup


class Engine:
    def __init__(self, ctx: EngineContext, *, model_titles: bool = False) -> None:
        self.ctx = ctx
        self.model_titles = model_titles
        """Ask the model for a title on the first message (the app does; `run` does not)."""
        self._background: set[asyncio.Task[object]] = set()
        self._aborts: dict[str, asyncio.Event] = {}
        self._runs: dict[str, asyncio.Task[LoopResult]] = {}
        self.saved_outputs_cleanup: Future[int] = start_cleanup(
            ctx.output_dir, ctx.config.truncation.retention_days
        )
        """Deleting saved outputs older than truncation.retention_days, in the background."""

    # ---- sessions ---------------------------------------------------------------------

    async def new_session(self, directory: Path) -> Session:
        session = await self.ctx.db.create_session(str(directory))
        self.ctx.publish(SessionUpdated(session=session))
        return session

    def is_busy(self, session_id: str) -> bool:
        task = self._runs.get(session_id)
        return task is not None and not task.done()

    async def session_model(self, session_id: str) -> str:
        """The model of the session's newest user message, else the configured one."""
        session = await self.ctx.db.get_session(session_id)
        return model_of(await load_history(self.ctx, session), self.ctx.config.model)

    # ---- commands ---------------------------------------------------------------------

    async def prompt(
        self, session_id: str, text: str, *, model: str | None = None
    ) -> LoopResult | None:
        """Add a user message and run the loop; while the loop runs, the message is queued
        (it reaches the model as a reminder) and None is returned."""
        if not text.strip():
            raise UsageError("The message is empty: type something to send.")
        model = model or await self.session_model(session_id)
        # Fail before saving anything the model can't answer.
        await check_credentials(model, self.ctx.config)
        session = await self.ctx.db.get_session(session_id)
        info = UserMessage(
            id=message_id(), session_id=session_id, model=model, queued=self.is_busy(session_id)
        )
        part = TextPart(id=part_id(), session_id=session_id, message_id=info.id, text=text)
        await self.ctx.add_message(info, part)
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

    async def run(self, session_id: str) -> LoopResult:
        await load_litellm()
        abort = asyncio.Event()
        self._aborts[session_id] = abort
        task = asyncio.create_task(SessionLoop(self.ctx, session_id, abort).run())
        self._runs[session_id] = task
        try:
            return await task
        finally:
            self._runs.pop(session_id, None)
            self._aborts.pop(session_id, None)

    def abort(self, session_id: str) -> bool:
        """Interrupt the running step or compaction; streamed text is kept."""
        event = self._aborts.get(session_id)
        if event is None:
            return False
        event.set()
        return True

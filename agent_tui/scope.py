"""What a command acts on: one session and its project. Views and commands get it from
`Engine.scope` and hand it to the mechanism (context/, session/undo.py, session/fork.py,
session/pin_changes.py); they read its session and workspace, never its `ctx`
(tests/test_layers.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_tui.config.settings import Config
from agent_tui.engine_context import EngineContext
from agent_tui.errors import UsageError
from agent_tui.live_session import LiveSession
from agent_tui.provider import windows
from agent_tui.provider.limits import ModelInfo, load_with_summariser
from agent_tui.records import MessageWithParts, Session, UserMessage
from agent_tui.step.history import load_history, model_of
from agent_tui.storage.session_lock import LockHolder, SessionLock, SessionLocks
from agent_tui.tool.background import BackgroundCommands
from agent_tui.workspace.workspace import Workspace


@dataclass
class SessionScope:
    ctx: EngineContext
    """The session's project on the engine: for the mechanism alone."""
    session: Session
    busy: Callable[[], bool]
    """Its loop runs now (in this process: here, or as a subagent of a running one)."""
    locks: SessionLocks
    """One loop per session across processes (storage/session_lock.py): the engine's."""

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def directory(self) -> Path:
        return Path(self.session.directory)

    @property
    def workspace(self) -> Workspace:
        return self.ctx.workspace

    @property
    def live(self) -> LiveSession:
        """Its state in this process (an editor's files and MCP servers, its modes)."""
        return self.ctx.live(self.id)

    @property
    def background(self) -> BackgroundCommands:
        """The commands its model left running here: `list()` them, `stop(id)` one."""
        return self.live.background

    async def fresh(self) -> Session:
        """The session as stored now (read again once it is held)."""
        self.session = await self.ctx.db.get_session(self.id)
        return self.session

    async def history(self) -> list[MessageWithParts]:
        return await load_history(self.ctx, self.session)

    async def model(self) -> str:
        """The model of the session's newest user message, else the configured one;
        messages to an agent with a model of its own don't count (that is the agent's)."""
        catalog = self.workspace.agent_catalog()

        def own_model(message: MessageWithParts) -> bool:
            info = message.info
            agent = catalog.get(info.agent) if isinstance(info, UserMessage) else None
            return agent is None or agent.model is None

        history = [m for m in await self.history() if own_model(m)]
        return model_of(history, self.ctx.config.model)

    @contextlib.contextmanager
    def idle(self, what: str) -> Iterator[None]:
        """Hold the session (no loop anywhere) while rewriting its history; UsageError
        naming where it is busy otherwise."""
        if self.busy():
            raise UsageError(f"The agent is working: interrupt it (Esc) before {what}.")
        if (lock := self.locks.try_acquire(self.id)) is None:
            holder = self.locks.holder(self.id) or LockHolder()
            raise UsageError(
                f"Session {self.id} is busy in {holder.describe()}: wait for its turn to "
                f"end (or interrupt it there) before {what}."
            )
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def claim(self) -> Iterator[tuple[bool, SessionLock | None]]:
        """(busy here, the session's lock if this command starts the loop), given back when
        the body fails. No await before the body: of two commands, of any processes, only
        one starts the loop."""
        live = self.live
        busy, lock = self.busy(), None
        if busy:  # the running loop reads it (session/follow.all_read)
            live.arrivals += 1
            live.arriving += 1
        elif (lock := self.locks.try_acquire(self.id)) is not None:
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

    @contextlib.contextmanager
    def held(self) -> Iterator[bool]:
        """Held against a loop elsewhere while idle here (True); not held (False) while
        its loop runs, here or in another process."""
        lock = None if self.busy() else self.locks.try_acquire(self.id)
        try:
            yield lock is not None
        finally:
            if lock is not None:
                lock.release()


async def limits(config: Config, model: str) -> ModelInfo:
    """The model's limits and prices (and the summariser's, when one is set) with the
    project's config, a local server's window asked first: awaited, as litellm may still
    be importing."""
    await windows.discover_window(model, config)
    return await load_with_summariser(model, config)

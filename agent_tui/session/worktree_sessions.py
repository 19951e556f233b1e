"""Sessions in their own git worktrees: one started in a new worktree (`-w`, `/new -w`,
the EnterWorktree tool), and what leaving it does: a worktree with no change goes with
its branch; one with changes stays until the person says otherwise."""

from __future__ import annotations

from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.errors import NotFoundError
from agent_tui.events import SessionUpdated
from agent_tui.records import Session, Worktree
from agent_tui.worktrees import git_worktree
from agent_tui.worktrees.git_worktree import WorktreeError


class SessionWorktrees:
    """`Engine.worktrees`: what every front-end does with a session's worktree."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    async def make(self, directory: Path, name: str | None = None) -> Worktree:
        """A new worktree of the repository `directory` is in (`/new -w`: made before the
        session left hears its end, so a refusal leaves it as it was)."""
        return await git_worktree.create(directory, name)

    async def new_session(self, worktree: Worktree) -> Session:
        """A new session working in a worktree made already (the CLI makes it first: the
        config it loads is the worktree's)."""
        session = await self.ctx.db.create_session(worktree.path, worktree=worktree)
        self.ctx.publish(SessionUpdated(session=session))
        return session

    async def move(self, session_id: str, name: str | None = None) -> Worktree:
        """The session moved into a new worktree of its repository (the enter_worktree
        tool): its directory, sandbox root and tools' working directory are the
        worktree's from its next step on (the loop reads the session each step)."""
        session = await self.ctx.db.get_session(session_id)
        if session.worktree is not None and not session.worktree.removed:
            raise WorktreeError(
                f"This session works in the worktree {session.worktree.path} already: "
                "a session enters one worktree."
            )
        worktree = await git_worktree.create(Path(session.directory), name)
        session.worktree, session.directory = worktree, worktree.path
        await self.ctx.db.update_session(session)
        self.ctx.publish(SessionUpdated(session=session))
        return worktree

    async def changed(self, session_id: str) -> bool:
        """Whether the session's worktree holds work (status or commits beyond its base)."""
        worktree = (await self.ctx.db.get_session(session_id)).worktree
        return worktree is not None and await git_worktree.changed(worktree)

    async def remove(self, session_id: str) -> None:
        """The session's worktree and branch, gone; the session remembers it was."""
        session = await self.ctx.db.get_session(session_id)
        if session.worktree is None or session.worktree.removed:
            return
        await git_worktree.remove(session.worktree)
        session.worktree.removed = True
        await self.ctx.db.update_session(session)
        self.ctx.publish(SessionUpdated(session=session))

    async def leave(self, session_id: str) -> Worktree | None:
        """Leaving the session: its worktree removed when it has no change; the worktree
        kept (returned) when it has, for the front-end to say or ask about. A session
        gone (a first prompt a hook refused leaves none) has nothing to leave."""
        try:
            session = await self.ctx.db.get_session(session_id)
        except NotFoundError:
            return None
        worktree = session.worktree
        if worktree is None or worktree.removed:
            return None
        if await git_worktree.changed(worktree):
            return worktree
        await self.remove(session_id)
        return None

    async def leave_made(self, worktree: Worktree) -> Worktree | None:
        """`leave` for the session started in a worktree made before it (`run -w`): a
        run that failed before its session existed leaves an unchanged worktree too."""
        session = await self.ctx.db.latest_session(worktree.path)
        if session is not None and session.worktree is not None:
            return await self.leave(session.id)
        if await git_worktree.changed(worktree):
            return worktree
        await git_worktree.remove(worktree)
        return None

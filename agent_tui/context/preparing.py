"""Who prepares a session's summary now, across processes.

Every front-end prepares in its own process while it runs (context/prepared.py). When it
closes with a summary still being written (`run` exits as soon as its turn ends; the
app, the ACP agent or the server may quit), the request goes on in the person's warm
relay, which saves the summary itself when no command is left to read its end
(provider/detached.py, context/prepared_left.py); the next command on that session uses it,
or waits for the rest of it at the threshold (`wait_elsewhere`). Nothing is asked
twice: the summariser call that was under way is the one that finishes. With no warm
relay (`relay.idle` 0) the summary is dropped with its command, and the next command
past the preparation's start (context/prepare_lead.py) prepares it again before its
first step.

Whoever prepares a session's summary holds its lock in `<database dir>/prepare-locks`
(the session locks' mechanism, storage/session_lock.py), the relay in its
`relay/` folder from the moment the request reaches it: two processes never prepare the
same session at once, a killed preparer's lock is dropped by the kernel, and `sessions
--json` shows who prepares now. Nothing is written until the summary is whole, so a
kill -9 of either leaves nothing half-written.
"""

from __future__ import annotations

import asyncio

from agent_tui.context.prepared_left import LOCK_DIR, relay_locks
from agent_tui.engine_context import EngineContext
from agent_tui.storage.session_lock import LockHolder, SessionLocks

POLL = 0.1
"""Seconds between looks at another process's preparation while waiting for it."""


def locks(ctx: EngineContext) -> SessionLocks:
    return SessionLocks(ctx.db.path.parent / LOCK_DIR, ctx.front_end)


def holder(ctx: EngineContext, session_id: str) -> LockHolder | None:
    """Who prepares the session's summary now: a command, or the relay finishing
    one a command left."""
    return locks(ctx).holder(session_id) or relay_locks(ctx.db.path).holder(session_id)


def elsewhere(ctx: EngineContext, session_id: str) -> LockHolder | None:
    """Who prepares the session's summary now in another process (or the relay)."""
    live = ctx.shared.sessions.get(session_id)
    if live is not None and live.is_preparing:
        return None  # this process's own (the relay's lock beside it is its request's)
    return holder(ctx, session_id)


async def wait_elsewhere(ctx: EngineContext, session_id: str, abort: asyncio.Event) -> bool:
    """Until another process's preparation of the session ends (its summary is then in
    the database); False when `abort` was set first."""
    while elsewhere(ctx, session_id) is not None:
        if abort.is_set():
            return False
        await asyncio.sleep(POLL)
    return not abort.is_set()

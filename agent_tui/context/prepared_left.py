"""The relay's side of a summary prepared in the background whose command ended
before it did (`ModelRequest.save_when_left`): the saver agent_tui/relay_process.py
wires into the transport of detached requests (provider/detached.py, which never imports
context/). The relay holds the session's preparation lock from the moment the request
arrives, so no command starts the same summary again meanwhile, and saves the summary
itself when no command is left to read its end. It writes nothing until the summary is
whole: a kill -9 of the relay leaves nothing half-written, as a kill -9 of the command
does (context/prepared.py)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from agent_tui.ids import now_ms
from agent_tui.provider.stream_events import SaveWhenLeft, event_adapter, summary_of
from agent_tui.storage.session_lock import SessionLock, SessionLocks
from agent_tui.usage import cost_of

log = logging.getLogger(__name__)

LOCK_DIR = "prepare-locks"
"""Beside the database: who prepares a session's summary now (context/preparing.py)."""
RELAY_LOCKS = "relay"
"""Inside LOCK_DIR: the relay's own locks, beside the command's."""
FRONT_END = "agent-tui relay"


def relay_locks(database: Path) -> SessionLocks:
    return SessionLocks(database.parent / LOCK_DIR / RELAY_LOCKS, FRONT_END)


def hold(spec: SaveWhenLeft) -> SessionLock | None:
    """The relay's lock on the session's preparation (None: another relay holds it)."""
    session_id = str(spec.prepared.get("session_id", ""))
    try:
        return relay_locks(Path(spec.database)).try_acquire(session_id)
    except Exception:  # its folder cannot be made: only the wait is less precise
        log.warning("cannot lock the preparation of %s", session_id, exc_info=True)
        return None


async def save(spec: SaveWhenLeft, replies: list[dict[str, Any]], started: float) -> None:
    """Save the summary the kept request streamed (`replies`, ending in `end`)."""
    from agent_tui.records import PreparedSummary
    from agent_tui.storage.db import Database

    adapter = event_adapter()
    written = summary_of([adapter.validate_python(r["e"]) for r in replies if "e" in r])
    if written is None:
        return
    text, tokens = written
    prepared = PreparedSummary.model_validate(
        {
            **spec.prepared,
            "text": text,
            "tokens": tokens,
            "cost": cost_of(tokens, spec.prices),
            "seconds": round(time.monotonic() - started, 2),
            "created": now_ms(),  # its age counts from when it was whole
        }
    )
    db = await Database.open(Path(spec.database))
    try:
        await db.save_prepared(prepared)
    finally:
        await db.close()
    log.info("saved the summary prepared for %s after its command ended", prepared.session_id)

"""The newest page of the session `agent-tui --continue` opens, read straight from the
SQLite file while the engine and the config are not imported yet: the app draws it
first, then opens the engine (tui/app.py). Only sqlite3 and the data models: anything
unusual (no database, no session, no message, a damaged or older file) gives None, and
the engine's own opening says what is wrong."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from pydantic import ValidationError

from agent_tui import paths
from agent_tui.records import MessageWithParts, Session
from agent_tui.storage import rows

LATEST_ROOT = (
    f"{rows.SELECT_SESSION} WHERE directory = ? AND parent_id IS NULL"
    " ORDER BY updated DESC, id DESC LIMIT 1"
)
"""`Database.latest_session`'s pick: the newest session a person started there."""
Page = tuple[Session, list[MessageWithParts]]


def newest_page(directory: Path, limit: int) -> Page | None:
    """The session `--continue` opens in `directory` and its newest `limit` messages (the
    ones taken back with /undo left out), or None."""
    database = paths.database_path()
    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as conn:
            conn.row_factory = sqlite3.Row
            found = conn.execute(LATEST_ROOT, (str(directory),)).fetchone()
            if found is None:
                return None
            session = rows.parse_session(found)
            newest = conn.execute(rows.NEWEST_MESSAGE_IDS, (session.id, limit)).fetchall()
            if not newest:
                return None
            since = (session.id, newest[-1][0])
            page = rows.history(
                conn.execute(rows.HISTORY_MESSAGES, since).fetchall(),
                conn.execute(rows.HISTORY_PARTS, since),
            )
    except (sqlite3.Error, ValidationError, ValueError):
        return None
    page = [m for m in page if not m.info.undone]
    return (session, page) if page else None

"""Forward migrations: an older database is upgraded in place and keeps its data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from agent_tui import ids
from agent_tui.errors import StorageError
from agent_tui.records import TextPart, UserMessage
from agent_tui.storage import schema
from agent_tui.storage.db import Database


def version_of(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]


def tables_of(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {row[0] for row in found}


def columns_of(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}


async def make_v1_database(path: Path):
    """A database at schema version 1 (before the search index) with one session,
    message and part: made with the current code, then taken back to version 1."""
    db = await Database.open(path)
    async with db:
        session = await db.create_session("/repo", "old work")
        info = UserMessage(id=ids.message_id(), session_id=session.id)
        await db.upsert_message(info)
        await db.upsert_part(
            TextPart(id=ids.part_id(), session_id=session.id, message_id=info.id, text="kept")
        )
        exported = await db.export_session(session.id)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE part_fts")
        conn.execute("DROP TABLE search_state")
        conn.execute("DROP TABLE todo")
        conn.execute("DROP TABLE prepared_summary")
        conn.execute("UPDATE schema_version SET version = 1")
    return exported


async def test_a_new_file_gets_the_latest_schema(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    async with await Database.open(path):
        pass
    assert version_of(path) == schema.latest_version()
    assert {"schema_version", "session", "message", "part"} <= tables_of(path)


@pytest.mark.parametrize("kind", ["empty file", "empty sqlite database"])
async def test_a_version_0_file_is_initialised(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "zero.db"
    if kind == "empty file":
        path.write_bytes(b"")
    else:
        sqlite3.connect(path).execute("PRAGMA user_version = 0").connection.close()
    async with await Database.open(path) as db:
        await db.create_session("/repo")
    assert version_of(path) == schema.latest_version()


async def test_pending_migrations_run_and_data_survives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    exported = await make_v1_database(path)
    assert version_of(path) == 1

    async def backfill_pins(conn: aiosqlite.Connection) -> None:
        await conn.execute("UPDATE session SET pinned = 1 WHERE title = 'old work'")

    pretend = [
        *schema.MIGRATIONS,
        ("ALTER TABLE session ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",),
        backfill_pins,
    ]
    monkeypatch.setattr(schema, "MIGRATIONS", pretend)
    async with await Database.open(path) as db:
        assert await db.export_session(exported.session.id) == exported
    assert version_of(path) == len(pretend)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT pinned FROM session").fetchall() == [(1,)]

    async with await Database.open(path):  # already current: nothing runs twice
        pass
    assert version_of(path) == len(pretend)


async def test_a_failing_migration_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    exported = await make_v1_database(path)
    broken = ("CREATE TABLE half_done (x INTEGER)", "THIS IS NOT SQL")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS[:1], broken])
    with pytest.raises(StorageError, match="schema version 2") as caught:
        await Database.open(path)
    assert "rolled back" in str(caught.value)
    assert version_of(path) == 1
    assert "half_done" not in tables_of(path)
    assert "pinned" not in columns_of(path, "session")

    monkeypatch.undo()  # a working upgrade, later, finds everything there
    async with await Database.open(path) as db:
        assert await db.export_session(exported.session.id) == exported


async def test_an_old_database_is_indexed_for_recall_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    exported = await make_v1_database(path)
    async with await Database.open(path) as db:
        await db._backfill  # the background index of an old database
        hits = await db.search_parts(exported.session.id, "kept")
    assert [hit.excerpt for hit in hits] == ["kept"]
    assert version_of(path) == schema.latest_version() == 4

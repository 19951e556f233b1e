"""Opening never damages a file that is not ours; failures say what to do."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from agent_tui import ids
from agent_tui.errors import StorageError
from agent_tui.records import TextPart, UserMessage
from agent_tui.storage import schema
from agent_tui.storage.db import Database


def assert_helpful(error: pytest.ExceptionInfo[StorageError], path: Path) -> None:
    message = str(error.value)
    assert str(path) in message
    assert "AGENT_TUI_DATA_DIR" in message


def store(tmp_path: Path) -> Path:
    """A database path in a directory of its own (so its siblings can be checked)."""
    (tmp_path / "store").mkdir()
    return tmp_path / "store" / "agent-tui.db"


def siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


async def test_random_bytes_are_refused_and_left_untouched(tmp_path: Path) -> None:
    path = store(tmp_path)
    garbage = random.Random(7).randbytes(8192)
    path.write_bytes(garbage)
    with pytest.raises(StorageError, match="not a SQLite database") as caught:
        await Database.open(path)
    assert_helpful(caught, path)
    assert path.read_bytes() == garbage
    assert siblings(path) == {"agent-tui.db"}  # no -wal / -shm either


async def test_sqlite_header_with_garbage_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = store(tmp_path)
    garbage = b"SQLite format 3\x00" + random.Random(8).randbytes(8192)
    path.write_bytes(garbage)
    with pytest.raises(StorageError) as caught:
        await Database.open(path)
    assert_helpful(caught, path)
    assert path.read_bytes() == garbage


async def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = store(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StorageError, match="not created by agent-tui") as caught:
        await Database.open(path)
    assert_helpful(caught, path)
    assert path.read_bytes() == before


async def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = store(tmp_path)
    db = await Database.open(path)
    await db.create_session("/r")
    await db.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (schema.latest_version() + 1,))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StorageError, match="newer agent-tui") as caught:
        await Database.open(path)
    assert "Upgrade agent-tui" in str(caught.value)
    assert path.read_bytes() == before


async def test_a_directory_at_the_database_path_is_refused(tmp_path: Path) -> None:
    path = store(tmp_path)
    path.mkdir()
    (path / "inside.txt").write_text("x")
    with pytest.raises(StorageError, match="directory") as caught:
        await Database.open(path)
    assert_helpful(caught, path)
    assert (path / "inside.txt").read_text() == "x"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
async def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = store(tmp_path)
    async with await Database.open(path):
        pass
    path.chmod(0)
    try:
        with pytest.raises(StorageError, match="cannot open") as caught:
            await Database.open(path)
        assert_helpful(caught, path)
    finally:
        path.chmod(0o600)


async def test_a_parent_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    with pytest.raises(StorageError, match="cannot create the directory"):
        await Database.open(tmp_path / "data" / "agent-tui.db")


async def test_a_corrupted_page_is_reported_not_hidden(tmp_path: Path) -> None:
    path = store(tmp_path)
    async with await Database.open(path) as db:
        session = await db.create_session("/r")
        info = UserMessage(id=ids.message_id(), session_id=session.id)
        await db.upsert_message(info)
        for _ in range(50):
            part = TextPart(id=ids.part_id(), session_id=session.id, message_id=info.id)
            await db.upsert_part(part.model_copy(update={"text": "x" * 2000}))
        assert [tuple(r) for r in await db._fetch("PRAGMA quick_check")] == [("ok",)]
    data = bytearray(path.read_bytes())
    page_size = 4096
    data[page_size * 3 : page_size * 6] = random.Random(9).randbytes(page_size * 3)
    path.write_bytes(bytes(data))
    async with await Database.open(path) as db:  # page 1 is intact: opening works
        with pytest.raises(StorageError, match="corrupted") as caught:
            await db.messages(session.id)
        assert_helpful(caught, path)
        with pytest.raises(StorageError, match="corrupted"):
            await db._fetch("PRAGMA quick_check")
    assert path.read_bytes() == bytes(data)


async def test_a_lock_held_by_another_process_is_explained(tmp_path: Path) -> None:
    path = store(tmp_path)
    db = await Database.open(path, busy_timeout_ms=100, flush_interval=3600)
    session = await db.create_session("/r")
    info = UserMessage(id=ids.message_id(), session_id=session.id)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        await db.upsert_message(info)
        with pytest.raises(StorageError, match="another agent-tui process") as caught:
            await db.flush()
        assert_helpful(caught, path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await db.flush()  # the pending write was kept and goes through now
    assert [m.info for m in await db.messages(session.id)] == [info]
    await db.close()


async def test_a_new_file_locked_during_creation_is_explained(tmp_path: Path) -> None:
    path = store(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StorageError, match="another agent-tui process"):
            await Database.open(path, busy_timeout_ms=100)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with await Database.open(path) as db:
        assert await db.list_sessions() == []

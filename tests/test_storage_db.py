"""Database: sessions, messages and parts, batched writes, history reads, export."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agent_tui import ids
from agent_tui.errors import NotFoundError, StorageError
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    FilePart,
    PatchPart,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    SubtaskPart,
    TextPart,
    Tokens,
    ToolPart,
    ToolStateCompleted,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.storage import rows
from agent_tui.storage.db import Database
from agent_tui.storage.sessions import AmbiguousIdError

SLOW = 3600.0  # a flush interval that never fires during a test


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "agent-tui.db"


@pytest.fixture
async def db(db_path: Path):
    database = await Database.open(db_path, flush_interval=SLOW)
    yield database
    await database.close()


def user(session_id: str) -> UserMessage:
    return UserMessage(id=ids.message_id(), session_id=session_id, model="fake/model")


def assistant(session_id: str, parent: str, **fields) -> AssistantMessage:
    return AssistantMessage(id=ids.message_id(), session_id=session_id, parent_id=parent, **fields)


def text(info, body: str = "hi") -> TextPart:
    return TextPart(id=ids.part_id(), session_id=info.session_id, message_id=info.id, text=body)


def raw_rows(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read with a separate plain sqlite3 connection: what another process would see."""
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, params).fetchall()


async def test_open_creates_directory_and_sets_pragmas(db: Database, db_path: Path) -> None:
    assert db_path.is_file()
    assert raw_rows(db_path, "PRAGMA journal_mode") == [("wal",)]
    pragmas = {}
    for name in ("foreign_keys", "busy_timeout", "synchronous"):
        pragmas[name] = (await db._fetch(f"PRAGMA {name}"))[0][0]
    assert pragmas == {"foreign_keys": 1, "busy_timeout": 5000, "synchronous": 1}


async def test_session_lifecycle(db: Database, db_path: Path) -> None:
    first = await db.create_session("/repo/a", "first")
    second = await db.create_session("/repo/a", "second")
    other = await db.create_session("/repo/b")
    child = await db.create_session("/repo/a", "subtask", parent_id=second.id)
    assert await db.get_session(first.id) == first

    # Age them (all were created within a millisecond or two), newest last created.
    with sqlite3.connect(db_path) as conn:
        for age, session in enumerate((first, second, other, child)):
            conn.execute("UPDATE session SET updated = ? WHERE id = ?", (age + 1, session.id))
    await db.touch_session(first.id)
    listed = [s.id for s in await db.list_sessions("/repo/a")]
    assert listed[0] == first.id and set(listed) == {first.id, second.id, child.id}
    assert len(await db.list_sessions()) == 4
    assert len(await db.list_sessions(limit=2)) == 2
    assert [s.id for s in await db.list_sessions("/repo/b")] == [other.id]

    await db.touch_session(child.id)
    latest = await db.latest_session("/repo/a")
    assert latest is not None and latest.id == first.id  # subtask sessions are skipped
    assert await db.latest_session("/nowhere") is None

    renamed = (await db.get_session(second.id)).model_copy(
        update={"title": "renamed", "compaction_id": "msg_x", "tail_start_id": "msg_w"}
    )
    await db.update_session(renamed)
    stored = await db.get_session(second.id)
    assert (stored.title, stored.compaction_id, stored.tail_start_id) == (
        "renamed",
        "msg_x",
        "msg_w",
    )

    with pytest.raises(NotFoundError, match="agent-tui sessions"):
        await db.get_session("ses_missing")
    with pytest.raises(NotFoundError):
        await db.update_session(renamed.model_copy(update={"id": "ses_missing"}))


async def test_find_session_by_prefix(db: Database) -> None:
    a = await db.create_session("/r", "alpha")
    b = await db.create_session("/r", "beta")
    assert (await db.find_session_by_prefix(a.id)).id == a.id
    assert (await db.find_session_by_prefix(b.id[:-3])).id == b.id
    assert (await db.find_session_by_prefix(b.id.removeprefix("ses_"))).id == b.id
    with pytest.raises(AmbiguousIdError) as caught:
        await db.find_session_by_prefix("ses_")
    assert a.id in str(caught.value) and b.id in str(caught.value)
    with pytest.raises(NotFoundError, match="agent-tui sessions"):
        await db.find_session_by_prefix("ses_zzz")


async def test_messages_round_trip_every_part_type_in_id_order(db: Database) -> None:
    session = await db.create_session("/r")
    question = user(session.id)
    answer = assistant(session.id, question.id, finish="stop", cost=0.5)
    sid = session.id

    def ids_for(info):
        return {"id": ids.part_id(), "session_id": sid, "message_id": info.id}

    question_parts = [
        text(question, "hello"),
        FilePart(**ids_for(question), mime="image/png", url="data:,x", filename="x.png"),
        CompactionPart(**ids_for(question), auto=True, overflow=True),
    ]
    answer_parts = [
        StepStartPart(**ids_for(answer)),
        ReasoningPart(**ids_for(answer), text="thinking"),
        ToolPart(
            **ids_for(answer),
            call_id="call_1",
            tool="read",
            state=ToolStateCompleted(
                input={"path": "a.py"}, output="print(1)", time=ToolTime(start=1, end=2)
            ),
        ),
        PatchPart(**ids_for(answer), files=["a.py"]),
        SubtaskPart(**ids_for(answer), prompt="look around"),
        StepFinishPart(**ids_for(answer), reason="stop", tokens=Tokens(input=10), cost=0.5),
    ]
    # Saved out of order: reads come back in id order anyway.
    await db.upsert_message(answer)
    await db.upsert_message(question)
    for part in reversed(question_parts + answer_parts):
        await db.upsert_part(part)

    history = await db.messages(sid)
    assert [m.info for m in history] == [question, answer]
    assert history[0].parts == question_parts
    assert history[1].parts == answer_parts
    assert await db.all_messages(sid) == history
    assert await db.get_message(answer.id) == answer
    assert await db.get_part(answer_parts[2].id) == answer_parts[2]
    with pytest.raises(NotFoundError):
        await db.get_message("msg_missing")


async def test_messages_since_id_skips_earlier_history(db: Database) -> None:
    session = await db.create_session("/r")
    infos = [user(session.id) for _ in range(5)]
    for info in infos:
        await db.upsert_message(info)
        await db.upsert_part(text(info, info.id))
    tail = await db.messages(session.id, since_id=infos[2].id)
    assert [m.info.id for m in tail] == [i.id for i in infos[2:]]
    assert [m.parts[0].text for m in tail] == [i.id for i in infos[2:]]


async def test_history_queries_use_the_indexes(db: Database) -> None:
    plans = {}
    for name in ("HISTORY_MESSAGES", "HISTORY_PARTS"):
        sql = getattr(rows, name)
        plan = await db._fetch(f"EXPLAIN QUERY PLAN {sql}", ("ses_a", "msg_b"))
        plans[name] = " ".join(str(row[3]) for row in plan)
    assert "INDEX message_session (session_id=? AND id>?)" in plans["HISTORY_MESSAGES"]
    assert "INDEX part_session_message (session_id=? AND message_id>?)" in plans["HISTORY_PARTS"]
    assert "TEMP B-TREE" not in plans["HISTORY_MESSAGES"] + plans["HISTORY_PARTS"]


async def test_thousand_deltas_cost_one_row_write(db: Database, db_path: Path) -> None:
    session = await db.create_session("/r")
    info = user(session.id)
    part = text(info, "")
    await db.upsert_message(info)
    for i in range(1000):
        part.text += f"{i},"
        await db.upsert_part(part)
    assert raw_rows(db_path, "SELECT count(*) FROM part") == [(0,)]  # nothing written yet

    await db.flush()
    assert db.stats.flushes == 1
    assert db.stats.rows_written == 2  # the message and the part, once each
    assert db.stats.flush_seconds > 0
    stored = raw_rows(db_path, "SELECT data FROM part WHERE id = ?", (part.id,))
    assert rows.parse_part(stored[0][0]).text == part.text


async def test_background_flush_writes_without_explicit_flush(db_path: Path) -> None:
    db = await Database.open(db_path, flush_interval=0.01)
    try:
        session = await db.create_session("/r")
        info = user(session.id)
        await db.upsert_message(info)
        await db.upsert_part(text(info, "streamed"))
        for _ in range(2000):  # bounded wait (a hang guard): at most 20 s
            # Both: the row is on disk once the commit returns in aiosqlite's thread, and
            # the flush counts itself only when its coroutine resumes on this loop.
            if raw_rows(db_path, "SELECT count(*) FROM part") == [(1,)] and db.stats.flushes:
                break
            await asyncio.sleep(0.01)
        assert raw_rows(db_path, "SELECT count(*) FROM part") == [(1,)]
        assert db.stats.flushes >= 1
    finally:
        await db.close()


async def test_flushed_data_is_visible_to_a_second_instance(db: Database, db_path: Path) -> None:
    session = await db.create_session("/r")
    info = user(session.id)
    await db.upsert_message(info)
    await db.upsert_part(text(info, "durable"), flush=True)

    other = await Database.open(db_path, flush_interval=SLOW)
    try:
        history = await other.messages(session.id)
    finally:
        await other.close()
    assert history[0].parts[0].text == "durable"


async def test_close_flushes_pending_writes(db_path: Path) -> None:
    db = await Database.open(db_path, flush_interval=SLOW)
    session = await db.create_session("/r")
    info = user(session.id)
    await db.upsert_message(info)
    await db.upsert_part(text(info, "last words"))
    await db.close()
    await db.close()  # twice is harmless
    with pytest.raises(StorageError, match="closed"):
        await db.upsert_part(text(info))

    async with await Database.open(db_path) as reopened:
        assert (await reopened.messages(session.id))[0].parts[0].text == "last words"


async def test_a_part_without_its_message_is_reported_not_silently_lost(db: Database) -> None:
    session = await db.create_session("/r")
    info = user(session.id)
    good = text(info, "good")
    orphan = TextPart(id=ids.part_id(), session_id=session.id, message_id="msg_never_saved")
    await db.upsert_message(info)
    await db.upsert_part(good)
    await db.upsert_part(orphan)
    with pytest.raises(StorageError, match=orphan.id):
        await db.flush()
    assert (await db.messages(session.id))[0].parts == [good]  # the rest of the batch


async def test_an_unserializable_part_is_reported(db: Database) -> None:
    session = await db.create_session("/r")
    info = assistant(session.id, "msg_parent")
    bad = ToolPart(
        id=ids.part_id(),
        session_id=session.id,
        message_id=info.id,
        call_id="c",
        tool="bash",
        state=ToolStateRunning(metadata={"process": object()}),
    )
    await db.upsert_message(info)
    await db.upsert_part(bad)
    with pytest.raises(StorageError, match=bad.id):
        await db.flush()
    assert [m.info for m in await db.messages(session.id)] == [info]
    await db.flush()  # reported once, not forever


async def test_message_writes_bump_session_updated(db: Database, db_path: Path) -> None:
    session = await db.create_session("/r")
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE session SET updated = 1 WHERE id = ?", (session.id,))
    await db.upsert_message(user(session.id), flush=True)
    assert (await db.get_session(session.id)).updated > 1


async def test_session_summaries(db: Database) -> None:
    busy = await db.create_session("/r")
    empty = await db.create_session("/r")
    question = user(busy.id)
    older = assistant(busy.id, question.id, finish="tool-calls", cost=0.5)
    summary = assistant(busy.id, question.id, finish="stop", summary=True, cost=0.125)
    done = assistant(
        busy.id,
        question.id,
        finish="stop",
        cost=0.25,
        tokens=Tokens(input=900, output=100),
        context_limit=10_000,
    )
    for info in (question, older, summary, done, assistant(busy.id, question.id)):
        await db.upsert_message(info)  # the last one is still streaming

    found = await db.session_summaries([busy.id, empty.id, "ses_unknown"])
    assert found[busy.id].messages == 5
    assert found[busy.id].compactions == 1
    assert found[busy.id].cost == pytest.approx(0.875)
    assert found[busy.id].last_assistant == done
    from agent_tui.context.window_usage import context_usage

    usage = context_usage(found[busy.id].last_assistant, found[busy.id].cost)
    assert usage.percent == pytest.approx(10.0)
    assert found[empty.id].messages == 0 and found[empty.id].last_assistant is None
    assert found["ses_unknown"].messages == 0


async def test_export_import_round_trip(db: Database, tmp_path: Path) -> None:
    session = await db.create_session("/r", "exported")
    question = user(session.id)
    answer = assistant(session.id, question.id, finish="stop")
    running = ToolPart(
        id=ids.part_id(),
        session_id=session.id,
        message_id=answer.id,
        call_id="c1",
        tool="bash",
        state=ToolStateRunning(input={"command": "ls"}, time=ToolTime(start=5)),
    )
    for info in (question, answer):
        await db.upsert_message(info)
    for part in (text(question, "q"), text(answer, "a"), running):
        await db.upsert_part(part)
    exported = await db.export_session(session.id)

    async with await Database.open(tmp_path / "other.db") as other:
        assert await other.import_session(exported) == exported.session
        assert await other.export_session(session.id) == exported
        assert exported.model_validate_json(exported.model_dump_json()) == exported
        with pytest.raises(StorageError, match="already exists"):
            await other.import_session(exported)


async def test_a_flush_cancelled_while_waiting_for_a_lock_leaves_no_open_transaction(
    db_path: Path,
) -> None:
    db = await Database.open(db_path, flush_interval=SLOW, busy_timeout_ms=5000)
    session = await db.create_session("/r")
    info = user(session.id)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        task = asyncio.create_task(db.upsert_message(info, flush=True))
        await asyncio.sleep(0.1)  # BEGIN IMMEDIATE is now waiting on the worker thread
        task.cancel()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    await db.flush()  # no "transaction within a transaction"; the write was kept
    assert [m.info for m in await db.messages(session.id)] == [info]
    await db.close()

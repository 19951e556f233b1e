"""Crash recovery: open tool calls, unfinished replies and half-written summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_tui import ids
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStatePending,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.storage.db import Database
from agent_tui.storage.recovery import INTERRUPTED_TOOL_ERROR


@pytest.fixture
async def db(tmp_path: Path):
    database = await Database.open(tmp_path / "store" / "agent-tui.db", flush_interval=3600)
    yield database
    await database.close()


def tool(info: AssistantMessage, state) -> ToolPart:
    return ToolPart(
        id=ids.part_id(),
        session_id=info.session_id,
        message_id=info.id,
        call_id=f"call_{ids.part_id()}",
        tool="bash",
        state=state,
    )


async def crashed_turn(db: Database, session_id: str):
    """A user question and an assistant reply cut off while running tools."""
    question = UserMessage(id=ids.message_id(), session_id=session_id)
    reply = AssistantMessage(id=ids.message_id(), session_id=session_id, parent_id=question.id)
    running = tool(
        reply,
        ToolStateRunning(
            input={"command": "make"}, metadata={"output": "building"}, time=ToolTime(start=7)
        ),
    )
    pending = tool(reply, ToolStatePending(input={"command": "ls"}, raw='{"command": "ls"}'))
    done = tool(
        reply,
        ToolStateCompleted(input={"command": "pwd"}, output="/r", time=ToolTime(start=1, end=2)),
    )
    await db.upsert_message(question)
    await db.upsert_message(reply)
    for part in (running, pending, done):
        await db.upsert_part(part)
    return reply, running, pending, done


async def test_cleanup_closes_open_tools_and_unfinished_replies(db: Database) -> None:
    session = await db.create_session("/r")
    reply, running, pending, done = await crashed_turn(db, session.id)
    finished = AssistantMessage(
        id=ids.message_id(), session_id=session.id, parent_id=reply.parent_id, finish="stop"
    )
    await db.upsert_message(finished)

    assert await db.interrupted_parts_cleanup(session.id) == 3  # 2 tools + 1 reply

    fixed = await db.get_part(running.id)
    assert isinstance(fixed, ToolPart) and fixed.state.status == "error"
    assert fixed.state.error == INTERRUPTED_TOOL_ERROR
    assert fixed.state.input == {"command": "make"}
    assert fixed.state.metadata == {"output": "building"}
    assert fixed.state.time.start == 7 and fixed.state.time.end is not None

    fixed_pending = await db.get_part(pending.id)
    assert isinstance(fixed_pending, ToolPart) and fixed_pending.state.status == "error"
    assert fixed_pending.state.input == {"command": "ls"}
    assert await db.get_part(done.id) == done

    info = await db.get_message(reply.id)
    assert isinstance(info, AssistantMessage)
    assert info.error is not None and info.error.kind == "interrupted"
    assert info.completed is not None and info.finish is None
    assert await db.get_message(finished.id) == finished

    assert await db.interrupted_parts_cleanup(session.id) == 0  # idempotent


async def test_cleanup_scope(db: Database) -> None:
    first = await db.create_session("/r")
    second = await db.create_session("/r")
    await crashed_turn(db, first.id)
    _, other_running, _, _ = await crashed_turn(db, second.id)

    assert await db.interrupted_parts_cleanup(first.id) == 3
    untouched = await db.get_part(other_running.id)
    assert isinstance(untouched, ToolPart) and untouched.state.status == "running"
    assert await db.interrupted_parts_cleanup(None) == 3  # every session


async def test_cleanup_sees_writes_not_yet_flushed(db: Database) -> None:
    session = await db.create_session("/r")
    _, running, _, _ = await crashed_turn(db, session.id)  # all still in memory
    assert await db.interrupted_parts_cleanup(session.id) == 3
    fixed = await db.get_part(running.id)
    assert isinstance(fixed, ToolPart) and fixed.state.status == "error"


async def test_half_written_summary_is_discarded_and_request_kept(db: Database) -> None:
    session = await db.create_session("/r")
    request = UserMessage(id=ids.message_id(), session_id=session.id)
    compaction = CompactionPart(
        id=ids.part_id(), session_id=session.id, message_id=request.id, auto=True
    )
    summary = AssistantMessage(
        id=ids.message_id(), session_id=session.id, parent_id=request.id, summary=True
    )
    partial = TextPart(
        id=ids.part_id(), session_id=session.id, message_id=summary.id, text="## Goal\nWe"
    )
    await db.upsert_message(request)
    await db.upsert_part(compaction)
    await db.upsert_message(summary)
    await db.upsert_part(partial)

    # The generic cleanup leaves the summary alone; discarding is its own decision.
    assert await db.interrupted_parts_cleanup(session.id) == 0
    assert await db.discard_unfinished_summaries(session.id) == 1

    history = await db.messages(session.id)
    assert [m.info.id for m in history] == [request.id]
    assert history[0].parts == [compaction]
    assert await db.discard_unfinished_summaries(session.id) == 0


async def test_finished_summary_is_kept(db: Database) -> None:
    session = await db.create_session("/r")
    request = UserMessage(id=ids.message_id(), session_id=session.id)
    summary = AssistantMessage(
        id=ids.message_id(),
        session_id=session.id,
        parent_id=request.id,
        summary=True,
        finish="stop",
        completed=1,
    )
    await db.upsert_message(request)
    await db.upsert_message(summary)
    assert await db.discard_unfinished_summaries(session.id) == 0
    assert len(await db.messages(session.id)) == 2

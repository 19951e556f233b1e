"""One loop per session: the lock file itself, and two engines on two connections of one
database (exactly what two processes are to each other: the flock and SQLite do not
care whether the other holder is a process or another open file in this one)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.context.uncompact import uncompact
from agent_tui.engine_context import EngineContext
from agent_tui.errors import UsageError
from agent_tui.events import Event, MessageUpdated, Notice, PartUpdated
from agent_tui.ids import message_id, part_id
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolTime,
    UserMessage,
)
from agent_tui.session import undo as turns
from agent_tui.session.engine import Engine
from agent_tui.session.follow import ends_turn, unseen
from agent_tui.storage.db import Database
from agent_tui.storage.session_lock import SessionLocks
from tests.fake_openai import FakeOpenAI, Gated, Text
from tests.process_helpers import ROOT

# ---- the lock file --------------------------------------------------------------------


def test_lock_excludes_every_other_holder_until_released(tmp_path: Path) -> None:
    here = SessionLocks(tmp_path / "locks", "agent-tui run")
    other = SessionLocks(tmp_path / "locks", "the agent-tui app")
    lock = here.try_acquire("ses_a")
    assert lock is not None
    assert other.try_acquire("ses_a") is None  # another open file: as another process
    assert here.try_acquire("ses_a") is None  # even through the same object
    assert other.try_acquire("ses_b") is not None  # per session
    holder = other.holder("ses_a")
    assert holder is not None and holder.describe() == f"agent-tui run (pid {lock_pid()})"
    lock.release()
    lock.release()  # idempotent
    assert not lock.path.exists()
    assert other.holder("ses_a") is None
    assert other.try_acquire("ses_a") is not None


def lock_pid() -> int:
    import os

    return os.getpid()


HOLDER = """
import sys, time
from pathlib import Path
from agent_tui.storage.session_lock import SessionLocks
lock = SessionLocks(Path(sys.argv[1]), "agent-tui run").try_acquire("ses_a")
print("held" if lock else "busy", flush=True)
time.sleep(300)
"""


def test_lock_of_a_killed_holder_is_free_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        locks = SessionLocks(folder)
        assert locks.try_acquire("ses_a") is None
        found = locks.holder("ses_a")
        assert found is not None and found.pid == holder.pid
    finally:
        holder.kill()  # SIGKILL: no release, the file stays
        holder.wait()
    assert (folder / "ses_a.lock").exists()
    assert locks.holder("ses_a") is None
    assert locks.try_acquire("ses_a") is not None


# ---- which step answers which message (pure) ------------------------------------------


def user(id_: str, queued: bool = False) -> MessageWithParts:
    return MessageWithParts(info=UserMessage(id=id_, session_id="s", queued=queued))


def step(id_: str, parent: str, finish: str | None, *parts: ToolPart) -> MessageWithParts:
    info = AssistantMessage(id=id_, session_id="s", parent_id=parent, finish=finish)
    return MessageWithParts(info=info, parts=list(parts))


def test_a_turn_ends_for_a_message_only_in_a_step_that_read_it() -> None:
    assert ends_turn(step("msg_3", "msg_2", "stop"), "msg_2")
    assert ends_turn(step("msg_3", "msg_2b", "stop"), "msg_2")  # read a newer one too
    assert not ends_turn(step("msg_3", "msg_1", "stop"), "msg_2")  # started before it
    assert not ends_turn(step("msg_3", "msg_2", "tool_calls"), "msg_2")
    assert not ends_turn(step("msg_3", "msg_2", None), "msg_2")  # still streaming
    plan = ToolPart(
        id=part_id(),
        session_id="s",
        message_id="msg_3",
        call_id="c",
        tool="plan_exit",
        state=ToolStateCompleted(input={"plan": "1. do it"}, output="", time=ToolTime(start=1)),
    )
    assert ends_turn(step("msg_3", "msg_2", "tool_calls", plan), "msg_2")
    history = [user("msg_1"), step("msg_2", "msg_1", "stop"), user("msg_3", queued=True)]
    assert [m.info.id for m in unseen(history)] == ["msg_3"]
    assert unseen([*history, step("msg_4", "msg_3", None)]) == []


# ---- two engines on one database --------------------------------------------------------


@contextlib.asynccontextmanager
async def engine(front_end: str) -> AsyncIterator[Engine]:
    db = await Database.open(paths.database_path())
    found = Engine(EngineContext(db=db, config=load_config(), front_end=front_end))
    try:
        yield found
    finally:
        await found.close()
        await db.close()


class Seen:
    """An engine's events, and a way to await one."""

    def __init__(self, target: Engine) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Event()
        target.ctx.bus.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    async def notice(self, needle: str) -> str:
        while True:
            for event in self.events:
                if isinstance(event, Notice) and needle in event.message:
                    return event.message
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), 30)

    def streamed(self) -> str:
        return "".join(
            e.delta or ""
            for e in self.events
            if isinstance(e, PartUpdated) and isinstance(e.part, TextPart)
        )


async def test_second_engine_follows_the_loop_and_shows_its_answer(
    configured: FakeOpenAI,
) -> None:
    gate = threading.Event()
    configured.script(Gated(Text(" A done."), gate, text="A working."), Text("B answered."))
    async with engine("agent-tui run") as a, engine("agent-tui acp") as b:
        session = await a.new_session(Path.cwd())
        running = asyncio.create_task(a.prompt(session.id, "task A"))
        await asyncio.to_thread(configured.wait_for_requests, 1, 60)
        seen = Seen(b)
        following = asyncio.create_task(b.prompt(session.id, "question B"))
        note = await seen.notice("is busy in")
        assert f"is busy in agent-tui run (pid {lock_pid()})" in note
        assert b.is_busy(session.id)  # a second message from b is queued, not a 2nd follow
        gate.set()
        answered, finished = await asyncio.gather(following, running)

        assert answered is not None and answered.outcome == "stop" and answered.steps == 1
        assert finished is not None and finished.steps == 2
        assert seen.streamed() == "B answered."  # its answer, as it streamed; none of A's
        shown = [e.info for e in seen.events if isinstance(e, MessageUpdated)]
        question = next(i for i in shown if isinstance(i, UserMessage))
        assert question.queued
        assert all(i.parent_id == question.id for i in shown if isinstance(i, AssistantMessage))
        assert not a.locks.path(session.id).exists()
    # A's loop read B's message from the other connection (history cache invalidated).
    assert "question B" in str(configured.requests[1]["messages"])


async def test_stopping_the_wait_leaves_the_message_queued_for_the_loop(
    configured: FakeOpenAI,
) -> None:
    gate = threading.Event()
    configured.script(Gated(Text(" A done."), gate, text="A working."), Text("B answered."))
    async with engine("agent-tui run") as a, engine("the agent-tui app") as b:
        session = await a.new_session(Path.cwd())
        running = asyncio.create_task(a.prompt(session.id, "task A"))
        await asyncio.to_thread(configured.wait_for_requests, 1, 60)
        seen = Seen(b)
        following = asyncio.create_task(b.prompt(session.id, "question B"))
        await seen.notice("is busy in")
        assert b.abort(session.id)  # Esc in the app, Ctrl+C in run: stop waiting
        stopped = await following
        assert stopped is not None and stopped.outcome == "aborted"
        assert "stays queued for agent-tui run" in await seen.notice("Stopped waiting")
        gate.set()
        finished = await running
    assert finished is not None and finished.steps == 2
    assert "question B" in str(configured.requests[1]["messages"])


async def test_a_message_saved_after_a_step_started_is_still_answered(
    configured: FakeOpenAI,
) -> None:
    """Its id is older than the step's (made before the step started, saved after:
    another process, or mentions still being read): the step did not read it."""
    gate = threading.Event()
    configured.script(Gated(Text(" first done."), gate, text="first"), Text("late one answered"))
    async with engine("agent-tui run") as a:
        session = await a.new_session(Path.cwd())
        running = asyncio.create_task(a.prompt(session.id, "first task"))
        await asyncio.to_thread(configured.wait_for_requests, 1, 60)
        history = await a.ctx.db.all_messages(session.id)
        first, streaming = history[0].info, history[1].info
        late = UserMessage(id=first.id + "~", session_id=session.id, queued=True)
        assert first.id < late.id < streaming.id
        async with await Database.open(paths.database_path()) as other:
            await other.upsert_message(late)
            text = TextPart(id=part_id(), session_id=session.id, message_id=late.id, text="late")
            await other.upsert_part(text, flush=True)
        gate.set()
        finished = await running
    assert finished is not None and finished.steps == 2
    assert len(configured.requests) == 2 and "late" in str(configured.requests[1]["messages"])


HISTORY_CHANGES = {"undo": turns.undo, "redo": turns.redo, "uncompact": uncompact}


@pytest.mark.parametrize("action", ["undo", "redo", "uncompact"])
async def test_history_changes_wait_for_a_loop_running_elsewhere(
    configured: FakeOpenAI, action: str
) -> None:
    configured.script(Text("done"))
    async with engine("the agent-tui app") as a:
        session = await a.new_session(Path.cwd())
        await a.prompt(session.id, "one turn")
        elsewhere = SessionLocks(a.locks.folder, "agent-tui run").try_acquire(session.id)
        assert elsewhere is not None
        with pytest.raises(UsageError) as refused:
            await HISTORY_CHANGES[action](await a.scope(session.id))
        elsewhere.release()
    assert f"busy in agent-tui run (pid {lock_pid()})" in str(refused.value)
    assert configured.requests and len(configured.requests) == 1


async def test_a_step_cut_off_by_its_process_death_is_resumed(configured: FakeOpenAI) -> None:
    """The loop that was answering a message died mid-step (kill -9): the loop that
    takes the session over answers it, instead of taking the cut-off step as the end."""
    configured.script(Text("Resumed answer."))
    async with engine("agent-tui run") as a:
        session = await a.new_session(Path.cwd())
        question = UserMessage(id=message_id(), session_id=session.id, queued=True)
        cut = AssistantMessage(id=message_id(), session_id=session.id, parent_id=question.id)
        await a.ctx.db.upsert_message(question)
        await a.ctx.db.upsert_message(cut)
        for message, words in ((question, "question B"), (cut, "half an answer")):
            part = TextPart(id=part_id(), session_id=session.id, message_id=message.id, text=words)
            await a.ctx.db.upsert_part(part, flush=True)
        result = await a.run(session.id)
        history = await a.ctx.db.all_messages(session.id)
    assert result.outcome == "stop" and result.steps == 1
    sent = str(configured.requests[0]["messages"])
    assert "question B" in sent and "half an answer" in sent
    assert history[1].info.error is not None  # closed as interrupted by the new loop
    assert [p.text for p in history[-1].parts if isinstance(p, TextPart)] == ["Resumed answer."]


async def test_two_prompts_at_once_in_one_engine_start_one_loop(configured: FakeOpenAI) -> None:
    configured.responder = lambda body: Text("answered")
    async with engine("the agent-tui acp") as a:
        session = await a.new_session(Path.cwd())
        first, second = await asyncio.gather(
            a.prompt(session.id, "one"), a.prompt(session.id, "two")
        )
        history = await a.ctx.db.all_messages(session.id)
    assert first is not None and second is None  # the second joined the first's loop
    users = [m.info for m in history if isinstance(m.info, UserMessage)]
    steps = [m.info for m in history if isinstance(m.info, AssistantMessage)]
    assert steps[-1].parent_id == users[-1].id  # the loop answered the second one too
    assert "two" in str(configured.requests[-1]["messages"])
    assert len(configured.requests) == len(steps)  # no model call outside that loop

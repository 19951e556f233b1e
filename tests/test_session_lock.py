"""One loop per session, whichever process: real `agent-tui run --continue` processes
started together on one session against the fake OpenAI server (whose first reply is
held open until the test lets it go, so the runs truly overlap)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.cli import main
from agent_tui.records import AssistantMessage, MessageWithParts, TextPart, UserMessage
from agent_tui.storage.db import Database
from agent_tui.storage.session_lock import LOCK_DIR
from agent_tui.tui.user_message_view import UserMessageView
from tests.conftest import write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Gated, Hang, Text, ToolCalls
from tests.process_helpers import Run
from tests.tui_helpers import open_app, type_and_send, view_text, wait_for

BUSY = "is busy in agent-tui run"


def stored(session_id: str) -> list[MessageWithParts]:
    async def read() -> list[MessageWithParts]:
        async with await Database.open(paths.database_path()) as db:
            return await db.all_messages(session_id)

    return asyncio.run(read())


def texts(message: MessageWithParts) -> str:
    return "".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)


def assert_one_loop_at_a_time(messages: list[MessageWithParts]) -> None:
    """In id (= write) order: every step answers the newest user message written before
    it, so each step follows the message it answers and no two loops' steps alternate
    (their parents never go back)."""
    newest_user = ""
    parents: list[str] = []
    for message in messages:
        info = message.info
        if isinstance(info, UserMessage):
            newest_user = info.id
            continue
        assert isinstance(info, AssistantMessage)
        assert info.parent_id == newest_user, f"step {info.id} answers an older message"
        parents.append(info.parent_id)
    assert parents == sorted(parents), "steps of two loops alternate"


def start_session(server: FakeOpenAI) -> str:
    """A session with one exchange (in this process: one process start less per test)."""
    server.script(Text("Session started."))
    assert main(["run", "start a session"]) == 0

    async def latest() -> str:
        async with await Database.open(paths.database_path()) as db:
            session = await db.latest_session(str(Path.cwd()))
            assert session is not None
            return session.id

    return asyncio.run(latest())


@pytest.mark.parametrize("first_step", ["final answer", "tool call"])
def test_two_runs_on_one_session_never_interleave(
    isolated: Path, fake_llm: FakeOpenAI, first_step: str
) -> None:
    write_config(isolated, fake_llm)
    session_id = start_session(fake_llm)
    gate = threading.Event()
    held = (
        Text(" Done with A.")
        if first_step == "final answer"
        else ToolCalls([Call("bash", json.dumps({"command": "echo a-tool"}))])
    )
    fake_llm.script(Gated(held, gate, text="Working on A."), Text("Answer for B."))

    a = Run(isolated, "run", "--continue", "task A")
    fake_llm.wait_for_requests(2, timeout=90)  # A streams its first step, holding the session
    b = Run(isolated, "run", "--continue", "question B")
    busy = b.err.wait_for(BUSY)  # B's message is saved, queued for A's loop
    gate.set()
    code_a, out_a, err_a = a.finish()
    code_b, out_b, err_b = b.finish()

    assert (code_a, code_b) == (0, 0), err_a + err_b
    assert f"(pid {a.pid})" in busy
    assert "Working on A." in out_a and "Answer for B." in out_a  # A's loop answered both
    assert out_b.strip() == "Answer for B."  # B printed its answer, nothing of A's
    assert f"session {session_id}" in err_b
    # B never called the model: A's loop read B's message as a reminder at its next step.
    assert len(fake_llm.requests) == 3
    last = json.dumps(fake_llm.requests[2]["messages"])
    assert "question B" in last and "<system-reminder>" in last
    assert "question B" not in json.dumps(fake_llm.requests[1]["messages"])

    messages = stored(session_id)
    assert_one_loop_at_a_time(messages)
    users = [m for m in messages if isinstance(m.info, UserMessage)]
    assert [texts(m) for m in users] == ["start a session", "task A", "question B"]
    assert [m.info.queued for m in users] == [False, False, True]
    steps = [m for m in messages if isinstance(m.info, AssistantMessage)]
    assert texts(steps[-1]) == "Answer for B." and steps[-1].info.parent_id == users[-1].info.id
    assert not (paths.data_dir() / LOCK_DIR / f"{session_id}.lock").exists()


def test_sigkilled_owner_does_not_block_the_next_run(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(isolated, fake_llm)
    session_id = start_session(fake_llm)
    fake_llm.script(Hang(text="partial", delay=120))
    victim = Run(isolated, "run", "--continue", "long task")
    fake_llm.wait_for_requests(2, timeout=90)
    lock_file = paths.data_dir() / LOCK_DIR / f"{session_id}.lock"
    assert json.loads(lock_file.read_text())["pid"] == victim.pid
    victim.kill()
    assert lock_file.exists()  # left behind: the kernel dropped the lock, not the file

    fake_llm.script(Text("Next answer."))
    capsys.readouterr()  # what start_session printed
    code, out, err = run_cli(capsys, "run", "--continue", "next task")  # here: one import less
    assert code == 0, err
    assert out.strip() == "Next answer."
    assert "busy" not in err
    messages = stored(session_id)
    assert_one_loop_at_a_time(messages)
    assert not lock_file.exists()


def test_waiting_run_takes_over_when_the_owner_is_killed(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    session_id = start_session(fake_llm)
    fake_llm.script(Hang(text="partial", delay=120))
    victim = Run(isolated, "run", "--continue", "long task")
    fake_llm.wait_for_requests(2, timeout=90)
    waiter = Run(isolated, "run", "--continue", "question B")
    waiter.err.wait_for(BUSY)
    fake_llm.script(Text("Answered here."))
    victim.kill()
    code, out, err = waiter.finish()

    assert code == 0, err
    assert out.strip() == "Answered here."
    assert "stopped before answering your message: answering it here" in err
    messages = stored(session_id)
    assert_one_loop_at_a_time(messages)
    request = fake_llm.requests[2]["messages"]
    # The loop that never read B's message died: B's is an ordinary message, not a reminder.
    assert request[-1]["role"] == "user" and "question B" in json.dumps(request[-1])
    assert "<system-reminder>" not in json.dumps(request[-1])
    users = [m.info for m in messages if isinstance(m.info, UserMessage)]
    assert users[-1].queued is False
    killed = next(m for m in messages if texts(m) == "partial")
    assert isinstance(killed.info, AssistantMessage) and killed.info.error is not None


def test_app_queues_for_a_session_busy_in_another_process(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    session_id = start_session(fake_llm)
    gate = threading.Event()
    fake_llm.script(Gated(Text(" Done with A."), gate, text="Working on A."))
    fake_llm.script(Text("Answer for the app."))
    owner = Run(isolated, "run", "--continue", "task A")
    fake_llm.wait_for_requests(2, timeout=90)

    async def in_the_app() -> None:
        app = await open_app()
        app.chat.session = await app.db.get_session(session_id)
        async with app.run_test(size=(100, 30)) as pilot:
            await app.loaded.wait()
            await type_and_send(pilot, "question from the app")
            await wait_for(
                pilot, lambda: any(v.queued for v in app.query(UserMessageView)), "queued mark"
            )
            busy = f"Working in agent-tui run (pid {owner.pid})"
            await wait_for(  # drawn from the follower's status, an event after the mark
                pilot, lambda: busy in str(app.status_line.render()), "the busy status"
            )
            assert "queued" in str(app.status_line.render())
            gate.set()  # the other process's loop reads the message and answers it
            await wait_for(
                pilot, lambda: view_text(app) == "Answer for the app.", "the answer shown"
            )
            await wait_for(pilot, lambda: app.chat.status == "idle", "idle")
            assert not any(v.queued for v in app.query(UserMessageView))
        await app.db.close()

    asyncio.run(in_the_app())
    code, out, err = owner.finish()
    assert code == 0, err
    assert "Answer for the app." in out
    assert len(fake_llm.requests) == 3  # the app never called the model itself
    assert "question from the app" in json.dumps(fake_llm.requests[2]["messages"])
    assert_one_loop_at_a_time(stored(session_id))

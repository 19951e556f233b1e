"""Summaries prepared in the background (context/prepared.py): real loops through litellm
against the fake server, which answers by what it is asked (a summary request or a step),
so a preparation running beside the steps takes no step's reply."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_tui import paths
from agent_tui.context import preparing
from agent_tui.context.prepared_left import FRONT_END as RELAY
from agent_tui.context.prepared_left import LOCK_DIR, RELAY_LOCKS
from agent_tui.events import Event, SessionStatus
from agent_tui.records import AssistantMessage, TextPart, ToolPart
from agent_tui.session import undo as turns
from agent_tui.session.engine import Engine
from agent_tui.storage.session_lock import LockHolder, SessionLocks
from tests.compaction_scenario import GENERATOR, USABLE, WINDOW, marker, marker_fate
from tests.conftest import MODEL, write_config
from tests.engine_helpers import (
    is_summary_request,
    open_engine,
    preparation_done,
    run_cli,
    text_of,
)
from tests.fake_openai import Call, FakeOpenAI, Gated, Reply, Text, ToolCalls
from tests.test_faults_crash import STARTUP_TIMEOUT, db_rows, kill9, reaped, spawn, wait_for

PREPARE = {"prepare_at": 0.8}
AT_PREPARE_AT = {"prepare_earliest": 0.8}
"""Preparing from prepare_at whatever is measured (or not: context/prepare_lead.py)."""


@dataclass
class Steps:
    """Each step runs gen.py (50 lines, ~750 tokens, a marker line); a summary request is
    answered PREPARED-n, held by `gate` when one is given (the first only)."""

    steps: int
    gate: threading.Event | None = None
    held: int = 1
    """How many summary requests, from the first, `gate` holds."""
    made: int = 0
    summaries: list[str] = field(default_factory=list)

    def install(self, project: Path, server: FakeOpenAI) -> None:
        (project / "gen.py").write_text(GENERATOR, encoding="utf-8")
        server.responder = self.respond

    def respond(self, body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            text = f"SUMMARY-{len(self.summaries) + 1}: " + "progress detail " * 100
            self.summaries.append(text)
            if self.gate is not None and len(self.summaries) <= self.held:
                return Gated(Text(text), self.gate)
            return Text(text)
        if self.made >= self.steps:
            return Text("All steps ran.")
        n = self.made
        self.made += 1
        command = json.dumps({"command": f"python3 gen.py {n}"})
        return ToolCalls([Call("bash", command, id=f"call_{n:03d}")], text=f"Step {n}.")


def configure(project: Path, server: FakeOpenAI, **compaction: Any) -> None:
    write_config(
        project,
        server,
        models={MODEL: WINDOW},  # usable 16,000: preparing from 12,800
        compaction={**PREPARE, **compaction},
        max_steps=200,
    )


def normal_requests(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [r for r in server.requests if not is_summary_request(r)]


async def summaries_in_force(engine: Engine, session_id: str) -> list[str]:
    """Texts of the finished summary messages, oldest first."""
    found = []
    for message in await engine.ctx.db.all_messages(session_id):
        info = message.info
        if isinstance(info, AssistantMessage) and info.summary and info.finish:
            found.append("".join(p.text for p in message.parts if isinstance(p, TextPart)))
    return found


def statuses(engine: Engine) -> list[str]:
    seen: list[str] = []

    def listen(event: Event) -> None:
        if isinstance(event, SessionStatus):
            seen.append(event.status)

    engine.ctx.bus.subscribe(listen)
    return seen


async def run_until_compacting(engine: Engine, session_id: str) -> asyncio.Task[Any]:
    """The session's turn, started and run until its threshold came while the summary
    being prepared is held (the fake's gate): the compaction waits for it."""
    seen = statuses(engine)
    run = asyncio.create_task(engine.prompt(session_id, "go"))
    while "compacting" not in seen:
        assert not run.done(), run
        await asyncio.sleep(0.02)
    return run


async def test_applied_at_once_and_every_step_after_its_span_is_verbatim(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(isolated, fake_llm)
    steps = Steps(40)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "Run gen.py for steps 0 to 39.")
        assert result is not None and result.outcome == "stop", result
        rows = await engine.ctx.db.prepared_summaries(session.id)
        used = [p for p in rows if p.status == "used"]
        in_force = await summaries_in_force(engine, session.id)
        messages = await engine.ctx.db.all_messages(session.id)
    assert result.compactions >= 2
    # Every compaction applied a prepared summary: no summariser call at the threshold.
    assert len(used) == result.compactions, [(p.status, p.reason) for p in rows]
    assert in_force == [p.text for p in used]
    assert len(steps.summaries) == len(rows)
    # The steps after the first prepared span are verbatim in the first request after it.
    first = used[0]
    after_ids = [m for m in messages if first.last_id < m.info.id < first.used_by]
    tail_calls = [p.call_id for m in after_ids for p in m.parts if isinstance(p, ToolPart)]
    assert tail_calls, "steps ran while the summary was prepared"
    after = next(r for r in normal_requests(fake_llm) if first.text in json.dumps(r["messages"]))
    results = {m["tool_call_id"]: m["content"] for m in after["messages"] if m["role"] == "tool"}
    for message in after_ids:
        for part in message.parts:
            if isinstance(part, ToolPart):
                assert results[part.call_id] == part.state.output  # verbatim, in full
    # Nothing between the span's end and the tail is lost: every marker reached a
    # summariser, a request right after a compaction, or the final request.
    fate = marker_fate(list(fake_llm.requests), 40)
    assert fate["lost"] == 0, fate
    assert all(marker(n) in json.dumps(fake_llm.requests) for n in range(40))
    # sessions --json counts them.
    code, out, _ = await asyncio.to_thread(run_cli, capsys, "sessions", "--json")
    assert code == 0
    row = json.loads(out)[0]["prepared_summaries"]
    assert row == {
        "prepared": len(rows),
        "used": len(used),
        "discarded": len(rows) - len(used),
        "running": None,  # nothing prepares it now
    }


async def test_a_preparation_overtaken_by_an_undo_is_not_used(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    configure(isolated, fake_llm)
    steps = Steps(17)  # ~13,000 tokens: past prepare_at, short of the threshold
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "first part")
        await preparation_done(engine.ctx, session.id)
        (early,) = await engine.ctx.db.prepared_summaries(session.id)
        assert early.status == "ready"
        # takes back the turn the preparation covers
        await turns.undo(await engine.scope(session.id))
        steps.steps, steps.made = 40, 0
        result = await engine.prompt(session.id, "second attempt")
        assert result is not None and result.outcome == "stop"
        assert result.compactions >= 1
        rows = {p.id: p for p in await engine.ctx.db.prepared_summaries(session.id)}
        in_force = await summaries_in_force(engine, session.id)
    assert rows[early.id].status == "discarded"
    assert "undone or changed" in rows[early.id].reason
    assert early.text not in in_force


async def test_one_older_than_the_max_age_is_not_used(isolated: Path, fake_llm: FakeOpenAI) -> None:
    configure(isolated, fake_llm, prepare_max_age=0)
    steps = Steps(30)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "go")
        assert result is not None and result.outcome == "stop"
        rows = await engine.ctx.db.prepared_summaries(session.id)
        in_force = await summaries_in_force(engine, session.id)
    assert result.compactions >= 1 and rows
    assert all(p.status == "discarded" and "s old" in p.reason for p in rows)
    assert not set(in_force) & {p.text for p in rows}


async def test_threshold_during_a_preparation_waits_only_for_its_remainder(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    configure(isolated, fake_llm)
    gate = threading.Event()
    steps = Steps(30, gate=gate)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        run = await run_until_compacting(engine, session.id)
        steps_at_threshold = steps.made
        assert len(steps.summaries) == 1  # only the preparation: no second summariser call
        gate.set()
        result = await run
        rows = await engine.ctx.db.prepared_summaries(session.id)
        in_force = await summaries_in_force(engine, session.id)
    assert result is not None and result.outcome == "stop"
    assert steps_at_threshold > 17  # the agent kept working while it was written
    assert rows[0].status == "used" and in_force[0] == steps.summaries[0].strip()


async def test_a_summariser_measured_slow_starts_the_next_preparation_earlier(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """The first summary is held past the threshold, as a slow summariser's would be (the
    compaction waits for its remainder). The next engine on the database, as the next
    `run --continue` would, knows only what is stored and starts the next preparation
    earlier by what that one took (context/prepare_lead.py)."""
    configure(isolated, fake_llm, prepare_margin=4, **AT_PREPARE_AT)
    gate = threading.Event()
    steps = Steps(40, gate=gate)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        run = await run_until_compacting(engine, session.id)
        steps.steps = steps.made + 2  # the turn ends two steps after the compaction
        gate.set()
        result = await run
        assert result is not None and result.compactions == 1, result
        await preparation_done(engine.ctx, session.id)
        (slow,) = await engine.ctx.db.prepared_summaries(session.id)
    # It started at prepare_at (where this test pins the start of what is not measured).
    assert slow.status == "used" and slow.asked_at >= 0.8 * USABLE, slow.asked_at
    configure(isolated, fake_llm, prepare_margin=4)  # the next engine: the default bounds
    steps.steps = steps.made + 30
    async with open_engine() as engine:
        result = await engine.prompt(session.id, "go on")
        assert result is not None and result.outcome == "stop", result
        await preparation_done(engine.ctx, session.id)  # one the last step started
        _, *later = await engine.ctx.db.prepared_summaries(session.id)
    assert later and len(steps.summaries) == 1 + len(later)
    # The summary it measured spans the steps from prepare_at to the threshold: with a
    # margin of 4 steps the next starts over 2 steps (1,500 tokens) before prepare_at,
    # never before prepare_earliest.
    assert 0.5 * USABLE <= later[0].asked_at < 0.8 * USABLE - 1_500, later[0].asked_at


async def test_a_summariser_never_measured_starts_the_first_preparation_at_prepare_earliest(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """The first compaction a database sees: the summariser's time is unknown, so it is
    taken as slow as the bounds allow and the preparation starts once the steps pass
    prepare_earliest (context/prepare_lead.py), not at prepare_at."""
    configure(isolated, fake_llm)
    steps = Steps(15)  # ~11,000 tokens: past prepare_earliest, short of the threshold
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "go")
        assert result is not None and result.outcome == "stop", result
        await preparation_done(engine.ctx, session.id)
        (first,) = await engine.ctx.db.prepared_summaries(session.id)
    assert 0.5 * USABLE <= first.asked_at < 0.6 * USABLE, first.asked_at


async def test_esc_during_a_preparation_leaves_the_session_as_it_was(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    configure(isolated, fake_llm)
    gate = threading.Event()
    steps = Steps(40, gate=gate)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        run = asyncio.create_task(engine.prompt(session.id, "go"))
        while not steps.summaries:
            await asyncio.sleep(0.02)
        assert engine.abort(session.id)
        result = await run
        assert result is not None and result.outcome == "aborted"
        await asyncio.sleep(0)  # the cancelled preparation unwinds
        assert not any(live.is_preparing for live in engine.ctx.shared.sessions)
        gate.set()
        assert await engine.ctx.db.prepared_summaries(session.id) == []
        stored = await engine.ctx.db.get_session(session.id)
        assert stored.compaction_id is None
        # The session goes on as before: the next turn works and nothing was lost.
        steps.steps, steps.made = 0, 0
        result = await engine.prompt(session.id, "status?")
        assert result is not None and result.outcome == "stop"
        texts = [text_of(m) for m in normal_requests(fake_llm)[-1]["messages"]]
    assert any(t == "go" for t in texts) and any(t.startswith("status?") for t in texts)


def preparer() -> LockHolder | None:
    """Who prepares the (only) session's summary now: a command, or the relay
    finishing one a command left (context/preparing.py)."""
    (session_id,) = [row[0] for row in db_rows("SELECT id FROM session")]
    folder = paths.database_path().parent / LOCK_DIR
    return SessionLocks(folder).holder(session_id) or relay_locks(folder).holder(session_id)


def relay_locks(folder: Path) -> SessionLocks:
    return SessionLocks(folder / RELAY_LOCKS)


def test_kill_9_during_a_preparation_leaves_nothing_half_done_and_the_relay_finishes_it(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], on_relay: None
) -> None:
    configure(isolated, fake_llm)
    gate = threading.Event()  # the summary is held until the process is gone
    steps = Steps(40, gate=gate)
    steps.install(isolated, fake_llm)
    with reaped(spawn(isolated, "run", "go")) as proc:
        wait_for(lambda: bool(steps.summaries), "a preparation in flight", STARTUP_TIMEOUT)
        made = steps.made
        kill9(proc)
    assert db_rows("SELECT count(*) FROM prepared_summary") == [(0,)]
    holder = relay_preparer()  # the request goes on in the relay
    gate.set()
    wait_for(lambda: preparer() is None, f"{holder.describe()} done", STARTUP_TIMEOUT)
    assert db_rows("SELECT status FROM prepared_summary") == [("ready",)]
    assert db_rows("SELECT compaction_id FROM session") == [(None,)]
    assert len(steps.summaries) == 1  # finished, not asked again
    # Nothing is half-applied: `run --continue` goes on from the steps that ran.
    steps.steps = made
    code, _, err = run_cli(capsys, "run", "--continue", "go on")
    assert code == 0, err
    last = json.dumps(normal_requests(fake_llm)[-1]["messages"])
    assert marker(0) in last and "go on" in last


def relay_preparer() -> LockHolder:
    """The relay, finishing a summary whose command has ended."""
    holder = preparer()
    assert holder is not None and holder.front_end == RELAY, holder
    return holder


def test_kill_9_of_the_relay_finishing_a_preparation_leaves_nothing_and_the_next_command_works(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], on_relay: None
) -> None:
    """`run` exits mid-preparation: the relay finishes it; kill -9 of the relay
    while the summary is in flight leaves nothing half-written."""
    configure(isolated, fake_llm)
    gate = threading.Event()  # summaries are held until the relay is gone
    # Past prepare_at, not the threshold: the turn ends while its summary is asked.
    steps = Steps(18, gate=gate)
    steps.install(isolated, fake_llm)
    assert run_cli(capsys, "run", "go")[0] == 0
    holder = relay_preparer()
    os.kill(holder.pid, signal.SIGKILL)
    wait_for(lambda: preparer() is None, "the killed relay's lock dropped")
    gate.set()
    assert db_rows("SELECT count(*) FROM prepared_summary") == [(0,)]
    assert db_rows("SELECT compaction_id FROM session") == [(None,)]
    code, _, err = run_cli(capsys, "run", "--continue", "go on")  # on a new relay
    assert code == 0, err
    assert "go on" in json.dumps(normal_requests(fake_llm)[-1]["messages"])
    wait_for(lambda: preparer() is None, "the next preparation done", STARTUP_TIMEOUT)


# ---- preparations that outlive the command (provider/detached.py) -----------------------


def test_a_preparation_running_when_run_exits_is_finished_by_the_relay_and_used_by_the_next_run(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], on_relay: None
) -> None:
    # From prepare_at: the summary held across the exit measures slow, and the next run
    # would prepare the next one as soon as it applied it.
    configure(isolated, fake_llm, **AT_PREPARE_AT)
    gate = threading.Event()  # the summary is held until `run` has exited
    # Past prepare_at (12,800 of 16,000), not the threshold: the turn ends mid-preparation.
    steps = Steps(18, gate=gate)
    steps.install(isolated, fake_llm)
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    holder = relay_preparer()  # `run` has returned; its request goes on in the relay
    listed = json.loads(run_cli(capsys, "sessions", "--json")[1])[0]["prepared_summaries"]
    assert listed["running"]["pid"] == holder.pid
    gate.set()
    wait_for(lambda: preparer() is None, "the preparation done", STARTUP_TIMEOUT)
    assert db_rows("SELECT status FROM prepared_summary") == [("ready",)]
    # The next command crosses the threshold and applies it at once: no summary written.
    steps.steps = 30
    code, _, err = run_cli(capsys, "run", "--continue", "go on")
    assert code == 0, err
    assert len(steps.summaries) == 1  # the one run asked: finished, never asked again
    assert db_rows("SELECT status FROM prepared_summary") == [("used",)]
    assert db_rows("SELECT compaction_id IS NOT NULL FROM session") == [(1,)]


def test_a_session_left_past_prepare_at_starts_preparing_before_its_first_step(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str], on_relay: None
) -> None:
    configure(isolated, fake_llm, prepare_at=0)  # the first command does not prepare
    steps = Steps(18)
    steps.install(isolated, fake_llm)
    assert run_cli(capsys, "run", "go")[0] == 0
    assert not steps.summaries
    configure(isolated, fake_llm)  # prepare_at 0.8: the session is past it already
    summary_asked = threading.Event()
    first_step: list[bool] = []  # whether the summary was asked while the step was held

    def respond(body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            summary_asked.set()
            return Text("SUMMARY-early: " + "progress detail " * 100)
        if not first_step:  # held until the preparation asks (or 60 s: then it failed)
            first_step.append(summary_asked.wait(STARTUP_TIMEOUT))
        return Text("All steps ran.")

    fake_llm.responder = respond
    assert run_cli(capsys, "run", "--continue", "status?")[0] == 0
    assert first_step == [True]
    # Written by this command, or (cut off when it exited) by the relay.
    ready = [("ready",)]
    wait_for(lambda: db_rows("SELECT status FROM prepared_summary") == ready, "it", 120)
    wait_for(lambda: preparer() is None, "no preparer left")


async def test_one_session_is_never_prepared_by_two_preparers(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    """While another process prepares the session (its lock held), this engine starts
    none, and a compaction waits for that one instead of writing its own."""
    configure(isolated, fake_llm)
    steps = Steps(18)
    steps.install(isolated, fake_llm)
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        other = SessionLocks(engine.ctx.db.path.parent / preparing.LOCK_DIR, "another")
        held = other.try_acquire(session.id)  # as another process holding it would
        assert held is not None
        await engine.prompt(session.id, "go")
        assert not steps.summaries and not any(
            s.is_preparing for s in engine.ctx.shared.sessions
        )  # none started here
        assert preparing.elsewhere(engine.ctx, session.id) is not None
        abort = asyncio.Event()
        waiting = asyncio.create_task(preparing.wait_elsewhere(engine.ctx, session.id, abort))
        await asyncio.sleep(preparing.POLL * 3)
        assert not waiting.done()  # waits for the other preparer
        held.release()
        assert await waiting is True

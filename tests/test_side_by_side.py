"""Sessions working side by side in one app (issue 53): the one on screen streams while
another works, a permission question of the other waits for the person to open it (it
never covers the session on screen), its state shows in the sidebar and the session
list, a key jumps to it, and the person's `notify` program hears of it."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from textual.widgets import Static

from agent_tui.command.core import Row, Rows
from agent_tui.events import PlanProposed, SessionError, SessionStatus, SessionUpdated
from agent_tui.records import Session
from agent_tui.tui.app import AgentApp
from agent_tui.tui.choice_screen import RowsScreen
from agent_tui.tui.notifier import sequence, terminal_kind
from agent_tui.tui.permission_screen import PermissionScreen
from agent_tui.tui.session_board import SessionBoard
from agent_tui.tui.side_by_side import SideBySide
from tests.conftest import person_config, write_config
from tests.fake_openai import Call, FakeOpenAI, Gated, Text, ToolCalls
from tests.tui_helpers import open_app, type_and_send, view_text, wait_for

SIZE = (110, 32)


def _notify_program(isolated: Path) -> tuple[list[str], Path]:
    """The person's `notify` program: appends each JSON it is given to a file."""
    heard = isolated.parent / "heard.jsonl"
    script = (
        "import sys, pathlib\n"
        f"with open({str(heard)!r}, 'a') as out: out.write(sys.argv[1] + '\\n')\n"
    )
    return [sys.executable, "-c", script], heard


def _strip(app: AgentApp) -> str:
    """The sidebar's sessions section ("" before it was first shown: not mounted)."""
    found = app.query("#sidebar-sessions")
    return str(found.first(Static).render()) if found else ""


async def test_two_sessions_work_at_once_and_the_waiting_one_is_reached(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    command, heard = _notify_program(isolated)
    person_config({"notify": command}, trusted=isolated.parent)
    write_config(isolated, fake_llm, permission={"bash": "ask"})
    first, second = threading.Event(), threading.Event()
    fake_llm.script(
        # Session A: streams, then (once released) asks to run a command.
        Gated(ToolCalls([Call("bash", json.dumps({"command": "echo from-a"}))]), first, "A is"),
        # Session B, on screen meanwhile: streams while A waits for the person.
        Gated(Text(" and B is done."), second, text="B streams"),
        Text("A is done."),
    )
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "task for A")
        await wait_for(pilot, lambda: view_text(app).startswith("A is"), "A streaming")
        session_a = app.chat.session
        assert session_a is not None
        await pilot.press("ctrl+x", "n")  # a new session; A goes on working
        await wait_for(pilot, lambda: app.chat.session is None, "the new session on screen")
        await type_and_send(pilot, "task for B")
        await wait_for(pilot, lambda: len(fake_llm.requests) == 2, "B's request")
        await wait_for(pilot, lambda: view_text(app).startswith("B streams"), "B streaming")
        assert app.chat.side.board.state(session_a.id) == "working"
        assert "task for A" in _strip(app) and "working" in _strip(app)

        first.set()  # A's step ends in a command that needs the person's answer
        await wait_for(pilot, lambda: app.chat.side.board.state(session_a.id) == "waiting")
        # Not put over session B: B is on screen, and still streams.
        assert not isinstance(app.screen, PermissionScreen)
        await wait_for(pilot, lambda: "waiting for you" in _strip(app), "the strip")
        await wait_for(pilot, lambda: heard.is_file() and heard.read_text().strip(), "notify")
        told = json.loads(heard.read_text().splitlines()[0])
        assert told["type"] == "waiting" and told["session_id"] == session_a.id
        assert "permission: bash" in told["reason"] and told["title"] == "task for A"
        second.set()
        await wait_for(pilot, lambda: "and B is done." in view_text(app), "B finished")
        await wait_for(pilot, lambda: app.chat.status == "idle", "B idle")
        assert app.chat.side.board.state(session_a.id) == "waiting"

        # The session list says it too.
        await pilot.press("ctrl+x", "l")
        await wait_for(pilot, lambda: isinstance(app.screen, RowsScreen), "the list")
        listed = {r.id: r.detail for r in app.screen.rows}
        assert listed[session_a.id].startswith("! waiting for you")
        await pilot.press("escape")

        await pilot.press("ctrl+x", "w")  # to the session that waits
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionScreen), "the question")
        assert app.chat.session is not None and app.chat.session.id == session_a.id
        assert "echo from-a" in str(app.screen.query_one("#title", Static).render())
        await pilot.press("a")
        await wait_for(pilot, lambda: "A is done." in view_text(app), "A's reply")
        await wait_for(pilot, lambda: app.chat.status == "idle")
        assert app.chat.side.board.state(session_a.id) == "done"
    await app.db.close()
    third = json.dumps(fake_llm.requests[2]["messages"])
    assert "from-a" in third  # the command ran once the person allowed it
    assert "task for B" not in third  # each session its own conversation


async def test_no_session_waits_says_so(configured: FakeOpenAI) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("ctrl+x", "w")
        await wait_for(pilot, lambda: app.chat.session is None)
        assert _strip(app) == ""  # one session: no strip
    await app.db.close()


def _session(session_id: str, title: str, parent: str | None = None) -> Session:
    return Session(
        id=session_id, title=title, directory="/p", parent_id=parent, created=1, updated=1
    )


def test_board_states_and_who_is_told() -> None:
    board = SessionBoard()
    board.show("a")
    board.follow(SessionUpdated(session=_session("a", "shown")))
    board.follow(SessionUpdated(session=_session("b", "beside")))
    board.follow(SessionUpdated(session=_session("c", "child of b", parent="b")))
    assert board.follow(SessionStatus(session_id="b", status="busy")) is None
    assert board.state("b") == "working"
    # A subagent's question is its parent's; the parent is not on screen: told.
    told = board.asking("c", "permission: bash")
    assert told is not None and told.session_id == "b" and told.state == "waiting"
    assert board.next_waiting() == "b"
    board.answered("b", "permission: bash")
    assert board.state("b") == "working" and board.next_waiting() is None
    board.follow(SessionError(session_id="b", kind="rate_limit", message="rate limited"))
    finished = board.follow(SessionStatus(session_id="b", status="idle"))
    assert finished is not None and finished.state == "failed"
    # The session on screen: its states change, nobody is told.
    assert board.follow(SessionStatus(session_id="a", status="busy")) is None
    assert board.follow(SessionStatus(session_id="a", status="idle")) is None
    assert board.state("a") == "done"
    plan = board.follow(PlanProposed(session_id="b", plan="1. do it"))
    assert plan is not None and plan.reason == "waits for you: plan"
    assert board.state("b") == "waiting"


def test_the_session_list_carries_each_state() -> None:
    side = SideBySide(lambda: None)
    side.show("a")
    side.follow(SessionUpdated(session=_session("b", "beside")))
    side.follow(SessionStatus(session_id="b", status="busy"))
    rows = Rows("Sessions", [Row("a", "shown", "d1"), Row("b", "beside", "d2")], "", "sessions")
    decorated = {r.id: r.detail for r in side.decorate(rows).rows}
    assert decorated == {"a": "d1", "b": "◐ working · d2"}
    assert "beside — working" in side.strip()
    side.follow(
        SessionUpdated(
            session=Session(id="w", title="in a worktree", directory="/p/.claude/worktrees/feat")
        )
    )
    side.follow(SessionStatus(session_id="w", status="busy"))
    assert "in a worktree — working\n   ⎇ feat" in side.strip()


def test_terminal_notifications() -> None:
    assert terminal_kind("auto", {"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert terminal_kind("auto", {"KITTY_WINDOW_ID": "1", "TERM": "xterm-kitty"}) == "osc9"
    assert terminal_kind("auto", {"TERM": "foot"}) == "osc777"
    assert terminal_kind("auto", {"TERM": "xterm-256color"}) == "bell"
    assert terminal_kind("off", {"TERM_PROGRAM": "iTerm.app"}) == "off"
    assert sequence("osc9", "agent-tui: t", "waits") == "\x1b]9;agent-tui: t: waits\x07\x07"
    assert sequence("osc777", "t", "b") == "\x1b]777;notify;t;b\x07\x07"
    assert sequence("bell", "t", "b") == "\x07" and sequence("off", "t", "b") == ""
    # A title cannot end the sequence early or smuggle another one in.
    sneaky = sequence("osc9", "x\x07\x1b]52;c;AAAA\x07", "b")
    assert sneaky.count("\x07") == 2 and "\x1b]52" not in sneaky


def test_only_the_persons_own_config_names_a_notify_program(isolated: Path) -> None:
    """`notify` runs on the person's machine, outside the sandbox: a project (even one
    trusted outright) never sets it; the person's own config does."""
    from agent_tui.config.settings import load_config

    (isolated / "agent-tui.json").write_text(
        json.dumps({"notify": ["sh", "-c", "curl evil.example"], "notify_terminal": "bell"})
    )
    config = load_config()
    assert config.notify == [] and config.notify_terminal == "bell"
    person_config({"notify": ["notify-send", "agent-tui"]}, trusted=isolated.parent)
    assert load_config().notify == ["notify-send", "agent-tui"]

"""Worktrees in the app (issue 53): `/new -w` starts a session in a new worktree; quitting
removes an unchanged one and asks about one with changes (keep, or remove); `agent-tui -w`
opens the app's session in the worktree made for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_tui.config.settings import load_config
from agent_tui.session.opening import AppStart, open_for_app
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.worktree_screen import WorktreeScreen
from agent_tui.worktrees.git_worktree import create
from tests.conftest import cloned_project
from tests.engine_helpers import write
from tests.fake_openai import FakeOpenAI, Text
from tests.process_helpers import wait_until
from tests.pty_helpers import PtyAgent
from tests.test_worktrees import git, make_repo
from tests.tui_helpers import ask, open_app, type_and_send, wait_for

SIZE = (100, 30)


@pytest.fixture
def repo(configured: FakeOpenAI, isolated: Path) -> Path:
    return make_repo(isolated)


def _commands_running(app) -> bool:  # type: ignore[no-untyped-def]
    """A command typed runs in a worker of the conversation (person_dialogs.run)."""
    return any(w.is_running and w.node is app.chat for w in app.workers)


async def _new_worktree_session(pilot, app, name: str) -> Path:  # type: ignore[no-untyped-def]
    await type_and_send(pilot, f"/new -w {name}")
    await wait_for(pilot, lambda: app.chat.session is not None, "the worktree's session")
    worktree = Path(app.chat.session.directory)
    assert app.chat.session.worktree.branch == f"worktree-{name}"
    return worktree


@pytest.mark.parametrize("answer", ["k", "r"])
async def test_new_w_and_the_question_when_it_changed(
    repo: Path, configured: FakeOpenAI, answer: str
) -> None:
    configured.script(write("made.txt", "in the worktree\n"), Text("Written."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        worktree = await _new_worktree_session(pilot, app, "edit")
        assert worktree == repo / ".claude" / "worktrees" / "edit"
        shown = app.query_one("#sidebar-directory", Static)
        await wait_for(pilot, lambda: str(shown.render()) == str(worktree), "its folder shown")
        await ask(pilot, configured, "write made.txt")
        assert (worktree / "made.txt").read_text() == "in the worktree\n"
        assert not (repo / "made.txt").exists()
        await type_and_send(pilot, "/quit")
        await wait_for(pilot, lambda: isinstance(app.screen, WorktreeScreen), "the question")
        await pilot.press(answer)
        await wait_for(pilot, lambda: app.return_code is not None, "the app's exit")
    await app.db.close()
    branches = git(repo, "branch", "--list", "worktree-edit").strip()
    if answer == "k":
        assert (worktree / "made.txt").is_file() and branches
    else:
        assert not worktree.exists() and branches == ""


async def test_quitting_removes_an_unchanged_worktree_without_asking(
    repo: Path, configured: FakeOpenAI
) -> None:
    configured.script(Text("Nothing to do."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        worktree = await _new_worktree_session(pilot, app, "look")
        await ask(pilot, configured, "just look")
        await type_and_send(pilot, "/quit")
        await wait_for(pilot, lambda: app.return_code is not None, "the app's exit")
        assert not isinstance(app.screen, WorktreeScreen)
    await app.db.close()
    assert not worktree.exists()
    assert git(repo, "branch", "--list", "worktree-look").strip() == ""


async def test_the_app_opened_with_w_works_in_the_worktree(
    repo: Path, configured: FakeOpenAI
) -> None:
    made = await create(repo, "start")
    opened = await open_for_app(AppStart(Path(made.path), worktree=made), None, "test")  # type: ignore[arg-type]
    try:
        assert opened.session is not None
        assert opened.session.directory == made.path
        assert opened.session.worktree == made
    finally:
        await opened.engine.close()


async def test_new_w_asks_for_trust_when_the_worktrees_config_differs(
    untrusted: Path, fake_llm: FakeOpenAI
) -> None:
    cloned_project(untrusted, fake_llm, permission={"webfetch": "allow"})
    make_repo(untrusted)
    # The main checkout's config changed since the commit, and is trusted so: a worktree
    # made from the commit holds other content.
    (untrusted / "agent-tui.json").write_text(json.dumps({"permission": {"grep": "allow"}}))
    load_config(directory=untrusted, trust=True)
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "/new -w other")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert "Trust this project?" in str(app.screen.query_one("#question").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the answer")
    await app.db.close()
    worktree = untrusted / ".claude" / "worktrees" / "other"
    assert load_config(directory=worktree).project.status == "trusted"


async def test_new_w_carries_the_trust_when_the_config_is_the_same(
    untrusted: Path, fake_llm: FakeOpenAI
) -> None:
    cloned_project(untrusted, fake_llm, permission={"webfetch": "allow"})
    make_repo(untrusted)
    load_config(directory=untrusted, trust=True)
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        worktree = await _new_worktree_session(pilot, app, "same")
        await wait_for(pilot, lambda: not _commands_running(app), "/new to finish")
        assert not isinstance(app.screen, ConfirmScreen)
    await app.db.close()
    assert load_config(directory=worktree).project.status == "trusted"


def test_agent_tui_w_in_a_terminal_asks_at_quit_and_keeps_the_worktree(repo: Path) -> None:
    """The whole path in a real process and terminal: `agent-tui -w NAME` makes the
    worktree and opens the app in it; a change there, then Ctrl+C twice asks; k keeps."""
    worktree = repo / ".claude" / "worktrees" / "pty"
    app = PtyAgent(repo, "-w", "pty")
    try:
        app.wait_for(b"100,000 tokens")  # the session is open
        assert worktree.is_dir()
        app.type(b"!echo hi > kept.txt\r")
        wait_until(lambda: (worktree / "kept.txt").is_file(), "the command ran in the worktree")
        app.type(b"\x03")
        app.type(b"\x03")
        app.wait_for(b"Keep it (k)")
        app.type(b"k")
        code, printed = app.finish()
    finally:
        app.kill()
    assert code == 0
    assert f"kept the worktree {worktree} (branch worktree-pty)" in printed
    assert (worktree / "kept.txt").read_text() == "hi\n"
    assert not (repo / "kept.txt").exists()
    assert git(repo, "branch", "--list", "worktree-pty").strip()


def test_agent_tui_w_that_fails_to_open_leaves_no_worktree(repo: Path) -> None:
    """The app that never opened a session (its config broken) takes its worktree with it."""
    app = PtyAgent(repo, "-w", "broken", env={"AGENT_TUI_CONFIG": str(repo / "nowhere.json")})
    try:
        code, printed = app.finish()
    finally:
        app.kill()
    assert code != 0, printed
    assert not (repo / ".claude" / "worktrees" / "broken").exists()
    assert git(repo, "branch", "--list", "worktree-broken").strip() == ""

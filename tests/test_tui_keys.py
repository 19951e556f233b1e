"""The prompt, keys, small terminals, commands without a model, and launch errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_tui import paths
from agent_tui.tui.launch import launch
from agent_tui.tui.text_screen import TextScreen
from tests.conftest import write_config
from tests.fake_openai import FakeOpenAI, Text
from tests.pty_helpers import PtyAgent
from tests.tui_helpers import open_app, type_and_send, view_text, wait_for

SIZE = (80, 24)


def _args(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(cont=False, session=None, model=None, **kw)


def _own_config(text: str) -> None:
    """The person's own config: it stops with its error (a project's broken file is
    skipped with a line instead, tests/test_broken_files.py)."""
    path = paths.config_dir() / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_launch_reports_config_error_without_traceback(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _own_config("{not json")
    assert launch(_args()) == 1
    err = capsys.readouterr().err
    assert err.startswith("agent-tui: Config file") and "Traceback" not in err


# What only the opened config, database or session can tell comes after the app's first
# frame (tui/app_opening.py): the app gives the terminal back and prints it, in a real pty.


def test_launch_reports_invalid_config_after_the_first_frame(isolated: Path) -> None:
    _own_config('{"max_steps": "many"}')
    code, text = PtyAgent(isolated).finish()
    assert code == 1
    assert "agent-tui: Invalid config in" in text and "max_steps" in text
    assert "Traceback" not in text


def test_launch_reports_storage_error(isolated: Path) -> None:
    data = isolated.parent / "data"
    data.mkdir()
    (data / "agent-tui.db").write_bytes(b"this is not a database" * 100)
    code, text = PtyAgent(isolated).finish()
    assert code == 1
    assert "agent-tui: " in text and "Traceback" not in text


def test_launch_continue_without_session(configured: FakeOpenAI) -> None:
    code, text = PtyAgent(Path.cwd(), "--continue").finish()
    assert code == 1
    assert "No session to continue" in text


async def test_prompt_keys_newline_history_and_completion(configured: FakeOpenAI) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("a", "ctrl+j", "b")
        assert app.prompt.text == "a\nb"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "ok")
        await pilot.press("up")
        assert app.prompt.text == "a\nb"
        await pilot.press("down")
        assert app.prompt.text == ""
        await pilot.press("/", "c", "o")
        assert "/compact" in str(app.query_one("#completions", Static).render())
        await pilot.press("tab")
        assert app.prompt.text == "/co"  # /compact and /context share "co"
        await pilot.press("n", "tab")
        assert app.prompt.text == "/context "
        app.prompt.clear()
        await type_and_send(pilot, "/help")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen))
        help_text = str(app.screen.query_one("#body Static", Static).render())
        assert "/compact" in help_text and "/summarize" in help_text and "ctrl+x" in help_text
        await pilot.press("escape")
        await type_and_send(pilot, "/context")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "context screen")
        assert "System prompt" in str(app.screen.query_one("#body Static", Static).render())
        await pilot.press("escape")
        await type_and_send(pilot, "/export")
        await wait_for(pilot, lambda: list(Path.cwd().glob("agent-tui-ses_*.json")), "export")
    await app.db.close()
    (path,) = Path.cwd().glob("agent-tui-ses_*.json")
    assert json.loads(path.read_text())["messages"][0]["info"]["role"] == "user"


async def test_failed_send_puts_text_back(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, model="anthropic/claude-test", provider={})
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "please keep me")
        await wait_for(pilot, lambda: app.prompt.text == "please keep me", "text restored")
        notes = [n.message for n in app._notifications]
        assert any("No API key" in n for n in notes)
    await app.db.close()
    assert fake_llm.requests == []


async def test_too_small_terminal_and_ctrl_c_twice(configured: FakeOpenAI) -> None:
    app = await open_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await app.loaded.wait()
        assert app.query_one("#too-small").display
        assert "too small" in str(app.query_one("#too-small", Static).render()).lower()
        await pilot.resize_terminal(10, 5)
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not app.has_class("-too-small")
        assert not app.query_one("#too-small").display and len(app.query("#too-small")) == 1
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert any("again" in n.message for n in app._notifications)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    await app.db.close()


async def test_sidebar_toggle_and_interrupt_when_idle(configured: FakeOpenAI) -> None:
    configured.script(Text("fine"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("escape")  # nothing running: harmless
        await pilot.press("ctrl+x", "b")
        assert not app.sidebar.display
        await pilot.press("ctrl+x", "b")
        assert app.sidebar.display
    await app.db.close()

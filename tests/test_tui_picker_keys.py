"""The `@` file picker never steals keys: a picker whose word was sent or erased before
it could open does not open, and keys typed before it is ready are not lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot

from agent_tui.tui.file_picker_screen import FilePickerScreen
from tests.engine_helpers import is_summary_request, text_of
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import open_app, wait_for

SIZE = (100, 30)
KEY_NAMES = {"@": "at", "/": "slash", " ": "space"}


def burst(pilot: Pilot, keys: list[str]) -> None:
    """Keys as a fast typist or a script driving the terminal sends them: all into the
    app's queue at once, within one frame (Pilot.press waits for the app after each)."""
    app = pilot.app
    driver = app._driver
    assert driver is not None
    for key in keys:
        name = KEY_NAMES.get(key, key)
        event = events.Key(name, key if len(key) == 1 else None)
        event.set_sender(app)
        driver.send_message(event)


def typed(text: str) -> list[str]:
    return list(text)


@pytest.fixture
def pickers(monkeypatch: pytest.MonkeyPatch) -> list[FilePickerScreen]:
    """Every file picker that got as far as being mounted."""
    opened: list[FilePickerScreen] = []
    original = FilePickerScreen.on_mount

    def counting(self: FilePickerScreen) -> None:
        opened.append(self)
        original(self)

    monkeypatch.setattr(FilePickerScreen, "on_mount", counting)
    return opened


async def test_at_word_and_enter_in_one_frame_sends_and_opens_no_picker(
    configured: FakeOpenAI, isolated: Path, pickers: list[FilePickerScreen]
) -> None:
    (isolated / "src").mkdir()
    (isolated / "src" / "main.py").write_text("print('hi')\n")
    configured.script(Text("Looked at src."), Text("SUMMARY: we looked at src."))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        burst(pilot, [*typed("@src"), "enter"])
        # The first request of a process imports litellm: seconds on a loaded machine.
        await wait_for(pilot, lambda: configured.requests and app.chat.status == "idle", timeout=60)
        burst(pilot, [*typed("/compact"), "enter"])
        await wait_for(pilot, lambda: len(configured.requests) == 2, "summary request")
        await wait_for(pilot, lambda: app.chat.status == "idle", "compaction done")
        await pilot.pause()
        assert pickers == []
        assert not isinstance(app.screen, FilePickerScreen)
        assert app.prompt.text == ""
    await app.db.close()
    first, summary = configured.requests
    assert text_of(first["messages"][-1]).startswith("@src")
    assert is_summary_request(summary)


async def test_a_message_and_compact_in_one_burst_are_two_submissions_in_order(
    configured: FakeOpenAI, isolated: Path, pickers: list[FilePickerScreen]
) -> None:
    """`@src⏎/compact⏎` arriving in one read (tmux send-keys, a paste): the prompt is
    cleared at the first Enter, so `/compact` is its own command, not part of the
    message; both reach the one session in order: the answer, then the summary."""
    (isolated / "src").mkdir()
    configured.responder = lambda body: (
        Text("SUMMARY: src.") if is_summary_request(body) else Text("Looked at src.")
    )
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        burst(pilot, [*typed("@src"), "enter", *typed("/compact"), "enter"])
        await wait_for(
            pilot,
            lambda: len(configured.requests) == 2 and app.chat.status == "idle",
            "the answer and the summary",
            timeout=60,
        )
        await pilot.pause()
        assert pickers == []
        assert app.prompt.text == ""
        assert app.prompt.sent_history == ["@src", "/compact"]
    sessions = await app.db.list_sessions()
    await app.db.close()
    assert len(sessions) == 1
    answer, summary = configured.requests
    assert not is_summary_request(answer) and is_summary_request(summary)
    sent = text_of(answer["messages"][-1])
    assert sent.startswith("@src\n") and '<directory path="src">' in sent
    assert "/compact" not in json.dumps(configured.requests)


async def test_a_picker_that_opens_late_starts_from_the_word_typed_so_far(
    configured: FakeOpenAI, isolated: Path, pickers: list[FilePickerScreen]
) -> None:
    """`@pars` typed in one burst: the picker opens after the keys reached the prompt,
    with them as its filter; choosing a file replaces the word. Keys sent while the
    picker mounts go to its filter, none to the prompt behind it, none lost."""
    (isolated / "src").mkdir()
    (isolated / "src" / "parser.py").write_text("def parse(): ...\n")
    (isolated / "src" / "printer.py").write_text("")
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        burst(pilot, typed("look @pa"))
        await wait_for(pilot, lambda: isinstance(app.screen, FilePickerScreen), "picker")
        burst(pilot, typed("rs"))  # may arrive before the picker's input has the focus
        picker = app.screen
        assert isinstance(picker, FilePickerScreen)
        await picker.indexed.wait()
        await wait_for(pilot, lambda: picker.query_one("#picker-input").value == "pars")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, FilePickerScreen), "closed")
        assert app.prompt.text == "look @src/parser.py "
        assert len(pickers) == 1
    await app.db.close()


async def test_erasing_the_at_before_the_picker_opens_keeps_it_closed(
    configured: FakeOpenAI, isolated: Path, pickers: list[FilePickerScreen]
) -> None:
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        burst(pilot, ["@", "backspace"])
        await wait_for(pilot, lambda: app.prompt.text == "", "erased")
        await pilot.pause()
        assert pickers == []
        burst(pilot, typed("plain text"))
        await wait_for(pilot, lambda: app.prompt.text == "plain text", "typed")
        # A word finished with a space before the picker could open: no picker either.
        burst(pilot, typed(" @word "))
        await wait_for(pilot, lambda: app.prompt.text == "plain text @word ", "typed")
        await pilot.pause()
        assert pickers == []
    await app.db.close()


async def test_enter_in_a_picker_with_no_match_sends_the_message(
    configured: FakeOpenAI, isolated: Path, pickers: list[FilePickerScreen]
) -> None:
    """ "look at @t2" + Enter in a project with one file: the picker that opened for
    `@t2` matches nothing, and that Enter sends the message as typed (a second Enter
    was needed: the first only closed the picker)."""
    (isolated / "notes.md").write_text("# notes\n")
    configured.responder = lambda body: Text("Looked.")
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        burst(pilot, typed("look at @t2"))
        await wait_for(pilot, lambda: isinstance(app.screen, FilePickerScreen), "picker")
        picker = app.screen
        assert isinstance(picker, FilePickerScreen)
        await picker.indexed.wait()
        await wait_for(pilot, lambda: picker.query_one("#picker-input").value == "t2")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: configured.requests, "the message sent")
        assert not isinstance(app.screen, FilePickerScreen) and app.prompt.text == ""
        sent = [m for m in configured.requests[0]["messages"] if m["role"] == "user"]
        assert "look at @t2" in text_of(sent[-1])
    await app.db.close()

"""/undo, /redo and /diff in the app (Pilot, real git snapshots, the fake server)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.text_screen import TextScreen
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.tui_helpers import last_reply, open_app, type_and_send, wait_for

SIZE = (120, 40)


def _write(path: Path, content: str) -> ToolCalls:
    return ToolCalls([Call("write", json.dumps({"file_path": str(path), "content": content}))])


async def test_undo_puts_the_prompt_back_and_redo_reapplies(
    configured: FakeOpenAI, isolated: Path
) -> None:
    target = isolated / "notes.txt"
    configured.script(_write(target, "one\ntwo\n"), Text("written"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "write the notes")
        await wait_for(pilot, lambda: app.chat.status == "idle" and target.exists(), "the turn")
        files = app.query_one("#sidebar-files", Static)
        await wait_for(pilot, lambda: "notes.txt +2 −0" in str(files.render()), "line counts")

        await type_and_send(pilot, "/diff")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "diff screen")
        assert "+two" in str(app.screen.query_one("#body Static", Static).render())
        await pilot.press("escape")

        await pilot.press("ctrl+x", "u")
        await wait_for(pilot, lambda: app.prompt.text == "write the notes", "prompt back")
        assert not target.exists()
        assert "write the notes" not in last_reply(app.chat.view)
        await wait_for(pilot, lambda: "none yet" in str(files.render()), "sidebar cleared")

        await type_and_send(pilot, "/redo")
        await wait_for(pilot, lambda: target.exists(), "redo")
        assert app.prompt.text == ""

        # A file the person changed since is overwritten only after they confirm.
        target.write_text("mine\n")
        await pilot.press("ctrl+x", "u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirm")
        assert "notes.txt" in str(app.screen.query_one("#detail", Static).render())
        await pilot.press("n")
        await pilot.pause()
        assert target.read_text() == "mine\n"
        await pilot.press("ctrl+x", "u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirm again")
        await pilot.press("y")
        await wait_for(pilot, lambda: not target.exists(), "overwritten")
    await app.db.close()

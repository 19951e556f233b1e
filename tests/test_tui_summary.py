"""`/summary` in the app: reading the summary in force and correcting it (Pilot, real
SQLite, the fake server)."""

from __future__ import annotations

from textual.widgets import Collapsible, TextArea

from agent_tui.context.summary_view import NO_COMPACTION, summary_in_force
from agent_tui.tui.compaction_divider import EDITED_TITLE, CompactionDivider
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.summary_edit_screen import SummaryEditScreen
from agent_tui.tui.summary_screen import SummaryScreen
from agent_tui.tui.text_screen import TextScreen
from tests.engine_helpers import conversation, text_of
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import open_app, type_and_send, wait_for

WRITTEN = "SUMMARY: we said hello twice."
CORRECTED = "SUMMARY: we said hello twice. The person wants tabs, not spaces."


async def test_summary_is_read_and_edited_in_the_app(configured: FakeOpenAI) -> None:
    configured.script(
        Text("First answer."), Text("Second answer."), Text(WRITTEN), Text("Tabs it is.")
    )
    app = await open_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "/summary")  # nothing sent yet: said plainly
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), "no-summary screen")
        assert app.screen.text == NO_COMPACTION  # type: ignore[attr-defined]
        await pilot.press("escape")

        await type_and_send(pilot, "hello")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 1)
        await type_and_send(pilot, "hello again")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 2)
        await type_and_send(pilot, "/summary")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryScreen), "summary screen")
        assert app.screen.text == NO_COMPACTION  # type: ignore[attr-defined]
        await pilot.press("e")  # nothing to edit: no editor opens
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SummaryScreen))
        await type_and_send(pilot, "/compact")
        await wait_for(
            pilot, lambda: [d.state for d in app.query(CompactionDivider)] == ["done"], "done"
        )
        await wait_for(pilot, lambda: app.chat.status == "idle")

        await type_and_send(pilot, "/summary")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryScreen), "summary screen")
        shown = app.screen.text  # type: ignore[attr-defined]
        assert WRITTEN in shown and "Your words: 1 message" in shown and "“hello”" in shown
        assert "Kept verbatim before its boundary: 2 steps" in shown
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryEditScreen), "editor")
        editor = app.screen.query_one(TextArea)
        assert editor.text == WRITTEN and editor.has_focus

        # Typed into the editor, then Esc: asked before the change is thrown away.
        editor.move_cursor(editor.document.end)
        await pilot.press("space", "x", "y")
        assert editor.text == WRITTEN + " xy"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "discard?")
        await pilot.press("n")  # keep editing: the text is still there
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryEditScreen))
        assert editor.text == WRITTEN + " xy"
        await pilot.press("ctrl+r")  # the summariser's own text back
        assert editor.text == WRITTEN
        editor.load_text(CORRECTED)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, SummaryEditScreen), "saved")
        assert "Summary edited." in str(list(app._notifications)[-1].message)

        # The divider shows the correction; the next request carries it.
        divider = app.query_one(CompactionDivider)
        await wait_for(pilot, lambda: divider.query_one(Collapsible).title == EDITED_TITLE)
        assert divider.edited == CORRECTED
        await type_and_send(pilot, "which indentation?")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 4)
        sent = conversation(configured.requests[-1])
        assert text_of(sent[1]) == CORRECTED
        assert WRITTEN + "\n" not in str(configured.requests[-1]["messages"])

        await type_and_send(pilot, "/summary")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryScreen), "summary screen")
        assert "Edited by you" in app.screen.text  # type: ignore[attr-defined]
        await pilot.press("escape")
    await app.db.close()


async def test_a_discarded_edit_saves_nothing(configured: FakeOpenAI) -> None:
    configured.script(Text("First answer."), Text("Second answer."), Text(WRITTEN))
    app = await open_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "hello")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 1)
        await type_and_send(pilot, "hello again")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 2)
        await type_and_send(pilot, "/compact")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(configured.requests) == 3)
        await wait_for(pilot, lambda: [d.state for d in app.query(CompactionDivider)] == ["done"])
        await type_and_send(pilot, "/summary")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryScreen), "summary screen")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, SummaryEditScreen), "editor")
        app.screen.query_one(TextArea).load_text("something else")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "discard?")
        await pilot.press("y")
        await wait_for(
            pilot, lambda: not isinstance(app.screen, (ConfirmScreen, SummaryEditScreen))
        )
        assert app.chat.session is not None
        view = await summary_in_force(await app.engine.scope(app.chat.session.id))
        assert not view.edited and view.text == WRITTEN
    await app.db.close()

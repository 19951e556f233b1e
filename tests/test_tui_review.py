"""`compaction.review`: a manual /compact shows the summary before applying it (Pilot,
real SQLite, the fake server through litellm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui.records import AssistantMessage, TextPart
from agent_tui.tui.review_screen import ReviewScreen
from tests.conftest import write_config
from tests.engine_helpers import is_summary_request
from tests.fake_openai import FakeOpenAI, Text
from tests.tui_helpers import open_app, type_and_send, wait_for

SIZE = (120, 36)


@pytest.mark.parametrize("choice", ["apply", "edit", "discard"])
async def test_review_on_compact(isolated: Path, fake_llm: FakeOpenAI, choice: str) -> None:
    write_config(isolated, fake_llm, compaction={"prepare_at": 0, "review": True})
    fake_llm.script(
        Text("First answer."),
        Text("Second answer."),
        Text("SUMMARY: we said hello twice."),
        Text("Third answer."),
    )
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "hello")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(fake_llm.requests) == 1)
        await type_and_send(pilot, "hello again")
        await wait_for(pilot, lambda: app.chat.status == "idle" and len(fake_llm.requests) == 2)
        await type_and_send(pilot, "/compact")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert screen.editor.text == "SUMMARY: we said hello twice."
        assert app.chat.session is not None
        assert (await app.db.get_session(app.chat.session.id)).compaction_id is None  # not yet
        if choice == "apply":
            await pilot.press("enter")
        elif choice == "edit":
            await pilot.press("e")
            assert screen.editor.has_focus
            screen.editor.load_text("EDITED: hello, twice; keep it short.")
            await pilot.press("escape")  # out of the editor, the edit kept
            assert not screen.editor.has_focus and isinstance(app.screen, ReviewScreen)
            await pilot.press("enter")
        else:
            await pilot.press("d")
        await wait_for(pilot, lambda: not isinstance(app.screen, ReviewScreen))
        await wait_for(pilot, lambda: app.chat.status == "idle")
        await type_and_send(pilot, "and now?")
        await wait_for(pilot, lambda: len(fake_llm.requests) == 4 and app.chat.status == "idle")
        session = await app.db.get_session(app.chat.session.id)
        rows = await app.db.prepared_summaries(session.id)
        messages = await app.db.all_messages(session.id)
    await app.db.close()
    assert sum(is_summary_request(r) for r in fake_llm.requests) == 1
    last = json.dumps(fake_llm.requests[-1]["messages"])
    (row,) = rows
    assert row.text == "SUMMARY: we said hello twice."  # the original is kept
    if choice == "discard":
        assert session.compaction_id is None and row.status == "discarded"
        assert "hello again" in last and "SUMMARY" not in last
        return
    assert session.compaction_id is not None and row.status == "used"
    (summary,) = [m for m in messages if isinstance(m.info, AssistantMessage) and m.info.summary]
    assert isinstance(summary.info, AssistantMessage)
    text = "".join(p.text for p in summary.parts if isinstance(p, TextPart))
    assert text == row.text  # the summariser's text, as after any compaction
    expected = "EDITED: hello, twice; keep it short." if choice == "edit" else row.text
    assert expected in last
    # An edit in the review is an edit of the summary (/summary shows it, --revert undoes it).
    assert summary.info.edited_summary == (expected if choice == "edit" else None)
    # The history starts at the summary now.
    assert fake_llm.requests[-1]["messages"][1]["content"] == "What did we do so far?"
